/* piq-engine-matmul.c: Y = X · Wᵀ + bias with quantized weights
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the rest of the engine. Two activation policies (docs/matmul.md):
 *
 * - float: panels of PANEL weight rows are decoded into binary32 by the library's
 *   own dequantize (so every format multiplies exactly as it decodes), then the
 *   kernel table's f32 tile multiplies them with rows of X in one fixed order.
 * - dynamic int8: the weights' integer codes are unpacked once, at packing, into
 *   bytes (code + 128 for signed types) with a binary32 scale and an integer zero
 *   point per group of K; each call quantizes X per group (symmetric int8) and the
 *   integer dot products are exact, so only the per-group combination rounds.
 *
 * Threads split N (panels) and M, never K: Y's bytes do not depend on the thread
 * count, and every kernel table gives the scalar tables' bytes.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piq-engine-matmul-private.h"
#include "piq-parallel-private.h"
#include "simd/piq-formats-private.h"

/* A call's scratch, kept for the next call: one block, taken and given back
 * atomically, so concurrent calls never share it (the one that finds the cache empty
 * allocates its own). */
typedef struct {
  size_t  size;
  uint8_t pad[56];              /* data on the block's next cache line */
  uint8_t data[];
} Scratch;

static Scratch *scratch_cache;

static Scratch *
scratch_take (size_t bytes, PiqEngineError *e)
{
  Scratch *s = __atomic_exchange_n (&scratch_cache, NULL, __ATOMIC_ACQUIRE);

  if (s != NULL && s->size >= bytes)
    return s;
  free (s);
  /* on a cache line, as data is then too: the tiles load the decoded weights and X from
   * here a vector at a time, and a vector load across two lines takes two (every one
   * of a 64-byte vector off the line) */
  {
    void *mem;
    if (bytes > SIZE_MAX - sizeof *s || posix_memalign (&mem, 64, sizeof *s + bytes) != 0)
      {
        failf (e, PIQ_E_NO_MEMORY, "cannot allocate %zu bytes of the product's scratch", bytes);
        return NULL;
      }
    s = mem;
  }
  s->size = bytes;
  return s;
}

static void
scratch_give (Scratch *s)
{
  free (__atomic_exchange_n (&scratch_cache, s, __ATOMIC_RELEASE));
}

/* ---------------------------------------------------------------------------
 * Which format multiplies under which policy: the one table */

int
piq_engine_matmul_supports (const PiqEngineFormat *f, int activation, PiqEngineError *e)
{
  const PiqDtypeInfo *info;
  char buf[32];

  if (!piq_engine_check_format (f, e))
    return 0;
  info = piq_dtype_info (f->dtype);
  if (info->kind == PIQ_KIND_FLOAT)
    return failf (e, PIQ_E_UNSUPPORTED, "%s weights are not quantized: quantize them first",
                  info->name);
  if (activation == PIQ_ACT_FLOAT)
    return 1;   /* everything that decodes multiplies as it decodes */
  if (activation == PIQ_ACT_BINARY)
    {
      /* XNOR-popcount products (piq-engine-matmul-binary.c) */
      if (f->dtype != 32 + PIQ_C_BINARY)
        return failf (e, PIQ_E_UNSUPPORTED, "binary activations multiply binary weights only, "
                      "not %s: use the float policy", piq_dtype_label (f->dtype, buf));
      if (f->granularity == GRAN_CHANNEL && !(f->axis == 0 || f->axis == -2))
        return failf (e, PIQ_E_UNSUPPORTED, "binary weights with one scale per input channel "
                      "(axis %d) cannot factor the scales out of a popcount; use the float "
                      "policy or scales per output channel (axis 0) or per block", f->axis);
      return 1;
    }
  if (activation != PIQ_ACT_DYNAMIC_INT8)
    return failf (e, PIQ_E_UNSUPPORTED, "activation policy %d does not exist", activation);
  if (f->dtype == DT_Q8_0 || f->dtype == DT_Q4_0)
    return 1;
  if (info->kind != PIQ_KIND_INT || info->bits > 8)
    return failf (e, PIQ_E_UNSUPPORTED, "%s weights have no integer codes of at most 8 bits: "
                  "dynamic int8 activations multiply int8, uint8, int4, uint4, int2, uint2, "
                  "q8_0 and q4_0 weights; use the float policy", piq_dtype_label (f->dtype, buf));
  if (f->granularity == GRAN_CHANNEL && !(f->axis == 0 || f->axis == -2))
    return failf (e, PIQ_E_UNSUPPORTED, "%s weights with one scale per input channel (axis %d) "
                  "cannot factor the scales out of an integer dot product; use the float "
                  "policy or scales per output channel (axis 0)", info->name, f->axis);
  return 1;
}

/* ---------------------------------------------------------------------------
 * Packing */

static int
check_weights (const PiqEngineQuant *w, const uint64_t *shape, unsigned n_dims,
               PiqEngineError *e)
{
  size_t codes, scales, zps;

  if (n_dims != 2)
    return failf (e, PIQ_E_SIZE, "weights are a matrix [out, in]: 2 dimensions, not %u", n_dims);
  if (shape[0] == 0 || shape[1] == 0)
    return failf (e, PIQ_E_EMPTY, "the weights [%" PRIu64 ", %" PRIu64 "] are empty", shape[0],
                  shape[1]);
  if (!piq_engine_sizes (&w->f, shape, 2, &codes, &scales, &zps, e))
    return 0;
  if (w->codes_size < codes || w->scales_size < scales || w->zero_points_size < zps)
    return failf (e, PIQ_E_SIZE, "the weights hold fewer bytes than their shape needs");
  if ((scales && w->scales == NULL) || (zps && w->zero_points == NULL))
    return failf (e, PIQ_E_SIZE, "the weights lack their %s", scales && w->scales == NULL
                  ? "scales" : "zero points");
  return 1;
}

/* The codes of the ggml blocks, unpacked: Q8_0 int8 codes + 128 with zero point 128,
 * Q4_0 nibbles (low: elements 0–15, high: 16–31) with zero point 8 (FORMATS.md). */
static void
unpack_ggml (PiqEnginePacked *p, const uint8_t *codes, uint64_t r0, uint64_t r1)
{
  int q4 = p->q.f.dtype == DT_Q4_0;
  size_t block_bytes = q4 ? 18 : 34;

  for (uint64_t r = r0; r < r1; r++)
    for (uint64_t b = 0; b < p->groups; b++)
      {
        const uint8_t *blk = codes + (r * p->groups + b) * block_bytes;
        uint8_t *out = p->codes + r * p->k + b * 32;
        uint64_t len = MIN ((uint64_t) 32, p->k - b * 32);
        uint16_t d;

        memcpy (&d, blk, 2);
        p->scales[r * p->groups + b] = piq_f16_to_f32 (d);
        p->zps[r * p->groups + b] = q4 ? 8 : 128;
        for (uint64_t i = 0; i < len; i++)
          out[i] = q4 ? (uint8_t) (i < 16 ? blk[2 + i] & 15 : blk[2 + i - 16] >> 4)
                      : (uint8_t) (blk[2 + i] ^ 0x80);
      }
}

/* PIQUANT_MATMUL_UNFUSED=1 in the environment when weights are packed keeps them on
 * the decoded-panel path: the tests compare both paths' bytes (docs/matmul.md). */
static int
unfused_forced (void)
{
  const char *v = getenv ("PIQUANT_MATMUL_UNFUSED");
  return v != NULL && *v != '\0' && strcmp (v, "0") != 0;
}

/* Weight rows r0 … r0 + count (or to the end) as binary32, K apart. */
static int
decode_rows (const PiqEngine *eng, const PiqEnginePacked *p, uint64_t r0, uint64_t count,
             float *panel, PiqEngineError *e)
{
  PiqEngine one = { 1, eng->kernels };
  uint64_t rows = MIN (count, p->n - r0), shape[2] = { rows, p->k };
  PiqEngineView v = { DT_F32, 2, { rows, p->k }, 0, panel, (size_t) (rows * p->k * 4) };
  PiqEngineQuant sub;

  return piq_engine_rows_quant (&p->q, p->n, p->k, r0, &sub, e) &&
         piq_engine_dequantize (&one, &sub, shape, 2, &v, 0, e);
}

/* Integer codes through the library's own decoder: the same codes read as a per-tensor
 * tensor with scale 1 and zero point 0 decode to their integer values, exactly. */
static int
unpack_ints (const PiqEngine *eng, PiqEnginePacked *p, const PiqEngineQuant *w, int is_signed,
             PiqEngineError *e)
{
  PiqEngine one = { 1, eng->kernels };
  float *panel = try_alloc ((size_t) PANEL * p->k, sizeof (float), "a decoded panel", e);
  int ok = 1;

  if (panel == NULL)
    return 0;
  for (uint64_t r0 = 0; ok && r0 < p->n; r0 += PANEL)
    {
      uint64_t rows = MIN ((uint64_t) PANEL, p->n - r0), shape[2] = { rows, p->k };
      PiqEngineQuant whole = *w, sub;
      PiqEngineView v = { DT_F32, 2, { rows, p->k }, 0, panel, (size_t) (rows * p->k * 4) };

      as_plain_codes (&whole);
      ok = piq_engine_rows_quant (&whole, p->n, p->k, r0, &sub, e) &&
           piq_engine_dequantize (&one, &sub, shape, 2, &v, 0, e);
      for (uint64_t i = 0; ok && i < rows * p->k; i++)
        p->codes[r0 * p->k + i] = (uint8_t) ((int) panel[i] + (is_signed ? 128 : 0));
    }
  free (panel);
  if (ok && is_signed)
    for (uint64_t i = 0; i < p->n * p->groups; i++)
      p->zps[i] += 128;
  return ok;
}

/* Rows r0 … r1 − 1 (whole panels but the last) into pack_groups' panels (below). */
static void
pack_groups_rows (PiqEnginePacked *p, uint64_t r0, uint64_t r1)
{
  const uint64_t group = p->group, groups = p->groups;
  const size_t code_bytes = p->q4 ? 32 * p->gg_gq : 64 * p->gg_gq;

  for (uint64_t r = r0; r < r1; r++)
    for (uint64_t g = 0; g < groups; g++)
      {
        uint8_t *wg = p->gg + r / 16 * p->gg_ldwp + g * p->gg_gbytes;
        const size_t c = r % 16;
        for (uint64_t i = 0; i < MIN (group, p->k - g * group); i++)
          {
            uint64_t k = g * group + i;
            size_t q = (size_t) i / 4, t = (size_t) i % 4;
            if (p->q4)
              {
                uint8_t b = p->codes[r * p->row_bytes + k / 32 * 16 + k % 16];
                wg[q / 2 * 64 + 4 * c + t] |= (uint8_t) ((k % 32 < 16 ? b & 15 : b >> 4) << (4 * (q % 2)));
              }
            else
              wg[q * 64 + 4 * c + t] = (uint8_t) (p->codes[r * p->k + k] ^ (p->signed_codes ? 0x80 : 0));
          }
        if (p->gg_f16)
          {
            uint16_t h = piq_f32_to_f16 (p->scales[r * groups + g]);
            memcpy (wg + code_bytes + 2 * c, &h, 2);
          }
        else
          memcpy (wg + code_bytes + 4 * c, &p->scales[r * groups + g], 4);
        if (p->gg_zpc)
          memcpy (wg + code_bytes + (p->gg_f16 ? 32 : 64) + 4 * c, &p->zps[r * groups + g], 4);
      }
}

/* The dynamic-int8 packing's passes over the weights' rows, each on the engine's
 * threads: every row's bytes depend on that row alone, and the tests of the whole
 * tensor (PACK_FITS_*) are an AND over rows, so the result does not depend on the
 * split. Ranges start on a panel (16 rows) for PACK_GROUPS. */
enum { PACK_UNPACK_GGML, PACK_FITS_SIGNED, PACK_FOLD_SUMS, PACK_FITS_4BIT, PACK_NIBBLES,
       PACK_GROUPS };

typedef struct {
  PiqEnginePacked *p;
  int              stage;
  const void      *src;   /* PACK_UNPACK_GGML: the ggml blocks */
  uint8_t         *dst;   /* PACK_NIBBLES: the 4-bit codes */
  int              all;   /* PACK_FITS_*: cleared by a range with a row that does not fit */
} PackJob;

static void
pack_range (void *data, uint64_t r0, uint64_t count)
{
  PackJob *job = data;
  PiqEnginePacked *p = job->p;
  const uint64_t r1 = r0 + count, k = p->k, group = p->group, groups = p->groups;
  int fits = 1;

  switch (job->stage)
    {
    case PACK_UNPACK_GGML:
      unpack_ggml (p, job->src, r0, r1);
      break;
    case PACK_FITS_SIGNED:
      /* (group by group: a division per element made packing a stack of layers take
       * minutes) */
      for (uint64_t r = r0; fits && r < r1; r++)
        for (uint64_t b = 0; fits && b < groups; b++)
          {
            int64_t z = p->zps[r * groups + b];
            for (uint64_t i = b * group; fits && i < MIN (k, (b + 1) * group); i++)
              {
                int64_t v = (int64_t) p->codes[r * k + i] - z;
                fits = v >= -128 && v <= 127;
              }
          }
      break;
    case PACK_FOLD_SUMS:
      for (uint64_t r = r0; r < r1; r++)
        for (uint64_t b = 0; b < groups; b++)
          {
            int64_t z = p->zps[r * groups + b], sum = 0;
            for (uint64_t i = b * group; i < MIN (k, (b + 1) * group); i++)
              {
                if (p->signed_codes)
                  p->codes[r * k + i] = (uint8_t) ((int64_t) p->codes[r * k + i] - z);
                sum += p->signed_codes ? (int8_t) p->codes[r * k + i] : p->codes[r * k + i];
              }
            if (p->signed_codes)
              p->zps[r * groups + b] = 0;
            p->sums[r * groups + b] = sum;
          }
      break;
    case PACK_FITS_4BIT:
      for (uint64_t i = r0 * k; fits && i < r1 * k; i++)
        fits = (int8_t) p->codes[i] >= -8 && (int8_t) p->codes[i] <= 7;
      break;
    case PACK_NIBBLES:
      for (uint64_t r = r0; r < r1; r++)
        for (uint64_t b = 0; b < k / 32; b++)
          for (int i = 0; i < 16; i++)
            {
              const uint8_t *c = p->codes + r * k + 32 * b;
              job->dst[r * (k / 2) + 16 * b + i] =
                (uint8_t) (((int8_t) c[i] + 8) | (((int8_t) c[i + 16] + 8) << 4));
            }
      break;
    default:
      pack_groups_rows (p, r0, r1);
      break;
    }
  if (!fits)
    __atomic_store_n (&job->all, 0, __ATOMIC_RELAXED);
}

/* Runs one stage over every row; for PACK_FITS_*, whether every row fits. */
static int
pack_stage (const PiqEngine *eng, PiqEnginePacked *p, int stage, const void *src, uint8_t *dst)
{
  PackJob job = { p, stage, src, dst, 1 };

  /* a range of at least 64 K weights: smaller ones cost more to hand out than to do */
  piq_parallel_run (eng->n_threads, p->n, 16, MAX ((uint64_t) 16, (UINT64_C (1) << 16) / p->k),
                    pack_range, &job);
  return job.all;
}

/* The dynamic-int8 weights as gemm_groups' panels (PiqGroupsW): every group of a
 * multiple of 4 elements, up to GG_MAX_GROUP, whose zero points keep the sums within
 * int32. The codes go in unsigned, so X's signed codes are the other operand of
 * VPDPBUSD: u = w + 128 (signed codes, zero point 128), the 4-bit codes w + 8 (zero
 * point 8), else the stored code with the group's zero point; with one zero point z
 * for the whole tensor, z · Σx is taken once per call and per group of X. Scales are
 * kept as binary16 where every one is one exactly (Q4_0, Q8_0): a GEMV then streams
 * the format's own bytes. Padding (a short last group, channels past n) is zero. */
static int
pack_groups (const PiqEngine *eng, PiqEnginePacked *p, PiqEngineError *e)
{
  const uint64_t panels = (p->n + 15) / 16, group = p->group, groups = p->groups;
  const size_t gq = (size_t) group / 4;
  int64_t zmax = 128;   /* the zero point of signed codes */
  size_t code_bytes;

  if (group % 4 != 0 || group > GG_MAX_GROUP)
    return 1;
  for (uint64_t i = 0; !p->signed_codes && i < p->n * groups; i++)
    zmax = MAX (zmax, p->zps[i] < 0 ? -(int64_t) p->zps[i] : (int64_t) p->zps[i]);
  if ((255 + zmax) * 127 * (int64_t) group >= INT64_C (1) << 31)
    return 1;
  p->gg_zpc = !p->signed_codes && !p->zp_uniform;
  p->gg_z0 = p->q4 ? 8 : p->signed_codes ? 128 : p->zp0;
  p->gg_f16 = 1;
  for (uint64_t i = 0; p->gg_f16 && i < p->n * groups; i++)
    {
      float v = piq_f16_to_f32 (piq_f32_to_f16 (p->scales[i]));
      p->gg_f16 = memcmp (&v, &p->scales[i], sizeof v) == 0;
    }
  p->gg_gq = gq;
  code_bytes = p->q4 ? 32 * gq : 64 * gq;
  p->gg_gbytes = code_bytes + (p->gg_f16 ? 32 : 64) + (p->gg_zpc ? 64 : 0);
  p->gg_ldwp = (size_t) groups * p->gg_gbytes;
  /* on a cache line: with binary32 scales every group's quads are on lines too */
  if ((p->gg = piq_engine_alloc_aligned (panels, p->gg_ldwp, "the weights' panels", e)) == NULL)
    return 0;
  memset (p->gg, 0, panels * p->gg_ldwp);
  p->bytes += panels * p->gg_ldwp;
  pack_stage (eng, p, PACK_GROUPS, NULL, NULL);
  return 1;
}

PiqEnginePacked *
piq_engine_pack (const PiqEngine *eng, const PiqEngineQuant *w, const uint64_t *shape,
                 unsigned n_dims, int activation, PiqEngineError *e)
{
  PiqEnginePacked *p;
  const PiqDtypeInfo *info;

  if (!piq_engine_matmul_supports (&w->f, activation, e) || !check_weights (w, shape, n_dims, e))
    return NULL;
  if ((p = try_alloc (1, sizeof *p, "packed weights", e)) == NULL)
    return NULL;
  memset (p, 0, sizeof *p);
  p->activation = activation;
  p->n = shape[0];
  p->k = shape[1];
  p->q = *w;
  info = piq_dtype_info (w->f.dtype);

  if (activation == PIQ_ACT_BINARY)
    {
      if (!piq_engine_binary_pack (eng, p, w, e))
        goto fail;
      return p;
    }
  if (activation == PIQ_ACT_FLOAT)
    {
      float *panel;
      int ok;
      if (w->f.double_quant)
        {
          /* expanded once: panels slice the scales, and the compressed chunks span panels */
          PiqEngineFormat plain = w->f;
          size_t dq;
          plain.double_quant = 0;
          if (!piq_engine_sizes (&plain, shape, 2, NULL, &dq, NULL, e) ||
              (p->owned_scales = try_alloc (dq / sizeof (float), sizeof (float),
                                            "expanded scales", e)) == NULL)
            goto fail;
          piq_dq_expand (w->scales, dq / sizeof (float), p->owned_scales);
          p->q.f = plain;
          p->q.scales = p->owned_scales;
          p->q.scales_size = dq;
          p->bytes = dq;
        }
      /* Decoding the first panel checks what only a decode checks (a per-tensor scale
       * and zero point), so a call never fails half-way through writing Y. */
      if ((panel = try_alloc ((size_t) MIN ((uint64_t) PANEL, p->n) * p->k, sizeof (float),
                              "a decoded panel", e)) == NULL)
        goto fail;
      ok = decode_rows (eng, p, 0, PANEL, panel, e);
      free (panel);
      if (!ok)
        goto fail;
      p->fused = !unfused_forced () &&
                 piq_engine_fused_rows (&p->q, p->n, p->k, &p->fa, &p->f_code_stride,
                                        &p->f_blocks_per_row, &p->f_zero_points);
      p->f_scale_bytes = piq_block_scale_size (p->fa.scale_kind);
      return p;
    }

  if (w->f.dtype == DT_Q8_0 || w->f.dtype == DT_Q4_0)
    p->group = 32;
  else if (!piq_engine_int_row_params (w, p->n, p->k, &p->group, NULL, NULL, e))
    goto fail;
  p->groups = (p->k + p->group - 1) / p->group;
  if ((p->codes = try_alloc (p->n, p->k, "unpacked codes", e)) == NULL ||
      (p->scales = try_alloc (p->n * p->groups, sizeof (float), "group scales", e)) == NULL ||
      (p->zps = try_alloc (p->n * p->groups, sizeof (int32_t), "group zero points", e)) == NULL)
    goto fail;
  p->bytes = p->n * p->k + p->n * p->groups * (sizeof (float) + sizeof (int32_t));
  if (w->f.dtype == DT_Q8_0 || w->f.dtype == DT_Q4_0)
    pack_stage (eng, p, PACK_UNPACK_GGML, w->codes, NULL);
  else if (!piq_engine_int_row_params (w, p->n, p->k, &p->group, p->scales, p->zps, e) ||
           !unpack_ints (eng, p, w, info->is_signed, e))
    goto fail;
  /* Where every code − zero point fits a signed byte (symmetric types, Q8_0, Q4_0 and
   * most asymmetric groups), fold the zero points into the codes: the products then
   * take the kernels' signed path (dot_groups_i8), twice to four times as fast. */
  p->signed_codes = pack_stage (eng, p, PACK_FITS_SIGNED, NULL, NULL);
  if ((p->sums = try_alloc (p->n * p->groups, sizeof (int64_t), "group sums", e)) == NULL)
    goto fail;
  p->bytes += p->n * p->groups * sizeof (int64_t);
  pack_stage (eng, p, PACK_FOLD_SUMS, NULL, NULL);
  /* 4-bit weights whose values c − z lie in −8 … 7 (Q4_0, symmetric int4 and uint4) stay
   * 4-bit: c − z + 8 two to a byte in blocks of 32, as Q4_0 stores them, with zero
   * point 8. A GEMV then reads half the bytes, and the products take
   * vpmaddubsw on the nibbles directly, as ggml's Q4_0 × Q8_0 does. */
  p->row_bytes = (size_t) p->k;
  p->q4 = p->signed_codes && (info->bits == 4 || w->f.dtype == DT_Q4_0) && p->k % 32 == 0 &&
          p->group % 32 == 0 && pack_stage (eng, p, PACK_FITS_4BIT, NULL, NULL);
  if (p->q4)
    {
      uint8_t *nib = try_alloc (p->n, (size_t) p->k / 2, "4-bit codes", e);
      if (nib == NULL)
        goto fail;
      pack_stage (eng, p, PACK_NIBBLES, NULL, nib);
      free (p->codes);
      p->codes = nib;
      p->row_bytes = (size_t) p->k / 2;
      p->bytes -= p->n * p->k / 2;
      for (uint64_t i = 0; i < p->n * p->groups; i++)
        p->zps[i] = 8;
    }
  p->zp_uniform = 1;
  p->zp0 = p->n > 0 && p->groups > 0 ? p->zps[0] : 0;
  for (uint64_t i = 0; p->zp_uniform && i < p->n * p->groups; i++)
    p->zp_uniform = p->zps[i] == p->zp0;
  if (!piq_engine_pack_gemm_b (p, e) || !pack_groups (eng, p, e))
    goto fail;
  /* nothing of the caller's is kept */
  p->q.codes = p->q.scales = p->q.zero_points = NULL;
  p->q.codes_size = p->q.scales_size = p->q.zero_points_size = 0;
  return p;

fail:
  piq_engine_packed_free (p);
  return NULL;
}

void
piq_engine_packed_free (PiqEnginePacked *p)
{
  if (p == NULL)
    return;
  free (p->owned_scales);
  free (p->codes);
  free (p->scales);
  free (p->zps);
  free (p->sums);
  free (p->bits);
  free (p->bscales);
  free (p->bits_p);
  free (p->bscales_p);
  free (p->gemm_b);
  free (p->gg);
  free (p);
}

void
piq_engine_packed_info (const PiqEnginePacked *p, uint64_t *n, uint64_t *k, size_t *bytes)
{
  if (n != NULL)
    *n = p->n;
  if (k != NULL)
    *k = p->k;
  if (bytes != NULL)
    *bytes = p->bytes;
}

/* ---------------------------------------------------------------------------
 * The call */

typedef struct {
  const PiqEngine       *eng;
  const PiqEnginePacked *w;
  uint64_t       m, n, k;
  /* X as binary32 rows ldx floats apart (float), or as int8 codes (dynamic int8) */
  const float   *x;
  size_t         ldx;
  float         *xp;           /* the GEMM's X packed for mm_lanes (pack_x) */
  float         *xw;           /* X's rows for pack_x or prep_x to widen first, or NULL */
  const uint8_t *xsrc;         /* … from these, xsrc_ld bytes apart, of type xsrc_dtype */
  size_t         xsrc_ld;
  int            xsrc_dtype;
  /* the dynamic-int8 policy's X, as prep_x writes it */
  int8_t        *xq;           /* rows ldq apart, zero from k on */
  size_t         ldq;
  float         *xd;           /* [m][groups] scales of X's groups */
  int32_t       *xz;           /* [m][groups] gemm_groups' z · Σq (per-group zero points: Σq) */
  int32_t       *xsum;         /* [m][groups] Σ codes of X's groups */
  double        *xdd;          /* [m][groups] xd widened, once per call */
  double        *zx;           /* [m][groups] zp0 · xsum in binary64 (one zero point), or NULL */
  const float   *bias;         /* N binary32, or NULL */
  uint8_t       *y;
  int            y_dtype;
  size_t         ldy;          /* bytes between Y's rows */
  int            add;
  /* work: items of a panel of prows weight rows × a block of rows of X, handed out
   * one at a time (`next`) to `slots` workers; gemm: the float policy's panels are
   * FGEMM_NC rows for gemm_item */
  int            gemm;
  uint64_t       prows, panels, mblocks, mrows;
  uint64_t       slots;
  /* the GEMM's last round split (split_parts > 1): each slot takes `rounds` whole
   * panels, then the panels left over are split into split_parts blocks of
   * split_rows rows of X, one per slot */
  uint64_t       rounds, split_parts, split_rows;
  uint64_t       next;
  uint8_t       *scratch;      /* per slot */
  size_t         scratch_bytes;
  int            failed;
  PiqEngineError error;
} MatmulJob;

static void
store_row (MatmulJob *job, uint64_t m, uint64_t n0, const float *v, uint64_t count)
{
  uint8_t *row = job->y + m * job->ldy;

  /* binary32 stored as it is: one copy (element by element cost a GEMM 2 %) */
  if (job->y_dtype == DT_F32 && !job->add && job->bias == NULL)
    {
      memcpy (row + n0 * 4, v, (size_t) count * 4);
      return;
    }
  for (uint64_t j = 0; j < count; j++)
    store_float (row, n0 + j, job->bias != NULL ? v[j] + job->bias[n0 + j] : v[j],
                 job->y_dtype, job->add);
}

/* Rows 0 … rows − 1 of X (ld apart, k elements each) packed by residue for mm_lanes
 * (piq-kernels-private.h) as width ≥ rows rows (the rest zeros, as are the elements
 * past k), block after block of FGEMM_KB: the block of k0 at dst + k0 · width. Each
 * step of 16 k goes through a buffer, so every line of the output is written once and
 * whole: scattered, the stores of a step hit lines a power of two apart, which share
 * two L1 sets, and packing cost a GEMM 20 %. */
static void
pack_residues (const float *restrict src, size_t ld, uint64_t rows, uint64_t k, uint64_t width,
               float *restrict dst)
{
  const uint64_t kp = XF_LD (k);
  float t[16][FGEMM_MC];

  for (uint64_t k0 = 0; k0 < kp; k0 += FGEMM_KB)
    {
      const uint64_t kq = MIN ((uint64_t) FGEMM_KB, kp - k0) / 16;
      float *restrict d = dst + k0 * width;

      for (uint64_t q = 0; q < kq; q++)
        {
          const uint64_t kk = k0 + 16 * q, full = MIN ((uint64_t) 16, k - MIN (k, kk));
          for (uint64_t r = 0; r < width; r++)
            {
              const float *s = src + r * ld + kk;
              if (r < rows && full == 16)
                for (uint64_t l = 0; l < 16; l++)
                  t[l][r] = s[l];
              else
                for (uint64_t l = 0; l < 16; l++)
                  t[l][r] = r < rows && l < full ? s[l] : 0.0f;
            }
          /* a line at a time: a copy of width floats became rep movsq, whose start-up
           * took 40 % of the packing */
          for (uint64_t l = 0; l < 16; l++)
            for (uint64_t r = 0; r < width; r += 16)
              memcpy (d + (l * kq + q) * width + r, &t[l][r], 16 * sizeof (float));
        }
    }
}

/* X's rows c · FGEMM_MC … (FGEMM_MC of them, or to the end, padded to a multiple of
 * 16) packed at xp + c · FGEMM_MC · XF_LD (k), once per call: every work item reads
 * them. X that is not binary32 is widened here first, on the threads. */
static void
pack_x (void *data, uint64_t c0, uint64_t count)
{
  MatmulJob *job = data;

  for (uint64_t c = c0; c < c0 + count; c++)
    {
      uint64_t m = c * FGEMM_MC, mc = MIN ((uint64_t) FGEMM_MC, job->m - m);
      if (job->xw != NULL)
        for (uint64_t r = m; r < m + mc; r++)
          to_f32 (job->xsrc + r * job->xsrc_ld, job->xsrc_dtype, job->k,
                  job->xw + r * job->ldx);
      pack_residues (job->x + m * job->ldx, job->ldx, mc, job->k, FGEMM_WIDTH (mc),
                     job->xp + m * XF_LD (job->k));
    }
}

/* Rows 0 … 7 of a decoded panel (k floats each, one after another) as micro-panel
 * group g of a work item's packed W (mm_lanes' layout, piq-kernels-private.h), every
 * block of FGEMM_KB: element 16·q + l of row r at (l · FGEMM_NC / 8 + g) ·
 * PIQ_MM_WLD (kq) + 8·q + r of its block, zeros past k. Four rows by four k are
 * transposed in registers at a time; a float at a time the packing took about a
 * tenth of a work item's time on Zen 3. */
typedef float pack_v4 __attribute__ ((vector_size (16)));

static void
pack_w8 (const float *restrict rows, uint64_t k, uint64_t g, float *restrict wp)
{
  const uint64_t kp = XF_LD (k);

  for (uint64_t k0 = 0; k0 < kp; k0 += FGEMM_KB)
    {
      const uint64_t kq = MIN ((uint64_t) FGEMM_KB, kp - k0) / 16;
      const size_t wld = PIQ_MM_WLD (kq), lstep = FGEMM_NC / 8 * wld;
      float *restrict b = wp + FGEMM_WBLOCK (k0) + g * wld;

      for (uint64_t q = 0; q < kq; q++)
        {
          const uint64_t kk = k0 + 16 * q;
          float *restrict d = b + 8 * q;

          if (kk + 16 > k)
            {
              for (uint64_t r = 0; r < PANEL; r++)
                for (uint64_t l = 0; l < 16; l++)
                  d[l * lstep + r] = kk + l < k ? rows[r * k + kk + l] : 0.0f;
              continue;
            }
          for (uint64_t h = 0; h < PANEL; h += 4)
            for (uint64_t c = 0; c < 16; c += 4)
              {
                pack_v4 a0, a1, a2, a3;
                memcpy (&a0, rows + (h + 0) * k + kk + c, sizeof a0);
                memcpy (&a1, rows + (h + 1) * k + kk + c, sizeof a1);
                memcpy (&a2, rows + (h + 2) * k + kk + c, sizeof a2);
                memcpy (&a3, rows + (h + 3) * k + kk + c, sizeof a3);
                pack_v4 t0 = __builtin_shufflevector (a0, a1, 0, 4, 1, 5);
                pack_v4 t1 = __builtin_shufflevector (a0, a1, 2, 6, 3, 7);
                pack_v4 t2 = __builtin_shufflevector (a2, a3, 0, 4, 1, 5);
                pack_v4 t3 = __builtin_shufflevector (a2, a3, 2, 6, 3, 7);
                pack_v4 o0 = __builtin_shufflevector (t0, t2, 0, 1, 4, 5);
                pack_v4 o1 = __builtin_shufflevector (t0, t2, 2, 3, 6, 7);
                pack_v4 o2 = __builtin_shufflevector (t1, t3, 0, 1, 4, 5);
                pack_v4 o3 = __builtin_shufflevector (t1, t3, 2, 3, 6, 7);
                /* one store each: an array of the four went through the stack */
                memcpy (d + (c + 0) * lstep + h, &o0, sizeof o0);
                memcpy (d + (c + 1) * lstep + h, &o1, sizeof o1);
                memcpy (d + (c + 2) * lstep + h, &o2, sizeof o2);
                memcpy (d + (c + 3) * lstep + h, &o3, sizeof o3);
              }
        }
    }
}

/* The float policy's GEMM over one work item: FGEMM_NC weight rows decoded once, a
 * panel at a time, and packed for mm_lanes (zeros past k and past the last row), then
 * multiplied with the packed X, FGEMM_MC rows at a time, block by block of FGEMM_KB,
 * the lanes carried in scratch. */
static int
gemm_item (MatmulJob *job, float *scratch, uint64_t r0, uint64_t m0, uint64_t m1,
           PiqEngineError *e)
{
  const PiqEnginePacked *w = job->w;
  const uint64_t rows = MIN ((uint64_t) FGEMM_NC, w->n - r0), k = w->k, kp = XF_LD (k);
  float *wp = scratch, *tmp = wp + FGEMM_WP (k);
  float *lanes = tmp + PANEL * k;
  float *out = lanes + FGEMM_MC * 16 * FGEMM_NC;

  for (uint64_t g = 0; g < FGEMM_NC; g += PANEL)
    {
      uint64_t gr = g < rows ? MIN ((uint64_t) PANEL, rows - g) : 0;
      if (gr > 0 && !decode_rows (job->eng, w, r0 + g, gr, tmp, e))
        return 0;
      if (gr < PANEL)
        memset (tmp + gr * k, 0, (size_t) ((PANEL - gr) * k) * sizeof (float));
      pack_w8 (tmp, k, g / PANEL, wp);
    }
  for (uint64_t m = m0; m < m1; m += FGEMM_MC)
    {
      /* m is a multiple of FGEMM_MC (the items' rows are), so this is pack_x's block */
      uint64_t mc = MIN ((uint64_t) FGEMM_MC, m1 - m), width = FGEMM_WIDTH (mc), k0 = 0;
      const float *x = job->xp + m * kp;
      do
        {
          uint64_t kq = MIN ((uint64_t) FGEMM_KB, kp - k0) / 16;
          job->eng->kernels->mm_lanes (x + k0 * width, (size_t) width, wp + FGEMM_WBLOCK (k0),
                                       (size_t) kq, lanes, k0 == 0,
                                       k0 + FGEMM_KB >= kp ? out : NULL, FGEMM_NC);
          k0 += FGEMM_KB;
        }
      while (k0 < kp);
      for (uint64_t i = 0; i < mc; i++)
        store_row (job, m + i, r0, out + i * FGEMM_NC, rows);
    }
  return 1;
}

/* The float policy over one work item: decode a panel, multiply it by a block of rows. */
static int
float_item (MatmulJob *job, float *panel, uint64_t r0, uint64_t m0, uint64_t m1,
            PiqEngineError *e)
{
  const PiqEnginePacked *w = job->w;
  uint64_t rows = MIN ((uint64_t) PANEL, w->n - r0);
  float out[TILE_M * PANEL];

  if (w->fused)
    {
      /* the weights decoded in registers, chunk by chunk, never stored */
      PiqMmWeights mw = {
        &w->fa, (const uint8_t *) w->q.codes + r0 * w->f_code_stride, w->f_code_stride,
        w->q.scales != NULL ? (const uint8_t *) w->q.scales + r0 * w->f_blocks_per_row *
                              w->f_scale_bytes : NULL,
        w->f_zero_points ? (const int32_t *) w->q.zero_points + r0 * w->f_blocks_per_row : NULL,
        w->f_blocks_per_row,
      };
      for (uint64_t m = m0; m < m1; m += TILE_M)
        {
          uint64_t mr = MIN ((uint64_t) TILE_M, m1 - m);
          job->eng->kernels->mm_decode_dot (&mw, job->x + m * job->ldx, job->ldx, (size_t) w->k,
                                            (size_t) mr, (size_t) rows, out, PANEL);
          for (uint64_t i = 0; i < mr; i++)
            store_row (job, m + i, r0, out + i * PANEL, rows);
        }
      return 1;
    }
  if (!decode_rows (job->eng, w, r0, PANEL, panel, e))
    return 0;
  for (uint64_t m = m0; m < m1; m += TILE_M)
    {
      uint64_t mr = MIN ((uint64_t) TILE_M, m1 - m);
      job->eng->kernels->mm_tile (job->x + m * job->ldx, job->ldx, panel, (size_t) w->k,
                                  (size_t) w->k, (size_t) mr, (size_t) rows, out, PANEL);
      for (uint64_t i = 0; i < mr; i++)
        store_row (job, m + i, r0, out + i * PANEL, rows);
    }
  return 1;
}

/* The dot products of elements k0 … k0 + n − 1 of a row of codes with x. */
static inline void
group_dots (const MatmulJob *job, const uint8_t *row, const int8_t *x, uint64_t k0, size_t n,
            size_t group, int32_t *out)
{
  const PiqEnginePacked *w = job->w;

  if (w->q4)
    job->eng->kernels->dot_groups_q4 (row + k0 / 2, x + k0, n, group, out);
  else if (w->signed_codes)
    job->eng->kernels->dot_groups_i8 ((const int8_t *) (const void *) row + k0, x + k0, n, group,
                                      out);
  else
    job->eng->kernels->dot_groups (row + k0, x + k0, n, group, out);
}

/* A panel of outputs of the dynamic-int8 policy. Each output is the Σ over groups, in
 * order, of ((double) I · scale_w) · scale_x in binary64, rounded once to binary32.
 * Each row's terms are computed in one pass over its groups right after its integer
 * sums (I = Σ c·q − z·Σq in binary64 is exact: |I| < 2^53), without reading the zero
 * points where they are all one value; then the panel's rows run side by side, so the
 * eight dependent chains of binary64 adds overlap (one output at a time waited on
 * each add). */
static void
int8_item (MatmulJob *job, uint8_t *scratch, uint64_t r0, uint64_t m0, uint64_t m1)
{
  const PiqEnginePacked *w = job->w;
  uint64_t rows = MIN ((uint64_t) PANEL, w->n - r0), groups = w->groups, k = w->k;
  double *terms = (double *) (void *) scratch;                  /* [groups][PANEL] */
  int32_t *partial = (int32_t *) (void *) (terms + PANEL * groups);
  double acc[PANEL];
  float out[PANEL];

  for (uint64_t m = m0; m < m1; m++)
    {
      const int8_t *xc = job->xq + m * job->ldq;
      const double *xdd = job->xdd + m * groups;
      const double *zx = job->zx != NULL ? job->zx + m * groups : NULL;
      const int32_t *xsum = job->xsum + m * groups;

      for (uint64_t j = 0; j < rows; j++)
        {
          const uint8_t *wc = w->codes + (r0 + j) * w->row_bytes;
          const int32_t *zps = w->zps + (r0 + j) * groups;
          const float *sc = w->scales + (r0 + j) * groups;
          double *t = terms + j;
          if (w->group <= DOT_CHUNK)
            {
              group_dots (job, wc, xc, 0, (size_t) k, (size_t) w->group, partial);
              if (w->zp_uniform && w->zp0 == 0)
                for (uint64_t g = 0; g < groups; g++)
                  t[g * PANEL] = (double) partial[g] * (double) sc[g] * xdd[g];
              else if (zx != NULL)
                for (uint64_t g = 0; g < groups; g++)
                  t[g * PANEL] = ((double) partial[g] - zx[g]) * (double) sc[g] * xdd[g];
              else
                for (uint64_t g = 0; g < groups; g++)
                  t[g * PANEL] = ((double) partial[g] - (double) zps[g] * (double) xsum[g]) *
                                 (double) sc[g] * xdd[g];
            }
          else
            for (uint64_t g = 0; g < groups; g++)
              {
                uint64_t k0 = g * w->group, len = MIN (w->group, k - k0);
                uint64_t chunks = (len + DOT_CHUNK - 1) / DOT_CHUNK;
                int64_t sum = 0;
                group_dots (job, wc, xc, k0, (size_t) len, DOT_CHUNK, partial);
                for (uint64_t c = 0; c < chunks; c++)
                  sum += partial[c];
                t[g * PANEL] = (double) (sum - (int64_t) zps[g] * xsum[g]) * (double) sc[g] *
                               xdd[g];
              }
        }
      /* each row's terms in group order; a whole panel with a constant count, so the
       * eight accumulators stay in registers */
      for (uint64_t j = 0; j < PANEL; j++)
        acc[j] = 0.0;
      if (rows == PANEL)
        for (uint64_t g = 0; g < groups; g++)
          for (uint64_t j = 0; j < PANEL; j++)
            acc[j] += terms[g * PANEL + j];
      else
        for (uint64_t g = 0; g < groups; g++)
          for (uint64_t j = 0; j < rows; j++)
            acc[j] += terms[g * PANEL + j];
      for (uint64_t j = 0; j < rows; j++)
        out[j] = piq_mm_canonical ((float) acc[j]);
      store_row (job, m, r0, out, rows);
    }
}

/* The dynamic-int8 policy on the weights' panels (gemm_groups): GG_NC rows of W from
 * r0 by rows m0 … m1 − 1 of X, GG_MC rows at a time; from two rows of X on the groups
 * go in blocks (GG_KC_BYTES of a panel pair), the binary64 sums carried in scratch,
 * so each block of W stays in L1 across the rows. The kernel takes the groups in
 * order either way: the same bytes. */
static void
gg_item (MatmulJob *job, uint8_t *scratch, uint64_t r0, uint64_t m0, uint64_t m1)
{
  const PiqEnginePacked *w = job->w;
  const uint64_t rows = MIN ((uint64_t) GG_NC, w->n - r0), groups = w->groups;
  double *acc = (double *) (void *) scratch;                  /* [GG_MC][GG_NC] */
  float *out = (float *) (void *) (acc + GG_MC * GG_NC);      /* [GG_MC][GG_NC] */
  const PiqGroupsW gw = { w->gg + r0 / 16 * w->gg_ldwp, w->gg_ldwp, w->gg_gbytes, w->gg_gq,
                          w->q4, w->gg_f16, w->gg_zpc };
  const uint64_t gb = m1 - m0 > 1 ? MAX ((uint64_t) 1, GG_KC_BYTES / (2 * w->gg_gbytes))
                                  : groups;

  for (uint64_t m = m0; m < m1; m += GG_MC)
    {
      uint64_t mc = MIN ((uint64_t) GG_MC, m1 - m);
      for (uint64_t g0 = 0; g0 < groups; g0 += gb)
        {
          PiqGroupsW part = gw;
          uint64_t ng = MIN (gb, groups - g0);
          part.w += g0 * w->gg_gbytes;
          job->eng->kernels->gemm_groups (&part, (size_t) ng, job->xq + m * job->ldq + g0 * w->group,
                                          job->ldq, job->xdd + m * groups + g0,
                                          job->xz + m * groups + g0, (size_t) groups, (size_t) mc,
                                          (size_t) rows, acc, GG_NC, g0 == 0,
                                          g0 + ng == groups ? out : NULL, GG_NC);
        }
      for (uint64_t i = 0; i < mc; i++)
        store_row (job, m + i, r0, out + i * GG_NC, rows);
    }
}

/* The dynamic-int8 policy with one group per row of byte codes (per-tensor and
 * per-channel weights, w->gemm_b) from INT8_GEMM_MIN_M rows on: the int8 GEMM's packed
 * micro-kernel takes D = Σ (q + 128)·s (s: the packed bytes, w or c − 128), and
 *   I = Σ q·(c − z) = D − 128·Σw                                  (signed codes)
 *                   = D + (128 − z)·Σq − 128·Σc + 128·128·K       (unsigned codes)
 * is the integer int8_item has; each output is rounded from it as there. */
#define INT8_GEMM_MIN_M 4

static void
int8_gemm_epilogue (void *data, uint64_t m0, uint64_t m1, uint64_t n0, uint64_t n1,
                    const int64_t *d, size_t ldd)
{
  const MatmulJob *job = data;
  const PiqEnginePacked *w = job->w;
  const int64_t k = (int64_t) w->k;

  for (uint64_t r = m0; r < m1; r++)
    {
      uint8_t *row = job->y + r * job->ldy;
      const int64_t *dr = d + (r - m0) * ldd - n0;
      int64_t sx = job->xsum[r];
      double xd = (double) job->xd[r];
      for (uint64_t j = n0; j < n1; j++)
        {
          int64_t i = w->signed_codes ? dr[j] - 128 * w->sums[j]
                      : dr[j] + (128 - (int64_t) w->zps[j]) * sx - 128 * w->sums[j] + 16384 * k;
          double acc = 0.0;
          float v;
          acc += (double) i * (double) w->scales[j] * xd;
          v = piq_mm_canonical ((float) acc);
          store_float (row, j, job->bias != NULL ? v + job->bias[j] : v, job->y_dtype,
                       job->add);
        }
    }
}

static int
int8_gemm (MatmulJob *job, PiqEngineError *e)
{
  const PiqEnginePacked *w = job->w;
  size_t lda = piq_engine_gemm_lda (w->k);
  uint8_t *au = piq_engine_alloc_aligned (job->m, lda, "the input as unsigned bytes", e);
  int ok;

  if (au == NULL)
    return 0;
  for (uint64_t r = 0; r < job->m; r++)
    {
      memset (au + r * lda + w->k, 0, lda - w->k);
      for (uint64_t i = 0; i < w->k; i++)
        au[r * lda + i] = (uint8_t) job->xq[r * job->ldq + i] ^ 0x80;
    }
  ok = piq_engine_gemm_u8s8 (job->eng, w, au, lda, job->m, int8_gemm_epilogue, job, e);
  free (au);
  return ok;
}

/* gemm_item's scratch: the packed weights, a panel as decoded, the lanes carried from
 * one block of FGEMM_KB to the next, and the outputs. */
static size_t
gemm_scratch (uint64_t k)
{
  return (size_t) (FGEMM_WP (k) + PANEL * k + FGEMM_MC * FGEMM_NC * 16 +
                   FGEMM_MC * FGEMM_NC) * sizeof (float);
}

/* One work item: weight panel `panel` by rows m0 … m1 − 1 of X. */
static void
run_item (MatmulJob *job, uint8_t *scratch, uint64_t panel, uint64_t m0, uint64_t m1)
{
  if (job->w->activation == PIQ_ACT_FLOAT)
    {
      PiqEngineError e;
      if (!(job->gemm ? gemm_item (job, (float *) scratch, panel * job->prows, m0, m1, &e)
                      : float_item (job, (float *) scratch, panel * PANEL, m0, m1, &e)) &&
          !__atomic_exchange_n (&job->failed, 1, __ATOMIC_RELAXED))
        job->error = e;
    }
  else if (job->w->gg != NULL)
    gg_item (job, scratch, panel * job->prows, m0, m1);
  else
    int8_item (job, scratch, panel * PANEL, m0, m1);
}

static void
matmul_slot (void *data, uint64_t slot, uint64_t count)
{
  MatmulJob *job = data;
  uint64_t items = job->panels * job->mblocks;

  if (job->split_parts <= 1)
    {
      /* The items one at a time, to whichever worker is free: each output is still
       * one item's, so its bytes do not depend on which. A static split (a
       * contiguous run per slot) made every call wait for its slowest thread: on
       * 16 threads of the 16-core host a layer of Q4_0's float GEMV took 0.55–0.57
       * ms that way and 0.42 ms this way (docs/performance.md, session 35). A
       * worker keeps to the first slot's scratch: it runs one item at a time. */
      uint8_t *scratch = job->scratch + slot * job->scratch_bytes;
      for (uint64_t it; (it = __atomic_fetch_add (&job->next, 1, __ATOMIC_RELAXED)) < items;)
        {
          uint64_t panel = it / job->mblocks, m0 = it % job->mblocks * job->mrows;
          run_item (job, scratch, panel, m0, MIN (job->m, m0 + job->mrows));
        }
      return;
    }
  for (uint64_t s = slot; s < slot + count; s++)
    {
      uint8_t *scratch = job->scratch + s * job->scratch_bytes;
      uint64_t panel = job->rounds * job->slots + s / job->split_parts;
      uint64_t m0 = s % job->split_parts * job->split_rows;
      for (uint64_t p = s * job->rounds; p < (s + 1) * job->rounds; p++)
        run_item (job, scratch, p, 0, job->m);
      if (panel < job->panels && m0 < job->m)
        run_item (job, scratch, panel, m0, MIN (job->m, m0 + job->split_rows));
    }
}

/* X's rows for the dynamic-int8 policy, on the threads: widened to binary32 where X
 * is not (into xw, as pack_x does), quantized per group of the weights by act_quantize (symmetric
 * int8, docs/matmul.md; a group with a NaN or an infinity gets d = NaN and codes 0,
 * so every output that reads it is NaN), and per group the scale in binary64, the
 * exact zp0 · Σq where every zero point is zp0, and gemm_groups' z · Σq (or Σq). One
 * thread quantized every row before: a row of 14,336 cost a 16-thread GEMV a fifth
 * of its time, a 256-row GEMM more (docs/performance.md, session 38). */
static void
prep_x (void *data, uint64_t r0, uint64_t count)
{
  MatmulJob *job = data;
  const PiqEnginePacked *w = job->w;
  const uint64_t k = w->k, groups = w->groups;

  for (uint64_t r = r0; r < r0 + count; r++)
    {
      int8_t *q = job->xq + r * job->ldq;
      if (job->xw != NULL)
        to_f32 (job->xsrc + r * job->xsrc_ld, job->xsrc_dtype, k, job->xw + r * job->ldx);
      memset (q + k, 0, job->ldq - k);
      job->eng->kernels->act_quantize (job->x + r * job->ldx, (size_t) k, (size_t) w->group, q,
                                       job->xd + r * groups, job->xsum + r * groups);
      for (uint64_t i = r * groups; i < (r + 1) * groups; i++)
        {
          job->xdd[i] = (double) job->xd[i];
          if (job->zx != NULL)
            job->zx[i] = (double) w->zp0 * (double) job->xsum[i];
          if (w->gg != NULL)
            job->xz[i] = w->gg_zpc ? job->xsum[i] : (int32_t) ((int64_t) w->gg_z0 * job->xsum[i]);
        }
    }
}

int
piq_engine_matmul (const PiqEngine *eng, const PiqEngineView *x, const PiqEnginePacked *w,
                   const PiqEngineView *bias, const PiqEngineView *y, int add,
                   PiqEngineError *e)
{
  MatmulJob job;
  uint64_t nx, ny, nb = 0, m;
  size_t x_span, y_span, b_span = 0, x_esize, y_esize, x_ld;
  Scratch *scratch;
  float *xf, *bf, *xd;
  double *xdd, *zx;
  int8_t *xq;
  int32_t *xsum;
  unsigned threads;
  uint64_t unit;
  int ok = 0, gg;
  size_t ldq;
  int32_t *xz;

  if (w->activation == PIQ_ACT_BINARY)
    return piq_engine_matmul_binary (eng, x, w, bias, y, add, e);
  memset (&job, 0, sizeof job);
  if (!piq_engine_float_view (x, "input", &nx, &x_span, e) ||
      !piq_engine_float_view (y, "output", &ny, &y_span, e) ||
      (bias != NULL && !piq_engine_float_view (bias, "bias", &nb, &b_span, e)))
    return 0;
  if (x->shape[x->n_dims - 1] != w->k)
    return failf (e, PIQ_E_SIZE, "the input's rows have %" PRIu64 " elements, the weights [%"
                  PRIu64 ", %" PRIu64 "] take %" PRIu64, x->shape[x->n_dims - 1], w->n, w->k,
                  w->k);
  m = nx / w->k;
  if (y->n_dims != x->n_dims || y->shape[y->n_dims - 1] != w->n ||
      memcmp (y->shape, x->shape, (x->n_dims - 1) * sizeof x->shape[0]) != 0)
    return failf (e, PIQ_E_SIZE, "the output must have the input's shape with %" PRIu64
                  " (the weights' outputs) as its last extent", w->n);
  if (bias != NULL && (bias->n_dims != 1 || nb != w->n))
    return failf (e, PIQ_E_SIZE, "the bias must be a vector of %" PRIu64 " elements, one per "
                  "output, not %" PRIu64, w->n, nb);
  if (!piq_engine_no_overlap (y->data, y_span, "output", x->data, x_span, "input", e) ||
      (bias != NULL &&
       !piq_engine_no_overlap (y->data, y_span, "output", bias->data, b_span, "bias", e)) ||
      !piq_engine_no_overlap (y->data, y_span, "output", w->q.codes, w->q.codes_size,
                              "weights", e) ||
      !piq_engine_no_overlap (y->data, y_span, "output", w->q.scales, w->q.scales_size,
                              "weights' scales", e) ||
      !piq_engine_no_overlap (y->data, y_span, "output", w->q.zero_points,
                              w->q.zero_points_size, "weights' zero points", e))
    return 0;
  if (m == 0)
    return 1;

  x_esize = piq_dtype_info (x->dtype)->bits / 8;
  y_esize = piq_dtype_info (y->dtype)->bits / 8;
  job.eng = eng;
  job.w = w;
  job.m = m;
  job.n = w->n;
  job.k = w->k;
  job.y = (uint8_t *) y->data;
  job.y_dtype = y->dtype;
  job.ldy = y->row_stride && m > 1 ? y->row_stride : (size_t) w->n * y_esize;
  job.add = add;

  /* X as binary32 rows: itself when it is f32 with rows on binary32 boundaries, else
   * widened (f64 rounded) once */
  x_ld = x->row_stride && m > 1 ? x->row_stride : (size_t) w->k * x_esize;
  job.gemm = w->activation == PIQ_ACT_FLOAT && m >= FGEMM_MIN_M;
  if (x->dtype == DT_F32 && x_ld % 4 == 0 && ((uintptr_t) x->data & 3) == 0)
    {
      job.x = x->data;
      job.ldx = x_ld / 4;
    }

  /* Work: panels of N × blocks of M rows; enough items for the threads, and as few
   * blocks of M as that allows, since each item decodes its panel. */
  threads = eng->n_threads ? eng->n_threads : piq_parallel_max_threads ();
  if (m * w->n * w->k < PARALLEL_MIN_MACS)
    threads = 1;
  gg = w->activation == PIQ_ACT_DYNAMIC_INT8 && w->gg != NULL;
  job.prows = job.gemm ? FGEMM_NC : gg ? GG_NC : PANEL;
  job.panels = (w->n + job.prows - 1) / job.prows;
  job.mblocks = job.panels >= 2u * threads ? 1 : MIN (m, (2u * threads + job.panels - 1) / job.panels);
  job.mrows = (m + job.mblocks - 1) / job.mblocks;
  /* whole tiles of rows; the GEMM's items start on pack_x's blocks */
  unit = job.gemm ? FGEMM_MC : TILE_M;
  job.mrows = (job.mrows + unit - 1) / unit * unit;
  job.mblocks = (m + job.mrows - 1) / job.mrows;
  job.slots = MIN ((uint64_t) threads, job.panels * job.mblocks);
  /* A GEMM item (48 weight rows by every row of X) is long: where the panels do not
   * divide among the threads, the last round's are split by rows of X instead (each
   * part decodes its panel again), so no thread waits a whole item for the others
   * (86 panels on 16 threads: 6 items' time, where 5.5 now suffices). */
  if (job.gemm && job.mblocks == 1 && threads > 1 && job.panels % threads != 0)
    {
      uint64_t left = job.panels % threads, chunks = (m + FGEMM_MC - 1) / FGEMM_MC;
      uint64_t parts = MIN (threads / left, chunks);
      if (parts > 1)
        {
          job.slots = threads;
          job.rounds = job.panels / threads;
          job.split_rows = ((m + parts - 1) / parts + FGEMM_MC - 1) / FGEMM_MC * FGEMM_MC;
          job.split_parts = (m + job.split_rows - 1) / job.split_rows;
        }
    }
  /* X's codes: gemm_groups reads whole groups, so a row runs to the last one's end */
  ldq = (size_t) (gg ? w->groups * w->group : w->k);
  job.scratch_bytes = gg ? (size_t) GG_MC * GG_NC * (sizeof (double) + sizeof (float))
                      : w->activation == PIQ_ACT_DYNAMIC_INT8
                      ? (size_t) (PANEL * w->groups * sizeof (double) +
                                  MAX (w->groups, (w->group + DOT_CHUNK - 1) / DOT_CHUNK) *
                                  sizeof (int32_t))
                      : job.gemm ? gemm_scratch (w->k)
                      : w->fused ? 0 : (size_t) PANEL * w->k * sizeof (float);
  job.scratch_bytes = (job.scratch_bytes + 63) / 64 * 64;

  /* One block of scratch for everything the call needs, taken from a one-entry cache:
   * a fresh block of this size would come from mmap, and the kernel's zeroing of its
   * pages cost a GEMV as much as its arithmetic (perf). */
  {
    const int dyn = w->activation == PIQ_ACT_DYNAMIC_INT8;
    size_t parts[10] = {
      job.slots * job.scratch_bytes,                                    /* per slot */
      job.x == NULL ? (size_t) (m * XF_LD (w->k) * sizeof (float)) : 0, /* X as f32 */
      bias != NULL ? (size_t) w->n * sizeof (float) : 0,                /* bias as f32 */
      dyn ? (size_t) (m * ldq) : 0,                                     /* X's int8 codes */
      w->activation == PIQ_ACT_DYNAMIC_INT8 ? (size_t) (m * w->groups * sizeof (float)) : 0,
      w->activation == PIQ_ACT_DYNAMIC_INT8 ? (size_t) (m * w->groups * sizeof (int32_t)) : 0,
      dyn ? (size_t) (m * w->groups * sizeof (double)) : 0,              /* X's scales, binary64 */
      dyn && w->zp_uniform && w->zp0 != 0 ? (size_t) (m * w->groups * sizeof (double)) : 0,
      gg ? (size_t) (m * w->groups * sizeof (int32_t)) : 0,               /* z · Σq */
      job.gemm ? (size_t) (FGEMM_WIDTH (m) * XF_LD (w->k) * sizeof (float)) : 0,  /* X packed */
    };
    size_t offsets[10], total = 0;
    uint8_t *base;

    for (int i = 0; i < 10; i++)
      {
        offsets[i] = total;
        if (parts[i] > SIZE_MAX - total - 64)
          return failf (e, PIQ_E_OVERFLOW, "the product's scratch does not fit in memory");
        total += (parts[i] + 63) / 64 * 64;
      }
    if ((scratch = scratch_take (total, e)) == NULL)
      return 0;
    base = scratch->data;
    job.scratch = base + offsets[0];
    xf = (float *) (void *) (base + offsets[1]);
    bf = (float *) (void *) (base + offsets[2]);
    xq = (int8_t *) (base + offsets[3]);
    xd = (float *) (void *) (base + offsets[4]);
    xsum = (int32_t *) (void *) (base + offsets[5]);
    xdd = (double *) (void *) (base + offsets[6]);
    zx = parts[7] ? (double *) (void *) (base + offsets[7]) : NULL;
    xz = (int32_t *) (void *) (base + offsets[8]);
    job.xp = (float *) (void *) (base + offsets[9]);
  }

  if (job.x == NULL)
    {
      if (job.gemm || w->activation == PIQ_ACT_DYNAMIC_INT8)
        {
          job.xw = xf;                  /* pack_x or prep_x widens its own rows */
          job.xsrc = x->data;
          job.xsrc_ld = x_ld;
          job.xsrc_dtype = x->dtype;
        }
      else
        for (uint64_t r = 0; r < m; r++)
          to_f32 ((const uint8_t *) x->data + r * x_ld, x->dtype, w->k, xf + r * XF_LD (w->k));
      job.x = xf;
      job.ldx = (size_t) XF_LD (w->k);
    }
  if (bias != NULL)
    {
      to_f32 (bias->data, bias->dtype, w->n, bf);
      job.bias = bf;
    }
  if (w->activation == PIQ_ACT_DYNAMIC_INT8)
    {
      job.xq = xq;
      job.ldq = ldq;
      job.xd = xd;
      job.xsum = xsum;
      job.xz = xz;
      job.xdd = xdd;
      job.zx = zx;
      /* a row at a time; on the team from PIQ_PARALLEL_MIN_ELEMENTS elements */
      piq_parallel_run (threads, m, 1, MAX ((uint64_t) 1, PIQ_PARALLEL_MIN_ELEMENTS / w->k),
                        prep_x, &job);
      if (w->gemm_b != NULL && m >= INT8_GEMM_MIN_M)
        {
          ok = int8_gemm (&job, e);
          goto done;
        }
    }

  if (job.gemm)
    piq_parallel_run (threads, (m + FGEMM_MC - 1) / FGEMM_MC, 1, 2, pack_x, &job);
  piq_parallel_run (threads, job.slots, 1, 2, matmul_slot, &job);
  if (job.failed)
    {
      /* a panel's decode refused: packing decoded one, so only a change to the
       * weights' bytes since then can get here */
      *e = job.error;
      goto done;
    }
  ok = 1;
done:
  scratch_give (scratch);
  return ok;
}

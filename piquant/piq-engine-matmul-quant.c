/* piq-engine-matmul-quant.c: products whose input is quantized too, under the float policy
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the rest of the engine (docs/matmul.md, "Both operands quantized").
 *
 * Y = A · Wᵀ (+ bias) with A quantized in any format (FP8 per tensor or per row, the MX
 * formats, MSFP and BFP, NF4, integers …) and W packed for the float policy. The
 * definition is the float policy's product of decode (A) and W: A's rows are decoded
 * to binary32 exactly as dequantize decodes them, then multiplied in the float
 * policy's fixed order, so the bytes equal those of matmul (dequantize (A), W) for
 * every thread count and kernel table.
 *
 * A is decoded a block of rows at a time into one scratch buffer (never whole), and
 * each block is one float-policy product (which splits its panels and rows over the
 * threads): the weights are decoded once per block of A_BLOCK_BYTES of A, a cost of
 * at most 1/64 of the block's multiply-adds.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "piq-engine-matmul-private.h"
#include "piq-parallel-private.h"
#include "simd/piq-formats-private.h"

/* Binary32 bytes of A decoded at a time; a block holds at least 64 rows, and always a
 * multiple of 8 (so every block starts on a byte, whatever the code width). */
#define A_BLOCK_BYTES ((size_t) 1 << 21)
#define A_BLOCK_MIN_ROWS 64

/* A as a matrix [m, k] whose rows decode by piq_engine_rows_quant: the format unchanged
 * except that a per-channel axis is that of the matrix. Channels must be rows of the
 * matrix (axis 0 of a matrix) or its columns (the last axis). */
static int
as_matrix (const PiqEngineQuant *a, unsigned a_dims, PiqEngineQuant *out, PiqEngineError *e)
{
  *out = *a;
  if (a->f.granularity == GRAN_CHANNEL)
    {
      int axis = a->f.axis < 0 ? a->f.axis + (int) a_dims : a->f.axis;
      if (axis == (int) a_dims - 1)
        out->f.axis = 1;
      else if (axis == 0 && a_dims == 2)
        out->f.axis = 0;
      else
        return failf (e, PIQ_E_UNSUPPORTED, "an input with one scale per channel of axis %d of "
                      "%u dimensions does not decode row by row: quantize it per tensor, per "
                      "block, per row of a matrix (axis 0 of [M, in]) or per input channel "
                      "(the last axis)", a->f.axis, a_dims);
    }
  return 1;
}

/* What every product of a quantized A checks before it writes anything: A's format,
 * sizes and last extent (the weights' K), Y [..., N] with A's leading extents, the
 * bias, and no output over an operand. *m gets A's rows, *am A as a matrix. */
static int
check_call (const PiqEngineQuant *a, const uint64_t *a_shape, unsigned a_dims,
            const PiqEnginePacked *w, const PiqEngineView *bias, const PiqEngineView *y,
            uint64_t *m, PiqEngineQuant *am, PiqEngineError *e)
{
  const PiqDtypeInfo *ai;
  uint64_t n_a, k = w->k, n = w->n, ny, nb = 0;
  size_t a_codes, a_scales, a_zps, y_span, b_span = 0;

  ai = piq_dtype_info (a->f.dtype);
  if (ai == NULL || ai->kind == PIQ_KIND_FLOAT || ai->kind == PIQ_KIND_SCALE)
    return failf (e, PIQ_E_UNSUPPORTED, "the input must be quantized, not %s",
                  ai != NULL ? ai->name : "this dtype");
  if (!piq_engine_check_format (&a->f, e))
    return 0;
  if (!check_quant_input (a, a_shape, a_dims, k, &n_a, &a_codes, &a_scales, &a_zps, e))
    return 0;
  if (!as_matrix (a, a_dims, am, e))
    return 0;
  *m = n_a / k;

  /* the output and the bias, as the float policy checks them, and nothing over A */
  if (!piq_engine_float_view (y, "output", &ny, &y_span, e) ||
      (bias != NULL && !piq_engine_float_view (bias, "bias", &nb, &b_span, e)))
    return 0;
  if (y->n_dims != a_dims || y->shape[a_dims - 1] != n ||
      memcmp (y->shape, a_shape, (a_dims - 1) * sizeof a_shape[0]) != 0)
    return failf (e, PIQ_E_SIZE, "the output must have the input's shape with %" PRIu64
                  " (the weights' outputs) as its last extent", n);
  if (bias != NULL && (bias->n_dims != 1 || nb != n))
    return failf (e, PIQ_E_SIZE, "the bias must be a vector of %" PRIu64 " elements, one per "
                  "output, not %" PRIu64, n, nb);
  return piq_engine_no_overlap (y->data, y_span, "output", a->codes, a_codes, "input", e) &&
         piq_engine_no_overlap (y->data, y_span, "output", a->scales, a_scales,
                                "input's scales", e) &&
         piq_engine_no_overlap (y->data, y_span, "output", a->zero_points, a_zps,
                                "input's zero points", e) &&
         (bias == NULL ||
          piq_engine_no_overlap (y->data, y_span, "output", bias->data, b_span, "bias", e)) &&
         piq_engine_no_overlap (y->data, y_span, "output", w->q.codes, w->q.codes_size,
                                "weights", e) &&
         piq_engine_no_overlap (y->data, y_span, "output", w->q.scales, w->q.scales_size,
                                "weights' scales", e) &&
         piq_engine_no_overlap (y->data, y_span, "output", w->q.zero_points,
                                w->q.zero_points_size, "weights' zero points", e) &&
         piq_engine_no_overlap (y->data, y_span, "output", w->codes,
                                w->codes ? w->n * w->row_bytes : 0, "packed weights", e);
}

int
piq_engine_matmul_decoded (const PiqEngine *eng, const PiqEngineQuant *a,
                           const uint64_t *a_shape, unsigned a_dims, const PiqEnginePacked *w,
                           const PiqEngineView *bias, const PiqEngineView *y, int add,
                           PiqEngineError *e)
{
  PiqEngineQuant am;
  uint64_t m, k = w->k, n = w->n, block_rows;
  size_t y_esize, ldy;
  float *xf = NULL, *dq = NULL;
  int ok = 0;

  if (w->activation != PIQ_ACT_FLOAT)
    return failf (e, PIQ_E_UNSUPPORTED, "a quantized input in any format multiplies weights "
                  "packed for float activations");
  if (!check_call (a, a_shape, a_dims, w, bias, y, &m, &am, e))
    return 0;
  if (m == 0)
    return 1;

  if (a->f.double_quant)
    {
      /* the compressed chunks of scales span rows: expanded once, as packing does */
      PiqEngineFormat plain = a->f;
      uint64_t shape2[2] = { m, k };
      size_t bytes;
      plain.double_quant = 0;
      if (!piq_engine_sizes (&plain, shape2, 2, NULL, &bytes, NULL, e) ||
          (dq = try_alloc (bytes / sizeof (float), sizeof (float), "the input's scales", e)) ==
          NULL)
        return 0;
      piq_dq_expand (a->scales, bytes / sizeof (float), dq);
      am.f = plain;
      am.scales = dq;
      am.scales_size = bytes;
    }

  block_rows = A_BLOCK_BYTES / sizeof (float) / k;
  block_rows = MAX (block_rows, (uint64_t) A_BLOCK_MIN_ROWS) / 8 * 8;
  block_rows = MIN (block_rows, m);
  if ((xf = try_alloc (block_rows * k, sizeof (float), "the input's decoded rows", e)) == NULL)
    goto done;
  y_esize = piq_dtype_info (y->dtype)->bits / 8;
  ldy = y->row_stride && m > 1 ? y->row_stride : (size_t) n * y_esize;

  /* Block by block: the first block's decode checks what only a decode checks (a
   * per-tensor scale) before anything is written, and the first product everything
   * else; the blocks after it are the same calls on other rows. */
  for (uint64_t r0 = 0; r0 < m; r0 += block_rows)
    {
      uint64_t rows = MIN (block_rows, m - r0), shape[2] = { rows, k };
      PiqEngineQuant sub;
      PiqEngineView xv = { DT_F32, 2, { rows, k }, 0, xf, (size_t) (rows * k * sizeof (float)) };
      PiqEngineView yv = { y->dtype, 2, { rows, n }, ldy, (const uint8_t *) y->data + r0 * ldy,
                           y->size - (size_t) r0 * ldy };

      if (!piq_engine_rows_quant (&am, m, k, r0, &sub, e) ||
          !piq_engine_dequantize (eng, &sub, shape, 2, &xv, 0, e) ||
          !piq_engine_matmul (eng, &xv, w, bias, &yv, add, e))
        goto done;
    }
  ok = 1;
done:
  free (xf);
  free (dq);
  return ok;
}

/* ---------------------------------------------------------------------------
 * The exact block-integer route: A integer per block × W packed for dynamic int8 with
 * groups of A's block size. The dynamic-int8 policy with A's own codes and scales in
 * place of the activations' quantization (docs/matmul.md):
 *   I_g = Σ_{k in g} (a_k − za_g) · (w_k − zw_g)                exact
 *   acc = 0;  acc = acc + ((double) I_g · sw_g) · sa_g           binary64, g in order
 *   v   = (float) acc
 * MXINT8 × MXINT8: the scales are powers of two, every term is exact, and only the
 * binary64 additions and the last rounding round. */

typedef struct {
  const PiqEngine       *eng;
  const PiqEnginePacked *w;
  uint64_t       m, n, k, groups;
  const int8_t  *xq;        /* [m][k] A's values a − za (A's codes: no zero points) */
  const float   *xd;        /* [m][groups] A's scales */
  const int32_t *xsum;      /* [m][groups] Σ of A's values */
  const uint8_t *m128;      /* [m] the row holds −128 (outside dot_groups_i8's contract) */
  const float   *bias;
  uint8_t       *y;
  int            y_dtype, add;
  size_t         ldy;
  uint64_t       slots;
  uint8_t       *scratch;   /* per slot */
  size_t         scratch_bytes;
} BlockJob;

/* The exact sums of row m of A with weight row r: d[g] = Σ c·x − z·Σx per group. */
static void
block_dots (const BlockJob *job, int32_t *partial, uint64_t m, uint64_t r, int64_t *d)
{
  const PiqEnginePacked *w = job->w;
  const PiqKernelTable *kt = job->eng->kernels;
  const uint8_t *wc = w->codes + r * w->row_bytes;
  const int32_t *zps = w->zps + r * job->groups;
  const int8_t *x = job->xq + m * job->k;
  const int32_t *xsum = job->xsum + m * job->groups;
  uint64_t k = job->k, group = w->group;

  for (uint64_t g0 = 0; g0 < job->groups; )
    {
      /* whole groups at once when a group fits one int32 sum, else one group by chunks */
      uint64_t k0 = g0 * group, len, gs = group <= DOT_CHUNK ? job->groups - g0 : 1;
      size_t sub = group <= DOT_CHUNK ? (size_t) group : DOT_CHUNK;
      uint64_t parts;
      len = MIN (k - k0, gs * group);
      parts = (len + sub - 1) / sub;
      if (w->q4)
        kt->dot_groups_q4 (wc + k0 / 2, x + k0, (size_t) len, sub, partial);
      else if (w->signed_codes && !job->m128[m])
        kt->dot_groups_i8 ((const int8_t *) (const void *) wc + k0, x + k0, (size_t) len, sub,
                           partial);
      else if (w->signed_codes)
        for (uint64_t p = 0; p < parts; p++)
          {
            /* −128 in A: the sign trick's contract does not hold; the sums are exact
             * integers, so any order gives them */
            int32_t s = 0;
            for (uint64_t i = k0 + p * sub; i < MIN (k0 + len, k0 + (p + 1) * sub); i++)
              s += (int32_t) (int8_t) wc[i] * x[i];
            partial[p] = s;
          }
      else
        kt->dot_groups (wc + k0, x + k0, (size_t) len, sub, partial);
      if (group <= DOT_CHUNK)
        for (uint64_t g = 0; g < gs; g++)
          d[g0 + g] = (int64_t) partial[g] - (int64_t) zps[g0 + g] * xsum[g0 + g];
      else
        {
          int64_t sum = 0;
          for (uint64_t p = 0; p < parts; p++)
            sum += partial[p];
          d[g0] = sum - (int64_t) zps[g0] * xsum[g0];
        }
      g0 += gs;
    }
}

static void
block_slot (void *data, uint64_t slot, uint64_t count)
{
  BlockJob *job = data;
  const PiqEnginePacked *w = job->w;
  uint64_t panels = (job->n + PANEL - 1) / PANEL, items = job->m * panels, groups = job->groups;

  for (uint64_t s = slot; s < slot + count; s++)
    {
      uint64_t per = (items + job->slots - 1) / job->slots;
      int64_t *dots = (int64_t *) (void *) (job->scratch + s * job->scratch_bytes);
      int32_t *partial = (int32_t *) (void *) (dots + PANEL * groups);
      for (uint64_t it = s * per; it < MIN (items, (s + 1) * per); it++)
        {
          uint64_t m = it / panels, r0 = it % panels * PANEL;
          uint64_t rows = MIN ((uint64_t) PANEL, job->n - r0);
          const float *xd = job->xd + m * groups;
          uint8_t *yrow = job->y + m * job->ldy;
          double acc[PANEL];
          for (uint64_t j = 0; j < rows; j++)
            {
              block_dots (job, partial, m, r0 + j, dots + j * groups);
              acc[j] = 0.0;
            }
          for (uint64_t g = 0; g < groups; g++)
            for (uint64_t j = 0; j < rows; j++)
              acc[j] += (double) dots[j * groups + g] * (double) w->scales[(r0 + j) * groups + g] *
                        (double) xd[g];
          for (uint64_t j = 0; j < rows; j++)
            {
              float v = (float) acc[j];
              store_float (yrow, r0 + j, job->bias != NULL ? v + job->bias[r0 + j] : v,
                           job->y_dtype, job->add);
            }
        }
    }
}

int
piq_engine_matmul_blocks (const PiqEngine *eng, const PiqEngineQuant *a,
                          const uint64_t *a_shape, unsigned a_dims, const PiqEnginePacked *w,
                          const PiqEngineView *bias, const PiqEngineView *y, int add,
                          PiqEngineError *e)
{
  const PiqDtypeInfo *ai = piq_dtype_info (a->f.dtype);
  PiqEngineQuant am;
  BlockJob job;
  uint64_t m, k = w->k, n = w->n, group, groups;
  float *panel = NULL, *xd = NULL, *bf = NULL;
  int8_t *xq = NULL;
  int32_t *xsum = NULL, *za = NULL;
  uint8_t *m128 = NULL, *scratch = NULL;
  unsigned threads;
  int ok = 0;

  memset (&job, 0, sizeof job);
  if (w->activation != PIQ_ACT_DYNAMIC_INT8)
    return failf (e, PIQ_E_UNSUPPORTED, "the block-integer product takes weights packed for "
                  "dynamic int8 activations");
  if (ai == NULL || ai->kind != PIQ_KIND_INT || !ai->is_signed || ai->bits > 8 ||
      a->f.granularity != GRAN_BLOCK || piq_engine_has_zero_points (&a->f) ||
      a->f.double_quant)
    return failf (e, PIQ_E_UNSUPPORTED, "with weights packed for dynamic int8, an input "
                  "quantized per block takes signed integer codes of at most 8 bits without "
                  "zero points (MXINT8, int8_block, int4_block), not %s%s",
                  ai != NULL ? ai->name : "this dtype",
                  ai != NULL && ai->kind == PIQ_KIND_INT && piq_engine_has_zero_points (&a->f)
                  ? " with zero points" : "");
  if (!check_call (a, a_shape, a_dims, w, bias, y, &m, &am, e) ||
      !piq_engine_int_row_params (&am, m ? m : 1, k, &group, NULL, NULL, e))
    return 0;
  if (group != w->group)
    return failf (e, PIQ_E_UNSUPPORTED, "the input's blocks of %" PRIu64 " are not the weights' "
                  "groups of %" PRIu64 ": the block-integer product pairs equal blocks", group,
                  w->group);
  if (m == 0)
    return 1;
  groups = w->groups;

  /* A's values (codes: no zero points) as int8, its scales and sums per block */
  {
    uint64_t block_rows = MIN (m, MAX ((uint64_t) 8, A_BLOCK_BYTES / sizeof (float) / k / 8 * 8));
    PiqEngine one = { 1, eng->kernels };
    PiqEngineQuant whole = am;
    if ((xq = try_alloc (m, k, "the input's codes", e)) == NULL ||
        (xd = try_alloc (m * groups, sizeof (float), "the input's scales", e)) == NULL ||
        (za = try_alloc (m * groups, sizeof (int32_t), "the input's zero points", e)) == NULL ||
        (xsum = try_alloc (m * groups, sizeof (int32_t), "the input's sums", e)) == NULL ||
        (m128 = try_alloc (m, 1, "the input's rows", e)) == NULL ||
        (panel = try_alloc (block_rows * k, sizeof (float), "the input's rows", e)) == NULL ||
        (bias != NULL && (bf = try_alloc (n, sizeof (float), "the bias", e)) == NULL))
      goto done;
    if (!piq_engine_int_row_params (&am, m, k, &group, xd, za, e))
      goto done;
    /* the codes through the library's decoder, read per tensor with scale 1 */
    as_plain_codes (&whole);
    for (uint64_t r0 = 0; r0 < m; r0 += block_rows)
      {
        uint64_t rows = MIN (block_rows, m - r0), shape[2] = { rows, k };
        PiqEngineQuant sub;
        PiqEngineView v = { DT_F32, 2, { rows, k }, 0, panel, (size_t) (rows * k * 4) };
        if (!piq_engine_rows_quant (&whole, m, k, r0, &sub, e) ||
            !piq_engine_dequantize (&one, &sub, shape, 2, &v, 0, e))
          goto done;
        for (uint64_t r = r0; r < r0 + rows; r++)
          {
            m128[r] = 0;
            for (uint64_t g = 0; g < groups; g++)
              {
                int32_t sum = 0;
                for (uint64_t i = g * group; i < MIN (k, (g + 1) * group); i++)
                  {
                    int c = (int) panel[(r - r0) * k + i];
                    xq[r * k + i] = (int8_t) c;
                    sum += c;
                    m128[r] |= c == -128;
                  }
                xsum[r * groups + g] = sum;
              }
          }
      }
  }
  if (bias != NULL)
    to_f32 (bias->data, bias->dtype, n, bf);

  threads = eng->n_threads ? eng->n_threads : piq_parallel_max_threads ();
  if (m * n * k < PARALLEL_MIN_MACS)
    threads = 1;
  job.eng = eng;
  job.w = w;
  job.m = m;
  job.n = n;
  job.k = k;
  job.groups = groups;
  job.xq = xq;
  job.xd = xd;
  job.xsum = xsum;
  job.m128 = m128;
  job.bias = bf;
  job.y = (uint8_t *) y->data;
  job.y_dtype = y->dtype;
  job.add = add;
  job.ldy = y->row_stride && m > 1 ? y->row_stride
            : (size_t) n * (piq_dtype_info (y->dtype)->bits / 8);
  job.slots = MIN ((uint64_t) threads, m * ((n + PANEL - 1) / PANEL));
  job.scratch_bytes = (size_t) (PANEL * groups * sizeof (int64_t) +
                                MAX (groups, (group + DOT_CHUNK - 1) / DOT_CHUNK) *
                                sizeof (int32_t));
  job.scratch_bytes = (job.scratch_bytes + 63) / 64 * 64;
  if ((scratch = try_alloc (job.slots, job.scratch_bytes, "the product's scratch", e)) == NULL)
    goto done;
  job.scratch = scratch;
  piq_parallel_run (threads, job.slots, 1, 2, block_slot, &job);
  ok = 1;
done:
  free (panel);
  free (xq);
  free (xd);
  free (za);
  free (xsum);
  free (m128);
  free (bf);
  free (scratch);
  return ok;
}

/* piq-engine-matmul-binary.c: the binary activation policy, an XNOR-popcount GEMM
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the rest of the engine (docs/matmul.md). Binary weights W [N, K]
 * (sign bits with a scale per block of B elements along K; per tensor and per output
 * channel a row is one block, B = K) multiply binary activations: each call
 * quantizes every row of X, as a [1, K] tensor, to the weights' own format (what
 * piq_quantizer_quantize gives: sign bits, the format's scales), or takes A already
 * binary (piq_engine_matmul_binary_quantized). Then, per output,
 *
 *   y = (float) Σ_blocks b, in order, of ((double) sx_b · (double) sw_b) · (double) c_b
 *   c_b = len_b − 2 · popcount (x_b XOR w_b)      (= agreeing − disagreeing bits)
 *
 * accumulated in binary64 from +0 and rounded once to binary32; + bias in binary32,
 * then stored or added as the other policies do. The popcounts are exact integers;
 * a GEMV takes them from the kernel list's xnor_counts and sums here, a GEMM's work
 * item (2 rows of X or more) takes the sums from xnor_gemm, which computes the same
 * terms in the same order. This file and the kernel units are compiled without
 * contraction (-ffp-contract=off): Y's bytes are the same for every thread count and
 * SIMD table.
 *
 * Packed layout: each row of N is nb = ⌈K / B⌉ blocks of `words` = ⌈B / 64⌉ 64-bit
 * words, block b's element i in bit i mod 64 of word i / 64, the bits past the
 * block's length 0 (so they never disagree); the scales as binary32 [N][nb]. X's
 * rows take the same layout per call.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piq-engine-matmul-private.h"
#include "piq-parallel-private.h"
#include "simd/piq-formats-private.h"

#define DT_BINARY (32 + PIQ_C_BINARY)
#define DT_E8M0   64
/* From this many rows of X on, the call takes the GEMM micro-kernel (xnor_gemm),
 * BIN_GEMM_MC rows a call; a GEMV streams the rows of bits (xnor_counts). */
#define BIN_GEMM_MIN_M 2
#define BIN_GEMM_MC 64

/* Bits bit0 … bit0 + len − 1 of @src (bit j of byte j / 8) into @words words of @dst
 * from bit 0, the rest of the words 0. */
static void
gather_bits (const uint8_t *src, uint64_t bit0, uint64_t len, uint64_t *dst, uint64_t words)
{
  memset (dst, 0, words * sizeof *dst);
  if (bit0 % 8 == 0)
    {
      const uint8_t *s = src + bit0 / 8;
      uint64_t full = len / 8;
      for (uint64_t i = 0; i < full; i++)
        dst[i / 8] |= (uint64_t) s[i] << (8 * (i % 8));
      if (len % 8)
        dst[full / 8] |= (uint64_t) (s[full] & ((1u << (len % 8)) - 1u)) << (8 * (full % 8));
      return;
    }
  for (uint64_t i = 0; i < len; i++)
    {
      uint64_t j = bit0 + i;
      dst[i / 64] |= (uint64_t) ((src[j / 8] >> (j % 8)) & 1u) << (i % 64);
    }
}

/* Elements per block along K of a binary format on rows of @k: the block size, or the
 * whole row per tensor and per output channel. */
static uint64_t
row_block (const PiqEngineFormat *f, uint64_t k)
{
  return f->granularity == GRAN_BLOCK ? MIN ((uint64_t) piq_engine_block_size (f), k) : k;
}

static PiqScaleKind
scale_kind (const PiqEngineFormat *f)
{
  return f->scale_dtype == DT_F16 ? PIQ_SCALE_F16
       : f->scale_dtype == DT_E8M0 ? PIQ_SCALE_E8M0 : PIQ_SCALE_F32;
}

/* Rows r0 … r1 − 1 of a binary tensor [rows, k] (codes from bit 0, scales as @f
 * stores them, or the per-tensor @scale) into the packed layout of @p. */
static void
pack_rows (const PiqEnginePacked *p, const PiqEngineFormat *f, const void *codes,
           const void *scales, double scale, uint64_t r0, uint64_t r1, uint64_t *bits,
           float *out_scales)
{
  const uint64_t k = p->k, B = p->bblock, nb = p->bnb, words = p->bwords;
  PiqScaleKind kind = scale_kind (f);

  for (uint64_t r = r0; r < r1; r++)
    for (uint64_t b = 0; b < nb; b++)
      {
        gather_bits (codes, r * k + b * B, MIN (B, k - b * B), bits + (r * nb + b) * words, words);
        out_scales[r * nb + b] = f->granularity == GRAN_TENSOR ? piq_f64_to_f32 (scale)
                               : f->granularity == GRAN_CHANNEL
                                 ? piq_block_get_scale (kind, scales, r)
                                 : piq_block_get_scale (kind, scales, r * nb + b);
      }
}

int
piq_engine_binary_pack (const PiqEngine *eng, PiqEnginePacked *p, const PiqEngineQuant *w,
                        PiqEngineError *e)
{
  (void) eng;
  p->bblock = row_block (&w->f, p->k);
  p->bnb = (p->k + p->bblock - 1) / p->bblock;
  p->bwords = (p->bblock + 63) / 64;
  if (p->bnb * p->bwords > SIZE_MAX / 8 / p->n)
    return failf (e, PIQ_E_OVERFLOW, "the packed binary weights do not fit in memory");
  if ((p->bits = try_alloc (p->n * p->bnb * p->bwords, sizeof (uint64_t), "packed sign bits",
                            e)) == NULL ||
      (p->bscales = try_alloc (p->n * p->bnb, sizeof (float), "binary scales", e)) == NULL)
    return 0;
  pack_rows (p, &w->f, w->codes, w->scales, w->scale, 0, p->n, p->bits, p->bscales);
  p->bytes = p->n * p->bnb * (p->bwords * sizeof (uint64_t) + sizeof (float));
  {
    /* the GEMM's interleaved copy (a GEMV streams the rows: bits stays) */
    const uint64_t panels = (p->n + PANEL - 1) / PANEL, nb = p->bnb, words = p->bwords;
    if ((p->bits_p = piq_engine_alloc_aligned (panels * PANEL * nb * words, sizeof (uint64_t),
                                               "the sign bits' panels", e)) == NULL ||
        (p->bscales_p = try_alloc (panels * PANEL * nb, sizeof (float),
                                   "the scales' panels", e)) == NULL)
      return 0;
    for (uint64_t r = 0; r < panels * PANEL; r++)
      for (uint64_t b = 0; b < nb; b++)
        {
          uint64_t at = (r / PANEL * nb + b) * PANEL + r % PANEL;
          for (uint64_t t = 0; t < words; t++)
            p->bits_p[(r / PANEL * nb * words + b * words + t) * PANEL + r % PANEL] =
              r < p->n ? p->bits[(r * nb + b) * words + t] : 0;
          p->bscales_p[at] = r < p->n ? p->bscales[r * nb + b] : 0.0f;
        }
    p->bytes += panels * PANEL * nb * (words * sizeof (uint64_t) + sizeof (float));
  }
  /* the format stays (X is quantized to it); nothing of the caller's is kept */
  p->q.codes = p->q.scales = p->q.zero_points = NULL;
  p->q.codes_size = p->q.scales_size = p->q.zero_points_size = 0;
  return 1;
}

/* ---------------------------------------------------------------------------
 * The product */

typedef struct {
  const PiqEngine       *eng;
  const PiqEnginePacked *w;
  uint64_t       m;
  const uint64_t *xbits;       /* [m][nb][words] */
  const float   *xscales;      /* [m][nb] */
  const float   *bias;         /* N binary32, or NULL */
  uint8_t       *y;
  int            y_dtype;
  size_t         ldy;
  int            add;
  uint64_t       panels, mblocks, mrows, slots;
  uint64_t      *counts;       /* per slot: PANEL · nb */
  /* binarizing X (piq_engine_matmul_binary) */
  const PiqEngineView *x;
  size_t         x_ld;
  uint64_t      *xbits_w;
  float         *xscales_w;
  uint8_t       *xcodes;       /* per slot: one row's codes and scales as quantize writes them */
  size_t         xcodes_bytes, xscales_bytes;
  int            failed;
  PiqEngineError error;
} BinJob;

/* The binary64 sums of @rows weight rows from their popcounts (@counts [rows][nb]):
 * each output's terms in block order, as the definition adds them, but the rows' binary64
 * chains side by side, block by block (inlined with rows = PANEL, the sums stay in
 * registers). Summed one row after another, each output was a chain of nb dependent
 * adds, which bounded the GEMV. */
static inline __attribute__ ((always_inline)) void
bin_sums (const uint64_t *counts, const float *xs, const float *ws, uint64_t nb, uint64_t B,
          uint64_t k, const uint64_t rows, double *acc)
{
  for (uint64_t j = 0; j < rows; j++)
    acc[j] = 0.0;
  for (uint64_t b = 0; b < nb; b++)
    {
      const int64_t len = (int64_t) MIN (B, k - b * B);
      const double sx = (double) xs[b];
#pragma GCC unroll 8
      for (uint64_t j = 0; j < rows; j++)
        acc[j] += sx * (double) ws[j * nb + b] * (double) (len - 2 * (int64_t) counts[j * nb + b]);
    }
}

/* The outputs of one row of X and @rows weight rows from their binary64 sums (both
 * paths: bin_sums and xnor_gemm). */
static void
bin_store (BinJob *job, uint64_t m, uint64_t r0, uint64_t rows, const double *acc)
{
  for (uint64_t j = 0; j < rows; j++)
    {
      float v = acc[j] == acc[j] ? (float) acc[j] : NAN;   /* the default quiet NaN on every CPU */
      store_float (job->y + m * job->ldy, r0 + j, job->bias != NULL ? v + job->bias[r0 + j] : v,
                   job->y_dtype, job->add);
    }
}

static void
bin_item (BinJob *job, uint64_t *counts, uint64_t r0, uint64_t m0, uint64_t m1)
{
  const PiqEnginePacked *w = job->w;
  const uint64_t nb = w->bnb, words = w->bwords, B = w->bblock, k = w->k;
  const uint64_t rows = MIN ((uint64_t) PANEL, w->n - r0), row_words = nb * words;
  const float *ws = w->bscales + r0 * nb;
  PiqXnorCountsFn xnor = job->eng->kernels->xnor_counts;
  double acc[PANEL];

  if (job->m >= BIN_GEMM_MIN_M)
    {
      /* the panel's interleaved copy against BIN_GEMM_MC rows of X at a time */
      double sums[BIN_GEMM_MC * PANEL];
      for (uint64_t m = m0; m < m1; m += BIN_GEMM_MC)
        {
          uint64_t mc = MIN ((uint64_t) BIN_GEMM_MC, m1 - m);
          job->eng->kernels->xnor_gemm (job->xbits + m * row_words, (size_t) row_words,
                                        job->xscales + m * nb, (size_t) nb, (size_t) mc,
                                        w->bits_p + r0 * row_words, w->bscales_p + r0 * nb,
                                        (size_t) nb, (size_t) words, (size_t) B, (size_t) k, sums);
          for (uint64_t i = 0; i < mc; i++)
            bin_store (job, m + i, r0, rows, sums + i * PANEL);
        }
      return;
    }
  for (uint64_t m = m0; m < m1; m++)
    {
      const uint64_t *xb = job->xbits + m * row_words;
      const float *xs = job->xscales + m * nb;

      for (uint64_t j = 0; j < rows; j++)
        xnor (xb, w->bits + (r0 + j) * row_words, (size_t) nb, (size_t) words, counts + j * nb);
      if (rows == PANEL)
        bin_sums (counts, xs, ws, nb, B, k, PANEL, acc);
      else
        bin_sums (counts, xs, ws, nb, B, k, rows, acc);
      bin_store (job, m, r0, rows, acc);
    }
}

static void
bin_slot (void *data, uint64_t slot, uint64_t count)
{
  BinJob *job = data;
  uint64_t items = job->panels * job->mblocks;

  for (uint64_t s = slot; s < slot + count; s++)
    {
      uint64_t per = (items + job->slots - 1) / job->slots;
      for (uint64_t it = s * per; it < MIN (items, (s + 1) * per); it++)
        {
          uint64_t panel = it / job->mblocks, mb = it % job->mblocks;
          uint64_t m0 = mb * job->mrows, m1 = MIN (job->m, m0 + job->mrows);
          bin_item (job, job->counts + s * PANEL * job->w->bnb, panel * PANEL, m0, m1);
        }
    }
}

/* Rows slot … of X quantized to the weights' format, one [1, K] tensor at a time, and
 * laid out as the packed weights are. */
static void
binarize_slot (void *data, uint64_t slot, uint64_t count)
{
  BinJob *job = data;
  const PiqEnginePacked *w = job->w;
  PiqEngine one = { 1, job->eng->kernels };
  PiqEngineRecipe recipe = PIQ_ENGINE_RECIPE_DEFAULT;
  uint64_t per = (job->m + job->slots - 1) / job->slots;

  for (uint64_t s = slot; s < slot + count; s++)
    {
      uint8_t *codes = job->xcodes + s * (job->xcodes_bytes + job->xscales_bytes);
      uint8_t *scales = codes + job->xcodes_bytes;
      for (uint64_t r = s * per; r < MIN (job->m, (s + 1) * per); r++)
        {
          PiqEngineView v = { job->x->dtype, 2, { 1, w->k }, 0,
                              (const uint8_t *) job->x->data + r * job->x_ld, 0 };
          PiqEngineQuant q;
          PiqEngineError e;
          uint64_t seed;

          v.size = (size_t) w->k * (piq_dtype_info (v.dtype)->bits / 8);
          memset (&q, 0, sizeof q);
          q.f = w->q.f;
          q.codes = codes;
          q.codes_size = job->xcodes_bytes;
          q.scales = w->q.f.granularity == GRAN_TENSOR ? NULL : scales;
          q.scales_size = w->q.f.granularity == GRAN_TENSOR ? 0 : job->xscales_bytes;
          if (!piq_engine_quantize (&one, &recipe, &v, &q, &seed, &e))
            {
              if (!__atomic_exchange_n (&job->failed, 1, __ATOMIC_RELAXED))
                job->error = e;
              return;
            }
          /* one row: its blocks are rows r … r + 1 of a [1, K] tensor */
          pack_rows (w, &q.f, codes, scales, q.scale, 0, 1,
                     job->xbits_w + r * w->bnb * w->bwords, job->xscales_w + r * w->bnb);
        }
    }
}

/* The checks every product makes: X (or A) [..., K] with @m rows, Y [..., N] with
 * the same leading extents, the bias N elements; Y overlaps nothing it reads. */
static int
check_io (const PiqEnginePacked *w, const uint64_t *x_shape, unsigned x_dims, const void *x_data,
          size_t x_span, const PiqEngineView *bias, const PiqEngineView *y, uint64_t *m,
          PiqEngineError *e)
{
  uint64_t ny, nb = 0, nx = 1;
  size_t y_span, b_span = 0;

  if (!piq_engine_float_view (y, "output", &ny, &y_span, e) ||
      (bias != NULL && !piq_engine_float_view (bias, "bias", &nb, &b_span, e)))
    return 0;
  if (x_shape[x_dims - 1] != w->k)
    return failf (e, PIQ_E_SIZE, "the input's rows have %" PRIu64 " elements, the weights [%"
                  PRIu64 ", %" PRIu64 "] take %" PRIu64, x_shape[x_dims - 1], w->n, w->k, w->k);
  for (unsigned d = 0; d + 1 < x_dims; d++)
    nx *= x_shape[d];
  if (y->n_dims != x_dims || y->shape[y->n_dims - 1] != w->n ||
      memcmp (y->shape, x_shape, (x_dims - 1) * sizeof x_shape[0]) != 0)
    return failf (e, PIQ_E_SIZE, "the output must have the input's shape with %" PRIu64
                  " (the weights' outputs) as its last extent", w->n);
  if (bias != NULL && (bias->n_dims != 1 || nb != w->n))
    return failf (e, PIQ_E_SIZE, "the bias must be a vector of %" PRIu64 " elements, one per "
                  "output, not %" PRIu64, w->n, nb);
  if (!piq_engine_no_overlap (y->data, y_span, "output", x_data, x_span, "input", e) ||
      (bias != NULL &&
       !piq_engine_no_overlap (y->data, y_span, "output", bias->data, b_span, "bias", e)))
    return 0;
  *m = nx;
  return 1;
}

/* The call after the checks: X's rows are in job->xbits / xscales (or binarized by
 * binarize_slot first when job->x is set). */
static int
run (BinJob *job, const PiqEngine *eng, const PiqEnginePacked *w, const PiqEngineView *bias,
     const PiqEngineView *y, int add, PiqEngineError *e)
{
  uint64_t m = job->m, row_words = w->bnb * w->bwords;
  size_t y_esize = piq_dtype_info (y->dtype)->bits / 8;
  unsigned threads;
  float *bf = NULL;
  int ok = 0;

  job->eng = eng;
  job->w = w;
  job->y = (uint8_t *) y->data;
  job->y_dtype = y->dtype;
  job->ldy = y->row_stride && m > 1 ? y->row_stride : (size_t) w->n * y_esize;
  job->add = add;
  threads = eng->n_threads ? eng->n_threads : piq_parallel_max_threads ();
  /* a popcount does 64 multiply-adds: the float policy's threshold in bit operations */
  if (m * w->n * w->k < 64 * PARALLEL_MIN_MACS)
    threads = 1;
  job->panels = (w->n + PANEL - 1) / PANEL;
  job->mblocks = job->panels >= 2u * threads ? 1
                 : MIN (m, (2u * threads + job->panels - 1) / job->panels);
  job->mrows = (m + job->mblocks - 1) / job->mblocks;
  job->mblocks = (m + job->mrows - 1) / job->mrows;
  job->slots = MIN ((uint64_t) threads, job->panels * job->mblocks);

  if ((job->counts = try_alloc (job->slots * PANEL, w->bnb * sizeof (uint64_t),
                                "the popcounts", e)) == NULL ||
      (bias != NULL && (bf = try_alloc (w->n, sizeof (float), "the bias as binary32", e)) == NULL))
    goto done;
  if (job->x != NULL)
    {
      /* X's rows quantized to the weights' format, one slot per thread */
      uint64_t bslots = MIN ((uint64_t) (eng->n_threads ? eng->n_threads
                                         : piq_parallel_max_threads ()), m);
      size_t codes = 0, scales = 0;
      uint64_t shape[2] = { 1, w->k };
      if (m * w->k < PIQ_PARALLEL_MIN_ELEMENTS)
        bslots = 1;
      if (!piq_engine_sizes (&w->q.f, shape, 2, &codes, &scales, NULL, e))
        goto done;
      job->xcodes_bytes = (codes + 7) / 8 * 8;
      job->xscales_bytes = (scales + 7) / 8 * 8;
      if ((job->xbits_w = try_alloc (m, row_words * sizeof (uint64_t), "the input's bits",
                                     e)) == NULL ||
          (job->xscales_w = try_alloc (m, w->bnb * sizeof (float), "the input's scales",
                                       e)) == NULL ||
          (job->xcodes = try_alloc (bslots, job->xcodes_bytes + job->xscales_bytes,
                                    "a binarized row", e)) == NULL)
        goto done;
      {
        uint64_t run_slots = job->slots;
        job->slots = bslots;
        piq_parallel_run (bslots, bslots, 1, 2, binarize_slot, job);
        job->slots = run_slots;
      }
      if (job->failed)
        {
          *e = job->error;
          goto done;
        }
      job->xbits = job->xbits_w;
      job->xscales = job->xscales_w;
    }
  if (bias != NULL)
    {
      to_f32 (bias->data, bias->dtype, w->n, bf);
      job->bias = bf;
    }
  piq_parallel_run (threads, job->slots, 1, 2, bin_slot, job);
  ok = 1;
done:
  free (job->counts);
  free (bf);
  free (job->xbits_w);
  free (job->xscales_w);
  free (job->xcodes);
  return ok;
}

int
piq_engine_matmul_binary (const PiqEngine *eng, const PiqEngineView *x, const PiqEnginePacked *w,
                          const PiqEngineView *bias, const PiqEngineView *y, int add,
                          PiqEngineError *e)
{
  BinJob job;
  uint64_t nx;
  size_t x_span, x_esize;

  memset (&job, 0, sizeof job);
  if (!piq_engine_float_view (x, "input", &nx, &x_span, e) ||
      !check_io (w, x->shape, x->n_dims, x->data, x_span, bias, y, &job.m, e))
    return 0;
  if (job.m == 0)
    return 1;
  x_esize = piq_dtype_info (x->dtype)->bits / 8;
  job.x = x;
  job.x_ld = x->row_stride && job.m > 1 ? x->row_stride : (size_t) w->k * x_esize;
  return run (&job, eng, w, bias, y, add, e);
}

int
piq_engine_matmul_binary_quantized (const PiqEngine *eng, const PiqEngineQuant *a,
                                    const uint64_t *a_shape, unsigned a_dims,
                                    const PiqEnginePacked *w, const PiqEngineView *bias,
                                    const PiqEngineView *y, int add, PiqEngineError *e)
{
  BinJob job;
  PiqEnginePacked rows;
  size_t codes, scales;
  uint64_t *bits = NULL;
  float *sc = NULL;
  int ok;
  char buf[32];

  memset (&job, 0, sizeof job);
  if (w->activation != PIQ_ACT_BINARY)
    return failf (e, PIQ_E_UNSUPPORTED, "a binary input multiplies weights packed for the "
                  "binary policy");
  if (a->f.dtype != DT_BINARY)
    return failf (e, PIQ_E_UNSUPPORTED, "weights packed for the binary policy multiply a "
                  "binary input, not %s", piq_dtype_label (a->f.dtype, buf));
  if (!piq_engine_sizes (&a->f, a_shape, a_dims, &codes, &scales, NULL, e))
    return 0;
  if (a->codes_size < codes || a->scales_size < scales || (scales && a->scales == NULL))
    return failf (e, PIQ_E_SIZE, "the input holds fewer bytes than its shape needs");
  if (a->f.granularity == GRAN_CHANNEL &&
      !(a_dims == 2 && (a->f.axis == 0 || a->f.axis == -2)))
    return failf (e, PIQ_E_UNSUPPORTED, "a binary input per channel must be a matrix with one "
                  "scale per row (axis 0)");
  if (a_shape[a_dims - 1] == w->k && row_block (&a->f, w->k) != w->bblock)
    return failf (e, PIQ_E_SIZE, "the input's blocks along K (%" PRIu64 " elements) differ "
                  "from the weights' (%" PRIu64 ")", row_block (&a->f, w->k), w->bblock);
  if (!check_io (w, a_shape, a_dims, a->codes, codes, bias, y, &job.m, e))
    return 0;
  {
    /* the output's whole span against A's scales */
    uint64_t ny;
    size_t y_span;
    if (!piq_engine_float_view (y, "output", &ny, &y_span, e) ||
        !piq_engine_no_overlap (y->data, y_span, "output", a->scales, scales, "input's scales", e))
      return 0;
  }
  if (job.m == 0)
    return 1;
  rows = *w;
  rows.n = job.m;
  if ((bits = try_alloc (job.m, w->bnb * w->bwords * sizeof (uint64_t), "the input's bits",
                         e)) == NULL ||
      (sc = try_alloc (job.m, w->bnb * sizeof (float), "the input's scales", e)) == NULL)
    {
      free (bits);
      return 0;
    }
  pack_rows (&rows, &a->f, a->codes, a->scales, a->scale, 0, job.m, bits, sc);
  job.xbits = bits;
  job.xscales = sc;
  ok = run (&job, eng, w, bias, y, add, e);
  free (bits);
  free (sc);
  return ok;
}

/* piq-engine-matmul-int.c: the int8 GEMM on quantized operands
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the rest of the engine (docs/matmul.md).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piq-engine-matmul-private.h"
#include "piq-parallel-private.h"

/* ---------------------------------------------------------------------------
 * The int8 GEMM on quantized operands (FBGEMM's and oneDNN's contract):
 *   I[m][n] = Σ_k (a[m][k] − za_m) · (b[n][k] − zb_n)      exact, in 64 bits
 * with A uint8 or int8 per tensor or per row and B int8 or uint8 per tensor or per
 * output channel. The zero points fold through row and column sums: A is taken as
 * unsigned bytes ã (int8 + 128) and as signed x = ã − 128, and
 *   B stored as signed w = b − zb:   I = Σ ã·w − zã·Σw
 *   B stored as c = b + offset, z:   I = Σ x·c − z·Σx − (zã − 128)·(Σc − K·z)
 * where every Σ of two operands is one exact dot_groups call. */

typedef struct {
  const PiqEngine       *eng;
  const PiqEnginePacked *b;
  uint64_t       k, n;
  const uint8_t *au;       /* A as unsigned bytes ã */
  const int8_t  *ax;       /* A as signed bytes ã − 128 */
  const int32_t *za;       /* zero points of ã */
  const int64_t *axsum;    /* per row: Σ ã, Σ x */
  int64_t       *acc;      /* [m][n] */
  uint64_t       slots;
  int32_t       *partial;  /* per slot: one int32 per DOT_CHUNK of k */
  uint64_t       m;
} IntJob;

/* One exact sum of the int8 GEMM (the fold of the zero points: see above). */
static int64_t
int_sum (const IntJob *job, int32_t *partial, uint64_t r, uint64_t j)
{
  const PiqEnginePacked *b = job->b;
  const uint64_t k = job->k, chunks = (k + DOT_CHUNK - 1) / DOT_CHUNK;
  const uint8_t *wc = b->codes + j * k;
  int64_t dot = 0;

  if (b->signed_codes)
    {
      /* Σ ã·w: ã unsigned, w signed */
      job->eng->kernels->dot_groups (job->au + r * k, (const int8_t *) (const void *) wc,
                                     (size_t) k, DOT_CHUNK, partial);
      for (uint64_t c = 0; c < chunks; c++)
        dot += partial[c];
      return dot - (int64_t) job->za[r] * b->sums[j];
    }
  job->eng->kernels->dot_groups (wc, job->ax + r * k, (size_t) k, DOT_CHUNK, partial);
  for (uint64_t c = 0; c < chunks; c++)
    dot += partial[c];
  return dot - (int64_t) b->zps[j] * job->axsum[2 * r + 1] -
         ((int64_t) job->za[r] - 128) * (b->sums[j] - (int64_t) k * b->zps[j]);
}

/* Slot s of the split: items are (row of A, panel of N), in order. */
static void
int_slot (void *data, uint64_t slot, uint64_t count)
{
  IntJob *job = data;
  uint64_t panels = (job->n + PANEL - 1) / PANEL, items = job->m * panels;

  for (uint64_t s = slot; s < slot + count; s++)
    {
      uint64_t per = (items + job->slots - 1) / job->slots;
      int32_t *partial = job->partial + s * ((job->k + DOT_CHUNK - 1) / DOT_CHUNK);
      for (uint64_t it = s * per; it < MIN (items, (s + 1) * per); it++)
        {
          uint64_t r = it / panels, j0 = it % panels * PANEL;
          for (uint64_t j = j0; j < MIN (job->n, j0 + PANEL); j++)
            job->acc[r * job->n + j] = int_sum (job, partial, r, j);
        }
    }
}

int
piq_engine_matmul_int (const PiqEngine *eng, const PiqEngineQuant *a, const uint64_t *a_shape,
                       unsigned a_dims, const PiqEnginePacked *b, const PiqEngineView *bias,
                       PiqEngineMatmulOut *out, PiqEngineError *e)
{
  const PiqDtypeInfo *ai = piq_dtype_info (a->f.dtype), *bi = piq_dtype_info (b->q.f.dtype);
  uint64_t m, k = b->k, n = b->n, group, n_a;
  size_t a_codes, a_scales, a_zps;
  float *sa = NULL, *bf = NULL;
  int32_t *za = NULL;
  uint8_t *au = NULL;
  int8_t *ax = NULL;
  int64_t *axsum = NULL, *acc = NULL;
  int ok = 0;

  if (ai == NULL || ai->kind != PIQ_KIND_INT || ai->bits != 8)
    return failf (e, PIQ_E_UNSUPPORTED, "the int8 GEMM takes uint8 or int8 inputs, not %s "
                  "(an input in any other format multiplies weights packed for float "
                  "activations, and signed integers per block, MXINT8, weights packed for "
                  "dynamic int8 per block)", ai != NULL ? ai->name : "this dtype");
  if (b->activation != PIQ_ACT_DYNAMIC_INT8 || bi->bits != 8 || b->group != k)
    return failf (e, PIQ_E_UNSUPPORTED, "the int8 GEMM takes weights of int8 or uint8 per "
                  "tensor or per output channel, packed for dynamic int8 activations (these are "
                  "%s%s)", bi->name, b->activation != PIQ_ACT_DYNAMIC_INT8
                  ? ", packed for float activations" : b->group != k ? " per block" : "");
  if (a_dims < 1 || a_shape[a_dims - 1] != k)
    return failf (e, PIQ_E_SIZE, "the input's rows have %" PRIu64 " elements, the weights take "
                  "%" PRIu64, a_dims ? a_shape[a_dims - 1] : 0, k);
  if (!piq_engine_check_shape (a_shape, a_dims, &n_a, e) ||
      !piq_engine_sizes (&a->f, a_shape, a_dims, &a_codes, &a_scales, &a_zps, e))
    return 0;
  if (a->codes_size < a_codes || a->scales_size < a_scales || a->zero_points_size < a_zps ||
      (a_scales && a->scales == NULL) || (a_zps && a->zero_points == NULL))
    return failf (e, PIQ_E_SIZE, "the input holds fewer bytes than its shape needs");
  m = n_a / k;
  if (a->f.granularity != GRAN_TENSOR && !(a_dims == 2 && a->f.granularity == GRAN_CHANNEL &&
                                           (a->f.axis == 0 || a->f.axis == -2)))
    return failf (e, PIQ_E_UNSUPPORTED, "the int8 GEMM's input has one scale per tensor or per "
                  "row (per channel along axis 0 of a matrix)");
  if (out->kind != PIQ_MM_OUT_INT32 && out->kind != PIQ_MM_OUT_FLOAT &&
      out->kind != PIQ_MM_OUT_CODES)
    return failf (e, PIQ_E_UNSUPPORTED, "unknown output kind %d", out->kind);
  if (out->kind == PIQ_MM_OUT_CODES && out->add)
    return failf (e, PIQ_E_UNSUPPORTED, "requantized outputs are stored, not added to: use "
                  "an int32 or float output to accumulate");
  if (bias != NULL && out->kind == PIQ_MM_OUT_INT32)
    return failf (e, PIQ_E_UNSUPPORTED, "an int32 output is the exact sum: a bias needs a float "
                  "or requantized output");
  {
    /* the output: [..., N] with A's leading extents */
    const PiqEngineView *y = &out->view;
    uint64_t ny;
    size_t y_span;
    const PiqDtypeInfo *yi = piq_dtype_info (y->dtype);
    if (out->kind == PIQ_MM_OUT_FLOAT)
      {
        if (!piq_engine_float_view (y, "output", &ny, &y_span, e))
          return 0;
      }
    else
      {
        int want = out->kind == PIQ_MM_OUT_INT32 ? DT_INT32 : out->code_dtype;
        if (y->dtype != want || yi == NULL || (out->kind == PIQ_MM_OUT_CODES && yi->bits != 8) ||
            !piq_engine_check_shape (y->shape, y->n_dims, &ny, e) ||
            !piq_engine_dtype_size (y->dtype, ny, &y_span, e))
          return failf (e, PIQ_E_UNSUPPORTED, "the output must be int32, a float dtype, or "
                        "uint8/int8 codes with a scale");
        if (y->size < y_span)
          return failf (e, PIQ_E_SIZE, "the output holds %zu bytes, %zu are needed", y->size,
                        y_span);
      }
    if (y->n_dims != a_dims || y->shape[a_dims - 1] != n ||
        memcmp (y->shape, a_shape, (a_dims - 1) * sizeof a_shape[0]) != 0)
      return failf (e, PIQ_E_SIZE, "the output must have the input's shape with %" PRIu64
                    " (the weights' outputs) as its last extent", n);
    if (bias != NULL)
      {
        uint64_t nb;
        size_t b_span;
        if (!piq_engine_float_view (bias, "bias", &nb, &b_span, e))
          return 0;
        if (bias->n_dims != 1 || nb != n)
          return failf (e, PIQ_E_SIZE, "the bias must be a vector of %" PRIu64 " elements, "
                        "not %" PRIu64, n, nb);
        if (!piq_engine_no_overlap (y->data, y_span, "output", bias->data, b_span, "bias", e))
          return 0;
      }
    if (!piq_engine_no_overlap (y->data, y_span, "output", a->codes, a_codes, "input", e) ||
        !piq_engine_no_overlap (y->data, y_span, "output", a->scales, a_scales, "input's scales", e) ||
        !piq_engine_no_overlap (y->data, y_span, "output", a->zero_points, a_zps,
                                "input's zero points", e))
      return 0;
    if (out->kind == PIQ_MM_OUT_CODES && !(out->scale > 0 && isfinite (out->scale)))
      return failf (e, PIQ_E_INVALID_SCALE, "the output scale must be positive and finite, not %g",
                    out->scale);
    if (out->kind == PIQ_MM_OUT_CODES &&
        (out->zero_point < yi->min || out->zero_point > (int64_t) yi->max))
      return failf (e, PIQ_E_INVALID_ZERO_POINT, "zero point %" PRId64 " is outside %s's range",
                    out->zero_point, yi->name);
  }
  if (m == 0)
    return 1;

  if ((sa = try_alloc (m, sizeof (float), "the input's scales", e)) == NULL ||
      (za = try_alloc (m, sizeof (int32_t), "the input's zero points", e)) == NULL ||
      (au = try_alloc (m, k, "the input as unsigned bytes", e)) == NULL ||
      (ax = try_alloc (m, k, "the input as signed bytes", e)) == NULL ||
      (axsum = try_alloc (m, 2 * sizeof (int64_t), "the input's sums", e)) == NULL ||
      (acc = try_alloc (m * n, sizeof (int64_t), "the exact sums", e)) == NULL ||
      (bias != NULL && (bf = try_alloc (n, sizeof (float), "the bias", e)) == NULL))
    goto done;
  {
    /* A's rows: per-row scale and zero point, as unsigned (ã) and signed (x) bytes */
    PiqEngineQuant a2 = *a;
    if (a_dims != 2)
      a2.f.axis = 0;
    if (!piq_engine_int_row_params (&a2, m, k, &group, sa, za, e))
      goto done;
    for (uint64_t r = 0; r < m; r++)
      {
        int64_t su = 0, sx = 0;
        for (uint64_t i = 0; i < k; i++)
          {
            uint8_t c = ((const uint8_t *) a->codes)[r * k + i];
            uint8_t u = ai->is_signed ? (uint8_t) (c ^ 0x80) : c;
            au[r * k + i] = u;
            ax[r * k + i] = (int8_t) (u ^ 0x80);
            su += u;
            sx += (int8_t) (u ^ 0x80);
          }
        if (ai->is_signed)
          za[r] += 128;   /* ã = a + 128 */
        axsum[2 * r] = su;
        axsum[2 * r + 1] = sx;
      }
  }
  {
    /* the exact sums, rows of A split over the threads (each writes its own rows of acc) */
    IntJob job = { eng, b, k, n, au, ax, za, axsum, acc, 0, NULL, m };
    unsigned threads = eng->n_threads ? eng->n_threads : piq_parallel_max_threads ();
    if (m * n * k < PARALLEL_MIN_MACS)
      threads = 1;
    job.slots = MIN ((uint64_t) threads, m * ((n + PANEL - 1) / PANEL));
    if ((job.partial = try_alloc (job.slots, ((k + DOT_CHUNK - 1) / DOT_CHUNK) * sizeof (int32_t),
                                  "sums", e)) == NULL)
      goto done;
    piq_parallel_run (threads, job.slots, 1, 2, int_slot, &job);
    free (job.partial);
  }
  if (bias != NULL)
    to_f32 (bias->data, bias->dtype, n, bf);

  {
    const PiqEngineView *y = &out->view;
    size_t y_esize = piq_dtype_info (y->dtype)->bits / 8;
    size_t ldy = y->row_stride && m > 1 ? y->row_stride : (size_t) n * y_esize;
    uint8_t *yd = (uint8_t *) y->data;

    if (out->kind == PIQ_MM_OUT_INT32)
      {
        /* every sum checked before the first is written */
        for (uint64_t r = 0; r < m; r++)
          for (uint64_t j = 0; j < n; j++)
            {
              int64_t v = acc[r * n + j];
              if (out->add)
                {
                  int32_t old;
                  memcpy (&old, yd + r * ldy + j * 4, 4);
                  v += old;
                }
              if (v < INT32_MIN || v > INT32_MAX)
                {
                  failf (e, PIQ_E_OVERFLOW, "output [%" PRIu64 ", %" PRIu64 "] = %" PRId64
                         " does not fit an int32", r, j, v);
                  goto done;
                }
              acc[r * n + j] = v;
            }
        for (uint64_t r = 0; r < m; r++)
          for (uint64_t j = 0; j < n; j++)
            {
              int32_t v = (int32_t) acc[r * n + j];
              memcpy (yd + r * ldy + j * 4, &v, 4);
            }
      }
    else
      for (uint64_t r = 0; r < m; r++)
        for (uint64_t j = 0; j < n; j++)
          {
            double v = (double) acc[r * n + j] * (double) sa[r] * (double) b->scales[j];
            if (out->kind == PIQ_MM_OUT_FLOAT)
              store_float (yd + r * ldy, j, bf != NULL ? (float) v + bf[j] : (float) v, y->dtype,
                           out->add);
            else
              {
                const PiqDtypeInfo *yi = piq_dtype_info (y->dtype);
                double q;
                if (bf != NULL)
                  v += (double) bf[j];
                q = nearbyint (v / out->scale) + (double) out->zero_point;
                q = isnan (q) ? (double) out->zero_point
                    : q < (double) yi->min ? (double) yi->min
                    : q > (double) yi->max ? (double) yi->max : q;
                yd[r * ldy + j] = yi->is_signed ? (uint8_t) (int8_t) q : (uint8_t) q;
              }
          }
  }
  ok = 1;
done:
  free (sa);
  free (za);
  free (au);
  free (ax);
  free (axsum);
  free (acc);
  free (bf);
  return ok;
}

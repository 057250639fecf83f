/* piq-c99.c: pi-quant's C99 API (piquant-c99.h) over PiqQuantizer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Quantize and dequantize go through the public raw-pointer API with a
 * per-tensor affine PiqFormat (and, for quantize, a PiqRecipe holding the
 * given scale, zero point and round mode) per call. compute_quant_params implements pi-quant's own rule
 * (not PIQ_SCALE_RULE_MIN_MAX, which computes in binary32, rounds ties to even
 * and widens constant data), so it takes the min/max from the library's
 * reduction kernels, on the context's threads, and applies the rule here.
 *
 * pi-quant's C API has no error channel (its functions return void and abort
 * on a failed assertion). Here every rejected call logs one g_warning() naming
 * the function and the reason, and returns before anything is written:
 * a warning, not a critical, so that G_DEBUG=fatal-criticals does not turn a
 * bad argument back into an abort.
 */
#include "config.h"

#include <math.h>

#include "piquant-c99.h"
#include "piq-quantizer.h"
#include "piq-dtype.h"
#include "piq-error.h"
#include "piq-dtype-private.h"
#include "piq-parallel-private.h"
#include "simd/piq-kernels-private.h"

struct piquant_context_t
{
  PiqQuantizer *quantizer;
};

/* pi-quant's dtype numbering → PiqDtype. */
static const struct {
  PiqDtype  dtype;
  gboolean  quantized;
} dtype_map[] = {
  [PIQUANT_DTYPE_F32]   = { PIQ_DTYPE_F32,   FALSE },
  [PIQUANT_DTYPE_BF16]  = { PIQ_DTYPE_BF16,  FALSE },
  [PIQUANT_DTYPE_UINT2] = { PIQ_DTYPE_UINT2, TRUE },
  [PIQUANT_DTYPE_UINT4] = { PIQ_DTYPE_UINT4, TRUE },
  [PIQUANT_DTYPE_UINT8] = { PIQ_DTYPE_UINT8, TRUE },
};

/* n-threads is capped at 1024 by PiqQuantizer's property. */
#define MAX_THREADS 1024

static void reject (const char *func, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
reject (const char *func,
        const char *format,
        ...)
{
  g_autofree char *reason = NULL;
  va_list args;

  va_start (args, format);
  reason = g_strdup_vprintf (format, args);
  va_end (args);
  g_warning ("%s: %s; nothing was written", func, reason);
}

static gboolean
check_context (const char        *func,
               piquant_context_t *ctx)
{
  if (ctx != NULL)
    return TRUE;
  reject (func, "the context is NULL");
  return FALSE;
}

/* Map @dt, which must be a quantized type if @quantized, a float type otherwise. */
static gboolean
map_dtype (const char      *func,
           const char      *role,
           piquant_dtype_t  dt,
           gboolean         quantized,
           PiqDtype        *out)
{
  if ((unsigned) dt >= G_N_ELEMENTS (dtype_map))
    {
      reject (func, "%s %d is not a piquant_dtype_t", role, (int) dt);
      return FALSE;
    }
  if (dtype_map[dt].quantized != quantized)
    {
      reject (func, "%s must be %s, not %s", role,
              quantized ? "a quantized dtype (UINT2, UINT4, UINT8)" : "a float dtype (F32, BF16)",
              piq_dtype_get_name (dtype_map[dt].dtype));
      return FALSE;
    }
  *out = dtype_map[dt].dtype;
  return TRUE;
}

piquant_context_t *
piquant_context_create (size_t num_threads)
{
  piquant_context_t *ctx = g_new0 (piquant_context_t, 1);

  ctx->quantizer = piq_quantizer_new ();
  piq_quantizer_set_n_threads (ctx->quantizer, (guint) MIN (num_threads, MAX_THREADS));
  return ctx;
}

void
piquant_context_destroy (piquant_context_t *ctx)
{
  if (ctx == NULL)
    return;
  g_clear_object (&ctx->quantizer);
  g_free (ctx);
}

void
piquant_quantize (piquant_context_t    *ctx,
                  const void           *in,
                  piquant_dtype_t       dtype_in,
                  void                 *out,
                  piquant_dtype_t       dtype_out,
                  size_t                numel,
                  float                 scale,
                  int64_t               zero_point,
                  piquant_round_mode_t  mode)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) format = NULL;
  g_autoptr(PiqRecipe) recipe = NULL;
  PiqDtype src_dtype, dst_dtype;
  gsize dst_size;
  guint64 shape[1] = { numel };

  if (!check_context (G_STRFUNC, ctx) ||
      !map_dtype (G_STRFUNC, "the input dtype", dtype_in, FALSE, &src_dtype) ||
      !map_dtype (G_STRFUNC, "the output dtype", dtype_out, TRUE, &dst_dtype))
    return;
  if (mode != PIQUANT_NEAREST && mode != PIQUANT_STOCHASTIC)
    {
      reject (G_STRFUNC, "round mode %d is not a piquant_round_mode_t", (int) mode);
      return;
    }
  if (numel > 0 && (in == NULL || out == NULL))
    {
      reject (G_STRFUNC, "the %s buffer is NULL for %" G_GSIZE_FORMAT " elements",
              in == NULL ? "input" : "output", numel);
      return;
    }
  /* pi-quant's C API takes the buffers to be as large as @numel needs. */
  if (!piq_dtype_get_size_for_n (dst_dtype, numel, &dst_size, &error))
    {
      reject (G_STRFUNC, "%s", error->message);
      return;
    }

  /* Seed 0: a fresh seed for every stochastic call, as pi-quant draws a fresh
   * threshold for every call. */
  format = piq_format_new (dst_dtype);
  recipe = piq_recipe_new_affine (scale, zero_point);
  piq_recipe_set_round_mode (recipe, mode == PIQUANT_STOCHASTIC ? PIQ_ROUND_STOCHASTIC
                                                                : PIQ_ROUND_NEAREST);
  if (!piq_quantizer_quantize_raw (ctx->quantizer, format, recipe, src_dtype, in, shape, 1,
                                   out, dst_size, NULL, 0, NULL, 0, NULL, NULL, &error))
    reject (G_STRFUNC, "%s", error->message);
}

void
piquant_dequantize (piquant_context_t    *ctx,
                    const void           *in,
                    piquant_dtype_t       dtype_in,
                    void                 *out,
                    piquant_dtype_t       dtype_out,
                    size_t                numel,
                    float                 scale,
                    int64_t               zero_point,
                    piquant_reduce_op_t   op)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) format = NULL;
  PiqDtype src_dtype, dst_dtype;
  gsize src_size, dst_size;
  guint64 shape[1] = { numel };

  if (!check_context (G_STRFUNC, ctx) ||
      !map_dtype (G_STRFUNC, "the input dtype", dtype_in, TRUE, &src_dtype) ||
      !map_dtype (G_STRFUNC, "the output dtype", dtype_out, FALSE, &dst_dtype))
    return;
  if (op != PIQUANT_REDUCE_OP_SET && op != PIQUANT_REDUCE_OP_ADD)
    {
      reject (G_STRFUNC, "reduce op %d is not a piquant_reduce_op_t", (int) op);
      return;
    }
  if (numel > 0 && (in == NULL || out == NULL))
    {
      reject (G_STRFUNC, "the %s buffer is NULL for %" G_GSIZE_FORMAT " elements",
              in == NULL ? "input" : "output", numel);
      return;
    }
  if (!piq_dtype_get_size_for_n (src_dtype, numel, &src_size, &error) ||
      !piq_dtype_get_size_for_n (dst_dtype, numel, &dst_size, &error))
    {
      reject (G_STRFUNC, "%s", error->message);
      return;
    }

  format = piq_format_new (src_dtype);
  if (!piq_quantizer_dequantize_raw (ctx->quantizer, format, scale, zero_point, in, src_size,
                                     shape, 1, NULL, 0, NULL, 0, dst_dtype, out, dst_size,
                                     op == PIQUANT_REDUCE_OP_ADD ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET,
                                     &error))
    reject (G_STRFUNC, "%s", error->message);
}

/* ---------------------------------------------------------------------------
 * compute_quant_params: min/max per reduction block with the kernels that
 * PiqQuantizer's min/max rule uses, combined in index order. Minimum and
 * maximum are exact in every kernel family (−0 is reported as +0, which the
 * rule below cannot tell apart), so taking the CPU's best kernels rather than
 * the quantizer's capped ones changes no result. */

typedef struct {
  PiqMinMaxFn   minmax;
  const guint8 *src;
  guint         src_bits;
  PiqMinMax    *blocks;
} MinMaxJob;

/* piq_parallel_run starts ranges at multiples of the grain, PIQ_REDUCE_BLOCK. */
static void
minmax_range (void     *data,
              uint64_t  start,
              uint64_t  n)
{
  const MinMaxJob *job = data;

  for (guint64 off = 0; off < n; off += PIQ_REDUCE_BLOCK)
    {
      guint64 i = start + off;

      job->minmax (job->src + i * job->src_bits / 8, MIN (n - off, PIQ_REDUCE_BLOCK),
                   &job->blocks[i / PIQ_REDUCE_BLOCK]);
    }
}

static void
compute_params (const char        *func,
                piquant_context_t *ctx,
                PiqDtype           src_dtype,
                const void        *x,
                size_t             n,
                piquant_dtype_t    target,
                float             *out_scale,
                int64_t           *out_zero_point)
{
  g_autoptr(GError) error = NULL;
  g_autofree PiqMinMax *blocks = NULL;
  const PiqDtypeInfo *src_info, *info;
  MinMaxJob job;
  PiqDtype dst_dtype;
  guint64 n_blocks;
  double rmin = INFINITY, rmax = -INFINITY, qmin, qmax, scale, zp;

  if (!check_context (func, ctx) ||
      !map_dtype (func, "the target dtype", target, TRUE, &dst_dtype))
    return;
  if (x == NULL || out_scale == NULL || out_zero_point == NULL)
    {
      reject (func, "%s is NULL",
              x == NULL ? "the data" : out_scale == NULL ? "out_scale" : "out_zero_point");
      return;
    }
  if (n == 0)
    {
      reject (func, "cannot derive parameters from 0 elements");
      return;
    }
  if (!piq_dtype_get_size_for_n (src_dtype, n, NULL, &error))
    {
      reject (func, "%s", error->message);
      return;
    }

  src_info = piq_dtype_info (src_dtype);
  info = piq_dtype_info (dst_dtype);
  n_blocks = (n + PIQ_REDUCE_BLOCK - 1) / PIQ_REDUCE_BLOCK;
  blocks = g_try_new (PiqMinMax, n_blocks);
  if (blocks == NULL)
    {
      reject (func, "cannot allocate %" G_GUINT64_FORMAT " reduction blocks", n_blocks);
      return;
    }
  job.minmax = piq_kernels_best ()->minmax[src_info->kernel_index];
  job.src = x;
  job.src_bits = src_info->bits;
  job.blocks = blocks;
  piq_parallel_run (piq_quantizer_get_n_threads (ctx->quantizer), n, PIQ_REDUCE_BLOCK,
                    PIQ_PARALLEL_MIN_ELEMENTS, minmax_range, &job);

  for (guint64 b = 0; b < n_blocks; b++)
    {
      if (blocks[b].non_finite)
        {
          reject (func, "the data contains NaN or infinity; parameters need finite data");
          return;
        }
      rmin = MIN (rmin, blocks[b].min);
      rmax = MAX (rmax, blocks[b].max);
    }

  /* pi-quant's rule (compute_quant_config in its src/piquant.cpp), for the
   * unsigned targets of this API: qmin = 0, qmax = 2^bits − 1, binary64. */
  qmin = (double) info->min;
  qmax = (double) info->max;
  if (rmax == rmin)
    {
      *out_scale = 1.0f;
      *out_zero_point = (int64_t) (info->max >> 1);
      return;
    }
  scale = (rmax - rmin) / (qmax - qmin);
  /* round() rounds halfway cases away from zero, as std::round. Clamping
   * before the conversion to int64 keeps it defined whatever the data; with
   * integral bounds the result is pi-quant's convert-then-clamp. */
  zp = round (qmin - rmin / scale);
  zp = MAX (MIN (zp, qmax), qmin);
  *out_scale = (float) scale;
  *out_zero_point = (int64_t) zp;
}

void
piquant_compute_quant_params_float32 (piquant_context_t *ctx,
                                      const float       *x,
                                      size_t             n,
                                      piquant_dtype_t    target_quant_dtype,
                                      float             *out_scale,
                                      int64_t           *out_zero_point)
{
  compute_params (G_STRFUNC, ctx, PIQ_DTYPE_F32, x, n, target_quant_dtype,
                  out_scale, out_zero_point);
}

void
piquant_compute_quant_params_bfloat16 (piquant_context_t *ctx,
                                       const uint16_t    *x,
                                       size_t             n,
                                       piquant_dtype_t    target_quant_dtype,
                                       float             *out_scale,
                                       int64_t           *out_zero_point)
{
  compute_params (G_STRFUNC, ctx, PIQ_DTYPE_BF16, x, n, target_quant_dtype,
                  out_scale, out_zero_point);
}

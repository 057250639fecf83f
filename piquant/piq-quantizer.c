/* piq-quantizer.c: the engine
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "piq-quantizer.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"
#include "piq-parallel-private.h"
#include "simd/piq-kernels-private.h"
#include "simd/piq-cpu-private.h"

/**
 * PiqQuantizer:
 *
 * The engine: it derives parameters from data, quantizes, dequantizes and
 * requantizes, on [property@Piq.Quantizer:n-threads] threads with the best
 * kernels the CPU supports (see [property@Piq.Quantizer:simd-level]).
 *
 * Every operation has a tensor form for every language and a raw-pointer form
 * (`_raw`) for C and Vala. Results are the same bytes for any thread count and
 * any SIMD level. A quantizer may be used from several threads at once on
 * different tensors; no work is left running when a call returns.
 *
 * ```c
 * g_autoptr(GError) error = NULL;
 * PiqQuantizer *q = piq_quantizer_get_default ();
 * g_autoptr(PiqParams) params = piq_params_new (PIQ_DTYPE_UINT4);
 * if (!piq_quantizer_compute_params (q, params, src, &error))
 *   g_printerr ("%s\n", error->message);
 * g_autoptr(PiqTensor) packed = piq_quantizer_quantize_new (q, params, src, &error);
 * ```
 *
 * Since: 1.0
 */
struct _PiqQuantizer
{
  GObject         parent_instance;

  guint           n_threads;
  PiqSimdLevel    max_level;
  PiqSimdLevel    level;      /* what max_level leaves of this CPU's best */
  const PiqKernelTable *kernels;  /* the ifunc table, or &capped */
  PiqKernelTable  capped;     /* merged for a max_level below the best */
};

G_DEFINE_FINAL_TYPE (PiqQuantizer, piq_quantizer, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_N_THREADS,
  PROP_SIMD_LEVEL,
  PROP_MAX_SIMD_LEVEL,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];
static guint32 cpu_features;
static PiqSimdLevel best_level;      /* of this CPU and build, no cap */
static PiqSimdLevel default_max_level = PIQ_SIMD_LEVEL_AVX512_FP16;

/* Elements per scheduling unit: a multiple of 8 (whole bytes of every packed type),
 * of 64 bytes of every dtype, and of the reduction block. */
#define PIQ_GRAIN PIQ_REDUCE_BLOCK

static void
piq_quantizer_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  PiqQuantizer *self = PIQ_QUANTIZER (object);

  switch (prop_id)
    {
    case PROP_N_THREADS:      g_value_set_uint (value, self->n_threads); break;
    case PROP_SIMD_LEVEL:     g_value_set_enum (value, self->level); break;
    case PROP_MAX_SIMD_LEVEL: g_value_set_enum (value, self->max_level); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_quantizer_set_property (GObject      *object,
                            guint         prop_id,
                            const GValue *value,
                            GParamSpec   *pspec)
{
  PiqQuantizer *self = PIQ_QUANTIZER (object);

  switch (prop_id)
    {
    case PROP_N_THREADS:      piq_quantizer_set_n_threads (self, g_value_get_uint (value)); break;
    case PROP_MAX_SIMD_LEVEL: piq_quantizer_set_max_simd_level (self, g_value_get_enum (value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_quantizer_class_init (PiqQuantizerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const char *env;

  object_class->get_property = piq_quantizer_get_property;
  object_class->set_property = piq_quantizer_set_property;

  cpu_features = piq_cpu_features ();
  {
    PiqKernelTable scratch;
    best_level = piq_kernels_merge (G_MAXINT, cpu_features, &scratch);
  }

  /* PIQUANT_SIMD_LEVEL caps every quantizer's default, for comparisons and bug
   * reports: a nick of PiqSimdLevel ("scalar", "avx2", …). */
  env = g_getenv ("PIQUANT_SIMD_LEVEL");
  if (env != NULL && *env != '\0')
    {
      GEnumClass *eclass = g_type_class_ref (PIQ_TYPE_SIMD_LEVEL);
      GEnumValue *v = g_enum_get_value_by_nick (eclass, env);
      if (v != NULL)
        default_max_level = v->value;
      else
        g_warning ("PIQUANT_SIMD_LEVEL=%s is not a SIMD level; ignored", env);
      g_type_class_unref (eclass);
    }

  /**
   * PiqQuantizer:n-threads:
   *
   * The number of threads a call may use; 0, the default, uses every core
   * available to the process. Small calls run on the calling thread.
   *
   * Since: 1.0
   */
  properties[PROP_N_THREADS] =
    g_param_spec_uint ("n-threads", NULL, NULL, 0, 1024, 0,
                       G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY);

  /**
   * PiqQuantizer:simd-level:
   *
   * The highest kernel family in use: the best one the CPU supports, the build
   * contains and [property@Piq.Quantizer:max-simd-level] allows. Kernels that a
   * family does not accelerate run the scalar reference.
   *
   * Since: 1.0
   */
  properties[PROP_SIMD_LEVEL] =
    g_param_spec_enum ("simd-level", NULL, NULL, PIQ_TYPE_SIMD_LEVEL, PIQ_SIMD_LEVEL_SCALAR,
                       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PiqQuantizer:max-simd-level:
   *
   * A cap on the kernel family, for comparisons and bug reports. Defaults to no
   * cap, or to the value of the `PIQUANT_SIMD_LEVEL` environment variable (a
   * nick such as "scalar" or "avx2"). Results do not depend on it.
   *
   * Since: 1.0
   */
  properties[PROP_MAX_SIMD_LEVEL] =
    g_param_spec_enum ("max-simd-level", NULL, NULL, PIQ_TYPE_SIMD_LEVEL,
                       PIQ_SIMD_LEVEL_AVX512_FP16,
                       G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

/* Uncapped, the ifunc-dispatched table; capped below the best level, a merge. */
static void
select_kernels (PiqQuantizer *self)
{
  self->level = piq_kernels_merge (self->max_level, cpu_features, &self->capped);
  self->kernels = self->level == best_level ? piq_kernels_best () : &self->capped;
}

static void
piq_quantizer_init (PiqQuantizer *self)
{
  self->max_level = default_max_level;
  select_kernels (self);
}

/**
 * piq_quantizer_new:
 *
 * Creates a quantizer using every core and the best kernels.
 *
 * Returns: (transfer full): a new quantizer
 *
 * Since: 1.0
 */
PiqQuantizer *
piq_quantizer_new (void)
{
  return g_object_new (PIQ_TYPE_QUANTIZER, NULL);
}

/**
 * piq_quantizer_get_default:
 *
 * The process-wide quantizer, created on first use. Changing its properties
 * affects every user of the default instance: libraries should create their own.
 *
 * Returns: (transfer none): the default quantizer
 *
 * Since: 1.0
 */
PiqQuantizer *
piq_quantizer_get_default (void)
{
  static gsize instance = 0;

  if (g_once_init_enter (&instance))
    g_once_init_leave (&instance, (gsize) piq_quantizer_new ());
  return (PiqQuantizer *) instance;
}

/**
 * piq_quantizer_get_n_threads:
 * @self: a quantizer
 *
 * Gets [property@Piq.Quantizer:n-threads].
 *
 * Returns: the thread count, 0 for all cores
 *
 * Since: 1.0
 */
guint
piq_quantizer_get_n_threads (PiqQuantizer *self)
{
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), 0);
  return self->n_threads;
}

/**
 * piq_quantizer_set_n_threads:
 * @self: a quantizer
 * @n_threads: the thread count, 0 for all cores
 *
 * Sets [property@Piq.Quantizer:n-threads].
 *
 * Since: 1.0
 */
void
piq_quantizer_set_n_threads (PiqQuantizer *self,
                             guint         n_threads)
{
  g_return_if_fail (PIQ_IS_QUANTIZER (self));
  g_return_if_fail (n_threads <= 1024);

  if (self->n_threads == n_threads)
    return;
  self->n_threads = n_threads;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_THREADS]);
}

/**
 * piq_quantizer_get_simd_level:
 * @self: a quantizer
 *
 * Gets [property@Piq.Quantizer:simd-level].
 *
 * Returns: the kernel family in use
 *
 * Since: 1.0
 */
PiqSimdLevel
piq_quantizer_get_simd_level (PiqQuantizer *self)
{
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), PIQ_SIMD_LEVEL_SCALAR);
  return self->level;
}

/**
 * piq_quantizer_get_max_simd_level:
 * @self: a quantizer
 *
 * Gets [property@Piq.Quantizer:max-simd-level].
 *
 * Returns: the cap on the kernel family
 *
 * Since: 1.0
 */
PiqSimdLevel
piq_quantizer_get_max_simd_level (PiqQuantizer *self)
{
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), PIQ_SIMD_LEVEL_SCALAR);
  return self->max_level;
}

/**
 * piq_quantizer_set_max_simd_level:
 * @self: a quantizer
 * @level: the highest kernel family to use
 *
 * Caps the kernel family; [property@Piq.Quantizer:simd-level] tells what is
 * then used. Do not change it while another thread uses @self.
 *
 * Since: 1.0
 */
void
piq_quantizer_set_max_simd_level (PiqQuantizer *self,
                                  PiqSimdLevel  level)
{
  PiqSimdLevel old_level;

  g_return_if_fail (PIQ_IS_QUANTIZER (self));

  if (self->max_level == level)
    return;
  old_level = self->level;
  self->max_level = level;
  select_kernels (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MAX_SIMD_LEVEL]);
  if (old_level != self->level)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SIMD_LEVEL]);
}

/* ---------------------------------------------------------------------------
 * Checks shared by every operation. Each returns FALSE with a GError that names
 * the value and the limit; nothing has been written when one fails.
 */

static gboolean
check_float_dtype (PiqDtype     dtype,
                   const char  *role,
                   GError     **error)
{
  if (piq_dtype_is_float (dtype))
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
               "the %s must be a float dtype (f32, f64, bf16, f16), not %s",
               role, piq_dtype_describe (dtype));
  return FALSE;
}

static gboolean
check_size (PiqDtype     dtype,
            guint64      n_elements,
            gsize        have,
            const char  *role,
            GError     **error)
{
  gsize need;

  if (!piq_dtype_get_size_for_n (dtype, n_elements, &need, error))
    return FALSE;
  if (have >= need)
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
               "%s holds %" G_GSIZE_FORMAT " bytes, %" G_GSIZE_FORMAT " are needed for %"
               G_GUINT64_FORMAT " %s elements", role, have, need, n_elements,
               piq_dtype_describe (dtype));
  return FALSE;
}

static guint64
fresh_seed (void)
{
  guint64 seed;

  do
    seed = (guint64) g_random_int () << 32 | g_random_int ();
  while (seed == 0);
  return seed;
}

/* Validate @params for computing in the precision of @float_dtype and fill the
 * kernel arguments; *seed_used is the stochastic seed (drawn when unset). */
static gboolean
prepare_args (PiqParams      *params,
              PiqDtype        float_dtype,
              PiqKernelArgs  *a,
              guint64        *seed_used,
              GError        **error)
{
  const PiqDtypeInfo *info;
  double scale = piq_params_get_scale (params);
  guint64 seed = piq_params_get_seed (params);

  if (!piq_params_validate (params, error))
    return FALSE;

  a->scale_d = scale;
  a->inv_d = 1.0 / scale;
  a->scale_f = (float) scale;
  a->inv_f = 1.0f / a->scale_f;
  if (float_dtype == PIQ_DTYPE_F64 ? !isfinite (a->inv_d)
      : !(a->scale_f > 0.0f && isfinite (a->scale_f) && isfinite (a->inv_f)))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE,
                   "scale %g (or its inverse) is out of the range of %s, the compute precision of %s data",
                   scale, float_dtype == PIQ_DTYPE_F64 ? "binary64" : "binary32",
                   piq_dtype_describe (float_dtype));
      return FALSE;
    }

  info = piq_dtype_info (piq_params_get_dtype (params));
  a->zero_point = piq_params_get_zero_point (params);
  a->qmin = info->min;
  a->qmax = info->max;
  if (piq_params_get_round_mode (params) == PIQ_ROUND_STOCHASTIC && seed == 0)
    seed = fresh_seed ();
  piq_hash_keys (seed, &a->key0, &a->key1);
  if (seed_used != NULL)
    *seed_used = seed;
  return TRUE;
}

/* ---------------------------------------------------------------------------
 * Element-wise jobs: one PiqRangeFunc for the three kernel kinds. */

typedef struct {
  PiqQuantizeFn    quantize;     /* also requantize: same signature */
  PiqDequantizeFn  dequantize;
  const guint8    *src;
  guint8          *dst;
  guint            src_bits;
  guint            dst_bits;
  PiqKernelArgs    args;
} ElementJob;

static void
element_range (void     *data,
               uint64_t  start,
               uint64_t  n)
{
  const ElementJob *job = data;
  const guint8 *src = job->src + start * job->src_bits / 8;
  guint8 *dst = job->dst + start * job->dst_bits / 8;

  if (job->dequantize != NULL)
    job->dequantize (src, dst, n, &job->args);
  else
    job->quantize (src, dst, start, n, &job->args);
}

static void
run_elements (PiqQuantizer *self,
              ElementJob   *job,
              guint64       n)
{
  piq_parallel_run (self->n_threads, n, PIQ_GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, element_range, job);
}

/* ---------------------------------------------------------------------------
 * Reductions: per-block results in index order, so the combination does not
 * depend on the thread count. */

typedef struct {
  PiqMinMaxFn   minmax;
  PiqSumsFn     sums;
  const guint8 *src;
  guint         src_bits;
  PiqMinMax    *mm;
  PiqSums      *s;
} ReduceJob;

static void
reduce_range (void     *data,
              uint64_t  start,
              uint64_t  n)
{
  const ReduceJob *job = data;

  for (guint64 off = 0; off < n; off += PIQ_REDUCE_BLOCK)
    {
      const guint8 *src = job->src + (start + off) * job->src_bits / 8;
      gsize len = MIN (n - off, PIQ_REDUCE_BLOCK);
      guint64 b = (start + off) / PIQ_REDUCE_BLOCK;

      if (job->minmax != NULL)
        job->minmax (src, len, &job->mm[b]);
      else
        job->sums (src, len, &job->s[b]);
    }
}

/* Round an intermediate result to the compute precision (binary32 unless the data
 * is f64); double arithmetic on binary32 operands rounded back to binary32 is
 * exactly binary32 arithmetic. */
#define ROUND_TO(f32, x) ((f32) ? (double) (float) (x) : (x))

static gboolean
params_from_minmax (PiqParams      *params,
                    const PiqDtypeInfo *info,
                    gboolean        f32,
                    double          lo,
                    double          hi,
                    GError        **error)
{
  const double eps = 0x1p-23;   /* torch.finfo(torch.float32).eps */
  double range = ROUND_TO (f32, (double) ((__int128) info->max - info->min));
  double scale;
  __int128 zp;

  if (piq_params_get_scale_rule (params) == PIQ_SCALE_RULE_ABS_MAX)
    {
      double a = MAX (fabs (lo), fabs (hi));
      scale = MAX (ROUND_TO (f32, a / ROUND_TO (f32, range / 2)), eps);
      /* uint64's middle, 2^63, does not fit a gint64 zero point. */
      zp = info->is_signed ? 0 : MIN (((__int128) info->max + 1) / 2, (__int128) G_MAXINT64);
    }
  else
    {
      /* Widen to include 0 as torch's observers do; a constant tensor always
       * widens, so that its value stays exactly representable. */
      if (piq_params_get_include_zero (params) || lo == hi)
        {
          lo = MIN (lo, 0.0);
          hi = MAX (hi, 0.0);
        }
      scale = MAX (ROUND_TO (f32, ROUND_TO (f32, hi - lo) / range), eps);
      zp = info->min - (__int128) nearbyint (ROUND_TO (f32, lo / scale));
      zp = CLAMP (zp, (__int128) info->min, (__int128) MIN (info->max, (guint64) G_MAXINT64));
    }
  if (!isfinite (scale))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE,
                   "the data's range [%g, %g] gives no finite %s scale", lo, hi,
                   f32 ? "binary32" : "binary64");
      return FALSE;
    }
  piq_params_set_scale (params, scale);
  piq_params_set_zero_point (params, (gint64) zp);
  return TRUE;
}

static void
params_from_sums (PiqParams          *params,
                  const PiqDtypeInfo *info,
                  double              sum,
                  double              sum_sq,
                  guint64             n)
{
  double mean = sum / (double) n;
  double var = n > 1 ? (sum_sq - sum * sum / (double) n) / (double) (n - 1) : 0.0;
  double sigma = sqrt (MAX (var, 0.0));
  double type_max = ldexp (1.0, (int) info->bits - (info->is_signed ? 1 : 0)) - 1.0;
  double c = info->bits == 2 ? 1.4 : info->bits == 4 ? 2.7 : 12.0;
  double scale = c * sigma / type_max;
  __int128 centre, zp;

  if (scale == 0.0)
    scale = 1.0;
  centre = info->is_signed ? 0 : ((__int128) info->max + 1) >> 1;
  zp = centre - (__int128) round (mean / scale);
  zp = CLAMP (zp, (__int128) info->min, (__int128) MIN (info->max, (guint64) G_MAXINT64));
  piq_params_set_scale (params, scale);
  piq_params_set_zero_point (params, (gint64) zp);
}

/**
 * piq_quantizer_compute_params_raw:
 * @self: a quantizer
 * @params: the parameters to fill; their dtype, scale rule and include-zero
 *   flag are read
 * @src_dtype: the float dtype of @src
 * @src: the data
 * @n_elements: the number of elements at @src
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.compute_params].
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_compute_params_raw (PiqQuantizer  *self,
                                  PiqParams     *params,
                                  PiqDtype       src_dtype,
                                  gconstpointer  src,
                                  gsize          n_elements,
                                  GError       **error)
{
  const PiqDtypeInfo *info, *src_info;
  ReduceJob job = { 0 };
  g_autofree PiqMinMax *mm = NULL;
  g_autofree PiqSums *s = NULL;
  guint64 n_blocks;
  gboolean mean_std;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_PARAMS (params), FALSE);
  g_return_val_if_fail (src != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  info = piq_dtype_info (piq_params_get_dtype (params));
  if (info == NULL || info->is_float)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "cannot compute parameters for %s: the quantized dtype must be an integer type",
                   piq_dtype_describe (piq_params_get_dtype (params)));
      return FALSE;
    }
  if (!check_float_dtype (src_dtype, "source", error) ||
      !piq_dtype_get_size_for_n (src_dtype, n_elements, NULL, error))
    return FALSE;
  if (n_elements == 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY, "cannot derive parameters from 0 elements");
      return FALSE;
    }

  src_info = piq_dtype_info (src_dtype);
  mean_std = piq_params_get_scale_rule (params) == PIQ_SCALE_RULE_MEAN_STD;
  n_blocks = (n_elements + PIQ_REDUCE_BLOCK - 1) / PIQ_REDUCE_BLOCK;
  job.src = src;
  job.src_bits = src_info->bits;
  if (mean_std)
    {
      job.sums = self->kernels->sums[src_info->kernel_index];
      job.s = s = g_try_new (PiqSums, n_blocks);
    }
  else
    {
      job.minmax = self->kernels->minmax[src_info->kernel_index];
      job.mm = mm = g_try_new (PiqMinMax, n_blocks);
    }
  if (mm == NULL && s == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GUINT64_FORMAT
                   " reduction blocks", n_blocks);
      return FALSE;
    }
  piq_parallel_run (self->n_threads, n_elements, PIQ_GRAIN, PIQ_PARALLEL_MIN_ELEMENTS,
                    reduce_range, &job);

  if (mean_std)
    {
      double sum = 0.0, sum_sq = 0.0;
      for (guint64 b = 0; b < n_blocks; b++)
        {
          sum += s[b].sum;
          sum_sq += s[b].sum_sq;
        }
      if (!isfinite (sum) || !isfinite (sum_sq))
        goto non_finite;
      params_from_sums (params, info, sum, sum_sq, n_elements);
      return TRUE;
    }
  else
    {
      double lo = INFINITY, hi = -INFINITY;
      for (guint64 b = 0; b < n_blocks; b++)
        {
          if (mm[b].non_finite)
            goto non_finite;
          lo = MIN (lo, mm[b].min);
          hi = MAX (hi, mm[b].max);
        }
      /* binary32 for every source, f64 too, as torch's observers keep min/max */
      return params_from_minmax (params, info, TRUE, (float) lo, (float) hi, error);
    }

non_finite:
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE,
               "the data contains NaN or infinity; parameters need finite data");
  return FALSE;
}

/**
 * piq_quantizer_compute_params:
 * @self: a quantizer
 * @params: the parameters to fill; their dtype, scale rule and include-zero
 *   flag are read, their scale and zero point written
 * @src: a float tensor
 * @error: return location for a #GError
 *
 * Derives a per-tensor scale and zero point from the data with the rule of
 * [property@Piq.Params:scale-rule]. The data must be finite
 * (%PIQ_ERROR_NON_FINITE otherwise) and non-empty (%PIQ_ERROR_EMPTY); on error
 * @params is left unchanged. The result does not depend on the thread count.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_compute_params (PiqQuantizer  *self,
                              PiqParams     *params,
                              PiqTensor     *src,
                              GError       **error)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);

  if (piq_tensor_get_n_elements (src) > G_MAXSIZE)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW, "tensor too large");
      return FALSE;
    }
  return piq_quantizer_compute_params_raw (self, params, piq_tensor_get_dtype (src),
                                           piq_tensor_get_data (src, NULL),
                                           piq_tensor_get_n_elements (src), error);
}

/* quantize_raw with the seed it used reported back. */
static gboolean
quantize_impl (PiqQuantizer  *self,
               PiqParams     *params,
               PiqDtype       src_dtype,
               gconstpointer  src,
               gsize          n,
               gpointer       dst,
               gsize          dst_size,
               guint64       *seed_used,
               GError       **error)
{
  const PiqDtypeInfo *si, *di;
  ElementJob job = { 0 };

  if (!check_float_dtype (src_dtype, "source", error) ||
      !prepare_args (params, src_dtype, &job.args, seed_used, error) ||
      !piq_dtype_get_size_for_n (src_dtype, n, NULL, error) ||
      !check_size (piq_params_get_dtype (params), n, dst_size, "the destination", error))
    return FALSE;

  si = piq_dtype_info (src_dtype);
  di = piq_dtype_info (piq_params_get_dtype (params));
  job.quantize = self->kernels->quantize[si->kernel_index][di->kernel_index]
                                       [piq_params_get_round_mode (params)];
  job.args.stream = (guint64) n * (si->bits + di->bits) / 8 >= PIQ_STREAM_MIN_BYTES;
  job.src = src;
  job.dst = dst;
  job.src_bits = si->bits;
  job.dst_bits = di->bits;
  run_elements (self, &job, n);
  return TRUE;
}

/**
 * piq_quantizer_quantize_raw:
 * @self: a quantizer
 * @params: the parameters
 * @src_dtype: the float dtype of @src
 * @src: the data
 * @n_elements: the number of elements at @src
 * @dst: where the packed [property@Piq.Params:dtype] elements go; must not
 *   overlap @src
 * @dst_size: the bytes available at @dst
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.quantize]; when the seed is
 * unset the seed drawn is not reported.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_quantize_raw (PiqQuantizer  *self,
                            PiqParams     *params,
                            PiqDtype       src_dtype,
                            gconstpointer  src,
                            gsize          n_elements,
                            gpointer       dst,
                            gsize          dst_size,
                            GError       **error)
{
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_PARAMS (params), FALSE);
  g_return_val_if_fail (src != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return quantize_impl (self, params, src_dtype, src, n_elements, dst, dst_size, NULL, error);
}

static gboolean
check_pair (PiqTensor   *src,
            PiqTensor   *dst,
            GError     **error)
{
  if (piq_tensor_get_n_elements (src) != piq_tensor_get_n_elements (dst))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "the source has %" G_GUINT64_FORMAT " elements, the destination %" G_GUINT64_FORMAT,
                   piq_tensor_get_n_elements (src), piq_tensor_get_n_elements (dst));
      return FALSE;
    }
  if (!piq_tensor_is_writable (dst))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_READ_ONLY, "the destination tensor is read-only");
      return FALSE;
    }
  return TRUE;
}

/**
 * piq_quantizer_quantize:
 * @self: a quantizer
 * @params: the parameters
 * @src: a float tensor
 * @dst: a writable tensor of [property@Piq.Params:dtype] with as many elements
 *   as @src
 * @error: return location for a #GError
 *
 * Quantizes `q = clamp(round(x / scale) + zero_point, qmin, qmax)` with the
 * rounding mode of @params (see [Numerics](numerics.html) for the exact
 * arithmetic, NaN and ±Inf). On success @dst carries a copy of @params, with the seed that was
 * used when stochastic rounding drew one.
 *
 * Returns: %TRUE on success; on failure @dst is unchanged
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_quantize (PiqQuantizer  *self,
                        PiqParams     *params,
                        PiqTensor     *src,
                        PiqTensor     *dst,
                        GError       **error)
{
  g_autoptr(PiqParams) used = NULL;
  guint64 seed = 0;
  gsize dst_size;
  gpointer dst_data;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_PARAMS (params), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (dst), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_pair (src, dst, error))
    return FALSE;
  if (piq_tensor_get_dtype (dst) != piq_params_get_dtype (params))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "the destination tensor is %s but the parameters quantize to %s",
                   piq_dtype_describe (piq_tensor_get_dtype (dst)),
                   piq_dtype_describe (piq_params_get_dtype (params)));
      return FALSE;
    }
  dst_data = piq_tensor_get_writable_data (dst, &dst_size);
  if (!quantize_impl (self, params, piq_tensor_get_dtype (src), piq_tensor_get_data (src, NULL),
                      piq_tensor_get_n_elements (src), dst_data, dst_size, &seed, error))
    return FALSE;

  used = piq_params_copy (params);
  if (piq_params_get_round_mode (params) == PIQ_ROUND_STOCHASTIC)
    piq_params_set_seed (used, seed);
  piq_tensor_set_params (dst, used);
  return TRUE;
}

/**
 * piq_quantizer_quantize_new:
 * @self: a quantizer
 * @params: the parameters
 * @src: a float tensor
 * @error: return location for a #GError
 *
 * Quantizes into a new tensor; see [method@Piq.Quantizer.quantize].
 *
 * Returns: (transfer full) (nullable): the quantized tensor, or %NULL on error
 *
 * Since: 1.0
 */
PiqTensor *
piq_quantizer_quantize_new (PiqQuantizer  *self,
                            PiqParams     *params,
                            PiqTensor     *src,
                            GError       **error)
{
  g_autoptr(PiqTensor) dst = NULL;

  g_return_val_if_fail (PIQ_IS_PARAMS (params), NULL);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), NULL);

  if (!piq_params_validate (params, error))
    return NULL;
  dst = piq_tensor_new (piq_params_get_dtype (params), piq_tensor_get_n_elements (src), error);
  if (dst == NULL || !piq_quantizer_quantize (self, params, src, dst, error))
    return NULL;
  return g_steal_pointer (&dst);
}

/**
 * piq_quantizer_dequantize_raw:
 * @self: a quantizer
 * @params: the parameters the data was quantized with
 * @src: packed [property@Piq.Params:dtype] elements
 * @src_size: the bytes at @src
 * @n_elements: the number of elements
 * @dst_dtype: the float dtype of @dst
 * @dst: the destination; must not overlap @src
 * @dst_size: the bytes available at @dst
 * @op: overwrite or add into @dst
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.dequantize].
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_dequantize_raw (PiqQuantizer  *self,
                              PiqParams     *params,
                              gconstpointer  src,
                              gsize          src_size,
                              gsize          n_elements,
                              PiqDtype       dst_dtype,
                              gpointer       dst,
                              gsize          dst_size,
                              PiqReduceOp    op,
                              GError       **error)
{
  const PiqDtypeInfo *si, *di;
  ElementJob job = { 0 };

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_PARAMS (params), FALSE);
  g_return_val_if_fail (src != NULL || src_size == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_float_dtype (dst_dtype, "destination", error) ||
      !prepare_args (params, dst_dtype, &job.args, NULL, error) ||
      !check_size (piq_params_get_dtype (params), n_elements, src_size, "the source", error) ||
      !check_size (dst_dtype, n_elements, dst_size, "the destination", error))
    return FALSE;

  si = piq_dtype_info (piq_params_get_dtype (params));
  di = piq_dtype_info (dst_dtype);
  job.dequantize = self->kernels->dequantize[si->kernel_index][di->kernel_index][op];
  job.args.stream = op == PIQ_REDUCE_SET &&
                    (guint64) n_elements * (si->bits + di->bits) / 8 >= PIQ_STREAM_MIN_BYTES;
  job.src = src;
  job.dst = dst;
  job.src_bits = si->bits;
  job.dst_bits = di->bits;
  run_elements (self, &job, n_elements);
  return TRUE;
}

/**
 * piq_quantizer_dequantize:
 * @self: a quantizer
 * @src: a quantized tensor carrying its [property@Piq.Tensor:params]
 * @dst: a writable float tensor with as many elements as @src
 * @op: %PIQ_REDUCE_SET to overwrite @dst, %PIQ_REDUCE_ADD to add into it
 * @error: return location for a #GError
 *
 * Dequantizes `y = (q − zero_point) · scale` into @dst, or adds it to @dst.
 *
 * Returns: %TRUE on success; on failure @dst is unchanged
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_dequantize (PiqQuantizer  *self,
                          PiqTensor     *src,
                          PiqTensor     *dst,
                          PiqReduceOp    op,
                          GError       **error)
{
  PiqParams *params;
  gsize src_size, dst_size;
  gconstpointer src_data;
  gpointer dst_data;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (dst), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!piq_dtype_is_quantized (piq_tensor_get_dtype (src)))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "cannot dequantize a %s tensor: the source must be quantized",
                   piq_dtype_describe (piq_tensor_get_dtype (src)));
      return FALSE;
    }
  params = piq_tensor_get_params (src);
  if (params == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_PARAMS,
                   "the %s tensor carries no parameters; set them with piq_tensor_set_params()",
                   piq_dtype_describe (piq_tensor_get_dtype (src)));
      return FALSE;
    }
  if (piq_params_get_dtype (params) != piq_tensor_get_dtype (src))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "the tensor is %s but its parameters describe %s",
                   piq_dtype_describe (piq_tensor_get_dtype (src)),
                   piq_dtype_describe (piq_params_get_dtype (params)));
      return FALSE;
    }
  if (!check_pair (src, dst, error))
    return FALSE;
  src_data = piq_tensor_get_data (src, &src_size);
  dst_data = piq_tensor_get_writable_data (dst, &dst_size);
  return piq_quantizer_dequantize_raw (self, params, src_data, src_size,
                                       piq_tensor_get_n_elements (src), piq_tensor_get_dtype (dst),
                                       dst_data, dst_size, op, error);
}

/**
 * piq_quantizer_dequantize_new:
 * @self: a quantizer
 * @src: a quantized tensor carrying its parameters
 * @dtype: the float dtype of the result
 * @error: return location for a #GError
 *
 * Dequantizes into a new tensor; see [method@Piq.Quantizer.dequantize].
 *
 * Returns: (transfer full) (nullable): the float tensor, or %NULL on error
 *
 * Since: 1.0
 */
PiqTensor *
piq_quantizer_dequantize_new (PiqQuantizer  *self,
                              PiqTensor     *src,
                              PiqDtype       dtype,
                              GError       **error)
{
  g_autoptr(PiqTensor) dst = NULL;

  g_return_val_if_fail (PIQ_IS_TENSOR (src), NULL);

  if (!check_float_dtype (dtype, "destination", error))
    return NULL;
  dst = piq_tensor_new (dtype, piq_tensor_get_n_elements (src), error);
  if (dst == NULL || !piq_quantizer_dequantize (self, src, dst, PIQ_REDUCE_SET, error))
    return NULL;
  return g_steal_pointer (&dst);
}

/**
 * piq_quantizer_requantize_raw:
 * @self: a quantizer
 * @params: the parameters
 * @dtype: the float dtype of @src and @dst
 * @src: the data
 * @n_elements: the number of elements
 * @dst: the destination; may be @src itself (element-wise in place)
 * @dst_size: the bytes available at @dst
 * @op: overwrite or add into @dst
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.requantize].
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_requantize_raw (PiqQuantizer  *self,
                              PiqParams     *params,
                              PiqDtype       dtype,
                              gconstpointer  src,
                              gsize          n_elements,
                              gpointer       dst,
                              gsize          dst_size,
                              PiqReduceOp    op,
                              GError       **error)
{
  const PiqDtypeInfo *fi;
  ElementJob job = { 0 };

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_PARAMS (params), FALSE);
  g_return_val_if_fail (src != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_float_dtype (dtype, "source", error) ||
      !prepare_args (params, dtype, &job.args, NULL, error) ||
      !check_size (dtype, n_elements, dst_size, "the destination", error))
    return FALSE;

  fi = piq_dtype_info (dtype);
  job.quantize = self->kernels->requantize[fi->kernel_index][piq_params_get_round_mode (params)][op];
  job.args.stream = op == PIQ_REDUCE_SET && (guint64) n_elements * fi->bits / 4 >= PIQ_STREAM_MIN_BYTES;
  job.src = src;
  job.dst = dst;
  job.src_bits = fi->bits;
  job.dst_bits = fi->bits;
  run_elements (self, &job, n_elements);
  return TRUE;
}

/**
 * piq_quantizer_requantize:
 * @self: a quantizer
 * @params: the parameters
 * @src: a float tensor
 * @dst: a writable tensor of the same dtype and length (may be @src)
 * @op: %PIQ_REDUCE_SET to overwrite @dst, %PIQ_REDUCE_ADD to add into it
 * @error: return location for a #GError
 *
 * Fused quantize → dequantize: each value goes through the quantized grid
 * without the packed buffer being written, as quantization-aware training and
 * error measurement need. Same arithmetic as a quantize followed by a
 * dequantize into the source dtype.
 *
 * Returns: %TRUE on success; on failure @dst is unchanged
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_requantize (PiqQuantizer  *self,
                          PiqParams     *params,
                          PiqTensor     *src,
                          PiqTensor     *dst,
                          PiqReduceOp    op,
                          GError       **error)
{
  gsize dst_size;
  gpointer dst_data;

  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (dst), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_pair (src, dst, error))
    return FALSE;
  if (piq_tensor_get_dtype (src) != piq_tensor_get_dtype (dst))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "requantize writes the source dtype %s, the destination is %s",
                   piq_dtype_describe (piq_tensor_get_dtype (src)),
                   piq_dtype_describe (piq_tensor_get_dtype (dst)));
      return FALSE;
    }
  dst_data = piq_tensor_get_writable_data (dst, &dst_size);
  return piq_quantizer_requantize_raw (self, params, piq_tensor_get_dtype (src),
                                       piq_tensor_get_data (src, NULL),
                                       piq_tensor_get_n_elements (src), dst_data, dst_size, op, error);
}

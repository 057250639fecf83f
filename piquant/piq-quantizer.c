/* piq-quantizer.c: the engine
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piq-quantizer.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"
#include "piq-parallel-private.h"
#include "piq-params-private.h"
#include "piq-tensor.h"
#include "simd/piq-formats-private.h"
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
 * Code formats and per-channel / per-block scales: the block driver
 * (simd/piq-formats.c) over whole parallel units. */

/* Whether @params go through the block driver. */
static gboolean
uses_blocks (PiqParams *params)
{
  const PiqDtypeInfo *info = piq_dtype_info (piq_params_get_dtype (params));

  return info != NULL && (info->kind == PIQ_KIND_CODE ||
                          piq_params_get_granularity (params) != PIQ_GRANULARITY_TENSOR);
}

typedef struct {
  PiqBlockArgs a;
  guint64      n;                  /* elements */
  guint64      n_blocks;           /* scales (0: none, the ggml types and per tensor) */
  gsize        scales_size;
  gsize        zero_points_size;   /* 0 unless affine integers */
  gboolean     double_quant;       /* scales_size is the compressed form of n_blocks f32 */
  guint64      unit;               /* elements per parallel unit: whole blocks and bytes */
} BlockLayout;

static guint64
gcd64 (guint64 a, guint64 b)
{
  while (b != 0)
    {
      guint64 t = a % b;
      a = b;
      b = t;
    }
  return a;
}

/* Validate @params for @n elements computed in binary32 and lay out the blocks;
 * *seed_used is the stochastic seed (drawn when unset). */
static gboolean
block_layout (PiqParams    *params,
              guint64       n,
              BlockLayout  *l,
              guint64      *seed_used,
              GError      **error)
{
  const PiqDtypeInfo *info;
  PiqScaleRule rule = piq_params_get_scale_rule (params);
  PiqGranularity gran = piq_params_get_granularity (params);
  guint64 seed = piq_params_get_seed (params);
  PiqBlockArgs *a = &l->a;

  memset (l, 0, sizeof *l);
  if (!piq_params_validate (params, error))
    return FALSE;
  info = piq_dtype_info (piq_params_get_dtype (params));
  l->n = n;
  a->code = info->kind == PIQ_KIND_CODE ? info->kernel_index : -1;
  a->int_index = info->kind == PIQ_KIND_INT ? info->kernel_index : 0;
  a->bits = (int) info->bits;
  a->qmin = info->min;
  a->qmax = (gint64) MIN (info->max, (guint64) G_MAXINT64);
  a->rule = rule == PIQ_SCALE_RULE_MIN_MAX && info->kind == PIQ_KIND_INT ? PIQ_BRULE_MIN_MAX
                                                                         : PIQ_BRULE_ABS_MAX;
  a->include_zero = piq_params_get_include_zero (params);
  a->e8m0_rule = rule >= PIQ_SCALE_RULE_POW2_FLOOR ? (PiqE8m0Rule) (rule - PIQ_SCALE_RULE_POW2_FLOOR)
                                                   : PIQ_E8M0_FLOOR;
  a->saturate = piq_params_get_saturate (params);
  a->high_first = piq_params_get_high_nibble_first (params);
  if (a->high_first && info->bits != 4)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "high-nibble-first applies to 4-bit codes, not to %s", info->name);
      return FALSE;
    }
  a->stochastic = piq_params_get_round_mode (params) == PIQ_ROUND_STOCHASTIC;
  if (a->stochastic && seed == 0)
    seed = fresh_seed ();
  piq_hash_keys (seed, &a->key0, &a->key1);
  if (seed_used != NULL)
    *seed_used = seed;

  if (info->bits == 0)                 /* ggml: scales inside the blocks */
    {
      a->block = info->block_elems;
      l->unit = info->block_elems;
      return TRUE;
    }
  if (gran == PIQ_GRANULARITY_TENSOR)
    {
      double scale = piq_params_get_scale (params);
      a->fixed = TRUE;
      a->scale = (float) scale;
      a->zero_point = piq_params_get_zero_point (params);
      if (!(a->scale > 0.0f && isfinite (a->scale) && isfinite (1.0f / a->scale)))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE,
                       "scale %g (or its inverse) is out of the range of binary32, the compute "
                       "precision of %s", scale, info->name);
          return FALSE;
        }
      a->block = 64;
      l->unit = 64;
      return TRUE;
    }

  a->block = piq_params_effective_block_size (params);
  if (gran == PIQ_GRANULARITY_CHANNEL && n % a->block != 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "%" G_GUINT64_FORMAT " elements are not whole rows of %" G_GSIZE_FORMAT,
                   n, a->block);
      return FALSE;
    }
  a->scale_kind = piq_params_get_scale_dtype (params) == PIQ_DTYPE_F16 ? PIQ_SCALE_F16
                : piq_params_get_scale_dtype (params) == PIQ_DTYPE_E8M0 ? PIQ_SCALE_E8M0
                : PIQ_SCALE_F32;
  l->n_blocks = n / a->block + (n % a->block != 0);
  l->scales_size = (gsize) l->n_blocks * piq_block_scale_size (a->scale_kind);
  l->double_quant = piq_params_get_double_quant (params);
  if (l->double_quant)
    l->scales_size = piq_dq_size (l->n_blocks);
  if (a->code < 0 && a->rule == PIQ_BRULE_MIN_MAX && a->scale_kind != PIQ_SCALE_E8M0)
    l->zero_points_size = (gsize) l->n_blocks * sizeof (gint32);
  /* a unit holds whole blocks and starts on a byte: lcm (block, 8 / gcd (bits, 8)) */
  l->unit = a->block / gcd64 (a->block, 8 / gcd64 ((guint64) a->bits, 8)) *
            (8 / gcd64 ((guint64) a->bits, 8));
  return TRUE;
}

/* The f32 scales a double-quantized call decodes into or encodes from. */
static float *
alloc_f32_scales (const BlockLayout  *l,
                  GError            **error)
{
  float *scales = g_try_new (float, MAX (l->n_blocks, 1));

  if (scales == NULL)
    g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GUINT64_FORMAT
                 " block scales", l->n_blocks);
  return scales;
}

static gboolean
check_block_buffer (gsize        need,
                    gsize        have,
                    const char  *what,
                    GError     **error)
{
  if (have >= need)
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
               "the %s hold %" G_GSIZE_FORMAT " bytes, %" G_GSIZE_FORMAT " are needed",
               what, have, need);
  return FALSE;
}

typedef enum { BLOCK_QUANTIZE, BLOCK_DEQUANTIZE, BLOCK_REQUANTIZE } BlockOp;

typedef struct {
  const BlockLayout *l;
  PiqBlockArgs   a;            /* l->a, and whether this call's SET output is streamed */
  BlockOp        op;
  int            ft;           /* PIQ_F_* of the float side */
  gsize          esize;        /* its bytes per element */
  const guint8  *src;          /* floats (quantize, requantize) */
  guint8        *dst;          /* floats (dequantize, requantize) */
  const guint8  *codes_in;
  guint8        *codes;
  guint8        *scales;
  const guint8  *scales_in;
  gint32        *zero_points;
  const gint32  *zero_points_in;
  int            add;
  PiqBlockQuantizeFn   quantize_f32;     /* the kernel table's, for f32 data */
  PiqBlockDequantizeFn dequantize_f32;
} BlockJob;

static void
block_range (void     *data,
             uint64_t  start,
             uint64_t  n_units)
{
  const BlockJob *job = data;
  const BlockLayout *l = job->l;
  guint64 first = start * l->unit;
  gsize n = (gsize) MIN (n_units * l->unit, l->n - first);

  switch (job->op)
    {
    case BLOCK_QUANTIZE:
      if (job->ft == PIQ_F_F32)
        job->quantize_f32 (&job->a, job->src + first * job->esize, first, n, job->codes,
                           job->scales, job->zero_points);
      else
        piq_block_quantize (&job->a, job->ft, job->src + first * job->esize, first, n,
                            job->codes, job->scales, job->zero_points);
      break;
    case BLOCK_DEQUANTIZE:
      if (job->ft == PIQ_F_F32)
        job->dequantize_f32 (&job->a, job->codes_in, job->scales_in, job->zero_points_in, first,
                             n, job->dst + first * job->esize, job->add);
      else
        piq_block_dequantize (&job->a, job->codes_in, job->scales_in, job->zero_points_in, first,
                              n, job->ft, job->dst + first * job->esize, job->add);
      break;
    default:
      piq_block_requantize (&job->a, job->ft, job->src + first * job->esize, first, n,
                            job->dst + first * job->esize, job->add);
    }
}

static void
run_blocks (PiqQuantizer *self,
            BlockJob     *job,
            PiqDtype      float_dtype)
{
  const BlockLayout *l = job->l;
  guint64 units = l->n / l->unit + (l->n % l->unit != 0);

  job->ft = piq_dtype_info (float_dtype)->kernel_index;
  job->esize = piq_dtype_info (float_dtype)->bits / 8;
  /* large SET outputs bypass the caches, as in the per-tensor kernels (same bytes) */
  job->a = l->a;
  job->a.stream = job->op != BLOCK_REQUANTIZE && !job->add &&
                  l->n * (job->esize * 8 + (guint64) l->a.bits) / 8 >= PIQ_STREAM_MIN_BYTES;
  job->quantize_f32 = self->kernels->block_quantize;
  job->dequantize_f32 = self->kernels->block_dequantize;
  /* the formats cost more per element than the integer kernels: the same crossover
   * in elements is conservative */
  piq_parallel_run (self->n_threads, units, MAX (1, PIQ_GRAIN / l->unit),
                    MAX (1, PIQ_PARALLEL_MIN_ELEMENTS / l->unit), block_range, job);
}

/**
 * piq_params_get_scales_size:
 * @self: parameters
 * @n_elements: the number of elements to quantize
 * @scales_size: (out) (optional): the bytes of per-channel or per-block scales
 * @zero_points_size: (out) (optional): the bytes of their int32 zero points (0
 *   unless affine integers)
 * @error: return location for a #GError
 *
 * What [method@Piq.Quantizer.quantize_blocks_raw] writes beside the codes. Both
 * sizes are 0 for per-tensor parameters and for the ggml types, whose scales
 * are inside their blocks.
 *
 * Returns: %TRUE if the parameters are usable for @n_elements
 *
 * Since: 1.0
 */
gboolean
piq_params_get_scales_size (PiqParams  *self,
                            guint64     n_elements,
                            gsize      *scales_size,
                            gsize      *zero_points_size,
                            GError    **error)
{
  BlockLayout l;

  g_return_val_if_fail (PIQ_IS_PARAMS (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!block_layout (self, n_elements, &l, NULL, error))
    return FALSE;
  if (scales_size != NULL)
    *scales_size = l.scales_size;
  if (zero_points_size != NULL)
    *zero_points_size = l.zero_points_size;
  return TRUE;
}

static gboolean
quantize_blocks_impl (PiqQuantizer  *self,
                      PiqParams     *params,
                      PiqDtype       src_dtype,
                      gconstpointer  src,
                      gsize          n,
                      gpointer       dst,
                      gsize          dst_size,
                      gpointer       scales,
                      gsize          scales_size,
                      gpointer       zero_points,
                      gsize          zero_points_size,
                      guint64       *seed_used,
                      GError       **error)
{
  BlockLayout l;
  BlockJob job = { .l = &l, .op = BLOCK_QUANTIZE };

  if (!check_float_dtype (src_dtype, "source", error) ||
      !piq_dtype_get_size_for_n (src_dtype, n, NULL, error) ||
      !block_layout (params, n, &l, seed_used, error) ||
      !check_size (piq_params_get_dtype (params), n, dst_size, "the destination", error))
    return FALSE;
  if ((l.scales_size && scales == NULL) || (l.zero_points_size && zero_points == NULL))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "per-channel and per-block parameters write scales beside the codes: use "
                   "piq_quantizer_quantize_blocks_raw() or the tensor form");
      return FALSE;
    }
  if (!check_block_buffer (l.scales_size, scales_size, "scales", error) ||
      !check_block_buffer (l.zero_points_size, zero_points_size, "zero points", error))
    return FALSE;
  job.src = src;
  job.codes = dst;
  job.scales = scales;
  job.zero_points = zero_points;
  if (l.double_quant)
    {
      /* the codes take the exact scales; the compressed ones are stored */
      g_autofree float *exact = alloc_f32_scales (&l, error);
      if (exact == NULL)
        return FALSE;
      job.scales = (guint8 *) exact;
      run_blocks (self, &job, src_dtype);
      piq_dq_compress (exact, l.n_blocks, scales);
      return TRUE;
    }
  run_blocks (self, &job, src_dtype);
  return TRUE;
}

/**
 * piq_quantizer_quantize_blocks_raw:
 * @self: a quantizer
 * @params: the parameters
 * @src_dtype: the float dtype of @src
 * @src: the data
 * @n_elements: the number of elements at @src
 * @dst: where the codes go; must not overlap @src
 * @dst_size: the bytes available at @dst
 * @scales: (nullable): where the per-channel or per-block scales go
 * @scales_size: the bytes available at @scales (see
 *   [method@Piq.Params.get_scales_size])
 * @zero_points: (nullable): where their int32 zero points go (affine integers)
 * @zero_points_size: the bytes available at @zero_points
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.quantize] for every
 * granularity and format; the scales are written beside the codes.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_quantize_blocks_raw (PiqQuantizer  *self,
                                   PiqParams     *params,
                                   PiqDtype       src_dtype,
                                   gconstpointer  src,
                                   gsize          n_elements,
                                   gpointer       dst,
                                   gsize          dst_size,
                                   gpointer       scales,
                                   gsize          scales_size,
                                   gpointer       zero_points,
                                   gsize          zero_points_size,
                                   GError       **error)
{
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_PARAMS (params), FALSE);
  g_return_val_if_fail (src != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return quantize_blocks_impl (self, params, src_dtype, src, n_elements, dst, dst_size,
                               scales, scales_size, zero_points, zero_points_size, NULL, error);
}

static gboolean
dequantize_blocks_impl (PiqQuantizer  *self,
                        PiqParams     *params,
                        gconstpointer  src,
                        gsize          src_size,
                        gsize          n,
                        gconstpointer  scales,
                        gsize          scales_size,
                        gconstpointer  zero_points,
                        gsize          zero_points_size,
                        PiqDtype       dst_dtype,
                        gpointer       dst,
                        gsize          dst_size,
                        PiqReduceOp    op,
                        GError       **error)
{
  BlockLayout l;
  BlockJob job = { .l = &l, .op = BLOCK_DEQUANTIZE };

  if (!check_float_dtype (dst_dtype, "destination", error) ||
      !block_layout (params, n, &l, NULL, error) ||
      !check_size (piq_params_get_dtype (params), n, src_size, "the source", error) ||
      !check_size (dst_dtype, n, dst_size, "the destination", error) ||
      !check_block_buffer (l.scales_size, scales_size, "scales", error) ||
      !check_block_buffer (l.zero_points_size, zero_points_size, "zero points", error))
    return FALSE;
  job.codes_in = src;
  job.scales_in = scales;
  job.zero_points_in = zero_points;
  job.dst = dst;
  job.add = op == PIQ_REDUCE_ADD;
  if (l.double_quant)
    {
      g_autofree float *expanded = alloc_f32_scales (&l, error);
      if (expanded == NULL)
        return FALSE;
      piq_dq_expand (scales, l.n_blocks, expanded);
      job.scales_in = (const guint8 *) expanded;
      run_blocks (self, &job, dst_dtype);
      return TRUE;
    }
  run_blocks (self, &job, dst_dtype);
  return TRUE;
}

/**
 * piq_quantizer_dequantize_blocks_raw:
 * @self: a quantizer
 * @params: the parameters the data was quantized with
 * @src: the codes
 * @src_size: the bytes at @src
 * @n_elements: the number of elements
 * @scales: (nullable): the per-channel or per-block scales
 * @scales_size: the bytes at @scales
 * @zero_points: (nullable): their int32 zero points (affine integers)
 * @zero_points_size: the bytes at @zero_points
 * @dst_dtype: the float dtype of @dst
 * @dst: the destination; must not overlap @src
 * @dst_size: the bytes available at @dst
 * @op: overwrite or add into @dst
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.dequantize] for every
 * granularity and format.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_dequantize_blocks_raw (PiqQuantizer  *self,
                                     PiqParams     *params,
                                     gconstpointer  src,
                                     gsize          src_size,
                                     gsize          n_elements,
                                     gconstpointer  scales,
                                     gsize          scales_size,
                                     gconstpointer  zero_points,
                                     gsize          zero_points_size,
                                     PiqDtype       dst_dtype,
                                     gpointer       dst,
                                     gsize          dst_size,
                                     PiqReduceOp    op,
                                     GError       **error)
{
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_PARAMS (params), FALSE);
  g_return_val_if_fail (src != NULL || src_size == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return dequantize_blocks_impl (self, params, src, src_size, n_elements, scales, scales_size,
                                 zero_points, zero_points_size, dst_dtype, dst, dst_size, op,
                                 error);
}

static gboolean
requantize_blocks (PiqQuantizer  *self,
                   PiqParams     *params,
                   PiqDtype       dtype,
                   gconstpointer  src,
                   gsize          n,
                   gpointer       dst,
                   gsize          dst_size,
                   PiqReduceOp    op,
                   GError       **error)
{
  BlockLayout l;
  BlockJob job = { .l = &l, .op = BLOCK_REQUANTIZE };

  if (!check_float_dtype (dtype, "source", error) ||
      !block_layout (params, n, &l, NULL, error) ||
      !check_size (dtype, n, dst_size, "the destination", error))
    return FALSE;
  if (l.double_quant)
    {
      /* the scales the codes decode with exist only once all blocks are known: go
       * through the codes (n·bits/8 bytes) and the compressed scales */
      gsize codes_size;
      g_autofree guint8 *codes = NULL, *scales = NULL;

      if (!piq_dtype_get_size_for_n (piq_params_get_dtype (params), n, &codes_size, error))
        return FALSE;
      codes = g_try_malloc (MAX (codes_size, 1));
      scales = g_try_malloc (l.scales_size);
      if (codes == NULL || scales == NULL)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GSIZE_FORMAT
                       " bytes of codes", codes_size);
          return FALSE;
        }
      return quantize_blocks_impl (self, params, dtype, src, n, codes, codes_size, scales,
                                   l.scales_size, NULL, 0, NULL, error) &&
             dequantize_blocks_impl (self, params, codes, codes_size, n, scales, l.scales_size,
                                     NULL, 0, dtype, dst, dst_size, op, error);
    }
  job.src = src;
  job.dst = dst;
  job.add = op == PIQ_REDUCE_ADD;
  run_blocks (self, &job, dtype);
  return TRUE;
}

/**
 * piq_quantizer_binary_dot:
 * @self: a quantizer
 * @a: a %PIQ_DTYPE_BINARY tensor with its scales
 * @b: a %PIQ_DTYPE_BINARY tensor of the same length and block size
 * @result: (out): the dot product of the two dequantized vectors
 * @error: return location for a #GError
 *
 * The dot product of two binary vectors by XNOR and popcount: per block,
 * `scale_a · scale_b · (agreeing signs − disagreeing signs)`, summed in
 * binary64. Equal (up to rounding) to the dot product of the dequantized
 * vectors, without dequantizing them.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_binary_dot (PiqQuantizer  *self,
                          PiqTensor     *a,
                          PiqTensor     *b,
                          double        *result,
                          GError       **error)
{
  PiqParams *pa, *pb;
  BlockLayout la, lb;
  g_autoptr(GBytes) sa = NULL, sb = NULL;
  gsize sa_size = 0, sb_size = 0;
  const guint8 *sa_data, *sb_data;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (a), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (b), FALSE);
  g_return_val_if_fail (result != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  pa = piq_tensor_get_params (a);
  pb = piq_tensor_get_params (b);
  if (piq_tensor_get_dtype (a) != PIQ_DTYPE_BINARY || piq_tensor_get_dtype (b) != PIQ_DTYPE_BINARY ||
      pa == NULL || pb == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "the binary dot product takes two quantized binary tensors, not %s and %s",
                   piq_dtype_describe (piq_tensor_get_dtype (a)),
                   piq_dtype_describe (piq_tensor_get_dtype (b)));
      return FALSE;
    }
  if (!block_layout (pa, piq_tensor_get_n_elements (a), &la, NULL, error) ||
      !block_layout (pb, piq_tensor_get_n_elements (b), &lb, NULL, error))
    return FALSE;
  if (la.n != lb.n || la.a.fixed != lb.a.fixed || la.a.block != lb.a.block ||
      la.a.scale_kind != lb.a.scale_kind)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "the vectors differ in length (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                   "), block size or scale storage", la.n, lb.n);
      return FALSE;
    }
  if (la.a.fixed)
    {
      /* one block, the per-tensor scales */
      float fa = la.a.scale, fb = lb.a.scale;
      *result = piq_binary_dot (piq_tensor_get_data (a, NULL), (const guint8 *) &fa,
                                piq_tensor_get_data (b, NULL), (const guint8 *) &fb,
                                la.n, MAX (la.n, 1), PIQ_SCALE_F32);
      return TRUE;
    }
  sa = piq_tensor_get_scales (a);
  sb = piq_tensor_get_scales (b);
  sa_data = sa != NULL ? g_bytes_get_data (sa, &sa_size) : NULL;
  sb_data = sb != NULL ? g_bytes_get_data (sb, &sb_size) : NULL;
  if (!check_block_buffer (la.scales_size, sa_size, "scales of the first vector", error) ||
      !check_block_buffer (lb.scales_size, sb_size, "scales of the second vector", error))
    return FALSE;
  *result = piq_binary_dot (piq_tensor_get_data (a, NULL), sa_data,
                            piq_tensor_get_data (b, NULL), sb_data, la.n, la.a.block,
                            la.a.scale_kind);
  return TRUE;
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

/* The min/max and abs-max rules, in binary32 as torch's observers
 * (simd/piq-formats.c, shared with the per-block scales). */
static gboolean
params_from_minmax (PiqParams          *params,
                    const PiqDtypeInfo *info,
                    double              lo,
                    double              hi,
                    GError            **error)
{
  double scale;
  gint64 zp;

  piq_affine_from_range (lo, hi, info->min, info->max,
                         piq_params_get_scale_rule (params) == PIQ_SCALE_RULE_ABS_MAX,
                         piq_params_get_include_zero (params), &scale, &zp);
  if (!isfinite (scale))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE,
                   "the data's range [%g, %g] gives no finite binary32 scale", lo, hi);
      return FALSE;
    }
  piq_params_set_scale (params, scale);
  piq_params_set_zero_point (params, zp);
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

/* A code format's per-tensor scale, by the rule its blocks use (simd/piq-formats.c):
 * amax / max for the minifloats, amax for the table formats, mean |x| for binary. */
static gboolean
code_params (PiqParams          *params,
             const PiqDtypeInfo *info,
             PiqDtype            src_dtype,
             gconstpointer       src,
             gsize               n,
             double              amax,
             GError            **error)
{
  float a = (float) amax, scale;

  if (info->kernel_index == PIQ_C_BINARY)
    {
      int ft = piq_dtype_info (src_dtype)->kernel_index;
      double sum = 0.0;
      for (gsize i = 0; i < n; i++)
        sum += ft == PIQ_F_F64 ? fabs (((const double *) src)[i]) : fabsf (piq_load_f (src, i, ft));
      scale = (float) (sum / (double) n);
    }
  else if (info->kernel_index <= PIQ_C_FP4_E2M1)
    scale = a / piq_minifloats[info->kernel_index].max;
  else
    scale = a;
  if (!(scale > 0.0f) || !isfinite (scale))
    scale = 1.0f;   /* all zeros: any scale represents them; 1 keeps a plain cast */
  piq_params_set_scale (params, scale);
  piq_params_set_zero_point (params, 0);
  return TRUE;
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
  if (info == NULL || (info->kind != PIQ_KIND_INT && info->kind != PIQ_KIND_CODE))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "cannot compute parameters for %s: the quantized dtype must be an integer "
                   "type or a code format", piq_dtype_describe (piq_params_get_dtype (params)));
      return FALSE;
    }
  if (info->bits == 0 || piq_params_get_granularity (params) != PIQ_GRANULARITY_TENSOR)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "per-channel and per-block scales (and those of %s) are derived by quantize, "
                   "block by block; compute_params derives per-tensor parameters", info->name);
      return FALSE;
    }
  if (info->kind == PIQ_KIND_CODE && (piq_params_get_scale_rule (params) == PIQ_SCALE_RULE_MEAN_STD ||
                                      piq_params_get_scale_rule (params) >= PIQ_SCALE_RULE_POW2_FLOOR))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "%s derives its per-tensor scale by its absmax rule; the %s rule does not apply",
                   info->name, piq_params_get_scale_rule (params) == PIQ_SCALE_RULE_MEAN_STD
                               ? "mean/std" : "power-of-two");
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
      if (info->kind == PIQ_KIND_CODE)
        return code_params (params, info, src_dtype, src, n_elements, MAX (-lo, hi), error);
      /* binary32 for every source, f64 too, as torch's observers keep min/max */
      return params_from_minmax (params, info, (float) lo, (float) hi, error);
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

  if (uses_blocks (params))
    return quantize_blocks_impl (self, params, src_dtype, src, n, dst, dst_size, NULL, 0, NULL, 0,
                                 seed_used, error);
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
  if (uses_blocks (params))
    {
      BlockLayout l;
      g_autofree guint8 *scales = NULL;
      g_autofree gint32 *zero_points = NULL;

      if (!block_layout (params, piq_tensor_get_n_elements (src), &l, NULL, error))
        return FALSE;
      scales = l.scales_size ? g_try_malloc (l.scales_size) : NULL;
      zero_points = l.zero_points_size ? g_try_malloc (l.zero_points_size) : NULL;
      if ((l.scales_size && scales == NULL) || (l.zero_points_size && zero_points == NULL))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GSIZE_FORMAT
                       " bytes of scales", l.scales_size + l.zero_points_size);
          return FALSE;
        }
      if (!quantize_blocks_impl (self, params, piq_tensor_get_dtype (src),
                                 piq_tensor_get_data (src, NULL), piq_tensor_get_n_elements (src),
                                 dst_data, dst_size, scales, l.scales_size, zero_points,
                                 l.zero_points_size, &seed, error))
        return FALSE;
      {
        g_autoptr(GBytes) sb = scales ? g_bytes_new_take (g_steal_pointer (&scales), l.scales_size) : NULL;
        g_autoptr(GBytes) zb = zero_points ? g_bytes_new_take (g_steal_pointer (&zero_points),
                                                               l.zero_points_size) : NULL;
        piq_tensor_set_scales (dst, sb);
        piq_tensor_set_zero_points (dst, zb);
      }
    }
  else if (!quantize_impl (self, params, piq_tensor_get_dtype (src), piq_tensor_get_data (src, NULL),
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

  if (uses_blocks (params))
    {
      return dequantize_blocks_impl (self, params, src, src_size, n_elements, NULL, 0, NULL, 0,
                                     dst_dtype, dst, dst_size, op, error);
    }
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
  if (uses_blocks (params))
    {
      g_autoptr(GBytes) scales = piq_tensor_get_scales (src);
      g_autoptr(GBytes) zero_points = piq_tensor_get_zero_points (src);
      gsize scales_size = 0, zero_points_size = 0;
      gconstpointer sd = scales ? g_bytes_get_data (scales, &scales_size) : NULL;
      gconstpointer zd = zero_points ? g_bytes_get_data (zero_points, &zero_points_size) : NULL;

      return dequantize_blocks_impl (self, params, src_data, src_size,
                                     piq_tensor_get_n_elements (src), sd, scales_size, zd,
                                     zero_points_size, piq_tensor_get_dtype (dst), dst_data,
                                     dst_size, op, error);
    }
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

  if (uses_blocks (params))
    return requantize_blocks (self, params, dtype, src, n_elements, dst, dst_size, op, error);
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

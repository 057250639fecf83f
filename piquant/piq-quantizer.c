/* piq-quantizer.c: the engine
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piq-quantizer.h"
#include "piq-quantizer-private.h"
#include "piq-dtype.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"
#include "piq-parallel-private.h"
#include "piq-format-private.h"
#include "piq-tensor-private.h"
#include "piq-engine-private.h"
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
 * g_autoptr(PiqFormat) format = piq_format_new (PIQ_DTYPE_UINT4);
 * g_autoptr(PiqTensor) packed = piq_quantizer_quantize_new (q, format, NULL, src, &error);
 * if (packed == NULL)
 *   g_printerr ("%s\n", error->message);
 * ```
 *
 * Since: 1.0
 */
struct _PiqQuantizer
{
  GObject         parent_instance;

  gint            n_threads;  /* atomic */
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
static PiqSimdLevel default_max_level = PIQ_SIMD_LEVEL_AMX;

G_STATIC_ASSERT ((int) PIQ_E_UNSUPPORTED == (int) PIQ_ERROR_UNSUPPORTED &&
                 (int) PIQ_E_OVERLAP == (int) PIQ_ERROR_OVERLAP &&
                 (int) PIQ_E_NO_FORMAT == (int) PIQ_ERROR_NO_FORMAT &&
                 (int) PIQ_E_INVALID_VALUE == (int) PIQ_ERROR_INVALID_VALUE);
G_STATIC_ASSERT (PIQ_SCALE_RULE_DEFAULT == 7 && PIQ_GRANULARITY_BLOCK == 2);

static void
piq_quantizer_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  PiqQuantizer *self = PIQ_QUANTIZER (object);

  switch (prop_id)
    {
    case PROP_N_THREADS:      g_value_set_uint (value, (guint) g_atomic_int_get (&self->n_threads)); break;
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
                       PIQ_SIMD_LEVEL_AMX,
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
  return (guint) g_atomic_int_get (&self->n_threads);
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

  /* atomic: a call running on another thread reads the count once, at its start */
  if ((guint) g_atomic_int_exchange (&self->n_threads, (gint) n_threads) == n_threads)
    return;
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
 * The operations: each hands its call to the engine (piq-engine.c), which
 * validates it once and runs it, and turns an engine error into a GError. */

static void
engine_of (PiqQuantizer *self,
           PiqEngine    *eng)
{
  eng->n_threads = (guint) g_atomic_int_get (&self->n_threads);
  eng->kernels = self->kernels;
}

void
piq_quantizer_get_engine (PiqQuantizer *self,
                          PiqEngine    *eng)
{
  engine_of (self, eng);
}

static gboolean
engine_failed (GError               **error,
               const PiqEngineError  *e)
{
  piq_set_engine_error (error, e);
  return FALSE;
}

static void
raw_view (PiqDtype       dtype,
          const guint64 *shape,
          guint          n_dims,
          gconstpointer  data,
          gsize          size,
          PiqEngineView *v)
{
  memset (v, 0, sizeof *v);
  v->dtype = dtype;
  v->n_dims = MIN (n_dims, PIQ_ENGINE_MAX_DIMS + 1);
  if (shape != NULL)
    memcpy (v->shape, shape, MIN (n_dims, PIQ_ENGINE_MAX_DIMS) * sizeof *shape);
  v->data = data;
  v->size = size;
}

static gboolean
check_writable (PiqTensor  *dst,
                GError    **error)
{
  if (piq_tensor_is_writable (dst))
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_READ_ONLY, "the destination tensor is read-only");
  return FALSE;
}

/**
 * piq_quantizer_compute_params:
 * @self: a quantizer
 * @format: a per-tensor format
 * @recipe: the recipe to fill; its scale rule and include-zero flag are
 *   read, its scale and zero point written
 * @src: a float tensor
 * @error: return location for a #GError
 *
 * Derives a per-tensor scale (and, for affine integers, zero point) from
 * the data with the recipe's rule, and stores them in @recipe, so later
 * calls quantize with them (calibration). The data must be finite
 * (%PIQ_ERROR_NON_FINITE otherwise) and non-empty (%PIQ_ERROR_EMPTY); on
 * error @recipe is left unchanged. The result does not depend on the thread
 * count.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_compute_params (PiqQuantizer  *self,
                              PiqFormat     *format,
                              PiqRecipe     *recipe,
                              PiqTensor     *src,
                              GError       **error)
{
  PiqEngineView v;

  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);

  piq_tensor_to_engine (src, &v);
  if (!piq_tensor_is_contiguous (src))
    {
      /* the raw form takes packed data: the engine packs strided rows itself */
      PiqEngine eng;
      PiqEngineRecipe r;
      PiqEngineError e;
      double scale;
      gint64 zp;

      g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
      g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
      g_return_val_if_fail (PIQ_IS_RECIPE (recipe), FALSE);
      engine_of (self, &eng);
      piq_recipe_to_engine (recipe, &r);
      r.has_scale = r.has_zero_point = 0;
      if (!piq_engine_compute_params (&eng, piq_format_peek (format), &r, &v, &scale, &zp, &e))
        return engine_failed (error, &e);
      piq_recipe_set_calibrated (recipe, scale, piq_format_has_zero_points (format), zp);
      return TRUE;
    }
  return piq_quantizer_compute_params_raw (self, format, recipe, v.dtype, v.data,
                                           (gsize) piq_tensor_get_n_elements (src), error);
}

/**
 * piq_quantizer_compute_params_raw:
 * @self: a quantizer
 * @format: a per-tensor format
 * @recipe: the recipe to fill
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
                                  PiqFormat     *format,
                                  PiqRecipe     *recipe,
                                  PiqDtype       src_dtype,
                                  gconstpointer  src,
                                  gsize          n_elements,
                                  GError       **error)
{
  PiqEngine eng;
  PiqEngineRecipe r;
  PiqEngineView v;
  PiqEngineError e;
  guint64 shape[1] = { n_elements };
  gsize size = 0;
  double scale;
  gint64 zp;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (PIQ_IS_RECIPE (recipe), FALSE);
  g_return_val_if_fail (src != NULL || n_elements == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  engine_of (self, &eng);
  piq_recipe_to_engine (recipe, &r);
  /* derive afresh: a scale the recipe already holds is what is being replaced */
  r.has_scale = r.has_zero_point = 0;
  if (!piq_engine_dtype_size (src_dtype, n_elements, &size, &e))
    return engine_failed (error, &e);
  raw_view (src_dtype, shape, 1, src, size, &v);
  if (!piq_engine_compute_params (&eng, piq_format_peek (format), &r, &v, &scale, &zp, &e))
    return engine_failed (error, &e);
  piq_recipe_set_calibrated (recipe, scale, piq_format_has_zero_points (format), zp);
  return TRUE;
}

/**
 * piq_quantizer_quantize_raw:
 * @self: a quantizer
 * @format: the format
 * @recipe: (nullable): how scales are chosen; %NULL for the default recipe
 * @src_dtype: the float dtype of @src
 * @src: the data, packed
 * @shape: (array length=n_dims): the data's shape
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @dst: where the codes go; must not overlap @src
 * @dst_size: the bytes available at @dst
 * @scales: (nullable): where per-channel or per-block scales go
 * @scales_size: the bytes available at @scales (see [method@Piq.Format.get_sizes])
 * @zero_points: (nullable): where their int32 zero points go (affine integers)
 * @zero_points_size: the bytes available at @zero_points
 * @scale: (out) (optional): the per-tensor scale used (1 for other formats)
 * @zero_point: (out) (optional): the per-tensor zero point used
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.quantize], for every
 * format: codes, scales and zero points go to the caller's buffers. When
 * the recipe's seed is 0, the seed drawn is not reported.
 *
 * Returns: %TRUE on success; on failure nothing was written
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_quantize_raw (PiqQuantizer  *self,
                            PiqFormat     *format,
                            PiqRecipe     *recipe,
                            PiqDtype       src_dtype,
                            gconstpointer  src,
                            const guint64 *shape,
                            guint          n_dims,
                            gpointer       dst,
                            gsize          dst_size,
                            gpointer       scales,
                            gsize          scales_size,
                            gpointer       zero_points,
                            gsize          zero_points_size,
                            double        *scale,
                            gint64        *zero_point,
                            GError       **error)
{
  PiqEngine eng;
  PiqEngineRecipe r;
  PiqEngineView v;
  PiqEngineQuant q = { 0 };
  PiqEngineError e;
  guint64 n;
  gsize size;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (recipe == NULL || PIQ_IS_RECIPE (recipe), FALSE);
  g_return_val_if_fail (shape != NULL || n_dims == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!piq_engine_check_shape (shape, n_dims, &n, &e) ||
      !piq_engine_dtype_size (src_dtype, n, &size, &e))
    return engine_failed (error, &e);
  g_return_val_if_fail (src != NULL || size == 0, FALSE);
  engine_of (self, &eng);
  piq_recipe_to_engine (recipe, &r);
  raw_view (src_dtype, shape, n_dims, src, size, &v);
  q.f = *piq_format_peek (format);
  q.codes = dst;
  q.codes_size = dst_size;
  q.scales = scales;
  q.scales_size = scales ? scales_size : 0;
  q.zero_points = zero_points;
  q.zero_points_size = zero_points ? zero_points_size : 0;
  if (!piq_engine_quantize (&eng, &r, &v, &q, NULL, &e))
    return engine_failed (error, &e);
  if (scale != NULL)
    *scale = q.f.granularity == PIQ_GRANULARITY_TENSOR ? q.scale : 1.0;
  if (zero_point != NULL)
    *zero_point = q.zero_point;
  return TRUE;
}

/**
 * piq_quantizer_quantize:
 * @self: a quantizer
 * @recipe: (nullable): how scales are chosen; %NULL for the default recipe
 * @src: a float tensor
 * @dst: a writable quantized tensor of the same shape
 *   ([ctor@Piq.Tensor.new_quantized]); its format decides the quantization
 * @error: return location for a #GError
 *
 * Quantizes @src into @dst's format: `q = clamp(round(x / scale) +
 * zero_point, qmin, qmax)` for integers, the format's codec for code
 * formats, with the recipe's rounding (see [Numerics](numerics.html)). The
 * scales come from the recipe or are derived from the data; @dst records
 * them, and the stochastic seed used.
 *
 * Returns: %TRUE on success; on failure @dst is unchanged
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_quantize (PiqQuantizer  *self,
                        PiqRecipe     *recipe,
                        PiqTensor     *src,
                        PiqTensor     *dst,
                        GError       **error)
{
  PiqEngine eng;
  PiqEngineRecipe r;
  PiqEngineView v;
  PiqEngineQuant q;
  PiqEngineError e;
  PiqFormat *format;
  guint64 seed = 0;
  guint n_dims, dn;
  const guint64 *shape, *dshape;
  g_autoptr(GBytes) scales = NULL, zero_points = NULL;
  guint8 *new_scales = NULL, *new_zps = NULL;
  gsize scales_size = 0, zps_size = 0;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (recipe == NULL || PIQ_IS_RECIPE (recipe), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (dst), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  format = piq_tensor_get_format (dst);
  if (!piq_dtype_is_quantized (piq_tensor_get_dtype (dst)))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the destination is a %s tensor: "
                   "quantize writes a quantized tensor (piq_tensor_new_quantized())",
                   piq_dtype_describe (piq_tensor_get_dtype (dst)));
      return FALSE;
    }
  if (format == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_FORMAT, "the destination %s tensor has no "
                   "format: make it with piq_tensor_new_quantized()",
                   piq_dtype_describe (piq_tensor_get_dtype (dst)));
      return FALSE;
    }
  shape = piq_tensor_get_shape (src, &n_dims);
  dshape = piq_tensor_get_shape (dst, &dn);
  if (n_dims != dn || memcmp (shape, dshape, n_dims * sizeof *shape) != 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "the source has %" G_GUINT64_FORMAT
                   " elements in %u dimensions, the destination %" G_GUINT64_FORMAT " in %u: the "
                   "shapes must be equal", piq_tensor_get_n_elements (src), n_dims,
                   piq_tensor_get_n_elements (dst), dn);
      return FALSE;
    }
  if (!check_writable (dst, error))
    return FALSE;
  engine_of (self, &eng);
  piq_recipe_to_engine (recipe, &r);
  piq_tensor_to_engine (src, &v);
  piq_tensor_to_engine_quant (dst, &q);
  /* fresh scale buffers: the old ones may be shared with GBytes handed out */
  if (!piq_engine_sizes (&q.f, shape, n_dims, NULL, &scales_size, &zps_size, &e))
    return engine_failed (error, &e);
  new_scales = scales_size ? g_try_malloc (scales_size) : NULL;
  new_zps = zps_size ? g_try_malloc (zps_size) : NULL;
  if ((scales_size && new_scales == NULL) || (zps_size && new_zps == NULL))
    {
      g_free (new_scales);
      g_free (new_zps);
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GSIZE_FORMAT
                   " bytes of scales", scales_size + zps_size);
      return FALSE;
    }
  scales = new_scales ? g_bytes_new_take (new_scales, scales_size) : NULL;
  zero_points = new_zps ? g_bytes_new_take (new_zps, zps_size) : NULL;
  q.codes = piq_tensor_get_writable_data (dst, &q.codes_size);
  q.scales = new_scales;
  q.scales_size = scales_size;
  q.zero_points = new_zps;
  q.zero_points_size = zps_size;
  if (!piq_engine_quantize (&eng, &r, &v, &q, &seed, &e))
    return engine_failed (error, &e);
  return piq_tensor_set_quantized (dst, format, q.f.granularity == PIQ_GRANULARITY_TENSOR &&
                                   piq_dtype_get_bits (q.f.dtype) != 0 ? q.scale : 1.0,
                                   q.f.granularity == PIQ_GRANULARITY_TENSOR ? q.zero_point : 0,
                                   seed, scales, zero_points, error);
}

/**
 * piq_quantizer_quantize_new:
 * @self: a quantizer
 * @format: the format
 * @recipe: (nullable): how scales are chosen; %NULL for the default recipe
 * @src: a float tensor
 * @error: return location for a #GError
 *
 * Quantizes into a new tensor of @src's shape; see [method@Piq.Quantizer.quantize].
 *
 * Returns: (transfer full) (nullable): the quantized tensor, or %NULL on error
 *
 * Since: 1.0
 */
PiqTensor *
piq_quantizer_quantize_new (PiqQuantizer  *self,
                            PiqFormat     *format,
                            PiqRecipe     *recipe,
                            PiqTensor     *src,
                            GError       **error)
{
  g_autoptr(PiqTensor) dst = NULL;
  const guint64 *shape;
  guint n_dims;

  g_return_val_if_fail (PIQ_IS_FORMAT (format), NULL);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  shape = piq_tensor_get_shape (src, &n_dims);
  dst = piq_tensor_new_quantized (format, shape, n_dims, error);
  if (dst == NULL || !piq_quantizer_quantize (self, recipe, src, dst, error))
    return NULL;
  return g_steal_pointer (&dst);
}

/**
 * piq_quantizer_dequantize_raw:
 * @self: a quantizer
 * @format: the format the data was quantized in
 * @scale: the per-tensor scale (per-tensor formats)
 * @zero_point: the per-tensor zero point (affine per-tensor integers; the
 *   implied one otherwise: 0, or the middle of an unsigned range)
 * @src: the codes
 * @src_size: the bytes at @src
 * @shape: (array length=n_dims): the data's shape
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @scales: (nullable): the per-channel or per-block scales
 * @scales_size: the bytes at @scales
 * @zero_points: (nullable): their int32 zero points (affine integers)
 * @zero_points_size: the bytes at @zero_points
 * @dst_dtype: the float dtype of @dst
 * @dst: the destination, packed; must not overlap the sources
 * @dst_size: the bytes available at @dst
 * @op: overwrite or add into @dst
 * @error: return location for a #GError
 *
 * The raw-pointer form of [method@Piq.Quantizer.dequantize], for every format.
 *
 * Returns: %TRUE on success; on failure nothing was written
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_dequantize_raw (PiqQuantizer  *self,
                              PiqFormat     *format,
                              double         scale,
                              gint64         zero_point,
                              gconstpointer  src,
                              gsize          src_size,
                              const guint64 *shape,
                              guint          n_dims,
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
  PiqEngine eng;
  PiqEngineView v;
  PiqEngineQuant q = { 0 };
  PiqEngineError e;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (src != NULL || src_size == 0, FALSE);
  g_return_val_if_fail (shape != NULL || n_dims == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  engine_of (self, &eng);
  q.f = *piq_format_peek (format);
  q.codes = src;
  q.codes_size = src_size;
  q.scales = scales;
  q.scales_size = scales ? scales_size : 0;
  q.zero_points = zero_points;
  q.zero_points_size = zero_points ? zero_points_size : 0;
  q.scale = scale;
  q.zero_point = zero_point;
  raw_view (dst_dtype, shape, n_dims, dst, dst_size, &v);
  if (!piq_engine_dequantize (&eng, &q, shape, n_dims, &v, op == PIQ_REDUCE_ADD, &e))
    return engine_failed (error, &e);
  return TRUE;
}

/**
 * piq_quantizer_dequantize:
 * @self: a quantizer
 * @src: a quantized tensor (it carries its format and scales)
 * @dst: a writable float tensor of the same shape
 * @op: %PIQ_REDUCE_SET to overwrite @dst, %PIQ_REDUCE_ADD to add into it
 * @error: return location for a #GError
 *
 * Dequantizes `y = (q − zero_point) · scale` (the format's decoding) into
 * @dst, or adds it to @dst.
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
  PiqEngine eng;
  PiqEngineView v;
  PiqEngineQuant q;
  PiqEngineError e;
  const guint64 *shape;
  guint n_dims;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (dst), FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!piq_dtype_is_quantized (piq_tensor_get_dtype (src)))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "cannot dequantize a %s tensor: the source must be quantized",
                   piq_dtype_describe (piq_tensor_get_dtype (src)));
      return FALSE;
    }
  if (piq_tensor_get_format (src) == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_FORMAT,
                   "the %s tensor has no format: wrap quantized data with "
                   "piq_tensor_new_quantized_from_bytes()",
                   piq_dtype_describe (piq_tensor_get_dtype (src)));
      return FALSE;
    }
  if (!check_writable (dst, error))
    return FALSE;
  engine_of (self, &eng);
  piq_tensor_to_engine_quant (src, &q);
  piq_tensor_to_engine (dst, &v);
  shape = piq_tensor_get_shape (src, &n_dims);
  if (!piq_engine_dequantize (&eng, &q, shape, n_dims, &v, op == PIQ_REDUCE_ADD, &e))
    return engine_failed (error, &e);
  return TRUE;
}

/**
 * piq_quantizer_dequantize_new:
 * @self: a quantizer
 * @src: a quantized tensor
 * @dtype: the float dtype of the result
 * @error: return location for a #GError
 *
 * Dequantizes into a new tensor of @src's shape; see [method@Piq.Quantizer.dequantize].
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
  const guint64 *shape;
  guint n_dims;

  g_return_val_if_fail (PIQ_IS_TENSOR (src), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!piq_dtype_is_float (dtype))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the destination must be a float "
                   "dtype (f32, f64, bf16, f16), not %s", piq_dtype_describe (dtype));
      return NULL;
    }
  shape = piq_tensor_get_shape (src, &n_dims);
  dst = piq_tensor_new_shaped (dtype, shape, n_dims, error);
  if (dst == NULL || !piq_quantizer_dequantize (self, src, dst, PIQ_REDUCE_SET, error))
    return NULL;
  return g_steal_pointer (&dst);
}

/**
 * piq_quantizer_requantize_raw:
 * @self: a quantizer
 * @format: the format
 * @recipe: (nullable): how scales are chosen; %NULL for the default recipe
 * @dtype: the float dtype of @src and @dst
 * @src: the data, packed
 * @shape: (array length=n_dims): the data's shape
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @dst: the destination, packed; @src itself (in place) or memory that does
 *   not overlap it
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
                              PiqFormat     *format,
                              PiqRecipe     *recipe,
                              PiqDtype       dtype,
                              gconstpointer  src,
                              const guint64 *shape,
                              guint          n_dims,
                              gpointer       dst,
                              gsize          dst_size,
                              PiqReduceOp    op,
                              GError       **error)
{
  PiqEngine eng;
  PiqEngineRecipe r;
  PiqEngineView sv, dv;
  PiqEngineError e;
  guint64 n;
  gsize size;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (recipe == NULL || PIQ_IS_RECIPE (recipe), FALSE);
  g_return_val_if_fail (shape != NULL || n_dims == 0, FALSE);
  g_return_val_if_fail (dst != NULL || dst_size == 0, FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!piq_engine_check_shape (shape, n_dims, &n, &e) ||
      !piq_engine_dtype_size (dtype, n, &size, &e))
    return engine_failed (error, &e);
  g_return_val_if_fail (src != NULL || size == 0, FALSE);
  engine_of (self, &eng);
  piq_recipe_to_engine (recipe, &r);
  raw_view (dtype, shape, n_dims, src, size, &sv);
  raw_view (dtype, shape, n_dims, dst, dst_size, &dv);
  if (!piq_engine_requantize (&eng, piq_format_peek (format), &r, &sv, &dv, op == PIQ_REDUCE_ADD, &e))
    return engine_failed (error, &e);
  return TRUE;
}

/**
 * piq_quantizer_requantize:
 * @self: a quantizer
 * @format: the format
 * @recipe: (nullable): how scales are chosen; %NULL for the default recipe
 * @src: a float tensor
 * @dst: a writable tensor of the same dtype and shape (may be @src)
 * @op: %PIQ_REDUCE_SET to overwrite @dst, %PIQ_REDUCE_ADD to add into it
 * @error: return location for a #GError
 *
 * Fused quantize → dequantize: each value goes through the format's grid
 * without codes being stored, as quantization-aware training (fake
 * quantization) and error measurement need. Same values as a quantize
 * followed by a dequantize into the source dtype.
 *
 * Returns: %TRUE on success; on failure @dst is unchanged
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_requantize (PiqQuantizer  *self,
                          PiqFormat     *format,
                          PiqRecipe     *recipe,
                          PiqTensor     *src,
                          PiqTensor     *dst,
                          PiqReduceOp    op,
                          GError       **error)
{
  PiqEngine eng;
  PiqEngineRecipe r;
  PiqEngineView sv, dv;
  PiqEngineError e;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (recipe == NULL || PIQ_IS_RECIPE (recipe), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (dst), FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_writable (dst, error))
    return FALSE;
  engine_of (self, &eng);
  piq_recipe_to_engine (recipe, &r);
  piq_tensor_to_engine (src, &sv);
  piq_tensor_to_engine (dst, &dv);
  if (!piq_engine_requantize (&eng, piq_format_peek (format), &r, &sv, &dv, op == PIQ_REDUCE_ADD, &e))
    return engine_failed (error, &e);
  return TRUE;
}

/**
 * piq_quantizer_binary_dot:
 * @self: a quantizer
 * @a: a quantized %PIQ_DTYPE_BINARY tensor
 * @b: a quantized %PIQ_DTYPE_BINARY tensor of the same length and block size
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
  PiqEngineQuant qa, qb;
  PiqEngineError e;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (a), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (b), FALSE);
  g_return_val_if_fail (result != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (piq_tensor_get_format (a) == NULL || piq_tensor_get_format (b) == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "the binary dot product takes two quantized binary tensors; the %s one is %s "
                   "without a format", piq_tensor_get_format (a) == NULL ? "first" : "second",
                   piq_dtype_describe (piq_tensor_get_dtype (piq_tensor_get_format (a) == NULL ? a : b)));
      return FALSE;
    }
  if (piq_tensor_get_n_elements (a) != piq_tensor_get_n_elements (b))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "the vectors differ in length (%"
                   G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ")", piq_tensor_get_n_elements (a),
                   piq_tensor_get_n_elements (b));
      return FALSE;
    }
  piq_tensor_to_engine_quant (a, &qa);
  piq_tensor_to_engine_quant (b, &qb);
  if (!piq_engine_binary_dot (&qa, &qb, piq_tensor_get_n_elements (a), result, &e))
    return engine_failed (error, &e);
  return TRUE;
}

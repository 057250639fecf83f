/* piq-params.c: how to quantize
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>

#include "piq-params.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"

/**
 * PiqParams:
 *
 * How to quantize: the quantized dtype, the scale and zero point of a per-tensor
 * affine mapping `q = clamp(round(x / scale) + zero_point)`, the rounding mode and
 * its seed, and the rule [method@Piq.Quantizer.compute_params] uses to derive the
 * scale and zero point from data.
 *
 * A quantized [class@Piq.Tensor] carries a copy of the parameters that made it, so
 * [method@Piq.Quantizer.dequantize] needs nothing else.
 *
 * ```python
 * from gi.repository import Piq
 * params = Piq.Params(dtype=Piq.Dtype.UINT4, round_mode=Piq.RoundMode.STOCHASTIC, seed=7)
 * Piq.Quantizer.get_default().compute_params(params, tensor)
 * print(params.props.scale, params.props.zero_point)
 * ```
 *
 * Since: 1.0
 */
struct _PiqParams
{
  GObject       parent_instance;

  PiqDtype      dtype;
  double        scale;
  gint64        zero_point;
  PiqRoundMode  round_mode;
  guint64       seed;
  PiqScaleRule  scale_rule;
  gboolean      include_zero;
};

G_DEFINE_FINAL_TYPE (PiqParams, piq_params, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_DTYPE,
  PROP_SCALE,
  PROP_ZERO_POINT,
  PROP_ROUND_MODE,
  PROP_SEED,
  PROP_SCALE_RULE,
  PROP_INCLUDE_ZERO,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
piq_params_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  PiqParams *self = PIQ_PARAMS (object);

  switch (prop_id)
    {
    case PROP_DTYPE:        g_value_set_enum (value, self->dtype); break;
    case PROP_SCALE:        g_value_set_double (value, self->scale); break;
    case PROP_ZERO_POINT:   g_value_set_int64 (value, self->zero_point); break;
    case PROP_ROUND_MODE:   g_value_set_enum (value, self->round_mode); break;
    case PROP_SEED:         g_value_set_uint64 (value, self->seed); break;
    case PROP_SCALE_RULE:   g_value_set_enum (value, self->scale_rule); break;
    case PROP_INCLUDE_ZERO: g_value_set_boolean (value, self->include_zero); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_params_set_property (GObject      *object,
                         guint         prop_id,
                         const GValue *value,
                         GParamSpec   *pspec)
{
  PiqParams *self = PIQ_PARAMS (object);

  switch (prop_id)
    {
    case PROP_DTYPE:        piq_params_set_dtype (self, g_value_get_enum (value)); break;
    case PROP_SCALE:        piq_params_set_scale (self, g_value_get_double (value)); break;
    case PROP_ZERO_POINT:   piq_params_set_zero_point (self, g_value_get_int64 (value)); break;
    case PROP_ROUND_MODE:   piq_params_set_round_mode (self, g_value_get_enum (value)); break;
    case PROP_SEED:         piq_params_set_seed (self, g_value_get_uint64 (value)); break;
    case PROP_SCALE_RULE:   piq_params_set_scale_rule (self, g_value_get_enum (value)); break;
    case PROP_INCLUDE_ZERO: piq_params_set_include_zero (self, g_value_get_boolean (value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_params_class_init (PiqParamsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;

  object_class->get_property = piq_params_get_property;
  object_class->set_property = piq_params_set_property;

  /**
   * PiqParams:dtype:
   *
   * The quantized dtype (an integer type).
   *
   * Since: 1.0
   */
  properties[PROP_DTYPE] =
    g_param_spec_enum ("dtype", NULL, NULL, PIQ_TYPE_DTYPE, PIQ_DTYPE_UINT8, rw);

  /**
   * PiqParams:scale:
   *
   * The quantization step: `x ≈ (q − zero_point) · scale`. Must be finite and
   * positive when used; float sources compute with its binary32 value. As a
   * property it accepts ±Inf but not NaN (GObject refuses NaN for every double
   * property); [method@Piq.Params.set_scale] stores any value.
   *
   * Since: 1.0
   */
  properties[PROP_SCALE] =
    g_param_spec_double ("scale", NULL, NULL, -INFINITY, INFINITY, 1.0, rw);

  /**
   * PiqParams:zero-point:
   *
   * The integer that represents 0.0; must lie in the range of
   * [property@Piq.Params:dtype] when used (uint64 zero points are limited to
   * `G_MAXINT64`).
   *
   * Since: 1.0
   */
  properties[PROP_ZERO_POINT] =
    g_param_spec_int64 ("zero-point", NULL, NULL, G_MININT64, G_MAXINT64, 0, rw);

  /**
   * PiqParams:round-mode:
   *
   * Nearest (ties to even) or stochastic rounding.
   *
   * Since: 1.0
   */
  properties[PROP_ROUND_MODE] =
    g_param_spec_enum ("round-mode", NULL, NULL, PIQ_TYPE_ROUND_MODE, PIQ_ROUND_NEAREST, rw);

  /**
   * PiqParams:seed:
   *
   * The seed of stochastic rounding. The same seed gives the same bytes for any
   * thread count and SIMD level. 0, the default, means unset: every call draws a
   * fresh seed, and the quantized tensor's parameters record the seed used.
   *
   * Since: 1.0
   */
  properties[PROP_SEED] =
    g_param_spec_uint64 ("seed", NULL, NULL, 0, G_MAXUINT64, 0, rw);

  /**
   * PiqParams:scale-rule:
   *
   * How [method@Piq.Quantizer.compute_params] derives the scale and zero point.
   *
   * Since: 1.0
   */
  properties[PROP_SCALE_RULE] =
    g_param_spec_enum ("scale-rule", NULL, NULL, PIQ_TYPE_SCALE_RULE, PIQ_SCALE_RULE_MIN_MAX, rw);

  /**
   * PiqParams:include-zero:
   *
   * Whether the min/max rule widens the data's range to include 0 (as PyTorch's
   * observers do, so that 0.0 is exactly representable). Without it the range is
   * the data's own [min, max] (pi-quant's rule).
   *
   * Since: 1.0
   */
  properties[PROP_INCLUDE_ZERO] =
    g_param_spec_boolean ("include-zero", NULL, NULL, TRUE, rw);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
piq_params_init (PiqParams *self)
{
  self->dtype = PIQ_DTYPE_UINT8;
  self->scale = 1.0;
  self->round_mode = PIQ_ROUND_NEAREST;
  self->scale_rule = PIQ_SCALE_RULE_MIN_MAX;
  self->include_zero = TRUE;
}

/**
 * piq_params_new:
 * @dtype: the quantized dtype
 *
 * Creates parameters for @dtype with scale 1, zero point 0, nearest rounding
 * and the min/max rule.
 *
 * Returns: (transfer full): new parameters
 *
 * Since: 1.0
 */
PiqParams *
piq_params_new (PiqDtype dtype)
{
  return g_object_new (PIQ_TYPE_PARAMS, "dtype", dtype, NULL);
}

/**
 * piq_params_new_affine:
 * @dtype: the quantized dtype
 * @scale: the scale
 * @zero_point: the zero point
 *
 * Creates per-tensor affine parameters.
 *
 * Returns: (transfer full): new parameters
 *
 * Since: 1.0
 */
PiqParams *
piq_params_new_affine (PiqDtype dtype,
                       double   scale,
                       gint64   zero_point)
{
  PiqParams *self = piq_params_new (dtype);

  /* Fields, not properties: a GParamSpecDouble refuses NaN, and an invalid scale
   * must reach the operation to be reported as PIQ_ERROR_INVALID_SCALE. */
  self->scale = scale;
  self->zero_point = zero_point;
  return self;
}

/**
 * piq_params_copy:
 * @self: parameters
 *
 * Copies every property into new parameters.
 *
 * Returns: (transfer full): a copy of @self
 *
 * Since: 1.0
 */
PiqParams *
piq_params_copy (PiqParams *self)
{
  PiqParams *copy;

  g_return_val_if_fail (PIQ_IS_PARAMS (self), NULL);

  copy = g_object_new (PIQ_TYPE_PARAMS, NULL);
  copy->dtype = self->dtype;
  copy->scale = self->scale;
  copy->zero_point = self->zero_point;
  copy->round_mode = self->round_mode;
  copy->seed = self->seed;
  copy->scale_rule = self->scale_rule;
  copy->include_zero = self->include_zero;
  return copy;
}

/* Setters notify only on a real change (G_PARAM_EXPLICIT_NOTIFY). */
#define PIQ_PARAMS_SETTER(field, type, PROP, check)                     \
  void piq_params_set_##field (PiqParams *self, type field)             \
  {                                                                     \
    g_return_if_fail (PIQ_IS_PARAMS (self));                            \
    g_return_if_fail (check);                                           \
    if (self->field == field)                                           \
      return;                                                           \
    self->field = field;                                                \
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP]);       \
  }                                                                     \
  type piq_params_get_##field (PiqParams *self)                         \
  {                                                                     \
    g_return_val_if_fail (PIQ_IS_PARAMS (self), (type) 0);              \
    return self->field;                                                 \
  }

/**
 * piq_params_get_dtype:
 * @self: parameters
 *
 * Gets [property@Piq.Params:dtype].
 *
 * Returns: the quantized dtype
 *
 * Since: 1.0
 */
/**
 * piq_params_set_dtype:
 * @self: parameters
 * @dtype: the quantized dtype
 *
 * Sets [property@Piq.Params:dtype]; a float dtype is accepted here and
 * rejected with %PIQ_ERROR_UNSUPPORTED when the parameters are used.
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (dtype, PiqDtype, PROP_DTYPE, piq_dtype_info (dtype) != NULL)

/**
 * piq_params_get_scale:
 * @self: parameters
 *
 * Gets [property@Piq.Params:scale].
 *
 * Returns: the scale
 *
 * Since: 1.0
 */
/**
 * piq_params_set_scale:
 * @self: parameters
 * @scale: the scale
 *
 * Sets [property@Piq.Params:scale]. Any value is stored; a scale that is not
 * finite and positive is rejected with %PIQ_ERROR_INVALID_SCALE when used.
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (scale, double, PROP_SCALE, TRUE)

/**
 * piq_params_get_zero_point:
 * @self: parameters
 *
 * Gets [property@Piq.Params:zero-point].
 *
 * Returns: the zero point
 *
 * Since: 1.0
 */
/**
 * piq_params_set_zero_point:
 * @self: parameters
 * @zero_point: the zero point
 *
 * Sets [property@Piq.Params:zero-point]; one outside the dtype's range is
 * rejected with %PIQ_ERROR_INVALID_ZERO_POINT when used.
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (zero_point, gint64, PROP_ZERO_POINT, TRUE)

/**
 * piq_params_get_round_mode:
 * @self: parameters
 *
 * Gets [property@Piq.Params:round-mode].
 *
 * Returns: the rounding mode
 *
 * Since: 1.0
 */
/**
 * piq_params_set_round_mode:
 * @self: parameters
 * @round_mode: the rounding mode
 *
 * Sets [property@Piq.Params:round-mode].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (round_mode, PiqRoundMode, PROP_ROUND_MODE,
                   round_mode == PIQ_ROUND_NEAREST || round_mode == PIQ_ROUND_STOCHASTIC)

/**
 * piq_params_get_seed:
 * @self: parameters
 *
 * Gets [property@Piq.Params:seed].
 *
 * Returns: the stochastic-rounding seed, 0 if unset
 *
 * Since: 1.0
 */
/**
 * piq_params_set_seed:
 * @self: parameters
 * @seed: the seed, or 0 for a fresh seed on every call
 *
 * Sets [property@Piq.Params:seed].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (seed, guint64, PROP_SEED, TRUE)

/**
 * piq_params_get_scale_rule:
 * @self: parameters
 *
 * Gets [property@Piq.Params:scale-rule].
 *
 * Returns: the rule that derives the scale from data
 *
 * Since: 1.0
 */
/**
 * piq_params_set_scale_rule:
 * @self: parameters
 * @scale_rule: the rule
 *
 * Sets [property@Piq.Params:scale-rule].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (scale_rule, PiqScaleRule, PROP_SCALE_RULE,
                   scale_rule >= PIQ_SCALE_RULE_MIN_MAX && scale_rule <= PIQ_SCALE_RULE_MEAN_STD)

/**
 * piq_params_get_include_zero:
 * @self: parameters
 *
 * Gets [property@Piq.Params:include-zero].
 *
 * Returns: whether the min/max rule includes 0 in the range
 *
 * Since: 1.0
 */
/**
 * piq_params_set_include_zero:
 * @self: parameters
 * @include_zero: whether to include 0
 *
 * Sets [property@Piq.Params:include-zero].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (include_zero, gboolean, PROP_INCLUDE_ZERO, TRUE)

/**
 * piq_params_validate:
 * @self: parameters
 * @error: return location for a #GError
 *
 * Checks that the parameters can quantize: an integer dtype, a finite positive
 * scale and a zero point inside the dtype's range.
 *
 * Returns: %TRUE if the parameters are usable
 *
 * Since: 1.0
 */
gboolean
piq_params_validate (PiqParams  *self,
                     GError    **error)
{
  const PiqDtypeInfo *info;

  g_return_val_if_fail (PIQ_IS_PARAMS (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  info = piq_dtype_info (self->dtype);
  if (info == NULL || info->is_float)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "cannot quantize to %s: the quantized dtype must be an integer type",
                   piq_dtype_describe (self->dtype));
      return FALSE;
    }
  if (!isfinite (self->scale) || !(self->scale > 0.0))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE,
                   "scale %g is not a finite positive number", self->scale);
      return FALSE;
    }
  if (self->zero_point < info->min ||
      (self->zero_point > 0 && (guint64) self->zero_point > info->max))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT,
                   "zero point %" G_GINT64_FORMAT " is outside the %s range [%" G_GINT64_FORMAT
                   ", %" G_GUINT64_FORMAT "]", self->zero_point, info->name, info->min, info->max);
      return FALSE;
    }
  return TRUE;
}

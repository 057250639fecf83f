/* piq-params.c: how to quantize
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>

#include "piq-params.h"
#include "piq-params-private.h"
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
  PiqGranularity granularity;
  guint         block_size;
  PiqDtype      scale_dtype;
  gboolean      saturate;
  gboolean      high_nibble_first;
  gboolean      double_quant;
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
  PROP_GRANULARITY,
  PROP_BLOCK_SIZE,
  PROP_SCALE_DTYPE,
  PROP_SATURATE,
  PROP_HIGH_NIBBLE_FIRST,
  PROP_DOUBLE_QUANT,
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
    case PROP_GRANULARITY:  g_value_set_enum (value, self->granularity); break;
    case PROP_BLOCK_SIZE:   g_value_set_uint (value, self->block_size); break;
    case PROP_SCALE_DTYPE:  g_value_set_enum (value, self->scale_dtype); break;
    case PROP_SATURATE:     g_value_set_boolean (value, self->saturate); break;
    case PROP_HIGH_NIBBLE_FIRST: g_value_set_boolean (value, self->high_nibble_first); break;
    case PROP_DOUBLE_QUANT: g_value_set_boolean (value, self->double_quant); break;
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
    case PROP_GRANULARITY:  piq_params_set_granularity (self, g_value_get_enum (value)); break;
    case PROP_BLOCK_SIZE:   piq_params_set_block_size (self, g_value_get_uint (value)); break;
    case PROP_SCALE_DTYPE:  piq_params_set_scale_dtype (self, g_value_get_enum (value)); break;
    case PROP_SATURATE:     piq_params_set_saturate (self, g_value_get_boolean (value)); break;
    case PROP_HIGH_NIBBLE_FIRST:
      piq_params_set_high_nibble_first (self, g_value_get_boolean (value));
      break;
    case PROP_DOUBLE_QUANT: piq_params_set_double_quant (self, g_value_get_boolean (value)); break;
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

  /**
   * PiqParams:granularity:
   *
   * One scale for the tensor, one per row (channel), or one per block.
   *
   * Since: 1.0
   */
  properties[PROP_GRANULARITY] =
    g_param_spec_enum ("granularity", NULL, NULL, PIQ_TYPE_GRANULARITY,
                       PIQ_GRANULARITY_TENSOR, rw);

  /**
   * PiqParams:block-size:
   *
   * Elements per block for %PIQ_GRANULARITY_BLOCK, the row length for
   * %PIQ_GRANULARITY_CHANNEL. 0, the default, means the format's own: 32
   * with E8M0 scales (OCP MX) and for the ggml types, 64 otherwise (bitsandbytes'
   * default). The ggml types always use blocks of 32.
   *
   * Since: 1.0
   */
  properties[PROP_BLOCK_SIZE] =
    g_param_spec_uint ("block-size", NULL, NULL, 0, G_MAXUINT, 0, rw);

  /**
   * PiqParams:scale-dtype:
   *
   * How per-channel and per-block scales are stored: %PIQ_DTYPE_F32 (the
   * default), %PIQ_DTYPE_F16 (saturating: a scale beyond f16's range keeps
   * 65504) or %PIQ_DTYPE_E8M0 (powers of two, the OCP MX scale; with a
   * `POW2` [property@Piq.Params:scale-rule]). Elements are encoded with the
   * stored value, so dequantization sees exactly what quantization used.
   *
   * Since: 1.0
   */
  properties[PROP_SCALE_DTYPE] =
    g_param_spec_enum ("scale-dtype", NULL, NULL, PIQ_TYPE_DTYPE, PIQ_DTYPE_F32, rw);

  /**
   * PiqParams:saturate:
   *
   * FP8 with f32/f16 scales: whether a value beyond the largest finite code
   * (after rounding) and ±Inf saturate to ±max (the default), or become ±Inf
   * (E5M2) / NaN (E4M3), the OCP spec's non-saturating mode. MX elements
   * (E8M0 scales) and the formats without Inf or NaN always saturate.
   *
   * Since: 1.0
   */
  properties[PROP_SATURATE] =
    g_param_spec_boolean ("saturate", NULL, NULL, TRUE, rw);

  /**
   * PiqParams:high-nibble-first:
   *
   * 4-bit codes: put element 2k in the high nibble of byte k, as
   * bitsandbytes stores NF4 and FP4. The default, %FALSE, is piquant's (and
   * pi-quant's, torchao's) order: element 2k in the low nibble.
   *
   * Since: 1.0
   */
  properties[PROP_HIGH_NIBBLE_FIRST] =
    g_param_spec_boolean ("high-nibble-first", NULL, NULL, FALSE, rw);

  /**
   * PiqParams:double-quant:
   *
   * NF4, FP4 (bitsandbytes) and NF8 with f32 block scales: store the scales
   * double-quantized, as bitsandbytes' `compress_statistics`: their mean as an
   * f32 offset, then per chunk of 256 scales one f32 maximum and one byte per
   * scale, the nearest code of bitsandbytes' signed 8-bit dynamic map
   * (docs/formats.md). The codes are encoded with the exact scales and decoded
   * with the reconstructed ones, as bitsandbytes does.
   *
   * Since: 1.0
   */
  properties[PROP_DOUBLE_QUANT] =
    g_param_spec_boolean ("double-quant", NULL, NULL, FALSE, rw);

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
  self->granularity = PIQ_GRANULARITY_TENSOR;
  self->scale_dtype = PIQ_DTYPE_F32;
  self->saturate = TRUE;
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
  copy->granularity = self->granularity;
  copy->block_size = self->block_size;
  copy->scale_dtype = self->scale_dtype;
  copy->saturate = self->saturate;
  copy->high_nibble_first = self->high_nibble_first;
  copy->double_quant = self->double_quant;
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
                   scale_rule >= PIQ_SCALE_RULE_MIN_MAX && scale_rule <= PIQ_SCALE_RULE_POW2_RCEIL)

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
 * piq_params_get_granularity:
 * @self: parameters
 *
 * Gets [property@Piq.Params:granularity].
 *
 * Returns: the granularity
 *
 * Since: 1.0
 */
/**
 * piq_params_set_granularity:
 * @self: parameters
 * @granularity: the granularity
 *
 * Sets [property@Piq.Params:granularity].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (granularity, PiqGranularity, PROP_GRANULARITY,
                   granularity >= PIQ_GRANULARITY_TENSOR &&
                   granularity <= PIQ_GRANULARITY_BLOCK)

/**
 * piq_params_get_block_size:
 * @self: parameters
 *
 * Gets [property@Piq.Params:block-size].
 *
 * Returns: the block size or row length, 0 for the format's default
 *
 * Since: 1.0
 */
/**
 * piq_params_set_block_size:
 * @self: parameters
 * @block_size: the block size or row length, 0 for the format's default
 *
 * Sets [property@Piq.Params:block-size].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (block_size, guint, PROP_BLOCK_SIZE, TRUE)

/**
 * piq_params_get_scale_dtype:
 * @self: parameters
 *
 * Gets [property@Piq.Params:scale-dtype].
 *
 * Returns: the storage type of per-channel and per-block scales
 *
 * Since: 1.0
 */
/**
 * piq_params_set_scale_dtype:
 * @self: parameters
 * @scale_dtype: %PIQ_DTYPE_F32, %PIQ_DTYPE_F16 or %PIQ_DTYPE_E8M0
 *
 * Sets [property@Piq.Params:scale-dtype]; another dtype is rejected with
 * %PIQ_ERROR_UNSUPPORTED when the parameters are used.
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (scale_dtype, PiqDtype, PROP_SCALE_DTYPE, piq_dtype_info (scale_dtype) != NULL)

/**
 * piq_params_get_saturate:
 * @self: parameters
 *
 * Gets [property@Piq.Params:saturate].
 *
 * Returns: whether FP8 overflow saturates
 *
 * Since: 1.0
 */
/**
 * piq_params_set_saturate:
 * @self: parameters
 * @saturate: whether FP8 overflow saturates
 *
 * Sets [property@Piq.Params:saturate].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (saturate, gboolean, PROP_SATURATE, TRUE)

/**
 * piq_params_get_high_nibble_first:
 * @self: parameters
 *
 * Gets [property@Piq.Params:high-nibble-first].
 *
 * Returns: whether element 2k is in the high nibble
 *
 * Since: 1.0
 */
/**
 * piq_params_set_high_nibble_first:
 * @self: parameters
 * @high_nibble_first: whether element 2k goes in the high nibble
 *
 * Sets [property@Piq.Params:high-nibble-first].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (high_nibble_first, gboolean, PROP_HIGH_NIBBLE_FIRST, TRUE)

/**
 * piq_params_get_double_quant:
 * @self: parameters
 *
 * Gets [property@Piq.Params:double-quant].
 *
 * Returns: whether block scales are stored double-quantized
 *
 * Since: 1.0
 */
/**
 * piq_params_set_double_quant:
 * @self: parameters
 * @double_quant: whether to store block scales double-quantized
 *
 * Sets [property@Piq.Params:double-quant].
 *
 * Since: 1.0
 */
PIQ_PARAMS_SETTER (double_quant, gboolean, PROP_DOUBLE_QUANT, TRUE)

/* The presets: each a format of the field, by the name its users know. */
typedef struct {
  const char     *name;
  PiqDtype        dtype;
  PiqGranularity  granularity;
  guint           block_size;
  PiqDtype        scale_dtype;
  PiqScaleRule    rule;
  gboolean        high_nibble_first;
  gboolean        double_quant;
} PiqPreset;

static const PiqPreset presets[] = {
  { "mxfp8_e4m3", PIQ_DTYPE_FP8_E4M3, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_POW2_FLOOR, FALSE, FALSE },
  { "mxfp8_e5m2", PIQ_DTYPE_FP8_E5M2, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_POW2_FLOOR, FALSE, FALSE },
  { "mxfp6_e2m3", PIQ_DTYPE_FP6_E2M3, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_POW2_FLOOR, FALSE, FALSE },
  { "mxfp6_e3m2", PIQ_DTYPE_FP6_E3M2, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_POW2_FLOOR, FALSE, FALSE },
  { "mxfp4",      PIQ_DTYPE_FP4_E2M1, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_POW2_FLOOR, FALSE, FALSE },
  { "mxint8",     PIQ_DTYPE_INT8,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_POW2_FLOOR, FALSE, FALSE },
  { "nf4",        PIQ_DTYPE_NF4,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    TRUE, FALSE },
  { "fp4_bnb",    PIQ_DTYPE_FP4_BNB,  PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    TRUE, FALSE },
  { "nf4_dq",     PIQ_DTYPE_NF4,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    TRUE, TRUE },
  { "nf8",        PIQ_DTYPE_NF8,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "fp8_e4m3",   PIQ_DTYPE_FP8_E4M3, PIQ_GRANULARITY_TENSOR, 0, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "fp8_e5m2",   PIQ_DTYPE_FP8_E5M2, PIQ_GRANULARITY_TENSOR, 0, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "int8_block", PIQ_DTYPE_INT8,     PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "int4_block", PIQ_DTYPE_INT4,     PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "binary",     PIQ_DTYPE_BINARY,   PIQ_GRANULARITY_BLOCK, 128, PIQ_DTYPE_F32, PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "q8_0",       PIQ_DTYPE_Q8_0,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_F16,  PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "q4_0",       PIQ_DTYPE_Q4_0,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_F16,  PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "msfp12",     PIQ_DTYPE_BFP3,     PIQ_GRANULARITY_BLOCK, 16, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
  { "msfp16",     PIQ_DTYPE_BFP7,     PIQ_GRANULARITY_BLOCK, 16, PIQ_DTYPE_E8M0, PIQ_SCALE_RULE_ABS_MAX,    FALSE, FALSE },
};

/**
 * piq_params_new_preset:
 * @name: a preset name: `mxfp8_e4m3`, `mxfp8_e5m2`, `mxfp6_e2m3`, `mxfp6_e3m2`,
 *   `mxfp4`, `mxint8` (OCP MX, blocks of 32, E8M0 floor rule), `nf4`, `fp4_bnb`
 *   (bitsandbytes: f32 absmax per 64, high nibble first), `nf4_dq` (`nf4` with
 *   double-quantized scales, as QLoRA), `nf8`, `fp8_e4m3`,
 *   `fp8_e5m2` (per-tensor cast, scale 1), `int8_block`, `int4_block`
 *   (symmetric, f32 scale per 64), `binary` (mean |x| per 128), `q8_0`, `q4_0`,
 *   `msfp12`, `msfp16` (block floating point, boxes of 16)
 * @error: return location for a #GError
 *
 * Creates parameters for a named format of the field.
 *
 * Returns: (transfer full) (nullable): new parameters, or %NULL with
 *   %PIQ_ERROR_UNSUPPORTED for an unknown name
 *
 * Since: 1.0
 */
PiqParams *
piq_params_new_preset (const char  *name,
                       GError     **error)
{
  g_return_val_if_fail (name != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (g_ascii_strcasecmp (presets[i].name, name) == 0)
      {
        PiqParams *self = piq_params_new (presets[i].dtype);
        self->granularity = presets[i].granularity;
        self->block_size = presets[i].block_size;
        self->scale_dtype = presets[i].scale_dtype;
        self->scale_rule = presets[i].rule;
        self->high_nibble_first = presets[i].high_nibble_first;
        self->double_quant = presets[i].double_quant;
        return self;
      }
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "no preset is called \"%s\"", name);
  return NULL;
}

/**
 * piq_params_list_presets:
 *
 * The names [ctor@Piq.Params.new_preset] accepts.
 *
 * Returns: (transfer container) (array zero-terminated=1): the names; free the
 *   array (not the strings) with g_free()
 *
 * Since: 1.0
 */
const char **
piq_params_list_presets (void)
{
  const char **names = g_new0 (const char *, G_N_ELEMENTS (presets) + 1);

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    names[i] = presets[i].name;
  return names;
}

guint
piq_params_effective_block_size (PiqParams *self)
{
  const PiqDtypeInfo *info = piq_dtype_info (self->dtype);

  if (info != NULL && info->bits == 0)
    return info->block_elems;
  if (self->block_size != 0)
    return self->block_size;
  return self->scale_dtype == PIQ_DTYPE_E8M0 ? 32 : 64;
}

static gboolean
validate_blocks (PiqParams           *self,
                 const PiqDtypeInfo  *info,
                 GError             **error)
{
  gboolean minifloat = self->dtype >= PIQ_DTYPE_FP8_E4M3 && self->dtype <= PIQ_DTYPE_FP4_E2M1;
  gboolean bfp = self->dtype >= PIQ_DTYPE_BFP2 && self->dtype <= PIQ_DTYPE_BFP8;

  if (info->bits == 0)
    {
      /* ggml blocks carry their own f16 scales, 32 elements each */
      if (self->granularity == PIQ_GRANULARITY_CHANNEL ||
          (self->block_size != 0 && self->block_size != info->block_elems))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "%s has blocks of %u elements; granularity per channel or block size %u "
                       "is not possible", info->name, info->block_elems, self->block_size);
          return FALSE;
        }
      return TRUE;
    }
  if (self->scale_rule == PIQ_SCALE_RULE_MEAN_STD)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "the mean/std rule derives per-tensor parameters only");
      return FALSE;
    }
  switch (self->scale_dtype)
    {
    case PIQ_DTYPE_F32:
    case PIQ_DTYPE_F16:
      if (bfp)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "%s boxes share an 8-bit exponent: the scale dtype must be e8m0, not %s",
                       info->name, piq_dtype_describe (self->scale_dtype));
          return FALSE;
        }
      if (self->scale_rule >= PIQ_SCALE_RULE_POW2_FLOOR)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "the power-of-two scale rules need E8M0 scales, not %s",
                       piq_dtype_describe (self->scale_dtype));
          return FALSE;
        }
      break;
    case PIQ_DTYPE_E8M0:
      if (bfp && self->scale_rule >= PIQ_SCALE_RULE_POW2_FLOOR)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "%s derives its shared exponent by its own rule (the box maximum's "
                       "exponent + 1); the power-of-two rules are for MX", info->name);
          return FALSE;
        }
      if (!minifloat && !bfp && !(info->kind == PIQ_KIND_INT && info->is_signed && info->bits >= 4 &&
                          info->bits <= 16))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "E8M0 scales go with the MX elements (fp8, fp6, fp4 and signed 4- to "
                       "16-bit integers), not %s", info->name);
          return FALSE;
        }
      break;
    default:
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "scales are stored as f32, f16 or e8m0, not %s",
                   piq_dtype_describe (self->scale_dtype));
      return FALSE;
    }
  if (self->double_quant &&
      (!(self->dtype == PIQ_DTYPE_NF4 || self->dtype == PIQ_DTYPE_FP4_BNB || self->dtype == PIQ_DTYPE_NF8) ||
       self->scale_dtype != PIQ_DTYPE_F32))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "double quantization applies to the f32 block scales of nf4, fp4_bnb and nf8, "
                   "not to %s with %s scales", info->name, piq_dtype_describe (self->scale_dtype));
      return FALSE;
    }
  if (self->zero_point != 0 && info->kind == PIQ_KIND_CODE)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT,
                   "zero point %" G_GINT64_FORMAT ": %s has no zero point, it must be 0",
                   self->zero_point, info->name);
      return FALSE;
    }
  if (info->kind == PIQ_KIND_INT && (info->min < G_MININT32 || info->max > G_MAXINT32) &&
      self->scale_rule == PIQ_SCALE_RULE_MIN_MAX)
    {
      /* per-block zero points are stored as int32 */
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "affine per-block %s has zero points beyond int32, the storage of "
                   "per-block zero points; use the abs-max rule or a narrower type", info->name);
      return FALSE;
    }
  return TRUE;
}

/**
 * piq_params_validate:
 * @self: parameters
 * @error: return location for a #GError
 *
 * Checks that the parameters can quantize: a quantized dtype; for per-tensor
 * parameters a finite positive scale and a zero point inside the dtype's range
 * (0 for the code formats); for per-channel and per-block ones a scale dtype
 * and scale rule that fit the format.
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
  if (info == NULL || (info->kind != PIQ_KIND_INT && info->kind != PIQ_KIND_CODE))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "cannot quantize to %s: the quantized dtype must be an integer type or a code format",
                   piq_dtype_describe (self->dtype));
      return FALSE;
    }
  if (info->bits == 0 || self->granularity != PIQ_GRANULARITY_TENSOR)
    return validate_blocks (self, info, error);
  if (self->double_quant)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "double quantization compresses per-block or per-channel scales; a per-tensor "
                   "scale has nothing to compress");
      return FALSE;
    }
  if (self->scale_rule >= PIQ_SCALE_RULE_POW2_FLOOR)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "the power-of-two scale rules need E8M0 per-block or per-channel scales");
      return FALSE;
    }
  if (info->kind == PIQ_KIND_CODE && self->zero_point != 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT,
                   "zero point %" G_GINT64_FORMAT ": %s has no zero point, it must be 0",
                   self->zero_point, info->name);
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

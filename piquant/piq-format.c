/* piq-format.c: what the bytes of a quantized tensor mean
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "piq-format.h"
#include "piq-format-private.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"

/**
 * PiqFormat:
 *
 * Everything that decides what a quantized tensor's bytes mean: the code
 * dtype, the granularity of its scales (per tensor, per channel along an
 * axis, per block along rows), how scales are stored, whether integers carry
 * a zero point, and the format options (nibble order, saturation, double
 * quantization).
 *
 * A format is immutable: its properties are set when it is constructed, so
 * a quantized tensor that holds it ([method@Piq.Tensor.get_format]) keeps its
 * meaning whatever happens to other objects. Options that do not apply to
 * the format are errors ([method@Piq.Format.validate]), never ignored.
 *
 * ```python
 * fmt = Piq.Format(dtype=Piq.Dtype.NF4, granularity=Piq.Granularity.BLOCK,
 *                  block_size=64, high_nibble_first=True)
 * fmt = Piq.Format.new_preset("nf4")        # the same format
 * ```
 *
 * Since: 1.0
 */
struct _PiqFormat
{
  GObject         parent_instance;
  PiqEngineFormat f;
};

G_DEFINE_FINAL_TYPE (PiqFormat, piq_format, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_DTYPE,
  PROP_GRANULARITY,
  PROP_AXIS,
  PROP_BLOCK_SIZE,
  PROP_SCALE_DTYPE,
  PROP_SYMMETRIC,
  PROP_SATURATE,
  PROP_HIGH_NIBBLE_FIRST,
  PROP_DOUBLE_QUANT,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
piq_format_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  PiqFormat *self = PIQ_FORMAT (object);

  switch (prop_id)
    {
    case PROP_DTYPE:             g_value_set_enum (value, self->f.dtype); break;
    case PROP_GRANULARITY:       g_value_set_enum (value, self->f.granularity); break;
    case PROP_AXIS:              g_value_set_int (value, self->f.axis); break;
    case PROP_BLOCK_SIZE:        g_value_set_uint (value, piq_format_get_block_size (self)); break;
    case PROP_SCALE_DTYPE:       g_value_set_enum (value, self->f.scale_dtype); break;
    case PROP_SYMMETRIC:         g_value_set_boolean (value, piq_format_get_symmetric (self)); break;
    case PROP_SATURATE:          g_value_set_boolean (value, self->f.saturate); break;
    case PROP_HIGH_NIBBLE_FIRST: g_value_set_boolean (value, self->f.high_nibble_first); break;
    case PROP_DOUBLE_QUANT:      g_value_set_boolean (value, self->f.double_quant); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_format_set_property (GObject      *object,
                         guint         prop_id,
                         const GValue *value,
                         GParamSpec   *pspec)
{
  PiqFormat *self = PIQ_FORMAT (object);

  switch (prop_id)
    {
    case PROP_DTYPE:             self->f.dtype = g_value_get_enum (value); break;
    case PROP_GRANULARITY:       self->f.granularity = g_value_get_enum (value); break;
    case PROP_AXIS:              self->f.axis = g_value_get_int (value); break;
    case PROP_BLOCK_SIZE:        self->f.block_size = g_value_get_uint (value); break;
    case PROP_SCALE_DTYPE:       self->f.scale_dtype = g_value_get_enum (value); break;
    case PROP_SYMMETRIC:         self->f.symmetric = g_value_get_boolean (value); break;
    case PROP_SATURATE:          self->f.saturate = g_value_get_boolean (value); break;
    case PROP_HIGH_NIBBLE_FIRST: self->f.high_nibble_first = g_value_get_boolean (value); break;
    case PROP_DOUBLE_QUANT:      self->f.double_quant = g_value_get_boolean (value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_format_class_init (PiqFormatClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags co = G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS;

  object_class->get_property = piq_format_get_property;
  object_class->set_property = piq_format_set_property;

  /**
   * PiqFormat:dtype:
   *
   * The code type: an integer type or a code format.
   *
   * Since: 1.0
   */
  properties[PROP_DTYPE] =
    g_param_spec_enum ("dtype", NULL, NULL, PIQ_TYPE_DTYPE, PIQ_DTYPE_UINT8, co);

  /**
   * PiqFormat:granularity:
   *
   * How many scales the quantized data has: one, one per channel along
   * [property@Piq.Format:axis], or one per block of
   * [property@Piq.Format:block-size] elements along rows.
   *
   * Since: 1.0
   */
  properties[PROP_GRANULARITY] =
    g_param_spec_enum ("granularity", NULL, NULL, PIQ_TYPE_GRANULARITY, PIQ_GRANULARITY_TENSOR, co);

  /**
   * PiqFormat:axis:
   *
   * The channel axis of a per-channel format; negative values count from
   * the last axis. 0, the default, is the output channels of an `[out, in]`
   * weight. Any other value needs per-channel granularity.
   *
   * Since: 1.0
   */
  properties[PROP_AXIS] =
    g_param_spec_int ("axis", NULL, NULL, -PIQ_ENGINE_MAX_DIMS, PIQ_ENGINE_MAX_DIMS - 1, 0, co);

  /**
   * PiqFormat:block-size:
   *
   * Elements per block of a per-block format, along the last axis. Reading
   * it gives the size in force; 0 when constructing means the format's
   * default (32 with E8M0 scales and for the ggml blocks, 64 otherwise). A
   * non-zero value needs per-block granularity.
   *
   * Since: 1.0
   */
  properties[PROP_BLOCK_SIZE] =
    g_param_spec_uint ("block-size", NULL, NULL, 0, G_MAXUINT, 0, co);

  /**
   * PiqFormat:scale-dtype:
   *
   * How per-channel and per-block scales are stored: f32, f16 or E8M0
   * (OCP MX, block floating point). Per-tensor scales are a double on the
   * tensor, so per-tensor formats keep the default, f32.
   *
   * Since: 1.0
   */
  properties[PROP_SCALE_DTYPE] =
    g_param_spec_enum ("scale-dtype", NULL, NULL, PIQ_TYPE_DTYPE, PIQ_DTYPE_F32, co);

  /**
   * PiqFormat:symmetric:
   *
   * Integers without a zero point (0 for signed types, the middle of the
   * range for unsigned ones). Affine integers (the default) carry one. Code
   * formats and E8M0-scaled integers are always symmetric, and read %TRUE.
   *
   * Since: 1.0
   */
  properties[PROP_SYMMETRIC] =
    g_param_spec_boolean ("symmetric", NULL, NULL, FALSE, co);

  /**
   * PiqFormat:saturate:
   *
   * FP8 with float scales: overflow saturates to ±max (the default) or gives
   * ±Inf (E5M2) / NaN (E4M3). %FALSE applies to FP8 with float scales only.
   *
   * Since: 1.0
   */
  properties[PROP_SATURATE] =
    g_param_spec_boolean ("saturate", NULL, NULL, TRUE, co);

  /**
   * PiqFormat:high-nibble-first:
   *
   * 4-bit codes: element 2k in the high nibble of byte k, as bitsandbytes
   * stores them. Applies to 4-bit codes only.
   *
   * Since: 1.0
   */
  properties[PROP_HIGH_NIBBLE_FIRST] =
    g_param_spec_boolean ("high-nibble-first", NULL, NULL, FALSE, co);

  /**
   * PiqFormat:double-quant:
   *
   * The f32 block scales of NF4, FP4 (bitsandbytes) and NF8 are themselves
   * quantized, as QLoRA does (see [Formats](formats.html)).
   *
   * Since: 1.0
   */
  properties[PROP_DOUBLE_QUANT] =
    g_param_spec_boolean ("double-quant", NULL, NULL, FALSE, co);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
piq_format_init (PiqFormat *self)
{
  self->f.dtype = PIQ_DTYPE_UINT8;
  self->f.scale_dtype = PIQ_DTYPE_F32;
  self->f.saturate = TRUE;
}

/**
 * piq_format_new:
 * @dtype: the code type
 *
 * A per-tensor format; integers are affine (they carry a zero point).
 *
 * Returns: (transfer full): a new format
 *
 * Since: 1.0
 */
PiqFormat *
piq_format_new (PiqDtype dtype)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, NULL);
}

/**
 * piq_format_new_symmetric:
 * @dtype: the code type
 *
 * A symmetric per-tensor format (integers without a zero point).
 *
 * Returns: (transfer full): a new format
 *
 * Since: 1.0
 */
PiqFormat *
piq_format_new_symmetric (PiqDtype dtype)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "symmetric", TRUE, NULL);
}

/**
 * piq_format_new_per_channel:
 * @dtype: the code type
 * @axis: the channel axis (negative: from the end)
 *
 * A per-channel format with f32 scales; integers are affine.
 *
 * Returns: (transfer full): a new format
 *
 * Since: 1.0
 */
PiqFormat *
piq_format_new_per_channel (PiqDtype dtype,
                            int      axis)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "granularity", PIQ_GRANULARITY_CHANNEL,
                       "axis", axis, NULL);
}

/**
 * piq_format_new_per_block:
 * @dtype: the code type
 * @block_size: elements per block (0: the format's default)
 * @scale_dtype: how the block scales are stored (f32, f16 or e8m0)
 *
 * A per-block format; integers with float scales are affine.
 *
 * Returns: (transfer full): a new format
 *
 * Since: 1.0
 */
PiqFormat *
piq_format_new_per_block (PiqDtype dtype,
                          guint    block_size,
                          PiqDtype scale_dtype)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "granularity", PIQ_GRANULARITY_BLOCK,
                       "block-size", block_size, "scale-dtype", scale_dtype, NULL);
}

/* The presets: each a format of the field, by the name its users know. Their recipe
 * is the default one (the format's own rule). */
typedef struct {
  const char     *name;
  PiqDtype        dtype;
  PiqGranularity  granularity;
  guint           block_size;
  PiqDtype        scale_dtype;
  gboolean        symmetric;
  gboolean        high_nibble_first;
  gboolean        double_quant;
} PiqPreset;

static const PiqPreset presets[] = {
  { "mxfp8_e4m3", PIQ_DTYPE_FP8_E4M3, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
  { "mxfp8_e5m2", PIQ_DTYPE_FP8_E5M2, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
  { "mxfp6_e2m3", PIQ_DTYPE_FP6_E2M3, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
  { "mxfp6_e3m2", PIQ_DTYPE_FP6_E3M2, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
  { "mxfp4",      PIQ_DTYPE_FP4_E2M1, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
  { "mxint8",     PIQ_DTYPE_INT8,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
  { "nf4",        PIQ_DTYPE_NF4,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE, TRUE,  FALSE },
  { "fp4_bnb",    PIQ_DTYPE_FP4_BNB,  PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE, TRUE,  FALSE },
  { "nf4_dq",     PIQ_DTYPE_NF4,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE, TRUE,  TRUE },
  { "nf8",        PIQ_DTYPE_NF8,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE, FALSE, FALSE },
  { "fp8_e4m3",   PIQ_DTYPE_FP8_E4M3, PIQ_GRANULARITY_TENSOR, 0, PIQ_DTYPE_F32,  TRUE, FALSE, FALSE },
  { "fp8_e5m2",   PIQ_DTYPE_FP8_E5M2, PIQ_GRANULARITY_TENSOR, 0, PIQ_DTYPE_F32,  TRUE, FALSE, FALSE },
  { "int8_block", PIQ_DTYPE_INT8,     PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE, FALSE, FALSE },
  { "int4_block", PIQ_DTYPE_INT4,     PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE, FALSE, FALSE },
  { "binary",     PIQ_DTYPE_BINARY,   PIQ_GRANULARITY_BLOCK, 128, PIQ_DTYPE_F32, TRUE, FALSE, FALSE },
  { "q8_0",       PIQ_DTYPE_Q8_0,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_F16,  TRUE, FALSE, FALSE },
  { "q4_0",       PIQ_DTYPE_Q4_0,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_F16,  TRUE, FALSE, FALSE },
  { "msfp12",     PIQ_DTYPE_BFP3,     PIQ_GRANULARITY_BLOCK, 16, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
  { "msfp16",     PIQ_DTYPE_BFP7,     PIQ_GRANULARITY_BLOCK, 16, PIQ_DTYPE_E8M0, TRUE, FALSE, FALSE },
};

/**
 * piq_format_new_preset:
 * @name: a preset name: `mxfp8_e4m3`, `mxfp8_e5m2`, `mxfp6_e2m3`, `mxfp6_e3m2`,
 *   `mxfp4`, `mxint8` (OCP MX, blocks of 32, E8M0 scales), `nf4`, `fp4_bnb`
 *   (bitsandbytes: f32 absmax per 64, high nibble first), `nf4_dq` (`nf4` with
 *   double-quantized scales, as QLoRA), `nf8`, `fp8_e4m3`, `fp8_e5m2` (per
 *   tensor; the scale is derived from the data unless a recipe gives it),
 *   `int8_block`, `int4_block` (symmetric, f32 scale per 64), `binary` (mean
 *   |x| per 128), `q8_0`, `q4_0`, `msfp12`, `msfp16` (block floating point,
 *   boxes of 16)
 * @error: return location for a #GError
 *
 * A named format of the field. Presets use the default recipe: the
 * format's own scale rule.
 *
 * Returns: (transfer full) (nullable): a new format, or %NULL with
 *   %PIQ_ERROR_UNSUPPORTED for an unknown name
 *
 * Since: 1.0
 */
PiqFormat *
piq_format_new_preset (const char  *name,
                       GError     **error)
{
  g_return_val_if_fail (name != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (g_ascii_strcasecmp (presets[i].name, name) == 0)
      return g_object_new (PIQ_TYPE_FORMAT, "dtype", presets[i].dtype,
                           "granularity", presets[i].granularity,
                           "block-size", presets[i].block_size,
                           "scale-dtype", presets[i].scale_dtype,
                           "symmetric", presets[i].symmetric,
                           "high-nibble-first", presets[i].high_nibble_first,
                           "double-quant", presets[i].double_quant, NULL);
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "no preset is called \"%s\"", name);
  return NULL;
}

/**
 * piq_format_list_presets:
 *
 * The names [ctor@Piq.Format.new_preset] accepts.
 *
 * Returns: (transfer container) (array zero-terminated=1): the names; free the
 *   array (not the strings) with g_free()
 *
 * Since: 1.0
 */
const char **
piq_format_list_presets (void)
{
  const char **names = g_new0 (const char *, G_N_ELEMENTS (presets) + 1);

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    names[i] = presets[i].name;
  return names;
}

const PiqEngineFormat *
piq_format_peek (PiqFormat *self)
{
  return &self->f;
}

PiqFormat *
piq_format_new_from_engine (const PiqEngineFormat *f)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", f->dtype, "granularity", f->granularity,
                       "axis", f->axis, "block-size", f->block_size,
                       "scale-dtype", f->scale_dtype, "symmetric", f->symmetric,
                       "saturate", f->saturate, "high-nibble-first", f->high_nibble_first,
                       "double-quant", f->double_quant, NULL);
}

/**
 * piq_format_get_dtype:
 * @self: a format
 *
 * The code type of the format.
 *
 * Returns: the code type
 *
 * Since: 1.0
 */
PiqDtype
piq_format_get_dtype (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), PIQ_DTYPE_UINT8);
  return self->f.dtype;
}

/**
 * piq_format_get_granularity:
 * @self: a format
 *
 * How many scales the quantized data has.
 *
 * Returns: the granularity of the scales
 *
 * Since: 1.0
 */
PiqGranularity
piq_format_get_granularity (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), PIQ_GRANULARITY_TENSOR);
  return self->f.granularity;
}

/**
 * piq_format_get_axis:
 * @self: a format
 *
 * The channel axis of a per-channel format.
 *
 * Returns: the channel axis, as given (negative: from the end)
 *
 * Since: 1.0
 */
int
piq_format_get_axis (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), 0);
  return self->f.axis;
}

/**
 * piq_format_get_block_size:
 * @self: a format
 *
 * The block size in force: the ggml blocks' 32, the size given, or the
 * default (32 with E8M0 scales, 64 otherwise). Meaningful for per-block
 * formats.
 *
 * Returns: elements per block
 *
 * Since: 1.0
 */
guint
piq_format_get_block_size (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), 0);
  return piq_engine_block_size (&self->f);
}

/**
 * piq_format_get_scale_dtype:
 * @self: a format
 *
 * How per-channel and per-block scales are stored.
 *
 * Returns: how per-channel and per-block scales are stored
 *
 * Since: 1.0
 */
PiqDtype
piq_format_get_scale_dtype (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), PIQ_DTYPE_F32);
  return self->f.scale_dtype;
}

/**
 * piq_format_get_symmetric:
 * @self: a format
 *
 * Whether the quantized data has no zero point.
 *
 * Returns: %TRUE when the quantized data has no zero point: symmetric
 *   integers, E8M0-scaled integers and every code format
 *
 * Since: 1.0
 */
gboolean
piq_format_get_symmetric (PiqFormat *self)
{
  const PiqDtypeInfo *info;

  g_return_val_if_fail (PIQ_IS_FORMAT (self), FALSE);
  info = piq_dtype_info (self->f.dtype);
  return info == NULL || info->kind != PIQ_KIND_INT || !piq_engine_has_zero_points (&self->f);
}

/**
 * piq_format_has_zero_points:
 * @self: a format
 *
 * Whether quantized data of this format carries zero points.
 *
 * Returns: %TRUE when quantized data carries zero points (affine integers):
 *   int32 per channel or block, or the per-tensor
 *   [method@Piq.Tensor.get_zero_point]
 *
 * Since: 1.0
 */
gboolean
piq_format_has_zero_points (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), FALSE);
  return piq_engine_has_zero_points (&self->f);
}

/**
 * piq_format_get_saturate:
 * @self: a format
 *
 * Whether FP8 overflow saturates.
 *
 * Returns: whether FP8 overflow saturates
 *
 * Since: 1.0
 */
gboolean
piq_format_get_saturate (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), TRUE);
  return self->f.saturate;
}

/**
 * piq_format_get_high_nibble_first:
 * @self: a format
 *
 * Whether 4-bit codes put element 2k in the high nibble of byte k.
 *
 * Returns: whether 4-bit codes put element 2k in the high nibble
 *
 * Since: 1.0
 */
gboolean
piq_format_get_high_nibble_first (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), FALSE);
  return self->f.high_nibble_first;
}

/**
 * piq_format_get_double_quant:
 * @self: a format
 *
 * Whether the block scales are double-quantized.
 *
 * Returns: whether the block scales are double-quantized
 *
 * Since: 1.0
 */
gboolean
piq_format_get_double_quant (PiqFormat *self)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (self), FALSE);
  return self->f.double_quant;
}

/**
 * piq_format_validate:
 * @self: a format
 * @error: return location for a #GError
 *
 * Checks that the format can quantize: a quantized dtype, a granularity it
 * has, a scale dtype that fits it, and no option that does not apply to it.
 * Every operation runs the same checks.
 *
 * Returns: %TRUE if the format is usable
 *
 * Since: 1.0
 */
gboolean
piq_format_validate (PiqFormat  *self,
                     GError    **error)
{
  PiqEngineError e;

  g_return_val_if_fail (PIQ_IS_FORMAT (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (piq_engine_check_format (&self->f, &e))
    return TRUE;
  piq_set_engine_error (error, &e);
  return FALSE;
}

/**
 * piq_format_equal:
 * @a: a format
 * @b: another format
 *
 * Whether two formats give bytes the same meaning (the same properties,
 * block sizes compared as in force).
 *
 * Returns: %TRUE if they are equal
 *
 * Since: 1.0
 */
gboolean
piq_format_equal (PiqFormat *a,
                  PiqFormat *b)
{
  g_return_val_if_fail (PIQ_IS_FORMAT (a), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (b), FALSE);

  return a->f.dtype == b->f.dtype && a->f.granularity == b->f.granularity &&
         a->f.axis == b->f.axis && a->f.scale_dtype == b->f.scale_dtype &&
         piq_format_get_block_size (a) == piq_format_get_block_size (b) &&
         piq_format_get_symmetric (a) == piq_format_get_symmetric (b) &&
         a->f.saturate == b->f.saturate && a->f.high_nibble_first == b->f.high_nibble_first &&
         a->f.double_quant == b->f.double_quant;
}

/**
 * piq_format_to_string:
 * @self: a format
 *
 * A one-line description, for people: `nf4 per block of 64 (f32 scales,
 * high nibble first)`.
 *
 * Returns: (transfer full): the description
 *
 * Since: 1.0
 */
char *
piq_format_to_string (PiqFormat *self)
{
  GString *s;
  const char *sep = " (";

  g_return_val_if_fail (PIQ_IS_FORMAT (self), NULL);

  s = g_string_new (piq_dtype_describe (self->f.dtype));
  switch (self->f.granularity)
    {
    case PIQ_GRANULARITY_TENSOR:
      g_string_append (s, " per tensor");
      break;
    case PIQ_GRANULARITY_CHANNEL:
      g_string_append_printf (s, " per channel of axis %d", self->f.axis);
      break;
    default:
      g_string_append_printf (s, " per block of %u", piq_format_get_block_size (self));
    }
  if (self->f.granularity != PIQ_GRANULARITY_TENSOR)
    {
      g_string_append_printf (s, "%s%s scales", sep, piq_dtype_describe (self->f.scale_dtype));
      sep = ", ";
    }
  if (piq_engine_has_zero_points (&self->f))
    {
      g_string_append_printf (s, "%saffine", sep);
      sep = ", ";
    }
  else if (self->f.symmetric && piq_dtype_info (self->f.dtype) != NULL &&
           piq_dtype_info (self->f.dtype)->kind == PIQ_KIND_INT)
    {
      g_string_append_printf (s, "%ssymmetric", sep);
      sep = ", ";
    }
  if (!self->f.saturate)
    {
      g_string_append_printf (s, "%snot saturating", sep);
      sep = ", ";
    }
  if (self->f.high_nibble_first)
    {
      g_string_append_printf (s, "%shigh nibble first", sep);
      sep = ", ";
    }
  if (self->f.double_quant)
    {
      g_string_append_printf (s, "%sdouble-quantized scales", sep);
      sep = ", ";
    }
  if (*sep == ',')
    g_string_append_c (s, ')');
  return g_string_free (s, FALSE);
}

/**
 * piq_format_get_sizes:
 * @self: a format
 * @shape: (array length=n_dims): the tensor's shape
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @codes_size: (out) (optional): the bytes of the codes
 * @scales_size: (out) (optional): the bytes of the per-channel or per-block
 *   scales (0 for per-tensor formats and the ggml blocks)
 * @zero_points_size: (out) (optional): the bytes of their int32 zero points
 *   (0 unless affine integers per channel or block)
 * @error: return location for a #GError
 *
 * What quantizing a tensor of @shape into this format writes: the buffers
 * [method@Piq.Quantizer.quantize_raw] takes.
 *
 * Returns: %TRUE if the format is usable for @shape
 *
 * Since: 1.0
 */
gboolean
piq_format_get_sizes (PiqFormat      *self,
                      const guint64  *shape,
                      guint           n_dims,
                      gsize          *codes_size,
                      gsize          *scales_size,
                      gsize          *zero_points_size,
                      GError        **error)
{
  PiqEngineError e;

  g_return_val_if_fail (PIQ_IS_FORMAT (self), FALSE);
  g_return_val_if_fail (shape != NULL || n_dims == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (piq_engine_sizes (&self->f, shape, n_dims, codes_size, scales_size, zero_points_size, &e))
    return TRUE;
  piq_set_engine_error (error, &e);
  return FALSE;
}

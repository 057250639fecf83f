/* piquant-quantize.c: `piquant quantize`: a .npy or raw float file into a .piqt container
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "piquant-tool.h"
#include "piq-io-npy-private.h"
#include "piq-io-piqt-private.h"

/* ---- piquant quantize ---- */

typedef struct {
  gboolean     have_dtype;
  PiqDtype     dtype;
  char        *preset;
  gboolean     have_granularity;
  PiqGranularity granularity;
  gboolean     have_axis;
  int          axis;
  gboolean     symmetric;
  gboolean     have_block_size;
  guint        block_size;
  gboolean     have_scale_dtype;
  PiqDtype     scale_dtype;
  gboolean     double_quant;
  gboolean     have_input_dtype;
  PiqDtype     input_dtype;
  FileFormat   input_format;
  PiqRoundMode round_mode;
  guint64      seed;
  gboolean     have_scale_rule;
  PiqScaleRule scale_rule;
  gboolean     no_include_zero;
  gboolean     have_scale;
  double       scale;
  gboolean     have_zero_point;
  gint64       zero_point;
  guint        n_threads;
  gboolean     no_progress;
  gboolean     quiet;
} QuantizeOptions;

static gboolean
parse_q_dtype (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  PiqDtype dtype;

  /* The dtype names (fp8_e4m3, q8_0), as the container and the presets
   * spell them; the GEnum nicks (fp8-e4m3) as well. */
  if (piq_dtype_from_name (value, &dtype) && piq_dtype_is_quantized (dtype))
    v = dtype;
  else if (!parse_enum_option (PIQ_TYPE_DTYPE, accept_quantized, option_name, value, &v, NULL))
    {
      g_autoptr(GEnumClass) klass = g_type_class_ref (PIQ_TYPE_DTYPE);
      g_autoptr(GString) names = g_string_new (NULL);

      for (guint i = 0; i < klass->n_values; i++)
        if (piq_dtype_is_quantized (klass->values[i].value))
          g_string_append_printf (names, "%s%s", names->len > 0 ? ", " : "",
                                  piq_dtype_get_name (klass->values[i].value));
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be one of %s, not '%s'", option_name, names->str, value);
      return FALSE;
    }
  options->dtype = v;
  options->have_dtype = TRUE;
  return TRUE;
}

static gboolean
parse_q_input_dtype (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_DTYPE, accept_float, option_name, value, &v, error))
    return FALSE;
  options->input_dtype = v;
  options->have_input_dtype = TRUE;
  return TRUE;
}

static gboolean
parse_q_input_format (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_format_value (option_name, value, &((QuantizeOptions *) data)->input_format, error);
}

static gboolean
parse_q_rounding (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_ROUND_MODE, NULL, option_name, value, &v, error))
    return FALSE;
  options->round_mode = v;
  return TRUE;
}

static gboolean
parse_q_seed (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_unsigned_option (option_name, value, 0, G_MAXUINT64,
                                &((QuantizeOptions *) data)->seed, error);
}

static gboolean
parse_q_scale_rule (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_SCALE_RULE, NULL, option_name, value, &v, error))
    return FALSE;
  options->scale_rule = v;
  options->have_scale_rule = TRUE;
  return TRUE;
}

static gboolean
parse_q_scale (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  char *end;
  double scale = g_ascii_strtod (value, &end);

  if (*value == '\0' || *end != '\0' || !isfinite (scale) || scale <= 0.0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs a finite number greater than 0, not '%s'", option_name, value);
      return FALSE;
    }
  options->scale = scale;
  options->have_scale = TRUE;
  return TRUE;
}

static gboolean
parse_q_zero_point (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;

  if (!g_ascii_string_to_signed (value, 10, G_MININT64, G_MAXINT64, &options->zero_point, NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs a whole number, not '%s'", option_name, value);
      return FALSE;
    }
  options->have_zero_point = TRUE;
  return TRUE;
}

static gboolean
parse_q_preset (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  g_autoptr(PiqFormat) format = piq_format_new_preset (value, NULL);

  if (format == NULL)
    {
      g_autofree const char **names = piq_format_list_presets ();
      g_autofree char *list = g_strjoinv (", ", (char **) names);

      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s: no preset is called '%s' (presets: %s)", option_name, value, list);
      return FALSE;
    }
  g_free (options->preset);
  options->preset = g_strdup (value);
  return TRUE;
}

static gboolean
parse_q_granularity (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_GRANULARITY, NULL, option_name, value, &v, NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be tensor, channel or block, not '%s'", option_name, value);
      return FALSE;
    }
  options->granularity = v;
  options->have_granularity = TRUE;
  return TRUE;
}

static gboolean
parse_q_axis (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  gint64 axis;

  if (!g_ascii_string_to_signed (value, 10, -PIQ_MAX_DIMS, PIQ_MAX_DIMS - 1, &axis, NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs a whole number from %d to %d, not '%s'", option_name,
                   -PIQ_MAX_DIMS, PIQ_MAX_DIMS - 1, value);
      return FALSE;
    }
  options->axis = (int) axis;
  options->have_axis = TRUE;
  return TRUE;
}

static gboolean
parse_q_block_size (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  guint64 n;

  if (!parse_unsigned_option (option_name, value, 1, G_MAXUINT, &n, error))
    return FALSE;
  options->block_size = (guint) n;
  options->have_block_size = TRUE;
  return TRUE;
}

static gboolean
parse_q_scale_dtype (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  PiqDtype dtype;

  if (!piq_dtype_from_name (value, &dtype) ||
      (dtype != PIQ_DTYPE_F32 && dtype != PIQ_DTYPE_F16 && dtype != PIQ_DTYPE_E8M0))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be f32, f16 or e8m0, not '%s'", option_name, value);
      return FALSE;
    }
  options->scale_dtype = dtype;
  options->have_scale_dtype = TRUE;
  return TRUE;
}

static gboolean
parse_q_threads (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_file_threads (option_name, value, &((QuantizeOptions *) data)->n_threads, error);
}

static const GOptionEntry quantize_entries[] = {
  { "dtype", 'd', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_dtype,
    "Quantized type: an integer type (uint2 … int64), a float or code format (fp8_e4m3, "
    "fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4_e2m1, nf4, fp4_bnb, nf8, binary), a ggml type (q8_0, "
    "q4_0) or block floating point (bfp2 … bfp8) (default uint8, or the preset's)", "TYPE" },
  { "preset", 'p', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_preset,
    "A named format (mxfp4, nf4, nf4_dq, q8_0, msfp16, …; `piquant info` lists them with "
    "its presets option): its dtype, granularity, block size, scale dtype, nibble order and "
    "double quantization; options given explicitly override it", "NAME" },
  { "input-dtype", 'i', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_input_dtype,
    "Element type of the input: f32, f64, f16 or bf16; needed for raw input and for "
    "bf16 stored in a .npy as uint16 ('<u2')", "TYPE" },
  { "input-format", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_input_format,
    "npy or raw (default: npy when INPUT ends in .npy or starts with the .npy magic)", "FORMAT" },
  { "rounding", 'r', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_rounding,
    "Rounding mode: nearest (ties to even) or stochastic (default nearest)", "MODE" },
  { "seed", 's', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_seed,
    "Seed of stochastic rounding (default 0: a fresh one, recorded in OUTPUT)", "S" },
  { "scale-rule", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_scale_rule,
    "How the scales and zero points follow from the data; the rule must apply to the format: "
    "min-max or mean-std (affine integers; mean-std per tensor only), abs-max (symmetric "
    "integers, code formats), pow2-floor, pow2-ceil, pow2-even or pow2-rceil (e8m0 scales); "
    "for an integer type, abs-max makes the format symmetric and min-max or mean-std affine "
    "(default: the format's own rule)", "RULE" },
  { "no-include-zero", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "With min-max, do not widen the range to include 0", NULL },
  { "scale", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_scale,
    "Use this scale instead of computing one from the data", "S" },
  { "zero-point", 'z', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_zero_point,
    "Zero point to go with --scale (default 0)", "Z" },
  { "granularity", 'g', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_granularity,
    "What one scale covers: tensor (default), channel (each index of --axis of INPUT's shape) "
    "or block (--block-size consecutive elements along the last axis, never across rows)", "G" },
  { "axis", 'a', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_axis,
    "For channel: the axis of INPUT's shape that the scales run along, negative from the end "
    "(default 0: the rows of a 2-D array)", "AXIS" },
  { "symmetric", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Integer types: no zero point (0, or the middle of an unsigned range) instead of an affine "
    "one", NULL },
  { "block-size", 'b', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_block_size,
    "For block: elements per block (default 32 with e8m0 scales, else 64, or the preset's)",
    "N" },
  { "scale-dtype", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_scale_dtype,
    "How per-channel and per-block scales are stored: f32 (default), f16 or e8m0", "TYPE" },
  { "double-quant", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Store the f32 per-block scales double-quantized (bitsandbytes' compress_statistics)",
    NULL },
  { "threads", 't', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_threads,
    "Number of threads (default 0 = one per processor)", "T" },
  { "no-progress", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Show no progress bar, even on a terminal", NULL },
  { "quiet", 'q', G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Print no summary line on success", NULL },
  G_OPTION_ENTRY_NULL
};

/* The input's element type, shape and data offset: from the .npy header, or
 * from --input-dtype and the file size for raw input. */
typedef struct {
  PiqDtype dtype;
  guint64  n_elements;
  guint    n_dims;
  guint64  shape[PIQ_NPY_MAX_DIMS];
  gsize    data_bytes;
} InputArray;

static gboolean
looks_like_npy (Input *input)
{
  guint8 magic[PIQ_NPY_MAGIC_LEN];
  gboolean is_npy;

  if (!input->regular)
    return FALSE;
  is_npy = fread (magic, 1, sizeof magic, input->file) == sizeof magic &&
           piq_npy_has_magic (magic, sizeof magic);
  rewind (input->file);
  return is_npy;
}

static gboolean
open_npy_input (Input *input, const QuantizeOptions *options, InputArray *array, GError **error)
{
  PiqNpyHeader header;
  g_autoptr(GError) local_error = NULL;

  if (!piq_npy_read_header (input->file, input->name, &header, error))
    return FALSE;

  if (header.dtype == PIQ_DTYPE_UINT16)
    {
      /* numpy has no bfloat16: its bits travel as uint16. */
      if (!options->have_input_dtype || options->input_dtype != PIQ_DTYPE_BF16)
        {
          g_set_error (error, usage_quark (), 0,
                       "%s holds uint16 data ('%s'); if it is bfloat16, say so with "
                       "--input-dtype bf16", input->name, header.descr);
          return FALSE;
        }
      array->dtype = PIQ_DTYPE_BF16;
    }
  else if (!piq_dtype_is_float (header.dtype))
    return file_error (error, input->name, "holds %s data ('%s'); piquant quantizes f32, f64, "
                       "f16 or bf16 arrays", piq_dtype_get_name (header.dtype), header.descr);
  else if (options->have_input_dtype && options->input_dtype != header.dtype)
    {
      g_set_error (error, usage_quark (), 0,
                   "--input-dtype %s does not match %s, which holds %s ('%s')",
                   piq_dtype_get_name (options->input_dtype), input->name,
                   piq_dtype_get_name (header.dtype), header.descr);
      return FALSE;
    }
  else
    array->dtype = header.dtype;

  array->n_elements = header.n_elements;
  array->n_dims = header.n_dims;
  memcpy (array->shape, header.shape, sizeof array->shape);
  if (!piq_dtype_get_size_for_n (array->dtype, array->n_elements, &array->data_bytes, &local_error))
    return file_error (error, input->name, "%s", local_error->message);
  /* Bytes after the array are allowed: numpy.save() can append arrays to
   * one file, and numpy.load() reads the first. */
  if (input->regular && input->size - header.data_offset < array->data_bytes)
    return file_error (error, input->name, "the file is too short: its header announces %"
                       G_GSIZE_FORMAT " bytes of data, %" G_GUINT64_FORMAT " follow the header",
                       array->data_bytes, input->size - header.data_offset);
  return TRUE;
}

static gboolean
open_raw_input (Input *input, const QuantizeOptions *options, InputArray *array, GError **error)
{
  guint element_size;

  if (!options->have_input_dtype)
    {
      g_set_error (error, usage_quark (), 0,
                   "%s is read as raw data, which needs --input-dtype (f32, f64, f16 or bf16)",
                   input->name);
      return FALSE;
    }
  if (!input->regular)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                   "%s is not a regular file: raw input must be one, as its size gives the "
                   "element count", input->name);
      return FALSE;
    }
  array->dtype = options->input_dtype;
  element_size = piq_dtype_get_bits (array->dtype) / 8;
  if (input->size % element_size != 0)
    return file_error (error, input->name, "%" G_GUINT64_FORMAT " bytes is not a whole number "
                       "of %u-byte %s elements", input->size, element_size,
                       piq_dtype_get_name (array->dtype));
  array->n_elements = input->size / element_size;
  array->n_dims = 1;
  array->shape[0] = array->n_elements;
  array->data_bytes = (gsize) input->size;
  return TRUE;
}

/* The format the options ask for, before the input is known: the preset's
 * (or the type's own), overridden by the explicit options. The ggml types
 * exist per block only. A preset's block size stays only while its
 * granularity does, its nibble order only on 4-bit codes. For integers without E8M0 scales, an explicit --scale-rule abs-max
 * asks for a symmetric format and min-max or mean-std for an affine one, as
 * those rules apply to nothing else. */
static PiqFormat *
build_quantize_format (const QuantizeOptions *options)
{
  g_autoptr(PiqFormat) base = options->preset != NULL
                              ? piq_format_new_preset (options->preset, NULL)
                              : piq_format_new (options->dtype);
  PiqDtype base_dtype = piq_format_get_dtype (base);
  PiqDtype dtype = options->have_dtype ? options->dtype : base_dtype;
  PiqGranularity base_granularity = piq_format_get_granularity (base);
  PiqGranularity granularity = options->have_granularity ? options->granularity
                                : piq_dtype_get_bits (dtype) == 0 ? PIQ_GRANULARITY_BLOCK
                                : base_granularity;
  PiqDtype scale_dtype = options->have_scale_dtype ? options->scale_dtype
                                                   : piq_format_get_scale_dtype (base);
  guint block_size = 0;
  gboolean symmetric = FALSE;

  if (options->have_block_size)
    block_size = options->block_size;
  else if (granularity == PIQ_GRANULARITY_BLOCK && base_granularity == PIQ_GRANULARITY_BLOCK)
    block_size = piq_format_get_block_size (base);

  if (piq_dtype_get_range (dtype, NULL, NULL) &&
      (granularity == PIQ_GRANULARITY_TENSOR || scale_dtype != PIQ_DTYPE_E8M0))
    {
      if (piq_dtype_get_range (base_dtype, NULL, NULL))
        symmetric = piq_format_get_symmetric (base);
      if (options->have_scale_rule && options->scale_rule == PIQ_SCALE_RULE_ABS_MAX)
        symmetric = TRUE;
      else if (options->have_scale_rule && (options->scale_rule == PIQ_SCALE_RULE_MIN_MAX ||
                                            options->scale_rule == PIQ_SCALE_RULE_MEAN_STD))
        symmetric = FALSE;
    }
  if (options->symmetric)
    symmetric = TRUE;

  return g_object_new (PIQ_TYPE_FORMAT,
                       "dtype", dtype,
                       "granularity", granularity,
                       "axis", options->axis,
                       "block-size", block_size,
                       "scale-dtype", scale_dtype,
                       "symmetric", symmetric,
                       "saturate", piq_format_get_saturate (base),
                       "high-nibble-first", piq_format_get_high_nibble_first (base) &&
                                            piq_dtype_get_bits (dtype) == 4,
                       "double-quant", options->double_quant || piq_format_get_double_quant (base),
                       NULL);
}

/* How the scales are chosen: the given per-tensor scale (and, for affine
 * integers or when one was given, zero point), or a rule. */
static PiqRecipe *
build_quantize_recipe (const QuantizeOptions *options, PiqFormat *format)
{
  PiqRecipe *recipe;

  if (options->have_scale)
    recipe = options->have_zero_point || (piq_dtype_get_range (piq_format_get_dtype (format),
                                                               NULL, NULL) &&
                                          !piq_format_get_symmetric (format))
             ? piq_recipe_new_affine (options->scale, options->zero_point)
             : piq_recipe_new_fixed (options->scale);
  else
    {
      recipe = piq_recipe_new ();
      piq_recipe_set_scale_rule (recipe, options->scale_rule);
      if (options->no_include_zero)
        piq_recipe_set_include_zero (recipe, FALSE);
    }
  piq_recipe_set_round_mode (recipe, options->round_mode);
  piq_recipe_set_seed (recipe, options->seed);
  return recipe;
}

/* The rule that quantize applies: @rule, or for PIQ_SCALE_RULE_DEFAULT the
 * format's own (docs/overview.md, "Recipes"): the OCP floor rule for E8M0
 * scales, min/max for affine integers, abs-max for symmetric integers and the
 * code formats. */
static PiqScaleRule
effective_scale_rule (PiqFormat *format, PiqScaleRule rule)
{
  if (rule != PIQ_SCALE_RULE_DEFAULT)
    return rule;
  if (piq_format_get_granularity (format) != PIQ_GRANULARITY_TENSOR &&
      piq_format_get_scale_dtype (format) == PIQ_DTYPE_E8M0)
    return PIQ_SCALE_RULE_POW2_FLOOR;
  if (piq_dtype_get_range (piq_format_get_dtype (format), NULL, NULL) &&
      !piq_format_get_symmetric (format))
    return PIQ_SCALE_RULE_MIN_MAX;
  return PIQ_SCALE_RULE_ABS_MAX;
}

/* Whether quantize derives one scale and zero point for the whole tensor
 * (by compute_params, or from --scale) rather than scales per channel or
 * block (or none: the ggml types keep theirs inside their blocks). */
static gboolean
has_tensor_scale (PiqFormat *format)
{
  return piq_format_get_granularity (format) == PIQ_GRANULARITY_TENSOR &&
         piq_dtype_get_bits (piq_format_get_dtype (format)) > 0;
}

/* What the library refuses in the options once it sees the input (a rule
 * that does not apply to the format, a zero point outside the type's range,
 * an axis the input lacks) is a usage error; the data's own faults (NaN, no
 * elements) are not. */
static void
prefix_quantize_error (GError **error, const QuantizeOptions *options, const char *input_name)
{
  GError *e = *error;

  if (e->domain == PIQ_ERROR &&
      (e->code == PIQ_ERROR_UNSUPPORTED || e->code == PIQ_ERROR_INVALID_ZERO_POINT ||
       (e->code == PIQ_ERROR_INVALID_SCALE && options->have_scale)))
    {
      *error = g_error_new (usage_quark (), 0, "%s: %s", input_name, e->message);
      g_error_free (e);
    }
  else
    g_prefix_error (error, "%s: ", input_name);
}

typedef struct {
  const QuantizeOptions *options;
  PiqFormat             *format;
  PiqRecipe             *recipe;
  PiqQuantizer          *quantizer;
} CheckpointJob;

/* Every 2-D float tensor (a weight matrix) is quantized, each deriving its
 * own scales; the rest is kept. */
static PiqTensor *
quantize_weight (PiqTensor *t, gpointer data, GError **error)
{
  CheckpointJob *job = data;
  g_autoptr(PiqRecipe) r = NULL;

  if (piq_tensor_get_format (t) != NULL || !piq_dtype_is_float (piq_tensor_get_dtype (t)) ||
      piq_tensor_get_n_dims (t) != 2)
    return g_object_ref (t);
  r = piq_recipe_copy (job->recipe);
  if (has_tensor_scale (job->format) && !job->options->have_scale &&
      !piq_quantizer_compute_params (job->quantizer, job->format, r, t, error))
    return NULL;
  return piq_quantizer_quantize_new (job->quantizer, job->format, r, t, error);
}

/* A safetensors checkpoint: its weight matrices quantized, the other tensors
 * (biases, norms) and the metadata as they are, into a safetensors file. */
static gboolean
run_quantize_safetensors (const QuantizeOptions *options,
                          PiqFormat             *format,
                          PiqRecipe             *recipe,
                          const char            *input_name,
                          const char            *output_name,
                          Progress              *progress,
                          Summary               *summary,
                          GError               **error)
{
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  CheckpointJob job = { options, format, recipe, quantizer };
  g_autofree char *fmt = piq_format_to_string (format);
  g_autofree char *label = g_strdup_printf ("quantizing the 2-D tensors to %s",
                                            piq_dtype_get_name (piq_format_get_dtype (format)));
  g_autofree char *what = g_strdup_printf ("2-D tensors to %s", fmt);

  if (options->have_input_dtype)
    {
      g_set_error (error, usage_quark (), 0, "%s is a safetensors file, which records each "
                   "tensor's dtype: --input-dtype does not apply", input_name);
      return FALSE;
    }
  piq_quantizer_set_n_threads (quantizer, options->n_threads);
  return convert_safetensors (input_name, output_name, quantize_weight, &job, progress,
                              !options->no_progress, label, what, summary, error);
}

static gboolean
run_quantize (const QuantizeOptions *options,
              PiqFormat             *format,
              PiqRecipe             *recipe,
              const char            *input_name,
              const char            *output_name,
              Progress              *progress,
              Summary               *summary,
              GError               **error)
{
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  g_autoptr(PiqTensor) src = NULL;
  g_autoptr(PiqTensor) dst = NULL;
  g_auto(PiqBufferPtr) src_data = NULL;
  g_autofree guint8 *header = NULL;
  g_autoptr(GBytes) scales = NULL;
  g_autoptr(GBytes) zero_points = NULL;
  g_autoptr(GError) local_error = NULL;
  g_auto(PiqContainer) container = { 0 };
  PiqDtype dtype = piq_format_get_dtype (format);
  gboolean compute = has_tensor_scale (format) && !options->have_scale;
  FileFormat file_format = options->input_format;
  Input input = { 0 };
  Output output;
  InputArray array = { 0 };
  guint64 shape[PIQ_MAX_DIMS];
  guint n_dims = 0;
  gconstpointer dst_data;
  gsize dst_bytes, header_len;
  gboolean ok;

  if (!check_little_endian (error) || !input_open (&input, input_name, error) ||
      input_is_output (&input, output_name, error))
    {
      input_close (&input);
      return FALSE;
    }
  if (file_format == FILE_FORMAT_AUTO && looks_like_safetensors (&input))
    {
      input_close (&input);
      return run_quantize_safetensors (options, format, recipe, input_name, output_name,
                                       progress, summary, error);
    }
  if (file_format == FILE_FORMAT_AUTO)
    file_format = has_npy_suffix (input_name) || looks_like_npy (&input) ? FILE_FORMAT_NPY
                                                                          : FILE_FORMAT_RAW;
  ok = file_format == FILE_FORMAT_NPY ? open_npy_input (&input, options, &array, error)
                                      : open_raw_input (&input, options, &array, error);
  if (ok && piq_format_get_granularity (format) == PIQ_GRANULARITY_CHANNEL &&
      array.n_dims > PIQ_MAX_DIMS)
    {
      g_set_error (error, usage_quark (), 0, "%s has %u dimensions; --granularity channel takes "
                   "at most %d", input_name, array.n_dims, PIQ_MAX_DIMS);
      ok = FALSE;
    }
  if (ok)
    piq_container_library_shape (array.shape, array.n_dims, shape, &n_dims);
  if (ok && !piq_format_get_sizes (format, shape, n_dims, &dst_bytes, NULL, NULL, &local_error))
    {
      /* The options do not fit this input (an axis it does not have, say). */
      g_set_error (error, usage_quark (), 0, "%s: %s", input_name, local_error->message);
      ok = FALSE;
    }
  if (ok)
    {
      progress_init (progress, g_get_prgname (), !options->no_progress, array.data_bytes,
                     compute ? 4 : 3);
      src_data = buffer_alloc (array.data_bytes, input_name, error);
      ok = src_data != NULL;
    }
  if (ok)
    {
      progress_begin (progress, array.data_bytes, "reading %s", input_name);
      ok = input_read (&input, src_data, array.data_bytes, progress, error);
    }
  input_close (&input);
  if (!ok)
    return FALSE;

  src = piq_tensor_new_for_address (array.dtype, shape, n_dims, (guintptr) src_data,
                                    array.data_bytes, 0, FALSE, error);
  if (src == NULL)
    return FALSE;

  piq_quantizer_set_n_threads (quantizer, options->n_threads);
  if (compute)
    {
      progress_begin (progress, 0, "computing the scale and zero point");
      if (!piq_quantizer_compute_params (quantizer, format, recipe, src, error))
        {
          prefix_quantize_error (error, options, input_name);
          return FALSE;
        }
    }

  dst = piq_tensor_new_quantized (format, shape, n_dims, error);
  if (dst == NULL)
    return FALSE;
  progress_begin (progress, 0, "quantizing to %s", piq_dtype_get_name (dtype));
  if (!piq_quantizer_quantize (quantizer, recipe, src, dst, error))
    {
      prefix_quantize_error (error, options, input_name);
      return FALSE;
    }
  g_clear_object (&src);
  g_clear_pointer (&src_data, buffer_free);

  /* What the quantized tensor holds, with the seed it drew when none was given. */
  dst_data = piq_tensor_get_data (dst, &dst_bytes);
  scales = piq_tensor_get_scales (dst);
  zero_points = piq_tensor_get_zero_points (dst);
  container.format = g_object_ref (piq_tensor_get_format (dst));
  container.n_elements = array.n_elements;
  container.n_dims = array.n_dims;
  memcpy (container.shape, array.shape, sizeof container.shape);
  container.scale = piq_tensor_get_scale (dst);
  container.zero_point = piq_tensor_get_zero_point (dst);
  container.round_mode = piq_recipe_get_round_mode (recipe);
  container.seed = piq_tensor_get_seed (dst);
  container.scale_rule = options->have_scale
                         ? "explicit"
                         : enum_nick (PIQ_TYPE_SCALE_RULE,
                                      effective_scale_rule (container.format,
                                                            piq_recipe_get_scale_rule (recipe)));
  container.include_zero = piq_recipe_get_include_zero (recipe);
  container.source_dtype = array.dtype;
  container.data_bytes = dst_bytes;
  container.scales_bytes = scales != NULL ? g_bytes_get_size (scales) : 0;
  container.zero_points_bytes = zero_points != NULL ? g_bytes_get_size (zero_points) : 0;
  header = piq_container_format_header (&container, &header_len);

  if (!output_open (&output, output_name, error))
    return FALSE;
  progress_begin (progress, dst_bytes, "writing %s", output_name);
  if (!output_write (&output, header, header_len, NULL, error) ||
      !output_write (&output, dst_data, dst_bytes, progress, error) ||
      (scales != NULL && !output_write (&output, g_bytes_get_data (scales, NULL),
                                        container.scales_bytes, NULL, error)) ||
      (zero_points != NULL && !output_write (&output, g_bytes_get_data (zero_points, NULL),
                                             container.zero_points_bytes, NULL, error)))
    {
      output_abort (&output);
      return FALSE;
    }
  {
    g_autofree char *shape_text = format_shape (array.shape, array.n_dims);
    g_autofree char *input_what = g_strdup_printf ("%s, %s", piq_dtype_get_name (array.dtype),
                                                   shape_text);
    g_autofree char *output_what = piq_format_to_string (container.format);

    summary_set (summary, &output, input_name, input_what, output_what,
                 (guint64) header_len + dst_bytes + container.scales_bytes +
                 container.zero_points_bytes);
  }
  return output_commit (&output, error);
}

int
cmd_quantize (const Command *command, int argc, char **argv)
{
  QuantizeOptions options = {
    .dtype = PIQ_DTYPE_UINT8,
    .input_format = FILE_FORMAT_AUTO,
    .round_mode = PIQ_ROUND_NEAREST,
    .scale_rule = PIQ_SCALE_RULE_DEFAULT,
  };
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, &options, NULL);
  GOptionEntry entries[G_N_ELEMENTS (quantize_entries)];
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) format = NULL;
  g_autoptr(PiqRecipe) recipe = NULL;
  g_autofree char *preset = NULL;
  Progress progress = { 0 };
  Summary summary = { 0 };
  PiqGranularity granularity;
  const char *who;
  gboolean ok;

  /* The flags point into this call's options. */
  memcpy (entries, quantize_entries, sizeof entries);
  for (gsize i = 0; entries[i].long_name != NULL; i++)
    if (strcmp (entries[i].long_name, "no-include-zero") == 0)
      entries[i].arg_data = &options.no_include_zero;
    else if (strcmp (entries[i].long_name, "no-progress") == 0)
      entries[i].arg_data = &options.no_progress;
    else if (strcmp (entries[i].long_name, "quiet") == 0)
      entries[i].arg_data = &options.quiet;
    else if (strcmp (entries[i].long_name, "double-quant") == 0)
      entries[i].arg_data = &options.double_quant;
    else if (strcmp (entries[i].long_name, "symmetric") == 0)
      entries[i].arg_data = &options.symmetric;
  g_option_group_add_entries (group, entries);
  ok = parse_command_options (command, group, &argc, &argv);
  preset = options.preset;      /* freed on return; parse_q_preset allocated it */
  if (!ok)
    return EXIT_USAGE;
  who = g_get_prgname ();
  if (!check_two_files (argc, argv))
    return EXIT_USAGE;

  format = build_quantize_format (&options);
  granularity = piq_format_get_granularity (format);
  if (options.have_zero_point && !options.have_scale)
    return usage_error (who, "--zero-point needs --scale");
  if (options.have_scale && !has_tensor_scale (format))
    return usage_error (who, "--scale gives one scale for the whole tensor: %s",
                        piq_dtype_get_bits (piq_format_get_dtype (format)) == 0
                        ? "the ggml types keep their scales inside their blocks"
                        : "per-channel and per-block scales are derived from the data");
  if (options.have_scale && (options.have_scale_rule || options.no_include_zero))
    return usage_error (who, "--scale gives the parameters: --%s does not apply",
                        options.have_scale_rule ? "scale-rule" : "no-include-zero");
  if (options.no_include_zero &&
      effective_scale_rule (format, options.scale_rule) != PIQ_SCALE_RULE_MIN_MAX)
    return usage_error (who, "--no-include-zero applies to --scale-rule min-max only");
  if (options.seed != 0 && options.round_mode != PIQ_ROUND_STOCHASTIC)
    return usage_error (who, "--seed applies to --rounding stochastic only");
  if (options.have_axis && granularity != PIQ_GRANULARITY_CHANNEL)
    return usage_error (who, "--axis applies to --granularity channel");
  if (options.have_block_size && granularity != PIQ_GRANULARITY_BLOCK)
    return usage_error (who, "--block-size applies to --granularity block");
  if (options.have_scale_dtype && granularity == PIQ_GRANULARITY_TENSOR)
    return usage_error (who, "--scale-dtype applies to --granularity channel or block");
  if (!piq_format_validate (format, &error))
    return usage_error (who, "%s", error->message);
  recipe = build_quantize_recipe (&options, format);

  ok = run_quantize (&options, format, recipe, argv[1], argv[2], &progress, &summary, &error);
  progress_finish (&progress);
  summary_finish (&summary, ok && !options.quiet);
  return ok ? EXIT_OK : exit_for_error (who, error);
}

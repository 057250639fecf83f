/* piq-io-piqt.c: the .piqt container of quantized tensors, written and read
 *
 * Only the header is handled here; piq-io.c and the tool move the data.
 * Reading does no I/O: they read the prefix and the header text and hand them
 * over, and tests/fuzz/fuzz-piqt.c hands over fuzzed bytes the same way.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdarg.h>
#include <string.h>

#include "piq-io-piqt-private.h"

/* The container's layout and keys are documented in docs/files.md (one
 * place); the writer and the parser below follow it. */

void
piq_container_clear (PiqContainer *container)
{
  g_clear_object (&container->format);
}

/* Past PIQ_MAX_DIMS dimensions the leading ones merge into one, which changes
 * nothing per tensor or per block (blocks run along the last axis). */
void
piq_container_library_shape (const guint64 *shape,
                             guint          n_dims,
                             guint64       *out,
                             guint         *out_n_dims)
{
  if (n_dims == 0)
    {
      out[0] = 1;
      *out_n_dims = 1;
    }
  else if (n_dims <= PIQ_MAX_DIMS)
    {
      memcpy (out, shape, n_dims * sizeof *shape);
      *out_n_dims = n_dims;
    }
  else
    {
      /* The product of all extents is the element count, so no overflow. */
      out[0] = 1;
      for (guint i = 0; i + 1 < n_dims; i++)
        out[0] *= shape[i];
      out[1] = shape[n_dims - 1];
      *out_n_dims = 2;
    }
}

/* ---- writing ---- */

/* The nick of an enum value, as users type it. The class reference is kept
 * on purpose: the nick points into it. */
static const char *
enum_nick (GType type, int value)
{
  GEnumClass *klass = g_type_class_ref (type);
  GEnumValue *enum_value = g_enum_get_value (klass, value);

  return enum_value != NULL ? enum_value->value_nick : "unknown";
}

static const char *
bool_name (gboolean value)
{
  return value ? "true" : "false";
}

static void
put_u32_le (guint8 *p, guint32 v)
{
  for (guint i = 0; i < 4; i++)
    p[i] = (guint8) (v >> (8 * i));
}

static guint32
get_u32_le (const guint8 *p)
{
  return p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
}

static void
append_shape (GString *text, const guint64 *shape, guint n_dims)
{
  for (guint i = 0; i < n_dims; i++)
    g_string_append_printf (text, "%s%" G_GUINT64_FORMAT, i > 0 ? "," : "", shape[i]);
}

guint8 *
piq_container_format_header (const PiqContainer *container,
                             gsize              *length)
{
  PiqFormat *format = container->format;
  PiqGranularity granularity = piq_format_get_granularity (format);
  g_autoptr(GString) text = g_string_new (NULL);
  char scale[G_ASCII_DTOSTR_BUF_SIZE];
  gsize pad;
  guint8 *out;

  g_string_append_printf (text, "creator=piquant %s\n", PIQ_VERSION_STRING);
  g_string_append_printf (text, "dtype=%s\n", piq_dtype_get_name (piq_format_get_dtype (format)));
  g_string_append_printf (text, "n_elements=%" G_GUINT64_FORMAT "\n", container->n_elements);
  g_string_append (text, "shape=");
  append_shape (text, container->shape, container->n_dims);
  g_string_append_printf (text, "\ngranularity=%s\n", enum_nick (PIQ_TYPE_GRANULARITY, granularity));
  if (granularity == PIQ_GRANULARITY_CHANNEL)
    g_string_append_printf (text, "axis=%d\n", piq_format_get_axis (format));
  if (granularity == PIQ_GRANULARITY_BLOCK)
    g_string_append_printf (text, "block_size=%u\n", piq_format_get_block_size (format));
  if (granularity != PIQ_GRANULARITY_TENSOR)
    g_string_append_printf (text, "scale_dtype=%s\n",
                            piq_dtype_get_name (piq_format_get_scale_dtype (format)));
  g_string_append_printf (text, "symmetric=%s\n", bool_name (piq_format_get_symmetric (format)));
  g_string_append_printf (text, "saturate=%s\n", bool_name (piq_format_get_saturate (format)));
  g_string_append_printf (text, "high_nibble_first=%s\n",
                          bool_name (piq_format_get_high_nibble_first (format)));
  g_string_append_printf (text, "double_quant=%s\n",
                          bool_name (piq_format_get_double_quant (format)));
  if (granularity == PIQ_GRANULARITY_TENSOR)
    {
      g_string_append_printf (text, "scale=%s\n",
                              g_ascii_formatd (scale, sizeof scale, "%.17g", container->scale));
      g_string_append_printf (text, "zero_point=%" G_GINT64_FORMAT "\n", container->zero_point);
    }
  /* The recipe's keys only when the writer knows the recipe (the tool does;
   * a tensor does not remember how it was made). */
  if (container->scale_rule != NULL)
    g_string_append_printf (text, "round_mode=%s\n",
                            enum_nick (PIQ_TYPE_ROUND_MODE, container->round_mode));
  g_string_append_printf (text, "seed=%" G_GUINT64_FORMAT "\n", container->seed);
  if (container->scale_rule != NULL)
    g_string_append_printf (text, "scale_rule=%s\n", container->scale_rule);
  if (container->scale_rule != NULL && strcmp (container->scale_rule, "min-max") == 0)
    g_string_append_printf (text, "include_zero=%s\n", bool_name (container->include_zero));
  g_string_append_printf (text, "source_dtype=%s\n", piq_dtype_get_name (container->source_dtype));
  g_string_append_printf (text, "data_bytes=%" G_GSIZE_FORMAT "\n", container->data_bytes);
  g_string_append_printf (text, "scales_bytes=%" G_GSIZE_FORMAT "\n", container->scales_bytes);
  g_string_append_printf (text, "zero_points_bytes=%" G_GSIZE_FORMAT "\n",
                          container->zero_points_bytes);

  pad = (PIQ_CONTAINER_ALIGN - (PIQ_CONTAINER_PREFIX_LEN + text->len) % PIQ_CONTAINER_ALIGN) %
        PIQ_CONTAINER_ALIGN;
  if (pad > 0)
    {
      for (gsize i = 0; i + 1 < pad; i++)
        g_string_append_c (text, ' ');
      g_string_append_c (text, '\n');
    }

  *length = PIQ_CONTAINER_PREFIX_LEN + text->len;
  out = g_malloc (*length);
  memcpy (out, PIQ_CONTAINER_MAGIC, PIQ_CONTAINER_MAGIC_LEN);
  put_u32_le (out + 4, PIQ_CONTAINER_VERSION);
  put_u32_le (out + 8, (guint32) text->len);
  memcpy (out + PIQ_CONTAINER_PREFIX_LEN, text->str, text->len);
  return out;
}

/* ---- reading ---- */

gboolean
piq_io_error (GError **error, int code, const char *name, const char *format, ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, PIQ_ERROR, code, "%s: %s", name, message);
  return FALSE;
}

/* The value of a required key, or NULL after setting @error. */
static const char *
container_lookup (GHashTable *keys, const char *key, const char *name, GError **error)
{
  const char *value = g_hash_table_lookup (keys, key);

  if (value == NULL)
    piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                     "the container header has no '%s'", key);
  return value;
}

static gboolean
container_unsigned (GHashTable *keys, const char *key, const char *name, guint64 *out,
                    GError **error)
{
  const char *value = container_lookup (keys, key, name, error);

  if (value == NULL)
    return FALSE;
  if (!g_ascii_string_to_unsigned (value, 10, 0, G_MAXUINT64, out, NULL))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "%s '%s' is not a whole number", key, value);
  return TRUE;
}

/* A true/false key; absent keys take @absent, or are an error when
 * @required. */
static gboolean
container_bool (GHashTable *keys, const char *key, gboolean required, gboolean absent,
                const char *name, gboolean *out, GError **error)
{
  const char *value = g_hash_table_lookup (keys, key);

  if (value == NULL)
    {
      if (required)
        return container_lookup (keys, key, name, error) != NULL;
      *out = absent;
      return TRUE;
    }
  if (strcmp (value, "true") == 0)
    *out = TRUE;
  else if (strcmp (value, "false") == 0)
    *out = FALSE;
  else
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "%s '%s' is not true or false", key, value);
  return TRUE;
}

/* The scale dtype of per-channel and per-block scales. */
static gboolean
container_scale_dtype (GHashTable *keys, const char *name, PiqContainer *container,
                       GError **error)
{
  const char *value = container_lookup (keys, "scale_dtype", name, error);

  if (value == NULL)
    return FALSE;
  if (!piq_dtype_from_name (value, &container->scale_dtype) ||
      (container->scale_dtype != PIQ_DTYPE_F32 && container->scale_dtype != PIQ_DTYPE_F16 &&
       container->scale_dtype != PIQ_DTYPE_E8M0))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "scale_dtype '%s' is not f32, f16 or e8m0", value);
  return TRUE;
}

static gboolean
container_block_size (GHashTable *keys, const char *name, PiqContainer *container,
                      GError **error)
{
  guint64 n;

  if (!container_unsigned (keys, "block_size", name, &n, error))
    return FALSE;
  if (n == 0 || n > G_MAXUINT)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "block_size %" G_GUINT64_FORMAT " is out of range", n);
  container->block_size = (guint) n;
  return TRUE;
}

static gboolean
container_size (GHashTable *keys, const char *key, const char *name, gsize *out, GError **error)
{
  guint64 n;

  if (!container_unsigned (keys, key, name, &n, error))
    return FALSE;
  if (n > G_MAXSIZE)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "%s %" G_GUINT64_FORMAT " is too large", key, n);
  *out = n;
  return TRUE;
}

/* Version 2: the format's keys, every one required where it applies. */
static gboolean
container_parse_format (GHashTable *keys, const char *name, PiqContainer *container,
                        GError **error)
{
  const char *value;

  if (container->granularity == PIQ_GRANULARITY_CHANNEL)
    {
      gint64 axis;

      if ((value = container_lookup (keys, "axis", name, error)) == NULL)
        return FALSE;
      if (!g_ascii_string_to_signed (value, 10, -PIQ_MAX_DIMS, PIQ_MAX_DIMS - 1, &axis, NULL))
        return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                                "axis '%s' is not a whole number from %d to %d",
                                value, -PIQ_MAX_DIMS, PIQ_MAX_DIMS - 1);
      container->axis = (int) axis;
    }
  if (container->granularity == PIQ_GRANULARITY_BLOCK &&
      !container_block_size (keys, name, container, error))
    return FALSE;
  if (container->granularity != PIQ_GRANULARITY_TENSOR &&
      !container_scale_dtype (keys, name, container, error))
    return FALSE;
  return container_bool (keys, "symmetric", TRUE, FALSE, name, &container->symmetric, error) &&
         container_bool (keys, "saturate", TRUE, TRUE, name, &container->saturate, error) &&
         container_bool (keys, "high_nibble_first", TRUE, FALSE, name,
                         &container->high_nibble_first, error) &&
         container_bool (keys, "double_quant", TRUE, FALSE, name, &container->double_quant,
                         error) &&
         container_size (keys, "scales_bytes", name, &container->scales_bytes, error) &&
         container_size (keys, "zero_points_bytes", name, &container->zero_points_bytes, error);
}

/* Version 1: per tensor, high_nibble_first written only when true; per
 * channel and per block, the keys that told the scales apart. */
static gboolean
container_parse_v1 (GHashTable *keys, const char *name, PiqContainer *container, GError **error)
{
  g_autoptr(GEnumClass) rules = g_type_class_ref (PIQ_TYPE_SCALE_RULE);
  GEnumValue *rule;
  const char *value;

  if (!container_bool (keys, "high_nibble_first", container->granularity != PIQ_GRANULARITY_TENSOR,
                       FALSE, name, &container->high_nibble_first, error))
    return FALSE;
  if (container->granularity == PIQ_GRANULARITY_TENSOR)
    {
      container->saturate = TRUE;
      return TRUE;
    }

  if (!container_block_size (keys, name, container, error) ||
      !container_scale_dtype (keys, name, container, error))
    return FALSE;
  if ((value = container_lookup (keys, "scale_rule", name, error)) == NULL)
    return FALSE;
  rule = g_enum_get_value_by_nick (rules, value);
  if (rule == NULL)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "scale_rule '%s' is not a piquant scale rule", value);
  container->scale_rule_value = rule->value;

  return container_bool (keys, "include_zero", TRUE, TRUE, name, &container->include_zero,
                         error) &&
         container_bool (keys, "double_quant", TRUE, FALSE, name, &container->double_quant,
                         error) &&
         container_bool (keys, "saturate", TRUE, TRUE, name, &container->saturate, error) &&
         container_size (keys, "scales_bytes", name, &container->scales_bytes, error) &&
         container_size (keys, "zero_points_bytes", name, &container->zero_points_bytes, error);
}

/* The keys of @text, a NUL-terminated copy of the header text. */
static gboolean
container_parse_text (const char *text, const char *name, PiqContainer *container,
                      GError **error)
{
  g_autoptr(GHashTable) keys = g_hash_table_new (g_str_hash, g_str_equal);
  g_auto(GStrv) lines = g_strsplit (text, "\n", -1);
  const char *value;
  guint64 n;
  g_auto(GStrv) extents = NULL;
  char *end;

  for (char **line = lines; *line != NULL; line++)
    {
      char *eq;

      g_strstrip (*line);
      if (**line == '\0')
        continue;
      eq = strchr (*line, '=');
      if (eq == NULL || eq == *line)
        return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                                "container header line '%s' is not KEY=VALUE", *line);
      *eq = '\0';
      if (!g_hash_table_insert (keys, *line, eq + 1))
        return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                                "the container header repeats '%s'", *line);
    }

  value = container_lookup (keys, "granularity", name, error);
  if (value == NULL)
    return FALSE;
  if (strcmp (value, "tensor") == 0)
    container->granularity = PIQ_GRANULARITY_TENSOR;
  else if (strcmp (value, "channel") == 0)
    container->granularity = PIQ_GRANULARITY_CHANNEL;
  else if (strcmp (value, "block") == 0)
    container->granularity = PIQ_GRANULARITY_BLOCK;
  else
    return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, name,
                            "granularity '%s' is not supported by this version of "
                            "piquant (tensor, channel or block)", value);

  if ((value = container_lookup (keys, "dtype", name, error)) == NULL)
    return FALSE;
  if (!piq_dtype_from_name (value, &container->dtype) || !piq_dtype_is_quantized (container->dtype))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "dtype '%s' is not a quantized piquant type", value);

  if ((value = container_lookup (keys, "source_dtype", name, error)) == NULL)
    return FALSE;
  if (!piq_dtype_from_name (value, &container->source_dtype) ||
      !piq_dtype_is_float (container->source_dtype))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "source_dtype '%s' is not f32, f64, f16 or bf16", value);

  if (!(container->version == 1 ? container_parse_v1 (keys, name, container, error)
                                 : container_parse_format (keys, name, container, error)))
    return FALSE;

  if (container->granularity == PIQ_GRANULARITY_TENSOR)
    {
      if ((value = container_lookup (keys, "scale", name, error)) == NULL)
        return FALSE;
      container->scale = g_ascii_strtod (value, &end);
      if (*value == '\0' || *end != '\0')
        return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                                "scale '%s' is not a number", value);

      if ((value = container_lookup (keys, "zero_point", name, error)) == NULL)
        return FALSE;
      if (!g_ascii_string_to_signed (value, 10, G_MININT64, G_MAXINT64, &container->zero_point,
                                     NULL))
        return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                                "zero_point '%s' is not a whole number", value);
    }
  else
    {
      /* Unused: the scales follow the codes. */
      container->scale = 1.0;
      container->zero_point = 0;
    }

  if (!container_unsigned (keys, "n_elements", name, &container->n_elements, error) ||
      !container_size (keys, "data_bytes", name, &container->data_bytes, error))
    return FALSE;

  if ((value = container_lookup (keys, "shape", name, error)) == NULL)
    return FALSE;
  container->n_dims = 0;
  n = 1;
  if (*value != '\0')
    {
      extents = g_strsplit (value, ",", -1);
      for (char **e = extents; *e != NULL; e++)
        {
          guint64 extent;

          if (container->n_dims == PIQ_NPY_MAX_DIMS ||
              !g_ascii_string_to_unsigned (g_strstrip (*e), 10, 0, G_MAXUINT64, &extent, NULL) ||
              !g_uint64_checked_mul (&n, n, extent))
            return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                                    "shape '%s' is not a list of at most %d extents",
                                    value, PIQ_NPY_MAX_DIMS);
          container->shape[container->n_dims++] = extent;
        }
    }
  if (n != container->n_elements)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "shape '%s' holds %" G_GUINT64_FORMAT " elements, "
                            "n_elements says %" G_GUINT64_FORMAT, value, n, container->n_elements);
  return TRUE;
}

/* The format the keys describe, and the shape its data decodes as. Version 1
 * kept no axis and no symmetric key: its channels are rows of block_size
 * elements (axis 0 of a 2-D view), its blocks run over the flattened array,
 * and its per-channel and per-block integers are affine under the min-max
 * rule only; per tensor, an affine format with the recorded zero point
 * decodes every one of its integer files. */
static gboolean
container_build_format (PiqContainer *container, const char *name, GError **error)
{
  g_autoptr(GError) local_error = NULL;
  gboolean symmetric = container->symmetric;
  int axis = container->axis;

  if (container->version == 1)
    {
      symmetric = piq_dtype_get_range (container->dtype, NULL, NULL) &&
                  container->granularity != PIQ_GRANULARITY_TENSOR &&
                  container->scale_dtype != PIQ_DTYPE_E8M0 &&
                  container->scale_rule_value != PIQ_SCALE_RULE_MIN_MAX;
      axis = 0;
      container->library_n_dims = 1;
      container->library_shape[0] = container->n_elements;
      if (container->granularity == PIQ_GRANULARITY_CHANNEL)
        {
          if (container->n_elements % container->block_size != 0)
            return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                                    "%" G_GUINT64_FORMAT " elements are not whole "
                                    "rows of block_size %u", container->n_elements,
                                    container->block_size);
          container->library_n_dims = 2;
          container->library_shape[0] = container->n_elements / container->block_size;
          container->library_shape[1] = container->block_size;
        }
    }
  else if (container->granularity == PIQ_GRANULARITY_CHANNEL && container->n_dims > PIQ_MAX_DIMS)
    return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, name,
                            "per-channel data of %u dimensions (at most %d)",
                            container->n_dims, PIQ_MAX_DIMS);
  else
    piq_container_library_shape (container->shape, container->n_dims, container->library_shape,
                                 &container->library_n_dims);

  container->format = g_object_new (PIQ_TYPE_FORMAT,
                                    "dtype", container->dtype,
                                    "granularity", container->granularity,
                                    "axis", axis,
                                    "block-size", container->granularity == PIQ_GRANULARITY_BLOCK
                                                  ? container->block_size : 0,
                                    "scale-dtype", container->scale_dtype,
                                    "symmetric", symmetric,
                                    "saturate", container->saturate,
                                    "high-nibble-first", container->high_nibble_first,
                                    "double-quant", container->double_quant,
                                    NULL);
  if (!piq_format_validate (container->format, &local_error))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "%s", local_error->message);
  return TRUE;
}

/* The sizes the header announces against those of its format and shape. */
static gboolean
container_check_sizes (const PiqContainer *container, const char *name, GError **error)
{
  g_autoptr(GError) local_error = NULL;
  g_autoptr(GString) shape = g_string_new (NULL);
  g_autofree char *format = NULL;
  gsize codes_bytes, scales_bytes, zero_points_bytes;

  if (!piq_format_get_sizes (container->format, container->library_shape,
                             container->library_n_dims, &codes_bytes, &scales_bytes,
                             &zero_points_bytes, &local_error))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "%s", local_error->message);
  if (container->data_bytes != codes_bytes)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "data_bytes is %" G_GSIZE_FORMAT ", but %"
                            G_GUINT64_FORMAT " %s elements take %" G_GSIZE_FORMAT,
                            container->data_bytes, container->n_elements,
                            piq_dtype_get_name (container->dtype), codes_bytes);
  if (container->scales_bytes == scales_bytes && container->zero_points_bytes == zero_points_bytes)
    return TRUE;
  append_shape (shape, container->library_shape, container->library_n_dims);
  format = piq_format_to_string (container->format);
  return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                          "scales_bytes is %" G_GSIZE_FORMAT " and "
                          "zero_points_bytes %" G_GSIZE_FORMAT ", but %" G_GUINT64_FORMAT
                          " elements of shape %s in the format %s take %" G_GSIZE_FORMAT
                          " and %" G_GSIZE_FORMAT, container->scales_bytes,
                          container->zero_points_bytes, container->n_elements, shape->str,
                          format, scales_bytes, zero_points_bytes);
}

gboolean
piq_container_parse_prefix (const guint8   prefix[PIQ_CONTAINER_PREFIX_LEN],
                            const char    *name,
                            PiqContainer  *container,
                            guint32       *text_len,
                            GError       **error)
{
  piq_container_clear (container);
  memset (container, 0, sizeof *container);
  if (memcmp (prefix, PIQ_CONTAINER_MAGIC, PIQ_CONTAINER_MAGIC_LEN) != 0)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "not a piquant container (it does not start "
                            "with 'PIQT'; `piquant quantize` writes them)");
  container->version = get_u32_le (prefix + 4);
  if (container->version < 1 || container->version > PIQ_CONTAINER_VERSION)
    return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, name,
                            "container format version %u is not supported "
                            "(this piquant reads versions 1 to %u)", container->version,
                            PIQ_CONTAINER_VERSION);
  *text_len = get_u32_le (prefix + 8);
  if (*text_len > PIQ_CONTAINER_MAX_HEADER_LEN ||
      (PIQ_CONTAINER_PREFIX_LEN + *text_len) % PIQ_CONTAINER_ALIGN != 0)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "header length %u is invalid (at most %u, and "
                            "12 + length must be a multiple of %u)", *text_len,
                            PIQ_CONTAINER_MAX_HEADER_LEN, PIQ_CONTAINER_ALIGN);
  return TRUE;
}

gboolean
piq_container_parse_header (const char    *text,
                            gsize          text_len,
                            const char    *name,
                            PiqContainer  *container,
                            GError       **error)
{
  g_autofree char *copy = NULL;

  g_return_val_if_fail (text != NULL || text_len == 0, FALSE);

  /* A NUL would end the text early for every string function below. */
  if (text_len > 0 &&
      (memchr (text, '\0', text_len) != NULL || !g_utf8_validate (text, text_len, NULL)))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "the container header is not UTF-8 text");
  copy = g_try_malloc (text_len + 1);
  if (copy == NULL)
    return piq_io_error (error, PIQ_ERROR_NO_MEMORY, name, "cannot allocate %" G_GSIZE_FORMAT
                         " bytes for the container header", text_len + 1);
  if (text_len > 0)
    memcpy (copy, text, text_len);
  copy[text_len] = '\0';
  if (!container_parse_text (copy, name, container, error) ||
      !container_build_format (container, name, error) ||
      !container_check_sizes (container, name, error))
    return FALSE;
  container->data_offset = PIQ_CONTAINER_PREFIX_LEN + text_len;
  return TRUE;
}

gboolean
piq_container_get_file_size (const PiqContainer *container,
                             const char         *name,
                             guint64            *size,
                             GError            **error)
{
  guint64 total = container->data_offset;

  if (!g_uint64_checked_add (&total, total, container->data_bytes) ||
      !g_uint64_checked_add (&total, total, container->scales_bytes) ||
      !g_uint64_checked_add (&total, total, container->zero_points_bytes))
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "the sizes in the container header overflow");
  *size = total;
  return TRUE;
}

gboolean
piq_container_check_file_size (const PiqContainer *container,
                               const char         *name,
                               guint64             file_size,
                               GError            **error)
{
  guint64 total = 0;

  if (!piq_container_get_file_size (container, name, &total, error))
    return FALSE;
  if (file_size == total)
    return TRUE;
  if (container->scales_bytes == 0 && container->zero_points_bytes == 0)
    return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                            "the file has %" G_GUINT64_FORMAT " bytes; "
                            "its header announces %" G_GUINT64_FORMAT " (%" G_GSIZE_FORMAT
                            " of header, %" G_GSIZE_FORMAT " of data)", file_size, total,
                            container->data_offset, container->data_bytes);
  return piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name,
                          "the file has %" G_GUINT64_FORMAT " bytes; "
                          "its header announces %" G_GUINT64_FORMAT " (%" G_GSIZE_FORMAT
                          " of header, %" G_GSIZE_FORMAT " of data, %" G_GSIZE_FORMAT
                          " of scales, %" G_GSIZE_FORMAT " of zero points)",
                          file_size, total, container->data_offset, container->data_bytes,
                          container->scales_bytes, container->zero_points_bytes);
}

/* piq-io-safetensors.c: named tensors in Hugging Face's safetensors format
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of
 * UTF-8 JSON (an object: per tensor {"dtype", "shape", "data_offsets": [begin,
 * end]} with offsets into the data that follows, and an optional
 * "__metadata__" object of strings), then the data. docs/files.md gives the
 * rules this reader enforces and how quantized tensors are stored.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "piq-io.h"
#include "piq-dtype.h"
#include "piq-error.h"
#include "piq-format.h"
#include "piq-io-piqt-private.h"
#include "piq-io-private.h"

/* Headers longer than this are refused unread, as the reference
 * implementation refuses them (MAX_HEADER_SIZE, 100 MB). */
#define ST_MAX_HEADER_LEN 100000000u

/* The metadata key that carries a quantized tensor's format, and the
 * companion entries of its scales and zero points: NAME + suffix. */
#define ST_FORMAT_SUFFIX      ".piq_format"
#define ST_SCALES_SUFFIX      ".piq_scales"
#define ST_ZERO_POINTS_SUFFIX ".piq_zero_points"

/* The one table of safetensors dtypes piquant reads and writes. */
static const struct {
  const char *name;
  PiqDtype    dtype;
} st_dtypes[] = {
  { "F64", PIQ_DTYPE_F64 },   { "F32", PIQ_DTYPE_F32 },   { "F16", PIQ_DTYPE_F16 },
  { "BF16", PIQ_DTYPE_BF16 }, { "I64", PIQ_DTYPE_INT64 }, { "I32", PIQ_DTYPE_INT32 },
  { "I16", PIQ_DTYPE_INT16 }, { "I8", PIQ_DTYPE_INT8 },   { "U64", PIQ_DTYPE_UINT64 },
  { "U32", PIQ_DTYPE_UINT32 }, { "U16", PIQ_DTYPE_UINT16 }, { "U8", PIQ_DTYPE_UINT8 },
  /* codes only: read as the codes of a quantized tensor, with its metadata */
  { "F8_E4M3", PIQ_DTYPE_FP8_E4M3 }, { "F8_E5M2", PIQ_DTYPE_FP8_E5M2 },
};

static const char *
st_dtype_name (PiqDtype dtype)
{
  for (gsize i = 0; i < G_N_ELEMENTS (st_dtypes); i++)
    if (st_dtypes[i].dtype == dtype)
      return st_dtypes[i].name;
  return NULL;
}

static gboolean
st_dtype_from_name (const char *name, PiqDtype *dtype)
{
  for (gsize i = 0; i < G_N_ELEMENTS (st_dtypes); i++)
    if (strcmp (st_dtypes[i].name, name) == 0)
      {
        *dtype = st_dtypes[i].dtype;
        return TRUE;
      }
  return FALSE;
}

/* ---- the object ---- */

struct _PiqSafetensors {
  GObject     parent_instance;
  GHashTable *tensors;          /* name → PiqTensor */
  GHashTable *metadata;         /* key → value */
};

G_DEFINE_FINAL_TYPE (PiqSafetensors, piq_safetensors, G_TYPE_OBJECT)

static void
piq_safetensors_finalize (GObject *object)
{
  PiqSafetensors *self = PIQ_SAFETENSORS (object);

  g_hash_table_unref (self->tensors);
  g_hash_table_unref (self->metadata);
  G_OBJECT_CLASS (piq_safetensors_parent_class)->finalize (object);
}

static void
piq_safetensors_class_init (PiqSafetensorsClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = piq_safetensors_finalize;
}

static void
piq_safetensors_init (PiqSafetensors *self)
{
  self->tensors = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
  self->metadata = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

/**
 * piq_safetensors_new:
 *
 * An empty set of named tensors, to fill with
 * [method@Piq.Safetensors.set_tensor] and save.
 *
 * Returns: (transfer full): a new #PiqSafetensors
 *
 * Since: 1.0
 */
PiqSafetensors *
piq_safetensors_new (void)
{
  return g_object_new (PIQ_TYPE_SAFETENSORS, NULL);
}

static int
compare_strings (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The keys of @table, sorted, as a new string vector. */
static char **
sorted_keys (GHashTable *table)
{
  guint n;
  g_autofree gpointer *keys = g_hash_table_get_keys_as_array (table, &n);
  char **out = g_new (char *, n + 1);

  for (guint i = 0; i < n; i++)
    out[i] = g_strdup (keys[i]);
  out[n] = NULL;
  qsort (out, n, sizeof *out, compare_strings);
  return out;
}

/**
 * piq_safetensors_get_names:
 * @self: a #PiqSafetensors
 *
 * The names of the tensors, in byte order (the order of the file's entries
 * when saved; quantized tensors' scales and zero points are not separate
 * names here).
 *
 * Returns: (transfer full) (array zero-terminated=1): the names
 *
 * Since: 1.0
 */
char **
piq_safetensors_get_names (PiqSafetensors *self)
{
  g_return_val_if_fail (PIQ_IS_SAFETENSORS (self), NULL);

  return sorted_keys (self->tensors);
}

/**
 * piq_safetensors_get_tensor:
 * @self: a #PiqSafetensors
 * @name: a tensor's name
 *
 * Looks up a tensor by name; a quantized tensor comes whole, with its
 * format, scales and zero points.
 *
 * Returns: (transfer none) (nullable): the tensor called @name, or %NULL
 *
 * Since: 1.0
 */
PiqTensor *
piq_safetensors_get_tensor (PiqSafetensors *self,
                            const char     *name)
{
  g_return_val_if_fail (PIQ_IS_SAFETENSORS (self), NULL);
  g_return_val_if_fail (name != NULL, NULL);

  return g_hash_table_lookup (self->tensors, name);
}

/**
 * piq_safetensors_set_tensor:
 * @self: a #PiqSafetensors
 * @name: the tensor's name
 * @tensor: (nullable): the tensor, or %NULL to remove @name
 *
 * Adds @tensor under @name (replacing what was there), keeping a reference.
 * Names the file cannot hold are refused when saving.
 *
 * Since: 1.0
 */
void
piq_safetensors_set_tensor (PiqSafetensors *self,
                            const char     *name,
                            PiqTensor      *tensor)
{
  g_return_if_fail (PIQ_IS_SAFETENSORS (self));
  g_return_if_fail (name != NULL);
  g_return_if_fail (tensor == NULL || PIQ_IS_TENSOR (tensor));

  if (tensor == NULL)
    g_hash_table_remove (self->tensors, name);
  else
    g_hash_table_replace (self->tensors, g_strdup (name), g_object_ref (tensor));
}

/**
 * piq_safetensors_get_metadata_keys:
 * @self: a #PiqSafetensors
 *
 * The keys of the file's `__metadata__`, sorted, without the keys piquant
 * uses to describe quantized tensors.
 *
 * Returns: (transfer full) (array zero-terminated=1): the keys
 *
 * Since: 1.0
 */
char **
piq_safetensors_get_metadata_keys (PiqSafetensors *self)
{
  g_return_val_if_fail (PIQ_IS_SAFETENSORS (self), NULL);

  return sorted_keys (self->metadata);
}

/**
 * piq_safetensors_get_metadata:
 * @self: a #PiqSafetensors
 * @key: a metadata key
 *
 * Looks up a string of the file's `__metadata__`.
 *
 * Returns: (nullable): the metadata value of @key, or %NULL
 *
 * Since: 1.0
 */
const char *
piq_safetensors_get_metadata (PiqSafetensors *self,
                              const char     *key)
{
  g_return_val_if_fail (PIQ_IS_SAFETENSORS (self), NULL);
  g_return_val_if_fail (key != NULL, NULL);

  return g_hash_table_lookup (self->metadata, key);
}

/**
 * piq_safetensors_set_metadata:
 * @self: a #PiqSafetensors
 * @key: a metadata key
 * @value: (nullable): its value, or %NULL to remove @key
 *
 * Sets a string of the file's `__metadata__`.
 *
 * Since: 1.0
 */
void
piq_safetensors_set_metadata (PiqSafetensors *self,
                              const char     *key,
                              const char     *value)
{
  g_return_if_fail (PIQ_IS_SAFETENSORS (self));
  g_return_if_fail (key != NULL);

  if (value == NULL)
    g_hash_table_remove (self->metadata, key);
  else
    g_hash_table_replace (self->metadata, g_strdup (key), g_strdup (value));
}

/* ---- reading ---- */

typedef struct {
  char      *name;
  PiqDtype   dtype;
  guint      n_dims;
  guint64    shape[PIQ_MAX_DIMS];
  guint64    begin, end;
  GBytes    *data;
} Entry;

static void
entry_free (Entry *e)
{
  g_free (e->name);
  g_clear_pointer (&e->data, g_bytes_unref);
  g_free (e);
}

static int
entry_by_offset (gconstpointer a, gconstpointer b)
{
  const Entry *x = *(Entry *const *) a, *y = *(Entry *const *) b;

  return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static gboolean
read_u64 (JsonNode *node, guint64 *out)
{
  double d;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node) ||
      json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  d = (double) json_node_get_int (node);
  if (json_node_get_int (node) < 0 || d > 0x1p62)
    return FALSE;
  *out = (guint64) json_node_get_int (node);
  return TRUE;
}

/* One tensor's entry of the header, checked for itself. */
static Entry *
parse_entry (const char *key, JsonNode *node, const char *name, GError **error)
{
  g_autoptr(GError) local_error = NULL;
  Entry *e = g_new0 (Entry, 1);
  JsonObject *obj;
  JsonArray *shape, *offsets;
  const char *dtype;
  guint64 n = 1;
  gsize bytes;

  e->name = g_strdup (key);
  if (!JSON_NODE_HOLDS_OBJECT (node))
    goto bad;
  obj = json_node_get_object (node);
  if (!json_object_has_member (obj, "dtype") || !json_object_has_member (obj, "shape") ||
      !json_object_has_member (obj, "data_offsets") ||
      json_object_get_size (obj) != 3 ||
      !JSON_NODE_HOLDS_VALUE (json_object_get_member (obj, "dtype")) ||
      json_node_get_value_type (json_object_get_member (obj, "dtype")) != G_TYPE_STRING ||
      !JSON_NODE_HOLDS_ARRAY (json_object_get_member (obj, "shape")) ||
      !JSON_NODE_HOLDS_ARRAY (json_object_get_member (obj, "data_offsets")))
    goto bad;
  dtype = json_object_get_string_member (obj, "dtype");
  if (!st_dtype_from_name (dtype, &e->dtype))
    {
      piq_io_error (error, PIQ_ERROR_UNSUPPORTED, name, "tensor '%s': dtype '%s' is not supported",
                key, dtype);
      entry_free (e);
      return NULL;
    }
  shape = json_object_get_array_member (obj, "shape");
  if (json_array_get_length (shape) > PIQ_MAX_DIMS)
    {
      piq_io_error (error, PIQ_ERROR_UNSUPPORTED, name, "tensor '%s' has %u dimensions; a tensor "
                "has at most %d", key, json_array_get_length (shape), PIQ_MAX_DIMS);
      entry_free (e);
      return NULL;
    }
  e->n_dims = json_array_get_length (shape);
  for (guint i = 0; i < e->n_dims; i++)
    if (!read_u64 (json_array_get_element (shape, i), &e->shape[i]) ||
        !g_uint64_checked_mul (&n, n, e->shape[i]))
      goto bad;
  offsets = json_object_get_array_member (obj, "data_offsets");
  if (json_array_get_length (offsets) != 2 ||
      !read_u64 (json_array_get_element (offsets, 0), &e->begin) ||
      !read_u64 (json_array_get_element (offsets, 1), &e->end) || e->end < e->begin)
    goto bad;
  if (!piq_dtype_get_size_for_n (e->dtype, n, &bytes, &local_error) || bytes != e->end - e->begin)
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "tensor '%s': its offsets hold %"
                G_GUINT64_FORMAT " bytes, its dtype and shape %" G_GUINT64_FORMAT " elements",
                key, e->end - e->begin, n);
      entry_free (e);
      return NULL;
    }
  return e;

bad:
  piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "tensor '%s' is not {\"dtype\": string, "
            "\"shape\": [whole numbers], \"data_offsets\": [begin, end]}", key);
  entry_free (e);
  return NULL;
}

static gboolean
read_exact (GInputStream *stream, void *buffer, gsize n, const char *name, const char *what,
            GCancellable *cancellable, GError **error)
{
  gsize got;

  if (!g_input_stream_read_all (stream, buffer, n, &got, cancellable, error))
    {
      g_prefix_error (error, "%s: ", name);
      return FALSE;
    }
  return got == n || piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "the file ends inside %s",
                               what);
}

typedef struct {
  GInputStream *stream;
  GCancellable *cancellable;
} StreamSource;

static gboolean
stream_read (void *p, void *buffer, gsize n, gsize *n_read, GError **error)
{
  StreamSource *src = p;

  return g_input_stream_read_all (src->stream, buffer, n, n_read, src->cancellable, error);
}

/* A plain tensor of @e's dtype and shape over its data. */
static PiqTensor *
plain_tensor (Entry *e, const char *name, GError **error)
{
  static const guint64 scalar[1] = { 1 };
  PiqTensor *t;

  if (e->dtype == PIQ_DTYPE_FP8_E4M3 || e->dtype == PIQ_DTYPE_FP8_E5M2)
    {
      piq_io_error (error, PIQ_ERROR_UNSUPPORTED, name, "tensor '%s' holds %s codes without the "
                "piquant format (metadata '%s" ST_FORMAT_SUFFIX "') that decodes them",
                e->name, st_dtype_name (e->dtype), e->name);
      return NULL;
    }
  t = piq_tensor_new_shaped (e->dtype, e->n_dims > 0 ? e->shape : scalar, MAX (e->n_dims, 1),
                             error);
  if (t != NULL)
    {
      gsize n;
      gpointer p = piq_tensor_get_writable_data (t, &n);

      if (n > 0)
        memcpy (p, g_bytes_get_data (e->data, NULL), n);
    }
  else
    g_prefix_error (error, "%s: tensor '%s': ", name, e->name);
  return t;
}

/* The quantized tensor @key: its format from @text (the .piqt header keys),
 * its codes, scales and zero points from the entries, which are taken out of
 * @entries. */
static PiqTensor *
quantized_tensor (const char *key, const char *text, GHashTable *entries, const char *name,
                  GError **error)
{
  g_auto(PiqContainer) c = { 0 };
  g_autofree char *what = g_strdup_printf ("%s: tensor '%s'", name, key);
  g_autofree char *scales_key = g_strconcat (key, ST_SCALES_SUFFIX, NULL);
  g_autofree char *zero_points_key = g_strconcat (key, ST_ZERO_POINTS_SUFFIX, NULL);
  Entry *codes = g_hash_table_lookup (entries, key);
  Entry *scales = g_hash_table_lookup (entries, scales_key);
  Entry *zero_points = g_hash_table_lookup (entries, zero_points_key);
  PiqTensor *t;

  c.version = PIQ_CONTAINER_VERSION;
  if (!piq_container_parse_header (text, strlen (text), what, &c, error))
    return NULL;
  if (codes == NULL)
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "metadata '%s" ST_FORMAT_SUFFIX "' has no "
                "tensor '%s'", key, key);
      return NULL;
    }
  if (g_bytes_get_size (codes->data) != c.data_bytes ||
      (scales != NULL ? g_bytes_get_size (scales->data) : 0) != c.scales_bytes ||
      (zero_points != NULL ? g_bytes_get_size (zero_points->data) : 0) != c.zero_points_bytes)
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "tensor '%s': its entries hold %" G_GSIZE_FORMAT
                ", %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT " bytes of codes, scales and "
                "zero points; its format announces %" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT
                " and %" G_GSIZE_FORMAT, key, g_bytes_get_size (codes->data),
                scales != NULL ? g_bytes_get_size (scales->data) : 0,
                zero_points != NULL ? g_bytes_get_size (zero_points->data) : 0,
                c.data_bytes, c.scales_bytes, c.zero_points_bytes);
      return NULL;
    }
  t = piq_tensor_new_quantized_from_bytes (c.format, c.library_shape, c.library_n_dims,
                                           codes->data, scales != NULL ? scales->data : NULL,
                                           zero_points != NULL ? zero_points->data : NULL,
                                           c.scale, c.zero_point, error);
  if (t == NULL)
    {
      g_prefix_error (error, "%s: ", what);
      return NULL;
    }
  g_hash_table_remove (entries, key);
  g_hash_table_remove (entries, scales_key);
  g_hash_table_remove (entries, zero_points_key);
  return t;
}

static PiqSafetensors *
read_safetensors (GInputStream *stream, const char *name, gboolean size_known, guint64 size,
                  GCancellable *cancellable, GError **error)
{
  g_autoptr(PiqSafetensors) self = piq_safetensors_new ();
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GHashTable) entries = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                         (GDestroyNotify) entry_free);
  GHashTable *metadata = self->metadata, *tensors = self->tensors;
  StreamSource src = { stream, cancellable };
  g_autoptr(GPtrArray) order = g_ptr_array_new ();
  g_autoptr(GError) local_error = NULL;
  g_autofree char *text = NULL;
  guint8 len_bytes[8];
  guint64 header_len = 0, expected = 0;
  JsonNode *root;
  JsonObjectIter iter;
  const char *key;
  JsonNode *node;
  GHashTableIter hi;
  gpointer hk, hv;

  if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
    {
      piq_io_error (error, PIQ_ERROR_UNSUPPORTED, name, "safetensors files are little-endian; this "
                "host is not");
      return NULL;
    }
  if (!read_exact (stream, len_bytes, 8, name, "the header length", cancellable, error))
    return NULL;
  for (int i = 7; i >= 0; i--)
    header_len = header_len << 8 | len_bytes[i];
  if (header_len > ST_MAX_HEADER_LEN || header_len < 2 ||
      (size_known && header_len > size - 8))
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "a safetensors header of %" G_GUINT64_FORMAT
                " bytes is not possible here", header_len);
      return NULL;
    }
  text = g_try_malloc (header_len + 1);
  if (text == NULL)
    {
      piq_io_error (error, PIQ_ERROR_NO_MEMORY, name, "cannot allocate %" G_GUINT64_FORMAT
                " bytes for the header", header_len + 1);
      return NULL;
    }
  if (!read_exact (stream, text, header_len, name, "the header", cancellable, error))
    return NULL;
  text[header_len] = '\0';
  if (text[0] != '{' || memchr (text, '\0', header_len) != NULL ||
      !g_utf8_validate (text, header_len, NULL) ||
      !json_parser_load_from_data (parser, text, header_len, &local_error))
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "the header is not a JSON object%s%s",
                local_error != NULL ? ": " : "", local_error != NULL ? local_error->message : "");
      return NULL;
    }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "the header is not a JSON object");
      return NULL;
    }

  json_object_iter_init (&iter, json_node_get_object (root));
  while (json_object_iter_next (&iter, &key, &node))
    {
      /* json-glib decodes escapes such as a lone surrogate (\udb00) into
       * bytes that are not UTF-8, which no writer could put back */
      if (!g_utf8_validate (key, -1, NULL))
        {
          piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "a name in the header is not UTF-8");
          return NULL;
        }
      if (strcmp (key, "__metadata__") == 0)
        {
          JsonObjectIter mi;
          const char *mk;
          JsonNode *mv;

          if (!JSON_NODE_HOLDS_OBJECT (node))
            {
              piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "__metadata__ is not an object");
              return NULL;
            }
          json_object_iter_init (&mi, json_node_get_object (node));
          while (json_object_iter_next (&mi, &mk, &mv))
            {
              if (!JSON_NODE_HOLDS_VALUE (mv) || json_node_get_value_type (mv) != G_TYPE_STRING ||
                  !g_utf8_validate (mk, -1, NULL) ||
                  !g_utf8_validate (json_node_get_string (mv), -1, NULL))
                {
                  piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "__metadata__ has a value "
                            "that is not a UTF-8 string");
                  return NULL;
                }
              g_hash_table_replace (metadata, g_strdup (mk), g_strdup (json_node_get_string (mv)));
            }
        }
      else
        {
          Entry *e;

          /* the names a save could not write back */
          if (key[0] == '\0' || g_str_has_suffix (key, ST_FORMAT_SUFFIX))
            {
              piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "'%s' cannot name a tensor", key);
              return NULL;
            }
          e = parse_entry (key, node, name, error);

          if (e == NULL)
            return NULL;
          g_hash_table_replace (entries, e->name, e);
          g_ptr_array_add (order, e);
        }
    }

  /* The data: the entries' ranges tile it, in offset order, without gaps or
   * overlaps, as the reference implementation requires. */
  g_ptr_array_sort (order, entry_by_offset);
  for (guint i = 0; i < order->len; i++)
    {
      Entry *e = order->pdata[i];
      char *what;

      if (e->begin != expected)
        {
          piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "tensor '%s' starts at byte %"
                    G_GUINT64_FORMAT " of the data, where %" G_GUINT64_FORMAT " was expected "
                    "(the tensors must tile the data)", e->name, e->begin, expected);
          return NULL;
        }
      expected = e->end;
      if (size_known && expected > size - 8 - header_len)
        {
          piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "the file is too short: its header "
                    "announces %" G_GUINT64_FORMAT " bytes of data, %" G_GUINT64_FORMAT
                    " follow it", expected, size - 8 - header_len);
          return NULL;
        }
      what = g_strdup_printf ("the data of tensor '%s'", e->name);
      e->data = piq_io_read_bytes (stream_read, &src, e->end - e->begin, size_known, name, what,
                                   error);
      g_free (what);
      if (e->data == NULL)
        return NULL;
    }
  if (size_known && expected != size - 8 - header_len)
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "%" G_GUINT64_FORMAT " bytes follow the "
                "data the header announces", size - 8 - header_len - expected);
      return NULL;
    }

  /* Quantized tensors first (they take their companions out), then the rest. */
  g_hash_table_iter_init (&hi, metadata);
  while (g_hash_table_iter_next (&hi, &hk, &hv))
    {
      const char *mk = hk;
      gsize len = strlen (mk), slen = strlen (ST_FORMAT_SUFFIX);
      g_autofree char *tname = NULL;
      PiqTensor *t;

      if (!g_str_has_suffix (mk, ST_FORMAT_SUFFIX))
        continue;
      if (len == slen)
        {
          piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "metadata '%s' names no tensor", mk);
          return NULL;
        }
      tname = g_strndup (mk, len - slen);
      t = quantized_tensor (tname, hv, entries, name, error);
      if (t == NULL)
        return NULL;
      g_hash_table_replace (tensors, g_steal_pointer (&tname), t);
      g_hash_table_iter_remove (&hi);
    }
  g_hash_table_iter_init (&hi, entries);
  while (g_hash_table_iter_next (&hi, &hk, &hv))
    {
      PiqTensor *t = plain_tensor (hv, name, error);

      if (t == NULL)
        return NULL;
      g_hash_table_replace (tensors, g_strdup (hk), t);
    }
  return g_steal_pointer (&self);
}

/**
 * piq_safetensors_new_from_stream:
 * @stream: a stream at the start of a safetensors file
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Reads every tensor of a safetensors file (Hugging Face's format: an 8-byte
 * little-endian header length, a JSON header, the data) and its
 * `__metadata__`. Float and integer entries become tensors of their dtype and
 * shape (a 0-d entry: shape [1]); quantized tensors that
 * [method@Piq.Safetensors.save_to_stream] wrote come back with their format,
 * scales and zero points (docs/files.md gives the convention). The entries
 * must tile the data, as the reference implementation requires. Entries that
 * piquant cannot represent (BOOL, complex, FP8 codes without piquant's
 * metadata, more than %PIQ_MAX_DIMS axes) fail with %PIQ_ERROR_UNSUPPORTED;
 * a malformed or truncated file with %PIQ_ERROR_FILE_FORMAT.
 *
 * Returns: (transfer full): the tensors and metadata, or %NULL with @error set
 *
 * Since: 1.0
 */
PiqSafetensors *
piq_safetensors_new_from_stream (GInputStream  *stream,
                                 GCancellable  *cancellable,
                                 GError       **error)
{
  g_return_val_if_fail (G_IS_INPUT_STREAM (stream), NULL);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  return read_safetensors (stream, "the stream", FALSE, 0, cancellable, error);
}

/**
 * piq_safetensors_new_from_file:
 * @file: a safetensors file
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Reads @file as [ctor@Piq.Safetensors.new_from_stream] does, checking the
 * file's size against the header before taking memory for the data.
 *
 * Returns: (transfer full): the tensors and metadata, or %NULL with @error set
 *
 * Since: 1.0
 */
PiqSafetensors *
piq_safetensors_new_from_file (GFile         *file,
                               GCancellable  *cancellable,
                               GError       **error)
{
  g_autoptr(GFileInputStream) stream = NULL;
  g_autofree char *name = NULL;
  gboolean size_known;
  guint64 size;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  stream = piq_io_open_file (file, &name, &size_known, &size, cancellable, error);
  if (stream == NULL)
    return NULL;
  if (size_known && size < 8)
    {
      piq_io_error (error, PIQ_ERROR_FILE_FORMAT, name, "too short for a safetensors file");
      return NULL;
    }
  return read_safetensors (G_INPUT_STREAM (stream), name, size_known, size, cancellable, error);
}

/* ---- writing ---- */

typedef struct {
  char       *name;
  const char *dtype;
  guint       n_dims;
  guint64     shape[PIQ_MAX_DIMS];
  GBytes     *data;
} Out;

static void
out_free (Out *o)
{
  g_free (o->name);
  g_clear_pointer (&o->data, g_bytes_unref);
  g_free (o);
}

static int
out_by_name (gconstpointer a, gconstpointer b)
{
  return strcmp ((*(Out *const *) a)->name, (*(Out *const *) b)->name);
}

static void
add_out (GPtrArray *outs, char *name, const char *dtype, const guint64 *shape, guint n_dims,
         GBytes *data)
{
  Out *o = g_new0 (Out, 1);

  o->name = name;
  o->dtype = dtype;
  o->n_dims = n_dims;
  memcpy (o->shape, shape, n_dims * sizeof *shape);
  o->data = data;
  g_ptr_array_add (outs, o);
}

/* The packed bytes of a (possibly strided) plain tensor. */
static GBytes *
packed_bytes (PiqTensor *t, GError **error)
{
  gsize n_bytes, stride = piq_tensor_get_row_stride (t), row_bytes;
  const guint8 *data = piq_tensor_get_data (t, &n_bytes);
  guint n_dims;
  const guint64 *shape = piq_tensor_get_shape (t, &n_dims);
  guint64 cols = shape[n_dims - 1], rows;
  GByteArray *out;

  if (stride == 0)
    return piq_tensor_get_bytes (t);
  rows = cols ? piq_tensor_get_n_elements (t) / cols : 0;
  if (!piq_dtype_get_size_for_n (piq_tensor_get_dtype (t), cols, &row_bytes, error))
    return NULL;
  out = g_byte_array_sized_new ((guint) (rows * row_bytes));
  for (guint64 r = 0; r < rows; r++)
    g_byte_array_append (out, data + r * stride, (guint) row_bytes);
  return g_byte_array_free_to_bytes (out);
}

/* The entries and metadata of one tensor @key of @tensors, or an error. */
static gboolean
add_tensor (GPtrArray *outs, JsonBuilder *meta, const char *key, PiqTensor *t,
            GHashTable *tensors, GHashTable *metadata, GError **error)
{
  PiqFormat *format = piq_tensor_get_format (t);
  PiqDtype dtype = piq_tensor_get_dtype (t);
  guint n_dims;
  const guint64 *shape = piq_tensor_get_shape (t, &n_dims);
  static const char *suffixes[] = { ST_FORMAT_SUFFIX, ST_SCALES_SUFFIX, ST_ZERO_POINTS_SUFFIX };

  if (strcmp (key, "__metadata__") == 0 || key[0] == '\0' || g_str_has_suffix (key, ST_FORMAT_SUFFIX))
    return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, "safetensors", "'%s' cannot name a tensor",
                     key);
  if (format == NULL)
    {
      const char *name = st_dtype_name (dtype);
      GBytes *data;

      /* FP8 codes mean nothing without their format and scale */
      if (name == NULL || dtype == PIQ_DTYPE_FP8_E4M3 || dtype == PIQ_DTYPE_FP8_E5M2)
        return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, "safetensors", "tensor '%s': "
                         "safetensors has no dtype for %s data without a format", key,
                         piq_dtype_get_name (dtype));
      data = packed_bytes (t, error);
      if (data == NULL)
        return FALSE;
      add_out (outs, g_strdup (key), name, shape, n_dims, data);
      return TRUE;
    }

  /* A quantized tensor: its codes under its name (in their own dtype where
   * safetensors has one, else as bytes), its scales and zero points beside
   * them, and its format, as the .piqt header's keys, in the metadata. */
  for (gsize i = 0; i < G_N_ELEMENTS (suffixes); i++)
    {
      g_autofree char *k = g_strconcat (key, suffixes[i], NULL);

      if (g_hash_table_contains (tensors, k) ||
          (metadata != NULL && g_hash_table_contains (metadata, k)))
        return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, "safetensors", "'%s' is taken: the "
                         "quantized tensor '%s' stores its %s under that name", k, key,
                         i == 0 ? "format" : i == 1 ? "scales" : "zero points");
    }
  {
    g_auto(PiqContainer) c = { 0 };
    g_autoptr(GBytes) scales = piq_tensor_get_scales (t);
    g_autoptr(GBytes) zero_points = piq_tensor_get_zero_points (t);
    g_autofree guint8 *header = NULL;
    g_autofree char *text = NULL;
    const char *codes_dtype = st_dtype_name (dtype);
    gsize header_len, data_bytes;
    guint64 flat[1];

    piq_tensor_get_data (t, &data_bytes);
    c.format = g_object_ref (format);
    c.n_elements = piq_tensor_get_n_elements (t);
    c.n_dims = n_dims;
    memcpy (c.shape, shape, n_dims * sizeof *shape);
    c.scale = piq_tensor_get_scale (t);
    c.zero_point = piq_tensor_get_zero_point (t);
    c.seed = piq_tensor_get_seed (t);
    c.source_dtype = PIQ_DTYPE_F32;
    c.data_bytes = data_bytes;
    c.scales_bytes = scales != NULL ? g_bytes_get_size (scales) : 0;
    c.zero_points_bytes = zero_points != NULL ? g_bytes_get_size (zero_points) : 0;
    header = piq_container_format_header (&c, &header_len);
    /* the header text without the prefix and the padding */
    text = g_strndup ((const char *) header + PIQ_CONTAINER_PREFIX_LEN,
                      header_len - PIQ_CONTAINER_PREFIX_LEN);
    g_strchomp (text);
    {
      g_autofree char *member = g_strconcat (key, ST_FORMAT_SUFFIX, NULL);
      g_autofree char *line = g_strconcat (text, "\n", NULL);

      json_builder_set_member_name (meta, member);
      json_builder_add_string_value (meta, line);
    }

    /* codes of a whole number of bytes per element keep their dtype and shape */
    if (codes_dtype != NULL)
      add_out (outs, g_strdup (key), codes_dtype, shape, n_dims, piq_tensor_get_bytes (t));
    else
      {
        flat[0] = data_bytes;
        add_out (outs, g_strdup (key), "U8", flat, 1, piq_tensor_get_bytes (t));
      }
    if (scales != NULL)
      {
        flat[0] = g_bytes_get_size (scales);
        add_out (outs, g_strconcat (key, ST_SCALES_SUFFIX, NULL), "U8", flat, 1,
                 g_bytes_ref (scales));
      }
    if (zero_points != NULL)
      {
        flat[0] = g_bytes_get_size (zero_points) / 4;
        add_out (outs, g_strconcat (key, ST_ZERO_POINTS_SUFFIX, NULL), "I32", flat, 1,
                 g_bytes_ref (zero_points));
      }
  }
  return TRUE;
}

static gboolean
write_all (GOutputStream *stream, const void *data, gsize n, GCancellable *cancellable,
           GError **error)
{
  return n == 0 || g_output_stream_write_all (stream, data, n, NULL, cancellable, error);
}

/* Everything to write, checked before a byte is written: the header (length
 * and JSON, padded with spaces to a multiple of 8 as the reference writer
 * does) and the entries in name order. */
static gboolean
prepare (GHashTable *tensors, GHashTable *metadata, GPtrArray *outs, GString **header,
         GError **error)
{
  g_autoptr(JsonBuilder) meta = json_builder_new ();
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonGenerator) gen = json_generator_new ();
  g_autoptr(JsonNode) meta_node = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *json = NULL;
  g_autoptr(GList) keys = NULL;
  guint64 offset = 0;
  gsize json_len;
  guint8 len_bytes[8];

  if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
    return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, "safetensors", "safetensors files are "
                     "little-endian; this host is not");
  json_builder_begin_object (meta);
  if (metadata != NULL)
    {
      keys = g_list_sort (g_hash_table_get_keys (metadata), (GCompareFunc) strcmp);
      for (GList *l = keys; l != NULL; l = l->next)
        {
          if (g_str_has_suffix (l->data, ST_FORMAT_SUFFIX))
            return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, "safetensors", "metadata keys ending "
                             "in '" ST_FORMAT_SUFFIX "' are piquant's own ('%s')",
                             (const char *) l->data);
          json_builder_set_member_name (meta, l->data);
          json_builder_add_string_value (meta, g_hash_table_lookup (metadata, l->data));
        }
      g_clear_pointer (&keys, g_list_free);
    }
  keys = g_list_sort (g_hash_table_get_keys (tensors), (GCompareFunc) strcmp);
  for (GList *l = keys; l != NULL; l = l->next)
    {
      PiqTensor *t = g_hash_table_lookup (tensors, l->data);

      if (!PIQ_IS_TENSOR (t))
        return piq_io_error (error, PIQ_ERROR_UNSUPPORTED, "safetensors", "'%s' is not a tensor",
                         (const char *) l->data);
      if (!add_tensor (outs, meta, l->data, t, tensors, metadata, error))
        return FALSE;
    }
  json_builder_end_object (meta);
  meta_node = json_builder_get_root (meta);
  g_ptr_array_sort (outs, out_by_name);

  json_builder_begin_object (b);
  if (json_object_get_size (json_node_get_object (meta_node)) > 0)
    {
      json_builder_set_member_name (b, "__metadata__");
      json_builder_add_value (b, g_steal_pointer (&meta_node));
    }
  for (guint i = 0; i < outs->len; i++)
    {
      Out *o = outs->pdata[i];

      json_builder_set_member_name (b, o->name);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "dtype");
      json_builder_add_string_value (b, o->dtype);
      json_builder_set_member_name (b, "shape");
      json_builder_begin_array (b);
      for (guint d = 0; d < o->n_dims; d++)
        json_builder_add_int_value (b, (gint64) o->shape[d]);
      json_builder_end_array (b);
      json_builder_set_member_name (b, "data_offsets");
      json_builder_begin_array (b);
      json_builder_add_int_value (b, (gint64) offset);
      offset += g_bytes_get_size (o->data);
      json_builder_add_int_value (b, (gint64) offset);
      json_builder_end_array (b);
      json_builder_end_object (b);
    }
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json = json_generator_to_data (gen, &json_len);

  *header = g_string_sized_new (json_len + 16);
  g_string_append_len (*header, "\0\0\0\0\0\0\0\0", 8);
  g_string_append_len (*header, json, json_len);
  while ((*header)->len % 8 != 0)
    g_string_append_c (*header, ' ');
  for (int i = 0; i < 8; i++)
    len_bytes[i] = (guint8) ((guint64) ((*header)->len - 8) >> (8 * i));
  memcpy ((*header)->str, len_bytes, 8);
  return TRUE;
}

static gboolean
write_safetensors (gpointer self_, gpointer unused, GOutputStream *stream,
                   GCancellable *cancellable, GError **error)
{
  PiqSafetensors *self = self_;
  g_autoptr(GPtrArray) outs = g_ptr_array_new_with_free_func ((GDestroyNotify) out_free);
  GString *header = NULL;
  gboolean ok;

  if (!prepare (self->tensors, self->metadata, outs, &header, error))
    return FALSE;
  ok = write_all (stream, header->str, header->len, cancellable, error);
  g_string_free (header, TRUE);
  for (guint i = 0; ok && i < outs->len; i++)
    {
      Out *o = outs->pdata[i];
      gsize n;
      gconstpointer p = g_bytes_get_data (o->data, &n);

      ok = write_all (stream, p, n, cancellable, error);
    }
  return ok;
}

/**
 * piq_safetensors_save_to_stream:
 * @self: a #PiqSafetensors
 * @stream: where to write
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Writes the tensors and metadata as a safetensors file that the reference
 * implementation (`safetensors.torch.load_file`,
 * `safetensors.numpy.load_file`) reads: float and integer tensors under their
 * names, in their dtype and shape (bfloat16 as BF16; a strided tensor
 * packed). A quantized tensor NAME is stored as its codes under NAME (in
 * their dtype and shape where safetensors has the dtype: U8, I8, F8_E4M3…,
 * else as U8 bytes), its scales as `NAME.piq_scales` (U8 bytes) and zero
 * points as `NAME.piq_zero_points` (I32), and its format in `__metadata__`
 * under `NAME.piq_format` (the .piqt header's keys, docs/files.md), so
 * [ctor@Piq.Safetensors.new_from_stream] rebuilds it. Entries are written in
 * name order, the header padded with spaces to a multiple of 8 bytes.
 *
 * A name taken twice by that convention, or a tensor of a dtype safetensors
 * lacks (packed sub-byte integers or FP8 codes without a format), fails with
 * %PIQ_ERROR_UNSUPPORTED before anything is written.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_safetensors_save_to_stream (PiqSafetensors *self,
                                GOutputStream  *stream,
                                GCancellable   *cancellable,
                                GError        **error)
{
  g_return_val_if_fail (PIQ_IS_SAFETENSORS (self), FALSE);
  g_return_val_if_fail (G_IS_OUTPUT_STREAM (stream), FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return write_safetensors (self, NULL, stream, cancellable, error);
}

/**
 * piq_safetensors_save_to_file:
 * @self: a #PiqSafetensors
 * @file: where to write
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Writes @self to @file as [method@Piq.Safetensors.save_to_stream] does,
 * atomically as [method@Piq.Tensor.save_to_file] does.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_safetensors_save_to_file (PiqSafetensors *self,
                              GFile          *file,
                              GCancellable   *cancellable,
                              GError        **error)
{
  g_autoptr(GPtrArray) outs = g_ptr_array_new_with_free_func ((GDestroyNotify) out_free);
  GString *header = NULL;

  g_return_val_if_fail (PIQ_IS_SAFETENSORS (self), FALSE);
  g_return_val_if_fail (G_IS_FILE (file), FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  /* refuse what cannot be written before a file is created */
  if (!prepare (self->tensors, self->metadata, outs, &header, error))
    return FALSE;
  g_string_free (header, TRUE);
  return piq_io_replace_file (file, write_safetensors, self, NULL, cancellable, error);
}

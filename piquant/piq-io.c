/* piq-io.c: tensors saved to and loaded from files and streams
 *
 * The bytes of each format are defined once, in piq-io-npy.c (.npy) and
 * piq-io-piqt.c (.piqt), which the tool shares; this file moves the data
 * through GIO and builds the tensors.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "piq-io.h"
#include "piq-dtype.h"
#include "piq-error.h"
#include "piq-format.h"
#include "piq-io-npy-private.h"
#include "piq-io-private.h"
#include "piq-io-piqt-private.h"

/* The formats' numbers are little-endian and the data is copied as it lies
 * in memory: a big-endian host would write and read it in the wrong order. */
static gboolean
check_little_endian (GError **error)
{
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN)
    return TRUE;
  g_set_error_literal (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "piquant's files are little-endian; this host is not");
  return FALSE;
}

/* ---- reading ---- */

/* A stream, with the first bytes that were read to tell the format apart
 * handed out again before the stream's own. */
typedef struct {
  GInputStream *stream;
  GCancellable *cancellable;
  guint8        prefix[4];
  gsize         prefix_len;
  gsize         prefix_pos;
} Source;

static gboolean
source_read (void *p, void *buffer, gsize n, gsize *n_read, GError **error)
{
  Source *source = p;
  gsize k = MIN (n, source->prefix_len - source->prefix_pos), got = 0;

  if (k > 0)
    memcpy (buffer, source->prefix + source->prefix_pos, k);
  source->prefix_pos += k;
  if (k < n && !g_input_stream_read_all (source->stream, (guint8 *) buffer + k, n - k, &got,
                                         source->cancellable, error))
    return FALSE;
  *n_read = k + got;
  return TRUE;
}

/* Reads exactly @n bytes of @what. */
static gboolean
source_read_exact (Source *source, void *buffer, gsize n, const char *name, const char *what,
                   GError **error)
{
  gsize got;

  if (!source_read (source, buffer, n, &got, error))
    {
      g_prefix_error (error, "%s: ", name);
      return FALSE;
    }
  if (got == n)
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
               "%s: the file ends inside %s (%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
               " bytes)", name, what, got, n);
  return FALSE;
}

GBytes *
piq_io_read_bytes (PiqReadFunc  read,
                   void        *source,
                   gsize        n,
                   gboolean     size_checked,
                   const char  *name,
                   const char  *what,
                   GError     **error)
{
  /* the first allocation when the size is not known; it doubles from there */
  const gsize step = 1u << 20;
  guint8 *buffer = NULL;
  gsize have = 0, cap = 0;

  while (have < n || cap == 0)
    {
      gsize want = size_checked ? MAX (n, 1) : MIN (MAX (n, 1), MAX (step, 2 * cap));
      gsize got;
      guint8 *grown = g_try_realloc (buffer, want);

      if (grown == NULL)
        {
          g_free (buffer);
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "%s: cannot allocate %"
                       G_GSIZE_FORMAT " bytes of %s", name, want, what);
          return NULL;
        }
      buffer = grown;
      cap = want;
      if (!read (source, buffer + have, MIN (cap, n) - have, &got, error))
        {
          g_free (buffer);
          g_prefix_error (error, "%s: ", name);
          return NULL;
        }
      have += got;
      if (have < MIN (cap, n))
        {
          g_free (buffer);
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                       "%s: the file ends inside %s (%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
                       " bytes)", name, what, have, n);
          return NULL;
        }
    }
  return g_bytes_new_take (buffer, n);
}

static PiqTensor *
read_npy (Source *source, const char *name, gboolean size_known, guint64 size, GError **error)
{
  PiqNpyHeader header;
  g_autoptr(PiqTensor) tensor = NULL;
  g_autoptr(GBytes) bytes = NULL;
  static const guint64 scalar_shape[1] = { 1 };
  gsize n_bytes;
  gpointer data;

  if (!piq_npy_read_header_from (source_read, source, name, &header, error))
    return NULL;
  if (header.n_dims > PIQ_MAX_DIMS)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "%s: the array has %u dimensions; a tensor has at most %d", name,
                   header.n_dims, PIQ_MAX_DIMS);
      return NULL;
    }
  if (!piq_dtype_get_size_for_n (header.dtype, header.n_elements, &n_bytes, error))
    {
      g_prefix_error (error, "%s: ", name);
      return NULL;
    }
  /* Bytes after the array are allowed: numpy.save() can append arrays to one
   * file, and numpy.load() reads the first. Too few are refused before any
   * memory is taken for them. */
  if (size_known && (size < header.data_offset || size - header.data_offset < n_bytes))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                   "%s: the file is too short: its header announces %" G_GSIZE_FORMAT
                   " bytes of data, %" G_GUINT64_FORMAT " follow the header", name, n_bytes,
                   size > header.data_offset ? size - header.data_offset : 0);
      return NULL;
    }

  /* From a stream of unknown length, the data first: its size is not to be
   * trusted before it has arrived. */
  if (!size_known &&
      (bytes = piq_io_read_bytes (source_read, source, n_bytes, FALSE, name, "the array's data",
                                  error)) == NULL)
    return NULL;

  /* A 0-d array (one element, no axes) becomes a tensor of shape [1]. */
  tensor = header.n_dims == 0 ? piq_tensor_new_shaped (header.dtype, scalar_shape, 1, error)
                              : piq_tensor_new_shaped (header.dtype, header.shape, header.n_dims,
                                                       error);
  if (tensor == NULL)
    {
      g_prefix_error (error, "%s: ", name);
      return NULL;
    }
  data = piq_tensor_get_writable_data (tensor, &n_bytes);
  if (n_bytes == 0)
    return g_steal_pointer (&tensor);
  if (bytes != NULL)
    memcpy (data, g_bytes_get_data (bytes, NULL), n_bytes);
  else if (!source_read_exact (source, data, n_bytes, name, "the array's data", error))
    return NULL;
  return g_steal_pointer (&tensor);
}

static PiqTensor *
read_piqt (Source *source, const char *name, gboolean size_known, guint64 size, GError **error)
{
  g_auto(PiqContainer) container = { 0 };
  guint8 prefix[PIQ_CONTAINER_PREFIX_LEN];
  g_autofree char *text = NULL;
  g_autoptr(GBytes) codes = NULL;
  g_autoptr(GBytes) scales = NULL;
  g_autoptr(GBytes) zero_points = NULL;
  guint32 text_len;
  guint64 total;
  PiqTensor *tensor;

  if (!source_read_exact (source, prefix, sizeof prefix, name, "the container's prefix", error) ||
      !piq_container_parse_prefix (prefix, name, &container, &text_len, error))
    return NULL;
  text = g_try_malloc (MAX (text_len, 1));
  if (text == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "%s: cannot allocate %u bytes for "
                   "the container header", name, text_len);
      return NULL;
    }
  if (!source_read_exact (source, text, text_len, name, "the container header", error) ||
      !piq_container_parse_header (text, text_len, name, &container, error))
    return NULL;
  /* Of a stream of unknown length, only the sum is checked: the reads find a
   * short one. */
  if (size_known ? !piq_container_check_file_size (&container, name, size, error)
                 : !piq_container_get_file_size (&container, name, &total, error))
    return NULL;

  codes = piq_io_read_bytes (source_read, source, container.data_bytes, size_known, name,
                             "the codes", error);
  if (codes == NULL)
    return NULL;
  if (container.scales_bytes > 0 &&
      (scales = piq_io_read_bytes (source_read, source, container.scales_bytes, size_known, name,
                                   "the scales", error)) == NULL)
    return NULL;
  if (container.zero_points_bytes > 0 &&
      (zero_points = piq_io_read_bytes (source_read, source, container.zero_points_bytes,
                                        size_known, name, "the zero points", error)) == NULL)
    return NULL;
  tensor = piq_tensor_new_quantized_from_bytes (container.format, container.library_shape,
                                                container.library_n_dims, codes, scales,
                                                zero_points, container.scale,
                                                container.zero_point, error);
  if (tensor == NULL)
    g_prefix_error (error, "%s: ", name);
  return tensor;
}

/* Tells the format apart by its first bytes and reads the tensor. */
static PiqTensor *
read_tensor (GInputStream *stream, const char *name, gboolean size_known, guint64 size,
             GCancellable *cancellable, GError **error)
{
  Source source = { stream, cancellable, { 0 }, 0, 0 };

  if (!check_little_endian (error))
    return NULL;
  if (!g_input_stream_read_all (stream, source.prefix, sizeof source.prefix, &source.prefix_len,
                                cancellable, error))
    {
      g_prefix_error (error, "%s: ", name);
      return NULL;
    }
  if (source.prefix_len == sizeof source.prefix &&
      memcmp (source.prefix, PIQ_CONTAINER_MAGIC, PIQ_CONTAINER_MAGIC_LEN) == 0)
    return read_piqt (&source, name, size_known, size, error);
  if (source.prefix_len == sizeof source.prefix &&
      memcmp (source.prefix, PIQ_NPY_MAGIC, sizeof source.prefix) == 0)
    return read_npy (&source, name, size_known, size, error);
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
               "%s is neither a .npy file nor a piquant container (.piqt)", name);
  return NULL;
}

/**
 * piq_tensor_new_from_stream:
 * @stream: a stream at the start of a `.npy` file or a `.piqt` container
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Reads a tensor, telling the format apart by its first bytes: a `.npy` array
 * (little-endian f32, f64, f16 or an integer type, in C order, at most
 * %PIQ_MAX_DIMS axes; a 0-d array gives shape [1]; bfloat16 data arrives as
 * %PIQ_DTYPE_UINT16, see [ctor@Piq.Tensor.new_from_bytes] to view it as
 * bfloat16) or a quantized tensor in piquant's container, with its format,
 * shape, scales and zero points. The stream is left after the tensor's data.
 *
 * A malformed or truncated file fails with %PIQ_ERROR_FILE_FORMAT, a valid one
 * that piquant cannot represent with %PIQ_ERROR_UNSUPPORTED, and the stream's
 * own errors (%G_IO_ERROR) are passed on.
 *
 * Returns: (transfer full): a new tensor, or %NULL with @error set
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_from_stream (GInputStream  *stream,
                            GCancellable  *cancellable,
                            GError       **error)
{
  g_return_val_if_fail (G_IS_INPUT_STREAM (stream), NULL);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  return read_tensor (stream, "the stream", FALSE, 0, cancellable, error);
}

/**
 * piq_tensor_new_from_file:
 * @file: a `.npy` file or a `.piqt` container
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Reads a tensor from @file as [ctor@Piq.Tensor.new_from_stream] does, and
 * checks the file's size against what its header announces before taking
 * memory for the data.
 *
 * Returns: (transfer full): a new tensor, or %NULL with @error set
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_from_file (GFile         *file,
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
  return read_tensor (G_INPUT_STREAM (stream), name, size_known, size, cancellable, error);
}

GFileInputStream *
piq_io_open_file (GFile         *file,
                  char         **name,
                  gboolean      *size_known,
                  guint64       *size,
                  GCancellable  *cancellable,
                  GError       **error)
{
  g_autoptr(GFileInputStream) stream = g_file_read (file, cancellable, error);
  g_autoptr(GFileInfo) info = NULL;

  *name = g_file_get_parse_name (file);
  *size_known = FALSE;
  *size = 0;
  if (stream == NULL)
    return NULL;
  info = g_file_input_stream_query_info (stream, G_FILE_ATTRIBUTE_STANDARD_TYPE ","
                                         G_FILE_ATTRIBUTE_STANDARD_SIZE, cancellable, NULL);
  if (info != NULL && g_file_info_get_file_type (info) == G_FILE_TYPE_REGULAR &&
      g_file_info_has_attribute (info, G_FILE_ATTRIBUTE_STANDARD_SIZE))
    {
      *size_known = TRUE;
      *size = (guint64) g_file_info_get_size (info);
    }
  return g_steal_pointer (&stream);
}

/* ---- writing ---- */

/* Whether @self can be written as @format; nothing is written otherwise. */
static gboolean
check_savable (PiqTensor *self, PiqFileFormat format, GError **error)
{
  PiqDtype dtype = piq_tensor_get_dtype (self);
  PiqFormat *qformat = piq_tensor_get_format (self);

  if (!check_little_endian (error))
    return FALSE;
  switch (format)
    {
    case PIQ_FILE_FORMAT_NPY:
      if (qformat != NULL)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "a quantized %s tensor keeps its format and scales only in a "
                       "piquant container (PIQ_FILE_FORMAT_PIQT), not in .npy",
                       piq_dtype_get_name (dtype));
          return FALSE;
        }
      if (piq_npy_descr_for_dtype (dtype) == NULL)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "numpy has no dtype for %s data", piq_dtype_get_name (dtype));
          return FALSE;
        }
      return TRUE;
    case PIQ_FILE_FORMAT_PIQT:
      if (qformat == NULL)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "a piquant container holds a quantized tensor; this %s tensor "
                       "has no format: save it as .npy (PIQ_FILE_FORMAT_NPY)",
                       piq_dtype_get_name (dtype));
          return FALSE;
        }
      return TRUE;
    default:
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "unknown file format %d", format);
      return FALSE;
    }
}

static gboolean
write_all (GOutputStream *stream, const void *data, gsize n, GCancellable *cancellable,
           GError **error)
{
  return n == 0 || g_output_stream_write_all (stream, data, n, NULL, cancellable, error);
}

static gboolean
write_npy (PiqTensor *self, GOutputStream *stream, GCancellable *cancellable, GError **error)
{
  PiqDtype dtype = piq_tensor_get_dtype (self);
  guint n_dims;
  const guint64 *shape = piq_tensor_get_shape (self, &n_dims);
  gsize header_len, n_bytes, stride = piq_tensor_get_row_stride (self);
  g_autofree guint8 *header = piq_npy_format_header (piq_npy_descr_for_dtype (dtype), shape,
                                                     n_dims, &header_len);
  const guint8 *data = piq_tensor_get_data (self, &n_bytes);

  if (!write_all (stream, header, header_len, cancellable, error))
    return FALSE;
  if (stride == 0)
    return write_all (stream, data, n_bytes, cancellable, error);

  /* A strided tensor: its rows (along the last axis) one after the other. */
  {
    guint64 cols = shape[n_dims - 1], rows = cols ? piq_tensor_get_n_elements (self) / cols : 0;
    gsize row_bytes;

    if (!piq_dtype_get_size_for_n (dtype, cols, &row_bytes, error))
      return FALSE;
    for (guint64 r = 0; r < rows; r++)
      if (!write_all (stream, data + r * stride, row_bytes, cancellable, error))
        return FALSE;
    return TRUE;
  }
}

static gboolean
write_piqt (PiqTensor *self, GOutputStream *stream, GCancellable *cancellable, GError **error)
{
  g_auto(PiqContainer) container = { 0 };
  g_autoptr(GBytes) scales = piq_tensor_get_scales (self);
  g_autoptr(GBytes) zero_points = piq_tensor_get_zero_points (self);
  g_autofree guint8 *header = NULL;
  const guint64 *shape;
  gconstpointer codes;
  gsize header_len;

  codes = piq_tensor_get_data (self, &container.data_bytes);
  shape = piq_tensor_get_shape (self, &container.n_dims);
  memcpy (container.shape, shape, container.n_dims * sizeof *shape);
  container.format = g_object_ref (piq_tensor_get_format (self));
  container.n_elements = piq_tensor_get_n_elements (self);
  container.scale = piq_tensor_get_scale (self);
  container.zero_point = piq_tensor_get_zero_point (self);
  container.seed = piq_tensor_get_seed (self);
  container.scale_rule = NULL;                  /* the recipe is not known */
  container.source_dtype = PIQ_DTYPE_F32;
  container.scales_bytes = scales != NULL ? g_bytes_get_size (scales) : 0;
  container.zero_points_bytes = zero_points != NULL ? g_bytes_get_size (zero_points) : 0;
  header = piq_container_format_header (&container, &header_len);

  return write_all (stream, header, header_len, cancellable, error) &&
         write_all (stream, codes, container.data_bytes, cancellable, error) &&
         (scales == NULL || write_all (stream, g_bytes_get_data (scales, NULL),
                                       container.scales_bytes, cancellable, error)) &&
         (zero_points == NULL || write_all (stream, g_bytes_get_data (zero_points, NULL),
                                            container.zero_points_bytes, cancellable, error));
}

/**
 * piq_tensor_save_to_stream:
 * @self: a tensor
 * @stream: where to write
 * @format: %PIQ_FILE_FORMAT_NPY for a tensor without a format (float or
 *   integer), %PIQ_FILE_FORMAT_PIQT for a quantized one
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Writes @self to @stream in @format, which
 * [ctor@Piq.Tensor.new_from_stream], numpy (`.npy`) and `piquant
 * dequantize` (`.piqt`) read back. A strided tensor is written packed. A
 * quantized tensor's container records %PIQ_DTYPE_F32 as the dtype it was
 * quantized from (the tensor does not remember it; `piquant dequantize`
 * writes that dtype unless told otherwise).
 *
 * A tensor that @format cannot hold fails with %PIQ_ERROR_UNSUPPORTED before
 * anything is written; the stream's own errors (%G_IO_ERROR) are passed on,
 * and leave part of the tensor written.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_tensor_save_to_stream (PiqTensor      *self,
                           GOutputStream  *stream,
                           PiqFileFormat   format,
                           GCancellable   *cancellable,
                           GError        **error)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), FALSE);
  g_return_val_if_fail (G_IS_OUTPUT_STREAM (stream), FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_savable (self, format, error))
    return FALSE;
  return format == PIQ_FILE_FORMAT_NPY ? write_npy (self, stream, cancellable, error)
                                       : write_piqt (self, stream, cancellable, error);
}

/* A new file beside @file, named after it, that nothing else had: the data
 * goes there first and is renamed over @file only once all of it is written. */
static GFileOutputStream *
create_temporary (GFile *file, GFile **temporary, GCancellable *cancellable, GError **error)
{
  g_autoptr(GFile) parent = g_file_get_parent (file);
  g_autofree char *base = g_file_get_basename (file);

  if (parent == NULL || base == NULL)
    {
      g_autofree char *name = g_file_get_parse_name (file);

      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_FILENAME,
                   "%s is not a file name that can be written", name);
      return NULL;
    }
  for (int attempt = 0;; attempt++)
    {
      g_autofree char *tmp_name = g_strdup_printf (".%s.%08x.tmp", base, g_random_int ());
      g_autoptr(GFile) tmp = g_file_get_child (parent, tmp_name);
      g_autoptr(GError) local_error = NULL;
      GFileOutputStream *out = g_file_create (tmp, G_FILE_CREATE_NONE, cancellable, &local_error);

      if (out != NULL)
        {
          *temporary = g_steal_pointer (&tmp);
          return out;
        }
      if (attempt == 99 || !g_error_matches (local_error, G_IO_ERROR, G_IO_ERROR_EXISTS))
        {
          g_propagate_error (error, g_steal_pointer (&local_error));
          return NULL;
        }
    }
}

gboolean
piq_io_replace_file (GFile          *file,
                     PiqIoWriteFunc  write,
                     gpointer        a,
                     gpointer        b,
                     GCancellable   *cancellable,
                     GError        **error)
{
  g_autoptr(GFile) tmp = NULL;
  g_autoptr(GFileOutputStream) out = NULL;
  gboolean ok;

  out = create_temporary (file, &tmp, cancellable, error);
  if (out == NULL)
    return FALSE;
  ok = write (a, b, G_OUTPUT_STREAM (out), cancellable, error) &&
       g_output_stream_close (G_OUTPUT_STREAM (out), cancellable, error) &&
       g_file_move (tmp, file, G_FILE_COPY_OVERWRITE | G_FILE_COPY_NO_FALLBACK_FOR_MOVE,
                    cancellable, NULL, NULL, error);
  if (!ok)
    {
      g_output_stream_close (G_OUTPUT_STREAM (out), NULL, NULL);
      g_file_delete (tmp, NULL, NULL);
    }
  return ok;
}

static gboolean
write_tensor (gpointer self, gpointer format, GOutputStream *stream, GCancellable *cancellable,
              GError **error)
{
  return piq_tensor_save_to_stream (self, stream, GPOINTER_TO_INT (format), cancellable, error);
}

/**
 * piq_tensor_save_to_file:
 * @self: a tensor
 * @file: where to write
 * @format: as for [method@Piq.Tensor.save_to_stream]
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Writes @self to @file as [method@Piq.Tensor.save_to_stream] does, and
 * atomically: the bytes go to a new temporary file in @file's directory
 * (`.NAME.XXXXXXXX.tmp`), which is renamed over @file once complete and
 * removed on any failure, so @file holds either its old contents or the whole
 * tensor. (A process killed while writing leaves the temporary file behind:
 * removing it on a signal is the application's to do, as `piquant` does.)
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_tensor_save_to_file (PiqTensor      *self,
                         GFile          *file,
                         PiqFileFormat   format,
                         GCancellable   *cancellable,
                         GError        **error)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), FALSE);
  g_return_val_if_fail (G_IS_FILE (file), FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_savable (self, format, error))
    return FALSE;
  return piq_io_replace_file (file, write_tensor, self, GINT_TO_POINTER (format), cancellable,
                              error);
}

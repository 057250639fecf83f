/* fuzz-piqt.c: libFuzzer harness for the .piqt container reader (piquant/piq-io-piqt.c)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is a whole .piqt file, read as `piquant dequantize` reads one: the prefix
 * (piq_container_parse_prefix), the header text (piq_container_parse_header), the size
 * rule (piq_container_check_file_size, against the input's length); then the codes,
 * scales and zero points that follow, each copied into an allocation of exactly its size
 * (so that ASan sees a read past it) and dequantized by piq_quantizer_dequantize_raw with
 * the container's format, library shape, scale and zero point, one thread, into f32 and
 * into the source dtype, as the tool does with and without --output-dtype. The same
 * bytes wrapped by piq_tensor_new_quantized_from_bytes and dequantized into an f32
 * tensor must give the same floats. The input is also parsed as header text alone, as
 * version 1 and as version 2, so that mutations of the keys need no valid prefix.
 * Whatever passes the tool's checks is also read by the library's reader
 * (piq_tensor_new_from_stream); a tensor it returns is saved, read back, and must be the
 * same.
 *
 * Besides the sanitizers' checks it asserts the promises:
 *  - FALSE (NULL) exactly when a GError is set, with a message, in PIQ_ERROR;
 *  - an accepted header has a valid format, a library shape of n_elements elements
 *    whose sizes are the announced ones, and (as a file) data at a multiple of 64;
 *  - the version-2 header the writer writes for it reads back the same;
 *  - the raw and the tensor form of dequantize agree, on success and on failure.
 * No GLib warning or critical may be logged. A header that announces more than
 * MAX_ELEMENTS elements goes no further than the header checks, so that a run stays
 * well above 1,000 exec/s.
 *
 * Run: ./fuzz-piqt corpus/piqt or `make fuzz` (tests/fuzz/Makefile.am).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piquant.h"
#include "piq-io-piqt-private.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv);

#define FAIL(...) do { fprintf (stderr, "fuzz-piqt: " __VA_ARGS__); fputc ('\n', stderr); abort (); } while (0)
#define CHECK(cond) do { if (!(cond)) FAIL ("%s:%d: %s failed", __FILE__, __LINE__, #cond); } while (0)
/* memcmp that takes NULL with a length of 0 */
#define MEMCMP(a, b, n) ((n) == 0 ? 0 : memcmp ((a), (b), (n)))

#define MAX_ELEMENTS 4096

static PiqQuantizer *quantizer;

static void
log_handler (const char     *domain,
             GLogLevelFlags  level,
             const char     *message,
             gpointer        user_data)
{
  (void) user_data;
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    FAIL ("unexpected log message [%s] %s", domain ? domain : "-", message);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  g_log_set_default_handler (log_handler, NULL);
  g_log_set_handler ("GLib-GObject", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  g_log_set_handler ("GLib", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  g_log_set_handler ("Piquant", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  quantizer = piq_quantizer_new ();
  piq_quantizer_set_n_threads (quantizer, 1);
  return 0;
}

/* FALSE exactly when @error is set, with a message, in @domain. */
static void
check_result (const char *op, gboolean ok, const GError *error, GQuark domain)
{
  if (ok && error != NULL)
    FAIL ("%s succeeded with an error set: %s", op, error->message);
  if (!ok && error == NULL)
    FAIL ("%s failed without setting an error", op);
  if (error != NULL)
    {
      if (error->domain != domain)
        FAIL ("%s: error in domain %s: %s", op, g_quark_to_string (error->domain), error->message);
      if (error->message == NULL || error->message[0] == '\0')
        FAIL ("%s: an error without a message", op);
    }
}

static gboolean
same_double (double a, double b)
{
  return a == b || (isnan (a) && isnan (b));
}

/* What an accepted header promises, and that the writer's header for it reads back the
 * same. */
static void
check_accepted (const PiqContainer *c)
{
  g_auto(PiqContainer) again = { 0 };
  g_autoptr(GError) error = NULL;
  g_autofree guint8 *header = NULL;
  PiqContainer out;
  gsize codes_bytes, scales_bytes, zero_points_bytes, length;
  guint64 count = 1, total;
  guint32 text_len;
  gboolean ok;

  CHECK (c->version == 1 || c->version == 2);
  CHECK (c->format != NULL && piq_format_validate (c->format, NULL));
  CHECK (piq_format_get_dtype (c->format) == c->dtype);
  CHECK (piq_format_get_granularity (c->format) == c->granularity);
  CHECK (piq_dtype_is_float (c->source_dtype));
  CHECK (c->n_dims <= PIQ_NPY_MAX_DIMS);
  CHECK (c->library_n_dims >= 1 && c->library_n_dims <= PIQ_MAX_DIMS);
  for (guint i = 0; i < c->library_n_dims; i++)
    CHECK (g_uint64_checked_mul (&count, count, c->library_shape[i]));
  CHECK (count == c->n_elements);
  CHECK (piq_format_get_sizes (c->format, c->library_shape, c->library_n_dims, &codes_bytes,
                               &scales_bytes, &zero_points_bytes, NULL));
  CHECK (codes_bytes == c->data_bytes && scales_bytes == c->scales_bytes &&
         zero_points_bytes == c->zero_points_bytes);

  /* Version 1 reshapes its channels: only version 2 is written back as it was read. */
  if (c->version != 2)
    return;
  out = *c;
  out.scale_rule = "explicit";
  header = piq_container_format_header (&out, &length);
  CHECK (length % PIQ_CONTAINER_ALIGN == 0 && length >= PIQ_CONTAINER_PREFIX_LEN);
  ok = piq_container_parse_prefix (header, "written", &again, &text_len, &error);
  check_result ("parse_prefix (written)", ok, error, PIQ_ERROR);
  CHECK (ok && text_len == length - PIQ_CONTAINER_PREFIX_LEN);
  ok = piq_container_parse_header ((const char *) header + PIQ_CONTAINER_PREFIX_LEN, text_len,
                                   "written", &again, &error);
  if (!ok)
    FAIL ("the header written for an accepted one is refused: %s", error->message);
  CHECK (error == NULL);
  CHECK (piq_format_equal (again.format, c->format));
  CHECK (again.n_elements == c->n_elements && again.n_dims == c->n_dims);
  CHECK (MEMCMP (again.shape, c->shape, c->n_dims * sizeof c->shape[0]) == 0);
  CHECK (again.library_n_dims == c->library_n_dims);
  CHECK (memcmp (again.library_shape, c->library_shape,
                 c->library_n_dims * sizeof c->library_shape[0]) == 0);
  CHECK (same_double (again.scale, c->scale) && again.zero_point == c->zero_point);
  CHECK (again.source_dtype == c->source_dtype);
  CHECK (again.data_bytes == c->data_bytes && again.scales_bytes == c->scales_bytes &&
         again.zero_points_bytes == c->zero_points_bytes);
  CHECK (again.data_offset == length);
  CHECK (piq_container_check_file_size (&again, "written",
                                        length + c->data_bytes + c->scales_bytes +
                                        c->zero_points_bytes, NULL));
  CHECK (piq_container_get_file_size (&again, "written", &total, NULL) &&
         total == length + c->data_bytes + c->scales_bytes + c->zero_points_bytes);
}

/* An allocation of exactly @n bytes (one for none: the tool passes no NULL codes). */
static guint8 *
copy_exact (const guint8 *p, gsize n)
{
  guint8 *copy = g_malloc (MAX (n, 1));

  if (n > 0)
    memcpy (copy, p, n);
  return copy;
}

/* The tool's dequantize path over the bytes that follow an accepted header, and the
 * tensor form over the same bytes. */
static void
dequantize (const PiqContainer *c, const guint8 *data)
{
  const guint8 *codes_at = data + c->data_offset;
  const guint8 *scales_at = codes_at + c->data_bytes;
  const guint8 *zero_points_at = scales_at + c->scales_bytes;
  g_autofree guint8 *codes = copy_exact (codes_at, c->data_bytes);
  g_autofree guint8 *scales = c->scales_bytes > 0 ? copy_exact (scales_at, c->scales_bytes) : NULL;
  g_autofree guint8 *zero_points = c->zero_points_bytes > 0
                                   ? copy_exact (zero_points_at, c->zero_points_bytes) : NULL;
  g_autofree guint8 *f32 = NULL;
  g_autoptr(GBytes) codes_bytes = NULL;
  g_autoptr(GBytes) scales_bytes = NULL;
  g_autoptr(GBytes) zero_points_bytes = NULL;
  g_autoptr(PiqTensor) tensor = NULL;
  g_autoptr(PiqTensor) dst = NULL;
  g_autoptr(GError) error = NULL;
  gsize f32_bytes;
  gboolean ok, raw_ok;

  /* into f32 (--output-dtype f32) */
  ok = piq_dtype_get_size_for_n (PIQ_DTYPE_F32, c->n_elements, &f32_bytes, &error);
  check_result ("get_size_for_n", ok, error, PIQ_ERROR);
  CHECK (ok);
  f32 = g_malloc (MAX (f32_bytes, 1));
  raw_ok = piq_quantizer_dequantize_raw (quantizer, c->format, c->scale, c->zero_point, codes,
                                         c->data_bytes, c->library_shape, c->library_n_dims,
                                         scales, c->scales_bytes, zero_points,
                                         c->zero_points_bytes, PIQ_DTYPE_F32, f32, f32_bytes,
                                         PIQ_REDUCE_SET, &error);
  check_result ("dequantize_raw (f32)", raw_ok, error, PIQ_ERROR);
  g_clear_error (&error);

  /* into the source dtype (the tool's default) */
  if (c->source_dtype != PIQ_DTYPE_F32)
    {
      g_autofree guint8 *out = NULL;
      gsize out_bytes;

      ok = piq_dtype_get_size_for_n (c->source_dtype, c->n_elements, &out_bytes, &error);
      check_result ("get_size_for_n", ok, error, PIQ_ERROR);
      CHECK (ok);
      out = g_malloc (MAX (out_bytes, 1));
      ok = piq_quantizer_dequantize_raw (quantizer, c->format, c->scale, c->zero_point, codes,
                                         c->data_bytes, c->library_shape, c->library_n_dims,
                                         scales, c->scales_bytes, zero_points,
                                         c->zero_points_bytes, c->source_dtype, out, out_bytes,
                                         PIQ_REDUCE_SET, &error);
      /* It may differ from f32's answer: f64 data computes in binary64, where a scale
       * such as 1e-87 is still in range. */
      check_result ("dequantize_raw (source dtype)", ok, error, PIQ_ERROR);
      g_clear_error (&error);
    }

  /* the tensor form */
  codes_bytes = g_bytes_new (codes_at, c->data_bytes);
  if (c->scales_bytes > 0)
    scales_bytes = g_bytes_new (scales_at, c->scales_bytes);
  if (c->zero_points_bytes > 0)
    zero_points_bytes = g_bytes_new (zero_points_at, c->zero_points_bytes);
  tensor = piq_tensor_new_quantized_from_bytes (c->format, c->library_shape, c->library_n_dims,
                                                codes_bytes, scales_bytes, zero_points_bytes,
                                                c->scale, c->zero_point, &error);
  check_result ("new_quantized_from_bytes", tensor != NULL, error, PIQ_ERROR);
  if (tensor == NULL)
    {
      if (raw_ok)
        FAIL ("dequantize_raw accepts what new_quantized_from_bytes refuses: %s", error->message);
      return;
    }
  dst = piq_tensor_new_shaped (PIQ_DTYPE_F32, c->library_shape, c->library_n_dims, &error);
  check_result ("new_shaped", dst != NULL, error, PIQ_ERROR);
  CHECK (dst != NULL);
  ok = piq_quantizer_dequantize (quantizer, tensor, dst, PIQ_REDUCE_SET, &error);
  check_result ("dequantize", ok, error, PIQ_ERROR);
  if (ok != raw_ok)
    FAIL ("dequantize %s what dequantize_raw %s: %s", ok ? "accepts" : "refuses",
          raw_ok ? "accepts" : "refuses", error != NULL ? error->message : "");
  if (ok)
    {
      gsize n;
      gconstpointer floats = piq_tensor_get_data (dst, &n);

      CHECK (n == f32_bytes);
      if (MEMCMP (floats, f32, n) != 0)
        FAIL ("dequantize and dequantize_raw give different floats");
    }
}

static void read_stream (const uint8_t *data, size_t size);

/* The input as a whole file, as the tool reads it. */
static void
read_file (const uint8_t *data, size_t size)
{
  g_auto(PiqContainer) c = { 0 };
  g_autoptr(GError) error = NULL;
  guint32 text_len;
  guint64 total;
  gboolean ok;

  if (size < PIQ_CONTAINER_PREFIX_LEN)
    return;   /* the tool: "too short for a piquant container" */
  ok = piq_container_parse_prefix (data, "input", &c, &text_len, &error);
  check_result ("parse_prefix", ok, error, PIQ_ERROR);
  if (!ok)
    return;
  CHECK (c.version >= 1 && c.version <= PIQ_CONTAINER_VERSION);
  CHECK (text_len <= PIQ_CONTAINER_MAX_HEADER_LEN);
  CHECK ((PIQ_CONTAINER_PREFIX_LEN + text_len) % PIQ_CONTAINER_ALIGN == 0);
  if (text_len > size - PIQ_CONTAINER_PREFIX_LEN)
    return;   /* the tool: "the file ends inside the container header" */

  ok = piq_container_parse_header ((const char *) data + PIQ_CONTAINER_PREFIX_LEN, text_len,
                                   "input", &c, &error);
  check_result ("parse_header", ok, error, PIQ_ERROR);
  if (!ok)
    return;
  CHECK (c.data_offset == PIQ_CONTAINER_PREFIX_LEN + text_len);
  CHECK (c.data_offset % PIQ_CONTAINER_ALIGN == 0);
  check_accepted (&c);

  ok = piq_container_get_file_size (&c, "input", &total, &error);
  check_result ("get_file_size", ok, error, PIQ_ERROR);
  g_clear_error (&error);
  ok = piq_container_check_file_size (&c, "input", size, &error);
  check_result ("check_file_size", ok, error, PIQ_ERROR);
  if (!ok)
    return;
  CHECK (total == size);

  if (c.n_elements > MAX_ELEMENTS)
    return;
  dequantize (&c, data);
  read_stream (data, size);
}

/* The input through the library's reader; what it returns must survive a save and a
 * read unchanged. */
static void
read_stream (const uint8_t *data, size_t size)
{
  g_autoptr(GInputStream) in = g_memory_input_stream_new_from_data (data, size, NULL);
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr(GInputStream) again_in = NULL;
  g_autoptr(GBytes) saved = NULL;
  g_autoptr(PiqTensor) t = NULL;
  g_autoptr(PiqTensor) again = NULL;
  g_autoptr(GBytes) s1 = NULL, s2 = NULL, z1 = NULL, z2 = NULL;
  g_autoptr(GError) error = NULL;
  const guint64 *shape1, *shape2;
  gconstpointer d1, d2;
  gsize n1, n2;
  guint nd1, nd2;
  gboolean ok;

  t = piq_tensor_new_from_stream (in, NULL, &error);
  check_result ("new_from_stream", t != NULL, error, PIQ_ERROR);
  if (t == NULL)
    return;
  ok = piq_tensor_save_to_stream (t, out, PIQ_FILE_FORMAT_PIQT, NULL, &error);
  check_result ("save_to_stream", ok, error, PIQ_ERROR);
  CHECK (ok && g_output_stream_close (out, NULL, NULL));
  saved = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  again_in = g_memory_input_stream_new_from_bytes (saved);
  again = piq_tensor_new_from_stream (again_in, NULL, &error);
  if (again == NULL)
    FAIL ("a saved tensor does not read back: %s", error->message);
  CHECK (piq_format_equal (piq_tensor_get_format (t), piq_tensor_get_format (again)));
  shape1 = piq_tensor_get_shape (t, &nd1);
  shape2 = piq_tensor_get_shape (again, &nd2);
  CHECK (nd1 == nd2 && memcmp (shape1, shape2, nd1 * sizeof *shape1) == 0);
  d1 = piq_tensor_get_data (t, &n1);
  d2 = piq_tensor_get_data (again, &n2);
  CHECK (n1 == n2 && MEMCMP (d1, d2, n1) == 0);
  s1 = piq_tensor_get_scales (t);
  s2 = piq_tensor_get_scales (again);
  z1 = piq_tensor_get_zero_points (t);
  z2 = piq_tensor_get_zero_points (again);
  CHECK ((s1 == NULL) == (s2 == NULL) && (s1 == NULL || g_bytes_equal (s1, s2)));
  CHECK ((z1 == NULL) == (z2 == NULL) && (z1 == NULL || g_bytes_equal (z1, z2)));
  CHECK (same_double (piq_tensor_get_scale (t), piq_tensor_get_scale (again)));
  CHECK (piq_tensor_get_zero_point (t) == piq_tensor_get_zero_point (again));
}

/* The input as header text alone, read as @version lays it out. */
static void
read_text (const uint8_t *data, size_t size, guint version)
{
  g_auto(PiqContainer) c = { 0 };
  g_autoptr(GError) error = NULL;
  gboolean ok;

  c.version = version;
  ok = piq_container_parse_header ((const char *) data, size, "text", &c, &error);
  check_result ("parse_header (text)", ok, error, PIQ_ERROR);
  if (ok)
    check_accepted (&c);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  read_file (data, size);
  read_text (data, size, 1);
  read_text (data, size, 2);
  return 0;
}

/* test-io.c: tensors saved to and loaded from .npy files and .piqt containers
 *
 * The .npy oracle is numpy itself: the bytes numpy.save() wrote for a small
 * array (numpy 1.24, Debian 12), checked byte for byte against what the
 * library writes, and read back. The binding suites compare with numpy.save
 * and numpy.load on random arrays; tests/test-tool.sh reads the tool's .piqt
 * files with an independent Python reader. Here: every dtype and preset
 * round-trips through memory and through files, files are replaced
 * atomically, and every truncation, wrong magic and unsavable tensor is a
 * GError with nothing written. safetensors files are written here byte by
 * byte from the published format (length, JSON, data) and read back.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include <glib/gstdio.h>
#include <piquant/piquant.h>

/* numpy.save(f, numpy.arange(12, dtype='<f4').reshape(3, 4)): the header
 * (128 bytes: magic, version 1.0, length 118, the dict padded to 64) and then
 * the 48 data bytes. */
static const char numpy_header[] =
  "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"
  "                                                          \n";

static GBytes *
save_to_bytes (PiqTensor *t, PiqFileFormat format, GError **error)
{
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();

  if (!piq_tensor_save_to_stream (t, out, format, NULL, error))
    return NULL;
  g_assert_true (g_output_stream_close (out, NULL, NULL));
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
}

static PiqTensor *
load_from_bytes (GBytes *bytes, GError **error)
{
  g_autoptr(GInputStream) in = g_memory_input_stream_new_from_bytes (bytes);

  return piq_tensor_new_from_stream (in, NULL, error);
}

static void
assert_same_tensor (PiqTensor *a, PiqTensor *b)
{
  guint na, nb;
  const guint64 *sa = piq_tensor_get_shape (a, &na), *sb = piq_tensor_get_shape (b, &nb);
  gsize la, lb;
  gconstpointer da = piq_tensor_get_data (a, &la), db = piq_tensor_get_data (b, &lb);
  g_autoptr(GBytes) s1 = piq_tensor_get_scales (a);
  g_autoptr(GBytes) s2 = piq_tensor_get_scales (b);
  g_autoptr(GBytes) z1 = piq_tensor_get_zero_points (a);
  g_autoptr(GBytes) z2 = piq_tensor_get_zero_points (b);

  g_assert_cmpint (piq_tensor_get_dtype (a), ==, piq_tensor_get_dtype (b));
  g_assert_cmpmem (sa, na * sizeof *sa, sb, nb * sizeof *sb);
  g_assert_cmpmem (da, la, db, lb);
  g_assert_true ((piq_tensor_get_format (a) == NULL) == (piq_tensor_get_format (b) == NULL));
  if (piq_tensor_get_format (a) != NULL)
    {
      g_assert_true (piq_format_equal (piq_tensor_get_format (a), piq_tensor_get_format (b)));
      g_assert_cmpfloat (piq_tensor_get_scale (a), ==, piq_tensor_get_scale (b));
      g_assert_cmpint (piq_tensor_get_zero_point (a), ==, piq_tensor_get_zero_point (b));
    }
  g_assert_true ((s1 == NULL) == (s2 == NULL));
  g_assert_true (s1 == NULL || g_bytes_equal (s1, s2));
  g_assert_true ((z1 == NULL) == (z2 == NULL));
  g_assert_true (z1 == NULL || g_bytes_equal (z1, z2));
}

/* The bytes numpy writes, and numpy's bytes read back. */
static void
test_npy_numpy_bytes (void)
{
  g_autoptr(GError) error = NULL;
  guint64 shape[2] = { 3, 4 };
  float v[12];
  g_autoptr(PiqTensor) t = NULL;
  g_autoptr(PiqTensor) back = NULL;
  g_autoptr(GBytes) saved = NULL;
  g_autoptr(GByteArray) expected = g_byte_array_new ();
  g_autoptr(GBytes) expected_bytes = NULL;

  for (int i = 0; i < 12; i++)
    v[i] = (float) i;
  g_assert_cmpuint (sizeof numpy_header - 1, ==, 128);
  g_byte_array_append (expected, (const guint8 *) numpy_header, sizeof numpy_header - 1);
  g_byte_array_append (expected, (const guint8 *) v, sizeof v);
  expected_bytes = g_byte_array_free_to_bytes (g_steal_pointer (&expected));

  t = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
  g_assert_no_error (error);
  g_assert_true (piq_tensor_set_data (t, (const guint8 *) v, sizeof v, &error));
  saved = save_to_bytes (t, PIQ_FILE_FORMAT_NPY, &error);
  g_assert_no_error (error);
  g_assert_true (g_bytes_equal (saved, expected_bytes));

  back = load_from_bytes (expected_bytes, &error);
  g_assert_no_error (error);
  assert_same_tensor (t, back);
}

/* Every dtype .npy holds, in 1 to 3 dimensions, including a 0-d array. */
static void
test_npy_dtypes (void)
{
  static const PiqDtype dtypes[] = {
    PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_F16, PIQ_DTYPE_BF16, PIQ_DTYPE_UINT8, PIQ_DTYPE_INT8,
    PIQ_DTYPE_UINT16, PIQ_DTYPE_INT16, PIQ_DTYPE_UINT32, PIQ_DTYPE_INT32, PIQ_DTYPE_UINT64,
    PIQ_DTYPE_INT64,
  };
  static const guint64 shapes[][3] = { { 5, 0, 0 }, { 3, 7, 0 }, { 2, 3, 5 } };

  for (gsize d = 0; d < G_N_ELEMENTS (dtypes); d++)
    for (guint n = 1; n <= 3; n++)
      {
        g_autoptr(GError) error = NULL;
        g_autoptr(PiqTensor) t = piq_tensor_new_shaped (dtypes[d], shapes[n - 1], n, &error);
        g_autoptr(PiqTensor) back = NULL;
        g_autoptr(GBytes) saved = NULL;
        gsize size;
        guint8 *p;

        g_assert_no_error (error);
        p = piq_tensor_get_writable_data (t, &size);
        for (gsize i = 0; i < size; i++)
          p[i] = (guint8) (i * 37 + d);
        saved = save_to_bytes (t, PIQ_FILE_FORMAT_NPY, &error);
        g_assert_no_error (error);
        back = load_from_bytes (saved, &error);
        g_assert_no_error (error);
        /* bfloat16 travels as uint16: the bytes come back, the dtype is uint16 */
        if (dtypes[d] == PIQ_DTYPE_BF16)
          {
            gsize n_back;
            gconstpointer b = piq_tensor_get_data (back, &n_back);

            g_assert_cmpint (piq_tensor_get_dtype (back), ==, PIQ_DTYPE_UINT16);
            g_assert_cmpmem (b, n_back, p, size);
          }
        else
          assert_same_tensor (t, back);
      }

  /* a 0-d array becomes shape [1] */
  {
    static const char zero_d[] = "\x93NUMPY\x01\x00\x38\x00{'descr': '<f8', 'fortran_order': False, "
                                 "'shape': (), }\n" "\0\0\0\0\0\0\xf0\x3f";
    g_autoptr(GBytes) b = g_bytes_new_static (zero_d, sizeof zero_d - 1);
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqTensor) t = load_from_bytes (b, &error);
    guint n_dims;

    g_assert_no_error (error);
    g_assert_cmpuint (piq_tensor_get_shape (t, &n_dims)[0], ==, 1);
    g_assert_cmpuint (n_dims, ==, 1);
    g_assert_cmpfloat (piq_tensor_get_value (t, 0), ==, 1.0);
  }
}

/* A strided tensor is written packed. */
static void
test_npy_strided (void)
{
  g_autoptr(GError) error = NULL;
  float buf[3 * 5];
  guint64 shape[2] = { 3, 4 };
  g_autoptr(GBytes) b = NULL;
  g_autoptr(PiqTensor) t = NULL;
  g_autoptr(PiqTensor) back = NULL;
  g_autoptr(GBytes) saved = NULL;
  const float *v;
  gsize n;

  for (int i = 0; i < 15; i++)
    buf[i] = (float) i;
  b = g_bytes_new (buf, sizeof buf);
  t = piq_tensor_new_strided (PIQ_DTYPE_F32, shape, 2, b, 4, 5 * sizeof (float), &error);
  g_assert_no_error (error);
  saved = save_to_bytes (t, PIQ_FILE_FORMAT_NPY, &error);
  g_assert_no_error (error);
  back = load_from_bytes (saved, &error);
  g_assert_no_error (error);
  v = piq_tensor_get_data (back, &n);
  g_assert_cmpuint (n, ==, 12 * sizeof (float));
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++)
      g_assert_cmpfloat (v[r * 4 + c], ==, buf[1 + r * 5 + c]);
}

static PiqTensor *
normal_tensor (guint64 rows, guint64 cols)
{
  guint64 shape[2] = { rows, cols };
  g_autoptr(PiqTensor) t = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, NULL);
  float *p = piq_tensor_get_writable_data (t, NULL);
  guint64 s = 0x9e3779b97f4a7c15ull;

  for (guint64 i = 0; i < rows * cols; i++)
    {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      p[i] = (float) ((double) (s >> 11) * 0x1p-53 * 8.0 - 4.0);
    }
  return g_steal_pointer (&t);
}

/* Every preset, and integers per tensor and per channel, round-trip through a
 * container, and dequantize the same after. */
static void
test_piqt_round_trip (void)
{
  g_autofree const char **presets = piq_format_list_presets ();
  g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr(PiqTensor) x = normal_tensor (6, 100);
  g_autoptr(GPtrArray) formats = g_ptr_array_new_with_free_func (g_object_unref);
  PiqFormat *f;

  for (gsize i = 0; presets[i] != NULL; i++)
    {
      g_autoptr(GError) error = NULL;

      g_ptr_array_add (formats, piq_format_new_preset (presets[i], &error));
      g_assert_no_error (error);
    }
  f = piq_format_new (PIQ_DTYPE_UINT8);
  g_ptr_array_add (formats, f);
  g_ptr_array_add (formats, piq_format_new_per_channel (PIQ_DTYPE_INT4, 0));
  g_ptr_array_add (formats, piq_format_new_per_block (PIQ_DTYPE_UINT4, 32, PIQ_DTYPE_F16));

  for (guint i = 0; i < formats->len; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqRecipe) recipe = piq_recipe_new ();
      g_autoptr(PiqTensor) t = NULL;
      g_autoptr(PiqTensor) back = NULL;
      g_autoptr(PiqTensor) y1 = NULL;
      g_autoptr(PiqTensor) y2 = NULL;
      g_autoptr(GBytes) saved = NULL;
      gsize n1, n2;
      gconstpointer d1, d2;

      f = formats->pdata[i];
      if (piq_format_get_granularity (f) == PIQ_GRANULARITY_TENSOR &&
          !piq_quantizer_compute_params (q, f, recipe, x, &error))
        g_error ("%s", error->message);
      t = piq_quantizer_quantize_new (q, f, recipe, x, &error);
      g_assert_no_error (error);
      saved = save_to_bytes (t, PIQ_FILE_FORMAT_PIQT, &error);
      g_assert_no_error (error);
      back = load_from_bytes (saved, &error);
      g_assert_no_error (error);
      assert_same_tensor (t, back);
      y1 = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
      g_assert_no_error (error);
      y2 = piq_quantizer_dequantize_new (q, back, PIQ_DTYPE_F32, &error);
      g_assert_no_error (error);
      d1 = piq_tensor_get_data (y1, &n1);
      d2 = piq_tensor_get_data (y2, &n2);
      g_assert_cmpmem (d1, n1, d2, n2);

      /* Every truncation is refused, as a file format error. */
      for (gsize cut = 0; cut < g_bytes_get_size (saved); cut += 1 + cut / 8)
        {
          g_autoptr(GBytes) part = g_bytes_new_from_bytes (saved, 0, cut);
          g_autoptr(GError) e = NULL;
          g_autoptr(PiqTensor) none = load_from_bytes (part, &e);

          g_assert_null (none);
          g_assert_error (e, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT);
        }
    }
}

static void
test_refusals (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) x = normal_tensor (2, 64);
  g_autoptr(PiqFormat) nf4 = piq_format_new_preset ("nf4", NULL);
  g_autoptr(PiqTensor) q = piq_quantizer_quantize_new (piq_quantizer_get_default (), nf4, NULL, x,
                                                       &error);
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr(PiqTensor) packed = piq_tensor_new (PIQ_DTYPE_UINT4, 10, NULL);
  static const char *bad[] = { "", "PIQ", "\x93NUMPX\x01\x00", "hello, world", "PIQT\x03\x00\x00\x00" };

  g_assert_no_error (error);
  /* a quantized tensor is not a .npy; a float tensor is not a container;
   * a packed dtype has no numpy dtype; nothing is written for any of them */
  g_assert_false (piq_tensor_save_to_stream (q, out, PIQ_FILE_FORMAT_NPY, NULL, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_false (piq_tensor_save_to_stream (x, out, PIQ_FILE_FORMAT_PIQT, NULL, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_false (piq_tensor_save_to_stream (packed, out, PIQ_FILE_FORMAT_NPY, NULL, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_false (piq_tensor_save_to_stream (x, out, (PiqFileFormat) 7, NULL, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_cmpuint (g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out)), ==, 0);

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr(GBytes) b = g_bytes_new_static (bad[i], strlen (bad[i]) + (i == 2 || i == 4 ? 1 : 0));
      g_autoptr(PiqTensor) none = load_from_bytes (b, &error);

      g_assert_null (none);
      g_assert_true (g_error_matches (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT) ||
                     g_error_matches (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED));
      g_clear_error (&error);
    }

  /* A stream announcing far more data than it holds ends early: no memory
   * is taken for what never arrives (2^40 floats would be 4 TiB). */
  {
    static const char huge[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }";
    g_autoptr(GByteArray) a = g_byte_array_new ();
    guint16 len = (guint16) strlen (huge) + 1;
    g_autoptr(GBytes) b = NULL;
    g_autoptr(PiqTensor) none = NULL;

    g_byte_array_append (a, (const guint8 *) "\x93NUMPY\x01\x00", 8);
    g_byte_array_append (a, (const guint8[]) { len & 0xff, len >> 8 }, 2);
    g_byte_array_append (a, (const guint8 *) huge, len - 1);
    g_byte_array_append (a, (const guint8 *) "\n0123456789abcdef", 17);
    b = g_byte_array_free_to_bytes (g_steal_pointer (&a));
    none = load_from_bytes (b, &error);
    g_assert_null (none);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT);
    g_clear_error (&error);
  }

  /* .npy that piquant cannot represent */
  {
    static const char *dicts[] = {
      "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
      "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
    };

    for (gsize i = 0; i < G_N_ELEMENTS (dicts); i++)
      {
        g_autoptr(GByteArray) a = g_byte_array_new ();
        guint16 len = (guint16) strlen (dicts[i]) + 1;
        g_autoptr(GBytes) b = NULL;
        g_autoptr(PiqTensor) none = NULL;

        g_byte_array_append (a, (const guint8 *) "\x93NUMPY\x01\x00", 8);
        g_byte_array_append (a, (const guint8[]) { len & 0xff, len >> 8 }, 2);
        g_byte_array_append (a, (const guint8 *) dicts[i], len - 1);
        g_byte_array_append (a, (const guint8 *) "\n", 1);
        g_byte_array_append (a, (const guint8 *) "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
        b = g_byte_array_free_to_bytes (g_steal_pointer (&a));
        none = load_from_bytes (b, &error);
        g_assert_null (none);
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
        g_clear_error (&error);
      }
  }
}

static gboolean
dir_has_only (const char *dir, const char *name)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *e;
  guint n = 0;

  while ((e = g_dir_read_name (d)) != NULL)
    {
      if (name == NULL || strcmp (e, name) != 0)
        return FALSE;
      n++;
    }
  return name == NULL || n == 1;
}

/* Files: the data goes through a temporary file that replaces the target only
 * when complete; failures leave the old file and no temporary behind; the
 * size is checked before the data is read. */
static void
test_files (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("test-io-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "w.piqt", NULL);
  g_autofree char *npy_path = g_build_filename (dir, "x.npy", NULL);
  g_autofree char *missing = g_build_filename (dir, "no", "such", "dir.npy", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GFile) npy = g_file_new_for_path (npy_path);
  g_autoptr(GFile) nowhere = g_file_new_for_path (missing);
  g_autoptr(PiqTensor) x = normal_tensor (4, 64);
  g_autoptr(PiqFormat) q4 = piq_format_new_preset ("q4_0", NULL);
  g_autoptr(PiqTensor) q = piq_quantizer_quantize_new (piq_quantizer_get_default (), q4, NULL, x,
                                                       &error);
  g_autoptr(PiqTensor) back = NULL;
  g_autofree char *old = NULL;
  gsize old_len;

  g_assert_no_error (error);
  g_assert_true (piq_tensor_save_to_file (q, file, PIQ_FILE_FORMAT_PIQT, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (dir_has_only (dir, "w.piqt"));
  back = piq_tensor_new_from_file (file, NULL, &error);
  g_assert_no_error (error);
  assert_same_tensor (q, back);

  /* a refused save leaves the old file as it was, and nothing else */
  g_assert_true (g_file_get_contents (path, &old, &old_len, NULL));
  g_assert_false (piq_tensor_save_to_file (x, file, PIQ_FILE_FORMAT_PIQT, NULL, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_true (dir_has_only (dir, "w.piqt"));
  {
    g_autofree char *now = NULL;
    gsize now_len;

    g_assert_true (g_file_get_contents (path, &now, &now_len, NULL));
    g_assert_cmpmem (now, now_len, old, old_len);
  }

  /* a save into a directory that does not exist */
  g_assert_false (piq_tensor_save_to_file (x, nowhere, PIQ_FILE_FORMAT_NPY, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* replacing the container by an .npy of the same name */
  g_assert_true (piq_tensor_save_to_file (x, file, PIQ_FILE_FORMAT_NPY, NULL, &error));
  g_assert_no_error (error);
  g_clear_object (&back);
  back = piq_tensor_new_from_file (file, NULL, &error);
  g_assert_no_error (error);
  assert_same_tensor (x, back);
  g_assert_true (g_remove (path) == 0);

  /* a truncated .npy file is refused by its size */
  {
    g_autofree char *contents = NULL;
    gsize len;
    g_autoptr(PiqTensor) none = NULL;

    g_assert_true (piq_tensor_save_to_file (x, npy, PIQ_FILE_FORMAT_NPY, NULL, &error));
    g_assert_true (g_file_get_contents (npy_path, &contents, &len, NULL));
    g_assert_true (g_file_set_contents (npy_path, contents, len - 1, NULL));
    none = piq_tensor_new_from_file (npy, NULL, &error);
    g_assert_null (none);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT);
    g_assert_nonnull (strstr (error->message, "too short"));
    g_clear_error (&error);
    g_assert_true (g_remove (npy_path) == 0);
  }

  /* a missing file */
  g_assert_null (piq_tensor_new_from_file (npy, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_clear_error (&error);

  g_assert_true (dir_has_only (dir, NULL));
  g_assert_true (g_rmdir (dir) == 0);
}

/* ---- safetensors ---- */

/* A file as the published format defines it, written here byte by byte: an
 * 8-byte little-endian header length, the JSON header, the data. */
static GBytes *
st_file (const char *json, const void *data, gsize n)
{
  GByteArray *a = g_byte_array_new ();
  guint64 len = strlen (json);
  guint8 len_bytes[8];

  for (int i = 0; i < 8; i++)
    len_bytes[i] = (guint8) (len >> (8 * i));
  g_byte_array_append (a, len_bytes, 8);
  g_byte_array_append (a, (const guint8 *) json, (guint) len);
  g_byte_array_append (a, data, (guint) n);
  return g_byte_array_free_to_bytes (a);
}

static PiqSafetensors *
st_load (GBytes *bytes, GError **error)
{
  g_autoptr(GInputStream) in = g_memory_input_stream_new_from_bytes (bytes);

  return piq_safetensors_new_from_stream (in, NULL, error);
}

static GBytes *
st_save (PiqSafetensors *st, GError **error)
{
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();

  if (!piq_safetensors_save_to_stream (st, out, NULL, error))
    return NULL;
  g_assert_true (g_output_stream_close (out, NULL, NULL));
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
}

/* A file written from the format's definition reads as its entries say. */
static void
test_safetensors_read (void)
{
  static const gint16 b[3] = { 1, -2, 3 };
  float a[6] = { 0, 1, 2, 3, 4, 5 };
  guint8 data[6 + 24 + 8];
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) file = NULL;
  g_autoptr(PiqSafetensors) st = NULL;
  g_auto(GStrv) names = NULL;
  g_auto(GStrv) keys = NULL;
  PiqTensor *t;
  guint n_dims;

  memcpy (data, b, 6);
  memcpy (data + 6, a, 24);
  memcpy (data + 30, "\0\0\0\0\0\0\xf0\x3f", 8);
  file = st_file ("{\"b\":{\"dtype\":\"I16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[6,30]},"
                  "\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[30,38]},"
                  "\"__metadata__\":{\"format\":\"pt\"}}", data, sizeof data);
  st = st_load (file, &error);
  g_assert_no_error (error);
  names = piq_safetensors_get_names (st);
  g_assert_cmpstrv (names, ((const char *[]) { "a", "b", "s", NULL }));
  keys = piq_safetensors_get_metadata_keys (st);
  g_assert_cmpstrv (keys, ((const char *[]) { "format", NULL }));
  g_assert_cmpstr (piq_safetensors_get_metadata (st, "format"), ==, "pt");
  t = piq_safetensors_get_tensor (st, "a");
  g_assert_cmpint (piq_tensor_get_dtype (t), ==, PIQ_DTYPE_F32);
  g_assert_cmpmem (piq_tensor_get_shape (t, &n_dims), 16, ((guint64[]) { 2, 3 }), 16);
  g_assert_cmpmem (piq_tensor_get_data (t, NULL), 24, a, 24);
  t = piq_safetensors_get_tensor (st, "b");
  g_assert_cmpint (piq_tensor_get_dtype (t), ==, PIQ_DTYPE_INT16);
  g_assert_cmpfloat (piq_tensor_get_value (t, 1), ==, -2.0);
  t = piq_safetensors_get_tensor (st, "s");          /* 0-d: shape [1] */
  g_assert_cmpuint (piq_tensor_get_n_elements (t), ==, 1);
  g_assert_cmpfloat (piq_tensor_get_value (t, 0), ==, 1.0);
  g_assert_null (piq_safetensors_get_tensor (st, "c"));
}

/* Float, integer and quantized tensors, with metadata, round-trip; the
 * header is padded to 8 bytes; every truncation is refused. */
static void
test_safetensors_round_trip (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqSafetensors) st = piq_safetensors_new ();
  g_autoptr(PiqSafetensors) back = NULL;
  g_autoptr(PiqTensor) x = normal_tensor (4, 96);
  g_autoptr(GBytes) saved = NULL;
  g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
  const char *presets[] = { "nf4", "nf4_dq", "q4_0", "mxfp4", "fp8_e4m3", "int8_block", "binary" };
  g_auto(GStrv) names = NULL;
  const guint8 *raw;
  guint64 header_len = 0;

  piq_safetensors_set_tensor (st, "x", x);
  for (gsize i = 0; i < G_N_ELEMENTS (presets); i++)
    {
      g_autoptr(PiqFormat) f = piq_format_new_preset (presets[i], &error);
      g_autoptr(PiqRecipe) recipe = piq_recipe_new ();
      g_autoptr(PiqTensor) t = NULL;

      g_assert_no_error (error);
      if (piq_format_get_granularity (f) == PIQ_GRANULARITY_TENSOR)
        g_assert_true (piq_quantizer_compute_params (q, f, recipe, x, NULL));
      t = piq_quantizer_quantize_new (q, f, recipe, x, &error);
      g_assert_no_error (error);
      piq_safetensors_set_tensor (st, presets[i], t);
    }
  {
    g_autoptr(PiqFormat) f = piq_format_new_per_channel (PIQ_DTYPE_UINT8, 0);
    g_autoptr(PiqTensor) t = piq_quantizer_quantize_new (q, f, NULL, x, &error);

    g_assert_no_error (error);
    piq_safetensors_set_tensor (st, "u8_channel", t);
  }
  piq_safetensors_set_metadata (st, "model", "test \"quoted\" \\ name");
  saved = st_save (st, &error);
  g_assert_no_error (error);
  raw = g_bytes_get_data (saved, NULL);
  for (int i = 7; i >= 0; i--)
    header_len = header_len << 8 | raw[i];
  g_assert_cmpuint (header_len % 8, ==, 0);
  g_assert_cmpint (raw[8], ==, '{');

  back = st_load (saved, &error);
  g_assert_no_error (error);
  names = piq_safetensors_get_names (back);
  g_assert_cmpuint (g_strv_length (names), ==, G_N_ELEMENTS (presets) + 2);
  for (guint i = 0; names[i] != NULL; i++)
    assert_same_tensor (piq_safetensors_get_tensor (st, names[i]),
                        piq_safetensors_get_tensor (back, names[i]));
  g_assert_cmpstr (piq_safetensors_get_metadata (back, "model"), ==, "test \"quoted\" \\ name");

  for (gsize cut = 0; cut < g_bytes_get_size (saved); cut += 1 + cut / 4)
    {
      g_autoptr(GBytes) part = g_bytes_new_from_bytes (saved, 0, cut);
      g_autoptr(GError) e = NULL;
      g_autoptr(PiqSafetensors) none = st_load (part, &e);

      g_assert_null (none);
      g_assert_error (e, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT);
    }
}

static void
test_safetensors_refusals (void)
{
  static const struct {
    const char *json;
    gsize       data;
    int         code;
  } bad[] = {
    { "[]", 0, PIQ_ERROR_FILE_FORMAT },
    { "{\"a\":1}", 0, PIQ_ERROR_FILE_FORMAT },
    { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, PIQ_ERROR_FILE_FORMAT },
    { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, PIQ_ERROR_FILE_FORMAT },
    { "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, PIQ_ERROR_FILE_FORMAT },
    { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, PIQ_ERROR_FILE_FORMAT },
    { "{\"a\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, PIQ_ERROR_UNSUPPORTED },
    { "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, PIQ_ERROR_UNSUPPORTED },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1, PIQ_ERROR_UNSUPPORTED },
    { "{\"__metadata__\":{\"k\":1}}", 0, PIQ_ERROR_FILE_FORMAT },
    /* 2^40 bytes announced, 16 present: ends early, no 1 TiB allocation */
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1099511627776],\"data_offsets\":[0,1099511627776]}}", 16,
      PIQ_ERROR_FILE_FORMAT },
    { "{\"__metadata__\":{\"a.piq_format\":\"dtype=nf4\\n\"}}", 0, PIQ_ERROR_FILE_FORMAT },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"__metadata__\":{\"a.piq_format\":\"bogus\"}}", 1, PIQ_ERROR_FILE_FORMAT },
  };
  static const guint8 zeros[16] = { 0 };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr(GBytes) file = st_file (bad[i].json, zeros, bad[i].data);
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqSafetensors) none = st_load (file, &error);

      if (none != NULL || !g_error_matches (error, PIQ_ERROR, bad[i].code))
        g_error ("%s: %s", bad[i].json, error != NULL ? error->message : "accepted");
    }

  /* what cannot be written is refused, and nothing is written */
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqSafetensors) st = piq_safetensors_new ();
    g_autoptr(PiqTensor) x = normal_tensor (2, 64);
    g_autoptr(PiqTensor) u4 = piq_tensor_new (PIQ_DTYPE_UINT4, 8, NULL);
    g_autoptr(PiqFormat) nf4 = piq_format_new_preset ("nf4", NULL);
    g_autoptr(PiqTensor) w = piq_quantizer_quantize_new (piq_quantizer_get_default (), nf4, NULL,
                                                         x, NULL);
    g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();

    piq_safetensors_set_tensor (st, "w", w);
    piq_safetensors_set_tensor (st, "w.piq_scales", x);
    g_assert_false (piq_safetensors_save_to_stream (st, out, NULL, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    piq_safetensors_set_tensor (st, "w.piq_scales", NULL);
    piq_safetensors_set_tensor (st, "u4", u4);
    g_assert_false (piq_safetensors_save_to_stream (st, out, NULL, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    piq_safetensors_set_tensor (st, "u4", NULL);
    piq_safetensors_set_metadata (st, "v.piq_format", "dtype=nf4");
    g_assert_false (piq_safetensors_save_to_stream (st, out, NULL, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    g_assert_cmpuint (g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out)), ==, 0);
    piq_safetensors_set_metadata (st, "v.piq_format", NULL);
    g_assert_true (piq_safetensors_save_to_stream (st, out, NULL, &error));
    g_assert_no_error (error);
  }
}

/* Saved through a file: atomic, and the size is checked. */
static void
test_safetensors_file (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("test-io-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "m.safetensors", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(PiqSafetensors) st = piq_safetensors_new ();
  g_autoptr(PiqSafetensors) back = NULL;
  g_autoptr(PiqTensor) x = normal_tensor (3, 5);
  g_autofree char *contents = NULL;
  gsize len;

  piq_safetensors_set_tensor (st, "x", x);
  g_assert_true (piq_safetensors_save_to_file (st, file, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (dir_has_only (dir, "m.safetensors"));
  back = piq_safetensors_new_from_file (file, NULL, &error);
  g_assert_no_error (error);
  assert_same_tensor (x, piq_safetensors_get_tensor (back, "x"));

  /* one byte more, or one fewer, than the header announces */
  g_assert_true (g_file_get_contents (path, &contents, &len, NULL));
  for (int extra = -1; extra <= 1; extra += 2)
    {
      g_autofree char *changed = g_malloc0 (len + 1);
      g_autoptr(PiqSafetensors) none = NULL;

      memcpy (changed, contents, MIN (len, len + extra));
      g_assert_true (g_file_set_contents (path, changed, len + extra, NULL));
      none = piq_safetensors_new_from_file (file, NULL, &error);
      g_assert_null (none);
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT);
      g_clear_error (&error);
    }
  g_assert_true (g_remove (path) == 0);
  g_assert_true (g_rmdir (dir) == 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/io/npy/numpy-bytes", test_npy_numpy_bytes);
  g_test_add_func ("/io/npy/dtypes", test_npy_dtypes);
  g_test_add_func ("/io/npy/strided", test_npy_strided);
  g_test_add_func ("/io/piqt/round-trip", test_piqt_round_trip);
  g_test_add_func ("/io/refusals", test_refusals);
  g_test_add_func ("/io/files", test_files);
  g_test_add_func ("/io/safetensors/read", test_safetensors_read);
  g_test_add_func ("/io/safetensors/round-trip", test_safetensors_round_trip);
  g_test_add_func ("/io/safetensors/refusals", test_safetensors_refusals);
  g_test_add_func ("/io/safetensors/file", test_safetensors_file);
  return g_test_run ();
}

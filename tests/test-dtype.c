/* test-dtype.c: the dtype table: names, bits, ranges, sizes
 *
 * The expected values come from piq-types.h (written out again in
 * test-oracle.h), not from the library.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include "test-oracle.h"

static void
test_name (gconstpointer data)
{
  const ODtypeInfo *info = data;
  PiqDtype back = (PiqDtype) 99;

  g_assert_cmpstr (piq_dtype_get_name (info->dtype), ==, info->name);
  g_assert_true (piq_dtype_from_name (info->name, &back));
  g_assert_cmpint (back, ==, info->dtype);
  /* the name round-trips through the library's own spelling too */
  g_assert_true (piq_dtype_from_name (piq_dtype_get_name (info->dtype), &back));
  g_assert_cmpint (back, ==, info->dtype);
}

static void
test_bits (gconstpointer data)
{
  const ODtypeInfo *info = data;

  g_assert_cmpuint (piq_dtype_get_bits (info->dtype), ==, info->bits);
  g_assert_cmpint (piq_dtype_is_float (info->dtype), ==, info->is_float);
  g_assert_cmpint (piq_dtype_is_quantized (info->dtype), ==, !info->is_float);
  /* the ABI split: float types below 16, integer types from 16 on */
  g_assert_cmpint (info->dtype < 16, ==, info->is_float);
}

static void
test_range (gconstpointer data)
{
  const ODtypeInfo *info = data;
  gint64 min = 12345;
  guint64 max = 54321;

  if (info->is_float)
    {
      g_assert_false (piq_dtype_get_range (info->dtype, &min, &max));
      return;
    }
  g_assert_true (piq_dtype_get_range (info->dtype, &min, &max));
  g_assert_true ((OInt) min == o_qmin (info->dtype));
  g_assert_true ((OInt) max == o_qmax (info->dtype));
  /* both outputs are optional */
  g_assert_true (piq_dtype_get_range (info->dtype, NULL, NULL));
  g_assert_true (piq_dtype_get_range (info->dtype, &min, NULL));
  g_assert_true (piq_dtype_get_range (info->dtype, NULL, &max));
}

/* Spelled out for the cases that matter most. */
static void
test_range_literals (void)
{
  struct { PiqDtype d; gint64 min; guint64 max; } cases[] = {
    { PIQ_DTYPE_UINT2, 0, 3 }, { PIQ_DTYPE_INT2, -2, 1 },
    { PIQ_DTYPE_UINT4, 0, 15 }, { PIQ_DTYPE_INT4, -8, 7 },
    { PIQ_DTYPE_INT8, -128, 127 }, { PIQ_DTYPE_UINT16, 0, 65535 },
    { PIQ_DTYPE_INT32, G_MININT32, G_MAXINT32 }, { PIQ_DTYPE_UINT32, 0, G_MAXUINT32 },
    { PIQ_DTYPE_UINT64, 0, G_MAXUINT64 }, { PIQ_DTYPE_INT64, G_MININT64, G_MAXINT64 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      gint64 min;
      guint64 max;
      g_assert_true (piq_dtype_get_range (cases[i].d, &min, &max));
      g_assert_cmpint (min, ==, cases[i].min);
      g_assert_cmpuint (max, ==, cases[i].max);
    }
}

static void
test_size_for_n (gconstpointer data)
{
  const ODtypeInfo *info = data;
  static const guint64 ns[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1023, (1 << 20) + 3 };

  for (gsize k = 0; k < G_N_ELEMENTS (ns); k++)
    {
      g_autoptr (GError) error = NULL;
      gsize bytes = 777;
      g_assert_true (piq_dtype_get_size_for_n (info->dtype, ns[k], &bytes, &error));
      g_assert_no_error (error);
      g_assert_cmpuint (bytes, ==, (ns[k] * info->bits + 7) / 8);
    }
  g_assert_true (piq_dtype_get_size_for_n (info->dtype, 5, NULL, NULL));
}

/* The largest count whose size fits in a gsize is accepted with the exact
 * size, the next one is PIQ_ERROR_OVERFLOW. Sub-byte and 8-bit types never
 * overflow a 64-bit size: G_MAXUINT64 uint2 elements are 2^62 bytes, which a
 * naive (n + 3) / 4 would wrap to 0. */
static void
test_size_overflow (gconstpointer data)
{
  const ODtypeInfo *info = data;
  OUInt limit = ((OUInt) G_MAXSIZE * 8) / info->bits;      /* largest n with n·bits <= 8·G_MAXSIZE */
  guint64 n_max = limit >= G_MAXUINT64 ? G_MAXUINT64 : (guint64) limit;
  g_autoptr (GError) error = NULL;
  gsize bytes = 0;

  g_assert_true (piq_dtype_get_size_for_n (info->dtype, n_max, &bytes, &error));
  g_assert_no_error (error);
  g_assert_true ((OUInt) bytes == o_dtype_nbytes_wide (info->dtype, n_max));
  g_test_message ("%s: %" G_GUINT64_FORMAT " elements are %" G_GSIZE_FORMAT " bytes", info->name, n_max, bytes);

  if (n_max < G_MAXUINT64)
    {
      bytes = 777;
      g_assert_false (piq_dtype_get_size_for_n (info->dtype, n_max + 1, &bytes, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
      g_assert_cmpuint (bytes, ==, 777);
      g_clear_error (&error);
      g_assert_false (piq_dtype_get_size_for_n (info->dtype, G_MAXUINT64, NULL, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
    }
}

static void
test_size_literals (void)
{
  gsize bytes = 0;

  g_assert_true (piq_dtype_get_size_for_n (PIQ_DTYPE_UINT2, G_MAXUINT64, &bytes, NULL));
  g_assert_cmpuint (bytes, ==, G_GUINT64_CONSTANT (1) << 62);
  g_assert_true (piq_dtype_get_size_for_n (PIQ_DTYPE_INT4, G_MAXUINT64, &bytes, NULL));
  g_assert_cmpuint (bytes, ==, G_GUINT64_CONSTANT (1) << 63);
  g_assert_true (piq_dtype_get_size_for_n (PIQ_DTYPE_UINT8, G_MAXUINT64, &bytes, NULL));
  g_assert_cmpuint (bytes, ==, G_MAXSIZE);
  g_assert_true (piq_dtype_get_size_for_n (PIQ_DTYPE_F64, G_MAXSIZE / 8, &bytes, NULL));
  g_assert_cmpuint (bytes, ==, G_MAXSIZE - 7);
  g_assert_false (piq_dtype_get_size_for_n (PIQ_DTYPE_F64, G_MAXUINT64 / 4, &bytes, NULL));
  g_assert_true (piq_dtype_get_size_for_n (PIQ_DTYPE_INT2, 5, &bytes, NULL));
  g_assert_cmpuint (bytes, ==, 2);
}

static void
test_unknown (void)
{
  static const char *bad_names[] = { "", "f8", "uint3", "int128", "float32x", "f32 " };
  PiqDtype unknown = (PiqDtype) 99;

  for (gsize i = 0; i < G_N_ELEMENTS (bad_names); i++)
    {
      PiqDtype d = PIQ_DTYPE_INT4;
      g_test_message ("name \"%s\"", bad_names[i]);
      g_assert_false (piq_dtype_from_name (bad_names[i], &d));
      g_assert_cmpint (d, ==, PIQ_DTYPE_INT4);
    }
  /* documented results for a value that is no dtype */
  g_assert_null (piq_dtype_get_name (unknown));
  g_assert_cmpuint (piq_dtype_get_bits (unknown), ==, 0);
  g_assert_false (piq_dtype_is_float (unknown));
  g_assert_false (piq_dtype_is_quantized (unknown));
  g_assert_false (piq_dtype_get_range (unknown, NULL, NULL));
  g_assert_null (piq_dtype_get_name ((PiqDtype) 4));
  g_assert_null (piq_dtype_get_name ((PiqDtype) 15));
  g_assert_null (piq_dtype_get_name ((PiqDtype) 28));
}

/* Every dtype is registered in the GEnum type with its ABI value. */
static void
test_enum_type (void)
{
  GEnumClass *klass = g_type_class_ref (PIQ_TYPE_DTYPE);

  /* the float and integer types of the oracle, the 18 code formats and E8M0
   * (test-formats.c), each with a name */
  g_assert_cmpuint (klass->n_values, ==, G_N_ELEMENTS (o_dtypes) + 19);
  for (gsize i = 0; i < G_N_ELEMENTS (o_dtypes); i++)
    g_assert_nonnull (g_enum_get_value (klass, o_dtypes[i].dtype));
  for (guint i = 0; i < klass->n_values; i++)
    g_assert_nonnull (piq_dtype_get_name ((PiqDtype) klass->values[i].value));
  g_type_class_unref (klass);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  for (gsize i = 0; i < G_N_ELEMENTS (o_dtypes); i++)
    {
      const ODtypeInfo *info = &o_dtypes[i];
      g_autofree char *p1 = g_strdup_printf ("/dtype/%s/name", info->name);
      g_autofree char *p2 = g_strdup_printf ("/dtype/%s/bits-%u", info->name, info->bits);
      g_autofree char *p3 = g_strdup_printf ("/dtype/%s/range", info->name);
      g_autofree char *p4 = g_strdup_printf ("/dtype/%s/size-for-n", info->name);
      g_autofree char *p5 = g_strdup_printf ("/dtype/%s/size-for-n/overflow", info->name);
      g_test_add_data_func (p1, info, test_name);
      g_test_add_data_func (p2, info, test_bits);
      g_test_add_data_func (p3, info, test_range);
      g_test_add_data_func (p4, info, test_size_for_n);
      g_test_add_data_func (p5, info, test_size_overflow);
    }
  g_test_add_func ("/dtype/range/literals", test_range_literals);
  g_test_add_func ("/dtype/size-for-n/literals", test_size_literals);
  g_test_add_func ("/dtype/unknown", test_unknown);
  g_test_add_func ("/dtype/enum-type", test_enum_type);

  return g_test_run ();
}

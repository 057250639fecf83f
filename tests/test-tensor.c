/* test-tensor.c: PiqTensor constructors, views, reads and writes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

static const guint64 lengths[] = { 0, 1, 3, 4, 5, 17, 1000 };

typedef struct {
  PiqDtype dtype;
  guint64  n;
} Case;

static GPtrArray *all_cases;

static void
test_new (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new (c->dtype, c->n, &error);
  gsize size = 777, expected = o_dtype_nbytes (c->dtype, c->n);
  const guint8 *d;
  PiqDtype dtype;
  guint64 n;
  gsize nb;
  gboolean w;

  g_assert_no_error (error);
  g_assert_nonnull (t);
  g_assert_cmpint (piq_tensor_get_dtype (t), ==, c->dtype);
  g_assert_cmpuint (piq_tensor_get_n_elements (t), ==, c->n);
  g_assert_cmpuint (piq_tensor_get_n_bytes (t), ==, expected);
  g_assert_true (piq_tensor_is_writable (t));
  g_assert_null (piq_tensor_get_format (t));        /* a raw tensor carries no format */
  /* piq_tensor_new is 1-D and packed */
  g_assert_cmpuint (piq_tensor_get_n_dims (t), ==, 1);
  g_assert_cmpuint (piq_tensor_get_dim (t, 0), ==, c->n);
  g_assert_cmpuint (piq_tensor_get_dim (t, -1), ==, c->n);
  g_assert_true (piq_tensor_is_contiguous (t));
  d = piq_tensor_get_data (t, &size);
  g_assert_cmpuint (size, ==, expected);
  if (c->n == 0)
    g_assert_null (d);          /* documented: NULL for an empty tensor */
  else
    {
      g_assert_nonnull (d);
      g_assert_cmpuint ((guintptr) d % 64, ==, 0);
      for (gsize i = 0; i < size; i++)
        g_assert_cmpuint (d[i], ==, 0);            /* zero-filled */
      g_assert_true (piq_tensor_get_writable_data (t, NULL) == d);
    }

  g_object_get (t, "dtype", &dtype, "n-elements", &n, "n-bytes", &nb, "writable", &w, NULL);
  g_assert_cmpint (dtype, ==, c->dtype);
  g_assert_cmpuint (n, ==, c->n);
  g_assert_cmpuint (nb, ==, expected);
  g_assert_true (w);
}

/* Storage of several MiB comes from its own mapping (piq-tensor.c): it must read as
 * zero, be aligned, and take writes up to its last byte, for plain and quantized
 * tensors, just as the small posix_memalign storage does. */
static void
test_large_storage (void)
{
  static const guint64 sizes[] = { (4u << 20) - 4, 4u << 20, (5u << 20) + 12345 };

  for (gsize k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      guint64 shape[2] = { 3, sizes[k] / 3 };
      g_autoptr(PiqTensor) t = piq_tensor_new_shaped (PIQ_DTYPE_UINT8, shape, 2, NULL);
      g_autoptr(PiqFormat) f = piq_format_new_preset ("nf4", NULL);
      g_autoptr(PiqTensor) q = NULL;
      guint64 qshape[1] = { sizes[k] * 2 };
      gsize size, qsize;
      guint8 *d = piq_tensor_get_writable_data (t, &size);
      const guint8 *qd;
      gsize nonzero = 0;

      g_assert_nonnull (d);
      g_assert_cmpuint (size, ==, shape[0] * shape[1]);
      g_assert_cmpuint ((guintptr) d % 64, ==, 0);
      for (gsize i = 0; i < size; i++)
        nonzero += d[i] != 0;
      g_assert_cmpuint (nonzero, ==, 0);
      memset (d, 0xa5, size);
      g_assert_cmpuint (d[size - 1], ==, 0xa5);

      g_assert_nonnull (f);
      q = piq_tensor_new_quantized (f, qshape, 1, NULL);
      g_assert_nonnull (q);
      qd = piq_tensor_get_data (q, &qsize);
      g_assert_cmpuint (qsize, ==, sizes[k]);
      g_assert_cmpuint ((guintptr) qd % 64, ==, 0);
      for (gsize i = 0; i < qsize; i++)
        nonzero += qd[i] != 0;
      g_assert_cmpuint (nonzero, ==, 0);
    }
}

/* Random bytes of the dtype: every integer bit pattern, and float values
 * with NaN, ±Inf, −0 and subnormals. The padding bits of a partial last byte
 * are zero. */
static guint8 *
random_bytes (PiqDtype dtype, guint64 n, guint64 seed)
{
  gsize size = o_dtype_nbytes (dtype, n);
  guint8 *b = g_malloc0 (size + 1);
  ORng rng;

  o_rng_init (&rng, seed);
  if (o_dtype_is_float (dtype))
    {
      for (guint64 i = 0; i < n; i++)
        if (i % 5 == 4)
          o_write_float_bits (dtype, b, i, o_special_bits (dtype, (guint) o_rng_below (&rng, O_N_SPECIALS)));
        else
          o_write_float (dtype, b, i, o_rng_normal (&rng) * 100);
    }
  else
    for (guint64 i = 0; i < n; i++)
      o_pack (dtype, b, i, (OInt) o_rng_next (&rng));
  return b;
}

static double
oracle_value (PiqDtype dtype, const guint8 *b, guint64 i)
{
  if (o_dtype_is_float (dtype))
    return o_read_float (dtype, b, i);
  return o_int_to_f64 (o_unpack (dtype, b, i));
}

static gboolean
same_value (double a, double b)
{
  return (isnan (a) && isnan (b)) || (a == b && signbit (a) == signbit (b));
}

static void
test_to_values (gconstpointer data)
{
  const Case *c = data;
  gsize size = o_dtype_nbytes (c->dtype, c->n);
  g_autofree guint8 *b = random_bytes (c->dtype, c->n, c->n * 31 + c->dtype);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new_from_data (c->dtype, c->n, b, size, &error);
  g_autofree double *values = NULL;
  gsize n_values = 12345;

  g_assert_no_error (error);
  values = piq_tensor_to_values (t, &n_values, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (n_values, ==, c->n);
  for (guint64 i = 0; i < c->n; i++)
    {
      double e = oracle_value (c->dtype, b, i);
      if (!same_value (values[i], e) || !same_value (piq_tensor_get_value (t, i), e))
        {
          g_test_fail_printf ("element %" G_GUINT64_FORMAT ": to_values %.17g, get_value %.17g, expected %.17g",
                              i, values[i], piq_tensor_get_value (t, i), e);
          return;
        }
    }
}

/* Sign extension and unpacking, spelled out: int4 bytes 0x8F 0x07 are
 * −1, −8, 7, 0; int2 byte 0x4E is −2, −1, 0, 1; uint2 0x93 is 3, 0, 1, 2. */
static void
test_to_values_literals (void)
{
  struct { PiqDtype d; guint n; guint8 bytes[2]; double v[8]; } cases[] = {
    { PIQ_DTYPE_INT4, 4, { 0x8F, 0x07 }, { -1, -8, 7, 0 } },
    { PIQ_DTYPE_UINT4, 3, { 0x8F, 0x07 }, { 15, 8, 7 } },
    { PIQ_DTYPE_INT2, 5, { 0x4E, 0x02 }, { -2, -1, 0, 1, -2 } },
    { PIQ_DTYPE_UINT2, 4, { 0x93, 0 }, { 3, 0, 1, 2 } },
    { PIQ_DTYPE_INT8, 2, { 0x80, 0x7F }, { -128, 127 } },
    { PIQ_DTYPE_INT16, 1, { 0x00, 0x80 }, { -32768 } },
    { PIQ_DTYPE_BF16, 1, { 0xC0, 0x3F }, { 1.5 } },
    { PIQ_DTYPE_F16, 1, { 0x00, 0x3E }, { 1.5 } },
  };

  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autoptr (GError) error = NULL;
      gsize size = o_dtype_nbytes (cases[k].d, cases[k].n);
      g_autoptr (PiqTensor) t = piq_tensor_new_from_data (cases[k].d, cases[k].n, cases[k].bytes, size, &error);
      g_autofree double *v = NULL;
      gsize n = 0;

      g_assert_no_error (error);
      v = piq_tensor_to_values (t, &n, &error);
      g_assert_no_error (error);
      g_test_message ("%s", o_dtype_name (cases[k].d));
      g_assert_cmpmem (v, n * sizeof (double), cases[k].v, cases[k].n * sizeof (double));
    }
}

static void
test_from_data (gconstpointer data)
{
  const Case *c = data;
  gsize size = o_dtype_nbytes (c->dtype, c->n);
  g_autofree guint8 *b = random_bytes (c->dtype, c->n, 5);
  g_autofree guint8 *copy = g_memdup2 (b, size + 1);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new_from_data (c->dtype, c->n, b, size, &error);
  gsize got = 0;
  const guint8 *d;

  g_assert_no_error (error);
  d = piq_tensor_get_data (t, &got);
  g_assert_cmpmem (d, got, copy, size);
  if (size > 0)
    {
      g_assert_true (d != b);                  /* a copy... */
      g_assert_cmpuint ((guintptr) d % 64, ==, 0);
      memset (b, 0x5A, size);                  /* ...that does not follow the original */
      g_assert_cmpmem (piq_tensor_get_data (t, NULL), size, copy, size);
    }
  g_assert_true (piq_tensor_is_writable (t));

  /* the size must be exact */
  {
    /* n + 8 elements need at least one more byte, even for uint2 */
    g_autoptr (PiqTensor) small = piq_tensor_new_from_data (c->dtype, c->n + 8, b, size, &error);
    g_assert_null (small);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    g_clear_error (&error);
  }
  if (size > 0)
    {
      g_autoptr (PiqTensor) big = piq_tensor_new_from_data (c->dtype, c->n, b, size + 1, &error);
      g_assert_null (big);
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    }
}

static void
weak_notify (gpointer data, GObject *where_the_object_was)
{
  *(gboolean *) data = TRUE;
}

/* get_bytes is a view: same pointer, and it keeps the tensor alive. */
static void
test_get_bytes (gconstpointer data)
{
  const Case *c = data;
  gsize size = o_dtype_nbytes (c->dtype, c->n);
  g_autofree guint8 *b = random_bytes (c->dtype, c->n, 6);
  g_autoptr (GError) error = NULL;
  PiqTensor *t = piq_tensor_new_from_data (c->dtype, c->n, b, size, &error);
  gboolean finalized = FALSE;
  GBytes *bytes;
  gsize bsize = 0;
  gconstpointer bdata;

  g_assert_no_error (error);
  g_object_weak_ref (G_OBJECT (t), weak_notify, &finalized);
  bytes = piq_tensor_get_bytes (t);
  bdata = g_bytes_get_data (bytes, &bsize);
  g_assert_cmpuint (bsize, ==, size);
  if (size > 0)
    g_assert_true (bdata == piq_tensor_get_data (t, NULL));

  /* the view sees later writes (it shares the storage) */
  if (size > 0)
    {
      guint8 *w = piq_tensor_get_writable_data (t, NULL);
      w[0] ^= 0xFF;
      g_assert_cmpuint (((const guint8 *) bdata)[0], ==, (guint8) (b[0] ^ 0xFF));
      w[0] ^= 0xFF;
    }

  g_object_unref (t);
  /* (an empty view has no storage to keep alive) */
  if (size > 0)
    g_assert_false (finalized);
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), bsize, b, size);
  g_bytes_unref (bytes);
  g_assert_true (finalized);
}

static void
test_from_bytes (gconstpointer data)
{
  const Case *c = data;
  gsize size = o_dtype_nbytes (c->dtype, c->n);
  g_autofree guint8 *b = random_bytes (c->dtype, c->n, 7);
  g_autoptr (GBytes) bytes = g_bytes_new (b, size);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new_from_bytes (c->dtype, c->n, bytes, &error);
  g_autoptr (GBytes) back = NULL;

  g_assert_no_error (error);
  g_assert_false (piq_tensor_is_writable (t));
  g_assert_null (piq_tensor_get_writable_data (t, NULL));
  if (size > 0)
    g_assert_true (piq_tensor_get_data (t, NULL) == g_bytes_get_data (bytes, NULL));   /* no copy */
  back = piq_tensor_get_bytes (t);
  g_assert_cmpmem (g_bytes_get_data (back, NULL), g_bytes_get_size (back), b, size);

  {
    g_autoptr (GBytes) longer = g_bytes_new (b, size + 1);
    g_autoptr (PiqTensor) bad = piq_tensor_new_from_bytes (c->dtype, c->n, longer, &error);
    g_assert_null (bad);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    g_clear_error (&error);
  }
  {
    g_autoptr (PiqTensor) bad = piq_tensor_new_from_bytes (c->dtype, c->n + 8, bytes, &error);
    g_assert_null (bad);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
  }
}

static void
test_for_address (gconstpointer data)
{
  const Case *c = data;
  gsize size = o_dtype_nbytes (c->dtype, c->n);
  g_autofree guint8 *mem = g_malloc0 (size + 8);
  g_autoptr (GError) error = NULL;
  guint8 *addr = mem + 3;         /* misaligned on purpose */
  guint64 shape[1] = { c->n };

  memset (mem, 0x11, size + 8);
  for (int writable = 0; writable <= 1; writable++)
    {
      g_autoptr (PiqTensor) t = piq_tensor_new_for_address (c->dtype, shape, 1, (guintptr) addr, size, 0, writable,
                                                            &error);
      g_assert_no_error (error);
      g_assert_cmpint (piq_tensor_is_writable (t), ==, writable);
      if (size > 0)
        {
          g_assert_true (piq_tensor_get_data (t, NULL) == addr);
          if (writable)
            g_assert_true (piq_tensor_get_writable_data (t, NULL) == addr);
          else
            g_assert_null (piq_tensor_get_writable_data (t, NULL));
        }
    }
  /* more room than needed is fine, less is an error */
  {
    g_autoptr (PiqTensor) t = piq_tensor_new_for_address (c->dtype, shape, 1, (guintptr) addr, size + 4, 0, TRUE,
                                                          &error);
    g_assert_no_error (error);
    g_assert_cmpuint (piq_tensor_get_n_bytes (t), ==, size);
  }
  if (size > 0)
    {
      g_autoptr (PiqTensor) t = piq_tensor_new_for_address (c->dtype, shape, 1, (guintptr) addr, size - 1, 0, TRUE,
                                                            &error);
      g_assert_null (t);
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    }
  /* nothing was written */
  for (gsize i = 0; i < size + 8; i++)
    g_assert_cmpuint (mem[i], ==, 0x11);
}

static void
test_set_data (gconstpointer data)
{
  const Case *c = data;
  gsize size = o_dtype_nbytes (c->dtype, c->n);
  g_autofree guint8 *b = random_bytes (c->dtype, c->n, 8);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new (c->dtype, c->n, &error);
  gconstpointer before = piq_tensor_get_data (t, NULL);

  g_assert_no_error (error);
  g_assert_true (piq_tensor_set_data (t, b, size, &error));
  g_assert_no_error (error);
  g_assert_true (piq_tensor_get_data (t, NULL) == before);     /* storage reused */
  g_assert_cmpmem (piq_tensor_get_data (t, NULL), size, b, size);

  /* a size other than n-bytes: PIQ_ERROR_SIZE, content unchanged */
  {
    g_autofree guint8 *other = g_malloc0 (size + 2);
    g_assert_false (piq_tensor_set_data (t, other, size + 1, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    g_clear_error (&error);
    if (size > 0)
      {
        g_assert_false (piq_tensor_set_data (t, other, size - 1, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
        g_clear_error (&error);
      }
    g_assert_cmpmem (piq_tensor_get_data (t, NULL), size, b, size);
  }
}

/* ---- new_from_values and fill ---- */

/* Values every dtype holds exactly, within its range. */
static double
exact_value (PiqDtype dtype, guint64 i)
{
  if (o_dtype_is_float (dtype))
    {
      static const double v[] = { 0.0, -0.0, 1.5, -2.25, 61440.0, 0x1p-14, -0x1p-24, 3.0 };
      return v[i % G_N_ELEMENTS (v)];
    }
  {
    /* the ends of the range, where a double holds them (the largest double
     * below 2^63 is 2^63 − 1024, below 2^64 it is 2^64 − 2048) */
    OInt lo = o_qmin (dtype), hi = o_qmax (dtype);
    OInt top = hi > ((OInt) 1 << 53) ? hi + 1 - ((hi + 1) >> 53) : hi;
    OInt vals[4] = { lo, top, 0, (lo + hi) / 3 };
    return (double) vals[i % 4];
  }
}

static void
test_from_values (gconstpointer data)
{
  const Case *c = data;
  g_autofree double *v = g_new (double, c->n + 1);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = NULL;
  g_autofree double *back = NULL;
  gsize n = 0;

  for (guint64 i = 0; i < c->n; i++)
    v[i] = exact_value (c->dtype, i);
  t = piq_tensor_new_from_values (c->dtype, v, c->n, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (piq_tensor_get_n_elements (t), ==, c->n);
  back = piq_tensor_to_values (t, &n, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (n, ==, c->n);
  for (guint64 i = 0; i < c->n; i++)
    {
      /* 64-bit extremes are not doubles: 2^63 − 1 reads back rounded to 2^63 */
      if (!same_value (back[i], v[i]))
        {
          g_test_fail_printf ("element %" G_GUINT64_FORMAT ": %.17g reads back as %.17g", i, v[i], back[i]);
          return;
        }
    }
  g_assert_true (o_padding_is_zero (c->dtype, piq_tensor_get_data (t, NULL), c->n));
}

/* Through binary32 with round-to-nearest-even: 1 + 2^-9 is a bf16 tie
 * (-> 1.0), 1 + 3·2^-8 -> 1 + 2^-6 (even); 65520 overflows f16 to Inf;
 * 2^-25 is half of f16's smallest subnormal (-> 0, even), 3·2^-26 -> 2^-24.
 * A double that is not a binary32 rounds to binary32 first: 1 + 2^-24 + 2^-40
 * -> 1 + 2^-23 in f32. */
static void
test_from_values_rounding (void)
{
  struct { PiqDtype d; double v; guint64 bits; } cases[] = {
    { PIQ_DTYPE_BF16, 1.0 + 0x1p-9, 0x3F80 },
    { PIQ_DTYPE_BF16, 1.0 + 3 * 0x1p-8, 0x3F82 },
    { PIQ_DTYPE_BF16, -1.0 - 0x1p-8, 0xBF80 },
    { PIQ_DTYPE_F16, 65520.0, 0x7C00 },
    { PIQ_DTYPE_F16, 65519.0, 0x7BFF },
    { PIQ_DTYPE_F16, 0x1p-25, 0x0000 },
    { PIQ_DTYPE_F16, 3 * 0x1p-26, 0x0001 },
    { PIQ_DTYPE_F16, 1.0 + 0x1p-11, 0x3C00 },
    { PIQ_DTYPE_F32, 1.0 + 0x1p-24 + 0x1p-40, 0x3F800001 },
    { PIQ_DTYPE_F32, 1e39, 0x7F800000 },
  };

  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqTensor) t = piq_tensor_new_from_values (cases[k].d, &cases[k].v, 1, &error);
      g_assert_no_error (error);
      g_test_message ("%s %.17g", o_dtype_name (cases[k].d), cases[k].v);
      g_assert_cmphex (o_read_float_bits (cases[k].d, piq_tensor_get_data (t, NULL), 0), ==, cases[k].bits);
      /* and the oracle agrees */
      g_assert_cmphex (cases[k].bits, ==, cases[k].d == PIQ_DTYPE_BF16 ? o_f32_to_bf16 ((float) cases[k].v) :
                                          cases[k].d == PIQ_DTYPE_F16 ? o_f32_to_f16 ((float) cases[k].v) :
                                          o_f32_bits ((float) cases[k].v));
    }
}

/* Integer dtypes take integral values in range, nothing else. */
static void
test_from_values_invalid (gconstpointer data)
{
  const Case *c = data;
  double bad[] = { 0.5, NAN, INFINITY, -INFINITY,
                   o_int_to_f64 (o_qmax (c->dtype)) + (o_dtype_bits (c->dtype) >= 53 ? 4096.0 : 1.0),
                   o_int_to_f64 (o_qmin (c->dtype)) - (o_dtype_bits (c->dtype) >= 53 ? 4096.0 : 1.0) };

  for (gsize k = 0; k < G_N_ELEMENTS (bad); k++)
    {
      double v[3] = { 0, bad[k], 1 };
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqTensor) t = piq_tensor_new_from_values (c->dtype, v, 3, &error);
      g_autoptr (PiqTensor) f = piq_tensor_new (c->dtype, 3, NULL);

      g_test_message ("%.17g", bad[k]);
      g_assert_null (t);
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
      g_clear_error (&error);

      /* fill refuses the same values and leaves the tensor unchanged */
      g_assert_false (piq_tensor_fill (f, bad[k], &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
      for (guint64 i = 0; i < 3; i++)
        g_assert_cmpfloat (piq_tensor_get_value (f, i), ==, 0);
    }
}

static void
test_fill (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new (c->dtype, c->n, &error);

  g_assert_no_error (error);
  for (guint64 k = 0; k < 4; k++)
    {
      double v = exact_value (c->dtype, k + 1);
      const guint8 *d;
      g_autofree guint8 *expected = g_malloc0 (o_dtype_nbytes (c->dtype, c->n) + 1);

      /* garbage in the padding must not survive either */
      if (c->n > 0)
        memset (piq_tensor_get_writable_data (t, NULL), 0xFF, piq_tensor_get_n_bytes (t));
      g_assert_true (piq_tensor_fill (t, v, &error));
      g_assert_no_error (error);
      for (guint64 i = 0; i < c->n; i++)
        {
          if (o_dtype_is_float (c->dtype))
            o_write_float (c->dtype, expected, i, v);
          else
            o_pack (c->dtype, expected, i, (OInt) v);
        }
      d = piq_tensor_get_data (t, NULL);
      g_assert_cmpuint (piq_tensor_get_n_bytes (t), ==, o_dtype_nbytes (c->dtype, c->n));
      if (c->n > 0 && memcmp (d, expected, o_dtype_nbytes (c->dtype, c->n)) != 0)
        {
          gsize last = o_dtype_nbytes (c->dtype, c->n) - 1;
          g_test_fail_printf ("fill %.17g: bytes differ (last byte 0x%02x, expected 0x%02x%s)", v, d[last],
                              expected[last], o_padding_is_zero (c->dtype, d, c->n) ? "" :
                              "; the unused bits of the partial last byte are not zero");
          return;
        }
    }
}

/* A quantized tensor keeps a reference to its format, not a copy (the
 * format is immutable, so sharing it cannot change what the bytes mean), and
 * carries its per-tensor scale and zero point. The old settable params are
 * gone: a raw tensor of a quantized dtype has no format, and dequantizing it
 * fails with PIQ_ERROR_NO_FORMAT (it used to be PIQ_ERROR_NO_PARAMS). */
static void
test_format (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new (PIQ_DTYPE_INT4, 9, &error);
  g_autoptr (PiqFormat) f = piq_format_new (PIQ_DTYPE_INT4);
  static const guint8 codes[5] = { 0x21, 0x43, 0x65, 0x87, 0x09 };
  g_autoptr (GBytes) bytes = g_bytes_new (codes, sizeof codes);
  guint64 shape[1] = { 9 };
  g_autoptr (PiqTensor) qt = NULL;
  g_autoptr (PiqTensor) dst = NULL;
  g_autoptr (PiqTensor) out = piq_tensor_new (PIQ_DTYPE_F32, 9, NULL);
  PiqFormat *got = NULL;

  g_assert_no_error (error);
  g_assert_null (piq_tensor_get_format (t));
  g_assert_false (piq_quantizer_dequantize (piq_quantizer_get_default (), t, out, PIQ_REDUCE_SET, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NO_FORMAT);
  g_clear_error (&error);

  qt = piq_tensor_new_quantized_from_bytes (f, shape, 1, bytes, NULL, NULL, 0.5, 1, &error);
  g_assert_no_error (error);
  g_assert_true (piq_tensor_get_format (qt) == f);
  g_object_get (qt, "format", &got, NULL);
  g_assert_true (got == f);
  g_object_unref (got);
  g_assert_cmpint (piq_tensor_get_dtype (qt), ==, PIQ_DTYPE_INT4);
  g_assert_cmpuint (piq_tensor_get_n_elements (qt), ==, 9);
  g_assert_cmpfloat (piq_tensor_get_scale (qt), ==, 0.5);
  g_assert_cmpint (piq_tensor_get_zero_point (qt), ==, 1);
  g_assert_cmpmem (piq_tensor_get_data (qt, NULL), piq_tensor_get_n_bytes (qt), codes, sizeof codes);

  dst = piq_tensor_new_quantized (f, shape, 1, &error);
  g_assert_no_error (error);
  g_assert_true (piq_tensor_get_format (dst) == f);
  g_assert_true (piq_tensor_is_writable (dst));
  g_assert_cmpuint (piq_tensor_get_n_bytes (dst), ==, sizeof codes);
}

static void
test_get_address (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new (c->dtype, c->n, &error);
  g_autoptr (PiqTensor) w = NULL;
  g_autofree guint8 *mem = NULL;
  gsize size = 777, expected = o_dtype_nbytes (c->dtype, c->n);
  guint64 shape[1] = { c->n };

  g_assert_no_error (error);
  g_assert_true (piq_tensor_get_address (t, &size) == (guintptr) piq_tensor_get_data (t, NULL));
  g_assert_cmpuint (size, ==, c->n == 0 ? 0 : expected);
  g_assert_true (piq_tensor_get_address (t, NULL) == (guintptr) piq_tensor_get_data (t, NULL));
  /* a tensor without a format has neither scales nor zero points */
  size = 777;
  g_assert_true (piq_tensor_get_scales_address (t, &size) == 0);
  g_assert_cmpuint (size, ==, 0);
  size = 777;
  g_assert_true (piq_tensor_get_zero_points_address (t, &size) == 0);
  g_assert_cmpuint (size, ==, 0);

  /* a wrapped buffer reports the caller's address, read-only or not */
  mem = g_malloc0 (expected + 1);
  w = piq_tensor_new_for_address (c->dtype, shape, 1, (guintptr) mem, expected, 0, FALSE, &error);
  g_assert_no_error (error);
  size = 777;
  g_assert_true (piq_tensor_get_address (w, &size) == (guintptr) mem);
  g_assert_cmpuint (size, ==, expected);
}

/* The scales and zero points addresses are those of the GBytes the getters
 * return; quantizing again replaces them, and a held GBytes stays valid. */
static void
test_scales_address (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) f = piq_format_new_per_block (PIQ_DTYPE_UINT8, 64, PIQ_DTYPE_F32);   /* affine */
  g_autoptr (PiqFormat) pt = piq_format_new (PIQ_DTYPE_INT8);
  g_autoptr (PiqTensor) src = NULL, dst = NULL, per_tensor = NULL;
  g_autoptr (GBytes) scales = NULL, zps = NULL, scales2 = NULL;
  guint64 shape[1] = { 256 };
  float values[256];
  gsize size = 0, n = 0;
  gconstpointer d;

  g_assert_no_error (error);
  for (gsize i = 0; i < G_N_ELEMENTS (values); i++)
    values[i] = (float) i * 0.25f - 7.0f;
  src = piq_tensor_new_from_data (PIQ_DTYPE_F32, 256, (const guint8 *) values, sizeof values, &error);
  g_assert_no_error (error);
  dst = piq_tensor_new_quantized (f, shape, 1, &error);
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_quantize (piq_quantizer_get_default (), NULL, src, dst, &error));
  g_assert_no_error (error);

  scales = piq_tensor_get_scales (dst);
  zps = piq_tensor_get_zero_points (dst);
  g_assert_nonnull (scales);
  g_assert_nonnull (zps);
  d = g_bytes_get_data (scales, &n);
  g_assert_true (piq_tensor_get_scales_address (dst, &size) == (guintptr) d);
  g_assert_cmpuint (size, ==, n);
  g_assert_cmpuint (size, ==, 4 * sizeof (float));          /* 4 blocks of 64, f32 scales */
  d = g_bytes_get_data (zps, &n);
  g_assert_true (piq_tensor_get_zero_points_address (dst, &size) == (guintptr) d);
  g_assert_cmpuint (size, ==, n);
  g_assert_cmpuint (size, ==, 4 * sizeof (gint32));

  /* quantizing again gives new scales; the held ones keep their contents */
  values[0] = 100.0f;
  g_assert_true (piq_tensor_set_data (src, (const guint8 *) values, sizeof values, &error));
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_quantize (piq_quantizer_get_default (), NULL, src, dst, &error));
  g_assert_no_error (error);
  scales2 = piq_tensor_get_scales (dst);
  g_assert_true (piq_tensor_get_scales_address (dst, NULL) == (guintptr) g_bytes_get_data (scales2, NULL));
  g_assert_false (g_bytes_equal (scales, scales2));

  /* per tensor: a scalar scale, no arrays */
  per_tensor = piq_quantizer_quantize_new (piq_quantizer_get_default (), pt, NULL, src, &error);
  g_assert_no_error (error);
  size = 777;
  g_assert_true (piq_tensor_get_scales_address (per_tensor, &size) == 0);
  g_assert_cmpuint (size, ==, 0);
  g_assert_true (piq_tensor_get_zero_points_address (per_tensor, NULL) == 0);
  g_assert_true (piq_tensor_get_address (per_tensor, &size) == (guintptr) piq_tensor_get_data (per_tensor, NULL));
  g_assert_cmpuint (size, ==, 256);
}

int
main (int argc, char **argv)
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  all_cases = g_ptr_array_new_with_free_func (g_free);

  for (gsize i = 0; i < G_N_ELEMENTS (o_dtypes); i++)
    for (gsize l = 0; l < G_N_ELEMENTS (lengths); l++)
      {
        Case *c = g_new0 (Case, 1);
        const char *name = o_dtypes[i].name;
        static const struct { const char *what; GTestDataFunc fn; } tests[] = {
          { "new", test_new }, { "to-values", test_to_values }, { "new-from-data", test_from_data },
          { "get-bytes", test_get_bytes }, { "new-from-bytes", test_from_bytes },
          { "new-for-address", test_for_address }, { "set-data", test_set_data },
          { "new-from-values", test_from_values }, { "fill", test_fill },
          { "get-address", test_get_address },
        };

        c->dtype = o_dtypes[i].dtype;
        c->n = lengths[l];
        g_ptr_array_add (all_cases, c);
        for (gsize k = 0; k < G_N_ELEMENTS (tests); k++)
          {
            g_autofree char *path = g_strdup_printf ("/tensor/%s/%s/len-%" G_GUINT64_FORMAT, tests[k].what, name, c->n);
            g_test_add_data_func (path, c, tests[k].fn);
          }
        if (!o_dtypes[i].is_float && l == 0)
          {
            g_autofree char *path = g_strdup_printf ("/tensor/new-from-values/%s/invalid", name);
            g_test_add_data_func (path, c, test_from_values_invalid);
          }
      }
  g_test_add_func ("/tensor/to-values/literals", test_to_values_literals);
  g_test_add_func ("/tensor/new-from-values/rounding", test_from_values_rounding);
  g_test_add_func ("/tensor/format", test_format);
  g_test_add_func ("/tensor/scales-address", test_scales_address);
  g_test_add_func ("/tensor/large-storage", test_large_storage);

  ret = g_test_run ();
  g_ptr_array_unref (all_cases);
  return ret;
}

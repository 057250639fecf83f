/* test-errors.c: every rejected input of docs/numerics.md's error table
 *
 * Each case makes one call that must fail with one PIQ_ERROR code and must
 * leave its destination untouched: destinations are caller buffers filled
 * with the sentinel 0xA5 (wrapped by piq_tensor_new_for_address for the
 * tensor forms, or owned by a GBytes for read-only tensors) and are checked
 * byte by byte afterwards, guard bytes included; compute_params must leave
 * its parameters alone. Then the programmer errors (NULL objects and data),
 * each in a subprocess because TESTS_ENVIRONMENT makes criticals fatal.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

typedef enum {
  OP_QUANTIZE,
  OP_QUANTIZE_RAW,
  OP_QUANTIZE_NEW,
  OP_DEQUANTIZE,
  OP_DEQUANTIZE_RAW,
  OP_DEQUANTIZE_NEW,
  OP_REQUANTIZE,
  OP_REQUANTIZE_RAW,
  OP_COMPUTE,
  OP_COMPUTE_RAW,
} Op;

static const char *op_names[] = {
  [OP_QUANTIZE] = "quantize",
  [OP_QUANTIZE_RAW] = "quantize-raw",
  [OP_QUANTIZE_NEW] = "quantize-new",
  [OP_DEQUANTIZE] = "dequantize",
  [OP_DEQUANTIZE_RAW] = "dequantize-raw",
  [OP_DEQUANTIZE_NEW] = "dequantize-new",
  [OP_REQUANTIZE] = "requantize",
  [OP_REQUANTIZE_RAW] = "requantize-raw",
  [OP_COMPUTE] = "compute-params",
  [OP_COMPUTE_RAW] = "compute-params-raw",
};

typedef enum {
  DST_WRITABLE,        /* new_for_address over a sentinel buffer */
  DST_BYTES,           /* new_from_bytes: read-only */
  DST_ADDRESS_RO,      /* new_for_address, writable = FALSE */
} DstKind;

typedef struct {
  Op        op;
  PiqError  code;          /* expected; -1 for a call that must succeed */
  PiqDtype  pdtype;        /* params dtype */
  double    scale;
  gint64    zp;
  PiqDtype  src_dtype;
  guint64   src_n;
  gboolean  src_params;    /* dequantize: attach params to the quantized source */
  PiqDtype  dst_dtype;
  guint64   dst_n;
  DstKind   dst_kind;
  guint64   raw_n;         /* raw forms: element count (0: src_n) */
  gint64    raw_src_adjust;/* raw forms: bytes added to the needed source size */
  gint64    raw_dst_adjust;/* raw forms: bytes added to the needed destination size */
  gboolean  huge;          /* raw_n's byte size overflows: pass small buffers */
} ErrCase;

static GPtrArray *all_cases;

static const char *
error_nick (PiqError code)
{
  GEnumClass *klass = g_type_class_ref (PIQ_TYPE_ERROR);
  GEnumValue *v = g_enum_get_value (klass, code);
  const char *nick = v != NULL ? v->value_nick : "unknown";
  g_type_class_unref (klass);
  return nick;
}

/* A valid source: finite values for float dtypes, zero bytes for integers. */
static guint8 *
make_source (PiqDtype dtype, guint64 n, gsize *size)
{
  gsize s = o_dtype_nbytes (dtype, n);
  guint8 *buf = g_malloc0 (s + 8);

  if (o_dtype_is_float (dtype))
    for (guint64 i = 0; i < n; i++)
      o_write_float (dtype, buf, i, ((double) (i % 5) - 2.0) * 0.5);
  *size = s;
  return buf;
}

static gboolean
all_sentinel (const guint8 *buf, gsize size)
{
  for (gsize i = 0; i < size; i++)
    if (buf[i] != 0xA5)
      return FALSE;
  return TRUE;
}

static gsize
claimed_size (PiqDtype dtype, guint64 n)
{
  OUInt b = o_dtype_nbytes_wide (dtype, n);
  return b > G_MAXSIZE ? G_MAXSIZE : (gsize) b;
}

static void
count_notify (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  (*(guint *) user_data)++;
}

static void
test_error_case (gconstpointer data)
{
  const ErrCase *c = data;
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqParams) params = piq_params_new_affine (c->pdtype, c->scale, c->zp);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL;
  g_autoptr (PiqTensor) dst = NULL;
  g_autoptr (PiqTensor) made = NULL;
  g_autoptr (GBytes) dst_bytes = NULL;
  g_autofree guint8 *src_data = NULL;
  g_autofree guint8 *src_copy = NULL;
  gsize src_size = 0, dst_size;
  guint64 raw_n = c->raw_n != 0 ? c->raw_n : c->src_n;
  gboolean ok = FALSE;
  guint notified = 0;
  OBuf dbuf;

  /* source */
  src_data = make_source (c->src_dtype, c->huge ? 4 : c->src_n, &src_size);
  src_copy = g_memdup2 (src_data, src_size + 8);
  if (c->op == OP_QUANTIZE || c->op == OP_QUANTIZE_NEW || c->op == OP_DEQUANTIZE ||
      c->op == OP_DEQUANTIZE_NEW || c->op == OP_REQUANTIZE || c->op == OP_COMPUTE)
    {
      src = piq_tensor_new_from_data (c->src_dtype, c->src_n, src_data, src_size, &error);
      g_assert_no_error (error);
      if (c->src_params)
        piq_tensor_set_params (src, params);
    }

  /* destination: sentinel bytes, with guards. A huge count gets a 64-byte
   * buffer but claims the size it would need (or G_MAXSIZE), so that the
   * overflow is the only thing wrong with the call; it must be rejected
   * before anything is read or written. */
  if (c->huge)
    dst_size = 64;
  else if (c->op == OP_QUANTIZE_RAW || c->op == OP_DEQUANTIZE_RAW || c->op == OP_REQUANTIZE_RAW)
    dst_size = (gsize) MAX (0, (gint64) o_dtype_nbytes (c->dst_dtype, raw_n) + c->raw_dst_adjust);
  else
    dst_size = o_dtype_nbytes (c->dst_dtype, c->dst_n);
  o_buf_init (&dbuf, dst_size, 16, 0xA5);

  if (c->op == OP_QUANTIZE || c->op == OP_DEQUANTIZE || c->op == OP_REQUANTIZE)
    {
      switch (c->dst_kind)
        {
        case DST_WRITABLE:
          dst = piq_tensor_new_for_address (c->dst_dtype, c->dst_n, (guintptr) o_buf_data (&dbuf),
                                            dst_size, TRUE, &error);
          break;
        case DST_ADDRESS_RO:
          dst = piq_tensor_new_for_address (c->dst_dtype, c->dst_n, (guintptr) o_buf_data (&dbuf),
                                            dst_size, FALSE, &error);
          break;
        case DST_BYTES:
          dst_bytes = g_bytes_new_static (o_buf_data (&dbuf), dst_size);
          dst = piq_tensor_new_from_bytes (c->dst_dtype, c->dst_n, dst_bytes, &error);
          break;
        }
      g_assert_no_error (error);
      g_assert_nonnull (dst);
    }

  g_signal_connect (params, "notify", G_CALLBACK (count_notify), &notified);

  switch (c->op)
    {
    case OP_QUANTIZE:
      ok = piq_quantizer_quantize (q, params, src, dst, &error);
      break;
    case OP_QUANTIZE_RAW:
      ok = piq_quantizer_quantize_raw (q, params, c->src_dtype, src_data, raw_n, o_buf_data (&dbuf),
                                       c->huge ? claimed_size (c->dst_dtype, raw_n) : dst_size, &error);
      break;
    case OP_QUANTIZE_NEW:
      made = piq_quantizer_quantize_new (q, params, src, &error);
      ok = made != NULL;
      break;
    case OP_DEQUANTIZE:
      ok = piq_quantizer_dequantize (q, src, dst, PIQ_REDUCE_ADD, &error);
      break;
    case OP_DEQUANTIZE_RAW:
      {
        gsize ss = c->huge ? claimed_size (c->src_dtype, raw_n) : (gsize) MAX (0, (gint64) src_size + c->raw_src_adjust);
        ok = piq_quantizer_dequantize_raw (q, params, src_data, ss, raw_n, c->dst_dtype, o_buf_data (&dbuf),
                                           c->huge ? claimed_size (c->dst_dtype, raw_n) : dst_size,
                                           PIQ_REDUCE_SET, &error);
        break;
      }
    case OP_DEQUANTIZE_NEW:
      made = piq_quantizer_dequantize_new (q, src, c->dst_dtype, &error);
      ok = made != NULL;
      break;
    case OP_REQUANTIZE:
      ok = piq_quantizer_requantize (q, params, src, dst, PIQ_REDUCE_SET, &error);
      break;
    case OP_REQUANTIZE_RAW:
      ok = piq_quantizer_requantize_raw (q, params, c->src_dtype, src_data, raw_n, o_buf_data (&dbuf),
                                         c->huge ? claimed_size (c->src_dtype, raw_n) : dst_size,
                                         PIQ_REDUCE_ADD, &error);
      break;
    case OP_COMPUTE:
      ok = piq_quantizer_compute_params (q, params, src, &error);
      break;
    case OP_COMPUTE_RAW:
      ok = piq_quantizer_compute_params_raw (q, params, c->src_dtype, src_data, raw_n, &error);
      break;
    }

  if ((int) c->code < 0)
    {
      /* a control case next to the rejected ones: this one is accepted */
      g_assert_no_error (error);
      g_assert_true (ok);
      o_buf_clear (&dbuf);
      return;
    }

  if (error != NULL)
    g_test_message ("%s", error->message);
  g_assert_false (ok);
  g_assert_error (error, PIQ_ERROR, (gint) c->code);
  g_assert_null (made);
  /* nothing written: not the destination, not its surroundings, not the source */
  g_assert_true (all_sentinel (dbuf.base, dbuf.total));
  g_assert_cmpmem (src_data, src_size + 8, src_copy, src_size + 8);
  if (c->op == OP_COMPUTE || c->op == OP_COMPUTE_RAW)
    {
      g_assert_cmpfloat (piq_params_get_scale (params), ==, c->scale);
      g_assert_cmpint (piq_params_get_zero_point (params), ==, c->zp);
    }
  /* the parameters themselves are never touched by a failed call */
  g_assert_cmpuint (notified, ==, 0);
  if (dst != NULL)
    g_assert_null (piq_tensor_get_params (dst));
  o_buf_clear (&dbuf);
}

/* ---- table builders ---- */

static ErrCase *
err_case (Op op, PiqError code, PiqDtype pdtype, PiqDtype src_dtype, guint64 n, PiqDtype dst_dtype)
{
  ErrCase *c = g_new0 (ErrCase, 1);
  c->op = op;
  c->code = code;
  c->pdtype = pdtype;
  c->scale = 0.25;
  c->zp = 0;
  c->src_dtype = src_dtype;
  c->src_n = n;
  c->dst_dtype = dst_dtype;
  c->dst_n = n;
  c->dst_kind = DST_WRITABLE;
  c->src_params = TRUE;
  g_ptr_array_add (all_cases, c);
  return c;
}

static void
add_case (ErrCase *c, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
add_case (ErrCase *c, const char *format, ...)
{
  va_list args;
  g_autofree char *tail = NULL;
  g_autofree char *path = NULL;

  va_start (args, format);
  tail = g_strdup_vprintf (format, args);
  va_end (args);
  if ((int) c->code < 0)
    path = g_strdup_printf ("/errors/accepted/%s/%s", op_names[c->op], tail);
  else
    path = g_strdup_printf ("/errors/%s/%s/%s", error_nick (c->code), op_names[c->op], tail);
  g_test_add_data_func (path, c, test_error_case);
}

#define ACCEPTED ((PiqError) -1)

static void
add_unsupported (void)
{
  /* a float dtype as the quantized type */
  for (gsize f = 0; f < G_N_ELEMENTS (o_float_dtypes); f++)
    {
      PiqDtype fd = o_float_dtypes[f];
      add_case (err_case (OP_QUANTIZE, PIQ_ERROR_UNSUPPORTED, fd, PIQ_DTYPE_F32, 8, fd), "params-%s", o_dtype_name (fd));
      add_case (err_case (OP_QUANTIZE_RAW, PIQ_ERROR_UNSUPPORTED, fd, PIQ_DTYPE_F32, 8, fd), "params-%s", o_dtype_name (fd));
      add_case (err_case (OP_QUANTIZE_NEW, PIQ_ERROR_UNSUPPORTED, fd, PIQ_DTYPE_F32, 8, fd), "params-%s", o_dtype_name (fd));
      add_case (err_case (OP_DEQUANTIZE_RAW, PIQ_ERROR_UNSUPPORTED, fd, fd, 8, PIQ_DTYPE_F32), "params-%s", o_dtype_name (fd));
      add_case (err_case (OP_REQUANTIZE, PIQ_ERROR_UNSUPPORTED, fd, PIQ_DTYPE_F32, 8, PIQ_DTYPE_F32), "params-%s", o_dtype_name (fd));
      add_case (err_case (OP_REQUANTIZE_RAW, PIQ_ERROR_UNSUPPORTED, fd, PIQ_DTYPE_F32, 8, PIQ_DTYPE_F32), "params-%s", o_dtype_name (fd));
      add_case (err_case (OP_COMPUTE, PIQ_ERROR_UNSUPPORTED, fd, PIQ_DTYPE_F32, 8, PIQ_DTYPE_F32), "params-%s", o_dtype_name (fd));
      /* a float tensor as the quantized source of dequantize */
      add_case (err_case (OP_DEQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, fd, 8, PIQ_DTYPE_F32), "src-%s", o_dtype_name (fd));
      {
        ErrCase *c = err_case (OP_DEQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, fd, 8, PIQ_DTYPE_F32);
        c->src_params = FALSE;
        add_case (c, "src-%s-without-params", o_dtype_name (fd));
      }
      add_case (err_case (OP_DEQUANTIZE_NEW, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, fd, 8, PIQ_DTYPE_F32), "src-%s", o_dtype_name (fd));
    }

  /* an integer dtype as the float type */
  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      PiqDtype id = o_int_dtypes[i];
      const char *name = o_dtype_name (id);
      add_case (err_case (OP_QUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, id, 8, PIQ_DTYPE_UINT8), "src-%s", name);
      add_case (err_case (OP_QUANTIZE_RAW, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, id, 8, PIQ_DTYPE_UINT8), "src-%s", name);
      add_case (err_case (OP_DEQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, PIQ_DTYPE_UINT8, 8, id), "dst-%s", name);
      add_case (err_case (OP_DEQUANTIZE_RAW, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, PIQ_DTYPE_UINT8, 8, id), "dst-%s", name);
      add_case (err_case (OP_DEQUANTIZE_NEW, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, PIQ_DTYPE_UINT8, 8, id), "dst-%s", name);
      add_case (err_case (OP_REQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, id, 8, id), "tensors-%s", name);
      add_case (err_case (OP_REQUANTIZE_RAW, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, id, 8, id), "dtype-%s", name);
      add_case (err_case (OP_COMPUTE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, id, 8, PIQ_DTYPE_F32), "src-%s", name);
      add_case (err_case (OP_COMPUTE_RAW, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, id, 8, PIQ_DTYPE_F32), "src-%s", name);
    }

  /* pairs that do not exist */
  add_case (err_case (OP_REQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, PIQ_DTYPE_F32, 8, PIQ_DTYPE_F64), "f32-to-f64");
  add_case (err_case (OP_REQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_INT4, PIQ_DTYPE_BF16, 8, PIQ_DTYPE_F16), "bf16-to-f16");
  add_case (err_case (OP_QUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, PIQ_DTYPE_F32, 8, PIQ_DTYPE_UINT4),
            "dst-uint4-params-uint8");
  add_case (err_case (OP_QUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_INT8, PIQ_DTYPE_F32, 8, PIQ_DTYPE_F32),
            "dst-f32-params-int8");
  {
    /* a quantized tensor whose attached params describe another dtype */
    ErrCase *c = err_case (OP_DEQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_INT8, PIQ_DTYPE_UINT8, 8, PIQ_DTYPE_F32);
    add_case (c, "src-uint8-params-int8");
  }
}

static void
add_size (void)
{
  /* raw destinations one byte short; n = 31 uint4 needs 16 bytes */
  static const guint64 ns[] = { 1, 31, 1000 };
  for (gsize k = 0; k < G_N_ELEMENTS (ns); k++)
    {
      guint64 n = ns[k];
      ErrCase *c;

      c = err_case (OP_QUANTIZE_RAW, PIQ_ERROR_SIZE, PIQ_DTYPE_UINT4, PIQ_DTYPE_F32, n, PIQ_DTYPE_UINT4);
      c->raw_dst_adjust = -1;
      add_case (c, "uint4/len-%" G_GUINT64_FORMAT "/dst-%" G_GSIZE_FORMAT "-bytes", n, o_dtype_nbytes (PIQ_DTYPE_UINT4, n) - 1);
      c = err_case (OP_QUANTIZE_RAW, PIQ_ERROR_SIZE, PIQ_DTYPE_INT32, PIQ_DTYPE_F16, n, PIQ_DTYPE_INT32);
      c->raw_dst_adjust = -1;
      add_case (c, "int32/len-%" G_GUINT64_FORMAT "/dst-%" G_GSIZE_FORMAT "-bytes", n, o_dtype_nbytes (PIQ_DTYPE_INT32, n) - 1);
      c = err_case (OP_DEQUANTIZE_RAW, PIQ_ERROR_SIZE, PIQ_DTYPE_UINT2, PIQ_DTYPE_UINT2, n, PIQ_DTYPE_F32);
      c->raw_dst_adjust = -1;
      add_case (c, "uint2/len-%" G_GUINT64_FORMAT "/dst-%" G_GSIZE_FORMAT "-bytes", n, o_dtype_nbytes (PIQ_DTYPE_F32, n) - 1);
      c = err_case (OP_DEQUANTIZE_RAW, PIQ_ERROR_SIZE, PIQ_DTYPE_UINT2, PIQ_DTYPE_UINT2, n, PIQ_DTYPE_F32);
      c->raw_src_adjust = -1;
      add_case (c, "uint2/len-%" G_GUINT64_FORMAT "/src-%" G_GSIZE_FORMAT "-bytes", n, o_dtype_nbytes (PIQ_DTYPE_UINT2, n) - 1);
      c = err_case (OP_DEQUANTIZE_RAW, PIQ_ERROR_SIZE, PIQ_DTYPE_INT16, PIQ_DTYPE_INT16, n, PIQ_DTYPE_F64);
      c->raw_src_adjust = -1;
      add_case (c, "int16/len-%" G_GUINT64_FORMAT "/src-%" G_GSIZE_FORMAT "-bytes", n, o_dtype_nbytes (PIQ_DTYPE_INT16, n) - 1);
      c = err_case (OP_REQUANTIZE_RAW, PIQ_ERROR_SIZE, PIQ_DTYPE_INT8, PIQ_DTYPE_BF16, n, PIQ_DTYPE_BF16);
      c->raw_dst_adjust = -1;
      add_case (c, "bf16/len-%" G_GUINT64_FORMAT "/dst-%" G_GSIZE_FORMAT "-bytes", n, o_dtype_nbytes (PIQ_DTYPE_BF16, n) - 1);
    }

  /* tensor forms: element counts that differ */
  for (gint d = -1; d <= 1; d += 2)
    {
      ErrCase *c;
      c = err_case (OP_QUANTIZE, PIQ_ERROR_SIZE, PIQ_DTYPE_UINT4, PIQ_DTYPE_F32, 31, PIQ_DTYPE_UINT4);
      c->dst_n = (guint64) (31 + d);
      add_case (c, "src-31-dst-%" G_GUINT64_FORMAT, c->dst_n);
      c = err_case (OP_DEQUANTIZE, PIQ_ERROR_SIZE, PIQ_DTYPE_INT4, PIQ_DTYPE_INT4, 31, PIQ_DTYPE_F16);
      c->dst_n = (guint64) (31 + d);
      add_case (c, "src-31-dst-%" G_GUINT64_FORMAT, c->dst_n);
      c = err_case (OP_REQUANTIZE, PIQ_ERROR_SIZE, PIQ_DTYPE_UINT8, PIQ_DTYPE_F64, 31, PIQ_DTYPE_F64);
      c->dst_n = (guint64) (31 + d);
      add_case (c, "src-31-dst-%" G_GUINT64_FORMAT, c->dst_n);
    }

  /* controls: exactly the needed size is accepted */
  {
    ErrCase *c = err_case (OP_QUANTIZE_RAW, ACCEPTED, PIQ_DTYPE_UINT4, PIQ_DTYPE_F32, 31, PIQ_DTYPE_UINT4);
    add_case (c, "uint4/len-31/dst-16-bytes");
    c = err_case (OP_DEQUANTIZE_RAW, ACCEPTED, PIQ_DTYPE_UINT2, PIQ_DTYPE_UINT2, 31, PIQ_DTYPE_F32);
    add_case (c, "uint2/len-31/src-8-bytes");
  }
}

static void
add_overflow (void)
{
  ErrCase *c;

  /* n · 4 bytes of f32 source > G_MAXSIZE */
  c = err_case (OP_QUANTIZE_RAW, PIQ_ERROR_OVERFLOW, PIQ_DTYPE_UINT2, PIQ_DTYPE_F32, 4, PIQ_DTYPE_UINT2);
  c->huge = TRUE;
  c->raw_n = G_MAXSIZE / 2;
  add_case (c, "f32/len-%" G_GSIZE_FORMAT, (gsize) c->raw_n);
  c = err_case (OP_QUANTIZE_RAW, PIQ_ERROR_OVERFLOW, PIQ_DTYPE_INT64, PIQ_DTYPE_F16, 4, PIQ_DTYPE_INT64);
  c->huge = TRUE;
  c->raw_n = G_MAXSIZE / 8 + 1;
  add_case (c, "int64/len-%" G_GSIZE_FORMAT, (gsize) c->raw_n);
  /* n · 8 bytes of f64 destination */
  c = err_case (OP_DEQUANTIZE_RAW, PIQ_ERROR_OVERFLOW, PIQ_DTYPE_UINT2, PIQ_DTYPE_UINT2, 4, PIQ_DTYPE_F64);
  c->huge = TRUE;
  c->raw_n = G_MAXSIZE / 8 + 1;
  add_case (c, "f64/len-%" G_GSIZE_FORMAT, (gsize) c->raw_n);
  c = err_case (OP_REQUANTIZE_RAW, PIQ_ERROR_OVERFLOW, PIQ_DTYPE_UINT8, PIQ_DTYPE_BF16, 4, PIQ_DTYPE_BF16);
  c->huge = TRUE;
  c->raw_n = G_MAXSIZE / 2 + 1;
  add_case (c, "bf16/len-%" G_GSIZE_FORMAT, (gsize) c->raw_n);
  c = err_case (OP_COMPUTE_RAW, PIQ_ERROR_OVERFLOW, PIQ_DTYPE_UINT8, PIQ_DTYPE_F32, 4, PIQ_DTYPE_F32);
  c->huge = TRUE;
  c->raw_n = G_MAXSIZE / 4 + 1;
  add_case (c, "f32/len-%" G_GSIZE_FORMAT, (gsize) c->raw_n);
}

static void
test_overflow_tensor_new (gconstpointer data)
{
  const guint64 *n = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new (PIQ_DTYPE_F64, *n, &error);
  gsize size = 12345;

  g_assert_null (t);
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
  g_clear_error (&error);
  g_assert_false (piq_dtype_get_size_for_n (PIQ_DTYPE_F64, *n, &size, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
  g_assert_cmpuint (size, ==, 12345);
}

static void
test_overflow_tensor_from_data (void)
{
  guint8 data[16] = { 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new_from_data (PIQ_DTYPE_F32, G_MAXUINT64 / 2, data, sizeof data, &error);

  g_assert_null (t);
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
}

static void
test_overflow_tensor_for_address (void)
{
  guint8 data[16] = { 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new_for_address (PIQ_DTYPE_INT32, G_MAXUINT64 / 4 + 1,
                                                        (guintptr) data, sizeof data, TRUE, &error);

  g_assert_null (t);
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
}

static void
add_invalid_scale (void)
{
  static const struct { double v; const char *name; gboolean bad_f32; gboolean bad_f64; } scales[] = {
    { 0.0, "0", TRUE, TRUE },
    { -0.0, "-0", TRUE, TRUE },
    { -1.0, "-1", TRUE, TRUE },
    { -1e-300, "-1e-300", TRUE, TRUE },
    { NAN, "nan", TRUE, TRUE },
    { INFINITY, "inf", TRUE, TRUE },
    { -INFINITY, "-inf", TRUE, TRUE },
    { 1e-300, "1e-300", TRUE, FALSE },     /* (float) 1e-300 = 0 */
    { 1e-46, "1e-46", TRUE, FALSE },       /* below half the smallest binary32 subnormal: 0 */
    { 1e300, "1e300", TRUE, FALSE },       /* (float) 1e300 = Inf */
    { 3.5e38, "3.5e38", TRUE, FALSE },     /* above FLT_MAX, rounds to Inf */
    { 1e-40, "1e-40", TRUE, FALSE },       /* a binary32 subnormal whose inverse is Inf */
    { 3.0e38, "3e38", FALSE, FALSE },      /* inverse 3.3e-39: subnormal but not 0 */
    { 1e-38, "1e-38", FALSE, FALSE },      /* inverse 1e38 is finite */
  };
  static const PiqDtype floats[] = { PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16, PIQ_DTYPE_F16 };

  for (gsize s = 0; s < G_N_ELEMENTS (scales); s++)
    for (gsize f = 0; f < G_N_ELEMENTS (floats); f++)
      {
        PiqDtype fd = floats[f];
        gboolean bad = fd == PIQ_DTYPE_F64 ? scales[s].bad_f64 : scales[s].bad_f32;
        PiqError code = bad ? PIQ_ERROR_INVALID_SCALE : ACCEPTED;
        const Op ops[] = { OP_QUANTIZE, OP_QUANTIZE_RAW, OP_DEQUANTIZE, OP_DEQUANTIZE_RAW, OP_REQUANTIZE, OP_REQUANTIZE_RAW };

        for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
          {
            gboolean deq = ops[o] == OP_DEQUANTIZE || ops[o] == OP_DEQUANTIZE_RAW;
            ErrCase *c = err_case (ops[o], code, PIQ_DTYPE_INT8, deq ? PIQ_DTYPE_INT8 : fd, 17,
                                   ops[o] == OP_QUANTIZE || ops[o] == OP_QUANTIZE_RAW ? PIQ_DTYPE_INT8 : fd);
            c->scale = scales[s].v;
            add_case (c, "%s/scale-%s", o_dtype_name (fd), scales[s].name);
          }
      }
}

static void
add_invalid_zero_point (void)
{
  const Op ops[] = { OP_QUANTIZE, OP_QUANTIZE_RAW, OP_DEQUANTIZE, OP_DEQUANTIZE_RAW, OP_REQUANTIZE, OP_REQUANTIZE_RAW };

  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      PiqDtype id = o_int_dtypes[i];
      OInt qmin = o_qmin (id), qmax = o_qmax (id);
      OInt zps[4] = { qmin - 1, qmax + 1, qmin, MIN (qmax, (OInt) G_MAXINT64) };

      for (gsize z = 0; z < 4; z++)
        {
          gboolean bad = z < 2;
          if (zps[z] < G_MININT64 || zps[z] > G_MAXINT64)
            continue;       /* not a gint64: cannot be passed at all */
          for (gsize o = 0; o < G_N_ELEMENTS (ops); o++)
            {
              gboolean deq = ops[o] == OP_DEQUANTIZE || ops[o] == OP_DEQUANTIZE_RAW;
              ErrCase *c = err_case (ops[o], bad ? PIQ_ERROR_INVALID_ZERO_POINT : ACCEPTED, id,
                                     deq ? id : PIQ_DTYPE_F32, 17,
                                     ops[o] == OP_QUANTIZE || ops[o] == OP_QUANTIZE_RAW ? id : PIQ_DTYPE_F32);
              c->zp = (gint64) zps[z];
              add_case (c, "%s/zp-%" G_GINT64_FORMAT, o_dtype_name (id), c->zp);
            }
        }
    }
}

static void
add_read_only (void)
{
  const struct { DstKind kind; const char *name; } kinds[] = {
    { DST_BYTES, "from-bytes" }, { DST_ADDRESS_RO, "for-address-read-only" },
  };

  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      ErrCase *c;
      c = err_case (OP_QUANTIZE, PIQ_ERROR_READ_ONLY, PIQ_DTYPE_UINT4, PIQ_DTYPE_F32, 33, PIQ_DTYPE_UINT4);
      c->dst_kind = kinds[k].kind;
      add_case (c, "%s", kinds[k].name);
      c = err_case (OP_DEQUANTIZE, PIQ_ERROR_READ_ONLY, PIQ_DTYPE_UINT4, PIQ_DTYPE_UINT4, 33, PIQ_DTYPE_F32);
      c->dst_kind = kinds[k].kind;
      add_case (c, "%s", kinds[k].name);
      c = err_case (OP_REQUANTIZE, PIQ_ERROR_READ_ONLY, PIQ_DTYPE_INT8, PIQ_DTYPE_BF16, 33, PIQ_DTYPE_BF16);
      c->dst_kind = kinds[k].kind;
      add_case (c, "%s", kinds[k].name);
    }
}

static void
add_no_params (void)
{
  ErrCase *c;

  c = err_case (OP_DEQUANTIZE, PIQ_ERROR_NO_PARAMS, PIQ_DTYPE_INT4, PIQ_DTYPE_INT4, 9, PIQ_DTYPE_F32);
  c->src_params = FALSE;
  add_case (c, "int4");
  c = err_case (OP_DEQUANTIZE_NEW, PIQ_ERROR_NO_PARAMS, PIQ_DTYPE_UINT8, PIQ_DTYPE_UINT8, 9, PIQ_DTYPE_F16);
  c->src_params = FALSE;
  add_case (c, "uint8");
}

static void
add_compute_params (void)
{
  ErrCase *c;

  /* NaN in the data (the source is built from finite values, then patched) */
  c = err_case (OP_COMPUTE, PIQ_ERROR_EMPTY, PIQ_DTYPE_UINT8, PIQ_DTYPE_F32, 0, PIQ_DTYPE_F32);
  add_case (c, "f32/len-0");
  c = err_case (OP_COMPUTE_RAW, PIQ_ERROR_EMPTY, PIQ_DTYPE_INT4, PIQ_DTYPE_F16, 0, PIQ_DTYPE_F16);
  add_case (c, "f16/len-0");
  c = err_case (OP_COMPUTE_RAW, PIQ_ERROR_OVERFLOW, PIQ_DTYPE_INT4, PIQ_DTYPE_F64, 4, PIQ_DTYPE_F64);
  c->huge = TRUE;
  c->raw_n = G_MAXSIZE / 8 + 1;
  add_case (c, "f64/len-%" G_GSIZE_FORMAT, (gsize) c->raw_n);
}

static void
test_non_finite (gconstpointer data)
{
  const char *which = data;
  float x[5] = { 1, 2, 3, 4, 5 };
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqParams) params = piq_params_new_affine (PIQ_DTYPE_UINT8, 0.75, 9);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = NULL;

  x[3] = g_str_equal (which, "nan") ? NAN : g_str_equal (which, "inf") ? INFINITY : -INFINITY;
  t = piq_tensor_new_from_data (PIQ_DTYPE_F32, 5, (const guint8 *) x, sizeof x, &error);
  g_assert_no_error (error);
  g_assert_false (piq_quantizer_compute_params (q, params, t, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE);
  g_assert_cmpfloat (piq_params_get_scale (params), ==, 0.75);
  g_assert_cmpint (piq_params_get_zero_point (params), ==, 9);
}

/* Read-only tensors also refuse the tensor's own writers. */
static void
test_read_only_tensor_writers (void)
{
  guint8 buf[16];
  g_autoptr (GBytes) bytes = NULL;
  g_autoptr (PiqTensor) t = NULL;
  g_autoptr (GError) error = NULL;
  guint8 data[16] = { 0 };

  memset (buf, 0xA5, sizeof buf);
  bytes = g_bytes_new_static (buf, sizeof buf);
  t = piq_tensor_new_from_bytes (PIQ_DTYPE_UINT8, 16, bytes, &error);
  g_assert_no_error (error);
  g_assert_false (piq_tensor_is_writable (t));
  g_assert_false (piq_tensor_fill (t, 1.0, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_READ_ONLY);
  g_clear_error (&error);
  g_assert_false (piq_tensor_set_data (t, data, sizeof data, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_READ_ONLY);
  g_assert_true (all_sentinel (buf, sizeof buf));
}

/* A scale or zero point that is bad only as a set of params: validate says so. */
static void
test_validate (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqParams) a = piq_params_new_affine (PIQ_DTYPE_UINT4, 0.5, 16);
  g_autoptr (PiqParams) b = piq_params_new_affine (PIQ_DTYPE_INT8, -2.0, 0);
  g_autoptr (PiqParams) c = piq_params_new_affine (PIQ_DTYPE_F32, 1.0, 0);
  g_autoptr (PiqParams) d = piq_params_new_affine (PIQ_DTYPE_INT2, 1.0, -2);

  g_assert_false (piq_params_validate (a, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
  g_clear_error (&error);
  g_assert_false (piq_params_validate (b, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
  g_clear_error (&error);
  g_assert_false (piq_params_validate (c, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_true (piq_params_validate (d, &error));
  g_assert_no_error (error);
}

/* ---- programmer errors ---- */

typedef enum {
  NULL_QUANTIZE_SELF,
  NULL_QUANTIZE_PARAMS,
  NULL_QUANTIZE_SRC,
  NULL_QUANTIZE_DST,
  NULL_QUANTIZE_NEW_PARAMS,
  NULL_QUANTIZE_RAW_SRC,
  NULL_QUANTIZE_RAW_DST,
  NULL_QUANTIZE_RAW_PARAMS,
  NULL_DEQUANTIZE_SRC,
  NULL_DEQUANTIZE_DST,
  NULL_DEQUANTIZE_NEW_SRC,
  NULL_DEQUANTIZE_RAW_DST,
  NULL_REQUANTIZE_PARAMS,
  NULL_REQUANTIZE_RAW_SRC,
  NULL_COMPUTE_PARAMS,
  NULL_COMPUTE_SRC,
  NULL_COMPUTE_RAW_SRC,
  NULL_TENSOR_FROM_DATA,
  NULL_TENSOR_GET_DATA,
  NULL_TENSOR_FROM_BYTES,
  NULL_PARAMS_GET_SCALE,
  NULL_PARAMS_COPY,
  N_NULL_CASES
} NullCase;

static const char *null_names[] = {
  [NULL_QUANTIZE_SELF] = "quantize/self",
  [NULL_QUANTIZE_PARAMS] = "quantize/params",
  [NULL_QUANTIZE_SRC] = "quantize/src",
  [NULL_QUANTIZE_DST] = "quantize/dst",
  [NULL_QUANTIZE_NEW_PARAMS] = "quantize-new/params",
  [NULL_QUANTIZE_RAW_SRC] = "quantize-raw/src",
  [NULL_QUANTIZE_RAW_DST] = "quantize-raw/dst",
  [NULL_QUANTIZE_RAW_PARAMS] = "quantize-raw/params",
  [NULL_DEQUANTIZE_SRC] = "dequantize/src",
  [NULL_DEQUANTIZE_DST] = "dequantize/dst",
  [NULL_DEQUANTIZE_NEW_SRC] = "dequantize-new/src",
  [NULL_DEQUANTIZE_RAW_DST] = "dequantize-raw/dst",
  [NULL_REQUANTIZE_PARAMS] = "requantize/params",
  [NULL_REQUANTIZE_RAW_SRC] = "requantize-raw/src",
  [NULL_COMPUTE_PARAMS] = "compute-params/params",
  [NULL_COMPUTE_SRC] = "compute-params/src",
  [NULL_COMPUTE_RAW_SRC] = "compute-params-raw/src",
  [NULL_TENSOR_FROM_DATA] = "tensor-new-from-data/data",
  [NULL_TENSOR_GET_DATA] = "tensor-get-data/self",
  [NULL_TENSOR_FROM_BYTES] = "tensor-new-from-bytes/bytes",
  [NULL_PARAMS_GET_SCALE] = "params-get-scale/self",
  [NULL_PARAMS_COPY] = "params-copy/self",
};

/* In the subprocess: the call must emit a critical from the library's log
 * domain and return FALSE/NULL/0 without crashing. */
static void
null_call (NullCase which)
{
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqParams) p = piq_params_new_affine (PIQ_DTYPE_UINT8, 0.5, 0);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) f = piq_tensor_new (PIQ_DTYPE_F32, 4, &error);
  g_autoptr (PiqTensor) u = piq_tensor_new (PIQ_DTYPE_UINT8, 4, &error);
  guint8 buf[64] = { 0 };
  gboolean ok = TRUE;
  gpointer ptr = (gpointer) 1;
  double d = 1;

  piq_tensor_set_params (u, p);
  g_test_expect_message ("Piquant", G_LOG_LEVEL_CRITICAL, "*");
  switch (which)
    {
    case NULL_QUANTIZE_SELF: ok = piq_quantizer_quantize (NULL, p, f, u, &error); break;
    case NULL_QUANTIZE_PARAMS: ok = piq_quantizer_quantize (q, NULL, f, u, &error); break;
    case NULL_QUANTIZE_SRC: ok = piq_quantizer_quantize (q, p, NULL, u, &error); break;
    case NULL_QUANTIZE_DST: ok = piq_quantizer_quantize (q, p, f, NULL, &error); break;
    case NULL_QUANTIZE_NEW_PARAMS: ptr = piq_quantizer_quantize_new (q, NULL, f, &error); break;
    case NULL_QUANTIZE_RAW_SRC: ok = piq_quantizer_quantize_raw (q, p, PIQ_DTYPE_F32, NULL, 4, buf, 4, &error); break;
    case NULL_QUANTIZE_RAW_DST: ok = piq_quantizer_quantize_raw (q, p, PIQ_DTYPE_F32, buf, 4, NULL, 4, &error); break;
    case NULL_QUANTIZE_RAW_PARAMS: ok = piq_quantizer_quantize_raw (q, NULL, PIQ_DTYPE_F32, buf, 4, buf + 32, 4, &error); break;
    case NULL_DEQUANTIZE_SRC: ok = piq_quantizer_dequantize (q, NULL, f, PIQ_REDUCE_SET, &error); break;
    case NULL_DEQUANTIZE_DST: ok = piq_quantizer_dequantize (q, u, NULL, PIQ_REDUCE_SET, &error); break;
    case NULL_DEQUANTIZE_NEW_SRC: ptr = piq_quantizer_dequantize_new (q, NULL, PIQ_DTYPE_F32, &error); break;
    case NULL_DEQUANTIZE_RAW_DST:
      ok = piq_quantizer_dequantize_raw (q, p, buf, 4, 4, PIQ_DTYPE_F32, NULL, 16, PIQ_REDUCE_SET, &error);
      break;
    case NULL_REQUANTIZE_PARAMS: ok = piq_quantizer_requantize (q, NULL, f, f, PIQ_REDUCE_SET, &error); break;
    case NULL_REQUANTIZE_RAW_SRC:
      ok = piq_quantizer_requantize_raw (q, p, PIQ_DTYPE_F32, NULL, 4, buf, 16, PIQ_REDUCE_SET, &error);
      break;
    case NULL_COMPUTE_PARAMS: ok = piq_quantizer_compute_params (q, NULL, f, &error); break;
    case NULL_COMPUTE_SRC: ok = piq_quantizer_compute_params (q, p, NULL, &error); break;
    case NULL_COMPUTE_RAW_SRC: ok = piq_quantizer_compute_params_raw (q, p, PIQ_DTYPE_F32, NULL, 4, &error); break;
    case NULL_TENSOR_FROM_DATA: ptr = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, NULL, 16, &error); break;
    case NULL_TENSOR_GET_DATA: ptr = (gpointer) piq_tensor_get_data (NULL, NULL); break;
    case NULL_TENSOR_FROM_BYTES: ptr = piq_tensor_new_from_bytes (PIQ_DTYPE_F32, 4, NULL, &error); break;
    case NULL_PARAMS_GET_SCALE: d = piq_params_get_scale (NULL); break;
    case NULL_PARAMS_COPY: ptr = piq_params_copy (NULL); break;
    default: g_assert_not_reached ();
    }
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  if (which == NULL_PARAMS_GET_SCALE)
    g_assert_cmpfloat (d, ==, 0);
  else if (ptr != (gpointer) 1)
    g_assert_null (ptr);
  else
    g_assert_false (ok);
}

static void
test_null (gconstpointer data)
{
  NullCase which = GPOINTER_TO_INT (data);

  if (g_test_subprocess ())
    {
      null_call (which);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  static guint64 overflow_ns[] = { G_MAXUINT64 / 4, G_MAXUINT64 / 8 + 1, G_MAXUINT64 };
  int ret;

  g_test_init (&argc, &argv, NULL);
  all_cases = g_ptr_array_new_with_free_func (g_free);

  add_unsupported ();
  add_size ();
  add_overflow ();
  for (gsize i = 0; i < G_N_ELEMENTS (overflow_ns); i++)
    {
      g_autofree char *path = g_strdup_printf ("/errors/overflow/tensor-new/f64/len-%" G_GUINT64_FORMAT, overflow_ns[i]);
      g_test_add_data_func (path, &overflow_ns[i], test_overflow_tensor_new);
    }
  g_test_add_func ("/errors/overflow/tensor-new-from-data/f32/len-9223372036854775807", test_overflow_tensor_from_data);
  g_test_add_func ("/errors/overflow/tensor-new-for-address/int32/len-4611686018427387904", test_overflow_tensor_for_address);
  add_invalid_scale ();
  add_invalid_zero_point ();
  add_read_only ();
  add_no_params ();
  add_compute_params ();
  g_test_add_data_func ("/errors/non-finite/compute-params/f32/nan", "nan", test_non_finite);
  g_test_add_data_func ("/errors/non-finite/compute-params/f32/inf", "inf", test_non_finite);
  g_test_add_data_func ("/errors/non-finite/compute-params/f32/-inf", "-inf", test_non_finite);
  g_test_add_func ("/errors/read-only/tensor-fill-and-set-data", test_read_only_tensor_writers);
  g_test_add_func ("/errors/params-validate", test_validate);

  for (int i = 0; i < N_NULL_CASES; i++)
    {
      g_autofree char *path = g_strdup_printf ("/errors/programmer/null/%s", null_names[i]);
      g_test_add_data_func (path, GINT_TO_POINTER (i), test_null);
    }

  ret = g_test_run ();
  g_ptr_array_unref (all_cases);
  return ret;
}

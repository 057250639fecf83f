/* test-errors.c: every rejected input of docs/numerics.md's error table
 *
 * Each case makes one call that must fail with one PIQ_ERROR code and must
 * leave its destination untouched: destinations are caller buffers filled
 * with the sentinel 0xA5 (wrapped by piq_tensor_new_for_address for the
 * float tensor forms, or owned by a GBytes for read-only tensors), or
 * tensors made by piq_tensor_new_quantized whose codes are set to the
 * sentinel, and are checked byte by byte afterwards, guard bytes included;
 * no call touches its recipe. Then the no-silent-default errors of issue 10
 * (options that do not apply, a bad scale set as a property, a channel axis
 * the shape lacks), and the programmer errors (NULL objects and data), each
 * in a subprocess because TESTS_ENVIRONMENT makes criticals fatal.
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
  DST_WRITABLE,        /* float: new_for_address over a sentinel buffer; quantized: new_quantized, prefilled */
  DST_BYTES,           /* float: new_from_bytes; quantized: new_quantized_from_bytes: read-only */
  DST_ADDRESS_RO,      /* new_for_address, writable = FALSE */
  DST_PLAIN,           /* new_for_address, writable, no format (a quantize destination without format) */
} DstKind;

typedef struct {
  Op        op;
  PiqError  code;          /* expected; -1 for a call that must succeed */
  PiqDtype  fdtype;        /* the format's dtype (per tensor, affine: piq_format_new) */
  double    scale;         /* the recipe's given scale (piq_recipe_new_affine) */
  gint64    zp;
  PiqDtype  src_dtype;
  guint64   src_n;
  gboolean  src_format;    /* dequantize: the quantized source owns the format, scale and zp */
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

static gboolean
is_tensor_op (Op op)
{
  return op == OP_QUANTIZE || op == OP_QUANTIZE_NEW || op == OP_DEQUANTIZE ||
         op == OP_DEQUANTIZE_NEW || op == OP_REQUANTIZE || op == OP_COMPUTE;
}

/* A quantized destination made by new_quantized, its codes set to the
 * sentinel so that a failed call can be seen to have written nothing. */
static PiqTensor *
sentinel_quantized (PiqFormat *format, const guint64 *shape, guint n_dims, GError **error)
{
  PiqTensor *t = piq_tensor_new_quantized (format, shape, n_dims, error);
  gsize size = 0;
  guint8 *data;

  if (t == NULL)
    return NULL;
  data = piq_tensor_get_writable_data (t, &size);
  memset (data, 0xA5, size);
  return t;
}

static void
test_error_case (gconstpointer data)
{
  const ErrCase *c = data;
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) format = piq_format_new (c->fdtype);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (c->scale, c->zp);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL;
  g_autoptr (PiqTensor) dst = NULL;
  g_autoptr (PiqTensor) made = NULL;
  g_autoptr (GBytes) dst_bytes = NULL;
  g_autoptr (GBytes) src_bytes = NULL;
  g_autofree guint8 *src_data = NULL;
  g_autofree guint8 *src_copy = NULL;
  gsize src_size = 0, dst_size;
  guint64 raw_n = c->raw_n != 0 ? c->raw_n : c->src_n;
  guint64 src_shape[1] = { c->src_n };
  guint64 dst_shape[1] = { c->dst_n };
  guint64 raw_shape[1] = { raw_n };
  gboolean ok = FALSE;
  gboolean quantized_dst = FALSE;    /* dst made by new_quantized: its own bytes hold the sentinel */
  double scale_out = 123.0;
  gint64 zp_out = -77;
  guint notified = 0;
  OBuf dbuf;

  /* source */
  src_data = make_source (c->src_dtype, c->huge ? 4 : c->src_n, &src_size);
  src_copy = g_memdup2 (src_data, src_size + 8);

  /* destination buffer: sentinel bytes, with guards. A huge count gets a
   * 64-byte buffer but claims the size it would need (or G_MAXSIZE), so
   * that the overflow is the only thing wrong with the call; it must be
   * rejected before anything is read or written. */
  if (c->huge)
    dst_size = 64;
  else if (c->op == OP_QUANTIZE_RAW || c->op == OP_DEQUANTIZE_RAW || c->op == OP_REQUANTIZE_RAW)
    dst_size = (gsize) MAX (0, (gint64) o_dtype_nbytes (c->dst_dtype, raw_n) + c->raw_dst_adjust);
  else
    dst_size = o_dtype_nbytes (c->dst_dtype, c->dst_n);
  o_buf_init (&dbuf, dst_size, 16, 0xA5);

  g_signal_connect (recipe, "notify", G_CALLBACK (count_notify), &notified);

  if (is_tensor_op (c->op))
    {
      if (c->src_format && (c->op == OP_DEQUANTIZE || c->op == OP_DEQUANTIZE_NEW) &&
          piq_dtype_is_quantized (c->src_dtype))
        {
          /* the quantized source owns its format, scale and zero point; a
           * bad scale or zero point may already be refused here (any route
           * gives the same code, and nothing has been written) */
          src_bytes = g_bytes_new (src_data, src_size);
          src = piq_tensor_new_quantized_from_bytes (format, src_shape, 1, src_bytes, NULL, NULL,
                                                     c->scale, c->zp, &error);
          if (src == NULL)
            goto failed;
        }
      else
        {
          src = piq_tensor_new_from_data (c->src_dtype, c->src_n, src_data, src_size, &error);
          g_assert_no_error (error);
        }
    }

  if (c->op == OP_QUANTIZE || c->op == OP_DEQUANTIZE || c->op == OP_REQUANTIZE)
    {
      /* quantize writes into a tensor made for the format (new_quantized);
       * a destination of another dtype is a plain tensor without format */
      gboolean to_quantized = c->op == OP_QUANTIZE && c->dst_kind != DST_PLAIN &&
                              c->dst_dtype == c->fdtype;
      switch (c->dst_kind)
        {
        case DST_WRITABLE:
          if (to_quantized)
            {
              /* a float format is refused when the destination is made
               * (or by quantize): either is the call under test */
              dst = sentinel_quantized (format, dst_shape, 1, &error);
              if (dst == NULL)
                goto failed;
              quantized_dst = TRUE;
            }
          else
            dst = piq_tensor_new_for_address (c->dst_dtype, dst_shape, 1, (guintptr) o_buf_data (&dbuf),
                                              dst_size, 0, TRUE, &error);
          break;
        case DST_PLAIN:
          dst = piq_tensor_new_for_address (c->dst_dtype, dst_shape, 1, (guintptr) o_buf_data (&dbuf),
                                            dst_size, 0, TRUE, &error);
          break;
        case DST_ADDRESS_RO:
          g_assert (!to_quantized);
          dst = piq_tensor_new_for_address (c->dst_dtype, dst_shape, 1, (guintptr) o_buf_data (&dbuf),
                                            dst_size, 0, FALSE, &error);
          break;
        case DST_BYTES:
          dst_bytes = g_bytes_new_static (o_buf_data (&dbuf), dst_size);
          if (to_quantized)
            dst = piq_tensor_new_quantized_from_bytes (format, dst_shape, 1, dst_bytes, NULL, NULL,
                                                       c->scale, c->zp, &error);
          else
            dst = piq_tensor_new_from_bytes (c->dst_dtype, c->dst_n, dst_bytes, &error);
          break;
        }
      g_assert_no_error (error);
      g_assert_nonnull (dst);
    }

  switch (c->op)
    {
    case OP_QUANTIZE:
      ok = piq_quantizer_quantize (q, recipe, src, dst, &error);
      break;
    case OP_QUANTIZE_RAW:
      ok = piq_quantizer_quantize_raw (q, format, recipe, c->src_dtype, src_data, raw_shape, 1, o_buf_data (&dbuf),
                                       c->huge ? claimed_size (c->dst_dtype, raw_n) : dst_size,
                                       NULL, 0, NULL, 0, &scale_out, &zp_out, &error);
      break;
    case OP_QUANTIZE_NEW:
      made = piq_quantizer_quantize_new (q, format, recipe, src, &error);
      ok = made != NULL;
      break;
    case OP_DEQUANTIZE:
      ok = piq_quantizer_dequantize (q, src, dst, PIQ_REDUCE_ADD, &error);
      break;
    case OP_DEQUANTIZE_RAW:
      {
        gsize ss = c->huge ? claimed_size (c->src_dtype, raw_n) : (gsize) MAX (0, (gint64) src_size + c->raw_src_adjust);
        ok = piq_quantizer_dequantize_raw (q, format, c->scale, c->zp, src_data, ss, raw_shape, 1, NULL, 0, NULL, 0,
                                           c->dst_dtype, o_buf_data (&dbuf),
                                           c->huge ? claimed_size (c->dst_dtype, raw_n) : dst_size,
                                           PIQ_REDUCE_SET, &error);
        break;
      }
    case OP_DEQUANTIZE_NEW:
      made = piq_quantizer_dequantize_new (q, src, c->dst_dtype, &error);
      ok = made != NULL;
      break;
    case OP_REQUANTIZE:
      ok = piq_quantizer_requantize (q, format, recipe, src, dst, PIQ_REDUCE_SET, &error);
      break;
    case OP_REQUANTIZE_RAW:
      ok = piq_quantizer_requantize_raw (q, format, recipe, c->src_dtype, src_data, raw_shape, 1, o_buf_data (&dbuf),
                                         c->huge ? claimed_size (c->src_dtype, raw_n) : dst_size,
                                         PIQ_REDUCE_ADD, &error);
      break;
    case OP_COMPUTE:
      ok = piq_quantizer_compute_params (q, format, recipe, src, &error);
      break;
    case OP_COMPUTE_RAW:
      ok = piq_quantizer_compute_params_raw (q, format, recipe, c->src_dtype, src_data, raw_n, &error);
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

failed:
  if ((int) c->code < 0)
    {
      g_test_fail_printf ("a tensor could not be made: %s", error != NULL ? error->message : "no error");
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
  g_assert_cmpfloat (scale_out, ==, 123.0);
  g_assert_cmpint (zp_out, ==, -77);
  if (quantized_dst)
    {
      gsize size = 0;
      const guint8 *codes = piq_tensor_get_data (dst, &size);
      g_assert_true (all_sentinel (codes, size));
      g_assert_true (piq_format_equal (piq_tensor_get_format (dst), format));
    }
  else if (dst != NULL && !piq_dtype_is_quantized (piq_tensor_get_dtype (dst)))
    g_assert_null (piq_tensor_get_format (dst));
  /* the recipe is never touched by a failed call */
  g_assert_cmpuint (notified, ==, 0);
  g_assert_true (piq_recipe_has_scale (recipe));
  g_assert_true (piq_recipe_has_zero_point (recipe));
  g_assert_true (piq_recipe_get_scale (recipe) == c->scale || (isnan (c->scale) && isnan (piq_recipe_get_scale (recipe))));
  g_assert_cmpint (piq_recipe_get_zero_point (recipe), ==, c->zp);
  o_buf_clear (&dbuf);
}

/* ---- table builders ---- */

static ErrCase *
err_case (Op op, PiqError code, PiqDtype fdtype, PiqDtype src_dtype, guint64 n, PiqDtype dst_dtype)
{
  ErrCase *c = g_new0 (ErrCase, 1);
  c->op = op;
  c->code = code;
  c->fdtype = fdtype;
  c->scale = 0.25;
  c->zp = 0;
  c->src_dtype = src_dtype;
  c->src_n = n;
  c->dst_dtype = dst_dtype;
  c->dst_n = n;
  c->dst_kind = DST_WRITABLE;
  c->src_format = TRUE;
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
      /* a float tensor as the quantized source of dequantize (a float
       * tensor never carries a format, so "with" and "without" its old
       * attached params are now the same call) */
      add_case (err_case (OP_DEQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, fd, 8, PIQ_DTYPE_F32), "src-%s", o_dtype_name (fd));
      {
        ErrCase *c = err_case (OP_DEQUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_UINT8, fd, 8, PIQ_DTYPE_F32);
        c->src_format = FALSE;
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
  /* a float tensor as the destination of quantize (the destination's
   * format decides: a float tensor has none) */
  add_case (err_case (OP_QUANTIZE, PIQ_ERROR_UNSUPPORTED, PIQ_DTYPE_INT8, PIQ_DTYPE_F32, 8, PIQ_DTYPE_F32),
            "dst-f32-params-int8");
  /* "dst-uint4-params-uint8" (a destination of another dtype than the
   * params) and "src-uint8-params-int8" (a quantized tensor whose attached
   * params describe another dtype) cannot be built any more: a quantized
   * tensor's dtype is its format's. Their successors are
   * /errors/no-format/quantize/dst-uint4-without-format and
   * /errors/tensor/dtype-is-the-format's. */
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
  const guint64 shape[1] = { G_MAXUINT64 / 4 + 1 };
  g_autoptr (PiqTensor) t = piq_tensor_new_for_address (PIQ_DTYPE_INT32, shape, 1,
                                                        (guintptr) data, sizeof data, 0, TRUE, &error);

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
      /* quantize writes only into a tensor made for a format: a read-only
       * one is new_quantized_from_bytes (a for-address tensor has no format:
       * /errors/no-format/quantize/dst-uint4-without-format) */
      if (kinds[k].kind == DST_BYTES)
        {
          c = err_case (OP_QUANTIZE, PIQ_ERROR_READ_ONLY, PIQ_DTYPE_UINT4, PIQ_DTYPE_F32, 33, PIQ_DTYPE_UINT4);
          c->dst_kind = kinds[k].kind;
          add_case (c, "%s", kinds[k].name);
        }
      c = err_case (OP_DEQUANTIZE, PIQ_ERROR_READ_ONLY, PIQ_DTYPE_UINT4, PIQ_DTYPE_UINT4, 33, PIQ_DTYPE_F32);
      c->dst_kind = kinds[k].kind;
      add_case (c, "%s", kinds[k].name);
      c = err_case (OP_REQUANTIZE, PIQ_ERROR_READ_ONLY, PIQ_DTYPE_INT8, PIQ_DTYPE_BF16, 33, PIQ_DTYPE_BF16);
      c->dst_kind = kinds[k].kind;
      add_case (c, "%s", kinds[k].name);
    }
}

static void
add_no_format (void)
{
  ErrCase *c;

  c = err_case (OP_DEQUANTIZE, PIQ_ERROR_NO_FORMAT, PIQ_DTYPE_INT4, PIQ_DTYPE_INT4, 9, PIQ_DTYPE_F32);
  c->src_format = FALSE;
  add_case (c, "int4");
  c = err_case (OP_DEQUANTIZE_NEW, PIQ_ERROR_NO_FORMAT, PIQ_DTYPE_UINT8, PIQ_DTYPE_UINT8, 9, PIQ_DTYPE_F16);
  c->src_format = FALSE;
  add_case (c, "uint8");
  /* a quantized-dtype destination of quantize that was not made for a
   * format (new_for_address): nothing says what its bytes would mean */
  c = err_case (OP_QUANTIZE, PIQ_ERROR_NO_FORMAT, PIQ_DTYPE_UINT4, PIQ_DTYPE_F32, 8, PIQ_DTYPE_UINT4);
  c->dst_kind = DST_PLAIN;
  add_case (c, "dst-uint4-without-format");
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
  g_autoptr (PiqFormat) format = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (0.75, 9);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = NULL;
  guint notified = 0;

  x[3] = g_str_equal (which, "nan") ? NAN : g_str_equal (which, "inf") ? INFINITY : -INFINITY;
  t = piq_tensor_new_from_data (PIQ_DTYPE_F32, 5, (const guint8 *) x, sizeof x, &error);
  g_assert_no_error (error);
  g_signal_connect (recipe, "notify", G_CALLBACK (count_notify), &notified);
  g_assert_false (piq_quantizer_compute_params (q, format, recipe, t, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE);
  g_assert_cmpfloat (piq_recipe_get_scale (recipe), ==, 0.75);
  g_assert_cmpint (piq_recipe_get_zero_point (recipe), ==, 9);
  g_assert_cmpuint (notified, ==, 0);
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

/* A scale or zero point that is bad only with its format: the old
 * piq_params_validate is now piq_format_validate for the format and the
 * first call for the recipe. */
static void
test_validate (void)
{
  const float x[4] = { 0.5f, -1, 2, 0 };
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, (const guint8 *) x, sizeof x, &error);
  g_autoptr (PiqFormat) u4 = piq_format_new (PIQ_DTYPE_UINT4);
  g_autoptr (PiqFormat) i8 = piq_format_new (PIQ_DTYPE_INT8);
  g_autoptr (PiqFormat) f32 = piq_format_new (PIQ_DTYPE_F32);
  g_autoptr (PiqFormat) i2 = piq_format_new (PIQ_DTYPE_INT2);
  g_autoptr (PiqRecipe) a = piq_recipe_new_affine (0.5, 16);
  g_autoptr (PiqRecipe) b = piq_recipe_new_affine (-2.0, 0);
  g_autoptr (PiqRecipe) c = piq_recipe_new_affine (1.0, 0);
  g_autoptr (PiqRecipe) d = piq_recipe_new_affine (1.0, -2);
  g_autoptr (PiqTensor) ta = NULL, tb = NULL, tc = NULL, td = NULL;

  g_assert_true (piq_format_validate (u4, &error));
  g_assert_true (piq_format_validate (i8, &error));
  g_assert_true (piq_format_validate (i2, &error));
  g_assert_no_error (error);
  g_assert_null ((ta = piq_quantizer_quantize_new (q, u4, a, src, &error)));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
  g_clear_error (&error);
  g_assert_null ((tb = piq_quantizer_quantize_new (q, i8, b, src, &error)));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
  g_clear_error (&error);
  g_assert_false (piq_format_validate (f32, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_null ((tc = piq_quantizer_quantize_new (q, f32, c, src, &error)));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  td = piq_quantizer_quantize_new (q, i2, d, src, &error);
  g_assert_no_error (error);
  g_assert_nonnull (td);
}

/* A quantized tensor's dtype is its format's: the old mismatch between a
 * tensor's dtype and its attached params' dtype cannot be built. */
static void
test_tensor_dtype_is_format (void)
{
  const guint8 codes[8] = { 0 };
  const guint64 shape[1] = { 8 };
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = g_bytes_new (codes, sizeof codes);
  g_autoptr (PiqFormat) i8 = piq_format_new (PIQ_DTYPE_INT8);
  g_autoptr (PiqTensor) t = piq_tensor_new_quantized_from_bytes (i8, shape, 1, bytes, NULL, NULL, 0.5, 0, &error);
  g_autoptr (PiqTensor) u = piq_tensor_new_quantized (i8, shape, 1, &error);

  g_assert_no_error (error);
  g_assert_cmpint (piq_tensor_get_dtype (t), ==, PIQ_DTYPE_INT8);
  g_assert_cmpint (piq_tensor_get_dtype (u), ==, PIQ_DTYPE_INT8);
  g_assert_true (piq_format_equal (piq_tensor_get_format (t), i8));
  g_assert_true (piq_format_equal (piq_tensor_get_format (u), i8));
}

/* ---- no silent defaults (issue 10) ---- */

/* The calls of one rejected (format, recipe) pair: quantize into a tensor
 * made for the format, quantize_raw into caller buffers, quantize_new,
 * requantize and requantize_raw into caller floats. Each must fail with the
 * code and write nothing; the recipe is left alone. A destination that the
 * format already refuses when it is made counts as the same failure. */
#define OPT_ROWS 4
#define OPT_COLS 16
#define OPT_N (OPT_ROWS * OPT_COLS)

typedef struct {
  const char *name;
  PiqError    code;
  PiqFormat *(*format) (void);
  PiqRecipe *(*recipe) (void);
  guint       n_dims;           /* 2: [4, 16]; 1: [64] */
} OptCase;

static void
check_rejected_calls (PiqFormat *format, PiqRecipe *recipe, const guint64 *shape, guint n_dims, PiqError code)
{
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL, dst = NULL, made = NULL, fdst = NULL;
  float x[OPT_N], x_copy[OPT_N];
  guint64 n = 1;
  guint notified = 0;
  double scale_out = 123.0;
  gint64 zp_out = -77;
  OBuf codes, scales, zps, floats;

  for (guint i = 0; i < n_dims; i++)
    n *= shape[i];
  g_assert_cmpuint (n, ==, OPT_N);
  for (guint i = 0; i < OPT_N; i++)
    x[i] = ((float) (i % 13) - 6.0f) * 0.37f;
  memcpy (x_copy, x, sizeof x);
  src = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, n_dims, &error);
  g_assert_no_error (error);
  g_assert_true (piq_tensor_set_data (src, (const guint8 *) x, sizeof x, &error));
  g_assert_no_error (error);
  if (recipe != NULL)
    g_signal_connect (recipe, "notify", G_CALLBACK (count_notify), &notified);

  /* quantize */
  dst = sentinel_quantized (format, shape, n_dims, &error);
  if (dst == NULL)
    {
      g_test_message ("new_quantized: %s", error->message);
      g_assert_error (error, PIQ_ERROR, (gint) code);
    }
  else
    {
      gsize size = 0;
      const guint8 *data;
      double scale0 = piq_tensor_get_scale (dst);
      gint64 zp0 = piq_tensor_get_zero_point (dst);

      g_assert_false (piq_quantizer_quantize (q, recipe, src, dst, &error));
      g_test_message ("quantize: %s", error != NULL ? error->message : "no error");
      g_assert_error (error, PIQ_ERROR, (gint) code);
      data = piq_tensor_get_data (dst, &size);
      g_assert_true (all_sentinel (data, size));
      g_assert_cmpfloat (piq_tensor_get_scale (dst), ==, scale0);
      g_assert_cmpint (piq_tensor_get_zero_point (dst), ==, zp0);
    }
  g_clear_error (&error);

  /* quantize_raw, with room for everything */
  o_buf_init (&codes, OPT_N * 8, 16, 0xA5);
  o_buf_init (&scales, OPT_N * 8, 16, 0xA5);
  o_buf_init (&zps, OPT_N * 8, 16, 0xA5);
  g_assert_false (piq_quantizer_quantize_raw (q, format, recipe, PIQ_DTYPE_F32, x, shape, n_dims,
                                              o_buf_data (&codes), codes.size, o_buf_data (&scales), scales.size,
                                              o_buf_data (&zps), zps.size, &scale_out, &zp_out, &error));
  g_test_message ("quantize_raw: %s", error != NULL ? error->message : "no error");
  g_assert_error (error, PIQ_ERROR, (gint) code);
  g_clear_error (&error);
  g_assert_true (all_sentinel (codes.base, codes.total));
  g_assert_true (all_sentinel (scales.base, scales.total));
  g_assert_true (all_sentinel (zps.base, zps.total));
  g_assert_cmpfloat (scale_out, ==, 123.0);
  g_assert_cmpint (zp_out, ==, -77);
  o_buf_clear (&codes);
  o_buf_clear (&scales);
  o_buf_clear (&zps);

  /* quantize_new */
  made = piq_quantizer_quantize_new (q, format, recipe, src, &error);
  g_assert_null (made);
  g_assert_error (error, PIQ_ERROR, (gint) code);
  g_clear_error (&error);

  /* requantize and requantize_raw into caller floats */
  o_buf_init (&floats, sizeof x, 16, 0xA5);
  fdst = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, n_dims, (guintptr) o_buf_data (&floats), sizeof x, 0,
                                     TRUE, &error);
  g_assert_no_error (error);
  g_assert_false (piq_quantizer_requantize (q, format, recipe, src, fdst, PIQ_REDUCE_SET, &error));
  g_assert_error (error, PIQ_ERROR, (gint) code);
  g_clear_error (&error);
  g_assert_false (piq_quantizer_requantize_raw (q, format, recipe, PIQ_DTYPE_F32, x, shape, n_dims,
                                                o_buf_data (&floats), sizeof x, PIQ_REDUCE_ADD, &error));
  g_assert_error (error, PIQ_ERROR, (gint) code);
  g_clear_error (&error);
  g_assert_true (all_sentinel (floats.base, floats.total));
  o_buf_clear (&floats);

  g_assert_cmpmem (x, sizeof x, x_copy, sizeof x_copy);
  g_assert_cmpuint (notified, ==, 0);
}

static void
test_option (gconstpointer data)
{
  const OptCase *c = data;
  const guint64 shape2[2] = { OPT_ROWS, OPT_COLS }, shape1[1] = { OPT_N };
  g_autoptr (PiqFormat) format = c->format ();
  g_autoptr (PiqRecipe) recipe = c->recipe != NULL ? c->recipe () : NULL;
  g_autoptr (PiqRecipe) before = recipe != NULL ? piq_recipe_copy (recipe) : NULL;

  g_assert_nonnull (format);
  check_rejected_calls (format, recipe, c->n_dims == 2 ? shape2 : shape1, c->n_dims, c->code);
  if (recipe != NULL)
    {
      g_assert_cmpint (piq_recipe_has_scale (recipe), ==, piq_recipe_has_scale (before));
      g_assert_cmpint (piq_recipe_has_zero_point (recipe), ==, piq_recipe_has_zero_point (before));
      g_assert_cmpint (piq_recipe_get_scale_rule (recipe), ==, piq_recipe_get_scale_rule (before));
      g_assert_cmpuint (piq_recipe_get_seed (recipe), ==, piq_recipe_get_seed (before));
    }
}

static PiqFormat *
block_format (PiqDtype dtype, guint block_size, PiqDtype scale_dtype)
{
  return piq_format_new_per_block (dtype, block_size, scale_dtype);
}

static PiqFormat *f_mxfp4 (void) { return piq_format_new_preset ("mxfp4", NULL); }
static PiqFormat *f_mxint8 (void) { return piq_format_new_preset ("mxint8", NULL); }
static PiqFormat *f_int8_block (void) { return piq_format_new_preset ("int8_block", NULL); }
static PiqFormat *f_nf4 (void) { return piq_format_new_preset ("nf4", NULL); }
static PiqFormat *f_fp8 (void) { return piq_format_new_preset ("fp8_e4m3", NULL); }
static PiqFormat *f_int8_sym (void) { return piq_format_new_symmetric (PIQ_DTYPE_INT8); }
static PiqFormat *f_uint8_affine (void) { return piq_format_new (PIQ_DTYPE_UINT8); }
static PiqFormat *f_int8_channel (void) { return piq_format_new_per_channel (PIQ_DTYPE_INT8, 0); }
static PiqFormat *f_uint4_block_affine (void) { return block_format (PIQ_DTYPE_UINT4, 16, PIQ_DTYPE_F32); }
static PiqFormat *f_fp8_hnf (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_FP8_E4M3, "high-nibble-first", TRUE, NULL); }
static PiqFormat *f_int8_block_hnf (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity", PIQ_GRANULARITY_BLOCK, "block-size", 16, "high-nibble-first", TRUE, NULL); }
static PiqFormat *f_int8_tensor_block_size (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "symmetric", TRUE, "block-size", 16, NULL); }
static PiqFormat *f_fp8_tensor_block_size (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_FP8_E4M3, "block-size", 32, NULL); }
static PiqFormat *f_int8_dq (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity", PIQ_GRANULARITY_BLOCK, "block-size", 16, "double-quant", TRUE, NULL); }
static PiqFormat *f_nf4_e8m0 (void) { return block_format (PIQ_DTYPE_NF4, 16, PIQ_DTYPE_E8M0); }
static PiqFormat *f_int8_channel_block_size (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity", PIQ_GRANULARITY_CHANNEL, "block-size", 4, NULL); }

static PiqRecipe *
r_rule (PiqScaleRule rule)
{
  PiqRecipe *r = piq_recipe_new ();
  piq_recipe_set_scale_rule (r, rule);
  return r;
}

static PiqRecipe *r_min_max (void) { return r_rule (PIQ_SCALE_RULE_MIN_MAX); }
static PiqRecipe *r_abs_max (void) { return r_rule (PIQ_SCALE_RULE_ABS_MAX); }
static PiqRecipe *r_mean_std (void) { return r_rule (PIQ_SCALE_RULE_MEAN_STD); }
static PiqRecipe *r_pow2_floor (void) { return r_rule (PIQ_SCALE_RULE_POW2_FLOOR); }
static PiqRecipe *r_affine (void) { return piq_recipe_new_affine (0.5, 3); }
static PiqRecipe *r_affine_zero (void) { return piq_recipe_new_affine (0.5, 0); }
static PiqRecipe *r_fixed (void) { return piq_recipe_new_fixed (0.5); }
static PiqRecipe *
r_fixed_abs_max (void)
{
  PiqRecipe *r = piq_recipe_new_fixed (0.5);
  piq_recipe_set_scale_rule (r, PIQ_SCALE_RULE_ABS_MAX);
  return r;
}
static PiqRecipe *
r_seed_nearest (void)
{
  PiqRecipe *r = piq_recipe_new ();
  piq_recipe_set_seed (r, 5);
  return r;
}
static PiqRecipe *
r_abs_max_no_zero (void)
{
  PiqRecipe *r = r_rule (PIQ_SCALE_RULE_ABS_MAX);
  piq_recipe_set_include_zero (r, FALSE);
  return r;
}
static PiqRecipe *
r_default_no_zero (void)
{
  PiqRecipe *r = piq_recipe_new ();
  piq_recipe_set_include_zero (r, FALSE);
  return r;
}

static const OptCase opt_cases[] = {
  /* a rule that does not apply to the format */
  { "min-max/e8m0-scales/mxfp4", PIQ_ERROR_UNSUPPORTED, f_mxfp4, r_min_max, 2 },
  { "min-max/e8m0-scales/mxint8", PIQ_ERROR_UNSUPPORTED, f_mxint8, r_min_max, 2 },
  { "abs-max/e8m0-scales/mxfp4", PIQ_ERROR_UNSUPPORTED, f_mxfp4, r_abs_max, 2 },
  { "min-max/symmetric/int8", PIQ_ERROR_UNSUPPORTED, f_int8_sym, r_min_max, 1 },
  { "min-max/code/nf4", PIQ_ERROR_UNSUPPORTED, f_nf4, r_min_max, 2 },
  { "min-max/code/fp8_e4m3", PIQ_ERROR_UNSUPPORTED, f_fp8, r_min_max, 1 },
  { "abs-max/affine/uint8", PIQ_ERROR_UNSUPPORTED, f_uint8_affine, r_abs_max, 1 },
  { "mean-std/per-block/int8_block", PIQ_ERROR_UNSUPPORTED, f_uint4_block_affine, r_mean_std, 2 },
  { "mean-std/code/fp8_e4m3", PIQ_ERROR_UNSUPPORTED, f_fp8, r_mean_std, 1 },
  { "pow2-floor/f32-scales/int8_block", PIQ_ERROR_UNSUPPORTED, f_int8_block, r_pow2_floor, 2 },
  /* a zero point where there is none */
  { "zero-point/symmetric/int8", PIQ_ERROR_INVALID_ZERO_POINT, f_int8_sym, r_affine, 1 },
  { "zero-point-0/symmetric/int8", PIQ_ERROR_INVALID_ZERO_POINT, f_int8_sym, r_affine_zero, 1 },
  { "zero-point/code/fp8_e4m3", PIQ_ERROR_INVALID_ZERO_POINT, f_fp8, r_affine, 1 },
  /* an affine per-tensor integer given a scale but no zero point */
  { "no-zero-point/affine/uint8", PIQ_ERROR_INVALID_ZERO_POINT, f_uint8_affine, r_fixed, 1 },
  /* a given scale where scales are derived per channel or block, or next to a rule */
  { "given-scale/per-block/int8_block", PIQ_ERROR_UNSUPPORTED, f_int8_block, r_fixed, 2 },
  { "given-scale/per-block/mxfp4", PIQ_ERROR_UNSUPPORTED, f_mxfp4, r_fixed, 2 },
  { "given-scale/per-channel/int8", PIQ_ERROR_UNSUPPORTED, f_int8_channel, r_fixed, 2 },
  { "given-scale/with-rule/int8-symmetric", PIQ_ERROR_UNSUPPORTED, f_int8_sym, r_fixed_abs_max, 1 },
  /* a seed with nearest rounding */
  { "seed/nearest/int8-symmetric", PIQ_ERROR_UNSUPPORTED, f_int8_sym, r_seed_nearest, 1 },
  { "seed/nearest/nf4", PIQ_ERROR_UNSUPPORTED, f_nf4, r_seed_nearest, 2 },
  /* include-zero FALSE without the min/max rule */
  { "include-zero/abs-max/int8-symmetric", PIQ_ERROR_UNSUPPORTED, f_int8_sym, r_abs_max_no_zero, 1 },
  { "include-zero/default/int8-symmetric", PIQ_ERROR_UNSUPPORTED, f_int8_sym, r_default_no_zero, 1 },
  { "include-zero/default/nf4", PIQ_ERROR_UNSUPPORTED, f_nf4, r_default_no_zero, 2 },
  /* format options that do not apply (NULL recipe: the default one) */
  { "high-nibble-first/fp8_e4m3", PIQ_ERROR_UNSUPPORTED, f_fp8_hnf, NULL, 1 },
  { "high-nibble-first/int8-per-block", PIQ_ERROR_UNSUPPORTED, f_int8_block_hnf, NULL, 2 },
  { "block-size/per-tensor/int8", PIQ_ERROR_UNSUPPORTED, f_int8_tensor_block_size, NULL, 1 },
  { "block-size/per-tensor/fp8_e4m3", PIQ_ERROR_UNSUPPORTED, f_fp8_tensor_block_size, NULL, 1 },
  { "block-size/per-channel/int8", PIQ_ERROR_UNSUPPORTED, f_int8_channel_block_size, NULL, 2 },
  { "double-quant/int8", PIQ_ERROR_UNSUPPORTED, f_int8_dq, NULL, 2 },
  { "scale-dtype/e8m0/nf4", PIQ_ERROR_UNSUPPORTED, f_nf4_e8m0, NULL, 2 },
};

/* CHANNEL on a tensor whose shape has no such axis. */
typedef struct {
  const char *name;
  int         axis;
  guint       n_dims;
} AxisCase;

static const AxisCase axis_cases[] = {
  { "axis-2/2-d", 2, 2 },
  { "axis-3/2-d", 3, 2 },
  { "axis--3/2-d", -3, 2 },
  { "axis-1/1-d", 1, 1 },
  { "axis--2/1-d", -2, 1 },
};

#define AXIS_ERROR PIQ_ERROR_SIZE

static void
test_channel_axis (gconstpointer data)
{
  const AxisCase *c = data;
  const guint64 shape2[2] = { OPT_ROWS, OPT_COLS }, shape1[1] = { OPT_N };
  g_autoptr (PiqFormat) f = piq_format_new_per_channel (PIQ_DTYPE_INT8, c->axis);
  g_autoptr (PiqFormat) s = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_UINT4, "granularity",
                                          PIQ_GRANULARITY_CHANNEL, "axis", c->axis, "symmetric", TRUE, NULL);
  const guint64 *shape = c->n_dims == 2 ? shape2 : shape1;
  g_autoptr (GError) error = NULL;
  gsize codes = 7, scales = 7, zps = 7;

  check_rejected_calls (f, NULL, shape, c->n_dims, AXIS_ERROR);
  check_rejected_calls (s, NULL, shape, c->n_dims, AXIS_ERROR);
  /* the format alone is fine (it fits other shapes); its sizes for this shape are not */
  g_assert_true (piq_format_validate (f, &error));
  g_assert_no_error (error);
  g_assert_false (piq_format_get_sizes (f, shape, c->n_dims, &codes, &scales, &zps, &error));
  g_assert_error (error, PIQ_ERROR, AXIS_ERROR);
  g_assert_cmpuint (codes, ==, 7);
  g_assert_cmpuint (scales, ==, 7);
  g_assert_cmpuint (zps, ==, 7);
}

/* A NaN, ±Inf, zero or negative scale set through g_object_set on a recipe
 * (the route GParamSpec validation used to swallow with a warning) makes
 * the next quantize, quantize_raw, quantize_new, requantize and
 * dequantize_raw fail with PIQ_ERROR_INVALID_SCALE, writing nothing. */
typedef struct {
  const char *name;
  double      value;
  gboolean    fp8;         /* fp8_e4m3 per tensor; else symmetric int8 */
} PropScaleCase;

static const PropScaleCase prop_scale_cases[] = {
  { "int8-symmetric/nan", NAN, FALSE },
  { "int8-symmetric/inf", INFINITY, FALSE },
  { "int8-symmetric/-inf", -INFINITY, FALSE },
  { "int8-symmetric/0", 0.0, FALSE },
  { "int8-symmetric/-0", -0.0, FALSE },
  { "int8-symmetric/-1", -1.0, FALSE },
  { "fp8_e4m3/nan", NAN, TRUE },
  { "fp8_e4m3/inf", INFINITY, TRUE },
  { "fp8_e4m3/-inf", -INFINITY, TRUE },
  { "fp8_e4m3/0", 0.0, TRUE },
  { "fp8_e4m3/-0.5", -0.5, TRUE },
};

static void
test_recipe_property_scale (gconstpointer data)
{
  const PropScaleCase *c = data;
  const guint64 shape[1] = { OPT_N };
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) format = c->fp8 ? piq_format_new_preset ("fp8_e4m3", NULL)
                                        : piq_format_new_symmetric (PIQ_DTYPE_INT8);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new ();
  g_autoptr (GError) error = NULL;
  guint8 codes[OPT_N];
  double got = 0;
  OBuf dbuf;

  g_object_set (recipe, "scale", c->value, NULL);
  g_object_get (recipe, "scale", &got, NULL);
  g_assert_true (piq_recipe_has_scale (recipe));
  g_assert_true (got == c->value || (isnan (got) && isnan (c->value)));
  check_rejected_calls (format, recipe, shape, 1, PIQ_ERROR_INVALID_SCALE);

  /* dequantize_raw with the property's scale */
  memset (codes, 0x11, sizeof codes);
  o_buf_init (&dbuf, OPT_N * 4, 16, 0xA5);
  g_assert_false (piq_quantizer_dequantize_raw (q, format, got, 0, codes, sizeof codes, shape, 1, NULL, 0, NULL, 0,
                                                PIQ_DTYPE_F32, o_buf_data (&dbuf), OPT_N * 4, PIQ_REDUCE_SET, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
  g_assert_true (all_sentinel (dbuf.base, dbuf.total));
  o_buf_clear (&dbuf);

  /* and the constructors' route */
  {
    g_autoptr (PiqRecipe) fixed = piq_recipe_new_fixed (c->value);
    check_rejected_calls (format, fixed, shape, 1, PIQ_ERROR_INVALID_SCALE);
  }
}

/* ---- programmer errors ---- */

typedef enum {
  NULL_QUANTIZE_SELF,
  NULL_QUANTIZE_SRC,
  NULL_QUANTIZE_DST,
  NULL_QUANTIZE_NEW_FORMAT,
  NULL_QUANTIZE_RAW_SRC,
  NULL_QUANTIZE_RAW_DST,
  NULL_QUANTIZE_RAW_FORMAT,
  NULL_DEQUANTIZE_SRC,
  NULL_DEQUANTIZE_DST,
  NULL_DEQUANTIZE_NEW_SRC,
  NULL_DEQUANTIZE_RAW_DST,
  NULL_DEQUANTIZE_RAW_FORMAT,
  NULL_REQUANTIZE_FORMAT,
  NULL_REQUANTIZE_RAW_SRC,
  NULL_COMPUTE_RECIPE,
  NULL_COMPUTE_FORMAT,
  NULL_COMPUTE_SRC,
  NULL_COMPUTE_RAW_SRC,
  NULL_TENSOR_FROM_DATA,
  NULL_TENSOR_GET_DATA,
  NULL_TENSOR_FROM_BYTES,
  NULL_TENSOR_NEW_QUANTIZED,
  NULL_RECIPE_GET_SCALE,
  NULL_RECIPE_COPY,
  NULL_FORMAT_GET_DTYPE,
  N_NULL_CASES
} NullCase;

static const char *null_names[] = {
  [NULL_QUANTIZE_SELF] = "quantize/self",
  [NULL_QUANTIZE_SRC] = "quantize/src",
  [NULL_QUANTIZE_DST] = "quantize/dst",
  [NULL_QUANTIZE_NEW_FORMAT] = "quantize-new/format",
  [NULL_QUANTIZE_RAW_SRC] = "quantize-raw/src",
  [NULL_QUANTIZE_RAW_DST] = "quantize-raw/dst",
  [NULL_QUANTIZE_RAW_FORMAT] = "quantize-raw/format",
  [NULL_DEQUANTIZE_SRC] = "dequantize/src",
  [NULL_DEQUANTIZE_DST] = "dequantize/dst",
  [NULL_DEQUANTIZE_NEW_SRC] = "dequantize-new/src",
  [NULL_DEQUANTIZE_RAW_DST] = "dequantize-raw/dst",
  [NULL_DEQUANTIZE_RAW_FORMAT] = "dequantize-raw/format",
  [NULL_REQUANTIZE_FORMAT] = "requantize/format",
  [NULL_REQUANTIZE_RAW_SRC] = "requantize-raw/src",
  [NULL_COMPUTE_RECIPE] = "compute-params/recipe",
  [NULL_COMPUTE_FORMAT] = "compute-params/format",
  [NULL_COMPUTE_SRC] = "compute-params/src",
  [NULL_COMPUTE_RAW_SRC] = "compute-params-raw/src",
  [NULL_TENSOR_FROM_DATA] = "tensor-new-from-data/data",
  [NULL_TENSOR_GET_DATA] = "tensor-get-data/self",
  [NULL_TENSOR_FROM_BYTES] = "tensor-new-from-bytes/bytes",
  [NULL_TENSOR_NEW_QUANTIZED] = "tensor-new-quantized/format",
  [NULL_RECIPE_GET_SCALE] = "recipe-get-scale/self",
  [NULL_RECIPE_COPY] = "recipe-copy/self",
  [NULL_FORMAT_GET_DTYPE] = "format-get-dtype/self",
};

/* In the subprocess: the call must emit a critical from the library's log
 * domain and return FALSE/NULL/0 without crashing. */
static void
null_call (NullCase which)
{
  static const guint64 shape[1] = { 4 };
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) fmt = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr (PiqRecipe) r = piq_recipe_new_affine (0.5, 0);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) f = piq_tensor_new (PIQ_DTYPE_F32, 4, &error);
  g_autoptr (PiqTensor) u = piq_tensor_new_quantized (fmt, shape, 1, &error);
  guint8 buf[64] = { 0 };
  gboolean ok = TRUE;
  gpointer ptr = (gpointer) 1;
  double d = 1;
  PiqDtype dt = PIQ_DTYPE_INT4;

  g_assert_no_error (error);
  g_test_expect_message ("Piquant", G_LOG_LEVEL_CRITICAL, "*");
  switch (which)
    {
    case NULL_QUANTIZE_SELF: ok = piq_quantizer_quantize (NULL, r, f, u, &error); break;
    case NULL_QUANTIZE_SRC: ok = piq_quantizer_quantize (q, r, NULL, u, &error); break;
    case NULL_QUANTIZE_DST: ok = piq_quantizer_quantize (q, r, f, NULL, &error); break;
    case NULL_QUANTIZE_NEW_FORMAT: ptr = piq_quantizer_quantize_new (q, NULL, r, f, &error); break;
    case NULL_QUANTIZE_RAW_SRC:
      ok = piq_quantizer_quantize_raw (q, fmt, r, PIQ_DTYPE_F32, NULL, shape, 1, buf, 4, NULL, 0, NULL, 0, NULL, NULL, &error);
      break;
    case NULL_QUANTIZE_RAW_DST:
      ok = piq_quantizer_quantize_raw (q, fmt, r, PIQ_DTYPE_F32, buf, shape, 1, NULL, 4, NULL, 0, NULL, 0, NULL, NULL, &error);
      break;
    case NULL_QUANTIZE_RAW_FORMAT:
      ok = piq_quantizer_quantize_raw (q, NULL, r, PIQ_DTYPE_F32, buf, shape, 1, buf + 32, 4, NULL, 0, NULL, 0, NULL, NULL, &error);
      break;
    case NULL_DEQUANTIZE_SRC: ok = piq_quantizer_dequantize (q, NULL, f, PIQ_REDUCE_SET, &error); break;
    case NULL_DEQUANTIZE_DST: ok = piq_quantizer_dequantize (q, u, NULL, PIQ_REDUCE_SET, &error); break;
    case NULL_DEQUANTIZE_NEW_SRC: ptr = piq_quantizer_dequantize_new (q, NULL, PIQ_DTYPE_F32, &error); break;
    case NULL_DEQUANTIZE_RAW_DST:
      ok = piq_quantizer_dequantize_raw (q, fmt, 0.5, 0, buf, 4, shape, 1, NULL, 0, NULL, 0, PIQ_DTYPE_F32, NULL, 16,
                                         PIQ_REDUCE_SET, &error);
      break;
    case NULL_DEQUANTIZE_RAW_FORMAT:
      ok = piq_quantizer_dequantize_raw (q, NULL, 0.5, 0, buf, 4, shape, 1, NULL, 0, NULL, 0, PIQ_DTYPE_F32, buf + 16, 16,
                                         PIQ_REDUCE_SET, &error);
      break;
    case NULL_REQUANTIZE_FORMAT: ok = piq_quantizer_requantize (q, NULL, r, f, f, PIQ_REDUCE_SET, &error); break;
    case NULL_REQUANTIZE_RAW_SRC:
      ok = piq_quantizer_requantize_raw (q, fmt, r, PIQ_DTYPE_F32, NULL, shape, 1, buf, 16, PIQ_REDUCE_SET, &error);
      break;
    case NULL_COMPUTE_RECIPE: ok = piq_quantizer_compute_params (q, fmt, NULL, f, &error); break;
    case NULL_COMPUTE_FORMAT: ok = piq_quantizer_compute_params (q, NULL, r, f, &error); break;
    case NULL_COMPUTE_SRC: ok = piq_quantizer_compute_params (q, fmt, r, NULL, &error); break;
    case NULL_COMPUTE_RAW_SRC: ok = piq_quantizer_compute_params_raw (q, fmt, r, PIQ_DTYPE_F32, NULL, 4, &error); break;
    case NULL_TENSOR_FROM_DATA: ptr = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, NULL, 16, &error); break;
    case NULL_TENSOR_GET_DATA: ptr = (gpointer) piq_tensor_get_data (NULL, NULL); break;
    case NULL_TENSOR_FROM_BYTES: ptr = piq_tensor_new_from_bytes (PIQ_DTYPE_F32, 4, NULL, &error); break;
    case NULL_TENSOR_NEW_QUANTIZED: ptr = piq_tensor_new_quantized (NULL, shape, 1, &error); break;
    case NULL_RECIPE_GET_SCALE: d = piq_recipe_get_scale (NULL); break;
    case NULL_RECIPE_COPY: ptr = piq_recipe_copy (NULL); break;
    case NULL_FORMAT_GET_DTYPE: dt = piq_format_get_dtype (NULL); break;
    default: g_assert_not_reached ();
    }
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  if (which == NULL_RECIPE_GET_SCALE)
    g_assert_cmpfloat (d, ==, 0);
  else if (which == NULL_FORMAT_GET_DTYPE)
    g_assert_cmpint (dt, !=, PIQ_DTYPE_INT4);
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

/* A NULL recipe is no programmer error any more: it is the default recipe
 * (the format's rule, nearest rounding), for quantize, quantize_raw,
 * quantize_new, requantize and requantize_raw. The old
 * /errors/programmer/null/quantize/params and .../requantize/params. */
static void
test_null_recipe_accepted (void)
{
  const float x[4] = { -1, 0.25f, 0.5f, 2 };
  const guint64 shape[1] = { 4 };
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) fmt = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) f = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, (const guint8 *) x, sizeof x, &error);
  g_autoptr (PiqTensor) u = piq_tensor_new_quantized (fmt, shape, 1, &error);
  g_autoptr (PiqTensor) made = NULL;
  g_autoptr (PiqTensor) y = piq_tensor_new (PIQ_DTYPE_F32, 4, &error);
  guint8 codes[4];
  float floats[4];
  double scale = 0;
  gint64 zp = -1;

  g_assert_no_error (error);
  g_assert_true (piq_quantizer_quantize (q, NULL, f, u, &error));
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_quantize_raw (q, fmt, NULL, PIQ_DTYPE_F32, x, shape, 1, codes, sizeof codes,
                                             NULL, 0, NULL, 0, &scale, &zp, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (scale, ==, piq_tensor_get_scale (u));
  g_assert_cmpint (zp, ==, piq_tensor_get_zero_point (u));
  made = piq_quantizer_quantize_new (q, fmt, NULL, f, &error);
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_requantize (q, fmt, NULL, f, y, PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_requantize_raw (q, fmt, NULL, PIQ_DTYPE_F32, x, shape, 1, floats, sizeof floats,
                                               PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
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
  add_no_format ();
  add_compute_params ();
  g_test_add_data_func ("/errors/non-finite/compute-params/f32/nan", "nan", test_non_finite);
  g_test_add_data_func ("/errors/non-finite/compute-params/f32/inf", "inf", test_non_finite);
  g_test_add_data_func ("/errors/non-finite/compute-params/f32/-inf", "-inf", test_non_finite);
  g_test_add_func ("/errors/read-only/tensor-fill-and-set-data", test_read_only_tensor_writers);
  g_test_add_func ("/errors/params-validate", test_validate);
  g_test_add_func ("/errors/tensor/dtype-is-the-format's", test_tensor_dtype_is_format);

  for (gsize i = 0; i < G_N_ELEMENTS (opt_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/errors/%s/option/%s", error_nick (opt_cases[i].code), opt_cases[i].name);
      g_test_add_data_func (path, &opt_cases[i], test_option);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (axis_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/errors/%s/per-channel/%s", error_nick (AXIS_ERROR), axis_cases[i].name);
      g_test_add_data_func (path, &axis_cases[i], test_channel_axis);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (prop_scale_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/errors/invalid-scale/recipe-property/%s", prop_scale_cases[i].name);
      g_test_add_data_func (path, &prop_scale_cases[i], test_recipe_property_scale);
    }

  for (int i = 0; i < N_NULL_CASES; i++)
    {
      g_autofree char *path = g_strdup_printf ("/errors/programmer/null/%s", null_names[i]);
      g_test_add_data_func (path, GINT_TO_POINTER (i), test_null);
    }
  g_test_add_func ("/errors/programmer/null-recipe-is-the-default", test_null_recipe_accepted);

  ret = g_test_run ();
  g_ptr_array_unref (all_cases);
  return ret;
}

/* test-quantize.c: quantize, dequantize and requantize, byte-exact against
 * the independent oracle of test-oracle.h (docs/numerics.md)
 *
 * Every float source × every integer type × both rounding modes × two scales
 * (a power of two, where ties are exact, and 0.7 times it) × lengths around
 * every vector width × aligned and unaligned buffers, run on every SIMD level
 * this CPU supports (through the quantizer's max-simd-level cap), in tensor
 * and raw form. Then properties that hold whatever the oracle says (round
 * trip within half a step, stochastic results are floor or ceil, unbiased,
 * seeded), and hand-written vectors (torch semantics, exact 64-bit clamping,
 * bf16/f16 rounding of dequantized values).
 *
 * The cases use an affine per-tensor PiqFormat and a PiqRecipe that gives the
 * scale and zero point (piq_recipe_new_affine) with the case's rounding mode
 * and seed; quantized destinations are made by piq_tensor_new_quantized and
 * own their format, scale, zero point and seed.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test-oracle.h"

#define BIG_LEN ((G_GUINT64_CONSTANT (1) << 20) + 3)

static const guint64 lengths[] = {
  0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 1023, BIG_LEN,
};

/* memcmp () for buffers that may be NULL when empty (an empty tensor has no
 * data pointer; memcmp (NULL, p, 0) is undefined behaviour). */
static gboolean
mem_equal (gconstpointer a, gconstpointer b, gsize size)
{
  return size == 0 || memcmp (a, b, size) == 0;
}

/* ---- the kernel levels this CPU runs ---- */

typedef struct {
  PiqQuantizer *q;
  PiqSimdLevel  cap;
  PiqSimdLevel  level;
  const char   *name;
} Level;

static Level levels[16];
static guint n_levels;
static Level all_caps[16];
static guint n_caps;

static const char *
enum_nick (GType type, int value)
{
  GEnumClass *klass = g_type_class_ref (type);
  GEnumValue *v = g_enum_get_value (klass, value);
  const char *nick = v != NULL ? v->value_nick : "unknown";

  /* the nick lives in the static table of the registered type */
  g_type_class_unref (klass);
  return nick;
}

static void
setup_levels (void)
{
  static const PiqSimdLevel caps[] = {
    PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2, PIQ_SIMD_LEVEL_AVX2,
    PIQ_SIMD_LEVEL_AVX512, PIQ_SIMD_LEVEL_AVX512_BF16, PIQ_SIMD_LEVEL_AVX512_FP16,
    PIQ_SIMD_LEVEL_AVX512_VNNI, PIQ_SIMD_LEVEL_AMX,
  };

  G_STATIC_ASSERT (G_N_ELEMENTS (caps) <= G_N_ELEMENTS (all_caps));
  for (gsize k = 0; k < G_N_ELEMENTS (caps); k++)
    {
      PiqQuantizer *q = piq_quantizer_new ();
      PiqSimdLevel got;
      gboolean seen = FALSE;

      piq_quantizer_set_max_simd_level (q, caps[k]);
      got = piq_quantizer_get_simd_level (q);
      all_caps[n_caps].q = g_object_ref (q);
      all_caps[n_caps].cap = caps[k];
      all_caps[n_caps].level = got;
      all_caps[n_caps].name = enum_nick (PIQ_TYPE_SIMD_LEVEL, got);
      n_caps++;

      for (guint j = 0; j < n_levels; j++)
        seen |= levels[j].level == got;
      if (!seen)
        {
          levels[n_levels].q = q;
          levels[n_levels].cap = caps[k];
          levels[n_levels].level = got;
          levels[n_levels].name = enum_nick (PIQ_TYPE_SIMD_LEVEL, got);
          n_levels++;
        }
      else
        g_object_unref (q);
    }
}

/* The cap is an upper bound, and without a cap the quantizer picks the best
 * level, which a cap at that level keeps. */
static void
test_simd_levels (void)
{
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  PiqSimdLevel best = piq_quantizer_get_simd_level (q);

  for (guint k = 0; k < n_caps; k++)
    {
      g_test_message ("cap %s -> %s", enum_nick (PIQ_TYPE_SIMD_LEVEL, all_caps[k].cap), all_caps[k].name);
      g_assert_cmpint (all_caps[k].level, <=, all_caps[k].cap);
      g_assert_cmpint (all_caps[k].level, <=, best);
      if (all_caps[k].cap == best)
        g_assert_cmpint (all_caps[k].level, ==, best);
      g_assert_cmpint (piq_quantizer_get_max_simd_level (all_caps[k].q), ==, all_caps[k].cap);
    }
  g_assert_cmpint (levels[0].level, ==, PIQ_SIMD_LEVEL_SCALAR);
}

/* ---- cases ---- */

typedef struct {
  PiqDtype     fdtype;     /* quantize source, dequantize destination, requantize both */
  PiqDtype     qdtype;
  PiqRoundMode mode;
  PiqReduceOp  op;         /* dequantize only */
  guint        scale_kind; /* 0: a power of two, 1: 0.7 times it */
  guint64      n;
  gsize        offset;     /* 0: library-owned aligned buffers; else misaligned by this */
} Case;

static GPtrArray *all_cases;

static const char *
mode_name (PiqRoundMode mode)
{
  return mode == PIQ_ROUND_NEAREST ? "nearest" : "stochastic";
}

static const char *
op_name (PiqReduceOp op)
{
  return op == PIQ_REDUCE_SET ? "set" : "add";
}

/* A zero point inside the range but away from its middle and from 0, so
 * that it takes part in every clamp. */
static gint64
case_zero_point (PiqDtype q)
{
  switch (q)
    {
    case PIQ_DTYPE_UINT2:  return 1;
    case PIQ_DTYPE_INT2:   return -1;
    case PIQ_DTYPE_UINT4:  return 7;
    case PIQ_DTYPE_INT4:   return -2;
    case PIQ_DTYPE_UINT8:  return 100;
    case PIQ_DTYPE_INT8:   return 5;
    case PIQ_DTYPE_UINT16: return 30000;
    case PIQ_DTYPE_INT16:  return -300;
    case PIQ_DTYPE_UINT32: return 2000000000;
    case PIQ_DTYPE_INT32:  return -70000;
    case PIQ_DTYPE_UINT64: return G_GINT64_CONSTANT (0x4000000000000123);
    case PIQ_DTYPE_INT64:  return -5;
    default: g_assert_not_reached ();
    }
  return 0;
}

/* About 8 / 2^bits: unit-variance data spans the integer range. */
static double
case_scale (PiqDtype q, guint kind)
{
  double p = ldexp (1.0, 3 - (int) o_dtype_bits (q));
  return kind == 0 ? p : 0.7 * p;
}

/* Short lengths run on every level; the long one, which is about threads and
 * chunking more than about vector tails, on the best level only, and only in
 * tensor form (test-threads covers the rest). */
static guint
first_level (const Case *c)
{
  return c->n == BIG_LEN ? n_levels - 1 : 0;
}

static gboolean
with_raw (const Case *c)
{
  return c->n != BIG_LEN;
}

static guint64
case_seed (const Case *c, guint salt)
{
  guint64 st = ((guint64) c->fdtype << 56) ^ ((guint64) c->qdtype << 48) ^ ((guint64) c->mode << 44)
               ^ ((guint64) c->op << 42) ^ ((guint64) c->scale_kind << 40) ^ ((guint64) c->offset << 36)
               ^ ((guint64) salt << 33) ^ c->n;
  guint64 s = o_splitmix64 (&st);
  return s != 0 ? s : 1;
}

/* Misalignment of the source and destination of an unaligned case. */
static gsize
src_offset (const Case *c)
{
  return c->offset;
}

static gsize
dst_offset (const Case *c)
{
  return c->offset == 0 ? 0 : 1 + (c->offset + 1) % 3;
}

static Case *
case_new (PiqDtype fdtype, PiqDtype qdtype, PiqRoundMode mode, PiqReduceOp op,
          guint scale_kind, guint64 n, gsize offset)
{
  Case *c = g_new0 (Case, 1);
  c->fdtype = fdtype;
  c->qdtype = qdtype;
  c->mode = mode;
  c->op = op;
  c->scale_kind = scale_kind;
  c->n = n;
  c->offset = offset;
  g_ptr_array_add (all_cases, c);
  return c;
}

static const char *
align_name (const Case *c)
{
  return c->offset == 0 ? "aligned" : "unaligned";
}

/* ---- tensors over test buffers ---- */

/* An input float tensor holding a copy of `data`: library-owned (aligned)
 * or a read-only view of a misaligned caller buffer. */
static PiqTensor *
tensor_in (PiqDtype dtype, guint64 n, const guint8 *data, gsize offset, OBuf *buf)
{
  gsize size = o_dtype_nbytes (dtype, n);
  guint64 shape[1] = { n };
  GError *error = NULL;
  PiqTensor *t;

  buf->base = NULL;
  if (offset == 0)
    t = piq_tensor_new_from_data (dtype, n, data, size, &error);
  else
    {
      o_buf_init (buf, size, offset, 0x5A);
      if (size > 0)
        memcpy (o_buf_data (buf), data, size);
      t = piq_tensor_new_for_address (dtype, shape, 1, (guintptr) o_buf_data (buf), size, 0, FALSE, &error);
    }
  g_assert_no_error (error);
  g_assert_nonnull (t);
  return t;
}

/* An input quantized tensor holding `codes` with a per-tensor scale and zero
 * point: over a copy (aligned), or over a misaligned caller buffer. */
static PiqTensor *
quantized_in (PiqFormat *format, guint64 n, const guint8 *codes, double scale, gint64 zp,
              gsize offset, OBuf *buf)
{
  gsize size = o_dtype_nbytes (piq_format_get_dtype (format), n);
  guint64 shape[1] = { n };
  g_autoptr (GBytes) bytes = NULL;
  GError *error = NULL;
  PiqTensor *t;

  buf->base = NULL;
  if (offset == 0)
    bytes = g_bytes_new (codes, size);
  else
    {
      o_buf_init (buf, size, offset, 0x5A);
      if (size > 0)
        memcpy (o_buf_data (buf), codes, size);
      bytes = g_bytes_new_static (o_buf_data (buf), size);
    }
  t = piq_tensor_new_quantized_from_bytes (format, shape, 1, bytes, NULL, NULL, scale, zp, &error);
  g_assert_no_error (error);
  g_assert_nonnull (t);
  return t;
}

/* A writable output tensor whose bytes start as `init` (or 0xA5 sentinels). */
static PiqTensor *
tensor_out (PiqDtype dtype, guint64 n, const guint8 *init, gsize offset, OBuf *buf)
{
  gsize size = o_dtype_nbytes (dtype, n);
  GError *error = NULL;
  PiqTensor *t;

  buf->base = NULL;
  if (offset == 0)
    {
      gsize got = 0;
      guint8 *data;
      t = piq_tensor_new (dtype, n, &error);
      g_assert_no_error (error);
      data = piq_tensor_get_writable_data (t, &got);
      g_assert_cmpuint (got, ==, size);
      if (size > 0)
        {
          g_assert_nonnull (data);
          g_assert_cmpuint ((guintptr) data % 64, ==, 0);
          if (init != NULL)
            memcpy (data, init, size);
          else
            memset (data, 0xA5, size);
        }
    }
  else
    {
      guint64 shape[1] = { n };
      o_buf_init (buf, size, offset, 0xA5);
      if (init != NULL && size > 0)
        memcpy (o_buf_data (buf), init, size);
      t = piq_tensor_new_for_address (dtype, shape, 1, (guintptr) o_buf_data (buf), size, 0, TRUE, &error);
    }
  g_assert_no_error (error);
  g_assert_nonnull (t);
  return t;
}

/* A quantized destination for `format` whose codes start as 0xA5 sentinels
 * (quantize must overwrite every byte, the unused bits included). */
static PiqTensor *
quantized_out (PiqFormat *format, guint64 n)
{
  gsize size = o_dtype_nbytes (piq_format_get_dtype (format), n), got = 0;
  guint64 shape[1] = { n };
  GError *error = NULL;
  PiqTensor *t = piq_tensor_new_quantized (format, shape, 1, &error);
  guint8 *data;

  g_assert_no_error (error);
  g_assert_nonnull (t);
  g_assert_true (piq_format_equal (piq_tensor_get_format (t), format));
  data = piq_tensor_get_writable_data (t, &got);
  g_assert_cmpuint (got, ==, size);
  if (size > 0)
    {
      g_assert_nonnull (data);
      memset (data, 0xA5, size);
    }
  return t;
}

static const guint8 *
tensor_bytes (PiqTensor *t, gsize expected_size)
{
  gsize size = 0;
  const guint8 *data = piq_tensor_get_data (t, &size);
  g_assert_cmpuint (size, ==, expected_size);
  return data;
}

static void
tensor_free (PiqTensor *t, OBuf *buf)
{
  g_object_unref (t);
  if (buf->base != NULL)
    o_buf_clear (buf);
}

/* Old PiqParams (dtype, scale, zero point, round mode, seed) = an affine
 * per-tensor format + a recipe that gives the scale and zero point. */
static PiqFormat *
case_format (const Case *c)
{
  return piq_format_new (c->qdtype);
}

static PiqRecipe *
case_recipe (const Case *c, double scale, gint64 zp, guint64 seed)
{
  PiqRecipe *recipe = piq_recipe_new_affine (scale, zp);
  piq_recipe_set_round_mode (recipe, c->mode);
  piq_recipe_set_seed (recipe, seed);
  return recipe;
}

/* ---- reporting ---- */

static char *
describe_float (PiqDtype dtype, const guint8 *buf, guint64 i)
{
  return g_strdup_printf ("%.17g (%a, bits 0x%" G_GINT64_MODIFIER "x)",
                          o_read_float (dtype, buf, i), o_read_float (dtype, buf, i),
                          o_read_float_bits (dtype, buf, i));
}

/* Compares packed integer buffers; on a difference marks the test failed
 * with the element, its input and both values, and returns FALSE. */
static gboolean
check_packed (const char *what, const Case *c, const char *level,
              const guint8 *src, const guint8 *expected, const guint8 *got)
{
  gsize size = o_dtype_nbytes (c->qdtype, c->n);

  if (mem_equal (expected, got, size))
    return TRUE;
  for (guint64 i = 0; i < c->n; i++)
    {
      OInt e = o_unpack (c->qdtype, expected, i), g = o_unpack (c->qdtype, got, i);
      if (e != g)
        {
          char es[48], gs[48];
          g_autofree char *x = describe_float (c->fdtype, src, i);
          g_test_fail_printf ("%s [%s]: element %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                              ", x = %s: expected q = %s, got %s",
                              what, level, i, c->n, x, o_int_str (e, es), o_int_str (g, gs));
          return FALSE;
        }
    }
  g_test_fail_printf ("%s [%s]: unused bits of the last byte are 0x%02x, expected 0x%02x",
                      what, level, got[size - 1], expected[size - 1]);
  return FALSE;
}

static gboolean
check_floats (const char *what, PiqDtype dtype, guint64 n, const char *level,
              const guint8 *expected, const guint8 *got, const guint8 *prior,
              PiqDtype in_dtype, const guint8 *in)
{
  gint64 bad = o_compare_floats (dtype, expected, got, n);

  if (bad >= 0)
    {
      g_autofree char *e = describe_float (dtype, expected, (guint64) bad);
      g_autofree char *g = describe_float (dtype, got, (guint64) bad);
      g_autofree char *p = prior != NULL ? describe_float (dtype, prior, (guint64) bad) : g_strdup ("-");
      g_autofree char *x = NULL;
      char qs[48];

      if (o_dtype_is_float (in_dtype))
        x = describe_float (in_dtype, in, (guint64) bad);
      else
        x = g_strdup (o_int_str (o_unpack (in_dtype, in, (guint64) bad), qs));
      g_test_fail_printf ("%s [%s]: element %" G_GINT64_FORMAT " of %" G_GUINT64_FORMAT
                          ", input %s, prior dst %s: expected %s, got %s",
                          what, level, bad, n, x, p, e, g);
      return FALSE;
    }
  return TRUE;
}

static gboolean
check_guards (const char *what, const char *level, const OBuf *buf)
{
  if (buf->base != NULL && !o_buf_guards_intact (buf))
    {
      g_test_fail_printf ("%s [%s]: wrote outside its %" G_GSIZE_FORMAT "-byte destination",
                          what, level, buf->size);
      return FALSE;
    }
  return TRUE;
}

/* ---- quantize ---- */

/* Properties that hold whatever the oracle computes:
 * nearest: |x − dq(q(x))| <= scale/2 + slack for x whose x/scale + zp lies
 *   inside [qmin, qmax]. With unit roundoff u (2^-24 for binary32 compute,
 *   2^-53 for binary64), inv = (1/s)(1+d1), v = x·inv(1+d2), |r − v| <= 1/2,
 *   (r as float)(1+d3), times s (1+d4), and s = scale (1+d0) for binary32:
 *   |x − dq| <= |x|(2u+u²) + (scale/2)(1+u) + |r·s|(2u+u²); with |r·s| <=
 *   |x| + s this is below scale/2 + 8u(|x| + scale), plus twice the smallest
 *   subnormal for results that are subnormal.
 * stochastic: q is clamp(floor(v) + zp) or clamp(ceil(v) + zp) with v = x·inv
 *   in the compute precision. */
static gboolean
check_quantize_properties (const Case *c, const OQuant *o, const guint8 *src,
                           const guint8 *packed, PiqTensor *qt)
{
  gboolean f64 = c->fdtype == PIQ_DTYPE_F64;
  double u = f64 ? 0x1p-53 : 0x1p-24;
  double tiny = f64 ? 0x1p-1073 : 0x1p-148;
  double range = (double) (o->qmax - o->qmin);
  double margin = MAX (1.0, range * 0x1p-50);
  g_autoptr (PiqTensor) dq = NULL;
  g_autoptr (GError) error = NULL;
  const guint8 *dqb;

  if (c->mode == PIQ_ROUND_NEAREST)
    {
      dq = piq_quantizer_dequantize_new (levels[n_levels - 1].q, qt, f64 ? PIQ_DTYPE_F64 : PIQ_DTYPE_F32, &error);
      g_assert_no_error (error);
      g_assert_nonnull (dq);
      dqb = tensor_bytes (dq, o_dtype_nbytes (f64 ? PIQ_DTYPE_F64 : PIQ_DTYPE_F32, c->n));

      for (guint64 i = 0; i < c->n; i++)
        {
          double x = o_read_float (c->fdtype, src, i);
          double t, y, bound;
          if (!isfinite (x))
            continue;
          t = x / o->scale + (double) o->zp;
          if (!(t >= (double) o->qmin + margin && t <= (double) o->qmax - margin))
            continue;
          y = o_read_float (f64 ? PIQ_DTYPE_F64 : PIQ_DTYPE_F32, dqb, i);
          bound = o->scale / 2 + 8 * u * (fabs (x) + o->scale) + tiny;
          if (!(fabs (x - y) <= bound))
            {
              g_test_fail_printf ("round trip: element %" G_GUINT64_FORMAT ": x = %.17g, dq(q(x)) = %.17g, "
                                  "error %g > %g (scale %g)", i, x, y, fabs (x - y), bound, o->scale);
              return FALSE;
            }
        }
    }
  else
    {
      for (guint64 i = 0; i < c->n; i++)
        {
          double x = o_read_float (c->fdtype, src, i);
          OInt q = o_unpack (c->qdtype, packed, i), lo, hi;
          if (isnan (x))
            lo = hi = o->zp;
          else if (isinf (x))
            lo = hi = x > 0 ? o->qmax : o->qmin;
          else
            {
              double v = o_scaled (o, c->fdtype, x);
              lo = o_clamp_add (o, floor (v));
              hi = o_clamp_add (o, ceil (v));
            }
          if (q != lo && q != hi)
            {
              char qs[48], ls[48], hs[48];
              g_test_fail_printf ("stochastic: element %" G_GUINT64_FORMAT ": x = %.17g gives %s, "
                                  "neither floor (%s) nor ceil (%s)", i, x,
                                  o_int_str (q, qs), o_int_str (lo, ls), o_int_str (hi, hs));
              return FALSE;
            }
        }
    }
  return TRUE;
}

/* A library call that should have succeeded; marks the case failed if not. */
static gboolean
succeeded (const char *what, const char *level, gboolean ok, GError *error)
{
  if (ok && error == NULL)
    return TRUE;
  g_test_fail_printf ("%s [%s] failed: %s", what, level,
                      error != NULL ? error->message : "returned FALSE without an error");
  return FALSE;
}

/* The quantized output owns what its bytes mean: its format (the affine
 * per-tensor format of the case), the scale and zero point used and, for
 * stochastic rounding, the seed. (The rounding mode is part of the recipe,
 * not of the bytes' meaning, and is no longer recorded.) */
static gboolean
check_owned_meaning (PiqTensor *dt, const char *level, PiqFormat *format, double scale, gint64 zp,
                     PiqRoundMode mode, guint64 seed)
{
  PiqFormat *f = piq_tensor_get_format (dt);

  if (f == NULL)
    {
      g_test_fail_printf ("quantize [%s]: the output has no format", level);
      return FALSE;
    }
  if (!piq_format_equal (f, format) || piq_format_get_dtype (f) != piq_format_get_dtype (format) ||
      piq_format_get_granularity (f) != PIQ_GRANULARITY_TENSOR || piq_format_get_symmetric (f) ||
      piq_tensor_get_dtype (dt) != piq_format_get_dtype (format) ||
      piq_tensor_get_scale (dt) != scale || piq_tensor_get_zero_point (dt) != zp ||
      (mode == PIQ_ROUND_STOCHASTIC && piq_tensor_get_seed (dt) != seed))
    {
      g_test_fail_printf ("quantize [%s]: the output holds %s scale %g zp %" G_GINT64_FORMAT
                          " seed %" G_GUINT64_FORMAT ", expected %s %g %" G_GINT64_FORMAT
                          " mode %d seed %" G_GUINT64_FORMAT, level,
                          o_dtype_name (piq_format_get_dtype (f)), piq_tensor_get_scale (dt),
                          piq_tensor_get_zero_point (dt), piq_tensor_get_seed (dt),
                          o_dtype_name (piq_format_get_dtype (format)), scale, zp, mode, seed);
      return FALSE;
    }
  return TRUE;
}

static void
test_quantize (gconstpointer data)
{
  const Case *c = data;
  double scale = case_scale (c->qdtype, c->scale_kind);
  gint64 zp = case_zero_point (c->qdtype);
  guint64 seed = c->mode == PIQ_ROUND_STOCHASTIC ? case_seed (c, 1) : 0;
  gsize src_size = o_dtype_nbytes (c->fdtype, c->n);
  gsize q_size = o_dtype_nbytes (c->qdtype, c->n);
  g_autofree guint8 *src = g_malloc (src_size + 1);
  g_autofree guint8 *expected = g_malloc0 (q_size + 1);
  g_autofree guint8 *raw = g_malloc (q_size + 1);
  g_autoptr (PiqFormat) format = case_format (c);
  g_autoptr (PiqRecipe) recipe = case_recipe (c, scale, zp, seed);
  guint64 shape[1] = { c->n };
  OQuant o;

  o_quant_init (&o, c->qdtype, scale, zp, c->mode, seed);
  o_gen_source (c->fdtype, src, c->n, case_seed (c, 2), &o);
  for (guint64 i = 0; i < c->n; i++)
    o_pack (c->qdtype, expected, i, o_quantize_elem (&o, c->fdtype, src, i));

  for (guint k = first_level (c); k < n_levels; k++)
    {
      GError *error = NULL;
      OBuf sbuf, dbuf;
      PiqTensor *st = tensor_in (c->fdtype, c->n, src, src_offset (c), &sbuf);
      PiqTensor *dt = quantized_out (format, c->n);
      double scale_out = 0;
      gint64 zp_out = 0;
      guint8 *rdst;
      gboolean ok;

      ok = piq_quantizer_quantize (levels[k].q, recipe, st, dt, &error);
      ok = succeeded ("quantize", levels[k].name, ok, error) &&
           check_packed ("quantize", c, levels[k].name, src, expected, tensor_bytes (dt, q_size)) &&
           check_owned_meaning (dt, levels[k].name, format, scale, zp, c->mode, seed);
      if (ok && !mem_equal (tensor_bytes (st, src_size), src, src_size))
        {
          g_test_fail_printf ("quantize [%s] modified its source", levels[k].name);
          ok = FALSE;
        }
      if (ok && k == n_levels - 1)
        ok = check_quantize_properties (c, &o, src, tensor_bytes (dt, q_size), dt);
      g_clear_error (&error);
      tensor_free (st, &sbuf);
      g_object_unref (dt);
      if (!ok)
        return;

      if (!with_raw (c))
        continue;

      /* raw form, same bytes; a quantized tensor is always library-owned, so
       * the misaligned destination of an unaligned case is tested here */
      if (dst_offset (c) != 0)
        {
          o_buf_init (&dbuf, q_size, dst_offset (c), 0xA5);
          rdst = o_buf_data (&dbuf);
        }
      else
        {
          dbuf.base = NULL;
          memset (raw, 0xA5, q_size + 1);
          rdst = raw;
        }
      ok = piq_quantizer_quantize_raw (levels[k].q, format, recipe, c->fdtype, src, shape, 1, rdst, q_size,
                                       NULL, 0, NULL, 0, &scale_out, &zp_out, &error);
      ok = succeeded ("quantize_raw", levels[k].name, ok, error) &&
           check_packed ("quantize_raw", c, levels[k].name, src, expected, rdst) &&
           check_guards ("quantize_raw", levels[k].name, &dbuf);
      if (ok && (scale_out != scale || zp_out != zp))
        {
          g_test_fail_printf ("quantize_raw [%s]: returned scale %g zp %" G_GINT64_FORMAT
                              ", the recipe gave %g %" G_GINT64_FORMAT, levels[k].name, scale_out, zp_out,
                              scale, zp);
          ok = FALSE;
        }
      g_clear_error (&error);
      if (dbuf.base != NULL)
        o_buf_clear (&dbuf);
      if (!ok)
        return;
      if (rdst == raw)
        g_assert_cmpuint (raw[q_size], ==, 0xA5);
    }
}

/* ---- dequantize ---- */

/* Random integers of the type, a fifth of them at qmin, qmax, zp or zp ± 1. */
static void
gen_quantized (PiqDtype qdtype, guint8 *buf, guint64 n, gint64 zp, guint64 seed)
{
  ORng rng;
  OInt qmin = o_qmin (qdtype), qmax = o_qmax (qdtype);

  o_rng_init (&rng, seed);
  for (guint64 i = 0; i < n; i++)
    {
      guint64 pick = o_rng_below (&rng, 10);
      OInt q;
      if (pick < 8)
        q = (OInt) o_rng_next (&rng);       /* o_pack keeps the low bits */
      else
        {
          static const int which[] = { 0, 1, 2, 3, 4 };
          switch (which[o_rng_below (&rng, 5)])
            {
            case 0: q = qmin; break;
            case 1: q = qmax; break;
            case 2: q = zp; break;
            case 3: q = zp + 1 <= qmax ? zp + 1 : zp; break;
            default: q = zp - 1 >= qmin ? zp - 1 : zp; break;
            }
        }
      o_pack (qdtype, buf, i, q);
    }
}

static void
test_dequantize (gconstpointer data)
{
  const Case *c = data;
  double scale = case_scale (c->qdtype, c->scale_kind);
  gint64 zp = case_zero_point (c->qdtype);
  gsize q_size = o_dtype_nbytes (c->qdtype, c->n);
  gsize f_size = o_dtype_nbytes (c->fdtype, c->n);
  g_autofree guint8 *qbytes = g_malloc0 (q_size + 1);
  g_autofree guint8 *prior = g_malloc (f_size + 1);
  g_autofree guint8 *expected = g_malloc (f_size + 1);
  g_autofree guint8 *raw = g_malloc (f_size + 1);
  g_autoptr (PiqFormat) format = case_format (c);
  guint64 shape[1] = { c->n };

  gen_quantized (c->qdtype, qbytes, c->n, zp, case_seed (c, 3));
  if (c->op == PIQ_REDUCE_ADD)
    o_gen_prefill (c->fdtype, prior, c->n, case_seed (c, 4), 4.0);
  else
    memset (prior, 0xA5, f_size);
  if (f_size > 0)
    memcpy (expected, prior, f_size);
  for (guint64 i = 0; i < c->n; i++)
    o_dequantize_elem (c->fdtype, expected, i, o_unpack (c->qdtype, qbytes, i), zp, scale, c->op);

  for (guint k = first_level (c); k < n_levels; k++)
    {
      GError *error = NULL;
      OBuf sbuf, dbuf;
      PiqTensor *qt = quantized_in (format, c->n, qbytes, scale, zp, src_offset (c), &sbuf);
      PiqTensor *dt = tensor_out (c->fdtype, c->n, prior, dst_offset (c), &dbuf);
      gboolean ok;

      ok = piq_quantizer_dequantize (levels[k].q, qt, dt, c->op, &error);
      ok = succeeded ("dequantize", levels[k].name, ok, error) && check_floats ("dequantize", c->fdtype, c->n, levels[k].name, expected,
                         tensor_bytes (dt, f_size), c->op == PIQ_REDUCE_ADD ? prior : NULL,
                         c->qdtype, qbytes) &&
           check_guards ("dequantize", levels[k].name, &dbuf);
      g_clear_error (&error);
      tensor_free (qt, &sbuf);
      tensor_free (dt, &dbuf);
      if (!ok)
        return;

      if (!with_raw (c))
        continue;
      if (f_size > 0)
        memcpy (raw, prior, f_size);
      raw[f_size] = 0xA5;
      ok = piq_quantizer_dequantize_raw (levels[k].q, format, scale, zp, qbytes, q_size, shape, 1,
                                         NULL, 0, NULL, 0, c->fdtype, raw, f_size, c->op, &error);
      ok = succeeded ("dequantize_raw", levels[k].name, ok, error) &&
           check_floats ("dequantize_raw", c->fdtype, c->n, levels[k].name, expected, raw,
                         c->op == PIQ_REDUCE_ADD ? prior : NULL, c->qdtype, qbytes);
      g_clear_error (&error);
      if (!ok)
        return;
      g_assert_cmpuint (raw[f_size], ==, 0xA5);
    }
}

/* ---- requantize ---- */

static void
test_requantize (gconstpointer data)
{
  const Case *c = data;
  double scale = case_scale (c->qdtype, c->scale_kind);
  gint64 zp = case_zero_point (c->qdtype);
  guint64 seed = c->mode == PIQ_ROUND_STOCHASTIC ? case_seed (c, 5) : 0;
  gsize f_size = o_dtype_nbytes (c->fdtype, c->n);
  g_autofree guint8 *src = g_malloc (f_size + 1);
  g_autofree guint8 *prior = g_malloc (f_size + 1);
  g_autofree guint8 *exp_set = g_malloc (f_size + 1);
  g_autofree guint8 *exp_add = g_malloc (f_size + 1);
  g_autofree guint8 *raw = g_malloc (f_size + 1);
  g_autoptr (PiqFormat) format = case_format (c);
  g_autoptr (PiqRecipe) recipe = case_recipe (c, scale, zp, seed);
  guint64 shape[1] = { c->n };
  OQuant o;

  o_quant_init (&o, c->qdtype, scale, zp, c->mode, seed);
  o_gen_source (c->fdtype, src, c->n, case_seed (c, 6), &o);
  o_gen_prefill (c->fdtype, prior, c->n, case_seed (c, 7), 4.0);
  if (f_size > 0)
    memcpy (exp_add, prior, f_size);
  for (guint64 i = 0; i < c->n; i++)
    {
      OInt q = o_quantize_elem (&o, c->fdtype, src, i);
      o_dequantize_elem (c->fdtype, exp_set, i, q, zp, scale, PIQ_REDUCE_SET);
      o_dequantize_elem (c->fdtype, exp_add, i, q, zp, scale, PIQ_REDUCE_ADD);
    }

  for (guint k = first_level (c); k < n_levels; k++)
    {
      for (PiqReduceOp op = PIQ_REDUCE_SET; op <= PIQ_REDUCE_ADD; op++)
        {
          GError *error = NULL;
          g_autofree char *what = g_strdup_printf ("requantize %s", op_name (op));
          const guint8 *expected = op == PIQ_REDUCE_SET ? exp_set : exp_add;
          OBuf sbuf, dbuf;
          PiqTensor *st = tensor_in (c->fdtype, c->n, src, src_offset (c), &sbuf);
          PiqTensor *dt = tensor_out (c->fdtype, c->n, op == PIQ_REDUCE_ADD ? prior : NULL,
                                      dst_offset (c), &dbuf);
          gboolean ok;

          ok = piq_quantizer_requantize (levels[k].q, format, recipe, st, dt, op, &error);
          ok = succeeded (what, levels[k].name, ok, error) && check_floats (what, c->fdtype, c->n, levels[k].name, expected, tensor_bytes (dt, f_size),
                             op == PIQ_REDUCE_ADD ? prior : NULL, c->fdtype, src) &&
               check_guards (what, levels[k].name, &dbuf);
          if (ok && !mem_equal (tensor_bytes (st, f_size), src, f_size))
            {
              g_test_fail_printf ("%s [%s] modified its source", what, levels[k].name);
              ok = FALSE;
            }
          g_clear_error (&error);
          tensor_free (st, &sbuf);
          tensor_free (dt, &dbuf);
          if (!ok)
            return;

          if (!with_raw (c))
            continue;
          if (op == PIQ_REDUCE_ADD && f_size > 0)
            memcpy (raw, prior, f_size);
          else
            memset (raw, 0xA5, f_size);
          raw[f_size] = 0xA5;
          ok = piq_quantizer_requantize_raw (levels[k].q, format, recipe, c->fdtype, src, shape, 1, raw, f_size,
                                             op, &error);
          ok = succeeded ("requantize_raw", levels[k].name, ok, error) &&
               check_floats ("requantize_raw", c->fdtype, c->n, levels[k].name, expected, raw,
                             op == PIQ_REDUCE_ADD ? prior : NULL, c->fdtype, src);
          g_clear_error (&error);
          if (!ok)
            return;
          g_assert_cmpuint (raw[f_size], ==, 0xA5);
        }
    }
}

/* ---- the _new forms ---- */

static void
test_quantize_new (void)
{
  static const double x[] = { -3.0, -0.5, 0.0, 0.25, 0.5, 1.5, 2.5, 7.0, 1e9 };
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) format = piq_format_new (PIQ_DTYPE_UINT4);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (0.5, 3);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = piq_tensor_new_from_values (PIQ_DTYPE_F32, x, G_N_ELEMENTS (x), &error);
  g_autoptr (PiqTensor) qt = NULL;
  g_autoptr (PiqTensor) back = NULL;
  /* x / 0.5 = -6, -1, 0, 0.5, 1, 3, 5, 14, 2e9 -> (ties to even) -6, -1, 0, 0, 1, 3, 5, 14,
   * 2e9 -> + 3 and clamped to [0, 15] */
  static const double expected_q[] = { 0, 2, 3, 3, 4, 6, 8, 15, 15 };
  static const guint8 expected_bytes[] = { 0x20, 0x33, 0x64, 0xF8, 0x0F };
  static const double expected_dq[] = { -1.5, -0.5, 0.0, 0.0, 0.5, 1.5, 2.5, 6.0, 6.0 };
  g_autofree double *values = NULL;
  gsize n_values = 0;

  g_assert_no_error (error);
  qt = piq_quantizer_quantize_new (q, format, recipe, src, &error);
  g_assert_no_error (error);
  g_assert_nonnull (qt);
  g_assert_cmpint (piq_tensor_get_dtype (qt), ==, PIQ_DTYPE_UINT4);
  g_assert_cmpuint (piq_tensor_get_n_elements (qt), ==, G_N_ELEMENTS (x));
  g_assert_cmpmem (tensor_bytes (qt, sizeof expected_bytes), sizeof expected_bytes,
                   expected_bytes, sizeof expected_bytes);
  values = piq_tensor_to_values (qt, &n_values, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (values, n_values * sizeof (double), expected_q, sizeof expected_q);
  g_assert_nonnull (piq_tensor_get_format (qt));
  g_assert_true (piq_format_equal (piq_tensor_get_format (qt), format));
  g_assert_cmpfloat (piq_tensor_get_scale (qt), ==, 0.5);
  g_assert_cmpint (piq_tensor_get_zero_point (qt), ==, 3);

  back = piq_quantizer_dequantize_new (q, qt, PIQ_DTYPE_F64, &error);
  g_assert_no_error (error);
  g_assert_cmpint (piq_tensor_get_dtype (back), ==, PIQ_DTYPE_F64);
  g_assert_cmpmem (tensor_bytes (back, sizeof expected_dq), sizeof expected_dq, expected_dq, sizeof expected_dq);
}

/* ---- hand-written vectors ---- */

typedef struct {
  const char *name;
  PiqDtype    src;
  PiqDtype    qdtype;
  double      scale;
  gint64      zp;
  guint       n;
  double      x[20];
  gint64      q[20];       /* for uint64 results above G_MAXINT64 use uq */
  guint64     uq[20];
} HandQuant;

/* torch.quantize_per_tensor(x, scale, zp, dtype) computes
 * zp + nearbyint(x * (1.0f / (float) scale)) in binary32, then clamps. The
 * expected values below were worked out by hand in binary32:
 *   (float) 0.1 = 0.100000001490116..., 1.0f / that rounds to exactly 10.0f;
 *   0.25f·10 = 2.5 (tie -> 2); 0.35f = 0.3499999940395355 and ·10 rounds to
 *   3.5f (tie -> 4; binary64 arithmetic would give 3); 0.45f·10 -> 4.5f -> 4;
 *   0.15f = 0.15000000596..., ·10 = 1.5 + 2^-24 exactly, a binary32 tie that
 *   rounds to 1.5f -> 2; 0.05f·10 -> 0.5f -> 0 (binary64: 1); 0.95f·10 -> 9.5f
 *   -> 10; −0.45f -> −4.5f -> −4. */
static const HandQuant hand_quant[] = {
  { "torch/f32/uint8/scale-0.1/zp-10", PIQ_DTYPE_F32, PIQ_DTYPE_UINT8, 0.1, 10, 20,
    { 0.0, 0.25, 0.35, 0.45, 0.15, 0.05, -0.25, -0.35, 25.0, -1.0,
      -2.0, 100.0, 1.0, 0.95, -0.05, -0.15, -0.45, 24.45, 24.55, -0.0 },
    { 10, 12, 14, 14, 12, 10, 8, 6, 255, 0,
      0, 255, 20, 20, 10, 8, 6, 254, 255, 10 }, { 0 } },
  /* 24.45f = 24.450000762939453, ·10 = 244.50000762939453 -> 244.5f (tie) -> 244 -> 254;
   * 24.55f = 24.549999237060547, ·10 -> 245.5f -> 246 -> 256 -> 255 */
  { "torch/f32/int8/scale-0.5/zp--3", PIQ_DTYPE_F32, PIQ_DTYPE_INT8, 0.5, -3, 10,
    { 1.25, 1.75, -1.25, 70.0, -70.0, 63.75, 65.0, -62.5, -62.75, -0.25 },
    { -1, 1, -5, 127, -128, 125, 127, -128, -128, -3 }, { 0 } },
  { "torch/bf16/uint8/scale-0.25/zp-128", PIQ_DTYPE_BF16, PIQ_DTYPE_UINT8, 0.25, 128, 8,
    /* bf16 keeps these exactly: x·4 = 0.5, 1.5, 2.5, −0.5, −1.5, 127.5, −64.5, 31.5 */
    { 0.125, 0.375, 0.625, -0.125, -0.375, 31.875, -16.125, 7.875 },
    { 128, 130, 130, 128, 126, 255, 64, 160 }, { 0 } },
  { "torch/f16/int4/scale-0.5/zp-0", PIQ_DTYPE_F16, PIQ_DTYPE_INT4, 0.5, 0, 8,
    { 0.25, 0.75, -0.25, -0.75, 3.75, -4.25, 100.0, -100.0 },
    { 0, 2, 0, -2, 7, -8, 7, -8 }, { 0 } },
  /* binary64 compute: 1.0 / 0.1 rounds to exactly 10.0; 0.05·10 = 0.5000000000000000277 -> 0.5
   * exactly (the product is within half an ulp) -> 0; 0.15 = 0.149999999999999994,
   * ·10 = 1.49999999999999994 -> 1.5 exactly -> 2;
   * 0.25·10 = 2.5 -> 2 */
  { "f64/uint8/scale-0.1/zp-10", PIQ_DTYPE_F64, PIQ_DTYPE_UINT8, 0.1, 10, 4,
    { 0.25, 0.05, 0.15, -0.25 }, { 12, 10, 12, 8 }, { 0 } },
  /* exact clamping of 64-bit results: no wrap-around, no rounding through double */
  { "exact-clamp/f64/int64/zp-0", PIQ_DTYPE_F64, PIQ_DTYPE_INT64, 1.0, 0, 6,
    { 0x1p63, -0x1p63, 0x1p63 - 1024, 1e19, -1e19, -0x1p63 + 2048 },
    { G_MAXINT64, G_MININT64, G_GINT64_CONSTANT (9223372036854774784), G_MAXINT64, G_MININT64,
      G_GINT64_CONSTANT (-9223372036854773760) }, { 0 } },
  { "exact-clamp/f64/int64/zp--1", PIQ_DTYPE_F64, PIQ_DTYPE_INT64, 1.0, -1, 3,
    { -0x1p63, 0x1p63, 0x1p63 - 1024 },
    { G_MININT64, G_MAXINT64, G_GINT64_CONSTANT (9223372036854774783) }, { 0 } },
  { "exact-clamp/f64/int64/zp-1024", PIQ_DTYPE_F64, PIQ_DTYPE_INT64, 1.0, 1024, 3,
    { 0x1p63 - 1024, 0x1p63 - 2048, -0x1p63 },
    { G_MAXINT64, G_GINT64_CONSTANT (9223372036854774784), G_GINT64_CONSTANT (-9223372036854774784) }, { 0 } },
  { "exact-clamp/f32/int64/zp--1", PIQ_DTYPE_F32, PIQ_DTYPE_INT64, 1.0, -1, 3,
    { 0x1p63, 0x1p64, -0x1p63 },
    { G_MAXINT64, G_MAXINT64, G_MININT64 }, { 0 } },
  { "exact-clamp/f32/int64/zp-5", PIQ_DTYPE_F32, PIQ_DTYPE_INT64, 1.0, 5, 2,
    { -0x1p63, 0x1p62 },
    { G_GINT64_CONSTANT (-9223372036854775803), G_GINT64_CONSTANT (4611686018427387909) }, { 0 } },
  { "exact-clamp/f64/uint64/zp-5", PIQ_DTYPE_F64, PIQ_DTYPE_UINT64, 1.0, 5, 5,
    { 0x1p64 - 2048, 0x1p64, -5.0, -6.0, 0x1p63 },
    { 0 }, { G_GUINT64_CONSTANT (18446744073709549573), G_MAXUINT64, 0, 0,
             G_GUINT64_CONSTANT (9223372036854775813) } },
  { "exact-clamp/f32/uint64/zp-0", PIQ_DTYPE_F32, PIQ_DTYPE_UINT64, 1.0, 0, 4,
    { 0x1p64, 0x1p64 - 0x1p40, -1.0, 1e30 },
    { 0 }, { G_MAXUINT64, G_GUINT64_CONSTANT (18446742974197923840), 0, G_MAXUINT64 } },
  { "exact-clamp/f32/uint32/zp-1", PIQ_DTYPE_F32, PIQ_DTYPE_UINT32, 1.0, 1, 4,
    { 0x1p32, 0x1p32 - 256, -1.0, -2.0 },
    { 0 }, { 4294967295u, 4294967041u, 0, 0 } },
  { "exact-clamp/f32/int32/zp-0", PIQ_DTYPE_F32, PIQ_DTYPE_INT32, 1.0, 0, 4,
    { 0x1p31, -0x1p31, 0x1p31 - 128, -0x1p31 - 256 },
    { G_MAXINT32, G_MININT32, 2147483520, G_MININT32 }, { 0 } },
  /* NaN -> zp, ±Inf -> qmax/qmin, −0 as +0 */
  { "specials/f32/int16/zp-7", PIQ_DTYPE_F32, PIQ_DTYPE_INT16, 0.5, 7, 5,
    { NAN, INFINITY, -INFINITY, -0.0, -NAN },
    { 7, 32767, -32768, 7, 7 }, { 0 } },
  { "specials/f64/uint2/zp-2", PIQ_DTYPE_F64, PIQ_DTYPE_UINT2, 1.0, 2, 5,
    { NAN, INFINITY, -INFINITY, -0.0, 1e308 },
    { 2, 3, 0, 2, 3 }, { 0 } },
};

static void
test_hand_quant (gconstpointer data)
{
  const HandQuant *h = data;
  g_autoptr (PiqFormat) format = piq_format_new (h->qdtype);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (h->scale, h->zp);
  guint64 shape[1] = { h->n };
  g_autoptr (GError) error = NULL;
  g_autofree guint8 *src = g_malloc0 (o_dtype_nbytes (h->src, h->n));
  g_autoptr (PiqTensor) st = NULL;
  g_autoptr (PiqTensor) dt = NULL;
  gboolean is_u64 = h->qdtype == PIQ_DTYPE_UINT64 || h->qdtype == PIQ_DTYPE_UINT32;
  const guint8 *got;

  /* inputs are rounded to the source dtype (as torch.tensor does for f32);
   * the bf16/f16 vectors are chosen exactly representable */
  for (guint i = 0; i < h->n; i++)
    {
      o_write_float (h->src, src, i, h->x[i]);
      if (h->src == PIQ_DTYPE_BF16 || h->src == PIQ_DTYPE_F16)
        g_assert_true (isnan (h->x[i]) || o_read_float (h->src, src, i) == h->x[i]);
    }
  st = piq_tensor_new_from_data (h->src, h->n, src, o_dtype_nbytes (h->src, h->n), &error);
  g_assert_no_error (error);

  for (guint k = 0; k < n_levels; k++)
    {
      g_clear_object (&dt);
      dt = piq_tensor_new_quantized (format, shape, 1, &error);
      g_assert_no_error (error);
      g_assert_true (piq_quantizer_quantize (levels[k].q, recipe, st, dt, &error));
      g_assert_no_error (error);
      got = tensor_bytes (dt, o_dtype_nbytes (h->qdtype, h->n));
      for (guint i = 0; i < h->n; i++)
        {
          OInt e = is_u64 ? (OInt) h->uq[i] : (OInt) h->q[i];
          OInt g = o_unpack (h->qdtype, got, i);
          if (e != g)
            {
              char es[48], gs[48];
              g_test_fail_printf ("[%s] x[%u] = %.17g: expected %s, got %s", levels[k].name, i, h->x[i],
                                  o_int_str (e, es), o_int_str (g, gs));
              return;
            }
        }
    }
}

/* Packing, written out bit by bit. */
static void
test_hand_packing (void)
{
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (GError) error = NULL;
  struct {
    PiqDtype dtype;
    guint n;
    double x[8];
    guint8 bytes[4];
    guint n_bytes;
  } cases[] = {
    /* uint4 scale 1 zp 0: q = 1 2 3 15 15 0 7 -> 0x21 0xF3 0x0F 0x07 */
    { PIQ_DTYPE_UINT4, 7, { 1, 2, 3, 15, 16, 0, 7 }, { 0x21, 0xF3, 0x0F, 0x07 }, 4 },
    /* int4: −1 = 0xF, −8 = 0x8, 7, 0 -> 0x8F 0x07 */
    { PIQ_DTYPE_INT4, 4, { -1, -8, 7, 0 }, { 0x8F, 0x07 }, 2 },
    /* int2: −2 = 10b, −1 = 11b, 0, 1 -> 0b01001110 = 0x4E; then 1, −2 -> 0b1001 = 0x09 */
    { PIQ_DTYPE_INT2, 6, { -2, -1, 0, 1, 5, -7 }, { 0x4E, 0x09 }, 2 },
    /* uint2: 3 0 1 2 -> 0b10010011 = 0x93; then 3 -> 0x03 */
    { PIQ_DTYPE_UINT2, 5, { 3, 0, 1, 2, 9 }, { 0x93, 0x03 }, 2 },
  };

  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (PiqFormat) format = piq_format_new (cases[c].dtype);
      g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (1.0, 0);
      guint64 shape[1] = { cases[c].n };
      g_autoptr (PiqTensor) st = piq_tensor_new_from_values (PIQ_DTYPE_F32, cases[c].x, cases[c].n, &error);
      g_autoptr (PiqTensor) dt = piq_tensor_new_quantized (format, shape, 1, &error);
      g_assert_no_error (error);
      g_assert_true (piq_quantizer_quantize (q, recipe, st, dt, &error));
      g_assert_no_error (error);
      g_test_message ("%s", o_dtype_name (cases[c].dtype));
      g_assert_cmpmem (tensor_bytes (dt, cases[c].n_bytes), cases[c].n_bytes, cases[c].bytes, cases[c].n_bytes);
    }
}

typedef struct {
  const char *name;
  PiqDtype    qdtype;
  PiqDtype    dst;
  double      scale;
  gint64      zp;
  guint       n;
  guint64     q[6];        /* raw integer bits of the quantized values */
  guint64     bits[6];     /* expected destination bits */
} HandDequant;

static const HandDequant hand_dequant[] = {
  /* f16 ties: 2049·2^-11 = 1 + 2^-11, halfway between 1 and 1 + 2^-10 -> 1.0 (0x3C00);
   * 2051·2^-11 = 1 + 3·2^-11 -> even neighbour 1 + 2^-9 (0x3C02); 2050 -> 0x3C01 exactly */
  { "f16/ties", PIQ_DTYPE_INT16, PIQ_DTYPE_F16, 0x1p-11, 0, 3, { 2049, 2051, 2050 }, { 0x3C00, 0x3C02, 0x3C01 } },
  /* f16 overflow: 65518 < 65520 -> 65504 (0x7BFF); 65520 is halfway to 2^16 and rounds to
   * even, i.e. overflows to Inf; 65534 -> Inf; −65534 -> −Inf */
  { "f16/overflow", PIQ_DTYPE_INT16, PIQ_DTYPE_F16, 2.0, 0, 4, { 32759, 32760, 32767, 0x8001 },
    { 0x7BFF, 0x7C00, 0x7C00, 0xFC00 } },
  /* f16 subnormals, unit 2^-24, scale 2^-30: 96 -> 1.5 units -> 2 (0x0002), 100 -> 1.5625 ->
   * 2, 160 -> 2.5 -> 2, 224 -> 3.5 -> 4, 32 -> 0.5 -> 0, 33 -> 0.515625 -> 1 */
  { "f16/subnormal", PIQ_DTYPE_INT16, PIQ_DTYPE_F16, 0x1p-30, 0, 6, { 96, 100, 160, 224, 32, 33 },
    { 0x0002, 0x0002, 0x0002, 0x0004, 0x0000, 0x0001 } },
  /* bf16 ties: 257/256 -> 1.0 (0x3F80), 259/256 -> 0x3F82, 258/256 -> 0x3F81 */
  { "bf16/ties", PIQ_DTYPE_UINT16, PIQ_DTYPE_BF16, 0x1p-8, 0, 3, { 257, 259, 258 }, { 0x3F80, 0x3F82, 0x3F81 } },
  /* subnormal results are kept: 1·2^-127 = 0x0040 in bf16, 0x00400000 in f32; 3·2^-127 = 1.5·2^-126 */
  { "bf16/subnormal", PIQ_DTYPE_UINT8, PIQ_DTYPE_BF16, 0x1p-127, 0, 3, { 1, 3, 0 }, { 0x0040, 0x00C0, 0 } },
  { "f32/subnormal", PIQ_DTYPE_UINT8, PIQ_DTYPE_F32, 0x1p-127, 0, 2, { 1, 2 }, { 0x00400000, 0x00800000 } },
  /* q − zp is exact before it is rounded once: 2^24 + 1 -> 2^24, 2^24 + 3 -> 2^24 + 4 */
  { "f32/int-rounding", PIQ_DTYPE_INT64, PIQ_DTYPE_F32, 1.0, 0, 2, { 16777217, 16777219 }, { 0x4B800000, 0x4B800002 } },
  /* int64 q = INT64_MIN with zp = INT64_MAX: q − zp = −(2^64 − 1) -> −2^64 (no wrap to 1) */
  { "f32/int64-wide-difference", PIQ_DTYPE_INT64, PIQ_DTYPE_F32, 1.0, G_MAXINT64, 2,
    { G_GUINT64_CONSTANT (0x8000000000000000), G_GUINT64_CONSTANT (0x7FFFFFFFFFFFFFFF) }, { 0xDF800000, 0 } },
  { "f64/int64-wide-difference", PIQ_DTYPE_INT64, PIQ_DTYPE_F64, 1.0, G_MAXINT64, 1,
    { G_GUINT64_CONSTANT (0x8000000000000000) }, { G_GUINT64_CONSTANT (0xC3F0000000000000) } },
  /* uint64 q = 2^64 − 1 with zp 0 -> 2^64 in f32; 2^53 + 1 -> 2^53 in f64 */
  { "f32/uint64-max", PIQ_DTYPE_UINT64, PIQ_DTYPE_F32, 1.0, 0, 1, { G_MAXUINT64 }, { 0x5F800000 } },
  { "f64/int-rounding", PIQ_DTYPE_UINT64, PIQ_DTYPE_F64, 1.0, 0, 2,
    { G_GUINT64_CONSTANT (9007199254740993), G_GUINT64_CONSTANT (9007199254740995) },
    { G_GUINT64_CONSTANT (0x4340000000000000), G_GUINT64_CONSTANT (0x4340000000000002) } },
  /* the binary32 scale: (float) 0.1 · 3 = 0.3000000119 in binary32 = 0x3E99999A;
   * into f64 the binary64 scale is used: 0.1 · 3 = 0x3FD3333333333334 */
  { "f32/scale-0.1", PIQ_DTYPE_UINT8, PIQ_DTYPE_F32, 0.1, 0, 1, { 3 }, { 0x3E99999A } },
  { "f64/scale-0.1", PIQ_DTYPE_UINT8, PIQ_DTYPE_F64, 0.1, 0, 1, { 3 }, { G_GUINT64_CONSTANT (0x3FD3333333333334) } },
};

static void
test_hand_dequant (gconstpointer data)
{
  const HandDequant *h = data;
  g_autoptr (PiqFormat) format = piq_format_new (h->qdtype);
  guint64 shape[1] = { h->n };
  gsize q_size = o_dtype_nbytes (h->qdtype, h->n);
  gsize f_size = o_dtype_nbytes (h->dst, h->n);
  g_autofree guint8 *qbytes = g_malloc0 (q_size);
  g_autofree guint8 *out = g_malloc (f_size);

  for (guint i = 0; i < h->n; i++)
    o_pack (h->qdtype, qbytes, i, (OInt) h->q[i]);

  for (guint k = 0; k < n_levels; k++)
    {
      g_autoptr (GError) error = NULL;
      memset (out, 0xA5, f_size);
      g_assert_true (piq_quantizer_dequantize_raw (levels[k].q, format, h->scale, h->zp, qbytes, q_size,
                                                   shape, 1, NULL, 0, NULL, 0, h->dst,
                                                   out, f_size, PIQ_REDUCE_SET, &error));
      g_assert_no_error (error);
      for (guint i = 0; i < h->n; i++)
        {
          guint64 g = o_read_float_bits (h->dst, out, i);
          if (g != h->bits[i])
            {
              g_test_fail_printf ("[%s] element %u: expected bits 0x%" G_GINT64_MODIFIER "x, got 0x%"
                                  G_GINT64_MODIFIER "x", levels[k].name, i, h->bits[i], g);
              return;
            }
        }
    }
}

/* ADD rounds once in the compute precision, then once into the dtype:
 * bf16 1.0 + 2^-8 (from q = 1, scale 2^-8) = 1.00390625 in binary32 -> halfway
 * between bf16 1.0 and 1.0078125 -> even -> 1.0 (0x3F80); 1.0078125 + 2^-8 ->
 * halfway -> 1.015625 (0x3F82). f16 65504 + 16 = 65520 -> Inf. f32 −0 + 0 -> +0. */
static void
test_hand_dequant_add (void)
{
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (GError) error = NULL;
  struct {
    PiqDtype dst;
    double scale;
    guint8 qv;
    guint64 prior;
    guint64 expected;
  } cases[] = {
    { PIQ_DTYPE_BF16, 0x1p-8, 1, 0x3F80, 0x3F80 },
    { PIQ_DTYPE_BF16, 0x1p-8, 1, 0x3F81, 0x3F82 },
    { PIQ_DTYPE_F16, 16.0, 1, 0x7BFF, 0x7C00 },
    { PIQ_DTYPE_F16, 8.0, 1, 0x7BFF, 0x7BFF },       /* 65512 -> 65504 */
    { PIQ_DTYPE_F32, 1.0, 0, 0x80000000, 0x00000000 },
    { PIQ_DTYPE_F32, 1.0, 1, 0x7F800000, 0x7F800000 },
  };

  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (PiqFormat) format = piq_format_new (PIQ_DTYPE_UINT8);
      guint64 shape[1] = { 1 };
      guint8 out[8] = { 0 };
      o_write_float_bits (cases[c].dst, out, 0, cases[c].prior);
      g_assert_true (piq_quantizer_dequantize_raw (q, format, cases[c].scale, 0, &cases[c].qv, 1, shape, 1,
                                                   NULL, 0, NULL, 0, cases[c].dst,
                                                   out, o_dtype_nbytes (cases[c].dst, 1), PIQ_REDUCE_ADD, &error));
      g_assert_no_error (error);
      g_test_message ("case %" G_GSIZE_FORMAT, c);
      g_assert_cmphex (o_read_float_bits (cases[c].dst, out, 0), ==, cases[c].expected);
    }
}

/* ---- stochastic rounding: statistics and seeds ---- */

#define STAT_N (G_GUINT64_CONSTANT (1) << 20)

typedef struct {
  PiqDtype src;
  PiqDtype qdtype;
} Pair;

static const Pair stat_pairs[] = {
  { PIQ_DTYPE_F32, PIQ_DTYPE_INT8 },
  { PIQ_DTYPE_F64, PIQ_DTYPE_UINT8 },
  { PIQ_DTYPE_BF16, PIQ_DTYPE_INT16 },
  { PIQ_DTYPE_F16, PIQ_DTYPE_UINT4 },
  { PIQ_DTYPE_F32, PIQ_DTYPE_INT2 },
};

/* In-range values with all kinds of fractional parts (f16/bf16 carry few). */
static void
gen_in_range (PiqDtype src, PiqDtype qdtype, guint8 *buf, guint64 n, double scale, gint64 zp, guint64 seed)
{
  ORng rng;
  /* keep away from the clamp even after rounding x to bf16 (relative 2^-9) */
  double span = (double) (o_qmax (qdtype) - o_qmin (qdtype));
  double lo = (double) (o_qmin (qdtype) - zp) + 0.01 * span + 1;
  double hi = (double) (o_qmax (qdtype) - zp) - 0.01 * span - 1;

  o_rng_init (&rng, seed);
  for (guint64 i = 0; i < n; i++)
    o_write_float (src, buf, i, (lo + o_rng_uniform (&rng) * (hi - lo)) * scale);
}

static PiqTensor *
quantize_with_seed (PiqQuantizer *q, PiqDtype src_dtype, PiqDtype qdtype, PiqTensor *src,
                    double scale, gint64 zp, guint64 seed)
{
  g_autoptr (PiqFormat) format = piq_format_new (qdtype);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (scale, zp);
  guint64 shape[1] = { piq_tensor_get_n_elements (src) };
  g_autoptr (GError) error = NULL;
  PiqTensor *dst = piq_tensor_new_quantized (format, shape, 1, &error);

  g_assert_no_error (error);
  piq_recipe_set_round_mode (recipe, PIQ_ROUND_STOCHASTIC);
  piq_recipe_set_seed (recipe, seed);
  g_assert_true (piq_quantizer_quantize (q, recipe, src, dst, &error));
  g_assert_no_error (error);
  return dst;
}

/* The rounding error e = (q − zp) − v has mean P(up) − frac, which the hash
 * quantisation of u to 24 bits puts in [0, 2^-24), and variance
 * frac(1 − frac); the mean over n independent elements is within 5σ,
 * σ = sqrt(Σ frac(1 − frac)) / n, of that bias. A threshold shared by all
 * elements of a call (pi-quant's bug) gives a mean error of order 0.1. */
static void
test_stochastic_unbiased (gconstpointer data)
{
  const Pair *p = data;
  double scale = case_scale (p->qdtype, 1);
  gint64 zp = case_zero_point (p->qdtype);
  g_autofree guint8 *src = g_malloc (o_dtype_nbytes (p->src, STAT_N));
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) st = NULL;
  g_autoptr (PiqTensor) dt = NULL;
  const guint8 *qb;
  double sum_e = 0, sum_var = 0, mean, sigma;
  OQuant o;

  gen_in_range (p->src, p->qdtype, src, STAT_N, scale, zp, 0x5EED5 + p->qdtype);
  st = piq_tensor_new_from_data (p->src, STAT_N, src, o_dtype_nbytes (p->src, STAT_N), &error);
  g_assert_no_error (error);
  dt = quantize_with_seed (levels[n_levels - 1].q, p->src, p->qdtype, st, scale, zp, 0xDECAF);
  qb = tensor_bytes (dt, o_dtype_nbytes (p->qdtype, STAT_N));
  o_quant_init (&o, p->qdtype, scale, zp, PIQ_ROUND_STOCHASTIC, 0xDECAF);

  for (guint64 i = 0; i < STAT_N; i++)
    {
      double v = o_scaled (&o, p->src, o_read_float (p->src, src, i));
      double frac = v - floor (v);
      sum_e += (double) (o_unpack (p->qdtype, qb, i) - zp) - v;
      sum_var += frac * (1 - frac);
    }
  mean = sum_e / STAT_N;
  sigma = sqrt (sum_var) / STAT_N;
  g_test_message ("mean rounding error %g, sigma %g", mean, sigma);
  g_assert_cmpfloat (sigma, >, 0);
  g_assert_cmpfloat (fabs (mean - 0x1p-25), <=, 5 * sigma + 0x1p-25);
}

/* Every element a tie (frac 1/2): u < 1/2 exactly when h < 2^31, so each
 * rounds up with probability 1/2, independently. Over n elements the share
 * that rounds up is within 5·sqrt(1/4n) of 1/2, the share of (even, odd)
 * neighbour pairs both rounding up within 5·sqrt(3/16 / (n/2)) of 1/4, and
 * frac 1/4 elements round up with share 1/4 ± 5·sqrt(3/16n). */
static void
test_stochastic_ties (void)
{
  guint64 n = STAT_N;
  g_autofree float *x = g_new (float, n);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) st = NULL;
  g_autoptr (PiqTensor) dt = NULL;
  const guint8 *qb;
  guint64 up = 0, both = 0, up_quarter = 0, n_quarter = 0;

  /* x = k + 0.5 (even i) or k + 0.25 (odd i) with scale 1, int16, zp 0 */
  for (guint64 i = 0; i < n; i++)
    x[i] = (float) ((gint64) (i % 2000) - 1000) + (i % 4 == 3 ? 0.25f : 0.5f);
  st = piq_tensor_new_from_data (PIQ_DTYPE_F32, n, (const guint8 *) x, n * sizeof (float), &error);
  g_assert_no_error (error);
  dt = quantize_with_seed (levels[n_levels - 1].q, PIQ_DTYPE_F32, PIQ_DTYPE_INT16, st, 1.0, 0, 12345);
  qb = tensor_bytes (dt, n * 2);

  for (guint64 i = 0; i + 1 < n; i += 4)
    {
      /* i, i+1, i+2 are ties; i+3 has frac 1/4 */
      gboolean u0 = (double) o_unpack (PIQ_DTYPE_INT16, qb, i) > x[i];
      gboolean u1 = (double) o_unpack (PIQ_DTYPE_INT16, qb, i + 1) > x[i + 1];
      gboolean u2 = (double) o_unpack (PIQ_DTYPE_INT16, qb, i + 2) > x[i + 2];
      up += u0 + u1 + u2;
      both += u0 && u1;
      if (i + 3 < n)
        {
          up_quarter += (double) o_unpack (PIQ_DTYPE_INT16, qb, i + 3) > x[i + 3];
          n_quarter++;
        }
    }
  {
    double n_ties = 3.0 * (double) (n / 4);
    double share = up / n_ties, pairs = both / (double) (n / 4), quarter = up_quarter / (double) n_quarter;
    g_test_message ("ties up %g, pairs both up %g, quarter up %g", share, pairs, quarter);
    g_assert_cmpfloat (fabs (share - 0.5), <=, 5 * sqrt (0.25 / n_ties));
    g_assert_cmpfloat (fabs (pairs - 0.25), <=, 5 * sqrt (0.1875 / (double) (n / 4)));
    g_assert_cmpfloat (fabs (quarter - 0.25), <=, 5 * sqrt (0.1875 / (double) n_quarter));
  }
}

static PiqTensor *
stat_source (PiqDtype src, PiqDtype qdtype, guint64 n, double scale, gint64 zp)
{
  g_autofree guint8 *buf = g_malloc (o_dtype_nbytes (src, n));
  g_autoptr (GError) error = NULL;
  PiqTensor *t;

  gen_in_range (src, qdtype, buf, n, scale, zp, 99);
  t = piq_tensor_new_from_data (src, n, buf, o_dtype_nbytes (src, n), &error);
  g_assert_no_error (error);
  return t;
}

static gboolean
tensors_equal (PiqTensor *a, PiqTensor *b)
{
  gsize sa = 0, sb = 0;
  gconstpointer da = piq_tensor_get_data (a, &sa), db = piq_tensor_get_data (b, &sb);
  return sa == sb && mem_equal (da, db, sa);
}

static void
test_stochastic_same_seed (gconstpointer data)
{
  const Pair *p = data;
  double scale = case_scale (p->qdtype, 1);
  gint64 zp = case_zero_point (p->qdtype);
  g_autoptr (PiqTensor) st = stat_source (p->src, p->qdtype, 100003, scale, zp);

  for (guint k = 0; k < n_levels; k++)
    {
      g_autoptr (PiqTensor) a = quantize_with_seed (levels[k].q, p->src, p->qdtype, st, scale, zp, 777);
      g_autoptr (PiqTensor) b = quantize_with_seed (levels[0].q, p->src, p->qdtype, st, scale, zp, 777);
      g_assert_true (tensors_equal (a, b));
    }
}

static void
test_stochastic_different_seeds (gconstpointer data)
{
  const Pair *p = data;
  double scale = case_scale (p->qdtype, 1);
  gint64 zp = case_zero_point (p->qdtype);
  g_autoptr (PiqTensor) st = stat_source (p->src, p->qdtype, 100003, scale, zp);
  g_autoptr (PiqTensor) a = quantize_with_seed (levels[n_levels - 1].q, p->src, p->qdtype, st, scale, zp, 777);
  g_autoptr (PiqTensor) b = quantize_with_seed (levels[n_levels - 1].q, p->src, p->qdtype, st, scale, zp, 778);
  g_autoptr (PiqTensor) c = quantize_with_seed (levels[n_levels - 1].q, p->src, p->qdtype, st, scale, zp,
                                                G_GUINT64_CONSTANT (777) | (G_GUINT64_CONSTANT (1) << 63));

  /* with ~10^5 non-integer values, equal bytes would mean the seed is ignored */
  g_assert_false (tensors_equal (a, b));
  g_assert_false (tensors_equal (a, c));
}

/* Seed 0: each call draws a fresh non-zero seed and records it in the
 * quantized output (piq_tensor_get_seed); the oracle with that seed gives the
 * same bytes, and so does a new call with it. Two seed-0 calls with the same
 * recipe differ (a library that stored the drawn seed into the caller's
 * recipe would repeat itself), and the recipe's seed stays 0. */
static void
test_stochastic_seed_zero (gconstpointer data)
{
  const Pair *p = data;
  double scale = case_scale (p->qdtype, 1);
  gint64 zp = case_zero_point (p->qdtype);
  guint64 n = 100003;
  g_autoptr (PiqTensor) st = stat_source (p->src, p->qdtype, n, scale, zp);
  g_autoptr (PiqFormat) format = piq_format_new (p->qdtype);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (scale, zp);
  guint64 shape[1] = { n };
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) a = piq_tensor_new_quantized (format, shape, 1, &error);
  g_autoptr (PiqTensor) b = piq_tensor_new_quantized (format, shape, 1, &error);
  g_autoptr (PiqTensor) again = NULL;
  g_autofree guint8 *expected = g_malloc0 (o_dtype_nbytes (p->qdtype, n));
  const guint8 *src = tensor_bytes (st, o_dtype_nbytes (p->src, n));
  guint64 seed_a, seed_b;
  OQuant o;

  g_assert_no_error (error);
  piq_recipe_set_round_mode (recipe, PIQ_ROUND_STOCHASTIC);
  piq_recipe_set_seed (recipe, 0);
  g_assert_true (piq_quantizer_quantize (levels[n_levels - 1].q, recipe, st, a, &error));
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_quantize (levels[n_levels - 1].q, recipe, st, b, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (piq_recipe_get_seed (recipe), ==, 0);

  seed_a = piq_tensor_get_seed (a);
  seed_b = piq_tensor_get_seed (b);
  g_test_message ("drawn seeds %" G_GINT64_MODIFIER "x %" G_GINT64_MODIFIER "x", seed_a, seed_b);
  g_assert_cmpuint (seed_a, !=, 0);
  g_assert_cmpuint (seed_b, !=, 0);
  g_assert_cmpuint (seed_a, !=, seed_b);
  g_assert_false (tensors_equal (a, b));

  o_quant_init (&o, p->qdtype, scale, zp, PIQ_ROUND_STOCHASTIC, seed_a);
  for (guint64 i = 0; i < n; i++)
    o_pack (p->qdtype, expected, i, o_quantize_elem (&o, p->src, src, i));
  g_assert_cmpmem (tensor_bytes (a, o_dtype_nbytes (p->qdtype, n)), o_dtype_nbytes (p->qdtype, n),
                   expected, o_dtype_nbytes (p->qdtype, n));

  again = quantize_with_seed (levels[0].q, p->src, p->qdtype, st, scale, zp, seed_a);
  g_assert_true (tensors_equal (a, again));
}

/* requantize with seed 0 also draws a fresh seed per call */
static void
test_stochastic_requantize_seed_zero (void)
{
  guint64 n = 4099;
  g_autoptr (PiqTensor) st = stat_source (PIQ_DTYPE_F32, PIQ_DTYPE_INT8, n, 0.03, 0);
  g_autoptr (PiqFormat) format = piq_format_new (PIQ_DTYPE_INT8);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (0.03, 0);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) a = piq_tensor_new (PIQ_DTYPE_F32, n, &error);
  g_autoptr (PiqTensor) b = piq_tensor_new (PIQ_DTYPE_F32, n, &error);

  piq_recipe_set_round_mode (recipe, PIQ_ROUND_STOCHASTIC);
  g_assert_true (piq_quantizer_requantize (levels[n_levels - 1].q, format, recipe, st, a, PIQ_REDUCE_SET, &error));
  g_assert_true (piq_quantizer_requantize (levels[n_levels - 1].q, format, recipe, st, b, PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
  g_assert_false (tensors_equal (a, b));
  g_assert_cmpuint (piq_recipe_get_seed (recipe), ==, 0);
}

/* ---- registration ---- */

/* The 1M-element length (which is about threads and chunking: every vector
 * width and tail is covered by the short lengths) runs aligned, on a subset
 * that keeps the program near 10 s on two cores:
 * quantize: every pair with the power-of-two scale in nearest mode, and the
 *   other scale in stochastic mode for uint2, int8 and uint32;
 * requantize: stochastic for uint4, int8 and uint64, nearest for int2 and uint16;
 * dequantize: half of the (integer, float) pairs, SET and ADD alternating, so
 *   that each integer type meets two float types and each float type six
 *   integer types. */
static gboolean
big_quantize_wanted (PiqDtype q, guint kind, PiqRoundMode mode, gsize offset)
{
  if (offset != 0)
    return FALSE;
  if (mode == PIQ_ROUND_NEAREST)
    return kind == 0;
  return kind == 1 && (q == PIQ_DTYPE_UINT2 || q == PIQ_DTYPE_INT8 || q == PIQ_DTYPE_UINT32);
}

static gboolean
big_requantize_wanted (PiqDtype q, guint kind, PiqRoundMode mode, gsize offset)
{
  if (offset != 0)
    return FALSE;
  if (mode == PIQ_ROUND_STOCHASTIC)
    return kind == 1 && (q == PIQ_DTYPE_UINT4 || q == PIQ_DTYPE_INT8 || q == PIQ_DTYPE_UINT64);
  return kind == 0 && (q == PIQ_DTYPE_INT2 || q == PIQ_DTYPE_UINT16);
}

static gboolean
big_dequantize_wanted (gsize qi, gsize fi, PiqReduceOp op, gsize offset)
{
  return offset == 0 && (qi + fi) % 2 == 0 && (gsize) op == (qi / 2 + fi / 2) % 2;
}

static void
add_sweep (void)
{
  for (gsize si = 0; si < G_N_ELEMENTS (o_float_dtypes); si++)
    for (gsize qi = 0; qi < G_N_ELEMENTS (o_int_dtypes); qi++)
      for (PiqRoundMode mode = PIQ_ROUND_NEAREST; mode <= PIQ_ROUND_STOCHASTIC; mode++)
        for (guint kind = 0; kind < 2; kind++)
          for (gsize li = 0; li < G_N_ELEMENTS (lengths); li++)
            for (gsize off = 0; off < 2; off++)
              {
                PiqDtype f = o_float_dtypes[si], q = o_int_dtypes[qi];
                guint64 n = lengths[li];
                gsize offset = off == 0 ? 0 : 1 + li % 3;
                Case *c;
                g_autofree char *path = NULL;

                if (n == BIG_LEN && !big_quantize_wanted (q, kind, mode, offset))
                  continue;
                c = case_new (f, q, mode, PIQ_REDUCE_SET, kind, n, offset);
                path = g_strdup_printf ("/quantize/%s/%s/%s/scale-%g/len-%" G_GUINT64_FORMAT "/%s",
                                        o_dtype_name (f), o_dtype_name (q), mode_name (mode),
                                        case_scale (q, kind), n, align_name (c));
                g_test_add_data_func (path, c, test_quantize);
              }

  for (gsize qi = 0; qi < G_N_ELEMENTS (o_int_dtypes); qi++)
    for (gsize fi = 0; fi < G_N_ELEMENTS (o_float_dtypes); fi++)
      for (PiqReduceOp op = PIQ_REDUCE_SET; op <= PIQ_REDUCE_ADD; op++)
        for (gsize li = 0; li < G_N_ELEMENTS (lengths); li++)
          for (gsize off = 0; off < 2; off++)
            {
              PiqDtype f = o_float_dtypes[fi], q = o_int_dtypes[qi];
              guint64 n = lengths[li];
              gsize offset = off == 0 ? 0 : 1 + li % 3;
              Case *c;
              g_autofree char *path = NULL;

              if (n == BIG_LEN && !big_dequantize_wanted (qi, fi, op, offset))
                continue;
              c = case_new (f, q, PIQ_ROUND_NEAREST, op, 1, n, offset);
              path = g_strdup_printf ("/dequantize/%s/%s/%s/scale-%g/len-%" G_GUINT64_FORMAT "/%s",
                                      o_dtype_name (q), o_dtype_name (f), op_name (op),
                                      case_scale (q, 1), n, align_name (c));
              g_test_add_data_func (path, c, test_dequantize);
            }

  for (gsize si = 0; si < G_N_ELEMENTS (o_float_dtypes); si++)
    for (gsize qi = 0; qi < G_N_ELEMENTS (o_int_dtypes); qi++)
      for (PiqRoundMode mode = PIQ_ROUND_NEAREST; mode <= PIQ_ROUND_STOCHASTIC; mode++)
        for (guint kind = 0; kind < 2; kind++)
          for (gsize li = 0; li < G_N_ELEMENTS (lengths); li++)
            for (gsize off = 0; off < 2; off++)
              {
                PiqDtype f = o_float_dtypes[si], q = o_int_dtypes[qi];
                guint64 n = lengths[li];
                gsize offset = off == 0 ? 0 : 1 + li % 3;
                Case *c;
                g_autofree char *path = NULL;

                if (n == BIG_LEN && !big_requantize_wanted (q, kind, mode, offset))
                  continue;
                c = case_new (f, q, mode, PIQ_REDUCE_SET, kind, n, offset);
                path = g_strdup_printf ("/requantize/%s/%s/%s/scale-%g/len-%" G_GUINT64_FORMAT "/%s",
                                        o_dtype_name (f), o_dtype_name (q), mode_name (mode),
                                        case_scale (q, kind), n, align_name (c));
                g_test_add_data_func (path, c, test_requantize);
              }
}

int
main (int argc, char **argv)
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  all_cases = g_ptr_array_new_with_free_func (g_free);
  setup_levels ();

  g_test_add_func ("/quantize/simd-levels", test_simd_levels);
  add_sweep ();

  g_test_add_func ("/quantize/new/f32/uint4", test_quantize_new);
  for (gsize i = 0; i < G_N_ELEMENTS (hand_quant); i++)
    {
      g_autofree char *path = g_strdup_printf ("/quantize/hand/%s", hand_quant[i].name);
      g_test_add_data_func (path, &hand_quant[i], test_hand_quant);
    }
  g_test_add_func ("/quantize/hand/packing", test_hand_packing);
  for (gsize i = 0; i < G_N_ELEMENTS (hand_dequant); i++)
    {
      g_autofree char *path = g_strdup_printf ("/dequantize/hand/%s/%s", o_dtype_name (hand_dequant[i].qdtype),
                                               hand_dequant[i].name);
      g_test_add_data_func (path, &hand_dequant[i], test_hand_dequant);
    }
  g_test_add_func ("/dequantize/hand/add-rounding", test_hand_dequant_add);

  for (gsize i = 0; i < G_N_ELEMENTS (stat_pairs); i++)
    {
      const char *s = o_dtype_name (stat_pairs[i].src), *q = o_dtype_name (stat_pairs[i].qdtype);
      g_autofree char *p1 = g_strdup_printf ("/quantize/stochastic/unbiased/%s/%s/len-%" G_GUINT64_FORMAT, s, q, STAT_N);
      g_autofree char *p2 = g_strdup_printf ("/quantize/stochastic/same-seed/%s/%s", s, q);
      g_autofree char *p3 = g_strdup_printf ("/quantize/stochastic/different-seeds/%s/%s", s, q);
      g_autofree char *p4 = g_strdup_printf ("/quantize/stochastic/seed-0/%s/%s", s, q);
      g_test_add_data_func (p1, &stat_pairs[i], test_stochastic_unbiased);
      g_test_add_data_func (p2, &stat_pairs[i], test_stochastic_same_seed);
      g_test_add_data_func (p3, &stat_pairs[i], test_stochastic_different_seeds);
      g_test_add_data_func (p4, &stat_pairs[i], test_stochastic_seed_zero);
    }
  g_test_add_func ("/quantize/stochastic/ties/f32/int16", test_stochastic_ties);
  g_test_add_func ("/requantize/stochastic/seed-0/f32/int8", test_stochastic_requantize_seed_zero);

  ret = g_test_run ();

  g_ptr_array_unref (all_cases);
  for (guint k = 0; k < n_levels; k++)
    g_object_unref (levels[k].q);
  for (guint k = 0; k < n_caps; k++)
    g_object_unref (all_caps[k].q);
  return ret;
}

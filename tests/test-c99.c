/* test-c99.c: pi-quant's C99 API (<piquant/piquant-c99.h>)
 *
 * - quantize and dequantize: byte-identical to piquant's own raw-pointer API
 *   for every dtype pair, rounding mode / reduce op and odd lengths, on
 *   contexts of 1 and 4 threads, with guard bytes after every output;
 * - stochastic rounding: every element is floor or ceil, elements round
 *   independently (not one threshold per call, as pi-quant does), and each call
 *   draws a fresh seed;
 * - compute_quant_params: pi-quant's min/max rule on hand-computed vectors
 *   (no widening to 0, constant data → {1.0, qmax >> 1}, ties away from zero,
 *   zero point from the binary64 scale, clamping) for f32 and bf16, and on
 *   random data against a binary64 reference, identical for 1 and 4 threads;
 * - invalid input: one warning, outputs untouched, and no abort even when
 *   criticals are fatal.
 *
 * The compat header comes first, so it must stand alone; <piquant/piquant.h>
 * follows only to compute the reference results.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <piquant/piquant-c99.h>
#include <piquant/piquant.h>

#include <math.h>
#include <string.h>

#include <glib.h>

#define GUARD 16
#define GUARD_BYTE 0xA5
#define BIG_LEN ((1u << 20) + 3)

static piquant_context_t *ctx1;     /* 1 thread */
static piquant_context_t *ctx4;     /* 4 threads */
static PiqQuantizer *reference;

static const size_t lengths[] = {
  0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 17, 31, 33, 63, 65, 1023, 100003,
};

typedef struct {
  piquant_dtype_t  dtype;
  PiqDtype         piq;
  const char      *name;
  guint            bits;
} Dtype;

static const Dtype float_types[] = {
  { PIQUANT_DTYPE_F32,  PIQ_DTYPE_F32,  "f32",  32 },
  { PIQUANT_DTYPE_BF16, PIQ_DTYPE_BF16, "bf16", 16 },
};

static const Dtype quant_types[] = {
  { PIQUANT_DTYPE_UINT2, PIQ_DTYPE_UINT2, "uint2", 2 },
  { PIQUANT_DTYPE_UINT4, PIQ_DTYPE_UINT4, "uint4", 4 },
  { PIQUANT_DTYPE_UINT8, PIQ_DTYPE_UINT8, "uint8", 8 },
};

static gsize
bytes_for (const Dtype *t, gsize n)
{
  return (n * t->bits + 7) / 8;
}

/* ---- deterministic data ---- */

static guint64
next (guint64 *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static guint16
bf16_of (float f)
{
  guint32 u;

  memcpy (&u, &f, 4);
  return (guint16) (u >> 16);   /* truncation: any bf16 bit pattern will do */
}

static float
float_of_bf16 (guint16 b)
{
  guint32 u = (guint32) b << 16;
  float f;

  memcpy (&f, &u, 4);
  return f;
}

/* Values around ±40 steps of @scale, with exact ties (k + ½)·scale, −0, NaN,
 * ±Inf and huge values mixed in (unless @finite). */
static float
value (guint64 *s, float scale, gboolean finite)
{
  guint64 r = next (s);

  switch (finite ? 9 : r % 16)
    {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -0.0f;
    case 4: return (r & 256) ? 3e38f : -3e38f;
    case 5: case 6: case 7:
      return ((float) ((gint64) (r >> 32) % 81 - 40) + 0.5f) * scale;
    default:
      return (float) ((double) (gint64) (r >> 11) / 9007199254740992.0 * 80.0) * scale;
    }
}

static gpointer
make_floats (const Dtype *t, gsize n, float scale, gboolean finite, guint64 seed)
{
  gpointer buf = g_malloc (MAX (bytes_for (t, n), 1));

  for (gsize i = 0; i < n; i++)
    {
      float f = value (&seed, scale, finite);
      if (t->dtype == PIQUANT_DTYPE_F32)
        ((float *) buf)[i] = f;
      else
        ((guint16 *) buf)[i] = bf16_of (f);
    }
  return buf;
}

static guint8 *
guarded (gsize size, guint8 fill)
{
  guint8 *buf = g_malloc (size + GUARD);

  memset (buf, fill, size);
  memset (buf + size, GUARD_BYTE, GUARD);
  return buf;
}

static void
assert_guard (const guint8 *buf, gsize size)
{
  for (gsize i = 0; i < GUARD; i++)
    g_assert_cmphex (buf[size + i], ==, GUARD_BYTE);
}

static PiqRecipe *
recipe_for (float scale, gint64 zp, PiqRoundMode mode)
{
  PiqRecipe *r = piq_recipe_new_affine (scale, zp);

  piq_recipe_set_round_mode (r, mode);
  return r;
}

/* ---- quantize / dequantize against piquant's API ---- */

typedef struct {
  const Dtype *f;
  const Dtype *q;
  gsize        n;
  float        scale;
  gint64       zp;
  gboolean     add;     /* dequantize only */
} Case;

static void
test_quantize (gconstpointer data)
{
  const Case *c = data;
  gsize out_size = bytes_for (c->q, c->n);
  g_autofree gpointer in = make_floats (c->f, c->n, c->scale, FALSE, 0x9E3779B97F4A7C15u + c->n);
  g_autofree guint8 *want = guarded (out_size, 0xEE);
  g_autofree guint8 *got1 = guarded (out_size, 0xEE);
  g_autofree guint8 *got4 = guarded (out_size, 0xEE);
  g_autoptr(PiqFormat) format = piq_format_new (c->q->piq);
  g_autoptr(PiqRecipe) recipe = recipe_for (c->scale, c->zp, PIQ_ROUND_NEAREST);
  g_autoptr(GError) error = NULL;
  guint64 shape[1] = { c->n };

  piq_quantizer_quantize_raw (reference, format, recipe, c->f->piq, in, shape, 1, want, out_size,
                              NULL, 0, NULL, 0, NULL, NULL, &error);
  g_assert_no_error (error);

  piquant_quantize (ctx1, in, c->f->dtype, got1, c->q->dtype, c->n, c->scale, c->zp,
                    PIQUANT_NEAREST);
  piquant_quantize (ctx4, in, c->f->dtype, got4, c->q->dtype, c->n, c->scale, c->zp,
                    PIQUANT_NEAREST);
  g_assert_cmpmem (got1, out_size + GUARD, want, out_size + GUARD);
  g_assert_cmpmem (got4, out_size + GUARD, want, out_size + GUARD);
  assert_guard (got1, out_size);
}

static void
test_dequantize (gconstpointer data)
{
  const Case *c = data;
  gsize in_size = bytes_for (c->q, c->n);
  gsize out_size = bytes_for (c->f, c->n);
  g_autofree guint8 *in = g_malloc (MAX (in_size, 1));
  g_autofree gpointer init = make_floats (c->f, c->n, c->scale, TRUE, 0xD1B54A32D192ED03u + c->n);
  g_autofree guint8 *want = guarded (out_size, 0);
  g_autofree guint8 *got1 = guarded (out_size, 0);
  g_autofree guint8 *got4 = guarded (out_size, 0);
  g_autoptr(PiqFormat) format = piq_format_new (c->q->piq);
  g_autoptr(GError) error = NULL;
  guint64 shape[1] = { c->n };
  guint64 s = 0xBF58476D1CE4E5B9u + c->n;

  for (gsize i = 0; i < in_size; i++)
    in[i] = (guint8) next (&s);
  if (c->n * c->q->bits % 8 != 0)   /* unused high bits of a partial last byte are zero */
    in[in_size - 1] &= (guint8) ((1u << (c->n * c->q->bits % 8)) - 1);
  memcpy (want, init, out_size);
  memcpy (got1, init, out_size);
  memcpy (got4, init, out_size);

  piq_quantizer_dequantize_raw (reference, format, c->scale, c->zp, in, in_size, shape, 1,
                                NULL, 0, NULL, 0, c->f->piq, want, out_size,
                                c->add ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, &error);
  g_assert_no_error (error);

  piquant_dequantize (ctx1, in, c->q->dtype, got1, c->f->dtype, c->n, c->scale, c->zp,
                      c->add ? PIQUANT_REDUCE_OP_ADD : PIQUANT_REDUCE_OP_SET);
  piquant_dequantize (ctx4, in, c->q->dtype, got4, c->f->dtype, c->n, c->scale, c->zp,
                      c->add ? PIQUANT_REDUCE_OP_ADD : PIQUANT_REDUCE_OP_SET);
  g_assert_cmpmem (got1, out_size + GUARD, want, out_size + GUARD);
  g_assert_cmpmem (got4, out_size + GUARD, want, out_size + GUARD);
  assert_guard (got1, out_size);
}

/* Ties: piquant rounds x/scale = k + ½ to even, pi-quant away from zero. */
static void
test_quantize_ties (void)
{
  static const float x[] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f };
  static const guint8 even[] = { 8, 10, 10, 8, 6, 6, 12 };   /* zp 8 */
  guint8 q[G_N_ELEMENTS (x)];

  piquant_quantize (ctx1, x, PIQUANT_DTYPE_F32, q, PIQUANT_DTYPE_UINT8, G_N_ELEMENTS (x),
                    1.0f, 8, PIQUANT_NEAREST);
  g_assert_cmpmem (q, sizeof q, even, sizeof even);
}

/* ---- stochastic rounding ---- */

static void
test_stochastic_floor_or_ceil (gconstpointer data)
{
  const Case *c = data;
  gsize n = 4099, out_size = bytes_for (c->q, n);
  guint64 qmax = (1u << c->q->bits) - 1;
  g_autofree gpointer in = make_floats (c->f, n, c->scale, TRUE, 77 + c->q->bits);
  g_autofree guint8 *out = guarded (out_size, 0xEE);
  float inv = 1.0f / c->scale;

  piquant_quantize (ctx4, in, c->f->dtype, out, c->q->dtype, n, c->scale, c->zp,
                    PIQUANT_STOCHASTIC);
  assert_guard (out, out_size);
  for (gsize i = 0; i < n; i++)
    {
      float x = c->f->dtype == PIQUANT_DTYPE_F32 ? ((float *) in)[i]
                                                 : float_of_bf16 (((guint16 *) in)[i]);
      float v = x * inv;   /* exact: the scale is a power of two */
      gint64 lo = CLAMP ((gint64) floorf (v) + c->zp, 0, (gint64) qmax);
      gint64 hi = CLAMP ((gint64) ceilf (v) + c->zp, 0, (gint64) qmax);
      guint shift = (guint) (i * c->q->bits % 8);
      gint64 q = (out[i * c->q->bits / 8] >> shift) & qmax;

      if (q != lo && q != hi)
        g_error ("element %" G_GSIZE_FORMAT ": %g/%g rounded to %" G_GINT64_FORMAT
                 " - %" G_GINT64_FORMAT ", not %" G_GINT64_FORMAT " or %" G_GINT64_FORMAT,
                 i, x, c->scale, q, c->zp, lo - c->zp, hi - c->zp);
    }
}

/* pi-quant shares one threshold between all elements of a call, so a tensor of
 * halves rounds all up or all down; here each element rounds on its own. */
static void
test_stochastic_per_element (void)
{
  const gsize n = 20000;
  g_autofree float *x = g_new (float, n);
  g_autofree guint8 *a = g_malloc (n);
  g_autofree guint8 *b = g_malloc (n);
  piquant_context_t *ctxs[] = { ctx1, ctx4 };

  for (gsize i = 0; i < n; i++)
    x[i] = 0.5f;
  for (gsize k = 0; k < G_N_ELEMENTS (ctxs); k++)
    {
      gsize ones = 0;

      piquant_quantize (ctxs[k], x, PIQUANT_DTYPE_F32, a, PIQUANT_DTYPE_UINT8, n, 1.0f, 0,
                        PIQUANT_STOCHASTIC);
      piquant_quantize (ctxs[k], x, PIQUANT_DTYPE_F32, b, PIQUANT_DTYPE_UINT8, n, 1.0f, 0,
                        PIQUANT_STOCHASTIC);
      for (gsize i = 0; i < n; i++)
        {
          g_assert_cmpuint (a[i], <=, 1);
          ones += a[i];
        }
      /* Binomial(20000, ½): σ ≈ 71; ±1000 is 14σ. */
      g_assert_cmpuint (ones, >, n / 2 - 1000);
      g_assert_cmpuint (ones, <, n / 2 + 1000);
      /* a fresh seed per call */
      g_assert_true (memcmp (a, b, n) != 0);
    }
}

/* ---- compute_quant_params ---- */

typedef struct {
  const char      *name;
  piquant_dtype_t  target;
  float            x[4];
  gsize            n;
  float            scale;
  gint64           zp;
} HandParams;

static const HandParams hand_params[] = {
  /* scale 4/255; zp = 1/(4/255) = 63.75 → 64 */
  { "uint8/mixed-sign",       PIQUANT_DTYPE_UINT8, { 0.5f, -1.0f, 3.0f },      3, (float) (4.0 / 255.0), 64 },
  /* not widened to 0: [2, 6] → scale 4/15; zp = −7.5 → −8 → clamped to 0
   * (piquant's MIN_MAX rule would use [0, 6]) */
  { "uint4/positive",         PIQUANT_DTYPE_UINT4, { 2.0f, 6.0f, 4.0f },       3, (float) (4.0 / 15.0), 0 },
  /* zp = 510 → clamped to 255 */
  { "uint8/negative",         PIQUANT_DTYPE_UINT8, { -10.0f, -5.0f },          2, (float) (5.0 / 255.0), 255 },
  /* scale 1; zp = 2.5 → 3 (ties away; ties-even would give 2) */
  { "uint8/tie",              PIQUANT_DTYPE_UINT8, { -2.5f, 252.5f },          2, 1.0f, 3 },
  /* scale 1; zp = 6.5 → 7 */
  { "uint4/tie",              PIQUANT_DTYPE_UINT4, { 8.5f, -6.5f },            2, 1.0f, 7 },
  /* scale ½; zp = 0.5 → 1 */
  { "uint2/tie",              PIQUANT_DTYPE_UINT2, { -0.25f, 1.25f, 0.0f },    3, 0.5f, 1 },
  /* zp from the binary64 scale 85/255: 148.5 → 149; the binary32 scale would
   * give 148.49… → 148 */
  { "uint8/binary64-scale",   PIQUANT_DTYPE_UINT8, { -49.5f, 35.5f },          2, (float) (85.0 / 255.0), 149 },
  /* [-110.5, 110.5]: 127.5 → 128 (binary32 scale: 127) */
  { "uint8/binary64-scale-2", PIQUANT_DTYPE_UINT8, { 110.5f, -110.5f },        2, (float) (221.0 / 255.0), 128 },
  /* constant data → {1.0, qmax >> 1} */
  { "uint8/constant",         PIQUANT_DTYPE_UINT8, { 3.25f, 3.25f, 3.25f },    3, 1.0f, 127 },
  { "uint4/constant",         PIQUANT_DTYPE_UINT4, { -7.0f, -7.0f },           2, 1.0f, 7 },
  { "uint2/constant",         PIQUANT_DTYPE_UINT2, { 0.0f, -0.0f, 0.0f },      3, 1.0f, 1 },
  { "uint8/single",           PIQUANT_DTYPE_UINT8, { 100.0f },                 1, 1.0f, 127 },
};

static void
test_hand_params (gconstpointer data)
{
  const HandParams *h = data;
  guint16 xb[G_N_ELEMENTS (h->x)];
  float scale = -1.0f;
  gint64 zp = -1;
  gboolean bf16_exact = TRUE;

  piquant_compute_quant_params_float32 (ctx1, h->x, h->n, h->target, &scale, &zp);
  g_assert_cmpfloat (scale, ==, h->scale);
  g_assert_cmpint (zp, ==, h->zp);

  scale = -1.0f;
  zp = -1;
  piquant_compute_quant_params_float32 (ctx4, h->x, h->n, h->target, &scale, &zp);
  g_assert_cmpfloat (scale, ==, h->scale);
  g_assert_cmpint (zp, ==, h->zp);

  for (gsize i = 0; i < h->n; i++)
    {
      xb[i] = bf16_of (h->x[i]);
      bf16_exact &= float_of_bf16 (xb[i]) == h->x[i];
    }
  if (!bf16_exact)
    return;
  scale = -1.0f;
  zp = -1;
  piquant_compute_quant_params_bfloat16 (ctx1, xb, h->n, h->target, &scale, &zp);
  g_assert_cmpfloat (scale, ==, h->scale);
  g_assert_cmpint (zp, ==, h->zp);
}

/* FORMATS.md §1, pi-quant HEAD: binary64, ties away, scale rounded last. */
static void
reference_params (const float *x, gsize n, guint bits, float *scale, gint64 *zp)
{
  double lo = x[0], hi = x[0], qmax = (double) ((1u << bits) - 1), s, z;

  for (gsize i = 1; i < n; i++)
    {
      lo = MIN (lo, (double) x[i]);
      hi = MAX (hi, (double) x[i]);
    }
  if (lo == hi)
    {
      *scale = 1.0f;
      *zp = ((1 << bits) - 1) >> 1;
      return;
    }
  s = (hi - lo) / qmax;
  z = 0.0 - lo / s;
  z = z < 0 ? -floor (-z + 0.5) : floor (z + 0.5);
  *scale = (float) s;
  *zp = (gint64) CLAMP (z, 0.0, qmax);
}

static void
test_random_params (gconstpointer data)
{
  const Case *c = data;
  g_autofree gpointer in = make_floats (c->f, c->n, 0.37f, TRUE, 0x2545F4914F6CDD1Du + c->n);
  g_autofree float *wide = g_new (float, c->n);
  piquant_context_t *ctx0 = piquant_context_create (0);
  piquant_context_t *ctxs[] = { ctx1, ctx4, ctx0 };
  float want_scale;
  gint64 want_zp;

  /* an offset, so that the range does not always contain 0 */
  for (gsize i = 0; i < c->n; i++)
    {
      if (c->f->dtype == PIQUANT_DTYPE_F32)
        wide[i] = ((float *) in)[i] += 5.0f;
      else
        {
          ((guint16 *) in)[i] = bf16_of (float_of_bf16 (((guint16 *) in)[i]) + 5.0f);
          wide[i] = float_of_bf16 (((guint16 *) in)[i]);
        }
    }
  reference_params (wide, c->n, c->q->bits, &want_scale, &want_zp);

  for (gsize k = 0; k < G_N_ELEMENTS (ctxs); k++)
    {
      float scale = -1.0f;
      gint64 zp = -1;

      if (c->f->dtype == PIQUANT_DTYPE_F32)
        piquant_compute_quant_params_float32 (ctxs[k], in, c->n, c->q->dtype, &scale, &zp);
      else
        piquant_compute_quant_params_bfloat16 (ctxs[k], in, c->n, c->q->dtype, &scale, &zp);
      g_assert_cmpfloat (scale, ==, want_scale);
      g_assert_cmpint (zp, ==, want_zp);
    }
  piquant_context_destroy (ctx0);
}

/* ---- invalid input ---- */

#define EXPECT_REJECT(func, call) \
  G_STMT_START { \
    g_test_expect_message ("Piquant", G_LOG_LEVEL_WARNING, "*" func "*nothing was written*"); \
    call; \
    g_test_assert_expected_messages (); \
  } G_STMT_END

static void
test_invalid_quantize (void)
{
  const float x[5] = { 1.0f, 2.0f, 3.0f, 4.0f, 5.0f };
  guint8 out[8], before[8];
  float y[5], y_before[5];

  memset (out, 0x5A, sizeof out);
  memcpy (before, out, sizeof out);

#define Q(ctx, in, din, o, dout, n, s, z, m) \
  EXPECT_REJECT ("piquant_quantize", piquant_quantize (ctx, in, din, o, dout, n, s, z, m)); \
  g_assert_cmpmem (out, sizeof out, before, sizeof before)

  Q (NULL, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_UINT8, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_F32, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_BF16, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, (piquant_dtype_t) 5, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, (piquant_dtype_t) -1, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, (piquant_dtype_t) 99, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, 0, (piquant_round_mode_t) 2);
  Q (ctx1, NULL, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, NULL, PIQUANT_DTYPE_UINT8, 5, 1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, 0.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, -1.0f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, NAN, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, INFINITY, 0, PIQUANT_STOCHASTIC);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, 1e-45f, 0, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, -1, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 5, 1.0f, 256, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT4, 5, 1.0f, 16, PIQUANT_NEAREST);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT2, 5, 1.0f, 4, PIQUANT_STOCHASTIC);
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT2, 5, 1.0f, G_MININT64, PIQUANT_NEAREST);
  /* an element count whose f32 size overflows: rejected before any access */
  Q (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT2, G_MAXSIZE, 1.0f, 0, PIQUANT_NEAREST);
#undef Q

  /* NULL buffers with no elements are fine, as in pi-quant */
  piquant_quantize (ctx1, NULL, PIQUANT_DTYPE_F32, NULL, PIQUANT_DTYPE_UINT4, 0, 1.0f, 0,
                    PIQUANT_NEAREST);

  for (gsize i = 0; i < G_N_ELEMENTS (y); i++)
    y[i] = (float) i;
  memcpy (y_before, y, sizeof y);

#define D(ctx, in, din, o, dout, n, s, z, op) \
  EXPECT_REJECT ("piquant_dequantize", piquant_dequantize (ctx, in, din, o, dout, n, s, z, op)); \
  g_assert_cmpmem (y, sizeof y, y_before, sizeof y_before)

  D (NULL, out, PIQUANT_DTYPE_UINT8, y, PIQUANT_DTYPE_F32, 5, 1.0f, 0, PIQUANT_REDUCE_OP_SET);
  D (ctx1, out, PIQUANT_DTYPE_F32, y, PIQUANT_DTYPE_F32, 5, 1.0f, 0, PIQUANT_REDUCE_OP_SET);
  D (ctx1, out, PIQUANT_DTYPE_UINT8, y, PIQUANT_DTYPE_UINT4, 5, 1.0f, 0, PIQUANT_REDUCE_OP_SET);
  D (ctx1, out, (piquant_dtype_t) 7, y, PIQUANT_DTYPE_F32, 5, 1.0f, 0, PIQUANT_REDUCE_OP_SET);
  D (ctx1, out, PIQUANT_DTYPE_UINT8, y, PIQUANT_DTYPE_F32, 5, 1.0f, 0, (piquant_reduce_op_t) 2);
  D (ctx1, NULL, PIQUANT_DTYPE_UINT8, y, PIQUANT_DTYPE_F32, 5, 1.0f, 0, PIQUANT_REDUCE_OP_ADD);
  D (ctx1, out, PIQUANT_DTYPE_UINT8, NULL, PIQUANT_DTYPE_F32, 5, 1.0f, 0, PIQUANT_REDUCE_OP_SET);
  D (ctx1, out, PIQUANT_DTYPE_UINT8, y, PIQUANT_DTYPE_F32, 5, 0.0f, 0, PIQUANT_REDUCE_OP_SET);
  D (ctx1, out, PIQUANT_DTYPE_UINT8, y, PIQUANT_DTYPE_F32, 5, NAN, 0, PIQUANT_REDUCE_OP_ADD);
  D (ctx1, out, PIQUANT_DTYPE_UINT4, y, PIQUANT_DTYPE_BF16, 5, 1.0f, 16, PIQUANT_REDUCE_OP_SET);
  D (ctx1, out, PIQUANT_DTYPE_UINT8, y, PIQUANT_DTYPE_F32, G_MAXSIZE, 1.0f, 0, PIQUANT_REDUCE_OP_SET);
#undef D
}

static void
test_invalid_params (void)
{
  const float x[3] = { 1.0f, 2.0f, 3.0f };
  const float bad[4][3] = {
    { 1.0f, NAN, 3.0f }, { INFINITY, 1.0f, 2.0f }, { -INFINITY, 1.0f, 2.0f }, { NAN, NAN, NAN },
  };
  const guint16 xb[3] = { 0x3F80, 0x7FC0, 0x4000 };   /* 1, NaN, 2 */
  float scale = 42.0f;
  gint64 zp = 42;

#define P(call) \
  EXPECT_REJECT ("piquant_compute_quant_params", call); \
  g_assert_cmpfloat (scale, ==, 42.0f); \
  g_assert_cmpint (zp, ==, 42)

  P (piquant_compute_quant_params_float32 (NULL, x, 3, PIQUANT_DTYPE_UINT8, &scale, &zp));
  P (piquant_compute_quant_params_float32 (ctx1, NULL, 3, PIQUANT_DTYPE_UINT8, &scale, &zp));
  P (piquant_compute_quant_params_float32 (ctx1, x, 0, PIQUANT_DTYPE_UINT8, &scale, &zp));
  P (piquant_compute_quant_params_float32 (ctx1, x, 3, PIQUANT_DTYPE_F32, &scale, &zp));
  P (piquant_compute_quant_params_float32 (ctx1, x, 3, PIQUANT_DTYPE_BF16, &scale, &zp));
  P (piquant_compute_quant_params_float32 (ctx1, x, 3, (piquant_dtype_t) 5, &scale, &zp));
  P (piquant_compute_quant_params_float32 (ctx1, x, 3, PIQUANT_DTYPE_UINT8, NULL, &zp));
  P (piquant_compute_quant_params_float32 (ctx1, x, 3, PIQUANT_DTYPE_UINT8, &scale, NULL));
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      P (piquant_compute_quant_params_float32 (ctx1, bad[i], 3, PIQUANT_DTYPE_UINT4, &scale, &zp));
      P (piquant_compute_quant_params_float32 (ctx4, bad[i], 3, PIQUANT_DTYPE_UINT4, &scale, &zp));
    }
  P (piquant_compute_quant_params_bfloat16 (ctx1, xb, 3, PIQUANT_DTYPE_UINT2, &scale, &zp));
  P (piquant_compute_quant_params_bfloat16 (ctx1, xb, 0, PIQUANT_DTYPE_UINT2, &scale, &zp));
  P (piquant_compute_quant_params_bfloat16 (ctx1, xb, G_MAXSIZE, PIQUANT_DTYPE_UINT2, &scale, &zp));
#undef P
}

/* With only criticals fatal (G_DEBUG=fatal-criticals, as `make check` runs),
 * bad calls still return to the caller. */
static void
test_invalid_no_abort (void)
{
  if (g_test_subprocess ())
    {
      const float x[2] = { 1.0f, NAN };
      guint8 out[2] = { 7, 7 };
      float scale = 0.0f;
      gint64 zp = 0;

      g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
      piquant_quantize (NULL, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 2, 1.0f, 0,
                        PIQUANT_NEAREST);
      piquant_quantize (ctx1, x, PIQUANT_DTYPE_F32, out, PIQUANT_DTYPE_UINT8, 2, 1.0f, 300,
                        PIQUANT_NEAREST);
      piquant_dequantize (ctx1, NULL, PIQUANT_DTYPE_UINT8, out, PIQUANT_DTYPE_F32, 2, 1.0f, 0,
                          PIQUANT_REDUCE_OP_SET);
      piquant_compute_quant_params_float32 (ctx1, x, 2, PIQUANT_DTYPE_UINT8, &scale, &zp);
      piquant_compute_quant_params_float32 (ctx1, x, 0, PIQUANT_DTYPE_UINT8, &scale, &zp);
      g_print ("returned %d %d %g %d\n", out[0], out[1], scale, (int) zp);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stdout ("*returned 7 7 0 0*");
  g_test_trap_assert_stderr ("*piquant_quantize: the context is NULL*"
                             "*piquant_quantize: zero point 300*"
                             "*piquant_dequantize: the input buffer is NULL*"
                             "*NaN or infinity*"
                             "*0 elements*");
}

/* ---- contexts ---- */

static void
test_contexts (void)
{
  /* 0 = every core; far beyond the quantizer's limit is capped, without a critical */
  piquant_context_t *a = piquant_context_create (0);
  piquant_context_t *b = piquant_context_create (100000);
  piquant_context_t *c = piquant_context_create ((size_t) G_MAXUINT + 2);
  const float x[3] = { -1.0f, 0.0f, 1.0f };
  guint8 qa[3], qb[3], qc[3];

  piquant_quantize (a, x, PIQUANT_DTYPE_F32, qa, PIQUANT_DTYPE_UINT8, 3, 0.5f, 2, PIQUANT_NEAREST);
  piquant_quantize (b, x, PIQUANT_DTYPE_F32, qb, PIQUANT_DTYPE_UINT8, 3, 0.5f, 2, PIQUANT_NEAREST);
  piquant_quantize (c, x, PIQUANT_DTYPE_F32, qc, PIQUANT_DTYPE_UINT8, 3, 0.5f, 2, PIQUANT_NEAREST);
  g_assert_cmpuint (qa[0], ==, 0);
  g_assert_cmpuint (qa[1], ==, 2);
  g_assert_cmpuint (qa[2], ==, 4);
  g_assert_cmpmem (qa, 3, qb, 3);
  g_assert_cmpmem (qa, 3, qc, 3);
  piquant_context_destroy (a);
  piquant_context_destroy (b);
  piquant_context_destroy (c);
  piquant_context_destroy (NULL);
}

/* ---- registration ---- */

static Case *
new_case (const Dtype *f, const Dtype *q, gsize n, float scale, gboolean add)
{
  Case *c = g_new0 (Case, 1);

  c->f = f;
  c->q = q;
  c->n = n;
  c->scale = scale;
  c->zp = (gint64) (((1u << q->bits) - 1) / 2 + 1);
  c->add = add;
  return c;
}

int
main (int argc, char **argv)
{
  static const float scales[] = { 0.25f, 0.175f };
  GPtrArray *cases = g_ptr_array_new_with_free_func (g_free);
  int ret;

  g_test_init (&argc, &argv, NULL);

  ctx1 = piquant_context_create (1);
  ctx4 = piquant_context_create (4);
  reference = piq_quantizer_new ();
  piq_quantizer_set_n_threads (reference, 1);

  for (gsize fi = 0; fi < G_N_ELEMENTS (float_types); fi++)
    for (gsize qi = 0; qi < G_N_ELEMENTS (quant_types); qi++)
      {
        const Dtype *f = &float_types[fi], *q = &quant_types[qi];
        g_autofree char *sto = NULL;
        Case *c;

        for (gsize li = 0; li < G_N_ELEMENTS (lengths); li++)
          for (gsize si = 0; si < G_N_ELEMENTS (scales); si++)
            {
              g_autofree char *path = g_strdup_printf ("/c99/quantize/%s/%s/nearest/scale-%g/n-%" G_GSIZE_FORMAT,
                                                       f->name, q->name, scales[si], lengths[li]);
              c = new_case (f, q, lengths[li], scales[si], FALSE);
              g_ptr_array_add (cases, c);
              g_test_add_data_func (path, c, test_quantize);
            }
        for (gsize li = 0; li < G_N_ELEMENTS (lengths); li++)
          for (int add = 0; add <= 1; add++)
            {
              g_autofree char *path = g_strdup_printf ("/c99/dequantize/%s/%s/%s/n-%" G_GSIZE_FORMAT,
                                                       q->name, f->name, add ? "add" : "set", lengths[li]);
              c = new_case (f, q, lengths[li], 0.175f, add);
              g_ptr_array_add (cases, c);
              g_test_add_data_func (path, c, test_dequantize);
            }
        c = new_case (f, q, BIG_LEN, 0.175f, FALSE);
        g_ptr_array_add (cases, c);
        {
          g_autofree char *p1 = g_strdup_printf ("/c99/quantize/%s/%s/nearest/scale-0.175/n-%u",
                                                 f->name, q->name, BIG_LEN);
          g_autofree char *p2 = g_strdup_printf ("/c99/dequantize/%s/%s/set/n-%u",
                                                 q->name, f->name, BIG_LEN);
          g_test_add_data_func (p1, c, test_quantize);
          g_test_add_data_func (p2, c, test_dequantize);
        }

        c = new_case (f, q, 0, 0.25f, FALSE);
        g_ptr_array_add (cases, c);
        sto = g_strdup_printf ("/c99/quantize/%s/%s/stochastic/floor-or-ceil", f->name, q->name);
        g_test_add_data_func (sto, c, test_stochastic_floor_or_ceil);

        for (gsize li = 1; li < G_N_ELEMENTS (lengths); li++)
          {
            g_autofree char *path = g_strdup_printf ("/c99/compute-params/%s/%s/random/n-%" G_GSIZE_FORMAT,
                                                     f->name, q->name, lengths[li]);
            c = new_case (f, q, lengths[li], 0.0f, FALSE);
            g_ptr_array_add (cases, c);
            g_test_add_data_func (path, c, test_random_params);
          }
        {
          g_autofree char *path = g_strdup_printf ("/c99/compute-params/%s/%s/random/n-%u",
                                                   f->name, q->name, BIG_LEN);
          c = new_case (f, q, BIG_LEN, 0.0f, FALSE);
          g_ptr_array_add (cases, c);
          g_test_add_data_func (path, c, test_random_params);
        }
      }

  g_test_add_func ("/c99/quantize/f32/uint8/nearest/ties-to-even", test_quantize_ties);
  g_test_add_func ("/c99/quantize/f32/uint8/stochastic/per-element", test_stochastic_per_element);
  for (gsize i = 0; i < G_N_ELEMENTS (hand_params); i++)
    {
      g_autofree char *path = g_strdup_printf ("/c99/compute-params/hand/%s", hand_params[i].name);
      g_test_add_data_func (path, &hand_params[i], test_hand_params);
    }
  g_test_add_func ("/c99/invalid/quantize-dequantize", test_invalid_quantize);
  g_test_add_func ("/c99/invalid/compute-params", test_invalid_params);
  g_test_add_func ("/c99/invalid/no-abort", test_invalid_no_abort);
  g_test_add_func ("/c99/contexts", test_contexts);

  ret = g_test_run ();

  piquant_context_destroy (ctx1);
  piquant_context_destroy (ctx4);
  g_object_unref (reference);
  g_ptr_array_unref (cases);
  return ret;
}

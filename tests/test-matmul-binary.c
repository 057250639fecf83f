/* test-matmul-binary.c: the binary activation policy (XNOR-popcount products)
 *
 * The oracle is written from the published definitions (docs/formats.md "Binary",
 * docs/matmul.md "Binary activations"), not from the library's code:
 *
 * - X's rows are binarized here: bit = 1 for x ≥ 0, −0 and NaN, 0 for x < 0; a
 *   block's scale = (Σ |x| over its finite values, binary32, element i into lane
 *   i mod 16, the lanes combined l[i] += l[i + h] for h = 8, 4, 2, 1) / the block's
 *   length in binary32, stored in the scale dtype (f16: nearest even, saturating to
 *   65504 and to the smallest subnormal); per tensor (each row a [1, K] tensor), the
 *   scale is (Σ |x| in binary64) / K rounded to binary32, 1 if that is not a positive
 *   finite number. f64 X is rounded to binary32 for the block rule.
 * - the weights' bits and scales are read from the quantized tensor's bytes.
 * - per output: acc (binary64, from +0) += ((double) sx · (double) sw) · (agree −
 *   disagree) per block in order; (float) acc, a NaN the default quiet NaN;
 *   + bias in binary32; SET, or ADD in binary32 (binary64 for f64 outputs).
 *
 * Outputs must match byte for byte for every thread count and SIMD level.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test-oracle.h"

static guint64 rng_state = 0x3243f6a8885a308dull;

static guint64
rnd (void)
{
  guint64 z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Per-tensor binary formats refuse non-finite data (quantize derives the scale
 * from all of it); the others take NaN and infinities. */
static gboolean finite_only;

static double
value (guint64 i)
{
  guint64 r = rnd ();
  switch (finite_only && r % 23 < 4 ? 4 : r % 23)
    {
    case 0:  return 0.0;
    case 1:  return -0.0;
    case 2:  return i % 5 == 0 ? NAN : 1.5;
    case 3:  return i % 7 == 0 ? -INFINITY : -2.0;
    default: return ((double) (r >> 11) / 9007199254740992.0 - 0.5) * ((r >> 3) % 4 == 0 ? 40.0 : 2.0);
    }
}

static gsize
fsize (PiqDtype dt)
{
  return o_dtype_bits (dt) / 8;
}

typedef struct {
  const char *name;
  PiqFormat  *f;
  int         gran;     /* 0 tensor, 1 channel 0, 2 block */
  guint64     block;
  PiqDtype    sdt;
} Fmt;

static Fmt fmts[6];

static void
fmts_init (void)
{
  g_autoptr(GError) error = NULL;

  fmts[0] = (Fmt) { "binary-preset", piq_format_new_preset ("binary", &error), 2, 128, PIQ_DTYPE_F32 };
  g_assert_no_error (error);
  fmts[1] = (Fmt) { "block40-f32", piq_format_new_per_block (PIQ_DTYPE_BINARY, 40, PIQ_DTYPE_F32), 2, 40, PIQ_DTYPE_F32 };
  fmts[2] = (Fmt) { "block64-f16", piq_format_new_per_block (PIQ_DTYPE_BINARY, 64, PIQ_DTYPE_F16), 2, 64, PIQ_DTYPE_F16 };
  fmts[3] = (Fmt) { "block512-f32", piq_format_new_per_block (PIQ_DTYPE_BINARY, 512, PIQ_DTYPE_F32), 2, 512, PIQ_DTYPE_F32 };
  fmts[4] = (Fmt) { "channel0", piq_format_new_per_channel (PIQ_DTYPE_BINARY, 0), 1, 0, PIQ_DTYPE_F32 };
  fmts[5] = (Fmt) { "tensor", piq_format_new (PIQ_DTYPE_BINARY), 0, 0, PIQ_DTYPE_F32 };
}

static float
store_scale (PiqDtype sdt, float s)
{
  guint16 h;
  if (sdt == PIQ_DTYPE_F32)
    return s;
  h = o_f32_to_f16 (s);
  if ((h & 0x7fff) >= 0x7c00)
    h = 0x7bff;
  else if ((h & 0x7fff) == 0)
    h = 0x0001;
  return o_f16_to_f32 (h);
}

/* Block length along K. */
static guint64
blen (const Fmt *f, guint64 K)
{
  return f->gran == 2 ? MIN (f->block, K) : K;
}

/* One row of X (dtype dt) binarized: bits[k] and scales[b]. */
static void
binarize_row (const Fmt *f, PiqDtype dt, const guint8 *x, guint64 K, guint8 *bits, float *scales)
{
  guint64 B = blen (f, K), nb = (K + B - 1) / B;

  for (guint64 k = 0; k < K; k++)
    bits[k] = !(o_read_float (dt, x, k) < 0);
  if (f->gran == 0)
    {
      double sum = 0;
      float s;
      for (guint64 k = 0; k < K; k++)
        sum += fabs (o_read_float (dt, x, k));
      s = (float) (sum / (double) K);
      scales[0] = s > 0 && isfinite (s) ? s : 1.0f;
      return;
    }
  for (guint64 b = 0; b < nb; b++)
    {
      float lanes[16] = { 0 };
      guint64 len = MIN (B, K - b * B);
      for (guint64 i = 0; i < len; i++)
        {
          float v = (float) o_read_float (dt, x, b * B + i);
          if (isfinite (v))
            lanes[i % 16] += fabsf (v);
        }
      for (int h = 8; h >= 1; h /= 2)
        for (int i = 0; i < h; i++)
          lanes[i] += lanes[i + h];
      scales[b] = store_scale (f->sdt, lanes[0] / (float) len);
    }
}

/* The weights' bits [N][K] and scales [N][nb] from the tensor's bytes. */
static void
read_weights (const Fmt *f, PiqTensor *w, guint64 N, guint64 K, guint8 *bits, float *scales)
{
  const guint8 *codes = piq_tensor_get_data (w, NULL);
  guint64 B = blen (f, K), nb = (K + B - 1) / B;
  g_autoptr(GBytes) sb = f->gran == 0 ? NULL : piq_tensor_get_scales (w);
  const guint8 *s = sb != NULL ? g_bytes_get_data (sb, NULL) : NULL;

  for (guint64 i = 0; i < N * K; i++)
    bits[i] = (codes[i / 8] >> (i % 8)) & 1;
  for (guint64 r = 0; r < N; r++)
    for (guint64 b = 0; b < nb; b++)
      {
        guint64 idx = f->gran == 1 ? r : r * nb + b;
        float v;
        if (f->gran == 0)
          v = (float) piq_tensor_get_scale (w);
        else if (f->sdt == PIQ_DTYPE_F16)
          {
            guint16 h;
            memcpy (&h, s + 2 * idx, 2);
            v = o_f16_to_f32 (h);
          }
        else
          memcpy (&v, s + 4 * idx, 4);
        scales[r * nb + b] = v;
      }
}

typedef struct {
  guint64   M, N, K;
  PiqDtype  xdt, ydt;
  gboolean  bias, add;
} Params;

/* Y's expected bytes (from y_old for ADD). */
static guint8 *
oracle (const Fmt *f, const Params *p, const guint8 *x, const guint8 *wbits, const float *wsc,
        const float *bias, const guint8 *y_old)
{
  guint64 K = p->K, B = blen (f, K), nb = (K + B - 1) / B;
  gsize ye = fsize (p->ydt);
  guint8 *y = g_memdup2 (y_old, p->M * p->N * ye);
  guint8 *xb = g_malloc (K);
  float *xs = g_new (float, nb);

  for (guint64 m = 0; m < p->M; m++)
    {
      binarize_row (f, p->xdt, x + m * K * fsize (p->xdt), K, xb, xs);
      for (guint64 n = 0; n < p->N; n++)
        {
          double acc = 0.0;
          float v;
          for (guint64 b = 0; b < nb; b++)
            {
              gint64 c = 0;
              for (guint64 k = b * B; k < MIN (K, (b + 1) * B); k++)
                c += xb[k] == wbits[n * K + k] ? 1 : -1;
              acc += (double) xs[b] * (double) wsc[n * nb + b] * (double) c;
            }
          v = isnan (acc) ? o_f32_from_bits (0x7fc00000u) : (float) acc;
          if (bias != NULL)
            v += bias[n];
          if (p->ydt == PIQ_DTYPE_F64)
            {
              double d = p->add ? o_read_float (p->ydt, y, m * p->N + n) + (double) v : (double) v;
              memcpy (y + (m * p->N + n) * 8, &d, 8);
            }
          else
            o_store_f32 (p->ydt, y, m * p->N + n,
                         p->add ? (float) o_read_float (p->ydt, y, m * p->N + n) + v : v);
        }
    }
  g_free (xb);
  g_free (xs);
  return y;
}

static PiqTensor *
float_tensor (PiqDtype dt, guint64 rows, guint64 cols, gboolean random)
{
  g_autoptr(GError) error = NULL;
  guint64 shape[2] = { rows, cols };
  PiqTensor *t = piq_tensor_new_shaped (dt, shape, 2, &error);
  guint8 *d;

  g_assert_no_error (error);
  d = piq_tensor_get_writable_data (t, NULL);
  for (guint64 i = 0; i < rows * cols; i++)
    o_write_float (dt, d, i, random ? value (i) : (double) ((gint64) (rnd () % 7) - 3) * 0.25);
  return t;
}

typedef struct {
  const Fmt        *f;
  Params            p;
  PiqTensor        *w, *x, *y, *b;
  PiqPackedWeights *pw;
  guint8           *want;
} Case;

static void
case_init (Case *c, const Fmt *f, const Params *p)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) wf = NULL;
  guint64 B = blen (f, p->K), nb = (p->K + B - 1) / B;
  guint8 *wbits = g_malloc (p->N * p->K);
  float *wsc = g_new (float, p->N * nb), *bf = NULL;

  memset (c, 0, sizeof *c);
  finite_only = f->gran == 0;
  c->f = f;
  c->p = *p;
  wf = float_tensor (PIQ_DTYPE_F32, p->N, p->K, TRUE);
  c->w = piq_quantizer_quantize_new (piq_quantizer_get_default (), f->f, NULL, wf, &error);
  g_assert_no_error (error);
  c->pw = piq_packed_weights_new (c->w, PIQ_ACTIVATION_BINARY, &error);
  g_assert_no_error (error);
  c->x = float_tensor (p->xdt, p->M, p->K, TRUE);
  c->y = float_tensor (p->ydt, p->M, p->N, FALSE);
  if (p->bias)
    {
      guint64 s1[1] = { p->N };
      c->b = float_tensor (PIQ_DTYPE_F32, 1, p->N, FALSE);
      g_assert_true (piq_tensor_reshape (c->b, s1, 1, NULL));
      bf = g_new (float, p->N);
      for (guint64 n = 0; n < p->N; n++)
        bf[n] = (float) o_read_float (PIQ_DTYPE_F32, piq_tensor_get_data (c->b, NULL), n) + 0.125f * (float) n;
      for (guint64 n = 0; n < p->N; n++)
        o_write_float (PIQ_DTYPE_F32, piq_tensor_get_writable_data (c->b, NULL), n, bf[n]);
    }
  read_weights (f, c->w, p->N, p->K, wbits, wsc);
  c->want = oracle (f, p, piq_tensor_get_data (c->x, NULL), wbits, wsc, bf, piq_tensor_get_data (c->y, NULL));
  g_free (wbits);
  g_free (wsc);
  g_free (bf);
}

static void
case_clear (Case *c)
{
  g_clear_object (&c->w);
  g_clear_object (&c->x);
  g_clear_object (&c->y);
  g_clear_object (&c->b);
  g_clear_object (&c->pw);
  g_free (c->want);
}

static void
assert_y (const char *what, const Case *c, const guint8 *got, gsize row_stride)
{
  gsize ye = fsize (c->p.ydt), row = c->p.N * ye;

  if (row_stride == 0)
    row_stride = row;
  for (guint64 m = 0; m < c->p.M; m++)
    if (memcmp (c->want + m * row, got + m * row_stride, row) != 0)
      for (guint64 n = 0; n < c->p.N; n++)
        if (memcmp (c->want + m * row + n * ye, got + m * row_stride + n * ye, ye) != 0)
          g_error ("%s (%s, M %" G_GUINT64_FORMAT " N %" G_GUINT64_FORMAT " K %" G_GUINT64_FORMAT
                   ", x %s, y %s, %s%s): y[%" G_GUINT64_FORMAT "][%" G_GUINT64_FORMAT "] is %.9g, the "
                   "oracle gives %.9g", what, c->f->name, c->p.M, c->p.N, c->p.K,
                   o_dtype_name (c->p.xdt), o_dtype_name (c->p.ydt), c->p.add ? "ADD" : "SET",
                   c->p.bias ? ", bias" : "", m, n, o_read_float (c->p.ydt, got + m * row_stride, n),
                   o_read_float (c->p.ydt, c->want + m * row, n));
}

/* Runs the case on a copy of Y. */
static void
run_case (const char *what, PiqQuantizer *q, const Case *c)
{
  g_autoptr(GError) error = NULL;
  guint64 ys[2] = { c->p.M, c->p.N };
  g_autoptr(PiqTensor) y = piq_tensor_new_shaped (c->p.ydt, ys, 2, &error);
  gsize size;
  guint8 *yd = piq_tensor_get_writable_data (y, &size);

  memcpy (yd, piq_tensor_get_data (c->y, NULL), size);
  if (!piq_quantizer_matmul (q, c->x, c->pw, c->b, y, c->p.add ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, &error))
    g_error ("%s: %s", what, error->message);
  assert_y (what, c, yd, 0);
}

static const PiqDtype float_dtypes[] = { PIQ_DTYPE_F32, PIQ_DTYPE_BF16, PIQ_DTYPE_F16, PIQ_DTYPE_F64 };

/* ---- every format: M, K across words, bytes and blocks; X and Y dtypes; SET/ADD; bias ---- */

static void
test_shapes (gconstpointer data)
{
  const Fmt *f = data;
  static const guint64 Ms[] = { 1, 2, 3, 7, 64, 65 };
  static const guint64 Ks[] = { 1, 7, 8, 9, 39, 40, 41, 63, 64, 65, 127, 128, 129, 300, 511, 512, 513, 1000 };
  guint i = 0;

  for (gsize ki = 0; ki < G_N_ELEMENTS (Ks); ki++)
    for (gsize mi = 0; mi < G_N_ELEMENTS (Ms); mi++, i++)
      {
        Params p = { Ms[mi], 1 + (Ks[ki] * 3 + Ms[mi]) % 19, Ks[ki], float_dtypes[i % 4],
                     float_dtypes[(i / 4 + i) % 4], i % 3 != 0, i % 2 == 1 };
        Case c;
        if (p.M * p.K > 20000)
          p.M = 7;
        case_init (&c, f, &p);
        run_case ("shapes", piq_quantizer_get_default (), &c);
        case_clear (&c);
      }
}

/* ---- the same bytes for 1 … 4 threads and every SIMD level ---- */

static void
test_threads (gconstpointer data)
{
  const Fmt *f = data;
  static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_SSE4_2, PIQ_SIMD_LEVEL_AVX2,
                                         PIQ_SIMD_LEVEL_AVX512, PIQ_SIMD_LEVEL_AVX512_VNNI };
  /* 34 M bit products: above the threshold below which a call stays on one thread */
  Params p = { 65, 130, 4000, PIQ_DTYPE_BF16, PIQ_DTYPE_F32, TRUE, TRUE };
  Case c;

  case_init (&c, f, &p);
  for (gsize li = 0; li < G_N_ELEMENTS (levels); li++)
    for (guint t = 1; t <= 4; t++)
      {
        g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
        char what[64];
        piq_quantizer_set_n_threads (qt, t);
        piq_quantizer_set_max_simd_level (qt, levels[li]);
        g_snprintf (what, sizeof what, "%u threads, SIMD level %d", t, levels[li]);
        run_case (what, qt, &c);
      }
  case_clear (&c);
}

/* ---- unaligned X and Y, strided Y rows; nothing written outside Y ---- */

static void
test_layout (void)
{
  const Fmt *f = &fmts[0];

  for (gsize di = 0; di < 4; di++)
    {
      PiqDtype dt = float_dtypes[di];
      Params p = { 7, 9, 333, dt, dt, TRUE, di % 2 == 1 };
      gsize es = fsize (dt), xrow = p.K * es, yrow = p.N * es, ystride = yrow + 3 * es;
      gsize xbytes = p.M * xrow, ybytes = (p.M - 1) * ystride + yrow;
      guint64 xs[2] = { p.M, p.K }, ys[2] = { p.M, p.N };
      guint8 *xmem = g_malloc (xbytes + 64), *ymem = g_malloc (ybytes + 64), *yref = g_malloc (ybytes + 64);
      Case c;

      case_init (&c, f, &p);
      for (gsize off = 1; off <= es; off++)
        {
          g_autoptr(PiqTensor) x = NULL, y = NULL;
          g_autoptr(GError) error = NULL;

          memset (xmem, 0x11, xbytes + 64);
          memcpy (xmem + off, piq_tensor_get_data (c.x, NULL), xbytes);
          x = piq_tensor_new_for_address (dt, xs, 2, (guintptr) (xmem + off), xbytes, 0, FALSE, &error);
          g_assert_no_error (error);
          for (gsize i = 0; i < ybytes + 64; i++)
            ymem[i] = (guint8) (0x5a + i);
          for (guint64 m = 0; m < p.M; m++)
            memcpy (ymem + off + m * ystride, (const guint8 *) piq_tensor_get_data (c.y, NULL) + m * yrow, yrow);
          memcpy (yref, ymem, ybytes + 64);
          y = piq_tensor_new_for_address (dt, ys, 2, (guintptr) (ymem + off), ybytes, ystride, TRUE, &error);
          g_assert_no_error (error);
          if (!piq_quantizer_matmul (piq_quantizer_get_default (), x, c.pw, c.b, y,
                                     p.add ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, &error))
            g_error ("unaligned (offset %zu): %s", off, error->message);
          assert_y ("strided unaligned Y", &c, ymem + off, ystride);
          for (guint64 m = 0; m < p.M; m++)
            memcpy (yref + off + m * ystride, ymem + off + m * ystride, yrow);
          g_assert_cmpmem (yref, ybytes + 64, ymem, ybytes + 64);   /* the gaps and both ends */
        }
      case_clear (&c);
      g_free (xmem);
      g_free (ymem);
      g_free (yref);
    }
}

/* ---- matmul_quantized: a binary A gives the product of the X it was quantized from ---- */

static void
test_quantized (void)
{
  for (gsize fi = 0; fi < G_N_ELEMENTS (fmts); fi++)
    {
      const Fmt *f = &fmts[fi];
      Params p = { 5, 11, 300, PIQ_DTYPE_F32, PIQ_DTYPE_F32, TRUE, fi % 2 == 1 };
      g_autoptr(GError) error = NULL;
      guint64 ys[2] = { p.M, p.N };
      Case c;

      case_init (&c, f, &p);
      for (guint64 m0 = 0; m0 < (f->gran == 0 ? p.M : 1); m0++)
        {
          /* per tensor: A is one row of X, quantized on its own */
          guint64 rows = f->gran == 0 ? 1 : p.M, xs[2] = { rows, p.K };
          g_autoptr(PiqTensor) xr = piq_tensor_new_for_address (PIQ_DTYPE_F32, xs, 2,
                                                                (guintptr) ((const guint8 *) piq_tensor_get_data (c.x, NULL) + m0 * p.K * 4),
                                                                rows * p.K * 4, 0, FALSE, &error);
          g_autoptr(PiqTensor) a = NULL, y = NULL;
          guint8 *yd;
          gsize size;

          g_assert_no_error (error);
          a = piq_quantizer_quantize_new (piq_quantizer_get_default (), f->f, NULL, xr, &error);
          g_assert_no_error (error);
          ys[0] = rows;
          y = piq_tensor_new_shaped (PIQ_DTYPE_F32, ys, 2, &error);
          g_assert_no_error (error);
          yd = piq_tensor_get_writable_data (y, &size);
          memcpy (yd, (const guint8 *) piq_tensor_get_data (c.y, NULL) + m0 * p.N * 4, size);
          if (!piq_quantizer_matmul_quantized (piq_quantizer_get_default (), a, c.pw, c.b, NULL, y,
                                               p.add ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, &error))
            g_error ("%s: %s", f->name, error->message);
          g_assert_cmpmem (c.want + m0 * p.N * 4, size, yd, size);
        }
      case_clear (&c);
    }
}

/* ---- bad input: a GError, Y untouched ---- */

#define expect_fail(what, call, error, y, before) \
  do { gboolean ok_ = (call); expect_fail_ (what, ok_, error, y, before); } while (0)

static void
expect_fail_ (const char *what, gboolean ok, GError *error, PiqTensor *y, const guint8 *before)
{
  if (ok || error == NULL)
    g_error ("%s: no error", what);
  g_assert_cmpmem (piq_tensor_get_data (y, NULL), piq_tensor_get_n_bytes (y), before, piq_tensor_get_n_bytes (y));
}

static void
test_bad_input (void)
{
  PiqQuantizer *q = piq_quantizer_get_default ();
  Params p = { 3, 5, 100, PIQ_DTYPE_F32, PIQ_DTYPE_F32, FALSE, FALSE };
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) wf = float_tensor (PIQ_DTYPE_F32, 5, 100, TRUE);
  g_autofree guint8 *before = NULL;
  Case c;

  case_init (&c, &fmts[0], &p);
  before = g_memdup2 (piq_tensor_get_data (c.y, NULL), piq_tensor_get_n_bytes (c.y));

  /* non-binary weights, and binary weights per input channel, refuse the policy */
  {
    g_autoptr(PiqFormat) nf4 = piq_format_new_preset ("nf4", &error);
    g_autoptr(PiqTensor) w = NULL;
    g_autoptr(PiqPackedWeights) pw = NULL;
    g_autoptr(PiqFormat) ch1 = piq_format_new_per_channel (PIQ_DTYPE_BINARY, 1);
    g_assert_no_error (error);
    w = piq_quantizer_quantize_new (q, nf4, NULL, wf, &error);
    g_assert_no_error (error);
    pw = piq_packed_weights_new (w, PIQ_ACTIVATION_BINARY, &error);
    g_assert_null (pw);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    g_assert_false (piq_packed_weights_supports (nf4, PIQ_ACTIVATION_BINARY, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    g_assert_false (piq_packed_weights_supports (ch1, PIQ_ACTIVATION_BINARY, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    g_assert_true (piq_packed_weights_supports (fmts[0].f, PIQ_ACTIVATION_BINARY, NULL));
    g_assert_true (piq_packed_weights_supports (fmts[0].f, PIQ_ACTIVATION_FLOAT, NULL));
    g_assert_false (piq_packed_weights_supports (fmts[0].f, PIQ_ACTIVATION_DYNAMIC_INT8, NULL));
  }
  /* K mismatch, wrong bias length, wrong output shape */
  {
    g_autoptr(PiqTensor) x = float_tensor (PIQ_DTYPE_F32, 3, 99, TRUE);
    g_autoptr(PiqTensor) bias = float_tensor (PIQ_DTYPE_F32, 1, 4, TRUE);
    g_autoptr(PiqTensor) y2 = float_tensor (PIQ_DTYPE_F32, 2, 5, FALSE);
    guint64 s1[1] = { 4 };
    g_assert_true (piq_tensor_reshape (bias, s1, 1, NULL));
    expect_fail ("K mismatch", piq_quantizer_matmul (q, x, c.pw, NULL, c.y, PIQ_REDUCE_SET, &error), error, c.y, before);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    g_clear_error (&error);
    expect_fail ("bias length", piq_quantizer_matmul (q, c.x, c.pw, bias, c.y, PIQ_REDUCE_ADD, &error), error, c.y, before);
    g_clear_error (&error);
    {
      g_autofree guint8 *b2 = g_memdup2 (piq_tensor_get_data (y2, NULL), piq_tensor_get_n_bytes (y2));
      expect_fail ("output rows", piq_quantizer_matmul (q, c.x, c.pw, NULL, y2, PIQ_REDUCE_SET, &error), error, y2, b2);
      g_clear_error (&error);
    }
  }
  /* per-tensor weights: X is quantized per tensor, which refuses non-finite data */
  {
    Params pt = { 2, 3, 50, PIQ_DTYPE_F32, PIQ_DTYPE_F32, TRUE, FALSE };
    Case t;
    g_autofree guint8 *tb = NULL;
    case_init (&t, &fmts[5], &pt);
    tb = g_memdup2 (piq_tensor_get_data (t.y, NULL), piq_tensor_get_n_bytes (t.y));
    o_write_float (PIQ_DTYPE_F32, piq_tensor_get_writable_data (t.x, NULL), 57, NAN);
    expect_fail ("NaN input, per-tensor weights",
                 piq_quantizer_matmul (q, t.x, t.pw, t.b, t.y, PIQ_REDUCE_SET, &error), error, t.y, tb);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE);
    g_clear_error (&error);
    case_clear (&t);
  }
  /* matmul_quantized: A's blocks differ from the weights', A not binary, a recipe */
  {
    g_autoptr(PiqTensor) a = piq_quantizer_quantize_new (q, fmts[1].f, NULL, c.x, &error);
    g_autoptr(PiqTensor) a8 = NULL;
    g_autoptr(PiqRecipe) r = piq_recipe_new_fixed (1.0);
    g_autoptr(PiqFormat) i8 = piq_format_new (PIQ_DTYPE_INT8);
    g_assert_no_error (error);
    expect_fail ("A's blocks", piq_quantizer_matmul_quantized (q, a, c.pw, NULL, NULL, c.y, PIQ_REDUCE_SET, &error),
                 error, c.y, before);
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    g_clear_error (&error);
    {
      g_autoptr(PiqTensor) xf = float_tensor (PIQ_DTYPE_F32, 3, 100, FALSE);
      a8 = piq_quantizer_quantize_new (q, i8, NULL, xf, &error);
    }
    g_assert_no_error (error);
    expect_fail ("int8 A", piq_quantizer_matmul_quantized (q, a8, c.pw, NULL, NULL, c.y, PIQ_REDUCE_SET, &error),
                 error, c.y, before);
    g_clear_error (&error);
    g_clear_object (&a);
    a = piq_quantizer_quantize_new (q, fmts[0].f, NULL, c.x, &error);
    g_assert_no_error (error);
    expect_fail ("a recipe", piq_quantizer_matmul_quantized (q, a, c.pw, NULL, r, c.y, PIQ_REDUCE_SET, &error),
                 error, c.y, before);
    g_clear_error (&error);
  }
  case_clear (&c);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  fmts_init ();
  for (gsize i = 0; i < G_N_ELEMENTS (fmts); i++)
    {
      g_autofree char *p1 = g_strdup_printf ("/matmul/binary/shapes/%s", fmts[i].name);
      g_autofree char *p2 = g_strdup_printf ("/matmul/binary/threads/%s", fmts[i].name);
      g_test_add_data_func (p1, &fmts[i], test_shapes);
      g_test_add_data_func (p2, &fmts[i], test_threads);
    }
  g_test_add_func ("/matmul/binary/layout", test_layout);
  g_test_add_func ("/matmul/binary/quantized", test_quantized);
  g_test_add_func ("/matmul/binary/bad-input", test_bad_input);
  return g_test_run ();
}

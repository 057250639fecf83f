/* test-matmul.c: Y = X·Wᵀ + bias with quantized weights, both activation policies
 *
 * The oracles below are written from the definition of the two policies (the
 * brief of the matmul feature, docs/matmul.md), not from the library's code:
 *
 * - float policy: Wd = the weights dequantized to f32 by
 *   piq_quantizer_dequantize_new; X widened/rounded to binary32; per output,
 *   sixteen binary32 lanes from +0, product k into lane k % 16 by fmaf, lanes
 *   summed l[i] += l[i + h] for h = 8, 4, 2, 1, a NaN sum the default quiet
 *   NaN (0x7fc00000); + bias in binary32;
 * - dynamic int8: per X row and weight group, d = amax / 127.0f, q =
 *   clamp (nearbyintf (x · (1/d)), ±127), exact integer dots with the weight
 *   codes minus their zero points, summed in double as
 *   acc += ((double) I_g · s_g) · d_g; v = (float) acc; + bias.
 *
 * The weights' integer codes, zero points and scales are read from the
 * tensor's bytes by the layouts of docs/formats.md and ../shared/FORMATS.md,
 * and checked against the dequantized weights before they are used.
 * Outputs must match the oracle byte for byte, for every thread count and
 * SIMD level; the float policy is also checked against the double product
 * within a bound, and dynamic int8 within a bound derived from d/2.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test-oracle.h"

/* ---- random data ---- */

static guint64 rng_state = 0x243f6a8885a308d3ull;

static guint64
rnd (void)
{
  guint64 z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double
unif (void)
{
  return (double) (rnd () >> 11) / 9007199254740992.0;
}

static double
gauss (void)
{
  double u = unif () + 1e-300, v = unif ();
  return sqrt (-2.0 * log (u)) * cos (2.0 * G_PI * v);
}

/* Row m of the extreme X: +1, −1, +1 … (the sum's sign both ways). */
static double
m_sign (guint64 m)
{
  return m % 2 ? -1.0 : 1.0;
}

static const PiqDtype float_dtypes[] = { PIQ_DTYPE_F32, PIQ_DTYPE_BF16, PIQ_DTYPE_F16, PIQ_DTYPE_F64 };

static gsize
fsize (PiqDtype dt)
{
  return o_dtype_bits (dt) / 8;
}

/* A float tensor [dims] of dtype dt with data from gen (row-wise magnitude varies). */
static PiqTensor *
float_tensor (PiqDtype dt, const guint64 *shape, guint n_dims, const double *v)
{
  g_autoptr(GError) error = NULL;
  PiqTensor *t = piq_tensor_new_shaped (dt, shape, n_dims, &error);
  guint64 n;
  guint8 *d;

  g_assert_no_error (error);
  n = piq_tensor_get_n_elements (t);
  d = piq_tensor_get_writable_data (t, NULL);
  for (guint64 i = 0; i < n; i++)
    o_write_float (dt, d, i, v[i]);
  return t;
}

static double *
random_values (guint64 n, guint64 row, double base)
{
  double *v = g_new (double, n == 0 ? 1 : n);
  double mag = base;

  for (guint64 i = 0; i < n; i++)
    {
      if (row != 0 && i % row == 0)
        mag = base * ldexp (1.0, (int) (rnd () % 9) - 4);
      v[i] = gauss () * mag;
      if (rnd () % 29 == 0)
        v[i] = 0.0;
      else if (rnd () % 31 == 0)
        v[i] = -0.0;
    }
  return v;
}

/* ---- format cases ---- */

typedef struct {
  char       name[64];
  PiqFormat *format;
  gboolean   dyn;          /* dynamic int8 must be accepted */
} FmtCase;

static const char *const dyn_presets[] = { "mxint8", "int8_block", "int4_block", "q8_0", "q4_0", NULL };

/* ---- weights ---- */

typedef struct {
  guint64    N, K, G, n_groups;   /* groups per row */
  PiqTensor *w;                   /* quantized [N, K] */
  float     *wd;                  /* dequantized, N·K */
  gint32    *cz;                  /* code − zero point, N·K (dynamic formats) */
  float     *s;                   /* group scales, N·n_groups */
} Weights;

static void
weights_clear (Weights *w)
{
  g_clear_object (&w->w);
  g_clear_pointer (&w->wd, g_free);
  g_clear_pointer (&w->cz, g_free);
  g_clear_pointer (&w->s, g_free);
}

static float
scale_at (PiqDtype sdt, const guint8 *p, guint64 i)
{
  switch (sdt)
    {
    case PIQ_DTYPE_F32:
      {
        float f;
        memcpy (&f, p + 4 * i, 4);
        return f;
      }
    case PIQ_DTYPE_F16:
      {
        guint16 h;
        memcpy (&h, p + 2 * i, 2);
        return o_f16_to_f32 (h);
      }
    case PIQ_DTYPE_E8M0:
      return p[i] == 0xff ? NAN : ldexpf (1.0f, (int) p[i] - 127);
    default:
      g_error ("scale dtype %d", sdt);
    }
  return 0;
}

/* The integer codes, zero points and scales of the weights, from their bytes
 * (docs/formats.md); checked against the dequantized weights. */
static void
weights_ints (Weights *W)
{
  PiqFormat *f = piq_tensor_get_format (W->w);
  PiqDtype dt = piq_format_get_dtype (f);
  PiqGranularity gran = piq_format_get_granularity (f);
  gsize size;
  const guint8 *codes = piq_tensor_get_data (W->w, &size);
  guint64 N = W->N, K = W->K;

  W->cz = g_new (gint32, N * K);
  if (dt == PIQ_DTYPE_Q8_0 || dt == PIQ_DTYPE_Q4_0)
    {
      gsize bb = dt == PIQ_DTYPE_Q8_0 ? 34 : 18;
      W->G = 32;
      W->n_groups = (K + 31) / 32;
      W->s = g_new (float, N * W->n_groups);
      g_assert_cmpuint (size, >=, N * W->n_groups * bb);
      for (guint64 n = 0; n < N; n++)
        for (guint64 g = 0; g < W->n_groups; g++)
          {
            const guint8 *b = codes + (n * W->n_groups + g) * bb;
            guint16 h;
            memcpy (&h, b, 2);
            W->s[n * W->n_groups + g] = o_f16_to_f32 (h);
            for (guint64 j = 0; j < 32 && g * 32 + j < K; j++)
              {
                gint32 c;
                if (dt == PIQ_DTYPE_Q8_0)
                  c = (gint8) b[2 + j];
                else
                  c = (j < 16 ? (b[2 + j] & 15) : (b[2 + j - 16] >> 4)) - 8;
                W->cz[n * K + g * 32 + j] = c;
              }
          }
    }
  else
    {
      guint bits = o_dtype_bits (dt);
      gboolean sgn = o_dtype_info (dt)->is_signed;
      gint64 implied = sgn ? 0 : (gint64) 1 << (bits - 1);
      g_autoptr(GBytes) scales = piq_tensor_get_scales (W->w);
      g_autoptr(GBytes) zps = piq_tensor_get_zero_points (W->w);
      const guint8 *sp = scales ? g_bytes_get_data (scales, NULL) : NULL;
      const guint8 *zp = zps ? g_bytes_get_data (zps, NULL) : NULL;
      PiqDtype sdt = piq_format_get_scale_dtype (f);

      if (gran == PIQ_GRANULARITY_BLOCK)
        W->G = piq_format_get_block_size (f);
      else
        {
          W->G = K;
          if (gran == PIQ_GRANULARITY_CHANNEL)
            g_assert_cmpint (piq_format_get_axis (f), ==, 0);
        }
      W->n_groups = (K + W->G - 1) / W->G;
      W->s = g_new (float, N * W->n_groups);
      for (guint64 n = 0; n < N; n++)
        for (guint64 g = 0; g < W->n_groups; g++)
          {
            guint64 gi = n * W->n_groups + g;
            gint64 z;
            float s;

            if (gran == PIQ_GRANULARITY_TENSOR)
              {
                s = (float) piq_tensor_get_scale (W->w);
                z = piq_tensor_get_zero_point (W->w);
              }
            else
              {
                g_assert_nonnull (sp);
                s = scale_at (sdt, sp, gi);
                if (sdt == PIQ_DTYPE_E8M0)          /* MXINT8: q · 2⁻⁶ */
                  s = ldexpf (s, -6);
                if (piq_format_has_zero_points (f))
                  {
                    gint32 z32;
                    g_assert_nonnull (zp);
                    memcpy (&z32, zp + 4 * gi, 4);
                    z = z32;
                  }
                else
                  z = implied;
              }
            W->s[gi] = s;
            for (guint64 k = g * W->G; k < K && k < (g + 1) * W->G; k++)
              W->cz[n * K + k] = (gint32) ((gint64) o_unpack (dt, codes, n * K + k) - z);
          }
    }

  /* The codes read here must be the values the library dequantizes. */
  for (guint64 n = 0; n < N; n++)
    for (guint64 k = 0; k < K; k++)
      {
        double v = (double) W->cz[n * K + k] * (double) W->s[n * W->n_groups + k / W->G];
        double wd = W->wd[n * K + k];
        if (!(fabs (v - wd) <= ldexp (fabs (wd), -22)))
          g_error ("%s: weight [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]: code − zero point %d × scale %a = %a, "
                   "dequantized %a", piq_format_to_string (f), n, k, W->cz[n * K + k],
                   (double) W->s[n * W->n_groups + k / W->G], v, wd);
      }
}

/* Quantizes values v (random when NULL) of [N, K] with fmt. */
static void
make_weights_from (Weights *W, PiqFormat *fmt, guint64 N, guint64 K, gboolean ints, const double *values)
{
  g_autoptr(GError) error = NULL;
  PiqQuantizer *q = piq_quantizer_get_default ();
  guint64 shape[2] = { N, K };
  g_autofree double *v = values ? NULL : random_values (N * K, K, 0.5);
  g_autoptr(PiqTensor) src = float_tensor (PIQ_DTYPE_F32, shape, 2, values ? values : v);
  g_autoptr(PiqTensor) wd = NULL;

  memset (W, 0, sizeof *W);
  W->N = N;
  W->K = K;
  W->w = piq_quantizer_quantize_new (q, fmt, NULL, src, &error);
  g_assert_no_error (error);
  wd = piq_quantizer_dequantize_new (q, W->w, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  W->wd = g_memdup2 (piq_tensor_get_data (wd, NULL), N * K * 4);
  if (ints)
    weights_ints (W);
}

static void
make_weights (Weights *W, PiqFormat *fmt, guint64 N, guint64 K, gboolean ints)
{
  make_weights_from (W, fmt, N, K, ints, NULL);
}

/* ---- the oracle ---- */

static float
to_f32 (PiqDtype dt, const guint8 *buf, guint64 i)
{
  return (float) o_read_float (dt, buf, i);   /* f64: rounded to nearest */
}

static float
dot_float (const float *x, const float *w, guint64 K)
{
  float l[16];
  for (int i = 0; i < 16; i++)
    l[i] = 0.0f;
  for (guint64 k = 0; k < K; k++)
    l[k % 16] = fmaf (x[k], w[k], l[k % 16]);
  for (int h = 8; h > 0; h /= 2)
    for (int i = 0; i < h; i++)
      l[i] = l[i] + l[i + h];
  return isnan (l[0]) ? NAN : l[0];   /* a NaN sum is the default quiet NaN, 0x7fc00000 */
}

/* Row m's dynamic int8 quantization: q (K) and d per group. */
static void
quantize_row (const float *x, guint64 K, guint64 G, gint8 *q, float *d)
{
  for (guint64 g = 0, k0 = 0; k0 < K; g++, k0 += G)
    {
      guint64 k1 = MIN (K, k0 + G);
      float amax = 0.0f, id;
      gboolean bad = FALSE;

      for (guint64 k = k0; k < k1; k++)
        {
          if (!isfinite (x[k]))
            bad = TRUE;
          else if (fabsf (x[k]) > amax)
            amax = fabsf (x[k]);
        }
      if (bad)
        {
          d[g] = NAN;
          for (guint64 k = k0; k < k1; k++)
            q[k] = 0;
          continue;
        }
      d[g] = amax / 127.0f;
      id = d[g] > 0 ? 1.0f / d[g] : 0.0f;     /* d underflows to 0: codes 0 */
      for (guint64 k = k0; k < k1; k++)
        {
          /* 1/d overflows for a group of tiny subnormals: then x / d. */
          float r = nearbyintf (isinf (id) ? x[k] / d[g] : x[k] * id);
          q[k] = (gint8) (r > 127.0f ? 127 : r < -127.0f ? -127 : (int) r);
        }
    }
}

typedef struct {
  guint64    M, N, K;
  PiqDtype   xdt, ydt;
  PiqReduceOp op;
  gboolean   bias;
  PiqActivation act;
  gboolean   specials;         /* X holds NaN, ±Inf, −0 and subnormals */
} Params;

typedef struct {
  PiqTensor *x, *b, *y;        /* x [M, K], b [N] or NULL, y [M, N] pre-filled */
  float     *xf, *bf;
  guint8    *want;             /* the expected bytes of y */
  double    *vexact;           /* the oracle's v before bias and store, M·N (double of float) */
} Case;

static void
case_clear (Case *c)
{
  g_clear_object (&c->x);
  g_clear_object (&c->b);
  g_clear_object (&c->y);
  g_clear_pointer (&c->xf, g_free);
  g_clear_pointer (&c->bf, g_free);
  g_clear_pointer (&c->want, g_free);
  g_clear_pointer (&c->vexact, g_free);
}

/* The expected Y for x (as f32 xf), the weights, bias and Y's old bytes. */
static void
oracle (const Params *p, const Weights *W, const float *xf, const float *bf, const guint8 *y_old,
        guint8 *want, double *v_out)
{
  guint64 M = p->M, N = p->N, K = p->K;
  gint8 *q = g_new (gint8, K + 1);
  float *d = g_new (float, W->n_groups + 1);

  if (want != y_old)
    memcpy (want, y_old, M * N * fsize (p->ydt));
  for (guint64 m = 0; m < M; m++)
    {
      const float *xr = xf + m * K;
      if (p->act == PIQ_ACTIVATION_DYNAMIC_INT8)
        quantize_row (xr, K, W->G, q, d);
      for (guint64 n = 0; n < N; n++)
        {
          float v;
          guint64 i = m * N + n;

          if (p->act == PIQ_ACTIVATION_FLOAT)
            v = dot_float (xr, W->wd + n * K, K);
          else
            {
              double acc = 0.0;
              for (guint64 g = 0; g < W->n_groups; g++)
                {
                  gint64 I = 0;
                  for (guint64 k = g * W->G; k < K && k < (g + 1) * W->G; k++)
                    I += (gint64) W->cz[n * K + k] * q[k];
                  acc = acc + ((double) I * (double) W->s[n * W->n_groups + g]) * (double) d[g];
                }
              v = (float) acc;
            }
          if (v_out)
            v_out[i] = v;
          if (bf != NULL)
            v = v + bf[n];
          if (p->ydt == PIQ_DTYPE_F64)
            {
              double o = 0;
              if (p->op == PIQ_REDUCE_ADD)
                memcpy (&o, want + 8 * i, 8);
              o = p->op == PIQ_REDUCE_ADD ? o + (double) v : (double) v;
              memcpy (want + 8 * i, &o, 8);
            }
          else
            {
              if (p->op == PIQ_REDUCE_ADD)
                v = (float) o_read_float (p->ydt, want, i) + v;
              o_store_f32 (p->ydt, want, i, v);
            }
        }
    }
  g_free (q);
  g_free (d);
}

/* Builds X, bias, a pre-filled Y and the expected bytes. */
static void
case_init (Case *c, const Params *p, const Weights *W)
{
  guint64 xs[2] = { p->M, p->K }, ys[2] = { p->M, p->N };
  g_autofree double *xv = random_values (p->M * p->K, p->K, 1.0);
  g_autofree double *bv = random_values (p->N, 0, 2.0);
  g_autofree double *yv = random_values (p->M * p->N, 0, 3.0);
  const guint8 *xb, *yb;

  memset (c, 0, sizeof *c);
  if (p->specials)
    for (guint64 m = 0; m < p->M; m++)
      {
        static const double sp[] = { NAN, -NAN, INFINITY, -INFINITY };
        if (m % 5 == 2)     /* all subnormal in f32 and bf16: 1/d overflows */
          for (guint64 k = 0; k < p->K; k++)
            xv[m * p->K + k] *= 1e-39;
        xv[m * p->K + rnd () % p->K] = -0.0;
        xv[m * p->K + rnd () % p->K] = 1e-40;        /* subnormal in f32 */
        if (m % 3 == 1)
          xv[m * p->K + rnd () % p->K] = sp[rnd () % 4];
        if (m % 6 == 4)
          xv[m * p->K + rnd () % p->K] = sp[rnd () % 4];
      }
  c->x = float_tensor (p->xdt, xs, 2, xv);
  c->y = float_tensor (p->ydt, ys, 2, yv);
  xb = piq_tensor_get_data (c->x, NULL);
  c->xf = g_new (float, p->M * p->K + 1);
  for (guint64 i = 0; i < p->M * p->K; i++)
    c->xf[i] = to_f32 (p->xdt, xb, i);
  if (p->bias)
    {
      const guint8 *bb;
      c->b = float_tensor (p->xdt, &p->N, 1, bv);
      bb = piq_tensor_get_data (c->b, NULL);
      c->bf = g_new (float, p->N);
      for (guint64 n = 0; n < p->N; n++)
        c->bf[n] = to_f32 (p->xdt, bb, n);
    }
  yb = piq_tensor_get_data (c->y, NULL);
  c->want = g_malloc (p->M * p->N * fsize (p->ydt));
  c->vexact = g_new (double, p->M * p->N + 1);
  oracle (p, W, c->xf, c->bf, yb, c->want, c->vexact);
}

static const char *
params_str (const Params *p)
{
  static char s[256];
  g_snprintf (s, sizeof s, "M %" G_GUINT64_FORMAT " N %" G_GUINT64_FORMAT " K %" G_GUINT64_FORMAT
              ", x %s, y %s, %s, %s, %s", p->M, p->N, p->K, o_dtype_name (p->xdt), o_dtype_name (p->ydt),
              p->op == PIQ_REDUCE_ADD ? "add" : "set", p->bias ? "bias" : "no bias",
              p->act == PIQ_ACTIVATION_FLOAT ? "float" : "dynamic-int8");
  return s;
}

/* Y's bytes against the expected ones; describes the first difference. */
/* Under dynamic int8 the definition says only "d = NaN": any NaN then matches any
 * NaN; everything else is compared byte for byte. */
static gboolean any_nan_matches;

static void
assert_bytes (const char *what, const Params *p, const guint8 *want, const guint8 *got, guint64 n,
              gsize esize)
{
  if (memcmp (want, got, n * esize) == 0)
    return;
  for (guint64 i = 0; i < n; i++)
    if (memcmp (want + i * esize, got + i * esize, esize) != 0 &&
        !(any_nan_matches && isnan (o_read_float (p->ydt, want, i)) && isnan (o_read_float (p->ydt, got, i))))
      g_error ("%s (%s): y[%" G_GUINT64_FORMAT "][%" G_GUINT64_FORMAT "] is %.9g (0x%" G_GINT64_MODIFIER
               "x), the oracle gives %.9g (0x%" G_GINT64_MODIFIER "x)", what, params_str (p), i / p->N, i % p->N,
               o_read_float (p->ydt, got, i), o_read_float_bits (p->ydt, got, i), o_read_float (p->ydt, want, i),
               o_read_float_bits (p->ydt, want, i));
}

/* Runs the case on a copy of Y with quantizer q; compares to the oracle. */
static void
run_case (const char *what, PiqQuantizer *q, const Params *p, const Case *c, PiqPackedWeights *pw)
{
  g_autoptr(GError) error = NULL;
  gsize size;
  g_autoptr(GBytes) yb = g_bytes_new (piq_tensor_get_data (c->y, NULL), p->M * p->N * fsize (p->ydt));
  guint64 ys[2] = { p->M, p->N };
  g_autoptr(PiqTensor) y = piq_tensor_new_shaped (p->ydt, ys, 2, &error);
  guint8 *yd;

  g_assert_no_error (error);
  yd = piq_tensor_get_writable_data (y, &size);
  memcpy (yd, g_bytes_get_data (yb, NULL), size);
  g_assert_true (piq_quantizer_matmul (q, c->x, pw, c->b, y, p->op, &error));
  g_assert_no_error (error);
  assert_bytes (what, p, c->want, yd, p->M * p->N, fsize (p->ydt));
}

/* The level a quantizer capped at @cap uses on this CPU. */
static PiqSimdLevel
level_in_use (PiqSimdLevel cap)
{
  g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();

  piq_quantizer_set_max_simd_level (qt, cap);
  return piq_quantizer_get_simd_level (qt);
}

/* Whether levels[li] gives a level an earlier cap of @levels gave already (a CPU
 * without it: the run would repeat that one). */
static gboolean
level_seen (const PiqSimdLevel *levels, gsize li)
{
  for (gsize lj = 0; lj < li; lj++)
    if (level_in_use (levels[lj]) == level_in_use (levels[li]))
      return TRUE;
  return FALSE;
}

/* run_case on every SIMD level of @levels this CPU runs, each on 1 … 4 threads;
 * @packed names how pw was packed ("" or "packed on …, ") in the messages. */
static void
run_levels (const char *packed, const PiqSimdLevel *levels, gsize n_levels, const Params *p,
            const Case *c, PiqPackedWeights *pw)
{
  for (gsize li = 0; li < n_levels; li++)
    for (guint t = 1; t <= 4 && !level_seen (levels, li); t++)
      {
        g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
        char what[96];
        piq_quantizer_set_n_threads (qt, t);
        piq_quantizer_set_max_simd_level (qt, levels[li]);
        g_snprintf (what, sizeof what, "%s%u threads, SIMD level %d (%d in use)", packed, t,
                    levels[li], piq_quantizer_get_simd_level (qt));
        run_case (what, qt, p, c, pw);
      }
}

/* ---- (b) independent error bounds ---- */

/* Float policy: |Y − (Σ x·Wd + b)| ≤ K·2⁻²³·Σ|x||Wd| + 2⁻²³·(|Σ x·Wd| + |b|) + 2⁻¹²⁰
 * (each of the K roundings of the sum at most 2⁻²⁴ relative to a partial sum
 * bounded by Σ|x||Wd|, doubled for slack; then the bias add).
 * Dynamic int8: x_k = q_k·d_g + e_k with |e_k| ≤ d_g/2 (round to nearest), up to
 * the rounding of x·(1/d) (relative 2⁻²², counted with the 2⁻²⁰ term); the
 * integer sums are exact and the three double operations per group and the
 * final rounding to f32 are ≤ 2⁻²³ relative. So
 * |Y − (Σ x·Wd + b)| ≤ Σ_g (d_g/2)·Σ_{k∈g}|Wd_k|·(1 + 2⁻¹⁰) + 2⁻²⁰·Σ|x||Wd|
 *                      + 2⁻²²·(|Σ x·Wd| + |b|) + 2⁻¹²⁰. */
static void
check_bounds (const Params *p, const Weights *W, const Case *c, const guint8 *y)
{
  g_assert_cmpint (p->op, ==, PIQ_REDUCE_SET);
  g_assert_cmpint (p->ydt, ==, PIQ_DTYPE_F32);
  for (guint64 m = 0; m < p->M; m++)
    for (guint64 n = 0; n < p->N; n++)
      {
        const float *xr = c->xf + m * p->K, *wr = W->wd + n * p->K;
        double exact = 0, abs_sum = 0, bound, b = c->bf ? c->bf[n] : 0, got;
        float yv;

        for (guint64 k = 0; k < p->K; k++)
          {
            exact += (double) xr[k] * wr[k];
            abs_sum += fabs ((double) xr[k] * wr[k]);
          }
        if (p->act == PIQ_ACTIVATION_FLOAT)
          bound = p->K * ldexp (abs_sum, -23) + ldexp (fabs (exact) + fabs (b), -23) + 0x1p-120;
        else
          {
            bound = ldexp (abs_sum, -20) + ldexp (fabs (exact) + fabs (b), -22) + 0x1p-120;
            for (guint64 g = 0; g < W->n_groups; g++)
              {
                float amax = 0;
                double wsum = 0;
                for (guint64 k = g * W->G; k < p->K && k < (g + 1) * W->G; k++)
                  {
                    amax = MAX (amax, fabsf (xr[k]));
                    wsum += fabs (wr[k]);
                  }
                bound += (amax / 127.0 / 2) * wsum * (1 + 0x1p-10);
              }
          }
        memcpy (&yv, y + 4 * (m * p->N + n), 4);
        got = yv;
        if (!(fabs (got - (exact + b)) <= bound))
          g_error ("bound (%s): y[%" G_GUINT64_FORMAT "][%" G_GUINT64_FORMAT "] = %.9g, exact %.17g, "
                   "error %.3g > bound %.3g", params_str (p), m, n, got, exact + b, fabs (got - (exact + b)), bound);
      }
}

/* ---- the per-format test ---- */

typedef struct { guint64 M, N, K; } Shape;

/* Every M, N and K of the brief, K odd, below, at and past multiples of 16 and 32;
 * { 1, 83, 65 }: one row of X over a whole work item of the dynamic-int8 policy's
 * panels (64 rows, read four panels side by side for one row) and a ragged one. */
static const Shape shapes[] = {
  { 1, 1, 1 }, { 2, 7, 15 }, { 3, 8, 16 }, { 7, 9, 17 }, { 1, 33, 31 }, { 64, 8, 32 },
  { 3, 9, 33 }, { 2, 7, 64 }, { 7, 33, 100 }, { 65, 9, 129 }, { 1, 83, 65 },
};

static gboolean
format_supports (PiqFormat *f, PiqActivation act, gboolean expect, const char *name)
{
  g_autoptr(GError) error = NULL;
  gboolean ok = piq_packed_weights_supports (f, act, &error);

  if (expect)
    {
      g_assert_no_error (error);
      g_assert_true (ok);
    }
  else
    {
      if (ok)
        g_error ("%s: supports() accepts %s", name, act == PIQ_ACTIVATION_FLOAT ? "float" : "dynamic int8");
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    }
  return ok;
}

/* Packs the weights: every format packs for the float policy, per-channel weights
 * along axis 1 included (found by this test: packing refused them once the
 * weights had more than one row). */
static PiqPackedWeights *
pack (const FmtCase *fc, const Weights *W, PiqActivation act)
{
  g_autoptr(GError) error = NULL;
  PiqPackedWeights *pw = piq_packed_weights_new (W->w, act, &error);

  if (pw != NULL && error == NULL)
    return pw;
  g_error ("%s: packing weights [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "] for %s: %s", fc->name,
           W->N, W->K, act == PIQ_ACTIVATION_FLOAT ? "float" : "dynamic int8",
           error ? error->message : "NULL without an error");
  return NULL;
}

static void
test_format (gconstpointer data)
{
  const FmtCase *fc = data;
  PiqQuantizer *q = piq_quantizer_get_default ();
  guint salt = g_str_hash (fc->name);

  format_supports (fc->format, PIQ_ACTIVATION_FLOAT, TRUE, fc->name);
  format_supports (fc->format, PIQ_ACTIVATION_DYNAMIC_INT8, fc->dyn, fc->name);

  for (int ai = 0; ai < 2; ai++)
    {
      PiqActivation act = ai ? PIQ_ACTIVATION_DYNAMIC_INT8 : PIQ_ACTIVATION_FLOAT;

      if (act == PIQ_ACTIVATION_DYNAMIC_INT8 && !fc->dyn)
        {
          /* new() refuses too, with the same error */
          Weights W;
          g_autoptr(GError) error = NULL;
          g_autoptr(PiqPackedWeights) pw = NULL;
          make_weights (&W, fc->format, 3, 32, FALSE);
          pw = piq_packed_weights_new (W.w, act, &error);
          g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
          g_assert_null (pw);
          weights_clear (&W);
          continue;
        }

      for (gsize si = 0; si < G_N_ELEMENTS (shapes); si++)
        {
          Weights W;
          g_autoptr(PiqPackedWeights) pw = NULL;

          make_weights (&W, fc->format, shapes[si].N, shapes[si].K, act == PIQ_ACTIVATION_DYNAMIC_INT8);
          pw = pack (fc, &W, act);
          if (pw == NULL)
            {
              weights_clear (&W);
              continue;
            }
          for (int j = 0; j < 2; j++)
            {
              Params p = { shapes[si].M, shapes[si].N, shapes[si].K,
                           float_dtypes[(si + j + salt) % 4], float_dtypes[(si * 3 + j * 2 + salt / 4) % 4],
                           (si + j + salt / 16) % 2 ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET,
                           (si / 2 + j + salt / 32) % 2, act, FALSE };
              Case c;
              case_init (&c, &p, &W);
              run_case ("default quantizer", q, &p, &c, pw);
              case_clear (&c);
            }
          weights_clear (&W);
        }

      /* (b) bounds, and (c) byte-identical for every thread count and SIMD level */
      {
        Weights W;
        g_autoptr(GError) error = NULL;
        g_autoptr(PiqPackedWeights) pw = NULL;
        Params p = { 65, 33, 129, PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_REDUCE_SET, TRUE, act, FALSE };
        static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2,
                                               PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX_VNNI,
                                               PIQ_SIMD_LEVEL_AVX512 };
        Case c;

        make_weights (&W, fc->format, p.N, p.K, act == PIQ_ACTIVATION_DYNAMIC_INT8);
        pw = pack (fc, &W, act);
        if (pw == NULL)
          {
            weights_clear (&W);
            continue;
          }
        case_init (&c, &p, &W);
        {
          guint64 ys[2] = { p.M, p.N };
          g_autoptr(PiqTensor) y = piq_quantizer_matmul_new (q, c.x, pw, c.b, PIQ_DTYPE_F32, &error);
          g_assert_no_error (error);
          g_assert_cmpuint (piq_tensor_get_n_dims (y), ==, 2);
          g_assert_cmpmem (piq_tensor_get_shape (y, NULL), 16, ys, 16);
          check_bounds (&p, &W, &c, piq_tensor_get_data (y, NULL));
          assert_bytes ("matmul_new", &p, c.want, piq_tensor_get_data (y, NULL), p.M * p.N, 4);
        }
        run_levels ("", levels, G_N_ELEMENTS (levels), &p, &c, pw);
        case_clear (&c);
        weights_clear (&W);
      }

      /* NaN, ±Inf, −0 and subnormals in X, every SIMD level, 1 and 3 threads */
      {
        Weights W;
        Params p = { 7, 9, 33, PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_REDUCE_ADD, TRUE, act, TRUE };
        g_autoptr(PiqPackedWeights) pw = NULL;
        static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2,
                                               PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX_VNNI,
                                               PIQ_SIMD_LEVEL_AVX512 };
        Case c;

        make_weights (&W, fc->format, p.N, p.K, act == PIQ_ACTIVATION_DYNAMIC_INT8);
        pw = pack (fc, &W, act);
        if (pw == NULL)
          {
            weights_clear (&W);
            continue;
          }
        case_init (&c, &p, &W);
        any_nan_matches = act == PIQ_ACTIVATION_DYNAMIC_INT8;
        for (gsize li = 0; li < G_N_ELEMENTS (levels); li++)
          for (guint t = 1; t <= 3 && !level_seen (levels, li); t += 2)
            {
              g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
              char what[64];
              piq_quantizer_set_n_threads (qt, t);
              piq_quantizer_set_max_simd_level (qt, levels[li]);
              g_snprintf (what, sizeof what, "special X, %u threads, SIMD level %d", t, levels[li]);
              run_case (what, qt, &p, &c, pw);
            }
        any_nan_matches = FALSE;
        case_clear (&c);
        weights_clear (&W);
      }
    }
}

/* ---- (c) larger products, where the work is split over threads ----
 * N = 335 is 7 panels of the float GEMM (the last one 47 rows): on 2 and 3 threads
 * the last round's panel is split by rows of X (2 and 3 parts of 130 rows), on 4 the
 * rows of X are split for every panel. The dynamic-int8 policy's K = 264 puts
 * 130 · 264 elements of X past PIQ_PARALLEL_MIN_ELEMENTS, so its rows are widened
 * from bf16 and quantized on the threads. */

static void
test_threads (gconstpointer data)
{
  const FmtCase *fc = data;
  static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2,
                                         PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX_VNNI,
                                         PIQ_SIMD_LEVEL_AVX512 };

  for (int ai = 0; ai < 2; ai++)
    {
      PiqActivation act = ai ? PIQ_ACTIVATION_DYNAMIC_INT8 : PIQ_ACTIVATION_FLOAT;
      Params p = { 130, 335, ai ? 264 : 200, ai ? PIQ_DTYPE_BF16 : PIQ_DTYPE_F32,
                   ai ? PIQ_DTYPE_F32 : PIQ_DTYPE_F16,
                   ai ? PIQ_REDUCE_SET : PIQ_REDUCE_ADD, TRUE, act, FALSE };
      g_autoptr(PiqPackedWeights) pw = NULL;
      Weights W;
      Case c;

      if (ai && !fc->dyn)
        continue;
      make_weights (&W, fc->format, p.N, p.K, ai);
      case_init (&c, &p, &W);
      /* packed on 1 and on 3 threads (the default quantizer's): the dynamic-int8
       * policy's passes over the rows split at rows 112 and 224, across panels */
      for (guint pt = 1; pt <= 3; pt += 2)
        {
          PiqQuantizer *dq = piq_quantizer_get_default ();
          guint was = piq_quantizer_get_n_threads (dq);
          piq_quantizer_set_n_threads (dq, pt);
          g_clear_object (&pw);
          pw = pack (fc, &W, act);
          piq_quantizer_set_n_threads (dq, was);
          if (pw == NULL)
            break;
          {
            char packed[32];
            g_snprintf (packed, sizeof packed, "packed on %u, ", pt);
            run_levels (packed, levels, G_N_ELEMENTS (levels), &p, &c, pw);
          }
        }
      g_clear_object (&pw);
      case_clear (&c);
      weights_clear (&W);
    }
}

/* ---- (d) unaligned X and Y, strided Y rows; (e) N-D X ---- */

static void
test_layout (gconstpointer data)
{
  const FmtCase *fc = data;
  PiqQuantizer *q = piq_quantizer_get_default ();

  for (int ai = 0; ai < 2; ai++)
    for (gsize di = 0; di < 4; di++)
      {
        PiqActivation act = ai ? PIQ_ACTIVATION_DYNAMIC_INT8 : PIQ_ACTIVATION_FLOAT;
        PiqDtype dt = float_dtypes[di];
        Params p = { 7, 9, 33, dt, dt, di % 2 ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, TRUE, act, FALSE };
        Weights W;
        Case c;
        g_autoptr(GError) error = NULL;
        g_autoptr(PiqPackedWeights) pw = NULL;
        gsize es = fsize (dt), xrow = p.K * es, yrow = p.N * es, ystride = yrow + 3 * es;
        gsize off, xbytes = p.M * xrow, ybytes = (p.M - 1) * ystride + yrow;
        guint8 *xmem, *ymem, *yref;
        guint64 xs[2] = { p.M, p.K }, ys[2] = { p.M, p.N };

        if (ai && !fc->dyn)
          continue;
        make_weights (&W, fc->format, p.N, p.K, ai);
        pw = piq_packed_weights_new (W.w, act, &error);
        g_assert_no_error (error);
        case_init (&c, &p, &W);

        /* an odd byte offset if the library takes it, else one element */
        xmem = g_malloc (xbytes + 64);
        ymem = g_malloc (ybytes + 64);
        yref = g_malloc (ybytes + 64);
        for (off = 1; off <= es; off = off == 1 ? es : off + 1)
          {
            g_autoptr(PiqTensor) x = NULL, y = NULL;
            g_autoptr(GError) e2 = NULL;

            memset (xmem, 0x11, xbytes + 64);
            memcpy (xmem + off, piq_tensor_get_data (c.x, NULL), xbytes);
            x = piq_tensor_new_for_address (dt, xs, 2, (guintptr) (xmem + off), xbytes, 0, FALSE, &e2);
            g_assert_no_error (e2);
            /* strided Y: rows ystride apart, the gaps hold a canary */
            for (gsize i = 0; i < ybytes + 64; i++)
              ymem[i] = (guint8) (0x5a + i);
            for (guint64 m = 0; m < p.M; m++)
              memcpy (ymem + off + m * ystride, (const guint8 *) piq_tensor_get_data (c.y, NULL) + m * yrow, yrow);
            memcpy (yref, ymem, ybytes + 64);
            y = piq_tensor_new_for_address (dt, ys, 2, (guintptr) (ymem + off), ybytes, ystride, TRUE, &e2);
            g_assert_no_error (e2);
            if (!piq_quantizer_matmul (q, x, pw, c.b, y, p.op, &e2))
              g_error ("unaligned (offset %zu): %s", off, e2->message);
            for (guint64 m = 0; m < p.M; m++)
              {
                assert_bytes ("strided unaligned Y row", &p, c.want + m * yrow, ymem + off + m * ystride, p.N, es);
                memcpy (yref + off + m * ystride, ymem + off + m * ystride, yrow);
              }
            /* nothing else written: the gaps and both ends */
            g_assert_cmpmem (yref, ybytes + 64, ymem, ybytes + 64);
            if (off == es)
              break;
          }
        g_free (xmem);
        g_free (ymem);
        g_free (yref);

        /* (e) X [2, 3, K]... as M = 6 rows: X [2, 3, K] → Y [2, 3, N] */
        {
          Params p6 = { 6, 5, 17, dt, dt, PIQ_REDUCE_SET, FALSE, act, FALSE };
          Weights W6;
          Case c6;
          g_autoptr(PiqPackedWeights) pw6 = NULL;
          g_autoptr(PiqTensor) x3 = NULL, y3 = NULL, y3n = NULL;
          guint64 xs3[3] = { 2, 3, 17 }, ys3[3] = { 2, 3, 5 };

          make_weights (&W6, fc->format, p6.N, p6.K, ai);
          pw6 = piq_packed_weights_new (W6.w, act, &error);
          g_assert_no_error (error);
          case_init (&c6, &p6, &W6);
          x3 = piq_tensor_new_shaped (dt, xs3, 3, &error);
          g_assert_no_error (error);
          memcpy (piq_tensor_get_writable_data (x3, NULL), piq_tensor_get_data (c6.x, NULL), 6 * 17 * es);
          y3 = piq_tensor_new_shaped (dt, ys3, 3, &error);
          g_assert_no_error (error);
          g_assert_true (piq_quantizer_matmul (q, x3, pw6, NULL, y3, PIQ_REDUCE_SET, &error));
          g_assert_no_error (error);
          assert_bytes ("X [2, 3, K]", &p6, c6.want, piq_tensor_get_data (y3, NULL), 30, es);
          y3n = piq_quantizer_matmul_new (q, x3, pw6, NULL, dt, &error);
          g_assert_no_error (error);
          g_assert_cmpuint (piq_tensor_get_n_dims (y3n), ==, 3);
          g_assert_cmpmem (piq_tensor_get_shape (y3n, NULL), 24, ys3, 24);
          g_assert_cmpint (piq_tensor_get_dtype (y3n), ==, dt);
          assert_bytes ("matmul_new X [2, 3, K]", &p6, c6.want, piq_tensor_get_data (y3n, NULL), 30, es);
          case_clear (&c6);
          weights_clear (&W6);
        }
        case_clear (&c);
        weights_clear (&W);
      }
}

/* ---- (f) bad input ---- */

static void
expect_fail (PiqTensor *x, PiqPackedWeights *pw, PiqTensor *b, PiqTensor *y, PiqReduceOp op,
             GQuark domain, int code, const char *what)
{
  g_autoptr(GError) error = NULL;
  gsize size;
  const guint8 *d = piq_tensor_get_data (y, &size);
  g_autofree guint8 *before = g_memdup2 (d, size);
  gboolean ok = piq_quantizer_matmul (piq_quantizer_get_default (), x, pw, b, y, op, &error);

  if (ok)
    g_error ("%s: accepted", what);
  if (error == NULL || error->domain != domain || error->code != code)
    g_error ("%s: expected error code %d, got %s (%d)", what, code, error ? error->message : "none",
             error ? error->code : -1);
  g_assert_cmpmem (before, size, piq_tensor_get_data (y, NULL), size);
}

static PiqTensor *
zeros (PiqDtype dt, guint64 a, guint64 b, guint n_dims)
{
  g_autoptr(GError) error = NULL;
  guint64 s[2] = { a, b };
  PiqTensor *t = piq_tensor_new_shaped (dt, s, n_dims, &error);
  g_assert_no_error (error);
  memset (piq_tensor_get_writable_data (t, NULL), 0x3c, piq_tensor_get_n_bytes (t));
  return t;
}

static void
test_bad_input (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) fmt = piq_format_new (PIQ_DTYPE_INT8);
  Weights W;
  g_autoptr(PiqPackedWeights) pw = NULL;
  g_autoptr(PiqTensor) x = zeros (PIQ_DTYPE_F32, 4, 17, 2);
  g_autoptr(PiqTensor) y = zeros (PIQ_DTYPE_F32, 4, 9, 2);
  g_autoptr(PiqTensor) b = zeros (PIQ_DTYPE_F32, 9, 1, 1);

  make_weights (&W, fmt, 9, 17, FALSE);
  pw = piq_packed_weights_new (W.w, PIQ_ACTIVATION_FLOAT, &error);
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_matmul (piq_quantizer_get_default (), x, pw, b, y, PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);

  {
    g_autoptr(PiqTensor) x16 = zeros (PIQ_DTYPE_F32, 4, 16, 2);
    expect_fail (x16, pw, b, y, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_SIZE, "K mismatch");
  }
  {
    g_autoptr(PiqTensor) y8 = zeros (PIQ_DTYPE_F32, 4, 8, 2);
    g_autoptr(PiqTensor) y5 = zeros (PIQ_DTYPE_F32, 5, 9, 2);
    g_autoptr(PiqTensor) y1 = zeros (PIQ_DTYPE_F32, 36, 1, 1);
    expect_fail (x, pw, b, y8, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_SIZE, "Y with N − 1 columns");
    expect_fail (x, pw, b, y5, PIQ_REDUCE_ADD, PIQ_ERROR, PIQ_ERROR_SIZE, "Y with M + 1 rows");
    expect_fail (x, pw, b, y1, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_SIZE, "Y 1-D of M·N elements");
  }
  {
    g_autoptr(PiqTensor) b8 = zeros (PIQ_DTYPE_F32, 8, 1, 1);
    g_autoptr(PiqTensor) b10 = zeros (PIQ_DTYPE_F32, 10, 1, 1);
    g_autoptr(PiqTensor) b2d = zeros (PIQ_DTYPE_F32, 1, 9, 2);
    g_autoptr(PiqTensor) bi = zeros (PIQ_DTYPE_INT8, 9, 1, 1);
    expect_fail (x, pw, b8, y, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_SIZE, "bias of N − 1");
    expect_fail (x, pw, b10, y, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_SIZE, "bias of N + 1");
    expect_fail (x, pw, b2d, y, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_SIZE, "bias [1, N]");
    expect_fail (x, pw, bi, y, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "int8 bias");
  }
  {
    /* Y over X's memory: [4, 9] f32 at the start of X's [4, 17] */
    guint8 *mem = g_malloc0 (4 * 17 * 4);
    guint64 xs[2] = { 4, 17 }, ys[2] = { 4, 9 };
    g_autoptr(PiqTensor) xa = piq_tensor_new_for_address (PIQ_DTYPE_F32, xs, 2, (guintptr) mem, 4 * 17 * 4, 0, TRUE, &error);
    g_autoptr(PiqTensor) ya = NULL, yb = NULL;
    g_assert_no_error (error);
    ya = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) (mem + 8), 4 * 9 * 4, 0, TRUE, &error);
    g_assert_no_error (error);
    expect_fail (xa, pw, NULL, ya, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_OVERLAP, "Y overlapping X");
    /* and over the bias */
    yb = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) mem, 4 * 9 * 4, 0, TRUE, &error);
    g_assert_no_error (error);
    {
      guint64 bs = 9;
      g_autoptr(PiqTensor) ba = piq_tensor_new_for_address (PIQ_DTYPE_F32, &bs, 1, (guintptr) (mem + 4 * 30), 36, 0, FALSE, &error);
      g_assert_no_error (error);
      expect_fail (x, pw, ba, yb, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_OVERLAP, "Y overlapping the bias");
    }
    g_clear_object (&xa);
    g_clear_object (&ya);
    g_clear_object (&yb);
    g_free (mem);
  }
  {
    g_autoptr(PiqTensor) xi = zeros (PIQ_DTYPE_INT8, 4, 17, 2);
    g_autoptr(PiqTensor) yi = zeros (PIQ_DTYPE_INT32, 4, 9, 2);
    g_autoptr(PiqTensor) xq = NULL;
    expect_fail (xi, pw, b, y, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "int8 X");
    expect_fail (x, pw, b, yi, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "int32 Y");
    xq = piq_quantizer_quantize_new (piq_quantizer_get_default (), fmt, NULL, x, &error);
    g_assert_no_error (error);
    expect_fail (xq, pw, b, y, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "quantized X");
  }
  {
    guint8 *mem = g_malloc0 (4 * 9 * 4);
    guint64 ys[2] = { 4, 9 };
    g_autoptr(PiqTensor) yr = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) mem, 4 * 9 * 4, 0, FALSE, &error);
    g_assert_no_error (error);
    expect_fail (x, pw, b, yr, PIQ_REDUCE_SET, PIQ_ERROR, PIQ_ERROR_READ_ONLY, "read-only Y");
    g_clear_object (&yr);
    g_free (mem);
  }
  /* weights that cannot be packed */
  {
    g_autoptr(PiqTensor) wf = zeros (PIQ_DTYPE_F32, 9, 17, 2);
    g_autoptr(PiqFormat) f8 = piq_format_new (PIQ_DTYPE_INT8);
    g_autoptr(PiqTensor) w1 = NULL, w3 = NULL, w0 = NULL, wz = NULL;
    g_autoptr(PiqPackedWeights) p = NULL;
    guint64 s1 = 17, s3[3] = { 2, 9, 17 }, s0[2] = { 0, 17 }, sz[2] = { 9, 0 };
    g_autoptr(GError) e = NULL;

    p = piq_packed_weights_new (wf, PIQ_ACTIVATION_FLOAT, &e);
    g_assert_error (e, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_assert_null (p);
    g_clear_error (&e);

    w1 = piq_tensor_new_quantized (f8, &s1, 1, &e);
    g_assert_no_error (e);
    p = piq_packed_weights_new (w1, PIQ_ACTIVATION_FLOAT, &e);
    g_assert_error (e, PIQ_ERROR, PIQ_ERROR_SIZE);
    g_assert_null (p);
    g_clear_error (&e);

    w3 = piq_tensor_new_quantized (f8, s3, 3, &e);
    g_assert_no_error (e);
    p = piq_packed_weights_new (w3, PIQ_ACTIVATION_DYNAMIC_INT8, &e);
    g_assert_error (e, PIQ_ERROR, PIQ_ERROR_SIZE);
    g_assert_null (p);
    g_clear_error (&e);

    w0 = piq_tensor_new_quantized (f8, s0, 2, &e);
    g_assert_no_error (e);
    p = piq_packed_weights_new (w0, PIQ_ACTIVATION_FLOAT, &e);
    g_assert_error (e, PIQ_ERROR, PIQ_ERROR_EMPTY);
    g_assert_null (p);
    g_clear_error (&e);

    wz = piq_tensor_new_quantized (f8, sz, 2, &e);
    g_assert_no_error (e);
    p = piq_packed_weights_new (wz, PIQ_ACTIVATION_DYNAMIC_INT8, &e);
    g_assert_error (e, PIQ_ERROR, PIQ_ERROR_EMPTY);
    g_assert_null (p);
  }
  weights_clear (&W);
}

/* ---- (g) properties ---- */

static void
test_properties (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) fmt = piq_format_new_preset ("q4_0", &error);
  Weights W;
  g_autoptr(PiqPackedWeights) pf = NULL, pd = NULL;
  g_autoptr(PiqTensor) again = NULL;
  PiqQuantizer *q = piq_quantizer_get_default ();

  g_assert_no_error (error);
  make_weights (&W, fmt, 7, 65, TRUE);
  pf = piq_packed_weights_new (W.w, PIQ_ACTIVATION_FLOAT, &error);
  g_assert_no_error (error);
  pd = piq_packed_weights_new (W.w, PIQ_ACTIVATION_DYNAMIC_INT8, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (piq_packed_weights_get_n_out (pf), ==, 7);
  g_assert_cmpuint (piq_packed_weights_get_n_in (pf), ==, 65);
  g_assert_cmpuint (piq_packed_weights_get_n_out (pd), ==, 7);
  g_assert_cmpuint (piq_packed_weights_get_n_in (pd), ==, 65);
  g_assert_cmpint (piq_packed_weights_get_activation (pf), ==, PIQ_ACTIVATION_FLOAT);
  g_assert_cmpint (piq_packed_weights_get_activation (pd), ==, PIQ_ACTIVATION_DYNAMIC_INT8);
  g_assert_true (piq_packed_weights_get_weights (pf) == W.w);
  g_assert_true (piq_packed_weights_get_weights (pd) == W.w);
  /* the float policy decodes on the fly: no copy (the scales are not double-quantized);
   * dynamic int8 keeps the codes and scales it needs */
  g_assert_cmpuint (piq_packed_weights_get_n_bytes (pf), ==, 0);
  g_assert_cmpuint (piq_packed_weights_get_n_bytes (pd), >, 0);
  {
    guint64 no, ni;
    PiqActivation a;
    PiqTensor *wt = NULL;
    g_object_get (pd, "n-out", &no, "n-in", &ni, "activation", &a, "weights", &wt, NULL);
    g_assert_cmpuint (no, ==, 7);
    g_assert_cmpuint (ni, ==, 65);
    g_assert_cmpint (a, ==, PIQ_ACTIVATION_DYNAMIC_INT8);
    g_assert_true (wt == W.w);
    g_object_unref (wt);
  }
  /* the source stays usable, unchanged */
  again = piq_quantizer_dequantize_new (q, W.w, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (piq_tensor_get_data (again, NULL), 7 * 65 * 4, W.wd, 7 * 65 * 4);
  /* matmul_new: [M, N] of the dtype asked, for each float dtype */
  for (gsize di = 0; di < 4; di++)
    {
      guint64 xs[2] = { 3, 65 }, ys[2] = { 3, 7 };
      g_autoptr(PiqTensor) x = zeros (PIQ_DTYPE_F32, 3, 65, 2);
      g_autoptr(PiqTensor) y = piq_quantizer_matmul_new (q, x, pd, NULL, float_dtypes[di], &error);
      g_autoptr(PiqTensor) yi = NULL;
      g_assert_no_error (error);
      g_assert_cmpint (piq_tensor_get_dtype (y), ==, float_dtypes[di]);
      g_assert_cmpuint (piq_tensor_get_n_dims (y), ==, 2);
      g_assert_cmpmem (piq_tensor_get_shape (y, NULL), 16, ys, 16);
      (void) xs;
      yi = piq_quantizer_matmul_new (q, x, pd, NULL, PIQ_DTYPE_INT8, &error);
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
      g_assert_null (yi);
      g_clear_error (&error);
    }
  /* the packed weights outlive the caller's reference to the source */
  {
    PiqTensor *w = g_steal_pointer (&W.w);
    g_autoptr(PiqTensor) x = zeros (PIQ_DTYPE_F32, 2, 65, 2);
    g_autoptr(PiqTensor) y = NULL;
    g_object_unref (w);
    y = piq_quantizer_matmul_new (q, x, pf, NULL, PIQ_DTYPE_F32, &error);
    g_assert_no_error (error);
  }
  weights_clear (&W);
}

/* ---- (h) NaN in one group under dynamic int8 ---- */

static void
test_nan_group (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) fmt = piq_format_new_preset ("q8_0", &error);
  PiqQuantizer *q = piq_quantizer_get_default ();
  Weights W;
  g_autoptr(PiqPackedWeights) pw = NULL;
  const guint64 M = 5, N = 9, K = 100;

  g_assert_no_error (error);
  make_weights (&W, fmt, N, K, TRUE);
  pw = piq_packed_weights_new (W.w, PIQ_ACTIVATION_DYNAMIC_INT8, &error);
  g_assert_no_error (error);
  for (int kind = 0; kind < 3; kind++)
    {
      guint64 xs[2] = { M, K };
      g_autofree double *xv = random_values (M * K, K, 1.0);
      g_autoptr(PiqTensor) x = NULL, y = NULL;
      const float *yd;
      guint64 bad_row = 2, k = 32 * (guint64) kind + 5;   /* groups 0, 1, 2 */

      xv[bad_row * K + k] = kind == 0 ? NAN : kind == 1 ? INFINITY : -INFINITY;
      x = float_tensor (PIQ_DTYPE_F32, xs, 2, xv);
      y = piq_quantizer_matmul_new (q, x, pw, NULL, PIQ_DTYPE_F32, &error);
      g_assert_no_error (error);
      yd = piq_tensor_get_data (y, NULL);
      for (guint64 m = 0; m < M; m++)
        for (guint64 n = 0; n < N; n++)
          if (m == bad_row ? !isnan (yd[m * N + n]) : !isfinite (yd[m * N + n]))
            g_error ("x[%" G_GUINT64_FORMAT "][%" G_GUINT64_FORMAT "] = %g: y[%" G_GUINT64_FORMAT "][%"
                     G_GUINT64_FORMAT "] = %g", bad_row, k, xv[bad_row * K + k], m, n, yd[m * N + n]);
      /* the other rows are exactly the oracle's */
      {
        Params p = { M, N, K, PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_REDUCE_SET, FALSE, PIQ_ACTIVATION_DYNAMIC_INT8, FALSE };
        g_autofree float *xf = g_new (float, M * K);
        g_autofree guint8 *want = g_malloc0 (M * N * 4);
        for (guint64 i = 0; i < M * K; i++)
          xf[i] = (float) xv[i];
        oracle (&p, &W, xf, NULL, want, want, NULL);
        for (guint64 m = 0; m < M; m++)
          if (m != bad_row)
            assert_bytes ("rows without NaN", &p, want + m * N * 4, (const guint8 *) yd + m * N * 4, N, 4);
      }
    }
  weights_clear (&W);
}

/* ---- NaN operand order through the API ---- */

/* Both operands of one product NaN, of opposite signs: fmaf (x, w, acc) returns
 * one of them, and which one follows the instruction's operand order, which
 * compilers choose. The definition makes every NaN output the default quiet NaN
 * (found by this test: the AVX-512 level returned w's NaN where the scalar level
 * returned x's). fp8_e4m3 per tensor weights [8, 51] from codes, scale 1, all
 * 0x38 (1.0) but w[0][0] = 0x7f (+NaN); X f32 [4, 51] all 1.0 but x[3][0] = −NaN
 * (0xffc00000); float policy, SET, no bias: y[3][0] is 0x7fc00000 on every level. */
static void
test_nan_order (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) fmt = piq_format_new (PIQ_DTYPE_FP8_E4M3);
  enum { M = 4, N = 8, K = 51 };
  guint64 ws[2] = { N, K }, xs[2] = { M, K };
  guint8 codes[N * K];
  g_autoptr(GBytes) cb = NULL;
  g_autoptr(PiqTensor) wd = NULL;
  g_autoptr(PiqPackedWeights) pw = NULL;
  static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_SSE4_2,
                                         PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX512 };
  Weights W;
  Params p = { M, N, K, PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_REDUCE_SET, FALSE, PIQ_ACTIVATION_FLOAT, TRUE };
  double xv[M * K];

  memset (&W, 0, sizeof W);
  W.N = N;
  W.K = K;
  memset (codes, 0x38, sizeof codes);                     /* 1.0 in E4M3 */
  codes[0] = 0x7f;                                        /* +NaN */
  cb = g_bytes_new (codes, sizeof codes);
  W.w = piq_tensor_new_quantized_from_bytes (fmt, ws, 2, cb, NULL, NULL, 1.0, 0, &error);
  g_assert_no_error (error);
  wd = piq_quantizer_dequantize_new (piq_quantizer_get_default (), W.w, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  W.wd = g_memdup2 (piq_tensor_get_data (wd, NULL), N * K * 4);
  g_assert_true (isnan (W.wd[0]) && !signbit (W.wd[0]));
  pw = piq_packed_weights_new (W.w, PIQ_ACTIVATION_FLOAT, &error);
  g_assert_no_error (error);

  for (gsize i = 0; i < M * K; i++)
    xv[i] = 1.0;
  xv[3 * K] = -NAN;
  for (gsize li = 0; li < G_N_ELEMENTS (levels); li++)
    {
      g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
      g_autoptr(PiqTensor) x = float_tensor (PIQ_DTYPE_F32, xs, 2, xv);
      g_autoptr(PiqTensor) y = NULL;
      float xf[M * K], want[M * N];
      const guint8 *got;

      piq_quantizer_set_max_simd_level (q, levels[li]);
      y = piq_quantizer_matmul_new (q, x, pw, NULL, PIQ_DTYPE_F32, &error);
      g_assert_no_error (error);
      for (gsize i = 0; i < M * K; i++)
        xf[i] = (float) xv[i];
      g_assert_true (isnan (xf[3 * K]) && signbit (xf[3 * K]));
      memset (want, 0, sizeof want);
      oracle (&p, &W, xf, NULL, (const guint8 *) want, (guint8 *) want, NULL);
      got = piq_tensor_get_data (y, NULL);
      g_assert_cmpuint (o_f32_bits (want[3 * N]), ==, 0x7fc00000u);
      assert_bytes ("NaN operand order", &p, (const guint8 *) want, got, M * N, 4);
    }
  weights_clear (&W);
}

/* ---- long rows: one group of more than 4096 elements, sums past int32 ---- */

/* Per tensor and per channel the group is the whole row. With uint8 codes 255
 * and zero point 0 (weights in [0, 1], many at 1) against X = 1 (q = 127), a row
 * of K = 70001 gives I = 255 · 127 · 70001 = 2 267 012 385 > 2³¹ − 1: the
 * definition's I_g is exact (int64). Also K = 4096, 4097, 8193 with random data. */
static void
test_long_rows (void)
{
  static const guint64 Ks[] = { 4096, 4097, 8193, 70001 };
  PiqQuantizer *q = piq_quantizer_get_default ();

  for (gsize ki = 0; ki < G_N_ELEMENTS (Ks); ki++)
    for (int fi = 0; fi < 3; fi++)
      for (int ai = 0; ai < 2; ai++)
        {
          guint64 K = Ks[ki], M = 3, N = 5;
          PiqActivation act = ai ? PIQ_ACTIVATION_DYNAMIC_INT8 : PIQ_ACTIVATION_FLOAT;
          g_autoptr(PiqFormat) fmt = fi == 0 ? piq_format_new (PIQ_DTYPE_UINT8)
                                   : fi == 1 ? piq_format_new_per_channel (PIQ_DTYPE_UINT8, 0)
                                             : piq_format_new (PIQ_DTYPE_INT4);
          gboolean extreme = K == 70001;
          g_autofree double *wv = g_new (double, N * K);
          g_autofree double *xv = extreme ? g_new (double, M * K) : random_values (M * K, K, 1.0);
          guint64 xs[2] = { M, K };
          g_autoptr(PiqTensor) x = NULL, y = NULL;
          g_autoptr(PiqPackedWeights) pw = NULL;
          g_autoptr(GError) error = NULL;
          g_autofree float *xf = g_new (float, M * K);
          g_autofree guint8 *want = g_malloc0 (M * N * 4);
          Params p = { M, N, K, PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_REDUCE_SET, FALSE, act, FALSE };
          Weights W;

          for (guint64 i = 0; i < N * K; i++)
            wv[i] = extreme ? (i == 3 ? 0.0 : 1.0) : unif ();
          if (extreme)
            for (guint64 i = 0; i < M * K; i++)
              xv[i] = m_sign (i / K) * 1.0;
          make_weights_from (&W, fmt, N, K, ai, wv);
          pw = piq_packed_weights_new (W.w, act, &error);
          g_assert_no_error (error);
          x = float_tensor (PIQ_DTYPE_F32, xs, 2, xv);
          y = piq_quantizer_matmul_new (q, x, pw, NULL, PIQ_DTYPE_F32, &error);
          g_assert_no_error (error);
          for (guint64 i = 0; i < M * K; i++)
            xf[i] = (float) xv[i];
          oracle (&p, &W, xf, NULL, want, want, NULL);
          assert_bytes ("long rows", &p, want, piq_tensor_get_data (y, NULL), M * N, 4);
          weights_clear (&W);
        }
}

/* ---- the float policy's GEMM: k in several cache blocks, outputs across panels ----
 * From 8 rows of X the float policy decodes 48 weight rows at a time, packs them by
 * residue and multiplies them in blocks of 2,048 of k with the lanes carried between
 * blocks (docs/matmul.md): K within one block (513, and 1,100: not a multiple of 16),
 * past one block by one element and past four (a last block of one element), N across
 * 48 and its groups of 8, M across the 48-row blocks, fused formats (q4_0, nf4, int4 per
 * block) and a panel one (uint8 per tensor); the oracle's bytes for 1, 2 and 3 threads
 * at every SIMD level. */
static void
test_gemm_float_blocks (void)
{
  static const struct { guint64 M, N, K; } sz[] = { { 8, 50, 513 }, { 33, 97, 1100 },
                                                    { 50, 43, 2049 }, { 9, 49, 8193 } };
  static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_AVX2,
                                         PIQ_SIMD_LEVEL_AVX512 };

  for (gsize si = 0; si < G_N_ELEMENTS (sz); si++)
    for (int fi = 0; fi < 4; fi++)
      {
        guint64 M = sz[si].M, N = sz[si].N, K = sz[si].K, xs[2] = { M, K };
        g_autoptr(PiqFormat) fmt = fi == 0 ? piq_format_new_preset ("q4_0", NULL)
                                 : fi == 1 ? piq_format_new_preset ("nf4", NULL)
                                 : fi == 2 ? piq_format_new_per_block (PIQ_DTYPE_INT4, 128, PIQ_DTYPE_F16)
                                           : piq_format_new (PIQ_DTYPE_UINT8);
        g_autofree double *wv = random_values (N * K, K, 1.0);
        g_autofree double *xv = random_values (M * K, K, 1.0);
        g_autoptr(PiqTensor) x = NULL;
        g_autoptr(PiqPackedWeights) pw = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree float *xf = g_new (float, M * K);
        g_autofree guint8 *want = g_malloc0 (M * N * 4);
        Params p = { M, N, K, PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_REDUCE_SET, FALSE,
                     PIQ_ACTIVATION_FLOAT, FALSE };
        Weights W;

        make_weights_from (&W, fmt, N, K, FALSE, wv);
        pw = piq_packed_weights_new (W.w, PIQ_ACTIVATION_FLOAT, &error);
        g_assert_no_error (error);
        x = float_tensor (PIQ_DTYPE_F32, xs, 2, xv);
        for (guint64 i = 0; i < M * K; i++)
          xf[i] = (float) xv[i];
        oracle (&p, &W, xf, NULL, want, want, NULL);
        for (gsize li = 0; li < G_N_ELEMENTS (levels); li++)
          for (guint t = 1; t <= 3; t++)
            {
              g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
              g_autoptr(PiqTensor) y = NULL;
              piq_quantizer_set_n_threads (qt, t);
              piq_quantizer_set_max_simd_level (qt, levels[li]);
              y = piq_quantizer_matmul_new (qt, x, pw, NULL, PIQ_DTYPE_F32, &error);
              g_assert_no_error (error);
              assert_bytes ("float gemm blocks", &p, want, piq_tensor_get_data (y, NULL), M * N, 4);
            }
        weights_clear (&W);
      }
}

/* ---- the int8 GEMM on quantized operands (piq_quantizer_matmul_quantized) ----
 *
 * Oracle written from the definition (docs/matmul.md, "The int8 GEMM on
 * quantized operands"), not from the library's code:
 *   I[m][n] = Σ_k (a[m][k] − za_m) · (w[n][k] − zw_n), exact in int64;
 *   int32 Y: I (SET) or y_old + I (ADD); PIQ_ERROR_OVERFLOW and Y untouched if
 *     any result does not fit int32;
 *   float Y: v = (float) (((double) I · sa_m) · sw_n) (binary32 scales), then
 *     v + bias[n] in binary32, stored like the float oracle above (ADD in
 *     binary32, f64 as y_old + (double) v);
 *   quantized Y (uint8/int8 per tensor): clamp (nearbyint ((((double) I · sa) · sw
 *     + (double) bias[n]) / s) + z), ties to even, s and z from the recipe (z the
 *     type's symmetric one when the recipe has none); Y then carries s and z.
 * The operands' codes, zero points and scales are read from their bytes and
 * checked against the library's dequantization. */

typedef struct {
  guint64  R, K;       /* rows (product of the leading dims) and K */
  gint64  *cz;         /* code − zero point, R·K */
  float   *s;          /* binary32 scale of each row */
} QOp;

static void
qop_clear (QOp *o)
{
  g_clear_pointer (&o->cz, g_free);
  g_clear_pointer (&o->s, g_free);
}

static void
qop_read (QOp *o, PiqTensor *t)
{
  PiqFormat *f = piq_tensor_get_format (t);
  PiqDtype dt = piq_format_get_dtype (f);
  PiqGranularity gran = piq_format_get_granularity (f);
  guint nd;
  const guint64 *shape = piq_tensor_get_shape (t, &nd);
  const guint8 *codes = piq_tensor_get_data (t, NULL);
  gint64 implied = dt == PIQ_DTYPE_INT8 ? 0 : 128;
  g_autoptr(GBytes) scales = NULL;
  g_autoptr(GBytes) zps = NULL;
  g_autoptr(PiqTensor) deq = NULL;
  g_autoptr(GError) error = NULL;
  const float *dq;

  g_assert_true (dt == PIQ_DTYPE_UINT8 || dt == PIQ_DTYPE_INT8);
  o->K = shape[nd - 1];
  o->R = piq_tensor_get_n_elements (t) / o->K;
  o->cz = g_new (gint64, o->R * o->K + 1);
  o->s = g_new (float, o->R + 1);
  if (gran == PIQ_GRANULARITY_CHANNEL)
    {
      g_assert_cmpint (piq_format_get_axis (f), ==, 0);
      g_assert_cmpuint (nd, ==, 2);
      scales = piq_tensor_get_scales (t);
      zps = piq_tensor_get_zero_points (t);
      g_assert_nonnull (scales);
    }
  else
    g_assert_cmpint (gran, ==, PIQ_GRANULARITY_TENSOR);
  for (guint64 r = 0; r < o->R; r++)
    {
      gint64 z;
      if (gran == PIQ_GRANULARITY_TENSOR)
        {
          o->s[r] = (float) piq_tensor_get_scale (t);
          z = piq_format_get_symmetric (f) ? implied : piq_tensor_get_zero_point (t);
        }
      else
        {
          o->s[r] = scale_at (piq_format_get_scale_dtype (f), g_bytes_get_data (scales, NULL), r);
          if (piq_format_has_zero_points (f))
            {
              gint32 z32;
              g_assert_nonnull (zps);
              memcpy (&z32, (const guint8 *) g_bytes_get_data (zps, NULL) + 4 * r, 4);
              z = z32;
            }
          else
            z = implied;
        }
      for (guint64 k = 0; k < o->K; k++)
        o->cz[r * o->K + k] = (gint64) o_unpack (dt, codes, r * o->K + k) - z;
    }
  /* the codes read here must be what the library dequantizes */
  deq = piq_quantizer_dequantize_new (piq_quantizer_get_default (), t, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  dq = piq_tensor_get_data (deq, NULL);
  for (guint64 i = 0; i < o->R * o->K; i++)
    {
      double v = (double) o->cz[i] * (double) o->s[i / o->K];
      if (!(fabs (v - dq[i]) <= ldexp (fabs (dq[i]), -22)))
        g_error ("%s: element %" G_GUINT64_FORMAT ": (code − zero point) %" G_GINT64_FORMAT " × scale %a = %a, "
                 "dequantized %a", piq_format_to_string (f), i, o->cz[i], (double) o->s[i / o->K], v, (double) dq[i]);
    }
}

/* A quantized tensor of fmt from random f32 data (scales and zero points derived). */
static PiqTensor *
quantize_random (PiqFormat *fmt, const guint64 *shape, guint nd, double base)
{
  g_autoptr(GError) error = NULL;
  guint64 n = 1;
  g_autofree double *v = NULL;
  g_autoptr(PiqTensor) src = NULL;
  PiqTensor *t;

  for (guint i = 0; i < nd; i++)
    n *= shape[i];
  v = random_values (n, shape[nd - 1], base);
  src = float_tensor (PIQ_DTYPE_F32, shape, nd, v);
  t = piq_quantizer_quantize_new (piq_quantizer_get_default (), fmt, NULL, src, &error);
  g_assert_no_error (error);
  return t;
}

/* A quantized tensor from raw codes (all equal to code), per tensor (scales NULL)
 * or per row (f32 scales and int32 zero points, one per row). */
static PiqTensor *
from_codes (PiqFormat *fmt, const guint64 *shape, guint nd, const guint8 *codes, const float *scales,
            const gint32 *zps, guint64 rows, double scale, gint64 zp)
{
  g_autoptr(GError) error = NULL;
  guint64 n = 1;
  g_autoptr(GBytes) cb = NULL;
  g_autoptr(GBytes) sb = scales ? g_bytes_new (scales, rows * 4) : NULL;
  g_autoptr(GBytes) zb = zps ? g_bytes_new (zps, rows * 4) : NULL;
  PiqTensor *t;

  for (guint i = 0; i < nd; i++)
    n *= shape[i];
  cb = g_bytes_new (codes, n);
  t = piq_tensor_new_quantized_from_bytes (fmt, shape, nd, cb, sb, zb, scale, zp, &error);
  g_assert_no_error (error);
  return t;
}

static PiqPackedWeights *
pack_dyn (PiqTensor *w)
{
  g_autoptr(GError) error = NULL;
  PiqPackedWeights *pw = piq_packed_weights_new (w, PIQ_ACTIVATION_DYNAMIC_INT8, &error);
  g_assert_no_error (error);
  return pw;
}

static gboolean
ydt_quantized (PiqDtype dt)
{
  return dt == PIQ_DTYPE_UINT8 || dt == PIQ_DTYPE_INT8;
}

static gsize
ysize (PiqDtype dt)
{
  return ydt_quantized (dt) ? 1 : o_dtype_bits (dt) / 8;
}

/* The expected bytes of Y; FALSE (want = y_old) when an int32 result does not fit. */
static gboolean
gemm_oracle (const QOp *A, const QOp *W, const float *bf, PiqDtype ydt, PiqReduceOp op, double qs, gint64 qz,
             const guint8 *y_old, guint8 *want)
{
  guint64 M = A->R, N = W->R, K = A->K;

  g_assert_cmpuint (W->K, ==, K);
  memcpy (want, y_old, M * N * ysize (ydt));
  for (guint64 m = 0; m < M; m++)
    for (guint64 n = 0; n < N; n++)
      {
        const gint64 *ar = A->cz + m * K, *wr = W->cz + n * K;
        guint64 i = m * N + n;
        gint64 I = 0;

        for (guint64 k = 0; k < K; k++)
          I += ar[k] * wr[k];
        if (ydt == PIQ_DTYPE_INT32)
          {
            gint64 r = I;
            gint32 o, r32;
            memcpy (&o, y_old + 4 * i, 4);
            if (op == PIQ_REDUCE_ADD)
              r += o;
            if (r < G_MININT32 || r > G_MAXINT32)
              {
                memcpy (want, y_old, M * N * 4);
                return FALSE;
              }
            r32 = (gint32) r;
            memcpy (want + 4 * i, &r32, 4);
          }
        else if (ydt_quantized (ydt))
          {
            double t = ((double) I * (double) A->s[m]) * (double) W->s[n];
            double c, lo = ydt == PIQ_DTYPE_UINT8 ? 0 : -128, hi = ydt == PIQ_DTYPE_UINT8 ? 255 : 127;
            g_assert_cmpint (op, ==, PIQ_REDUCE_SET);
            if (bf)
              t = t + (double) bf[n];
            c = nearbyint (t / qs) + (double) qz;
            c = c < lo ? lo : c > hi ? hi : c;
            o_pack (ydt, want, i, (OInt) c);
          }
        else
          {
            float v = (float) (((double) I * (double) A->s[m]) * (double) W->s[n]);
            if (bf)
              v = v + bf[n];
            if (ydt == PIQ_DTYPE_F64)
              {
                double o = 0;
                memcpy (&o, y_old + 8 * i, 8);
                o = op == PIQ_REDUCE_ADD ? o + (double) v : (double) v;
                memcpy (want + 8 * i, &o, 8);
              }
            else
              {
                if (op == PIQ_REDUCE_ADD)
                  v = (float) o_read_float (ydt, y_old, i) + v;
                o_store_f32 (ydt, want, i, v);
              }
          }
      }
  return TRUE;
}

typedef struct {
  char              desc[256];
  PiqTensor        *a, *bias;
  PiqPackedWeights *pw;
  PiqRecipe        *recipe;
  PiqFormat        *yfmt;               /* quantized Y's format, else NULL */
  QOp               A, W;
  float            *bf;
  PiqDtype          ydt;
  PiqReduceOp       op;
  double            qs;
  gint64            qz;
  guint64           yshape[PIQ_MAX_DIMS];
  guint             ynd;
  guint8           *y_old, *want;
  gsize             ybytes;
  gboolean          fits;
} GCase;

static void
gcase_clear (GCase *g)
{
  g_clear_object (&g->a);
  g_clear_object (&g->bias);
  g_clear_object (&g->pw);
  g_clear_object (&g->recipe);
  g_clear_object (&g->yfmt);
  qop_clear (&g->A);
  qop_clear (&g->W);
  g_clear_pointer (&g->bf, g_free);
  g_clear_pointer (&g->y_old, g_free);
  g_clear_pointer (&g->want, g_free);
}

static PiqTensor *
gemm_new_y (const GCase *g)
{
  g_autoptr(GError) error = NULL;
  PiqTensor *y = g->yfmt ? piq_tensor_new_quantized (g->yfmt, g->yshape, g->ynd, &error)
                         : piq_tensor_new_shaped (g->ydt, g->yshape, g->ynd, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (piq_tensor_get_n_bytes (y), ==, g->ybytes);
  memcpy (piq_tensor_get_writable_data (y, NULL), g->y_old, g->ybytes);
  return y;
}

/* Sets up a case: takes a, the weights w, the bias (or NULL) and recipe (or NULL);
 * y of dtype ydt (quantized with yfmt when yfmt is not NULL) pre-filled at random. */
static void
gcase_init (GCase *g, PiqTensor *a, PiqTensor *w, PiqTensor *bias, PiqRecipe *recipe, PiqDtype ydt,
            PiqFormat *yfmt, PiqReduceOp op)
{
  guint and;
  const guint64 *ash = piq_tensor_get_shape (a, &and);
  guint64 n;

  memset (g, 0, sizeof *g);
  g->a = g_object_ref (a);
  g->pw = pack_dyn (w);
  g->bias = bias ? g_object_ref (bias) : NULL;
  g->recipe = recipe ? g_object_ref (recipe) : NULL;
  g->yfmt = yfmt ? g_object_ref (yfmt) : NULL;
  g->ydt = ydt;
  g->op = op;
  qop_read (&g->A, a);
  qop_read (&g->W, w);
  g->ynd = and;
  memcpy (g->yshape, ash, and * 8);
  g->yshape[and - 1] = g->W.R;
  n = g->A.R * g->W.R;
  g->ybytes = n * ysize (ydt);
  if (bias)
    {
      const guint8 *bb = piq_tensor_get_data (bias, NULL);
      PiqDtype bdt = piq_tensor_get_dtype (bias);
      g->bf = g_new (float, g->W.R);
      for (guint64 i = 0; i < g->W.R; i++)
        g->bf[i] = to_f32 (bdt, bb, i);
    }
  if (yfmt)
    {
      g_assert_cmpint (piq_format_get_dtype (yfmt), ==, ydt);
      g_assert_nonnull (recipe);
      g->qs = piq_recipe_get_scale (recipe);
      g->qz = piq_recipe_has_zero_point (recipe) ? piq_recipe_get_zero_point (recipe)
              : ydt == PIQ_DTYPE_UINT8 ? 128 : 0;
    }
  g->y_old = g_malloc (g->ybytes + 1);
  if (ydt == PIQ_DTYPE_INT32)
    for (guint64 i = 0; i < n; i++)
      {
        gint32 v = (gint32) (rnd () % (1u << 31)) - (1 << 30);
        memcpy (g->y_old + 4 * i, &v, 4);
      }
  else if (yfmt || ydt == PIQ_DTYPE_UINT16)
    for (gsize i = 0; i < g->ybytes; i++)
      g->y_old[i] = (guint8) rnd ();
  else
    {
      g_autofree double *v = random_values (n, 0, 3.0);
      for (guint64 i = 0; i < n; i++)
        o_write_float (ydt, g->y_old, i, v[i]);
    }
  g->want = g_malloc (g->ybytes + 1);
  g->fits = ydt == PIQ_DTYPE_UINT16 ||
            gemm_oracle (&g->A, &g->W, g->bf, ydt, op, g->qs, g->qz, g->y_old, g->want);
  {
    g_autofree char *af = piq_format_to_string (piq_tensor_get_format (a));
    g_autofree char *wf = piq_format_to_string (piq_tensor_get_format (w));
    g_snprintf (g->desc, sizeof g->desc,
                "M %" G_GUINT64_FORMAT " N %" G_GUINT64_FORMAT " K %" G_GUINT64_FORMAT ", a %s, w %s, y %s%s, %s, %s",
                g->A.R, g->W.R, g->A.K, af, wf, o_dtype_name (ydt), yfmt ? " quantized" : "",
                op == PIQ_REDUCE_ADD ? "add" : "set", bias ? o_dtype_name (piq_tensor_get_dtype (bias)) : "no bias");
  }
}

static void
gemm_assert_bytes (const char *what, const GCase *g, const guint8 *want, const guint8 *got)
{
  gsize es = ysize (g->ydt);
  guint64 n = g->ybytes / es;

  if (memcmp (want, got, g->ybytes) == 0)
    return;
  for (guint64 i = 0; i < n; i++)
    if (memcmp (want + i * es, got + i * es, es) != 0)
      {
        char ws[64], gs[64];
        if (g->ydt == PIQ_DTYPE_INT32 || ydt_quantized (g->ydt))
          {
            gint64 wv, gv;
            if (g->ydt == PIQ_DTYPE_INT32)
              {
                gint32 a, b;
                memcpy (&a, want + 4 * i, 4);
                memcpy (&b, got + 4 * i, 4);
                wv = a;
                gv = b;
              }
            else
              {
                wv = (gint64) o_unpack (g->ydt, want, i);
                gv = (gint64) o_unpack (g->ydt, got, i);
              }
            g_snprintf (ws, sizeof ws, "%" G_GINT64_FORMAT, wv);
            g_snprintf (gs, sizeof gs, "%" G_GINT64_FORMAT, gv);
          }
        else
          {
            g_snprintf (ws, sizeof ws, "%.17g (0x%" G_GINT64_MODIFIER "x)", o_read_float (g->ydt, want, i),
                        o_read_float_bits (g->ydt, want, i));
            g_snprintf (gs, sizeof gs, "%.17g (0x%" G_GINT64_MODIFIER "x)", o_read_float (g->ydt, got, i),
                        o_read_float_bits (g->ydt, got, i));
          }
        g_error ("int8 GEMM, %s (%s): y[%" G_GUINT64_FORMAT "][%" G_GUINT64_FORMAT "] is %s, the oracle gives %s",
                 what, g->desc, i / g->W.R, i % g->W.R, gs, ws);
      }
}

/* Runs the case with quantizer q on a fresh Y holding y_old; compares with the oracle. */
static void
gcase_run (const char *what, const GCase *g, PiqQuantizer *q)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) y = gemm_new_y (g);
  gboolean ok = piq_quantizer_matmul_quantized (q, g->a, g->pw, g->bias, g->recipe, y, g->op, &error);

  if (!g->fits)
    {
      if (ok || !g_error_matches (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW))
        g_error ("int8 GEMM, %s (%s): an int32 result does not fit: expected PIQ_ERROR_OVERFLOW, got %s",
                 what, g->desc, ok ? "success" : error->message);
      gemm_assert_bytes (what, g, g->y_old, piq_tensor_get_data (y, NULL));
      return;
    }
  if (!ok || error != NULL)
    g_error ("int8 GEMM, %s (%s): failed: %s", what, g->desc, error ? error->message : "FALSE without an error");
  gemm_assert_bytes (what, g, g->want, piq_tensor_get_data (y, NULL));
  if (g->yfmt)
    {
      if (piq_tensor_get_scale (y) != g->qs || piq_tensor_get_zero_point (y) != g->qz)
        g_error ("int8 GEMM, %s (%s): Y carries scale %.17g zero point %" G_GINT64_FORMAT ", expected %.17g, %"
                 G_GINT64_FORMAT, what, g->desc, piq_tensor_get_scale (y), piq_tensor_get_zero_point (y), g->qs, g->qz);
    }
}

static const PiqSimdLevel gemm_levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2,
                                            PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX_VNNI,
                                            PIQ_SIMD_LEVEL_AVX512,
                                            PIQ_SIMD_LEVEL_AVX512_VNNI, PIQ_SIMD_LEVEL_AMX };

/* Every SIMD level this CPU runs (a cap that gives a level already run is skipped) ×
 * thread counts 1..max_t, each on its own quantizer. */
static void
gcase_run_all (const GCase *g, guint max_t)
{
  for (gsize li = 0; li < G_N_ELEMENTS (gemm_levels); li++)
    for (guint t = 1; t <= max_t && !level_seen (gemm_levels, li); t++)
      {
        g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
        char what[96];
        piq_quantizer_set_n_threads (qt, t);
        piq_quantizer_set_max_simd_level (qt, gemm_levels[li]);
        g_snprintf (what, sizeof what, "%u threads, max SIMD level %d (%d in use)", t, gemm_levels[li],
                    piq_quantizer_get_simd_level (qt));
        gcase_run (what, g, qt);
      }
}

/* An output scale that puts most codes in range and clamps a few: rms / 40. */
static double
gemm_out_scale (const QOp *A, const QOp *W, const float *bf)
{
  double s2 = 0;
  guint64 K = A->K;

  for (guint64 m = 0; m < A->R; m++)
    for (guint64 n = 0; n < W->R; n++)
      {
        gint64 I = 0;
        double t;
        for (guint64 k = 0; k < K; k++)
          I += A->cz[m * K + k] * W->cz[n * K + k];
        t = ((double) I * A->s[m]) * W->s[n] + (bf ? bf[n] : 0);
        s2 += t * t;
      }
  s2 = sqrt (s2 / (double) (A->R * W->R));
  return s2 > 0 ? s2 / 40 : 0.25;
}

static PiqFormat *
fmt_affine_rows (PiqDtype dt)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", dt, "granularity", PIQ_GRANULARITY_CHANNEL, "axis", 0,
                       "symmetric", FALSE, NULL);
}

/* The formats of A: per tensor affine and symmetric, per row (default and affine). */
static PiqFormat *
a_format (guint i)
{
  PiqDtype dt = i % 2 ? PIQ_DTYPE_INT8 : PIQ_DTYPE_UINT8;
  switch ((i / 2) % 4)
    {
    case 0: return piq_format_new (dt);
    case 1: return piq_format_new_symmetric (dt);
    case 2: return piq_format_new_per_channel (dt, 0);
    default: return fmt_affine_rows (dt);
    }
}

/* The formats of W: int8/uint8 × per tensor affine, symmetric, per channel, per channel affine. */
static PiqFormat *
w_format (guint i)
{
  PiqDtype dt = i % 2 ? PIQ_DTYPE_UINT8 : PIQ_DTYPE_INT8;
  switch ((i / 2) % 4)
    {
    case 0: return piq_format_new (dt);
    case 1: return piq_format_new_symmetric (dt);
    case 2: return piq_format_new_per_channel (dt, 0);
    default: return fmt_affine_rows (dt);
    }
}

static const PiqDtype gemm_ydts[] = { PIQ_DTYPE_INT32, PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16,
                                      PIQ_DTYPE_F16, PIQ_DTYPE_UINT8, PIQ_DTYPE_INT8 };

/* One case per output dtype for A and W; op, bias and recipe rotate with salt. */
static void
gemm_all_outputs (PiqTensor *a, PiqTensor *w, guint salt, guint max_t)
{
  guint64 N = piq_tensor_get_dim (w, 0);

  for (gsize j = 0; j < G_N_ELEMENTS (gemm_ydts); j++)
    {
      PiqDtype ydt = gemm_ydts[j];
      gboolean q = ydt_quantized (ydt);
      gboolean with_bias = ydt != PIQ_DTYPE_INT32 && (salt / 2 + j) % 3 != 0;
      PiqReduceOp op = !q && (salt + j) % 2 ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET;
      g_autofree double *bv = random_values (N, 0, 2.0);
      g_autoptr(PiqTensor) bias = with_bias ? float_tensor (float_dtypes[(salt + j) % 4], &N, 1, bv) : NULL;
      g_autoptr(PiqRecipe) recipe = NULL;
      g_autoptr(PiqFormat) yfmt = q ? piq_format_new (ydt) : NULL;
      GCase g;

      if (q)
        {
          QOp A = { 0 }, W = { 0 };
          float *bf = NULL;
          double s;
          qop_read (&A, a);
          qop_read (&W, w);
          if (bias)
            {
              bf = g_new (float, N);
              for (guint64 n = 0; n < N; n++)
                bf[n] = to_f32 (piq_tensor_get_dtype (bias), piq_tensor_get_data (bias, NULL), n);
            }
          s = gemm_out_scale (&A, &W, bf);
          recipe = (salt + j) % 2 ? piq_recipe_new_fixed (s)
                                  : piq_recipe_new_affine (s, ydt == PIQ_DTYPE_UINT8 ? (gint64) (100 + salt % 50) : -20);
          qop_clear (&A);
          qop_clear (&W);
          g_free (bf);
        }
      gcase_init (&g, a, w, bias, recipe, ydt, yfmt, op);
      g_assert_true (g.fits);
      if (max_t == 0)
        gcase_run ("default quantizer", &g, piq_quantizer_get_default ());
      else
        gcase_run_all (&g, max_t);
      gcase_clear (&g);
    }
}

/* Every M, N, K of the brief; every pair of A and W formats over the loop. */
static void
test_gemm_shapes (void)
{
  /* M and N cross the micro-kernel's tiles (8 rows, panels of 16, tiles of 32
   * columns) and the threads' blocks of 64 rows; K its quads of 4 */
  static const guint64 Ms[] = { 1, 2, 3, 7, 64, 65 }, Ns[] = { 1, 9, 17, 33, 70 };
  static const guint64 Ks[] = { 1, 15, 16, 17, 64, 100, 300 };
  guint idx = 0;

  for (gsize mi = 0; mi < G_N_ELEMENTS (Ms); mi++)
    for (gsize ni = 0; ni < G_N_ELEMENTS (Ns); ni++)
      for (gsize ki = 0; ki < G_N_ELEMENTS (Ks); ki++, idx++)
        {
          guint64 as[2] = { Ms[mi], Ks[ki] }, ws[2] = { Ns[ni], Ks[ki] };
          g_autoptr(PiqFormat) af = a_format (idx % 8);
          g_autoptr(PiqFormat) wf = w_format (idx / 8 + idx);
          g_autoptr(PiqTensor) a = quantize_random (af, as, 2, 1.0);
          g_autoptr(PiqTensor) w = quantize_random (wf, ws, 2, 0.5);

          gemm_all_outputs (a, w, idx, 0);
        }
}

/* A [2, 3, K] per tensor: Y [2, 3, N]. */
static void
test_gemm_nd (void)
{
  static const guint64 Ks[] = { 17, 300 };

  for (gsize ki = 0; ki < G_N_ELEMENTS (Ks); ki++)
    for (guint fi = 0; fi < 4; fi++)
      {
        guint64 as[3] = { 2, 3, Ks[ki] }, ws[2] = { 9, Ks[ki] };
        g_autoptr(PiqFormat) af = a_format (fi);          /* uint8/int8, affine and symmetric */
        g_autoptr(PiqFormat) wf = w_format (fi * 3 + ki);
        g_autoptr(PiqTensor) a = quantize_random (af, as, 3, 1.0);
        g_autoptr(PiqTensor) w = quantize_random (wf, ws, 2, 0.5);

        gemm_all_outputs (a, w, fi + 4 * ki, 0);
      }
}

/* Sizes the engine splits over threads, and K past several 4096-element chunks:
 * byte-identical to the oracle for 1..4 threads and every max SIMD level. */
static void
test_gemm_threads (void)
{
  /* split over rows and panels; one row and many panels; many rows and one column */
  static const struct { guint64 M, N, K; } sz[] = { { 33, 70, 300 }, { 5, 70, 5000 }, { 3, 40, 9000 },
                                                    { 1, 300, 1000 }, { 600, 1, 500 },
                                                    { 130, 520, 301 } };

  for (gsize si = 0; si < G_N_ELEMENTS (sz); si++)
    {
      guint64 as[2] = { sz[si].M, sz[si].K }, ws[2] = { sz[si].N, sz[si].K };
      g_autoptr(PiqFormat) af = a_format (si * 3);
      g_autoptr(PiqFormat) wf = w_format (si * 3 + 2);
      g_autoptr(PiqTensor) a = quantize_random (af, as, 2, 1.0);
      g_autoptr(PiqTensor) w = quantize_random (wf, ws, 2, 0.5);

      g_assert_cmpuint (sz[si].M * sz[si].N * sz[si].K, >, 1u << 18);
      gemm_all_outputs (a, w, si, 4);
    }
}

/* Extreme codes: (a − za)·(w − zw) = ±255·255 for every k. 255·255·33025 =
 * 2 147 450 625 fits int32, 255·255·33026 = 2 147 515 650 does not: the int32
 * output must report PIQ_ERROR_OVERFLOW and leave Y as it was, while the float
 * and requantized outputs of the same (exact) sums are still defined. */
static void
test_gemm_extreme (void)
{
  static const guint64 Ks[] = { 33025, 33026 };

  for (gsize ki = 0; ki < G_N_ELEMENTS (Ks); ki++)
    for (int variant = 0; variant < 3; variant++)
      {
        guint64 K = Ks[ki], M = variant == 2 ? 2 : 1, N = variant == 2 ? 3 : 1;
        guint64 as[2] = { M, K }, ws[2] = { N, K };
        g_autofree guint8 *ac = g_malloc (M * K), *wc = g_malloc (N * K);
        g_autoptr(PiqFormat) af = NULL;
        g_autoptr(PiqFormat) wf = piq_format_new (PIQ_DTYPE_UINT8);
        g_autoptr(PiqTensor) a = NULL;
        g_autoptr(PiqTensor) w = NULL;

        memset (wc, 255, N * K);
        w = from_codes (wf, ws, 2, wc, NULL, NULL, N, 0.5, 0);
        if (variant == 0)          /* 255, zero point 0: I = +65025·K */
          {
            af = piq_format_new (PIQ_DTYPE_UINT8);
            memset (ac, 255, M * K);
            a = from_codes (af, as, 2, ac, NULL, NULL, M, 0.0123, 0);
          }
        else if (variant == 1)     /* int8 −128, zero point 127: I = −65025·K */
          {
            af = piq_format_new (PIQ_DTYPE_INT8);
            memset (ac, 0x80, M * K);
            a = from_codes (af, as, 2, ac, NULL, NULL, M, 0.0123, 127);
          }
        else                       /* per row: row 0 at the limit, row 1 all zero after its zero point */
          {
            static const float sc[2] = { 0.25f, 0.5f };
            static const gint32 zp[2] = { 0, 255 };
            af = fmt_affine_rows (PIQ_DTYPE_UINT8);
            memset (ac, 255, M * K);
            a = from_codes (af, as, 2, ac, sc, zp, M, 1.0, 0);
          }

        for (gsize j = 0; j < G_N_ELEMENTS (gemm_ydts); j++)
          for (int add = 0; add < 2; add++)
            {
              PiqDtype ydt = gemm_ydts[j];
              gboolean q = ydt_quantized (ydt);
              g_autoptr(PiqRecipe) recipe = q ? piq_recipe_new_fixed (65025.0 * (double) K * 0.0123 * 0.5 / 100) : NULL;
              g_autoptr(PiqFormat) yfmt = q ? piq_format_new (ydt) : NULL;
              GCase g;

              if (q && add)
                continue;
              gcase_init (&g, a, w, NULL, recipe, ydt, yfmt, add ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET);
              if (ydt == PIQ_DTYPE_INT32)
                {
                  /* y_old chosen so that ADD crosses the limit one way (40 000 + I
                   * or −40 000 + I) and comes back inside the other way */
                  gint32 o = variant != 1 ? 40000 : -40000;
                  if (ki == 1)
                    o = -o;
                  for (guint64 i = 0; i < M * N; i++)
                    memcpy (g.y_old + 4 * i, &o, 4);
                  g.fits = gemm_oracle (&g.A, &g.W, NULL, ydt, g.op, 0, 0, g.y_old, g.want);
                  /* the oracle on the limit: K = 33025 SET fits, K = 33026 SET does not */
                  if (!add)
                    g_assert_true (g.fits == (ki == 0));
                  else
                    g_assert_true (g.fits == (ki == 1));
                }
              gcase_run_all (&g, 2);
              gcase_clear (&g);
            }
      }
}

/* Extreme codes and zero points in every combination (A and W uint8 or int8,
 * codes and zero points at either end of the range), per tensor and per row /
 * channel, on K around the 4096-element chunks and at the int32 limit: the zero
 * points fold through row and column sums whose terms reach 255·255·K even
 * where I is 0. Codes mixed from both ends within a row for the chunk sizes. */
static void
test_gemm_extreme_mix (void)
{
  static const guint64 Ks[] = { 4095, 4096, 4097, 8193, 33025, 33026 };
  static const PiqDtype dts[] = { PIQ_DTYPE_UINT8, PIQ_DTYPE_INT8 };
  guint salt = 0;

  for (gsize ki = 0; ki < G_N_ELEMENTS (Ks); ki++)
    for (gsize ad = 0; ad < 2; ad++)
      for (gsize wd = 0; wd < 2; wd++)
        for (guint combo = 0; combo < 16; combo++, salt++)
          {
            guint64 K = Ks[ki];
            gboolean big = K > 10000, mixed = !big && combo % 4 == 3;
            guint64 M = big ? 1 : 3, N = big ? 1 : 5;
            guint64 as[2] = { M, K }, ws[2] = { N, K };
            PiqDtype adt = dts[ad], wdt = dts[wd];
            gint64 alo = adt == PIQ_DTYPE_UINT8 ? 0 : -128, ahi = alo + 255;
            gint64 wlo = wdt == PIQ_DTYPE_UINT8 ? 0 : -128, whi = wlo + 255;
            gint64 acode = combo & 1 ? ahi : alo, za = combo & 2 ? ahi : alo;
            gint64 wcode = combo & 4 ? whi : wlo, zw = combo & 8 ? whi : wlo;
            gboolean rows = salt % 3 == 1;     /* A per row and W per channel, affine */
            g_autofree guint8 *ac = g_malloc (M * K), *wc = g_malloc (N * K);
            g_autofree float *asc = g_new (float, M), *wsc = g_new (float, N);
            g_autofree gint32 *azp = g_new (gint32, M), *wzp = g_new (gint32, N);
            g_autoptr(PiqFormat) af = rows ? fmt_affine_rows (adt) : piq_format_new (adt);
            g_autoptr(PiqFormat) wf = rows ? fmt_affine_rows (wdt) : piq_format_new (wdt);
            g_autoptr(PiqTensor) a = NULL;
            g_autoptr(PiqTensor) w = NULL;

            for (guint64 i = 0; i < M * K; i++)
              ac[i] = (guint8) (mixed && rnd () % 2 ? (acode == ahi ? alo : ahi) : acode);
            for (guint64 i = 0; i < N * K; i++)
              wc[i] = (guint8) (mixed && rnd () % 3 == 0 ? (wcode == whi ? wlo : whi) : wcode);
            for (guint64 r = 0; r < M; r++)
              {
                asc[r] = 0.25f * (float) (r + 1);
                azp[r] = (gint32) (r % 2 ? (za == ahi ? alo : ahi) : za);
              }
            for (guint64 r = 0; r < N; r++)
              {
                wsc[r] = 0.125f * (float) (r + 3);
                wzp[r] = (gint32) (r % 2 ? (zw == whi ? wlo : whi) : zw);
              }
            a = rows ? from_codes (af, as, 2, ac, asc, azp, M, 1.0, 0) : from_codes (af, as, 2, ac, NULL, NULL, M, 0.3, za);
            w = rows ? from_codes (wf, ws, 2, wc, wsc, wzp, N, 1.0, 0) : from_codes (wf, ws, 2, wc, NULL, NULL, N, 0.7, zw);

            for (int oi = 0; oi < 3; oi++)
              {
                PiqDtype ydt = oi == 0 ? PIQ_DTYPE_INT32 : oi == 1 ? PIQ_DTYPE_F64 : PIQ_DTYPE_INT8;
                PiqReduceOp op = oi == 1 && salt % 2 ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET;
                g_autoptr(PiqFormat) yf = oi == 2 ? piq_format_new (PIQ_DTYPE_INT8) : NULL;
                g_autoptr(PiqRecipe) r = oi == 2 ? piq_recipe_new_fixed (65025.0 * (double) K / 50) : NULL;
                GCase g;

                gcase_init (&g, a, w, NULL, r, ydt, yf, op);
                if (big && oi == 0)
                  {
                    /* the oracle at the limit: overflow iff |I| = 65025·K with K = 33026 */
                    gint64 I = (acode - za) * (wcode - zw) * (gint64) K;
                    g_assert_true (g.fits == !(I > G_MAXINT32 || I < G_MININT32));
                  }
                if (big || salt % 4 == 0)
                  gcase_run_all (&g, 2);
                else
                  gcase_run ("default quantizer", &g, piq_quantizer_get_default ());
                gcase_clear (&g);
              }
          }
}

static void
gemm_expect_fail (const char *what, PiqTensor *a, PiqPackedWeights *pw, PiqTensor *bias, PiqRecipe *recipe,
                  PiqTensor *y, PiqReduceOp op, gint code)
{
  g_autoptr(GError) error = NULL;
  gsize size = piq_tensor_get_n_bytes (y);
  g_autofree guint8 *before = g_memdup2 (piq_tensor_get_data (y, NULL), size);
  gboolean quantized = piq_tensor_get_format (y) != NULL;
  double s0 = quantized ? piq_tensor_get_scale (y) : 0;
  gint64 z0 = quantized ? piq_tensor_get_zero_point (y) : 0;
  gboolean ok = piq_quantizer_matmul_quantized (piq_quantizer_get_default (), a, pw, bias, recipe, y, op, &error);

  if (ok)
    g_error ("int8 GEMM, %s: accepted", what);
  if (error == NULL || error->domain != PIQ_ERROR || (code >= 0 && error->code != code))
    g_error ("int8 GEMM, %s: expected PIQ_ERROR code %d, got %s (%d)", what, code,
             error ? error->message : "no error", error ? error->code : -1);
  g_test_message ("%s: %s", what, error->message);
  g_assert_cmpmem (before, size, piq_tensor_get_data (y, NULL), size);
  if (quantized)
    {
      g_assert_cmpfloat (piq_tensor_get_scale (y), ==, s0);
      g_assert_cmpint (piq_tensor_get_zero_point (y), ==, z0);
    }
}

/* Requantized outputs: ties to even, clamping, the recipe's zero point or the
 * type's symmetric one, and the errors of the recipe and of ADD. */
static void
test_gemm_requant (void)
{
  /* A int8 [12, 1] codes −6..5, W int8 [3, 1] codes 1, 3, −1, scales 1, zero
   * points 0: I = a·w, and I / 2 hits every kind of tie */
  guint64 as[2] = { 12, 1 }, ws[2] = { 3, 1 };
  guint8 ac[12], wc[3] = { 1, 3, (guint8) -1 };
  g_autoptr(PiqFormat) i8 = piq_format_new (PIQ_DTYPE_INT8);
  g_autoptr(PiqFormat) u8 = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqTensor) a = NULL;
  g_autoptr(PiqTensor) w = NULL;

  for (int m = 0; m < 12; m++)
    ac[m] = (guint8) (gint8) (m - 6);
  a = from_codes (i8, as, 2, ac, NULL, NULL, 12, 1.0, 0);
  w = from_codes (i8, ws, 2, wc, NULL, NULL, 3, 1.0, 0);

  {
    g_autoptr(PiqRecipe) r = piq_recipe_new_fixed (2.0);
    GCase g;
    /* {row, column, expected code}: I = ±1, ±3, 9, 15 over 2 → ±0.5, ±1.5, 4.5, 7.5 */
    static const int hand[][3] = { { 7, 0, 0 }, { 5, 0, 0 }, { 7, 1, 2 }, { 5, 1, -2 }, { 9, 1, 4 },
                                   { 11, 1, 8 }, { 1, 1, -8 }, { 8, 2, -1 }, { 11, 2, -2 } };

    gcase_init (&g, a, w, NULL, r, PIQ_DTYPE_INT8, i8, PIQ_REDUCE_SET);
    for (gsize h = 0; h < G_N_ELEMENTS (hand); h++)
      g_assert_cmpint ((gint8) g.want[hand[h][0] * 3 + hand[h][1]], ==, hand[h][2]);
    gcase_run_all (&g, 2);
    gcase_clear (&g);

    /* uint8 without a recipe zero point: 128 */
    gcase_init (&g, a, w, NULL, r, PIQ_DTYPE_UINT8, u8, PIQ_REDUCE_SET);
    g_assert_cmpint (g.qz, ==, 128);
    g_assert_cmpint (g.want[7 * 3 + 1], ==, 130);
    g_assert_cmpint (g.want[5 * 3 + 1], ==, 126);
    gcase_run_all (&g, 2);
    gcase_clear (&g);
  }
  {
    /* bias ties: (I + b) / 1 with b = ±0.5, 2.5 (f16 bias, widened) */
    guint64 n = 3;
    static const double bv[3] = { 0.5, -1.5, 2.5 };
    g_autoptr(PiqTensor) b = float_tensor (PIQ_DTYPE_F16, &n, 1, bv);
    g_autoptr(PiqRecipe) r = piq_recipe_new_affine (1.0, 7);
    GCase g;

    gcase_init (&g, a, w, b, r, PIQ_DTYPE_INT8, i8, PIQ_REDUCE_SET);
    g_assert_cmpint ((gint8) g.want[6 * 3 + 0], ==, 7);      /* I = 0, + 0.5 → 0 + 7 */
    g_assert_cmpint ((gint8) g.want[7 * 3 + 0], ==, 9);      /* I = 1, + 0.5 → 2 + 7 */
    gcase_run_all (&g, 2);
    gcase_clear (&g);
  }
  /* clamping at both ends: random operands, an output scale 50 times too small */
  for (int qi = 0; qi < 2; qi++)
    {
      PiqDtype ydt = qi ? PIQ_DTYPE_INT8 : PIQ_DTYPE_UINT8;
      guint64 as2[2] = { 7, 64 }, ws2[2] = { 9, 64 };
      g_autoptr(PiqFormat) af = a_format (qi + 2);
      g_autoptr(PiqFormat) wf = w_format (qi + 4);
      g_autoptr(PiqFormat) yf = piq_format_new (ydt);
      g_autoptr(PiqTensor) ra = quantize_random (af, as2, 2, 1.0);
      g_autoptr(PiqTensor) rw = quantize_random (wf, ws2, 2, 0.5);
      g_autoptr(PiqRecipe) r = piq_recipe_new_fixed (1.0);
      GCase g;
      guint lo = 0, hi = 0;

      gcase_init (&g, ra, rw, NULL, r, ydt, yf, PIQ_REDUCE_SET);
      piq_recipe_set_scale (g.recipe, gemm_out_scale (&g.A, &g.W, NULL) / 50);
      g.qs = piq_recipe_get_scale (g.recipe);
      gemm_oracle (&g.A, &g.W, NULL, ydt, g.op, g.qs, g.qz, g.y_old, g.want);
      for (guint64 i = 0; i < 63; i++)
        {
          gint64 c = (gint64) o_unpack (ydt, g.want, i);
          lo += c == (qi ? -128 : 0);
          hi += c == (qi ? 127 : 255);
        }
      g_assert_cmpuint (lo, >, 0);
      g_assert_cmpuint (hi, >, 0);
      gcase_run_all (&g, 2);
      gcase_clear (&g);
    }
  /* symmetric output formats: the recipe's zero point must be the symmetric one */
  for (int qi = 0; qi < 2; qi++)
    {
      PiqDtype ydt = qi ? PIQ_DTYPE_INT8 : PIQ_DTYPE_UINT8;
      gint64 zs = qi ? 0 : 128;
      g_autoptr(PiqFormat) yf = piq_format_new_symmetric (ydt);
      g_autoptr(PiqRecipe) good = piq_recipe_new_affine (0.75, zs);
      g_autoptr(PiqRecipe) fixed = piq_recipe_new_fixed (0.75);
      g_autoptr(PiqRecipe) bad = piq_recipe_new_affine (0.75, zs + 3);
      GCase g;

      gcase_init (&g, a, w, NULL, good, ydt, yf, PIQ_REDUCE_SET);
      gcase_run ("symmetric output, symmetric recipe zero point", &g, piq_quantizer_get_default ());
      gcase_clear (&g);
      gcase_init (&g, a, w, NULL, fixed, ydt, yf, PIQ_REDUCE_SET);
      gcase_run ("symmetric output, recipe without zero point", &g, piq_quantizer_get_default ());
      {
        g_autoptr(PiqTensor) y = gemm_new_y (&g);
        g_autoptr(PiqRecipe) none = piq_recipe_new ();
        g_assert_false (piq_recipe_has_scale (none));
        gemm_expect_fail ("symmetric output, recipe zero point + 3", a, g.pw, NULL, bad, y, PIQ_REDUCE_SET,
                          PIQ_ERROR_INVALID_ZERO_POINT);
        gemm_expect_fail ("quantized output, no recipe", a, g.pw, NULL, NULL, y, PIQ_REDUCE_SET,
                          PIQ_ERROR_INVALID_SCALE);
        gemm_expect_fail ("quantized output, recipe without a scale", a, g.pw, NULL, none, y, PIQ_REDUCE_SET,
                          PIQ_ERROR_INVALID_SCALE);
        gemm_expect_fail ("quantized output, ADD", a, g.pw, NULL, fixed, y, PIQ_REDUCE_ADD,
                          PIQ_ERROR_UNSUPPORTED);
      }
      gcase_clear (&g);
    }
  {
    /* an affine quantized output, ADD: unsupported */
    g_autoptr(PiqRecipe) r = piq_recipe_new_affine (0.5, 3);
    GCase g;
    g_autoptr(PiqTensor) y = NULL;

    gcase_init (&g, a, w, NULL, r, PIQ_DTYPE_UINT8, u8, PIQ_REDUCE_SET);
    y = gemm_new_y (&g);
    gemm_expect_fail ("affine quantized output, ADD", a, g.pw, NULL, r, y, PIQ_REDUCE_ADD, PIQ_ERROR_UNSUPPORTED);
    gcase_clear (&g);
  }
}

static PiqTensor *
gemm_plain (PiqDtype dt, const guint64 *shape, guint nd)
{
  g_autoptr(GError) error = NULL;
  PiqTensor *t = piq_tensor_new_shaped (dt, shape, nd, &error);
  g_assert_no_error (error);
  memset (piq_tensor_get_writable_data (t, NULL), 0x3c, piq_tensor_get_n_bytes (t));
  return t;
}

static void bq_check_equal (const char *what, PiqQuantizer *q, PiqTensor *a, PiqPackedWeights *pw,
                            PiqTensor *bias, PiqTensor *y0, PiqReduceOp op);

/* Bad input: a GError and Y's bytes unchanged. */
static void
test_gemm_bad_input (void)
{
  g_autoptr(GError) error = NULL;
  guint64 as[2] = { 4, 32 }, ws[2] = { 9, 32 }, ys[2] = { 4, 9 }, n9 = 9, n8 = 8, n10 = 10;
  g_autoptr(PiqFormat) u8 = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqFormat) i8 = piq_format_new (PIQ_DTYPE_INT8);
  g_autoptr(PiqTensor) a = quantize_random (u8, as, 2, 1.0);
  g_autoptr(PiqTensor) w = quantize_random (i8, ws, 2, 0.5);
  g_autoptr(PiqPackedWeights) pw = pack_dyn (w);
  g_autoptr(PiqTensor) y = gemm_plain (PIQ_DTYPE_F32, ys, 2);
  g_autoptr(PiqTensor) yi = gemm_plain (PIQ_DTYPE_INT32, ys, 2);
  g_autoptr(PiqTensor) b = gemm_plain (PIQ_DTYPE_F32, &n9, 1);
  PiqQuantizer *q = piq_quantizer_get_default ();

  /* the base case works */
  g_assert_true (piq_quantizer_matmul_quantized (q, a, pw, b, NULL, y, PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_matmul_quantized (q, a, pw, NULL, NULL, yi, PIQ_REDUCE_ADD, &error));
  g_assert_no_error (error);

  gemm_expect_fail ("int32 Y with a bias", a, pw, b, NULL, yi, PIQ_REDUCE_SET, PIQ_ERROR_UNSUPPORTED);
  {
    g_autoptr(PiqFormat) f4 = piq_format_new (PIQ_DTYPE_INT4);
    g_autoptr(PiqFormat) fb = piq_format_new_per_block (PIQ_DTYPE_UINT8, 16, PIQ_DTYPE_F32);
    g_autoptr(PiqFormat) fc1 = piq_format_new_per_channel (PIQ_DTYPE_UINT8, 1);
    g_autoptr(PiqTensor) a4 = quantize_random (f4, as, 2, 1.0);
    g_autoptr(PiqTensor) ab = quantize_random (fb, as, 2, 1.0);
    g_autoptr(PiqTensor) af = gemm_plain (PIQ_DTYPE_F32, as, 2);
    g_autoptr(PiqTensor) ai = gemm_plain (PIQ_DTYPE_INT8, as, 2);
    gemm_expect_fail ("int4 A", a4, pw, NULL, NULL, y, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("per-block A", ab, pw, NULL, NULL, y, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("f32 A", af, pw, NULL, NULL, y, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("plain int8 A (no format)", ai, pw, NULL, NULL, y, PIQ_REDUCE_SET, -1);
    {
      /* per channel along axis 1 is per column, not per row */
      g_autoptr(PiqTensor) ac1 = quantize_random (fc1, as, 2, 1.0);
      gemm_expect_fail ("A per channel of axis 1", ac1, pw, NULL, NULL, y, PIQ_REDUCE_SET, -1);
    }
  }
  {
    g_autoptr(PiqFormat) f4 = piq_format_new (PIQ_DTYPE_INT4);
    g_autoptr(PiqFormat) fb = piq_format_new_per_block (PIQ_DTYPE_INT8, 16, PIQ_DTYPE_F32);
    g_autoptr(PiqTensor) w4 = quantize_random (f4, ws, 2, 0.5);
    g_autoptr(PiqTensor) wb = quantize_random (fb, ws, 2, 0.5);
    g_autoptr(PiqPackedWeights) pw4 = pack_dyn (w4);
    g_autoptr(PiqPackedWeights) pwb = pack_dyn (wb);
    g_autoptr(PiqPackedWeights) pwf = piq_packed_weights_new (w, PIQ_ACTIVATION_FLOAT, &error);
    g_assert_no_error (error);
    /* uint8 A with weights packed for float activations: the float policy's product
     * of decode (A) (docs/matmul.md), not the int8 GEMM */
    bq_check_equal ("uint8 A × int8 W packed for float activations", q, a, pwf, b, y, PIQ_REDUCE_SET);
    gemm_expect_fail ("int32 Y, weights packed for float activations", a, pwf, NULL, NULL, yi, PIQ_REDUCE_SET,
                      PIQ_ERROR_UNSUPPORTED);
    gemm_expect_fail ("int4 weights", a, pw4, NULL, NULL, y, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("per-block weights", a, pwb, NULL, NULL, y, PIQ_REDUCE_SET, -1);
  }
  {
    guint64 as31[2] = { 4, 31 }, y8s[2] = { 4, 8 }, y5s[2] = { 5, 9 }, y1s[1] = { 36 }, y3s[3] = { 2, 2, 9 };
    g_autoptr(PiqTensor) a31 = quantize_random (u8, as31, 2, 1.0);
    g_autoptr(PiqTensor) y8 = gemm_plain (PIQ_DTYPE_F32, y8s, 2);
    g_autoptr(PiqTensor) y5 = gemm_plain (PIQ_DTYPE_F32, y5s, 2);
    g_autoptr(PiqTensor) y1 = gemm_plain (PIQ_DTYPE_F32, y1s, 1);
    g_autoptr(PiqTensor) y3 = gemm_plain (PIQ_DTYPE_INT32, y3s, 3);
    g_autoptr(PiqTensor) b8 = gemm_plain (PIQ_DTYPE_F32, &n8, 1);
    g_autoptr(PiqTensor) b10 = gemm_plain (PIQ_DTYPE_F32, &n10, 1);
    g_autoptr(PiqTensor) y16 = gemm_plain (PIQ_DTYPE_UINT16, ys, 2);
    gemm_expect_fail ("K mismatch", a31, pw, NULL, NULL, y, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("Y with N − 1 columns", a, pw, NULL, NULL, y8, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("Y with M + 1 rows", a, pw, NULL, NULL, y5, PIQ_REDUCE_ADD, -1);
    gemm_expect_fail ("Y 1-D of M·N elements", a, pw, NULL, NULL, y1, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("Y [2, 2, N] for A [4, K]", a, pw, NULL, NULL, y3, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("bias of N − 1", a, pw, b8, NULL, y, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("bias of N + 1", a, pw, b10, NULL, y, PIQ_REDUCE_SET, -1);
    gemm_expect_fail ("uint16 Y", a, pw, NULL, NULL, y16, PIQ_REDUCE_SET, -1);
  }
  {
    /* a recipe zero point outside the output type (piq-error.h: INVALID_ZERO_POINT) */
    g_autoptr(PiqFormat) yf = piq_format_new (PIQ_DTYPE_UINT8);
    g_autoptr(PiqFormat) yf8 = piq_format_new (PIQ_DTYPE_INT8);
    g_autoptr(PiqTensor) qy = piq_tensor_new_quantized (yf, ys, 2, &error);
    g_autoptr(PiqTensor) qy8 = NULL;
    g_autoptr(PiqRecipe) r256 = piq_recipe_new_affine (0.5, 256);
    g_autoptr(PiqRecipe) rneg = piq_recipe_new_affine (0.5, -1);
    g_autoptr(PiqRecipe) r128 = piq_recipe_new_affine (0.5, 128);
    g_assert_no_error (error);
    qy8 = piq_tensor_new_quantized (yf8, ys, 2, &error);
    g_assert_no_error (error);
    memset (piq_tensor_get_writable_data (qy, NULL), 0x5a, piq_tensor_get_n_bytes (qy));
    memset (piq_tensor_get_writable_data (qy8, NULL), 0x5a, piq_tensor_get_n_bytes (qy8));
    gemm_expect_fail ("uint8 output, recipe zero point 256", a, pw, NULL, r256, qy, PIQ_REDUCE_SET,
                      PIQ_ERROR_INVALID_ZERO_POINT);
    gemm_expect_fail ("uint8 output, recipe zero point -1", a, pw, NULL, rneg, qy, PIQ_REDUCE_SET,
                      PIQ_ERROR_INVALID_ZERO_POINT);
    gemm_expect_fail ("int8 output, recipe zero point 128", a, pw, NULL, r128, qy8, PIQ_REDUCE_SET,
                      PIQ_ERROR_INVALID_ZERO_POINT);
  }
  {
    guint8 *mem = g_malloc0 (4 * 9 * 4);
    g_autoptr(PiqTensor) yr = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) mem, 4 * 9 * 4, 0, FALSE,
                                                          &error);
    g_assert_no_error (error);
    gemm_expect_fail ("read-only Y", a, pw, NULL, NULL, yr, PIQ_REDUCE_SET, PIQ_ERROR_READ_ONLY);
    g_clear_object (&yr);
    g_free (mem);
  }
}

/* ---- both operands quantized: matmul_quantized with weights packed for float ----
 *
 * The definition (docs/matmul.md): Y = the float policy's product of A decoded to
 * binary32 as dequantize decodes it, so (a) Y's bytes equal matmul (dequantize (A), W)
 * and (c) do not depend on threads or the SIMD level. (b) bounds Y against a double
 * product of A and W decoded here, from their bytes, by the published definitions
 * (../shared/FORMATS.md §4–6, docs/formats.md): the minifloats, E8M0, MXINT8's
 * q · 2⁻⁶, and MSFP/BFP's sign and magnitude · 2^(E − 127 − m). */

/* Element i of a little-endian bit stream of w-bit codes (FP6's layout; FP4 and
 * 4-bit BFP low nibble first, 8-bit codes one per byte). */
static guint32
bq_bits (const guint8 *b, guint64 i, guint w)
{
  guint64 bit = i * w;
  guint32 v = 0;

  for (guint j = 0; j < w; j++)
    v |= (guint32) ((b[(bit + j) / 8] >> ((bit + j) % 8)) & 1) << j;
  return v;
}

/* An OCP minifloat: sign, ebits of exponent (bias 2^(ebits−1) − 1), mbits of
 * mantissa; E4M3 S.1111.111 NaN, E5M2 exponent 31 Inf/NaN, FP6/FP4 none. */
static double
bq_minifloat (guint32 c, int ebits, int mbits, PiqDtype dt)
{
  int s = (c >> (ebits + mbits)) & 1, e = (c >> mbits) & ((1 << ebits) - 1), m = c & ((1 << mbits) - 1);
  int bias = (1 << (ebits - 1)) - 1;
  double v;

  if (dt == PIQ_DTYPE_FP8_E4M3 && e == 15 && m == 7)
    return NAN;
  if (dt == PIQ_DTYPE_FP8_E5M2 && e == 31)
    return m ? NAN : s ? -INFINITY : INFINITY;
  v = e == 0 ? ldexp (m, 1 - bias - mbits) : ldexp (1.0 + ldexp (m, -mbits), e - bias);
  return s ? -v : v;
}

/* Whether the test decodes dt itself (else (b) is skipped for it). */
static gboolean
bq_decodes (PiqFormat *f)
{
  PiqDtype dt = piq_format_get_dtype (f);
  return (dt >= PIQ_DTYPE_FP8_E4M3 && dt <= PIQ_DTYPE_FP4_E2M1) ||
         (dt >= PIQ_DTYPE_BFP2 && dt <= PIQ_DTYPE_BFP8) ||
         (dt == PIQ_DTYPE_INT8 && piq_format_get_scale_dtype (f) == PIQ_DTYPE_E8M0 &&
          piq_format_get_granularity (f) == PIQ_GRANULARITY_BLOCK);
}

/* The values of a quantized [R, K] tensor, in double, from its bytes. */
static double *
bq_decode (PiqTensor *t, guint64 R, guint64 K)
{
  PiqFormat *f = piq_tensor_get_format (t);
  PiqDtype dt = piq_format_get_dtype (f), sdt = piq_format_get_scale_dtype (f);
  PiqGranularity gran = piq_format_get_granularity (f);
  const guint8 *codes = piq_tensor_get_data (t, NULL);
  g_autoptr(GBytes) sb = piq_tensor_get_scales (t);
  const guint8 *scales = sb ? g_bytes_get_data (sb, NULL) : NULL;
  guint block = piq_format_get_block_size (f);
  guint bits = dt >= PIQ_DTYPE_BFP2 ? 2 + (dt - PIQ_DTYPE_BFP2) + 1     /* sign + 2 … 8 */
               : dt == PIQ_DTYPE_FP6_E2M3 || dt == PIQ_DTYPE_FP6_E3M2 ? 6
               : dt == PIQ_DTYPE_FP4_E2M1 ? 4 : 8;
  double *v = g_new (double, R * K);

  if (block == 0)
    block = sdt == PIQ_DTYPE_E8M0 ? 32 : 64;
  for (guint64 r = 0; r < R; r++)
    for (guint64 k = 0; k < K; k++)
      {
        guint32 c = bq_bits (codes, r * K + k, bits);
        double e, s;
        switch (dt)
          {
          case PIQ_DTYPE_FP8_E4M3: e = bq_minifloat (c, 4, 3, dt); break;
          case PIQ_DTYPE_FP8_E5M2: e = bq_minifloat (c, 5, 2, dt); break;
          case PIQ_DTYPE_FP6_E2M3: e = bq_minifloat (c, 2, 3, dt); break;
          case PIQ_DTYPE_FP6_E3M2: e = bq_minifloat (c, 3, 2, dt); break;
          case PIQ_DTYPE_FP4_E2M1: e = bq_minifloat (c, 2, 1, dt); break;
          case PIQ_DTYPE_INT8:     e = ldexp ((gint8) c, -6); break;   /* MXINT8 */
          default:
            {
              guint mb = bits - 1;                                     /* BFP: sign, magnitude */
              e = ldexp (c & ((1u << mb) - 1), -(int) mb);
              e = (c >> mb) & 1 ? -e : e;
            }
          }
        if (gran == PIQ_GRANULARITY_TENSOR)
          s = piq_tensor_get_scale (t);
        else if (gran == PIQ_GRANULARITY_CHANNEL)
          {
            g_assert_cmpint (piq_format_get_axis (f), ==, 0);
            s = scale_at (sdt, scales, r);
          }
        else
          {
            guint64 bpr = (K + block - 1) / block, i = r * bpr + k / block;
            s = sdt == PIQ_DTYPE_E8M0 ? (scales[i] == 0xff ? NAN : ldexp (1.0, scales[i] - 127))
                                      : scale_at (sdt, scales, i);
          }
        v[r * K + k] = e * s;
      }
  return v;
}

static PiqFormat *
bq_format (const char *name)
{
  g_autoptr(GError) error = NULL;
  PiqFormat *f;

  if (g_str_equal (name, "fp8_e4m3-row"))
    return piq_format_new_per_channel (PIQ_DTYPE_FP8_E4M3, 0);
  if (g_str_equal (name, "fp8_e5m2-row"))
    return piq_format_new_per_channel (PIQ_DTYPE_FP8_E5M2, 0);
  if (g_str_equal (name, "bfp5-box32"))
    return piq_format_new_per_block (PIQ_DTYPE_BFP5, 32, PIQ_DTYPE_E8M0);
  if (g_str_equal (name, "fp8_e4m3-block16-f16"))
    return piq_format_new_per_block (PIQ_DTYPE_FP8_E4M3, 16, PIQ_DTYPE_F16);
  if (g_str_equal (name, "int8-channel0"))
    return piq_format_new_per_channel (PIQ_DTYPE_INT8, 0);
  f = piq_format_new_preset (name, &error);
  g_assert_no_error (error);
  return f;
}

/* Whether rows of K elements of f may start anywhere: FP6 and 4-bit codes need
 * K a multiple of 4 or 2 only for the test's own row slicing (none here). */
typedef struct {
  const char *a, *w;
} BqPair;

static const BqPair bq_pairs[] = {
  { "fp8_e4m3", "fp8_e4m3" },         { "fp8_e5m2", "fp8_e5m2" },
  { "fp8_e4m3-row", "fp8_e4m3-row" }, { "fp8_e5m2-row", "fp8_e5m2" },
  { "mxfp8_e4m3", "mxfp8_e4m3" },     { "mxfp8_e5m2", "mxfp8_e5m2" },
  { "mxfp6_e2m3", "mxfp6_e2m3" },     { "mxfp6_e3m2", "mxfp6_e3m2" },
  { "mxfp4", "mxfp4" },               { "mxint8", "mxint8" },
  { "msfp12", "msfp12" },             { "msfp16", "msfp16" },
  { "bfp5-box32", "bfp5-box32" },
  /* cross pairs */
  { "fp8_e4m3", "mxfp4" },            { "msfp16", "fp8_e5m2" },
  { "mxint8", "msfp12" },             { "fp8_e4m3-block16-f16", "mxfp6_e2m3" },
  { "nf4", "fp8_e4m3" },              { "int8-channel0", "mxfp8_e4m3" },
  { "q4_0", "msfp16" },               { "nf4_dq", "nf4" },
};

/* M, N, K: M of the issue; K across 16, the blocks of 16 and 32, odd */
static const guint64 bq_shapes[][3] = {
  { 1, 9, 31 }, { 2, 17, 33 }, { 3, 8, 64 }, { 7, 5, 100 }, { 64, 9, 47 }, { 65, 17, 129 },
};

/* A random float tensor [R, K] quantized to f, rows of varying magnitude. */
static PiqTensor *
bq_quantize (PiqFormat *f, guint64 R, guint64 K, double base)
{
  guint64 shape[2] = { R, K };
  return quantize_random (f, shape, 2, base);
}

/* Y for a product [M, N] of dtype dt: fresh bytes (a pattern of finite values for ADD). */
static PiqTensor *
bq_y (PiqDtype dt, guint64 M, guint64 N)
{
  g_autofree double *v = random_values (M * N, 0, 1.0);
  guint64 shape[2] = { M, N };
  return float_tensor (dt, shape, 2, v);
}

static PiqTensor *
bq_copy (PiqTensor *t)
{
  g_autoptr(GError) error = NULL;
  guint n_dims;
  const guint64 *shape = piq_tensor_get_shape (t, &n_dims);
  PiqTensor *c = piq_tensor_new_shaped (piq_tensor_get_dtype (t), shape, n_dims, &error);

  g_assert_no_error (error);
  memcpy (piq_tensor_get_writable_data (c, NULL), piq_tensor_get_data (t, NULL), piq_tensor_get_n_bytes (t));
  return c;
}

/* (a): matmul_quantized (A, W) against matmul (dequantize (A) as f32, W), same Y
 * before, same bias, same op: identical bytes. Returns the product (f32 SET, no bias:
 * for the bounds). */
static void
bq_check_equal (const char *what, PiqQuantizer *q, PiqTensor *a, PiqPackedWeights *pw, PiqTensor *bias,
                PiqTensor *y0, PiqReduceOp op)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) ad = piq_quantizer_dequantize_new (q, a, PIQ_DTYPE_F32, &error);
  g_autoptr(PiqTensor) y1 = NULL, y2 = NULL;
  gsize n = piq_tensor_get_n_bytes (y0);

  g_assert_no_error (error);
  y1 = bq_copy (y0);
  y2 = bq_copy (y0);
  if (!piq_quantizer_matmul_quantized (q, a, pw, bias, NULL, y1, op, &error))
    g_error ("%s: matmul_quantized failed: %s", what, error->message);
  if (!piq_quantizer_matmul (q, ad, pw, bias, y2, op, &error))
    g_error ("%s: matmul failed: %s", what, error->message);
  if (memcmp (piq_tensor_get_data (y1, NULL), piq_tensor_get_data (y2, NULL), n) != 0)
    {
      const guint8 *p1 = piq_tensor_get_data (y1, NULL), *p2 = piq_tensor_get_data (y2, NULL);
      gsize i = 0;
      while (p1[i] == p2[i])
        i++;
      g_error ("%s: matmul_quantized (A, W) differs from matmul (dequantize (A), W) at byte %zu", what, i);
    }
}

static void
test_both_quantized (gconstpointer data)
{
  const BqPair *pair = data;
  g_autoptr(PiqFormat) af = bq_format (pair->a);
  g_autoptr(PiqFormat) wf = bq_format (pair->w);
  PiqQuantizer *q = piq_quantizer_get_default ();
  guint salt = g_str_hash (pair->a) ^ g_str_hash (pair->w);

  for (gsize si = 0; si < G_N_ELEMENTS (bq_shapes); si++)
    {
      guint64 M = bq_shapes[si][0], N = bq_shapes[si][1], K = bq_shapes[si][2];
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqTensor) a = bq_quantize (af, M, K, 1.0);
      g_autoptr(PiqTensor) w = bq_quantize (wf, N, K, 0.5);
      g_autoptr(PiqPackedWeights) pw = piq_packed_weights_new (w, PIQ_ACTIVATION_FLOAT, &error);
      g_autofree double *bv = random_values (N, 0, 0.25);
      guint64 nb = N;
      g_autoptr(PiqTensor) bias = float_tensor (float_dtypes[(si + salt) % 4], &nb, 1, bv);

      g_assert_no_error (error);
      /* (a) every output dtype, SET and ADD, with and without a bias */
      for (gsize di = 0; di < 4; di++)
        for (int j = 0; j < 2; j++)
          {
            g_autoptr(PiqTensor) y0 = bq_y (float_dtypes[(di + si) % 4], M, N);
            char what[160];
            g_snprintf (what, sizeof what, "A %s × W %s, M %" G_GUINT64_FORMAT " N %" G_GUINT64_FORMAT
                        " K %" G_GUINT64_FORMAT ", Y %s, %s%s", pair->a, pair->w, M, N, K,
                        o_dtype_name (float_dtypes[(di + si) % 4]), j ? "ADD" : "SET", (di + j) % 2 ? ", bias" : "");
            bq_check_equal (what, q, a, pw, (di + j) % 2 ? bias : NULL, y0, j ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET);
          }

      /* (b) f32 SET with a bias against the double product of the independent decode */
      if (bq_decodes (af) && bq_decodes (wf))
        {
          g_autofree double *av = bq_decode (a, M, K);
          g_autofree double *wv = bq_decode (w, N, K);
          g_autoptr(PiqTensor) ad = piq_quantizer_dequantize_new (q, a, PIQ_DTYPE_F32, &error);
          g_autoptr(PiqTensor) wd = piq_quantizer_dequantize_new (q, w, PIQ_DTYPE_F32, &error);
          g_autoptr(PiqTensor) y = bq_y (PIQ_DTYPE_F32, M, N);
          const float *adf = piq_tensor_get_data (ad, NULL), *wdf = piq_tensor_get_data (wd, NULL);
          const float *yf;
          const guint8 *bb = piq_tensor_get_data (bias, NULL);

          g_assert_no_error (error);
          /* the library's decode is the published one (rounded to binary32) */
          for (guint64 i = 0; i < M * K; i++)
            if (!(adf[i] == (float) av[i] || (isnan (adf[i]) && isnan (av[i]))))
              g_error ("A %s: element %" G_GUINT64_FORMAT " decodes to %.9g, the definition gives %.17g",
                       pair->a, i, adf[i], av[i]);
          for (guint64 i = 0; i < N * K; i++)
            if (!(wdf[i] == (float) wv[i] || (isnan (wdf[i]) && isnan (wv[i]))))
              g_error ("W %s: element %" G_GUINT64_FORMAT " decodes to %.9g, the definition gives %.17g",
                       pair->w, i, wdf[i], wv[i]);
          g_assert_true (piq_quantizer_matmul_quantized (q, a, pw, bias, NULL, y, PIQ_REDUCE_SET, &error));
          g_assert_no_error (error);
          yf = piq_tensor_get_data (y, NULL);
          for (guint64 m = 0; m < M; m++)
            for (guint64 n = 0; n < N; n++)
              {
                double exact = 0, mag = 0, b = (float) o_read_float (piq_tensor_get_dtype (bias), bb, n);
                double bound, err;
                for (guint64 k = 0; k < K; k++)
                  {
                    exact += av[m * K + k] * wv[n * K + k];
                    mag += fabs (av[m * K + k] * wv[n * K + k]);
                  }
                exact += b;
                /* K/16 + 4 fma/add roundings per lane chain and tree, the operands'
                 * rounding to binary32 (2), the bias and the store: (K/16 + 8) u Σ|a w| */
                bound = ((double) K / 16 + 8) * ldexp (1.0, -24) * (mag + fabs (b)) + 1e-300;
                err = fabs ((double) yf[m * N + n] - exact);
                if (!(err <= bound))
                  g_error ("A %s × W %s [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]: Y %.9g, exact %.17g, "
                           "error %.3g above %.3g", pair->a, pair->w, m, n, yf[m * N + n], exact, err, bound);
              }
        }
    }

  /* (c) one shape, every SIMD level × 1…4 threads: the default quantizer's bytes */
  {
    guint64 M = 65, N = 17, K = 129;
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqTensor) a = bq_quantize (af, M, K, 1.0);
    g_autoptr(PiqTensor) w = bq_quantize (wf, N, K, 0.5);
    g_autoptr(PiqPackedWeights) pw = piq_packed_weights_new (w, PIQ_ACTIVATION_FLOAT, &error);
    g_autoptr(PiqTensor) ref = bq_y (PIQ_DTYPE_F32, M, N);
    static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2,
                                           PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX_VNNI,
                                           PIQ_SIMD_LEVEL_AVX512 };

    g_assert_no_error (error);
    g_assert_true (piq_quantizer_matmul_quantized (q, a, pw, NULL, NULL, ref, PIQ_REDUCE_SET, &error));
    g_assert_no_error (error);
    for (gsize li = 0; li < G_N_ELEMENTS (levels); li++)
      for (guint t = 1; t <= 4 && !level_seen (levels, li); t++)
        {
          g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
          g_autoptr(PiqTensor) y = bq_y (PIQ_DTYPE_F32, M, N);
          piq_quantizer_set_n_threads (qt, t);
          piq_quantizer_set_max_simd_level (qt, levels[li]);
          g_assert_true (piq_quantizer_matmul_quantized (qt, a, pw, NULL, NULL, y, PIQ_REDUCE_SET, &error));
          g_assert_no_error (error);
          if (memcmp (piq_tensor_get_data (y, NULL), piq_tensor_get_data (ref, NULL), M * N * 4) != 0)
            g_error ("A %s × W %s: %u threads at max SIMD level %d (%d in use) differ from the default quantizer",
                     pair->a, pair->w, t, levels[li], piq_quantizer_get_simd_level (qt));
        }
  }
}


/* Bad input of the both-quantized product: a GError and Y's bytes unchanged. */
static void
test_both_bad_input (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) f8 = bq_format ("fp8_e4m3");
  g_autoptr(PiqFormat) mx = bq_format ("mxfp4");
  g_autoptr(PiqFormat) i8 = piq_format_new (PIQ_DTYPE_INT8);
  g_autoptr(PiqTensor) a = bq_quantize (f8, 4, 32, 1.0);
  g_autoptr(PiqTensor) w = bq_quantize (mx, 9, 32, 0.5);
  g_autoptr(PiqTensor) wi = bq_quantize (i8, 9, 32, 0.5);
  g_autoptr(PiqPackedWeights) pw = piq_packed_weights_new (w, PIQ_ACTIVATION_FLOAT, &error);
  g_autoptr(PiqPackedWeights) pwi = pack_dyn (wi);
  guint64 ys[2] = { 4, 9 }, n8 = 8, n9 = 9;
  g_autoptr(PiqTensor) y = gemm_plain (PIQ_DTYPE_F32, ys, 2);
  g_autoptr(PiqTensor) b = gemm_plain (PIQ_DTYPE_F32, &n9, 1);
  PiqQuantizer *q = piq_quantizer_get_default ();

  g_assert_no_error (error);
  /* the base case works, SET and ADD */
  g_assert_true (piq_quantizer_matmul_quantized (q, a, pw, b, NULL, y, PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_matmul_quantized (q, a, pw, NULL, NULL, y, PIQ_REDUCE_ADD, &error));
  g_assert_no_error (error);
  {
    g_autoptr(PiqTensor) a31 = bq_quantize (f8, 4, 31, 1.0);
    g_autoptr(PiqTensor) b8 = gemm_plain (PIQ_DTYPE_F32, &n8, 1);
    guint64 bs2[2] = { 1, 9 }, y8s[2] = { 4, 8 }, y5s[2] = { 5, 9 }, y1s[1] = { 36 }, y3s[3] = { 2, 2, 9 };
    g_autoptr(PiqTensor) b2 = gemm_plain (PIQ_DTYPE_F32, bs2, 2);
    g_autoptr(PiqTensor) y8 = gemm_plain (PIQ_DTYPE_F32, y8s, 2);
    g_autoptr(PiqTensor) y5 = gemm_plain (PIQ_DTYPE_F32, y5s, 2);
    g_autoptr(PiqTensor) y1 = gemm_plain (PIQ_DTYPE_F32, y1s, 1);
    g_autoptr(PiqTensor) y3 = gemm_plain (PIQ_DTYPE_F32, y3s, 3);
    g_autoptr(PiqTensor) yi = gemm_plain (PIQ_DTYPE_INT32, ys, 2);
    g_autoptr(PiqTensor) af = gemm_plain (PIQ_DTYPE_F32, (guint64[]) { 4, 32 }, 2);
    g_autoptr(PiqFormat) yf = piq_format_new (PIQ_DTYPE_UINT8);
    g_autoptr(PiqTensor) qy = piq_tensor_new_quantized (yf, ys, 2, &error);
    g_autoptr(PiqRecipe) r = piq_recipe_new_affine (0.5, 128);
    g_assert_no_error (error);
    memset (piq_tensor_get_writable_data (qy, NULL), 0x5a, piq_tensor_get_n_bytes (qy));
    gemm_expect_fail ("fp8: K mismatch", a31, pw, NULL, NULL, y, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
    gemm_expect_fail ("fp8: Y with N − 1 columns", a, pw, NULL, NULL, y8, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
    gemm_expect_fail ("fp8: Y with M + 1 rows", a, pw, NULL, NULL, y5, PIQ_REDUCE_ADD, PIQ_ERROR_SIZE);
    gemm_expect_fail ("fp8: Y 1-D of M·N elements", a, pw, NULL, NULL, y1, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
    gemm_expect_fail ("fp8: Y [2, 2, N] for A [4, K]", a, pw, NULL, NULL, y3, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
    gemm_expect_fail ("fp8: bias of N − 1", a, pw, b8, NULL, y, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
    gemm_expect_fail ("fp8: bias [1, N]", a, pw, b2, NULL, y, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
    gemm_expect_fail ("fp8: int32 Y", a, pw, NULL, NULL, yi, PIQ_REDUCE_SET, PIQ_ERROR_UNSUPPORTED);
    gemm_expect_fail ("fp8: quantized Y", a, pw, NULL, r, qy, PIQ_REDUCE_SET, PIQ_ERROR_UNSUPPORTED);
    gemm_expect_fail ("fp8: a recipe for a float Y", a, pw, NULL, r, y, PIQ_REDUCE_SET, PIQ_ERROR_UNSUPPORTED);
    gemm_expect_fail ("f32 A", af, pw, NULL, NULL, y, PIQ_REDUCE_SET, PIQ_ERROR_UNSUPPORTED);
    /* an unsupported pair: FP8 A with weights packed for dynamic int8 */
    gemm_expect_fail ("fp8 A × int8 W packed for dynamic int8", a, pwi, NULL, NULL, y, PIQ_REDUCE_SET,
                      PIQ_ERROR_UNSUPPORTED);
  }
  {
    /* A [2, 2, K] with one scale per channel of axis 1: not rows of a matrix */
    g_autoptr(PiqFormat) fc1 = piq_format_new_per_channel (PIQ_DTYPE_FP8_E4M3, 1);
    guint64 as3[3] = { 2, 2, 32 }, ys3[3] = { 2, 2, 9 };
    g_autoptr(PiqTensor) a3 = quantize_random (fc1, as3, 3, 1.0);
    g_autoptr(PiqTensor) y3 = gemm_plain (PIQ_DTYPE_F32, ys3, 3);
    gemm_expect_fail ("A [2, 2, K] per channel of axis 1", a3, pw, NULL, NULL, y3, PIQ_REDUCE_SET,
                      PIQ_ERROR_UNSUPPORTED);
  }
  {
    /* Y over A's codes, over the bias; read-only Y */
    guint8 *mem = g_malloc0 (4 * 9 * 4 + 64);
    g_autoptr(GBytes) codes = NULL;
    g_autoptr(PiqTensor) am = NULL, ya = NULL, yr = NULL, ba = NULL, yb = NULL;
    gsize n;
    const guint8 *src = piq_tensor_get_data (a, &n);
    memcpy (mem, src, n);
    codes = g_bytes_new_static (mem, n);
    am = piq_tensor_new_quantized_from_bytes (f8, (guint64[]) { 4, 32 }, 2, codes, NULL, NULL,
                                              piq_tensor_get_scale (a), 0, &error);
    g_assert_no_error (error);
    ya = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) (mem + 8), 4 * 9 * 4, 0, TRUE, &error);
    g_assert_no_error (error);
    gemm_expect_fail ("Y over A's codes", am, pw, NULL, NULL, ya, PIQ_REDUCE_SET, PIQ_ERROR_OVERLAP);
    yb = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) (mem + 4 * 9 * 4 + 64 - 4 * 9 * 4), 4 * 9 * 4,
                                     0, TRUE, &error);
    g_assert_no_error (error);
    ba = piq_tensor_new_for_address (PIQ_DTYPE_F32, &n9, 1, (guintptr) (mem + 4 * 9 * 4 + 64 - 36), 36, 0, FALSE,
                                     &error);
    g_assert_no_error (error);
    gemm_expect_fail ("Y over the bias", a, pw, ba, NULL, yb, PIQ_REDUCE_SET, PIQ_ERROR_OVERLAP);
    yr = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) mem, 4 * 9 * 4, 0, FALSE, &error);
    g_assert_no_error (error);
    gemm_expect_fail ("read-only Y", a, pw, NULL, NULL, yr, PIQ_REDUCE_SET, PIQ_ERROR_READ_ONLY);
    g_clear_object (&am);
    g_clear_object (&ya);
    g_clear_object (&yb);
    g_clear_object (&ba);
    g_clear_object (&yr);
    g_clear_pointer (&codes, g_bytes_unref);
    g_free (mem);
  }
}

/* A [2, 3, K] (leading extents kept), 1-D A, unaligned and strided operands. */
static void
test_both_layout (void)
{
  g_autoptr(GError) error = NULL;
  PiqQuantizer *q = piq_quantizer_get_default ();
  static const char *const names[] = { "msfp16", "mxfp4", "fp8_e5m2", "mxfp6_e3m2" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autoptr(PiqFormat) f = bq_format (names[i]);
      guint64 K = 33, N = 7;
      guint64 as3[3] = { 2, 3, K }, ys3[3] = { 2, 3, N }, as1[1] = { K }, ys1[1] = { N };
      g_autoptr(PiqTensor) a3 = quantize_random (f, as3, 3, 1.0);
      g_autoptr(PiqTensor) a1 = quantize_random (f, as1, 1, 1.0);
      g_autoptr(PiqTensor) w = bq_quantize (f, N, K, 0.5);
      g_autoptr(PiqPackedWeights) pw = piq_packed_weights_new (w, PIQ_ACTIVATION_FLOAT, &error);
      g_autoptr(PiqTensor) y3 = gemm_plain (PIQ_DTYPE_F32, ys3, 3);
      g_autoptr(PiqTensor) y1 = gemm_plain (PIQ_DTYPE_BF16, ys1, 1);

      g_assert_no_error (error);
      bq_check_equal ("A [2, 3, K]", q, a3, pw, NULL, y3, PIQ_REDUCE_ADD);
      bq_check_equal ("A [K]", q, a1, pw, NULL, y1, PIQ_REDUCE_SET);

      /* A's codes and scales at odd addresses, Y unaligned with strided rows */
      {
        guint64 M = 7, as[2] = { M, K }, ys[2] = { M, N };
        g_autoptr(PiqTensor) a = bq_quantize (f, M, K, 1.0);
        g_autoptr(GBytes) sc = piq_tensor_get_scales (a);
        gsize cn, sn = sc ? g_bytes_get_size (sc) : 0, ystride = N * 4 + 12, ybytes = (M - 1) * ystride + N * 4;
        const guint8 *cd = piq_tensor_get_data (a, &cn);
        guint8 *cmem = g_malloc (cn + 1), *smem = g_malloc (sn + 1), *ymem = g_malloc (ybytes + 2);
        guint8 *yref = g_malloc (ybytes + 2);
        g_autoptr(GBytes) cb = NULL, sb = NULL;
        g_autoptr(PiqTensor) au = NULL, yu = NULL, want = NULL;
        g_autoptr(PiqTensor) ad = piq_quantizer_dequantize_new (q, a, PIQ_DTYPE_F32, &error);

        g_assert_no_error (error);
        memcpy (cmem + 1, cd, cn);
        if (sn)
          memcpy (smem + 1, g_bytes_get_data (sc, NULL), sn);
        cb = g_bytes_new_static (cmem + 1, cn);
        sb = sn ? g_bytes_new_static (smem + 1, sn) : NULL;
        au = piq_tensor_new_quantized_from_bytes (f, as, 2, cb, sb, NULL, piq_tensor_get_scale (a), 0, &error);
        g_assert_no_error (error);
        for (gsize j = 0; j < ybytes + 2; j++)
          ymem[j] = (guint8) (0x35 + j);
        memcpy (yref, ymem, ybytes + 2);
        yu = piq_tensor_new_for_address (PIQ_DTYPE_F32, ys, 2, (guintptr) (ymem + 1), ybytes, ystride, TRUE, &error);
        g_assert_no_error (error);
        g_assert_true (piq_quantizer_matmul_quantized (q, au, pw, NULL, NULL, yu, PIQ_REDUCE_ADD, &error));
        g_assert_no_error (error);
        want = gemm_plain (PIQ_DTYPE_F32, ys, 2);
        for (guint64 m = 0; m < M; m++)
          memcpy ((guint8 *) piq_tensor_get_writable_data (want, NULL) + m * N * 4, yref + 1 + m * ystride, N * 4);
        g_assert_true (piq_quantizer_matmul (q, ad, pw, NULL, want, PIQ_REDUCE_ADD, &error));
        g_assert_no_error (error);
        for (guint64 m = 0; m < M; m++)
          {
            g_assert_cmpmem (ymem + 1 + m * ystride, N * 4,
                             (const guint8 *) piq_tensor_get_data (want, NULL) + m * N * 4, N * 4);
            memcpy (yref + 1 + m * ystride, ymem + 1 + m * ystride, N * 4);
          }
        g_assert_cmpmem (yref, ybytes + 2, ymem, ybytes + 2);   /* nothing else written */
        g_clear_object (&au);
        g_clear_object (&yu);
        g_clear_pointer (&cb, g_bytes_unref);
        g_clear_pointer (&sb, g_bytes_unref);
        g_free (cmem);
        g_free (smem);
        g_free (ymem);
        g_free (yref);
      }
    }
}

/* Rows of A past one block of decoded rows (2 MiB of binary32): M = 4100, K = 160,
 * N = 3, against matmul (dequantize (A)). */
static void
test_both_long (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) f = bq_format ("mxfp8_e4m3");
  g_autoptr(PiqTensor) a = bq_quantize (f, 4100, 160, 1.0);
  g_autoptr(PiqTensor) w = bq_quantize (f, 3, 160, 0.5);
  g_autoptr(PiqPackedWeights) pw = piq_packed_weights_new (w, PIQ_ACTIVATION_FLOAT, &error);
  g_autoptr(PiqTensor) y = bq_y (PIQ_DTYPE_F16, 4100, 3);

  g_assert_no_error (error);
  bq_check_equal ("M 4100 (several blocks of rows)", piq_quantizer_get_default (), a, pw, NULL, y, PIQ_REDUCE_ADD);
}


/* ---- both operands integer blocks: the exact block-integer product ----
 *
 * A signed integer codes per block (MXINT8, int8/int4 blocks) × W packed for dynamic
 * int8 with groups of A's block size (docs/matmul.md): I_g = Σ (a − za)(w − zw)
 * exact; acc = acc + ((double) I_g · sw_g) · sa_g in binary64, groups in order;
 * v = (float) acc, + bias in binary32, stored as every product stores. The oracle
 * reads both operands' codes and scales from their bytes (weights_ints). */

typedef struct {
  const char *a, *w;
} BlkPair;

static const BlkPair blk_pairs[] = {
  { "mxint8", "mxint8" },   { "int8_block", "int8_block" }, { "int4_block", "int4_block" },
  { "mxint8", "q8_0" },     { "mxint8", "q4_0" },           { "mxint8", "int8-block32-f16" },
  { "int4_block", "uint4-block64-affine" },                 { "int4_block", "int8_block" },
};

static PiqFormat *
blk_format (const char *name)
{
  if (g_str_equal (name, "int8-block32-f16"))
    return piq_format_new_per_block (PIQ_DTYPE_INT8, 32, PIQ_DTYPE_F16);
  if (g_str_equal (name, "uint4-block64-affine"))
    return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_UINT4, "granularity", PIQ_GRANULARITY_BLOCK,
                         "block-size", 64, "scale-dtype", PIQ_DTYPE_F32, "symmetric", FALSE, NULL);
  return bq_format (name);
}

/* The definition's bytes for A (M rows) × W, into y (holding Y's old bytes). */
static void
blk_oracle (const Weights *A, const Weights *W, const float *bf, PiqDtype ydt, PiqReduceOp op, guint8 *y)
{
  guint64 M = A->N, N = W->N, K = W->K, G = W->G;

  g_assert_cmpuint (A->G, ==, G);
  for (guint64 m = 0; m < M; m++)
    for (guint64 n = 0; n < N; n++)
      {
        double acc = 0;
        float v;
        for (guint64 g = 0; g < W->n_groups; g++)
          {
            gint64 I = 0;
            for (guint64 k = g * G; k < K && k < (g + 1) * G; k++)
              I += (gint64) A->cz[m * K + k] * W->cz[n * K + k];
            acc += (double) I * (double) W->s[n * W->n_groups + g] * (double) A->s[m * A->n_groups + g];
          }
        v = (float) acc;
        if (bf != NULL)
          v = v + bf[n];
        if (ydt == PIQ_DTYPE_F64)
          {
            double old = o_read_float (ydt, y, m * N + n);
            o_write_float (ydt, y, m * N + n, op == PIQ_REDUCE_ADD ? old + (double) v : (double) v);
          }
        else
          {
            float o = op == PIQ_REDUCE_ADD ? (float) o_read_float (ydt, y, m * N + n) + v : v;
            o_store_f32 (ydt, y, m * N + n, isnan (o) ? NAN : o);
          }
      }
}

static void
blk_run (const char *what, PiqQuantizer *q, const Weights *A, const Weights *W, PiqPackedWeights *pw,
         PiqTensor *bias, PiqDtype ydt, PiqReduceOp op)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) y = bq_y (ydt, A->N, W->N);
  gsize n = piq_tensor_get_n_bytes (y);
  g_autofree guint8 *want = g_memdup2 (piq_tensor_get_data (y, NULL), n);
  g_autofree float *bf = NULL;

  if (bias != NULL)
    {
      bf = g_new (float, W->N);
      for (guint64 i = 0; i < W->N; i++)
        bf[i] = to_f32 (piq_tensor_get_dtype (bias), piq_tensor_get_data (bias, NULL), i);
    }
  blk_oracle (A, W, bf, ydt, op, want);
  if (!piq_quantizer_matmul_quantized (q, A->w, pw, bias, NULL, y, op, &error))
    g_error ("%s: failed: %s", what, error->message);
  if (memcmp (want, piq_tensor_get_data (y, NULL), n) != 0)
    {
      const guint8 *got = piq_tensor_get_data (y, NULL);
      gsize i = 0;
      while (want[i] == got[i])
        i++;
      g_error ("%s: byte %zu is %#x, the definition gives %#x", what, i, got[i], want[i]);
    }
}

static void
test_blocks (gconstpointer data)
{
  const BlkPair *pair = data;
  g_autoptr(PiqFormat) af = blk_format (pair->a);
  g_autoptr(PiqFormat) wf = blk_format (pair->w);
  guint salt = g_str_hash (pair->a) ^ g_str_hash (pair->w);
  static const guint64 shapes3[][3] = {
    { 1, 9, 31 }, { 2, 17, 32 }, { 3, 8, 64 }, { 7, 5, 100 }, { 64, 9, 128 }, { 65, 17, 129 },
  };

  for (gsize si = 0; si < G_N_ELEMENTS (shapes3); si++)
    {
      guint64 M = shapes3[si][0], N = shapes3[si][1], K = shapes3[si][2];
      Weights A, W;
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqPackedWeights) pw = NULL;
      g_autofree double *bv = random_values (N, 0, 0.25);
      guint64 nb = N;
      g_autoptr(PiqTensor) bias = float_tensor (float_dtypes[(si + salt) % 4], &nb, 1, bv);

      make_weights (&A, af, M, K, TRUE);
      make_weights (&W, wf, N, K, TRUE);
      pw = piq_packed_weights_new (W.w, PIQ_ACTIVATION_DYNAMIC_INT8, &error);
      g_assert_no_error (error);
      for (gsize di = 0; di < 4; di++)
        for (int j = 0; j < 2; j++)
          {
            char what[160];
            PiqDtype ydt = float_dtypes[(di + si) % 4];
            g_snprintf (what, sizeof what, "blocks: A %s × W %s, M %" G_GUINT64_FORMAT " N %" G_GUINT64_FORMAT
                        " K %" G_GUINT64_FORMAT ", Y %s, %s%s", pair->a, pair->w, M, N, K, o_dtype_name (ydt),
                        j ? "ADD" : "SET", (di + j) % 2 ? ", bias" : "");
            blk_run (what, piq_quantizer_get_default (), &A, &W, pw, (di + j) % 2 ? bias : NULL, ydt,
                     j ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET);
          }
      /* every SIMD level × 1…4 threads on the largest shape */
      if (si == G_N_ELEMENTS (shapes3) - 1)
        {
          static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2,
                                                 PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX_VNNI,
                                                 PIQ_SIMD_LEVEL_AVX512 };
          for (gsize li = 0; li < G_N_ELEMENTS (levels); li++)
            for (guint t = 1; t <= 4 && !level_seen (levels, li); t++)
              {
                g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
                char what[160];
                piq_quantizer_set_n_threads (qt, t);
                piq_quantizer_set_max_simd_level (qt, levels[li]);
                g_snprintf (what, sizeof what, "blocks: A %s × W %s, %u threads, max SIMD level %d", pair->a,
                            pair->w, t, levels[li]);
                blk_run (what, qt, &A, &W, pw, bias, PIQ_DTYPE_F32, PIQ_REDUCE_SET);
              }
        }
      weights_clear (&A);
      weights_clear (&W);
    }
}

/* MXINT8 A from raw bytes with −128 codes (never written by quantize, outside the
 * signed kernels' contract) and the extremes ±127, × signed and unsigned weights. */
static void
test_blocks_extreme (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) af = bq_format ("mxint8");
  guint64 M = 5, K = 96, shape[2] = { M, K };
  g_autofree guint8 *codes = g_new (guint8, M * K);
  g_autofree guint8 *scales = g_new (guint8, M * 3);
  g_autoptr(GBytes) cb = NULL, sb = NULL;
  Weights A;
  static const char *const wnames[] = { "mxint8", "int8-block32-f16", "q8_0", "q4_0" };

  for (guint64 i = 0; i < M * K; i++)
    codes[i] = (guint8) (i % 7 == 0 ? 0x80 : i % 7 == 1 ? 0x7f : i % 7 == 2 ? 0x81 : rnd ());
  for (guint64 i = 0; i < M * 3; i++)
    scales[i] = (guint8) (110 + rnd () % 30);
  cb = g_bytes_new (codes, M * K);
  sb = g_bytes_new (scales, M * 3);
  memset (&A, 0, sizeof A);
  A.N = M;
  A.K = K;
  A.w = piq_tensor_new_quantized_from_bytes (af, shape, 2, cb, sb, NULL, 1.0, 0, &error);
  g_assert_no_error (error);
  {
    g_autoptr(PiqTensor) ad = piq_quantizer_dequantize_new (piq_quantizer_get_default (), A.w, PIQ_DTYPE_F32,
                                                            &error);
    g_assert_no_error (error);
    A.wd = g_memdup2 (piq_tensor_get_data (ad, NULL), M * K * 4);
  }
  weights_ints (&A);
  for (gsize i = 0; i < G_N_ELEMENTS (wnames); i++)
    {
      g_autoptr(PiqFormat) wf = blk_format (wnames[i]);
      g_autoptr(PiqPackedWeights) pw = NULL;
      Weights W;
      make_weights (&W, wf, 11, K, TRUE);
      pw = piq_packed_weights_new (W.w, PIQ_ACTIVATION_DYNAMIC_INT8, &error);
      g_assert_no_error (error);
      for (gsize li = 0; li < 4; li++)
        {
          g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
          char what[128];
          piq_quantizer_set_max_simd_level (qt, (PiqSimdLevel) li);
          g_snprintf (what, sizeof what, "blocks: MXINT8 A with −128 × W %s, max SIMD level %zu", wnames[i], li);
          blk_run (what, qt, &A, &W, pw, NULL, PIQ_DTYPE_F32, PIQ_REDUCE_SET);
        }
      weights_clear (&W);
    }
  weights_clear (&A);
}

/* Bad input of the block-integer product: a GError, nothing written. */
static void
test_blocks_bad_input (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) mx = bq_format ("mxint8");
  g_autoptr(PiqFormat) i8b = bq_format ("int8_block");
  g_autoptr(PiqFormat) f8b = bq_format ("fp8_e4m3-block16-f16");
  g_autoptr(PiqFormat) u8b = blk_format ("uint4-block64-affine");
  g_autoptr(PiqTensor) a = bq_quantize (mx, 4, 64, 1.0);
  g_autoptr(PiqTensor) a64 = bq_quantize (i8b, 4, 64, 1.0);
  g_autoptr(PiqTensor) af8 = bq_quantize (f8b, 4, 64, 1.0);
  g_autoptr(PiqTensor) au = bq_quantize (u8b, 4, 64, 1.0);
  g_autoptr(PiqTensor) w = bq_quantize (mx, 9, 64, 0.5);
  g_autoptr(PiqPackedWeights) pw = piq_packed_weights_new (w, PIQ_ACTIVATION_DYNAMIC_INT8, &error);
  guint64 ys[2] = { 4, 9 }, n8 = 8;
  g_autoptr(PiqTensor) y = gemm_plain (PIQ_DTYPE_F32, ys, 2);
  g_autoptr(PiqTensor) yi = gemm_plain (PIQ_DTYPE_INT32, ys, 2);
  g_autoptr(PiqTensor) b8 = gemm_plain (PIQ_DTYPE_F32, &n8, 1);
  g_autoptr(PiqTensor) a31 = bq_quantize (mx, 4, 63, 1.0);

  g_assert_no_error (error);
  g_assert_true (piq_quantizer_matmul_quantized (piq_quantizer_get_default (), a, pw, NULL, NULL, y, PIQ_REDUCE_SET,
                                                 &error));
  g_assert_no_error (error);
  gemm_expect_fail ("blocks: int8 blocks of 64 × MXINT8 groups of 32", a64, pw, NULL, NULL, y, PIQ_REDUCE_SET,
                    PIQ_ERROR_UNSUPPORTED);
  gemm_expect_fail ("blocks: FP8 per block × weights packed for dynamic int8", af8, pw, NULL, NULL, y,
                    PIQ_REDUCE_SET, PIQ_ERROR_UNSUPPORTED);
  gemm_expect_fail ("blocks: uint4 blocks with zero points", au, pw, NULL, NULL, y, PIQ_REDUCE_SET,
                    PIQ_ERROR_UNSUPPORTED);
  gemm_expect_fail ("blocks: int32 Y", a, pw, NULL, NULL, yi, PIQ_REDUCE_SET, PIQ_ERROR_UNSUPPORTED);
  gemm_expect_fail ("blocks: K mismatch", a31, pw, NULL, NULL, y, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
  gemm_expect_fail ("blocks: bias of N − 1", a, pw, b8, NULL, y, PIQ_REDUCE_SET, PIQ_ERROR_SIZE);
}

/* ---- the fused GEMV against the decoded-panel path ----
 * Weights the float policy multiplies with the fused decode-and-dot kernel
 * (docs/matmul.md) give Y byte for byte as the panel path (packing under
 * PIQUANT_MATMUL_UNFUSED=1) and as the oracle, for M = 1, 2, 3, 7 (one and several
 * rows of X per kernel call, a partial tile), K odd, below and past 16, 32 and the
 * blocks, every SIMD level and 1 or 3 threads. */

static void
test_fused (gconstpointer data)
{
  const FmtCase *fc = data;
  static const guint64 ks[] = { 31, 64, 130, 257 }, ms[] = { 1, 2, 3, 7 };
  static const PiqSimdLevel levels[] = { PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_AVX2,
                                         PIQ_SIMD_LEVEL_AVX512 };

  for (gsize ki = 0; ki < G_N_ELEMENTS (ks); ki++)
    {
      Weights W;
      g_autoptr(PiqPackedWeights) fused = NULL, panel = NULL;

      make_weights (&W, fc->format, 11, ks[ki], FALSE);
      g_setenv ("PIQUANT_MATMUL_UNFUSED", "1", TRUE);
      panel = pack (fc, &W, PIQ_ACTIVATION_FLOAT);
      g_unsetenv ("PIQUANT_MATMUL_UNFUSED");
      fused = pack (fc, &W, PIQ_ACTIVATION_FLOAT);
      if (fused == NULL || panel == NULL)
        {
          weights_clear (&W);
          continue;
        }
      for (gsize mi = 0; mi < G_N_ELEMENTS (ms); mi++)
        {
          Params p = { ms[mi], 11, ks[ki], PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_REDUCE_SET,
                       mi % 2 == 0, PIQ_ACTIVATION_FLOAT, mi == 2 };
          Case c;

          case_init (&c, &p, &W);
          any_nan_matches = FALSE;
          for (gsize li = 0; li < G_N_ELEMENTS (levels); li++)
            for (guint t = 1; t <= 3; t += 2)
              {
                g_autoptr(PiqQuantizer) qt = piq_quantizer_new ();
                g_autoptr(GError) error = NULL;
                g_autoptr(PiqTensor) ya = NULL, yb = NULL;
                char what[96];

                piq_quantizer_set_n_threads (qt, t);
                piq_quantizer_set_max_simd_level (qt, levels[li]);
                g_snprintf (what, sizeof what, "fused, K %" G_GUINT64_FORMAT ", %u threads, SIMD level %d",
                            p.K, t, levels[li]);
                run_case (what, qt, &p, &c, fused);
                ya = piq_quantizer_matmul_new (qt, c.x, fused, c.b, PIQ_DTYPE_F32, &error);
                g_assert_no_error (error);
                yb = piq_quantizer_matmul_new (qt, c.x, panel, c.b, PIQ_DTYPE_F32, &error);
                g_assert_no_error (error);
                if (memcmp (piq_tensor_get_data (ya, NULL), piq_tensor_get_data (yb, NULL),
                            p.M * p.N * 4) != 0)
                  g_error ("%s, %s, M %" G_GUINT64_FORMAT ": the fused path's Y differs from the "
                           "panel path's", fc->name, what, p.M);
              }
          case_clear (&c);
        }
      weights_clear (&W);
    }
}

/* ---- registration ---- */

static GPtrArray *cases;

static FmtCase *
add_case (const char *name, PiqFormat *fmt, gboolean dyn)
{
  FmtCase *c = g_new0 (FmtCase, 1);
  g_strlcpy (c->name, name, sizeof c->name);
  c->format = fmt;
  c->dyn = dyn;
  g_ptr_array_add (cases, c);
  return c;
}

int
main (int argc, char **argv)
{
  g_autofree const char **presets = piq_format_list_presets ();
  static const PiqDtype ints[] = { PIQ_DTYPE_INT8, PIQ_DTYPE_UINT8, PIQ_DTYPE_INT4, PIQ_DTYPE_UINT4, PIQ_DTYPE_INT2 };

  g_test_init (&argc, &argv, NULL);
  cases = g_ptr_array_new ();

  for (gsize i = 0; presets[i] != NULL; i++)
    {
      g_autoptr(GError) error = NULL;
      PiqFormat *f = piq_format_new_preset (presets[i], &error);
      g_assert_no_error (error);
      add_case (presets[i], f, g_strv_contains (dyn_presets, presets[i]));
    }
  for (gsize i = 0; i < G_N_ELEMENTS (ints); i++)
    {
      char name[64];
      PiqFormat *f = piq_format_new (ints[i]);
      g_assert_false (piq_format_get_symmetric (f));       /* affine: a zero point */
      g_snprintf (name, sizeof name, "%s-tensor", o_dtype_name (ints[i]));
      add_case (name, f, TRUE);
      g_snprintf (name, sizeof name, "%s-channel0", o_dtype_name (ints[i]));
      add_case (name, piq_format_new_per_channel (ints[i], 0), TRUE);
      g_snprintf (name, sizeof name, "%s-channel1", o_dtype_name (ints[i]));
      add_case (name, piq_format_new_per_channel (ints[i], 1), FALSE);
      g_snprintf (name, sizeof name, "%s-block32-f16", o_dtype_name (ints[i]));
      add_case (name, piq_format_new_per_block (ints[i], 32, PIQ_DTYPE_F16), TRUE);
    }
  {
    PiqFormat *f = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_UINT4, "granularity", PIQ_GRANULARITY_BLOCK,
                                 "block-size", 64, "scale-dtype", PIQ_DTYPE_F32, "symmetric", FALSE, NULL);
    g_assert_true (piq_format_has_zero_points (f));
    add_case ("uint4-block64-affine", f, TRUE);
    f = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_UINT8, "granularity", PIQ_GRANULARITY_CHANNEL,
                      "axis", 0, "symmetric", FALSE, NULL);
    add_case ("uint8-channel0-affine", f, TRUE);
    f = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_UINT4, "granularity", PIQ_GRANULARITY_BLOCK,
                      "block-size", 32, "scale-dtype", PIQ_DTYPE_F16, "symmetric", TRUE, NULL);
    add_case ("uint4-block32-symmetric", f, TRUE);
    add_case ("uint16-tensor", piq_format_new (PIQ_DTYPE_UINT16), FALSE);
    add_case ("int16-block32", piq_format_new_per_block (PIQ_DTYPE_INT16, 32, PIQ_DTYPE_F32), FALSE);
    /* binary per row and per block of f16 scales (the preset: blocks of 128, f32) */
    add_case ("binary-channel0", piq_format_new_per_channel (PIQ_DTYPE_BINARY, 0), FALSE);
    add_case ("binary-block32-f16", piq_format_new_per_block (PIQ_DTYPE_BINARY, 32, PIQ_DTYPE_F16), FALSE);
  }

  for (guint i = 0; i < cases->len; i++)
    {
      FmtCase *c = g_ptr_array_index (cases, i);
      g_autofree char *p1 = g_strdup_printf ("/matmul/format/%s", c->name);
      g_autofree char *p2 = g_strdup_printf ("/matmul/layout/%s", c->name);
      g_autofree char *p3 = g_strdup_printf ("/matmul/threads/%s", c->name);
      g_test_add_data_func (p1, c, test_format);
      /* the formats with a fused float GEMV (docs/matmul.md) */
      if (g_str_equal (c->name, "q4_0") || g_str_equal (c->name, "q8_0") ||
          g_str_equal (c->name, "nf4") || g_str_equal (c->name, "nf4_dq") ||
          g_str_equal (c->name, "mxfp4") || g_str_equal (c->name, "fp4_bnb") ||
          g_str_equal (c->name, "mxfp8_e4m3") || g_str_equal (c->name, "fp8_e5m2") ||
          g_str_equal (c->name, "int4_block") || g_str_equal (c->name, "int8_block") ||
          g_str_equal (c->name, "mxint8") || g_str_equal (c->name, "binary") ||
          g_str_has_suffix (c->name, "-channel0") ||
          (g_str_has_suffix (c->name, "-tensor") && !g_str_has_prefix (c->name, "uint16")) ||
          g_str_has_suffix (c->name, "-block32-f16") || g_str_has_prefix (c->name, "uint4-block"))
        {
          g_autofree char *p4 = g_strdup_printf ("/matmul/fused/%s", c->name);
          g_test_add_data_func (p4, c, test_fused);
        }
      /* layouts: one case per kind of weights is enough */
      if (g_str_has_suffix (c->name, "-tensor") || g_str_equal (c->name, "q4_0") ||
          g_str_equal (c->name, "mxint8") || g_str_equal (c->name, "nf4") ||
          g_str_equal (c->name, "uint4-block64-affine") || g_str_equal (c->name, "int8-channel0"))
        {
          g_test_add_data_func (p2, c, test_layout);
          g_test_add_data_func (p3, c, test_threads);
        }
    }
  g_test_add_func ("/matmul/bad-input", test_bad_input);
  g_test_add_func ("/matmul/properties", test_properties);
  g_test_add_func ("/matmul/dynamic-int8/nan-group", test_nan_group);
  g_test_add_func ("/matmul/float/nan-operand-order", test_nan_order);
  g_test_add_func ("/matmul/long-rows", test_long_rows);
  g_test_add_func ("/matmul/gemm-float-blocks", test_gemm_float_blocks);
  g_test_add_func ("/matmul/int8-gemm/shapes", test_gemm_shapes);
  g_test_add_func ("/matmul/int8-gemm/nd", test_gemm_nd);
  g_test_add_func ("/matmul/int8-gemm/threads", test_gemm_threads);
  g_test_add_func ("/matmul/int8-gemm/extreme", test_gemm_extreme);
  g_test_add_func ("/matmul/int8-gemm/extreme-mix", test_gemm_extreme_mix);
  g_test_add_func ("/matmul/int8-gemm/requant", test_gemm_requant);
  g_test_add_func ("/matmul/int8-gemm/bad-input", test_gemm_bad_input);
  g_test_add_func ("/matmul/both-quantized/bad-input", test_both_bad_input);
  g_test_add_func ("/matmul/both-quantized/layout", test_both_layout);
  g_test_add_func ("/matmul/both-quantized/long", test_both_long);
  g_test_add_func ("/matmul/blocks/extreme", test_blocks_extreme);
  g_test_add_func ("/matmul/blocks/bad-input", test_blocks_bad_input);
  for (gsize i = 0; i < G_N_ELEMENTS (blk_pairs); i++)
    {
      g_autofree char *path = g_strdup_printf ("/matmul/blocks/%s/%s", blk_pairs[i].a, blk_pairs[i].w);
      g_test_add_data_func (path, &blk_pairs[i], test_blocks);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (bq_pairs); i++)
    {
      g_autofree char *path = g_strdup_printf ("/matmul/both-quantized/%s/%s", bq_pairs[i].a, bq_pairs[i].w);
      g_test_add_data_func (path, &bq_pairs[i], test_both_quantized);
    }
  return g_test_run ();
}

/* test-formats.c: the code formats and per-channel / per-block scales, against oracles
 * written here from the published definitions (../shared/FORMATS.md, docs/formats.md)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The oracles compute in binary64 from the definitions (value tables built from the
 * bit fields, nearest by exhaustive search with ties to the even code), not with the
 * library's codecs; everything goes through the public API.
 */
#include <math.h>
#include <string.h>

#include <piquant/piquant.h>

/* bnb's dynamic map (a committed constant table, tools/gen-dynamic-map.py) */
#include "piq-dynamic-map-table.h"

/* bitsandbytes' NF4 values (functional.py get_4bit_type) */
static const float nf4_table[16] = {
  -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
  -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
  0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
  0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f,
};

#define N_MINIFLOATS 5

typedef struct {
  PiqDtype dtype;
  const char *name;
  int ebits, mbits, bias;
  gboolean ieee_inf;   /* E5M2: e = all ones is Inf (m = 0) / NaN */
  gboolean fn;         /* E4M3FN: only S.1111.111 is NaN */
} Mini;

static const Mini minis[N_MINIFLOATS] = {
  { PIQ_DTYPE_FP8_E4M3, "fp8_e4m3", 4, 3, 7, FALSE, TRUE },
  { PIQ_DTYPE_FP8_E5M2, "fp8_e5m2", 5, 2, 15, TRUE, FALSE },
  { PIQ_DTYPE_FP6_E2M3, "fp6_e2m3", 2, 3, 1, FALSE, FALSE },
  { PIQ_DTYPE_FP6_E3M2, "fp6_e3m2", 3, 2, 3, FALSE, FALSE },
  { PIQ_DTYPE_FP4_E2M1, "fp4_e2m1", 2, 1, 1, FALSE, FALSE },
};

/* The value of a code from its bit fields (OCP OFP8 r1.0, OCP MX v1.0). */
static double
mini_value (const Mini *m, unsigned code)
{
  unsigned w = 1 + m->ebits + m->mbits;
  unsigned e = (code >> m->mbits) & ((1u << m->ebits) - 1), f = code & ((1u << m->mbits) - 1);
  double v;

  if (m->ieee_inf && e == (1u << m->ebits) - 1)
    v = f == 0 ? INFINITY : NAN;
  else if (m->fn && e == (1u << m->ebits) - 1 && f == (1u << m->mbits) - 1)
    v = NAN;
  else if (e == 0)
    v = ldexp ((double) f, 1 - m->bias - m->mbits);
  else
    v = ldexp (1.0 + ldexp ((double) f, -m->mbits), (int) e - m->bias);
  return (code >> (w - 1)) & 1 ? -v : v;
}

static double
mini_max (const Mini *m)
{
  double best = 0;
  for (unsigned c = 0; c < (1u << (m->ebits + m->mbits)); c++)
    if (isfinite (mini_value (m, c)) && mini_value (m, c) > best)
      best = mini_value (m, c);
  return best;
}

/* Nearest code of |x| by exhaustive search, ties to the even code; a virtual code one
 * quantum above max (the next code, odd or even as it falls) stands for overflow. */
static unsigned
mini_oracle (const Mini *m, double x, gboolean saturate)
{
  unsigned w = 1 + m->ebits + m->mbits, n = 1u << (w - 1), best = 0, max_code = 0;
  unsigned sign = signbit (x) ? n : 0;
  double a = fabs (x), bestd = INFINITY, max = mini_max (m), top;

  for (unsigned c = 0; c < n; c++)
    if (mini_value (m, c) == max)
      max_code = c;
  if (isnan (x))
    return m->fn ? sign | 0x7f : m->ieee_inf ? sign | 0x7f : 0;
  top = max + (max - mini_value (m, max_code - 1));
  for (unsigned c = 0; c <= max_code + 1; c++)
    {
      double v = c <= max_code ? mini_value (m, c) : top, d = fabs (v - a);
      if (d < bestd || (d == bestd && (c & 1) == 0))
        {
          bestd = d;
          best = c;
        }
    }
  if (best > max_code || a > top)
    {
      if (saturate || (!m->fn && !m->ieee_inf))
        return sign | max_code;
      return sign | (m->ieee_inf ? 0x7cu : 0x7fu);
    }
  return sign | best;
}

static PiqQuantizer *
quantizer (guint threads)
{
  PiqQuantizer *q = piq_quantizer_new ();
  piq_quantizer_set_n_threads (q, threads);
  return q;
}

static PiqTensor *
f32_tensor (const float *x, gsize n)
{
  GError *error = NULL;
  PiqTensor *t = piq_tensor_new_from_data (PIQ_DTYPE_F32, n, (const guint8 *) x, n * 4, &error);
  g_assert_no_error (error);
  return t;
}

static const float *
f32_data (PiqTensor *t)
{
  return piq_tensor_get_data (t, NULL);
}

/* A 1-D quantized tensor from codes (and scales) made elsewhere. */
static PiqTensor *
wrap_codes (PiqFormat *format, PiqTensor *codes, GBytes *scales, double scale)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = piq_tensor_get_bytes (codes);
  guint64 shape[1] = { piq_tensor_get_n_elements (codes) };
  PiqTensor *t = piq_tensor_new_quantized_from_bytes (format, shape, 1, bytes, scales, NULL, scale, 0, &error);
  g_assert_no_error (error);
  return t;
}

/* The plain cast: a per-tensor code format with the given scale 1. */
static PiqRecipe *
scale_one (void)
{
  return piq_recipe_new_fixed (1.0);
}

/* All codes decode to their spec value (per tensor, scale 1: the plain cast). */
static void
test_minifloat_decode (gconstpointer data)
{
  const Mini *m = data;
  unsigned n = 1u << (1 + m->ebits + m->mbits);
  g_autoptr(GError) error = NULL;
  g_autofree double *codes = g_new (double, n);
  g_autoptr(PiqTensor) c0 = NULL, t = NULL, y = NULL;
  g_autoptr(PiqFormat) f = piq_format_new (m->dtype);
  g_autoptr(PiqQuantizer) q = quantizer (1);

  for (unsigned c = 0; c < n; c++)
    codes[c] = c;
  c0 = piq_tensor_new_from_values (m->dtype, codes, n, &error);
  g_assert_no_error (error);
  t = wrap_codes (f, c0, NULL, 1.0);
  y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F64, &error);
  g_assert_no_error (error);
  for (unsigned c = 0; c < n; c++)
    {
      double want = mini_value (m, c), got = piq_tensor_get_value (y, c);
      if (isnan (want))
        g_assert_true (isnan (got));
      else
        {
          g_assert_cmpfloat (got, ==, want);
          g_assert_cmpint (signbit (got), ==, signbit (want));
        }
    }
}

/* Every code's value, the midpoints between neighbours and one ulp each side, ±0,
 * beyond max, NaN and ±Inf, in both overflow modes. */
static void
test_minifloat_encode (gconstpointer data)
{
  const Mini *m = data;
  unsigned half = 1u << (m->ebits + m->mbits);
  GArray *xs = g_array_new (FALSE, FALSE, sizeof (float));
  double max = mini_max (m);
  g_autoptr(PiqQuantizer) q = quantizer (1);

  for (unsigned c = 0; c < half; c++)
    {
      double v = mini_value (m, c), next = c + 1 < half ? mini_value (m, c + 1) : NAN;
      float f[6];
      if (!isfinite (v))
        continue;
      f[0] = (float) v;
      f[1] = nextafterf ((float) v, INFINITY);
      if (isfinite (next))
        {
          float mid = (float) ((v + next) / 2);
          f[2] = mid;
          f[3] = nextafterf (mid, -INFINITY);
          f[4] = nextafterf (mid, INFINITY);
        }
      else
        f[2] = f[3] = f[4] = (float) v;
      f[5] = nextafterf ((float) v, -INFINITY);
      for (int i = 0; i < 6; i++)
        {
          float neg = -f[i];
          g_array_append_val (xs, f[i]);
          g_array_append_val (xs, neg);
        }
    }
  {
    float special[] = { 0.0f, -0.0f, NAN, -NAN, INFINITY, -INFINITY, (float) max * 1.0625f,
                        (float) max * 1.0625f * 2, 1e30f, -1e30f, 1e-30f, -1e-45f,
                        /* OCP boundaries: E4M3 464 ties to 448, E5M2 61440 overflows */
                        464.0f, nextafterf (464.0f, INFINITY), 61440.0f, nextafterf (61440.0f, 0) };
    g_array_append_vals (xs, special, G_N_ELEMENTS (special));
  }

  for (int sat = 0; sat < 2; sat++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqFormat) p = g_object_new (PIQ_TYPE_FORMAT, "dtype", m->dtype, "saturate", sat, NULL);
      g_autoptr(PiqRecipe) r = scale_one ();
      g_autoptr(PiqTensor) x = f32_tensor ((const float *) xs->data, xs->len);
      g_autoptr(PiqTensor) t = NULL;

      t = piq_quantizer_quantize_new (q, p, r, x, &error);
      if (!sat && !m->fn && !m->ieee_inf)
        {
          /* FP6 and FP4 have no Inf or NaN code: they always saturate, and
           * asking them not to is an option that does not apply (it used to
           * be ignored) */
          g_assert_null (t);
          g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
          continue;
        }
      g_assert_no_error (error);
      for (guint i = 0; i < xs->len; i++)
        {
          float xi = g_array_index (xs, float, i);
          unsigned want = mini_oracle (m, xi, sat);
          unsigned got = (unsigned) piq_tensor_get_value (t, i);
          if (want != got)
            g_error ("%s %s: %a encodes to 0x%02x, want 0x%02x", m->name,
                     sat ? "saturating" : "non-saturating", xi, got, want);
        }
    }
  g_array_unref (xs);
}

/* E8M0: all 256 scales decode to 2^(E−127) and 0xFF to NaN, through MX dequantization
 * of the element 1.0 in blocks of 1. */
static void
test_e8m0_decode (void)
{
  g_autoptr(GError) error = NULL;
  /* mxfp8_e4m3 with blocks of 1 */
  g_autoptr(PiqFormat) p = piq_format_new_per_block (PIQ_DTYPE_FP8_E4M3, 1, PIQ_DTYPE_E8M0);
  g_autoptr(PiqQuantizer) q = quantizer (1);
  double ones[256];
  guint8 scales[256];
  g_autoptr(PiqTensor) c0 = NULL, t = NULL, y = NULL;
  g_autoptr(GBytes) sb = NULL;

  for (int e = 0; e < 256; e++)
    {
      ones[e] = 0x38;   /* E4M3 1.0 */
      scales[e] = (guint8) e;
    }
  c0 = piq_tensor_new_from_values (PIQ_DTYPE_FP8_E4M3, ones, 256, &error);
  g_assert_no_error (error);
  sb = g_bytes_new (scales, sizeof scales);
  t = wrap_codes (p, c0, sb, 1.0);
  y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F64, &error);
  g_assert_no_error (error);
  for (int e = 0; e < 255; e++)
    g_assert_cmpfloat (piq_tensor_get_value (y, e), ==, ldexp (1.0, e - 127));
  g_assert_true (isnan (piq_tensor_get_value (y, 255)));
}

/* The E8M0 exponent of a block's amax by each rule, in binary64 from the definitions. */
static int
e8m0_oracle (double amax, PiqScaleRule rule, int emax, int mbits, double max_elem)
{
  int e;
  if (!isfinite (amax))
    return 255;
  if (amax == 0)
    return 0;
  switch (rule)
    {
    case PIQ_SCALE_RULE_POW2_FLOOR:
      e = (int) floor (log2 (amax)) - emax;
      break;
    case PIQ_SCALE_RULE_POW2_CEIL:
      e = (int) floor (log2 (amax)) - emax + (amax != ldexp (1.0, (int) floor (log2 (amax))));
      break;
    case PIQ_SCALE_RULE_POW2_EVEN:
      {
        /* round the significand to mbits fraction bits, half up */
        int ex = (int) floor (log2 (amax));
        double sig = amax / ldexp (1.0, ex);
        sig = floor (ldexp (sig, mbits) + 0.5);
        e = (int) floor (log2 (ldexp (sig, ex - mbits))) - emax;
        break;
      }
    default:
      e = (int) ceil (log2 ((double) (float) (amax / max_elem)));
    }
  return CLAMP (e, -127, 127) + 127;
}

typedef struct { const char *preset; int emax, mbits; double max; } MxCase;
static const MxCase mx_cases[] = {
  { "mxfp8_e4m3", 8, 3, 448 }, { "mxfp8_e5m2", 15, 2, 57344 }, { "mxfp6_e2m3", 2, 3, 7.5 },
  { "mxfp6_e3m2", 4, 2, 28 }, { "mxfp4", 2, 1, 6 },
};

/* MX blocks: every scale rule, the E8M0 byte and each element code against the
 * oracle (elements saturate, ties to even), on random blocks of assorted ranges, a
 * ragged last block, zero blocks and blocks holding NaN or Inf. */
static void
test_mx_blocks (gconstpointer data)
{
  const MxCase *c = data;
  const Mini *m = NULL;
  const gsize n = 32 * 37 + 5;
  g_autofree float *x = g_new (float, n);
  guint64 state = 12345;
  g_autoptr(PiqQuantizer) q = quantizer (2);

  for (int i = 0; i < N_MINIFLOATS; i++)
    if (g_str_has_suffix (c->preset, minis[i].name + 4) ||
        (strcmp (c->preset, "mxfp4") == 0 && minis[i].dtype == PIQ_DTYPE_FP4_E2M1))
      m = &minis[i];
  g_assert_nonnull (m);
  for (gsize i = 0; i < n; i++)
    {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      double r = (double) (state >> 11) / 9007199254740992.0 - 0.5;
      x[i] = (float) (r * ldexp (1.0, (int) (i / 32 % 40) - 20));
    }
  for (gsize i = 64; i < 96; i++)
    x[i] = 0.0f;                        /* a zero block */
  x[100] = NAN;                         /* a NaN block */
  x[140] = -INFINITY;                   /* an Inf block */
  x[200] = 7.99f * ldexp (1.0, 3);      /* a block whose max needs saturation */

  for (PiqScaleRule rule = PIQ_SCALE_RULE_POW2_FLOOR; rule <= PIQ_SCALE_RULE_POW2_RCEIL; rule++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqFormat) p = piq_format_new_preset (c->preset, &error);
      g_autoptr(PiqRecipe) r = piq_recipe_new ();
      g_autoptr(PiqTensor) xt = f32_tensor (x, n), t = NULL;
      g_autoptr(GBytes) sb = NULL;
      const guint8 *s;
      gsize ssize;

      piq_recipe_set_scale_rule (r, rule);
      t = piq_quantizer_quantize_new (q, p, r, xt, &error);
      g_assert_no_error (error);
      sb = piq_tensor_get_scales (t);
      s = g_bytes_get_data (sb, &ssize);
      g_assert_cmpuint (ssize, ==, (n + 31) / 32);
      for (gsize b = 0; b * 32 < n; b++)
        {
          double amax = 0;
          int e;
          for (gsize i = b * 32; i < MIN (n, b * 32 + 32); i++)
            amax = isfinite (x[i]) && isfinite (amax) ? MAX (amax, fabs (x[i])) : INFINITY;
          e = e8m0_oracle (amax, rule, c->emax, c->mbits, c->max);
          g_assert_cmpint (s[b], ==, e);
          for (gsize i = b * 32; i < MIN (n, b * 32 + 32); i++)
            {
              unsigned want = e == 255 ? 0 : mini_oracle (m, ldexp (x[i], 127 - e), TRUE);
              unsigned got = (unsigned) piq_tensor_get_value (t, i);
              if (want != got)
                g_error ("%s rule %d: x[%zu] = %a (E %d) -> 0x%x, want 0x%x", c->preset, rule, i,
                         x[i], e, got, want);
            }
        }
    }
}

/* binary32 literals, as bnb's dQuantizeNF4 (a double rounded to float can differ) */
static const float nf4_t[15] = {
    -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
    -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
    0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
    0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f };
  /* FP4 magnitude thresholds (the literals of dQuantizeFP4) and the codes above each */
static const float fp4_t[7] = { 0.00260417f, 0.0859375f, 0.20833333f, 0.29166667f, 0.4166667f,
                                 0.583333f, 0.8333333f };
static const unsigned fp4_codes[8] = { 0, 1, 6, 7, 4, 5, 2, 3 };

/* bnb's encoders written from its thresholds (binary32 literals; ties to the lower code) */
static unsigned
nf4_oracle (float v)
{
  unsigned c = 0;
  for (int k = 0; k < 15; k++)
    c += v > nf4_t[k];
  return c;
}

static unsigned
fp4_oracle (float v)
{
  unsigned k = 0;
  for (int j = 0; j < 7; j++)
    k += fabsf (v) > fp4_t[j];
  return fp4_codes[k] | (v < 0 ? 8u : 0u);
}

/* bitsandbytes NF4 and FP4: each threshold and its binary32 neighbours. */
static void
test_bnb_thresholds (void)
{
  g_autoptr(PiqQuantizer) q = quantizer (1);
  float xs[15 * 3], ys[7 * 3 * 2];

  for (int i = 0; i < 15; i++)
    {
      float t = nf4_t[i];
      xs[3 * i] = t;
      xs[3 * i + 1] = nextafterf (t, -1.0f);
      xs[3 * i + 2] = nextafterf (t, 1.0f);
    }
  for (int i = 0; i < 7; i++)
    for (int s = 0; s < 2; s++)
      {
        float t = fp4_t[i] * (s ? -1.0f : 1.0f);
        ys[6 * i + 3 * s] = t;
        ys[6 * i + 3 * s + 1] = nextafterf (t, 0.0f);
        ys[6 * i + 3 * s + 2] = nextafterf (t, s ? -1.0f : 1.0f);
      }
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqFormat) p = piq_format_new (PIQ_DTYPE_NF4);   /* per tensor, scale 1 */
    g_autoptr(PiqRecipe) r = scale_one ();
    g_autoptr(PiqTensor) x = f32_tensor (xs, G_N_ELEMENTS (xs));
    g_autoptr(PiqTensor) t = piq_quantizer_quantize_new (q, p, r, x, &error);
    g_assert_no_error (error);
    for (guint i = 0; i < G_N_ELEMENTS (xs); i++)
      g_assert_cmpuint ((unsigned) piq_tensor_get_value (t, i), ==, nf4_oracle (xs[i]));
  }
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqFormat) p = piq_format_new (PIQ_DTYPE_FP4_BNB);
    g_autoptr(PiqRecipe) r = scale_one ();
    g_autoptr(PiqTensor) x = f32_tensor (ys, G_N_ELEMENTS (ys));
    g_autoptr(PiqTensor) t = piq_quantizer_quantize_new (q, p, r, x, &error);
    g_assert_no_error (error);
    for (guint i = 0; i < G_N_ELEMENTS (ys); i++)
      g_assert_cmpuint ((unsigned) piq_tensor_get_value (t, i), ==, fp4_oracle (ys[i]));
  }
}

/* N(0,1) data, seeded. */
static float *
normal_data (gsize n, guint32 seed)
{
  float *x = g_new (float, n);
  GRand *r = g_rand_new_with_seed (seed);
  for (gsize i = 0; i < n; i += 2)
    {
      double u = g_rand_double (r), v = g_rand_double (r);
      double rad = sqrt (-2 * log (1 - u));
      x[i] = (float) (rad * cos (2 * G_PI * v));
      if (i + 1 < n)
        x[i + 1] = (float) (rad * sin (2 * G_PI * v));
    }
  g_rand_free (r);
  return x;
}

/* NF4 (bnb layout, absmax per 64) and FP4 against the bnb rules: codes from the
 * normalised value by the thresholds, high nibble first, dequantized table·absmax;
 * the published N(0,1) errors at block 64 (NF4 MAE 0.0728, FP4 0.0965). */
static void
test_bnb_blocks (void)
{
  const gsize n = 64 * 500 + 33;
  g_autofree float *x = normal_data (n, 7);
  g_autoptr(PiqQuantizer) q = quantizer (2);
  const char *presets[] = { "nf4", "fp4_bnb" };
  const double published[] = { 0.0728, 0.0965 };

  for (int k = 0; k < 2; k++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqFormat) p = piq_format_new_preset (presets[k], &error);
      g_autoptr(PiqTensor) xt = f32_tensor (x, n), t = NULL, y = NULL;
      g_autoptr(GBytes) sb = NULL;
      const float *absmax;
      const guint8 *codes;
      double mae = 0;

      t = piq_quantizer_quantize_new (q, p, NULL, xt, &error);
      g_assert_no_error (error);
      y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
      g_assert_no_error (error);
      sb = piq_tensor_get_scales (t);
      absmax = g_bytes_get_data (sb, NULL);
      codes = piq_tensor_get_data (t, NULL);
      for (gsize i = 0; i < n; i++)
        {
          float am = 0;
          for (gsize j = i / 64 * 64; j < MIN (n, i / 64 * 64 + 64); j++)
            am = MAX (am, fabsf (x[j]));
          g_assert_cmpfloat (absmax[i / 64], ==, am);
          /* high nibble first: element 2k in bits 4..7 of byte k; x · (1/absmax) */
          unsigned code = (codes[i / 2] >> (i % 2 ? 0 : 4)) & 15;
          float v = x[i] * (1.0f / am);
          g_assert_cmpuint (code, ==, k == 0 ? nf4_oracle (v) : fp4_oracle (v));
          mae += fabs (x[i] - f32_data (y)[i]);
        }
      mae /= n;
      g_test_message ("%s MAE %.4f (published %.4f)", presets[k], mae, published[k]);
      g_assert_cmpfloat (fabs (mae - published[k]), <, 0.002);
    }
}

/* Per-block and per-channel integers: the scale and zero point of each block by the
 * documented binary32 rules (torch's observers), and each code from them. */
static void
test_int_blocks (void)
{
  const gsize lengths[] = { 1, 7, 64, 65, 1000, 4099 };
  const guint blocks[] = { 1, 3, 32, 64, 1000, 4099 };
  const PiqDtype dtypes[] = { PIQ_DTYPE_UINT8, PIQ_DTYPE_INT8, PIQ_DTYPE_INT4, PIQ_DTYPE_UINT2,
                              PIQ_DTYPE_INT16 };
  g_autoptr(PiqQuantizer) q = quantizer (3);

  for (guint li = 0; li < G_N_ELEMENTS (lengths); li++)
    for (guint bi = 0; bi < G_N_ELEMENTS (blocks); bi++)
      for (guint di = 0; di < G_N_ELEMENTS (dtypes); di++)
        for (int sym = 0; sym < 2; sym++)
          {
            gsize n = lengths[li];
            guint bs = blocks[bi];
            g_autofree float *x = normal_data (n, (guint32) (n * 31 + bs));
            g_autoptr(GError) error = NULL;
            g_autoptr(PiqFormat) p = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtypes[di],
                                                   "granularity", PIQ_GRANULARITY_BLOCK, "block-size", bs,
                                                   "symmetric", sym, NULL);
            g_autoptr(PiqRecipe) r = piq_recipe_new ();
            g_autoptr(PiqTensor) xt = NULL, t = NULL, y = NULL;
            g_autoptr(GBytes) sb = NULL, zb = NULL;
            gint64 qmin;
            guint64 qmax;
            const float *s;
            const gint32 *z = NULL;

            piq_dtype_get_range (dtypes[di], &qmin, &qmax);
            for (gsize i = 0; i < n; i++)
              x[i] = x[i] * 3 + (sym ? 0.0f : 1.5f);
            xt = f32_tensor (x, n);
            piq_recipe_set_scale_rule (r, sym ? PIQ_SCALE_RULE_ABS_MAX : PIQ_SCALE_RULE_MIN_MAX);
            t = piq_quantizer_quantize_new (q, p, r, xt, &error);
            g_assert_no_error (error);
            sb = piq_tensor_get_scales (t);
            zb = piq_tensor_get_zero_points (t);
            s = g_bytes_get_data (sb, NULL);
            g_assert_cmpuint (g_bytes_get_size (sb), ==, (n + bs - 1) / bs * 4);
            g_assert_true ((zb != NULL) == !sym);
            if (zb != NULL)
              z = g_bytes_get_data (zb, NULL);
            for (gsize b = 0; b * bs < n; b++)
              {
                float lo = 0, hi = 0, scale, inv;
                double range = (double) qmax - (double) qmin;
                gint64 zp;
                for (gsize i = b * bs; i < MIN (n, b * bs + bs); i++)
                  {
                    lo = MIN (lo, x[i]);
                    hi = MAX (hi, x[i]);
                  }
                if (sym)
                  {
                    scale = MAX ((float) (MAX (-lo, hi) / (float) (range / 2)), 0x1p-23f);
                    zp = qmin < 0 ? 0 : (gint64) ((qmax + 1) / 2);
                  }
                else
                  {
                    scale = MAX ((float) ((float) (hi - lo) / (float) range), 0x1p-23f);
                    zp = CLAMP (qmin - (gint64) nearbyint ((float) (lo / scale)), qmin, (gint64) qmax);
                    g_assert_cmpint (z[b], ==, zp);
                  }
                g_assert_cmpfloat (s[b], ==, scale);
                inv = 1.0f / scale;
                for (gsize i = b * bs; i < MIN (n, b * bs + bs); i++)
                  {
                    gint64 want = CLAMP ((gint64) nearbyintf (x[i] * inv) + zp, qmin, (gint64) qmax);
                    g_assert_cmpint ((gint64) piq_tensor_get_value (t, i), ==, want);
                  }
              }
            /* dequantize: (q − zp)·scale, and ADD accumulates */
            y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
            g_assert_no_error (error);
            g_assert_true (piq_quantizer_dequantize (q, t, y, PIQ_REDUCE_ADD, &error));
            g_assert_no_error (error);
            for (gsize i = 0; i < n; i++)
              {
                float d = (float) ((gint64) piq_tensor_get_value (t, i) - (z ? z[i / bs] : (sym && qmin >= 0 ? (gint64) ((qmax + 1) / 2) : 0))) * s[i / bs];
                g_assert_cmpfloat (f32_data (y)[i], ==, d + d);
              }
          }
}

/* Every format and granularity: the same bytes for 1…4 threads (stochastic too),
 * requantize equal to quantize → dequantize, and lengths around block and byte edges. */
static void
test_threads_and_requantize (void)
{
  g_autofree char **names = (char **) piq_format_list_presets ();
  const gsize lengths[] = { 0, 1, 3, 17, 31, 33, 63, 65, 1023, 70001 };
  g_autofree float *x = normal_data (70001, 3);

  for (char **name = names; *name != NULL; name++)
    for (int stoch = 0; stoch < 2; stoch++)
      for (guint li = 0; li < G_N_ELEMENTS (lengths); li++)
        {
          gsize n = lengths[li];
          g_autoptr(GError) error = NULL;
          g_autoptr(PiqFormat) p = piq_format_new_preset (*name, &error);
          g_autoptr(PiqRecipe) rc = piq_recipe_new ();
          g_autoptr(PiqTensor) xt = f32_tensor (x, n);
          g_autoptr(GBytes) ref = NULL, ref_scales = NULL;

          piq_recipe_set_round_mode (rc, stoch ? PIQ_ROUND_STOCHASTIC : PIQ_ROUND_NEAREST);
          /* a seed applies to stochastic rounding only */
          if (stoch)
            piq_recipe_set_seed (rc, 99);
          /* per tensor: calibrate once (an empty tensor has nothing to
           * derive from: it gets a given scale) */
          if (piq_format_get_granularity (p) == PIQ_GRANULARITY_TENSOR && n > 0)
            g_assert_true (piq_quantizer_compute_params (piq_quantizer_get_default (), p, rc, xt, &error));
          else if (piq_format_get_granularity (p) == PIQ_GRANULARITY_TENSOR)
            piq_recipe_set_scale (rc, 1.0);
          g_assert_no_error (error);
          for (guint threads = 1; threads <= 4; threads++)
            {
              g_autoptr(PiqQuantizer) q = quantizer (threads);
              g_autoptr(PiqTensor) t = piq_quantizer_quantize_new (q, p, rc, xt, &error);
              g_autoptr(GBytes) bytes = NULL, scales = NULL;
              g_autoptr(PiqTensor) y = NULL, r = NULL;

              g_assert_no_error (error);
              if (stoch)
                g_assert_cmpuint (piq_tensor_get_seed (t), ==, 99);
              bytes = piq_tensor_get_bytes (t);
              scales = piq_tensor_get_scales (t);
              y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
              g_assert_no_error (error);
              r = piq_tensor_new (PIQ_DTYPE_F32, n, &error);
              g_assert_true (piq_quantizer_requantize (q, p, rc, xt, r, PIQ_REDUCE_SET, &error));
              g_assert_no_error (error);
              g_assert_cmpmem (piq_tensor_get_data (r, NULL), n * 4, piq_tensor_get_data (y, NULL), n * 4);
              if (ref == NULL)
                {
                  ref = g_bytes_ref (bytes);
                  ref_scales = scales ? g_bytes_ref (scales) : NULL;
                  continue;
                }
              g_assert_true (g_bytes_equal (ref, bytes));
              g_assert_true ((ref_scales == NULL) == (scales == NULL));
              if (scales != NULL)
                g_assert_true (g_bytes_equal (ref_scales, scales));
            }
        }
}

/* Stochastic rounding of FP8 and NF4: each result is one of the two neighbouring
 * codes, and the mean error over 1 M elements is within a few σ of 0. */
static void
test_stochastic_unbiased (void)
{
  const gsize n = 1 << 20;
  g_autofree float *x = g_new (float, n);
  g_autoptr(PiqQuantizer) q = quantizer (0);
  const char *presets[] = { "fp8_e4m3", "nf4", "mxfp4" };

  for (gsize i = 0; i < n; i++)
    x[i] = 0.3f + (float) (i % 1000) * 1e-4f;   /* between codes, not on them */
  for (guint k = 0; k < G_N_ELEMENTS (presets); k++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqFormat) f = piq_format_new_preset (presets[k], &error);
      g_autoptr(PiqRecipe) p = piq_recipe_new ();
      g_autoptr(PiqRecipe) pn = piq_recipe_new ();
      g_autoptr(PiqTensor) xt = f32_tensor (x, n), y = NULL, yn = NULL;
      double sum = 0, var = 0;

      piq_recipe_set_round_mode (p, PIQ_ROUND_STOCHASTIC);
      piq_recipe_set_seed (p, 5);
      if (piq_format_get_scale_dtype (f) == PIQ_DTYPE_E8M0)
        {
          /* the floor rule saturates the block maximum by design: a bias */
          piq_recipe_set_scale_rule (p, PIQ_SCALE_RULE_POW2_RCEIL);
          piq_recipe_set_scale_rule (pn, PIQ_SCALE_RULE_POW2_RCEIL);
        }
      if (piq_format_get_granularity (f) == PIQ_GRANULARITY_TENSOR)
        {
          g_assert_true (piq_quantizer_compute_params (q, f, p, xt, &error));
          g_assert_true (piq_quantizer_compute_params (q, f, pn, xt, &error));
        }
      y = piq_tensor_new (PIQ_DTYPE_F32, n, &error);
      yn = piq_tensor_new (PIQ_DTYPE_F32, n, &error);
      g_assert_true (piq_quantizer_requantize (q, f, p, xt, y, PIQ_REDUCE_SET, &error));
      g_assert_true (piq_quantizer_requantize (q, f, pn, xt, yn, PIQ_REDUCE_SET, &error));
      g_assert_no_error (error);
      for (gsize i = 0; i < n; i++)
        {
          double e = f32_data (y)[i] - x[i];
          /* either the nearest code or the neighbour on the other side of x */
          g_assert_true (f32_data (y)[i] == f32_data (yn)[i] || e * (f32_data (yn)[i] - x[i]) <= 0);
          sum += e;
          var += e * e;
        }
      g_test_message ("%s stochastic mean error %.3g", presets[k], sum / n);
      /* mean of n errors each bounded by one code step: |mean| ≤ 5 σ/√n */
      g_assert_cmpfloat (fabs (sum / n), <=, 5 * sqrt (var / n) / sqrt ((double) n) + 1e-7);
    }
}

/* ggml Q8_0 and Q4_0, against a port of ggml's reference (quantize_row_q8_0_ref,
 * quantize_row_q4_0_ref in src/ggml-quants.c). */
static guint16
f16_bits (float f)
{
  /* round to nearest even through the F16 tensor conversion of the library's
   * documented API: a one-element f16 tensor */
  double v = f;
  g_autoptr(PiqTensor) t = piq_tensor_new_from_values (PIQ_DTYPE_F16, &v, 1, NULL);
  guint16 h;
  memcpy (&h, piq_tensor_get_data (t, NULL), 2);
  return h;
}

static void
test_ggml (void)
{
  const gsize n = 32 * 50 + 7;
  g_autofree float *x = normal_data (n, 11);
  g_autoptr(PiqQuantizer) q = quantizer (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) p8 = piq_format_new_preset ("q8_0", &error);
  g_autoptr(PiqFormat) p4 = piq_format_new_preset ("q4_0", &error);
  g_autoptr(PiqTensor) xt = f32_tensor (x, n);
  g_autoptr(PiqTensor) t8 = piq_quantizer_quantize_new (q, p8, NULL, xt, &error);
  g_autoptr(PiqTensor) t4 = piq_quantizer_quantize_new (q, p4, NULL, xt, &error);
  const guint8 *b8 = piq_tensor_get_data (t8, NULL), *b4 = piq_tensor_get_data (t4, NULL);

  g_assert_no_error (error);
  g_assert_cmpuint (piq_tensor_get_n_bytes (t8), ==, 51 * 34);
  g_assert_cmpuint (piq_tensor_get_n_bytes (t4), ==, 51 * 18);
  for (gsize b = 0; b < 51; b++)
    {
      float xb[32] = { 0 }, amax = 0, max = 0, d, id;
      guint16 h;
      for (gsize j = 0; j < 32 && b * 32 + j < n; j++)
        xb[j] = x[b * 32 + j];
      for (int j = 0; j < 32; j++)
        if (amax < fabsf (xb[j]))
          {
            amax = fabsf (xb[j]);
            max = xb[j];
          }
      d = amax / 127;
      id = d ? 1.0f / d : 0.0f;
      h = f16_bits (d);
      g_assert_cmpmem (b8 + b * 34, 2, &h, 2);
      for (int j = 0; j < 32; j++)
        g_assert_cmpint ((gint8) b8[b * 34 + 2 + j], ==, (int) roundf (xb[j] * id));
      d = max / -8;
      id = d ? 1.0f / d : 0.0f;
      h = f16_bits (d);
      g_assert_cmpmem (b4 + b * 18, 2, &h, 2);
      for (int j = 0; j < 16; j++)
        {
          guint8 x0 = (guint8) MIN (15, (gint8) (xb[j] * id + 8.5f));
          guint8 x1 = (guint8) MIN (15, (gint8) (xb[j + 16] * id + 8.5f));
          g_assert_cmpuint (b4[b * 18 + 2 + j], ==, x0 | x1 << 4);
        }
    }
}

/* Binary: sign bits, mean |x| scales, and the XNOR/popcount dot product equal to the
 * dot product of the dequantized vectors. */
static void
test_binary (void)
{
  const gsize lengths[] = { 1, 9, 128, 129, 1000 };
  g_autoptr(PiqQuantizer) q = quantizer (2);

  for (guint li = 0; li < G_N_ELEMENTS (lengths); li++)
    for (guint bs = 1; bs <= 200; bs += 67)
      {
        gsize n = lengths[li];
        g_autofree float *a = normal_data (n, 1), *b = normal_data (n, 2);
        g_autoptr(GError) error = NULL;
        /* the binary preset with blocks of bs */
        g_autoptr(PiqFormat) p = piq_format_new_per_block (PIQ_DTYPE_BINARY, bs, PIQ_DTYPE_F32);
        g_autoptr(PiqTensor) at = f32_tensor (a, n), bt = f32_tensor (b, n), qa = NULL, qb = NULL,
                             ya = NULL, yb = NULL;
        double dot = 0, want = 0;

        qa = piq_quantizer_quantize_new (q, p, NULL, at, &error);
        qb = piq_quantizer_quantize_new (q, p, NULL, bt, &error);
        g_assert_no_error (error);
        ya = piq_quantizer_dequantize_new (q, qa, PIQ_DTYPE_F64, &error);
        yb = piq_quantizer_dequantize_new (q, qb, PIQ_DTYPE_F64, &error);
        for (gsize i = 0; i < n; i++)
          {
            double sa = 0;
            for (gsize j = i / bs * bs; j < MIN (n, i / bs * bs + bs); j++)
              sa += fabsf (a[j]);
            g_assert_cmpfloat (piq_tensor_get_value (qa, i), ==, a[i] >= 0 ? 1 : 0);
            g_assert_cmpfloat (fabs (fabs (piq_tensor_get_value (ya, i)) - sa / MIN (bs, n - i / bs * bs)), <, 1e-5);
            want += piq_tensor_get_value (ya, i) * piq_tensor_get_value (yb, i);
          }
        g_assert_true (piq_quantizer_binary_dot (q, qa, qb, &dot, &error));
        g_assert_no_error (error);
        g_assert_cmpfloat (fabs (dot - want), <=, 1e-9 * MAX (1.0, fabs (want)));
      }
}

/* MSFP / block floating point, against the MSFP16 reference rule written out here:
 * E = the box maximum's biased binary32 exponent + 1 (+1 more when rounding the
 * maximum to m bits carries), magnitude = RNE(|x| / 2^(E−127−m)), sign bit apart;
 * every m from 2 to 8, boxes of 1, 16 and 17 with a ragged last one, and carries. */
static void
test_bfp (void)
{
  g_autoptr(PiqQuantizer) q = quantizer (2);

  for (int m = 2; m <= 8; m++)
    for (guint bs = 1; bs <= 17; bs += (bs == 1 ? 15 : 1))
      {
        const gsize n = 16 * 9 + 5;
        g_autofree float *x = normal_data (n, (guint32) (m * 100 + bs));
        g_autoptr(GError) error = NULL;
        g_autoptr(PiqFormat) p = piq_format_new_per_block (PIQ_DTYPE_BFP2 + (m - 2), bs, PIQ_DTYPE_E8M0);
        g_autoptr(PiqTensor) xt = NULL, t = NULL, y = NULL;
        g_autoptr(GBytes) sb = NULL;
        const guint8 *e;

        /* boxes whose maximum carries into the next binade when rounded to m bits */
        x[0] = ldexpf (1.0f - ldexpf (1.0f, -(m + 2)), 3);
        x[bs] = -ldexpf (1.0f - ldexpf (1.0f, -(m + 2)), -5);
        x[2 * bs] = 0.0f;
        xt = f32_tensor (x, n);
        t = piq_quantizer_quantize_new (q, p, NULL, xt, &error);
        g_assert_no_error (error);
        y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F64, &error);
        g_assert_no_error (error);
        sb = piq_tensor_get_scales (t);
        e = g_bytes_get_data (sb, NULL);
        g_assert_cmpuint (piq_tensor_get_n_bytes (t), ==, (n * (m + 1) + 7) / 8);
        for (gsize b = 0; b * bs < n; b++)
          {
            double amax = 0;
            int ex, want_e;
            for (gsize i = b * bs; i < MIN (n, b * bs + bs); i++)
              amax = MAX (amax, fabs (x[i]));
            if (amax == 0)
              want_e = 0;
            else
              {
                ex = (int) floor (log2 (amax)) + 1;
                if (nearbyint (ldexp (amax, m - ex)) >= ldexp (1, m))
                  ex++;
                want_e = ex + 127;
              }
            g_assert_cmpint (e[b], ==, want_e);
            for (gsize i = b * bs; i < MIN (n, b * bs + bs); i++)
              {
                double mag = MIN (nearbyint (fabs (ldexp (x[i], 127 + m - want_e))), ldexp (1, m) - 1);
                unsigned want = (signbit (x[i]) ? 1u << m : 0u) | (unsigned) mag;
                double value = (signbit (x[i]) ? -1 : 1) * ldexp (mag, want_e - 127 - m);
                g_assert_cmpuint ((unsigned) piq_tensor_get_value (t, i), ==, want);
                g_assert_cmpfloat (piq_tensor_get_value (y, i), ==, value);
              }
          }
      }
  {
    /* the presets: MSFP12 = 1 + 3 bits, MSFP16 = 1 + 7 bits, boxes of 16 */
    g_autoptr(PiqFormat) p12 = piq_format_new_preset ("msfp12", NULL);
    g_autoptr(PiqFormat) p16 = piq_format_new_preset ("msfp16", NULL);
    g_assert_cmpint (piq_format_get_dtype (p12), ==, PIQ_DTYPE_BFP3);
    g_assert_cmpint (piq_format_get_dtype (p16), ==, PIQ_DTYPE_BFP7);
    g_assert_cmpuint (piq_format_get_block_size (p16), ==, 16);
  }
}

/* NF4 double quantization (bitsandbytes' compress_statistics): the offset is the
 * mean absmax, each chunk of 256 scales keeps its max |absmax − offset| and a code per
 * scale, the nearest entry of bnb's dynamic map (exhaustive search here); the codes
 * are those of the exact absmax, the values decode with the reconstructed one. */
static void
check_double_quant (const float *x, gsize n, guint bs, guint threads)
{
  g_autoptr(PiqQuantizer) q = quantizer (threads);
  g_autoptr(GError) error = NULL;
  /* nf4_dq, and nf4 without double quantization, at block size bs */
  g_autoptr(PiqFormat) p = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_NF4,
                                         "granularity", PIQ_GRANULARITY_BLOCK, "block-size", bs,
                                         "scale-dtype", PIQ_DTYPE_F32, "high-nibble-first", TRUE,
                                         "double-quant", TRUE, NULL);
  g_autoptr(PiqFormat) plain = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_NF4,
                                             "granularity", PIQ_GRANULARITY_BLOCK,
                                             "block-size", bs, "scale-dtype", PIQ_DTYPE_F32,
                                             "high-nibble-first", TRUE, NULL);
  g_autoptr(PiqTensor) xt = f32_tensor (x, n), t = NULL, t0 = NULL, y = NULL;
  g_autoptr(GBytes) sb = NULL, sb0 = NULL;
  const guint8 *s;
  const float *absmax;
  gsize size, want_size, codes_size;
  const guint64 shape[1] = { n };
  gsize nb = (n + bs - 1) / bs, nc = (nb + 255) / 256;
  double sum = 0, mae = 0;
  float offset;

  g_assert_true (piq_format_get_double_quant (p));
  t = piq_quantizer_quantize_new (q, p, NULL, xt, &error);
  t0 = piq_quantizer_quantize_new (q, plain, NULL, xt, &error);
  g_assert_no_error (error);
  /* the same codes as without double quantization */
  g_assert_cmpmem (piq_tensor_get_data (t, NULL), piq_tensor_get_n_bytes (t),
                   piq_tensor_get_data (t0, NULL), piq_tensor_get_n_bytes (t0));
  sb = piq_tensor_get_scales (t);
  sb0 = piq_tensor_get_scales (t0);
  s = g_bytes_get_data (sb, &size);
  absmax = g_bytes_get_data (sb0, NULL);
  want_size = 4 + 4 * nc + nb;
  g_assert_cmpuint (size, ==, want_size);
  g_assert_true (piq_format_get_sizes (p, shape, 1, &codes_size, &size, NULL, &error));
  g_assert_cmpuint (size, ==, want_size);
  g_assert_cmpuint (codes_size, ==, piq_tensor_get_n_bytes (t));
  /* the mean's binary64 sum: each chunk's in order, then the chunks' in order */
  for (gsize c = 0; c < nc; c++)
    {
      double chunk = 0;
      for (gsize b = c * 256; b < MIN (nb, c * 256 + 256); b++)
        chunk += absmax[b];
      sum += chunk;
    }
  offset = (float) (sum / nb);
  g_assert_cmpmem (s, 4, &offset, 4);
  y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  for (gsize c = 0; c < nc; c++)
    {
      float amax2 = 0, inv;
      for (gsize b = c * 256; b < MIN (nb, c * 256 + 256); b++)
        amax2 = MAX (amax2, fabsf (absmax[b] - offset));
      g_assert_cmpmem (s + 4 + 4 * c, 4, &amax2, 4);
      inv = 1.0f / amax2;
      for (gsize b = c * 256; b < MIN (nb, c * 256 + 256); b++)
        {
          float v = (absmax[b] - offset) * inv, best = INFINITY, rec;
          guint code = 0;
          for (guint k = 0; k < 256; k++)
            if (fabsf (piq_dynamic_map[k] - v) < best)
              {
                best = fabsf (piq_dynamic_map[k] - v);
                code = k;
              }
          g_assert_cmpuint (s[4 + 4 * nc + b], ==, code);
          rec = piq_dynamic_map[code] * amax2 + offset;
          for (gsize i = b * bs; i < MIN (n, b * bs + bs); i++)
            {
              guint8 byte = ((const guint8 *) piq_tensor_get_data (t, NULL))[i / 2];
              unsigned nib = (byte >> (i % 2 ? 0 : 4)) & 15;
              g_assert_cmpfloat (f32_data (y)[i], ==, nf4_table[nib] * rec);
            }
        }
    }
  for (gsize i = 0; i < n; i++)
    mae += fabs (x[i] - f32_data (y)[i]);
  g_test_message ("nf4 with double quantization: MAE %.4f, %.4f bits per element",
                  mae / n, (piq_tensor_get_n_bytes (t) + want_size) * 8.0 / n);
}

static void
test_double_quant (void)
{
  const gsize n = 64 * 600 + 17;       /* 601 blocks: three chunks, a ragged block */
  g_autofree float *x = normal_data (n, 21);
  g_autoptr(PiqFormat) preset = piq_format_new_preset ("nf4_dq", NULL);

  g_assert_true (piq_format_get_double_quant (preset));
  g_assert_cmpuint (piq_format_get_block_size (preset), ==, 64);
  check_double_quant (x, n, 64, 2);
  /* block scales from 2^-40 to 2^40: most chunks' maxima come from a few large
   * scales, and the binary64 sum is no longer exact (in order of blocks it differs
   * from the definition's chunk order in its last bit, not after rounding to f32) */
  for (gsize i = 0; i < n; i++)
    x[i] = ldexpf (x[i], (int) ((i / 64 * 37) % 81) - 40);
  check_double_quant (x, n, 64, 2);
  /* blocks of 2: 33,537 scales in 132 chunks, enough for the engine to share the
   * chunks among threads (docs: the bytes do not depend on how) */
  {
    const gsize n2 = 2 * (256 * 131 + 1) + 1;
    g_autofree float *x2 = normal_data (n2, 22);

    for (guint threads = 1; threads <= 3; threads += 2)
      check_double_quant (x2, n2, 2, threads);
  }
}

/* Data quantized elsewhere: codes, scales and zero points set as bytes. */
static void
test_wrap_foreign (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqQuantizer) q = quantizer (1);
  g_autoptr(PiqFormat) p = piq_format_new_preset ("nf4", &error);
  float absmax[1] = { 2.0f };
  guint8 packed[2] = { 0xF7, 0x0F };   /* high nibble first: 15, 7, 0, 15 */
  const guint64 shape[1] = { 4 };
  g_autoptr(GBytes) cb = g_bytes_new (packed, sizeof packed);
  g_autoptr(GBytes) sb = g_bytes_new (absmax, sizeof absmax);
  g_autoptr(PiqTensor) t = piq_tensor_new_quantized_from_bytes (p, shape, 1, cb, sb, NULL, 1.0, 0, &error);
  g_autoptr(PiqTensor) y = NULL;

  g_assert_no_error (error);
  y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (f32_data (y)[0], ==, 2.0f);
  g_assert_cmpfloat (f32_data (y)[1], ==, 0.0f);
  g_assert_cmpfloat (f32_data (y)[2], ==, -2.0f);
  g_assert_cmpfloat (f32_data (y)[3], ==, 2.0f);
}

/* Bad input: a clear GError and nothing written. */
static void
test_errors (void)
{
  g_autoptr(PiqQuantizer) q = quantizer (1);
  float x[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
  g_autoptr(PiqTensor) xt = f32_tensor (x, 10);
  const guint64 shape[1] = { 10 };
  guint8 dst[64];

  {
    /* per channel: the old "10 elements are not whole rows of 4"
     * (CHANNEL + block-size 4) is now a block size on a per-channel format,
     * which does not apply; channels are an axis of the shape: a 1-D
     * tensor has no axis 1 (test-errors.c covers more axes) */
    g_autoptr(GError) e1 = NULL, e2 = NULL;
    g_autoptr(PiqFormat) p = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8,
                                           "granularity", PIQ_GRANULARITY_CHANNEL, "block-size", 4, NULL);
    g_autoptr(PiqFormat) p1 = piq_format_new_per_channel (PIQ_DTYPE_INT8, 1);
    g_assert_null (piq_quantizer_quantize_new (q, p, NULL, xt, &e1));
    g_assert_error (e1, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_assert_null (piq_quantizer_quantize_new (q, p1, NULL, xt, &e2));
    g_assert_error (e2, PIQ_ERROR, PIQ_ERROR_SIZE);
  }
  {
    /* E8M0 scales with NF4 */
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqFormat) p = piq_format_new_per_block (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_E8M0);
    g_assert_null (piq_quantizer_quantize_new (q, p, NULL, xt, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  }
  {
    /* a power-of-two rule with f32 scales; mean/std per block; scales stored as int8 */
    PiqScaleRule rules[] = { PIQ_SCALE_RULE_POW2_CEIL, PIQ_SCALE_RULE_MEAN_STD };
    for (guint i = 0; i < 3; i++)
      {
        g_autoptr(GError) error = NULL;
        g_autoptr(PiqFormat) p = i < 2 ? piq_format_new_preset ("int8_block", NULL)
                                       : g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8,
                                                       "granularity", PIQ_GRANULARITY_BLOCK,
                                                       "symmetric", TRUE, "scale-dtype", PIQ_DTYPE_INT8, NULL);
        g_autoptr(PiqRecipe) r = piq_recipe_new ();
        if (i < 2)
          piq_recipe_set_scale_rule (r, rules[i]);
        g_assert_null (piq_quantizer_quantize_new (q, p, r, xt, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
      }
  }
  {
    /* a zero point for a format without one; a bad scale for the FP8 cast */
    g_autoptr(GError) e1 = NULL, e2 = NULL;
    g_autoptr(PiqFormat) p = piq_format_new (PIQ_DTYPE_FP8_E4M3);
    g_autoptr(PiqRecipe) r = piq_recipe_new_affine (1.0, 3);
    g_autoptr(PiqRecipe) r2 = piq_recipe_new_fixed (NAN);
    g_assert_null (piq_quantizer_quantize_new (q, p, r, xt, &e1));
    g_assert_error (e1, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
    g_assert_null (piq_quantizer_quantize_new (q, p, r2, xt, &e2));
    g_assert_error (e2, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
  }
  {
    /* high-nibble-first on 8-bit codes */
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqFormat) p = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_FP8_E5M2,
                                           "high-nibble-first", TRUE, NULL);
    g_assert_null (piq_quantizer_quantize_new (q, p, NULL, xt, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  }
  {
    /* the raw form without room for the per-block scales; nothing is written */
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqFormat) p = piq_format_new_preset ("mxfp4", NULL);
    memset (dst, 0xAA, sizeof dst);
    g_assert_false (piq_quantizer_quantize_raw (q, p, NULL, PIQ_DTYPE_F32, x, shape, 1, dst, sizeof dst,
                                                NULL, 0, NULL, 0, NULL, NULL, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
    for (guint i = 0; i < sizeof dst; i++)
      g_assert_cmpuint (dst[i], ==, 0xAA);
  }
  {
    /* short scale buffers, and a quantized tensor whose scales are missing
     * (refused when it is made, or by dequantize) */
    g_autoptr(GError) e1 = NULL, e2 = NULL;
    /* int8_block (symmetric) with blocks of 4 */
    g_autoptr(PiqFormat) ps = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity",
                                            PIQ_GRANULARITY_BLOCK, "block-size", 4, "symmetric", TRUE, NULL);
    guint8 scales[2];
    guint8 codes[10] = { 0 };
    g_autoptr(GBytes) cb = g_bytes_new (codes, sizeof codes);
    g_autoptr(PiqTensor) t = NULL, y = piq_tensor_new (PIQ_DTYPE_F32, 10, NULL);
    memset (dst, 0xAA, sizeof dst);
    g_assert_false (piq_quantizer_quantize_raw (q, ps, NULL, PIQ_DTYPE_F32, x, shape, 1, dst, sizeof dst,
                                                scales, sizeof scales, NULL, 0, NULL, NULL, &e1));
    g_assert_error (e1, PIQ_ERROR, PIQ_ERROR_SIZE);
    for (guint i = 0; i < sizeof dst; i++)
      g_assert_cmpuint (dst[i], ==, 0xAA);
    t = piq_tensor_new_quantized_from_bytes (ps, shape, 1, cb, NULL, NULL, 1.0, 0, &e2);
    if (t != NULL)
      g_assert_false (piq_quantizer_dequantize (q, t, y, PIQ_REDUCE_SET, &e2));
    g_assert_error (e2, PIQ_ERROR, PIQ_ERROR_SIZE);
  }
  {
    /* compute_params is per tensor */
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqFormat) p = piq_format_new_preset ("mxfp8_e4m3", NULL);
    g_autoptr(PiqRecipe) r = piq_recipe_new ();
    g_assert_false (piq_quantizer_compute_params (q, p, r, xt, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_assert_false (piq_recipe_has_scale (r));
  }
  {
    /* an unknown preset; a code that does not fit its format */
    g_autoptr(GError) e1 = NULL, e2 = NULL;
    double v = 16;
    g_assert_null (piq_format_new_preset ("mxfp5", &e1));
    g_assert_error (e1, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_assert_null (piq_tensor_new_from_values (PIQ_DTYPE_NF4, &v, 1, &e2));
    g_assert_error (e2, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
  }
}

/* The per-tensor FP8 presets quantized without compute_params derive their
 * scale from the data (abs-max onto the format's largest value), never a
 * silent scale 1.0: small weights (σ = 1e-3, where scale 1 lost 61 %) keep a
 * small error, by quantize, quantize_new and requantize alike. */
static void
test_fp8_per_tensor_derives (gconstpointer data)
{
  const char *preset = data;
  const gsize n = 4096 + 3;
  g_autofree float *x = normal_data (n, 17);
  g_autoptr(PiqQuantizer) q = quantizer (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) f = piq_format_new_preset (preset, &error);
  g_autoptr(PiqTensor) xt = NULL, t = NULL, t2 = NULL, y = NULL, r = NULL;
  g_autoptr(GBytes) b1 = NULL, b2 = NULL;
  const guint64 shape[1] = { n };
  gboolean e4m3 = g_str_has_suffix (preset, "e4m3");
  double mae = 0, mean_abs = 0, amax = 0, max_code = e4m3 ? 448 : 57344;

  g_assert_no_error (error);
  g_assert_cmpint (piq_format_get_granularity (f), ==, PIQ_GRANULARITY_TENSOR);
  for (gsize i = 0; i < n; i++)
    {
      x[i] *= 1e-3f;
      amax = MAX (amax, fabsf (x[i]));
      mean_abs += fabsf (x[i]);
    }
  mean_abs /= n;
  xt = f32_tensor (x, n);

  t = piq_quantizer_quantize_new (q, f, NULL, xt, &error);
  g_assert_no_error (error);
  g_test_message ("%s: derived scale %.9g (amax / max %.9g)", preset, piq_tensor_get_scale (t), amax / max_code);
  g_assert_cmpfloat (piq_tensor_get_scale (t), !=, 1.0);
  g_assert_cmpfloat (fabs (piq_tensor_get_scale (t) - amax / max_code), <=, 1e-6 * amax / max_code);
  y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  for (gsize i = 0; i < n; i++)
    mae += fabs (x[i] - f32_data (y)[i]);
  mae /= n;
  g_test_message ("%s: relative MAE %.4f", preset, mae / mean_abs);
  /* about 2^-m / 6 for m mantissa bits: 2 % for E4M3, 4 % for E5M2 */
  g_assert_cmpfloat (mae / mean_abs, <, e4m3 ? 0.05 : 0.08);

  /* the same through quantize into a tensor made for the format */
  t2 = piq_tensor_new_quantized (f, shape, 1, &error);
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_quantize (q, NULL, xt, t2, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (piq_tensor_get_scale (t2), ==, piq_tensor_get_scale (t));
  b1 = piq_tensor_get_bytes (t);
  b2 = piq_tensor_get_bytes (t2);
  g_assert_true (g_bytes_equal (b1, b2));

  /* and requantize derives the same scale */
  r = piq_tensor_new (PIQ_DTYPE_F32, n, &error);
  g_assert_true (piq_quantizer_requantize (q, f, NULL, xt, r, PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (piq_tensor_get_data (r, NULL), n * 4, piq_tensor_get_data (y, NULL), n * 4);
}

/* NaN and ±Inf: one documented result per format (docs/formats.md). */
static void
test_non_finite (void)
{
  g_autoptr(PiqQuantizer) q = quantizer (1);
  float x[4] = { NAN, INFINITY, -INFINITY, 0.5f };
  g_autoptr(PiqTensor) xt = f32_tensor (x, 4);
  struct { const char *preset; double want[4]; } cases[] = {
    /* NF4/FP4/NF8 per block: scale from finite values (0.5); NaN -> code of 0, Inf clamps */
    { "nf4",      { 7, 15, 0, 15 } },
    { "fp4_bnb",  { 0, 3, 11, 3 } },
    { "nf8",      { 127, 255, 0, 255 } },
    /* MX and MSFP: a block with NaN or Inf has scale 0xFF; its codes are 0 */
    { "mxfp4",    { 0, 0, 0, 0 } },
    { "msfp16",   { 0, 0, 0, 0 } },
    /* binary: NaN as +0, ±Inf by sign */
    { "binary",   { 1, 1, 0, 1 } },
  };

  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqFormat) p = piq_format_new_preset (cases[k].preset, NULL);
      g_autoptr(PiqTensor) t = piq_quantizer_quantize_new (q, p, NULL, xt, &error);
      g_autoptr(PiqTensor) y = NULL;
      g_assert_no_error (error);
      for (int i = 0; i < 4; i++)
        g_assert_cmpfloat (piq_tensor_get_value (t, i), ==, cases[k].want[i]);
      y = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
      if (g_str_has_prefix (cases[k].preset, "m"))
        for (int i = 0; i < 4; i++)
          g_assert_true (isnan (f32_data (y)[i]));
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  for (int i = 0; i < N_MINIFLOATS; i++)
    {
      g_autofree char *d = g_strdup_printf ("/formats/%s/decode-all-codes", minis[i].name);
      g_autofree char *e = g_strdup_printf ("/formats/%s/encode-boundaries", minis[i].name);
      g_test_add_data_func (d, &minis[i], test_minifloat_decode);
      g_test_add_data_func (e, &minis[i], test_minifloat_encode);
    }
  g_test_add_func ("/formats/e8m0/decode-all", test_e8m0_decode);
  for (guint i = 0; i < G_N_ELEMENTS (mx_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/formats/mx/%s/blocks", mx_cases[i].preset);
      g_test_add_data_func (path, &mx_cases[i], test_mx_blocks);
    }
  g_test_add_func ("/formats/bnb/thresholds", test_bnb_thresholds);
  g_test_add_func ("/formats/bnb/blocks", test_bnb_blocks);
  g_test_add_func ("/formats/int/per-block", test_int_blocks);
  g_test_add_func ("/formats/all/threads-requantize", test_threads_and_requantize);
  g_test_add_func ("/formats/stochastic/unbiased", test_stochastic_unbiased);
  g_test_add_func ("/formats/ggml/q8_0-q4_0", test_ggml);
  g_test_add_func ("/formats/binary/dot", test_binary);
  g_test_add_func ("/formats/bfp/boxes", test_bfp);
  g_test_add_func ("/formats/bnb/double-quant", test_double_quant);
  g_test_add_func ("/formats/wrap-foreign", test_wrap_foreign);
  g_test_add_func ("/formats/errors", test_errors);
  g_test_add_data_func ("/formats/fp8_e4m3/per-tensor/derives-scale", "fp8_e4m3", test_fp8_per_tensor_derives);
  g_test_add_data_func ("/formats/fp8_e5m2/per-tensor/derives-scale", "fp8_e5m2", test_fp8_per_tensor_derives);
  g_test_add_func ("/formats/non-finite", test_non_finite);
  return g_test_run ();
}

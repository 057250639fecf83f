/* test-compute-params.c: scale and zero point from data (docs/numerics.md,
 * "Parameters from data")
 *
 * Hand-computed vectors for each rule, then every rule × source dtype ×
 * integer dtype × kind of data against the formulas of test-oracle.h, constant
 * and single-element tensors (usable parameters, the constant round-trips),
 * NaN/±Inf (PIQ_ERROR_NON_FINITE, parameters untouched), empty tensors, and
 * the same result for every thread count and SIMD level.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

static PiqQuantizer *quantizers[8];   /* one per distinct SIMD level */
static guint n_quantizers;

static void
setup_quantizers (void)
{
  static const PiqSimdLevel caps[] = {
    PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_NEON, PIQ_SIMD_LEVEL_SSE4_2, PIQ_SIMD_LEVEL_AVX2,
    PIQ_SIMD_LEVEL_AVX512, PIQ_SIMD_LEVEL_AVX512_BF16, PIQ_SIMD_LEVEL_AVX512_FP16,
    PIQ_SIMD_LEVEL_AVX512_VNNI,
  };
  PiqSimdLevel seen[8];

  for (gsize k = 0; k < G_N_ELEMENTS (caps); k++)
    {
      PiqQuantizer *q = piq_quantizer_new ();
      PiqSimdLevel got;
      gboolean dup = FALSE;

      piq_quantizer_set_max_simd_level (q, caps[k]);
      got = piq_quantizer_get_simd_level (q);
      for (guint j = 0; j < n_quantizers; j++)
        dup |= seen[j] == got;
      if (dup)
        {
          g_object_unref (q);
          continue;
        }
      seen[n_quantizers] = got;
      quantizers[n_quantizers++] = q;
    }
}

static const char *
rule_name (PiqScaleRule rule)
{
  switch (rule)
    {
    case PIQ_SCALE_RULE_MIN_MAX:  return "min-max";
    case PIQ_SCALE_RULE_ABS_MAX:  return "abs-max";
    case PIQ_SCALE_RULE_MEAN_STD: return "mean-std";
    default: g_assert_not_reached ();
    }
  return NULL;
}

static PiqTensor *
tensor_from_doubles (PiqDtype dtype, const double *x, guint64 n)
{
  g_autofree guint8 *buf = g_malloc0 (o_dtype_nbytes (dtype, n) + 1);
  g_autoptr (GError) error = NULL;
  PiqTensor *t;

  for (guint64 i = 0; i < n; i++)
    o_write_float (dtype, buf, i, x[i]);
  t = piq_tensor_new_from_data (dtype, n, buf, o_dtype_nbytes (dtype, n), &error);
  g_assert_no_error (error);
  return t;
}

/* The format a rule applies to. */
static PiqFormat *
format_for_rule (PiqScaleRule rule, PiqDtype qdtype)
{
  if (rule == PIQ_SCALE_RULE_ABS_MAX)
    return piq_format_new_symmetric (qdtype);
  return piq_format_new (qdtype);
}

static PiqRecipe *
recipe_for_rule (PiqScaleRule rule, gboolean include_zero)
{
  PiqRecipe *r = piq_recipe_new ();
  piq_recipe_set_scale_rule (r, rule);
  /* include-zero applies to min/max only; the other rules keep the default */
  if (rule == PIQ_SCALE_RULE_MIN_MAX)
    piq_recipe_set_include_zero (r, include_zero);
  return r;
}

/* The zero point a recipe and format give: the recipe's for an affine
 * format (it must have one after compute_params), the format's own for a
 * symmetric one (the recipe has none, or exactly that one). */
static OInt
effective_zero_point (PiqFormat *format, PiqRecipe *recipe)
{
  PiqDtype d = piq_format_get_dtype (format);

  if (!piq_format_get_symmetric (format))
    {
      g_assert_true (piq_recipe_has_zero_point (recipe));
      return piq_recipe_get_zero_point (recipe);
    }
  {
    OInt implied = o_qmin (d) < 0 ? 0 : (o_qmax (d) + 1) / 2;
    if (piq_recipe_has_zero_point (recipe))
      g_assert_true ((OInt) piq_recipe_get_zero_point (recipe) == MIN (implied, (OInt) G_MAXINT64));
    return implied;
  }
}

/* Runs compute_params on every SIMD level; every level must give the same
 * scale and zero point, which are returned. */
static gboolean
compute_all_levels (PiqFormat *format, PiqRecipe *recipe, PiqTensor *src, double *scale, OInt *zp)
{
  for (guint k = 0; k < n_quantizers; k++)
    {
      g_autoptr (PiqRecipe) p = piq_recipe_copy (recipe);
      g_autoptr (GError) error = NULL;

      if (!piq_quantizer_compute_params (quantizers[k], format, p, src, &error))
        {
          g_test_fail_printf ("compute_params failed on level %u: %s", k,
                              error != NULL ? error->message : "no error set");
          return FALSE;
        }
      g_assert_no_error (error);
      g_assert_true (piq_recipe_has_scale (p));
      if (k == 0)
        {
          *scale = piq_recipe_get_scale (p);
          *zp = effective_zero_point (format, p);
        }
      else if (piq_recipe_get_scale (p) != *scale || effective_zero_point (format, p) != *zp)
        {
          char z1[48], z2[48];
          g_test_fail_printf ("SIMD level %u gives scale %.17g zp %s, level 0 %.17g %s", k,
                              piq_recipe_get_scale (p), o_int_str (effective_zero_point (format, p), z1),
                              *scale, o_int_str (*zp, z2));
          return FALSE;
        }
    }
  /* and the caller's object gets the result */
  {
    g_autoptr (GError) error = NULL;
    g_assert_true (piq_quantizer_compute_params (quantizers[0], format, recipe, src, &error));
    g_assert_no_error (error);
    g_assert_true (piq_recipe_has_scale (recipe));
  }
  return TRUE;
}

/* ---- hand-computed vectors ---- */

typedef struct {
  const char   *name;
  PiqScaleRule  rule;
  gboolean      include_zero;
  PiqDtype      qdtype;
  guint         n;
  double        x[6];
  double        scale;      /* expected, written as the formula's arithmetic */
  gint64        zp;
} Hand;

/* min/max: scale = max((hi − lo) / (float)(qmax − qmin), 2^-23) in binary32,
 * zp = clamp(qmin − nearbyint(lo / scale)); worked out by hand:
 *   {-3,-1,2,5} uint8: 8/255 = 0.0313725509f, −3/that = −95.62499f -> −96 -> zp 96
 *   {-3,-1,2,5} int8: −128 + 96 = −32
 *   {1,2,3,5} int8 with include-zero: [0, 5] -> 5/255, zp −128 − 0
 *   {1,2,3,5} int8 without: [1, 5] -> 4/255, 1/(4/255) = 63.75 -> 64 -> −192 -> clamped −128
 *   {-4,-2,-1} uint4: [−4, 0] -> 4/15, −4/(4/15) = −14.999999f -> −15 -> zp 15
 *   {-4,-2,-1} uint4 without: [−4, −1] -> 3/15 = 0.2f, −4/0.2 = −20 -> zp 20 -> 15
 *   {-1, 0.5} int2: 1.5/3 = 0.5, −1/0.5 = −2 -> zp −2 + 2 = 0
 *   {-2.5, 7.5} int16: 10/65535, −2.5/that = −16383.75 -> −16384 -> zp −32768 + 16384
 *   ties of lo/scale: {-0.5, 254.5} uint8: scale 1, −0.5 -> −0 (ties to even) -> zp 0;
 *   {-2.5, 252.5}: −2.5 -> −2 -> zp 2 (round-half-away would give 1 and 3)
 *   constant 3 without include-zero still uses [0, 3]: 3/255, zp 0
 * abs-max: scale = max(a / ((float)(qmax − qmin) / 2), 2^-23), zp 0 signed,
 *   (qmin + qmax + 1) / 2 unsigned:
 *   {-3,1,2} int8: 3/127.5, zp 0; uint8: same scale, zp 128; {0.5,-7.5} uint4: 7.5/7.5 = 1,
 *   zp 8; {0.75} int2: 0.75/1.5 = 0.5; uint2: zp 2; {-1e6, 5} int32: (float)(2^32 − 1) = 2^32,
 *   1e6/2^31
 * mean/σ (binary64): {1,2,3,4}: mean 2.5, var (30 − 100/4)/3 = 5/3;
 *   uint8: 12σ/255, 2.5/scale = 41.15 -> 41, zp 128 − 41 = 87
 *   int8: 12σ/127, 20.49 -> 20, zp −20;  int4: 2.7σ/7, 5.02 -> 5, zp −5
 *   uint4: 2.7σ/15, 10.76 -> 11, zp 8 − 11 -> clamped 0;  int2: 1.4σ/1, 1.38 -> 1, zp −1
 *   {-18.75, 2.5, 23.75}: Σx = 7.5, Σx² = 921.875, var = (921.875 − 18.75)/2 = 451.5625,
 *   σ = 21.25, uint8 scale = 12·21.25/255 = 1 exactly, mean/scale = 2.5 -> round half away
 *   -> 3 -> zp 125; the mirrored data -> −3 -> zp 131
 *   {5}: n = 1, var 0 -> scale 1, zp 128 − 5 = 123; {-7, -7} int8: σ 0 -> scale 1, zp 7 */
static const Hand hands[] = {
  { "min-max/include-zero/uint8/mixed", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_UINT8, 4, { -3, -1, 2, 5 }, 8.0f / 255.0f, 96 },
  { "min-max/no-include-zero/uint8/mixed", PIQ_SCALE_RULE_MIN_MAX, FALSE, PIQ_DTYPE_UINT8, 4, { -3, -1, 2, 5 }, 8.0f / 255.0f, 96 },
  { "min-max/include-zero/int8/mixed", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_INT8, 4, { -3, -1, 2, 5 }, 8.0f / 255.0f, -32 },
  { "min-max/include-zero/int8/positive", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_INT8, 4, { 1, 2, 3, 5 }, 5.0f / 255.0f, -128 },
  { "min-max/no-include-zero/int8/positive", PIQ_SCALE_RULE_MIN_MAX, FALSE, PIQ_DTYPE_INT8, 4, { 1, 2, 3, 5 }, 4.0f / 255.0f, -128 },
  { "min-max/include-zero/uint4/negative", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_UINT4, 3, { -4, -2, -1 }, 4.0f / 15.0f, 15 },
  { "min-max/no-include-zero/uint4/negative", PIQ_SCALE_RULE_MIN_MAX, FALSE, PIQ_DTYPE_UINT4, 3, { -4, -2, -1 }, 3.0f / 15.0f, 15 },
  { "min-max/include-zero/int2/mixed", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_INT2, 2, { -1, 0.5 }, 0.5, 0 },
  { "min-max/include-zero/int16/mixed", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_INT16, 2, { -2.5, 7.5 }, 10.0f / 65535.0f, -16384 },
  { "min-max/include-zero/uint8/tie-0.5", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_UINT8, 2, { -0.5, 254.5 }, 1.0, 0 },
  { "min-max/include-zero/uint8/tie-2.5", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_UINT8, 2, { -2.5, 252.5 }, 1.0, 2 },
  { "min-max/no-include-zero/uint8/constant-3", PIQ_SCALE_RULE_MIN_MAX, FALSE, PIQ_DTYPE_UINT8, 3, { 3, 3, 3 }, 3.0f / 255.0f, 0 },
  { "min-max/include-zero/uint8/zero", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_UINT8, 2, { 0, 0 }, 0x1p-23, 0 },
  { "min-max/include-zero/int8/zero", PIQ_SCALE_RULE_MIN_MAX, TRUE, PIQ_DTYPE_INT8, 1, { 0 }, 0x1p-23, -128 },
  { "abs-max/int8", PIQ_SCALE_RULE_ABS_MAX, TRUE, PIQ_DTYPE_INT8, 3, { -3, 1, 2 }, 3.0f / 127.5f, 0 },
  { "abs-max/uint8", PIQ_SCALE_RULE_ABS_MAX, TRUE, PIQ_DTYPE_UINT8, 3, { -3, 1, 2 }, 3.0f / 127.5f, 128 },
  { "abs-max/uint4", PIQ_SCALE_RULE_ABS_MAX, TRUE, PIQ_DTYPE_UINT4, 2, { 0.5, -7.5 }, 1.0, 8 },
  { "abs-max/int2", PIQ_SCALE_RULE_ABS_MAX, TRUE, PIQ_DTYPE_INT2, 1, { 0.75 }, 0.5, 0 },
  { "abs-max/uint2", PIQ_SCALE_RULE_ABS_MAX, TRUE, PIQ_DTYPE_UINT2, 1, { 0.75 }, 0.5, 2 },
  { "abs-max/int32", PIQ_SCALE_RULE_ABS_MAX, TRUE, PIQ_DTYPE_INT32, 2, { -1e6, 5 }, 1e6f / 2147483648.0f, 0 },
  { "abs-max/int8/zero", PIQ_SCALE_RULE_ABS_MAX, TRUE, PIQ_DTYPE_INT8, 2, { 0, -0.0 }, 0x1p-23, 0 },
  { "mean-std/uint8", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_UINT8, 4, { 1, 2, 3, 4 }, 0, 87 },
  { "mean-std/int8", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_INT8, 4, { 1, 2, 3, 4 }, 0, -20 },
  { "mean-std/int4", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_INT4, 4, { 1, 2, 3, 4 }, 0, -5 },
  { "mean-std/uint4", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_UINT4, 4, { 1, 2, 3, 4 }, 0, 0 },
  { "mean-std/int2", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_INT2, 4, { 1, 2, 3, 4 }, 0, -1 },
  { "mean-std/uint8/half-away-up", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_UINT8, 3, { -18.75, 2.5, 23.75 }, 1.0, 125 },
  { "mean-std/uint8/half-away-down", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_UINT8, 3, { -23.75, -2.5, 18.75 }, 1.0, 131 },
  { "mean-std/uint8/single", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_UINT8, 1, { 5 }, 1.0, 123 },
  { "mean-std/int8/constant", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_INT8, 2, { -7, -7 }, 1.0, 7 },
  /* σ 0 -> scale 1; mean/scale = 3e38 is far beyond the range: clamped before any
   * integer conversion, zp = clamp (128 − 3e38) = 0 (issue 11: it was 255) */
  { "mean-std/uint8/huge-constant", PIQ_SCALE_RULE_MEAN_STD, TRUE, PIQ_DTYPE_UINT8, 2, { 3e38, 3e38 }, 1.0, 0 },
};

static double
hand_mean_std_scale (const Hand *h)
{
  /* the {1,2,3,4} vectors: C·σ / type_max with σ = sqrt(5/3) */
  double sigma = sqrt (5.0 / 3.0);
  switch (h->qdtype)
    {
    case PIQ_DTYPE_UINT8: return 12.0 * sigma / 255.0;
    case PIQ_DTYPE_INT8:  return 12.0 * sigma / 127.0;
    case PIQ_DTYPE_INT4:  return 2.7 * sigma / 7.0;
    case PIQ_DTYPE_UINT4: return 2.7 * sigma / 15.0;
    case PIQ_DTYPE_INT2:  return 1.4 * sigma / 1.0;
    default: g_assert_not_reached ();
    }
  return 0;
}

static void
test_hand (gconstpointer data)
{
  const Hand *h = data;
  static const PiqDtype srcs[] = { PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16, PIQ_DTYPE_F16 };
  double expected_scale = h->scale != 0 ? h->scale : hand_mean_std_scale (h);

  for (gsize s = 0; s < G_N_ELEMENTS (srcs); s++)
    {
      g_autoptr (PiqTensor) src = tensor_from_doubles (srcs[s], h->x, h->n);
      g_autoptr (PiqFormat) format = format_for_rule (h->rule, h->qdtype);
      g_autoptr (PiqRecipe) recipe = recipe_for_rule (h->rule, h->include_zero);
      gboolean exact = TRUE;
      double scale;
      OInt zp;

      /* the expected values are for these exact inputs: skip a source dtype
       * that cannot hold them all (254.5 in bf16, 1e6 in bf16 and f16) */
      for (guint i = 0; i < h->n; i++)
        exact &= piq_tensor_get_value (src, i) == h->x[i];
      if (!exact)
        {
          g_test_message ("source %s cannot hold the vector exactly", o_dtype_name (srcs[s]));
          continue;
        }

      g_test_message ("source %s", o_dtype_name (srcs[s]));
      if (!compute_all_levels (format, recipe, src, &scale, &zp))
        return;
      if (scale != expected_scale || zp != h->zp)
        {
          char zs[48];
          g_test_fail_printf ("source %s: got scale %.17g zp %s, expected %.17g %" G_GINT64_FORMAT,
                              o_dtype_name (srcs[s]), scale, o_int_str (zp, zs), expected_scale, h->zp);
          continue;
        }
      g_assert_cmpfloat (piq_recipe_get_scale (recipe), ==, expected_scale);
      g_assert_true (effective_zero_point (format, recipe) == h->zp);
      /* the rule's inputs are untouched */
      g_assert_cmpint (piq_format_get_dtype (format), ==, h->qdtype);
      g_assert_cmpint (piq_recipe_get_scale_rule (recipe), ==, h->rule);
      g_assert_cmpint (piq_recipe_get_include_zero (recipe), ==, h->include_zero || h->rule != PIQ_SCALE_RULE_MIN_MAX);

      /* the DEFAULT rule is the format's own: min/max for affine integers
       * (with include-zero), abs-max for symmetric ones */
      if (h->rule != PIQ_SCALE_RULE_MEAN_STD && h->include_zero)
        {
          g_autoptr (PiqRecipe) dflt = piq_recipe_new ();
          double dscale;
          OInt dzp;
          if (!compute_all_levels (format, dflt, src, &dscale, &dzp))
            return;
          g_assert_cmpfloat (dscale, ==, expected_scale);
          g_assert_true (dzp == h->zp);
          g_assert_cmpint (piq_recipe_get_scale_rule (dflt), ==, PIQ_SCALE_RULE_DEFAULT);
        }
    }
}

/* ---- against the formulas, on generated data ---- */

typedef enum {
  DATA_MIXED,
  DATA_POSITIVE,
  DATA_NEGATIVE,
} DataKind;

static const char *data_kind_names[] = { "mixed", "positive", "negative" };

typedef struct {
  PiqScaleRule rule;
  gboolean     include_zero;
  PiqDtype     src;
  PiqDtype     qdtype;
  DataKind     kind;
  guint64      n;
} Case;

static GPtrArray *all_cases;

/* Values k/8 with |k| below a bound that keeps them exact in the source
 * dtype and keeps Σx and Σx² exact in binary64 for up to 2^20 elements, so
 * the mean/σ oracle does not depend on the order of summation. */
static void
gen_data (const Case *c, guint8 *buf, guint64 seed)
{
  ORng rng;
  gint64 kmax = c->src == PIQ_DTYPE_BF16 ? 255 : c->src == PIQ_DTYPE_F16 ? 2047 : 4095;

  o_rng_init (&rng, seed);
  for (guint64 i = 0; i < c->n; i++)
    {
      /* uniform over the whole range or over a sixteenth of it */
      gint64 r = (i & 1) ? kmax : kmax / 16;
      gint64 k = (gint64) o_rng_below (&rng, (guint64) (2 * r + 1)) - r;
      if (c->kind == DATA_POSITIVE)
        k = ABS (k) + 1;
      else if (c->kind == DATA_NEGATIVE)
        k = -ABS (k) - 1;
      if (ABS (k) > kmax)
        k = k > 0 ? kmax : -kmax;
      o_write_float (c->src, buf, i, (double) k / 8);
    }
}

static void
test_formula (gconstpointer data)
{
  const Case *c = data;
  gsize size = o_dtype_nbytes (c->src, c->n);
  g_autofree guint8 *buf = g_malloc (size + 1);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL;
  g_autoptr (PiqTensor) t = NULL;
  g_autoptr (PiqFormat) format = format_for_rule (c->rule, c->qdtype);
  g_autoptr (PiqRecipe) recipe = recipe_for_rule (c->rule, c->include_zero);
  g_autoptr (PiqRecipe) given = NULL;
  double exp_scale, scale;
  OInt exp_zp;
  OInt zp;

  gen_data (c, buf, 0xC0DE ^ ((guint64) c->src << 8) ^ ((guint64) c->qdtype << 16) ^ ((guint64) c->kind << 24) ^ c->n);
  src = piq_tensor_new_from_data (c->src, c->n, buf, size, &error);
  g_assert_no_error (error);

  if (c->rule == PIQ_SCALE_RULE_MEAN_STD)
    {
      double sum = 0, sum2 = 0;
      for (guint64 i = 0; i < c->n; i++)
        {
          double x = o_read_float (c->src, buf, i);
          sum += x;
          sum2 += x * x;
        }
      o_params_mean_std (c->qdtype, sum, sum2, c->n, &exp_scale, &exp_zp);
    }
  else
    {
      float lo = INFINITY, hi = -INFINITY, a = 0;
      float s;
      for (guint64 i = 0; i < c->n; i++)
        {
          float x = (float) o_read_float (c->src, buf, i);
          lo = MIN (lo, x);
          hi = MAX (hi, x);
          a = MAX (a, fabsf (x));
        }
      if (c->rule == PIQ_SCALE_RULE_MIN_MAX)
        o_params_min_max (c->qdtype, lo, hi, c->include_zero, &s, &exp_zp);
      else
        o_params_abs_max (c->qdtype, a, &s, &exp_zp);
      exp_scale = s;
    }

  /* a zero point property holds a gint64: uint64 zero points of affine
   * formats stop at G_MAXINT64 (a symmetric format's is its own) */
  if (exp_zp > G_MAXINT64 && !piq_format_get_symmetric (format))
    exp_zp = G_MAXINT64;

  if (!compute_all_levels (format, recipe, src, &scale, &zp))
    return;
  if (scale != exp_scale || zp != exp_zp)
    {
      char zs[48], zs2[48];
      g_test_fail_printf ("got scale %.17g zp %s, expected scale %.17g zp %s",
                          scale, o_int_str (zp, zs2), exp_scale, o_int_str (exp_zp, zs));
      return;
    }
  /* the derived parameters are usable: quantize accepts them as a given
   * scale (and zero point); quantize with the same recipe is
   * /compute-params/calibrate/ */
  if (piq_format_get_symmetric (format))
    given = piq_recipe_new_fixed (scale);
  else
    given = piq_recipe_new_affine (scale, piq_recipe_get_zero_point (recipe));
  t = piq_quantizer_quantize_new (quantizers[0], format, given, src, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (piq_tensor_get_scale (t), ==, scale);
  if (!piq_format_get_symmetric (format))
    g_assert_true ((OInt) piq_tensor_get_zero_point (t) == zp);
}

/* ---- constants and single elements: usable parameters ---- */

typedef struct {
  PiqScaleRule rule;
  gboolean     include_zero;
  PiqDtype     qdtype;
  double       value;
  guint64      n;
} ConstCase;

static const double constants[] = { 0.0, 3.75, -2.25, 1e-30, 1e30, 65504.0 };

/* Every rule gives a finite positive scale and a zero point in range. The
 * min/max and abs-max rules keep the constant within half a step:
 * |c − dq(q(c))| <= scale/2 + 8·2^-24·(|c| + scale) (the binary32 rounding
 * of the inverse scale, the product, the integer and the dequantizing
 * product, as derived in test-quantize.c). The mean/σ rule does not promise
 * it (a constant far from 0 clamps its zero point). */
static void
test_constant (gconstpointer data)
{
  const ConstCase *c = data;
  g_autofree double *x = g_new (double, c->n);
  g_autoptr (PiqTensor) src = NULL;
  g_autoptr (PiqFormat) format = format_for_rule (c->rule, c->qdtype);
  g_autoptr (PiqRecipe) recipe = recipe_for_rule (c->rule, c->include_zero);
  g_autoptr (PiqRecipe) given = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) q = NULL;
  g_autoptr (PiqTensor) dq = NULL;
  double scale;
  OInt zp;
  char zs[48];

  for (guint64 i = 0; i < c->n; i++)
    x[i] = c->value;
  src = tensor_from_doubles (PIQ_DTYPE_F32, x, c->n);
  if (!compute_all_levels (format, recipe, src, &scale, &zp))
    return;
  g_test_message ("scale %.9g zero point %s", scale, o_int_str (zp, zs));
  g_assert_true (isfinite (scale));
  g_assert_cmpfloat (scale, >, 0);
  g_assert_true (zp >= o_qmin (c->qdtype) && zp <= o_qmax (c->qdtype));

  /* the result given back as a per-tensor scale (and zero point) */
  given = piq_format_get_symmetric (format) ? piq_recipe_new_fixed (scale)
                                            : piq_recipe_new_affine (scale, (gint64) zp);
  q = piq_quantizer_quantize_new (quantizers[n_quantizers - 1], format, given, src, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (piq_tensor_get_scale (q), ==, scale);
  dq = piq_quantizer_dequantize_new (quantizers[n_quantizers - 1], q, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  if (c->rule != PIQ_SCALE_RULE_MEAN_STD)
    {
      double y = piq_tensor_get_value (dq, c->n - 1);
      double bound = scale / 2 + 8 * 0x1p-24 * (fabs (c->value) + scale);
      g_test_message ("%.9g -> %.9g", c->value, y);
      g_assert_cmpfloat (fabs (y - (float) c->value), <=, bound);
      if (c->value == 0)
        g_assert_cmpfloat (y, ==, 0.0);
    }
}

/* ---- NaN and ±Inf ---- */

typedef struct {
  PiqScaleRule rule;
  PiqDtype     src;
  guint        special;     /* index into o_special_bits: 0 NaN, 3 +Inf, 4 −Inf, 2 sNaN */
  guint64      n;
  guint64      at;
} BadCase;

static void
count_notify (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  (*(guint *) user_data)++;
}

static void
test_non_finite (gconstpointer data)
{
  const BadCase *c = data;
  gsize size = o_dtype_nbytes (c->src, c->n);
  g_autofree guint8 *buf = g_malloc (size);
  g_autoptr (PiqFormat) format = format_for_rule (c->rule, PIQ_DTYPE_INT8);
  g_autoptr (PiqRecipe) recipe = piq_format_get_symmetric (format) ? piq_recipe_new_fixed (0.125)
                                                                   : piq_recipe_new_affine (0.125, 3);
  guint notified = 0;

  for (guint64 i = 0; i < c->n; i++)
    o_write_float (c->src, buf, i, (double) (i % 7) - 3.0);
  o_write_float_bits (c->src, buf, c->at, o_special_bits (c->src, c->special));
  piq_recipe_set_scale_rule (recipe, c->rule);
  g_signal_connect (recipe, "notify", G_CALLBACK (count_notify), &notified);

  for (guint k = 0; k < n_quantizers; k++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqTensor) src = piq_tensor_new_from_data (c->src, c->n, buf, size, &error);
      g_assert_no_error (error);
      g_assert_false (piq_quantizer_compute_params (quantizers[k], format, recipe, src, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE);
      g_clear_error (&error);
      g_assert_false (piq_quantizer_compute_params_raw (quantizers[k], format, recipe, c->src, buf, c->n, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE);
      g_assert_cmpfloat (piq_recipe_get_scale (recipe), ==, 0.125);
      if (piq_format_get_symmetric (format))
        g_assert_false (piq_recipe_has_zero_point (recipe));
      else
        g_assert_cmpint (piq_recipe_get_zero_point (recipe), ==, 3);
    }
  g_assert_cmpuint (notified, ==, 0);
}

static void
test_empty (gconstpointer data)
{
  PiqScaleRule rule = GPOINTER_TO_INT (data);
  static const PiqDtype srcs[] = { PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16, PIQ_DTYPE_F16 };

  for (gsize s = 0; s < G_N_ELEMENTS (srcs); s++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqTensor) src = piq_tensor_new (srcs[s], 0, &error);
      g_autoptr (PiqFormat) format = format_for_rule (rule, PIQ_DTYPE_UINT4);
      g_autoptr (PiqRecipe) recipe = piq_format_get_symmetric (format) ? piq_recipe_new_fixed (0.5)
                                                                       : piq_recipe_new_affine (0.5, 2);
      guint8 dummy[8] = { 0 };

      g_assert_no_error (error);
      piq_recipe_set_scale_rule (recipe, rule);
      g_assert_false (piq_quantizer_compute_params (quantizers[0], format, recipe, src, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY);
      g_clear_error (&error);
      g_assert_false (piq_quantizer_compute_params_raw (quantizers[0], format, recipe, srcs[s], dummy, 0, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY);
      g_assert_cmpfloat (piq_recipe_get_scale (recipe), ==, 0.5);
      if (piq_format_get_symmetric (format))
        g_assert_false (piq_recipe_has_zero_point (recipe));
      else
        g_assert_cmpint (piq_recipe_get_zero_point (recipe), ==, 2);
    }
}

/* ---- thread counts ---- */

#define BIG_N ((G_GUINT64_CONSTANT (1) << 20) + 7)

/* Gaussian data whose sums are not exact: the summation order of
 * numerics.md must make the result independent of the thread count. */
static void
test_threads (gconstpointer data)
{
  PiqScaleRule rule = GPOINTER_TO_INT (data);
  static const guint threads[] = { 1, 2, 3, 4, 0 };
  static const PiqDtype qdtypes[] = { PIQ_DTYPE_UINT8, PIQ_DTYPE_INT4, PIQ_DTYPE_INT16 };
  g_autofree float *x = g_new (float, BIG_N);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL;
  ORng rng;

  o_rng_init (&rng, 42);
  for (guint64 i = 0; i < BIG_N; i++)
    x[i] = (float) (o_rng_normal (&rng) * 3.0 + 0.7);
  src = piq_tensor_new_from_data (PIQ_DTYPE_F32, BIG_N, (const guint8 *) x, BIG_N * sizeof (float), &error);
  g_assert_no_error (error);

  for (gsize d = 0; d < G_N_ELEMENTS (qdtypes); d++)
    {
      g_autoptr (PiqFormat) format = format_for_rule (rule, qdtypes[d]);
      double scale0 = 0;
      OInt zp0 = 0;
      for (gsize t = 0; t < G_N_ELEMENTS (threads); t++)
        for (guint k = 0; k < n_quantizers; k++)
          {
            g_autoptr (PiqRecipe) recipe = recipe_for_rule (rule, TRUE);
            piq_quantizer_set_n_threads (quantizers[k], threads[t]);
            g_assert_true (piq_quantizer_compute_params (quantizers[k], format, recipe, src, &error));
            g_assert_no_error (error);
            if (t == 0 && k == 0)
              {
                char zs[48];
                scale0 = piq_recipe_get_scale (recipe);
                zp0 = effective_zero_point (format, recipe);
                g_test_message ("%s: scale %.17g zp %s", o_dtype_name (qdtypes[d]), scale0, o_int_str (zp0, zs));
              }
            else
              {
                g_test_message ("%s threads %u level %u", o_dtype_name (qdtypes[d]), threads[t], k);
                g_assert_cmpfloat (piq_recipe_get_scale (recipe), ==, scale0);
                g_assert_true (effective_zero_point (format, recipe) == zp0);
              }
            piq_quantizer_set_n_threads (quantizers[k], 0);
          }
    }
}

/* numerics.md fixes the summation order of mean/σ: blocks of 16384 elements,
 * 8 interleaved lanes per block (lane j sums the elements j, j+8, … of the
 * block in index order), the lanes combined pairwise as
 * ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), the block sums added in index order.
 * On data whose sums round, that order decides the last bits. */
static void
test_mean_std_order (void)
{
  guint64 n = 3 * 16384 + 1001;
  g_autofree float *x = g_new (float, n);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL;
  g_autoptr (PiqFormat) format = piq_format_new (PIQ_DTYPE_INT16);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new ();
  double sum = 0, sum2 = 0, exp_scale;
  OInt exp_zp;
  ORng rng;

  o_rng_init (&rng, 7);
  for (guint64 i = 0; i < n; i++)
    x[i] = (float) (o_rng_normal (&rng) * 1e3 + 1e4 * o_rng_uniform (&rng));
  for (guint64 b = 0; b < n; b += 16384)
    {
      double l1[8] = { 0 }, l2[8] = { 0 };
      guint64 end = MIN (n, b + 16384);
      for (guint64 i = b; i < end; i++)
        {
          double v = x[i];
          l1[(i - b) % 8] += v;
          l2[(i - b) % 8] += v * v;
        }
      sum += ((l1[0] + l1[1]) + (l1[2] + l1[3])) + ((l1[4] + l1[5]) + (l1[6] + l1[7]));
      sum2 += ((l2[0] + l2[1]) + (l2[2] + l2[3])) + ((l2[4] + l2[5]) + (l2[6] + l2[7]));
    }
  o_params_mean_std (PIQ_DTYPE_INT16, sum, sum2, n, &exp_scale, &exp_zp);

  src = piq_tensor_new_from_data (PIQ_DTYPE_F32, n, (const guint8 *) x, n * sizeof (float), &error);
  g_assert_no_error (error);
  piq_recipe_set_scale_rule (recipe, PIQ_SCALE_RULE_MEAN_STD);
  g_assert_true (piq_quantizer_compute_params (quantizers[0], format, recipe, src, &error));
  g_assert_no_error (error);
  g_test_message ("expected scale %.17g zp %d, got %.17g %" G_GINT64_FORMAT, exp_scale, (int) exp_zp,
                  piq_recipe_get_scale (recipe), piq_recipe_get_zero_point (recipe));
  g_assert_cmpfloat (piq_recipe_get_scale (recipe), ==, exp_scale);
  g_assert_cmpint (piq_recipe_get_zero_point (recipe), ==, (gint64) exp_zp);
}

/* ---- calibration: compute_params stores, later calls use ---- */

/* compute_params on calibration data stores the scale (and, for affine
 * formats, the zero point) in the recipe; a later quantize of other data
 * with that recipe uses them instead of deriving its own. With rule
 * DEFAULT, and with the explicit rule that derived them (the stored scale
 * is the rule's result, not a scale given next to a rule). */
static void
test_calibrate (gconstpointer data)
{
  PiqScaleRule rule = GPOINTER_TO_INT (data);
  const double calib[4] = { -4, -1, 2, 8 };
  const double other[3] = { -0.5, 0.25, 0.5 };
  g_autoptr (PiqFormat) format = format_for_rule (rule == PIQ_SCALE_RULE_DEFAULT ? PIQ_SCALE_RULE_MIN_MAX : rule,
                                                  PIQ_DTYPE_UINT8);
  g_autoptr (PiqRecipe) recipe = recipe_for_rule (rule, TRUE);
  g_autoptr (PiqTensor) a = tensor_from_doubles (PIQ_DTYPE_F32, calib, 4);
  g_autoptr (PiqTensor) b = tensor_from_doubles (PIQ_DTYPE_F32, other, 3);
  g_autoptr (PiqTensor) t = NULL, own = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_false (piq_recipe_has_scale (recipe));
  g_assert_true (piq_quantizer_compute_params (quantizers[0], format, recipe, a, &error));
  g_assert_no_error (error);
  g_assert_true (piq_recipe_has_scale (recipe));
  g_assert_cmpint (piq_recipe_has_zero_point (recipe), ==, !piq_format_get_symmetric (format));
  t = piq_quantizer_quantize_new (quantizers[0], format, recipe, b, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (piq_tensor_get_scale (t), ==, piq_recipe_get_scale (recipe));
  if (!piq_format_get_symmetric (format))
    g_assert_cmpint (piq_tensor_get_zero_point (t), ==, piq_recipe_get_zero_point (recipe));
  /* without the stored scale, b's own range gives another one */
  piq_recipe_clear_scale (recipe);
  own = piq_quantizer_quantize_new (quantizers[0], format, recipe, b, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (piq_tensor_get_scale (own), !=, piq_tensor_get_scale (t));
}

/* compute_params is for per-tensor formats only */
static void
test_per_block_unsupported (void)
{
  const double x[4] = { 1, 2, 3, 4 };
  g_autoptr (PiqTensor) src = tensor_from_doubles (PIQ_DTYPE_F32, x, 4);
  g_autoptr (PiqFormat) block = piq_format_new_per_block (PIQ_DTYPE_INT8, 2, PIQ_DTYPE_F32);
  g_autoptr (PiqFormat) channel = piq_format_new_per_channel (PIQ_DTYPE_INT8, 0);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new ();
  g_autoptr (GError) error = NULL;

  g_assert_false (piq_quantizer_compute_params (quantizers[0], block, recipe, src, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_false (piq_quantizer_compute_params (quantizers[0], channel, recipe, src, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_assert_false (piq_recipe_has_scale (recipe));
}

/* ---- registration ---- */

int
main (int argc, char **argv)
{
  static const PiqScaleRule rules[] = { PIQ_SCALE_RULE_MIN_MAX, PIQ_SCALE_RULE_ABS_MAX, PIQ_SCALE_RULE_MEAN_STD };
  static const guint64 lens[] = { 1, 33, 16389, (G_GUINT64_CONSTANT (1) << 20) + 3 };
  static const guint specials[] = { 0, 2, 3, 4 };
  static const char *special_names[] = { "nan", "snan", "inf", "-inf" };
  int ret;

  g_test_init (&argc, &argv, NULL);
  all_cases = g_ptr_array_new_with_free_func (g_free);
  setup_quantizers ();

  for (gsize i = 0; i < G_N_ELEMENTS (hands); i++)
    {
      g_autofree char *path = g_strdup_printf ("/compute-params/hand/%s", hands[i].name);
      g_test_add_data_func (path, &hands[i], test_hand);
    }

  for (gsize r = 0; r < G_N_ELEMENTS (rules); r++)
    for (int iz = 1; iz >= 0; iz--)
      for (gsize s = 0; s < G_N_ELEMENTS (o_float_dtypes); s++)
        for (gsize q = 0; q < G_N_ELEMENTS (o_int_dtypes); q++)
          for (DataKind kind = DATA_MIXED; kind <= DATA_NEGATIVE; kind++)
            for (gsize l = 0; l < G_N_ELEMENTS (lens); l++)
              {
                Case *c;
                g_autofree char *path = NULL;

                /* include-zero only matters to min/max */
                if (rules[r] != PIQ_SCALE_RULE_MIN_MAX && !iz)
                  continue;
                /* the 1M length: mixed data, one integer dtype per rule and source */
                if (lens[l] > 16389 && (kind != DATA_MIXED || !iz || q != (s * 3 + r) % G_N_ELEMENTS (o_int_dtypes)))
                  continue;
                c = g_new0 (Case, 1);
                c->rule = rules[r];
                c->include_zero = iz;
                c->src = o_float_dtypes[s];
                c->qdtype = o_int_dtypes[q];
                c->kind = kind;
                c->n = lens[l];
                g_ptr_array_add (all_cases, c);
                if (rules[r] == PIQ_SCALE_RULE_MIN_MAX)
                  path = g_strdup_printf ("/compute-params/%s/%s/%s/%s/%s/len-%" G_GUINT64_FORMAT, rule_name (c->rule),
                                          iz ? "include-zero" : "no-include-zero", o_dtype_name (c->src),
                                          o_dtype_name (c->qdtype), data_kind_names[kind], c->n);
                else
                  path = g_strdup_printf ("/compute-params/%s/%s/%s/%s/len-%" G_GUINT64_FORMAT, rule_name (c->rule),
                                          o_dtype_name (c->src), o_dtype_name (c->qdtype), data_kind_names[kind], c->n);
                g_test_add_data_func (path, c, test_formula);
              }

  for (gsize r = 0; r < G_N_ELEMENTS (rules); r++)
    for (int iz = 1; iz >= 0; iz--)
      for (gsize q = 0; q < G_N_ELEMENTS (o_int_dtypes); q++)
        for (gsize v = 0; v < G_N_ELEMENTS (constants); v++)
          for (guint64 n = 1; n <= 1000; n *= 1000)
            {
              ConstCase *c;
              g_autofree char *path = NULL;

              if (rules[r] != PIQ_SCALE_RULE_MIN_MAX && !iz)
                continue;
              c = g_new0 (ConstCase, 1);
              c->rule = rules[r];
              c->include_zero = iz;
              c->qdtype = o_int_dtypes[q];
              c->value = constants[v];
              c->n = n;
              g_ptr_array_add (all_cases, c);
              path = g_strdup_printf ("/compute-params/%s/%s/%s/%s-%g", rule_name (c->rule),
                                      iz ? "include-zero" : "no-include-zero", o_dtype_name (c->qdtype),
                                      n == 1 ? "single" : "constant", c->value);
              g_test_add_data_func (path, c, test_constant);
            }

  for (gsize r = 0; r < G_N_ELEMENTS (rules); r++)
    for (gsize s = 0; s < G_N_ELEMENTS (o_float_dtypes); s++)
      for (gsize k = 0; k < G_N_ELEMENTS (specials); k++)
        for (guint64 n = 5; n <= 500000; n *= 100000)
          {
            BadCase *c = g_new0 (BadCase, 1);
            g_autofree char *path = NULL;

            c->rule = rules[r];
            c->src = o_float_dtypes[s];
            c->special = specials[k];
            c->n = n;
            c->at = n == 5 ? 2 : n - 1;
            g_ptr_array_add (all_cases, c);
            path = g_strdup_printf ("/compute-params/%s/%s/%s/len-%" G_GUINT64_FORMAT "/at-%" G_GUINT64_FORMAT,
                                    rule_name (c->rule), o_dtype_name (c->src), special_names[k], c->n, c->at);
            g_test_add_data_func (path, c, test_non_finite);
          }

  for (gsize r = 0; r < G_N_ELEMENTS (rules); r++)
    {
      g_autofree char *p1 = g_strdup_printf ("/compute-params/%s/empty", rule_name (rules[r]));
      g_autofree char *p2 = g_strdup_printf ("/compute-params/%s/threads/len-%" G_GUINT64_FORMAT,
                                             rule_name (rules[r]), BIG_N);
      g_test_add_data_func (p1, GINT_TO_POINTER (rules[r]), test_empty);
      g_test_add_data_func (p2, GINT_TO_POINTER (rules[r]), test_threads);
    }
  g_test_add_func ("/compute-params/mean-std/summation-order", test_mean_std_order);
  g_test_add_data_func ("/compute-params/calibrate/default", GINT_TO_POINTER (PIQ_SCALE_RULE_DEFAULT), test_calibrate);
  for (gsize r = 0; r < G_N_ELEMENTS (rules); r++)
    {
      g_autofree char *path = g_strdup_printf ("/compute-params/calibrate/%s", rule_name (rules[r]));
      g_test_add_data_func (path, GINT_TO_POINTER (rules[r]), test_calibrate);
    }
  g_test_add_func ("/compute-params/per-block-unsupported", test_per_block_unsupported);

  ret = g_test_run ();
  g_ptr_array_unref (all_cases);
  for (guint k = 0; k < n_quantizers; k++)
    g_object_unref (quantizers[k]);
  return ret;
}

/* test-recipe.c: PiqRecipe: constructors, properties, notification, copy,
 * the given scale and zero point, and a quantized tensor's independence
 * from the recipe that made it
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

static const char *all_props[] = {
  "scale-rule", "include-zero", "round-mode", "seed", "scale", "zero-point",
  "has-scale", "has-zero-point",
};
#define N_WRITABLE_PROPS 6      /* the has- properties are read-only */

/* A property's current value compared with its param spec's default. */
static void
test_defaults (void)
{
  g_autoptr (PiqRecipe) r = g_object_new (PIQ_TYPE_RECIPE, NULL);
  g_autoptr (PiqRecipe) n = piq_recipe_new ();

  for (gsize i = 0; i < G_N_ELEMENTS (all_props); i++)
    {
      GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (r), all_props[i]);
      g_auto (GValue) value = G_VALUE_INIT;

      g_assert_nonnull (pspec);
      g_value_init (&value, pspec->value_type);
      g_object_get_property (G_OBJECT (r), all_props[i], &value);
      g_test_message ("%s", all_props[i]);
      g_assert_cmpint (g_param_values_cmp (pspec, &value, g_param_spec_get_default_value (pspec)), ==, 0);
    }
  /* the documented defaults */
  for (PiqRecipe *p = r; p != NULL; p = p == r ? n : NULL)
    {
      g_assert_cmpuint (piq_recipe_get_seed (p), ==, 0);                            /* fresh per call */
      g_assert_cmpint (piq_recipe_get_scale_rule (p), ==, PIQ_SCALE_RULE_DEFAULT);  /* the format's */
      g_assert_true (piq_recipe_get_include_zero (p));                              /* as torch */
      g_assert_cmpint (piq_recipe_get_round_mode (p), ==, PIQ_ROUND_NEAREST);
      g_assert_false (piq_recipe_has_scale (p));
      g_assert_false (piq_recipe_has_zero_point (p));
    }
}

/* Each property is read-write, explicitly notified, and registered once. */
static void
test_pspecs (void)
{
  GObjectClass *klass = g_type_class_ref (PIQ_TYPE_RECIPE);
  guint n = 0;
  g_autofree GParamSpec **pspecs = g_object_class_list_properties (klass, &n);

  g_assert_cmpuint (n, ==, G_N_ELEMENTS (all_props));
  for (guint i = 0; i < n; i++)
    {
      gboolean has = g_str_has_prefix (pspecs[i]->name, "has-");
      gboolean known = FALSE;
      for (gsize k = 0; k < G_N_ELEMENTS (all_props); k++)
        known |= g_str_equal (all_props[k], pspecs[i]->name) && (k < N_WRITABLE_PROPS) == !has;
      g_test_message ("%s", pspecs[i]->name);
      g_assert_true (known);
      g_assert_true (pspecs[i]->flags & G_PARAM_READABLE);
      g_assert_cmpint (!!(pspecs[i]->flags & G_PARAM_WRITABLE), ==, !has);
      if (!has)
        g_assert_true (pspecs[i]->flags & G_PARAM_EXPLICIT_NOTIFY);
      g_assert_false (pspecs[i]->flags & G_PARAM_CONSTRUCT_ONLY);
    }
  g_type_class_unref (klass);
}

static void
test_new (void)
{
  static const gint64 zps[] = { -1, 0, 7, G_MININT64, G_MAXINT64 };

  for (gsize i = 0; i < G_N_ELEMENTS (zps); i++)
    {
      g_autoptr (PiqRecipe) f = piq_recipe_new_fixed (0.375);
      g_autoptr (PiqRecipe) a = piq_recipe_new_affine (0.375, zps[i]);

      g_assert_true (piq_recipe_has_scale (f));
      g_assert_cmpfloat (piq_recipe_get_scale (f), ==, 0.375);
      g_assert_false (piq_recipe_has_zero_point (f));
      g_assert_cmpuint (piq_recipe_get_seed (f), ==, 0);
      g_assert_cmpint (piq_recipe_get_scale_rule (f), ==, PIQ_SCALE_RULE_DEFAULT);

      g_assert_true (piq_recipe_has_scale (a));
      g_assert_cmpfloat (piq_recipe_get_scale (a), ==, 0.375);
      g_assert_true (piq_recipe_has_zero_point (a));
      g_assert_cmpint (piq_recipe_get_zero_point (a), ==, zps[i]);
      g_assert_cmpuint (piq_recipe_get_seed (a), ==, 0);
      g_assert_cmpint (piq_recipe_get_scale_rule (a), ==, PIQ_SCALE_RULE_DEFAULT);
    }
}

static void
test_construct_properties (void)
{
  g_autoptr (PiqRecipe) p = g_object_new (PIQ_TYPE_RECIPE,
                                          "scale", 0.0625,
                                          "zero-point", G_GINT64_CONSTANT (-3),
                                          "round-mode", PIQ_ROUND_STOCHASTIC,
                                          "seed", G_GUINT64_CONSTANT (0xFFFFFFFFFFFFFFFF),
                                          "scale-rule", PIQ_SCALE_RULE_MEAN_STD,
                                          "include-zero", FALSE,
                                          NULL);
  double scale;
  gint64 zp;
  PiqRoundMode mode;
  guint64 seed;
  PiqScaleRule rule;
  gboolean iz;

  g_assert_true (piq_recipe_has_scale (p));
  g_assert_true (piq_recipe_has_zero_point (p));
  g_assert_cmpfloat (piq_recipe_get_scale (p), ==, 0.0625);
  g_assert_cmpint (piq_recipe_get_zero_point (p), ==, -3);
  g_assert_cmpint (piq_recipe_get_round_mode (p), ==, PIQ_ROUND_STOCHASTIC);
  g_assert_cmpuint (piq_recipe_get_seed (p), ==, G_MAXUINT64);
  g_assert_cmpint (piq_recipe_get_scale_rule (p), ==, PIQ_SCALE_RULE_MEAN_STD);
  g_assert_false (piq_recipe_get_include_zero (p));

  g_object_get (p, "scale", &scale, "zero-point", &zp, "round-mode", &mode,
                "seed", &seed, "scale-rule", &rule, "include-zero", &iz, NULL);
  g_assert_cmpfloat (scale, ==, 0.0625);
  g_assert_cmpint (zp, ==, -3);
  g_assert_cmpint (mode, ==, PIQ_ROUND_STOCHASTIC);
  g_assert_cmpuint (seed, ==, G_MAXUINT64);
  g_assert_cmpint (rule, ==, PIQ_SCALE_RULE_MEAN_STD);
  g_assert_false (iz);
}

/* ---- notification: once per change, never for the same value ---- */

typedef struct {
  const char *name;
  void      (*set_a) (PiqRecipe *p);
  void      (*set_b) (PiqRecipe *p);
  void      (*gset_a) (PiqRecipe *p);   /* through g_object_set */
} PropCase;

static void set_scale_a (PiqRecipe *p) { piq_recipe_set_scale (p, 0.1); }
static void set_scale_b (PiqRecipe *p) { piq_recipe_set_scale (p, 0.2); }
static void gset_scale_a (PiqRecipe *p) { g_object_set (p, "scale", 0.1, NULL); }
static void set_zp_a (PiqRecipe *p) { piq_recipe_set_zero_point (p, G_MININT64); }
static void set_zp_b (PiqRecipe *p) { piq_recipe_set_zero_point (p, 17); }
static void gset_zp_a (PiqRecipe *p) { g_object_set (p, "zero-point", G_MININT64, NULL); }
static void set_mode_a (PiqRecipe *p) { piq_recipe_set_round_mode (p, PIQ_ROUND_STOCHASTIC); }
static void set_mode_b (PiqRecipe *p) { piq_recipe_set_round_mode (p, PIQ_ROUND_NEAREST); }
static void gset_mode_a (PiqRecipe *p) { g_object_set (p, "round-mode", PIQ_ROUND_STOCHASTIC, NULL); }
static void set_seed_a (PiqRecipe *p) { piq_recipe_set_seed (p, G_GUINT64_CONSTANT (1) << 63); }
static void set_seed_b (PiqRecipe *p) { piq_recipe_set_seed (p, 5); }
static void gset_seed_a (PiqRecipe *p) { g_object_set (p, "seed", G_GUINT64_CONSTANT (1) << 63, NULL); }
static void set_rule_a (PiqRecipe *p) { piq_recipe_set_scale_rule (p, PIQ_SCALE_RULE_ABS_MAX); }
static void set_rule_b (PiqRecipe *p) { piq_recipe_set_scale_rule (p, PIQ_SCALE_RULE_MEAN_STD); }
static void gset_rule_a (PiqRecipe *p) { g_object_set (p, "scale-rule", PIQ_SCALE_RULE_ABS_MAX, NULL); }
static void set_iz_a (PiqRecipe *p) { piq_recipe_set_include_zero (p, FALSE); }
static void set_iz_b (PiqRecipe *p) { piq_recipe_set_include_zero (p, TRUE); }
static void gset_iz_a (PiqRecipe *p) { g_object_set (p, "include-zero", FALSE, NULL); }

static const PropCase prop_cases[] = {
  { "scale", set_scale_a, set_scale_b, gset_scale_a },
  { "zero-point", set_zp_a, set_zp_b, gset_zp_a },
  { "round-mode", set_mode_a, set_mode_b, gset_mode_a },
  { "seed", set_seed_a, set_seed_b, gset_seed_a },
  { "scale-rule", set_rule_a, set_rule_b, gset_rule_a },
  { "include-zero", set_iz_a, set_iz_b, gset_iz_a },
};

static void
count_notify (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  (*(guint *) user_data)++;
}

/* every notification but has-scale / has-zero-point, which follow scale
 * and zero-point (counted apart) */
static void
count_other_notify (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  guint *counts = user_data;
  counts[g_str_has_prefix (pspec->name, "has-") ? 1 : 0]++;
}

static void
test_notify (gconstpointer data)
{
  const PropCase *c = data;
  g_autoptr (PiqRecipe) p = piq_recipe_new ();
  g_autofree char *signal = g_strdup_printf ("notify::%s", c->name);
  guint this_prop = 0, counts[2] = { 0, 0 };
  guint *any = &counts[0];

  g_signal_connect (p, signal, G_CALLBACK (count_notify), &this_prop);
  g_signal_connect (p, "notify", G_CALLBACK (count_other_notify), counts);

  c->set_a (p);
  g_assert_cmpuint (this_prop, ==, 1);
  c->set_a (p);                       /* same value: no notification */
  g_assert_cmpuint (this_prop, ==, 1);
  c->gset_a (p);                      /* same value through g_object_set */
  g_assert_cmpuint (this_prop, ==, 1);
  c->set_b (p);
  g_assert_cmpuint (this_prop, ==, 2);
  c->gset_a (p);                      /* a change through g_object_set */
  g_assert_cmpuint (this_prop, ==, 3);
  c->set_b (p);
  c->set_b (p);
  g_assert_cmpuint (this_prop, ==, 4);
  /* no other property was notified; has-scale (has-zero-point) once, when
   * the scale (zero point) was first given */
  g_assert_cmpuint (*any, ==, this_prop);
  g_assert_cmpuint (counts[1], ==, g_str_equal (c->name, "scale") || g_str_equal (c->name, "zero-point") ? 1 : 0);
}

/* A recipe stores any scale it is given, by either route and without a
 * GParamSpec warning (the test makes warnings fatal); the next call that
 * uses it rejects a bad one (test-errors.c). */
static void
test_scale_any_value (void)
{
  g_autoptr (PiqRecipe) p = piq_recipe_new ();
  guint n = 0;
  double got = 0;

  g_signal_connect (p, "notify::scale", G_CALLBACK (count_notify), &n);
  piq_recipe_set_scale (p, NAN);
  g_assert_true (piq_recipe_has_scale (p));
  g_assert_true (isnan (piq_recipe_get_scale (p)));
  g_assert_cmpuint (n, ==, 1);
  piq_recipe_set_scale (p, -INFINITY);
  g_assert_cmpfloat (piq_recipe_get_scale (p), ==, -INFINITY);
  piq_recipe_set_scale (p, -0.0);
  g_assert_true (signbit (piq_recipe_get_scale (p)));
  g_object_set (p, "scale", INFINITY, NULL);
  g_assert_cmpfloat (piq_recipe_get_scale (p), ==, INFINITY);
  g_object_set (p, "scale", (double) NAN, NULL);
  g_object_get (p, "scale", &got, NULL);
  g_assert_true (isnan (got));
  g_object_set (p, "scale", -1.0, NULL);
  g_assert_cmpfloat (piq_recipe_get_scale (p), ==, -1.0);
  g_object_set (p, "scale", 0.0, NULL);
  g_assert_cmpfloat (piq_recipe_get_scale (p), ==, 0.0);
  g_assert_true (piq_recipe_has_scale (p));
}

/* A scale set through the property is a given scale, like the setter's. */
static void
test_scale_property_sets_has_scale (void)
{
  g_autoptr (PiqRecipe) p = piq_recipe_new ();
  g_autoptr (PiqRecipe) z = piq_recipe_new ();

  g_object_set (p, "scale", 0.5, NULL);
  g_assert_true (piq_recipe_has_scale (p));
  g_assert_cmpfloat (piq_recipe_get_scale (p), ==, 0.5);
  g_assert_false (piq_recipe_has_zero_point (p));
  g_object_set (z, "zero-point", G_GINT64_CONSTANT (4), NULL);
  g_assert_true (piq_recipe_has_zero_point (z));
  g_assert_cmpint (piq_recipe_get_zero_point (z), ==, 4);
}

static void
test_clear_scale (void)
{
  g_autoptr (PiqRecipe) a = piq_recipe_new_affine (0.25, -7);
  g_autoptr (PiqRecipe) f = piq_recipe_new_fixed (2.0);

  piq_recipe_clear_scale (a);
  g_assert_false (piq_recipe_has_scale (a));
  g_assert_false (piq_recipe_has_zero_point (a));
  piq_recipe_clear_scale (f);
  g_assert_false (piq_recipe_has_scale (f));
  g_assert_false (piq_recipe_has_zero_point (f));
  /* and it can be given again */
  piq_recipe_set_scale (f, 3.0);
  g_assert_true (piq_recipe_has_scale (f));
  g_assert_cmpfloat (piq_recipe_get_scale (f), ==, 3.0);
}

static void
test_copy (void)
{
  g_autoptr (PiqRecipe) p = g_object_new (PIQ_TYPE_RECIPE, "scale", 1e-18,
                                          "zero-point", G_MAXINT64, "round-mode", PIQ_ROUND_STOCHASTIC,
                                          "seed", G_GUINT64_CONSTANT (42), "scale-rule", PIQ_SCALE_RULE_ABS_MAX,
                                          "include-zero", FALSE, NULL);
  g_autoptr (PiqRecipe) c = piq_recipe_copy (p);
  g_autoptr (PiqRecipe) e = piq_recipe_new ();
  g_autoptr (PiqRecipe) ec = piq_recipe_copy (e);

  g_assert_true (c != p);
  g_assert_true (piq_recipe_has_scale (c));
  g_assert_true (piq_recipe_has_zero_point (c));
  g_assert_cmpfloat (piq_recipe_get_scale (c), ==, 1e-18);
  g_assert_cmpint (piq_recipe_get_zero_point (c), ==, G_MAXINT64);
  g_assert_cmpint (piq_recipe_get_round_mode (c), ==, PIQ_ROUND_STOCHASTIC);
  g_assert_cmpuint (piq_recipe_get_seed (c), ==, 42);
  g_assert_cmpint (piq_recipe_get_scale_rule (c), ==, PIQ_SCALE_RULE_ABS_MAX);
  g_assert_false (piq_recipe_get_include_zero (c));
  /* an unset scale stays unset */
  g_assert_false (piq_recipe_has_scale (ec));
  g_assert_false (piq_recipe_has_zero_point (ec));

  /* independent objects */
  piq_recipe_set_scale (c, 2.0);
  piq_recipe_set_seed (p, 7);
  g_assert_cmpfloat (piq_recipe_get_scale (p), ==, 1e-18);
  g_assert_cmpuint (piq_recipe_get_seed (c), ==, 42);
}

/* The recipe part of the old params validation: per integer dtype, a zero
 * point at either end of the range is accepted, one beyond is
 * PIQ_ERROR_INVALID_ZERO_POINT, a zero or NaN scale PIQ_ERROR_INVALID_SCALE,
 * at the first call that uses the recipe with an affine format. */
static void
test_validate (void)
{
  const float x[4] = { -1, 0, 0.5f, 2 };
  g_autoptr (PiqTensor) src = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, (const guint8 *) x, sizeof x, NULL);
  PiqQuantizer *q = piq_quantizer_get_default ();

  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      PiqDtype d = o_int_dtypes[i];
      OInt lo = o_qmin (d), hi = MIN (o_qmax (d), (OInt) G_MAXINT64);
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqFormat) f = piq_format_new (d);
      g_autoptr (PiqRecipe) a = piq_recipe_new_affine (0.5, (gint64) lo);
      g_autoptr (PiqRecipe) b = piq_recipe_new_affine (0.5, (gint64) hi);
      g_autoptr (PiqTensor) ta = NULL, tb = NULL;

      g_test_message ("%s", o_dtype_name (d));
      ta = piq_quantizer_quantize_new (q, f, a, src, &error);
      g_assert_no_error (error);
      g_assert_cmpint (piq_tensor_get_zero_point (ta), ==, (gint64) lo);
      tb = piq_quantizer_quantize_new (q, f, b, src, &error);
      g_assert_no_error (error);
      g_assert_cmpint (piq_tensor_get_zero_point (tb), ==, (gint64) hi);
      if (lo > G_MININT64)
        {
          g_autoptr (PiqRecipe) c = piq_recipe_new_affine (0.5, (gint64) (lo - 1));
          g_assert_null (piq_quantizer_quantize_new (q, f, c, src, &error));
          g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
          g_clear_error (&error);
        }
      if (o_qmax (d) < G_MAXINT64)
        {
          g_autoptr (PiqRecipe) c = piq_recipe_new_affine (0.5, (gint64) (hi + 1));
          g_assert_null (piq_quantizer_quantize_new (q, f, c, src, &error));
          g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
          g_clear_error (&error);
        }
      {
        g_autoptr (PiqRecipe) c = piq_recipe_new_affine (0.0, 0);
        g_assert_null (piq_quantizer_quantize_new (q, f, c, src, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
        g_clear_error (&error);
        piq_recipe_set_scale (c, NAN);
        g_assert_null (piq_quantizer_quantize_new (q, f, c, src, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
      }
    }
}

/* ---- a quantized tensor does not depend on its recipe ---- */

typedef struct {
  const char *name;
  PiqFormat *(*format) (void);
  PiqRecipe *(*recipe) (void);
} IndepCase;

static PiqFormat *fmt_uint8 (void) { return piq_format_new (PIQ_DTYPE_UINT8); }
static PiqFormat *fmt_int4_sym (void) { return piq_format_new_symmetric (PIQ_DTYPE_INT4); }
static PiqFormat *fmt_fp8 (void) { return piq_format_new_preset ("fp8_e4m3", NULL); }
static PiqFormat *fmt_int8_block (void) { return piq_format_new_preset ("int8_block", NULL); }
static PiqRecipe *rec_affine (void) { return piq_recipe_new_affine (0.03125, 100); }
static PiqRecipe *rec_fixed (void) { return piq_recipe_new_fixed (0.25); }
static PiqRecipe *rec_derive (void) { return piq_recipe_new (); }
static PiqRecipe *
rec_stochastic (void)
{
  PiqRecipe *r = piq_recipe_new ();
  piq_recipe_set_round_mode (r, PIQ_ROUND_STOCHASTIC);
  piq_recipe_set_seed (r, 42);
  return r;
}

static const IndepCase indep_cases[] = {
  { "uint8/affine", fmt_uint8, rec_affine },
  { "uint8/derived", fmt_uint8, rec_derive },
  { "uint8/stochastic", fmt_uint8, rec_stochastic },
  { "int4-symmetric/fixed", fmt_int4_sym, rec_fixed },
  { "int4-symmetric/stochastic", fmt_int4_sym, rec_stochastic },
  { "fp8_e4m3/fixed", fmt_fp8, rec_fixed },
  { "fp8_e4m3/derived", fmt_fp8, rec_derive },
  { "int8_block/stochastic", fmt_int8_block, rec_stochastic },
};

/* Mutating every property of the recipe (and clearing its scale) after
 * quantize leaves the quantized tensor's scale, zero point, seed, scales
 * and dequantized bytes as they were; quantize itself leaves the recipe
 * alone. */
static void
test_independent (gconstpointer data)
{
  const IndepCase *c = data;
  const gsize n = 301;
  g_autofree float *x = g_new (float, n);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) f = c->format ();
  g_autoptr (PiqRecipe) r = c->recipe ();
  g_autoptr (PiqTensor) src = NULL, t = NULL, y0 = NULL, y1 = NULL, t2 = NULL;
  g_autoptr (GBytes) codes0 = NULL, scales0 = NULL, codes1 = NULL, scales1 = NULL;
  PiqQuantizer *q = piq_quantizer_get_default ();
  gboolean had_scale = piq_recipe_has_scale (r);
  double scale0;
  gint64 zp0;
  guint64 seed0;
  guint notified = 0;
  ORng rng;

  o_rng_init (&rng, 3);
  for (gsize i = 0; i < n; i++)
    x[i] = (float) (o_rng_normal (&rng) * 1.5 + 0.5);
  src = piq_tensor_new_from_data (PIQ_DTYPE_F32, n, (const guint8 *) x, n * sizeof (float), &error);
  g_assert_no_error (error);

  g_signal_connect (r, "notify", G_CALLBACK (count_notify), &notified);
  t = piq_tensor_new_quantized (f, (const guint64[]) { n }, 1, &error);
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_quantize (q, r, src, t, &error));
  g_assert_no_error (error);
  /* quantize reads the recipe; it never writes it */
  g_assert_cmpuint (notified, ==, 0);
  g_assert_cmpint (piq_recipe_has_scale (r), ==, had_scale);

  scale0 = piq_tensor_get_scale (t);
  zp0 = piq_tensor_get_zero_point (t);
  seed0 = piq_tensor_get_seed (t);
  codes0 = piq_tensor_get_bytes (t);
  scales0 = piq_tensor_get_scales (t);
  y0 = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  if (piq_recipe_get_round_mode (r) == PIQ_ROUND_STOCHASTIC)
    g_assert_cmpuint (seed0, ==, 42);
  if (had_scale && piq_format_get_granularity (f) == PIQ_GRANULARITY_TENSOR)
    g_assert_cmpfloat (scale0, ==, piq_recipe_get_scale (r));

  /* every property, then the scale cleared */
  piq_recipe_set_scale (r, 7.0);
  piq_recipe_set_zero_point (r, 3);
  piq_recipe_set_round_mode (r, PIQ_ROUND_STOCHASTIC);
  piq_recipe_set_seed (r, 12345);
  piq_recipe_set_scale_rule (r, PIQ_SCALE_RULE_MEAN_STD);
  piq_recipe_set_include_zero (r, FALSE);
  g_object_set (r, "scale", 1e-3, "zero-point", G_GINT64_CONSTANT (-5), NULL);
  piq_recipe_clear_scale (r);

  g_assert_cmpfloat (piq_tensor_get_scale (t), ==, scale0);
  g_assert_cmpint (piq_tensor_get_zero_point (t), ==, zp0);
  g_assert_cmpuint (piq_tensor_get_seed (t), ==, seed0);
  g_assert_true (piq_format_equal (piq_tensor_get_format (t), f));
  codes1 = piq_tensor_get_bytes (t);
  scales1 = piq_tensor_get_scales (t);
  g_assert_true (g_bytes_equal (codes0, codes1));
  g_assert_true ((scales0 == NULL) == (scales1 == NULL));
  if (scales0 != NULL)
    g_assert_true (g_bytes_equal (scales0, scales1));
  y1 = piq_quantizer_dequantize_new (q, t, PIQ_DTYPE_F32, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (piq_tensor_get_data (y0, NULL), n * 4, piq_tensor_get_data (y1, NULL), n * 4);

  /* the recorded seed reproduces a stochastic result */
  if (c->recipe == rec_stochastic)
    {
      g_autoptr (PiqRecipe) again = c->recipe ();
      g_autoptr (GBytes) codes2 = NULL;
      t2 = piq_quantizer_quantize_new (q, f, again, src, &error);
      g_assert_no_error (error);
      codes2 = piq_tensor_get_bytes (t2);
      g_assert_true (g_bytes_equal (codes0, codes2));
    }
}

/* Seed 0 with stochastic rounding draws a fresh seed per call, and the
 * quantized tensor records it: quantizing again with that seed gives the
 * same bytes. */
static void
test_fresh_seed (void)
{
  const gsize n = 1000;
  g_autofree float *x = g_new (float, n);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) f = piq_format_new (PIQ_DTYPE_UINT4);
  g_autoptr (PiqRecipe) r = piq_recipe_new ();
  g_autoptr (PiqRecipe) again = piq_recipe_new ();
  g_autoptr (PiqTensor) src = NULL, t = NULL, t2 = NULL;
  g_autoptr (GBytes) b = NULL, b2 = NULL;
  PiqQuantizer *q = piq_quantizer_get_default ();

  for (gsize i = 0; i < n; i++)
    x[i] = (float) i * 0.0137f - 3.0f;
  src = piq_tensor_new_from_data (PIQ_DTYPE_F32, n, (const guint8 *) x, n * sizeof (float), &error);
  piq_recipe_set_round_mode (r, PIQ_ROUND_STOCHASTIC);
  t = piq_quantizer_quantize_new (q, f, r, src, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (piq_recipe_get_seed (r), ==, 0);       /* the recipe keeps asking for fresh seeds */
  g_assert_cmpuint (piq_tensor_get_seed (t), !=, 0);
  piq_recipe_set_round_mode (again, PIQ_ROUND_STOCHASTIC);
  piq_recipe_set_seed (again, piq_tensor_get_seed (t));
  t2 = piq_quantizer_quantize_new (q, f, again, src, &error);
  g_assert_no_error (error);
  b = piq_tensor_get_bytes (t);
  b2 = piq_tensor_get_bytes (t2);
  g_assert_true (g_bytes_equal (b, b2));
  g_assert_cmpuint (piq_tensor_get_seed (t2), ==, piq_tensor_get_seed (t));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/recipe/defaults", test_defaults);
  g_test_add_func ("/recipe/pspecs", test_pspecs);
  g_test_add_func ("/recipe/new", test_new);
  g_test_add_func ("/recipe/construct-properties", test_construct_properties);
  for (gsize i = 0; i < G_N_ELEMENTS (prop_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/recipe/notify/%s", prop_cases[i].name);
      g_test_add_data_func (path, &prop_cases[i], test_notify);
    }
  g_test_add_func ("/recipe/scale/any-value", test_scale_any_value);
  g_test_add_func ("/recipe/scale/property-gives-scale", test_scale_property_sets_has_scale);
  g_test_add_func ("/recipe/scale/clear", test_clear_scale);
  g_test_add_func ("/recipe/copy", test_copy);
  g_test_add_func ("/recipe/validate", test_validate);
  for (gsize i = 0; i < G_N_ELEMENTS (indep_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/recipe/immutability/%s", indep_cases[i].name);
      g_test_add_data_func (path, &indep_cases[i], test_independent);
    }
  g_test_add_func ("/recipe/seed/fresh-recorded", test_fresh_seed);

  return g_test_run ();
}

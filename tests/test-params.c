/* test-params.c: PiqParams: constructors, properties, notification, copy,
 * validation
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

static const char *all_props[] = {
  "dtype", "scale", "zero-point", "round-mode", "seed", "scale-rule", "include-zero",
  "granularity", "block-size", "scale-dtype", "saturate", "high-nibble-first", "double-quant",
};

/* A property's current value compared with its param spec's default. */
static void
test_defaults (void)
{
  g_autoptr (PiqParams) p = g_object_new (PIQ_TYPE_PARAMS, NULL);

  for (gsize i = 0; i < G_N_ELEMENTS (all_props); i++)
    {
      GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (p), all_props[i]);
      g_auto (GValue) value = G_VALUE_INIT;

      g_assert_nonnull (pspec);
      g_value_init (&value, pspec->value_type);
      g_object_get_property (G_OBJECT (p), all_props[i], &value);
      g_test_message ("%s", all_props[i]);
      g_assert_cmpint (g_param_values_cmp (pspec, &value, g_param_spec_get_default_value (pspec)), ==, 0);
    }
  /* the documented defaults */
  g_assert_cmpuint (piq_params_get_seed (p), ==, 0);                          /* unset */
  g_assert_cmpint (piq_params_get_scale_rule (p), ==, PIQ_SCALE_RULE_MIN_MAX);  /* affine */
  g_assert_true (piq_params_get_include_zero (p));                            /* as torch */
  g_assert_true (piq_dtype_is_quantized (piq_params_get_dtype (p)));
  g_assert_cmpint (piq_params_get_round_mode (p), ==, PIQ_ROUND_NEAREST);
}

/* Each property is read-write, explicitly notified, and registered once. */
static void
test_pspecs (void)
{
  GObjectClass *klass = g_type_class_ref (PIQ_TYPE_PARAMS);
  guint n = 0;
  g_autofree GParamSpec **pspecs = g_object_class_list_properties (klass, &n);

  g_assert_cmpuint (n, ==, G_N_ELEMENTS (all_props));
  for (guint i = 0; i < n; i++)
    {
      g_test_message ("%s", pspecs[i]->name);
      g_assert_true (pspecs[i]->flags & G_PARAM_READABLE);
      g_assert_true (pspecs[i]->flags & G_PARAM_WRITABLE);
      g_assert_true (pspecs[i]->flags & G_PARAM_EXPLICIT_NOTIFY);
    }
  g_type_class_unref (klass);
}

static void
test_new (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      g_autoptr (PiqParams) p = piq_params_new (o_int_dtypes[i]);
      g_autoptr (PiqParams) a = piq_params_new_affine (o_int_dtypes[i], 0.375, -1);

      g_assert_cmpint (piq_params_get_dtype (p), ==, o_int_dtypes[i]);
      g_assert_cmpint (piq_params_get_dtype (a), ==, o_int_dtypes[i]);
      g_assert_cmpfloat (piq_params_get_scale (a), ==, 0.375);
      g_assert_cmpint (piq_params_get_zero_point (a), ==, -1);
      g_assert_cmpuint (piq_params_get_seed (a), ==, 0);
    }
}

static void
test_construct_properties (void)
{
  g_autoptr (PiqParams) p = g_object_new (PIQ_TYPE_PARAMS,
                                          "dtype", PIQ_DTYPE_INT4,
                                          "scale", 0.0625,
                                          "zero-point", G_GINT64_CONSTANT (-3),
                                          "round-mode", PIQ_ROUND_STOCHASTIC,
                                          "seed", G_GUINT64_CONSTANT (0xFFFFFFFFFFFFFFFF),
                                          "scale-rule", PIQ_SCALE_RULE_MEAN_STD,
                                          "include-zero", FALSE,
                                          NULL);
  PiqDtype dtype;
  double scale;
  gint64 zp;
  PiqRoundMode mode;
  guint64 seed;
  PiqScaleRule rule;
  gboolean iz;

  g_assert_cmpint (piq_params_get_dtype (p), ==, PIQ_DTYPE_INT4);
  g_assert_cmpfloat (piq_params_get_scale (p), ==, 0.0625);
  g_assert_cmpint (piq_params_get_zero_point (p), ==, -3);
  g_assert_cmpint (piq_params_get_round_mode (p), ==, PIQ_ROUND_STOCHASTIC);
  g_assert_cmpuint (piq_params_get_seed (p), ==, G_MAXUINT64);
  g_assert_cmpint (piq_params_get_scale_rule (p), ==, PIQ_SCALE_RULE_MEAN_STD);
  g_assert_false (piq_params_get_include_zero (p));

  g_object_get (p, "dtype", &dtype, "scale", &scale, "zero-point", &zp, "round-mode", &mode,
                "seed", &seed, "scale-rule", &rule, "include-zero", &iz, NULL);
  g_assert_cmpint (dtype, ==, PIQ_DTYPE_INT4);
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
  void      (*set_a) (PiqParams *p);
  void      (*set_b) (PiqParams *p);
  void      (*gset_a) (PiqParams *p);   /* through g_object_set */
} PropCase;

static void set_dtype_a (PiqParams *p) { piq_params_set_dtype (p, PIQ_DTYPE_INT16); }
static void set_dtype_b (PiqParams *p) { piq_params_set_dtype (p, PIQ_DTYPE_UINT2); }
static void gset_dtype_a (PiqParams *p) { g_object_set (p, "dtype", PIQ_DTYPE_INT16, NULL); }
static void set_scale_a (PiqParams *p) { piq_params_set_scale (p, 0.1); }
static void set_scale_b (PiqParams *p) { piq_params_set_scale (p, 0.2); }
static void gset_scale_a (PiqParams *p) { g_object_set (p, "scale", 0.1, NULL); }
static void set_zp_a (PiqParams *p) { piq_params_set_zero_point (p, G_MININT64); }
static void set_zp_b (PiqParams *p) { piq_params_set_zero_point (p, 17); }
static void gset_zp_a (PiqParams *p) { g_object_set (p, "zero-point", G_MININT64, NULL); }
static void set_mode_a (PiqParams *p) { piq_params_set_round_mode (p, PIQ_ROUND_STOCHASTIC); }
static void set_mode_b (PiqParams *p) { piq_params_set_round_mode (p, PIQ_ROUND_NEAREST); }
static void gset_mode_a (PiqParams *p) { g_object_set (p, "round-mode", PIQ_ROUND_STOCHASTIC, NULL); }
static void set_seed_a (PiqParams *p) { piq_params_set_seed (p, G_GUINT64_CONSTANT (1) << 63); }
static void set_seed_b (PiqParams *p) { piq_params_set_seed (p, 5); }
static void gset_seed_a (PiqParams *p) { g_object_set (p, "seed", G_GUINT64_CONSTANT (1) << 63, NULL); }
static void set_rule_a (PiqParams *p) { piq_params_set_scale_rule (p, PIQ_SCALE_RULE_ABS_MAX); }
static void set_rule_b (PiqParams *p) { piq_params_set_scale_rule (p, PIQ_SCALE_RULE_MEAN_STD); }
static void gset_rule_a (PiqParams *p) { g_object_set (p, "scale-rule", PIQ_SCALE_RULE_ABS_MAX, NULL); }
static void set_iz_a (PiqParams *p) { piq_params_set_include_zero (p, FALSE); }
static void set_iz_b (PiqParams *p) { piq_params_set_include_zero (p, TRUE); }
static void gset_iz_a (PiqParams *p) { g_object_set (p, "include-zero", FALSE, NULL); }

static const PropCase prop_cases[] = {
  { "dtype", set_dtype_a, set_dtype_b, gset_dtype_a },
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

static void
test_notify (gconstpointer data)
{
  const PropCase *c = data;
  g_autoptr (PiqParams) p = piq_params_new (PIQ_DTYPE_UINT8);
  g_autofree char *signal = g_strdup_printf ("notify::%s", c->name);
  guint this_prop = 0, any = 0;

  g_signal_connect (p, signal, G_CALLBACK (count_notify), &this_prop);
  g_signal_connect (p, "notify", G_CALLBACK (count_notify), &any);

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
  /* no other property was notified */
  g_assert_cmpuint (any, ==, this_prop);
}

static void
test_scale_any_value (void)
{
  g_autoptr (PiqParams) p = piq_params_new (PIQ_DTYPE_INT8);
  guint n = 0;

  g_signal_connect (p, "notify::scale", G_CALLBACK (count_notify), &n);
  piq_params_set_scale (p, NAN);
  g_assert_true (isnan (piq_params_get_scale (p)));
  g_assert_cmpuint (n, ==, 1);
  piq_params_set_scale (p, -INFINITY);
  g_assert_cmpfloat (piq_params_get_scale (p), ==, -INFINITY);
  piq_params_set_scale (p, -0.0);
  g_assert_true (signbit (piq_params_get_scale (p)));
  g_object_set (p, "scale", INFINITY, NULL);
  g_assert_cmpfloat (piq_params_get_scale (p), ==, INFINITY);
}

static void
test_copy (void)
{
  g_autoptr (PiqParams) p = g_object_new (PIQ_TYPE_PARAMS, "dtype", PIQ_DTYPE_UINT64, "scale", 1e-18,
                                          "zero-point", G_MAXINT64, "round-mode", PIQ_ROUND_STOCHASTIC,
                                          "seed", G_GUINT64_CONSTANT (42), "scale-rule", PIQ_SCALE_RULE_ABS_MAX,
                                          "include-zero", FALSE, NULL);
  g_autoptr (PiqParams) c = piq_params_copy (p);

  g_assert_true (c != p);
  g_assert_cmpint (piq_params_get_dtype (c), ==, PIQ_DTYPE_UINT64);
  g_assert_cmpfloat (piq_params_get_scale (c), ==, 1e-18);
  g_assert_cmpint (piq_params_get_zero_point (c), ==, G_MAXINT64);
  g_assert_cmpint (piq_params_get_round_mode (c), ==, PIQ_ROUND_STOCHASTIC);
  g_assert_cmpuint (piq_params_get_seed (c), ==, 42);
  g_assert_cmpint (piq_params_get_scale_rule (c), ==, PIQ_SCALE_RULE_ABS_MAX);
  g_assert_false (piq_params_get_include_zero (c));

  /* independent objects */
  piq_params_set_scale (c, 2.0);
  piq_params_set_seed (p, 7);
  g_assert_cmpfloat (piq_params_get_scale (p), ==, 1e-18);
  g_assert_cmpuint (piq_params_get_seed (c), ==, 42);
}

static void
test_validate (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      PiqDtype d = o_int_dtypes[i];
      OInt lo = o_qmin (d), hi = MIN (o_qmax (d), (OInt) G_MAXINT64);
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqParams) a = piq_params_new_affine (d, 0.5, (gint64) lo);
      g_autoptr (PiqParams) b = piq_params_new_affine (d, 0.5, (gint64) hi);

      g_test_message ("%s", o_dtype_name (d));
      g_assert_true (piq_params_validate (a, &error));
      g_assert_no_error (error);
      g_assert_true (piq_params_validate (b, &error));
      g_assert_no_error (error);
      if (lo > G_MININT64)
        {
          g_autoptr (PiqParams) c = piq_params_new_affine (d, 0.5, (gint64) (lo - 1));
          g_assert_false (piq_params_validate (c, &error));
          g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
          g_clear_error (&error);
        }
      if (o_qmax (d) < G_MAXINT64)
        {
          g_autoptr (PiqParams) c = piq_params_new_affine (d, 0.5, (gint64) (hi + 1));
          g_assert_false (piq_params_validate (c, &error));
          g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
          g_clear_error (&error);
        }
      {
        g_autoptr (PiqParams) c = piq_params_new_affine (d, 0.0, 0);
        g_assert_false (piq_params_validate (c, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
        g_clear_error (&error);
        piq_params_set_scale (c, NAN);
        g_assert_false (piq_params_validate (c, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE);
      }
    }
  for (gsize i = 0; i < G_N_ELEMENTS (o_float_dtypes); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqParams) f = piq_params_new_affine (o_float_dtypes[i], 1.0, 0);
      g_assert_false (piq_params_validate (f, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/params/defaults", test_defaults);
  g_test_add_func ("/params/pspecs", test_pspecs);
  g_test_add_func ("/params/new", test_new);
  g_test_add_func ("/params/construct-properties", test_construct_properties);
  for (gsize i = 0; i < G_N_ELEMENTS (prop_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/params/notify/%s", prop_cases[i].name);
      g_test_add_data_func (path, &prop_cases[i], test_notify);
    }
  g_test_add_func ("/params/scale/any-value", test_scale_any_value);
  g_test_add_func ("/params/copy", test_copy);
  g_test_add_func ("/params/validate", test_validate);

  return g_test_run ();
}

/* test-format.c: PiqFormat: constructors, construct-only properties,
 * immutability, equality, presets, validation, sizes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

static const char *all_props[] = {
  "dtype", "granularity", "axis", "block-size", "scale-dtype", "symmetric", "saturate",
  "high-nibble-first", "double-quant",
};

/* A property's current value compared with its param spec's default. */
static void
test_defaults (void)
{
  g_autoptr (PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, NULL);

  for (gsize i = 0; i < G_N_ELEMENTS (all_props); i++)
    {
      GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (f), all_props[i]);
      g_auto (GValue) value = G_VALUE_INIT;

      g_assert_nonnull (pspec);
      g_value_init (&value, pspec->value_type);
      g_object_get_property (G_OBJECT (f), all_props[i], &value);
      g_test_message ("%s", all_props[i]);
      /* block-size 0 asks for the format's default; the property reads the
       * effective size, as piq_format_get_block_size() */
      if (g_str_equal (all_props[i], "block-size"))
        {
          g_assert_cmpuint (G_PARAM_SPEC_UINT (pspec)->default_value, ==, 0);
          g_assert_cmpuint (g_value_get_uint (&value), ==, piq_format_get_block_size (f));
          continue;
        }
      g_assert_cmpint (g_param_values_cmp (pspec, &value, g_param_spec_get_default_value (pspec)), ==, 0);
    }
  /* the documented defaults */
  g_assert_true (piq_dtype_is_quantized (piq_format_get_dtype (f)));
  g_assert_cmpint (piq_format_get_granularity (f), ==, PIQ_GRANULARITY_TENSOR);
  g_assert_cmpint (piq_format_get_axis (f), ==, 0);
  g_assert_cmpint (piq_format_get_scale_dtype (f), ==, PIQ_DTYPE_F32);
  g_assert_true (piq_format_get_saturate (f));
  g_assert_false (piq_format_get_high_nibble_first (f));
  g_assert_false (piq_format_get_double_quant (f));
  g_assert_true (piq_format_validate (f, NULL));
}

/* Each property is readable, set only at construction, and registered once. */
static void
test_pspecs (void)
{
  GObjectClass *klass = g_type_class_ref (PIQ_TYPE_FORMAT);
  guint n = 0;
  g_autofree GParamSpec **pspecs = g_object_class_list_properties (klass, &n);

  g_assert_cmpuint (n, ==, G_N_ELEMENTS (all_props));
  for (guint i = 0; i < n; i++)
    {
      g_test_message ("%s", pspecs[i]->name);
      g_assert_true (pspecs[i]->flags & G_PARAM_READABLE);
      g_assert_true (pspecs[i]->flags & G_PARAM_WRITABLE);
      g_assert_true (pspecs[i]->flags & G_PARAM_CONSTRUCT_ONLY);
    }
  g_type_class_unref (klass);
}

static void
test_new (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      PiqDtype d = o_int_dtypes[i];
      g_autoptr (PiqFormat) a = piq_format_new (d);
      g_autoptr (PiqFormat) s = piq_format_new_symmetric (d);
      g_autoptr (PiqFormat) c = piq_format_new_per_channel (d, -1);
      g_autoptr (PiqFormat) b = piq_format_new_per_block (d, 17, PIQ_DTYPE_F16);

      g_test_message ("%s", o_dtype_name (d));
      g_assert_cmpint (piq_format_get_dtype (a), ==, d);
      g_assert_cmpint (piq_format_get_granularity (a), ==, PIQ_GRANULARITY_TENSOR);
      g_assert_false (piq_format_get_symmetric (a));
      g_assert_true (piq_format_has_zero_points (a));
      g_assert_true (piq_format_validate (a, NULL));

      g_assert_cmpint (piq_format_get_dtype (s), ==, d);
      g_assert_cmpint (piq_format_get_granularity (s), ==, PIQ_GRANULARITY_TENSOR);
      g_assert_true (piq_format_get_symmetric (s));
      g_assert_false (piq_format_has_zero_points (s));
      g_assert_true (piq_format_validate (s, NULL));

      g_assert_cmpint (piq_format_get_dtype (c), ==, d);
      g_assert_cmpint (piq_format_get_granularity (c), ==, PIQ_GRANULARITY_CHANNEL);
      g_assert_cmpint (piq_format_get_axis (c), ==, -1);

      g_assert_cmpint (piq_format_get_dtype (b), ==, d);
      g_assert_cmpint (piq_format_get_granularity (b), ==, PIQ_GRANULARITY_BLOCK);
      g_assert_cmpuint (piq_format_get_block_size (b), ==, 17);
      g_assert_cmpint (piq_format_get_scale_dtype (b), ==, PIQ_DTYPE_F16);

      /* per-channel and per-block zero points are int32: affine formats of
       * wider types cannot store theirs (symmetric ones need none) */
      if (o_qmin (d) >= G_MININT32 && o_qmax (d) <= G_MAXINT32)
        {
          g_assert_true (piq_format_validate (c, NULL));
          g_assert_true (piq_format_validate (b, NULL));
        }
      else
        {
          g_autoptr (GError) e1 = NULL, e2 = NULL;
          g_autoptr (PiqFormat) cs = g_object_new (PIQ_TYPE_FORMAT, "dtype", d, "granularity",
                                                   PIQ_GRANULARITY_CHANNEL, "symmetric", TRUE, NULL);
          g_assert_false (piq_format_validate (c, &e1));
          g_assert_error (e1, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
          g_assert_false (piq_format_validate (b, &e2));
          g_assert_error (e2, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
          g_assert_true (piq_format_validate (cs, NULL));
        }
    }
}

static void
test_construct_properties (void)
{
  g_autoptr (PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT,
                                          "dtype", PIQ_DTYPE_NF4,
                                          "granularity", PIQ_GRANULARITY_BLOCK,
                                          "block-size", 128,
                                          "scale-dtype", PIQ_DTYPE_F32,
                                          "high-nibble-first", TRUE,
                                          "double-quant", TRUE,
                                          NULL);
  g_autoptr (PiqFormat) c = g_object_new (PIQ_TYPE_FORMAT,
                                          "dtype", PIQ_DTYPE_INT4,
                                          "granularity", PIQ_GRANULARITY_CHANNEL,
                                          "axis", -2,
                                          "symmetric", TRUE,
                                          NULL);
  g_autoptr (PiqFormat) s = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_FP8_E5M2, "saturate", FALSE, NULL);
  PiqDtype dtype, sdtype;
  PiqGranularity gran;
  guint bs;
  int axis;
  gboolean hnf, dq, sym, sat;

  g_assert_cmpint (piq_format_get_dtype (f), ==, PIQ_DTYPE_NF4);
  g_assert_cmpint (piq_format_get_granularity (f), ==, PIQ_GRANULARITY_BLOCK);
  g_assert_cmpuint (piq_format_get_block_size (f), ==, 128);
  g_assert_cmpint (piq_format_get_scale_dtype (f), ==, PIQ_DTYPE_F32);
  g_assert_true (piq_format_get_high_nibble_first (f));
  g_assert_true (piq_format_get_double_quant (f));
  g_assert_true (piq_format_validate (f, NULL));

  g_object_get (f, "dtype", &dtype, "granularity", &gran, "block-size", &bs, "scale-dtype", &sdtype,
                "high-nibble-first", &hnf, "double-quant", &dq, NULL);
  g_assert_cmpint (dtype, ==, PIQ_DTYPE_NF4);
  g_assert_cmpint (gran, ==, PIQ_GRANULARITY_BLOCK);
  g_assert_cmpuint (bs, ==, 128);
  g_assert_cmpint (sdtype, ==, PIQ_DTYPE_F32);
  g_assert_true (hnf);
  g_assert_true (dq);

  g_object_get (c, "axis", &axis, "symmetric", &sym, NULL);
  g_assert_cmpint (axis, ==, -2);
  g_assert_true (sym);
  g_assert_cmpint (piq_format_get_axis (c), ==, -2);
  g_assert_true (piq_format_get_symmetric (c));
  g_assert_false (piq_format_has_zero_points (c));

  g_object_get (s, "saturate", &sat, NULL);
  g_assert_false (sat);
  g_assert_false (piq_format_get_saturate (s));
  g_assert_true (piq_format_validate (s, NULL));
}

/* ---- immutability: construct-only properties ---- */

typedef struct {
  const char *name;
  void      (*gset) (PiqFormat *f);   /* through g_object_set after construction */
} ImmutableCase;

static void gset_dtype (PiqFormat *f) { g_object_set (f, "dtype", PIQ_DTYPE_INT16, NULL); }
static void gset_granularity (PiqFormat *f) { g_object_set (f, "granularity", PIQ_GRANULARITY_BLOCK, NULL); }
static void gset_axis (PiqFormat *f) { g_object_set (f, "axis", 1, NULL); }
static void gset_block_size (PiqFormat *f) { g_object_set (f, "block-size", 16u, NULL); }
static void gset_scale_dtype (PiqFormat *f) { g_object_set (f, "scale-dtype", PIQ_DTYPE_F16, NULL); }
static void gset_symmetric (PiqFormat *f) { g_object_set (f, "symmetric", FALSE, NULL); }
static void gset_saturate (PiqFormat *f) { g_object_set (f, "saturate", FALSE, NULL); }
static void gset_hnf (PiqFormat *f) { g_object_set (f, "high-nibble-first", TRUE, NULL); }
static void gset_dq (PiqFormat *f) { g_object_set (f, "double-quant", TRUE, NULL); }

static const ImmutableCase immutable_cases[] = {
  { "dtype", gset_dtype },
  { "granularity", gset_granularity },
  { "axis", gset_axis },
  { "block-size", gset_block_size },
  { "scale-dtype", gset_scale_dtype },
  { "symmetric", gset_symmetric },
  { "saturate", gset_saturate },
  { "high-nibble-first", gset_hnf },
  { "double-quant", gset_dq },
};

static void
count_notify (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  (*(guint *) user_data)++;
}

/* GObject refuses to set a construct-only property after construction with a
 * warning (a critical in newer GLib): count it. The test log handler would report
 * a fatal message as "Bail out!", so both levels are made non-fatal for the call
 * and caught by a handler of GObject's log domain. */
static void
refused_set (const char *log_domain, GLogLevelFlags level, const char *message, gpointer user_data)
{
  if ((level & (G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL)) != 0 &&
      strstr (message, "construct property") != NULL &&
      strstr (message, "can't be set after construction") != NULL)
    (*(guint *) user_data)++;
  else
    g_error ("unexpected message: %s", message);
}

/* g_object_set on a constructed format is refused by GObject (a critical)
 * and changes nothing: every getter reads the constructed value, the format
 * still equals a twin built the same way, and nothing is notified. */
static void
test_immutable (gconstpointer data)
{
  const ImmutableCase *c = data;
  g_autoptr (PiqFormat) f = piq_format_new_symmetric (PIQ_DTYPE_INT8);
  g_autoptr (PiqFormat) twin = piq_format_new_symmetric (PIQ_DTYPE_INT8);
  guint notified = 0, refused = 0;

  g_signal_connect (f, "notify", G_CALLBACK (count_notify), &notified);
  {
    GLogLevelFlags fatal = g_log_set_always_fatal (G_LOG_FATAL_MASK);
    GLogLevelFlags domain_fatal = g_log_set_fatal_mask ("GLib-GObject", G_LOG_FATAL_MASK);
    guint handler = g_log_set_handler ("GLib-GObject", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL,
                                       refused_set, &refused);
    c->gset (f);
    g_log_remove_handler ("GLib-GObject", handler);
    g_log_set_fatal_mask ("GLib-GObject", domain_fatal);
    g_log_set_always_fatal (fatal);
  }

  g_assert_cmpuint (refused, ==, 1);
  g_assert_cmpuint (notified, ==, 0);
  g_assert_cmpint (piq_format_get_dtype (f), ==, PIQ_DTYPE_INT8);
  g_assert_cmpint (piq_format_get_granularity (f), ==, PIQ_GRANULARITY_TENSOR);
  g_assert_cmpint (piq_format_get_axis (f), ==, 0);
  g_assert_cmpint (piq_format_get_scale_dtype (f), ==, PIQ_DTYPE_F32);
  g_assert_true (piq_format_get_symmetric (f));
  g_assert_true (piq_format_get_saturate (f));
  g_assert_false (piq_format_get_high_nibble_first (f));
  g_assert_false (piq_format_get_double_quant (f));
  g_assert_cmpuint (piq_format_get_block_size (f), ==, piq_format_get_block_size (twin));
  g_assert_true (piq_format_equal (f, twin));
}

/* ---- equality ---- */

static PiqFormat *
block_format (PiqDtype dtype, guint block_size, PiqDtype scale_dtype, gboolean hnf, gboolean dq)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "granularity", PIQ_GRANULARITY_BLOCK,
                       "block-size", block_size, "scale-dtype", scale_dtype,
                       "high-nibble-first", hnf, "double-quant", dq, NULL);
}

static void
test_equal (void)
{
  g_autoptr (PiqFormat) a = block_format (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_F32, TRUE, FALSE);
  g_autoptr (PiqFormat) b = block_format (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_F32, TRUE, FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) nf4 = piq_format_new_preset ("nf4", &error);
  PiqFormat *differ[] = {
    block_format (PIQ_DTYPE_FP4_BNB, 64, PIQ_DTYPE_F32, TRUE, FALSE),
    block_format (PIQ_DTYPE_NF4, 32, PIQ_DTYPE_F32, TRUE, FALSE),
    block_format (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_F16, TRUE, FALSE),
    block_format (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_F32, FALSE, FALSE),
    block_format (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_F32, TRUE, TRUE),
  };

  g_assert_no_error (error);
  g_assert_true (a != b);
  g_assert_true (piq_format_equal (a, b));
  g_assert_true (piq_format_equal (b, a));
  g_assert_true (piq_format_equal (a, a));
  /* the preset is the bitsandbytes layout spelled out */
  g_assert_true (piq_format_equal (a, nf4));
  for (gsize i = 0; i < G_N_ELEMENTS (differ); i++)
    {
      g_test_message ("differ[%" G_GSIZE_FORMAT "]", i);
      g_assert_false (piq_format_equal (a, differ[i]));
      g_assert_false (piq_format_equal (differ[i], a));
      g_object_unref (differ[i]);
    }

  /* every constructor against its g_object_new spelling */
  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      PiqDtype d = o_int_dtypes[i];
      g_autoptr (PiqFormat) n1 = piq_format_new (d);
      g_autoptr (PiqFormat) n2 = g_object_new (PIQ_TYPE_FORMAT, "dtype", d, NULL);
      g_autoptr (PiqFormat) s1 = piq_format_new_symmetric (d);
      g_autoptr (PiqFormat) s2 = g_object_new (PIQ_TYPE_FORMAT, "dtype", d, "symmetric", TRUE, NULL);
      g_autoptr (PiqFormat) c1 = piq_format_new_per_channel (d, 1);
      g_autoptr (PiqFormat) c2 = g_object_new (PIQ_TYPE_FORMAT, "dtype", d, "granularity", PIQ_GRANULARITY_CHANNEL,
                                               "axis", 1, NULL);
      g_autoptr (PiqFormat) b1 = piq_format_new_per_block (d, 48, PIQ_DTYPE_F16);
      g_autoptr (PiqFormat) b2 = g_object_new (PIQ_TYPE_FORMAT, "dtype", d, "granularity", PIQ_GRANULARITY_BLOCK,
                                               "block-size", 48, "scale-dtype", PIQ_DTYPE_F16, NULL);

      g_test_message ("%s", o_dtype_name (d));
      g_assert_true (piq_format_equal (n1, n2));
      g_assert_true (piq_format_equal (s1, s2));
      g_assert_true (piq_format_equal (c1, c2));
      g_assert_true (piq_format_equal (b1, b2));
      g_assert_false (piq_format_equal (n1, s1));
      g_assert_false (piq_format_equal (n1, c1));
      g_assert_false (piq_format_equal (c1, b1));
    }
}

/* ---- presets ---- */

typedef struct {
  const char     *name;
  PiqDtype        dtype;
  PiqGranularity  granularity;
  guint           block_size;
  PiqDtype        scale_dtype;
  gboolean        high_nibble_first;
  gboolean        double_quant;
} Preset;

/* docs/formats.md's preset table */
static const Preset presets[] = {
  { "mxfp8_e4m3", PIQ_DTYPE_FP8_E4M3, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, FALSE, FALSE },
  { "mxfp8_e5m2", PIQ_DTYPE_FP8_E5M2, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, FALSE, FALSE },
  { "mxfp6_e2m3", PIQ_DTYPE_FP6_E2M3, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, FALSE, FALSE },
  { "mxfp6_e3m2", PIQ_DTYPE_FP6_E3M2, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, FALSE, FALSE },
  { "mxfp4",      PIQ_DTYPE_FP4_E2M1, PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, FALSE, FALSE },
  { "mxint8",     PIQ_DTYPE_INT8,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_E8M0, FALSE, FALSE },
  { "nf4",        PIQ_DTYPE_NF4,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE,  FALSE },
  { "fp4_bnb",    PIQ_DTYPE_FP4_BNB,  PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE,  FALSE },
  { "nf4_dq",     PIQ_DTYPE_NF4,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  TRUE,  TRUE },
  { "nf8",        PIQ_DTYPE_NF8,      PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  FALSE, FALSE },
  { "fp8_e4m3",   PIQ_DTYPE_FP8_E4M3, PIQ_GRANULARITY_TENSOR, 0, PIQ_DTYPE_F32,  FALSE, FALSE },
  { "fp8_e5m2",   PIQ_DTYPE_FP8_E5M2, PIQ_GRANULARITY_TENSOR, 0, PIQ_DTYPE_F32,  FALSE, FALSE },
  { "int8_block", PIQ_DTYPE_INT8,     PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  FALSE, FALSE },
  { "int4_block", PIQ_DTYPE_INT4,     PIQ_GRANULARITY_BLOCK, 64, PIQ_DTYPE_F32,  FALSE, FALSE },
  { "binary",     PIQ_DTYPE_BINARY,   PIQ_GRANULARITY_BLOCK, 128, PIQ_DTYPE_F32, FALSE, FALSE },
  { "q8_0",       PIQ_DTYPE_Q8_0,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_F16,  FALSE, FALSE },
  { "q4_0",       PIQ_DTYPE_Q4_0,     PIQ_GRANULARITY_BLOCK, 32, PIQ_DTYPE_F16,  FALSE, FALSE },
  { "msfp12",     PIQ_DTYPE_BFP3,     PIQ_GRANULARITY_BLOCK, 16, PIQ_DTYPE_E8M0, FALSE, FALSE },
  { "msfp16",     PIQ_DTYPE_BFP7,     PIQ_GRANULARITY_BLOCK, 16, PIQ_DTYPE_E8M0, FALSE, FALSE },
};

static void
test_preset (gconstpointer data)
{
  const Preset *p = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) f = piq_format_new_preset (p->name, &error);
  g_autofree char *upper = g_ascii_strup (p->name, -1);
  g_autoptr (PiqFormat) u = piq_format_new_preset (upper, &error);

  g_assert_no_error (error);
  g_assert_nonnull (f);
  g_assert_cmpint (piq_format_get_dtype (f), ==, p->dtype);
  g_assert_cmpint (piq_format_get_granularity (f), ==, p->granularity);
  if (p->granularity == PIQ_GRANULARITY_BLOCK)
    g_assert_cmpuint (piq_format_get_block_size (f), ==, p->block_size);
  g_assert_cmpint (piq_format_get_scale_dtype (f), ==, p->scale_dtype);
  g_assert_cmpint (piq_format_get_high_nibble_first (f), ==, p->high_nibble_first);
  g_assert_cmpint (piq_format_get_double_quant (f), ==, p->double_quant);
  g_assert_true (piq_format_validate (f, &error));
  g_assert_no_error (error);
  /* names are case-insensitive */
  g_assert_nonnull (u);
  g_assert_true (piq_format_equal (f, u));
}

static void
test_list_presets (void)
{
  g_autofree const char **names = piq_format_list_presets ();
  guint n = 0;

  for (const char **name = names; *name != NULL; name++, n++)
    {
      gboolean known = FALSE;
      for (gsize i = 0; i < G_N_ELEMENTS (presets); i++)
        known |= g_str_equal (presets[i].name, *name);
      g_test_message ("%s", *name);
      g_assert_true (known);
    }
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (presets));
}

static void
test_preset_unknown (void)
{
  static const char *bad[] = { "", "mxfp5", "nf4 ", "int8" };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_test_message ("\"%s\"", bad[i]);
      g_assert_null (piq_format_new_preset (bad[i], &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    }
}

/* ---- validation ---- */

/* The format part of the old params validation: a float dtype is no
 * quantized type; every integer format validates. */
static void
test_validate (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (o_int_dtypes); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqFormat) a = piq_format_new (o_int_dtypes[i]);
      g_test_message ("%s", o_dtype_name (o_int_dtypes[i]));
      g_assert_true (piq_format_validate (a, &error));
      g_assert_no_error (error);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (o_float_dtypes); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqFormat) f = piq_format_new (o_float_dtypes[i]);
      g_assert_false (piq_format_validate (f, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    }
}

/* Options that do not apply to the format: PIQ_ERROR_UNSUPPORTED. */
typedef struct {
  const char *name;
  PiqFormat *(*make) (void);
} BadFormat;

static PiqFormat *bad_hnf_8bit (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_FP8_E5M2, "high-nibble-first", TRUE, NULL); }
static PiqFormat *bad_hnf_int8 (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity", PIQ_GRANULARITY_BLOCK, "high-nibble-first", TRUE, NULL); }
static PiqFormat *bad_block_size_tensor (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "block-size", 32, NULL); }
static PiqFormat *bad_block_size_channel (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity", PIQ_GRANULARITY_CHANNEL, "block-size", 4, NULL); }
static PiqFormat *bad_axis_tensor (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "axis", 1, NULL); }
static PiqFormat *bad_axis_block (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity", PIQ_GRANULARITY_BLOCK, "axis", 1, NULL); }
static PiqFormat *bad_dq_int8 (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity", PIQ_GRANULARITY_BLOCK, "double-quant", TRUE, NULL); }
static PiqFormat *bad_dq_f16 (void) { return block_format (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_F16, FALSE, TRUE); }
static PiqFormat *bad_dq_tensor (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_NF4, "double-quant", TRUE, NULL); }
static PiqFormat *bad_e8m0_nf4 (void) { return block_format (PIQ_DTYPE_NF4, 64, PIQ_DTYPE_E8M0, FALSE, FALSE); }
static PiqFormat *bad_scale_int8 (void) { return block_format (PIQ_DTYPE_INT8, 64, PIQ_DTYPE_INT8, FALSE, FALSE); }
static PiqFormat *bad_saturate_int (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "saturate", FALSE, NULL); }
static PiqFormat *bad_saturate_fp4 (void) { return g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_FP4_E2M1, "saturate", FALSE, NULL); }
static PiqFormat *bad_saturate_mx (void) { return block_format (PIQ_DTYPE_FP8_E4M3, 32, PIQ_DTYPE_E8M0, FALSE, FALSE); }
static PiqFormat *bad_float (void) { return piq_format_new_per_block (PIQ_DTYPE_BF16, 32, PIQ_DTYPE_F32); }

static const BadFormat bad_formats[] = {
  { "high-nibble-first/fp8_e5m2", bad_hnf_8bit },
  { "high-nibble-first/int8", bad_hnf_int8 },
  { "block-size/per-tensor", bad_block_size_tensor },
  { "block-size/per-channel", bad_block_size_channel },
  { "axis/per-tensor", bad_axis_tensor },
  { "axis/per-block", bad_axis_block },
  { "double-quant/int8", bad_dq_int8 },
  { "double-quant/nf4-f16-scales", bad_dq_f16 },
  { "double-quant/nf4-per-tensor", bad_dq_tensor },
  { "scale-dtype/nf4-e8m0", bad_e8m0_nf4 },
  { "scale-dtype/int8", bad_scale_int8 },
  { "saturate/int8", bad_saturate_int },
  { "saturate/fp4_e2m1", bad_saturate_fp4 },
  { "dtype/bf16", bad_float },
};

static void
test_validate_bad (gconstpointer data)
{
  const BadFormat *b = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) f = b->make ();

  g_assert_nonnull (f);
  g_assert_false (piq_format_validate (f, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_test_message ("%s", error->message);
}

/* saturate FALSE on an MX format (E8M0 scales) does not apply either */
static void
test_validate_saturate_mx (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) ok = bad_saturate_mx ();
  g_autoptr (PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_FP8_E4M3,
                                          "granularity", PIQ_GRANULARITY_BLOCK, "scale-dtype", PIQ_DTYPE_E8M0,
                                          "saturate", FALSE, NULL);

  g_assert_true (piq_format_validate (ok, &error));
  g_assert_no_error (error);
  g_assert_false (piq_format_validate (f, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
}

/* ---- the effective block size ---- */

static void
test_block_size_default (void)
{
  g_autoptr (PiqFormat) i8 = piq_format_new_per_block (PIQ_DTYPE_INT8, 0, PIQ_DTYPE_F32);
  g_autoptr (PiqFormat) mx = piq_format_new_per_block (PIQ_DTYPE_FP4_E2M1, 0, PIQ_DTYPE_E8M0);
  g_autoptr (PiqFormat) q8 = piq_format_new_per_block (PIQ_DTYPE_Q8_0, 0, PIQ_DTYPE_F16);
  g_autoptr (PiqFormat) q4 = piq_format_new_per_block (PIQ_DTYPE_Q4_0, 0, PIQ_DTYPE_F16);
  g_autoptr (PiqFormat) nf4 = piq_format_new_per_block (PIQ_DTYPE_NF4, 0, PIQ_DTYPE_F32);

  g_assert_cmpuint (piq_format_get_block_size (i8), ==, 64);
  g_assert_cmpuint (piq_format_get_block_size (mx), ==, 32);
  g_assert_cmpuint (piq_format_get_block_size (q8), ==, 32);
  g_assert_cmpuint (piq_format_get_block_size (q4), ==, 32);
  g_assert_cmpuint (piq_format_get_block_size (nf4), ==, 64);
}

/* ---- sizes ---- */

static void
test_sizes (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) t = piq_format_new (PIQ_DTYPE_UINT4);
  g_autoptr (PiqFormat) s = piq_format_new_symmetric (PIQ_DTYPE_INT8);
  g_autoptr (PiqFormat) c = piq_format_new_per_channel (PIQ_DTYPE_INT8, 0);
  g_autoptr (PiqFormat) c1 = piq_format_new_per_channel (PIQ_DTYPE_UINT4, 1);
  g_autoptr (PiqFormat) b = piq_format_new_per_block (PIQ_DTYPE_INT4, 32, PIQ_DTYPE_F16);
  g_autoptr (PiqFormat) mx = piq_format_new_preset ("mxfp4", &error);
  const guint64 flat[1] = { 31 };
  const guint64 mat[2] = { 3, 70 };
  gsize codes = 1, scales = 1, zps = 1;

  g_assert_no_error (error);
  g_assert_true (piq_format_get_sizes (t, flat, 1, &codes, &scales, &zps, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (codes, ==, 16);
  g_assert_cmpuint (scales, ==, 0);
  g_assert_cmpuint (zps, ==, 0);

  g_assert_true (piq_format_get_sizes (s, mat, 2, &codes, &scales, &zps, &error));
  g_assert_cmpuint (codes, ==, 210);
  g_assert_cmpuint (scales, ==, 0);
  g_assert_cmpuint (zps, ==, 0);

  /* per channel, axis 0: 3 f32 scales, 3 int32 zero points (affine) */
  g_assert_true (piq_format_get_sizes (c, mat, 2, &codes, &scales, &zps, &error));
  g_assert_cmpuint (codes, ==, 210);
  g_assert_cmpuint (scales, ==, 3 * 4);
  g_assert_cmpuint (zps, ==, 3 * 4);
  /* axis 1: 70 channels */
  g_assert_true (piq_format_get_sizes (c1, mat, 2, &codes, &scales, &zps, &error));
  g_assert_cmpuint (codes, ==, 105);
  g_assert_cmpuint (scales, ==, 70 * 4);
  g_assert_cmpuint (zps, ==, 70 * 4);

  /* per block along rows of 70: 3 blocks a row (32 + 32 + 6), f16 scales */
  g_assert_true (piq_format_get_sizes (b, mat, 2, &codes, &scales, &zps, &error));
  g_assert_cmpuint (codes, ==, 105);
  g_assert_cmpuint (scales, ==, 9 * 2);
  g_assert_cmpuint (zps, ==, 9 * 4);

  /* MX: E8M0 bytes, no zero points; outputs are optional */
  g_assert_true (piq_format_get_sizes (mx, mat, 2, &codes, &scales, NULL, &error));
  g_assert_cmpuint (codes, ==, 105);
  g_assert_cmpuint (scales, ==, 9);
  g_assert_true (piq_format_get_sizes (mx, mat, 2, NULL, NULL, NULL, &error));
  g_assert_no_error (error);
}

static void
test_to_string (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) a = piq_format_new_preset ("nf4", &error);
  g_autoptr (PiqFormat) b = piq_format_new_symmetric (PIQ_DTYPE_INT8);
  g_autofree char *sa = piq_format_to_string (a);
  g_autofree char *sb = piq_format_to_string (b);

  g_assert_nonnull (sa);
  g_assert_nonnull (sb);
  g_test_message ("%s / %s", sa, sb);
  g_assert_cmpstr (sa, !=, sb);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/format/defaults", test_defaults);
  g_test_add_func ("/format/pspecs", test_pspecs);
  g_test_add_func ("/format/new", test_new);
  g_test_add_func ("/format/construct-properties", test_construct_properties);
  for (gsize i = 0; i < G_N_ELEMENTS (immutable_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/format/immutable/%s", immutable_cases[i].name);
      g_test_add_data_func (path, &immutable_cases[i], test_immutable);
    }
  g_test_add_func ("/format/equal", test_equal);
  for (gsize i = 0; i < G_N_ELEMENTS (presets); i++)
    {
      g_autofree char *path = g_strdup_printf ("/format/preset/%s", presets[i].name);
      g_test_add_data_func (path, &presets[i], test_preset);
    }
  g_test_add_func ("/format/preset/list", test_list_presets);
  g_test_add_func ("/format/preset/unknown", test_preset_unknown);
  g_test_add_func ("/format/validate", test_validate);
  for (gsize i = 0; i < G_N_ELEMENTS (bad_formats); i++)
    {
      g_autofree char *path = g_strdup_printf ("/format/validate/unsupported/%s", bad_formats[i].name);
      g_test_add_data_func (path, &bad_formats[i], test_validate_bad);
    }
  g_test_add_func ("/format/validate/unsupported/saturate/mx", test_validate_saturate_mx);
  g_test_add_func ("/format/block-size/default", test_block_size_default);
  g_test_add_func ("/format/sizes", test_sizes);
  g_test_add_func ("/format/to-string", test_to_string);

  return g_test_run ();
}

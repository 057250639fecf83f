/* piq-recipe.c: how the scales of a quantization are chosen
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "piq-recipe.h"
#include "piq-format-private.h"
#include "piq-enum-types.h"

/**
 * PiqRecipe:
 *
 * How a quantization chooses its scales: the rule that derives them from
 * data ([property@Piq.Recipe:scale-rule], [property@Piq.Recipe:include-zero]),
 * the rounding ([property@Piq.Recipe:round-mode], [property@Piq.Recipe:seed]),
 * or a per-tensor [property@Piq.Recipe:scale] and
 * [property@Piq.Recipe:zero-point] given outright (or stored by
 * [method@Piq.Quantizer.compute_params]).
 *
 * A recipe is separate from the [class@Piq.Format]: changing a recipe after
 * a quantization never changes what the quantized tensor's bytes mean. Every
 * setting must apply to the format it is used with; one that does not is an
 * error at the call, never ignored (see [Recipes](overview.html#recipes)).
 *
 * Since: 1.0
 */
struct _PiqRecipe
{
  GObject         parent_instance;
  PiqEngineRecipe r;
};

G_DEFINE_FINAL_TYPE (PiqRecipe, piq_recipe, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_SCALE_RULE,
  PROP_INCLUDE_ZERO,
  PROP_ROUND_MODE,
  PROP_SEED,
  PROP_SCALE,
  PROP_ZERO_POINT,
  PROP_HAS_SCALE,
  PROP_HAS_ZERO_POINT,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* A double property that takes every value, NaN and ±Inf included: GParamSpecDouble
 * would refuse them with only a warning and keep the old scale, so a bad scale set
 * through a property would go unnoticed. Here it is stored, and the next call fails
 * with PIQ_ERROR_INVALID_SCALE. */
static gboolean
any_double_validate (GParamSpec *pspec,
                     GValue     *value)
{
  return FALSE;   /* nothing changed */
}

static gint
any_double_cmp (GParamSpec   *pspec,
                const GValue *a,
                const GValue *b)
{
  double x = g_value_get_double (a), y = g_value_get_double (b);

  if (memcmp (&x, &y, sizeof x) == 0)
    return 0;
  return x < y ? -1 : 1;
}

static GType
any_double_pspec_get_type (void)
{
  static gsize type = 0;

  if (g_once_init_enter (&type))
    {
      const GParamSpecTypeInfo info = {
        .instance_size = sizeof (GParamSpecDouble),
        .value_type = G_TYPE_DOUBLE,
        .value_validate = any_double_validate,
        .values_cmp = any_double_cmp,
      };
      g_once_init_leave (&type, g_param_type_register_static ("PiqParamAnyDouble", &info));
    }
  return type;
}

static void
piq_recipe_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  PiqRecipe *self = PIQ_RECIPE (object);

  switch (prop_id)
    {
    case PROP_SCALE_RULE:     g_value_set_enum (value, self->r.rule); break;
    case PROP_INCLUDE_ZERO:   g_value_set_boolean (value, self->r.include_zero); break;
    case PROP_ROUND_MODE:     g_value_set_enum (value, self->r.stochastic); break;
    case PROP_SEED:           g_value_set_uint64 (value, self->r.seed); break;
    case PROP_SCALE:          g_value_set_double (value, self->r.scale); break;
    case PROP_ZERO_POINT:     g_value_set_int64 (value, self->r.zero_point); break;
    case PROP_HAS_SCALE:      g_value_set_boolean (value, self->r.has_scale); break;
    case PROP_HAS_ZERO_POINT: g_value_set_boolean (value, self->r.has_zero_point); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_recipe_set_property (GObject      *object,
                         guint         prop_id,
                         const GValue *value,
                         GParamSpec   *pspec)
{
  PiqRecipe *self = PIQ_RECIPE (object);

  switch (prop_id)
    {
    case PROP_SCALE_RULE:   piq_recipe_set_scale_rule (self, g_value_get_enum (value)); break;
    case PROP_INCLUDE_ZERO: piq_recipe_set_include_zero (self, g_value_get_boolean (value)); break;
    case PROP_ROUND_MODE:   piq_recipe_set_round_mode (self, g_value_get_enum (value)); break;
    case PROP_SEED:         piq_recipe_set_seed (self, g_value_get_uint64 (value)); break;
    case PROP_SCALE:        piq_recipe_set_scale (self, g_value_get_double (value)); break;
    case PROP_ZERO_POINT:   piq_recipe_set_zero_point (self, g_value_get_int64 (value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_recipe_class_init (PiqRecipeClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  object_class->get_property = piq_recipe_get_property;
  object_class->set_property = piq_recipe_set_property;

  /**
   * PiqRecipe:scale-rule:
   *
   * How scales are derived from data. The default,
   * %PIQ_SCALE_RULE_DEFAULT, is the format's own rule; any other rule must
   * apply to the format.
   *
   * Since: 1.0
   */
  properties[PROP_SCALE_RULE] =
    g_param_spec_enum ("scale-rule", NULL, NULL, PIQ_TYPE_SCALE_RULE, PIQ_SCALE_RULE_DEFAULT, rw);

  /**
   * PiqRecipe:include-zero:
   *
   * Whether the min/max rule widens the data's range to include 0, as
   * PyTorch's observers do. %FALSE needs the min/max rule.
   *
   * Since: 1.0
   */
  properties[PROP_INCLUDE_ZERO] =
    g_param_spec_boolean ("include-zero", NULL, NULL, TRUE, rw);

  /**
   * PiqRecipe:round-mode:
   *
   * Nearest (ties to even) or stochastic rounding.
   *
   * Since: 1.0
   */
  properties[PROP_ROUND_MODE] =
    g_param_spec_enum ("round-mode", NULL, NULL, PIQ_TYPE_ROUND_MODE, PIQ_ROUND_NEAREST, rw);

  /**
   * PiqRecipe:seed:
   *
   * The stochastic rounding seed; 0 draws a fresh one per call, which the
   * quantized tensor records ([method@Piq.Tensor.get_seed]). A non-zero
   * seed needs stochastic rounding.
   *
   * Since: 1.0
   */
  properties[PROP_SEED] =
    g_param_spec_uint64 ("seed", NULL, NULL, 0, G_MAXUINT64, 0, rw);

  /**
   * PiqRecipe:scale:
   *
   * A given per-tensor scale (setting it sets [property@Piq.Recipe:has-scale]).
   * Every value is stored; one that is not finite and positive makes the
   * next call fail with %PIQ_ERROR_INVALID_SCALE.
   *
   * Since: 1.0
   */
  properties[PROP_SCALE] = g_param_spec_internal (any_double_pspec_get_type (), "scale", NULL,
                                                  NULL, rw);
  ((GParamSpecDouble *) properties[PROP_SCALE])->minimum = -G_MAXDOUBLE;
  ((GParamSpecDouble *) properties[PROP_SCALE])->maximum = G_MAXDOUBLE;

  /**
   * PiqRecipe:zero-point:
   *
   * A given per-tensor zero point of affine integers (setting it sets
   * [property@Piq.Recipe:has-zero-point]).
   *
   * Since: 1.0
   */
  properties[PROP_ZERO_POINT] =
    g_param_spec_int64 ("zero-point", NULL, NULL, G_MININT64, G_MAXINT64, 0, rw);

  /**
   * PiqRecipe:has-scale:
   *
   * Whether the recipe gives a per-tensor scale (else quantize derives one).
   *
   * Since: 1.0
   */
  properties[PROP_HAS_SCALE] =
    g_param_spec_boolean ("has-scale", NULL, NULL, FALSE, ro);

  /**
   * PiqRecipe:has-zero-point:
   *
   * Whether the recipe gives a per-tensor zero point.
   *
   * Since: 1.0
   */
  properties[PROP_HAS_ZERO_POINT] =
    g_param_spec_boolean ("has-zero-point", NULL, NULL, FALSE, ro);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
piq_recipe_init (PiqRecipe *self)
{
  self->r = (PiqEngineRecipe) PIQ_ENGINE_RECIPE_DEFAULT;
}

/**
 * piq_recipe_new:
 *
 * The default recipe: the format's own scale rule, nearest rounding.
 *
 * Returns: (transfer full): a new recipe
 *
 * Since: 1.0
 */
PiqRecipe *
piq_recipe_new (void)
{
  return g_object_new (PIQ_TYPE_RECIPE, NULL);
}

/**
 * piq_recipe_new_fixed:
 * @scale: the per-tensor scale
 *
 * A recipe that gives a per-tensor scale, for symmetric formats (no zero
 * point); affine integers need [ctor@Piq.Recipe.new_affine].
 *
 * Returns: (transfer full): a new recipe
 *
 * Since: 1.0
 */
PiqRecipe *
piq_recipe_new_fixed (double scale)
{
  PiqRecipe *self = piq_recipe_new ();

  piq_recipe_set_scale (self, scale);
  return self;
}

/**
 * piq_recipe_new_affine:
 * @scale: the per-tensor scale
 * @zero_point: the per-tensor zero point
 *
 * A recipe that gives the per-tensor scale and zero point of affine
 * integers: `x ≈ (q − zero_point) · scale`.
 *
 * Returns: (transfer full): a new recipe
 *
 * Since: 1.0
 */
PiqRecipe *
piq_recipe_new_affine (double scale,
                       gint64 zero_point)
{
  PiqRecipe *self = piq_recipe_new_fixed (scale);

  piq_recipe_set_zero_point (self, zero_point);
  return self;
}

/**
 * piq_recipe_copy:
 * @self: a recipe
 *
 * Copies the recipe, given scale and zero point included.
 *
 * Returns: (transfer full): a new recipe with the same settings
 *
 * Since: 1.0
 */
PiqRecipe *
piq_recipe_copy (PiqRecipe *self)
{
  PiqRecipe *copy;

  g_return_val_if_fail (PIQ_IS_RECIPE (self), NULL);
  copy = piq_recipe_new ();
  copy->r = self->r;
  return copy;
}

void
piq_recipe_set_calibrated (PiqRecipe *self,
                           double     scale,
                           gboolean   has_zero_point,
                           gint64     zero_point)
{
  g_object_freeze_notify (G_OBJECT (self));
  piq_recipe_set_scale (self, scale);
  if (has_zero_point)
    piq_recipe_set_zero_point (self, zero_point);
  self->r.calibrated = TRUE;
  g_object_thaw_notify (G_OBJECT (self));
}

void
piq_recipe_to_engine (PiqRecipe       *self,
                      PiqEngineRecipe *out)
{
  if (self == NULL)
    *out = (PiqEngineRecipe) PIQ_ENGINE_RECIPE_DEFAULT;
  else
    *out = self->r;
}

#define SETTER(name, field, type, prop, conv) \
  void \
  piq_recipe_set_##name (PiqRecipe *self, type value) \
  { \
    g_return_if_fail (PIQ_IS_RECIPE (self)); \
    if (self->r.field == (__typeof__ (self->r.field)) conv (value)) \
      return; \
    self->r.field = (__typeof__ (self->r.field)) conv (value); \
    g_object_notify_by_pspec (G_OBJECT (self), properties[prop]); \
  }
#define AS_IS(v) (v)
#define AS_BOOL(v) ((v) != FALSE)

/**
 * piq_recipe_get_scale_rule:
 * @self: a recipe
 *
 * The rule that derives scales from data.
 *
 * Returns: the scale rule
 *
 * Since: 1.0
 */
PiqScaleRule
piq_recipe_get_scale_rule (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), PIQ_SCALE_RULE_DEFAULT);
  return self->r.rule;
}

/**
 * piq_recipe_set_scale_rule:
 * @self: a recipe
 * @scale_rule: the rule
 *
 * Sets [property@Piq.Recipe:scale-rule].
 *
 * Since: 1.0
 */
void
piq_recipe_set_scale_rule (PiqRecipe    *self,
                           PiqScaleRule  scale_rule)
{
  g_return_if_fail (PIQ_IS_RECIPE (self));

  if (self->r.rule == (int) scale_rule)
    return;
  self->r.rule = scale_rule;
  self->r.calibrated = FALSE;   /* the scale held was not derived by this rule */
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SCALE_RULE]);
}

/**
 * piq_recipe_get_include_zero:
 * @self: a recipe
 *
 * Whether the min/max rule widens the range to include 0.
 *
 * Returns: whether min/max includes 0
 *
 * Since: 1.0
 */
gboolean
piq_recipe_get_include_zero (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), TRUE);
  return self->r.include_zero;
}

/**
 * piq_recipe_set_include_zero:
 * @self: a recipe
 * @include_zero: whether min/max includes 0
 *
 * Sets [property@Piq.Recipe:include-zero].
 *
 * Since: 1.0
 */
SETTER (include_zero, include_zero, gboolean, PROP_INCLUDE_ZERO, AS_BOOL)

/**
 * piq_recipe_get_round_mode:
 * @self: a recipe
 *
 * The rounding mode.
 *
 * Returns: the rounding mode
 *
 * Since: 1.0
 */
PiqRoundMode
piq_recipe_get_round_mode (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), PIQ_ROUND_NEAREST);
  return self->r.stochastic ? PIQ_ROUND_STOCHASTIC : PIQ_ROUND_NEAREST;
}

/**
 * piq_recipe_set_round_mode:
 * @self: a recipe
 * @round_mode: the rounding mode
 *
 * Sets [property@Piq.Recipe:round-mode].
 *
 * Since: 1.0
 */
SETTER (round_mode, stochastic, PiqRoundMode, PROP_ROUND_MODE, AS_BOOL)

/**
 * piq_recipe_get_seed:
 * @self: a recipe
 *
 * The stochastic rounding seed.
 *
 * Returns: the stochastic seed (0: fresh per call)
 *
 * Since: 1.0
 */
guint64
piq_recipe_get_seed (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), 0);
  return self->r.seed;
}

/**
 * piq_recipe_set_seed:
 * @self: a recipe
 * @seed: the stochastic seed (0: fresh per call)
 *
 * Sets [property@Piq.Recipe:seed].
 *
 * Since: 1.0
 */
SETTER (seed, seed, guint64, PROP_SEED, AS_IS)

/**
 * piq_recipe_has_scale:
 * @self: a recipe
 *
 * Whether the recipe gives a per-tensor scale.
 *
 * Returns: whether the recipe gives a per-tensor scale
 *
 * Since: 1.0
 */
gboolean
piq_recipe_has_scale (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), FALSE);
  return self->r.has_scale;
}

/**
 * piq_recipe_get_scale:
 * @self: a recipe
 *
 * The given (or calibrated) per-tensor scale.
 *
 * Returns: the given per-tensor scale (0 when none is given)
 *
 * Since: 1.0
 */
double
piq_recipe_get_scale (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), 0.0);
  return self->r.scale;
}

/**
 * piq_recipe_set_scale:
 * @self: a recipe
 * @scale: the per-tensor scale
 *
 * Gives a per-tensor scale. Every value is stored; one that is not finite
 * and positive makes the next call fail with %PIQ_ERROR_INVALID_SCALE.
 *
 * Since: 1.0
 */
void
piq_recipe_set_scale (PiqRecipe *self,
                      double     scale)
{
  g_return_if_fail (PIQ_IS_RECIPE (self));

  gboolean changed = memcmp (&self->r.scale, &scale, sizeof scale) != 0;

  self->r.scale = scale;
  self->r.calibrated = FALSE;
  if (!self->r.has_scale)
    {
      self->r.has_scale = TRUE;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_HAS_SCALE]);
    }
  if (changed)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SCALE]);
}

/**
 * piq_recipe_has_zero_point:
 * @self: a recipe
 *
 * Whether the recipe gives a per-tensor zero point.
 *
 * Returns: whether the recipe gives a per-tensor zero point
 *
 * Since: 1.0
 */
gboolean
piq_recipe_has_zero_point (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), FALSE);
  return self->r.has_zero_point;
}

/**
 * piq_recipe_get_zero_point:
 * @self: a recipe
 *
 * The given (or calibrated) per-tensor zero point.
 *
 * Returns: the given per-tensor zero point (0 when none is given)
 *
 * Since: 1.0
 */
gint64
piq_recipe_get_zero_point (PiqRecipe *self)
{
  g_return_val_if_fail (PIQ_IS_RECIPE (self), 0);
  return self->r.zero_point;
}

/**
 * piq_recipe_set_zero_point:
 * @self: a recipe
 * @zero_point: the per-tensor zero point
 *
 * Gives the per-tensor zero point of affine integers.
 *
 * Since: 1.0
 */
void
piq_recipe_set_zero_point (PiqRecipe *self,
                           gint64     zero_point)
{
  g_return_if_fail (PIQ_IS_RECIPE (self));

  gboolean changed = self->r.zero_point != zero_point;

  self->r.zero_point = zero_point;
  self->r.calibrated = FALSE;
  if (!self->r.has_zero_point)
    {
      self->r.has_zero_point = TRUE;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_HAS_ZERO_POINT]);
    }
  if (changed)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ZERO_POINT]);
}

/**
 * piq_recipe_clear_scale:
 * @self: a recipe
 *
 * Forgets the given scale and zero point: quantize derives them again.
 *
 * Since: 1.0
 */
void
piq_recipe_clear_scale (PiqRecipe *self)
{
  g_return_if_fail (PIQ_IS_RECIPE (self));

  self->r.scale = 0.0;
  self->r.zero_point = 0;
  self->r.has_scale = FALSE;
  self->r.has_zero_point = FALSE;
  self->r.calibrated = FALSE;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_HAS_SCALE]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_HAS_ZERO_POINT]);
}

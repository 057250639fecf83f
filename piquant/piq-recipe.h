/* piq-recipe.h: how the scales of a quantization are chosen
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(__PIQUANT_H_INSIDE__) && !defined(PIQUANT_COMPILATION)
#error "Only <piquant/piquant.h> can be included directly."
#endif

#include <glib-object.h>
#include <piquant/piq-version.h>
#include <piquant/piq-types.h>

G_BEGIN_DECLS

#define PIQ_TYPE_RECIPE (piq_recipe_get_type ())

PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqRecipe, piq_recipe, PIQ, RECIPE, GObject)

PIQ_AVAILABLE_IN_1_0
PiqRecipe *     piq_recipe_new                  (void);
PIQ_AVAILABLE_IN_1_0
PiqRecipe *     piq_recipe_new_fixed            (double         scale);
PIQ_AVAILABLE_IN_1_0
PiqRecipe *     piq_recipe_new_affine           (double         scale,
                                                 gint64         zero_point);
PIQ_AVAILABLE_IN_1_0
PiqRecipe *     piq_recipe_copy                 (PiqRecipe     *self);

PIQ_AVAILABLE_IN_1_0
PiqScaleRule    piq_recipe_get_scale_rule       (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_recipe_set_scale_rule       (PiqRecipe     *self,
                                                 PiqScaleRule   scale_rule);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_recipe_get_include_zero     (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_recipe_set_include_zero     (PiqRecipe     *self,
                                                 gboolean       include_zero);
PIQ_AVAILABLE_IN_1_0
PiqRoundMode    piq_recipe_get_round_mode       (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_recipe_set_round_mode       (PiqRecipe     *self,
                                                 PiqRoundMode   round_mode);
PIQ_AVAILABLE_IN_1_0
guint64         piq_recipe_get_seed             (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_recipe_set_seed             (PiqRecipe     *self,
                                                 guint64        seed);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_recipe_has_scale            (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
double          piq_recipe_get_scale            (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_recipe_set_scale            (PiqRecipe     *self,
                                                 double         scale);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_recipe_has_zero_point       (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
gint64          piq_recipe_get_zero_point       (PiqRecipe     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_recipe_set_zero_point       (PiqRecipe     *self,
                                                 gint64         zero_point);
PIQ_AVAILABLE_IN_1_0
void            piq_recipe_clear_scale          (PiqRecipe     *self);

G_END_DECLS

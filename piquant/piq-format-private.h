/* piq-format-private.h: a PiqFormat's engine form
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "piq-format.h"
#include "piq-recipe.h"
#include "piq-engine-private.h"

G_BEGIN_DECLS

/* The format's fields (owned by the format, which is immutable). */
const PiqEngineFormat *piq_format_peek (PiqFormat *self);
PiqFormat *piq_format_new_from_engine (const PiqEngineFormat *f);

/* The recipe's fields; NULL gives the default recipe. */
void piq_recipe_to_engine (PiqRecipe *self, PiqEngineRecipe *out);

/* compute_params' result: the scale (and zero point) derived by the recipe's own rule,
 * so a named rule and the scale it produced go together. */
void piq_recipe_set_calibrated (PiqRecipe *self, double scale, gboolean has_zero_point,
                                gint64 zero_point);

G_END_DECLS

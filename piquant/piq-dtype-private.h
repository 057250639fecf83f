/* piq-dtype-private.h: the format table, for the GObject layer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "piq-types.h"
#include "piq-engine-private.h"

G_BEGIN_DECLS

/* "f32" for a known dtype, "dtype 99" (static buffer per thread) otherwise: for messages. */
const char *piq_dtype_describe (PiqDtype dtype);

/* Set @error from an engine error (PiqError has the engine's codes). */
void piq_set_engine_error (GError **error, const PiqEngineError *e);

G_END_DECLS

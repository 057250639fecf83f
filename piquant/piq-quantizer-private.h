/* piq-quantizer-private.h: what the other operations' files take from a quantizer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "piq-quantizer.h"
#include "piq-engine-private.h"

G_BEGIN_DECLS

/* The quantizer's thread count and kernel table, as every call reads them. */
void piq_quantizer_get_engine (PiqQuantizer *self, PiqEngine *eng);

G_END_DECLS

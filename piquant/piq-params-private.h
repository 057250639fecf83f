/* piq-params-private.h: what the quantizer reads of PiqParams beyond its properties
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "piq-params.h"

G_BEGIN_DECLS

/* The block size in force: the ggml types' own, else block-size, else the format's
 * default (32 with E8M0 scales, 64 otherwise). */
guint piq_params_effective_block_size (PiqParams *self);

G_END_DECLS

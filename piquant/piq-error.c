/* piq-error.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "piq-error.h"

/**
 * piq_error_quark:
 *
 * The quark of the piquant error domain, [error@Piq.Error].
 *
 * Returns: the `PIQ_ERROR` quark
 *
 * Since: 1.0
 */
G_DEFINE_QUARK (piq-error-quark, piq_error)

/* piq-error.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "piq-error.h"

G_DEFINE_QUARK (piq-error-quark, piq_error)

/* piq-dtype.h: what each PiqDtype is
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(__PIQUANT_H_INSIDE__) && !defined(PIQUANT_COMPILATION)
#error "Only <piquant/piquant.h> can be included directly."
#endif

#include <glib.h>
#include <piquant/piq-version.h>
#include <piquant/piq-types.h>

G_BEGIN_DECLS

PIQ_AVAILABLE_IN_1_0
gboolean        piq_dtype_is_float              (PiqDtype      dtype);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_dtype_is_quantized          (PiqDtype      dtype);
PIQ_AVAILABLE_IN_1_0
guint           piq_dtype_get_bits              (PiqDtype      dtype);
PIQ_AVAILABLE_IN_1_0
const char *    piq_dtype_get_name              (PiqDtype      dtype);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_dtype_get_range             (PiqDtype      dtype,
                                                 gint64       *min,
                                                 guint64      *max);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_dtype_from_name             (const char   *name,
                                                 PiqDtype     *dtype);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_dtype_get_size_for_n        (PiqDtype      dtype,
                                                 guint64       n_elements,
                                                 gsize        *n_bytes,
                                                 GError      **error);

G_END_DECLS

/* piq-format.h: what the bytes of a quantized tensor mean
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

#define PIQ_TYPE_FORMAT (piq_format_get_type ())

PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqFormat, piq_format, PIQ, FORMAT, GObject)

PIQ_AVAILABLE_IN_1_0
PiqFormat *     piq_format_new                  (PiqDtype        dtype);
PIQ_AVAILABLE_IN_1_0
PiqFormat *     piq_format_new_symmetric        (PiqDtype        dtype);
PIQ_AVAILABLE_IN_1_0
PiqFormat *     piq_format_new_per_channel      (PiqDtype        dtype,
                                                 int             axis);
PIQ_AVAILABLE_IN_1_0
PiqFormat *     piq_format_new_per_block        (PiqDtype        dtype,
                                                 guint           block_size,
                                                 PiqDtype        scale_dtype);
PIQ_AVAILABLE_IN_1_0
PiqFormat *     piq_format_new_preset           (const char     *name,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
const char **   piq_format_list_presets         (void);

PIQ_AVAILABLE_IN_1_0
PiqDtype        piq_format_get_dtype            (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
PiqGranularity  piq_format_get_granularity      (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
int             piq_format_get_axis             (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
guint           piq_format_get_block_size       (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
PiqDtype        piq_format_get_scale_dtype      (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_get_symmetric        (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_has_zero_points      (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_get_saturate         (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_get_high_nibble_first (PiqFormat     *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_get_double_quant     (PiqFormat      *self);

PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_validate             (PiqFormat      *self,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_equal                (PiqFormat      *a,
                                                 PiqFormat      *b);
PIQ_AVAILABLE_IN_1_0
char *          piq_format_to_string            (PiqFormat      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_format_get_sizes            (PiqFormat      *self,
                                                 const guint64  *shape,
                                                 guint           n_dims,
                                                 gsize          *codes_size,
                                                 gsize          *scales_size,
                                                 gsize          *zero_points_size,
                                                 GError        **error);

G_END_DECLS

/* piq-params.h: how to quantize
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

#define PIQ_TYPE_PARAMS (piq_params_get_type ())

PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqParams, piq_params, PIQ, PARAMS, GObject)

PIQ_AVAILABLE_IN_1_0
PiqParams *     piq_params_new                  (PiqDtype      dtype);
PIQ_AVAILABLE_IN_1_0
PiqParams *     piq_params_new_affine           (PiqDtype      dtype,
                                                 double        scale,
                                                 gint64        zero_point);
PIQ_AVAILABLE_IN_1_0
PiqParams *     piq_params_new_preset           (const char   *name,
                                                 GError      **error);
PIQ_AVAILABLE_IN_1_0
const char **   piq_params_list_presets         (void);
PIQ_AVAILABLE_IN_1_0
PiqParams *     piq_params_copy                 (PiqParams    *self);

PIQ_AVAILABLE_IN_1_0
PiqDtype        piq_params_get_dtype            (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_dtype            (PiqParams    *self,
                                                 PiqDtype      dtype);
PIQ_AVAILABLE_IN_1_0
double          piq_params_get_scale            (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_scale            (PiqParams    *self,
                                                 double        scale);
PIQ_AVAILABLE_IN_1_0
gint64          piq_params_get_zero_point       (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_zero_point       (PiqParams    *self,
                                                 gint64        zero_point);
PIQ_AVAILABLE_IN_1_0
PiqRoundMode    piq_params_get_round_mode       (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_round_mode       (PiqParams    *self,
                                                 PiqRoundMode  round_mode);
PIQ_AVAILABLE_IN_1_0
guint64         piq_params_get_seed             (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_seed             (PiqParams    *self,
                                                 guint64       seed);
PIQ_AVAILABLE_IN_1_0
PiqScaleRule    piq_params_get_scale_rule       (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_scale_rule       (PiqParams    *self,
                                                 PiqScaleRule  scale_rule);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_params_get_include_zero     (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_include_zero     (PiqParams    *self,
                                                 gboolean      include_zero);

PIQ_AVAILABLE_IN_1_0
PiqGranularity  piq_params_get_granularity      (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_granularity      (PiqParams    *self,
                                                 PiqGranularity granularity);
PIQ_AVAILABLE_IN_1_0
guint           piq_params_get_block_size       (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_block_size       (PiqParams    *self,
                                                 guint         block_size);
PIQ_AVAILABLE_IN_1_0
PiqDtype        piq_params_get_scale_dtype      (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_scale_dtype      (PiqParams    *self,
                                                 PiqDtype      scale_dtype);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_params_get_saturate         (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_saturate         (PiqParams    *self,
                                                 gboolean      saturate);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_params_get_high_nibble_first (PiqParams   *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_high_nibble_first (PiqParams   *self,
                                                 gboolean      high_nibble_first);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_params_get_double_quant     (PiqParams    *self);
PIQ_AVAILABLE_IN_1_0
void            piq_params_set_double_quant     (PiqParams    *self,
                                                 gboolean      double_quant);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_params_validate             (PiqParams    *self,
                                                 GError      **error);

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

/* piq-tensor.h: a buffer of elements that the library owns or wraps
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
#include <piquant/piq-params.h>

G_BEGIN_DECLS

#define PIQ_TYPE_TENSOR (piq_tensor_get_type ())

PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqTensor, piq_tensor, PIQ, TENSOR, GObject)

PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new                  (PiqDtype       dtype,
                                                 guint64        n_elements,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_data        (PiqDtype       dtype,
                                                 guint64        n_elements,
                                                 const guint8  *data,
                                                 gsize          size,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_bytes       (PiqDtype       dtype,
                                                 guint64        n_elements,
                                                 GBytes        *bytes,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_values      (PiqDtype       dtype,
                                                 const double  *values,
                                                 gsize          n_values,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_for_address      (PiqDtype       dtype,
                                                 guint64        n_elements,
                                                 guintptr       address,
                                                 gsize          size,
                                                 gboolean       writable,
                                                 GError       **error);

PIQ_AVAILABLE_IN_1_0
PiqDtype        piq_tensor_get_dtype            (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
guint64         piq_tensor_get_n_elements       (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
gsize           piq_tensor_get_n_bytes          (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_is_writable          (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
gconstpointer   piq_tensor_get_data             (PiqTensor     *self,
                                                 gsize         *size);
PIQ_AVAILABLE_IN_1_0
gpointer        piq_tensor_get_writable_data    (PiqTensor     *self,
                                                 gsize         *size);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_tensor_get_bytes            (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_set_data             (PiqTensor     *self,
                                                 const guint8  *data,
                                                 gsize          size,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
double *        piq_tensor_to_values            (PiqTensor     *self,
                                                 gsize         *n_values);
PIQ_AVAILABLE_IN_1_0
double          piq_tensor_get_value            (PiqTensor     *self,
                                                 guint64        index);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_fill                 (PiqTensor     *self,
                                                 double         value,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
PiqParams *     piq_tensor_get_params           (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_tensor_set_params           (PiqTensor     *self,
                                                 PiqParams     *params);

PIQ_AVAILABLE_IN_1_0
GBytes *        piq_tensor_get_scales           (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_tensor_set_scales           (PiqTensor     *self,
                                                 GBytes        *scales);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_tensor_get_zero_points      (PiqTensor     *self);
PIQ_AVAILABLE_IN_1_0
void            piq_tensor_set_zero_points      (PiqTensor     *self,
                                                 GBytes        *zero_points);

G_END_DECLS

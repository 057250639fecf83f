/* piq-tensor.h: a shaped buffer of elements that the library owns or wraps
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
#include <piquant/piq-format.h>

G_BEGIN_DECLS

/**
 * PIQ_MAX_DIMS:
 *
 * The most dimensions a tensor has.
 *
 * Since: 1.0
 */
#define PIQ_MAX_DIMS 8

#define PIQ_TYPE_TENSOR (piq_tensor_get_type ())

PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqTensor, piq_tensor, PIQ, TENSOR, GObject)

PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new                  (PiqDtype        dtype,
                                                 guint64         n_elements,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_shaped           (PiqDtype        dtype,
                                                 const guint64  *shape,
                                                 guint           n_dims,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_data        (PiqDtype        dtype,
                                                 guint64         n_elements,
                                                 const guint8   *data,
                                                 gsize           size,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_bytes       (PiqDtype        dtype,
                                                 guint64         n_elements,
                                                 GBytes         *bytes,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_strided          (PiqDtype        dtype,
                                                 const guint64  *shape,
                                                 guint           n_dims,
                                                 GBytes         *bytes,
                                                 gsize           offset,
                                                 gsize           row_stride,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_values      (PiqDtype        dtype,
                                                 const double   *values,
                                                 gsize           n_values,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_for_address      (PiqDtype        dtype,
                                                 const guint64  *shape,
                                                 guint           n_dims,
                                                 guintptr        address,
                                                 gsize           size,
                                                 gsize           row_stride,
                                                 gboolean        writable,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_quantized        (PiqFormat      *format,
                                                 const guint64  *shape,
                                                 guint           n_dims,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_quantized_from_bytes (PiqFormat  *format,
                                                 const guint64  *shape,
                                                 guint           n_dims,
                                                 GBytes         *codes,
                                                 GBytes         *scales,
                                                 GBytes         *zero_points,
                                                 double          scale,
                                                 gint64          zero_point,
                                                 GError        **error);

PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_reshape              (PiqTensor      *self,
                                                 const guint64  *shape,
                                                 guint           n_dims,
                                                 GError        **error);

PIQ_AVAILABLE_IN_1_0
PiqDtype        piq_tensor_get_dtype            (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
guint           piq_tensor_get_n_dims           (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
const guint64 * piq_tensor_get_shape            (PiqTensor      *self,
                                                 guint          *n_dims);
PIQ_AVAILABLE_IN_1_0
guint64         piq_tensor_get_dim              (PiqTensor      *self,
                                                 int             axis);
PIQ_AVAILABLE_IN_1_0
guint64         piq_tensor_get_n_elements       (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
gsize           piq_tensor_get_n_bytes          (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
gsize           piq_tensor_get_row_stride       (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_is_contiguous        (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_is_writable          (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
gconstpointer   piq_tensor_get_data             (PiqTensor      *self,
                                                 gsize          *size);
PIQ_AVAILABLE_IN_1_0
gpointer        piq_tensor_get_writable_data    (PiqTensor      *self,
                                                 gsize          *size);
PIQ_AVAILABLE_IN_1_0
guintptr        piq_tensor_get_address          (PiqTensor      *self,
                                                 gsize          *size);
PIQ_AVAILABLE_IN_1_0
guintptr        piq_tensor_get_scales_address   (PiqTensor      *self,
                                                 gsize          *size);
PIQ_AVAILABLE_IN_1_0
guintptr        piq_tensor_get_zero_points_address (PiqTensor   *self,
                                                 gsize          *size);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_tensor_get_bytes            (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_set_data             (PiqTensor      *self,
                                                 const guint8   *data,
                                                 gsize           size,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
double *        piq_tensor_to_values            (PiqTensor      *self,
                                                 gsize          *n_values,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
double          piq_tensor_get_value            (PiqTensor      *self,
                                                 guint64         index);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_fill                 (PiqTensor      *self,
                                                 double          value,
                                                 GError        **error);

PIQ_AVAILABLE_IN_1_0
PiqFormat *     piq_tensor_get_format           (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
double          piq_tensor_get_scale            (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
gint64          piq_tensor_get_zero_point       (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
guint64         piq_tensor_get_seed             (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_tensor_get_scales           (PiqTensor      *self);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_tensor_get_zero_points      (PiqTensor      *self);

G_END_DECLS

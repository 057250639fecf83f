/* piq-quantizer.h: the operations
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
#include <piquant/piq-recipe.h>
#include <piquant/piq-tensor.h>

G_BEGIN_DECLS

#define PIQ_TYPE_QUANTIZER (piq_quantizer_get_type ())

PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqQuantizer, piq_quantizer, PIQ, QUANTIZER, GObject)

PIQ_AVAILABLE_IN_1_0
PiqQuantizer *  piq_quantizer_new               (void);
PIQ_AVAILABLE_IN_1_0
PiqQuantizer *  piq_quantizer_get_default       (void);

PIQ_AVAILABLE_IN_1_0
guint           piq_quantizer_get_n_threads     (PiqQuantizer  *self);
PIQ_AVAILABLE_IN_1_0
void            piq_quantizer_set_n_threads     (PiqQuantizer  *self,
                                                 guint          n_threads);
PIQ_AVAILABLE_IN_1_0
PiqSimdLevel    piq_quantizer_get_simd_level    (PiqQuantizer  *self);
PIQ_AVAILABLE_IN_1_0
PiqSimdLevel    piq_quantizer_get_max_simd_level (PiqQuantizer *self);
PIQ_AVAILABLE_IN_1_0
void            piq_quantizer_set_max_simd_level (PiqQuantizer *self,
                                                 PiqSimdLevel   level);

PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_compute_params    (PiqQuantizer  *self,
                                                 PiqFormat     *format,
                                                 PiqRecipe     *recipe,
                                                 PiqTensor     *src,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_quantize          (PiqQuantizer  *self,
                                                 PiqRecipe     *recipe,
                                                 PiqTensor     *src,
                                                 PiqTensor     *dst,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_quantizer_quantize_new      (PiqQuantizer  *self,
                                                 PiqFormat     *format,
                                                 PiqRecipe     *recipe,
                                                 PiqTensor     *src,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_dequantize        (PiqQuantizer  *self,
                                                 PiqTensor     *src,
                                                 PiqTensor     *dst,
                                                 PiqReduceOp    op,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_quantizer_dequantize_new    (PiqQuantizer  *self,
                                                 PiqTensor     *src,
                                                 PiqDtype       dtype,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_requantize        (PiqQuantizer  *self,
                                                 PiqFormat     *format,
                                                 PiqRecipe     *recipe,
                                                 PiqTensor     *src,
                                                 PiqTensor     *dst,
                                                 PiqReduceOp    op,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_binary_dot        (PiqQuantizer  *self,
                                                 PiqTensor     *a,
                                                 PiqTensor     *b,
                                                 double        *result,
                                                 GError       **error);

PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_compute_params_raw (PiqQuantizer *self,
                                                 PiqFormat     *format,
                                                 PiqRecipe     *recipe,
                                                 PiqDtype       src_dtype,
                                                 gconstpointer  src,
                                                 gsize          n_elements,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_quantize_raw      (PiqQuantizer  *self,
                                                 PiqFormat     *format,
                                                 PiqRecipe     *recipe,
                                                 PiqDtype       src_dtype,
                                                 gconstpointer  src,
                                                 const guint64 *shape,
                                                 guint          n_dims,
                                                 gpointer       dst,
                                                 gsize          dst_size,
                                                 gpointer       scales,
                                                 gsize          scales_size,
                                                 gpointer       zero_points,
                                                 gsize          zero_points_size,
                                                 double        *scale,
                                                 gint64        *zero_point,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_dequantize_raw    (PiqQuantizer  *self,
                                                 PiqFormat     *format,
                                                 double         scale,
                                                 gint64         zero_point,
                                                 gconstpointer  src,
                                                 gsize          src_size,
                                                 const guint64 *shape,
                                                 guint          n_dims,
                                                 gconstpointer  scales,
                                                 gsize          scales_size,
                                                 gconstpointer  zero_points,
                                                 gsize          zero_points_size,
                                                 PiqDtype       dst_dtype,
                                                 gpointer       dst,
                                                 gsize          dst_size,
                                                 PiqReduceOp    op,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_requantize_raw    (PiqQuantizer  *self,
                                                 PiqFormat     *format,
                                                 PiqRecipe     *recipe,
                                                 PiqDtype       dtype,
                                                 gconstpointer  src,
                                                 const guint64 *shape,
                                                 guint          n_dims,
                                                 gpointer       dst,
                                                 gsize          dst_size,
                                                 PiqReduceOp    op,
                                                 GError       **error);

G_END_DECLS

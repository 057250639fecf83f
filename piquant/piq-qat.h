/* piq-qat.h: fake quantization and its gradients, for quantization-aware training
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
#include <piquant/piq-tensor.h>
#include <piquant/piq-quantizer.h>

G_BEGIN_DECLS

PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_fake_quantize     (PiqQuantizer  *self,
                                                 PiqFormat     *format,
                                                 PiqTensor     *src,
                                                 PiqTensor     *scales,
                                                 PiqTensor     *zero_points,
                                                 PiqTensor     *dst,
                                                 PiqTensor     *mask,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_fake_quantize_backward (PiqQuantizer *self,
                                                 PiqFormat     *format,
                                                 PiqTensor     *src,
                                                 PiqTensor     *scales,
                                                 PiqTensor     *zero_points,
                                                 PiqTensor     *grad_out,
                                                 double         grad_factor,
                                                 PiqTensor     *grad_src,
                                                 PiqTensor     *grad_scales,
                                                 PiqTensor     *grad_zero_points,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_fake_quantize_per_tensor (PiqQuantizer *self,
                                                 PiqFormat     *format,
                                                 PiqTensor     *src,
                                                 double         scale,
                                                 gint64         zero_point,
                                                 PiqTensor     *dst,
                                                 PiqTensor     *mask,
                                                 GError       **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_fake_quantize_per_tensor_backward (PiqQuantizer *self,
                                                 PiqFormat     *format,
                                                 PiqTensor     *src,
                                                 double         scale,
                                                 gint64         zero_point,
                                                 PiqTensor     *grad_out,
                                                 double         grad_factor,
                                                 PiqTensor     *grad_src,
                                                 double        *grad_scale,
                                                 double        *grad_zero_point,
                                                 GError       **error);

G_END_DECLS

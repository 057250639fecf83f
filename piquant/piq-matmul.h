/* piq-matmul.h: matrix multiplication with quantized weights
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
#include <piquant/piq-recipe.h>

G_BEGIN_DECLS

/**
 * PiqActivation:
 * @PIQ_ACTIVATION_FLOAT: the weights are decoded to binary32 on the fly and
 *   multiplied with the float activations, accumulating in binary32 in a fixed
 *   order; every format
 * @PIQ_ACTIVATION_DYNAMIC_INT8: each call quantizes the activations to
 *   symmetric int8 per group of the weights' scales (as ggml's Q8_0
 *   activations do) and takes exact integer dot products with the weights'
 *   codes; integer formats of at most 8 bits, Q8_0 and Q4_0
 * @PIQ_ACTIVATION_BINARY: each call quantizes every row of the activations to
 *   the weights' binary format (sign bits and the format's own scales, as
 *   [method@Piq.Quantizer.quantize] does) and takes XNOR-popcount products,
 *   exact per block, scaled and summed in binary64; binary weights only
 *   (per block, per output channel or per tensor)
 *
 * How [method@Piq.Quantizer.matmul] treats the activations (see docs/matmul.md
 * for the exact arithmetic of each).
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_ACTIVATION_FLOAT        = 0,
  PIQ_ACTIVATION_DYNAMIC_INT8 = 1,
  PIQ_ACTIVATION_BINARY       = 2,
} PiqActivation;

#define PIQ_TYPE_PACKED_WEIGHTS (piq_packed_weights_get_type ())
PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqPackedWeights, piq_packed_weights, PIQ, PACKED_WEIGHTS, GObject)

PIQ_AVAILABLE_IN_1_0
PiqPackedWeights * piq_packed_weights_new       (PiqTensor      *weights,
                                                 PiqActivation   activation,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_packed_weights_supports     (PiqFormat      *format,
                                                 PiqActivation   activation,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_packed_weights_get_weights  (PiqPackedWeights *self);
PIQ_AVAILABLE_IN_1_0
PiqActivation   piq_packed_weights_get_activation (PiqPackedWeights *self);
PIQ_AVAILABLE_IN_1_0
guint64         piq_packed_weights_get_n_out    (PiqPackedWeights *self);
PIQ_AVAILABLE_IN_1_0
guint64         piq_packed_weights_get_n_in     (PiqPackedWeights *self);
PIQ_AVAILABLE_IN_1_0
gsize           piq_packed_weights_get_n_bytes  (PiqPackedWeights *self);

PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_matmul            (PiqQuantizer     *self,
                                                 PiqTensor        *x,
                                                 PiqPackedWeights *weights,
                                                 PiqTensor        *bias,
                                                 PiqTensor        *y,
                                                 PiqReduceOp       op,
                                                 GError          **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_quantizer_matmul_new        (PiqQuantizer     *self,
                                                 PiqTensor        *x,
                                                 PiqPackedWeights *weights,
                                                 PiqTensor        *bias,
                                                 PiqDtype          dtype,
                                                 GError          **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_quantizer_matmul_quantized  (PiqQuantizer     *self,
                                                 PiqTensor        *a,
                                                 PiqPackedWeights *weights,
                                                 PiqTensor        *bias,
                                                 PiqRecipe        *recipe,
                                                 PiqTensor        *y,
                                                 PiqReduceOp       op,
                                                 GError          **error);

G_END_DECLS

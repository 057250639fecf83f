/* piq-matmul.c: PiqPackedWeights and the matrix multiply
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The GObject face of piq-engine-matmul.c: packed weights hold the quantized tensor
 * they came from (which stays usable: dequantize it, save it) and the engine's
 * packed form; the multiply validates its tensors and runs the engine.
 */
#include "config.h"

#include <string.h>

#include "piq-matmul.h"
#include "piq-dtype.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"
#include "piq-format-private.h"
#include "piq-quantizer-private.h"
#include "piq-tensor-private.h"
#include "piq-engine-private.h"

/**
 * PiqPackedWeights:
 *
 * A weight matrix W [out, in] in a quantized format, prepared once for
 * [method@Piq.Quantizer.matmul] under one [enum@Piq.Activation] policy.
 *
 * The float policy keeps a reference to the weight tensor and decodes its
 * bytes at every call, so it costs no memory besides expanded
 * double-quantized scales; the dynamic-int8 policy unpacks the codes into one
 * byte per weight with a scale and zero point per group, and no longer reads
 * the tensor; the binary policy copies the sign bits into 64-bit words per
 * block with binary32 scales, and no longer reads the tensor either. Either
 * way the tensor stays usable; after changing its bytes, pack it again.
 *
 * Since: 1.0
 */
struct _PiqPackedWeights {
  GObject           parent_instance;
  PiqTensor        *weights;
  PiqActivation     activation;
  PiqEnginePacked  *packed;
};

G_DEFINE_FINAL_TYPE (PiqPackedWeights, piq_packed_weights, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_WEIGHTS,
  PROP_ACTIVATION,
  PROP_N_OUT,
  PROP_N_IN,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
piq_packed_weights_finalize (GObject *object)
{
  PiqPackedWeights *self = PIQ_PACKED_WEIGHTS (object);

  piq_engine_packed_free (self->packed);
  g_clear_object (&self->weights);
  G_OBJECT_CLASS (piq_packed_weights_parent_class)->finalize (object);
}

static void
piq_packed_weights_get_property (GObject    *object,
                                 guint       prop_id,
                                 GValue     *value,
                                 GParamSpec *pspec)
{
  PiqPackedWeights *self = PIQ_PACKED_WEIGHTS (object);

  switch (prop_id)
    {
    case PROP_WEIGHTS:
      g_value_set_object (value, self->weights);
      break;
    case PROP_ACTIVATION:
      g_value_set_enum (value, self->activation);
      break;
    case PROP_N_OUT:
      g_value_set_uint64 (value, piq_packed_weights_get_n_out (self));
      break;
    case PROP_N_IN:
      g_value_set_uint64 (value, piq_packed_weights_get_n_in (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_packed_weights_class_init (PiqPackedWeightsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  object_class->finalize = piq_packed_weights_finalize;
  object_class->get_property = piq_packed_weights_get_property;

  /**
   * PiqPackedWeights:weights:
   *
   * The quantized tensor [out, in] the weights were packed from.
   *
   * Since: 1.0
   */
  properties[PROP_WEIGHTS] = g_param_spec_object ("weights", NULL, NULL, PIQ_TYPE_TENSOR, ro);

  /**
   * PiqPackedWeights:activation:
   *
   * The activation policy the weights were packed for.
   *
   * Since: 1.0
   */
  properties[PROP_ACTIVATION] =
    g_param_spec_enum ("activation", NULL, NULL, PIQ_TYPE_ACTIVATION, PIQ_ACTIVATION_FLOAT, ro);

  /**
   * PiqPackedWeights:n-out:
   *
   * Output features: the weights' first extent, the last extent of a product.
   *
   * Since: 1.0
   */
  properties[PROP_N_OUT] = g_param_spec_uint64 ("n-out", NULL, NULL, 0, G_MAXUINT64, 0, ro);

  /**
   * PiqPackedWeights:n-in:
   *
   * Input features: the weights' second extent, the last extent of an input.
   *
   * Since: 1.0
   */
  properties[PROP_N_IN] = g_param_spec_uint64 ("n-in", NULL, NULL, 0, G_MAXUINT64, 0, ro);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
piq_packed_weights_init (PiqPackedWeights *self)
{
  (void) self;
}

static gboolean
quantized_with_format (PiqTensor  *t,
                       const char *role,
                       GError    **error)
{
  if (!piq_dtype_is_quantized (piq_tensor_get_dtype (t)))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the %s must be quantized, not %s: "
                   "quantize them first", role, piq_dtype_describe (piq_tensor_get_dtype (t)));
      return FALSE;
    }
  if (piq_tensor_get_format (t) == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_FORMAT, "the %s tensor has no format: wrap "
                   "quantized data with piq_tensor_new_quantized_from_bytes()",
                   piq_dtype_describe (piq_tensor_get_dtype (t)));
      return FALSE;
    }
  return TRUE;
}

/**
 * piq_packed_weights_supports:
 * @format: a weight format
 * @activation: an activation policy
 * @error: return location for a #GError
 *
 * Whether weights of @format multiply under @activation: the float policy
 * takes every quantized format; dynamic int8 takes integer codes of at most 8
 * bits (per tensor, per output channel or per block along the input) and the
 * ggml blocks Q8_0 and Q4_0; binary takes binary weights per tensor, per
 * output channel or per block along the input.
 *
 * Returns: %TRUE if they do; otherwise %FALSE with @error saying why
 *
 * Since: 1.0
 */
gboolean
piq_packed_weights_supports (PiqFormat      *format,
                             PiqActivation   activation,
                             GError        **error)
{
  PiqEngineError e;

  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!piq_engine_matmul_supports (piq_format_peek (format), (int) activation, &e))
    {
      piq_set_engine_error (error, &e);
      return FALSE;
    }
  return TRUE;
}

/**
 * piq_packed_weights_new:
 * @weights: a quantized tensor [out, in]
 * @activation: the activation policy the products will use
 * @error: return location for a #GError
 *
 * Packs @weights for [method@Piq.Quantizer.matmul]. The format and policy
 * must go together (see [func@Piq.PackedWeights.supports]); the tensor must
 * have two dimensions, neither empty. A per-tensor scale or zero point the
 * format cannot decode with is refused here, not at the product.
 *
 * Packing runs on the default quantizer's threads
 * ([method@Piq.Quantizer.set_n_threads]); the packed bytes do not depend on
 * how many.
 *
 * Returns: (transfer full) (nullable): the packed weights, or %NULL on error
 *
 * Since: 1.0
 */
PiqPackedWeights *
piq_packed_weights_new (PiqTensor      *weights,
                        PiqActivation   activation,
                        GError        **error)
{
  g_autoptr(PiqPackedWeights) self = NULL;
  PiqEngine eng;
  PiqEngineQuant q;
  PiqEngineError e;
  const guint64 *shape;
  guint n_dims;

  g_return_val_if_fail (PIQ_IS_TENSOR (weights), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!quantized_with_format (weights, "weights", error))
    return NULL;
  self = g_object_new (PIQ_TYPE_PACKED_WEIGHTS, NULL);
  piq_quantizer_get_engine (piq_quantizer_get_default (), &eng);
  piq_tensor_to_engine_quant (weights, &q);
  shape = piq_tensor_get_shape (weights, &n_dims);
  self->packed = piq_engine_pack (&eng, &q, shape, n_dims, (int) activation, &e);
  if (self->packed == NULL)
    {
      piq_set_engine_error (error, &e);
      return NULL;
    }
  self->weights = g_object_ref (weights);
  self->activation = activation;
  return g_steal_pointer (&self);
}

/**
 * piq_packed_weights_get_weights:
 * @self: packed weights
 *
 * Gets the tensor the weights were packed from.
 *
 * Returns: (transfer none): the quantized tensor the weights were packed from
 *
 * Since: 1.0
 */
PiqTensor *
piq_packed_weights_get_weights (PiqPackedWeights *self)
{
  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (self), NULL);
  return self->weights;
}

/**
 * piq_packed_weights_get_activation:
 * @self: packed weights
 *
 * Gets the activation policy of [property@Piq.PackedWeights:activation].
 *
 * Returns: the activation policy the weights were packed for
 *
 * Since: 1.0
 */
PiqActivation
piq_packed_weights_get_activation (PiqPackedWeights *self)
{
  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (self), PIQ_ACTIVATION_FLOAT);
  return self->activation;
}

/**
 * piq_packed_weights_get_n_out:
 * @self: packed weights
 *
 * Gets [property@Piq.PackedWeights:n-out].
 *
 * Returns: the output features (the weights' first extent)
 *
 * Since: 1.0
 */
guint64
piq_packed_weights_get_n_out (PiqPackedWeights *self)
{
  guint64 n = 0;

  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (self), 0);
  piq_engine_packed_info (self->packed, &n, NULL, NULL);
  return n;
}

/**
 * piq_packed_weights_get_n_in:
 * @self: packed weights
 *
 * Gets [property@Piq.PackedWeights:n-in].
 *
 * Returns: the input features (the weights' second extent)
 *
 * Since: 1.0
 */
guint64
piq_packed_weights_get_n_in (PiqPackedWeights *self)
{
  guint64 k = 0;

  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (self), 0);
  piq_engine_packed_info (self->packed, NULL, &k, NULL);
  return k;
}

/**
 * piq_packed_weights_get_n_bytes:
 * @self: packed weights
 *
 * Gets the memory the packed form holds of its own.
 *
 * Returns: the bytes the packed form holds besides the weight tensor (0 for
 *   the float policy unless the scales were double-quantized)
 *
 * Since: 1.0
 */
gsize
piq_packed_weights_get_n_bytes (PiqPackedWeights *self)
{
  gsize bytes = 0;

  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (self), 0);
  piq_engine_packed_info (self->packed, NULL, NULL, &bytes);
  return bytes;
}

static gboolean
float_tensor (PiqTensor  *t,
              const char *role,
              GError    **error)
{
  if (piq_dtype_is_float (piq_tensor_get_dtype (t)))
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the %s must be a float tensor (f32, "
               "f64, bf16, f16), not %s", role, piq_dtype_describe (piq_tensor_get_dtype (t)));
  return FALSE;
}

/**
 * piq_quantizer_matmul:
 * @self: a quantizer
 * @x: the input, a float tensor [..., in]
 * @weights: packed weights [out, in]
 * @bias: (nullable): a float vector of out elements, or %NULL
 * @y: the output, a float tensor [..., out] with @x's leading extents
 * @op: overwrite @y, or add the product to it
 * @error: return location for a #GError
 *
 * Computes Y = X · Wᵀ + bias for every row of @x and stores it into @y
 * (%PIQ_REDUCE_SET) or adds it to @y (%PIQ_REDUCE_ADD). The arithmetic is
 * that of the weights' [enum@Piq.Activation] policy, in an order fixed by the
 * definition (docs/matmul.md): @y's bytes are the same for every thread count
 * and every SIMD level. @y must not overlap @x, @bias or the weights. On error
 * nothing is written.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_matmul (PiqQuantizer     *self,
                      PiqTensor        *x,
                      PiqPackedWeights *weights,
                      PiqTensor        *bias,
                      PiqTensor        *y,
                      PiqReduceOp       op,
                      GError          **error)
{
  PiqEngine eng;
  PiqEngineView xv, bv, yv;
  PiqEngineError e;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (x), FALSE);
  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (weights), FALSE);
  g_return_val_if_fail (bias == NULL || PIQ_IS_TENSOR (bias), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (y), FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!float_tensor (x, "input", error) || !float_tensor (y, "output", error) ||
      (bias != NULL && !float_tensor (bias, "bias", error)))
    return FALSE;
  if (!piq_tensor_is_writable (y))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_READ_ONLY, "the output tensor is read-only");
      return FALSE;
    }
  piq_quantizer_get_engine (self, &eng);
  piq_tensor_to_engine (x, &xv);
  piq_tensor_to_engine (y, &yv);
  if (bias != NULL)
    piq_tensor_to_engine (bias, &bv);
  if (!piq_engine_matmul (&eng, &xv, weights->packed, bias != NULL ? &bv : NULL, &yv,
                          op == PIQ_REDUCE_ADD, &e))
    {
      piq_set_engine_error (error, &e);
      return FALSE;
    }
  return TRUE;
}

/**
 * piq_quantizer_matmul_new:
 * @self: a quantizer
 * @x: the input, a float tensor [..., in]
 * @weights: packed weights [out, in]
 * @bias: (nullable): a float vector of out elements, or %NULL
 * @dtype: the float dtype of the result
 * @error: return location for a #GError
 *
 * Computes X · Wᵀ + bias into a new tensor [..., out]; see
 * [method@Piq.Quantizer.matmul].
 *
 * Returns: (transfer full) (nullable): the product, or %NULL on error
 *
 * Since: 1.0
 */
PiqTensor *
piq_quantizer_matmul_new (PiqQuantizer     *self,
                          PiqTensor        *x,
                          PiqPackedWeights *weights,
                          PiqTensor        *bias,
                          PiqDtype          dtype,
                          GError          **error)
{
  g_autoptr(PiqTensor) y = NULL;
  guint64 shape[PIQ_MAX_DIMS];
  const guint64 *xs;
  guint n_dims;

  g_return_val_if_fail (PIQ_IS_TENSOR (x), NULL);
  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (weights), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!piq_dtype_is_float (dtype))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the output must be a float dtype "
                   "(f32, f64, bf16, f16), not %s", piq_dtype_describe (dtype));
      return NULL;
    }
  xs = piq_tensor_get_shape (x, &n_dims);
  memcpy (shape, xs, n_dims * sizeof *shape);
  shape[n_dims - 1] = piq_packed_weights_get_n_out (weights);
  y = piq_tensor_new_shaped (dtype, shape, n_dims, error);
  if (y == NULL || !piq_quantizer_matmul (self, x, weights, bias, y, PIQ_REDUCE_SET, error))
    return NULL;
  return g_steal_pointer (&y);
}

/* The products of matmul_quantized whose output is a float tensor, by the weights'
 * policy: float (the float policy's product of A decoded) and dynamic int8 with A in
 * integer blocks (the exact block-integer product), piq-engine-matmul-quant.c; binary
 * (the XNOR-popcount product of a binary A), piq-engine-matmul-binary.c. */
typedef int (*FloatProduct) (const PiqEngine *eng, const PiqEngineQuant *a, const uint64_t *a_shape,
                             unsigned a_dims, const PiqEnginePacked *w, const PiqEngineView *bias,
                             const PiqEngineView *y, int add, PiqEngineError *e);

static gboolean
matmul_float_output (PiqQuantizer     *self,
                     PiqTensor        *a,
                     PiqPackedWeights *weights,
                     PiqTensor        *bias,
                     PiqRecipe        *recipe,
                     PiqTensor        *y,
                     PiqReduceOp       op,
                     GError          **error)
{
  PiqActivation act = weights->activation;
  FloatProduct product = act == PIQ_ACTIVATION_BINARY ? piq_engine_matmul_binary_quantized
                       : act == PIQ_ACTIVATION_DYNAMIC_INT8 ? piq_engine_matmul_blocks
                       : piq_engine_matmul_decoded;
  const char *what = act == PIQ_ACTIVATION_BINARY ? "weights packed for binary activations"
                   : act == PIQ_ACTIVATION_DYNAMIC_INT8 ? "an input quantized per block"
                   : "weights packed for float activations";
  PiqEngine eng;
  PiqEngineQuant aq;
  PiqEngineView bv, yv;
  PiqEngineError e;
  const guint64 *shape;
  guint n_dims;

  if (!piq_dtype_is_float (piq_tensor_get_dtype (y)) || piq_tensor_get_format (y) != NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "with %s the output is a float "
                   "tensor (f32, f64, bf16, f16), not %s: int32 and requantized outputs take "
                   "uint8/int8 inputs per tensor or per row and weights packed for dynamic int8",
                   what, piq_dtype_describe (piq_tensor_get_dtype (y)));
      return FALSE;
    }
  if (recipe != NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "a recipe is for a requantized "
                   "output; a float output takes none");
      return FALSE;
    }
  piq_quantizer_get_engine (self, &eng);
  piq_tensor_to_engine_quant (a, &aq);
  piq_tensor_to_engine (y, &yv);
  if (bias != NULL)
    piq_tensor_to_engine (bias, &bv);
  shape = piq_tensor_get_shape (a, &n_dims);
  if (!product (&eng, &aq, shape, n_dims, weights->packed, bias != NULL ? &bv : NULL, &yv,
                op == PIQ_REDUCE_ADD, &e))
    {
      piq_set_engine_error (error, &e);
      return FALSE;
    }
  return TRUE;
}

/**
 * piq_quantizer_matmul_quantized:
 * @self: a quantizer
 * @a: the input [..., in], quantized: for weights packed for
 *   %PIQ_ACTIVATION_FLOAT, in any format whose rows decode on their own (FP8
 *   per tensor or per row, MXFP8/6/4, MXINT8, MSFP, BFP, NF4, integers …);
 *   for weights packed for %PIQ_ACTIVATION_DYNAMIC_INT8, uint8 or int8
 *   quantized per tensor, a matrix quantized per row (per channel along
 *   axis 0), or signed integers per block of the weights' group size; for
 *   weights packed for %PIQ_ACTIVATION_BINARY, binary
 * @weights: weights [out, in] packed for %PIQ_ACTIVATION_FLOAT (any format),
 *   or packed for %PIQ_ACTIVATION_DYNAMIC_INT8: int8 or uint8 per tensor or
 *   per output channel (the int8 GEMM), integers per block (block inputs), or
 *   binary weights packed for %PIQ_ACTIVATION_BINARY
 * @bias: (nullable): a float vector of out elements (float and requantized
 *   outputs), or %NULL
 * @recipe: (nullable): the output scale and zero point, for a quantized @y
 *   (a scale is needed; without a zero point, the type's symmetric one);
 *   %NULL otherwise
 * @y: the output [..., out]: a float tensor; with weights packed for dynamic
 *   int8 also an int32 tensor for the exact sums or a uint8/int8 tensor
 *   quantized per tensor (piq_tensor_new_quantized()) for the requantized
 *   product
 * @op: %PIQ_REDUCE_SET, or %PIQ_REDUCE_ADD for int32 and float outputs
 * @error: return location for a #GError
 *
 * A product whose input is quantized too. The weights'
 * [enum@Piq.Activation] policy picks the arithmetic; any other pairing is
 * %PIQ_ERROR_UNSUPPORTED, with a message that says what is accepted.
 *
 * With weights packed for %PIQ_ACTIVATION_FLOAT (FP8 × FP8, MX × MX,
 * MSFP × MSFP and every other pair), @y is the float policy's product of
 * @a decoded to binary32 exactly as [method@Piq.Quantizer.dequantize]
 * decodes it: byte for byte what [method@Piq.Quantizer.matmul] gives for
 * the dequantized @a, for every thread count and SIMD level. @a is decoded
 * a block of rows at a time, never whole.
 *
 * With weights packed for %PIQ_ACTIVATION_DYNAMIC_INT8 per block and @a of
 * signed integer codes per block of the same size without zero points
 * (MXINT8 × MXINT8, int8_block, int4_block), @y is the dynamic-int8 policy's
 * product with @a's own codes and scales: exact integer sums per block,
 * ((double) I · sw) · sa accumulated in binary64 in block order, rounded once
 * to binary32 (docs/matmul.md); @y is a float tensor.
 *
 * With weights packed for %PIQ_ACTIVATION_BINARY, @a is a binary tensor
 * [..., in] whose blocks along the input are the weights' (per block of the
 * same size; per tensor, or per row of a matrix, where the weights have one
 * scale per row), @y a float tensor, and @recipe %NULL: the XNOR-popcount
 * product of the binary policy (docs/matmul.md) + bias.
 *
 * With weights packed for %PIQ_ACTIVATION_DYNAMIC_INT8 and @a uint8 or int8
 * per tensor or per row, this is the int8 GEMM of FBGEMM and oneDNN on
 * quantized operands. The sums
 * I = Σ (a − za) · (w − zw) are exact (the zero points fold through row and
 * column sums); an int32 output receives them (%PIQ_ERROR_OVERFLOW, and
 * nothing written, if one does not fit), a float output
 * ((I · sa) · sw in binary64, rounded to binary32) + bias, and a quantized
 * output the codes round((I · sa) · sw + bias) / scale) + zero point, ties to
 * even, clamped to the type (docs/matmul.md); the quantized @y then carries
 * that scale and zero point. On error nothing is written.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_matmul_quantized (PiqQuantizer     *self,
                                PiqTensor        *a,
                                PiqPackedWeights *weights,
                                PiqTensor        *bias,
                                PiqRecipe        *recipe,
                                PiqTensor        *y,
                                PiqReduceOp       op,
                                GError          **error)
{
  PiqEngine eng;
  PiqEngineQuant aq;
  PiqEngineView bv;
  PiqEngineMatmulOut out = { 0 };
  PiqEngineError e;
  PiqDtype ydt;
  PiqFormat *yf;
  const guint64 *shape;
  guint n_dims;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (a), FALSE);
  g_return_val_if_fail (PIQ_IS_PACKED_WEIGHTS (weights), FALSE);
  g_return_val_if_fail (bias == NULL || PIQ_IS_TENSOR (bias), FALSE);
  g_return_val_if_fail (recipe == NULL || PIQ_IS_RECIPE (recipe), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (y), FALSE);
  g_return_val_if_fail (op == PIQ_REDUCE_SET || op == PIQ_REDUCE_ADD, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!quantized_with_format (a, "input", error) ||
      (bias != NULL && !float_tensor (bias, "bias", error)))
    return FALSE;
  if (!piq_tensor_is_writable (y))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_READ_ONLY, "the output tensor is read-only");
      return FALSE;
    }
  if (weights->activation == PIQ_ACTIVATION_FLOAT || weights->activation == PIQ_ACTIVATION_BINARY ||
      (weights->activation == PIQ_ACTIVATION_DYNAMIC_INT8 &&
       piq_format_get_granularity (piq_tensor_get_format (a)) == PIQ_GRANULARITY_BLOCK))
    return matmul_float_output (self, a, weights, bias, recipe, y, op, error);
  ydt = piq_tensor_get_dtype (y);
  yf = piq_tensor_get_format (y);
  piq_tensor_to_engine (y, &out.view);
  out.add = op == PIQ_REDUCE_ADD;
  if (ydt == PIQ_DTYPE_INT32 && yf == NULL)
    out.kind = PIQ_MM_OUT_INT32;
  else if (piq_dtype_is_float (ydt))
    out.kind = PIQ_MM_OUT_FLOAT;
  else if ((ydt == PIQ_DTYPE_UINT8 || ydt == PIQ_DTYPE_INT8) && yf != NULL &&
           piq_format_get_granularity (yf) == PIQ_GRANULARITY_TENSOR)
    {
      gint64 lo = ydt == PIQ_DTYPE_UINT8 ? 0 : -128;
      out.kind = PIQ_MM_OUT_CODES;
      out.code_dtype = ydt;
      if (recipe == NULL || !piq_recipe_has_scale (recipe))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE, "a quantized output needs its "
                       "scale: give a recipe with one (piq_recipe_new_fixed())");
          return FALSE;
        }
      out.scale = piq_recipe_get_scale (recipe);
      out.zero_point = piq_recipe_has_zero_point (recipe) ? piq_recipe_get_zero_point (recipe)
                       : lo == 0 ? 128 : 0;
      if (!piq_format_has_zero_points (yf) && out.zero_point != (lo == 0 ? 128 : 0))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT, "the output's format is "
                       "symmetric: its zero point is %d, not %" G_GINT64_FORMAT,
                       lo == 0 ? 128 : 0, out.zero_point);
          return FALSE;
        }
    }
  else
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the output must be an int32 tensor, "
                   "a float tensor or a uint8/int8 tensor quantized per tensor, not %s",
                   piq_dtype_describe (ydt));
      return FALSE;
    }
  piq_quantizer_get_engine (self, &eng);
  piq_tensor_to_engine_quant (a, &aq);
  if (bias != NULL)
    piq_tensor_to_engine (bias, &bv);
  shape = piq_tensor_get_shape (a, &n_dims);
  if (!piq_engine_matmul_int (&eng, &aq, shape, n_dims, weights->packed,
                              bias != NULL ? &bv : NULL, &out, &e))
    {
      piq_set_engine_error (error, &e);
      return FALSE;
    }
  if (out.kind == PIQ_MM_OUT_CODES)
    return piq_tensor_set_quantized (y, yf, out.scale, out.zero_point, 0, NULL, NULL, error);
  return TRUE;
}

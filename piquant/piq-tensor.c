/* piq-tensor.c: a buffer of elements that the library owns or wraps
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piq-tensor.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"
#include "simd/piq-convert-private.h"
#include "simd/piq-formats-private.h"

/**
 * PiqTensor:
 *
 * A one-dimensional buffer of @n-elements elements of one [enum@Piq.Dtype]:
 * float data to quantize, or packed quantized data with the [class@Piq.Params]
 * that produced it.
 *
 * Tensors keep bulk data on the C side: results go into a tensor that can be
 * reused across calls, ADD accumulates into it in place, and
 * [method@Piq.Tensor.get_bytes] hands out a #GBytes view without copying.
 * Storage the library allocates is aligned to 64 bytes.
 *
 * ```python
 * import numpy as np
 * from gi.repository import Piq
 * x = np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32)
 * src = Piq.Tensor.new_from_data(Piq.Dtype.F32, x.size, x.tobytes())
 * ```
 *
 * Since: 1.0
 */
struct _PiqTensor
{
  GObject     parent_instance;

  PiqDtype    dtype;
  guint64     n_elements;
  gsize       n_bytes;
  guint8     *data;
  gboolean    owned;        /* data came from posix_memalign */
  gboolean    writable;
  GBytes     *bytes;        /* wrapped, keeps data alive */
  PiqParams  *params;
  GBytes     *scales;       /* per-channel / per-block scales, as params' scale-dtype */
  GBytes     *zero_points;  /* per-channel / per-block int32 zero points (affine integers) */
};

G_DEFINE_FINAL_TYPE (PiqTensor, piq_tensor, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_DTYPE,
  PROP_N_ELEMENTS,
  PROP_N_BYTES,
  PROP_WRITABLE,
  PROP_PARAMS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
piq_tensor_finalize (GObject *object)
{
  PiqTensor *self = PIQ_TENSOR (object);

  if (self->owned)
    free (self->data);
  g_clear_pointer (&self->bytes, g_bytes_unref);
  g_clear_object (&self->params);
  g_clear_pointer (&self->scales, g_bytes_unref);
  g_clear_pointer (&self->zero_points, g_bytes_unref);
  G_OBJECT_CLASS (piq_tensor_parent_class)->finalize (object);
}

static void
piq_tensor_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  PiqTensor *self = PIQ_TENSOR (object);

  switch (prop_id)
    {
    case PROP_DTYPE:      g_value_set_enum (value, self->dtype); break;
    case PROP_N_ELEMENTS: g_value_set_uint64 (value, self->n_elements); break;
    case PROP_N_BYTES:    g_value_set_uint64 (value, self->n_bytes); break;
    case PROP_WRITABLE:   g_value_set_boolean (value, self->writable); break;
    case PROP_PARAMS:     g_value_set_object (value, self->params); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_tensor_set_property (GObject      *object,
                         guint         prop_id,
                         const GValue *value,
                         GParamSpec   *pspec)
{
  PiqTensor *self = PIQ_TENSOR (object);

  switch (prop_id)
    {
    case PROP_PARAMS: piq_tensor_set_params (self, g_value_get_object (value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_tensor_class_init (PiqTensorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  object_class->finalize = piq_tensor_finalize;
  object_class->get_property = piq_tensor_get_property;
  object_class->set_property = piq_tensor_set_property;

  /**
   * PiqTensor:dtype:
   *
   * The element type.
   *
   * Since: 1.0
   */
  properties[PROP_DTYPE] =
    g_param_spec_enum ("dtype", NULL, NULL, PIQ_TYPE_DTYPE, PIQ_DTYPE_F32, ro);

  /**
   * PiqTensor:n-elements:
   *
   * The number of elements.
   *
   * Since: 1.0
   */
  properties[PROP_N_ELEMENTS] =
    g_param_spec_uint64 ("n-elements", NULL, NULL, 0, G_MAXUINT64, 0, ro);

  /**
   * PiqTensor:n-bytes:
   *
   * The size of the data in bytes (sub-byte types round up).
   *
   * Since: 1.0
   */
  properties[PROP_N_BYTES] =
    g_param_spec_uint64 ("n-bytes", NULL, NULL, 0, G_MAXUINT64, 0, ro);

  /**
   * PiqTensor:writable:
   *
   * Whether the tensor can be a destination. Tensors wrapping a #GBytes are not.
   *
   * Since: 1.0
   */
  properties[PROP_WRITABLE] =
    g_param_spec_boolean ("writable", NULL, NULL, TRUE, ro);

  /**
   * PiqTensor:params:
   *
   * For quantized data, the parameters that produced it (set by
   * [method@Piq.Quantizer.quantize], or by the caller to wrap data quantized
   * elsewhere); %NULL for float data.
   *
   * Since: 1.0
   */
  properties[PROP_PARAMS] =
    g_param_spec_object ("params", NULL, NULL, PIQ_TYPE_PARAMS,
                         G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
piq_tensor_init (PiqTensor *self)
{
}

/* A tensor shell whose size is checked; data is attached by the constructors. */
static PiqTensor *
tensor_shell (PiqDtype   dtype,
              guint64    n_elements,
              GError   **error)
{
  PiqTensor *self;
  gsize n_bytes;

  if (!piq_dtype_get_size_for_n (dtype, n_elements, &n_bytes, error))
    return NULL;
  self = g_object_new (PIQ_TYPE_TENSOR, NULL);
  self->dtype = dtype;
  self->n_elements = n_elements;
  self->n_bytes = n_bytes;
  self->writable = TRUE;
  return self;
}

static gboolean
tensor_alloc (PiqTensor  *self,
              GError    **error)
{
  void *p = NULL;

  if (self->n_bytes == 0)
    return TRUE;
  /* Round up to whole cache lines so SIMD tails may read a full vector in bounds. */
  if (self->n_bytes > G_MAXSIZE - 63 ||
      posix_memalign (&p, 64, (self->n_bytes + 63) & ~(gsize) 63) != 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GSIZE_FORMAT
                   " bytes for %" G_GUINT64_FORMAT " %s elements", self->n_bytes,
                   self->n_elements, piq_dtype_describe (self->dtype));
      return FALSE;
    }
  self->data = p;
  self->owned = TRUE;
  return TRUE;
}

/**
 * piq_tensor_new: (constructor)
 * @dtype: the element type
 * @n_elements: the number of elements
 * @error: return location for a #GError
 *
 * Creates a tensor with 64-byte aligned, zero-filled storage.
 *
 * Returns: (transfer full) (nullable): a new tensor, or %NULL with
 *   %PIQ_ERROR_OVERFLOW or %PIQ_ERROR_NO_MEMORY
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new (PiqDtype   dtype,
                guint64    n_elements,
                GError   **error)
{
  g_autoptr(PiqTensor) self = NULL;

  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = tensor_shell (dtype, n_elements, error);
  if (self == NULL || !tensor_alloc (self, error))
    return NULL;
  if (self->n_bytes > 0)
    memset (self->data, 0, self->n_bytes);
  return g_steal_pointer (&self);
}

/**
 * piq_tensor_new_from_data: (constructor)
 * @dtype: the element type
 * @n_elements: the number of elements
 * @data: (array length=size) (element-type guint8): the elements, in the
 *   dtype's byte layout
 * @size: the size of @data in bytes; must be exactly the tensor's size
 * @error: return location for a #GError
 *
 * Creates a tensor holding a copy of @data. From Python a `bytes` object (for
 * example `ndarray.tobytes()`) reaches @data without a copy, so this costs one
 * copy in all.
 *
 * Returns: (transfer full) (nullable): a new tensor, or %NULL with an error
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_from_data (PiqDtype       dtype,
                          guint64        n_elements,
                          const guint8  *data,
                          gsize          size,
                          GError       **error)
{
  g_autoptr(PiqTensor) self = NULL;

  g_return_val_if_fail (data != NULL || size == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = tensor_shell (dtype, n_elements, error);
  if (self == NULL || !piq_tensor_set_data (self, data, size, error))
    return NULL;
  return g_steal_pointer (&self);
}

/**
 * piq_tensor_new_from_bytes: (constructor)
 * @dtype: the element type
 * @n_elements: the number of elements
 * @bytes: the elements, in the dtype's byte layout
 * @error: return location for a #GError
 *
 * Creates a read-only tensor that wraps @bytes without copying it. It can be a
 * source of every operation but not a destination.
 *
 * Returns: (transfer full) (nullable): a new tensor, or %NULL with
 *   %PIQ_ERROR_SIZE when @bytes is not exactly the size of the tensor
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_from_bytes (PiqDtype   dtype,
                           guint64    n_elements,
                           GBytes    *bytes,
                           GError   **error)
{
  g_autoptr(PiqTensor) self = NULL;
  gsize size;
  gconstpointer data;

  g_return_val_if_fail (bytes != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = tensor_shell (dtype, n_elements, error);
  if (self == NULL)
    return NULL;
  data = g_bytes_get_data (bytes, &size);
  if (size != self->n_bytes)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "bytes hold %" G_GSIZE_FORMAT " bytes, %" G_GUINT64_FORMAT " %s elements are %"
                   G_GSIZE_FORMAT " bytes", size, n_elements, piq_dtype_describe (dtype), self->n_bytes);
      return NULL;
    }
  self->bytes = g_bytes_ref (bytes);
  self->data = (guint8 *) data;
  self->writable = FALSE;
  return g_steal_pointer (&self);
}

/* 4-bit codes in bitsandbytes' order, as the tensor's parameters say. */
static int
high_nibble_first (PiqTensor *self)
{
  return self->params != NULL && piq_params_get_high_nibble_first (self->params);
}

/* Convert one double to the storage of element i of a tensor. */
static gboolean
store_value (PiqTensor  *self,
             guint64     i,
             double      v,
             GError    **error)
{
  const PiqDtypeInfo *info = piq_dtype_info (self->dtype);
  guint8 *d = self->data;

  if (info->is_float)
    {
      switch (self->dtype)
        {
        case PIQ_DTYPE_F32:  ((float *) d)[i] = (float) v; break;
        case PIQ_DTYPE_F64:  ((double *) d)[i] = v; break;
        case PIQ_DTYPE_BF16: ((guint16 *) d)[i] = piq_f32_to_bf16 ((float) v); break;
        default:             ((guint16 *) d)[i] = piq_f32_to_f16 ((float) v); break;
        }
      return TRUE;
    }

  if (info->kind == PIQ_KIND_CODE)
    {
      /* code formats: the value is the code itself (element i in the order of the
       * tensor's parameters: bitsandbytes' nibble order when they say so) */
      if (info->bits == 0)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE,
                       "%s tensors are blocks with a header: write their bytes", info->name);
          return FALSE;
        }
      if (v != floor (v) || v < 0 || v >= ldexp (1.0, (int) info->bits))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE,
                       "value %g at index %" G_GUINT64_FORMAT " is not a %s code", v, i, info->name);
          return FALSE;
        }
      {
        /* clear the field, then set it */
        int hf = high_nibble_first (self);
        guint64 field = (1u << MIN (info->bits, 9)) - 1;
        if (info->bits % 8 != 0)
          {
            guint64 off = i * info->bits;
            guint sh = hf ? ((i & 1) ? 0 : 4) : (guint) (off % 8);
            guint16 mask = (guint16) (field << sh);
            d[off / 8] &= (guint8) ~mask;
            if (mask >> 8)
              d[off / 8 + 1] &= (guint8) ~(mask >> 8);
          }
        piq_put_code (d, i, (int) info->bits, hf, (guint64) v);
      }
      return TRUE;
    }

  /* Integers: the value must be integral and in range. doubles above 2^53 are
   * all integral, so the comparison with the range is exact enough to decide. */
  if (v != floor (v) || v < (double) info->min || v > (double) info->max ||
      (v >= 0x1p64 || v < -0x1p63))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE,
                   "value %g at index %" G_GUINT64_FORMAT " is not a %s", v, i, info->name);
      return FALSE;
    }
  {
    guint64 u = v < 0 ? (guint64) (gint64) v : (guint64) v;
    switch (info->bits)
      {
      case 2:  d[i / 4] = (guint8) ((d[i / 4] & ~(3u << (i % 4 * 2))) | ((u & 3u) << (i % 4 * 2))); break;
      case 4:  d[i / 2] = (guint8) ((d[i / 2] & ~(15u << (i % 2 * 4))) | ((u & 15u) << (i % 2 * 4))); break;
      case 8:  d[i] = (guint8) u; break;
      case 16: ((guint16 *) d)[i] = (guint16) u; break;
      case 32: ((guint32 *) d)[i] = (guint32) u; break;
      default: ((guint64 *) d)[i] = u; break;
      }
  }
  return TRUE;
}

/**
 * piq_tensor_new_from_values: (constructor)
 * @dtype: the element type
 * @values: (array length=n_values): the values
 * @n_values: the number of values
 * @error: return location for a #GError
 *
 * Creates a tensor from a list of numbers, converted to @dtype (bf16 and f16
 * through binary32, rounding to nearest even; integer dtypes take integral
 * values in range). Bindings convert such a list element by element: use it for
 * small tensors and [ctor@Piq.Tensor.new_from_data] for bulk data.
 *
 * Returns: (transfer full) (nullable): a new tensor, or %NULL with
 *   %PIQ_ERROR_INVALID_VALUE
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_from_values (PiqDtype       dtype,
                            const double  *values,
                            gsize          n_values,
                            GError       **error)
{
  g_autoptr(PiqTensor) self = NULL;

  g_return_val_if_fail (values != NULL || n_values == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = piq_tensor_new (dtype, n_values, error);
  if (self == NULL)
    return NULL;
  for (gsize i = 0; i < n_values; i++)
    if (!store_value (self, i, values[i], error))
      return NULL;
  return g_steal_pointer (&self);
}

/**
 * piq_tensor_new_for_address: (constructor)
 * @dtype: the element type
 * @n_elements: the number of elements
 * @address: the address of the first byte of caller-owned memory
 * @size: the bytes available at @address
 * @writable: whether piquant may write there
 * @error: return location for a #GError
 *
 * Wraps memory the caller owns, without copying — for example a numpy array's
 * `ctypes.data`. This is unsafe: the caller promises that @size bytes at
 * @address stay valid, and are not written by anyone else while in use, for
 * as long as the tensor exists. piquant keeps no other reference to the memory.
 *
 * Returns: (transfer full) (nullable): a new tensor, or %NULL with
 *   %PIQ_ERROR_SIZE when @size is smaller than the tensor
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_for_address (PiqDtype   dtype,
                            guint64    n_elements,
                            guintptr   address,
                            gsize      size,
                            gboolean   writable,
                            GError   **error)
{
  g_autoptr(PiqTensor) self = NULL;

  g_return_val_if_fail (address != 0 || size == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = tensor_shell (dtype, n_elements, error);
  if (self == NULL)
    return NULL;
  if (size < self->n_bytes)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "%" G_GSIZE_FORMAT " bytes at the address, %" G_GUINT64_FORMAT " %s elements need %"
                   G_GSIZE_FORMAT, size, n_elements, piq_dtype_describe (dtype), self->n_bytes);
      return NULL;
    }
  self->data = (guint8 *) address;
  self->writable = writable;
  return g_steal_pointer (&self);
}

/**
 * piq_tensor_get_dtype:
 * @self: a tensor
 *
 * Gets [property@Piq.Tensor:dtype].
 *
 * Returns: the element type
 *
 * Since: 1.0
 */
PiqDtype
piq_tensor_get_dtype (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), PIQ_DTYPE_F32);
  return self->dtype;
}

/**
 * piq_tensor_get_n_elements:
 * @self: a tensor
 *
 * Gets [property@Piq.Tensor:n-elements].
 *
 * Returns: the number of elements
 *
 * Since: 1.0
 */
guint64
piq_tensor_get_n_elements (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return self->n_elements;
}

/**
 * piq_tensor_get_n_bytes:
 * @self: a tensor
 *
 * Gets [property@Piq.Tensor:n-bytes].
 *
 * Returns: the size of the data in bytes
 *
 * Since: 1.0
 */
gsize
piq_tensor_get_n_bytes (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return self->n_bytes;
}

/**
 * piq_tensor_is_writable:
 * @self: a tensor
 *
 * Gets [property@Piq.Tensor:writable].
 *
 * Returns: whether the tensor can be written
 *
 * Since: 1.0
 */
gboolean
piq_tensor_is_writable (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), FALSE);
  return self->writable;
}

/**
 * piq_tensor_get_data: (skip)
 * @self: a tensor
 * @size: (out) (optional): the size in bytes
 *
 * The tensor's storage, valid as long as the tensor.
 *
 * Returns: (transfer none) (nullable): the data, %NULL for an empty tensor
 *
 * Since: 1.0
 */
gconstpointer
piq_tensor_get_data (PiqTensor *self,
                     gsize     *size)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  if (size != NULL)
    *size = self->n_bytes;
  return self->data;
}

/**
 * piq_tensor_get_writable_data: (skip)
 * @self: a writable tensor
 * @size: (out) (optional): the size in bytes
 *
 * The tensor's storage, for writing.
 *
 * Returns: (transfer none) (nullable): the data, or %NULL for an empty or
 *   read-only tensor
 *
 * Since: 1.0
 */
gpointer
piq_tensor_get_writable_data (PiqTensor *self,
                              gsize     *size)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  if (size != NULL)
    *size = self->writable ? self->n_bytes : 0;
  return self->writable ? self->data : NULL;
}

/**
 * piq_tensor_get_bytes:
 * @self: a tensor
 *
 * A view of the tensor's data that shares its storage: no copy is made, and the
 * #GBytes keeps the tensor alive. The content changes when the tensor is written
 * again, so copy it (e.g. `bytes(view.get_data())` in Python) to keep a snapshot.
 *
 * Returns: (transfer full): the data as #GBytes
 *
 * Since: 1.0
 */
GBytes *
piq_tensor_get_bytes (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  if (self->n_bytes == 0)
    return g_bytes_new (NULL, 0);
  return g_bytes_new_with_free_func (self->data, self->n_bytes, g_object_unref,
                                     g_object_ref (self));
}

static gboolean
check_writable (PiqTensor  *self,
                GError    **error)
{
  if (self->writable)
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_READ_ONLY, "the %s tensor of %" G_GUINT64_FORMAT
               " elements is read-only", piq_dtype_describe (self->dtype), self->n_elements);
  return FALSE;
}

/**
 * piq_tensor_set_data:
 * @self: a writable tensor
 * @data: (array length=size) (element-type guint8): the new content
 * @size: the size of @data; must equal [property@Piq.Tensor:n-bytes]
 * @error: return location for a #GError
 *
 * Copies @data into the tensor, reusing its storage.
 *
 * Returns: %TRUE on success; %FALSE with %PIQ_ERROR_SIZE or %PIQ_ERROR_READ_ONLY
 *
 * Since: 1.0
 */
gboolean
piq_tensor_set_data (PiqTensor     *self,
                     const guint8  *data,
                     gsize          size,
                     GError       **error)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), FALSE);
  g_return_val_if_fail (data != NULL || size == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (size != self->n_bytes)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "data holds %" G_GSIZE_FORMAT " bytes, %" G_GUINT64_FORMAT " %s elements are %"
                   G_GSIZE_FORMAT " bytes", size, self->n_elements, piq_dtype_describe (self->dtype),
                   self->n_bytes);
      return FALSE;
    }
  if (!check_writable (self, error))
    return FALSE;
  if (self->data == NULL && !tensor_alloc (self, error))
    return FALSE;
  if (size > 0)
    memcpy (self->data, data, size);
  return TRUE;
}

/**
 * piq_tensor_get_value:
 * @self: a tensor
 * @index: an element index, less than [property@Piq.Tensor:n-elements]
 *
 * Reads one element as a double: float types exactly, integer types as their
 * integer value (sub-byte types unpacked, signed ones sign-extended; 64-bit
 * values beyond 2^53 rounded), code formats as their code (element i of the
 * bit stream; NaN for the ggml block types). The quantized code, not the
 * dequantized value.
 *
 * Returns: the element
 *
 * Since: 1.0
 */
double
piq_tensor_get_value (PiqTensor *self,
                      guint64    index)
{
  const PiqDtypeInfo *info;
  const guint8 *d;
  guint64 u;

  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0.0);
  g_return_val_if_fail (index < self->n_elements, 0.0);

  info = piq_dtype_info (self->dtype);
  d = self->data;
  switch (self->dtype)
    {
    case PIQ_DTYPE_F32:  return ((const float *) d)[index];
    case PIQ_DTYPE_F64:  return ((const double *) d)[index];
    case PIQ_DTYPE_BF16: return piq_bf16_to_f32 (((const guint16 *) d)[index]);
    case PIQ_DTYPE_F16:  return piq_f16_to_f32 (((const guint16 *) d)[index]);
    default: break;
    }
  if (info->kind == PIQ_KIND_CODE)
    return info->bits == 0 ? NAN : (double) piq_get_code (d, index, (int) info->bits,
                                                          high_nibble_first (self));
  switch (info->bits)
    {
    case 2:  u = (d[index / 4] >> (index % 4 * 2)) & 3u; break;
    case 4:  u = (d[index / 2] >> (index % 2 * 4)) & 15u; break;
    case 8:  u = d[index]; break;
    case 16: u = ((const guint16 *) d)[index]; break;
    case 32: u = ((const guint32 *) d)[index]; break;
    default: u = ((const guint64 *) d)[index]; break;
    }
  if (info->is_signed && info->bits < 64 && (u >> (info->bits - 1)) & 1u)
    return (double) ((gint64) u - ((gint64) 1 << info->bits));
  if (info->is_signed)
    return (double) (gint64) u;
  return (double) u;
}

/**
 * piq_tensor_to_values:
 * @self: a tensor
 * @n_values: (out): the number of values
 *
 * Reads every element as a double, as [method@Piq.Tensor.get_value] does. Meant
 * for small tensors and tests: bindings convert the result element by element.
 *
 * Returns: (array length=n_values) (transfer full): the values
 *
 * Since: 1.0
 */
double *
piq_tensor_to_values (PiqTensor *self,
                      gsize     *n_values)
{
  double *values;

  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  g_return_val_if_fail (n_values != NULL, NULL);
  g_return_val_if_fail (self->n_elements <= G_MAXSIZE / sizeof (double), NULL);

  values = g_new (double, MAX (self->n_elements, 1));
  for (guint64 i = 0; i < self->n_elements; i++)
    values[i] = piq_tensor_get_value (self, i);
  *n_values = self->n_elements;
  return values;
}

/**
 * piq_tensor_fill:
 * @self: a writable tensor
 * @value: the value
 * @error: return location for a #GError
 *
 * Sets every element to @value, converted as in [ctor@Piq.Tensor.new_from_values].
 * Useful to reset an accumulator before a series of ADD dequantizations.
 *
 * Returns: %TRUE on success; %FALSE with %PIQ_ERROR_READ_ONLY or
 *   %PIQ_ERROR_INVALID_VALUE, the tensor unchanged
 *
 * Since: 1.0
 */
gboolean
piq_tensor_fill (PiqTensor  *self,
                 double      value,
                 GError    **error)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_writable (self, error) || self->n_elements == 0)
    return self->writable;
  /* Element 0 validates the value (an error leaves it unchanged); then the whole
   * buffer is cleared so that a sub-byte tensor's padding bits end up zero. */
  if (!store_value (self, 0, value, error))
    return FALSE;
  memset (self->data, 0, self->n_bytes);
  for (guint64 i = 0; i < self->n_elements; i++)
    store_value (self, i, value, NULL);
  return TRUE;
}

/**
 * piq_tensor_get_params:
 * @self: a tensor
 *
 * Gets [property@Piq.Tensor:params].
 *
 * Returns: (transfer none) (nullable): the parameters of quantized data
 *
 * Since: 1.0
 */
PiqParams *
piq_tensor_get_params (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  return self->params;
}

/**
 * piq_tensor_set_params:
 * @self: a tensor
 * @params: (nullable): parameters describing the quantized data
 *
 * Attaches parameters to quantized data, for example to dequantize a buffer
 * quantized elsewhere. The tensor keeps a reference, not a copy.
 *
 * Since: 1.0
 */
void
piq_tensor_set_params (PiqTensor *self,
                       PiqParams *params)
{
  g_return_if_fail (PIQ_IS_TENSOR (self));
  g_return_if_fail (params == NULL || PIQ_IS_PARAMS (params));

  if (g_set_object (&self->params, params))
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PARAMS]);
}

/**
 * piq_tensor_get_scales:
 * @self: a tensor
 *
 * The per-channel or per-block scales of a quantized tensor, one per block in
 * the storage of its parameters' [property@Piq.Params:scale-dtype] (f32 or f16
 * in host byte order, or E8M0 bytes). Set by [method@Piq.Quantizer.quantize].
 *
 * Returns: (transfer full) (nullable): the scales, or %NULL if there are none
 *
 * Since: 1.0
 */
GBytes *
piq_tensor_get_scales (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  return self->scales != NULL ? g_bytes_ref (self->scales) : NULL;
}

/**
 * piq_tensor_set_scales:
 * @self: a tensor
 * @scales: (nullable): the scales, or %NULL to drop them
 *
 * Attaches per-channel or per-block scales, e.g. to dequantize data quantized
 * elsewhere. Their size is checked against the parameters when the tensor is
 * dequantized (%PIQ_ERROR_SIZE).
 *
 * Since: 1.0
 */
void
piq_tensor_set_scales (PiqTensor *self,
                       GBytes    *scales)
{
  g_return_if_fail (PIQ_IS_TENSOR (self));

  if (scales != NULL)
    g_bytes_ref (scales);
  g_clear_pointer (&self->scales, g_bytes_unref);
  self->scales = scales;
}

/**
 * piq_tensor_get_zero_points:
 * @self: a tensor
 *
 * The per-channel or per-block zero points of an affine integer tensor, one
 * int32 per block in host byte order.
 *
 * Returns: (transfer full) (nullable): the zero points, or %NULL if there are none
 *
 * Since: 1.0
 */
GBytes *
piq_tensor_get_zero_points (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  return self->zero_points != NULL ? g_bytes_ref (self->zero_points) : NULL;
}

/**
 * piq_tensor_set_zero_points:
 * @self: a tensor
 * @zero_points: (nullable): int32 zero points, or %NULL to drop them
 *
 * Attaches per-channel or per-block zero points (see
 * [method@Piq.Tensor.set_scales]).
 *
 * Since: 1.0
 */
void
piq_tensor_set_zero_points (PiqTensor *self,
                            GBytes    *zero_points)
{
  g_return_if_fail (PIQ_IS_TENSOR (self));

  if (zero_points != NULL)
    g_bytes_ref (zero_points);
  g_clear_pointer (&self->zero_points, g_bytes_unref);
  self->zero_points = zero_points;
}

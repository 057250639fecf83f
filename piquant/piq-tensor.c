/* piq-tensor.c: a buffer of elements that the library owns or wraps
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piq-tensor.h"
#include "piq-dtype.h"
#include "piq-tensor-private.h"
#include "piq-format-private.h"
#include "piq-dtype-private.h"
#include "piq-enum-types.h"
#include "piq-error.h"
#include "simd/piq-convert-private.h"
#include "simd/piq-formats-private.h"

#if defined(G_OS_UNIX) && defined(__linux__)
# include <sys/mman.h>
#endif
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
/* Storage of at least this many bytes is mapped on its own, 2 MiB aligned, and
 * offered to transparent huge pages: the kernel hands out pages already zero, and a
 * 2 MiB page costs one fault instead of 512. Zero-filling 109 MB with posix_memalign
 * and memset took 0.5–0.6 s on the development VM (page faults, not bandwidth);
 * mapped this way, filling it took 25 ms. */
# define HUGE_MIN  ((gsize) 4 << 20)
# define HUGE_PAGE ((gsize) 2 << 20)
#endif

/**
 * PiqTensor:
 *
 * A buffer of @n-elements elements of one [enum@Piq.Dtype] with a shape of
 * up to `PIQ_MAX_DIMS` dimensions: float data to quantize, or packed
 * quantized codes with the [class@Piq.Format] that says what they mean and
 * the scales and zero points that produced them.
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
  guint       n_dims;
  guint64     shape[PIQ_MAX_DIMS];
  gsize       row_stride;   /* bytes between rows of a strided float tensor; 0: packed */
  guint64     n_elements;
  gsize       n_bytes;      /* from data to the end of the last element */
  guint8     *data;
  gboolean    owned;        /* data came from posix_memalign, or was mapped */
  gsize       mapped;       /* bytes mapped at data (mmap), 0 for posix_memalign */
  gboolean    writable;
  GBytes     *bytes;        /* wrapped, keeps data alive */
  PiqFormat  *format;       /* quantized tensors: what the bytes mean (immutable) */
  double      scale;        /* per-tensor formats */
  gint64      zero_point;
  guint64     seed;         /* the stochastic seed that produced the codes, 0 for nearest */
  GBytes     *scales;       /* per-channel / per-block scales, as the format's scale-dtype */
  GBytes     *zero_points;  /* per-channel / per-block int32 zero points (affine integers) */
};

G_DEFINE_FINAL_TYPE (PiqTensor, piq_tensor, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_DTYPE,
  PROP_N_ELEMENTS,
  PROP_N_BYTES,
  PROP_WRITABLE,
  PROP_FORMAT,
  PROP_N_DIMS,
  PROP_ROW_STRIDE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
piq_tensor_finalize (GObject *object)
{
  PiqTensor *self = PIQ_TENSOR (object);

#ifdef HUGE_MIN
  if (self->mapped)
    munmap (self->data, self->mapped);
  else
#endif
  if (self->owned)
    free (self->data);
  g_clear_pointer (&self->bytes, g_bytes_unref);
  g_clear_object (&self->format);
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
    case PROP_FORMAT:     g_value_set_object (value, self->format); break;
    case PROP_N_DIMS:     g_value_set_uint (value, self->n_dims); break;
    case PROP_ROW_STRIDE: g_value_set_uint64 (value, self->row_stride); break;
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
   * PiqTensor:format:
   *
   * For quantized data, the format that gives its bytes their meaning (set
   * by [method@Piq.Quantizer.quantize] or [ctor@Piq.Tensor.new_quantized]);
   * %NULL for float data and for raw integer buffers.
   *
   * Since: 1.0
   */
  properties[PROP_FORMAT] =
    g_param_spec_object ("format", NULL, NULL, PIQ_TYPE_FORMAT, ro);

  /**
   * PiqTensor:n-dims:
   *
   * The number of dimensions (1 to %PIQ_MAX_DIMS); see [method@Piq.Tensor.get_shape].
   *
   * Since: 1.0
   */
  properties[PROP_N_DIMS] =
    g_param_spec_uint ("n-dims", NULL, NULL, 1, PIQ_MAX_DIMS, 1, ro);

  /**
   * PiqTensor:row-stride:
   *
   * The bytes from one row (the last axis) to the next of a strided float
   * tensor; 0 for a packed tensor.
   *
   * Since: 1.0
   */
  properties[PROP_ROW_STRIDE] =
    g_param_spec_uint64 ("row-stride", NULL, NULL, 0, G_MAXUINT64, 0, ro);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
piq_tensor_init (PiqTensor *self)
{
}

/* A tensor shell whose shape and size are checked; data is attached by the
 * constructors. A row stride (float tensors only) spaces the rows. */
static PiqTensor *
tensor_shell (PiqDtype        dtype,
              const guint64  *shape,
              guint           n_dims,
              gsize           row_stride,
              GError        **error)
{
  PiqTensor *self;
  PiqEngineError e;
  guint64 n;
  gsize n_bytes;

  if (!piq_engine_check_shape (shape, n_dims, &n, &e) || !piq_engine_dtype_size (dtype, n, &n_bytes, &e))
    {
      piq_set_engine_error (error, &e);
      return NULL;
    }
  if (row_stride != 0)
    {
      const PiqDtypeInfo *info = piq_dtype_info (dtype);
      guint64 cols = shape[n_dims - 1], rows = cols ? n / cols : 0;
      gsize row_bytes = (gsize) (cols * info->bits / 8);

      if (info->kind != PIQ_KIND_FLOAT)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "only float tensors have a row "
                       "stride; %s data is packed", info->name);
          return NULL;
        }
      if (row_stride < row_bytes)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "a row stride of %" G_GSIZE_FORMAT
                       " bytes is shorter than a row of %" G_GUINT64_FORMAT " %s (%" G_GSIZE_FORMAT
                       " bytes)", row_stride, cols, info->name, row_bytes);
          return NULL;
        }
      if (rows > 1 && row_stride != row_bytes)
        {
          if (!g_size_checked_mul (&n_bytes, rows - 1, row_stride) ||
              !g_size_checked_add (&n_bytes, n_bytes, row_bytes))
            {
              g_set_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW, "%" G_GUINT64_FORMAT " rows of %"
                           G_GSIZE_FORMAT " bytes do not fit in memory", rows, row_stride);
              return NULL;
            }
        }
      else
        row_stride = 0;
    }
  self = g_object_new (PIQ_TYPE_TENSOR, NULL);
  self->dtype = dtype;
  self->n_dims = n_dims;
  memcpy (self->shape, shape, n_dims * sizeof *shape);
  self->row_stride = row_stride;
  self->n_elements = n;
  self->n_bytes = n_bytes;
  self->writable = TRUE;
  return self;
}

#ifdef HUGE_MIN
/* @size bytes, 2 MiB aligned and zero, from their own mapping; NULL if it fails. */
static void *
map_zeroed (gsize size)
{
  guint8 *p, *start;
  gsize head, tail;

  if (size > G_MAXSIZE - 2 * HUGE_PAGE)
    return NULL;
  size = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  p = mmap (NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  start = (guint8 *) (((guintptr) p + HUGE_PAGE - 1) & ~(guintptr) (HUGE_PAGE - 1));
  head = (gsize) (start - p);
  tail = HUGE_PAGE - head;
  if (head > 0)
    munmap (p, head);
  if (tail > 0)
    munmap (start + size, tail);
  /* advice only: without huge pages the mapping is still zero and aligned */
  (void) madvise (start, size, MADV_HUGEPAGE);
  return start;
}
#endif

/* Storage for n_bytes, 64-byte aligned; *zeroed tells whether it is already zero
 * (large tensors come from their own mapping, which is). */
static gboolean
tensor_alloc (PiqTensor  *self,
              gboolean   *zeroed,
              GError    **error)
{
  void *p = NULL;

  if (zeroed != NULL)
    *zeroed = FALSE;
  if (self->n_bytes == 0)
    return TRUE;
#ifdef HUGE_MIN
  if (self->n_bytes >= HUGE_MIN && (p = map_zeroed (self->n_bytes)) != NULL)
    {
      self->data = p;
      self->owned = TRUE;
      self->mapped = (self->n_bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
      if (zeroed != NULL)
        *zeroed = TRUE;
      return TRUE;
    }
#endif
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
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  return piq_tensor_new_shaped (dtype, &n_elements, 1, error);
}

/**
 * piq_tensor_new_shaped:
 * @dtype: the element type
 * @shape: (array length=n_dims): the dimensions, outermost first
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @error: return location for a #GError
 *
 * Allocates a zero-filled packed tensor of @shape (row-major).
 *
 * Returns: (transfer full) (nullable): the tensor, or %NULL with
 *   %PIQ_ERROR_SIZE, %PIQ_ERROR_OVERFLOW or %PIQ_ERROR_NO_MEMORY
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_shaped (PiqDtype        dtype,
                       const guint64  *shape,
                       guint           n_dims,
                       GError        **error)
{
  g_autoptr(PiqTensor) self = NULL;
  gboolean zeroed;

  g_return_val_if_fail (shape != NULL || n_dims == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = tensor_shell (dtype, shape, n_dims, 0, error);
  if (self == NULL || !tensor_alloc (self, &zeroed, error))
    return NULL;
  if (self->n_bytes > 0 && !zeroed)
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

  self = tensor_shell (dtype, &n_elements, 1, 0, error);
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

  self = tensor_shell (dtype, &n_elements, 1, 0, error);
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

/**
 * piq_tensor_new_strided:
 * @dtype: a float dtype
 * @shape: (array length=n_dims): the dimensions, outermost first
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @bytes: the storage, not copied
 * @offset: the byte offset of the first element in @bytes
 * @row_stride: the bytes from one row (last axis) to the next; 0 or the
 *   packed row size for packed rows
 * @error: return location for a #GError
 *
 * Wraps rows inside a larger buffer without copying, e.g. a sub-matrix: row
 * r starts at `offset + r · row_stride`. The tensor is read-only and keeps
 * @bytes alive.
 *
 * Returns: (transfer full) (nullable): the tensor, or %NULL with
 *   %PIQ_ERROR_SIZE when @bytes is too short or %PIQ_ERROR_UNSUPPORTED for
 *   a stride on a non-float dtype
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_strided (PiqDtype        dtype,
                        const guint64  *shape,
                        guint           n_dims,
                        GBytes         *bytes,
                        gsize           offset,
                        gsize           row_stride,
                        GError        **error)
{
  g_autoptr(PiqTensor) self = NULL;
  gsize size;
  const guint8 *data;

  g_return_val_if_fail (shape != NULL || n_dims == 0, NULL);
  g_return_val_if_fail (bytes != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = tensor_shell (dtype, shape, n_dims, row_stride, error);
  if (self == NULL)
    return NULL;
  data = g_bytes_get_data (bytes, &size);
  if (offset > size || size - offset < self->n_bytes)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "bytes hold %" G_GSIZE_FORMAT " bytes; %" G_GSIZE_FORMAT " from offset %"
                   G_GSIZE_FORMAT " are needed", size, self->n_bytes, offset);
      return NULL;
    }
  self->bytes = g_bytes_ref (bytes);
  self->data = data != NULL ? (guint8 *) data + offset : NULL;   /* an empty GBytes has no data */
  self->writable = FALSE;
  return g_steal_pointer (&self);
}

/* 4-bit codes in bitsandbytes' order, as the tensor's format says. */
static int
high_nibble_first (PiqTensor *self)
{
  return self->format != NULL && piq_format_get_high_nibble_first (self->format);
}

/* Byte offset of float element i (strided tensors space their rows). */
static gsize
float_offset (PiqTensor *self, guint64 i, gsize esize)
{
  guint64 cols = self->shape[self->n_dims - 1];

  if (self->row_stride == 0 || cols == 0)
    return (gsize) (i * esize);
  return (gsize) (i / cols * self->row_stride + i % cols * esize);
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

  if (info->kind == PIQ_KIND_FLOAT)
    {
      guint8 *p = d + float_offset (self, i, info->bits / 8);
      float f = (float) v;
      guint16 h;
      switch (self->dtype)
        {
        case PIQ_DTYPE_F32:  memcpy (p, &f, 4); break;
        case PIQ_DTYPE_F64:  memcpy (p, &v, 8); break;
        case PIQ_DTYPE_BF16: h = piq_f32_to_bf16 (f); memcpy (p, &h, 2); break;
        default:             h = piq_f32_to_f16 (f); memcpy (p, &h, 2); break;
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
      case 16: { guint16 w = (guint16) u; memcpy (d + i * 2, &w, 2); } break;
      case 32: { guint32 w = (guint32) u; memcpy (d + i * 4, &w, 4); } break;
      default: memcpy (d + i * 8, &u, 8); break;
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
 * piq_tensor_new_for_address:
 * @dtype: the element type
 * @shape: (array length=n_dims): the dimensions, outermost first
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @address: the address of the first element, e.g. numpy's `a.ctypes.data`
 * @size: the bytes available at @address
 * @row_stride: the bytes from one row to the next (float dtypes); 0 for
 *   packed rows
 * @writable: whether operations may write to the memory
 * @error: return location for a #GError
 *
 * Wraps memory the caller owns, without copying it. This is unsafe: the
 * tensor keeps no reference to the memory, so the caller must keep it
 * alive and unmoved for the tensor's whole life.
 *
 * From Python, use `Piq.Tensor.from_array(a)` of piquant's PyGObject
 * overrides instead: it stores the array on the tensor's Python wrapper, and
 * PyGObject keeps a wrapper that carries attributes alive for as long as C
 * holds a reference to the tensor, so the array lives as long as the tensor.
 * A binding that calls this function directly must do the same.
 *
 * Returns: (transfer full) (nullable): the tensor, or %NULL with
 *   %PIQ_ERROR_SIZE when @size is too small
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_for_address (PiqDtype        dtype,
                            const guint64  *shape,
                            guint           n_dims,
                            guintptr        address,
                            gsize           size,
                            gsize           row_stride,
                            gboolean        writable,
                            GError        **error)
{
  g_autoptr(PiqTensor) self = NULL;

  g_return_val_if_fail (shape != NULL || n_dims == 0, NULL);
  g_return_val_if_fail (address != 0 || size == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  self = tensor_shell (dtype, shape, n_dims, row_stride, error);
  if (self == NULL)
    return NULL;
  if (size < self->n_bytes)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "%" G_GSIZE_FORMAT " bytes at the address, %" G_GUINT64_FORMAT " %s elements need %"
                   G_GSIZE_FORMAT, size, self->n_elements, piq_dtype_describe (dtype), self->n_bytes);
      return NULL;
    }
  if (self->n_bytes > 0 && address == 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "a NULL address for %" G_GSIZE_FORMAT " bytes",
                   self->n_bytes);
      return NULL;
    }
  self->data = (guint8 *) address;
  self->writable = writable;
  return g_steal_pointer (&self);
}

static gint64
implied_zero_point (PiqFormat *format)
{
  const PiqDtypeInfo *info = piq_dtype_info (piq_format_get_dtype (format));

  if (piq_format_has_zero_points (format) || info->kind != PIQ_KIND_INT)
    return 0;
  return piq_symmetric_zp (info->min, info->max);
}

/**
 * piq_tensor_new_quantized:
 * @format: the format
 * @shape: (array length=n_dims): the dimensions, outermost first
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @error: return location for a #GError
 *
 * Allocates zeroed codes (and scales and zero points) of @format for a
 * tensor of @shape: the destination of [method@Piq.Quantizer.quantize],
 * reusable from call to call.
 *
 * Returns: (transfer full) (nullable): the tensor, or %NULL when the format
 *   does not apply to the shape
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_quantized (PiqFormat      *format,
                          const guint64  *shape,
                          guint           n_dims,
                          GError        **error)
{
  g_autoptr(PiqTensor) self = NULL;
  gsize codes, scales, zero_points;
  gboolean zeroed;

  g_return_val_if_fail (PIQ_IS_FORMAT (format), NULL);
  g_return_val_if_fail (shape != NULL || n_dims == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!piq_format_get_sizes (format, shape, n_dims, &codes, &scales, &zero_points, error))
    return NULL;
  self = tensor_shell (piq_format_get_dtype (format), shape, n_dims, 0, error);
  if (self == NULL)
    return NULL;
  self->n_bytes = codes;     /* ggml rows of partial blocks are padded to whole blocks */
  if (!tensor_alloc (self, &zeroed, error))
    return NULL;
  if (codes > 0 && !zeroed)
    memset (self->data, 0, codes);
  /* no codes yet: scale 1 and the format's implied zero point until quantize sets them */
  if (!piq_tensor_set_quantized (self, format, 1.0, implied_zero_point (format), 0, NULL, NULL,
                                 error))
    return NULL;
  if (scales > 0 || zero_points > 0)
    {
      guint8 *s = g_try_malloc0 (MAX (scales, 1)), *z = g_try_malloc0 (MAX (zero_points, 1));
      if (s == NULL || z == NULL)
        {
          g_free (s);
          g_free (z);
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GSIZE_FORMAT
                       " bytes of scales", scales + zero_points);
          return NULL;
        }
      self->scales = scales ? g_bytes_new_take (s, scales) : (g_free (s), NULL);
      self->zero_points = zero_points ? g_bytes_new_take (z, zero_points) : (g_free (z), NULL);
    }
  return g_steal_pointer (&self);
}

/**
 * piq_tensor_new_quantized_from_bytes:
 * @format: the format the data was quantized in
 * @shape: (array length=n_dims): the dimensions, outermost first
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @codes: the codes, not copied
 * @scales: (nullable): the per-channel or per-block scales, in the format's
 *   scale dtype
 * @zero_points: (nullable): their int32 zero points (affine integers)
 * @scale: the per-tensor scale (per-tensor formats; ignored otherwise and
 *   then must be 1)
 * @zero_point: the per-tensor zero point (affine per-tensor integers; else
 *   the implied one: 0, or the middle of an unsigned range)
 * @error: return location for a #GError
 *
 * Wraps data quantized elsewhere (a file, another process) as a read-only
 * quantized tensor. Every part is checked against the format and shape.
 *
 * Returns: (transfer full) (nullable): the tensor, or %NULL with an error
 *   naming the part that does not fit
 *
 * Since: 1.0
 */
PiqTensor *
piq_tensor_new_quantized_from_bytes (PiqFormat      *format,
                                     const guint64  *shape,
                                     guint           n_dims,
                                     GBytes         *codes,
                                     GBytes         *scales,
                                     GBytes         *zero_points,
                                     double          scale,
                                     gint64          zero_point,
                                     GError        **error)
{
  g_autoptr(PiqTensor) self = NULL;
  gsize need_codes, need_scales, need_zps, have;

  g_return_val_if_fail (PIQ_IS_FORMAT (format), NULL);
  g_return_val_if_fail (shape != NULL || n_dims == 0, NULL);
  g_return_val_if_fail (codes != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!piq_format_get_sizes (format, shape, n_dims, &need_codes, &need_scales, &need_zps, error))
    return NULL;
  self = tensor_shell (piq_format_get_dtype (format), shape, n_dims, 0, error);
  if (self == NULL)
    return NULL;
  have = g_bytes_get_size (codes);
  if (have != need_codes ||
      (need_scales ? scales == NULL || g_bytes_get_size (scales) != need_scales : scales != NULL) ||
      (need_zps ? zero_points == NULL || g_bytes_get_size (zero_points) != need_zps
                : zero_points != NULL))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE,
                   "%s: the codes, scales and zero points hold %" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT
                   " and %" G_GSIZE_FORMAT " bytes; the format and shape need %" G_GSIZE_FORMAT
                   ", %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT, piq_dtype_describe (self->dtype),
                   have, scales ? g_bytes_get_size (scales) : 0,
                   zero_points ? g_bytes_get_size (zero_points) : 0, need_codes, need_scales,
                   need_zps);
      return NULL;
    }
  if (!piq_tensor_set_quantized (self, format, scale, zero_point, 0, scales, zero_points, error))
    return NULL;
  self->bytes = g_bytes_ref (codes);
  self->data = (guint8 *) g_bytes_get_data (codes, NULL);
  self->n_bytes = need_codes;
  self->writable = FALSE;
  return g_steal_pointer (&self);
}

gboolean
piq_tensor_set_quantized (PiqTensor  *self,
                          PiqFormat  *format,
                          double      scale,
                          gint64      zero_point,
                          guint64     seed,
                          GBytes     *scales,
                          GBytes     *zero_points,
                          GError    **error)
{
  const PiqEngineFormat *f = piq_format_peek (format);
  PiqEngineError e;

  if (!piq_engine_check_format (f, &e))
    {
      piq_set_engine_error (error, &e);
      return FALSE;
    }
  if (f->granularity == PIQ_GRANULARITY_TENSOR && piq_dtype_info (f->dtype)->bits != 0)
    {
      const PiqDtypeInfo *info = piq_dtype_info (f->dtype);
      gint64 implied = info->kind == PIQ_KIND_INT ? piq_symmetric_zp (info->min, info->max) : 0;
      if (!isfinite (scale) || !(scale > 0.0))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE,
                       "scale %g is not a finite positive number", scale);
          return FALSE;
        }
      if (piq_engine_has_zero_points (f)
          ? zero_point < info->min || (zero_point > 0 && (guint64) zero_point > info->max)
          : zero_point != implied)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT,
                       "zero point %" G_GINT64_FORMAT " does not fit %s%s", zero_point,
                       piq_engine_has_zero_points (f) ? "the range of " : "the implied zero point of ",
                       info->name);
          return FALSE;
        }
    }
  else
    {
      scale = 1.0;
      zero_point = 0;
    }
  g_set_object (&self->format, format);
  self->scale = scale;
  self->zero_point = zero_point;
  self->seed = seed;
  g_clear_pointer (&self->scales, g_bytes_unref);
  g_clear_pointer (&self->zero_points, g_bytes_unref);
  self->scales = scales ? g_bytes_ref (scales) : NULL;
  self->zero_points = zero_points ? g_bytes_ref (zero_points) : NULL;
  return TRUE;
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
 * piq_tensor_get_address:
 * @self: a tensor
 * @size: (out) (optional): the size in bytes, from the address to the end of
 *   the last element
 *
 * The address of the tensor's storage as an integer, for bindings that build
 * a view of it without a copy (numpy's `__array_interface__`, Python's buffer
 * protocol) where the language cannot hold a C pointer. The memory stays valid
 * as long as the tensor: whoever uses the address must keep a reference to
 * @self for as long as it does. The storage is never moved or replaced while
 * the tensor lives; writes through the address are allowed only when
 * [method@Piq.Tensor.is_writable] says so.
 *
 * Returns: the address, or 0 for an empty tensor
 *
 * Since: 1.0
 */
guintptr
piq_tensor_get_address (PiqTensor *self,
                        gsize     *size)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  if (size != NULL)
    *size = self->data != NULL ? self->n_bytes : 0;
  return (guintptr) self->data;
}

static guintptr
bytes_address (GBytes *bytes,
               gsize  *size)
{
  gsize n = 0;
  gconstpointer data = bytes != NULL ? g_bytes_get_data (bytes, &n) : NULL;

  if (size != NULL)
    *size = data != NULL ? n : 0;
  return (guintptr) data;
}

/**
 * piq_tensor_get_scales_address:
 * @self: a tensor
 * @size: (out) (optional): the size in bytes of the scales
 *
 * The address of the #GBytes that [method@Piq.Tensor.get_scales] returns,
 * as an integer, for bindings that view the scales without a copy. Quantizing
 * into @self again gives it new scales and releases the old ones, so a user of
 * the address must hold a reference to that #GBytes (call
 * [method@Piq.Tensor.get_scales] first and keep its result), not only to @self.
 * The scales are shared: never write through the address.
 *
 * Returns: the address, or 0 if the tensor has no scales
 *
 * Since: 1.0
 */
guintptr
piq_tensor_get_scales_address (PiqTensor *self,
                               gsize     *size)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return bytes_address (self->scales, size);
}

/**
 * piq_tensor_get_zero_points_address:
 * @self: a tensor
 * @size: (out) (optional): the size in bytes of the zero points
 *
 * The address of the #GBytes that [method@Piq.Tensor.get_zero_points]
 * returns, as an integer; the rules of
 * [method@Piq.Tensor.get_scales_address] apply.
 *
 * Returns: the address, or 0 if the tensor has no zero points
 *
 * Since: 1.0
 */
guintptr
piq_tensor_get_zero_points_address (PiqTensor *self,
                                    gsize     *size)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return bytes_address (self->zero_points, size);
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

  if (self->row_stride != 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "set_data writes packed bytes; this "
                   "tensor's rows are %" G_GSIZE_FORMAT " bytes apart", self->row_stride);
      return FALSE;
    }
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
  if (self->data == NULL && !tensor_alloc (self, NULL, error))
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
  if (info->kind == PIQ_KIND_FLOAT)
    {
      const guint8 *p = d + float_offset (self, index, info->bits / 8);
      float f;
      double v;
      guint16 h;
      switch (self->dtype)
        {
        case PIQ_DTYPE_F32:  memcpy (&f, p, 4); return f;
        case PIQ_DTYPE_F64:  memcpy (&v, p, 8); return v;
        case PIQ_DTYPE_BF16: memcpy (&h, p, 2); return piq_bf16_to_f32 (h);
        default:             memcpy (&h, p, 2); return piq_f16_to_f32 (h);
        }
    }
  if (info->kind == PIQ_KIND_CODE)
    return info->bits == 0 ? NAN : (double) piq_get_code (d, index, (int) info->bits,
                                                          high_nibble_first (self));
  switch (info->bits)
    {
    case 2:  u = (d[index / 4] >> (index % 4 * 2)) & 3u; break;
    case 4:  u = (d[index / 2] >> (index % 2 * 4)) & 15u; break;
    case 8:  u = d[index]; break;
    case 16: { guint16 w; memcpy (&w, d + index * 2, 2); u = w; } break;
    case 32: { guint32 w; memcpy (&w, d + index * 4, 4); u = w; } break;
    default: memcpy (&u, d + index * 8, 8); break;
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
 * @error: return location for a #GError
 *
 * Reads every element as with [method@Piq.Tensor.get_value], in row-major
 * order. For small tensors: bulk data is better read through
 * [method@Piq.Tensor.get_bytes].
 *
 * Returns: (transfer full) (array length=n_values) (nullable): the values,
 *   or %NULL with %PIQ_ERROR_NO_MEMORY when they do not fit in memory
 *
 * Since: 1.0
 */
double *
piq_tensor_to_values (PiqTensor  *self,
                      gsize      *n_values,
                      GError    **error)
{
  double *values;
  gsize bytes;

  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  g_return_val_if_fail (n_values != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (self->n_elements > G_MAXSIZE / sizeof (double) ||
      !g_size_checked_mul (&bytes, MAX (self->n_elements, 1), sizeof (double)) ||
      (values = g_try_malloc (bytes)) == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GUINT64_FORMAT
                   " doubles", self->n_elements);
      return NULL;
    }
  for (guint64 i = 0; i < self->n_elements; i++)
    values[i] = piq_tensor_get_value (self, i);
  *n_values = (gsize) self->n_elements;
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
  /* Element 0 validates the value (an error leaves it unchanged); then a packed
   * buffer is cleared so that a sub-byte tensor's padding bits end up zero (a strided
   * one is written element by element: the gaps between rows are not the tensor's). */
  if (!store_value (self, 0, value, error))
    return FALSE;
  if (self->row_stride == 0)
    memset (self->data, 0, self->n_bytes);
  for (guint64 i = 0; i < self->n_elements; i++)
    store_value (self, i, value, NULL);
  return TRUE;
}

/**
 * piq_tensor_get_format:
 * @self: a tensor
 *
 * The format of quantized data: what its bytes mean. Formats are
 * immutable, so nothing done to other objects changes it.
 *
 * Returns: (transfer none) (nullable): the format, or %NULL for float data
 *   and raw integer buffers
 *
 * Since: 1.0
 */
PiqFormat *
piq_tensor_get_format (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  return self->format;
}

/**
 * piq_tensor_get_scale:
 * @self: a tensor
 *
 * The per-tensor scale of quantized data in a per-tensor format (1 for
 * other formats and float data).
 *
 * Returns: the scale
 *
 * Since: 1.0
 */
double
piq_tensor_get_scale (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 1.0);
  return self->format != NULL ? self->scale : 1.0;
}

/**
 * piq_tensor_get_zero_point:
 * @self: a tensor
 *
 * The per-tensor zero point of quantized data in a per-tensor format: the
 * affine one, or the implied one of symmetric integers (0, or the middle of
 * an unsigned range); 0 otherwise.
 *
 * Returns: the zero point
 *
 * Since: 1.0
 */
gint64
piq_tensor_get_zero_point (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return self->format != NULL ? self->zero_point : 0;
}

/**
 * piq_tensor_get_seed:
 * @self: a tensor
 *
 * The stochastic rounding seed that produced the codes (the one drawn when
 * the recipe's seed was 0), so the call can be reproduced; 0 for nearest
 * rounding and for data not quantized by piquant.
 *
 * Returns: the seed
 *
 * Since: 1.0
 */
guint64
piq_tensor_get_seed (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return self->seed;
}

/**
 * piq_tensor_get_scales:
 * @self: a tensor
 *
 * The per-channel or per-block scales of quantized data, one per channel or
 * block in the format's [property@Piq.Format:scale-dtype] (f32 or f16 in host
 * byte order, or E8M0 bytes; double-quantized ones in their compressed
 * layout).
 *
 * Returns: (transfer full) (nullable): the scales, or %NULL if there are none
 *
 * Since: 1.0
 */
GBytes *
piq_tensor_get_scales (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  return self->scales ? g_bytes_ref (self->scales) : NULL;
}

/**
 * piq_tensor_get_zero_points:
 * @self: a tensor
 *
 * The int32 zero points of affine per-channel or per-block integers, one per
 * scale, in host byte order.
 *
 * Returns: (transfer full) (nullable): the zero points, or %NULL if there are none
 *
 * Since: 1.0
 */
GBytes *
piq_tensor_get_zero_points (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  return self->zero_points ? g_bytes_ref (self->zero_points) : NULL;
}

/**
 * piq_tensor_get_n_dims:
 * @self: a tensor
 *
 * The number of dimensions.
 *
 * Returns: the number of dimensions
 *
 * Since: 1.0
 */
guint
piq_tensor_get_n_dims (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return self->n_dims;
}

/**
 * piq_tensor_get_shape:
 * @self: a tensor
 * @n_dims: (out) (optional): the number of dimensions
 *
 * The tensor's dimensions, outermost first.
 *
 * Returns: (transfer none) (array length=n_dims): the dimensions, outermost first
 *
 * Since: 1.0
 */
const guint64 *
piq_tensor_get_shape (PiqTensor *self,
                      guint     *n_dims)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), NULL);
  if (n_dims != NULL)
    *n_dims = self->n_dims;
  return self->shape;
}

/**
 * piq_tensor_get_dim:
 * @self: a tensor
 * @axis: an axis; negative values count from the last
 *
 * The length of one axis.
 *
 * Returns: the length of @axis
 *
 * Since: 1.0
 */
guint64
piq_tensor_get_dim (PiqTensor *self,
                    int        axis)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  if (axis < 0)
    axis += (int) self->n_dims;
  g_return_val_if_fail (axis >= 0 && axis < (int) self->n_dims, 0);
  return self->shape[axis];
}

/**
 * piq_tensor_get_row_stride:
 * @self: a tensor
 *
 * The bytes between rows of a strided tensor.
 *
 * Returns: the bytes between rows of a strided float tensor, 0 when packed
 *
 * Since: 1.0
 */
gsize
piq_tensor_get_row_stride (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), 0);
  return self->row_stride;
}

/**
 * piq_tensor_is_contiguous:
 * @self: a tensor
 *
 * Whether the elements are packed.
 *
 * Returns: %TRUE when the elements are packed, without gaps between rows
 *
 * Since: 1.0
 */
gboolean
piq_tensor_is_contiguous (PiqTensor *self)
{
  g_return_val_if_fail (PIQ_IS_TENSOR (self), FALSE);
  return self->row_stride == 0;
}

/**
 * piq_tensor_reshape:
 * @self: a packed float tensor
 * @shape: (array length=n_dims): the new dimensions
 * @n_dims: the number of dimensions (1 to %PIQ_MAX_DIMS)
 * @error: return location for a #GError
 *
 * Gives the tensor a new shape with the same element count. Quantized
 * tensors keep their shape (it is part of what their bytes mean), and so do
 * strided ones.
 *
 * Returns: %TRUE on success; %FALSE with %PIQ_ERROR_SIZE or
 *   %PIQ_ERROR_UNSUPPORTED, the shape unchanged
 *
 * Since: 1.0
 */
gboolean
piq_tensor_reshape (PiqTensor      *self,
                    const guint64  *shape,
                    guint           n_dims,
                    GError        **error)
{
  PiqEngineError e;
  guint64 n;

  g_return_val_if_fail (PIQ_IS_TENSOR (self), FALSE);
  g_return_val_if_fail (shape != NULL || n_dims == 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!piq_engine_check_shape (shape, n_dims, &n, &e))
    {
      piq_set_engine_error (error, &e);
      return FALSE;
    }
  if (self->format != NULL || self->row_stride != 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "a %s tensor keeps its shape",
                   self->format != NULL ? "quantized" : "strided");
      return FALSE;
    }
  if (n != self->n_elements)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "the new shape has %" G_GUINT64_FORMAT
                   " elements, the tensor %" G_GUINT64_FORMAT, n, self->n_elements);
      return FALSE;
    }
  self->n_dims = n_dims;
  memcpy (self->shape, shape, n_dims * sizeof *shape);
  return TRUE;
}

void
piq_tensor_to_engine (PiqTensor     *self,
                      PiqEngineView *v)
{
  v->dtype = self->dtype;
  v->n_dims = self->n_dims;
  memcpy (v->shape, self->shape, sizeof v->shape);
  v->row_stride = self->row_stride;
  v->data = self->data;
  v->size = self->n_bytes;
}

void
piq_tensor_to_engine_quant (PiqTensor      *self,
                            PiqEngineQuant *q)
{
  memset (q, 0, sizeof *q);
  q->f = *piq_format_peek (self->format);
  q->codes = self->data;
  q->codes_size = self->n_bytes;
  q->scales = self->scales ? g_bytes_get_data (self->scales, &q->scales_size) : NULL;
  q->zero_points = self->zero_points ? g_bytes_get_data (self->zero_points, &q->zero_points_size)
                                     : NULL;
  q->scale = self->scale;
  q->zero_point = self->zero_point;
}

/* piq-dtype.c: what each PiqDtype is
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "piq-dtype-private.h"
#include "piq-error.h"
#include "piq-dtype.h"
#include "piq-enum-types.h"
#include "simd/piq-formats-private.h"

/* The format table (piq-format-table.c) is indexed by PiqDtype values; the kernel
 * layer numbers integers from PIQ_DTYPE_UINT2 and code formats from
 * PIQ_DTYPE_FP8_E4M3. Every named code has its PiqDtype below the scale types. */
#define PIQ_CODE_DTYPE_(N, n, i, ...) G_STATIC_ASSERT (PIQ_DTYPE_##N == 32 + i);
PIQ_CODE_TYPES (PIQ_CODE_DTYPE_)
#undef PIQ_CODE_DTYPE_
#define PIQ_INT_DTYPE_(N, n, i, ...) G_STATIC_ASSERT (PIQ_DTYPE_##N == 16 + i);
PIQ_INT_TYPES (PIQ_INT_DTYPE_)
#undef PIQ_INT_DTYPE_
G_STATIC_ASSERT (32 + PIQ_N_CODE <= PIQ_DTYPE_E8M0);

const char *
piq_dtype_describe (PiqDtype dtype)
{
  static GPrivate buf_key = G_PRIVATE_INIT (g_free);
  const PiqDtypeInfo *info = piq_dtype_info (dtype);
  char *buf;

  if (info != NULL)
    return info->name;
  buf = g_strdup_printf ("dtype %d", (int) dtype);
  g_private_replace (&buf_key, buf);
  return buf;
}

/**
 * piq_dtype_is_float:
 * @dtype: a dtype
 *
 * Whether @dtype is a floating-point type (a source of quantization and a
 * destination of dequantization).
 *
 * Returns: %TRUE for f32, f64, bf16 and f16
 *
 * Since: 1.0
 */
gboolean
piq_dtype_is_float (PiqDtype dtype)
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);
  return info != NULL && info->kind == PIQ_KIND_FLOAT;
}

/**
 * piq_dtype_is_quantized:
 * @dtype: a dtype
 *
 * Whether @dtype is a quantized type: an integer type or a code format
 * (FP8, MX elements, NF4, binary, the ggml blocks).
 *
 * Returns: %TRUE for the integer types and the code formats
 *
 * Since: 1.0
 */
gboolean
piq_dtype_is_quantized (PiqDtype dtype)
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);
  return info != NULL && (info->kind == PIQ_KIND_INT || info->kind == PIQ_KIND_CODE);
}

/**
 * piq_dtype_get_bits:
 * @dtype: a dtype
 *
 * The storage size of one element in bits.
 *
 * Returns: the bits per element, 0 for an unknown dtype and for the ggml
 *   block types, whose 32 elements share a header (use
 *   [func@Piq.Dtype.get_size_for_n])
 *
 * Since: 1.0
 */
guint
piq_dtype_get_bits (PiqDtype dtype)
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);
  return info != NULL ? info->bits : 0;
}

/**
 * piq_dtype_get_name:
 * @dtype: a dtype
 *
 * The short lower-case name of @dtype, as the `piquant` tool prints it
 * ("f32", "uint4").
 *
 * Returns: (nullable): the name, or %NULL for an unknown dtype
 *
 * Since: 1.0
 */
const char *
piq_dtype_get_name (PiqDtype dtype)
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);
  return info != NULL ? info->name : NULL;
}

/**
 * piq_dtype_from_name:
 * @name: a dtype name, as returned by [func@Piq.Dtype.get_name]
 * @dtype: (out): the dtype
 *
 * Looks up a dtype by its short name.
 *
 * Returns: %TRUE if @name names a dtype
 *
 * Since: 1.0
 */
gboolean
piq_dtype_from_name (const char *name,
                     PiqDtype   *dtype)
{
  g_return_val_if_fail (name != NULL, FALSE);

  gsize n;
  const PiqDtypeInfo *dtype_table = piq_dtype_table (&n);

  for (guint i = 0; i < n; i++)
    if (dtype_table[i].name != NULL && g_ascii_strcasecmp (dtype_table[i].name, name) == 0)
      {
        if (dtype != NULL)
          *dtype = (PiqDtype) i;
        return TRUE;
      }
  return FALSE;
}

/**
 * piq_dtype_get_range:
 * @dtype: a quantized dtype
 * @min: (out) (optional): the smallest value
 * @max: (out) (optional): the largest value
 *
 * The range of integer values of an integer dtype, e.g. [-8, 7] for int4.
 *
 * Returns: %TRUE if @dtype is an integer dtype
 *
 * Since: 1.0
 */
gboolean
piq_dtype_get_range (PiqDtype  dtype,
                     gint64   *min,
                     guint64  *max)
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);

  if (info == NULL || info->kind != PIQ_KIND_INT)
    return FALSE;
  if (min != NULL)
    *min = info->min;
  if (max != NULL)
    *max = info->max;
  return TRUE;
}

/**
 * piq_dtype_get_size_for_n:
 * @dtype: a dtype
 * @n_elements: a number of elements
 * @n_bytes: (out) (optional): the bytes @n_elements of @dtype occupy
 * @error: return location for a #GError
 *
 * The size of a buffer of @n_elements elements of @dtype; sub-byte types round
 * up to whole bytes, block types to whole blocks.
 *
 * Returns: %TRUE on success; %FALSE with %PIQ_ERROR_OVERFLOW when the size does
 *   not fit in a `gsize`, or %PIQ_ERROR_UNSUPPORTED for an unknown dtype
 *
 * Since: 1.0
 */
gboolean
piq_dtype_get_size_for_n (PiqDtype   dtype,
                          guint64    n_elements,
                          gsize     *n_bytes,
                          GError   **error)
{
  PiqEngineError e;

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!piq_engine_dtype_size (dtype, n_elements, n_bytes, &e))
    {
      piq_set_engine_error (error, &e);
      return FALSE;
    }
  return TRUE;
}

void
piq_set_engine_error (GError         **error,
                      const PiqEngineError *e)
{
  g_set_error_literal (error, PIQ_ERROR, e->code, e->message);
}

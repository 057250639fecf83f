/* piq-dtype.c: what each PiqDtype is
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "piq-dtype-private.h"
#include "piq-error.h"
#include "piq-params.h"
#include "simd/piq-kernel-list.h"
#include "simd/piq-formats-private.h"

/* The one dtype table: everything else (names, sizes, ranges, kernel slots) reads it. */
static const PiqDtypeInfo dtype_table[] = {
#define FLOAT_ROW(N, n, i, ctype) \
  [PIQ_DTYPE_##N] = { #n, sizeof (ctype) * 8, TRUE, TRUE, 0, 0, PIQ_F_##N, PIQ_KIND_FLOAT, 0, 0 },
  PIQ_FLOAT_TYPES (FLOAT_ROW)
#undef FLOAT_ROW
#define INT_ROW(N, n, i, bits, sgn) \
  [PIQ_DTYPE_##N] = { #n, bits, FALSE, sgn, \
                      sgn ? -(gint64) (G_MAXUINT64 >> (65 - bits)) - 1 : 0, \
                      G_MAXUINT64 >> (64 - bits + sgn), PIQ_I_##N, PIQ_KIND_INT, 0, 0 },
  PIQ_INT_TYPES (INT_ROW)
#undef INT_ROW
  /* code formats: bits 0 marks ggml's self-contained 32-element blocks */
#define CODE_ROW(N, n, i, bits, kind) \
  [PIQ_DTYPE_##N] = { #n, bits, FALSE, TRUE, 0, 0, PIQ_C_##N, PIQ_KIND_CODE, \
                      (bits) ? 0 : 32, (bits) ? 0 : PIQ_DTYPE_##N == PIQ_DTYPE_Q8_0 ? 34 : 18 },
  PIQ_CODE_TYPES (CODE_ROW)
#undef CODE_ROW
  [PIQ_DTYPE_E8M0] = { "e8m0", 8, FALSE, FALSE, 0, 0, 0, PIQ_KIND_SCALE, 0, 0 },
};

G_STATIC_ASSERT (PIQ_DTYPE_UINT2 - 16 == PIQ_I_UINT2 && PIQ_DTYPE_INT64 - 16 == PIQ_I_INT64);
G_STATIC_ASSERT (PIQ_DTYPE_FP8_E4M3 - 32 == PIQ_C_FP8_E4M3 && PIQ_DTYPE_BFP8 - 32 == PIQ_C_BFP8);

const PiqDtypeInfo *
piq_dtype_info (PiqDtype dtype)
{
  if ((guint) dtype >= G_N_ELEMENTS (dtype_table) || dtype_table[dtype].name == NULL)
    return NULL;
  return &dtype_table[dtype];
}

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
  return info != NULL && info->is_float;
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

  for (guint i = 0; i < G_N_ELEMENTS (dtype_table); i++)
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
  const PiqDtypeInfo *info = piq_dtype_info (dtype);
  guint64 size;

  if (info == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "%s is not a piquant dtype",
                   piq_dtype_describe (dtype));
      return FALSE;
    }
  gboolean overflow;

  if (info->bits == 0)
    {
      guint64 blocks = n_elements / info->block_elems + (n_elements % info->block_elems != 0);
      overflow = blocks > G_MAXSIZE / info->block_bytes;
      size = overflow ? 0 : blocks * info->block_bytes;
    }
  else
    {
      /* n·bits/8 rounded up, without forming n·bits */
      guint64 whole = n_elements / 8 * info->bits, rest = (n_elements % 8 * info->bits + 7) / 8;
      overflow = n_elements / 8 > G_MAXUINT64 / info->bits || whole > G_MAXSIZE - rest;
      size = overflow ? 0 : whole + rest;
    }

  if (overflow)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW,
                   "%" G_GUINT64_FORMAT " %s elements need more than %" G_GSIZE_FORMAT " bytes",
                   n_elements, info->name, (gsize) G_MAXSIZE);
      return FALSE;
    }
  if (n_bytes != NULL)
    *n_bytes = (gsize) size;
  return TRUE;
}

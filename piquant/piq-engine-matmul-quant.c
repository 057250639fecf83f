/* piq-engine-matmul-quant.c: products whose input is quantized too, under the float policy
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the rest of the engine (docs/matmul.md, "Both operands quantized").
 *
 * Y = A · Wᵀ (+ bias) with A quantized in any format (FP8 per tensor or per row, the MX
 * formats, MSFP and BFP, NF4, integers …) and W packed for the float policy. The
 * definition is the float policy's product of decode (A) and W: A's rows are decoded
 * to binary32 exactly as dequantize decodes them, then multiplied in the float
 * policy's fixed order, so the bytes equal those of matmul (dequantize (A), W) for
 * every thread count and kernel table.
 *
 * A is decoded a block of rows at a time into one scratch buffer (never whole), and
 * each block is one float-policy product (which splits its panels and rows over the
 * threads): the weights are decoded once per block of A_BLOCK_BYTES of A, a cost of
 * at most 1/64 of the block's multiply-adds.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "piq-engine-matmul-private.h"
#include "simd/piq-formats-private.h"

/* Binary32 bytes of A decoded at a time; a block holds at least 64 rows, and always a
 * multiple of 8 (so every block starts on a byte, whatever the code width). */
#define A_BLOCK_BYTES ((size_t) 1 << 21)
#define A_BLOCK_MIN_ROWS 64

/* A as a matrix [m, k] whose rows decode by piq_engine_rows_quant: the format unchanged
 * except that a per-channel axis is that of the matrix. Channels must be rows of the
 * matrix (axis 0 of a matrix) or its columns (the last axis). */
static int
as_matrix (const PiqEngineQuant *a, unsigned a_dims, PiqEngineQuant *out, PiqEngineError *e)
{
  *out = *a;
  if (a->f.granularity == GRAN_CHANNEL)
    {
      int axis = a->f.axis < 0 ? a->f.axis + (int) a_dims : a->f.axis;
      if (axis == (int) a_dims - 1)
        out->f.axis = 1;
      else if (axis == 0 && a_dims == 2)
        out->f.axis = 0;
      else
        return failf (e, PIQ_E_UNSUPPORTED, "an input with one scale per channel of axis %d of "
                      "%u dimensions does not decode row by row: quantize it per tensor, per "
                      "block, per row of a matrix (axis 0 of [M, in]) or per input channel "
                      "(the last axis)", a->f.axis, a_dims);
    }
  return 1;
}

int
piq_engine_matmul_decoded (const PiqEngine *eng, const PiqEngineQuant *a,
                           const uint64_t *a_shape, unsigned a_dims, const PiqEnginePacked *w,
                           const PiqEngineView *bias, const PiqEngineView *y, int add,
                           PiqEngineError *e)
{
  const PiqDtypeInfo *ai;
  PiqEngineQuant am;
  uint64_t n_a, m, k = w->k, n = w->n, ny, nb = 0, block_rows;
  size_t a_codes, a_scales, a_zps, y_span, b_span = 0, y_esize, ldy;
  float *xf = NULL, *dq = NULL;
  int ok = 0;

  if (w->activation != PIQ_ACT_FLOAT)
    return failf (e, PIQ_E_UNSUPPORTED, "a quantized input in any format multiplies weights "
                  "packed for float activations");
  ai = piq_dtype_info (a->f.dtype);
  if (ai == NULL || ai->kind == PIQ_KIND_FLOAT || ai->kind == PIQ_KIND_SCALE)
    return failf (e, PIQ_E_UNSUPPORTED, "the input must be quantized, not %s",
                  ai != NULL ? ai->name : "this dtype");
  if (!piq_engine_check_format (&a->f, e))
    return 0;
  if (a_dims < 1 || a_shape[a_dims - 1] != k)
    return failf (e, PIQ_E_SIZE, "the input's rows have %" PRIu64 " elements, the weights [%"
                  PRIu64 ", %" PRIu64 "] take %" PRIu64, a_dims ? a_shape[a_dims - 1] : 0, n, k,
                  k);
  if (!piq_engine_check_shape (a_shape, a_dims, &n_a, e) ||
      !piq_engine_sizes (&a->f, a_shape, a_dims, &a_codes, &a_scales, &a_zps, e))
    return 0;
  if (a->codes_size < a_codes || a->scales_size < a_scales || a->zero_points_size < a_zps ||
      (a_scales && a->scales == NULL) || (a_zps && a->zero_points == NULL))
    return failf (e, PIQ_E_SIZE, "the input holds fewer bytes than its shape needs");
  if (!as_matrix (a, a_dims, &am, e))
    return 0;
  m = n_a / k;

  /* the output and the bias, as the float policy checks them, and nothing over A */
  if (!piq_engine_float_view (y, "output", &ny, &y_span, e) ||
      (bias != NULL && !piq_engine_float_view (bias, "bias", &nb, &b_span, e)))
    return 0;
  if (y->n_dims != a_dims || y->shape[a_dims - 1] != n ||
      memcmp (y->shape, a_shape, (a_dims - 1) * sizeof a_shape[0]) != 0)
    return failf (e, PIQ_E_SIZE, "the output must have the input's shape with %" PRIu64
                  " (the weights' outputs) as its last extent", n);
  if (bias != NULL && (bias->n_dims != 1 || nb != n))
    return failf (e, PIQ_E_SIZE, "the bias must be a vector of %" PRIu64 " elements, one per "
                  "output, not %" PRIu64, n, nb);
  if (!piq_engine_no_overlap (y->data, y_span, "output", a->codes, a_codes, "input", e) ||
      !piq_engine_no_overlap (y->data, y_span, "output", a->scales, a_scales,
                              "input's scales", e) ||
      !piq_engine_no_overlap (y->data, y_span, "output", a->zero_points, a_zps,
                              "input's zero points", e) ||
      (bias != NULL &&
       !piq_engine_no_overlap (y->data, y_span, "output", bias->data, b_span, "bias", e)) ||
      !piq_engine_no_overlap (y->data, y_span, "output", w->q.codes, w->q.codes_size,
                              "weights", e) ||
      !piq_engine_no_overlap (y->data, y_span, "output", w->q.scales, w->q.scales_size,
                              "weights' scales", e) ||
      !piq_engine_no_overlap (y->data, y_span, "output", w->q.zero_points,
                              w->q.zero_points_size, "weights' zero points", e))
    return 0;
  if (m == 0)
    return 1;

  if (a->f.double_quant)
    {
      /* the compressed chunks of scales span rows: expanded once, as packing does */
      PiqEngineFormat plain = a->f;
      uint64_t shape2[2] = { m, k };
      size_t bytes;
      plain.double_quant = 0;
      if (!piq_engine_sizes (&plain, shape2, 2, NULL, &bytes, NULL, e) ||
          (dq = try_alloc (bytes / sizeof (float), sizeof (float), "the input's scales", e)) ==
          NULL)
        return 0;
      piq_dq_expand (a->scales, bytes / sizeof (float), dq);
      am.f = plain;
      am.scales = dq;
      am.scales_size = bytes;
    }

  block_rows = A_BLOCK_BYTES / sizeof (float) / k;
  block_rows = MAX (block_rows, (uint64_t) A_BLOCK_MIN_ROWS) / 8 * 8;
  block_rows = MIN (block_rows, m);
  if ((xf = try_alloc (block_rows * k, sizeof (float), "the input's decoded rows", e)) == NULL)
    goto done;
  y_esize = piq_dtype_info (y->dtype)->bits / 8;
  ldy = y->row_stride && m > 1 ? y->row_stride : (size_t) n * y_esize;

  /* Block by block: the first block's decode checks what only a decode checks (a
   * per-tensor scale) before anything is written, and the first product everything
   * else; the blocks after it are the same calls on other rows. */
  for (uint64_t r0 = 0; r0 < m; r0 += block_rows)
    {
      uint64_t rows = MIN (block_rows, m - r0), shape[2] = { rows, k };
      PiqEngineQuant sub;
      PiqEngineView xv = { DT_F32, 2, { rows, k }, 0, xf, (size_t) (rows * k * sizeof (float)) };
      PiqEngineView yv = { y->dtype, 2, { rows, n }, ldy, (const uint8_t *) y->data + r0 * ldy,
                           y->size - (size_t) r0 * ldy };

      if (!piq_engine_rows_quant (&am, m, k, r0, &sub, e) ||
          !piq_engine_dequantize (eng, &sub, shape, 2, &xv, 0, e) ||
          !piq_engine_matmul (eng, &xv, w, bias, &yv, add, e))
        goto done;
    }
  ok = 1;
done:
  free (xf);
  free (dq);
  return ok;
}

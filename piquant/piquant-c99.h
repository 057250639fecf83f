/* piquant-c99.h: pi-quant's C99 API, implemented by piquant
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The entry points, types and enumeration values of pi-quant's minimal C API
 * (`include/piquant.h` of PrimeIntellect-ai/pi-quant, the version with
 * `piquant_compute_quant_params_float32/_bfloat16` and the dtypes F32, BF16,
 * UINT2, UINT4, UINT8), over the same library as <piquant/piquant.h>. A program
 * written against pi-quant switches by changing its include line to
 * `#include <piquant/piquant-c99.h>` and its link flags to
 * `pkg-config --libs piquant-1.0`.
 *
 * This header is plain C99: it includes only <stddef.h> and <stdint.h>, needs
 * no GLib include path and may be included together with <piquant/piquant.h>.
 * It is not part of the GObject API: it is not introspected and has no
 * bindings.
 *
 * Where results differ from pi-quant (details in docs/pi-quant-migration.md):
 *
 * - Nearest rounding is ties-to-even (`nearbyint`, as PyTorch); pi-quant
 *   rounds ties away from zero. Only values whose `x / scale` is exactly
 *   halfway between two integers quantize differently.
 * - Stochastic rounding draws an independent uniform number for every element
 *   (a counter hash of a fresh per-call seed and the element index); pi-quant
 *   draws one threshold per call and shares it between all elements.
 * - Invalid input (see each function) never aborts the process, as pi-quant's
 *   assertions do: the call logs one warning (g_warning() in the "Piquant" log
 *   domain, never a critical) and returns without writing any output.
 * - Zero points outside the quantized type's range and scales that are not
 *   finite and positive are rejected; pi-quant accepts them.
 * - A context may be used by several threads at once; results never depend on
 *   the number of threads.
 *
 * piquant_compute_quant_params_float32() and _bfloat16() implement pi-quant's
 * rule exactly (min/max of the data, not widened to include 0; see the
 * function).
 */
#ifndef PIQUANT_C99_H
#define PIQUANT_C99_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with -fvisibility=hidden; like PIQ_AVAILABLE_IN_1_0 of
 * piq-version.h, this gives the entry points default visibility, without
 * requiring that header (and GLib). */
#if defined(_WIN32) || defined(__CYGWIN__)
# ifdef PIQUANT_COMPILATION
#  define _PIQUANT_C99_EXPORT __declspec(dllexport) extern
# else
#  define _PIQUANT_C99_EXPORT __declspec(dllimport) extern
# endif
#elif defined(__GNUC__) && __GNUC__ >= 4
# define _PIQUANT_C99_EXPORT __attribute__((visibility ("default"))) extern
#else
# define _PIQUANT_C99_EXPORT extern
#endif

/* Every symbol of this header is available since piquant 1.0. */
#define PIQUANT_C99_AVAILABLE_IN_1_0 _PIQUANT_C99_EXPORT

/* piquant_context_t:
 *
 * An opaque context: a piquant quantizer with its thread count. Create one
 * with piquant_context_create(), free it with piquant_context_destroy(). */
typedef struct piquant_context_t piquant_context_t;

/* piquant_round_mode_t:
 * @PIQUANT_NEAREST: round to nearest, ties to even (pi-quant: ties away)
 * @PIQUANT_STOCHASTIC: round up with probability equal to the fractional
 *   part, independently for every element (pi-quant: one threshold per call) */
typedef enum piquant_round_mode_t {
    PIQUANT_NEAREST    = 0,
    PIQUANT_STOCHASTIC = 1
} piquant_round_mode_t;

/* piquant_reduce_op_t:
 * @PIQUANT_REDUCE_OP_SET: `out[i] = dequantize(in[i])`
 * @PIQUANT_REDUCE_OP_ADD: `out[i] += dequantize(in[i])` */
typedef enum piquant_reduce_op_t {
    PIQUANT_REDUCE_OP_SET = 0,
    PIQUANT_REDUCE_OP_ADD = 1
} piquant_reduce_op_t;

/* piquant_dtype_t:
 * @PIQUANT_DTYPE_F32: IEEE 754 binary32
 * @PIQUANT_DTYPE_BF16: bfloat16, stored as uint16_t (the upper half of a binary32)
 * @PIQUANT_DTYPE_UINT2: 2-bit unsigned, 4 per byte, element 4k+i in bits 2i..2i+1 of byte k
 * @PIQUANT_DTYPE_UINT4: 4-bit unsigned, 2 per byte, element 2k in the low nibble of byte k
 * @PIQUANT_DTYPE_UINT8: 8-bit unsigned
 *
 * pi-quant's numbering, which differs from PiqDtype's. In a partial last byte
 * of a packed buffer the unused high bits are written as zero. */
typedef enum piquant_dtype_t {
    PIQUANT_DTYPE_F32   = 0,
    PIQUANT_DTYPE_BF16  = 1,

    PIQUANT_DTYPE_UINT2 = 2,
    PIQUANT_DTYPE_UINT4 = 3,
    PIQUANT_DTYPE_UINT8 = 4
} piquant_dtype_t;

/* piquant_context_create:
 * @num_threads: the threads a call may use; 0 uses every core available to
 *   the process, values above 1024 are treated as 1024
 *
 * Returns: a new context, never NULL */
PIQUANT_C99_AVAILABLE_IN_1_0
piquant_context_t *piquant_context_create (size_t num_threads);

/* piquant_context_destroy:
 * @ctx: (nullable): a context; NULL is ignored */
PIQUANT_C99_AVAILABLE_IN_1_0
void piquant_context_destroy (piquant_context_t *ctx);

/* piquant_quantize:
 * @ctx: a context
 * @in: @numel elements of @dtype_in (F32 or BF16)
 * @dtype_in: PIQUANT_DTYPE_F32 or PIQUANT_DTYPE_BF16
 * @out: room for @numel packed elements of @dtype_out: @numel bytes for UINT8,
 *   (@numel + 1) / 2 for UINT4, (@numel + 3) / 4 for UINT2; must not overlap @in
 * @dtype_out: PIQUANT_DTYPE_UINT2, _UINT4 or _UINT8
 * @numel: the number of elements
 * @scale: the scale, finite and positive, whose binary32 inverse is finite
 * @zero_point: the zero point, inside [0, 2^bits − 1] of @dtype_out
 * @mode: PIQUANT_NEAREST or PIQUANT_STOCHASTIC
 *
 * `out[i] = clamp(round(in[i] · (1.0f / scale)) + zero_point, 0, 2^bits − 1)`
 * in binary32 (docs/numerics.md): NaN gives the zero point, ±Inf the ends of
 * the range. Invalid arguments are logged and leave @out untouched. */
PIQUANT_C99_AVAILABLE_IN_1_0
void piquant_quantize (piquant_context_t    *ctx,
                       const void           *in,
                       piquant_dtype_t       dtype_in,
                       void                 *out,
                       piquant_dtype_t       dtype_out,
                       size_t                numel,
                       float                 scale,
                       int64_t               zero_point,
                       piquant_round_mode_t  mode);

/* piquant_dequantize:
 * @ctx: a context
 * @in: @numel packed elements of @dtype_in (sizes as for piquant_quantize())
 * @dtype_in: PIQUANT_DTYPE_UINT2, _UINT4 or _UINT8
 * @out: room for @numel elements of @dtype_out; must not overlap @in
 * @dtype_out: PIQUANT_DTYPE_F32 or PIQUANT_DTYPE_BF16
 * @numel: the number of elements
 * @scale: the scale the data was quantized with (as for piquant_quantize())
 * @zero_point: the zero point the data was quantized with
 * @op: PIQUANT_REDUCE_OP_SET or PIQUANT_REDUCE_OP_ADD
 *
 * `y = (float)(q − zero_point) · scale` in binary32, stored (SET) or added to
 * @out (ADD; one binary32 addition, then one rounding to bf16 for BF16
 * output, ties to even). Invalid arguments are logged and leave @out
 * untouched. */
PIQUANT_C99_AVAILABLE_IN_1_0
void piquant_dequantize (piquant_context_t    *ctx,
                         const void           *in,
                         piquant_dtype_t       dtype_in,
                         void                 *out,
                         piquant_dtype_t       dtype_out,
                         size_t                numel,
                         float                 scale,
                         int64_t               zero_point,
                         piquant_reduce_op_t   op);

/* piquant_compute_quant_params_float32:
 * @ctx: a context
 * @x: @n binary32 values, all finite
 * @n: the number of values, at least 1
 * @target_quant_dtype: PIQUANT_DTYPE_UINT2, _UINT4 or _UINT8
 * @out_scale: (out): the scale
 * @out_zero_point: (out): the zero point
 *
 * pi-quant's rule, computed exactly as pi-quant does: with rmin and rmax the
 * minimum and maximum of @x (the range is not widened to include 0), qmin = 0
 * and qmax = 2^bits − 1, if rmin == rmax the result is {1.0, qmax >> 1};
 * otherwise, in binary64, `scale = (rmax − rmin) / (qmax − qmin)` and
 * `zero_point = clamp(round_half_away(qmin − rmin / scale), qmin, qmax)`, and
 * the scale is returned rounded to binary32. The min/max reduction runs on the
 * context's threads and its result does not depend on their number.
 *
 * Empty or non-finite data, a float target type and NULL pointers are logged
 * and leave both outputs untouched. */
PIQUANT_C99_AVAILABLE_IN_1_0
void piquant_compute_quant_params_float32 (piquant_context_t *ctx,
                                           const float       *x,
                                           size_t             n,
                                           piquant_dtype_t    target_quant_dtype,
                                           float             *out_scale,
                                           int64_t           *out_zero_point);

/* piquant_compute_quant_params_bfloat16:
 * @x: @n bfloat16 values (the upper 16 bits of binary32 values), all finite
 *
 * As piquant_compute_quant_params_float32(), on bfloat16 data (each value is
 * widened exactly to binary32 first). */
PIQUANT_C99_AVAILABLE_IN_1_0
void piquant_compute_quant_params_bfloat16 (piquant_context_t *ctx,
                                            const uint16_t    *x,
                                            size_t             n,
                                            piquant_dtype_t    target_quant_dtype,
                                            float             *out_scale,
                                            int64_t           *out_zero_point);

#ifdef __cplusplus
}
#endif

#endif /* PIQUANT_C99_H */

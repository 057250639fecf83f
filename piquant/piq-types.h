/* piq-types.h: enumerations shared by the whole API
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(__PIQUANT_H_INSIDE__) && !defined(PIQUANT_COMPILATION)
#error "Only <piquant/piquant.h> can be included directly."
#endif

#include <glib.h>

G_BEGIN_DECLS

/**
 * PiqDtype:
 * @PIQ_DTYPE_F32: IEEE 754 binary32
 * @PIQ_DTYPE_F64: IEEE 754 binary64
 * @PIQ_DTYPE_BF16: bfloat16 (the upper half of a binary32)
 * @PIQ_DTYPE_F16: IEEE 754 binary16
 * @PIQ_DTYPE_UINT2: unsigned 2-bit integer, 4 per byte, element 4k+i in bits 2i..2i+1 of byte k
 * @PIQ_DTYPE_INT2: two's-complement 2-bit integer, packed as @PIQ_DTYPE_UINT2
 * @PIQ_DTYPE_UINT4: unsigned 4-bit integer, 2 per byte, element 2k in the low nibble of byte k
 * @PIQ_DTYPE_INT4: two's-complement 4-bit integer, packed as @PIQ_DTYPE_UINT4
 * @PIQ_DTYPE_UINT8: unsigned 8-bit integer
 * @PIQ_DTYPE_INT8: signed 8-bit integer
 * @PIQ_DTYPE_UINT16: unsigned 16-bit integer, host byte order
 * @PIQ_DTYPE_INT16: signed 16-bit integer, host byte order
 * @PIQ_DTYPE_UINT32: unsigned 32-bit integer, host byte order
 * @PIQ_DTYPE_INT32: signed 32-bit integer, host byte order
 * @PIQ_DTYPE_UINT64: unsigned 64-bit integer, host byte order
 * @PIQ_DTYPE_INT64: signed 64-bit integer, host byte order
 *
 * The element types piquant reads and writes.
 *
 * The numeric values are part of the ABI and never change: float types
 * are below 16, integer types from 16 on. In a packed sub-byte buffer the
 * unused high bits of a partial last byte are zero.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_DTYPE_F32    = 0,
  PIQ_DTYPE_F64    = 1,
  PIQ_DTYPE_BF16   = 2,
  PIQ_DTYPE_F16    = 3,

  PIQ_DTYPE_UINT2  = 16,
  PIQ_DTYPE_INT2   = 17,
  PIQ_DTYPE_UINT4  = 18,
  PIQ_DTYPE_INT4   = 19,
  PIQ_DTYPE_UINT8  = 20,
  PIQ_DTYPE_INT8   = 21,
  PIQ_DTYPE_UINT16 = 22,
  PIQ_DTYPE_INT16  = 23,
  PIQ_DTYPE_UINT32 = 24,
  PIQ_DTYPE_INT32  = 25,
  PIQ_DTYPE_UINT64 = 26,
  PIQ_DTYPE_INT64  = 27,
} PiqDtype;

/**
 * PiqRoundMode:
 * @PIQ_ROUND_NEAREST: round to the nearest integer, ties to even (as `nearbyint()`
 *   and `torch.quantize_per_tensor`)
 * @PIQ_ROUND_STOCHASTIC: round up with probability equal to the fractional part;
 *   the uniform number is a hash of (seed, element index), so results do not
 *   depend on the thread count or the SIMD level
 *
 * How a scaled value is rounded onto the integer grid.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_ROUND_NEAREST    = 0,
  PIQ_ROUND_STOCHASTIC = 1,
} PiqRoundMode;

/**
 * PiqReduceOp:
 * @PIQ_REDUCE_SET: overwrite the destination
 * @PIQ_REDUCE_ADD: add into the destination (`y += value`), as a ring
 *   all-reduce accumulates received chunks
 *
 * What dequantization does with the values already in the destination.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_REDUCE_SET = 0,
  PIQ_REDUCE_ADD = 1,
} PiqReduceOp;

/**
 * PiqScaleRule:
 * @PIQ_SCALE_RULE_MIN_MAX: affine: the data's [min, max] range (widened to
 *   include 0 unless [property@Piq.Params:include-zero] is false) spans the
 *   whole integer range, as PyTorch's MinMax observer computes it
 * @PIQ_SCALE_RULE_ABS_MAX: symmetric: `max(|x|)` maps to the end of the
 *   integer range; the zero point is 0 for signed types and the middle of the
 *   range for unsigned ones
 * @PIQ_SCALE_RULE_MEAN_STD: pi-quant's older rule: `scale = C·σ / type_max`
 *   with C = 12 for 8 bits and more, 2.7 for 4 bits and 1.4 for 2 bits,
 *   centred on the mean
 *
 * How [method@Piq.Quantizer.compute_params] derives a scale and a zero point
 * from data.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_SCALE_RULE_MIN_MAX  = 0,
  PIQ_SCALE_RULE_ABS_MAX  = 1,
  PIQ_SCALE_RULE_MEAN_STD = 2,
} PiqScaleRule;

/**
 * PiqSimdLevel:
 * @PIQ_SIMD_LEVEL_SCALAR: portable C, the reference of every kernel
 * @PIQ_SIMD_LEVEL_NEON: Arm Advanced SIMD (aarch64)
 * @PIQ_SIMD_LEVEL_SSE4_2: x86-64 SSE4.2
 * @PIQ_SIMD_LEVEL_AVX2: x86-64 AVX2 with FMA and F16C
 * @PIQ_SIMD_LEVEL_AVX512: x86-64 AVX-512 F, BW, VL and DQ
 * @PIQ_SIMD_LEVEL_AVX512_BF16: AVX-512 with the BF16 conversion instructions
 * @PIQ_SIMD_LEVEL_AVX512_FP16: AVX-512 with the FP16 instructions
 *
 * A family of kernels. Levels are ordered: capping a quantizer at a level
 * (see [property@Piq.Quantizer:max-simd-level]) allows that level and every
 * lower one.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_SIMD_LEVEL_SCALAR      = 0,
  PIQ_SIMD_LEVEL_NEON        = 10,
  PIQ_SIMD_LEVEL_SSE4_2      = 20,
  PIQ_SIMD_LEVEL_AVX2        = 30,
  PIQ_SIMD_LEVEL_AVX512      = 40,
  PIQ_SIMD_LEVEL_AVX512_BF16 = 41,
  PIQ_SIMD_LEVEL_AVX512_FP16 = 42,
} PiqSimdLevel;

G_END_DECLS

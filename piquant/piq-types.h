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
 * @PIQ_DTYPE_FP8_E4M3: OCP FP8 E4M3FN (bias 7, max 448, NaN 0x7F/0xFF, no Inf)
 * @PIQ_DTYPE_FP8_E5M2: OCP FP8 E5M2 (bias 15, max 57344, Inf 0x7C/0xFC)
 * @PIQ_DTYPE_FP6_E2M3: OCP MX FP6 E2M3 (max 7.5), 4 elements in 3 bytes
 * @PIQ_DTYPE_FP6_E3M2: OCP MX FP6 E3M2 (max 28), 4 elements in 3 bytes
 * @PIQ_DTYPE_FP4_E2M1: OCP MX FP4 E2M1 (max 6), 2 per byte
 * @PIQ_DTYPE_NF4: bitsandbytes 4-bit NormalFloat codes (scaled by the block absmax)
 * @PIQ_DTYPE_FP4_BNB: bitsandbytes 4-bit float codes (not OCP E2M1)
 * @PIQ_DTYPE_NF8: piquant's 8-bit NormalFloat codes (256 normal quantiles, docs/formats.md)
 * @PIQ_DTYPE_BINARY: 1-bit signs, bit j of byte j/8 (1 = non-negative), scaled by mean |x|
 * @PIQ_DTYPE_Q8_0: ggml Q8_0 blocks: f16 scale + 32 int8 (34 bytes per 32 elements)
 * @PIQ_DTYPE_Q4_0: ggml Q4_0 blocks: f16 scale + 32 4-bit codes (18 bytes per 32 elements)
 * @PIQ_DTYPE_BFP2: block floating point (MSFP): sign + 2-bit magnitude, 3 bits
 * @PIQ_DTYPE_BFP3: block floating point: sign + 3-bit magnitude, 4 bits (MSFP12 with a box of 16)
 * @PIQ_DTYPE_BFP4: block floating point: sign + 4-bit magnitude, 5 bits
 * @PIQ_DTYPE_BFP5: block floating point: sign + 5-bit magnitude, 6 bits
 * @PIQ_DTYPE_BFP6: block floating point: sign + 6-bit magnitude, 7 bits
 * @PIQ_DTYPE_BFP7: block floating point: sign + 7-bit magnitude, 8 bits (MSFP16 with a box of 16)
 * @PIQ_DTYPE_BFP8: block floating point: sign + 8-bit magnitude, 9 bits
 * @PIQ_DTYPE_E8M0: OCP MX shared scale 2^(E−127), 0xFF = NaN; a scale type only
 *
 * The element types piquant reads and writes.
 *
 * The numeric values are part of the ABI and never change: float types
 * are below 16, integer types from 16 on, code formats from 32 on, scale-only
 * types from 64 on. Sub-byte codes are a little-endian bit stream (element i at
 * bit i·bits); a partial last byte has its unused bits zero. See
 * [Formats](formats.html) for every layout.
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

  PIQ_DTYPE_FP8_E4M3 = 32,
  PIQ_DTYPE_FP8_E5M2 = 33,
  PIQ_DTYPE_FP6_E2M3 = 34,
  PIQ_DTYPE_FP6_E3M2 = 35,
  PIQ_DTYPE_FP4_E2M1 = 36,
  PIQ_DTYPE_NF4      = 37,
  PIQ_DTYPE_FP4_BNB  = 38,
  PIQ_DTYPE_NF8      = 39,
  PIQ_DTYPE_BINARY   = 40,
  PIQ_DTYPE_Q8_0     = 41,
  PIQ_DTYPE_Q4_0     = 42,
  PIQ_DTYPE_BFP2     = 43,
  PIQ_DTYPE_BFP3     = 44,
  PIQ_DTYPE_BFP4     = 45,
  PIQ_DTYPE_BFP5     = 46,
  PIQ_DTYPE_BFP6     = 47,
  PIQ_DTYPE_BFP7     = 48,
  PIQ_DTYPE_BFP8     = 49,

  PIQ_DTYPE_E8M0     = 64,
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
 * @PIQ_SCALE_RULE_MIN_MAX: affine integers: the data's [min, max] range (widened to
 *   include 0 unless [property@Piq.Recipe:include-zero] is false) spans the
 *   whole integer range, as PyTorch's MinMax observer computes it
 * @PIQ_SCALE_RULE_ABS_MAX: symmetric: `max(|x|)` maps to the end of the
 *   integer range; the zero point is 0 for signed types and the middle of the
 *   range for unsigned ones
 * @PIQ_SCALE_RULE_MEAN_STD: pi-quant's older rule: `scale = C·σ / type_max`
 *   with C = 12 for 8 bits and more, 2.7 for 4 bits and 1.4 for 2 bits,
 *   centred on the mean (per-tensor integers only)
 * @PIQ_SCALE_RULE_POW2_FLOOR: E8M0 scales, the OCP MX rule:
 *   `2^(floor(log2 amax) − emax_elem)`
 * @PIQ_SCALE_RULE_POW2_CEIL: E8M0 scales, one step up unless amax is a power of two
 * @PIQ_SCALE_RULE_POW2_EVEN: E8M0 scales, amax's mantissa rounded (half up) to
 *   the element's mantissa bits before the floor rule
 * @PIQ_SCALE_RULE_POW2_RCEIL: E8M0 scales, `2^ceil(log2(amax / max_elem))`
 *   (NVIDIA's rule: no element saturates)
 * @PIQ_SCALE_RULE_DEFAULT: the format's own rule: min/max for affine
 *   integers, abs-max for symmetric integers and the code formats, the
 *   floor rule for E8M0 scales
 *
 * How a scale and a zero point are derived from data: by
 * [method@Piq.Quantizer.compute_params] for a whole tensor, and by
 * [method@Piq.Quantizer.quantize] for each block or channel.
 *
 * A rule must apply to the format (see [Recipes](overview.html#recipes)):
 * min/max and mean/σ need affine integers, abs-max a symmetric format, the
 * `POW2` rules E8M0 scales ([property@Piq.Format:scale-dtype]); any other
 * pair is an error, never silently replaced.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_SCALE_RULE_MIN_MAX  = 0,
  PIQ_SCALE_RULE_ABS_MAX  = 1,
  PIQ_SCALE_RULE_MEAN_STD = 2,
  PIQ_SCALE_RULE_POW2_FLOOR = 3,
  PIQ_SCALE_RULE_POW2_CEIL  = 4,
  PIQ_SCALE_RULE_POW2_EVEN  = 5,
  PIQ_SCALE_RULE_POW2_RCEIL = 6,
  PIQ_SCALE_RULE_DEFAULT    = 7,
} PiqScaleRule;

/**
 * PiqGranularity:
 * @PIQ_GRANULARITY_TENSOR: one scale and zero point for the whole tensor
 *   ([method@Piq.Tensor.get_scale])
 * @PIQ_GRANULARITY_CHANNEL: one per index of the tensor's axis
 *   [property@Piq.Format:axis]
 * @PIQ_GRANULARITY_BLOCK: one per block of [property@Piq.Format:block-size]
 *   consecutive elements along the last axis; a block never spans two rows,
 *   and each row's last block may be shorter
 *
 * How many scales a quantized tensor has. Per-channel and per-block scales are
 * derived from each channel's or block's data by [method@Piq.Quantizer.quantize]
 * and carried by the quantized tensor ([method@Piq.Tensor.get_scales]).
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_GRANULARITY_TENSOR  = 0,
  PIQ_GRANULARITY_CHANNEL = 1,
  PIQ_GRANULARITY_BLOCK   = 2,
} PiqGranularity;

/**
 * PiqSimdLevel:
 * @PIQ_SIMD_LEVEL_SCALAR: portable C, the reference of every kernel
 * @PIQ_SIMD_LEVEL_NEON: Arm Advanced SIMD (aarch64)
 * @PIQ_SIMD_LEVEL_NEON_DOTPROD: Advanced SIMD with the dot-product instructions
 *   (FEAT_DotProd: the integer matrix products; read from Linux's AT_HWCAP)
 * @PIQ_SIMD_LEVEL_SSE4_2: x86-64 SSE4.2
 * @PIQ_SIMD_LEVEL_AVX2: x86-64 AVX2 with FMA and F16C
 * @PIQ_SIMD_LEVEL_AVX_VNNI: AVX2 with AVX-VNNI (the integer matrix products on
 *   CPUs without AVX-512: Alder Lake and later Intel client cores)
 * @PIQ_SIMD_LEVEL_AVX512: x86-64 AVX-512 F, BW, VL and DQ
 * @PIQ_SIMD_LEVEL_AVX512_BF16: AVX-512 with the BF16 conversion instructions
 * @PIQ_SIMD_LEVEL_AVX512_FP16: AVX-512 with the FP16 instructions
 * @PIQ_SIMD_LEVEL_AVX512_VNNI: AVX-512 with VNNI and VPOPCNTDQ (the integer and
 *   binary matrix products; every CPU with AVX-512 FP16 has them)
 * @PIQ_SIMD_LEVEL_AMX: AVX-512 VNNI with the AMX tiles and their int8 products
 *   (AMX-TILE, AMX-INT8: the int8 GEMM; Sapphire Rapids and later)
 *
 * A family of kernels. Levels are ordered: capping a quantizer at a level
 * (see [property@Piq.Quantizer:max-simd-level]) allows that level and every
 * lower one.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_SIMD_LEVEL_SCALAR       = 0,
  PIQ_SIMD_LEVEL_NEON         = 10,
  PIQ_SIMD_LEVEL_NEON_DOTPROD = 11,
  PIQ_SIMD_LEVEL_SSE4_2       = 20,
  PIQ_SIMD_LEVEL_AVX2         = 30,
  PIQ_SIMD_LEVEL_AVX_VNNI     = 35,
  PIQ_SIMD_LEVEL_AVX512       = 40,
  PIQ_SIMD_LEVEL_AVX512_BF16  = 41,
  PIQ_SIMD_LEVEL_AVX512_FP16  = 42,
  PIQ_SIMD_LEVEL_AVX512_VNNI  = 50,
  PIQ_SIMD_LEVEL_AMX          = 60,
} PiqSimdLevel;

G_END_DECLS

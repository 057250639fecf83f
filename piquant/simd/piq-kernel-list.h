/* piq-kernel-list.h: the one list of kernels
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Everything that enumerates kernels — the table type, the merge of SIMD tables over
 * the scalar one, the ifunc entry points and the test cases — expands these lists,
 * so adding a format means adding entries here, a scalar kernel and the SIMD bodies
 * that pay for themselves.
 *
 * The element types use the numeric values of PiqDtype (piq-types.h): float types
 * are their value, integer types their value minus 16; the kernel layer needs no GLib.
 */
#pragma once

#include <stdint.h>

/* X (NAME, name, index, C storage type) */
#define PIQ_FLOAT_TYPES(X) \
  X (F32,  f32,  0, float) \
  X (F64,  f64,  1, double) \
  X (BF16, bf16, 2, uint16_t) \
  X (F16,  f16,  3, uint16_t)

/* X (NAME, name, index, bits, is_signed) */
#define PIQ_INT_TYPES(X) \
  X (UINT2,  uint2,   0,  2, 0) \
  X (INT2,   int2,    1,  2, 1) \
  X (UINT4,  uint4,   2,  4, 0) \
  X (INT4,   int4,    3,  4, 1) \
  X (UINT8,  uint8,   4,  8, 0) \
  X (INT8,   int8,    5,  8, 1) \
  X (UINT16, uint16,  6, 16, 0) \
  X (INT16,  int16,   7, 16, 1) \
  X (UINT32, uint32,  8, 32, 0) \
  X (INT32,  int32,   9, 32, 1) \
  X (UINT64, uint64, 10, 64, 0) \
  X (INT64,  int64,  11, 64, 1)

/* X (NAME, name, index) */
#define PIQ_ROUND_MODES(X) \
  X (NEAREST,    nearest,    0) \
  X (STOCHASTIC, stochastic, 1)

#define PIQ_STORE_OPS(X) \
  X (SET, set, 0) \
  X (ADD, add, 1)

enum {
#define PIQ_IDX_(N, n, i, ...) PIQ_F_##N = i,
  PIQ_FLOAT_TYPES (PIQ_IDX_) PIQ_N_FLOAT = 4,
#undef PIQ_IDX_
#define PIQ_IDX_(N, n, i, ...) PIQ_I_##N = i,
  PIQ_INT_TYPES (PIQ_IDX_) PIQ_N_INT = 12,
#undef PIQ_IDX_
#define PIQ_IDX_(N, n, i) PIQ_R_##N = i,
  PIQ_ROUND_MODES (PIQ_IDX_) PIQ_N_ROUND = 2,
#undef PIQ_IDX_
#define PIQ_IDX_(N, n, i) PIQ_OP_##N = i,
  PIQ_STORE_OPS (PIQ_IDX_) PIQ_N_OP = 2,
#undef PIQ_IDX_
};

/* The kernel list proper. Each entry is
 *   X (op, slot, name-parts…)
 * where `slot` is the table member indexed by the entry, e.g.
 *   X (quantize, quantize[PIQ_F_F32][PIQ_I_UINT8][PIQ_R_NEAREST], f32, uint8, nearest)
 * so generic code can copy, compare or name a slot without knowing its shape. */

#define PIQ_KL_Q_R_(X, F, f, I, i) \
  X (quantize, quantize[PIQ_F_##F][PIQ_I_##I][PIQ_R_NEAREST],    f, i, nearest) \
  X (quantize, quantize[PIQ_F_##F][PIQ_I_##I][PIQ_R_STOCHASTIC], f, i, stochastic)
#define PIQ_KL_Q_I_(X, F, f) \
  PIQ_KL_Q_R_ (X, F, f, UINT2, uint2)   PIQ_KL_Q_R_ (X, F, f, INT2, int2) \
  PIQ_KL_Q_R_ (X, F, f, UINT4, uint4)   PIQ_KL_Q_R_ (X, F, f, INT4, int4) \
  PIQ_KL_Q_R_ (X, F, f, UINT8, uint8)   PIQ_KL_Q_R_ (X, F, f, INT8, int8) \
  PIQ_KL_Q_R_ (X, F, f, UINT16, uint16) PIQ_KL_Q_R_ (X, F, f, INT16, int16) \
  PIQ_KL_Q_R_ (X, F, f, UINT32, uint32) PIQ_KL_Q_R_ (X, F, f, INT32, int32) \
  PIQ_KL_Q_R_ (X, F, f, UINT64, uint64) PIQ_KL_Q_R_ (X, F, f, INT64, int64)

#define PIQ_KL_D_O_(X, I, i, F, f) \
  X (dequantize, dequantize[PIQ_I_##I][PIQ_F_##F][PIQ_OP_SET], i, f, set) \
  X (dequantize, dequantize[PIQ_I_##I][PIQ_F_##F][PIQ_OP_ADD], i, f, add)
#define PIQ_KL_D_F_(X, I, i) \
  PIQ_KL_D_O_ (X, I, i, F32, f32)   PIQ_KL_D_O_ (X, I, i, F64, f64) \
  PIQ_KL_D_O_ (X, I, i, BF16, bf16) PIQ_KL_D_O_ (X, I, i, F16, f16)

#define PIQ_KL_R_O_(X, F, f, R, r) \
  X (requantize, requantize[PIQ_F_##F][PIQ_R_##R][PIQ_OP_SET], f, r, set) \
  X (requantize, requantize[PIQ_F_##F][PIQ_R_##R][PIQ_OP_ADD], f, r, add)
#define PIQ_KL_R_R_(X, F, f) \
  PIQ_KL_R_O_ (X, F, f, NEAREST, nearest) PIQ_KL_R_O_ (X, F, f, STOCHASTIC, stochastic)

#define PIQ_KL_PER_FLOAT_(M, X) M (X, F32, f32) M (X, F64, f64) M (X, BF16, bf16) M (X, F16, f16)
#define PIQ_KL_PER_INT_(M, X) \
  M (X, UINT2, uint2)   M (X, INT2, int2)   M (X, UINT4, uint4)   M (X, INT4, int4) \
  M (X, UINT8, uint8)   M (X, INT8, int8)   M (X, UINT16, uint16) M (X, INT16, int16) \
  M (X, UINT32, uint32) M (X, INT32, int32) M (X, UINT64, uint64) M (X, INT64, int64)

#define PIQ_KL_MM_(X, F, f)  X (minmax, minmax[PIQ_F_##F], f)
#define PIQ_KL_SUM_(X, F, f) X (sums, sums[PIQ_F_##F], f)

/* The block formats (simd/piq-formats.c): every code format and granularity with
 * f32 data; a body handles the cases it vectorizes and hands the rest to the
 * scalar driver. Other float types always run the scalar driver. */
#define PIQ_KL_BLOCK_(X) \
  X (block_quantize, block_quantize, f32) \
  X (block_dequantize, block_dequantize, f32)

/* Matrix multiply (piq-engine-matmul.c): the float policy's f32 tile and its fused
 * decode-and-dot GEMV, the dynamic-int8 policy's exact integer dot products and its
 * quantizer of X's rows, the
 * int8 GEMM's packed micro-kernel (piq-engine-matmul-int.c) and the binary policy's
 * XNOR popcounts and GEMM micro-kernel (piq-engine-matmul-binary.c). */
#define PIQ_KL_MATMUL_(X) \
  X (mm_tile, mm_tile, f32) \
  X (mm_lanes, mm_lanes, f32) \
  X (mm_decode_dot, mm_decode_dot, f32) \
  X (dot_groups, dot_groups, u8s8) \
  X (dot_groups_i8, dot_groups_i8, i8) \
  X (dot_groups_q4, dot_groups_q4, q4) \
  X (xnor_counts, xnor_counts, u64) \
  X (xnor_gemm, xnor_gemm, u64) \
  X (gemm_u8s8, gemm_u8s8, packed) \
  X (gemm_groups, gemm_groups, packed) \
  X (act_quantize, act_quantize, f32)

/* Fake quantization of the 2- to 16-bit integer formats (piq-qat.c, docs/qat.md):
 * the forward pass (values and straight-through mask) and the backward pass (source
 * gradient and the LSQ gradient terms added into 16 binary64 lanes). One entry for
 * every f32/bf16/f16 combination, the types in the arguments: a body vectorizes the
 * combinations it has and hands the rest to the scalar kernel. */
#define PIQ_KL_QAT_(X) \
  X (qat_forward, qat_forward, float) \
  X (qat_backward, qat_backward, float)

/* The histogram observer's bins (piq-observer.c, docs/observers.md): torch.histc's
 * bin of every f32 element, the binary32 arguments in PiqHistArgs. */
#define PIQ_KL_HIST_(X) \
  X (hist_bins, hist_bins, f32)

#define PIQ_KERNEL_LIST(X) \
  PIQ_KL_PER_FLOAT_ (PIQ_KL_Q_I_, X) \
  PIQ_KL_PER_INT_ (PIQ_KL_D_F_, X) \
  PIQ_KL_PER_FLOAT_ (PIQ_KL_R_R_, X) \
  PIQ_KL_PER_FLOAT_ (PIQ_KL_MM_, X) \
  PIQ_KL_PER_FLOAT_ (PIQ_KL_SUM_, X) \
  PIQ_KL_BLOCK_ (X) \
  PIQ_KL_MATMUL_ (X) \
  PIQ_KL_QAT_ (X) \
  PIQ_KL_HIST_ (X)

/* The identifier of an entry's function inside a kernel unit (each unit's are static). */
#define PIQ_KNAME_quantize(f, i, r)   quantize_##f##_##i##_##r
#define PIQ_KNAME_dequantize(i, f, o) dequantize_##i##_##f##_##o
#define PIQ_KNAME_requantize(f, r, o) requantize_##f##_##r##_##o
#define PIQ_KNAME_minmax(f)           minmax_##f
#define PIQ_KNAME_sums(f)             sums_##f
#define PIQ_KNAME_block_quantize(f)   block_quantize_##f
#define PIQ_KNAME_block_dequantize(f) block_dequantize_##f
#define PIQ_KNAME_mm_tile(f)          mm_tile_##f
#define PIQ_KNAME_mm_lanes(f)         mm_lanes_##f
#define PIQ_KNAME_mm_decode_dot(f)    mm_decode_dot_##f
#define PIQ_KNAME_dot_groups(t)       dot_groups_##t
#define PIQ_KNAME_dot_groups_i8(t)    dot_groups_##t
#define PIQ_KNAME_dot_groups_q4(t)    dot_groups_##t
#define PIQ_KNAME_xnor_counts(t)      xnor_counts_##t
#define PIQ_KNAME_xnor_gemm(t)        xnor_gemm_##t
#define PIQ_KNAME_gemm_u8s8(t)        gemm_u8s8_##t
#define PIQ_KNAME_gemm_groups(t)      gemm_groups_##t
#define PIQ_KNAME_act_quantize(f)     act_quantize_##f
#define PIQ_KNAME_qat_forward(f)      qat_forward_##f
#define PIQ_KNAME_qat_backward(f)     qat_backward_##f
#define PIQ_KNAME_hist_bins(f)        hist_bins_##f

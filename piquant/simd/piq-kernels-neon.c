/* piq-kernels-neon.c: the vector kernels for AArch64 Advanced SIMD (4 binary32 lanes)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * NEON is baseline on AArch64: no extra flags.
 */
#include "config.h"

#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "piq-kernels-neon.c is for AArch64 with Advanced SIMD"
#endif

#define PIQ_VEC_TABLE    piq_kernels_neon
#define PIQ_VEC_LABEL    "neon"
#define PIQ_VEC_LEVEL    10
#define PIQ_VEC_REQUIRED PIQ_NEON_REQUIRED

#include "piq-kernels-neon-isa.h"

/* The int8 GEMM's and gemm_groups' four-byte dot products in baseline Advanced SIMD:
 * the bytes widened to 16 bits (unsigned u, signed s), multiplied (|u · s| ≤ 255 · 128
 * fits a signed 16-bit lane), then pairs and pairs of pairs summed into 32-bit lanes.
 * SDOT is optional before Armv8.4: the neondot unit has it. */
static inline int32x4_t
piq_neon_dot4_u8s8 (int32x4_t acc, uint8x16_t u, int8x16_t s)
{
  int16x8_t lo = vmulq_s16 (vreinterpretq_s16_u16 (vmovl_u8 (vget_low_u8 (u))), vmovl_s8 (vget_low_s8 (s)));
  int16x8_t hi = vmulq_s16 (vreinterpretq_s16_u16 (vmovl_high_u8 (u)), vmovl_high_s8 (s));
  return vaddq_s32 (acc, vpaddq_s32 (vpaddlq_s16 (lo), vpaddlq_s16 (hi)));
}
#define PIQ_VEC_DOT4_U8S8(acc, u, s) \
  ((vi) piq_neon_dot4_u8s8 ((int32x4_t) (acc), (uint8x16_t) (u), (int8x16_t) (s)))

#include "piq-kernels-vec-body.h"

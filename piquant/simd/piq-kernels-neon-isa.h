/* piq-kernels-neon-isa.h: the AArch64 Advanced SIMD hooks of the vector bodies (4
 * binary32 lanes)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Shared by the units compiled for AArch64 (piq-kernels-neon.c and
 * piq-kernels-neondot.c), each of which defines its table's name, label, level,
 * required features and four-byte dot product first and includes
 * piq-kernels-vec-body.h after. FCVTN/FCVTL convert binary16 with the FPCR default
 * (round to nearest even, no flush-to-zero), as piq_f32_to_f16 does.
 */
#pragma once

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#define PIQ_W 4

#define PIQ_VEC_LOAD_F16(p)     ((vf) vcvt_f32_f16 (vld1_f16 ((const float16_t *) (p))))
#define PIQ_VEC_STORE_F16(p, v) vst1_f16 ((float16_t *) (p), vcvt_f16_f32 ((float32x4_t) (v)))
#define PIQ_VEC_LOAD_F16_8(p)   piq_neon_load_f16_8 ((const uint8_t *) (p))

typedef float piq_neon_v8f __attribute__ ((vector_size (32)));
static inline piq_neon_v8f
piq_neon_load_f16_8 (const uint8_t *p)
{
  float16x8_t h = vld1q_f16 ((const float16_t *) p);
  float32x4_t lo = vcvt_f32_f16 (vget_low_f16 (h)), hi = vcvt_high_f32_f16 (h);
  piq_neon_v8f v;
  memcpy (&v, &lo, 16);
  memcpy ((char *) &v + 16, &hi, 16);
  return v;
}

#define PIQ_VEC_MIN(a, b)    ((vf) vminq_f32 ((float32x4_t) (a), (float32x4_t) (b)))
#define PIQ_VEC_MAX(a, b)    ((vf) vmaxq_f32 ((float32x4_t) (a), (float32x4_t) (b)))
#define PIQ_VEC_MAXU32(a, b) ((vu) vmaxq_u32 ((uint32x4_t) (a), (uint32x4_t) (b)))
#define PIQ_VEC_ANY(m)       (vmaxvq_u32 ((uint32x4_t) (m)) != 0)
#define PIQ_VEC_MIN_I32(a, b) ((vi) vminq_s32 ((int32x4_t) (a), (int32x4_t) (b)))
#define PIQ_VEC_U8_TO_I32(c) ((vi) vmovl_u16 (vget_low_u16 (vmovl_u8 (vget_low_u8 ((uint8x16_t) (c))))))
#define PIQ_VEC_S8_TO_I32(c) ((vi) vmovl_s16 (vget_low_s16 (vmovl_s8 (vget_low_s8 ((int8x16_t) (c))))))

/* the set bits of each 64-bit lane: CNT per byte, then three pairwise widening adds */
#define PIQ_VEC_POPCNT64(v) \
  vpaddlq_u32 (vpaddlq_u16 (vpaddlq_u8 (vcntq_u8 ((uint8x16_t) (v)))))

#define PIQ_VEC_FMA(a, b, c)  ((vf) vfmaq_f32 ((float32x4_t) (c), (float32x4_t) (a), (float32x4_t) (b)))

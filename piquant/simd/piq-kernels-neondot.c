/* piq-kernels-neondot.c: the matrix-multiply kernels for AArch64 with the dot-product
 * instructions (FEAT_DotProd: optional from Armv8.2, required from Armv8.4;
 * Neoverse N1 and later, Cortex-A55/A76 and later, Apple M1 and later)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with PIQ_NEONDOT_CFLAGS only. SDOT sums four adjacent products of signed
 * bytes into each 32-bit lane: one instruction where baseline NEON takes ten (widen,
 * multiply, pairwise adds). The conversion kernels gain nothing from it, so this
 * unit's table fills only the matrix-multiply entries (PIQ_VEC_ONLY_MATMUL): the
 * merge keeps the neon unit's kernels for the rest.
 */
#include "config.h"

#if !defined(__aarch64__) || !defined(__ARM_NEON) || !defined(__ARM_FEATURE_DOTPROD)
#error "piq-kernels-neondot.c must be compiled with PIQ_NEONDOT_CFLAGS (-march=armv8.2-a+dotprod)"
#endif

#define PIQ_VEC_TABLE    piq_kernels_neondot
#define PIQ_VEC_LABEL    "neondot"
#define PIQ_VEC_LEVEL    11
#define PIQ_VEC_REQUIRED PIQ_NEONDOT_REQUIRED
#define PIQ_VEC_ONLY_MATMUL 1

#include "piq-kernels-neon-isa.h"

/* acc + Σ of four adjacent products of unsigned u and signed s, exact: SDOT takes
 * signed bytes, so u goes in as u − 128 (its top bit flipped) and the second SDOT
 * puts back 128 · Σ s, as −Σ (−128) · s. The int32 lanes wrap, so the sum is exact
 * wherever the callers' sums fit int32, as they do for VPDPBUSD. */
static inline int32x4_t
piq_neondot_u8s8 (int32x4_t acc, uint8x16_t u, int8x16_t s)
{
  int8x16_t us = vreinterpretq_s8_u8 (veorq_u8 (u, vdupq_n_u8 (0x80)));
  return vsubq_s32 (vdotq_s32 (acc, us, s), vdotq_s32 (vdupq_n_s32 (0), vdupq_n_s8 (-128), s));
}
#define PIQ_VEC_DOT4_U8S8(acc, u, s) \
  ((vi) piq_neondot_u8s8 ((int32x4_t) (acc), (uint8x16_t) (u), (int8x16_t) (s)))
/* the same where every u is below 128 (4-bit codes): one SDOT */
#define PIQ_VEC_DOT4_S8S8(acc, u, s) \
  ((vi) vdotq_s32 ((int32x4_t) (acc), (int8x16_t) (u), (int8x16_t) (s)))

#include "piq-kernels-vec-body.h"

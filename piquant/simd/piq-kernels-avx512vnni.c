/* piq-kernels-avx512vnni.c: the matrix-multiply kernels for AVX-512 with VNNI and
 * VPOPCNTDQ (Ice Lake, Zen 4, Sapphire Rapids and later)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with PIQ_AVX512VNNI_CFLAGS only. The conversion kernels gain nothing from
 * these instructions, so this unit's table fills only the matrix-multiply entries
 * (PIQ_VEC_ONLY_MATMUL): the merge keeps the avx512 unit's kernels for the rest.
 */
#include "config.h"

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VNNI__) || !defined(__AVX512VPOPCNTDQ__)
#error "piq-kernels-avx512vnni.c must be compiled with PIQ_AVX512VNNI_CFLAGS (… -mavx512vnni -mavx512vpopcntdq)"
#endif

#define PIQ_VEC_TABLE    piq_kernels_avx512vnni
#define PIQ_VEC_LABEL    "avx512vnni"
#define PIQ_VEC_LEVEL    50
#define PIQ_VEC_REQUIRED PIQ_AVX512VNNI_REQUIRED
#define PIQ_VEC_ONLY_MATMUL 1

#include "piq-kernels-avx512-isa.h"

/* acc + Σ of each four adjacent products of unsigned bytes u and signed bytes s, per
 * 32-bit lane, without intermediate saturation (VPDPBUSD) */
#define PIQ_VEC_DPBUSD(acc, u, s) ((vi) _mm512_dpbusd_epi32 ((__m512i) (acc), (__m512i) (u), (__m512i) (s)))
/* the number of set bits of each 64-bit lane (VPOPCNTQ) */
#define PIQ_VEC_POPCNT64(v)       _mm512_popcnt_epi64 ((__m512i) (v))

#include "piq-kernels-vec-body.h"

/* piq-kernels-avxvnni.c: the matrix-multiply kernels for AVX2 with AVX-VNNI (Alder
 * Lake, Sapphire Rapids, Zen 5 and later)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with PIQ_AVXVNNI_CFLAGS only. AVX-VNNI is VPDPBUSD in a VEX encoding on 256-bit
 * registers: the integer products of CPUs without AVX-512 (Intel's client cores) take
 * one instruction per four products of a lane where AVX2 takes three (4-bit codes,
 * vpmaddubsw, vpmaddwd, an add) or six (8-bit codes, split in two). The conversion
 * kernels gain nothing from it, so this unit's table fills only the matrix-multiply
 * entries (PIQ_VEC_ONLY_MATMUL): the merge keeps the avx2 unit's kernels for the rest.
 * Its level is below AVX-512's, whose kernels replace it where the CPU has both.
 */
#include "config.h"

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__) || !defined(__BMI2__) || !defined(__AVXVNNI__)
#error "piq-kernels-avxvnni.c must be compiled with PIQ_AVXVNNI_CFLAGS (-mavx2 -mfma -mf16c -mbmi2 -mavxvnni)"
#endif

#define PIQ_VEC_TABLE    piq_kernels_avxvnni
#define PIQ_VEC_LABEL    "avxvnni"
#define PIQ_VEC_LEVEL    35
#define PIQ_VEC_REQUIRED PIQ_AVXVNNI_REQUIRED
#define PIQ_VEC_ONLY_MATMUL 1

#include "piq-kernels-avx2-isa.h"

/* acc + Σ of each four adjacent products of unsigned bytes u and signed bytes s, per
 * 32-bit lane, without intermediate saturation (VPDPBUSD, VEX-encoded) */
#define PIQ_VEC_DPBUSD(acc, u, s) ((vi) _mm256_dpbusd_avx_epi32 ((__m256i) (acc), (__m256i) (u), (__m256i) (s)))

#include "piq-kernels-vec-body.h"

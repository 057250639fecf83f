/* piq-kernels-avx2.c: the vector kernels for x86-64 AVX2 + FMA + F16C (8 binary32 lanes)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with PIQ_AVX2_CFLAGS only.
 */
#include "config.h"

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__) || !defined(__BMI2__)
#error "piq-kernels-avx2.c must be compiled with PIQ_AVX2_CFLAGS (-mavx2 -mfma -mf16c -mbmi2)"
#endif

#define PIQ_VEC_TABLE    piq_kernels_avx2
#define PIQ_VEC_LABEL    "avx2"
#define PIQ_VEC_LEVEL    30
#define PIQ_VEC_REQUIRED PIQ_AVX2_REQUIRED

#include "piq-kernels-avx2-isa.h"

#include "piq-kernels-vec-body.h"

/* piq-kernels-avx512.c: the vector kernels for AVX-512 F/BW/VL/DQ (16 binary32 lanes)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with PIQ_AVX512_CFLAGS only. The AVX512-BF16 conversion (VCVTNEPS2BF16) is not
 * used: it flushes subnormal inputs to zero, so it cannot give the reference bytes;
 * the integer rounding sequence costs less than the memory traffic anyway.
 */
#include "config.h"

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__AVX512DQ__) || !defined(__F16C__)
#error "piq-kernels-avx512.c must be compiled with PIQ_AVX512_CFLAGS (-mavx512f -mavx512bw -mavx512vl -mavx512dq …)"
#endif

#define PIQ_VEC_TABLE    piq_kernels_avx512
#define PIQ_VEC_LABEL    "avx512"
#define PIQ_VEC_LEVEL    40
#define PIQ_VEC_REQUIRED PIQ_AVX512_REQUIRED

#include "piq-kernels-avx512-isa.h"

#include "piq-kernels-vec-body.h"

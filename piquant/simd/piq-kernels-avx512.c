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

#include <immintrin.h>

#define PIQ_W 16
#define PIQ_VEC_TABLE    piq_kernels_avx512
#define PIQ_VEC_LABEL    "avx512"
#define PIQ_VEC_LEVEL    40
#define PIQ_VEC_REQUIRED PIQ_AVX512_REQUIRED

#define PIQ_VEC_LOAD_F16(p)     ((vf) _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) (p))))
#define PIQ_VEC_LOAD_F16_8(p)   ((v8f) _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (p))))
#define PIQ_VEC_STORE_F16(p, v) _mm256_storeu_si256 ((__m256i *) (p), _mm512_cvtps_ph ((__m512) (v), _MM_FROUND_TO_NEAREST_INT))

#define PIQ_VEC_MIN(a, b)         ((vf) _mm512_min_ps ((__m512) (a), (__m512) (b)))
#define PIQ_VEC_MAX(a, b)         ((vf) _mm512_max_ps ((__m512) (a), (__m512) (b)))
#define PIQ_VEC_MAXU32(a, b)      _mm512_max_epu32 ((__m512i) (a), (__m512i) (b))
/* fixupimm token table: QNaN and SNaN -> +0 (response 8), every other class -> the
 * source value (response 1). */
#define PIQ_VEC_NAN_TO_ZERO(v)    ((vf) _mm512_fixupimm_ps ((__m512) (v), (__m512) (v), _mm512_set1_epi32 (0x11111188), 0))
#define PIQ_VEC_CVT_NEAREST(v)    ((vi) _mm512_cvtps_epi32 ((__m512) (v)))
#define PIQ_VEC_LOAD_BF16(p)      ((vf) _mm512_slli_epi32 (_mm512_cvtepu16_epi32 (_mm256_loadu_si256 ((const __m256i *) (p))), 16))
#define PIQ_VEC_U8_TO_I32(c)      ((vi) _mm512_cvtepu8_epi32 ((__m128i) (c)))
#define PIQ_VEC_S8_TO_I32(c)      ((vi) _mm512_cvtepi8_epi32 ((__m128i) (c)))
#define PIQ_VEC_F16_BITS(v)       ((vh) _mm512_cvtps_ph ((__m512) (v), _MM_FROUND_TO_NEAREST_INT))
#define PIQ_VEC_STREAM(p, v)      _mm512_stream_ps ((float *) (p), (__m512) (v))
#define PIQ_VEC_STREAM_HALF(p, h) _mm256_stream_si256 ((__m256i *) (p), (__m256i) (h))
#define PIQ_VEC_STREAM_16(p, c)   _mm_stream_si128 ((__m128i *) (p), (__m128i) (c))
#define PIQ_VEC_STREAM_8(p, x)    _mm_stream_si64 ((long long *) (p), (long long) (x))
#define PIQ_VEC_STREAM_4(p, x)    _mm_stream_si32 ((int *) (p), (int) (x))
#define PIQ_VEC_STREAM_FENCE()    _mm_sfence ()

#include "piq-kernels-vec-body.h"

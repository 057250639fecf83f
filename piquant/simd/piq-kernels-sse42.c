/* piq-kernels-sse42.c: the vector kernels for x86-64 SSE4.2 (4 binary32 lanes)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with PIQ_SSE42_CFLAGS only. No F16C here, so f16 entries stay scalar.
 */
#include "config.h"

#if !defined(__SSE4_2__) || !defined(__POPCNT__)
#error "piq-kernels-sse42.c must be compiled with PIQ_SSE42_CFLAGS (-msse4.2 -mpopcnt)"
#endif

#include <immintrin.h>

#define PIQ_W 4
#define PIQ_VEC_TABLE    piq_kernels_sse42
#define PIQ_VEC_LABEL    "sse4.2"
#define PIQ_VEC_LEVEL    20
#define PIQ_VEC_REQUIRED PIQ_SSE42_REQUIRED

#define PIQ_VEC_MIN(a, b)         ((vf) _mm_min_ps ((__m128) (a), (__m128) (b)))
#define PIQ_VEC_MAX(a, b)         ((vf) _mm_max_ps ((__m128) (a), (__m128) (b)))
#define PIQ_VEC_MAXU32(a, b)      _mm_max_epu32 ((__m128i) (a), (__m128i) (b))
#define PIQ_VEC_CVT_NEAREST(v)    ((vi) _mm_cvtps_epi32 ((__m128) (v)))
#define PIQ_VEC_LOAD_BF16(p)      ((vf) _mm_slli_epi32 (_mm_cvtepu16_epi32 (_mm_loadl_epi64 ((const __m128i *) (p))), 16))
#define PIQ_VEC_U8_TO_I32(c)      ((vi) _mm_cvtepu8_epi32 ((__m128i) (c)))
#define PIQ_VEC_S8_TO_I32(c)      ((vi) _mm_cvtepi8_epi32 ((__m128i) (c)))
#define PIQ_VEC_FLOOR(v)          ((vf) _mm_floor_ps ((__m128) (v)))
#define PIQ_VEC_PACKS_DW(a, b)    _mm_packs_epi32 ((__m128i) (a), (__m128i) (b))
#define PIQ_VEC_ANY(m)            (!_mm_testz_si128 ((__m128i) (m), (__m128i) (m)))
#define PIQ_VEC_MIN_I32(a, b)     ((vi) _mm_min_epi32 ((__m128i) (a), (__m128i) (b)))
#define PIQ_VEC_PACKS_WB(a, b)    _mm_packs_epi16 ((__m128i) (a), (__m128i) (b))
#define PIQ_VEC_PACKUS_WB(a, b)   _mm_packus_epi16 ((__m128i) (a), (__m128i) (b))
#define PIQ_VEC_MADDUBS(b, k)     _mm_maddubs_epi16 ((__m128i) (b), (__m128i) (k))
#define PIQ_VEC_MADDWD(w, k)      _mm_madd_epi16 ((__m128i) (w), (__m128i) (k))
/* one 128-bit lane: the packs keep the element order */
#define PIQ_VEC_FIX_DW(x)         (x)
#define PIQ_VEC_FIX_QW(x)         (x)
#define PIQ_VEC_STREAM(p, v)      _mm_stream_ps ((float *) (p), (__m128) (v))
#define PIQ_VEC_STREAM_HALF(p, h) _mm_stream_si64 ((long long *) (p), (long long) (h))
#define PIQ_VEC_STREAM_16(p, c)   _mm_stream_si128 ((__m128i *) (p), (__m128i) (c))
#define PIQ_VEC_STREAM_8(p, x)    _mm_stream_si64 ((long long *) (p), (long long) (x))
#define PIQ_VEC_STREAM_4(p, x)    _mm_stream_si32 ((int *) (p), (int) (x))
#define PIQ_VEC_STREAM_FENCE()    _mm_sfence ()

#include "piq-kernels-vec-body.h"

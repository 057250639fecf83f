/* piq-kernels-avx2-isa.h: the AVX2 + FMA + F16C hooks of the vector bodies (8 binary32
 * lanes)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Shared by the units compiled for AVX2 (piq-kernels-avx2.c and piq-kernels-avxvnni.c),
 * each of which defines its table's name, label, level and required features first
 * and includes piq-kernels-vec-body.h after. F16C converts binary16 in hardware,
 * rounding to nearest even exactly as piq_f32_to_f16 does (immediate 0, MXCSR
 * untouched).
 */
#pragma once

#include <immintrin.h>

#define PIQ_W 8

#define PIQ_VEC_LOAD_F16(p)     ((vf) _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (p))))
#define PIQ_VEC_LOAD_F16_8(p)   ((v8f) _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (p))))
#define PIQ_VEC_STORE_F16(p, v) _mm_storeu_si128 ((__m128i *) (p), _mm256_cvtps_ph ((__m256) (v), _MM_FROUND_TO_NEAREST_INT))

#define PIQ_VEC_MIN(a, b)         ((vf) _mm256_min_ps ((__m256) (a), (__m256) (b)))
#define PIQ_VEC_MAX(a, b)         ((vf) _mm256_max_ps ((__m256) (a), (__m256) (b)))
#define PIQ_VEC_MAXU32(a, b)      _mm256_max_epu32 ((__m256i) (a), (__m256i) (b))
#define PIQ_VEC_ANY(m)            (!_mm256_testz_si256 ((__m256i) (m), (__m256i) (m)))
#define PIQ_VEC_MIN_I32(a, b)     ((vi) _mm256_min_epi32 ((__m256i) (a), (__m256i) (b)))
#define PIQ_VEC_CVT_NEAREST(v)    ((vi) _mm256_cvtps_epi32 ((__m256) (v)))
#define PIQ_VEC_LOAD_BF16(p)      ((vf) _mm256_slli_epi32 (_mm256_cvtepu16_epi32 (_mm_loadu_si128 ((const __m128i *) (p))), 16))
#define PIQ_VEC_U8_TO_I32(c)      ((vi) _mm256_cvtepu8_epi32 ((__m128i) (c)))
#define PIQ_VEC_S8_TO_I32(c)      ((vi) _mm256_cvtepi8_epi32 ((__m128i) (c)))
#define PIQ_VEC_U16_TO_I32(h)     ((vi) _mm256_cvtepu16_epi32 ((__m128i) (h)))
#define PIQ_VEC_F16_BITS(v)       ((vh) _mm256_cvtps_ph ((__m256) (v), _MM_FROUND_TO_NEAREST_INT))
#define PIQ_VEC_FLOOR(v)          ((vf) _mm256_floor_ps ((__m256) (v)))
#define PIQ_VEC_PACKS_DW(a, b)    _mm256_packs_epi32 ((__m256i) (a), (__m256i) (b))
#define PIQ_VEC_PACKS_WB(a, b)    _mm256_packs_epi16 ((__m256i) (a), (__m256i) (b))
#define PIQ_VEC_PACKUS_WB(a, b)   _mm256_packus_epi16 ((__m256i) (a), (__m256i) (b))
#define PIQ_VEC_MADDUBS(b, k)     _mm256_maddubs_epi16 ((__m256i) (b), (__m256i) (k))
#define PIQ_VEC_MADDWD(w, k)      _mm256_madd_epi16 ((__m256i) (w), (__m256i) (k))
/* lane l of the packs holds units l, 2 + l, 4 + l, 6 + l (dwords) or l, 2 + l (qwords) */
#define PIQ_VEC_FIX_DW(x)         _mm256_permutevar8x32_epi32 ((__m256i) (x), _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7))
#define PIQ_VEC_FIX_QW(x)         _mm256_permute4x64_epi64 ((__m256i) (x), 0xd8)
#define PIQ_VEC_STREAM(p, v)      _mm256_stream_ps ((float *) (p), (__m256) (v))
#define PIQ_VEC_STREAM_HALF(p, h) _mm_stream_si128 ((__m128i *) (p), (__m128i) (h))
#define PIQ_VEC_STREAM_16(p, c)   _mm_stream_si128 ((__m128i *) (p), (__m128i) (c))
#define PIQ_VEC_STREAM_8(p, x)    _mm_stream_si64 ((long long *) (p), (long long) (x))
#define PIQ_VEC_STREAM_4(p, x)    _mm_stream_si32 ((int *) (p), (int) (x))
#define PIQ_VEC_STREAM_FENCE()    _mm_sfence ()

#define PIQ_VEC_FMA(a, b, c)      ((vf) _mm256_fmadd_ps ((__m256) (a), (__m256) (b), (__m256) (c)))
/* Lane j: (bit 3 of k[j] ? hi : lo)[k[j] & 7], the higher bits of k ignored: a table
 * of 16 binary32 in two registers (vpermps reads the low 3 bits of each index,
 * vblendvps the sign bit, where the shift puts bit 3); the fused GEMV's block tables. */
#define PIQ_VEC_LUT16(lo, hi, k) \
  ((vf) _mm256_blendv_ps (_mm256_permutevar8x32_ps ((__m256) (lo), (__m256i) (k)), \
                          _mm256_permutevar8x32_ps ((__m256) (hi), (__m256i) (k)), \
                          (__m256) _mm256_slli_epi32 ((__m256i) (k), 28)))

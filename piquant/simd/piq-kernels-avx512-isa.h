/* piq-kernels-avx512-isa.h: the AVX-512 F/BW/VL/DQ hooks of the vector bodies
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Shared by the units compiled for AVX-512 (piq-kernels-avx512.c and
 * piq-kernels-avx512vnni.c), each of which defines its table's name, label, level
 * and required features first and includes piq-kernels-vec-body.h after.
 */
#pragma once

#include <immintrin.h>

#define PIQ_W 16

#define PIQ_VEC_LOAD_F16(p)     ((vf) _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) (p))))
#define PIQ_VEC_LOAD_F16_8(p)   ((v8f) _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (p))))
#define PIQ_VEC_STORE_F16(p, v) _mm256_storeu_si256 ((__m256i *) (p), _mm512_cvtps_ph ((__m512) (v), _MM_FROUND_TO_NEAREST_INT))

#define PIQ_VEC_MIN(a, b)         ((vf) _mm512_min_ps ((__m512) (a), (__m512) (b)))
#define PIQ_VEC_MAX(a, b)         ((vf) _mm512_max_ps ((__m512) (a), (__m512) (b)))
#define PIQ_VEC_MAXU32(a, b)      _mm512_max_epu32 ((__m512i) (a), (__m512i) (b))
#define PIQ_VEC_ANY(m)            (_mm512_test_epi32_mask ((__m512i) (m), (__m512i) (m)) != 0)
#define PIQ_VEC_MIN_I32(a, b)     ((vi) _mm512_min_epi32 ((__m512i) (a), (__m512i) (b)))
#define PIQ_VEC_SEL_LTU(a, b, x, y) ((vi) _mm512_mask_blend_epi32 (_mm512_cmplt_epu32_mask ((__m512i) (a), (__m512i) (b)), (__m512i) (y), (__m512i) (x)))
/* fixupimm token table: QNaN and SNaN -> +0 (response 8), every other class -> the
 * source value (response 1). */
#define PIQ_VEC_NAN_TO_ZERO(v)    ((vf) _mm512_fixupimm_ps ((__m512) (v), (__m512) (v), _mm512_set1_epi32 (0x11111188), 0))
#define PIQ_VEC_CVT_NEAREST(v)    ((vi) _mm512_cvtps_epi32 ((__m512) (v)))
#define PIQ_VEC_LOAD_BF16(p)      ((vf) _mm512_slli_epi32 (_mm512_cvtepu16_epi32 (_mm256_loadu_si256 ((const __m256i *) (p))), 16))
#define PIQ_VEC_U8_TO_I32(c)      ((vi) _mm512_cvtepu8_epi32 ((__m128i) (c)))
#define PIQ_VEC_S8_TO_I32(c)      ((vi) _mm512_cvtepi8_epi32 ((__m128i) (c)))
#define PIQ_VEC_U16_TO_I32(h)     ((vi) _mm512_cvtepu16_epi32 ((__m256i) (h)))
#define PIQ_VEC_F16_BITS(v)       ((vh) _mm512_cvtps_ph ((__m512) (v), _MM_FROUND_TO_NEAREST_INT))
#define PIQ_VEC_FLOOR_I(v)        ((vi) _mm512_cvt_roundps_epi32 ((__m512) (v), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC))
#define PIQ_VEC_CEIL_I(v)         ((vi) _mm512_cvt_roundps_epi32 ((__m512) (v), _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC))
#define PIQ_VEC_CVTU_EXACT        1
/* ternary-logic truth table of (A ^ B) & C: (0xf0 ^ 0xcc) & 0xaa */
#define PIQ_VEC_XOR_AND(a, b, m)  _mm512_ternarylogic_epi32 ((__m512i) (a), (__m512i) (b), _mm512_set1_epi32 ((int) (m)), 0x28)
#define PIQ_VEC_INC_IF_LT(i, a, b) ((vi) _mm512_mask_sub_epi32 ((__m512i) (i), _mm512_cmp_ps_mask ((__m512) (a), (__m512) (b), _CMP_LT_OQ), (__m512i) (i), _mm512_set1_epi32 (-1)))
#define PIQ_VEC_INC_IF_LTU(i, a, b) ((vi) _mm512_mask_sub_epi32 ((__m512i) (i), _mm512_cmplt_epu32_mask ((__m512i) (a), (__m512i) (b)), (__m512i) (i), _mm512_set1_epi32 (-1)))
#define PIQ_VEC_PACKS_DW(a, b)    _mm512_packs_epi32 ((__m512i) (a), (__m512i) (b))
#define PIQ_VEC_PACKS_WB(a, b)    _mm512_packs_epi16 ((__m512i) (a), (__m512i) (b))
#define PIQ_VEC_PACKUS_WB(a, b)   _mm512_packus_epi16 ((__m512i) (a), (__m512i) (b))
#define PIQ_VEC_MADDUBS(b, k)     _mm512_maddubs_epi16 ((__m512i) (b), (__m512i) (k))
#define PIQ_VEC_MADDWD(w, k)      _mm512_madd_epi16 ((__m512i) (w), (__m512i) (k))
/* lane l of the packs holds units l, 4 + l, 8 + l, 12 + l (dwords) or l, 4 + l (qwords) */
#define PIQ_VEC_FIX_DW(x)         _mm512_permutexvar_epi32 (_mm512_setr_epi32 (0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), (__m512i) (x))
#define PIQ_VEC_FIX_QW(x)         _mm512_permutexvar_epi64 (_mm512_setr_epi64 (0, 2, 4, 6, 1, 3, 5, 7), (__m512i) (x))
#define PIQ_VEC_BF16_PAIR(a, b)   piq_avx512_bf16_pair ((__m512i) (a), (__m512i) (b))
#define PIQ_VEC_STREAM(p, v)      _mm512_stream_ps ((float *) (p), (__m512) (v))
#define PIQ_VEC_STREAM_HALF(p, h) _mm256_stream_si256 ((__m256i *) (p), (__m256i) (h))
#define PIQ_VEC_STREAM_16(p, c)   _mm_stream_si128 ((__m128i *) (p), (__m128i) (c))
#define PIQ_VEC_STREAM_8(p, x)    _mm_stream_si64 ((long long *) (p), (long long) (x))
#define PIQ_VEC_STREAM_4(p, x)    _mm_stream_si32 ((int *) (p), (int) (x))
#define PIQ_VEC_STREAM_FENCE()    _mm_sfence ()

/* Round two vectors of binary32 (not NaN) to bf16, nearest even: u + 0x7fff, or
 * u + 0x8000 where bit 16 (the kept lsb) is set; then the odd (high) words of both. */
static inline __m512i
piq_avx512_bf16_pair (__m512i a, __m512i b)
{
  const __m512i bit16 = _mm512_set1_epi32 (0x10000), r0 = _mm512_set1_epi32 (0x7fff), r1 = _mm512_set1_epi32 (0x8000);
  const __m512i odd = _mm512_setr_epi32 (0x00030001, 0x00070005, 0x000b0009, 0x000f000d,
                                         0x00130011, 0x00170015, 0x001b0019, 0x001f001d,
                                         0x00230021, 0x00270025, 0x002b0029, 0x002f002d,
                                         0x00330031, 0x00370035, 0x003b0039, 0x003f003d);
  __m512i ra = _mm512_mask_add_epi32 (_mm512_add_epi32 (a, r0), _mm512_test_epi32_mask (a, bit16), a, r1);
  __m512i rb = _mm512_mask_add_epi32 (_mm512_add_epi32 (b, r0), _mm512_test_epi32_mask (b, bit16), b, r1);
  return _mm512_permutex2var_epi16 (ra, odd, rb);
}

#define PIQ_VEC_FMA(a, b, c)      ((vf) _mm512_fmadd_ps ((__m512) (a), (__m512) (b), (__m512) (c)))

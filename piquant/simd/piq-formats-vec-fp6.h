/* piq-formats-vec-fp6.h: 6-bit code packing (FP6 E2M3 / E3M2, MXFP6) and bnb FP4's
 * stochastic encoding and decoding, for the vector bodies of the block formats
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-formats-vec-body.h (after its lane helpers, before fencode), which
 * calls these where a format needs them: FP6's elements are encoded and decoded by
 * the minifloat codecs there (mf_encode, mf_decode: they take any width), so what
 * is FP6's own is the storage. Same bytes as the scalar driver, as everything in
 * the vector bodies (each step below says why).
 *
 * 6-bit codes are a little-endian bit stream (piq_put_code): element i at bit 6i, so
 * four codes c0…c3 are the three bytes of the 24-bit word
 *   G = c0 | c1 << 6 | c2 << 12 | c3 << 18,
 * and a vector of PIQ_W codes is 3·PIQ_W/4 bytes (3, 6 or 12): a whole number of
 * groups, starting on a byte wherever the vector bodies put one (multiples of
 * PIQ_W elements from a multiple of 8).
 */

/* ---- 6-bit codes ---- */

/* The 3·PIQ_W/4 bytes at src in the low bytes of a vector (the rest 0), by loads of
 * exactly those bytes: the last group of a buffer may end at its last byte. */
VINLINE vb16
f6_bytes (const uint8_t *src)
{
#if PIQ_W == 16
  uint64_t lo;
  uint32_t hi;
  memcpy (&lo, src, 8);
  memcpy (&hi, src + 8, 4);
  return (vb16) (v2q) { lo, hi };
#elif PIQ_W == 8
  uint32_t lo;
  uint16_t hi;
  memcpy (&lo, src, 4);
  memcpy (&hi, src + 4, 2);
  return (vb16) (v2q) { lo | (uint64_t) hi << 32, 0 };
#else
  uint16_t lo;
  memcpy (&lo, src, 2);
  return (vb16) (vu4) { lo | (uint32_t) src[2] << 16, 0, 0, 0 };
#endif
}

/* PIQ_W codes (each in [0, 63]) from their 3·PIQ_W/4 bytes. Code k of a group lies
 * in the 16-bit window of bytes (o, o + 1), o = {0, 0, 1, 2}[k] past the group's
 * first byte, at bit s = {0, 6, 4, 2}[k]; a 16-bit multiply by 2^(10 − s) moves it to
 * bits 10…15 (dropping every bit above it, the next code's included) and a shift by
 * 10 brings it down: the per-lane shift as one multiply, which every unit has on
 * 16-bit lanes. The words then narrow to bytes (even bytes; codes < 64). */
#define F6_WIN_(g) 3 * (g), 3 * (g) + 1, 3 * (g), 3 * (g) + 1, 3 * (g) + 1, 3 * (g) + 2, \
                   3 * (g) + 2, 3 * (g) + 3
#define F6_EVEN_ 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30

VINLINE vb16
f6_window_codes (vb16 win)
{
  const vh8 mul = { 1024, 16, 64, 256, 1024, 16, 64, 256 };
  return (vb16) (((vh8) win * mul) >> 10);
}

VINLINE vi
f6_load (const uint8_t *src)
{
  vb16 b = f6_bytes (src);
  vb16 c0 = f6_window_codes (PIQ_SHUF1 (b, vb16, F6_WIN_ (0), F6_WIN_ (1)));
#if PIQ_W == 16
  vb16 c1 = f6_window_codes (PIQ_SHUF1 (b, vb16, F6_WIN_ (2), F6_WIN_ (3)));
#else
  vb16 c1 = c0;                            /* PIQ_W ≤ 8: codes 0…7 are all there are */
#endif
  return PIQ_VEC_U8_TO_I32 (PIQ_SHUF2 (c0, c1, vb16, F6_EVEN_));
}

/* PIQ_W codes each at the top of its lane, bits 26…31, the bits below it whatever
 * lay there (mf_elem drops them), for the dequantize bodies: f6_load's windows and
 * multiplies (which leave the code at bits 10…15 of its word) without its shift
 * and byte narrowing; the words go to the high halves of the lanes. */
VINLINE vu
f6_load_top (const uint8_t *src)
{
  const vh8 mul = { 1024, 16, 64, 256, 1024, 16, 64, 256 };
  vb16 b = f6_bytes (src);
#if PIQ_W == 16 && defined(__AVX2__)
  /* the four windows in one 256-bit shuffle (each half reads the same 16 bytes) and
   * multiply: two 128-bit halves joined through memory cost a failed store forward
   * per vector, which made MXFP6's decode half as fast on Sapphire Rapids */
  const __m256i win = _mm256_setr_epi8 (F6_WIN_ (0), F6_WIN_ (1), F6_WIN_ (2), F6_WIN_ (3));
  const __m256i mul2 = _mm256_broadcastsi128_si256 ((__m128i) mul);
  vh w = (vh) _mm256_mullo_epi16 (_mm256_shuffle_epi8 (_mm256_broadcastsi128_si256 ((__m128i) b),
                                                       win), mul2);
#else
  vh8 w0 = (vh8) PIQ_SHUF1 (b, vb16, F6_WIN_ (0), F6_WIN_ (1)) * mul;
#if PIQ_W == 16
  vh8 w1 = (vh8) PIQ_SHUF1 (b, vb16, F6_WIN_ (2), F6_WIN_ (3)) * mul;
  vh w;
  memcpy (&w, &w0, 16);
  memcpy ((uint8_t *) &w + 16, &w1, 16);
#elif PIQ_W == 8
  vh w = w0;
#else
  vh w;
  memcpy (&w, &w0, sizeof w);
#endif
#endif
#ifdef PIQ_VEC_U16_TO_I32
  return (vu) PIQ_VEC_U16_TO_I32 (w) << 16;      /* one widening (GCC split it in two) */
#else
  return __builtin_convertvector (w, vu) << 16;
#endif
}

/* The groups' words G from 4·PIQ_W / 4 dwords that hold four code bytes each
 * (b0 | b1 << 8 | b2 << 16 | b3 << 24, every b < 64): each code's bits moved down
 * to its place (bytes never overlap: bits 6 and 7 of a code byte are 0). */
VINLINE vu4
f6_group_words (vu4 w)
{
  return (w & 0x3fu) | ((w >> 2) & 0xfc0u) | ((w >> 4) & 0x3f000u) | ((w >> 6) & 0xfc0000u);
}

/* The three low bytes of each dword of a 16-byte vector, in order, in its low 12. */
#define F6_PACK_LANE_(o) (o) + 0, (o) + 1, (o) + 2, (o) + 4, (o) + 5, (o) + 6, (o) + 8, (o) + 9, \
                         (o) + 10, (o) + 12, (o) + 13, (o) + 14, (o) + 3, (o) + 7, (o) + 11, (o) + 15

/* One vector of codes to its 3·PIQ_W/4 bytes at dst (tails and single vectors). */
VINLINE void
f6_store (uint8_t *dst, vi c)
{
  vb16 b = (vb16) f6_group_words ((vu4) codes_to_bytes (c));
  b = PIQ_SHUF1 (b, vb16, F6_PACK_LANE_ (0));
  memcpy (dst, &b, 3 * PIQ_W / 4);
}

/* The alignment of dst that f6_store4's streamed stores need (fquantize streams
 * only from such a dst): 16-byte stores at 48-byte steps (PIQ_W 16), 8-byte ones
 * (PIQ_W 8, 24-byte steps), 4-byte ones (PIQ_W 4, 12-byte steps). */
#define F6_STREAM_ALIGN (PIQ_W == 16 ? 16 : PIQ_W == 8 ? 8 : 4)

#ifdef PIQ_VEC_PACKS_DW
/* x86: four vectors of codes, narrowed by the saturating packs as the other code
 * widths are (fencode4), then each dword's four code bytes merged by the
 * multiply-adds, b0 + 64·b1 on words and w0 + 4096·w1 on dwords (the 2-bit codes'
 * merge with other factors): the word G of each group. The dword permutation
 * restores element order; then the three bytes of each dword are gathered in each
 * 128-bit lane (one byte shuffle) and the lanes' 12 bytes joined (one dword
 * permutation), 3·PIQ_W bytes in all. */
# if PIQ_W == 16
#  define F6_LANES_ F6_PACK_LANE_ (0), F6_PACK_LANE_ (16), F6_PACK_LANE_ (32), F6_PACK_LANE_ (48)
#  define F6_JOIN_ 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 3, 7, 11, 15
# elif PIQ_W == 8
#  define F6_LANES_ F6_PACK_LANE_ (0), F6_PACK_LANE_ (16)
#  define F6_JOIN_ 0, 1, 2, 4, 5, 6, 3, 7
# else
#  define F6_LANES_ F6_PACK_LANE_ (0)
# endif

VINLINE void
f6_store4 (uint8_t *dst, vi c0, vi c1, vi c2, vi c3, int stream)
{
  vw w0 = (vw) PIQ_VEC_PACKS_DW (c0, c1), w1 = (vw) PIQ_VEC_PACKS_DW (c2, c3);
  vbw b = (vbw) PIQ_VEC_PACKS_WB (w0, w1);
  vw p = (vw) PIQ_VEC_MADDUBS (b, (vbw) ((vw) { 0 } + 0x4001));
  vi g = (vi) PIQ_VEC_MADDWD (p, (vw) ((vi) { 0 } + 0x10000001));

  g = (vi) PIQ_VEC_FIX_DW (g);
  b = PIQ_SHUF1 ((vbw) g, vbw, F6_LANES_);
# if PIQ_W > 4
  g = PIQ_SHUF1 ((vi) b, vi, F6_JOIN_);
  b = (vbw) g;
# endif
# ifdef PIQ_VEC_STREAM
  if (stream)
    {
      /* dst is F6_STREAM_ALIGN-aligned (fquantize) */
      for (int k = 0; k < 3; k++)
        {
#  if PIQ_W == 16
          vb16 part;
          memcpy (&part, (const uint8_t *) &b + 16 * k, 16);
          PIQ_VEC_STREAM_16 (dst + 16 * k, part);
#  elif PIQ_W == 8
          uint64_t part;
          memcpy (&part, (const uint8_t *) &b + 8 * k, 8);
          PIQ_VEC_STREAM_8 (dst + 8 * k, part);
#  else
          uint32_t part;
          memcpy (&part, (const uint8_t *) &b + 4 * k, 4);
          PIQ_VEC_STREAM_4 (dst + 4 * k, part);
#  endif
        }
      return;
    }
# else
  (void) stream;
# endif
  memcpy (dst, &b, 3 * PIQ_W);
}
#else
VINLINE void
f6_store4 (uint8_t *dst, vi c0, vi c1, vi c2, vi c3, int stream)
{
  (void) stream;
  f6_store (dst, c0);
  f6_store (dst + 3 * PIQ_W / 4, c1);
  f6_store (dst + 3 * PIQ_W / 2, c2);
  f6_store (dst + 9 * PIQ_W / 4, c3);
}
#endif

/* ---- bnb FP4 (piq_fp4_bnb_encode, piq_fp4_bnb_values) ---- */

/* Lane k[j] (0…7) of the eight floats t0 ‖ t1, for PIQ_W 4: the units' byte
 * lookups (SSSE3's PSHUFB, AArch64's TBL) on the bytes 4k…4k + 3, where clang has
 * no variable shuffle and fperm2_f would go lane by lane. */
VINLINE vf
fb_tab8 (vf t0, vf t1, vi k)
{
#if PIQ_W == 4 && defined __SSSE3__
  __m128i idx = (__m128i) (k * 0x04040404 + 0x03020100);   /* bytes 0…31: PSHUFB reads bits 0…3 */
  __m128i lo = _mm_shuffle_epi8 ((__m128i) t0, idx), hi = _mm_shuffle_epi8 ((__m128i) t1, idx);
  return vsel (k > 3, (vf) hi, (vf) lo);
#elif PIQ_W == 4 && defined __aarch64__
  uint8x16x2_t t = { { (uint8x16_t) t0, (uint8x16_t) t1 } };
  return (vf) vqtbl2q_u8 (t, (uint8x16_t) (k * 0x04040404 + 0x03020100));
#else
  return fperm2_f (t0, t1, k);
#endif
}

/* The code of rank r (0…7) among bnb's magnitudes in increasing order,
 * {0, 1, 6, 7, 4, 5, 2, 3}: 4-bit fields of one constant. */
VINLINE vi
fbnb_order (vi r)
{
  return (vi) (((vu) fsplat_i ((int32_t) 0x32547610u) >> (vu) (r << 2)) & 15u);
}

#if PIQ_W == 16
/* bnb FP4 nearest by cells of 1/16 over [0, 1] (16 lanes): the number of thresholds
 * below cell k, and the threshold inside it (+Inf if none; no cell holds two), as
 * constants built from the thresholds by the preprocessor. */
#define FBNB_EDGE_(k) ((float) (k) / 16)
#define FBNB_BELOW_(t, k) + ((t) < FBNB_EDGE_ (k))
#define FBNB_INSIDE_(t, k) (t) >= FBNB_EDGE_ (k) && (t) < FBNB_EDGE_ ((k) + 1) ? (t) :
#define FBNB_16_(m) m (0), m (1), m (2), m (3), m (4), m (5), m (6), m (7), m (8), m (9), \
  m (10), m (11), m (12), m (13), m (14), m (15)
#define FBNB_BASE_(k) (0 PIQ_FP4_BNB_THRESHOLDS (FBNB_BELOW_, k))
#define FBNB_THR_(k) (PIQ_FP4_BNB_THRESHOLDS (FBNB_INSIDE_, k) INFINITY)
static const int32_t fbnb_base[16] = { FBNB_16_ (FBNB_BASE_) };
static const float fbnb_thr[16] = { FBNB_16_ (FBNB_THR_) };
#endif

/* piq_fp4_bnb_encode of v = x · inv, sign in bit 3 for v < 0 (NaN compares false
 * everywhere: code 0, as the scalar's). */
VINLINE vi
fbnb_encode (vf v, int st, vu h)
{
  vf av = (vf) ((vu) v & 0x7fffffffu);
  vi r = fsplat_i (0), c;

  if (!st)
    {
      /* nearest: bnb's decision tree on |v| is the number r of its seven thresholds
       * below |v| (the same binary32 literals and strict compares), mapped to the
       * code of the r-th magnitude */
#if PIQ_W == 16
      /* |v| · 16 is exact, so its truncation is |v|'s cell: the thresholds below
       * the cell, plus one if |v| is above the cell's own (NaN: cell 0, above none) */
      vf t = vmin (vmax (av * vsplat (16.0f), vsplat (0.0f)), vsplat (15.0f));
      vi k = __builtin_convertvector (t, vi);
      vi base;
      vf thr;
      memcpy (&base, fbnb_base, sizeof base);
      memcpy (&thr, fbnb_thr, sizeof thr);
      r = (vi) fperm1_f ((vf) base, k);
      r -= (vi) (fperm1_f (thr, k) < av);
#else
      /* written out, not a loop over a table: GCC kept that loop (seven broadcasts
       * from memory and a branch per vector), which held f32->fp4_bnb at half of
       * NF4's speed; as constants the broadcasts leave the loops that call this */
# define FBNB_COUNT_(t, r) r -= (vi) (av > vsplat (t));
      PIQ_FP4_BNB_THRESHOLDS (FBNB_COUNT_, r)
# undef FBNB_COUNT_
#endif
      c = fbnb_order (r);
    }
  else
    {
      /* stochastic: r = the number of levels L1…L6 at or below |v| (the scalar's
       * walk up the increasing levels L0…L7), then up to rank r + 1 with probability
       * (|v| − L[r]) / (L[r + 1] − L[r]), the scalar's binary32 operations. |v| at a
       * level gives 0 there: the scalar's exact case. |v| ≥ 1 needs no case of its
       * own: r = 6 and the fraction is ≥ (1 − L6) / (1 − L6) = 1 > u (rounding is
       * monotonic), so rank 7, code 3, as the scalar's; +Inf too. NaN stays at rank
       * 0 (the fraction is NaN). */
      /* piq_fp4_bnb_values of codes 0, 1, 6, 7, 4, 5, 2, 3: the same constant
       * expressions, so the same binary32 values; padded for 16 lanes */
      static const float lv[16] = { 0.0f, 0.0625f / 12, 2.0f / 12, 3.0f / 12, 4.0f / 12,
                                    6.0f / 12, 8.0f / 12, 12.0f / 12, 1.0f, 1.0f, 1.0f,
                                    1.0f, 1.0f, 1.0f, 1.0f, 1.0f };
      vf t0, t1, lo, hi;
#pragma GCC unroll 6
      for (int k = 1; k < 7; k++)          /* unrolled: constants, as nearest's */
        r -= (vi) (vsplat (lv[k]) <= av);
      memcpy (&t0, lv, sizeof t0);
#if PIQ_W == 16
      (void) t1;
      lo = fperm1_f (t0, r);
      hi = fperm1_f (t0, r + 1);
#elif PIQ_W == 8
      (void) t1;
      lo = fperm1_f (t0, r);
      hi = fperm1_f (t0, r + 1);
#else
      memcpy (&t1, lv + 4, sizeof t1);
      lo = fb_tab8 (t0, t1, r);
      hi = fb_tab8 (t0, t1, r + 1);
#endif
      r -= (vi) (funiform (h) < (av - lo) / (hi - lo));
      c = fbnb_order (r);
    }
  return c | ((vi) (v < vsplat (0.0f)) & 8);
}

/* piq_fp4_bnb_values[c] (c in 0…15; bit 3 the sign): one or two table vectors, or
 * for PIQ_W 4 the magnitude of c & 7 with the sign put back (the table's negative
 * half is its positive half negated, −0 included). */
VINLINE vf
fbnb_decode (vi c)
{
  vf t0, t1;

  memcpy (&t0, piq_fp4_bnb_values, sizeof t0);
#if PIQ_W == 16
  (void) t1;
  return fperm1_f (t0, c);
#elif PIQ_W == 8
  memcpy (&t1, piq_fp4_bnb_values + 8, sizeof t1);
  return fperm2_f (t0, t1, c);
#else
  memcpy (&t1, piq_fp4_bnb_values + 4, sizeof t1);
  return (vf) ((vi) fb_tab8 (t0, t1, c & 7) | (c & 8) << 28);
#endif
}

/* The specializations these formats add to FQ_LIST and FD_LIST (same fields):
 * FP6 always saturates (no Inf or NaN code); bnb FP4's quantize entries are
 * FQ_LIST's (nearest and stochastic share them). */
#define FQ_LIST_FP6(X) \
  X (PIQ_C_FP6_E2M3, 6, 0, 1, 0) X (PIQ_C_FP6_E3M2, 6, 0, 1, 0)
#define FD_LIST_FP6(X) \
  X (PIQ_C_FP6_E2M3, 6, 0, 0) X (PIQ_C_FP6_E3M2, 6, 0, 0) \
  X (PIQ_C_FP4_BNB, 4, 0, 0) X (PIQ_C_FP4_BNB, 4, 1, 0)

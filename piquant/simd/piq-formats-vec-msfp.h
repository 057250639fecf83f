/* piq-formats-vec-msfp.h: the vector bodies of NF8 and block floating point (MSFP)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-formats-vec-body.h after its helpers (fstats, fstore, the
 * transposing max FT_TREE_, the stochastic keys …), before its dispatch. Quantize,
 * nearest and stochastic, and dequantize, SET and ADD, of f32 data:
 * - NF8 with f32 or f16 block scales (a multiple of PIQ_W elements) or per tensor;
 * - BFP with 4-bit codes (BFP3: MSFP12, either nibble order) and 8-bit codes (BFP7:
 *   MSFP16) with shared exponents (E8M0 boxes of a multiple of PIQ_W) or per tensor.
 * The other BFP widths (3, 5, 6, 7 and 9 bits), ragged last blocks and calls whose
 * stochastic indices cross a multiple of 2^32 run the scalar driver.
 *
 * Same bytes as the scalar codecs (piq-formats-private.h, piq-formats.c):
 * - NF8 nearest is the number of the precomputed thresholds piq_nf8_midpoints below
 *   x · inv: each is the last binary32 value at which the scalar's binary32 rule
 *   x − lo ≤ hi − x still picks the lower level, so counting them is that rule
 *   (tests/test-kernels.c checks each threshold). Stochastic counts the levels at or
 *   below x · inv, as the scalar's binary search finds lo, and draws between lo and
 *   hi with the scalar's binary32 (x − lo) / (hi − lo). Both counts come from v's
 *   cell of 1/256 (nf8_count: one lookup and one compare); the levels lo and hi
 *   are permutes on AVX-512, not gathers.
 * - BFP: the box exponent E = the biased exponent of max |x| + 1, + 1 more where
 *   the m-bit rounding of max |x| carries (the scalar's nearbyintf test, as an add
 *   at the mantissa's bit 23 − m), clamped to 254; elements are x · 2^(127 + m − E),
 *   the exact scaling ldexpf does, rounded (nearest even, or the stochastic rule on
 *   the clamped value: the bounds ±(2^m − 1) are integers, so clamping commutes with
 *   rounding) to a sign bit and an m-bit magnitude. A box whose max |x| is 0,
 *   subnormal or not finite, or whose 2^(127 + m − E) is not a binary32 value, takes
 *   the scalar codec.
 */

/* Which calls these bodies take (both directions). */
VINLINE int
mvec_takes (const PiqBlockArgs *a)
{
  if (a->code < 0 || a->bits == 0 || (!a->fixed && a->block % PIQ_W != 0))
    return 0;
  if (a->code == PIQ_C_NF8)
    return a->fixed || a->scale_kind != PIQ_SCALE_E8M0;
  if (piq_code_family[a->code] == PIQ_FAMILY_BFP)
    return (a->bits == 4 || a->bits == 8) && (a->fixed || a->scale_kind == PIQ_SCALE_E8M0);
  return 0;
}

/* Lane j: t[k[j]] of a table of 256 floats, 0 ≤ k[j] < 256. AVX-512: eight
 * two-vector permutes (index bits 0 … 4) and a tree of blends on bits 5, 6 and 7, no
 * gather (slow on AMD, and on Intel with the gather data sampling fix); AVX2 its
 * gather; lane by lane elsewhere. */
VINLINE vf
mlut (const float *t, vi k)
{
#if PIQ_W == 16 && defined __AVX512F__
  const __m512i ki = (__m512i) k;
  const __mmask16 b5 = _mm512_test_epi32_mask (ki, _mm512_set1_epi32 (32));
  const __mmask16 b6 = _mm512_test_epi32_mask (ki, _mm512_set1_epi32 (64));
  const __mmask16 b7 = _mm512_test_epi32_mask (ki, _mm512_set1_epi32 (128));
#define MLUT2_(q) _mm512_permutex2var_ps (_mm512_loadu_ps (t + 32 * (q)), ki, \
                                          _mm512_loadu_ps (t + 32 * (q) + 16))
  /* written out: as a loop over an array GCC kept the array on the stack */
  const __m512 p0 = _mm512_mask_blend_ps (b5, MLUT2_ (0), MLUT2_ (1));
  const __m512 p1 = _mm512_mask_blend_ps (b5, MLUT2_ (2), MLUT2_ (3));
  const __m512 p2 = _mm512_mask_blend_ps (b5, MLUT2_ (4), MLUT2_ (5));
  const __m512 p3 = _mm512_mask_blend_ps (b5, MLUT2_ (6), MLUT2_ (7));
#undef MLUT2_
  return (vf) _mm512_mask_blend_ps (b7, _mm512_mask_blend_ps (b6, p0, p1),
                                    _mm512_mask_blend_ps (b6, p2, p3));
#elif PIQ_W == 8 && defined __AVX2__
  return (vf) _mm256_i32gather_ps (t, (__m256i) k, 4);
#else
  vf r;
  for (int j = 0; j < PIQ_W; j++)
    r[j] = t[k[j]];
  return r;
#endif
}

/* Lane j: cells[k[j]] of a table of PiqNf8Cell, threshold t and count n. AVX-512
 * and AVX2: one 64-bit gather per cell ({t, n} together: half the loads of two
 * 32-bit gathers, which took most of f32->nf8's time on Zen 3), then a shuffle of
 * the halves (the cells are 512: permutes would take 32 of each); lane by lane
 * elsewhere. */
_Static_assert (sizeof (PiqNf8Cell) == 8, "mcell gathers a cell as one 64-bit element");

VINLINE void
mcell (const PiqNf8Cell *cells, vi k, vf *t, vi *n)
{
#if PIQ_W == 16 && defined __AVX512F__
  const __m512i q0 = _mm512_i32gather_epi64 (_mm512_castsi512_si256 ((__m512i) k), cells, 8);
  const __m512i q1 = _mm512_i32gather_epi64 (_mm512_extracti64x4_epi64 ((__m512i) k, 1), cells, 8);
  const __m512i even = _mm512_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  *t = (vf) _mm512_permutex2var_epi32 (q0, even, q1);
  *n = (vi) _mm512_permutex2var_epi32 (q0, _mm512_add_epi32 (even, _mm512_set1_epi32 (1)), q1);
#elif PIQ_W == 8 && defined __AVX2__
  /* cells of lanes 0, 1, 4, 5 and of 2, 3, 6, 7: the in-lane shuffles then give
   * lanes 0 … 7 in order */
  const __m256i kk = _mm256_permutevar8x32_epi32 ((__m256i) k,
                                                  _mm256_setr_epi32 (0, 1, 4, 5, 2, 3, 6, 7));
  const __m256 q0 = (__m256) _mm256_i32gather_epi64 ((const long long *) cells,
                                                     _mm256_castsi256_si128 (kk), 8);
  const __m256 q1 = (__m256) _mm256_i32gather_epi64 ((const long long *) cells,
                                                     _mm256_extracti128_si256 (kk, 1), 8);
  *t = (vf) _mm256_shuffle_ps (q0, q1, 0x88);
  *n = (vi) _mm256_shuffle_ps (q0, q1, 0xdd);
#else
  for (int j = 0; j < PIQ_W; j++)
    {
      (*t)[j] = cells[k[j]].t;
      (*n)[j] = cells[k[j]].n;
    }
#endif
}

/* The number of a table's thresholds below v (le: at or below), v in [−1, 1]: by
 * v's cell of 1/256 (piq_nf8_cells, tools/gen-nf8.py), which holds at most one
 * of them, the count below the cell plus one if v passes the cell's own. The cell
 * is the generator's binary32 fl (v + 1) · 256, truncated (the product is exact). */
VINLINE vi
nf8_count (vf v, const PiqNf8Cell *cells, int le)
{
  vi k = __builtin_convertvector ((v + vsplat (1.0f)) * vsplat (256.0f), vi), n;
  vf t;

  k = (vi) vsel ((vi) (k > PIQ_NF8_CELLS - 1), (vf) fsplat_i (PIQ_NF8_CELLS - 1), (vf) k);
  mcell (cells, k, &t, &n);
  return n - (le ? (vi) (t <= v) : (vi) (t < v));
}

/* piq_nf8_encode of v = x · inv. fin: no lane is NaN (a NaN lane is taken as 0,
 * whose code 127 is the scalar's code of NaN). The counts are of v clamped to
 * [−1, 1], which keeps them (every threshold and level 1 … 254 lies inside) and the
 * stochastic draw (v ≤ −1 never draws up from code 0). */
VINLINE vi
nf8_encode (vf v, int fin, int st, vu h)
{
  vi c;

  if (!fin)
    v = (vf) ((vi) v & (vi) (v == v));
  v = vmin (vmax (v, vsplat (-1.0f)), vsplat (1.0f));
  if (st)
    {
      /* c levels of 1 … 255 at or below v: lo = level c, hi = level c + 1 (v = 1,
       * c = 255, is code 255); v = −1 gives c = 0 and a fraction 0, never drawn up,
       * as the scalar's code 0; v = lo gives 0 too */
      vi ci;
      vf lo, hi;
      c = nf8_count (v, piq_nf8_cells[1], 1);
      ci = c + (vi) (c > 254);
      lo = mlut (piq_nf8_values, ci);
      hi = mlut (piq_nf8_values, ci + 1);
      c = ci - (vi) (funiform (h) < (v - lo) / (hi - lo));
      c = (vi) vsel ((vi) (v >= vsplat (1.0f)), (vf) fsplat_i (255), (vf) c);
    }
  else
    c = nf8_count (v, piq_nf8_cells[0], 0);
  return c;
}

/* The BFP code of x with the box's multiplier mul (2^−shift, or 1 / scale per
 * tensor): sign bit m, magnitude below. fin: no lane of x · mul is NaN. */
VINLINE vi
bfp_encode (vf x, vf mul, int mb, int fin, int st, vu h)
{
  const float top = (float) ((1 << mb) - 1);
  vf v = x * mul;
  vi r, s;

  if (!fin)
    v = (vf) ((vi) v & (v == v));          /* NaN: magnitude 0 */
  v = vmin (vmax (v, vsplat (-top)), vsplat (top));
  r = st ? vstoch_r (v, h) : frint (v);
  s = r >> 31;
  r = (r ^ s) - s;                         /* |r|: the scalar's fabsf */
  return r | (vi) (((vu) x >> 31) << mb);  /* the sign of x, as signbit */
}

VINLINE vi
mencode (vf x, vf mul, int code, int mb, int fin, int st, uint32_t key, uint32_t p)
{
  vu h = st ? vhash (key, p) : (vu) fsplat_i (0);

  if (code == PIQ_C_NF8)
    return nf8_encode (x * mul, fin, st, h);
  return bfp_encode (x, mul, mb, fin, st, h);
}

/* Four vectors of codes (0 … 255) to dst in element order; stream as fencode4. */
VINLINE void
mstore4 (uint8_t *dst, vi c0, vi c1, vi c2, vi c3, int bits, int hf, int stream)
{
#ifdef PIQ_VEC_PACKS_DW
  vw w0 = (vw) PIQ_VEC_PACKS_DW (c0, c1), w1 = (vw) PIQ_VEC_PACKS_DW (c2, c3);
  store_codes4 (dst, (vbw) PIQ_VEC_PACKUS_WB (w0, w1), bits, 0, 0, hf, stream);
#else
  (void) stream;
  fstore4_each (dst, c0, c1, c2, c3, bits, hf);
#endif
}

/* The codes of n elements (a multiple of PIQ_W) with one multiplier; ix: the low
 * 32 bits of x[0]'s index; pf: prefetch x (per tensor, the first pass over it). */
VINLINE void
mspan (const float *x, size_t n, float mul, uint8_t *dst, int code, int mb, int bits, int hf,
       int fin, int st, uint32_t key, uint32_t ix, int pf, int stream)
{
  const size_t step = PIQ_W * bits / 8;
  const vf m = vsplat (mul);
  size_t i = 0;

  for (; i + 4 * PIQ_W <= n; i += 4 * PIQ_W, dst += 4 * step)
    {
      uint32_t p = ix + (uint32_t) i;
      if (pf)
        fprefetch4 (x + i + PIQ_PREFETCH);
      mstore4 (dst, mencode (fload (x + i), m, code, mb, fin, st, key, p),
               mencode (fload (x + i + PIQ_W), m, code, mb, fin, st, key, p + PIQ_W),
               mencode (fload (x + i + 2 * PIQ_W), m, code, mb, fin, st, key, p + 2 * PIQ_W),
               mencode (fload (x + i + 3 * PIQ_W), m, code, mb, fin, st, key, p + 3 * PIQ_W),
               bits, hf, stream);
    }
  for (; i < n; i += PIQ_W, dst += step)
    fstore (dst, mencode (fload (x + i), m, code, mb, fin, st, key, ix + (uint32_t) i), bits, hf);
}

/* One block from its statistics (the scalar parameters), element `at` of the call
 * (block index b). A BFP box whose multiplier 2^−shift is not a binary32 value
 * (max |x| below about 2^(m − 128)) runs the scalar codec. */
VINLINE void
mblock (const PiqBlockArgs *a, const float *x, uint64_t first, size_t at, uint8_t *codes,
        uint8_t *scales, int32_t *zero_points, int code, int mb, int bits, int hf, int st,
        uint32_t key, uint32_t ix)
{
  PiqBlockStats bst;
  PiqBlockP p;
  uint8_t *dst = codes + (first + at) * bits / 8;
  const uint64_t b = (first + at) / a->block;

  if (code != PIQ_C_NF8)
    {
      fstats (x + at, a->block, code, &bst);
      piq_block_params (a, &bst, a->block, b, scales, zero_points, &p);
      if (p.nan_scale)
        memset (dst, 0, a->block * bits / 8);   /* the scalar's codes of a NaN box */
      else if (-p.shift <= 127)
        mspan (x + at, a->block, piq_pow2f (-p.shift), dst, code, mb, bits, hf, 0, st, key,
               ix + (uint32_t) at, 0, 0);
      else
        piq_block_quantize (a, PIQ_F_F32, x + at, first + at, a->block, codes, scales, zero_points);
      return;
    }
  fstats (x + at, a->block, code, &bst);
  piq_block_params (a, &bst, a->block, b, scales, zero_points, &p);
  mspan (x + at, a->block, p.inv, dst, code, mb, bits, hf, 0, st, key, ix + (uint32_t) at, 0, 0);
}

/* PIQ_W whole blocks from element `at`: their max |x| by the transposing reduction,
 * each lane's parameters as piq_block_params derives them (NF8 with f32 scales:
 * scale max |x|, inverse 1 / max |x|; BFP: E and 2^(127 + m − E) from the bits of
 * max |x|), then the codes, four vectors at a time. Lanes those rules do not cover
 * (NaN or Inf in the block, max |x| zero or too small) take mblock. */
VINLINE void
mgroup (const PiqBlockArgs *a, const float *x, uint64_t first, size_t at, uint8_t *codes,
        uint8_t *scales, int32_t *zero_points, int code, int mb, int bits, int hf, int st,
        int stream, uint32_t key, uint32_t ix)
{
  const size_t K = a->block / PIQ_W, step = PIQ_W * bits / 8;
  const int ksh = (K & (K - 1)) == 0 ? __builtin_ctzl (K) : -1;
  const uint64_t b_first = (first + at) / a->block;
  const float *xs = x + at;
  uint8_t *dst = codes + (first + at) * bits / 8;
  vu m[PIQ_W];
  vi bad, e = fsplat_i (0);
  vf mul;
  float mbuf[PIQ_W];
  int32_t badbuf[PIQ_W], ebuf[PIQ_W];
  uint32_t abuf[PIQ_W];

  switch (K)
    {
    case 1:  fgroup_amax (xs, 1, m); break;
    case 2:  fgroup_amax (xs, 2, m); break;
    case 4:  fgroup_amax (xs, 4, m); break;
    default: fgroup_amax (xs, K, m); break;
    }
  FT_TREE_ (m)
  if (code == PIQ_C_NF8)
    {
      mul = vsplat (1.0f) / (vf) m[0];
      bad = (vi) (m[0] >= 0x7f800000u) | (vi) ((vu) mul >= 0x7f800000u);
    }
  else
    {
      /* the rounding of max |x| to m bits carries into the exponent exactly when its
       * mantissa is at least 2^23 − 2^(23 − m) (nearbyintf's half-way case is even,
       * 2^m, so it carries too) */
      e = (vi) ((m[0] + (1u << (23 - mb))) >> 23) + 1;
      e = (vi) vsel ((vi) (e > 254), (vf) fsplat_i (254), (vf) e);
      bad = (vi) (m[0] < 0x00800000u) | (vi) (m[0] >= 0x7f800000u) | (vi) (e < mb);
      mul = (vf) ((fsplat_i (254 + mb) - e) << 23);   /* 2^(127 + m − E) */
    }

  if (!fany (bad))
    {
      if (code == PIQ_C_NF8)
        memcpy (scales + 4 * b_first, &m[0], sizeof m[0]);   /* the scale is max |x| */
      else
        {
          vb eb = __builtin_convertvector (e, vb);
          memcpy (scales + b_first, &eb, sizeof eb);
        }
      memcpy (mbuf, &mul, sizeof mbuf);
      /* whole vectors of the group, four at a time, each with its block's multiplier
       * (vector v's block by a shift where K is a power of two: a 64-bit division per
       * vector cost NF8 and MSFP more than their codes' arithmetic) */
      for (size_t i = 0; i < PIQ_W * K * PIQ_W; i += 4 * PIQ_W, dst += 4 * step)
        {
          uint32_t p = ix + (uint32_t) (at + i);
          size_t v = i / PIQ_W;
#define MBLK_(d) mbuf[ksh >= 0 ? (v + (d)) >> ksh : (v + (d)) / K]
          fprefetch4 (xs + i + PIQ_W * K * PIQ_W + PIQ_PREFETCH);   /* each of the four lines */
          mstore4 (dst,
                   mencode (fload (xs + i), vsplat (MBLK_ (0)), code, mb, 1, st, key, p),
                   mencode (fload (xs + i + PIQ_W), vsplat (MBLK_ (1)), code, mb, 1, st, key,
                            p + PIQ_W),
                   mencode (fload (xs + i + 2 * PIQ_W), vsplat (MBLK_ (2)), code, mb, 1, st, key,
                            p + 2 * PIQ_W),
                   mencode (fload (xs + i + 3 * PIQ_W), vsplat (MBLK_ (3)), code, mb, 1, st, key,
                            p + 3 * PIQ_W),
                   bits, hf, stream);
#undef MBLK_
        }
      return;
    }

  memcpy (mbuf, &mul, sizeof mbuf);
  memcpy (badbuf, &bad, sizeof badbuf);
  memcpy (ebuf, &e, sizeof ebuf);
  memcpy (abuf, &m[0], sizeof abuf);
  for (int j = 0; j < PIQ_W; j++)
    {
      size_t bat = at + (size_t) j * a->block;
      if (badbuf[j])
        {
          mblock (a, x, first, bat, codes, scales, zero_points, code, mb, bits, hf, st, key, ix);
          continue;
        }
      if (code == PIQ_C_NF8)
        memcpy (scales + 4 * (b_first + (uint64_t) j), &abuf[j], 4);
      else
        scales[b_first + (uint64_t) j] = (uint8_t) ebuf[j];
      mspan (x + bat, a->block, mbuf[j], codes + (first + bat) * bits / 8, code, mb, bits, hf, 1,
             st, key, ix + (uint32_t) bat, 0, 0);
    }
}

VINLINE void
mquantize (const PiqBlockArgs *a, const float *x, uint64_t first, size_t n, uint8_t *codes,
           uint8_t *scales, int32_t *zero_points, int code, int bits, int hf, int st)
{
  const int mb = code == PIQ_C_NF8 ? 0 : piq_bfp_mbits (code);
  uint8_t *dst = codes + first * (uint64_t) bits / 8;
  int stream = a->stream && (uintptr_t) dst % (4 * PIQ_W * bits / 8) == 0;
  /* element i's index is index0 + first + i: its low 32 bits ix + i, the high ones
   * (in key) the same throughout the call */
  const uint32_t ix = (uint32_t) (a->index0 + first);
  uint32_t key = 0;
  size_t b0 = 0;

  if (st && !fstoch_key (a, a->index0 + first, n, &key))
    {
      piq_block_quantize (a, PIQ_F_F32, x, first, n, codes, scales, zero_points);
      return;
    }
  if (a->fixed)
    {
      PiqBlockP p;
      piq_block_params_fixed (a, &p);
      b0 = n - n % PIQ_W;
      mspan (x, b0, p.inv, dst, code, mb, bits, hf, 0, st, key, ix, 1, stream);
    }
  else
    {
      const size_t gsize = PIQ_W * a->block;
      /* NF8's f16 scales round max |x| first: those blocks take the scalar parameters */
      if (code != PIQ_C_NF8 || a->scale_kind == PIQ_SCALE_F32)
        for (; b0 + gsize <= n; b0 += gsize)
          mgroup (a, x, first, b0, codes, scales, zero_points, code, mb, bits, hf, st, stream,
                  key, ix);
      for (; b0 + a->block <= n; b0 += a->block)
        mblock (a, x, first, b0, codes, scales, zero_points, code, mb, bits, hf, st, key, ix);
    }
  stream_fence (stream);
  if (b0 < n)   /* the ragged last block, or the per-tensor tail */
    piq_block_quantize (a, PIQ_F_F32, x + b0, first + b0, n - b0, codes, scales, zero_points);
}

/* ---- dequantize ---- */

VINLINE vf
mdecode (const PiqBlockP *p, vi c, int code, int mb, int fixed)
{
  vf v;

  if (p->nan_scale)
    return vsplat (NAN);
  if (code == PIQ_C_NF8)
    return mlut (piq_nf8_values, c) * vsplat (p->scale);
  /* mag · 2^shift is exact (mag < 2^9, 2^shift ≥ 2^−135), as ldexpf; the sign
   * flipped as the scalar's −v */
  v = __builtin_convertvector (c & ((1 << mb) - 1), vf) *
      vsplat (fixed ? p->scale : piq_pow2f (p->shift));
  return (vf) ((vi) v ^ ((c >> mb) << 31));
}

/* mdecode with the block's multiplier m as a vector (2^shift, or the NF8 scale) */
VINLINE vf
mdecode_m (vi c, vf m, int code, int mb)
{
  vf v;

  if (code == PIQ_C_NF8)
    return mlut (piq_nf8_values, c) * m;
  v = __builtin_convertvector (c & ((1 << mb) - 1), vf) * m;
  return (vf) ((vi) v ^ ((c >> mb) << 31));
}

/* PIQ_W whole blocks from element b0 with their multipliers from one vector load of
 * the scales (NF8: the f32 scales themselves; BFP: 2^(E − 127 − m) built from the
 * bits of E), not a call to piq_block_load_params and piq_pow2f per block (a box of
 * MSFP is one vector). Returns 0, decoding nothing, where a box's multiplier is not
 * a normal binary32 (E ≤ m) or its scale is NaN (E = 255): mdequantize_run's block
 * loop takes those. */
VINLINE int
mdequantize_group (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                   uint64_t first, size_t b0, float *y, int add, int stream, int code, int mb,
                   int bits, int hf)
{
  const uint64_t bi = (first + b0) / a->block;
  const uint8_t *src = codes + (first + b0) * (uint64_t) bits / 8;
  float mbuf[PIQ_W];

  if (code == PIQ_C_NF8)
    memcpy (mbuf, scales + 4 * bi, sizeof mbuf);
  else
    {
      vb eb;
      vi e;
      memcpy (&eb, scales + bi, sizeof eb);
      e = __builtin_convertvector (eb, vi);
      if (fany ((vi) (e <= mb) | (vi) (e == 255)))
        return 0;
      e = (e - mb) << 23;
      memcpy (mbuf, &e, sizeof mbuf);
    }
  for (size_t j = 0; j < PIQ_W; j++)
    {
      const vf m = vsplat (mbuf[j]);
      float *yb = y + b0 + j * a->block;
      for (size_t i = 0; i < a->block; i += PIQ_W, src += PIQ_W * bits / 8)
        fput (yb + i, mdecode_m (fload_codes (src, bits, 0, hf), m, code, mb), add, stream);
    }
  return 1;
}

/* add and stream (SET to vector-aligned y, past the caches) are constants here */
VINLINE void
mdequantize_run (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                 uint64_t first, size_t n, float *y, int add, int stream, int code, int bits,
                 int hf)
{
  const int mb = code == PIQ_C_NF8 ? 0 : piq_bfp_mbits (code);
  size_t step = a->fixed ? n - n % PIQ_W : a->block, b0 = 0;

  /* NF8's f16 scales convert one by one (piq_block_get_scale): the block loop */
  if (!a->fixed && (code != PIQ_C_NF8 || a->scale_kind == PIQ_SCALE_F32))
    while (b0 + PIQ_W * a->block <= n)
      {
        if (mdequantize_group (a, codes, scales, first, b0, y, add, stream, code, mb, bits, hf))
          {
            b0 += PIQ_W * a->block;
            continue;
          }
        /* a group with a special box: its blocks one by one */
        for (size_t end = b0 + PIQ_W * a->block; b0 < end; b0 += a->block)
          {
            PiqBlockP p;
            const uint8_t *src = codes + (first + b0) * (uint64_t) bits / 8;
            piq_block_load_params (a, scales, NULL, (first + b0) / a->block, &p);
            for (size_t i = 0; i < a->block; i += PIQ_W, src += PIQ_W * bits / 8)
              fput (y + b0 + i, mdecode (&p, fload_codes (src, bits, 0, hf), code, mb, 0), add,
                    stream);
          }
      }
  for (; step > 0 && b0 + step <= n; b0 += step)
    {
      PiqBlockP p;
      const uint8_t *src = codes + (first + b0) * (uint64_t) bits / 8;

      piq_block_load_params (a, scales, NULL, (first + b0) / a->block, &p);
      for (size_t i = 0; i < step; i += PIQ_W, src += PIQ_W * bits / 8)
        {
          vf v = mdecode (&p, fload_codes (src, bits, 0, hf), code, mb, a->fixed);
          fput (y + b0 + i, v, add, stream);
        }
    }
  stream_fence (stream);
  if (b0 < n)
    piq_block_dequantize (a, codes, scales, NULL, first + b0, n - b0, PIQ_F_F32, y + b0, add);
}

VINLINE void
mdequantize (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales, uint64_t first,
             size_t n, float *y, int add, int code, int bits, int hf)
{
#ifdef PIQ_VEC_STREAM
  if (!add && a->stream && (uintptr_t) y % sizeof (vf) == 0)
    mdequantize_run (a, codes, scales, first, n, y, 0, 1, code, bits, hf);
  else
#endif
  if (add)
    mdequantize_run (a, codes, scales, first, n, y, 1, 0, code, bits, hf);
  else
    mdequantize_run (a, codes, scales, first, n, y, 0, 0, code, bits, hf);
}

/* The specializations: (format, code bits, high nibble first). */
#define MSFP_LIST(X) \
  X (PIQ_C_NF8, 8, 0) X (PIQ_C_BFP7, 8, 0) X (PIQ_C_BFP3, 4, 0) X (PIQ_C_BFP3, 4, 1)

/* Returns 0 for the calls these bodies do not take. */
VINLINE int
mquantize_f32 (const PiqBlockArgs *a, const float *x, uint64_t first, size_t n, uint8_t *codes,
               uint8_t *scales, int32_t *zero_points)
{
  if (!mvec_takes (a))
    return 0;
#define MQ_(c, b, h) \
  if (a->code == (c) && a->bits == (b) && a->high_first == (h)) \
    { \
      if (a->stochastic) \
        mquantize (a, x, first, n, codes, scales, zero_points, c, b, h, 1); \
      else \
        mquantize (a, x, first, n, codes, scales, zero_points, c, b, h, 0); \
      return 1; \
    }
  MSFP_LIST (MQ_)
#undef MQ_
  return 0;
}

VINLINE int
mdequantize_f32 (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                 uint64_t first, size_t n, float *y, int add)
{
  if (!mvec_takes (a))
    return 0;
#define MD_(c, b, h) \
  if (a->code == (c) && a->bits == (b) && a->high_first == (h)) \
    { \
      mdequantize (a, codes, scales, first, n, y, add, c, b, h); \
      return 1; \
    }
  MSFP_LIST (MD_)
#undef MD_
  return 0;
}

/* piq-qat-vec-body.h: fake quantization's forward and backward kernels, PIQ_W lanes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h. Every operation is the binary32 operation of
 * the scalar reference (piq-kernels-scalar.c, qat_forward_float / qat_backward_float),
 * lane-wise and without branches, or one that gives the same bits (the forward pass
 * compares rne(x · inv) with qmin − zp and qmax − zp: vqat_fw_value), so the values,
 * the mask and the source gradient are its bytes. f16 data and gradients widen in
 * registers (vload_f: the ISA's binary16 conversion) and y / dx round back the same
 * way (vstore_op), exactly as piq_load_f and piq_store_f do. Where every type read
 * or written is bf16, the passes go two vectors at a time ("pairs": the even and
 * odd elements of 2·PIQ_W, see vqat_load_bf16_pair), which widens and narrows with
 * shifts and masks instead of shuffles. The element types are compile-time
 * constants of each instantiation below, so each loop is as tight as the f32 one.
 * The gradient terms go into the same 16 binary64 lanes as there: a block of 16
 * elements starting at a multiple of 16 in lane order fills lanes 0 … 15 with one
 * widening add per lane, PIQ_W lanes per vector (32 / PIQ_W accumulators of
 * PIQ_W / 2 lanes for each sum; qat_lane says which), so each lane sees the same
 * additions in the same order; the elements before the first such block and after
 * the last whole unit go through the scalar kernel with their lane offset.
 */

/* rne() lane-wise: nearbyint, ties to even, −0 kept, magnitudes of 2^23 and more,
 * ±Inf and NaN as they are. The ISA's round-to-integral instruction in the nearest
 * mode (AVX-512 VRNDSCALEPS, SSE4.1/AVX ROUNDPS, AArch64 FRINTN) computes exactly
 * that in one instruction, where the portable form below takes seven; it is the
 * costliest step of the backward pass in cache. Its inputs are results of binary32
 * arithmetic, so they are never signalling NaNs (which the instructions would quiet
 * and the portable form would not). The portable form: |v| < 2^23 rounded by adding
 * and subtracting 2^23 in the default rounding mode, the sign put back. */
VINLINE vf
vqat_rne (vf v)
{
#if PIQ_W == 16 && defined(__AVX512F__)
  return (vf) _mm512_roundscale_ps ((__m512) v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif PIQ_W == 8 && defined(__AVX__)
  return (vf) _mm256_round_ps ((__m256) v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif PIQ_W == 4 && defined(__SSE4_1__)
  return (vf) _mm_round_ps ((__m128) v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif PIQ_W == 4 && defined(__aarch64__)
  return (vf) vrndnq_f32 ((float32x4_t) v);
#else
  const vf magic = vsplat (0x1p23f);
  vi sign = (vi) v & INT32_MIN;
  vf a = (vf) ((vi) v & INT32_MAX);
  vf r = (vf) ((vi) ((a + magic) - magic) | sign);
  return vsel (a < magic, r, v);
#endif
}

/* Whether any lane of a comparison's result is set. */
VINLINE int
vqat_any (vi m)
{
#ifdef PIQ_VEC_ANY
  return PIQ_VEC_ANY (m);
#else
  int32_t l[PIQ_W], r = 0;

  memcpy (l, &m, sizeof l);
  for (int k = 0; k < PIQ_W; k++)
    r |= l[k];
  return r != 0;
#endif
}

/* Lane masks (vqm) and their uses, in the ISA's own form where
 * the generic one costs more: AVX-512 compares into a mask register and blends by
 * it in one instruction each (the vector form of a comparison is the mask expanded
 * to a register, and a select of two values by it two instructions). */
#if PIQ_W == 16 && defined(__AVX512F__)
typedef __mmask16 vqm;
VINLINE vqm vqat_eq (vf a, vf b) { return _mm512_cmp_ps_mask ((__m512) a, (__m512) b, _CMP_EQ_OQ); }
VINLINE vf vqat_sel (vqm m, vf a, vf b) { return (vf) _mm512_mask_blend_ps (m, (__m512) b, (__m512) a); }
VINLINE vqm vqat_and (vqm a, vqm b) { return a & b; }
VINLINE int vqat_all (vqm m) { return m == 0xffff; }
/* the mask as PIQ_W bytes 0 or 1 (AVX-512 BW and VL: one masked move) */
VINLINE void vqat_store_mask (uint8_t *p, vqm m) { __m128i b = _mm_maskz_mov_epi8 (m, _mm_set1_epi8 (1)); memcpy (p, &b, PIQ_W); }
#else
typedef vi vqm;
VINLINE vqm vqat_eq (vf a, vf b) { return a == b; }
VINLINE vf vqat_sel (vqm m, vf a, vf b) { return vsel (m, a, b); }
VINLINE vqm vqat_and (vqm a, vqm b) { return a & b; }
VINLINE int vqat_all (vqm m) { return !vqat_any (~m); }
VINLINE void vqat_store_mask (uint8_t *p, vqm m) { vb b = __builtin_convertvector (m & 1, vb); memcpy (p, &b, sizeof b); }
#endif

/* q clamped to [lo, hi], NaN to lo: the x86 MAXPS returns its second operand when
 * one is NaN, as does the generic form's comparison, and AArch64's FMAXNM the
 * number (q is an arithmetic result: never a signalling NaN). The sign of a zero
 * result may differ between them; it is only compared for equality and used in
 * q − zp where that sign does not reach the result (see QAT_BW_STEP). */
VINLINE vf
vqat_clamp (vf q, vf lo, vf hi)
{
#if PIQ_W == 16 && defined(__AVX512F__)
  return (vf) _mm512_min_ps (_mm512_max_ps ((__m512) q, (__m512) lo), (__m512) hi);
#elif PIQ_W == 8 && defined(__AVX__)
  return (vf) _mm256_min_ps (_mm256_max_ps ((__m256) q, (__m256) lo), (__m256) hi);
#elif PIQ_W == 4 && defined(__SSE2__)
  return (vf) _mm_min_ps (_mm_max_ps ((__m128) q, (__m128) lo), (__m128) hi);
#elif PIQ_W == 4 && defined(__aarch64__)
  return (vf) vminnmq_f32 (vmaxnmq_f32 ((float32x4_t) q, (float32x4_t) lo), (float32x4_t) hi);
#else
  vf m = vsel (q > lo, q, lo);
  return vsel (m < hi, m, hi);
#endif
}

/* q clamped to [lo, hi], NaN kept NaN: the same instructions with the operands the
 * other way round (MAXPS and MINPS return the second operand, q, for a NaN), AArch64's
 * FMAX and FMIN, which propagate a NaN, or comparisons false for NaN. A zero result's
 * sign may differ between them; vqat_fw_value maps every zero to +0. */
VINLINE vf
vqat_clamp_nan (vf q, vf lo, vf hi)
{
#if PIQ_W == 16 && defined(__AVX512F__)
  return (vf) _mm512_min_ps ((__m512) hi, _mm512_max_ps ((__m512) lo, (__m512) q));
#elif PIQ_W == 8 && defined(__AVX__)
  return (vf) _mm256_min_ps ((__m256) hi, _mm256_max_ps ((__m256) lo, (__m256) q));
#elif PIQ_W == 4 && defined(__SSE2__)
  return (vf) _mm_min_ps ((__m128) hi, _mm_max_ps ((__m128) lo, (__m128) q));
#elif PIQ_W == 4 && defined(__aarch64__)
  return (vf) vminq_f32 (vmaxq_f32 ((float32x4_t) q, (float32x4_t) lo), (float32x4_t) hi);
#else
  vf m = vsel (q < lo, lo, q);
  return vsel (m > hi, hi, m);
#endif
}

/* NaN and −0 to +0, every other value as it is: AVX-512's VFIXUPIMMPS in one
 * instruction (token table: QNaN, SNaN and zero to +0, response 8; the other classes
 * to the source, response 1), else + 0 (−0 + +0 is +0) and a select. */
VINLINE vf
vqat_zero_nan (vf v)
{
#if PIQ_W == 16 && defined(__AVX512F__)
  return (vf) _mm512_fixupimm_ps ((__m512) v, (__m512) v, _mm512_set1_epi32 (0x11111888), 0);
#else
  return vsel (v == v, v + vsplat (0.0f), vsplat (0.0f));
#endif
}

/* One vector of the forward pass: y before its rounding to the destination type,
 * and the inside lanes. The reference computes qf = zp + rne(x · inv) and compares
 * it with qmin and qmax; here n = rne(x · inv) is compared with qmin − zp and
 * qmax − zp, which is the same test: n is an integer (or ±Inf, NaN), zp + n is
 * exact where n lies in that range, and outside it zp + n is at least qmax + 1 (at
 * most qmin − 1) before rounding, which rounds to a value beyond the range as
 * qmax + 1 (qmin − 1) is a binary32 integer. r = n clamped to the range is then the
 * reference's qf − zp inside (exact) and qmin − zp or qmax − zp outside, so r · s is
 * its y; a NaN n stays NaN through the clamp and is not inside, and vqat_zero_nan
 * gives the reference's +0 for it, and for r = −0 (x · inv in (−0.5, −0]), where the
 * reference's (zp + −0) − zp is +0. Two operations fewer than the reference's form:
 * zp is neither added nor subtracted. */
VINLINE vf
vqat_fw_value (vf v, vf inv, vf s, vf lo_zp, vf hi_zp, vqm *inside)
{
  vf n = vqat_rne (v * inv);
  vf r = vqat_clamp_nan (n, lo_zp, hi_zp);

  *inside = vqat_eq (r, n);
  return vqat_zero_nan (r) * s;
}

/* bf16 data and gradients two vectors at a time ("pairs"): 2·PIQ_W bf16 elements
 * are one vf-sized load, and as 32-bit words (little-endian) the even elements are
 * their low halves and the odd ones their high halves, so widening them is a shift
 * (even) and a mask (odd), and rounding results back into one vector is a shift and
 * a merge of halves: no narrowing or widening shuffle, which cost more than the
 * arithmetic (GCC lowers the generic 32-to-16-bit narrowing to a two-source word
 * permutation on AVX-512). The lanes then hold the elements 2j and 2j + 1: the
 * element-wise passes do not care, and the backward pass's accumulators take the
 * terms in that order (vqat_bw_blocks). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
# define QAT_PAIRS 1
#else
# define QAT_PAIRS 0
#endif

VINLINE void
vqat_load_bf16_pair (const uint8_t *p, vf *even, vf *odd)
{
  vu w;

  memcpy (&w, p, sizeof w);
  *even = (vf) (w << 16);
  *odd = (vf) (w & 0xffff0000u);
}

/* The high halves of even's and odd's lanes as 2·PIQ_W bf16 in element order at p
 * (vector-aligned and streamed where nt). */
VINLINE void
vqat_store_bf16_pair (uint8_t *p, vu even, vu odd, int nt)
{
#if PIQ_W == 16 && defined(__AVX512F__)
  /* one VPTERNLOGD: (A & C) | B with A = odd, B = even >> 16, C = the high halves' mask */
  vu w = (vu) _mm512_ternarylogic_epi32 ((__m512i) odd, (__m512i) (even >> 16),
                                         _mm512_set1_epi32 ((int) 0xffff0000u), 0xec);
#else
  vu w = (even >> 16) | (odd & 0xffff0000u);
#endif

#ifdef PIQ_VEC_STREAM
  if (nt)
    {
      PIQ_VEC_STREAM (p, (vf) w);
      return;
    }
#else
  (void) nt;
#endif
  memcpy (p, &w, sizeof w);
}

/* v with every NaN made quiet (its quiet bit set), other values as they are */
VINLINE vf
vqat_quiet (vf v)
{
  return (vf) ((vu) v | ((vu) (v != v) & 0x00400000u));
}

/* v's bits with the bias that rounds them at bit 16 to nearest even added (v not
 * NaN): u + 0x7fff, plus one where bit 16 (the kept lsb) is set; the high half is
 * then piq_f32_to_bf16's result. AVX-512: a test into a mask and a masked add. */
VINLINE vu
vqat_bf16_bias (vf v)
{
#if PIQ_W == 16 && defined(__AVX512F__)
  __m512i u = (__m512i) v;
  return (vu) _mm512_mask_add_epi32 (_mm512_add_epi32 (u, _mm512_set1_epi32 (0x7fff)),
                                     _mm512_test_epi32_mask (u, _mm512_set1_epi32 (0x10000)),
                                     u, _mm512_set1_epi32 (0x8000));
#else
  vu u = (vu) v;
  return u + 0x7fffu + ((u >> 16) & 1u);
#endif
}

/* The masks of a pair as 2·PIQ_W bytes 0 or 1 in element order. */
VINLINE void
vqat_store_mask_pair (uint8_t *p, vqm even, vqm odd)
{
#if PIQ_W == 16 && defined(__AVX512F__)
  /* 1 in the low word of the even lanes, 1 << 16 added in the odd ones; words to
   * bytes (VPMOVWB) */
  __m512i w = _mm512_maskz_mov_epi32 (even, _mm512_set1_epi32 (1));
  __m256i b;

  w = _mm512_mask_add_epi32 (w, odd, w, _mm512_set1_epi32 (0x10000));
  b = _mm512_cvtepi16_epi8 (w);
  memcpy (p, &b, sizeof b);
#else
  typedef uint16_t vh2 __attribute__ ((vector_size (PIQ_W * 4)));
  vu w = ((vu) even & 1u) | (((vu) odd & 1u) << 16);
  vb2 b = __builtin_convertvector ((vh2) w, vb2);

  memcpy (p, &b, sizeof b);
#endif
}

/* Store v at p as ft, streamed past the caches where nt: vstore_op, with a cheaper
 * bf16 rounding where the values allow it, same bytes. Not exact: no value is NaN
 * (the forward pass's values), so the rounding needs no NaN test
 * (vf_to_bf16_finite). exact: every value is a bf16 value, NaNs quiet (the source
 * gradient, vqat_bw_vec), so rounding is taking the high half. */
VINLINE void
vqat_store (uint8_t *p, vf v, int ft, int exact, int nt)
{
  if (ft == PIQ_F_BF16)
    {
      vh h = exact ? __builtin_convertvector ((vu) v >> 16, vh) : vf_to_bf16_finite (v);
#ifdef PIQ_VEC_STREAM
      if (nt)
        {
          PIQ_VEC_STREAM_HALF (p, h);
          return;
        }
#endif
      memcpy (p, &h, sizeof h);
      return;
    }
  vstore_op (p, v, ft, 0, nt);
}

VINLINE void
vqat_forward (const void *x, size_t n, const PiqQatArgs *a, void *y, uint8_t *mask,
              int xft, int yft)
{
  const uint8_t *xs = x;
  uint8_t *ys = y;
  const size_t xe = fsize (xft), ye = fsize (yft);
  const vf inv = vsplat (a->inv), s = vsplat (a->s);
  const vf lo = vsplat (a->lo_zp), hi = vsplat (a->hi_zp);
  /* pairs where every type read or written is bf16 */
  const int pair = QAT_PAIRS && xft == PIQ_F_BF16 && (ys == NULL || yft == PIQ_F_BF16);
  size_t i = 0;
  int nt = 0;

#ifdef PIQ_VEC_STREAM
  if (a->stream && ys != NULL && n >= 4 * PIQ_W)
    {
      /* the first elements up to a vector-aligned y by the scalar kernel */
      const size_t step = pair ? 2 * PIQ_W : PIQ_W;
      size_t head = (step * ye - (uintptr_t) ys % (step * ye)) % (step * ye);
      if (head % ye == 0)
        {
          i = head / ye;
          if (i > 0)
            piq_kernels_scalar.qat_forward (xs, i, a, ys, mask);
          nt = 1;
        }
    }
#endif
  if (pair)
    for (; i + 2 * PIQ_W <= n; i += 2 * PIQ_W)
      {
        vf ve, vo, oe, oo;
        vqm ie, io;

        __builtin_prefetch (xs + 2 * (i + PIQ_PREFETCH));
        vqat_load_bf16_pair (xs + 2 * i, &ve, &vo);
        oe = vqat_fw_value (ve, inv, s, lo, hi, &ie);
        oo = vqat_fw_value (vo, inv, s, lo, hi, &io);
        if (ys != NULL)
          vqat_store_bf16_pair (ys + 2 * i, vqat_bf16_bias (oe), vqat_bf16_bias (oo), nt);
        if (mask != NULL)
          vqat_store_mask_pair (mask + i, ie, io);
      }
  else
    for (; i + PIQ_W <= n; i += PIQ_W)
      {
        vf out;
        vqm inside;

        __builtin_prefetch (xs + xe * (i + PIQ_PREFETCH));
        out = vqat_fw_value (vload_f (xs + xe * i, xft), inv, s, lo, hi, &inside);
        if (ys != NULL)
          vqat_store (ys + ye * i, out, yft, 0, nt);
        if (mask != NULL)
          vqat_store_mask (mask + i, inside);
      }
  stream_fence (nt);
  if (i < n)
    piq_kernels_scalar.qat_forward (xs + xe * i, n - i, a, ys != NULL ? ys + ye * i : NULL,
                                    mask != NULL ? mask + i : NULL);
}

/* The gradient terms' binary64 lanes in vectors of the native width: vd holds
 * PIQ_W / 2 of them (a whole register: a 2·PIQ_W-byte vector of doubles would be
 * wider than the registers, and GCC then keeps it in memory, putting a store and a
 * reload into every addition's dependency chain), so a vf of terms widens into two
 * vd, its low and its high half. The 16 lanes are 32 / PIQ_W vd; which lanes each
 * holds is qat_lane's. */
typedef double vd  __attribute__ ((vector_size (PIQ_W * 4)));
typedef float  vhf __attribute__ ((vector_size (PIQ_W * 2)));
#define QAT_NACC (2 * PIQ_QAT_LANES / PIQ_W)

/* Add the terms t, widened exactly, into the accumulators of their lanes: lo gets
 * the low half's, hi the high half's, in that order (lo and hi may be the same
 * accumulator). The ISA's widening conversion of a half register (AVX-512 and AVX
 * VCVTPS2PD, SSE2 CVTPS2PD, AArch64 FCVTL/FCVTL2) takes the halves in place; GCC 12
 * lowers the generic form below through the stack and, for AVX-512, as four
 * conversions of quarters. */
VINLINE void
vqat_acc (vd *lo, vd *hi, vf t)
{
#if PIQ_W == 16 && defined(__AVX512DQ__)
  *lo += (vd) _mm512_cvtps_pd (_mm512_castps512_ps256 ((__m512) t));
  *hi += (vd) _mm512_cvtps_pd (_mm512_extractf32x8_ps ((__m512) t, 1));
#elif PIQ_W == 8 && defined(__AVX__)
  *lo += (vd) _mm256_cvtps_pd (_mm256_castps256_ps128 ((__m256) t));
  *hi += (vd) _mm256_cvtps_pd (_mm256_extractf128_ps ((__m256) t, 1));
#elif PIQ_W == 4 && defined(__SSE2__)
  *lo += (vd) _mm_cvtps_pd ((__m128) t);
  *hi += (vd) _mm_cvtps_pd (_mm_movehl_ps ((__m128) t, (__m128) t));
#elif PIQ_W == 4 && defined(__aarch64__)
  *lo += (vd) vcvt_f64_f32 (vget_low_f32 ((float32x4_t) t));
  *hi += (vd) vcvt_high_f64_f32 ((float32x4_t) t);
#else
  vhf l, h;

  memcpy (&l, &t, sizeof l);
  memcpy (&h, (const char *) &t + sizeof l, sizeof h);
  *lo += __builtin_convertvector (l, vd);
  *hi += __builtin_convertvector (h, vd);
#endif
}

/* The lane of element e of accumulator k. Without pairs, vector j of a block of 16
 * positions holds positions j·PIQ_W …, its halves go to accumulators 2j and 2j + 1,
 * so k holds lanes k·PIQ_W/2 …. With pairs, vector j = 2c + p is the parity p of
 * the c-th pair load of a unit (2·PIQ_W·c + 2·lane + p), so accumulator 2j + h holds
 * the positions 2·PIQ_W·c + PIQ_W·h + 2e + p, modulo 16; at PIQ_W = 16 a unit is two
 * blocks, both halves of a vector hold the same lanes and go to accumulator 2j
 * (2j + 1 is not used). */
VINLINE int
qat_lane (int pair, int k, int e)
{
  int j = k / 2, h = k % 2;

  if (!pair)
    return k * PIQ_W / 2 + e;
  return (2 * PIQ_W * (j / 2) + PIQ_W * h + 2 * e + j % 2) % PIQ_QAT_LANES;
}

VINLINE int
qat_acc_used (int pair, int k)
{
  if (pair && PIQ_W == 16)
    return k == 0 || k == 2;
  return k < QAT_NACC;
}

/* The constants of the backward pass. */
typedef struct {
  vf inv, s, zp, gf, lo, hi, ms;
  int gf1;               /* gf is 1: the products by it are the identity (below) */
} QatBw;

/* One vector of the backward pass, x and g widened: adds the scale's terms to s0
 * and s1 (vqat_acc), returns the inside lanes, and the source gradient in *d where
 * has_dx. The scale's term is the scalar kernel's g · ((q − zp) · s − x) · inv · gf
 * inside and g · (qmin or qmax − zp) · gf outside, each product rounded in that
 * order. With qc = q clamped to [qmin, qmax] (NaN to qmin), q is inside exactly
 * when qc = q, and r = qc − zp (exact: integers below 2^24) is the outside factor
 * qmin or qmax − zp, and inside gives (q − zp) · s − x as r · s − x: a zero q and qc
 * may differ in sign only, which r · s − x does not show (a −0 q needs
 * zp + x · inv < 0, so r is a nonzero integer or x ≠ 0). Both terms share the
 * product by g and the last product by gf, so one select of the second factor and
 * one of the inv step give them. The source gradient is g inside and g · 0
 * outside; a bf16 dx is stored as its high half, so a signalling NaN g is made
 * quiet here, as piq_f32_to_bf16 makes it (f16's conversion does it itself). Not
 * by a product with a selected 1: clang folds x · 1 to x, signalling NaN or not,
 * and the AVX-512 table then differed from the scalar one. */
VINLINE vqm
vqat_bw_vec (vf v, vf g, const QatBw *c, vd *s0, vd *s1, vf *d, int has_dx, int gft)
{
  vf qf = vqat_rne (c->zp + v * c->inv), qc, r, p;
  vqm in;

  qc = vqat_clamp (qf, c->lo, c->hi);
  in = vqat_eq (qc, qf);
  r = qc - c->zp;
  p = g * vqat_sel (in, r * c->s - v, r);
  p = vqat_sel (in, p * c->inv, p);
  vqat_acc (s0, s1, c->gf1 ? p : p * c->gf);
  if (has_dx)
    {
      *d = vqat_sel (in, g, g * vsplat (0.0f));
      if (gft == PIQ_F_BF16)
        *d = vqat_quiet (*d);
    }
  return in;
}

/* The zero point's terms of one vector: g · (−1) · s · gf is g · (−s) · gf (negation
 * is exact, and a NaN g comes through either product as the same NaN), outside the
 * range; inside they are 0. */
VINLINE void
vqat_zp_vec (vf g, vqm in, const QatBw *c, vd *z0, vd *z1)
{
  vf t = g * c->ms;

  vqat_acc (z0, z1, vqat_sel (in, vsplat (0.0f), c->gf1 ? t : t * c->gf));
}

/* Units (of 16 positions, or two blocks with pairs at PIQ_W = 16) per batch of the
 * zero point's terms (below). */
#define QAT_BATCH 64

/* Accumulator k of both sums to or from the lanes (qat_lane; the accumulators that
 * qat_acc_used rejects do not exist at this width or are not used). */
#define QAT_LANES_IN(k) \
  if (qat_acc_used (pair, k)) \
    { \
      double t_[PIQ_W / 2], u_[PIQ_W / 2]; \
      for (int e_ = 0; e_ < PIQ_W / 2; e_++) \
        { \
          t_[e_] = lanes[qat_lane (pair, k, e_)]; \
          u_[e_] = lanes[PIQ_QAT_LANES + qat_lane (pair, k, e_)]; \
        } \
      memcpy (&as##k, t_, sizeof as##k); \
      memcpy (&az##k, u_, sizeof az##k); \
    }
#define QAT_LANES_OUT(k) \
  if (qat_acc_used (pair, k)) \
    { \
      double t_[PIQ_W / 2], u_[PIQ_W / 2]; \
      memcpy (t_, &as##k, sizeof as##k); \
      memcpy (u_, &az##k, sizeof az##k); \
      for (int e_ = 0; e_ < PIQ_W / 2; e_++) \
        { \
          lanes[qat_lane (pair, k, e_)] = t_[e_]; \
          lanes[PIQ_QAT_LANES + qat_lane (pair, k, e_)] = u_[e_]; \
        } \
    }

/* Vector j of a unit at i: its accumulators' names (the second the same as the first
 * where pairs at PIQ_W = 16 fold both halves into one). */
#define QAT_HI(j, a_, b_) (pair && PIQ_W == 16 ? &a_ : &b_)

/* The whole units of [i, n): i is a multiple of 16 positions past the lanes' start.
 * A unit is 16 positions, or 32 with pairs at PIQ_W = 16 (a pair load is 2·PIQ_W
 * elements). pair and nt (constants of each call site) read bf16 x and dy as pairs
 * and stream dx.
 *
 * The zero point's terms are 0 inside the range, and adding ±0 leaves a lane as it
 * is (a lane is never −0: the lanes start at +0, and a binary64 sum is −0 only when
 * both addends are), so only the units with an element outside need them, in
 * typical data a small share. A branch on that in the main loop costs more than
 * the terms: it is taken at random (16 % of the blocks of N(0, 1) data clamped at
 * ±2.55σ), and each misprediction discards the loads in flight, which is what keeps
 * a memory-bound loop at the bandwidth. So the main loop only notes, without a
 * branch, each unit with an element outside (its position and inside lanes, into
 * the next free slot, which advances when the unit has one), and after every
 * QAT_BATCH units a second loop adds those units' terms, in unit order, reading
 * their grad_out again from the L1 cache. Every lane sees the same additions in the
 * same order as in one loop. */
VINLINE size_t
vqat_bw_blocks (const uint8_t *xs, const uint8_t *gs, uint8_t *ds8, size_t i, size_t n,
                const PiqQatArgs *a, double *lanes, int has_dx, int xft, int gft, int pair,
                int gf1, int nt)
{
  const size_t xe = fsize (xft), ge = fsize (gft);     /* dx is gft too */
  const size_t unit = pair && PIQ_W == 16 ? 2 * PIQ_QAT_LANES : PIQ_QAT_LANES;
  const QatBw c = {
    .inv = vsplat (a->inv), .s = vsplat (a->s), .zp = vsplat (a->zp), .gf = vsplat (a->gf),
    .lo = vsplat (a->lo), .hi = vsplat (a->hi), .ms = vsplat (-a->s), .gf1 = gf1,
  };
  vd as0, as1, as2, as3, as4, as5, as6, as7, az0, az1, az2, az3, az4, az5, az6, az7;
  size_t pos[QAT_BATCH];
  vqm ins[QAT_BATCH][4];

  QAT_LANES_IN (0) QAT_LANES_IN (1) QAT_LANES_IN (2) QAT_LANES_IN (3)
  QAT_LANES_IN (4) QAT_LANES_IN (5) QAT_LANES_IN (6) QAT_LANES_IN (7)
  while (i + unit <= n)
    {
      size_t units = (n - i) / unit, end, k = 0;

      end = i + unit * (units < QAT_BATCH ? units : QAT_BATCH);

      for (; i < end; i += unit)
        {
          vqm o0, o1, o2, o3;

          __builtin_prefetch (xs + xe * (i + PIQ_PREFETCH));
          __builtin_prefetch (gs + ge * (i + PIQ_PREFETCH));
          if (pair)
            {
              /* vector 2c + p: parity p of the pair load at 2·PIQ_W·c */
#define QAT_BW_PAIR(cc, e_, o_, se_, she_, so_, sho_) \
              do \
                { \
                  size_t q_ = i + 2 * PIQ_W * (cc); \
                  vf xe_, xo_, ge_, go_, de_, do_; \
                  vqat_load_bf16_pair (xs + 2 * q_, &xe_, &xo_); \
                  vqat_load_bf16_pair (gs + 2 * q_, &ge_, &go_); \
                  e_ = vqat_bw_vec (xe_, ge_, &c, &se_, QAT_HI (0, se_, she_), &de_, has_dx, gft); \
                  o_ = vqat_bw_vec (xo_, go_, &c, &so_, QAT_HI (0, so_, sho_), &do_, has_dx, gft); \
                  if (has_dx) \
                    vqat_store_bf16_pair (ds8 + 2 * q_, (vu) de_, (vu) do_, nt); \
                } \
              while (0)
              QAT_BW_PAIR (0, o0, o1, as0, as1, as2, as3);
              o2 = o0;
              o3 = o1;
              if (PIQ_W <= 4)
                QAT_BW_PAIR (1, o2, o3, as4, as5, as6, as7);
#undef QAT_BW_PAIR
            }
          else
            {
              /* vector j at j·PIQ_W */
#define QAT_BW_ONE(j, o_, s0_, s1_) \
              do \
                { \
                  size_t q_ = i + (j) * PIQ_W; \
                  vf d_; \
                  o_ = vqat_bw_vec (vload_f (xs + xe * q_, xft), vload_f (gs + ge * q_, gft), \
                                    &c, &s0_, &s1_, &d_, has_dx, gft); \
                  if (has_dx) \
                    vqat_store (ds8 + ge * q_, d_, gft, 1, nt); \
                } \
              while (0)
              QAT_BW_ONE (0, o0, as0, as1);
              o1 = o2 = o3 = o0;
              if (PIQ_W <= 8)
                QAT_BW_ONE (1, o1, as2, as3);
              if (PIQ_W <= 4)
                {
                  QAT_BW_ONE (2, o2, as4, as5);
                  QAT_BW_ONE (3, o3, as6, as7);
                }
#undef QAT_BW_ONE
            }
          pos[k] = i;
          ins[k][0] = o0;
          if (PIQ_W <= 8 || pair)
            ins[k][1] = o1;
          if (PIQ_W <= 4)
            {
              ins[k][2] = o2;
              ins[k][3] = o3;
            }
          k += (size_t) !vqat_all (vqat_and (vqat_and (o0, o1), vqat_and (o2, o3)));
        }
      for (size_t e = 0; e < k; e++)
        {
          size_t b_ = pos[e];

          if (pair)
            {
              vf ge_, go_;

              vqat_load_bf16_pair (gs + 2 * b_, &ge_, &go_);
              vqat_zp_vec (ge_, ins[e][0], &c, &az0, QAT_HI (0, az0, az1));
              vqat_zp_vec (go_, ins[e][1], &c, &az2, QAT_HI (0, az2, az3));
              if (PIQ_W <= 4)
                {
                  vqat_load_bf16_pair (gs + 2 * (b_ + 2 * PIQ_W), &ge_, &go_);
                  vqat_zp_vec (ge_, ins[e][2], &c, &az4, &az5);
                  vqat_zp_vec (go_, ins[e][3], &c, &az6, &az7);
                }
            }
          else
            {
              vqat_zp_vec (vload_f (gs + ge * b_, gft), ins[e][0], &c, &az0, &az1);
              if (PIQ_W <= 8)
                vqat_zp_vec (vload_f (gs + ge * (b_ + PIQ_W), gft), ins[e][1], &c, &az2, &az3);
              if (PIQ_W <= 4)
                {
                  vqat_zp_vec (vload_f (gs + ge * (b_ + 2 * PIQ_W), gft), ins[e][2], &c, &az4, &az5);
                  vqat_zp_vec (vload_f (gs + ge * (b_ + 3 * PIQ_W), gft), ins[e][3], &c, &az6, &az7);
                }
            }
        }
    }
  QAT_LANES_OUT (0) QAT_LANES_OUT (1) QAT_LANES_OUT (2) QAT_LANES_OUT (3)
  QAT_LANES_OUT (4) QAT_LANES_OUT (5) QAT_LANES_OUT (6) QAT_LANES_OUT (7)
  return i;
}

VINLINE void
vqat_backward (const void *x, const void *dy, size_t n, const PiqQatArgs *a, void *dx,
               size_t lane0, double *lanes, int has_dx, int xft, int gft)
{
  const uint8_t *xs = x, *gs = dy;
  const size_t xe = fsize (xft), ge = fsize (gft);     /* dx is gft too */
  const int pair = QAT_PAIRS && xft == PIQ_F_BF16 && gft == PIQ_F_BF16;
  /* the bytes of one store of dx: a vf of pairs, else a vector of gft */
  const size_t vbytes = pair ? 4 * PIQ_W : PIQ_W * ge;
  /* grad_factor 1 (PyTorch's default): t · 1 is t for every t the products give (a
   * NaN product is already quiet), so a separate loop leaves the products out */
  const int gf1 = a->gf == 1.0f;
  uint8_t *ds8 = dx;
  size_t head = (PIQ_QAT_LANES - lane0 % PIQ_QAT_LANES) % PIQ_QAT_LANES, i;

  if (head > n)
    head = n;
  if (head > 0)
    piq_kernels_scalar.qat_backward (x, dy, head, a, dx, lane0, lanes);
  i = head;
  if (i + PIQ_QAT_LANES <= n)
    {
      /* streamed stores where asked and dx is vector-aligned at the 16-element blocks;
       * one loop for each, so that the loop does not test it */
#ifdef PIQ_VEC_STREAM
      if (has_dx && a->stream && (uintptr_t) (ds8 + ge * i) % vbytes == 0)
        {
          i = gf1 ? vqat_bw_blocks (xs, gs, ds8, i, n, a, lanes, has_dx, xft, gft, pair, 1, 1)
                  : vqat_bw_blocks (xs, gs, ds8, i, n, a, lanes, has_dx, xft, gft, pair, 0, 1);
          stream_fence (1);
        }
      else
#endif
        i = gf1 ? vqat_bw_blocks (xs, gs, ds8, i, n, a, lanes, has_dx, xft, gft, pair, 1, 0)
                : vqat_bw_blocks (xs, gs, ds8, i, n, a, lanes, has_dx, xft, gft, pair, 0, 0);
    }
  (void) vbytes;
  if (i < n)
    piq_kernels_scalar.qat_backward (xs + xe * i, gs + ge * i, n - i, a,
                                     has_dx ? ds8 + ge * i : NULL, 0, lanes);
}
#undef QAT_BATCH
#undef QAT_LANES_IN
#undef QAT_LANES_OUT
#undef QAT_NACC
#undef QAT_HI

/* The entries: every combination of x and y (x and dy, with dx of dy's type) that the
 * unit converts in registers; the rest (f16 without F16C, a dx of another type than
 * dy) go to the scalar kernel. */
#if HAVE_F16
# define QAT_FOR_PAIRS(M) \
  M (F32, F32) M (F32, BF16) M (BF16, F32) M (BF16, BF16) \
  M (F32, F16) M (BF16, F16) M (F16, F32) M (F16, BF16) M (F16, F16)
#else
# define QAT_FOR_PAIRS(M) M (F32, F32) M (F32, BF16) M (BF16, F32) M (BF16, BF16)
#endif

static void
PIQ_KNAME_qat_forward (float) (const void *x, size_t n, const PiqQatArgs *a, void *y, uint8_t *mask)
{
  int yft = y != NULL ? a->o_ft : a->x_ft;

#define QAT_FW_(X, Y) \
  if (a->x_ft == PIQ_F_##X && yft == PIQ_F_##Y) \
    { \
      vqat_forward (x, n, a, y, mask, PIQ_F_##X, PIQ_F_##Y); \
      return; \
    }
  QAT_FOR_PAIRS (QAT_FW_)
#undef QAT_FW_
  piq_kernels_scalar.qat_forward (x, n, a, y, mask);
}

static void
PIQ_KNAME_qat_backward (float) (const void *x, const void *dy, size_t n, const PiqQatArgs *a,
                                void *dx, size_t lane0, double *lanes)
{
#define QAT_BW_(X, G) \
  if (a->x_ft == PIQ_F_##X && a->g_ft == PIQ_F_##G) \
    { \
      if (dx == NULL) \
        vqat_backward (x, dy, n, a, NULL, lane0, lanes, 0, PIQ_F_##X, PIQ_F_##G); \
      else if (a->o_ft == PIQ_F_##G) \
        vqat_backward (x, dy, n, a, dx, lane0, lanes, 1, PIQ_F_##X, PIQ_F_##G); \
      else \
        break; \
      return; \
    }
  do
    {
      QAT_FOR_PAIRS (QAT_BW_)
    }
  while (0);
#undef QAT_BW_
  piq_kernels_scalar.qat_backward (x, dy, n, a, dx, lane0, lanes);
}
#undef QAT_FOR_PAIRS

#define PIQ_QAT_SLOTS \
  .qat_forward = PIQ_KNAME_qat_forward (float), \
  .qat_backward = PIQ_KNAME_qat_backward (float),

/* piq-qat-vec-body.h: fake quantization's forward and backward kernels, PIQ_W lanes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h. Every operation is the binary32 operation of
 * the scalar reference (piq-kernels-scalar.c, qat_forward_f32 / qat_backward_f32),
 * lane-wise and without branches, so the values, the mask and the source gradient
 * are its bytes. bf16 and f16 data and gradients widen in registers (vload_f: a
 * shift, or the ISA's binary16 conversion) and y / dx round back the same way
 * (vstore_op), exactly as piq_load_f and piq_store_f do; the element types are
 * compile-time constants of each instantiation below, so each loop is as tight as
 * the f32 one. The gradient terms go into the same 16 binary64 lanes as there:
 * a block of 16 elements starting at a multiple of 16 in lane order fills lanes
 * 0 … 15 with one widening add per lane, PIQ_W lanes per vector (16 / PIQ_W
 * accumulators of each sum), so each lane sees the same additions in the same
 * order; the elements before the first such block and after the last go through
 * the scalar kernel with their lane offset.
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
 * q − zp where that sign does not reach the result (see vqat_forward, QAT_BW_STEP). */
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

/* Store v at p as ft, streamed past the caches where nt: vstore_op, with a cheaper
 * bf16 rounding where the values allow it, same bytes. QAT_ST_FINITE: no value is
 * NaN (the forward pass's values), so the rounding needs no NaN test
 * (vf_to_bf16_finite). QAT_ST_EXACT: every value that is not NaN is a bf16 value
 * (the source gradient: grad_out's own bf16 values, or their products by 0), so
 * rounding is taking the high half, and a NaN is made quiet as piq_f32_to_bf16
 * does. Other types go through vstore_op. */
enum { QAT_ST_FINITE, QAT_ST_EXACT };

VINLINE void
vqat_store (uint8_t *p, vf v, int ft, int kind, int nt)
{
  if (ft == PIQ_F_BF16)
    {
      vh h;

      if (kind == QAT_ST_FINITE)
        h = vf_to_bf16_finite (v);
      else
        h = __builtin_convertvector (((vu) v >> 16) | ((vu) (v != v) & 0x40u), vh);
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
  const vf inv = vsplat (a->inv), s = vsplat (a->s), zp = vsplat (a->zp);
  const vf lo = vsplat (a->lo), hi = vsplat (a->hi);
  size_t i = 0;
  int nt = 0;

#ifdef PIQ_VEC_STREAM
  if (a->stream && ys != NULL && n >= 4 * PIQ_W)
    {
      /* the first elements up to a vector-aligned y by the scalar kernel */
      size_t head = (PIQ_W * ye - (uintptr_t) ys % (PIQ_W * ye)) % (PIQ_W * ye);
      if (head % ye == 0)
        {
          i = head / ye;
          if (i > 0)
            piq_kernels_scalar.qat_forward (xs, i, a, ys, mask);
          nt = 1;
        }
    }
#endif
  for (; i + PIQ_W <= n; i += PIQ_W)
    {
      vf v, qf, qc;
      vqm inside;

      __builtin_prefetch (xs + xe * (i + PIQ_PREFETCH));
      v = vload_f (xs + xe * i, xft);
      qf = zp + vqat_rne (v * inv);
      qc = vqat_clamp (qf, lo, hi);
      inside = vqat_eq (qc, qf);
      if (ys != NULL)
        {
          /* (qc − zp) · s is the reference's value inside, and below or above, where
           * qc − zp is qmin − zp or qmax − zp exactly (integers below 2^24); NaN gives
           * +0. qf is never −0 (zp is not), so qc = qf inside to the sign. */
          vf out = vqat_sel (vqat_eq (qf, qf), (qc - zp) * s, vsplat (0.0f));
          vqat_store (ys + ye * i, out, yft, QAT_ST_FINITE, nt);
        }
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
 * vd, its low and its high half. The 16 lanes are 32 / PIQ_W vd: accumulator k
 * holds lanes k·PIQ_W/2 … (k + 1)·PIQ_W/2 − 1. */
typedef double vd  __attribute__ ((vector_size (PIQ_W * 4)));
typedef float  vhf __attribute__ ((vector_size (PIQ_W * 2)));
#define QAT_NACC (2 * PIQ_QAT_LANES / PIQ_W)

/* Add the terms t, widened exactly, into the accumulators of their lanes: lo gets
 * the low half's, hi the high half's. The ISA's widening conversion of a half
 * register (AVX-512 and AVX VCVTPS2PD, SSE2 CVTPS2PD, AArch64 FCVTL/FCVTL2) takes the
 * halves in place; GCC 12 lowers the generic form below through the stack and, for
 * AVX-512, as four conversions of quarters. */
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

/* One vector of the backward pass. The scale's term is the scalar kernel's
 * g · ((q − zp) · s − x) · inv · gf inside and g · (qmin or qmax − zp) · gf outside,
 * each product rounded in that order. With qc = q clamped to [qmin, qmax] (NaN to
 * qmin), q is inside exactly when qc = q, and r = qc − zp (exact: integers below
 * 2^24) is the outside factor qmin or qmax − zp, and inside gives (q − zp) · s − x
 * as r · s − x: a zero q and qc may differ in sign only, which r · s − x does not
 * show (a −0 q needs zp + x · inv < 0, so r is a nonzero integer or x ≠ 0). Both
 * terms share the product by g and the last product by gf, so one select of the
 * second factor and one of the inv step give them. Leaves the inside lanes in in_
 * for the zero point's terms (vqat_bw_blocks). */
#define QAT_BW_STEP(j, s0_, s1_, in_) \
  do { \
    size_t o_ = i + (j) * PIQ_W; \
    vf v_ = vload_f (xs + xe * o_, xft), g_ = vload_f (gs + ge * o_, gft), qf_, qc_, r_, p_; \
    qf_ = vqat_rne (zp + v_ * inv); \
    qc_ = vqat_clamp (qf_, lo, hi); \
    in_ = vqat_eq (qc_, qf_); \
    r_ = qc_ - zp; \
    p_ = g_ * vqat_sel (in_, r_ * s - v_, r_); \
    vqat_acc (&s0_, &s1_, vqat_sel (in_, p_ * inv, p_) * gf); \
    if (has_dx) \
      { \
        vf d_ = vqat_sel (in_, g_, g_ * vsplat (0.0f)); \
        vqat_store (ds8 + ge * o_, d_, gft, QAT_ST_EXACT, nt); \
      } \
  } while (0)

/* The zero point's terms of one vector: g · (−1) · s · gf is g · (−s) · gf (negation
 * is exact, and a NaN g comes through either product as the same NaN), outside the
 * range; inside they are 0. */
#define QAT_ZP_STEP(j, z0_, z1_, in_) \
  vqat_acc (&z0_, &z1_, vqat_sel (in_, vsplat (0.0f), \
                                  vload_f (gs + ge * (b_ + (j) * PIQ_W), gft) * ms * gf))

/* Blocks of 16 positions per batch of the zero point's terms (below). */
#define QAT_BATCH 64

/* Accumulator k of both sums to or from the lanes (k < QAT_NACC: the others do not
 * exist at this width and are never used). */
#define QAT_LANES_IN(k) \
  if ((k) < QAT_NACC) \
    { \
      memcpy (&as##k, lanes + (k) * PIQ_W / 2, sizeof as##k); \
      memcpy (&az##k, lanes + PIQ_QAT_LANES + (k) * PIQ_W / 2, sizeof az##k); \
    }
#define QAT_LANES_OUT(k) \
  if ((k) < QAT_NACC) \
    { \
      memcpy (lanes + (k) * PIQ_W / 2, &as##k, sizeof as##k); \
      memcpy (lanes + PIQ_QAT_LANES + (k) * PIQ_W / 2, &az##k, sizeof az##k); \
    }

/* The whole 16-position blocks of [i, n): i is a multiple of 16 positions past the
 * lanes' start. nt (a constant of each call site) streams dx.
 *
 * The zero point's terms are 0 inside the range, and adding ±0 leaves a lane as it
 * is (a lane is never −0: the lanes start at +0, and a binary64 sum is −0 only when
 * both addends are), so only the blocks with an element outside need them, in
 * typical data a small share. A branch on that in the main loop costs more than
 * the terms: it is taken at random (16 % of the blocks of N(0, 1) data clamped at
 * ±2.55σ), and each misprediction discards the loads in flight, which is what keeps
 * a memory-bound loop at the bandwidth. So the main loop only notes, without a
 * branch, each block with an element outside (its position and inside lanes, into
 * the next free slot, which advances when the block has one), and after every
 * QAT_BATCH blocks a second loop adds those blocks' terms, in block order, reading
 * their grad_out again from the L1 cache. Every lane sees the same additions in the
 * same order as in one loop. */
VINLINE size_t
vqat_bw_blocks (const uint8_t *xs, const uint8_t *gs, uint8_t *ds8, size_t i, size_t n,
                const PiqQatArgs *a, double *lanes, int has_dx, int xft, int gft, int nt)
{
  const size_t xe = fsize (xft), ge = fsize (gft);     /* dx is gft too */
  const vf inv = vsplat (a->inv), s = vsplat (a->s), zp = vsplat (a->zp), gf = vsplat (a->gf);
  const vf lo = vsplat (a->lo), hi = vsplat (a->hi);
  const vf ms = vsplat (-a->s);
  vd as0, as1, as2, as3, as4, as5, as6, as7, az0, az1, az2, az3, az4, az5, az6, az7;
  size_t pos[QAT_BATCH];
  vqm ins[QAT_BATCH][PIQ_QAT_LANES / PIQ_W];

  QAT_LANES_IN (0) QAT_LANES_IN (1) QAT_LANES_IN (2) QAT_LANES_IN (3)
  QAT_LANES_IN (4) QAT_LANES_IN (5) QAT_LANES_IN (6) QAT_LANES_IN (7)
  while (i + PIQ_QAT_LANES <= n)
    {
      size_t blocks = (n - i) / PIQ_QAT_LANES, end, k = 0;

      end = i + PIQ_QAT_LANES * (blocks < QAT_BATCH ? blocks : QAT_BATCH);

      for (; i < end; i += PIQ_QAT_LANES)
        {
          vqm o0, o1, o2, o3;

          __builtin_prefetch (xs + xe * (i + PIQ_PREFETCH));
          __builtin_prefetch (gs + ge * (i + PIQ_PREFETCH));
          QAT_BW_STEP (0, as0, as1, o0);
          o1 = o2 = o3 = o0;
          if (PIQ_W <= 8)
            QAT_BW_STEP (1, as2, as3, o1);
          if (PIQ_W <= 4)
            {
              QAT_BW_STEP (2, as4, as5, o2);
              QAT_BW_STEP (3, as6, as7, o3);
            }
          pos[k] = i;
          ins[k][0] = o0;
          if (PIQ_W <= 8)
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

          QAT_ZP_STEP (0, az0, az1, ins[e][0]);
          if (PIQ_W <= 8)
            QAT_ZP_STEP (1, az2, az3, ins[e][1]);
          if (PIQ_W <= 4)
            {
              QAT_ZP_STEP (2, az4, az5, ins[e][2]);
              QAT_ZP_STEP (3, az6, az7, ins[e][3]);
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
      if (has_dx && a->stream && (uintptr_t) (ds8 + ge * i) % (PIQ_W * ge) == 0)
        {
          i = vqat_bw_blocks (xs, gs, ds8, i, n, a, lanes, has_dx, xft, gft, 1);
          stream_fence (1);
        }
      else
#endif
        i = vqat_bw_blocks (xs, gs, ds8, i, n, a, lanes, has_dx, xft, gft, 0);
    }
  if (i < n)
    piq_kernels_scalar.qat_backward (xs + xe * i, gs + ge * i, n - i, a,
                                     has_dx ? ds8 + ge * i : NULL, 0, lanes);
}
#undef QAT_BW_STEP
#undef QAT_ZP_STEP
#undef QAT_BATCH
#undef QAT_LANES_IN
#undef QAT_LANES_OUT
#undef QAT_NACC

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

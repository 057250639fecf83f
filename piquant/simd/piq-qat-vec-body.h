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

typedef double vqd __attribute__ ((vector_size (PIQ_W * 8)));

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

VINLINE void
vqat_forward (const void *x, size_t n, const PiqQatArgs *a, void *y, uint8_t *mask,
              int xft, int yft)
{
  const uint8_t *xs = x;
  uint8_t *ys = y;
  const size_t xe = fsize (xft), ye = fsize (yft);
  const vf inv = vsplat (a->inv), s = vsplat (a->s), zp = vsplat (a->zp);
  const vf lo = vsplat (a->lo), hi = vsplat (a->hi);
  const vf ylo = vsplat (a->lo_zp * a->s), yhi = vsplat (a->hi_zp * a->s);
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
      vf v, qf;
      vi inside;

      __builtin_prefetch (xs + xe * (i + PIQ_PREFETCH));
      v = vload_f (xs + xe * i, xft);
      qf = zp + vqat_rne (v * inv);
      inside = (qf >= lo) & (qf <= hi);
      if (ys != NULL)
        {
          vf out = vsel (inside, (qf - zp) * s, vsel (qf < lo, ylo, vsel (qf > hi, yhi, vsplat (0.0f))));
          vstore_op (ys + ye * i, out, yft, 0, nt);
        }
      if (mask != NULL)
        {
          vb m = __builtin_convertvector (inside & 1, vb);
          memcpy (mask + i, &m, sizeof m);
        }
    }
  stream_fence (nt);
  if (i < n)
    piq_kernels_scalar.qat_forward (xs + xe * i, n - i, a, ys != NULL ? ys + ye * i : NULL,
                                    mask != NULL ? mask + i : NULL);
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

/* One vector of the backward pass. The scale's term is the scalar kernel's
 * g · ((q − zp) · s − x) · inv · gf inside and g · (qmin or qmax − zp) · gf outside,
 * each product rounded in that order; both share the product by g and the last
 * product by gf, so one select of the second factor and one of the inv step give
 * them with two products fewer. The zero point's term g · (−1) · s · gf is
 * g · (−s) · gf (negation is exact, and a NaN g comes through either product as
 * the same NaN), and it is 0 inside: a vector with no element outside adds only
 * zeros to the zero point's lanes, which leaves them as they are (a lane is never
 * −0: the lanes start at +0, and a binary64 sum is −0 only when both addends
 * are), so its conversion and additions are skipped (most vectors of typical data,
 * where the clamped values are rare). */
#define QAT_BW_STEP(j, as_, az_) \
  do { \
    size_t o_ = i + (j) * PIQ_W; \
    vf v_ = vload_f (xs + xe * o_, xft), g_ = vload_f (gs + ge * o_, gft), qf_, p_; \
    vi in_, out_; \
    qf_ = vqat_rne (zp + v_ * inv); \
    in_ = (qf_ >= lo) & (qf_ <= hi); \
    out_ = ~in_; \
    p_ = g_ * vsel (in_, (qf_ - zp) * s - v_, vsel (qf_ > hi, hi_zp, lo_zp)); \
    as_ += __builtin_convertvector (vsel (in_, p_ * inv, p_) * gf, vqd); \
    if (has_dx) \
      { \
        vf d_ = vsel (in_, g_, g_ * vsplat (0.0f)); \
        vstore_op (ds8 + ge * o_, d_, gft, 0, nt); \
      } \
    if (vqat_any (out_)) \
      az_ += __builtin_convertvector (vsel (out_, g_ * ms * gf, vsplat (0.0f)), vqd); \
  } while (0)

VINLINE void
vqat_backward (const void *x, const void *dy, size_t n, const PiqQatArgs *a, void *dx,
               size_t lane0, double *lanes, int has_dx, int xft, int gft)
{
  const uint8_t *xs = x, *gs = dy;
  const size_t xe = fsize (xft), ge = fsize (gft);     /* dx is gft too */
  uint8_t *ds8 = dx;
  const vf inv = vsplat (a->inv), s = vsplat (a->s), zp = vsplat (a->zp), gf = vsplat (a->gf);
  const vf lo = vsplat (a->lo), hi = vsplat (a->hi);
  const vf lo_zp = vsplat (a->lo_zp), hi_zp = vsplat (a->hi_zp), ms = vsplat (-a->s);
  size_t head = (PIQ_QAT_LANES - lane0 % PIQ_QAT_LANES) % PIQ_QAT_LANES, i;
  vqd as0, as1, as2, as3, az0, az1, az2, az3;

  if (head > n)
    head = n;
  if (head > 0)
    piq_kernels_scalar.qat_backward (x, dy, head, a, dx, lane0, lanes);
  i = head;
  if (i + PIQ_QAT_LANES <= n)
    {
      /* streamed stores where asked and dx is vector-aligned at the 16-element blocks */
      int nt = 0;
#ifdef PIQ_VEC_STREAM
      nt = has_dx && a->stream && (uintptr_t) (ds8 + ge * i) % (PIQ_W * ge) == 0;
#endif
      memcpy (&as0, lanes, sizeof as0);
      memcpy (&az0, lanes + PIQ_QAT_LANES, sizeof az0);
      if (PIQ_W <= 8)
        {
          memcpy (&as1, lanes + PIQ_W, sizeof as1);
          memcpy (&az1, lanes + PIQ_QAT_LANES + PIQ_W, sizeof az1);
        }
      if (PIQ_W <= 4)
        {
          memcpy (&as2, lanes + 2 * PIQ_W, sizeof as2);
          memcpy (&az2, lanes + PIQ_QAT_LANES + 2 * PIQ_W, sizeof az2);
          memcpy (&as3, lanes + 3 * PIQ_W, sizeof as3);
          memcpy (&az3, lanes + PIQ_QAT_LANES + 3 * PIQ_W, sizeof az3);
        }
      for (; i + PIQ_QAT_LANES <= n; i += PIQ_QAT_LANES)
        {
          __builtin_prefetch (xs + xe * (i + PIQ_PREFETCH));
          __builtin_prefetch (gs + ge * (i + PIQ_PREFETCH));
          QAT_BW_STEP (0, as0, az0);
          if (PIQ_W <= 8)
            QAT_BW_STEP (1, as1, az1);
          if (PIQ_W <= 4)
            {
              QAT_BW_STEP (2, as2, az2);
              QAT_BW_STEP (3, as3, az3);
            }
        }
      stream_fence (nt);
      memcpy (lanes, &as0, sizeof as0);
      memcpy (lanes + PIQ_QAT_LANES, &az0, sizeof az0);
      if (PIQ_W <= 8)
        {
          memcpy (lanes + PIQ_W, &as1, sizeof as1);
          memcpy (lanes + PIQ_QAT_LANES + PIQ_W, &az1, sizeof az1);
        }
      if (PIQ_W <= 4)
        {
          memcpy (lanes + 2 * PIQ_W, &as2, sizeof as2);
          memcpy (lanes + PIQ_QAT_LANES + 2 * PIQ_W, &az2, sizeof az2);
          memcpy (lanes + 3 * PIQ_W, &as3, sizeof as3);
          memcpy (lanes + PIQ_QAT_LANES + 3 * PIQ_W, &az3, sizeof az3);
        }
    }
  if (i < n)
    piq_kernels_scalar.qat_backward (xs + xe * i, gs + ge * i, n - i, a,
                                     has_dx ? ds8 + ge * i : NULL, 0, lanes);
}
#undef QAT_BW_STEP

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

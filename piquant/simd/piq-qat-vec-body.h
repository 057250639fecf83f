/* piq-qat-vec-body.h: fake quantization's forward and backward kernels, PIQ_W lanes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h. Every operation is the binary32 operation of
 * the scalar reference (piq-kernels-scalar.c, qat_forward_f32 / qat_backward_f32),
 * lane-wise and without branches, so the values, the mask and the source gradient
 * are its bytes. The gradient terms go into the same 16 binary64 lanes as there:
 * a block of 16 elements starting at a multiple of 16 in lane order fills lanes
 * 0 … 15 with one widening add per lane, PIQ_W lanes per vector (16 / PIQ_W
 * accumulators of each sum), so each lane sees the same additions in the same
 * order; the elements before the first such block and after the last go through
 * the scalar kernel with their lane offset.
 */

typedef double vqd __attribute__ ((vector_size (PIQ_W * 8)));

/* rne() lane-wise: |v| < 2^23 rounded by adding and subtracting 2^23, the sign put
 * back (−0 included); larger magnitudes, ±Inf and NaN as they are. */
VINLINE vf
vqat_rne (vf v)
{
  const vf magic = vsplat (0x1p23f);
  vi sign = (vi) v & INT32_MIN;
  vf a = (vf) ((vi) v & INT32_MAX);
  vf r = (vf) ((vi) ((a + magic) - magic) | sign);
  return vsel (a < magic, r, v);
}

VINLINE void
vqat_forward (const void *x, size_t n, const PiqQatArgs *a, void *y, uint8_t *mask)
{
  const uint8_t *xs = x;
  uint8_t *ys = y;
  const vf inv = vsplat (a->inv), s = vsplat (a->s), zp = vsplat (a->zp);
  const vf lo = vsplat (a->lo), hi = vsplat (a->hi);
  const vf ylo = vsplat (a->lo_zp * a->s), yhi = vsplat (a->hi_zp * a->s);
  size_t i = 0;
  int nt = 0;

#ifdef PIQ_VEC_STREAM
  if (a->stream && ys != NULL && n >= 4 * PIQ_W)
    {
      /* the first elements up to a vector-aligned y by the scalar kernel */
      size_t head = ((sizeof (vf) - (uintptr_t) ys % sizeof (vf)) % sizeof (vf));
      if (head % 4 == 0)
        {
          i = head / 4;
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

      __builtin_prefetch (xs + 4 * (i + PIQ_PREFETCH));
      memcpy (&v, xs + 4 * i, sizeof v);
      qf = zp + vqat_rne (v * inv);
      inside = (qf >= lo) & (qf <= hi);
      if (ys != NULL)
        {
          vf out = vsel (inside, (qf - zp) * s, vsel (qf < lo, ylo, vsel (qf > hi, yhi, vsplat (0.0f))));
#ifdef PIQ_VEC_STREAM
          if (nt)
            PIQ_VEC_STREAM (ys + 4 * i, out);
          else
#endif
            memcpy (ys + 4 * i, &out, sizeof out);
        }
      if (mask != NULL)
        {
          vb m = __builtin_convertvector (inside & 1, vb);
          memcpy (mask + i, &m, sizeof m);
        }
    }
  stream_fence (nt);
  if (i < n)
    piq_kernels_scalar.qat_forward (xs + 4 * i, n - i, a, ys != NULL ? ys + 4 * i : NULL,
                                    mask != NULL ? mask + i : NULL);
}

/* One vector of PIQ_W elements at p (element offset j): the terms into as_, az_. */
VINLINE void
qat_stream (uint8_t *p, vf v)
{
#ifdef PIQ_VEC_STREAM
  PIQ_VEC_STREAM (p, v);
#else
  memcpy (p, &v, sizeof v);
#endif
}

#define QAT_BW_STEP(j, as_, az_) \
  do { \
    size_t o_ = 4 * (i + (j) * PIQ_W); \
    vf v_, g_, qf_, ds_, dz_; \
    vi in_; \
    memcpy (&v_, xs + o_, sizeof v_); \
    memcpy (&g_, gs + o_, sizeof g_); \
    qf_ = vqat_rne (zp + v_ * inv); \
    in_ = (qf_ >= lo) & (qf_ <= hi); \
    ds_ = vsel (in_, g_ * ((qf_ - zp) * s - v_) * inv * gf, \
                g_ * vsel (qf_ > hi, hi_zp, lo_zp) * gf); \
    dz_ = vsel (in_, vsplat (0.0f), g_ * vsplat (-1.0f) * s * gf); \
    if (has_dx) \
      { \
        vf d_ = vsel (in_, g_, g_ * vsplat (0.0f)); \
        if (nt) \
          qat_stream (ds8 + o_, d_); \
        else \
          memcpy (ds8 + o_, &d_, sizeof d_); \
      } \
    as_ += __builtin_convertvector (ds_, vqd); \
    az_ += __builtin_convertvector (dz_, vqd); \
  } while (0)

VINLINE void
vqat_backward (const void *x, const void *dy, size_t n, const PiqQatArgs *a, void *dx,
               size_t lane0, double *lanes, int has_dx)
{
  const uint8_t *xs = x, *gs = dy;
  uint8_t *ds8 = dx;
  const vf inv = vsplat (a->inv), s = vsplat (a->s), zp = vsplat (a->zp), gf = vsplat (a->gf);
  const vf lo = vsplat (a->lo), hi = vsplat (a->hi);
  const vf lo_zp = vsplat (a->lo_zp), hi_zp = vsplat (a->hi_zp);
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
      nt = has_dx && a->stream && (uintptr_t) (ds8 + 4 * i) % sizeof (vf) == 0;
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
          __builtin_prefetch (xs + 4 * (i + PIQ_PREFETCH));
          __builtin_prefetch (gs + 4 * (i + PIQ_PREFETCH));
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
    piq_kernels_scalar.qat_backward (xs + 4 * i, gs + 4 * i, n - i, a,
                                     has_dx ? ds8 + 4 * i : NULL, 0, lanes);
}
#undef QAT_BW_STEP

static void
PIQ_KNAME_qat_forward (f32) (const void *x, size_t n, const PiqQatArgs *a, void *y, uint8_t *mask)
{
  vqat_forward (x, n, a, y, mask);
}

static void
PIQ_KNAME_qat_backward (f32) (const void *x, const void *dy, size_t n, const PiqQatArgs *a,
                              void *dx, size_t lane0, double *lanes)
{
  if (dx != NULL)
    vqat_backward (x, dy, n, a, dx, lane0, lanes, 1);
  else
    vqat_backward (x, dy, n, a, NULL, lane0, lanes, 0);
}

#define PIQ_QAT_SLOTS \
  .qat_forward = PIQ_KNAME_qat_forward (f32), \
  .qat_backward = PIQ_KNAME_qat_backward (f32),

/* piq-formats-vec-body.h: the vector bodies of the block formats (f32 data)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h, which has the vector types and the packing
 * helpers, before the unit's table. Vectorized, with nearest rounding: FP8 E4M3/E5M2
 * and FP4 E2M1 (per tensor, or f32/f16/E8M0 block scales: MXFP8, MXFP4), NF4 (either
 * nibble order; units of 8 lanes or more) and 4- and 8-bit integers with block scales
 * (MXINT8 too), in blocks of a multiple of PIQ_W elements. Anything else, and a
 * ragged last block, runs the scalar driver (simd/piq-formats.c).
 *
 * Same bytes as the scalar driver: a block's min, max and max |x| are the same in any
 * order, and the scale comes from the same function (piq_block_params); the element
 * codecs below are integer forms of the scalar ones (each step noted), and every
 * float operation is the one the scalar codec does.
 */
#include "piq-formats-private.h"

/* Which calls the vector bodies take. */
VINLINE int
fvec_takes (const PiqBlockArgs *a)
{
  if (a->stochastic || a->bits == 0 || (!a->fixed && a->block % PIQ_W != 0))
    return 0;
  if (a->code < 0)
    return a->bits == 8 || a->bits == 4;
  switch (a->code)
    {
    case PIQ_C_FP8_E4M3: case PIQ_C_FP8_E5M2: case PIQ_C_FP4_E2M1:
      return 1;
    case PIQ_C_NF4:
      return PIQ_W >= 8;   /* the 16-entry table is one or two vectors */
    default:
      return 0;
    }
}

VINLINE vf
fload (const float *p)
{
  vf v;
  memcpy (&v, p, sizeof v);
  return v;
}

VINLINE vi
fsplat_i (int32_t x)
{
  return (vi) { 0 } + x;
}

/* Round to nearest even (|v| < 2^22): nearbyintf. */
VINLINE vi
frint (vf v)
{
#ifdef PIQ_VEC_CVT_NEAREST
  return PIQ_VEC_CVT_NEAREST (v);
#else
  const vf magic = vsplat (0x1.8p23f);
  return __builtin_convertvector ((v + magic) - magic, vi);
#endif
}

/* piq_minifloat_encode, nearest: the normal range rounds the binary32 significand
 * to M bits at its bit 23 − M (ties to even), which is the scalar quantum rounding;
 * below the smallest normal t = |v| · 2^(M − emin) is rounded as the scalar does. */
VINLINE vi
mf_encode (vf v, int M, int bias, int maxc, int ovf, int nanc, int width)
{
  const int emin = 1 - bias;
  vu u = (vu) v, sign = u & 0x80000000u, a = u ^ sign;
  vu r = a + ((1u << (22 - M)) - 1) + ((a >> (23 - M)) & 1u);
  vi cn = (vi) (r >> (23 - M)) - ((127 - bias) << M);
  vi cs = frint ((vf) a * vsplat (ldexpf (1.0f, M - emin)));
  vi sub = (vi) (a < (uint32_t) (127 + emin) << 23);
  vi code = (cs & sub) | (cn & ~sub);
  vi over = code > maxc;
  vi nan = (vi) (a > 0x7f800000u);
  vi s = (vi) (sign >> (32 - width));

  code = (code & ~over) | (ovf & over);
  if (nanc == 0)
    s &= ~nan;                             /* formats without NaN: NaN is +0 */
  code = (code & ~nan) | (nanc & nan);
  return code | s;
}

/* piq_minifloat_decode: the bit fields moved into binary32, subnormals as m·2^(emin−M). */
VINLINE vf
mf_decode (vi c, int M, int bias, int width, int code)
{
  vi mag = c & ((1 << (width - 1)) - 1), e = mag >> M, m = mag & ((1 << M) - 1);
  vf normal = (vf) (((e + (127 - bias)) << 23) | (m << (23 - M)));
  vf sub = __builtin_convertvector (m, vf) * vsplat (ldexpf (1.0f, 1 - bias - M));
  vf v = vsel (e == 0, sub, normal);

  if (code == PIQ_C_FP8_E4M3)
    v = vsel (mag == 0x7f, (vf) fsplat_i (0x7fc00000), v);
  if (code == PIQ_C_FP8_E5M2)
    v = vsel (e == 31, (vf) (fsplat_i (0x7f800000) | ((m != 0) & 0x00400000)), v);
  return (vf) ((vi) v | ((c >> (width - 1)) & 1) << 31);
}

/* One vector of codes from x and a block's parameters. */
VINLINE vi
fencode (const PiqBlockArgs *a, const PiqBlockP *p, vf x, int code, int sat, vf lo, vf hi)
{
  vf v = x * vsplat (p->inv);

  if (code < 0)
    {
      v = (vf) ((vi) v & (v == v));        /* NaN: the zero point */
      return frint (vmin (vmax (v, lo), hi)) + fsplat_i ((int32_t) p->zp);
    }
  if (code == PIQ_C_NF4)
    {
      vi c = fsplat_i (0);
      for (int k = 0; k < 15; k++)         /* ties at a threshold go to the lower code */
        c -= (vi) (v > vsplat (piq_nf4_thresholds[k]));
      return (c & (v == v)) | (fsplat_i (7) & (v != v));
    }
  {
    const PiqMinifloat *f = &piq_minifloats[code];
    int ovf = sat || !f->nan_code ? f->max_code : f->inf_code ? f->inf_code : f->nan_code;
    (void) a;
    return mf_encode (v, f->mbits, f->bias, f->max_code, ovf, f->nan_code, 1 + f->ebits + f->mbits);
  }
}

VINLINE vf
fdecode (const PiqBlockP *p, vi c, int code)
{
  vf v;

  if (code < 0)
    v = __builtin_convertvector (c - fsplat_i ((int32_t) p->zp), vf);
  else if (code == PIQ_C_NF4)
    {
      vf t0, t1;
      memcpy (&t0, piq_nf4_values, sizeof t0);
#if PIQ_W == 16
      (void) t1;
      v = __builtin_shuffle (t0, c);
#elif PIQ_W == 8
      memcpy (&t1, piq_nf4_values + 8, sizeof t1);
      v = __builtin_shuffle (t0, t1, c);
#else
      (void) t1;
      v = t0;                              /* not taken: fvec_takes */
#endif
    }
  else
    {
      const PiqMinifloat *f = &piq_minifloats[code];
      v = mf_decode (c, f->mbits, f->bias, 1 + f->ebits + f->mbits, code);
    }
  return p->nan_scale ? vsplat (NAN) : v * vsplat (p->scale);
}

/* Codes as bytes in the low PIQ_W (8 bits) or PIQ_W/2 (4 bits) bytes. */
VINLINE void
fstore (uint8_t *dst, vi c, int bits, int high_first)
{
  vb16 b = codes_to_bytes (c);

  if (bits == 4 && high_first)
    {
      vh8 w = (vh8) b;
      vb8 q = __builtin_convertvector (((w << 4) & 0xf0) | ((w >> 8) & 0x0f), vb8);
      memcpy (dst, &q, PIQ_W / 2);
      return;
    }
  pack_store_w (dst, b, bits, 0);
}

VINLINE vi
fload_codes (const uint8_t *src, int bits, int is_signed, int high_first)
{
  vb16 b = bytes16 (src, PIQ_W * bits / 8);

  if (bits == 4)
    {
      if (high_first)
        b = (b >> 4) | (b << 4);
      b = __builtin_shuffle (b & 0x0f, b >> 4,
                             (vb16) { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23 });
      if (is_signed)
        b = (b ^ 8) - 8;
    }
  return is_signed ? PIQ_VEC_S8_TO_I32 (b) : PIQ_VEC_U8_TO_I32 (b);
}

/* ---- quantize ---- */

VINLINE void
fquantize_span (const PiqBlockArgs *a, const PiqBlockP *p, const float *x, uint64_t at,
                size_t n, uint8_t *codes, int code)
{
  int sat = a->scale_kind == PIQ_SCALE_E8M0 || a->saturate;
  int64_t qlo = a->scale_kind == PIQ_SCALE_E8M0 ? -a->qmax : a->qmin;
  vf lo = vsplat ((float) (qlo - p->zp)), hi = vsplat ((float) (a->qmax - p->zp));

  for (size_t i = 0; i < n; i += PIQ_W)
    {
      uint8_t *dst = codes + (at + i) * (uint64_t) a->bits / 8;
      vi c = p->nan_scale ? fsplat_i (0) : fencode (a, p, fload (x + i), code, sat, lo, hi);
      fstore (dst, c, a->bits, a->high_first);
    }
}

VINLINE void
fquantize (const PiqBlockArgs *a, const float *x, uint64_t first, size_t n, uint8_t *codes,
           uint8_t *scales, int32_t *zero_points, int code)
{
  size_t b0 = 0;
  PiqBlockP p;

  if (a->fixed)
    {
      b0 = n - n % PIQ_W;
      piq_block_params_fixed (a, &p);
      fquantize_span (a, &p, x, first, b0, codes, code);
    }
  else
    for (; b0 + a->block <= n; b0 += a->block)
      {
        const float inf = INFINITY;
        vf vlo = vsplat (inf), vhi = vsplat (-inf), vam = vsplat (0.0f);
        vi bad = fsplat_i (0);
        PiqBlockStats st = { inf, -inf, 0.0f, 0.0f, 0 };

        for (size_t i = 0; i < a->block; i += PIQ_W)
          {
            vf v = fload (x + b0 + i), av = (vf) ((vu) v & 0x7fffffffu);
            vi fin = (vi) ((vu) av < 0x7f800000u);
            vlo = vmin (vlo, vsel (fin, v, vsplat (inf)));
            vhi = vmax (vhi, vsel (fin, v, vsplat (-inf)));
            vam = vmax (vam, vsel (fin, av, vsplat (0.0f)));
            bad |= ~fin;
          }
        for (int l = 0; l < PIQ_W; l++)
          {
            st.lo = vlo[l] < st.lo ? vlo[l] : st.lo;
            st.hi = vhi[l] > st.hi ? vhi[l] : st.hi;
            st.amax = vam[l] > st.amax ? vam[l] : st.amax;
            st.non_finite |= bad[l] != 0;
          }
        piq_block_params (a, &st, a->block, (first + b0) / a->block, scales, zero_points, &p);
        fquantize_span (a, &p, x + b0, first + b0, a->block, codes, code);
      }
  if (b0 < n)   /* the ragged last block, or the per-tensor tail */
    piq_block_quantize (a, PIQ_F_F32, x + b0, first + b0, n - b0, codes, scales, zero_points);
}

/* ---- dequantize ---- */

VINLINE void
fdequantize (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
             const int32_t *zero_points, uint64_t first, size_t n, float *y, int add, int code)
{
  size_t step = a->fixed ? n - n % PIQ_W : a->block, b0 = 0;
  int is_signed = code < 0 && a->qmin < 0;

  for (; step > 0 && b0 + step <= n; b0 += step)
    {
      PiqBlockP p;
      piq_block_load_params (a, scales, zero_points, (first + b0) / a->block, &p);
      for (size_t i = 0; i < step; i += PIQ_W)
        {
          const uint8_t *src = codes + (first + b0 + i) * (uint64_t) a->bits / 8;
          vf v = fdecode (&p, fload_codes (src, a->bits, is_signed, a->high_first), code);
          if (add)
            v = fload (y + b0 + i) + v;      /* the scalar order: a NaN's payload follows it */
          memcpy (y + b0 + i, &v, sizeof v);
        }
    }
  if (b0 < n)
    piq_block_dequantize (a, codes, scales, zero_points, first + b0, n - b0, PIQ_F_F32, y + b0,
                          add);
}

/* One entry per table: the format is a constant in each call below, so the compiler
 * specializes the codecs. */
#define FCODES_(X) X (-1) X (PIQ_C_FP8_E4M3) X (PIQ_C_FP8_E5M2) X (PIQ_C_FP4_E2M1) X (PIQ_C_NF4)

static void
block_quantize_f32 (const PiqBlockArgs *a, const void *src, uint64_t first, size_t n,
                    uint8_t *codes, uint8_t *scales, int32_t *zero_points)
{
  if (!fvec_takes (a))
    {
      piq_block_quantize (a, PIQ_F_F32, src, first, n, codes, scales, zero_points);
      return;
    }
#define FQ_(c) if (a->code == (c)) { fquantize (a, src, first, n, codes, scales, zero_points, c); return; }
  FCODES_ (FQ_)
#undef FQ_
}

static void
block_dequantize_f32 (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                      const int32_t *zero_points, uint64_t first, size_t n, void *dst, int add)
{
  if (!fvec_takes (a))
    {
      piq_block_dequantize (a, codes, scales, zero_points, first, n, PIQ_F_F32, dst, add);
      return;
    }
#define FD_(c) if (a->code == (c)) { fdequantize (a, codes, scales, zero_points, first, n, dst, add, c); return; }
  FCODES_ (FD_)
#undef FD_
}

#define PIQ_FORMAT_SLOTS \
  .block_quantize = block_quantize_f32, \
  .block_dequantize = block_dequantize_f32,

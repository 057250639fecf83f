/* piq-kernels-vec-body.h: the vector kernels, written once for every ISA unit
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-{sse42,avx2,avx512,neon}.c after they define
 *   PIQ_W                      binary32 lanes of the unit's native vector (4, 8, 16)
 *   PIQ_VEC_TABLE              the name of the unit's exported table
 *   PIQ_VEC_LABEL, PIQ_VEC_LEVEL, PIQ_VEC_REQUIRED
 *   PIQ_VEC_MIN(a, b), PIQ_VEC_MAX(a, b)   (optional) a < b ? a : b, a > b ? a : b
 *   PIQ_VEC_MAXU32(a, b)       (optional) unsigned 32-bit lane max
 *   PIQ_VEC_LOAD_BF16(p)       (optional) PIQ_W bf16 at p -> vf (one widening load)
 *   PIQ_VEC_NAN_TO_ZERO(v)     (optional) NaN lanes to +0, others unchanged
 *   PIQ_VEC_CVT_NEAREST(v)     (optional) vf -> vi rounding as the current rounding mode
 *   PIQ_VEC_U8_TO_I32(c), PIQ_VEC_S8_TO_I32(c)
 *                              the low PIQ_W bytes of a vb16, zero-/sign-extended to vi
 *                              (the ISA's widening instruction: the compiler does not
 *                              find it from generic code)
 * where the ISA converts binary16 in hardware,
 *   PIQ_VEC_LOAD_F16(p)        PIQ_W f16 at p -> vf          (exact)
 *   PIQ_VEC_STORE_F16(p, v)    vf -> PIQ_W f16 at p          (round to nearest even)
 *   PIQ_VEC_F16_BITS(v)        vf -> vh of f16 bits          (round to nearest even)
 *   PIQ_VEC_LOAD_F16_8(p)      8 f16 at p -> v8f
 * and where the ISA has non-temporal stores (used for large SET outputs),
 *   PIQ_VEC_STREAM(p, v)       store vf v at vector-aligned p, bypassing the caches
 *   PIQ_VEC_STREAM_HALF(p, h)  the same for a vh
 *   PIQ_VEC_STREAM_16/8/4(p, x) 16 bytes of a vb16, 8 bytes of a uint64, 4 of a uint32
 *   PIQ_VEC_STREAM_FENCE()     order the streamed stores before later ones
 *
 * The bodies use GCC vector extensions, so the compiler lowers the same source to
 * each ISA, and every operation is the IEEE operation the scalar reference does:
 * the results are the same bytes (docs/numerics.md). Entries a unit does not
 * accelerate stay NULL and the dispatch uses the scalar kernel.
 *
 * Structure: a vector of PIQ_W elements at a time, packed and unpacked in registers
 * (PIQ_W·bits/8 is a whole number of bytes for every packed type); the tail of a
 * call runs the scalar kernel. No alignment is assumed (loads and stores go through memcpy).
 */
#include <stdint.h>
#include <string.h>

#include "piq-kernels-private.h"
#include "piq-convert-private.h"
#include "piq-cpu-private.h"

#pragma GCC diagnostic ignored "-Wpsabi"

#define VINLINE static inline __attribute__((always_inline))
/* Source elements to prefetch ahead in the streaming loops: the hardware prefetcher
 * alone left quantize at ~60% of the bandwidth limit (measured with piquant bench). */
#ifndef PIQ_PREFETCH
# define PIQ_PREFETCH 2048
#endif

typedef float    vf  __attribute__ ((vector_size (PIQ_W * 4)));
typedef int32_t  vi  __attribute__ ((vector_size (PIQ_W * 4)));
typedef uint32_t vu  __attribute__ ((vector_size (PIQ_W * 4)));
typedef uint16_t vh  __attribute__ ((vector_size (PIQ_W * 2)));
typedef uint8_t  vb  __attribute__ ((vector_size (PIQ_W)));
typedef int8_t   vsb __attribute__ ((vector_size (PIQ_W)));
typedef float    v8f __attribute__ ((vector_size (32)));
typedef uint16_t v8h __attribute__ ((vector_size (16)));
typedef uint32_t v8u __attribute__ ((vector_size (32)));
typedef double   v8d __attribute__ ((vector_size (64)));
typedef uint8_t  vb16 __attribute__ ((vector_size (16)));
typedef uint16_t vh8  __attribute__ ((vector_size (16)));
typedef uint32_t vu4  __attribute__ ((vector_size (16)));
typedef uint64_t v2q  __attribute__ ((vector_size (16)));
typedef uint8_t  vb8  __attribute__ ((vector_size (8)));
typedef uint8_t  vb4  __attribute__ ((vector_size (4)));

#ifdef PIQ_VEC_LOAD_F16
# define HAVE_F16 1
#else
# define HAVE_F16 0
#endif

/* ---- lane helpers ---- */

VINLINE vf
vsel (vi mask, vf a, vf b)              /* mask ? a : b, per lane */
{
  return (vf) (((vi) a & mask) | ((vi) b & ~mask));
}

/* a < b ? a : b and a > b ? a : b: exactly the x86 MINPS/MAXPS operand order. Only
 * called where a NaN operand's result does not matter (NaN was replaced, or makes
 * the whole reduction NaN). */
#ifdef PIQ_VEC_MIN
VINLINE vf vmin (vf a, vf b) { return PIQ_VEC_MIN (a, b); }
VINLINE vf vmax (vf a, vf b) { return PIQ_VEC_MAX (a, b); }
#else
VINLINE vf vmin (vf a, vf b) { return vsel (a < b, a, b); }
VINLINE vf vmax (vf a, vf b) { return vsel (a > b, a, b); }
#endif

VINLINE vf
vsplat (float x)
{
  return (vf) { 0 } + x;
}

/* base + {0, 1, …, PIQ_W − 1}: a constant plus a broadcast (a lane-by-lane build
 * would cost PIQ_W inserts per vector). */
VINLINE vu
viota (uint32_t base)
{
  static const uint32_t lanes[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
  vu v;
  memcpy (&v, lanes, sizeof v);
  return v + base;
}

/* The first `bytes` bytes at p (16, 8, 4, 2 or 1, a compile-time constant) in the
 * low bytes of a vector, loaded in registers: a narrow store followed by a wide
 * reload of the same bytes would stall on store forwarding. */
VINLINE vb16
bytes16 (const void *p, size_t bytes)
{
  vb16 v;

  if (bytes == 16)
    memcpy (&v, p, 16);
  else if (bytes == 8)
    {
      uint64_t x;
      memcpy (&x, p, 8);
      v = (vb16) (v2q) { x, 0 };
    }
  else if (bytes == 4)
    {
      uint32_t x;
      memcpy (&x, p, 4);
      v = (vb16) (vu4) { x, 0, 0, 0 };
    }
  else if (bytes == 2)
    {
      uint16_t x;
      memcpy (&x, p, 2);
      v = (vb16) (vh8) { x, 0, 0, 0, 0, 0, 0, 0 };
    }
  else
    v = (vb16) { *(const uint8_t *) p };
  return v;
}

/* ---- float loads and stores (f32, bf16, f16), PIQ_W lanes ---- */

VINLINE size_t
fsize (int ft)
{
  return ft == PIQ_F_F32 ? 4 : 2;
}

VINLINE vf
vload_f (const void *p, int ft)
{
  if (ft == PIQ_F_F32)
    {
      vf v;
      memcpy (&v, p, sizeof v);
      return v;
    }
  if (ft == PIQ_F_BF16)
    {
#ifdef PIQ_VEC_LOAD_BF16
      return PIQ_VEC_LOAD_BF16 (p);
#else
      vh h;
      memcpy (&h, p, sizeof h);
      return (vf) (__builtin_convertvector (h, vu) << 16);
#endif
    }
#if HAVE_F16
  return PIQ_VEC_LOAD_F16 (p);
#else
  __builtin_unreachable ();
#endif
}

/* bf16 rounding as piq_f32_to_bf16: nearest even, NaN kept quiet. */
VINLINE vh
vf_to_bf16 (vf v)
{
  vu u = (vu) v;
  vi nan = (vi) ((u & 0x7fffffffu) > 0x7f800000u);
  vu r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  vu q = (u >> 16) | 0x40u;
  return __builtin_convertvector ((vu) (((vi) r & ~nan) | ((vi) q & nan)), vh);
}

VINLINE void
vstore_f (void *p, vf v, int ft)
{
  if (ft == PIQ_F_F32)
    memcpy (p, &v, sizeof v);
  else if (ft == PIQ_F_BF16)
    {
      vh h = vf_to_bf16 (v);
      memcpy (p, &h, sizeof h);
    }
  else
    {
#if HAVE_F16
      PIQ_VEC_STORE_F16 (p, v);
#else
      __builtin_unreachable ();
#endif
    }
}

/* ---- quantize one vector ----
 * With integer bounds L = qmin − zp and H = qmax − zp (|L|, |H| ≤ 2^22), clamping v
 * first and rounding after gives clamp(round(v), L, H), the reference result: rounding
 * is monotonic and leaves integers alone; NaN becomes 0, i.e. the zero point. In that
 * range, (v + 1.5·2^23) − 1.5·2^23 is exactly nearbyint(v), ties to even. */

typedef struct {
  vf  inv, scale, lo, hi;
  vi  zp;
  vu  k0;
  uint32_t k1;
} VArgs;

#define ROUND_MAGIC 12582912.0f   /* 1.5 · 2^23 */

/* Returns 0 when the clamp bounds do not fit the rounding trick (types wider than 22
 * bits of range): the caller then keeps the scalar path. */
VINLINE int
vargs_init (VArgs *va, const PiqKernelArgs *a)
{
  __int128 lo = a->qmin - a->zero_point, hi = a->qmax - a->zero_point;
  int ok = lo >= -(1 << 22) && hi <= (1 << 22);

  va->inv = vsplat (a->inv_f);
  va->scale = vsplat (a->scale_f);
  va->lo = vsplat (ok ? (float) lo : 0.0f);
  va->hi = vsplat (ok ? (float) hi : 0.0f);
  va->zp = (vi) { 0 } + (int32_t) a->zero_point;
  va->k0 = (vu) { 0 } + a->key0;
  va->k1 = a->key1;
  return ok;
}

VINLINE vu
vmix32 (vu x)
{
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/* The rounded, clamped value r = q − zp of PIQ_W elements starting at index. */
/* v = clamp(x · inv, L, H) with NaN -> 0: the rounding's input. */
VINLINE vf
vclamped (vf x, const VArgs *va)
{
  vf v = x * va->inv;

#ifdef PIQ_VEC_NAN_TO_ZERO
  v = PIQ_VEC_NAN_TO_ZERO (v);
#else
  v = (vf) ((vi) v & (v == v));
#endif
  return vmin (vmax (v, va->lo), va->hi);
}

VINLINE vf
vround (vf x, const VArgs *va, uint64_t index, int stochastic)
{
  const vf magic = vsplat (ROUND_MAGIC), one = vsplat (1.0f);
  vf v = vclamped (x, va);
  vf r = (v + magic) - magic;

  if (stochastic)
    {
      /* floor from nearest, then up with probability frac (same u as piq_uniform24) */
      vf fl = r - (vf) ((vi) one & (r > v));
      vf frac = v - fl;
      vu h = vmix32 (viota ((uint32_t) index) ^ (va->k0 ^ piq_mix32 ((uint32_t) (index >> 32) ^ va->k1)));
      vf u = __builtin_convertvector ((vi) (h >> 8), vf) * 0x1p-24f;
      r = fl + (vf) ((vi) one & (u < frac));
    }
  return r;
}

/* q = r + zp as integers. Nearest rounding converts with the ISA's rounding
 * conversion where it has one: it rounds as the current rounding mode does, like
 * nearbyint in the scalar reference, in one instruction instead of three. */
VINLINE vi
vquant (vf x, const VArgs *va, uint64_t index, int stochastic)
{
#ifdef PIQ_VEC_CVT_NEAREST
  if (!stochastic)
    return PIQ_VEC_CVT_NEAREST (vclamped (x, va)) + va->zp;
#endif
  return __builtin_convertvector (vround (x, va, index, stochastic), vi) + va->zp;
}

/* ---- packing, in registers ----
 * A vector of PIQ_W codes is narrowed to bytes (low PIQ_W bytes of a 16-byte vector),
 * then packed: element 2k in the low nibble of byte k, element 4k+i at bits 2i.
 * Higher bits of a code (sign extension) are masked off. */

VINLINE vb16
codes_to_bytes (vi q)
{
  vb b = __builtin_convertvector (q, vb);   /* truncation: two's complement low byte */
  return bytes16 (&b, sizeof b);
}

/* Store the low `bytes` bytes of c; streamed past the caches when asked and the
 * ISA has a non-temporal store of that size (dst is then `bytes`-aligned). */
VINLINE void
store_bytes (uint8_t *dst, vb16 c, size_t bytes, int stream)
{
#ifdef PIQ_VEC_STREAM
  if (stream && bytes == 16)
    {
      PIQ_VEC_STREAM_16 (dst, c);
      return;
    }
  if (stream && bytes == 8)
    {
      PIQ_VEC_STREAM_8 (dst, ((v2q) c)[0]);
      return;
    }
  if (stream && bytes == 4)
    {
      PIQ_VEC_STREAM_4 (dst, ((vu4) c)[0]);
      return;
    }
#else
  (void) stream;
#endif
  memcpy (dst, &c, bytes);
}

/* Packs the codes (whole bytes of the output: PIQ_W·bits/8 of them) and stores them. */
VINLINE void
pack_store_w (uint8_t *dst, vb16 c, int bits, int stream)
{
  vb16 out = c;

  if (bits == 4)
    {
      vh8 w = (vh8) c;
      vb8 p = __builtin_convertvector ((w & 0x0f) | ((w >> 4) & 0xf0), vb8);
      out = bytes16 (&p, sizeof p);
    }
  else if (bits == 2)
    {
      vu4 w = (vu4) c;
      vb4 p = __builtin_convertvector ((w & 3u) | ((w >> 6) & 0xcu) | ((w >> 12) & 0x30u) | ((w >> 18) & 0xc0u), vb4);
      out = bytes16 (&p, sizeof p);
    }
  store_bytes (dst, out, PIQ_W * bits / 8, stream);
}

/* PIQ_W codes from PIQ_W·bits/8 packed bytes, as bytes (sign-extended for signed
 * types) in the low PIQ_W bytes of a 16-byte vector. */
VINLINE vb16
unpack_w (const uint8_t *src, int bits, int is_signed)
{
  vb16 b = bytes16 (src, PIQ_W * bits / 8), c;

  if (bits == 8)
    return b;
  if (bits == 4)
    {
      c = __builtin_shuffle (b & 0x0f, b >> 4, (vb16) { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23 });
      return is_signed ? (c ^ 8) - 8 : c;
    }
  {
    const vb16 lo8 = { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23 };
    vb16 ab = __builtin_shuffle (b & 3, (b >> 2) & 3, lo8);     /* t0[k], t1[k] */
    vb16 cd = __builtin_shuffle ((b >> 4) & 3, b >> 6, lo8);    /* t2[k], t3[k] */
    c = (vb16) __builtin_shuffle ((vh8) ab, (vh8) cd, (vh8) { 0, 8, 1, 9, 2, 10, 3, 11 });
    return is_signed ? (c ^ 2) - 2 : c;
  }
}

/* ---- quantize ---- */

VINLINE void
stream_fence (int stream)
{
#ifdef PIQ_VEC_STREAM
  if (stream)
    PIQ_VEC_STREAM_FENCE ();   /* streamed stores are weakly ordered: publish them */
#else
  (void) stream;
#endif
}


VINLINE void
vquantize (const void *src, void *dst, uint64_t index, size_t n, const PiqKernelArgs *a,
           int ft, int ii, int bits, int stochastic)
{
  const uint8_t *s = src;
  uint8_t *d = dst;
  VArgs va;
  size_t i = 0;
  int stream = 0;

#ifdef PIQ_VEC_STREAM
  stream = a->stream && (uintptr_t) dst % 64 == 0;
#endif
  if (vargs_init (&va, a))     /* always, for the ≤ 16-bit types this is used for */
#pragma GCC unroll 4
    for (; i + PIQ_W <= n; i += PIQ_W)
      {
        __builtin_prefetch (s + (i + PIQ_PREFETCH) * fsize (ft));
        vi q = vquant (vload_f (s + i * fsize (ft), ft), &va, index + i, stochastic);
        if (bits == 16)
          {
            vh h = __builtin_convertvector (q, vh);
#ifdef PIQ_VEC_STREAM
            if (stream)
              PIQ_VEC_STREAM_HALF (d + 2 * i, h);
            else
#endif
              memcpy (d + 2 * i, &h, sizeof h);
          }
        else
          pack_store_w (d + i * bits / 8, codes_to_bytes (q), bits, stream);
      }
  stream_fence (stream);
  if (i < n)
    piq_kernels_scalar.quantize[ft][ii][stochastic] (s + i * fsize (ft), d + i * bits / 8, index + i, n - i, a);
}

/* ---- dequantize ---- */

/* y = (q − zp) · scale for PIQ_W codes held as bytes in c. */
VINLINE vf
vdeq (vb16 c, const VArgs *va, int is_signed)
{
  vi q = is_signed ? PIQ_VEC_S8_TO_I32 (c) : PIQ_VEC_U8_TO_I32 (c);
  return __builtin_convertvector (q - va->zp, vf) * va->scale;
}

/* The same for PIQ_W 16-bit codes. */
VINLINE vf
vdeq16 (const uint8_t *p, const VArgs *va, int is_signed)
{
  vh h;
  vi q;

  memcpy (&h, p, sizeof h);
  q = is_signed ? (vi) ((__builtin_convertvector (h, vu) << 16)) >> 16 : (vi) __builtin_convertvector (h, vu);
  return __builtin_convertvector (q - va->zp, vf) * va->scale;
}

/* Store, add-store, or (large SET outputs, aligned) stream past the caches: the
 * bytes are the same, only the cache policy differs. */
VINLINE void
vstore_op (uint8_t *d, vf y, int ft, int add, int stream)
{
  if (add)
    y = vload_f (d, ft) + y;
#ifdef PIQ_VEC_STREAM
  if (stream)
    {
      vh h;

      if (ft == PIQ_F_F32)
        {
          PIQ_VEC_STREAM (d, y);
          return;
        }
      h = vf_to_bf16 (y);
# if HAVE_F16
      if (ft == PIQ_F_F16)
        h = PIQ_VEC_F16_BITS (y);
# endif
      PIQ_VEC_STREAM_HALF (d, h);
      return;
    }
#endif
  vstore_f (d, y, ft);
}

VINLINE int
want_stream (const void *dst, const PiqKernelArgs *a, int ft, int add)
{
#ifdef PIQ_VEC_STREAM
  /* every vector store lands on a vector boundary only if the first one does */
  return a->stream && !add && ((uintptr_t) dst % (PIQ_W * fsize (ft))) == 0;
#else
  (void) dst; (void) a; (void) ft; (void) add;
  return 0;
#endif
}

VINLINE void
vdequantize (const void *src, void *dst, size_t n, const PiqKernelArgs *a,
             int ii, int bits, int is_signed, int ft, int add)
{
  const uint8_t *s = src;
  uint8_t *d = dst;
  VArgs va;
  size_t i = 0;
  int stream = want_stream (dst, a, ft, add);

  vargs_init (&va, a);
  for (; i + PIQ_W <= n; i += PIQ_W)
    vstore_op (d + i * fsize (ft),
               bits == 16 ? vdeq16 (s + 2 * i, &va, is_signed)
                          : vdeq (unpack_w (s + i * bits / 8, bits, is_signed), &va, is_signed),
               ft, add, stream);
  stream_fence (stream);
  if (i < n)
    piq_kernels_scalar.dequantize[ii][ft][add] (s + i * bits / 8, d + i * fsize (ft), n - i, a);
}

/* ---- requantize: r · scale, with r = q − zp as vround gives it ---- */

VINLINE void
vrequantize (const void *src, void *dst, uint64_t index, size_t n, const PiqKernelArgs *a,
             int ft, int stochastic, int add)
{
  const uint8_t *s = src;
  uint8_t *d = dst;
  VArgs va;
  size_t i = 0;

  int stream = want_stream (dst, a, ft, add);

  /* Types wider than 22 bits of range keep the scalar path (exact int128 clamping). */
  if (vargs_init (&va, a))
#pragma GCC unroll 4
    for (; i + PIQ_W <= n; i += PIQ_W)
      {
        __builtin_prefetch (s + (i + PIQ_PREFETCH) * fsize (ft));
        vstore_op (d + i * fsize (ft),
                 vround (vload_f (s + i * fsize (ft), ft), &va, index + i, stochastic) * va.scale,
                 ft, add, stream);
      }
  stream_fence (stream);
  if (i < n)
    piq_kernels_scalar.requantize[ft][stochastic][add] (s + i * fsize (ft), d + i * fsize (ft),
                                                        index + i, n - i, a);
}

/* ---- reductions ---- */

/* Four independent accumulators per bound keep the min/max chains off the critical
 * path; finiteness is one integer max of |x|'s bits (≥ 0x7f800000: Inf or NaN). With
 * a non-finite element the bounds are NaN, as in the scalar reference. */
/* max of unsigned lanes */
#ifdef PIQ_VEC_MAXU32
# define vmaxu(a, b) ((vu) PIQ_VEC_MAXU32 (a, b))
#else
# define vmaxu(a, b) ((vu) vsel ((vi) ((a) > (b)), (vf) (a), (vf) (b)))
#endif

#define MINMAX_STEP(x_, lo_, hi_, bits_) \
  do { \
    vf x__ = (x_); \
    lo_ = vmin (lo_, x__); \
    hi_ = vmax (hi_, x__); \
    bits_ = vmaxu (bits_, (vu) x__ & 0x7fffffffu); \
  } while (0)

/* Four independent accumulators per bound (named variables: an array of vectors
 * indexed in a loop ended up on the stack) keep the chains off the critical path;
 * finiteness is an unsigned max of |x|'s bits (≥ 0x7f800000: Inf or NaN). With a
 * non-finite element the bounds are NaN, as in the scalar reference. */
VINLINE void
vminmax (const void *src, size_t n, PiqMinMax *out, int ft)
{
  const uint8_t *s = src;
  const size_t step = PIQ_W * fsize (ft);
  const vf pinf = vsplat (INFINITY), ninf = vsplat (-INFINITY);
  vf lo0 = pinf, lo1 = pinf, lo2 = pinf, lo3 = pinf;
  vf hi0 = ninf, hi1 = ninf, hi2 = ninf, hi3 = ninf;
  vu b0 = { 0 }, b1 = { 0 }, b2 = { 0 }, b3 = { 0 };
  size_t i = 0;
  PiqMinMax tail;

  for (; i + 4 * PIQ_W <= n; i += 4 * PIQ_W)
    {
      const uint8_t *p = s + i * fsize (ft);
      __builtin_prefetch (p + PIQ_PREFETCH * fsize (ft));
      MINMAX_STEP (vload_f (p, ft), lo0, hi0, b0);
      MINMAX_STEP (vload_f (p + step, ft), lo1, hi1, b1);
      MINMAX_STEP (vload_f (p + 2 * step, ft), lo2, hi2, b2);
      MINMAX_STEP (vload_f (p + 3 * step, ft), lo3, hi3, b3);
    }
  for (; i + PIQ_W <= n; i += PIQ_W)
    MINMAX_STEP (vload_f (s + i * fsize (ft), ft), lo0, hi0, b0);
  lo0 = vmin (vmin (lo0, lo1), vmin (lo2, lo3));
  hi0 = vmax (vmax (hi0, hi1), vmax (hi2, hi3));
  b0 = vmaxu (vmaxu (b0, b1), vmaxu (b2, b3));
  piq_kernels_scalar.minmax[ft] (s + i * fsize (ft), n - i, &tail);
  for (int j = 0; j < PIQ_W; j++)
    {
      tail.non_finite |= b0[j] >= 0x7f800000u;
      tail.min = lo0[j] < tail.min ? lo0[j] : tail.min;
      tail.max = hi0[j] > tail.max ? hi0[j] : tail.max;
    }
  if (tail.non_finite)
    tail.min = tail.max = NAN;
  tail.min += 0.0;     /* +0, never −0, as the scalar reference */
  tail.max += 0.0;
  *out = tail;
}

VINLINE v8f
vload8_f (const uint8_t *p, int ft)
{
  if (ft == PIQ_F_F32)
    {
      v8f v;
      memcpy (&v, p, sizeof v);
      return v;
    }
  if (ft == PIQ_F_BF16)
    {
      v8h h;
      memcpy (&h, p, sizeof h);
      return (v8f) (__builtin_convertvector (h, v8u) << 16);
    }
#if HAVE_F16
  return PIQ_VEC_LOAD_F16_8 (p);
#else
  __builtin_unreachable ();
#endif
}

/* 8 binary64 lanes, element i into lane i % 8, as the scalar reference: each lane
 * sees the same additions in the same order. x·x of a widened binary32 is exact. */
VINLINE void
vsums (const void *src, size_t n, PiqSums *out, int ft)
{
  const uint8_t *s = src;
  v8d sum = { 0 }, sq = { 0 };
  size_t i = 0;

  for (; i + 8 <= n; i += 8)
    {
      v8d x = __builtin_convertvector (vload8_f (s + i * fsize (ft), ft), v8d);
      sum += x;
      sq += x * x;
    }
  for (; i < n; i++)
    {
      double x = piq_load_f (s, i, ft);
      sum[i & 7] += x;
      sq[i & 7] += x * x;
    }
  out->sum = ((sum[0] + sum[4]) + (sum[2] + sum[6])) + ((sum[1] + sum[5]) + (sum[3] + sum[7]));
  out->sum_sq = ((sq[0] + sq[4]) + (sq[2] + sq[6])) + ((sq[1] + sq[5]) + (sq[3] + sq[7]));
}

/* ---- instances ---- */

#define VQ(f, F, i, I, BITS, r, R) \
  static void PIQ_KNAME_quantize (f, i, r) (const void *src, void *dst, uint64_t index, size_t n, \
                                            const PiqKernelArgs *a) \
  { vquantize (src, dst, index, n, a, PIQ_F_##F, PIQ_I_##I, BITS, PIQ_R_##R); }
#define VQ_R(f, F, i, I, BITS) VQ (f, F, i, I, BITS, nearest, NEAREST) VQ (f, F, i, I, BITS, stochastic, STOCHASTIC)
#define VQ_I(f, F) \
  VQ_R (f, F, uint2, UINT2, 2) VQ_R (f, F, int2, INT2, 2) VQ_R (f, F, uint4, UINT4, 4) \
  VQ_R (f, F, int4, INT4, 4)   VQ_R (f, F, uint8, UINT8, 8) VQ_R (f, F, int8, INT8, 8) \
  VQ_R (f, F, uint16, UINT16, 16) VQ_R (f, F, int16, INT16, 16)

#define VD(i, I, BITS, SGN, f, F, o, O) \
  static void PIQ_KNAME_dequantize (i, f, o) (const void *src, void *dst, size_t n, const PiqKernelArgs *a) \
  { vdequantize (src, dst, n, a, PIQ_I_##I, BITS, SGN, PIQ_F_##F, PIQ_OP_##O); }
#define VD_O(i, I, BITS, SGN, f, F) VD (i, I, BITS, SGN, f, F, set, SET) VD (i, I, BITS, SGN, f, F, add, ADD)
#define VD_I(f, F) \
  VD_O (uint2, UINT2, 2, 0, f, F) VD_O (int2, INT2, 2, 1, f, F) VD_O (uint4, UINT4, 4, 0, f, F) \
  VD_O (int4, INT4, 4, 1, f, F)   VD_O (uint8, UINT8, 8, 0, f, F) VD_O (int8, INT8, 8, 1, f, F) \
  VD_O (uint16, UINT16, 16, 0, f, F) VD_O (int16, INT16, 16, 1, f, F)

#define VR(f, F, r, R, o, O) \
  static void PIQ_KNAME_requantize (f, r, o) (const void *src, void *dst, uint64_t index, size_t n, \
                                              const PiqKernelArgs *a) \
  { vrequantize (src, dst, index, n, a, PIQ_F_##F, PIQ_R_##R, PIQ_OP_##O); }
#define VR_ALL(f, F) \
  VR (f, F, nearest, NEAREST, set, SET) VR (f, F, nearest, NEAREST, add, ADD) \
  VR (f, F, stochastic, STOCHASTIC, set, SET) VR (f, F, stochastic, STOCHASTIC, add, ADD)

#define VRED(f, F) \
  static void PIQ_KNAME_minmax (f) (const void *src, size_t n, PiqMinMax *out) { vminmax (src, n, out, PIQ_F_##F); } \
  static void PIQ_KNAME_sums (f) (const void *src, size_t n, PiqSums *out) { vsums (src, n, out, PIQ_F_##F); }

#define VALL(f, F) VQ_I (f, F) VD_I (f, F) VR_ALL (f, F) VRED (f, F)

VALL (f32, F32)
VALL (bf16, BF16)
#if HAVE_F16
VALL (f16, F16)
#endif

/* Table slots filled here: the float sources/destinations above × the ≤ 16-bit types. */
#define SLOT_Q(f, F, i, I) \
  .quantize[PIQ_F_##F][PIQ_I_##I][PIQ_R_NEAREST] = PIQ_KNAME_quantize (f, i, nearest), \
  .quantize[PIQ_F_##F][PIQ_I_##I][PIQ_R_STOCHASTIC] = PIQ_KNAME_quantize (f, i, stochastic), \
  .dequantize[PIQ_I_##I][PIQ_F_##F][PIQ_OP_SET] = PIQ_KNAME_dequantize (i, f, set), \
  .dequantize[PIQ_I_##I][PIQ_F_##F][PIQ_OP_ADD] = PIQ_KNAME_dequantize (i, f, add),
#define SLOTS(f, F) \
  SLOT_Q (f, F, uint2, UINT2) SLOT_Q (f, F, int2, INT2) SLOT_Q (f, F, uint4, UINT4) \
  SLOT_Q (f, F, int4, INT4)   SLOT_Q (f, F, uint8, UINT8) SLOT_Q (f, F, int8, INT8) \
  SLOT_Q (f, F, uint16, UINT16) SLOT_Q (f, F, int16, INT16) \
  .requantize[PIQ_F_##F][PIQ_R_NEAREST][PIQ_OP_SET] = PIQ_KNAME_requantize (f, nearest, set), \
  .requantize[PIQ_F_##F][PIQ_R_NEAREST][PIQ_OP_ADD] = PIQ_KNAME_requantize (f, nearest, add), \
  .requantize[PIQ_F_##F][PIQ_R_STOCHASTIC][PIQ_OP_SET] = PIQ_KNAME_requantize (f, stochastic, set), \
  .requantize[PIQ_F_##F][PIQ_R_STOCHASTIC][PIQ_OP_ADD] = PIQ_KNAME_requantize (f, stochastic, add), \
  .minmax[PIQ_F_##F] = PIQ_KNAME_minmax (f), \
  .sums[PIQ_F_##F] = PIQ_KNAME_sums (f),

#include "piq-formats-vec-body.h"

const PiqKernelTable PIQ_VEC_TABLE = {
  .name = PIQ_VEC_LABEL,
  .level = PIQ_VEC_LEVEL,
  .required = PIQ_VEC_REQUIRED,
  PIQ_FORMAT_SLOTS
  SLOTS (f32, F32)
  SLOTS (bf16, BF16)
#if HAVE_F16
  SLOTS (f16, F16)
#endif
};

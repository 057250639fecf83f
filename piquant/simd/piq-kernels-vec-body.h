/* piq-kernels-vec-body.h: the vector kernels, written once for every ISA unit
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-{sse42,avx2,avx512,avx512vnni,neon}.c after they define
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
 *   PIQ_VEC_FLOOR_I(v)         (optional) vf -> vi rounding toward −∞ (in range, no NaN)
 *   PIQ_VEC_CEIL_I(v)          (optional) vf -> vi rounding toward +∞ (in range, no NaN)
 *   PIQ_VEC_FLOOR(v)           (optional) vf -> vf floor (no NaN)
 *   PIQ_VEC_CVTU_EXACT         (optional, defined) unsigned 32-bit -> float is one instruction
 *   PIQ_VEC_INC_IF_LT(i, a, b) (optional) i + (a < b), per lane (vi, vf, vf -> vi)
 *   PIQ_VEC_INC_IF_LTU(i, a, b) (optional) i + (a < b), per lane (vi, vu, vu -> vi; unsigned)
 *   PIQ_VEC_XOR_AND(a, b, m)   (optional) (a ^ b) & m on vu in one instruction
 *   PIQ_VEC_ANY(m)             (optional) nonzero if any lane of the vi m is nonzero
 *   PIQ_VEC_MIN_I32(a, b)      (optional) signed 32-bit min (vi)
 *   PIQ_VEC_SEL_LTU(a, b, x, y) (optional) a < b ? x : y per lane, a and b unsigned (vu),
 *                              in one compare into a mask and one blend
 *   PIQ_VEC_BF16_PAIR(a, b)    (optional) two vf that are not NaN -> their 2·PIQ_W bf16
 *                              (nearest even), in one vector the size of a vf
 * where the ISA has the x86 saturating packs and byte multiply-adds (the packing of
 * four vectors of codes at once, in registers; see pack4 below),
 *   PIQ_VEC_PACKS_DW(a, b)     vi, vi -> vw: signed-saturating dword -> word pack, per 128-bit lane
 *   PIQ_VEC_PACKS_WB(a, b), PIQ_VEC_PACKUS_WB(a, b)
 *                              vw, vw -> vbw: the same for words -> bytes (signed, unsigned)
 *   PIQ_VEC_MADDUBS(b, k)      vbw (unsigned) · vbw (signed), adjacent pairs summed -> vw
 *   PIQ_VEC_MADDWD(w, k)       vw · vw, adjacent pairs summed -> vi
 *   PIQ_VEC_FIX_DW(x), PIQ_VEC_FIX_QW(x)
 *                              the dword (qword) permutation that undoes the per-lane
 *                              interleave of the packs (identity for one 128-bit lane)
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
 * and where the ISA has a fused multiply-add (the matrix multiply's f32 tile,
 * piq-matmul-vec-body.h),
 *   PIQ_VEC_FMA(a, b, c)       a · b + c on vf, rounded once
 * and where the ISA has them (the integer and binary products),
 *   PIQ_VEC_DPBUSD(acc, u, s)  acc (vi) + the sums of four adjacent products of the
 *                              unsigned bytes of u and the signed bytes of s (vbw), exact
 *   PIQ_VEC_DOT4_U8S8(acc, u, s) the same sums where the ISA has neither VPDPBUSD nor
 *                              the x86 byte multiply-adds (the int8 GEMM and gemm_groups)
 *   PIQ_VEC_DOT4_S8S8(acc, u, s) with PIQ_VEC_DOT4_U8S8, the same sums where every byte
 *                              of u is below 128, if the ISA does them in fewer steps
 *   PIQ_VEC_POPCNT64(v)        the set bits of each 64-bit lane
 *   PIQ_VEC_ONLY_MATMUL        (defined) the unit fills only the matrix-multiply entries
 *
 * The bodies use GCC vector extensions, so the compiler lowers the same source to
 * each ISA, and every operation is the IEEE operation the scalar reference does:
 * the results are the same bytes (docs/numerics.md). Entries a unit does not
 * accelerate stay NULL and the dispatch uses the scalar kernel.
 *
 * Structure: a vector of PIQ_W elements at a time, packed and unpacked in registers
 * (PIQ_W·bits/8 is a whole number of bytes for every packed type); where the x86
 * pack hooks exist, quantize to ≤ 8-bit codes goes four vectors at a time
 * (codes4/store_codes4); the tail of a call runs the scalar kernel. No alignment is assumed (loads and stores go through memcpy).
 */
#include <stdint.h>
#include <string.h>

#include "piq-kernels-private.h"
#include "piq-convert-private.h"
#include "piq-cpu-private.h"

#pragma GCC diagnostic ignored "-Wpsabi"
/* A unit that adds only instructions the products use (PIQ_VEC_ONLY_MATMUL) fills only
 * the matrix-multiply entries of its table; the conversion kernels are static, so the
 * compiler drops them unused. */
#ifdef PIQ_VEC_ONLY_MATMUL
# pragma GCC diagnostic ignored "-Wunused-function"
#endif

#define VINLINE static inline __attribute__((always_inline))
/* Source elements to prefetch ahead in the streaming loops: the hardware prefetcher
 * alone left quantize at ~60% of the bandwidth limit (measured with piquant bench). */
#ifndef PIQ_PREFETCH
# define PIQ_PREFETCH 2048
#endif
/* Elements ahead whose packed source dequantize prefetches (0: none). */
#ifndef PIQ_DEQ_PREFETCH
# define PIQ_DEQ_PREFETCH 0
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
typedef int16_t  vw   __attribute__ ((vector_size (PIQ_W * 4)));   /* 2·PIQ_W words */
typedef uint8_t  vbw  __attribute__ ((vector_size (PIQ_W * 4)));   /* 4·PIQ_W bytes */
typedef uint8_t  vb2  __attribute__ ((vector_size (PIQ_W * 2)));   /* 2·PIQ_W bytes */

/* Shuffles with constant indices: GCC's __builtin_shuffle takes them as a mask vector
 * of type M, clang's __builtin_shufflevector as arguments (clang has no
 * __builtin_shuffle); both lower to the same shuffle instructions. */
#ifdef __clang__
# define PIQ_SHUF1(a, M, ...)    __builtin_shufflevector ((a), (a), __VA_ARGS__)
# define PIQ_SHUF2(a, b, M, ...) __builtin_shufflevector ((a), (b), __VA_ARGS__)
#else
# define PIQ_SHUF1(a, M, ...)    __builtin_shuffle ((a), (M) { __VA_ARGS__ })
# define PIQ_SHUF2(a, b, M, ...) __builtin_shuffle ((a), (b), (M) { __VA_ARGS__ })
#endif

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

/* x in every lane, bit for bit (a broadcast of its bits: 0 + x would cost an add
 * where x is not a constant, and turn −0 into +0) */
VINLINE vf
vsplat (float x)
{
  uint32_t b;

  memcpy (&b, &x, sizeof b);
  return (vf) ((vu) { 0 } + b);
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

/* The same for values that are not NaN (then the quiet-NaN case cannot arise). */
VINLINE vh
vf_to_bf16_finite (vf v)
{
  vu u = (vu) v;
  return __builtin_convertvector ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16, vh);
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
  vw  zp16;      /* zp as 16-bit lanes (mod 2^16), for the grouped packing */
  int pack_ok;   /* L and H fit 16 bits: four vectors pack through saturating packs */
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
  va->zp16 = (vw) { 0 } + (int16_t) (uint16_t) a->zero_point;
  va->pack_ok = ok && lo >= -32768 && hi <= 32767;
  return ok;
}

/* ---- stochastic rounding's hash (piq_mix32 of docs/numerics.md) ----
 * h = mix32 (index_lo ^ K) with K = key0 ^ mix32 (index_hi ^ key1), one K per call
 * (a call never crosses a multiple of 2^32 in index). */

#define MIX_C1 0x7feb352du
#define MIX_C2 0x846ca68bu

VINLINE uint32_t
vhash_key (const PiqKernelArgs *a, uint64_t index)
{
  return a->key0 ^ piq_mix32 ((uint32_t) (index >> 32) ^ a->key1);
}

/* mix32 after its first multiply; with PIQ_VEC_CVTU_EXACT only its top 24 bits (the
 * low 8 are cleared: vstoch_r then uses h as it is). */
VINLINE vu
vmix32_tail (vu x)
{
  x ^= x >> 15;
  x *= MIX_C2;
#if defined PIQ_VEC_XOR_AND
  return (vu) PIQ_VEC_XOR_AND (x, x >> 16, 0xffffff00u);
#elif defined PIQ_VEC_CVTU_EXACT
  return (x ^ (x >> 16)) & 0xffffff00u;
#else
  return x ^ (x >> 16);
#endif
}

/* Hashes of PIQ_W consecutive indices from p (any p), as vmix32_tail leaves them. */
VINLINE vu
vhash (uint32_t key, uint32_t p)
{
  vu x = viota (p) ^ key;

  x ^= x >> 16;      /* mix32's first step */
  return vmix32_tail (x * MIX_C1);
}

/* The first step and multiply of mix32 without vector multiplies, for groups of
 * 4·PIQ_W indices from p, a multiple of 4·PIQ_W: lane t holds p + t, t < 4·PIQ_W.
 * With x = (p + t) ^ K = (p ^ K) ^ t and S = (p ^ K) >> 16 (t does not reach bit 16),
 *   x ^ (x >> 16) = p ^ (K ^ S) ^ t = (p ^ kx) + (c ^ t),
 * kx = (K ^ S) & ~(4·PIQ_W − 1), c = (K ^ S) & (4·PIQ_W − 1), so its product with C1
 * is the scalar (p ^ kx)·C1 plus the constant vector (c ^ t)·C1. S changes only
 * where p crosses a multiple of 2^16: one table per such segment. */
typedef struct {
  uint32_t kx;
  vu       tc[4];
} VHashSeg;

VINLINE void
vhash_segment (VHashSeg *hs, uint32_t key, uint32_t p)
{
  uint32_t ks = key ^ ((p ^ key) >> 16);
  uint32_t c = ks & (4 * PIQ_W - 1);

  hs->kx = ks & ~(uint32_t) (4 * PIQ_W - 1);
  for (int k = 0; k < 4; k++)
    hs->tc[k] = (viota ((uint32_t) k * PIQ_W) ^ c) * MIX_C1;
}

/* The hashes of PIQ_W indices from p, a multiple of PIQ_W in the 2^16-segment hs was
 * built for: vhash (key, p) with one scalar multiply (shared by the four vectors of
 * p's group of 4·PIQ_W) and a table load in place of two vector multiplies. */
VINLINE vu
vhash_seg_at (const VHashSeg *hs, uint32_t p)
{
  uint32_t g = p & ~(uint32_t) (4 * PIQ_W - 1);

  return vmix32_tail (((vu) { 0 } + (g ^ hs->kx) * MIX_C1) + hs->tc[(p / PIQ_W) % 4]);
}

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

/* Stochastic r = floor(v) + (u < v − floor(v)) of a clamped v, u = (h >> 8)·2^-24, as
 * piq_round_f. Rounding clamped values gives the clamp of the rounded ones: rounding
 * is monotonic and leaves the integer bounds alone. */
VINLINE vi
vstoch_r (vf v, vu h)
{
  vf fl, frac;
  vi fi, up;

#if defined PIQ_VEC_FLOOR_I
  fi = PIQ_VEC_FLOOR_I (v);
  fl = __builtin_convertvector (fi, vf);
#elif defined PIQ_VEC_FLOOR
  fl = PIQ_VEC_FLOOR (v);
  fi = __builtin_convertvector (fl, vi);
#else
  {
    /* floor from nearest: (v + 1.5·2^23) − 1.5·2^23 is nearbyint(v) for |v| ≤ 2^22 */
    const vf magic = vsplat (ROUND_MAGIC), one = vsplat (1.0f);
    vf r = (v + magic) - magic;
    fl = r - (vf) ((vi) one & (r > v));
    fi = __builtin_convertvector (fl, vi);
  }
#endif
  frac = v - fl;
#ifdef PIQ_VEC_CVTU_EXACT
  /* h & ~255 = 256·(h >> 8) has at most 24 significant bits, so it converts exactly,
   * and (h >> 8)·2^-24 < frac ⟺ (h & ~255) < frac·2^32 (both sides exact). */
# ifdef PIQ_VEC_INC_IF_LT
  return PIQ_VEC_INC_IF_LT (fi, __builtin_convertvector (h, vf), frac * 0x1p32f);
# else
  up = (vi) (__builtin_convertvector (h, vf) < frac * 0x1p32f);
# endif
#else
  up = (vi) (__builtin_convertvector ((vi) (h >> 8), vf) * 0x1p-24f < frac);
#endif
  return fi - up;      /* up is −1 where the draw rounds up */
}

/* The rounded, clamped r = q − zp of PIQ_W elements, as float (requantize) and as
 * integers. Nearest rounding converts with the ISA's rounding conversion where it
 * has one: it rounds as the current rounding mode does, like nearbyint in the scalar
 * reference, in one instruction. With integer bounds L = qmin − zp and H = qmax − zp
 * (|L|, |H| ≤ 2^22), (v + 1.5·2^23) − 1.5·2^23 is exactly nearbyint(v), ties to even. */
VINLINE vi
vnear_r (vf x, const VArgs *va)
{
#ifdef PIQ_VEC_CVT_NEAREST
  return PIQ_VEC_CVT_NEAREST (vclamped (x, va));
#else
  const vf magic = vsplat (ROUND_MAGIC);
  return __builtin_convertvector ((vclamped (x, va) + magic) - magic, vi);
#endif
}

VINLINE vi
vquant_r (vf x, const VArgs *va, uint32_t key, uint32_t p, int stochastic)
{
  if (stochastic)
    return vstoch_r (vclamped (x, va), vhash (key, p));
  return vnear_r (x, va);
}

VINLINE vf
vround (vf x, const VArgs *va, uint32_t key, uint32_t p, int stochastic)
{
  if (stochastic)
    return __builtin_convertvector (vstoch_r (vclamped (x, va), vhash (key, p)), vf);
  {
    const vf magic = vsplat (ROUND_MAGIC);
    return (vclamped (x, va) + magic) - magic;
  }
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
      c = PIQ_SHUF2 (b & 0x0f, b >> 4, vb16, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      return is_signed ? (c ^ 8) - 8 : c;
    }
  {
#define LO8_ 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
    vb16 ab = PIQ_SHUF2 (b & 3, (b >> 2) & 3, vb16, LO8_);     /* t0[k], t1[k] */
    vb16 cd = PIQ_SHUF2 ((b >> 4) & 3, b >> 6, vb16, LO8_);    /* t2[k], t3[k] */
#undef LO8_
    c = (vb16) PIQ_SHUF2 ((vh8) ab, (vh8) cd, vh8, 0, 8, 1, 9, 2, 10, 3, 11);
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


#ifdef PIQ_VEC_PACKS_DW
/* ---- four vectors of codes at once (x86) ----
 * r0…r3 hold r = q − zp of 4·PIQ_W elements. The saturating packs narrow them to
 * bytes (no saturation happens: |r| < 2^15 and q fits the byte) with the zero point
 * added on 16-bit lanes, in the packs' per-128-bit-lane order; sub-byte codes are then
 * merged by multiply-adds of adjacent bytes (c0 + 16·c1; c0 + 4·c1 and then + 16·…),
 * and one permutation of whole 4-element (dword) or 8-element (qword) units restores
 * the element order before the final narrowing.
 * pairs: r0, r1 are the even and odd elements of 2·PIQ_W elements, r2, r3 those of
 * the next 2·PIQ_W (the bf16 loads that widen without a shuffle, vload_pairs). */
VINLINE vbw
codes4 (vi r0, vi r1, vi r2, vi r3, const VArgs *va, int bits, int is_signed, int pairs)
{
  if (pairs)
    {
      vw pe = (vw) PIQ_VEC_PACKS_DW (r0, r2) + va->zp16;
      vw po = (vw) PIQ_VEC_PACKS_DW (r1, r3) + va->zp16;
      typedef uint16_t vuw __attribute__ ((vector_size (PIQ_W * 4)));
      return (vbw) (((vuw) pe & 0xff) | ((vuw) po << 8));
    }
  {
    vw p0 = (vw) PIQ_VEC_PACKS_DW (r0, r1) + va->zp16;
    vw p1 = (vw) PIQ_VEC_PACKS_DW (r2, r3) + va->zp16;
    return bits == 8 && !is_signed ? (vbw) PIQ_VEC_PACKUS_WB (p0, p1) : (vbw) PIQ_VEC_PACKS_WB (p0, p1);
  }
}

#define FIX_UNITS(x, pairs) ((pairs) ? (__typeof__ (x)) PIQ_VEC_FIX_QW (x) : (__typeof__ (x)) PIQ_VEC_FIX_DW (x))

/* Pack and store the 4·PIQ_W·bits/8 bytes of codes4's result; stream: dst is
 * aligned to that size and the store goes past the caches; high_first: 4-bit codes
 * put element 2k in the high nibble (bitsandbytes' order). */
VINLINE void
store_codes4 (uint8_t *dst, vbw b, int bits, int is_signed, int pairs, int high_first, int stream)
{
  if (bits == 8)
    {
      b = FIX_UNITS (b, pairs);
#ifdef PIQ_VEC_STREAM
      if (stream)
        {
          PIQ_VEC_STREAM (dst, (vf) b);
          return;
        }
#endif
      memcpy (dst, &b, sizeof b);
    }
  else if (bits == 4)
    {
      vw w = (vw) PIQ_VEC_MADDUBS (is_signed ? b & 0x0f : b,
                                   (vbw) ((vw) { 0 } + (int16_t) (high_first ? 0x0110 : 0x1001)));
      vb2 o = __builtin_convertvector (FIX_UNITS (w, pairs), vb2);
#ifdef PIQ_VEC_STREAM
      if (stream)
        {
          PIQ_VEC_STREAM_HALF (dst, (vh) o);
          return;
        }
#endif
      memcpy (dst, &o, sizeof o);
    }
  else
    {
      vw w = (vw) PIQ_VEC_MADDUBS (is_signed ? b & 0x03 : b, (vbw) ((vw) { 0 } + 0x0401));
      vi dw = (vi) PIQ_VEC_MADDWD (w, (vw) ((vi) { 0 } + 0x00100001));
      vb o = __builtin_convertvector (FIX_UNITS (dw, pairs), vb);
      store_bytes (dst, bytes16 (&o, sizeof o), sizeof o, stream);
    }
}
#endif

/* 2·PIQ_W bf16 at p as their even and odd elements, widened exactly (a shift and a
 * mask of the same load, no shuffle). */
VINLINE void
vload_pairs (const uint8_t *p, vf *even, vf *odd)
{
  vu x;

  memcpy (&x, p, sizeof x);
  *even = (vf) (x << 16);
  *odd = (vf) (x & 0xffff0000u);
}

VINLINE void
vquantize (const void *src, void *dst, uint64_t index, size_t n, const PiqKernelArgs *a,
           int ft, int ii, int bits, int is_signed, int stochastic)
{
  const uint8_t *s = src;
  uint8_t *d = dst;
  const size_t fs = fsize (ft);
  VArgs va;
  size_t i = 0;
  int stream = 0;
  uint32_t key = stochastic ? vhash_key (a, index) : 0;

#ifdef PIQ_VEC_STREAM
  stream = a->stream && (uintptr_t) dst % 64 == 0;
#endif
  if (!vargs_init (&va, a))     /* always succeeds for the ≤ 16-bit types this is used for */
    goto tail;

#ifdef PIQ_VEC_PACKS_DW
  /* Groups of four vectors; for stochastic rounding, at indices that are multiples
   * of 4·PIQ_W (the hash's tables), reached with single vectors when the index is a
   * multiple of PIQ_W (library calls start at multiples of 64: always). */
  if (bits <= 8 && va.pack_ok && (!stochastic || (uint32_t) index % PIQ_W == 0))
    {
      const int pairs = ft == PIQ_F_BF16 && !stochastic;
      const size_t gbytes = 4 * PIQ_W * bits / 8;
      int stream4;

      if (stochastic)
        for (; (uint32_t) (index + i) % (4 * PIQ_W) != 0 && i + PIQ_W <= n; i += PIQ_W)
          pack_store_w (d + i * bits / 8,
                        codes_to_bytes (vquant_r (vload_f (s + i * fs, ft), &va, key, (uint32_t) (index + i), 1) + va.zp),
                        bits, stream);
      stream4 = stream && (uintptr_t) (d + i * bits / 8) % gbytes == 0;
      while (i + 4 * PIQ_W <= n)
        {
          size_t end = n;
          VHashSeg hs;

          if (stochastic)
            {
              uint32_t p = (uint32_t) (index + i);
              size_t seg = i + (0x10000u - (p & 0xffffu));
              end = seg < n ? seg : n;
              vhash_segment (&hs, key, p);
            }
          for (; i + 4 * PIQ_W <= end; i += 4 * PIQ_W)
            {
              const uint8_t *sp = s + i * fs;
              vi r0, r1, r2, r3;

              /* named vectors, not an array: an array of vectors ended up on the stack */
              __builtin_prefetch (sp + PIQ_PREFETCH * fs);
              __builtin_prefetch (sp + PIQ_W * fs + PIQ_PREFETCH * fs);
              __builtin_prefetch (sp + 2 * PIQ_W * fs + PIQ_PREFETCH * fs);
              __builtin_prefetch (sp + 3 * PIQ_W * fs + PIQ_PREFETCH * fs);
              if (pairs)
                {
                  vf e0, o0, e1, o1;
                  vload_pairs (sp, &e0, &o0);
                  vload_pairs (sp + 4 * PIQ_W, &e1, &o1);
                  r0 = vnear_r (e0, &va);
                  r1 = vnear_r (o0, &va);
                  r2 = vnear_r (e1, &va);
                  r3 = vnear_r (o1, &va);
                }
              else if (stochastic)
                {
                  vu base = (vu) { 0 } + (((uint32_t) (index + i) ^ hs.kx) * MIX_C1);
                  r0 = vstoch_r (vclamped (vload_f (sp, ft), &va), vmix32_tail (base + hs.tc[0]));
                  r1 = vstoch_r (vclamped (vload_f (sp + PIQ_W * fs, ft), &va), vmix32_tail (base + hs.tc[1]));
                  r2 = vstoch_r (vclamped (vload_f (sp + 2 * PIQ_W * fs, ft), &va), vmix32_tail (base + hs.tc[2]));
                  r3 = vstoch_r (vclamped (vload_f (sp + 3 * PIQ_W * fs, ft), &va), vmix32_tail (base + hs.tc[3]));
                }
              else
                {
                  r0 = vnear_r (vload_f (sp, ft), &va);
                  r1 = vnear_r (vload_f (sp + PIQ_W * fs, ft), &va);
                  r2 = vnear_r (vload_f (sp + 2 * PIQ_W * fs, ft), &va);
                  r3 = vnear_r (vload_f (sp + 3 * PIQ_W * fs, ft), &va);
                }
              store_codes4 (d + i * bits / 8, codes4 (r0, r1, r2, r3, &va, bits, is_signed, pairs),
                            bits, is_signed, pairs, 0, stream4);
            }
        }
    }
#endif

#pragma GCC unroll 4
  for (; i + PIQ_W <= n; i += PIQ_W)
    {
      __builtin_prefetch (s + (i + PIQ_PREFETCH) * fs);
      vi q = vquant_r (vload_f (s + i * fs, ft), &va, key, (uint32_t) (index + i), stochastic) + va.zp;
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
tail:
  stream_fence (stream);
  if (i < n)
    piq_kernels_scalar.quantize[ft][ii][stochastic] (s + i * fs, d + i * bits / 8, index + i, n - i, a);
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
  if (ft == PIQ_F_BF16 && !add && isfinite (a->scale_f))
    {
      /* (q − zp)·scale with a finite scale is never NaN: bf16 rounding without the
       * NaN test, two vectors at a time (one narrowing of both) */
      int stream2 = stream && (uintptr_t) d % (4 * PIQ_W) == 0;

#pragma GCC unroll 2
      for (; i + 2 * PIQ_W <= n; i += 2 * PIQ_W)
        {
          vf y0 = bits == 16 ? vdeq16 (s + 2 * i, &va, is_signed)
                             : vdeq (unpack_w (s + i * bits / 8, bits, is_signed), &va, is_signed);
          vf y1 = bits == 16 ? vdeq16 (s + 2 * (i + PIQ_W), &va, is_signed)
                             : vdeq (unpack_w (s + (i + PIQ_W) * bits / 8, bits, is_signed), &va, is_signed);
#ifdef PIQ_VEC_BF16_PAIR
          vf h = (vf) PIQ_VEC_BF16_PAIR (y0, y1);
# ifdef PIQ_VEC_STREAM
          if (stream2)
            PIQ_VEC_STREAM (d + 2 * i, h);
          else
# endif
            memcpy (d + 2 * i, &h, sizeof h);
#else
          vh h0 = vf_to_bf16_finite (y0), h1 = vf_to_bf16_finite (y1);
# ifdef PIQ_VEC_STREAM
          if (stream2)
            {
              PIQ_VEC_STREAM_HALF (d + 2 * i, h0);
              PIQ_VEC_STREAM_HALF (d + 2 * i + sizeof h0, h1);
            }
          else
# endif
            {
              memcpy (d + 2 * i, &h0, sizeof h0);
              memcpy (d + 2 * i + sizeof h0, &h1, sizeof h1);
            }
#endif
        }
      (void) stream2;
    }
#pragma GCC unroll 4
  for (; i + PIQ_W <= n; i += PIQ_W)
    {
#if PIQ_DEQ_PREFETCH
      __builtin_prefetch (s + (i + PIQ_DEQ_PREFETCH) * bits / 8);
#endif
      vstore_op (d + i * fsize (ft),
                 bits == 16 ? vdeq16 (s + 2 * i, &va, is_signed)
                            : vdeq (unpack_w (s + i * bits / 8, bits, is_signed), &va, is_signed),
                 ft, add, stream);
    }
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
  uint32_t key = stochastic ? vhash_key (a, index) : 0;

  /* Types wider than 22 bits of range keep the scalar path (exact int128 clamping). */
  if (vargs_init (&va, a))
#pragma GCC unroll 4
    for (; i + PIQ_W <= n; i += PIQ_W)
      {
        __builtin_prefetch (s + (i + PIQ_PREFETCH) * fsize (ft));
        vstore_op (d + i * fsize (ft),
                 vround (vload_f (s + i * fsize (ft), ft), &va, key, (uint32_t) (index + i), stochastic) * va.scale,
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

#define VQ(f, F, i, I, BITS, SGN, r, R) \
  static void PIQ_KNAME_quantize (f, i, r) (const void *src, void *dst, uint64_t index, size_t n, \
                                            const PiqKernelArgs *a) \
  { vquantize (src, dst, index, n, a, PIQ_F_##F, PIQ_I_##I, BITS, SGN, PIQ_R_##R); }
#define VQ_R(f, F, i, I, BITS, SGN) \
  VQ (f, F, i, I, BITS, SGN, nearest, NEAREST) VQ (f, F, i, I, BITS, SGN, stochastic, STOCHASTIC)
#define VQ_I(f, F) \
  VQ_R (f, F, uint2, UINT2, 2, 0) VQ_R (f, F, int2, INT2, 2, 1) VQ_R (f, F, uint4, UINT4, 4, 0) \
  VQ_R (f, F, int4, INT4, 4, 1)   VQ_R (f, F, uint8, UINT8, 8, 0) VQ_R (f, F, int8, INT8, 8, 1) \
  VQ_R (f, F, uint16, UINT16, 16, 0) VQ_R (f, F, int16, INT16, 16, 1)

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
#include "piq-matmul-vec-body.h"
#include "piq-binary-vec-body.h"
#include "piq-qat-vec-body.h"
#include "piq-hist-vec-body.h"

const PiqKernelTable PIQ_VEC_TABLE = {
  .name = PIQ_VEC_LABEL,
  .level = PIQ_VEC_LEVEL,
  .required = PIQ_VEC_REQUIRED,
  PIQ_MATMUL_SLOTS
  PIQ_BINARY_SLOTS
#ifndef PIQ_VEC_ONLY_MATMUL
  PIQ_FORMAT_SLOTS
  PIQ_QAT_SLOTS
  PIQ_HIST_SLOTS
  SLOTS (f32, F32)
  SLOTS (bf16, BF16)
# if HAVE_F16
  SLOTS (f16, F16)
# endif
#endif
};

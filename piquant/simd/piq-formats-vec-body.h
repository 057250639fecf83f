/* piq-formats-vec-body.h: the vector bodies of the block formats (f32 data)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h, which has the vector types and the packing
 * helpers, before the unit's table. Vectorized, with nearest rounding: FP8 E4M3/E5M2,
 * FP6 E2M3/E3M2 and FP4 E2M1 (per tensor, or f32/f16/E8M0 block scales: MXFP8, MXFP6,
 * MXFP4; FP6's 6-bit storage and bnb FP4 are in piq-formats-vec-fp6.h), NF4 (either
 * nibble order; units of 8 lanes or more), bnb FP4 (either nibble order, f32 and
 * f16 scales) and 4- and 8-bit integers with block scales
 * (MXINT8 too), in blocks of a multiple of PIQ_W elements, and ggml's Q8_0 and
 * Q4_0 (their own block layout, below). Anything else, and a ragged last block,
 * runs the scalar driver (simd/piq-formats.c).
 *
 * Same bytes as the scalar driver: a block's min, max and max |x| are the same in any
 * order, and the scale comes from the same function (piq_block_params); the element
 * codecs below are integer forms of the scalar ones (each step noted), and every
 * float operation is the one the scalar codec does.
 */
#include "piq-formats-private.h"

/* Which calls the vector bodies take; dequantization does not round, so the
 * rounding mode matters to quantization only. The ggml formats (bits 0) are
 * dispatched before this, to their own bodies (gquantize, gdequantize). */
VINLINE int
fvec_takes (const PiqBlockArgs *a, int quantize)
{
  (void) quantize;   /* every format below takes both directions today */
  if (a->bits == 0 || (!a->fixed && a->block % PIQ_W != 0))
    return 0;
  if (a->code < 0)
    return a->bits == 8 || a->bits == 4;
  switch (a->code)
    {
    case PIQ_C_FP8_E4M3: case PIQ_C_FP8_E5M2: case PIQ_C_FP4_E2M1:
    case PIQ_C_FP6_E2M3: case PIQ_C_FP6_E3M2:   /* 6-bit packing: piq-formats-vec-fp6.h */
      return 1;
    case PIQ_C_NF4:
      return PIQ_W >= 8;   /* the 16-entry table is one or two vectors */
    case PIQ_C_FP4_BNB:    /* f32 and f16 scales (fgroup_params has no E8M0 rule for it) */
      return a->scale_kind != PIQ_SCALE_E8M0;
    case PIQ_C_BINARY:     /* whole 16-element groups: two bytes of bits, 16 sum lanes */
      return a->fixed || a->block % PIQ_SUM_LANES == 0;
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

/* Lane-wise min / max of a whole vector by halving (no NaN lanes here). */
#if PIQ_W == 16
# define FSWAP_(k) 0 ^ (k), 1 ^ (k), 2 ^ (k), 3 ^ (k), 4 ^ (k), 5 ^ (k), 6 ^ (k), 7 ^ (k), \
                   8 ^ (k), 9 ^ (k), 10 ^ (k), 11 ^ (k), 12 ^ (k), 13 ^ (k), 14 ^ (k), 15 ^ (k)
#elif PIQ_W == 8
# define FSWAP_(k) 0 ^ (k), 1 ^ (k), 2 ^ (k), 3 ^ (k), 4 ^ (k), 5 ^ (k), 6 ^ (k), 7 ^ (k)
#else
# define FSWAP_(k) 0 ^ (k), 1 ^ (k), 2 ^ (k), 3 ^ (k)
#endif

#define FREDUCE_(name, op) \
  VINLINE float \
  name (vf v) \
  { \
    if (PIQ_W == 16) v = op (v, PIQ_SHUF1 (v, vi, FSWAP_ (8 & (PIQ_W - 1)))); \
    if (PIQ_W >= 8)  v = op (v, PIQ_SHUF1 (v, vi, FSWAP_ (4 & (PIQ_W - 1)))); \
    v = op (v, PIQ_SHUF1 (v, vi, FSWAP_ (2))); \
    v = op (v, PIQ_SHUF1 (v, vi, FSWAP_ (1))); \
    return v[0]; \
  }
FREDUCE_ (fhmin, vmin)
FREDUCE_ (fhmax, vmax)

VINLINE vu
fmaxu (vu a, vu b)
{
#ifdef PIQ_VEC_MAXU32
  return (vu) PIQ_VEC_MAXU32 (a, b);
#else
  vi gt = (vi) (a > b);
  return (a & (vu) gt) | (b & ~(vu) gt);
#endif
}

/* max(am, |v|) as bits: am holds the bits of non-negative floats, NaN and Inf above
 * every finite magnitude (AVX-512's VRANGEPS would do it in one instruction, but it
 * returns the other operand for a quiet NaN) */
VINLINE vu
fmaxabs (vu am, vf v)
{
  return fmaxu (am, (vu) v & 0x7fffffffu);
}

VINLINE uint32_t
fhmaxu (vu v)
{
  if (PIQ_W == 16) v = fmaxu (v, PIQ_SHUF1 (v, vu, FSWAP_ (8 & (PIQ_W - 1))));
  if (PIQ_W >= 8)  v = fmaxu (v, PIQ_SHUF1 (v, vu, FSWAP_ (4 & (PIQ_W - 1))));
  v = fmaxu (v, PIQ_SHUF1 (v, vu, FSWAP_ (2)));
  v = fmaxu (v, PIQ_SHUF1 (v, vu, FSWAP_ (1)));
  return v[0];
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

/* Table lookups with variable indices, as GCC's __builtin_shuffle: lane j of the
 * result is lane k[j] mod PIQ_W of a (one table), or lane k[j] mod 2·PIQ_W of a ‖ b
 * (two tables). clang has no variable __builtin_shuffle: there the ISA's permutes
 * (the instructions GCC emits), or lane by lane where the unit never takes the path. */
VINLINE vi
fperm2_i (vi a, vi b, vi k)
{
#ifndef __clang__
  return __builtin_shuffle (a, b, k);
#elif PIQ_W == 16 && defined __AVX512F__
  return (vi) _mm512_permutex2var_epi32 ((__m512i) a, (__m512i) k, (__m512i) b);
#elif PIQ_W == 8 && defined __AVX2__
  __m256 lo = _mm256_permutevar8x32_ps ((__m256) a, (__m256i) k);
  __m256 hi = _mm256_permutevar8x32_ps ((__m256) b, (__m256i) k);
  return (vi) _mm256_blendv_ps (lo, hi, (__m256) ((vu) k << 28));   /* bit 3 of k picks b */
#else
  vi r;
  for (int j = 0; j < PIQ_W; j++)
    {
      int32_t x = k[j] & (2 * PIQ_W - 1);
      r[j] = x < PIQ_W ? a[x] : b[x - PIQ_W];
    }
  return r;
#endif
}

VINLINE vf
fperm2_f (vf a, vf b, vi k)
{
#ifndef __clang__
  return __builtin_shuffle (a, b, k);
#else
  return (vf) fperm2_i ((vi) a, (vi) b, k);
#endif
}

VINLINE vf
fperm1_f (vf a, vi k)
{
#ifndef __clang__
  return __builtin_shuffle (a, k);
#elif PIQ_W == 16 && defined __AVX512F__
  return (vf) _mm512_permutexvar_ps ((__m512i) k, (__m512) a);
#elif PIQ_W == 8 && defined __AVX2__
  return (vf) _mm256_permutevar8x32_ps ((__m256) a, (__m256i) k);
#else
  return (vf) fperm2_i ((vi) a, (vi) a, k);
#endif
}

/* Lane j: t[c[j] & 15] of a table of 16 floats: one permute (16 lanes), two and a
 * blend (8), lane by lane (4). The fused GEMV's block tables. */
VINLINE vf
flut16 (const float *t, vi c)
{
#if PIQ_W == 16
  vf t0;
  memcpy (&t0, t, sizeof t0);
  return fperm1_f (t0, c);
#elif PIQ_W == 8
  vf t0, t1;
  memcpy (&t0, t, sizeof t0);
  memcpy (&t1, t + 8, sizeof t1);
  return fperm2_f (t0, t1, c);
#else
  vf v;
  for (int l = 0; l < PIQ_W; l++)
    v[l] = t[c[l] & 15];
  return v;
#endif
}

/* a < b (unsigned, b a constant) ? x : y, lane-wise */
VINLINE vi
fsel_ltu (vu a, uint32_t b, vi x, vi y)
{
#ifdef PIQ_VEC_SEL_LTU
  return PIQ_VEC_SEL_LTU (a, (vu) fsplat_i ((int32_t) b), x, y);
#else
  return (vi) vsel ((vi) (a < b), (vf) x, (vf) y);
#endif
}

/* piq_minifloat_encode, nearest: the normal range rounds the binary32 significand
 * to M bits at its bit 23 − M (ties to even), which is the scalar quantum rounding;
 * below the smallest normal t = |v| · 2^(M − emin) is rounded as the scalar does.
 * fin: no lane is NaN (a finite block scaled by a finite inverse), so the NaN code
 * is left out. */
VINLINE vi
mf_encode (vf v, int M, int bias, int maxc, int ovf, int nanc, int width, int fin, int st, vu h)
{
  const int emin = 1 - bias;
  vu u = (vu) v, a = u & 0x7fffffffu;
  vi cn, cs, code;

  if (st)
    {
      /* stochastic, as the scalar floor(t) + (u < t − floor(t)) with u = (h >> 8)·2^−24,
       * in integers: each range gives a base b and a fraction r·2^−32 (r's low 8 bits
       * 0), and the code is b + (u < r·2^−32) ⟺ b + ((h >> 8) < (r >> 8)).
       * Normal range: b is a's exponent and top M bits rebiased, r its 23 − M low bits
       * f at the top (f·2^(M − 23) = r·2^−32); the carry of the increment runs into the
       * exponent as the scalar's mag does.
       * Subnormal range: T = t·2^24 = a·2^(M − emin + 24) < 2^27 is exact; with
       * C = ceil(T), b = C >> 24 and r = C << 8: (h >> 8) < t's fraction·2^24 ⟺
       * (h >> 8) < its ceiling, and where that ceiling is 2^24 (T just below a
       * multiple of it) C carries into b with r = 0, the same code. */
      vi base_n = (vi) ((a - ((uint32_t) (127 - bias) << 23)) >> (23 - M)), c;
      vu frac_n = a << (9 + M), frac;
      vf T = (vf) a * vsplat (ldexpf (1.0f, M - emin + 24));
#ifdef PIQ_VEC_CEIL_I
      c = PIQ_VEC_CEIL_I (T);
#else
      c = __builtin_convertvector (T, vi);                 /* T ≥ 0: floor */
      c -= (vi) (__builtin_convertvector (c, vf) < T);
#endif
      code = fsel_ltu (a, (uint32_t) (127 + emin) << 23, c >> 24, base_n);
      frac = (vu) fsel_ltu (a, (uint32_t) (127 + emin) << 23, (vi) ((vu) c << 8), (vi) frac_n);
#if defined PIQ_VEC_CVTU_EXACT && defined PIQ_VEC_INC_IF_LTU
      /* h's low 8 bits are 0 (vmix32_tail), and unsigned compares are native */
      code = PIQ_VEC_INC_IF_LTU (code, h, frac);
#else
      code -= (vi) ((vi) (h >> 8) < (vi) (frac >> 8));
#endif
    }
  else
    {
      /* the rebias folds into the rounding constant: a ≥ 2^emin keeps it positive */
      vu r = a + (((1u << (22 - M)) - 1) - ((uint32_t) (127 - bias) << 23)) + ((a >> (23 - M)) & 1u);
      cn = (vi) (r >> (23 - M));
      cs = frint ((vf) a * vsplat (ldexpf (1.0f, M - emin)));
      code = fsel_ltu (a, (uint32_t) (127 + emin) << 23, cs, cn);
    }
  vi s = (vi) ((u >> (32 - width)) & (1u << (width - 1))), nan;   /* the sign bit, in place */

  if (ovf == maxc)                         /* saturation: codes are ≥ 0 and monotonic */
    {
#ifdef PIQ_VEC_MIN_I32
      code = PIQ_VEC_MIN_I32 (code, fsplat_i (maxc));
#else
      vi lt = code < maxc;
      code = (code & lt) | (maxc & ~lt);
#endif
    }
  else
    {
      vi over = code > maxc;
      code = (code & ~over) | (ovf & over);
    }
  if (fin)
    return code | s;
  nan = (vi) (a > 0x7f800000u);
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

/* The dequantize bodies' form of piq_minifloat_decode, from codes at the tops of
 * the lanes (the sign at bit 31; bits below a code are ignored): the magnitude's
 * fields moved to binary32's, a, with the exponent rebased (n = a + K): that is
 * the element for e ≥ 1. For e = 0, s = the bits with exponent 1 − bias (a + K + 2^23)
 * less 2^(1 − bias) is m·2^(1 − bias − M) exactly; for e ≥ 1 the same s is
 * 2n − 2^(1 − bias) ≥ n (n ≥ 2^(1 − bias)), and for e = 0 it is below n, so the
 * element is min(n, s). No operand is a binary32 subnormal (multiplying those takes
 * a microcode assist: perf showed MXFP6 twice as slow with a·2^(127 − bias)). The
 * specials are the scalar's (NaN or ±Inf, then the sign). */
VINLINE vf
mf_elem (vu top, int M, int bias, int width, int code)
{
  const uint32_t mf = ((1u << (width - 1)) - 1) << (23 - M);
  const uint32_t k = (uint32_t) (127 - bias) << 23;
  vu a = (top >> (9 + M - width)) & mf;
  vf n = (vf) (a + k), v = vmin (n, (vf) (a + (k + (1u << 23))) - vsplat (piq_pow2f (1 - bias)));

  if (code == PIQ_C_FP8_E4M3)             /* S.1111.111 */
    v = vsel ((vi) (a == mf), vsplat (NAN), v);
  if (code == PIQ_C_FP8_E5M2)             /* S.11111.00 is ±Inf, S.11111.mm NaN */
    {
      v = vsel ((vi) (a == 0x0f800000u), vsplat (INFINITY), v);
      v = vsel ((vi) a > 0x0f800000, vsplat (NAN), v);
    }
  return (vf) ((vu) v | (top & 0x80000000u));
}

/* NF4 by cells of 1/16 over [-1, 1] (fencode, 16 lanes): the number of thresholds
 * below cell k, and the threshold inside it (+Inf if none), as constants built from
 * bnb's thresholds by the preprocessor. */
#define FNF4_EDGE_(k) (-1.0f + (float) (k) / 16)
#define FNF4_BELOW_(t, k) + ((t) < FNF4_EDGE_ (k))
#define FNF4_INSIDE_(t, k) (t) >= FNF4_EDGE_ (k) && (t) < FNF4_EDGE_ ((k) + 1) ? (t) :
#define FNF4_32_(m) m (0), m (1), m (2), m (3), m (4), m (5), m (6), m (7), m (8), m (9), \
  m (10), m (11), m (12), m (13), m (14), m (15), m (16), m (17), m (18), m (19), m (20), \
  m (21), m (22), m (23), m (24), m (25), m (26), m (27), m (28), m (29), m (30), m (31)
#define FNF4_BASE_(k) (0 PIQ_NF4_THRESHOLDS (FNF4_BELOW_, k))
#define FNF4_THR_(k) (PIQ_NF4_THRESHOLDS (FNF4_INSIDE_, k) INFINITY)
#if PIQ_W == 16
static const int32_t fnf4_base[32] = { FNF4_32_ (FNF4_BASE_) };
static const float fnf4_thr[32] = { FNF4_32_ (FNF4_THR_) };
/* the same for the levels 1 … 15 (stochastic: the count of those at or below v);
 * they are ≥ 0.079 apart, so no cell holds two either */
#define FNF4_LBASE_(k) (0 PIQ_NF4_LEVELS_ABOVE_0 (FNF4_BELOW_, k))
#define FNF4_LEVEL_(k) (PIQ_NF4_LEVELS_ABOVE_0 (FNF4_INSIDE_, k) INFINITY)
static const int32_t fnf4_lbase[32] = { FNF4_32_ (FNF4_LBASE_) };
static const float fnf4_level[32] = { FNF4_32_ (FNF4_LEVEL_) };
#endif

/* The cell k (0 … 31) of v by 1/16 over [−1, 1] (NaN and v < −1: 0, v ≥ 1: 31).
 * fin: the block's scale bounds v to [−1, 1], so only the top needs clamping. */
#if PIQ_W == 16
VINLINE vi
fnf4_cell (vf v, int fin)
{
  vf t = (v + vsplat (1.0f)) * vsplat (16.0f);

  if (!fin)
    t = vmax (t, vsplat (0.0f));            /* below −1, and NaN */
  return __builtin_convertvector (vmin (t, vsplat (31.0f)), vi);   /* truncation */
}

/* From the 32-cell tables above: base[k], plus one where cell k's own entry t[k] is
 * below v (le: at or below) */
VINLINE vi
fnf4_count (const int32_t *base, const float *t, vi k, vf v, int le)
{
  vi b0, b1;
  vf t0, t1, tk;

  memcpy (&b0, base, sizeof b0);
  memcpy (&b1, base + 16, sizeof b1);
  memcpy (&t0, t, sizeof t0);
  memcpy (&t1, t + 16, sizeof t1);
  tk = fperm2_f (t0, t1, k);
  if (le)
    return fperm2_i (b0, b1, k) - (vi) (tk <= v);
# ifdef PIQ_VEC_INC_IF_LT
  return PIQ_VEC_INC_IF_LT (fperm2_i (b0, b1, k), tk, v);
# else
  return fperm2_i (b0, b1, k) - (vi) (tk < v);
# endif
}
#endif

/* An integer block's zero point and bounds: lo ≤ x · inv ≤ hi before the zero
 * point is added, qlo ≤ code ≤ qmax after (MX integers are symmetric: −qmax … qmax). */
typedef struct {
  int32_t  zp, qlo, qmax;
  vf       lo, hi;
  uint32_t key;       /* stochastic rounding: K of vhash for the call's indices */
  /* vhash_segment's tables for the indices of hs_p's 2^16-segment (hs_ok: built),
   * so that four vectors' hashes take one scalar multiply (fencode4) */
  int      hs_ok;
  uint32_t hs_p;
  VHashSeg hs;
} FInt;

VINLINE void
fint (const PiqBlockArgs *a, int64_t zp, FInt *q)
{
  q->zp = (int32_t) zp;
  q->qlo = (int32_t) (a->scale_kind == PIQ_SCALE_E8M0 ? -a->qmax : a->qmin);
  q->qmax = (int32_t) a->qmax;
  q->lo = vsplat ((float) (q->qlo - zp));
  q->hi = vsplat ((float) (a->qmax - zp));
  q->key = 0;
  q->hs_ok = 0;
  q->hs_p = 0;
}

/* Builds q's hash tables for the 2^16-segment of index p where they are for
 * another one (st: stochastic rounding; the tables depend on p >> 16 only). */
VINLINE void
fhash_seg (FInt *q, int st, uint32_t p)
{
  if (st && (!q->hs_ok || ((p ^ q->hs_p) >> 16) != 0))
    {
      vhash_segment (&q->hs, q->key, p);
      q->hs_p = p;
      q->hs_ok = 1;
    }
}

/* u = (h >> 8)·2^−24, piq_uniform24 of the hashes h (vhash leaves the low 8 bits
 * cleared on some units: the shift drops them either way) */
VINLINE vf
funiform (vu h)
{
  return __builtin_convertvector ((vi) (h >> 8), vf) * vsplat (0x1p-24f);
}

/* vhash's K for the indices of a call from global index g (index0 + first), or 0
 * where the call's indices cross a multiple of 2^32 (the vector bodies hand it to
 * the scalar driver then) */
VINLINE int
fstoch_key (const PiqBlockArgs *a, uint64_t g, size_t n, uint32_t *key)
{
  if ((g >> 32) != ((g + n) >> 32))
    return 0;
  *key = a->key0 ^ piq_mix32 ((uint32_t) (g >> 32) ^ a->key1);
  return 1;
}

#include "piq-formats-vec-fp6.h"   /* FP6 storage, bnb FP4 (fencode, fdecode, fstore) */

/* One vector of codes from x, its block's inverse scale and (integers) q. fin: every
 * x · inv is finite (the fast blocks of fgroup_params), so NaN needs no code; then a
 * signed integer type (sg) has the symmetric zero point 0, and where the x86 packs
 * narrow four vectors (fencode4), integer codes are bounded there, on bytes, after
 * the rounding: |x · inv| < 2^31, so the bounds commute with it. */
VINLINE vi
fencode_h (vf x, vf inv, const FInt *q, int code, int sat, int fin, int sg, int st, vu h)
{
  vf v = x * inv;

  if (code < 0 && st)
    {
      /* piq_round_u's floor(v) + (u < fraction) on the clamped v: the bounds are
       * integers, so clamping commutes with the rounding (vstoch_r) */
      vi c;
      if (!fin)
        v = (vf) ((vi) v & (v == v));      /* NaN: the zero point */
      v = vmin (vmax (v, q->lo), q->hi);
      c = vstoch_r (v, h);
      return fin && sg ? c : c + fsplat_i (q->zp);
    }
  if (code == PIQ_C_FP4_BNB)
    return fbnb_encode (v, st, h);
  if (code == PIQ_C_NF4 && st)
    {
      /* piq_nf4_encode, stochastic: c = the number of levels 1 … 15 at or below v
       * (binary search), then up with probability (v − lo) / (hi − lo) between
       * levels c and c + 1, the scalar's binary32 operations. v = lo gives 0 there,
       * and so does v ≤ −1 (c = 0, lo = −1); v ≥ 1 is 15, NaN 7. */
      vf t0, t1, lo, hi;
      vi c = fsplat_i (0);
      memcpy (&t0, piq_nf4_values, sizeof t0);
      memcpy (&t1, piq_nf4_values + (PIQ_W == 8 ? 8 : 0), sizeof t1);
# if PIQ_W == 16
      {
        /* by cells, as nearest: the levels below v's cell, plus one if v is at or
         * above the cell's own. Only level 0 lies within the rounding of (v + 1) · 16
         * of a cell's edge (it is one), and v on either side of it finds the right
         * count: v < 0 rounds into cell 15 or to the edge of 16, where level 0 is
         * not ≤ v; v ≥ 0 is in cell 16 or above. */
        c = fnf4_count (fnf4_lbase, fnf4_level, fnf4_cell (v, fin), v, 1);
      }
# else
#  pragma GCC unroll 4
      for (int step = 8; step > 0; step /= 2)   /* unrolled: GCC kept the loop */
        c += (vi) (fperm2_f (t0, t1, c + step) <= v) & step;
# endif
# if PIQ_W == 16
      lo = fperm1_f (t0, c);
      hi = fperm1_f (t0, c + 1);
# else
      lo = fperm2_f (t0, t1, c);
      hi = fperm2_f (t0, t1, c + 1);
# endif
      (void) t1;
      c -= (vi) (funiform (h) < (v - lo) / (hi - lo));
      {
        vi top = (vi) (v >= vsplat (1.0f));
        c = (c & ~top) | (fsplat_i (15) & top);
      }
      return fin ? c : (c & (v == v)) | (fsplat_i (7) & (v != v));
    }
  if (code < 0)
    {
      vi c;
      if (!fin)
        v = (vf) ((vi) v & (v == v));      /* NaN: the zero point */
#ifdef PIQ_VEC_PACKS_DW
      if (!fin)
#endif
        v = vmin (vmax (v, q->lo), q->hi);
      c = frint (v);
      return fin && sg ? c : c + fsplat_i (q->zp);
    }
  if (code == PIQ_C_NF4)
    {
      vi c = fsplat_i (0);
#if PIQ_W == 16
      /* cells of 1/16 over [-1, 1]: no cell holds two thresholds (they are ≥ 0.08
       * apart) and none lies within 0.0016 of a cell's edge, so the rounding of
       * (v + 1) · 16 cannot put v on the wrong side of a threshold. The code is the
       * number of thresholds below the cell plus one if v is above the cell's. */
      c = fnf4_count (fnf4_base, fnf4_thr, fnf4_cell (v, fin), v, 0);
#else
      /* 8 lanes: the number of thresholds below v (ties go to the lower code), found
       * by a binary search over the sorted thresholds: 4 lookups, not 15 compares */
      static const float thr[16] = { PIQ_NF4_THRESHOLDS (PIQ_LIST_ITEM, 0) INFINITY };
      vf t0, t1;
      memcpy (&t0, thr, sizeof t0);
      memcpy (&t1, thr + (PIQ_W == 8 ? 8 : 0), sizeof t1);
      for (int step = 8; step > 0; step /= 2)
        {
          vi at = c + (step - 1);
# if PIQ_W == 16
          vf t = fperm1_f (t0, at);
# else
          vf t = fperm2_f (t0, t1, at);
# endif
          c += (vi) (v > t) & step;
        }
      (void) t1;
#endif
      return fin ? c : (c & (v == v)) | (fsplat_i (7) & (v != v));
    }
  {
    const PiqMinifloat *f = &piq_minifloats[code];
    int ovf = sat || !f->nan_code ? f->max_code : f->inf_code ? f->inf_code : f->nan_code;
    return mf_encode (v, f->mbits, f->bias, f->max_code, ovf, f->nan_code, 1 + f->ebits + f->mbits,
                      fin, st, h);
  }
}

/* fencode with the hashes of indices p … p + PIQ_W − 1 (st) */
VINLINE vi
fencode (vf x, vf inv, const FInt *q, int code, int sat, int fin, int sg, int st, uint32_t p)
{
  return fencode_h (x, inv, q, code, sat, fin, sg, st,
                    st ? vhash (q->key, p) : (vu) fsplat_i (0));
}

VINLINE vf
fdecode (const PiqBlockP *p, vi c, int code)
{
  vf v;

  if (code < 0)
    v = __builtin_convertvector (c - fsplat_i ((int32_t) p->zp), vf);
  else if (code == PIQ_C_FP4_BNB)
    v = fbnb_decode (c);
  else if (code == PIQ_C_NF4)
    {
      vf t0, t1;
      memcpy (&t0, piq_nf4_values, sizeof t0);
#if PIQ_W == 16
      (void) t1;
      v = fperm1_f (t0, c);
#elif PIQ_W == 8
      memcpy (&t1, piq_nf4_values + 8, sizeof t1);
      v = fperm2_f (t0, t1, c);
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
  if (p->nan_scale)
    return vsplat (NAN);
  if (code >= 0 && p->scale != p->scale)   /* piq_nan_scale_product */
    return vsplat (piq_nan_scale_product (p->scale));
  return v * vsplat (p->scale);
}

/* Codes as bytes in the low PIQ_W (8 bits) or PIQ_W/2 (4 bits) bytes. */
VINLINE void
fstore (uint8_t *dst, vi c, int bits, int high_first)
{
  vb16 b;

  if (bits == 6)
    {
      f6_store (dst, c);
      return;
    }
  b = codes_to_bytes (c);
  if (bits == 4 && high_first)
    {
      vh8 w = (vh8) b;
      vb8 q = __builtin_convertvector (((w << 4) & 0xf0) | ((w >> 8) & 0x0f), vb8);
      memcpy (dst, &q, PIQ_W / 2);
      return;
    }
  pack_store_w (dst, b, bits, 0);
}

/* Four vectors of codes, one after another (units without the x86 packs). */
VINLINE void
fstore4_each (uint8_t *dst, vi c0, vi c1, vi c2, vi c3, int bits, int hf)
{
  const size_t step = PIQ_W * bits / 8;

  fstore (dst, c0, bits, hf);
  fstore (dst + step, c1, bits, hf);
  fstore (dst + 2 * step, c2, bits, hf);
  fstore (dst + 3 * step, c3, bits, hf);
}

VINLINE vi
fload_codes (const uint8_t *src, int bits, int is_signed, int high_first)
{
  vb16 b;

  if (bits == 6)
    return f6_load (src);
  b = bytes16 (src, PIQ_W * bits / 8);
  if (bits == 4)
    {
      if (high_first)
        b = (b >> 4) | (b << 4);
      b = PIQ_SHUF2 (b & 0x0f, b >> 4, vb16, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      if (is_signed)
        b = (b ^ 8) - 8;
    }
  return is_signed ? PIQ_VEC_S8_TO_I32 (b) : PIQ_VEC_U8_TO_I32 (b);
}

/* PIQ_W minifloat codes at src, each at the top of its lane (for mf_elem) */
VINLINE vu
fload_top (const uint8_t *src, int bits, int high_first)
{
  if (bits == 6)
    return f6_load_top (src);
  if (bits == 8)
    return (vu) PIQ_VEC_U8_TO_I32 (bytes16 (src, PIQ_W)) << 24;
#if PIQ_W == 8
  {
    /* the four bytes in every lane, each lane's nibble moved to the top by a shift
     * of its own (AVX2's per-lane shift), in place of splitting and widening bytes */
    const vu lo = { 28, 24, 20, 16, 12, 8, 4, 0 }, hi = { 24, 28, 16, 20, 8, 12, 0, 4 };
    uint32_t x;
    memcpy (&x, src, 4);
    return ((vu) { 0 } + x) << (high_first ? hi : lo);
  }
#else
  return (vu) fload_codes (src, 4, 0, high_first) << 28;
#endif
}

/* ---- quantize ----
 * The format, the code width, the nibble order, saturation and signedness are
 * compile-time constants of each specialization (FQ_LIST, FD_LIST below). */

/* m ? a : b, lane-wise, for integer vectors of any lane width (m: a comparison) */
#define FSEL_(m, a, b) ((__typeof__ (a)) (((m) & (__typeof__ (m)) (a)) | (~(m) & (__typeof__ (m)) (b))))

/* Encode 4·PIQ_W elements from x, vector k with inverse scale ik, and store their
 * codes (4·PIQ_W·bits/8 bytes) in element order at dst; stream: dst is aligned to
 * that size and the store goes past the caches. */
VINLINE void
fencode4 (const float *x, vf i0, vf i1, vf i2, vf i3, const FInt *q, uint8_t *dst, int code,
          int bits, int hf, int sat, int fin, int sg, int stream, int st, uint32_t p)
{
  vu h0, h1, h2, h3;
  vi c0, c1, c2, c3;

  if (st && q->hs_ok && p % (4 * PIQ_W) == 0 && ((p ^ q->hs_p) >> 16) == 0)
    {
      /* vhash_segment's form: one scalar multiply for the four vectors, in place of
       * two vector multiplies per vector (q's tables are p's segment's) */
      vu base = (vu) fsplat_i (0) + ((p ^ q->hs.kx) * MIX_C1);
      h0 = vmix32_tail (base + q->hs.tc[0]);
      h1 = vmix32_tail (base + q->hs.tc[1]);
      h2 = vmix32_tail (base + q->hs.tc[2]);
      h3 = vmix32_tail (base + q->hs.tc[3]);
    }
  else if (st)
    {
      h0 = vhash (q->key, p);
      h1 = vhash (q->key, p + PIQ_W);
      h2 = vhash (q->key, p + 2 * PIQ_W);
      h3 = vhash (q->key, p + 3 * PIQ_W);
    }
  else
    h0 = h1 = h2 = h3 = (vu) fsplat_i (0);
  c0 = fencode_h (fload (x), i0, q, code, sat, fin, sg, st, h0);
  c1 = fencode_h (fload (x + PIQ_W), i1, q, code, sat, fin, sg, st, h1);
  c2 = fencode_h (fload (x + 2 * PIQ_W), i2, q, code, sat, fin, sg, st, h2);
  c3 = fencode_h (fload (x + 3 * PIQ_W), i3, q, code, sat, fin, sg, st, h3);
  if (bits == 6)
    {
      f6_store4 (dst, c0, c1, c2, c3, stream);
      return;
    }
#ifdef PIQ_VEC_PACKS_DW
  /* two saturating packs, then the integer kernels' nibble merge and permutation
   * back into element order, in place of four narrowing stores */
  vw w0 = (vw) PIQ_VEC_PACKS_DW (c0, c1), w1 = (vw) PIQ_VEC_PACKS_DW (c2, c3);
  vbw b = bits == 8 && !sg ? (vbw) PIQ_VEC_PACKUS_WB (w0, w1) : (vbw) PIQ_VEC_PACKS_WB (w0, w1);

  if (code < 0 && fin)   /* the bounds fencode left out: saturation kept every code in a byte */
    {
      typedef int8_t vsbw __attribute__ ((vector_size (PIQ_W * 4)));
      if (bits == 8 && !sg)
        {
          vbw lo = (vbw) { 0 } + (uint8_t) q->qlo, hi = (vbw) { 0 } + (uint8_t) q->qmax;
          b = FSEL_ (b < lo, lo, b);
          b = FSEL_ (b > hi, hi, b);
        }
      else
        {
          vsbw sb = (vsbw) b, lo = (vsbw) { 0 } + (int8_t) q->qlo, hi = (vsbw) { 0 } + (int8_t) q->qmax;
          sb = FSEL_ (sb < lo, lo, sb);
          sb = FSEL_ (sb > hi, hi, sb);
          b = (vbw) sb;
        }
    }
  store_codes4 (dst, b, bits, sg, 0, hf, stream);
#else
  (void) stream;
  fstore4_each (dst, c0, c1, c2, c3, bits, hf);
#endif
}

/* Prefetch the four vectors at p: in the block formats x is read first by the statistics pass, which
 * without prefetching waited for each group's loads out of cache (MXFP8 0.53 ns
 * per element against 0.20). */
VINLINE void
fprefetch4 (const float *p)
{
  for (int k = 0; k < 4; k++)
    __builtin_prefetch (p + k * PIQ_W);
}

/* The codes of n elements (a multiple of PIQ_W) that share the parameters p, to dst;
 * pf: x is not in the caches yet (per tensor), prefetch it. st: stochastic rounding,
 * with key and ix, the low 32 bits of x[0]'s index. */
VINLINE void
fquantize_span (const PiqBlockArgs *a, const PiqBlockP *p, const float *x, size_t n,
                uint8_t *dst, int code, int bits, int hf, int sat, int sg, int stream, int pf,
                int st, uint32_t key, uint32_t ix)
{
  const size_t step = PIQ_W * bits / 8;
  vf inv = vsplat (p->inv);
  FInt q;
  size_t i = 0;

  if (p->nan_scale)                        /* MX block with NaN or Inf: codes 0 */
    {
      memset (dst, 0, n * (size_t) bits / 8);
      return;
    }
  fint (a, p->zp, &q);
  q.key = key;
  for (; i + 4 * PIQ_W <= n; i += 4 * PIQ_W, dst += 4 * step)
    {
      if (pf)
        fprefetch4 (x + i + PIQ_PREFETCH);
      if (n >= 16 * PIQ_W)                 /* long spans (per tensor): the tables pay */
        fhash_seg (&q, st, ix + (uint32_t) i);
      fencode4 (x + i, inv, inv, inv, inv, &q, dst, code, bits, hf, sat, 0, sg, stream, st,
                ix + (uint32_t) i);
    }
  for (; i < n; i += PIQ_W, dst += step)
    fstore (dst, fencode (fload (x + i), inv, &q, code, sat, 0, sg, st, ix + (uint32_t) i), bits, hf);
}

VINLINE uint32_t
fhor (vu v)
{
#if PIQ_W == 16
  v |= PIQ_SHUF1 (v, vu, FSWAP_ (8));
#endif
#if PIQ_W >= 8
  v |= PIQ_SHUF1 (v, vu, FSWAP_ (4));
#endif
  v |= PIQ_SHUF1 (v, vu, FSWAP_ (2));
  v |= PIQ_SHUF1 (v, vu, FSWAP_ (1));
  return v[0];
}

/* The statistics of one block of a multiple of PIQ_W elements: max |x| as bits
 * (ordered like the magnitudes; NaN and Inf on top), min and max for affine integers;
 * a block with NaN or Inf takes the scalar statistics. */
VINLINE void
fstats (const float *x, size_t block, int code, PiqBlockStats *st)
{
  const float inf = INFINITY;
  vf vlo = vsplat (inf), vhi = vsplat (-inf);
  vu am = (vu) fsplat_i (0);
  uint32_t amax_bits;

  *st = (PiqBlockStats) PIQ_BLOCK_STATS_INIT;
  for (size_t i = 0; i < block; i += PIQ_W)
    {
      vf v = fload (x + i);
      __builtin_prefetch (x + i + PIQ_PREFETCH);   /* the first pass over x */
      am = fmaxabs (am, v);
      if (code < 0)
        {
          vlo = vmin (vlo, v);
          vhi = vmax (vhi, v);
        }
    }
  amax_bits = fhmaxu (am);
  if (amax_bits < 0x7f800000u)
    {
      st->amax = piq_bits_f32 (amax_bits);
      if (code < 0)
        {
          st->lo = fhmin (vlo);
          st->hi = fhmax (vhi);
        }
      return;
    }
  for (size_t i = 0; i < block; i++)     /* NaN or Inf: the scalar statistics */
    piq_block_stats_add (st, NULL, i, piq_ld_f32 (x, i));
}

/* Blocks go in groups of PIQ_W: first every block's statistics and parameters, then
 * every block's codes, so that the blocks' dependency chains (reduction, scale,
 * encoding) overlap instead of running one after the other. */
#define FGROUP PIQ_W

/* One level of a transposing max: lanes [c·2s, c·2s + 2s) of a source hold one
 * block's partial maxima; the result holds each block's in s lanes, blocks in
 * order, A's before B's. After log2 PIQ_W levels lane j holds block j's maximum. */
#define FT_LO_(l, s) ((((l) / (s)) < PIQ_W / (2 * (s)) ? 0 : PIQ_W) + \
                      ((l) / (s) % (PIQ_W / (2 * (s)))) * 2 * (s) + (l) % (s))
#if PIQ_W == 16
# define FT_MASK_(s, o) FT_LO_ (0, s) + o, FT_LO_ (1, s) + o, FT_LO_ (2, s) + o, FT_LO_ (3, s) + o, \
    FT_LO_ (4, s) + o, FT_LO_ (5, s) + o, FT_LO_ (6, s) + o, FT_LO_ (7, s) + o, FT_LO_ (8, s) + o,       \
    FT_LO_ (9, s) + o, FT_LO_ (10, s) + o, FT_LO_ (11, s) + o, FT_LO_ (12, s) + o, FT_LO_ (13, s) + o,   \
    FT_LO_ (14, s) + o, FT_LO_ (15, s) + o
#elif PIQ_W == 8
# define FT_MASK_(s, o) FT_LO_ (0, s) + o, FT_LO_ (1, s) + o, FT_LO_ (2, s) + o, FT_LO_ (3, s) + o, \
    FT_LO_ (4, s) + o, FT_LO_ (5, s) + o, FT_LO_ (6, s) + o, FT_LO_ (7, s) + o
#else
# define FT_MASK_(s, o) FT_LO_ (0, s) + o, FT_LO_ (1, s) + o, FT_LO_ (2, s) + o, FT_LO_ (3, s) + o
#endif
#define FT_LEVEL_(m, n, s) \
  _Pragma ("GCC unroll 8") \
  for (int j = 0; j < (n); j++) \
    m[j] = fmaxu (PIQ_SHUF2 (m[2 * j], m[2 * j + 1], vu, FT_MASK_ (s, 0)), \
                  PIQ_SHUF2 (m[2 * j], m[2 * j + 1], vu, FT_MASK_ (s, s)));
/* The whole tree: PIQ_W vectors of lanes to one vector of PIQ_W lane maxima
 * (level s leaves s vectors). */
#if PIQ_W == 16
# define FT_TREE_(m) FT_LEVEL_ (m, 8, 8) FT_LEVEL_ (m, 4, 4) FT_LEVEL_ (m, 2, 2) FT_LEVEL_ (m, 1, 1)
#elif PIQ_W == 8
# define FT_TREE_(m) FT_LEVEL_ (m, 4, 4) FT_LEVEL_ (m, 2, 2) FT_LEVEL_ (m, 1, 1)
#else
# define FT_TREE_(m) FT_LEVEL_ (m, 2, 2) FT_LEVEL_ (m, 1, 1)
#endif

/* What a call's fast blocks share (fquantize computes it once). */
typedef struct {
  int     group;      /* the scale rule is one fgroup_params derives in lanes */
  float   half;       /* symmetric integers with f32 scales: range / 2 in binary32 */
  FInt    q;          /* integers: the symmetric zero point (0 for MX integers), bounds */
} FConst;

/* Whether any lane of a comparison's result is set. */
VINLINE int
fany (vi m)
{
#ifdef PIQ_VEC_ANY
  return PIQ_VEC_ANY (m);
#else
  return fhor ((vu) m) != 0;
#endif
}

/* m[j] = max |x| of block j (K vectors) of a group, as bits */
VINLINE void
fgroup_amax (const float *x, size_t K, vu *m)
{
#pragma GCC unroll 16
  for (int j = 0; j < PIQ_W; j++)
    {
      vu am = (vu) fsplat_i (0);
#pragma GCC unroll 4
      for (size_t k = 0; k < K; k++)
        am = fmaxabs (am, fload (x + (j * K + k) * PIQ_W));
      m[j] = am;
    }
}

/* The parameters of PIQ_W whole blocks at once, for the rules whose scale is a
 * function of max |x| alone and cheap in lanes: the E8M0 floor rule (MX elements
 * and MX integers), absmax-based f32 scales of the minifloats and NF4, and
 * symmetric integers with f32 scales. Each lane computes exactly what
 * piq_block_params computes for its block. Returns
 * - 0 for the other rules (nothing done);
 * - 2 when every block is finite and so is its inverse scale (the common case):
 *   the scales (and zero points, if asked for) are stored, inv_out holds the
 *   inverse scales, and every x · inv is finite, so encoding needs no NaN rule;
 * - 1 otherwise: p holds every block's parameters, those with NaN or Inf from the
 *   scalar route. */
VINLINE int
fgroup_params (const PiqBlockArgs *a, const FConst *c, const float *x, uint64_t b_first,
               uint8_t *scales, int32_t *zero_points, PiqBlockP *p, float *inv_out, int code)
{
  const size_t K = a->block / PIQ_W;
  int e8m0 = a->scale_kind == PIQ_SCALE_E8M0;
  vu m[PIQ_W];
  vi e = fsplat_i (0), big;
  vf amax, scale, inv;
  int32_t ebuf[PIQ_W], badbuf[PIQ_W];
  float sbuf[PIQ_W], ibuf[PIQ_W];

  if (!c->group)
    return 0;
  /* straight-line code for the usual block sizes: a loop of two or four vectors per
   * block spent more on its own overhead than on the maxima */
  switch (K)
    {
    case 2:  fgroup_amax (x, 2, m); break;
    case 4:  fgroup_amax (x, 4, m); break;
    default: fgroup_amax (x, K, m); break;
    }
  FT_TREE_ (m)
  big = (vi) (m[0] >= 0x7f800000u);        /* NaN or Inf in the block */
  amax = (vf) m[0];

  if (e8m0)
    {
      int emax = code < 0 ? 0 : piq_minifloats[code].emax;
      int fb = code < 0 ? piq_mx_int_frac_bits (a) : 0;
      vi t;
      e = (vi) (m[0] >> 23) - (127 + emax);
      e = (e & (e > -127)) | (fsplat_i (-127) & (e <= -127));
      e = (e & (e < 127)) | (fsplat_i (127) & (e >= 127));
      e = (e + 127) & (vi) (m[0] != 0u);
      e = (e & ~big) | (fsplat_i (255) & big);
      /* 1 / 2^(E − 127 − fb) = 2^k from bits: normal for k ≥ −126, 2^−127 at
       * E = 254 (k = −127), +Inf beyond 127 (MX integers only), 0 for NaN scales */
      t = fsplat_i (127 + fb) - e;
      inv = (vf) ((t + 127) << 23);
      inv = vsel (t == -127, (vf) fsplat_i (0x00400000), inv);
      inv = vsel (t > 127, vsplat (INFINITY), inv);
      inv = vsel (e == 255, vsplat (0.0f), inv);
      scale = vsplat (0.0f);               /* encoding needs inv only */
    }
  else if (code < 0)
    {
      /* piq_affine_from_range, symmetric: max(a / (range / 2), eps), binary32 */
      scale = amax / vsplat (c->half);
      scale = vsel (scale > vsplat (0x1p-23f), scale, vsplat (0x1p-23f));
      inv = vsplat (1.0f) / scale;
    }
  else if (code == PIQ_C_NF4 || code == PIQ_C_FP4_BNB)
    {
      scale = amax;
      inv = vsel (amax > vsplat (0.0f), vsplat (1.0f) / amax, vsplat (0.0f));
    }
  else
    {
      scale = vsel (amax > vsplat (0.0f), amax / vsplat (piq_minifloats[code].max), vsplat (1.0f));
      inv = vsel (scale > vsplat (0.0f), vsplat (1.0f) / scale, vsplat (0.0f));
    }

  if (!fany (big | (vi) ((vu) inv >= 0x7f800000u)))
    {
      if (e8m0)
        {
          vb eb = __builtin_convertvector (e, vb);
          memcpy (scales + b_first, &eb, sizeof eb);
        }
      else
        {
          memcpy (scales + 4 * b_first, &scale, sizeof scale);
          if (code < 0 && zero_points != NULL)   /* as piq_block_params: given a buffer, fill it */
            for (int j = 0; j < PIQ_W; j++)
              piq_st_i32 (zero_points, b_first + j, c->q.zp);
        }
      memcpy (inv_out, &inv, sizeof inv);
      return 2;
    }

  memcpy (ebuf, &e, sizeof ebuf);
  memcpy (sbuf, &scale, sizeof sbuf);
  memcpy (ibuf, &inv, sizeof ibuf);
  memcpy (badbuf, &big, sizeof badbuf);
  for (int j = 0; j < PIQ_W; j++)
    {
      if (e8m0)
        scales[b_first + j] = (uint8_t) ebuf[j];
      else if (badbuf[j])
        {
          PiqBlockStats st;
          fstats (x + j * a->block, a->block, code, &st);
          piq_block_params (a, &st, a->block, b_first + j, scales, zero_points, &p[j]);
          continue;
        }
      else
        memcpy (scales + 4 * (b_first + j), &sbuf[j], 4);
      p[j].shift = 0;
      p[j].nan_scale = e8m0 && ebuf[j] == 255;
      p[j].scale = sbuf[j];
      p[j].inv = ibuf[j];
      p[j].zp = c->q.zp;
      if (code < 0 && !e8m0 && zero_points != NULL)
        piq_st_i32 (zero_points, b_first + j, (int32_t) p[j].zp);
    }
  return 1;
}

/* The codes of PIQ_W blocks for which fgroup_params returned 2, four vectors at a
 * time, each vector with its block's inverse scale. The loads of the statistics
 * pass, one group ahead (fquantize), are prefetched from here: spread over the
 * encoding they kept the whole group in flight; issued with those loads (64 in a
 * row for blocks of 64), they were slower out of cache than no reordering at all. */
VINLINE void
fgroup_encode (const PiqBlockArgs *a, FInt *q, const float *x, const float *inv,
                uint8_t *dst, int code, int bits, int hf, int sat, int sg, int stream, int st,
                uint32_t ix)
{
  const size_t K = a->block / PIQ_W, step = PIQ_W * bits / 8;   /* vectors per block */
  const size_t ahead = FGROUP * a->block + PIQ_PREFETCH;         /* elements */

  if (K % 4 == 0)
    for (int j = 0; j < PIQ_W; j++)
      {
        vf v = vsplat (inv[j]);
        for (size_t k = 0; k < K; k += 4, x += 4 * PIQ_W, dst += 4 * step, ix += 4 * PIQ_W)
          {
            fprefetch4 (x + ahead);
            fhash_seg (q, st, ix);
            fencode4 (x, v, v, v, v, q, dst, code, bits, hf, sat, 1, sg, stream, st, ix);
          }
      }
  else if (K == 2)
    for (int j = 0; j < PIQ_W; j += 2, x += 4 * PIQ_W, dst += 4 * step, ix += 4 * PIQ_W)
      {
        vf v0 = vsplat (inv[j]), v1 = vsplat (inv[j + 1]);
        fprefetch4 (x + ahead);
        fhash_seg (q, st, ix);
        fencode4 (x, v0, v0, v1, v1, q, dst, code, bits, hf, sat, 1, sg, stream, st, ix);
      }
  else   /* one vector at a time: the integers' bounds are in fencode then (fin 0) */
    for (int j = 0; j < PIQ_W; j++)
      {
        vf v = vsplat (inv[j]);
        for (size_t k = 0; k < K; k++, x += PIQ_W, dst += step, ix += PIQ_W)
          {
            __builtin_prefetch (x + ahead);
            fstore (dst, fencode (fload (x), v, q, code, sat, code >= 0, sg, st, ix), bits, hf);
          }
      }
}


/* Blocks one at a time: g blocks from element b0 (block index b), with parameters p
 * from fgroup_params (mode 1) or derived here (mode 0). */
VINLINE void
fquantize_blocks (const PiqBlockArgs *a, const float *x, size_t b0, size_t g, uint64_t b,
                  uint8_t *scales, int32_t *zero_points, PiqBlockP *p, int mode, uint8_t *dst,
                  int code, int bits, int hf, int sat, int sg, int st, uint32_t key, uint32_t ix)
{
  for (size_t j = 0; j < g; j++)
    {
      size_t at = b0 + j * a->block;
      if (mode == 0)
        {
          PiqBlockStats bst;
          fstats (x + at, a->block, code, &bst);
          piq_block_params (a, &bst, a->block, b + j, scales, zero_points, &p[j]);
        }
      fquantize_span (a, &p[j], x + at, a->block, dst + at * bits / 8, code, bits, hf, sat, sg,
                      0, 0, st, key, ix + (uint32_t) at);
    }
}

VINLINE void
fquantize (const PiqBlockArgs *a, const float *x, uint64_t first, size_t n, uint8_t *codes,
           uint8_t *scales, int32_t *zero_points, int code, int bits, int hf, int sat, int sg,
           int st)
{
  uint8_t *dst = codes + first * (uint64_t) bits / 8;
  /* whole groups keep four vectors' codes aligned to their size (6-bit codes: to
   * the size of f6_store4's stores) */
  int stream = a->stream && (uintptr_t) dst % (bits == 6 ? F6_STREAM_ALIGN : 4 * PIQ_W * bits / 8) == 0;
  int e8m0 = a->scale_kind == PIQ_SCALE_E8M0;
  const uint64_t b_first = first / a->block;
  size_t b0 = 0;
  PiqBlockP p[2][FGROUP];
  float inv[2][FGROUP];
  int mode[2] = { 0, 0 };
  FConst k;
  /* stochastic rounding: element i of x has index index0 + first + i, whose low 32
   * bits are ix + i (the high ones, in key, are the same throughout the call) */
  const uint32_t ix = (uint32_t) (a->index0 + first);
  uint32_t key = 0;

  if (st && !fstoch_key (a, a->index0 + first, n, &key))
    {
      piq_block_quantize (a, PIQ_F_F32, x, first, n, codes, scales, zero_points);
      return;
    }

  k.group = e8m0 ? a->e8m0_rule == PIQ_E8M0_FLOOR
                 : a->scale_kind == PIQ_SCALE_F32 && (code >= 0 || a->rule == PIQ_BRULE_ABS_MAX);
  k.half = (float) ((double) (float) (double) ((__int128) a->qmax - a->qmin) / 2);
  fint (a, code < 0 && !e8m0 ? piq_block_symmetric_zp (a) : 0, &k.q);
  k.q.key = key;

  if (a->fixed)
    {
      b0 = n - n % PIQ_W;
      piq_block_params_fixed (a, &p[0][0]);
      fquantize_span (a, &p[0][0], x, b0, dst, code, bits, hf, sat, sg, stream, 1, st, key, ix);
    }
  else
    {
      /* Group g + 1's parameters are derived before group g is encoded: the
       * reduction, transposition and scale rule are one long dependency chain per
       * group, which then overlaps with the previous group's codes instead of
       * stalling between them. */
      const size_t gsize = FGROUP * a->block, n_groups = n / gsize;

      for (size_t g = 0; g <= n_groups; g++)
        {
          int cur = g & 1, prev = !cur;
          size_t e = (g - 1) * gsize;     /* group g − 1's first element */
          if (g < n_groups)
            mode[cur] = fgroup_params (a, &k, x + g * gsize, b_first + g * FGROUP, scales,
                                       zero_points, p[cur], inv[cur], code);
          if (g == 0)
            continue;
          if (mode[prev] == 2)
            fgroup_encode (a, &k.q, x + e, inv[prev], dst + e * bits / 8, code, bits, hf, sat,
                           sg, stream, st, ix + (uint32_t) e);
          else
            fquantize_blocks (a, x, e, FGROUP, b_first + (g - 1) * FGROUP, scales, zero_points,
                              p[prev], mode[prev], dst, code, bits, hf, sat, sg, st, key, ix);
        }
      /* the whole blocks after the last group, one at a time */
      b0 = n_groups * gsize;
      {
        size_t rest = (n - b0) / a->block;
        fquantize_blocks (a, x, b0, rest, b_first + n_groups * FGROUP, scales, zero_points, p[0],
                          0, dst, code, bits, hf, sat, sg, st, key, ix);
        b0 += rest * a->block;
      }
    }
  stream_fence (stream);
  if (b0 < n)   /* the ragged last block, or the per-tensor tail */
    piq_block_quantize (a, PIQ_F_F32, x + b0, first + b0, n - b0, codes, scales, zero_points);
}

/* ---- dequantize ---- */

/* ADD: o + v, except that a NaN in o stays (quieted), as store_y in piq-formats.c */
VINLINE vf
fadd_keep (vf o, vf v)
{
  return vsel (o == o, o + v, o + o);
}

/* One decoded vector into y: added to what y holds (ADD), or stored, past the
 * caches where stream (SET to vector-aligned y); add and stream are constants in
 * every caller. */
VINLINE void
fput (float *y, vf v, int add, int stream)
{
  if (add)
    v = fadd_keep (fload (y), v);
#ifdef PIQ_VEC_STREAM
  if (stream)
    PIQ_VEC_STREAM (y, v);
  else
#endif
    memcpy (y, &v, sizeof v);
  (void) stream;
}

/* The minifloats (FP8, FP6, FP4 E2M1) in one block of step elements with a
 * non-NaN scale: the element (mf_elem) times the scale, as the scalar's. */
VINLINE void
mf_dequant_span (const uint8_t *src, size_t step, float scale, float *y, int add, int stream,
                 int code, int bits, int hf)
{
  const PiqMinifloat *f = &piq_minifloats[code];

  for (size_t i = 0; i < step; i += PIQ_W, src += PIQ_W * bits / 8)
    {
      vf v = mf_elem (fload_top (src, bits, hf), f->mbits, f->bias, 1 + f->ebits + f->mbits, code);
      fput (y + i, v * vsplat (scale), add, stream);
    }
}

/* add and stream (SET to vector-aligned y, past the caches) are constants here */
VINLINE void
fdequantize_run (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                 const int32_t *zero_points, uint64_t first, size_t n, float *y, int add,
                 int stream, int code, int bits, int hf, int is_signed)
{
  size_t step = a->fixed ? n - n % PIQ_W : a->block, b0 = 0;

  for (; step > 0 && b0 + step <= n; b0 += step)
    {
      PiqBlockP p;
      const uint8_t *src = codes + (first + b0) * (uint64_t) bits / 8;

      piq_block_load_params (a, scales, zero_points, (first + b0) / a->block, &p);
      /* fdecode subtracts the zero point in int32 lanes: a caller's zero point
       * near ±2^31 would wrap there, so such a block takes the scalar code,
       * whose difference is exact */
      if (code < 0 && (p.zp > (1 << 30) || p.zp < -(1 << 30)))
        {
          piq_block_dequantize (a, codes, scales, zero_points, first + b0, step, PIQ_F_F32,
                                y + b0, add);
          continue;
        }
      if (code >= 0 && code < PIQ_N_CODE && piq_minifloats[code].ebits != 0 && !p.nan_scale &&
          p.scale == p.scale)
        {
          mf_dequant_span (src, step, p.scale, y + b0, add, stream, code, bits, hf);
          continue;
        }
      for (size_t i = 0; i < step; i += PIQ_W, src += PIQ_W * bits / 8)
        {
          vf v = fdecode (&p, fload_codes (src, bits, is_signed, hf), code);
          fput (y + b0 + i, v, add, stream);
        }
    }
  stream_fence (stream);
  if (b0 < n)
    piq_block_dequantize (a, codes, scales, zero_points, first + b0, n - b0, PIQ_F_F32, y + b0,
                          add);
}

VINLINE void
fdequantize (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
             const int32_t *zero_points, uint64_t first, size_t n, float *y, int add, int code,
             int bits, int hf, int is_signed)
{
#ifdef PIQ_VEC_STREAM
  if (!add && a->stream && (uintptr_t) y % sizeof (vf) == 0)
    fdequantize_run (a, codes, scales, zero_points, first, n, y, 0, 1, code, bits, hf, is_signed);
  else
#endif
  if (add)
    fdequantize_run (a, codes, scales, zero_points, first, n, y, 1, 0, code, bits, hf, is_signed);
  else
    fdequantize_run (a, codes, scales, zero_points, first, n, y, 0, 0, code, bits, hf, is_signed);
}

/* ---- ggml Q8_0 and Q4_0 (piq-formats.c: ggml_quantize_block, ggml_decode) ----
 * Blocks of 32 elements, each an f16 scale d then the codes: Q8_0 32 int8,
 * Q4_0 16 bytes with element j in the low nibble of byte j and element j + 16 in
 * the high one, biased by 8. Quantize takes PIQ_W blocks at a time: their max |x|
 * by the transposing reduction of fgroup_params, d and 1/d in lanes, then the
 * codes. Every float operation is the scalar codec's: d = amax / 127 (Q8_0) or
 * max / −8 (Q4_0), id = d ≠ 0 ? 1 / d : 0 from the unrounded d, the codes from
 * x · id, and the stored d rounded to f16 as piq_f32_to_f16. */

#define GQK 32                             /* elements per block */
#define GV (GQK / PIQ_W)                   /* vectors per block */

VINLINE size_t
gblock_bytes (int code)
{
  return code == PIQ_C_Q8_0 ? 2 + GQK : 2 + GQK / 2;
}

/* |x| as bits, NaN and ±Inf as 0: the scalar max |x| skips them. */
VINLINE vu
gabs_finite (vf v)
{
  vu a = (vu) v & 0x7fffffffu;
  return (vu) fsel_ltu (a, 0x7f800000u, (vi) a, fsplat_i (0));
}

/* piq_f32_to_f16 of lanes that are not NaN (d never is), as 16-bit values in
 * 32-bit lanes: F16C's conversion where the unit has it (the same bits), else the
 * scalar steps: ≥ 65520 to Inf, below 2^−14 the subnormal code a · 2^24 rounded
 * to even, otherwise the rebias with the 13 dropped bits rounded to even. */
VINLINE vu
gf16_bits (vf v)
{
#ifdef PIQ_VEC_F16_BITS
  return __builtin_convertvector (PIQ_VEC_F16_BITS (v), vu);
#else
  vu u = (vu) v, a = u & 0x7fffffffu, r = a - 0x38000000u;
  vi normal = (vi) ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
  vi sub = frint ((vf) a * vsplat (0x1p24f));
  vi h = fsel_ltu (a, 0x38800000u, sub, normal);
  h = fsel_ltu (a, 0x477ff000u, h, fsplat_i (0x7c00));
  return ((u >> 16) & 0x8000u) | (vu) h;
#endif
}

/* One vector of codes from v = x · id. Q8_0: roundf (ties away from zero) of v
 * clamped to ±127, NaN 0; the clamp goes first (127 is an integer, so it commutes
 * with the rounding) and makes the truncating conversion safe: t = trunc (v), plus
 * trunc (2 (v − t)), which is ±1 exactly where the exact remainder v − t reaches
 * ±1/2. Q4_0: trunc (v + 8.5f) in [0, 15], NaN 8, the same binary32 add as the
 * scalar (int8_t) (x·id + 8.5f).
 * fin: x and id are finite (the common group), so v is too, and |v| is at most
 * max |x| · id = 127 or 8 times (1 + 2^−20) (d = amax / 127 or max / −8 has a
 * relative error ≤ 2^−21 wherever 1 / d is finite, even subnormal): no NaN rule,
 * Q8_0 needs no clamp (|v| < 127.5), Q4_0 only the upper one (v + 8.5 > 0.49). */
VINLINE vi
gencode (vf x, vf id, int code, int fin, int st, vu h)
{
  vf v = x * id;

  if (st)
    {
      /* stochastic, as ggml_quantize_block: piq_round_u of v (Q8_0, NaN 0) or of
       * v + 8 (Q4_0, NaN 8), then the integer bounds, which commute with it (both
       * kept with fin: the draw can take |v| just above 127 or 8 one step out) */
      if (code == PIQ_C_Q8_0)
        {
          if (!fin)
            v = (vf) ((vi) v & (v == v));
        }
      else
        {
          v = v + vsplat (8.0f);
          if (!fin)
            v = vsel (v == v, v, vsplat (8.0f));
        }
      v = code == PIQ_C_Q8_0 ? vmin (vmax (v, vsplat (-127.0f)), vsplat (127.0f))
                             : vmin (vmax (v, vsplat (0.0f)), vsplat (15.0f));
      return vstoch_r (v, h);
    }

  if (code == PIQ_C_Q8_0)
    {
      vi t;
      if (!fin)
        {
          v = (vf) ((vi) v & (v == v));
          v = vmin (vmax (v, vsplat (-127.0f)), vsplat (127.0f));
        }
      t = __builtin_convertvector (v, vi);
      v = v - __builtin_convertvector (t, vf);
      return t + __builtin_convertvector (v + v, vi);
    }
  v = v + vsplat (8.5f);
  if (!fin)
    {
      v = vsel (v == v, v, vsplat (8.0f));
      v = vmax (v, vsplat (0.0f));
    }
  v = vmin (v, vsplat (15.0f));
  return __builtin_convertvector (v, vi);
}

/* Store `len` code bytes that start at byte o of a group's codes (cb per block)
 * into their blocks from out (bb bytes each, codes after the 2-byte scale). */
VINLINE void
gput (uint8_t *out, size_t bb, size_t cb, size_t o, const void *bytes, size_t len)
{
  const size_t part = len < cb ? len : cb;

  for (size_t t = 0; t < len; t += part)
    memcpy (out + (o + t) / cb * bb + 2 + (o + t) % cb, (const uint8_t *) bytes + t, part);
}

/* PIQ_W code bytes at byte o of the group's codes, as int32 lanes: Q8_0 the codes
 * of elements o … (signed), Q4_0 the two nibbles of bytes o …: byte r of a block
 * holds elements r and r + 16 (PIQ_W ≤ 16, so a vector never straddles). */
VINLINE vi
gcode_bytes (const float *x, const float *id, size_t o, int code, int fin, int st, uint32_t key,
             uint32_t ix, const VHashSeg *hs)
{
  vu h0 = (vu) fsplat_i (0), h1 = h0;
  if (code == PIQ_C_Q8_0)
    {
      if (st)
        h0 = hs ? vhash_seg_at (hs, ix + (uint32_t) o) : vhash (key, ix + (uint32_t) o);
      return gencode (fload (x + o), vsplat (id[o / GQK]), code, fin, st, h0);
    }
  {
    size_t blk = o / (GQK / 2), r = o % (GQK / 2);
    vf v = vsplat (id[blk]);
    const float *p = x + blk * GQK + r;
    if (st)
      {
        uint32_t p0 = ix + (uint32_t) (blk * GQK + r);
        h0 = hs ? vhash_seg_at (hs, p0) : vhash (key, p0);
        h1 = hs ? vhash_seg_at (hs, p0 + GQK / 2) : vhash (key, p0 + GQK / 2);
      }
    return gencode (fload (p), v, code, fin, st, h0) |
           gencode (fload (p + GQK / 2), v, code, fin, st, h1) << 4;
  }
}

/* The code bytes of a group (PIQ_W blocks from x, inverse scales id) into out,
 * 4·PIQ_W bytes at a time: where the x86 packs exist they narrow four vectors in
 * registers (values fit: Q8_0 in int8, Q4_0 bytes in uint8). */
VINLINE void
ggroup_codes (const float *x, const float *id, uint8_t *out, int code, int fin, int st,
              uint32_t key, uint32_t ix)
{
  const size_t bb = gblock_bytes (code), cb = bb - 2;
  VHashSeg seg;
  const VHashSeg *hs = NULL;

  /* the group's PIQ_W · GQK indices in one 2^16-segment, from a multiple of PIQ_W:
   * vhash_segment's tables, built once for the group */
  if (st && ix % PIQ_W == 0 && ((ix ^ (ix + (uint32_t) (PIQ_W * GQK - 1))) >> 16) == 0)
    {
      vhash_segment (&seg, key, ix);
      hs = &seg;
    }
  for (size_t o = 0; o < PIQ_W * cb; o += 4 * PIQ_W)
    {
      vi c0 = gcode_bytes (x, id, o, code, fin, st, key, ix, hs);
      vi c1 = gcode_bytes (x, id, o + PIQ_W, code, fin, st, key, ix, hs);
      vi c2 = gcode_bytes (x, id, o + 2 * PIQ_W, code, fin, st, key, ix, hs);
      vi c3 = gcode_bytes (x, id, o + 3 * PIQ_W, code, fin, st, key, ix, hs);
#ifdef PIQ_VEC_PACKS_DW
      vw w0 = (vw) PIQ_VEC_PACKS_DW (c0, c1), w1 = (vw) PIQ_VEC_PACKS_DW (c2, c3);
      vbw b = code == PIQ_C_Q8_0 ? (vbw) PIQ_VEC_PACKS_WB (w0, w1) : (vbw) PIQ_VEC_PACKUS_WB (w0, w1);
      b = (vbw) PIQ_VEC_FIX_DW (b);
      gput (out, bb, cb, o, &b, sizeof b);
#else
      vb b0 = __builtin_convertvector (c0, vb), b1 = __builtin_convertvector (c1, vb);
      vb b2 = __builtin_convertvector (c2, vb), b3 = __builtin_convertvector (c3, vb);
      gput (out, bb, cb, o, &b0, PIQ_W);
      gput (out, bb, cb, o + PIQ_W, &b1, PIQ_W);
      gput (out, bb, cb, o + 2 * PIQ_W, &b2, PIQ_W);
      gput (out, bb, cb, o + 3 * PIQ_W, &b3, PIQ_W);
#endif
    }
}

/* One level of the transposing max on a pair of vectors (FT_LEVEL_'s step), so
 * that gq4_stats combines two blocks as soon as both are read and keeps only
 * PIQ_W / 2 partial vectors per statistic live; FT_REST_ does the other levels. */
#define FT_PAIR_(a, b, s) \
  fmaxu (PIQ_SHUF2 ((a), (b), vu, FT_MASK_ (s, 0)), PIQ_SHUF2 ((a), (b), vu, FT_MASK_ (s, s)))
#if PIQ_W == 16
# define FT_REST_(m) FT_LEVEL_ (m, 4, 4) FT_LEVEL_ (m, 2, 2) FT_LEVEL_ (m, 1, 1)
#elif PIQ_W == 8
# define FT_REST_(m) FT_LEVEL_ (m, 2, 2) FT_LEVEL_ (m, 1, 1)
#else
# define FT_REST_(m) FT_LEVEL_ (m, 1, 1)
#endif

/* Q4_0's statistics of PIQ_W blocks in one pass (its scale needs the sign of the
 * first element of greatest |x|, which took a second, keyed pass). Each element is
 * keyed rotl (bits, 1) = |x| · 2 + sign bit, and again with that bit flipped: the
 * two maxima give max |x| (lane j, block j, as bits: *amax) and whether a negative
 * (first key) and a positive (second key) element reach it. Where only one sign
 * does, that is the sign (*s, in bit 31); a block of zeros keeps +0, as the
 * scalar's amax = 0 never updates its max. Returns 1 then; 0 where both signs
 * reach a nonzero max |x| in some block (the keyed pass decides; *amax is right);
 * −1 where an element is NaN or ±Inf (the finite-only passes decide). */
VINLINE int
gq4_stats (const float *x, vu *amax, vu *s)
{
  vu k1[PIQ_W / 2], k2[PIQ_W / 2], neg, pos, nz;

#pragma GCC unroll 8
  for (int j = 0; j < PIQ_W / 2; j++)
    {
      vu a1[2], a2[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; h++)
        {
          const float *blk = x + (2 * j + h) * GQK;
          a1[h] = a2[h] = (vu) fsplat_i (0);
          __builtin_prefetch (blk + PIQ_PREFETCH);   /* both 64-byte lines of the block */
          __builtin_prefetch (blk + 16 + PIQ_PREFETCH);
#pragma GCC unroll 8
          for (int k = 0; k < GV; k++)
            {
              vu u = (vu) fload (blk + k * PIQ_W), r = (u << 1) | (u >> 31);
              a1[h] = fmaxu (a1[h], r);
              a2[h] = fmaxu (a2[h], r ^ 1u);
            }
        }
      k1[j] = FT_PAIR_ (a1[0], a1[1], PIQ_W / 2);
      k2[j] = FT_PAIR_ (a2[0], a2[1], PIQ_W / 2);
    }
  FT_REST_ (k1)
  FT_REST_ (k2)
  *amax = k1[0] >> 1;
  if (fany ((vi) (*amax >= 0x7f800000u)))
    return -1;
  neg = k1[0] & 1u;
  pos = k2[0] & 1u;
  nz = (vu) (*amax != 0u);
  *s = (neg << 31) & nz;
  return !fany ((vi) (neg & pos & nz));
}

/* PIQ_W whole blocks from x into out. */
VINLINE void
ggroup_quantize (const float *x, uint8_t *out, int code, int st, uint32_t hkey, uint32_t ix)
{
  const int q8 = code == PIQ_C_Q8_0;
  const size_t bb = gblock_bytes (code);
  vu m[PIQ_W], qa = (vu) fsplat_i (0), qs = qa;
  vf amax, d, id;
  float ibuf[PIQ_W];
  uint32_t hbuf[PIQ_W];
  int fin = 1, q4 = q8 ? -2 : gq4_stats (x, &qa, &qs);   /* −2: Q8_0 */

  if (q4 == 1)
    {
      amax = (vf) qa;
      d = (vf) (qa | qs) / vsplat (-8.0f);
    }
  else
    {
      /* lane j of m[0]: block j's max |x| as bits, NaN and Inf above every finite
       * value; a group that has any takes a second pass that skips them (for Q4_0
       * gq4_stats has told which case it is) */
      if (q4 == 0)
        m[0] = qa;
      else
        for (int finite_only = q4 == -1; finite_only < 2; finite_only++)
          {
#pragma GCC unroll 16
            for (int j = 0; j < PIQ_W; j++)
              {
                vu am = (vu) fsplat_i (0);
                if (!finite_only)   /* both 64-byte lines of the block */
                  {
                    __builtin_prefetch (x + j * GQK + PIQ_PREFETCH);
                    __builtin_prefetch (x + j * GQK + 16 + PIQ_PREFETCH);
                  }
#pragma GCC unroll 8
                for (int k = 0; k < GV; k++)
                  {
                    vf v = fload (x + j * GQK + k * PIQ_W);
                    am = fmaxu (am, finite_only ? gabs_finite (v) : (vu) v & 0x7fffffffu);
                  }
                m[j] = am;
              }
            FT_TREE_ (m)
            if (!finite_only && (fin = !fany ((vi) (m[0] >= 0x7f800000u))))
              break;
          }
      if (q4 == -1)
        fin = 0;
      amax = (vf) m[0];

      if (q8)
        d = amax / vsplat (127.0f);
      else
        {
          /* max: the first finite element (in index order) with |x| = amax, as the
           * scalar's strict "amax < |x|" keeps it. Each block's matches are keyed
           * (31 − index) · 2 + sign bit, so the largest key is the first match;
           * with amax = 0 the scalar keeps max = +0, whatever the zeros' signs. */
          uint32_t abuf[PIQ_W];
          vu s;
          memcpy (abuf, &m[0], sizeof abuf);
#pragma GCC unroll 16
          for (int j = 0; j < PIQ_W; j++)
            {
              vu am = (vu) fsplat_i (0) + abuf[j], key = (vu) fsplat_i (0);
#pragma GCC unroll 8
              for (int k = 0; k < GV; k++)
                {
                  vf v = fload (x + j * GQK + k * PIQ_W);
                  vu rank = ((vu) fsplat_i (GQK - 1 - k * PIQ_W) - viota (0)) << 1;
                  vi hit = (vi) (gabs_finite (v) == am);
                  key = fmaxu (key, (rank | ((vu) v >> 31)) & (vu) hit);
                }
              m[j] = key;
            }
          FT_TREE_ (m)
          s = (m[0] << 31) & (vu) ((vu) amax != 0u);
          d = (vf) ((vu) amax | s) / vsplat (-8.0f);
        }
    }
  id = vsel (d != vsplat (0.0f), vsplat (1.0f) / d, vsplat (0.0f));
  fin = fin && !fany ((vi) (((vu) id & 0x7fffffffu) >= 0x7f800000u));
  memcpy (ibuf, &id, sizeof ibuf);
  {
    vu h = gf16_bits (d);
    memcpy (hbuf, &h, sizeof hbuf);
  }
  for (int j = 0; j < PIQ_W; j++)
    {
      uint16_t dh = (uint16_t) hbuf[j];
      memcpy (out + j * bb, &dh, 2);
    }
  if (st && fin)                          /* the stochastic codes bound every lane */
    ggroup_codes (x, ibuf, out, code, 1, 1, hkey, ix);
  else if (st)
    ggroup_codes (x, ibuf, out, code, 0, 1, hkey, ix);
  else if (fin)
    ggroup_codes (x, ibuf, out, code, 1, 0, 0, 0);
  else
    ggroup_codes (x, ibuf, out, code, 0, 0, 0, 0);
}

/* Whole groups of PIQ_W blocks, the rest (fewer blocks, a ragged last block) and a
 * range that does not start on a block by the scalar codec; st: stochastic
 * rounding (a call whose indices cross a multiple of 2^32 all scalar). */
VINLINE void
gquantize (const PiqBlockArgs *a, const float *x, uint64_t first, size_t n, uint8_t *codes,
           int code, int st)
{
  const size_t bb = gblock_bytes (code), gsize = PIQ_W * GQK;
  const uint32_t ix = (uint32_t) (a->index0 + first);
  uint32_t key = 0;
  size_t b0 = 0;

  if (first % GQK == 0 && (!st || fstoch_key (a, a->index0 + first, n, &key)))
    for (; b0 + gsize <= n; b0 += gsize)
      ggroup_quantize (x + b0, codes + (first + b0) / GQK * bb, code, st, key, ix + (uint32_t) b0);
  if (b0 < n)
    piq_block_quantize (a, PIQ_F_F32, x + b0, first + b0, n - b0, codes, NULL, NULL);
}

/* Vector k of a block's codes as int32 lanes: Q8_0 sign-extended bytes, Q4_0 the
 * low nibbles (elements 0 … 15) or high nibbles (16 … 31) less the bias 8. */
VINLINE vi
gload_codes (const uint8_t *c, int k, int code)
{
  if (code == PIQ_C_Q8_0)
    return PIQ_VEC_S8_TO_I32 (bytes16 (c + k * PIQ_W, PIQ_W));
  {
    vb16 b = bytes16 (c + (k % (GV / 2)) * PIQ_W, PIQ_W);
    b = k < GV / 2 ? b & 0x0f : b >> 4;
    return PIQ_VEC_U8_TO_I32 (b) - fsplat_i (8);
  }
}

/* add and stream (SET to vector-aligned y, past the caches) are constants here */
VINLINE void
gdequantize_run (const PiqBlockArgs *a, const uint8_t *codes, uint64_t first, size_t n, float *y,
                 int add, int stream, int code)
{
  const size_t bb = gblock_bytes (code);
  size_t b0 = 0;

  if (first % GQK == 0)
    for (const uint8_t *blk = codes + first / GQK * bb; b0 + GQK <= n; b0 += GQK, blk += bb)
      {
        uint16_t dh;
        vf d;
        memcpy (&dh, blk, 2);
        d = vsplat (piq_f16_to_f32 (dh));
#pragma GCC unroll 8
        for (int k = 0; k < GV; k++)
          {
            /* (float) code · d, as ggml_decode */
            vf v = __builtin_convertvector (gload_codes (blk + 2, k, code), vf) * d;
            float *p = y + b0 + k * PIQ_W;
            fput (p, v, add, stream);
          }
      }
  stream_fence (stream);
  if (b0 < n)
    piq_block_dequantize (a, codes, NULL, NULL, first + b0, n - b0, PIQ_F_F32, y + b0, add);
}

VINLINE void
gdequantize (const PiqBlockArgs *a, const uint8_t *codes, uint64_t first, size_t n, float *y,
             int add, int code)
{
#ifdef PIQ_VEC_STREAM
  if (!add && a->stream && (uintptr_t) y % sizeof (vf) == 0)
    gdequantize_run (a, codes, first, n, y, 0, 1, code);
  else
#endif
  if (add)
    gdequantize_run (a, codes, first, n, y, 1, 0, code);
  else
    gdequantize_run (a, codes, first, n, y, 0, 0, code);
}

/* ---- binary: sign bits, 16 elements per two bytes ----
 * bit = !(x < 0): 1 for x ≥ 0, −0 and NaN, as the scalar codec. */

#define FB_VECS (16 / PIQ_W)

/* Bit j = lane j of a comparison's result (lanes 0 or all ones): one mask move on
 * x86 (VPMOVD2M / VMOVMSKPS), where the portable form (each lane's bit, then an OR
 * reduction of four shuffles) cost f32->binary a third of its speed; any other unit
 * keeps that form. */
VINLINE uint32_t
fmask_bits (vi m)
{
#if PIQ_W == 16 && defined __AVX512F__
  return (uint32_t) _mm512_cmplt_epi32_mask ((__m512i) m, _mm512_setzero_si512 ());
#elif PIQ_W == 8 && defined __AVX__
  return (uint32_t) _mm256_movemask_ps ((__m256) m);
#elif PIQ_W == 4 && defined __SSE2__
  return (uint32_t) _mm_movemask_ps ((__m128) m);
#else
  return fhor ((vu) m & ((vu) fsplat_i (1) << viota (0)));
#endif
}

/* st: stochastic rounding with inverse scale inv ≠ 0, keys key and ix (x[0]'s index,
 * low 32 bits): bit = u < (x · inv + 1) · 0.5, NaN 1, as the scalar codec. */
VINLINE void
fbinary_bits (const float *x, uint8_t *dst, size_t n, int st, float inv, uint32_t key, uint32_t ix)
{
  /* from a multiple of PIQ_W: vhash_segment's tables, rebuilt per 2^16-segment */
  const int seg = st && ix % PIQ_W == 0;
  VHashSeg hs = { 0 };
  uint32_t hs_p = ix;

  if (seg)
    vhash_segment (&hs, key, ix);
  for (size_t i = 0; i < n; i += 16, dst += 2)
    {
      uint32_t bits = 0;
      for (int k = 0; k < FB_VECS; k++)
        {
          vf v = fload (x + i + k * PIQ_W);
          vu on;
          if (st)
            {
              vf pr = (v * vsplat (inv) + vsplat (1.0f)) * vsplat (0.5f);
              uint32_t p = ix + (uint32_t) (i + k * PIQ_W);
              vu h;
              if (seg && ((p ^ hs_p) >> 16) != 0)   /* a vector never crosses a segment */
                {
                  hs_p = p;
                  vhash_segment (&hs, key, p);
                }
              h = seg ? vhash_seg_at (&hs, p) : vhash (key, p);
              on = (vu) (funiform (h) < pr) | (vu) (v != v);
            }
          else
            on = ~(vu) (v < vsplat (0.0f));
          bits |= fmask_bits ((vi) on) << (k * PIQ_W);
        }
      dst[0] = (uint8_t) bits;
      dst[1] = (uint8_t) (bits >> 8);
    }
}

/* Σ|x| of the finite values in the order of piq_sum_lanes: lane k of the 16 holds the
 * elements ≡ k (mod 16), and the lanes combine as k += k + h for h = 8, 4, 2, 1.
 * dst: also the nearest bits (they do not depend on the scale), from the same loads
 * instead of a second pass over the block. x is prefetched PIQ_PREFETCH ahead. */
VINLINE float
fbinary_sum (const float *x, size_t n, uint8_t *dst)
{
  vf acc[FB_VECS], t;

  for (int k = 0; k < FB_VECS; k++)
    acc[k] = vsplat (0.0f);
  for (size_t i = 0; i < n; i += 16)
    {
      uint32_t bits = 0;
      __builtin_prefetch (x + i + PIQ_PREFETCH);   /* the 64-byte line of these 16 */
      for (int k = 0; k < FB_VECS; k++)
        {
          vf v = fload (x + i + k * PIQ_W), av = (vf) ((vu) v & 0x7fffffffu);
          acc[k] = acc[k] + vsel ((vi) ((vu) av < 0x7f800000u), av, vsplat (0.0f));
          if (dst != NULL)
            bits |= fmask_bits ((vi) ~(vu) (v < vsplat (0.0f))) << (k * PIQ_W);
        }
      if (dst != NULL)
        {
          dst[i / 8] = (uint8_t) bits;
          dst[i / 8 + 1] = (uint8_t) (bits >> 8);
        }
    }
#if PIQ_W == 4
  acc[0] = acc[0] + acc[2];                /* h = 8 */
  acc[1] = acc[1] + acc[3];
  t = acc[0] + acc[1];                     /* h = 4 */
#elif PIQ_W == 8
  t = acc[0] + acc[1];                     /* h = 8 */
  t = t + PIQ_SHUF1 (t, vi, FSWAP_ (4));
#else
  t = acc[0];
  t = t + PIQ_SHUF1 (t, vi, FSWAP_ (8));
  t = t + PIQ_SHUF1 (t, vi, FSWAP_ (4));
#endif
  t = t + PIQ_SHUF1 (t, vi, FSWAP_ (2));
  t = t + PIQ_SHUF1 (t, vi, FSWAP_ (1));
  return t[0];
}

VINLINE void
fbinary_quantize (const PiqBlockArgs *a, const float *x, uint64_t first, size_t n,
                  uint8_t *codes, uint8_t *scales, int32_t *zero_points)
{
  const uint32_t ix = (uint32_t) (a->index0 + first);
  uint32_t key = 0;
  size_t b0 = 0;

  if (a->stochastic && !fstoch_key (a, a->index0 + first, n, &key))
    b0 = 0;                                /* indices cross 2^32: all scalar */
  else if (a->fixed)
    {
      PiqBlockP p;
      piq_block_params_fixed (a, &p);
      b0 = n - n % 16;
      if (a->stochastic && p.inv != 0.0f)
        fbinary_bits (x, codes + first / 8, b0, 1, p.inv, key, ix);
      else
        fbinary_bits (x, codes + first / 8, b0, 0, 0.0f, 0, 0);
    }
  else
    for (; b0 + a->block <= n; b0 += a->block)
      {
        PiqBlockStats st = { 0.0f, 0.0f, 0.0f, 0.0f, 0 };
        PiqBlockP p;
        uint8_t *dst = codes + (first + b0) / 8;
        st.sum_abs = a->stochastic ? fbinary_sum (x + b0, a->block, NULL)
                                   : fbinary_sum (x + b0, a->block, dst);
        piq_block_params (a, &st, a->block, (first + b0) / a->block, scales, zero_points, &p);
        if (a->stochastic && p.inv != 0.0f)
          fbinary_bits (x + b0, dst, a->block, 1, p.inv, key, ix + (uint32_t) b0);
        else if (a->stochastic)
          fbinary_bits (x + b0, dst, a->block, 0, 0.0f, 0, 0);
      }
  if (b0 < n)
    piq_block_quantize (a, PIQ_F_F32, x + b0, first + b0, n - b0, codes, scales, zero_points);
}

VINLINE void
fbinary_dequantize (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                    uint64_t first, size_t n, float *y, int add)
{
  size_t step = a->fixed ? n - n % 16 : a->block, b0 = 0;

  for (; step > 0 && b0 + step <= n; b0 += step)
    {
      PiqBlockP p;
      piq_block_load_params (a, scales, NULL, (first + b0) / a->block, &p);
      for (size_t i = 0; i < step; i += 16)
        {
          const uint8_t *src = codes + (first + b0 + i) / 8;
          vu bits = (vu) fsplat_i (src[0] | src[1] << 8);
          for (int k = 0; k < FB_VECS; k++)
            {
              vu on = (bits >> viota ((uint32_t) (k * PIQ_W))) & 1u;
              vf v = vsel ((vi) (on != 0u), vsplat (p.scale), vsplat (-p.scale));
              if (add)
                v = fadd_keep (fload (y + b0 + i + k * PIQ_W), v);
              memcpy (y + b0 + i + k * PIQ_W, &v, sizeof v);
            }
        }
    }
  if (b0 < n)
    piq_block_dequantize (a, codes, scales, NULL, first + b0, n - b0, PIQ_F_F32, y + b0, add);
}

/* NF8 and block floating point (MSFP): their own bodies */
#include "piq-formats-vec-msfp.h"

/* The specializations: quantize (format, code bits, high nibble first, saturate,
 * signed integer), dequantize (format, code bits, high nibble first, signed integer).
 * Minifloats without NaN (FP4) always saturate; integers saturate by clamping. */
#define FQ_LIST(X) \
  X (-1, 8, 0, 1, 0) X (-1, 8, 0, 1, 1) X (-1, 4, 0, 1, 0) X (-1, 4, 0, 1, 1) \
  X (PIQ_C_FP8_E4M3, 8, 0, 1, 0) X (PIQ_C_FP8_E4M3, 8, 0, 0, 0) \
  X (PIQ_C_FP8_E5M2, 8, 0, 1, 0) X (PIQ_C_FP8_E5M2, 8, 0, 0, 0) \
  X (PIQ_C_FP4_E2M1, 4, 0, 1, 0) X (PIQ_C_NF4, 4, 0, 1, 0) X (PIQ_C_NF4, 4, 1, 1, 0) \
  X (PIQ_C_FP4_BNB, 4, 0, 1, 0) X (PIQ_C_FP4_BNB, 4, 1, 1, 0)
#define FD_LIST(X) \
  X (-1, 8, 0, 0) X (-1, 8, 0, 1) X (-1, 4, 0, 0) X (-1, 4, 0, 1) \
  X (PIQ_C_FP8_E4M3, 8, 0, 0) X (PIQ_C_FP8_E5M2, 8, 0, 0) X (PIQ_C_FP4_E2M1, 4, 0, 0) \
  X (PIQ_C_NF4, 4, 0, 0) X (PIQ_C_NF4, 4, 1, 0)

static void
block_quantize_f32 (const PiqBlockArgs *a, const void *src, uint64_t first, size_t n,
                    uint8_t *codes, uint8_t *scales, int32_t *zero_points)
{
  int sat = a->scale_kind == PIQ_SCALE_E8M0 || a->saturate || a->code == PIQ_C_FP4_E2M1 ||
            a->code == PIQ_C_FP6_E2M3 || a->code == PIQ_C_FP6_E3M2 ||
            a->code < 0 || a->code == PIQ_C_NF4 || a->code == PIQ_C_FP4_BNB;
  int sg = a->code < 0 && a->qmin < 0;

  if (a->bits == 0)
    {
      if (a->stochastic)
        {
          if (a->code == PIQ_C_Q8_0)
            gquantize (a, src, first, n, codes, PIQ_C_Q8_0, 1);
          else
            gquantize (a, src, first, n, codes, PIQ_C_Q4_0, 1);
        }
      else if (a->code == PIQ_C_Q8_0)
        gquantize (a, src, first, n, codes, PIQ_C_Q8_0, 0);
      else
        gquantize (a, src, first, n, codes, PIQ_C_Q4_0, 0);
      return;
    }
  if (mquantize_f32 (a, src, first, n, codes, scales, zero_points))
    return;
  if (fvec_takes (a, 1) && a->code == PIQ_C_BINARY)
    {
      fbinary_quantize (a, src, first, n, codes, scales, zero_points);
      return;
    }
  if (fvec_takes (a, 1))
    {
#define FQ_(c, b, h, s, g) \
      if (a->code == (c) && a->bits == (b) && a->high_first == (h) && sat == (s) && sg == (g)) \
        { \
          if (a->stochastic) \
            fquantize (a, src, first, n, codes, scales, zero_points, c, b, h, s, g, 1); \
          else \
            fquantize (a, src, first, n, codes, scales, zero_points, c, b, h, s, g, 0); \
          return; \
        }
      FQ_LIST (FQ_)
      FQ_LIST_FP6 (FQ_)
#undef FQ_
    }
  piq_block_quantize (a, PIQ_F_F32, src, first, n, codes, scales, zero_points);
}

static void
block_dequantize_f32 (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                      const int32_t *zero_points, uint64_t first, size_t n, void *dst, int add)
{
  int is_signed = a->code < 0 && a->qmin < 0;

  if (a->bits == 0)
    {
      if (a->code == PIQ_C_Q8_0)
        gdequantize (a, codes, first, n, dst, add, PIQ_C_Q8_0);
      else
        gdequantize (a, codes, first, n, dst, add, PIQ_C_Q4_0);
      return;
    }
  if (mdequantize_f32 (a, codes, scales, first, n, dst, add))
    return;
  if (fvec_takes (a, 0) && a->code == PIQ_C_BINARY)
    {
      fbinary_dequantize (a, codes, scales, first, n, dst, add);
      return;
    }
  if (fvec_takes (a, 0))
    {
#define FD_(c, b, h, s) \
      if (a->code == (c) && a->bits == (b) && a->high_first == (h) && is_signed == (s)) \
        { fdequantize (a, codes, scales, zero_points, first, n, dst, add, c, b, h, s); return; }
      FD_LIST (FD_)
      FD_LIST_FP6 (FD_)
#undef FD_
    }
  piq_block_dequantize (a, codes, scales, zero_points, first, n, PIQ_F_F32, dst, add);
}

#define PIQ_FORMAT_SLOTS \
  .block_quantize = block_quantize_f32, \
  .block_dequantize = block_dequantize_f32,

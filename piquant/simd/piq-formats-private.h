/* piq-formats-private.h: the element codecs of the block formats, and the block driver
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the rest of the kernel layer. The codecs are static inline so the
 * tests can use them as definitions; their rules (with sources) are in docs/formats.md
 * and ../shared/FORMATS.md. Everything computes in binary32: f64 data is rounded to
 * binary32 first, as torchao, bitsandbytes and ggml compute these formats.
 */
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "piq-convert-private.h"

/* The code formats: X (NAME, name, index, bits per element or 0 for self-contained
 * blocks, kind). PiqDtype value = 32 + index (piq-types.h). */
#define PIQ_CODE_TYPES(X) \
  X (FP8_E4M3, fp8_e4m3, 0, 8, MINIFLOAT) \
  X (FP8_E5M2, fp8_e5m2, 1, 8, MINIFLOAT) \
  X (FP6_E2M3, fp6_e2m3, 2, 6, MINIFLOAT) \
  X (FP6_E3M2, fp6_e3m2, 3, 6, MINIFLOAT) \
  X (FP4_E2M1, fp4_e2m1, 4, 4, MINIFLOAT) \
  X (NF4,      nf4,      5, 4, TABLE) \
  X (FP4_BNB,  fp4_bnb,  6, 4, TABLE) \
  X (NF8,      nf8,      7, 8, TABLE) \
  X (BINARY,   binary,   8, 1, BINARY) \
  X (Q8_0,     q8_0,     9, 0, GGML) \
  X (Q4_0,     q4_0,    10, 0, GGML) \
  X (BFP2,     bfp2,    11, 3, BFP) \
  X (BFP3,     bfp3,    12, 4, BFP) \
  X (BFP4,     bfp4,    13, 5, BFP) \
  X (BFP5,     bfp5,    14, 6, BFP) \
  X (BFP6,     bfp6,    15, 7, BFP) \
  X (BFP7,     bfp7,    16, 8, BFP) \
  X (BFP8,     bfp8,    17, 9, BFP)

enum {
#define PIQ_IDX_(N, n, i, ...) PIQ_C_##N = i,
  PIQ_CODE_TYPES (PIQ_IDX_)
#undef PIQ_IDX_
#define PIQ_COUNT_(...) + 1
  PIQ_N_CODE = 0 PIQ_CODE_TYPES (PIQ_COUNT_)
#undef PIQ_COUNT_
};

/* Each code format's family and storage bits, from the list above: the codecs and
 * drivers dispatch on these, never on ranges of indices. */
typedef enum {
  PIQ_FAMILY_MINIFLOAT,
  PIQ_FAMILY_TABLE,
  PIQ_FAMILY_BINARY,
  PIQ_FAMILY_GGML,
  PIQ_FAMILY_BFP,
} PiqCodeFamily;

static const uint8_t piq_code_family[] = {
#define PIQ_FAM_(N, n, i, bits, kind) [i] = PIQ_FAMILY_##kind,
  PIQ_CODE_TYPES (PIQ_FAM_)
#undef PIQ_FAM_
};
static const uint8_t piq_code_bits[] = {
#define PIQ_BITS_(N, n, i, bits, kind) [i] = bits,
  PIQ_CODE_TYPES (PIQ_BITS_)
#undef PIQ_BITS_
};

/* 2^k for k in [−149, 127], built from bits: exact, and no libm call in the per-element
 * and per-block paths (multiplying by it is ldexpf wherever the product is normal). */
static inline float
piq_pow2f (int k)
{
  return k >= -126 ? piq_bits_f32 ((uint32_t) (k + 127) << 23) : piq_bits_f32 (1u << (k + 149));
}

/* ---------------------------------------------------------------------------
 * Minifloats (OCP FP8 E4M3FN / E5M2, MX FP6 E2M3 / E3M2, FP4 E2M1). */

typedef struct {
  int      ebits, mbits, bias;
  float    max;        /* largest finite magnitude */
  uint8_t  max_code;   /* its code, sign clear */
  uint8_t  inf_code;   /* 0: no infinities */
  uint8_t  nan_code;   /* 0: no NaN */
  int      emax;       /* floor(log2(max)): the MX spec's emax_elem */
} PiqMinifloat;

/* Indexed by code (rows of other families stay zero), so a minifloat added anywhere in
 * the list cannot index past the table. */
static const PiqMinifloat piq_minifloats[PIQ_N_CODE] = {
  [PIQ_C_FP8_E4M3] = { 4, 3,  7, 448.0f,   0x7e, 0,    0x7f,  8 },
  [PIQ_C_FP8_E5M2] = { 5, 2, 15, 57344.0f, 0x7b, 0x7c, 0x7f, 15 },
  [PIQ_C_FP6_E2M3] = { 2, 3,  1, 7.5f,     0x1f, 0,    0,     2 },
  [PIQ_C_FP6_E3M2] = { 3, 2,  3, 28.0f,    0x1f, 0,    0,     4 },
  [PIQ_C_FP4_E2M1] = { 2, 1,  1, 6.0f,     0x07, 0,    0,     2 },
};

static inline float
piq_minifloat_decode (const PiqMinifloat *f, unsigned code)
{
  unsigned width = 1 + f->ebits + f->mbits;
  unsigned mag = code & ((1u << (width - 1)) - 1);
  unsigned e = mag >> f->mbits, m = mag & ((1u << f->mbits) - 1);
  float v;

  if (f->nan_code && (mag == f->nan_code || (f->inf_code && mag > f->inf_code)))
    v = NAN;
  else if (f->inf_code && mag == f->inf_code)
    v = INFINITY;
  else if (e == 0)
    v = (float) m * piq_pow2f (1 - f->bias - f->mbits);
  else
    v = (float) ((1u << f->mbits) | m) * piq_pow2f ((int) e - f->bias - f->mbits);
  return (code >> (width - 1)) & 1 ? -v : v;
}

/* Round v onto the format: ties to even, or up with probability equal to the
 * fraction (u in [0,1) from piq_uniform24) when stochastic. Overflow (after
 * rounding) saturates to ±max, or when !saturate gives ±Inf (E5M2) or NaN (E4M3).
 * NaN gives the NaN code with v's sign; formats without NaN encode it as +0.
 * ±Inf follows the overflow rule. */
static inline unsigned
piq_minifloat_encode (const PiqMinifloat *f, float v, int saturate, int stochastic, float u)
{
  unsigned width = 1 + f->ebits + f->mbits;
  unsigned sign = (piq_f32_bits (v) >> 31) << (width - 1);
  int emin = 1 - f->bias, qe;
  float a = fabsf (v), t, k, mag;

  if (a != a)
    return f->nan_code ? sign | f->nan_code : 0;
  /* the quantum at a's binade (the subnormal one below the smallest normal) */
  qe = (a >= piq_pow2f (emin) ? (int) ((piq_f32_bits (a) >> 23) & 0xff) - 127 : emin) - f->mbits;
  if (isinf (a))
    mag = INFINITY;
  else
    {
      t = a * piq_pow2f (-qe);             /* exact: a power-of-two scaling */
      if (stochastic)
        {
          k = floorf (t);
          k += u < t - k ? 1.0f : 0.0f;
        }
      else
        k = nearbyintf (t);
      mag = k * piq_pow2f (qe);            /* exact, and may carry into the next binade */
    }
  if (mag > f->max)
    {
      if (saturate || !f->nan_code)
        return sign | f->max_code;
      return sign | (f->inf_code ? f->inf_code : f->nan_code);
    }
  if (mag < piq_pow2f (emin))
    return sign | (unsigned) (mag * piq_pow2f (f->mbits - emin));
  {
    int e = (int) ((piq_f32_bits (mag) >> 23) & 0xff) - 127;
    unsigned m = (unsigned) (mag * piq_pow2f (f->mbits - e)) - (1u << f->mbits);
    return sign | (unsigned) (e + f->bias) << f->mbits | m;
  }
}

/* ---------------------------------------------------------------------------
 * E8M0 shared scales (OCP MX v1.0): 2^(E−127), E = 0…254, 0xFF = NaN. */

typedef enum {
  PIQ_E8M0_FLOOR = 0,  /* the spec: floor(log2 amax) − emax_elem */
  PIQ_E8M0_CEIL  = 1,  /* +1 when amax is not a power of two */
  PIQ_E8M0_EVEN  = 2,  /* amax's mantissa rounded (half up) to the element's bits, then floor */
  PIQ_E8M0_RCEIL = 3,  /* 2^ceil(log2(amax / max_elem)), as cuBLAS */
} PiqE8m0Rule;

static inline float
piq_e8m0_decode (uint8_t e)
{
  return e == 0xff ? NAN : piq_pow2f ((int) e - 127);
}

/* amax ≥ 0 or non-finite; emax/mbits/max of the element (INT8: 0, 6, 127/64). */
static inline uint8_t
piq_e8m0_from_amax (float amax, PiqE8m0Rule rule, int emax, int mbits, float max)
{
  uint32_t b;
  int e;

  if (!isfinite (amax))
    return 0xff;
  if (amax == 0.0f)
    return 0;
  b = piq_f32_bits (amax);
  switch (rule)
    {
    case PIQ_E8M0_EVEN:
      b += 1u << (22 - mbits);             /* half up at the element's last mantissa bit */
      b &= ~((1u << (23 - mbits)) - 1);
      /* fall through */
    case PIQ_E8M0_FLOOR:
      e = (int) (b >> 23) - 127 - emax;
      break;
    case PIQ_E8M0_CEIL:
      e = (int) (b >> 23) - 127 - emax + ((b & 0x7fffff) != 0);
      break;
    default:
      {
        float r = amax / max;              /* binary32, rounded to nearest */
        if (r == 0.0f)
          return 0;
        e = ilogbf (r);
        e += r != ldexpf (1.0f, e);
      }
    }
  e = e < -127 ? -127 : e > 127 ? 127 : e;
  return (uint8_t) (e + 127);
}

/* ---------------------------------------------------------------------------
 * Block floating point (MSFP): sign and m-bit magnitude (no implicit 1) sharing an
 * 8-bit exponent E per box: value = (−1)^s · mag · 2^(E − 127 − m). E is the box
 * maximum's binary32 biased exponent + 1, one more when rounding the maximum to m
 * bits carries (as the two-pass MSFP16 reference), so no magnitude saturates but
 * by stochastic rounding. */

static inline int
piq_bfp_mbits (int code)
{
  return piq_code_bits[code] - 1;     /* a sign and the magnitude */
}

static inline uint8_t
piq_bfp_exponent (float amax, int mbits)
{
  int e;

  if (!isfinite (amax))
    return 0xff;
  if (amax == 0.0f)
    return 0;
  e = ilogbf (amax) + 1;                   /* amax < 2^e */
  if (nearbyintf (ldexpf (amax, mbits - e)) >= ldexpf (1.0f, mbits))
    e++;
  e += 127;
  return (uint8_t) (e < 0 ? 0 : e > 254 ? 254 : e);
}

/* ---------------------------------------------------------------------------
 * Table formats: bitsandbytes NF4 and FP4, piquant's NF8. */

/* bnb's NF4 levels 1 … 15 (level 0 is −1); X (t, arg) for each, as the thresholds */
#define PIQ_NF4_LEVELS_ABOVE_0(X, arg) \
  X (-0.6961928009986877f, arg) X (-0.5250730514526367f, arg) X (-0.39491748809814453f, arg) \
  X (-0.28444138169288635f, arg) X (-0.18477343022823334f, arg) X (-0.09105003625154495f, arg) \
  X (0.0f, arg) X (0.07958029955625534f, arg) X (0.16093020141124725f, arg) \
  X (0.24611230194568634f, arg) X (0.33791524171829224f, arg) X (0.44070982933044434f, arg) \
  X (0.5626170039176941f, arg) X (0.7229568362236023f, arg) X (1.0f, arg)

/* bnb's midpoints, as the binary32 literals of dQuantizeNF4; X (t, arg) for each, so
 * that the vector bodies can build constant tables from them */
#define PIQ_NF4_THRESHOLDS(X, arg) \
  X (-0.8480964004993439f, arg) X (-0.6106329262256622f, arg) X (-0.4599952697753906f, arg) \
  X (-0.33967943489551544f, arg) X (-0.23460740596055984f, arg) X (-0.13791173323988914f, arg) \
  X (-0.045525018125772476f, arg) X (0.03979014977812767f, arg) X (0.1202552504837513f, arg) \
  X (0.2035212516784668f, arg) X (0.2920137718319893f, arg) X (0.3893125355243683f, arg) \
  X (0.5016634166240692f, arg) X (0.6427869200706482f, arg) X (0.8614784181118011f, arg)
#define PIQ_LIST_ITEM(t, arg) t,   /* an X (t, arg) list as initializers */
static const float piq_nf4_values[16] = { -1.0f, PIQ_NF4_LEVELS_ABOVE_0 (PIQ_LIST_ITEM, 0) };
static const float piq_nf4_thresholds[15] = { PIQ_NF4_THRESHOLDS (PIQ_LIST_ITEM, 0) };

/* bnb's dQuantizeFP4 thresholds on |x|, increasing (its binary32 literals): |x| above
 * r of them is the magnitude of rank r, codes { 0, 1, 6, 7, 4, 5, 2, 3 }[r] */
#define PIQ_FP4_BNB_THRESHOLDS(X, arg) \
  X (0.00260417f, arg) X (0.0859375f, arg) X (0.20833333f, arg) X (0.29166667f, arg) \
  X (0.4166667f, arg) X (0.583333f, arg) X (0.8333333f, arg)
static const float piq_fp4_bnb_thresholds[7] = { PIQ_FP4_BNB_THRESHOLDS (PIQ_LIST_ITEM, 0) };

/* bnb FP4 by code (bit 3 = sign), normalised by 12 */
static const float piq_fp4_bnb_values[16] = {
  0.0f, 0.0625f / 12, 8.0f / 12, 12.0f / 12, 4.0f / 12, 6.0f / 12, 2.0f / 12, 3.0f / 12,
  -0.0f, -0.0625f / 12, -8.0f / 12, -12.0f / 12, -4.0f / 12, -6.0f / 12, -2.0f / 12, -3.0f / 12,
};

#include "piq-nf8-table.h"   /* piq_nf8_values[256], generated by tools/gen-nf8.py */

/* Stochastic choice between two neighbouring levels lo < x < hi. */
static inline int
piq_pick_up (float x, float lo, float hi, float u)
{
  return u < (x - lo) / (hi - lo);
}

/* x is the block-normalised value (x · 1/absmax). NaN → the code of 0. */
static inline unsigned
piq_nf4_encode (float x, int stochastic, float u)
{
  unsigned c = 0;

  if (x != x)
    return 7;
  if (stochastic)
    {
      if (x <= -1.0f) return 0;
      if (x >= 1.0f) return 15;
      while (c < 15 && piq_nf4_values[c + 1] <= x)
        c++;
      if (piq_nf4_values[c] == x)
        return c;
      return c + piq_pick_up (x, piq_nf4_values[c], piq_nf4_values[c + 1], u);
    }
  for (int i = 0; i < 15; i++)             /* ties at a threshold go to the lower code */
    c += x > piq_nf4_thresholds[i];
  return c;
}

/* bnb's dQuantizeFP4 decision tree (its binary32 literals) on |x|, sign in bit 3. */
static inline unsigned
piq_fp4_bnb_encode (float x, int stochastic, float u)
{
  /* magnitudes in increasing order and their codes, for stochastic rounding */
  static const unsigned order[8] = { 0, 1, 6, 7, 4, 5, 2, 3 };
  unsigned sign = x < 0.0f ? 8 : 0;
  float a = fabsf (x);

  if (x != x)
    return 0;
  if (stochastic)
    {
      unsigned i = 0;
      if (a >= 1.0f)
        return sign | 3;
      while (i < 7 && piq_fp4_bnb_values[order[i + 1]] <= a)
        i++;
      if (piq_fp4_bnb_values[order[i]] == a)
        return sign | order[i];
      return sign | order[i + piq_pick_up (a, piq_fp4_bnb_values[order[i]],
                                           piq_fp4_bnb_values[order[i + 1]], u)];
    }
  if (a > piq_fp4_bnb_thresholds[3])
    return sign | (a > piq_fp4_bnb_thresholds[5] ? (a > piq_fp4_bnb_thresholds[6] ? 3u : 2u)
                                                 : (a > piq_fp4_bnb_thresholds[4] ? 5u : 4u));
  return sign | (a > piq_fp4_bnb_thresholds[1] ? (a > piq_fp4_bnb_thresholds[2] ? 7u : 6u)
                                               : (a > piq_fp4_bnb_thresholds[0] ? 1u : 0u));
}

/* NF8: nearest of the 256 increasing levels (ties to the lower code). */
static inline unsigned
piq_nf8_encode (float x, int stochastic, float u)
{
  unsigned lo = 0, hi = 255;

  if (x != x)
    return 127;                            /* piq_nf8_values[127] == 0 */
  if (x <= piq_nf8_values[0])
    return 0;
  if (x >= piq_nf8_values[255])
    return 255;
  while (hi - lo > 1)                      /* values[lo] < x < values[hi] or equal to lo */
    {
      unsigned mid = (lo + hi) / 2;
      if (piq_nf8_values[mid] <= x)
        lo = mid;
      else
        hi = mid;
    }
  if (piq_nf8_values[lo] == x)
    return lo;
  if (stochastic)
    return lo + piq_pick_up (x, piq_nf8_values[lo], piq_nf8_values[hi], u);
  return x - piq_nf8_values[lo] <= piq_nf8_values[hi] - x ? lo : hi;
}

/* ---------------------------------------------------------------------------
 * Code storage. */

/* Codes are a little-endian bit stream: element i at bit i·bits (whole bytes for 8,
 * 16, 32 and 64 bits; up to 9 bits otherwise); bnb's order puts element 2k in the
 * high nibble instead. */
static inline void
piq_put_code (uint8_t *codes, uint64_t i, int bits, int high_first, uint64_t code)
{
  if (bits % 8 == 0)
    {
      memcpy (codes + i * (uint64_t) (bits / 8), &code, (size_t) bits / 8);
      return;
    }
  uint64_t off = i * (uint64_t) bits;
  unsigned sh = (unsigned) (off & 7);
  uint16_t v;

  if (high_first)
    sh = (i & 1) ? 0 : 4;
  code &= (1u << bits) - 1;
  v = (uint16_t) (code << sh);
  codes[off >> 3] |= (uint8_t) v;
  if (v >> 8)
    codes[(off >> 3) + 1] |= (uint8_t) (v >> 8);
}

static inline uint64_t
piq_get_code (const uint8_t *codes, uint64_t i, int bits, int high_first)
{
  uint64_t v = 0;

  if (bits % 8 == 0)
    {
      memcpy (&v, codes + i * (uint64_t) (bits / 8), (size_t) bits / 8);
      return v;
    }
  uint64_t off = i * (uint64_t) bits;
  unsigned sh = high_first ? ((i & 1) ? 0 : 4) : (unsigned) (off & 7);
  v = codes[off >> 3];
  if (sh + bits > 8)
    v |= (uint64_t) codes[(off >> 3) + 1] << 8;
  return (v >> sh) & ((1u << bits) - 1);
}

static inline int64_t
piq_sign_extend (uint64_t v, int bits)
{
  return bits == 64 ? (int64_t) v : (int64_t) (v << (64 - bits)) >> (64 - bits);
}

/* ---------------------------------------------------------------------------
 * The block driver (piq-formats.c). */

typedef enum {
  PIQ_SCALE_F32  = 0,
  PIQ_SCALE_F16  = 1,
  PIQ_SCALE_E8M0 = 2,
} PiqScaleKind;

typedef enum {
  PIQ_BRULE_MIN_MAX = 0,   /* affine integers */
  PIQ_BRULE_ABS_MAX = 1,   /* symmetric: amax maps to the end of the range */
} PiqBlockRule;

struct PiqBlockArgs {
  int          code;           /* PIQ_C_* or −1 for an integer type */
  int          int_index;      /* PIQ_I_* when code < 0 */
  int          bits;           /* storage bits per element (0: self-contained blocks) */
  int64_t      qmin, qmax;     /* integer range */
  size_t       block;          /* elements per block (the whole tensor for per-tensor) */
  PiqScaleKind scale_kind;
  PiqBlockRule rule;           /* integers: affine or symmetric */
  int          include_zero;   /* affine integers: widen [min, max] to include 0 */
  PiqE8m0Rule  e8m0_rule;
  int          saturate;       /* FP8 with float scales: overflow saturates */
  int          high_first;     /* 4-bit codes: element 2k in the high nibble (bnb) */
  int          stochastic;
  uint32_t     key0, key1;
  int          stream;         /* SET outputs may bypass the caches (large calls): same bytes */
  uint64_t     index0;         /* element index of `first` = 0 for stochastic rounding (rows) */
  int          fixed;          /* per tensor: use scale/zero_point below, derive nothing */
  float        scale;
  int64_t      zero_point;
};

/* Bytes of one scale, and of a tensor's codes. */
size_t   piq_block_scale_size (PiqScaleKind kind) __attribute__((visibility ("hidden")));
/* Quantize the blocks that start at element @first (a multiple of a->block and of 8)
 * and cover @n elements of @src (float type @ft, PIQ_F_*), writing codes from byte
 * first·bits/8 of @codes, and one scale (and zero point for affine integers) per
 * block at index first/block of @scales / @zero_points (int32). */
void piq_block_quantize (const PiqBlockArgs *a, int ft, const void *src, uint64_t first,
                         size_t n, uint8_t *codes, uint8_t *scales, int32_t *zero_points)
  __attribute__((visibility ("hidden")));
/* Dequantize the same range into @dst (float type @ft): SET or ADD (@add). */
void piq_block_dequantize (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                           const int32_t *zero_points, uint64_t first, size_t n, int ft,
                           void *dst, int add) __attribute__((visibility ("hidden")));
/* Quantize and dequantize each block without storing codes. */
void piq_block_requantize (const PiqBlockArgs *a, int ft, const void *src, uint64_t first,
                           size_t n, void *dst, int add) __attribute__((visibility ("hidden")));
/* Per-channel scales along an inner axis: @src is [outer, ch, inner] (row-major) and
 * channel c's scale (stored at index c) covers every element whose middle index is c.
 * Scalar, one thread: the statistics of a channel run in element-index order. @st,
 * @lanes (ch · PIQ_SUM_LANES) and @p (ch) are the caller's scratch. */
void piq_block_quantize_channels (const PiqBlockArgs *a, int ft, const void *src, uint64_t outer,
                                  uint64_t ch, uint64_t inner, uint8_t *codes, uint8_t *scales,
                                  int32_t *zero_points, void *scratch)
  __attribute__((visibility ("hidden")));
/* The scratch bytes piq_block_quantize_channels needs for @ch channels. */
size_t piq_block_channels_scratch (uint64_t ch) __attribute__((visibility ("hidden")));
void piq_block_dequantize_channels (const PiqBlockArgs *a, const uint8_t *codes,
                                    const uint8_t *scales, const int32_t *zero_points,
                                    uint64_t outer, uint64_t ch, uint64_t inner, int ft,
                                    void *dst, int add) __attribute__((visibility ("hidden")));
/* Affine integer parameters from a range (shared with per-tensor compute_params):
 * returns the scale (double) and zero point. */
/* The zero point of symmetric integers: 0, or the middle of an unsigned range
 * (uint64's, 2^63, is held to INT64_MAX). */
static inline int64_t
piq_symmetric_zp (__int128 qmin, __int128 qmax)
{
  __int128 mid = (qmax + 1) / 2;
  return qmin < 0 ? 0 : (int64_t) (mid < INT64_MAX ? mid : INT64_MAX);
}

void piq_affine_from_range (double lo, double hi, __int128 qmin, __int128 qmax, int symmetric,
                            int include_zero, double *scale, int64_t *zero_point)
  __attribute__((visibility ("hidden")));
/* Double quantization of f32 block scales (bitsandbytes' compress_statistics): the
 * mean as an f32 offset, then (scale − offset) per chunk of 256 as the nearest code of
 * bnb's 8-bit dynamic map times the chunk's max |scale − offset| (f32). Layout:
 * offset, one f32 per chunk, one code byte per block. */
#define PIQ_DQ_CHUNK 256
static inline uint64_t
piq_dq_chunks (uint64_t n_blocks)
{
  return (n_blocks + PIQ_DQ_CHUNK - 1) / PIQ_DQ_CHUNK;
}
size_t piq_dq_size (uint64_t n_blocks) __attribute__((visibility ("hidden")));
void piq_dq_expand (const uint8_t *in, uint64_t n_blocks, float *scales)
  __attribute__((visibility ("hidden")));
/* By chunks, for the engine's threads: the offset is the binary64 sum of
 * piq_dq_chunk_sum over the chunks in order, divided by n_blocks, rounded to f32
 * (piq_dq_offset); piq_dq_compress_chunks writes the maxima and codes of chunks
 * [c0, c0 + nc) (and, with chunk 0, the offset); piq_dq_expand_chunks reads them. */
double piq_dq_chunk_sum (const float *scales, uint64_t n_blocks, uint64_t c)
  __attribute__((visibility ("hidden")));
float piq_dq_offset (const double *chunk_sums, uint64_t n_blocks)
  __attribute__((visibility ("hidden")));
void piq_dq_compress_chunks (const float *scales, uint64_t n_blocks, float offset, uint64_t c0,
                             uint64_t nc, uint8_t *out) __attribute__((visibility ("hidden")));
void piq_dq_expand_chunks (const uint8_t *in, uint64_t n_blocks, uint64_t c0, uint64_t nc,
                           float *scales) __attribute__((visibility ("hidden")));

/* The float policy's fused GEMV (PiqMmDecodeDotFn): the scalar reference, which the
 * vector bodies also run for what they do not take. */
void piq_block_decode_dot (const PiqMmWeights *w, const float *x, size_t ldx, size_t n,
                           size_t mr, size_t nr, float *out, size_t ldo)
  __attribute__((visibility ("hidden")));

/* Binary vectors: Σ_blocks sa·sb·(agreeing bits − disagreeing bits). */
double piq_binary_dot (const uint8_t *a_bits, const uint8_t *a_scales, const uint8_t *b_bits,
                       const uint8_t *b_scales, uint64_t n, size_t block, PiqScaleKind kind)
  __attribute__((visibility ("hidden")));

/* ---------------------------------------------------------------------------
 * Per-block parameters, shared by the scalar driver and the vector bodies. */

/* Store a block's scale in its kind and return the value stored, which is what the
 * elements are encoded with. */
static inline float
piq_block_put_scale (PiqScaleKind kind, uint8_t *scales, uint64_t b, float s)
{
  switch (kind)
    {
    case PIQ_SCALE_F32:
      memcpy (scales + 4 * b, &s, 4);
      return s;
    case PIQ_SCALE_F16:
      {
        /* saturate: a block range past f16's reach keeps the largest finite scale,
         * and a scale too small for it the smallest subnormal, never 0 or Inf */
        uint16_t h = piq_f32_to_f16 (s);
        if ((h & 0x7fffu) >= 0x7c00u)
          h = 0x7bffu;
        else if ((h & 0x7fffu) == 0)
          h = 0x0001u;
        memcpy (scales + 2 * b, &h, 2);
        return piq_f16_to_f32 (h);
      }
    default:
      return 0.0f;   /* E8M0 is stored by the caller, which knows the exponent */
    }
}

static inline float
piq_block_get_scale (PiqScaleKind kind, const uint8_t *scales, uint64_t b)
{
  float s;
  uint16_t h;

  switch (kind)
    {
    case PIQ_SCALE_F32:
      memcpy (&s, scales + 4 * b, 4);
      return s;
    case PIQ_SCALE_F16:
      memcpy (&h, scales + 2 * b, 2);
      return piq_f16_to_f32 (h);
    default:
      return piq_e8m0_decode (scales[b]);
    }
}

static inline int64_t
piq_block_symmetric_zp (const PiqBlockArgs *a)
{
  return piq_symmetric_zp (a->qmin, a->qmax);
}

static inline int
piq_block_is_bfp (const PiqBlockArgs *a)
{
  return a->code >= 0 && piq_code_family[a->code] == PIQ_FAMILY_BFP;
}

/* What one block is encoded with. */
typedef struct {
  int     shift;      /* BFP: elements are mag · 2^shift */
  float   scale;      /* multiplies a decoded element */
  float   inv;        /* multiplies an element before encoding */
  int64_t zp;
  int     nan_scale;  /* MX block with a non-finite amax: elements are 0, values NaN */
} PiqBlockP;

/* The MX integer element: q · 2^-(bits-2), |q| ≤ 2^(bits-1) − 1 (MXINT8: 127/64). */
static inline int
piq_mx_int_frac_bits (const PiqBlockArgs *a)
{
  int bits = a->bits;
  return bits - 2;
}

/* Σ|x| of a block (binary's scale) in a fixed order that vector code reproduces:
 * element i into binary32 lane i mod 16, then lane k += lane k + h for h = 8, 4, 2, 1. */
#define PIQ_SUM_LANES 16

static inline float
piq_sum_lanes (float *lanes)
{
  for (int h = PIQ_SUM_LANES / 2; h > 0; h /= 2)
    for (int k = 0; k < h; k++)
      lanes[k] = lanes[k] + lanes[k + h];
  return lanes[0];
}

/* The matrix multiply's tile gives every NaN as the default quiet NaN: which NaN a
 * fused multiply-add of two NaNs returns follows the instruction's operand order,
 * which the compiler picks (a · b = b · a), so the bits would differ by table. */
static inline float
piq_mm_canonical (float v)
{
  return v != v ? __builtin_nanf ("") : v;
}

/* A minifloat code times a NaN scale: the scale's NaN, quieted, for every code.
 * FP8's NaN codes times a NaN scale could give either NaN (IEEE 754 leaves it
 * open, and the compiler picks the operands' order), so the scalar reference and
 * the vector bodies both take it from the scale, once per block. */
static inline float
piq_nan_scale_product (float scale)
{
  uint32_t u;

  memcpy (&u, &scale, sizeof u);
  u |= 0x00400000u;
  memcpy (&scale, &u, sizeof u);
  return scale;
}

typedef struct {
  float lo, hi;        /* of the finite values; +Inf/−Inf when none */
  float amax, sum_abs; /* of the finite values */
  int   non_finite;
} PiqBlockStats;

#define PIQ_BLOCK_STATS_INIT { INFINITY, -INFINITY, 0.0f, 0.0f, 0 }

/* Element i of a block into its statistics; lanes: the partial sums of
 * piq_sum_lanes, or NULL where Σ|x| is not needed. */
static inline void
piq_block_stats_add (PiqBlockStats *st, float *lanes, size_t i, float x)
{
  if (!isfinite (x))
    {
      st->non_finite = 1;
      return;
    }
  st->lo = x < st->lo ? x : st->lo;
  st->hi = x > st->hi ? x : st->hi;
  st->amax = fabsf (x) > st->amax ? fabsf (x) : st->amax;
  if (lanes != NULL)
    lanes[i % PIQ_SUM_LANES] += fabsf (x);
}

/* A stored block's parameters, for decoding (inlined: once per block of the vector
 * decoders' loops). */
static inline __attribute__((always_inline)) void
piq_block_load_params (const PiqBlockArgs *a, const uint8_t *scales, const int32_t *zero_points,
                       uint64_t b, PiqBlockP *p)
{
  p->shift = 0;
  p->inv = 0.0f;
  p->nan_scale = 0;
  p->zp = 0;
  if (a->fixed)
    {
      p->scale = a->scale;
      p->zp = a->zero_point;
      return;
    }
  p->scale = piq_block_get_scale (a->scale_kind, scales, b);
  p->nan_scale = a->scale_kind == PIQ_SCALE_E8M0 && scales[b] == 0xff;
  if (piq_block_is_bfp (a))
    p->shift = (int) scales[b] - 127 - piq_bfp_mbits (a->code);
  if (a->code < 0 && a->scale_kind == PIQ_SCALE_E8M0 && !p->nan_scale)
    p->scale = piq_pow2f ((int) scales[b] - 127 - piq_mx_int_frac_bits (a));
  if (zero_points != NULL)
    p->zp = piq_ld_i32 (zero_points, b);
  else if (a->code < 0 && a->scale_kind != PIQ_SCALE_E8M0)
    p->zp = piq_block_symmetric_zp (a);   /* not stored: implied by the type */
}

static inline void
piq_block_params_fixed (const PiqBlockArgs *a, PiqBlockP *p)
{
  p->shift = 0;
  p->nan_scale = 0;
  p->scale = a->scale;
  p->inv = 1.0f / a->scale;
  p->zp = a->zero_point;
}

/* A block's parameters from its statistics (the finite values' min, max, max |x|
 * and Σ|x|, and whether any value is NaN or ±Inf): the scale is rounded to its
 * storage and stored at index b, and the elements are encoded with the stored
 * value. Shared by the scalar driver and the vector bodies, so both derive the
 * same scales. */
static inline __attribute__((always_inline)) void
piq_block_params (const PiqBlockArgs *a, const PiqBlockStats *st, size_t n, uint64_t b,
                  uint8_t *scales, int32_t *zero_points, PiqBlockP *p)
{
  float lo = st->lo, hi = st->hi;

  p->inv = 0.0f;
  p->zp = 0;
  p->nan_scale = 0;
  p->shift = 0;
  if (lo > hi)
    lo = hi = 0.0f;   /* no finite value */

  if (a->scale_kind == PIQ_SCALE_E8M0 && piq_block_is_bfp (a))
    {
      uint8_t e = piq_bfp_exponent (st->non_finite ? NAN : st->amax, piq_bfp_mbits (a->code));
      scales[b] = e;
      p->nan_scale = e == 0xff;
      p->shift = (int) e - 127 - piq_bfp_mbits (a->code);
      return;
    }
  if (a->scale_kind == PIQ_SCALE_E8M0)
    {
      uint8_t e;
      if (a->code < 0)
        {
          int fb = piq_mx_int_frac_bits (a);
          e = piq_e8m0_from_amax (st->non_finite ? NAN : st->amax, a->e8m0_rule, 0, fb,
                                  (float) a->qmax * piq_pow2f (-fb));
          p->scale = e == 0xff ? NAN : piq_pow2f ((int) e - 127 - fb);
        }
      else
        {
          const PiqMinifloat *f = &piq_minifloats[a->code];
          e = piq_e8m0_from_amax (st->non_finite ? NAN : st->amax, a->e8m0_rule, f->emax, f->mbits, f->max);
          p->scale = piq_e8m0_decode (e);
        }
      scales[b] = e;
      p->nan_scale = e == 0xff;
      /* 1 / scale: a power of two, built from bits (the division's exact result; it
       * overflows to +Inf, as the division does, only for MX integers at E < fb) */
      {
        int k = 127 - (int) e + (a->code < 0 ? piq_mx_int_frac_bits (a) : 0);
        p->inv = p->nan_scale ? 0.0f : k <= 127 ? piq_pow2f (k) : INFINITY;
      }
      return;
    }

  if (a->code < 0)
    {
      double s;
      int64_t zp;
      piq_affine_from_range (lo, hi, a->qmin, a->qmax, a->rule == PIQ_BRULE_ABS_MAX,
                             a->include_zero, &s, &zp);
      p->scale = piq_block_put_scale (a->scale_kind, scales, b, (float) s);
      p->inv = 1.0f / p->scale;
      p->zp = zp;
      if (zero_points != NULL)
        piq_st_i32 (zero_points, b, (int32_t) zp);
      return;
    }

  switch (a->code)
    {
    case PIQ_C_BINARY:
      p->scale = piq_block_put_scale (a->scale_kind, scales, b, n ? st->sum_abs / (float) n : 0.0f);
      break;
    case PIQ_C_NF4: case PIQ_C_FP4_BNB: case PIQ_C_NF8:
      p->scale = piq_block_put_scale (a->scale_kind, scales, b, st->amax);
      break;
    default:   /* minifloat with a float scale: amax maps to the format's max */
      p->scale = piq_block_put_scale (a->scale_kind, scales, b,
                            st->amax > 0.0f ? st->amax / piq_minifloats[a->code].max : 1.0f);
    }
  p->inv = p->scale > 0.0f && isfinite (p->scale) ? 1.0f / p->scale : 0.0f;
}



/* piq-formats.c: the scalar reference of the block formats
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One driver for every granularity and code format: per block it derives the scale
 * (and zero point) from the block's finite values, rounds it to the scale's storage
 * type, and encodes each element with the stored value, so dequantization sees
 * exactly what quantization used. Per-tensor calls (a->fixed) use the given scale.
 * Everything is binary32 (docs/formats.md has each rule and its source).
 */
#include "piq-formats-private.h"

#include <string.h>

#define PIQ_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PIQ_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ggml's self-contained blocks: 32 elements after an f16 scale. */
#define GGML_QK 32
static size_t
ggml_block_bytes (int code)
{
  return code == PIQ_C_Q8_0 ? 2 + GGML_QK : 2 + GGML_QK / 2;
}

size_t
piq_block_scale_size (PiqScaleKind kind)
{
  return kind == PIQ_SCALE_F32 ? 4 : kind == PIQ_SCALE_F16 ? 2 : 1;
}

/* Store a block's scale in its kind and return the value stored, which is what the
 * elements are encoded with. */
static float
put_scale (PiqScaleKind kind, uint8_t *scales, uint64_t b, float s)
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

static float
get_scale (PiqScaleKind kind, const uint8_t *scales, uint64_t b)
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

static inline float
load_x (const void *p, size_t i, int ft)
{
  return ft == PIQ_F_F64 ? (float) ((const double *) p)[i] : piq_load_f (p, i, ft);
}

static inline void
store_y (void *p, size_t i, float v, int ft, int add)
{
  if (ft == PIQ_F_F64)
    {
      double *d = p;
      d[i] = add ? d[i] + (double) v : (double) v;
    }
  else
    piq_store_f (p, i, add ? load_x (p, i, ft) + v : v, ft);
}

void
piq_affine_from_range (double lo, double hi, int64_t qmin, int64_t qmax, int symmetric,
                       int include_zero, double *scale, int64_t *zero_point)
{
  /* binary32 arithmetic throughout, as torch's observers (torch.finfo(float32).eps) */
  const double eps = 0x1p-23;
  double range = (float) (double) ((__int128) qmax - qmin);
  __int128 zp;

  if (symmetric)
    {
      double a = PIQ_MAX (fabs (lo), fabs (hi));
      *scale = PIQ_MAX ((double) (float) (a / (double) (float) (range / 2)), eps);
      /* uint64's middle, 2^63, does not fit an int64 zero point */
      zp = qmin < 0 ? 0 : PIQ_MIN (((__int128) (uint64_t) qmax + 1) / 2, (__int128) INT64_MAX);
    }
  else
    {
      /* widen to include 0 as torch's observers do; a constant range always widens,
       * so its value stays exactly representable */
      if (include_zero || lo == hi)
        {
          lo = PIQ_MIN (lo, 0.0);
          hi = PIQ_MAX (hi, 0.0);
        }
      *scale = PIQ_MAX ((double) (float) ((double) (float) (hi - lo) / range), eps);
      zp = qmin - (__int128) nearbyint ((double) (float) (lo / *scale));
      zp = zp < qmin ? qmin : zp > qmax ? qmax : zp;
    }
  *zero_point = (int64_t) zp;
}

/* The zero point of symmetric integers: 0, or the middle of an unsigned range (as
 * piq_affine_from_range). */
static int64_t
symmetric_zero_point (const PiqBlockArgs *a)
{
  return a->qmin < 0 ? 0 : (int64_t) PIQ_MIN (((__int128) (uint64_t) a->qmax + 1) / 2,
                                               (__int128) INT64_MAX);
}

static inline int
is_bfp (const PiqBlockArgs *a)
{
  return a->code >= PIQ_C_BFP2 && a->code <= PIQ_C_BFP8;
}

/* What one block is encoded with. */
typedef struct {
  int     shift;      /* BFP: elements are mag · 2^shift */
  float   scale;      /* multiplies a decoded element */
  float   inv;        /* multiplies an element before encoding */
  int64_t zp;
  int     nan_scale;  /* MX block with a non-finite amax: elements are 0, values NaN */
} BlockP;

/* The MX integer element: q · 2^-(bits-2), |q| ≤ 2^(bits-1) − 1 (MXINT8: 127/64). */
static int
mx_int_frac_bits (const PiqBlockArgs *a)
{
  int bits = a->bits;
  return bits - 2;
}

static void
derive (const PiqBlockArgs *a, const void *src, int ft, size_t n, uint64_t b,
        uint8_t *scales, int32_t *zero_points, BlockP *p)
{
  float lo = INFINITY, hi = -INFINITY, amax = 0.0f, sum_abs = 0.0f;
  int non_finite = 0;

  p->zp = 0;
  p->nan_scale = 0;
  p->shift = 0;
  if (a->fixed)
    {
      p->scale = a->scale;
      p->inv = 1.0f / a->scale;
      p->zp = a->zero_point;
      return;
    }
  for (size_t i = 0; i < n; i++)
    {
      float x = load_x (src, i, ft);
      if (!isfinite (x))
        {
          non_finite = 1;
          continue;
        }
      lo = PIQ_MIN (lo, x);
      hi = PIQ_MAX (hi, x);
      amax = PIQ_MAX (amax, fabsf (x));
      sum_abs += fabsf (x);
    }
  if (lo > hi)
    lo = hi = 0.0f;   /* no finite value */

  if (a->scale_kind == PIQ_SCALE_E8M0 && is_bfp (a))
    {
      uint8_t e = piq_bfp_exponent (non_finite ? NAN : amax, piq_bfp_mbits (a->code));
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
          int fb = mx_int_frac_bits (a);
          e = piq_e8m0_from_amax (non_finite ? NAN : amax, a->e8m0_rule, 0, fb,
                                  ldexpf ((float) a->qmax, -fb));
          p->scale = ldexpf (piq_e8m0_decode (e), -fb);
        }
      else
        {
          const PiqMinifloat *f = &piq_minifloats[a->code];
          e = piq_e8m0_from_amax (non_finite ? NAN : amax, a->e8m0_rule, f->emax, f->mbits, f->max);
          p->scale = piq_e8m0_decode (e);
        }
      scales[b] = e;
      p->nan_scale = e == 0xff;
      p->inv = p->nan_scale ? 0.0f : 1.0f / p->scale;   /* exact: a power of two */
      return;
    }

  if (a->code < 0)
    {
      double s;
      int64_t zp;
      piq_affine_from_range (lo, hi, a->qmin, a->qmax, a->rule == PIQ_BRULE_ABS_MAX,
                             a->include_zero, &s, &zp);
      p->scale = put_scale (a->scale_kind, scales, b, (float) s);
      p->inv = 1.0f / p->scale;
      p->zp = zp;
      if (zero_points != NULL)
        zero_points[b] = (int32_t) zp;
      return;
    }

  switch (a->code)
    {
    case PIQ_C_BINARY:
      p->scale = put_scale (a->scale_kind, scales, b, n ? sum_abs / (float) n : 0.0f);
      break;
    case PIQ_C_NF4: case PIQ_C_FP4_BNB: case PIQ_C_NF8:
      p->scale = put_scale (a->scale_kind, scales, b, amax);
      break;
    default:   /* minifloat with a float scale: amax maps to the format's max */
      p->scale = put_scale (a->scale_kind, scales, b,
                            amax > 0.0f ? amax / piq_minifloats[a->code].max : 1.0f);
    }
  p->inv = p->scale > 0.0f && isfinite (p->scale) ? 1.0f / p->scale : 0.0f;
}

static inline float
uniform (const PiqBlockArgs *a, uint64_t index)
{
  return a->stochastic ? piq_uniform24 (piq_hash (a->key0, a->key1, index)) : 0.0f;
}

static inline float
round_int (float v, int stochastic, float u)
{
  float fl;
  if (!stochastic)
    return nearbyintf (v);
  fl = floorf (v);
  return u < v - fl ? fl + 1.0f : fl;
}

/* One element's code. */
static inline uint64_t
encode (const PiqBlockArgs *a, const BlockP *p, float x, uint64_t index)
{
  float u = uniform (a, index);

  if (p->nan_scale)
    return 0;
  if (a->code < 0)
    {
      float r = round_int (x * p->inv, a->stochastic, u);
      int64_t lo = a->qmin, hi = a->qmax;
      __int128 q;
      if (a->scale_kind == PIQ_SCALE_E8M0)
        lo = -hi;                          /* MX integers are symmetric */
      if (r != r)
        q = p->zp;
      else if (r >= 0x1p100f)
        q = hi;
      else if (r <= -0x1p100f)
        q = lo;
      else
        q = (__int128) r + p->zp;
      q = q < lo ? lo : q > hi ? hi : q;
      return (uint64_t) (int64_t) q;
    }
  if (is_bfp (a))
    {
      /* per tensor: x / scale; per box: x · 2^−shift, exact */
      int m = piq_bfp_mbits (a->code);
      float v = a->fixed ? x * p->inv : ldexpf (x, -p->shift);
      float r = fabsf (round_int (v, a->stochastic, u));
      float top = ldexpf (1.0f, m) - 1.0f;
      unsigned mag = r != r ? 0u : (unsigned) (r > top ? top : r);
      return (uint64_t) (signbit (x) ? 1u << m : 0u) | mag;
    }
  switch (a->code)
    {
    case PIQ_C_NF4:
      return piq_nf4_encode (x * p->inv, a->stochastic, u);
    case PIQ_C_FP4_BNB:
      return piq_fp4_bnb_encode (x * p->inv, a->stochastic, u);
    case PIQ_C_NF8:
      return piq_nf8_encode (x * p->inv, a->stochastic, u);
    case PIQ_C_BINARY:
      {
        if (x != x)
          return 1;                        /* NaN: as +0 */
        if (!a->stochastic || p->inv == 0.0f)
          return !signbit (x) || x == 0.0f;
        /* P(+1) = clamp((x/s + 1)/2, 0, 1): unbiased for |x| ≤ s */
        float pr = (x * p->inv + 1.0f) * 0.5f;
        return u < pr;
      }
    default:
      {
        /* MX elements always saturate; FP8 with float scales follows a->saturate */
        int sat = a->scale_kind == PIQ_SCALE_E8M0 || a->saturate;
        return piq_minifloat_encode (&piq_minifloats[a->code], x * p->inv, sat, a->stochastic, u);
      }
    }
}

static inline float
decode (const PiqBlockArgs *a, const BlockP *p, uint64_t code)
{
  if (p->nan_scale)
    return NAN;
  if (a->code < 0)
    {
      __int128 q = a->qmin < 0 ? (__int128) piq_sign_extend (code, a->bits) : (__int128) code;
      return (float) (q - p->zp) * p->scale;
    }
  if (is_bfp (a))
    {
      int m = piq_bfp_mbits (a->code);
      float mag = (float) (code & ((1u << m) - 1));
      float v = a->fixed ? mag * p->scale : ldexpf (mag, p->shift);
      return (code >> m) & 1 ? -v : v;
    }
  switch (a->code)
    {
    case PIQ_C_NF4:     return piq_nf4_values[code] * p->scale;
    case PIQ_C_FP4_BNB: return piq_fp4_bnb_values[code] * p->scale;
    case PIQ_C_NF8:     return piq_nf8_values[code] * p->scale;
    case PIQ_C_BINARY:  return code ? p->scale : -p->scale;
    default:            return piq_minifloat_decode (&piq_minifloats[a->code], (unsigned) code) * p->scale;
    }
}

/* --- ggml Q8_0 and Q4_0 (src/ggml-quants.c reference rules) --------------------- */

static void
ggml_quantize_block (const PiqBlockArgs *a, const void *src, int ft, size_t n,
                     uint64_t index, uint8_t *out)
{
  float x[GGML_QK] = { 0 }, amax = 0.0f, max = 0.0f, d, id;
  uint16_t dh;

  for (size_t j = 0; j < n; j++)
    {
      x[j] = load_x (src, j, ft);
      if (isfinite (x[j]) && amax < fabsf (x[j]))   /* first largest wins, as ggml */
        {
          amax = fabsf (x[j]);
          max = x[j];
        }
    }
  if (a->code == PIQ_C_Q8_0)
    {
      d = amax / 127.0f;
      id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int j = 0; j < GGML_QK; j++)
        {
          float v = x[j] * id, r;
          if (v != v)
            r = 0.0f;
          else if (a->stochastic)
            r = round_int (v, 1, uniform (a, index + (uint64_t) j));
          else
            r = roundf (v);                /* ties away from zero, as ggml */
          out[2 + j] = (uint8_t) (int8_t) PIQ_MAX (-127.0f, PIQ_MIN (127.0f, r));
        }
    }
  else
    {
      d = max / -8.0f;
      id = d != 0.0f ? 1.0f / d : 0.0f;
      memset (out + 2, 0, GGML_QK / 2);
      for (int j = 0; j < GGML_QK; j++)
        {
          float v = x[j] * id, r;
          if (v != v)
            r = 8.0f;
          else if (a->stochastic)
            r = round_int (v + 8.0f, 1, uniform (a, index + (uint64_t) j));
          else
            r = truncf (v + 8.5f);         /* ggml: (int8_t)(x·id + 8.5f) */
          r = PIQ_MAX (0.0f, PIQ_MIN (15.0f, r));
          out[2 + j % 16] |= (uint8_t) ((unsigned) r << (j < 16 ? 0 : 4));
        }
    }
  dh = piq_f32_to_f16 (d);
  memcpy (out, &dh, 2);
}

static float
ggml_decode (int code, const uint8_t *blk, int j)
{
  uint16_t dh;
  memcpy (&dh, blk, 2);
  float d = piq_f16_to_f32 (dh);
  if (code == PIQ_C_Q8_0)
    return (float) (int8_t) blk[2 + j] * d;
  return (float) (((blk[2 + j % 16] >> (j < 16 ? 0 : 4)) & 15) - 8) * d;
}

/* --- the driver -------------------------------------------------------------------- */

void
piq_block_quantize (const PiqBlockArgs *a, int ft, const void *src, uint64_t first,
                    size_t n, uint8_t *codes, uint8_t *scales, int32_t *zero_points)
{
  size_t esz = ft == PIQ_F_F64 ? 8 : ft == PIQ_F_F32 ? 4 : 2;
  const uint8_t *s = src;

  if (a->bits == 0)
    {
      size_t bb = ggml_block_bytes (a->code);
      for (size_t b0 = 0; b0 < n; b0 += GGML_QK)
        ggml_quantize_block (a, s + b0 * esz, ft, PIQ_MIN ((size_t) GGML_QK, n - b0),
                             first + b0, codes + (first + b0) / GGML_QK * bb);
      return;
    }
  if (a->bits % 8 != 0)   /* whole bytes: first is a multiple of 8; unused tail bits stay 0 */
    memset (codes + first * (uint64_t) a->bits / 8, 0, (n * (size_t) a->bits + 7) / 8);
  for (size_t b0 = 0; b0 < n; b0 += a->block)
    {
      size_t m = PIQ_MIN (a->block, n - b0);
      uint64_t b = (first + b0) / a->block;
      BlockP p;

      derive (a, s + b0 * esz, ft, m, b, scales, zero_points, &p);
      for (size_t i = 0; i < m; i++)
        {
          uint64_t at = first + b0 + i;
          piq_put_code (codes, at, a->bits, a->high_first,
                    encode (a, &p, load_x (s, b0 + i, ft), at));
        }
    }
}

void
piq_block_dequantize (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                      const int32_t *zero_points, uint64_t first, size_t n, int ft,
                      void *dst, int add)
{
  size_t esz = ft == PIQ_F_F64 ? 8 : ft == PIQ_F_F32 ? 4 : 2;
  uint8_t *d = dst;

  if (a->bits == 0)
    {
      size_t bb = ggml_block_bytes (a->code);
      for (size_t i = 0; i < n; i++)
        {
          uint64_t at = first + i;
          store_y (d, i, ggml_decode (a->code, codes + at / GGML_QK * bb, (int) (at % GGML_QK)),
                   ft, add);
        }
      return;
    }
  for (size_t b0 = 0; b0 < n; b0 += a->block)
    {
      size_t m = PIQ_MIN (a->block, n - b0);
      uint64_t b = (first + b0) / a->block;
      BlockP p = { 0 };

      if (a->fixed)
        {
          p.scale = a->scale;
          p.zp = a->zero_point;
        }
      else
        {
          p.scale = get_scale (a->scale_kind, scales, b);
          p.nan_scale = a->scale_kind == PIQ_SCALE_E8M0 && scales[b] == 0xff;
          if (is_bfp (a))
            p.shift = (int) scales[b] - 127 - piq_bfp_mbits (a->code);
          if (a->code < 0 && a->scale_kind == PIQ_SCALE_E8M0)
            p.scale = ldexpf (p.scale, -mx_int_frac_bits (a));
          if (zero_points != NULL)
            p.zp = zero_points[b];
          else if (a->code < 0 && a->scale_kind != PIQ_SCALE_E8M0)
            p.zp = symmetric_zero_point (a);   /* not stored: implied by the type */
        }
      for (size_t i = 0; i < m; i++)
        store_y (d + (b0 + i) * esz, 0,
                 decode (a, &p, piq_get_code (codes, first + b0 + i, a->bits, a->high_first)), ft, add);
    }
}

void
piq_block_requantize (const PiqBlockArgs *a, int ft, const void *src, uint64_t first,
                      size_t n, void *dst, int add)
{
  size_t esz = ft == PIQ_F_F64 ? 8 : ft == PIQ_F_F32 ? 4 : 2;
  const uint8_t *s = src;
  uint8_t *d = dst;

  if (a->bits == 0)
    {
      uint8_t blk[2 + GGML_QK];
      for (size_t b0 = 0; b0 < n; b0 += GGML_QK)
        {
          size_t m = PIQ_MIN ((size_t) GGML_QK, n - b0);
          ggml_quantize_block (a, s + b0 * esz, ft, m, first + b0, blk);
          for (size_t j = 0; j < m; j++)
            store_y (d + (b0 + j) * esz, 0, ggml_decode (a->code, blk, (int) j), ft, add);
        }
      return;
    }
  for (size_t b0 = 0; b0 < n; b0 += a->block)
    {
      size_t m = PIQ_MIN (a->block, n - b0);
      uint8_t scale[4];
      int32_t zp;
      BlockP p;

      /* the scale goes through its storage type as in piq_block_quantize */
      derive (a, s + b0 * esz, ft, m, 0, scale, &zp, &p);
      for (size_t i = 0; i < m; i++)
        {
          uint64_t at = first + b0 + i;
          uint64_t code = encode (a, &p, load_x (s, b0 + i, ft), at);
          /* decode reads the low a->bits bits, as a stored code is read back */
          store_y (d + (b0 + i) * esz, 0, decode (a, &p, code), ft, add);
        }
    }
}

double
piq_binary_dot (const uint8_t *a_bits, const uint8_t *a_scales, const uint8_t *b_bits,
                const uint8_t *b_scales, uint64_t n, size_t block, PiqScaleKind kind)
{
  double total = 0.0;

  for (uint64_t b0 = 0; b0 < n; b0 += block)
    {
      uint64_t m = PIQ_MIN ((uint64_t) block, n - b0), agree = 0, i = 0;

      /* whole bytes with a popcount of the XNOR, then the bits of partial bytes */
      for (; i < m && ((b0 + i) & 7); i++)
        agree += piq_get_code (a_bits, b0 + i, 1, 0) == piq_get_code (b_bits, b0 + i, 1, 0);
      for (; i + 64 <= m; i += 64)
        {
          uint64_t x, y;
          memcpy (&x, a_bits + (b0 + i) / 8, 8);
          memcpy (&y, b_bits + (b0 + i) / 8, 8);
          agree += (uint64_t) __builtin_popcountll (~(x ^ y));
        }
      for (; i + 8 <= m; i += 8)
        agree += (uint64_t) __builtin_popcount ((uint8_t) ~(a_bits[(b0 + i) / 8] ^ b_bits[(b0 + i) / 8]));
      for (; i < m; i++)
        agree += piq_get_code (a_bits, b0 + i, 1, 0) == piq_get_code (b_bits, b0 + i, 1, 0);
      total += (double) get_scale (kind, a_scales, b0 / block) *
               (double) get_scale (kind, b_scales, b0 / block) *
               (double) ((int64_t) (2 * agree) - (int64_t) m);
    }
  return total;
}

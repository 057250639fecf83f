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

#include <pthread.h>
#include <string.h>

#include "piq-dynamic-map-table.h"

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

static inline float
load_x (const void *p, size_t i, int ft)
{
  return ft == PIQ_F_F64 ? piq_f64_to_f32 (piq_ld_f64 (p, i)) : piq_load_f (p, i, ft);
}

/* ADD keeps a NaN already in the output (quieted, as y + y does) whatever v is:
 * which NaN operand an addition returns is not fixed by IEEE 754, and compilers
 * swap the operands of a commutative add, so only this rule gives every path
 * the same payload. */
static inline void
store_y (void *p, size_t i, float v, int ft, int add)
{
  if (ft == PIQ_F_F64)
    {
      double d = add ? piq_ld_f64 (p, i) : 0.0;
      piq_st_f64 (p, i, !add ? (double) v : isnan (d) ? d + d : d + (double) v);
    }
  else
    {
      float y = add ? load_x (p, i, ft) : 0.0f;
      piq_store_f (p, i, !add ? v : isnan (y) ? y + y : y + v, ft);
    }
}

void
piq_affine_from_range (double lo, double hi, __int128 qmin, __int128 qmax, int symmetric,
                       int include_zero, double *scale, int64_t *zero_point)
{
  /* binary32 arithmetic throughout, as torch's observers (torch.finfo(float32).eps) */
  const double eps = 0x1p-23;
  double range = (float) (double) (qmax - qmin);
  __int128 zp, zp_max = PIQ_MIN (qmax, (__int128) INT64_MAX);

  if (symmetric)
    {
      double a = PIQ_MAX (fabs (lo), fabs (hi));
      *scale = PIQ_MAX ((double) (float) (a / (double) (float) (range / 2)), eps);
      zp = piq_symmetric_zp (qmin, qmax);
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
      /* lo / scale is NaN or ±Inf only with a non-finite scale (an infinite end, or a
       * range past binary32), which callers reject; converting it would be undefined:
       * NaN counts as 0 and the infinities clamp like any value past the range. */
      double r = nearbyint ((double) (float) (lo / *scale));
      if (r != r)
        r = 0.0;
      r = r < -0x1p100 ? -0x1p100 : r > 0x1p100 ? 0x1p100 : r;
      zp = qmin - (__int128) r;
      zp = zp < qmin ? qmin : zp > zp_max ? zp_max : zp;
    }
  *zero_point = (int64_t) zp;
}

static void
derive (const PiqBlockArgs *a, const void *src, int ft, size_t n, uint64_t b,
        uint8_t *scales, int32_t *zero_points, PiqBlockP *p)
{
  PiqBlockStats st = PIQ_BLOCK_STATS_INIT;
  float lanes[PIQ_SUM_LANES] = { 0 };

  if (a->fixed)
    {
      piq_block_params_fixed (a, p);
      return;
    }
  for (size_t i = 0; i < n; i++)
    piq_block_stats_add (&st, lanes, i, load_x (src, i, ft));
  st.sum_abs = piq_sum_lanes (lanes);
  piq_block_params (a, &st, n, b, scales, zero_points, p);
}

static inline float
uniform (const PiqBlockArgs *a, uint64_t index)
{
  return a->stochastic ? piq_uniform24 (piq_hash (a->key0, a->key1, a->index0 + index)) : 0.0f;
}


/* One element's code. */
static inline uint64_t
encode (const PiqBlockArgs *a, const PiqBlockP *p, float x, uint64_t index)
{
  float u = uniform (a, index);

  if (p->nan_scale)
    return 0;
  if (a->code < 0)
    {
      float r = piq_round_u (x * p->inv, a->stochastic, u);
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
  if (piq_block_is_bfp (a))
    {
      /* per tensor: x / scale; per box: x · 2^−shift, exact */
      int m = piq_bfp_mbits (a->code);
      float v = a->fixed ? x * p->inv : ldexpf (x, -p->shift);
      float r = fabsf (piq_round_u (v, a->stochastic, u));
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
decode (const PiqBlockArgs *a, const PiqBlockP *p, uint64_t code)
{
  if (p->nan_scale)
    return NAN;
  if (a->code < 0)
    {
      __int128 q = a->qmin < 0 ? (__int128) piq_sign_extend (code, a->bits) : (__int128) code;
      return (float) (q - p->zp) * p->scale;
    }
  if (piq_block_is_bfp (a))
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
    default:
      if (isnan (p->scale))
        return piq_nan_scale_product (p->scale);
      return piq_minifloat_decode (&piq_minifloats[a->code], (unsigned) code) * p->scale;
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
            r = piq_round_u (v, 1, uniform (a, index + (uint64_t) j));
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
            r = piq_round_u (v + 8.0f, 1, uniform (a, index + (uint64_t) j));
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
      PiqBlockP p;

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
      PiqBlockP p;

      piq_block_load_params (a, scales, zero_points, b, &p);
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
      PiqBlockP p;

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

size_t
piq_block_channels_scratch (uint64_t ch)
{
  return (size_t) ch * (sizeof (PiqBlockStats) + sizeof (PiqBlockP) + PIQ_SUM_LANES * sizeof (float));
}

void
piq_block_quantize_channels (const PiqBlockArgs *a, int ft, const void *src, uint64_t outer,
                             uint64_t ch, uint64_t inner, uint8_t *codes, uint8_t *scales,
                             int32_t *zero_points, void *scratch)
{
  PiqBlockP *p = scratch;
  PiqBlockStats *st = (PiqBlockStats *) (p + ch);
  float *lanes = (float *) (st + ch);
  uint64_t n = outer * ch * inner, count = outer * inner;

  for (uint64_t c = 0; c < ch; c++)
    {
      st[c] = (PiqBlockStats) PIQ_BLOCK_STATS_INIT;
      memset (lanes + c * PIQ_SUM_LANES, 0, PIQ_SUM_LANES * sizeof (float));
    }
  /* a channel's elements in index order: its position counts o·inner + i */
  for (uint64_t o = 0; o < outer; o++)
    for (uint64_t c = 0; c < ch; c++)
      for (uint64_t i = 0; i < inner; i++)
        piq_block_stats_add (&st[c], lanes + c * PIQ_SUM_LANES, (size_t) (o * inner + i),
                             load_x (src, (size_t) ((o * ch + c) * inner + i), ft));
  for (uint64_t c = 0; c < ch; c++)
    {
      st[c].sum_abs = piq_sum_lanes (lanes + c * PIQ_SUM_LANES);
      piq_block_params (a, &st[c], (size_t) count, c, scales, zero_points, &p[c]);
    }
  if (a->bits % 8 != 0)
    memset (codes, 0, (size_t) ((n * (uint64_t) a->bits + 7) / 8));
  for (uint64_t at = 0; at < n; at++)
    piq_put_code (codes, at, a->bits, a->high_first,
                  encode (a, &p[(at / inner) % ch], load_x (src, (size_t) at, ft), at));
}

void
piq_block_dequantize_channels (const PiqBlockArgs *a, const uint8_t *codes, const uint8_t *scales,
                               const int32_t *zero_points, uint64_t outer, uint64_t ch,
                               uint64_t inner, int ft, void *dst, int add)
{
  size_t esz = ft == PIQ_F_F64 ? 8 : ft == PIQ_F_F32 ? 4 : 2;
  uint8_t *d = dst;
  uint64_t n = outer * ch * inner;

  for (uint64_t at = 0; at < n; at++)
    {
      PiqBlockP p;
      piq_block_load_params (a, scales, zero_points, (at / inner) % ch, &p);
      store_y (d + at * esz, 0, decode (a, &p, piq_get_code (codes, at, a->bits, a->high_first)),
               ft, add);
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
      total += (double) piq_block_get_scale (kind, a_scales, b0 / block) *
               (double) piq_block_get_scale (kind, b_scales, b0 / block) *
               (double) ((int64_t) (2 * agree) - (int64_t) m);
    }
  return total;
}

size_t
piq_dq_size (uint64_t n_blocks)
{
  return 4 + 4 * (size_t) piq_dq_chunks (n_blocks) + (size_t) n_blocks;
}

/* The nearest map entry (ties to the lower code); the map is increasing. lo is the
 * largest index with map[lo] ≤ v (0 below map[0]). */
static inline uint8_t
dynamic_pick (float v, unsigned lo)
{
  unsigned hi = lo < 255 ? lo + 1 : 255;

  if (!(v > piq_dynamic_map[0]))        /* below the map, and NaN */
    return 0;
  return (uint8_t) (v - piq_dynamic_map[lo] <= piq_dynamic_map[hi] - v ? lo : hi);
}

/* lo by cells of v's bits instead of a binary search (eight dependent loads per
 * scale, most of f32->nf4_dq's time after its codes). |v|'s exponent and 6 mantissa
 * bits give 64 cells per binade from 2^−22 (below: one cell; 1 and above: one), each
 * narrower than the spacing of the levels it spans (the map's are 0.9 · 10^(i−6) / 2^i
 * in decade i: 0.014 in [0.1, 1], whose widest cells are 2^−7), so a cell holds at
 * most one level and lo is the cell's first lo or the next. The key is monotone in v
 * (negative v count down from the middle); dq_cell[key] is lo at the cell's least v,
 * at most 254 so that its next level exists (only the 1.0 cell starts at 255). */
#define DQ_CELL_FLOOR 0x34800000u       /* 2^−22, below the map's least |level| */
#define DQ_CELL_SHIFT 17
#define DQ_CELLS (1 + (((0x3f800000u - DQ_CELL_FLOOR) >> DQ_CELL_SHIFT) + 1))

static uint8_t dq_cell[2 * DQ_CELLS];
static pthread_once_t dq_cell_once = PTHREAD_ONCE_INIT;

static inline unsigned
dynamic_key (float v)
{
  uint32_t a, m, idx;

  memcpy (&a, &v, 4);
  m = a & 0x7fffffffu;
  idx = m < DQ_CELL_FLOOR ? 0 : PIQ_MIN (((m - DQ_CELL_FLOOR) >> DQ_CELL_SHIFT) + 1, DQ_CELLS - 1);
  return a >> 31 ? DQ_CELLS - 1 - idx : DQ_CELLS + idx;
}

static void
dq_cell_build (void)
{
  for (unsigned key = 0; key < 2 * DQ_CELLS; key++)
    {
      /* the cell's least v: its lower edge, or minus the largest |v| of a negative cell */
      unsigned idx = key >= DQ_CELLS ? key - DQ_CELLS : DQ_CELLS - 1 - key;
      uint32_t edge = idx == 0 ? 0 : DQ_CELL_FLOOR + ((idx - 1) << DQ_CELL_SHIFT);
      float v;
      unsigned lo = 0;
      if (key >= DQ_CELLS)
        memcpy (&v, &edge, 4);
      else if (idx == DQ_CELLS - 1)
        v = -INFINITY;
      else
        {
          uint32_t top = DQ_CELL_FLOOR + (idx << DQ_CELL_SHIFT) - 1;
          memcpy (&v, &top, 4);
          v = -v;
        }
      while (lo < 255 && piq_dynamic_map[lo + 1] <= v)
        lo++;
      dq_cell[key] = (uint8_t) PIQ_MIN (lo, 254u);
    }
}

static inline uint8_t
dynamic_code (float v)
{
  unsigned lo = dq_cell[dynamic_key (v)];

  lo += piq_dynamic_map[lo + 1] <= v;
  return dynamic_pick (v, lo);
}

/* codes[b] for b in [b0, b1): the map entry nearest (scales[b] − offset) · inv */
static void
dynamic_codes (const float *scales, uint64_t b0, uint64_t b1, float offset, float inv,
               uint8_t *codes)
{
  pthread_once (&dq_cell_once, dq_cell_build);
  for (uint64_t b = b0; b < b1; b++)
    codes[b] = dynamic_code ((scales[b] - offset) * inv);
}

/* Chunk c's binary64 sum of its scales, in increasing position: the offset is the
 * sum of these in increasing c, so it does not depend on how chunks are shared out. */
double
piq_dq_chunk_sum (const float *scales, uint64_t n_blocks, uint64_t c)
{
  uint64_t end = PIQ_MIN ((c + 1) * PIQ_DQ_CHUNK, n_blocks);
  double sum = 0.0;

  for (uint64_t b = c * PIQ_DQ_CHUNK; b < end; b++)
    sum += scales[b];
  return sum;
}

float
piq_dq_offset (const double *chunk_sums, uint64_t n_blocks)
{
  uint64_t n_chunks = piq_dq_chunks (n_blocks);
  double sum = 0.0;

  for (uint64_t c = 0; c < n_chunks; c++)
    sum += chunk_sums[c];
  return n_blocks ? (float) (sum / (double) n_blocks) : 0.0f;
}

void
piq_dq_compress_chunks (const float *scales, uint64_t n_blocks, float offset, uint64_t c0,
                        uint64_t nc, uint8_t *out)
{
  uint64_t n_chunks = piq_dq_chunks (n_blocks);
  uint8_t *codes = out + 4 + 4 * n_chunks;

  if (c0 == 0)
    memcpy (out, &offset, 4);
  for (uint64_t c = c0; c < c0 + nc; c++)
    {
      uint64_t end = PIQ_MIN ((c + 1) * PIQ_DQ_CHUNK, n_blocks);
      float amax = 0.0f, inv;
      for (uint64_t b = c * PIQ_DQ_CHUNK; b < end; b++)
        amax = PIQ_MAX (amax, fabsf (scales[b] - offset));
      memcpy (out + 4 + 4 * c, &amax, 4);
      inv = amax > 0.0f ? 1.0f / amax : 0.0f;
      dynamic_codes (scales, c * PIQ_DQ_CHUNK, end, offset, inv, codes);
    }
}

void
piq_dq_expand_chunks (const uint8_t *in, uint64_t n_blocks, uint64_t c0, uint64_t nc,
                      float *scales)
{
  uint64_t n_chunks = piq_dq_chunks (n_blocks);
  const uint8_t *codes = in + 4 + 4 * n_chunks;
  float offset, amax;

  memcpy (&offset, in, 4);
  for (uint64_t c = c0; c < c0 + nc; c++)
    {
      uint64_t end = PIQ_MIN ((c + 1) * PIQ_DQ_CHUNK, n_blocks);
      memcpy (&amax, in + 4 + 4 * c, 4);
      for (uint64_t b = c * PIQ_DQ_CHUNK; b < end; b++)
        scales[b] = piq_dynamic_map[codes[b]] * amax + offset;   /* bnb: dequantize, then + offset */
    }
}

void
piq_dq_expand (const uint8_t *in, uint64_t n_blocks, float *scales)
{
  piq_dq_expand_chunks (in, n_blocks, 0, piq_dq_chunks (n_blocks), scales);
}

/* --- the float policy's fused GEMV: the reference -------------------------------- */

/* Element k of weight row j, decoded as piq_block_dequantize decodes it; *b and *p
 * cache the row's current block (b = UINT64_MAX: none yet). */
static inline float
mm_weight (const PiqMmWeights *w, size_t j, size_t k, uint64_t *b, PiqBlockP *p)
{
  const PiqBlockArgs *a = w->a;
  const uint8_t *row = w->codes + j * w->code_stride;

  if (a->bits == 0)
    return ggml_decode (a->code, row + k / GGML_QK * ggml_block_bytes (a->code),
                        (int) (k % GGML_QK));
  if (*b != (a->fixed ? 0 : k / a->block))
    {
      *b = a->fixed ? 0 : k / a->block;
      piq_block_load_params (a, w->scales, w->zero_points, j * w->blocks_per_row + *b, p);
    }
  return decode (a, p, piq_get_code (row, k, a->bits, a->high_first));
}

void
piq_block_decode_dot (const PiqMmWeights *w, const float *x, size_t ldx, size_t n, size_t mr,
                      size_t nr, float *out, size_t ldo)
{
  for (size_t j = 0; j < nr; j++)
    {
      float lanes[4][PIQ_SUM_LANES] = { { 0 } }, wv[PIQ_SUM_LANES];
      uint64_t b = UINT64_MAX;
      PiqBlockP p;

      for (size_t k0 = 0; k0 < n; k0 += PIQ_SUM_LANES)
        {
          size_t len = PIQ_MIN ((size_t) PIQ_SUM_LANES, n - k0);
          for (size_t l = 0; l < len; l++)
            wv[l] = mm_weight (w, j, k0 + l, &b, &p);
          for (size_t i = 0; i < mr; i++)
            for (size_t l = 0; l < len; l++)
              lanes[i][l] = fmaf (x[i * ldx + k0 + l], wv[l], lanes[i][l]);
        }
      for (size_t i = 0; i < mr; i++)
        out[i * ldo + j] = piq_mm_canonical (piq_sum_lanes (lanes[i]));
    }
}

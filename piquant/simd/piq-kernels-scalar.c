/* piq-kernels-scalar.c: the reference implementation of every kernel in the list
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Portable C, the fallback of every SIMD table and the oracle of their tests. Each
 * kernel is a thin instance of one generic body below; the constant arguments fold
 * away (always_inline), so each instance is a specialised loop.
 *
 * Rounding: nearest is ties-to-even (nearbyint under the default rounding mode);
 * stochastic follows docs/numerics.md. Tails: a sub-byte destination's partial last
 * byte is written whole with zero padding. Alignment: none assumed.
 */
#include "config.h"

#include "piq-kernels-private.h"
#include "piq-convert-private.h"
#include "piq-formats-private.h"

#define PIQ_ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---- element access by dtype index ---- */

#define load_f piq_load_f
#define store_f piq_store_f

/* Read element i of a packed integer buffer, sign-extended for signed types
 * (branch-free: half the codes of a centred distribution are negative). */
PIQ_ALWAYS_INLINE int64_t
load_q_small (const void *p, size_t i, int bits, int is_signed)
{
  const uint8_t *b = p;
  uint64_t u;

  switch (bits)
    {
    case 2:  u = (b[i >> 2] >> ((i & 3) * 2)) & 3u; break;
    case 4:  u = (b[i >> 1] >> ((i & 1) * 4)) & 15u; break;
    case 8:  u = b[i]; break;
    case 16: u = piq_ld_u16 (p, i); break;
    default: u = piq_ld_u32 (p, i); break;
    }
  if (is_signed)
    return (int64_t) (u << (64 - bits)) >> (64 - bits);
  return (int64_t) u;
}

/* q − zero_point, exact. Up to 32 bits it fits an int64 (|zp| ≤ 2^32 after
 * validation), so only the 64-bit types pay for 128-bit arithmetic. */
PIQ_ALWAYS_INLINE float
centred_f (const void *p, size_t i, int bits, int is_signed, const PiqKernelArgs *a)
{
  if (bits < 64)
    return (float) (load_q_small (p, i, bits, is_signed) - a->zero_point);
  {
    uint64_t u = piq_ld_u64 (p, i);
    __int128 q = is_signed ? (__int128) (int64_t) u : (__int128) u;
    return (float) (q - a->zero_point);
  }
}

PIQ_ALWAYS_INLINE double
centred_d (const void *p, size_t i, int bits, int is_signed, const PiqKernelArgs *a)
{
  if (bits < 64)
    return (double) (load_q_small (p, i, bits, is_signed) - a->zero_point);
  {
    uint64_t u = piq_ld_u64 (p, i);
    __int128 q = is_signed ? (__int128) (int64_t) u : (__int128) u;
    return (double) (q - a->zero_point);
  }
}

/* ---- quantize ---- */

/* The clamp bounds of r = q − zp as doubles, when they are exact (ranges of up to 32
 * bits): the common case avoids 128-bit arithmetic per element. */
typedef struct {
  int    small;
  double lo, hi;
} Bounds;

PIQ_ALWAYS_INLINE Bounds
bounds_of (const PiqKernelArgs *a)
{
  Bounds b = { 0, 0.0, 0.0 };
  __int128 lo = a->qmin - a->zero_point, hi = a->qmax - a->zero_point;

  if (lo >= -((__int128) 1 << 40) && hi <= ((__int128) 1 << 40))
    {
      b.small = 1;
      b.lo = (double) lo;
      b.hi = (double) hi;
    }
  return b;
}

/* clamp(r + zp, qmin, qmax) for the rounded r, NaN giving zp (piq_clamp_q). */
PIQ_ALWAYS_INLINE __int128
clamp_rounded (double r, const PiqKernelArgs *a, const Bounds *b)
{
  if (b->small)
    {
      r = r == r ? r : 0.0;
      r = r < b->lo ? b->lo : r > b->hi ? b->hi : r;
      return (int64_t) r + a->zero_point;
    }
  return piq_clamp_q (r, a);
}

PIQ_ALWAYS_INLINE __int128
quantize_one (const void *src, size_t i, uint64_t index, const PiqKernelArgs *a,
              const Bounds *b, int ft, int stochastic)
{
  if (ft == PIQ_F_F64)
    {
      double v = piq_ld_f64 (src, i) * a->inv_d;
      return clamp_rounded (piq_round_d (v, stochastic, a, index + i), a, b);
    }
  else
    {
      float v = load_f (src, i, ft) * a->inv_f;
      return clamp_rounded (piq_round_f (v, stochastic, a, index + i), a, b);
    }
}

PIQ_ALWAYS_INLINE void
quantize_generic (const void *src, void *dst, uint64_t index, size_t n,
                  const PiqKernelArgs *a, int ft, int bits, int stochastic)
{
  uint8_t *d = dst;
  const Bounds b = bounds_of (a);

  if (bits < 8)
    {
      const unsigned per = 8 / bits, mask = (1u << bits) - 1u;
      for (size_t i = 0; i < n; i += per)
        {
          unsigned byte = 0;
          for (unsigned k = 0; k < per && i + k < n; k++)
            byte |= ((unsigned) quantize_one (src, i + k, index, a, &b, ft, stochastic) & mask) << (k * bits);
          d[i / per] = (uint8_t) byte;
        }
      return;
    }
  for (size_t i = 0; i < n; i++)
    {
      __int128 q = quantize_one (src, i, index, a, &b, ft, stochastic);
      switch (bits)
        {
        case 8:  d[i] = (uint8_t) q; break;
        case 16: piq_st_u16 (dst, i, (uint16_t) q); break;
        case 32: piq_st_u32 (dst, i, (uint32_t) q); break;
        default: piq_st_u64 (dst, i, (uint64_t) q); break;
        }
    }
}

/* ---- dequantize ---- */

PIQ_ALWAYS_INLINE void
dequantize_generic (const void *src, void *dst, size_t n, const PiqKernelArgs *a,
                    int bits, int is_signed, int ft, int add)
{
  for (size_t i = 0; i < n; i++)
    {
      if (ft == PIQ_F_F64)
        {
          double y = centred_d (src, i, bits, is_signed, a) * a->scale_d;
          piq_st_f64 (dst, i, add ? piq_ld_f64 (dst, i) + y : y);
        }
      else
        {
          float y = centred_f (src, i, bits, is_signed, a) * a->scale_f;
          store_f (dst, i, add ? load_f (dst, i, ft) + y : y, ft);
        }
    }
}

/* ---- requantize: quantize and dequantize in one pass, no packed buffer ---- */

PIQ_ALWAYS_INLINE void
requantize_generic (const void *src, void *dst, uint64_t index, size_t n,
                    const PiqKernelArgs *a, int ft, int stochastic, int add)
{
  const Bounds b = bounds_of (a);

  for (size_t i = 0; i < n; i++)
    {
      __int128 d = quantize_one (src, i, index, a, &b, ft, stochastic) - a->zero_point;
      /* d fits an int64 for ranges up to 2^40: convert without 128-bit helpers */
      if (ft == PIQ_F_F64)
        {
          double y = (b.small ? (double) (int64_t) d : (double) d) * a->scale_d;
          piq_st_f64 (dst, i, add ? piq_ld_f64 (dst, i) + y : y);
        }
      else
        {
          float y = (b.small ? (float) (int64_t) d : (float) d) * a->scale_f;
          store_f (dst, i, add ? load_f (dst, i, ft) + y : y, ft);
        }
    }
}

/* ---- reductions ---- */

PIQ_ALWAYS_INLINE double
load_d (const void *src, size_t i, int ft)
{
  return ft == PIQ_F_F64 ? piq_ld_f64 (src, i) : (double) load_f (src, i, ft);
}

PIQ_ALWAYS_INLINE void
minmax_generic (const void *src, size_t n, PiqMinMax *out, int ft)
{
  double lo = INFINITY, hi = -INFINITY;
  int bad = 0;

  for (size_t i = 0; i < n; i++)
    {
      double x = load_d (src, i, ft);
      if (x - x != 0.0)      /* NaN or ±Inf */
        {
          bad = 1;
          continue;
        }
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
  /* + 0.0 turns −0 into +0: which zero wins a tie is order-dependent, and its sign
   * means nothing to the parameters, so the reduction reports +0 in every table. */
  out->min = bad ? NAN : lo + 0.0;
  out->max = bad ? NAN : hi + 0.0;
  out->non_finite = bad;
}

PIQ_ALWAYS_INLINE void
sums_generic (const void *src, size_t n, PiqSums *out, int ft)
{
  double s[8] = { 0 }, q[8] = { 0 };

  for (size_t i = 0; i < n; i++)
    {
      double x = load_d (src, i, ft);
      s[i & 7] += x;
      q[i & 7] += x * x;
    }
  out->sum = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
  out->sum_sq = ((q[0] + q[4]) + (q[2] + q[6])) + ((q[1] + q[5]) + (q[3] + q[7]));
}

/* ---- instances, one per list entry ---- */

#define FT_f32  PIQ_F_F32
#define FT_f64  PIQ_F_F64
#define FT_bf16 PIQ_F_BF16
#define FT_f16  PIQ_F_F16
#define BITS_uint2 2
#define BITS_int2 2
#define BITS_uint4 4
#define BITS_int4 4
#define BITS_uint8 8
#define BITS_int8 8
#define BITS_uint16 16
#define BITS_int16 16
#define BITS_uint32 32
#define BITS_int32 32
#define BITS_uint64 64
#define BITS_int64 64
#define SIGNED_uint2 0
#define SIGNED_int2 1
#define SIGNED_uint4 0
#define SIGNED_int4 1
#define SIGNED_uint8 0
#define SIGNED_int8 1
#define SIGNED_uint16 0
#define SIGNED_int16 1
#define SIGNED_uint32 0
#define SIGNED_int32 1
#define SIGNED_uint64 0
#define SIGNED_int64 1
#define STOCH_nearest 0
#define STOCH_stochastic 1
#define ADD_set 0
#define ADD_add 1

#define DEF_quantize(f, i, r) \
  static void PIQ_KNAME_quantize (f, i, r) (const void *src, void *dst, uint64_t index, size_t n, \
                                        const PiqKernelArgs *a) \
  { quantize_generic (src, dst, index, n, a, FT_##f, BITS_##i, STOCH_##r); }
#define DEF_dequantize(i, f, o) \
  static void PIQ_KNAME_dequantize (i, f, o) (const void *src, void *dst, size_t n, \
                                          const PiqKernelArgs *a) \
  { dequantize_generic (src, dst, n, a, BITS_##i, SIGNED_##i, FT_##f, ADD_##o); }
#define DEF_requantize(f, r, o) \
  static void PIQ_KNAME_requantize (f, r, o) (const void *src, void *dst, uint64_t index, size_t n, \
                                          const PiqKernelArgs *a) \
  { requantize_generic (src, dst, index, n, a, FT_##f, STOCH_##r, ADD_##o); }
#define DEF_minmax(f) \
  static void PIQ_KNAME_minmax (f) (const void *src, size_t n, PiqMinMax *out) \
  { minmax_generic (src, n, out, FT_##f); }
#define DEF_sums(f) \
  static void PIQ_KNAME_sums (f) (const void *src, size_t n, PiqSums *out) \
  { sums_generic (src, n, out, FT_##f); }

#define DEF_block_quantize(f) \
  static void PIQ_KNAME_block_quantize (f) (const PiqBlockArgs *a, const void *src, uint64_t first, \
                                            size_t n, uint8_t *codes, uint8_t *scales, int32_t *zps) \
  { piq_block_quantize (a, FT_##f, src, first, n, codes, scales, zps); }
#define DEF_block_dequantize(f) \
  static void PIQ_KNAME_block_dequantize (f) (const PiqBlockArgs *a, const uint8_t *codes, \
                                              const uint8_t *scales, const int32_t *zps, \
                                              uint64_t first, size_t n, void *dst, int add) \
  { piq_block_dequantize (a, codes, scales, zps, first, n, FT_##f, dst, add); }

/* ---- matrix multiply: the definitions the vector bodies reproduce ---- */

static void
mm_tile_f32 (const float *x, size_t ldx, const float *w, size_t ldw, size_t n, size_t mr,
             size_t nr, float *out, size_t ldo)
{
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < nr; j++)
      {
        float lanes[PIQ_SUM_LANES] = { 0 };
        for (size_t k = 0; k < n; k++)
          lanes[k % PIQ_SUM_LANES] = fmaf (x[i * ldx + k], w[j * ldw + k], lanes[k % PIQ_SUM_LANES]);
        out[i * ldo + j] = piq_mm_canonical (piq_sum_lanes (lanes));
      }
}

static void
mm_lanes_f32 (const float *xp, size_t mr, const float *wp, size_t kq, float *lanes, int first,
              float *out, size_t ldo)
{
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < PIQ_MM_NC; j++)
      {
        float l[PIQ_SUM_LANES];
        for (size_t r = 0; r < PIQ_SUM_LANES; r++)
          {
            float *lane = &lanes[(j * PIQ_SUM_LANES + r) * mr + i];
            const float *w = wp + (r * PIQ_MM_NC / 8 + j / 8) * PIQ_MM_WLD (kq) + j % 8;
            l[r] = first ? 0.0f : *lane;
            for (size_t q = 0; q < kq; q++)
              l[r] = fmaf (xp[(r * kq + q) * mr + i], w[8 * q], l[r]);
            *lane = l[r];
          }
        if (out != NULL)
          out[i * ldo + j] = piq_mm_canonical (piq_sum_lanes (l));
      }
}

/* Weight k of the three integer layouts: unsigned bytes, signed bytes, and 4-bit
 * values two to a byte in 32-element blocks (Q4_0's layout). */
enum { W_U8, W_I8, W_Q4 };

static inline int32_t
weight_at (const uint8_t *w, size_t k, int layout)
{
  switch (layout)
    {
    case W_I8: return (int8_t) w[k];
    case W_Q4: return k % 32 < 16 ? w[k / 32 * 16 + k % 16] & 15 : w[k / 32 * 16 + k % 16] >> 4;
    default:   return w[k];
    }
}

static inline void
dot_groups_generic (const uint8_t *w, const int8_t *x, size_t n, size_t group, int32_t *out,
                    int layout)
{
  for (size_t g = 0, k0 = 0; k0 < n; g++, k0 += group)
    {
      int32_t s = 0;
      for (size_t k = k0; k < n && k < k0 + group; k++)
        s += weight_at (w, k, layout) * x[k];
      out[g] = s;
    }
}

static void
dot_groups_u8s8 (const uint8_t *w, const int8_t *x, size_t n, size_t group, int32_t *out)
{
  dot_groups_generic (w, x, n, group, out, W_U8);
}

static void
dot_groups_i8 (const int8_t *w, const int8_t *x, size_t n, size_t group, int32_t *out)
{
  dot_groups_generic ((const uint8_t *) (const void *) w, x, n, group, out, W_I8);
}

static void
dot_groups_q4 (const uint8_t *w, const int8_t *x, size_t n, size_t group, int32_t *out)
{
  dot_groups_generic (w, x, n, group, out, W_Q4);
}

/* The reference of PiqActQuantizeFn: the dynamic-int8 policy's X, group by group. */
static void
act_quantize_f32 (const float *x, size_t k, size_t group, int8_t *q, float *d, int32_t *sum)
{
  for (size_t g = 0, k0 = 0; k0 < k; g++, k0 += group)
    {
      const float *xs = x + k0;
      int8_t *qs = q + k0;
      size_t len = k - k0 < group ? k - k0 : group;
      float amax = 0.0f, id;
      int finite = 1;
      int32_t s = 0;

      for (size_t i = 0; i < len; i++)
        {
          float a = fabsf (xs[i]);
          finite &= isfinite (a) != 0;
          amax = a > amax ? a : amax;
        }
      if (!finite)
        {
          memset (qs, 0, len);
          d[g] = NAN;
          sum[g] = 0;
          continue;
        }
      d[g] = amax / 127.0f;
      /* d is 0 where amax / 127 underflows (amax ≤ 63 · 2^-149): codes 0, as for
       * amax = 0, since every output term of the group is 0 either way. A group of
       * subnormals small enough that 1/d overflows (d < 2^-128) would make 0 · id a
       * NaN and every other x · id infinite: divide by d there instead, which stays
       * within ±127 and is what x · id means. */
      id = d[g] > 0.0f ? 1.0f / d[g] : 0.0f;
      for (size_t i = 0; i < len; i++)
        {
          float v = nearbyintf (isinf (id) ? xs[i] / d[g] : xs[i] * id);
          v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
          qs[i] = (int8_t) v;
          s += qs[i];
        }
      sum[g] = s;
    }
}

static void
xnor_counts_u64 (const uint64_t *x, const uint64_t *w, size_t nb, size_t words, uint64_t *out)
{
  for (size_t b = 0; b < nb; b++)
    {
      uint64_t s = 0;
      for (size_t i = b * words; i < (b + 1) * words; i++)
        {
          /* the contract assumes no alignment: memcpy, not a uint64_t load */
          uint64_t xi, wi;
          memcpy (&xi, x + i, sizeof xi);
          memcpy (&wi, w + i, sizeof wi);
          s += (uint64_t) __builtin_popcountll (xi ^ wi);
        }
      out[b] = s;
    }
}

/* The binary GEMM's micro-kernel (PiqXnorGemmFn), one output at a time: the
 * definition, term by term. */
static void
xnor_gemm_u64 (const uint64_t *x, size_t ldx, const float *xs, size_t ldxs, size_t m,
               const uint64_t *wp, const float *ws, size_t nb, size_t words, size_t B,
               size_t k, double *out)
{
  for (size_t i = 0; i < m; i++)
    for (size_t r = 0; r < 8; r++)
      {
        double acc = 0.0;
        for (size_t b = 0; b < nb; b++)
          {
            int64_t len = (int64_t) (B < k - b * B ? B : k - b * B), c = 0;
            for (size_t t = 0; t < words; t++)
              {
                uint64_t xi, wi;
                memcpy (&xi, x + i * ldx + b * words + t, sizeof xi);
                memcpy (&wi, wp + (b * words + t) * 8 + r, sizeof wi);
                c += __builtin_popcountll (xi ^ wi);
              }
            acc += ((double) xs[i * ldxs + b] * (double) ws[b * 8 + r]) * (double) (len - 2 * c);
          }
        out[i * 8 + r] = acc;
      }
}

/* The int8 GEMM on packed B (PiqGemmU8S8Fn), one output at a time. */
static void
gemm_u8s8_packed (const uint8_t *a, size_t lda, size_t m, const int8_t *b, size_t ldbp,
                  size_t n, size_t kq, int32_t *c, size_t ldc, int add)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++)
      {
        const int8_t *col = b + j / 16 * ldbp + 4 * (j % 16);
        int32_t s = add ? c[i * ldc + j] : 0;
        for (size_t q = 0; q < kq; q++)
          for (int t = 0; t < 4; t++)
            s += (int32_t) a[i * lda + 4 * q + t] * col[64 * q + t];
        c[i * ldc + j] = s;
      }
}

/* The dynamic-int8 policy's grouped products on panel-packed weights
 * (PiqGemmGroupsFn), one output at a time, one group after the other. */
static void
gemm_groups_packed (const PiqGroupsW *w, size_t groups, const int8_t *x, size_t ldx,
                    const double *xd, const int32_t *xz, size_t ldg, size_t m, size_t n,
                    double *acc, size_t ldacc, int first, float *out, size_t ldo)
{
  const size_t code_bytes = w->q4 ? 32 * w->gq : 64 * w->gq;
  const size_t scale_bytes = w->f16 ? 32 : 64;

  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++)
      {
        const uint8_t *wp = w->w + j / 16 * w->ldwp;
        const size_t c = j % 16;
        double a = first ? 0.0 : acc[i * ldacc + j];
        for (size_t g = 0; g < groups; g++)
          {
            const uint8_t *wg = wp + g * w->gbytes;
            const int8_t *xg = x + i * ldx + g * 4 * w->gq;
            int64_t s = 0;
            float sc;
            for (size_t q = 0; q < w->gq; q++)
              for (size_t t = 0; t < 4; t++)
                {
                  int u = w->q4 ? (wg[q / 2 * 64 + 4 * c + t] >> (4 * (q % 2))) & 15
                                : wg[q * 64 + 4 * c + t];
                  s += (int64_t) u * xg[4 * q + t];
                }
            if (w->zpc)
              {
                int32_t zp;
                memcpy (&zp, wg + code_bytes + scale_bytes + 4 * c, 4);
                s -= (int64_t) zp * xz[i * ldg + g];
              }
            else
              s -= xz[i * ldg + g];
            if (w->f16)
              {
                uint16_t h;
                memcpy (&h, wg + code_bytes + 2 * c, 2);
                sc = piq_f16_to_f32 (h);
              }
            else
              memcpy (&sc, wg + code_bytes + 4 * c, 4);
            a = a + ((double) s * (double) sc) * xd[i * ldg + g];
          }
        if (out == NULL)
          acc[i * ldacc + j] = a;
        else
          {
            /* a NaN as the default quiet NaN: which NaN two NaNs give depends on the
             * operand order the compiler picks */
            float v = (float) a;
            out[i * ldo + j] = v != v ? piq_mm_canonical (v) : v;
          }
      }
}

/* ---- fake quantization (piq-kernels-private.h has the definition) ---- */

/* nearbyintf, ties to even: magnitudes below 2^23 rounded by adding and subtracting
 * 2^23, the sign put back (−0 included); larger magnitudes, ±Inf and NaN as they are. */
static inline float
qat_rne (float v)
{
  float a = __builtin_fabsf (v);

  if (!(a < 0x1p23f))
    return v;
  return __builtin_copysignf ((a + 0x1p23f) - 0x1p23f, v);
}

/* The types are read per element (piq_load_f, piq_store_f): this is the reference,
 * and runs only the scalar-capped calls and the vector kernels' heads and tails. */
static void
qat_forward_float (const void *x, size_t n, const PiqQatArgs *a, void *y, uint8_t *mask)
{
  for (size_t i = 0; i < n; i++)
    {
      float qf = a->zp + qat_rne (piq_load_f (x, i, a->x_ft) * a->inv), v;
      int inside = 0;

      if (qf != qf)
        v = 0.0f;
      else if (qf < a->lo)
        v = a->lo_zp * a->s;
      else if (qf > a->hi)
        v = a->hi_zp * a->s;
      else
        v = (qf - a->zp) * a->s, inside = 1;
      if (y != NULL)
        piq_store_f (y, i, v, a->o_ft);
      if (mask != NULL)
        mask[i] = (uint8_t) inside;
    }
}

static void
qat_backward_float (const void *x, const void *dy, size_t n, const PiqQatArgs *a, void *dx,
                    size_t lane0, double *lanes)
{
  for (size_t i = 0; i < n; i++)
    {
      float xv = piq_load_f (x, i, a->x_ft), g = piq_load_f (dy, i, a->g_ft);
      float qf = qat_rne (a->zp + xv * a->inv), ds, dz, d;
      size_t k = (lane0 + i) % PIQ_QAT_LANES;

      if (qf >= a->lo && qf <= a->hi)      /* inside (false for NaN) */
        {
          ds = g * ((qf - a->zp) * a->s - xv) * a->inv * a->gf;
          dz = 0.0f;
          d = g;
        }
      else
        {
          ds = g * (qf > a->hi ? a->hi_zp : a->lo_zp) * a->gf;
          dz = g * -1.0f * a->s * a->gf;
          d = g * 0.0f;
        }
      if (dx != NULL)
        piq_store_f (dx, i, d, a->o_ft);
      lanes[k] += (double) ds;
      lanes[PIQ_QAT_LANES + k] += (double) dz;
    }
}

/* The reference of PiqHistBinsFn, written as torch's histc computes it. */
static void
hist_bins_f32 (const void *x, size_t n, const PiqHistArgs *a, uint32_t *idx)
{
  const float lo = a->lo, hi = a->hi, width = hi - lo, nb = (float) a->bins;

  for (size_t i = 0; i < n; i++)
    {
      float v;
      memcpy (&v, (const uint8_t *) x + 4 * i, sizeof v);
      if (v >= lo && v <= hi)
        {
          float t = ((v - lo) * nb) / width;
          idx[i] = t < nb ? (uint32_t) t : a->bins - 1;
        }
      else
        idx[i] = a->bins;
    }
}

#define DEF_hist_bins(f)
#define DEF_qat_forward(f)
#define DEF_qat_backward(f)
#define DEF_mm_tile(f)
#define DEF_mm_lanes(f)
#define DEF_gemm_u8s8(t)
#define DEF_gemm_groups(t)
#define DEF_act_quantize(f)
#define DEF_mm_decode_dot(f) \
  static void PIQ_KNAME_mm_decode_dot (f) (const PiqMmWeights *w, const float *x, size_t ldx, \
                                           size_t n, size_t mr, size_t nr, float *out, size_t ldo) \
  { piq_block_decode_dot (w, x, ldx, n, mr, nr, out, ldo); }
#define DEF_dot_groups(t)
#define DEF_dot_groups_i8(t)
#define DEF_dot_groups_q4(t)
#define DEF_xnor_counts(t)
#define DEF_xnor_gemm(t)

#define DEFINE_ENTRY(op, slot, ...) DEF_##op (__VA_ARGS__)
PIQ_KERNEL_LIST (DEFINE_ENTRY)
#undef DEFINE_ENTRY

const PiqKernelTable piq_kernels_scalar = {
  .name = "scalar",
  .level = 0,
  .required = 0,
#define TABLE_ENTRY(op, slot, ...) .slot = PIQ_KNAME_##op (__VA_ARGS__),
  PIQ_KERNEL_LIST (TABLE_ENTRY)
#undef TABLE_ENTRY
};

/* piq-convert-private.h: conversions and rounding helpers shared by every kernel unit
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * static inline only: each ISA unit compiles them with its own flags, and they are the
 * scalar definition its vector bodies must reproduce (docs/numerics.md).
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "piq-kernels-private.h"

static inline uint32_t
piq_f32_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static inline float
piq_bits_f32 (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

/* Element i of a buffer of T at any address: buffers (a caller's raw pointers
 * included) need not be aligned to their element type, and a typed access through a
 * misaligned pointer is undefined. A fixed-size memcpy compiles to the one plain
 * load or store. */
#define PIQ_DEFINE_ACCESS_(T, name) \
  static inline T \
  piq_ld_##name (const void *p, size_t i) \
  { \
    T v; \
    memcpy (&v, (const unsigned char *) p + i * sizeof (T), sizeof v); \
    return v; \
  } \
  static inline void \
  piq_st_##name (void *p, size_t i, T v) \
  { \
    memcpy ((unsigned char *) p + i * sizeof (T), &v, sizeof v); \
  }
PIQ_DEFINE_ACCESS_ (uint16_t, u16)
PIQ_DEFINE_ACCESS_ (uint32_t, u32)
PIQ_DEFINE_ACCESS_ (uint64_t, u64)
PIQ_DEFINE_ACCESS_ (int32_t, i32)
PIQ_DEFINE_ACCESS_ (float, f32)
PIQ_DEFINE_ACCESS_ (double, f64)
#undef PIQ_DEFINE_ACCESS_

/* bf16 is the upper half of a binary32: widening is exact. */
static inline float
piq_bf16_to_f32 (uint16_t h)
{
  return piq_bits_f32 ((uint32_t) h << 16);
}

/* Round to nearest even; NaN stays NaN with the quiet bit set (a plain truncation
 * could turn a NaN whose payload is in the low half into Inf). */
static inline uint16_t
piq_f32_to_bf16 (float f)
{
  uint32_t u = piq_f32_bits (f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t) ((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t) (u >> 16);
}

/* IEEE binary16 -> binary32, exact (subnormals, Inf, NaN payload kept). */
static inline float
piq_f16_to_f32 (uint16_t h)
{
  uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;

  if (exp == 0x1f)
    return piq_bits_f32 (sign | 0x7f800000u | (man << 13));
  if (exp == 0)
    {
      /* zero or subnormal: man · 2^-24, exact in binary32 */
      float v = (float) man * 0x1p-24f;
      return sign ? -v : v;
    }
  return piq_bits_f32 (sign | ((exp + 112u) << 23) | (man << 13));
}

/* binary32 -> binary16, round to nearest even, overflow to ±Inf, subnormals kept,
 * NaN quiet. Same bits as F16C's VCVTPS2PH with imm 0 (MXCSR default). */
static inline uint16_t
piq_f32_to_f16 (float f)
{
  uint32_t u = piq_f32_bits (f);
  uint16_t sign = (uint16_t) ((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;

  if (a > 0x7f800000u)                       /* NaN: keep the top payload bits, quiet */
    return sign | 0x7e00u | (uint16_t) ((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u)                      /* ≥ 65520 rounds to Inf (and Inf) */
    return sign | 0x7c00u;
  if (a < 0x38800000u)                       /* below 2^-14: subnormal or zero */
    {
      /* a · 2^24 is the subnormal code; binary32 arithmetic rounds it to even. */
      float v = piq_bits_f32 (a) * 0x1p24f;
      return sign | (uint16_t) lrintf (v);
    }
  /* normal: rebias and round the 13 dropped bits to even */
  uint32_t r = a - 0x38000000u;              /* exponent 127 -> 15 */
  r += 0xfffu + ((r >> 13) & 1u);
  return sign | (uint16_t) (r >> 13);
}

/* Element i of a binary32-computed float buffer (f32, bf16, f16), widened exactly,
 * and the store that rounds back (round to nearest even). */
static inline __attribute__((always_inline)) float
piq_load_f (const void *p, size_t i, int ft)
{
  switch (ft)
    {
    case PIQ_F_F32:  return piq_ld_f32 (p, i);
    case PIQ_F_BF16: return piq_bf16_to_f32 (piq_ld_u16 (p, i));
    default:         return piq_f16_to_f32 (piq_ld_u16 (p, i));
    }
}

static inline __attribute__((always_inline)) void
piq_store_f (void *p, size_t i, float v, int ft)
{
  switch (ft)
    {
    case PIQ_F_F32:  piq_st_f32 (p, i, v); break;
    case PIQ_F_BF16: piq_st_u16 (p, i, piq_f32_to_bf16 (v)); break;
    default:         piq_st_u16 (p, i, piq_f32_to_f16 (v)); break;
    }
}

/* Stochastic rounding's counter hash (docs/numerics.md): a 32-bit bijective mixer of
 * the index's low word, keyed by the seed and by the mixed high word (constant over a
 * kernel call, so vector bodies pay one mix, two multiplies, per element). */
static inline uint32_t
piq_mix32 (uint32_t x)
{
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

static inline uint32_t
piq_hash (uint32_t key0, uint32_t key1, uint64_t index)
{
  return piq_mix32 ((uint32_t) index ^ key0 ^ piq_mix32 ((uint32_t) (index >> 32) ^ key1));
}

/* The uniform number in [0, 1) compared with the fractional part: 24 bits, exact in
 * binary32, so float and double paths draw the same value. */
static inline float
piq_uniform24 (uint32_t h)
{
  return (float) (h >> 8) * 0x1p-24f;
}

/* q = clamp(r + zero_point, qmin, qmax) for an integral (or ±Inf/NaN) r, exactly. */
static inline __int128
piq_clamp_q (double r, const PiqKernelArgs *a)
{
  __int128 q;

  if (r != r)
    return a->zero_point;
  if (r >= 0x1p100)
    return a->qmax;
  if (r <= -0x1p100)
    return a->qmin;
  q = (__int128) r + a->zero_point;
  return q < a->qmin ? a->qmin : q > a->qmax ? a->qmax : q;
}

/* v rounded onto the integer grid in binary32: nearest even, or up with probability
 * equal to the fraction, u being the element's piq_uniform24 draw. */
static inline float
piq_round_u (float v, int stochastic, float u)
{
  float fl;

  if (!stochastic)
    return nearbyintf (v);
  fl = floorf (v);
  return u < v - fl ? fl + 1.0f : fl;
}

/* The rounding of v = x · inv onto the integer grid, binary32 and binary64. */
static inline float
piq_round_f (float v, int stochastic, const PiqKernelArgs *a, uint64_t index)
{
  return piq_round_u (v, stochastic,
                      stochastic ? piq_uniform24 (piq_hash (a->key0, a->key1, index)) : 0.0f);
}

/* (float) d as IEEE 754 rounds it, ±Inf beyond binary32's range (where C leaves the
 * conversion undefined): FLT_MAX + half an ulp and more round to infinity. */
static inline float
piq_f64_to_f32 (double d)
{
  if (d >= 0x1.ffffffp127 || d <= -0x1.ffffffp127)
    return d > 0 ? INFINITY : -INFINITY;
  return (float) d;
}

static inline double
piq_round_d (double v, int stochastic, const PiqKernelArgs *a, uint64_t index)
{
  double fl, frac;

  if (!stochastic)
    return nearbyint (v);
  fl = floor (v);
  frac = v - fl;
  return (double) piq_uniform24 (piq_hash (a->key0, a->key1, index)) < frac ? fl + 1.0 : fl;
}

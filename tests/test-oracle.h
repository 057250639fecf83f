/* test-oracle.h: an independent reference for docs/numerics.md
 *
 * Everything here is written from the text of docs/numerics.md and from the
 * IEEE 754 definitions, without looking at the library's kernels: software
 * conversions between binary32 and bfloat16/binary16, the SplitMix64 key
 * expansion and counter hash, one-element quantize / dequantize / requantize,
 * the packing of sub-byte types, exact integer-to-float rounding, the
 * compute_params formulas, and a deterministic data generator that mixes
 * Gaussian data with NaN, ±Inf, −0, huge values, exact .5 ties and values one
 * ulp around ties.
 *
 * All helpers are `static inline` so each test program can use any subset.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <float.h>
#include <math.h>
#include <string.h>

#include <glib.h>
#include <piquant/piquant.h>

/* The contract forbids contracting a multiply and an add into one FMA; the
 * oracle must not do it either, whatever flags the tests are built with. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize ("fp-contract=off")
#endif

/* Exact wide integer for quantized values: holds every uint64 and int64 value
 * and their sums with any zero point. */
typedef __int128 OInt;
typedef unsigned __int128 OUInt;

/* ---- dtype table (written from piq-types.h) ---- */

typedef struct {
  PiqDtype    dtype;
  const char *name;
  guint       bits;
  gboolean    is_float;
  gboolean    is_signed;
} ODtypeInfo;

static const ODtypeInfo o_dtypes[] = {
  { PIQ_DTYPE_F32,    "f32",    32, TRUE,  TRUE },
  { PIQ_DTYPE_F64,    "f64",    64, TRUE,  TRUE },
  { PIQ_DTYPE_BF16,   "bf16",   16, TRUE,  TRUE },
  { PIQ_DTYPE_F16,    "f16",    16, TRUE,  TRUE },
  { PIQ_DTYPE_UINT2,  "uint2",   2, FALSE, FALSE },
  { PIQ_DTYPE_INT2,   "int2",    2, FALSE, TRUE },
  { PIQ_DTYPE_UINT4,  "uint4",   4, FALSE, FALSE },
  { PIQ_DTYPE_INT4,   "int4",    4, FALSE, TRUE },
  { PIQ_DTYPE_UINT8,  "uint8",   8, FALSE, FALSE },
  { PIQ_DTYPE_INT8,   "int8",    8, FALSE, TRUE },
  { PIQ_DTYPE_UINT16, "uint16", 16, FALSE, FALSE },
  { PIQ_DTYPE_INT16,  "int16",  16, FALSE, TRUE },
  { PIQ_DTYPE_UINT32, "uint32", 32, FALSE, FALSE },
  { PIQ_DTYPE_INT32,  "int32",  32, FALSE, TRUE },
  { PIQ_DTYPE_UINT64, "uint64", 64, FALSE, FALSE },
  { PIQ_DTYPE_INT64,  "int64",  64, FALSE, TRUE },
};

static const PiqDtype o_float_dtypes[] = {
  PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16, PIQ_DTYPE_F16,
};

static const PiqDtype o_int_dtypes[] = {
  PIQ_DTYPE_UINT2, PIQ_DTYPE_INT2, PIQ_DTYPE_UINT4, PIQ_DTYPE_INT4,
  PIQ_DTYPE_UINT8, PIQ_DTYPE_INT8, PIQ_DTYPE_UINT16, PIQ_DTYPE_INT16,
  PIQ_DTYPE_UINT32, PIQ_DTYPE_INT32, PIQ_DTYPE_UINT64, PIQ_DTYPE_INT64,
};

static inline const ODtypeInfo *
o_dtype_info (PiqDtype dtype)
{
  /* float types are 0..3, integer types 16..27 (the ABI values) */
  guint k = (guint) dtype < 4 ? (guint) dtype : (guint) dtype - 16 + 4;
  g_assert (k < G_N_ELEMENTS (o_dtypes) && o_dtypes[k].dtype == dtype);
  return &o_dtypes[k];
}

static inline const char *
o_dtype_name (PiqDtype dtype)
{
  return o_dtype_info (dtype)->name;
}

static inline guint
o_dtype_bits (PiqDtype dtype)
{
  return o_dtype_info (dtype)->bits;
}

static inline gboolean
o_dtype_is_float (PiqDtype dtype)
{
  return o_dtype_info (dtype)->is_float;
}

static inline OInt
o_qmin (PiqDtype dtype)
{
  const ODtypeInfo *info = o_dtype_info (dtype);
  if (!info->is_signed)
    return 0;
  return -((OInt) 1 << (info->bits - 1));
}

static inline OInt
o_qmax (PiqDtype dtype)
{
  const ODtypeInfo *info = o_dtype_info (dtype);
  if (!info->is_signed)
    return ((OInt) 1 << info->bits) - 1;
  return ((OInt) 1 << (info->bits - 1)) - 1;
}

/* Bytes for n elements, computed in 128 bits (no overflow for any guint64 n). */
static inline OUInt
o_dtype_nbytes_wide (PiqDtype dtype, guint64 n)
{
  return ((OUInt) n * o_dtype_bits (dtype) + 7) / 8;
}

static inline gsize
o_dtype_nbytes (PiqDtype dtype, guint64 n)
{
  OUInt b = o_dtype_nbytes_wide (dtype, n);
  g_assert (b <= G_MAXSIZE);
  return (gsize) b;
}

/* ---- bit access ---- */

static inline guint32
o_f32_bits (float f)
{
  guint32 u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static inline float
o_f32_from_bits (guint32 u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

static inline guint64
o_f64_bits (double d)
{
  guint64 u;
  memcpy (&u, &d, sizeof u);
  return u;
}

static inline double
o_f64_from_bits (guint64 u)
{
  double d;
  memcpy (&d, &u, sizeof d);
  return d;
}

/* ---- binary32 <-> bfloat16 / binary16, from the IEEE definitions ---- */

/* bfloat16 is the upper half of a binary32: widening is exact. */
static inline float
o_bf16_to_f32 (guint16 h)
{
  return o_f32_from_bits ((guint32) h << 16);
}

/* Round-to-nearest-even onto the upper 16 bits. NaN stays NaN with the quiet
 * bit (mantissa MSB, bit 6) set. Overflow carries into the exponent and gives
 * ±Inf; subnormals round like any other value (same exponent field). */
static inline guint16
o_f32_to_bf16 (float f)
{
  guint32 u = o_f32_bits (f);
  guint32 keep = u >> 16;
  guint32 rest = u & 0xFFFF;

  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0)
    return (guint16) (keep | 0x0040);

  if (rest > 0x8000 || (rest == 0x8000 && (keep & 1)))
    keep += 1;
  return (guint16) keep;
}

/* binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
static inline float
o_f16_to_f32 (guint16 h)
{
  guint32 sign = (guint32) (h & 0x8000) << 16;
  guint32 e = (h >> 10) & 0x1F;
  guint32 m = h & 0x3FF;
  float mag;

  if (e == 0x1F)
    return o_f32_from_bits (sign | 0x7F800000u | (m << 13));
  if (e == 0)
    mag = ldexpf ((float) m, -24);          /* subnormal: m · 2^-24, exact */
  else
    mag = ldexpf ((float) (m | 0x400), (int) e - 25);   /* 1.m · 2^(e-15) */
  return (sign != 0) ? -mag : mag;
}

static inline guint16
o_f32_to_f16 (float f)
{
  guint32 u = o_f32_bits (f);
  guint16 sign = (guint16) ((u >> 16) & 0x8000);
  gint32 e32 = (gint32) ((u >> 23) & 0xFF);
  guint32 m32 = u & 0x7FFFFF;
  guint32 mant;
  gint32 e16;

  if (e32 == 0xFF)
    return (guint16) (sign | 0x7C00 | (m32 != 0 ? (0x200 | (m32 >> 13)) : 0));
  if (e32 == 0)
    return sign;                /* binary32 subnormals are < 2^-126: far below half of 2^-24 */

  /* value = mant · 2^(e32 − 150), mant has 24 significant bits */
  mant = m32 | 0x800000;
  e16 = e32 - 127 + 15;

  if (e16 >= 31)
    return (guint16) (sign | 0x7C00);

  if (e16 >= 1)
    {
      /* keep 11 bits (implicit one included), RNE on the 13 dropped bits; the
       * implicit bit adds one to the exponent field, so a carry out of the
       * mantissa correctly bumps the exponent, up to 0x7C00 = Inf. */
      guint32 keep = mant >> 13;
      guint32 rest = mant & 0x1FFF;
      if (rest > 0x1000 || (rest == 0x1000 && (keep & 1)))
        keep += 1;
      return (guint16) (sign | ((((guint32) e16 - 1) << 10) + keep));
    }
  else
    {
      /* subnormal result in units of 2^-24: mant · 2^(e32 − 126) */
      guint32 shift = (guint32) (126 - e32);     /* >= 14 here */
      guint32 keep, rest, half;
      if (shift >= 32)
        return sign;
      keep = mant >> shift;
      rest = mant & ((1u << shift) - 1);
      half = 1u << (shift - 1);
      if (rest > half || (rest == half && (keep & 1)))
        keep += 1;
      return (guint16) (sign | keep);     /* keep == 0x400 is the smallest normal */
    }
}

/* ---- exact integer -> float, round to nearest even ---- */

/* Rounds v to `precision` significant bits (ties to even) and returns it as
 * a double (exact for precision <= 53). */
static inline double
o_int_round_to_precision (OInt v, int precision)
{
  gboolean neg = v < 0;
  OUInt m = neg ? (OUInt) 0 - (OUInt) v : (OUInt) v;
  guint64 m_hi = (guint64) (m >> 64), m_lo = (guint64) m;
  int len, shift;
  double r;

  if (m == 0)
    return 0.0;
  len = m_hi != 0 ? 128 - __builtin_clzll (m_hi) : 64 - __builtin_clzll (m_lo);
  shift = len - precision;
  if (shift > 0)
    {
      OUInt keep = m >> shift;
      OUInt rest = m & (((OUInt) 1 << shift) - 1);
      OUInt half = (OUInt) 1 << (shift - 1);
      if (rest > half || (rest == half && (keep & 1)))
        keep += 1;
      r = ldexp ((double) (guint64) keep, shift);
    }
  else
    r = (double) (guint64) m;
  return neg ? -r : r;
}

static inline float
o_int_to_f32 (OInt v)
{
  return (float) o_int_round_to_precision (v, 24);   /* already representable */
}

static inline double
o_int_to_f64 (OInt v)
{
  return o_int_round_to_precision (v, 53);
}

/* ---- the counter hash (numerics.md, "The counter hash") ---- */

static inline void
o_seed_keys (guint64 seed, guint32 *k0, guint32 *k1)
{
  guint64 z = seed + G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  z ^= z >> 31;
  *k0 = (guint32) z;
  *k1 = (guint32) (z >> 32);
}

static inline guint32
o_mix32 (guint32 x)
{
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

static inline guint32
o_hash (guint32 k0, guint32 k1, guint64 i)
{
  return o_mix32 ((guint32) i ^ k0 ^ o_mix32 ((guint32) (i >> 32) ^ k1));
}

/* ---- quantize / dequantize of one element ---- */

typedef struct {
  PiqDtype     qdtype;
  OInt         qmin;
  OInt         qmax;
  gint64       zp;
  double       scale;
  float        s_f;     /* binary32 compute: (float) scale and 1.0f / s_f */
  float        inv_f;
  double       s_d;     /* binary64 compute */
  double       inv_d;
  PiqRoundMode mode;
  guint64      seed;
  guint32      k0;
  guint32      k1;
} OQuant;

static inline void
o_quant_init (OQuant       *o,
              PiqDtype      qdtype,
              double        scale,
              gint64        zp,
              PiqRoundMode  mode,
              guint64       seed)
{
  memset (o, 0, sizeof *o);
  o->qdtype = qdtype;
  o->qmin = o_qmin (qdtype);
  o->qmax = o_qmax (qdtype);
  o->zp = zp;
  o->scale = scale;
  o->s_f = (float) scale;
  o->inv_f = 1.0f / o->s_f;
  o->s_d = scale;
  o->inv_d = 1.0 / scale;
  o->mode = mode;
  o->seed = seed;
  o_seed_keys (seed, &o->k0, &o->k1);
}

static inline OInt
o_clamp (const OQuant *o, OInt v)
{
  return v < o->qmin ? o->qmin : v > o->qmax ? o->qmax : v;
}

/* r is integer-valued (or ±Inf): clamp(r + zp, qmin, qmax) computed exactly. */
static inline OInt
o_clamp_add (const OQuant *o, double r)
{
  if (r >= 0x1p100)
    return o->qmax;
  if (r <= -0x1p100)
    return o->qmin;
  if (fabs (r) < 0x1p62)
    return o_clamp (o, (OInt) (gint64) r + o->zp);      /* faster than the 128-bit conversion */
  return o_clamp (o, (OInt) r + o->zp);
}

static inline OInt
o_quantize_f32 (const OQuant *o, float x, guint64 i)
{
  float v, r;

  if (isnan (x))
    return o->zp;
  if (isinf (x))
    return x > 0 ? o->qmax : o->qmin;

  v = x * o->inv_f;
  if (o->mode == PIQ_ROUND_NEAREST)
    r = nearbyintf (v);
  else
    {
      float f = floorf (v);
      float frac = v - f;
      float u = (float) (o_hash (o->k0, o->k1, i) >> 8) * 0x1p-24f;
      r = f + (u < frac ? 1.0f : 0.0f);
    }
  return o_clamp_add (o, (double) r);
}

static inline OInt
o_quantize_f64 (const OQuant *o, double x, guint64 i)
{
  double v, r;

  if (isnan (x))
    return o->zp;
  if (isinf (x))
    return x > 0 ? o->qmax : o->qmin;

  v = x * o->inv_d;
  if (o->mode == PIQ_ROUND_NEAREST)
    r = nearbyint (v);
  else
    {
      double f = floor (v);
      double frac = v - f;
      double u = (double) (o_hash (o->k0, o->k1, i) >> 8) * 0x1p-24;
      r = f + (u < frac ? 1.0 : 0.0);
    }
  return o_clamp_add (o, r);
}

/* The exact value of element i of a float buffer (as a double). */
static inline double
o_read_float (PiqDtype dtype, const guint8 *buf, guint64 i)
{
  switch (dtype)
    {
    case PIQ_DTYPE_F32:
      {
        float f;
        memcpy (&f, buf + i * 4, 4);
        return f;
      }
    case PIQ_DTYPE_F64:
      {
        double d;
        memcpy (&d, buf + i * 8, 8);
        return d;
      }
    case PIQ_DTYPE_BF16:
    case PIQ_DTYPE_F16:
      {
        guint16 h;
        memcpy (&h, buf + i * 2, 2);
        return dtype == PIQ_DTYPE_BF16 ? o_bf16_to_f32 (h) : o_f16_to_f32 (h);
      }
    default:
      g_assert_not_reached ();
    }
  return 0;
}

/* Raw bits of element i of a float buffer, zero-extended. */
static inline guint64
o_read_float_bits (PiqDtype dtype, const guint8 *buf, guint64 i)
{
  guint64 u = 0;
  gsize size = o_dtype_bits (dtype) / 8;
  memcpy (&u, buf + i * size, size);   /* little-endian host assumed below */
  return u;
}

static inline void
o_write_float_bits (PiqDtype dtype, guint8 *buf, guint64 i, guint64 bits)
{
  gsize size = o_dtype_bits (dtype) / 8;
  memcpy (buf + i * size, &bits, size);
}

/* Stores a binary32 compute result into a f32/bf16/f16 element. */
static inline void
o_store_f32 (PiqDtype dtype, guint8 *buf, guint64 i, float y)
{
  switch (dtype)
    {
    case PIQ_DTYPE_F32:
      memcpy (buf + i * 4, &y, 4);
      break;
    case PIQ_DTYPE_BF16:
      {
        guint16 h = o_f32_to_bf16 (y);
        memcpy (buf + i * 2, &h, 2);
        break;
      }
    case PIQ_DTYPE_F16:
      {
        guint16 h = o_f32_to_f16 (y);
        memcpy (buf + i * 2, &h, 2);
        break;
      }
    default:
      g_assert_not_reached ();
    }
}

/* Writes a double into a float buffer element, rounding to nearest even
 * (for building inputs; f64 -> f32 by the hardware cast, then the software
 * narrowing for bf16/f16). */
static inline void
o_write_float (PiqDtype dtype, guint8 *buf, guint64 i, double x)
{
  if (dtype == PIQ_DTYPE_F64)
    memcpy (buf + i * 8, &x, 8);
  else
    o_store_f32 (dtype, buf, i, (float) x);
}

/* Quantizes element i of a float source buffer. */
static inline OInt
o_quantize_elem (const OQuant *o, PiqDtype src_dtype, const guint8 *src, guint64 i)
{
  if (src_dtype == PIQ_DTYPE_F64)
    return o_quantize_f64 (o, o_read_float (src_dtype, src, i), i);
  return o_quantize_f32 (o, (float) o_read_float (src_dtype, src, i), i);
}

/* Dequantizes q into element i of dst (numerics.md "Dequantize"): computed in
 * the destination's precision, SET or ADD. */
static inline void
o_dequantize_elem (PiqDtype     dst_dtype,
                   guint8      *dst,
                   guint64      i,
                   OInt         q,
                   gint64       zp,
                   double       scale,
                   PiqReduceOp  op)
{
  OInt d = q - zp;

  if (dst_dtype == PIQ_DTYPE_F64)
    {
      double y = o_int_to_f64 (d) * scale;
      if (op == PIQ_REDUCE_ADD)
        y = o_read_float (dst_dtype, dst, i) + y;
      memcpy (dst + i * 8, &y, 8);
    }
  else
    {
      float s = (float) scale;
      float y = o_int_to_f32 (d) * s;
      if (op == PIQ_REDUCE_ADD)
        {
          float w = (float) o_read_float (dst_dtype, dst, i);
          y = w + y;
        }
      o_store_f32 (dst_dtype, dst, i, y);
    }
}

/* ---- packing ---- */

static inline void
o_pack (PiqDtype dtype, guint8 *buf, guint64 i, OInt q)
{
  guint bits = o_dtype_bits (dtype);

  switch (bits)
    {
    case 2:
    case 4:
      {
        guint per = 8 / bits;
        guint shift = (guint) (i % per) * bits;
        guint8 mask = (guint8) (((1u << bits) - 1) << shift);
        guint8 field = (guint8) ((((guint) (guint64) q) & ((1u << bits) - 1)) << shift);
        buf[i / per] = (guint8) ((buf[i / per] & ~mask) | field);
        break;
      }
    case 8:
      buf[i] = (guint8) (guint64) q;
      break;
    case 16:
      {
        guint16 v = (guint16) (guint64) q;
        memcpy (buf + i * 2, &v, 2);
        break;
      }
    case 32:
      {
        guint32 v = (guint32) (guint64) q;
        memcpy (buf + i * 4, &v, 4);
        break;
      }
    case 64:
      {
        guint64 v = (guint64) q;
        memcpy (buf + i * 8, &v, 8);
        break;
      }
    default:
      g_assert_not_reached ();
    }
}

/* Reads element i and sign-extends signed types. */
static inline OInt
o_unpack (PiqDtype dtype, const guint8 *buf, guint64 i)
{
  const ODtypeInfo *info = o_dtype_info (dtype);
  guint bits = info->bits;
  guint64 raw = 0;

  switch (bits)
    {
    case 2:
    case 4:
      {
        guint per = 8 / bits;
        raw = (buf[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1);
        break;
      }
    case 8:
      raw = buf[i];
      break;
    case 16:
      {
        guint16 v;
        memcpy (&v, buf + i * 2, 2);
        raw = v;
        break;
      }
    case 32:
      {
        guint32 v;
        memcpy (&v, buf + i * 4, 4);
        raw = v;
        break;
      }
    case 64:
      memcpy (&raw, buf + i * 8, 8);
      break;
    default:
      g_assert_not_reached ();
    }

  if (info->is_signed && bits < 64 && (raw >> (bits - 1)) & 1)
    return (OInt) raw - ((OInt) 1 << bits);
  if (info->is_signed && bits == 64)
    return (OInt) (gint64) raw;
  return (OInt) raw;
}

/* ---- printing ---- */

/* A decimal string of a 128-bit integer, in a caller buffer of >= 48 chars. */
static inline const char *
o_int_str (OInt v, char *out)
{
  char tmp[48];
  int n = 0;
  gboolean neg = v < 0;
  OUInt m = neg ? (OUInt) 0 - (OUInt) v : (OUInt) v;
  int k = 0;

  do
    {
      tmp[n++] = (char) ('0' + (int) (m % 10));
      m /= 10;
    }
  while (m != 0);
  if (neg)
    out[k++] = '-';
  while (n > 0)
    out[k++] = tmp[--n];
  out[k] = '\0';
  return out;
}

/* ---- deterministic random data ---- */

typedef struct {
  guint64  s;
  gboolean have_spare;
  double   spare;
} ORng;

static inline guint64
o_splitmix64 (guint64 *state)
{
  guint64 z = (*state += G_GUINT64_CONSTANT (0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static inline void
o_rng_init (ORng *rng, guint64 seed)
{
  guint64 st = seed;
  rng->s = o_splitmix64 (&st) | 1;
  rng->have_spare = FALSE;
  rng->spare = 0;
}

/* xorshift64* */
static inline guint64
o_rng_next (ORng *rng)
{
  rng->s ^= rng->s >> 12;
  rng->s ^= rng->s << 25;
  rng->s ^= rng->s >> 27;
  return rng->s * G_GUINT64_CONSTANT (0x2545F4914F6CDD1D);
}

/* uniform in [0, 1) with 53 bits */
static inline double
o_rng_uniform (ORng *rng)
{
  return (double) (o_rng_next (rng) >> 11) * 0x1p-53;
}

static inline guint64
o_rng_below (ORng *rng, guint64 bound)
{
  return bound == 0 ? 0 : o_rng_next (rng) % bound;
}

/* standard normal, Box-Muller */
static inline double
o_rng_normal (ORng *rng)
{
  double u1, u2, r;

  if (rng->have_spare)
    {
      rng->have_spare = FALSE;
      return rng->spare;
    }
  do
    u1 = o_rng_uniform (rng);
  while (u1 <= 0.0);
  u2 = o_rng_uniform (rng);
  r = sqrt (-2.0 * log (u1));
  rng->spare = r * sin (2.0 * G_PI * u2);
  rng->have_spare = TRUE;
  return r * cos (2.0 * G_PI * u2);
}

/* v = x · inv in the compute precision of src_dtype, for a value x that is
 * exactly representable in src_dtype. */
static inline double
o_scaled (const OQuant *o, PiqDtype src_dtype, double x)
{
  if (src_dtype == PIQ_DTYPE_F64)
    return x * o->inv_d;
  return (double) ((float) x * o->inv_f);
}

/* Steps the raw bits of a float element by delta ulps (towards larger
 * magnitude for positive delta), saturating nothing: callers keep |delta| small. */
static inline guint64
o_step_bits (guint64 bits, gint delta)
{
  return (guint64) ((gint64) bits + delta);
}

/* Finds an element x of src_dtype near t / inv for which x · inv == t exactly
 * in the compute precision (t is a .5 tie); returns FALSE if none is within
 * three ulps. */
static inline gboolean
o_find_tie (const OQuant *o, PiqDtype src_dtype, double t, guint64 *bits_out)
{
  guint8 cell[8];
  guint64 base;
  static const gint deltas[] = { 0, 1, -1, 2, -2, 3, -3 };

  if (src_dtype == PIQ_DTYPE_F64)
    o_write_float (src_dtype, cell, 0, t * o->s_d);
  else
    o_write_float (src_dtype, cell, 0, (double) ((float) t * o->s_f));
  base = o_read_float_bits (src_dtype, cell, 0);

  for (gsize k = 0; k < G_N_ELEMENTS (deltas); k++)
    {
      guint64 b = o_step_bits (base, deltas[k]);
      double x;
      o_write_float_bits (src_dtype, cell, 0, b);
      x = o_read_float (src_dtype, cell, 0);
      if (isfinite (x) && o_scaled (o, src_dtype, x) == t)
        {
          *bits_out = b;
          return TRUE;
        }
    }
  *bits_out = base;
  return FALSE;
}

/* Special bit patterns per float dtype. */
static inline guint64
o_special_bits (PiqDtype dtype, guint which)
{
  /* 0 +qNaN, 1 −qNaN, 2 sNaN, 3 +Inf, 4 −Inf, 5 −0, 6 +0, 7 max, 8 −max,
   * 9 smallest subnormal, 10 −smallest subnormal, 11 NaN with payload */
  static const guint64 f32[] = { 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F800000, 0xFF800000,
                                 0x80000000, 0, 0x7F7FFFFF, 0xFF7FFFFF, 1, 0x80000001, 0x7FC12345 };
  static const guint64 f64[] = { G_GUINT64_CONSTANT (0x7FF8000000000000), G_GUINT64_CONSTANT (0xFFF8000000000000),
                                 G_GUINT64_CONSTANT (0x7FF0000000000001), G_GUINT64_CONSTANT (0x7FF0000000000000),
                                 G_GUINT64_CONSTANT (0xFFF0000000000000), G_GUINT64_CONSTANT (0x8000000000000000),
                                 0, G_GUINT64_CONSTANT (0x7FEFFFFFFFFFFFFF), G_GUINT64_CONSTANT (0xFFEFFFFFFFFFFFFF),
                                 1, G_GUINT64_CONSTANT (0x8000000000000001), G_GUINT64_CONSTANT (0x7FF8000012345678) };
  static const guint64 bf16[] = { 0x7FC0, 0xFFC0, 0x7F81, 0x7F80, 0xFF80, 0x8000, 0, 0x7F7F, 0xFF7F, 1, 0x8001, 0x7FC5 };
  static const guint64 f16[] = { 0x7E00, 0xFE00, 0x7C01, 0x7C00, 0xFC00, 0x8000, 0, 0x7BFF, 0xFBFF, 1, 0x8001, 0x7E55 };
  g_assert (which < G_N_ELEMENTS (f32));
  switch (dtype)
    {
    case PIQ_DTYPE_F32: return f32[which];
    case PIQ_DTYPE_F64: return f64[which];
    case PIQ_DTYPE_BF16: return bf16[which];
    case PIQ_DTYPE_F16: return f16[which];
    default: g_assert_not_reached ();
    }
  return 0;
}

#define O_N_SPECIALS 12

/* Fills n elements of src_dtype with test data for quantizing with o:
 * uniform values over the representable range (and 10 % beyond), Gaussian
 * values, exact .5 ties of x · inv, values one ulp either side of a tie,
 * values at and around the clamp boundaries, NaN/±Inf/−0/huge/subnormal
 * specials and values beyond every integer range. */
static inline void
o_gen_source (PiqDtype       src_dtype,
              guint8        *buf,
              guint64        n,
              guint64        seed,
              const OQuant  *o)
{
  ORng rng;
  double lo_v = (double) (o->qmin - o->zp);     /* v range that lands in [qmin, qmax] */
  double hi_v = (double) (o->qmax - o->zp);
  double span = hi_v - lo_v;
  double tie_lim = src_dtype == PIQ_DTYPE_F64 ? 0x1p50 : 0x1p22;
  double scale = src_dtype == PIQ_DTYPE_F64 ? o->s_d : (double) o->s_f;

  o_rng_init (&rng, seed);

  for (guint64 i = 0; i < n; i++)
    {
      guint64 pick = o_rng_below (&rng, 100);
      double x;

      if (pick < 40)
        {
          double v = lo_v - 0.1 * span + o_rng_uniform (&rng) * 1.2 * span;
          x = v * scale;
          o_write_float (src_dtype, buf, i, x);
        }
      else if (pick < 55)
        {
          x = o_rng_normal (&rng) * (pick & 1 ? 1.0 : span * scale / 6.0);
          o_write_float (src_dtype, buf, i, x);
        }
      else if (pick < 70)
        {
          /* an exact tie t = k + 0.5 with k in (or just beyond) the range */
          double klo = MAX (lo_v - 2, -tie_lim), khi = MIN (hi_v + 2, tie_lim);
          double k = floor (klo + o_rng_uniform (&rng) * (khi - klo));
          guint64 bits;
          if (pick & 1)           /* also small ties, where they matter most */
            k = (double) ((gint64) o_rng_below (&rng, 16) - 8);
          o_find_tie (o, src_dtype, k + 0.5, &bits);
          if (pick >= 66)                   /* one ulp around the tie */
            bits = o_step_bits (bits, (pick & 2) ? 1 : -1);
          o_write_float_bits (src_dtype, buf, i, bits);
        }
      else if (pick < 78)
        {
          /* around the clamp boundaries */
          static const double deltas[] = { -1.5, -1, -0.5, -0.25, 0, 0.25, 0.5, 1, 1.5 };
          double d = deltas[o_rng_below (&rng, G_N_ELEMENTS (deltas))];
          double v = ((pick & 1) ? hi_v : lo_v) + d;
          o_write_float (src_dtype, buf, i, v * scale);
        }
      else if (pick < 90)
        {
          o_write_float_bits (src_dtype, buf, i,
                              o_special_bits (src_dtype, (guint) o_rng_below (&rng, O_N_SPECIALS)));
        }
      else
        {
          static const double huge[] = { 1e30, -1e30, 1e300, -1e300, 0x1p63, -0x1p63, 0x1p64, -0x1p64,
                                         1e10, -1e10, 65504.0, 65520.0, -65520.0, 3.0e38, 1.0, -1.0 };
          x = huge[o_rng_below (&rng, G_N_ELEMENTS (huge))];
          if (pick >= 95)
            x *= scale;   /* huge in units of the scale */
          o_write_float (src_dtype, buf, i, x);
        }
    }
}

/* Random finite values of dtype (plus a few ±Inf, NaN, −0 and values near
 * the dtype's maximum so that an ADD can overflow), used as the prior
 * content of an ADD destination. */
static inline void
o_gen_prefill (PiqDtype dtype, guint8 *buf, guint64 n, guint64 seed, double magnitude)
{
  ORng rng;

  o_rng_init (&rng, seed);
  for (guint64 i = 0; i < n; i++)
    {
      guint64 pick = o_rng_below (&rng, 100);
      if (pick < 85)
        o_write_float (dtype, buf, i, o_rng_normal (&rng) * magnitude);
      else if (pick < 90)
        o_write_float (dtype, buf, i, (pick & 1 ? 1 : -1) * (dtype == PIQ_DTYPE_F16 ? 65504.0 :
                                                              dtype == PIQ_DTYPE_F64 ? DBL_MAX : FLT_MAX));
      else
        o_write_float_bits (dtype, buf, i, o_special_bits (dtype, (guint) o_rng_below (&rng, O_N_SPECIALS)));
    }
}

/* ---- comparisons ---- */

static inline gboolean
o_float_bits_is_nan (PiqDtype dtype, guint64 b)
{
  switch (dtype)
    {
    case PIQ_DTYPE_F32:  return (b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu) != 0;
    case PIQ_DTYPE_F64:  return (b & G_GUINT64_CONSTANT (0x7FF0000000000000)) == G_GUINT64_CONSTANT (0x7FF0000000000000)
                                && (b & G_GUINT64_CONSTANT (0xFFFFFFFFFFFFF)) != 0;
    case PIQ_DTYPE_BF16: return (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    case PIQ_DTYPE_F16:  return (b & 0x7C00) == 0x7C00 && (b & 0x3FF) != 0;
    default: g_assert_not_reached ();
    }
  return FALSE;
}

static inline gboolean
o_float_bits_is_quiet_nan (PiqDtype dtype, guint64 b)
{
  if (!o_float_bits_is_nan (dtype, b))
    return FALSE;
  switch (dtype)
    {
    case PIQ_DTYPE_F32:  return (b & 0x400000u) != 0;
    case PIQ_DTYPE_F64:  return (b & G_GUINT64_CONSTANT (0x8000000000000)) != 0;
    case PIQ_DTYPE_BF16: return (b & 0x40) != 0;
    case PIQ_DTYPE_F16:  return (b & 0x200) != 0;
    default: g_assert_not_reached ();
    }
  return FALSE;
}

/* Compares float buffers element by element: bits must be equal, except that
 * where the oracle has a NaN (whose payload numerics.md leaves open) the
 * result must be a quiet NaN. Returns the first bad index or -1. */
static inline gint64
o_compare_floats (PiqDtype dtype, const guint8 *expected, const guint8 *got, guint64 n)
{
  gsize size = o_dtype_bits (dtype) / 8;

  /* n == 0 may come with NULL buffers: memcmp's arguments must not be NULL even then */
  if (n == 0 || memcmp (expected, got, n * size) == 0)
    return -1;
  for (guint64 i = 0; i < n; i++)
    {
      guint64 e = o_read_float_bits (dtype, expected, i);
      guint64 g = o_read_float_bits (dtype, got, i);
      if (e == g)
        continue;
      if (o_float_bits_is_nan (dtype, e) && o_float_bits_is_quiet_nan (dtype, g))
        continue;
      return (gint64) i;
    }
  return -1;
}

/* ---- compute_params, written from the formulas ---- */

#define O_EPS_F 0x1p-23f

/* min/max rule in binary32: returns the scale (as float) and the zero point. */
static inline void
o_params_min_max (PiqDtype qdtype, float lo, float hi, gboolean include_zero,
                  float *scale_out, OInt *zp_out)
{
  OInt qmin = o_qmin (qdtype), qmax = o_qmax (qdtype);
  float range = o_int_to_f32 (qmax - qmin);
  float scale, r;
  OInt zp;

  if (include_zero || lo == hi)
    {
      lo = MIN (lo, 0.0f);
      hi = MAX (hi, 0.0f);
    }
  scale = (hi - lo) / range;
  if (!(scale >= O_EPS_F))
    scale = O_EPS_F;
  r = nearbyintf (lo / scale);
  zp = qmin - (OInt) r;
  zp = zp < qmin ? qmin : zp > qmax ? qmax : zp;
  *scale_out = scale;
  *zp_out = zp;
}

static inline void
o_params_abs_max (PiqDtype qdtype, float a, float *scale_out, OInt *zp_out)
{
  OInt qmin = o_qmin (qdtype), qmax = o_qmax (qdtype);
  float half = o_int_to_f32 (qmax - qmin) / 2.0f;
  float scale = a / half;

  if (!(scale >= O_EPS_F))
    scale = O_EPS_F;
  *scale_out = scale;
  *zp_out = o_dtype_info (qdtype)->is_signed ? 0 : (qmin + qmax + 1) / 2;
}

/* mean/σ rule from exact sums (binary64). */
static inline void
o_params_mean_std (PiqDtype qdtype, double sum, double sum2, guint64 n,
                   double *scale_out, OInt *zp_out)
{
  const ODtypeInfo *info = o_dtype_info (qdtype);
  double mean = sum / (double) n;
  double var = n > 1 ? (sum2 - sum * sum / (double) n) / (double) (n - 1) : 0.0;
  double sigma = sqrt (MAX (var, 0.0));
  guint wbits = info->bits - (info->is_signed ? 1 : 0);
  OInt type_max = ((OInt) 1 << wbits) - 1;
  double c = info->bits == 2 ? 1.4 : info->bits == 4 ? 2.7 : 12.0;
  double scale = c * sigma / o_int_to_f64 (type_max);
  OInt centre = info->is_signed ? 0 : (type_max + 1) >> 1;
  double r;
  OInt zp, qmin = o_qmin (qdtype), qmax = o_qmax (qdtype);

  if (scale == 0)
    scale = 1;
  r = round (mean / scale);
  if (r >= 0x1p100)
    zp = qmin;
  else if (r <= -0x1p100)
    zp = qmax;
  else
    zp = centre - (OInt) r;
  zp = zp < qmin ? qmin : zp > qmax ? qmax : zp;
  *scale_out = scale;
  *zp_out = zp;
}

/* ---- buffers with guard bytes ---- */

/* A caller-owned buffer holding `size` bytes at `offset` from a 64-byte
 * aligned base, with guard bytes after it; everything starts as `fill`. */
typedef struct {
  guint8 *base;
  gsize   offset;
  gsize   size;
  gsize   total;
  guint8  fill;
} OBuf;

#define O_GUARD 64

static inline void
o_buf_init (OBuf *b, gsize size, gsize offset, guint8 fill)
{
  b->offset = offset;
  b->size = size;
  b->total = offset + size + O_GUARD;
  b->fill = fill;
  b->base = g_aligned_alloc (1, b->total, 64);
  memset (b->base, fill, b->total);
}

static inline guint8 *
o_buf_data (OBuf *b)
{
  return b->base + b->offset;
}

/* TRUE if the bytes before and after the payload still hold the fill byte. */
static inline gboolean
o_buf_guards_intact (const OBuf *b)
{
  for (gsize i = 0; i < b->offset; i++)
    if (b->base[i] != b->fill)
      return FALSE;
  for (gsize i = b->offset + b->size; i < b->total; i++)
    if (b->base[i] != b->fill)
      return FALSE;
  return TRUE;
}

static inline void
o_buf_clear (OBuf *b)
{
  g_aligned_free (b->base);
  b->base = NULL;
}

/* TRUE if the unused high bits of a packed buffer's partial last byte are 0. */
static inline gboolean
o_padding_is_zero (PiqDtype dtype, const guint8 *buf, guint64 n)
{
  guint bits = o_dtype_bits (dtype);
  guint64 used = n * bits % 8;

  if (bits >= 8 || used == 0)
    return TRUE;
  return (buf[n * bits / 8] >> used) == 0;
}

/* test-kernels.c: every SIMD table the CPU can run, byte-identical to the scalar table
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Plain C on the kernel layer alone (no GLib), so the same program runs natively and,
 * cross-built for AArch64, under qemu-user (test-kernels-neon.sh). It prints TAP:
 * one test point per (table, kernel list entry), e.g.
 *   ok 17 - /kernels/avx2/quantize/f32/uint4/stochastic
 * each covering lengths that cross vector and packing boundaries, unaligned
 * pointers, several scales and zero points (range ends included), indices on both
 * sides of 2^32, and data with ties, near-ties, NaN, ±Inf, −0 and subnormals.
 * Tables the CPU cannot run are reported as skipped.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piq-kernels-private.h"
#include "piq-convert-private.h"
#include "piq-cpu-private.h"
#include "piq-formats-private.h"
#include "piq-engine-private.h"

static const size_t lengths[] = { 0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 1023, 4099 };
#define MAX_N 4099
#define GUARD 64

static const uint64_t indices[] = { 0, 1000003, 0xffffffffull - MAX_N, 0x100000007ull };
static const double scales[] = { 0.0173, 0.5, 1.0, 3.1e-3, 96.0 };

static const int int_bits[] = {
#define BITS_(N, n, i, bits, sgn) [i] = bits,
  PIQ_INT_TYPES (BITS_)
#undef BITS_
};
static const int int_signed[] = {
#define SGN_(N, n, i, bits, sgn) [i] = sgn,
  PIQ_INT_TYPES (SGN_)
#undef SGN_
};
static const int float_bytes[] = { 4, 8, 2, 2 };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd (void)
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A value of the kinds that tell rounding paths apart, for a given scale. */
static double
interesting (double scale)
{
  uint64_t r = rnd ();
  double k = (double) ((int64_t) (r >> 40) % 600 - 300);

  switch (r % 16)
    {
    case 0:  return (k + 0.5) * scale;                 /* exact tie (when representable) */
    case 1:  return nextafter ((k + 0.5) * scale, INFINITY);
    case 2:  return nextafter ((k + 0.5) * scale, -INFINITY);
    case 3:  return k * scale;
    case 4:  return NAN;
    case 5:  return (r >> 8) & 1 ? INFINITY : -INFINITY;
    case 6:  return -0.0;
    case 7:  return ldexp ((double) (r >> 44), -149 + (int) ((r >> 4) & 7)); /* subnormal f32 */
    case 8:  return (r >> 8) & 1 ? 3.0e38 : -1.0e30;
    default: return ((double) (int64_t) (r >> 11) / 9007199254740992.0) * 300.0 * scale;
    }
}

static void
fill_float (uint8_t *p, size_t n, int ft, double scale)
{
  for (size_t i = 0; i < n; i++)
    {
      double v = interesting (scale);
      if (rnd () % 32 == 0)        /* raw bit patterns: NaN payloads, odd encodings */
        {
          uint64_t bits = rnd ();
          memcpy (p + i * float_bytes[ft], &bits, float_bytes[ft]);
          continue;
        }
      switch (ft)
        {
        case PIQ_F_F32: { float f = (float) v; memcpy (p + 4 * i, &f, 4); } break;
        case PIQ_F_F64: memcpy (p + 8 * i, &v, 8); break;
        case PIQ_F_BF16: { uint16_t h = piq_f32_to_bf16 ((float) v); memcpy (p + 2 * i, &h, 2); } break;
        default: { uint16_t h = piq_f32_to_f16 ((float) v); memcpy (p + 2 * i, &h, 2); } break;
        }
    }
}

static void
fill_random (uint8_t *p, size_t bytes)
{
  for (size_t i = 0; i < bytes; i++)
    p[i] = (uint8_t) rnd ();
}

/* Kernel arguments as the library prepares them (piq-quantizer.c prepare_args). */
static PiqKernelArgs
make_args (double scale, int ii, int zp_kind)
{
  PiqKernelArgs a;
  int bits = int_bits[ii], sgn = int_signed[ii];
  __int128 qmin = sgn ? -((__int128) 1 << (bits - 1)) : 0;
  __int128 qmax = sgn ? ((__int128) 1 << (bits - 1)) - 1 : ((__int128) 1 << bits) - 1;
  __int128 zp_max = qmax > INT64_MAX ? INT64_MAX : qmax;

  memset (&a, 0, sizeof a);
  a.scale_d = scale;
  a.inv_d = 1.0 / scale;
  a.scale_f = (float) scale;
  a.inv_f = 1.0f / a.scale_f;
  a.qmin = qmin;
  a.qmax = qmax;
  switch (zp_kind)
    {
    case 0:  a.zero_point = sgn ? 0 : (int64_t) ((qmax + 1) / 2); break;
    case 1:  a.zero_point = (int64_t) qmin; break;
    case 2:  a.zero_point = (int64_t) zp_max; break;
    default: a.zero_point = (int64_t) (qmin + (__int128) (rnd () % (uint64_t) ((zp_max - qmin) > 1000 ? 1000 : (zp_max - qmin + 1)))); break;
    }
  a.key0 = (uint32_t) rnd ();
  a.key1 = (uint32_t) rnd ();
  a.stream = (int) (rnd () & 1);      /* non-temporal stores: same bytes */
  return a;
}

static size_t
packed_bytes (int ii, size_t n)
{
  return (n * (size_t) int_bits[ii] + 7) / 8;
}

static int n_test = 0, n_failed = 0;
static char diag[512];

static void
report (int ok, const char *table, const char *entry, const char *skip)
{
  n_test++;
  if (skip != NULL)
    printf ("ok %d - /kernels/%s/%s # SKIP %s\n", n_test, table, entry, skip);
  else if (ok)
    printf ("ok %d - /kernels/%s/%s\n", n_test, table, entry);
  else
    {
      n_failed++;
      printf ("not ok %d - /kernels/%s/%s\n# %s\n", n_test, table, entry, diag);
    }
  fflush (stdout);
}

/* Compare two output buffers of `bytes` plus guard; describe the first difference. */
static int
same (const uint8_t *want, const uint8_t *got, size_t bytes, size_t n, size_t off, uint64_t index,
      double scale, int64_t zp)
{
  for (size_t i = 0; i < bytes + GUARD; i++)
    if (want[i] != got[i])
      {
        snprintf (diag, sizeof diag, "n=%zu offset=%zu index=%llu scale=%g zp=%lld: byte %zu%s is %02x, scalar wrote %02x",
                  n, off, (unsigned long long) index, scale, (long long) zp, i,
                  i >= bytes ? " (past the end)" : "", got[i], want[i]);
        return 0;
      }
  return 1;
}

/* 64-byte aligned, so offset 0 takes the streaming (aligned) store path */
#define BUF_ALIGNED __attribute__ ((aligned (64)))
static uint8_t src_buf[MAX_N * 8 + GUARD + 16] BUF_ALIGNED, want_buf[MAX_N * 8 + GUARD + 16] BUF_ALIGNED;
static uint8_t got_buf[MAX_N * 8 + GUARD + 16] BUF_ALIGNED, init_buf[MAX_N * 8 + GUARD + 16] BUF_ALIGNED;

static int
check_quantize (PiqQuantizeFn ref, PiqQuantizeFn fn, int ft, int ii, int is_requantize)
{
  for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++)
    for (int zk = 0; zk < 4; zk++)
      for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
        for (size_t off = 0; off < 2; off++)
          {
            size_t n = lengths[li];
            uint64_t index = indices[(li + s + zk) % 4];
            PiqKernelArgs a = make_args (scales[s], ii, zk);
            size_t out = is_requantize ? n * float_bytes[ft] : packed_bytes (ii, n);
            uint8_t *src = src_buf + off * float_bytes[ft];

            fill_float (src, n, ft, scales[s]);
            fill_random (init_buf, out + GUARD);
            if (is_requantize)      /* ADD reads the destination: give it finite values */
              fill_float (init_buf, n, ft, scales[s]);
            memcpy (want_buf, init_buf, out + GUARD);
            memcpy (got_buf + off, init_buf, out + GUARD);
            ref (src, want_buf, index, n, &a);
            fn (src, got_buf + off, index, n, &a);
            if (!same (want_buf, got_buf + off, out, n, off, index, scales[s], a.zero_point))
              return 0;
          }
  return 1;
}

static int
check_dequantize (PiqDequantizeFn ref, PiqDequantizeFn fn, int ii, int ft)
{
  for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++)
    for (int zk = 0; zk < 4; zk++)
      for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
        for (size_t off = 0; off < 2; off++)
          {
            size_t n = lengths[li];
            PiqKernelArgs a = make_args (scales[s], ii, zk);
            size_t out = n * float_bytes[ft];
            uint8_t *src = src_buf + off;

            fill_random (src, packed_bytes (ii, n));
            fill_random (init_buf, out + GUARD);
            fill_float (init_buf, n, ft, scales[s] * 16);
            memcpy (want_buf, init_buf, out + GUARD);
            memcpy (got_buf + off * float_bytes[ft], init_buf, out + GUARD);
            ref (src, want_buf, n, &a);
            fn (src, got_buf + off * float_bytes[ft], n, &a);
            if (!same (want_buf, got_buf + off * float_bytes[ft], out, n, off, 0, scales[s], a.zero_point))
              return 0;
          }
  return 1;
}

static int
check_reduce (PiqMinMaxFn ref_mm, PiqMinMaxFn mm, PiqSumsFn ref_s, PiqSumsFn sm, int ft)
{
  static const size_t rlen[] = { 0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099 };

  for (int rep = 0; rep < 24; rep++)
    for (size_t li = 0; li < sizeof rlen / sizeof rlen[0]; li++)
      for (size_t off = 0; off < 2; off++)
        {
          size_t n = rlen[li];
          uint8_t *src = src_buf + off * float_bytes[ft];
          int finite_only = rep % 2;

          fill_float (src, n, ft, 0.01 * (rep + 1));
          if (finite_only)        /* sums of finite data are what compute_params uses */
            for (size_t i = 0; i < n; i++)
              if (!isfinite (piq_load_f (src, i, ft == PIQ_F_F64 ? PIQ_F_F32 : ft)) || ft == PIQ_F_F64)
                {
                  if (ft == PIQ_F_F64)
                    {
                      double v = (double) (int64_t) (rnd () >> 20) * 1e-9;
                      memcpy (src + 8 * i, &v, 8);
                    }
                  else
                    piq_store_f (src, i, (float) (int64_t) (rnd () >> 40) * 0.03f, ft);
                }
          if (mm != NULL)
            {
              PiqMinMax w, g;
              ref_mm (src, n, &w);
              mm (src, n, &g);
              if (memcmp (&w.min, &g.min, 8) || memcmp (&w.max, &g.max, 8) || w.non_finite != g.non_finite)
                {
                  snprintf (diag, sizeof diag, "minmax n=%zu: scalar (%a, %a, %d) vector (%a, %a, %d)",
                            n, w.min, w.max, w.non_finite, g.min, g.max, g.non_finite);
                  return 0;
                }
            }
          if (sm != NULL && finite_only)
            {
              PiqSums w, g;
              ref_s (src, n, &w);
              sm (src, n, &g);
              if (memcmp (&w.sum, &g.sum, 8) || memcmp (&w.sum_sq, &g.sum_sq, 8))
                {
                  snprintf (diag, sizeof diag, "sums n=%zu: scalar (%a, %a) vector (%a, %a)",
                            n, w.sum, w.sum_sq, g.sum, g.sum_sq);
                  return 0;
                }
            }
        }
  return 1;
}

/* Float index of a name part ("f32"), integer index ("uint4"), etc. */
static int
float_index (const char *name)
{
  static const char *const names[] = { "f32", "f64", "bf16", "f16" };
  for (int i = 0; i < 4; i++)
    if (strcmp (names[i], name) == 0)
      return i;
  return -1;
}

static int
int_index (const char *name)
{
  static const char *const names[] = {
#define NAME_(N, n, i, bits, sgn) [i] = #n,
    PIQ_INT_TYPES (NAME_)
#undef NAME_
  };
  for (int i = 0; i < PIQ_N_INT; i++)
    if (strcmp (names[i], name) == 0)
      return i;
  return -1;
}

/* One runner per op, called from the list expansion below. */
static void
run_quantize (const PiqKernelTable *t, PiqQuantizeFn fn, PiqQuantizeFn ref, const char *f, const char *i,
              const char *r, const char *skip)
{
  char entry[128];
  snprintf (entry, sizeof entry, "quantize/%s/%s/%s", f, i, r);
  report (skip != NULL || check_quantize (ref, fn, float_index (f), int_index (i), 0), t->name, entry, skip);
}

static void
run_dequantize (const PiqKernelTable *t, PiqDequantizeFn fn, PiqDequantizeFn ref, const char *i,
                const char *f, const char *o, const char *skip)
{
  char entry[128];
  snprintf (entry, sizeof entry, "dequantize/%s/%s/%s", i, f, o);
  report (skip != NULL || check_dequantize (ref, fn, int_index (i), float_index (f)), t->name, entry, skip);
}

static void
run_requantize (const PiqKernelTable *t, PiqRequantizeFn fn, PiqRequantizeFn ref, const char *f,
                const char *r, const char *o, const char *skip)
{
  char entry[128];
  int ok = 1;

  snprintf (entry, sizeof entry, "requantize/%s/%s/%s", f, r, o);
  /* requantize's range comes from the arguments: try every integer type's */
  for (int ii = 0; ii < PIQ_N_INT && ok && skip == NULL; ii++)
    ok = check_quantize (ref, fn, float_index (f), ii, 1);
  report (ok, t->name, entry, skip);
}

static void
run_minmax (const PiqKernelTable *t, PiqMinMaxFn fn, PiqMinMaxFn ref, const char *f, const char *skip)
{
  char entry[128];
  snprintf (entry, sizeof entry, "minmax/%s", f);
  report (skip != NULL || check_reduce (ref, fn, NULL, NULL, float_index (f)), t->name, entry, skip);
}

static void
run_sums (const PiqKernelTable *t, PiqSumsFn fn, PiqSumsFn ref, const char *f, const char *skip)
{
  char entry[128];
  snprintf (entry, sizeof entry, "sums/%s", f);
  report (skip != NULL || check_reduce (NULL, NULL, ref, fn, float_index (f)), t->name, entry, skip);
}


/* ---- block formats: every configuration the vector bodies take, and some they
 * hand to the scalar driver, byte-identical to the scalar entry ---- */

typedef struct { int code, bits, sgn; PiqScaleKind kind; int rule, sat, hf, e8m0; } BlockCase;

static const BlockCase block_cases[] = {
  /* integers: affine, symmetric, f16 scales, MX */
  { -1, 8, 0, PIQ_SCALE_F32, PIQ_BRULE_MIN_MAX, 1, 0, 0 },
  { -1, 8, 1, PIQ_SCALE_F32, PIQ_BRULE_ABS_MAX, 1, 0, 0 },
  { -1, 4, 0, PIQ_SCALE_F16, PIQ_BRULE_MIN_MAX, 1, 0, 0 },
  { -1, 4, 1, PIQ_SCALE_F32, PIQ_BRULE_ABS_MAX, 1, 0, 0 },
  { -1, 8, 1, PIQ_SCALE_E8M0, PIQ_BRULE_ABS_MAX, 1, 0, PIQ_E8M0_FLOOR },
  { -1, 8, 0, PIQ_SCALE_F32, PIQ_BRULE_ABS_MAX, 1, 0, 0 },   /* unsigned symmetric: zp 128 */
  { -1, 4, 0, PIQ_SCALE_F32, PIQ_BRULE_ABS_MAX, 1, 0, 0 },
  /* FP8 with float scales in both overflow modes, MXFP8 by each rule */
  { PIQ_C_FP8_E4M3, 8, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  { PIQ_C_FP8_E4M3, 8, 0, PIQ_SCALE_F16, 0, 0, 0, 0 },
  { PIQ_C_FP8_E5M2, 8, 0, PIQ_SCALE_F32, 0, 0, 0, 0 },
  { PIQ_C_FP8_E4M3, 8, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_FLOOR },
  { PIQ_C_FP8_E4M3, 8, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_CEIL },
  { PIQ_C_FP8_E5M2, 8, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_EVEN },
  { PIQ_C_FP4_E2M1, 4, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_FLOOR },
  { PIQ_C_FP4_E2M1, 4, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_RCEIL },
  { PIQ_C_FP4_E2M1, 4, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  { PIQ_C_FP8_E5M2, 8, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  { PIQ_C_NF4, 4, 0, PIQ_SCALE_F32, 0, 1, 1, 0 },
  { PIQ_C_NF4, 4, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  { PIQ_C_NF4, 4, 0, PIQ_SCALE_F16, 0, 1, 0, 0 },
  /* bnb FP4 in both nibble orders, f32 and f16 scales */
  { PIQ_C_FP4_BNB, 4, 0, PIQ_SCALE_F32, 0, 1, 1, 0 },
  { PIQ_C_FP4_BNB, 4, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  { PIQ_C_FP4_BNB, 4, 0, PIQ_SCALE_F16, 0, 1, 1, 0 },
  { PIQ_C_FP4_BNB, 4, 0, PIQ_SCALE_F16, 0, 1, 0, 0 },
  /* FP6 (6-bit storage): MXFP6 by each rule, f32 and f16 scales in both overflow
   * modes (the same codes: FP6 has no Inf or NaN) */
  { PIQ_C_FP6_E2M3, 6, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_FLOOR },
  { PIQ_C_FP6_E3M2, 6, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_FLOOR },
  { PIQ_C_FP6_E2M3, 6, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_EVEN },
  { PIQ_C_FP6_E3M2, 6, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_CEIL },
  { PIQ_C_FP6_E2M3, 6, 0, PIQ_SCALE_E8M0, 0, 1, 0, PIQ_E8M0_RCEIL },
  { PIQ_C_FP6_E2M3, 6, 0, PIQ_SCALE_F32, 0, 0, 0, 0 },
  { PIQ_C_FP6_E3M2, 6, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  { PIQ_C_FP6_E3M2, 6, 0, PIQ_SCALE_F16, 0, 0, 0, 0 },
  /* the scalar driver's: must be handed over unchanged */
  { PIQ_C_BFP3, 4, 0, PIQ_SCALE_E8M0, 0, 1, 0, 0 },
  { PIQ_C_BINARY, 1, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  /* NF8 (f32 and f16 scales), BFP: MSFP12 (BFP3, either nibble order) and MSFP16
   * (BFP7) in the vector bodies, the other widths handed to the scalar driver */
  { PIQ_C_NF8, 8, 0, PIQ_SCALE_F32, 0, 1, 0, 0 },
  { PIQ_C_NF8, 8, 0, PIQ_SCALE_F16, 0, 1, 0, 0 },
  { PIQ_C_BFP3, 4, 0, PIQ_SCALE_E8M0, 0, 1, 1, 0 },
  { PIQ_C_BFP7, 8, 0, PIQ_SCALE_E8M0, 0, 1, 0, 0 },
  { PIQ_C_BFP2, 3, 0, PIQ_SCALE_E8M0, 0, 1, 0, 0 },
  { PIQ_C_BFP8, 9, 0, PIQ_SCALE_E8M0, 0, 1, 0, 0 },
};
static const size_t block_sizes[] = { 0 /* per tensor */, 16, 32, 64, 128, 24, 3 };
static const size_t block_lengths[] = { 0, 1, 7, 16, 17, 33, 64, 65, 127, 1023, 4099 };

static PiqBlockArgs
block_args (const BlockCase *c, size_t block, int stochastic)
{
  PiqBlockArgs a;

  memset (&a, 0, sizeof a);
  a.code = c->code;
  a.bits = c->bits;
  a.qmin = c->code < 0 && c->sgn ? -(1 << (c->bits - 1)) : 0;
  a.qmax = c->code < 0 ? (c->sgn ? (1 << (c->bits - 1)) - 1 : (1 << c->bits) - 1) : 0;
  a.scale_kind = c->kind;
  a.rule = (PiqBlockRule) c->rule;
  a.include_zero = 1;
  a.e8m0_rule = (PiqE8m0Rule) c->e8m0;
  a.saturate = c->sat;
  a.high_first = c->hf;
  a.stochastic = stochastic;
  a.key0 = 0x1234567u;
  a.key1 = 0x89abcdefu;
  a.fixed = block == 0;
  a.block = block == 0 ? 64 : block;
  a.scale = 0.0173f;
  a.zero_point = 0;
  return a;
}

/* Stochastic rounding's draw for element i depends on the keys and index0 + i only:
 * a fresh pair of keys per call, and index0 at 0, anywhere below or past 2^32, or
 * such that the call's indices cross a multiple of 2^32 (the vector bodies hand
 * such a call to the scalar driver), or a multiple of 64 such that they cross a
 * multiple of 2^16 (the vector bodies' hash tables are per 2^16-segment). */
static void
stoch_seed (PiqBlockArgs *a, uint64_t first, size_t n)
{
  uint64_t r = rnd () % 5;

  a->key0 = (uint32_t) rnd ();
  a->key1 = (uint32_t) rnd ();
  a->index0 = r == 0 ? 0
              : r == 1 ? rnd () % (1ull << 40)
              : r == 2 ? (3ull << 32) - first - rnd () % (n + 1)
              : r == 3 ? (rnd () % (1ull << 32)) & ~63ull
              : (((1 + rnd () % 0xffffull) << 16) - first - rnd () % (n + 1)) & ~63ull;
}

static int
check_block (const PiqKernelTable *t, const BlockCase *c)
{
  enum { MAXN = 4099, FIRST = 384 * 3 };
  static float xbuf[MAXN + 4];
  /* aligned, so that offset 0 takes the streaming paths when a.stream is set */
  static uint8_t codes[2][(FIRST + MAXN) * 2 + 64] BUF_ALIGNED, scl[2][(FIRST + MAXN) * 4 + 64];
  static int32_t zps[2][FIRST + MAXN];
  static float y[2][MAXN + 4] BUF_ALIGNED;

  for (size_t bi = 0; bi < sizeof block_sizes / sizeof block_sizes[0]; bi++)
    for (size_t li = 0; li < sizeof block_lengths / sizeof block_lengths[0]; li++)
      for (int stoch = 0; stoch < 3; stoch++)   /* nearest, then two seeds */
        for (int off = 0; off < 2; off++)
          {
            size_t n = block_lengths[li];
            PiqBlockArgs a = block_args (c, block_sizes[bi], stoch > 0);
            /* a chunk may start at any whole unit: a multiple of the block and of 8 */
            uint64_t first = off ? (uint64_t) a.block * 8 * 3 : 0;
            size_t code_bytes = (size_t) ((first + n) * (uint64_t) c->bits + 7) / 8 + 8;
            int add = (int) (rnd () & 1);
            float *x = xbuf + rnd () % 4;  /* unaligned sources too */
            /* and unaligned codes and destinations; streamed stores (same bytes) */
            size_t co = rnd () % 4 == 0 ? rnd () % 4 : 0, yo = rnd () % 4 == 0 ? rnd () % 4 : 0;

            if (stoch)
              stoch_seed (&a, first, n);
            a.stream = (int) (rnd () & 1);
            if (c->code < 0 && c->kind == PIQ_SCALE_E8M0 && a.fixed)
              continue;
            double mag = ldexp (1.0, (int) (rnd () % 40) - 20);
            /* the vector bodies take another route for groups of blocks whose values
             * (and inverse scales) are all finite: a third of the calls have no NaN
             * or Inf, a third of those some all-zero or all-tiny blocks as well */
            int data = (int) (rnd () % 3);
            for (size_t i = 0; i < n; i++)
              {
                do
                  x[i] = (float) interesting (mag / 300);
                while (data > 0 && !isfinite (x[i]));
                if (isnan (x[i]) && rnd () % 2)
                  x[i] = -x[i];          /* a NaN with its sign bit set */
              }
            if (data == 2 && !a.fixed)
              for (size_t b = 0; b < n; b += a.block)
                {
                  uint64_t r = rnd () % 8;
                  for (size_t i = b; i < n && i < b + a.block && r < 2; i++)
                    x[i] = r == 0 ? 0.0f : x[i] * 0x1p-140f;
                }
            for (int k = 0; k < 2; k++)
              {
                memset (codes[k], 0x5a, sizeof codes[k]);
                memset (scl[k], 0x5a, sizeof scl[k]);
                memset (zps[k], 0x5a, sizeof zps[k]);
              }
            piq_kernels_scalar.block_quantize (&a, x, first, n, codes[0] + co, scl[0], zps[0]);
            t->block_quantize (&a, x, first, n, codes[1] + co, scl[1], zps[1]);
            if (memcmp (codes[0], codes[1], co + code_bytes) != 0 ||
                memcmp (scl[0], scl[1], sizeof scl[0]) != 0 ||
                memcmp (zps[0], zps[1], sizeof zps[0]) != 0)
              {
                snprintf (diag, sizeof diag, "quantize: block %zu, n %zu, first %llu, %s, index0 %llu",
                          block_sizes[bi], n, (unsigned long long) first,
                          stoch ? "stochastic" : "nearest", (unsigned long long) a.index0);
                return 0;
              }
            /* a caller's zero points may lie anywhere in int32: near ±2^31 the
             * difference code − zero point leaves int32 (the vector bodies'
             * lanes), so some blocks get such zero points */
            if (c->code < 0 && rnd () % 4 == 0)
              {
                static const int32_t far[] = { INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 127,
                                               (1 << 30) + 1, -(1 << 30) - 1, 1 << 30 };
                for (size_t b = 0; b < FIRST + MAXN; b += 1 + rnd () % 3)
                  zps[0][b] = far[rnd () % (sizeof far / sizeof far[0])];
              }
            /* the codes just written, then (code formats: every code is valid)
             * arbitrary code and scale bytes: NaN, Inf, subnormal and 0 scales
             * (FP8's NaN codes with NaN scales: piq_nan_scale_product) */
            int random_codes = c->code >= 0;
            for (int src = 0; src < (random_codes ? 2 : 1); src++)
              {
                if (src == 1)
                  {
                    fill_random (codes[0], sizeof codes[0]);
                    fill_random (scl[0], sizeof scl[0]);
                    add = (int) (rnd () & 1);
                  }
                fill_random ((uint8_t *) y[0], n * 4);
                memcpy (y[1] + yo, y[0], n * 4);
                memmove (y[0] + yo, y[0], n * 4);
                piq_kernels_scalar.block_dequantize (&a, codes[0] + co, scl[0], zps[0], first, n,
                                                     y[0] + yo, add);
                t->block_dequantize (&a, codes[0] + co, scl[0], zps[0], first, n, y[1] + yo, add);
                if (memcmp (y[0] + yo, y[1] + yo, n * 4) != 0)
                  {
                    size_t i = 0;
                    while (memcmp (y[0] + yo + i, y[1] + yo + i, 4) == 0)
                      i++;
                    snprintf (diag, sizeof diag, "dequantize (%s, %s codes): block %zu, n %zu, first %llu, "
                              "offsets %zu/%zu: element %zu is %a, scalar %a", add ? "add" : "set",
                              src ? "random" : "quantized", block_sizes[bi], n, (unsigned long long) first,
                              co, yo, i, (double) y[1][yo + i], (double) y[0][yo + i]);
                    return 0;
                  }
              }
          }
  return 1;
}

/* NF4 at its edges, per tensor (scale 1: the codes of x itself) and in blocks whose
 * max |x| is 1 (NF4 and the binary search or cell lookup of the vector bodies): each
 * threshold and cell edge of 1/16 and their binary32 neighbours, ±1 and beyond,
 * huge values, ±Inf, NaN, −0 and the tiny values that round (x + 1) · 16 to 16 or below. */
static int
check_nf4_edges (const PiqKernelTable *t)
{
  enum { N = 64 * 48 };
  static const float special[] = { 1.0f, -1.0f, 1.0000001f, -1.0000001f, 2.0f, -3.0f, 1e10f,
                                   -1e10f, INFINITY, -INFINITY, NAN, -0.0f, 0.0f,
                                   /* where (x + 1) · 16 rounds to level 0's cell edge, or just below */
                                   -0x1p-25f, -0x1p-24f, -0x1.8p-24f, 0x1p-25f, 0x1p-24f };
  static float x[N];
  static uint8_t codes[2][N / 2 + 64], scl[2][N / 64 * 4 + 64];
  size_t n = 0;

  for (int i = 0; i < 15; i++)
    for (int d = -1; d <= 1; d++)
      x[n++] = d < 0 ? nextafterf (piq_nf4_thresholds[i], -2.0f)
               : d > 0 ? nextafterf (piq_nf4_thresholds[i], 2.0f) : piq_nf4_thresholds[i];
  for (int k = 0; k <= 32; k++)
    for (int d = -1; d <= 1; d++)
      {
        float e = -1.0f + (float) k / 16;
        x[n++] = d < 0 ? nextafterf (e, -2.0f) : d > 0 ? nextafterf (e, 2.0f) : e;
      }
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
    x[n++] = special[i];
  for (int i = 0; i < 7; i++)              /* bnb FP4's thresholds, both signs */
    {
      static const float bt[7] = { 0.00260417f, 0.0859375f, 0.20833333f, 0.29166667f,
                                   0.4166667f, 0.583333f, 0.8333333f };
      for (int d = -1; d <= 1; d++)
        {
          float v = d < 0 ? nextafterf (bt[i], -2.0f) : d > 0 ? nextafterf (bt[i], 2.0f) : bt[i];
          x[n++] = v;
          x[n++] = -v;
        }
    }
  for (int i = 0; i < 16; i++)             /* the levels (stochastic rounding's ends) */
    for (int d = -1; d <= 1; d++)
      x[n++] = d < 0 ? nextafterf (piq_nf4_values[i], -2.0f)
               : d > 0 ? nextafterf (piq_nf4_values[i], 2.0f) : piq_nf4_values[i];
  for (int i = 0; i < 16; i++)             /* bnb FP4's levels, both signs */
    for (int d = -1; d <= 1; d++)
      x[n++] = d < 0 ? nextafterf (piq_fp4_bnb_values[i], -2.0f)
               : d > 0 ? nextafterf (piq_fp4_bnb_values[i], 2.0f) : piq_fp4_bnb_values[i];
  while (n % 64 != 0)
    x[n++] = 0.5f;
  /* then the same values in blocks of 64 that also hold ±1, so that every block's
   * absmax is 1 and its finite values are encoded as given */
  for (size_t m = n, i = 0; n < N; n++, i++)
    x[n] = n % 64 == 0 ? 1.0f : n % 64 == 1 ? -1.0f : isfinite (x[i % m]) && fabsf (x[i % m]) <= 1.0f ? x[i % m] : 0.25f;

  for (int bnb = 0; bnb < 2; bnb++)        /* NF4, then bnb FP4 (its thresholds are in x too) */
  for (int stoch = 0; stoch < 5; stoch++)
  for (int fixed = 0; fixed < 2; fixed++)
    for (int hf = 0; hf < 2; hf++)
      {
        const BlockCase c = { bnb ? PIQ_C_FP4_BNB : PIQ_C_NF4, 4, 0, PIQ_SCALE_F32, 0, 1, hf, 0 };
        PiqBlockArgs a = block_args (&c, fixed ? 0 : 64, stoch > 0);
        if (stoch)
          stoch_seed (&a, 0, N);
        a.scale = 1.0f;                    /* per tensor: the codes of x itself */
        for (int k = 0; k < 2; k++)
          {
            memset (codes[k], 0x5a, sizeof codes[k]);
            memset (scl[k], 0x5a, sizeof scl[k]);
          }
        piq_kernels_scalar.block_quantize (&a, x, 0, N, codes[0], scl[0], NULL);
        t->block_quantize (&a, x, 0, N, codes[1], scl[1], NULL);
        if (memcmp (codes[0], codes[1], sizeof codes[0]) != 0 || memcmp (scl[0], scl[1], sizeof scl[0]) != 0)
          {
            for (size_t i = 0; i < N / 2; i++)
              if (codes[0][i] != codes[1][i])
                {
                  snprintf (diag, sizeof diag, "%s %s, hf %d, %s: byte %zu (x %a, %a): %02x, scalar %02x",
                            bnb ? "fp4_bnb" : "nf4", fixed ? "per tensor" : "blocks of 64", hf,
                            stoch ? "stochastic" : "nearest",
                            i, (double) x[2 * i],
                            (double) x[2 * i + 1], codes[1][i], codes[0][i]);
                  return 0;
                }
            snprintf (diag, sizeof diag, "%s: scales differ", fixed ? "per tensor" : "blocks of 64");
            return 0;
          }
      }
  return 1;
}

/* FP6 E2M3 and E3M2 at their edges: every level, the midpoints between neighbours
 * (ties), the binary32 neighbours of both, the subnormal boundary, max and beyond
 * (rounding up past max saturates), huge values, ±Inf, NaN of either sign, ±0 and
 * binary32 subnormals, both signs; per tensor with scale 1 (the codes of x itself,
 * f32 saturating or not), and in blocks of 32 whose max |x| is the format's max:
 * MXFP6 (E8M0 floor: scale 1) and f32 scales (amax / max = 1). Nearest and
 * stochastic rounding (index0 at 0, past 2^32, across a multiple of 2^32); then the
 * codes decoded, SET and ADD, into an unaligned destination. */
static int
check_fp6_edges (const PiqKernelTable *t)
{
  enum { N = 32 * 64, MAXV = 32 * 15 + 16 };
  static const float special[] = { 1e30f, 3.4e38f, INFINITY, NAN, 0.0f, 0x1p-149f, 0x1p-130f,
                                   0x1.fffffep-127f, 1e-20f };
  static float x[N], vals[MAXV], y[3][N + 1] BUF_ALIGNED;
  static uint8_t codes[2][N * 6 / 8 + 64] BUF_ALIGNED, scl[2][N / 32 * 4 + 64];

  for (int fmt = 0; fmt < 2; fmt++)
    {
      const int code = fmt ? PIQ_C_FP6_E3M2 : PIQ_C_FP6_E2M3;
      const PiqMinifloat *f = &piq_minifloats[code];
      size_t nv = 0, n = 0;

      for (unsigned k = 0; k < 32; k++)
        {
          float v = piq_minifloat_decode (f, k);
          float mid = k < 31 ? (v + piq_minifloat_decode (f, k + 1)) / 2 : f->max * 1.0625f;
          for (int d = -1; d <= 1; d++)
            {
              vals[nv++] = d < 0 ? nextafterf (v, -1.0f) : d > 0 ? nextafterf (v, INFINITY) : v;
              vals[nv++] = d < 0 ? nextafterf (mid, -1.0f) : d > 0 ? nextafterf (mid, INFINITY) : mid;
            }
        }
      vals[nv++] = ldexpf (1.0f, 1 - f->bias);                     /* smallest normal */
      vals[nv++] = nextafterf (ldexpf (1.0f, 1 - f->bias), 0.0f);
      vals[nv++] = f->max * 2;
      vals[nv++] = nextafterf (f->max + ldexpf (1.0f, f->emax - f->mbits - 1), 0.0f);
      for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        vals[nv++] = special[i];
      /* x: the values, then their negatives, in a shuffled order */
      while (n < N)
        {
          float v = vals[rnd () % nv];
          x[n++] = rnd () % 2 ? -v : v;
        }

      for (int mode = 0; mode < 4; mode++)       /* tensor sat 0, tensor sat 1, MX, f32 blocks */
        for (int stoch = 0; stoch < 4; stoch++)
          {
            const BlockCase c = { code, 6, 0, mode == 2 ? PIQ_SCALE_E8M0 : PIQ_SCALE_F32, 0,
                                  mode == 1, 0, PIQ_E8M0_FLOOR };
            PiqBlockArgs a = block_args (&c, mode < 2 ? 0 : 32, stoch > 0);
            static float xb[N];
            const float *src = x;
            size_t yo = rnd () % 2;
            a.scale = 1.0f;                      /* per tensor: the codes of x itself */
            a.stream = stoch & 1;
            if (stoch)
              stoch_seed (&a, 0, N);
            if (mode >= 2)
              {
                /* in blocks: finite values within ±max, and ±max in each block */
                for (size_t i = 0; i < N; i++)
                  xb[i] = i % 32 == 5 ? ((i / 32) % 2 ? f->max : -f->max)
                          : isfinite (x[i]) && fabsf (x[i]) <= f->max ? x[i] : 0.5f;
                src = xb;
              }
            for (int k = 0; k < 2; k++)
              {
                memset (codes[k], 0x5a, sizeof codes[k]);
                memset (scl[k], 0x5a, sizeof scl[k]);
              }
            piq_kernels_scalar.block_quantize (&a, src, 0, N, codes[0], scl[0], NULL);
            t->block_quantize (&a, src, 0, N, codes[1], scl[1], NULL);
            if (memcmp (codes[0], codes[1], sizeof codes[0]) != 0 || memcmp (scl[0], scl[1], sizeof scl[0]) != 0)
              {
                for (size_t i = 0; i < N; i++)
                  {
                    unsigned g = (unsigned) piq_get_code (codes[1], i, 6, 0);
                    unsigned w = (unsigned) piq_get_code (codes[0], i, 6, 0);
                    if (g != w)
                      {
                        snprintf (diag, sizeof diag, "%s mode %d, %s: element %zu (x %a): %02x, scalar %02x",
                                  fmt ? "e3m2" : "e2m3", mode, stoch ? "stochastic" : "nearest", i,
                                  (double) src[i], g, w);
                        return 0;
                      }
                  }
                snprintf (diag, sizeof diag, "%s mode %d: scales or tail bytes differ", fmt ? "e3m2" : "e2m3", mode);
                return 0;
              }
            for (int add = 0; add < 2; add++)
              {
                fill_float ((uint8_t *) y[2], N, PIQ_F_F32, 1.0);
                memcpy (y[0] + yo, y[2], N * 4);
                memcpy (y[1] + yo, y[2], N * 4);
                piq_kernels_scalar.block_dequantize (&a, codes[0], scl[0], NULL, 0, N, y[0] + yo, add);
                t->block_dequantize (&a, codes[0], scl[0], NULL, 0, N, y[1] + yo, add);
                if (memcmp (y[0] + yo, y[1] + yo, N * 4) != 0)
                  {
                    snprintf (diag, sizeof diag, "%s mode %d: dequantize (%s) differs", fmt ? "e3m2" : "e2m3",
                              mode, add ? "add" : "set");
                    return 0;
                  }
              }
          }
    }
  return 1;
}

/* Quantize x (n elements) with a on the table and on the scalar entry, compare the
 * codes and scales, then dequantize the scalar's codes both ways, SET and ADD. */
static int
check_codes_both (const PiqKernelTable *t, const PiqBlockArgs *a, const float *x, size_t n,
                  const char *what)
{
  enum { MAXN = 64 * 128 };
  static uint8_t codes[2][MAXN * 2 + 64], scl[2][MAXN + 64];
  static float y[2][MAXN];
  size_t cb = (n * (size_t) a->bits + 7) / 8;

  for (int k = 0; k < 2; k++)
    {
      memset (codes[k], 0x5a, sizeof codes[k]);
      memset (scl[k], 0x5a, sizeof scl[k]);
    }
  piq_kernels_scalar.block_quantize (a, x, 0, n, codes[0], scl[0], NULL);
  t->block_quantize (a, x, 0, n, codes[1], scl[1], NULL);
  if (memcmp (codes[0], codes[1], sizeof codes[0]) != 0 || memcmp (scl[0], scl[1], sizeof scl[0]) != 0)
    {
      for (size_t i = 0; i < cb; i++)
        if (codes[0][i] != codes[1][i])
          {
            size_t e = i * 8 / (size_t) a->bits;
            snprintf (diag, sizeof diag, "%s, %s, index0 %llu: code byte %zu (x[%zu] = %a): %02x, "
                      "scalar %02x", what, a->stochastic ? "stochastic" : "nearest",
                      (unsigned long long) a->index0, i, e, (double) x[e], codes[1][i], codes[0][i]);
            return 0;
          }
      snprintf (diag, sizeof diag, "%s, %s: scales differ", what, a->stochastic ? "stochastic" : "nearest");
      return 0;
    }
  for (int add = 0; add < 2; add++)
    {
      fill_random ((uint8_t *) y[0], n * 4);
      memcpy (y[1], y[0], n * 4);
      piq_kernels_scalar.block_dequantize (a, codes[0], scl[0], NULL, 0, n, y[0], add);
      t->block_dequantize (a, codes[0], scl[0], NULL, 0, n, y[1], add);
      if (memcmp (y[0], y[1], n * 4) != 0)
        {
          snprintf (diag, sizeof diag, "%s: dequantize (%s) differs", what, add ? "add" : "set");
          return 0;
        }
    }
  return 1;
}

/* NF8 at its edges: first that each threshold of the vector bodies' nearest rule
 * (piq_nf8_midpoints) is where the scalar codec's binary32 rule switches to the
 * upper level; then every level, every threshold, the true midpoint between levels
 * (ties) and their binary32 neighbours, ±1 and beyond, huge values, ±Inf, NaN, ±0
 * and subnormals, per tensor (scale 1: the codes of x itself) and in blocks of 64
 * whose max |x| is 1, with nearest and stochastic rounding (index0 near 2^32 too). */
static int
check_nf8_edges (const PiqKernelTable *t)
{
  enum { N = 64 * 128 };
  static const float special[] = { 1.0f, -1.0f, 1.0000001f, -1.0000001f, 2.0f, -3.0f, 1e10f,
                                   -1e10f, 3.4e38f, -3.4e38f, INFINITY, -INFINITY, NAN, -NAN,
                                   -0.0f, 0.0f, 0x1p-149f, -0x1p-149f, 0x1p-130f, -0x1p-127f };
  static float x[N];
  size_t n = 0;

  for (int i = 0; i < 255; i++)
    {
      float lo = piq_nf8_values[i], hi = piq_nf8_values[i + 1], m = piq_nf8_midpoints[i];
      float m1 = nextafterf (m, 2.0f);
      if (!(m >= lo && m < hi && m - lo <= hi - m && !(m1 - lo <= hi - m1)) ||
          piq_nf8_encode (m, 0, 0.0f) != (unsigned) i || piq_nf8_encode (m1, 0, 0.0f) != (unsigned) i + 1)
        {
          snprintf (diag, sizeof diag, "piq_nf8_midpoints[%d] = %a is not the scalar rule's switch", i,
                    (double) m);
          return 0;
        }
    }
  for (int i = 0; i < 256; i++)
    for (int d = -1; d <= 1; d++)
      {
        float v = piq_nf8_values[i];
        x[n++] = d < 0 ? nextafterf (v, -2.0f) : d > 0 ? nextafterf (v, 2.0f) : v;
        if (i < 255)
          {
            float m = piq_nf8_midpoints[i], h = (v + piq_nf8_values[i + 1]) / 2;
            x[n++] = d < 0 ? nextafterf (m, -2.0f) : d > 0 ? nextafterf (m, 2.0f) : m;
            x[n++] = d < 0 ? nextafterf (h, -2.0f) : d > 0 ? nextafterf (h, 2.0f) : h;
          }
      }
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
    x[n++] = special[i];
  while (n % 64 != 0)
    x[n++] = 0.5f;
  /* the same values in blocks of 64 that also hold ±1 (max |x| 1, inverse scale 1) */
  for (size_t m = n, i = 0; n < N; n++, i++)
    x[n] = n % 64 == 0 ? 1.0f : n % 64 == 1 ? -1.0f
           : isfinite (x[i % m]) && fabsf (x[i % m]) <= 1.0f ? x[i % m] : 0.25f;

  for (int stoch = 0; stoch < 5; stoch++)
    for (int fixed = 0; fixed < 2; fixed++)
      {
        const BlockCase c = { PIQ_C_NF8, 8, 0, PIQ_SCALE_F32, 0, 1, 0, 0 };
        PiqBlockArgs a = block_args (&c, fixed ? 0 : 64, stoch > 0);
        if (stoch)
          stoch_seed (&a, 0, N);
        a.scale = 1.0f;
        for (size_t len = N; len > 0; len = len == N ? N - 61 : 0)   /* and a ragged tail */
          if (!check_codes_both (t, &a, x, len, fixed ? "nf8 per tensor" : "nf8 blocks of 64"))
            return 0;
      }
  return 1;
}

/* NF8's vector count (nf8_count, piq_nf8_cells): the count below v's cell of 1/256
 * plus one compare with the cell's own threshold. Around each threshold and each
 * level (the stochastic steps), values 2^j ulps away, j = 0 … 20, on both sides: they
 * cross the cell edges near the thresholds, where a wrong table would first show;
 * then an even grid over [−1, 1]. Per tensor and in blocks of 64 with max |x| 1,
 * both roundings. (Every binary32 pattern was checked once, per tensor.) */
static int
check_nf8_count (const PiqKernelTable *t)
{
  enum { N = 64 * 128 };
  static float x[N];

  for (int batch = 0; batch < 2; batch++)   /* thresholds, then levels 1 … 255 */
    {
      size_t n = 0;
      for (int i = 0; i < 255; i++)
        {
          float m = batch == 0 ? piq_nf8_midpoints[i] : piq_nf8_values[i + 1];
          for (int j = 0; j <= 20; j += 2)
            for (int sgn = -1; sgn <= 1; sgn += 2)
              {
                uint32_t b;
                memcpy (&b, &m, 4);
                b = (uint32_t) ((int64_t) b + (m < 0 ? -sgn : sgn) * ((int64_t) 1 << j));
                memcpy (&x[n++], &b, 4);
              }
        }
      for (size_t i = 0; n < N; i++, n++)   /* and an even grid over [−1, 1] */
        x[n] = -1.0f + (float) ((2 * i + (size_t) batch) * 2) / (float) (2 * (N - 5610));
      for (size_t i = 0; i < N; i += 64)    /* blocks of 64: max |x| 1 */
        x[i] = 1.0f;
      for (int stoch = 0; stoch < 3; stoch++)
        for (int fixed = 0; fixed < 2; fixed++)
          {
            const BlockCase c = { PIQ_C_NF8, 8, 0, PIQ_SCALE_F32, 0, 1, 0, 0 };
            PiqBlockArgs a = block_args (&c, fixed ? 0 : 64, stoch > 0);
            if (stoch)
              stoch_seed (&a, 0, N);
            a.scale = 1.0f;
            if (!check_codes_both (t, &a, x, N, fixed ? "nf8 count, per tensor" : "nf8 count, blocks of 64"))
              return 0;
          }
    }
  return 1;
}

/* One BFP box of kind k (m-bit magnitudes): zeros of both signs, max |x| subnormal,
 * near FLT_MAX, at the m-bit rounding's carry into the next binade or one ulp below
 * it, exact ties of x · 2^−shift at k + 1/2, NaN or ±Inf among finite values, a tiny
 * normal max (the multiplier 2^(127 + m − E) past binary32), powers of two, and
 * random values. Kinds below 8 keep the box finite and in the vector rules. */
static void
bfp_box (float *x, size_t len, int m, int kind)
{
  int e = (int) (rnd () % 200) - 100;
  double mag = ldexp (1.0, e);

  for (size_t i = 0; i < len; i++)
    x[i] = (float) interesting (mag / 300);
  for (size_t i = 0; i < len; i++)
    if (kind < 8 && !isfinite (x[i]))
      x[i] = 0.0f;
  switch (kind)
    {
    case 0:                                /* random, max at a power of two */
      x[rnd () % len] = rnd () % 2 ? (float) mag * 4 : -(float) mag * 4;
      break;
    case 1:                                /* near FLT_MAX: E clamps to 254 */
      for (size_t i = 0; i < len; i++)
        x[i] = (float) ((double) x[i] / mag * 0x1p120);
      x[rnd () % len] = rnd () % 2 ? FLT_MAX : -nextafterf (FLT_MAX, 0.0f);
      break;
    case 2: case 3:                        /* the carry: mantissa 2^23 − 2^(23 − m), or one below */
      {
        uint32_t b = (uint32_t) (e + 127) << 23 | (0x800000u - (0x800000u >> m) - (kind == 3));
        float v;
        memcpy (&v, &b, 4);
        for (size_t i = 0; i < len; i++)
          if (fabsf (x[i]) >= v)
            x[i] = v / 3;
        x[rnd () % len] = rnd () % 2 ? v : -v;
      }
      break;
    case 4:                                /* ties: max 1.5 · 2^e, shift e + 1 − m */
      {
        float q = ldexpf (1.0f, e + 1 - m);
        for (size_t i = 0; i < len; i++)
          x[i] = ((float) (rnd () % ((1u << m) - 1)) + 0.5f) * q * (rnd () % 2 ? 1.0f : -1.0f);
        x[0] = 1.5f * ldexpf (1.0f, e);
      }
      break;
    case 5:                                /* −0, +0 and a few values */
      for (size_t i = 0; i < len; i++)
        if (rnd () % 2)
          x[i] = rnd () % 2 ? -0.0f : 0.0f;
      break;
    case 6: case 7:                        /* random */
      break;
    case 8:                                /* all zeros */
      for (size_t i = 0; i < len; i++)
        x[i] = rnd () % 2 ? -0.0f : 0.0f;
      break;
    case 9:                                /* max subnormal */
      for (size_t i = 0; i < len; i++)
        x[i] = ldexpf ((float) ((int) (rnd () % 2001) - 1000), -149 + (int) (rnd () % 12));
      break;
    case 10:                               /* tiny normal max */
      for (size_t i = 0; i < len; i++)
        x[i] = ldexpf ((float) ((int) (rnd () % 2001) - 1000), -136 + (int) (rnd () % 6));
      break;
    case 11:                               /* NaN or ±Inf among finite values */
      x[rnd () % len] = rnd () % 3 == 0 ? NAN : rnd () % 2 ? INFINITY : -INFINITY;
      break;
    default:
      break;
    }
}

/* BFP boxes (MSFP12 in either nibble order, MSFP16) of every kind of bfp_box, the
 * first groups of boxes all within the vector rules and the rest mixed; boxes of 16
 * and 32; per tensor too; nearest and stochastic rounding. */
static int
check_bfp_edges (const PiqKernelTable *t)
{
  enum { N = 64 * 128 };
  static const struct { int code, bits, hf; } fmts[] = {
    { PIQ_C_BFP3, 4, 0 }, { PIQ_C_BFP3, 4, 1 }, { PIQ_C_BFP7, 8, 0 },
  };
  static float x[N];

  for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
    for (size_t box = 16; box <= 32; box *= 2)
      for (int stoch = 0; stoch < 4; stoch++)
        {
          const BlockCase c = { fmts[f].code, fmts[f].bits, 0, PIQ_SCALE_E8M0, 0, 1, fmts[f].hf, 0 };
          int m = fmts[f].bits - 1;
          for (int fixed = 0; fixed < 2; fixed++)
            {
              PiqBlockArgs a = block_args (&c, fixed ? 0 : box, stoch > 0);
              size_t n = N - (rnd () % 2 ? box / 2 + 3 : 0);   /* a ragged last box, sometimes */
              char what[64];
              for (size_t b = 0; b * box < n; b++)
                bfp_box (x + b * box, b * box + box <= n ? box : n - b * box, m,
                         (int) (rnd () % (b < 64 ? 8 : 12)));
              if (stoch)
                stoch_seed (&a, 0, n);
              a.scale = ldexpf (1.0f, (int) (rnd () % 40) - 20);
              snprintf (what, sizeof what, "bfp%d-%dbit/hf%d %s %zu", fmts[f].code - PIQ_C_BFP2 + 2,
                        fmts[f].bits, fmts[f].hf, fixed ? "per tensor" : "boxes of", box);
              if (!check_codes_both (t, &a, x, n, what))
                return 0;
            }
        }
  return 1;
}

/* ggml Q8_0 and Q4_0: every table's codes and scales byte-identical to the scalar
 * codec's, and its SET and ADD dequantization too. Blocks of chosen kinds: random
 * values (ties, NaN, ±Inf, −0, subnormals), all zeros of either sign, max |x| at a
 * negative or a positive value, ±max both present (the first one sets Q4_0's sign),
 * exact ties of x · id at k + 1/2 and their neighbours (scales that are powers of
 * two), huge values (d's f16 overflows), tiny ones (d subnormal or 0, 1/d = Inf),
 * all NaN / all Inf, and scales at f16 rounding edges; lengths with whole groups
 * of blocks for every vector width, fewer blocks, and ragged last blocks. */
static void
ggml_block (float *x, size_t m)
{
  uint64_t kind = rnd () % 10;
  double mag = ldexp (1.0, (int) (rnd () % 40) - 20);
  float e = ldexpf (1.0f, (int) (rnd () % 20) - 10);   /* a power of two */

  for (size_t i = 0; i < m; i++)
    x[i] = (float) interesting (mag / 300);
  switch (kind)
    {
    case 0: case 1:                        /* as drawn */
      break;
    case 2:                                /* zeros, −0 among them */
      for (size_t i = 0; i < m; i++)
        x[i] = rnd () % 2 ? -0.0f : 0.0f;
      break;
    case 3: case 4:                        /* finite, max |x| at ±M, one or both signs */
      {
        float big = (float) (mag * 2);
        for (size_t i = 0; i < m; i++)
          if (!isfinite (x[i]) || fabsf (x[i]) >= big)
            x[i] = 0.5f * (float) mag;
        x[rnd () % m] = rnd () % 2 ? -big : big;
        if (kind == 4)
          x[rnd () % m] = rnd () % 2 ? -big : big;
      }
      break;
    case 5:                                /* ties: d = e exactly (Q8_0: amax 127e, Q4_0: max −8e) */
      for (size_t i = 0; i < m; i++)
        {
          float k = (float) ((int) (rnd () % 16) - 8) + 0.5f;
          x[i] = k * e;
          if (rnd () % 4 == 0)
            x[i] = nextafterf (x[i], rnd () % 2 ? INFINITY : -INFINITY);
        }
      x[0] = rnd () % 2 ? 127.0f * e : -8.0f * e;
      break;
    case 6:                                /* huge: d's f16 overflows; or tiny: 1/d = Inf */
      for (size_t i = 0; i < m; i++)
        x[i] *= rnd () % 2 ? 0x1p100f : 0x1p-140f;
      if (rnd () % 2)
        x[rnd () % m] = rnd () % 2 ? 3.4e38f : -3.4e38f;
      break;
    case 7:                                /* no finite value */
      for (size_t i = 0; i < m; i++)
        x[i] = rnd () % 2 ? NAN : rnd () % 2 ? INFINITY : -INFINITY;
      break;
    case 8:                                /* amax near f16 rounding edges of d */
      for (size_t i = 0; i < m; i++)
        if (!isfinite (x[i]))
          x[i] = 0.0f;
      x[rnd () % m] = nextafterf (65504.0f * 127.0f, rnd () % 2 ? INFINITY : 0.0f) * (rnd () % 2 ? 1.0f : -1.0f);
      break;
    default:                               /* max |x| of a subnormal d */
      for (size_t i = 0; i < m; i++)
        x[i] = ldexpf ((float) ((int) (rnd () % 200) - 100), -140);
      break;
    }
}

static int
check_ggml (const PiqKernelTable *t, int code)
{
  enum { MAXN = 4099 + 64, FIRST = 32 * 7, ROW = (MAXN + 16) / 16 * 16 };
  static const size_t lens[] = { 0, 1, 31, 32, 33, 64, 96, 127, 128, 129, 255, 256, 512, 544, 1023,
                                 1024, 2048 + 96 + 5, 4096, MAXN };
  /* 64-byte aligned rows: offset 0 takes the streaming SET path */
  static float x[MAXN + 1] BUF_ALIGNED, y[3][ROW] BUF_ALIGNED;
  static uint8_t codes[2][(FIRST + MAXN) / 32 * 34 + 64 + 1];
  const size_t bb = code == PIQ_C_Q8_0 ? 34 : 18;
  PiqBlockArgs a;

  memset (&a, 0, sizeof a);
  a.code = code;
  a.bits = 0;
  a.block = 32;
  a.scale_kind = PIQ_SCALE_F16;
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (int off = 0; off < 4; off++)
      for (int stream = 0; stream < 4; stream++)
        {
          size_t n = lens[li];
          uint64_t first = off & 1 ? FIRST : 0;
          size_t xo = off >> 1;            /* unaligned source, destination and codes */
          size_t code_bytes = (size_t) (first + n + 31) / 32 * bb;
          float *xs = x + xo;

          a.stream = stream & 1;
          a.stochastic = stream >> 1;      /* nearest, then stochastic rounding */
          if (a.stochastic)
            stoch_seed (&a, first, n);
          for (size_t b = 0; b < n; b += 32)
            ggml_block (xs + b, n - b < 32 ? n - b : 32);
          /* the vector bodies take a shorter route for groups of blocks that are
           * all finite: half of the calls have no NaN or Inf */
          if (rnd () % 2)
            for (size_t i = 0; i < n; i++)
              if (!isfinite (xs[i]))
                xs[i] = (float) (i % 7) - 3.5f;
          for (int k = 0; k < 2; k++)
            memset (codes[k], 0x5a, sizeof codes[k]);
          piq_kernels_scalar.block_quantize (&a, xs, first, n, codes[0] + xo, NULL, NULL);
          t->block_quantize (&a, xs, first, n, codes[1] + xo, NULL, NULL);
          if (memcmp (codes[0], codes[1], sizeof codes[0]) != 0)
            {
              size_t i = 0;
              while (codes[0][i] == codes[1][i])
                i++;
              i -= xo;
              snprintf (diag, sizeof diag, "quantize (%s): n %zu, first %llu, offset %zu: block %zu byte %zu "
                        "is %02x, scalar wrote %02x", a.stochastic ? "stochastic" : "nearest", n,
                        (unsigned long long) first, xo, i / bb,
                        i % bb, codes[1][i + xo], codes[0][i + xo]);
              return 0;
            }
          /* the codes just written, then arbitrary bytes (any f16 scale: NaN, Inf,
           * subnormal) into a destination that holds NaN too, SET and ADD */
          for (int src = 0; src < 2; src++)
            for (int add = 0; add < 2; add++)
              {
                if (src == 1)
                  fill_random (codes[0] + xo, code_bytes);
                fill_float ((uint8_t *) y[2], n, PIQ_F_F32, 1.0);
                memcpy (y[0] + xo, y[2], n * 4);
                memcpy (y[1] + xo, y[2], n * 4);
                piq_kernels_scalar.block_dequantize (&a, codes[0] + xo, NULL, NULL, first, n, y[0] + xo, add);
                t->block_dequantize (&a, codes[0] + xo, NULL, NULL, first, n, y[1] + xo, add);
                if (memcmp (y[0] + xo, y[1] + xo, n * 4) != 0)
                  {
                    size_t i = 0;
                    while (memcmp (y[0] + xo + i, y[1] + xo + i, 4) == 0)
                      i++;
                    snprintf (diag, sizeof diag, "dequantize (%s, %s codes): n %zu, first %llu, offset %zu: "
                              "element %zu is %a, scalar %a", add ? "add" : "set", src ? "random" : "quantized",
                              n, (unsigned long long) first, xo, i, (double) y[1][xo + i], (double) y[0][xo + i]);
                    return 0;
                  }
              }
        }
  return 1;
}

static void
run_block (const PiqKernelTable *t, const char *op, const char *skip)
{
  for (size_t k = 0; k < sizeof block_cases / sizeof block_cases[0]; k++)
    {
      const BlockCase *c = &block_cases[k];
      char entry[160];
      static const char *const e8m0_rules[] = { "floor", "ceil", "even", "rceil" };
      const char *rule = c->kind == PIQ_SCALE_E8M0 ? e8m0_rules[c->e8m0]
                         : c->code >= 0 ? "-" : c->rule == PIQ_BRULE_ABS_MAX ? "symmetric" : "affine";
      /* e.g. block/f32/code5-4bit/f32-scales/sat1/hf1/-: quantize and dequantize together */
      snprintf (entry, sizeof entry, "%s/f32/%s%d-%dbit/%s-scales/sat%d/hf%d/%s", op,
                c->code < 0 ? (c->sgn ? "int" : "uint") : "code", c->code < 0 ? c->bits : c->code,
                c->bits, c->kind == PIQ_SCALE_F32 ? "f32" : c->kind == PIQ_SCALE_F16 ? "f16" : "e8m0",
                c->sat, c->hf, rule);
      report (skip != NULL || check_block (t, c), t->name, entry, skip);
    }
  report (skip != NULL || check_nf4_edges (t), t->name, "block/f32/nf4-edges", skip);
  report (skip != NULL || check_fp6_edges (t), t->name, "block/f32/fp6-edges", skip);
  report (skip != NULL || check_nf8_edges (t), t->name, "block/f32/nf8-edges", skip);
  report (skip != NULL || check_nf8_count (t), t->name, "block/f32/nf8-count", skip);
  report (skip != NULL || check_bfp_edges (t), t->name, "block/f32/bfp-edges", skip);
  report (skip != NULL || check_ggml (t, PIQ_C_Q8_0), t->name, "block/f32/q8_0", skip);
  report (skip != NULL || check_ggml (t, PIQ_C_Q4_0), t->name, "block/f32/q4_0", skip);
}

/* piq_cpu_features() executes CPUID itself (clang's __builtin_cpu_supports does not
 * know every name): it must agree with the compiler's builtin on each name the
 * builtin knows. */
static int
check_cpu_features (void)
{
#if defined(__x86_64__) || defined(__i386__)
  uint32_t f = piq_cpu_features ();
  int ok = 1;

  __builtin_cpu_init ();
# define CPU_CMP_(name, str) \
  if (!!(f & PIQ_CPU_##name) != !!__builtin_cpu_supports (str)) \
    { \
      snprintf (diag, sizeof diag, "%s: CPUID says %d, __builtin_cpu_supports %d", str, \
                !!(f & PIQ_CPU_##name), !!__builtin_cpu_supports (str)); \
      ok = 0; \
    }
  CPU_CMP_ (SSE4_2, "sse4.2")
  CPU_CMP_ (POPCNT, "popcnt")
  CPU_CMP_ (AVX2, "avx2")
  CPU_CMP_ (FMA, "fma")
  CPU_CMP_ (BMI2, "bmi2")
  CPU_CMP_ (AVX512F, "avx512f")
  CPU_CMP_ (AVX512BW, "avx512bw")
  CPU_CMP_ (AVX512VL, "avx512vl")
  CPU_CMP_ (AVX512DQ, "avx512dq")
  CPU_CMP_ (AVX512BF16, "avx512bf16")
  CPU_CMP_ (AVX512VBMI, "avx512vbmi")
  CPU_CMP_ (AVX512VNNI, "avx512vnni")
  CPU_CMP_ (AVX512VPOPCNTDQ, "avx512vpopcntdq")
# ifndef __clang__   /* names clang 14 rejects */
  CPU_CMP_ (F16C, "f16c")
  CPU_CMP_ (AVXVNNI, "avxvnni")
  CPU_CMP_ (AVX512FP16, "avx512fp16")
  CPU_CMP_ (AMX_TILE, "amx-tile")
  CPU_CMP_ (AMX_INT8, "amx-int8")
# endif
# undef CPU_CMP_
  /* cached after the first call: the same answer again */
  if (piq_cpu_features () != f)
    {
      snprintf (diag, sizeof diag, "a second call gives another answer");
      ok = 0;
    }
  return ok;
#else
  return 1;
#endif
}

/* The affine rule's zero point from a range whose scale is not finite (an infinite
 * end: lo / scale is NaN, or a range past binary32): the conversion to an integer
 * must not see NaN or ±Inf (undefined in C, and libgcc's __fixdfti gave qmax). The
 * callers reject the non-finite scale; the zero point is still defined: NaN counts
 * as 0, so it is qmin, and an infinite lo / scale clamps to the range's end. */
static int
check_affine_nonfinite (void)
{
  static const struct { double lo, hi; int64_t qmin, qmax; int include_zero; int64_t zp; } cases[] = {
    { -INFINITY, INFINITY, 0, 255, 1, 0 },
    { -INFINITY, INFINITY, -128, 127, 1, -128 },
    { -INFINITY, -INFINITY, 0, 15, 1, 0 },
    { NAN, NAN, 0, 255, 0, 0 },
    { -INFINITY, 1.0, 0, 255, 0, 0 },
    { -1e300, 1e300, -128, 127, 1, -128 },                 /* finite ends, Inf scale */
    { -INFINITY, INFINITY, INT64_MIN, INT64_MAX, 1, INT64_MIN },
  };

  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    {
      double scale = 0.0;
      int64_t zp = 12345;
      piq_affine_from_range (cases[k].lo, cases[k].hi, cases[k].qmin, cases[k].qmax, 0,
                             cases[k].include_zero, &scale, &zp);
      if (zp != cases[k].zp)
        {
          snprintf (diag, sizeof diag, "[%g, %g] in [%lld, %lld]: scale %g, zero point %lld, expected %lld",
                    cases[k].lo, cases[k].hi, (long long) cases[k].qmin, (long long) cases[k].qmax,
                    scale, (long long) zp, (long long) cases[k].zp);
          return 0;
        }
    }
  return 1;
}

/* ---- Matrix multiply kernels ---------------------------------------------------- */

/* The float policy's tile, written out from its contract (piq-kernels-private.h):
 * product k into binary32 lane k % 16 by fmaf from +0, then lane i += lane i + h
 * for h = 8, 4, 2, 1. Independent of the library's scalar kernel. */
static float
mm_dot_oracle (const float *x, const float *w, size_t n)
{
  float l[16];
  for (int i = 0; i < 16; i++)
    l[i] = 0.0f;
  for (size_t k = 0; k < n; k++)
    l[k % 16] = fmaf (x[k], w[k], l[k % 16]);
  for (int h = 8; h > 0; h /= 2)
    for (int i = 0; i < h; i++)
      l[i] = l[i] + l[i + h];
  return isnan (l[0]) ? NAN : l[0];   /* the contract's default NaN, 0x7fc00000 */
}

/* Random f32 data: mostly ordinary values, sometimes NaN, ±Inf, −0, subnormals. */
static void
mm_fill (float *p, size_t n, int specials)
{
  fill_float ((uint8_t *) p, n, PIQ_F_F32, 0.01);
  if (!specials)
    for (size_t i = 0; i < n; i++)
      if (!isfinite (p[i]) || fabsf (p[i]) > 1e6f)
        p[i] = (float) ((int) (rnd () % 2001) - 1000) * 0x1p-7f;
}

/* Which NaN a product of two NaNs gives follows the FMA instruction's operand order,
 * which the compiler picks: the contract stores every NaN output as the default
 * quiet NaN (found by this test: AVX-512 gave w's NaN where the scalar kernel gave
 * x's). n = 51, ldx = ldw = 51, all elements 1.0 except one x and one w of a product
 * NaNs of opposite signs, every mr × nr. */
static int
check_mm_tile_nan_order (PiqMmTileFn ref, PiqMmTileFn fn)
{
  enum { N = 51 };
  static float x[4 * N], w[8 * N], o[2][32];
  const uint32_t minus_nan = 0xffc00000u, plus_nan = 0x7fc00000u;

  for (size_t mr = 1; mr <= 4; mr++)
    for (size_t nr = 1; nr <= 8; nr++)
      for (int swap = 0; swap < 2; swap++)
        {
          for (size_t i = 0; i < 4 * N; i++)
            x[i] = 1.0f;
          for (size_t i = 0; i < 8 * N; i++)
            w[i] = 1.0f;
          memcpy (&x[(mr - 1) * N], swap ? &plus_nan : &minus_nan, 4);
          memcpy (&w[(nr - 1) * N], swap ? &minus_nan : &plus_nan, 4);
          memset (o, 0, sizeof o);
          ref (x, N, w, N, N, mr, nr, o[0], nr);
          fn (x, N, w, N, N, mr, nr, o[1], nr);
          if (memcmp (o[0], o[1], sizeof o[0]) != 0)
            {
              uint32_t a, b;
              memcpy (&a, &o[0][(mr - 1) * nr + nr - 1], 4);
              memcpy (&b, &o[1][(mr - 1) * nr + nr - 1], 4);
              snprintf (diag, sizeof diag, "n %d, mr %zu, nr %zu, x[%zu][0] = %08x, w[%zu][0] = %08x, rest 1.0: "
                        "out[%zu][%zu] is %08x, scalar gives %08x", N, mr, nr, mr - 1,
                        swap ? plus_nan : minus_nan, nr - 1, swap ? minus_nan : plus_nan, mr - 1, nr - 1, b, a);
              return 0;
            }
        }
  return 1;
}

static int
check_mm_tile (PiqMmTileFn ref, PiqMmTileFn fn, int vs_oracle)
{
  enum { MAXK = 257, PAD = 5, LD = MAXK + PAD, OUT_LD = 8 + 3 };
  static const size_t ns[] = { 0, 1, 15, 16, 17, 31, 33, 64, 100, 257 };
  static float x[4 * LD + 8] BUF_ALIGNED, w[8 * LD + 8] BUF_ALIGNED;
  static float o[2][4 * OUT_LD + 8] BUF_ALIGNED;

  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
    for (size_t mr = 1; mr <= 4; mr++)
      for (size_t nr = 1; nr <= 8; nr++)
        for (int rep = 0; rep < 3; rep++)
          {
            size_t n = ns[ni];
            size_t xo = rnd () % 4, wo = rnd () % 4, oo = rnd () % 4;   /* unaligned */
            size_t ldx = n + (rep == 0 ? 0 : 1 + rnd () % PAD);
            size_t ldw = n + (rep == 1 ? 0 : 1 + rnd () % PAD);
            size_t ldo = nr + (rep == 2 ? 0 : 1 + rnd () % 3);
            int specials = rep != 0;

            mm_fill (x, sizeof x / sizeof x[0], specials);
            mm_fill (w, sizeof w / sizeof w[0], specials);
            fill_random ((uint8_t *) o[0], sizeof o[0]);
            memcpy (o[1], o[0], sizeof o[0]);
            if (vs_oracle)
              {
                for (size_t i = 0; i < mr; i++)
                  for (size_t j = 0; j < nr; j++)
                    o[0][oo + i * ldo + j] = mm_dot_oracle (x + xo + i * ldx, w + wo + j * ldw, n);
              }
            else
              ref (x + xo, ldx, w + wo, ldw, n, mr, nr, o[0] + oo, ldo);
            fn (x + xo, ldx, w + wo, ldw, n, mr, nr, o[1] + oo, ldo);
            if (memcmp (o[0], o[1], sizeof o[0]) != 0)
              {
                size_t e = 0;
                while (memcmp (&o[0][e], &o[1][e], 4) == 0)
                  e++;
                snprintf (diag, sizeof diag, "n %zu, mr %zu, nr %zu, ldx %zu, ldw %zu, ldo %zu, offsets "
                          "x %zu w %zu out %zu: out element %td (row %td, col %td) is %a, %s gives %a",
                          n, mr, nr, ldx, ldw, ldo, xo, wo, oo, (ptrdiff_t) e - (ptrdiff_t) oo,
                          ((ptrdiff_t) e - (ptrdiff_t) oo) / (ptrdiff_t) ldo, ((ptrdiff_t) e - (ptrdiff_t) oo) % (ptrdiff_t) ldo,
                          (double) o[1][e], vs_oracle ? "the contract" : "scalar", (double) o[0][e]);
                return 0;
              }
          }
  return 1;
}

/* ---- the GEMM's micro-kernel (mm_lanes) ----
 * X and W packed by residue as the contract lays them out (mm_pack_res, mm_pack_w:
 * written from the contract, not from the engine's packers; W's padding between
 * micro-panels random), W's rows with a random stride before packing: mr across
 * 16 … 80 (one to five groups of 16 rows: AVX-512's tiles of 48 and their tails), n
 * across 16 and the blocks of k (the last one zero-padded), the lanes carried through
 * blocks of 16, 48 and 128 and in one block, unaligned operands, lanes and out, NaN,
 * ±Inf, ±0 and subnormals: every table's lanes after each block and its outputs
 * against the scalar kernel's, byte for byte (a NaN lane may differ in payload: the
 * outputs take the default NaN). With ref NULL, the scalar kernel in blocks against
 * mm_tile (its definition) on the rows. */
static int
mm_lanes_equal (const float *a, const float *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (memcmp (&a[i], &b[i], 4) != 0 && !(a[i] != a[i] && b[i] != b[i]))
      return 0;
  return 1;
}

/* Elements k0 … k0 + 16·kq − 1 of rows 0 … rows − 1 (ld apart; zero from n on): element
 * k0 + 16·q + l of row r at dst[(l·kq + q)·rows + r]. */
static void
mm_pack_res (const float *src, size_t ld, size_t rows, size_t k0, size_t n, size_t kq, float *dst)
{
  for (size_t r = 0; r < rows; r++)
    for (size_t q = 0; q < kq; q++)
      for (size_t l = 0; l < 16; l++)
        {
          size_t k = k0 + 16 * q + l;
          dst[(l * kq + q) * rows + r] = k < n ? src[r * ld + k] : 0.0f;
        }
}

/* Elements k0 … k0 + 16·kq − 1 of rows 0 … PIQ_MM_NC − 1 (ld apart; zero from n on):
 * element k0 + 16·q + l of row j at dst[(l·PIQ_MM_NC/8 + j/8)·PIQ_MM_WLD (kq) + 8·q + j mod 8],
 * the rest of dst's micro-panels (their padding) random. */
static void
mm_pack_w (const float *src, size_t ld, size_t k0, size_t n, size_t kq, float *dst)
{
  const size_t wld = PIQ_MM_WLD (kq);

  fill_random ((uint8_t *) dst, 16 * PIQ_MM_NC / 8 * wld * sizeof (float));
  for (size_t j = 0; j < PIQ_MM_NC; j++)
    for (size_t q = 0; q < kq; q++)
      for (size_t l = 0; l < 16; l++)
        {
          size_t k = k0 + 16 * q + l;
          dst[(l * PIQ_MM_NC / 8 + j / 8) * wld + 8 * q + j % 8] = k < n ? src[j * ld + k] : 0.0f;
        }
}

static int
check_mm_lanes (PiqMmLanesFn ref, PiqMmLanesFn fn)
{
  enum { MAXK = 304, MAXM = 80, NC = PIQ_MM_NC, LDW = MAXK + 3, OUT_LD = NC + 3 };
  static const size_t ns[] = { 0, 1, 15, 16, 17, 33, 64, 100, 257, 300 };
  static const size_t mrs[] = { 16, 32, 48, 64, 80 };
  static const size_t kbs[] = { 0, 16, 48, 128 };      /* 0: one block */
  static float x[MAXM * MAXK], w[NC * LDW + 8] BUF_ALIGNED, xp[MAXM * MAXK + 8] BUF_ALIGNED;
  static float wp[16 * NC / 8 * PIQ_MM_WLD (MAXK / 16) + 8] BUF_ALIGNED;
  static float o[2][MAXM * OUT_LD + 8] BUF_ALIGNED;
  static float l[2][MAXM * 16 * NC + 8] BUF_ALIGNED;

  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
    for (size_t mi = 0; mi < sizeof mrs / sizeof mrs[0]; mi++)
      for (size_t kbi = 0; kbi < sizeof kbs / sizeof kbs[0]; kbi++)
        {
          size_t n = ns[ni], mr = mrs[mi], np = (n + 15) / 16 * 16;
          size_t kb = kbs[kbi] ? kbs[kbi] : np;
          size_t xo = rnd () % 4, wo = rnd () % 4, oo = rnd () % 4, lo = rnd () % 4;
          size_t ldw = np + rnd () % 4, ldo = NC + rnd () % 3;
          int specials = (ni + mi + kbi) % 2;

          mm_fill (x, sizeof x / sizeof x[0], specials);
          mm_fill (w, sizeof w / sizeof w[0], specials);
          for (size_t j = 0; j < NC; j++)              /* the block's padding: zeros */
            memset (w + wo + j * ldw + n, 0, (np - n) * sizeof (float));
          fill_random ((uint8_t *) o, sizeof o);
          memcpy (o[1], o[0], sizeof o[0]);
          if (ref == NULL)
            for (size_t i = 0; i < mr; i += 4)
              for (size_t j = 0; j < NC; j += 8)
                piq_kernels_scalar.mm_tile (x + i * n, n, w + wo + j * ldw, ldw, n, 4, 8,
                                            o[0] + oo + i * ldo + j, ldo);
          fill_random ((uint8_t *) l, sizeof l);
          for (size_t k0 = 0; k0 < np || k0 == 0; k0 += kb)
            {
              size_t kq = (np - k0 < kb ? np - k0 : kb) / 16;
              int last = k0 + kb >= np;

              mm_pack_res (x, n, mr, k0, n, kq, xp + xo);
              mm_pack_w (w + wo, ldw, k0, n, kq, wp + wo);
              if (ref != NULL)
                ref (xp + xo, mr, wp + wo, kq, l[0] + lo, k0 == 0, last ? o[0] + oo : NULL, ldo);
              fn (xp + xo, mr, wp + wo, kq, l[1] + lo, k0 == 0, last ? o[1] + oo : NULL, ldo);
              if (ref != NULL && !mm_lanes_equal (l[0] + lo, l[1] + lo, mr * 16 * NC))
                {
                  snprintf (diag, sizeof diag, "n %zu, mr %zu, k block %zu: the lanes after k "
                            "%zu differ from the scalar kernel's", n, mr, kb, k0 + 16 * kq);
                  return 0;
                }
              if (last)
                break;
            }
          if (memcmp (o[0], o[1], sizeof o[0]) != 0)
            {
              size_t e = 0;
              while (memcmp (&o[0][e], &o[1][e], 4) == 0)
                e++;
              snprintf (diag, sizeof diag, "n %zu, mr %zu, k block %zu, ldw %zu, ldo %zu, offsets "
                        "x %zu w %zu out %zu: out element %td (row %td, col %td) is %a, %s gives %a",
                        n, mr, kb, ldw, ldo, xo, wo, oo, (ptrdiff_t) e - (ptrdiff_t) oo,
                        ((ptrdiff_t) e - (ptrdiff_t) oo) / (ptrdiff_t) ldo,
                        ((ptrdiff_t) e - (ptrdiff_t) oo) % (ptrdiff_t) ldo, (double) o[1][e],
                        ref == NULL ? "mm_tile" : "the scalar kernel", (double) o[0][e]);
              return 0;
            }
        }
  return 1;
}

/* ---- the fused GEMV (mm_decode_dot) ----
 * Every weight layout the kernel decodes, with random codes, scales (NaN, ±Inf, 0,
 * subnormal f32 and f16 scales, E8M0 0xff) and zero points, against the scalar table's
 * bytes; the scalar reference itself against its definition: the rows dequantized by
 * piq_block_dequantize, then the f32 tile. */

typedef struct {
  const char *name;
  int code, bits, qmin, qmax, kind, hf, zps, fixed;
} DdFmt;

static const DdFmt dd_fmts[] = {
  { "q4_0",        PIQ_C_Q4_0,     0,    0,   0, PIQ_SCALE_F32,  0, 0, 0 },
  { "q8_0",        PIQ_C_Q8_0,     0,    0,   0, PIQ_SCALE_F32,  0, 0, 0 },
  { "int4/f32",    -1,             4,   -8,   7, PIQ_SCALE_F32,  0, 0, 0 },
  { "int4/f32/zp", -1,             4,   -8,   7, PIQ_SCALE_F32,  0, 1, 0 },
  { "uint4/f32",   -1,             4,    0,  15, PIQ_SCALE_F32,  0, 0, 0 },
  { "uint4/f16/zp", -1,            4,    0,  15, PIQ_SCALE_F16,  0, 1, 0 },
  { "uint4/f32/zp/hi", -1,         4,    0,  15, PIQ_SCALE_F32,  1, 1, 0 },
  { "int4/f16/hi", -1,             4,   -8,   7, PIQ_SCALE_F16,  1, 0, 0 },
  { "int4/e8m0",   -1,             4,   -8,   7, PIQ_SCALE_E8M0, 0, 0, 0 },
  { "int8/f32",    -1,             8, -128, 127, PIQ_SCALE_F32,  0, 0, 0 },
  { "int8/f16/zp", -1,             8, -128, 127, PIQ_SCALE_F16,  0, 1, 0 },
  { "uint8/f32/zp", -1,            8,    0, 255, PIQ_SCALE_F32,  0, 1, 0 },
  { "uint8/f32",   -1,             8,    0, 255, PIQ_SCALE_F32,  0, 0, 0 },
  { "int8/tensor", -1,             8, -128, 127, PIQ_SCALE_F32,  0, 0, 1 },
  { "uint8/tensor", -1,            8,    0, 255, PIQ_SCALE_F32,  0, 0, 1 },
  { "int4/tensor", -1,             4,   -8,   7, PIQ_SCALE_F32,  0, 0, 1 },
  { "nf4",         PIQ_C_NF4,      4,    0,   0, PIQ_SCALE_F32,  0, 0, 0 },
  { "nf4/hi",      PIQ_C_NF4,      4,    0,   0, PIQ_SCALE_F32,  1, 0, 0 },
  { "nf4/f16",     PIQ_C_NF4,      4,    0,   0, PIQ_SCALE_F16,  1, 0, 0 },
  { "fp4_bnb/hi",  PIQ_C_FP4_BNB,  4,    0,   0, PIQ_SCALE_F32,  1, 0, 0 },
  { "fp4_bnb/f16", PIQ_C_FP4_BNB,  4,    0,   0, PIQ_SCALE_F16,  0, 0, 0 },
  { "uint4/tensor/hi", -1,         4,    0,  15, PIQ_SCALE_F32,  1, 0, 1 },
  { "int4/e8m0/hi", -1,            4,   -8,   7, PIQ_SCALE_E8M0, 1, 0, 0 },
  { "mxfp4",       PIQ_C_FP4_E2M1, 4,    0,   0, PIQ_SCALE_E8M0, 0, 0, 0 },
  { "mxfp4/hi",    PIQ_C_FP4_E2M1, 4,    0,   0, PIQ_SCALE_E8M0, 1, 0, 0 },
  { "fp4/f32",     PIQ_C_FP4_E2M1, 4,    0,   0, PIQ_SCALE_F32,  0, 0, 0 },
  { "mxfp8_e4m3",  PIQ_C_FP8_E4M3, 8,    0,   0, PIQ_SCALE_E8M0, 0, 0, 0 },
  { "fp8_e5m2/f32", PIQ_C_FP8_E5M2, 8,   0,   0, PIQ_SCALE_F32,  0, 0, 0 },
  { "fp8_e4m3/tensor", PIQ_C_FP8_E4M3, 8, 0,  0, PIQ_SCALE_F32,  0, 0, 1 },
  { "binary/f32",  PIQ_C_BINARY,   1,    0,   0, PIQ_SCALE_F32,  0, 0, 0 },
  { "binary/f16",  PIQ_C_BINARY,   1,    0,   0, PIQ_SCALE_F16,  0, 0, 0 },
  { "binary/e8m0", PIQ_C_BINARY,   1,    0,   0, PIQ_SCALE_E8M0, 0, 0, 0 },
  { "binary/tensor", PIQ_C_BINARY, 1,    0,   0, PIQ_SCALE_F32,  0, 0, 1 },
  { "nf8",         PIQ_C_NF8,      8,    0,   0, PIQ_SCALE_F32,  0, 0, 0 },   /* not taken */
};

/* A random scale in its storage, sometimes special. */
static void
dd_scale (uint8_t *p, int kind, int specials)
{
  uint32_t r = (uint32_t) rnd ();

  if (kind == PIQ_SCALE_E8M0)
    {
      p[0] = specials && r % 17 == 0 ? 0xff : specials && r % 13 == 0 ? (uint8_t) (r >> 8)
             : (uint8_t) (127 - 12 + (r >> 8) % 16);
      return;
    }
  if (kind == PIQ_SCALE_F16)
    {
      uint16_t h = specials && r % 7 == 0 ? (uint16_t) (r >> 8)      /* any bits: NaN, Inf, subnormal */
                   : piq_f32_to_f16 ((float) ((int) (r >> 8) % 2001 - 1000) * 0x1p-14f);
      memcpy (p, &h, 2);
      return;
    }
  {
    static const float special[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0x1p-140f, 3e38f };
    float f = specials && r % 7 == 0 ? special[(r >> 8) % 7]
              : (float) ((int) (r >> 8) % 2001 - 1000) * 0x1p-12f;
    memcpy (p, &f, 4);
  }
}

static int
check_mm_decode_dot (PiqMmDecodeDotFn ref, PiqMmDecodeDotFn fn)
{
  enum { MAXK = 1057, NR = 8, LDX = MAXK + 8, PAD = 3 };
  /* past 300 only ggml's blocks: their scales are gathered 16 blocks (512 elements) at
   * a time, and 544 and 1057 cross that chunk (1057 with a short last block) */
  static const size_t ks[] = { 1, 2, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 127, 128, 129,
                               255, 256, 257, 300, 544, 1057 };
  static const size_t blocks[] = { 16, 32, 64, 128, 24, 0 };   /* 0: one block a row */
  static const size_t nrs[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  static uint8_t codes[NR * (MAXK / 32 + 1) * 34 + NR * PAD + 64];
  static uint8_t sc[NR * (MAXK + PAD) * 4 + 64];
  static int32_t zp[NR * (MAXK + PAD) + 16];
  static float x[4 * LDX + 8] BUF_ALIGNED, wd[NR * MAXK], o[2][4 * 11 + 8];

  for (size_t fi = 0; fi < sizeof dd_fmts / sizeof dd_fmts[0]; fi++)
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++)
      for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
        {
          const DdFmt *f = &dd_fmts[fi];
          size_t k = ks[ki], block = blocks[bi] ? blocks[bi] : k;
          PiqBlockArgs a;
          PiqMmWeights w;
          size_t bpr, stride, sb = piq_block_scale_size (f->kind);
          int specials = (ki + bi) % 2;

          if (((f->bits == 0 || f->fixed) && bi > 0) || (k > 300 && f->bits != 0))
            continue;          /* their blocks are not a parameter; the long rows above */
          memset (&a, 0, sizeof a);
          a.code = f->code;
          a.bits = f->bits;
          a.qmin = f->qmin;
          a.qmax = f->qmax;
          a.block = f->bits == 0 ? 32 : block;
          a.scale_kind = f->kind;
          a.high_first = f->hf;
          a.fixed = f->fixed;
          if (f->fixed)
            {
              dd_scale ((uint8_t *) &a.scale, PIQ_SCALE_F32, specials);
              a.zero_point = f->qmin < 0 ? 0 : (int64_t) (rnd () % (uint64_t) (f->qmax + 1));
              if (specials && rnd () % 3 == 0)
                a.zero_point = rnd () % 2 ? INT32_MAX : -(1 << 30) - 5;   /* the wide path */
            }
          bpr = f->bits == 0 || f->fixed ? 0 : (k + block - 1) / block + rnd () % 2;
          stride = f->bits == 0 ? (k + 31) / 32 * (f->code == PIQ_C_Q8_0 ? 34 : 18)
                   : (k * (size_t) f->bits + 7) / 8;
          stride += rnd () % 2 ? 0 : rnd () % PAD + 1;
          fill_random (codes, sizeof codes);
          if (f->bits == 0)
            for (size_t j = 0; j < NR; j++)
              for (size_t b = 0; b < (k + 31) / 32; b++)
                {
                  uint8_t d[4];
                  dd_scale (d, PIQ_SCALE_F16, specials);
                  memcpy (codes + j * stride + b * (f->code == PIQ_C_Q8_0 ? 34 : 18), d, 2);
                }
          for (size_t b = 0; b < NR * (bpr ? bpr : 1); b++)
            {
              dd_scale (sc + b * sb, f->kind, specials);
              zp[b] = f->qmin < 0 ? (int32_t) (rnd () % 16) - 8 : (int32_t) (rnd () % (uint64_t) (f->qmax + 1));
              if (specials && rnd () % 41 == 0)
                zp[b] = rnd () % 2 ? INT32_MIN : (1 << 30) + 3;
            }
          w = (PiqMmWeights) { &a, codes, stride, f->fixed ? NULL : sc, f->zps ? zp : NULL, bpr };

          /* the scalar reference against its definition */
          if (fn == ref)
            for (size_t j = 0; j < NR; j++)
              piq_block_dequantize (&a, codes + j * stride, w.scales ? sc + j * bpr * sb : NULL,
                                    w.zero_points ? zp + j * bpr : NULL, 0, k, PIQ_F_F32,
                                    wd + j * k, 0);
          for (size_t ni = 0; ni < sizeof nrs / sizeof nrs[0]; ni++)
            for (size_t mr = 1; mr <= 4; mr++)
              {
                size_t nr = nrs[ni], xo = rnd () % 4, ldx = k + (mr % 2 ? 0 : 1 + rnd () % 5);
                size_t ldo = nr + rnd () % 3;

                mm_fill (x, sizeof x / sizeof x[0], specials);
                fill_random ((uint8_t *) o[0], sizeof o[0]);
                memcpy (o[1], o[0], sizeof o[0]);
                if (fn == ref)
                  piq_kernels_scalar.mm_tile (x + xo, ldx, wd, k, k, mr, nr, o[0], ldo);
                else
                  ref (&w, x + xo, ldx, k, mr, nr, o[0], ldo);
                fn (&w, x + xo, ldx, k, mr, nr, o[1], ldo);
                if (memcmp (o[0], o[1], sizeof o[0]) != 0)
                  {
                    size_t e = 0;
                    while (memcmp (&o[0][e], &o[1][e], 4) == 0)
                      e++;
                    snprintf (diag, sizeof diag, "%s, block %zu, k %zu, mr %zu, nr %zu, ldx %zu, x offset %zu, "
                              "specials %d: out[%zu][%zu] is %a, %s gives %a", f->name, a.block, k, mr, nr,
                              ldx, xo, specials, e / ldo, e % ldo, (double) o[1][e],
                              fn == ref ? "dequantize + mm_tile" : "scalar", (double) o[0][e]);
                    return 0;
                  }
              }
        }
  return 1;
}

static void
run_mm_decode_dot (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_mm_decode_dot (piq_kernels_scalar.mm_decode_dot, t->mm_decode_dot),
          t->name, "mm_decode_dot/f32", skip);
}

/* dot_groups (unsigned weights, any x) or dot_groups_i8 (signed weights, x in
 * [−127, 127]: its contract) against the scalar table's and an independent int64 sum. */
static void
call_dot (const PiqKernelTable *t, int i8, const uint8_t *w, const int8_t *x, size_t n,
          size_t group, int32_t *out)
{
  if (i8 == 2)
    t->dot_groups_q4 (w, x, n, group, out);
  else if (i8)
    t->dot_groups_i8 ((const int8_t *) (const void *) w, x, n, group, out);
  else
    t->dot_groups (w, x, n, group, out);
}

/* Weight k of dot_groups_q4's layout: blocks of 32 in 16 bytes, byte i holding element
 * i in its low nibble and i + 16 in its high one (ggml's Q4_0). */
static int64_t
q4_weight (const uint8_t *w, size_t k)
{
  uint8_t b = w[k / 32 * 16 + k % 16];
  return k % 32 < 16 ? b & 15 : b >> 4;
}

static int
check_dot_groups (const PiqKernelTable *t, int i8)
{
  enum { MAXN = 5000, MAXG = MAXN + 1 };
  static const size_t ns[] = { 0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257,
                               1000, 4095, 4096, 4097, 5000 };
  static const size_t groups[] = { 1, 4, 7, 8, 12, 16, 32, 33, 64, 96, 128, 256, 4096, 65536 };
  static uint8_t w[MAXN + 8] BUF_ALIGNED;
  static int8_t x[MAXN + 8] BUF_ALIGNED;
  static int32_t o[3][MAXG + 8];

  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
    for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
      for (int kind = 0; kind < 4; kind++)
        {
          size_t n = i8 == 2 ? ns[ni] / 32 * 32 : ns[ni];
          size_t group = i8 == 2 ? (groups[gi] + 31) / 32 * 32 : groups[gi];
          size_t wo = rnd () % 8, xo = rnd () % 8, oo = rnd () % 4;     /* unaligned */
          size_t n_groups = (n + group - 1) / group;

          for (size_t k = 0; k < n + 8; k++)
            switch (kind)
              {
              case 0:  w[k] = (uint8_t) rnd (); x[k] = (int8_t) rnd (); break;
              case 1:  w[k] = i8 ? 0x80 : 255; x[k] = i8 ? 127 : -128; break;   /* most negative */
              case 2:  w[k] = i8 ? 0x80 : 255; x[k] = i8 ? -127 : 127; break;   /* most positive */
              default: w[k] = rnd () % 2 ? 0 : i8 ? 0x80 : 255;
                       x[k] = rnd () % 2 ? (i8 ? -127 : -128) : 127; break;
              }
          if (i8 == 1)   /* the contract: x never −128 */
            for (size_t k = 0; k < n + 8; k++)
              x[k] = x[k] == -128 ? -127 : x[k];
          for (int b = 0; b < 3; b++)
            memset (o[b], 0xa5, sizeof o[b]);
          call_dot (&piq_kernels_scalar, i8, w + wo, x + xo, n, group, o[0] + oo);
          call_dot (t, i8, w + wo, x + xo, n, group, o[1] + oo);
          for (size_t g = 0; g < n_groups; g++)
            {
              int64_t s = 0;
              for (size_t k = g * group; k < n && k < (g + 1) * group; k++)
                s += (i8 == 2 ? q4_weight (w + wo, k) : i8 ? (int64_t) (int8_t) w[wo + k]
                      : (int64_t) w[wo + k]) * (int64_t) x[xo + k];
              o[2][oo + g] = (int32_t) s;
              if (s != (int64_t) o[1][oo + g])
                {
                  snprintf (diag, sizeof diag, "n %zu, group %zu, kind %d, offsets w %zu x %zu: group %zu "
                            "is %d, the exact sum is %lld", n, group, kind, wo, xo, g, o[1][oo + g], (long long) s);
                  return 0;
                }
            }
          if (memcmp (o[0], o[1], sizeof o[0]) != 0 || memcmp (o[1], o[2], sizeof o[0]) != 0)
            {
              size_t e = 0;
              while (o[0][e] == o[1][e] && o[1][e] == o[2][e])
                e++;
              snprintf (diag, sizeof diag, "n %zu, group %zu, kind %d: out[%td] is %08x, scalar %08x, "
                        "expected %08x (a write outside the %zu groups?)", n, group, kind,
                        (ptrdiff_t) e - (ptrdiff_t) oo, (unsigned) o[1][e], (unsigned) o[0][e],
                        (unsigned) o[2][e], n_groups);
              return 0;
            }
        }
  return 1;
}

/* act_quantize against the scalar table's and against its definition (docs/matmul.md)
 * written here in binary64: d = amax / 127 in binary32; codes 0 where d is 0, else
 * nearbyint of x · (1 / d) (x / d where 1 / d overflows), each operation rounded to
 * binary32 once (a binary64 product or quotient of two binary32 values, rounded to
 * binary32, is the binary32 result), ties to even, clamped to ±127. Groups of 1 to
 * past the row, rows crossing vectors and groups, at unaligned addresses; values of
 * every kind (ties, subnormals, infinities, NaN), zero groups, groups whose 1 / d
 * overflows or whose d underflows, and groups of exact ties. */
static int
act_oracle (const float *x, size_t k, size_t group, int8_t *q, float *d, int32_t *sum)
{
  for (size_t g = 0; g * group < k; g++)
    {
      size_t k0 = g * group, len = k - k0 < group ? k - k0 : group;
      double amax = 0.0;
      int nonfinite = 0;
      int64_t s = 0;
      for (size_t i = 0; i < len; i++)
        {
          nonfinite |= !isfinite (x[k0 + i]);
          amax = fmax (amax, fabs ((double) x[k0 + i]));
        }
      d[g] = nonfinite ? NAN : (float) (amax / 127.0);
      for (size_t i = 0; i < len; i++)
        {
          double v = 0.0;
          if (!nonfinite && d[g] > 0.0f)
            {
              double inv = 1.0 / (double) d[g];
              v = inv > FLT_MAX ? (double) (float) ((double) x[k0 + i] / (double) d[g])
                                : (double) (float) ((double) x[k0 + i] * (double) (float) inv);
              v = fmax (-127.0, fmin (127.0, rint (v)));
            }
          q[k0 + i] = (int8_t) v;
          s += (int64_t) v;
        }
      sum[g] = (int32_t) s;
    }
  return 1;
}

static int
check_act_quantize (const PiqKernelTable *t)
{
  enum { MAXN = 5000, MAXG = MAXN + 1 };
  static const size_t ns[] = { 0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 255, 256,
                               257, 1000, 4095, 4096, 4097, 5000 };
  static const size_t groups[] = { 1, 3, 8, 16, 17, 32, 33, 64, 128, 130, 4096, 65536 };
  static float x[MAXN + 8] BUF_ALIGNED;
  static int8_t q[3][MAXN + 8];
  static float d[3][MAXG];
  static int32_t sum[3][MAXG];

  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
    for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
      for (int kind = 0; kind < 5; kind++)
        {
          size_t n = ns[ni], group = groups[gi], xo = rnd () % 8, qo = rnd () % 8;
          size_t n_groups = (n + group - 1) / group;
          double scale = ldexp (1.0, (int) (rnd () % 40) - 20);
          for (size_t i = 0; i < n + 8; i++)
            switch (kind)
              {
              case 0:  /* every kind of value */
                x[i] = (float) interesting (scale);
                break;
              case 1:  /* finite values, now and then a group of zeros */
                x[i] = (float) (((double) (int64_t) (rnd () >> 11) / 9007199254740992.0 - 0.5) * scale);
                break;
              case 2:  /* exact ties of x · (1 / d) (d = 1: a 127 in the row) */
                x[i] = rnd () % 16 == 0 ? 127.0f : (float) ((double) (rnd () % 254) - 126.5);
                break;
              case 3:  /* magnitudes whose 1 / d overflows, and zeros */
                x[i] = rnd () % 4 == 0 ? 0.0f : (float) ldexp ((double) (rnd () % 9) - 4.0, -149);
                break;
              default: /* finite, one NaN or infinity here and there */
                x[i] = rnd () % 200 == 0 ? (rnd () % 2 ? NAN : -INFINITY)
                       : (float) interesting (scale);
                x[i] = isnan (x[i]) && rnd () % 2 ? 1.0f : x[i];
                break;
              }
          if (kind == 1)
            for (size_t g = 0; g < n_groups; g++)
              if (rnd () % 5 == 0)
                for (size_t i = g * group; i < n && i < (g + 1) * group; i++)
                  x[xo + i] = 0.0f;
          for (int b = 0; b < 3; b++)
            {
              memset (q[b], 0x5a, sizeof q[b]);
              memset (d[b], 0xa5, sizeof d[b]);
              memset (sum[b], 0xa5, sizeof sum[b]);
            }
          piq_kernels_scalar.act_quantize (x + xo, n, group, q[0] + qo, d[0], sum[0]);
          t->act_quantize (x + xo, n, group, q[1] + qo, d[1], sum[1]);
          act_oracle (x + xo, n, group, q[2] + qo, d[2], sum[2]);
          for (int b = 0; b < 2; b++)
            if (memcmp (q[b], q[2], sizeof q[2]) != 0 || memcmp (d[b], d[2], sizeof d[2]) != 0 ||
                memcmp (sum[b], sum[2], sizeof sum[2]) != 0)
              {
                size_t e = 0, g = 0;
                while (q[b][e] == q[2][e])
                  e++;
                while (memcmp (&d[b][g], &d[2][g], 4) == 0 && sum[b][g] == sum[2][g])
                  g++;
                snprintf (diag, sizeof diag, "%s: n %zu, group %zu, kind %d, offset %zu: first "
                          "code off at %td (%d, want %d; x %a), first group off %zu (d %a sum %d, "
                          "want %a %d)", b ? t->name : "scalar", n, group, kind, xo,
                          (ptrdiff_t) e - (ptrdiff_t) qo, q[b][e], q[2][e],
                          e >= qo && e - qo < n ? x[xo + e - qo] : 0.0f, g,
                          g < MAXG ? d[b][g] : 0.0f, g < MAXG ? sum[b][g] : 0,
                          g < MAXG ? d[2][g] : 0.0f, g < MAXG ? sum[2][g] : 0);
                return 0;
              }
        }
  return 1;
}

/* xnor_counts against the scalar table's and an independent count bit by bit: blocks
 * of 1 … 70 words (the 64-bit words of blocks of 64 … 4480 elements), from random,
 * all-equal, all-different and single-bit words, at unaligned addresses. */
static int
check_xnor_counts (const PiqKernelTable *t)
{
  enum { MAXW = 1200 };
  static const size_t words[] = { 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 70 };
  static const size_t nbs[] = { 0, 1, 2, 3, 5, 8, 16, 17 };
  static uint64_t xbuf[MAXW + 1], wbuf[MAXW + 1], o[3][40];

  for (size_t wi = 0; wi < sizeof words / sizeof words[0]; wi++)
    for (size_t bi = 0; bi < sizeof nbs / sizeof nbs[0]; bi++)
      for (int kind = 0; kind < 4; kind++)
        {
          size_t wpb = words[wi], nb = nbs[bi], n = wpb * nb;
          /* unaligned words: the kernel's contract assumes no alignment */
          uint64_t *x = (uint64_t *) (void *) ((char *) xbuf + 4 * (rnd () % 2));
          uint64_t *w = (uint64_t *) (void *) ((char *) wbuf + 4 * (rnd () % 2));
          uint64_t xv[MAXW], wv[MAXW];

          if (n > MAXW - 1)
            continue;
          for (size_t i = 0; i < n; i++)
            {
              uint64_t a = ((uint64_t) rnd () << 32) ^ rnd (), b = ((uint64_t) rnd () << 32) ^ rnd ();
              switch (kind)
                {
                case 0:  xv[i] = a; wv[i] = b; break;
                case 1:  xv[i] = wv[i] = a; break;                       /* all agree */
                case 2:  xv[i] = a; wv[i] = ~a; break;                   /* all differ */
                default: xv[i] = a; wv[i] = a ^ (UINT64_C (1) << (b % 64)); break;
                }
            }
          memcpy (x, xv, n * 8);
          memcpy (w, wv, n * 8);
          for (int b = 0; b < 3; b++)
            memset (o[b], 0xa5, sizeof o[b]);
          piq_kernels_scalar.xnor_counts (x, w, nb, wpb, o[0] + 1);
          t->xnor_counts (x, w, nb, wpb, o[1] + 1);
          for (size_t b = 0; b < nb; b++)
            {
              uint64_t c = 0;
              for (size_t i = b * wpb; i < (b + 1) * wpb; i++)
                for (int bit = 0; bit < 64; bit++)
                  c += ((xv[i] >> bit) & 1) != ((wv[i] >> bit) & 1);
              o[2][1 + b] = c;
            }
          if (memcmp (o[0], o[1], sizeof o[0]) != 0 || memcmp (o[1], o[2], sizeof o[0]) != 0)
            {
              size_t e = 0;
              while (o[0][e] == o[1][e] && o[1][e] == o[2][e])
                e++;
              snprintf (diag, sizeof diag, "%zu blocks of %zu words, kind %d: out[%td] is %llu, "
                        "scalar %llu, expected %llu (a write outside the blocks?)", nb, wpb, kind,
                        (ptrdiff_t) e - 1, (unsigned long long) o[1][e],
                        (unsigned long long) o[0][e], (unsigned long long) o[2][e]);
              return 0;
            }
        }
  return 1;
}

static void
run_xnor_counts (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_xnor_counts (t), t->name, "xnor_counts/u64", skip);
}

/* xnor_gemm against the scalar table's and the definition computed here bit by bit:
 * 1 … 9 rows of x (the register tiles of 8 and 4 and their tails), blocks of 1, 2, 3
 * and 5 words with ragged last blocks (k not a multiple of the block), random bits
 * and the all-agreeing and all-differing extremes, scales with ±0, ±Inf, NaN and
 * subnormals among random ones, at unaligned addresses; the outputs bit for bit (NaN
 * against NaN). */
static int
check_xnor_gemm (const PiqKernelTable *t)
{
  enum { MAXM = 9, MAXNB = 7, MAXW = 5, LDX = MAXNB * MAXW + 1, LDXS = MAXNB + 2 };
  static const size_t words[] = { 1, 2, 3, 5 };
  static const size_t nbs[] = { 1, 2, 3, 7 };
  static uint64_t xbuf[MAXM * LDX + 1], wbuf[MAXNB * MAXW * 8 + 1];
  static float xs[MAXM * LDXS], ws[MAXNB * 8 + 1];
  static double o[3][(MAXM + 2) * 8];      /* a row of guards on each side */
  static const float specials[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3.5e-39f };

  for (size_t wi = 0; wi < sizeof words / sizeof words[0]; wi++)
    for (size_t bi = 0; bi < sizeof nbs / sizeof nbs[0]; bi++)
      for (size_t m = 1; m <= MAXM; m++)
        for (int kind = 0; kind < 4; kind++)
          {
            size_t wpb = words[wi], nb = nbs[bi], B = wpb * 64 - (wpb > 1 ? rnd () % 64 : 0);
            size_t k = (nb - 1) * B + 1 + rnd () % B;           /* a ragged last block */
            uint64_t *x = (uint64_t *) (void *) ((char *) xbuf + 4 * (rnd () % 2));
            uint64_t *w = (uint64_t *) (void *) ((char *) wbuf + 4 * (rnd () % 2));
            float *wsu = ws + rnd () % 2;

            for (size_t i = 0; i < m; i++)
              for (size_t b = 0; b < nb; b++)
                {
                  size_t len = B < k - b * B ? B : k - b * B;
                  for (size_t q = 0; q < wpb; q++)
                    {
                      uint64_t a = ((uint64_t) rnd () << 32) ^ rnd ();
                      size_t lo = q * 64;
                      /* the bits past the block's length are 0 */
                      if (lo >= len)
                        a = 0;
                      else if (len - lo < 64)
                        a &= (UINT64_C (1) << (len - lo)) - 1;
                      memcpy (x + i * LDX + b * wpb + q, &a, 8);
                    }
                  xs[i * LDXS + b] = kind == 3 && rnd () % 5 == 0
                                     ? specials[rnd () % 7] : (float) (rnd () % 2001) / 1000 - 1;
                }
            for (size_t b = 0; b < nb; b++)
              for (size_t r = 0; r < 8; r++)
                {
                  size_t len = B < k - b * B ? B : k - b * B;
                  for (size_t q = 0; q < wpb; q++)
                    {
                      uint64_t xi, a = ((uint64_t) rnd () << 32) ^ rnd ();
                      size_t lo = q * 64;
                      memcpy (&xi, x + (r % m) * LDX + b * wpb + q, 8);
                      a = kind == 1 ? xi : kind == 2 ? ~xi : a;   /* agree, differ, random */
                      if (lo >= len)
                        a = 0;
                      else if (len - lo < 64)
                        a &= (UINT64_C (1) << (len - lo)) - 1;
                      memcpy (w + (b * wpb + q) * 8 + r, &a, 8);
                    }
                  wsu[b * 8 + r] = kind == 3 && rnd () % 5 == 0
                                   ? specials[rnd () % 7] : (float) (rnd () % 2001) / 1000 - 1;
                }
            memset (o[2], 0xa5, sizeof o[2]);
            for (size_t i = 0; i < m; i++)
              for (size_t r = 0; r < 8; r++)
                {
                  double acc = 0.0;
                  for (size_t b = 0; b < nb; b++)
                    {
                      int64_t len = (int64_t) (B < k - b * B ? B : k - b * B), c = len;
                      for (size_t q = 0; q < wpb; q++)
                        {
                          uint64_t xi, wv;
                          memcpy (&xi, x + i * LDX + b * wpb + q, 8);
                          memcpy (&wv, w + (b * wpb + q) * 8 + r, 8);
                          for (int bit = 0; bit < 64; bit++)
                            c -= 2 * (((xi ^ wv) >> bit) & 1);
                        }
                      acc = acc + ((double) xs[i * LDXS + b] * (double) wsu[b * 8 + r]) *
                                  (double) c;
                    }
                  o[2][8 + i * 8 + r] = acc;
                }
            memset (o[0], 0xa5, sizeof o[0]);
            memset (o[1], 0xa5, sizeof o[1]);
            piq_kernels_scalar.xnor_gemm (x, LDX, xs, LDXS, m, w, wsu, nb, wpb, B, k, o[0] + 8);
            t->xnor_gemm (x, LDX, xs, LDXS, m, w, wsu, nb, wpb, B, k, o[1] + 8);
            for (size_t e = 0; e < (MAXM + 2) * 8; e++)
              for (int q = 0; q < 2; q++)
                if (memcmp (&o[q][e], &o[2][e], 8) != 0 &&
                    !(e >= 8 && e < 8 + m * 8 && o[q][e] != o[q][e] && o[2][e] != o[2][e]))
                  {
                    snprintf (diag, sizeof diag, "%zu rows, %zu blocks of %zu words (B %zu, "
                              "k %zu), kind %d: out[%td] of the %s table is %a, expected %a",
                              m, nb, wpb, B, k, kind, (ptrdiff_t) e - 8, q ? t->name : "scalar", o[q][e],
                              o[2][e]);
                    return 0;
                  }
          }
  return 1;
}

static void
run_xnor_gemm (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_xnor_gemm (t), t->name, "xnor_gemm/u64", skip);
}

/* The int8 GEMM's packed micro-kernel against the scalar table's and an int64 sum:
 * ragged m, n (panels of 16, tiles of 8 × 32; AMX: blocks of 32 × 32 in tiles of
 * 16 rows × 16 quads) and kq, SET and ADD, unaligned rows, the extreme bytes (0 and
 * 255 against −128 and 127), and 65536 k of the most negative products (the most an
 * int32 sum of the contract holds). */
static int
check_gemm_u8s8 (const PiqKernelTable *t)
{
  static const size_t ms[] = { 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 32, 47 };
  static const size_t ns[] = { 1, 15, 16, 17, 31, 32, 33, 48, 67 };
  static const size_t kqs[] = { 0, 1, 2, 3, 16, 17, 257 };
  enum { MAXM = 47, MAXN = 80, MAXKQ = 16384 };
  uint8_t *a = malloc (MAXM * (4 * MAXKQ + 8));
  int8_t *b = malloc ((MAXN / 16 + 1) * (64 * MAXKQ + 64) + 64);
  int32_t *c[2];
  int ok = 1;

  c[0] = malloc (MAXM * (MAXN + 4) * sizeof (int32_t));
  c[1] = malloc (MAXM * (MAXN + 4) * sizeof (int32_t));
  for (int big = 0; big < 2 && ok; big++)
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0] && ok; mi++)
      for (size_t ni = 0; ni < sizeof ns / sizeof ns[0] && ok; ni++)
        for (size_t qi = 0; qi < (big ? 1 : sizeof kqs / sizeof kqs[0]) && ok; qi++)
          for (int kind = 0; kind < (big ? 2 : 4) && ok; kind++)
            {
              size_t m = ms[mi], n = ns[ni];
              size_t kq = big ? MAXKQ : kqs[qi];
              size_t lda = 4 * kq + rnd () % 5, ldbp = 64 * kq + 64 * (rnd () % 2);
              size_t ldc = n + rnd () % 4, ao = rnd () % 4, bo = rnd () % 4;
              size_t panels = (n + 15) / 16;
              int add = kind & 1;

              if (big && ((m != 1 && m != 9 && m != 17) || n != 33))
                continue;
              for (size_t i = 0; i < m * lda + 8; i++)
                a[i] = big ? 255 : kind >= 2 ? (rnd () % 2 ? 0 : 255) : (uint8_t) rnd ();
              for (size_t i = 0; i < panels * ldbp + 8; i++)
                b[i] = big ? (kind ? 127 : -128) : kind >= 2 ? (rnd () % 2 ? -128 : 127)
                                                             : (int8_t) rnd ();
              for (size_t i = 0; i < m * ldc; i++)
                c[0][i] = c[1][i] = add && !big ? (int32_t) (rnd () % 2000001) - 1000000 : 0x5a5a5a5a;
              piq_kernels_scalar.gemm_u8s8 (a + ao, lda, m, b + bo, ldbp, n, kq, c[0], ldc, add && !big);
              t->gemm_u8s8 (a + ao, lda, m, b + bo, ldbp, n, kq, c[1], ldc, add && !big);
              for (size_t i = 0; i < m && ok; i++)
                for (size_t j = 0; j < ldc && ok; j++)
                  {
                    if (j >= n)
                      {
                        ok = c[1][i * ldc + j] == 0x5a5a5a5a || (add && !big);
                        ok = ok && c[1][i * ldc + j] == c[0][i * ldc + j];
                        if (!ok)
                          snprintf (diag, sizeof diag, "m %zu n %zu kq %zu: column %zu past n written",
                                    m, n, kq, j);
                        continue;
                      }
                    if (c[1][i * ldc + j] != c[0][i * ldc + j])
                      {
                        ok = 0;
                        snprintf (diag, sizeof diag, "m %zu n %zu kq %zu kind %d add %d: [%zu][%zu] is %d, "
                                  "scalar %d", m, n, kq, kind, add, i, j, c[1][i * ldc + j],
                                  c[0][i * ldc + j]);
                      }
                  }
              /* the scalar kernel against the int64 sum (SET calls) */
              for (size_t i = 0; i < m && ok && !(add && !big); i++)
                for (size_t j = 0; j < n && ok; j++)
                  {
                    int64_t s = 0;
                    for (size_t q = 0; q < kq; q++)
                      for (int u = 0; u < 4; u++)
                        s += (int64_t) a[ao + i * lda + 4 * q + u] *
                             b[bo + j / 16 * ldbp + 64 * q + 4 * (j % 16) + u];
                    if (s != (int64_t) c[0][i * ldc + j])
                      {
                        ok = 0;
                        snprintf (diag, sizeof diag, "m %zu n %zu kq %zu kind %d: [%zu][%zu] is %d, "
                                  "the exact sum %lld", m, n, kq, kind, i, j, c[0][i * ldc + j],
                                  (long long) s);
                      }
                  }
            }
  free (a);
  free (b);
  free (c[0]);
  free (c[1]);
  return ok;
}

static void
run_gemm_u8s8 (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_gemm_u8s8 (t), t->name, "gemm_u8s8/packed", skip);
}

/* gemm_groups (the dynamic-int8 policy's grouped products on panels) against the
 * scalar table's bytes, and the scalar table against the contract written out here
 * from logical codes, scales and zero points packed by this test: 4-bit and byte
 * codes, binary16 and binary32 scales, one zero point or one per group; ragged m
 * (tiles of 4 rows), n (panels of 16, pairs of panels), groups of 4 to 128 elements,
 * a call split in two (the binary64 sums carried), unaligned codes; extreme codes and
 * X (0/255 or 15 against ±127), scales and X scales NaN, ±Inf, ±0, subnormal. */
static int
check_gemm_groups (const PiqKernelTable *t)
{
  static const size_t ms[] = { 1, 2, 3, 4, 5, 7, 9 };
  static const size_t ns[] = { 1, 15, 16, 17, 33, 48 };
  static const size_t gqs[] = { 1, 2, 8, 32 };
  static const float edge[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0x1p-149f, 0x1p-140f,
                                65504.0f, 1.0f, -0.5f };
  enum { MAXM = 9, MAXN = 48, MAXG = 5, MAXGQ = 32 };
  const size_t maxpanel = MAXG * (64 * MAXGQ + 64 + 64);
  uint8_t *u = malloc (MAXN * MAXG * 4 * MAXGQ), *wbuf = malloc ((MAXN / 16 + 1) * (maxpanel + 64) + 8);
  int8_t *x = malloc (MAXM * (MAXG * 4 * MAXGQ + 4) + 8);
  float *sc = malloc (MAXN * MAXG * sizeof (float)), *out[3];
  int32_t *zp = malloc (MAXN * MAXG * sizeof (int32_t)), *xz = malloc (MAXM * MAXG * sizeof (int32_t));
  double *xd = malloc (MAXM * MAXG * sizeof (double)), *acc = malloc (MAXM * 64 * sizeof (double));
  int ok = 1;

  for (int i = 0; i < 3; i++)
    out[i] = malloc (MAXM * (MAXN + 3) * sizeof (float));
  for (size_t mi = 0; mi < sizeof ms / sizeof ms[0] && ok; mi++)
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0] && ok; ni++)
      for (size_t qi = 0; qi < sizeof gqs / sizeof gqs[0] && ok; qi++)
        for (int kind = 0; kind < 16 && ok; kind++)
          {
            const int q4 = kind & 1, f16 = (kind >> 1) & 1, zpc = (kind >> 2) & 1, ext = kind >> 3;
            const size_t m = ms[mi], n = ns[ni], gq = gqs[qi] < 2 && q4 ? 2 : gqs[qi];
            const size_t groups = 1 + rnd () % MAXG, gl = 4 * gq;
            const size_t code_bytes = q4 ? 32 * gq : 64 * gq;
            const size_t gbytes = code_bytes + (f16 ? 32 : 64) + (zpc ? 64 : 0);
            const size_t ldwp = groups * gbytes + 64 * (rnd () % 2), wo = rnd () % 4, xo = rnd () % 4;
            const size_t ldx = groups * gl + rnd () % 3, ldo = n + rnd () % 3;
            const size_t split = rnd () % (groups + 1);
            PiqGroupsW w = { wbuf + wo, ldwp, gbytes, gq, q4, f16, zpc };

            if (mi % 2 != ni % 2 && kind % 4 == 1)
              continue;   /* half of the smaller combinations: the test stays cheap */
            memset (wbuf, 0, (n + 15) / 16 * ldwp + 8);
            for (size_t j = 0; j < n; j++)
              for (size_t g = 0; g < groups; g++)
                {
                  uint8_t *wg = wbuf + wo + j / 16 * ldwp + g * gbytes;
                  size_t c = j % 16;
                  float s = ext && rnd () % 6 == 0 ? edge[rnd () % 10]
                            : (float) ((int) (rnd () % 2001) - 1000) / 1024.0f;
                  for (size_t k = 0; k < gl; k++)
                    {
                      uint8_t v = (uint8_t) (ext ? (rnd () % 2 ? 0 : 255) : rnd ());
                      v = q4 ? v & 15 : v;
                      u[(j * MAXG + g) * gl + k] = v;
                      if (q4)
                        wg[k / 8 * 64 + 4 * c + k % 4] |= (uint8_t) (v << (4 * (k / 4 % 2)));
                      else
                        wg[k / 4 * 64 + 4 * c + k % 4] = v;
                    }
                  sc[j * MAXG + g] = s;
                  if (f16)
                    {
                      uint16_t h = piq_f32_to_f16 (s);
                      sc[j * MAXG + g] = piq_f16_to_f32 (h);
                      memcpy (wg + code_bytes + 2 * c, &h, 2);
                    }
                  else
                    memcpy (wg + code_bytes + 4 * c, &s, 4);
                  zp[j * MAXG + g] = zpc ? (int32_t) (rnd () % 256) : 0;
                  if (zpc)
                    memcpy (wg + code_bytes + (f16 ? 32 : 64) + 4 * c, &zp[j * MAXG + g], 4);
                }
            for (size_t i = 0; i < m; i++)
              for (size_t g = 0; g < groups; g++)
                {
                  int32_t sum = 0;
                  for (size_t k = 0; k < gl; k++)
                    {
                      int8_t v = (int8_t) (ext ? (rnd () % 2 ? -127 : 127) : (int) (rnd () % 255) - 127);
                      x[xo + i * ldx + g * gl + k] = v;
                      sum += v;
                    }
                  xd[i * MAXG + g] = ext && rnd () % 6 == 0 ? (double) edge[rnd () % 10]
                                     : (double) ((float) (rnd () % 1000 + 1) / 127.0f);
                  xz[i * MAXG + g] = zpc ? sum : (int32_t) (rnd () % 256) * sum;
                }
            for (int p = 0; p < 3; p++)
              for (size_t i = 0; i < m * ldo; i++)
                out[p][i] = 1234.5f;
            /* the scalar kernel in one call; the table's in two, the sums carried */
            piq_kernels_scalar.gemm_groups (&w, groups, (const int8_t *) x + xo, ldx, xd, xz, MAXG, m,
                                            n, acc, 64, 1, out[0], ldo);
            if (split > 0 && split < groups)
              {
                PiqGroupsW w2 = w;
                t->gemm_groups (&w, split, (const int8_t *) x + xo, ldx, xd, xz, MAXG, m, n, acc, 64,
                                1, NULL, ldo);
                w2.w += split * gbytes;
                t->gemm_groups (&w2, groups - split, (const int8_t *) x + xo + split * gl, ldx,
                                xd + split, xz + split, MAXG, m, n, acc, 64, 0, out[1], ldo);
              }
            else
              t->gemm_groups (&w, groups, (const int8_t *) x + xo, ldx, xd, xz, MAXG, m, n, acc, 64,
                              1, out[1], ldo);
            /* the contract */
            for (size_t i = 0; i < m; i++)
              for (size_t j = 0; j < n; j++)
                {
                  double a = 0.0;
                  float v;
                  for (size_t g = 0; g < groups; g++)
                    {
                      int64_t s = 0;
                      for (size_t k = 0; k < gl; k++)
                        s += (int64_t) u[(j * MAXG + g) * gl + k] * x[xo + i * ldx + g * gl + k];
                      s -= zpc ? (int64_t) zp[j * MAXG + g] * xz[i * MAXG + g] : xz[i * MAXG + g];
                      a = a + ((double) s * (double) sc[j * MAXG + g]) * xd[i * MAXG + g];
                    }
                  v = (float) a;
                  out[2][i * ldo + j] = v != v ? __builtin_nanf ("") : v;
                }
            for (size_t i = 0; i < m * ldo && ok; i++)
              {
                int past = i % ldo >= n;
                if (memcmp (&out[0][i], &out[2][i], 4) != 0 || memcmp (&out[1][i], &out[0][i], 4) != 0 ||
                    (past && out[1][i] != 1234.5f))
                  {
                    ok = 0;
                    snprintf (diag, sizeof diag, "m %zu n %zu gq %zu groups %zu kind %d split %zu: "
                              "[%zu][%zu] is %a, scalar %a, contract %a", m, n, gq, groups, kind,
                              split, i / ldo, i % ldo, out[1][i], out[0][i], out[2][i]);
                  }
              }
          }
  for (int i = 0; i < 3; i++)
    free (out[i]);
  free (u);
  free (wbuf);
  free (x);
  free (sc);
  free (zp);
  free (xz);
  free (xd);
  free (acc);
  return ok;
}

static void
run_gemm_groups (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_gemm_groups (t), t->name, "gemm_groups/packed", skip);
}

static void
run_mm_tile (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_mm_tile (piq_kernels_scalar.mm_tile, t->mm_tile, 0),
          t->name, "mm_tile/f32", skip);
  report (skip != NULL || check_mm_tile_nan_order (piq_kernels_scalar.mm_tile, t->mm_tile),
          t->name, "mm_tile/f32/nan-order", skip);
}

static void
run_mm_lanes (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_mm_lanes (piq_kernels_scalar.mm_lanes, t->mm_lanes),
          t->name, "mm_lanes/f32", skip);
}

static void
run_dot_groups (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_dot_groups (t, 0), t->name, "dot_groups/u8s8", skip);
}

static void
run_dot_groups_i8 (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_dot_groups (t, 1), t->name, "dot_groups/i8", skip);
}

static void
run_dot_groups_q4 (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_dot_groups (t, 2), t->name, "dot_groups/q4", skip);
}

/* ---- fake quantization: values, mask, source gradient and the 16 gradient lanes ---- */

static PiqQatArgs
qat_args (double scale, int ii, int zp_kind, float gf)
{
  PiqKernelArgs k = make_args (scale, ii, zp_kind);
  PiqQatArgs a;

  a.s = k.scale_f;
  a.inv = k.inv_f;
  a.gf = gf;
  a.zp = (float) k.zero_point;
  a.lo = (float) k.qmin;
  a.hi = (float) k.qmax;
  a.lo_zp = (float) (k.qmin - k.zero_point);
  a.hi_zp = (float) (k.qmax - k.zero_point);
  a.stream = (int) (rnd () & 1);      /* streamed stores where aligned: same bytes */
  return a;
}

/* Lanes agree bit for bit, or are both NaN (a NaN's payload and sign are not part
 * of the contract: the compiler may swap the operands of an addition). */
static int
lanes_equal (const double *a, const double *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (memcmp (&a[i], &b[i], 8) != 0 && !(a[i] != a[i] && b[i] != b[i]))
      return 0;
  return 1;
}

static void
put_float (uint8_t *p, size_t i, int ft, float f)
{
  switch (ft)
    {
    case PIQ_F_F32: memcpy (p + 4 * i, &f, 4); break;
    case PIQ_F_BF16: { uint16_t h = piq_f32_to_bf16 (f); memcpy (p + 2 * i, &h, 2); } break;
    default: { uint16_t h = piq_f32_to_f16 (f); memcpy (p + 2 * i, &h, 2); } break;
    }
}

static const char *const ft_names[] = { "f32", "f64", "bf16", "f16" };

/* One combination of element types: x, dy (backward) and y / dx. All-f32 runs every
 * length × integer type × zero-point kind; the others a rotating quarter of the
 * types and kinds at every length (each still sees every length, type and kind). */
static int
check_qat (const PiqKernelTable *t, int backward, int xft, int gft, int oft)
{
  static const int types[] = { PIQ_I_UINT8, PIQ_I_INT8, PIQ_I_INT4, PIQ_I_UINT2, PIQ_I_UINT16, PIQ_I_INT16 };
  static const size_t lane0s[] = { 0, 1, 7, 15, 16, 35 };
  static const size_t extra[] = { 48, 49, 80, 95, 16384 + 17 };
  enum { N = 16384 + 64 };
  static uint8_t x[4 * N + 8], g[4 * N + 8], m1[N + 8], m2[N + 8];
  static uint8_t o1[4 * N + 8] __attribute__ ((aligned (64))), o2[4 * N + 8] __attribute__ ((aligned (64)));
  size_t n_len = sizeof lengths / sizeof lengths[0], n_all = n_len + sizeof extra / sizeof extra[0];
  int all = xft == PIQ_F_F32 && gft == PIQ_F_F32 && oft == PIQ_F_F32;

  for (size_t li = 0; li < n_all; li++)
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
      for (int zk = 0; zk < 4; zk++)
        {
          size_t n = li < n_len ? lengths[li] : extra[li - n_len];
          double scale = scales[(li + ti + zk) % (sizeof scales / sizeof scales[0])];
          static const float gfs[] = { 1.0f, 0.3f, 0.125f, 1.7e-3f };
          PiqQatArgs a;
          size_t off = (li + zk) % 4;            /* bytes: unaligned pointers */
          size_t lane0 = lane0s[(li + ti + zk) % (sizeof lane0s / sizeof lane0s[0])];
          double l1[2 * PIQ_QAT_LANES], l2[2 * PIQ_QAT_LANES];
          int want_out = (li + ti) % 5 != 0, want_mask = (li + zk) % 3 != 0;

          if (!all && (ti + (size_t) zk) % 4 != (li + (size_t) (xft + 3 * gft + 5 * oft)) % 4)
            continue;
          a = qat_args (scale, types[ti], zk, gfs[(li + zk) % 4]);
          a.x_ft = xft;
          a.g_ft = gft;
          a.o_ft = oft;
          fill_float (x + off, n, xft, scale);
          /* clamped values on both sides, often in the first half; in the second
           * half rarely, so that the vector bodies see blocks of 16 with none and
           * with some, in batches of 64 blocks (the zero point's deferred terms) */
          for (size_t i = 0; i < n; i += i < n / 2 ? 7 : 97)
            {
              float f = (float) ((i & 8 ? 1 : -1) * scale * (double) (a.hi - a.lo + 3 + (double) (rnd () % 50)));
              put_float (x + off, i, xft, f);
            }
          fill_float (g + off, n, gft, 0.01);
          for (int k = 0; k < 2 * PIQ_QAT_LANES; k++)
            l1[k] = l2[k] = (double) (int64_t) (rnd () % 2001) - 1000.0 + 0.25 * (double) k;
          memset (o1, 0xa5, sizeof o1);
          memset (o2, 0xa5, sizeof o2);
          memset (m1, 0x5a, sizeof m1);
          memset (m2, 0x5a, sizeof m2);
          if (backward)
            {
              piq_kernels_scalar.qat_backward (x + off, g + off, n, &a, want_out ? o1 + off : NULL, lane0, l1);
              t->qat_backward (x + off, g + off, n, &a, want_out ? o2 + off : NULL, lane0, l2);
            }
          else
            {
              piq_kernels_scalar.qat_forward (x + off, n, &a, want_out ? o1 + off : NULL, want_mask ? m1 + off : NULL);
              t->qat_forward (x + off, n, &a, want_out ? o2 + off : NULL, want_mask ? m2 + off : NULL);
            }
          if (memcmp (o1, o2, sizeof o1) != 0 || memcmp (m1, m2, sizeof m1) != 0
              || (backward && !lanes_equal (l1, l2, 2 * PIQ_QAT_LANES)))
            {
              snprintf (diag, sizeof diag, "qat_%s x %s dy %s out %s n=%zu type %d zp kind %d "
                        "lane0 %zu offset %zu stream %d: the table differs from scalar",
                        backward ? "backward" : "forward", ft_names[xft], ft_names[gft],
                        ft_names[oft], n, types[ti], zk, lane0, off, a.stream);
              return 0;
            }
        }
  return 1;
}

/* The scalar backward kernel against the definition written out here: lane k holds
 * the binary64 sum, in element order, of the terms of the elements i with
 * (lane0 + i) mod 16 = k, each term the binary32 formula of piq-kernels-private.h. */
static int
check_qat_order (void)
{
  enum { N = 1000 };
  static float x[N], g[N];
  PiqQatArgs a = qat_args (0.02, PIQ_I_UINT8, 3, 0.5f);

  a.stream = 0;
  a.x_ft = a.g_ft = a.o_ft = PIQ_F_F32;
  double got[2 * PIQ_QAT_LANES] = { 0 }, want[2 * PIQ_QAT_LANES] = { 0 };
  const size_t lane0 = 5;

  for (size_t i = 0; i < N; i++)
    {
      x[i] = (float) (((double) (rnd () % 20001) - 10000.0) * 0.001);
      g[i] = (float) (((double) (rnd () % 2001) - 1000.0) * 0.0007);
    }
  piq_kernels_scalar.qat_backward (x, g, N, &a, NULL, lane0, got);
  for (size_t i = 0; i < N; i++)
    {
      volatile float v = x[i] * a.inv;
      float q = nearbyintf (a.zp + v), ds, dz;
      size_t k = (lane0 + i) % 16;
      if (q >= a.lo && q <= a.hi)
        {
          volatile float xq = (q - a.zp) * a.s;
          volatile float t1 = g[i] * (xq - x[i]);
          volatile float t2 = t1 * a.inv;
          ds = t2 * a.gf, dz = 0.0f;
        }
      else
        {
          volatile float t1 = g[i] * (q < a.lo ? a.lo_zp : a.hi_zp);
          volatile float t2 = -g[i] * a.s;
          ds = t1 * a.gf, dz = t2 * a.gf;
        }
      want[k] += ds;
      want[16 + k] += dz;
    }
  if (memcmp (got, want, sizeof got) != 0)
    {
      snprintf (diag, sizeof diag, "qat_backward lanes differ from the written-out order");
      return 0;
    }
  return 1;
}

/* Every x / y type pair forward; backward every x / dy pair with dx of dy's type (the
 * vectorized ones) and two with another dx type (the scalar hand-over). */
static void
run_qat_forward (const PiqKernelTable *t, const char *skip)
{
  static const int fts[] = { PIQ_F_F32, PIQ_F_BF16, PIQ_F_F16 };
  char name[64];

  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      {
        snprintf (name, sizeof name, "qat_forward/%s-%s", ft_names[fts[a]], ft_names[fts[b]]);
        report (skip != NULL || check_qat (t, 0, fts[a], fts[a], fts[b]), t->name, name, skip);
      }
}

static void
run_qat_backward (const PiqKernelTable *t, const char *skip)
{
  static const int fts[] = { PIQ_F_F32, PIQ_F_BF16, PIQ_F_F16 };
  static const int mixed[][3] = { { PIQ_F_F32, PIQ_F_BF16, PIQ_F_F32 }, { PIQ_F_BF16, PIQ_F_F16, PIQ_F_BF16 } };
  char name[64];

  for (int k = 0; k < 9 + 2; k++)
    {
      int xft = k < 9 ? fts[k / 3] : mixed[k - 9][0], gft = k < 9 ? fts[k % 3] : mixed[k - 9][1];
      int oft = k < 9 ? gft : mixed[k - 9][2];
      snprintf (name, sizeof name, "qat_backward/%s-%s-%s", ft_names[xft], ft_names[gft], ft_names[oft]);
      report (skip != NULL || check_qat (t, 1, xft, gft, oft), t->name, name, skip);
    }
}

/* The histogram observer's bins: ranges with wide and narrow widths, one bin, a bin
 * count that does not divide the range, a width that overflows to infinity; data
 * around the range (its ends and the bin edges and their neighbours, NaN, ±Inf,
 * raw bit patterns), every length, at byte offsets that misalign the source. */
static int
check_hist_bins (const PiqKernelTable *t)
{
  static const PiqHistArgs cases[] = {
    { -5.0f, 5.0f, 2048 }, { 0.0f, 1.0f, 1 }, { -1.0f, 1.0f, 3 }, { 0.1f, 0.7f, 1000 },
    { -7.0f, 9.0f, 1u << 20 }, { 1e-30f, 3e-30f, 2047 }, { -3e38f, 3e38f, 2048 },
    { -2.5f, -2.25f, 77 },
  };
  static uint8_t src[4 * MAX_N + 8];
  static uint32_t want[MAX_N], got[MAX_N];

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    {
      const PiqHistArgs *a = &cases[c];
      double lo = a->lo, hi = a->hi, w = hi - lo;
      for (size_t i = 0; i < MAX_N + 2; i++)
        {
          uint64_t r = rnd ();
          double k = (double) (r >> 40 & 0xffff) / 65536.0 * a->bins;
          float v;
          switch (r % 12)
            {
            case 0:  v = (float) (lo + floor (k) * w / a->bins); break;     /* an edge */
            case 1:  v = nextafterf ((float) (lo + floor (k) * w / a->bins), INFINITY); break;
            case 2:  v = nextafterf ((float) (lo + floor (k) * w / a->bins), -INFINITY); break;
            case 3:  v = r >> 8 & 1 ? a->lo : a->hi; break;
            case 4:  v = nextafterf (r >> 8 & 1 ? a->lo : a->hi, r >> 9 & 1 ? INFINITY : -INFINITY); break;
            case 5:  v = (float) interesting (w / 64); break;
            case 6:  { uint32_t bits = (uint32_t) (r >> 16); memcpy (&v, &bits, 4); } break;
            default: v = (float) (lo - w / 8 + (double) (r >> 11) / 9007199254740992.0 * w * 1.25); break;
            }
          memcpy (src + 4 * i, &v, 4);
        }
      for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
        for (size_t off = 0; off < 8; off += 3)
          {
            size_t n = lengths[li];
            memset (want, 0xa5, sizeof want);
            memset (got, 0x5a, sizeof got);
            piq_kernels_scalar.hist_bins (src + off, n, a, want);
            t->hist_bins (src + off, n, a, got);
            for (size_t i = 0; i < n; i++)
              if (want[i] != got[i] || want[i] > a->bins)
                {
                  float v;
                  memcpy (&v, src + off + 4 * i, 4);
                  snprintf (diag, sizeof diag, "[%g, %g] in %u bins, n %zu, offset %zu: "
                            "element %zu (%a) in bin %u, the scalar's %u", lo, hi, a->bins,
                            n, off, i, v, got[i], want[i]);
                  return 0;
                }
            if (n < MAX_N && got[n] != 0x5a5a5a5au)
              {
                snprintf (diag, sizeof diag, "wrote past %zu elements", n);
                return 0;
              }
          }
    }
  return 1;
}

static void
run_act_quantize (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_act_quantize (t), t->name, "act_quantize/f32", skip);
}

static void
run_hist_bins (const PiqKernelTable *t, const char *skip)
{
  report (skip != NULL || check_hist_bins (t), t->name, "hist_bins/f32", skip);
}

#define STR_(x) #x
#define RUN_quantize(t, slot, f, i, r)   run_quantize (t, t->slot, piq_kernels_scalar.slot, STR_ (f), STR_ (i), STR_ (r), skip);
#define RUN_dequantize(t, slot, i, f, o) run_dequantize (t, t->slot, piq_kernels_scalar.slot, STR_ (i), STR_ (f), STR_ (o), skip);
#define RUN_requantize(t, slot, f, r, o) run_requantize (t, t->slot, piq_kernels_scalar.slot, STR_ (f), STR_ (r), STR_ (o), skip);
#define RUN_minmax(t, slot, f)           run_minmax (t, t->slot, piq_kernels_scalar.slot, STR_ (f), skip);
#define RUN_sums(t, slot, f)             run_sums (t, t->slot, piq_kernels_scalar.slot, STR_ (f), skip);
#define RUN_block_quantize(t, slot, f)   run_block (t, "block", skip);
#define RUN_block_dequantize(t, slot, f) /* checked with block_quantize */
#define RUN_mm_tile(t, slot, f)          run_mm_tile (t, skip);
#define RUN_mm_lanes(t, slot, f)         run_mm_lanes (t, skip);
#define RUN_mm_decode_dot(t, slot, f)    run_mm_decode_dot (t, skip);
#define RUN_dot_groups(t, slot, f)       run_dot_groups (t, skip);
#define RUN_dot_groups_i8(t, slot, f)    run_dot_groups_i8 (t, skip);
#define RUN_dot_groups_q4(t, slot, f)    run_dot_groups_q4 (t, skip);
#define RUN_xnor_counts(t, slot, f)      run_xnor_counts (t, skip);
#define RUN_xnor_gemm(t, slot, f)        run_xnor_gemm (t, skip);
#define RUN_gemm_u8s8(t, slot, f)        run_gemm_u8s8 (t, skip);
#define RUN_gemm_groups(t, slot, f)      run_gemm_groups (t, skip);
#define RUN_qat_forward(t, slot, f)      run_qat_forward (t, skip);
#define RUN_qat_backward(t, slot, f)     run_qat_backward (t, skip);
#define RUN_hist_bins(t, slot, f)        run_hist_bins (t, skip);
#define RUN_act_quantize(t, slot, f)     run_act_quantize (t, skip);
#define RUN_ENTRY(op, slot, ...)         if (t->slot != NULL) { RUN_##op (t, slot, __VA_ARGS__) }

int
main (void)
{
  size_t n_tables;
  const PiqKernelTable *const *tables = piq_kernel_tables (&n_tables);
  uint32_t cpu = piq_cpu_features ();
  PiqKernelTable merged;

  /* The tables and the merge: a scalar-capped merge is the scalar table. */
  piq_kernels_merge (0, cpu, &merged);
  n_test++;
  printf ("%s %d - /kernels/merge/scalar-cap\n",
          merged.level == 0 && merged.quantize[0][4][0] == piq_kernels_scalar.quantize[0][4][0] ? "ok" : "not ok",
          n_test);

  /* The format table has a row for every code of the kernel layer's list, at its
   * PiqDtype value, with the same storage bits and a description. */
  {
    int ok = 1;
    for (int c = 0; c < PIQ_N_CODE && ok; c++)
      {
        const PiqDtypeInfo *info = piq_dtype_info (32 + c);
        ok = info != NULL && info->kind == PIQ_KIND_CODE && info->kernel_index == c &&
             info->bits == piq_code_bits[c] && info->description != NULL &&
             (piq_code_family[c] == PIQ_FAMILY_GGML) == (info->bits == 0);
        if (!ok)
          snprintf (diag, sizeof diag, "code %d has no matching row in the format table", c);
      }
    report (ok, "table", "format-table/codes", NULL);
  }
  report (check_cpu_features (), "cpu", "features", NULL);
  report (check_affine_nonfinite (), "scalar", "affine-from-range/non-finite", NULL);
  /* The scalar matrix-multiply kernels against their contracts written out here. */
  report (check_mm_tile (NULL, piq_kernels_scalar.mm_tile, 1), "scalar", "mm_tile/f32/contract", NULL);
  report (check_mm_lanes (NULL, piq_kernels_scalar.mm_lanes), "scalar", "mm_lanes/f32/contract", NULL);
  report (check_mm_decode_dot (piq_kernels_scalar.mm_decode_dot, piq_kernels_scalar.mm_decode_dot),
          "scalar", "mm_decode_dot/f32/contract", NULL);
  report (check_dot_groups (&piq_kernels_scalar, 0), "scalar", "dot_groups/u8s8/exact", NULL);
  report (check_dot_groups (&piq_kernels_scalar, 1), "scalar", "dot_groups/i8/exact", NULL);
  report (check_dot_groups (&piq_kernels_scalar, 2), "scalar", "dot_groups/q4/exact", NULL);
  report (check_xnor_counts (&piq_kernels_scalar), "scalar", "xnor_counts/u64/exact", NULL);
  report (check_xnor_gemm (&piq_kernels_scalar), "scalar", "xnor_gemm/u64/definition", NULL);
  report (check_gemm_u8s8 (&piq_kernels_scalar), "scalar", "gemm_u8s8/packed/exact", NULL);
  report (check_gemm_groups (&piq_kernels_scalar), "scalar", "gemm_groups/packed/contract", NULL);
  report (check_qat_order (), "scalar", "qat_backward/f32/order", NULL);

  /* Every built SIMD table, then the dispatched one (ifunc symbols, or the table
   * built once without ifunc): every entry of the latter is checked. */
  for (size_t k = 1; k <= n_tables; k++)
    {
      const PiqKernelTable *t = k < n_tables ? tables[k] : piq_kernels_best ();
      const char *skip = (t->required & cpu) == t->required ? NULL : "this CPU lacks the table's features";
      int before = n_test;

      PIQ_KERNEL_LIST (RUN_ENTRY)
      if (n_test == before)
        {
          snprintf (diag, sizeof diag, "table %s fills no entry", t->name);
          report (0, t->name, "entries", NULL);
        }
    }
  printf ("1..%d\n", n_test);
  return n_failed != 0;
}

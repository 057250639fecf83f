/* piq-matmul-vec-body.h: the matrix multiply's kernels, written once for every ISA unit
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h (the unit's vf type, PIQ_W and VINLINE), where
 * the unit may define
 *   PIQ_VEC_FMA(a, b, c)   a · b + c on vf, rounded once (the ISA's fused multiply-add)
 * Without it the unit leaves the f32 tile to the scalar kernel: an unfused a · b + c
 * rounds twice and would not give the same bytes (docs/matmul.md).
 *
 * The tile keeps one 16-lane accumulator per output, 16 / PIQ_W vectors, so lane l
 * holds the products k ≡ l (mod 16) in the order the scalar reference adds them,
 * whatever the vector width. Sub-tiles of MM_MR × MM_NR outputs keep the
 * accumulators in registers (16 zmm; 8 ymm pairs; 16 q registers as 4 × 4).
 */
#include "piq-formats-private.h"

#ifdef PIQ_VEC_FMA

#define MM_V (16 / PIQ_W)
#if PIQ_W == 16
# define MM_MR 4
# define MM_NR 4
#else
# define MM_MR 2
# define MM_NR 2
#endif

/* 16 products of every output of the sub-tile. */
VINLINE void
mm_step (const float *x, size_t ldx, const float *w, size_t ldw, const int mr, const int nr,
         vf acc[MM_MR][MM_NR][MM_V])
{
  vf xv[MM_MR][MM_V];

  for (int i = 0; i < mr; i++)
    for (int v = 0; v < MM_V; v++)
      xv[i][v] = fload (x + i * ldx + v * PIQ_W);
  for (int j = 0; j < nr; j++)
    {
      vf wv[MM_V];
      for (int v = 0; v < MM_V; v++)
        wv[v] = fload (w + j * ldw + v * PIQ_W);
      for (int i = 0; i < mr; i++)
        for (int v = 0; v < MM_V; v++)
          acc[i][j][v] = PIQ_VEC_FMA (xv[i][v], wv[v], acc[i][j][v]);
    }
}

/* One sub-tile of constant size (inlined per size). The last n mod 16 products come
 * from zero-padded copies: the padding adds fma (0, 0, lane) = lane, exactly what the
 * scalar kernel's missing terms add (a lane that starts at +0 is never −0). */
VINLINE void
mm_block (const float *x, size_t ldx, const float *w, size_t ldw, size_t n, const int mr,
          const int nr, float *out, size_t ldo)
{
  vf acc[MM_MR][MM_NR][MM_V];
  size_t k = 0;

  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++)
      for (int v = 0; v < MM_V; v++)
        acc[i][j][v] = (vf) { 0 };
  for (; k + 16 <= n; k += 16)
    mm_step (x + k, ldx, w + k, ldw, mr, nr, acc);
  if (k < n)
    {
      float xt[MM_MR][16] = { { 0 } }, wt[MM_NR][16] = { { 0 } };
      for (int i = 0; i < mr; i++)
        memcpy (xt[i], x + i * ldx + k, (n - k) * sizeof (float));
      for (int j = 0; j < nr; j++)
        memcpy (wt[j], w + j * ldw + k, (n - k) * sizeof (float));
      mm_step (&xt[0][0], 16, &wt[0][0], 16, mr, nr, acc);
    }
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++)
      {
        float lanes[PIQ_SUM_LANES];
        memcpy (lanes, acc[i][j], sizeof lanes);
        out[i * ldo + j] = piq_mm_canonical (piq_sum_lanes (lanes));
      }
}

static void
mm_tile_f32 (const float *x, size_t ldx, const float *w, size_t ldw, size_t n, size_t mr,
             size_t nr, float *out, size_t ldo)
{
  size_t i = 0, j;

  for (; i + MM_MR <= mr; i += MM_MR)
    {
      for (j = 0; j + MM_NR <= nr; j += MM_NR)
        mm_block (x + i * ldx, ldx, w + j * ldw, ldw, n, MM_MR, MM_NR, out + i * ldo + j, ldo);
      for (; j < nr; j++)
        mm_block (x + i * ldx, ldx, w + j * ldw, ldw, n, MM_MR, 1, out + i * ldo + j, ldo);
    }
  for (; i < mr; i++)
    {
      for (j = 0; j + MM_NR <= nr; j += MM_NR)
        mm_block (x + i * ldx, ldx, w + j * ldw, ldw, n, 1, MM_NR, out + i * ldo + j, ldo);
      for (; j < nr; j++)
        mm_block (x + i * ldx, ldx, w + j * ldw, ldw, n, 1, 1, out + i * ldo + j, ldo);
    }
}

# define PIQ_MM_TILE_SLOT .mm_tile = mm_tile_f32,
#else
# define PIQ_MM_TILE_SLOT
#endif

/* The portable integer products: the generic vectors lower to the unit's widening
 * multiplies. */
typedef int8_t  mm_vsb16 __attribute__ ((vector_size (16)));
typedef int16_t mm_vw16  __attribute__ ((vector_size (32)));
typedef int32_t mm_vi16  __attribute__ ((vector_size (64)));

/* The product of one group over [k0, end) with unsigned or signed weight bytes,
 * sixteen at a time in 16-bit lanes (|u8 · s8| ≤ 32640 and |s8 · s8| ≤ 16384 fit). */
VINLINE int32_t
dot_range (const uint8_t *w, const int w_signed, const int8_t *x, size_t k0, size_t end)
{
  mm_vi16 acc = { 0 };
  int32_t s = 0;
  size_t k = k0;

  for (; k + 16 <= end; k += 16)
    {
      vb16 a;
      mm_vsb16 b;
      mm_vw16 wa;
      memcpy (&a, w + k, 16);
      memcpy (&b, x + k, 16);
      wa = w_signed ? __builtin_convertvector ((mm_vsb16) a, mm_vw16)
                    : __builtin_convertvector (a, mm_vw16);
      acc += __builtin_convertvector (wa * __builtin_convertvector (b, mm_vw16), mm_vi16);
    }
  for (int l = 0; l < 16; l++)
    s += acc[l];
  for (; k < end; k++)
    s += (w_signed ? (int32_t) (int8_t) w[k] : (int32_t) w[k]) * x[k];
  return s;
}

#if defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD)
/* acc + the sums of each four adjacent products of the unsigned bytes u and the signed
 * bytes s, per 32-bit lane, exact where every pair of products fits 16 bits (the
 * callers' sign trick or 4-bit weights): VPDPBUSD where the unit has VNNI, else
 * vpmaddubsw then vpmaddwd by ones. */
# ifdef PIQ_VEC_DPBUSD
#  define MM_DOT4(acc, u, s) PIQ_VEC_DPBUSD ((acc), (u), (s))
# else
#  define MM_DOT4(acc, u, s) ((acc) + (vi) PIQ_VEC_MADDWD (PIQ_VEC_MADDUBS ((u), (s)), (vw) ((vw) { 0 } + 1)))
# endif
#endif

#if defined(PIQ_VEC_DPBUSD) && defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD)
VINLINE int32_t hsum_vi (vi v);
VINLINE size_t chunk_groups (vi s, size_t group, int32_t *out);

/* VNNI takes unsigned × signed bytes without saturation: 4·PIQ_W products of
 * dot_groups_u8s8 per instruction (|Σ of four| ≤ 4 · 255 · 128 fits 32 bits). */
VINLINE vi
dot_u8s8_4w (vi acc, const uint8_t *w, const int8_t *x)
{
  vbw a, b;
  memcpy (&a, w, sizeof a);
  memcpy (&b, x, sizeof b);
  return PIQ_VEC_DPBUSD (acc, a, (vbw) b);
}
#endif

static void
dot_groups_u8s8 (const uint8_t *w, const int8_t *x, size_t n, size_t group, int32_t *out)
{
  size_t g = 0, k0 = 0;

#if defined(PIQ_VEC_DPBUSD) && defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD)
  const size_t cb = 4 * PIQ_W;
  if (cb % group == 0 && group % 4 == 0)
    for (; k0 + cb <= n; k0 += cb)
      g += chunk_groups (dot_u8s8_4w ((vi) { 0 }, w + k0, x + k0), group, out + g);
  else if (group >= cb)
    for (; k0 < n; g++, k0 += group)
      {
        size_t end = n - k0 > group ? k0 + group : n, k = k0;
        vi acc = { 0 };
        for (; k + cb <= end; k += cb)
          acc = dot_u8s8_4w (acc, w + k, x + k);
        out[g] = hsum_vi (acc) + (k < end ? dot_range (w, 0, x, k, end) : 0);
      }
#endif
  for (; k0 < n; g++, k0 += group)
    out[g] = dot_range (w, 0, x, k0, n - k0 > group ? k0 + group : n);
}

#if defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD)
/* 4·PIQ_W products as ggml takes them: |w| (unsigned) times x with w's sign, summed
 * by pairs into 16 bits (≤ 2 · 128 · 127 = 32512: no saturation, since x ≠ −128),
 * then by pairs into 32 bits: lane l holds bytes 4l … 4l + 3. */
typedef int8_t mm_vsbw __attribute__ ((vector_size (PIQ_W * 4)));

VINLINE vi
dot_i8_4w (vi acc, const int8_t *w, const int8_t *x)
{
  mm_vsbw a, b, m;
  memcpy (&a, w, sizeof a);
  memcpy (&b, x, sizeof b);
  m = a >> 7;
  return MM_DOT4 (acc, (vbw) ((a ^ m) - m), (vbw) ((b ^ m) - m));
}

VINLINE int32_t
hsum_vi (vi v)
{
  int32_t lanes[PIQ_W], s = 0;
  memcpy (lanes, &v, sizeof lanes);
  for (int l = 0; l < PIQ_W; l++)
    s += lanes[l];
  return s;
}

# if PIQ_W == 8 || PIQ_W == 16
/* The sums of each run of eight lanes (32 elements: a group of 32) of s, into
 * out[0 … PIQ_W / 8 − 1], by a tree of shuffles within each run: storing the lanes
 * and adding them one by one cost more than the products (perf). */
#  if PIQ_W == 8
#   define SUM8_S1(v) PIQ_SHUF1 (v, vi, 4, 5, 6, 7, 0, 1, 2, 3)
#   define SUM8_S2(v) PIQ_SHUF1 (v, vi, 2, 3, 0, 1, 6, 7, 4, 5)
#   define SUM8_S3(v) PIQ_SHUF1 (v, vi, 1, 0, 3, 2, 5, 4, 7, 6)
#  else
#   define SUM8_S1(v) PIQ_SHUF1 (v, vi, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11)
#   define SUM8_S2(v) PIQ_SHUF1 (v, vi, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13)
#   define SUM8_S3(v) PIQ_SHUF1 (v, vi, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14)
#  endif
#  define HAVE_SUM8 1
VINLINE void
sum8_lanes (vi s, int32_t *out)
{
  s += SUM8_S1 (s);
  s += SUM8_S2 (s);
  s += SUM8_S3 (s);
  for (int r = 0; r < PIQ_W / 8; r++)
    out[r] = s[8 * r];
}
# endif

/* The sums of the cb / group groups (group divides cb = 4·PIQ_W, a multiple of 4)
 * of one chunk's lanes (lane l: elements 4l … 4l + 3) into out; returns their count. */
VINLINE size_t
chunk_groups (vi s, size_t group, int32_t *out)
{
  int32_t lanes[PIQ_W];

# ifdef HAVE_SUM8
  if (group == 32)
    {
      sum8_lanes (s, out);
      return PIQ_W / 8;
    }
# endif
  memcpy (lanes, &s, sizeof lanes);
  for (size_t j = 0; j < 4 * PIQ_W / group; j++)
    {
      int32_t t = 0;
      for (size_t l = j * group / 4; l < (j + 1) * group / 4; l++)
        t += lanes[l];
      out[j] = t;
    }
  return 4 * PIQ_W / group;
}
#endif

static void
dot_groups_i8 (const int8_t *w, const int8_t *x, size_t n, size_t group, int32_t *out)
{
  size_t g = 0, k0 = 0;

#if defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD)
  const size_t cb = 4 * PIQ_W;
  if (group % cb == 0)
    for (; k0 + group <= n; g++, k0 += group)
      {
        vi acc = { 0 };
        for (size_t k = k0; k < k0 + group; k += cb)
          acc = dot_i8_4w (acc, w + k, x + k);
        out[g] = hsum_vi (acc);
      }
  else if (cb % group == 0 && group % 4 == 0)
    for (; k0 + cb <= n; k0 += cb)
      g += chunk_groups (dot_i8_4w ((vi) { 0 }, w + k0, x + k0), group, out + g);
#endif
  for (; k0 < n; g++, k0 += group)
    out[g] = dot_range ((const uint8_t *) (const void *) w, 1, x, k0,
                        n - k0 > group ? k0 + group : n);
}

/* 4-bit weights (0 … 15) packed two to a byte per 32-element block, ggml's Q4_0 layout
 * (byte i: element i low, element i + 16 high), against any int8 x. */
VINLINE void
unpack_q4_block (const uint8_t *w, uint8_t *out)
{
  vb16 b, lo, hi;
  memcpy (&b, w, 16);
  lo = b & 15;
  hi = b >> 4;
  memcpy (out, &lo, 16);
  memcpy (out + 16, &hi, 16);
}

#if defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD) && PIQ_W >= 8
/* Elements k … k + 4·PIQ_W − 1 (one or two whole blocks), unpacked in registers: the
 * blocks' bytes are loaded once, each duplicated into its two halves by one shuffle,
 * and the low half keeps the low nibbles, the high half the high ones. Lane l of the
 * result holds elements 4l … 4l + 3. */
/* __builtin_shufflevector (GCC ≥ 12, clang) makes the wide vector from the narrow
 * load; a narrow memcpy into a wide vector went through the stack and stalled on
 * store forwarding (perf). */
typedef uint8_t q4_half __attribute__ ((vector_size (2 * PIQ_W)));
# if PIQ_W == 8
#  define Q4_DUP(t) __builtin_shufflevector (t, t, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, \
                                             0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
# else
#  define Q4_DUP(t) __builtin_shufflevector (t, t, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, \
                                             0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, \
                                             16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, \
                                             16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31)
# endif

VINLINE vi
dot_q4_chunk (vi acc, const uint8_t *w, const int8_t *x, size_t k)
{
  q4_half t;
  vbw d, low, uw, xw;

  memcpy (&t, w + k / 2, sizeof t);
  d = (vbw) Q4_DUP (t);
  for (int i = 0; i < 4 * PIQ_W; i++)
    low[i] = i % 32 < 16 ? 0xff : 0;
  uw = ((d & 15) & low) | ((d >> 4) & ~low);
  memcpy (&xw, x + k, sizeof xw);
  return MM_DOT4 (acc, uw, xw);
}
#endif

static void
dot_groups_q4 (const uint8_t *w, const int8_t *x, size_t n, size_t group, int32_t *out)
{
  size_t g = 0, k0 = 0;

#if defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD) && PIQ_W >= 8
  /* 4·PIQ_W elements (one or two blocks) per multiply-add: |w · x| ≤ 15 · 128 */
  const size_t cb = 4 * PIQ_W;
  if (group % cb == 0)
    for (; k0 + group <= n; g++, k0 += group)
      {
        vi acc = { 0 };
        for (size_t k = k0; k < k0 + group; k += cb)
          acc = dot_q4_chunk (acc, w, x, k);
        out[g] = hsum_vi (acc);
      }
  else if (cb % group == 0 && group % 4 == 0)
    for (; k0 + cb <= n; k0 += cb)
      g += chunk_groups (dot_q4_chunk ((vi) { 0 }, w, x, k0), group, out + g);
#endif
  for (; k0 < n; g++, k0 += group)
    {
      int32_t s = 0;
      for (size_t k = k0; k < k0 + group && k < n; k += 32)
        {
          uint8_t u[32];
          unpack_q4_block (w + k / 2, u);
          for (size_t i = 0; i < 32 && k + i < n; i++)
            s += (int32_t) u[i] * x[k + i];
        }
      out[g] = s;
    }
}

#include "piq-int8-gemm-vec-body.h"

#define PIQ_MATMUL_SLOTS PIQ_MM_TILE_SLOT .dot_groups = dot_groups_u8s8, .dot_groups_i8 = dot_groups_i8, \
  .dot_groups_q4 = dot_groups_q4, PIQ_GEMM_U8S8_SLOT

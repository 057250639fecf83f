/* piq-binary-vec-body.h: the binary policy's XNOR popcounts, written once for every ISA unit
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h after piq-matmul-vec-body.h (the unit's PIQ_W and
 * VINLINE), where the unit may define
 *   PIQ_VEC_POPCNT64(v)    the set bits of each 64-bit lane of a PIQ_W · 4-byte vector
 *                          (AVX-512 VPOPCNTQ; NEON CNT and three pairwise widening adds)
 * Without it, a unit whose compiler has a popcount instruction (__POPCNT__) counts
 * word by word with it, and any other counts the vector's 64-bit lanes with the
 * portable bit-slice sequence. The counts are integers: every path gives the same
 * out[] (test-kernels checks each table against the scalar one).
 */

typedef uint64_t vq __attribute__ ((vector_size (PIQ_W * 4)));
#define XQ (PIQ_W / 2)   /* 64-bit lanes per vector */

#if defined(PIQ_VEC_POPCNT64) || !defined(__POPCNT__)
# define PIQ_XNOR_VECTOR 1
#endif

#ifdef PIQ_XNOR_VECTOR
VINLINE vq
xnor_popcnt (vq v)
{
#ifdef PIQ_VEC_POPCNT64
  return (vq) PIQ_VEC_POPCNT64 (v);
#else
  const vq m1 = (vq) { 0 } + 0x5555555555555555ull, m2 = (vq) { 0 } + 0x3333333333333333ull;
  const vq m4 = (vq) { 0 } + 0x0f0f0f0f0f0f0f0full;
  v = v - ((v >> 1) & m1);
  v = (v & m2) + ((v >> 2) & m2);
  v = (v + (v >> 4)) & m4;
  v += v >> 8;
  v += v >> 16;
  v += v >> 32;
  return v & 0x7f;
#endif
}

VINLINE uint64_t
xnor_hsum (vq v)
{
  uint64_t s = 0;
  for (int l = 0; l < XQ; l++)
    s += v[l];
  return s;
}
#endif

#ifdef PIQ_XNOR_VECTOR
/* The even and the odd 64-bit lanes of a, then b: the two words of each pair in order */
# if XQ == 8
#  define XNOR_EVEN_(a, b) PIQ_SHUF2 ((a), (b), vq, 0, 2, 4, 6, 8, 10, 12, 14)
#  define XNOR_ODD_(a, b)  PIQ_SHUF2 ((a), (b), vq, 1, 3, 5, 7, 9, 11, 13, 15)
# elif XQ == 4
#  define XNOR_EVEN_(a, b) PIQ_SHUF2 ((a), (b), vq, 0, 2, 4, 6)
#  define XNOR_ODD_(a, b)  PIQ_SHUF2 ((a), (b), vq, 1, 3, 5, 7)
# else
#  define XNOR_EVEN_(a, b) PIQ_SHUF2 ((a), (b), vq, 0, 2)
#  define XNOR_ODD_(a, b)  PIQ_SHUF2 ((a), (b), vq, 1, 3)
# endif

/* XQ blocks of @words words (a constant power of two ≤ XQ) at a time: the words'
 * popcounts, then adjacent lanes (a block's words) added by even/odd shuffles, halving
 * the vectors each round, so the XQ block counts end in one vector in block order and
 * leave by one store. Summed lane by lane through memory, the small blocks (binary's
 * default 128 elements: 2 words) cost more than their popcounts. Returns the blocks done. */
VINLINE size_t
xnor_small (const uint64_t *x, const uint64_t *w, size_t nb, const size_t words, uint64_t *out)
{
  size_t b = 0;

  for (; b + XQ <= nb; b += XQ)
    {
      vq c[XQ];
#pragma GCC unroll 8
      for (size_t v = 0; v < words; v++)
        {
          vq xv, wv;
          memcpy (&xv, x + b * words + v * XQ, sizeof xv);
          memcpy (&wv, w + b * words + v * XQ, sizeof wv);
          c[v] = xnor_popcnt (xv ^ wv);
        }
#pragma GCC unroll 8
      for (size_t n = words; n > 1; n /= 2)
#pragma GCC unroll 8
        for (size_t v = 0; v < n / 2; v++)
          c[v] = XNOR_EVEN_ (c[2 * v], c[2 * v + 1]) + XNOR_ODD_ (c[2 * v], c[2 * v + 1]);
      memcpy (out + b, &c[0], sizeof c[0]);
    }
  return b;
}
#endif

static void
xnor_counts_u64 (const uint64_t *x, const uint64_t *w, size_t nb, size_t words, uint64_t *out)
{
  size_t b = 0;

#ifdef PIQ_XNOR_VECTOR
  if (words == 1)
    b = xnor_small (x, w, nb, 1, out);
  else if (words == 2)
    b = xnor_small (x, w, nb, 2, out);
# if XQ >= 4
  else if (words == 4)
    b = xnor_small (x, w, nb, 4, out);
# endif
# if XQ >= 8
  else if (words == 8)
    b = xnor_small (x, w, nb, 8, out);
# endif
#else
  if (words == 2)
    {
      /* binary's default blocks (128 elements): both words at once, no inner loop */
      for (; b < nb; b++)
        {
          uint64_t x0, x1, w0, w1;
          memcpy (&x0, x + 2 * b, 8);
          memcpy (&x1, x + 2 * b + 1, 8);
          memcpy (&w0, w + 2 * b, 8);
          memcpy (&w1, w + 2 * b + 1, 8);
          out[b] = (uint64_t) __builtin_popcountll (x0 ^ w0) +
                   (uint64_t) __builtin_popcountll (x1 ^ w1);
        }
      return;
    }
#endif
  for (; b < nb; b++)
    {
      const uint64_t *xb = x + b * words, *wb = w + b * words;
      uint64_t s = 0;
      size_t i = 0;
#ifdef PIQ_XNOR_VECTOR
      vq acc = { 0 };
      for (; i + XQ <= words; i += XQ)
        {
          vq xv, wv;
          memcpy (&xv, xb + i, sizeof xv);
          memcpy (&wv, wb + i, sizeof wv);
          acc += xnor_popcnt (xv ^ wv);
        }
      s = xnor_hsum (acc);
#endif
      for (; i < words; i++)
        {
          uint64_t xi, wi;   /* unaligned words: memcpy, not a uint64_t load */
          memcpy (&xi, xb + i, sizeof xi);
          memcpy (&wi, wb + i, sizeof wi);
          s += (uint64_t) __builtin_popcountll (xi ^ wi);
        }
      out[b] = s;
    }
}

/* ---- the binary GEMM's micro-kernel (xnor_gemm) ----
 * One panel of 8 weight rows, interleaved word by word, against XG_MR rows of x at a
 * time: each word of x (a scalar, broadcast) meets the panel's 8 words (8 / XQ vectors)
 * in one XOR and one popcount per vector, so the 8 outputs' block counts end in vector
 * lanes, and the block's binary64 terms ((sx · sw) · c, the definition's order, no
 * contraction in this unit) are taken 8 outputs at a time. Row by row with
 * xnor_counts, every block cost a call's share, a scalar chain of binary64 terms and a
 * reduction of its words (5 % of the XNOR loop's peak on Sapphire Rapids, with 128-bit
 * blocks: the terms, not the popcounts, are most of the work). */
typedef double vqd __attribute__ ((vector_size (PIQ_W * 4)));   /* XQ binary64 */
typedef float  vqf __attribute__ ((vector_size (PIQ_W * 2)));   /* XQ binary32 */
#define XG_V (8 / XQ)                                            /* vectors per panel row set */
#if XQ == 8
# define XG_MR 8     /* 8 zmm of sums + 8 of counts + the panel's words and scales */
#else
# define XG_MR 4     /* 4 · 2 ymm of sums (AVX2); 4 · 4 q registers (NEON) */
#endif

/* c (|c| < 2^51, two's complement in the 64-bit lanes) as binary64, exactly: the bits
 * of 1.5 · 2^52 + c, less 1.5 · 2^52 (no 64-bit integer conversion below AVX-512 DQ) */
VINLINE vqd
xg_to_double (vq c)
{
  vqd d;
  vq b = c + 0x4338000000000000ull;

  memcpy (&d, &b, sizeof d);
  return d - 0x1.8p52;
}

/* The counts of one row's block (@words words at xb) against the panel's words at wb,
 * into XG_V vectors of 8 lanes in all. */
VINLINE void
xg_counts (const uint64_t *xb, const uint64_t *wb, const size_t words, vq cnt[XG_V])
{
#ifdef PIQ_XNOR_VECTOR
#pragma GCC unroll 4
  for (int v = 0; v < XG_V; v++)
    cnt[v] = (vq) { 0 };
#pragma GCC unroll 4
  for (size_t t = 0; t < words; t++)
    {
      uint64_t xw;
      memcpy (&xw, xb + t, sizeof xw);
#pragma GCC unroll 4
      for (int v = 0; v < XG_V; v++)
        {
          vq wv;
          memcpy (&wv, wb + t * 8 + v * XQ, sizeof wv);
          cnt[v] += xnor_popcnt (wv ^ xw);
        }
    }
#else
  /* a scalar popcount and no vector one: the 8 counts in general registers, moved to
   * the vectors once per block (lane by lane per word, the moves cost more than the
   * counts) */
  uint64_t c[8] = { 0 };
#pragma GCC unroll 4
  for (size_t t = 0; t < words; t++)
    {
      uint64_t xw;
      memcpy (&xw, xb + t, sizeof xw);
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++)
        {
          uint64_t wv;
          memcpy (&wv, wb + t * 8 + r, sizeof wv);
          c[r] += (uint64_t) __builtin_popcountll (xw ^ wv);
        }
    }
#pragma GCC unroll 4
  for (int v = 0; v < XG_V; v++)
    {
      vq t = { 0 };
#pragma GCC unroll 8
      for (int l = 0; l < XQ; l++)
        t[l] = c[v * XQ + l];
      cnt[v] = t;
    }
#endif
}

/* mr (a constant ≤ XG_MR) rows of x; words: the block's words (a constant when > 0). */
VINLINE void
xg_tile (const uint64_t *x, size_t ldx, const float *xs, size_t ldxs, const int mr,
         const uint64_t *wp, const float *ws, size_t nb, const size_t words, size_t B,
         size_t k, double *out)
{
  vqd acc[XG_MR][XG_V];

#pragma GCC unroll 8
  for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
    for (int v = 0; v < XG_V; v++)
      acc[i][v] = (vqd) { 0 };
  for (size_t b = 0; b < nb; b++)
    {
      const vq len = (vq) { 0 } + (uint64_t) (B < k - b * B ? B : k - b * B);
      const uint64_t *wb = wp + b * words * 8;
      vqd sw[XG_V];

#pragma GCC unroll 4
      for (int v = 0; v < XG_V; v++)
        {
          vqf f;
          memcpy (&f, ws + b * 8 + v * XQ, sizeof f);
          sw[v] = __builtin_convertvector (f, vqd);
        }
#pragma GCC unroll 8
      for (int i = 0; i < mr; i++)
        {
          vq cnt[XG_V];
          double sx = (double) xs[i * ldxs + b];

          xg_counts (x + i * ldx + b * words, wb, words, cnt);
#pragma GCC unroll 4
          for (int v = 0; v < XG_V; v++)
            acc[i][v] = acc[i][v] + (sx * sw[v]) * xg_to_double (len - (cnt[v] << 1));
        }
    }
#pragma GCC unroll 8
  for (int i = 0; i < mr; i++)
    memcpy (out + i * 8, acc[i], sizeof acc[i]);
}

static void
xnor_gemm_u64 (const uint64_t *x, size_t ldx, const float *xs, size_t ldxs, size_t m,
               const uint64_t *wp, const float *ws, size_t nb, size_t words, size_t B,
               size_t k, double *out)
{
  size_t i = 0;

  /* binary's default blocks (128 elements) are 2 words, per-channel rows many */
#define XG_ROWS_(r) \
  for (; m - i >= (r); i += (r)) \
    { \
      if (words == 2) \
        xg_tile (x + i * ldx, ldx, xs + i * ldxs, ldxs, (r), wp, ws, nb, 2, B, k, out + i * 8); \
      else \
        xg_tile (x + i * ldx, ldx, xs + i * ldxs, ldxs, (r), wp, ws, nb, words, B, k, \
                 out + i * 8); \
    }
  XG_ROWS_ (XG_MR)
  XG_ROWS_ (1)
#undef XG_ROWS_
}

#undef XG_V
#undef XG_MR
#undef XQ
#undef XNOR_EVEN_
#undef XNOR_ODD_
#define PIQ_BINARY_SLOTS .xnor_counts = xnor_counts_u64, .xnor_gemm = xnor_gemm_u64,

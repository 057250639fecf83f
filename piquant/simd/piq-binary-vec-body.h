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

#undef XQ
#undef XNOR_EVEN_
#undef XNOR_ODD_
#define PIQ_BINARY_SLOTS .xnor_counts = xnor_counts_u64,

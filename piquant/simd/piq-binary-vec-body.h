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

static void
xnor_counts_u64 (const uint64_t *x, const uint64_t *w, size_t nb, size_t words, uint64_t *out)
{
  size_t b = 0;

#ifdef PIQ_XNOR_VECTOR
  if (words < XQ && XQ % words == 0)
    {
      /* small blocks (binary's default 128 elements: 2 words): XQ / words per vector */
      const size_t per = XQ / words;
      for (; b + per <= nb; b += per)
        {
          vq xv, wv, c;
          memcpy (&xv, x + b * words, sizeof xv);
          memcpy (&wv, w + b * words, sizeof wv);
          c = xnor_popcnt (xv ^ wv);
          for (size_t j = 0; j < per; j++)
            {
              uint64_t s = 0;
              for (size_t l = 0; l < words; l++)
                s += c[j * words + l];
              out[b + j] = s;
            }
        }
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
#define PIQ_BINARY_SLOTS .xnor_counts = xnor_counts_u64,

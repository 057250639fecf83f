/* piq-int8-gemm-vec-body.h: the int8 GEMM's register-blocked micro-kernel, written
 * once for every ISA unit
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-matmul-vec-body.h. The contract is PiqGemmU8S8Fn's
 * (piq-kernels-private.h): B is packed in panels of 16 columns, each panel one run
 * of 64-byte quads (column j's bytes k = 4q … 4q + 3 at quad q, bytes 4j … 4j + 3),
 * so one vector load of a quad feeds PIQ_W columns and four consecutive k of a row
 * of A are one 32-bit broadcast: acc[i][j] += Σ_t a[i][4q + t] · b[j][4q + t] is one
 * VPDPBUSD per vector (or, without VNNI, vpmaddubsw/vpmaddwd on A split into its
 * low seven bits and its top bit, so no pair of products saturates 16 bits:
 * 2 · 127 · 128 and 2 · 128 · 128 fit; on NEON, PIQ_VEC_DOT4_U8S8's widening
 * multiplies). Integer sums are exact, so every table gives
 * the scalar kernel's bytes.
 *
 * Tile: G8_MR rows × G8_NP panels of accumulators held in registers across the whole
 * k range — 8 × 32 on AVX-512 (16 zmm accumulators, 2 loads of B and 8 broadcasts
 * of A per 16 multiply-adds), 4 × 16 on AVX2 (8 ymm), 2 × 16 on 128-bit units.
 */

#if defined(PIQ_VEC_DPBUSD) || defined(PIQ_VEC_DOT4_U8S8) || \
    (defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD))

# if PIQ_W == 16
#  define G8_MR 8
#  define G8_NP 2
# elif PIQ_W == 8
#  define G8_MR 4
#  define G8_NP 1
# else
#  define G8_MR 2
#  define G8_NP 1
# endif
/* vectors per 64-byte quad of a panel */
# define G8_V (16 / PIQ_W)
# define G8_T (G8_NP * G8_V)
# define G8_PRAGMA_(x) _Pragma (#x)
# define G8_UNROLL G8_PRAGMA_ (GCC unroll 16)

VINLINE vi
g8_dot (vi acc, vbw u, vbw s)
{
# ifdef PIQ_VEC_DPBUSD
  return PIQ_VEC_DPBUSD (acc, u, s);
# elif defined(PIQ_VEC_DOT4_U8S8)
  return PIQ_VEC_DOT4_U8S8 (acc, u, s);
# else
  const vw one = (vw) { 0 } + 1;
  vbw lo = u & 0x7f, hi = u & 0x80;
  return acc + (vi) PIQ_VEC_MADDWD (PIQ_VEC_MADDUBS (lo, s), one) +
         (vi) PIQ_VEC_MADDWD (PIQ_VEC_MADDUBS (hi, s), one);
# endif
}

/* The panel walk shared by this micro-kernel and gemm_groups (piq-matmul-vec-body.h),
 * which read the same layout: 64-byte quads of 16 channels, panels ld bytes apart,
 * against four bytes of each row of the other operand (one 32-bit broadcast).
 * PQ_LOAD fills pv[t], t < np · G8_V, with part t % G8_V of panel t / G8_V's quad at
 * p. PQ_STEP then runs acc[i][t] = DOT (acc[i][t], BCAST (r + i · ldr), pv[t]) for
 * i < mr. BCAST and DOT are the caller's: here A, unsigned, is the 32-bit broadcast
 * (pq_bcast) and B, signed, the panel; gemm_groups broadcasts signed X codes against
 * unsigned W codes, and for 4-bit codes takes a pair of each (low nibbles with x at
 * 4q, high nibbles with x at 4q + 4), one accumulator's two products back to back:
 * two passes over the tile cost Q4_0 and int4 g128 25–40 % on AVX-512 VNNI, where
 * the 4 × 2 tile's int32 sums live in memory (GCC keeps the 16 binary64 ones in
 * registers). Macros over the callers' own accumulator arrays,
 * fully unrolled by literal pragmas, so the accumulators stay in registers where
 * they fit (without the pragmas GCC kept them in memory: 5× slower); each caller
 * keeps its own tile constants. */
# define PQ_LOAD(pv, p, ld, np) \
  G8_UNROLL \
  for (int t_ = 0; t_ < (np) * G8_V; t_++) \
    memcpy (&(pv)[t_], (p) + t_ / G8_V * (ld) + t_ % G8_V * PIQ_W * 4, sizeof (vbw))
# define PQ_STEP(acc, mr, np, pv, r, ldr, BCAST, DOT) \
  G8_UNROLL \
  for (int i_ = 0; i_ < (mr); i_++) \
    { \
      __auto_type rv_ = BCAST ((r) + i_ * (ldr)); \
      G8_UNROLL \
      for (int t_ = 0; t_ < (np) * G8_V; t_++) \
        (acc)[i_][t_] = DOT ((acc)[i_][t_], rv_, (pv)[t_]); \
    }

/* four bytes at p in every 32-bit lane */
VINLINE vbw
pq_bcast (const void *p)
{
  int32_t r4;
  memcpy (&r4, p, 4);
  return (vbw) ((vi) { 0 } + r4);
}

/* One tile of mr rows and np panels (constants once inlined); nc ≤ 16·np columns
 * are stored. */
VINLINE void
g8_block (const uint8_t *a, size_t lda, const int mr, const int8_t *b, size_t ldbp, const int np,
          size_t kq, int32_t *c, size_t ldc, size_t nc, int add)
{
  vi acc[G8_MR][G8_T];

  /* the loops over the tile are unrolled whole, so the accumulators stay in
   * registers (without the pragmas GCC kept them in memory: 5× slower) */
  G8_UNROLL
  for (int i = 0; i < mr; i++)
    G8_UNROLL
    for (int t = 0; t < np * G8_V; t++)
      acc[i][t] = (vi) { 0 };
  for (size_t q = 0; q < kq; q++)
    {
      vbw bv[G8_T];
      PQ_LOAD (bv, b + q * 64, ldbp, np);
      PQ_STEP (acc, mr, np, bv, a + 4 * q, lda, pq_bcast, g8_dot);
    }
  G8_UNROLL
  for (int i = 0; i < mr; i++)
    {
      int32_t *row = c + i * ldc;
      if (nc == (size_t) np * 16)
        G8_UNROLL
        for (int t = 0; t < np * G8_V; t++)
          {
            vi v = acc[i][t];
            if (add)
              {
                vi old;
                memcpy (&old, row + t * PIQ_W, sizeof old);
                v += old;
              }
            memcpy (row + t * PIQ_W, &v, sizeof v);
          }
      else
        {
          int32_t lanes[G8_T * PIQ_W];
          memcpy (lanes, acc[i], sizeof lanes);
          for (size_t j = 0; j < nc; j++)
            row[j] = add ? row[j] + lanes[j] : lanes[j];
        }
    }
}

/* The rows of one column tile, G8_MR at a time, then the last mr < G8_MR as one
 * tile of that many rows (a constant per case, so each keeps its registers). */
VINLINE void
g8_rows (const uint8_t *a, size_t lda, size_t m, const int8_t *b, size_t ldbp, const int np,
         size_t kq, int32_t *c, size_t ldc, size_t nc, int add)
{
  size_t i = 0;

  for (; i + G8_MR <= m; i += G8_MR)
    g8_block (a + i * lda, lda, G8_MR, b, ldbp, np, kq, c + i * ldc, ldc, nc, add);
  switch (m - i)
    {
# if G8_MR > 4
    case 7: g8_block (a + i * lda, lda, 7, b, ldbp, np, kq, c + i * ldc, ldc, nc, add); break;
    case 6: g8_block (a + i * lda, lda, 6, b, ldbp, np, kq, c + i * ldc, ldc, nc, add); break;
    case 5: g8_block (a + i * lda, lda, 5, b, ldbp, np, kq, c + i * ldc, ldc, nc, add); break;
    case 4: g8_block (a + i * lda, lda, 4, b, ldbp, np, kq, c + i * ldc, ldc, nc, add); break;
# endif
# if G8_MR > 2
    case 3: g8_block (a + i * lda, lda, 3, b, ldbp, np, kq, c + i * ldc, ldc, nc, add); break;
    case 2: g8_block (a + i * lda, lda, 2, b, ldbp, np, kq, c + i * ldc, ldc, nc, add); break;
# endif
    case 1: g8_block (a + i * lda, lda, 1, b, ldbp, np, kq, c + i * ldc, ldc, nc, add); break;
    default: break;
    }
}

static void
gemm_u8s8_packed (const uint8_t *a, size_t lda, size_t m, const int8_t *b, size_t ldbp,
                  size_t n, size_t kq, int32_t *c, size_t ldc, int add)
{
  for (size_t j = 0; j < n; j += 16 * G8_NP)
    {
      size_t nc = n - j < 16 * G8_NP ? n - j : 16 * G8_NP;
      const int8_t *bj = b + j / 16 * ldbp;
# if G8_NP == 2
      if (nc <= 16)
        g8_rows (a, lda, m, bj, ldbp, 1, kq, c + j, ldc, nc, add);
      else
# endif
        g8_rows (a, lda, m, bj, ldbp, G8_NP, kq, c + j, ldc, nc, add);
    }
}

# define PIQ_GEMM_U8S8_SLOT .gemm_u8s8 = gemm_u8s8_packed,
#else
# define PIQ_GEMM_U8S8_SLOT
#endif

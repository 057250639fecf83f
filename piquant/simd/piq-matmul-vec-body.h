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

/* piq_sum_lanes of one output's 16 lanes (MM_V vectors), in registers: the same adds,
 * lane k + lane k + h for h = 8, 4, 2, 1, done on whole vectors (the lanes at and above
 * h then hold sums nobody reads). Stored and summed one float at a time, the tree cost
 * a GEMM with whole-k tiles a tenth of its time. */
VINLINE float
mm_sum16 (const vf acc[MM_V])
{
  vf v;

#if MM_V == 4
  v = (acc[0] + acc[2]) + (acc[1] + acc[3]);    /* h = 8 in two halves, then h = 4 */
#elif MM_V == 2
  v = acc[0] + acc[1];                          /* h = 8 */
#else
  v = acc[0];
#endif
  if (PIQ_W == 16) v = v + PIQ_SHUF1 (v, vi, FSWAP_ (8 & (PIQ_W - 1)));
  if (PIQ_W >= 8)  v = v + PIQ_SHUF1 (v, vi, FSWAP_ (4 & (PIQ_W - 1)));
  v = v + PIQ_SHUF1 (v, vi, FSWAP_ (2));
  v = v + PIQ_SHUF1 (v, vi, FSWAP_ (1));
  return piq_mm_canonical (v[0]);
}

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
      out[i * ldo + j] = mm_sum16 (acc[i][j]);
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

/* ---- the GEMM's micro-kernel (mm_lanes): both operands packed by residue ----
 * PiqMmLanesFn's contract (piq-kernels-private.h). A pass over residue l is a plain
 * outer-product GEMM: each accumulator holds lane l of PIQ_W adjacent rows of X for
 * one row of W, each step loads FP_NV vectors of X and broadcasts one element of each
 * of FP_NR rows of W, for FP_NR · FP_NV multiply-adds. The earlier form (a vector of
 * 16 k per output, one accumulator per output) loaded a whole vector per few products
 * and streamed X from L2: 48–52 % of the FMA loop on Zen 3. Tiles: 8 rows of W × 48 of X on
 * 32 zmm (24 accumulators, 3 X, a broadcast); 6 × 16 on 16 ymm (12 + 2 + 1) and on 32 q
 * registers (24 + 4 + 1). The residues are the outer loop: residue l's block of X
 * (kq · mr floats, 24 KiB for the engine's blocks) stays in L1 while the tiles of W go
 * by, each reading its micro-panel(s) front to back. Until session 34 W came as rows
 * and a tile broadcast from 8 rows, a line each per step, the rows kept in L1 through
 * the 16 residues only for blocks of 512: on 16 threads of the 16-core host, 65–71 %
 * of the FMA loop against 91–95 % for this order and layout with blocks of 2,048 (a
 * harness over one work item per thread, docs/performance.md). A residue's lanes are
 * stored after its pass and the 16 summed at the end, PIQ_W outputs at a time. */
#if PIQ_W == 16
# define FP_NR 8
# define FP_NG 3
#else
# define FP_NR 6
# define FP_NG 1
#endif
_Static_assert (PIQ_MM_NC % FP_NR == 0 && PIQ_MM_NC % 8 == 0,
                "W's rows are whole register tiles and whole micro-panels");

/* x in every lane, in the float domain: vsplat's integer broadcast from memory
 * (vpbroadcastd) measured slower here than vbroadcastss */
VINLINE vf
fsplat (float x)
{
  vf v;

  for (int c = 0; c < PIQ_W; c++)
    v[c] = x;
  return v;
}

/* One register tile, ng groups of 16 rows of X (a constant): x at row i0 of residue
 * l's first step (steps mr apart), w at residue l's micro-panel of the tile's first row
 * j0 (wld floats to the next), lanes at lane l of output (i0, j0) (rows of W 16 · mr
 * apart). Row j0 + r of the tile is element (j0 mod 8 + r) of a micro-panel's steps:
 * the next micro-panel's from 8 on (6-row tiles straddle two; 8-row tiles start on a
 * micro-panel, j0 mod 8 is then 0 and every offset a constant). */
VINLINE void
fp_tile (const float *x, size_t mr, const float *w, size_t wld, size_t j0, size_t kq,
         const int ng, float *lanes, int first)
{
  const int nv = ng * MM_V;
  const size_t c0 = FP_NR % 8 == 0 ? 0 : j0 % 8;
  size_t off[FP_NR];
  vf acc[FP_NR][FP_NG * MM_V];

#pragma GCC unroll 8
  for (int j = 0; j < FP_NR; j++)
    off[j] = (c0 + j) / 8 * wld + (c0 + j) % 8;
#pragma GCC unroll 8
  for (int j = 0; j < FP_NR; j++)
#pragma GCC unroll 12
    for (int v = 0; v < nv; v++)
      acc[j][v] = first ? (vf) { 0 } : fload (lanes + j * 16 * mr + v * PIQ_W);
  for (size_t q = 0; q < kq; q++)
    {
      vf xv[FP_NG * MM_V];

#pragma GCC unroll 12
      for (int v = 0; v < nv; v++)
        xv[v] = fload (x + q * mr + v * PIQ_W);
#pragma GCC unroll 8
      for (int j = 0; j < FP_NR; j++)
        {
          vf wb = fsplat (w[off[j] + 8 * q]);
#pragma GCC unroll 12
          for (int v = 0; v < nv; v++)
            acc[j][v] = PIQ_VEC_FMA (xv[v], wb, acc[j][v]);
        }
    }
#pragma GCC unroll 8
  for (int j = 0; j < FP_NR; j++)
#pragma GCC unroll 12
    for (int v = 0; v < nv; v++)
      memcpy (lanes + j * 16 * mr + v * PIQ_W, &acc[j][v], sizeof (vf));
}

static void
mm_lanes_f32 (const float *xp, size_t mr, const float *wp, size_t kq, float *lanes, int first,
              float *out, size_t ldo)
{
  const size_t wld = PIQ_MM_WLD (kq);

  for (size_t l = 0; l < 16; l++)
    for (size_t j = 0; j < PIQ_MM_NC; j += FP_NR)
      for (size_t i = 0; i < mr; i += 16 * FP_NG)
        {
          const float *x = xp + l * kq * mr + i;
          const float *wj = wp + (l * PIQ_MM_NC / 8 + j / 8) * wld;
          float *li = lanes + (j * 16 + l) * mr + i;
          switch ((mr - i) / 16 < FP_NG ? (mr - i) / 16 : FP_NG)
            {
            case 1: fp_tile (x, mr, wj, wld, j, kq, 1, li, first); break;
#if FP_NG > 1
            case 2: fp_tile (x, mr, wj, wld, j, kq, 2, li, first); break;
            case 3: fp_tile (x, mr, wj, wld, j, kq, 3, li, first); break;
#endif
            }
        }
  if (out == NULL)
    return;
  /* piq_sum_lanes across PIQ_W rows of X at once: lane r + lane r + h, h = 8, 4, 2, 1 */
  for (size_t j = 0; j < PIQ_MM_NC; j++)
    for (size_t i = 0; i < mr; i += PIQ_W)
      {
        vf t[16];
        float s[PIQ_W];

        for (int r = 0; r < 16; r++)
          t[r] = fload (lanes + (j * 16 + r) * mr + i);
        for (int h = 8; h > 0; h /= 2)
          for (int r = 0; r < h; r++)
            t[r] = t[r] + t[r + h];
        memcpy (s, &t[0], sizeof s);
        for (int c = 0; c < PIQ_W; c++)
          out[(i + c) * ldo + j] = piq_mm_canonical (s[c]);
      }
}

/* ---- the fused GEMV (mm_decode_dot): the weights decoded in registers ----
 * Each 16-element chunk of a weight row is decoded into MM_V vectors by the same
 * operations as the block dequantize bodies (fload_codes, fdecode; ggml's (c − 8) · d
 * and c · d), then multiplied into the 16-lane accumulators exactly as mm_step does:
 * the scalar reference's bytes, with nothing written to memory but Y. */

/* What the body takes: ggml Q4_0 and Q8_0, 4- and 8-bit integers, the 4-bit table
 * formats, FP8 and binary, whose blocks hold whole 16-element chunks (or one block a
 * row). */
VINLINE int
dd_takes (const PiqBlockArgs *a, size_t n)
{
  if (a->bits == 0)
    return a->code == PIQ_C_Q4_0 || a->code == PIQ_C_Q8_0;
  if (!(a->fixed || a->block % 16 == 0 || a->block >= n))
    return 0;
  if (a->code < 0)
    return a->bits == 4 || a->bits == 8;
  switch (a->code)
    {
    case PIQ_C_NF4: case PIQ_C_FP4_BNB: case PIQ_C_FP4_E2M1:
    case PIQ_C_FP8_E4M3: case PIQ_C_FP8_E5M2: case PIQ_C_BINARY:
      return 1;
    default:
      return 0;
    }
}

/* fdecode subtracts integer zero points in int32 lanes: one near ±2^31 would wrap, so
 * weights with such a zero point take the scalar reference (its difference is exact). */
VINLINE int
dd_big_zp (const PiqMmWeights *w, size_t n, size_t nr)
{
  const PiqBlockArgs *a = w->a;
  size_t per_row;

  if (a->code >= 0 || a->bits == 0)
    return 0;
  if (a->fixed)
    return a->zero_point > (1 << 30) || a->zero_point < -(1 << 30);
  if (w->zero_points == NULL)
    return 0;
  per_row = a->block >= n ? 1 : (n + a->block - 1) / a->block;
  for (size_t j = 0; j < nr; j++)
    for (size_t b = 0; b < per_row; b++)
      {
        int32_t z = piq_ld_i32 (w->zero_points, j * w->blocks_per_row + b);
        if (z > (1 << 30) || z < -(1 << 30))
          return 1;
      }
  return 0;
}

/* the binary32 values of the 4-bit codes that decode through a table */
static const float dd_fp4_e2m1[16] = {
  0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f,
};

/* Lane l of the 16 (vector l / PIQ_W) = bit l of the two bytes at c (element 0 in bit 0
 * of c[0]) ? pos : neg: binary's decode (bit 1 is +scale, bit 0 −scale). AVX-512 takes
 * the bytes as a mask register and blends once per 16 weights (tested lane by lane,
 * the decode took four instructions; GCC 12 still moves the mask through a general
 * register, docs/performance.md); AVX2 shifts bit l into lane l's sign for vblendvps;
 * other units test each lane's bit. */
VINLINE void
dd_signs16 (const uint8_t *c, vf pos, vf neg, vf wv[MM_V])
{
  uint16_t m;
  memcpy (&m, c, 2);   /* c is odd when a row's codes are an odd number of bytes */
#if PIQ_W == 16 && defined __AVX512F__
  wv[0] = (vf) _mm512_mask_blend_ps ((__mmask16) m, (__m512) neg, (__m512) pos);
#else
# if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  m = __builtin_bswap16 (m);
# endif
  const vu bits = (vu) { 0 } + m;
# pragma GCC unroll 4
  for (int v = 0; v < MM_V; v++)
    {
# if PIQ_W == 8 && defined __AVX2__
      vu sh = bits << ((vu) { 0 } + (uint32_t) (31 - v * PIQ_W) - viota (0));
      wv[v] = (vf) _mm256_blendv_ps ((__m256) neg, (__m256) pos, (__m256) sh);
# else
      vu on = bits & ((vu) { 0 } + 1u) << viota ((uint32_t) (v * PIQ_W));
      wv[v] = vsel ((vi) (on != 0u), pos, neg);
# endif
    }
#endif
}

/* Elements k … k + 15 (k a multiple of 16, inside one block) of a row of codes. */
VINLINE void
dd_decode16 (const uint8_t *row, size_t k, const PiqBlockP *p, float d, const int code,
             const int bits, const int hf, const int sg, vf wv[MM_V])
{
  if (bits == 1)
    {
      /* ±scale exactly as decoding gives it (the scale as loaded, NaN or not) */
      dd_signs16 (row + k / 8, vsplat (p->scale), vsplat (-p->scale), wv);
      return;
    }
  if (bits == 0)
    {
      const uint8_t *blk = row + k / 32 * (code == PIQ_C_Q8_0 ? 34 : 18) + 2;
      const int half = (int) (k / 16) & 1;
#pragma GCC unroll 4
      for (int v = 0; v < MM_V; v++)
        {
          vi c;
          if (code == PIQ_C_Q8_0)
            c = PIQ_VEC_S8_TO_I32 (bytes16 (blk + 16 * half + v * PIQ_W, PIQ_W));
          else
            {
              vb16 b = bytes16 (blk + v * PIQ_W, PIQ_W);
              b = half ? b >> 4 : b & 15;
              c = PIQ_VEC_U8_TO_I32 (b) - 8;
            }
          wv[v] = __builtin_convertvector (c, vf) * vsplat (d);
        }
      return;
    }
#pragma GCC unroll 4
  for (int v = 0; v < MM_V; v++)
    {
      vi c = fload_codes (row + (k + (size_t) v * PIQ_W) * bits / 8, bits, sg, hf);
      const float *t = code == PIQ_C_NF4 ? piq_nf4_values : code == PIQ_C_FP4_BNB
                       ? piq_fp4_bnb_values : dd_fp4_e2m1;
      if (code == PIQ_C_NF4 || code == PIQ_C_FP4_BNB || (code == PIQ_C_FP4_E2M1 && PIQ_W >= 8))
        wv[v] = p->nan_scale ? vsplat (NAN) : flut16 (t, c) * vsplat (p->scale);
      else
        wv[v] = fdecode (p, c, code);
    }
}

/* A ggml block's f16 scale as binary32: F16C's conversion where the unit has it (the
 * same value; a NaN may differ in its quiet bit, and every output it reaches is
 * stored as the default NaN), else piq_f16_to_f32. */
VINLINE float
dd_f16 (const uint8_t *p)
{
  uint16_t h;
  memcpy (&h, p, 2);
#ifdef __F16C__
  return _cvtsh_ss (h);
#else
  return piq_f16_to_f32 (h);
#endif
}

/* Bytes ahead of each row of codes to prefetch: the rows of a panel are separate
 * streams, and the loads of the codes stalled the loop (perf). On AVX-512 the 16-core
 * host ran the 4-bit float GEMVs best at 512 (session 34, docs/performance.md: 0, 256,
 * 512, 1,024, 2,048 and 4,096 side by side; 2,048 and up were slower than 1,024, 0 the
 * slowest); 1,024 elsewhere, where the kernels are compute-bound (Zen 3). */
#ifndef DD_PREFETCH
# if PIQ_W == 16
#  define DD_PREFETCH 512
# else
#  define DD_PREFETCH 1024
# endif
#endif

/* Elements ahead of the current block whose scales dd_row4 prefetches: the codes'
 * distance (DD_PREFETCH bytes of 4-bit codes) */
#ifndef DD_SCALE_AHEAD
# define DD_SCALE_AHEAD (2 * DD_PREFETCH)
#endif

/* Weight rows a dd_block may take: 8 for binary's GEMV on AVX-512 (four one-vector
 * accumulators leave the FMAs waiting on their latency), else 4. */
#define DD_NR_MAX 8

/* acc[i][j] += x[i] (16 elements at x + i·ldx) · wv[j], lane for lane */
#define DD_FMA_(mr, nr, x, ldx, wv, acc) \
  do { \
    vf xv_[4][MM_V]; \
    _Pragma ("GCC unroll 4") \
    for (int i_ = 0; i_ < (mr); i_++) \
      _Pragma ("GCC unroll 4") \
      for (int v_ = 0; v_ < MM_V; v_++) \
        xv_[i_][v_] = fload ((x) + i_ * (ldx) + v_ * PIQ_W); \
    _Pragma ("GCC unroll 8") \
    for (int j_ = 0; j_ < (nr); j_++) \
      _Pragma ("GCC unroll 4") \
      for (int i_ = 0; i_ < (mr); i_++) \
        _Pragma ("GCC unroll 4") \
        for (int v_ = 0; v_ < MM_V; v_++) \
          acc[i_][j_][v_] = PIQ_VEC_FMA (xv_[i_][v_], wv[j_][v_], acc[i_][j_][v_]); \
  } while (0)

/* One sub-tile of mr × nr outputs (constants), over the whole row: the block's
 * parameters once per block, then 16 elements at a time (ggml: a block's two halves
 * from one load of its codes); the row's last n mod 16 come from zero-padded copies
 * of x and the codes, with the weights past the end zeroed, so they add
 * fma (0, 0, lane) = lane as in mm_block. */
VINLINE void
dd_block (const PiqMmWeights *w, const float *x, size_t ldx, size_t n, const int mr,
          const int nr, size_t j0, float *out, size_t ldo, const int code, const int bits,
          const int hf, const int sg)
{
  const PiqBlockArgs *a = w->a;
  const size_t bs = bits == 0 ? 32 : a->fixed ? n : a->block;
  const size_t bb = code == PIQ_C_Q8_0 ? 34 : 18;
  vf acc[4][DD_NR_MAX][MM_V];
  const uint8_t *row[DD_NR_MAX];
  PiqBlockP p[DD_NR_MAX];
  float d[DD_NR_MAX] = { 0 };
  size_t k0 = 0;

#pragma GCC unroll 8
  for (int j = 0; j < nr; j++)
    {
      row[j] = w->codes + (j0 + (size_t) j) * w->code_stride;
#pragma GCC unroll 4
      for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < MM_V; v++)
          acc[i][j][v] = (vf) { 0 };
    }
  if (bits == 0)
    for (; k0 + 32 <= n; k0 += 32)
      {
        vf wv[DD_NR_MAX][MM_V];
        const float *xk = x + k0;
#pragma GCC unroll 8
        for (int j = 0; j < nr; j++)
          {
            __builtin_prefetch (row[j] + k0 / 32 * bb + DD_PREFETCH);
            d[j] = dd_f16 (row[j] + k0 / 32 * bb);
            dd_decode16 (row[j], k0, &p[j], d[j], code, bits, hf, sg, wv[j]);
          }
        DD_FMA_ (mr, nr, xk, ldx, wv, acc);
#pragma GCC unroll 8
        for (int j = 0; j < nr; j++)
          dd_decode16 (row[j], k0 + 16, &p[j], d[j], code, bits, hf, sg, wv[j]);
        DD_FMA_ (mr, nr, xk + 16, ldx, wv, acc);
      }
  for (; k0 < n; k0 += bs)
    {
      size_t end = n - k0 > bs ? k0 + bs : n, k = k0;

#pragma GCC unroll 8
      for (int j = 0; j < nr; j++)
        if (bits == 0)
          d[j] = dd_f16 (row[j] + k0 / 32 * bb);
        else
          piq_block_load_params (a, w->scales, w->zero_points,
                                 (j0 + (size_t) j) * w->blocks_per_row +
                                 (a->fixed || bs >= n ? 0 : k0 / a->block), &p[j]);
      if (code < 0 && bits > 1)
        {
          /* integer codes: each row's zero point and scale as vectors, once per block
           * (fdecode's reads of p[j], which piq_block_load_params keeps in memory,
           * and its test of nan_scale, per vector, spilled the AVX2 loop: perf).
           * (c − z) · s as fdecode computes it; an MX block's NaN scale as NaN, which
           * makes every product NaN as fdecode's vsplat (NAN) does (the outputs it
           * reaches are stored as the default NaN) */
          vi zv[DD_NR_MAX];
          vf sv[DD_NR_MAX];
#pragma GCC unroll 8
          for (int j = 0; j < nr; j++)
            {
              zv[j] = fsplat_i ((int32_t) p[j].zp);
              sv[j] = vsplat (p[j].nan_scale ? NAN : p[j].scale);
            }
          for (; k + 16 <= end; k += 16)
            {
              vf wv[DD_NR_MAX][MM_V];
#pragma GCC unroll 8
              for (int j = 0; j < nr; j++)
                {
                  if (bits == 8 || k % 32 == 0)   /* a line per 64 bytes */
                    __builtin_prefetch (row[j] + k * bits / 8 + DD_PREFETCH);
#pragma GCC unroll 4
                  for (int v = 0; v < MM_V; v++)
                    wv[j][v] = __builtin_convertvector (
                                 fload_codes (row[j] + (k + (size_t) v * PIQ_W) * bits / 8, bits,
                                              sg, hf) - zv[j], vf) * sv[j];
                }
              DD_FMA_ (mr, nr, x + k, ldx, wv, acc);
            }
        }
      for (; k + 16 <= end; k += 16)
        {
          vf wv[DD_NR_MAX][MM_V];
#pragma GCC unroll 8
          for (int j = 0; j < nr; j++)
            {
              if (bits == 8 || k % (bits == 1 ? 512 : 32) == 0)   /* a line per 64 bytes */
                __builtin_prefetch (row[j] + k * bits / 8 + DD_PREFETCH);
              dd_decode16 (row[j], k, &p[j], d[j], code, bits, hf, sg, wv[j]);
            }
          DD_FMA_ (mr, nr, x + k, ldx, wv, acc);
        }
      if (k < end)
        {
          size_t rem = end - k;
          float xt[4][16] = { { 0 } };
          vf wv[DD_NR_MAX][MM_V];
          for (int i = 0; i < mr; i++)
            memcpy (xt[i], x + i * ldx + k, rem * sizeof (float));
          for (int j = 0; j < nr; j++)
            {
              uint8_t ct[16] = { 0 };
              if (bits == 0)   /* ggml blocks are stored whole */
                dd_decode16 (row[j], k, &p[j], d[j], code, bits, hf, sg, wv[j]);
              else
                {
                  memcpy (ct, row[j] + k * bits / 8, (rem * bits + 7) / 8);
                  dd_decode16 (ct, 0, &p[j], d[j], code, bits, hf, sg, wv[j]);
                }
              for (int v = 0; v < MM_V; v++)
                {
                  vi idx;
                  for (int l = 0; l < PIQ_W; l++)
                    idx[l] = v * PIQ_W + l;
                  wv[j][v] = vsel (idx < (vi) { 0 } + (int32_t) rem, wv[j][v], (vf) { 0 });
                }
            }
          DD_FMA_ (mr, nr, &xt[0][0], 16, wv, acc);
        }
    }
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++)
      out[i * ldo + j] = mm_sum16 (acc[i][j]);
}

/* ---- 4-bit codes, one table per block: 16 lanes (AVX-512), or 8 (AVX2) ----
 * A 4-bit code takes 16 values in a block, so the block's decoded values are made
 * once, in registers, by the operations dd_decode16 applies to each code (t[c] · s,
 * (c − z) · s, ggml's (c − 8) · d, rounded once, or NaN for an MX block's NaN scale),
 * and codes are decoded by permutes: on 16 lanes one vpermps per 16 codes (it reads
 * the low 4 bits of each index, so the codes need no masking); on 8 lanes
 * (PIQ_VEC_LUT16: AVX2's vpermps reads 3 bits) the table is two registers, and each 8
 * codes take both permutes and a blend on bit 3 (the integer codes convert instead,
 * DD_ICVT). The 8 bytes of 16 packed codes are
 * broadcast to 64-bit lanes and shifted right by 4q bits: the 32-bit lanes of 64-bit
 * lane i then hold nibble q and nibble q + 8 in their low bits (a load, a shift and
 * the permutes, where unpacking the nibbles in order took five more operations), for
 * q = i on 16 lanes, and on 8 lanes q = 0, 1, 4, 5 (part 0) and 2, 3, 6, 7 (part 1),
 * the order in which vunpcklps and vunpckhps interleave x's two halves. The
 * accumulators keep the residues k mod 16 in that order (dd_sig), x is permuted once
 * for all the rows, and the lanes are put back in order before piq_sum_lanes: each
 * residue's lane sees the reference's fmas in the reference's order, whichever
 * register lane it lives in. ggml Q4_0 needs no permutation: a block's 16 bytes
 * zero-extended to 32-bit lanes hold elements l (low nibble) and l + 16 (high). */
#if PIQ_W == 16 || (PIQ_W == 8 && defined PIQ_VEC_LUT16)
# define DD_ROW4 1

/* rows of codes per pass of dd_row4 (the engine hands over PANEL = 8): 8 on 32 zmm;
 * 2 on 16 ymm, where a row takes 2 accumulators and a table of 2 registers (with 4
 * rows the permutes read the tables from the stack: 1.3–1.5× the time of register
 * operands in a loop of the decode alone on Zen 3) */
# ifndef DD_ROWS4
#  if PIQ_W == 16
#   define DD_ROWS4 8
#  else
#   define DD_ROWS4 2
#  endif
# endif
/* the same for DD_ICVT's integer codes: 4 on 16 ymm, their scale and zero point being
 * operands of a subtraction and a multiply, which read memory as cheaply (against 2
 * rows: Q4_0 0.094 ns a weight in L2 instead of 0.17, int4 0.11 instead of 0.15, Zen 3;
 * 8 rows: no faster) */
# ifndef DD_ROWS4I
#  define DD_ROWS4I (PIQ_W == 8 ? 4 : DD_ROWS4)
# endif
# define DD_ROWS4_MAX (DD_ROWS4 > DD_ROWS4I ? DD_ROWS4 : DD_ROWS4I)

typedef uint64_t dd_vq __attribute__ ((vector_size (PIQ_W * 4)));

/* Lane l: lane k[l] mod 16 of the 16 lanes in t (MM_V vectors). */
VINLINE vf
dd_lut16 (const vf t[MM_V], vi k)
{
# if PIQ_W == 16
  return fperm1_f (t[0], k);
# else
  return PIQ_VEC_LUT16 (t[0], t[1], k);
# endif
}

/* On 8 lanes the integer codes (ggml Q4_0, int4, uint4) decode by conversion, the
 * table's own operations on the code ((c − z) · s): the nibble masked, the zero point
 * subtracted, a conversion and a multiply run on any of Zen 3's vector pipes, where its
 * one permute pipe made the two-register table 1.8× slower (a register-only loop of
 * the two decodes). Their "table" is then s in every lane of t[0] and the integer
 * z (+ 8 for signed codes, whose nibble c ^ 8 is the code + 8) in t[1]. */
# define DD_ICVT(code) (PIQ_W == 8 && ((code) < 0 || (code) == PIQ_C_Q4_0))

VINLINE void
dd_itab (float s, int32_t z, const int sg, vf t[MM_V])
{
  t[0] = vsplat (s);
  t[MM_V - 1] = (vf) fsplat_i (sg ? z + 8 : z);
}

/* Lane l: the value of code k[l] mod 16 through t (dd_table4, or dd_itab's) */
VINLINE vf
dd_dec (const vf t[MM_V], vi k, const int code, const int sg)
{
  if (DD_ICVT (code))
    {
      vi c = k & 15;
      if (sg)
        c ^= 8;
      return __builtin_convertvector (c - (vi) t[MM_V - 1], vf) * t[0];
    }
  return dd_lut16 (t, k);
}

/* the nibble q that 64-bit lane i of part v holds (see above) */
VINLINE int
dd_nib (const int v, const int i)
{
  return PIQ_W == 16 ? i : 2 * v + (i & 1) + 4 * (i >> 1);
}

/* sig: the residue k mod 16 that accumulator lane p (vector p / PIQ_W) holds (memory
 * nibble m is element m ^ 1 when the high nibble comes first); inv: the lane that
 * holds residue r. Identity for ggml. */

VINLINE void
dd_sig (const int ggml, const int hf, vi sig[MM_V], vi inv[MM_V])
{
  for (int v = 0; v < MM_V; v++)
    for (int i = 0; i < PIQ_W / 2; i++)
      {
        const int q = dd_nib (v, i), p = v * PIQ_W + 2 * i;
        const int a = ggml ? p : q ^ hf, b = ggml ? p + 1 : (q + 8) ^ hf;
        sig[v][2 * i] = a;
        sig[v][2 * i + 1] = b;
        inv[a / PIQ_W][a % PIQ_W] = p;
        inv[b / PIQ_W][b % PIQ_W] = p + 1;
      }
}

/* x's 16 elements at x in dd_sig's lane order: one permute on 16 lanes; on 8, the
 * two halves interleaved by constant shuffles (vunpcklps, vunpckhps, and an in-lane
 * swap when the high nibble comes first), where permutes by dd_sig took 6 of the
 * loop's operations (GCC did not fold dd_sig into constants). */
VINLINE void
dd_xperm (const float *x, const int hf, const vi sig[MM_V], vf xp[MM_V])
{
# if PIQ_W == 16
  (void) hf;
  xp[0] = fperm1_f (fload (x), sig[0]);
# else
  const vf x0 = fload (x), x1 = fload (x + PIQ_W);
  (void) sig;
  if (hf)
    {
      xp[0] = PIQ_SHUF2 (x0, x1, vi, 1, 9, 0, 8, 5, 13, 4, 12);
      xp[1] = PIQ_SHUF2 (x0, x1, vi, 3, 11, 2, 10, 7, 15, 6, 14);
    }
  else
    {
      xp[0] = PIQ_SHUF2 (x0, x1, vi, 0, 8, 1, 9, 4, 12, 5, 13);
      xp[1] = PIQ_SHUF2 (x0, x1, vi, 2, 10, 3, 11, 6, 14, 7, 15);
    }
# endif
}

/* part v of the codes 0 … 15 as their integers (sg: the two's complement nibble) */
VINLINE vi
dd_codes (const int v, const int sg)
{
  vi c;
  for (int l = 0; l < PIQ_W; l++)
    c[l] = sg ? ((v * PIQ_W + l) ^ 8) - 8 : v * PIQ_W + l;
  return c;
}

/* The 16 values a block's codes decode to (see dd_decode16), as MM_V vectors. */
VINLINE void
dd_table4 (const PiqBlockP *p, float d, const int code, const int sg, vf t[MM_V])
{
  if (DD_ICVT (code))
    {
      if (code == PIQ_C_Q4_0)
        dd_itab (d, 8, sg, t);
      else
        dd_itab (p->nan_scale ? NAN : p->scale, (int32_t) p->zp, sg, t);
      return;
    }
  for (int v = 0; v < MM_V; v++)
    {
      vi c = dd_codes (v, sg);
      if (code == PIQ_C_Q4_0)
        t[v] = __builtin_convertvector (c - 8, vf) * vsplat (d);
      else if (p->nan_scale)
        t[v] = vsplat (NAN);
      else if (code < 0)
        t[v] = __builtin_convertvector (c - fsplat_i ((int32_t) p->zp), vf) * vsplat (p->scale);
      else
        {
          memcpy (&t[v], (code == PIQ_C_NF4 ? piq_nf4_values : code == PIQ_C_FP4_BNB
                          ? piq_fp4_bnb_values : dd_fp4_e2m1) + v * PIQ_W, sizeof t[v]);
          t[v] = t[v] * vsplat (p->scale);
        }
    }
}

/* Part v of 16 codes (8 bytes at c) as permute indices in dd_sig's lane order. */
VINLINE vi
dd_idx4 (const uint8_t *c, const int v)
{
  dd_vq sh = { 0 };
  uint64_t q;
  for (int i = 0; i < PIQ_W / 2; i++)
    sh[i] = (uint64_t) (4 * dd_nib (v, i));
  memcpy (&q, c, 8);
  return (vi) (((dd_vq) { 0 } + q) >> sh);
}

/* cnt ≤ 16 binary16 scales, stride bytes apart from p, as binary32: gathered, then
 * converted 16 at a time (F16C: the bits dd_f16 gives; every unit that runs dd_row4
 * has it). One at a time, each scale's insert, conversion and broadcast took three
 * of the shuffle port's operations per block and row, as many as the block's own
 * products (Q4_0 on AVX-512, disassembly). A whole 16 are gathered four to a 64-bit
 * word in general registers, the words put together in a vector register: stored
 * one by one into the array, the conversion's load could not be forwarded from the
 * sixteen 2-byte stores and waited for them to retire, which cost Q4_0's GEMV a
 * third of its time on one thread (6.41 → 4.01 ms a layer, 16-core host). */
# if !HAVE_F16
#  error "dd_row4 converts its scales with PIQ_VEC_LOAD_F16"
# endif
typedef uint64_t dd_v4q __attribute__ ((vector_size (32)));

/* Four binary16 stride bytes apart from p, as the 64-bit word whose bytes in memory
 * are the four in order. */
VINLINE uint64_t
dd_f16x4 (const uint8_t *p, size_t stride)
{
  uint64_t q = 0;
  for (int i = 0; i < 4; i++)
    {
      uint16_t h;
      memcpy (&h, p + (size_t) i * stride, 2);
# if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
      q |= (uint64_t) h << 16 * (3 - i);
# else
      q |= (uint64_t) h << 16 * i;
# endif
    }
  return q;
}

VINLINE void
dd_f16x16 (const uint8_t *p, size_t stride, size_t cnt, float *out)
{
  uint16_t h[16] = { 0 };
  const uint8_t *src = (const uint8_t *) h;

  if (cnt == 16 && stride == 2)
    src = p;
  else if (cnt == 16)
    {
      dd_v4q v = { dd_f16x4 (p, stride), dd_f16x4 (p + 4 * stride, stride),
                   dd_f16x4 (p + 8 * stride, stride), dd_f16x4 (p + 12 * stride, stride) };
      memcpy (h, &v, sizeof v);
    }
  else
    for (size_t i = 0; i < cnt; i++)
      memcpy (&h[i], p + i * stride, 2);
# pragma GCC unroll 4
  for (int v = 0; v < MM_V; v++)
    {
      vf f = PIQ_VEC_LOAD_F16 (src + v * PIQ_W * 2);
      memcpy (out + v * PIQ_W, &f, sizeof f);
    }
}

/* The scales of blocks b0 … b0 + cnt − 1 (cnt ≤ 16) of one row (scales: the row's
 * first), as binary32: the values piq_block_load_params gives a 4-bit table format or
 * integer without E8M0 (an E8M0 scale of 0xff as NaN, whose product with the table is
 * NaN in every lane as dd_table4's vsplat (NAN) is; which NaN does not matter, every
 * output it reaches is stored as the default NaN). E8M0 from bits, 16 at a time: the
 * generic loader, per block and row, cost four times the block's products (perf). */
VINLINE void
dd_scales16 (const uint8_t *scales, size_t b0, size_t cnt, const int sk, float *out)
{
  if (sk == PIQ_SCALE_E8M0)
    {
      uint8_t e[16] = { 0 };
      if (cnt == 16)
        memcpy (e, scales + b0, 16);
      else
        for (size_t i = 0; i < cnt; i++)
          e[i] = scales[b0 + i];
#pragma GCC unroll 4
      for (int p = 0; p < MM_V; p++)
        {
          vi v = PIQ_VEC_U8_TO_I32 (bytes16 (e + p * PIQ_W, PIQ_W)), m0 = v == 0, m255 = v == 255;
          /* 2^(e − 127): the exponent field, or 2^−127's subnormal bits for e = 0 */
          vi bits = ((v << 23) & ~(m0 | m255)) | (m0 & 0x00400000) | (m255 & 0x7fc00000);
          memcpy (out + p * PIQ_W, &bits, sizeof bits);
        }
    }
  else if (sk == PIQ_SCALE_F16)
    dd_f16x16 (scales + 2 * b0, 2, cnt, out);
  else
    memcpy (out, scales + 4 * b0, cnt * sizeof (float));
}

/* Row j's codes, from the first row's (c) and their stride (cs): with k's offset
 * added once to c, rows 0 … 7 are c and c + 4·cs, each plus 0, cs, 2·cs or 3·cs,
 * addressing modes on four registers, where eight row pointers ran GCC out of
 * registers (spilled to vector registers and the stack, reloaded every 16 elements). */
VINLINE const uint8_t *
dd_row (const uint8_t *c, size_t cs, const int j)
{
  const uint8_t *b = j < 4 ? c : c + 4 * cs;
  return j % 4 == 3 ? b + 3 * cs : b + (size_t) (j % 4) * cs;
}

/* Elements k … k + 15: acc[j] += x · (row j's codes through tab[j]), in dd_sig's lane
 * order. */
VINLINE void
dd_chunk4 (const uint8_t *c, size_t cs, const float *x, size_t k, const int nr, const int code,
           const int hf, const int sg, vf tab[][MM_V], const vi sig[MM_V], vf acc[][MM_V])
{
  vf xp[MM_V];
  const uint8_t *ck = c + k / 2;
  dd_xperm (x + k, hf, sig, xp);
#pragma GCC unroll 8
  for (int j = 0; j < nr; j++)
    {
      if (k % 128 == 0)
        __builtin_prefetch (dd_row (ck, cs, j) + DD_PREFETCH);
#pragma GCC unroll 4
      for (int v = 0; v < MM_V; v++)
        acc[j][v] = PIQ_VEC_FMA (xp[v], dd_dec (tab[j], dd_idx4 (dd_row (ck, cs, j), v), code, sg),
                                 acc[j][v]);
    }
}

/* Elements k … end − 1 of one block, as dd_chunk4; the block's last end mod 16 from
 * zero-padded copies, the weights past the end zeroed (fma (0, 0, lane) = lane, as in
 * dd_block). */
VINLINE void
dd_row4_range (const uint8_t *c, size_t cs, const float *x, size_t k, size_t end, const int nr,
               const int code, const int hf, const int sg, vf tab[][MM_V], const vi sig[MM_V],
               vf acc[][MM_V])
{
  for (; k + 16 <= end; k += 16)
    dd_chunk4 (c, cs, x, k, nr, code, hf, sg, tab, sig, acc);
  if (k < end)
    {
      size_t rem = end - k;
      float xt[16] = { 0 };
      vf xp[MM_V];
      memcpy (xt, x + k, rem * sizeof (float));
      dd_xperm (xt, hf, sig, xp);
      for (int j = 0; j < nr; j++)
        {
          uint8_t ct[8] = { 0 };
          memcpy (ct, dd_row (c, cs, j) + k / 2, (rem * 4 + 7) / 8);
          for (int v = 0; v < MM_V; v++)
            {
              vf wv = dd_dec (tab[j], dd_idx4 (ct, v), code, sg);
              wv = vsel (sig[v] < (vi) { 0 } + (int32_t) rem, wv, (vf) { 0 });
              acc[j][v] = PIQ_VEC_FMA (xp[v], wv, acc[j][v]);
            }
        }
    }
}

/* Q4_0 block k / 32 of nr rows: acc[j] += x's elements k … k + rem − 1 (x0: the
 * block's first 16, x1: the rest) times row j's codes, scales from sc[j] (16 blocks a
 * row, dd_f16x16); ggml blocks are stored whole, so a short last block (rem < 32)
 * masks the weights past the end to zero. */
VINLINE void
dd_ggml4 (const uint8_t *c, size_t cs, size_t k, size_t rem, const vf x0[MM_V], const vf x1[MM_V],
          float sc[][16], const int nr, const int code, const int sg, const vi sig[MM_V],
          vf acc[][MM_V])
{
#pragma GCC unroll 8
  for (int j = 0; j < nr; j++)
    {
      const uint8_t *blk = dd_row (c + k / 32 * 18, cs, j);
      vf t[MM_V];
      __builtin_prefetch (blk + DD_PREFETCH);
      dd_table4 (NULL, sc[j][k / 32 % 16], code, sg, t);
#pragma GCC unroll 4
      for (int v = 0; v < MM_V; v++)
        {
          vi q = PIQ_VEC_U8_TO_I32 (bytes16 (blk + 2 + v * PIQ_W, PIQ_W));
          vf lo = dd_dec (t, q, code, sg), hi = dd_dec (t, q >> 4, code, sg);
          if (rem < 32)
            {
              lo = vsel (sig[v] < (vi) { 0 } + (int32_t) rem, lo, (vf) { 0 });
              hi = vsel (sig[v] + 16 < (vi) { 0 } + (int32_t) rem, hi, (vf) { 0 });
            }
          acc[j][v] = PIQ_VEC_FMA (x0[v], lo, acc[j][v]);
          acc[j][v] = PIQ_VEC_FMA (x1[v], hi, acc[j][v]);
        }
    }
}

/* One row of x by nr (a constant) rows of 4-bit codes, over the whole row. A block
 * holds whole 16-element chunks or is the row (dd_takes), so only the row's last
 * n mod 16 come from zero-padded copies, with the weights past the end zeroed
 * (fma (0, 0, lane) = lane, as in dd_block). */
VINLINE void
dd_row4 (const PiqMmWeights *w, const float *x, size_t n, const int nr, size_t j0, float *out,
         const int code, const int hf, const int sg, const int sk)
{
  const PiqBlockArgs *a = w->a;
  const int ggml = code == PIQ_C_Q4_0;
  const size_t bs = ggml ? 32 : a->fixed ? n : a->block;
  vi sig[MM_V], inv[MM_V];
  vf acc[DD_ROWS4_MAX][MM_V], tab[DD_ROWS4_MAX][MM_V] = { { { 0 } } };   /* set per block */
  const uint8_t *const c = w->codes + j0 * w->code_stride;    /* row j: dd_row (c, cs, j) */
  const size_t cs = w->code_stride;
  float sc[DD_ROWS4_MAX][16];   /* 16 blocks' scales of each row */

  dd_sig (ggml, hf, sig, inv);
#pragma GCC unroll 8
  for (int j = 0; j < nr; j++)
#pragma GCC unroll 4
    for (int v = 0; v < MM_V; v++)
      acc[j][v] = (vf) { 0 };
  if (ggml)
    {
      size_t k = 0;
      for (;; k += 32)
        {
          vf x0[MM_V], x1[MM_V];
          if (k / 32 % 16 == 0)
            {
              const size_t cnt = (n - k + 31) / 32 < 16 ? (n - k + 31) / 32 : 16;
#pragma GCC unroll 8
              for (int j = 0; j < nr; j++)
                dd_f16x16 (dd_row (c + k / 32 * 18, cs, j), 18, cnt, sc[j]);
            }
          if (n - k < 32)
            break;
#pragma GCC unroll 4
          for (int v = 0; v < MM_V; v++)
            {
              x0[v] = fload (x + k + v * PIQ_W);
              x1[v] = fload (x + k + 16 + v * PIQ_W);
            }
          dd_ggml4 (c, cs, k, 32, x0, x1, sc, nr, code, sg, sig, acc);
        }
      if (k < n)
        {
          float xt[32] = { 0 };
          vf x0[MM_V], x1[MM_V];
          memcpy (xt, x + k, (n - k) * sizeof (float));
          for (int v = 0; v < MM_V; v++)
            {
              x0[v] = fload (xt + v * PIQ_W);
              x1[v] = fload (xt + 16 + v * PIQ_W);
            }
          dd_ggml4 (c, cs, k, n - k, x0, x1, sc, nr, code, sg, sig, acc);
        }
    }
  else if (sk >= 0)
    {
      /* blocks of a multiple of 16 elements, several a row: the scales of 16 blocks of
       * each row converted at a time, then each block's table is one multiply (and for
       * stored zero points a subtraction and a conversion) per vector */
      const size_t bpr = w->blocks_per_row, nb = (n + bs - 1) / bs;
      const size_t ss = sk == PIQ_SCALE_F32 ? 4 : sk == PIQ_SCALE_F16 ? 2 : 1;
      vi cv[MM_V];
      vf base[MM_V];

      for (int v = 0; v < MM_V; v++)
        {
          cv[v] = dd_codes (v, sg);
          if (code < 0)
            base[v] = __builtin_convertvector (cv[v] - fsplat_i ((int32_t) piq_block_symmetric_zp (a)),
                                               vf);
        }
      if (code >= 0)
        memcpy (base, code == PIQ_C_NF4 ? piq_nf4_values : code == PIQ_C_FP4_BNB
                      ? piq_fp4_bnb_values : dd_fp4_e2m1, sizeof base);
      /* one loop over the row's 16-element chunks, a block's tables made where it
       * starts: a loop per block kept the accumulators and tables on the stack
       * between blocks (GCC), 32 stores and loads for MXFP4's 2 chunks a block */
      size_t k = 0, kb = 0, b = 0;    /* kb: where block b, the next one, starts */
      for (;; k += 16)
        {
          if (k == kb && k < n)
            {
              const size_t bb = b % 16;
              if (bb == 0)
                {
                  const size_t cnt = nb - b < 16 ? nb - b : 16;
                  /* the scales (and zero points) of the block DD_SCALE_AHEAD elements
                   * on: each row's are a short stream of their own, which the codes'
                   * prefetch misses */
                  const size_t ahead = b + 16 + DD_SCALE_AHEAD / bs < nb
                                       ? b + 16 + DD_SCALE_AHEAD / bs : nb - 1;
#pragma GCC unroll 8
                  for (int j = 0; j < nr; j++)
                    {
                      __builtin_prefetch (w->scales + ((j0 + (size_t) j) * bpr + ahead) * ss);
                      if (code < 0 && w->zero_points != NULL)
                        __builtin_prefetch (w->zero_points + (j0 + (size_t) j) * bpr + ahead);
                    }
                  if (sk != PIQ_SCALE_F32)
#pragma GCC unroll 8
                    for (int j = 0; j < nr; j++)
                      dd_scales16 (w->scales + (j0 + (size_t) j) * bpr * ss, b, cnt, sk, sc[j]);
                }
#pragma GCC unroll 8
              for (int j = 0; j < nr; j++)
                {
                  const size_t bi = (j0 + (size_t) j) * bpr + b;
                  const int zp = code < 0 && w->zero_points != NULL;
                  const int32_t z = zp ? piq_ld_i32 (w->zero_points, bi) : 0;
                  float sj;
                  if (sk == PIQ_SCALE_F32)
                    memcpy (&sj, w->scales + 4 * bi, sizeof sj);
                  else
                    sj = sc[j][bb];
                  if (DD_ICVT (code))
                    dd_itab (sj, zp ? z : (int32_t) piq_block_symmetric_zp (a), sg, tab[j]);
                  else
#pragma GCC unroll 4
                    for (int v = 0; v < MM_V; v++)
                      tab[j][v] = (zp ? __builtin_convertvector (cv[v] - fsplat_i (z), vf) : base[v])
                                  * vsplat (sj);
                }
              b++;
              kb += bs;
            }
          if (n - k < 16)
            break;
          dd_chunk4 (c, cs, x, k, nr, code, hf, sg, tab, sig, acc);
        }
      /* the row's last n mod 16 (a block holds whole chunks, so they are in block b − 1) */
      dd_row4_range (c, cs, x, k, n, nr, code, hf, sg, tab, sig, acc);
    }
  else
    for (size_t k0 = 0; k0 < n; k0 += bs)
      {
#pragma GCC unroll 8
        for (int j = 0; j < nr; j++)
          {
            PiqBlockP p;
            piq_block_load_params (a, w->scales, w->zero_points,
                                   (j0 + (size_t) j) * w->blocks_per_row +
                                   (a->fixed || bs >= n ? 0 : k0 / a->block), &p);
            dd_table4 (&p, 0.0f, code, sg, tab[j]);
          }
        dd_row4_range (c, cs, x, k0, n - k0 > bs ? k0 + bs : n, nr, code, hf, sg, tab, sig, acc);
      }
  for (int j = 0; j < nr; j++)
    {
      vf v[MM_V];
      for (int p = 0; p < MM_V; p++)
        v[p] = dd_lut16 (acc[j], inv[p]);
      out[j] = mm_sum16 (v);
    }
}
#endif

/* Sub-tiles: MM_MR rows of x by MM_NR weight rows, and single rows of x (GEMV) by 4
 * (binary on AVX-512: by 8): the rows of codes stream side by side and x is loaded
 * once for them. */
VINLINE void
dd_tile (const PiqMmWeights *w, const float *x, size_t ldx, size_t n, size_t mr, size_t nr,
         float *out, size_t ldo, const int code, const int bits, const int hf, const int sg)
{
  size_t i = 0, j;

  if (mr > 1)
    for (; i + MM_MR <= mr; i += MM_MR)
      {
        for (j = 0; j + MM_NR <= nr; j += MM_NR)
          dd_block (w, x + i * ldx, ldx, n, MM_MR, MM_NR, j, out + i * ldo + j, ldo, code, bits,
                    hf, sg);
        for (; j < nr; j++)
          dd_block (w, x + i * ldx, ldx, n, MM_MR, 1, j, out + i * ldo + j, ldo, code, bits, hf,
                    sg);
      }
  for (; i < mr; i++)
    {
#ifdef DD_ROW4
      if (code == PIQ_C_Q4_0 || bits == 4)
        {
          /* the scale kind as a constant where blocks carry scales (MX integers, whose
           * E8M0 scale has an offset, keep the generic loader) */
          const PiqBlockArgs *a = w->a;
          const int sk = code == PIQ_C_Q4_0 || a->fixed ? -1
                         : a->scale_kind == PIQ_SCALE_E8M0 ? (code < 0 ? -1 : PIQ_SCALE_E8M0)
                         : (int) a->scale_kind;
          const int rows4 = DD_ICVT (code) ? DD_ROWS4I : DD_ROWS4;
#define DD_ROW4_SK_(sk_) \
          do { \
            for (j = 0; j + rows4 <= nr; j += rows4) \
              dd_row4 (w, x + i * ldx, n, rows4, j, out + i * ldo + j, code, hf, sg, sk_); \
            for (; j < nr; j++) \
              dd_row4 (w, x + i * ldx, n, 1, j, out + i * ldo + j, code, hf, sg, sk_); \
          } while (0)
          if (sk == PIQ_SCALE_F32)
            DD_ROW4_SK_ (PIQ_SCALE_F32);
          else if (sk == PIQ_SCALE_F16)
            DD_ROW4_SK_ (PIQ_SCALE_F16);
          else if (sk == PIQ_SCALE_E8M0)
            DD_ROW4_SK_ (PIQ_SCALE_E8M0);
          else
            DD_ROW4_SK_ (-1);
#undef DD_ROW4_SK_
          continue;
        }
#endif
      j = 0;
      if (bits == 1 && PIQ_W == 16)
        for (; j + 8 <= nr; j += 8)
          dd_block (w, x + i * ldx, ldx, n, 1, 8, j, out + i * ldo + j, ldo, code, bits, hf, sg);
      for (; j + 4 <= nr; j += 4)
        dd_block (w, x + i * ldx, ldx, n, 1, 4, j, out + i * ldo + j, ldo, code, bits, hf, sg);
      for (; j < nr; j++)
        dd_block (w, x + i * ldx, ldx, n, 1, 1, j, out + i * ldo + j, ldo, code, bits, hf, sg);
    }
}

/* X (name, code, bits, high nibble first, signed integer): one specialization each */
#define DD_FORMATS(X) \
  X (q4_0, PIQ_C_Q4_0, 0, 0, 0) X (q8_0, PIQ_C_Q8_0, 0, 0, 0) \
  X (u4, -1, 4, 0, 0) X (u4h, -1, 4, 1, 0) X (s4, -1, 4, 0, 1) X (s4h, -1, 4, 1, 1) \
  X (u8, -1, 8, 0, 0) X (s8, -1, 8, 0, 1) \
  X (nf4, PIQ_C_NF4, 4, 0, 0) X (nf4h, PIQ_C_NF4, 4, 1, 0) \
  X (fp4, PIQ_C_FP4_E2M1, 4, 0, 0) X (fp4h, PIQ_C_FP4_E2M1, 4, 1, 0) \
  X (bnb4, PIQ_C_FP4_BNB, 4, 0, 0) X (bnb4h, PIQ_C_FP4_BNB, 4, 1, 0) \
  X (e4m3, PIQ_C_FP8_E4M3, 8, 0, 0) X (e5m2, PIQ_C_FP8_E5M2, 8, 0, 0) \
  X (bin, PIQ_C_BINARY, 1, 0, 0)

#define DD_DEF_(name, c, b, h, s) \
  static void \
  dd_##name (const PiqMmWeights *w, const float *x, size_t ldx, size_t n, size_t mr, size_t nr, \
             float *out, size_t ldo) \
  { dd_tile (w, x, ldx, n, mr, nr, out, ldo, c, b, h, s); }
DD_FORMATS (DD_DEF_)
#undef DD_DEF_

static void
mm_decode_dot_f32 (const PiqMmWeights *w, const float *x, size_t ldx, size_t n, size_t mr,
                   size_t nr, float *out, size_t ldo)
{
  const PiqBlockArgs *a = w->a;
  const int hf = a->bits == 4 && a->high_first, sg = a->code < 0 && a->qmin < 0;

  if (dd_takes (a, n) && !dd_big_zp (w, n, nr))
    {
#define DD_PICK_(name, c, b, h, s) \
      if (a->code == (c) && a->bits == (b) && hf == (h) && sg == (s)) \
        { \
          dd_##name (w, x, ldx, n, mr, nr, out, ldo); \
          return; \
        }
      DD_FORMATS (DD_PICK_)
#undef DD_PICK_
    }
  piq_block_decode_dot (w, x, ldx, n, mr, nr, out, ldo);
}

# define PIQ_MM_TILE_SLOT .mm_tile = mm_tile_f32, .mm_lanes = mm_lanes_f32, \
  .mm_decode_dot = mm_decode_dot_f32,
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

#if defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD) && PIQ_W == 16
# define HAVE_SUM8X4 1
VINLINE void sum8_lanes_x4 (vi s0, vi s1, vi s2, vi s3, int32_t *out);
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
    {
# ifdef HAVE_SUM8X4
      if (group == 32)
        for (; k0 + 4 * cb <= n; g += 8, k0 += 4 * cb)
          sum8_lanes_x4 (dot_u8s8_4w ((vi) { 0 }, w + k0, x + k0),
                         dot_u8s8_4w ((vi) { 0 }, w + k0 + cb, x + k0 + cb),
                         dot_u8s8_4w ((vi) { 0 }, w + k0 + 2 * cb, x + k0 + 2 * cb),
                         dot_u8s8_4w ((vi) { 0 }, w + k0 + 3 * cb, x + k0 + 3 * cb), out + g);
# endif
      for (; k0 + cb <= n; k0 += cb)
        g += chunk_groups (dot_u8s8_4w ((vi) { 0 }, w + k0, x + k0), group, out + g);
    }
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
  /* |w| and x with w's sign, in unsigned bytes: |−128| is 128 as an unsigned byte, and
   * signed bytes would overflow computing it (UBSan) */
  return MM_DOT4 (acc, ((vbw) a ^ (vbw) m) - (vbw) m, ((vbw) b ^ (vbw) m) - (vbw) m);
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

# ifdef HAVE_SUM8X4
/* The eight group sums of four chunks (s_c: lanes 0–7 group 2c, lanes 8–15 group
 * 2c + 1) into out[0 … 7], by a transposing tree of two-vector shuffles: eight
 * shuffles and four adds where sum8_lanes took twelve of each and eight extracts
 * (perf: the reductions cost more than the products on a GEMV of groups of 32). */
VINLINE void
sum8_lanes_x4 (vi s0, vi s1, vi s2, vi s3, int32_t *out)
{
  /* runs of four lanes: groups 0 2 1 3 and 4 6 5 7 */
  vi u = PIQ_SHUF2 (s0, s1, vi, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27) +
         PIQ_SHUF2 (s0, s1, vi, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  vi v = PIQ_SHUF2 (s2, s3, vi, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27) +
         PIQ_SHUF2 (s2, s3, vi, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  /* runs of two lanes: groups 0 … 7 */
  vi t = PIQ_SHUF2 (u, v, vi, 0, 1, 8, 9, 4, 5, 12, 13, 16, 17, 24, 25, 20, 21, 28, 29) +
         PIQ_SHUF2 (u, v, vi, 2, 3, 10, 11, 6, 7, 14, 15, 18, 19, 26, 27, 22, 23, 30, 31);
  t = PIQ_SHUF1 (t, vi, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14) +
      PIQ_SHUF1 (t, vi, 1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
  memcpy (out, &t, 8 * sizeof (int32_t));
}

/* The sums of eight vectors (one group each) into out[0 … 7]: each pair folded into
 * one vector of two groups of eight lanes, then sum8_lanes_x4. */
VINLINE void
hsum_vi_x8 (const vi *a, int32_t *out)
{
  vi s[4];
  for (int c = 0; c < 4; c++)
    s[c] = PIQ_SHUF2 (a[2 * c], a[2 * c + 1], vi, 0, 1, 2, 3, 4, 5, 6, 7,
                      16, 17, 18, 19, 20, 21, 22, 23) +
           PIQ_SHUF2 (a[2 * c], a[2 * c + 1], vi, 8, 9, 10, 11, 12, 13, 14, 15,
                      24, 25, 26, 27, 28, 29, 30, 31);
  sum8_lanes_x4 (s[0], s[1], s[2], s[3], out);
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
    {
# ifdef HAVE_SUM8X4
      for (; k0 + 8 * group <= n; g += 8, k0 += 8 * group)
        {
          vi acc[8];
          for (int i = 0; i < 8; i++)
            {
              acc[i] = (vi) { 0 };
              for (size_t k = k0 + i * group; k < k0 + (i + 1) * group; k += cb)
                acc[i] = dot_i8_4w (acc[i], w + k, x + k);
            }
          hsum_vi_x8 (acc, out + g);
        }
# endif
      for (; k0 + group <= n; g++, k0 += group)
        {
          vi acc = { 0 };
          for (size_t k = k0; k < k0 + group; k += cb)
            acc = dot_i8_4w (acc, w + k, x + k);
          out[g] = hsum_vi (acc);
        }
    }
  else if (cb % group == 0 && group % 4 == 0)
    {
# ifdef HAVE_SUM8X4
      if (group == 32)
        for (; k0 + 4 * cb <= n; g += 8, k0 += 4 * cb)
          sum8_lanes_x4 (dot_i8_4w ((vi) { 0 }, w + k0, x + k0),
                         dot_i8_4w ((vi) { 0 }, w + k0 + cb, x + k0 + cb),
                         dot_i8_4w ((vi) { 0 }, w + k0 + 2 * cb, x + k0 + 2 * cb),
                         dot_i8_4w ((vi) { 0 }, w + k0 + 3 * cb, x + k0 + 3 * cb), out + g);
# endif
      for (; k0 + cb <= n; k0 += cb)
        g += chunk_groups (dot_i8_4w ((vi) { 0 }, w + k0, x + k0), group, out + g);
    }
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
    {
# ifdef HAVE_SUM8X4
      for (; k0 + 8 * group <= n; g += 8, k0 += 8 * group)
        {
          vi acc[8];
          for (int i = 0; i < 8; i++)
            {
              acc[i] = (vi) { 0 };
              for (size_t k = k0 + i * group; k < k0 + (i + 1) * group; k += cb)
                acc[i] = dot_q4_chunk (acc[i], w, x, k);
            }
          hsum_vi_x8 (acc, out + g);
        }
# endif
      for (; k0 + group <= n; g++, k0 += group)
        {
          vi acc = { 0 };
          for (size_t k = k0; k < k0 + group; k += cb)
            acc = dot_q4_chunk (acc, w, x, k);
          out[g] = hsum_vi (acc);
        }
    }
  else if (cb % group == 0 && group % 4 == 0)
    {
# ifdef HAVE_SUM8X4
      if (group == 32)
        for (; k0 + 4 * cb <= n; g += 8, k0 += 4 * cb)
          sum8_lanes_x4 (dot_q4_chunk ((vi) { 0 }, w, x, k0),
                         dot_q4_chunk ((vi) { 0 }, w, x, k0 + cb),
                         dot_q4_chunk ((vi) { 0 }, w, x, k0 + 2 * cb),
                         dot_q4_chunk ((vi) { 0 }, w, x, k0 + 3 * cb), out + g);
# endif
      for (; k0 + cb <= n; k0 += cb)
        g += chunk_groups (dot_q4_chunk ((vi) { 0 }, w, x, k0), group, out + g);
    }
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

/* ---- the dynamic-int8 policy's grouped products (gemm_groups) ----
 * PiqGemmGroupsFn's contract (piq-kernels-private.h). Lane j of an int32 vector is
 * output channel j of a panel, so a group's sums need no horizontal reduction: per
 * quad of 4 k, one load of the panel's 64 bytes (two quads of nibbles for 4-bit
 * weights, split by a mask and a shift) and a 32-bit broadcast of each row of X feed
 * GG_MR · GG_NP · G8_V VPDPBUSD (vpmaddubsw + vpmaddwd without VNNI, widening
 * multiplies on NEON: PIQ_VEC_DOT4_U8S8). At the end of a group its sums are widened
 * to binary64 and combined with the scales in registers, where the binary64 sums of
 * the tile stay for the whole call: 4 rows × 2 panels on AVX-512 (8 zmm of int32 sums,
 * 16 of binary64), 2 × 1 on AVX2, 1 × 1 on 128-bit units. The order of every
 * operation is the scalar kernel's, so the bytes are. */
#if defined(PIQ_VEC_DPBUSD) || defined(PIQ_VEC_DOT4_U8S8) || \
    (defined(PIQ_VEC_MADDUBS) && defined(PIQ_VEC_MADDWD))

# if PIQ_W == 16
#  define GG_MR 4
#  define GG_NP 2
# elif PIQ_W == 8
#  define GG_MR 2
#  define GG_NP 1
# else
#  define GG_MR 1
#  define GG_NP 1
# endif
/* binary64 vectors per panel (16 channels) */
# define GG_DV (32 / PIQ_W)
/* One row of X (a GEMV) leaves registers to spare: GG_NP1 panels side by side, so
 * more independent VPDPBUSD chains and more streams of W per thread. One row of X,
 * ms a layer of the bench's GEMV on 1 / 16 threads (docs/performance.md, session 38):
 * capped at AVX2 on the 16-core host, Q4_0 3.31 / 0.416 with one panel, 2.45 / 0.342
 * with two, 2.50 / 0.345 with four; on Zen 3, 2.2–2.7 with one, 1.9 with four (one
 * thread). AVX-512 went from two to four within its call's spread. */
# if PIQ_W >= 8
#  define GG_NP1 4
# else
#  define GG_NP1 GG_NP
# endif
# define GG_NPX (GG_NP1 > GG_NP ? GG_NP1 : GG_NP)

typedef int32_t gg_vih __attribute__ ((vector_size (PIQ_W * 2)));
typedef float   gg_vfh __attribute__ ((vector_size (PIQ_W * 2)));
typedef double  gg_vd  __attribute__ ((vector_size (PIQ_W * 4)));

/* acc + Σ of four adjacent products of unsigned u and signed s, exact: VPDPBUSD, or
 * (small: u ≤ 15, so a pair fits 16 bits and u a signed byte) one vpmaddubsw or the
 * unit's signed dot product, else g8_dot's split of u */
VINLINE vi
gg_dot (vi acc, vbw u, vbw s, const int small)
{
# ifdef PIQ_VEC_DPBUSD
  (void) small;
  return PIQ_VEC_DPBUSD (acc, u, s);
# elif defined(PIQ_VEC_DOT4_U8S8)
#  ifdef PIQ_VEC_DOT4_S8S8
  if (small)
    return PIQ_VEC_DOT4_S8S8 (acc, u, s);
#  endif
  (void) small;
  return PIQ_VEC_DOT4_U8S8 (acc, u, s);
# else
  if (small)
    return acc + (vi) PIQ_VEC_MADDWD (PIQ_VEC_MADDUBS (u, s), (vw) ((vw) { 0 } + 1));
  return g8_dot (acc, u, s);
# endif
}

/* PQ_STEP's operands and products: X's broadcast codes x against W's panel codes w;
 * for 4-bit codes two quads at once, the low nibbles against x at 4q and the high
 * ones against x at 4q + 4 */
typedef struct { vbw lo, hi; } gg_pair;

VINLINE gg_pair
gg_bcast2 (const int8_t *x)
{
  return (gg_pair) { pq_bcast (x), pq_bcast (x + 4) };
}

VINLINE vi
gg_dot4 (vi acc, gg_pair x, gg_pair w)
{
  return gg_dot (gg_dot (acc, w.lo, x.lo, 1), w.hi, x.hi, 1);
}

VINLINE vi
gg_dot8 (vi acc, vbw x, vbw w)
{
  return gg_dot (acc, w, x, 0);
}

/* The low and high halves of a vector of PIQ_W lanes. By shuffles: halves copied out
 * with memcpy kept the tile's int32 sums on the stack for the whole call (GCC 12), a
 * load and a store around every VPDPBUSD of the GEMV's inner loop. */
# if PIQ_W == 16
#  define GG_LO(v) __builtin_shufflevector (v, v, 0, 1, 2, 3, 4, 5, 6, 7)
#  define GG_HI(v) __builtin_shufflevector (v, v, 8, 9, 10, 11, 12, 13, 14, 15)
# elif PIQ_W == 8
#  define GG_LO(v) __builtin_shufflevector (v, v, 0, 1, 2, 3)
#  define GG_HI(v) __builtin_shufflevector (v, v, 4, 5, 6, 7)
# else
#  define GG_LO(v) __builtin_shufflevector (v, v, 0, 1)
#  define GG_HI(v) __builtin_shufflevector (v, v, 2, 3)
# endif

/* The low and high halves of v, widened exactly to binary64. */
VINLINE void
gg_widen_i (vi v, gg_vd *lo, gg_vd *hi)
{
  *lo = __builtin_convertvector (GG_LO (v), gg_vd);
  *hi = __builtin_convertvector (GG_HI (v), gg_vd);
}

/* Part v (PIQ_W channels) of a panel's group scales, as 2 binary64 vectors. */
VINLINE void
gg_scales (const uint8_t *s, const int f16, int v, gg_vd *lo, gg_vd *hi)
{
  vf f;

  if (f16)
    {
# ifdef PIQ_VEC_LOAD_F16
      f = PIQ_VEC_LOAD_F16 (s + v * PIQ_W * 2);
# else
      for (int l = 0; l < PIQ_W; l++)
        {
          uint16_t h;
          memcpy (&h, s + (v * PIQ_W + l) * 2, 2);
          f[l] = piq_f16_to_f32 (h);
        }
# endif
    }
  else
    memcpy (&f, s + v * PIQ_W * 4, sizeof f);
  *lo = __builtin_convertvector (GG_LO (f), gg_vd);
  *hi = __builtin_convertvector (GG_HI (f), gg_vd);
}

/* binary32 from the binary64 sums, a NaN as the default quiet NaN (the scalar
 * kernel's piq_mm_canonical) */
VINLINE gg_vfh
gg_narrow (gg_vd d)
{
  gg_vfh f = __builtin_convertvector (d, gg_vfh);
  gg_vih nan = (gg_vih) (f != f);
  return (gg_vfh) (((gg_vih) f & ~nan) | (nan & 0x7fc00000));
}

/* Each panel's bytes GG_PREFETCH ahead, a line per step: without it a GEMV (two panels
 * streamed per thread) left the hardware prefetchers short of the read limit on 16
 * threads: Q4_0 0.41 ms a layer, 0.33 ms with 2,048, 0.38 with 1,024, 0.36 with 4,096
 * (16-core host; docs/performance.md, session 35). In a GEMM the tiles after the first
 * prefetch lines already in L1; prefetching in the first tile only (a flag) was not
 * faster on Zen 3 (Q4_0 int8 GEMM 118–148 ms against 109–131, one thread). */
# define GG_PREFETCH 2048

# define GG_PRAGMA_(x) _Pragma (#x)
# define GG_UNROLL GG_PRAGMA_ (GCC unroll 16)

/* The lines GG_PREFETCH past p in each of np panels, ldwp bytes apart. */
VINLINE void
gg_prefetch (const uint8_t *p, size_t ldwp, const int np)
{
  GG_UNROLL
  for (int t = 0; t < np; t++)
    __builtin_prefetch (p + t * ldwp + GG_PREFETCH);
}

/* One tile: mr rows × np panels (constants once inlined) over the call's groups. */
VINLINE void
gg_block (const PiqGroupsW *w, const uint8_t *wp, size_t groups, const int8_t *x, size_t ldx,
          const double *xd, const int32_t *xz, size_t ldg, const int mr, const int np,
          const int q4, double *acc, size_t ldacc, int first, float *out, size_t ldo, size_t nc)
{
  const size_t ldwp = w->ldwp, gq = w->gq, code_bytes = q4 ? 32 * gq : 64 * gq;
  const size_t scale_bytes = w->f16 ? 32 : 64;
  gg_vd da[GG_MR][GG_NPX * GG_DV];

  GG_UNROLL
  for (int i = 0; i < mr; i++)
    GG_UNROLL
    for (int t = 0; t < np * GG_DV; t++)
      if (first)
        da[i][t] = (gg_vd) { 0 };
      else
        memcpy (&da[i][t], acc + i * ldacc + t * (PIQ_W / 2), sizeof da[i][t]);

  for (size_t g = 0; g < groups; g++)
    {
      const uint8_t *wg = wp + g * w->gbytes;
      const int8_t *xg = x + g * 4 * gq;
      vi ia[GG_MR][GG_NPX * G8_V];

      /* the sums start from −z·Σx (or −zp·Σx): I comes out of the products */
      if (w->zpc)
        {
          vi zp[GG_NPX * G8_V];
          GG_UNROLL
          for (int t = 0; t < np * G8_V; t++)
            memcpy (&zp[t], wg + t / G8_V * ldwp + code_bytes + scale_bytes + t % G8_V * PIQ_W * 4,
                    sizeof zp[t]);
          GG_UNROLL
          for (int i = 0; i < mr; i++)
            GG_UNROLL
            for (int t = 0; t < np * G8_V; t++)
              ia[i][t] = (vi) { 0 } - zp[t] * xz[i * ldg + g];
        }
      else
        GG_UNROLL
        for (int i = 0; i < mr; i++)
          GG_UNROLL
          for (int t = 0; t < np * G8_V; t++)
            ia[i][t] = (vi) { 0 } - xz[i * ldg + g];

      /* the int8 GEMM's panel walk (PQ_LOAD, PQ_STEP): X broadcast, W the panel */
      if (q4)
        for (size_t q = 0; q < gq; q += 2)
          {
            vbw b[GG_NPX * G8_V];
            gg_pair nib[GG_NPX * G8_V];
            gg_prefetch (wg + q * 32, ldwp, np);
            PQ_LOAD (b, wg + q * 32, ldwp, np);
            GG_UNROLL
            for (int t = 0; t < np * G8_V; t++)
              nib[t] = (gg_pair) { b[t] & 15, b[t] >> 4 };
            PQ_STEP (ia, mr, np, nib, xg + 4 * q, ldx, gg_bcast2, gg_dot4);
          }
      else
        for (size_t q = 0; q < gq; q++)
          {
            vbw bv[GG_NPX * G8_V];
            gg_prefetch (wg + q * 64, ldwp, np);
            PQ_LOAD (bv, wg + q * 64, ldwp, np);
            PQ_STEP (ia, mr, np, bv, xg + 4 * q, ldx, pq_bcast, gg_dot8);
          }

      /* acc + ((double) I · s) · d, in that order (no contraction: -ffp-contract=off) */
      GG_UNROLL
      for (int t = 0; t < np * G8_V; t++)
        {
          gg_vd s0, s1;
          gg_scales (wg + t / G8_V * ldwp + code_bytes, w->f16, t % G8_V, &s0, &s1);
          GG_UNROLL
          for (int i = 0; i < mr; i++)
            {
              gg_vd i0, i1, d = (gg_vd) { 0 } + xd[i * ldg + g];
              gg_widen_i (ia[i][t], &i0, &i1);
              da[i][2 * t] = da[i][2 * t] + (i0 * s0) * d;
              da[i][2 * t + 1] = da[i][2 * t + 1] + (i1 * s1) * d;
            }
        }
    }

  GG_UNROLL
  for (int i = 0; i < mr; i++)
    {
      if (out == NULL)
        {
          GG_UNROLL
          for (int t = 0; t < np * GG_DV; t++)
            memcpy (acc + i * ldacc + t * (PIQ_W / 2), &da[i][t], sizeof da[i][t]);
          continue;
        }
      if (nc == (size_t) np * 16)
        GG_UNROLL
        for (int t = 0; t < np * GG_DV; t++)
          {
            gg_vfh f = gg_narrow (da[i][t]);
            memcpy (out + i * ldo + t * (PIQ_W / 2), &f, sizeof f);
          }
      else
        {
          float o[GG_NPX * 16];
          GG_UNROLL
          for (int t = 0; t < np * GG_DV; t++)
            {
              gg_vfh f = gg_narrow (da[i][t]);
              memcpy (o + t * (PIQ_W / 2), &f, sizeof f);
            }
          memcpy (out + i * ldo, o, nc * sizeof (float));
        }
    }
}

/* The rows of one column tile, GG_MR at a time, then the last mr < GG_MR as one tile
 * of that many rows (a constant per case, so each keeps its registers). */
VINLINE void
gg_rows (const PiqGroupsW *w, const uint8_t *wp, size_t groups, const int8_t *x, size_t ldx,
         const double *xd, const int32_t *xz, size_t ldg, size_t m, const int np, const int q4,
         double *acc, size_t ldacc, int first, float *out, size_t ldo, size_t nc)
{
  size_t i = 0;

# define GG_BLOCK_(r) \
  gg_block (w, wp, groups, x + i * ldx, ldx, xd + i * ldg, xz + i * ldg, ldg, r, np, q4, \
            acc + i * ldacc, ldacc, first, out != NULL ? out + i * ldo : NULL, ldo, nc)
  for (; i + GG_MR <= m; i += GG_MR)
    GG_BLOCK_ (GG_MR);
  switch (m - i)
    {
# if GG_MR > 2
    case 3: GG_BLOCK_ (3); break;
# endif
# if GG_MR > 1
    case 2: GG_BLOCK_ (2); break;
    case 1: GG_BLOCK_ (1); break;
# endif
    default: break;
    }
# undef GG_BLOCK_
}

VINLINE void
gg_panels (const PiqGroupsW *w, size_t groups, const int8_t *x, size_t ldx, const double *xd,
           const int32_t *xz, size_t ldg, size_t m, size_t n, const int q4, double *acc,
           size_t ldacc, int first, float *out, size_t ldo)
{
  size_t j = 0;

# if GG_NP1 > GG_NP
  if (m == 1)
    for (; j + 16 * GG_NP1 <= n; j += 16 * GG_NP1)
      gg_block (w, w->w + j / 16 * w->ldwp, groups, x, ldx, xd, xz, ldg, 1, GG_NP1, q4, acc + j,
                ldacc, first, out != NULL ? out + j : NULL, ldo, 16 * GG_NP1);
# endif
  for (; j < n; j += 16 * GG_NP)
    {
      size_t nc = n - j < 16 * GG_NP ? n - j : 16 * GG_NP;
      const uint8_t *wp = w->w + j / 16 * w->ldwp;
      float *oj = out != NULL ? out + j : NULL;
# if GG_NP == 2
      if (nc <= 16)
        gg_rows (w, wp, groups, x, ldx, xd, xz, ldg, m, 1, q4, acc + j, ldacc, first, oj, ldo, nc);
      else
# endif
        gg_rows (w, wp, groups, x, ldx, xd, xz, ldg, m, GG_NP, q4, acc + j, ldacc, first, oj, ldo,
                 nc);
    }
}

static void
gemm_groups_packed (const PiqGroupsW *w, size_t groups, const int8_t *x, size_t ldx,
                    const double *xd, const int32_t *xz, size_t ldg, size_t m, size_t n,
                    double *acc, size_t ldacc, int first, float *out, size_t ldo)
{
  if (w->q4)
    gg_panels (w, groups, x, ldx, xd, xz, ldg, m, n, 1, acc, ldacc, first, out, ldo);
  else
    gg_panels (w, groups, x, ldx, xd, xz, ldg, m, n, 0, acc, ldacc, first, out, ldo);
}

# define PIQ_GEMM_GROUPS_SLOT .gemm_groups = gemm_groups_packed,
#else
# define PIQ_GEMM_GROUPS_SLOT
#endif

/* ---- the dynamic-int8 policy's X (act_quantize) ----
 * PiqActQuantizeFn's contract with the scalar kernel's operations lane by lane, so
 * the same bytes: one unsigned max of |x|'s bits gives amax and finiteness at once
 * (infinities and NaNs lie above every finite magnitude); x · (1 / d) is within
 * 127 + ε, so frint rounds it, and clamping before rounding to the integers ±127 is
 * clamping after. A group whose 1 / d overflows goes to the scalar kernel. It was a
 * libm call per element in the engine: 77–88 µs a row of 14,336 on Zen 3, a fifth of
 * a 16-thread GEMV layer on the 16-core host (docs/performance.md, session 38). */
VINLINE void
aq_group (const float *x, size_t len, int8_t *q, float *d, int32_t *sum)
{
  vu am = { 0 };
  vi s = { 0 };
  uint32_t mb;
  int32_t t = 0;
  size_t i = 0;
  float amax, id;

  for (; i + PIQ_W <= len; i += PIQ_W)
    {
      vf v;
      memcpy (&v, x + i, sizeof v);
      am = fmaxabs (am, v);
    }
  mb = fhmaxu (am);
  for (; i < len; i++)
    {
      uint32_t b;
      memcpy (&b, x + i, 4);
      b &= 0x7fffffffu;
      mb = b > mb ? b : mb;
    }
  if (mb >= 0x7f800000u)
    {
      memset (q, 0, len);
      *d = NAN;
      *sum = 0;
      return;
    }
  memcpy (&amax, &mb, sizeof amax);
  *d = amax / 127.0f;
  id = *d > 0.0f ? 1.0f / *d : 0.0f;
  if (isinf (id))
    {
      piq_kernels_scalar.act_quantize (x, len, len, q, d, sum);
      return;
    }
  {
    const vf vid = vsplat (id), lo = vsplat (-127.0f), hi = vsplat (127.0f);
    for (i = 0; i + PIQ_W <= len; i += PIQ_W)
      {
        vf v;
        vi c;
        vsb b;
        memcpy (&v, x + i, sizeof v);
        c = frint (vmin (vmax (v * vid, lo), hi));
        s += c;
        b = __builtin_convertvector (c, vsb);
        memcpy (q + i, &b, sizeof b);
      }
  }
  for (; i < len; i++)
    {
      float v = x[i] * id;
      v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
      q[i] = (int8_t) ((v + 0x1.8p23f) - 0x1.8p23f);
      t += q[i];
    }
  for (int l = 0; l < PIQ_W; l++)
    t += s[l];
  *sum = t;
}

static void
act_quantize_f32 (const float *x, size_t k, size_t group, int8_t *q, float *d, int32_t *sum)
{
  for (size_t g = 0, k0 = 0; k0 < k; g++, k0 += group)
    aq_group (x + k0, k - k0 < group ? k - k0 : group, q + k0, d + g, sum + g);
}

/* a conversion kernel: the units that add only product instructions leave it to
 * the unit below them */
#ifdef PIQ_VEC_ONLY_MATMUL
# define PIQ_ACT_QUANTIZE_SLOT
#else
# define PIQ_ACT_QUANTIZE_SLOT .act_quantize = act_quantize_f32,
#endif

#define PIQ_MATMUL_SLOTS PIQ_ACT_QUANTIZE_SLOT PIQ_MM_TILE_SLOT .dot_groups = dot_groups_u8s8, .dot_groups_i8 = dot_groups_i8, \
  .dot_groups_q4 = dot_groups_q4, PIQ_GEMM_U8S8_SLOT PIQ_GEMM_GROUPS_SLOT

/* piq-kernels-private.h: the kernel table and the calling contract of every kernel
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Nothing here is installed or visible in the GIR. The kernel layer depends on libc
 * only, so the tests and the static benchmark can use it without GLib.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "piq-kernel-list.h"

#ifndef PIQ_INTERNAL
# define PIQ_INTERNAL __attribute__((visibility ("hidden")))
#endif

/* Everything a kernel needs besides its pointers. Prepared once per call. */
typedef struct {
  float    scale_f;      /* (float) scale: binary32 compute (f32, bf16, f16) */
  float    inv_f;        /* 1.0f / scale_f */
  double   scale_d;      /* scale: binary64 compute (f64) */
  double   inv_d;        /* 1.0 / scale */
  int64_t  zero_point;
  __int128 qmin, qmax;   /* range of the quantized type */
  uint32_t key0, key1;   /* stochastic rounding keys, from the seed (piq_hash_keys) */
  int      stream;       /* SET outputs may bypass the caches (large calls): same bytes */
} PiqKernelArgs;

typedef struct {
  double   min, max;     /* +Inf/-Inf when empty; NaN when non_finite; never −0 */
  int      non_finite;   /* 1 if any element is NaN or ±Inf */
} PiqMinMax;

typedef struct {
  double   sum, sum_sq;
} PiqSums;

/* Calls that touch at least this many bytes (source + destination) write their SET
 * outputs with non-temporal stores where the kernels have them (PiqKernelArgs.stream):
 * the data would evict the caches anyway, and skipping the read-for-ownership cuts
 * the write traffic (docs/performance.md). */
#define PIQ_STREAM_MIN_BYTES (8u << 20)

/* Contract shared by every kernel:
 * - `src`/`dst` point at the first element of the range (sub-byte: at a byte
 *   boundary; the caller only starts ranges at multiples of 8 elements);
 * - `index` is the element index of src[0] in the whole tensor, used only by
 *   stochastic rounding; a call never crosses a multiple of 2^32 in index;
 * - no alignment is assumed; a sub-byte destination's partial last byte is written
 *   whole, with its unused bits zero;
 * - results are a function of (element value, element index, args) only. */
typedef void (*PiqQuantizeFn)   (const void *src, void *dst, uint64_t index, size_t n,
                                 const PiqKernelArgs *a);
typedef void (*PiqDequantizeFn) (const void *src, void *dst, size_t n, const PiqKernelArgs *a);
typedef void (*PiqRequantizeFn) (const void *src, void *dst, uint64_t index, size_t n,
                                 const PiqKernelArgs *a);
/* Reductions run over one block of at most PIQ_REDUCE_BLOCK elements. Sums use 8
 * binary64 lanes (element i into lane i % 8), combined as
 * ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), so a SIMD body can reproduce them exactly. */
#define PIQ_REDUCE_BLOCK 16384
typedef void (*PiqMinMaxFn)     (const void *src, size_t n, PiqMinMax *out);
typedef void (*PiqSumsFn)       (const void *src, size_t n, PiqSums *out);
/* Block formats over whole blocks starting at element `first` (piq-formats-private.h
 * has PiqBlockArgs and the contract of piq_block_quantize / piq_block_dequantize). */
typedef struct PiqBlockArgs PiqBlockArgs;
typedef void (*PiqBlockQuantizeFn)   (const PiqBlockArgs *a, const void *src, uint64_t first,
                                      size_t n, uint8_t *codes, uint8_t *scales,
                                      int32_t *zero_points);
typedef void (*PiqBlockDequantizeFn) (const PiqBlockArgs *a, const uint8_t *codes,
                                      const uint8_t *scales, const int32_t *zero_points,
                                      uint64_t first, size_t n, void *dst, int add);

/* The float policy's tile of the matrix multiply: for i < mr ≤ 4 and j < nr ≤ 8,
 *   out[i·ldo + j] = Σ_k x[i·ldx + k] · w[j·ldw + k]   (k < n)
 * in one fixed order (docs/matmul.md): product k goes into binary32 lane k mod 16
 * by a fused multiply-add, each lane starting from +0, and the 16 lanes are summed
 * as piq_sum_lanes does (lane i += lane i + h for h = 8, 4, 2, 1); a NaN sum is
 * stored as the default quiet NaN, +0x7fc00000 (piq_mm_canonical). Every table that
 * fills the entry gives the scalar one's bytes; tables without fused multiply-add
 * leave it to the scalar kernel (fmaf). No alignment is assumed. */
typedef void (*PiqMmTileFn)     (const float *x, size_t ldx, const float *w, size_t ldw,
                                 size_t n, size_t mr, size_t nr, float *out, size_t ldo);
/* The float policy's GEMM micro-kernel over one block of k (mm_lanes): the caller
 * blocks k for the caches and carries the 16 lanes of every output across the blocks.
 * The block has kq · 16 elements of k, zeros past the data in both operands, both
 * operands packed by residue:
 *   element k = 16·q + l (l < 16, q < kq) of row i < mr of X   is xp[(l·kq + q)·mr + i],
 *   element k of row j < PIQ_MM_NC of W        is wp[(l·PIQ_MM_NC / 8 + j / 8)·PIQ_MM_WLD (kq)
 *                                                     + 8·q + j mod 8],
 * mr a multiple of 16 (the caller pads X with rows whose outputs it ignores). A pass
 * over one residue l is then an outer product: a vector of X holds lane l of PIQ_W
 * rows, and an element of W is broadcast, the W of consecutive steps 8 floats apart
 * whatever the unit's register tile (8 or 6 rows): each (l, group of 8 rows) is a
 * micro-panel read front to back. PIQ_MM_WLD: a micro-panel's floats and a line more,
 * so that the 16 · PIQ_MM_NC / 8 micro-panels of a block, written together by the
 * packer, do not share L1 sets. With L the 16 binary32 lanes of output (i, j), lane l
 * at lanes[(j·16 + l)·mr + i] (+0 each when @first, else read from there):
 *   L[l] = fma (x_i[16·q + l], w_j[16·q + l], L[l])   for q = 0 … kq − 1
 * stored back, then out[i·ldo + j] = piq_mm_canonical (piq_sum_lanes (L)) for every
 * i < mr and j < PIQ_MM_NC when @out is not NULL. Blocks of k that start at multiples
 * of 16 give mm_tile's bytes (a +0 product of the padding leaves a lane, which is never
 * −0, as it is). No alignment is assumed. */
#define PIQ_MM_NC 48
#define PIQ_MM_WLD(kq) (8 * (size_t) (kq) + 16)
typedef void (*PiqMmLanesFn)    (const float *xp, size_t mr, const float *wp, size_t kq,
                                 float *lanes, int first, float *out, size_t ldo);
/* The float policy's GEMV with the weights decoded in registers (mm_decode_dot): the
 * weights are nr ≤ 8 rows of a quantized [rows, n] tensor, row j's codes from byte
 * codes + j · code_stride (a byte boundary), its scales and zero points from index
 * j · blocks_per_row of `scales` / `zero_points`, element k of a row in block
 * k / a->block of it (a->fixed: a->scale and a->zero_point for all; a->bits 0: ggml's
 * self-contained blocks of 32, their scales inside). Then for i < mr ≤ 4, j < nr,
 *   out[i·ldo + j] = mm_tile's value for x row i and row j decoded exactly as
 *   piq_block_dequantize decodes it (docs/matmul.md),
 * the same bytes in every table. */
typedef struct {
  const PiqBlockArgs *a;
  const uint8_t      *codes;
  size_t              code_stride;
  const uint8_t      *scales;
  const int32_t      *zero_points;
  size_t              blocks_per_row;
} PiqMmWeights;
typedef void (*PiqMmDecodeDotFn) (const PiqMmWeights *w, const float *x, size_t ldx, size_t n,
                                  size_t mr, size_t nr, float *out, size_t ldo);
/* The dynamic-int8 policy's dot products: out[g] = Σ w[k] · x[k] over the k of
 * group g, groups of `group` (1 … 65536) elements from k = 0, the last one shorter
 * when group does not divide n. Exact: |w · x| ≤ 255 · 128, so 65536 terms fit. */
typedef void (*PiqDotGroupsFn)  (const uint8_t *w, const int8_t *x, size_t n, size_t group,
                                 int32_t *out);
/* The same for signed weights, |w| ≤ 128, and x in [−127, 127] (never −128): the
 * contract that lets x86 take 4·PIQ_W products per multiply-add (ggml's sign trick). */
typedef void (*PiqDotGroupsI8Fn) (const int8_t *w, const int8_t *x, size_t n, size_t group,
                                  int32_t *out);
/* The same for 4-bit weights 0 … 15 packed two to a byte in 32-element blocks as
 * ggml's Q4_0 (block b's byte i: element 32b + i low, 32b + i + 16 high), against any
 * x; n and group are multiples of 32. Same type as PiqDotGroupsFn. */
/* The dynamic-int8 policy's activations (docs/matmul.md): one row of k binary32 in
 * groups of `group` elements from element 0 (the last one shorter when group does not
 * divide k). Per group d = amax / 127 and q = nearbyint (x · (1 / d)) clamped to
 * ±127, ties to even (x / d where 1 / d overflows), and Σ q; a group holding a NaN
 * or an infinity gets d = NaN, codes 0 and Σ 0. Writes q[0 … k − 1] and d[g], sum[g]
 * of every group. */
typedef void (*PiqActQuantizeFn) (const float *x, size_t k, size_t group, int8_t *q, float *d,
                                  int32_t *sum);
/* The binary policy's bit counts: x and w hold @nb blocks of @words 64-bit words
 * each, and out[b] = Σ popcount (x[i] XOR w[i]) over the words i of block b (the
 * disagreeing bits; padding bits are 0 in both operands). Exact. */
typedef void (*PiqXnorCountsFn) (const uint64_t *x, const uint64_t *w, size_t nb, size_t words,
                                 uint64_t *out);
/* The binary policy's GEMM micro-kernel: @m rows of X's bits (@nb blocks of @words
 * 64-bit words, rows @ldx words apart) and their binary32 block scales (rows @ldxs
 * apart) against one panel of 8 weight rows interleaved (block b's word t of row r at
 * wp[(b·words + t)·8 + r], its scale at ws[b·8 + r]). For i < m and r < 8, with s = +0
 * in binary64, block by block in order
 *   s = s + ((double) xs[i·ldxs + b] · (double) ws[b·8 + r]) · (double) c
 *   c = min (B, k − b·B) − 2 · popcount (x_b XOR w_b)
 * each operation rounded once (no contraction), then out[i·8 + r] = s. Padding bits are
 * 0 in both operands, k < 2^51: the same binary64 bytes on every table (a NaN's payload
 * may differ). No alignment is assumed. */
typedef void (*PiqXnorGemmFn)   (const uint64_t *x, size_t ldx, const float *xs, size_t ldxs,
                                 size_t m, const uint64_t *wp, const float *ws, size_t nb,
                                 size_t words, size_t B, size_t k, double *out);
/* The int8 GEMM's micro-kernel on packed B: for i < m and j < n,
 *   c[i·ldc + j] = (add ? c[i·ldc + j] : 0) + Σ_{q < kq} Σ_{t < 4} a[i·lda + 4q + t] · B(j, q, t)
 *   B(j, q, t) = b[(j / 16)·ldbp + 64·q + 4·(j mod 16) + t]
 * A unsigned bytes (4·kq readable per row), B signed bytes packed in panels of 16
 * columns ldbp bytes apart, each 64-byte quad holding four consecutive k of its 16
 * columns (a panel's columns past n are read, zero or not, and never stored). The
 * caller keeps every sum within int32 (at most 65536 k per sum; the engine adds
 * DOT_CHUNK at a time into int64). Exact, so every table gives the same bytes. No
 * alignment is assumed. */
typedef void (*PiqGemmU8S8Fn)   (const uint8_t *a, size_t lda, size_t m, const int8_t *b,
                                 size_t ldbp, size_t n, size_t kq, int32_t *c, size_t ldc,
                                 int add);
/* The dynamic-int8 policy's grouped products on panel-packed weights (gemm_groups):
 * the integer sums of every group and the binary64 combination of docs/matmul.md in
 * one kernel, no horizontal sums. The weights are panels of 16 output channels, ldwp
 * bytes apart; panel p's group g starts at w + p·ldwp + g·gbytes and holds
 *   codes   gq quads of 64 bytes (channel j's bytes k = 4q … 4q + 3 of the group at
 *           quad q, bytes 4j … 4j + 3), unsigned; with q4, gq / 2 blocks of 64 bytes
 *           whose low nibbles are quad 2h and high nibbles quad 2h + 1
 *   scales  16 binary16 (f16) or binary32 values, channel order
 *   zps     (zpc) 16 int32 zero points, channel order
 * X is m rows of signed bytes ldx apart, group g at byte g·4·gq of a row (the caller
 * zeroes the padding of a short group; a code is never −128); xd and xz hold, per row
 * (ldg apart) and group, X's binary64 scale and z·Σx (without zpc: z is the weights'
 * one zero point) or Σx (zpc). For i < m, j < n (n ≤ 16 · panels):
 *   I   = Σ_{q, t} u[j][q][t] · x[i][g·4·gq + 4q + t] − (zpc ? zp[j] · xz : xz)   exact
 *   acc = (first ? +0 : acc[i·ldacc + j]);  then per group in order:
 *   acc = acc + ((double) I · (double) scale[j]) · xd[i·ldg + g]
 * then out[i·ldo + j] = (float) acc (a NaN as the default quiet NaN, piq_mm_canonical)
 * when out is not NULL, else acc stored back; acc's rows hold 16·⌈n/16⌉ doubles (the
 * lanes past n are scratch) and are read unless first. The caller keeps |I| and each
 * partial sum below 2^31. Every table gives the scalar one's bytes. No alignment of
 * w or x is assumed. */
typedef struct {
  const uint8_t *w;
  size_t         ldwp, gbytes, gq;
  int            q4, f16, zpc;
} PiqGroupsW;
typedef void (*PiqGemmGroupsFn) (const PiqGroupsW *w, size_t groups, const int8_t *x, size_t ldx,
                                 const double *xd, const int32_t *xz, size_t ldg, size_t m,
                                 size_t n, double *acc, size_t ldacc, int first, float *out,
                                 size_t ldo);

/* Fake quantization of an integer format whose qmin, qmax and zero point binary32
 * holds exactly (|·| ≤ 2^24: the 2- to 16-bit types), f32, bf16 or f16 data
 * (docs/qat.md). Every element is widened exactly to binary32 (x_ft, g_ft), and with
 * rne() rounding ties to even, per element, every operation rounded to binary32:
 *   forward:  qf = zp + rne(x · inv); NaN qf: y = +0, mask 0; qf < qmin: y = (qmin − zp) · s,
 *             qf > qmax: y = (qmax − zp) · s, mask 0; else y = (qf − zp) · s, mask 1
 *   backward: qf = rne(zp + x · inv); below (qf < qmin or NaN), above (qf > qmax), inside:
 *             inside: dx = dy, ds = ((dy · ((qf − zp) · s − x)) · inv) · gf, dz = 0
 *             below/above: dx = dy · 0, ds = (dy · (qmin or qmax − zp)) · gf,
 *                          dz = ((dy · −1) · s) · gf
 * y (dx) is rounded to o_ft (round to nearest even, NaN quiet: piq_store_f). `y`,
 * `mask` and `dx` may be NULL (not written; o_ft is then not read). The backward
 * kernel adds ds and dz, widened to binary64, into lanes[k] and lanes[16 + k],
 * k = (lane0 + i) mod 16 for element i, each lane in increasing i: the fixed order of
 * docs/qat.md, which every table reproduces exactly. No alignment is assumed. */
#define PIQ_QAT_LANES 16
typedef struct {
  float s, inv, gf;      /* scale, 1.0f / scale, grad_factor */
  float zp, lo, hi;      /* zero point, qmin, qmax */
  float lo_zp, hi_zp;    /* qmin − zp, qmax − zp */
  int   x_ft;            /* PIQ_F_F32, PIQ_F_BF16 or PIQ_F_F16: x */
  int   g_ft;            /* the same for dy (backward) */
  int   o_ft;            /* the same for y (forward) or dx (backward) */
  int   stream;          /* y / dx may bypass the caches (large calls): same bytes */
} PiqQatArgs;
typedef void (*PiqQatForwardFn)  (const void *x, size_t n, const PiqQatArgs *a, void *y,
                                  uint8_t *mask);
typedef void (*PiqQatBackwardFn) (const void *x, const void *dy, size_t n, const PiqQatArgs *a,
                                  void *dx, size_t lane0, double *lanes);

/* torch.histc's bin (torch 1.13, the histogram observer): for each f32 x[i] with
 * lo ≤ x ≤ hi, t = ((x − lo) · bins) / (hi − lo), each operation rounded to binary32
 * (no contraction), and idx[i] = trunc (t) when t < bins, else bins − 1 (hi itself,
 * a quotient rounded up to bins, a NaN quotient); idx[i] = bins (dropped) for x
 * outside [lo, hi] or NaN. bins ≤ 2^24, so bins − 1 converts exactly. No alignment
 * is assumed. */
typedef struct {
  float    lo, hi;
  uint32_t bins;
} PiqHistArgs;
typedef void (*PiqHistBinsFn) (const void *x, size_t n, const PiqHistArgs *a, uint32_t *idx);

typedef struct {
  const char *name;      /* "scalar", "avx2", … */
  int         level;     /* PiqSimdLevel value */
  uint32_t    required;  /* PIQ_CPU_* bits the unit was compiled for */

  PiqQuantizeFn   quantize[PIQ_N_FLOAT][PIQ_N_INT][PIQ_N_ROUND];
  PiqDequantizeFn dequantize[PIQ_N_INT][PIQ_N_FLOAT][PIQ_N_OP];
  PiqRequantizeFn requantize[PIQ_N_FLOAT][PIQ_N_ROUND][PIQ_N_OP];
  PiqMinMaxFn     minmax[PIQ_N_FLOAT];
  PiqSumsFn       sums[PIQ_N_FLOAT];
  PiqBlockQuantizeFn   block_quantize;     /* f32 source */
  PiqBlockDequantizeFn block_dequantize;   /* f32 destination */
  PiqMmTileFn     mm_tile;
  PiqMmLanesFn    mm_lanes;
  PiqMmDecodeDotFn mm_decode_dot;
  PiqDotGroupsFn  dot_groups;
  PiqDotGroupsI8Fn dot_groups_i8;
  PiqDotGroupsFn  dot_groups_q4;
  PiqXnorCountsFn xnor_counts;
  PiqXnorGemmFn   xnor_gemm;
  PiqGemmU8S8Fn   gemm_u8s8;
  PiqGemmGroupsFn gemm_groups;
  PiqActQuantizeFn act_quantize;         /* f32 */
  PiqQatForwardFn  qat_forward;            /* f32, bf16, f16 (PiqQatArgs' types) */
  PiqQatBackwardFn qat_backward;
  PiqHistBinsFn    hist_bins;              /* f32 */
} PiqKernelTable;

PIQ_INTERNAL extern const PiqKernelTable piq_kernels_scalar;

/* Every table built into the library, scalar first, in increasing level. */
PIQ_INTERNAL const PiqKernelTable *const *piq_kernel_tables (size_t *n_tables);

/* The best kernel of every entry for this CPU, through GNU ifunc symbols where the
 * toolchain has them, else a table built once. Its name is "ifunc" or "once"; its
 * level field is not meaningful (piq_kernels_merge with no cap tells the level). */
PIQ_INTERNAL const PiqKernelTable *piq_kernels_best (void);

/* Fill @out with the scalar table overlaid by every table this CPU supports whose
 * level is at most @max_level, in increasing level; returns the highest level used. */
PIQ_INTERNAL int piq_kernels_merge (int max_level, uint32_t cpu_features, PiqKernelTable *out);

/* Fill PiqKernelArgs' stochastic keys from a 64-bit seed (SplitMix64). */
PIQ_INTERNAL void piq_hash_keys (uint64_t seed, uint32_t *key0, uint32_t *key1);

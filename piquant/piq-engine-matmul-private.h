/* piq-engine-matmul-private.h: what the matrix-multiply files of the engine share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The packed weights' layout and the conversions at the two ends of a product; the
 * products themselves are in piq-engine-matmul.c (float and dynamic-int8 policies)
 * and piq-engine-matmul-int.c (the int8 GEMM on quantized operands).
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "piq-engine-private.h"
#include "simd/piq-convert-private.h"
#include "simd/piq-formats-private.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Weight rows decoded at a time: 8 rows start every panel on a byte for any code width. */
#define PANEL 8
/* Rows of X per call of the tile kernel (its contract: mr ≤ 4, nr ≤ 8). */
#define TILE_M 4
/* The float policy's GEMM, from FGEMM_MIN_M rows of X on (fused weights included: the
 * fused kernel decodes the weights again for every TILE_M rows): X is packed by residue
 * once per call (mm_lanes' layout, piq-kernels-private.h), FGEMM_MC rows at a time; a
 * work item decodes FGEMM_NC weight rows once, packs them by residue (mm_lanes'
 * micro-panels of 8 rows: one PANEL), and the kernels' mm_lanes multiplies them with
 * FGEMM_MC rows of X at a time, in blocks of FGEMM_KB of k, the 16 lanes of every
 * output carried in scratch between blocks. mm_lanes takes the residues one by one: a
 * block of 2,048 keeps a residue's X (FGEMM_MC · 128 floats, 24 KiB) in L1 while the
 * micro-panels of W (4 KiB each) go by; with blocks of 1,024 the lanes (FGEMM_MC · 16 ·
 * FGEMM_NC floats, 144 KiB, in L2) make twice the passes, and a harness of the kernel
 * measured 79–83 % of the FMA loop on 16 threads of the 16-core host against 91 %.
 * FGEMM_MC: a multiple of 16 (mm_lanes' contract: only the last block of X is padded),
 * here AVX-512's tile. */
#define FGEMM_MIN_M 8
#define FGEMM_NC PIQ_MM_NC
#define FGEMM_KB 2048
#define FGEMM_MC 48
_Static_assert (FGEMM_KB % 16 == 0 && FGEMM_MC % 16 == 0,
                "FGEMM_KB and FGEMM_MC must be multiples of 16");
_Static_assert (PANEL == 8, "a decoded panel is one group of mm_lanes' micro-panels");
/* floats between the rows of X copied to binary32: whole cache lines */
#define XF_LD(k) (((uint64_t) (k) + 15) / 16 * 16)
/* A work item's W packed for mm_lanes, block after block of FGEMM_KB: the block of k0
 * (a multiple of FGEMM_KB) starts FGEMM_WBLOCK (k0) floats in, and the whole takes
 * FGEMM_WP (k) floats (every block's 16 · FGEMM_NC / 8 micro-panels of
 * PIQ_MM_WLD (kq) floats). */
#define FGEMM_PANELS (16 * FGEMM_NC / 8)
#define FGEMM_WBLOCK(k0) ((uint64_t) (k0) * FGEMM_NC + (uint64_t) (k0) / FGEMM_KB * FGEMM_PANELS * 16)
#define FGEMM_WP(k) (FGEMM_WBLOCK (XF_LD (k)) + (XF_LD (k) % FGEMM_KB != 0 ? FGEMM_PANELS * 16 : 0))
/* rows of X packed for mm_lanes: whole multiples of 16 (its contract) */
#define FGEMM_WIDTH(rows) (((uint64_t) (rows) + 15) / 16 * 16)
/* Integer dot products are taken over at most this many elements at a time, so an
 * int32 partial sum cannot overflow; longer groups add partials in 64 bits. */
#define DOT_CHUNK 4096
/* The dynamic-int8 policy on panels (gemm_groups): groups up to GG_MAX_GROUP elements
 * (so no int32 sum can overflow: (255 + 255) · 127 · 16384 < 2^31); a work item is
 * GG_NC rows of W (4 panels) by GG_MC rows of X at a time, the groups of a call to
 * the kernel limited to GG_KC_BYTES of a panel pair, which stays in L1 while the
 * kernel runs over the rows of X (X's block, GG_MC rows of it, in L2). */
#define GG_MAX_GROUP 16384
#define GG_NC 64
#define GG_MC 64
#define GG_KC_BYTES 16384
/* Below this many multiply-adds a call stays on the calling thread. */
#define PARALLEL_MIN_MACS (UINT64_C (1) << 18)

enum { DT_F32 = 0, DT_F64 = 1, DT_BF16 = 2, DT_F16 = 3, DT_INT32 = 25, DT_Q8_0 = 41, DT_Q4_0 = 42 };
enum { GRAN_TENSOR = 0, GRAN_CHANNEL = 1, GRAN_BLOCK = 2 };

struct PiqEnginePacked {
  int      activation;
  uint64_t n, k;
  /* float: the weights as given; double-quantized scales expanded into `owned_scales` */
  PiqEngineQuant q;
  float   *owned_scales;
  /* float, weights the fused GEMV kernel decodes (piq_engine_fused_rows): no panel */
  int      fused;
  PiqBlockArgs fa;
  size_t   f_code_stride, f_blocks_per_row, f_scale_bytes;
  int      f_zero_points;
  /* dynamic int8 */
  uint64_t group, groups;      /* elements per scale along K, groups per row */
  uint8_t *codes;              /* [n][k] code + offset, or (signed_codes) code − zero point */
  int      signed_codes;       /* every code − zero point fits an int8: the zero points are folded */
  int      q4;                 /* 4-bit: code − zero point + 8, two to a byte (Q4_0's layout) */
  size_t   row_bytes;          /* bytes of a row of codes: k, or k / 2 */
  int64_t *sums;               /* [n][groups] Σ stored codes (the int8 GEMM's offsets) */
  float   *scales;             /* [n][groups] */
  int32_t *zps;                /* [n][groups] zero point + offset */
  int      zp_uniform;         /* every zps[] is zp0 (signed codes: 0, 4-bit: 8): a GEMV
                                * leaves the array unread, 4 bytes a group less to stream */
  int32_t  zp0;
  size_t   bytes;
  /* binary (piq-engine-matmul-binary.c): sign bits [n][bnb][bwords], each block from a
   * word and zero-padded, and binary32 scales [n][bnb]; blocks of bblock along K */
  uint64_t *bits;
  float    *bscales;
  uint64_t  bblock, bnb, bwords;
  /* the same, interleaved for the GEMM (xnor_gemm): panels of PANEL rows, each block's
   * word t of the panel's rows side by side ([panel][bnb][bwords][PANEL]), the scales
   * [panel][bnb][PANEL]; rows past n have zero bits and scales */
  uint64_t *bits_p;
  float    *bscales_p;
  /* the int8 GEMM's B (byte codes, one group per row: piq_engine_pack_gemm_b): the
   * stored codes as signed bytes (w, or c − 128 without signed_codes), in panels of 16
   * rows of gemm_kq quads of 4 k (PiqGemmU8S8Fn's layout), zero past n and k */
  int8_t  *gemm_b;
  size_t   gemm_kq, gemm_ldbp;
  /* the dynamic-int8 policy's panels of 16 rows (PiqGroupsW's layout, pack_groups in
   * piq-engine-matmul.c): groups of a multiple of 4 elements, unsigned codes with the
   * one zero point gg_z0 (folded into X's sums) or one per group (gg_zpc) */
  uint8_t *gg;
  size_t   gg_ldwp, gg_gbytes, gg_gq;
  int      gg_f16, gg_zpc;
  int32_t  gg_z0;
};

/* piq-engine-matmul-binary.c: pack binary weights (p->n, p->k set), and the binary
 * policy's product (called by piq_engine_matmul after nothing but its dispatch). */
int piq_engine_binary_pack (const PiqEngine *eng, PiqEnginePacked *p, const PiqEngineQuant *w,
                            PiqEngineError *e) PIQ_INTERNAL;
int piq_engine_matmul_binary (const PiqEngine *eng, const PiqEngineView *x,
                              const PiqEnginePacked *w, const PiqEngineView *bias,
                              const PiqEngineView *y, int add, PiqEngineError *e) PIQ_INTERNAL;

/* Pack the int8 GEMM's B from p->codes where it applies (byte codes, one group per
 * row); 0 with @e set when the memory is missing (piq-engine-matmul-int.c). */
int piq_engine_pack_gemm_b (PiqEnginePacked *p, PiqEngineError *e) PIQ_INTERNAL;
/* D[m][n] = Σ_k ã[m][k] · s[n][k] for A's @m rows of unsigned bytes (lda apart, zero
 * from k to a multiple of 4) and B's packed signed bytes, exact in int64, split over
 * the engine's threads by blocks of rows and columns: each block of D (ldd int64
 * apart) is handed to @epilogue once, on the thread that summed it. */
/* The row stride for A's bytes in piq_engine_gemm_u8s8: k rounded up to 4, and from
 * 1 KiB on to 512 modulo 1024, so the eight rows of A a micro-kernel tile reads side
 * by side (four bytes each per step of k) fall in eight different runs of L1 sets (a
 * 64-set cache: 8 × 8 lines) instead of piling into the same sets next to B's panel
 * as rows 4096 bytes apart did (perf: conflict misses). */
static inline size_t
piq_engine_gemm_lda (uint64_t k)
{
  size_t lda = (size_t) (k + 3) / 4 * 4;

  if (lda < 1024)
    return lda;
  lda = (lda + 63) / 64 * 64;
  return lda + (1024 + 512 - lda % 1024) % 1024;
}
typedef void (*PiqGemmEpilogue) (void *ctx, uint64_t m0, uint64_t m1, uint64_t n0, uint64_t n1,
                                 const int64_t *d, size_t ldd);
int piq_engine_gemm_u8s8 (const PiqEngine *eng, const PiqEnginePacked *b, const uint8_t *au,
                          size_t lda, uint64_t m, PiqGemmEpilogue epilogue, void *ctx,
                          PiqEngineError *e) PIQ_INTERNAL;

/* the engine's own error and allocation helpers (piq-engine.c), by shorter names */
#define failf piq_engine_fail
#define try_alloc piq_engine_alloc

/* @n elements of a float buffer as binary32: f32 copied, bf16 and f16 widened, f64
 * rounded to nearest. */
static inline void
to_f32 (const void *src, int dtype, uint64_t n, float *dst)
{
  for (uint64_t i = 0; i < n; i++)
    {
      if (dtype == DT_F64)
        {
          double d;
          memcpy (&d, (const uint8_t *) src + i * 8, 8);
          dst[i] = piq_f64_to_f32 (d);
        }
      else
        dst[i] = piq_load_f (src, i, dtype);
    }
}

/* @q's codes read as plain integers: per tensor, scale 1, zero point 0, so the
 * library's own decoder gives each code's integer value exactly. */
static inline void
as_plain_codes (PiqEngineQuant *q)
{
  q->f.granularity = GRAN_TENSOR;
  q->f.axis = 0;
  q->f.block_size = 0;
  q->f.scale_dtype = DT_F32;
  q->f.symmetric = 0;
  q->scales = q->zero_points = NULL;
  q->scales_size = q->zero_points_size = 0;
  q->scale = 1.0;
  q->zero_point = 0;
}

/* A quantized input [..., k] of a product: its element count in *n_a and its
 * byte sizes, checked against what the input holds. */
static inline int
check_quant_input (const PiqEngineQuant *a, const uint64_t *a_shape, unsigned a_dims, uint64_t k,
                   uint64_t *n_a, size_t *codes, size_t *scales, size_t *zps, PiqEngineError *e)
{
  if (a_dims < 1 || a_shape[a_dims - 1] != k)
    return piq_engine_fail (e, PIQ_E_SIZE, "the input's rows have %llu elements, the weights "
                            "take %llu", (unsigned long long) (a_dims ? a_shape[a_dims - 1] : 0),
                            (unsigned long long) k);
  if (!piq_engine_check_shape (a_shape, a_dims, n_a, e) ||
      !piq_engine_sizes (&a->f, a_shape, a_dims, codes, scales, zps, e))
    return 0;
  if (a->codes_size < *codes || a->scales_size < *scales || a->zero_points_size < *zps ||
      (*scales && a->scales == NULL) || (*zps && a->zero_points == NULL))
    return piq_engine_fail (e, PIQ_E_SIZE, "the input holds fewer bytes than its shape needs");
  return 1;
}

/* Element j of a float output row: y stored (rounded to the dtype) or added (in
 * binary32, or binary64 for f64). */
static inline void
store_float (uint8_t *row, uint64_t j, float y, int dtype, int add)
{
  if (dtype == DT_F64)
    {
      double d;
      memcpy (&d, row + j * 8, 8);
      d = add ? d + (double) y : (double) y;
      memcpy (row + j * 8, &d, 8);
    }
  else
    piq_store_f (row, j, add ? piq_load_f (row, j, dtype) + y : y, dtype);
}

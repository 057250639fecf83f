/* piq-engine-private.h: the one engine under every entry point
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the kernel layer, so the static benchmark and the pi-quant C99
 * layer run exactly what PiqQuantizer runs. Every operation validates its call once
 * (format, recipe, shapes, buffer sizes, overlap) and then runs it; a failed call
 * returns 0 with a PiqEngineError and has written nothing.
 *
 * Dtypes, granularities, rules and error codes use the numeric values of the public
 * enums (piq-types.h, piq-error.h); piq-quantizer.c asserts that they agree.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "simd/piq-kernels-private.h"

#define PIQ_ENGINE_MAX_DIMS 8

/* PiqError's codes. */
enum {
  PIQ_E_UNSUPPORTED = 0,
  PIQ_E_SIZE,
  PIQ_E_OVERFLOW,
  PIQ_E_INVALID_SCALE,
  PIQ_E_INVALID_ZERO_POINT,
  PIQ_E_NON_FINITE,
  PIQ_E_EMPTY,
  PIQ_E_READ_ONLY,
  PIQ_E_NO_FORMAT,
  PIQ_E_NO_MEMORY,
  PIQ_E_INVALID_VALUE,
  PIQ_E_OVERLAP,
};

typedef struct {
  int  code;             /* PIQ_E_* */
  char message[320];
} PiqEngineError;

/* The dtype table's kinds. */
typedef enum {
  PIQ_KIND_FLOAT,        /* a source of quantization, a destination of dequantization */
  PIQ_KIND_INT,          /* integers: per-tensor kernels of the kernel list */
  PIQ_KIND_CODE,         /* code formats: the block driver (simd/piq-formats.c) */
  PIQ_KIND_SCALE,        /* scale storage only (E8M0) */
} PiqDtypeKind;

/* Options a format may set away from their defaults (PiqDtypeInfo.options). */
enum {
  PIQ_OPT_SATURATE     = 1 << 0,   /* saturate = FALSE: FP8 with float scales */
  PIQ_OPT_HIGH_NIBBLE  = 1 << 1,   /* 4-bit codes */
  PIQ_OPT_DOUBLE_QUANT = 1 << 2,   /* f32 block scales of the table formats */
  PIQ_OPT_E8M0         = 1 << 3,   /* E8M0 scales (MX elements, BFP) */
  PIQ_OPT_FLOAT_SCALES = 1 << 4,   /* f32/f16 per-channel and per-block scales */
  PIQ_OPT_PER_TENSOR   = 1 << 5,   /* per-tensor granularity */
};

/* One row per dtype: every fact about it (see piq-format-table.c). */
typedef struct {
  const char  *name;          /* "uint4" */
  unsigned     bits;          /* storage bits per element (0: self-contained blocks) */
  PiqDtypeKind kind;
  int          is_signed;
  int64_t      min;           /* integer range (quantized types only) */
  uint64_t     max;
  int          kernel_index;  /* PIQ_F_*, PIQ_I_* or PIQ_C_* of simd/ */
  unsigned     block_elems;   /* self-contained blocks (ggml): elements and bytes of one */
  unsigned     block_bytes;
  unsigned     options;       /* PIQ_OPT_* that apply */
  const char  *description;   /* for messages and `piquant info` */
} PiqDtypeInfo;

/* The rows, indexed by dtype (piq-format-table.c); NULL names are holes. */
#define PIQ_DTYPE_TABLE_ROWS 65
extern const PiqDtypeInfo piq_dtype_rows[PIQ_DTYPE_TABLE_ROWS] PIQ_INTERNAL;

/* NULL for a value that is not a dtype. Inline: every checked call asks it several
 * times, and as a call it was 7 % of a small quantize (perf). */
static inline const PiqDtypeInfo *
piq_dtype_info (int dtype)
{
  if (dtype < 0 || dtype >= PIQ_DTYPE_TABLE_ROWS || piq_dtype_rows[dtype].name == NULL)
    return NULL;
  return &piq_dtype_rows[dtype];
}
/* Every row in dtype order: *n rows of the table (NULL names are holes). */
const PiqDtypeInfo *piq_dtype_table (size_t *n) PIQ_INTERNAL;
/* "f32" for a known dtype, else "dtype 99" in @buf (for messages). */
const char *piq_dtype_label (int dtype, char buf[32]) PIQ_INTERNAL;

/* What a quantized tensor's bytes mean (a PiqFormat's properties). */
typedef struct {
  int      dtype;
  int      granularity;      /* PIQ_GRANULARITY_* values: 0 tensor, 1 channel, 2 block */
  int      axis;             /* as given (negative from the end) */
  unsigned block_size;       /* as given (0: the format's default) */
  int      scale_dtype;      /* F32, F16 or E8M0 */
  int      symmetric;
  int      saturate;
  int      high_nibble_first;
  int      double_quant;
} PiqEngineFormat;

/* The named formats of the field (piq-format-table.c): PiqFormat's presets and the
 * benchmark's rows. */
typedef struct {
  const char     *name;
  PiqEngineFormat f;
} PiqEnginePreset;

const PiqEnginePreset *piq_engine_presets (size_t *n) PIQ_INTERNAL;

/* How scales are chosen (a PiqRecipe's properties). */
typedef struct {
  int      rule;             /* PIQ_SCALE_RULE_* values; 7 = the format's own */
  int      include_zero;
  int      stochastic;
  uint64_t seed;             /* 0: a fresh one per call */
  int      has_scale;
  double   scale;
  int      has_zero_point;
  int64_t  zero_point;
  int      calibrated;       /* scale and zero point derived by compute_params with `rule` */
} PiqEngineRecipe;

#define PIQ_ENGINE_RECIPE_DEFAULT { 7, 1, 0, 0, 0, 0.0, 0, 0, 0 }

/* A float or quantized buffer: shape, and rows of the last axis row_stride bytes
 * apart (0: packed). Quantized buffers are always packed. */
typedef struct {
  int          dtype;
  unsigned     n_dims;
  uint64_t     shape[PIQ_ENGINE_MAX_DIMS];
  size_t       row_stride;
  const void  *data;
  size_t       size;         /* bytes readable (writable for a destination) at data */
} PiqEngineView;

/* A quantized tensor's parts: codes, per-channel/per-block scales and int32 zero
 * points, or the per-tensor scale and zero point. */
typedef struct {
  PiqEngineFormat f;
  const void *codes;        size_t codes_size;
  const void *scales;       size_t scales_size;
  const void *zero_points;  size_t zero_points_size;
  double      scale;
  int64_t     zero_point;
} PiqEngineQuant;

typedef struct {
  unsigned               n_threads;   /* 0: every CPU */
  const PiqKernelTable  *kernels;
} PiqEngine;

/* The format's own checks; *out gets the normalized format (axis ≥ 0 needs a shape:
 * use piq_engine_sizes). */
int piq_engine_check_format (const PiqEngineFormat *f, PiqEngineError *e) PIQ_INTERNAL;
/* The format's effective block size (the ggml blocks', the given one, or the default). */
unsigned piq_engine_block_size (const PiqEngineFormat *f) PIQ_INTERNAL;
/* Whether quantized data of @f carries zero points (int32 per channel or block, or the
 * per-tensor one). */
int piq_engine_has_zero_points (const PiqEngineFormat *f) PIQ_INTERNAL;
/* Check a shape (1..8 dims, product fits) and return its element count. */
int piq_engine_check_shape (const uint64_t *shape, unsigned n_dims, uint64_t *n,
                            PiqEngineError *e) PIQ_INTERNAL;
/* Bytes of codes, scales and zero points of @f for @shape. */
int piq_engine_sizes (const PiqEngineFormat *f, const uint64_t *shape, unsigned n_dims,
                      size_t *codes, size_t *scales, size_t *zero_points,
                      PiqEngineError *e) PIQ_INTERNAL;
/* Bytes of @n elements of a dtype's plain layout (floats, integers, codes). */
int piq_engine_dtype_size (int dtype, uint64_t n, size_t *bytes, PiqEngineError *e) PIQ_INTERNAL;

/* Derive a per-tensor scale (and zero point) from @src by the recipe's rule. */
int piq_engine_compute_params (const PiqEngine *eng, const PiqEngineFormat *f,
                               const PiqEngineRecipe *r, const PiqEngineView *src,
                               double *scale, int64_t *zero_point, PiqEngineError *e) PIQ_INTERNAL;

/* Quantize @src into @dst (codes, scales and zero points buffers with their sizes in
 * dst; dst->f is the format). On success dst->scale/zero_point hold the per-tensor
 * parameters used and *seed_used the stochastic seed (0 for nearest). */
int piq_engine_quantize (const PiqEngine *eng, const PiqEngineRecipe *r,
                         const PiqEngineView *src, PiqEngineQuant *dst, uint64_t *seed_used,
                         PiqEngineError *e) PIQ_INTERNAL;

/* Dequantize @src (of @shape) into @dst, overwriting or adding. */
int piq_engine_dequantize (const PiqEngine *eng, const PiqEngineQuant *src,
                           const uint64_t *shape, unsigned n_dims, const PiqEngineView *dst,
                           int add, PiqEngineError *e) PIQ_INTERNAL;

/* Quantize → dequantize in one pass; dst may be src exactly. */
int piq_engine_requantize (const PiqEngine *eng, const PiqEngineFormat *f,
                           const PiqEngineRecipe *r, const PiqEngineView *src,
                           const PiqEngineView *dst, int add, PiqEngineError *e) PIQ_INTERNAL;

/* XNOR/popcount dot product of two binary tensors. */
int piq_engine_binary_dot (const PiqEngineQuant *a, const PiqEngineQuant *b, uint64_t n,
                           double *result, PiqEngineError *e) PIQ_INTERNAL;

/* ---------------------------------------------------------------------------
 * Helpers the engine's other files share (piq-engine.c) */

/* Set @e's code and printf-formatted message; returns 0. */
int piq_engine_fail (PiqEngineError *e, int code, const char *format, ...) PIQ_INTERNAL
  __attribute__((format (printf, 3, 4)));
/* count · size bytes (at least 1), or NULL with PIQ_E_OVERFLOW / PIQ_E_NO_MEMORY. */
void *piq_engine_alloc (size_t count, size_t size, const char *what, PiqEngineError *e)
  PIQ_INTERNAL;
/* The same on a cache line (64 bytes), for the blocks kernels read in 64-byte rows
 * (an AVX-512 vector, an AMX tile's row): glibc's large blocks start 16 bytes past a
 * page, and each such row then spans two lines. Freed with free (). */
void *piq_engine_alloc_aligned (size_t count, size_t size, const char *what, PiqEngineError *e)
  PIQ_INTERNAL;
/* A float view's element count and the bytes from its data to its last row's end. */
int piq_engine_float_view (const PiqEngineView *v, const char *role, uint64_t *n, size_t *span,
                           PiqEngineError *e) PIQ_INTERNAL;
int piq_engine_no_overlap (const void *dst, size_t dst_n, const char *dst_what, const void *src,
                           size_t src_n, const char *src_what, PiqEngineError *e) PIQ_INTERNAL;
/* Rows r0 … of the 2-D [rows, cols] quantized tensor @w as a tensor of their own
 * (codes, scales and zero points from their first byte); r0 · cols · bits must be a
 * multiple of 8. */
int piq_engine_rows_quant (const PiqEngineQuant *w, uint64_t rows, uint64_t cols, uint64_t r0,
                           PiqEngineQuant *out, PiqEngineError *e) PIQ_INTERNAL;
/* Integer weights (≤ 8-bit codes, per tensor, per row or per block along the row):
 * *group, the elements per scale along a row, and when @scales is not NULL, for
 * row r and group b of ⌈cols / group⌉, the scale (binary32, as decoding uses it;
 * NaN for an E8M0 NaN) and zero point, element value = (code − zero point) · scale. */
int piq_engine_int_row_params (const PiqEngineQuant *w, uint64_t rows, uint64_t cols,
                               uint64_t *group, float *scales, int32_t *zero_points,
                               PiqEngineError *e) PIQ_INTERNAL;

/* Whether the rows of the 2-D [rows, cols] quantized tensor @w are weights the fused
 * GEMV kernel (mm_decode_dot) takes: ggml Q4_0 and Q8_0, 4- and 8-bit integers, NF4,
 * bnb FP4, FP4 E2M1 (MXFP4) and FP8, per tensor, per row or per block of a multiple
 * of 16 (or of at least a row), rows starting on a byte, scales not double-quantized.
 * If so, fills @a as decoding uses it (per tensor: a->fixed with the binary32 scale),
 * the bytes of codes per row, the scales (and zero points) per row, and whether
 * decoding reads zero points. */
int piq_engine_fused_rows (const PiqEngineQuant *w, uint64_t rows, uint64_t cols,
                           PiqBlockArgs *a, size_t *code_stride, size_t *blocks_per_row,
                           int *has_zero_points) PIQ_INTERNAL;

/* ---------------------------------------------------------------------------
 * Matrix multiply (piq-engine-matmul.c): Y [M, N] = X [M, K] · Wᵀ + bias */

enum { PIQ_ACT_FLOAT = 0, PIQ_ACT_DYNAMIC_INT8 = 1, PIQ_ACT_BINARY = 2 };

typedef struct PiqEnginePacked PiqEnginePacked;

/* Whether weights of @f multiply under @activation: the one table (docs/matmul.md). */
int piq_engine_matmul_supports (const PiqEngineFormat *f, int activation, PiqEngineError *e)
  PIQ_INTERNAL;
/* Prepare the 2-D [N, K] quantized tensor @w. The float policy keeps pointers into
 * @w's codes (and zero points): they must outlive the result; the dynamic-int8 one
 * copies what it needs. */
PiqEnginePacked *piq_engine_pack (const PiqEngine *eng, const PiqEngineQuant *w,
                                  const uint64_t *shape, unsigned n_dims, int activation,
                                  PiqEngineError *e) PIQ_INTERNAL;
void     piq_engine_packed_free (PiqEnginePacked *p) PIQ_INTERNAL;
/* N, K and the bytes the packed form holds besides the borrowed ones. */
void     piq_engine_packed_info (const PiqEnginePacked *p, uint64_t *n, uint64_t *k,
                                 size_t *bytes) PIQ_INTERNAL;
/* Y = X · Wᵀ (+ bias), overwriting or adding into @y. X [.., K] and Y [.., N] are
 * float views with the same leading dimensions; @bias, a float view of N elements,
 * may be NULL. */
int piq_engine_matmul (const PiqEngine *eng, const PiqEngineView *x, const PiqEnginePacked *w,
                       const PiqEngineView *bias, const PiqEngineView *y, int add,
                       PiqEngineError *e) PIQ_INTERNAL;

/* The int8 GEMM's output: the exact int32 sums, floats (sa · sb · sum + bias) or
 * codes requantized with a scale and zero point (nearest, ties to even). */
enum { PIQ_MM_OUT_INT32 = 0, PIQ_MM_OUT_FLOAT = 1, PIQ_MM_OUT_CODES = 2 };
typedef struct {
  int           kind;
  PiqEngineView view;        /* int32 (dtype INT32), float, or codes (code_dtype) */
  int           code_dtype;  /* uint8 or int8 */
  double        scale;       /* of the codes */
  int64_t       zero_point;
  int           add;         /* int32 and float: add to the output */
} PiqEngineMatmulOut;

/* Y = A · Wᵀ (+ bias) into the float view @y for a binary A [..., K] (per block of
 * the weights' block size along K, per row, or per tensor) and weights packed for the
 * binary policy (piq-engine-matmul-binary.c). */
int piq_engine_matmul_binary_quantized (const PiqEngine *eng, const PiqEngineQuant *a,
                                        const uint64_t *a_shape, unsigned a_dims,
                                        const PiqEnginePacked *w, const PiqEngineView *bias,
                                        const PiqEngineView *y, int add, PiqEngineError *e)
  PIQ_INTERNAL;

/* Y = A · Bᵀ on quantized operands: A uint8/int8 [..., K] per tensor or per row, B
 * packed for dynamic int8 from int8/uint8 [N, K] per tensor or per output channel. */
int piq_engine_matmul_int (const PiqEngine *eng, const PiqEngineQuant *a, const uint64_t *a_shape,
                           unsigned a_dims, const PiqEnginePacked *b, const PiqEngineView *bias,
                           PiqEngineMatmulOut *out, PiqEngineError *e) PIQ_INTERNAL;

/* Y = decode (A) · Wᵀ (+ bias) under the float policy (piq-engine-matmul-quant.c): A
 * quantized in any format whose rows decode on their own, [..., K], W packed for float
 * activations; Y [..., N] a float view, overwritten or added to. Equal, byte for byte,
 * to piq_engine_matmul of A dequantized to binary32. */
int piq_engine_matmul_decoded (const PiqEngine *eng, const PiqEngineQuant *a,
                               const uint64_t *a_shape, unsigned a_dims,
                               const PiqEnginePacked *w, const PiqEngineView *bias,
                               const PiqEngineView *y, int add, PiqEngineError *e) PIQ_INTERNAL;
/* Y = A · Wᵀ (+ bias) on block integers (piq-engine-matmul-quant.c): A signed integer
 * codes per block without zero points (MXINT8, int8/int4 blocks), W packed for dynamic
 * int8 with groups of A's block size; the dynamic-int8 policy's arithmetic with A's
 * own codes and scales, exact per block. */
int piq_engine_matmul_blocks (const PiqEngine *eng, const PiqEngineQuant *a,
                              const uint64_t *a_shape, unsigned a_dims,
                              const PiqEnginePacked *w, const PiqEngineView *bias,
                              const PiqEngineView *y, int add, PiqEngineError *e) PIQ_INTERNAL;


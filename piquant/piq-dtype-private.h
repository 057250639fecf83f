/* piq-dtype-private.h: the dtype table
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "piq-types.h"

G_BEGIN_DECLS

typedef enum {
  PIQ_KIND_FLOAT,        /* a source of quantization, a destination of dequantization */
  PIQ_KIND_INT,          /* integers: per-tensor kernels of the kernel list */
  PIQ_KIND_CODE,         /* code formats: the block driver (simd/piq-formats.c) */
  PIQ_KIND_SCALE,        /* scale storage only (E8M0) */
} PiqDtypeKind;

typedef struct {
  const char *name;      /* "uint4" */
  guint       bits;      /* storage bits per element (0: self-contained blocks) */
  gboolean    is_float;
  gboolean    is_signed;
  gint64      min;       /* integer range (quantized types only) */
  guint64     max;
  int         kernel_index;  /* PIQ_F_*, PIQ_I_* or PIQ_C_* of simd/ */
  PiqDtypeKind kind;
  guint       block_elems;   /* self-contained blocks (ggml): elements and bytes of one */
  guint       block_bytes;
} PiqDtypeInfo;

/* NULL for a value that is not a PiqDtype. */
const PiqDtypeInfo *piq_dtype_info (PiqDtype dtype);

/* "f32" for a known dtype, "dtype 99" (static buffer per thread) otherwise: for messages. */
const char *piq_dtype_describe (PiqDtype dtype);

G_END_DECLS

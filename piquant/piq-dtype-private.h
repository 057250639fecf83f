/* piq-dtype-private.h: the dtype table
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "piq-types.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;      /* "uint4" */
  guint       bits;      /* storage bits per element */
  gboolean    is_float;
  gboolean    is_signed;
  gint64      min;       /* integer range (quantized types only) */
  guint64     max;
  int         kernel_index;  /* PIQ_F_* or PIQ_I_* of simd/piq-kernel-list.h */
} PiqDtypeInfo;

/* NULL for a value that is not a PiqDtype. */
const PiqDtypeInfo *piq_dtype_info (PiqDtype dtype);

/* "f32" for a known dtype, "dtype 99" (static buffer per thread) otherwise: for messages. */
const char *piq_dtype_describe (PiqDtype dtype);

G_END_DECLS

/* piq-npy.h: the .npy header, read and written as numpy does
 *
 * The tool's file commands read an array's header with piq_npy_read_header(),
 * then its data straight into their own buffer, and write an array as the
 * bytes of piq_npy_format_header() followed by the data. Only what piquant
 * can use is accepted: little-endian f32, f64, f16 and uint16 (bfloat16 bits)
 * in C order; everything else is refused with a message that says why.
 *
 * Format reference: numpy/lib/format.py (NEP 1). Versions 1.0, 2.0 and 3.0
 * are read; 1.0 is written (2.0 when the header would not fit in 64 KiB).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <stdio.h>

#include <glib.h>
#include <piquant/piquant.h>

G_BEGIN_DECLS

/* numpy 2 allows 64 dimensions (numpy 1: 32). */
#define PIQ_NPY_MAX_DIMS 64

/* The magic string every .npy file starts with. */
#define PIQ_NPY_MAGIC     "\x93NUMPY"
#define PIQ_NPY_MAGIC_LEN 6

#define PIQ_NPY_ERROR (piq_npy_error_quark ())

typedef enum {
  PIQ_NPY_ERROR_FORMAT,         /* not a .npy file, or a malformed header */
  PIQ_NPY_ERROR_UNSUPPORTED,    /* a valid .npy file piquant cannot use */
  PIQ_NPY_ERROR_IO,             /* reading failed or the file ended early */
} PiqNpyError;

typedef struct {
  guint8   major;               /* format version */
  guint8   minor;
  char     descr[32];           /* as in the file, e.g. "<f4" */
  PiqDtype dtype;               /* F32, F64, F16, or UINT16 for "<u2" */
  guint    n_dims;
  guint64  shape[PIQ_NPY_MAX_DIMS];
  guint64  n_elements;          /* product of the shape; 1 for a 0-d array */
  gsize    data_offset;         /* where the data starts, from the file start */
} PiqNpyHeader;

GQuark      piq_npy_error_quark   (void);

/* TRUE when @bytes (at least PIQ_NPY_MAGIC_LEN of them) start a .npy file. */
gboolean    piq_npy_has_magic     (const guint8  *bytes,
                                   gsize          n_bytes);

/* Reads the preamble and header from the start of @file, leaving the file
 * position at the first data byte. @name is used in messages only. */
gboolean    piq_npy_read_header   (FILE          *file,
                                   const char    *name,
                                   PiqNpyHeader  *header,
                                   GError       **error);

/* Parses the header's Python dict literal ("{'descr': '<f4', ...}"). */
gboolean    piq_npy_parse_dict    (const char    *text,
                                   gsize          length,
                                   PiqNpyHeader  *header,
                                   GError       **error);

/* The descr that stores @dtype: "<f4", "<f8", "<f2", and "<u2" for bf16
 * (numpy has no bfloat16); NULL for other dtypes. */
const char *piq_npy_descr_for_dtype (PiqDtype    dtype);

/* Magic, version, header length and header of an array of @descr and @shape,
 * byte for byte what numpy.save() writes, padded so that the data that
 * follows starts at a multiple of 64 bytes; *length gets its size. */
guint8 *    piq_npy_format_header (const char    *descr,
                                   const guint64 *shape,
                                   guint          n_dims,
                                   gsize         *length);

G_END_DECLS

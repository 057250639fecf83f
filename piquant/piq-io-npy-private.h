/* piq-io-npy-private.h: the .npy header, read and written as numpy does
 *
 * The library's file functions (piq-io.c) and the tool's file commands read
 * an array's header with piq_npy_read_header_from() (or
 * piq_npy_read_header() from a FILE), then its data straight into their own
 * buffer, and write an array as the bytes of piq_npy_format_header() followed
 * by the data. Only what piquant can use is accepted: little-endian f32, f64,
 * f16 and the integers of 8 to 64 bits (uint16 also carries bfloat16 bits) in
 * C order; everything else is refused with a message that says why. Errors
 * are PIQ_ERROR_FILE_FORMAT (not a .npy file, malformed, or ending early),
 * PIQ_ERROR_UNSUPPORTED (valid but unusable) or the reader's own.
 *
 * Format reference: numpy/lib/format.py (NEP 1). Versions 1.0, 2.0 and 3.0
 * are read; 1.0 is written (2.0 when the header would not fit in 64 KiB).
 *
 * Not installed; built into the library and into the tool (libpiqio.la).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <stdio.h>

#include <gio/gio.h>
#include <piquant/piquant.h>

G_BEGIN_DECLS

/* numpy 2 allows 64 dimensions (numpy 1: 32). */
#define PIQ_NPY_MAX_DIMS 64

/* The magic string every .npy file starts with. */
#define PIQ_NPY_MAGIC     "\x93NUMPY"
#define PIQ_NPY_MAGIC_LEN 6

/* Reads up to @n bytes into @buffer, setting *n_read; fewer only at the
 * end of the data. FALSE, with @error set, when reading fails. */
typedef gboolean (*PiqReadFunc) (void    *source,
                                 void    *buffer,
                                 gsize    n,
                                 gsize   *n_read,
                                 GError **error);

typedef struct {
  guint8   major;               /* format version */
  guint8   minor;
  char     descr[32];           /* as in the file, e.g. "<f4" */
  PiqDtype dtype;               /* F32, F64, F16 or an integer ("<u2": UINT16) */
  guint    n_dims;
  guint64  shape[PIQ_NPY_MAX_DIMS];
  guint64  n_elements;          /* product of the shape; 1 for a 0-d array */
  gsize    data_offset;         /* where the data starts, from the file start */
} PiqNpyHeader;

/* TRUE when @bytes (at least PIQ_NPY_MAGIC_LEN of them) start a .npy file. */
gboolean    piq_npy_has_magic     (const guint8  *bytes,
                                   gsize          n_bytes);

/* Reads the preamble and header through @read from the start of @source,
 * leaving it at the first data byte. @name is used in messages only. */
gboolean    piq_npy_read_header_from (PiqReadFunc    read,
                                      void          *source,
                                      const char    *name,
                                      PiqNpyHeader  *header,
                                      GError       **error);

/* The same from @file. */
gboolean    piq_npy_read_header   (FILE          *file,
                                   const char    *name,
                                   PiqNpyHeader  *header,
                                   GError       **error);

/* Parses the header's Python dict literal ("{'descr': '<f4', ...}"). */
gboolean    piq_npy_parse_dict    (const char    *text,
                                   gsize          length,
                                   PiqNpyHeader  *header,
                                   GError       **error);

/* The descr that stores @dtype: "<f4", "<f8", "<f2", "<u2" for bf16 (numpy
 * has no bfloat16) and the integers' ("|u1", "<i4", …); NULL for the
 * packed and quantized dtypes. */
const char *piq_npy_descr_for_dtype (PiqDtype    dtype);

/* Magic, version, header length and header of an array of @descr and @shape,
 * byte for byte what numpy.save() writes, padded so that the data that
 * follows starts at a multiple of 64 bytes; *length gets its size. */
guint8 *    piq_npy_format_header (const char    *descr,
                                   const guint64 *shape,
                                   guint          n_dims,
                                   gsize         *length);

G_END_DECLS

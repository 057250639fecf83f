/* piq-io-piqt-private.h: the .piqt container of quantized tensors, written and read
 *
 * The library (piq-io.c) and the tool write a quantized tensor as the bytes of
 * piq_container_format_header() followed by its codes, scales and zero points.
 * It reads one in three steps that do no I/O themselves, so that a fuzzer
 * reaches every check from memory (tests/fuzz/fuzz-piqt.c):
 * piq_container_parse_prefix() on the first PIQ_CONTAINER_PREFIX_LEN bytes
 * (magic, version, header length), piq_container_parse_header() on the header
 * text that follows (keys, format, sizes), then piq_container_check_file_size()
 * against the file's size where it is known. What the data then holds is the
 * library's to check (piq_quantizer_dequantize_raw()).
 *
 * piq-io-piqt.c describes the layout and every key. Versions 1 and 2 are
 * read; 2 is written.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>
#include <piquant/piquant.h>

#include "piq-io-npy-private.h"

G_BEGIN_DECLS

/* Magic, format version (u32), header length (u32). */
#define PIQ_CONTAINER_MAGIC      "PIQT"
#define PIQ_CONTAINER_MAGIC_LEN  4
#define PIQ_CONTAINER_PREFIX_LEN 12

/* The version written; versions 1 to this one are read. */
#define PIQ_CONTAINER_VERSION 2

/* The data starts at a multiple of this, from the file's start. */
#define PIQ_CONTAINER_ALIGN 64

/* Longer header texts are refused unread: the tool writes a few hundred
 * bytes. */
#define PIQ_CONTAINER_MAX_HEADER_LEN (1u << 20)

/* What the header records. The writer fills the fields above "the format's
 * keys" (format included); the reader fills all but round_mode, seed and
 * scale_rule, which are informative, and builds format from the keys. */
typedef struct {
  guint        version;         /* set when read */
  PiqFormat   *format;          /* written from; when read, built from the keys */
  guint64      n_elements;
  guint        n_dims;
  guint64      shape[PIQ_NPY_MAX_DIMS];
  guint        library_n_dims;  /* set when read: the shape the data decodes as */
  guint64      library_shape[PIQ_MAX_DIMS];
  double       scale;
  gint64       zero_point;
  PiqRoundMode round_mode;
  guint64      seed;
  const char  *scale_rule;      /* a PiqScaleRule nick, or "explicit" */
  gboolean     include_zero;
  PiqDtype     source_dtype;
  gsize        data_bytes;
  gsize        data_offset;     /* set when read */
  gsize        scales_bytes;
  gsize        zero_points_bytes;
  /* the format's keys, as read */
  PiqDtype     dtype;
  PiqGranularity granularity;
  int          axis;
  guint        block_size;
  PiqDtype     scale_dtype;
  gboolean     symmetric;
  gboolean     saturate;
  gboolean     high_nibble_first;
  gboolean     double_quant;
  PiqScaleRule scale_rule_value; /* version 1: scale_rule, parsed */
} PiqContainer;

/* Sets @error to "NAME: message" in PIQ_ERROR with @code; always FALSE, so
 * that a check can return it. The file formats' one way to fail. */
gboolean piq_io_error                 (GError       **error,
                                       int            code,
                                       const char    *name,
                                       const char    *format,
                                       ...) G_GNUC_PRINTF (4, 5);

/* Drops the format; the rest is plain data. */
void     piq_container_clear          (PiqContainer  *container);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (PiqContainer, piq_container_clear)

/* The shape the library works on for an array of @shape: the array's own,
 * [1] for a 0-d array, the leading extents merged into one past
 * PIQ_MAX_DIMS (the writer must refuse that many for per-channel data).
 * Writer and reader share it so that the data decodes as it was encoded. */
void     piq_container_library_shape  (const guint64 *shape,
                                       guint          n_dims,
                                       guint64       *out,
                                       guint         *out_n_dims);

/* Prefix and header text of @container (version 2), padded so that the data
 * that follows starts at a multiple of PIQ_CONTAINER_ALIGN; *length gets
 * their size. Needs format, source_dtype and the sizes set; a NULL
 * scale_rule leaves out the recipe's informative keys. */
guint8 * piq_container_format_header  (const PiqContainer *container,
                                       gsize         *length);

/* Resets @container (which must be zero-initialised or cleared) and checks
 * the magic, version and header length of @prefix; *text_len gets the length
 * of the header text that follows it. @name is used in messages only. */
gboolean piq_container_parse_prefix   (const guint8   prefix[PIQ_CONTAINER_PREFIX_LEN],
                                       const char    *name,
                                       PiqContainer  *container,
                                       guint32       *text_len,
                                       GError       **error);

/* Parses the @text_len bytes of header text at @text (no terminator needed)
 * as @container->version lays them out, builds the format they describe and
 * checks the announced sizes against it; sets data_offset as if @text
 * followed a prefix. */
gboolean piq_container_parse_header   (const char    *text,
                                       gsize          text_len,
                                       const char    *name,
                                       PiqContainer  *container,
                                       GError       **error);

/* The bytes a parsed container's file has: header, codes, scales and zero
 * points; an error where the sum overflows. */
gboolean piq_container_get_file_size  (const PiqContainer *container,
                                       const char    *name,
                                       guint64       *size,
                                       GError       **error);

/* piq_container_get_file_size() against the @file_size a file has: nothing
 * may be missing and nothing may follow. */
gboolean piq_container_check_file_size (const PiqContainer *container,
                                        const char    *name,
                                        guint64        file_size,
                                        GError       **error);

G_END_DECLS

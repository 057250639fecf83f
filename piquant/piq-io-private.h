/* piq-io-private.h: what the file formats of piq-io*.c share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>

#include "piq-io-npy-private.h"

G_BEGIN_DECLS

/* Writes a whole file's bytes to @stream from @a and @b. */
typedef gboolean (*PiqIoWriteFunc) (gpointer        a,
                                    gpointer        b,
                                    GOutputStream  *stream,
                                    GCancellable   *cancellable,
                                    GError        **error);

/* Runs @write into a new temporary file beside @file and renames it over
 * @file once complete; on any failure the temporary file is removed and
 * @file is left as it was. */
gboolean piq_io_replace_file (GFile           *file,
                              PiqIoWriteFunc   write,
                              gpointer         a,
                              gpointer         b,
                              GCancellable    *cancellable,
                              GError         **error);

/* Reads exactly @n bytes of @what through @read into new memory, or fails
 * with PIQ_ERROR_FILE_FORMAT (the data ends early) or PIQ_ERROR_NO_MEMORY.
 * Unless @size_checked (the file's size was checked against @n before),
 * memory grows with what actually arrives, so that a header announcing more
 * than the stream holds costs no more than the stream. */
GBytes * piq_io_read_bytes   (PiqReadFunc      read,
                              void            *source,
                              gsize            n,
                              gboolean         size_checked,
                              const char      *name,
                              const char      *what,
                              GError         **error);

/* Opens @file for reading; *name gets its name for messages, *size its size
 * when it is a regular file (*size_known says whether). */
GFileInputStream * piq_io_open_file (GFile         *file,
                                     char         **name,
                                     gboolean      *size_known,
                                     guint64       *size,
                                     GCancellable  *cancellable,
                                     GError       **error);

G_END_DECLS

/* piq-io-private.h: what the file formats of piq-io*.c share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>

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

G_END_DECLS

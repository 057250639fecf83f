/* piquant-tool.h: what the commands of the piquant tool share
 *
 * Laid out like GLib's gio tool: piquant.c holds main, the command table and
 * the help; each command lives in its own piquant-<command>.c with its options
 * and help, over the helpers of piquant-tool.c declared here.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <stdio.h>
#include <sys/types.h>

#include <glib.h>
#include <piquant/piquant.h>

#include "piq-io-piqt-private.h"

G_BEGIN_DECLS

/* The exit statuses; piquant.c's opening comment says when each applies. */
enum {
  EXIT_OK      = 0,
  EXIT_RUNTIME = 1,
  EXIT_USAGE   = 2,
};

typedef struct _Command Command;

struct _Command {
  const char *name;
  const char *arguments;        /* positional arguments for --help, or NULL */
  guint       max_arguments;
  const char *summary;
  int (*run) (const Command *command, int argc, char **argv);
  const char *description;      /* after the options in --help, or NULL */
};

/* The commands, one file each. */
int cmd_info       (const Command *command, int argc, char **argv);
int cmd_demo       (const Command *command, int argc, char **argv);
int cmd_bench      (const Command *command, int argc, char **argv);
int cmd_quantize   (const Command *command, int argc, char **argv);
int cmd_dequantize (const Command *command, int argc, char **argv);
int cmd_inspect    (const Command *command, int argc, char **argv);

/* ---- errors and options (piquant-tool.c) ---- */

int          usage_error           (const char *who, const char *format, ...) G_GNUC_PRINTF (2, 3);
int          runtime_error         (const char *who, const GError *error);
GQuark       usage_quark           (void);
int          exit_for_error        (const char *who, const GError *error);
const char  *enum_nick             (GType type, int value);
gboolean     parse_command_options (const Command  *command,
                                    GOptionGroup   *group,
                                    int            *argc,
                                    char         ***argv);
gboolean     parse_unsigned_option (const char  *option_name,
                                    const char  *value,
                                    guint64      min,
                                    guint64      max,
                                    guint64     *out,
                                    GError     **error);
gboolean     parse_enum_option     (GType        type,
                                    gboolean   (*accept) (int value),
                                    const char  *option_name,
                                    const char  *value,
                                    int         *out,
                                    GError     **error);
gboolean     accept_quantized      (int value);
gboolean     accept_float          (int value);

/* ---- progress ---- */

/* One line on stderr, redrawn in place, only when stderr is a terminal:
 * "piquant quantize: [1/4] reading in.npy  [#####.......]  41%  112/270 MB".
 * Steps without a byte count (a single library call) show their name alone. */
typedef struct {
  gboolean  enabled;
  const char *who;
  guint     step;
  guint     n_steps;
  char     *label;
  guint64   done;
  guint64   total;
  gint64    last_draw;
  gsize     last_len;
} Progress;

void progress_init    (Progress *progress, const char *who, gboolean wanted, guint64 input_bytes,
                       guint n_steps);
void progress_begin   (Progress *progress, guint64 total, const char *format, ...) G_GNUC_PRINTF (3, 4);
void progress_advance (Progress *progress, guint64 bytes);
void progress_finish  (Progress *progress);

/* ---- buffers and files ---- */

void    *buffer_alloc (gsize size, const char *what, GError **error);
void     buffer_free  (void *p);
typedef void *PiqBufferPtr;
G_DEFINE_AUTO_CLEANUP_FREE_FUNC (PiqBufferPtr, buffer_free, NULL)

gboolean check_little_endian (GError **error);
gboolean file_error          (GError **error, const char *name, const char *format, ...) G_GNUC_PRINTF (3, 4);
void     set_io_error        (GError **error, int saved_errno, const char *verb, const char *name);

/* An input file and what is known of its size. */
typedef struct {
  const char *name;
  FILE       *file;
  gboolean    regular;
  guint64     size;             /* of a regular file */
  dev_t       dev;              /* which file it is (input_is_output) */
  ino_t       ino;
} Input;

/* An output file: written under a temporary name beside it and renamed into
 * place once complete, so that a failure never leaves half a file under the
 * name asked for. Devices and pipes (/dev/stdout) are written directly. */
typedef struct {
  const char *name;
  char       *tmp_name;
  FILE       *file;
} Output;

gboolean input_open      (Input *input, const char *name, GError **error);
gboolean input_is_output (const Input *input, const char *output_name, GError **error);
void     input_close     (Input *input);
gboolean input_read      (Input *input, void *buffer, gsize size, Progress *progress, GError **error);

gboolean output_open   (Output *output, const char *name, GError **error);
gboolean output_is_direct (const Output *output);
gboolean output_write  (Output *output, const void *data, gsize size, Progress *progress,
                        GError **error);
gboolean output_commit (Output *output, GError **error);
/* Writes @st to @output (already open) and commits it, or aborts it. */
gboolean output_safetensors (Output *output, PiqSafetensors *st, GError **error);
/* TRUE when @input (regular, at its start) is named *.safetensors or starts
 * like one: an 8-byte little-endian header length, then '{'. Rewinds it. */
gboolean looks_like_safetensors (Input *input);
void     output_abort  (Output *output);

gboolean container_read_header (Input *input, PiqContainer *container, char **header_text,
                                GError **error);
char    *format_shape          (const guint64 *shape, guint n_dims);

/* The one line quantize and dequantize print on success (without --quiet),
 * built before the progress line is cleared and printed after. */
typedef struct {
  char     *line;
  gboolean  to_stderr;
} Summary;

void summary_set         (Summary *summary, const Output *output, const char *input_name,
                          const char *input_what, const char *output_what, guint64 output_bytes);
void summary_finish      (Summary *summary, gboolean print);

/* What convert_safetensors() does to one tensor: a new tensor for one it
 * converts, a new reference to @t for one it keeps as it is, or NULL with
 * @error set. */
typedef PiqTensor * (*TensorConvertFunc) (PiqTensor *t, gpointer data, GError **error);

/* Reads the safetensors file @input_name, converts every tensor with
 * @convert, copies the metadata and writes @output_name atomically; the
 * summary says "@n_converted @what". @label names the converting step in
 * the progress line. */
gboolean convert_safetensors (const char        *input_name,
                              const char        *output_name,
                              TensorConvertFunc  convert,
                              gpointer           data,
                              Progress          *progress,
                              gboolean           show_progress,
                              const char        *label,
                              const char        *what,
                              Summary           *summary,
                              GError           **error);

/* ---- option values shared by quantize and dequantize ---- */

typedef enum {
  FILE_FORMAT_AUTO,
  FILE_FORMAT_NPY,
  FILE_FORMAT_RAW,
} FileFormat;

gboolean parse_format_value (const char *option_name, const char *value, FileFormat *format,
                             GError **error);
gboolean parse_file_threads (const char *option_name, const char *value, guint *n_threads,
                             GError **error);
gboolean has_npy_suffix     (const char *name);
gboolean check_two_files    (int argc, char **argv);

G_END_DECLS

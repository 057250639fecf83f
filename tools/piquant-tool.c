/* piquant-tool.c: what the commands of the piquant tool share
 *
 * Errors and exit statuses, option parsing, the progress line, the input and
 * output files (written atomically, removed on SIGINT, SIGTERM and SIGHUP) and
 * the container header.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <gio/gunixoutputstream.h>

#include "piquant-tool.h"

/* ---- helpers shared by the commands ---- */

/* One line on stderr that names the problem and where to look for help. */
int
usage_error (const char *who, const char *format, ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  g_printerr ("%s: %s (see '%s --help')\n", who, message, who);
  return EXIT_USAGE;
}

int
runtime_error (const char *who, const GError *error)
{
  g_printerr ("%s: %s\n", who, error->message);
  return EXIT_RUNTIME;
}

/* The nick of an enum value ("avx2", "stochastic"): the names users type and
 * read. The class reference is kept on purpose: the nick points into it. */
const char *
enum_nick (GType type, int value)
{
  GEnumClass *klass = g_type_class_ref (type);
  GEnumValue *enum_value = g_enum_get_value (klass, value);

  return enum_value != NULL ? enum_value->value_nick : "unknown";
}

/* Parses the options of @command (its GOptionGroup becomes the context's main
 * group and is consumed); what remains in @argv after the command name are its
 * positional arguments. FALSE once the one-line error has been printed;
 * `--help` prints the command's help and exits from inside GLib. */
gboolean
parse_command_options (const Command  *command,
                       GOptionGroup   *group,
                       int            *argc,
                       char         ***argv)
{
  g_autofree char *who = g_strconcat ("piquant ", command->name, NULL);
  g_autoptr(GOptionContext) context = g_option_context_new (command->arguments);
  g_autoptr(GError) error = NULL;

  /* The usage line of --help starts with the program name. */
  g_set_prgname (who);
  g_option_context_set_summary (context, command->summary);
  if (command->description != NULL)
    g_option_context_set_description (context, command->description);
  g_option_context_set_main_group (context, group);

  if (!g_option_context_parse (context, argc, argv, &error))
    {
      usage_error (who, "%s", error->message);
      return FALSE;
    }
  if ((guint) *argc > 1 + command->max_arguments)
    {
      usage_error (who, "unexpected argument '%s'", (*argv)[1 + command->max_arguments]);
      return FALSE;
    }
  return TRUE;
}

/* An unsigned option value in [min, max], with a message that names the
 * option, the value and the accepted range. */
gboolean
parse_unsigned_option (const char  *option_name,
                       const char  *value,
                       guint64      min,
                       guint64      max,
                       guint64     *out,
                       GError     **error)
{
  guint64 number;

  if (!g_ascii_string_to_unsigned (value, 10, 0, G_MAXUINT64, &number, NULL))
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "%s needs a whole number from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
                 ", not '%s'", option_name, min, max, value);
  else if (number < min || number > max)
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                 "%s must be from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT ", not %s",
                 option_name, min, max, value);
  else
    {
      *out = number;
      return TRUE;
    }
  return FALSE;
}

/* ---- files: what quantize and dequantize share ---- */

/* Files are read and written in pieces of this size, to move the progress bar. */
#define IO_CHUNK (4u << 20)

/* Below this many input bytes the work takes too little time for a bar. */
#define PROGRESS_MIN_BYTES     (4u << 20)
#define PROGRESS_INTERVAL_USEC 100000
#define PROGRESS_BAR_WIDTH     24

#define FILE_MAX_THREADS 1024

/* Errors in what the user typed, found only once a file has been looked at
 * (raw input without --input-dtype, say): they exit with EXIT_USAGE. */
GQuark
usage_quark (void)
{
  return g_quark_from_static_string ("piquant-usage-error");
}

int
exit_for_error (const char *who, const GError *error)
{
  if (error->domain == usage_quark ())
    return usage_error (who, "%s", error->message);
  return runtime_error (who, error);
}

gboolean
check_little_endian (GError **error)
{
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN)
    return TRUE;
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
               "this host is big-endian; .npy and .piqt files are read and written "
               "only on little-endian hosts");
  return FALSE;
}

/* A file that cannot be used, named in the message. Always FALSE. */
gboolean
file_error (GError **error, const char *name, const char *format, ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: %s", name, message);
  return FALSE;
}

/* -- progress -- */

void
progress_init (Progress *progress, const char *who, gboolean wanted, guint64 input_bytes,
               guint n_steps)
{
  memset (progress, 0, sizeof *progress);
  progress->who = who;
  progress->n_steps = n_steps;
  progress->enabled = wanted && input_bytes >= PROGRESS_MIN_BYTES && isatty (STDERR_FILENO);
}

static void
progress_draw (Progress *progress, gboolean force)
{
  g_autoptr(GString) line = NULL;
  gint64 now;

  if (!progress->enabled)
    return;
  now = g_get_monotonic_time ();
  if (!force && now - progress->last_draw < PROGRESS_INTERVAL_USEC)
    return;
  progress->last_draw = now;

  line = g_string_new (NULL);
  g_string_append_printf (line, "%s: [%u/%u] %s", progress->who, progress->step,
                          progress->n_steps, progress->label);
  if (progress->total > 0)
    {
      guint filled = (guint) (progress->done * PROGRESS_BAR_WIDTH / progress->total);

      g_string_append (line, "  [");
      for (guint i = 0; i < PROGRESS_BAR_WIDTH; i++)
        g_string_append_c (line, i < filled ? '#' : '.');
      g_string_append_printf (line, "] %3u%%  %.0f/%.0f MB",
                              (guint) (progress->done * 100 / progress->total),
                              progress->done / 1e6, progress->total / 1e6);
    }
  else
    g_string_append (line, " ...");
  /* Blank out what is left of a longer previous line. */
  for (gsize n = g_utf8_strlen (line->str, -1); n < progress->last_len; n++)
    g_string_append_c (line, ' ');
  progress->last_len = g_utf8_strlen (line->str, -1);
  fprintf (stderr, "\r%s", line->str);
  fflush (stderr);
}

void
progress_begin (Progress *progress, guint64 total, const char *format, ...)
{
  va_list args;

  progress->step++;
  progress->done = 0;
  progress->total = total;
  g_free (progress->label);
  va_start (args, format);
  progress->label = g_strdup_vprintf (format, args);
  va_end (args);
  progress_draw (progress, TRUE);
}

void
progress_advance (Progress *progress, guint64 bytes)
{
  progress->done += bytes;
  progress_draw (progress, progress->done == progress->total);
}

/* Clears the line, so that what follows (an error, the shell prompt) starts
 * on a clean one. */
void
progress_finish (Progress *progress)
{
  if (progress->enabled && progress->last_len > 0)
    fprintf (stderr, "\r%*s\r", (int) progress->last_len, "");
  fflush (stderr);
  g_clear_pointer (&progress->label, g_free);
  progress->last_len = 0;
}

/* -- buffers and files -- */

/* 64-byte aligned like the library's own tensors, rounded up to whole cache
 * lines; unlike g_aligned_alloc() a failure is an error, not an abort, since
 * files may be large. */
void *
buffer_alloc (gsize size, const char *what, GError **error)
{
  void *p = NULL;
  gsize rounded = (MAX (size, 1) + 63) & ~(gsize) 63;

  if (size > G_MAXSIZE - 63 || posix_memalign (&p, 64, rounded) != 0)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
                   "cannot allocate %" G_GSIZE_FORMAT " bytes for %s", size, what);
      return NULL;
    }
  /* The packed formats keep the unused bits of a partial last byte zero. */
  memset ((guint8 *) p + rounded - 64, 0, 64);
  return p;
}

void
buffer_free (void *p)
{
  free (p);
}

/* "cannot read in.npy: Permission denied" */
void
set_io_error (GError **error, int saved_errno, const char *verb, const char *name)
{
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
               "cannot %s %s: %s", verb, name, g_strerror (saved_errno));
}

gboolean
input_open (Input *input, const char *name, GError **error)
{
  GStatBuf st;

  memset (input, 0, sizeof *input);
  input->name = name;
  input->file = g_fopen (name, "rb");
  if (input->file == NULL)
    {
      set_io_error (error, errno, "open", name);
      return FALSE;
    }
  if (fstat (fileno (input->file), &st) != 0)
    {
      set_io_error (error, errno, "read", name);
      return FALSE;
    }
  if (S_ISDIR (st.st_mode))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR, "%s is a directory", name);
      return FALSE;
    }
  input->regular = S_ISREG (st.st_mode);
  input->size = input->regular ? (guint64) st.st_size : 0;
  input->dev = st.st_dev;
  input->ino = st.st_ino;
  return TRUE;
}

/* Refuses an output that is the input file itself (the same name, a link to it, a
 * hard link): the output is renamed over its name once complete, so the input would
 * be replaced. Checked before anything is written. */
gboolean
input_is_output (const Input *input, const char *output_name, GError **error)
{
  GStatBuf st;

  if (input->regular && g_stat (output_name, &st) == 0 && S_ISREG (st.st_mode) &&
      st.st_dev == input->dev && st.st_ino == input->ino)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                   "%s is the input file %s: give another output name", output_name,
                   input->name);
      return TRUE;
    }
  return FALSE;
}

void
input_close (Input *input)
{
  if (input->file != NULL)
    fclose (input->file);
  input->file = NULL;
}

/* Reads exactly @size bytes in IO_CHUNK pieces, moving @progress. */
gboolean
input_read (Input *input, void *buffer, gsize size, Progress *progress, GError **error)
{
  guint8 *p = buffer;

  while (size > 0)
    {
      gsize chunk = MIN (size, IO_CHUNK);
      gsize got = fread (p, 1, chunk, input->file);

      if (got < chunk)
        {
          if (ferror (input->file))
            set_io_error (error, errno, "read", input->name);
          else
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                         "%s is too short: it ends %" G_GSIZE_FORMAT " bytes before the end "
                         "of its data", input->name, size - got);
          return FALSE;
        }
      p += chunk;
      size -= chunk;
      progress_advance (progress, chunk);
    }
  return TRUE;
}

/* The temporary file being written, removed if SIGINT, SIGTERM or SIGHUP ends the
 * program before it is renamed into place (unlink is async-signal-safe); the signal
 * then takes its default action. */
static char *volatile signal_tmp_name;
static struct sigaction saved_actions[3];
static const int cleanup_signals[3] = { SIGINT, SIGTERM, SIGHUP };

static void
on_cleanup_signal (int sig)
{
  char *name = signal_tmp_name;

  if (name != NULL)
    unlink (name);
  signal (sig, SIG_DFL);
  raise (sig);
}

/* Install the handlers (@tmp_name NULL: remove them). They are installed before the
 * temporary file exists and the name is published right after it does: a signal can be
 * delivered to any thread (OpenMP's workers do not block it as the main thread does),
 * so the handler must already be in place when the file appears. */
static void
cleanup_on_signals (gboolean install)
{
  static gboolean installed;
  struct sigaction action;

  if (install && !installed)
    {
      memset (&action, 0, sizeof action);
      action.sa_handler = on_cleanup_signal;
      sigemptyset (&action.sa_mask);
      for (guint i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
        {
          /* a signal ignored on entry (nohup, a background job's SIGINT) stays ignored */
          sigaction (cleanup_signals[i], &action, &saved_actions[i]);
          if (saved_actions[i].sa_handler == SIG_IGN)
            sigaction (cleanup_signals[i], &saved_actions[i], NULL);
        }
      installed = TRUE;
    }
  else if (!install && installed)
    {
      signal_tmp_name = NULL;
      for (guint i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
        sigaction (cleanup_signals[i], &saved_actions[i], NULL);
      installed = FALSE;
    }
}

gboolean
output_open (Output *output, const char *name, GError **error)
{
  GStatBuf st;

  memset (output, 0, sizeof *output);
  output->name = name;
  if (g_stat (name, &st) == 0 && !S_ISREG (st.st_mode))
    {
      if (S_ISDIR (st.st_mode))
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR, "%s is a directory", name);
          return FALSE;
        }
      output->file = g_fopen (name, "wb");
    }
  else
    {
      int fd;
      sigset_t block, saved_mask;

      /* the handlers are in place before the file exists (any thread may take a
       * process signal); the main thread takes none until the name is published */
      sigemptyset (&block);
      for (guint i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
        sigaddset (&block, cleanup_signals[i]);
      sigprocmask (SIG_BLOCK, &block, &saved_mask);
      cleanup_on_signals (TRUE);
      output->tmp_name = g_strconcat (name, ".XXXXXX", NULL);
      /* published before the file exists: mkstemp writes each candidate name into this
       * buffer before it creates the file, so whenever the file exists the handler
       * sees its name (a worker thread may take the signal at any instruction) */
      signal_tmp_name = output->tmp_name;
      fd = g_mkstemp_full (output->tmp_name, O_WRONLY, 0666);
      if (fd >= 0)
        {
          output->file = fdopen (fd, "wb");
          if (output->file == NULL)
            {
              int saved_errno = errno;

              close (fd);
              g_unlink (output->tmp_name);
              errno = saved_errno;
            }
        }
      if (output->file == NULL)
        {
          cleanup_on_signals (FALSE);
          g_clear_pointer (&output->tmp_name, g_free);
        }
      sigprocmask (SIG_SETMASK, &saved_mask, NULL);
    }
  if (output->file == NULL)
    {
      set_io_error (error, errno, "create", name);
      return FALSE;
    }
  return TRUE;
}

/* Whether @output is written directly (a device or a pipe such as
 * /dev/stdout) rather than under a temporary name. */
gboolean
output_is_direct (const Output *output)
{
  return output->tmp_name == NULL;
}

gboolean
output_write (Output *output, const void *data, gsize size, Progress *progress, GError **error)
{
  const guint8 *p = data;

  while (size > 0)
    {
      gsize chunk = MIN (size, IO_CHUNK);

      if (fwrite (p, 1, chunk, output->file) != chunk)
        {
          set_io_error (error, errno, "write", output->name);
          return FALSE;
        }
      p += chunk;
      size -= chunk;
      if (progress != NULL)
        progress_advance (progress, chunk);
    }
  return TRUE;
}

gboolean
output_commit (Output *output, GError **error)
{
  FILE *file = g_steal_pointer (&output->file);
  gboolean ok = fflush (file) == 0 && !ferror (file);
  int saved_errno = errno;

  if (fclose (file) != 0 && ok)
    {
      ok = FALSE;
      saved_errno = errno;
    }
  if (ok && output->tmp_name != NULL && g_rename (output->tmp_name, output->name) != 0)
    {
      ok = FALSE;
      saved_errno = errno;
    }
  if (!ok)
    {
      if (output->tmp_name != NULL)
        g_unlink (output->tmp_name);
      set_io_error (error, saved_errno, "write", output->name);
    }
  cleanup_on_signals (FALSE);
  g_clear_pointer (&output->tmp_name, g_free);
  return ok;
}

/* Drops an output that failed: the temporary file goes, the name asked for
 * is left as it was. */
void
output_abort (Output *output)
{
  if (output->file != NULL)
    fclose (output->file);
  output->file = NULL;
  if (output->tmp_name != NULL)
    g_unlink (output->tmp_name);
  cleanup_on_signals (FALSE);
  g_clear_pointer (&output->tmp_name, g_free);
}

/* -- the container (piquant/piq-io-piqt.c) -- */

/* Reads the prefix and header of a container from the start of @input,
 * leaving the file position at the data; piq-io-piqt.c parses them, builds
 * the format and checks the sizes. @header_text (nullable) receives the
 * header text as it is in the file, NUL-terminated, for `piquant inspect`. */
gboolean
container_read_header (Input *input, PiqContainer *container, char **header_text,
                       GError **error)
{
  guint8 prefix[PIQ_CONTAINER_PREFIX_LEN];
  guint32 text_len;
  g_autofree char *text = NULL;
  guint64 total;

  if (fread (prefix, 1, sizeof prefix, input->file) != sizeof prefix)
    {
      if (ferror (input->file))
        {
          set_io_error (error, errno, "read", input->name);
          return FALSE;
        }
      return file_error (error, input->name, "too short for a piquant container");
    }
  if (!piq_container_parse_prefix (prefix, input->name, container, &text_len, error))
    return FALSE;

  text = g_malloc0 ((gsize) text_len + 1);
  if (fread (text, 1, text_len, input->file) != text_len)
    {
      if (ferror (input->file))
        {
          set_io_error (error, errno, "read", input->name);
          return FALSE;
        }
      return file_error (error, input->name, "the file ends inside the container header");
    }
  if (!piq_container_parse_header (text, text_len, input->name, container, error))
    return FALSE;
  /* Of a pipe, only the sum is checked: the reads find a short file. */
  if (input->regular
      ? !piq_container_check_file_size (container, input->name, input->size, error)
      : !piq_container_get_file_size (container, input->name, &total, error))
    return FALSE;
  if (header_text != NULL)
    *header_text = g_steal_pointer (&text);
  return TRUE;
}

gboolean
output_safetensors (Output *output, PiqSafetensors *st, GError **error)
{
  g_autoptr(GOutputStream) stream = NULL;

  /* Nothing of the FILE's buffer is pending: the stream writes its fd. */
  if (fflush (output->file) != 0)
    {
      set_io_error (error, errno, "write", output->name);
      output_abort (output);
      return FALSE;
    }
  stream = g_unix_output_stream_new (fileno (output->file), FALSE);
  if (!piq_safetensors_save_to_stream (st, stream, NULL, error))
    {
      g_prefix_error (error, "%s: ", output->name);
      output_abort (output);
      return FALSE;
    }
  return output_commit (output, error);
}

gboolean
convert_safetensors (const char        *input_name,
                     const char        *output_name,
                     TensorConvertFunc  convert,
                     gpointer           data,
                     Progress          *progress,
                     gboolean           show_progress,
                     const char        *label,
                     const char        *what,
                     Summary           *summary,
                     GError           **error)
{
  g_autoptr(GFile) file = g_file_new_for_path (input_name);
  g_autoptr(PiqSafetensors) in = NULL;
  g_autoptr(PiqSafetensors) out = piq_safetensors_new ();
  g_auto(GStrv) names = NULL;
  g_auto(GStrv) keys = NULL;
  guint n_converted = 0, n_names;
  guint64 out_bytes = 0;
  Output output;

  progress_init (progress, g_get_prgname (), show_progress, 0, 3);
  progress_begin (progress, 0, "reading %s", input_name);
  in = piq_safetensors_new_from_file (file, NULL, error);
  if (in == NULL)
    return FALSE;
  names = piq_safetensors_get_names (in);
  n_names = g_strv_length (names);
  progress_begin (progress, n_names, "%s", label);
  for (char **n = names; *n != NULL; n++)
    {
      PiqTensor *t = piq_safetensors_get_tensor (in, *n);
      g_autoptr(PiqTensor) c = convert (t, data, error);

      if (c == NULL)
        {
          g_prefix_error (error, "%s: tensor '%s': ", input_name, *n);
          return FALSE;
        }
      progress_advance (progress, 1);
      n_converted += c != t;
      out_bytes += piq_tensor_get_n_bytes (c);
      piq_safetensors_set_tensor (out, *n, c);
    }
  keys = piq_safetensors_get_metadata_keys (in);
  for (char **k = keys; *k != NULL; k++)
    piq_safetensors_set_metadata (out, *k, piq_safetensors_get_metadata (in, *k));

  progress_begin (progress, 0, "writing %s", output_name);
  if (!output_open (&output, output_name, error) || !output_safetensors (&output, out, error))
    return FALSE;
  {
    g_autofree char *input_what = g_strdup_printf ("safetensors, %u tensors", n_names);
    g_autofree char *output_what = g_strdup_printf ("%u %s", n_converted, what);

    summary_set (summary, &output, input_name, input_what, output_what, out_bytes);
  }
  return TRUE;
}

gboolean
looks_like_safetensors (Input *input)
{
  guint8 start[9];
  gboolean yes;

  if (g_str_has_suffix (input->name, ".safetensors"))
    return TRUE;
  if (!input->regular)
    return FALSE;
  yes = fread (start, 1, sizeof start, input->file) == sizeof start && start[8] == '{';
  rewind (input->file);
  return yes;
}

/* "w.npy (f32, [4096, 11008]) → w.piqt: nf4 per block of 64 (…), 22.5 MiB".
 * It goes to stdout, or to stderr when OUTPUT is written directly: then
 * stdout may be the output itself. */
void
summary_set (Summary     *summary,
             const Output *output,
             const char  *input_name,
             const char  *input_what,
             const char  *output_what,
             guint64      output_bytes)
{
  g_autofree char *size = g_format_size_full (output_bytes, G_FORMAT_SIZE_IEC_UNITS);

  g_free (summary->line);
  summary->line = g_strdup_printf ("%s (%s) \u2192 %s: %s, %s", input_name, input_what,
                                   output->name, output_what, size);
  summary->to_stderr = output_is_direct (output);
}

/* Prints the line when @print (the command succeeded, without --quiet) and
 * frees it. */
void
summary_finish (Summary *summary, gboolean print)
{
  if (summary->line == NULL || !print)
    ;
  else if (summary->to_stderr)
    g_printerr ("%s\n", summary->line);
  else
    g_print ("%s\n", summary->line);
  g_clear_pointer (&summary->line, g_free);
}

/* "[4096, 11008]", as numpy prints a shape ("[]" for a 0-d array). */
char *
format_shape (const guint64 *shape, guint n_dims)
{
  GString *s = g_string_new ("[");

  for (guint i = 0; i < n_dims; i++)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT, i > 0 ? ", " : "", shape[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* -- option values shared by both commands -- */

/* A nick of enum @type for which @accept (when given) holds; the message
 * lists the accepted nicks. */
gboolean
parse_enum_option (GType        type,
                   gboolean   (*accept) (int value),
                   const char  *option_name,
                   const char  *value,
                   int         *out,
                   GError     **error)
{
  g_autoptr(GEnumClass) klass = g_type_class_ref (type);
  GEnumValue *found = g_enum_get_value_by_nick (klass, value);
  g_autoptr(GString) names = NULL;

  if (found != NULL && (accept == NULL || accept (found->value)))
    {
      *out = found->value;
      return TRUE;
    }
  names = g_string_new (NULL);
  for (guint i = 0; i < klass->n_values; i++)
    if (accept == NULL || accept (klass->values[i].value))
      g_string_append_printf (names, "%s%s", names->len > 0 ? ", " : "",
                              klass->values[i].value_nick);
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "%s must be one of %s, not '%s'", option_name, names->str, value);
  return FALSE;
}

gboolean
accept_quantized (int value)
{
  return piq_dtype_is_quantized (value);
}

gboolean
accept_float (int value)
{
  return piq_dtype_is_float (value);
}

gboolean
parse_format_value (const char *option_name, const char *value, FileFormat *format, GError **error)
{
  if (strcmp (value, "npy") == 0)
    *format = FILE_FORMAT_NPY;
  else if (strcmp (value, "raw") == 0)
    *format = FILE_FORMAT_RAW;
  else
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be npy or raw, not '%s'", option_name, value);
      return FALSE;
    }
  return TRUE;
}

gboolean
parse_file_threads (const char *option_name, const char *value, guint *n_threads, GError **error)
{
  guint64 n;

  if (!parse_unsigned_option (option_name, value, 0, FILE_MAX_THREADS, &n, error))
    return FALSE;
  *n_threads = (guint) n;
  return TRUE;
}

gboolean
has_npy_suffix (const char *name)
{
  gsize len = strlen (name);

  return len >= 4 && g_ascii_strcasecmp (name + len - 4, ".npy") == 0;
}

/* Both commands take exactly INPUT and OUTPUT. */
gboolean
check_two_files (int argc, char **argv)
{
  if (argc == 3)
    return TRUE;
  usage_error (g_get_prgname (), argc < 2 ? "INPUT and OUTPUT are missing" : "OUTPUT is missing");
  return FALSE;
}

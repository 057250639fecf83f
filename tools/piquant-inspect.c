/* piquant-inspect.c: `piquant inspect`: the header of a .npy, .piqt or safetensors file
 *
 * The file's first bytes choose the reader from inspect_formats[]; each reader
 * prints what the file's header says, through the library's own parsers (the
 * ones quantize and dequantize use), and checks that the data it announces is
 * there. A new format is one more entry with its detect and print functions.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "piquant-tool.h"
#include "piq-io-npy-private.h"
#include "piq-io-piqt-private.h"

/* Enough of a file's start to tell the formats apart. */
#define INSPECT_MAGIC_LEN 16

typedef struct {
  const char *name;
  /* TRUE when the @n_bytes at @bytes (fewer than INSPECT_MAGIC_LEN only for a
   * shorter file) start a file of this format */
  gboolean (*detect) (const guint8 *bytes, gsize n_bytes);
  /* Prints the header of @input, read from its start. */
  gboolean (*print) (Input *input, GError **error);
} InspectFormat;

/* The labels line up in one column. */
static void
print_field (const char *label, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
print_field (const char *label, const char *format, ...)
{
  g_autofree char *value = NULL;
  va_list args;

  va_start (args, format);
  value = g_strdup_vprintf (format, args);
  va_end (args);
  g_print ("%-13s %s\n", label, value);
}

/* -- .npy -- */

static gboolean
detect_npy (const guint8 *bytes, gsize n_bytes)
{
  return n_bytes >= PIQ_NPY_MAGIC_LEN && piq_npy_has_magic (bytes, n_bytes);
}

static gboolean
print_npy (Input *input, GError **error)
{
  PiqNpyHeader header;
  g_autoptr(GError) local_error = NULL;
  g_autofree char *shape = NULL;
  gsize data_bytes;

  if (!piq_npy_read_header (input->file, input->name, &header, error))
    return FALSE;
  if (!piq_dtype_get_size_for_n (header.dtype, header.n_elements, &data_bytes, &local_error))
    return file_error (error, input->name, "%s", local_error->message);
  /* As quantize reads it: bytes after the array are allowed (numpy.save()
   * can append arrays to one file), fewer than announced are not. */
  if (input->regular && input->size - header.data_offset < data_bytes)
    return file_error (error, input->name, "the file is too short: its header announces %"
                       G_GSIZE_FORMAT " bytes of data, %" G_GUINT64_FORMAT " follow the header",
                       data_bytes, input->size - header.data_offset);

  shape = format_shape (header.shape, header.n_dims);
  print_field ("file:", "%s", input->name);
  print_field ("format:", "npy %u.%u", header.major, header.minor);
  print_field ("descr:", "'%s' (%s)", header.descr, piq_dtype_get_name (header.dtype));
  print_field ("shape:", "%s", shape);
  print_field ("elements:", "%" G_GUINT64_FORMAT, header.n_elements);
  print_field ("data offset:", "%" G_GSIZE_FORMAT, header.data_offset);
  print_field ("data bytes:", "%" G_GSIZE_FORMAT, data_bytes);
  return TRUE;
}

/* -- .piqt -- */

static gboolean
detect_piqt (const guint8 *bytes, gsize n_bytes)
{
  return n_bytes >= PIQ_CONTAINER_MAGIC_LEN &&
         memcmp (bytes, PIQ_CONTAINER_MAGIC, PIQ_CONTAINER_MAGIC_LEN) == 0;
}

/* The parsed header first, then every key of the header text as the file
 * has it (piq-io-piqt.c describes them). */
static gboolean
print_piqt (Input *input, GError **error)
{
  g_auto(PiqContainer) container = { 0 };
  g_autofree char *text = NULL;
  g_autofree char *shape = NULL;
  g_autofree char *format = NULL;
  g_auto(GStrv) lines = NULL;

  if (!container_read_header (input, &container, &text, error))
    return FALSE;

  shape = format_shape (container.shape, container.n_dims);
  format = piq_format_to_string (container.format);
  print_field ("file:", "%s", input->name);
  print_field ("format:", "piqt %u", container.version);
  print_field ("quantized:", "%s", format);
  print_field ("source dtype:", "%s", piq_dtype_get_name (container.source_dtype));
  print_field ("shape:", "%s", shape);
  print_field ("elements:", "%" G_GUINT64_FORMAT, container.n_elements);
  print_field ("data offset:", "%" G_GSIZE_FORMAT, container.data_offset);
  print_field ("data bytes:", "%" G_GSIZE_FORMAT " codes, %" G_GSIZE_FORMAT " scales, %"
               G_GSIZE_FORMAT " zero points", container.data_bytes, container.scales_bytes,
               container.zero_points_bytes);
  g_print ("header keys:\n");
  /* The text is padded with blanks up to the aligned data. */
  lines = g_strsplit (text, "\n", -1);
  for (char **line = lines; *line != NULL; line++)
    if (strchr (*line, '=') != NULL)
      g_print ("  %s\n", *line);
  return TRUE;
}

/* -- safetensors -- */

/* An 8-byte little-endian header length, then the JSON header's '{'. */
static gboolean
detect_safetensors (const guint8 *bytes, gsize n_bytes)
{
  return n_bytes > 8 && bytes[8] == '{';
}

/* Read whole by the library, which checks every entry against the data; then
 * one line per tensor (quantized ones with their format) and the metadata. */
static gboolean
print_safetensors (Input *input, GError **error)
{
  g_autoptr(GFile) file = g_file_new_for_path (input->name);
  g_autoptr(PiqSafetensors) st = piq_safetensors_new_from_file (file, NULL, error);
  g_auto(GStrv) names = NULL;
  g_auto(GStrv) keys = NULL;

  if (st == NULL)
    return FALSE;
  names = piq_safetensors_get_names (st);
  keys = piq_safetensors_get_metadata_keys (st);
  print_field ("file:", "%s", input->name);
  print_field ("format:", "safetensors");
  print_field ("tensors:", "%u", g_strv_length (names));
  for (char **n = names; *n != NULL; n++)
    {
      PiqTensor *t = piq_safetensors_get_tensor (st, *n);
      PiqFormat *f = piq_tensor_get_format (t);
      guint n_dims;
      const guint64 *shape = piq_tensor_get_shape (t, &n_dims);
      g_autofree char *shape_text = format_shape (shape, n_dims);
      g_autofree char *what = f != NULL ? piq_format_to_string (f)
                                        : g_strdup (piq_dtype_get_name (piq_tensor_get_dtype (t)));

      g_print ("  %s: %s %s, %" G_GSIZE_FORMAT " bytes\n", *n, what, shape_text,
               piq_tensor_get_n_bytes (t));
    }
  if (keys[0] != NULL)
    g_print ("metadata:\n");
  for (char **k = keys; *k != NULL; k++)
    g_print ("  %s=%s\n", *k, piq_safetensors_get_metadata (st, *k));
  return TRUE;
}

static const InspectFormat inspect_formats[] = {
  { "npy",         detect_npy,         print_npy },
  { "piqt",        detect_piqt,        print_piqt },
  { "safetensors", detect_safetensors, print_safetensors },
};

static gboolean
run_inspect (const char *name, GError **error)
{
  guint8 start[INSPECT_MAGIC_LEN];
  Input input = { 0 };
  gsize got;
  gboolean ok = FALSE;

  if (!check_little_endian (error) || !input_open (&input, name, error))
    {
      input_close (&input);
      return FALSE;
    }
  got = fread (start, 1, sizeof start, input.file);
  if (ferror (input.file))
    set_io_error (error, errno, "read", name);
  /* The reader starts again from the first byte. */
  else if (fseek (input.file, 0, SEEK_SET) != 0)
    file_error (error, name, "inspect reads a file from its start twice; "
                "this one cannot be read again (a pipe?)");
  else
    {
      gsize i;

      for (i = 0; i < G_N_ELEMENTS (inspect_formats); i++)
        if (inspect_formats[i].detect (start, got))
          break;
      if (i < G_N_ELEMENTS (inspect_formats))
        ok = inspect_formats[i].print (&input, error);
      else if (got == 0)
        file_error (error, name, "the file is empty");
      else
        file_error (error, name, "not a .npy, .piqt or safetensors file (it starts with "
                    "neither magic)");
    }
  input_close (&input);
  return ok;
}

int
cmd_inspect (const Command *command, int argc, char **argv)
{
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, NULL, NULL);
  g_autoptr(GError) error = NULL;

  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;
  if (argc < 2)
    return usage_error (g_get_prgname (), "FILE is missing");
  if (!run_inspect (argv[1], &error))
    return exit_for_error (g_get_prgname (), error);
  return EXIT_OK;
}

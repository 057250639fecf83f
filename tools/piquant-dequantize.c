/* piquant-dequantize.c: `piquant dequantize`: a .piqt container into a .npy or raw float file
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include "piquant-tool.h"
#include "piq-io-npy-private.h"
#include "piq-io-piqt-private.h"

/* ---- piquant dequantize ---- */

typedef struct {
  gboolean   have_output_dtype;
  PiqDtype   output_dtype;
  FileFormat format;
  guint      n_threads;
  gboolean   no_progress;
  gboolean   quiet;
} DequantizeOptions;

static gboolean
parse_d_output_dtype (const char *option_name, const char *value, gpointer data, GError **error)
{
  DequantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_DTYPE, accept_float, option_name, value, &v, error))
    return FALSE;
  options->output_dtype = v;
  options->have_output_dtype = TRUE;
  return TRUE;
}

static gboolean
parse_d_format (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_format_value (option_name, value, &((DequantizeOptions *) data)->format, error);
}

static gboolean
parse_d_threads (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_file_threads (option_name, value, &((DequantizeOptions *) data)->n_threads, error);
}

static const GOptionEntry dequantize_entries[] = {
  { "output-dtype", 'o', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_d_output_dtype,
    "Element type of OUTPUT: f32, f64, f16 or bf16 (default: the type INPUT was quantized from; "
    "a .npy stores bf16 as uint16)", "TYPE" },
  { "format", 'f', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_d_format,
    "npy or raw (default: npy when OUTPUT ends in .npy, raw otherwise)", "FORMAT" },
  { "threads", 't', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_d_threads,
    "Number of threads (default 0 = one per processor)", "T" },
  { "no-progress", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Show no progress bar, even on a terminal", NULL },
  { "quiet", 'q', G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Print no summary line on success", NULL },
  G_OPTION_ENTRY_NULL
};

typedef struct {
  PiqQuantizer *quantizer;
  PiqDtype      dtype;
} DequantizeJob;

static PiqTensor *
dequantize_tensor (PiqTensor *t, gpointer data, GError **error)
{
  DequantizeJob *job = data;

  if (piq_tensor_get_format (t) == NULL)
    return g_object_ref (t);
  return piq_quantizer_dequantize_new (job->quantizer, t, job->dtype, error);
}

/* A safetensors file: every quantized tensor dequantized to the output dtype
 * (f32 unless --output-dtype says otherwise: a tensor does not record what it
 * was quantized from), the rest and the metadata as they are, into a
 * safetensors file. */
static gboolean
run_dequantize_safetensors (const DequantizeOptions *options,
                            const char              *input_name,
                            const char              *output_name,
                            Progress                *progress,
                            Summary                 *summary,
                            GError                 **error)
{
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  DequantizeJob job = { quantizer, options->have_output_dtype ? options->output_dtype
                                                              : PIQ_DTYPE_F32 };
  g_autofree char *label = g_strdup_printf ("dequantizing to %s", piq_dtype_get_name (job.dtype));
  g_autofree char *what = g_strdup_printf ("quantized tensors to %s",
                                           piq_dtype_get_name (job.dtype));

  if (options->format != FILE_FORMAT_AUTO)
    {
      g_set_error (error, usage_quark (), 0, "%s is a safetensors file and is written as one: "
                   "--format does not apply", input_name);
      return FALSE;
    }
  piq_quantizer_set_n_threads (quantizer, options->n_threads);
  return convert_safetensors (input_name, output_name, dequantize_tensor, &job, progress,
                              !options->no_progress, label, what, summary, error);
}

static gboolean
run_dequantize (const DequantizeOptions *options,
                const char              *input_name,
                const char              *output_name,
                Progress                *progress,
                Summary                 *summary,
                GError                 **error)
{
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  g_auto(PiqBufferPtr) src_data = NULL;
  g_auto(PiqBufferPtr) dst_data = NULL;
  g_autofree guint8 *npy_header = NULL;
  g_autofree guint8 *scales = NULL;
  g_autofree guint8 *zero_points = NULL;
  g_auto(PiqContainer) container = { 0 };
  Input input = { 0 };
  Output output;
  PiqDtype dtype;
  FileFormat format = options->format;
  gsize dst_bytes, npy_header_len = 0;
  gboolean ok;

  if (!check_little_endian (error) || !input_open (&input, input_name, error) ||
      input_is_output (&input, output_name, error))
    {
      input_close (&input);
      return FALSE;
    }
  if (looks_like_safetensors (&input))
    {
      input_close (&input);
      return run_dequantize_safetensors (options, input_name, output_name, progress, summary,
                                         error);
    }
  ok = container_read_header (&input, &container, NULL, error);
  dtype = options->have_output_dtype ? options->output_dtype : container.source_dtype;
  if (ok)
    ok = piq_dtype_get_size_for_n (dtype, container.n_elements, &dst_bytes, error);
  if (ok)
    {
      progress_init (progress, g_get_prgname (), !options->no_progress, container.data_bytes, 3);
      src_data = buffer_alloc (container.data_bytes, input_name, error);
      ok = src_data != NULL;
    }
  if (ok)
    {
      progress_begin (progress, (guint64) container.data_bytes + container.scales_bytes +
                      container.zero_points_bytes, "reading %s", input_name);
      ok = input_read (&input, src_data, container.data_bytes, progress, error);
    }
  if (ok && container.scales_bytes > 0)
    {
      scales = g_try_malloc (container.scales_bytes);
      ok = scales != NULL || file_error (error, input_name, "cannot allocate %" G_GSIZE_FORMAT
                                         " bytes of scales", container.scales_bytes);
      ok = ok && input_read (&input, scales, container.scales_bytes, progress, error);
    }
  if (ok && container.zero_points_bytes > 0)
    {
      zero_points = g_try_malloc (container.zero_points_bytes);
      ok = zero_points != NULL ||
           file_error (error, input_name, "cannot allocate %" G_GSIZE_FORMAT
                       " bytes of zero points", container.zero_points_bytes);
      ok = ok && input_read (&input, zero_points, container.zero_points_bytes, progress, error);
    }
  input_close (&input);
  if (!ok)
    return FALSE;

  dst_data = buffer_alloc (dst_bytes, "the dequantized data", error);
  if (dst_data == NULL)
    return FALSE;
  piq_quantizer_set_n_threads (quantizer, options->n_threads);
  progress_begin (progress, 0, "dequantizing to %s", piq_dtype_get_name (dtype));
  if (!piq_quantizer_dequantize_raw (quantizer, container.format, container.scale,
                                     container.zero_point, src_data, container.data_bytes,
                                     container.library_shape, container.library_n_dims, scales,
                                     container.scales_bytes, zero_points,
                                     container.zero_points_bytes, dtype, dst_data, dst_bytes,
                                     PIQ_REDUCE_SET, error))
    {
      g_prefix_error (error, "%s: ", input_name);
      return FALSE;
    }
  g_clear_pointer (&src_data, buffer_free);

  if (format == FILE_FORMAT_AUTO)
    format = has_npy_suffix (output_name) ? FILE_FORMAT_NPY : FILE_FORMAT_RAW;
  if (format == FILE_FORMAT_NPY)
    npy_header = piq_npy_format_header (piq_npy_descr_for_dtype (dtype), container.shape,
                                        container.n_dims, &npy_header_len);

  if (!output_open (&output, output_name, error))
    return FALSE;
  progress_begin (progress, dst_bytes, "writing %s", output_name);
  if ((npy_header != NULL && !output_write (&output, npy_header, npy_header_len, NULL, error)) ||
      !output_write (&output, dst_data, dst_bytes, progress, error))
    {
      output_abort (&output);
      return FALSE;
    }
  {
    g_autofree char *shape_text = format_shape (container.shape, container.n_dims);
    g_autofree char *description = piq_format_to_string (container.format);
    g_autofree char *input_what = g_strdup_printf ("%s, %s", description, shape_text);
    g_autofree char *output_what = g_strdup_printf ("%s %s", piq_dtype_get_name (dtype),
                                                    format == FILE_FORMAT_NPY ? "npy" : "raw");

    summary_set (summary, &output, input_name, input_what, output_what,
                 (guint64) npy_header_len + dst_bytes);
  }
  return output_commit (&output, error);
}

int
cmd_dequantize (const Command *command, int argc, char **argv)
{
  DequantizeOptions options = { .format = FILE_FORMAT_AUTO };
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, &options, NULL);
  GOptionEntry entries[G_N_ELEMENTS (dequantize_entries)];
  g_autoptr(GError) error = NULL;
  Progress progress = { 0 };
  Summary summary = { 0 };
  gboolean ok;

  memcpy (entries, dequantize_entries, sizeof entries);
  for (gsize i = 0; entries[i].long_name != NULL; i++)
    if (strcmp (entries[i].long_name, "no-progress") == 0)
      entries[i].arg_data = &options.no_progress;
    else if (strcmp (entries[i].long_name, "quiet") == 0)
      entries[i].arg_data = &options.quiet;
  g_option_group_add_entries (group, entries);
  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;
  if (!check_two_files (argc, argv))
    return EXIT_USAGE;

  ok = run_dequantize (&options, argv[1], argv[2], &progress, &summary, &error);
  progress_finish (&progress);
  summary_finish (&summary, ok && !options.quiet);
  return ok ? EXIT_OK : exit_for_error (g_get_prgname (), error);
}

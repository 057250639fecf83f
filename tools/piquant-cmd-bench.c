/* piquant-cmd-bench.c: `piquant bench`: piq-bench.c with the public-API rows
 *
 * (piquant-bench.c is the main of the GLib-free piquant-bench program.)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "piquant-tool.h"
#include "piq-bench.h"

/* ---- piquant bench ---- */

/* The options go straight into the GLib-free core's PiqBenchOptions
 * (piq-bench.h); this command adds the public-API column of the per-call
 * overhead, which needs the GLib library. */
typedef struct {
  PiqBenchOptions  bench;
  char            *op;
} BenchCommand;

typedef struct {
  PiqQuantizer *quantizer;
  PiqFormat    *format;
  PiqRecipe    *recipe;
} BenchApi;

static gboolean
parse_bench_elements (const char *option_name, const char *value, gpointer data, GError **error)
{
  BenchCommand *cmd = data;

  if (piq_bench_parse_list (value, 1, G_GUINT64_CONSTANT (1) << 40,
                            cmd->bench.elements, &cmd->bench.n_elements) == 0)
    return TRUE;
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "%s needs whole numbers from 1 to 2^40, comma-separated (%d at most), not '%s'",
               option_name, PIQ_BENCH_MAX_LIST, value);
  return FALSE;
}

static gboolean
parse_bench_threads (const char *option_name, const char *value, gpointer data, GError **error)
{
  BenchCommand *cmd = data;
  guint64 threads[PIQ_BENCH_MAX_LIST];
  gsize n = 0;

  if (piq_bench_parse_list (value, 1, PIQ_BENCH_MAX_THREADS, threads, &n) != 0 ||
      cmd->bench.n_threads + n > PIQ_BENCH_MAX_LIST)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs whole numbers from 1 to %d, comma-separated, not '%s'",
                   option_name, PIQ_BENCH_MAX_THREADS, value);
      return FALSE;
    }
  for (gsize i = 0; i < n; i++)
    cmd->bench.threads[cmd->bench.n_threads++] = (unsigned) threads[i];
  return TRUE;
}

static gboolean
parse_bench_repeat (const char *option_name, const char *value, gpointer data, GError **error)
{
  BenchCommand *cmd = data;
  guint64 repeat;

  if (!parse_unsigned_option (option_name, value, PIQ_BENCH_MIN_REPEAT, 100000, &repeat, error))
    return FALSE;
  cmd->bench.repeat = (unsigned) repeat;
  return TRUE;
}

static gboolean
parse_bench_json (const char *option_name, const char *value, gpointer data, GError **error)
{
  ((BenchCommand *) data)->bench.json = 1;
  return TRUE;
}

static gboolean
parse_bench_no_overhead (const char *option_name, const char *value, gpointer data, GError **error)
{
  ((BenchCommand *) data)->bench.skip_overhead = 1;
  return TRUE;
}

static gboolean
parse_bench_op (const char *option_name, const char *value, gpointer data, GError **error)
{
  BenchCommand *cmd = data;

  g_free (cmd->op);
  cmd->op = g_strdup (value);
  cmd->bench.op_filter = cmd->op;
  return TRUE;
}

/* A PiqSimdLevel nick, as `piquant info` prints it and PIQUANT_SIMD_LEVEL takes. */
static gboolean
parse_bench_simd_level (const char *option_name, const char *value, gpointer data, GError **error)
{
  BenchCommand *cmd = data;
  g_autoptr(GEnumClass) klass = g_type_class_ref (PIQ_TYPE_SIMD_LEVEL);
  GEnumValue *level = g_enum_get_value_by_nick (klass, value);
  g_autoptr(GString) names = NULL;

  if (level != NULL)
    {
      cmd->bench.max_level = level->value;
      return TRUE;
    }
  names = g_string_new (NULL);
  for (guint i = 0; i < klass->n_values; i++)
    g_string_append_printf (names, "%s%s", i > 0 ? ", " : "", klass->values[i].value_nick);
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "%s must be one of %s, not '%s'", option_name, names->str, value);
  return FALSE;
}

static const GOptionEntry bench_entries[] = {
  { "elements", 'n', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_bench_elements,
    "Element counts, repeatable or comma-separated (default 27264000,1000000)", "N[,N…]" },
  { "threads", 't', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_bench_threads,
    "Thread counts, comma-separated (default 1, 2, 4, … and every core)", "T[,T…]" },
  { "repeat", 'r', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_bench_repeat,
    "Timed runs per row, at least " G_STRINGIFY (PIQ_BENCH_MIN_REPEAT)
    " (default " G_STRINGIFY (PIQ_BENCH_DEFAULT_REPEAT) ")", "R" },
  { "op", 'o', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_bench_op,
    "Only the ops whose name contains TEXT, e.g. 'f32->u8 nearest'", "TEXT" },
  { "json", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, (gpointer) parse_bench_json,
    "Print one JSON document instead of the tables", NULL },
  { "simd-level", 's', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_bench_simd_level,
    "Cap the kernels at LEVEL (scalar, sse4-2, avx2, avx512, …; default: the best)", "LEVEL" },
  { "no-overhead", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, (gpointer) parse_bench_no_overhead,
    "Skip the per-call overhead and the crossover", NULL },
  G_OPTION_ENTRY_NULL
};

static int
bench_api_setup (void *user_data, double scale, int64_t zero_point)
{
  BenchApi *api = user_data;

  if (api->format == NULL)
    api->format = piq_format_new (PIQ_DTYPE_UINT8);
  g_clear_object (&api->recipe);
  api->recipe = piq_recipe_new_affine (scale, zero_point);
  return api->recipe != NULL ? 0 : -1;
}

/* One public call, as an application makes it: checks, parameter validation,
 * kernel selection and piq_parallel_run(). */
static int
bench_api_quantize_u8 (void *user_data, const float *src, size_t n, uint8_t *dst)
{
  BenchApi *api = user_data;
  guint64 shape[1] = { n };

  return piq_quantizer_quantize_raw (api->quantizer, api->format, api->recipe, PIQ_DTYPE_F32,
                                     src, shape, 1, dst, n, NULL, 0, NULL, 0, NULL, NULL,
                                     NULL) ? 0 : -1;
}

/* Rows of the GLib API beside the engine's: the observers (one batch into a fresh
 * observer: what calibration streams through) and fake quantization's forward and
 * backward passes (uint8, per tensor; f32, and bf16 on the benchmark's bf16 copy of
 * the data), on the caller's thread count. */
typedef enum { ROW_OBSERVE, ROW_FAKE_QUANT, ROW_FAKE_QUANT_BACKWARD } ApiRowKind;

typedef struct {
  ApiRowKind      kind;
  PiqObserverKind observer;
  PiqQuantizer   *quantizer;
  PiqFormat      *format;
  PiqDtype        dtype;      /* x, dy, y and dx: f32 or bf16 (the row's buffers) */
} ApiRowData;

static int
bench_api_row (void *user_data, const void *src, size_t n, void *dst, unsigned threads)
{
  ApiRowData *d = user_data;
  guint64 shape = n;
  gsize es = d->dtype == PIQ_DTYPE_BF16 ? 2 : 4;
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) x = piq_tensor_new_for_address (d->dtype, &shape, 1, (guintptr) src,
                                                       n * es, 0, FALSE, &error);
  g_autoptr(PiqTensor) y = x ? piq_tensor_new_for_address (d->dtype, &shape, 1,
                                                           (guintptr) dst, n * es, 0,
                                                           TRUE, &error) : NULL;
  gboolean ok = FALSE;

  if (y == NULL)
    return -1;
  piq_quantizer_set_n_threads (d->quantizer, threads);
  switch (d->kind)
    {
    case ROW_OBSERVE:
      {
        /* observers run on the default quantizer's threads */
        g_autoptr(PiqObserver) obs = piq_observer_new (d->observer);
        piq_quantizer_set_n_threads (piq_quantizer_get_default (), threads);
        ok = piq_observer_observe (obs, x, &error);
        break;
      }
    case ROW_FAKE_QUANT:
      ok = piq_quantizer_fake_quantize_per_tensor (d->quantizer, d->format, x, 0.02, 128, y,
                                                   NULL, &error);
      break;
    case ROW_FAKE_QUANT_BACKWARD:
      {
        /* x and dy side by side: the row reads 2n values */
        g_autoptr(PiqTensor) dy = piq_tensor_new_for_address (d->dtype, &shape, 1,
                                                              (guintptr) src + n * es,
                                                              n * es, 0, FALSE, &error);
        double gs, gz;
        ok = dy != NULL
             && piq_quantizer_fake_quantize_per_tensor_backward (d->quantizer, d->format, x, 0.02,
                                                                 128, dy, 1.0, y, &gs, &gz, &error);
        break;
      }
    }
  if (!ok)
    g_printerr ("%s\n", error ? error->message : "failed");
  return ok ? 0 : -1;
}

int
cmd_bench (const Command *command, int argc, char **argv)
{
  BenchCommand cmd = { .op = NULL };
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, &cmd, NULL);
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  BenchApi api_data = { .quantizer = quantizer };
  PiqBenchApi api = {
    .name = "piq_quantizer_quantize_raw",
    .setup = bench_api_setup,
    .quantize_u8 = bench_api_quantize_u8,
    .user_data = &api_data,
  };
  int status;

  piq_bench_options_init (&cmd.bench);
  g_option_group_add_entries (group, bench_entries);
  if (!parse_command_options (command, group, &argc, &argv))
    {
      g_free (cmd.op);
      return EXIT_USAGE;
    }

  /* The API column runs the same kernels as the rows. */
  if (cmd.bench.max_level >= 0)
    piq_quantizer_set_max_simd_level (quantizer, cmd.bench.max_level);
  cmd.bench.api = &api;
  cmd.bench.program_name = g_get_prgname ();

  g_autoptr(PiqFormat) u8 = piq_format_new (PIQ_DTYPE_UINT8);
  ApiRowData rd[] = {
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_MIN_MAX, quantizer, u8, PIQ_DTYPE_F32 },
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_MOVING_AVERAGE, quantizer, u8, PIQ_DTYPE_F32 },
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_HISTOGRAM, quantizer, u8, PIQ_DTYPE_F32 },
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_MSE, quantizer, u8, PIQ_DTYPE_F32 },
    { ROW_FAKE_QUANT, 0, quantizer, u8, PIQ_DTYPE_F32 },
    { ROW_FAKE_QUANT_BACKWARD, 0, quantizer, u8, PIQ_DTYPE_F32 },
    { ROW_FAKE_QUANT, 0, quantizer, u8, PIQ_DTYPE_BF16 },
    { ROW_FAKE_QUANT_BACKWARD, 0, quantizer, u8, PIQ_DTYPE_BF16 },
  };
  /* targets: issue 13 (80 % for min/max, moving average and QAT; the histograms'
   * reach is reported, with no target) */
  const PiqBenchApiRow api_rows[] = {
    { "observe min/max f32", 4, 0, 80, bench_api_row, &rd[0], 0 },
    { "observe moving average f32", 4, 0, 80, bench_api_row, &rd[1], 0 },
    { "observe histogram f32", 4, 0, 0, bench_api_row, &rd[2], 0 },
    { "observe mse f32", 4, 0, 0, bench_api_row, &rd[3], 0 },
    { "fake quantize u8 f32", 4, 4, 80, bench_api_row, &rd[4], 0 },
    { "fake quantize u8 grad f32", 8, 4, 80, bench_api_row, &rd[5], 0 },
    { "fake quantize u8 bf16", 2, 2, 80, bench_api_row, &rd[6], 1 },
    { "fake quantize u8 grad bf16", 4, 2, 80, bench_api_row, &rd[7], 1 },
  };
  cmd.bench.api_rows = api_rows;
  cmd.bench.n_api_rows = G_N_ELEMENTS (api_rows);
  status = piq_bench_run (&cmd.bench, stdout);
  g_clear_object (&api_data.format);
  g_clear_object (&api_data.recipe);
  g_free (cmd.op);
  return status == 0 ? EXIT_OK : status == 2 ? EXIT_USAGE : EXIT_RUNTIME;
}

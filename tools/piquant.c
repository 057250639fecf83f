/* piquant.c: the piquant command-line tool
 *
 * `piquant <command> [options]`; each command has its own GOptionContext, so
 * `piquant --help` lists the commands and `piquant <command> --help` lists
 * that command's options.
 *
 * Exit status: 0 on success, 1 when the library reports an error, 2 for a
 * usage error (unknown command or option, bad value).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>
#include <piquant/piquant.h>

#include "piq-bench.h"

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
};

/* ---- helpers shared by the commands ---- */

static int usage_error (const char *who, const char *format, ...) G_GNUC_PRINTF (2, 3);

/* One line on stderr that names the problem and where to look for help. */
static int
usage_error (const char *who, const char *format, ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  g_printerr ("%s: %s (see “%s --help”)\n", who, message, who);
  return EXIT_USAGE;
}

static int
runtime_error (const char *who, const GError *error)
{
  g_printerr ("%s: %s\n", who, error->message);
  return EXIT_RUNTIME;
}

/* The nick of an enum value ("avx2", "stochastic"): the names users type and
 * read. The class reference is kept on purpose: the nick points into it. */
static const char *
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
static gboolean
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
  g_option_context_set_main_group (context, group);

  if (!g_option_context_parse (context, argc, argv, &error))
    {
      usage_error (who, "%s", error->message);
      return FALSE;
    }
  if ((guint) *argc > 1 + command->max_arguments)
    {
      usage_error (who, "unexpected argument “%s”", (*argv)[1 + command->max_arguments]);
      return FALSE;
    }
  return TRUE;
}

/* An unsigned option value in [min, max], with a message that names the
 * option, the value and the accepted range. */
static gboolean
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
                 ", not “%s”", option_name, min, max, value);
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

/* ---- piquant info ---- */

#if defined(__x86_64__)
typedef struct {
  const char *name;
  gboolean    present;
} CpuFeature;

/* __builtin_cpu_supports() only takes a string literal, hence the macro. */
#define CPU_FEATURE(name) { name, __builtin_cpu_supports (name) != 0 }

/* The features piquant's kernels are built for, in the order of the SIMD
 * levels that need them. */
static void
print_cpu_features (void)
{
  const CpuFeature features[] = {
    CPU_FEATURE ("sse4.2"),
    CPU_FEATURE ("avx2"),
    CPU_FEATURE ("fma"),
#if !defined(__clang__) || __clang_major__ >= 16
    /* older clang rejects these two names at compile time */
    CPU_FEATURE ("f16c"),
#endif
    CPU_FEATURE ("avx512f"),
    CPU_FEATURE ("avx512bw"),
    CPU_FEATURE ("avx512vl"),
    CPU_FEATURE ("avx512dq"),
    CPU_FEATURE ("avx512bf16"),
#if !defined(__clang__) || __clang_major__ >= 16
    CPU_FEATURE ("avx512fp16"),
#endif
  };
  g_autoptr(GString) present = g_string_new (NULL);
  g_autoptr(GString) missing = g_string_new (NULL);

  for (gsize i = 0; i < G_N_ELEMENTS (features); i++)
    {
      GString *list = features[i].present ? present : missing;

      g_string_append_printf (list, "%s%s", list->len > 0 ? " " : "", features[i].name);
    }

  g_print ("CPU features:  %s\n", present->len > 0 ? present->str : "(none)");
  if (missing->len > 0)
    g_print ("not supported: %s\n", missing->str);
}
#undef CPU_FEATURE
#elif defined(__aarch64__)
static void
print_cpu_features (void)
{
  /* Advanced SIMD is mandatory on aarch64. */
  g_print ("CPU features:  neon\n");
}
#else
static void
print_cpu_features (void)
{
  g_print ("CPU features:  (none that piquant uses)\n");
}
#endif

/* The value of the first "KEY<blanks>: value" line of /proc/cpuinfo, or NULL. */
static char *
find_cpuinfo_value (char **lines, const char *key)
{
  gsize key_len = strlen (key);

  for (char **line = lines; *line != NULL; line++)
    {
      const char *rest = *line + key_len;

      if (strncmp (*line, key, key_len) != 0)
        continue;
      rest += strspn (rest, " \t");
      if (*rest == ':')
        return g_strstrip (g_strdup (rest + 1));
    }
  return NULL;
}

/* The CPU model: "model name" on x86, "Model" on some Arm boards; NULL where
 * there is no /proc/cpuinfo or neither line. */
static char *
get_cpu_model (void)
{
  static const char *const keys[] = { "model name", "Model" };
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/cpuinfo", &contents, NULL, NULL))
    return NULL;

  lines = g_strsplit (contents, "\n", -1);
  for (gsize k = 0; k < G_N_ELEMENTS (keys); k++)
    {
      char *model = find_cpuinfo_value (lines, keys[k]);

      if (model != NULL)
        return model;
    }
  return NULL;
}

static int
cmd_info (const Command *command, int argc, char **argv)
{
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, NULL, NULL);
  g_autofree char *cpu_model = NULL;
  PiqQuantizer *quantizer;

  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;

  cpu_model = get_cpu_model ();
  quantizer = piq_quantizer_get_default ();

  g_print ("piquant:       %s\n", PIQ_VERSION_STRING);
  g_print ("CPU:           %s\n", cpu_model != NULL ? cpu_model : "unknown");
  print_cpu_features ();
  g_print ("SIMD level:    %s\n",
           enum_nick (PIQ_TYPE_SIMD_LEVEL, piq_quantizer_get_simd_level (quantizer)));
  /* n-threads = 0 means one thread per processor GLib counts. */
  g_print ("threads:       %u (n-threads = 0)\n", g_get_num_processors ());
  return EXIT_OK;
}

/* ---- piquant demo ---- */

/* 27.26 M floats (109 MB): a tensor much larger than the caches, so the
 * timings show memory-bound throughput. */
#define DEMO_DEFAULT_ELEMENTS 27264000
#define DEMO_DEFAULT_SEED     42
#define DEMO_MAX_THREADS      1024

typedef struct {
  guint64 n_elements;
  guint64 seed;
  guint   n_threads;
  guint   round_modes;          /* bit (1 << PiqRoundMode) per mode to run */
} DemoOptions;

static gboolean
parse_elements (const char *option_name, const char *value, gpointer data, GError **error)
{
  DemoOptions *options = data;

  return parse_unsigned_option (option_name, value, 1, G_MAXUINT64, &options->n_elements, error);
}

static gboolean
parse_seed (const char *option_name, const char *value, gpointer data, GError **error)
{
  DemoOptions *options = data;

  return parse_unsigned_option (option_name, value, 0, G_MAXUINT64, &options->seed, error);
}

static gboolean
parse_threads (const char *option_name, const char *value, gpointer data, GError **error)
{
  DemoOptions *options = data;
  guint64 n_threads;

  if (!parse_unsigned_option (option_name, value, 0, DEMO_MAX_THREADS, &n_threads, error))
    return FALSE;
  options->n_threads = (guint) n_threads;
  return TRUE;
}

/* The mode names come from the PiqRoundMode enum type, so a new mode needs
 * no change here. */
static gboolean
parse_rounding (const char *option_name, const char *value, gpointer data, GError **error)
{
  DemoOptions *options = data;
  g_autoptr(GEnumClass) klass = g_type_class_ref (PIQ_TYPE_ROUND_MODE);
  GEnumValue *mode = g_enum_get_value_by_nick (klass, value);
  g_autoptr(GString) names = NULL;

  if (strcmp (value, "both") == 0)
    {
      options->round_modes = G_MAXUINT;
      return TRUE;
    }
  if (mode != NULL)
    {
      options->round_modes = 1u << mode->value;
      return TRUE;
    }

  names = g_string_new (NULL);
  for (guint i = 0; i < klass->n_values; i++)
    g_string_append_printf (names, "%s, ", klass->values[i].value_nick);
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "%s must be %sor both, not “%s”", option_name, names->str, value);
  return FALSE;
}

static const GOptionEntry demo_entries[] = {
  { "elements", 'n', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_elements,
    "Number of f32 elements (default " G_STRINGIFY (DEMO_DEFAULT_ELEMENTS) ")", "N" },
  { "seed", 's', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_seed,
    "Seed of the data and of stochastic rounding (default " G_STRINGIFY (DEMO_DEFAULT_SEED)
    "; 0 rounds with a fresh seed each call)", "S" },
  { "threads", 't', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_threads,
    "Number of threads (default 0 = one per processor)", "T" },
  { "rounding", 'r', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_rounding,
    "Rounding mode: nearest, stochastic or both (default both)", "MODE" },
  G_OPTION_ENTRY_NULL
};

/* SplitMix64: tiny, fast and good enough for test data; any seed works. */
static guint64
splitmix64_next (guint64 *state)
{
  guint64 z = (*state += G_GUINT64_CONSTANT (0x9E3779B97F4A7C15));

  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Uniform in (0, 1] with 53 random bits: never 0, so log() stays finite. */
static double
uniform_open_closed (guint64 *state)
{
  return ((splitmix64_next (state) >> 11) + 1) * 0x1.0p-53;
}

/* N(0, 1) samples by the Box-Muller transform, two per pair of uniforms;
 * the same seed gives the same data on every machine with a correct libm. */
static void
fill_normal (float *x, guint64 n, guint64 seed)
{
  guint64 state = seed;

  for (guint64 i = 0; i < n; i += 2)
    {
      double radius = sqrt (-2.0 * log (uniform_open_closed (&state)));
      double angle = 2.0 * G_PI * uniform_open_closed (&state);

      x[i] = (float) (radius * cos (angle));
      if (i + 1 < n)
        x[i + 1] = (float) (radius * sin (angle));
    }
}

/* Σ (a − b)² in binary64; four partial sums break the dependency chain of
 * the additions (a fixed order, so the result is reproducible). */
static double
sum_squared_difference (const float *a, const float *b, guint64 n)
{
  double lanes[4] = { 0.0, 0.0, 0.0, 0.0 };
  guint64 i = 0;

  for (; i + 4 <= n; i += 4)
    for (guint k = 0; k < 4; k++)
      {
        double d = (double) a[i + k] - (double) b[i + k];

        lanes[k] += d * d;
      }
  for (; i < n; i++)
    {
      double d = (double) a[i] - (double) b[i];

      lanes[0] += d * d;
    }
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

/* What one table row reports. */
typedef struct {
  gint64 usec;
  gsize  bytes;                 /* bytes read plus bytes written */
} Timing;

typedef struct {
  PiqDtype     dtype;
  PiqRoundMode round_mode;
  double       scale;
  gint64       zero_point;
  Timing       quantize;
  Timing       dequantize;
  double       rmse;
  double       sqnr_db;         /* +Inf for an exact round trip */
} DemoRow;

/* Everything the rows of one run share: the input, the reused f32 output
 * and Σx² of the input. */
typedef struct {
  const DemoOptions *options;
  PiqQuantizer      *quantizer;
  PiqTensor         *input;
  PiqTensor         *output;
  double             signal;
} Demo;

/* The table layout, one place for the header and the rows. A negative
 * width aligns left; columns of one group share a heading above them. */
typedef struct {
  const char *group;
  const char *title;
  int         width;
} Column;

static const Column demo_columns[] = {
  { NULL,         "dtype",      -6 },
  { NULL,         "rounding",  -10 },
  { NULL,         "scale",      10 },
  { NULL,         "zero point", 20 },
  { NULL,         "B/elem",      6 },
  { "quantize",   "ms",          8 },
  { "quantize",   "Melem/s",     8 },
  { "quantize",   "GB/s",        6 },
  { "dequantize", "ms",          8 },
  { "dequantize", "Melem/s",     8 },
  { "dequantize", "GB/s",        6 },
  { NULL,         "RMSE",        9 },
  { NULL,         "SQNR dB",     7 },
};

#define COLUMN_GAP "  "

static void
print_cells (const char *const *cells)
{
  for (gsize i = 0; i < G_N_ELEMENTS (demo_columns); i++)
    g_print ("%s%*s", i > 0 ? COLUMN_GAP : "", demo_columns[i].width, cells[i]);
  g_print ("\n");
}

/* Each group's name centred in a rule over its columns, then the titles. */
static void
print_table_header (void)
{
  const char *titles[G_N_ELEMENTS (demo_columns)];
  g_autoptr(GString) groups = g_string_new (NULL);
  const gsize gap = strlen (COLUMN_GAP);
  gsize position = 0;           /* where column i starts */

  for (gsize i = 0; i < G_N_ELEMENTS (demo_columns); i++)
    titles[i] = demo_columns[i].title;

  for (gsize i = 0; i < G_N_ELEMENTS (demo_columns); )
    {
      const char *group = demo_columns[i].group;
      gsize span = ABS (demo_columns[i].width);
      gsize j = i + 1;

      for (; j < G_N_ELEMENTS (demo_columns) && g_strcmp0 (demo_columns[j].group, group) == 0; j++)
        span += gap + ABS (demo_columns[j].width);

      if (group != NULL)
        {
          gsize label = strlen (group) + 2;
          gsize left = span > label ? (span - label) / 2 : 0;

          while (groups->len < position)
            g_string_append_c (groups, ' ');
          for (gsize k = 0; k < left; k++)
            g_string_append_c (groups, '-');
          g_string_append_printf (groups, " %s ", group);
          while (groups->len < position + span)
            g_string_append_c (groups, '-');
        }
      position += span + gap;
      i = j;
    }

  g_print ("%s\n", groups->str);
  print_cells (titles);
}

static double
usec_to_seconds (gint64 usec)
{
  /* The monotonic clock counts whole microseconds: never divide by 0. */
  return MAX (usec, 1) * 1e-6;
}

static void
print_demo_row (const DemoRow *row, guint64 n_elements)
{
  const Timing *timings[] = { &row->quantize, &row->dequantize };
  char *cells[G_N_ELEMENTS (demo_columns)];
  guint c = 0;

  cells[c++] = g_strdup (piq_dtype_get_name (row->dtype));
  cells[c++] = g_strdup (enum_nick (PIQ_TYPE_ROUND_MODE, row->round_mode));
  cells[c++] = g_strdup_printf ("%.4e", row->scale);
  cells[c++] = g_strdup_printf ("%" G_GINT64_FORMAT, row->zero_point);
  cells[c++] = g_strdup_printf ("%.3g", piq_dtype_get_bits (row->dtype) / 8.0);
  for (gsize t = 0; t < G_N_ELEMENTS (timings); t++)
    {
      double seconds = usec_to_seconds (timings[t]->usec);

      cells[c++] = g_strdup_printf ("%.2f", timings[t]->usec / 1000.0);
      cells[c++] = g_strdup_printf ("%.0f", n_elements / seconds / 1e6);
      cells[c++] = g_strdup_printf ("%.2f", timings[t]->bytes / seconds / 1e9);
    }
  cells[c++] = g_strdup_printf ("%.3e", row->rmse);
  cells[c++] = isinf (row->sqnr_db) ? g_strdup ("inf") : g_strdup_printf ("%.2f", row->sqnr_db);
  g_assert (c == G_N_ELEMENTS (demo_columns));

  print_cells ((const char *const *) cells);
  for (guint i = 0; i < c; i++)
    g_free (cells[i]);
}

/* Quantizes the input into @packed with @params, dequantizes it back into
 * the f32 output and measures both calls and the round-trip error. */
static gboolean
measure_round_trip (const Demo  *demo,
                    PiqParams   *params,
                    PiqTensor   *packed,
                    DemoRow     *row,
                    GError     **error)
{
  guint64 n = demo->options->n_elements;
  gsize traffic = piq_tensor_get_n_bytes (demo->input) + piq_tensor_get_n_bytes (packed);
  double squared_error;
  gint64 start;

  row->dtype = piq_params_get_dtype (params);
  row->round_mode = piq_params_get_round_mode (params);
  row->scale = piq_params_get_scale (params);
  row->zero_point = piq_params_get_zero_point (params);

  row->quantize.bytes = row->dequantize.bytes = traffic;

  start = g_get_monotonic_time ();
  if (!piq_quantizer_quantize (demo->quantizer, params, demo->input, packed, error))
    return FALSE;
  row->quantize.usec = g_get_monotonic_time () - start;

  start = g_get_monotonic_time ();
  if (!piq_quantizer_dequantize (demo->quantizer, packed, demo->output, PIQ_REDUCE_SET, error))
    return FALSE;
  row->dequantize.usec = g_get_monotonic_time () - start;

  squared_error = sum_squared_difference (piq_tensor_get_data (demo->input, NULL),
                                          piq_tensor_get_data (demo->output, NULL), n);
  row->rmse = sqrt (squared_error / n);
  row->sqnr_db = squared_error > 0.0 ? 10.0 * log10 (demo->signal / squared_error) : INFINITY;
  return TRUE;
}

/* One row per selected rounding mode for @dtype. The parameters do not
 * depend on the rounding mode, so they are computed once. */
static gboolean
demo_dtype (const Demo *demo, PiqDtype dtype, GError **error)
{
  g_autoptr(GEnumClass) round_modes = g_type_class_ref (PIQ_TYPE_ROUND_MODE);
  g_autoptr(PiqParams) params = piq_params_new (dtype);
  g_autoptr(PiqTensor) packed = NULL;

  piq_params_set_scale_rule (params, PIQ_SCALE_RULE_MIN_MAX);
  piq_params_set_seed (params, demo->options->seed);
  if (!piq_quantizer_compute_params (demo->quantizer, params, demo->input, error))
    return FALSE;

  /* piq_tensor_new() zero-fills: its page faults are not timed as quantize. */
  packed = piq_tensor_new (dtype, demo->options->n_elements, error);
  if (packed == NULL)
    return FALSE;

  for (guint i = 0; i < round_modes->n_values; i++)
    {
      PiqRoundMode mode = round_modes->values[i].value;
      DemoRow row;

      if ((demo->options->round_modes & (1u << mode)) == 0)
        continue;
      piq_params_set_round_mode (params, mode);
      if (!measure_round_trip (demo, params, packed, &row, error))
        return FALSE;
      print_demo_row (&row, demo->options->n_elements);
      /* rows arrive a second or so apart: show each at once, also in a pipe */
      fflush (stdout);
    }
  return TRUE;
}

static void
print_demo_header (const Demo *demo)
{
  const DemoOptions *options = demo->options;
  g_autofree char *threads = options->n_threads == 0 ?
    g_strdup_printf ("0 = all (%u)", g_get_num_processors ()) :
    g_strdup_printf ("%u", options->n_threads);

  g_print ("piquant %s demo: N = %" G_GUINT64_FORMAT " f32 elements (%.1f MB) from N(0, 1), "
           "seed %" G_GUINT64_FORMAT ", threads %s, SIMD level %s\n",
           PIQ_VERSION_STRING, options->n_elements,
           piq_tensor_get_n_bytes (demo->input) / 1e6, options->seed, threads,
           enum_nick (PIQ_TYPE_SIMD_LEVEL, piq_quantizer_get_simd_level (demo->quantizer)));
  g_print ("parameters: min/max rule per tensor; round trip: quantize, then dequantize to f32\n\n");
}

static void
print_demo_footer (void)
{
  g_print ("\nGB/s counts bytes read plus bytes written; Melem/s counts elements; "
           "SQNR = 10 log10(sum x^2 / sum (x - x_hat)^2).\n");
}

/* Untimed, before the first row: the first parallel region starts the
 * thread pool, which would otherwise be charged to the first row. */
static gboolean
warm_up (const Demo *demo, GError **error)
{
  g_autoptr(PiqParams) params = piq_params_new_affine (PIQ_DTYPE_UINT8, 1.0, 0);

  return piq_quantizer_requantize (demo->quantizer, params, demo->input, demo->output,
                                   PIQ_REDUCE_SET, error);
}

static PiqTensor *
new_normal_tensor (guint64 n_elements, guint64 seed, GError **error)
{
  PiqTensor *tensor = piq_tensor_new (PIQ_DTYPE_F32, n_elements, error);

  if (tensor != NULL)
    fill_normal (piq_tensor_get_writable_data (tensor, NULL), n_elements, seed);
  return tensor;
}

static gboolean
run_demo (const DemoOptions *options, GError **error)
{
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  g_autoptr(PiqTensor) input = NULL;
  g_autoptr(PiqTensor) output = NULL;
  g_autoptr(GEnumClass) dtypes = g_type_class_ref (PIQ_TYPE_DTYPE);
  Demo demo = { .options = options, .quantizer = quantizer };

  piq_quantizer_set_n_threads (quantizer, options->n_threads);

  input = new_normal_tensor (options->n_elements, options->seed, error);
  if (input == NULL)
    return FALSE;
  /* One f32 output for every row. piq_tensor_new() zero-fills it, so its
   * distance to the input is Σx², the signal power of the SQNR. */
  output = piq_tensor_new (PIQ_DTYPE_F32, options->n_elements, error);
  if (output == NULL)
    return FALSE;
  demo.input = input;
  demo.output = output;
  demo.signal = sum_squared_difference (piq_tensor_get_data (input, NULL),
                                        piq_tensor_get_data (output, NULL),
                                        options->n_elements);
  if (!warm_up (&demo, error))
    return FALSE;

  print_demo_header (&demo);
  print_table_header ();
  /* Every quantized dtype the library declares, in the order of the enum. */
  for (guint i = 0; i < dtypes->n_values; i++)
    {
      PiqDtype dtype = dtypes->values[i].value;

      if (piq_dtype_is_quantized (dtype) && !demo_dtype (&demo, dtype, error))
        return FALSE;
    }
  print_demo_footer ();
  return TRUE;
}

static int
cmd_demo (const Command *command, int argc, char **argv)
{
  DemoOptions options = {
    .n_elements = DEMO_DEFAULT_ELEMENTS,
    .seed = DEMO_DEFAULT_SEED,
    .n_threads = 0,
    .round_modes = G_MAXUINT,
  };
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, &options, NULL);
  g_autoptr(GError) error = NULL;

  g_option_group_add_entries (group, demo_entries);
  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;

  if (!run_demo (&options, &error))
    return runtime_error (g_get_prgname (), error);
  return EXIT_OK;
}

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
  PiqParams    *params;
} BenchApi;

static gboolean
parse_bench_elements (const char *option_name, const char *value, gpointer data, GError **error)
{
  BenchCommand *cmd = data;

  if (piq_bench_parse_list (value, 1, G_GUINT64_CONSTANT (1) << 40,
                            cmd->bench.elements, &cmd->bench.n_elements) == 0)
    return TRUE;
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "%s needs whole numbers from 1 to 2^40, comma-separated (%d at most), not “%s”",
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
                   "%s needs whole numbers from 1 to %d, comma-separated, not “%s”",
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
               "%s must be one of %s, not “%s”", option_name, names->str, value);
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
    "Only the ops whose name contains TEXT, e.g. “f32->u8 nearest”", "TEXT" },
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

  g_clear_object (&api->params);
  api->params = piq_params_new_affine (PIQ_DTYPE_UINT8, scale, zero_point);
  return api->params != NULL ? 0 : -1;
}

/* One public call, as an application makes it: checks, parameter validation,
 * kernel selection and piq_parallel_run(). */
static int
bench_api_quantize_u8 (void *user_data, const float *src, size_t n, uint8_t *dst)
{
  BenchApi *api = user_data;

  return piq_quantizer_quantize_raw (api->quantizer, api->params, PIQ_DTYPE_F32, src, n,
                                     dst, n, NULL) ? 0 : -1;
}

static int
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
  g_autofree char *ops = NULL;
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
  status = piq_bench_run (&cmd.bench, stdout);
  g_clear_object (&api_data.params);
  g_free (cmd.op);
  return status == 0 ? EXIT_OK : status == 2 ? EXIT_USAGE : EXIT_RUNTIME;
}

/* ---- the command table and main ---- */

static int cmd_help (const Command *command, int argc, char **argv);

static const Command commands[] = {
  { "info", NULL, 0,
    "Show the library version, the CPU, its SIMD features and the kernels in use", cmd_info },
  { "demo", NULL, 0,
    "Quantize normally distributed data to every integer type; report speed and error", cmd_demo },
  { "bench", NULL, 0,
    "Time the hot kernels against this machine's memory limit for their byte mix", cmd_bench },
  { "help", "[COMMAND]", 1,
    "Show the help of the tool or of a command", cmd_help },
};

static const Command *
find_command (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static GOptionContext *
new_main_context (gboolean *show_version)
{
  const GOptionEntry entries[] = {
    { "version", 'V', G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, show_version,
      "Show the version of piquant", NULL },
    G_OPTION_ENTRY_NULL
  };
  GOptionContext *context = g_option_context_new ("COMMAND [OPTION…]");
  g_autoptr(GString) description = g_string_new ("Commands:\n");

  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    g_string_append_printf (description, "  %-6s %s\n", commands[i].name, commands[i].summary);
  g_string_append (description, "\nRun “piquant COMMAND --help” for the options of a command.\n");

  g_option_context_set_summary (context, "CPU quantization kernels: information and demonstrations.");
  g_option_context_set_description (context, description->str);
  g_option_context_add_main_entries (context, entries, NULL);
  /* Stop at the command: its options belong to its own context. */
  g_option_context_set_strict_posix (context, TRUE);
  return context;
}

static void
print_main_help (void)
{
  gboolean unused;
  g_autoptr(GOptionContext) context = new_main_context (&unused);
  g_autofree char *help = NULL;

  /* `piquant help` runs as "piquant help"; the usage line is the tool's. */
  g_set_prgname ("piquant");
  help = g_option_context_get_help (context, TRUE, NULL);
  g_print ("%s", help);
}

/* `piquant help [COMMAND]`: the same text as `piquant [COMMAND] --help`. */
static int
cmd_help (const Command *command, int argc, char **argv)
{
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, NULL, NULL);
  const Command *topic;
  char *help_argv[] = { NULL, (char *) "--help", NULL };

  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;
  if (argc < 2)
    {
      print_main_help ();
      return EXIT_OK;
    }

  topic = find_command (argv[1]);
  if (topic == NULL)
    return usage_error ("piquant", "unknown command “%s”", argv[1]);
  help_argv[0] = argv[1];
  return topic->run (topic, G_N_ELEMENTS (help_argv) - 1, help_argv);
}

int
main (int argc, char **argv)
{
  gboolean show_version = FALSE;
  g_autoptr(GOptionContext) context = new_main_context (&show_version);
  g_autoptr(GError) error = NULL;
  const Command *command;

  /* The locale's charset for messages and help; numbers keep the C format so
   * that the tables read the same everywhere and parse as numbers. */
  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  g_set_prgname ("piquant");
  if (!g_option_context_parse (context, &argc, &argv, &error))
    return usage_error ("piquant", "%s", error->message);
  if (show_version)
    {
      g_print ("piquant %s\n", PIQ_VERSION_STRING);
      return EXIT_OK;
    }
  if (argc < 2)
    return usage_error ("piquant", "no command given");

  command = find_command (argv[1]);
  if (command == NULL)
    return usage_error ("piquant", "unknown command “%s”", argv[1]);
  return command->run (command, argc - 1, argv + 1);
}

/* piquant.c: the piquant command-line tool
 *
 * `piquant <command> [options]`; each command has its own GOptionContext, so
 * `piquant --help` lists the commands and `piquant <command> --help` lists
 * that command's options.
 *
 * Exit status: 0 on success, 1 when the library or a file reports an error
 * (missing, unreadable, malformed, too short), 2 for a usage error (unknown
 * command or option, bad value, an option that a file turns out to need).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <piquant/piquant.h>

#include "piq-bench.h"
#include "piq-cpu-private.h"
#include "piq-io-npy-private.h"
#include "piq-io-piqt-private.h"

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

  g_printerr ("%s: %s (see '%s --help')\n", who, message, who);
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
      usage_error (who, "unexpected argument '%s'", (*argv)[1 + command->max_arguments]);
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

/* ---- piquant info ---- */

/* Every CPU feature a kernel unit can require (the one list, piq-cpu-private.h), as
 * the library's own detection sees it: what dispatch decides with. */
static void
print_cpu_features (void)
{
  uint32_t have = piq_cpu_features ();
  g_autoptr(GString) present = g_string_new (NULL);
  g_autoptr(GString) missing = g_string_new (NULL);
  const char *name;

  for (unsigned bit = 0; (name = piq_cpu_feature_name (bit)) != NULL; bit++)
    {
#if defined(__x86_64__) || defined(__i386__)
      if (bit == PIQ_CPU_BIT_NEON)
        continue;
#else
      if (bit != PIQ_CPU_BIT_NEON)
        continue;
#endif
      GString *list = (have >> bit) & 1u ? present : missing;
      g_string_append_printf (list, "%s%s", list->len > 0 ? " " : "", name);
    }
  g_print ("CPU features:  %s\n", present->len > 0 ? present->str : "(none that piquant uses)");
  if (missing->len > 0)
    g_print ("not supported: %s\n", missing->str);
}

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
  gboolean presets = FALSE;
  const GOptionEntry entries[] = {
    { "presets", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &presets,
      "List the format presets that `piquant quantize -p NAME` accepts, one a line", NULL },
    G_OPTION_ENTRY_NULL
  };

  g_option_group_add_entries (group, entries);
  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;
  if (presets)
    {
      g_autofree const char **names = piq_format_list_presets ();

      for (const char **name = names; *name != NULL; name++)
        g_print ("%s\n", *name);
      return EXIT_OK;
    }

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
               "%s must be %sor both, not '%s'", option_name, names->str, value);
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

/* Σ |a − b| in binary64, with the same fixed order as above. */
static double
sum_abs_difference (const float *a, const float *b, guint64 n)
{
  double lanes[4] = { 0.0, 0.0, 0.0, 0.0 };
  guint64 i = 0;

  for (; i + 4 <= n; i += 4)
    for (guint k = 0; k < 4; k++)
      lanes[k] += fabs ((double) a[i + k] - (double) b[i + k]);
  for (; i < n; i++)
    lanes[0] += fabs ((double) a[i] - (double) b[i]);
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

/* The formats table: one row per preset (piq_format_list_presets()). B/elem
 * counts the codes and the scales and zero points stored beside them. */
static const Column format_columns[] = {
  { NULL,         "preset",    -10 },
  { NULL,         "dtype",      -8 },
  { NULL,         "block",       6 },
  { NULL,         "scales",     -6 },
  { NULL,         "rounding",  -10 },
  { NULL,         "B/elem",      6 },
  { "quantize",   "ms",          8 },
  { "quantize",   "Melem/s",     8 },
  { "quantize",   "GB/s",        6 },
  { "dequantize", "ms",          8 },
  { "dequantize", "Melem/s",     8 },
  { "dequantize", "GB/s",        6 },
  { NULL,         "MAE",         9 },
  { NULL,         "RMSE",        9 },
  { NULL,         "SQNR dB",     7 },
};

#define COLUMN_GAP "  "
#define MAX_COLUMNS 16

G_STATIC_ASSERT (G_N_ELEMENTS (demo_columns) <= MAX_COLUMNS);
G_STATIC_ASSERT (G_N_ELEMENTS (format_columns) <= MAX_COLUMNS);

static void
print_cells (const Column *columns, gsize n_columns, const char *const *cells)
{
  for (gsize i = 0; i < n_columns; i++)
    g_print ("%s%*s", i > 0 ? COLUMN_GAP : "", columns[i].width, cells[i]);
  g_print ("\n");
}

/* Each group's name centred in a rule over its columns, then the titles. */
static void
print_table_header (const Column *columns, gsize n_columns)
{
  const char *titles[MAX_COLUMNS];
  g_autoptr(GString) groups = g_string_new (NULL);
  const gsize gap = strlen (COLUMN_GAP);
  gsize position = 0;           /* where column i starts */

  for (gsize i = 0; i < n_columns; i++)
    titles[i] = columns[i].title;

  for (gsize i = 0; i < n_columns; )
    {
      const char *group = columns[i].group;
      gsize span = ABS (columns[i].width);
      gsize j = i + 1;

      for (; j < n_columns && g_strcmp0 (columns[j].group, group) == 0; j++)
        span += gap + ABS (columns[j].width);

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
  print_cells (columns, n_columns, titles);
}

static double
usec_to_seconds (gint64 usec)
{
  /* The monotonic clock counts whole microseconds: never divide by 0. */
  return MAX (usec, 1) * 1e-6;
}

/* The cells the demo's tables share: ms, Melem/s and GB/s of each timing from
 * cells[c]; then RMSE and SQNR. Each returns the next free cell. */
static guint
timing_cells (char **cells, guint c, const Timing *const *timings, gsize n_timings,
              guint64 n_elements)
{
  for (gsize t = 0; t < n_timings; t++)
    {
      double seconds = usec_to_seconds (timings[t]->usec);

      cells[c++] = g_strdup_printf ("%.2f", timings[t]->usec / 1000.0);
      cells[c++] = g_strdup_printf ("%.0f", n_elements / seconds / 1e6);
      cells[c++] = g_strdup_printf ("%.2f", timings[t]->bytes / seconds / 1e9);
    }
  return c;
}

static guint
error_cells (char **cells, guint c, double rmse, double sqnr_db)
{
  cells[c++] = g_strdup_printf ("%.3e", rmse);
  cells[c++] = isinf (sqnr_db) ? g_strdup ("inf") : g_strdup_printf ("%.2f", sqnr_db);
  return c;
}

/* Print one row of n_cells (all of the table's columns) and free its cells. */
static void
print_free_cells (const Column *columns, gsize n_columns, char **cells, guint n_cells)
{
  g_assert (n_cells == n_columns);
  print_cells (columns, n_columns, (const char *const *) cells);
  for (guint i = 0; i < n_cells; i++)
    g_free (cells[i]);
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
  c = timing_cells (cells, c, timings, G_N_ELEMENTS (timings), n_elements);
  c = error_cells (cells, c, row->rmse, row->sqnr_db);
  print_free_cells (demo_columns, G_N_ELEMENTS (demo_columns), cells, c);
}

/* One row of the formats table. */
typedef struct {
  const char  *preset;
  PiqFormat   *format;
  PiqRoundMode round_mode;
  double       bytes_per_element;   /* codes, scales and zero points */
  Timing       quantize;
  Timing       dequantize;
  double       mae;
  double       rmse;
  double       sqnr_db;
} FormatRow;

static void
print_format_row (const FormatRow *row, guint64 n_elements)
{
  const Timing *timings[] = { &row->quantize, &row->dequantize };
  char *cells[G_N_ELEMENTS (format_columns)];
  PiqFormat *format = row->format;
  guint c = 0;

  cells[c++] = g_strdup (row->preset);
  cells[c++] = g_strdup (piq_dtype_get_name (piq_format_get_dtype (format)));
  if (piq_format_get_granularity (format) == PIQ_GRANULARITY_TENSOR)
    {
      cells[c++] = g_strdup ("tensor");
      cells[c++] = g_strdup ("f32");
    }
  else
    {
      cells[c++] = g_strdup_printf ("%u", piq_format_get_block_size (format));
      cells[c++] = g_strdup (piq_dtype_get_name (piq_format_get_scale_dtype (format)));
    }
  cells[c++] = g_strdup (enum_nick (PIQ_TYPE_ROUND_MODE, row->round_mode));
  cells[c++] = g_strdup_printf ("%.4f", row->bytes_per_element);
  c = timing_cells (cells, c, timings, G_N_ELEMENTS (timings), n_elements);
  cells[c++] = g_strdup_printf ("%.3e", row->mae);
  c = error_cells (cells, c, row->rmse, row->sqnr_db);
  print_free_cells (format_columns, G_N_ELEMENTS (format_columns), cells, c);
}

static gsize
bytes_size (GBytes *bytes)
{
  return bytes != NULL ? g_bytes_get_size (bytes) : 0;
}

/* Quantizes the input into @packed (whose format decides how) with @recipe and
 * dequantizes it back into the f32 output, timing both calls, and measures the
 * round trip's squared error: what the integer and the format tables share. */
static gboolean
time_round_trip (const Demo  *demo,
                 PiqRecipe   *recipe,
                 PiqTensor   *packed,
                 Timing      *quantize,
                 Timing      *dequantize,
                 double      *rmse,
                 double      *sqnr_db,
                 GError     **error)
{
  guint64 n = demo->options->n_elements;
  double squared_error;
  gint64 start;

  start = g_get_monotonic_time ();
  if (!piq_quantizer_quantize (demo->quantizer, recipe, demo->input, packed, error))
    return FALSE;
  quantize->usec = g_get_monotonic_time () - start;

  start = g_get_monotonic_time ();
  if (!piq_quantizer_dequantize (demo->quantizer, packed, demo->output, PIQ_REDUCE_SET, error))
    return FALSE;
  dequantize->usec = g_get_monotonic_time () - start;

  squared_error = sum_squared_difference (piq_tensor_get_data (demo->input, NULL),
                                          piq_tensor_get_data (demo->output, NULL), n);
  *rmse = sqrt (squared_error / n);
  *sqnr_db = squared_error > 0.0 ? 10.0 * log10 (demo->signal / squared_error) : INFINITY;
  return TRUE;
}

/* A seed goes with stochastic rounding only: nearest rounding takes none. */
static void
set_demo_rounding (const Demo *demo, PiqRecipe *recipe, PiqRoundMode mode)
{
  piq_recipe_set_round_mode (recipe, mode);
  piq_recipe_set_seed (recipe, mode == PIQ_ROUND_STOCHASTIC ? demo->options->seed : 0);
}

/* The round trip of one preset: quantize (which derives the block scales)
 * and dequantize, both timed; per-tensor presets get their scale from the
 * data first, untimed, by the format's own rule (abs-max). */
static gboolean
measure_format (const Demo   *demo,
                PiqRecipe    *recipe,
                PiqTensor    *packed,
                FormatRow    *row,
                GError      **error)
{
  guint64 n = demo->options->n_elements;
  g_autoptr(GBytes) scales = NULL;
  g_autoptr(GBytes) zero_points = NULL;
  gsize stored;

  if (!time_round_trip (demo, recipe, packed, &row->quantize, &row->dequantize, &row->rmse,
                        &row->sqnr_db, error))
    return FALSE;

  scales = piq_tensor_get_scales (packed);
  zero_points = piq_tensor_get_zero_points (packed);
  stored = piq_tensor_get_n_bytes (packed) + bytes_size (scales) + bytes_size (zero_points);
  row->bytes_per_element = (double) stored / n;
  row->quantize.bytes = row->dequantize.bytes = piq_tensor_get_n_bytes (demo->input) + stored;

  row->mae = sum_abs_difference (piq_tensor_get_data (demo->input, NULL),
                                 piq_tensor_get_data (demo->output, NULL), n) / n;
  return TRUE;
}

/* One row per selected rounding mode for the preset @name. */
static gboolean
demo_preset (const Demo *demo, const char *name, GError **error)
{
  g_autoptr(GEnumClass) round_modes = g_type_class_ref (PIQ_TYPE_ROUND_MODE);
  g_autoptr(PiqFormat) format = piq_format_new_preset (name, error);
  g_autoptr(PiqRecipe) recipe = piq_recipe_new ();
  g_autoptr(PiqTensor) packed = NULL;
  guint64 shape[1] = { demo->options->n_elements };

  if (format == NULL)
    return FALSE;
  if (piq_format_get_granularity (format) == PIQ_GRANULARITY_TENSOR &&
      !piq_quantizer_compute_params (demo->quantizer, format, recipe, demo->input, error))
    return FALSE;
  packed = piq_tensor_new_quantized (format, shape, 1, error);
  if (packed == NULL)
    return FALSE;

  for (guint i = 0; i < round_modes->n_values; i++)
    {
      PiqRoundMode mode = round_modes->values[i].value;
      FormatRow row = { .preset = name, .format = format, .round_mode = mode };

      if ((demo->options->round_modes & (1u << mode)) == 0)
        continue;
      set_demo_rounding (demo, recipe, mode);
      if (!measure_format (demo, recipe, packed, &row, error))
        return FALSE;
      print_format_row (&row, demo->options->n_elements);
      fflush (stdout);
    }
  return TRUE;
}

/* Quantizes the input into @packed with @recipe, dequantizes it back into
 * the f32 output and measures both calls and the round-trip error. */
static gboolean
measure_round_trip (const Demo  *demo,
                    PiqRecipe   *recipe,
                    PiqTensor   *packed,
                    DemoRow     *row,
                    GError     **error)
{
  gsize traffic = piq_tensor_get_n_bytes (demo->input) + piq_tensor_get_n_bytes (packed);

  row->dtype = piq_tensor_get_dtype (packed);
  row->round_mode = piq_recipe_get_round_mode (recipe);
  row->scale = piq_recipe_get_scale (recipe);
  row->zero_point = piq_recipe_get_zero_point (recipe);

  row->quantize.bytes = row->dequantize.bytes = traffic;
  return time_round_trip (demo, recipe, packed, &row->quantize, &row->dequantize, &row->rmse,
                          &row->sqnr_db, error);
}

/* One row per selected rounding mode for @dtype, in its affine format (whose
 * own rule is min/max). The scale and zero point do not depend on the
 * rounding mode, so they are computed once, into the recipe. */
static gboolean
demo_dtype (const Demo *demo, PiqDtype dtype, GError **error)
{
  g_autoptr(GEnumClass) round_modes = g_type_class_ref (PIQ_TYPE_ROUND_MODE);
  g_autoptr(PiqFormat) format = piq_format_new (dtype);
  g_autoptr(PiqRecipe) recipe = piq_recipe_new ();
  g_autoptr(PiqTensor) packed = NULL;
  guint64 shape[1] = { demo->options->n_elements };

  if (!piq_quantizer_compute_params (demo->quantizer, format, recipe, demo->input, error))
    return FALSE;

  /* Allocated before the rows: its page faults are not timed as quantize. */
  packed = piq_tensor_new_quantized (format, shape, 1, error);
  if (packed == NULL)
    return FALSE;

  for (guint i = 0; i < round_modes->n_values; i++)
    {
      PiqRoundMode mode = round_modes->values[i].value;
      DemoRow row;

      if ((demo->options->round_modes & (1u << mode)) == 0)
        continue;
      set_demo_rounding (demo, recipe, mode);
      if (!measure_round_trip (demo, recipe, packed, &row, error))
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
           "MAE = mean |x - x_hat|; SQNR = 10 log10(sum x^2 / sum (x - x_hat)^2).\n");
}

/* Untimed, before the first row: the first parallel region starts the
 * thread pool, which would otherwise be charged to the first row. */
static gboolean
warm_up (const Demo *demo, GError **error)
{
  g_autoptr(PiqFormat) format = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqRecipe) recipe = piq_recipe_new_affine (1.0, 0);

  return piq_quantizer_requantize (demo->quantizer, format, recipe, demo->input, demo->output,
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

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* One product of quantized weights: y [1, 4096] = x [1, 4096] · Wᵀ with W [4096, 4096]
 * from the demo's normal data, NF4 under float activations and Q8_0 under dynamic
 * int8 ones, timed (median of 9) and compared with the f32 product. */
static gboolean
demo_matmul (const DemoOptions *options, PiqQuantizer *quantizer, GError **error)
{
  const guint64 n = 4096, k = 4096;
  const guint64 w_shape[2] = { n, k }, x_shape[2] = { 1, k };
  g_autoptr(PiqTensor) w = new_normal_tensor (n * k, options->seed, error);
  g_autoptr(PiqTensor) x = w ? new_normal_tensor (k, options->seed + 1, error) : NULL;
  const struct { const char *preset; PiqActivation activation; const char *label; } rows[] = {
    { "nf4", PIQ_ACTIVATION_FLOAT, "float" },
    { "q8_0", PIQ_ACTIVATION_DYNAMIC_INT8, "dynamic int8" },
  };
  g_autofree double *exact = NULL;
  const float *wf, *xf;

  if (x == NULL || !piq_tensor_reshape (w, w_shape, 2, error) ||
      !piq_tensor_reshape (x, x_shape, 2, error))
    return FALSE;
  wf = piq_tensor_get_data (w, NULL);
  xf = piq_tensor_get_data (x, NULL);
  exact = g_new0 (double, n);
  for (guint64 j = 0; j < n; j++)
    for (guint64 i = 0; i < k; i++)
      exact[j] += (double) wf[j * k + i] * xf[i];
  g_print ("\nmatmul: y [1, %" G_GUINT64_FORMAT "] = x [1, %" G_GUINT64_FORMAT "] · Wᵀ, "
           "W quantized from N(0, 1) data; error relative to the f64 product of the f32 data\n\n",
           n, k);
  for (gsize r = 0; r < G_N_ELEMENTS (rows); r++)
    {
      g_autoptr(PiqFormat) format = piq_format_new_preset (rows[r].preset, error);
      g_autoptr(PiqTensor) qw = format ? piq_quantizer_quantize_new (quantizer, format, NULL, w, error) : NULL;
      g_autoptr(PiqPackedWeights) packed = qw ? piq_packed_weights_new (qw, rows[r].activation, error) : NULL;
      g_autoptr(PiqTensor) y = packed ? piq_quantizer_matmul_new (quantizer, x, packed, NULL, PIQ_DTYPE_F32, error) : NULL;
      double times[9], num = 0, den = 0;
      const float *yf;

      if (y == NULL)
        return FALSE;
      for (gsize t = 0; t < G_N_ELEMENTS (times); t++)
        {
          gint64 t0 = g_get_monotonic_time ();
          if (!piq_quantizer_matmul (quantizer, x, packed, NULL, y, PIQ_REDUCE_SET, error))
            return FALSE;
          times[t] = (double) (g_get_monotonic_time () - t0) / 1e3;
        }
      qsort (times, G_N_ELEMENTS (times), sizeof times[0], compare_doubles);
      yf = piq_tensor_get_data (y, NULL);
      for (guint64 j = 0; j < n; j++)
        {
          num += (yf[j] - exact[j]) * (yf[j] - exact[j]);
          den += exact[j] * exact[j];
        }
      g_print ("  %-5s weights, %-12s activations: %8.3f ms, %7.1f MB/s of weights, relative error %.4f\n",
               rows[r].preset, rows[r].label, times[4],
               (double) piq_tensor_get_n_bytes (qw) / (times[4] / 1e3) / 1e6, sqrt (num / den));
    }
  return TRUE;
}

static gboolean
run_demo (const DemoOptions *options, GError **error)
{
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  g_autoptr(PiqTensor) input = NULL;
  g_autoptr(PiqTensor) output = NULL;
  g_autoptr(GEnumClass) dtypes = g_type_class_ref (PIQ_TYPE_DTYPE);
  g_autofree const char **presets = NULL;
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
  print_table_header (demo_columns, G_N_ELEMENTS (demo_columns));
  /* Every integer dtype the library declares, in the order of the enum
   * (piq_dtype_get_range() is TRUE for exactly those). */
  for (guint i = 0; i < dtypes->n_values; i++)
    {
      PiqDtype dtype = dtypes->values[i].value;

      if (piq_dtype_get_range (dtype, NULL, NULL) && !demo_dtype (&demo, dtype, error))
        return FALSE;
    }

  /* Then every preset of the formats, with its own scales. */
  g_print ("\nformats: the presets, scales derived by each (per block, or abs-max per tensor); "
           "B/elem includes the scales\n\n");
  print_table_header (format_columns, G_N_ELEMENTS (format_columns));
  presets = piq_format_list_presets ();
  for (guint i = 0; presets[i] != NULL; i++)
    if (!demo_preset (&demo, presets[i], error))
      return FALSE;
  if (!demo_matmul (options, quantizer, error))
    return FALSE;
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
 * backward passes (uint8, per tensor), on the caller's thread count. */
typedef enum { ROW_OBSERVE, ROW_FAKE_QUANT, ROW_FAKE_QUANT_BACKWARD } ApiRowKind;

typedef struct {
  ApiRowKind      kind;
  PiqObserverKind observer;
  PiqQuantizer   *quantizer;
  PiqFormat      *format;
} ApiRowData;

static int
bench_api_row (void *user_data, const float *src, size_t n, float *dst, unsigned threads)
{
  ApiRowData *d = user_data;
  guint64 shape = n;
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqTensor) x = piq_tensor_new_for_address (PIQ_DTYPE_F32, &shape, 1, (guintptr) src,
                                                       n * sizeof (float), 0, FALSE, &error);
  g_autoptr(PiqTensor) y = x ? piq_tensor_new_for_address (PIQ_DTYPE_F32, &shape, 1,
                                                           (guintptr) dst, n * sizeof (float), 0,
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
        /* x and dy side by side: the row reads 2n floats */
        g_autoptr(PiqTensor) dy = piq_tensor_new_for_address (PIQ_DTYPE_F32, &shape, 1,
                                                              (guintptr) (src + n),
                                                              n * sizeof (float), 0, FALSE, &error);
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
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_MIN_MAX, quantizer, u8 },
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_MOVING_AVERAGE, quantizer, u8 },
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_HISTOGRAM, quantizer, u8 },
    { ROW_OBSERVE, PIQ_OBSERVER_KIND_MSE, quantizer, u8 },
    { ROW_FAKE_QUANT, 0, quantizer, u8 },
    { ROW_FAKE_QUANT_BACKWARD, 0, quantizer, u8 },
  };
  /* targets: issue 13 (80 % for min/max, moving average and QAT; the histograms'
   * reach is reported, with no target) */
  const PiqBenchApiRow api_rows[] = {
    { "observe min/max f32", 4, 0, 80, bench_api_row, &rd[0] },
    { "observe moving average f32", 4, 0, 80, bench_api_row, &rd[1] },
    { "observe histogram f32", 4, 0, 0, bench_api_row, &rd[2] },
    { "observe mse f32", 4, 0, 0, bench_api_row, &rd[3] },
    { "fake quantize u8 f32", 4, 4, 80, bench_api_row, &rd[4] },
    { "fake quantize u8 grad f32", 8, 4, 80, bench_api_row, &rd[5] },
  };
  cmd.bench.api_rows = api_rows;
  cmd.bench.n_api_rows = G_N_ELEMENTS (api_rows);
  status = piq_bench_run (&cmd.bench, stdout);
  g_clear_object (&api_data.format);
  g_clear_object (&api_data.recipe);
  g_free (cmd.op);
  return status == 0 ? EXIT_OK : status == 2 ? EXIT_USAGE : EXIT_RUNTIME;
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
static GQuark
usage_quark (void)
{
  return g_quark_from_static_string ("piquant-usage-error");
}

static int
exit_for_error (const char *who, const GError *error)
{
  if (error->domain == usage_quark ())
    return usage_error (who, "%s", error->message);
  return runtime_error (who, error);
}

static gboolean
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
static gboolean
file_error (GError **error, const char *name, const char *format, ...) G_GNUC_PRINTF (3, 4);

static gboolean
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

static void
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

static void
progress_begin (Progress *progress, guint64 total, const char *format, ...) G_GNUC_PRINTF (3, 4);

static void
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

static void
progress_advance (Progress *progress, guint64 bytes)
{
  progress->done += bytes;
  progress_draw (progress, progress->done == progress->total);
}

/* Clears the line, so that what follows (an error, the shell prompt) starts
 * on a clean one. */
static void
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
static void *
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

static void
buffer_free (void *p)
{
  free (p);
}

typedef void *PiqBufferPtr;
G_DEFINE_AUTO_CLEANUP_FREE_FUNC (PiqBufferPtr, buffer_free, NULL)

/* "cannot read in.npy: Permission denied" */
static void
set_io_error (GError **error, int saved_errno, const char *verb, const char *name)
{
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
               "cannot %s %s: %s", verb, name, g_strerror (saved_errno));
}

/* An input file and what is known of its size. */
typedef struct {
  const char *name;
  FILE       *file;
  gboolean    regular;
  guint64     size;             /* of a regular file */
  dev_t       dev;              /* which file it is (input_is_output) */
  ino_t       ino;
} Input;

static gboolean
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
static gboolean
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

static void
input_close (Input *input)
{
  if (input->file != NULL)
    fclose (input->file);
  input->file = NULL;
}

/* Reads exactly @size bytes in IO_CHUNK pieces, moving @progress. */
static gboolean
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

/* An output file: written under a temporary name beside it and renamed into
 * place once complete, so that a failure never leaves half a file under the
 * name asked for. Devices and pipes (/dev/stdout) are written directly. */
typedef struct {
  const char *name;
  char       *tmp_name;
  FILE       *file;
} Output;

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

static gboolean
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

static gboolean
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

static gboolean
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
static void
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
 * the format and checks the sizes. */
static gboolean
container_read_header (Input *input, PiqContainer *container, GError **error)
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

  text = g_malloc (text_len);
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
  if (input->regular)
    return piq_container_check_file_size (container, input->name, input->size, error);
  return piq_container_get_file_size (container, input->name, &total, error);
}

/* -- option values shared by both commands -- */

typedef enum {
  FILE_FORMAT_AUTO,
  FILE_FORMAT_NPY,
  FILE_FORMAT_RAW,
} FileFormat;

/* A nick of enum @type for which @accept (when given) holds; the message
 * lists the accepted nicks. */
static gboolean
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

static gboolean
accept_quantized (int value)
{
  return piq_dtype_is_quantized (value);
}

static gboolean
accept_float (int value)
{
  return piq_dtype_is_float (value);
}

static gboolean
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

static gboolean
parse_file_threads (const char *option_name, const char *value, guint *n_threads, GError **error)
{
  guint64 n;

  if (!parse_unsigned_option (option_name, value, 0, FILE_MAX_THREADS, &n, error))
    return FALSE;
  *n_threads = (guint) n;
  return TRUE;
}

static gboolean
has_npy_suffix (const char *name)
{
  gsize len = strlen (name);

  return len >= 4 && g_ascii_strcasecmp (name + len - 4, ".npy") == 0;
}

/* Both commands take exactly INPUT and OUTPUT. */
static gboolean
check_two_files (int argc, char **argv)
{
  if (argc == 3)
    return TRUE;
  usage_error (g_get_prgname (), argc < 2 ? "INPUT and OUTPUT are missing" : "OUTPUT is missing");
  return FALSE;
}

/* ---- piquant quantize ---- */

typedef struct {
  gboolean     have_dtype;
  PiqDtype     dtype;
  char        *preset;
  gboolean     have_granularity;
  PiqGranularity granularity;
  gboolean     have_axis;
  int          axis;
  gboolean     symmetric;
  gboolean     have_block_size;
  guint        block_size;
  gboolean     have_scale_dtype;
  PiqDtype     scale_dtype;
  gboolean     double_quant;
  gboolean     have_input_dtype;
  PiqDtype     input_dtype;
  FileFormat   input_format;
  PiqRoundMode round_mode;
  guint64      seed;
  gboolean     have_scale_rule;
  PiqScaleRule scale_rule;
  gboolean     no_include_zero;
  gboolean     have_scale;
  double       scale;
  gboolean     have_zero_point;
  gint64       zero_point;
  guint        n_threads;
  gboolean     no_progress;
} QuantizeOptions;

static gboolean
parse_q_dtype (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  PiqDtype dtype;

  /* The dtype names (fp8_e4m3, q8_0), as the container and the presets
   * spell them; the GEnum nicks (fp8-e4m3) as well. */
  if (piq_dtype_from_name (value, &dtype) && piq_dtype_is_quantized (dtype))
    v = dtype;
  else if (!parse_enum_option (PIQ_TYPE_DTYPE, accept_quantized, option_name, value, &v, NULL))
    {
      g_autoptr(GEnumClass) klass = g_type_class_ref (PIQ_TYPE_DTYPE);
      g_autoptr(GString) names = g_string_new (NULL);

      for (guint i = 0; i < klass->n_values; i++)
        if (piq_dtype_is_quantized (klass->values[i].value))
          g_string_append_printf (names, "%s%s", names->len > 0 ? ", " : "",
                                  piq_dtype_get_name (klass->values[i].value));
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be one of %s, not '%s'", option_name, names->str, value);
      return FALSE;
    }
  options->dtype = v;
  options->have_dtype = TRUE;
  return TRUE;
}

static gboolean
parse_q_input_dtype (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_DTYPE, accept_float, option_name, value, &v, error))
    return FALSE;
  options->input_dtype = v;
  options->have_input_dtype = TRUE;
  return TRUE;
}

static gboolean
parse_q_input_format (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_format_value (option_name, value, &((QuantizeOptions *) data)->input_format, error);
}

static gboolean
parse_q_rounding (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_ROUND_MODE, NULL, option_name, value, &v, error))
    return FALSE;
  options->round_mode = v;
  return TRUE;
}

static gboolean
parse_q_seed (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_unsigned_option (option_name, value, 0, G_MAXUINT64,
                                &((QuantizeOptions *) data)->seed, error);
}

static gboolean
parse_q_scale_rule (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_SCALE_RULE, NULL, option_name, value, &v, error))
    return FALSE;
  options->scale_rule = v;
  options->have_scale_rule = TRUE;
  return TRUE;
}

static gboolean
parse_q_scale (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  char *end;
  double scale = g_ascii_strtod (value, &end);

  if (*value == '\0' || *end != '\0' || !isfinite (scale) || scale <= 0.0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs a finite number greater than 0, not '%s'", option_name, value);
      return FALSE;
    }
  options->scale = scale;
  options->have_scale = TRUE;
  return TRUE;
}

static gboolean
parse_q_zero_point (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;

  if (!g_ascii_string_to_signed (value, 10, G_MININT64, G_MAXINT64, &options->zero_point, NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs a whole number, not '%s'", option_name, value);
      return FALSE;
    }
  options->have_zero_point = TRUE;
  return TRUE;
}

static gboolean
parse_q_preset (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  g_autoptr(PiqFormat) format = piq_format_new_preset (value, NULL);

  if (format == NULL)
    {
      g_autofree const char **names = piq_format_list_presets ();
      g_autofree char *list = g_strjoinv (", ", (char **) names);

      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s: no preset is called '%s' (presets: %s)", option_name, value, list);
      return FALSE;
    }
  g_free (options->preset);
  options->preset = g_strdup (value);
  return TRUE;
}

static gboolean
parse_q_granularity (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  int v;

  if (!parse_enum_option (PIQ_TYPE_GRANULARITY, NULL, option_name, value, &v, NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be tensor, channel or block, not '%s'", option_name, value);
      return FALSE;
    }
  options->granularity = v;
  options->have_granularity = TRUE;
  return TRUE;
}

static gboolean
parse_q_axis (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  gint64 axis;

  if (!g_ascii_string_to_signed (value, 10, -PIQ_MAX_DIMS, PIQ_MAX_DIMS - 1, &axis, NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs a whole number from %d to %d, not '%s'", option_name,
                   -PIQ_MAX_DIMS, PIQ_MAX_DIMS - 1, value);
      return FALSE;
    }
  options->axis = (int) axis;
  options->have_axis = TRUE;
  return TRUE;
}

static gboolean
parse_q_block_size (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  guint64 n;

  if (!parse_unsigned_option (option_name, value, 1, G_MAXUINT, &n, error))
    return FALSE;
  options->block_size = (guint) n;
  options->have_block_size = TRUE;
  return TRUE;
}

static gboolean
parse_q_scale_dtype (const char *option_name, const char *value, gpointer data, GError **error)
{
  QuantizeOptions *options = data;
  PiqDtype dtype;

  if (!piq_dtype_from_name (value, &dtype) ||
      (dtype != PIQ_DTYPE_F32 && dtype != PIQ_DTYPE_F16 && dtype != PIQ_DTYPE_E8M0))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be f32, f16 or e8m0, not '%s'", option_name, value);
      return FALSE;
    }
  options->scale_dtype = dtype;
  options->have_scale_dtype = TRUE;
  return TRUE;
}

static gboolean
parse_q_threads (const char *option_name, const char *value, gpointer data, GError **error)
{
  return parse_file_threads (option_name, value, &((QuantizeOptions *) data)->n_threads, error);
}

static const GOptionEntry quantize_entries[] = {
  { "dtype", 'd', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_dtype,
    "Quantized type: an integer type (uint2 … int64), a float or code format (fp8_e4m3, "
    "fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4_e2m1, nf4, fp4_bnb, nf8, binary), a ggml type (q8_0, "
    "q4_0) or block floating point (bfp2 … bfp8) (default uint8, or the preset's)", "TYPE" },
  { "preset", 'p', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_preset,
    "A named format (mxfp4, nf4, nf4_dq, q8_0, msfp16, …; `piquant info` lists them with "
    "its presets option): its dtype, granularity, block size, scale dtype, nibble order and "
    "double quantization; options given explicitly override it", "NAME" },
  { "input-dtype", 'i', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_input_dtype,
    "Element type of the input: f32, f64, f16 or bf16; needed for raw input and for "
    "bf16 stored in a .npy as uint16 ('<u2')", "TYPE" },
  { "input-format", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_input_format,
    "npy or raw (default: npy when INPUT ends in .npy or starts with the .npy magic)", "FORMAT" },
  { "rounding", 'r', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_rounding,
    "Rounding mode: nearest (ties to even) or stochastic (default nearest)", "MODE" },
  { "seed", 's', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_seed,
    "Seed of stochastic rounding (default 0: a fresh one, recorded in OUTPUT)", "S" },
  { "scale-rule", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_scale_rule,
    "How the scales and zero points follow from the data; the rule must apply to the format: "
    "min-max or mean-std (affine integers; mean-std per tensor only), abs-max (symmetric "
    "integers, code formats), pow2-floor, pow2-ceil, pow2-even or pow2-rceil (e8m0 scales); "
    "for an integer type, abs-max makes the format symmetric and min-max or mean-std affine "
    "(default: the format's own rule)", "RULE" },
  { "no-include-zero", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "With min-max, do not widen the range to include 0", NULL },
  { "scale", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_scale,
    "Use this scale instead of computing one from the data", "S" },
  { "zero-point", 'z', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_zero_point,
    "Zero point to go with --scale (default 0)", "Z" },
  { "granularity", 'g', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_granularity,
    "What one scale covers: tensor (default), channel (each index of --axis of INPUT's shape) "
    "or block (--block-size consecutive elements along the last axis, never across rows)", "G" },
  { "axis", 'a', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_axis,
    "For channel: the axis of INPUT's shape that the scales run along, negative from the end "
    "(default 0: the rows of a 2-D array)", "AXIS" },
  { "symmetric", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Integer types: no zero point (0, or the middle of an unsigned range) instead of an affine "
    "one", NULL },
  { "block-size", 'b', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_block_size,
    "For block: elements per block (default 32 with e8m0 scales, else 64, or the preset's)",
    "N" },
  { "scale-dtype", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_scale_dtype,
    "How per-channel and per-block scales are stored: f32 (default), f16 or e8m0", "TYPE" },
  { "double-quant", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Store the f32 per-block scales double-quantized (bitsandbytes' compress_statistics)",
    NULL },
  { "threads", 't', G_OPTION_FLAG_NONE, G_OPTION_ARG_CALLBACK, (gpointer) parse_q_threads,
    "Number of threads (default 0 = one per processor)", "T" },
  { "no-progress", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, NULL,
    "Show no progress bar, even on a terminal", NULL },
  G_OPTION_ENTRY_NULL
};

/* The input's element type, shape and data offset: from the .npy header, or
 * from --input-dtype and the file size for raw input. */
typedef struct {
  PiqDtype dtype;
  guint64  n_elements;
  guint    n_dims;
  guint64  shape[PIQ_NPY_MAX_DIMS];
  gsize    data_bytes;
} InputArray;

static gboolean
looks_like_npy (Input *input)
{
  guint8 magic[PIQ_NPY_MAGIC_LEN];
  gboolean is_npy;

  if (!input->regular)
    return FALSE;
  is_npy = fread (magic, 1, sizeof magic, input->file) == sizeof magic &&
           piq_npy_has_magic (magic, sizeof magic);
  rewind (input->file);
  return is_npy;
}

static gboolean
open_npy_input (Input *input, const QuantizeOptions *options, InputArray *array, GError **error)
{
  PiqNpyHeader header;
  g_autoptr(GError) local_error = NULL;

  if (!piq_npy_read_header (input->file, input->name, &header, error))
    return FALSE;

  if (header.dtype == PIQ_DTYPE_UINT16)
    {
      /* numpy has no bfloat16: its bits travel as uint16. */
      if (!options->have_input_dtype || options->input_dtype != PIQ_DTYPE_BF16)
        {
          g_set_error (error, usage_quark (), 0,
                       "%s holds uint16 data ('%s'); if it is bfloat16, say so with "
                       "--input-dtype bf16", input->name, header.descr);
          return FALSE;
        }
      array->dtype = PIQ_DTYPE_BF16;
    }
  else if (!piq_dtype_is_float (header.dtype))
    return file_error (error, input->name, "holds %s data ('%s'); piquant quantizes f32, f64, "
                       "f16 or bf16 arrays", piq_dtype_get_name (header.dtype), header.descr);
  else if (options->have_input_dtype && options->input_dtype != header.dtype)
    {
      g_set_error (error, usage_quark (), 0,
                   "--input-dtype %s does not match %s, which holds %s ('%s')",
                   piq_dtype_get_name (options->input_dtype), input->name,
                   piq_dtype_get_name (header.dtype), header.descr);
      return FALSE;
    }
  else
    array->dtype = header.dtype;

  array->n_elements = header.n_elements;
  array->n_dims = header.n_dims;
  memcpy (array->shape, header.shape, sizeof array->shape);
  if (!piq_dtype_get_size_for_n (array->dtype, array->n_elements, &array->data_bytes, &local_error))
    return file_error (error, input->name, "%s", local_error->message);
  /* Bytes after the array are allowed: numpy.save() can append arrays to
   * one file, and numpy.load() reads the first. */
  if (input->regular && input->size - header.data_offset < array->data_bytes)
    return file_error (error, input->name, "the file is too short: its header announces %"
                       G_GSIZE_FORMAT " bytes of data, %" G_GUINT64_FORMAT " follow the header",
                       array->data_bytes, input->size - header.data_offset);
  return TRUE;
}

static gboolean
open_raw_input (Input *input, const QuantizeOptions *options, InputArray *array, GError **error)
{
  guint element_size;

  if (!options->have_input_dtype)
    {
      g_set_error (error, usage_quark (), 0,
                   "%s is read as raw data, which needs --input-dtype (f32, f64, f16 or bf16)",
                   input->name);
      return FALSE;
    }
  if (!input->regular)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                   "%s is not a regular file: raw input must be one, as its size gives the "
                   "element count", input->name);
      return FALSE;
    }
  array->dtype = options->input_dtype;
  element_size = piq_dtype_get_bits (array->dtype) / 8;
  if (input->size % element_size != 0)
    return file_error (error, input->name, "%" G_GUINT64_FORMAT " bytes is not a whole number "
                       "of %u-byte %s elements", input->size, element_size,
                       piq_dtype_get_name (array->dtype));
  array->n_elements = input->size / element_size;
  array->n_dims = 1;
  array->shape[0] = array->n_elements;
  array->data_bytes = (gsize) input->size;
  return TRUE;
}

/* The format the options ask for, before the input is known: the preset's
 * (or the type's own), overridden by the explicit options. The ggml types
 * exist per block only. A preset's block size stays only while its
 * granularity does, its nibble order only on 4-bit codes. For integers without E8M0 scales, an explicit --scale-rule abs-max
 * asks for a symmetric format and min-max or mean-std for an affine one, as
 * those rules apply to nothing else. */
static PiqFormat *
build_quantize_format (const QuantizeOptions *options)
{
  g_autoptr(PiqFormat) base = options->preset != NULL
                              ? piq_format_new_preset (options->preset, NULL)
                              : piq_format_new (options->dtype);
  PiqDtype base_dtype = piq_format_get_dtype (base);
  PiqDtype dtype = options->have_dtype ? options->dtype : base_dtype;
  PiqGranularity base_granularity = piq_format_get_granularity (base);
  PiqGranularity granularity = options->have_granularity ? options->granularity
                                : piq_dtype_get_bits (dtype) == 0 ? PIQ_GRANULARITY_BLOCK
                                : base_granularity;
  PiqDtype scale_dtype = options->have_scale_dtype ? options->scale_dtype
                                                   : piq_format_get_scale_dtype (base);
  guint block_size = 0;
  gboolean symmetric = FALSE;

  if (options->have_block_size)
    block_size = options->block_size;
  else if (granularity == PIQ_GRANULARITY_BLOCK && base_granularity == PIQ_GRANULARITY_BLOCK)
    block_size = piq_format_get_block_size (base);

  if (piq_dtype_get_range (dtype, NULL, NULL) &&
      (granularity == PIQ_GRANULARITY_TENSOR || scale_dtype != PIQ_DTYPE_E8M0))
    {
      if (piq_dtype_get_range (base_dtype, NULL, NULL))
        symmetric = piq_format_get_symmetric (base);
      if (options->have_scale_rule && options->scale_rule == PIQ_SCALE_RULE_ABS_MAX)
        symmetric = TRUE;
      else if (options->have_scale_rule && (options->scale_rule == PIQ_SCALE_RULE_MIN_MAX ||
                                            options->scale_rule == PIQ_SCALE_RULE_MEAN_STD))
        symmetric = FALSE;
    }
  if (options->symmetric)
    symmetric = TRUE;

  return g_object_new (PIQ_TYPE_FORMAT,
                       "dtype", dtype,
                       "granularity", granularity,
                       "axis", options->axis,
                       "block-size", block_size,
                       "scale-dtype", scale_dtype,
                       "symmetric", symmetric,
                       "saturate", piq_format_get_saturate (base),
                       "high-nibble-first", piq_format_get_high_nibble_first (base) &&
                                            piq_dtype_get_bits (dtype) == 4,
                       "double-quant", options->double_quant || piq_format_get_double_quant (base),
                       NULL);
}

/* How the scales are chosen: the given per-tensor scale (and, for affine
 * integers or when one was given, zero point), or a rule. */
static PiqRecipe *
build_quantize_recipe (const QuantizeOptions *options, PiqFormat *format)
{
  PiqRecipe *recipe;

  if (options->have_scale)
    recipe = options->have_zero_point || (piq_dtype_get_range (piq_format_get_dtype (format),
                                                               NULL, NULL) &&
                                          !piq_format_get_symmetric (format))
             ? piq_recipe_new_affine (options->scale, options->zero_point)
             : piq_recipe_new_fixed (options->scale);
  else
    {
      recipe = piq_recipe_new ();
      piq_recipe_set_scale_rule (recipe, options->scale_rule);
      if (options->no_include_zero)
        piq_recipe_set_include_zero (recipe, FALSE);
    }
  piq_recipe_set_round_mode (recipe, options->round_mode);
  piq_recipe_set_seed (recipe, options->seed);
  return recipe;
}

/* The rule that quantize applies: @rule, or for PIQ_SCALE_RULE_DEFAULT the
 * format's own (docs/overview.md, "Recipes"): the OCP floor rule for E8M0
 * scales, min/max for affine integers, abs-max for symmetric integers and the
 * code formats. */
static PiqScaleRule
effective_scale_rule (PiqFormat *format, PiqScaleRule rule)
{
  if (rule != PIQ_SCALE_RULE_DEFAULT)
    return rule;
  if (piq_format_get_granularity (format) != PIQ_GRANULARITY_TENSOR &&
      piq_format_get_scale_dtype (format) == PIQ_DTYPE_E8M0)
    return PIQ_SCALE_RULE_POW2_FLOOR;
  if (piq_dtype_get_range (piq_format_get_dtype (format), NULL, NULL) &&
      !piq_format_get_symmetric (format))
    return PIQ_SCALE_RULE_MIN_MAX;
  return PIQ_SCALE_RULE_ABS_MAX;
}

/* Whether quantize derives one scale and zero point for the whole tensor
 * (by compute_params, or from --scale) rather than scales per channel or
 * block (or none: the ggml types keep theirs inside their blocks). */
static gboolean
has_tensor_scale (PiqFormat *format)
{
  return piq_format_get_granularity (format) == PIQ_GRANULARITY_TENSOR &&
         piq_dtype_get_bits (piq_format_get_dtype (format)) > 0;
}

/* What the library refuses in the options once it sees the input (a rule
 * that does not apply to the format, a zero point outside the type's range,
 * an axis the input lacks) is a usage error; the data's own faults (NaN, no
 * elements) are not. */
static void
prefix_quantize_error (GError **error, const QuantizeOptions *options, const char *input_name)
{
  GError *e = *error;

  if (e->domain == PIQ_ERROR &&
      (e->code == PIQ_ERROR_UNSUPPORTED || e->code == PIQ_ERROR_INVALID_ZERO_POINT ||
       (e->code == PIQ_ERROR_INVALID_SCALE && options->have_scale)))
    {
      *error = g_error_new (usage_quark (), 0, "%s: %s", input_name, e->message);
      g_error_free (e);
    }
  else
    g_prefix_error (error, "%s: ", input_name);
}

static gboolean
run_quantize (const QuantizeOptions *options,
              PiqFormat             *format,
              PiqRecipe             *recipe,
              const char            *input_name,
              const char            *output_name,
              Progress              *progress,
              GError               **error)
{
  g_autoptr(PiqQuantizer) quantizer = piq_quantizer_new ();
  g_autoptr(PiqTensor) src = NULL;
  g_autoptr(PiqTensor) dst = NULL;
  g_auto(PiqBufferPtr) src_data = NULL;
  g_autofree guint8 *header = NULL;
  g_autoptr(GBytes) scales = NULL;
  g_autoptr(GBytes) zero_points = NULL;
  g_autoptr(GError) local_error = NULL;
  g_auto(PiqContainer) container = { 0 };
  PiqDtype dtype = piq_format_get_dtype (format);
  gboolean compute = has_tensor_scale (format) && !options->have_scale;
  FileFormat file_format = options->input_format;
  Input input = { 0 };
  Output output;
  InputArray array = { 0 };
  guint64 shape[PIQ_MAX_DIMS];
  guint n_dims = 0;
  gconstpointer dst_data;
  gsize dst_bytes, header_len;
  gboolean ok;

  if (!check_little_endian (error) || !input_open (&input, input_name, error) ||
      input_is_output (&input, output_name, error))
    {
      input_close (&input);
      return FALSE;
    }
  if (file_format == FILE_FORMAT_AUTO)
    file_format = has_npy_suffix (input_name) || looks_like_npy (&input) ? FILE_FORMAT_NPY
                                                                          : FILE_FORMAT_RAW;
  ok = file_format == FILE_FORMAT_NPY ? open_npy_input (&input, options, &array, error)
                                      : open_raw_input (&input, options, &array, error);
  if (ok && piq_format_get_granularity (format) == PIQ_GRANULARITY_CHANNEL &&
      array.n_dims > PIQ_MAX_DIMS)
    {
      g_set_error (error, usage_quark (), 0, "%s has %u dimensions; --granularity channel takes "
                   "at most %d", input_name, array.n_dims, PIQ_MAX_DIMS);
      ok = FALSE;
    }
  if (ok)
    piq_container_library_shape (array.shape, array.n_dims, shape, &n_dims);
  if (ok && !piq_format_get_sizes (format, shape, n_dims, &dst_bytes, NULL, NULL, &local_error))
    {
      /* The options do not fit this input (an axis it does not have, say). */
      g_set_error (error, usage_quark (), 0, "%s: %s", input_name, local_error->message);
      ok = FALSE;
    }
  if (ok)
    {
      progress_init (progress, g_get_prgname (), !options->no_progress, array.data_bytes,
                     compute ? 4 : 3);
      src_data = buffer_alloc (array.data_bytes, input_name, error);
      ok = src_data != NULL;
    }
  if (ok)
    {
      progress_begin (progress, array.data_bytes, "reading %s", input_name);
      ok = input_read (&input, src_data, array.data_bytes, progress, error);
    }
  input_close (&input);
  if (!ok)
    return FALSE;

  src = piq_tensor_new_for_address (array.dtype, shape, n_dims, (guintptr) src_data,
                                    array.data_bytes, 0, FALSE, error);
  if (src == NULL)
    return FALSE;

  piq_quantizer_set_n_threads (quantizer, options->n_threads);
  if (compute)
    {
      progress_begin (progress, 0, "computing the scale and zero point");
      if (!piq_quantizer_compute_params (quantizer, format, recipe, src, error))
        {
          prefix_quantize_error (error, options, input_name);
          return FALSE;
        }
    }

  dst = piq_tensor_new_quantized (format, shape, n_dims, error);
  if (dst == NULL)
    return FALSE;
  progress_begin (progress, 0, "quantizing to %s", piq_dtype_get_name (dtype));
  if (!piq_quantizer_quantize (quantizer, recipe, src, dst, error))
    {
      prefix_quantize_error (error, options, input_name);
      return FALSE;
    }
  g_clear_object (&src);
  g_clear_pointer (&src_data, buffer_free);

  /* What the quantized tensor holds, with the seed it drew when none was given. */
  dst_data = piq_tensor_get_data (dst, &dst_bytes);
  scales = piq_tensor_get_scales (dst);
  zero_points = piq_tensor_get_zero_points (dst);
  container.format = g_object_ref (piq_tensor_get_format (dst));
  container.n_elements = array.n_elements;
  container.n_dims = array.n_dims;
  memcpy (container.shape, array.shape, sizeof container.shape);
  container.scale = piq_tensor_get_scale (dst);
  container.zero_point = piq_tensor_get_zero_point (dst);
  container.round_mode = piq_recipe_get_round_mode (recipe);
  container.seed = piq_tensor_get_seed (dst);
  container.scale_rule = options->have_scale
                         ? "explicit"
                         : enum_nick (PIQ_TYPE_SCALE_RULE,
                                      effective_scale_rule (container.format,
                                                            piq_recipe_get_scale_rule (recipe)));
  container.include_zero = piq_recipe_get_include_zero (recipe);
  container.source_dtype = array.dtype;
  container.data_bytes = dst_bytes;
  container.scales_bytes = scales != NULL ? g_bytes_get_size (scales) : 0;
  container.zero_points_bytes = zero_points != NULL ? g_bytes_get_size (zero_points) : 0;
  header = piq_container_format_header (&container, &header_len);

  if (!output_open (&output, output_name, error))
    return FALSE;
  progress_begin (progress, dst_bytes, "writing %s", output_name);
  if (!output_write (&output, header, header_len, NULL, error) ||
      !output_write (&output, dst_data, dst_bytes, progress, error) ||
      (scales != NULL && !output_write (&output, g_bytes_get_data (scales, NULL),
                                        container.scales_bytes, NULL, error)) ||
      (zero_points != NULL && !output_write (&output, g_bytes_get_data (zero_points, NULL),
                                             container.zero_points_bytes, NULL, error)))
    {
      output_abort (&output);
      return FALSE;
    }
  return output_commit (&output, error);
}

static int
cmd_quantize (const Command *command, int argc, char **argv)
{
  QuantizeOptions options = {
    .dtype = PIQ_DTYPE_UINT8,
    .input_format = FILE_FORMAT_AUTO,
    .round_mode = PIQ_ROUND_NEAREST,
    .scale_rule = PIQ_SCALE_RULE_DEFAULT,
  };
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, &options, NULL);
  GOptionEntry entries[G_N_ELEMENTS (quantize_entries)];
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) format = NULL;
  g_autoptr(PiqRecipe) recipe = NULL;
  g_autofree char *preset = NULL;
  Progress progress = { 0 };
  PiqGranularity granularity;
  const char *who;
  gboolean ok;

  /* The flags point into this call's options. */
  memcpy (entries, quantize_entries, sizeof entries);
  for (gsize i = 0; entries[i].long_name != NULL; i++)
    if (strcmp (entries[i].long_name, "no-include-zero") == 0)
      entries[i].arg_data = &options.no_include_zero;
    else if (strcmp (entries[i].long_name, "no-progress") == 0)
      entries[i].arg_data = &options.no_progress;
    else if (strcmp (entries[i].long_name, "double-quant") == 0)
      entries[i].arg_data = &options.double_quant;
    else if (strcmp (entries[i].long_name, "symmetric") == 0)
      entries[i].arg_data = &options.symmetric;
  g_option_group_add_entries (group, entries);
  ok = parse_command_options (command, group, &argc, &argv);
  preset = options.preset;      /* freed on return; parse_q_preset allocated it */
  if (!ok)
    return EXIT_USAGE;
  who = g_get_prgname ();
  if (!check_two_files (argc, argv))
    return EXIT_USAGE;

  format = build_quantize_format (&options);
  granularity = piq_format_get_granularity (format);
  if (options.have_zero_point && !options.have_scale)
    return usage_error (who, "--zero-point needs --scale");
  if (options.have_scale && !has_tensor_scale (format))
    return usage_error (who, "--scale gives one scale for the whole tensor: %s",
                        piq_dtype_get_bits (piq_format_get_dtype (format)) == 0
                        ? "the ggml types keep their scales inside their blocks"
                        : "per-channel and per-block scales are derived from the data");
  if (options.have_scale && (options.have_scale_rule || options.no_include_zero))
    return usage_error (who, "--scale gives the parameters: --%s does not apply",
                        options.have_scale_rule ? "scale-rule" : "no-include-zero");
  if (options.no_include_zero &&
      effective_scale_rule (format, options.scale_rule) != PIQ_SCALE_RULE_MIN_MAX)
    return usage_error (who, "--no-include-zero applies to --scale-rule min-max only");
  if (options.seed != 0 && options.round_mode != PIQ_ROUND_STOCHASTIC)
    return usage_error (who, "--seed applies to --rounding stochastic only");
  if (options.have_axis && granularity != PIQ_GRANULARITY_CHANNEL)
    return usage_error (who, "--axis applies to --granularity channel");
  if (options.have_block_size && granularity != PIQ_GRANULARITY_BLOCK)
    return usage_error (who, "--block-size applies to --granularity block");
  if (options.have_scale_dtype && granularity == PIQ_GRANULARITY_TENSOR)
    return usage_error (who, "--scale-dtype applies to --granularity channel or block");
  if (!piq_format_validate (format, &error))
    return usage_error (who, "%s", error->message);
  recipe = build_quantize_recipe (&options, format);

  ok = run_quantize (&options, format, recipe, argv[1], argv[2], &progress, &error);
  progress_finish (&progress);
  return ok ? EXIT_OK : exit_for_error (who, error);
}

/* ---- piquant dequantize ---- */

typedef struct {
  gboolean   have_output_dtype;
  PiqDtype   output_dtype;
  FileFormat format;
  guint      n_threads;
  gboolean   no_progress;
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
  G_OPTION_ENTRY_NULL
};

static gboolean
run_dequantize (const DequantizeOptions *options,
                const char              *input_name,
                const char              *output_name,
                Progress                *progress,
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
  ok = container_read_header (&input, &container, error);
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
  return output_commit (&output, error);
}

static int
cmd_dequantize (const Command *command, int argc, char **argv)
{
  DequantizeOptions options = { .format = FILE_FORMAT_AUTO };
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, &options, NULL);
  GOptionEntry entries[G_N_ELEMENTS (dequantize_entries)];
  g_autoptr(GError) error = NULL;
  Progress progress = { 0 };
  gboolean ok;

  memcpy (entries, dequantize_entries, sizeof entries);
  for (gsize i = 0; entries[i].long_name != NULL; i++)
    if (strcmp (entries[i].long_name, "no-progress") == 0)
      entries[i].arg_data = &options.no_progress;
  g_option_group_add_entries (group, entries);
  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;
  if (!check_two_files (argc, argv))
    return EXIT_USAGE;

  ok = run_dequantize (&options, argv[1], argv[2], &progress, &error);
  progress_finish (&progress);
  return ok ? EXIT_OK : exit_for_error (g_get_prgname (), error);
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
  { "quantize", "INPUT OUTPUT", 2,
    "Quantize a .npy or raw float file into a piquant container (.piqt)", cmd_quantize },
  { "dequantize", "INPUT OUTPUT", 2,
    "Dequantize a piquant container (.piqt) into a .npy or raw float file", cmd_dequantize },
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
  int width = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    width = MAX (width, (int) strlen (commands[i].name));
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    g_string_append_printf (description, "  %-*s  %s\n", width, commands[i].name, commands[i].summary);
  g_string_append (description, "\nRun 'piquant COMMAND --help' for the options of a command.\n");

  g_option_context_set_summary (context,
                                "CPU quantization kernels: information, demonstrations and "
                                "file conversion.");
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
    return usage_error ("piquant", "unknown command '%s'", argv[1]);
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
    return usage_error ("piquant", "unknown command '%s'", argv[1]);
  return command->run (command, argc - 1, argv + 1);
}

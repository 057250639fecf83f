/* piquant-demo.c: `piquant demo`: the speed and error of every type and preset
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piquant-tool.h"

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
  /* Quantize time of the block presets' rows, per rounding mode: the footer
   * states what stochastic rounding costs there. */
  gint64             block_quantize_usec[PIQ_ROUND_STOCHASTIC + 1];
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
demo_preset (Demo *demo, const char *name, GError **error)
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
      if (piq_format_get_granularity (format) == PIQ_GRANULARITY_BLOCK &&
          (guint) mode < G_N_ELEMENTS (demo->block_quantize_usec))
        demo->block_quantize_usec[mode] += row.quantize.usec;
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
print_demo_footer (const Demo *demo)
{
  const gint64 *usec = demo->block_quantize_usec;

  g_print ("\nGB/s counts bytes read plus bytes written; Melem/s counts elements; "
           "MAE = mean |x - x_hat|; SQNR = 10 log10(sum x^2 / sum (x - x_hat)^2).\n");
  /* Block formats draw one random number per element where nearest rounding
   * does a few operations: the ratio this run measured, over all their rows. */
  if (usec[PIQ_ROUND_NEAREST] > 0 && usec[PIQ_ROUND_STOCHASTIC] > 0)
    g_print ("Stochastic rounding costs more in the block formats: their stochastic rows "
             "took %.1fx the time of their nearest rows to quantize in this run.\n",
             (double) usec[PIQ_ROUND_STOCHASTIC] / usec[PIQ_ROUND_NEAREST]);
  if (demo->options->n_elements == DEMO_DEFAULT_ELEMENTS)
    g_print ("For a short run: piquant demo --elements 1000000\n");
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
  print_demo_footer (&demo);
  return TRUE;
}

int
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

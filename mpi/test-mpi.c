/* test-mpi.c: libpiquant-mpi-1.0 under mpiexec (test-mpi.sh runs it on 2, 3 and 4
 * ranks). Every check is decided on every rank and combined (all must pass);
 * rank 0 prints TAP lines without a plan (test-mpi.sh prints it).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The oracle is independent of the library: the exact sum is MPI_Allreduce of
 * the data in double, and each format's error bound is derived from its grid
 * (table below). A chunk is quantized p times on its way to every rank (p − 1
 * partial sums in reduce-scatter, the complete sum once in all-gather), each
 * time with an error of at most δ·A, where A is the block's max |x| of what is
 * quantized, A ≤ S + (errors so far), S = Σ over ranks of the block's max |x|.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "piquant-mpi.h"

static int rank, size;
static int n_failed;

/* One TAP line: passes when every rank passed. */
static void check (gboolean ok, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static void
check (gboolean ok, const char *fmt, ...)
{
  int mine = ok ? 1 : 0, all = 0;
  va_list ap;
  char *msg;

  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  MPI_Allreduce (&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok)
    printf ("# rank %d failed: %s\n", rank, msg);
  if (rank == 0)
    printf ("%s - np=%d: %s\n", all ? "ok" : "not ok", size, msg);
  fflush (stdout);
  n_failed += !all;
  g_free (msg);
}

/* Deterministic data: N(0,1)-like values whose magnitude changes every 64
 * elements, so per-block scales differ; different on every rank. */
static float
datum (int r, gsize i, guint64 salt)
{
  guint64 z = (guint64) r * G_GUINT64_CONSTANT (0x9e3779b97f4a7c15) + i * 0x632be59bd9b4e019u + salt;
  z = (z ^ (z >> 31)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 29)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  z ^= z >> 32;
  double u1 = ((z >> 11) + 0.5) / 9007199254740992.0;
  double u2 = ((z & 0xfffff) + 0.5) / 1048576.0;
  double g = sqrt (-2 * log (u1)) * cos (2 * G_PI * u2);
  return (float) (g * ldexp (1.0, (int) ((i / 64) % 7) - 3));
}

/* The formats and their δ: a bound on |error| / (block max |x|) of one
 * quantization, nearest or stochastic (largest gap of the grid, plus what
 * clamping can cost where the scale rule lets values pass the largest code). */
typedef struct {
  const char *preset;   /* a preset name, or NULL with dtype + block */
  PiqDtype    dtype;
  guint       block;    /* 0: per tensor */
  double      delta;
  gboolean    stochastic_ok;
} Fmt;

static const Fmt formats[] = {
  /* per tensor, affine, min/max of each chunk: as uint8/64 below */
  { NULL, PIQ_DTYPE_UINT8, 0, 3.0 / 255, TRUE },
  /* uint8/64 affine: gap (max − min)/255 ≤ 2A/255, zero-point rounding moves the
   * range by up to half a gap */
  { NULL, PIQ_DTYPE_UINT8, 64, 3.0 / 255, TRUE },
  { NULL, PIQ_DTYPE_UINT4, 64, 3.0 / 15, TRUE },
  { "int8_block", 0, 64, 1.0 / 127, TRUE },           /* symmetric: gap A/127 */
  { "int4_block", 0, 64, 1.0 / 7, TRUE },
  { "fp8_e4m3", 0, 0, 32.0 / 448, TRUE },             /* A ↦ 448; top gap 32 */
  /* MX: A/scale ∈ [256, 512) ↦ clamped at 448, 64 below 512 */
  { "mxfp8_e4m3", 0, 32, 64.0 / 256, TRUE },
  { "mxfp4", 0, 32, 2.0 / 4, TRUE },                  /* A/scale ∈ [4, 8), max 6 */
  { "nf4", 0, 64, 0.3038 + 1e-4, TRUE },              /* NF4's largest gap: −1 to −0.6962 */
  { "q8_0", 0, 32, 1.01 / 127, TRUE },                /* d = A/127 rounded to f16 */
};

static PiqFormat *
make_format (const Fmt *f)
{
  if (f->preset)
    return piq_format_new_preset (f->preset, NULL);
  if (f->block == 0)
    return piq_format_new (f->dtype);
  return piq_format_new_per_block (f->dtype, f->block, PIQ_DTYPE_F32);
}

static const char *
fmt_name (const Fmt *f)
{
  return f->preset ? f->preset : f->block == 0 ? "uint8 per tensor"
         : f->dtype == PIQ_DTYPE_UINT8 ? "uint8/64" : "uint4/64";
}

/* Per element: the bound after p quantizations with block sums S (see top). */
static double
bound (double S, double delta, int quantizations, gboolean bf16)
{
  double E = 0;

  for (int q = 0; q < quantizations; q++)
    E += delta * (S + E);
  /* f32 additions of the partial sums, and the final rounding to bf16 */
  E += (2.0 * size + 2) * ldexp (S + E, -24);
  if (bf16)
    E += ldexp (S + E, -8);
  return E;
}

/* S for every element: Σ over ranks of max |x| over the element's block (the
 * whole vector for a per-tensor format). */
static double *
block_sums (const float *x, gsize n, guint block)
{
  guint b = block ? block : (guint) MAX (n, 1);
  gsize nb = (n + b - 1) / b;
  double *local = g_new0 (double, nb + 1), *sum = g_new0 (double, nb + 1);
  double *per = g_new0 (double, n + 1);

  for (gsize i = 0; i < n; i++)
    local[i / b] = MAX (local[i / b], fabs (x[i]));
  MPI_Allreduce (local, sum, (int) nb, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (gsize i = 0; i < n; i++)
    per[i] = sum[i / b];
  g_free (local);
  g_free (sum);
  return per;
}

static double *
exact_sum (const float *x, gsize n)
{
  double *d = g_new0 (double, n + 1), *s = g_new0 (double, n + 1);

  for (gsize i = 0; i < n; i++)
    d[i] = x[i];
  MPI_Allreduce (d, s, (int) n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  g_free (d);
  return s;
}

/* Whether every rank holds the same bytes. */
static gboolean
same_everywhere (const void *p, gsize bytes)
{
  guint64 h = 0xcbf29ce484222325u, lo, hi;
  const guint8 *b = p;

  for (gsize i = 0; i < bytes; i++)
    h = (h ^ b[i]) * 0x100000001b3u;
  MPI_Allreduce (&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce (&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

static float *
make_data (gsize n, guint64 salt)
{
  float *x = g_new (float, n + 1);

  for (gsize i = 0; i < n; i++)
    x[i] = datum (rank, i, salt);
  return x;
}

static const gsize sizes[] = { 0, 1, 7, 1000, 4099, 64 * 4 * 3 + 17 };

/* All-reduce for every format, rounding mode and size: within the bound, the
 * same bytes on every rank, the same bytes for 1 and 3 threads and for the
 * scalar kernels. */
static void
test_allreduce_formats (void)
{
  g_autoptr (PiqQuantizer) q1 = piq_quantizer_new ();
  g_autoptr (PiqQuantizer) q3 = piq_quantizer_new ();

  piq_quantizer_set_n_threads (q1, 1);
  piq_quantizer_set_max_simd_level (q1, PIQ_SIMD_LEVEL_SCALAR);
  piq_quantizer_set_n_threads (q3, 3);

  for (guint fi = 0; fi < G_N_ELEMENTS (formats); fi++)
    for (int stochastic = 0; stochastic <= 1; stochastic++)
      {
        const Fmt *f = &formats[fi];
        g_autoptr (PiqFormat) format = make_format (f);
        g_autoptr (PiqRecipe) recipe = piq_recipe_new ();
        g_autoptr (GError) error = NULL;
        gboolean ok = TRUE, same = TRUE, threads = TRUE;
        double worst = 0;

        piq_recipe_set_round_mode (recipe, stochastic ? PIQ_ROUND_STOCHASTIC : PIQ_ROUND_NEAREST);
        if (stochastic)
          piq_recipe_set_seed (recipe, 1234);
        g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, recipe, &error);
        if (red == NULL)
          {
            check (FALSE, "%s %s: new: %s", fmt_name (f), stochastic ? "stochastic" : "nearest",
                   error->message);
            continue;
          }
        /* Every rank makes the same collective calls whatever happens locally. */
        for (guint si = 0; si < G_N_ELEMENTS (sizes); si++)
          {
            gsize n = sizes[si];
            float *x = make_data (n, si), *y = g_memdup2 (x, (n + 1) * sizeof (float));
            float *y1 = g_memdup2 (x, (n + 1) * sizeof (float));
            double *exact = exact_sum (x, n), *S = block_sums (x, n, f->block);
            gboolean done;

            piq_mpi_reducer_set_quantizer (red, q3);
            done = piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y, n, NULL, 7, error ? NULL : &error);
            piq_mpi_reducer_set_quantizer (red, q1);
            done = piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y1, n, NULL, 7, error ? NULL : &error)
                   && done;
            ok = ok && done;
            for (gsize i = 0; done && i < n; i++)
              {
                double e = fabs (y[i] - exact[i]), b = bound (S[i], f->delta, size, FALSE);
                worst = MAX (worst, e / S[i]);
                if (!(e <= b) && ok)
                  {
                    printf ("# rank %d n=%" G_GSIZE_FORMAT " i=%" G_GSIZE_FORMAT ": %.9g vs %.9g (bound %.3g)\n",
                            rank, n, i, y[i], exact[i], b);
                    ok = FALSE;
                  }
              }
            same = same_everywhere (y, n * sizeof (float)) && same;
            threads = threads && done && memcmp (y, y1, n * sizeof (float)) == 0;
            g_free (x); g_free (y); g_free (y1); g_free (exact); g_free (S);
          }
        check (ok, "%s %s: all-reduce within the format's bound (worst |error|/S %.3g)%s%s",
               fmt_name (f), stochastic ? "stochastic" : "nearest", worst,
               error ? ": " : "", error ? error->message : "");
        check (same, "%s %s: every rank holds the same bytes", fmt_name (f),
               stochastic ? "stochastic" : "nearest");
        check (threads, "%s %s: 3 threads and 1 scalar thread give the same bytes", fmt_name (f),
               stochastic ? "stochastic" : "nearest");
      }
}

/* bf16 vectors: the sum within the bound plus bf16's rounding. */
static void
test_bf16 (void)
{
  g_autoptr (PiqFormat) format = piq_format_new_preset ("int8_block", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, NULL, &error);
  gsize n = 3001;
  float *x = make_data (n, 99);
  guint16 *h = g_new (guint16, n);
  gboolean ok = red != NULL;

  for (gsize i = 0; i < n; i++)
    {
      guint32 u;
      memcpy (&u, &x[i], 4);
      h[i] = (guint16) (u >> 16);              /* truncate: the input is exactly bf16 */
      u = (guint32) h[i] << 16;
      memcpy (&x[i], &u, 4);
    }
  double *exact = exact_sum (x, n), *S = block_sums (x, n, 64);
  ok = ok && piq_mpi_reducer_allreduce (red, PIQ_DTYPE_BF16, h, n, NULL, 0, &error);
  for (gsize i = 0; ok && i < n; i++)
    {
      guint32 u = (guint32) h[i] << 16;
      float v;
      memcpy (&v, &u, 4);
      ok = fabs (v - exact[i]) <= bound (S[i], 1.0 / 127, size, TRUE);
    }
  check (ok && same_everywhere (h, n * 2), "bf16 all-reduce within the bound, same bytes everywhere%s%s",
         error ? ": " : "", error ? error->message : "");
  g_free (x); g_free (h); g_free (exact); g_free (S);
}

/* Stochastic rounding is unbiased where the scale rule never clamps: the mean
 * error over many steps (each step draws other seeds) is within a few standard
 * errors of 0, and each element's mean error shrinks like 1/sqrt(steps). Not
 * the integer abs-max blocks: their rule (torch's, absmax / (range/2)) puts the
 * block's max at qmax + 1/2, so rounding up there clamps (docs/mpi.md). */
static void
test_unbiased (const char *preset)
{
  g_autoptr (PiqFormat) format = piq_format_new_preset (preset, NULL);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new ();
  g_autoptr (GError) error = NULL;
  gsize n = 2048;
  const int steps = 256;
  float *x = make_data (n, 5), *y = g_new (float, n);
  double *exact = exact_sum (x, n), sum = 0, sum2 = 0;
  double *mean_i = g_new0 (double, n);
  gboolean ok = TRUE;

  piq_recipe_set_round_mode (recipe, PIQ_ROUND_STOCHASTIC);
  piq_recipe_set_seed (recipe, 42);
  g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, recipe, &error);
  ok = red != NULL;
  for (int t = 0; ok && t < steps; t++)
    {
      memcpy (y, x, n * sizeof (float));
      ok = piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y, n, NULL, (guint64) t, &error);
      for (gsize i = 0; ok && i < n; i++)
        {
          double e = y[i] - exact[i];
          sum += e;
          sum2 += e * e;
          mean_i[i] += e / steps;
        }
    }
  double count = (double) n * steps, mean = sum / count;
  double sigma = sqrt ((sum2 / count - mean * mean) / count);
  /* The per-element means shrink like 1/sqrt(steps) too: their spread is far
   * below one step's error. */
  double spread = 0, one = sqrt (sum2 / count);
  for (gsize i = 0; i < n; i++)
    spread += mean_i[i] * mean_i[i] / n;
  spread = sqrt (spread);
  check (ok && fabs (mean) <= 5 * sigma && spread <= 2 * one / sqrt (steps),
         "%s stochastic: mean error %.3g (σ of the mean %.3g), rms of per-element means %.3g "
         "vs one step's rms %.3g", preset, mean, sigma, spread, one);
  g_free (x); g_free (y); g_free (exact); g_free (mean_i);
}

/* Error feedback: the residuals of all ranks add up to the exact sum minus the
 * result; over T steps of the same data the error of the running sum stays one
 * step's error instead of growing with T. */
static void
test_error_feedback (void)
{
  g_autoptr (PiqFormat) format = piq_format_new_preset ("int4_block", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, NULL, &error);
  gsize n = 1500;
  const int T = 16;
  float *x = make_data (n, 11), *y = g_new (float, n), *res = g_new0 (float, n);
  double *exact = exact_sum (x, n), *S = block_sums (x, n, 64);
  double *acc = g_new0 (double, n), *res_d = g_new (double, n), *res_sum = g_new (double, n);
  gboolean ok = red != NULL, identity = TRUE, bounded = TRUE;

  for (int t = 0; ok && t < T; t++)
    {
      float *before = g_memdup2 (res, n * sizeof (float));
      memcpy (y, x, n * sizeof (float));
      ok = piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y, n, res, (guint64) t, &error);
      /* Σ residual_after = Σ (x + residual_before) − y */
      for (gsize i = 0; i < n; i++)
        res_d[i] = (double) res[i] - (double) x[i] - (double) before[i];
      MPI_Allreduce (res_d, res_sum, (int) n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      for (gsize i = 0; ok && i < n; i++)
        {
          identity = identity && fabs (res_sum[i] + y[i]) <= ldexp (S[i], -18);
          acc[i] += y[i];
        }
      g_free (before);
    }
  for (gsize i = 0; ok && i < n; i++)
    bounded = bounded && fabs (acc[i] - T * exact[i]) <= 2 * bound (S[i], 1.0 / 7, size, FALSE);
  check (ok && identity, "error feedback: Σ residuals = Σ inputs − result on every step%s%s",
         error ? ": " : "", error ? error->message : "");
  check (ok && bounded, "error feedback: after %d steps the running sum is within 2 steps' bound", T);
  g_free (x); g_free (y); g_free (res); g_free (exact); g_free (S);
  g_free (acc); g_free (res_d); g_free (res_sum);
}

/* The halves on their own: reduce-scatter gives each rank its chunk of the sum
 * (p − 1 quantizations), all-gather gives every rank every chunk (one). */
static void
test_halves (void)
{
  g_autoptr (PiqFormat) format = piq_format_new_preset ("mxfp8_e4m3", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, NULL, &error);
  gsize n = 5000, off, len, total = 0;
  float *x = make_data (n, 3), *full = g_new (float, n);
  double *exact = exact_sum (x, n), *S = block_sums (x, n, 32);
  gboolean ok = red != NULL, tiles = TRUE;

  for (int r = 0; ok && r < size; r++)
    {
      piq_mpi_reducer_get_chunk (red, n, r, &off, &len);
      tiles = tiles && off == total && (off % 32 == 0 || len == 0);
      total += len;
    }
  tiles = tiles && total == n;
  check (tiles, "the chunks tile the vector on block boundaries");

  piq_mpi_reducer_get_chunk (red, n, rank, &off, &len);
  float *mine = g_new (float, len + 1);
  ok = ok && piq_mpi_reducer_reduce_scatter (red, PIQ_DTYPE_F32, x, n, mine, NULL, 0, &error);
  gboolean rs = ok;
  for (gsize i = 0; rs && i < len; i++)
    rs = fabs (mine[i] - exact[off + i]) <= bound (S[off + i], 0.25, size - 1, FALSE);
  check (rs, "reduce-scatter: this rank's chunk within p − 1 quantizations' bound%s%s",
         error ? ": " : "", error ? error->message : "");

  /* all-gather of the ranks' own chunks of x */
  double *own_S = block_sums (x, n, 32);
  ok = ok && piq_mpi_reducer_allgather (red, PIQ_DTYPE_F32, x + off, n, full, NULL, 0, &error);
  gboolean ag = ok;
  float *owner = g_new (float, n + 1);
  for (int r = 0; r < size; r++)
    {
      gsize o, l;
      piq_mpi_reducer_get_chunk (red, n, r, &o, &l);
      for (gsize i = 0; i < l; i++)
        owner[o + i] = datum (r, o + i, 3);
    }
  for (gsize i = 0; ag && i < n; i++)
    ag = fabs (full[i] - owner[i]) <= 0.25 * own_S[i];
  check (ag && same_everywhere (full, n * sizeof (float)),
         "all-gather: every chunk within one quantization of its owner's values, same bytes everywhere");
  g_free (x); g_free (full); g_free (exact); g_free (S); g_free (mine); g_free (own_S); g_free (owner);
}

static gboolean
error_is (GError *e, GQuark domain, int code)
{
  if (e == NULL)
    printf ("# rank %d: no error\n", rank);
  else if (e->domain != domain || e->code != code)
    printf ("# rank %d: unexpected error: %s\n", rank, e->message);
  return e != NULL && e->domain == domain && e->code == code;
}

/* Bad arguments fail on every rank, without hanging and without writing. */
static void
test_errors (void)
{
  g_autoptr (PiqFormat) format = piq_format_new_preset ("int8_block", NULL);
  g_autoptr (PiqFormat) other = piq_format_new_preset ("nf4", NULL);
  g_autoptr (PiqFormat) channel = piq_format_new_per_channel (PIQ_DTYPE_INT8, 0);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, NULL, &error);
  gsize n = 777;
  float *x = make_data (n + 1, 1), *y = g_memdup2 (x, (n + 1) * sizeof (float));
  float *res = g_new0 (float, n + 1);

  /* different lengths */
  gboolean ok = !piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y, rank == 0 ? n + 1 : n, NULL, 0, &error)
                && error_is (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_MISMATCH)
                && memcmp (x, y, (n + 1) * sizeof (float)) == 0;
  check (ok, "different lengths: MISMATCH on every rank, nothing written");
  g_clear_error (&error);

  /* a dtype the collectives do not take, on one rank */
  ok = !piq_mpi_reducer_allreduce (red, rank == 1 ? PIQ_DTYPE_F16 : PIQ_DTYPE_F32, y, n, NULL, 0, &error)
       && error_is (error, rank == 1 ? PIQ_ERROR : PIQ_MPI_ERROR,
                    rank == 1 ? PIQ_ERROR_UNSUPPORTED : PIQ_MPI_ERROR_REMOTE)
       && memcmp (x, y, (n + 1) * sizeof (float)) == 0;
  check (ok, "f16 on rank 1: UNSUPPORTED there, REMOTE elsewhere, nothing written");
  g_clear_error (&error);

  /* an overlapping residual on the last rank */
  ok = !piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y, n, rank == size - 1 ? y + 5 : res, 0, &error)
       && error_is (error, rank == size - 1 ? PIQ_ERROR : PIQ_MPI_ERROR,
                    rank == size - 1 ? PIQ_ERROR_OVERLAP : PIQ_MPI_ERROR_REMOTE)
       && memcmp (x, y, (n + 1) * sizeof (float)) == 0;
  check (ok, "overlapping residual on one rank: OVERLAP there, REMOTE elsewhere, nothing written");
  g_clear_error (&error);

  /* a non-finite value on rank 0, with a per-tensor format (whose scale from
   * the data refuses it; block formats have a rule for ±Inf and NaN): its codec
   * fails in the middle of the ring */
  g_autoptr (PiqFormat) tensor_u8 = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr (PiqMpiReducer) red_t = piq_mpi_reducer_new (MPI_COMM_WORLD, tensor_u8, NULL, NULL);
  float *bad = g_memdup2 (x, (n + 1) * sizeof (float));
  float *bad0 = NULL;
  if (rank == 0)
    bad[n / 2] = INFINITY;
  bad0 = g_memdup2 (bad, (n + 1) * sizeof (float));
  ok = !piq_mpi_reducer_allreduce (red_t, PIQ_DTYPE_F32, bad, n, res, 0, &error)
       && (rank == 0 ? error_is (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE)
                     : error_is (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_REMOTE))
       && memcmp (bad, bad0, (n + 1) * sizeof (float)) == 0;
  for (gsize i = 0; i < n; i++)
    ok = ok && res[i] == 0;
  check (ok, "Inf on rank 0: its codec's error there, REMOTE elsewhere, data and residual untouched%s%s",
         error ? ": " : "", error ? error->message : "");
  g_clear_error (&error);
  g_free (bad); g_free (bad0);

  /* different formats at creation; a per-channel format */
  PiqMpiReducer *r2 = piq_mpi_reducer_new (MPI_COMM_WORLD, rank == 0 ? other : format, NULL, &error);
  ok = r2 == NULL && error_is (error, PIQ_MPI_ERROR, PIQ_MPI_ERROR_MISMATCH);
  check (ok, "different formats: creation fails with MISMATCH on every rank");
  g_clear_error (&error);
  piq_mpi_reducer_free (r2);

  r2 = piq_mpi_reducer_new (MPI_COMM_WORLD, channel, NULL, &error);
  ok = r2 == NULL && error_is (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  check (ok, "a per-channel format is refused on every rank");
  g_clear_error (&error);
  piq_mpi_reducer_free (r2);

  /* the reducer still works after all that */
  ok = piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y, n, NULL, 0, &error);
  check (ok && same_everywhere (y, n * sizeof (float)), "the reducer works after the failed calls");
  g_free (x); g_free (y); g_free (res);
}

/* Bytes on the wire: what the format's sizes say, per element. */
static void
test_bytes_sent (void)
{
  g_autoptr (PiqFormat) format = piq_format_new_preset ("nf4", NULL);
  g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, NULL, NULL);
  gsize n = 64 * 100 * size;
  float *x = make_data (n, 8);

  piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, x, n, NULL, 0, NULL);
  /* 2(p − 1) chunks of n/p: each 64 elements cost 32 code bytes + a 4-byte scale,
   * plus a 24-byte header per message */
  guint64 want = 2 * (guint64) (size - 1) * ((n / size) / 64 * 36 + 24);
  check (piq_mpi_reducer_get_bytes_sent (red) == want,
         "nf4: %" G_GUINT64_FORMAT " bytes sent, %.4f per element per rank",
         piq_mpi_reducer_get_bytes_sent (red), piq_mpi_reducer_get_bytes_sent (red) / (double) n);
  g_free (x);
}

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &size);

  test_allreduce_formats ();
  test_bf16 ();
  test_unbiased ("fp8_e4m3");
  test_unbiased ("nf4");
  test_unbiased ("q8_0");
  test_error_feedback ();
  test_halves ();
  test_errors ();
  test_bytes_sent ();

  MPI_Finalize ();
  return 0;
}

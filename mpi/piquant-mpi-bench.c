/* piquant-mpi-bench.c: quantized all-reduce against MPI_Allreduce(MPI_FLOAT, MPI_SUM)
 * in the same run (docs/mpi.md). Run under mpiexec: `make -C mpi bench`, or
 *   mpiexec -np 4 mpi/piquant-mpi-bench [--elements N] [--repeat R] [--threads T]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * For each format: the median time of R all-reduces (each started after a
 * barrier; a call's time is the slowest rank's), the bytes each rank sent per
 * element, the error against the exact sum (in double), and the codec's own
 * time per all-reduce, measured alone on one rank's chunks: from it the link
 * bandwidth below which quantization pays,
 *   B* = 2 (p − 1)/p · n · (4 − b) / t_codec
 * where b is the format's bytes per element: below B* the bytes saved take
 * longer to send than the codec takes to save them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piquant-mpi.h"

static int rank, size;

static double
median (double *v, int n)
{
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--)
      {
        double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
      }
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void
fill (float *x, gsize n)
{
  guint64 z = 0x1234567u + (guint64) rank * 0x9e3779b97f4a7c15u;

  for (gsize i = 0; i < n; i++)
    {
      /* a sum of uniforms: cheap, roughly normal */
      double s = 0;
      for (int k = 0; k < 4; k++)
        {
          z = z * 6364136223846793005u + 1442695040888963407u;
          s += (double) (z >> 11) / 9007199254740992.0;
        }
      x[i] = (float) ((s - 2) * 1.7320508);
    }
}

/* The slowest rank's time of one call of fn. */
#define TIMED(result, stmt) \
  do { \
    MPI_Barrier (MPI_COMM_WORLD); \
    double t0_ = MPI_Wtime (); \
    stmt; \
    double t_ = MPI_Wtime () - t0_; \
    MPI_Allreduce (&t_, &(result), 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); \
  } while (0)

int
main (int argc, char **argv)
{
  gsize n = 27264000;
  int repeat = 5, threads = 1;
  const char *names[] = { "uint8/64", "int4/64", "fp8_e4m3", "mxfp4", "nf4" };

  MPI_Init (&argc, &argv);
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &size);
  for (int i = 1; i + 1 < argc; i += 2)
    {
      if (strcmp (argv[i], "--elements") == 0)
        n = strtoull (argv[i + 1], NULL, 10);
      else if (strcmp (argv[i], "--repeat") == 0)
        repeat = MAX (1, atoi (argv[i + 1]));
      else if (strcmp (argv[i], "--threads") == 0)
        threads = MAX (1, atoi (argv[i + 1]));
      else
        {
          if (rank == 0)
            fprintf (stderr, "usage: piquant-mpi-bench [--elements N] [--repeat R] [--threads T]\n");
          MPI_Abort (MPI_COMM_WORLD, 2);
        }
    }

  float *x = g_new (float, n), *y = g_new (float, n);
  double *exact = g_new (double, n), *xd = g_new (double, n), *t = g_new (double, repeat);
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();

  piq_quantizer_set_n_threads (q, (guint) threads);
  fill (x, n);
  for (gsize i = 0; i < n; i++)
    xd[i] = x[i];
  MPI_Allreduce (xd, exact, (int) n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double rms = 0;
  for (gsize i = 0; i < n; i++)
    rms += exact[i] * exact[i];
  rms = sqrt (rms / n);

  if (rank == 0)
    {
      printf ("# %d ranks, %" G_GSIZE_FORMAT " f32 elements, %d thread(s) per rank, median of %d\n",
              size, n, threads, repeat);
      printf ("%-10s %9s %8s %9s %11s %11s %10s %11s\n", "format", "ms", "vs f32", "B/elem",
              "rms err", "max err", "codec ms", "B* GB/s");
    }

  for (int r = 0; r < repeat; r++)
    {
      memcpy (y, x, n * sizeof (float));
      TIMED (t[r], MPI_Allreduce (MPI_IN_PLACE, y, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    }
  double t_float = median (t, repeat);
  if (rank == 0)
    printf ("%-10s %9.2f %8s %9.3f %11s %11s %10s %11s\n", "MPI f32", t_float * 1e3, "1.00",
            2.0 * (size - 1) / size * 4, "-", "-", "-", "-");

  for (guint k = 0; k < G_N_ELEMENTS (names); k++)
    {
      g_autoptr (PiqFormat) format = NULL;
      g_autoptr (GError) error = NULL;
      if (k == 0)
        format = piq_format_new_per_block (PIQ_DTYPE_UINT8, 64, PIQ_DTYPE_F32);
      else if (k == 1)
        format = piq_format_new_preset ("int4_block", NULL);
      else
        format = piq_format_new_preset (names[k], NULL);
      g_autoptr (PiqMpiReducer) red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, NULL, &error);
      if (red == NULL)
        {
          if (rank == 0)
            printf ("%-10s failed: %s\n", names[k], error->message);
          continue;
        }
      piq_mpi_reducer_set_quantizer (red, q);
      guint64 sent0 = 0;
      for (int r = 0; r < repeat; r++)
        {
          gboolean ok = TRUE;
          memcpy (y, x, n * sizeof (float));
          sent0 = piq_mpi_reducer_get_bytes_sent (red);
          TIMED (t[r], ok = piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, y, n, NULL, (guint64) r, &error));
          if (!ok)
            {
              fprintf (stderr, "rank %d: %s\n", rank, error->message);
              MPI_Abort (MPI_COMM_WORLD, 1);
            }
        }
      double tq = median (t, repeat);
      double per_elem = (double) (piq_mpi_reducer_get_bytes_sent (red) - sent0) / n;
      double e2 = 0, emax = 0;
      for (gsize i = 0; i < n; i++)
        {
          double e = fabs (y[i] - exact[i]);
          e2 += e * e;
          emax = MAX (emax, e);
        }

      /* The codec alone, on this rank's data, as one all-reduce uses it: p chunk
       * quantizations and 2 (p − 1) chunk dequantizations. */
      gsize chunk = n / size;
      guint64 shape = chunk;
      gsize cb, sb, zb;
      piq_format_get_sizes (format, &shape, 1, &cb, &sb, &zb, NULL);
      guint8 *codes = g_malloc (cb + 1), *scales = g_malloc (sb + 1), *zps = g_malloc (zb + 1);
      double scale = 1, tcodec, tc = 0;
      gint64 zp = 0;
      /* twice, timing the second: the first faults the new buffers in */
      for (int pass = 0; pass < 2; pass++)
        {
          double t0 = MPI_Wtime ();
          for (int r = 0; r < size; r++)
            piq_quantizer_quantize_raw (q, format, NULL, PIQ_DTYPE_F32, x, &shape, 1, codes, cb,
                                        sb ? scales : NULL, sb, zb ? zps : NULL, zb, &scale, &zp,
                                        NULL);
          for (int r = 0; r < 2 * (size - 1); r++)
            piq_quantizer_dequantize_raw (q, format, scale, zp, codes, cb, &shape, 1,
                                          sb ? scales : NULL, sb, zb ? zps : NULL, zb,
                                          PIQ_DTYPE_F32, y, chunk * sizeof (float),
                                          r < size - 1 ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, NULL);
          tc = MPI_Wtime () - t0;
        }
      MPI_Allreduce (&tc, &tcodec, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      double saved = 2.0 * (size - 1) / size * 4 * n - per_elem * n;
      if (rank == 0)
        printf ("%-10s %9.2f %8.2f %9.3f %11.3g %11.3g %10.2f %11.2f\n", names[k], tq * 1e3,
                tq / t_float, per_elem, sqrt (e2 / n) / rms, emax / rms, tcodec * 1e3,
                saved / tcodec / 1e9);
      g_free (codes); g_free (scales); g_free (zps);
    }
  if (rank == 0)
    printf ("# errors relative to the rms of the exact sum (%.3g); B*: quantization pays on links "
            "slower than this\n", rms);
  g_free (x); g_free (y); g_free (exact); g_free (xd); g_free (t);
  MPI_Finalize ();
  return 0;
}

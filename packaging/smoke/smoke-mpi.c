/* smoke-mpi.c: one quantized all-reduce through the installed libpiquant-mpi-1.0.
 * Build: cc smoke-mpi.c $(pkg-config --cflags --libs piquant-mpi-1.0)
 * Run:   mpiexec -np 2 ./prog
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <stdio.h>

#include <piquant-mpi.h>

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) format = NULL;
  float x[100];
  int rank, size, bad = 0, any_bad = 0;

  MPI_Init (&argc, &argv);
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &size);
  format = piq_format_new_preset ("nf4", NULL);
  PiqMpiReducer *red = piq_mpi_reducer_new (MPI_COMM_WORLD, format, NULL, &error);
  for (int i = 0; i < 100; i++)
    x[i] = (float) (rank + 1);
  /* Every block of every partial sum is constant, so each element is its
   * block's absmax, which NF4 carries exactly (code 1.0): the sum comes out as
   * size (size + 1) / 2. */
  if (red == NULL || !piq_mpi_reducer_allreduce (red, PIQ_DTYPE_F32, x, 100, NULL, 0, &error))
    bad = 1;
  for (int i = 0; !bad && i < 100; i++)
    bad = fabsf (x[i] - size * (size + 1) / 2.0f) > 1e-4f;
  MPI_Allreduce (&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf ("%d ranks: x[0] = %g (want %g): %s\n", size, x[0], size * (size + 1) / 2.0,
            any_bad ? "FAIL" : "ok");
  if (error)
    fprintf (stderr, "rank %d: %s\n", rank, error->message);
  piq_mpi_reducer_free (red);
  MPI_Finalize ();
  return any_bad;
}

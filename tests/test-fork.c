/* test-fork.c: a multithreaded call in the child of a fork() does not hang
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * libgomp's thread pool does not survive fork(): if the parent ran any OpenMP
 * parallel region (its own, not only piquant's), the child's next region deadlocks
 * unless piquant's pthread_atfork child handler, registered when the library is
 * loaded, has switched the child to serial execution. Each case runs a parallel
 * region in the parent, forks, and gives the child's multithreaded call a time
 * limit. It uses the internal driver (piq_parallel_run), so it does not depend on
 * the public API.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#ifdef _OPENMP
# include <omp.h>
#endif

#include "piq-parallel-private.h"

#define N_ELEMENTS (UINT64_C (1) << 20)
#define GRAIN      64
#define TIME_LIMIT_S 10

/* Each range marks its elements; the call is right when every element is marked once. */
static void
mark_range (void *data, uint64_t start, uint64_t n)
{
  uint8_t *marks = data;

  for (uint64_t i = start; i < start + n; i++)
    marks[i]++;
}

static gboolean
parallel_call (unsigned n_threads)
{
  g_autofree uint8_t *marks = g_malloc0 (N_ELEMENTS);

  piq_parallel_run (n_threads, N_ELEMENTS, GRAIN, 0, mark_range, marks);
  for (uint64_t i = 0; i < N_ELEMENTS; i++)
    if (marks[i] != 1)
      return FALSE;
  return TRUE;
}

/* The application's own parallel region, before any of piquant's. */
static void
foreign_region (void)
{
#ifdef _OPENMP
  int n = 0;
# pragma omp parallel num_threads (4) reduction (+ : n)
  n += 1;
  g_assert_cmpint (n, >=, 1);
#endif
}

/* Forks; the child makes a multithreaded call and exits 0 if it was right. The
 * parent waits up to TIME_LIMIT_S, kills a child that is still running, and fails. */
static void
fork_and_call (unsigned n_threads)
{
  gint64 deadline;
  int status = 0;
  pid_t pid, done = 0;

  fflush (stdout);
  pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    _exit (parallel_call (n_threads) ? 0 : 1);

  deadline = g_get_monotonic_time () + TIME_LIMIT_S * G_USEC_PER_SEC;
  while ((done = waitpid (pid, &status, WNOHANG)) == 0 && g_get_monotonic_time () < deadline)
    g_usleep (10 * 1000);
  if (done == 0)
    {
      kill (pid, SIGKILL);
      waitpid (pid, &status, 0);
      g_test_fail_printf ("the child's call with %u threads did not return within %d s "
                          "(deadlock in the OpenMP runtime after fork)", n_threads, TIME_LIMIT_S);
      return;
    }
  g_assert_cmpint (done, ==, pid);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
}

/* The case: something else ran a region, then fork, then piquant's first
 * parallel call in the child. Run first, before any piquant call in this process. */
static void
test_foreign_region_then_fork (gconstpointer data)
{
  unsigned n_threads = GPOINTER_TO_UINT (data);

#ifndef _OPENMP
  g_test_skip ("built without OpenMP");
  return;
#endif
  foreign_region ();
  fork_and_call (n_threads);
  /* the parent itself still runs in parallel, and correctly */
  g_assert_true (parallel_call (n_threads));
}

/* piquant's own region in the parent, then fork. */
static void
test_own_region_then_fork (void)
{
#ifndef _OPENMP
  g_test_skip ("built without OpenMP");
  return;
#endif
  g_assert_true (parallel_call (2));
  fork_and_call (2);
  fork_and_call (0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  /* the foreign-region cases first, while piquant has made no parallel call (GLib
   * runs a suite's cases before its sub-suites, so every case is in a sub-suite) */
  g_test_add_data_func ("/fork/foreign-region/2-threads", GUINT_TO_POINTER (2),
                        test_foreign_region_then_fork);
  g_test_add_data_func ("/fork/foreign-region/all-threads", GUINT_TO_POINTER (0),
                        test_foreign_region_then_fork);
  g_test_add_func ("/fork/own-region/2-and-all-threads", test_own_region_then_fork);
  return g_test_run ();
}

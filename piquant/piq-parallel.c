/* piq-parallel.c: the only OpenMP parallel region of piquant
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "piq-parallel-private.h"

#include <pthread.h>

#ifdef _OPENMP
# include <omp.h>
#endif

/* libgomp's thread pool does not survive fork(): a child of a process that already
 * ran a parallel region deadlocks in its next one. The child handler switches the
 * child to serial execution for good (it has one thread left anyway). */
static volatile gboolean forked_child = FALSE;

static void
on_fork_child (void)
{
  forked_child = TRUE;
}

static void
install_atfork (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done))
    {
      pthread_atfork (NULL, NULL, on_fork_child);
      g_once_init_leave (&done, 1);
    }
}

guint
piq_parallel_max_threads (void)
{
  return MAX (g_get_num_processors (), 1);
}

/* Run [start, end) on this thread, split where the element index crosses 2^32. */
static void
run_range (PiqRangeFunc func, gpointer data, guint64 start, guint64 end)
{
  while (start < end)
    {
      guint64 stop = MIN (end, (start | G_GUINT64_CONSTANT (0xffffffff)) + 1);
      func (data, start, stop - start);
      start = stop;
    }
}

void
piq_parallel_run (guint         n_threads,
                  guint64       n_total,
                  guint64       grain,
                  guint64       min_parallel,
                  PiqRangeFunc  func,
                  gpointer      data)
{
  guint64 n_grains;

  if (n_total == 0)
    return;
  install_atfork ();
  n_grains = (n_total + grain - 1) / grain;
  if (n_threads == 0)
    n_threads = piq_parallel_max_threads ();
  n_threads = (guint) MIN ((guint64) n_threads, n_grains);

#ifdef _OPENMP
  if (n_threads > 1 && n_total >= min_parallel && !forked_child)
    {
#pragma omp parallel num_threads (n_threads)
      {
        /* The runtime may give fewer threads than asked: split by the real team. */
        guint64 team = (guint64) omp_get_num_threads ();
        guint64 me = (guint64) omp_get_thread_num ();
        guint64 per = (n_grains + team - 1) / team;
        guint64 start = MIN (me * per * grain, n_total);
        guint64 end = MIN ((me + 1) * per * grain, n_total);

        run_range (func, data, start, end);
      }
      return;
    }
#endif
  run_range (func, data, 0, n_total);
}

/* piq-parallel.c: the only OpenMP parallel region of piquant
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "piq-parallel-private.h"

#ifdef _OPENMP
# include <omp.h>
#endif

#define PIQ_MIN(a, b) ((a) < (b) ? (a) : (b))

/* libgomp's thread pool does not survive fork(): a child of a process that already
 * ran a parallel region (piquant's, or anyone's: the application's, an OpenMP BLAS's)
 * deadlocks in its next one. The child handler switches the child to serial
 * execution for good (it has one thread left anyway). It is registered when the
 * library is loaded, not at piquant's first parallel call: the process may run its
 * own regions and fork before that call, and a handler registered later would miss
 * the fork. The pthread_once registration stays for toolchains that drop the
 * constructor (it is then the first call's job, as before). */
static volatile int forked_child = 0;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
on_fork_child (void)
{
  forked_child = 1;
}

static void
install_atfork (void)
{
  pthread_atfork (NULL, NULL, on_fork_child);
}

__attribute__((constructor)) static void
piq_parallel_init (void)
{
  pthread_once (&atfork_once, install_atfork);
}

static unsigned max_threads;
static pthread_once_t max_threads_once = PTHREAD_ONCE_INIT;

static void
count_cpus (void)
{
  cpu_set_t set;
  long n;

  if (sched_getaffinity (0, sizeof set, &set) == 0 && CPU_COUNT (&set) > 0)
    max_threads = (unsigned) CPU_COUNT (&set);
  else
    max_threads = (n = sysconf (_SC_NPROCESSORS_ONLN)) > 0 ? (unsigned) n : 1;
}

/* Counted once: sched_getaffinity costs ~170 ns, more than a small kernel call. */
unsigned
piq_parallel_max_threads (void)
{
  pthread_once (&max_threads_once, count_cpus);
  return max_threads;
}

/* Run [start, end) on this thread, split where the element index crosses 2^32. */
static void
run_range (PiqRangeFunc func, void *data, uint64_t start, uint64_t end)
{
  while (start < end)
    {
      uint64_t stop = PIQ_MIN (end, (start | UINT64_C (0xffffffff)) + 1);
      func (data, start, stop - start);
      start = stop;
    }
}

void
piq_parallel_run (unsigned      n_threads,
                  uint64_t      n_total,
                  uint64_t      grain,
                  uint64_t      min_parallel,
                  PiqRangeFunc  func,
                  void         *data)
{
  uint64_t n_grains;

  if (n_total == 0)
    return;
  n_grains = (n_total + grain - 1) / grain;
  if (n_total < min_parallel || n_grains < 2 || n_threads == 1)
    {
      run_range (func, data, 0, n_total);   /* small: no team, no thread count */
      return;
    }
  pthread_once (&atfork_once, install_atfork);
  if (n_threads == 0)
    n_threads = piq_parallel_max_threads ();
  n_threads = (unsigned) PIQ_MIN ((uint64_t) n_threads, n_grains);

#ifdef _OPENMP
  if (n_threads > 1 && n_total >= min_parallel && !forked_child)
    {
#pragma omp parallel num_threads (n_threads)
      {
        /* The runtime may give fewer threads than asked: split by the real team. */
        uint64_t team = (uint64_t) omp_get_num_threads ();
        uint64_t me = (uint64_t) omp_get_thread_num ();
        uint64_t per = (n_grains + team - 1) / team;
        uint64_t start = PIQ_MIN (me * per * grain, n_total);
        uint64_t end = PIQ_MIN ((me + 1) * per * grain, n_total);

        run_range (func, data, start, end);
      }
      return;
    }
#endif
  run_range (func, data, 0, n_total);
}

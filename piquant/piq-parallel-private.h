/* piq-parallel-private.h: the one OpenMP driver
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the kernels, so the static benchmark can use it.
 */
#pragma once

#include <stdint.h>

#ifndef PIQ_INTERNAL
# define PIQ_INTERNAL __attribute__((visibility ("hidden")))
#endif

/* Runs func over [start, start + n) ranges that partition [0, n_total).
 * Range starts are multiples of `grain` (chosen by the caller so that no output
 * byte or block is shared), and no range crosses a multiple of 2^32 elements
 * (the stochastic hash splits its index there). Runs on the calling thread when
 * n_threads is 1, n_total < min_parallel, or after fork(). Returns only when every
 * range is done. n_threads 0 means piq_parallel_max_threads(). */
typedef void (*PiqRangeFunc) (void *data, uint64_t start, uint64_t n);

/* Below this many elements a call stays on the calling thread: waking the team
 * costs more than the work (measured with `piquant bench`, see docs/performance.md). */
#define PIQ_PARALLEL_MIN_ELEMENTS (1u << 15)

PIQ_INTERNAL void     piq_parallel_run         (unsigned      n_threads,
                                                uint64_t      n_total,
                                                uint64_t      grain,
                                                uint64_t      min_parallel,
                                                PiqRangeFunc  func,
                                                void         *data);

/* The number of threads n_threads = 0 stands for: the CPUs this process may run on. */
PIQ_INTERNAL unsigned piq_parallel_max_threads (void);

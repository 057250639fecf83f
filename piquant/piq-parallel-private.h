/* piq-parallel-private.h: the one OpenMP driver
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Runs func over [start, start + n) ranges that partition [0, n_total).
 * Range starts are multiples of `grain` (chosen by the caller so that no output
 * byte or block is shared), and no range crosses a multiple of 2^32 elements
 * (the stochastic hash splits its index there). Runs on the calling thread when
 * n_threads is 1, n_total < PIQ_PARALLEL_MIN_ELEMENTS, or after fork(). Returns
 * only when every range is done. */
typedef void (*PiqRangeFunc) (gpointer data, guint64 start, guint64 n);

#define PIQ_PARALLEL_MIN_ELEMENTS (1u << 15)

void  piq_parallel_run        (guint         n_threads,
                               guint64       n_total,
                               guint64       grain,
                               guint64       min_parallel,
                               PiqRangeFunc  func,
                               gpointer      data);

/* The number of threads n_threads = 0 stands for. */
guint piq_parallel_max_threads (void);

G_END_DECLS

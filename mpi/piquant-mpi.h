/* piquant-mpi.h: quantized collectives over MPI (libpiquant-mpi-1.0)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A separate library, so that libpiquant-1.0 never depends on MPI; and outside
 * the GIR, because an MPI_Comm is not introspectable (Python users take the route
 * in docs/mpi.md: mpi4py for the transport, the typelib for the codecs).
 *
 * One PiqMpiReducer holds a private duplicate of the caller's communicator (so
 * its messages never meet the caller's, and MPI errors come back as GErrors
 * without touching the caller's error handler), the format and recipe every rank
 * agreed on at creation, and the scratch buffers, reused from call to call. A
 * reducer is used by one thread at a time; its codecs use the quantizer's threads.
 */
#pragma once

#include <mpi.h>
#include <piquant/piquant.h>

G_BEGIN_DECLS

/**
 * PIQ_MPI_ERROR:
 *
 * The error domain of libpiquant-mpi-1.0. Errors of the codecs keep their
 * #PIQ_ERROR domain.
 */
#define PIQ_MPI_ERROR (piq_mpi_error_quark ())

/**
 * PiqMpiError:
 * @PIQ_MPI_ERROR_MPI: an MPI call failed; the message has MPI's own text
 * @PIQ_MPI_ERROR_MISMATCH: the ranks called with different arguments (length,
 *   dtype, operation, format or recipe), or another rank refused its own
 *   arguments; every rank returns this error and nothing was written
 * @PIQ_MPI_ERROR_REMOTE: another rank failed (its own error says why: bad
 *   arguments, a codec error such as a non-finite value, memory); this rank
 *   wrote nothing
 *
 * The errors of libpiquant-mpi-1.0.
 */
typedef enum {
  PIQ_MPI_ERROR_MPI,
  PIQ_MPI_ERROR_MISMATCH,
  PIQ_MPI_ERROR_REMOTE,
} PiqMpiError;

typedef struct _PiqMpiReducer PiqMpiReducer;

PIQ_AVAILABLE_IN_1_0
GQuark          piq_mpi_error_quark             (void);

PIQ_AVAILABLE_IN_1_0
PiqMpiReducer * piq_mpi_reducer_new             (MPI_Comm        comm,
                                                 PiqFormat      *format,
                                                 PiqRecipe      *recipe,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
void            piq_mpi_reducer_free            (PiqMpiReducer  *self);

PIQ_AVAILABLE_IN_1_0
void            piq_mpi_reducer_set_quantizer   (PiqMpiReducer  *self,
                                                 PiqQuantizer   *quantizer);
PIQ_AVAILABLE_IN_1_0
guint64         piq_mpi_reducer_get_seed        (PiqMpiReducer  *self);
PIQ_AVAILABLE_IN_1_0
guint64         piq_mpi_reducer_get_bytes_sent  (PiqMpiReducer  *self);
PIQ_AVAILABLE_IN_1_0
void            piq_mpi_reducer_get_chunk       (PiqMpiReducer  *self,
                                                 gsize           n_elements,
                                                 int             rank,
                                                 gsize          *offset,
                                                 gsize          *length);

PIQ_AVAILABLE_IN_1_0
gboolean        piq_mpi_reducer_allreduce       (PiqMpiReducer  *self,
                                                 PiqDtype        dtype,
                                                 gpointer        data,
                                                 gsize           n_elements,
                                                 float          *residual,
                                                 guint64         step,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_mpi_reducer_reduce_scatter  (PiqMpiReducer  *self,
                                                 PiqDtype        dtype,
                                                 gconstpointer   src,
                                                 gsize           n_elements,
                                                 gpointer        dst,
                                                 float          *residual,
                                                 guint64         step,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_mpi_reducer_allgather       (PiqMpiReducer  *self,
                                                 PiqDtype        dtype,
                                                 gconstpointer   src,
                                                 gsize           n_elements,
                                                 gpointer        dst,
                                                 float          *residual,
                                                 guint64         step,
                                                 GError        **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PiqMpiReducer, piq_mpi_reducer_free)

G_END_DECLS

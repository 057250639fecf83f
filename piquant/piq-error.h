/* piq-error.h: the PIQ_ERROR domain
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(__PIQUANT_H_INSIDE__) && !defined(PIQUANT_COMPILATION)
#error "Only <piquant/piquant.h> can be included directly."
#endif

#include <glib.h>
#include <piquant/piq-version.h>

G_BEGIN_DECLS

/**
 * PIQ_ERROR:
 *
 * The error domain of piquant; codes are in [enum@Piq.Error].
 *
 * Since: 1.0
 */
#define PIQ_ERROR (piq_error_quark ())

/**
 * PiqError:
 * @PIQ_ERROR_UNSUPPORTED: the operation does not exist for this dtype or dtype pair
 * @PIQ_ERROR_SIZE: a buffer is too small, or two lengths disagree
 * @PIQ_ERROR_OVERFLOW: an element count whose byte size does not fit in memory
 * @PIQ_ERROR_INVALID_SCALE: a scale that is not finite and positive (or
 *   that leaves the compute precision)
 * @PIQ_ERROR_INVALID_ZERO_POINT: a zero point outside the range of the quantized type
 * @PIQ_ERROR_NON_FINITE: NaN or ±Inf in data where the operation cannot use it
 * @PIQ_ERROR_EMPTY: parameters asked of a tensor with no elements
 * @PIQ_ERROR_READ_ONLY: a read-only tensor was given as a destination
 * @PIQ_ERROR_NO_FORMAT: a tensor of a quantized dtype carries no [class@Piq.Format]
 * @PIQ_ERROR_NO_MEMORY: an allocation failed
 * @PIQ_ERROR_INVALID_VALUE: a value that the dtype cannot hold (not integral, out of range)
 * @PIQ_ERROR_OVERLAP: a destination overlaps a source (see [Aliasing](overview.html#aliasing))
 * @PIQ_ERROR_FILE_FORMAT: a file or stream that is not of the format it claims,
 *   is malformed, or ends early (see [ctor@Piq.Tensor.new_from_stream])
 *
 * Errors of the `PIQ_ERROR` domain. Whenever a function fails with one of
 * these, it has written nothing to its destination.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_ERROR_UNSUPPORTED,
  PIQ_ERROR_SIZE,
  PIQ_ERROR_OVERFLOW,
  PIQ_ERROR_INVALID_SCALE,
  PIQ_ERROR_INVALID_ZERO_POINT,
  PIQ_ERROR_NON_FINITE,
  PIQ_ERROR_EMPTY,
  PIQ_ERROR_READ_ONLY,
  PIQ_ERROR_NO_FORMAT,
  PIQ_ERROR_NO_MEMORY,
  PIQ_ERROR_INVALID_VALUE,
  PIQ_ERROR_OVERLAP,
  PIQ_ERROR_FILE_FORMAT,
} PiqError;

PIQ_AVAILABLE_IN_1_0
GQuark piq_error_quark (void);

G_END_DECLS

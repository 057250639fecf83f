/* piq-io.h: tensors saved to and loaded from files and streams
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(__PIQUANT_H_INSIDE__) && !defined(PIQUANT_COMPILATION)
#error "Only <piquant/piquant.h> can be included directly."
#endif

#include <gio/gio.h>

#include <piquant/piq-version.h>
#include <piquant/piq-tensor.h>

G_BEGIN_DECLS

/**
 * PiqFileFormat:
 * @PIQ_FILE_FORMAT_NPY: numpy's `.npy` (version 1.0, or 2.0 for headers past
 *   64 KiB): tensors of float and integer dtypes, written as `numpy.save()`
 *   writes them; bfloat16 travels as `<u2` (numpy has no bfloat16)
 * @PIQ_FILE_FORMAT_PIQT: piquant's container: a quantized tensor with its
 *   format, shape, scales and zero points, as `piquant quantize` writes it
 *
 * The file formats of [method@Piq.Tensor.save_to_file]; docs/files.md
 * describes each byte.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_FILE_FORMAT_NPY,
  PIQ_FILE_FORMAT_PIQT,
} PiqFileFormat;

PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_stream      (GInputStream   *stream,
                                                 GCancellable   *cancellable,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqTensor *     piq_tensor_new_from_file        (GFile          *file,
                                                 GCancellable   *cancellable,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_save_to_stream       (PiqTensor      *self,
                                                 GOutputStream  *stream,
                                                 PiqFileFormat   format,
                                                 GCancellable   *cancellable,
                                                 GError        **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_tensor_save_to_file         (PiqTensor      *self,
                                                 GFile          *file,
                                                 PiqFileFormat   format,
                                                 GCancellable   *cancellable,
                                                 GError        **error);

/**
 * PiqSafetensors:
 *
 * Named tensors and string metadata, as a safetensors file holds them
 * (docs/files.md).
 *
 * Since: 1.0
 */
#define PIQ_TYPE_SAFETENSORS (piq_safetensors_get_type ())
PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqSafetensors, piq_safetensors, PIQ, SAFETENSORS, GObject)

PIQ_AVAILABLE_IN_1_0
PiqSafetensors * piq_safetensors_new             (void);
PIQ_AVAILABLE_IN_1_0
PiqSafetensors * piq_safetensors_new_from_stream (GInputStream   *stream,
                                                  GCancellable   *cancellable,
                                                  GError        **error);
PIQ_AVAILABLE_IN_1_0
PiqSafetensors * piq_safetensors_new_from_file   (GFile          *file,
                                                  GCancellable   *cancellable,
                                                  GError        **error);
PIQ_AVAILABLE_IN_1_0
char **          piq_safetensors_get_names       (PiqSafetensors *self);
PIQ_AVAILABLE_IN_1_0
PiqTensor *      piq_safetensors_get_tensor      (PiqSafetensors *self,
                                                  const char     *name);
PIQ_AVAILABLE_IN_1_0
void             piq_safetensors_set_tensor      (PiqSafetensors *self,
                                                  const char     *name,
                                                  PiqTensor      *tensor);
PIQ_AVAILABLE_IN_1_0
char **          piq_safetensors_get_metadata_keys (PiqSafetensors *self);
PIQ_AVAILABLE_IN_1_0
const char *     piq_safetensors_get_metadata    (PiqSafetensors *self,
                                                  const char     *key);
PIQ_AVAILABLE_IN_1_0
void             piq_safetensors_set_metadata    (PiqSafetensors *self,
                                                  const char     *key,
                                                  const char     *value);
PIQ_AVAILABLE_IN_1_0
gboolean         piq_safetensors_save_to_stream  (PiqSafetensors *self,
                                                  GOutputStream  *stream,
                                                  GCancellable   *cancellable,
                                                  GError        **error);
PIQ_AVAILABLE_IN_1_0
gboolean         piq_safetensors_save_to_file    (PiqSafetensors *self,
                                                  GFile          *file,
                                                  GCancellable   *cancellable,
                                                  GError        **error);

G_END_DECLS

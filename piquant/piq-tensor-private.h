/* piq-tensor-private.h: what the quantizer reads and writes of a tensor
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "piq-tensor.h"
#include "piq-engine-private.h"

G_BEGIN_DECLS

/* Make @self a quantized tensor of @format (checked against it; scales and zero
 * points are referenced). Only the quantizer and the constructors call this: a
 * tensor's meaning is set where its bytes are made. */
gboolean piq_tensor_set_quantized (PiqTensor  *self,
                                   PiqFormat  *format,
                                   double      scale,
                                   gint64      zero_point,
                                   guint64     seed,
                                   GBytes     *scales,
                                   GBytes     *zero_points,
                                   GError    **error);

/* The engine's view of a tensor (data as read-only or writable, as the call uses it). */
void piq_tensor_to_engine (PiqTensor *self, PiqEngineView *v);
void piq_tensor_to_engine_quant (PiqTensor *self, PiqEngineQuant *q);

G_END_DECLS

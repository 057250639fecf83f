/* piq-observer.h: calibration, the statistics of batches of data
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(__PIQUANT_H_INSIDE__) && !defined(PIQUANT_COMPILATION)
#error "Only <piquant/piquant.h> can be included directly."
#endif

#include <glib-object.h>
#include <piquant/piq-version.h>
#include <piquant/piq-types.h>
#include <piquant/piq-format.h>
#include <piquant/piq-recipe.h>
#include <piquant/piq-tensor.h>

G_BEGIN_DECLS

/**
 * PiqObserverKind:
 * @PIQ_OBSERVER_KIND_MIN_MAX: the running minimum and maximum of every batch
 *   (PyTorch's `MinMaxObserver` and `PerChannelMinMaxObserver`)
 * @PIQ_OBSERVER_KIND_MOVING_AVERAGE: the minimum and maximum of each batch,
 *   averaged with [property@Piq.Observer:averaging-constant]
 *   (PyTorch's `MovingAverageMinMaxObserver` and
 *   `MovingAveragePerChannelMinMaxObserver`)
 * @PIQ_OBSERVER_KIND_HISTOGRAM: a histogram of [property@Piq.Observer:n-bins]
 *   bins over the running range, and the L2-optimal clipping range searched on
 *   it (PyTorch's `HistogramObserver`; per tensor, or per channel: each
 *   channel's histogram is that of a `HistogramObserver` fed the channel alone)
 * @PIQ_OBSERVER_KIND_PERCENTILE: the same histogram; the range keeps the
 *   central [property@Piq.Observer:percentile] percent of the counts (per
 *   tensor and per channel)
 * @PIQ_OBSERVER_KIND_MSE: a histogram of the magnitudes of the negative and
 *   of the non-negative values over a power-of-two range, and the symmetric
 *   clip of the grid t · max|x|, t = 1/100 … 1, whose quantization error on
 *   the format's own grid (integer, FP8, FP4, NF4, …) is smallest (per
 *   tensor and per channel; merges exactly)
 * @PIQ_OBSERVER_KIND_ENTROPY: the same histogram; the clip threshold of
 *   least KL divergence between the clipped and the quantized distribution
 *   of |x| (TensorRT's entropy calibration; integer formats; per tensor and
 *   per channel; merges exactly)
 *
 * What an observer keeps of the batches it sees, and so how it derives scales.
 * See [Observers](observers.html) for the exact rules.
 *
 * Since: 1.0
 */
typedef enum {
  PIQ_OBSERVER_KIND_MIN_MAX        = 0,
  PIQ_OBSERVER_KIND_MOVING_AVERAGE = 1,
  PIQ_OBSERVER_KIND_HISTOGRAM      = 2,
  PIQ_OBSERVER_KIND_PERCENTILE     = 3,
  PIQ_OBSERVER_KIND_MSE            = 4,
  PIQ_OBSERVER_KIND_ENTROPY        = 5,
} PiqObserverKind;

#define PIQ_TYPE_OBSERVER (piq_observer_get_type ())

PIQ_AVAILABLE_IN_1_0
G_DECLARE_FINAL_TYPE (PiqObserver, piq_observer, PIQ, OBSERVER, GObject)

PIQ_AVAILABLE_IN_1_0
PiqObserver *   piq_observer_new                (PiqObserverKind  kind);
PIQ_AVAILABLE_IN_1_0
PiqObserver *   piq_observer_new_per_channel    (PiqObserverKind  kind,
                                                 int              axis);
PIQ_AVAILABLE_IN_1_0
PiqObserver *   piq_observer_new_deserialize    (GVariant        *state,
                                                 GError         **error);

PIQ_AVAILABLE_IN_1_0
PiqObserverKind piq_observer_get_kind           (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
PiqGranularity  piq_observer_get_granularity    (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
int             piq_observer_get_axis           (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
double          piq_observer_get_averaging_constant (PiqObserver *self);
PIQ_AVAILABLE_IN_1_0
guint           piq_observer_get_n_bins         (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
guint           piq_observer_get_upsample_rate  (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
double          piq_observer_get_percentile     (PiqObserver     *self);

PIQ_AVAILABLE_IN_1_0
gboolean        piq_observer_observe            (PiqObserver     *self,
                                                 PiqTensor       *batch,
                                                 GError         **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_observer_merge              (PiqObserver     *self,
                                                 PiqObserver     *other,
                                                 GError         **error);
PIQ_AVAILABLE_IN_1_0
void            piq_observer_reset              (PiqObserver     *self);

PIQ_AVAILABLE_IN_1_0
guint64         piq_observer_get_n_batches      (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
guint64         piq_observer_get_n_channels     (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_observer_get_min            (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_observer_get_max            (PiqObserver     *self);
PIQ_AVAILABLE_IN_1_0
GBytes *        piq_observer_get_histogram      (PiqObserver     *self);

PIQ_AVAILABLE_IN_1_0
PiqRecipe *     piq_observer_compute_recipe     (PiqObserver     *self,
                                                 PiqFormat       *format,
                                                 GError         **error);
PIQ_AVAILABLE_IN_1_0
gboolean        piq_observer_compute_channel_params (PiqObserver *self,
                                                 PiqFormat       *format,
                                                 GBytes         **scales,
                                                 GBytes         **zero_points,
                                                 GError         **error);

PIQ_AVAILABLE_IN_1_0
GVariant *      piq_observer_serialize          (PiqObserver     *self);

G_END_DECLS

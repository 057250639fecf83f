/* piq-observer.c: calibration, the statistics of batches of data
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

/* The binary32 rules below are torch's, one rounding per operation: never contract a
 * multiply and an add into an FMA, whatever the target. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize ("fp-contract=off")
#endif

#include <math.h>
#include <string.h>

#include "piq-observer.h"
#include "piq-quantizer.h"
#include "piq-enum-types.h"
#include "piq-error.h"
#include "piq-parallel-private.h"
#include "piq-format-private.h"
#include "piq-tensor-private.h"
#include "piq-engine-private.h"
#include "simd/piq-formats-private.h"
#include "simd/piq-kernels-private.h"
#include "simd/piq-convert-private.h"

/**
 * PiqObserver:
 *
 * Calibration: an observer reads batches of float data and keeps what a
 * scale rule needs of them, one tensor or one channel at a time; at any
 * point it derives the scale and zero point of a target [class@Piq.Format]
 * from what it has seen ([method@Piq.Observer.compute_recipe] per tensor,
 * [method@Piq.Observer.compute_channel_params] per channel).
 *
 * Two observers of the same configuration that saw different data merge
 * ([method@Piq.Observer.merge]), so threads, processes and machines can
 * calibrate together, and an observer's state is a #GVariant
 * ([method@Piq.Observer.serialize], [ctor@Piq.Observer.new_deserialize]), so
 * calibration can be checkpointed and resumed.
 *
 * The rules of each [enum@Piq.ObserverKind] are PyTorch's observers', and give
 * the same scales and zero points for the same data; see
 * [Observers](observers.html).
 *
 * ```c
 * g_autoptr(PiqObserver) obs = piq_observer_new (PIQ_OBSERVER_KIND_MIN_MAX);
 * for (guint i = 0; i < n_batches; i++)
 *   if (!piq_observer_observe (obs, batches[i], &error))
 *     return FALSE;
 * g_autoptr(PiqFormat) int8 = piq_format_new (PIQ_DTYPE_INT8);
 * g_autoptr(PiqRecipe) recipe = piq_observer_compute_recipe (obs, int8, &error);
 * ```
 *
 * Since: 1.0
 */
struct _PiqObserver
{
  GObject          parent_instance;

  PiqObserverKind  kind;
  PiqGranularity   granularity;
  int              axis;
  double           averaging_constant;
  guint            n_bins;
  guint            upsample_rate;
  double           percentile;

  guint64          n_batches;
  guint64          n_channels;   /* 0: nothing observed yet */
  double          *min;          /* n_channels binary32 values each (as torch keeps them) */
  double          *max;
  float           *hist;         /* histogram: n_bins counts over [min[0], max[0]] */
  double          *mag;          /* MSE and entropy: per channel, n_bins counts of the
                                  * magnitudes of the negative values, then n_bins of the
                                  * non-negative ones, over [0, 2^e) (mag_exponent) */
};

G_DEFINE_FINAL_TYPE (PiqObserver, piq_observer, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_KIND,
  PROP_GRANULARITY,
  PROP_AXIS,
  PROP_AVERAGING_CONSTANT,
  PROP_N_BINS,
  PROP_UPSAMPLE_RATE,
  PROP_PERCENTILE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

#define MAX_BINS      (1u << 20)
#define MAX_UPSAMPLE  (1u << 16)
#define STATE_VERSION 1
#define HAS_HISTOGRAM(self) ((self)->kind == PIQ_OBSERVER_KIND_HISTOGRAM || \
                             (self)->kind == PIQ_OBSERVER_KIND_PERCENTILE)
#define HAS_MAGNITUDES(self) ((self)->kind == PIQ_OBSERVER_KIND_MSE || \
                              (self)->kind == PIQ_OBSERVER_KIND_ENTROPY)
#define STATE_TYPE    "(a{sv})"
/* The smallest exponent of a magnitude histogram's range: binary32's smallest
 * normal, so a channel of zeros (or subnormals) still has a range. */
#define MAG_EXP_MIN   (-126)
/* The MSE search's candidates: clips t · max|x| for t = j / MSE_GRID, j = 1 … MSE_GRID. */
#define MSE_GRID      100
/* The entropy rule's smoothing of empty bins (MXNet's _smooth_distribution). */
#define KL_EPS        0.0001

static void
piq_observer_finalize (GObject *object)
{
  PiqObserver *self = PIQ_OBSERVER (object);

  g_free (self->min);
  g_free (self->max);
  g_free (self->hist);
  g_free (self->mag);
  G_OBJECT_CLASS (piq_observer_parent_class)->finalize (object);
}

static void
piq_observer_get_property (GObject    *object,
                           guint       prop_id,
                           GValue     *value,
                           GParamSpec *pspec)
{
  PiqObserver *self = PIQ_OBSERVER (object);

  switch (prop_id)
    {
    case PROP_KIND:               g_value_set_enum (value, self->kind); break;
    case PROP_GRANULARITY:        g_value_set_enum (value, self->granularity); break;
    case PROP_AXIS:               g_value_set_int (value, self->axis); break;
    case PROP_AVERAGING_CONSTANT: g_value_set_double (value, self->averaging_constant); break;
    case PROP_N_BINS:             g_value_set_uint (value, self->n_bins); break;
    case PROP_UPSAMPLE_RATE:      g_value_set_uint (value, self->upsample_rate); break;
    case PROP_PERCENTILE:         g_value_set_double (value, self->percentile); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_observer_set_property (GObject      *object,
                           guint         prop_id,
                           const GValue *value,
                           GParamSpec   *pspec)
{
  PiqObserver *self = PIQ_OBSERVER (object);

  switch (prop_id)
    {
    case PROP_KIND:               self->kind = g_value_get_enum (value); break;
    case PROP_GRANULARITY:        self->granularity = g_value_get_enum (value); break;
    case PROP_AXIS:               self->axis = g_value_get_int (value); break;
    case PROP_AVERAGING_CONSTANT: self->averaging_constant = g_value_get_double (value); break;
    case PROP_N_BINS:             self->n_bins = g_value_get_uint (value); break;
    case PROP_UPSAMPLE_RATE:      self->upsample_rate = g_value_get_uint (value); break;
    case PROP_PERCENTILE:         self->percentile = g_value_get_double (value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
piq_observer_class_init (PiqObserverClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags co = G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS;

  object_class->finalize = piq_observer_finalize;
  object_class->get_property = piq_observer_get_property;
  object_class->set_property = piq_observer_set_property;

  /**
   * PiqObserver:kind:
   *
   * What the observer keeps of its batches, and so how it derives scales.
   *
   * Since: 1.0
   */
  properties[PROP_KIND] =
    g_param_spec_enum ("kind", NULL, NULL, PIQ_TYPE_OBSERVER_KIND, PIQ_OBSERVER_KIND_MIN_MAX, co);

  /**
   * PiqObserver:granularity:
   *
   * One set of statistics for the whole tensor, or one per index of
   * [property@Piq.Observer:axis] (%PIQ_GRANULARITY_CHANNEL). Per-block
   * granularity makes the first call fail with %PIQ_ERROR_UNSUPPORTED.
   *
   * Since: 1.0
   */
  properties[PROP_GRANULARITY] =
    g_param_spec_enum ("granularity", NULL, NULL, PIQ_TYPE_GRANULARITY, PIQ_GRANULARITY_TENSOR, co);

  /**
   * PiqObserver:axis:
   *
   * The channel axis of a per-channel observer, as
   * [property@Piq.Format:axis]: an axis of each batch's shape, negative
   * values counting from the last axis. Any value but 0 needs per-channel
   * granularity.
   *
   * Since: 1.0
   */
  properties[PROP_AXIS] =
    g_param_spec_int ("axis", NULL, NULL, -PIQ_ENGINE_MAX_DIMS, PIQ_ENGINE_MAX_DIMS - 1, 0, co);

  /**
   * PiqObserver:averaging-constant:
   *
   * The weight c of a new batch in a moving-average observer:
   * `min ← min + c · (batch_min − min)` in binary32, as PyTorch's
   * `averaging_constant`. Other kinds ignore it.
   *
   * Since: 1.0
   */
  properties[PROP_AVERAGING_CONSTANT] =
    g_param_spec_double ("averaging-constant", NULL, NULL, 0.0, 1.0, 0.01, co);

  /**
   * PiqObserver:n-bins:
   *
   * The number of bins of a histogram observer's histogram (PyTorch's
   * `bins`, 2048 by default), and of each of the two magnitude histograms
   * (negative and non-negative values) that MSE and entropy observers keep
   * per channel (2048 by default, TensorRT's). Other kinds ignore it.
   *
   * Since: 1.0
   */
  properties[PROP_N_BINS] =
    g_param_spec_uint ("n-bins", NULL, NULL, 1, MAX_BINS, 2048, co);

  /**
   * PiqObserver:upsample-rate:
   *
   * How finely a histogram observer splits its bins when the range grows and
   * the histogram is re-binned onto the wider range (PyTorch's
   * `upsample_rate`, 128 by default). Other kinds ignore it.
   *
   * Since: 1.0
   */
  properties[PROP_UPSAMPLE_RATE] =
    g_param_spec_uint ("upsample-rate", NULL, NULL, 1, MAX_UPSAMPLE, 128, co);

  /**
   * PiqObserver:percentile:
   *
   * The percent of the counts that a percentile observer's range keeps,
   * from 50 to 100 (99.99 by default): the range runs from the bin where the
   * cumulative count first exceeds (100 − percentile)% of the total to the
   * bin where it first reaches percentile%. Other kinds ignore it.
   *
   * Since: 1.0
   */
  properties[PROP_PERCENTILE] =
    g_param_spec_double ("percentile", NULL, NULL, 50.0, 100.0, 99.99, co);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
piq_observer_init (PiqObserver *self)
{
  self->averaging_constant = 0.01;
  self->n_bins = 2048;
  self->upsample_rate = 128;
  self->percentile = 99.99;
}

/**
 * piq_observer_new:
 * @kind: what the observer keeps
 *
 * A per-tensor observer. Properties other than the kind keep their
 * defaults; use g_object_new() to set them.
 *
 * Returns: (transfer full): a new observer
 *
 * Since: 1.0
 */
PiqObserver *
piq_observer_new (PiqObserverKind kind)
{
  return g_object_new (PIQ_TYPE_OBSERVER, "kind", kind, NULL);
}

/**
 * piq_observer_new_per_channel:
 * @kind: what the observer keeps
 * @axis: the channel axis (negative: from the end)
 *
 * A per-channel observer.
 *
 * Returns: (transfer full): a new observer
 *
 * Since: 1.0
 */
PiqObserver *
piq_observer_new_per_channel (PiqObserverKind kind,
                              int             axis)
{
  return g_object_new (PIQ_TYPE_OBSERVER, "kind", kind, "granularity", PIQ_GRANULARITY_CHANNEL,
                       "axis", axis, NULL);
}

/**
 * piq_observer_get_kind:
 * @self: an observer
 *
 * The kind of statistics the observer keeps.
 *
 * Returns: the observer's kind
 *
 * Since: 1.0
 */
PiqObserverKind
piq_observer_get_kind (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), PIQ_OBSERVER_KIND_MIN_MAX);
  return self->kind;
}

/**
 * piq_observer_get_granularity:
 * @self: an observer
 *
 * Whether the observer keeps statistics per tensor or per channel.
 *
 * Returns: per tensor or per channel
 *
 * Since: 1.0
 */
PiqGranularity
piq_observer_get_granularity (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), PIQ_GRANULARITY_TENSOR);
  return self->granularity;
}

/**
 * piq_observer_get_axis:
 * @self: an observer
 *
 * The channel axis of a per-channel observer.
 *
 * Returns: the channel axis, as given
 *
 * Since: 1.0
 */
int
piq_observer_get_axis (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), 0);
  return self->axis;
}

/**
 * piq_observer_get_averaging_constant:
 * @self: an observer
 *
 * The weight of a new batch in a moving-average observer.
 *
 * Returns: the moving average's weight of a new batch
 *
 * Since: 1.0
 */
double
piq_observer_get_averaging_constant (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), 0.0);
  return self->averaging_constant;
}

/* ---------------------------------------------------------------------------
 * Configuration */

static gboolean
check_config (PiqObserver  *self,
              GError      **error)
{
  if ((guint) self->kind > PIQ_OBSERVER_KIND_ENTROPY)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "observer kind %d does not exist",
                   (int) self->kind);
      return FALSE;
    }
  if (self->granularity != PIQ_GRANULARITY_TENSOR && self->granularity != PIQ_GRANULARITY_CHANNEL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "observers keep statistics per tensor "
                   "or per channel, not per block");
      return FALSE;
    }
  if (self->axis != 0 && self->granularity != PIQ_GRANULARITY_CHANNEL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "axis %d applies to per-channel "
                   "observers only", self->axis);
      return FALSE;
    }
  return TRUE;
}

/* ---------------------------------------------------------------------------
 * Reductions
 *
 * A batch is read once. Its elements are cut into items of at most
 * PIQ_REDUCE_BLOCK elements of one row (rows as strided in memory, or the whole
 * contiguous extent of a channel when the data is packed); each item goes through
 * the kernel table's min/max reduction (SIMD), items spread over threads, and
 * their results combine per channel. Min and max do not depend on the order in
 * which they combine, so neither the thread count nor the SIMD level changes a
 * result. A channel axis that is the last axis has one element per channel in
 * each row: a scalar loop over columns, columns spread over threads. */

typedef struct {
  PiqMinMaxFn    minmax;
  const guint8  *data;
  gsize          stride;        /* bytes between rows */
  gsize          esize;
  guint64        cols;          /* elements of a row */
  guint64        blocks_per_row;
  PiqMinMax     *mm;            /* one per item */
} RowsJob;

static void
rows_range (void     *data,
            uint64_t  start,
            uint64_t  n)
{
  const RowsJob *job = data;

  for (uint64_t i = start; i < start + n; i++)
    {
      uint64_t r = i / job->blocks_per_row, off = (i % job->blocks_per_row) * PIQ_REDUCE_BLOCK;
      size_t len = (size_t) MIN (job->cols - off, (uint64_t) PIQ_REDUCE_BLOCK);

      job->minmax (job->data + r * job->stride + off * job->esize, len, &job->mm[i]);
    }
}

typedef struct {
  const guint8  *data;
  gsize          stride;
  int            ft;            /* PIQ_F_* */
  guint64        rows;
  double        *lo, *hi;       /* one per column */
  guint8        *bad;
} ColumnsJob;

static inline double
load_element (const guint8 *row,
              guint64       i,
              int           ft)
{
  double d;

  if (ft == PIQ_F_F64)
    {
      memcpy (&d, row + i * sizeof d, sizeof d);   /* rows may be unaligned */
      return d;
    }
  return piq_load_f (row, (size_t) i, ft);
}

static void
columns_range (void     *data,
               uint64_t  start,
               uint64_t  n)
{
  const ColumnsJob *job = data;

  for (uint64_t c = start; c < start + n; c++)
    {
      job->lo[c] = INFINITY;
      job->hi[c] = -INFINITY;
      job->bad[c] = 0;
    }
  for (uint64_t r = 0; r < job->rows; r++)
    {
      const guint8 *row = job->data + r * job->stride;
      for (uint64_t c = start; c < start + n; c++)
        {
          double x = load_element (row, c, job->ft);
          if (x - x != 0.0)   /* NaN or ±Inf */
            job->bad[c] = 1;
          else
            {
              job->lo[c] = x < job->lo[c] ? x : job->lo[c];
              job->hi[c] = x > job->hi[c] ? x : job->hi[c];
            }
        }
    }
  for (uint64_t c = start; c < start + n; c++)
    {
      /* −0 and +0 tie; report +0 as the kernels do */
      job->lo[c] += 0.0;
      job->hi[c] += 0.0;
    }
}

static guint
observer_threads (void)
{
  return piq_quantizer_get_n_threads (piq_quantizer_get_default ());
}

/* n elements of size bytes, zero-filled, or NULL with PIQ_ERROR_NO_MEMORY: for
 * buffers whose size follows the caller's batch (channels, rows). */
static gpointer
try_alloc_n (gsize n, gsize size, const char *what, GError **error)
{
  gpointer p = g_try_malloc0_n (MAX (n, 1), size);

  if (p == NULL)
    g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate %" G_GSIZE_FORMAT
                 " %s", n, what);
  return p;
}

/* The batch's per-channel min and max (n_ch of each), binary32 values. */
static gboolean
reduce_batch (const PiqEngineView *v,
              guint64              n,
              int                  axis,        /* normalized; -1: per tensor */
              guint64              n_ch,
              double              *lo,
              double              *hi,
              GError             **error)
{
  const PiqDtypeInfo *si = piq_dtype_info (v->dtype);
  gsize esize = si->bits / 8;
  guint64 cols = v->shape[v->n_dims - 1];
  gsize row_bytes = (gsize) cols * esize;
  gsize stride = v->row_stride ? v->row_stride : row_bytes;
  gboolean packed = stride == row_bytes;
  gboolean bad = FALSE;

  for (guint64 c = 0; c < n_ch; c++)
    {
      lo[c] = INFINITY;
      hi[c] = -INFINITY;
    }

  if (axis >= 0 && axis == (int) v->n_dims - 1)
    {
      g_autofree guint8 *bad_cols = try_alloc_n (n_ch, 1, "channel flags", error);
      if (bad_cols == NULL)
        return FALSE;
      ColumnsJob job = {
        .data = v->data, .stride = stride, .ft = si->kernel_index, .rows = n / cols,
        .lo = lo, .hi = hi, .bad = bad_cols,
      };
      piq_parallel_run (observer_threads (), n_ch, 16,
                        MAX (1, PIQ_PARALLEL_MIN_ELEMENTS / MAX (job.rows, 1)), columns_range, &job);
      for (guint64 c = 0; c < n_ch; c++)
        bad |= bad_cols[c];
    }
  else
    {
      /* rows of the items, and how many consecutive rows make one channel's slice */
      guint64 rows, k, inner = 1;
      RowsJob job = { 0 };
      g_autofree PiqMinMax *mm = NULL;
      guint64 n_items;

      if (axis >= 0)
        for (guint d = (guint) axis + 1; d < v->n_dims; d++)
          inner *= v->shape[d];
      if (packed)
        {
          job.cols = axis >= 0 ? inner : n;
          rows = n / job.cols;
          k = 1;
        }
      else
        {
          job.cols = cols;
          rows = n / cols;
          k = axis >= 0 ? inner / cols : rows;
        }
      job.minmax = piq_kernels_best ()->minmax[si->kernel_index];
      job.data = v->data;
      job.stride = packed ? (gsize) job.cols * esize : stride;
      job.esize = esize;
      job.blocks_per_row = (job.cols + PIQ_REDUCE_BLOCK - 1) / PIQ_REDUCE_BLOCK;
      n_items = rows * job.blocks_per_row;
      mm = try_alloc_n (n_items, sizeof *mm, "partial minima and maxima", error);
      if (mm == NULL)
        return FALSE;
      job.mm = mm;
      piq_parallel_run (observer_threads (), n_items, 1,
                        MAX (1, PIQ_PARALLEL_MIN_ELEMENTS / MIN (job.cols, (guint64) PIQ_REDUCE_BLOCK)),
                        rows_range, &job);
      for (guint64 i = 0; i < n_items; i++)
        {
          guint64 c = (i / job.blocks_per_row / k) % n_ch;
          if (mm[i].non_finite)
            {
              bad = TRUE;
              break;
            }
          lo[c] = MIN (lo[c], mm[i].min);
          hi[c] = MAX (hi[c], mm[i].max);
        }
    }
  if (bad)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE, "the batch contains NaN or infinity; "
                   "observers take finite data only");
      return FALSE;
    }
  /* binary32, as torch's observers convert the batch before reducing it */
  for (guint64 c = 0; c < n_ch; c++)
    {
      lo[c] = piq_f64_to_f32 (lo[c]);
      hi[c] = piq_f64_to_f32 (hi[c]);
      if (isinf (lo[c]) || isinf (hi[c]))
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE, "the batch holds %g, beyond "
                       "binary32's range, in which observers keep their statistics",
                       isinf (lo[c]) ? v->dtype == PIQ_DTYPE_F64 ? -HUGE_VAL : lo[c] : hi[c]);
          return FALSE;
        }
    }
  return TRUE;
}

/* ---------------------------------------------------------------------------
 * Histograms: torch 1.13's HistogramObserver, operation by operation, binary32
 * where torch computes on float32 tensors and binary64 where it computes on Python
 * floats or double tensors (see docs/observers.md). */

typedef struct {
  const guint8  *data;
  gsize          stride;
  int            ft;
  guint64        cols, n;
  PiqHistArgs    args;          /* the outer bin edges and the bin count */
  PiqHistBinsFn  bins_fn;
  guint64        chunk;         /* elements per chunk, below 2^32 */
  guint32       *counts;        /* 2 × (bins + 1) per chunk (the last: dropped elements) */
} HistJob;

static inline float
load_f32 (const guint8 *row,
          guint64       i,
          int           ft)
{
  /* f64 batches were checked to lie within binary32's range */
  return ft == PIQ_F_F64 ? piq_f64_to_f32 (load_element (row, i, ft)) : piq_load_f (row, i, ft);
}

/* A chunk's bins come from the kernel table's hist_bins (torch.histc's binary32
 * formula on every table, see piq-kernels-private.h), HIST_BLOCK elements at a time;
 * other types are read as binary32 first, as the observers read them. The counts
 * are 32-bit (a chunk holds fewer than 2^32 elements), in two sub-histograms by
 * element parity so that runs of one bin do not wait on each other's increments;
 * histc adds them up in 64 bits. */
#define HIST_BLOCK 256

static void
hist_range (void     *data,
            uint64_t  start,
            uint64_t  n)
{
  const HistJob *job = data;
  const guint stride = job->args.bins + 1;

  for (uint64_t k = start; k < start + n; k++)
    {
      guint32 *c0 = job->counts + k * 2 * stride, *c1 = c0 + stride;
      guint64 i = k * job->chunk, i1 = MIN (i + job->chunk, job->n);

      memset (c0, 0, 2 * stride * sizeof *c0);
      while (i < i1)
        {
          guint64 r = i / job->cols, c = i % job->cols, len = MIN (i1 - i, job->cols - c);
          const guint8 *row = job->data + r * job->stride;
          for (guint64 j = c; j < c + len; j += HIST_BLOCK)
            {
              gsize m = (gsize) MIN ((guint64) HIST_BLOCK, c + len - j), e = 0;
              guint32 idx[HIST_BLOCK];
              if (job->ft == PIQ_F_F32)
                job->bins_fn (row + 4 * j, m, &job->args, idx);
              else
                {
                  float x[HIST_BLOCK];
                  for (gsize q = 0; q < m; q++)
                    x[q] = load_f32 (row, j + q, job->ft);
                  job->bins_fn (x, m, &job->args, idx);
                }
              for (; e + 2 <= m; e += 2)
                {
                  c0[idx[e]]++;
                  c1[idx[e + 1]]++;
                }
              if (e < m)
                c0[idx[e]]++;
            }
          i += len;
        }
    }
}

/* torch.histc (x, bins, min=L, max=R) as float counts, on @threads threads (0: every
 * core). L == R takes the batch's own range, widened by 1 each way when it is a
 * single value. Counts are exact integers (torch accumulates in binary32, which
 * loses counts past 2^24 in one bin), so the chunking, which follows the thread
 * count, changes nothing. */
static gboolean
histc (const PiqEngineView *v,
       unsigned             threads,
       guint64              n,
       double               L,
       double               R,
       float                data_lo,
       float                data_hi,
       guint                bins,
       float               *out,
       GError             **error)
{
  const PiqDtypeInfo *si = piq_dtype_info (v->dtype);
  gsize esize = si->bits / 8;
  guint64 cols = v->shape[v->n_dims - 1];
  gsize row_bytes = (gsize) cols * esize, stride = v->row_stride ? v->row_stride : row_bytes;
  HistJob job = { .data = v->data, .ft = si->kernel_index, .n = n,
                  .bins_fn = piq_kernels_best ()->hist_bins };
  guint64 n_chunks;
  g_autofree guint32 *counts = NULL;

  job.args.bins = bins;
  job.args.lo = (float) L;
  job.args.hi = (float) R;
  if (L == R)
    {
      job.args.lo = data_lo;
      job.args.hi = data_hi;
      if (job.args.lo == job.args.hi)
        {
          job.args.lo -= 1.0f;
          job.args.hi += 1.0f;
        }
    }
  job.cols = stride == row_bytes ? n : cols;
  job.stride = stride == row_bytes ? n * esize : stride;
  /* chunks of at least 64 Ki elements (below 2^32: the counts are 32-bit), at most 4
   * per thread, at most 8 Mi counts */
  n_chunks = MIN ((n + 65535) / 65536, 4 * (guint64) (threads ? threads : piq_parallel_max_threads ()));
  n_chunks = MAX (1, MIN (n_chunks, (8u << 20) / (2 * (bins + 1))));
  job.chunk = MIN ((n + n_chunks - 1) / n_chunks, (guint64) G_MAXUINT32);
  n_chunks = (n + job.chunk - 1) / job.chunk;
  /* 2 × (bins + 1) per chunk: the last of each counts what the kernel drops */
  counts = try_alloc_n (n_chunks * 2 * (bins + 1), sizeof *counts, "histogram counts", error);
  if (counts == NULL)
    return FALSE;
  job.counts = counts;
  piq_parallel_run (threads, n_chunks, 1, 2, hist_range, &job);
  for (guint b = 0; b < bins; b++)
    {
      guint64 total = 0;
      for (guint64 k = 0; k < 2 * n_chunks; k++)
        total += counts[k * (bins + 1) + b];
      out[b] = (float) total;
    }
  return TRUE;
}

/* torch's _combine_histograms: @old upsampled by @up into cells [start, start +
 * bins·up) of a grid of bins·down cells (cells past the grid are dropped: torch
 * raises there), integrated in binary64 in cell order, read every down cells, and
 * the differences / up added to @orig. Only the non-zero cells are visited. */
static void
combine_histograms (float       *orig,
                    const float *old,
                    guint        up,
                    guint64      down,
                    guint64      start,
                    guint        bins)
{
  guint64 cells = (guint64) bins * down, end = MIN (start + (guint64) bins * up, cells), j = start;
  double acc = 0.0;
  float shifted = 0.0f;

  for (guint k = 0; k < bins; k++)
    {
      guint64 p = MIN ((guint64) (k + 1) * down, end);
      double interpolated;
      for (; j < p; j++)
        acc += (double) old[(j - start) / up];
      interpolated = (acc - (double) shifted) / (double) up;
      orig[k] = orig[k] + (float) interpolated;
      shifted = (float) acc;
    }
}

/* Merging histograms over different ranges (torch has no rule for it): each of
 * the n source bins over [lo, hi] holds its count spread uniformly over its
 * interval, and target bin j of the n bins over [nlo, nhi] ⊇ [lo, hi] receives
 * count · (overlap / source width), added in binary64 in source-bin order. A
 * source of zero width (all data one value) puts its whole count into the target
 * bin holding that value, the last bin for nhi. Counts are conserved up to
 * rounding; where a target bin's edges fall inside a source bin, where the data
 * lay within that bin is not known, hence the uniform assumption. */
static void
hist_spread (double      *dst,
             guint        n,
             double       nlo,
             double       nhi,
             const float *src,
             double       lo,
             double       hi)
{
  const double nw = (nhi - nlo) / n, w = (hi - lo) / n;

  for (guint i = 0; i < n; i++)
    {
      double a = lo + i * w, b = i + 1 == n ? hi : lo + (i + 1) * w;
      guint j0, j1;

      if (src[i] == 0)
        continue;
      if (!(nw > 0))
        {
          dst[0] += src[i];            /* the target has no width: one point */
          continue;
        }
      j0 = (guint) MIN (floor ((a - nlo) / nw), n - 1.0);
      if (!(b > a))
        {
          dst[j0] += src[i];
          continue;
        }
      j1 = (guint) MIN (MAX (ceil ((b - nlo) / nw) - 1, (double) j0), n - 1.0);
      for (guint j = j0; j <= j1; j++)
        {
          double e0 = j == 0 ? nlo : nlo + j * nw, e1 = j + 1 == n ? nhi : nlo + (j + 1) * nw;
          double overlap = MIN (b, e1) - MAX (a, e0);
          if (overlap > 0)
            dst[j] += (double) src[i] * (overlap / (b - a));
        }
    }
}

/* A batch (or one channel's part of it) into channel @c's histogram (torch's
 * forward), into new state that the caller commits. */
static gboolean
hist_observe (PiqObserver          *self,
              guint64               c,
              unsigned              threads,
              const PiqEngineView  *v,
              guint64               n,
              float                 lo,
              float                 hi,
              float                *h,
              float                *new_min,
              float                *new_max,
              GError              **error)
{
  guint bins = self->n_bins;
  float mn, mx, cmin, cmax, hbw, span, ratio, e;
  double down_d, start_d;

  if (self->n_channels == 0 || self->min[c] == self->max[c])
    {
      /* a first batch, or a histogram of one value: start over from this batch */
      if (!histc (v, threads, n, trunc (lo), trunc (hi), lo, hi, bins, h, error))
        return FALSE;
      *new_min = lo;
      *new_max = hi;
      return TRUE;
    }
  mn = (float) self->min[c];
  mx = (float) self->max[c];
  cmin = MIN (lo, mn);
  cmax = MAX (hi, mx);
  /* _adjust_min_max: a grid of the old bin width / up that the combined range
   * spans in a whole number of groups of bins cells; only the max moves */
  hbw = (mx - mn) / (float) ((double) bins * self->upsample_rate);
  span = (float) bins * hbw;
  ratio = (cmax - cmin) / span;
  down_d = ceilf (ratio);
  if (!(down_d >= 1.0 && down_d <= 0x1p40))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the batch's range [%g, %g] is "
                   "%g times the histogram's [%g, %g]: too wide to re-bin", lo, hi, ratio, mn, mx);
      return FALSE;
    }
  e = (float) down_d * span - (cmax - cmin);
  cmax = cmax + e;
  start_d = nearbyintf ((mn - cmin) / hbw);
  if (!histc (v, threads, n, trunc (cmin), trunc (cmax), lo, hi, bins, h, error))
    return FALSE;
  if (cmin == mn && cmax == mx)
    for (guint b = 0; b < bins; b++)
      h[b] = h[b] + self->hist[c * bins + b];
  else
    combine_histograms (h, self->hist + c * bins, self->upsample_rate, (guint64) down_d,
                        start_d > 0 ? (guint64) start_d : 0, bins);
  *new_min = cmin;
  *new_max = cmax;
  return TRUE;
}

/* c10::div_floor_floating, binary32. */
static float
floor_divide (float a,
              float b)
{
  float mod, div, fl;

  if (b == 0.0f)
    return a / b;
  mod = fmodf (a, b);
  div = (a - mod) / b;
  if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f))
    div -= 1.0f;
  if (div == 0.0f)
    return copysignf (0.0f, a / b);
  fl = floorf (div);
  if (div - fl > 0.5f)
    fl += 1.0f;
  return fl;
}

/* torch's _compute_quantization_error: the L2 error of quantizing the histogram
 * with bins [ns, ne] as the range onto dst_nbins levels. The terms are binary32 as
 * torch's; their sum is binary64, rounded to binary32 (torch sums in binary32 in an
 * order that depends on its SIMD build). */
static double
quantization_error (const PiqObserver *self,
                    guint64            c,
                    gint64             ns,
                    gint64             ne,
                    double             dst_nbins)
{
  guint bins = self->n_bins;
  const float *hist = self->hist + c * bins;
  double bin_width = (self->max[c] - self->min[c]) / bins;
  double dbw = bin_width * (double) (ne - ns + 1) / dst_nbins, sum = 0.0;
  float bwf, dbwf, half, nhalf, top, mid;

  if (dbw == 0.0)
    return 0.0;
  bwf = (float) bin_width;
  dbwf = (float) dbw;
  half = (float) (dbw / 2);
  nhalf = (float) (-dbw / 2);
  top = (float) (dst_nbins - 1);
  mid = (half * half * half - nhalf * nhalf * nhalf) / 3.0f;
  for (guint i = 0; i < bins; i++)
    {
      float sbb = (float) ((gint64) i - ns) * bwf;
      float sbe = sbb + bwf;
      float dob = CLAMP (floor_divide (sbb, dbwf), 0.0f, top);
      float doe = CLAMP (floor_divide (sbe, dbwf), 0.0f, top);
      float dobc = (dob + 0.5f) * dbwf;
      float density = hist[i] / bwf;
      float db = sbb - dobc;
      float norm = density * ((half * half * half - db * db * db) / 3.0f);
      float doec, de;

      norm = norm + (doe - dob - 1.0f) * (density * mid);
      doec = doe * dbwf + half;
      de = sbe - doec;
      norm = norm + density * ((de * de * de - nhalf * nhalf * nhalf) / 3.0f);
      sum += norm;
    }
  return (float) sum;
}

/* torch's _non_linear_param_search on channel @c: moves the range's ends inwards by
 * quantiles of 1e-5 while the quantization error decreases. */
static void
hist_search (const PiqObserver *self,
             guint64            c,
             double             dst_nbins,
             float             *new_min,
             float             *new_max)
{
  guint bins = self->n_bins;
  const float *hist = self->hist + c * bins;
  float min_val = (float) self->min[c], max_val = (float) self->max[c];
  float bwf = (max_val - min_val) / (float) bins;
  g_autofree float *csum = g_new (float, bins);
  double acc = 0.0, total, alpha = 0.0, beta = 1.0, norm_min = INFINITY;
  const double step = 1e-5;
  gint64 start = 0, end = (gint64) bins - 1;

  for (guint b = 0; b < bins; b++)
    {
      acc += hist[b];            /* torch's cumsum accumulates in binary64 */
      csum[b] = (float) acc;
    }
  total = (float) acc;
  while (alpha < beta)
    {
      double next_alpha = alpha + step, next_beta = beta - step, norm;
      float ta = (float) (next_alpha * total), tb = (float) (next_beta * total);
      gint64 l = start, r = end, ns = start, ne = end;

      while (l < end && csum[l] < ta)
        l++;
      while (r > start && csum[r] > tb)
        r--;
      if (l - start > end - r)
        {
          ns = l;
          alpha = next_alpha;
        }
      else
        {
          ne = r;
          beta = next_beta;
        }
      if (ns == start && ne == end)
        continue;
      norm = quantization_error (self, c, ns, ne, dst_nbins);
      if (norm > norm_min)
        break;
      norm_min = norm;
      start = ns;
      end = ne;
    }
  *new_min = min_val + bwf * (float) start;
  *new_max = min_val + bwf * (float) (end + 1);
}

/* The percentile rule, on channel @c: the cumulative counts (binary64, in bin order) against
 * fractions of the total; the range is the lower edge of the first bin whose
 * cumulative count exceeds (1 − p)·total and the upper edge of the first whose
 * cumulative count reaches p·total, edges min + k·(max − min)/bins in binary64,
 * rounded to binary32. */
static void
percentile_range (const PiqObserver *self,
                  guint64            c,
                  float             *lo,
                  float             *hi)
{
  guint bins = self->n_bins, k_lo = 0, k_hi = bins - 1;
  const float *hist = self->hist + c * bins;
  double total = 0.0, acc = 0.0, p = self->percentile / 100.0;
  double width = (self->max[c] - self->min[c]) / bins;
  gboolean have_lo = FALSE;

  for (guint b = 0; b < bins; b++)
    total += hist[b];
  for (guint b = 0; b < bins; b++)
    {
      acc += hist[b];
      if (!have_lo && acc > (1.0 - p) * total)
        {
          k_lo = b;
          have_lo = TRUE;
        }
      if (acc >= p * total)
        {
          k_hi = b;
          break;
        }
    }
  *lo = (float) (self->min[c] + width * k_lo);
  *hi = (float) (self->min[c] + width * (k_hi + 1));
  if (*hi < *lo)
    *hi = *lo;
}

/* ---------------------------------------------------------------------------
 * Magnitude histograms (MSE and entropy observers)
 *
 * Per channel, n_bins counts of |x| for the negative values and n_bins for the
 * non-negative ones, over [0, 2^e) with e the smallest exponent (≥ MAG_EXP_MIN)
 * above the channel's largest magnitude. Bin k holds floor(|x| · n_bins / 2^e) =
 * k, computed exactly in binary64 (|x| has 24 significant bits, n_bins at most 21).
 * Because the range is a power of two, a wider range re-bins exactly: bin k goes
 * to k >> s, as floor(floor(y) / 2^s) = floor(y / 2^s). So the histogram is a
 * function of the data only, whatever the order of the batches and merges. */

static int
mag_exponent (double lo,
              double hi)
{
  double a = MAX (fabs (lo), fabs (hi));
  int e;

  if (a == 0.0)
    return MAG_EXP_MIN;
  (void) frexp (a, &e);       /* a = m · 2^e, m in [1/2, 1): a < 2^e ≤ 2a */
  return MAX (e, MAG_EXP_MIN);
}

static inline guint64
mag_bin (double a,
         guint  bins,
         int    e)
{
  return (guint64) ldexp (a * (double) bins, -e);
}

/* Adds the two histograms of @src (range 2^from) to @dst (range 2^to, to ≥ from). */
static void
mag_rebin (double       *dst,
           const double *src,
           guint         bins,
           int           from,
           int           to)
{
  int s = to - from;

  for (guint k = 0; k < 2 * bins; k++)
    if (src[k] != 0.0)
      {
        guint side = k / bins, b = k % bins;
        dst[side * bins + (s >= 32 ? 0 : b >> s)] += src[k];
      }
}

/* A per-tensor batch's magnitude counts in chunks on the observer's threads (as
 * hist_range): counts are integers, so adding the chunks' counts in any order is
 * exact. Two sub-histograms per chunk, by element parity, so that runs of equal
 * bins do not wait on each other's increments. */
typedef struct {
  const guint8  *data;
  gsize          stride;
  int            ft;
  guint64        cols, n, chunk;
  guint          bins;
  double         scale;         /* bins · 2^−e */
  float          fscale;        /* the same when it is a binary32 power of two, else 0 */
  guint32       *counts;        /* 2 × 2 · bins per chunk */
} MagJob;

/* Elements c … c + len − 1 of a row into counts. The type, bins and scale are
 * arguments, not the job's fields: the compiler re-read those after every increment
 * (the counts may alias the job), and with ft a constant (f32, below) the type is not
 * dispatched per element. */
static inline void
mag_row (guint32 *counts, const guint8 *row, guint64 c, guint64 len, int ft, guint bins,
         double scale)
{
  for (guint64 j = c; j < c + len; j++)
    {
      float x = load_f32 (row, j, ft);
      /* the side without a branch (the signs of real data are random: a branch
       * mispredicts half the time); −0 counts as +0; the bin as a signed conversion
       * (it is below bins), one instruction */
      guint32 *side = counts + (j & 1) * 2 * bins + (bins & (0u - (guint) (x >= 0.0f)));
      side[(gint64) (fabs ((double) x) * scale)]++;
    }
}

/* f32 rows when bins is a power of two (@fscale = bins · 2^−e, a binary32 power of
 * two): |x| · fscale is then exact in binary32 (a power-of-two scaling, below bins;
 * a subnormal product is below 1 and truncates to 0 either way), so its truncation
 * is mag_bin's, four lanes at a time, the side added as bins where x ≥ 0 (−0 too),
 * then counted as above. */
#define MAG_BLOCK 256
typedef float   mag_v4f __attribute__ ((vector_size (16)));
typedef int32_t mag_v4i __attribute__ ((vector_size (16)));

static void
mag_row_f32 (guint32 *counts, const guint8 *row, guint64 c, guint64 len, guint bins,
             float fscale)
{
  const mag_v4f vs = { fscale, fscale, fscale, fscale }, zero = { 0 };
  const mag_v4i vb = { (int32_t) bins, (int32_t) bins, (int32_t) bins, (int32_t) bins };
  guint32 *c0 = counts, *c1 = counts + 2 * bins;

  for (guint64 j = c; j < c + len; j += MAG_BLOCK)
    {
      gsize m = (gsize) MIN ((guint64) MAG_BLOCK, c + len - j), e = 0;
      guint32 idx[MAG_BLOCK];
      for (; e + 4 <= m; e += 4)
        {
          mag_v4f v, a;
          mag_v4i k;
          memcpy (&v, row + 4 * (j + e), sizeof v);          /* rows may be unaligned */
          a = (mag_v4f) ((mag_v4i) v & 0x7fffffff);
          k = __builtin_convertvector (a * vs, mag_v4i) + ((v >= zero) & vb);
          memcpy (idx + e, &k, sizeof k);
        }
      for (; e < m; e++)
        {
          float x;
          memcpy (&x, row + 4 * (j + e), sizeof x);
          idx[e] = (guint32) (fabsf (x) * fscale) + (x >= 0.0f ? bins : 0);
        }
      for (e = 0; e + 2 <= m; e += 2)
        {
          c0[idx[e]]++;
          c1[idx[e + 1]]++;
        }
      if (e < m)
        c0[idx[e]]++;
    }
}

static void
mag_range (void     *data,
           uint64_t  start,
           uint64_t  n)
{
  const MagJob *job = data;

  for (uint64_t k = start; k < start + n; k++)
    {
      guint32 *counts = job->counts + k * 4 * job->bins;
      guint64 i = k * job->chunk, i1 = MIN (i + job->chunk, job->n);

      memset (counts, 0, 4 * job->bins * sizeof *counts);
      while (i < i1)
        {
          guint64 r = i / job->cols, c = i % job->cols, len = MIN (i1 - i, job->cols - c);
          const guint8 *row = job->data + r * job->stride;
          if (job->ft == PIQ_F_F32 && job->fscale != 0.0f)
            mag_row_f32 (counts, row, c, len, job->bins, job->fscale);
          else if (job->ft == PIQ_F_F32)
            mag_row (counts, row, c, len, PIQ_F_F32, job->bins, job->scale);
          else
            mag_row (counts, row, c, len, job->ft, job->bins, job->scale);
          i += len;
        }
    }
}

/* Counts a batch (its values read as binary32, as every observer reads them) into
 * the histograms @h of each channel, whose exponents are @e. */
static gboolean
mag_count (const PiqEngineView *v,
           guint64              n,
           int                  axis,       /* normalized; -1: per tensor */
           guint64              n_ch,
           guint                bins,
           const int           *e,
           double              *h,
           GError             **error)
{
  const PiqDtypeInfo *si = piq_dtype_info (v->dtype);
  gsize esize = si->bits / 8;
  guint64 cols = v->shape[v->n_dims - 1], rows = n / cols, inner = 1;
  gsize stride = v->row_stride ? v->row_stride : (gsize) cols * esize;

  /* 2^−e per channel: multiplying by it is exactly mag_bin's ldexp (a power of two,
   * and |x| · bins · 2^−e stays far from binary64's subnormals), without a libm call
   * per element */
  g_autofree double *scale = NULL;

  if (axis < 0)
    {
      gsize row_bytes = (gsize) cols * esize;
      MagJob job = { .data = v->data, .ft = si->kernel_index, .n = n, .bins = bins,
                     .scale = ldexp ((double) bins, -e[0]) };
      guint64 n_chunks;
      g_autofree guint32 *counts = NULL;

      if ((bins & (bins - 1)) == 0 && job.scale >= 0x1p-126 && job.scale <= 0x1p127)
        job.fscale = (float) job.scale;
      job.cols = stride == row_bytes ? n : cols;
      job.stride = stride == row_bytes ? n * esize : stride;
      /* chunks of at least 64 Ki elements (below 2^32 counts), at most 4 per
       * thread, at most 8 Mi counts */
      n_chunks = MIN ((n + 65535) / 65536, 4 * (guint64) piq_parallel_max_threads ());
      n_chunks = MAX (1, MIN (n_chunks, (8u << 20) / (4 * bins)));
      job.chunk = MIN ((n + n_chunks - 1) / n_chunks, (guint64) G_MAXUINT32);
      n_chunks = (n + job.chunk - 1) / job.chunk;
      counts = try_alloc_n (n_chunks * 4 * (gsize) bins, sizeof *counts, "histogram counts", error);
      if (counts == NULL)
        return FALSE;
      job.counts = counts;
      piq_parallel_run (observer_threads (), n_chunks, 1, 2, mag_range, &job);
      for (guint64 k = 0; k < n_chunks; k++)
        for (guint b = 0; b < 2 * bins; b++)
          h[b] += (double) counts[k * 4 * bins + b] + (double) counts[k * 4 * bins + 2 * bins + b];
      return TRUE;
    }
  scale = try_alloc_n (n_ch, sizeof *scale, "channel scales", error);
  if (scale == NULL)
    return FALSE;
  for (guint64 c = 0; c < n_ch; c++)
    scale[c] = ldexp (1.0, -e[c]);
  if (axis >= 0)
    for (guint d = (guint) axis + 1; d < v->n_dims; d++)
      inner *= v->shape[d];
  for (guint64 r = 0; r < rows; r++)
    {
      const guint8 *row = (const guint8 *) v->data + r * stride;
      for (guint64 j = 0; j < cols; j++)
        {
          guint64 i = r * cols + j, c = axis >= 0 ? (i / inner) % n_ch : 0;
          float x = load_f32 (row, j, si->kernel_index);
          /* −0 counts as +0, as the minima and maxima read it */
          double *side = h + c * 2 * bins + (x < 0.0f ? 0 : bins);
          side[(guint64) (fabs ((double) x) * (double) bins * scale[c])] += 1.0;
        }
    }
  return TRUE;
}

/* Whether @h (one channel's two histograms) could come from data of the range
 * [lo, hi]: non-negative integer counts, the bins of the range's ends counted and
 * nothing counted beyond them. */
static gboolean
mag_consistent (const double *h,
                guint         bins,
                double        lo,
                double        hi)
{
  int e = mag_exponent (lo, hi);
  /* on each side, the bins [first, last] that may be counted; last < first: none */
  gint64 neg_first = hi < 0.0 ? (gint64) mag_bin (-hi, bins, e) : 0;
  gint64 neg_last = lo < 0.0 ? (gint64) mag_bin (-lo, bins, e) : -1;
  gint64 pos_first = lo > 0.0 ? (gint64) mag_bin (lo, bins, e) : 0;
  gint64 pos_last = hi >= 0.0 ? (gint64) mag_bin (hi, bins, e) : -1;

  /* whether a side's first and last bins hold one of the range's ends (which
   * data of that range must have counted) */
  gboolean neg_first_end = hi < 0.0, pos_first_end = lo >= 0.0;

  for (guint k = 0; k < 2 * bins; k++)
    {
      gint64 b = k % bins;
      gboolean neg = k < bins;
      gint64 first = neg ? neg_first : pos_first, last = neg ? neg_last : pos_last;
      gboolean first_end = neg ? neg_first_end : pos_first_end;
      if (!(h[k] >= 0.0 && h[k] <= 0x1p53 && floor (h[k]) == h[k]))
        return FALSE;
      if ((b < first || b > last) && h[k] != 0.0)
        return FALSE;
      if (first <= last && (b == last || (b == first && first_end)) && h[k] == 0.0)
        return FALSE;
    }
  return TRUE;
}

/* The histograms of @n_ch channels of the range [lo, hi] (the new minima and
 * maxima): @old_h (ranges old_lo/old_hi, or NULL) and @add_h (ranges add_lo/add_hi,
 * or NULL) re-binned onto them and added. @e receives the channels' exponents. */
static void
mag_combine (double       *h,
             int          *e,
             guint64       n_ch,
             guint         bins,
             const double *lo,
             const double *hi,
             const double *old_h,
             const double *old_lo,
             const double *old_hi,
             const double *add_h,
             const double *add_lo,
             const double *add_hi)
{
  for (guint64 c = 0; c < n_ch; c++)
    {
      e[c] = mag_exponent (lo[c], hi[c]);
      if (old_h != NULL)
        mag_rebin (h + c * 2 * bins, old_h + c * 2 * bins, bins,
                   mag_exponent (old_lo[c], old_hi[c]), e[c]);
      if (add_h != NULL)
        mag_rebin (h + c * 2 * bins, add_h + c * 2 * bins, bins,
                   mag_exponent (add_lo[c], add_hi[c]), e[c]);
    }
}

/* MXNet's _smooth_distribution on counts: zeros become KL_EPS, the others lose
 * KL_EPS · zeros / non-zeros (the mass moved). FALSE when every entry is zero or
 * one falls to ≤ 0: the candidate's divergence is then +∞. */
static gboolean
kl_smooth (double *d,
           guint   n)
{
  guint zeros = 0;
  double eps1;

  for (guint k = 0; k < n; k++)
    zeros += d[k] == 0.0;
  if (zeros == n)
    return FALSE;
  eps1 = KL_EPS * (double) zeros / (double) (n - zeros);
  for (guint k = 0; k < n; k++)
    {
      d[k] = d[k] == 0.0 ? KL_EPS : d[k] - eps1;
      if (!(d[k] > 0.0))
        return FALSE;
    }
  return TRUE;
}

/* TensorRT's entropy calibration ("8-bit Inference with TensorRT", S7310, 2017)
 * on one channel's histogram of |x| (the sum of its two histograms), with MXNet's
 * smoothing (docs/observers.md gives the procedure step by step). Everything is
 * binary64, sums in bin order, so that an implementation of the published steps
 * finds the same minimum. Returns the threshold (m + 0.5) · bin width, or the
 * whole range when no candidate has a finite divergence. */
static double
kl_threshold (const double *h,
              guint         bins,
              int           e,
              guint         levels)
{
  g_autofree double *H = g_try_new (double, bins), *P = g_try_new (double, bins);
  g_autofree double *Q = g_try_new (double, bins);
  double best = INFINITY;
  guint m = bins;      /* no finite divergence: no clipping (see the docs) */

  if (H == NULL || P == NULL || Q == NULL)
    return NAN;        /* out of memory: entropy_thresholds reports it */
  for (guint k = 0; k < bins; k++)
    H[k] = h[k] + h[bins + k];
  for (guint i = levels; i < bins; i++)
    {
      guint width = i / levels;
      double outliers = 0.0, sp = 0.0, sq = 0.0, kl = 0.0;

      /* P: the first i bins, the outliers folded into the last of them */
      for (guint k = 0; k < i; k++)
        P[k] = H[k];
      for (guint k = i; k < bins; k++)
        outliers += H[k];
      P[i - 1] += outliers;
      /* Q: bins 0 … i − 1 (without the outliers) merged into `levels` groups of
       * `width` bins (the last group takes the remainder), each group's count
       * spread evenly over its bins where P is not empty */
      for (guint g = 0; g < levels; g++)
        {
          guint start = g * width, stop = g == levels - 1 ? i : start + width, nz = 0;
          double sum = 0.0;
          for (guint k = start; k < stop; k++)
            {
              sum += H[k];
              nz += P[k] != 0.0;
            }
          for (guint k = start; k < stop; k++)
            Q[k] = P[k] != 0.0 ? sum / (double) nz : 0.0;
        }
      if (!kl_smooth (P, i) || !kl_smooth (Q, i))
        continue;
      for (guint k = 0; k < i; k++)
        {
          sp += P[k];
          sq += Q[k];
        }
      for (guint k = 0; k < i; k++)
        {
          double p = P[k] / sp, q = Q[k] / sq;
          kl += p * log (p / q);
        }
      if (kl < best)
        {
          best = kl;
          m = i;
        }
    }
  if (m == bins)
    return ldexp (1.0, e);
  return ((double) m + 0.5) * (ldexp (1.0, e) / (double) bins);
}

/* m + c·(x − m), each operation rounded to binary32 as torch computes it. */
static double
moving_average (double m,
                double x,
                double c)
{
  volatile float d = (float) x - (float) m;   /* volatile: no contraction into an FMA */
  volatile float t = (float) c * d;
  return (float) m + t;
}

static void
update (PiqObserver  *self,
        const double *lo,
        const double *hi,
        guint64       n_ch,
        guint64       n_batches)
{
  if (self->n_channels == 0)
    {
      self->min = g_memdup2 (lo, n_ch * sizeof *lo);
      self->max = g_memdup2 (hi, n_ch * sizeof *hi);
      self->n_channels = n_ch;
    }
  else if (self->kind != PIQ_OBSERVER_KIND_MOVING_AVERAGE)
    for (guint64 c = 0; c < n_ch; c++)
      {
        self->min[c] = MIN (self->min[c], lo[c]);
        self->max[c] = MAX (self->max[c], hi[c]);
      }
  else
    for (guint64 c = 0; c < n_ch; c++)
      {
        self->min[c] = moving_average (self->min[c], lo[c], self->averaging_constant);
        self->max[c] = moving_average (self->max[c], hi[c], self->averaging_constant);
      }
  self->n_batches += n_batches;
}

/* The buffers of a magnitude-histogram update over n_ch channels (the counts,
 * each channel's range exponent, the new minima and maxima), and the new ranges:
 * this observer's widened by lo and hi. */
static gboolean
mag_union (PiqObserver   *self,
           guint64        n_ch,
           const double  *lo,
           const double  *hi,
           double       **h,
           int          **e,
           double       **nlo,
           double       **nhi,
           GError       **error)
{
  if (n_ch > G_MAXSIZE / (2 * (gsize) self->n_bins * sizeof (double)))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "%" G_GUINT64_FORMAT " channels of "
                   "%u bins do not fit in memory", n_ch, self->n_bins);
      return FALSE;
    }
  *h = try_alloc_n (n_ch * 2 * self->n_bins, sizeof **h, "histogram counts", error);
  *e = *h != NULL ? try_alloc_n (n_ch, sizeof **e, "histogram ranges", error) : NULL;
  *nlo = *e != NULL ? try_alloc_n (n_ch, sizeof **nlo, "channel minima", error) : NULL;
  *nhi = *nlo != NULL ? try_alloc_n (n_ch, sizeof **nhi, "channel maxima", error) : NULL;
  if (*nhi == NULL)
    return FALSE;
  for (guint64 c = 0; c < n_ch; c++)
    {
      (*nlo)[c] = self->n_channels != 0 ? MIN (self->min[c], lo[c]) : lo[c];
      (*nhi)[c] = self->n_channels != 0 ? MAX (self->max[c], hi[c]) : hi[c];
    }
  return TRUE;
}

/* The elements of a channel along @axis, in flat order, are `outer` runs of
 * `inner` elements, one run in every n_ch. */
static guint64
channel_inner (const PiqEngineView *v,
               int                  axis)
{
  guint64 inner = 1;

  for (guint d = (guint) axis + 1; d < v->n_dims; d++)
    inner *= v->shape[d];
  return inner;
}

/* Whether each channel is one run of whole rows of the batch, read in place:
 * axis 0 of a matrix or more (the single elements that are a vector's channels
 * are gathered). */
static gboolean
channel_is_rows (const PiqEngineView *v,
                 guint64              n,
                 int                  axis,
                 guint64              n_ch)
{
  guint64 inner = channel_inner (v, axis);

  return n / (n_ch * inner) == 1 && inner % v->shape[v->n_dims - 1] == 0;
}

/* Channel @c of a batch along @axis as a view the histogram can read: one run
 * of whole rows (axis 0) is a view of the batch itself (its rows, strided or
 * not); anything else is gathered into @x as binary32, the values the histogram
 * reads (@x is unused, and may be NULL, where channel_is_rows). */
static void
channel_view (const PiqEngineView *v,
              guint64              n,
              int                  axis,
              guint64              n_ch,
              guint64              c,
              float               *x,
              PiqEngineView       *cv)
{
  const PiqDtypeInfo *si = piq_dtype_info (v->dtype);
  gsize esize = si->bits / 8;
  guint64 cols = v->shape[v->n_dims - 1], inner = channel_inner (v, axis), m = 0;
  guint64 outer = n / (n_ch * inner);
  gsize stride = v->row_stride ? v->row_stride : (gsize) cols * esize;

  if (channel_is_rows (v, n, axis, n_ch))
    {
      *cv = *v;
      cv->data = (const guint8 *) v->data + c * (inner / cols) * stride;
      cv->n_dims = 2;
      cv->shape[0] = inner / cols;
      cv->shape[1] = cols;
      return;
    }
  for (guint64 o = 0; o < outer; o++)
    for (guint64 i = (o * n_ch + c) * inner, end = i + inner; i < end; )
      {
        guint64 col = i % cols, len = MIN (end - i, cols - col);
        const guint8 *row = (const guint8 *) v->data + (i / cols) * stride;
        for (guint64 j = col; j < col + len; j++)
          x[m++] = load_f32 (row, j, si->kernel_index);
        i += len;
      }
  *cv = (PiqEngineView) { .dtype = PIQ_DTYPE_F32, .n_dims = 1, .shape = { m },
                          .data = x, .size = m * sizeof (float) };
}

/* Channels [start, start + n) of a batch into their histograms, one thread each
 * (the channels run on the team), each with a buffer of its own for gathers. A
 * channel that fails keeps its error; the caller reports the first. */
typedef struct {
  PiqObserver          *self;
  const PiqEngineView  *v;
  guint64               n, n_ch;
  int                   axis;     /* -1: the batch is the one channel */
  unsigned              threads;  /* for each histc: 1 inside the team, else the default */
  double               *lo, *hi;  /* in: the batch's ranges; out: the histograms' */
  float                *h;
  GError              **errors;   /* one per channel */
} HistChannelsJob;

static void
hist_channels_range (void     *data,
                     uint64_t  start,
                     uint64_t  n)
{
  HistChannelsJob *job = data;
  g_autofree float *x = NULL;

  if (job->axis >= 0 && !channel_is_rows (job->v, job->n, job->axis, job->n_ch) &&
      (x = try_alloc_n (job->n / job->n_ch, sizeof *x, "a channel's values",
                        &job->errors[start])) == NULL)
    return;
  for (guint64 c = start; c < start + n; c++)
    {
      PiqEngineView cv;
      float new_min, new_max;
      if (job->axis >= 0)
        channel_view (job->v, job->n, job->axis, job->n_ch, c, x, &cv);
      if (!hist_observe (job->self, c, job->threads, job->axis >= 0 ? &cv : job->v,
                         job->n / job->n_ch, (float) job->lo[c], (float) job->hi[c],
                         job->h + c * job->self->n_bins, &new_min, &new_max, &job->errors[c]))
        continue;
      job->lo[c] = new_min + 0.0;
      job->hi[c] = new_max + 0.0;
    }
}

/* A batch into the histograms: each channel's part of it into that channel's
 * histogram, as a per-tensor observer of that channel alone would (a per-tensor
 * observer has one channel, the whole batch). Several channels run on the default
 * quantizer's threads, a channel each; a single channel spreads its binning over
 * them. The counts are exact, so the state does not depend on the thread count.
 * Commits only when every channel succeeded. */
static gboolean
hist_update (PiqObserver          *self,
             const PiqEngineView  *v,
             guint64               n,
             int                  axis,
             guint64              n_ch,
             double              *lo,
             double              *hi,
             GError              **error)
{
  guint bins = self->n_bins;
  g_autofree float *h = NULL;
  g_autofree double *nmin = NULL, *nmax = NULL;
  g_autofree GError **errors = NULL;
  HistChannelsJob job = { .self = self, .v = v, .n = n, .n_ch = n_ch,
                          .axis = n_ch > 1 ? axis : -1,
                          .threads = n_ch > 1 ? 1 : observer_threads (), .lo = lo, .hi = hi };
  gboolean ok = TRUE;

  if (n_ch > G_MAXSIZE / bins / sizeof (float))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "%" G_GUINT64_FORMAT " channels of "
                   "%u bins do not fit in memory", n_ch, bins);
      return FALSE;
    }
  h = try_alloc_n (n_ch * bins, sizeof *h, "histogram counts", error);
  if (h == NULL || (errors = try_alloc_n (n_ch, sizeof *errors, "channel errors", error)) == NULL)
    return FALSE;
  memset (errors, 0, n_ch * sizeof *errors);
  if (self->n_channels == 0 &&
      ((nmin = try_alloc_n (n_ch, sizeof *nmin, "channel minima", error)) == NULL ||
       (nmax = try_alloc_n (n_ch, sizeof *nmax, "channel maxima", error)) == NULL))
    return FALSE;
  job.h = h;
  job.errors = errors;
  piq_parallel_run (observer_threads (), n_ch, 1,
                    MAX (1, PIQ_PARALLEL_MIN_ELEMENTS / MAX (n / n_ch, 1)),
                    hist_channels_range, &job);
  for (guint64 c = 0; c < n_ch; c++)
    if (errors[c] != NULL)
      {
        if (ok)
          g_propagate_error (error, errors[c]);
        else
          g_error_free (errors[c]);
        ok = FALSE;
      }
  if (!ok)
    return FALSE;
  g_free (self->hist);
  self->hist = g_steal_pointer (&h);
  if (self->n_channels == 0)
    {
      self->min = g_steal_pointer (&nmin);
      self->max = g_steal_pointer (&nmax);
      self->n_channels = n_ch;
    }
  memcpy (self->min, lo, n_ch * sizeof *lo);
  memcpy (self->max, hi, n_ch * sizeof *hi);
  self->n_batches++;
  return TRUE;
}

/**
 * piq_observer_observe:
 * @self: an observer
 * @batch: a float tensor (f32, f64, bf16 or f16; strided rows are read as
 *   strided)
 * @error: return location for a #GError
 *
 * Adds a batch to the observer's statistics.
 *
 * Min/max observers read the batch once; histogram, percentile, MSE and
 * entropy observers read it a second time to count it into their bins.
 *
 * The batch must hold at least one element (%PIQ_ERROR_EMPTY) and only
 * finite values within binary32's range (%PIQ_ERROR_NON_FINITE: NaN and
 * ±Inf are rejected, never skipped). A per-channel observer's axis must
 * exist in the batch's shape, and every batch must have as many channels as
 * the first (%PIQ_ERROR_SIZE). On error the observer is unchanged.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_observer_observe (PiqObserver  *self,
                      PiqTensor    *batch,
                      GError      **error)
{
  PiqEngineView v;
  const PiqDtypeInfo *si;
  guint64 n, n_ch = 1;
  int axis = -1;
  g_autofree double *lo = NULL, *hi = NULL;

  g_return_val_if_fail (PIQ_IS_OBSERVER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (batch), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_config (self, error))
    return FALSE;
  piq_tensor_to_engine (batch, &v);
  si = piq_dtype_info (v.dtype);
  if (si == NULL || si->kind != PIQ_KIND_FLOAT)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "observers read float tensors; "
                   "%s is not a float type", si != NULL ? si->name : "the batch's dtype");
      return FALSE;
    }
  n = piq_tensor_get_n_elements (batch);
  if (n == 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY, "the batch has no elements");
      return FALSE;
    }
  if (self->granularity == PIQ_GRANULARITY_CHANNEL)
    {
      axis = self->axis < 0 ? self->axis + (int) v.n_dims : self->axis;
      if (axis < 0 || axis >= (int) v.n_dims)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "axis %d does not exist in a tensor "
                       "of %u dimension%s", self->axis, v.n_dims, v.n_dims == 1 ? "" : "s");
          return FALSE;
        }
      n_ch = v.shape[axis];
    }
  if (self->n_channels != 0 && self->n_channels != n_ch)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "the batch has %" G_GUINT64_FORMAT
                   " channels along axis %d, the observer's earlier batches %" G_GUINT64_FORMAT,
                   n_ch, self->axis, self->n_channels);
      return FALSE;
    }
  lo = try_alloc_n (n_ch, sizeof *lo, "channel minima", error);
  hi = lo != NULL ? try_alloc_n (n_ch, sizeof *hi, "channel maxima", error) : NULL;
  if (hi == NULL || !reduce_batch (&v, n, axis, n_ch, lo, hi, error))
    return FALSE;
  if (HAS_HISTOGRAM (self))
    return hist_update (self, &v, n, axis, n_ch, lo, hi, error);
  if (HAS_MAGNITUDES (self))
    {
      g_autofree double *h = NULL, *nlo = NULL, *nhi = NULL;
      g_autofree int *e = NULL;
      if (!mag_union (self, n_ch, lo, hi, &h, &e, &nlo, &nhi, error))
        return FALSE;
      /* the earlier counts onto the (possibly wider) ranges, then this batch */
      mag_combine (h, e, n_ch, self->n_bins, nlo, nhi, self->mag, self->min, self->max,
                   NULL, NULL, NULL);
      if (!mag_count (&v, n, axis, n_ch, self->n_bins, e, h, error))
        return FALSE;
      g_free (self->mag);
      self->mag = g_steal_pointer (&h);
    }
  update (self, lo, hi, n_ch, 1);
  return TRUE;
}

/* ---------------------------------------------------------------------------
 * Merging, resetting, reading */

static gboolean
same_config (PiqObserver  *self,
             PiqObserver  *other,
             GError      **error)
{
  if (self->kind != other->kind || self->granularity != other->granularity ||
      self->axis != other->axis ||
      (self->kind == PIQ_OBSERVER_KIND_MOVING_AVERAGE &&
       self->averaging_constant != other->averaging_constant) ||
      (HAS_HISTOGRAM (self) &&
       (self->n_bins != other->n_bins || self->upsample_rate != other->upsample_rate)) ||
      (HAS_MAGNITUDES (self) && self->n_bins != other->n_bins) ||
      (self->kind == PIQ_OBSERVER_KIND_PERCENTILE && self->percentile != other->percentile))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "cannot merge observers of "
                   "different configurations (kind, granularity, axis, averaging constant, bins, "
                   "upsample rate or percentile)");
      return FALSE;
    }
  if (self->n_channels != 0 && other->n_channels != 0 && self->n_channels != other->n_channels)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_SIZE, "cannot merge an observer of %"
                   G_GUINT64_FORMAT " channels into one of %" G_GUINT64_FORMAT,
                   other->n_channels, self->n_channels);
      return FALSE;
    }
  return TRUE;
}

/* @other's histograms into @self's, channel by channel: over the same range the
 * counts add (for self == other too); over different ranges both spread onto the
 * union (hist_spread); an observer that has seen nothing takes @other's state. */
static gboolean
hist_merge (PiqObserver  *self,
            PiqObserver  *other,
            GError      **error)
{
  guint bins = self->n_bins;
  guint64 n_ch = other->n_channels;
  g_autofree double *acc = NULL;

  if (self->n_channels == 0)
    {
      g_autofree double *lo = try_alloc_n (n_ch, sizeof *lo, "channel minima", error);
      g_autofree double *hi = lo != NULL ? try_alloc_n (n_ch, sizeof *hi, "channel maxima", error) : NULL;
      g_autofree float *h = hi != NULL ? try_alloc_n (n_ch * bins, sizeof *h, "histogram counts", error) : NULL;
      if (h == NULL)
        return FALSE;
      memcpy (lo, other->min, n_ch * sizeof *lo);
      memcpy (hi, other->max, n_ch * sizeof *hi);
      memcpy (h, other->hist, n_ch * bins * sizeof *h);
      self->min = g_steal_pointer (&lo);
      self->max = g_steal_pointer (&hi);
      self->hist = g_steal_pointer (&h);
      self->n_channels = n_ch;
      self->n_batches = other->n_batches;
      return TRUE;
    }
  acc = try_alloc_n (bins, sizeof *acc, "histogram counts", error);
  if (acc == NULL)
    return FALSE;
  for (guint64 c = 0; c < n_ch; c++)
    {
      float *h = self->hist + c * bins;
      const float *oh = other->hist + c * bins;
      if (self->min[c] == other->min[c] && self->max[c] == other->max[c])
        {
          for (guint b = 0; b < bins; b++)
            h[b] = h[b] + oh[b];
          continue;
        }
      /* different ranges: both histograms spread onto the union (docs/observers.md);
       * @other is not @self here, whose ranges are its own */
      double lo = MIN (self->min[c], other->min[c]), hi = MAX (self->max[c], other->max[c]);
      memset (acc, 0, bins * sizeof *acc);
      hist_spread (acc, bins, lo, hi, h, self->min[c], self->max[c]);
      hist_spread (acc, bins, lo, hi, oh, other->min[c], other->max[c]);
      for (guint b = 0; b < bins; b++)
        h[b] = (float) acc[b];
      self->min[c] = lo;
      self->max[c] = hi;
    }
  self->n_batches += other->n_batches;
  return TRUE;
}

/**
 * piq_observer_merge:
 * @self: an observer
 * @other: an observer of the same configuration
 * @error: return location for a #GError
 *
 * Adds what @other has seen to @self; @other is unchanged.
 *
 * For min/max observers the result is exactly the state of one observer
 * that saw both observers' batches. A moving average depends on the order
 * of its batches, so merging defines one: @other's running minimum and
 * maximum count as one more batch of @self (averaged in with
 * [property@Piq.Observer:averaging-constant]); an observer that has seen
 * nothing takes @other's state as it is. Histograms (channel by channel)
 * over the same range add bin by bin; over different ranges both are spread onto the union
 * range, each bin's count uniformly over its interval (an approximation:
 * PyTorch defines no merge). The magnitude histograms of MSE and entropy
 * observers re-bin exactly onto the common range and add, so the result is
 * exactly that of one observer fed both observers' data. See
 * [Observers](observers.html).
 *
 * Observers of different kinds, granularities, axes, averaging constants,
 * bin counts or upsample rates do not merge (%PIQ_ERROR_INVALID_VALUE), nor do observers of different
 * channel counts (%PIQ_ERROR_SIZE); @self is then unchanged.
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_observer_merge (PiqObserver  *self,
                    PiqObserver  *other,
                    GError      **error)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_OBSERVER (other), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_config (self, error) || !same_config (self, other, error))
    return FALSE;
  if (other->n_channels == 0)
    return TRUE;
  if (HAS_HISTOGRAM (self))
    return hist_merge (self, other, error);
  if (HAS_MAGNITUDES (self))
    {
      guint64 n_ch = other->n_channels;
      g_autofree double *h = NULL, *nlo = NULL, *nhi = NULL;
      g_autofree int *e = NULL;

      if (!mag_union (self, n_ch, other->min, other->max, &h, &e, &nlo, &nhi, error))
        return FALSE;
      /* both observers' counts onto the common ranges: exact, so the result is the
       * histogram of all the data (for self == other too: both are read first) */
      mag_combine (h, e, n_ch, self->n_bins, nlo, nhi, self->mag, self->min, self->max,
                   other->mag, other->min, other->max);
      g_free (self->mag);
      self->mag = g_steal_pointer (&h);
      update (self, other->min, other->max, n_ch, other->n_batches);
      return TRUE;
    }
  if (self == other)
    {
      /* the same data twice: min/max unchanged; the moving average takes one step
       * towards itself, which changes nothing either */
      self->n_batches *= 2;
      return TRUE;
    }
  update (self, other->min, other->max, other->n_channels, other->n_batches);
  return TRUE;
}

/**
 * piq_observer_reset:
 * @self: an observer
 *
 * Forgets every batch: the observer is as new, its configuration unchanged.
 *
 * Since: 1.0
 */
void
piq_observer_reset (PiqObserver *self)
{
  g_return_if_fail (PIQ_IS_OBSERVER (self));

  g_clear_pointer (&self->min, g_free);
  g_clear_pointer (&self->max, g_free);
  g_clear_pointer (&self->hist, g_free);
  g_clear_pointer (&self->mag, g_free);
  self->n_channels = 0;
  self->n_batches = 0;
}

/**
 * piq_observer_get_n_bins:
 * @self: an observer
 *
 * The number of bins of a histogram observer's histogram.
 *
 * Returns: the number of bins of a histogram observer
 *
 * Since: 1.0
 */
guint
piq_observer_get_n_bins (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), 0);
  return self->n_bins;
}

/**
 * piq_observer_get_upsample_rate:
 * @self: an observer
 *
 * How finely a histogram observer splits its bins when it re-bins.
 *
 * Returns: a histogram observer's upsample rate
 *
 * Since: 1.0
 */
guint
piq_observer_get_upsample_rate (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), 0);
  return self->upsample_rate;
}

/**
 * piq_observer_get_percentile:
 * @self: an observer
 *
 * The percent of the counts that a percentile observer's range keeps.
 *
 * Returns: the percentile
 *
 * Since: 1.0
 */
double
piq_observer_get_percentile (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), 0.0);
  return self->percentile;
}

/**
 * piq_observer_get_histogram:
 * @self: an observer
 *
 * A histogram or percentile observer's histograms:
 * [property@Piq.Observer:n-bins] doubles per channel, channel after channel,
 * in host byte order, each a binary32 value, each channel's over its range from
 * [method@Piq.Observer.get_min] to [method@Piq.Observer.get_max]. For an
 * MSE or entropy observer, each channel's two magnitude histograms, channel
 * after channel: [property@Piq.Observer:n-bins] counts of −x for the
 * negative values, then as many of x for the others, over [0, 2^e) where
 * 2^e is the smallest power of two (at least 2⁻¹²⁶) above the channel's
 * largest magnitude (see [Observers](observers.html)). Empty before the
 * first batch and for other kinds.
 *
 * Returns: (transfer full): the bins
 *
 * Since: 1.0
 */
GBytes *
piq_observer_get_histogram (PiqObserver *self)
{
  g_autofree double *h = NULL;
  gsize n;

  g_return_val_if_fail (PIQ_IS_OBSERVER (self), NULL);
  if (self->mag != NULL)
    return g_bytes_new (self->mag, self->n_channels * 2 * self->n_bins * sizeof (double));
  n = self->hist != NULL ? self->n_channels * self->n_bins : 0;
  h = g_new (double, MAX (n, 1));
  for (gsize i = 0; i < n; i++)
    h[i] = self->hist[i];
  return g_bytes_new_take (g_steal_pointer (&h), n * sizeof (double));
}

/**
 * piq_observer_get_n_batches:
 * @self: an observer
 *
 * How many batches the observer has seen.
 *
 * Returns: the number of batches observed, merged observers' included
 *
 * Since: 1.0
 */
guint64
piq_observer_get_n_batches (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), 0);
  return self->n_batches;
}

/**
 * piq_observer_get_n_channels:
 * @self: an observer
 *
 * How many channels the observer keeps statistics for.
 *
 * Returns: the number of channels of the batches observed (1 per tensor),
 *   0 before the first batch
 *
 * Since: 1.0
 */
guint64
piq_observer_get_n_channels (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), 0);
  return self->n_channels;
}

/**
 * piq_observer_get_min:
 * @self: an observer
 *
 * The running minimum of each channel (one for a per-tensor observer): an
 * array of [method@Piq.Observer.get_n_channels] doubles in host byte
 * order, each a binary32 value. Empty before the first batch.
 *
 * Returns: (transfer full): the minima
 *
 * Since: 1.0
 */
GBytes *
piq_observer_get_min (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), NULL);
  return g_bytes_new (self->min, self->n_channels * sizeof (double));
}

/**
 * piq_observer_get_max:
 * @self: an observer
 *
 * The running maximum of each channel, as [method@Piq.Observer.get_min].
 *
 * Returns: (transfer full): the maxima
 *
 * Since: 1.0
 */
GBytes *
piq_observer_get_max (PiqObserver *self)
{
  g_return_val_if_fail (PIQ_IS_OBSERVER (self), NULL);
  return g_bytes_new (self->max, self->n_channels * sizeof (double));
}

/* ---------------------------------------------------------------------------
 * Results */

static const PiqDtypeInfo *
check_target (PiqObserver     *self,
              PiqFormat       *format,
              PiqGranularity   granularity,
              GError         **error)
{
  const PiqEngineFormat *f = piq_format_peek (format);
  const PiqDtypeInfo *info;

  if (!check_config (self, error) || !piq_format_validate (format, error))
    return NULL;
  info = piq_dtype_info (f->dtype);
  if (self->granularity != granularity)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "a %s observer gives %s parameters",
                   self->granularity == PIQ_GRANULARITY_TENSOR ? "per-tensor" : "per-channel",
                   self->granularity == PIQ_GRANULARITY_TENSOR ? "per-tensor" : "per-channel");
      return NULL;
    }
  if (f->granularity != (int) granularity)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the format is not %s",
                   granularity == PIQ_GRANULARITY_TENSOR ? "per-tensor" : "per-channel");
      return NULL;
    }
  if (granularity == PIQ_GRANULARITY_CHANNEL && f->axis != self->axis)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the format's channel axis %d is "
                   "not the observer's, %d", f->axis, self->axis);
      return NULL;
    }
  /* the MSE search runs on any format's own grid (the engine's codecs); the other
   * rules are defined for integer grids */
  if (info->kind != PIQ_KIND_INT &&
      !(self->kind == PIQ_OBSERVER_KIND_MSE && info->kind == PIQ_KIND_CODE))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "%s observers give integer "
                   "scales; %s is not an integer type",
                   self->kind == PIQ_OBSERVER_KIND_MSE ? "MSE" : "these", info->name);
      return NULL;
    }
  if (self->n_channels == 0)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY, "the observer has seen no data");
      return NULL;
    }
  return info;
}

/* The min/max rule of the engine (piq_affine_from_range: binary32 arithmetic,
 * torch's eps, zero included, ties-to-even zero points). */
static gboolean
channel_params (const PiqDtypeInfo  *info,
                gboolean             symmetric,
                double               lo,
                double               hi,
                double              *scale,
                gint64              *zp,
                GError             **error)
{
  piq_affine_from_range (lo, hi, info->min, info->max, symmetric, TRUE, scale, zp);
  if (!isfinite (*scale))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE, "the range [%g, %g] gives no "
                   "finite binary32 scale", lo, hi);
      return FALSE;
    }
  return TRUE;
}

/* A per-tensor format of @format's element grid (dtype, symmetry, saturation), on
 * which candidate scales are evaluated with the engine's own codecs. */
static PiqFormat *
grid_format (PiqFormat *format)
{
  return g_object_new (PIQ_TYPE_FORMAT, "dtype", piq_format_get_dtype (format),
                       "symmetric", piq_format_get_symmetric (format),
                       "saturate", piq_format_get_saturate (format), NULL);
}

/* The scale (and zero point) of the range [lo, hi] by the format's own rule:
 * integers by channel_params, code formats by the engine's per-tensor rule
 * (absmax / the format's max, absmax for the table formats, …) applied to the
 * range's two ends. */
static gboolean
range_params (PiqFormat           *grid,
              const PiqDtypeInfo  *info,
              gboolean             symmetric,
              double               lo,
              double               hi,
              double              *scale,
              gint64              *zp,
              GError             **error)
{
  g_autoptr(PiqRecipe) recipe = NULL;
  float ends[2] = { (float) lo, (float) hi };

  if (info->kind == PIQ_KIND_INT)
    return channel_params (info, symmetric, lo, hi, scale, zp, error);
  recipe = piq_recipe_new ();
  if (!piq_quantizer_compute_params_raw (piq_quantizer_get_default (), grid, recipe,
                                         PIQ_DTYPE_F32, ends, 2, error))
    return FALSE;
  *scale = piq_recipe_get_scale (recipe);
  *zp = 0;
  return TRUE;
}

static PiqRecipe *
params_recipe (const PiqDtypeInfo *info,
               gboolean            symmetric,
               double              scale,
               gint64              zp)
{
  return symmetric || info->kind != PIQ_KIND_INT ? piq_recipe_new_fixed (scale)
                                                 : piq_recipe_new_affine (scale, zp);
}

/* [lo, hi] clipped to [−t, t] (both ends clamped, so that data of one sign keeps
 * a range of that sign). */
static void
clip_range (double  lo,
            double  hi,
            double  t,
            double *clo,
            double *chi)
{
  *clo = CLAMP (lo, -t, t);
  *chi = CLAMP (hi, -t, t);
}

/* The MSE search on channel @c: for each clip t_j = binary32 (max|x| · j / 100),
 * the range [min, max] clamped to [−t_j, t_j] gives a scale by the format's rule;
 * the histogram's non-empty bins, each represented by its centre (clamped to the
 * observed range) with its count as weight, go through the format's own
 * requantization with that scale, and the squared errors are summed in binary64
 * in ascending order of the centres. The least error wins, ties the wider clip. */
static gboolean
mse_params (PiqObserver         *self,
            guint64              c,
            PiqFormat           *grid,
            const PiqDtypeInfo  *info,
            gboolean             symmetric,
            double              *scale,
            gint64              *zp,
            GError             **error)
{
  guint bins = self->n_bins;
  const double *h = self->mag + c * 2 * bins;
  double lo = self->min[c], hi = self->max[c], a = MAX (fabs (lo), fabs (hi));
  double w = ldexp (1.0, mag_exponent (lo, hi)) / (double) bins, best = INFINITY;
  g_autofree float *x = try_alloc_n (2 * (gsize) bins, sizeof (float), "bin centres", error);
  g_autofree float *y = x ? try_alloc_n (2 * (gsize) bins, sizeof (float), "bin centres", error) : NULL;
  g_autofree double *count = y ? try_alloc_n (2 * (gsize) bins, sizeof (double), "bin counts", error)
                               : NULL;
  guint64 n = 0;
  gboolean found = FALSE;

  if (count == NULL)
    return FALSE;
  for (guint k = bins; k-- > 0;)
    if (h[k] != 0.0)
      {
        x[n] = (float) CLAMP (-(((double) k + 0.5) * w), lo, hi);
        count[n++] = h[k];
      }
  for (guint k = 0; k < bins; k++)
    if (h[bins + k] != 0.0)
      {
        x[n] = (float) CLAMP (((double) k + 0.5) * w, lo, hi);
        count[n++] = h[bins + k];
      }
  for (guint j = 1; j <= MSE_GRID; j++)
    {
      double t = (float) (a * (double) j / MSE_GRID), s, err = 0.0, clo, chi;
      gint64 z;
      g_autoptr(PiqRecipe) recipe = NULL;

      clip_range (lo, hi, t, &clo, &chi);
      if (!range_params (grid, info, symmetric, clo, chi, &s, &z, error))
        return FALSE;
      recipe = params_recipe (info, symmetric, s, z);
      if (!piq_quantizer_requantize_raw (piq_quantizer_get_default (), grid, recipe,
                                         PIQ_DTYPE_F32, x, &n, 1, y, n * sizeof *y,
                                         PIQ_REDUCE_SET, error))
        return FALSE;
      for (guint64 k = 0; k < n; k++)
        {
          double d = (double) x[k] - (double) y[k];
          err += count[k] * (d * d);
        }
      /* a NaN error (a format that does not saturate) never wins */
      if (err <= best)
        {
          best = err;
          *scale = s;
          *zp = z;
          found = TRUE;
        }
    }
  if (!found)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_SCALE, "no clip of [%g, %g] has a "
                   "finite quantization error", lo, hi);
      return FALSE;
    }
  return TRUE;
}

/* The number of quantization levels of |x| for the entropy rule on channel @c:
 * 2^(bits − 1), or 2^bits for an affine format and data of one sign (whose range
 * the whole integer range covers); fewer than the histogram's bins. */
static gboolean
entropy_levels (PiqObserver         *self,
                guint64              c,
                const PiqDtypeInfo  *info,
                gboolean             symmetric,
                guint               *levels,
                GError             **error)
{
  double lo = self->min[c], hi = self->max[c];
  guint bits = (!symmetric && (lo >= 0.0 || hi <= 0.0)) ? info->bits : info->bits - 1;

  if (bits >= 31 || (1u << bits) >= self->n_bins)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED, "the entropy rule needs more "
                   "bins (%u) than quantization levels (2^%u) of %s", self->n_bins, bits,
                   info->name);
      return FALSE;
    }
  *levels = 1u << bits;
  return TRUE;
}

typedef struct {
  const PiqObserver *self;
  const guint       *levels;
  double            *t;
  gint               failed;   /* a search could not allocate its scratch */
} KlJob;

static void
kl_range (void     *data,
          uint64_t  start,
          uint64_t  n)
{
  const KlJob *job = data;
  const PiqObserver *self = job->self;

  for (uint64_t c = start; c < start + n; c++)
    {
      double t = kl_threshold (self->mag + c * 2 * self->n_bins, self->n_bins,
                               mag_exponent (self->min[c], self->max[c]), job->levels[c]);
      job->t[c] = (float) t;
      if (isnan (t))
        g_atomic_int_set (&job->failed, 1);
    }
}

/* Every channel's entropy threshold T (binary32 values). The searches are
 * independent and cost O(bins²) each, so the channels are spread over the
 * default quantizer's threads; the result does not depend on their number. */
static double *
entropy_thresholds (PiqObserver         *self,
                    const PiqDtypeInfo  *info,
                    gboolean             symmetric,
                    GError             **error)
{
  g_autofree guint *levels = try_alloc_n (self->n_channels, sizeof (guint), "channel levels", error);
  g_autofree double *t = levels ? try_alloc_n (self->n_channels, sizeof (double), "thresholds", error)
                                : NULL;
  KlJob job = { .self = self, .levels = levels, .t = t };

  if (t == NULL)
    return NULL;
  for (guint64 c = 0; c < self->n_channels; c++)
    if (!entropy_levels (self, c, info, symmetric, &levels[c], error))
      return NULL;
  piq_parallel_run (observer_threads (), self->n_channels, 1, 2, kl_range, &job);
  if (job.failed)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "cannot allocate the entropy "
                   "search's 3 × %u bins", self->n_bins);
      return NULL;
    }
  return g_steal_pointer (&t);
}

/* The scale and zero point of channel @c for an MSE or entropy observer; an
 * entropy observer's range is [min, max] clamped to [−T, T], T from
 * @thresholds, by the min/max rule. */
static gboolean
search_params (PiqObserver         *self,
               guint64              c,
               PiqFormat           *grid,
               const PiqDtypeInfo  *info,
               gboolean             symmetric,
               const double        *thresholds,
               double              *scale,
               gint64              *zp,
               GError             **error)
{
  double clo, chi;

  if (self->kind == PIQ_OBSERVER_KIND_MSE)
    return mse_params (self, c, grid, info, symmetric, scale, zp, error);
  clip_range (self->min[c], self->max[c], thresholds[c], &clo, &chi);
  return channel_params (info, symmetric, clo, chi, scale, zp, error);
}

/**
 * piq_observer_compute_recipe:
 * @self: a per-tensor observer
 * @format: a per-tensor integer format (for an MSE observer, any per-tensor
 *   format that takes a scale: FP8, FP6, FP4 E2M1, NF4, …)
 * @error: return location for a #GError
 *
 * The per-tensor scale (and, for affine formats, zero point) of @format for
 * the data observed, in a recipe that [method@Piq.Quantizer.quantize] uses
 * as given: the observer's running [min, max], widened to include 0, spans
 * the format's integer range, in binary32 with PyTorch's eps (2⁻²³) as the
 * smallest scale — PyTorch's `per_tensor_affine` and `per_tensor_symmetric`
 * rules, and [method@Piq.Quantizer.compute_params]' min/max and abs-max
 * rules. A histogram observer first searches the range that minimizes the
 * L2 quantization error on its histogram (PyTorch's `HistogramObserver`),
 * and applies the same rule to that range; a percentile observer takes the
 * range of [property@Piq.Observer:percentile]. An MSE observer takes, of
 * the clips t · max|x| (t = 1/100 … 1), the one whose scale gives the least
 * squared error of its histogram on @format's own grid; an entropy observer
 * takes TensorRT's threshold of least KL divergence. See
 * [Observers](observers.html) for the exact rules.
 *
 * Fails with %PIQ_ERROR_EMPTY before the first batch, and with
 * %PIQ_ERROR_UNSUPPORTED for a per-channel observer or format, or a format
 * that is not an integer one (for an MSE observer: a format without a
 * per-tensor scale), or an entropy search with no more bins than the
 * format's levels.
 *
 * Returns: (transfer full) (nullable): a recipe with the scale (and zero
 *   point), or %NULL on error
 *
 * Since: 1.0
 */
PiqRecipe *
piq_observer_compute_recipe (PiqObserver  *self,
                             PiqFormat    *format,
                             GError      **error)
{
  const PiqDtypeInfo *info;
  gboolean symmetric;
  double scale;
  gint64 zp;

  g_return_val_if_fail (PIQ_IS_OBSERVER (self), NULL);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  info = check_target (self, format, PIQ_GRANULARITY_TENSOR, error);
  if (info == NULL)
    return NULL;
  symmetric = piq_format_get_symmetric (format);
  if (self->kind == PIQ_OBSERVER_KIND_HISTOGRAM)
    {
      float lo, hi;
      hist_search (self, 0, ldexp (1.0, (int) info->bits), &lo, &hi);
      if (!channel_params (info, symmetric, lo, hi, &scale, &zp, error))
        return NULL;
    }
  else if (self->kind == PIQ_OBSERVER_KIND_PERCENTILE)
    {
      float lo, hi;
      percentile_range (self, 0, &lo, &hi);
      if (!channel_params (info, symmetric, lo, hi, &scale, &zp, error))
        return NULL;
    }
  else if (HAS_MAGNITUDES (self))
    {
      g_autoptr(PiqFormat) grid = grid_format (format);
      g_autofree double *t = NULL;
      if (self->kind == PIQ_OBSERVER_KIND_ENTROPY &&
          (t = entropy_thresholds (self, info, symmetric, error)) == NULL)
        return NULL;
      if (!search_params (self, 0, grid, info, symmetric, t, &scale, &zp, error))
        return NULL;
    }
  else if (!channel_params (info, symmetric, self->min[0], self->max[0], &scale, &zp, error))
    return NULL;
  return params_recipe (info, symmetric, scale, zp);
}

/**
 * piq_observer_compute_channel_params:
 * @self: a per-channel observer
 * @format: a per-channel integer format of the observer's axis (for an MSE
 *   observer, also a code format such as FP8 or NF4)
 * @scales: (out) (transfer full) (optional): the scale of each channel,
 *   [method@Piq.Observer.get_n_channels] doubles in host byte order, each
 *   a binary32 value
 * @zero_points: (out) (transfer full) (optional): the zero point of each
 *   channel, as many `gint64` in host byte order (for a symmetric format,
 *   the format's own: 0 for signed types, the middle of the range for
 *   unsigned ones)
 * @error: return location for a #GError
 *
 * The per-channel scales and zero points of @format for the data observed,
 * by the rule of [method@Piq.Observer.compute_recipe] applied to each
 * channel (PyTorch's `per_channel_affine` and `per_channel_symmetric`; the
 * MSE and entropy searches run on each channel's own histograms; code
 * formats have zero point 0).
 * To quantize with them, convert the scales to the format's
 * [property@Piq.Format:scale-dtype] and the zero points to `gint32` for
 * [ctor@Piq.Tensor.new_quantized_from_bytes].
 *
 * Returns: %TRUE on success
 *
 * Since: 1.0
 */
gboolean
piq_observer_compute_channel_params (PiqObserver  *self,
                                     PiqFormat    *format,
                                     GBytes      **scales,
                                     GBytes      **zero_points,
                                     GError      **error)
{
  const PiqDtypeInfo *info;
  gboolean symmetric;
  g_autofree double *s = NULL;
  g_autofree gint64 *z = NULL;

  g_return_val_if_fail (PIQ_IS_OBSERVER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  info = check_target (self, format, PIQ_GRANULARITY_CHANNEL, error);
  if (info == NULL)
    return FALSE;
  symmetric = piq_format_get_symmetric (format);
  s = g_new (double, self->n_channels);
  z = g_new (gint64, self->n_channels);
  if (HAS_MAGNITUDES (self))
    {
      g_autoptr(PiqFormat) grid = grid_format (format);
      g_autofree double *t = NULL;
      if (self->kind == PIQ_OBSERVER_KIND_ENTROPY &&
          (t = entropy_thresholds (self, info, symmetric, error)) == NULL)
        return FALSE;
      for (guint64 c = 0; c < self->n_channels; c++)
        if (!search_params (self, c, grid, info, symmetric, t, &s[c], &z[c], error))
          return FALSE;
    }
  else
    for (guint64 c = 0; c < self->n_channels; c++)
      {
        /* the histogram rules search each channel's own histogram */
        float lo = (float) self->min[c], hi = (float) self->max[c];
        if (self->kind == PIQ_OBSERVER_KIND_HISTOGRAM)
          hist_search (self, c, ldexp (1.0, (int) info->bits), &lo, &hi);
        else if (self->kind == PIQ_OBSERVER_KIND_PERCENTILE)
          percentile_range (self, c, &lo, &hi);
        if (!channel_params (info, symmetric, lo, hi, &s[c], &z[c], error))
          return FALSE;
      }
  if (scales != NULL)
    *scales = g_bytes_new_take (g_steal_pointer (&s), self->n_channels * sizeof (double));
  if (zero_points != NULL)
    *zero_points = g_bytes_new_take (g_steal_pointer (&z), self->n_channels * sizeof (gint64));
  return TRUE;
}

/* ---------------------------------------------------------------------------
 * State */

static const char *
enum_nick (GType type,
           int   value)
{
  g_autoptr(GEnumClass) klass = g_type_class_ref (type);
  GEnumValue *v = g_enum_get_value (klass, value);

  return v != NULL ? v->value_nick : "invalid";
}

/**
 * piq_observer_serialize:
 * @self: an observer
 *
 * The observer's configuration and statistics as a #GVariant of type
 * `(a{sv})`, which [ctor@Piq.Observer.new_deserialize] turns back into an
 * observer in the same state. The keys are listed in
 * [Observers](observers.html#state). Like every #GVariant, the value is in
 * host byte order: g_variant_byteswap() converts it for a machine of the
 * other order.
 *
 * Returns: (transfer full): the state, a floating-free new reference
 *
 * Since: 1.0
 */
GVariant *
piq_observer_serialize (PiqObserver *self)
{
  GVariantBuilder b;

  g_return_val_if_fail (PIQ_IS_OBSERVER (self), NULL);

  g_variant_builder_init (&b, G_VARIANT_TYPE ("a{sv}"));
  g_variant_builder_add (&b, "{sv}", "version", g_variant_new_uint32 (STATE_VERSION));
  g_variant_builder_add (&b, "{sv}", "kind",
                         g_variant_new_string (enum_nick (PIQ_TYPE_OBSERVER_KIND, self->kind)));
  g_variant_builder_add (&b, "{sv}", "granularity",
                         g_variant_new_string (enum_nick (PIQ_TYPE_GRANULARITY, self->granularity)));
  g_variant_builder_add (&b, "{sv}", "axis", g_variant_new_int32 (self->axis));
  g_variant_builder_add (&b, "{sv}", "averaging-constant",
                         g_variant_new_double (self->averaging_constant));
  g_variant_builder_add (&b, "{sv}", "n-bins", g_variant_new_uint32 (self->n_bins));
  g_variant_builder_add (&b, "{sv}", "upsample-rate", g_variant_new_uint32 (self->upsample_rate));
  g_variant_builder_add (&b, "{sv}", "percentile", g_variant_new_double (self->percentile));
  g_variant_builder_add (&b, "{sv}", "n-batches", g_variant_new_uint64 (self->n_batches));
  g_variant_builder_add (&b, "{sv}", "min",
                         g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, self->min,
                                                    self->n_channels, sizeof (double)));
  g_variant_builder_add (&b, "{sv}", "max",
                         g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, self->max,
                                                    self->n_channels, sizeof (double)));
  if (self->mag != NULL)
    g_variant_builder_add (&b, "{sv}", "histogram",
                           g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, self->mag,
                                                      self->n_channels * 2 * self->n_bins,
                                                      sizeof (double)));
  else
    {
      gsize n = self->hist != NULL ? self->n_channels * self->n_bins : 0;
      g_autofree double *h = g_new (double, MAX (n, 1));
      for (gsize i = 0; i < n; i++)
        h[i] = self->hist[i];
      g_variant_builder_add (&b, "{sv}", "histogram",
                             g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, h, n,
                                                        sizeof (double)));
    }
  return g_variant_ref_sink (g_variant_new ("(a{sv})", &b));
}

static GVariant *
lookup (GVariantDict  *dict,
        const char    *key,
        const char    *type,
        GError       **error)
{
  GVariant *v = g_variant_dict_lookup_value (dict, key, G_VARIANT_TYPE (type));

  if (v == NULL)
    g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state has no '%s' of "
                 "type %s", key, type);
  return v;
}

static gboolean
lookup_enum (GVariantDict  *dict,
             const char    *key,
             GType          type,
             int           *value,
             GError       **error)
{
  g_autoptr(GVariant) v = lookup (dict, key, "s", error);
  g_autoptr(GEnumClass) klass = NULL;
  GEnumValue *ev;

  if (v == NULL)
    return FALSE;
  klass = g_type_class_ref (type);
  ev = g_enum_get_value_by_nick (klass, g_variant_get_string (v, NULL));
  if (ev == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state's %s '%s' is "
                   "not one of %s", key, g_variant_get_string (v, NULL), g_type_name (type));
      return FALSE;
    }
  *value = ev->value;
  return TRUE;
}

static gboolean
binary32 (double d)
{
  return isfinite (d) && (double) (float) d == d;
}

/**
 * piq_observer_new_deserialize:
 * @state: a state made by [method@Piq.Observer.serialize]
 * @error: return location for a #GError
 *
 * An observer in the state that @state describes: the same configuration
 * and statistics, so calibration goes on where it stopped. A value of
 * another type, a missing or mistyped key, an unknown version, kind or
 * granularity, or statistics that no observer can have (arrays of different
 * lengths, values that are not finite binary32 numbers, a minimum above its
 * maximum, histogram counts that no data of the range gives) fail with
 * %PIQ_ERROR_INVALID_VALUE. Unknown keys are ignored.
 *
 * Returns: (transfer full) (nullable): a new observer, or %NULL on error
 *
 * Since: 1.0
 */
PiqObserver *
piq_observer_new_deserialize (GVariant  *state,
                              GError   **error)
{
  g_autoptr(GVariant) dict_v = NULL, version = NULL, axis = NULL, constant = NULL;
  g_autoptr(GVariant) n_batches = NULL, min_v = NULL, max_v = NULL;
  g_autoptr(GVariant) n_bins = NULL, upsample = NULL, hist_v = NULL, pct = NULL;
  const double *hist;
  gsize n_hist;
  g_autoptr(GVariantDict) dict = NULL;
  g_autoptr(PiqObserver) self = NULL;
  g_autoptr(GError) local = NULL;
  int kind, granularity;
  const double *lo, *hi;
  gsize n_lo, n_hi;

  g_return_val_if_fail (state != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!g_variant_is_of_type (state, G_VARIANT_TYPE (STATE_TYPE)))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "an observer state has type %s, "
                   "this value %s", STATE_TYPE, g_variant_get_type_string (state));
      return NULL;
    }
  dict_v = g_variant_get_child_value (state, 0);
  dict = g_variant_dict_new (dict_v);
  if ((version = lookup (dict, "version", "u", error)) == NULL)
    return NULL;
  if (g_variant_get_uint32 (version) != STATE_VERSION)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "observer state version %u is not "
                   "%u", g_variant_get_uint32 (version), STATE_VERSION);
      return NULL;
    }
  if (!lookup_enum (dict, "kind", PIQ_TYPE_OBSERVER_KIND, &kind, error) ||
      !lookup_enum (dict, "granularity", PIQ_TYPE_GRANULARITY, &granularity, error) ||
      (axis = lookup (dict, "axis", "i", error)) == NULL ||
      (constant = lookup (dict, "averaging-constant", "d", error)) == NULL ||
      (n_batches = lookup (dict, "n-batches", "t", error)) == NULL ||
      (n_bins = lookup (dict, "n-bins", "u", error)) == NULL ||
      (upsample = lookup (dict, "upsample-rate", "u", error)) == NULL ||
      (pct = lookup (dict, "percentile", "d", error)) == NULL ||
      (hist_v = lookup (dict, "histogram", "ad", error)) == NULL ||
      (min_v = lookup (dict, "min", "ad", error)) == NULL ||
      (max_v = lookup (dict, "max", "ad", error)) == NULL)
    return NULL;
  if (g_variant_get_int32 (axis) < -PIQ_ENGINE_MAX_DIMS ||
      g_variant_get_int32 (axis) >= PIQ_ENGINE_MAX_DIMS ||
      !(g_variant_get_double (constant) >= 0.0 && g_variant_get_double (constant) <= 1.0) ||
      g_variant_get_uint32 (n_bins) < 1 || g_variant_get_uint32 (n_bins) > MAX_BINS ||
      g_variant_get_uint32 (upsample) < 1 || g_variant_get_uint32 (upsample) > MAX_UPSAMPLE ||
      !(g_variant_get_double (pct) >= 50.0 && g_variant_get_double (pct) <= 100.0))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state's axis %d, "
                   "averaging constant %g, bins %u, upsample rate %u or percentile %g is out of "
                   "range",
                   g_variant_get_int32 (axis), g_variant_get_double (constant),
                   g_variant_get_uint32 (n_bins), g_variant_get_uint32 (upsample),
                   g_variant_get_double (pct));
      return NULL;
    }
  self = g_object_new (PIQ_TYPE_OBSERVER, "kind", kind, "granularity", granularity,
                       "axis", g_variant_get_int32 (axis),
                       "averaging-constant", g_variant_get_double (constant),
                       "n-bins", g_variant_get_uint32 (n_bins),
                       "upsample-rate", g_variant_get_uint32 (upsample),
                       "percentile", g_variant_get_double (pct), NULL);
  if (!check_config (self, &local))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state's "
                   "configuration: %s", local->message);
      return NULL;
    }
  lo = g_variant_get_fixed_array (min_v, &n_lo, sizeof (double));
  hi = g_variant_get_fixed_array (max_v, &n_hi, sizeof (double));
  if (n_lo != n_hi || (granularity == PIQ_GRANULARITY_TENSOR && n_lo > 1) ||
      (n_lo == 0) != (g_variant_get_uint64 (n_batches) == 0))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state has %"
                   G_GSIZE_FORMAT " minima, %" G_GSIZE_FORMAT " maxima and %" G_GUINT64_FORMAT
                   " batches", n_lo, n_hi, g_variant_get_uint64 (n_batches));
      return NULL;
    }
  for (gsize c = 0; c < n_lo; c++)
    if (!binary32 (lo[c]) || !binary32 (hi[c]) || !(lo[c] <= hi[c]))
      {
        g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state's channel %"
                     G_GSIZE_FORMAT " has the range [%g, %g]", c, lo[c], hi[c]);
        return NULL;
      }
  hist = g_variant_get_fixed_array (hist_v, &n_hist, sizeof (double));
  if (HAS_MAGNITUDES (self))
    {
      /* two histograms of n-bins exact counts per channel, consistent with the
       * channel's range (see mag_consistent) */
      gsize per = 2 * (gsize) self->n_bins;
      if (n_lo > G_MAXSIZE / per / sizeof (double) || n_hist != n_lo * per)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state has %"
                       G_GSIZE_FORMAT " histogram counts for %" G_GSIZE_FORMAT " channels of "
                       "2 × %u bins", n_hist, n_lo, self->n_bins);
          return NULL;
        }
      for (gsize c = 0; c < n_lo; c++)
        if (!mag_consistent (hist + c * per, self->n_bins, lo[c] + 0.0, hi[c] + 0.0))
          {
            g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state's "
                         "histograms of channel %" G_GSIZE_FORMAT " are not counts of data "
                         "in [%g, %g]", c, lo[c], hi[c]);
            return NULL;
          }
      if (n_hist > 0)
        self->mag = g_memdup2 (hist, n_hist * sizeof (double));
    }
  else
    {
      /* n-bins counts per channel */
      gsize per = HAS_HISTOGRAM (self) ? self->n_bins : 0;
      if (n_lo > G_MAXSIZE / MAX (per, 1) / sizeof (double) || n_hist != n_lo * per)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state has %"
                       G_GSIZE_FORMAT " histogram counts for %" G_GSIZE_FORMAT " channels of "
                       "%" G_GSIZE_FORMAT " bins", n_hist, n_lo, per);
          return NULL;
        }
      /* Re-binning (torch's _combine_histograms) takes differences of a rounded
       * cumulative sum, so a bin may hold a tiny negative value, as torch's do:
       * at most half an ulp of the channel's total, far below 2⁻²² of it. */
      for (gsize c = 0; c < n_lo && per > 0; c++)
        {
          const double *ch = hist + c * per;
          double total = 0.0;
          for (gsize i = 0; i < per; i++)
            total += fabs (ch[i]);
          for (gsize i = 0; i < per; i++)
            if (!binary32 (ch[i]) || !(ch[i] >= -ldexp (total, -22)))
              {
                g_set_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE, "the observer state's "
                             "histogram bin %" G_GSIZE_FORMAT " of channel %" G_GSIZE_FORMAT
                             " holds %g", i, c, ch[i]);
                return NULL;
              }
        }
      if (n_hist > 0)
        {
          self->hist = g_try_new (float, n_hist);
          if (self->hist == NULL)
            {
              g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "%" G_GSIZE_FORMAT
                           " histogram counts do not fit in memory", n_hist);
              return NULL;
            }
          for (gsize i = 0; i < n_hist; i++)
            self->hist[i] = (float) hist[i] + 0.0f;
        }
    }
  if (n_lo > 0)
    {
      /* +0 for −0, as the reductions report */
      self->min = g_new (double, n_lo);
      self->max = g_new (double, n_lo);
      for (gsize c = 0; c < n_lo; c++)
        {
          self->min[c] = lo[c] + 0.0;
          self->max[c] = hi[c] + 0.0;
        }
    }
  self->n_channels = n_lo;
  self->n_batches = g_variant_get_uint64 (n_batches);
  return g_steal_pointer (&self);
}

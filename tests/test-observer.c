/* test-observer.c: PiqObserver against an oracle written from PyTorch's definitions
 *
 * The oracle re-derives torch.ao.quantization's observer rules (MinMaxObserver,
 * MovingAverageMinMaxObserver and their per-channel forms, _calculate_qparams) in
 * plain binary32/binary64 arithmetic from the published code's semantics: the batch
 * converted to float32, aminmax per channel, `min + c * (cur - min)` in float32,
 * min_neg = min(min, 0), max_pos = max(max, 0), scale = (max_pos - min_neg) /
 * float(qmax - qmin) or max(-min_neg, max_pos) / (float(qmax - qmin) / 2), clamped
 * below by float32's eps, zero_point = qmin - round(min_neg / scale) clamped, 0 or 128
 * for symmetric qint8/quint8.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "test-oracle.h"

static const PiqDtype float_dtypes[] = {
  PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16, PIQ_DTYPE_F16,
};

/* ---- data ---- */

typedef struct {
  PiqDtype  dtype;
  guint     n_dims;
  guint64   shape[4];
  gsize     pad;        /* extra bytes per row (strided when > 0), filled with NaN */
} Layout;

typedef struct {
  PiqTensor *tensor;
  double    *values;    /* packed, as stored (rounded to the dtype) */
  guint64    n;
} Batch;

static void
batch_clear (Batch *b)
{
  g_clear_object (&b->tensor);
  g_clear_pointer (&b->values, g_free);
}

/* Gaussian data whose channels along every axis differ in offset and spread, so a
 * wrong channel mapping shows. */
static Batch
make_batch (const Layout *l,
            guint64       seed)
{
  Batch b = { 0 };
  ORng rng;
  guint64 cols = l->shape[l->n_dims - 1], rows;
  gsize esize = o_dtype_bits (l->dtype) / 8, stride = cols * esize + l->pad;
  g_autofree guint8 *buf = NULL;
  g_autoptr(GError) error = NULL;

  b.n = 1;
  for (guint d = 0; d < l->n_dims; d++)
    b.n *= l->shape[d];
  rows = b.n / cols;
  buf = g_malloc0 (MAX (rows * stride, 1));
  b.values = g_new (double, b.n);
  o_rng_init (&rng, seed);
  for (guint64 i = 0; i < b.n; i++)
    {
      guint64 r = i / cols, c = i % cols;
      double x = o_rng_normal (&rng) * (1.0 + (double) (r % 7)) + 0.37 * (double) (c % 11)
                 - 0.5 * (double) (r % 5);
      o_write_float (l->dtype, buf + r * stride, c, x);
      b.values[i] = o_read_float (l->dtype, buf + r * stride, c);
    }
  if (l->pad > 0)
    for (guint64 r = 0; r < rows; r++)
      for (gsize p = 0; p + esize <= l->pad; p += esize)
        o_write_float (l->dtype, buf + r * stride + cols * esize + p, 0, NAN);
  if (l->pad > 0)
    {
      g_autoptr(GBytes) bytes = g_bytes_new (buf, rows * stride);
      b.tensor = piq_tensor_new_strided (l->dtype, l->shape, l->n_dims, bytes, 0, stride, &error);
    }
  else
    {
      b.tensor = piq_tensor_new_shaped (l->dtype, l->shape, l->n_dims, &error);
      g_assert_no_error (error);
      g_assert_true (piq_tensor_set_data (b.tensor, buf, b.n * esize, &error));
    }
  g_assert_no_error (error);
  g_assert_nonnull (b.tensor);
  return b;
}

/* ---- the oracle ---- */

typedef struct {
  gboolean  channel;
  int       axis;
  gboolean  moving;
  float     c;
  guint64   n_ch;      /* 0: nothing seen */
  float    *min, *max;
} OObs;

static guint64
o_channel_of (const Layout *l, int axis, guint64 i)
{
  guint64 inner = 1;
  int a = axis < 0 ? axis + (int) l->n_dims : axis;

  for (guint d = (guint) a + 1; d < l->n_dims; d++)
    inner *= l->shape[d];
  return (i / inner) % l->shape[a];
}

static void
o_observe (OObs *o, const Layout *l, const Batch *b)
{
  guint64 n_ch = o->channel ? l->shape[o->axis < 0 ? o->axis + (int) l->n_dims : o->axis] : 1;
  g_autofree float *lo = g_new (float, n_ch), *hi = g_new (float, n_ch);

  for (guint64 c = 0; c < n_ch; c++)
    lo[c] = INFINITY, hi[c] = -INFINITY;
  for (guint64 i = 0; i < b->n; i++)
    {
      guint64 c = o->channel ? o_channel_of (l, o->axis, i) : 0;
      float x = (float) b->values[i];    /* torch: x.to(float32) */
      lo[c] = fminf (lo[c], x);
      hi[c] = fmaxf (hi[c], x);
    }
  if (o->n_ch == 0)
    {
      o->n_ch = n_ch;
      o->min = g_steal_pointer (&lo);
      o->max = g_steal_pointer (&hi);
      return;
    }
  g_assert_cmpuint (o->n_ch, ==, n_ch);
  for (guint64 c = 0; c < n_ch; c++)
    if (o->moving)
      {
        o->min[c] = o->min[c] + o->c * (lo[c] - o->min[c]);
        o->max[c] = o->max[c] + o->c * (hi[c] - o->max[c]);
      }
    else
      {
        o->min[c] = fminf (o->min[c], lo[c]);
        o->max[c] = fmaxf (o->max[c], hi[c]);
      }
}

static void
o_obs_clear (OObs *o)
{
  g_clear_pointer (&o->min, g_free);
  g_clear_pointer (&o->max, g_free);
  o->n_ch = 0;
}

/* torch's _calculate_qparams for one channel, qint8/quint8 default ranges. */
static void
o_qparams (float lo, float hi, PiqDtype dtype, gboolean symmetric, double *scale, gint64 *zp)
{
  gint64 qmin = dtype == PIQ_DTYPE_INT8 ? -128 : 0, qmax = dtype == PIQ_DTYPE_INT8 ? 127 : 255;
  float min_neg = fminf (lo, 0.0f), max_pos = fmaxf (hi, 0.0f), s;

  if (symmetric)
    {
      max_pos = fmaxf (-min_neg, max_pos);
      s = max_pos / (float) ((double) (qmax - qmin) / 2);
      s = fmaxf (s, FLT_EPSILON);
      *zp = dtype == PIQ_DTYPE_UINT8 ? 128 : 0;
    }
  else
    {
      s = (max_pos - min_neg) / (float) (qmax - qmin);
      s = fmaxf (s, FLT_EPSILON);
      *zp = qmin - (gint64) nearbyintf (min_neg / s);
      *zp = CLAMP (*zp, qmin, qmax);
    }
  *scale = s;
}

/* ---- comparing ---- */

static void
assert_state (PiqObserver *obs, const OObs *o)
{
  g_autoptr(GBytes) lo = piq_observer_get_min (obs), hi = piq_observer_get_max (obs);
  gsize n_lo, n_hi;
  const double *plo = g_bytes_get_data (lo, &n_lo), *phi = g_bytes_get_data (hi, &n_hi);

  g_assert_cmpuint (piq_observer_get_n_channels (obs), ==, o->n_ch);
  g_assert_cmpuint (n_lo, ==, o->n_ch * sizeof (double));
  g_assert_cmpuint (n_hi, ==, o->n_ch * sizeof (double));
  for (guint64 c = 0; c < o->n_ch; c++)
    {
      /* bit-exact, and +0 for a zero */
      g_assert_cmphex (o_f64_bits (plo[c]), ==, o_f64_bits ((double) o->min[c] + 0.0));
      g_assert_cmphex (o_f64_bits (phi[c]), ==, o_f64_bits ((double) o->max[c] + 0.0));
    }
}

static void
assert_params (PiqObserver *obs, const OObs *o, PiqDtype dtype, gboolean symmetric)
{
  g_autoptr(GError) error = NULL;

  if (!o->channel)
    {
      g_autoptr(PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "symmetric",
                                             symmetric, NULL);
      g_autoptr(PiqRecipe) r = piq_observer_compute_recipe (obs, f, &error);
      double scale;
      gint64 zp;

      g_assert_no_error (error);
      o_qparams (o->min[0], o->max[0], dtype, symmetric, &scale, &zp);
      g_assert_true (piq_recipe_has_scale (r));
      g_assert_cmphex (o_f64_bits (piq_recipe_get_scale (r)), ==, o_f64_bits (scale));
      g_assert_cmpint (piq_recipe_has_zero_point (r), ==, !symmetric);
      if (!symmetric)
        g_assert_cmpint (piq_recipe_get_zero_point (r), ==, zp);
    }
  else
    {
      g_autoptr(PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "symmetric",
                                             symmetric, "granularity", PIQ_GRANULARITY_CHANNEL,
                                             "axis", o->axis, NULL);
      g_autoptr(GBytes) scales = NULL, zps = NULL;
      const double *s;
      const gint64 *z;
      gsize ns, nz;

      g_assert_true (piq_observer_compute_channel_params (obs, f, &scales, &zps, &error));
      g_assert_no_error (error);
      s = g_bytes_get_data (scales, &ns);
      z = g_bytes_get_data (zps, &nz);
      g_assert_cmpuint (ns, ==, o->n_ch * sizeof (double));
      g_assert_cmpuint (nz, ==, o->n_ch * sizeof (gint64));
      for (guint64 c = 0; c < o->n_ch; c++)
        {
          double scale;
          gint64 zp;
          o_qparams (o->min[c], o->max[c], dtype, symmetric, &scale, &zp);
          g_assert_cmphex (o_f64_bits (s[c]), ==, o_f64_bits (scale));
          g_assert_cmpint (z[c], ==, zp);
        }
    }
}

static void
assert_same_state (PiqObserver *a, PiqObserver *b)
{
  g_autoptr(GVariant) va = piq_observer_serialize (a), vb = piq_observer_serialize (b);

  if (!g_variant_equal (va, vb))
    {
      g_autofree char *sa = g_variant_print (va, TRUE), *sb = g_variant_print (vb, TRUE);
      g_error ("states differ:\n%s\n%s", sa, sb);
    }
}

static PiqTensor *values_tensor (PiqDtype dtype, const double *v, gsize n, guint n_dims,
                                 const guint64 *shape);

/* ---- cases ---- */

typedef struct {
  char     *name;
  Layout    layout;
  gboolean  channel;
  int       axis;
  gboolean  moving;
} Case;

static PiqObserver *
case_observer (const Case *k)
{
  return g_object_new (PIQ_TYPE_OBSERVER,
                       "kind", k->moving ? PIQ_OBSERVER_KIND_MOVING_AVERAGE
                                         : PIQ_OBSERVER_KIND_MIN_MAX,
                       "granularity", k->channel ? PIQ_GRANULARITY_CHANNEL : PIQ_GRANULARITY_TENSOR,
                       "axis", k->axis, "averaging-constant", k->moving ? 0.125 + 0.01 : 0.01,
                       NULL);
}

#define N_BATCHES 4

/* Observing N_BATCHES batches gives the oracle's running statistics after each,
 * and its torch parameters for int8/uint8, affine and symmetric. */
static void
test_observe (gconstpointer data)
{
  const Case *k = data;
  g_autoptr(PiqObserver) obs = case_observer (k);
  OObs o = { .channel = k->channel, .axis = k->axis, .moving = k->moving,
             .c = (float) (0.125 + 0.01) };
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < N_BATCHES; i++)
    {
      Batch b = make_batch (&k->layout, 1000 + i);
      g_assert_true (piq_observer_observe (obs, b.tensor, &error));
      g_assert_no_error (error);
      o_observe (&o, &k->layout, &b);
      assert_state (obs, &o);
      batch_clear (&b);
    }
  g_assert_cmpuint (piq_observer_get_n_batches (obs), ==, N_BATCHES);
  assert_params (obs, &o, PIQ_DTYPE_INT8, FALSE);
  assert_params (obs, &o, PIQ_DTYPE_UINT8, FALSE);
  assert_params (obs, &o, PIQ_DTYPE_INT8, TRUE);
  assert_params (obs, &o, PIQ_DTYPE_UINT8, TRUE);
  o_obs_clear (&o);
}

/* Two observers over disjoint batches, merged, are one observer over all of them
 * (min/max); a moving average merges the other's state as one more batch. */
static void
test_merge (gconstpointer data)
{
  const Case *k = data;
  g_autoptr(PiqObserver) all = case_observer (k), a = case_observer (k), b = case_observer (k);
  g_autoptr(PiqObserver) empty = case_observer (k);
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < N_BATCHES; i++)
    {
      Batch x = make_batch (&k->layout, 2000 + i);
      g_assert_true (piq_observer_observe (all, x.tensor, &error));
      g_assert_true (piq_observer_observe (i % 2 ? b : a, x.tensor, &error));
      g_assert_no_error (error);
      batch_clear (&x);
    }
  if (!k->moving)
    {
      g_assert_true (piq_observer_merge (a, b, &error));
      g_assert_no_error (error);
      assert_same_state (a, all);
    }
  else
    {
      /* the reference: a's batches, then one batch that holds exactly b's running
       * min and max in each channel: a batch of the case's rank, 1 along every axis
       * but the channel axis (n_ch) and one other (2: the min, then the max) */
      g_autoptr(PiqObserver) ref = case_observer (k);
      g_autoptr(GBytes) blo = piq_observer_get_min (b), bhi = piq_observer_get_max (b);
      const double *lo = g_bytes_get_data (blo, NULL), *hi = g_bytes_get_data (bhi, NULL);
      guint64 n_ch = piq_observer_get_n_channels (b);
      g_autofree double *vals = g_new (double, 2 * n_ch);
      g_autoptr(PiqTensor) t = NULL;

      for (guint i = 0; i < N_BATCHES; i += 2)
        {
          Batch x = make_batch (&k->layout, 2000 + i);
          g_assert_true (piq_observer_observe (ref, x.tensor, &error));
          batch_clear (&x);
        }
      if (!k->channel)
        {
          vals[0] = lo[0], vals[1] = hi[0];
          t = values_tensor (PIQ_DTYPE_F32, vals, 2, 0, NULL);
        }
      else
        {
          guint nd = k->layout.n_dims;
          int ax = k->axis < 0 ? k->axis + (int) nd : k->axis, other = ax == 0 ? 1 : 0;
          guint64 shape[4] = { 1, 1, 1, 1 }, stride_a = 1, stride_o = 1;
          shape[ax] = n_ch;
          shape[other] = 2;
          for (guint d = (guint) ax + 1; d < nd; d++)
            stride_a *= shape[d];
          for (guint d = (guint) other + 1; d < nd; d++)
            stride_o *= shape[d];
          for (guint64 c = 0; c < n_ch; c++)
            {
              vals[c * stride_a] = lo[c];
              vals[c * stride_a + stride_o] = hi[c];
            }
          t = values_tensor (PIQ_DTYPE_F32, vals, 2 * n_ch, nd, shape);
        }
      g_assert_true (piq_observer_observe (ref, t, &error));
      g_assert_no_error (error);
      g_assert_true (piq_observer_merge (a, b, &error));
      g_assert_no_error (error);
      /* the same statistics; the batch count adds up (ref saw one batch fewer) */
      g_assert_cmpuint (piq_observer_get_n_batches (a), ==, N_BATCHES);
      g_assert_cmpuint (piq_observer_get_n_batches (ref), ==, N_BATCHES / 2 + 1);
      {
        g_autoptr(GBytes) alo = piq_observer_get_min (a), rlo = piq_observer_get_min (ref);
        g_autoptr(GBytes) ahi = piq_observer_get_max (a), rhi = piq_observer_get_max (ref);
        g_assert_true (g_bytes_equal (alo, rlo));
        g_assert_true (g_bytes_equal (ahi, rhi));
      }
    }
  /* merging an empty observer changes nothing; an empty one takes the other's state */
  {
    g_autoptr(GVariant) before = piq_observer_serialize (a);
    g_autoptr(GVariant) after = NULL;
    g_assert_true (piq_observer_merge (a, empty, &error));
    after = piq_observer_serialize (a);
    g_assert_true (g_variant_equal (before, after));
    g_assert_true (piq_observer_merge (empty, a, &error));
    assert_same_state (empty, a);
  }
  g_assert_no_error (error);
}

/* serialize → deserialize (through bytes) → the same state; observing more after
 * resuming is the same as never stopping. */
static void
test_serialize (gconstpointer data)
{
  const Case *k = data;
  g_autoptr(PiqObserver) run = case_observer (k), first = case_observer (k);
  g_autoptr(PiqObserver) resumed = NULL, fresh = NULL;
  g_autoptr(GVariant) state = NULL, loaded = NULL, fresh_state = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;

  /* a new observer's state round-trips too */
  fresh_state = piq_observer_serialize (first);
  fresh = piq_observer_new_deserialize (fresh_state, &error);
  g_assert_no_error (error);
  assert_same_state (fresh, first);

  for (guint i = 0; i < N_BATCHES; i++)
    {
      Batch x = make_batch (&k->layout, 3000 + i);
      g_assert_true (piq_observer_observe (run, x.tensor, &error));
      if (i < 2)
        g_assert_true (piq_observer_observe (first, x.tensor, &error));
      if (i == 2)
        {
          state = piq_observer_serialize (first);
          bytes = g_variant_get_data_as_bytes (state);
          loaded = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE ("(a{sv})"),
                                                                 bytes, FALSE));
          resumed = piq_observer_new_deserialize (loaded, &error);
          g_assert_no_error (error);
          assert_same_state (resumed, first);
          g_assert_cmpint (piq_observer_get_kind (resumed), ==, piq_observer_get_kind (first));
          g_assert_cmpint (piq_observer_get_axis (resumed), ==, k->axis);
          g_assert_cmpfloat (piq_observer_get_averaging_constant (resumed), ==,
                             piq_observer_get_averaging_constant (first));
        }
      if (i >= 2)
        g_assert_true (piq_observer_observe (resumed, x.tensor, &error));
      g_assert_no_error (error);
      batch_clear (&x);
    }
  assert_same_state (resumed, run);
  piq_observer_reset (run);
  g_assert_cmpuint (piq_observer_get_n_batches (run), ==, 0);
  assert_same_state (run, fresh);
}

/* A histogram re-binned over a growing range can hold tiny negative bins (torch's
 * _combine_histograms takes differences of a rounded cumulative sum); its state
 * must still load. Found by bindings/python/calibrate.py: N(0, 1) batches with a
 * rare spike 20x larger, so every batch moves the range. */
static void
test_histogram_negative_bin (void)
{
  g_autoptr(PiqObserver) obs = piq_observer_new (PIQ_OBSERVER_KIND_HISTOGRAM), back = NULL;
  g_autoptr(GVariant) state = NULL;
  g_autoptr(GBytes) hist = NULL;
  g_autoptr(GError) error = NULL;
  guint64 z = 7;
  gboolean negative = FALSE;
  gsize n_bins;

  for (guint b = 0; b < 32; b++)
    {
      double v[4096];
      for (guint i = 0; i < G_N_ELEMENTS (v); i += 2)
        {
          double u[2];
          for (int k = 0; k < 2; k++)
            {
              z = z * 6364136223846793005u + 1442695040888963407u;
              u[k] = ((z >> 11) + 0.5) / 9007199254740992.0;
            }
          v[i] = sqrt (-2 * log (u[0])) * cos (2 * G_PI * u[1]);
          v[i + 1] = sqrt (-2 * log (u[0])) * sin (2 * G_PI * u[1]);
          if (u[1] < 0.002)
            v[i] *= 20;
        }
      g_autoptr(PiqTensor) t = values_tensor (PIQ_DTYPE_F32, v, G_N_ELEMENTS (v), 1,
                                              (guint64[]) { G_N_ELEMENTS (v) });
      g_assert_true (piq_observer_observe (obs, t, &error));
      g_assert_no_error (error);
    }
  hist = piq_observer_get_histogram (obs);
  const double *h = g_bytes_get_data (hist, &n_bins);     /* binary32 values as doubles */
  for (gsize i = 0; i < n_bins / sizeof (double); i++)
    negative = negative || h[i] < 0;
  g_assert_true (negative);     /* else this data no longer tests the case */
  state = piq_observer_serialize (obs);
  back = piq_observer_new_deserialize (state, &error);
  g_assert_no_error (error);
  assert_same_state (back, obs);
}

/* Histograms over different ranges merge by the documented rule: every source
 * bin's count spread uniformly over its interval onto the union range. The
 * oracle below spreads bin against bin, written from docs/observers.md; the
 * merged observer's scale stays close to that of one observer fed all batches. */
static double
overlap_of (double a0, double a1, double b0, double b1)
{
  return MAX (0.0, MIN (a1, b1) - MAX (a0, b0));
}

static void
oracle_spread (double *dst, guint n, double nlo, double nhi, const float *src, double lo, double hi)
{
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < n; j++)
      {
        double a0 = lo + (hi - lo) * i / n, a1 = i + 1 == n ? hi : lo + (hi - lo) * (i + 1) / n;
        double b0 = nlo + (nhi - nlo) * j / n, b1 = j + 1 == n ? nhi : nlo + (nhi - nlo) * (j + 1) / n;
        dst[j] += src[i] * overlap_of (a0, a1, b0, b1) / (a1 - a0);
      }
}

static void
test_histogram_merge_ranges (void)
{
  g_autoptr(PiqObserver) a = piq_observer_new (PIQ_OBSERVER_KIND_HISTOGRAM);
  g_autoptr(PiqObserver) b = piq_observer_new (PIQ_OBSERVER_KIND_HISTOGRAM);
  g_autoptr(PiqObserver) all = piq_observer_new (PIQ_OBSERVER_KIND_HISTOGRAM);
  g_autoptr(PiqFormat) u8 = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) ha = NULL, hb = NULL, hm = NULL;
  double alo, ahi, blo, bhi, lo, hi, total = 0;
  guint64 z = 11;
  gsize n;

  for (guint k = 0; k < 8; k++)
    {
      double v[3000];
      for (guint i = 0; i < G_N_ELEMENTS (v); i++)
        {
          double u[2];
          for (int m = 0; m < 2; m++)
            {
              z = z * 6364136223846793005u + 1442695040888963407u;
              u[m] = ((z >> 11) + 0.5) / 9007199254740992.0;
            }
          v[i] = sqrt (-2 * log (u[0])) * cos (2 * G_PI * u[1]);
          if (k >= 4)
            v[i] = 1 + 2 * v[i];           /* b's batches: wider, shifted */
        }
      g_autoptr(PiqTensor) t = values_tensor (PIQ_DTYPE_F32, v, G_N_ELEMENTS (v), 1,
                                              (guint64[]) { G_N_ELEMENTS (v) });
      g_assert_true (piq_observer_observe (k < 4 ? a : b, t, &error));
      g_assert_true (piq_observer_observe (all, t, &error));
      g_assert_no_error (error);
    }
  ha = piq_observer_get_histogram (a);
  hb = piq_observer_get_histogram (b);
  {
    g_autoptr(GBytes) m0 = piq_observer_get_min (a), m1 = piq_observer_get_max (a);
    g_autoptr(GBytes) m2 = piq_observer_get_min (b), m3 = piq_observer_get_max (b);
    alo = ((const double *) g_bytes_get_data (m0, NULL))[0];
    ahi = ((const double *) g_bytes_get_data (m1, NULL))[0];
    blo = ((const double *) g_bytes_get_data (m2, NULL))[0];
    bhi = ((const double *) g_bytes_get_data (m3, NULL))[0];
  }
  g_assert_true (alo != blo && ahi != bhi);
  lo = MIN (alo, blo);
  hi = MAX (ahi, bhi);

  g_assert_true (piq_observer_merge (a, b, &error));
  g_assert_no_error (error);
  hm = piq_observer_get_histogram (a);
  const double *da = g_bytes_get_data (ha, &n), *db = g_bytes_get_data (hb, NULL);
  const double *fm = g_bytes_get_data (hm, NULL);
  guint bins = n / sizeof (double);
  g_autofree float *fa = g_new (float, bins), *fb = g_new (float, bins);
  for (guint j = 0; j < bins; j++)
    {
      fa[j] = (float) da[j];
      fb[j] = (float) db[j];
    }
  g_autofree double *want = g_new0 (double, bins);
  oracle_spread (want, bins, lo, hi, fa, alo, ahi);
  oracle_spread (want, bins, lo, hi, fb, blo, bhi);
  double before = 0, merged = 0;
  for (guint j = 0; j < bins; j++)
    {
      total += want[j];
      before += (double) fa[j] + fb[j];
      merged += fm[j];
    }
  /* counts conserved (torch's own re-binning inside each observer need not
   * keep exactly 4 × 3000 per observer) */
  g_assert_cmpfloat (fabs (total - before), <, 1e-9 * before);
  g_assert_cmpfloat (fabs (merged - before), <, 1e-5 * before);
  for (guint j = 0; j < bins; j++)
    g_assert_cmpfloat (fabs (fm[j] - want[j]), <=, 1e-6 * fabs (want[j]) + 1e-9 * total);
  g_assert_cmpuint (piq_observer_get_n_batches (a), ==, 8);

  /* close to one observer fed everything: the scales within 1 % */
  g_autoptr(PiqRecipe) rm = piq_observer_compute_recipe (a, u8, &error);
  g_autoptr(PiqRecipe) ra = piq_observer_compute_recipe (all, u8, &error);
  g_assert_no_error (error);
  g_test_message ("merged scale %.6g, one observer's %.6g", piq_recipe_get_scale (rm),
                  piq_recipe_get_scale (ra));
  g_assert_cmpfloat (fabs (piq_recipe_get_scale (rm) / piq_recipe_get_scale (ra) - 1), <, 0.01);
}

/* One batch: the observer's per-tensor parameters are compute_params' (the
 * engine's min/max and abs-max rules) on the same data. */
static void
test_engine_agrees (void)
{
  for (gsize d = 0; d < G_N_ELEMENTS (float_dtypes); d++)
    for (int sym = 0; sym < 2; sym++)
      {
        Layout l = { float_dtypes[d], 2, { 33, 70 }, 0 };
        Batch b = make_batch (&l, 77 + d);
        g_autoptr(PiqObserver) obs = piq_observer_new (PIQ_OBSERVER_KIND_MIN_MAX);
        g_autoptr(PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_UINT8,
                                               "symmetric", sym, NULL);
        g_autoptr(PiqRecipe) mine = NULL, theirs = piq_recipe_new ();
        g_autoptr(GError) error = NULL;

        g_assert_true (piq_observer_observe (obs, b.tensor, &error));
        mine = piq_observer_compute_recipe (obs, f, &error);
        g_assert_no_error (error);
        g_assert_true (piq_quantizer_compute_params (piq_quantizer_get_default (), f, theirs,
                                                     b.tensor, &error));
        g_assert_no_error (error);
        g_assert_cmphex (o_f64_bits (piq_recipe_get_scale (mine)), ==,
                          o_f64_bits (piq_recipe_get_scale (theirs)));
        if (!sym)
          g_assert_cmpint (piq_recipe_get_zero_point (mine), ==,
                           piq_recipe_get_zero_point (theirs));
        batch_clear (&b);
      }
}

/* Large batches: several reduction blocks and threads give the oracle's results. */
static void
test_large (void)
{
  static const struct { guint n_dims; guint64 shape[3]; gboolean channel; int axis; gsize pad; } L[] = {
    { 1, { 300001 }, FALSE, 0, 0 },
    { 2, { 3, 70001 }, TRUE, 0, 0 },
    { 2, { 3, 70001 }, TRUE, 0, 8 },
    { 2, { 5000, 40 }, TRUE, 1, 0 },
    { 2, { 5000, 40 }, TRUE, -1, 12 },
    { 3, { 2, 3, 40000 }, TRUE, 1, 4 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (L); i++)
    {
      Layout l = { PIQ_DTYPE_F32, L[i].n_dims, { L[i].shape[0], L[i].shape[1], L[i].shape[2] },
                   L[i].pad };
      Batch b = make_batch (&l, 5 + i);
      OObs o = { .channel = L[i].channel, .axis = L[i].axis };
      g_autoptr(PiqObserver) obs = L[i].channel
        ? piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MIN_MAX, L[i].axis)
        : piq_observer_new (PIQ_OBSERVER_KIND_MIN_MAX);
      g_autoptr(GError) error = NULL;

      g_assert_true (piq_observer_observe (obs, b.tensor, &error));
      g_assert_no_error (error);
      o_observe (&o, &l, &b);
      assert_state (obs, &o);
      o_obs_clear (&o);
      batch_clear (&b);
    }
}

/* ---- bad input: a GError, and the observer's state unchanged ---- */

static void
assert_fails_unchanged (PiqObserver *obs, PiqTensor *t, int code)
{
  g_autoptr(GVariant) before = piq_observer_serialize (obs), after = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_false (piq_observer_observe (obs, t, &error));
  g_assert_error (error, PIQ_ERROR, code);
  after = piq_observer_serialize (obs);
  g_assert_true (g_variant_equal (before, after));
}

static PiqTensor *
values_tensor (PiqDtype dtype, const double *v, gsize n, guint n_dims, const guint64 *shape)
{
  g_autoptr(GError) error = NULL;
  PiqTensor *t = piq_tensor_new_from_values (dtype, v, n, &error);

  g_assert_no_error (error);
  if (shape != NULL)
    g_assert_true (piq_tensor_reshape (t, shape, n_dims, &error));
  g_assert_no_error (error);
  return t;
}

static void
test_bad_batches (void)
{
  static const double ok[6] = { 1, -2, 3, 4, 0.5, -6 };
  static const guint64 s23[2] = { 2, 3 }, s32[2] = { 3, 2 };
  g_autoptr(GError) error = NULL;

  for (int kind = 0; kind < 2; kind++)
    for (gsize d = 0; d < G_N_ELEMENTS (float_dtypes); d++)
      {
        PiqDtype dt = float_dtypes[d];
        g_autoptr(PiqObserver) per_t = piq_observer_new (kind);
        g_autoptr(PiqObserver) per_c = piq_observer_new_per_channel (kind, 1);
        g_autoptr(PiqTensor) good = values_tensor (dt, ok, 6, 2, s23);
        g_autoptr(PiqTensor) other_ch = values_tensor (dt, ok, 6, 2, s32);
        g_autoptr(PiqTensor) flat = values_tensor (dt, ok, 6, 0, NULL);
        g_autoptr(PiqTensor) empty = piq_tensor_new (dt, 0, &error);
        g_autoptr(PiqFormat) int8 = piq_format_new (PIQ_DTYPE_INT8);
        g_autoptr(PiqTensor) quantized = piq_tensor_new_quantized (int8, s23, 2, &error);
        static const double specials[] = { NAN, INFINITY, -INFINITY };

        g_assert_no_error (error);
        /* a first batch, so "unchanged" means something */
        g_assert_true (piq_observer_observe (per_t, good, &error));
        g_assert_true (piq_observer_observe (per_c, good, &error));
        g_assert_no_error (error);

        for (gsize s = 0; s < G_N_ELEMENTS (specials); s++)
          for (gsize pos = 0; pos < 6; pos++)
            {
              double v[6];
              g_autoptr(PiqTensor) t = NULL;
              memcpy (v, ok, sizeof v);
              v[pos] = specials[s];
              t = values_tensor (dt, v, 6, 2, s23);
              assert_fails_unchanged (per_t, t, PIQ_ERROR_NON_FINITE);
              assert_fails_unchanged (per_c, t, PIQ_ERROR_NON_FINITE);
            }
        if (dt == PIQ_DTYPE_F64)
          {
            double v[6];
            g_autoptr(PiqTensor) t = NULL;
            memcpy (v, ok, sizeof v);
            v[3] = -1e300;   /* finite, beyond binary32 */
            t = values_tensor (dt, v, 6, 2, s23);
            assert_fails_unchanged (per_t, t, PIQ_ERROR_NON_FINITE);
            assert_fails_unchanged (per_c, t, PIQ_ERROR_NON_FINITE);
          }
        assert_fails_unchanged (per_t, empty, PIQ_ERROR_EMPTY);
        assert_fails_unchanged (per_c, empty, PIQ_ERROR_EMPTY);
        assert_fails_unchanged (per_t, quantized, PIQ_ERROR_UNSUPPORTED);
        /* axis 1 of a 1-D batch; a batch of 2 channels after batches of 3 */
        assert_fails_unchanged (per_c, flat, PIQ_ERROR_SIZE);
        assert_fails_unchanged (per_c, other_ch, PIQ_ERROR_SIZE);
      }

  /* axes outside the shape, negative ones included */
  for (int axis = -PIQ_MAX_DIMS; axis < PIQ_MAX_DIMS; axis++)
    {
      g_autoptr(PiqObserver) obs = piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MIN_MAX, axis);
      g_autoptr(PiqTensor) t = values_tensor (PIQ_DTYPE_F32, ok, 6, 2, s23);
      if (axis >= -2 && axis <= 1)
        {
          g_assert_true (piq_observer_observe (obs, t, &error));
          g_assert_no_error (error);
          g_assert_cmpuint (piq_observer_get_n_channels (obs), ==, s23[axis < 0 ? axis + 2 : axis]);
        }
      else
        assert_fails_unchanged (obs, t, PIQ_ERROR_SIZE);
    }

  /* configurations that do not exist */
  {
    g_autoptr(PiqObserver) block = g_object_new (PIQ_TYPE_OBSERVER, "granularity",
                                                 PIQ_GRANULARITY_BLOCK, NULL);
    g_autoptr(PiqObserver) axis_t = g_object_new (PIQ_TYPE_OBSERVER, "axis", 1, NULL);
    g_autoptr(PiqTensor) t = values_tensor (PIQ_DTYPE_F32, ok, 6, 2, s23);
    assert_fails_unchanged (block, t, PIQ_ERROR_UNSUPPORTED);
    assert_fails_unchanged (axis_t, t, PIQ_ERROR_UNSUPPORTED);
  }
}

/* -0 and +0 tie: the state reads +0 either way. */
static void
test_negative_zero (void)
{
  static const double v[4] = { -0.0, -0.0, 0.0, -0.0 };
  g_autoptr(PiqObserver) obs = piq_observer_new (PIQ_OBSERVER_KIND_MIN_MAX);
  g_autoptr(PiqTensor) t = values_tensor (PIQ_DTYPE_F32, v, 4, 0, NULL);
  g_autoptr(GBytes) lo = NULL, hi = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) u8 = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqRecipe) r = NULL;

  g_assert_true (piq_observer_observe (obs, t, &error));
  lo = piq_observer_get_min (obs);
  hi = piq_observer_get_max (obs);
  g_assert_cmphex (o_f64_bits (*(const double *) g_bytes_get_data (lo, NULL)), ==, 0);
  g_assert_cmphex (o_f64_bits (*(const double *) g_bytes_get_data (hi, NULL)), ==, 0);
  /* an all-zero range: torch's eps is the scale, the zero point qmin */
  r = piq_observer_compute_recipe (obs, u8, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (piq_recipe_get_scale (r), ==, FLT_EPSILON);
  g_assert_cmpint (piq_recipe_get_zero_point (r), ==, 0);
}

static void
test_bad_results (void)
{
  static const double ok[6] = { 1, -2, 3, 4, 0.5, -6 };
  static const guint64 s23[2] = { 2, 3 };
  g_autoptr(PiqObserver) per_t = piq_observer_new (PIQ_OBSERVER_KIND_MIN_MAX);
  g_autoptr(PiqObserver) per_c = piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MIN_MAX, -1);
  g_autoptr(PiqTensor) t = values_tensor (PIQ_DTYPE_F32, ok, 6, 2, s23);
  g_autoptr(PiqFormat) u8 = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqFormat) u8_c0 = piq_format_new_per_channel (PIQ_DTYPE_UINT8, 0);
  g_autoptr(PiqFormat) u8_cm1 = piq_format_new_per_channel (PIQ_DTYPE_UINT8, -1);
  g_autoptr(PiqFormat) nf4 = piq_format_new (PIQ_DTYPE_NF4);
  g_autoptr(PiqFormat) bad = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_UINT8,
                                           "block-size", 32, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) s = NULL, z = NULL;
  PiqRecipe *r;

  /* nothing seen */
  g_assert_null (piq_observer_compute_recipe (per_t, u8, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY);
  g_clear_error (&error);
  g_assert_false (piq_observer_compute_channel_params (per_c, u8_cm1, &s, &z, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY);
  g_clear_error (&error);
  g_assert_null (s);

  g_assert_true (piq_observer_observe (per_t, t, &error));
  g_assert_true (piq_observer_observe (per_c, t, &error));
  g_assert_no_error (error);

  /* granularity, axis and dtype mismatches; an invalid format */
  g_assert_null (piq_observer_compute_recipe (per_t, u8_c0, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_null (piq_observer_compute_recipe (per_c, u8, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_false (piq_observer_compute_channel_params (per_c, u8_c0, &s, &z, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_false (piq_observer_compute_channel_params (per_t, u8, &s, &z, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_null (piq_observer_compute_recipe (per_t, nf4, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_null (piq_observer_compute_recipe (per_t, bad, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  g_assert_null (s);
  g_assert_null (z);

  /* and the right pair works */
  r = piq_observer_compute_recipe (per_t, u8, &error);
  g_assert_no_error (error);
  g_object_unref (r);
  g_assert_true (piq_observer_compute_channel_params (per_c, u8_cm1, &s, &z, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (g_bytes_get_size (s), ==, 3 * sizeof (double));
}

static void
test_bad_merges (void)
{
  static const double ok[6] = { 1, -2, 3, 4, 0.5, -6 };
  static const guint64 s23[2] = { 2, 3 }, s32[2] = { 3, 2 };
  g_autoptr(PiqTensor) t23 = values_tensor (PIQ_DTYPE_F32, ok, 6, 2, s23);
  g_autoptr(PiqTensor) t32 = values_tensor (PIQ_DTYPE_F32, ok, 6, 2, s32);
  g_autoptr(PiqObserver) base = piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MOVING_AVERAGE, 1);
  PiqObserver *others[] = {
    piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MIN_MAX, 1),
    piq_observer_new (PIQ_OBSERVER_KIND_MOVING_AVERAGE),
    piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MOVING_AVERAGE, -1),
    piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MOVING_AVERAGE, 0),
    g_object_new (PIQ_TYPE_OBSERVER, "kind", PIQ_OBSERVER_KIND_MOVING_AVERAGE, "granularity",
                  PIQ_GRANULARITY_CHANNEL, "axis", 1, "averaging-constant", 0.5, NULL),
    piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MOVING_AVERAGE, 1),   /* 2 channels */
  };
  static const int codes[] = {
    PIQ_ERROR_INVALID_VALUE, PIQ_ERROR_INVALID_VALUE, PIQ_ERROR_INVALID_VALUE,
    PIQ_ERROR_INVALID_VALUE, PIQ_ERROR_INVALID_VALUE, PIQ_ERROR_SIZE,
  };
  g_autoptr(GError) error = NULL;

  g_assert_true (piq_observer_observe (base, t23, &error));
  g_assert_no_error (error);
  for (gsize i = 0; i < G_N_ELEMENTS (others); i++)
    {
      g_autoptr(GVariant) before = piq_observer_serialize (base), after = NULL;
      g_autoptr(GVariant) other_before = NULL, other_after = NULL;
      PiqTensor *t = i == G_N_ELEMENTS (others) - 1 ? t32 : i == 3 ? t32 : t23;

      g_assert_true (piq_observer_observe (others[i], i == 1 ? t23 : t, &error));
      g_assert_no_error (error);
      other_before = piq_observer_serialize (others[i]);
      g_assert_false (piq_observer_merge (base, others[i], &error));
      g_assert_error (error, PIQ_ERROR, codes[i]);
      g_clear_error (&error);
      after = piq_observer_serialize (base);
      g_assert_true (g_variant_equal (before, after));
      other_after = piq_observer_serialize (others[i]);
      g_assert_true (g_variant_equal (other_before, other_after));
      g_object_unref (others[i]);
    }
}

/* Malformed states: each one a GError, never an observer. */
static void
test_bad_states (void)
{
  static const char *const bad[] = {
    "@a{sv} {}",
    "({'version': <uint32 1>},)",
    "({'version': <uint32 2>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'nonsense'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'block'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <1>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'channel'>, 'axis': <9>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <1.5>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint32 0>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 1>, 'min': <[1.0]>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 1>, 'min': <[1.0, 2.0]>, 'max': <[3.0, 4.0]>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <[1.0]>, 'max': <[3.0]>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 1>, 'min': <@ad []>, 'max': <@ad []>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 1>, 'min': <[5.0]>, 'max': <[3.0]>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 1>, 'min': <[nan]>, 'max': <[3.0]>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 1>, 'min': <[-inf]>, 'max': <[3.0]>},)",
    "({'version': <uint32 1>, 'kind': <'min-max'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 1>, 'min': <[0.1]>, 'max': <[3.0]>},)",
    "({'version': <uint32 1>, 'kind': <'percentile'>, 'granularity': <'tensor'>, 'axis': <0>, "
    "'averaging-constant': <0.01>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <40.0>, 'histogram': <@ad []>, 'n-batches': <uint64 0>, 'min': <@ad []>, 'max': <@ad []>},)",
  };
  /* and the same text with good values parses, so the cases fail for their reason */
  static const char *good =
    "({'version': <uint32 1>, 'kind': <'moving-average'>, 'granularity': <'channel'>, "
    "'axis': <-1>, 'averaging-constant': <0.5>, 'n-bins': <uint32 2048>, "
    "'upsample-rate': <uint32 128>, 'percentile': <99.0>, 'histogram': <@ad []>, 'n-batches': <uint64 3>, "
    "'min': <[-1.0, 0.5]>, 'max': <[3.0, 0.5]>, 'unknown-key': <'ignored'>},)";
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) gv = g_variant_parse (NULL, good, NULL, NULL, &error);
  g_autoptr(PiqObserver) obs = NULL;
  g_autoptr(GBytes) lo = NULL;

  g_assert_no_error (error);
  obs = piq_observer_new_deserialize (gv, &error);
  g_assert_no_error (error);
  g_assert_cmpint (piq_observer_get_kind (obs), ==, PIQ_OBSERVER_KIND_MOVING_AVERAGE);
  g_assert_cmpint (piq_observer_get_axis (obs), ==, -1);
  g_assert_cmpuint (piq_observer_get_n_batches (obs), ==, 3);
  lo = piq_observer_get_min (obs);
  g_assert_cmpfloat (((const double *) g_bytes_get_data (lo, NULL))[1], ==, 0.5);

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr(GVariant) v = g_variant_parse (NULL, bad[i], NULL, NULL, &error);
      g_autoptr(PiqObserver) o = NULL;
      g_assert_no_error (error);
      o = piq_observer_new_deserialize (v, &error);
      g_assert_null (o);
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
      g_test_message ("state %" G_GSIZE_FORMAT ": %s", i, error->message);
      g_clear_error (&error);
    }
}

static void
test_properties (void)
{
  g_autoptr(PiqObserver) obs = piq_observer_new_per_channel (PIQ_OBSERVER_KIND_MOVING_AVERAGE, -2);
  PiqObserverKind kind;
  PiqGranularity gran;
  int axis;
  double c;

  g_object_get (obs, "kind", &kind, "granularity", &gran, "axis", &axis, "averaging-constant", &c,
                NULL);
  g_assert_cmpint (kind, ==, PIQ_OBSERVER_KIND_MOVING_AVERAGE);
  g_assert_cmpint (gran, ==, PIQ_GRANULARITY_CHANNEL);
  g_assert_cmpint (axis, ==, -2);
  g_assert_cmpfloat (c, ==, 0.01);
  g_assert_cmpint (piq_observer_get_granularity (obs), ==, PIQ_GRANULARITY_CHANNEL);
  g_assert_cmpuint (piq_observer_get_n_channels (obs), ==, 0);
  g_assert_cmpuint (g_bytes_get_size (piq_observer_get_min (obs)), ==, 0);
}

/* ---- histograms (the search itself is compared with torch by observer-torch.py) ---- */

static void
assert_histogram (PiqObserver *obs, double lo, double hi, const double *bins, guint n)
{
  g_autoptr(GBytes) h = piq_observer_get_histogram (obs);
  g_autoptr(GBytes) bmin = piq_observer_get_min (obs), bmax = piq_observer_get_max (obs);
  gsize size;
  const double *p = g_bytes_get_data (h, &size);

  g_assert_cmpuint (size, ==, n * sizeof (double));
  for (guint i = 0; i < n; i++)
    g_assert_cmpfloat (p[i], ==, bins[i]);
  g_assert_cmpfloat (*(const double *) g_bytes_get_data (bmin, NULL), ==, lo);
  g_assert_cmpfloat (*(const double *) g_bytes_get_data (bmax, NULL), ==, hi);
}

static double
first_double (GBytes *b)
{
  return *(const double *) g_bytes_get_data (b, NULL);
}

/* torch.histc over [int(min), int(max)] (1.13 truncates the bounds), the last bin
 * closed; equal bounds take the batch's range widened by 1; a histogram of one
 * value starts over at the next batch; the same range adds counts. */
static void
test_histogram_bins (void)
{
  static const double a[4] = { 0.5, 1.5, 2.5, 3.5 }, c[3] = { 2, 2, 2 };
  static const double h_a[4] = { 1, 0, 1, 1 }, h_aa[4] = { 2, 0, 2, 2 }, h_c[4] = { 0, 0, 3, 0 };
  static const double h4[4] = { 4, 0, 4, 4 };
  g_autoptr(PiqObserver) obs = g_object_new (PIQ_TYPE_OBSERVER, "kind", PIQ_OBSERVER_KIND_HISTOGRAM,
                                             "n-bins", 4, NULL);
  g_autoptr(PiqObserver) other = g_object_new (PIQ_TYPE_OBSERVER, "kind",
                                               PIQ_OBSERVER_KIND_HISTOGRAM, "n-bins", 4, NULL);
  g_autoptr(PiqTensor) ta = values_tensor (PIQ_DTYPE_F32, a, 4, 0, NULL);
  g_autoptr(PiqTensor) tc = values_tensor (PIQ_DTYPE_F16, c, 3, 0, NULL);
  g_autoptr(GError) error = NULL;

  g_assert_cmpuint (piq_observer_get_n_bins (obs), ==, 4);
  g_assert_cmpuint (piq_observer_get_upsample_rate (obs), ==, 128);
  g_assert_true (piq_observer_observe (obs, tc, &error));
  assert_histogram (obs, 2, 2, h_c, 4);
  g_assert_true (piq_observer_observe (obs, ta, &error));
  /* 3.5 falls outside [0, 3]: torch 1.13 counts it nowhere either */
  assert_histogram (obs, 0.5, 3.5, h_a, 4);
  g_assert_true (piq_observer_observe (obs, ta, &error));
  assert_histogram (obs, 0.5, 3.5, h_aa, 4);
  g_assert_no_error (error);

  /* merging: an empty observer takes the state; the same range adds the counts */
  g_assert_true (piq_observer_merge (other, obs, &error));
  assert_same_state (other, obs);
  g_assert_true (piq_observer_merge (other, obs, &error));
  g_assert_no_error (error);
  assert_histogram (other, 0.5, 3.5, h4, 4);
  g_assert_cmpuint (piq_observer_get_n_batches (other), ==, 6);
}

/* A wider batch re-bins the old histogram (torch's upsample-and-interpolate), which
 * keeps its total; the new batch adds its elements inside the truncated range. */
static void
test_histogram_rebin (void)
{
  g_autoptr(PiqObserver) obs = piq_observer_new (PIQ_OBSERVER_KIND_HISTOGRAM);
  g_autoptr(GError) error = NULL;
  Layout l = { PIQ_DTYPE_F32, 2, { 50, 40 }, 0 };
  double expected = 0.0;

  for (guint i = 0; i < 3; i++)
    {
      Batch b = make_batch (&l, 40 + i);
      g_autoptr(GBytes) h = NULL, bmin = NULL, bmax = NULL;
      g_autoptr(PiqTensor) t = NULL;
      double sum = 0.0, lo = INFINITY, hi = -INFINITY, new_lo, new_hi;
      const double *p;

      for (guint64 k = 0; k < b.n; k++)
        {
          b.values[k] = (double) (float) (b.values[k] * (1.0 + 2.0 * i));   /* wider each time */
          lo = MIN (lo, b.values[k]);
          hi = MAX (hi, b.values[k]);
        }
      t = values_tensor (PIQ_DTYPE_F32, b.values, b.n, 0, NULL);
      g_assert_true (piq_observer_observe (obs, t, &error));
      g_assert_no_error (error);
      bmin = piq_observer_get_min (obs);
      bmax = piq_observer_get_max (obs);
      new_lo = first_double (bmin);
      new_hi = first_double (bmax);
      g_assert_cmpfloat (new_lo, <=, lo);
      g_assert_cmpfloat (new_hi, >=, hi);
      for (guint64 k = 0; k < b.n; k++)
        if (b.values[k] >= trunc (new_lo) && b.values[k] <= trunc (new_hi))
          expected += 1.0;
      h = piq_observer_get_histogram (obs);
      p = g_bytes_get_data (h, NULL);
      for (guint k = 0; k < 2048; k++)
        {
          g_assert_cmpfloat (p[k], >=, 0.0);
          sum += p[k];
        }
      /* interpolation in binary64, bins in binary32: the total within rounding */
      g_assert_cmpfloat (fabs (sum - expected), <=, 1e-3 * expected);
      batch_clear (&b);
    }
}

/* The percentile range on a histogram worked by hand: −50 … 50 in 10 bins of 10,
 * the last holding 11; 80% keeps [−30, 40]. */
static void
test_percentile (void)
{
  g_autofree double *v = g_new (double, 101);
  g_autoptr(PiqObserver) obs = g_object_new (PIQ_TYPE_OBSERVER, "kind", PIQ_OBSERVER_KIND_PERCENTILE,
                                             "n-bins", 10, "percentile", 80.0, NULL);
  g_autoptr(PiqObserver) all = g_object_new (PIQ_TYPE_OBSERVER, "kind", PIQ_OBSERVER_KIND_PERCENTILE,
                                             "n-bins", 10, "percentile", 100.0, NULL);
  g_autoptr(PiqObserver) other = g_object_new (PIQ_TYPE_OBSERVER, "kind",
                                               PIQ_OBSERVER_KIND_PERCENTILE, "n-bins", 10,
                                               "percentile", 90.0, NULL);
  g_autoptr(PiqTensor) t = NULL;
  g_autoptr(GError) error = NULL;
  static const double h[10] = { 10, 10, 10, 10, 10, 10, 10, 10, 10, 11 };
  static const PiqDtype dts[2] = { PIQ_DTYPE_UINT8, PIQ_DTYPE_INT8 };

  for (int i = 0; i <= 100; i++)
    v[i] = i - 50;
  t = values_tensor (PIQ_DTYPE_F32, v, 101, 0, NULL);
  g_assert_true (piq_observer_observe (obs, t, &error));
  g_assert_true (piq_observer_observe (all, t, &error));
  g_assert_true (piq_observer_observe (other, t, &error));
  g_assert_no_error (error);
  assert_histogram (obs, -50, 50, h, 10);
  g_assert_cmpfloat (piq_observer_get_percentile (obs), ==, 80.0);
  for (int d = 0; d < 2; d++)
    for (int sym = 0; sym < 2; sym++)
      {
        g_autoptr(PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dts[d], "symmetric", sym,
                                               NULL);
        g_autoptr(PiqRecipe) r = piq_observer_compute_recipe (obs, f, &error);
        g_autoptr(PiqRecipe) r_all = piq_observer_compute_recipe (all, f, &error);
        double scale;
        gint64 zp;

        g_assert_no_error (error);
        o_qparams (-30.0f, 40.0f, dts[d], sym, &scale, &zp);
        g_assert_cmphex (o_f64_bits (piq_recipe_get_scale (r)), ==, o_f64_bits (scale));
        if (!sym)
          g_assert_cmpint (piq_recipe_get_zero_point (r), ==, zp);
        /* 100% keeps everything counted: the whole range */
        o_qparams (-50.0f, 50.0f, dts[d], sym, &scale, &zp);
        g_assert_cmphex (o_f64_bits (piq_recipe_get_scale (r_all)), ==, o_f64_bits (scale));
      }
  /* percentiles must agree to merge */
  {
    g_autoptr(GVariant) before = piq_observer_serialize (obs), after = NULL;
    g_assert_false (piq_observer_merge (obs, other, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
    after = piq_observer_serialize (obs);
    g_assert_true (g_variant_equal (before, after));
  }
}

static void
test_histogram_bad (void)
{
  static const double a[4] = { 0.5, 1.5, 2.5, 3.5 }, b[4] = { 0.5, 1.5, 2.5, 9.5 };
  g_autoptr(PiqObserver) obs = piq_observer_new (PIQ_OBSERVER_KIND_HISTOGRAM);
  g_autoptr(PiqObserver) other = piq_observer_new (PIQ_OBSERVER_KIND_HISTOGRAM);
  g_autoptr(PiqObserver) fewer = g_object_new (PIQ_TYPE_OBSERVER, "kind",
                                               PIQ_OBSERVER_KIND_HISTOGRAM, "n-bins", 100, NULL);
  g_autoptr(PiqObserver) per_c = piq_observer_new_per_channel (PIQ_OBSERVER_KIND_HISTOGRAM, 0);
  g_autoptr(PiqTensor) ta = values_tensor (PIQ_DTYPE_F32, a, 4, 0, NULL);
  g_autoptr(PiqTensor) tb = values_tensor (PIQ_DTYPE_F32, b, 4, 0, NULL);
  g_autoptr(PiqTensor) t3 = values_tensor (PIQ_DTYPE_F32, b, 3, 0, NULL);
  g_autoptr(PiqFormat) u8_c = piq_format_new_per_channel (PIQ_DTYPE_UINT8, 0);
  g_autoptr(GVariant) before = NULL, after = NULL, other_before = NULL, other_after = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) s = NULL;
  static const int codes[2] = { PIQ_ERROR_UNSUPPORTED, PIQ_ERROR_INVALID_VALUE };
  PiqObserver *from[2];

  /* a per-channel histogram keeps its channel count */
  g_assert_true (piq_observer_observe (per_c, ta, &error));
  g_assert_no_error (error);
  assert_fails_unchanged (per_c, t3, PIQ_ERROR_SIZE);
  /* a batch 2^40 times wider than a histogram's range cannot be re-binned: one channel
   * of three fails, and every channel stays as it was (the other two were binned) */
  {
    static const guint64 shape[2] = { 3, 2 };
    static const double narrow[6] = { 1, 1.5, 2, 2.5, 3, 3.5 }, wide[6] = { 1, 1.5, 2, 1e15, 3, 3.5 };
    g_autoptr(PiqObserver) three = piq_observer_new_per_channel (PIQ_OBSERVER_KIND_HISTOGRAM, 0);
    g_autoptr(PiqTensor) tn = values_tensor (PIQ_DTYPE_F32, narrow, 6, 2, shape);
    g_autoptr(PiqTensor) tw = values_tensor (PIQ_DTYPE_F32, wide, 6, 2, shape);
    g_assert_true (piq_observer_observe (three, tn, &error));
    g_assert_no_error (error);
    assert_fails_unchanged (three, tw, PIQ_ERROR_INVALID_VALUE);
  }
  g_assert_true (piq_observer_observe (obs, ta, &error));
  g_assert_true (piq_observer_observe (other, tb, &error));
  g_assert_true (piq_observer_observe (fewer, ta, &error));
  g_assert_no_error (error);
  g_assert_false (piq_observer_compute_channel_params (obs, u8_c, &s, NULL, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
  g_clear_error (&error);

  /* different bin counts do not merge (different ranges do: merge-ranges) */
  from[0] = other;
  from[1] = fewer;
  for (guint i = 1; i < 2; i++)
    {
      g_clear_pointer (&before, g_variant_unref);
      g_clear_pointer (&after, g_variant_unref);
      g_clear_pointer (&other_before, g_variant_unref);
      g_clear_pointer (&other_after, g_variant_unref);
      before = piq_observer_serialize (obs);
      other_before = piq_observer_serialize (from[i]);
      g_assert_false (piq_observer_merge (obs, from[i], &error));
      g_assert_error (error, PIQ_ERROR, codes[i]);
      g_clear_error (&error);
      after = piq_observer_serialize (obs);
      other_after = piq_observer_serialize (from[i]);
      g_assert_true (g_variant_equal (before, after));
      g_assert_true (g_variant_equal (other_before, other_after));
    }

  /* a histogram state round-trips; a damaged one is refused */
  {
    g_autoptr(GVariant) state = piq_observer_serialize (obs);
    g_autoptr(PiqObserver) back = piq_observer_new_deserialize (state, &error);
    g_autoptr(GVariantDict) dict = NULL;
    g_autoptr(GVariant) inner = g_variant_get_child_value (state, 0);
    static const double short_h[3] = { 1, 2, 3 };
    g_autofree double *neg = g_new0 (double, 2048);

    g_assert_no_error (error);
    assert_same_state (back, obs);
    neg[7] = -1.0;
    for (guint i = 0; i < 2; i++)
      {
        g_autoptr(GVariant) bad = NULL;
        g_autoptr(PiqObserver) none = NULL;
        g_clear_pointer (&dict, g_variant_dict_unref);
        dict = g_variant_dict_new (inner);
        g_variant_dict_insert_value (dict, "histogram",
                                     i == 0 ? g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE,
                                                                         short_h, 3, sizeof (double))
                                            : g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE,
                                                                         neg, 2048, sizeof (double)));
        bad = g_variant_ref_sink (g_variant_new ("(@a{sv})", g_variant_dict_end (dict)));
        none = piq_observer_new_deserialize (bad, &error);
        g_assert_null (none);
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
        g_clear_error (&error);
      }
  }
}

/* The doubles of @b from index @first on, @n of them, against @ref's all. */
static void
assert_slice (GBytes *b, gsize first, GBytes *ref, gsize n)
{
  gsize size, ref_size;
  const double *p = g_bytes_get_data (b, &size), *r = g_bytes_get_data (ref, &ref_size);

  g_assert_cmpuint (ref_size, ==, n * sizeof (double));
  g_assert_cmpuint (size, >=, (first + n) * sizeof (double));
  for (gsize i = 0; i < n; i++)
    g_assert_cmphex (o_f64_bits (p[first + i]), ==, o_f64_bits (r[i]));
}

/* A per-channel histogram or percentile observer keeps, for each channel, the
 * state of a per-tensor observer fed that channel's values alone (per-tensor
 * observers are compared with torch's HistogramObserver by observer-torch.py,
 * per channel too), along any axis, for every float type, packed or strided:
 * ranges, histograms (re-binned as batches widen them), merged states and each
 * channel's searched scale and zero point. */
static void
test_histogram_channels (void)
{
  static const struct { Layout l; int axis; } cases[] = {
    { { PIQ_DTYPE_F32, 2, { 7, 33 }, 0 }, 0 },
    { { PIQ_DTYPE_F32, 2, { 7, 33 }, 8 }, 0 },
    { { PIQ_DTYPE_BF16, 2, { 7, 33 }, 0 }, 1 },
    { { PIQ_DTYPE_F64, 2, { 7, 33 }, 16 }, -1 },
    { { PIQ_DTYPE_F16, 3, { 3, 4, 17 }, 0 }, 1 },
    { { PIQ_DTYPE_F32, 3, { 3, 4, 17 }, 4 }, 0 },
    { { PIQ_DTYPE_F32, 3, { 3, 4, 17 }, 4 }, 1 },
    { { PIQ_DTYPE_F32, 3, { 3, 4, 17 }, 0 }, 2 },
    { { PIQ_DTYPE_F32, 1, { 50 }, 0 }, 0 },
  };
  static const PiqObserverKind kinds[] = { PIQ_OBSERVER_KIND_HISTOGRAM, PIQ_OBSERVER_KIND_PERCENTILE };
  static const PiqDtype targets[] = { PIQ_DTYPE_UINT8, PIQ_DTYPE_INT8 };

  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
      {
        const Layout *l = &cases[i].l;
        int axis = cases[i].axis, a = axis < 0 ? axis + (int) l->n_dims : axis;
        guint64 n_ch = l->shape[a];
        /* obs sees every batch; part sees batches 0 and 1, rest batch 2, then merges */
        PiqObserver *obs = g_object_new (PIQ_TYPE_OBSERVER, "kind", kinds[k], "n-bins", 96,
                                         "granularity", PIQ_GRANULARITY_CHANNEL, "axis", axis,
                                         "percentile", 95.0, NULL);
        PiqObserver *part = g_object_new (PIQ_TYPE_OBSERVER, "kind", kinds[k], "n-bins", 96,
                                          "granularity", PIQ_GRANULARITY_CHANNEL, "axis", axis,
                                          "percentile", 95.0, NULL);
        PiqObserver *rest = g_object_new (PIQ_TYPE_OBSERVER, "kind", kinds[k], "n-bins", 96,
                                          "granularity", PIQ_GRANULARITY_CHANNEL, "axis", axis,
                                          "percentile", 95.0, NULL);
        g_autoptr(GPtrArray) refs = g_ptr_array_new_with_free_func (g_object_unref);
        g_autoptr(GPtrArray) ref_parts = g_ptr_array_new_with_free_func (g_object_unref);
        g_autoptr(GPtrArray) ref_rests = g_ptr_array_new_with_free_func (g_object_unref);
        g_autoptr(GError) error = NULL;

        for (guint64 c = 0; c < n_ch; c++)
          for (int r = 0; r < 3; r++)
            g_ptr_array_add (r == 0 ? refs : r == 1 ? ref_parts : ref_rests,
                             g_object_new (PIQ_TYPE_OBSERVER, "kind", kinds[k], "n-bins", 96,
                                           "percentile", 95.0, NULL));
        for (guint j = 0; j < 3; j++)
          {
            Batch b = make_batch (l, 700 + 10 * i + j);
            g_autofree double *v = g_new (double, b.n);
            g_assert_true (piq_observer_observe (obs, b.tensor, &error));
            g_assert_true (piq_observer_observe (j < 2 ? part : rest, b.tensor, &error));
            g_assert_no_error (error);
            for (guint64 c = 0; c < n_ch; c++)
              {
                g_autoptr(PiqTensor) t = NULL;
                gsize m = 0;
                for (guint64 e = 0; e < b.n; e++)
                  if (o_channel_of (l, axis, e) == c)
                    v[m++] = b.values[e];
                t = values_tensor (l->dtype, v, m, 0, NULL);
                g_assert_true (piq_observer_observe (refs->pdata[c], t, &error));
                g_assert_true (piq_observer_observe ((j < 2 ? ref_parts : ref_rests)->pdata[c], t,
                                                     &error));
                g_assert_no_error (error);
              }
            batch_clear (&b);
          }
        g_assert_true (piq_observer_merge (part, rest, &error));
        g_assert_no_error (error);
        for (guint64 c = 0; c < n_ch; c++)
          {
            g_assert_true (piq_observer_merge (ref_parts->pdata[c], ref_rests->pdata[c], &error));
            g_assert_no_error (error);
          }
        for (int m = 0; m < 2; m++)
          {
            PiqObserver *o = m == 0 ? obs : part;
            GPtrArray *rs = m == 0 ? refs : ref_parts;
            g_autoptr(GBytes) lo = piq_observer_get_min (o), hi = piq_observer_get_max (o);
            g_autoptr(GBytes) h = piq_observer_get_histogram (o);
            g_autoptr(GVariant) state = piq_observer_serialize (o);
            g_autoptr(PiqObserver) back = piq_observer_new_deserialize (state, &error);

            g_assert_no_error (error);
            assert_same_state (o, back);
            g_assert_cmpuint (piq_observer_get_n_channels (o), ==, n_ch);
            for (guint64 c = 0; c < n_ch; c++)
              {
                g_autoptr(GBytes) rlo = piq_observer_get_min (rs->pdata[c]);
                g_autoptr(GBytes) rhi = piq_observer_get_max (rs->pdata[c]);
                g_autoptr(GBytes) rh = piq_observer_get_histogram (rs->pdata[c]);
                assert_slice (lo, c, rlo, 1);
                assert_slice (hi, c, rhi, 1);
                assert_slice (h, c * 96, rh, 96);
              }
            for (gsize d = 0; d < G_N_ELEMENTS (targets); d++)
              for (int sym = 0; sym < 2; sym++)
                {
                  g_autoptr(PiqFormat) fc = g_object_new (PIQ_TYPE_FORMAT, "dtype", targets[d],
                                                          "symmetric", sym, "granularity",
                                                          PIQ_GRANULARITY_CHANNEL, "axis", axis,
                                                          NULL);
                  g_autoptr(PiqFormat) ft = g_object_new (PIQ_TYPE_FORMAT, "dtype", targets[d],
                                                          "symmetric", sym, NULL);
                  g_autoptr(GBytes) sb = NULL, zb = NULL;
                  const double *sc;
                  const gint64 *zp;

                  g_assert_true (piq_observer_compute_channel_params (o, fc, &sb, &zb, &error));
                  g_assert_no_error (error);
                  sc = g_bytes_get_data (sb, NULL);
                  zp = g_bytes_get_data (zb, NULL);
                  for (guint64 c = 0; c < n_ch; c++)
                    {
                      g_autoptr(PiqRecipe) r = piq_observer_compute_recipe (rs->pdata[c], ft, &error);
                      g_assert_no_error (error);
                      g_assert_cmphex (o_f64_bits (sc[c]), ==, o_f64_bits (piq_recipe_get_scale (r)));
                      if (!sym)
                        g_assert_cmpint (zp[c], ==, piq_recipe_get_zero_point (r));
                    }
                }
          }
        g_object_unref (obs);
        g_object_unref (part);
        g_object_unref (rest);
      }
}

/* The thread count never changes a state: one thread and every thread give the
 * same statistics, histograms included. */
static void
test_threads (void)
{
  static const PiqObserverKind kinds[] = {
    PIQ_OBSERVER_KIND_MIN_MAX, PIQ_OBSERVER_KIND_MOVING_AVERAGE, PIQ_OBSERVER_KIND_HISTOGRAM,
    PIQ_OBSERVER_KIND_PERCENTILE,
  };
  PiqQuantizer *q = piq_quantizer_get_default ();
  guint saved = piq_quantizer_get_n_threads (q);
  Layout l = { PIQ_DTYPE_F32, 2, { 7, 50001 }, 0 }, ls = { PIQ_DTYPE_BF16, 2, { 7, 50001 }, 10 };

  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    /* histograms per channel along axis 0 (7 channels), not the last (50001) */
    for (int channel = 0; channel < (kinds[k] >= PIQ_OBSERVER_KIND_HISTOGRAM ? 2 : 3); channel++)
      {
        g_autoptr(PiqObserver) one = NULL, all = NULL;
        g_autoptr(GError) error = NULL;

        for (int pass = 0; pass < 2; pass++)
          {
            PiqObserver *obs = channel
              ? piq_observer_new_per_channel (kinds[k], channel == 1 ? 0 : -1)
              : piq_observer_new (kinds[k]);
            piq_quantizer_set_n_threads (q, pass == 0 ? 1 : 0);
            for (guint i = 0; i < 3; i++)
              {
                Batch b = make_batch (i == 1 ? &ls : &l, 60 + i);
                g_assert_true (piq_observer_observe (obs, b.tensor, &error));
                g_assert_no_error (error);
                batch_clear (&b);
              }
            if (pass == 0)
              one = obs;
            else
              all = obs;
          }
        assert_same_state (one, all);
      }
  piq_quantizer_set_n_threads (q, saved);
}

/* ---- MSE and entropy observers ----
 *
 * The oracles below are written from docs/observers.md's definitions and, for the
 * entropy rule, from TensorRT's published pseudocode ("8-bit Inference with
 * TensorRT", S7310, 2017) with MXNet's smoothing: plain loops that rebuild P and Q
 * for every candidate, not the library's helpers. The MSE oracle rounds to each
 * format's grid by enumerating the grid's values, independently of the engine's
 * codecs. */

typedef enum {
  DIST_NORMAL, DIST_HEAVY, DIST_OUTLIERS, DIST_EQUAL, DIST_TINY, DIST_ZERO, N_DISTS
} Dist;

static const char *const dist_names[N_DISTS] = {
  "normal", "heavy", "outliers", "equal", "tiny", "zero",
};

/* A batch of @dist, shape [rows, cols], in @dtype; @x receives the values as the
 * observer reads them (the dtype's value rounded to binary32). */
static PiqTensor *
search_batch (Dist dist, PiqDtype dtype, guint64 rows, guint64 cols, guint64 seed, float *x)
{
  guint64 n = rows * cols, shape[2] = { rows, cols };
  gsize esize = o_dtype_bits (dtype) / 8;
  g_autofree guint8 *buf = g_malloc0 (n * esize);
  g_autoptr(GError) error = NULL;
  PiqTensor *t;
  ORng rng;

  o_rng_init (&rng, seed);
  for (guint64 i = 0; i < n; i++)
    {
      double v, c = (double) (i % cols);
      switch (dist)
        {
        case DIST_NORMAL:   v = o_rng_normal (&rng) * (1.0 + 0.25 * c) + 0.1 * c; break;
        case DIST_HEAVY:    v = o_rng_normal (&rng) * exp (0.9 * o_rng_normal (&rng)); break;
        case DIST_OUTLIERS: /* and −0, which counts with the non-negative magnitudes */
          v = i % 97 == 5 ? (i % 2 ? 60.0 : -45.0) : i % 89 == 3 ? -0.0 : o_rng_normal (&rng);
          break;
        case DIST_EQUAL:    v = -1.7; break;
        case DIST_TINY:     v = 1e-3 * o_rng_normal (&rng); break;
        default:            v = (i % 3) ? 0.0 : -0.0; break;
        }
      o_write_float (dtype, buf, i, v);
      x[i] = (float) o_read_float (dtype, buf, i);
    }
  t = piq_tensor_new_shaped (dtype, shape, 2, &error);
  g_assert_no_error (error);
  g_assert_true (piq_tensor_set_data (t, buf, n * esize, &error));
  g_assert_no_error (error);
  return t;
}

/* One channel's oracle histogram: the range 2^e is found by doubling from 2^-126
 * until it exceeds every magnitude; counts of |x| per side. */
typedef struct {
  guint    bins;
  double   range;
  float    lo, hi;
  double  *neg, *pos;
} OMag;

static void
o_mag_init (OMag *m, guint bins, const float *x, const guint64 *idx, guint64 n)
{
  m->bins = bins;
  m->range = ldexp (1.0, -126);
  m->lo = INFINITY;
  m->hi = -INFINITY;
  m->neg = g_new0 (double, bins);
  m->pos = g_new0 (double, bins);
  for (guint64 i = 0; i < n; i++)
    {
      m->lo = fminf (m->lo, x[idx[i]]);
      m->hi = fmaxf (m->hi, x[idx[i]]);
      while (fabs ((double) x[idx[i]]) >= m->range)
        m->range *= 2;
    }
  for (guint64 i = 0; i < n; i++)
    {
      float v = x[idx[i]];
      guint64 k = (guint64) floor (fabs ((double) v) / m->range * bins);
      g_assert_cmpuint (k, <, bins);
      (v < 0 ? m->neg : m->pos)[k] += 1;
    }
  m->lo += 0.0f;
  m->hi += 0.0f;
}

static void
o_mag_clear (OMag *m)
{
  g_free (m->neg);
  g_free (m->pos);
}

/* The entropy threshold, step by step as the slides give it: for i = levels …
 * bins − 1, P = bins 0 … i − 1 with the outliers added to bin i − 1, Q = the same
 * bins (outliers not included) merged into `levels` groups and expanded over the
 * bins where P is not zero; both smoothed (zeros → 1e-4, the others lowered by
 * 1e-4 · zeros / non-zeros), normalized, KL(P || Q); the first minimum m gives
 * (m + 0.5) · bin width. */
static double
o_kl_threshold (const OMag *m, guint levels)
{
  guint bins = m->bins, best_i = bins;
  double best = INFINITY;

  for (guint i = levels; i < bins; i++)
    {
      g_autofree double *p = g_new0 (double, i), *q = g_new0 (double, i);
      guint per = i / levels;
      double outliers = 0, sp = 0, sq = 0, kl = 0;
      gboolean ok = TRUE;

      for (guint k = 0; k < i; k++)
        p[k] = m->neg[k] + m->pos[k];
      for (guint k = i; k < bins; k++)
        outliers += m->neg[k] + m->pos[k];
      p[i - 1] += outliers;
      for (guint g = 0; g < levels; g++)
        {
          guint a = g * per, b = g + 1 == levels ? i : a + per, used = 0;
          double total = 0;
          for (guint k = a; k < b; k++)
            {
              total += m->neg[k] + m->pos[k];
              if (p[k] != 0)
                used++;
            }
          for (guint k = a; k < b; k++)
            q[k] = p[k] != 0 ? total / used : 0;
        }
      for (int which = 0; which < 2 && ok; which++)
        {
          double *d = which ? q : p;
          guint zeros = 0;
          for (guint k = 0; k < i; k++)
            zeros += d[k] == 0;
          if (zeros == i)
            ok = FALSE;
          else
            {
              double eps1 = 0.0001 * zeros / (i - zeros);
              for (guint k = 0; k < i; k++)
                {
                  d[k] = d[k] == 0 ? 0.0001 : d[k] - eps1;
                  ok = ok && d[k] > 0;
                }
            }
        }
      if (!ok)
        continue;
      for (guint k = 0; k < i; k++)
        sp += p[k], sq += q[k];
      for (guint k = 0; k < i; k++)
        kl += p[k] / sp * log ((p[k] / sp) / (q[k] / sq));
      if (kl < best)
        best = kl, best_i = i;
    }
  if (best_i == bins)
    return m->range;
  return (best_i + 0.5) * (m->range / bins);
}

/* The expected int8/uint8 parameters of the entropy rule for one channel. */
static void
o_entropy_params (const OMag *m, PiqDtype dtype, gboolean symmetric, double *scale, gint64 *zp)
{
  gboolean one_sign = m->lo >= 0 || m->hi <= 0;
  guint levels = !symmetric && one_sign ? 256 : 128;
  float t = (float) o_kl_threshold (m, levels);

  o_qparams (fminf (fmaxf (m->lo, -t), t), fminf (fmaxf (m->hi, -t), t), dtype, symmetric,
             scale, zp);
}

/* The element indices of channel @c of a [rows, cols] batch along @axis (-1: all). */
static guint64 *
channel_indices (guint64 rows, guint64 cols, int axis, guint64 c, guint64 *n)
{
  guint64 *idx = g_new (guint64, rows * cols);

  *n = 0;
  for (guint64 i = 0; i < rows * cols; i++)
    if (axis < 0 || (axis == 0 ? i / cols : i % cols) == c)
      idx[(*n)++] = i;
  return idx;
}

static PiqObserver *
search_observer (PiqObserverKind kind, int axis, guint bins)
{
  return g_object_new (PIQ_TYPE_OBSERVER, "kind", kind, "n-bins", bins,
                       "granularity", axis < 0 ? PIQ_GRANULARITY_TENSOR : PIQ_GRANULARITY_CHANNEL,
                       "axis", MAX (axis, 0), NULL);
}

/* The observer's parameters for every channel of @format (per tensor: the
 * recipe's, in scale[0] and zp[0]). */
static void
observer_params (PiqObserver *obs, PiqDtype dtype, gboolean symmetric, int axis,
                 double *scale, gint64 *zp)
{
  g_autoptr(GError) error = NULL;

  if (axis < 0)
    {
      g_autoptr(PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "symmetric",
                                             symmetric, NULL);
      g_autoptr(PiqRecipe) r = piq_observer_compute_recipe (obs, f, &error);
      g_assert_no_error (error);
      *scale = piq_recipe_get_scale (r);
      *zp = piq_recipe_has_zero_point (r) ? piq_recipe_get_zero_point (r) : 0;
    }
  else
    {
      g_autoptr(PiqFormat) f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "symmetric",
                                             symmetric, "granularity", PIQ_GRANULARITY_CHANNEL,
                                             "axis", axis, NULL);
      g_autoptr(GBytes) s = NULL, z = NULL;
      g_assert_true (piq_observer_compute_channel_params (obs, f, &s, &z, &error));
      g_assert_no_error (error);
      gsize ns, nz;
      const double *ps = g_bytes_get_data (s, &ns);
      const gint64 *pz = g_bytes_get_data (z, &nz);
      memcpy (scale, ps, ns);
      memcpy (zp, pz, nz);
    }
}

#define SEARCH_ROWS 5
#define SEARCH_COLS 41

/* The histograms equal the oracle's, bit for bit, for every distribution, dtype
 * and granularity; the entropy observer's int8/uint8 parameters equal the
 * oracle's threshold's, exactly. */
static void
test_search_entropy (void)
{
  static const int axes[] = { -1, 0, 1 };
  static const struct { PiqDtype dtype; gboolean symmetric; } fmts[] = {
    { PIQ_DTYPE_INT8, TRUE }, { PIQ_DTYPE_INT8, FALSE }, { PIQ_DTYPE_UINT8, FALSE },
  };

  for (int d = 0; d < N_DISTS; d++)
    for (gsize t = 0; t < G_N_ELEMENTS (float_dtypes); t++)
      for (gsize a = 0; a < G_N_ELEMENTS (axes); a++)
        {
          int axis = axes[a];
          /* the entropy search costs O(bins²) per channel: TensorRT's 2048 bins
           * per tensor; the per-channel cases check the channel mapping with 3
           * channels of 512 bins, on two dtypes */
          guint bins = axis < 0 ? 2048 : 512;
          guint64 rows = d == DIST_TINY ? 1 : axis == 0 ? 3 : axis == 1 ? SEARCH_COLS : SEARCH_ROWS;
          guint64 cols = d == DIST_TINY ? 3 : axis == 1 ? 3 : SEARCH_COLS;
          guint64 n_ch = axis < 0 ? 1 : axis == 0 ? rows : cols;
          g_autofree float *x = g_new (float, rows * cols);
          g_autoptr(PiqTensor) batch = NULL;
          g_autoptr(PiqObserver) obs = search_observer (PIQ_OBSERVER_KIND_ENTROPY, axis, bins);
          g_autoptr(GBytes) hist = NULL;
          g_autoptr(GError) error = NULL;
          double scale[G_N_ELEMENTS (fmts)][SEARCH_COLS];
          gint64 zp[G_N_ELEMENTS (fmts)][SEARCH_COLS];
          const double *h;
          gsize size;

          if (axis >= 0 && t >= 2)
            continue;
          g_test_message ("%s %s axis %d", dist_names[d], o_dtype_name (float_dtypes[t]), axis);
          batch = search_batch (d, float_dtypes[t], rows, cols, 100 + d, x);
          g_assert_true (piq_observer_observe (obs, batch, &error));
          g_assert_no_error (error);
          hist = piq_observer_get_histogram (obs);
          h = g_bytes_get_data (hist, &size);
          g_assert_cmpuint (size, ==, n_ch * 2 * bins * sizeof (double));
          for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
            observer_params (obs, fmts[f].dtype, fmts[f].symmetric, axis, scale[f], zp[f]);
          for (guint64 c = 0; c < n_ch; c++)
            {
              guint64 n;
              g_autofree guint64 *idx = channel_indices (rows, cols, axis, c, &n);
              OMag m;

              o_mag_init (&m, bins, x, idx, n);
              for (guint k = 0; k < bins; k++)
                {
                  g_assert_cmpfloat (h[c * 2 * bins + k], ==, m.neg[k]);
                  g_assert_cmpfloat (h[c * 2 * bins + bins + k], ==, m.pos[k]);
                }
              for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
                {
                  double want;
                  gint64 want_zp;
                  o_entropy_params (&m, fmts[f].dtype, fmts[f].symmetric, &want, &want_zp);
                  g_assert_cmphex (o_f64_bits (scale[f][c]), ==, o_f64_bits (want));
                  g_assert_cmpint (zp[f][c], ==, want_zp);
                }
              o_mag_clear (&m);
            }
        }
}

/* Each grid as its non-negative values (the formats are symmetric in sign). */
static double *
o_grid (PiqDtype dtype, guint *n, double *max)
{
  /* bitsandbytes' table (docs/formats.md), not symmetric in sign */
  static const double nf4[16] = { -1.0, -0.69619280, -0.52507305, -0.39491749, -0.28444138,
                                  -0.18477343, -0.09105004, 0.0, 0.07958030, 0.16093020,
                                  0.24611230, 0.33791524, 0.44070983, 0.56261700, 0.72295684,
                                  1.0 };
  double *g = g_new (double, 256);

  *n = 0;
  switch (dtype)
    {
    case PIQ_DTYPE_FP8_E4M3:   /* bias 7, 3 mantissa bits, subnormals, max 448 */
      for (int e = 0; e < 16; e++)
        for (int f = 0; f < 8; f++)
          if (!(e == 15 && f == 7))
            g[(*n)++] = e == 0 ? ldexp (f / 8.0, -6) : ldexp (1 + f / 8.0, e - 7);
      break;
    case PIQ_DTYPE_FP4_E2M1:   /* bias 1, 1 mantissa bit, max 6 */
      for (int e = 0; e < 4; e++)
        for (int f = 0; f < 2; f++)
          g[(*n)++] = e == 0 ? f / 2.0 : ldexp (1 + f / 2.0, e - 1);
      break;
    default:                   /* NF4: all 16 values, signed */
      for (int k = 0; k < 16; k++)
        g[(*n)++] = nf4[k];
      break;
    }
  *max = g[*n - 1];
  return g;
}

/* v rounded to the nearest grid value (ties to the even index: the even
 * mantissa of the minifloats), saturating; the sign kept. A signed grid (NF4,
 * starting at -1) is searched as it is, ties to the lower code. */
static double
o_grid_round (const double *g, guint n, double v)
{
  if (g[0] < 0)
    {
      guint best = 0;
      for (guint k = 1; k < n; k++)
        if (fabs (v - g[k]) < fabs (v - g[best]))
          best = k;
      return v > g[n - 1] ? g[n - 1] : v < g[0] ? g[0] : g[best];
    }
  double a = fabs (v), r = g[n - 1];

  for (guint k = 0; k + 1 < n; k++)
    if (a <= g[k + 1])
      {
        double lo = a - g[k], hi = g[k + 1] - a;
        r = lo < hi ? g[k] : hi < lo ? g[k + 1] : g[k % 2 == 0 ? k : k + 1];
        break;
      }
  return v < 0 ? -r : r;
}

/* The error of one channel's oracle histogram (bin centres clamped to the range)
 * quantized with scale s (and zero point zp: integers) on @dtype's grid. */
static double
o_mse_error (const OMag *m, PiqDtype dtype, gboolean symmetric, double s, gint64 zp,
             const double *g, guint n_g)
{
  double err = 0, w = m->range / m->bins;

  for (int side = 0; side < 2; side++)
    for (guint k = 0; k < m->bins; k++)
      {
        double cnt = side ? m->pos[k] : m->neg[k], y;
        float c;
        if (cnt == 0)
          continue;
        c = (float) CLAMP ((side ? 1 : -1) * ((k + 0.5) * w), (double) m->lo, (double) m->hi);
        if (dtype == PIQ_DTYPE_INT8 || dtype == PIQ_DTYPE_UINT8 || dtype == PIQ_DTYPE_INT4)
          {
            gint64 qmin = dtype == PIQ_DTYPE_UINT8 ? 0 : dtype == PIQ_DTYPE_INT8 ? -128 : -8;
            gint64 qmax = dtype == PIQ_DTYPE_UINT8 ? 255 : dtype == PIQ_DTYPE_INT8 ? 127 : 7;
            double q = nearbyint ((double) c / s) + (double) zp;
            y = (CLAMP (q, (double) qmin, (double) qmax) - (double) zp) * s;
          }
        else
          y = o_grid_round (g, n_g, (double) c / s) * s;
        err += cnt * ((c - y) * (c - y));
      }
  return err;
}

/* The candidate scale of clip t for the oracle (docs/observers.md): integers by
 * torch's rule on [max (lo, −t), min (hi, t)]; grids: the clip over the grid's max
 * (NF4: the clip itself), binary32. */
static void
o_mse_candidate (const OMag *m, PiqDtype dtype, gboolean symmetric, float t, double gmax,
                 double *s, gint64 *zp)
{
  float lo = fminf (fmaxf (m->lo, -t), t), hi = fminf (fmaxf (m->hi, -t), t);

  *zp = 0;
  if (dtype == PIQ_DTYPE_INT8 || dtype == PIQ_DTYPE_UINT8)
    o_qparams (lo, hi, dtype, symmetric, s, zp);
  else if (dtype == PIQ_DTYPE_INT4)
    *s = fmaxf (fmaxf (-lo, hi) / 7.5f, FLT_EPSILON);
  else
    {
      float a = fmaxf (-lo, hi);
      *s = a == 0 ? 1.0 : (double) (a / (float) gmax);
    }
}

/* The MSE observer's choice is a candidate of the grid t = j/100 whose error, by
 * the oracle's own rounding to each format's grid, is the least (to rounding: the
 * engine and the oracle may differ in the last bit of a product); with outliers it
 * beats min/max on the data itself. */
static void
test_search_mse (void)
{
  static const int axes[] = { -1, 0, 1 };
  static const struct { PiqDtype dtype; gboolean symmetric; } fmts[] = {
    { PIQ_DTYPE_INT8, TRUE }, { PIQ_DTYPE_INT8, FALSE }, { PIQ_DTYPE_UINT8, FALSE },
    { PIQ_DTYPE_INT4, TRUE }, { PIQ_DTYPE_FP8_E4M3, TRUE }, { PIQ_DTYPE_FP4_E2M1, TRUE },
    { PIQ_DTYPE_NF4, TRUE },
  };

  for (int d = 0; d < N_DISTS; d++)
    for (gsize t = 0; t < G_N_ELEMENTS (float_dtypes); t++)
      for (gsize a = 0; a < G_N_ELEMENTS (axes); a++)
        {
          int axis = axes[a];
          guint64 rows = d == DIST_TINY && axis < 0 ? 1 : SEARCH_ROWS;
          guint64 cols = d == DIST_TINY && axis < 0 ? 3 : SEARCH_COLS;
          guint64 n_ch = axis < 0 ? 1 : axis == 0 ? rows : cols;
          g_autofree float *x = g_new (float, rows * cols);
          g_autoptr(PiqTensor) batch = NULL;
          g_autoptr(PiqObserver) obs = search_observer (PIQ_OBSERVER_KIND_MSE, axis, 256);
          g_autoptr(GError) error = NULL;
          double scales[G_N_ELEMENTS (fmts)][SEARCH_COLS];
          gint64 zps[G_N_ELEMENTS (fmts)][SEARCH_COLS];

          batch = search_batch (d, float_dtypes[t], rows, cols, 200 + d, x);
          g_assert_true (piq_observer_observe (obs, batch, &error));
          g_assert_no_error (error);
          for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
            observer_params (obs, fmts[f].dtype, fmts[f].symmetric, axis, scales[f], zps[f]);
          for (guint64 c = 0; c < n_ch; c++)
            {
              guint64 n;
              g_autofree guint64 *idx = channel_indices (rows, cols, axis, c, &n);
              OMag m;

              o_mag_init (&m, 256, x, idx, n);
              /* the observer's magnitude histograms are the oracle's, count for count */
              {
                g_autoptr(GBytes) hb = piq_observer_get_histogram (obs);
                gsize hn;
                const double *h = g_bytes_get_data (hb, &hn);
                g_assert_cmpuint (hn, ==, n_ch * 2 * 256 * sizeof (double));
                for (guint b = 0; b < 256; b++)
                  {
                    g_assert_cmpfloat (h[c * 512 + b], ==, m.neg[b]);
                    g_assert_cmpfloat (h[c * 512 + 256 + b], ==, m.pos[b]);
                  }
              }
              for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
                {
                  PiqDtype dt = fmts[f].dtype;
                  guint n_g = 0;
                  double gmax = 0, scale, best = INFINITY, chosen = NAN;
                  gint64 zp;
                  g_autofree double *g = NULL;

                  if (dt != PIQ_DTYPE_INT8 && dt != PIQ_DTYPE_UINT8 && dt != PIQ_DTYPE_INT4)
                    g = o_grid (dt, &n_g, &gmax);
                  scale = scales[f][c];
                  zp = zps[f][c];
                  for (int j = 1; j <= 100; j++)
                    {
                      float tj = (float) (fmax (fabs ((double) m.lo), fabs ((double) m.hi)) * j / 100);
                      double s, e;
                      gint64 z;
                      o_mse_candidate (&m, dt, fmts[f].symmetric, tj, gmax, &s, &z);
                      e = o_mse_error (&m, dt, fmts[f].symmetric, s, z, g, n_g);
                      best = fmin (best, e);
                      if (s == scale && z == zp)
                        chosen = e;
                    }
                  if (isnan (chosen))
                    g_error ("%s %s axis %d channel %" G_GUINT64_FORMAT " %s: scale %.9g zp %"
                             G_GINT64_FORMAT " is no candidate", dist_names[d],
                             o_dtype_name (float_dtypes[t]), axis, c, piq_dtype_get_name (dt), scale, zp);
                  if (!(chosen <= best * (1 + 1e-9) + 1e-300))
                    g_error ("%s %s axis %d channel %" G_GUINT64_FORMAT " %s: error %.17g, "
                             "the best candidate's %.17g", dist_names[d],
                             o_dtype_name (float_dtypes[t]), axis, c, piq_dtype_get_name (dt), chosen, best);
                }
              o_mag_clear (&m);
            }
        }
}

/* The squared error of requantizing @batch with @recipe on @format. */
static double
data_error (PiqFormat *format, PiqRecipe *recipe, const float *x, guint64 n)
{
  g_autoptr(GError) error = NULL;
  g_autofree float *y = g_new (float, n);
  double err = 0;

  g_assert_true (piq_quantizer_requantize_raw (piq_quantizer_get_default (), format, recipe,
                                               PIQ_DTYPE_F32, x, &n, 1, y, n * sizeof *y,
                                               PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
  for (guint64 i = 0; i < n; i++)
    err += ((double) x[i] - y[i]) * ((double) x[i] - y[i]);
  return err;
}

/* On data with outliers, the MSE clip quantizes the data itself with less error
 * than the min/max range, on integer and minifloat grids alike. */
static void
test_search_mse_outliers (void)
{
  static const PiqDtype dts[] = { PIQ_DTYPE_INT8, PIQ_DTYPE_INT4, PIQ_DTYPE_FP4_E2M1,
                                  PIQ_DTYPE_NF4 };
  guint64 n = 20000, shape[1] = { n };
  g_autofree float *x = g_new (float, n);
  g_autoptr(PiqTensor) batch = NULL;
  g_autoptr(PiqObserver) mse = piq_observer_new (PIQ_OBSERVER_KIND_MSE);
  g_autoptr(PiqObserver) mm = piq_observer_new (PIQ_OBSERVER_KIND_MIN_MAX);
  g_autoptr(GError) error = NULL;
  ORng rng;

  o_rng_init (&rng, 7);
  for (guint64 i = 0; i < n; i++)
    x[i] = i % 5000 == 3 ? 40.0f : (float) o_rng_normal (&rng);
  batch = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 1, &error);
  g_assert_true (piq_tensor_set_data (batch, (const guint8 *) x, n * sizeof *x, &error));
  g_assert_true (piq_observer_observe (mse, batch, &error));
  g_assert_true (piq_observer_observe (mm, batch, &error));
  g_assert_no_error (error);
  for (gsize d = 0; d < G_N_ELEMENTS (dts); d++)
    {
      g_autoptr(PiqFormat) f = piq_format_new_symmetric (dts[d]);
      g_autoptr(PiqRecipe) r_mse = piq_observer_compute_recipe (mse, f, &error);
      g_autoptr(PiqRecipe) r_mm = NULL;
      double e_mse, e_mm;

      g_assert_no_error (error);
      if (dts[d] == PIQ_DTYPE_INT8 || dts[d] == PIQ_DTYPE_INT4)
        r_mm = piq_observer_compute_recipe (mm, f, &error);
      else
        {
          /* min/max for a grid: the format's own absmax rule over all the data */
          r_mm = piq_recipe_new ();
          g_assert_true (piq_quantizer_compute_params (piq_quantizer_get_default (), f, r_mm,
                                                       batch, &error));
        }
      g_assert_no_error (error);
      e_mse = data_error (f, r_mse, x, n);
      e_mm = data_error (f, r_mm, x, n);
      g_test_message ("%s: MSE clip %g, min/max %g", piq_dtype_get_name (dts[d]), e_mse, e_mm);
      /* int8's steps are fine enough that clipping 1 in 5000 values does not pay
       * (min/max is the MSE choice there); the 4-bit grids gain a lot */
      if (dts[d] == PIQ_DTYPE_INT8)
        g_assert_cmpfloat (e_mse, <=, e_mm * (1 + 1e-12));
      else
        g_assert_cmpfloat (e_mse, <, 0.5 * e_mm);
    }
}

/* Two observers fed disjoint batches (of different ranges, so that both re-bin)
 * merge into exactly the state of one fed all of them, and the same parameters. */
static void
test_search_merge (void)
{
  static const PiqObserverKind kinds[] = { PIQ_OBSERVER_KIND_MSE, PIQ_OBSERVER_KIND_ENTROPY };
  static const int axes[] = { -1, 0, 1 };

  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    for (gsize a = 0; a < G_N_ELEMENTS (axes); a++)
      {
        g_autoptr(PiqObserver) one = search_observer (kinds[k], axes[a], 512);
        g_autoptr(PiqObserver) left = search_observer (kinds[k], axes[a], 512);
        g_autoptr(PiqObserver) right = search_observer (kinds[k], axes[a], 512);
        g_autoptr(PiqObserver) empty = search_observer (kinds[k], axes[a], 512);
        g_autoptr(PiqObserver) twice = search_observer (kinds[k], axes[a], 512);
        g_autoptr(PiqObserver) fed_twice = search_observer (kinds[k], axes[a], 512);
        g_autoptr(GError) error = NULL;

        for (int b = 0; b < 4; b++)
          {
            g_autofree float *x = g_new (float, SEARCH_ROWS * SEARCH_COLS);
            Dist dist = b == 0 ? DIST_TINY : b == 1 ? DIST_OUTLIERS : b == 2 ? DIST_NORMAL
                                                                            : DIST_HEAVY;
            g_autoptr(PiqTensor) t = search_batch (dist, PIQ_DTYPE_F32, SEARCH_ROWS, SEARCH_COLS,
                                                   300 + b, x);
            g_assert_true (piq_observer_observe (one, t, &error));
            /* the wide batch on one side, the narrow ones on both */
            g_assert_true (piq_observer_observe (b % 2 ? left : right, t, &error));
            g_assert_true (piq_observer_observe (fed_twice, t, &error));
            g_assert_true (piq_observer_observe (fed_twice, t, &error));
            g_assert_no_error (error);
          }
        g_assert_true (piq_observer_merge (left, right, &error));
        g_assert_no_error (error);
        assert_same_state (left, one);
        /* into an empty one, and an empty one into it */
        g_assert_true (piq_observer_merge (empty, one, &error));
        assert_same_state (empty, one);
        g_assert_true (piq_observer_merge (empty, twice, &error));   /* twice is empty */
        assert_same_state (empty, one);
        /* with itself: every count doubles, as feeding everything twice */
        g_assert_true (piq_observer_merge (twice, one, &error));
        g_assert_true (piq_observer_merge (twice, twice, &error));
        g_assert_no_error (error);
        assert_same_state (twice, fed_twice);
      }
}

/* The state round-trips (observe on after it, results equal); states that no
 * observer can have are rejected. */
static void
test_search_serialize (void)
{
  static const PiqObserverKind kinds[] = { PIQ_OBSERVER_KIND_MSE, PIQ_OBSERVER_KIND_ENTROPY };

  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    for (int axis = -1; axis < 2; axis++)
      {
        g_autoptr(PiqObserver) obs = search_observer (kinds[k], axis, 300);
        g_autoptr(PiqObserver) copy = NULL;
        g_autoptr(GVariant) state = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree float *x = g_new (float, SEARCH_ROWS * SEARCH_COLS);
        g_autoptr(PiqTensor) t1 = search_batch (DIST_NORMAL, PIQ_DTYPE_BF16, SEARCH_ROWS,
                                                SEARCH_COLS, 11, x);
        g_autoptr(PiqTensor) t2 = search_batch (DIST_OUTLIERS, PIQ_DTYPE_F16, SEARCH_ROWS,
                                                SEARCH_COLS, 12, x);
        double s1[SEARCH_COLS], s2[SEARCH_COLS];
        gint64 z1[SEARCH_COLS], z2[SEARCH_COLS];

        g_assert_true (piq_observer_observe (obs, t1, &error));
        state = piq_observer_serialize (obs);
        copy = piq_observer_new_deserialize (state, &error);
        g_assert_no_error (error);
        assert_same_state (obs, copy);
        g_assert_true (piq_observer_observe (obs, t2, &error));
        g_assert_true (piq_observer_observe (copy, t2, &error));
        g_assert_no_error (error);
        assert_same_state (obs, copy);
        observer_params (obs, PIQ_DTYPE_INT8, FALSE, axis, s1, z1);
        observer_params (copy, PIQ_DTYPE_INT8, FALSE, axis, s2, z2);
        g_assert_cmpfloat (s1[0], ==, s2[0]);
        g_assert_cmpint (z1[0], ==, z2[0]);

        /* corrupted histograms: each must fail */
        for (int bad = 0; bad < 5; bad++)
          {
            g_autoptr(GVariant) good = piq_observer_serialize (obs);
            g_autoptr(GVariantDict) dict = NULL;
            g_autoptr(GVariant) h = NULL, dv = NULL, broken = NULL;
            g_autoptr(PiqObserver) none = NULL;
            g_autoptr(GError) local = NULL;
            g_autofree double *v = NULL;
            g_autoptr(GBytes) lo_b = piq_observer_get_max (obs);
            double hi = ((const double *) g_bytes_get_data (lo_b, NULL))[0];
            gsize n;
            int e;

            dv = g_variant_get_child_value (good, 0);
            dict = g_variant_dict_new (dv);
            h = g_variant_dict_lookup_value (dict, "histogram", G_VARIANT_TYPE ("ad"));
            {
              const double *hv = g_variant_get_fixed_array (h, &n, sizeof (double));
              v = g_memdup2 (hv, n * sizeof (double));
            }
            (void) frexp (hi, &e);
            switch (bad)
              {
              case 0: n--; break;                                 /* wrong length */
              case 1: v[300 + 1] += 0.5; break;                   /* not a count */
              case 2: v[2 * 300 - 1] += 1; break;                 /* beyond the range */
              case 3: v[0] = -1; break;                           /* negative */
              default:                                            /* max's bin empty */
                {
                  guint64 kb = (guint64) ldexp (hi * 300, -MAX (e, -126));
                  if (hi >= 0)
                    v[300 + kb] = 0;
                  else
                    n = 0;
                }
              }
            g_variant_dict_insert_value (dict, "histogram",
                                         g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, v, n,
                                                                    sizeof (double)));
            broken = g_variant_ref_sink (g_variant_new ("(@a{sv})", g_variant_dict_end (dict)));
            none = piq_observer_new_deserialize (broken, &local);
            g_assert_null (none);
            g_assert_error (local, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
          }
      }
}

/* NaN and ±Inf are rejected (the observer unchanged), as are empty batches,
 * formats the rule does not cover, and mismatched merges. */
static void
test_search_bad (void)
{
  static const PiqObserverKind kinds[] = { PIQ_OBSERVER_KIND_MSE, PIQ_OBSERVER_KIND_ENTROPY };
  static const double bad_values[3] = { NAN, INFINITY, -INFINITY };

  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      g_autoptr(PiqObserver) obs = search_observer (kinds[k], -1, 2048);
      g_autoptr(PiqObserver) chan = search_observer (kinds[k], 0, 2048);
      g_autoptr(PiqObserver) other_bins = search_observer (kinds[k], -1, 1024);
      g_autoptr(GVariant) before = NULL, after = NULL;
      g_autoptr(GError) error = NULL;
      g_autofree float *x = g_new (float, SEARCH_ROWS * SEARCH_COLS);
      g_autoptr(PiqTensor) t = search_batch (DIST_NORMAL, PIQ_DTYPE_F32, SEARCH_ROWS,
                                             SEARCH_COLS, 5, x);
      g_autoptr(PiqFormat) block = piq_format_new_preset ("mxfp4", &error);

      g_assert_no_error (error);
      /* nothing observed yet */
      {
        g_autoptr(PiqFormat) int8 = piq_format_new (PIQ_DTYPE_INT8);
        g_autoptr(PiqRecipe) r = piq_observer_compute_recipe (obs, int8, &error);
        g_assert_null (r);
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY);
        g_clear_error (&error);
      }
      g_assert_true (piq_observer_observe (obs, t, &error));
      g_assert_true (piq_observer_observe (other_bins, t, &error));
      g_assert_true (piq_observer_observe (chan, t, &error));
      g_assert_no_error (error);
      before = piq_observer_serialize (obs);
      for (gsize d = 0; d < G_N_ELEMENTS (float_dtypes); d++)
        for (int b = 0; b < 3; b++)
          {
            double v[4] = { 1.0, -2.0, bad_values[b], 0.5 };
            g_autoptr(PiqTensor) bt = values_tensor (float_dtypes[d], v, 4, 0, NULL);
            g_assert_false (piq_observer_observe (obs, bt, &error));
            g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE);
            g_clear_error (&error);
          }
      {
        /* f64 beyond binary32's range, in which the observers keep their data */
        double v[3] = { 1.0, 1e300, -2.0 };
        g_autoptr(PiqTensor) bt = values_tensor (PIQ_DTYPE_F64, v, 3, 0, NULL);
        g_assert_false (piq_observer_observe (obs, bt, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_NON_FINITE);
        g_clear_error (&error);
      }
      {
        guint64 shape[2] = { 0, 3 };
        g_autoptr(PiqTensor) e = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
        g_assert_no_error (error);
        g_assert_false (piq_observer_observe (obs, e, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_EMPTY);
        g_clear_error (&error);
      }
      /* merges: other bin counts, other kinds, other channel counts */
      g_assert_false (piq_observer_merge (obs, other_bins, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
      g_clear_error (&error);
      g_assert_false (piq_observer_merge (obs, chan, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_VALUE);
      g_clear_error (&error);
      {
        g_autoptr(PiqObserver) wide = search_observer (kinds[k], 0, 2048);
        double v[6] = { 1, 2, 3, 4, 5, 6 };
        guint64 shape[2] = { 3, 2 };
        g_autoptr(PiqTensor) t2 = values_tensor (PIQ_DTYPE_F32, v, 6, 2, shape);
        g_autoptr(GVariant) cb = piq_observer_serialize (chan), ca = NULL;
        g_assert_true (piq_observer_observe (wide, t2, &error));
        g_assert_false (piq_observer_merge (chan, wide, &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
        g_clear_error (&error);
        ca = piq_observer_serialize (chan);
        g_assert_true (g_variant_equal (cb, ca));
      }
      /* a block format's scales come from its blocks, not from an observer */
      {
        g_autoptr(PiqRecipe) r = piq_observer_compute_recipe (obs, block, &error);
        g_assert_null (r);
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
        g_clear_error (&error);
      }
      /* entropy: integer formats with fewer levels than bins only */
      if (kinds[k] == PIQ_OBSERVER_KIND_ENTROPY)
        {
          static const PiqDtype no[2] = { PIQ_DTYPE_FP8_E4M3, PIQ_DTYPE_INT16 };
          for (int i = 0; i < 2; i++)
            {
              g_autoptr(PiqFormat) f = piq_format_new_symmetric (no[i]);
              g_autoptr(PiqRecipe) r = piq_observer_compute_recipe (obs, f, &error);
              g_assert_null (r);
              g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
              g_clear_error (&error);
            }
        }
      after = piq_observer_serialize (obs);
      g_assert_true (g_variant_equal (before, after));
    }
}

/* The entropy searches of the channels run on threads: the parameters do not
 * depend on how many. */
static void
test_search_threads (void)
{
  PiqQuantizer *q = piq_quantizer_get_default ();
  guint saved = piq_quantizer_get_n_threads (q);
  g_autoptr(PiqObserver) obs = search_observer (PIQ_OBSERVER_KIND_ENTROPY, 1, 256);
  g_autofree float *x = g_new (float, 64 * 8);
  g_autoptr(PiqTensor) t = search_batch (DIST_HEAVY, PIQ_DTYPE_F32, 64, 8, 21, x);
  g_autoptr(GError) error = NULL;
  double s1[8], s4[8];
  gint64 z1[8], z4[8];

  g_assert_true (piq_observer_observe (obs, t, &error));
  g_assert_no_error (error);
  piq_quantizer_set_n_threads (q, 1);
  observer_params (obs, PIQ_DTYPE_INT8, FALSE, 1, s1, z1);
  piq_quantizer_set_n_threads (q, 4);
  observer_params (obs, PIQ_DTYPE_INT8, FALSE, 1, s4, z4);
  piq_quantizer_set_n_threads (q, saved);
  for (int c = 0; c < 8; c++)
    {
      g_assert_cmphex (o_f64_bits (s1[c]), ==, o_f64_bits (s4[c]));
      g_assert_cmpint (z1[c], ==, z4[c]);
    }
}

static GPtrArray *cases;

static void
add_cases (void)
{
  static const struct { guint n_dims; guint64 shape[3]; } shapes[] = {
    { 2, { 6, 37 } },
    { 3, { 4, 5, 9 } },
  };
  static const int axes2[] = { 0, 1, -1 }, axes3[] = { 0, 1, 2, -2 };

  cases = g_ptr_array_new ();
  for (int moving = 0; moving < 2; moving++)
    for (gsize d = 0; d < G_N_ELEMENTS (float_dtypes); d++)
      for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
        for (int strided = 0; strided < 2; strided++)
          {
            const int *axes = shapes[s].n_dims == 2 ? axes2 : axes3;
            gsize n_axes = shapes[s].n_dims == 2 ? G_N_ELEMENTS (axes2) : G_N_ELEMENTS (axes3);
            for (gsize a = 0; a <= n_axes; a++)
              {
                Case *k = g_new0 (Case, 1);
                char shape_name[64];
                k->layout.dtype = float_dtypes[d];
                k->layout.n_dims = shapes[s].n_dims;
                memcpy (k->layout.shape, shapes[s].shape, sizeof shapes[s].shape);
                k->layout.pad = strided ? 3 * o_dtype_bits (float_dtypes[d]) / 8 : 0;
                k->moving = moving;
                k->channel = a < n_axes;
                k->axis = a < n_axes ? axes[a] : 0;
                if (shapes[s].n_dims == 2)
                  g_snprintf (shape_name, sizeof shape_name, "%" G_GUINT64_FORMAT "x%"
                              G_GUINT64_FORMAT, shapes[s].shape[0], shapes[s].shape[1]);
                else
                  g_snprintf (shape_name, sizeof shape_name, "%" G_GUINT64_FORMAT "x%"
                              G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT, shapes[s].shape[0],
                              shapes[s].shape[1], shapes[s].shape[2]);
                k->name = k->channel
                  ? g_strdup_printf ("%s/%s/%s/%s/axis%d", moving ? "moving-average" : "min-max",
                                     o_dtype_name (float_dtypes[d]), shape_name,
                                     strided ? "strided" : "packed", k->axis)
                  : g_strdup_printf ("%s/%s/%s/%s/tensor", moving ? "moving-average" : "min-max",
                                     o_dtype_name (float_dtypes[d]), shape_name,
                                     strided ? "strided" : "packed");
                g_ptr_array_add (cases, k);
              }
          }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  add_cases ();
  for (guint i = 0; i < cases->len; i++)
    {
      Case *k = cases->pdata[i];
      g_autofree char *p1 = g_strdup_printf ("/observer/observe/%s", k->name);
      g_autofree char *p2 = g_strdup_printf ("/observer/merge/%s", k->name);
      g_autofree char *p3 = g_strdup_printf ("/observer/serialize/%s", k->name);
      g_test_add_data_func (p1, k, test_observe);
      g_test_add_data_func (p2, k, test_merge);
      g_test_add_data_func (p3, k, test_serialize);
    }
  g_test_add_func ("/observer/properties", test_properties);
  g_test_add_func ("/observer/histogram/negative-bin", test_histogram_negative_bin);
  g_test_add_func ("/observer/histogram/merge-ranges", test_histogram_merge_ranges);
  g_test_add_func ("/observer/engine-agrees", test_engine_agrees);
  g_test_add_func ("/observer/large", test_large);
  g_test_add_func ("/observer/negative-zero", test_negative_zero);
  g_test_add_func ("/observer/bad/batches", test_bad_batches);
  g_test_add_func ("/observer/bad/results", test_bad_results);
  g_test_add_func ("/observer/bad/merges", test_bad_merges);
  g_test_add_func ("/observer/bad/states", test_bad_states);
  g_test_add_func ("/observer/histogram/bins", test_histogram_bins);
  g_test_add_func ("/observer/histogram/rebin", test_histogram_rebin);
  g_test_add_func ("/observer/histogram/bad", test_histogram_bad);
  g_test_add_func ("/observer/percentile", test_percentile);
  g_test_add_func ("/observer/histogram/channels", test_histogram_channels);
  g_test_add_func ("/observer/threads", test_threads);
  g_test_add_func ("/observer/search/entropy", test_search_entropy);
  g_test_add_func ("/observer/search/mse", test_search_mse);
  g_test_add_func ("/observer/search/mse-outliers", test_search_mse_outliers);
  g_test_add_func ("/observer/search/merge", test_search_merge);
  g_test_add_func ("/observer/search/serialize", test_search_serialize);
  g_test_add_func ("/observer/search/bad", test_search_bad);
  g_test_add_func ("/observer/search/threads", test_search_threads);

  return g_test_run ();
}

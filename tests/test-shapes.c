/* test-shapes.c: shaped tensors, per-channel axes, per-block rows, strided
 * wraps, reshape, and aliasing of every operation
 *
 * Shapes: each case quantizes a shaped tensor and checks the codes, the
 * scales and the zero points against an oracle written here from the
 * definitions (docs/overview.md "Formats", docs/formats.md "Code formats and
 * their scales", docs/numerics.md): one scale (and, affine, one int32 zero
 * point) per index of the channel axis, or per block of block-size elements
 * along the last axis, a block never spanning two rows; each group's scale
 * comes from its own data by the format's rule (abs-max for symmetric
 * integers, min/max with include-zero for affine ones) computed in binary32
 * (test-oracle.h's o_params_*), stored as f32, and the elements are encoded
 * with the stored scale as per tensor (o_quantize_elem). Dequantization is
 * checked the same way. Every case runs with 1 and 4 threads, in tensor and
 * raw form.
 *
 * Aliasing (docs/overview.md "Aliasing"): for quantize, dequantize (SET and
 * ADD) and requantize (SET and ADD), raw and tensor forms, a destination
 * (codes, scales, zero points or floats) that overlaps a source fails with
 * PIQ_ERROR_OVERLAP and leaves every byte as it was; exact in-place
 * requantize is allowed and gives the out-of-place result. Each with 1 and 4
 * threads on 2^16 elements or more, so that the threads engage.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

/* A call that must succeed: its error's message first, then its result. */
#define ASSERT_CALL(call) \
  G_STMT_START { gboolean ok_ = (call); g_assert_no_error (error); g_assert_true (ok_); } G_STMT_END

/* private quantizers with 1 and 4 threads */
static PiqQuantizer *quantizers[2];
static const guint thread_counts[2] = { 1, 4 };

static gboolean
mem_equal (gconstpointer a, gconstpointer b, gsize size)
{
  return size == 0 || memcmp (a, b, size) == 0;
}

static guint64
shape_count (const guint64 *shape, guint n_dims)
{
  guint64 n = 1;
  for (guint d = 0; d < n_dims; d++)
    n *= shape[d];
  return n;
}

/* ---- formats ---- */

/* A format built from its properties, each set only where it applies (a
 * non-default option that does not apply is an error). */
static PiqFormat *
make_format (PiqDtype dtype, PiqGranularity gran, int axis, guint block, gboolean symmetric)
{
  PiqFormat *f = NULL;
  g_autoptr (GError) error = NULL;

  switch (gran)
    {
    case PIQ_GRANULARITY_TENSOR:
      f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "symmetric", symmetric, NULL);
      break;
    case PIQ_GRANULARITY_CHANNEL:
      f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "granularity", gran, "axis", axis,
                        "symmetric", symmetric, NULL);
      break;
    case PIQ_GRANULARITY_BLOCK:
      f = g_object_new (PIQ_TYPE_FORMAT, "dtype", dtype, "granularity", gran, "block-size", block,
                        "symmetric", symmetric, NULL);
      break;
    }
  g_assert_nonnull (f);
  ASSERT_CALL (piq_format_validate (f, &error));
  g_assert_cmpint (piq_format_get_dtype (f), ==, dtype);
  g_assert_cmpint (piq_format_get_granularity (f), ==, gran);
  g_assert_cmpint (piq_format_get_symmetric (f), ==, symmetric);
  g_assert_cmpint (piq_format_has_zero_points (f), ==, !symmetric);
  if (gran == PIQ_GRANULARITY_CHANNEL)
    g_assert_cmpint (piq_format_get_axis (f), ==, axis);
  if (gran == PIQ_GRANULARITY_BLOCK)
    g_assert_cmpuint (piq_format_get_block_size (f), ==, block);
  g_assert_cmpint (piq_format_get_scale_dtype (f), ==, PIQ_DTYPE_F32);
  return f;
}

/* ---- the oracle ---- */

/* The group (channel or block) of each element, from the definitions. */
typedef struct {
  guint64  n;
  guint64  n_groups;
  guint64 *group;        /* per element */
} OGroups;

static void
o_groups_init (OGroups *g, const guint64 *shape, guint n_dims, PiqGranularity gran, int axis, guint block)
{
  guint64 n = shape_count (shape, n_dims);

  g->n = n;
  g->group = g_new (guint64, MAX (n, 1));
  if (gran == PIQ_GRANULARITY_TENSOR)
    {
      g->n_groups = 1;
      for (guint64 i = 0; i < n; i++)
        g->group[i] = 0;
    }
  else if (gran == PIQ_GRANULARITY_CHANNEL)
    {
      guint a = axis < 0 ? (guint) ((int) n_dims + axis) : (guint) axis;
      guint64 inner = 1;            /* elements per step of the axis */
      for (guint d = a + 1; d < n_dims; d++)
        inner *= shape[d];
      g->n_groups = shape[a];
      for (guint64 i = 0; i < n; i++)
        g->group[i] = (i / inner) % shape[a];
    }
  else
    {
      guint64 cols = shape[n_dims - 1];
      guint64 per_row = (cols + block - 1) / block;       /* ceil: a ragged last block per row */
      guint64 rows = cols > 0 ? n / cols : 0;
      g->n_groups = rows * per_row;
      for (guint64 i = 0; i < n; i++)
        g->group[i] = (i / cols) * per_row + (i % cols) / block;
    }
}

static void
o_groups_clear (OGroups *g)
{
  g_free (g->group);
}

/* Expected codes, f32 scales and int32 zero points of quantizing `src`
 * (f32 or bf16) with `format` and the format's rule, rounding by `mode`
 * (with `seed`); and the floats that dequantizing them gives. */
typedef struct {
  gsize   codes_size;
  guint8 *codes;
  guint64 n_groups;
  float  *scales;
  gint32 *zero_points;  /* NULL for symmetric formats */
  float  *dequantized;
} OExpected;

static void
o_expected_compute (OExpected *e, PiqFormat *format, PiqRoundMode mode, guint64 seed, PiqDtype src_dtype,
                    const guint8 *src, const guint64 *shape, guint n_dims)
{
  PiqDtype q = piq_format_get_dtype (format);
  gboolean symmetric = piq_format_get_symmetric (format);
  OGroups g;
  float *lo, *hi, *amax;

  o_groups_init (&g, shape, n_dims, piq_format_get_granularity (format), piq_format_get_axis (format),
                 piq_format_get_block_size (format));
  e->n_groups = g.n_groups;
  e->codes_size = o_dtype_nbytes (q, g.n);
  e->codes = g_malloc0 (e->codes_size + 1);
  e->scales = g_new0 (float, g.n_groups);
  e->zero_points = symmetric ? NULL : g_new0 (gint32, g.n_groups);
  e->dequantized = g_new0 (float, MAX (g.n, 1));
  lo = g_new (float, g.n_groups);
  hi = g_new (float, g.n_groups);
  amax = g_new (float, g.n_groups);
  for (guint64 k = 0; k < g.n_groups; k++)
    {
      lo[k] = INFINITY;
      hi[k] = -INFINITY;
      amax[k] = 0;
    }
  /* each group's range from its own (finite) data, in binary32 */
  for (guint64 i = 0; i < g.n; i++)
    {
      float x = (float) o_read_float (src_dtype, src, i);
      guint64 k = g.group[i];
      if (!isfinite (x))
        continue;
      lo[k] = MIN (lo[k], x);
      hi[k] = MAX (hi[k], x);
      amax[k] = MAX (amax[k], fabsf (x));
    }
  for (guint64 k = 0; k < g.n_groups; k++)
    {
      float s;
      OInt zp;
      if (symmetric)
        o_params_abs_max (q, amax[k], &s, &zp);
      else
        {
          o_params_min_max (q, lo[k], hi[k], TRUE, &s, &zp);
          e->zero_points[k] = (gint32) zp;
        }
      e->scales[k] = s;
    }
  /* each element with its group's stored (f32) scale, as per tensor */
  for (guint64 i = 0; i < g.n; i++)
    {
      guint64 k = g.group[i];
      gint64 zp = symmetric ? (gint64) (o_dtype_info (q)->is_signed ? 0 : (o_qmin (q) + o_qmax (q) + 1) / 2)
                            : e->zero_points[k];
      OQuant o;
      OInt v;
      /* stochastic rounding hashes the element's index in the whole tensor */
      o_quant_init (&o, q, (double) e->scales[k], zp, mode, seed);
      v = o_quantize_elem (&o, src_dtype, src, i);
      o_pack (q, e->codes, i, v);
      o_dequantize_elem (PIQ_DTYPE_F32, (guint8 *) e->dequantized, i, v, zp, (double) e->scales[k],
                         PIQ_REDUCE_SET);
    }
  g_free (lo);
  g_free (hi);
  g_free (amax);
  o_groups_clear (&g);
}

static void
o_expected_clear (OExpected *e)
{
  g_free (e->codes);
  g_free (e->scales);
  g_free (e->zero_points);
  g_free (e->dequantized);
}

/* ---- data ---- */

/* Gaussian data whose magnitude and offset vary along every axis, so that
 * channels and blocks get different scales; the index-1 slice of the first
 * axis is all zero (a group of zeros gets the eps scale). */
static guint8 *
gen_data (PiqDtype dtype, const guint64 *shape, guint n_dims, guint64 seed)
{
  guint64 n = shape_count (shape, n_dims);
  guint64 inner0 = n / MAX (shape[0], 1);
  guint8 *buf = g_malloc0 (o_dtype_nbytes (dtype, n) + 1);
  ORng rng;

  o_rng_init (&rng, seed);
  for (guint64 i = 0; i < n; i++)
    {
      guint64 first = i / MAX (inner0, 1), last = i % shape[n_dims - 1];
      double mag = 1.0 + (double) ((first * 7 + last * 3) % 11);
      double off = (double) ((gint64) (last % 5) - 2) * 0.3;
      double x = (shape[0] > 2 && first == 1) ? 0.0 : o_rng_normal (&rng) * mag + off;
      o_write_float (dtype, buf, i, x);
    }
  return buf;
}

/* ---- checks ---- */

static gboolean
check_quantized (const char *what, guint threads, PiqTensor *qt, PiqFormat *format, const OExpected *e,
                 const guint64 *shape, guint n_dims)
{
  gsize size = 0;
  const guint8 *codes = piq_tensor_get_data (qt, &size);
  g_autoptr (GBytes) scales = piq_tensor_get_scales (qt);
  g_autoptr (GBytes) zps = piq_tensor_get_zero_points (qt);
  PiqDtype q = piq_format_get_dtype (format);
  guint got_dims = 0;
  const guint64 *got_shape = piq_tensor_get_shape (qt, &got_dims);

  if (got_dims != n_dims || memcmp (got_shape, shape, n_dims * sizeof (guint64)) != 0)
    {
      g_test_fail_printf ("%s, %u threads: the quantized tensor has %u dimensions, not %u, or another shape",
                          what, threads, got_dims, n_dims);
      return FALSE;
    }
  if (piq_tensor_get_format (qt) == NULL || !piq_format_equal (piq_tensor_get_format (qt), format))
    {
      g_test_fail_printf ("%s, %u threads: the quantized tensor does not carry the format", what, threads);
      return FALSE;
    }
  if (size != e->codes_size || !mem_equal (codes, e->codes, size))
    {
      for (guint64 i = 0; size == e->codes_size && i < shape_count (shape, n_dims); i++)
        if (o_unpack (q, codes, i) != o_unpack (q, e->codes, i))
          {
            char es[48], gs[48];
            g_test_fail_printf ("%s, %u threads: code %" G_GUINT64_FORMAT " is %s, expected %s", what, threads, i,
                                o_int_str (o_unpack (q, codes, i), gs), o_int_str (o_unpack (q, e->codes, i), es));
            return FALSE;
          }
      g_test_fail_printf ("%s, %u threads: %" G_GSIZE_FORMAT " code bytes, expected %" G_GSIZE_FORMAT
                          " (or the unused bits differ)", what, threads, size, e->codes_size);
      return FALSE;
    }
  if (scales == NULL || g_bytes_get_size (scales) != e->n_groups * sizeof (float))
    {
      g_test_fail_printf ("%s, %u threads: %" G_GSIZE_FORMAT " scale bytes, expected %" G_GUINT64_FORMAT
                          " scales (rows x ceil(cols / block) for blocks)", what, threads,
                          scales != NULL ? g_bytes_get_size (scales) : 0, e->n_groups);
      return FALSE;
    }
  for (guint64 k = 0; k < e->n_groups; k++)
    {
      float s;
      memcpy (&s, (const guint8 *) g_bytes_get_data (scales, NULL) + k * sizeof (float), sizeof s);
      if (o_f32_bits (s) != o_f32_bits (e->scales[k]))
        {
          g_test_fail_printf ("%s, %u threads: scale %" G_GUINT64_FORMAT " is %.9g, expected %.9g (from its "
                              "own data)", what, threads, k, s, e->scales[k]);
          return FALSE;
        }
    }
  if (e->zero_points == NULL)
    {
      /* symmetric: no zero points */
      if (zps != NULL && g_bytes_get_size (zps) != 0)
        {
          g_test_fail_printf ("%s, %u threads: a symmetric format has %" G_GSIZE_FORMAT " bytes of zero points",
                              what, threads, g_bytes_get_size (zps));
          return FALSE;
        }
    }
  else
    {
      if (zps == NULL || g_bytes_get_size (zps) != e->n_groups * sizeof (gint32))
        {
          g_test_fail_printf ("%s, %u threads: %" G_GSIZE_FORMAT " zero-point bytes, expected %" G_GUINT64_FORMAT
                              " int32", what, threads, zps != NULL ? g_bytes_get_size (zps) : 0, e->n_groups);
          return FALSE;
        }
      for (guint64 k = 0; k < e->n_groups; k++)
        {
          gint32 z;
          memcpy (&z, (const guint8 *) g_bytes_get_data (zps, NULL) + k * sizeof z, sizeof z);
          if (z != e->zero_points[k])
            {
              g_test_fail_printf ("%s, %u threads: zero point %" G_GUINT64_FORMAT " is %d, expected %d", what,
                                  threads, k, z, e->zero_points[k]);
              return FALSE;
            }
        }
    }
  return TRUE;
}

static gboolean
check_f32 (const char *what, guint threads, const float *expected, const float *got, guint64 n)
{
  gint64 bad = o_compare_floats (PIQ_DTYPE_F32, (const guint8 *) expected, (const guint8 *) got, n);

  if (bad < 0)
    return TRUE;
  g_test_fail_printf ("%s, %u threads: element %" G_GINT64_FORMAT " is %.9g, expected %.9g", what, threads, bad,
                      got[bad], expected[bad]);
  return FALSE;
}

/* ---- shape cases ---- */

typedef struct {
  const char     *name;
  guint           n_dims;
  guint64         shape[3];
  PiqGranularity  gran;
  int             axis;
  guint           block;
  PiqDtype        qdtype;
  gboolean        symmetric;
  PiqDtype        src;
  PiqRoundMode    mode;
} ShapeCase;

#define SEED G_GUINT64_CONSTANT (0x5EEDF00D)

/* NULL (the format's rule, nearest) or a stochastic recipe with SEED */
static PiqRecipe *
mode_recipe (PiqRoundMode mode)
{
  PiqRecipe *r;
  if (mode == PIQ_ROUND_NEAREST)
    return NULL;
  r = piq_recipe_new ();
  piq_recipe_set_round_mode (r, mode);
  piq_recipe_set_seed (r, SEED);
  return r;
}

#define CH PIQ_GRANULARITY_CHANNEL
#define BL PIQ_GRANULARITY_BLOCK

static const ShapeCase shape_cases[] = {
  /* 2-D per-channel, axis 0 (rows) and axis 1 (columns) */
  { "per-channel/axis0/int8/37x29/affine", 2, { 37, 29 },
    CH, 0, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis0/uint4/37x29/symmetric", 2, { 37, 29 },
    CH, 0, 0, PIQ_DTYPE_UINT4, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/int8/37x29/affine", 2, { 37, 29 },
    CH, 1, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/int4/37x29/symmetric", 2, { 37, 29 },
    CH, 1, 0, PIQ_DTYPE_INT4, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/int8/37x29/affine/bf16", 2, { 37, 29 },
    CH, 1, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_BF16, PIQ_ROUND_NEAREST },
  /* negative axes count from the end */
  { "per-channel/axis-1/uint8/37x29/affine", 2, { 37, 29 },
    CH, -1, 0, PIQ_DTYPE_UINT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis-2/int8/37x29/symmetric", 2, { 37, 29 },
    CH, -2, 0, PIQ_DTYPE_INT8, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  /* 3-D */
  { "per-channel/axis1/int8/5x7x9/affine", 3, { 5, 7, 9 },
    CH, 1, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/uint8/5x7x9/symmetric", 3, { 5, 7, 9 },
    CH, 1, 0, PIQ_DTYPE_UINT8, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis0/int8/5x7x9/affine", 3, { 5, 7, 9 },
    CH, 0, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis2/int16/5x7x9/symmetric", 3, { 5, 7, 9 },
    CH, 2, 0, PIQ_DTYPE_INT16, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  /* 1-D per channel: one element per channel */
  { "per-channel/axis0/int8/40/affine", 1, { 40 },
    CH, 0, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  /* per block, ragged: blocks along the last axis, never spanning rows */
  { "per-block/16/int8/13x50/affine", 2, { 13, 50 },
    BL, 0, 16, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/32/uint4/9x33/symmetric", 2, { 9, 33 },
    BL, 0, 32, PIQ_DTYPE_UINT4, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/64/int8/3x200/symmetric", 2, { 3, 200 },
    BL, 0, 64, PIQ_DTYPE_INT8, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/64/int8/4x128/affine", 2, { 4, 128 },
    BL, 0, 64, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/8/int8/3x4x20/affine", 3, { 3, 4, 20 },
    BL, 0, 8, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/16/int2/50/affine", 1, { 50 }, BL, 0, 16, PIQ_DTYPE_INT2, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/16/int8/13x50/affine/bf16", 2, { 13, 50 },
    BL, 0, 16, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_BF16, PIQ_ROUND_NEAREST },
  /* 1xK and Nx1 */
  { "per-channel/axis0/int8/1x100/affine", 2, { 1, 100 },
    CH, 0, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/int8/1x100/symmetric", 2, { 1, 100 },
    CH, 1, 0, PIQ_DTYPE_INT8, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/32/int4/1x100/affine", 2, { 1, 100 },
    BL, 0, 32, PIQ_DTYPE_INT4, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis0/int8/100x1/affine", 2, { 100, 1 },
    CH, 0, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/uint8/100x1/affine", 2, { 100, 1 },
    CH, 1, 0, PIQ_DTYPE_UINT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/32/int8/100x1/symmetric", 2, { 100, 1 },
    BL, 0, 32, PIQ_DTYPE_INT8, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  /* large enough (>= 2^16 elements) for the threads to split them */
  { "per-channel/axis1/int8/256x300/affine", 2, { 256, 300 },
    CH, 1, 0, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis0/int4/300x250/symmetric", 2, { 300, 250 },
    CH, 0, 0, PIQ_DTYPE_INT4, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/uint8/16x64x70/affine", 3, { 16, 64, 70 },
    CH, 1, 0, PIQ_DTYPE_UINT8, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/64/uint4/300x250/affine", 2, { 300, 250 },
    BL, 0, 64, PIQ_DTYPE_UINT4, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/32/int8/1x70001/symmetric", 2, { 1, 70001 },
    BL, 0, 32, PIQ_DTYPE_INT8, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  /* ragged sub-byte rows that end on a whole byte */
  { "per-block/32/uint4/9x34/symmetric", 2, { 9, 34 },
    BL, 0, 32, PIQ_DTYPE_UINT4, TRUE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  { "per-block/16/int2/6x36/affine", 2, { 6, 36 },
    BL, 0, 16, PIQ_DTYPE_INT2, FALSE, PIQ_DTYPE_F32, PIQ_ROUND_NEAREST },
  /* stochastic rounding: the hash takes each element's index in the tensor */
  { "per-channel/axis1/int4/37x29/affine/stochastic", 2, { 37, 29 }, CH, 1, 0, PIQ_DTYPE_INT4, FALSE, PIQ_DTYPE_F32,
    PIQ_ROUND_STOCHASTIC },
  { "per-channel/axis1/int8/256x300/symmetric/stochastic", 2, { 256, 300 }, CH, 1, 0, PIQ_DTYPE_INT8, TRUE,
    PIQ_DTYPE_F32, PIQ_ROUND_STOCHASTIC },
  { "per-block/16/int8/13x50/affine/stochastic", 2, { 13, 50 }, BL, 0, 16, PIQ_DTYPE_INT8, FALSE, PIQ_DTYPE_F32,
    PIQ_ROUND_STOCHASTIC },
  { "per-block/64/uint4/300x250/affine/stochastic", 2, { 300, 250 }, BL, 0, 64, PIQ_DTYPE_UINT4, FALSE,
    PIQ_DTYPE_F32, PIQ_ROUND_STOCHASTIC },
};

static void
test_shape (gconstpointer data)
{
  const ShapeCase *c = data;
  guint64 n = shape_count (c->shape, c->n_dims);
  g_autoptr (PiqFormat) format = make_format (c->qdtype, c->gran, c->axis, c->block, c->symmetric);
  g_autoptr (PiqRecipe) recipe = mode_recipe (c->mode);
  g_autofree guint8 *src = gen_data (c->src, c->shape, c->n_dims, n * 131 + c->qdtype);
  gsize src_size = o_dtype_nbytes (c->src, n);
  gsize codes_size = 0, scales_size = 0, zps_size = 0;
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) st = NULL;
  OExpected e;

  o_expected_compute (&e, format, c->mode, SEED, c->src, src, c->shape, c->n_dims);
  if (c->gran == PIQ_GRANULARITY_BLOCK)
    {
      guint64 cols = c->shape[c->n_dims - 1];
      g_assert_cmpuint (e.n_groups, ==, (n / cols) * ((cols + c->block - 1) / c->block));
    }

  /* the sizes the format gives for this shape (a refused shape fails this
   * case only, so that the others still run) */
  if (!piq_format_get_sizes (format, c->shape, c->n_dims, &codes_size, &scales_size, &zps_size, &error))
    {
      g_test_fail_printf ("piq_format_get_sizes refused the shape: %s", error != NULL ? error->message : "no error");
      o_expected_clear (&e);
      return;
    }
  g_assert_no_error (error);
  g_assert_cmpuint (codes_size, ==, e.codes_size);
  g_assert_cmpuint (scales_size, ==, e.n_groups * sizeof (float));
  g_assert_cmpuint (zps_size, ==, c->symmetric ? 0 : e.n_groups * sizeof (gint32));

  st = piq_tensor_new_shaped (c->src, c->shape, c->n_dims, &error);
  g_assert_no_error (error);
  ASSERT_CALL (piq_tensor_set_data (st, src, src_size, &error));
  g_assert_cmpuint (piq_tensor_get_n_elements (st), ==, n);
  g_assert_cmpuint (piq_tensor_get_n_dims (st), ==, c->n_dims);
  g_assert_cmpuint (piq_tensor_get_dim (st, -1), ==, c->shape[c->n_dims - 1]);
  g_assert_true (piq_tensor_is_contiguous (st));

  for (guint t = 0; t < G_N_ELEMENTS (quantizers); t++)
    {
      PiqQuantizer *q = quantizers[t];
      g_autoptr (PiqTensor) qt = NULL;
      g_autoptr (PiqTensor) qt2 = NULL;
      g_autoptr (PiqTensor) dq = NULL;
      g_autofree guint8 *raw_codes = g_malloc (codes_size + 1);
      g_autofree guint8 *raw_scales = g_malloc (scales_size + 1);
      g_autofree guint8 *raw_zps = g_malloc (zps_size + 1);
      g_autofree float *raw_dq = g_new (float, n + 1);
      g_autoptr (GBytes) scales = NULL;
      g_autoptr (GBytes) zps = NULL;
      gsize size = 0;

      /* tensor forms: quantize_new, and quantize into new_quantized */
      qt = piq_quantizer_quantize_new (q, format, recipe, st, &error);
      g_assert_no_error (error);
      g_assert_nonnull (qt);
      if (c->mode == PIQ_ROUND_STOCHASTIC)
        g_assert_cmphex (piq_tensor_get_seed (qt), ==, SEED);
      if (!check_quantized ("quantize_new", thread_counts[t], qt, format, &e, c->shape, c->n_dims))
        break;
      qt2 = piq_tensor_new_quantized (format, c->shape, c->n_dims, &error);
      g_assert_no_error (error);
      ASSERT_CALL (piq_quantizer_quantize (q, recipe, st, qt2, &error));
      if (!check_quantized ("quantize", thread_counts[t], qt2, format, &e, c->shape, c->n_dims))
        break;

      dq = piq_quantizer_dequantize_new (q, qt, PIQ_DTYPE_F32, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (piq_tensor_get_n_dims (dq), ==, c->n_dims);
      g_assert_cmpuint (piq_tensor_get_n_elements (dq), ==, n);
      if (!check_f32 ("dequantize_new", thread_counts[t], e.dequantized, piq_tensor_get_data (dq, NULL), n))
        break;

      /* raw forms: the same bytes */
      memset (raw_codes, 0xA5, codes_size + 1);
      memset (raw_scales, 0xA5, scales_size + 1);
      memset (raw_zps, 0xA5, zps_size + 1);
      ASSERT_CALL (piq_quantizer_quantize_raw (q, format, recipe, c->src, src, c->shape, c->n_dims,
                                                 raw_codes, codes_size, raw_scales, scales_size,
                                                 zps_size > 0 ? raw_zps : NULL, zps_size, NULL, NULL, &error));
      g_assert_cmpmem (raw_codes, codes_size, e.codes, e.codes_size);
      scales = piq_tensor_get_scales (qt);
      g_assert_cmpmem (raw_scales, scales_size, g_bytes_get_data (scales, &size), size);
      if (zps_size > 0)
        {
          zps = piq_tensor_get_zero_points (qt);
          g_assert_cmpmem (raw_zps, zps_size, g_bytes_get_data (zps, &size), size);
        }
      g_assert_cmpuint (raw_codes[codes_size], ==, 0xA5);
      g_assert_cmpuint (raw_scales[scales_size], ==, 0xA5);
      g_assert_cmpuint (raw_zps[zps_size], ==, 0xA5);

      memset (raw_dq, 0xA5, (n + 1) * sizeof (float));
      ASSERT_CALL (piq_quantizer_dequantize_raw (q, format, 1.0, 0, raw_codes, codes_size, c->shape, c->n_dims,
                                                   raw_scales, scales_size, zps_size > 0 ? raw_zps : NULL, zps_size,
                                                   PIQ_DTYPE_F32, raw_dq, n * sizeof (float), PIQ_REDUCE_SET,
                                                   &error));
      if (!check_f32 ("dequantize_raw", thread_counts[t], e.dequantized, raw_dq, n))
        break;
      g_assert_cmphex (o_f32_bits (raw_dq[n]), ==, 0xA5A5A5A5);
    }
  o_expected_clear (&e);
}

/* An axis the tensor does not have is an error, never a default. */
static void
test_axis_out_of_range (void)
{
  guint64 shape[2] = { 4, 6 };
  g_autoptr (PiqFormat) f2 = make_format (PIQ_DTYPE_INT8, CH, 2, 0, FALSE);
  g_autoptr (PiqFormat) fm3 = make_format (PIQ_DTYPE_INT8, CH, -3, 0, FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) st = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
  PiqFormat *formats[2] = { f2, fm3 };

  g_assert_no_error (error);
  for (guint k = 0; k < 2; k++)
    {
      g_autoptr (PiqTensor) qt = piq_quantizer_quantize_new (quantizers[0], formats[k], NULL, st, &error);
      g_assert_null (qt);
      g_assert_nonnull (error);
      g_assert_true (error->domain == PIQ_ERROR);
      g_test_message ("axis %d on a 2-D tensor: %s (code %d)", piq_format_get_axis (formats[k]), error->message,
                      error->code);
      g_clear_error (&error);
      qt = piq_tensor_new_quantized (formats[k], shape, 2, &error);
      g_assert_null (qt);
      g_assert_true (error->domain == PIQ_ERROR);
      g_clear_error (&error);
    }
}

/* A shape whose nonzero extents' product overflows is refused whatever the
 * order, a 0 extent included ([8, 2^63, 0] and [0, 8, 2^63] alike, as numpy
 * does); one whose product fits holds no element when an extent is 0. */
static void
test_empty_extent_order (void)
{
  static const guint64 refused[][3] = {
    { 8, G_GUINT64_CONSTANT (1) << 63, 0 },
    { 0, 8, G_GUINT64_CONSTANT (1) << 63 },
    { G_GUINT64_CONSTANT (1) << 63, 0, 8 },
  };
  static const guint64 empty[][3] = {
    { 0, G_GUINT64_CONSTANT (1) << 63, 1 },
    { G_GUINT64_CONSTANT (1) << 40, 0, G_GUINT64_CONSTANT (1) << 20 },
  };
  g_autoptr (PiqFormat) f = make_format (PIQ_DTYPE_INT8, PIQ_GRANULARITY_BLOCK, 0, 32, FALSE);

  for (guint i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      g_autoptr (GError) error = NULL;
      gsize c = 7, sc = 7, z = 7;
      g_assert_false (piq_format_get_sizes (f, refused[i], 3, &c, &sc, &z, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
      g_assert_cmpuint (c, ==, 7);
      g_clear_error (&error);
      g_assert_null (piq_tensor_new_shaped (PIQ_DTYPE_F32, refused[i], 3, &error));
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERFLOW);
    }
  for (guint i = 0; i < G_N_ELEMENTS (empty); i++)
    {
      g_autoptr (GError) error = NULL;
      gsize c = 7, sc = 7, z = 7;
      g_assert_true (piq_format_get_sizes (f, empty[i], 3, &c, &sc, &z, &error));
      g_assert_no_error (error);
      g_assert_cmpuint (c + sc + z, ==, 0);
    }
}

/* ---- strided wraps ---- */

#define BIG_ROWS 40
#define BIG_COLS 100

typedef struct {
  const char    *name;
  PiqGranularity gran;
  int            axis;
  guint          block;
  PiqDtype       qdtype;
  gboolean       symmetric;
  PiqRoundMode   mode;
} StridedCase;

static const StridedCase strided_cases[] = {
  { "per-channel/axis0/int8/affine", CH, 0, 0, PIQ_DTYPE_INT8, FALSE, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/int8/affine", CH, 1, 0, PIQ_DTYPE_INT8, FALSE, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/uint4/symmetric", CH, 1, 0, PIQ_DTYPE_UINT4, TRUE, PIQ_ROUND_NEAREST },
  { "per-block/16/int8/affine", BL, 0, 16, PIQ_DTYPE_INT8, FALSE, PIQ_ROUND_NEAREST },
  { "per-block/32/int4/symmetric", BL, 0, 32, PIQ_DTYPE_INT4, TRUE, PIQ_ROUND_NEAREST },
  { "per-channel/axis1/int8/affine/stochastic", CH, 1, 0, PIQ_DTYPE_INT8, FALSE, PIQ_ROUND_STOCHASTIC },
  { "per-block/16/int8/symmetric/stochastic", BL, 0, 16, PIQ_DTYPE_INT8, TRUE, PIQ_ROUND_STOCHASTIC },
};

static gboolean
same_quantized (PiqTensor *a, PiqTensor *b)
{
  gsize sa = 0, sb = 0;
  gconstpointer da = piq_tensor_get_data (a, &sa), db = piq_tensor_get_data (b, &sb);
  g_autoptr (GBytes) scales_a = piq_tensor_get_scales (a);
  g_autoptr (GBytes) scales_b = piq_tensor_get_scales (b);
  g_autoptr (GBytes) zps_a = piq_tensor_get_zero_points (a);
  g_autoptr (GBytes) zps_b = piq_tensor_get_zero_points (b);

  return sa == sb && mem_equal (da, db, sa) &&
         ((scales_a == NULL && scales_b == NULL) ||
          (scales_a != NULL && scales_b != NULL && g_bytes_equal (scales_a, scales_b))) &&
         ((zps_a == NULL && zps_b == NULL) || (zps_a != NULL && zps_b != NULL && g_bytes_equal (zps_a, zps_b)));
}

/* TRUE if only the bytes of the rows (`rows` of `row_bytes` every `stride`
 * bytes from `start`) differ between `mem` and `before`. */
static gboolean
only_rows_written (const char *what, guint threads, const guint8 *mem, const guint8 *before, gsize total,
                   gsize start, gsize stride, guint64 rows, gsize row_bytes)
{
  for (gsize b = 0; b < total; b++)
    {
      gboolean inside = b >= start && (b - start) / stride < rows && (b - start) % stride < row_bytes;
      if (!inside && mem[b] != before[b])
        {
          g_test_fail_printf ("%s, %u threads: wrote byte %" G_GSIZE_FORMAT " outside its rows", what, threads, b);
          return FALSE;
        }
    }
  return TRUE;
}

/* A 20x61 sub-matrix at (3, 7) of a 40x100 f32 buffer, wrapped with a row
 * stride (new_for_address and new_strided), quantizes as a packed copy does,
 * and dequantizes and requantizes into a strided destination writing only
 * the rows' elements. */
static void
test_strided (gconstpointer data)
{
  const StridedCase *c = data;
  const gsize r0 = 3, c0 = 7, stride = BIG_COLS * sizeof (float);
  guint64 shape[2] = { 20, 61 }, big_shape[2] = { BIG_ROWS, BIG_COLS };
  guint64 n = shape[0] * shape[1];
  g_autoptr (PiqFormat) format = make_format (c->qdtype, c->gran, c->axis, c->block, c->symmetric);
  g_autoptr (PiqRecipe) recipe = mode_recipe (c->mode);
  g_autofree guint8 *big = gen_data (PIQ_DTYPE_F32, big_shape, 2, 0x5EED);
  g_autofree float *packed = g_new (float, n);
  const guint8 *sub = big + (r0 * BIG_COLS + c0) * sizeof (float);
  gsize sub_size = BIG_ROWS * stride - (r0 * BIG_COLS + c0) * sizeof (float);
  g_autoptr (GBytes) big_bytes = g_bytes_new_static (big, BIG_ROWS * stride);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) pt = NULL;
  PiqTensor *views[2];
  OExpected e;

  for (guint64 r = 0; r < shape[0]; r++)
    memcpy (packed + r * shape[1], sub + r * stride, shape[1] * sizeof (float));
  pt = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
  g_assert_no_error (error);
  ASSERT_CALL (piq_tensor_set_data (pt, (const guint8 *) packed, n * sizeof (float), &error));
  o_expected_compute (&e, format, c->mode, SEED, PIQ_DTYPE_F32, (const guint8 *) packed, shape, 2);

  views[0] = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 2, (guintptr) sub, sub_size, stride, FALSE, &error);
  g_assert_no_error (error);
  views[1] = piq_tensor_new_strided (PIQ_DTYPE_F32, shape, 2, big_bytes, (r0 * BIG_COLS + c0) * sizeof (float),
                                     stride, &error);
  g_assert_no_error (error);

  for (guint v = 0; v < 2; v++)
    {
      g_assert_cmpuint (piq_tensor_get_row_stride (views[v]), ==, stride);
      g_assert_false (piq_tensor_is_contiguous (views[v]));
      g_assert_cmpuint (piq_tensor_get_n_elements (views[v]), ==, n);
      g_assert_cmpuint (piq_tensor_get_dim (views[v], 0), ==, shape[0]);
      g_assert_cmpuint (piq_tensor_get_dim (views[v], 1), ==, shape[1]);
      g_assert_cmpfloat (piq_tensor_get_value (views[v], shape[1] + 2), ==, packed[shape[1] + 2]);

      for (guint t = 0; t < G_N_ELEMENTS (quantizers); t++)
        {
          PiqQuantizer *q = quantizers[t];
          const char *what = v == 0 ? "new_for_address" : "new_strided";
          g_autoptr (PiqTensor) from_view = piq_quantizer_quantize_new (q, format, recipe, views[v], &error);
          g_autoptr (PiqTensor) from_packed = NULL;
          g_autofree guint8 *dst_mem = g_malloc (BIG_ROWS * stride);
          g_autofree guint8 *dst_before = NULL;
          g_autoptr (PiqTensor) dst = NULL;
          g_autoptr (PiqTensor) ref = NULL;

          if (from_view == NULL)
            {
              g_test_fail_printf ("%s, %u threads: quantize_new failed: %s", what, thread_counts[t],
                                  error != NULL ? error->message : "no error");
              goto out;
            }
          g_assert_no_error (error);
          from_packed = piq_quantizer_quantize_new (q, format, recipe, pt, &error);
          g_assert_no_error (error);
          if (!check_quantized (what, thread_counts[t], from_view, format, &e, shape, 2))
            goto out;
          g_assert_true (same_quantized (from_view, from_packed));

          /* dequantize (SET, then ADD) into a strided destination: only the
           * rows' elements change */
          memset (dst_mem, 0x3C, BIG_ROWS * stride);    /* 0x3C3C3C3C = 0.0115 */
          dst_before = g_memdup2 (dst_mem, BIG_ROWS * stride);
          dst = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 2, (guintptr) (dst_mem + 2 * stride + 4),
                                            BIG_ROWS * stride - 2 * stride - 4, stride, TRUE, &error);
          g_assert_no_error (error);
          ref = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
          g_assert_no_error (error);
          for (PiqReduceOp op = PIQ_REDUCE_SET; op <= PIQ_REDUCE_ADD; op++)
            {
              ASSERT_CALL (piq_quantizer_dequantize (q, from_view, dst, op, &error));
              ASSERT_CALL (piq_quantizer_dequantize (q, from_packed, ref, op, &error));
            }
          if (!only_rows_written ("dequantize into a strided destination", thread_counts[t], dst_mem, dst_before,
                                  BIG_ROWS * stride, 2 * stride + 4, stride, shape[0], shape[1] * sizeof (float)))
            goto out;
          for (guint64 r = 0; r < shape[0]; r++)
            {
              const float *ref_row = (const float *) piq_tensor_get_data (ref, NULL) + r * shape[1];
              const float *got_row = (const float *) (dst_mem + 2 * stride + 4 + r * stride);
              g_autofree float *got_copy = g_memdup2 (got_row, shape[1] * sizeof (float));
              if (!check_f32 ("dequantize SET + ADD into a strided destination", thread_counts[t], ref_row,
                              got_copy, shape[1]))
                goto out;
              /* and ref is the oracle doubled (SET then ADD of the same values) */
              for (guint64 j = 0; j < shape[1]; j++)
                g_assert_cmpfloat (ref_row[j], ==, e.dequantized[r * shape[1] + j] * 2.0f);
            }

          /* requantize from the strided source into the strided destination */
          memcpy (dst_mem, dst_before, BIG_ROWS * stride);
          g_clear_object (&ref);
          ref = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
          g_assert_no_error (error);
          ASSERT_CALL (piq_quantizer_requantize (q, format, recipe, views[v], dst, PIQ_REDUCE_SET, &error));
          ASSERT_CALL (piq_quantizer_requantize (q, format, recipe, pt, ref, PIQ_REDUCE_SET, &error));
          if (!check_f32 ("requantize packed", thread_counts[t], e.dequantized, piq_tensor_get_data (ref, NULL), n))
            goto out;
          for (guint64 r = 0; r < shape[0]; r++)
            {
              g_autofree float *got_copy = g_memdup2 (dst_mem + 2 * stride + 4 + r * stride,
                                                      shape[1] * sizeof (float));
              if (!check_f32 ("requantize strided", thread_counts[t], e.dequantized + r * shape[1], got_copy,
                              shape[1]))
                goto out;
            }
          if (!only_rows_written ("requantize into a strided destination", thread_counts[t], dst_mem, dst_before,
                                  BIG_ROWS * stride, 2 * stride + 4, stride, shape[0], shape[1] * sizeof (float)))
            goto out;
        }
    }
out:
  g_object_unref (views[0]);
  g_object_unref (views[1]);
  o_expected_clear (&e);
}

/* ---- reshape ---- */

static void
check_against_oracle (const char *what, PiqTensor *src, PiqFormat *format, const guint64 *shape, guint n_dims)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) qt = piq_quantizer_quantize_new (quantizers[0], format, NULL, src, &error);
  OExpected e;

  g_assert_no_error (error);
  o_expected_compute (&e, format, PIQ_ROUND_NEAREST, 0, PIQ_DTYPE_F32, piq_tensor_get_data (src, NULL), shape,
                      n_dims);
  check_quantized (what, 1, qt, format, &e, shape, n_dims);
  o_expected_clear (&e);
}

/* reshape changes the shape of a packed float tensor, keeping its storage;
 * the element count must stay; quantized and strided tensors do not reshape
 * (a quantized tensor's shape is part of its meaning). */
static void
test_reshape (void)
{
  guint64 flat[1] = { 24 }, s46[2] = { 4, 6 }, s234[3] = { 2, 3, 4 }, s55[2] = { 5, 5 };
  g_autofree guint8 *data = gen_data (PIQ_DTYPE_F32, flat, 1, 24);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) t = piq_tensor_new_from_data (PIQ_DTYPE_F32, 24, data, 24 * sizeof (float), &error);
  g_autoptr (PiqFormat) axis0 = make_format (PIQ_DTYPE_INT8, CH, 0, 0, FALSE);
  g_autoptr (PiqFormat) axis1 = make_format (PIQ_DTYPE_INT8, CH, 1, 0, TRUE);
  gconstpointer storage;
  const guint64 *got;
  guint n_dims = 0;

  g_assert_no_error (error);
  storage = piq_tensor_get_data (t, NULL);
  g_assert_cmpuint (piq_tensor_get_n_dims (t), ==, 1);

  ASSERT_CALL (piq_tensor_reshape (t, s46, 2, &error));
  got = piq_tensor_get_shape (t, &n_dims);
  g_assert_cmpuint (n_dims, ==, 2);
  g_assert_cmpmem (got, n_dims * sizeof (guint64), s46, sizeof s46);
  g_assert_true (piq_tensor_get_data (t, NULL) == storage);
  check_against_oracle ("reshape 4x6, per-channel axis 0", t, axis0, s46, 2);

  ASSERT_CALL (piq_tensor_reshape (t, s234, 3, &error));
  g_assert_cmpuint (piq_tensor_get_n_dims (t), ==, 3);
  g_assert_cmpuint (piq_tensor_get_dim (t, 1), ==, 3);
  g_assert_cmpuint (piq_tensor_get_dim (t, -1), ==, 4);
  g_assert_true (piq_tensor_get_data (t, NULL) == storage);
  check_against_oracle ("reshape 2x3x4, per-channel axis 1", t, axis1, s234, 3);

  /* another element count: PIQ_ERROR_SIZE, the shape unchanged */
  g_assert_false (piq_tensor_reshape (t, s55, 2, &error));
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_SIZE);
  g_clear_error (&error);
  got = piq_tensor_get_shape (t, &n_dims);
  g_assert_cmpuint (n_dims, ==, 3);
  g_assert_cmpmem (got, n_dims * sizeof (guint64), s234, sizeof s234);

  ASSERT_CALL (piq_tensor_reshape (t, flat, 1, &error));
  g_assert_cmpmem (piq_tensor_get_data (t, NULL), 24 * sizeof (float), data, 24 * sizeof (float));

  /* a quantized tensor's shape does not change */
  {
    g_autoptr (PiqTensor) qt = NULL;
    ASSERT_CALL (piq_tensor_reshape (t, s46, 2, &error));
    qt = piq_quantizer_quantize_new (quantizers[0], axis0, NULL, t, &error);
    g_assert_no_error (error);
    g_assert_false (piq_tensor_reshape (qt, flat, 1, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    got = piq_tensor_get_shape (qt, &n_dims);
    g_assert_cmpuint (n_dims, ==, 2);
    g_assert_cmpmem (got, n_dims * sizeof (guint64), s46, sizeof s46);
  }
  /* nor does a strided one's (its rows are not packed) */
  {
    guint64 s23[2] = { 2, 3 }, s6[1] = { 6 };
    g_autoptr (PiqTensor) st = piq_tensor_new_for_address (PIQ_DTYPE_F32, s23, 2, (guintptr) data,
                                                           24 * sizeof (float), 5 * sizeof (float), FALSE, &error);
    g_assert_no_error (error);
    g_assert_false (piq_tensor_reshape (st, s6, 1, &error));
    g_assert_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED);
    g_clear_error (&error);
    g_assert_cmpuint (piq_tensor_get_n_dims (st), ==, 2);
  }
}

/* ---- aliasing ---- */

#define ALIAS_N ((G_GUINT64_CONSTANT (1) << 16) + 36)
#define HALF (ALIAS_N / 2)             /* half of ALIAS_N, in bytes */
#define ARENA_SIZE (40 * HALF)
#define ALIAS_SCALE 0.01
#define ALIAS_ZP 3

typedef enum {
  OP_QUANTIZE,
  OP_DEQUANTIZE,
  OP_REQUANTIZE,
} Op;

static const char *
op_name (Op op, PiqReduceOp reduce)
{
  switch (op)
    {
    case OP_QUANTIZE: return "quantize";
    case OP_DEQUANTIZE: return reduce == PIQ_REDUCE_SET ? "dequantize/set" : "dequantize/add";
    case OP_REQUANTIZE: return reduce == PIQ_REDUCE_SET ? "requantize/set" : "requantize/add";
    }
  return "?";
}

/* Raw forms on one arena. `src` is the source (floats for quantize and
 * requantize, int8 codes for dequantize), `dst` the destination (codes for
 * quantize, floats otherwise), `scales` and `zps` the per-block scales and
 * zero points (destinations of quantize, sources of dequantize) of the
 * per-block format; offsets in bytes. */
typedef struct {
  const char *name;
  Op          op;
  gboolean    block;
  gsize       src;
  gsize       dst;
  gsize       scales;
  gsize       zps;
  gboolean    allowed;     /* exact in-place requantize */
} RawAlias;

static const RawAlias raw_alias[] = {
  { "codes-at-src", OP_QUANTIZE, FALSE, 8 * HALF, 8 * HALF, 30 * HALF, 32 * HALF, FALSE },
  { "codes-inside-src", OP_QUANTIZE, FALSE, 8 * HALF, 10 * HALF + 1, 30 * HALF, 32 * HALF, FALSE },
  { "codes-straddle-src-start", OP_QUANTIZE, FALSE, 8 * HALF, 7 * HALF, 30 * HALF, 32 * HALF, FALSE },
  { "codes-straddle-src-end", OP_QUANTIZE, FALSE, 8 * HALF, 15 * HALF, 30 * HALF, 32 * HALF, FALSE },
  { "codes-inside-src/per-block", OP_QUANTIZE, TRUE, 8 * HALF, 12 * HALF, 30 * HALF, 32 * HALF, FALSE },
  { "scales-inside-src/per-block", OP_QUANTIZE, TRUE, 8 * HALF, 24 * HALF, 9 * HALF + 4, 32 * HALF, FALSE },
  { "zero-points-straddle-src-end/per-block", OP_QUANTIZE, TRUE,
    8 * HALF, 24 * HALF, 30 * HALF, 16 * HALF - 8, FALSE },
  { "dst-at-codes", OP_DEQUANTIZE, FALSE, 2 * HALF, 2 * HALF, 30 * HALF, 32 * HALF, FALSE },
  { "dst-straddle-codes-end", OP_DEQUANTIZE, FALSE, 2 * HALF, 3 * HALF + 4, 30 * HALF, 32 * HALF, FALSE },
  { "dst-straddle-codes-start", OP_DEQUANTIZE, FALSE, 7 * HALF, 0, 30 * HALF, 32 * HALF, FALSE },
  { "dst-at-codes/per-block", OP_DEQUANTIZE, TRUE, 2 * HALF, 2 * HALF, 30 * HALF, 32 * HALF, FALSE },
  { "dst-over-scales/per-block", OP_DEQUANTIZE, TRUE, 2 * HALF, 8 * HALF, 12 * HALF, 32 * HALF, FALSE },
  { "dst-over-zero-points/per-block", OP_DEQUANTIZE, TRUE, 2 * HALF, 8 * HALF, 30 * HALF, 16 * HALF - 4, FALSE },
  { "dst-after-src-overlap", OP_REQUANTIZE, FALSE, 8 * HALF, 8 * HALF + 4000, 30 * HALF, 32 * HALF, FALSE },
  { "dst-before-src-overlap", OP_REQUANTIZE, FALSE, 8 * HALF, 8 * HALF - 4000, 30 * HALF, 32 * HALF, FALSE },
  { "dst-misaligned-overlap", OP_REQUANTIZE, FALSE, 8 * HALF, 8 * HALF + 2, 30 * HALF, 32 * HALF, FALSE },
  { "dst-after-src-overlap/per-block", OP_REQUANTIZE, TRUE, 8 * HALF, 8 * HALF + 4000, 30 * HALF, 32 * HALF, FALSE },
  { "in-place", OP_REQUANTIZE, FALSE, 8 * HALF, 8 * HALF, 30 * HALF, 32 * HALF, TRUE },
  { "in-place/per-block", OP_REQUANTIZE, TRUE, 8 * HALF, 8 * HALF, 30 * HALF, 32 * HALF, TRUE },
};

typedef struct {
  const RawAlias *c;
  PiqReduceOp     reduce;
  guint           t;           /* index into quantizers */
} RawAliasRun;

static PiqFormat *
alias_format (gboolean block, PiqDtype dtype)
{
  return block ? make_format (dtype, BL, 0, 64, FALSE) : piq_format_new (dtype);
}

static PiqRecipe *
alias_recipe (gboolean block)
{
  return block ? NULL : piq_recipe_new_affine (ALIAS_SCALE, ALIAS_ZP);
}

/* Finite floats everywhere (valid as any float source), then valid scales
 * and zero points where the per-block format reads them. */
static guint8 *
alias_arena (const RawAlias *c, gsize scales_size, gsize zps_size)
{
  guint8 *arena = g_aligned_alloc (1, ARENA_SIZE, 64);
  ORng rng;

  o_rng_init (&rng, 42);
  for (gsize i = 0; i + 4 <= ARENA_SIZE; i += 4)
    {
      float x = (float) (o_rng_normal (&rng) * 0.5);
      memcpy (arena + i, &x, 4);
    }
  if (c->block && c->op == OP_DEQUANTIZE)
    {
      for (gsize k = 0; k + 4 <= scales_size; k += 4)
        {
          float s = 0.01f + (float) (k % 7) * 0.001f;
          memcpy (arena + c->scales + k, &s, 4);
        }
      for (gsize k = 0; k + 4 <= zps_size; k += 4)
        {
          gint32 z = (gint32) (k % 5) - 2;
          memcpy (arena + c->zps + k, &z, 4);
        }
    }
  return arena;
}

static gboolean
raw_call (const RawAlias *c, PiqReduceOp reduce, PiqQuantizer *q, PiqFormat *format, PiqRecipe *recipe,
          guint8 *arena_src, guint8 *arena_dst, guint8 *scales, gsize scales_size, guint8 *zps, gsize zps_size,
          GError **error)
{
  guint64 shape[1] = { ALIAS_N };
  gsize fsize = ALIAS_N * sizeof (float), csize = o_dtype_nbytes (PIQ_DTYPE_INT8, ALIAS_N);

  switch (c->op)
    {
    case OP_QUANTIZE:
      return piq_quantizer_quantize_raw (q, format, recipe, PIQ_DTYPE_F32, arena_src, shape, 1, arena_dst, csize,
                                         c->block ? scales : NULL, c->block ? scales_size : 0,
                                         c->block ? zps : NULL, c->block ? zps_size : 0, NULL, NULL, error);
    case OP_DEQUANTIZE:
      return piq_quantizer_dequantize_raw (q, format, ALIAS_SCALE, ALIAS_ZP, arena_src, csize, shape, 1,
                                           c->block ? scales : NULL, c->block ? scales_size : 0,
                                           c->block ? zps : NULL, c->block ? zps_size : 0,
                                           PIQ_DTYPE_F32, arena_dst, fsize, reduce, error);
    case OP_REQUANTIZE:
      return piq_quantizer_requantize_raw (q, format, recipe, PIQ_DTYPE_F32, arena_src, shape, 1, arena_dst, fsize,
                                           reduce, error);
    }
  return FALSE;
}

static void
test_raw_alias (gconstpointer data)
{
  const RawAliasRun *run = data;
  const RawAlias *c = run->c;
  PiqQuantizer *q = quantizers[run->t];
  g_autoptr (PiqFormat) format = alias_format (c->block, PIQ_DTYPE_INT8);
  g_autoptr (PiqRecipe) recipe = alias_recipe (c->block);
  guint64 shape[1] = { ALIAS_N };
  gsize codes_size = 0, scales_size = 0, zps_size = 0;
  g_autoptr (GError) error = NULL;
  guint8 *arena, *before;
  gboolean ok;

  ASSERT_CALL (piq_format_get_sizes (format, shape, 1, &codes_size, &scales_size, &zps_size, &error));
  arena = alias_arena (c, scales_size, zps_size);
  before = g_memdup2 (arena, ARENA_SIZE);

  if (!c->allowed)
    {
      ok = raw_call (c, run->reduce, q, format, recipe, arena + c->src, arena + c->dst, arena + c->scales,
                     scales_size, arena + c->zps, zps_size, &error);
      g_assert_false (ok);
      g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERLAP);
      if (memcmp (arena, before, ARENA_SIZE) != 0)
        {
          gsize b = 0;
          while (arena[b] == before[b])
            b++;
          g_test_fail_printf ("%s failed with OVERLAP but changed byte %" G_GSIZE_FORMAT " of the buffers",
                              op_name (c->op, run->reduce), b);
        }
    }
  else
    {
      /* exact in place: the out-of-place result, from a copy of the source
       * into a copy of the prior destination */
      gsize fsize = ALIAS_N * sizeof (float);
      g_autofree guint8 *src_copy = g_memdup2 (arena + c->src, fsize);
      g_autofree guint8 *expected = g_memdup2 (arena + c->dst, fsize);

      ok = raw_call (c, run->reduce, q, format, recipe, src_copy, expected, NULL, 0, NULL, 0, &error);
      g_assert_no_error (error);
      g_assert_true (ok);
      ok = raw_call (c, run->reduce, q, format, recipe, arena + c->src, arena + c->dst, NULL, 0, NULL, 0, &error);
      g_assert_no_error (error);
      g_assert_true (ok);
      g_assert_cmpmem (arena + c->dst, fsize, expected, fsize);
      /* and nothing else changed */
      g_assert_cmpmem (arena, c->dst, before, c->dst);
      g_assert_cmpmem (arena + c->dst + fsize, ARENA_SIZE - c->dst - fsize, before + c->dst + fsize,
                       ARENA_SIZE - c->dst - fsize);
    }
  g_free (before);
  g_aligned_free (arena);
}

/* ---- aliasing, tensor forms ---- */

typedef enum {
  TA_QUANTIZE_SRC_IS_CODES,         /* int32 codes, f32 source over the same bytes */
  TA_QUANTIZE_SRC_INSIDE_CODES,     /* int64 codes, f32 source inside them */
  TA_DEQUANTIZE_DST_IS_CODES,
  TA_DEQUANTIZE_DST_INSIDE_CODES,
  TA_REQUANTIZE_DST_AFTER_SRC,
  TA_REQUANTIZE_DST_BEFORE_SRC,
} TensorAliasKind;

typedef struct {
  const char     *name;
  TensorAliasKind kind;
} TensorAlias;

static const TensorAlias tensor_alias[] = {
  { "quantize/src-is-dst-codes", TA_QUANTIZE_SRC_IS_CODES },
  { "quantize/src-inside-dst-codes", TA_QUANTIZE_SRC_INSIDE_CODES },
  { "dequantize/dst-is-src-codes", TA_DEQUANTIZE_DST_IS_CODES },
  { "dequantize/dst-inside-src-codes", TA_DEQUANTIZE_DST_INSIDE_CODES },
  { "requantize/dst-after-src-overlap", TA_REQUANTIZE_DST_AFTER_SRC },
  { "requantize/dst-before-src-overlap", TA_REQUANTIZE_DST_BEFORE_SRC },
};

typedef struct {
  const TensorAlias *c;
  PiqReduceOp        reduce;
  guint              t;
} TensorAliasRun;

static void
fill_floats (guint8 *buf, gsize n_floats, guint64 seed)
{
  ORng rng;
  o_rng_init (&rng, seed);
  for (gsize i = 0; i < n_floats; i++)
    {
      float x = (float) o_rng_normal (&rng);
      memcpy (buf + i * 4, &x, 4);
    }
}

static void
test_tensor_alias (gconstpointer data)
{
  const TensorAliasRun *run = data;
  const TensorAlias *c = run->c;
  PiqQuantizer *q = quantizers[run->t];
  guint64 shape[1] = { ALIAS_N };
  gsize fsize = ALIAS_N * sizeof (float);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (ALIAS_SCALE, ALIAS_ZP);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqFormat) format = NULL;
  g_autoptr (PiqTensor) qt = NULL;
  g_autoptr (PiqTensor) other = NULL;
  g_autofree guint8 *mem = NULL;
  g_autofree guint8 *before = NULL;
  guint8 *watch = NULL;           /* the bytes that must not change */
  gsize watch_size = 0;
  gboolean ok = FALSE;

  switch (c->kind)
    {
    case TA_QUANTIZE_SRC_IS_CODES:
    case TA_QUANTIZE_SRC_INSIDE_CODES:
    case TA_DEQUANTIZE_DST_IS_CODES:
    case TA_DEQUANTIZE_DST_INSIDE_CODES:
      {
        gboolean inside = c->kind == TA_QUANTIZE_SRC_INSIDE_CODES || c->kind == TA_DEQUANTIZE_DST_INSIDE_CODES;
        gboolean quantize = c->kind == TA_QUANTIZE_SRC_IS_CODES || c->kind == TA_QUANTIZE_SRC_INSIDE_CODES;
        gsize offset = inside ? 2 * ALIAS_N + 4 : 0;
        guint8 *codes;

        format = piq_format_new (inside ? PIQ_DTYPE_INT64 : PIQ_DTYPE_INT32);
        qt = piq_tensor_new_quantized (format, shape, 1, &error);
        g_assert_no_error (error);
        if (!quantize)
          {
            /* a quantized source with its scale and zero point */
            g_autofree guint8 *x = g_malloc (fsize);
            g_autoptr (PiqTensor) xt = NULL;
            fill_floats (x, ALIAS_N, 7);
            xt = piq_tensor_new_from_data (PIQ_DTYPE_F32, ALIAS_N, x, fsize, &error);
            g_assert_no_error (error);
            ASSERT_CALL (piq_quantizer_quantize (q, recipe, xt, qt, &error));
          }
        codes = piq_tensor_get_writable_data (qt, &watch_size);
        g_assert_nonnull (codes);
        g_assert_cmpuint (watch_size, >=, offset + fsize);
        if (quantize)
          fill_floats (codes, watch_size / 4, 8);      /* a valid float source */
        watch = codes;
        other = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 1, (guintptr) (codes + offset), fsize, 0,
                                            !quantize, &error);
        g_assert_no_error (error);
        before = g_memdup2 (watch, watch_size);
        if (quantize)
          ok = piq_quantizer_quantize (q, recipe, other, qt, &error);
        else
          ok = piq_quantizer_dequantize (q, qt, other, run->reduce, &error);
      }
      break;
    case TA_REQUANTIZE_DST_AFTER_SRC:
    case TA_REQUANTIZE_DST_BEFORE_SRC:
      {
        gsize shift = 1000 * sizeof (float);
        gboolean after = c->kind == TA_REQUANTIZE_DST_AFTER_SRC;
        g_autoptr (PiqTensor) src = NULL;

        format = piq_format_new (PIQ_DTYPE_INT8);
        watch_size = fsize + shift;
        mem = g_malloc (watch_size);
        fill_floats (mem, watch_size / 4, 9);
        watch = mem;
        src = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 1, (guintptr) (mem + (after ? 0 : shift)), fsize, 0,
                                          FALSE, &error);
        g_assert_no_error (error);
        other = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 1, (guintptr) (mem + (after ? shift : 0)), fsize,
                                            0, TRUE, &error);
        g_assert_no_error (error);
        before = g_memdup2 (watch, watch_size);
        ok = piq_quantizer_requantize (q, format, recipe, src, other, run->reduce, &error);
      }
      break;
    }

  g_assert_false (ok);
  g_assert_error (error, PIQ_ERROR, PIQ_ERROR_OVERLAP);
  g_assert_cmpmem (watch, watch_size, before, watch_size);
}

/* Exact in-place requantize (the same tensor, or two tensors over the same
 * bytes) gives the out-of-place result, for per-tensor formats (nearest and
 * stochastic) and for per-block and per-channel ones, whose scales come from
 * data that the call overwrites. */
typedef struct {
  const char    *name;
  PiqGranularity gran;
  int            axis;
  guint          block;
  PiqRoundMode   mode;
  gboolean       same_object;
} InPlace;

static const InPlace in_place_cases[] = {
  { "per-tensor/nearest/same-tensor", PIQ_GRANULARITY_TENSOR, 0, 0, PIQ_ROUND_NEAREST, TRUE },
  { "per-tensor/stochastic/same-tensor", PIQ_GRANULARITY_TENSOR, 0, 0, PIQ_ROUND_STOCHASTIC, TRUE },
  { "per-tensor/nearest/same-bytes", PIQ_GRANULARITY_TENSOR, 0, 0, PIQ_ROUND_NEAREST, FALSE },
  { "per-block/64/same-tensor", BL, 0, 64, PIQ_ROUND_NEAREST, TRUE },
  { "per-block/64/same-bytes", BL, 0, 64, PIQ_ROUND_NEAREST, FALSE },
  { "per-channel/axis0/same-tensor", CH, 0, 0, PIQ_ROUND_NEAREST, TRUE },
  { "per-channel/axis1/same-tensor", CH, 1, 0, PIQ_ROUND_NEAREST, TRUE },
  { "per-channel/axis1/same-bytes", CH, 1, 0, PIQ_ROUND_NEAREST, FALSE },
};

typedef struct {
  const InPlace *c;
  PiqReduceOp    reduce;
  guint          t;
} InPlaceRun;

static void
test_in_place (gconstpointer data)
{
  const InPlaceRun *run = data;
  const InPlace *c = run->c;
  PiqQuantizer *q = quantizers[run->t];
  guint64 shape[2] = { 256, 257 };
  guint64 n = shape[0] * shape[1];
  gsize fsize = n * sizeof (float);
  g_autoptr (PiqFormat) format = NULL;
  g_autoptr (PiqRecipe) recipe = NULL;
  g_autofree guint8 *x = gen_data (PIQ_DTYPE_F32, shape, 2, 11);
  g_autofree guint8 *mem = g_memdup2 (x, fsize);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL;
  g_autoptr (PiqTensor) out = NULL;
  g_autoptr (PiqTensor) a = NULL;
  g_autoptr (PiqTensor) b = NULL;

  g_assert_cmpuint (n, >=, G_GUINT64_CONSTANT (1) << 16);
  if (c->gran == PIQ_GRANULARITY_TENSOR)
    {
      format = piq_format_new (PIQ_DTYPE_INT8);
      recipe = piq_recipe_new_affine (0.02, -5);
      piq_recipe_set_round_mode (recipe, c->mode);
      if (c->mode == PIQ_ROUND_STOCHASTIC)
        piq_recipe_set_seed (recipe, 0xC0FFEE);
    }
  else
    /* (uint4 rows of 257 codes end inside a byte: per-block uses int8 here,
     * the ragged sub-byte rows are the shape cases' business) */
    format = make_format (c->gran == BL ? PIQ_DTYPE_INT8 : PIQ_DTYPE_UINT4, c->gran, c->axis, c->block, FALSE);

  /* out of place: src = x, dst = x (ADD adds to it) */
  src = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
  g_assert_no_error (error);
  ASSERT_CALL (piq_tensor_set_data (src, x, fsize, &error));
  out = piq_tensor_new_shaped (PIQ_DTYPE_F32, shape, 2, &error);
  g_assert_no_error (error);
  ASSERT_CALL (piq_tensor_set_data (out, x, fsize, &error));
  ASSERT_CALL (piq_quantizer_requantize (q, format, recipe, src, out, run->reduce, &error));

  a = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 2, (guintptr) mem, fsize, 0, TRUE, &error);
  g_assert_no_error (error);
  if (c->same_object)
    b = g_object_ref (a);
  else
    {
      b = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 2, (guintptr) mem, fsize, 0, FALSE, &error);
      g_assert_no_error (error);
    }
  ASSERT_CALL (piq_quantizer_requantize (q, format, recipe, b, a, run->reduce, &error));
  if (!check_f32 ("requantize in place", thread_counts[run->t], piq_tensor_get_data (out, NULL),
                  (const float *) mem, n))
    return;

  /* the raw form, in place */
  {
    g_autofree guint8 *raw = g_memdup2 (x, fsize);
    ASSERT_CALL (piq_quantizer_requantize_raw (q, format, recipe, PIQ_DTYPE_F32, raw, shape, 2, raw, fsize,
                                                 run->reduce, &error));
    check_f32 ("requantize_raw in place", thread_counts[run->t], piq_tensor_get_data (out, NULL),
               (const float *) raw, n);
  }
}

/* ---- registration ---- */

int
main (int argc, char **argv)
{
  GPtrArray *runs;
  int ret;

  g_test_init (&argc, &argv, NULL);
  runs = g_ptr_array_new_with_free_func (g_free);
  for (guint t = 0; t < G_N_ELEMENTS (quantizers); t++)
    {
      quantizers[t] = piq_quantizer_new ();
      piq_quantizer_set_n_threads (quantizers[t], thread_counts[t]);
    }

  for (gsize i = 0; i < G_N_ELEMENTS (shape_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/shapes/%s", shape_cases[i].name);
      g_test_add_data_func (path, &shape_cases[i], test_shape);
    }
  g_test_add_func ("/shapes/per-channel/axis-out-of-range", test_axis_out_of_range);
  for (gsize i = 0; i < G_N_ELEMENTS (strided_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/shapes/strided/20x61-of-40x100/%s", strided_cases[i].name);
      g_test_add_data_func (path, &strided_cases[i], test_strided);
    }
  g_test_add_func ("/shapes/reshape", test_reshape);
  g_test_add_func ("/shapes/empty-extent-order", test_empty_extent_order);

  for (guint t = 0; t < G_N_ELEMENTS (quantizers); t++)
    {
      for (gsize i = 0; i < G_N_ELEMENTS (raw_alias); i++)
        for (PiqReduceOp r = PIQ_REDUCE_SET; r <= PIQ_REDUCE_ADD; r++)
          {
            RawAliasRun *run;
            g_autofree char *path = NULL;
            if (raw_alias[i].op == OP_QUANTIZE && r != PIQ_REDUCE_SET)
              continue;
            run = g_new0 (RawAliasRun, 1);
            run->c = &raw_alias[i];
            run->reduce = r;
            run->t = t;
            g_ptr_array_add (runs, run);
            path = g_strdup_printf ("/shapes/aliasing/raw/%s/%s/threads-%u", op_name (raw_alias[i].op, r),
                                    raw_alias[i].name, thread_counts[t]);
            g_test_add_data_func (path, run, test_raw_alias);
          }
      for (gsize i = 0; i < G_N_ELEMENTS (tensor_alias); i++)
        for (PiqReduceOp r = PIQ_REDUCE_SET; r <= PIQ_REDUCE_ADD; r++)
          {
            TensorAliasRun *run;
            g_autofree char *path = NULL;
            gboolean has_op = tensor_alias[i].kind >= TA_DEQUANTIZE_DST_IS_CODES;
            if (!has_op && r != PIQ_REDUCE_SET)
              continue;
            run = g_new0 (TensorAliasRun, 1);
            run->c = &tensor_alias[i];
            run->reduce = r;
            run->t = t;
            g_ptr_array_add (runs, run);
            path = g_strdup_printf ("/shapes/aliasing/tensor/%s%s/threads-%u", tensor_alias[i].name,
                                    !has_op ? "" : r == PIQ_REDUCE_SET ? "/set" : "/add", thread_counts[t]);
            g_test_add_data_func (path, run, test_tensor_alias);
          }
      for (gsize i = 0; i < G_N_ELEMENTS (in_place_cases); i++)
        for (PiqReduceOp r = PIQ_REDUCE_SET; r <= PIQ_REDUCE_ADD; r++)
          {
            InPlaceRun *run = g_new0 (InPlaceRun, 1);
            g_autofree char *path = NULL;
            run->c = &in_place_cases[i];
            run->reduce = r;
            run->t = t;
            g_ptr_array_add (runs, run);
            path = g_strdup_printf ("/shapes/aliasing/in-place/requantize/%s/%s/256x257/threads-%u",
                                    r == PIQ_REDUCE_SET ? "set" : "add", in_place_cases[i].name, thread_counts[t]);
            g_test_add_data_func (path, run, test_in_place);
          }
    }

  ret = g_test_run ();

  g_ptr_array_unref (runs);
  for (guint t = 0; t < G_N_ELEMENTS (quantizers); t++)
    g_object_unref (quantizers[t]);
  return ret;
}

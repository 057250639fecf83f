/* test-qat.c: fake quantization, its straight-through mask and the LSQ gradients
 *
 * The oracle below is written from the published definitions (PyTorch's
 * fake_quantize_per_tensor_affine_cachemask and _fake_quantize_learnable_*
 * documentation, Esser et al. 2019) and docs/qat.md, in double arithmetic
 * except where the definition rounds to binary32 (x · (1/s), zp + x · (1/s)).
 * It finds each element's group from the shape on its own. Values, masks and
 * source gradients must match bit for bit; the scale and zero-point gradients,
 * sums the oracle forms in exact-ish double terms, within 1e-5 of Σ|term|.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>

#include "test-oracle.h"

/* ---- data and tensors ---- */

static PiqTensor *
float_tensor (PiqDtype dt, const guint64 *shape, guint n_dims, const float *v)
{
  g_autoptr(GError) error = NULL;
  PiqTensor *t = piq_tensor_new_shaped (dt, shape, n_dims, &error);
  guint64 n = piq_tensor_get_n_elements (t);
  guint8 *d;

  g_assert_no_error (error);
  d = piq_tensor_get_writable_data (t, NULL);
  for (guint64 i = 0; v != NULL && i < n; i++)
    {
      if (dt == PIQ_DTYPE_F32)
        memcpy (d + 4 * i, &v[i], 4);
      else
        {
          guint16 h = dt == PIQ_DTYPE_BF16 ? o_f32_to_bf16 (v[i]) : o_f32_to_f16 (v[i]);
          memcpy (d + 2 * i, &h, 2);
        }
    }
  return t;
}

static float
load (PiqTensor *t, guint64 i)
{
  const guint8 *d = piq_tensor_get_data (t, NULL);
  PiqDtype dt = piq_tensor_get_dtype (t);
  guint16 h;
  float f;

  if (dt == PIQ_DTYPE_F32)
    {
      memcpy (&f, d + 4 * i, 4);
      return f;
    }
  memcpy (&h, d + 2 * i, 2);
  return dt == PIQ_DTYPE_BF16 ? o_bf16_to_f32 (h) : o_f16_to_f32 (h);
}

/* The value a float of dtype dt holds for f (rounded to nearest even). */
static float
as_dtype (PiqDtype dt, float f)
{
  if (dt == PIQ_DTYPE_BF16)
    return o_bf16_to_f32 (o_f32_to_bf16 (f));
  if (dt == PIQ_DTYPE_F16)
    return o_f16_to_f32 (o_f32_to_f16 (f));
  return f;
}

static void
fill_canary (PiqTensor *t)
{
  gsize size;
  guint8 *d = piq_tensor_get_writable_data (t, &size);
  memset (d, 0xa5, size);
}

static gboolean
is_canary (PiqTensor *t)
{
  gsize size;
  const guint8 *d = piq_tensor_get_data (t, &size);
  for (gsize i = 0; i < size; i++)
    if (d[i] != 0xa5)
      return FALSE;
  return TRUE;
}

static GBytes *
snapshot (PiqTensor *t)
{
  gsize size;
  gconstpointer d = piq_tensor_get_data (t, &size);
  return g_bytes_new (d, size);
}

/* ---- the case ---- */

typedef struct {
  const char    *name;
  PiqDtype       qdtype;
  gboolean       symmetric;
  PiqGranularity gran;
  int            axis;
  guint          block;
  guint          n_dims;
  guint64        shape[3];
} QatCase;

static void
range_of (PiqDtype qd, gint64 *qmin, gint64 *qmax)
{
  *qmin = (gint64) o_qmin (qd);
  *qmax = (gint64) o_qmax (qd);
}

/* Group of flat index i, from the shape alone. */
static guint64
oracle_group (const QatCase *c, guint64 i)
{
  guint64 idx[3], rem = i;
  for (int d = (int) c->n_dims - 1; d >= 0; d--)
    {
      idx[d] = rem % c->shape[d];
      rem /= c->shape[d];
    }
  if (c->gran == PIQ_GRANULARITY_CHANNEL)
    return idx[c->axis < 0 ? c->axis + (int) c->n_dims : c->axis];
  if (c->gran == PIQ_GRANULARITY_BLOCK)
    {
      guint64 cols = c->shape[c->n_dims - 1];
      guint64 nb = (cols + c->block - 1) / c->block;
      return (i / cols) * nb + (i % cols) / c->block;
    }
  return 0;
}

static guint64
n_groups_of (const QatCase *c)
{
  guint64 n = 1;
  for (guint d = 0; d < c->n_dims; d++)
    n *= c->shape[d];
  if (c->gran == PIQ_GRANULARITY_CHANNEL)
    return c->shape[c->axis < 0 ? c->axis + (int) c->n_dims : c->axis];
  if (c->gran == PIQ_GRANULARITY_BLOCK)
    {
      guint64 cols = c->shape[c->n_dims - 1];
      return cols ? n / cols * ((cols + c->block - 1) / c->block) : 0;
    }
  return 1;
}

static PiqFormat *
format_of (const QatCase *c)
{
  switch (c->gran)
    {
    case PIQ_GRANULARITY_CHANNEL:
      return g_object_new (PIQ_TYPE_FORMAT, "dtype", c->qdtype, "granularity", c->gran,
                           "axis", c->axis, "symmetric", c->symmetric, NULL);
    case PIQ_GRANULARITY_BLOCK:
      return g_object_new (PIQ_TYPE_FORMAT, "dtype", c->qdtype, "granularity", c->gran,
                           "block-size", c->block, "symmetric", c->symmetric, NULL);
    default:
      return c->symmetric ? piq_format_new_symmetric (c->qdtype) : piq_format_new (c->qdtype);
    }
}

typedef struct {
  guint64   n, n_groups;
  float    *x, *dy, *s;
  gint32   *zp;
  float     gf;
} QatData;

static void
qat_data_free (QatData *d)
{
  g_free (d->x);
  g_free (d->dy);
  g_free (d->s);
  g_free (d->zp);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (QatData, qat_data_free)

/* Values on, between, at .5 ties of and outside the grid; edges exactly. */
static void
make_data (const QatCase *c, guint32 seed, gboolean pow2, QatData *d)
{
  g_autoptr(GRand) r = g_rand_new_with_seed (seed);
  gint64 qmin, qmax;

  range_of (c->qdtype, &qmin, &qmax);
  d->n = 1;
  for (guint k = 0; k < c->n_dims; k++)
    d->n *= c->shape[k];
  d->n_groups = n_groups_of (c);
  d->x = g_new (float, MAX (d->n, 1));
  d->dy = g_new (float, MAX (d->n, 1));
  d->s = g_new (float, MAX (d->n_groups, 1));
  d->zp = g_new (gint32, MAX (d->n_groups, 1));
  for (guint64 g = 0; g < d->n_groups; g++)
    {
      d->s[g] = pow2 ? ldexpf (1.0f, g_rand_int_range (r, -6, 3))
                     : (float) g_rand_double_range (r, 0.01, 0.3);
      d->zp[g] = c->symmetric ? (qmin < 0 ? 0 : (gint32) ((qmax + 1) / 2))
                              : (gint32) g_rand_int_range (r, (gint32) qmin, (gint32) qmax + 1);
    }
  for (guint64 i = 0; i < d->n; i++)
    {
      guint64 g = oracle_group (c, i);
      double u = g_rand_int_range (r, (gint32) qmin - 3, (gint32) qmax + 4);
      double frac;
      switch (g_rand_int_range (r, 0, 8))
        {
        case 0: frac = 0.5; break;
        case 1: frac = -0.5; break;
        case 2: frac = 0.0; break;
        case 3: u = qmin; frac = g_rand_boolean (r) ? -0.5 : 0.0; break;
        case 4: u = qmax; frac = g_rand_boolean (r) ? 0.5 : 0.0; break;
        default: frac = g_rand_double_range (r, -0.5, 0.5); break;
        }
      d->x[i] = (float) ((u - d->zp[g] + frac) * d->s[g]);
      d->dy[i] = (float) g_rand_double_range (r, -2.0, 2.0);
    }
  d->gf = g_rand_boolean (r) ? 1.0f : 0.25f;
}

static PiqTensor *
scales_tensor (const QatData *d)
{
  g_autoptr(GError) error = NULL;
  PiqTensor *t = piq_tensor_new_from_data (PIQ_DTYPE_F32, d->n_groups, (const guint8 *) d->s,
                                           d->n_groups * 4, &error);
  g_assert_no_error (error);
  return t;
}

static PiqTensor *
zps_tensor (const QatData *d)
{
  g_autoptr(GError) error = NULL;
  PiqTensor *t = piq_tensor_new_from_data (PIQ_DTYPE_INT32, d->n_groups, (const guint8 *) d->zp,
                                           d->n_groups * 4, &error);
  g_assert_no_error (error);
  return t;
}

/* ---- the oracle, one element ---- */

typedef struct {
  float  y;          /* fake-quantized, binary32 */
  guint8 mask;
  float  dx;         /* source gradient */
  double ds, dz;     /* gradient terms */
} OracleOut;

static void
oracle (float x, float dy, float s, gint64 zp, gint64 qmin, gint64 qmax, float gf, OracleOut *o)
{
  float inv = 1.0f / s;                     /* torch's 1.0f / scale */
  float v = (float) ((double) x * (double) inv);

  /* forward: zp + nearbyint(x · inv) */
  if (isnan (v))
    {
      o->y = 0.0f;
      o->mask = 0;
    }
  else
    {
      double q = rint ((double) v) + (double) zp;
      double qc = fmin (fmax (q, (double) qmin), (double) qmax);
      o->mask = q >= (double) qmin && q <= (double) qmax;
      o->y = (float) ((qc - (double) zp) * (double) s);
    }

  /* learnable backward: nearbyint(zp + x · inv), the addition in binary32 */
  {
    double q = isnan (v) ? -INFINITY : rint ((double) (float) ((double) zp + (double) v));
    gboolean inside = q >= (double) qmin && q <= (double) qmax;
    if (inside)
      {
        float xfq = (float) ((q - (double) zp) * (double) s);
        o->dx = dy;
        o->ds = (double) dy * ((double) xfq - (double) x) / (double) s * (double) gf;
        o->dz = 0.0;
      }
    else
      {
        o->dx = copysignf (0.0f, dy);
        o->ds = (double) dy * (double) ((q < (double) qmin ? qmin : qmax) - zp) * (double) gf;
        o->dz = -(double) dy * (double) s * (double) gf;
      }
  }
}

/* ---- one case against the oracle ---- */

typedef struct {
  QatCase  c;
  PiqDtype xdt, gdt;
  gboolean pow2;
  guint    n_threads;
} RunCase;

static void
test_case (gconstpointer data)
{
  const RunCase *rc = data;
  const QatCase *c = &rc->c;
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr(PiqFormat) fmt = format_of (c);
  g_auto(QatData) d = { 0 };
  gint64 qmin, qmax;
  double *want_s, *want_z, *mag_s, *mag_z;
  guint n_bad = 0;

  range_of (c->qdtype, &qmin, &qmax);
  make_data (c, g_str_hash (c->name) ^ rc->xdt ^ (rc->gdt << 8) ^ rc->pow2, rc->pow2, &d);
  piq_quantizer_set_n_threads (q, rc->n_threads);

  {
    g_autoptr(PiqTensor) src = float_tensor (rc->xdt, c->shape, c->n_dims, d.x);
    g_autoptr(PiqTensor) gout = float_tensor (rc->gdt, c->shape, c->n_dims, d.dy);
    g_autoptr(PiqTensor) st = scales_tensor (&d);
    g_autoptr(PiqTensor) zt = c->symmetric ? NULL : zps_tensor (&d);
    g_autoptr(PiqTensor) dst = float_tensor (rc->xdt, c->shape, c->n_dims, NULL);
    g_autoptr(PiqTensor) mask = piq_tensor_new_shaped (PIQ_DTYPE_UINT8, c->shape, c->n_dims, &error);
    g_autoptr(PiqTensor) gsrc = float_tensor (rc->gdt, c->shape, c->n_dims, NULL);
    g_autoptr(PiqTensor) gs = piq_tensor_new (PIQ_DTYPE_F32, d.n_groups, &error);
    g_autoptr(PiqTensor) gz = piq_tensor_new (PIQ_DTYPE_F32, d.n_groups, &error);
    const guint8 *m;

    g_assert_no_error (error);
    g_assert_true (piq_quantizer_fake_quantize (q, fmt, src, st, zt, dst, mask, &error));
    g_assert_no_error (error);
    g_assert_true (piq_quantizer_fake_quantize_backward (q, fmt, src, st, zt, gout, d.gf, gsrc, gs,
                                                         gz, &error));
    g_assert_no_error (error);

    want_s = g_new0 (double, MAX (d.n_groups, 1));
    want_z = g_new0 (double, MAX (d.n_groups, 1));
    mag_s = g_new0 (double, MAX (d.n_groups, 1));
    mag_z = g_new0 (double, MAX (d.n_groups, 1));
    m = piq_tensor_get_data (mask, NULL);
    for (guint64 i = 0; i < d.n; i++)
      {
        guint64 g = oracle_group (c, i);
        float x = as_dtype (rc->xdt, d.x[i]), dy = as_dtype (rc->gdt, d.dy[i]);
        OracleOut o;
        float y, dx;

        oracle (x, dy, d.s[g], c->symmetric ? (qmin < 0 ? 0 : (qmax + 1) / 2) : d.zp[g], qmin,
                qmax, d.gf, &o);
        y = load (dst, i);
        dx = load (gsrc, i);
        if (memcmp (&y, &(float) { as_dtype (rc->xdt, o.y) }, 4) != 0 || m[i] != o.mask
            || memcmp (&dx, &(float) { as_dtype (rc->gdt, o.dx) }, 4) != 0)
          {
            if (n_bad++ < 5)
              g_test_message ("element %" G_GUINT64_FORMAT " (group %" G_GUINT64_FORMAT "): x %.9g"
                              " → y %.9g mask %u dx %.9g; want %.9g %u %.9g", i, g, x, y, m[i],
                              dx, o.y, o.mask, o.dx);
          }
        want_s[g] += o.ds;
        want_z[g] += o.dz;
        mag_s[g] += fabs (o.ds);
        mag_z[g] += fabs (o.dz);
      }
    g_assert_cmpuint (n_bad, ==, 0);
    for (guint64 g = 0; g < d.n_groups; g++)
      {
        double got_s = load (gs, g), got_z = load (gz, g);
        if (fabs (got_s - want_s[g]) > 1e-5 * mag_s[g] + 1e-30
            || fabs (got_z - want_z[g]) > 1e-5 * mag_z[g] + 1e-30)
          {
            g_test_message ("group %" G_GUINT64_FORMAT ": grad scale %.9g want %.9g (Σ|t| %g), "
                            "grad zp %.9g want %.9g", g, got_s, want_s[g], mag_s[g], got_z,
                            want_z[g]);
            n_bad++;
          }
      }
    g_assert_cmpuint (n_bad, ==, 0);

    /* the per-tensor forms give the same values */
    if (c->gran == PIQ_GRANULARITY_TENSOR)
      {
        g_autoptr(PiqTensor) dst2 = float_tensor (rc->xdt, c->shape, c->n_dims, NULL);
        g_autoptr(GBytes) a = NULL, b = NULL;
        double s64, z64;
        gint64 zp = c->symmetric ? (qmin < 0 ? 0 : (qmax + 1) / 2) : d.zp[0];

        g_assert_true (piq_quantizer_fake_quantize_per_tensor (q, fmt, src, d.s[0], zp, dst2, NULL,
                                                               &error));
        g_assert_no_error (error);
        a = snapshot (dst);
        b = snapshot (dst2);
        g_assert_true (g_bytes_equal (a, b));
        g_assert_true (piq_quantizer_fake_quantize_per_tensor_backward (q, fmt, src, d.s[0], zp,
                                                                        gout, d.gf, NULL, &s64,
                                                                        &z64, &error));
        g_assert_no_error (error);
        g_assert_cmpfloat ((float) s64, ==, load (gs, 0));
        g_assert_cmpfloat ((float) z64, ==, load (gz, 0));
      }
    g_free (want_s);
    g_free (want_z);
    g_free (mag_s);
    g_free (mag_z);
  }
}


/* ---- the f32 runs of the integer formats (four lanes) equal the scalar path ---- */

/* f32 sources and gradients take the vector path, bf16 ones the per-element one;
 * with every value exactly a bf16 value both see the same numbers, so values,
 * mask, source gradient and the two sums must agree bit for bit. The values
 * include what the data generator never makes: NaN, ±Inf, ±0, magnitudes from
 * 2^23 steps up, exact ties, subnormals; the length is not a multiple of 4. */
static float
bf16_exact (float f)
{
  guint32 u;
  memcpy (&u, &f, 4);
  u &= 0xffff0000u;
  memcpy (&f, &u, 4);
  return f;
}

static void
test_f32_runs (void)
{
  static const struct { PiqDtype dt; gboolean sym; } fmts[] = {
    { PIQ_DTYPE_UINT8, FALSE }, { PIQ_DTYPE_INT8, TRUE }, { PIQ_DTYPE_INT4, FALSE },
    { PIQ_DTYPE_UINT2, FALSE }, { PIQ_DTYPE_INT16, FALSE }, { PIQ_DTYPE_UINT16, TRUE },
  };
  static const float specials[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0x1p-140f, -0x1p-140f, 0x1p30f, -0x1p30f,
    0x1p23f, -0x1p23f, 0x1p22f * 3, 0.125f, -0.125f, 0.375f, -0.375f, 1e30f, -1e30f,
  };
  const guint64 n = 4099;
  g_autoptr(GRand) r = g_rand_new_with_seed (99);
  g_autofree float *x = g_new (float, n), *dy = g_new (float, n);

  for (guint64 i = 0; i < n; i++)
    {
      x[i] = i % 5 == 0 ? specials[(i / 5) % G_N_ELEMENTS (specials)]
                        : bf16_exact ((float) g_rand_double_range (r, -300, 300) * 0.25f);
      dy[i] = bf16_exact ((float) g_rand_double_range (r, -2, 2));
    }
  for (gsize f = 0; f < 2 * G_N_ELEMENTS (fmts); f++)
    for (guint th = 1; th <= 3; th += 2)
      {
        /* a power-of-two scale (exact ties) and one that is not (every product rounds) */
        double scale = f % 2 ? 0.3 : 0.25;
        g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
        g_autoptr(PiqFormat) fmt = fmts[f / 2].sym ? piq_format_new_symmetric (fmts[f / 2].dt)
                                                   : piq_format_new (fmts[f / 2].dt);
        g_autoptr(GError) error = NULL;
        gint64 qmin, qmax, zp;
        GBytes *out[2][3] = { { NULL } };
        double sums[2][2];

        range_of (fmts[f / 2].dt, &qmin, &qmax);
        zp = fmts[f / 2].sym ? (qmin < 0 ? 0 : (qmax + 1) / 2) : (qmin + qmax) / 3;
        piq_quantizer_set_n_threads (q, th);
        for (int path = 0; path < 2; path++)
          {
            PiqDtype dt = path == 0 ? PIQ_DTYPE_F32 : PIQ_DTYPE_BF16;
            g_autoptr(PiqTensor) src = float_tensor (dt, &n, 1, x);
            g_autoptr(PiqTensor) gout = float_tensor (dt, &n, 1, dy);
            g_autoptr(PiqTensor) y = float_tensor (PIQ_DTYPE_F32, &n, 1, NULL);
            g_autoptr(PiqTensor) gsrc = float_tensor (PIQ_DTYPE_F32, &n, 1, NULL);
            g_autoptr(PiqTensor) mask = piq_tensor_new (PIQ_DTYPE_UINT8, n, &error);

            g_assert_true (piq_quantizer_fake_quantize_per_tensor (q, fmt, src, scale, zp, y, mask,
                                                                   &error));
            g_assert_true (piq_quantizer_fake_quantize_per_tensor_backward (q, fmt, src, scale, zp,
                                                                            gout, 0.37, gsrc,
                                                                            &sums[path][0],
                                                                            &sums[path][1], &error));
            g_assert_no_error (error);
            out[path][0] = snapshot (y);
            out[path][1] = snapshot (mask);
            out[path][2] = snapshot (gsrc);
          }
        for (int k = 0; k < 3; k++)
          {
            g_assert_true (g_bytes_equal (out[0][k], out[1][k]));
            g_bytes_unref (out[0][k]);
            g_bytes_unref (out[1][k]);
          }
        g_assert_cmpmem (sums[0], sizeof sums[0], sums[1], sizeof sums[1]);
      }
}

/* bf16 and f16 data and gradients on every SIMD table: values, mask, source
 * gradient and both binary64 sums equal the scalar table's bytes, for lengths around
 * the vector widths and the 16-element lane blocks, tensors that start 2 bytes past
 * an alignment (unaligned elements for the vectors), and NaN, ±Inf, ±0, subnormals,
 * ties and huge values among the data and the gradients. */
static const char *dt_name (PiqDtype dt);

static void
test_half_tables (void)
{
  static const int caps[] = {
    PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_SSE4_2, PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX512,
    PIQ_SIMD_LEVEL_AVX512_VNNI, PIQ_SIMD_LEVEL_NEON, -1,
  };
  static const guint64 lens[] = { 1, 15, 17, 31, 33, 47, 64, 65, 131, 4099, 16384 + 33 };
  static const float specials[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0x1p-20f, -0x1p-130f, 0x1p30f, -0x1p30f,
    0.125f, -0.375f, 2.5f, 3.5f, 1e30f, -1e30f, 65504.0f, 6e-5f,
  };
  static const PiqDtype dts[] = { PIQ_DTYPE_BF16, PIQ_DTYPE_F16 };
  g_autoptr(GRand) r = g_rand_new_with_seed (77);
  g_autoptr(PiqFormat) fmt = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqFormat) sym = piq_format_new_symmetric (PIQ_DTYPE_INT4);

  for (gsize di = 0; di < G_N_ELEMENTS (dts); di++)
    for (gsize li = 0; li < G_N_ELEMENTS (lens); li++)
      {
        const guint64 n = lens[li];
        const PiqDtype dt = dts[di];
        PiqFormat *f = li % 2 ? sym : fmt;
        const double scale = li % 3 ? 0.25 : 0.0173;
        const gint64 zp = li % 2 ? 0 : 117;
        g_autofree float *x = g_new (float, n), *dy = g_new (float, n);
        g_autofree guint8 *bx = g_malloc (2 * n + 64), *bg = g_malloc (2 * n + 64);
        g_autofree guint8 *by = g_malloc (2 * n + 64), *bd = g_malloc (2 * n + 64);
        guint8 *px = (guint8 *) (((guintptr) bx + 31) & ~(guintptr) 31) + 2;
        guint8 *pg = (guint8 *) (((guintptr) bg + 31) & ~(guintptr) 31) + 2;
        guint8 *py = (guint8 *) (((guintptr) by + 31) & ~(guintptr) 31) + 2 * (li % 2);
        guint8 *pd = (guint8 *) (((guintptr) bd + 31) & ~(guintptr) 31) + 2 * (li % 3 == 1);
        GBytes *ref[5] = { NULL };

        for (guint64 i = 0; i < n; i++)
          {
            x[i] = i % 7 == 3 ? specials[(i / 7) % G_N_ELEMENTS (specials)]
                              : (float) g_rand_double_range (r, -200, 200) * (float) scale;
            dy[i] = i % 11 == 5 ? specials[(i / 11 + 3) % G_N_ELEMENTS (specials)]
                                : (float) g_rand_double_range (r, -2, 2);
          }
        for (guint64 i = 0; i < n; i++)
          {
            guint16 hx = dt == PIQ_DTYPE_BF16 ? o_f32_to_bf16 (x[i]) : o_f32_to_f16 (x[i]);
            guint16 hg = dt == PIQ_DTYPE_BF16 ? o_f32_to_bf16 (dy[i]) : o_f32_to_f16 (dy[i]);
            memcpy (px + 2 * i, &hx, 2);
            memcpy (pg + 2 * i, &hg, 2);
          }
        for (gsize k = 0; k < G_N_ELEMENTS (caps); k++)
          {
            g_autoptr(GError) error = NULL;
            g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
            g_autoptr(PiqTensor) src = piq_tensor_new_for_address (dt, &n, 1, (guintptr) px, 2 * n,
                                                                   0, FALSE, &error);
            g_autoptr(PiqTensor) gout = piq_tensor_new_for_address (dt, &n, 1, (guintptr) pg,
                                                                    2 * n, 0, FALSE, &error);
            g_autoptr(PiqTensor) y = piq_tensor_new_for_address (dt, &n, 1, (guintptr) py, 2 * n,
                                                                 0, TRUE, &error);
            g_autoptr(PiqTensor) gsrc = piq_tensor_new_for_address (dt, &n, 1, (guintptr) pd,
                                                                    2 * n, 0, TRUE, &error);
            g_autoptr(PiqTensor) mask = piq_tensor_new (PIQ_DTYPE_UINT8, n, &error);
            double sums[2];
            GBytes *now[5];

            g_assert_no_error (error);
            piq_quantizer_set_n_threads (q, 1 + (guint) (k % 2));
            if (caps[k] >= 0)
              piq_quantizer_set_max_simd_level (q, caps[k]);
            memset (py, 0xa5, 2 * n);
            memset (pd, 0x5a, 2 * n);
            g_assert_true (piq_quantizer_fake_quantize_per_tensor (q, f, src, scale, zp, y, mask,
                                                                   &error));
            g_assert_true (piq_quantizer_fake_quantize_per_tensor_backward (q, f, src, scale, zp,
                                                                            gout, 0.37, gsrc,
                                                                            &sums[0], &sums[1],
                                                                            &error));
            g_assert_no_error (error);
            now[0] = g_bytes_new (py, 2 * n);
            now[1] = snapshot (mask);
            now[2] = g_bytes_new (pd, 2 * n);
            now[3] = g_bytes_new (&sums[0], 8);
            now[4] = g_bytes_new (&sums[1], 8);
            for (int j = 0; j < 5; j++)
              {
                if (k == 0)
                  {
                    ref[j] = now[j];
                    continue;
                  }
                /* a NaN sum's payload is not part of the contract */
                if (j >= 3 && isnan (sums[j - 3]))
                  {
                    double rv;
                    memcpy (&rv, g_bytes_get_data (ref[j], NULL), 8);
                    g_assert_true (isnan (rv));
                  }
                else
                  {
                    if (!g_bytes_equal (ref[j], now[j]))
                      g_test_message ("%s n %" G_GUINT64_FORMAT " cap %d output %d differs",
                                      dt_name (dt), n, caps[k], j);
                    g_assert_true (g_bytes_equal (ref[j], now[j]));
                  }
                g_bytes_unref (now[j]);
              }
          }
        for (int j = 0; j < 5; j++)
          g_bytes_unref (ref[j]);
      }
}

/* ---- identical bytes for any thread count and SIMD level ---- */

/* Every output for threads 1 … 4, 7 and all, uncapped, and for every SIMD level cap
 * with 1 … 4 threads, equals the first one's bytes; with every tensor f32, bf16 or
 * f16 (the kernel layer's vectorized combinations) and with mixed dtypes (a source
 * gradient of another type than dy's goes to the scalar kernel). */
static void
test_threads (gconstpointer data)
{
  const QatCase *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqFormat) fmt = format_of (c);
  g_auto(QatData) d = { 0 };
  static const struct { guint th; int cap; } runs[] = {
    { 1, -1 }, { 2, -1 }, { 3, -1 }, { 4, -1 }, { 7, -1 }, { 0, -1 },
    { 1, PIQ_SIMD_LEVEL_SCALAR }, { 2, PIQ_SIMD_LEVEL_SCALAR }, { 3, PIQ_SIMD_LEVEL_SCALAR },
    { 4, PIQ_SIMD_LEVEL_SCALAR }, { 1, PIQ_SIMD_LEVEL_SSE4_2 }, { 3, PIQ_SIMD_LEVEL_SSE4_2 },
    { 2, PIQ_SIMD_LEVEL_AVX2 }, { 4, PIQ_SIMD_LEVEL_AVX2 }, { 1, PIQ_SIMD_LEVEL_AVX512 },
    { 3, PIQ_SIMD_LEVEL_AVX512 }, { 2, PIQ_SIMD_LEVEL_AVX512_VNNI }, { 4, PIQ_SIMD_LEVEL_NEON },
  };
  static const PiqDtype dts[][4] = {
    { PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_DTYPE_F32, PIQ_DTYPE_F32 },      /* x, dy, y, dx */
    { PIQ_DTYPE_F32, PIQ_DTYPE_BF16, PIQ_DTYPE_F16, PIQ_DTYPE_F32 },
    { PIQ_DTYPE_BF16, PIQ_DTYPE_BF16, PIQ_DTYPE_BF16, PIQ_DTYPE_BF16 },
    { PIQ_DTYPE_F16, PIQ_DTYPE_F16, PIQ_DTYPE_F16, PIQ_DTYPE_F16 },
    { PIQ_DTYPE_BF16, PIQ_DTYPE_F16, PIQ_DTYPE_F32, PIQ_DTYPE_F16 },
  };

  make_data (c, 4242, FALSE, &d);
  for (gsize v = 0; v < G_N_ELEMENTS (dts); v++)
    {
      GBytes *ref[6] = { NULL };
      for (gsize k = 0; k < G_N_ELEMENTS (runs); k++)
        {
          g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
          g_autoptr(PiqTensor) src = float_tensor (dts[v][0], c->shape, c->n_dims, d.x);
          g_autoptr(PiqTensor) gout = float_tensor (dts[v][1], c->shape, c->n_dims, d.dy);
          g_autoptr(PiqTensor) st = scales_tensor (&d);
          g_autoptr(PiqTensor) zt = c->symmetric ? NULL : zps_tensor (&d);
          g_autoptr(PiqTensor) dst = float_tensor (dts[v][2], c->shape, c->n_dims, NULL);
          g_autoptr(PiqTensor) mask = piq_tensor_new_shaped (PIQ_DTYPE_UINT8, c->shape, c->n_dims, &error);
          g_autoptr(PiqTensor) gsrc = float_tensor (dts[v][3], c->shape, c->n_dims, NULL);
          g_autoptr(PiqTensor) gs = piq_tensor_new (PIQ_DTYPE_F32, d.n_groups, &error);
          g_autoptr(PiqTensor) gz = piq_tensor_new (PIQ_DTYPE_F32, d.n_groups, &error);
          GBytes *now[6];

          piq_quantizer_set_n_threads (q, runs[k].th);
          if (runs[k].cap >= 0)
            piq_quantizer_set_max_simd_level (q, runs[k].cap);
          g_assert_true (piq_quantizer_fake_quantize (q, fmt, src, st, zt, dst, mask, &error));
          g_assert_true (piq_quantizer_fake_quantize_backward (q, fmt, src, st, zt, gout, 0.37, gsrc,
                                                               gs, gz, &error));
          g_assert_no_error (error);
          now[0] = snapshot (dst);
          now[1] = snapshot (mask);
          now[2] = snapshot (gsrc);
          now[3] = snapshot (gs);
          now[4] = snapshot (gz);
          {
            /* per tensor, the binary64 sums too (not hidden by the rounding to f32) */
            double sums[2] = { 0.0, 0.0 };
            if (c->gran == PIQ_GRANULARITY_TENSOR)
              g_assert_true (piq_quantizer_fake_quantize_per_tensor_backward (
                               q, fmt, src, d.s[0], c->symmetric ? 0 : d.zp[0], gout, 0.37, NULL,
                               &sums[0], &sums[1], &error));
            g_assert_no_error (error);
            now[5] = g_bytes_new (sums, sizeof sums);
          }
          for (int j = 0; j < 6; j++)
            {
              if (k == 0)
                ref[j] = now[j];
              else
                {
                  if (!g_bytes_equal (ref[j], now[j]))
                    g_test_message ("dtypes %d, threads %u, cap %d, output %d differs", (int) v,
                                    runs[k].th, runs[k].cap, j);
                  g_assert_true (g_bytes_equal (ref[j], now[j]));
                  g_bytes_unref (now[j]);
                }
            }
        }
      for (int j = 0; j < 6; j++)
        g_bytes_unref (ref[j]);
    }
}

/* ---- the documented order of the gradient sums, written out independently ---- */

/* docs/qat.md: each term in binary32 as the formula says; within a chunk of 16384
 * positions, lane k (from +0, binary64) adds the terms of positions i ≡ k (mod 16) in
 * order; lane k += lane k + h for h = 8, 4, 2, 1; the chunks' sums added in order
 * from +0. The per-tensor form returns that binary64 sum: it must be these bits,
 * for every thread count and SIMD level. */
static void
test_order (void)
{
  const guint64 n = 3 * 16384 + 1000 + 5;
  const float s = 0.0375f, gf = 0.3f;
  const gint64 zp = 117, qmin = 0, qmax = 255;
  g_autoptr(GRand) r = g_rand_new_with_seed (1313);
  g_autofree float *x = g_new (float, n), *dy = g_new (float, n);
  double want_s = 0.0, want_z = 0.0;
  g_autoptr(PiqFormat) fmt = piq_format_new (PIQ_DTYPE_UINT8);

  for (guint64 i = 0; i < n; i++)
    {
      x[i] = (float) g_rand_double_range (r, -6, 6);
      dy[i] = (float) g_rand_double_range (r, -1, 1);
    }
  for (guint64 c0 = 0; c0 < n; c0 += 16384)
    {
      double ls[16] = { 0 }, lz[16] = { 0 };
      for (guint64 i = c0; i < n && i < c0 + 16384; i++)
        {
          volatile float inv = 1.0f / s, v = x[i] * inv, t = (float) zp + v;
          float q = nearbyintf (t), ts, tz = 0.0f;
          if (q >= (float) qmin && q <= (float) qmax)
            {
              volatile float xq = (q - (float) zp) * s, a = xq - x[i], b = dy[i] * a, e = b * inv;
              ts = e * gf;
            }
          else
            {
              volatile float a = dy[i] * (float) ((q < (float) qmin ? qmin : qmax) - zp), b = -dy[i] * s;
              ts = a * gf;
              tz = b * gf;
            }
          ls[(i - c0) % 16] += (double) ts;
          lz[(i - c0) % 16] += (double) tz;
        }
      for (int h = 8; h >= 1; h /= 2)
        for (int k = 0; k < h; k++)
          {
            ls[k] += ls[k + h];
            lz[k] += lz[k + h];
          }
      want_s += ls[0];
      want_z += lz[0];
    }
  for (int cap = 0; cap < 2; cap++)
    for (guint th = 1; th <= 4; th++)
      {
        g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
        g_autoptr(PiqTensor) src = float_tensor (PIQ_DTYPE_F32, &n, 1, x);
        g_autoptr(PiqTensor) gout = float_tensor (PIQ_DTYPE_F32, &n, 1, dy);
        g_autoptr(GError) error = NULL;
        double got_s, got_z;

        piq_quantizer_set_n_threads (q, th);
        if (cap)
          piq_quantizer_set_max_simd_level (q, PIQ_SIMD_LEVEL_SCALAR);
        g_assert_true (piq_quantizer_fake_quantize_per_tensor_backward (q, fmt, src, s, zp, gout, gf,
                                                                        NULL, &got_s, &got_z, &error));
        g_assert_no_error (error);
        g_assert_cmpmem (&got_s, 8, &want_s, 8);
        g_assert_cmpmem (&got_z, 8, &want_z, 8);
      }
}

/* ---- bad input: a GError, nothing written ---- */

typedef enum {
  BAD_SRC_DTYPE, BAD_FORMAT_BINARY, BAD_CODE_ZP, BAD_CODE_GRAD_ZP, BAD_E8M0_SCALE, BAD_FORMAT_INT64, BAD_DST_SHAPE, BAD_MASK_SHAPE, BAD_MASK_DTYPE,
  BAD_AXIS, BAD_AXIS_NEG, BAD_SCALES_COUNT, BAD_SCALES_DTYPE, BAD_SCALE_ZERO, BAD_SCALE_NEG,
  BAD_SCALE_NAN, BAD_SCALE_INF, BAD_SCALE_TINY, BAD_ZP_RANGE, BAD_ZP_SYMMETRIC, BAD_ZP_MISSING,
  BAD_ZP_COUNT, BAD_GRAD_OUT_SHAPE, BAD_GRAD_SRC_SHAPE, BAD_GRAD_SCALES_COUNT,
  BAD_GRAD_SCALES_DTYPE, BAD_GRAD_FACTOR, BAD_READ_ONLY, BAD_OVERLAP, BAD_PER_TENSOR_FORMAT,
  BAD_PER_TENSOR_SCALE, BAD_PER_TENSOR_ZP, N_BAD
} Bad;

static const struct { const char *name; PiqError code; } bad_cases[N_BAD] = {
  [BAD_SRC_DTYPE] = { "src-dtype", PIQ_ERROR_UNSUPPORTED },
  [BAD_FORMAT_BINARY] = { "format-binary", PIQ_ERROR_UNSUPPORTED },
  [BAD_CODE_ZP] = { "code-format-zero-points", PIQ_ERROR_INVALID_ZERO_POINT },
  [BAD_CODE_GRAD_ZP] = { "code-format-zero-point-gradients", PIQ_ERROR_UNSUPPORTED },
  [BAD_E8M0_SCALE] = { "e8m0-scale-not-power-of-two", PIQ_ERROR_INVALID_SCALE },
  [BAD_FORMAT_INT64] = { "format-int64", PIQ_ERROR_UNSUPPORTED },
  [BAD_DST_SHAPE] = { "dst-shape", PIQ_ERROR_SIZE },
  [BAD_MASK_SHAPE] = { "mask-shape", PIQ_ERROR_SIZE },
  [BAD_MASK_DTYPE] = { "mask-dtype", PIQ_ERROR_UNSUPPORTED },
  [BAD_AXIS] = { "axis", PIQ_ERROR_SIZE },
  [BAD_AXIS_NEG] = { "axis-negative", PIQ_ERROR_SIZE },
  [BAD_SCALES_COUNT] = { "scales-count", PIQ_ERROR_SIZE },
  [BAD_SCALES_DTYPE] = { "scales-dtype", PIQ_ERROR_UNSUPPORTED },
  [BAD_SCALE_ZERO] = { "scale-zero", PIQ_ERROR_INVALID_SCALE },
  [BAD_SCALE_NEG] = { "scale-negative", PIQ_ERROR_INVALID_SCALE },
  [BAD_SCALE_NAN] = { "scale-nan", PIQ_ERROR_INVALID_SCALE },
  [BAD_SCALE_INF] = { "scale-inf", PIQ_ERROR_INVALID_SCALE },
  [BAD_SCALE_TINY] = { "scale-inverse-inf", PIQ_ERROR_INVALID_SCALE },
  [BAD_ZP_RANGE] = { "zero-point-range", PIQ_ERROR_INVALID_ZERO_POINT },
  [BAD_ZP_SYMMETRIC] = { "zero-point-symmetric", PIQ_ERROR_INVALID_ZERO_POINT },
  [BAD_ZP_MISSING] = { "zero-point-missing", PIQ_ERROR_INVALID_ZERO_POINT },
  [BAD_ZP_COUNT] = { "zero-point-count", PIQ_ERROR_SIZE },
  [BAD_GRAD_OUT_SHAPE] = { "grad-out-shape", PIQ_ERROR_SIZE },
  [BAD_GRAD_SRC_SHAPE] = { "grad-src-shape", PIQ_ERROR_SIZE },
  [BAD_GRAD_SCALES_COUNT] = { "grad-scales-count", PIQ_ERROR_SIZE },
  [BAD_GRAD_SCALES_DTYPE] = { "grad-scales-dtype", PIQ_ERROR_UNSUPPORTED },
  [BAD_GRAD_FACTOR] = { "grad-factor-nan", PIQ_ERROR_INVALID_VALUE },
  [BAD_READ_ONLY] = { "read-only", PIQ_ERROR_READ_ONLY },
  [BAD_OVERLAP] = { "overlap", PIQ_ERROR_OVERLAP },
  [BAD_PER_TENSOR_FORMAT] = { "per-tensor-form-channel-format", PIQ_ERROR_UNSUPPORTED },
  [BAD_PER_TENSOR_SCALE] = { "per-tensor-form-scale", PIQ_ERROR_INVALID_SCALE },
  [BAD_PER_TENSOR_ZP] = { "per-tensor-form-zero-point", PIQ_ERROR_INVALID_ZERO_POINT },
};

static void
test_bad (gconstpointer data)
{
  Bad bad = GPOINTER_TO_INT (data);
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
  guint64 shape[2] = { 4, 6 }, other[2] = { 6, 4 };
  float x[24], dy[24], s4[4] = { 0.5f, 0.25f, 1.0f, 2.0f };
  gint32 z4[4] = { 3, 0, 255, 128 };
  g_autoptr(PiqFormat) fmt = NULL;
  g_autoptr(PiqTensor) src = NULL, gout = NULL, st = NULL, zt = NULL;
  g_autoptr(PiqTensor) dst = NULL, mask = NULL, gsrc = NULL, gs = NULL, gz = NULL;
  g_autofree float *backing = g_new0 (float, 48);
  gboolean ok, backward;
  double g1 = 123.0, g2 = 456.0;

  for (int i = 0; i < 24; i++)
    {
      x[i] = (float) (i - 10) * 0.7f;
      dy[i] = (float) i * 0.1f - 1.0f;
    }
  fmt = piq_format_new_per_channel (PIQ_DTYPE_UINT8, 0);
  src = float_tensor (PIQ_DTYPE_F32, shape, 2, x);
  gout = float_tensor (PIQ_DTYPE_F32, shape, 2, dy);
  st = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, (const guint8 *) s4, 16, &error);
  zt = piq_tensor_new_from_data (PIQ_DTYPE_INT32, 4, (const guint8 *) z4, 16, &error);
  dst = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  mask = piq_tensor_new_shaped (PIQ_DTYPE_UINT8, shape, 2, &error);
  gsrc = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  gs = piq_tensor_new (PIQ_DTYPE_F32, 4, &error);
  gz = piq_tensor_new (PIQ_DTYPE_F32, 4, &error);
  g_assert_no_error (error);

  /* the call succeeds before it is broken */
  g_assert_true (piq_quantizer_fake_quantize (q, fmt, src, st, zt, dst, mask, &error));
  g_assert_true (piq_quantizer_fake_quantize_backward (q, fmt, src, st, zt, gout, 1.0, gsrc, gs, gz,
                                                       &error));
  g_assert_no_error (error);

  backward = (bad >= BAD_GRAD_OUT_SHAPE && bad <= BAD_GRAD_FACTOR) || bad == BAD_CODE_GRAD_ZP;
  switch (bad)
    {
    case BAD_SRC_DTYPE:
      g_clear_object (&src);
      src = piq_tensor_new_shaped (PIQ_DTYPE_INT8, shape, 2, &error);
      break;
    case BAD_FORMAT_BINARY:
      g_clear_object (&fmt);
      fmt = piq_format_new_per_channel (PIQ_DTYPE_BINARY, 0);
      break;
    case BAD_CODE_ZP:
      g_clear_object (&fmt);
      fmt = piq_format_new_per_channel (PIQ_DTYPE_FP8_E4M3, 0);
      break;
    case BAD_CODE_GRAD_ZP:
      g_clear_object (&fmt);
      g_clear_object (&zt);
      fmt = piq_format_new_per_channel (PIQ_DTYPE_FP8_E4M3, 0);
      break;
    case BAD_E8M0_SCALE:
      /* 6 × 4: one block of 32 is too long; blocks of 6 along each row */
      g_clear_object (&fmt);
      g_clear_object (&zt);
      fmt = piq_format_new_per_block (PIQ_DTYPE_FP4_E2M1, 6, PIQ_DTYPE_E8M0);
      s4[1] = 0.3f;
      g_clear_object (&st);
      st = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, (const guint8 *) s4, 16, &error);
      break;
    case BAD_FORMAT_INT64:
      g_clear_object (&fmt);
      fmt = piq_format_new_per_channel (PIQ_DTYPE_INT64, 0);
      break;
    case BAD_DST_SHAPE:
      g_clear_object (&dst);
      dst = float_tensor (PIQ_DTYPE_F32, other, 2, NULL);
      break;
    case BAD_MASK_SHAPE:
      g_clear_object (&mask);
      mask = piq_tensor_new_shaped (PIQ_DTYPE_UINT8, other, 2, &error);
      break;
    case BAD_MASK_DTYPE:
      g_clear_object (&mask);
      mask = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
      break;
    case BAD_AXIS:
      g_clear_object (&fmt);
      fmt = piq_format_new_per_channel (PIQ_DTYPE_UINT8, 2);
      break;
    case BAD_AXIS_NEG:
      g_clear_object (&fmt);
      fmt = piq_format_new_per_channel (PIQ_DTYPE_UINT8, -3);
      break;
    case BAD_SCALES_COUNT:
      g_clear_object (&st);
      st = piq_tensor_new_from_data (PIQ_DTYPE_F32, 3, (const guint8 *) s4, 12, &error);
      break;
    case BAD_SCALES_DTYPE:
      g_clear_object (&st);
      st = piq_tensor_new (PIQ_DTYPE_F64, 4, &error);
      piq_tensor_fill (st, 1.0, &error);
      break;
    case BAD_SCALE_ZERO: case BAD_SCALE_NEG: case BAD_SCALE_NAN: case BAD_SCALE_INF:
    case BAD_SCALE_TINY:
      {
        float v = bad == BAD_SCALE_ZERO ? 0.0f : bad == BAD_SCALE_NEG ? -1.0f
                : bad == BAD_SCALE_NAN ? NAN : bad == BAD_SCALE_INF ? INFINITY : 1e-45f;
        s4[2] = v;
        g_clear_object (&st);
        st = piq_tensor_new_from_data (PIQ_DTYPE_F32, 4, (const guint8 *) s4, 16, &error);
        break;
      }
    case BAD_ZP_RANGE:
      z4[1] = 256;
      g_clear_object (&zt);
      zt = piq_tensor_new_from_data (PIQ_DTYPE_INT32, 4, (const guint8 *) z4, 16, &error);
      break;
    case BAD_ZP_SYMMETRIC:
      g_clear_object (&fmt);
      fmt = g_object_new (PIQ_TYPE_FORMAT, "dtype", PIQ_DTYPE_INT8, "granularity",
                          PIQ_GRANULARITY_CHANNEL, "symmetric", TRUE, NULL);
      z4[0] = z4[1] = z4[2] = z4[3] = 0;
      g_clear_object (&zt);
      zt = piq_tensor_new_from_data (PIQ_DTYPE_INT32, 4, (const guint8 *) z4, 16, &error);
      break;
    case BAD_ZP_MISSING:
      g_clear_object (&zt);
      break;
    case BAD_ZP_COUNT:
      g_clear_object (&zt);
      zt = piq_tensor_new_from_data (PIQ_DTYPE_INT32, 2, (const guint8 *) z4, 8, &error);
      break;
    case BAD_GRAD_OUT_SHAPE:
      g_clear_object (&gout);
      gout = float_tensor (PIQ_DTYPE_F32, other, 2, dy);
      break;
    case BAD_GRAD_SRC_SHAPE:
      g_clear_object (&gsrc);
      gsrc = float_tensor (PIQ_DTYPE_BF16, other, 2, NULL);
      break;
    case BAD_GRAD_SCALES_COUNT:
      g_clear_object (&gs);
      gs = piq_tensor_new (PIQ_DTYPE_F32, 5, &error);
      break;
    case BAD_GRAD_SCALES_DTYPE:
      g_clear_object (&gs);
      gs = piq_tensor_new (PIQ_DTYPE_F16, 4, &error);
      break;
    case BAD_GRAD_FACTOR:
      break;
    case BAD_READ_ONLY:
      {
        g_autoptr(GBytes) b = g_bytes_new (backing, 24 * 4);
        g_clear_object (&dst);
        dst = piq_tensor_new_strided (PIQ_DTYPE_F32, shape, 2, b, 0, 0, &error);
        break;
      }
    case BAD_OVERLAP:
      /* the destination is the source's memory, seen through a second tensor */
      {
        g_clear_object (&dst);
        g_clear_object (&src);
        memcpy (backing, x, sizeof x);
        src = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 2, (guintptr) backing, 24 * 4, 0,
                                          FALSE, &error);
        dst = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 2, (guintptr) (backing + 12), 24 * 4,
                                          0, TRUE, &error);
        break;
      }
    case BAD_PER_TENSOR_FORMAT: case BAD_PER_TENSOR_SCALE: case BAD_PER_TENSOR_ZP:
    case N_BAD:
      break;
    }
  g_assert_no_error (error);

  if (bad != BAD_READ_ONLY && bad != BAD_OVERLAP)
    fill_canary (dst);
  fill_canary (mask);
  fill_canary (gsrc);
  if (bad != BAD_GRAD_SCALES_COUNT && bad != BAD_GRAD_SCALES_DTYPE)
    fill_canary (gs);
  fill_canary (gz);
  {
    g_autoptr(GBytes) before = snapshot (dst);

    if (bad >= BAD_PER_TENSOR_FORMAT)
      {
        g_autoptr(PiqFormat) pt = piq_format_new (PIQ_DTYPE_UINT8);
        PiqFormat *f = bad == BAD_PER_TENSOR_FORMAT ? fmt : pt;
        double s = bad == BAD_PER_TENSOR_SCALE ? -0.5 : 0.5;
        gint64 z = bad == BAD_PER_TENSOR_ZP ? 300 : 3;
        g_autoptr(GError) error2 = NULL;

        ok = piq_quantizer_fake_quantize_per_tensor (q, f, src, s, z, dst, mask, &error);
        g_assert_false (piq_quantizer_fake_quantize_per_tensor_backward (q, f, src, s, z, gout, 1.0,
                                                                         gsrc, &g1, &g2, &error2));
        g_assert_error (error2, PIQ_ERROR, (gint) bad_cases[bad].code);
        g_assert_cmpfloat (g1, ==, 123.0);
        g_assert_cmpfloat (g2, ==, 456.0);
      }
    else if (backward)
      ok = piq_quantizer_fake_quantize_backward (q, fmt, src, st, zt, gout,
                                                 bad == BAD_GRAD_FACTOR ? NAN : 1.0, gsrc, gs, gz,
                                                 &error);
    else
      {
        ok = piq_quantizer_fake_quantize (q, fmt, src, st, zt, dst, mask, &error);
        if (!ok && bad != BAD_READ_ONLY && bad != BAD_OVERLAP && bad != BAD_MASK_DTYPE && bad != BAD_DST_SHAPE
            && bad != BAD_MASK_SHAPE)
          {
            /* the backward pass rejects it too */
            g_autoptr(GError) error2 = NULL;
            g_assert_false (piq_quantizer_fake_quantize_backward (q, fmt, src, st, zt, gout, 1.0,
                                                                  gsrc, gs, gz, &error2));
            g_assert_nonnull (error2);
            g_assert_true (error2->domain == PIQ_ERROR);
          }
      }
    g_test_message ("%s", error ? error->message : "(no error)");
    g_assert_false (ok);
    g_assert_error (error, PIQ_ERROR, (gint) bad_cases[bad].code);
    {
      g_autoptr(GBytes) after = snapshot (dst);
      g_assert_true (g_bytes_equal (before, after));
    }
    if (bad != BAD_MASK_DTYPE)
      g_assert_true (is_canary (mask));
    g_assert_true (is_canary (gsrc));
    if (bad != BAD_GRAD_SCALES_COUNT && bad != BAD_GRAD_SCALES_DTYPE)
      g_assert_true (is_canary (gs));
    g_assert_true (is_canary (gz));
  }
}


/* ---- code formats: FP8, FP6, FP4 E2M1 (MX), NF4 on their grids ---- */

/* bitsandbytes' NF4 values and midpoint thresholds (../shared/FORMATS.md §2). */
static const float nf4_values[16] = {
  -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
  -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
  0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
  0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f,
};
static const float nf4_thresholds[15] = {
  -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
  -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
  0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
  0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f,
};

typedef struct {
  const char *name;
  PiqDtype    dtype;
  int         mbits, emin;     /* minifloats: mantissa bits, smallest normal exponent */
  double      max;
} OCode;

static const OCode o_codes[] = {
  { "fp8_e4m3", PIQ_DTYPE_FP8_E4M3, 3, -6, 448.0 },
  { "fp8_e5m2", PIQ_DTYPE_FP8_E5M2, 2, -14, 57344.0 },
  { "fp6_e2m3", PIQ_DTYPE_FP6_E2M3, 3, 0, 7.5 },
  { "fp6_e3m2", PIQ_DTYPE_FP6_E3M2, 2, -2, 28.0 },
  { "fp4_e2m1", PIQ_DTYPE_FP4_E2M1, 1, 0, 6.0 },
  { "nf4", PIQ_DTYPE_NF4, 0, 0, 1.0 },
};

/* The format's value for v: nearest, ties to even, saturating; NaN → 0. */
static double
o_code_q (const OCode *f, float v)
{
  double a = fabs ((double) v), r;

  if (isnan (v))
    return 0.0;
  if (f->dtype == PIQ_DTYPE_NF4)
    {
      int c = 0;
      for (int i = 0; i < 15; i++)
        c += v > nf4_thresholds[i];
      return nf4_values[c];
    }
  if (a >= f->max)
    r = f->max;
  else
    {
      int e = a > 0.0 ? (int) floor (log2 (a)) : f->emin;
      double quantum;
      if (e < f->emin)
        e = f->emin;
      quantum = ldexp (1.0, e - f->mbits);
      r = rint (a / quantum) * quantum;
      if (r > f->max)
        r = f->max;
    }
  return copysign (r, (double) v);
}

typedef struct {
  const OCode   *f;
  PiqGranularity gran;
  guint          block;
  gboolean       e8m0;
} CodeCase;

/* Values near the grid (a relative or absolute margin far from every rounding
 * boundary), some beyond the largest magnitude; one scale per group. */
static void
code_data (const CodeCase *cc, const guint64 *shape, guint64 n, guint64 n_groups, guint32 seed,
           float *x, float *dy, float *sc)
{
  g_autoptr(GRand) r = g_rand_new_with_seed (seed);
  guint64 cols = shape[1];

  for (guint64 g = 0; g < n_groups; g++)
    sc[g] = cc->e8m0 ? ldexpf (1.0f, g_rand_int_range (r, -4, 4))
                     : (float) g_rand_double_range (r, 0.05, 3.0);
  for (guint64 i = 0; i < n; i++)
    {
      guint64 g = cc->gran == PIQ_GRANULARITY_TENSOR ? 0
                : cc->gran == PIQ_GRANULARITY_CHANNEL ? i / cols
                : (i / cols) * ((cols + cc->block - 1) / cc->block) + (i % cols) / cc->block;
      double v;
      if (g_rand_int_range (r, 0, 8) == 0)
        v = (g_rand_boolean (r) ? 1 : -1) * cc->f->max * g_rand_double_range (r, 1.2, 2.0);
      else if (cc->f->dtype == PIQ_DTYPE_NF4)
        v = nf4_values[g_rand_int_range (r, 0, 16)] + g_rand_double_range (r, -0.01, 0.01);
      else
        {
          /* a random representable value, moved by at most 2 % (a half step is ≥ 1/16) */
          double e = g_rand_int_range (r, cc->f->emin, (int) log2 (cc->f->max) + 1);
          double m = 1.0 + g_rand_int_range (r, 0, 1 << cc->f->mbits) / (double) (1 << cc->f->mbits);
          v = fmin (ldexp (m, (int) e), cc->f->max) * (g_rand_boolean (r) ? 1 : -1)
              * (1.0 + g_rand_double_range (r, -0.02, 0.02));
        }
      x[i] = (float) (v * sc[g]);
      dy[i] = (float) g_rand_double_range (r, -2.0, 2.0);
    }
}

static PiqFormat *
code_format (const CodeCase *cc)
{
  if (cc->gran == PIQ_GRANULARITY_BLOCK)
    return g_object_new (PIQ_TYPE_FORMAT, "dtype", cc->f->dtype, "granularity", cc->gran,
                         "block-size", cc->block, "scale-dtype",
                         cc->e8m0 ? PIQ_DTYPE_E8M0 : PIQ_DTYPE_F32, NULL);
  if (cc->gran == PIQ_GRANULARITY_CHANNEL)
    return g_object_new (PIQ_TYPE_FORMAT, "dtype", cc->f->dtype, "granularity", cc->gran, NULL);
  return piq_format_new (cc->f->dtype);
}

static void
test_code (gconstpointer data)
{
  const CodeCase *cc = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr(PiqFormat) fmt = code_format (cc);
  guint64 shape[2] = { 6, 100 }, n = 600;
  guint64 n_groups = cc->gran == PIQ_GRANULARITY_TENSOR ? 1 : cc->gran == PIQ_GRANULARITY_CHANNEL
                     ? shape[0] : shape[0] * ((shape[1] + cc->block - 1) / cc->block);
  float x[600], dy[600], sc[600];
  double fd_want = 0.0, mag = 0.0;
  guint n_bad = 0;

  if (piq_format_validate (fmt, NULL) == FALSE)
    {
      g_test_skip ("the format does not take this granularity or scale type");
      return;
    }
  code_data (cc, shape, n, n_groups, g_str_hash (cc->f->name) ^ cc->gran ^ cc->e8m0, x, dy, sc);
  {
    g_autoptr(PiqTensor) src = float_tensor (PIQ_DTYPE_F32, shape, 2, x);
    g_autoptr(PiqTensor) gout = float_tensor (PIQ_DTYPE_F32, shape, 2, dy);
    g_autoptr(PiqTensor) st = piq_tensor_new_from_data (PIQ_DTYPE_F32, n_groups,
                                                        (const guint8 *) sc, n_groups * 4, &error);
    g_autoptr(PiqTensor) dst = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
    g_autoptr(PiqTensor) mask = piq_tensor_new_shaped (PIQ_DTYPE_UINT8, shape, 2, &error);
    g_autoptr(PiqTensor) gsrc = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
    g_autoptr(PiqTensor) gs = piq_tensor_new (PIQ_DTYPE_F32, n_groups, &error);
    const guint8 *m;
    double *want = g_new0 (double, n_groups), *mags = g_new0 (double, n_groups);

    g_assert_no_error (error);
    g_assert_true (piq_quantizer_fake_quantize (q, fmt, src, st, NULL, dst, mask, &error));
    g_assert_no_error (error);
    g_assert_true (piq_quantizer_fake_quantize_backward (q, fmt, src, st, NULL, gout, 0.5, gsrc, gs,
                                                         NULL, &error));
    g_assert_no_error (error);
    m = piq_tensor_get_data (mask, NULL);

    /* against the oracle, element by element */
    for (guint64 i = 0; i < n; i++)
      {
        guint64 g = cc->gran == PIQ_GRANULARITY_TENSOR ? 0
                  : cc->gran == PIQ_GRANULARITY_CHANNEL ? i / shape[1]
                  : (i / shape[1]) * ((shape[1] + cc->block - 1) / cc->block) + (i % shape[1]) / cc->block;
        float inv = 1.0f / sc[g];
        float v = (float) ((double) x[i] * (double) inv);
        double qv = o_code_q (cc->f, v);
        gboolean inside = fabs ((double) v) <= cc->f->max;
        float y = (float) (qv * (double) sc[g]);
        float dx = inside ? dy[i] : copysignf (0.0f, dy[i]);
        double t = inside ? (double) dy[i] * (qv - (double) v) * 0.5 : (double) dy[i] * qv * 0.5;

        if (load (dst, i) != y || m[i] != inside || memcmp (&(float) { load (gsrc, i) }, &dx, 4) != 0)
          {
            if (n_bad++ < 5)
              g_test_message ("element %" G_GUINT64_FORMAT ": v %.9g → y %.9g mask %u dx %g; "
                              "want %.9g %u %g", i, v, load (dst, i), m[i], load (gsrc, i), y,
                              inside, dx);
          }
        want[g] += t;
        mags[g] += fabs (t);
      }
    g_assert_cmpuint (n_bad, ==, 0);
    for (guint64 g = 0; g < n_groups; g++)
      if (fabs (load (gs, g) - want[g]) > 1e-5 * mags[g] + 1e-30)
        {
          g_test_message ("group %" G_GUINT64_FORMAT ": %.9g, want %.9g", g, load (gs, g), want[g]);
          n_bad++;
        }
    g_assert_cmpuint (n_bad, ==, 0);

    /* central finite differences of F(s) = Σ dy · y(s) over one group's scale: away
     * from rounding boundaries s · Q(x/s) is linear in s, so the difference is
     * Σ dy · Q(v) exactly (up to binary32 rounding of y); the scale gradient adds the
     * straight-through term −Σ_inside dy · v (docs/qat.md). */
    if (!cc->e8m0)
      {
        guint64 g0 = n_groups / 2;
        double h = sc[g0] * 0x1p-10, f[2];
        for (int k = 0; k < 2; k++)
          {
            float sc2[600];
            g_autoptr(PiqTensor) st2 = NULL;
            g_autoptr(PiqTensor) y2 = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
            memcpy (sc2, sc, n_groups * 4);
            sc2[g0] = (float) (sc[g0] + (k ? h : -h));
            st2 = piq_tensor_new_from_data (PIQ_DTYPE_F32, n_groups, (const guint8 *) sc2,
                                            n_groups * 4, &error);
            g_assert_true (piq_quantizer_fake_quantize (q, fmt, src, st2, NULL, y2, NULL, &error));
            g_assert_no_error (error);
            f[k] = 0.0;
            for (guint64 i = 0; i < n; i++)
              f[k] += (double) dy[i] * load (y2, i);
          }
        fd_want = (f[1] - f[0]) / ((double) (float) (sc[g0] + h) - (double) (float) (sc[g0] - h));
        for (guint64 i = 0; i < n; i++)
          {
            guint64 g = cc->gran == PIQ_GRANULARITY_TENSOR ? 0
                      : cc->gran == PIQ_GRANULARITY_CHANNEL ? i / shape[1]
                      : (i / shape[1]) * ((shape[1] + cc->block - 1) / cc->block) + (i % shape[1]) / cc->block;
            float v = x[i] * (1.0f / sc[g]);
            if (g != g0)
              continue;
            if (fabsf (v) <= cc->f->max)
              fd_want -= (double) dy[i] * v;
            mag += fabs ((double) dy[i]) * (fabs ((double) v) + cc->f->max);
          }
        fd_want *= 0.5;                     /* the grad_factor */
        g_test_message ("group %" G_GUINT64_FORMAT ": gradient %.9g, finite differences %.9g",
                        g0, load (gs, g0), fd_want);
        g_assert_cmpfloat (fabs (load (gs, g0) - fd_want), <=, 1e-3 * mag);
      }
    /* the per-tensor forms: the same values and sums, zero point 0 */
    if (cc->gran == PIQ_GRANULARITY_TENSOR)
      {
        g_autoptr(PiqTensor) y2 = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
        g_autoptr(GBytes) a = snapshot (dst), b = NULL;
        double s64 = 0.0;

        g_assert_true (piq_quantizer_fake_quantize_per_tensor (q, fmt, src, sc[0], 0, y2, NULL,
                                                               &error));
        g_assert_no_error (error);
        b = snapshot (y2);
        g_assert_true (g_bytes_equal (a, b));
        g_assert_true (piq_quantizer_fake_quantize_per_tensor_backward (q, fmt, src, sc[0], 0, gout,
                                                                        0.5, NULL, &s64, NULL,
                                                                        &error));
        g_assert_no_error (error);
        g_assert_cmpfloat ((float) s64, ==, load (gs, 0));
        g_assert_false (piq_quantizer_fake_quantize_per_tensor (q, fmt, src, sc[0], 1, y2, NULL,
                                                                &error));
        g_assert_error (error, PIQ_ERROR, PIQ_ERROR_INVALID_ZERO_POINT);
        g_clear_error (&error);
      }
    g_free (want);
    g_free (mags);
  }
}

/* The forward pass is requantize where both exist: per block with each block's own
 * scale (absmax for NF4, the MX floor rule for E8M0 scales), per tensor with a given
 * scale. */
static void
test_code_requantize (gconstpointer data)
{
  const CodeCase *cc = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr(PiqFormat) fmt = code_format (cc);
  guint64 shape[2] = { 4, 128 }, n = 512, nb = 4 * (128 / cc->block);
  float x[512], dy[512], sc[512];
  g_autoptr(PiqTensor) src = NULL, st = NULL, y1 = NULL, y2 = NULL;
  g_autoptr(GBytes) b1 = NULL, b2 = NULL;

  if (piq_format_validate (fmt, NULL) == FALSE)
    {
      g_test_skip ("the format does not take this granularity or scale type");
      return;
    }
  code_data (cc, shape, n, nb, 77, x, dy, sc);
  for (guint64 b = 0; b < nb; b++)
    {
      float amax = 0.0f;
      for (guint64 k = 0; k < cc->block; k++)
        amax = fmaxf (amax, fabsf (x[b * cc->block + k]));
      if (cc->e8m0)           /* 2^(floor(log2 amax) − emax_elem) */
        sc[b] = ldexpf (1.0f, ilogbf (amax) - (int) floor (log2 (cc->f->max)));
      else
        sc[b] = amax;         /* NF4: the block's absmax */
    }
  src = float_tensor (PIQ_DTYPE_F32, shape, 2, x);
  st = piq_tensor_new_from_data (PIQ_DTYPE_F32, nb, (const guint8 *) sc, nb * 4, &error);
  y1 = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  y2 = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  g_assert_true (piq_quantizer_fake_quantize (q, fmt, src, st, NULL, y1, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (piq_quantizer_requantize (q, fmt, NULL, src, y2, PIQ_REDUCE_SET, &error));
  g_assert_no_error (error);
  b1 = snapshot (y1);
  b2 = snapshot (y2);
  g_assert_true (g_bytes_equal (b1, b2));
}


/* A strided source (a sub-matrix of a larger buffer) reads only its rows' elements,
 * and gives what its packed copy gives. */
static void
test_strided (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr(PiqFormat) fmt = piq_format_new_per_channel (PIQ_DTYPE_INT8, 1);
  guint64 shape[2] = { 5, 7 };
  float big[5 * 11], packed[35], dy[35], s7[7];
  gint32 z7[7];
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(PiqTensor) a = NULL, b = NULL, gout = NULL, st = NULL, zt = NULL;
  g_autoptr(PiqTensor) ya = NULL, yb = NULL, ga = NULL, gb = NULL, sa = NULL, sb = NULL;
  g_autoptr(GBytes) y1 = NULL, y2 = NULL, g1 = NULL, g2 = NULL, s1 = NULL, s2 = NULL;

  for (int i = 0; i < 5 * 11; i++)
    big[i] = (i % 11) < 7 ? (float) (i * 37 % 101) * 0.37f - 18.0f : NAN;  /* padding: NaN */
  for (int r = 0; r < 5; r++)
    for (int c = 0; c < 7; c++)
      packed[r * 7 + c] = big[r * 11 + c];
  for (int i = 0; i < 35; i++)
    dy[i] = (float) (i % 5) - 2.0f;
  for (int c = 0; c < 7; c++)
    {
      s7[c] = 0.1f * (float) (c + 1);
      z7[c] = c - 3;
    }
  bytes = g_bytes_new (big, sizeof big);
  a = piq_tensor_new_strided (PIQ_DTYPE_F32, shape, 2, bytes, 0, 11 * 4, &error);
  g_assert_no_error (error);
  b = float_tensor (PIQ_DTYPE_F32, shape, 2, packed);
  gout = float_tensor (PIQ_DTYPE_F32, shape, 2, dy);
  st = piq_tensor_new_from_data (PIQ_DTYPE_F32, 7, (const guint8 *) s7, sizeof s7, &error);
  zt = piq_tensor_new_from_data (PIQ_DTYPE_INT32, 7, (const guint8 *) z7, sizeof z7, &error);
  ya = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  yb = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  ga = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  gb = float_tensor (PIQ_DTYPE_F32, shape, 2, NULL);
  sa = piq_tensor_new (PIQ_DTYPE_F32, 7, &error);
  sb = piq_tensor_new (PIQ_DTYPE_F32, 7, &error);
  g_assert_true (piq_quantizer_fake_quantize (q, fmt, a, st, zt, ya, NULL, &error));
  g_assert_true (piq_quantizer_fake_quantize (q, fmt, b, st, zt, yb, NULL, &error));
  g_assert_true (piq_quantizer_fake_quantize_backward (q, fmt, a, st, zt, gout, 1.0, ga, sa, NULL,
                                                       &error));
  g_assert_true (piq_quantizer_fake_quantize_backward (q, fmt, b, st, zt, gout, 1.0, gb, sb, NULL,
                                                       &error));
  g_assert_no_error (error);
  y1 = snapshot (ya);
  y2 = snapshot (yb);
  g1 = snapshot (ga);
  g2 = snapshot (gb);
  s1 = snapshot (sa);
  s2 = snapshot (sb);
  g_assert_true (g_bytes_equal (y1, y2));
  g_assert_true (g_bytes_equal (g1, g2));
  g_assert_true (g_bytes_equal (s1, s2));
  for (int c = 0; c < 7; c++)
    g_assert_false (isnan (load (sa, c)));     /* no padding NaN was read */
}

/* ---- registration ---- */

static const QatCase base_cases[] = {
  { "tensor/1", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 1 } },
  { "tensor/7", PIQ_DTYPE_INT8, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 7 } },
  { "tensor/17", PIQ_DTYPE_UINT4, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 17 } },
  { "tensor/65/symmetric", PIQ_DTYPE_INT8, TRUE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 65 } },
  { "tensor/1023/uint8-symmetric", PIQ_DTYPE_UINT8, TRUE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 1023 } },
  { "tensor/3x31/int4", PIQ_DTYPE_INT4, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 2, { 3, 31 } },
  { "tensor/16385/int16", PIQ_DTYPE_INT16, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 16385 } },
  { "tensor/2x33x1001/int2", PIQ_DTYPE_INT2, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 3, { 2, 33, 1001 } },
  { "tensor/0", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 0 } },
  { "channel/axis0/7x33", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_CHANNEL, 0, 0, 2, { 7, 33 } },
  { "channel/axis1/7x33", PIQ_DTYPE_INT8, FALSE, PIQ_GRANULARITY_CHANNEL, 1, 0, 2, { 7, 33 } },
  { "channel/axis-1/5x16", PIQ_DTYPE_INT8, TRUE, PIQ_GRANULARITY_CHANNEL, -1, 0, 2, { 5, 16 } },
  { "channel/axis0/3x5x17", PIQ_DTYPE_UINT4, FALSE, PIQ_GRANULARITY_CHANNEL, 0, 0, 3, { 3, 5, 17 } },
  { "channel/axis1/3x5x17", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_CHANNEL, 1, 0, 3, { 3, 5, 17 } },
  { "channel/axis2/3x5x17", PIQ_DTYPE_INT4, TRUE, PIQ_GRANULARITY_CHANNEL, 2, 0, 3, { 3, 5, 17 } },
  { "channel/axis1/2x3x20000", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_CHANNEL, 1, 0, 3, { 2, 3, 20000 } },
  { "block/32/4x64", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_BLOCK, 0, 32, 2, { 4, 64 } },
  { "block/32/3x100", PIQ_DTYPE_INT8, FALSE, PIQ_GRANULARITY_BLOCK, 0, 32, 2, { 3, 100 } },
  { "block/64/2x3x65", PIQ_DTYPE_INT4, TRUE, PIQ_GRANULARITY_BLOCK, 0, 64, 3, { 2, 3, 65 } },
  { "block/16/1x15", PIQ_DTYPE_UINT4, FALSE, PIQ_GRANULARITY_BLOCK, 0, 16, 2, { 1, 15 } },
  { "block/20000/2x40001", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_BLOCK, 0, 20000, 2, { 2, 40001 } },
};

static const QatCase thread_cases[] = {
  { "tensor/100003", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_TENSOR, 0, 0, 1, { 100003 } },
  { "channel/axis0/3x40001", PIQ_DTYPE_INT8, FALSE, PIQ_GRANULARITY_CHANNEL, 0, 0, 2, { 3, 40001 } },
  { "channel/axis1/100x257", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_CHANNEL, 1, 0, 2, { 100, 257 } },
  { "channel/axis1/4x5x20000", PIQ_DTYPE_INT4, TRUE, PIQ_GRANULARITY_CHANNEL, 1, 0, 3, { 4, 5, 20000 } },
  { "block/32/300x333", PIQ_DTYPE_UINT8, FALSE, PIQ_GRANULARITY_BLOCK, 0, 32, 2, { 300, 333 } },
};

static const char *
dt_name (PiqDtype dt)
{
  return dt == PIQ_DTYPE_F32 ? "f32" : dt == PIQ_DTYPE_BF16 ? "bf16" : "f16";
}

int
main (int argc, char **argv)
{
  static const PiqDtype fdts[] = { PIQ_DTYPE_F32, PIQ_DTYPE_BF16, PIQ_DTYPE_F16 };
  GPtrArray *keep = g_ptr_array_new_with_free_func (g_free);
  int ret;

  g_test_init (&argc, &argv, NULL);

  for (gsize i = 0; i < G_N_ELEMENTS (base_cases); i++)
    for (gsize a = 0; a < G_N_ELEMENTS (fdts); a++)
      for (gsize b = 0; b < G_N_ELEMENTS (fdts); b++)
        for (int pow2 = 0; pow2 < 2; pow2++)
          {
            RunCase *rc;
            char *path;

            if (a != b && pow2)
              continue;
            rc = g_new0 (RunCase, 1);
            rc->c = base_cases[i];
            rc->xdt = fdts[a];
            rc->gdt = fdts[b];
            rc->pow2 = pow2;
            rc->n_threads = 1 + (guint) ((i + a + b) % 3);
            g_ptr_array_add (keep, rc);
            path = g_strdup_printf ("/qat/%s/x-%s/grad-%s/%s", base_cases[i].name, dt_name (fdts[a]),
                                    dt_name (fdts[b]), pow2 ? "pow2-scales" : "scales");
            g_test_add_data_func (path, rc, test_case);
            g_free (path);
          }
  for (gsize f = 0; f < G_N_ELEMENTS (o_codes); f++)
    {
      static const struct { PiqGranularity gran; guint block; gboolean e8m0; const char *name; } g[] = {
        { PIQ_GRANULARITY_TENSOR, 0, FALSE, "tensor" },
        { PIQ_GRANULARITY_CHANNEL, 0, FALSE, "channel" },
        { PIQ_GRANULARITY_BLOCK, 32, FALSE, "block/32" },
        { PIQ_GRANULARITY_BLOCK, 64, FALSE, "block/64" },
        { PIQ_GRANULARITY_BLOCK, 32, TRUE, "block/32/e8m0" },
      };
      for (gsize k = 0; k < G_N_ELEMENTS (g); k++)
        {
          CodeCase *cc = g_new0 (CodeCase, 1);
          char *path;
          cc->f = &o_codes[f];
          cc->gran = g[k].gran;
          cc->block = g[k].block;
          cc->e8m0 = g[k].e8m0;
          g_ptr_array_add (keep, cc);
          path = g_strdup_printf ("/qat/code/%s/%s", o_codes[f].name, g[k].name);
          g_test_add_data_func (path, cc, test_code);
          g_free (path);
          if (cc->gran == PIQ_GRANULARITY_BLOCK && (cc->e8m0 || o_codes[f].dtype == PIQ_DTYPE_NF4))
            {
              path = g_strdup_printf ("/qat/code/%s/%s/requantize", o_codes[f].name, g[k].name);
              g_test_add_data_func (path, cc, test_code_requantize);
              g_free (path);
            }
        }
    }
  g_test_add_func ("/qat/strided-source", test_strided);
  g_test_add_func ("/qat/f32-runs", test_f32_runs);
  g_test_add_func ("/qat/half-tables", test_half_tables);
  g_test_add_func ("/qat/order", test_order);
  for (gsize i = 0; i < G_N_ELEMENTS (thread_cases); i++)
    {
      char *path = g_strdup_printf ("/qat/threads/%s", thread_cases[i].name);
      g_test_add_data_func (path, &thread_cases[i], test_threads);
      g_free (path);
    }
  for (int b = 0; b < N_BAD; b++)
    {
      char *path = g_strdup_printf ("/qat/errors/%s", bad_cases[b].name);
      g_test_add_data_func (path, GINT_TO_POINTER (b), test_bad);
      g_free (path);
    }
  ret = g_test_run ();
  g_ptr_array_unref (keep);
  return ret;
}

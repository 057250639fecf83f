/* piq-qat.c: fake quantization with its straight-through mask, and LSQ gradients
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The arithmetic is PyTorch 1.13's, operation for operation (docs/qat.md):
 * the forward pass is fake_quantize_per_tensor_affine_cachemask's CPU kernel and
 * the backward pass _fake_quantize_learnable_per_{tensor,channel}_affine_backward's.
 * The per-element work runs on the parallel driver over fixed work items (a group's
 * positions cut into chunks of QAT_CHUNK); an item adds its gradient terms into 16
 * binary64 lanes (position i of the chunk into lane i mod 16, in order), folds them
 * as lane k += lane k + h for h = 8, 4, 2, 1, and a group's sum adds its items' sums
 * in index order (docs/qat.md). Work items do not depend on the thread count, and
 * the kernels (simd/piq-qat-vec-body.h) reproduce the lanes exactly on every ISA,
 * so the results depend on neither.
 */
#include "config.h"

/* Every multiply and add is rounded on its own, as on the x86 builds of torch
 * whose results the tests compare with (no fused multiply-add on AArch64 either). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize ("fp-contract=off")
#endif

#include <float.h>
#include <math.h>
#include <string.h>

#include "piq-qat.h"
#include "piq-error.h"
#include "piq-dtype-private.h"
#include "piq-format-private.h"
#include "piq-tensor-private.h"
#include "piq-parallel-private.h"
#include "piq-quantizer-private.h"
#include "simd/piq-convert-private.h"
#include "simd/piq-formats-private.h"

/* Elements per work item: large enough that an item's bookkeeping is negligible,
 * small enough that a per-tensor call splits over every thread. */
#define QAT_CHUNK 16384
G_STATIC_ASSERT (QAT_CHUNK % PIQ_QAT_LANES == 0);   /* an item starts at lane 0 */

typedef struct {
  PiqEngineView v;        /* data, shape, stride */
  size_t        esize;    /* bytes per element */
  size_t        stride;   /* bytes between rows */
  int           ft;       /* PIQ_F_* of a float view */
} QatView;

typedef struct {
  /* the grouping */
  int       gran;
  uint64_t  n;            /* elements */
  uint64_t  cols;         /* the last axis */
  uint64_t  n_groups;
  uint64_t  group_len;    /* elements of a full group */
  uint64_t  ch_dim, ch_inner;   /* per channel: group = (flat / inner) % dim */
  uint64_t  bs, nb;       /* per block: block size, blocks per row */
  uint64_t  cpg;          /* work items per group */
  /* the quantization grid: integers [qmin, qmax], or a code format's values */
  int64_t   qmin, qmax;
  int       code;         /* PIQ_C_* of a code format, −1 for integers */
  const PiqMinifloat *mf; /* the minifloat's definition (NULL for NF4) */
  float     gmax;         /* the code format's largest magnitude */
  gboolean  e8m0;         /* scales must be powers of two (MX) */
  const float   *scales;  /* n_groups (a copy: the tensors' data may be unaligned) */
  const int64_t *zps;
  float     grad_factor;
  /* the views */
  QatView   x, y, mask, dy, dx;
  gboolean  has_y, has_mask, has_dx, want_sums;
  double   *sum_s, *sum_z;  /* one per work item */
  const PiqKernelTable *kern;   /* the quantizer's kernels (its SIMD cap) */
  int       stream;       /* large call: the kernels may stream their f32 outputs */
} QatCall;

/* ---------------------------------------------------------------------------
 * Per element: torch's arithmetic. */

/* nearbyintf without the libm call (which saves and restores the floating-point
 * environment on every element): adding and subtracting 2^23 rounds a magnitude
 * below 2^23 to an integer in the default rounding mode, ties to even; larger
 * magnitudes, ±Inf and NaN are already what nearbyintf returns. The sign is kept,
 * −0 included. Exact only without FMA contraction and value-changing optimizations,
 * which this file does not allow. */
static inline float
rne (float v)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
  float a = fabsf (v);

  if (!(a < 0x1p23f))
    return v;
  return copysignf ((a + 0x1p23f) - 0x1p23f, v);
#else
  return nearbyintf (v);         /* excess precision (x87) would round the sum wrongly */
#endif
}

/* fake_quantize_tensor_cachemask_kernel: qval = (int64)(zp + nearbyint(x · inv)), the
 * addition in binary32; y = (clamp(qval) − zp) · s, the product in binary64 then
 * rounded to binary32; mask = qmin ≤ qval ≤ qmax. NaN: y = 0, mask 0 (as requantize
 * sends NaN to the zero point); ±Inf and overflow saturate with mask 0. */
static inline float
fq_forward (float x, float s, float inv, int64_t zp, int64_t qmin, int64_t qmax, uint8_t *inside)
{
  float qf = (float) zp + rne (x * inv);
  int64_t q;

  if (isnan (qf))
    {
      *inside = 0;
      return 0.0f;
    }
  if (qf < (float) qmin)
    q = qmin, *inside = 0;
  else if (qf > (float) qmax)
    q = qmax, *inside = 0;
  else
    q = (int64_t) qf, *inside = (q >= qmin && q <= qmax);
  /* (float) qmin may round for 32-bit ranges: the integer compare above decides */
  if (q < qmin)
    q = qmin;
  if (q > qmax)
    q = qmax;
  return (float) ((double) (q - zp) * (double) s);
}

/* _fake_quantize_grad_learnable_{tensor,channel}_kernel: xqi = nearbyint(zp + x · inv)
 * (zp added before rounding, unlike the forward pass); dx = dy · [inside];
 * inside: ds = dy · (xfq − x) · inv · gf, dz = 0; below: ds = dy · (qmin − zp) · gf,
 * above: ds = dy · (qmax − zp) · gf, dz = −dy · s · gf. */
static inline float
fq_backward (float x, float dy, float s, float inv, int64_t zp, int64_t qmin, int64_t qmax,
             float gf, float *ds, float *dz)
{
  float qf = rne ((float) zp + x * inv);
  int side;                              /* −1 below, 0 inside, 1 above */
  int64_t q = 0;

  if (isnan (qf))
    side = -1;                           /* NaN: treated as clamped low */
  else if (qf < (float) qmin)
    side = -1;
  else if (qf > (float) qmax)
    side = 1;
  else
    {
      q = (int64_t) qf;
      side = q < qmin ? -1 : q > qmax ? 1 : 0;
    }
  if (side == 0)
    {
      float xfq = (float) (q - zp) * s;
      *ds = dy * (xfq - x) * inv * gf;
      *dz = 0.0f;
      return dy * 1.0f;
    }
  *ds = dy * (float) ((side < 0 ? qmin : qmax) - zp) * gf;
  *dz = dy * -1.0f * s * gf;
  return dy * 0.0f;
}

/* ---------------------------------------------------------------------------
 * The integer formats whose range binary32 holds (|qmin|, |qmax| ≤ 2^24: the 2- to
 * 16-bit types) go through the kernel layer's qat_forward and qat_backward
 * (simd/piq-kernels-private.h), on the quantizer's table, for every combination of
 * f32, bf16 and f16 tensors. There (q − zp) · s is a binary32 product of integers
 * binary32 holds exactly, so the binary64 product rounded to binary32 of fq_forward
 * is the same number. */

static inline gboolean
kernel_range (const QatCall *c)
{
  return c->code < 0 && c->qmin >= -(1 << 24) && c->qmax <= (1 << 24);
}

static inline PiqQatArgs
qat_args (const QatCall *c, float s, float inv, int64_t zp)
{
  gboolean back = c->want_sums || c->has_dx;
  PiqQatArgs a = {
    .s = s, .inv = inv, .gf = c->grad_factor,
    .zp = (float) zp, .lo = (float) c->qmin, .hi = (float) c->qmax,
    .lo_zp = (float) (c->qmin - zp), .hi_zp = (float) (c->qmax - zp),
    .x_ft = c->x.ft,
    .g_ft = back ? c->dy.ft : PIQ_F_F32,
    .o_ft = back ? (c->has_dx ? c->dx.ft : PIQ_F_F32) : (c->has_y ? c->y.ft : PIQ_F_F32),
    .stream = c->stream,
  };
  return a;
}

/* The sum of a work item's 16 lanes: lane k += lane k + h for h = 8, 4, 2, 1 (k < h),
 * in binary64; the result is lane 0. */
static inline double
sum_lanes (double *l)
{
  for (int h = PIQ_QAT_LANES / 2; h >= 1; h /= 2)
    for (int k = 0; k < h; k++)
      l[k] += l[k + h];
  return l[0];
}

/* Code formats (docs/qat.md): v = x · inv; Q(v) is the format's nearest value (the
 * quantize rule of the format: ties to even for the minifloats, bitsandbytes'
 * thresholds for NF4), saturating, and 0 for NaN; y = Q(v) · s; the straight-through
 * mask passes where |v| ≤ the format's largest magnitude. */
static inline float
code_q (const QatCall *c, float v)
{
  if (isnan (v))
    return 0.0f;
  if (c->code == PIQ_C_NF4)
    return piq_nf4_values[piq_nf4_encode (v, 0, 0.0f)];
  return piq_minifloat_decode (c->mf, piq_minifloat_encode (c->mf, v, 1, 0, 0.0f));
}

static inline float
code_forward (const QatCall *c, float x, float s, float inv, uint8_t *inside)
{
  float v = x * inv;

  *inside = fabsf (v) <= c->gmax;
  return code_q (c, v) * s;
}

/* LSQ on the grid: d(s · Q(x/s))/ds with Q' = 1 inside (the STE) and 0 outside:
 * inside: ds = dy · (Q(v) − v) · gf, dx = dy; outside: ds = dy · Q(v) · gf (±max),
 * dx = dy · 0; NaN: ds = 0, dx = dy · 0. */
static inline float
code_backward (const QatCall *c, float x, float dy, float inv, float gf, float *ds)
{
  float v = x * inv, qv = code_q (c, v);

  if (fabsf (v) <= c->gmax)
    {
      *ds = dy * (qv - v) * gf;
      return dy * 1.0f;
    }
  *ds = isnan (v) ? 0.0f : dy * qv * gf;
  return dy * 0.0f;
}

/* ---------------------------------------------------------------------------
 * The walk: work item w is group w / cpg, positions [j·CHUNK, (j+1)·CHUNK) of it. */

static uint64_t
group_length (const QatCall *c, uint64_t g)
{
  if (c->gran == PIQ_GRANULARITY_BLOCK)
    {
      uint64_t b = g % c->nb;
      return MIN (c->bs, c->cols - b * c->bs);
    }
  return c->group_len;
}

/* The flat index of position k of group g, and how many positions from k on are
 * consecutive in the flat index. */
static uint64_t
group_flat (const QatCall *c, uint64_t g, uint64_t k, uint64_t *run)
{
  switch (c->gran)
    {
    case PIQ_GRANULARITY_CHANNEL:
      *run = c->ch_inner - k % c->ch_inner;
      return ((k / c->ch_inner) * c->ch_dim + g) * c->ch_inner + k % c->ch_inner;
    case PIQ_GRANULARITY_BLOCK:
      *run = UINT64_MAX;
      return (g / c->nb) * c->cols + (g % c->nb) * c->bs + k;
    default:
      *run = UINT64_MAX;
      return k;
    }
}

static inline char *
at (const QatView *v, uint64_t row, uint64_t col)
{
  return (char *) v->v.data + row * v->stride + col * v->esize;
}

static void
run_items (void     *data,
           uint64_t  start,
           uint64_t  n_items)
{
  QatCall *c = data;

  for (uint64_t w = start; w < start + n_items; w++)
    {
      uint64_t g = w / c->cpg, j = w % c->cpg;
      uint64_t len = group_length (c, g);
      uint64_t k = MIN (j * QAT_CHUNK, len), k1 = MIN (k + QAT_CHUNK, len);
      float s = c->scales[g], inv = 1.0f / s, gf = c->grad_factor;
      int64_t zp = c->zps[g];
      const PiqQatArgs qa = qat_args (c, s, inv, zp);
      gboolean back = c->want_sums || c->has_dx;
      gboolean kernel = kernel_range (c);
      /* the gradient terms: position k of the group into lane k mod 16 (an item
       * starts at a multiple of 16), [0, 16) the scale's, [16, 32) the zero point's */
      double lanes[2 * PIQ_QAT_LANES] = { 0 };

      while (k < k1)
        {
          uint64_t run, flat = group_flat (c, g, k, &run);
          uint64_t row = flat / c->cols, col = flat % c->cols;
          uint64_t m = MIN (MIN (run, k1 - k), c->cols - col);
          const char *xp = at (&c->x, row, col);

          if (kernel && back)
            c->kern->qat_backward (xp, at (&c->dy, row, col), m, &qa,
                                   c->has_dx ? at (&c->dx, row, col) : NULL,
                                   k % PIQ_QAT_LANES, lanes);
          else if (kernel)
            c->kern->qat_forward (xp, m, &qa, c->has_y ? at (&c->y, row, col) : NULL,
                                  c->has_mask ? (uint8_t *) at (&c->mask, row, col) : NULL);
          else if (back)
            {
              const char *dyp = at (&c->dy, row, col);
              char *dxp = c->has_dx ? at (&c->dx, row, col) : NULL;
              for (uint64_t i = 0; i < m; i++)
                {
                  float ds, dz = 0.0f, dx;
                  unsigned l = (unsigned) ((k + i) % PIQ_QAT_LANES);
                  if (c->code < 0)
                    dx = fq_backward (piq_load_f (xp, i, c->x.ft), piq_load_f (dyp, i, c->dy.ft),
                                      s, inv, zp, c->qmin, c->qmax, gf, &ds, &dz);
                  else
                    dx = code_backward (c, piq_load_f (xp, i, c->x.ft), piq_load_f (dyp, i, c->dy.ft),
                                        inv, gf, &ds);
                  if (dxp != NULL)
                    piq_store_f (dxp, i, dx, c->dx.ft);
                  lanes[l] += (double) ds;
                  lanes[PIQ_QAT_LANES + l] += (double) dz;
                }
            }
          else
            {
              char *yp = c->has_y ? at (&c->y, row, col) : NULL;
              uint8_t *mp = c->has_mask ? (uint8_t *) at (&c->mask, row, col) : NULL;
              for (uint64_t i = 0; i < m; i++)
                {
                  uint8_t inside;
                  float y = c->code < 0
                            ? fq_forward (piq_load_f (xp, i, c->x.ft), s, inv, zp, c->qmin, c->qmax,
                                          &inside)
                            : code_forward (c, piq_load_f (xp, i, c->x.ft), s, inv, &inside);
                  if (yp != NULL)
                    piq_store_f (yp, i, y, c->y.ft);
                  if (mp != NULL)
                    mp[i] = inside;
                }
            }
          k += m;
        }
      if (c->want_sums)
        {
          c->sum_s[w] = sum_lanes (lanes);
          c->sum_z[w] = sum_lanes (lanes + PIQ_QAT_LANES);
        }
    }
}

static void
run_call (PiqQuantizer *self,
          QatCall      *c)
{
  uint64_t n_items = c->n_groups * c->cpg;
  PiqEngine eng;
  guint n_threads;

  piq_quantizer_get_engine (self, &eng);
  n_threads = eng.n_threads;
  c->kern = eng.kernels;
  /* x (and dy) read and y (or dx) written, as the engine's PIQ_STREAM_MIN_BYTES rule */
  c->stream = c->n * (c->x.esize + (c->want_sums ? c->dy.esize : 0)
                      + (c->has_dx ? c->dx.esize : 0) + (c->has_y ? c->y.esize : 0)
                      + (c->has_mask ? 1 : 0)) >= PIQ_STREAM_MIN_BYTES;

  piq_parallel_run (n_threads, n_items, 1,
                    c->n >= PIQ_PARALLEL_MIN_ELEMENTS ? 0 : UINT64_MAX, run_items, c);
}

/* ---------------------------------------------------------------------------
 * Validation: every check before any byte is written. */

static gboolean
fail (GError    **error,
      PiqError    code,
      const char *fmt,
      ...) G_GNUC_PRINTF (3, 4);

static gboolean
fail (GError    **error,
      PiqError    code,
      const char *fmt,
      ...)
{
  va_list ap;
  char *msg;

  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, PIQ_ERROR, code, msg);
  g_free (msg);
  return FALSE;
}

static gboolean
float_view (PiqTensor   *t,
            const char  *what,
            QatView     *out,
            GError     **error)
{
  piq_tensor_to_engine (t, &out->v);
  switch (out->v.dtype)
    {
    case PIQ_DTYPE_F32:  out->ft = PIQ_F_F32;  out->esize = 4; break;
    case PIQ_DTYPE_BF16: out->ft = PIQ_F_BF16; out->esize = 2; break;
    case PIQ_DTYPE_F16:  out->ft = PIQ_F_F16;  out->esize = 2; break;
    default:
      return fail (error, PIQ_ERROR_UNSUPPORTED, "%s is %s; fake quantization takes f32, bf16 "
                   "or f16", what, piq_dtype_describe ((PiqDtype) out->v.dtype));
    }
  out->stride = out->v.row_stride != 0 ? out->v.row_stride
              : (size_t) out->v.shape[out->v.n_dims - 1] * out->esize;
  return TRUE;
}

static gboolean
same_shape (const PiqEngineView *a,
            const PiqEngineView *b,
            const char          *what,
            GError             **error)
{
  if (a->n_dims == b->n_dims && memcmp (a->shape, b->shape, a->n_dims * sizeof a->shape[0]) == 0)
    return TRUE;
  {
    GString *sa = g_string_new (NULL), *sb = g_string_new (NULL);
    for (unsigned d = 0; d < a->n_dims; d++)
      g_string_append_printf (sa, "%s%" G_GUINT64_FORMAT, d ? "×" : "", a->shape[d]);
    for (unsigned d = 0; d < b->n_dims; d++)
      g_string_append_printf (sb, "%s%" G_GUINT64_FORMAT, d ? "×" : "", b->shape[d]);
    fail (error, PIQ_ERROR_SIZE, "%s has shape %s, the source %s", what, sb->str, sa->str);
    g_string_free (sa, TRUE);
    g_string_free (sb, TRUE);
  }
  return FALSE;
}

/* The grouping of @src under @format, and the integer range. */
static gboolean
setup_layout (PiqFormat     *format,
              const QatView *x,
              QatCall       *c,
              GError       **error)
{
  const PiqEngineFormat *f = piq_format_peek (format);
  const PiqDtypeInfo *info = piq_dtype_info (f->dtype);
  const PiqEngineView *v = &x->v;

  if (!piq_format_validate (format, error))
    return FALSE;
  c->code = -1;
  if (info != NULL && info->kind == PIQ_KIND_CODE)
    {
      int code = f->dtype - PIQ_DTYPE_FP8_E4M3;
      if (code == PIQ_C_NF4)
        c->gmax = 1.0f;
      else if (code >= 0 && code < PIQ_N_CODE && piq_code_family[code] == PIQ_FAMILY_MINIFLOAT)
        {
          c->mf = &piq_minifloats[code];
          c->gmax = c->mf->max;
        }
      else
        code = -1;
      c->code = code;
    }
  if (c->code < 0 && (info == NULL || info->kind != PIQ_KIND_INT || info->bits > 32))
    return fail (error, PIQ_ERROR_UNSUPPORTED, "fake quantization takes integer formats of "
                 "2 to 32 bits, the FP8, FP6 and FP4 minifloats and NF4, not %s",
                 piq_dtype_describe ((PiqDtype) f->dtype));
  if (c->code < 0 && f->scale_dtype == PIQ_DTYPE_E8M0)
    return fail (error, PIQ_ERROR_UNSUPPORTED, "fake quantization of integers takes float "
                 "scales, not E8M0");
  c->e8m0 = f->scale_dtype == PIQ_DTYPE_E8M0;
  c->qmin = c->code < 0 ? info->min : 0;
  c->qmax = c->code < 0 ? (int64_t) info->max : 0;
  c->gran = f->granularity;
  c->n = 1;
  for (unsigned d = 0; d < v->n_dims; d++)
    c->n *= v->shape[d];
  c->cols = v->shape[v->n_dims - 1];
  switch (f->granularity)
    {
    case PIQ_GRANULARITY_CHANNEL:
      {
        int axis = f->axis < 0 ? f->axis + (int) v->n_dims : f->axis;
        if (axis < 0 || axis >= (int) v->n_dims)
          return fail (error, PIQ_ERROR_SIZE, "axis %d does not exist in a tensor of %u "
                       "dimension%s", f->axis, v->n_dims, v->n_dims == 1 ? "" : "s");
        c->ch_dim = v->shape[axis];
        c->ch_inner = 1;
        for (unsigned d = (unsigned) axis + 1; d < v->n_dims; d++)
          c->ch_inner *= v->shape[d];
        c->n_groups = c->ch_dim;
        c->group_len = c->ch_dim ? c->n / c->ch_dim : 0;
        if (c->ch_inner == 0)
          c->ch_inner = 1;            /* empty tensor: no positions are walked */
        break;
      }
    case PIQ_GRANULARITY_BLOCK:
      c->bs = piq_engine_block_size (f);
      c->nb = (c->cols + c->bs - 1) / c->bs;
      c->n_groups = c->cols ? (c->n / c->cols) * c->nb : 0;
      c->group_len = c->bs;
      break;
    default:
      c->n_groups = 1;
      c->group_len = c->n;
      break;
    }
  c->cpg = MAX ((c->group_len + QAT_CHUNK - 1) / QAT_CHUNK, 1);
  return TRUE;
}

/* Scales (f32) and zero points (int32, or none for a symmetric format), one per
 * group, copied and checked. */
static gboolean
load_params (PiqFormat   *format,
             PiqTensor   *scales,
             PiqTensor   *zero_points,
             QatCall     *c,
             float      **scales_out,
             int64_t    **zps_out,
             GError     **error)
{
  const PiqEngineFormat *f = piq_format_peek (format);
  PiqEngineView sv, zv;
  g_autofree float *s = NULL;
  g_autofree int64_t *z = NULL;
  uint64_t ns, g;

  piq_tensor_to_engine (scales, &sv);
  if (sv.dtype != PIQ_DTYPE_F32)
    return fail (error, PIQ_ERROR_UNSUPPORTED, "scales are %s, not f32",
                 piq_dtype_describe ((PiqDtype) sv.dtype));
  ns = piq_tensor_get_n_elements (scales);
  if (ns != c->n_groups)
    return fail (error, PIQ_ERROR_SIZE, "%" G_GUINT64_FORMAT " scales given, the source has %"
                 G_GUINT64_FORMAT " %s", ns, c->n_groups,
                 c->gran == PIQ_GRANULARITY_CHANNEL ? "channels"
                 : c->gran == PIQ_GRANULARITY_BLOCK ? "blocks" : "tensor (1 scale)");
  if (zero_points != NULL)
    {
      piq_tensor_to_engine (zero_points, &zv);
      if (f->symmetric || c->code >= 0)
        return fail (error, PIQ_ERROR_INVALID_ZERO_POINT, "zero points given for a %s format "
                     "(its zero point is implied)", c->code >= 0 ? "code" : "symmetric");
      if (zv.dtype != PIQ_DTYPE_INT32)
        return fail (error, PIQ_ERROR_UNSUPPORTED, "zero points are %s, not int32",
                     piq_dtype_describe ((PiqDtype) zv.dtype));
      if (piq_tensor_get_n_elements (zero_points) != c->n_groups)
        return fail (error, PIQ_ERROR_SIZE, "%" G_GUINT64_FORMAT " zero points given, %"
                     G_GUINT64_FORMAT " scales are needed", piq_tensor_get_n_elements (zero_points),
                     c->n_groups);
    }
  else if (!f->symmetric && c->code < 0)
    return fail (error, PIQ_ERROR_INVALID_ZERO_POINT, "an affine format needs zero points");

  s = g_new (float, MAX (c->n_groups, 1));
  z = g_new (int64_t, MAX (c->n_groups, 1));
  for (g = 0; g < c->n_groups; g++)
    {
      s[g] = (float) piq_tensor_get_value (scales, g);
      if (!(isfinite (s[g]) && s[g] > 0.0f && isfinite (1.0f / s[g])))
        return fail (error, PIQ_ERROR_INVALID_SCALE, "scale %" G_GUINT64_FORMAT " is %g: a "
                     "scale is finite and positive, and so is its binary32 inverse", g,
                     (double) s[g]);
      if (c->e8m0 && (frexpf (s[g], &(int) { 0 }) != 0.5f || s[g] < 0x1p-127f))
        return fail (error, PIQ_ERROR_INVALID_SCALE, "scale %" G_GUINT64_FORMAT " is %g; an "
                     "E8M0 scale is a power of two from 2^-127 to 2^127", g, (double) s[g]);
      if (zero_points != NULL)
        {
          z[g] = (int64_t) piq_tensor_get_value (zero_points, g);
          if (z[g] < c->qmin || z[g] > c->qmax)
            return fail (error, PIQ_ERROR_INVALID_ZERO_POINT, "zero point %" G_GUINT64_FORMAT
                         " is %" G_GINT64_FORMAT ", outside [%" G_GINT64_FORMAT ", %"
                         G_GINT64_FORMAT "]", g, z[g], c->qmin, c->qmax);
        }
      else
        z[g] = c->code >= 0 || c->qmin < 0 ? 0 : (c->qmax + 1) / 2;
    }
  *scales_out = g_steal_pointer (&s);
  *zps_out = g_steal_pointer (&z);
  return TRUE;
}

static gboolean
check_output (PiqTensor   *t,
              const char  *what,
              GError     **error)
{
  if (piq_tensor_is_writable (t))
    return TRUE;
  return fail (error, PIQ_ERROR_READ_ONLY, "%s is read-only", what);
}

typedef struct {
  const char *what;
  const void *data;
  gsize       size;
} Span;

static Span
span_of (PiqTensor  *t,
         const char *what)
{
  Span s = { what, NULL, 0 };
  if (t != NULL)
    s.data = piq_tensor_get_data (t, &s.size);
  return s;
}

static gboolean
spans_overlap (const Span *a,
               const Span *b)
{
  uintptr_t a0 = (uintptr_t) a->data, b0 = (uintptr_t) b->data;
  return a->data != NULL && b->data != NULL && a->size > 0 && b->size > 0
         && a0 < b0 + b->size && b0 < a0 + a->size;
}

/* No output overlaps an input or another output. */
static gboolean
check_overlap (const Span *in,
               guint       n_in,
               const Span *out,
               guint       n_out,
               GError    **error)
{
  for (guint i = 0; i < n_out; i++)
    {
      for (guint j = 0; j < n_in; j++)
        if (spans_overlap (&out[i], &in[j]))
          return fail (error, PIQ_ERROR_OVERLAP, "%s overlaps %s", out[i].what, in[j].what);
      for (guint j = i + 1; j < n_out; j++)
        if (spans_overlap (&out[i], &out[j]))
          return fail (error, PIQ_ERROR_OVERLAP, "%s overlaps %s", out[i].what, out[j].what);
    }
  return TRUE;
}

/* A one-element tensor holding @value (for the per-tensor forms). */
static PiqTensor *
scalar_tensor (PiqDtype dtype,
               double   value)
{
  PiqTensor *t = piq_tensor_new_from_values (dtype, &value, 1, NULL);
  g_assert (t != NULL);
  return t;
}

/* The scale and zero point of a per-tensor form, as the tensors the tensor forms take. */
static gboolean
per_tensor_params (PiqFormat  *format,
                   double      scale,
                   gint64      zero_point,
                   PiqTensor **st,
                   PiqTensor **zt,
                   GError    **error)
{
  const PiqDtypeInfo *info = piq_dtype_info (piq_format_get_dtype (format));
  gboolean code = info != NULL && info->kind == PIQ_KIND_CODE;

  if (piq_format_get_granularity (format) != PIQ_GRANULARITY_TENSOR)
    return fail (error, PIQ_ERROR_UNSUPPORTED, "a scale given as a number needs a per-tensor "
                 "format; per-channel and per-block scales are a tensor");
  if (!isfinite (scale) || scale <= 0.0)
    return fail (error, PIQ_ERROR_INVALID_SCALE, "the scale is %g: a scale is finite and "
                 "positive", scale);
  if (!code && !piq_format_get_symmetric (format))
    {
      if (zero_point < G_MININT32 || zero_point > G_MAXINT32)
        return fail (error, PIQ_ERROR_INVALID_ZERO_POINT, "zero point %" G_GINT64_FORMAT
                     " is outside the int32 range", zero_point);
      *zt = scalar_tensor (PIQ_DTYPE_INT32, (double) zero_point);
    }
  else
    {
      gint64 implied = code || info == NULL || info->kind != PIQ_KIND_INT ? 0
                     : info->min < 0 ? 0 : (gint64) ((info->max + 1) / 2);
      if (zero_point != implied)
        return fail (error, PIQ_ERROR_INVALID_ZERO_POINT, "zero point %" G_GINT64_FORMAT
                     " given for a %s format (its zero point is %" G_GINT64_FORMAT ")",
                     zero_point, code ? "code" : "symmetric", implied);
    }
  *st = scalar_tensor (PIQ_DTYPE_F32, scale);
  return TRUE;
}

/* ---------------------------------------------------------------------------
 * The API. */

/**
 * piq_quantizer_fake_quantize:
 * @self: a quantizer
 * @format: an integer format of 2 to 32 bits (its dtype and symmetric flag give
 *   `qmin`, `qmax` and the implied zero point), or a minifloat (FP8 E4M3 and E5M2,
 *   FP6, FP4 E2M1) or NF4 format; its granularity, axis and block size say how
 *   @scales apply
 * @src: the values, f32, bf16 or f16
 * @scales: an f32 tensor of one scale per group: 1 for a per-tensor format, the
 *   length of the axis for a per-channel one, `rows × ceil(row length / block size)`
 *   for a per-block one (row-major); its shape is not read, only its elements
 * @zero_points: (nullable): an int32 tensor of one zero point per group, in
 *   `[qmin, qmax]`; %NULL (and only %NULL) for a symmetric or code format
 * @dst: (nullable): the fake-quantized values: a float tensor (f32, bf16 or f16) of
 *   @src's shape
 * @mask: (nullable): the straight-through mask: a uint8 tensor of @src's shape,
 *   1 where the value lies inside the clamp range, else 0
 *
 * Fake quantization with PyTorch's `fake_quantize_per_tensor_affine_cachemask`
 * (and `_per_channel_`) semantics: `q = zero_point + nearbyint(x · (1/scale))`,
 * `dst = (clamp(q, qmin, qmax) − zero_point) · scale`, `mask = qmin ≤ q ≤ qmax`.
 * The straight-through gradient of @src is then `grad_out · mask`. Per-block
 * formats use one scale per block along the last axis. For a code format the
 * values go onto its grid, `dst = Q(x · (1/scale)) · scale`, and the mask is
 * `|x · (1/scale)| ≤` the format's largest magnitude; E8M0-scaled (MX) formats
 * take scales that are powers of two. The arithmetic, also for NaN and ±Inf, is
 * in [Quantization-aware training](qat.html).
 *
 * The mask is one byte per element, 0 or 1, the layout of a `torch.bool` or
 * `numpy.bool_` array, so it is used without unpacking.
 *
 * Returns: %TRUE on success; on failure nothing is written
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_fake_quantize (PiqQuantizer  *self,
                             PiqFormat     *format,
                             PiqTensor     *src,
                             PiqTensor     *scales,
                             PiqTensor     *zero_points,
                             PiqTensor     *dst,
                             PiqTensor     *mask,
                             GError       **error)
{
  QatCall c = { 0 };
  g_autofree float *s = NULL;
  g_autofree int64_t *z = NULL;

  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (scales), FALSE);
  g_return_val_if_fail (zero_points == NULL || PIQ_IS_TENSOR (zero_points), FALSE);
  g_return_val_if_fail (dst == NULL || PIQ_IS_TENSOR (dst), FALSE);
  g_return_val_if_fail (mask == NULL || PIQ_IS_TENSOR (mask), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!float_view (src, "the source", &c.x, error))
    return FALSE;
  if (dst != NULL && !float_view (dst, "the destination", &c.y, error))
    return FALSE;
  if (mask != NULL)
    {
      piq_tensor_to_engine (mask, &c.mask.v);
      if (c.mask.v.dtype != PIQ_DTYPE_UINT8)
        return fail (error, PIQ_ERROR_UNSUPPORTED, "the mask is %s, not uint8",
                     piq_dtype_describe ((PiqDtype) c.mask.v.dtype));
      c.mask.esize = 1;
      c.mask.stride = c.mask.v.row_stride ? c.mask.v.row_stride
                     : (size_t) c.mask.v.shape[c.mask.v.n_dims - 1];
    }
  if (!setup_layout (format, &c.x, &c, error))
    return FALSE;
  if (dst != NULL && !same_shape (&c.x.v, &c.y.v, "the destination", error))
    return FALSE;
  if (mask != NULL && !same_shape (&c.x.v, &c.mask.v, "the mask", error))
    return FALSE;
  if (!load_params (format, scales, zero_points, &c, &s, &z, error))
    return FALSE;
  if (dst != NULL && !check_output (dst, "the destination", error))
    return FALSE;
  if (mask != NULL && !check_output (mask, "the mask", error))
    return FALSE;
  {
    Span in[3] = { span_of (src, "the source"), span_of (scales, "the scales"),
                   span_of (zero_points, "the zero points") };
    Span out[2] = { span_of (dst, "the destination"), span_of (mask, "the mask") };
    if (!check_overlap (in, 3, out, 2, error))
      return FALSE;
  }

  c.scales = s;
  c.zps = z;
  c.has_y = dst != NULL;
  c.has_mask = mask != NULL;
  if (c.has_y)
    c.y.v.data = piq_tensor_get_writable_data (dst, NULL);
  if (c.has_mask)
    c.mask.v.data = piq_tensor_get_writable_data (mask, NULL);
  run_call (self, &c);
  return TRUE;
}

static gboolean
backward (PiqQuantizer *self,
                                      PiqFormat    *format,
                                      PiqTensor    *src,
                                      PiqTensor    *scales,
                                      PiqTensor    *zero_points,
                                      PiqTensor    *grad_out,
                                      double        grad_factor,
                                      PiqTensor    *grad_src,
                                      PiqTensor    *grad_scales,
                                      PiqTensor    *grad_zero_points,
                                      double       *total_s,
                                      double       *total_z,
                                      GError      **error)
{

  {
    QatCall c = { 0 };
    g_autofree float *s = NULL;
    g_autofree int64_t *z = NULL;
    g_autofree double *sums = NULL;
    uint64_t n_items;

    if (!float_view (src, "the source", &c.x, error)
        || !float_view (grad_out, "the output gradient", &c.dy, error)
        || (grad_src != NULL && !float_view (grad_src, "the source gradient", &c.dx, error)))
      return FALSE;
    if (grad_scales != NULL && piq_tensor_get_dtype (grad_scales) != PIQ_DTYPE_F32)
      return fail (error, PIQ_ERROR_UNSUPPORTED, "the scale gradients are %s, not f32",
                   piq_dtype_describe (piq_tensor_get_dtype (grad_scales)));
    if (grad_zero_points != NULL && piq_tensor_get_dtype (grad_zero_points) != PIQ_DTYPE_F32)
      return fail (error, PIQ_ERROR_UNSUPPORTED, "the zero-point gradients are %s, not f32",
                   piq_dtype_describe (piq_tensor_get_dtype (grad_zero_points)));
    if (!setup_layout (format, &c.x, &c, error))
      return FALSE;
    if (!same_shape (&c.x.v, &c.dy.v, "the output gradient", error))
      return FALSE;
    if (grad_src != NULL && !same_shape (&c.x.v, &c.dx.v, "the source gradient", error))
      return FALSE;
    if (grad_scales != NULL && piq_tensor_get_n_elements (grad_scales) != c.n_groups)
      return fail (error, PIQ_ERROR_SIZE, "the scale gradients have %" G_GUINT64_FORMAT
                   " elements, %" G_GUINT64_FORMAT " are needed",
                   piq_tensor_get_n_elements (grad_scales), c.n_groups);
    if (grad_zero_points != NULL && c.code >= 0)
      return fail (error, PIQ_ERROR_UNSUPPORTED, "a code format has no zero point to take a "
                   "gradient of");
    if (grad_zero_points != NULL && piq_tensor_get_n_elements (grad_zero_points) != c.n_groups)
      return fail (error, PIQ_ERROR_SIZE, "the zero-point gradients have %" G_GUINT64_FORMAT
                   " elements, %" G_GUINT64_FORMAT " are needed",
                   piq_tensor_get_n_elements (grad_zero_points), c.n_groups);
    if (!load_params (format, scales, zero_points, &c, &s, &z, error))
      return FALSE;
    if (!isfinite (grad_factor) || !isfinite ((float) grad_factor))
      return fail (error, PIQ_ERROR_INVALID_VALUE, "grad_factor is %g; it must be finite in "
                   "binary32", grad_factor);
    if ((grad_src != NULL && !check_output (grad_src, "the source gradient", error))
        || (grad_scales != NULL && !check_output (grad_scales, "the scale gradients", error))
        || (grad_zero_points != NULL
            && !check_output (grad_zero_points, "the zero-point gradients", error)))
      return FALSE;
    {
      Span in[4] = { span_of (src, "the source"), span_of (scales, "the scales"),
                     span_of (zero_points, "the zero points"),
                     span_of (grad_out, "the output gradient") };
      Span out[3] = { span_of (grad_src, "the source gradient"),
                      span_of (grad_scales, "the scale gradients"),
                      span_of (grad_zero_points, "the zero-point gradients") };
      if (!check_overlap (in, 4, out, 3, error))
        return FALSE;
    }

    c.scales = s;
    c.zps = z;
    c.grad_factor = (float) grad_factor;
    c.has_dx = grad_src != NULL;
    c.want_sums = TRUE;
    if (c.has_dx)
      c.dx.v.data = piq_tensor_get_writable_data (grad_src, NULL);
    n_items = c.n_groups * c.cpg;
    sums = g_new0 (double, 2 * MAX (n_items, 1));
    c.sum_s = sums;
    c.sum_z = sums + n_items;
    run_call (self, &c);

    {
        float *gs = grad_scales ? piq_tensor_get_writable_data (grad_scales, NULL) : NULL;
        float *gz = grad_zero_points ? piq_tensor_get_writable_data (grad_zero_points, NULL) : NULL;
        for (uint64_t g = 0; g < c.n_groups; g++)
          {
            double ts = 0.0, tz = 0.0;
            for (uint64_t j = 0; j < c.cpg; j++)
              {
                ts += c.sum_s[g * c.cpg + j];
                tz += c.sum_z[g * c.cpg + j];
              }
            if (gs != NULL)
              piq_st_f32 (gs, g, (float) ts);
            if (gz != NULL)
              piq_st_f32 (gz, g, (float) tz);
            if (total_s != NULL)        /* per tensor: the one group */
              *total_s = ts, *total_z = tz;
          }
      }
  }
  return TRUE;
}

/**
 * piq_quantizer_fake_quantize_backward:
 * @self: a quantizer
 * @format: the format given to [method@Piq.Quantizer.fake_quantize]
 * @src: the values given to the forward pass, f32, bf16 or f16
 * @scales: the scales of the forward pass (f32, one per group)
 * @zero_points: (nullable): the zero points of the forward pass (int32), %NULL for
 *   a symmetric format
 * @grad_out: the gradient of the loss with respect to the fake-quantized values:
 *   f32, bf16 or f16, @src's shape
 * @grad_factor: the factor applied to the scale and zero-point gradients (LSQ's
 *   gradient scale, `1/sqrt(n · qmax)` in the paper; 1 for none)
 * @grad_src: (nullable): the gradient with respect to @src: f32, bf16 or f16,
 *   @src's shape
 * @grad_scales: (nullable): the gradient with respect to each scale: f32, as many
 *   elements as @scales
 * @grad_zero_points: (nullable): the gradient with respect to each zero point:
 *   f32, as many elements as @scales; integer formats only
 *
 * The backward pass of learnable fake quantization (LSQ, Esser et al. 2019),
 * as PyTorch's `_fake_quantize_learnable_per_tensor_affine` and
 * `_per_channel_affine` compute it, in one pass over @src and @grad_out: with
 * `q = nearbyint(zero_point + x · (1/scale))`, inside `[qmin, qmax]` the source
 * gradient is `grad_out` and the scale's term is
 * `grad_out · (x̂ − x) / scale · grad_factor` (x̂ the fake-quantized value);
 * clamped, the source gradient is 0, the scale's term
 * `grad_out · (qmin or qmax − zero_point) · grad_factor` and the zero point's
 * `−grad_out · scale · grad_factor`. Each scale and zero-point gradient is the sum
 * of its group's terms, added in binary64 in a fixed order (16 lanes per chunk of
 * 16384, docs/qat.md) and rounded to f32, so the result is the same for any thread
 * count and SIMD level. For a code format with grid
 * rounding `Q` and `v = x · (1/scale)`, the scale's term is
 * `grad_out · (Q(v) − v) · grad_factor` where `|v|` is at most the format's
 * largest magnitude, `grad_out · Q(v) · grad_factor` beyond it. See
 * [Quantization-aware training](qat.html).
 *
 * Returns: %TRUE on success; on failure nothing is written
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_fake_quantize_backward (PiqQuantizer *self,
                                      PiqFormat    *format,
                                      PiqTensor    *src,
                                      PiqTensor    *scales,
                                      PiqTensor    *zero_points,
                                      PiqTensor    *grad_out,
                                      double        grad_factor,
                                      PiqTensor    *grad_src,
                                      PiqTensor    *grad_scales,
                                      PiqTensor    *grad_zero_points,
                                      GError      **error)
{
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (scales), FALSE);
  g_return_val_if_fail (zero_points == NULL || PIQ_IS_TENSOR (zero_points), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (grad_out), FALSE);
  g_return_val_if_fail (grad_src == NULL || PIQ_IS_TENSOR (grad_src), FALSE);
  g_return_val_if_fail (grad_scales == NULL || PIQ_IS_TENSOR (grad_scales), FALSE);
  g_return_val_if_fail (grad_zero_points == NULL || PIQ_IS_TENSOR (grad_zero_points), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return backward (self, format, src, scales, zero_points, grad_out, grad_factor, grad_src,
                   grad_scales, grad_zero_points, NULL, NULL, error);
}

/**
 * piq_quantizer_fake_quantize_per_tensor:
 * @self: a quantizer
 * @format: a per-tensor format that [method@Piq.Quantizer.fake_quantize] takes
 * @src: the values, f32, bf16 or f16
 * @scale: the scale (used as binary32, as PyTorch does)
 * @zero_point: the zero point, in `[qmin, qmax]`; the implied one for a symmetric
 *   format, 0 for a code format
 * @dst: (nullable): the fake-quantized values, @src's shape
 * @mask: (nullable): the straight-through mask, uint8, @src's shape
 *
 * [method@Piq.Quantizer.fake_quantize] with a scale and zero point given as
 * numbers.
 *
 * Returns: %TRUE on success; on failure nothing is written
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_fake_quantize_per_tensor (PiqQuantizer *self,
                                        PiqFormat    *format,
                                        PiqTensor    *src,
                                        double        scale,
                                        gint64        zero_point,
                                        PiqTensor    *dst,
                                        PiqTensor    *mask,
                                        GError      **error)
{
  g_autoptr(PiqTensor) st = NULL;
  g_autoptr(PiqTensor) zt = NULL;

  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  if (!per_tensor_params (format, scale, zero_point, &st, &zt, error))
    return FALSE;
  return piq_quantizer_fake_quantize (self, format, src, st, zt, dst, mask, error);
}

/**
 * piq_quantizer_fake_quantize_per_tensor_backward:
 * @self: a quantizer
 * @format: a per-tensor format that [method@Piq.Quantizer.fake_quantize] takes
 * @src: the values given to the forward pass
 * @scale: the scale (used as binary32)
 * @zero_point: the zero point (as for [method@Piq.Quantizer.fake_quantize_per_tensor])
 * @grad_out: the gradient with respect to the fake-quantized values, @src's shape
 * @grad_factor: the factor applied to the scale and zero-point gradients
 * @grad_src: (nullable): the gradient with respect to @src, @src's shape
 * @grad_scale: (out) (optional): the gradient with respect to the scale
 * @grad_zero_point: (out) (optional): the gradient with respect to the zero point
 *
 * [method@Piq.Quantizer.fake_quantize_backward] with a scale and zero point
 * given as numbers; the two sums are returned in binary64, not rounded to f32.
 *
 * Returns: %TRUE on success; on failure nothing is written
 *
 * Since: 1.0
 */
gboolean
piq_quantizer_fake_quantize_per_tensor_backward (PiqQuantizer *self,
                                                 PiqFormat    *format,
                                                 PiqTensor    *src,
                                                 double        scale,
                                                 gint64        zero_point,
                                                 PiqTensor    *grad_out,
                                                 double        grad_factor,
                                                 PiqTensor    *grad_src,
                                                 double       *grad_scale,
                                                 double       *grad_zero_point,
                                                 GError      **error)
{
  g_autoptr(PiqTensor) st = NULL;
  g_autoptr(PiqTensor) zt = NULL;
  double ts = 0.0, tz = 0.0;

  g_return_val_if_fail (PIQ_IS_FORMAT (format), FALSE);
  if (!per_tensor_params (format, scale, zero_point, &st, &zt, error))
    return FALSE;
  g_return_val_if_fail (PIQ_IS_QUANTIZER (self), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (src), FALSE);
  g_return_val_if_fail (PIQ_IS_TENSOR (grad_out), FALSE);
  g_return_val_if_fail (grad_src == NULL || PIQ_IS_TENSOR (grad_src), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  /* the sums come back in binary64, not through f32 tensors */
  if (!backward (self, format, src, st, zt, grad_out, grad_factor, grad_src, NULL, NULL,
                 &ts, &tz, error))
    return FALSE;
  if (grad_scale != NULL)
    *grad_scale = ts;
  if (grad_zero_point != NULL)
    *grad_zero_point = tz;
  return TRUE;
}

/* piq-hist-vec-body.h: the histogram observer's bins, PIQ_W lanes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Included by piq-kernels-vec-body.h. The scalar reference's binary32 operations
 * (piq-kernels-scalar.c, hist_bins_f32), lane-wise: a vector division rounds each
 * lane exactly as the scalar one, so each lane's quotient t is the scalar's. Then
 * trunc (min (t, bins − 1)) = min (trunc (t), bins − 1) for t ≥ 0, as bins − 1 is an
 * integer; the select sends a NaN quotient to bins − 1 as the scalar's t < bins does.
 * Lanes outside [lo, hi] (NaN included) convert a zero and take bins, so the
 * conversion only sees values in [0, bins − 1]. The tail runs the scalar kernel.
 */

VINLINE void
vhist_bins (const void *x, size_t n, const PiqHistArgs *a, uint32_t *idx)
{
  const uint8_t *s = x;
  const vf lo = vsplat (a->lo), hi = vsplat (a->hi), w = vsplat (a->hi - a->lo);
  const vf nb = vsplat ((float) a->bins), top = vsplat ((float) (a->bins - 1));
  const vi drop = (vi) { 0 } + (int32_t) a->bins;
  size_t i = 0;

  for (; i + PIQ_W <= n; i += PIQ_W)
    {
      vf v, t;
      vi inr, below, p;

      memcpy (&v, s + 4 * i, sizeof v);
      inr = (v >= lo) & (v <= hi);
      t = ((v - lo) * nb) / w;
      below = t < top;
      t = (vf) (((vi) t & below & inr) | ((vi) top & ~below & inr));
      p = __builtin_convertvector (t, vi) | (drop & ~inr);
      memcpy (idx + i, &p, sizeof p);
    }
  piq_kernels_scalar.hist_bins (s + 4 * i, n - i, a, idx + i);
}

static void
PIQ_KNAME_hist_bins (f32) (const void *x, size_t n, const PiqHistArgs *a, uint32_t *idx)
{
  vhist_bins (x, n, a, idx);
}

#define PIQ_HIST_SLOTS \
  .hist_bins = PIQ_KNAME_hist_bins (f32),

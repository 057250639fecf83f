/* piq-engine.c: validate a call once, then run it
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free. PiqQuantizer, the pi-quant C99 layer (through PiqQuantizer) and the
 * benchmark call these functions; each validates everything it is given (format,
 * recipe, shapes, buffer sizes, overlap) before it writes a byte.
 *
 * Three routes cover every format and shape:
 * - flat: per-tensor integers (the element kernels), per-tensor code formats and
 *   blocks that tile the flattened tensor (1-D, rows of whole blocks, per channel
 *   along the outermost axis of the channel's extent) — the block driver over whole
 *   parallel units;
 * - rows: blocks along rows whose length is not a multiple of the block: each row
 *   restarts its blocks, a shorter block ends it (rows must end on a byte);
 * - channels: per channel along an inner axis — the scalar driver, one thread.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "piq-engine-private.h"
#include "piq-parallel-private.h"
#include "simd/piq-formats-private.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Elements per scheduling unit: a multiple of 8 (whole bytes of every packed type),
 * of 64 bytes of every dtype, and of the reduction block. */
#define PIQ_GRAIN PIQ_REDUCE_BLOCK

enum { GRAN_TENSOR = 0, GRAN_CHANNEL = 1, GRAN_BLOCK = 2 };
enum { DT_F32 = 0, DT_F64 = 1, DT_BF16 = 2, DT_F16 = 3, DT_E8M0 = 64 };
enum {
  RULE_MIN_MAX = 0, RULE_ABS_MAX, RULE_MEAN_STD, RULE_POW2_FLOOR, RULE_POW2_CEIL,
  RULE_POW2_EVEN, RULE_POW2_RCEIL, RULE_DEFAULT,
};

static const char *const rule_names[] = {
  "min-max", "abs-max", "mean-std", "pow2-floor", "pow2-ceil", "pow2-even", "pow2-rceil", "default",
};

int
piq_engine_fail (PiqEngineError *e, int code, const char *format, ...)
{
  va_list args;

  e->code = code;
  va_start (args, format);
  vsnprintf (e->message, sizeof e->message, format, args);
  va_end (args);
  return 0;
}

#define fail piq_engine_fail

#define LABEL(dt) piq_dtype_label ((dt), (char[32]) { 0 })


/* ---------------------------------------------------------------------------
 * Sizes and shapes */

int
piq_engine_dtype_size (int dtype, uint64_t n, size_t *bytes, PiqEngineError *e)
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);
  uint64_t size;
  int overflow;

  if (info == NULL)
    return fail (e, PIQ_E_UNSUPPORTED, "%s is not a piquant dtype", LABEL (dtype));
  if (info->bits == 0)
    {
      uint64_t blocks = n / info->block_elems + (n % info->block_elems != 0);
      overflow = blocks > SIZE_MAX / info->block_bytes;
      size = overflow ? 0 : blocks * info->block_bytes;
    }
  else
    {
      /* n·bits/8 rounded up, without forming n·bits */
      uint64_t whole = n / 8 * info->bits, rest = (n % 8 * info->bits + 7) / 8;
      overflow = n / 8 > UINT64_MAX / info->bits || whole > SIZE_MAX - rest;
      size = overflow ? 0 : whole + rest;
    }
  if (overflow)
    return fail (e, PIQ_E_OVERFLOW, "%" PRIu64 " %s elements need more than %zu bytes", n,
                 info->name, (size_t) SIZE_MAX);
  if (bytes != NULL)
    *bytes = (size_t) size;
  return 1;
}

int
piq_engine_check_shape (const uint64_t *shape, unsigned n_dims, uint64_t *n, PiqEngineError *e)
{
  uint64_t total = 1;
  int empty = 0;

  if (n_dims < 1 || n_dims > PIQ_ENGINE_MAX_DIMS)
    return fail (e, PIQ_E_SIZE, "a tensor has 1 to %d dimensions, not %u", PIQ_ENGINE_MAX_DIMS,
                 n_dims);
  /* The nonzero extents' product must fit whatever their order, as numpy asks:
   * [8, 2^63, 0] and [0, 8, 2^63] are refused alike; a 0 extent then empties it. */
  for (unsigned d = 0; d < n_dims; d++)
    {
      if (shape[d] == 0)
        {
          empty = 1;
          continue;
        }
      if (total > UINT64_MAX / shape[d])
        return fail (e, PIQ_E_OVERFLOW, "the shape's element count overflows 64 bits");
      total *= shape[d];
    }
  if (empty)
    total = 0;
  if (total > (uint64_t) SIZE_MAX)
    return fail (e, PIQ_E_OVERFLOW, "%" PRIu64 " elements do not fit in memory", total);
  *n = total;
  return 1;
}

static int
checked_mul (uint64_t a, uint64_t b, size_t *out, PiqEngineError *e)
{
  if (a != 0 && b > SIZE_MAX / a)
    return fail (e, PIQ_E_OVERFLOW, "%" PRIu64 " × %" PRIu64 " bytes do not fit in memory", a, b);
  *out = (size_t) (a * b);
  return 1;
}

/* ---------------------------------------------------------------------------
 * Formats */

static int
is_bfp (const PiqDtypeInfo *info)
{
  return info->kind == PIQ_KIND_CODE && piq_code_family[info->kernel_index] == PIQ_FAMILY_BFP;
}

unsigned
piq_engine_block_size (const PiqEngineFormat *f)
{
  const PiqDtypeInfo *info = piq_dtype_info (f->dtype);

  if (info != NULL && info->bits == 0)
    return info->block_elems;
  if (f->block_size != 0)
    return f->block_size;
  return f->scale_dtype == DT_E8M0 ? 32 : 64;
}

int
piq_engine_has_zero_points (const PiqEngineFormat *f)
{
  const PiqDtypeInfo *info = piq_dtype_info (f->dtype);

  return info != NULL && info->kind == PIQ_KIND_INT && !f->symmetric && f->scale_dtype != DT_E8M0;
}

int
piq_engine_check_format (const PiqEngineFormat *f, PiqEngineError *e)
{
  const PiqDtypeInfo *info = piq_dtype_info (f->dtype);
  const char *name;

  if (info == NULL || (info->kind != PIQ_KIND_INT && info->kind != PIQ_KIND_CODE))
    return fail (e, PIQ_E_UNSUPPORTED, "cannot quantize to %s: the format's dtype must be an "
                 "integer type or a code format", LABEL (f->dtype));
  name = info->name;
  if (f->granularity < GRAN_TENSOR || f->granularity > GRAN_BLOCK)
    return fail (e, PIQ_E_UNSUPPORTED, "granularity %d is not a PiqGranularity", f->granularity);
  if (f->axis != 0 && f->granularity != GRAN_CHANNEL)
    return fail (e, PIQ_E_UNSUPPORTED, "axis %d applies to per-channel formats only", f->axis);
  if (f->block_size != 0 && f->granularity != GRAN_BLOCK)
    return fail (e, PIQ_E_UNSUPPORTED, "a block size (%u) applies to per-block formats only",
                 f->block_size);
  if (info->bits == 0)
    {
      /* ggml blocks carry their own f16 scales, 32 elements each */
      if (f->granularity != GRAN_BLOCK || (f->block_size != 0 && f->block_size != info->block_elems))
        return fail (e, PIQ_E_UNSUPPORTED, "%s is blocks of %u elements with their own scales: "
                     "its granularity is per block of %u", name, info->block_elems,
                     info->block_elems);
      if (f->scale_dtype != DT_F32 && f->scale_dtype != DT_F16)
        return fail (e, PIQ_E_UNSUPPORTED, "%s stores its scales as f16; a scale dtype of %s "
                     "does not apply", name, LABEL (f->scale_dtype));
    }
  else if (f->granularity == GRAN_TENSOR)
    {
      if (!(info->options & PIQ_OPT_PER_TENSOR))
        return fail (e, PIQ_E_UNSUPPORTED, "%s has no per-tensor form", name);
      if (f->scale_dtype != DT_F32)
        return fail (e, PIQ_E_UNSUPPORTED, "a per-tensor scale is a double on the tensor; a "
                     "scale dtype of %s applies to per-channel and per-block formats",
                     LABEL (f->scale_dtype));
    }
  else
    {
      if (f->scale_dtype == DT_E8M0 ? !(info->options & PIQ_OPT_E8M0)
          : (f->scale_dtype == DT_F32 || f->scale_dtype == DT_F16)
            ? !(info->options & PIQ_OPT_FLOAT_SCALES) : 1)
        {
          if (f->scale_dtype != DT_E8M0 && f->scale_dtype != DT_F32 && f->scale_dtype != DT_F16)
            return fail (e, PIQ_E_UNSUPPORTED, "scales are stored as f32, f16 or e8m0, not %s",
                         LABEL (f->scale_dtype));
          if (is_bfp (info))
            return fail (e, PIQ_E_UNSUPPORTED, "%s boxes share an 8-bit exponent: the scale "
                         "dtype must be e8m0, not %s", name, LABEL (f->scale_dtype));
          return fail (e, PIQ_E_UNSUPPORTED, "E8M0 scales go with the MX elements (fp8, fp6, "
                       "fp4 and signed 4- to 16-bit integers) and block floating point, not %s",
                       name);
        }
      if (piq_engine_has_zero_points (f) && (info->min < INT32_MIN || info->max > INT32_MAX))
        return fail (e, PIQ_E_UNSUPPORTED, "affine per-%s %s has zero points beyond int32, the "
                     "storage of per-channel and per-block zero points; use a symmetric format "
                     "or a narrower type", f->granularity == GRAN_BLOCK ? "block" : "channel",
                     name);
    }
  if (!f->saturate && (!(info->options & PIQ_OPT_SATURATE) || f->scale_dtype == DT_E8M0))
    return fail (e, PIQ_E_UNSUPPORTED, "saturation applies to FP8 with float scales (MX "
                 "elements always saturate), not to %s%s", name,
                 f->scale_dtype == DT_E8M0 ? " with e8m0 scales" : "");
  if (f->high_nibble_first && !(info->options & PIQ_OPT_HIGH_NIBBLE))
    return fail (e, PIQ_E_UNSUPPORTED, "high-nibble-first applies to 4-bit codes, not to %s", name);
  if (f->double_quant && (!(info->options & PIQ_OPT_DOUBLE_QUANT) ||
                          f->granularity == GRAN_TENSOR || f->scale_dtype != DT_F32))
    return fail (e, PIQ_E_UNSUPPORTED, "double quantization applies to the f32 per-block or "
                 "per-channel scales of nf4, fp4_bnb and nf8, not to %s%s", name,
                 f->granularity == GRAN_TENSOR ? " per tensor" : "");
  return 1;
}

/* The rule a recipe selects for a format, checked against it. */
static int
effective_rule (const PiqEngineFormat *f, const PiqDtypeInfo *info, const PiqEngineRecipe *r,
                int *rule, PiqEngineError *e)
{
  int affine = piq_engine_has_zero_points (f);
  int e8m0 = f->scale_dtype == DT_E8M0 && f->granularity != GRAN_TENSOR;

  if (r->rule < RULE_MIN_MAX || r->rule > RULE_DEFAULT)
    return fail (e, PIQ_E_UNSUPPORTED, "scale rule %d is not a PiqScaleRule", r->rule);
  if (r->rule == RULE_DEFAULT)
    *rule = e8m0 && !is_bfp (info) ? RULE_POW2_FLOOR : affine ? RULE_MIN_MAX : RULE_ABS_MAX;
  else
    {
      int ok;
      switch (r->rule)
        {
        case RULE_MIN_MAX:  ok = affine; break;
        case RULE_MEAN_STD: ok = affine && f->granularity == GRAN_TENSOR; break;
        case RULE_ABS_MAX:  ok = !affine && (!e8m0 || is_bfp (info)) && info->bits != 0; break;
        default:            ok = e8m0 && !is_bfp (info);
        }
      if (!ok)
        return fail (e, PIQ_E_UNSUPPORTED, "the %s rule does not apply to %s%s: %s",
                     rule_names[r->rule], info->name,
                     f->granularity == GRAN_TENSOR ? " per tensor"
                     : e8m0 ? " with e8m0 scales" : f->granularity == GRAN_BLOCK ? " per block"
                     : " per channel",
                     r->rule == RULE_MIN_MAX ? "min-max needs affine integers"
                     : r->rule == RULE_MEAN_STD ? "mean-std needs affine integers per tensor"
                     : r->rule == RULE_ABS_MAX ? "abs-max needs a symmetric format with float "
                                                 "scales (or block floating point)"
                     : "the power-of-two rules need MX elements with e8m0 scales");
      *rule = r->rule;
    }
  if (!r->include_zero && *rule != RULE_MIN_MAX)
    return fail (e, PIQ_E_UNSUPPORTED, "include-zero applies to the min-max rule, not to %s",
                 rule_names[*rule]);
  if (r->seed != 0 && !r->stochastic)
    return fail (e, PIQ_E_UNSUPPORTED, "seed %" PRIu64 " applies to stochastic rounding; the "
                 "recipe rounds to nearest", r->seed);
  return 1;
}

/* A per-tensor scale's checks in the compute precision of @float_dtype. */
static int
check_scale (double scale, int float_dtype, PiqEngineError *e)
{
  float sf = piq_f64_to_f32 (scale);

  if (!isfinite (scale) || !(scale > 0.0))
    return fail (e, PIQ_E_INVALID_SCALE, "scale %g is not a finite positive number", scale);
  if (float_dtype == DT_F64 ? !isfinite (1.0 / scale)
      : !(sf > 0.0f && isfinite (sf) && isfinite (1.0f / sf)))
    return fail (e, PIQ_E_INVALID_SCALE, "scale %g (or its inverse) is out of the range of %s, "
                 "the compute precision of %s data", scale,
                 float_dtype == DT_F64 ? "binary64" : "binary32", LABEL (float_dtype));
  return 1;
}

static int
check_zero_point (const PiqDtypeInfo *info, int64_t zp, PiqEngineError *e)
{
  if (zp < info->min || (zp > 0 && (uint64_t) zp > info->max))
    return fail (e, PIQ_E_INVALID_ZERO_POINT, "zero point %" PRId64 " is outside the %s range "
                 "[%" PRId64 ", %" PRIu64 "]", zp, info->name, info->min, info->max);
  return 1;
}

/* The recipe's given scale and zero point against the format. */
static int
check_given (const PiqEngineFormat *f, const PiqDtypeInfo *info, const PiqEngineRecipe *r,
             int float_dtype, PiqEngineError *e)
{
  int affine = piq_engine_has_zero_points (f);

  if (r->has_zero_point && !affine)
    return fail (e, PIQ_E_INVALID_ZERO_POINT, "zero point %" PRId64 ": %s%s has no zero point",
                 r->zero_point, f->symmetric && info->kind == PIQ_KIND_INT ? "symmetric " : "",
                 info->name);
  if (!r->has_scale)
    {
      if (r->has_zero_point)
        return fail (e, PIQ_E_INVALID_ZERO_POINT, "the recipe gives a zero point without a scale");
      return 1;
    }
  if (f->granularity != GRAN_TENSOR)
    return fail (e, PIQ_E_UNSUPPORTED, "the recipe gives a per-tensor scale, but %s %s derives a "
                 "scale per %s", info->name, f->granularity == GRAN_BLOCK ? "per block" :
                 "per channel", f->granularity == GRAN_BLOCK ? "block" : "channel");
  /* a calibrated scale was derived by the recipe's rule; a scale given by hand next to a
   * named rule would leave the rule unused */
  if (r->rule != RULE_DEFAULT && !r->calibrated)
    return fail (e, PIQ_E_UNSUPPORTED, "the recipe gives a scale and names the %s rule; a given "
                 "scale derives nothing", rule_names[r->rule]);
  if (!check_scale (r->scale, float_dtype, e))
    return 0;
  if (affine && !r->has_zero_point)
    return fail (e, PIQ_E_INVALID_ZERO_POINT, "the recipe gives a scale but no zero point for "
                 "affine %s", info->name);
  return !affine || check_zero_point (info, r->zero_point, e);
}

/* The zero point of symmetric integers: 0, or the middle of an unsigned range. */
static int64_t
symmetric_zp (const PiqDtypeInfo *info)
{
  return info->kind == PIQ_KIND_INT ? piq_symmetric_zp (info->min, info->max) : 0;
}

/* ---------------------------------------------------------------------------
 * Geometry: where each element, block, scale and code lives */

typedef enum { ROUTE_ELEMENTS, ROUTE_FLAT, ROUTE_ROWS, ROUTE_CHANNELS } Route;

typedef struct {
  const PiqDtypeInfo *info;
  PiqBlockArgs a;
  Route    route;
  uint64_t n;
  uint64_t n_blocks;           /* scales stored (0: none) */
  size_t   codes_size, scales_size, zero_points_size;
  int      double_quant;       /* scales_size is the compressed form of n_blocks f32 */
  uint64_t unit;               /* flat: elements per parallel unit */
  uint64_t rows, cols, bpr;    /* rows: rows, their length, blocks per row */
  size_t   row_codes;          /* rows: code bytes per row (0: rows end inside a byte) */
  uint64_t row_group;          /* rows: rows per parallel unit (whole bytes of codes) */
  uint64_t outer, ch, inner;   /* channels */
} Geometry;

static uint64_t
gcd64 (uint64_t a, uint64_t b)
{
  while (b != 0)
    {
      uint64_t t = a % b;
      a = b;
      b = t;
    }
  return a;
}

static int
geometry (const PiqEngineFormat *f, const uint64_t *shape, unsigned n_dims, Geometry *g,
          PiqEngineError *e)
{
  const PiqDtypeInfo *info;
  PiqBlockArgs *a = &g->a;
  size_t scale_bytes = 0;

  memset (g, 0, sizeof *g);
  if (!piq_engine_check_format (f, e) || !piq_engine_check_shape (shape, n_dims, &g->n, e))
    return 0;
  info = g->info = piq_dtype_info (f->dtype);
  g->cols = shape[n_dims - 1];
  g->rows = g->cols ? g->n / g->cols : 0;
  a->code = info->kind == PIQ_KIND_CODE ? info->kernel_index : -1;
  a->int_index = info->kind == PIQ_KIND_INT ? info->kernel_index : 0;
  a->bits = (int) info->bits;
  a->qmin = info->min;
  a->qmax = (int64_t) MIN (info->max, (uint64_t) INT64_MAX);
  a->saturate = f->saturate;
  a->high_first = f->high_nibble_first;
  a->scale_kind = f->scale_dtype == DT_F16 ? PIQ_SCALE_F16
                : f->scale_dtype == DT_E8M0 ? PIQ_SCALE_E8M0 : PIQ_SCALE_F32;

  if (info->kind == PIQ_KIND_INT && f->granularity == GRAN_TENSOR)
    {
      g->route = ROUTE_ELEMENTS;
      return piq_engine_dtype_size (f->dtype, g->n, &g->codes_size, e);
    }
  if (info->bits == 0)
    {
      a->block = info->block_elems;
      g->unit = info->block_elems;
      if (n_dims == 1 || g->cols % info->block_elems == 0)
        {
          g->route = ROUTE_FLAT;
          return piq_engine_dtype_size (f->dtype, g->n, &g->codes_size, e);
        }
      g->route = ROUTE_ROWS;
      g->row_group = 1;
      g->bpr = (g->cols + info->block_elems - 1) / info->block_elems;
      return checked_mul (g->bpr, info->block_bytes, &g->row_codes, e) &&
             checked_mul (g->rows, g->row_codes, &g->codes_size, e);
    }
  if (!piq_engine_dtype_size (f->dtype, g->n, &g->codes_size, e))
    return 0;
  if (f->granularity == GRAN_TENSOR)
    {
      a->fixed = 1;
      a->block = 64;
      g->unit = 64;
      g->route = ROUTE_FLAT;
      return 1;
    }

  if (f->granularity == GRAN_CHANNEL)
    {
      int axis = f->axis < 0 ? f->axis + (int) n_dims : f->axis;
      if (axis < 0 || axis >= (int) n_dims)
        return fail (e, PIQ_E_SIZE, "axis %d does not exist in a tensor of %u dimension%s",
                     f->axis, n_dims, n_dims == 1 ? "" : "s");
      g->outer = 1;
      g->inner = 1;
      for (int d = 0; d < axis; d++)
        g->outer *= shape[d];
      for (unsigned d = (unsigned) axis + 1; d < n_dims; d++)
        g->inner *= shape[d];
      g->ch = shape[axis];
      g->n_blocks = g->n == 0 ? 0 : g->ch;
      /* channels of consecutive elements are blocks of the flattened tensor */
      g->route = g->outer == 1 || g->n == 0 ? ROUTE_FLAT : ROUTE_CHANNELS;
      a->block = g->route == ROUTE_FLAT ? (size_t) MAX (g->inner, 1) : 1;
    }
  else
    {
      a->block = piq_engine_block_size (f);
      if (n_dims == 1 || g->cols % a->block == 0)
        {
          g->route = ROUTE_FLAT;
          g->n_blocks = g->n / a->block + (g->n % a->block != 0);
        }
      else
        {
          g->route = ROUTE_ROWS;
          g->bpr = g->cols / a->block + 1;
          /* rows that end inside a byte go through a row buffer (rows_range), in groups
           * of rows that together end on a byte, so no two threads share a byte */
          g->row_codes = g->cols * (uint64_t) info->bits % 8 == 0
                         ? (size_t) (g->cols * info->bits / 8) : 0;
          g->row_group = g->row_codes ? 1 : 8 / gcd64 (g->cols * (uint64_t) info->bits % 8, 8);
          if (!checked_mul (g->rows, g->bpr, &scale_bytes, e))
            return 0;
          g->n_blocks = scale_bytes;
        }
    }
  if (!checked_mul (g->n_blocks, piq_block_scale_size (a->scale_kind), &g->scales_size, e))
    return 0;
  g->double_quant = f->double_quant;
  if (g->double_quant)
    g->scales_size = piq_dq_size (g->n_blocks);
  if (piq_engine_has_zero_points (f) &&
      !checked_mul (g->n_blocks, sizeof (int32_t), &g->zero_points_size, e))
    return 0;
  if (g->route == ROUTE_FLAT)
    {
      /* a unit holds whole blocks and starts on a byte: lcm (block, 8 / gcd (bits, 8)) */
      uint64_t per_byte = 8 / gcd64 ((uint64_t) a->bits, 8);
      g->unit = a->block / gcd64 (a->block, per_byte) * per_byte;
    }
  return 1;
}

int
piq_engine_sizes (const PiqEngineFormat *f, const uint64_t *shape, unsigned n_dims,
                  size_t *codes, size_t *scales, size_t *zero_points, PiqEngineError *e)
{
  Geometry g;

  if (!geometry (f, shape, n_dims, &g, e))
    return 0;
  if (codes != NULL)
    *codes = g.codes_size;
  if (scales != NULL)
    *scales = g.scales_size;
  if (zero_points != NULL)
    *zero_points = g.zero_points_size;
  return 1;
}

/* ---------------------------------------------------------------------------
 * Buffers: sizes, overlap, strided float views */

static int
check_float (int dtype, const char *role, PiqEngineError *e)
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);

  if (info != NULL && info->kind == PIQ_KIND_FLOAT)
    return 1;
  return fail (e, PIQ_E_UNSUPPORTED, "the %s must be a float dtype (f32, f64, bf16, f16), not %s",
               role, LABEL (dtype));
}

static int
check_room (size_t need, size_t have, const char *what, PiqEngineError *e)
{
  if (have >= need)
    return 1;
  return fail (e, PIQ_E_SIZE, "the %s hold%s %zu bytes, %zu are needed", what,
               what[strlen (what) - 1] == 's' ? "" : "s", have, need);
}

static int
overlap (const void *a, size_t na, const void *b, size_t nb)
{
  uintptr_t x = (uintptr_t) a, y = (uintptr_t) b;

  return na != 0 && nb != 0 && x < y + nb && y < x + na;
}

static int
no_overlap (const void *dst, size_t dst_n, const char *dst_what, const void *src, size_t src_n,
            const char *src_what, PiqEngineError *e)
{
  if (!overlap (dst, dst_n, src, src_n))
    return 1;
  return fail (e, PIQ_E_OVERLAP, "the %s overlap%s the %s: a destination must not share memory "
               "with a source", dst_what, dst_what[strlen (dst_what) - 1] == 's' ? "" : "s",
               src_what);
}

static int
same_shape (const PiqEngineView *v, const uint64_t *shape, unsigned n_dims, PiqEngineError *e)
{
  if (v->n_dims == n_dims && memcmp (v->shape, shape, n_dims * sizeof *shape) == 0)
    return 1;
  return fail (e, PIQ_E_SIZE, "the shapes differ: %u dimension%s against %u (first %" PRIu64
               " against %" PRIu64 ")", v->n_dims, v->n_dims == 1 ? "" : "s", n_dims,
               v->n_dims ? v->shape[0] : 0, n_dims ? shape[0] : 0);
}

/* A float view's bytes: packed, or rows row_stride apart; *span is the extent from
 * data to the end of the last row. */
static int
float_extent (const PiqEngineView *v, uint64_t *n, size_t *row_bytes, size_t *span,
              const char *role, PiqEngineError *e)
{
  const PiqDtypeInfo *info;
  uint64_t cols, rows;
  size_t packed;

  if (!check_float (v->dtype, role, e) || !piq_engine_check_shape (v->shape, v->n_dims, n, e))
    return 0;
  info = piq_dtype_info (v->dtype);
  cols = v->shape[v->n_dims - 1];
  rows = cols ? *n / cols : 0;
  *row_bytes = (size_t) (cols * info->bits / 8);
  if (!piq_engine_dtype_size (v->dtype, *n, &packed, e))
    return 0;
  if (v->row_stride == 0 || v->row_stride == *row_bytes || rows <= 1)
    *span = packed;
  else
    {
      if (v->row_stride < *row_bytes)
        return fail (e, PIQ_E_SIZE, "the %s's row stride, %zu bytes, is shorter than a row "
                     "(%zu bytes)", role, v->row_stride, *row_bytes);
      if (!checked_mul (rows - 1, v->row_stride, span, e))
        return 0;
      if (*span > SIZE_MAX - *row_bytes)
        return fail (e, PIQ_E_OVERFLOW, "the %s's rows do not fit in memory", role);
      *span += *row_bytes;
    }
  if (v->size < *span)
    return fail (e, PIQ_E_SIZE, "the %s holds %zu bytes, %zu are needed for %" PRIu64 " %s "
                 "elements", role, v->size, *span, *n, info->name);
  return 1;
}

static int
is_strided (const PiqEngineView *v, size_t row_bytes, uint64_t n)
{
  uint64_t cols = v->shape[v->n_dims - 1];
  return v->row_stride != 0 && v->row_stride != row_bytes && cols != 0 && n / cols > 1;
}

/* Copy rows between a strided view and a packed buffer. */
static void
copy_rows (uint8_t *packed, const PiqEngineView *v, size_t row_bytes, uint64_t rows, int to_view)
{
  for (uint64_t r = 0; r < rows; r++)
    {
      uint8_t *row = (uint8_t *) v->data + r * v->row_stride;
      if (to_view)
        memcpy (row, packed + r * row_bytes, row_bytes);
      else
        memcpy (packed + r * row_bytes, row, row_bytes);
    }
}

/* count · size bytes from malloc, or on a cache line (aligned) */
static void *
alloc_bytes (size_t count, size_t size, int aligned, const char *what, PiqEngineError *e)
{
  void *p = NULL;
  size_t bytes;

  if (size != 0 && count > SIZE_MAX / size)
    {
      fail (e, PIQ_E_OVERFLOW, "%zu × %zu bytes of %s do not fit in memory", count, size, what);
      return NULL;
    }
  bytes = count * size != 0 ? count * size : 1;
  if (aligned ? posix_memalign (&p, 64, bytes) != 0 : (p = malloc (bytes)) == NULL)
    {
      fail (e, PIQ_E_NO_MEMORY, "cannot allocate %zu bytes of %s", count * size, what);
      return NULL;
    }
  return p;
}

void *
piq_engine_alloc (size_t count, size_t size, const char *what, PiqEngineError *e)
{
  return alloc_bytes (count, size, 0, what, e);
}

void *
piq_engine_alloc_aligned (size_t count, size_t size, const char *what, PiqEngineError *e)
{
  return alloc_bytes (count, size, 1, what, e);
}

static void *
alloc_or_fail (size_t n, const char *what, PiqEngineError *e)
{
  return piq_engine_alloc (n, 1, what, e);
}

/* A packed view of the float source @src: @src itself, or its rows copied into
 * *packed (which the caller frees). */
static int
packed_source (const PiqEngineView *src, uint64_t n, size_t row_bytes, PiqEngineView *v,
               uint8_t **packed, PiqEngineError *e)
{
  uint64_t rows;

  *v = *src;
  *packed = NULL;
  if (!is_strided (src, row_bytes, n))
    return 1;
  rows = n / src->shape[src->n_dims - 1];
  if ((*packed = alloc_or_fail ((size_t) rows * row_bytes, "a packed copy of the rows", e)) == NULL)
    return 0;
  copy_rows (*packed, src, row_bytes, rows, 0);
  v->data = *packed;
  v->row_stride = 0;
  return 1;
}

int
piq_engine_float_view (const PiqEngineView *v, const char *role, uint64_t *n, size_t *span,
                       PiqEngineError *e)
{
  size_t row_bytes;
  return float_extent (v, n, &row_bytes, span, role, e);
}

int
piq_engine_no_overlap (const void *dst, size_t dst_n, const char *dst_what, const void *src,
                       size_t src_n, const char *src_what, PiqEngineError *e)
{
  return no_overlap (dst, dst_n, dst_what, src, src_n, src_what, e);
}

int
piq_engine_rows_quant (const PiqEngineQuant *w, uint64_t rows, uint64_t cols, uint64_t r0,
                       PiqEngineQuant *out, PiqEngineError *e)
{
  const uint64_t shape[2] = { rows, cols }, head[2] = { r0, cols };
  Geometry g;
  size_t codes = 0, scales = 0, zps = 0;

  if (!geometry (&w->f, shape, 2, &g, e))
    return 0;
  if (g.info->bits != 0 && r0 * cols % (8 / gcd64 ((uint64_t) g.info->bits, 8)) != 0)
    return fail (e, PIQ_E_UNSUPPORTED, "rows from %" PRIu64 " of a %s tensor do not start on "
                 "a byte", r0, g.info->name);
  if (r0 > 0 && !piq_engine_sizes (&w->f, head, 2, &codes, &scales, &zps, e))
    return 0;
  if (w->f.granularity == GRAN_CHANNEL && (w->f.axis == 1 || w->f.axis == -1))
    scales = zps = 0;   /* one scale per column: every row uses all of them */
  *out = *w;
  out->codes = (const uint8_t *) w->codes + codes;
  out->codes_size = w->codes_size - codes;
  if (w->scales != NULL)
    {
      out->scales = (const uint8_t *) w->scales + scales;
      out->scales_size = w->scales_size - scales;
    }
  if (w->zero_points != NULL)
    {
      out->zero_points = (const uint8_t *) w->zero_points + zps;
      out->zero_points_size = w->zero_points_size - zps;
    }
  return 1;
}

int
piq_engine_int_row_params (const PiqEngineQuant *w, uint64_t rows, uint64_t cols,
                           uint64_t *group, float *scales, int32_t *zero_points,
                           PiqEngineError *e)
{
  const uint64_t shape[2] = { rows, cols };
  Geometry g;
  uint64_t per_row;

  if (!geometry (&w->f, shape, 2, &g, e))
    return 0;
  if (g.info->kind != PIQ_KIND_INT || g.info->bits > 8 || g.double_quant ||
      g.route == ROUTE_CHANNELS ||
      (w->f.granularity == GRAN_CHANNEL && !(w->f.axis == 0 || w->f.axis == -2)))
    return fail (e, PIQ_E_UNSUPPORTED, "%s weights with scales along their input axis have no "
                 "integer form", g.info->name);
  *group = w->f.granularity == GRAN_BLOCK ? g.a.block : cols;
  if (scales == NULL || cols == 0)
    return 1;
  per_row = (cols + *group - 1) / *group;
  for (uint64_t r = 0; r < rows; r++)
    for (uint64_t b = 0; b < per_row; b++)
      {
        PiqBlockP p;
        if (g.route == ROUTE_ELEMENTS)
          {
            p.scale = piq_f64_to_f32 (w->scale);
            p.zp = w->zero_point;
            p.nan_scale = 0;
          }
        else
          piq_block_load_params (&g.a, w->scales, w->zero_points,
                                 w->f.granularity == GRAN_BLOCK ? r * per_row + b : r, &p);
        if (p.nan_scale)
          p.scale = NAN;
        scales[r * per_row + b] = p.scale;
        zero_points[r * per_row + b] = (int32_t) p.zp;
      }
  return 1;
}

int
piq_engine_fused_rows (const PiqEngineQuant *w, uint64_t rows, uint64_t cols, PiqBlockArgs *a,
                       size_t *code_stride, size_t *blocks_per_row, int *has_zero_points)
{
  const uint64_t shape[2] = { rows, cols };
  PiqEngineError e;
  Geometry g;

  if (!geometry (&w->f, shape, 2, &g, &e) || g.double_quant || g.route == ROUTE_CHANNELS)
    return 0;
  if (g.info->bits == 0)
    {
      if (g.a.code != PIQ_C_Q4_0 && g.a.code != PIQ_C_Q8_0)
        return 0;
      *code_stride = (size_t) ((cols + g.info->block_elems - 1) / g.info->block_elems) *
                     g.info->block_bytes;
      *blocks_per_row = 0;
    }
  else
    {
      if (g.info->kind == PIQ_KIND_INT ? g.info->bits != 4 && g.info->bits != 8
          : g.a.code != PIQ_C_NF4 && g.a.code != PIQ_C_FP4_BNB && g.a.code != PIQ_C_FP4_E2M1 &&
            g.a.code != PIQ_C_FP8_E4M3 && g.a.code != PIQ_C_FP8_E5M2 &&
            g.a.code != PIQ_C_BINARY)
        return 0;
      if (cols * g.info->bits % 8 != 0)
        return 0;     /* rows that start inside a byte */
      *code_stride = (size_t) (cols * g.info->bits / 8);
      if (g.route == ROUTE_ELEMENTS || g.a.fixed)
        {
          g.a.fixed = 1;
          g.a.scale = piq_f64_to_f32 (w->scale);
          g.a.zero_point = w->zero_point;
          *blocks_per_row = 0;
        }
      else if (w->f.granularity == GRAN_BLOCK)
        {
          if (g.a.block % 16 != 0 && g.a.block < cols)
            return 0;
          *blocks_per_row = (size_t) ((cols + g.a.block - 1) / g.a.block);
        }
      else
        {
          /* one scale per row (axis 0): the flat route's blocks are the rows */
          if (g.a.block != cols)
            return 0;
          *blocks_per_row = 1;
        }
    }
  *a = g.a;
  *has_zero_points = g.zero_points_size != 0;
  return 1;
}

/* ---------------------------------------------------------------------------
 * Jobs */

static uint64_t
fresh_seed (void)
{
  static uint64_t counter;
  uint64_t z = __atomic_add_fetch (&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
  struct timespec ts;

  /* SplitMix64 of a process counter mixed with the clock and an address: distinct per
   * call, never 0 */
  clock_gettime (CLOCK_REALTIME, &ts);
  z ^= (uint64_t) ts.tv_nsec * 0xbf58476d1ce4e5b9ull ^ (uint64_t) ts.tv_sec ^ (uintptr_t) &z;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 1;
}

/* p + off, or NULL for an absent buffer (no arithmetic on a null pointer) */
static inline const uint8_t *
at (const uint8_t *p, uint64_t off)
{
  return p != NULL ? p + off : NULL;
}

static inline uint8_t *
at_w (uint8_t *p, uint64_t off)
{
  return p != NULL ? p + off : NULL;
}

typedef struct {
  PiqQuantizeFn    quantize;     /* also requantize: same signature */
  PiqDequantizeFn  dequantize;
  const uint8_t   *src;
  uint8_t         *dst;
  unsigned         src_bits;
  unsigned         dst_bits;
  PiqKernelArgs    args;
} ElementJob;

static void
element_range (void *data, uint64_t start, uint64_t n)
{
  const ElementJob *job = data;
  const uint8_t *src = at (job->src, start * job->src_bits / 8);
  uint8_t *dst = at_w (job->dst, start * job->dst_bits / 8);

  if (job->dequantize != NULL)
    job->dequantize (src, dst, n, &job->args);
  else
    job->quantize (src, dst, start, n, &job->args);
}

static void
element_args (const PiqDtypeInfo *info, double scale, int64_t zp, uint64_t seed, PiqKernelArgs *a)
{
  a->scale_d = scale;
  a->inv_d = 1.0 / scale;
  a->scale_f = piq_f64_to_f32 (scale);
  a->inv_f = 1.0f / a->scale_f;
  a->zero_point = zp;
  a->qmin = info->min;
  a->qmax = info->max;
  piq_hash_keys (seed, &a->key0, &a->key1);
}

typedef enum { BLOCK_QUANTIZE, BLOCK_DEQUANTIZE, BLOCK_REQUANTIZE } BlockOp;

typedef struct {
  const Geometry *g;
  PiqBlockArgs   a;
  BlockOp        op;
  int            ft;           /* PIQ_F_* of the float side */
  size_t         esize;        /* its bytes per element */
  const uint8_t *src;          /* floats (quantize, requantize) */
  uint8_t       *dst;          /* floats (dequantize, requantize) */
  const uint8_t *codes_in;
  uint8_t       *codes;
  uint8_t       *scales;
  const uint8_t *scales_in;
  int32_t       *zero_points;
  const int32_t *zero_points_in;
  int            add;
  PiqBlockQuantizeFn   quantize_f32;
  PiqBlockDequantizeFn dequantize_f32;
  uint8_t       *row_scratch;  /* rows that end inside a byte: row_bytes per row */
  size_t         row_bytes;
} BlockJob;

/* [first, first + n) of the tensor (flat) or of one row (rows: a carries index0 and the
 * pointers are the row's). */
static void
block_span (const BlockJob *job, const PiqBlockArgs *a, uint64_t first, size_t n,
            const uint8_t *src, uint8_t *dst, const uint8_t *codes_in, uint8_t *codes,
            uint8_t *scales, const uint8_t *scales_in, int32_t *zps, const int32_t *zps_in)
{
  switch (job->op)
    {
    case BLOCK_QUANTIZE:
      if (job->ft == PIQ_F_F32)
        job->quantize_f32 (a, src, first, n, codes, scales, zps);
      else
        piq_block_quantize (a, job->ft, src, first, n, codes, scales, zps);
      break;
    case BLOCK_DEQUANTIZE:
      if (job->ft == PIQ_F_F32)
        job->dequantize_f32 (a, codes_in, scales_in, zps_in, first, n, dst, job->add);
      else
        piq_block_dequantize (a, codes_in, scales_in, zps_in, first, n, job->ft, dst, job->add);
      break;
    default:
      piq_block_requantize (a, job->ft, src, first, n, dst, job->add);
    }
}

static void
flat_range (void *data, uint64_t start, uint64_t n_units)
{
  const BlockJob *job = data;
  const Geometry *g = job->g;
  uint64_t first = start * g->unit;
  size_t n = (size_t) MIN (n_units * g->unit, g->n - first);

  block_span (job, &job->a, first, n, at (job->src, first * job->esize),
              at_w (job->dst, first * job->esize), job->codes_in, job->codes, job->scales,
              job->scales_in, job->zero_points, job->zero_points_in);
}

/* Move a row's codes between the tensor's bit stream (element e0 on) and a row buffer
 * whose element 0 is at bit 0, code by code in the stream's own order (nibble order
 * included). */
static void
row_codes_copy (const Geometry *g, uint8_t *row, uint8_t *stream, uint64_t e0, int to_stream)
{
  int bits = g->a.bits, hf = g->a.high_first;

  if (!to_stream)
    memset (row, 0, (size_t) ((g->cols * (uint64_t) bits + 7) / 8));
  for (uint64_t j = 0; j < g->cols; j++)
    {
      if (to_stream)
        piq_put_code (stream, e0 + j, bits, hf, piq_get_code (row, j, bits, hf));
      else
        piq_put_code (row, j, bits, hf, piq_get_code (stream, e0 + j, bits, hf));
    }
}

static void
rows_range (void *data, uint64_t start, uint64_t n_units)
{
  const BlockJob *job = data;
  const Geometry *g = job->g;
  size_t ss = piq_block_scale_size (job->a.scale_kind);
  uint64_t r0 = start * g->row_group, r1 = MIN ((start + n_units) * g->row_group, g->rows);
  uint8_t *row = NULL;

  if (job->row_scratch != NULL)
    {
      /* rows that end inside a byte: each row goes through its own buffer of whole
       * bytes; this range owns the stream's bytes of rows r0..r1 (they start and end
       * on a byte), cleared first because codes are put by OR */
      if (job->codes != NULL)
        {
          /* r0 starts on a byte; the last range also owns the stream's partial last byte */
          uint64_t b0 = r0 * g->cols * (uint64_t) g->a.bits / 8;
          uint64_t b1 = (r1 * g->cols * (uint64_t) g->a.bits + 7) / 8;
          memset (job->codes + b0, 0, (size_t) (b1 - b0));
        }
    }
  for (uint64_t r = r0; r < r1; r++)
    {
      PiqBlockArgs a = job->a;
      uint64_t e0 = r * g->cols, b0 = r * g->bpr;
      const uint8_t *codes_in = at (job->codes_in, r * g->row_codes);
      uint8_t *codes = at_w (job->codes, r * g->row_codes);

      a.index0 = e0;
      if (job->row_scratch != NULL)
        {
          row = job->row_scratch + r * job->row_bytes;
          if (job->codes_in != NULL)
            row_codes_copy (g, row, (uint8_t *) job->codes_in, e0, 0);
          codes_in = row;
          codes = job->codes ? row : NULL;
        }
      block_span (job, &a, 0, (size_t) g->cols, at (job->src, e0 * job->esize),
                  at_w (job->dst, e0 * job->esize), codes_in, codes,
                  at_w (job->scales, b0 * ss), at (job->scales_in, b0 * ss),
                  job->zero_points ? job->zero_points + b0 : NULL,
                  job->zero_points_in ? job->zero_points_in + b0 : NULL);
      if (row != NULL && job->codes != NULL)
        row_codes_copy (g, row, job->codes, e0, 1);
    }
}

/* The row buffers of rows that end inside a byte (NULL when rows end on a byte). */
static int
row_scratch (const Geometry *g, BlockJob *job, PiqEngineError *e)
{
  if (g->route != ROUTE_ROWS || g->row_codes != 0 || g->info->bits == 0)
    return 1;
  job->row_bytes = (size_t) ((g->cols * (uint64_t) g->a.bits + 7) / 8);
  job->row_scratch = alloc_or_fail ((size_t) g->rows * job->row_bytes, "row buffers", e);
  return job->row_scratch != NULL;
}

static void
run_blocks (const PiqEngine *eng, BlockJob *job, int float_dtype)
{
  const Geometry *g = job->g;
  const PiqDtypeInfo *fi = piq_dtype_info (float_dtype);

  job->ft = fi->kernel_index;
  job->esize = fi->bits / 8;
  /* large SET outputs bypass the caches, as in the per-tensor kernels (same bytes) */
  job->a.stream = job->op != BLOCK_REQUANTIZE && !job->add &&
                  g->n * (job->esize * 8 + (uint64_t) g->a.bits) / 8 >= PIQ_STREAM_MIN_BYTES;
  job->quantize_f32 = eng->kernels->block_quantize;
  job->dequantize_f32 = eng->kernels->block_dequantize;
  if (g->route == ROUTE_ROWS)
    {
      /* groups of rows are the units; a row costs cols elements */
      uint64_t per_unit = g->row_group * MAX (g->cols, 1);
      piq_parallel_run (eng->n_threads, (g->rows + g->row_group - 1) / g->row_group, 1,
                        MAX (1, PIQ_PARALLEL_MIN_ELEMENTS / per_unit), rows_range, job);
      return;
    }
  /* the formats cost more per element than the integer kernels: the same crossover
   * in elements is conservative */
  piq_parallel_run (eng->n_threads, g->n / g->unit + (g->n % g->unit != 0),
                    MAX (1, PIQ_GRAIN / g->unit), MAX (1, PIQ_PARALLEL_MIN_ELEMENTS / g->unit),
                    flat_range, job);
}

/* ---------------------------------------------------------------------------
 * Reductions: per-block results in index order, so the combination does not
 * depend on the thread count. */

typedef struct {
  PiqMinMaxFn    minmax;
  PiqSumsFn      sums;
  const uint8_t *src;
  unsigned       src_bits;
  PiqMinMax     *mm;
  PiqSums       *s;
} ReduceJob;

static void
reduce_range (void *data, uint64_t start, uint64_t n)
{
  const ReduceJob *job = data;

  for (uint64_t off = 0; off < n; off += PIQ_REDUCE_BLOCK)
    {
      const uint8_t *src = job->src + (start + off) * job->src_bits / 8;
      size_t len = (size_t) MIN (n - off, PIQ_REDUCE_BLOCK);
      uint64_t b = (start + off) / PIQ_REDUCE_BLOCK;

      if (job->minmax != NULL)
        job->minmax (src, len, &job->mm[b]);
      else
        job->sums (src, len, &job->s[b]);
    }
}

/* The min/max and abs-max rules, in binary32 as torch's observers. */
static int
params_from_minmax (const PiqDtypeInfo *info, int symmetric, int include_zero, double lo,
                    double hi, double *scale, int64_t *zp, PiqEngineError *e)
{
  piq_affine_from_range (lo, hi, info->min, info->max, symmetric, include_zero, scale, zp);
  if (!isfinite (*scale))
    return fail (e, PIQ_E_INVALID_SCALE, "the data's range [%g, %g] gives no finite binary32 "
                 "scale", lo, hi);
  return 1;
}

static int
params_from_sums (const PiqDtypeInfo *info, double sum, double sum_sq, uint64_t n, double *scale,
                  int64_t *zp_out, PiqEngineError *e)
{
  double mean = sum / (double) n;
  double var = n > 1 ? (sum_sq - sum * sum / (double) n) / (double) (n - 1) : 0.0;
  double sigma = sqrt (MAX (var, 0.0));
  double type_max = ldexp (1.0, (int) info->bits - (info->is_signed ? 1 : 0)) - 1.0;
  double c = info->bits == 2 ? 1.4 : info->bits == 4 ? 2.7 : 12.0;
  double s = c * sigma / type_max, q;
  __int128 centre, zp, hi = (__int128) MIN (info->max, (uint64_t) INT64_MAX);

  if (s == 0.0)
    s = 1.0;   /* constant data: any scale represents the mean exactly at the centre */
  if (!isfinite (s) || !isfinite (mean))
    return fail (e, PIQ_E_INVALID_SCALE, "the data's mean/σ (%g, %g) give no finite scale", mean,
                 sigma);
  centre = info->is_signed ? 0 : ((__int128) info->max + 1) >> 1;
  /* round (mean / s) in range before converting: |q| beyond 2^100 clamps either way */
  q = round (mean / s);
  if (!(q > -0x1p100 && q < 0x1p100))
    q = q > 0 ? 0x1p100 : -0x1p100;
  zp = centre - (__int128) q;
  zp = zp < info->min ? info->min : zp > hi ? hi : zp;
  *scale = s;
  *zp_out = (int64_t) zp;
  return 1;
}

/* A code format's per-tensor scale, by the rule its blocks use: amax / max for the
 * minifloats, amax for the table formats, 2^(box exponent) for BFP via amax, mean |x|
 * for binary. */
static void
code_params (const PiqDtypeInfo *info, const PiqEngineView *src, uint64_t n, double amax,
             double *scale)
{
  float a = piq_f64_to_f32 (amax), s;

  if (info->kernel_index == PIQ_C_BINARY)
    {
      int ft = piq_dtype_info (src->dtype)->kernel_index;
      double sum = 0.0;
      for (uint64_t i = 0; i < n; i++)
        {
          double d;
          if (ft == PIQ_F_F64)
            memcpy (&d, (const uint8_t *) src->data + i * sizeof d, sizeof d);   /* unaligned */
          else
            d = piq_load_f (src->data, (size_t) i, ft);
          sum += fabs (d);
        }
      s = piq_f64_to_f32 (sum / (double) n);
    }
  else if (piq_code_family[info->kernel_index] == PIQ_FAMILY_MINIFLOAT)
    s = a / piq_minifloats[info->kernel_index].max;
  else
    s = a;
  if (!(s > 0.0f) || !isfinite (s))
    s = 1.0f;   /* all zeros: any scale represents them; 1 keeps a plain cast */
  *scale = s;
}

/* compute_params on a packed float view. */
static int
derive_per_tensor (const PiqEngine *eng, const PiqEngineFormat *f, const PiqDtypeInfo *info,
                   int rule, int include_zero, const PiqEngineView *src, uint64_t n, double *scale,
                   int64_t *zp, PiqEngineError *e)
{
  const PiqDtypeInfo *si = piq_dtype_info (src->dtype);
  ReduceJob job = { 0 };
  uint64_t n_blocks = (n + PIQ_REDUCE_BLOCK - 1) / PIQ_REDUCE_BLOCK;
  int mean_std = rule == RULE_MEAN_STD, ok = 1;
  void *buf;

  if (n == 0)
    return fail (e, PIQ_E_EMPTY, "cannot derive a scale from 0 elements");
  buf = alloc_or_fail ((size_t) n_blocks * MAX (sizeof (PiqMinMax), sizeof (PiqSums)),
                       "reduction blocks", e);
  if (buf == NULL)
    return 0;
  job.src = src->data;
  job.src_bits = si->bits;
  if (mean_std)
    {
      job.sums = eng->kernels->sums[si->kernel_index];
      job.s = buf;
    }
  else
    {
      job.minmax = eng->kernels->minmax[si->kernel_index];
      job.mm = buf;
    }
  piq_parallel_run (eng->n_threads, n, PIQ_GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, reduce_range, &job);

  if (mean_std)
    {
      double sum = 0.0, sum_sq = 0.0;
      for (uint64_t b = 0; b < n_blocks; b++)
        {
          sum += job.s[b].sum;
          sum_sq += job.s[b].sum_sq;
        }
      ok = isfinite (sum) && isfinite (sum_sq)
           ? params_from_sums (info, sum, sum_sq, n, scale, zp, e)
           : fail (e, PIQ_E_NON_FINITE, "the data contains NaN or infinity; a scale needs "
                   "finite data");
    }
  else
    {
      double lo = INFINITY, hi = -INFINITY;
      for (uint64_t b = 0; b < n_blocks && ok; b++)
        {
          if (job.mm[b].non_finite)
            ok = fail (e, PIQ_E_NON_FINITE, "the data contains NaN or infinity; a scale needs "
                       "finite data");
          lo = MIN (lo, job.mm[b].min);
          hi = MAX (hi, job.mm[b].max);
        }
      if (ok && info->kind == PIQ_KIND_CODE)
        {
          code_params (info, src, n, MAX (-lo, hi), scale);
          *zp = 0;
        }
      else if (ok)
        /* binary32 for every source, f64 too, as torch's observers keep min/max */
        ok = params_from_minmax (info, rule == RULE_ABS_MAX, include_zero, piq_f64_to_f32 (lo),
                                 piq_f64_to_f32 (hi), scale, zp, e);
    }
  (void) f;
  free (buf);
  return ok;
}

int
piq_engine_compute_params (const PiqEngine *eng, const PiqEngineFormat *f,
                           const PiqEngineRecipe *r, const PiqEngineView *src, double *scale,
                           int64_t *zero_point, PiqEngineError *e)
{
  const PiqDtypeInfo *info;
  uint64_t n;
  size_t row_bytes, span;
  int rule, ok;
  uint8_t *packed = NULL;
  PiqEngineView v = *src;

  if (!piq_engine_check_format (f, e))
    return 0;
  info = piq_dtype_info (f->dtype);
  if (f->granularity != GRAN_TENSOR)
    return fail (e, PIQ_E_UNSUPPORTED, "per-channel and per-block scales (and those of %s) are "
                 "derived by quantize, one per channel or block; compute_params derives "
                 "per-tensor parameters", info->name);
  if (!effective_rule (f, info, r, &rule, e) || !float_extent (src, &n, &row_bytes, &span, "source", e))
    return 0;
  if (!packed_source (src, n, row_bytes, &v, &packed, e))
    return 0;
  ok = derive_per_tensor (eng, f, info, rule, r->include_zero, &v, n, scale, zero_point, e);
  if (ok && !piq_engine_has_zero_points (f))
    *zero_point = symmetric_zp (info);
  free (packed);
  return ok;
}

/* ---------------------------------------------------------------------------
 * Quantize */

/* The kernel arguments shared by quantize and requantize of a checked call. */
static int
prepare (const PiqEngine *eng, const PiqEngineFormat *f, const PiqEngineRecipe *r,
         const PiqEngineView *src, uint64_t n, Geometry *g, double *scale, int64_t *zp,
         uint64_t *seed, PiqEngineError *e)
{
  int rule;

  if (!effective_rule (f, g->info, r, &rule, e) || !check_given (f, g->info, r, src->dtype, e))
    return 0;
  g->a.rule = rule == RULE_MIN_MAX ? PIQ_BRULE_MIN_MAX : PIQ_BRULE_ABS_MAX;
  g->a.include_zero = r->include_zero;
  g->a.e8m0_rule = rule >= RULE_POW2_FLOOR && rule <= RULE_POW2_RCEIL
                   ? (PiqE8m0Rule) (rule - RULE_POW2_FLOOR) : PIQ_E8M0_FLOOR;
  g->a.stochastic = r->stochastic;
  *seed = r->stochastic ? (r->seed ? r->seed : fresh_seed ()) : 0;
  piq_hash_keys (*seed, &g->a.key0, &g->a.key1);
  *scale = 0.0;
  *zp = 0;
  if (f->granularity != GRAN_TENSOR || g->info->bits == 0)
    return 1;
  if (r->has_scale)
    {
      *scale = r->scale;
      *zp = piq_engine_has_zero_points (f) ? r->zero_point : symmetric_zp (g->info);
    }
  else if (!derive_per_tensor (eng, f, g->info, rule, r->include_zero, src, n, scale, zp, e))
    return 0;
  else if (!piq_engine_has_zero_points (f))
    *zp = symmetric_zp (g->info);
  if (!check_scale (*scale, src->dtype, e))
    return 0;
  g->a.fixed = 1;
  g->a.scale = piq_f64_to_f32 (*scale);
  g->a.zero_point = *zp;
  return 1;
}

static int
run_quantize (const PiqEngine *eng, Geometry *g, const PiqEngineView *src, uint8_t *codes,
              uint8_t *scales, int32_t *zps, double scale, int64_t zp, uint64_t seed,
              void *scratch, PiqEngineError *e)
{
  const PiqDtypeInfo *si = piq_dtype_info (src->dtype);

  if (g->route == ROUTE_ELEMENTS)
    {
      ElementJob job = { 0 };
      element_args (g->info, scale, zp, seed, &job.args);
      job.quantize = eng->kernels->quantize[si->kernel_index][g->info->kernel_index]
                                           [g->a.stochastic];
      job.args.stream = g->n * (si->bits + g->info->bits) / 8 >= PIQ_STREAM_MIN_BYTES;
      job.src = src->data;
      job.dst = codes;
      job.src_bits = si->bits;
      job.dst_bits = g->info->bits;
      piq_parallel_run (eng->n_threads, g->n, PIQ_GRAIN, PIQ_PARALLEL_MIN_ELEMENTS,
                        element_range, &job);
      return 1;
    }
  if (g->route == ROUTE_CHANNELS)
    {
      piq_block_quantize_channels (&g->a, si->kernel_index, src->data, g->outer, g->ch, g->inner,
                                   codes, scales, zps, scratch);
      return 1;
    }
  {
    BlockJob job = { .g = g, .a = g->a, .op = BLOCK_QUANTIZE, .src = src->data, .codes = codes,
                     .scales = scales, .zero_points = zps };
    if (!row_scratch (g, &job, e))
      return 0;
    run_blocks (eng, &job, src->dtype);
    free (job.row_scratch);
  }
  return 1;
}

/* Double quantization's scale pass, on the team by chunks of PIQ_DQ_CHUNK scales:
 * each chunk's sum, then (once the offset, a sum of those in chunk order, is known)
 * each chunk's maximum and codes. Neither depends on how the chunks are shared out.
 * It ran on the calling thread, and at 16 threads took most of f32->nf4_dq's time. */
typedef struct
{
  const float   *scales;
  uint64_t       n_blocks;
  double        *sums;
  float          offset;
  uint8_t       *out;
  const uint8_t *in;
  float         *expanded;
} DqJob;

static void
dq_sum_range (void *data, uint64_t start, uint64_t n)
{
  DqJob *job = data;

  for (uint64_t c = start; c < start + n; c++)
    job->sums[c] = piq_dq_chunk_sum (job->scales, job->n_blocks, c);
}

static void
dq_compress_range (void *data, uint64_t start, uint64_t n)
{
  DqJob *job = data;

  piq_dq_compress_chunks (job->scales, job->n_blocks, job->offset, start, n, job->out);
}

static void
dq_expand_range (void *data, uint64_t start, uint64_t n)
{
  DqJob *job = data;

  piq_dq_expand_chunks (job->in, job->n_blocks, start, n, job->expanded);
}

/* the crossover in chunks: a chunk's 256 scales cost more than 256 elements */
#define DQ_MIN_CHUNKS (PIQ_PARALLEL_MIN_ELEMENTS / PIQ_DQ_CHUNK)

static int
dq_compress (const PiqEngine *eng, const float *scales, uint64_t n_blocks, uint8_t *out,
             PiqEngineError *e)
{
  uint64_t n_chunks = piq_dq_chunks (n_blocks);
  DqJob job = { .scales = scales, .n_blocks = n_blocks, .out = out };

  if (n_chunks == 0)
    {
      memset (out, 0, 4);   /* the offset of no scales, as piq_dq_offset gives */
      return 1;
    }
  if ((job.sums = alloc_or_fail ((size_t) n_chunks * sizeof (double), "chunk sums", e)) == NULL)
    return 0;
  piq_parallel_run (eng->n_threads, n_chunks, 1, DQ_MIN_CHUNKS, dq_sum_range, &job);
  job.offset = piq_dq_offset (job.sums, n_blocks);
  piq_parallel_run (eng->n_threads, n_chunks, 1, DQ_MIN_CHUNKS, dq_compress_range, &job);
  free (job.sums);
  return 1;
}

static void
dq_expand (const PiqEngine *eng, const uint8_t *in, uint64_t n_blocks, float *expanded)
{
  DqJob job = { .n_blocks = n_blocks, .in = in, .expanded = expanded };

  piq_parallel_run (eng->n_threads, piq_dq_chunks (n_blocks), 1,
                    DQ_MIN_CHUNKS, dq_expand_range, &job);
}

int
piq_engine_quantize (const PiqEngine *eng, const PiqEngineRecipe *r, const PiqEngineView *src,
                     PiqEngineQuant *dst, uint64_t *seed_used, PiqEngineError *e)
{
  Geometry g;
  uint64_t n, seed = 0;
  size_t row_bytes, span;
  double scale;
  int64_t zp;
  uint8_t *packed = NULL, *exact = NULL;
  void *scratch = NULL;
  PiqEngineView v = *src;
  int ok = 0;

  if (!float_extent (src, &n, &row_bytes, &span, "source", e) ||
      !geometry (&dst->f, src->shape, src->n_dims, &g, e) ||
      !check_room (g.codes_size, dst->codes_size, "destination", e) ||
      !check_room (g.scales_size, dst->scales_size, "scales", e) ||
      !check_room (g.zero_points_size, dst->zero_points_size, "zero points", e) ||
      !no_overlap (dst->codes, g.codes_size, "destination", src->data, span, "source", e) ||
      !no_overlap (dst->scales, g.scales_size, "scales", src->data, span, "source", e) ||
      !no_overlap (dst->zero_points, g.zero_points_size, "zero points", src->data, span, "source", e) ||
      !no_overlap (dst->scales, g.scales_size, "scales", dst->codes, g.codes_size, "codes", e) ||
      !no_overlap (dst->zero_points, g.zero_points_size, "zero points", dst->codes, g.codes_size,
                   "codes", e) ||
      !no_overlap (dst->zero_points, g.zero_points_size, "zero points", dst->scales,
                   g.scales_size, "scales", e))
    return 0;
  /* scale and zero-point buffers the format has no use for are neither read nor written */
  if (g.scales_size == 0)
    dst->scales = NULL;
  if (g.zero_points_size == 0)
    dst->zero_points = NULL;
  if ((g.codes_size && dst->codes == NULL) || (g.scales_size && dst->scales == NULL) ||
      (g.zero_points_size && dst->zero_points == NULL))
    return fail (e, PIQ_E_SIZE, "%s%s needs %s beside its codes: pass a buffer for them",
                 g.info->name, dst->f.granularity == GRAN_BLOCK ? " per block" : " per channel",
                 g.zero_points_size && dst->zero_points == NULL ? "zero points" : "scales");
  if (!packed_source (src, n, row_bytes, &v, &packed, e))
    return 0;
  if (!prepare (eng, &dst->f, r, &v, n, &g, &scale, &zp, &seed, e))
    goto out;
  if (g.route == ROUTE_CHANNELS &&
      (scratch = alloc_or_fail (piq_block_channels_scratch (g.ch), "channel statistics", e)) == NULL)
    goto out;
  if (g.double_quant)
    {
      /* the codes take the exact scales; the compressed ones are stored */
      if ((exact = alloc_or_fail ((size_t) g.n_blocks * sizeof (float), "block scales", e)) == NULL)
        goto out;
      if (!run_quantize (eng, &g, &v, (uint8_t *) dst->codes, exact, NULL, scale, zp, seed,
                         scratch, e))
        goto out;
      if (!dq_compress (eng, (const float *) exact, g.n_blocks, (uint8_t *) dst->scales, e))
        goto out;
    }
  else if (!run_quantize (eng, &g, &v, (uint8_t *) dst->codes, (uint8_t *) dst->scales,
                          (int32_t *) dst->zero_points, scale, zp, seed, scratch, e))
    goto out;
  dst->scale = scale;
  dst->zero_point = zp;
  if (seed_used != NULL)
    *seed_used = seed;
  ok = 1;
out:
  free (packed);
  free (exact);
  free (scratch);
  return ok;
}

/* ---------------------------------------------------------------------------
 * Dequantize */

static int
run_dequantize (const PiqEngine *eng, Geometry *g, const PiqEngineQuant *src,
                const uint8_t *scales, int dst_dtype, uint8_t *dst, int add, PiqEngineError *e)
{
  const PiqDtypeInfo *di = piq_dtype_info (dst_dtype);

  if (g->route == ROUTE_ELEMENTS)
    {
      ElementJob job = { 0 };
      element_args (g->info, src->scale, src->zero_point, 0, &job.args);
      job.dequantize = eng->kernels->dequantize[g->info->kernel_index][di->kernel_index][add];
      job.args.stream = !add && g->n * (g->info->bits + di->bits) / 8 >= PIQ_STREAM_MIN_BYTES;
      job.src = src->codes;
      job.dst = dst;
      job.src_bits = g->info->bits;
      job.dst_bits = di->bits;
      piq_parallel_run (eng->n_threads, g->n, PIQ_GRAIN, PIQ_PARALLEL_MIN_ELEMENTS,
                        element_range, &job);
      return 1;
    }
  if (g->route == ROUTE_CHANNELS)
    {
      piq_block_dequantize_channels (&g->a, src->codes, scales, src->zero_points, g->outer, g->ch,
                                     g->inner, di->kernel_index, dst, add);
      return 1;
    }
  {
    BlockJob job = { .g = g, .a = g->a, .op = BLOCK_DEQUANTIZE, .codes_in = src->codes,
                     .scales_in = scales, .zero_points_in = src->zero_points, .dst = dst,
                     .add = add };
    if (!row_scratch (g, &job, e))
      return 0;
    run_blocks (eng, &job, dst_dtype);
    free (job.row_scratch);
  }
  return 1;
}

int
piq_engine_dequantize (const PiqEngine *eng, const PiqEngineQuant *src, const uint64_t *shape,
                       unsigned n_dims, const PiqEngineView *dst, int add, PiqEngineError *e)
{
  Geometry g;
  uint64_t n;
  size_t row_bytes, span;
  uint8_t *packed = NULL, *out;
  float *expanded = NULL;
  const uint8_t *scales = src->scales;
  int ok = 0;

  if (!geometry (&src->f, shape, n_dims, &g, e) ||
      !float_extent (dst, &n, &row_bytes, &span, "destination", e) ||
      !same_shape (dst, shape, n_dims, e) ||
      !check_room (g.codes_size, src->codes_size, "source", e) ||
      !check_room (g.scales_size, src->scales_size, "scales", e) ||
      !check_room (g.zero_points_size, src->zero_points_size, "zero points", e) ||
      !no_overlap (dst->data, span, "destination", src->codes, g.codes_size, "source", e) ||
      !no_overlap (dst->data, span, "destination", src->scales, g.scales_size, "scales", e) ||
      !no_overlap (dst->data, span, "destination", src->zero_points, g.zero_points_size,
                   "zero points", e))
    return 0;
  if ((g.scales_size && src->scales == NULL) || (g.zero_points_size && src->zero_points == NULL))
    return fail (e, PIQ_E_SIZE, "%s needs its %s to decode", g.info->name,
                 g.scales_size && src->scales == NULL ? "scales" : "zero points");
  if (g.route == ROUTE_ELEMENTS || (g.a.fixed && g.info->bits != 0))
    {
      const PiqDtypeInfo *di = piq_dtype_info (dst->dtype);
      if (!check_scale (src->scale, di->kind == PIQ_KIND_FLOAT ? dst->dtype : DT_F32, e))
        return 0;
      if (piq_engine_has_zero_points (&src->f))
        {
          if (!check_zero_point (g.info, src->zero_point, e))
            return 0;
        }
      else if (src->zero_point != symmetric_zp (g.info))
        return fail (e, PIQ_E_INVALID_ZERO_POINT, "zero point %" PRId64 ": %s%s has none (%" PRId64
                     " is implied)", src->zero_point, src->f.symmetric && g.info->kind == PIQ_KIND_INT
                     ? "symmetric " : "", g.info->name, symmetric_zp (g.info));
      g.a.scale = piq_f64_to_f32 (src->scale);
      g.a.zero_point = src->zero_point;
    }
  out = (uint8_t *) dst->data;
  if (is_strided (dst, row_bytes, n))
    {
      uint64_t rows = n / dst->shape[dst->n_dims - 1];
      if ((packed = alloc_or_fail ((size_t) rows * row_bytes, "a packed copy of the rows", e)) == NULL)
        return 0;
      if (add)
        copy_rows (packed, dst, row_bytes, rows, 0);
      out = packed;
    }
  if (g.double_quant)
    {
      if ((expanded = alloc_or_fail ((size_t) g.n_blocks * sizeof (float), "block scales", e)) == NULL)
        goto done;
      dq_expand (eng, src->scales, g.n_blocks, expanded);
      scales = (const uint8_t *) expanded;
    }
  {
    /* scale and zero-point buffers the format has no use for are not read */
    PiqEngineQuant used = *src;
    if (g.scales_size == 0)
      scales = NULL;
    if (g.zero_points_size == 0)
      used.zero_points = NULL;
    if (!run_dequantize (eng, &g, &used, scales, dst->dtype, out, add, e))
      goto done;
  }
  if (packed != NULL)
    copy_rows (packed, dst, row_bytes, n / dst->shape[dst->n_dims - 1], 1);
  ok = 1;
done:
  free (packed);
  free (expanded);
  return ok;
}

/* ---------------------------------------------------------------------------
 * Requantize */

int
piq_engine_requantize (const PiqEngine *eng, const PiqEngineFormat *f, const PiqEngineRecipe *r,
                       const PiqEngineView *src, const PiqEngineView *dst, int add,
                       PiqEngineError *e)
{
  Geometry g;
  uint64_t n, dn, seed;
  size_t row_bytes, span, drow, dspan;
  double scale;
  int64_t zp;
  int in_place, ok = 0;
  PiqEngineView v = *src;
  uint8_t *packed = NULL, *out, *out_packed = NULL;

  if (!float_extent (src, &n, &row_bytes, &span, "source", e) ||
      !float_extent (dst, &dn, &drow, &dspan, "destination", e) ||
      !same_shape (dst, src->shape, src->n_dims, e) ||
      !geometry (f, src->shape, src->n_dims, &g, e))
    return 0;
  if (dst->dtype != src->dtype)
    return fail (e, PIQ_E_UNSUPPORTED, "requantize writes the source dtype %s, the destination "
                 "is %s", LABEL (src->dtype), LABEL (dst->dtype));
  in_place = dst->data == src->data && (dst->row_stride ? dst->row_stride : drow) ==
                                       (src->row_stride ? src->row_stride : row_bytes);
  if (!in_place && !no_overlap (dst->data, dspan, "destination", src->data, span, "source", e))
    return 0;
  if (!packed_source (src, n, row_bytes, &v, &packed, e))
    return 0;
  if (!prepare (eng, f, r, &v, n, &g, &scale, &zp, &seed, e))
    goto out;
  out = (uint8_t *) dst->data;
  if (is_strided (dst, drow, dn))
    {
      uint64_t rows = dn / dst->shape[dst->n_dims - 1];
      if ((out_packed = alloc_or_fail ((size_t) rows * drow, "a packed copy of the rows", e)) == NULL)
        goto out;
      if (add)
        copy_rows (out_packed, dst, drow, rows, 0);
      out = out_packed;
    }
  if (g.route == ROUTE_ELEMENTS)
    {
      const PiqDtypeInfo *fi = piq_dtype_info (src->dtype);
      ElementJob job = { 0 };
      element_args (g.info, scale, zp, seed, &job.args);
      job.quantize = eng->kernels->requantize[fi->kernel_index][r->stochastic][add];
      job.args.stream = !add && !in_place && n * fi->bits / 4 >= PIQ_STREAM_MIN_BYTES;
      job.src = v.data;
      job.dst = out;
      job.src_bits = fi->bits;
      job.dst_bits = fi->bits;
      piq_parallel_run (eng->n_threads, n, PIQ_GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, element_range, &job);
    }
  else if (g.route == ROUTE_FLAT && !g.double_quant)
    {
      BlockJob job = { .g = &g, .a = g.a, .op = BLOCK_REQUANTIZE, .src = v.data, .dst = out,
                       .add = add };
      run_blocks (eng, &job, src->dtype);
    }
  else
    {
      /* rows, channels and double quantization: through the codes and scales, whose
       * values (the compressed scales) exist only once every block is known */
      PiqEngineQuant q = { .f = *f, .codes_size = g.codes_size, .scales_size = g.scales_size,
                           .zero_points_size = g.zero_points_size };
      PiqEngineView ov = *dst;
      PiqEngineRecipe rs = *r;
      void *codes = alloc_or_fail (g.codes_size, "codes", e);
      void *scales = codes ? alloc_or_fail (g.scales_size, "scales", e) : NULL;
      void *zps = scales ? alloc_or_fail (g.zero_points_size, "zero points", e) : NULL;

      rs.seed = seed;
      q.codes = codes;
      q.scales = scales;
      q.zero_points = g.zero_points_size ? zps : NULL;
      ov.data = out;
      ov.row_stride = 0;
      ov.size = (size_t) dn * drow / MAX (dst->shape[dst->n_dims - 1], 1);
      int done = zps != NULL && piq_engine_quantize (eng, &rs, &v, &q, NULL, e) &&
                 piq_engine_dequantize (eng, &q, src->shape, src->n_dims, &ov, add, e);
      free (codes);
      free (scales);
      free (zps);
      if (!done)
        goto out;
    }
  if (out_packed != NULL)
    copy_rows (out_packed, dst, drow, dn / dst->shape[dst->n_dims - 1], 1);
  ok = 1;
out:
  free (packed);
  free (out_packed);
  return ok;
}

/* ---------------------------------------------------------------------------
 * Binary dot product */

int
piq_engine_binary_dot (const PiqEngineQuant *a, const PiqEngineQuant *b, uint64_t n,
                       double *result, PiqEngineError *e)
{
  Geometry ga, gb;
  uint64_t shape[1] = { n };

  if (a->f.dtype != 32 + PIQ_C_BINARY || b->f.dtype != 32 + PIQ_C_BINARY)
    return fail (e, PIQ_E_UNSUPPORTED, "the binary dot product takes two binary tensors, not %s "
                 "and %s", LABEL (a->f.dtype), LABEL (b->f.dtype));
  if (!geometry (&a->f, shape, 1, &ga, e) || !geometry (&b->f, shape, 1, &gb, e))
    return 0;
  if (ga.a.fixed != gb.a.fixed || ga.a.block != gb.a.block || ga.a.scale_kind != gb.a.scale_kind)
    return fail (e, PIQ_E_SIZE, "the binary vectors differ in block size or scale storage");
  if (!check_room (ga.codes_size, a->codes_size, "first vector's codes", e) ||
      !check_room (gb.codes_size, b->codes_size, "second vector's codes", e))
    return 0;
  if (ga.a.fixed)
    {
      /* one block, the per-tensor scales */
      float fa = piq_f64_to_f32 (a->scale), fb = piq_f64_to_f32 (b->scale);
      *result = piq_binary_dot (a->codes, (const uint8_t *) &fa, b->codes, (const uint8_t *) &fb,
                                n, (size_t) MAX (n, 1), PIQ_SCALE_F32);
      return 1;
    }
  if (!check_room (ga.scales_size, a->scales_size, "first vector's scales", e) ||
      !check_room (gb.scales_size, b->scales_size, "second vector's scales", e))
    return 0;
  *result = piq_binary_dot (a->codes, a->scales, b->codes, b->scales, n, ga.a.block,
                            ga.a.scale_kind);
  return 1;
}

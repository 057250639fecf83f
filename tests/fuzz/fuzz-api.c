/* fuzz-api.c: libFuzzer harness for the public API (formats, recipes, tensors, quantizer)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input's first bytes choose a format (every PiqDtype, invalid values included,
 * granularity, axis, block size, scale dtype and the flags, through g_object_new so
 * that every combination reaches validation; or a preset), a recipe (rule,
 * include-zero, rounding, seed, a given scale, NaN/Inf/0/negative included, and zero
 * point; or none), a shape of up to 4 small dimensions (rarely 0 or more than
 * PIQ_MAX_DIMS, or one huge dimension, which only the calls that are given their
 * sizes see), a float source dtype, a SIMD level and destination capacities (too
 * small, exact, larger, none); the rest is the data (NaN/Inf injected on request).
 * Then every operation runs in its raw and tensor forms: get_sizes, compute_params,
 * quantize, dequantize SET and ADD, requantize (in place and overlapping), binary_dot,
 * new_quantized_from_bytes with mismatched parts, packed weights and matmul.
 *
 * Besides the sanitizers' checks it asserts the API's promises:
 *  - TRUE (non-NULL) exactly when no GError is set; a GError is in PIQ_ERROR, with text;
 *  - a call that fails leaves every destination (codes, scales, zero points, floats,
 *    out-parameters, the recipe of compute_params, a destination tensor's codes,
 *    scales, scale, zero point and seed) byte-for-byte unchanged: each is filled
 *    with a canary pattern before the call and compared after;
 *  - a call that succeeds writes nothing past the bytes the shape needs in a larger
 *    destination, nor into the padding between a strided tensor's rows;
 *  - what quantize_raw writes, dequantize_raw accepts;
 *  - every SIMD level gives the scalar reference's bytes (quantize, dequantize,
 *    requantize), and a format that validate() refuses fails get_sizes too.
 * No GLib warning or critical may be logged, except GObject's refusal of an
 * out-of-range property value that this harness passed on purpose.
 *
 * Run: ./fuzz-api corpus/api or `make fuzz` (tests/fuzz/Makefile.am).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <piquant/piquant.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv);

#define FAIL(...) do { fprintf (stderr, "fuzz-api: " __VA_ARGS__); fputc ('\n', stderr); abort (); } while (0)
/* memcmp that takes NULL with a length of 0 */
#define MEMCMP(a, b, n) ((n) == 0 ? 0 : memcmp ((a), (b), (n)))
#define CHECK(cond) do { if (!(cond)) FAIL ("%s:%d: %s failed", __FILE__, __LINE__, #cond); } while (0)

/* Sizes: at most MAX_ELEMENTS elements, so a run stays well above 1,000 exec/s. */
#define MAX_ELEMENTS 512
#define N_SHAPE 10

/* ---- the input ---------------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t n;
} Input;

static guint8
take8 (Input *in)
{
  guint8 v = 0;
  if (in->n > 0)
    {
      v = *in->p++;
      in->n--;
    }
  return v;
}

static guint16 take16 (Input *in) { guint16 v = take8 (in); return (guint16) (v | take8 (in) << 8); }
static guint32 take32 (Input *in) { guint32 v = take16 (in); return v | (guint32) take16 (in) << 16; }
static guint64 take64 (Input *in) { guint64 v = take32 (in); return v | (guint64) take32 (in) << 32; }

static const PiqDtype all_dtypes[] = {
  PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16, PIQ_DTYPE_F16,
  PIQ_DTYPE_UINT2, PIQ_DTYPE_INT2, PIQ_DTYPE_UINT4, PIQ_DTYPE_INT4, PIQ_DTYPE_UINT8,
  PIQ_DTYPE_INT8, PIQ_DTYPE_UINT16, PIQ_DTYPE_INT16, PIQ_DTYPE_UINT32, PIQ_DTYPE_INT32,
  PIQ_DTYPE_UINT64, PIQ_DTYPE_INT64,
  PIQ_DTYPE_FP8_E4M3, PIQ_DTYPE_FP8_E5M2, PIQ_DTYPE_FP6_E2M3, PIQ_DTYPE_FP6_E3M2,
  PIQ_DTYPE_FP4_E2M1, PIQ_DTYPE_NF4, PIQ_DTYPE_FP4_BNB, PIQ_DTYPE_NF8, PIQ_DTYPE_BINARY,
  PIQ_DTYPE_Q8_0, PIQ_DTYPE_Q4_0, PIQ_DTYPE_BFP2, PIQ_DTYPE_BFP3, PIQ_DTYPE_BFP4,
  PIQ_DTYPE_BFP5, PIQ_DTYPE_BFP6, PIQ_DTYPE_BFP7, PIQ_DTYPE_BFP8, PIQ_DTYPE_E8M0,
};
static const PiqDtype float_dtypes[] = { PIQ_DTYPE_F32, PIQ_DTYPE_F64, PIQ_DTYPE_BF16, PIQ_DTYPE_F16 };

/* Any dtype: mostly a named one, at times a raw value (4, 15, 50, 63, 65, 255…). */
static PiqDtype
take_dtype (Input *in)
{
  guint8 b = take8 (in);
  if (b < 0xf0)
    return all_dtypes[b % G_N_ELEMENTS (all_dtypes)];
  if (b == 0xff)
    return (PiqDtype) take32 (in);
  return (PiqDtype) take8 (in);
}

/* A float dtype for a source or destination, rarely anything else. */
static PiqDtype
take_float_dtype (Input *in)
{
  guint8 b = take8 (in);
  if (b < 0xf8)
    return float_dtypes[b % 4];
  return take_dtype (in);
}

static const double special_doubles[] = {
  NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, -1.0, 1.0, 0.5, 3.0, 1e-45, 5e-324, 1e-300,
  1e-8, 0.0078125, 65504.0, 65520.0, 3.4028234663852886e38, 3.5e38, 1e300, G_MAXDOUBLE,
  -G_MAXDOUBLE, 2.04e39, 1.5, 0.1, 255.0, 1e-38, 1.1754943508222875e-38,
};

static double
take_double (Input *in)
{
  guint8 b = take8 (in);
  if (b < 0xe0)
    return special_doubles[b % G_N_ELEMENTS (special_doubles)];
  if (b < 0xf0)
    return (double) (gint16) take16 (in) / 64.0;
  {
    guint64 bits = take64 (in);
    double d;
    memcpy (&d, &bits, sizeof d);
    return d;
  }
}

static const gint64 special_zps[] = {
  0, 1, -1, 2, 3, 7, 8, -8, 15, 16, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768,
  65535, 65536, G_MAXINT32, G_MININT32, (gint64) G_MAXUINT32, G_MAXINT64, G_MININT64,
};

static gint64
take_zp (Input *in)
{
  guint8 b = take8 (in);
  if (b < 0xf0)
    return special_zps[b % G_N_ELEMENTS (special_zps)];
  return (gint64) take64 (in);
}

/* ---- logging: nothing may be logged, bar GObject's refusals we asked for ---- */

static gboolean expect_refusal;
static guint n_refusals;

static void
log_handler (const char     *domain,
             GLogLevelFlags  level,
             const char     *message,
             gpointer        user_data)
{
  (void) user_data;
  if (expect_refusal && g_strcmp0 (domain, "GLib-GObject") == 0 &&
      (level & (G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL)))
    {
      n_refusals++;
      return;
    }
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    FAIL ("unexpected log message [%s] %s", domain ? domain : "-", message);
}

/* ---- buffers and canaries ------------------------------------------------ */

static guint8
canary_byte (gsize i)
{
  return (guint8) (0xa5 ^ (i * 37) ^ (i >> 8));
}

/* A destination of @cap bytes at @offset into its own allocation of exactly
 * offset + cap bytes (ASan sees any write past it), filled with the canary. */
typedef struct {
  guint8 *block;
  guint8 *p;        /* NULL when cap == 0 and none was asked for */
  gsize cap;
  guint8 *copy;
} Buf;

static void
buf_init (Buf *b, gsize cap, gsize offset, gboolean null_if_empty)
{
  b->cap = cap;
  b->block = g_malloc (offset + cap + (cap == 0 ? 1 : 0));
  b->p = cap == 0 && null_if_empty ? NULL : b->block + offset;
  for (gsize i = 0; i < offset + cap; i++)
    b->block[i] = canary_byte (i);
  b->copy = g_memdup2 (b->block, offset + cap + (cap == 0 ? 1 : 0));
}

static void
buf_clear (Buf *b)
{
  g_clear_pointer (&b->block, g_free);
  g_clear_pointer (&b->copy, g_free);
  b->p = NULL;
}

static void
buf_check_unchanged (const Buf *b, const char *what, const char *op)
{
  if (b->cap > 0 && MEMCMP (b->p, b->copy + (b->p - b->block), b->cap) != 0)
    FAIL ("%s failed but changed %s", op, what);
}

/* After a success: the bytes past @used are still the canary. */
static void
buf_check_tail (const Buf *b, gsize used, const char *what, const char *op)
{
  if (b->p != NULL && used < b->cap &&
      MEMCMP (b->p + used, b->copy + (b->p - b->block) + used, b->cap - used) != 0)
    FAIL ("%s wrote past the %" G_GSIZE_FORMAT " bytes of %s it needs (%" G_GSIZE_FORMAT " given)",
          op, used, what, b->cap);
}

/* A capacity for a destination that needs @need bytes (0 when unknown). */
static gsize
take_capacity (Input *in, gsize need, gboolean *exact_or_more)
{
  guint8 b = take8 (in);
  gsize cap;
  switch (b & 7)
    {
    case 0: case 1: case 2: case 3:
      cap = need;
      break;
    case 4:
      cap = need > 0 ? need - 1 : 0;
      break;
    case 5:
      cap = need > 0 ? need - 1 - (b >> 3) % need : 0;
      break;
    case 6:
      cap = need + 1 + (b >> 3);
      break;
    default:
      cap = 0;
    }
  *exact_or_more = cap >= need;
  return cap;
}

static gboolean trace;   /* FUZZ_API_TRACE=1: print each call's result (reproducers) */

static void
check_result (const char *op, gboolean ok, const GError *error)
{
  if (trace)
    fprintf (stderr, "  %s: %s%s\n", op, ok ? "TRUE" : "FALSE ", error ? error->message : "");
  if (ok && error != NULL)
    FAIL ("%s succeeded with an error set: %s", op, error->message);
  if (!ok && error == NULL)
    FAIL ("%s failed without setting an error", op);
  if (error != NULL)
    {
      if (error->domain != PIQ_ERROR)
        FAIL ("%s: error in domain %s: %s", op, g_quark_to_string (error->domain), error->message);
      if (error->message == NULL || error->message[0] == '\0')
        FAIL ("%s: an error without a message", op);
    }
}

/* Float bits equal, any NaN equal to any NaN (of the same width). */
static gboolean
float_bytes_equal (PiqDtype dtype, const guint8 *a, const guint8 *b, gsize size)
{
  if (MEMCMP (a, b, size) == 0)
    return TRUE;
  gsize w = dtype == PIQ_DTYPE_F64 ? 8 : dtype == PIQ_DTYPE_F32 ? 4 : 2;
  if (!piq_dtype_is_float (dtype) || size % w != 0)
    return FALSE;
  for (gsize i = 0; i < size; i += w)
    {
      if (MEMCMP (a + i, b + i, w) == 0)
        continue;
      guint64 x = 0, y = 0;
      memcpy (&x, a + i, w);
      memcpy (&y, b + i, w);
      gboolean nx, ny;
      switch (dtype)
        {
        case PIQ_DTYPE_F64:
          nx = (x & G_GUINT64_CONSTANT (0x7fffffffffffffff)) > G_GUINT64_CONSTANT (0x7ff0000000000000);
          ny = (y & G_GUINT64_CONSTANT (0x7fffffffffffffff)) > G_GUINT64_CONSTANT (0x7ff0000000000000);
          break;
        case PIQ_DTYPE_F32:
          nx = (x & 0x7fffffff) > 0x7f800000;
          ny = (y & 0x7fffffff) > 0x7f800000;
          break;
        case PIQ_DTYPE_BF16:
          nx = (x & 0x7fff) > 0x7f80;
          ny = (y & 0x7fff) > 0x7f80;
          break;
        default:
          nx = (x & 0x7fff) > 0x7c00;
          ny = (y & 0x7fff) > 0x7c00;
        }
      if (!(nx && ny))
        {
          if (trace)
            fprintf (stderr, "  first difference at element %" G_GSIZE_FORMAT ": %#" G_GINT64_MODIFIER
                     "x, %#" G_GINT64_MODIFIER "x\n", i / w, x, y);
          return FALSE;
        }
    }
  return TRUE;
}

/* ---- the objects --------------------------------------------------------- */

static PiqQuantizer *quantizers[6];   /* [0]: scalar, the reference */
static guint n_quantizers;
static const char **preset_names;
static guint n_presets;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  static const PiqSimdLevel levels[] = {
    PIQ_SIMD_LEVEL_SCALAR, PIQ_SIMD_LEVEL_SSE4_2, PIQ_SIMD_LEVEL_AVX2, PIQ_SIMD_LEVEL_AVX512,
    PIQ_SIMD_LEVEL_AVX512_BF16, PIQ_SIMD_LEVEL_AVX512_FP16,
  };
  (void) argc;
  (void) argv;
  trace = g_strcmp0 (g_getenv ("FUZZ_API_TRACE"), "1") == 0;
  g_log_set_default_handler (log_handler, NULL);
  g_log_set_handler ("GLib-GObject", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  g_log_set_handler ("GLib", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  g_log_set_handler ("Piquant", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (levels); i++)
    {
      PiqQuantizer *q = piq_quantizer_new ();
      piq_quantizer_set_n_threads (q, 1);
      piq_quantizer_set_max_simd_level (q, levels[i]);
      /* keep one quantizer per kernel family the machine has */
      if (i > 0 && piq_quantizer_get_simd_level (q) ==
                   piq_quantizer_get_simd_level (quantizers[n_quantizers - 1]))
        {
          g_object_unref (q);
          continue;
        }
      quantizers[n_quantizers++] = q;
    }
  g_type_class_ref (PIQ_TYPE_DTYPE);
  g_type_class_ref (PIQ_TYPE_GRANULARITY);
  preset_names = piq_format_list_presets ();
  while (preset_names[n_presets] != NULL)
    n_presets++;
  return 0;
}

static PiqFormat *
take_format (Input *in)
{
  guint8 mode = take8 (in);
  const char *names[9];
  GValue values[9] = { G_VALUE_INIT };
  guint n = 0;
  PiqFormat *format;

  if (mode % 4 == 0)
    {
      g_autoptr(GError) error = NULL;
      guint8 which = take8 (in);
      const char *name = which < 0xf8 ? preset_names[which % n_presets] : "no-such-preset";
      format = piq_format_new_preset (name, &error);
      check_result ("new_preset", format != NULL, error);
      if (format != NULL)
        return format;
      /* an unknown name: go on with a format from properties */
    }

  guint16 set = take16 (in);
  gboolean out_of_range = FALSE;
#define ADD_ENUM(prop, type, v) do { int v_ = (int) (v); names[n] = prop; \
    g_value_init (&values[n], type); \
    if (g_enum_get_value (g_type_class_peek (type), v_) == NULL) out_of_range = TRUE; \
    g_value_set_enum (&values[n++], v_); } while (0)
  if (set & 1)
    ADD_ENUM ("dtype", PIQ_TYPE_DTYPE, take_dtype (in));
  if (set & 2)
    {
      guint8 g = take8 (in);
      ADD_ENUM ("granularity", PIQ_TYPE_GRANULARITY, g < 0xfc ? g % 3 : g);
    }
  if (set & 4)
    {
      gint8 axis = (gint8) take8 (in);
      names[n] = "axis";
      g_value_init (&values[n], G_TYPE_INT);
      if (axis < -PIQ_MAX_DIMS || axis > PIQ_MAX_DIMS - 1)
        out_of_range = TRUE;
      g_value_set_int (&values[n++], axis);
    }
  if (set & 8)
    {
      static const guint sizes[] = { 0, 1, 2, 3, 4, 7, 8, 16, 17, 31, 32, 33, 63, 64, 65, 100,
                                     127, 128, 129, 256, 1024, 4096, G_MAXUINT, 0x80000000u };
      guint8 b = take8 (in);
      names[n] = "block-size";
      g_value_init (&values[n], G_TYPE_UINT);
      g_value_set_uint (&values[n++], b < 0xf0 ? sizes[b % G_N_ELEMENTS (sizes)] : take32 (in));
    }
  if (set & 16)
    ADD_ENUM ("scale-dtype", PIQ_TYPE_DTYPE, take_dtype (in));
#undef ADD_ENUM
#define ADD_BOOL(bit, prop) do { if (set & (bit)) { names[n] = prop; g_value_init (&values[n], \
    G_TYPE_BOOLEAN); g_value_set_boolean (&values[n++], (set >> 12) & ((bit) >> 5) ? TRUE : FALSE); } } while (0)
  ADD_BOOL (32, "symmetric");
  ADD_BOOL (64, "saturate");
  ADD_BOOL (128, "high-nibble-first");
  ADD_BOOL (256, "double-quant");
#undef ADD_BOOL
  expect_refusal = out_of_range;
  format = (PiqFormat *) g_object_new_with_properties (PIQ_TYPE_FORMAT, n, names, values);
  expect_refusal = FALSE;
  for (guint i = 0; i < n; i++)
    g_value_unset (&values[i]);
  return format;
}

/* NULL (the default recipe) or a recipe from the input. */
static PiqRecipe *
take_recipe (Input *in)
{
  guint8 flags = take8 (in);
  PiqRecipe *r;

  if ((flags & 7) == 0)
    return NULL;
  r = piq_recipe_new ();
  if (flags & 8)
    {
      guint8 b = take8 (in);
      piq_recipe_set_scale_rule (r, (PiqScaleRule) (b < 0xf8 ? b % 8 : b));
    }
  if (flags & 16)
    piq_recipe_set_include_zero (r, FALSE);
  if (flags & 32)
    {
      guint8 b = take8 (in);
      piq_recipe_set_round_mode (r, (PiqRoundMode) (b < 0xfc ? b % 2 : b));
      guint8 s = take8 (in);
      piq_recipe_set_seed (r, s < 0x80 ? s : s < 0xc0 ? 0 : take64 (in));
    }
  if (flags & 64)
    {
      double scale = take_double (in);
      if (flags & 1)
        g_object_set (r, "scale", scale, NULL);   /* the property route */
      else
        piq_recipe_set_scale (r, scale);
    }
  if (flags & 128)
    piq_recipe_set_zero_point (r, take_zp (in));
  if ((flags & 7) == 7)
    {
      PiqRecipe *copy = piq_recipe_copy (r);
      g_object_unref (r);
      r = copy;
    }
  return r;
}

typedef struct {
  PiqScaleRule rule;
  gboolean include_zero, has_scale, has_zp;
  PiqRoundMode round;
  guint64 seed, scale_bits;
  gint64 zp;
} RecipeState;

static void
recipe_state (PiqRecipe *r, RecipeState *s)
{
  double scale = piq_recipe_get_scale (r);
  memset (s, 0, sizeof *s);
  s->rule = piq_recipe_get_scale_rule (r);
  s->include_zero = piq_recipe_get_include_zero (r);
  s->round = piq_recipe_get_round_mode (r);
  s->seed = piq_recipe_get_seed (r);
  s->has_scale = piq_recipe_has_scale (r);
  memcpy (&s->scale_bits, &scale, sizeof scale);
  s->has_zp = piq_recipe_has_zero_point (r);
  s->zp = piq_recipe_get_zero_point (r);
}

/* Whether quantizing twice with this recipe gives the same bytes (no fresh seed). */
static gboolean
recipe_deterministic (PiqRecipe *r)
{
  return r == NULL || piq_recipe_get_round_mode (r) != PIQ_ROUND_STOCHASTIC ||
         piq_recipe_get_seed (r) != 0;
}

/* ---- the shape and the data ---------------------------------------------- */

typedef struct {
  guint64 shape[N_SHAPE];
  guint n_dims;
  guint64 n;          /* elements, when small */
  gboolean huge;      /* a dimension too large to allocate: sized calls only */
  gboolean empty;     /* huge, but with a 0 extent: no element, a valid shape */
} Shape;

static void
take_shape (Input *in, Shape *s)
{
  guint8 b = take8 (in);
  memset (s, 0, sizeof *s);
  s->n_dims = b < 0xf0 ? 1 + b % 4 : b == 0xf0 ? 0 : 5 + b % 5;   /* 0 and 5..9 rarely */
  for (guint i = 0; i < s->n_dims; i++)
    {
      guint8 d = take8 (in);
      s->shape[i] = d < 0xf8 ? (d < 0xc0 ? d % 70 : 1 + d % 3) : (guint64) (d - 0xf8);
    }
  /* rarely one huge dimension */
  if (s->n_dims > 0 && (b & 0x0c) == 0x0c && take8 (in) == 0xa7)
    {
      static const guint64 huge[] = { G_GUINT64_CONSTANT (1) << 32, (G_GUINT64_CONSTANT (1) << 32) + 1,
                                      G_GUINT64_CONSTANT (1) << 40, G_GUINT64_CONSTANT (1) << 61,
                                      G_GUINT64_CONSTANT (1) << 62, G_MAXUINT64, G_MAXUINT64 / 3,
                                      G_MAXINT64 };
      s->shape[take8 (in) % s->n_dims] = huge[take8 (in) % G_N_ELEMENTS (huge)];
      s->huge = TRUE;
      /* with a 0 extent elsewhere the shape holds no element: valid when the other
       * extents' product fits in 64 bits (then calls may succeed, allocating nothing) */
      {
        guint64 p = 1;
        gboolean zero = FALSE, fits = TRUE;
        for (guint i = 0; i < s->n_dims; i++)
          if (s->shape[i] == 0)
            zero = TRUE;
          else if (!g_uint64_checked_mul (&p, p, s->shape[i]))
            fits = FALSE;
        s->empty = zero && fits;
      }
      return;
    }
  /* cap the element count */
  for (;;)
    {
      guint64 n = 1;
      guint big = 0;
      for (guint i = 0; i < s->n_dims; i++)
        {
          n *= s->shape[i];
          if (s->shape[i] > s->shape[big])
            big = i;
        }
      if (n <= MAX_ELEMENTS)
        {
          s->n = n;
          break;
        }
      s->shape[big] = (s->shape[big] + 1) / 2;
    }
}

static gsize
float_size (PiqDtype dtype)
{
  return dtype == PIQ_DTYPE_F64 ? 8 : dtype == PIQ_DTYPE_F32 ? 4 : 2;
}

/* Element i of a float buffer set to @v (f16 and bf16 by truncation, enough here). */
static void
store_float (PiqDtype dtype, guint8 *p, gsize i, double v)
{
  float f = (float) v;
  guint32 u;
  memcpy (&u, &f, 4);
  switch (dtype)
    {
    case PIQ_DTYPE_F64:
      memcpy (p + 8 * i, &v, 8);
      break;
    case PIQ_DTYPE_F32:
      memcpy (p + 4 * i, &f, 4);
      break;
    case PIQ_DTYPE_BF16:
      {
        guint16 h = (guint16) (u >> 16);
        if (isnan (f))
          h |= 0x40;
        memcpy (p + 2 * i, &h, 2);
      }
      break;
    case PIQ_DTYPE_F16:
      {
        guint16 sign = (guint16) ((u >> 16) & 0x8000);
        double a = fabs (v);
        guint16 h;
        if (isnan (v))
          h = 0x7e00;
        else if (a >= 65520.0)
          h = 0x7c00;
        else if (a < 6.103515625e-05)
          h = (guint16) (a / 5.960464477539063e-08);
        else
          {
            int e;
            double m = frexp (a, &e);             /* a = m · 2^e, m in [0.5, 1) */
            h = (guint16) (((e + 14) << 10) | ((guint16) ((m * 2 - 1) * 1024) & 0x3ff));
          }
        h |= sign;
        memcpy (p + 2 * i, &h, 2);
      }
      break;
    default:
      break;
    }
}

/* Fills @size bytes at @p: raw input bytes, or values of a tame distribution, then
 * special values at chosen positions. */
static void
fill_data (Input *in, PiqDtype dtype, guint8 *p, gsize size, guint64 n)
{
  guint8 mode = take8 (in);
  guint8 n_special = take8 (in) % 8;
  const uint8_t *src = in->p;
  size_t avail = in->n;

  if ((mode & 1) == 0 || !piq_dtype_is_float (dtype))
    {
      for (gsize i = 0; i < size; i++)
        p[i] = avail > 0 ? src[i % avail] : (guint8) (i * 131 + 7);
    }
  else
    {
      double step = ldexp (1.0, (int) (mode >> 3) - 16);
      for (guint64 i = 0; i < n; i++)
        {
          gint8 v = avail > 0 ? (gint8) src[i % avail] : (gint8) (i * 29);
          store_float (dtype, p, i, (double) v * step + ((mode & 2) ? 100.0 * step : 0.0));
        }
    }
  if (piq_dtype_is_float (dtype) && n > 0)
    for (guint i = 0; i < n_special; i++)
      {
        guint16 at = take16 (in);
        store_float (dtype, p, at % n, take_double (in));
      }
}

/* ---- one run -------------------------------------------------------------- */

typedef struct {
  Input in;
  PiqQuantizer *q;
  PiqFormat *format;
  PiqRecipe *recipe;
  Shape s;
  PiqDtype src_dtype;
  guint8 *src;            /* the source data, packed, src_size bytes */
  gsize src_size;
  gboolean src_sized;     /* src_size is what the dtype and shape need */
  gboolean sizes_ok;
  gsize codes_size, scales_size, zps_size;
} Run;

static void
run_get_sizes (Run *r)
{
  g_autoptr(GError) error = NULL;
  gsize c = 0xcafe0001, s = 0xcafe0002, z = 0xcafe0003;
  gboolean ok = piq_format_get_sizes (r->format, r->s.shape, r->s.n_dims, &c, &s, &z, &error);
  g_autoptr(GError) verror = NULL;
  gboolean valid = piq_format_validate (r->format, &verror);

  check_result ("get_sizes", ok, error);
  check_result ("validate", valid, verror);
  if (!ok)
    CHECK (c == 0xcafe0001 && s == 0xcafe0002 && z == 0xcafe0003);
  if (!valid && ok)
    FAIL ("validate refuses the format (%s) but get_sizes accepts it", verror->message);
  CHECK (piq_format_equal (r->format, r->format));
  g_free (piq_format_to_string (r->format));
  r->sizes_ok = ok;
  r->codes_size = ok ? c : 0;
  r->scales_size = ok ? s : 0;
  r->zps_size = ok ? z : 0;
}

static void
run_compute_params (Run *r)
{
  g_autoptr(PiqRecipe) own = NULL;
  PiqRecipe *recipe = r->recipe;
  g_autoptr(GError) error = NULL;
  RecipeState before, after;
  gboolean ok;

  if (!r->src_sized)
    return;
  if (recipe == NULL)
    recipe = own = piq_recipe_new ();
  recipe_state (recipe, &before);
  ok = piq_quantizer_compute_params_raw (r->q, r->format, recipe, r->src_dtype, r->src,
                                         (gsize) r->s.n, &error);
  check_result ("compute_params_raw", ok, error);
  recipe_state (recipe, &after);
  if (!ok)
    CHECK (MEMCMP (&before, &after, sizeof before) == 0);
  else
    CHECK (before.rule == after.rule && before.include_zero == after.include_zero &&
           before.round == after.round && before.seed == after.seed && after.has_scale);
  if (ok && r->recipe == NULL && (take8 (&r->in) & 1))
    {
      /* calibrated: quantize with it (exercises given scales) */
      g_clear_object (&r->recipe);
      r->recipe = g_object_ref (recipe);
    }
}

/* quantize_raw into the given capacities; on success, dequantize_raw what it wrote. */
static void
run_quantize_raw (Run *r)
{
  Buf codes, scales, zps;
  gboolean ex_c, ex_s, ex_z;
  gsize cap_c = take_capacity (&r->in, r->codes_size, &ex_c);
  gsize cap_s = take_capacity (&r->in, r->scales_size, &ex_s);
  gsize cap_z = take_capacity (&r->in, r->zps_size, &ex_z);
  guint8 opts = take8 (&r->in);
  double scale;
  gint64 zp;
  guint64 scale_bits;
  const double scale_canary = -12345.678;
  g_autoptr(GError) error = NULL;
  gboolean ok;

  if (!r->src_sized)
    return;
  buf_init (&codes, cap_c, opts & 3, (opts & 4) == 0);
  buf_init (&scales, cap_s, (opts >> 3) & 3, TRUE);
  buf_init (&zps, cap_z, (opts >> 5) & 3, TRUE);
  scale = scale_canary;
  zp = -424242;
  ok = piq_quantizer_quantize_raw (r->q, r->format, r->recipe, r->src_dtype, r->src,
                                   r->s.shape, r->s.n_dims, codes.p, codes.cap, scales.p,
                                   scales.cap, zps.p, zps.cap, &scale, &zp, &error);
  check_result ("quantize_raw", ok, error);
  if (!ok)
    {
      buf_check_unchanged (&codes, "the codes", "quantize_raw");
      buf_check_unchanged (&scales, "the scales", "quantize_raw");
      buf_check_unchanged (&zps, "the zero points", "quantize_raw");
      CHECK (scale == scale_canary && zp == -424242);
      goto out;
    }
  if (!r->sizes_ok)
    FAIL ("quantize_raw accepts a format and shape that get_sizes refuses");
  buf_check_tail (&codes, r->codes_size, "codes", "quantize_raw");
  buf_check_tail (&scales, r->scales_size, "scales", "quantize_raw");
  buf_check_tail (&zps, r->zps_size, "zero points", "quantize_raw");
  memcpy (&scale_bits, &scale, sizeof scale);

  /* the scalar reference writes the same bytes */
  if (r->q != quantizers[0] && recipe_deterministic (r->recipe))
    {
      Buf c2, s2, z2;
      double scale2;
      gint64 zp2;
      g_autoptr(GError) e2 = NULL;
      buf_init (&c2, r->codes_size, 0, TRUE);
      buf_init (&s2, r->scales_size, 0, TRUE);
      buf_init (&z2, r->zps_size, 0, TRUE);
      gboolean ok2 = piq_quantizer_quantize_raw (quantizers[0], r->format, r->recipe, r->src_dtype,
                                                 r->src, r->s.shape, r->s.n_dims, c2.p, c2.cap,
                                                 s2.p, s2.cap, z2.p, z2.cap, &scale2, &zp2, &e2);
      check_result ("quantize_raw (scalar)", ok2, e2);
      if (!ok2)
        FAIL ("quantize_raw succeeds at SIMD level %d, fails at scalar: %s",
              piq_quantizer_get_simd_level (r->q), e2->message);
      if (MEMCMP (c2.p, codes.p, r->codes_size) != 0 ||
          MEMCMP (s2.p, scales.p, r->scales_size) != 0 ||
          MEMCMP (z2.p, zps.p, r->zps_size) != 0 ||
          MEMCMP (&scale2, &scale, sizeof scale) != 0 || zp2 != zp)
        FAIL ("quantize_raw at SIMD level %d differs from the scalar reference",
              piq_quantizer_get_simd_level (r->q));
      buf_clear (&c2);
      buf_clear (&s2);
      buf_clear (&z2);
    }

  /* what quantize wrote, dequantize accepts */
  {
    guint8 dsel = take8 (&r->in);
    PiqDtype dd = dsel < 0x80 ? r->src_dtype : float_dtypes[dsel % 4];
    gsize need = 0;
    Buf out;
    gboolean ex_o;
    guint8 o = take8 (&r->in);
    g_autoptr(GError) e3 = NULL;

    CHECK (piq_dtype_get_size_for_n (dd, r->s.n, &need, NULL));
    gsize cap_o = take_capacity (&r->in, need, &ex_o);
    buf_init (&out, cap_o, o & 3, TRUE);
    gboolean ok3 = piq_quantizer_dequantize_raw (r->q, r->format, scale, zp, codes.p,
                                                 r->codes_size, r->s.shape, r->s.n_dims,
                                                 scales.p, r->scales_size, zps.p, r->zps_size,
                                                 dd, out.p, out.cap,
                                                 (o & 4) ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, &e3);
    check_result ("dequantize_raw (of quantize_raw)", ok3, e3);
    if (!ok3)
      {
        buf_check_unchanged (&out, "the destination", "dequantize_raw");
        /* into the source's own dtype (another may not hold the scale's range) */
        if (ex_o && dd == r->src_dtype)
          FAIL ("dequantize_raw refuses what quantize_raw wrote: %s", e3->message);
      }
    else
      {
        CHECK (ex_o);
        buf_check_tail (&out, need, "floats", "dequantize_raw");
      }
    buf_clear (&out);
  }
  (void) scale_bits;
out:
  buf_clear (&codes);
  buf_clear (&scales);
  buf_clear (&zps);
}

/* dequantize_raw of codes, scales and zero points made of input bytes. */
static void
run_dequantize_raw (Run *r)
{
  guint8 opts = take8 (&r->in);
  gboolean ex;
  gsize src_cap = take_capacity (&r->in, r->codes_size, &ex);
  gsize sc_cap = take_capacity (&r->in, r->scales_size, &ex);
  gsize zp_cap = take_capacity (&r->in, r->zps_size, &ex);
  PiqDtype dd = take_float_dtype (&r->in);
  double scale = take_double (&r->in);
  gint64 zp = take_zp (&r->in);
  gsize need = 0;
  gboolean ex_o;
  Buf out, out2;
  guint8 *codes, *scales, *zps;
  PiqReduceOp op = (opts & 1) ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET;
  g_autoptr(GError) error = NULL;
  gboolean ok;

  if (r->s.huge)
    {
      /* sizes the shape cannot have: nothing as large as it says is allocated */
      src_cap %= 4096;
      sc_cap %= 4096;
      zp_cap %= 4096;
      need = r->s.empty ? 0 : 64;
    }
  else if (!piq_dtype_get_size_for_n (dd, r->s.n, &need, NULL))
    need = r->s.n * 8;
  gsize out_cap = take_capacity (&r->in, need, &ex_o);

  /* sources: exact allocations of input bytes */
  codes = g_malloc (src_cap + 1);
  scales = g_malloc (sc_cap + 1);
  zps = g_malloc (zp_cap + 1);
  fill_data (&r->in, PIQ_DTYPE_UINT8, codes, src_cap, src_cap);
  fill_data (&r->in, PIQ_DTYPE_UINT8, scales, sc_cap, sc_cap);
  fill_data (&r->in, PIQ_DTYPE_UINT8, zps, zp_cap, zp_cap);
  if (opts & 2)
    {
      /* plausible scales: small positive f32 values */
      for (gsize i = 0; i + 4 <= sc_cap; i += 4)
        {
          float f = (float) (1 + scales[i] % 64) / 32.0f;
          memcpy (scales + i, &f, 4);
        }
    }
  if (opts & 4)
    for (gsize i = 0; i + 4 <= zp_cap; i += 4)
      {
        gint32 z = (gint8) zps[i];
        memcpy (zps + i, &z, 4);
      }

  buf_init (&out, out_cap, (opts >> 3) & 3, TRUE);
  ok = piq_quantizer_dequantize_raw (r->q, r->format, scale, zp, src_cap ? codes : NULL, src_cap,
                                     r->s.shape, r->s.n_dims, sc_cap ? scales : NULL, sc_cap,
                                     zp_cap ? zps : NULL, zp_cap, dd, out.p, out.cap, op, &error);
  check_result ("dequantize_raw", ok, error);
  if (!ok)
    buf_check_unchanged (&out, "the destination", "dequantize_raw");
  else
    {
      CHECK (!r->s.huge || r->s.empty);
      buf_check_tail (&out, need, "floats", "dequantize_raw");
      if (r->q != quantizers[0])
        {
          g_autoptr(GError) e2 = NULL;
          buf_init (&out2, out_cap, (opts >> 3) & 3, TRUE);
          gboolean ok2 = piq_quantizer_dequantize_raw (quantizers[0], r->format, scale, zp,
                                                       src_cap ? codes : NULL, src_cap, r->s.shape,
                                                       r->s.n_dims, sc_cap ? scales : NULL, sc_cap,
                                                       zp_cap ? zps : NULL, zp_cap, dd, out2.p,
                                                       out2.cap, op, &e2);
          check_result ("dequantize_raw (scalar)", ok2, e2);
          if (!ok2)
            FAIL ("dequantize_raw succeeds at SIMD level %d, fails at scalar: %s",
                  piq_quantizer_get_simd_level (r->q), e2->message);
          if (!float_bytes_equal (dd, out.p, out2.p, need))
            FAIL ("dequantize_raw at SIMD level %d differs from the scalar reference",
                  piq_quantizer_get_simd_level (r->q));
          buf_clear (&out2);
        }
    }

  /* the destination overlapping the codes: refused, nothing written */
  if ((opts & 0x20) && ok && MIN (src_cap, r->codes_size) > 0 && need > 0)
    {
      /* an offset inside the codes the shape reads (bytes past them may be shared) */
      gsize off = take8 (&r->in) % MIN (src_cap, r->codes_size);
      gsize total = MAX (src_cap, off + need);
      guint8 *block = g_malloc (total);
      g_autoptr(GError) e4 = NULL;
      memcpy (block, codes, src_cap);
      memset (block + src_cap, 0x5a, total - src_cap);
      guint8 *copy = g_memdup2 (block, total);
      gboolean ok4 = piq_quantizer_dequantize_raw (r->q, r->format, scale, zp, block, src_cap,
                                                   r->s.shape, r->s.n_dims, sc_cap ? scales : NULL,
                                                   sc_cap, zp_cap ? zps : NULL, zp_cap, dd,
                                                   block + off, need, op, &e4);
      check_result ("dequantize_raw (overlapping)", ok4, e4);
      if (ok4)
        FAIL ("dequantize_raw accepts a destination at byte %" G_GSIZE_FORMAT " of its codes",
              off);
      if (MEMCMP (block, copy, total) != 0)
        FAIL ("dequantize_raw refused an overlapping destination but wrote to it");
      g_free (block);
      g_free (copy);
    }
  buf_clear (&out);
  g_free (codes);
  g_free (scales);
  g_free (zps);
}

/* requantize_raw into a separate destination, in place, or overlapping. */
static void
run_requantize_raw (Run *r)
{
  guint8 opts = take8 (&r->in);
  PiqReduceOp op = (opts & 1) ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET;
  g_autoptr(GError) error = NULL;
  gboolean ok;

  if (!r->src_sized)
    return;
  switch ((opts >> 1) & 3)
    {
    case 0: case 1:
      {
        gboolean ex;
        gsize cap = take_capacity (&r->in, r->src_size, &ex);
        Buf out;
        buf_init (&out, cap, (opts >> 3) & 3, TRUE);
        ok = piq_quantizer_requantize_raw (r->q, r->format, r->recipe, r->src_dtype, r->src,
                                           r->s.shape, r->s.n_dims, out.p, out.cap, op, &error);
        check_result ("requantize_raw", ok, error);
        if (!ok)
          buf_check_unchanged (&out, "the destination", "requantize_raw");
        else
          {
            if (!r->sizes_ok)
              FAIL ("requantize_raw accepts a format and shape that get_sizes refuses");
            buf_check_tail (&out, r->src_size, "floats", "requantize_raw");
            if (r->q != quantizers[0] && recipe_deterministic (r->recipe))
              {
                Buf out2;
                g_autoptr(GError) e2 = NULL;
                buf_init (&out2, cap, (opts >> 3) & 3, TRUE);
                gboolean ok2 = piq_quantizer_requantize_raw (quantizers[0], r->format, r->recipe,
                                                             r->src_dtype, r->src, r->s.shape,
                                                             r->s.n_dims, out2.p, out2.cap, op, &e2);
                check_result ("requantize_raw (scalar)", ok2, e2);
                if (!ok2)
                  FAIL ("requantize_raw succeeds at SIMD level %d, fails at scalar: %s",
                        piq_quantizer_get_simd_level (r->q), e2->message);
                if (!float_bytes_equal (r->src_dtype, out.p, out2.p, r->src_size))
                  FAIL ("requantize_raw at SIMD level %d differs from the scalar reference",
                        piq_quantizer_get_simd_level (r->q));
                buf_clear (&out2);
              }
          }
        buf_clear (&out);
      }
      break;
    case 2:
      {
        /* in place: a copy of the source is both */
        guint8 *p = g_memdup2 (r->src, r->src_size + 1);
        guint8 *copy = g_memdup2 (p, r->src_size + 1);
        ok = piq_quantizer_requantize_raw (r->q, r->format, r->recipe, r->src_dtype, p,
                                           r->s.shape, r->s.n_dims, p, r->src_size, op, &error);
        check_result ("requantize_raw (in place)", ok, error);
        if (!ok && MEMCMP (p, copy, r->src_size) != 0)
          FAIL ("requantize_raw in place failed but changed the data");
        g_free (p);
        g_free (copy);
      }
      break;
    default:
      {
        /* overlapping by a few bytes either way: refused, nothing written */
        gssize shift = (gssize) (take8 (&r->in) % 16) - 8;
        if (shift == 0 || r->src_size == 0)
          shift = 1;
        gsize total = r->src_size + 8;
        guint8 *block = g_malloc (total);
        guint8 *s = block + (shift < 0 ? 8 : 0);
        guint8 *d = s + shift;
        memset (block, 0x3c, total);
        memcpy (s, r->src, r->src_size);
        guint8 *copy = g_memdup2 (block, total);
        CHECK (d >= block && d + r->src_size <= block + total);
        ok = piq_quantizer_requantize_raw (r->q, r->format, r->recipe, r->src_dtype, s,
                                           r->s.shape, r->s.n_dims, d, r->src_size, op, &error);
        check_result ("requantize_raw (overlapping)", ok, error);
        if (ok && r->src_size > (gsize) ABS (shift))
          FAIL ("requantize_raw accepts a destination %" G_GSSIZE_FORMAT " bytes from its source",
                shift);
        if (!ok && MEMCMP (block, copy, total) != 0)
          FAIL ("requantize_raw refused an overlapping destination but wrote to it");
        g_free (block);
        g_free (copy);
      }
    }
}

/* ---- tensor forms --------------------------------------------------------- */

typedef struct {
  PiqTensor *t;
  guint8 *mem;        /* caller-owned memory of a for_address tensor */
  gsize mem_size;
} OwnedTensor;

static void
owned_clear (OwnedTensor *o)
{
  g_clear_object (&o->t);
  g_clear_pointer (&o->mem, g_free);
}

/* A float tensor of @dtype and the run's shape holding @data (packed, NULL: canary),
 * made in one of several ways: copied, wrapped (strided, maybe read-only), GBytes. */
static gboolean
make_float_tensor (Run *r, PiqDtype dtype, const guint8 *data, guint8 how, OwnedTensor *o)
{
  g_autoptr(GError) error = NULL;
  gsize es = float_size (dtype);
  guint64 rows = 1, cols = r->s.n_dims ? r->s.shape[r->s.n_dims - 1] : 0;
  gsize row_bytes, stride, size;

  memset (o, 0, sizeof *o);
  if (r->s.huge || !piq_dtype_is_float (dtype))
    return FALSE;
  for (guint i = 0; i + 1 < r->s.n_dims; i++)
    rows *= r->s.shape[i];
  row_bytes = cols * es;
  /* padded rows only when there are elements: a shape with a 0 extent may have
   * billions of empty rows, which a padded stride would make gigabytes */
  stride = (how & 4) && r->s.n > 0 ? row_bytes + es * (1 + (how >> 5)) : row_bytes;
  size = rows && stride ? (rows - 1) * stride + row_bytes : 0;
  o->mem_size = size + ((how & 8) ? 3 : 0);
  o->mem = g_malloc (o->mem_size + 1);
  for (gsize i = 0; i < o->mem_size; i++)
    o->mem[i] = canary_byte (i);
  if (data != NULL && row_bytes > 0)
    for (guint64 i = 0; i < rows; i++)
      memcpy (o->mem + i * stride, data + i * row_bytes, row_bytes);

  switch (how & 3)
    {
    case 0:
      if (stride == row_bytes)
        {
          o->t = piq_tensor_new_from_data (dtype, r->s.n, o->mem, size, &error);
          check_result ("tensor_new_from_data", o->t != NULL, error);
          if (o->t != NULL && r->s.n_dims > 1)
            {
              g_autoptr(GError) e2 = NULL;
              gboolean ok = piq_tensor_reshape (o->t, r->s.shape, r->s.n_dims, &e2);
              check_result ("reshape", ok, e2);
              CHECK (ok);
            }
          g_clear_pointer (&o->mem, g_free);
          break;
        }
      /* fall through */
    case 1:
    case 2:
      o->t = piq_tensor_new_for_address (dtype, r->s.shape, r->s.n_dims,
                                         (guintptr) (o->mem_size ? o->mem : NULL), o->mem_size,
                                         stride == row_bytes && !(how & 16) ? 0 : stride,
                                         (how & 3) != 2, &error);
      check_result ("tensor_new_for_address", o->t != NULL, error);
      break;
    default:
      {
        g_autoptr(GBytes) bytes = g_bytes_new (o->mem, o->mem_size);
        o->t = piq_tensor_new_strided (dtype, r->s.shape, r->s.n_dims, bytes, 0,
                                       stride == row_bytes && !(how & 16) ? 0 : stride, &error);
        check_result ("tensor_new_strided", o->t != NULL, error);
        g_clear_pointer (&o->mem, g_free);
      }
    }
  if (o->t == NULL)
    g_clear_pointer (&o->mem, g_free);
  return o->t != NULL;
}

/* Everything a quantized or float tensor holds, to compare before and after. */
typedef struct {
  GBytes *data, *scales, *zps;
  double scale;
  gint64 zp;
  guint64 seed;
  PiqFormat *format;
} TensorState;

static void
tensor_state (PiqTensor *t, TensorState *s)
{
  gsize size = 0;
  gconstpointer p = piq_tensor_get_data (t, &size);
  s->data = g_bytes_new (p, size);
  s->scales = piq_tensor_get_scales (t);
  s->zps = piq_tensor_get_zero_points (t);
  s->scales = s->scales ? g_bytes_new (g_bytes_get_data (s->scales, NULL), g_bytes_get_size (s->scales)) : NULL;
  s->zps = s->zps ? g_bytes_new (g_bytes_get_data (s->zps, NULL), g_bytes_get_size (s->zps)) : NULL;
  s->scale = piq_tensor_get_scale (t);
  s->zp = piq_tensor_get_zero_point (t);
  s->seed = piq_tensor_get_seed (t);
  s->format = piq_tensor_get_format (t);
}

static gboolean
bytes_equal0 (GBytes *a, GBytes *b)
{
  return (a == NULL && b == NULL) || (a != NULL && b != NULL && g_bytes_equal (a, b));
}

static void
tensor_state_check (PiqTensor *t, TensorState *before, const char *op)
{
  TensorState after;
  tensor_state (t, &after);
  if (!g_bytes_equal (before->data, after.data))
    FAIL ("%s failed but changed the destination's data", op);
  if (!bytes_equal0 (before->scales, after.scales) || !bytes_equal0 (before->zps, after.zps))
    FAIL ("%s failed but changed the destination's scales or zero points", op);
  if (MEMCMP (&before->scale, &after.scale, sizeof (double)) != 0 || before->zp != after.zp ||
      before->seed != after.seed || before->format != after.format)
    FAIL ("%s failed but changed the destination's scale, zero point, seed or format", op);
  g_bytes_unref (after.data);
  g_clear_pointer (&after.scales, g_bytes_unref);
  g_clear_pointer (&after.zps, g_bytes_unref);
}

static void
tensor_state_clear (TensorState *s)
{
  g_clear_pointer (&s->data, g_bytes_unref);
  g_clear_pointer (&s->scales, g_bytes_unref);
  g_clear_pointer (&s->zps, g_bytes_unref);
}

/* The bytes of a for_address tensor's memory outside its rows are still the canary. */
static void
check_padding (Run *r, OwnedTensor *o, const guint8 *before, const char *op)
{
  gsize es, row_bytes, stride;
  guint64 rows = 1;

  if (o->mem == NULL)
    return;
  es = float_size (piq_tensor_get_dtype (o->t));
  row_bytes = r->s.shape[r->s.n_dims - 1] * es;
  stride = piq_tensor_get_row_stride (o->t);
  if (stride == 0)
    stride = row_bytes;
  for (guint i = 0; i + 1 < r->s.n_dims; i++)
    rows *= r->s.shape[i];
  for (gsize i = 0; i < o->mem_size; i++)
    {
      gboolean in_row = rows > 0 && i < (rows - 1) * stride + row_bytes && i % stride < row_bytes;
      if (!in_row && o->mem[i] != before[i])
        FAIL ("%s wrote byte %" G_GSIZE_FORMAT " outside the rows of a strided destination "
              "(row %" G_GSIZE_FORMAT " bytes, stride %" G_GSIZE_FORMAT ")", op, i, row_bytes, stride);
    }
}

/* A quantized tensor of codes, scales and zero points from input bytes, with parts
 * whose sizes may not match. */
static PiqTensor *
run_from_bytes (Run *r, PiqFormat *format)
{
  g_autoptr(GError) error = NULL;
  gboolean ex;
  gsize c = 0, s = 0, z = 0;
  guint8 opts = take8 (&r->in);
  PiqTensor *t;

  if (!piq_format_get_sizes (format, r->s.shape, r->s.n_dims, &c, &s, &z, NULL))
    c = s = z = 0;
  if (r->s.huge)
    c = s = z = 0;
  gsize cc = (opts & 1) ? take_capacity (&r->in, c, &ex) : c;
  gsize sc = (opts & 2) ? take_capacity (&r->in, s, &ex) : s;
  gsize zc = (opts & 4) ? take_capacity (&r->in, z, &ex) : z;
  guint8 *cb = g_malloc (cc + 1), *sb = g_malloc (sc + 1), *zb = g_malloc (zc + 1);
  fill_data (&r->in, PIQ_DTYPE_UINT8, cb, cc, cc);
  fill_data (&r->in, PIQ_DTYPE_UINT8, sb, sc, sc);
  fill_data (&r->in, PIQ_DTYPE_UINT8, zb, zc, zc);
  if (opts & 8)
    for (gsize i = 0; i + 4 <= sc; i += 4)
      {
        float f = (float) (1 + sb[i] % 64) / 32.0f;
        memcpy (sb + i, &f, 4);
      }
  g_autoptr(GBytes) codes = g_bytes_new_take (cb, cc);
  g_autoptr(GBytes) scales = (sc || (opts & 16)) ? g_bytes_new_take (sb, sc) : (g_free (sb), NULL);
  g_autoptr(GBytes) zps = (zc || (opts & 32)) ? g_bytes_new_take (zb, zc) : (g_free (zb), NULL);
  double scale = (opts & 64) ? take_double (&r->in) : 1.0;
  gint64 zp = (opts & 128) ? take_zp (&r->in) : 0;

  t = piq_tensor_new_quantized_from_bytes (format, r->s.shape, r->s.n_dims, codes, scales, zps,
                                           scale, zp, &error);
  check_result ("tensor_new_quantized_from_bytes", t != NULL, error);
  if (t != NULL)
    CHECK ((!r->s.huge || r->s.empty) && !piq_tensor_is_writable (t));
  return t;
}

static void
run_tensors (Run *r)
{
  guint8 how = take8 (&r->in);
  OwnedTensor src = { 0 };
  g_autoptr(PiqTensor) qt = NULL;
  g_autoptr(PiqTensor) fb = NULL;

  /* a quantized tensor from input bytes: dequantize it, new and into a tensor */
  fb = run_from_bytes (r, r->format);
  if (fb != NULL)
    {
      g_autoptr(GError) error = NULL;
      PiqDtype dd = take_float_dtype (&r->in);
      g_autoptr(PiqTensor) y = piq_quantizer_dequantize_new (r->q, fb, dd, &error);
      check_result ("dequantize_new (from bytes)", y != NULL, error);
    }

  if (!r->src_sized || r->s.huge || !piq_dtype_is_float (r->src_dtype) ||
      !make_float_tensor (r, r->src_dtype, r->src, how, &src))
    return;

  /* compute_params */
  {
    g_autoptr(PiqRecipe) recipe = r->recipe ? piq_recipe_copy (r->recipe) : piq_recipe_new ();
    g_autoptr(GError) error = NULL;
    RecipeState before, after;
    recipe_state (recipe, &before);
    gboolean ok = piq_quantizer_compute_params (r->q, r->format, recipe, src.t, &error);
    check_result ("compute_params", ok, error);
    recipe_state (recipe, &after);
    if (!ok)
      CHECK (MEMCMP (&before, &after, sizeof before) == 0);
  }

  /* quantize_new */
  {
    g_autoptr(GError) error = NULL;
    qt = piq_quantizer_quantize_new (r->q, r->format, r->recipe, src.t, &error);
    check_result ("quantize_new", qt != NULL, error);
  }

  /* quantize into a destination: a reusable one, one of another shape or format, a
   * float tensor, a read-only one */
  {
    guint8 d = take8 (&r->in);
    g_autoptr(PiqTensor) dst = NULL;
    g_autoptr(PiqFormat) other = NULL;
    g_autoptr(GError) error = NULL;
    OwnedTensor fdst = { 0 };
    PiqFormat *fmt = r->format;

    if (d & 1)
      fmt = other = take_format (&r->in);
    switch ((d >> 1) & 3)
      {
      case 0: case 1:
        {
          Shape saved = r->s;
          /* one more row, when that stays small (an empty shape may be vast) */
          if ((d & 8) && r->s.n > 0)
            r->s.shape[0] = r->s.n_dims ? r->s.shape[0] + 1 : 0;
          dst = piq_tensor_new_quantized (fmt, r->s.shape, r->s.n_dims, NULL);
          r->s = saved;
        }
        break;
      case 2:
        if (make_float_tensor (r, float_dtypes[d >> 6], NULL, d >> 3, &fdst))
          dst = g_object_ref (fdst.t);
        break;
      default:
        dst = run_from_bytes (r, fmt);
      }
    if (dst != NULL)
      {
        TensorState before;
        if ((d & 0x10) && qt != NULL && piq_tensor_get_format (dst) != NULL)
          {
            /* a destination that holds a result already */
            g_autoptr(GError) e0 = NULL;
            (void) piq_quantizer_quantize (r->q, r->recipe, src.t, dst, &e0);
          }
        tensor_state (dst, &before);
        gboolean ok = piq_quantizer_quantize (r->q, r->recipe, src.t, dst, &error);
        check_result ("quantize", ok, error);
        if (!ok)
          tensor_state_check (dst, &before, "quantize");
        tensor_state_clear (&before);
      }
    owned_clear (&fdst);
  }

  /* dequantize and dequantize_new: of quantize_new's result, SET and ADD, into a
   * float tensor made in any way, maybe of another shape */
  {
    PiqTensor *qs = qt != NULL ? qt : fb;
    guint8 d = take8 (&r->in);
    PiqDtype dd = (d & 0x80) ? take_dtype (&r->in) : float_dtypes[d & 3];
    OwnedTensor out = { 0 };

    if (qs == NULL)
      qs = src.t;   /* a float source: refused */
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(PiqTensor) y = piq_quantizer_dequantize_new (r->q, qs, dd, &error);
      check_result ("dequantize_new", y != NULL, error);
    }
    if (piq_dtype_is_float (dd) && make_float_tensor (r, dd, NULL, take8 (&r->in), &out))
      {
        g_autoptr(GError) error = NULL;
        TensorState before;
        guint8 *mem_before = out.mem ? g_memdup2 (out.mem, out.mem_size + 1) : NULL;
        PiqReduceOp op = (d & 4) ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET;
        tensor_state (out.t, &before);
        gboolean ok = piq_quantizer_dequantize (r->q, qs, out.t, op, &error);
        check_result ("dequantize", ok, error);
        if (!ok)
          {
            tensor_state_check (out.t, &before, "dequantize");
            if (mem_before != NULL && MEMCMP (mem_before, out.mem, out.mem_size) != 0)
              FAIL ("dequantize failed but changed its destination's memory");
          }
        else
          check_padding (r, &out, mem_before, "dequantize");
        tensor_state_clear (&before);
        g_free (mem_before);
      }
    owned_clear (&out);
  }

  /* requantize: in place, or into another tensor */
  {
    guint8 d = take8 (&r->in);
    PiqReduceOp op = (d & 1) ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET;
    OwnedTensor out = { 0 };
    PiqTensor *dst = NULL;
    g_autoptr(GError) error = NULL;

    if (d & 2)
      dst = src.t;
    else if (make_float_tensor (r, (d & 4) ? float_dtypes[d >> 6] : r->src_dtype, NULL, d >> 3,
                                &out))
      dst = out.t;
    if (dst != NULL)
      {
        TensorState before;
        guint8 *mem_before = src.mem && dst == src.t ? g_memdup2 (src.mem, src.mem_size + 1)
                           : out.mem ? g_memdup2 (out.mem, out.mem_size + 1) : NULL;
        OwnedTensor *o = dst == src.t ? &src : &out;
        tensor_state (dst, &before);
        gboolean ok = piq_quantizer_requantize (r->q, r->format, r->recipe, src.t, dst, op, &error);
        check_result ("requantize", ok, error);
        if (!ok)
          {
            tensor_state_check (dst, &before, "requantize");
            if (mem_before != NULL && MEMCMP (mem_before, o->mem, o->mem_size) != 0)
              FAIL ("requantize failed but changed its destination's memory");
          }
        else
          check_padding (r, o, mem_before, "requantize");
        tensor_state_clear (&before);
        g_free (mem_before);
      }
    owned_clear (&out);
  }

  /* binary_dot: quantize_new's result with another binary vector */
  {
    guint8 d = take8 (&r->in);
    g_autoptr(PiqFormat) other = NULL;
    g_autoptr(PiqTensor) b = NULL;
    g_autoptr(GError) error = NULL;
    double result = -7.25;
    PiqTensor *a = qt != NULL ? qt : fb != NULL ? fb : src.t;

    if (d & 1)
      {
        other = (d & 2) ? take_format (&r->in)
                        : piq_format_new_per_block (PIQ_DTYPE_BINARY, (d >> 2) * 8,
                                                    PIQ_DTYPE_F32);
        if (d & 0x80)
          b = run_from_bytes (r, other);
        else
          b = piq_quantizer_quantize_new (r->q, other, NULL, src.t, NULL);
      }
    else
      b = g_object_ref (a);
    if (b != NULL)
      {
        gboolean ok = piq_quantizer_binary_dot (r->q, a, b, &result, &error);
        check_result ("binary_dot", ok, error);
        if (!ok)
          CHECK (result == -7.25);
      }
  }

  /* matmul: the quantized tensor as weights (any shape: packing refuses what is not
   * [out, in]) under either policy, times an input whose last extent may be wrong,
   * into an output that may be mis-shaped; a failure leaves the output unchanged,
   * and every SIMD level gives the scalar quantizer's bytes */
  {
    guint8 d = take8 (&r->in);
    PiqTensor *w = qt != NULL ? qt : fb;
    g_autoptr(GError) error = NULL;
    g_autoptr(PiqPackedWeights) pw = NULL;

    if (w != NULL)
      {
        pw = piq_packed_weights_new (w, (d & 1) ? PIQ_ACTIVATION_DYNAMIC_INT8 : PIQ_ACTIVATION_FLOAT,
                                     &error);
        check_result ("packed_weights_new", pw != NULL, error);
      }
    if (pw != NULL)
      {
        guint64 n = piq_packed_weights_get_n_out (pw), k = piq_packed_weights_get_n_in (pw);
        guint64 m = 1 + (d >> 1) % 3, xs[2] = { m, k + ((d & 0x10) ? 1 : 0) };
        guint64 ys[2] = { m, n + ((d & 0x20) ? 1 : 0) };
        g_autoptr(PiqTensor) x = NULL;
        g_autoptr(PiqTensor) y = NULL;
        g_autoptr(PiqTensor) ref = NULL;
        g_autoptr(GBytes) before = NULL;
        gboolean ok;

        if (k * m <= 4096 && n * m <= 4096)
          {
            x = piq_tensor_new_shaped (PIQ_DTYPE_F32, xs, 2, NULL);
            y = piq_tensor_new_shaped ((d & 0x40) ? PIQ_DTYPE_BF16 : PIQ_DTYPE_F32, ys, 2, NULL);
          }
        if (x != NULL && y != NULL)
          {
            float *xd = piq_tensor_get_writable_data (x, NULL);
            guint8 *yd = piq_tensor_get_writable_data (y, NULL);
            gsize yn = piq_tensor_get_n_bytes (y);
            for (guint64 i = 0; i < xs[0] * xs[1]; i++)
              {
                /* the source's f32 values (it may be misaligned), else a ramp */
                if (r->src_size >= 4 && r->src_dtype == PIQ_DTYPE_F32)
                  memcpy (&xd[i], r->src + 4 * (i % (r->src_size / 4)), 4);
                else
                  xd[i] = (float) (i % 7) - 3.0f;
              }
            for (gsize i = 0; i < yn; i++)
              yd[i] = canary_byte (i);
            before = g_bytes_new (yd, yn);
            ok = piq_quantizer_matmul (r->q, x, pw, NULL, y, (d & 0x80) ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET,
                                       &error);
            check_result ("matmul", ok, error);
            if (!ok)
              CHECK (MEMCMP (g_bytes_get_data (before, NULL), yd, yn) == 0);
            else if (r->q != quantizers[0])
              {
                /* the scalar quantizer, on the same output bytes as before */
                ref = piq_tensor_new_shaped (piq_tensor_get_dtype (y), ys, 2, NULL);
                memcpy (piq_tensor_get_writable_data (ref, NULL), g_bytes_get_data (before, NULL), yn);
                CHECK (piq_quantizer_matmul (quantizers[0], x, pw, NULL, ref,
                                             (d & 0x80) ? PIQ_REDUCE_ADD : PIQ_REDUCE_SET, NULL));
                if (MEMCMP (piq_tensor_get_data (ref, NULL), yd, yn) != 0)
                  FAIL ("matmul at SIMD level %d differs from the scalar quantizer's",
                        piq_quantizer_get_simd_level (r->q));
              }
          }
      }
  }
  owned_clear (&src);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  Run r = { .in = { data, size } };

  r.q = quantizers[take8 (&r.in) % n_quantizers];
  r.format = take_format (&r.in);
  r.recipe = take_recipe (&r.in);
  take_shape (&r.in, &r.s);
  r.src_dtype = take_float_dtype (&r.in);

  if (trace)
    {
      g_autofree char *f = piq_format_to_string (r.format);
      fprintf (stderr, "simd level %d, format %s, recipe %s, %u dims:", piq_quantizer_get_simd_level (r.q),
               f, r.recipe ? "given" : "NULL", r.s.n_dims);
      for (guint i = 0; i < r.s.n_dims; i++)
        fprintf (stderr, " %" G_GUINT64_FORMAT, r.s.shape[i]);
      fprintf (stderr, ", source %s\n", piq_dtype_get_name (r.src_dtype) ? piq_dtype_get_name (r.src_dtype) : "?");
      if (r.recipe)
        fprintf (stderr, "  recipe: rule %d include-zero %d round %d seed %" G_GUINT64_FORMAT " scale %s%g zero point %s%" G_GINT64_FORMAT "\n",
                 piq_recipe_get_scale_rule (r.recipe), piq_recipe_get_include_zero (r.recipe),
                 piq_recipe_get_round_mode (r.recipe), piq_recipe_get_seed (r.recipe),
                 piq_recipe_has_scale (r.recipe) ? "" : "(none) ", piq_recipe_get_scale (r.recipe),
                 piq_recipe_has_zero_point (r.recipe) ? "" : "(none) ", piq_recipe_get_zero_point (r.recipe));
    }
  run_get_sizes (&r);

  /* the source: packed, exactly as large as the dtype and shape need, maybe misaligned */
  if (!r.s.huge && r.s.n_dims >= 1 && r.s.n_dims <= PIQ_MAX_DIMS &&
      piq_dtype_get_size_for_n (r.src_dtype, r.s.n, &r.src_size, NULL))
    r.src_sized = TRUE;
  else
    r.src_size = 0;
  {
    guint8 off = take8 (&r.in) % 4;
    guint8 *block = g_malloc (off + r.src_size + 1);
    r.src = block + off;
    fill_data (&r.in, r.src_dtype, r.src, r.src_size, r.src_sized ? r.s.n : 0);

    run_compute_params (&r);
    run_quantize_raw (&r);
    run_dequantize_raw (&r);
    run_requantize_raw (&r);
    run_tensors (&r);
    g_free (block);
  }
  g_clear_object (&r.format);
  g_clear_object (&r.recipe);
  return 0;
}

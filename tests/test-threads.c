/* test-threads.c: the same bytes for every thread count, fork() after a
 * parallel region, and concurrent calls from several threads
 *
 * Each case computes the oracle's bytes once and compares the library's
 * output for n-threads 1, 2, 3, 4 and 0 (all cores) against them, on lengths
 * around the chunk and packing boundaries: 4095, 4096, 4097, 65537, 2^20 + 5
 * and 3·2^20 + 1.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-oracle.h"

static const guint thread_counts[] = { 1, 2, 3, 4, 0 };

static const guint64 lengths[] = {
  4095, 4096, 4097, 65537,
  (G_GUINT64_CONSTANT (1) << 20) + 5,
  (G_GUINT64_CONSTANT (3) << 20) + 1,
};

typedef enum {
  KIND_QUANTIZE,
  KIND_DEQUANTIZE,
  KIND_REQUANTIZE,
  KIND_COMPUTE,
} Kind;

typedef struct {
  Kind         kind;
  PiqDtype     fdtype;
  PiqDtype     qdtype;
  PiqRoundMode mode;
  PiqReduceOp  op;
  PiqScaleRule rule;
  guint64      n;
} Case;

static GPtrArray *all_cases;

static double
scale_for (PiqDtype q)
{
  return 0.7 * ldexp (1.0, 3 - (int) o_dtype_bits (q));
}

static gint64
zp_for (PiqDtype q)
{
  return (gint64) ((o_qmin (q) + o_qmax (q)) / 3);
}

static guint64
seed_for (const Case *c)
{
  return G_GUINT64_CONSTANT (0xF00D0000) + c->n * 3 + c->qdtype;
}

/* The old affine PiqParams = an affine per-tensor format + a recipe that
 * gives the scale and zero point. */
static PiqFormat *
case_format (const Case *c)
{
  return piq_format_new (c->qdtype);
}

static PiqRecipe *
case_recipe (const Case *c)
{
  PiqRecipe *r = piq_recipe_new_affine (scale_for (c->qdtype), zp_for (c->qdtype));
  piq_recipe_set_round_mode (r, c->mode);
  piq_recipe_set_seed (r, c->mode == PIQ_ROUND_STOCHASTIC ? seed_for (c) : 0);
  return r;
}

static PiqTensor *
quantized_copy_of (PiqFormat *format, guint64 n, const guint8 *codes, double scale, gint64 zp)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = g_bytes_new (codes, o_dtype_nbytes (piq_format_get_dtype (format), n));
  guint64 shape[1] = { n };
  PiqTensor *t = piq_tensor_new_quantized_from_bytes (format, shape, 1, bytes, NULL, NULL, scale, zp, &error);
  g_assert_no_error (error);
  return t;
}

static PiqTensor *
quantized_dst (PiqFormat *format, guint64 n)
{
  g_autoptr (GError) error = NULL;
  guint64 shape[1] = { n };
  PiqTensor *t = piq_tensor_new_quantized (format, shape, 1, &error);
  g_assert_no_error (error);
  return t;
}

static PiqTensor *
tensor_copy_of (PiqDtype dtype, guint64 n, const guint8 *data)
{
  g_autoptr (GError) error = NULL;
  PiqTensor *t = piq_tensor_new_from_data (dtype, n, data, o_dtype_nbytes (dtype, n), &error);
  g_assert_no_error (error);
  return t;
}

static const guint8 *
bytes_of (PiqTensor *t, gsize expected)
{
  gsize size = 0;
  const guint8 *d = piq_tensor_get_data (t, &size);
  g_assert_cmpuint (size, ==, expected);
  return d;
}

static gboolean
same_bytes (const char *what, guint threads, PiqDtype dtype, const guint8 *expected, const guint8 *got, guint64 n)
{
  gsize size = o_dtype_nbytes (dtype, n);

  if (memcmp (expected, got, size) == 0)
    return TRUE;
  if (o_dtype_is_float (dtype))
    {
      gint64 bad = o_compare_floats (dtype, expected, got, n);
      if (bad < 0)
        return TRUE;      /* only NaN payloads differ */
      g_test_fail_printf ("%s, n-threads %u: element %" G_GINT64_FORMAT " is 0x%" G_GINT64_MODIFIER
                          "x, expected 0x%" G_GINT64_MODIFIER "x", what, threads, bad,
                          o_read_float_bits (dtype, got, (guint64) bad), o_read_float_bits (dtype, expected, (guint64) bad));
    }
  else
    {
      for (guint64 i = 0; i < n; i++)
        if (o_unpack (dtype, expected, i) != o_unpack (dtype, got, i))
          {
            char es[48], gs[48];
            g_test_fail_printf ("%s, n-threads %u: element %" G_GUINT64_FORMAT " is %s, expected %s", what,
                                threads, i, o_int_str (o_unpack (dtype, got, i), gs),
                                o_int_str (o_unpack (dtype, expected, i), es));
            return FALSE;
          }
      g_test_fail_printf ("%s, n-threads %u: the unused bits of the last byte differ", what, threads);
    }
  return FALSE;
}

static void
test_quantize (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) format = case_format (c);
  g_autoptr (PiqRecipe) recipe = case_recipe (c);
  gsize fsize = o_dtype_nbytes (c->fdtype, c->n), qsize = o_dtype_nbytes (c->qdtype, c->n);
  g_autofree guint8 *src = g_malloc (fsize);
  g_autofree guint8 *expected = g_malloc0 (qsize);
  g_autoptr (PiqTensor) st = NULL;
  guint64 shape[1] = { c->n };
  OQuant o;

  o_quant_init (&o, c->qdtype, scale_for (c->qdtype), zp_for (c->qdtype), c->mode,
                piq_recipe_get_seed (recipe));
  o_gen_source (c->fdtype, src, c->n, c->n ^ 0xABC, &o);
  for (guint64 i = 0; i < c->n; i++)
    o_pack (c->qdtype, expected, i, o_quantize_elem (&o, c->fdtype, src, i));
  st = tensor_copy_of (c->fdtype, c->n, src);

  for (gsize t = 0; t < G_N_ELEMENTS (thread_counts); t++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqTensor) dt = quantized_dst (format, c->n);
      g_autofree guint8 *raw = g_malloc (qsize);

      piq_quantizer_set_n_threads (q, thread_counts[t]);
      g_assert_cmpuint (piq_quantizer_get_n_threads (q), ==, thread_counts[t]);
      g_assert_true (piq_quantizer_quantize (q, recipe, st, dt, &error));
      g_assert_no_error (error);
      if (!same_bytes ("quantize", thread_counts[t], c->qdtype, expected, bytes_of (dt, qsize), c->n))
        return;
      g_assert_true (piq_quantizer_quantize_raw (q, format, recipe, c->fdtype, src, shape, 1, raw, qsize,
                                                 NULL, 0, NULL, 0, NULL, NULL, &error));
      g_assert_no_error (error);
      if (!same_bytes ("quantize_raw", thread_counts[t], c->qdtype, expected, raw, c->n))
        return;
    }
}

static void
test_dequantize (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) format = case_format (c);
  gsize fsize = o_dtype_nbytes (c->fdtype, c->n), qsize = o_dtype_nbytes (c->qdtype, c->n);
  g_autofree guint8 *qbytes = g_malloc0 (qsize);
  g_autofree guint8 *prior = g_malloc (fsize);
  g_autofree guint8 *expected = g_malloc (fsize);
  g_autoptr (PiqTensor) qt = NULL;
  ORng rng;

  o_rng_init (&rng, c->n);
  for (guint64 i = 0; i < c->n; i++)
    o_pack (c->qdtype, qbytes, i, (OInt) o_rng_next (&rng));
  o_gen_prefill (c->fdtype, prior, c->n, c->n + 1, 3.0);
  memcpy (expected, prior, fsize);
  for (guint64 i = 0; i < c->n; i++)
    o_dequantize_elem (c->fdtype, expected, i, o_unpack (c->qdtype, qbytes, i), zp_for (c->qdtype),
                       scale_for (c->qdtype), c->op);
  qt = quantized_copy_of (format, c->n, qbytes, scale_for (c->qdtype), zp_for (c->qdtype));

  for (gsize t = 0; t < G_N_ELEMENTS (thread_counts); t++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqTensor) dt = tensor_copy_of (c->fdtype, c->n, prior);

      piq_quantizer_set_n_threads (q, thread_counts[t]);
      g_assert_true (piq_quantizer_dequantize (q, qt, dt, c->op, &error));
      g_assert_no_error (error);
      if (!same_bytes ("dequantize", thread_counts[t], c->fdtype, expected, bytes_of (dt, fsize), c->n))
        return;
    }
}

static void
test_requantize (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) format = case_format (c);
  g_autoptr (PiqRecipe) recipe = case_recipe (c);
  gsize fsize = o_dtype_nbytes (c->fdtype, c->n);
  g_autofree guint8 *src = g_malloc (fsize);
  g_autofree guint8 *prior = g_malloc (fsize);
  g_autofree guint8 *expected = g_malloc (fsize);
  g_autoptr (PiqTensor) st = NULL;
  OQuant o;

  o_quant_init (&o, c->qdtype, scale_for (c->qdtype), zp_for (c->qdtype), c->mode,
                piq_recipe_get_seed (recipe));
  o_gen_source (c->fdtype, src, c->n, c->n ^ 0xDEF, &o);
  o_gen_prefill (c->fdtype, prior, c->n, c->n + 2, 3.0);
  memcpy (expected, prior, fsize);
  for (guint64 i = 0; i < c->n; i++)
    o_dequantize_elem (c->fdtype, expected, i, o_quantize_elem (&o, c->fdtype, src, i), zp_for (c->qdtype),
                       scale_for (c->qdtype), c->op);
  st = tensor_copy_of (c->fdtype, c->n, src);

  for (gsize t = 0; t < G_N_ELEMENTS (thread_counts); t++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PiqTensor) dt = tensor_copy_of (c->fdtype, c->n, prior);
      g_autoptr (PiqTensor) in_place = tensor_copy_of (c->fdtype, c->n, src);

      piq_quantizer_set_n_threads (q, thread_counts[t]);
      g_assert_true (piq_quantizer_requantize (q, format, recipe, st, dt, c->op, &error));
      g_assert_no_error (error);
      if (!same_bytes ("requantize", thread_counts[t], c->fdtype, expected, bytes_of (dt, fsize), c->n))
        return;
      /* documented: dst may be src (element-wise in place); for SET that is
       * the same as writing elsewhere */
      if (c->op == PIQ_REDUCE_SET)
        {
          g_assert_true (piq_quantizer_requantize (q, format, recipe, in_place, in_place, c->op, &error));
          g_assert_no_error (error);
          if (!same_bytes ("requantize in place", thread_counts[t], c->fdtype, expected,
                           bytes_of (in_place, fsize), c->n))
            return;
        }
    }
}

/* min/max and abs-max do not depend on the order of the reduction: checked
 * against the binary32 formulas; mean/σ against the first thread count.
 * min/max and mean/σ run on an affine int8 format, abs-max on a symmetric
 * one (the old ABS_MAX rule on integers), each rule named in the recipe.
 * compute_params stores the scale (and, affine, the zero point) into the
 * recipe. */
static void
test_compute (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  gsize fsize = o_dtype_nbytes (c->fdtype, c->n);
  g_autofree guint8 *src = g_malloc (fsize);
  g_autoptr (PiqTensor) st = NULL;
  double exp_scale = 0;
  gint64 exp_zp = 0;
  ORng rng;

  o_rng_init (&rng, c->n * 7);
  for (guint64 i = 0; i < c->n; i++)
    o_write_float (c->fdtype, src, i, o_rng_normal (&rng) * 2.0 + 0.3);
  /* extremes in the last element and right after a block boundary */
  o_write_float (c->fdtype, src, c->n - 1, 40.0);
  o_write_float (c->fdtype, src, MIN (c->n - 2, 16384), -50.0);
  st = tensor_copy_of (c->fdtype, c->n, src);

  if (c->rule != PIQ_SCALE_RULE_MEAN_STD)
    {
      float lo = INFINITY, hi = -INFINITY, a = 0, s;
      OInt zp;
      for (guint64 i = 0; i < c->n; i++)
        {
          float x = (float) o_read_float (c->fdtype, src, i);
          lo = MIN (lo, x);
          hi = MAX (hi, x);
          a = MAX (a, fabsf (x));
        }
      if (c->rule == PIQ_SCALE_RULE_MIN_MAX)
        o_params_min_max (c->qdtype, lo, hi, TRUE, &s, &zp);
      else
        o_params_abs_max (c->qdtype, a, &s, &zp);
      exp_scale = s;
      exp_zp = (gint64) zp;
    }

  for (gsize t = 0; t < G_N_ELEMENTS (thread_counts); t++)
    {
      g_autoptr (GError) error = NULL;
      gboolean symmetric = c->rule == PIQ_SCALE_RULE_ABS_MAX;
      g_autoptr (PiqFormat) format = symmetric ? piq_format_new_symmetric (c->qdtype) : piq_format_new (c->qdtype);
      g_autoptr (PiqRecipe) recipe = piq_recipe_new ();

      piq_recipe_set_scale_rule (recipe, c->rule);
      piq_quantizer_set_n_threads (q, thread_counts[t]);
      g_assert_true (piq_quantizer_compute_params (q, format, recipe, st, &error));
      g_assert_no_error (error);
      g_assert_true (piq_recipe_has_scale (recipe));
      /* a symmetric format has no zero point: none is stored (it would make
       * the next call fail with PIQ_ERROR_INVALID_ZERO_POINT), and the
       * recipe's zero point reads as the symmetric int8 one, 0 */
      g_assert_cmpint (piq_recipe_has_zero_point (recipe), ==, !symmetric);
      if (c->rule == PIQ_SCALE_RULE_MEAN_STD && t == 0)
        {
          exp_scale = piq_recipe_get_scale (recipe);
          exp_zp = piq_recipe_get_zero_point (recipe);
          continue;
        }
      if (piq_recipe_get_scale (recipe) != exp_scale || piq_recipe_get_zero_point (recipe) != exp_zp)
        {
          g_test_fail_printf ("n-threads %u: scale %.17g zp %" G_GINT64_FORMAT ", expected %.17g %" G_GINT64_FORMAT,
                              thread_counts[t], piq_recipe_get_scale (recipe), piq_recipe_get_zero_point (recipe),
                              exp_scale, exp_zp);
          return;
        }
    }
}

/* ---- fork() after a parallel region ---- */

#define FORK_N (G_GUINT64_CONSTANT (4) << 20)

/* libgomp's thread pool does not survive fork(): without the library's
 * atfork handling the child's first parallel call deadlocks. The parent
 * waits up to 30 s and kills a hung child. */
static void
test_fork (void)
{
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  g_autoptr (PiqFormat) format = piq_format_new (PIQ_DTYPE_UINT4);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (0.25, 8);
  g_autofree float *x = g_new (float, FORK_N);
  g_autoptr (GError) error = NULL;
  g_autoptr (PiqTensor) src = NULL;
  g_autoptr (PiqTensor) first = NULL;
  g_autoptr (PiqTensor) serial = NULL;
  const guint8 *expected;
  gsize qsize = o_dtype_nbytes (PIQ_DTYPE_UINT4, FORK_N);
  gint64 deadline;
  int status = 0;
  pid_t pid, done = 0;

  for (guint64 i = 0; i < FORK_N; i++)
    x[i] = (float) ((double) (i % 4099) / 1000.0 - 2.0);
  src = piq_tensor_new_from_data (PIQ_DTYPE_F32, FORK_N, (const guint8 *) x, FORK_N * sizeof (float), &error);
  g_assert_no_error (error);

  piq_quantizer_set_n_threads (q, 1);
  serial = piq_quantizer_quantize_new (q, format, recipe, src, &error);
  g_assert_no_error (error);
  piq_quantizer_set_n_threads (q, 4);
  first = piq_quantizer_quantize_new (q, format, recipe, src, &error);   /* a parallel region ran */
  g_assert_no_error (error);
  expected = bytes_of (serial, qsize);
  g_assert_cmpmem (bytes_of (first, qsize), qsize, expected, qsize);

  pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      /* child: another parallel call, then report through the exit status */
      GError *child_error = NULL;
      PiqTensor *again = piq_quantizer_quantize_new (q, format, recipe, src, &child_error);
      gsize size = 0;
      const guint8 *got;

      if (again == NULL)
        _exit (2);
      got = piq_tensor_get_data (again, &size);
      _exit (size == qsize && memcmp (got, expected, qsize) == 0 ? 0 : 3);
    }

  deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < deadline)
    {
      done = waitpid (pid, &status, WNOHANG);
      if (done != 0)
        break;
      g_usleep (10000);
    }
  if (done == 0)
    {
      kill (pid, SIGKILL);
      waitpid (pid, &status, 0);
      g_test_fail_printf ("the child of fork() did not finish a parallel quantize within 30 s (deadlock)");
      return;
    }
  g_assert_cmpint (done, ==, pid);
  g_assert_true (WIFEXITED (status));
  g_test_message ("child exit status %d", WEXITSTATUS (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);

  /* and the parent still works in parallel */
  {
    g_autoptr (PiqTensor) after = piq_quantizer_quantize_new (q, format, recipe, src, &error);
    g_assert_no_error (error);
    g_assert_cmpmem (bytes_of (after, qsize), qsize, expected, qsize);
  }
}

/* ---- several threads at once ---- */

#define CONC_N 200003
#define CONC_THREADS 4
#define CONC_ROUNDS 8

typedef struct {
  PiqQuantizer *q;          /* shared, or NULL: the thread makes its own */
  PiqDtype      fdtype;
  PiqDtype      qdtype;
  PiqTensor    *src;
  guint8       *expected;   /* quantized */
  guint8       *expected_dq;/* requantized (SET) */
  gboolean      ok;
  char         *failure;
} Worker;

static gpointer
worker_run (gpointer data)
{
  Worker *w = data;
  g_autoptr (PiqQuantizer) own = w->q == NULL ? piq_quantizer_new () : NULL;
  PiqQuantizer *q = w->q != NULL ? w->q : own;
  g_autoptr (PiqFormat) format = piq_format_new (w->qdtype);
  g_autoptr (PiqRecipe) recipe = piq_recipe_new_affine (scale_for (w->qdtype), zp_for (w->qdtype));
  gsize qsize = o_dtype_nbytes (w->qdtype, CONC_N), fsize = o_dtype_nbytes (w->fdtype, CONC_N);
  guint64 shape[1] = { CONC_N };

  if (own != NULL)
    piq_quantizer_set_n_threads (own, 2);
  piq_recipe_set_round_mode (recipe, PIQ_ROUND_STOCHASTIC);
  piq_recipe_set_seed (recipe, 1000 + w->qdtype);
  w->ok = TRUE;
  for (guint r = 0; r < CONC_ROUNDS && w->ok; r++)
    {
      GError *error = NULL;
      PiqTensor *dt = piq_tensor_new_quantized (format, shape, 1, &error);
      PiqTensor *rt = piq_tensor_new (w->fdtype, CONC_N, &error);
      gsize size = 0;

      if (!piq_quantizer_quantize (q, recipe, w->src, dt, &error) ||
          !piq_quantizer_requantize (q, format, recipe, w->src, rt, PIQ_REDUCE_SET, &error))
        {
          w->failure = g_strdup_printf ("round %u: %s", r, error != NULL ? error->message : "failed");
          w->ok = FALSE;
        }
      else if (memcmp (piq_tensor_get_data (dt, &size), w->expected, qsize) != 0 || size != qsize)
        {
          w->failure = g_strdup_printf ("round %u: quantized bytes differ", r);
          w->ok = FALSE;
        }
      else if (o_compare_floats (w->fdtype, w->expected_dq, piq_tensor_get_data (rt, NULL), CONC_N) >= 0 ||
               piq_tensor_get_n_bytes (rt) != fsize)
        {
          w->failure = g_strdup_printf ("round %u: requantized bytes differ", r);
          w->ok = FALSE;
        }
      g_clear_error (&error);
      g_object_unref (dt);
      g_object_unref (rt);
    }
  return NULL;
}

static void
test_concurrent (gconstpointer data)
{
  gboolean shared = GPOINTER_TO_INT (data);
  static const PiqDtype fd[CONC_THREADS] = { PIQ_DTYPE_F32, PIQ_DTYPE_BF16, PIQ_DTYPE_F16, PIQ_DTYPE_F64 };
  static const PiqDtype qd[CONC_THREADS] = { PIQ_DTYPE_UINT4, PIQ_DTYPE_INT2, PIQ_DTYPE_INT8, PIQ_DTYPE_UINT16 };
  Worker workers[CONC_THREADS];
  GThread *threads[CONC_THREADS];
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();

  piq_quantizer_set_n_threads (q, 2);
  for (guint k = 0; k < CONC_THREADS; k++)
    {
      Worker *w = &workers[k];
      gsize fsize = o_dtype_nbytes (fd[k], CONC_N);
      g_autofree guint8 *src = g_malloc (fsize);
      OQuant o;

      memset (w, 0, sizeof *w);
      w->q = shared ? q : NULL;
      w->fdtype = fd[k];
      w->qdtype = qd[k];
      o_quant_init (&o, qd[k], scale_for (qd[k]), zp_for (qd[k]), PIQ_ROUND_STOCHASTIC, 1000 + qd[k]);
      o_gen_source (fd[k], src, CONC_N, k, &o);
      w->expected = g_malloc0 (o_dtype_nbytes (qd[k], CONC_N));
      w->expected_dq = g_malloc (fsize);
      for (guint64 i = 0; i < CONC_N; i++)
        {
          OInt v = o_quantize_elem (&o, fd[k], src, i);
          o_pack (qd[k], w->expected, i, v);
          o_dequantize_elem (fd[k], w->expected_dq, i, v, zp_for (qd[k]), scale_for (qd[k]), PIQ_REDUCE_SET);
        }
      w->src = tensor_copy_of (fd[k], CONC_N, src);
    }
  for (guint k = 0; k < CONC_THREADS; k++)
    threads[k] = g_thread_new ("worker", worker_run, &workers[k]);
  for (guint k = 0; k < CONC_THREADS; k++)
    g_thread_join (threads[k]);
  for (guint k = 0; k < CONC_THREADS; k++)
    {
      if (!workers[k].ok)
        g_test_fail_printf ("thread %u (%s -> %s): %s", k, o_dtype_name (fd[k]), o_dtype_name (qd[k]),
                            workers[k].failure);
      g_free (workers[k].failure);
      g_free (workers[k].expected);
      g_free (workers[k].expected_dq);
      g_object_unref (workers[k].src);
    }
}

static void
test_n_threads_property (void)
{
  g_autoptr (PiqQuantizer) q = piq_quantizer_new ();
  guint n = 99;

  g_assert_cmpuint (piq_quantizer_get_n_threads (q), ==, 0);
  g_object_set (q, "n-threads", 3, NULL);
  g_object_get (q, "n-threads", &n, NULL);
  g_assert_cmpuint (n, ==, 3);
  g_assert_cmpuint (piq_quantizer_get_n_threads (q), ==, 3);
  /* an independent instance and the default are unaffected */
  {
    g_autoptr (PiqQuantizer) other = piq_quantizer_new ();
    g_assert_cmpuint (piq_quantizer_get_n_threads (other), ==, 0);
  }
  g_assert_true (piq_quantizer_get_default () == piq_quantizer_get_default ());
  g_assert_true (piq_quantizer_get_default () != q);
}

/* ---- registration ---- */

static Case *
case_new (Kind kind, PiqDtype f, PiqDtype q, PiqRoundMode mode, PiqReduceOp op, PiqScaleRule rule, guint64 n)
{
  Case *c = g_new0 (Case, 1);
  c->kind = kind;
  c->fdtype = f;
  c->qdtype = q;
  c->mode = mode;
  c->op = op;
  c->rule = rule;
  c->n = n;
  g_ptr_array_add (all_cases, c);
  return c;
}

int
main (int argc, char **argv)
{
  static const struct { PiqDtype f, q; } qpairs[] = {
    { PIQ_DTYPE_F32, PIQ_DTYPE_UINT4 }, { PIQ_DTYPE_BF16, PIQ_DTYPE_INT2 },
    { PIQ_DTYPE_F16, PIQ_DTYPE_INT8 }, { PIQ_DTYPE_F64, PIQ_DTYPE_INT64 },
  };
  static const struct { PiqDtype q, f; } dpairs[] = {
    { PIQ_DTYPE_UINT2, PIQ_DTYPE_F32 }, { PIQ_DTYPE_INT4, PIQ_DTYPE_BF16 },
    { PIQ_DTYPE_UINT8, PIQ_DTYPE_F16 }, { PIQ_DTYPE_INT32, PIQ_DTYPE_F64 },
  };
  static const struct { PiqDtype f, q; } rpairs[] = {
    { PIQ_DTYPE_F32, PIQ_DTYPE_INT4 }, { PIQ_DTYPE_BF16, PIQ_DTYPE_UINT8 },
  };
  static const PiqScaleRule rules[] = { PIQ_SCALE_RULE_MIN_MAX, PIQ_SCALE_RULE_ABS_MAX, PIQ_SCALE_RULE_MEAN_STD };
  static const char *rule_names[] = { "min-max", "abs-max", "mean-std" };
  int ret;

  g_test_init (&argc, &argv, NULL);
  all_cases = g_ptr_array_new_with_free_func (g_free);

  for (gsize l = 0; l < G_N_ELEMENTS (lengths); l++)
    {
      guint64 n = lengths[l];
      gboolean longest = l == G_N_ELEMENTS (lengths) - 1;

      for (gsize p = 0; p < G_N_ELEMENTS (qpairs); p++)
        for (PiqRoundMode m = PIQ_ROUND_NEAREST; m <= PIQ_ROUND_STOCHASTIC; m++)
          {
            g_autofree char *path = NULL;
            /* 3M elements: the sub-byte pairs only (their chunks must end on whole bytes) */
            if (longest && o_dtype_bits (qpairs[p].q) >= 8)
              continue;
            path = g_strdup_printf ("/threads/quantize/%s/%s/%s/len-%" G_GUINT64_FORMAT,
                                    o_dtype_name (qpairs[p].f), o_dtype_name (qpairs[p].q),
                                    m == PIQ_ROUND_NEAREST ? "nearest" : "stochastic", n);
            g_test_add_data_func (path, case_new (KIND_QUANTIZE, qpairs[p].f, qpairs[p].q, m, 0, 0, n), test_quantize);
          }
      for (gsize p = 0; p < G_N_ELEMENTS (dpairs); p++)
        for (PiqReduceOp op = PIQ_REDUCE_SET; op <= PIQ_REDUCE_ADD; op++)
          {
            g_autofree char *path = NULL;
            if (longest && o_dtype_bits (dpairs[p].q) >= 8)
              continue;
            path = g_strdup_printf ("/threads/dequantize/%s/%s/%s/len-%" G_GUINT64_FORMAT,
                                    o_dtype_name (dpairs[p].q), o_dtype_name (dpairs[p].f),
                                    op == PIQ_REDUCE_SET ? "set" : "add", n);
            g_test_add_data_func (path, case_new (KIND_DEQUANTIZE, dpairs[p].f, dpairs[p].q, 0, op, 0, n), test_dequantize);
          }
      for (gsize p = 0; p < G_N_ELEMENTS (rpairs); p++)
        for (PiqRoundMode m = PIQ_ROUND_NEAREST; m <= PIQ_ROUND_STOCHASTIC; m++)
          for (PiqReduceOp op = PIQ_REDUCE_SET; op <= PIQ_REDUCE_ADD; op++)
            {
              g_autofree char *path = NULL;
              if (longest && (p != 0 || op != PIQ_REDUCE_SET))
                continue;
              path = g_strdup_printf ("/threads/requantize/%s/%s/%s/%s/len-%" G_GUINT64_FORMAT,
                                      o_dtype_name (rpairs[p].f), o_dtype_name (rpairs[p].q),
                                      m == PIQ_ROUND_NEAREST ? "nearest" : "stochastic",
                                      op == PIQ_REDUCE_SET ? "set" : "add", n);
              g_test_add_data_func (path, case_new (KIND_REQUANTIZE, rpairs[p].f, rpairs[p].q, m, op, 0, n),
                                    test_requantize);
            }
      for (gsize r = 0; r < G_N_ELEMENTS (rules); r++)
        {
          g_autofree char *path = g_strdup_printf ("/threads/compute-params/%s/f32/int8/len-%" G_GUINT64_FORMAT,
                                                   rule_names[r], n);
          g_test_add_data_func (path, case_new (KIND_COMPUTE, PIQ_DTYPE_F32, PIQ_DTYPE_INT8, 0, 0, rules[r], n),
                                test_compute);
        }
    }

  g_test_add_func ("/threads/n-threads-property", test_n_threads_property);
  g_test_add_func ("/threads/fork/after-parallel-region/len-4194304", test_fork);
  g_test_add_data_func ("/threads/concurrent/shared-quantizer", GINT_TO_POINTER (TRUE), test_concurrent);
  g_test_add_data_func ("/threads/concurrent/own-quantizers", GINT_TO_POINTER (FALSE), test_concurrent);

  ret = g_test_run ();
  g_ptr_array_unref (all_cases);
  return ret;
}

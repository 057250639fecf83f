/* compare-libs.c: oneDNN's reorder and XNNPACK's convert on piquant-bench's data
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built and run by tools/compare-libs.sh, never by `make` or CI. Each library is
 * compiled in where its header was found (-DHAVE_DNNL, -DHAVE_XNNPACK).
 *
 * The data is piquant-bench's: N(0, 1) by Box-Muller from SplitMix64 with seed 42, so
 * the min/max parameters are the same too. Each library quantizes f32 -> uint8 with
 * that scale and zero point, q = clamp(nearbyint(x / scale) + zp, 0, 255); every
 * result is compared with a scalar reference computed as piquant defines it
 * (docs/numerics.md: x · (1 / (float) scale), ties to even, then + zp).
 *
 * Output: "# scale …" and "# zero_point …", then one line per (library, threads):
 *   lib <name> threads <t> ms_median <ms> ms_min <ms> agree <fraction>
 * With --data/--ref it also writes the data and the reference codes (raw f32, raw
 * uint8) for compare-torch.py.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
# include <omp.h>
#endif
#ifdef HAVE_DNNL
# include <oneapi/dnnl/dnnl.h>
#endif
#ifdef HAVE_XNNPACK
# include <xnnpack.h>
# include <pthreadpool.h>
#endif

#define MAX_THREADS_LIST 32

static double
now_s (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* ---- the data and parameters of piq-bench.c ---- */

static uint64_t
splitmix64_next (uint64_t *state)
{
  uint64_t z = (*state += UINT64_C (0x9E3779B97F4A7C15));

  z = (z ^ (z >> 30)) * UINT64_C (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static double
uniform_open_closed (uint64_t *state)
{
  return (double) ((splitmix64_next (state) >> 11) + 1) * 0x1.0p-53;
}

static void
fill_normal (float *x, size_t n, uint64_t seed)
{
  uint64_t state = seed;

  for (size_t i = 0; i < n; i += 2)
    {
      double radius = sqrt (-2.0 * log (uniform_open_closed (&state)));
      double angle = 2.0 * M_PI * uniform_open_closed (&state);

      x[i] = (float) (radius * cos (angle));
      if (i + 1 < n)
        x[i + 1] = (float) (radius * sin (angle));
    }
}

/* The min/max rule with include-zero for uint8, in binary32 (piq-bench.c). */
static void
minmax_params (const float *x, size_t n, double *scale, int32_t *zero_point)
{
  double lo = 0.0, hi = 0.0, s;
  int64_t zp;

  for (size_t i = 0; i < n; i++)
    {
      lo = x[i] < lo ? x[i] : lo;
      hi = x[i] > hi ? x[i] : hi;
    }
  s = (float) ((float) (hi - lo) / (float) 255);
  if (s < 0x1p-23)
    s = 0x1p-23;
  zp = -(int64_t) nearbyint ((float) (lo / s));
  *scale = s;
  *zero_point = (int32_t) (zp < 0 ? 0 : zp > 255 ? 255 : zp);
}

static void
reference (const float *x, size_t n, double scale, int32_t zp, uint8_t *q)
{
  float inv = 1.0f / (float) scale;

  for (size_t i = 0; i < n; i++)
    {
      float v = x[i] * inv;
      float r = v != v ? 0.0f : nearbyintf (v);
      double t = (double) r + zp;

      q[i] = (uint8_t) (t < 0 ? 0 : t > 255 ? 255 : t);
    }
}

static double
agreement (const uint8_t *a, const uint8_t *b, size_t n)
{
  size_t same = 0;

  for (size_t i = 0; i < n; i++)
    same += a[i] == b[i];
  return (double) same / (double) n;
}

/* ---- one timed library ---- */

typedef struct {
  const float *x;
  uint8_t     *q;
  size_t       n;
  double       scale;
  int32_t      zp;
} Problem;

typedef int (*RunFn) (void *state);

static void
report (const char *lib, unsigned threads, double *times, unsigned repeat, const Problem *p,
        const uint8_t *ref)
{
  double min = times[0];

  for (unsigned i = 1; i < repeat; i++)
    min = times[i] < min ? times[i] : min;
  qsort (times, repeat, sizeof *times, cmp_double);
  printf ("lib %s threads %u ms_median %.4f ms_min %.4f agree %.9f\n", lib, threads,
          (repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2])) * 1e3,
          min * 1e3, agreement (p->q, ref, p->n));
  fflush (stdout);
}

static int
time_runs (RunFn run, void *state, unsigned repeat, double *times)
{
  if (run (state) != 0 || run (state) != 0)   /* warm: pages, caches, threads */
    return -1;
  for (unsigned i = 0; i < repeat; i++)
    {
      double t0 = now_s ();

      if (run (state) != 0)
        return -1;
      times[i] = now_s () - t0;
    }
  return 0;
}

#ifdef HAVE_DNNL
typedef struct {
  dnnl_primitive_t prim;
  dnnl_stream_t    stream;
  dnnl_memory_t    src, dst;
} Dnnl;

static int
dnnl_run (void *state)
{
  Dnnl *d = state;
  dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, d->src }, { DNNL_ARG_TO, d->dst } };

  if (dnnl_primitive_execute (d->prim, d->stream, 2, args) != dnnl_success)
    return -1;
  return dnnl_stream_wait (d->stream) == dnnl_success ? 0 : -1;
}

/* A reorder f32 -> u8 of a 1-D tensor with an output scale (a multiplier: 1 / scale)
 * and a destination zero point: dst = saturate (nearbyint (x · (1 / scale) + zp)).
 * oneDNN fixes a primitive's thread count when it creates it (and keys its primitive
 * cache by it), so each thread count gets its own primitive. */
static int
dnnl_make (const Problem *p, dnnl_engine_t engine, Dnnl *d, int verbose)
{
  dnnl_primitive_attr_t attr;
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t src_md, dst_md;
  dnnl_dims_t dims = { (dnnl_dim_t) p->n };
  float out_scale = 1.0f / (float) p->scale;
  int32_t zp = p->zp;
  int ok;

  ok = dnnl_memory_desc_init_by_tag (&src_md, 1, dims, dnnl_f32, dnnl_a) == dnnl_success &&
       dnnl_memory_desc_init_by_tag (&dst_md, 1, dims, dnnl_u8, dnnl_a) == dnnl_success &&
       dnnl_primitive_attr_create (&attr) == dnnl_success;
  if (!ok)
    return -1;
  ok = dnnl_primitive_attr_set_output_scales (attr, 1, 0, &out_scale) == dnnl_success &&
       dnnl_primitive_attr_set_zero_points (attr, DNNL_ARG_DST, 1, 0, &zp) == dnnl_success &&
       dnnl_reorder_primitive_desc_create (&pd, &src_md, engine, &dst_md, engine, attr) == dnnl_success;
  dnnl_primitive_attr_destroy (attr);
  if (!ok)
    return -1;
  if (verbose)
    {
      const char *impl = NULL;

      dnnl_primitive_desc_query (pd, dnnl_query_impl_info_str, 0, &impl);
      printf ("# oneDNN %d.%d, CPU runtime OpenMP, reorder implementation: %s\n",
              dnnl_version ()->major, dnnl_version ()->minor, impl != NULL ? impl : "?");
    }
  ok = dnnl_primitive_create (&d->prim, pd) == dnnl_success &&
       dnnl_memory_create (&d->src, &src_md, engine, (void *) p->x) == dnnl_success &&
       dnnl_memory_create (&d->dst, &dst_md, engine, p->q) == dnnl_success;
  dnnl_primitive_desc_destroy (pd);
  return ok ? 0 : -1;
}

static void
bench_dnnl (const Problem *p, const unsigned *threads, size_t n_threads, unsigned repeat,
            double *times, const uint8_t *ref)
{
  dnnl_engine_t engine;
  Dnnl d;

  if (dnnl_engine_create (&engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create (&d.stream, engine, dnnl_stream_default_flags) != dnnl_success)
    {
      printf ("# oneDNN: no CPU engine\n");
      return;
    }
  for (size_t t = 0; t < n_threads; t++)
    {
#ifdef _OPENMP
      omp_set_num_threads ((int) threads[t]);
#endif
      if (dnnl_make (p, engine, &d, t == 0) != 0)
        {
          printf ("# oneDNN: cannot create the f32 -> u8 reorder with a scale and a zero point\n");
          break;
        }
      memset (p->q, 0, p->n);
      if (time_runs (dnnl_run, &d, repeat, times) != 0)
        printf ("# oneDNN: the reorder failed\n");
      else
        report ("oneDNN reorder", threads[t], times, repeat, p, ref);
      dnnl_primitive_destroy (d.prim);
      dnnl_memory_destroy (d.src);
      dnnl_memory_destroy (d.dst);
    }
  dnnl_stream_destroy (d.stream);
  dnnl_engine_destroy (engine);
}
#endif

#ifdef HAVE_XNNPACK
typedef struct {
  xnn_operator_t op;
  pthreadpool_t  pool;
} Xnn;

static int
xnn_run (void *state)
{
  Xnn *x = state;

  return xnn_run_operator (x->op, x->pool) == xnn_status_success ? 0 : -1;
}

/* One channel per element row (channels = strides = 1, batch = n): XNNPACK treats a
 * contiguous batch as one flat range and splits it over its pthreadpool. */
static void
bench_xnnpack (const Problem *p, const unsigned *threads, size_t n_threads, unsigned repeat,
               double *times, const uint8_t *ref)
{
  Xnn x;

  if (xnn_initialize (NULL) != xnn_status_success ||
      xnn_create_convert_nc_f32_qu8 (1, 1, 1, (float) p->scale, (uint8_t) p->zp, 0, 255, 0, &x.op)
      != xnn_status_success)
    {
      printf ("# XNNPACK: cannot create the f32 -> qu8 convert\n");
      return;
    }
  for (size_t t = 0; t < n_threads; t++)
    {
      x.pool = threads[t] > 1 ? pthreadpool_create (threads[t]) : NULL;
      memset (p->q, 0, p->n);
      if (xnn_setup_convert_nc_f32_qu8 (x.op, p->n, p->x, p->q, x.pool) != xnn_status_success ||
          time_runs (xnn_run, &x, repeat, times) != 0)
        {
          printf ("# XNNPACK: the convert failed\n");
          if (x.pool != NULL)
            pthreadpool_destroy (x.pool);
          break;
        }
      report ("XNNPACK convert", threads[t], times, repeat, p, ref);
      if (x.pool != NULL)
        pthreadpool_destroy (x.pool);
    }
  xnn_delete_operator (x.op);
}
#endif

static int
write_file (const char *path, const void *data, size_t bytes)
{
  FILE *f = fopen (path, "wb");
  int ok = f != NULL && fwrite (data, 1, bytes, f) == bytes;

  if (f != NULL)
    ok = fclose (f) == 0 && ok;
  return ok ? 0 : -1;
}

int
main (int argc, char **argv)
{
  size_t n = 27264000;
  unsigned repeat = 25, threads[MAX_THREADS_LIST];
  size_t n_threads = 0;
  const char *data_path = NULL, *ref_path = NULL;
  Problem p;
  uint8_t *ref;
  double *times;

  for (int i = 1; i + 1 < argc; i += 2)
    {
      if (strcmp (argv[i], "--elements") == 0)
        n = strtoull (argv[i + 1], NULL, 10);
      else if (strcmp (argv[i], "--repeat") == 0)
        repeat = (unsigned) strtoul (argv[i + 1], NULL, 10);
      else if (strcmp (argv[i], "--data") == 0)
        data_path = argv[i + 1];
      else if (strcmp (argv[i], "--ref") == 0)
        ref_path = argv[i + 1];
      else if (strcmp (argv[i], "--threads") == 0)
        {
          char *list = strdup (argv[i + 1]);

          for (char *tok = strtok (list, ","); tok != NULL && n_threads < MAX_THREADS_LIST;
               tok = strtok (NULL, ","))
            if (strtoul (tok, NULL, 10) > 0)
              threads[n_threads++] = (unsigned) strtoul (tok, NULL, 10);
          free (list);
        }
      else
        {
          fprintf (stderr, "compare-libs: unknown option %s\n", argv[i]);
          return 2;
        }
    }
  if (n == 0 || repeat == 0)
    return 2;
  if (n_threads == 0)
    threads[n_threads++] = 1;

  p.n = n;
  p.x = aligned_alloc (64, (n * 4 + 63) / 64 * 64);
  p.q = aligned_alloc (64, (n + 63) / 64 * 64);
  ref = malloc (n);
  times = calloc (repeat, sizeof *times);
  if (p.x == NULL || p.q == NULL || ref == NULL || times == NULL)
    return 1;
  fill_normal ((float *) p.x, n, 42);
  minmax_params (p.x, n, &p.scale, &p.zp);
  reference (p.x, n, p.scale, p.zp, ref);
  printf ("# scale %.9g\n# zero_point %d\n", p.scale, (int) p.zp);
  fflush (stdout);
  if ((data_path != NULL && write_file (data_path, p.x, n * 4) != 0) ||
      (ref_path != NULL && write_file (ref_path, ref, n) != 0))
    {
      fprintf (stderr, "compare-libs: cannot write the data files\n");
      return 1;
    }

#ifdef HAVE_DNNL
  bench_dnnl (&p, threads, n_threads, repeat, times, ref);
#else
  printf ("# oneDNN: not built (no <oneapi/dnnl/dnnl.h>; Debian package libdnnl-dev)\n");
#endif
#ifdef HAVE_XNNPACK
  bench_xnnpack (&p, threads, n_threads, repeat, times, ref);
#else
  printf ("# XNNPACK: not built (no <xnnpack.h>; Debian packages libxnnpack-dev and libpthreadpool-dev)\n");
#endif
  return 0;
}

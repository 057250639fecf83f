/* bench-onednn.c: piquant's int8 GEMM against oneDNN's int8 matmul, in one process
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Not built by default and not in CI: `make -C tools bench-onednn` (needs oneDNN's C
 * API, Debian's libdnnl-dev) builds tools/bench-onednn, linked statically against
 * piquant's GLib-free kernel library and dynamically against libdnnl.so.2
 * (docs/performance.md tells how to carry it to another machine).
 *
 *   bench-onednn [-t 1,2,16] [-r reps] [-m M] [-n N] [-k K] [-a 7]
 *
 * For each thread count: Y [M, N] int32 = A [M, K] uint8 (per tensor, zero point
 * 128 − 3) · Wᵀ, W [N, K] int8 per channel (symmetric: no weight zero point), by
 * piquant's piq_engine_matmul_int on weights packed once (piq_engine_pack) and by a
 * oneDNN matmul primitive (u8 × s8 → s32, runtime source zero point) on weights
 * reordered once into the primitive's own layout. Both sums are exact: the outputs
 * are compared element for element, then each is timed (median of reps calls) at the
 * GEMM shape (M = 256 by default) and at the GEMV shape (M = 1). GOPS = 2·M·N·K / time.
 * Threads: oneDNN's OpenMP runtime and piquant's both get the same count
 * (omp_set_num_threads, PiqEngine.n_threads).
 *
 * -a 7 draws A's codes from 0 … 127 instead of 0 … 255. On CPUs without VNNI,
 * oneDNN's int8 kernels multiply with vpmaddubsw, whose 16-bit pair sums saturate
 * (oneDNN's guide, "Nuances of int8 computations"), so with full-range A its sums
 * are not exact and the comparison stops; with 7-bit A they are, and the two can be
 * timed (piquant's kernels are exact either way and take the same time).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "piq-engine-private.h"
#include "simd/piq-kernels-private.h"

#define CHECK(call) \
  do { \
    dnnl_status_t s_ = (call); \
    if (s_ != dnnl_success) \
      { \
        fprintf (stderr, "oneDNN: %s failed (%d)\n", #call, (int) s_); \
        exit (1); \
      } \
  } while (0)

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_d (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd (void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t) (rng >> 11);
}

typedef struct {
  dnnl_engine_t    eng;
  dnnl_stream_t    stream;
  dnnl_primitive_t prim;
  dnnl_memory_t    a, b, c, zp;
} Dnnl;

/* The oneDNN matmul of A [m, k] u8 and W [n, k] s8 (as B = Wᵀ [k, n]), weights
 * reordered once into the layout the primitive chose (format tag any). */
static void
dnnl_setup (Dnnl *d, int64_t m, int64_t n, int64_t k, uint8_t *a, const int8_t *w, int32_t *c,
            int32_t *za)
{
  dnnl_memory_desc_t a_md, b_user_md, b_any_md, c_md;
  const dnnl_memory_desc_t *b_md;
  dnnl_dims_t a_dims = { m, k }, b_dims = { k, n }, c_dims = { m, n };
  dnnl_matmul_desc_t desc;
  dnnl_primitive_attr_t attr;
  dnnl_primitive_desc_t pd, rpd;
  dnnl_primitive_t reorder;
  dnnl_memory_t b_user;
  int32_t zp_val = DNNL_RUNTIME_S32_VAL;

  CHECK (dnnl_engine_create (&d->eng, dnnl_cpu, 0));
  CHECK (dnnl_stream_create (&d->stream, d->eng, dnnl_stream_default_flags));
  CHECK (dnnl_memory_desc_init_by_tag (&a_md, 2, a_dims, dnnl_u8, dnnl_ab));
  CHECK (dnnl_memory_desc_init_by_tag (&b_user_md, 2, b_dims, dnnl_s8, dnnl_ba));
  CHECK (dnnl_memory_desc_init_by_tag (&b_any_md, 2, b_dims, dnnl_s8, dnnl_format_tag_any));
  CHECK (dnnl_memory_desc_init_by_tag (&c_md, 2, c_dims, dnnl_s32, dnnl_ab));
  CHECK (dnnl_matmul_desc_init (&desc, &a_md, &b_any_md, NULL, &c_md));
  CHECK (dnnl_primitive_attr_create (&attr));
  CHECK (dnnl_primitive_attr_set_zero_points (attr, DNNL_ARG_SRC, 1, 0, &zp_val));
  CHECK (dnnl_primitive_desc_create (&pd, &desc, attr, d->eng, NULL));
  {
    const char *impl = NULL;
    CHECK (dnnl_primitive_desc_query (pd, dnnl_query_impl_info_str, 0, &impl));
    printf ("oneDNN %d.%d.%d matmul implementation (M = %" PRId64 "): %s\n",
            dnnl_version ()->major, dnnl_version ()->minor, dnnl_version ()->patch, m, impl);
  }
  CHECK (dnnl_primitive_create (&d->prim, pd));
  b_md = dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 0);

  CHECK (dnnl_memory_create (&d->a, &a_md, d->eng, a));
  CHECK (dnnl_memory_create (&d->c, &c_md, d->eng, c));
  CHECK (dnnl_memory_create (&b_user, &b_user_md, d->eng, (void *) w));
  CHECK (dnnl_memory_create (&d->b, b_md, d->eng, DNNL_MEMORY_ALLOCATE));
  {
    dnnl_memory_desc_t zp_md;
    dnnl_dims_t one = { 1 };
    CHECK (dnnl_memory_desc_init_by_tag (&zp_md, 1, one, dnnl_s32, dnnl_a));
    CHECK (dnnl_memory_create (&d->zp, &zp_md, d->eng, za));
  }
  CHECK (dnnl_reorder_primitive_desc_create (&rpd, &b_user_md, d->eng, b_md, d->eng, NULL));
  CHECK (dnnl_primitive_create (&reorder, rpd));
  {
    dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, b_user }, { DNNL_ARG_TO, d->b } };
    CHECK (dnnl_primitive_execute (reorder, d->stream, 2, args));
    CHECK (dnnl_stream_wait (d->stream));
  }
  dnnl_primitive_destroy (reorder);
  dnnl_primitive_desc_destroy (rpd);
  dnnl_memory_destroy (b_user);
  dnnl_primitive_desc_destroy (pd);
  dnnl_primitive_attr_destroy (attr);
}

static void
dnnl_run (Dnnl *d)
{
  dnnl_exec_arg_t args[4] = { { DNNL_ARG_SRC, d->a }, { DNNL_ARG_WEIGHTS, d->b },
                              { DNNL_ARG_DST, d->c },
                              { DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, d->zp } };
  CHECK (dnnl_primitive_execute (d->prim, d->stream, 4, args));
  CHECK (dnnl_stream_wait (d->stream));
}

static void
dnnl_free (Dnnl *d)
{
  dnnl_memory_destroy (d->a);
  dnnl_memory_destroy (d->b);
  dnnl_memory_destroy (d->c);
  dnnl_memory_destroy (d->zp);
  dnnl_primitive_destroy (d->prim);
  dnnl_stream_destroy (d->stream);
  dnnl_engine_destroy (d->eng);
}

static void
die (const PiqEngineError *e)
{
  fprintf (stderr, "piquant: %s\n", e->message);
  exit (1);
}

/* One shape at every thread count. */
static void
run_shape (uint64_t m, uint64_t n, uint64_t k, const unsigned *threads, size_t n_threads,
           unsigned reps, unsigned a_bits)
{
  uint8_t *a = malloc (m * k), *w = malloc (n * k);
  int32_t *c_piq = malloc (m * n * 4), *c_dnnl = malloc (m * n * 4), za = 125;
  float *sw = malloc (n * sizeof (float));
  PiqEngineFormat fa = { 20, 0, 0, 0, 0, 0, 1, 0, 0 };   /* uint8 per tensor, affine */
  PiqEngineFormat fw = { 21, 1, 0, 0, 0, 1, 1, 0, 0 };   /* int8 per channel (axis 0), symmetric */
  PiqEngineQuant qa = { fa, a, m * k, NULL, 0, NULL, 0, 0.01, za };
  PiqEngineQuant qw = { fw, w, n * k, sw, n * sizeof (float), NULL, 0, 0.0, 0 };
  uint64_t ashape[2] = { m, k }, wshape[2] = { n, k };
  PiqEngine eng1 = { 1, piq_kernels_best () };
  PiqEngineError e;
  PiqEnginePacked *packed;
  Dnnl d;
  double *ts = malloc (reps * sizeof (double));

  for (uint64_t i = 0; i < m * k; i++)
    a[i] = (uint8_t) (rnd () & ((1u << a_bits) - 1));
  for (uint64_t i = 0; i < n * k; i++)
    w[i] = (uint8_t) (int8_t) ((int) (rnd () % 255) - 127);
  for (uint64_t j = 0; j < n; j++)
    sw[j] = 0.01f;
  if ((packed = piq_engine_pack (&eng1, &qw, wshape, 2, PIQ_ACT_DYNAMIC_INT8, &e)) == NULL)
    die (&e);
  dnnl_setup (&d, (int64_t) m, (int64_t) n, (int64_t) k, a, (const int8_t *) w, c_dnnl, &za);

  printf ("\nY [%" PRIu64 ", %" PRIu64 "] int32 = A [%" PRIu64 ", %" PRIu64 "] uint8 · Wᵀ int8; "
          "GOPS = 2·M·N·K / median of %u\n", m, n, m, k, reps);
  printf ("%-10s %3s %10s %10s %10s %10s %8s\n", "", "thr", "piq ms", "piq GOPS", "dnnl ms",
          "dnnl GOPS", "piq/dnnl");
  for (size_t t = 0; t < n_threads; t++)
    {
      PiqEngine eng = { threads[t], piq_kernels_best () };
      PiqEngineMatmulOut out = { PIQ_MM_OUT_INT32, { 25, 2, { m, n }, 0, c_piq, m * n * 4 }, 0,
                                 0.0, 0, 0 };
      double piq_s, dnnl_s;

      omp_set_num_threads ((int) threads[t]);
      memset (c_piq, 0, m * n * 4);
      memset (c_dnnl, 0xff, m * n * 4);
      if (!piq_engine_matmul_int (&eng, &qa, ashape, 2, packed, NULL, &out, &e))
        die (&e);
      dnnl_run (&d);
      if (memcmp (c_piq, c_dnnl, m * n * 4) != 0)
        {
          uint64_t i = 0;
          while (c_piq[i] == c_dnnl[i])
            i++;
          fprintf (stderr, "the outputs differ: [%" PRIu64 "][%" PRIu64 "] piquant %d, oneDNN %d%s\n",
                   i / n, i % n, c_piq[i], c_dnnl[i],
                   a_bits == 8 ? " (without VNNI oneDNN's pair sums saturate: try -a 7)" : "");
          exit (1);
        }
      for (unsigned r = 0; r < reps; r++)
        {
          double t0 = now_s ();
          if (!piq_engine_matmul_int (&eng, &qa, ashape, 2, packed, NULL, &out, &e))
            die (&e);
          ts[r] = now_s () - t0;
        }
      qsort (ts, reps, sizeof ts[0], cmp_d);
      piq_s = ts[reps / 2];
      for (unsigned r = 0; r < reps; r++)
        {
          double t0 = now_s ();
          dnnl_run (&d);
          ts[r] = now_s () - t0;
        }
      qsort (ts, reps, sizeof ts[0], cmp_d);
      dnnl_s = ts[reps / 2];
      printf ("%-10s %3u %10.3f %10.1f %10.3f %10.1f %7.2fx\n", m == 1 ? "gemv" : "gemm",
              threads[t], piq_s * 1e3, 2.0 * m * n * k / piq_s / 1e9, dnnl_s * 1e3,
              2.0 * m * n * k / dnnl_s / 1e9, dnnl_s / piq_s);
    }
  dnnl_free (&d);
  piq_engine_packed_free (packed);
  free (a);
  free (w);
  free (sw);
  free (c_piq);
  free (c_dnnl);
  free (ts);
}

int
main (int argc, char **argv)
{
  unsigned threads[64] = { 1 }, reps = 9, a_bits = 8;
  size_t n_threads = 1;
  uint64_t m = 256, n = 4096, k = 4096;

  for (int i = 1; i + 1 < argc; i += 2)
    {
      if (strcmp (argv[i], "-t") == 0)
        {
          char *s = argv[i + 1], *end;
          n_threads = 0;
          while (*s && n_threads < 64)
            {
              threads[n_threads++] = (unsigned) strtoul (s, &end, 10);
              s = *end == ',' ? end + 1 : end;
              if (end == s && *s)
                break;
            }
        }
      else if (strcmp (argv[i], "-r") == 0)
        reps = (unsigned) strtoul (argv[i + 1], NULL, 10);
      else if (strcmp (argv[i], "-m") == 0)
        m = strtoull (argv[i + 1], NULL, 10);
      else if (strcmp (argv[i], "-n") == 0)
        n = strtoull (argv[i + 1], NULL, 10);
      else if (strcmp (argv[i], "-k") == 0)
        k = strtoull (argv[i + 1], NULL, 10);
      else if (strcmp (argv[i], "-a") == 0 && (strcmp (argv[i + 1], "7") == 0 ||
                                                strcmp (argv[i + 1], "8") == 0))
        a_bits = (unsigned) (argv[i + 1][0] - '0');
      else
        {
          fprintf (stderr, "usage: %s [-t 1,2,16] [-r reps] [-m M] [-n N] [-k K] [-a 7|8]\n",
                   argv[0]);
          return 2;
        }
    }
  if (reps == 0)
    reps = 1;
  printf ("piquant kernels: %s\n", piq_kernels_best ()->name);
  printf ("A's codes: 0 … %u\n", (1u << a_bits) - 1);
  run_shape (m, n, k, threads, n_threads, reps, a_bits);
  run_shape (1, n, k, threads, n_threads, reps * 5, a_bits);
  return 0;
}

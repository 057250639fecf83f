/* piq-time.c: piquant's engine call for compare-torch.py --same-process
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Not built by `make` nor run in CI. Issue 16 asks for piquant's median against
 * torch.quantize_per_tensor measured in the same process: this file and the
 * GLib-free kernel library (libpiqkernels.a, where the engine lives) make one
 * shared object that Python loads with ctypes beside torch, so both run on the
 * same data, warm caches, CPU frequency and neighbours, in alternation.
 *
 *   make -C tools compare-time   (writes tools/compare/libpiqtime.so)
 *
 * piq_time_quantize_u8 times @repeat calls of piq_engine_quantize, f32 → uint8
 * per tensor with the given scale and zero point, nearest (the same call as
 * piquant-bench's "f32->u8 nearest" row and PiqQuantizer), each call timed on
 * its own into @ms. Returns 0, or −1 with the engine's message on stderr.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "piq-engine-private.h"

int piq_time_quantize_u8 (const float *x, unsigned char *q, unsigned long long n, double scale,
                          long long zero_point, unsigned threads, unsigned repeat, double *ms)
  __attribute__ ((visibility ("default")));

static int
dtype_by_name (const char *name)
{
  size_t n;
  const PiqDtypeInfo *t = piq_dtype_table (&n);

  for (size_t i = 0; i < n; i++)
    if (t[i].name != NULL && strcmp (t[i].name, name) == 0)
      return (int) i;
  return -1;
}

int
piq_time_quantize_u8 (const float *x, unsigned char *q, unsigned long long n, double scale,
                      long long zero_point, unsigned threads, unsigned repeat, double *ms)
{
  static const PiqEngineRecipe recipe_default = PIQ_ENGINE_RECIPE_DEFAULT;
  PiqEngine eng = { .n_threads = threads, .kernels = piq_kernels_best () };
  PiqEngineRecipe r = recipe_default;
  PiqEngineView src = { .dtype = dtype_by_name ("f32"), .n_dims = 1, .shape = { n },
                        .data = x, .size = n * sizeof (float) };
  PiqEngineQuant dst = { .f = { .dtype = dtype_by_name ("uint8"), .scale_dtype = src.dtype,
                                .saturate = 1 },
                         .codes = q, .codes_size = n };
  PiqEngineError e = { 0 };

  r.has_scale = 1;
  r.scale = scale;
  r.has_zero_point = 1;
  r.zero_point = zero_point;
  for (unsigned i = 0; i < repeat; i++)
    {
      struct timespec t0, t1;

      clock_gettime (CLOCK_MONOTONIC, &t0);
      if (!piq_engine_quantize (&eng, &r, &src, &dst, NULL, &e))
        {
          fprintf (stderr, "piq_time_quantize_u8: %s\n", e.message);
          return -1;
        }
      clock_gettime (CLOCK_MONOTONIC, &t1);
      ms[i] = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) * 1e-6;
    }
  return 0;
}

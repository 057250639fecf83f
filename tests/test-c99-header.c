/* test-c99-header.c: <piquant/piquant-c99.h> alone, as a pi-quant program sees it
 *
 * Built with -std=c99 -pedantic-errors -Werror and no GLib include path: the
 * header must be self-contained C99. The entry points are assigned to pointers
 * of pi-quant's exact prototypes, so a changed parameter type fails the build;
 * then one round trip runs through the library. Reports TAP.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <piquant/piquant-c99.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef G_MAXINT
#error "piquant-c99.h must not pull in GLib"
#endif

/* pi-quant's prototypes (include/piquant.h), written out. */
typedef piquant_context_t *(*create_fn) (size_t);
typedef void (*destroy_fn) (piquant_context_t *);
typedef void (*quantize_fn) (piquant_context_t *, const void *, piquant_dtype_t, void *,
                             piquant_dtype_t, size_t, float, int64_t, piquant_round_mode_t);
typedef void (*dequantize_fn) (piquant_context_t *, const void *, piquant_dtype_t, void *,
                               piquant_dtype_t, size_t, float, int64_t, piquant_reduce_op_t);
typedef void (*params_f32_fn) (piquant_context_t *, const float *, size_t, piquant_dtype_t,
                               float *, int64_t *);
typedef void (*params_bf16_fn) (piquant_context_t *, const uint16_t *, size_t, piquant_dtype_t,
                                float *, int64_t *);

static int n_test;
static int n_failed;

static void
check (int ok, const char *what)
{
  n_test++;
  if (!ok)
    n_failed++;
  printf ("%s %d %s\n", ok ? "ok" : "not ok", n_test, what);
}

int
main (void)
{
  create_fn create = piquant_context_create;
  destroy_fn destroy = piquant_context_destroy;
  quantize_fn quantize = piquant_quantize;
  dequantize_fn dequantize = piquant_dequantize;
  params_f32_fn params_f32 = piquant_compute_quant_params_float32;
  params_bf16_fn params_bf16 = piquant_compute_quant_params_bfloat16;
  static const float x[5] = { -1.0f, 0.0f, 0.5f, 1.0f, 3.0f };
  static const uint16_t xb[2] = { 0xBF80, 0x4040 };   /* bf16 −1, 3 */
  unsigned char q[3];
  float y[5];
  float scale = 0.0f, scale_b = 0.0f;
  int64_t zp = -1, zp_b = -1;
  piquant_context_t *ctx;
  int i, ok;

  printf ("1..7\n");

  check (PIQUANT_DTYPE_F32 == 0 && PIQUANT_DTYPE_BF16 == 1 && PIQUANT_DTYPE_UINT2 == 2 &&
         PIQUANT_DTYPE_UINT4 == 3 && PIQUANT_DTYPE_UINT8 == 4, "dtype values are pi-quant's");
  check (PIQUANT_NEAREST == 0 && PIQUANT_STOCHASTIC == 1 &&
         PIQUANT_REDUCE_OP_SET == 0 && PIQUANT_REDUCE_OP_ADD == 1,
         "round mode and reduce op values are pi-quant's");

  ctx = create (2);
  check (ctx != NULL, "piquant_context_create");

  params_f32 (ctx, x, 5, PIQUANT_DTYPE_UINT4, &scale, &zp);
  check (scale == (float) (4.0 / 15.0) && zp == 4, "compute_quant_params_float32 (uint4)");
  params_bf16 (ctx, xb, 2, PIQUANT_DTYPE_UINT4, &scale_b, &zp_b);
  check (scale_b == scale && zp_b == zp, "compute_quant_params_bfloat16 (uint4)");

  memset (q, 0xEE, sizeof q);
  quantize (ctx, x, PIQUANT_DTYPE_F32, q, PIQUANT_DTYPE_UINT4, 5, scale, zp, PIQUANT_NEAREST);
  /* x/scale + zp = 0.25, 4, 5.875, 7.75, 15.25 → 0, 4, 6, 8, 15 */
  check (q[0] == 0x40 && q[1] == 0x86 && q[2] == 0x0F, "quantize f32 → uint4 packs low nibble first");

  dequantize (ctx, q, PIQUANT_DTYPE_UINT4, y, PIQUANT_DTYPE_F32, 5, scale, zp,
              PIQUANT_REDUCE_OP_SET);
  ok = 1;
  for (i = 0; i < 5; i++)
    ok &= fabsf (y[i] - x[i]) <= scale / 2;
  check (ok, "dequantize uint4 → f32 round trip within half a step");

  destroy (ctx);
  destroy (NULL);
  return n_failed == 0 ? 0 : 1;
}

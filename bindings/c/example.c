/* example.c: quantize a million normal samples to several formats with piquant.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Build: cc example.c $(pkg-config --cflags --libs piquant-1.0) -lm
 */
#include <math.h>
#include <stdlib.h>

#include <piquant/piquant.h>

#define N 1000000

/* Per-tensor affine formats: quantize derives the scale and zero point from
 * the data by min/max; the last one rounds stochastically, with a fixed seed. */
static const struct {
  const char   *label;
  PiqDtype      dtype;
  PiqRoundMode  round_mode;
} rows[] = {
  { "uint8",            PIQ_DTYPE_UINT8, PIQ_ROUND_NEAREST },
  { "int8",             PIQ_DTYPE_INT8,  PIQ_ROUND_NEAREST },
  { "uint4",            PIQ_DTYPE_UINT4, PIQ_ROUND_NEAREST },
  { "uint2",            PIQ_DTYPE_UINT2, PIQ_ROUND_NEAREST },
  { "uint4 stochastic", PIQ_DTYPE_UINT4, PIQ_ROUND_STOCHASTIC },
};

/* N(0, 1) samples by the Box-Muller transform */
static float *
normal_samples (gsize n, guint32 seed)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed (seed);
  float *x = g_new (float, n);

  for (gsize i = 0; i < n; i += 2)
    {
      double r = sqrt (-2.0 * log (1.0 - g_rand_double (rng)));
      double a = 2.0 * G_PI * g_rand_double (rng);

      x[i] = (float) (r * cos (a));
      if (i + 1 < n)
        x[i + 1] = (float) (r * sin (a));
    }
  return x;
}

int
main (void)
{
  g_autoptr(GError) error = NULL;
  PiqQuantizer *q = piq_quantizer_get_default ();
  g_autofree float *x = normal_samples (N, 42);
  g_autoptr(GEnumClass) levels = g_type_class_ref (PIQ_TYPE_SIMD_LEVEL);

  g_print ("piquant %s, %s kernels, %d normal samples\n", PIQ_VERSION_STRING,
           g_enum_get_value (levels, piq_quantizer_get_simd_level (q))->value_nick, N);

  /* [snippet:setup] */
  /* src copies x; acc is library-owned, 64-byte aligned and read in place */
  g_autoptr(PiqTensor) src = piq_tensor_new_from_data (PIQ_DTYPE_F32, N, (const guint8 *) x,
                                                       N * sizeof (float), &error);
  if (src == NULL)
    g_error ("%s", error->message);     /* a library would propagate the GError */
  g_autoptr(PiqTensor) acc = piq_tensor_new (PIQ_DTYPE_F32, N, &error);
  if (acc == NULL)
    g_error ("%s", error->message);
  const float *y = piq_tensor_get_data (acc, NULL);   /* valid as long as acc */
  /* [/snippet] */

  g_print ("%-17s %9s %10s %10s %9s\n", "format", "bytes", "scale", "zero point", "RMSE");
  for (gsize f = 0; f < G_N_ELEMENTS (rows); f++)
    {
      /* [snippet:quantize] */
      g_autoptr(PiqFormat) format = piq_format_new (rows[f].dtype);   /* per tensor, affine */
      g_autoptr(PiqRecipe) recipe = piq_recipe_new ();
      g_autoptr(PiqTensor) packed = NULL;

      piq_recipe_set_round_mode (recipe, rows[f].round_mode);
      if (rows[f].round_mode == PIQ_ROUND_STOCHASTIC)
        piq_recipe_set_seed (recipe, 7);  /* 0 would draw a fresh seed per call */
      /* compute_params stores the min/max scale and zero point in the recipe */
      if (!piq_quantizer_compute_params (q, format, recipe, src, &error) ||
          !(packed = piq_quantizer_quantize_new (q, format, recipe, src, &error)))
        g_error ("%s: %s", rows[f].label, error->message);
      /* [/snippet] */

      /* [snippet:accumulate] */
      if (!piq_tensor_fill (acc, 0.0, &error) ||                          /* reset */
          !piq_quantizer_dequantize (q, packed, acc, PIQ_REDUCE_ADD, &error)) /* acc += */
        g_error ("%s: %s", rows[f].label, error->message);
      /* [/snippet] */

      double sum = 0.0;
      for (gsize i = 0; i < N; i++)
        sum += ((double) y[i] - x[i]) * ((double) y[i] - x[i]);
      g_print ("%-17s %9" G_GSIZE_FORMAT " %10.6f %10" G_GINT64_FORMAT " %9.6f\n",
               rows[f].label, piq_tensor_get_n_bytes (packed), piq_tensor_get_scale (packed),
               piq_tensor_get_zero_point (packed), sqrt (sum / N));
    }

  /* [snippet:blocks] */
  /* Per-block formats keep their scales in the quantized tensor. A matrix is
   * quantized along its rows: blocks never span two rows. */
  const guint64 shape[2] = { 1000, 1000 };
  g_autoptr(PiqFormat) nf4 = piq_format_new_preset ("nf4", &error);  /* blocks of 64, f32 scales */
  g_autoptr(PiqTensor) w = NULL;
  g_autoptr(PiqTensor) w4 = NULL;
  g_autoptr(PiqTensor) w_back = NULL;

  if (nf4 == NULL ||
      !(w = piq_tensor_new_for_address (PIQ_DTYPE_F32, shape, 2, (guintptr) x, N * sizeof (float),
                                        0, FALSE, &error)) ||           /* x as a [1000, 1000] matrix */
      !(w4 = piq_quantizer_quantize_new (q, nf4, NULL, w, &error)) ||  /* NULL: the format's rule */
      !(w_back = piq_quantizer_dequantize_new (q, w4, PIQ_DTYPE_F32, &error)))
    g_error ("%s", error->message);
  g_autoptr(GBytes) w4_scales = piq_tensor_get_scales (w4);        /* little-endian f32 */
  /* [/snippet] */
  g_print ("\nnf4: %" G_GSIZE_FORMAT " bytes of codes, %" G_GSIZE_FORMAT " of scales, back to [%"
           G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]\n", piq_tensor_get_n_bytes (w4),
           g_bytes_get_size (w4_scales), piq_tensor_get_dim (w_back, 0), piq_tensor_get_dim (w_back, 1));

  /* [snippet:raw] */
  /* The raw-pointer forms work on caller buffers, without tensors. */
  g_autoptr(PiqFormat) u8 = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqRecipe) given = piq_recipe_new_affine (0.04, 128);    /* scale, zero point */
  const guint64 n = N;
  g_autofree guint8 *codes = g_malloc (N);
  g_autofree float *sum = g_new0 (float, N);

  if (!piq_quantizer_quantize_raw (q, u8, given, PIQ_DTYPE_F32, x, &n, 1, codes, N,
                                   NULL, 0, NULL, 0, NULL, NULL, &error) ||
      !piq_quantizer_dequantize_raw (q, u8, 0.04, 128, codes, N, &n, 1, NULL, 0, NULL, 0,
                                     PIQ_DTYPE_F32, sum, N * sizeof (float), PIQ_REDUCE_ADD, &error))
    g_error ("%s", error->message);
  /* [/snippet] */
  g_print ("\nraw uint8, scale 0.04: x[0] = %.6f, sum[0] = %.6f\n", x[0], sum[0]);

  /* [snippet:errors] */
  g_autoptr(PiqTensor) too_small = piq_tensor_new_quantized (u8, (const guint64[]) { 10 }, 1, NULL);
  g_autoptr(GError) refused = NULL;

  if (piq_quantizer_quantize (q, given, src, too_small, &refused) ||
      !g_error_matches (refused, PIQ_ERROR, PIQ_ERROR_SIZE))
    g_error ("expected PIQ_ERROR_SIZE");
  g_print ("refused, PIQ_ERROR_SIZE: %s\n", refused->message);
  /* [/snippet] */

  return EXIT_SUCCESS;
}

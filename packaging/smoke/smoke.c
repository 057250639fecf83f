/* smoke.c: the smallest round trip through the installed headers, .pc and
 * library. Build: cc smoke.c $(pkg-config --cflags --libs piquant-1.0)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <piquant/piquant.h>

int
main (void)
{
  static const double values[] = { 0.5, -1.25, 3.0 };
  static const guint8 expected[] = { 138, 103, 188 }; /* round(x / 0.05) + 128 */
  g_autoptr(GError) error = NULL;
  PiqQuantizer *q = piq_quantizer_get_default ();
  g_autoptr(PiqTensor) src = piq_tensor_new_from_values (PIQ_DTYPE_F32, values, G_N_ELEMENTS (values), &error);
  g_autoptr(PiqFormat) format = piq_format_new (PIQ_DTYPE_UINT8);
  g_autoptr(PiqRecipe) recipe = piq_recipe_new_affine (0.05, 128);
  g_autoptr(PiqTensor) packed = NULL;
  g_autoptr(PiqTensor) back = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_autofree double *out = NULL;
  gsize n_out = 0;

  if (src == NULL
      || (packed = piq_quantizer_quantize_new (q, format, recipe, src, &error)) == NULL
      || (back = piq_quantizer_dequantize_new (q, packed, PIQ_DTYPE_F32, &error)) == NULL)
    {
      fprintf (stderr, "c: %s\n", error->message);
      return 1;
    }
  bytes = piq_tensor_get_bytes (packed);
  if (g_bytes_get_size (bytes) != sizeof expected
      || memcmp (g_bytes_get_data (bytes, NULL), expected, sizeof expected) != 0)
    {
      fprintf (stderr, "c: wrong quantized bytes\n");
      return 1;
    }
  if ((out = piq_tensor_to_values (back, &n_out, &error)) == NULL)
    {
      fprintf (stderr, "c: %s\n", error->message);
      return 1;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (values); i++)
    if (n_out != G_N_ELEMENTS (values) || fabs (out[i] - values[i]) > 1e-6)
      {
        fprintf (stderr, "c: wrong dequantized values\n");
        return 1;
      }
  printf ("c: piquant headers %s, quantized %u,%u,%u, dequantized %g,%g,%g\n",
          PIQ_VERSION_STRING, expected[0], expected[1], expected[2], out[0], out[1], out[2]);
  return 0;
}

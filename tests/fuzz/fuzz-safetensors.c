/* fuzz-safetensors.c: libFuzzer harness for the safetensors reader (piquant/piq-io-safetensors.c)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is a whole file, read by piq_safetensors_new_from_stream. Besides the
 * sanitizers' checks it asserts the reader's promises: NULL exactly when a GError in
 * PIQ_ERROR is set, with a message; what it returns saves, and reads back with the same
 * names, metadata and tensors (dtype, shape, bytes, format, scales, zero points). No
 * GLib warning or critical may be logged. Inputs over FUZZ_MAX_INPUT bytes are skipped, so
 * that no entry asks for more memory than the input could hold.
 *
 * Run: ./fuzz-safetensors corpus/safetensors or `make fuzz` (tests/fuzz/Makefile.am).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piquant.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv);

#define FAIL(...) do { fprintf (stderr, "fuzz-safetensors: " __VA_ARGS__); fputc ('\n', stderr); abort (); } while (0)
#define CHECK(cond) do { if (!(cond)) FAIL ("%s:%d: %s failed", __FILE__, __LINE__, #cond); } while (0)

#define FUZZ_MAX_INPUT (1 << 20)

static void
log_handler (const char *domain, GLogLevelFlags level, const char *message, gpointer user_data)
{
  (void) user_data;
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    FAIL ("unexpected log message [%s] %s", domain ? domain : "-", message);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  g_log_set_default_handler (log_handler, NULL);
  g_log_set_handler ("GLib-GObject", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  g_log_set_handler ("GLib", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  g_log_set_handler ("Json", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  g_log_set_handler ("Piquant", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, log_handler, NULL);
  return 0;
}

static void
same_bytes (GBytes *a, GBytes *b)
{
  CHECK ((a == NULL) == (b == NULL));
  CHECK (a == NULL || g_bytes_equal (a, b));
}

static void
same_tensor (PiqTensor *a, PiqTensor *b)
{
  guint na, nb;
  const guint64 *sa = piq_tensor_get_shape (a, &na), *sb = piq_tensor_get_shape (b, &nb);
  g_autoptr(GBytes) da = piq_tensor_get_bytes (a);
  g_autoptr(GBytes) db = piq_tensor_get_bytes (b);
  g_autoptr(GBytes) s1 = piq_tensor_get_scales (a);
  g_autoptr(GBytes) s2 = piq_tensor_get_scales (b);
  g_autoptr(GBytes) z1 = piq_tensor_get_zero_points (a);
  g_autoptr(GBytes) z2 = piq_tensor_get_zero_points (b);
  PiqFormat *fa = piq_tensor_get_format (a), *fb = piq_tensor_get_format (b);

  CHECK (piq_tensor_get_dtype (a) == piq_tensor_get_dtype (b));
  CHECK (na == nb && memcmp (sa, sb, na * sizeof *sa) == 0);
  same_bytes (da, db);
  CHECK ((fa == NULL) == (fb == NULL) && (fa == NULL || piq_format_equal (fa, fb)));
  same_bytes (s1, s2);
  same_bytes (z1, z2);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autoptr(GInputStream) in = NULL;
  g_autoptr(GOutputStream) out = NULL;
  g_autoptr(GInputStream) again_in = NULL;
  g_autoptr(GBytes) saved = NULL;
  g_autoptr(PiqSafetensors) st = NULL;
  g_autoptr(PiqSafetensors) again = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) names = NULL;
  g_auto(GStrv) names2 = NULL;
  g_auto(GStrv) keys = NULL;
  g_auto(GStrv) keys2 = NULL;
  guint64 header_len = 0, total;

  if (size > FUZZ_MAX_INPUT)
    return 0;
  /* An entry can ask for as many bytes as its offsets say; a stream of unknown size
   * is read until it ends short. Keep the requests within the input. */
  if (size >= 8)
    {
      for (int i = 7; i >= 0; i--)
        header_len = header_len << 8 | data[i];
      if (header_len > size)
        return 0;
    }
  in = g_memory_input_stream_new_from_data (data, size, NULL);
  st = piq_safetensors_new_from_stream (in, NULL, &error);
  CHECK ((st == NULL) == (error != NULL));
  CHECK (error == NULL || (error->domain == PIQ_ERROR && error->message[0] != '\0'));
  if (st == NULL)
    return 0;
  /* what was read fits in the input */
  names = piq_safetensors_get_names (st);
  total = 0;
  for (guint i = 0; names[i] != NULL; i++)
    total += piq_tensor_get_n_bytes (piq_safetensors_get_tensor (st, names[i]));
  CHECK (total <= size);

  out = g_memory_output_stream_new_resizable ();
  if (!piq_safetensors_save_to_stream (st, out, NULL, &error))
    FAIL ("what was read does not save: %s", error->message);
  CHECK (g_output_stream_close (out, NULL, NULL));
  saved = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  again_in = g_memory_input_stream_new_from_bytes (saved);
  again = piq_safetensors_new_from_stream (again_in, NULL, &error);
  if (again == NULL)
    FAIL ("what was saved does not read back: %s", error->message);
  names2 = piq_safetensors_get_names (again);
  CHECK (g_strv_equal ((const char *const *) names, (const char *const *) names2));
  for (guint i = 0; names[i] != NULL; i++)
    same_tensor (piq_safetensors_get_tensor (st, names[i]),
                 piq_safetensors_get_tensor (again, names[i]));
  keys = piq_safetensors_get_metadata_keys (st);
  keys2 = piq_safetensors_get_metadata_keys (again);
  CHECK (g_strv_equal ((const char *const *) keys, (const char *const *) keys2));
  for (guint i = 0; keys[i] != NULL; i++)
    CHECK (strcmp (piq_safetensors_get_metadata (st, keys[i]),
                   piq_safetensors_get_metadata (again, keys[i])) == 0);
  return 0;
}

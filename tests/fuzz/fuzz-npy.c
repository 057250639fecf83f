/* fuzz-npy.c: libFuzzer harness for the .npy reader (piquant/piq-io-npy.c, piq-io.c)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is read twice: as a whole .npy file (piq_npy_read_header over an
 * in-memory FILE) and as the header's dict literal alone (piq_npy_parse_dict, which
 * reaches the dict parser without the preamble). Besides the sanitizers' checks it
 * asserts the reader's promises: FALSE exactly when a GError is set; a header it
 * accepts describes a dtype it can write back, whose element count is the product
 * of its shape; and the header piq_npy_format_header writes for it reads back the
 * same (dtype, shape), starting the data at a multiple of 64 bytes. A whole file whose
 * header is accepted (and whose array is small) is also read by the library's reader
 * (piq_tensor_new_from_stream): a tensor it returns holds the file's data bytes and
 * shape, and saves and reads back the same.
 *
 * Run: ./fuzz-npy corpus/ or `make fuzz` (tests/fuzz/Makefile.am).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "piquant.h"
#include "piq-io-npy-private.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf (stderr, "fuzz-npy: %s failed\n", #cond); abort (); } } while (0)

static void
check_accepted (const PiqNpyHeader *h)
{
  guint64 count = 1;
  /* '<u2' reads as UINT16 (bf16 bits): it is written back as bf16's descr, '<u2' */
  const char *descr = piq_npy_descr_for_dtype (h->dtype == PIQ_DTYPE_UINT16 ? PIQ_DTYPE_BF16
                                                                            : h->dtype);
  g_autofree guint8 *bytes = NULL;
  gsize length = 0;
  PiqNpyHeader again;
  g_autoptr(GError) error = NULL;
  FILE *f;

  CHECK (h->n_dims <= PIQ_NPY_MAX_DIMS);
  for (guint i = 0; i < h->n_dims; i++)
    CHECK (g_uint64_checked_mul (&count, count, h->shape[i]));
  CHECK (count == h->n_elements);
  CHECK (descr != NULL);

  bytes = piq_npy_format_header (descr, h->shape, h->n_dims, &length);
  CHECK (bytes != NULL && length % 64 == 0);
  f = fmemopen (bytes, length, "rb");
  CHECK (f != NULL);
  CHECK (piq_npy_read_header (f, "formatted", &again, &error));
  fclose (f);
  CHECK (error == NULL);
  CHECK (again.dtype == h->dtype && again.n_dims == h->n_dims && again.data_offset == length);
  for (guint i = 0; i < h->n_dims; i++)
    CHECK (again.shape[i] == h->shape[i]);
}

/* Arrays of more elements are left to the header checks, so that runs stay fast. */
#define MAX_ELEMENTS (1 << 16)

static void
read_stream (const uint8_t *data, size_t size, const PiqNpyHeader *h)
{
  g_autoptr(GInputStream) in = g_memory_input_stream_new_from_data (data, size, NULL);
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr(GInputStream) again_in = NULL;
  g_autoptr(GBytes) saved = NULL;
  g_autoptr(PiqTensor) t = NULL;
  g_autoptr(PiqTensor) again = NULL;
  g_autoptr(GError) error = NULL;
  const guint64 *shape;
  gconstpointer d1, d2;
  gsize n1, n2;
  guint nd;

  t = piq_tensor_new_from_stream (in, NULL, &error);
  CHECK ((t == NULL) == (error != NULL));
  CHECK (error == NULL || error->domain == PIQ_ERROR);
  if (t == NULL)
    return;
  CHECK (piq_tensor_get_dtype (t) == h->dtype);
  shape = piq_tensor_get_shape (t, &nd);
  if (h->n_dims == 0)
    CHECK (nd == 1 && shape[0] == 1);
  else
    CHECK (nd == h->n_dims && memcmp (shape, h->shape, nd * sizeof *shape) == 0);
  d1 = piq_tensor_get_data (t, &n1);
  CHECK (h->data_offset + n1 <= size && (n1 == 0 || memcmp (d1, data + h->data_offset, n1) == 0));

  CHECK (piq_tensor_save_to_stream (t, out, PIQ_FILE_FORMAT_NPY, NULL, &error));
  CHECK (g_output_stream_close (out, NULL, NULL));
  saved = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  again_in = g_memory_input_stream_new_from_bytes (saved);
  again = piq_tensor_new_from_stream (again_in, NULL, &error);
  CHECK (again != NULL && piq_tensor_get_dtype (again) == h->dtype);
  d2 = piq_tensor_get_data (again, &n2);
  CHECK (n1 == n2 && (n1 == 0 || memcmp (d1, d2, n1) == 0));
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  PiqNpyHeader header;
  GError *error = NULL;
  gboolean ok;

  /* the whole file */
  if (size > 0)
    {
      FILE *f = fmemopen ((void *) data, size, "rb");
      CHECK (f != NULL);
      ok = piq_npy_read_header (f, "input", &header, &error);
      fclose (f);
      CHECK (ok == (error == NULL));
      if (ok)
        {
          CHECK (header.data_offset <= size);
          check_accepted (&header);
          if (header.n_elements <= MAX_ELEMENTS)
            read_stream (data, size, &header);
        }
      g_clear_error (&error);
    }

  /* the dict literal alone */
  memset (&header, 0, sizeof header);
  ok = piq_npy_parse_dict ((const char *) data, size, &header, &error);
  CHECK (ok == (error == NULL));
  if (ok)
    check_accepted (&header);
  g_clear_error (&error);
  return 0;
}

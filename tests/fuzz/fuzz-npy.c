/* fuzz-npy.c: libFuzzer harness for the .npy reader of the tool (tools/piq-npy.c)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is read twice: as a whole .npy file (piq_npy_read_header over an
 * in-memory FILE) and as the header's dict literal alone (piq_npy_parse_dict, which
 * reaches the dict parser without the preamble). Besides the sanitizers' checks it
 * asserts the reader's promises: FALSE exactly when a GError is set; a header it
 * accepts describes a dtype it can write back, whose element count is the product
 * of its shape; and the header piq_npy_format_header writes for it reads back the
 * same (dtype, shape), starting the data at a multiple of 64 bytes.
 *
 * Run: ./fuzz-npy corpus/ or `make fuzz` (tests/fuzz/Makefile.am).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "piq-npy.c"   /* built into the harness, with the fuzzer's coverage flags */

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

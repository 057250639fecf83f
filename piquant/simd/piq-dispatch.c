/* piq-dispatch.c: which kernel runs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A quantizer holds a merged table: the scalar reference overlaid, entry by entry,
 * by every built table that the CPU supports and the quantizer's level cap allows.
 * A SIMD table only fills the entries that pay; the rest stay scalar.
 */
#include "config.h"

#include "piq-kernels-private.h"
#include "piq-cpu-private.h"

static const PiqKernelTable *const tables[] = {
  &piq_kernels_scalar,
};

const PiqKernelTable *const *
piq_kernel_tables (size_t *n_tables)
{
  *n_tables = sizeof tables / sizeof tables[0];
  return tables;
}

int
piq_kernels_merge (int max_level, uint32_t cpu_features, PiqKernelTable *out)
{
  int level = 0;

  *out = piq_kernels_scalar;
  for (size_t t = 1; t < sizeof tables / sizeof tables[0]; t++)
    {
      const PiqKernelTable *k = tables[t];
      if (k->level > max_level || (k->required & cpu_features) != k->required)
        continue;
#define MERGE_ENTRY(op, slot, ...) if (k->slot) out->slot = k->slot;
      PIQ_KERNEL_LIST (MERGE_ENTRY)
#undef MERGE_ENTRY
      level = k->level;
      out->name = k->name;
    }
  out->level = level;
  return level;
}

void
piq_hash_keys (uint64_t seed, uint32_t *key0, uint32_t *key1)
{
  uint64_t z = seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  *key0 = (uint32_t) z;
  *key1 = (uint32_t) (z >> 32);
}

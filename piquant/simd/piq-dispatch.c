/* piq-dispatch.c: which kernel runs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A SIMD table only fills the entries that pay; the rest stay scalar. The best
 * kernels (no cap) are reached through GNU ifunc symbols, one per kernel list entry,
 * resolved once at load time; toolchains without ifunc build the same table once,
 * under pthread_once. A quantizer capped below the best level holds its own merged
 * table: the scalar reference overlaid, entry by entry, by every built table that
 * the CPU supports and the cap allows.
 */
#include "config.h"

#include "piq-kernels-private.h"
#include "piq-cpu-private.h"

#include <pthread.h>

/* The units configure built (PIQ_SIMD_UNITS, from m4/piq-simd.m4), each exporting one
 * table named after its suffix. */
#define PIQ_DECLARE_UNIT_(NAME, name) PIQ_INTERNAL extern const PiqKernelTable piq_kernels_##name;
PIQ_SIMD_UNITS (PIQ_DECLARE_UNIT_)
#undef PIQ_DECLARE_UNIT_

/* In increasing level: the merge lets a later (better) table override an earlier one. */
static const PiqKernelTable *const tables[] = {
  &piq_kernels_scalar,
#define PIQ_TABLE_UNIT_(NAME, name) &piq_kernels_##name,
  PIQ_SIMD_UNITS (PIQ_TABLE_UNIT_)
#undef PIQ_TABLE_UNIT_
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

/* The best supported kernel of one list entry: the highest table that fills it. */
#define PIQ_BEST_SLOT(slot, features) \
  do { \
    for (size_t t_ = sizeof tables / sizeof tables[0]; t_-- > 1;) \
      if (tables[t_]->slot != NULL && (tables[t_]->required & (features)) == tables[t_]->required) \
        return tables[t_]->slot; \
    return piq_kernels_scalar.slot; \
  } while (0)

#define PIQ_CAT_(a, b) a##b
#define PIQ_CAT(a, b) PIQ_CAT_ (a, b)
#define PIQ_STR_(x) #x
#define PIQ_STR(x) PIQ_STR_ (x)

#ifdef PIQ_HAVE_IFUNC

/* Resolvers run while the dynamic loader relocates the library: they may call
 * nothing from libc: piq_cpu_features() executes CPUID itself, and on AArch64 they
 * read the AT_HWCAP word glibc passes them. They run before
 * any constructor, a sanitizer runtime's included, so neither they nor what they
 * call may be instrumented (PIQ_NO_SANITIZE): the shadow memory is not mapped yet. */
#ifdef __aarch64__
/* glibc passes AArch64 resolvers AT_HWCAP; getauxval itself is a call into libc */
# define IFUNC_ARGS     uint64_t hwcap
# define IFUNC_FEATURES piq_cpu_features_hwcap (hwcap)
#else
# define IFUNC_ARGS     void
# define IFUNC_FEATURES piq_cpu_features ()
#endif
#define IFUNC_ENTRY(op, slot, ...) \
  PIQ_NO_SANITIZE __attribute__((used)) static __typeof__ (*piq_kernels_scalar.slot) * \
  PIQ_CAT (resolve_, PIQ_KNAME_##op (__VA_ARGS__)) (IFUNC_ARGS) \
  { \
    uint32_t features = IFUNC_FEATURES; \
    PIQ_BEST_SLOT (slot, features); \
  } \
  __typeof__ (*piq_kernels_scalar.slot) PIQ_CAT (piq_ifunc_, PIQ_KNAME_##op (__VA_ARGS__)) \
    __attribute__ ((ifunc (PIQ_STR (PIQ_CAT (resolve_, PIQ_KNAME_##op (__VA_ARGS__)))), \
                    visibility ("hidden")));
PIQ_KERNEL_LIST (IFUNC_ENTRY)
#undef IFUNC_ENTRY

static const PiqKernelTable best_table = {
  .name = "ifunc",
#define IFUNC_SLOT(op, slot, ...) .slot = PIQ_CAT (piq_ifunc_, PIQ_KNAME_##op (__VA_ARGS__)),
  PIQ_KERNEL_LIST (IFUNC_SLOT)
#undef IFUNC_SLOT
};

const PiqKernelTable *
piq_kernels_best (void)
{
  return &best_table;
}

#else /* !PIQ_HAVE_IFUNC */

static PiqKernelTable best_table;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void
build_best (void)
{
  piq_kernels_merge (1 << 30, piq_cpu_features (), &best_table);
  best_table.name = "once";
}

const PiqKernelTable *
piq_kernels_best (void)
{
  pthread_once (&best_once, build_best);
  return &best_table;
}

#endif

/* piq-cpu-detect.c: run-time CPU feature detection for the kernel dispatch
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * CPUID and XGETBV directly rather than __builtin_cpu_supports: the same code with
 * GCC and clang (whose builtins know different feature names), and nothing here
 * depends on libgcc's or compiler-rt's __cpu_model having been initialised, which
 * matters in ifunc resolvers.
 */
#include "config.h"

#include "piq-cpu-private.h"

#include <errno.h>
#include <stddef.h>
#if defined(__x86_64__) && defined(__linux__)
# include <sys/syscall.h>
# include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
# include <sys/auxv.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
# include <cpuid.h>

/* The __cpuid_count macro (inline assembly) rather than the inline functions of
 * <cpuid.h>: those take pointers to locals, which a sanitizer build would instrument. */
PIQ_NO_SANITIZE static uint32_t
detect_x86 (void)
{
  uint32_t r[8][4] = { { 0 } };   /* [leaf 1, 7.0, 7.1][EAX, EBX, ECX, EDX] */
  uint32_t max_leaf, a, b, c, d, xcr0 = 0, f = 0;

  __cpuid (0, max_leaf, b, c, d);
  if (max_leaf >= 1)
    {
      __cpuid_count (1, 0, a, b, c, d);
      r[1][0] = a; r[1][1] = b; r[1][2] = c; r[1][3] = d;
    }
  if (max_leaf >= 7)
    {
      __cpuid_count (7, 0, a, b, c, d);
      r[7][0] = a; r[7][1] = b; r[7][2] = c; r[7][3] = d;
      if (r[7][0] >= 1)   /* EAX of leaf 7.0: the last subleaf */
        {
          __cpuid_count (7, 1, a, b, c, d);
          r[2][0] = a; r[2][1] = b; r[2][2] = c; r[2][3] = d;
        }
    }
  /* OSXSAVE: the OS manages the extended state, XCR0 says which */
  if (r[1][2] & (1u << 27))
    {
      uint32_t lo, hi;
      __asm__ volatile ("xgetbv" : "=a" (lo), "=d" (hi) : "c" (0));
      xcr0 = lo;
      (void) hi;
    }
# define PIQ_REG_EAX 0
# define PIQ_REG_EBX 1
# define PIQ_REG_ECX 2
# define PIQ_REG_EDX 3
# define PIQ_ROW_(leaf, sub) ((leaf) == 7 && (sub) == 1 ? 2 : (leaf))
# define PIQ_CPU_TEST_(name, str, leaf, sub, reg, bit, os) \
  if ((r[PIQ_ROW_ (leaf, sub)][PIQ_REG_##reg] >> (bit)) & 1u && (xcr0 & (os)) == (os)) \
    f |= PIQ_CPU_##name;
  PIQ_CPU_X86_FEATURES (PIQ_CPU_TEST_)
# undef PIQ_CPU_TEST_
# undef PIQ_ROW_
  return f;
}
#endif

/* Detected once (resolvers call this once per kernel entry, and CPUID traps to the
 * hypervisor in a virtual machine). 0 is "not yet": bit 31 marks a detected value. */
static uint32_t cached_features;

uint32_t
piq_cpu_features (void)
{
  uint32_t f = __atomic_load_n (&cached_features, __ATOMIC_RELAXED);

  if (f != 0)
    return f & ~(1u << 31);
#if defined(__x86_64__) || defined(__i386__)
  f = detect_x86 ();
#elif defined(__aarch64__)
# ifdef __linux__
  f = piq_cpu_features_hwcap (getauxval (AT_HWCAP));
# else   /* the optional features are left unused */
  f = piq_cpu_features_hwcap (0);
# endif
#endif
  __atomic_store_n (&cached_features, f | (1u << 31), __ATOMIC_RELAXED);
  return f;
}

#ifdef __aarch64__
uint32_t
piq_cpu_features_hwcap (uint64_t hwcap)
{
  uint32_t f = PIQ_CPU_NEON;   /* Advanced SIMD is mandatory in AArch64 */

  if (hwcap & (UINT64_C (1) << 20))   /* HWCAP_ASIMDDP (<asm/hwcap.h>): SDOT, UDOT */
    f |= PIQ_CPU_DOTPROD;
  return f;
}
#endif

const PiqTileConfig piq_tile_config_16x64 __attribute__ ((aligned (64))) = {
  .palette = 1,
  .colsb = { 64, 64, 64, 64, 64, 64, 64, 64 },
  .rows = { 16, 16, 16, 16, 16, 16, 16, 16 },
};

int
piq_cpu_amx_usable (void)
{
  static int state;   /* 0 not asked, 1 usable, −1 not */
  int s = __atomic_load_n (&state, __ATOMIC_ACQUIRE);

  if (s == 0)
    {
      const uint32_t need = PIQ_CPU_AMX_TILE | PIQ_CPU_AMX_INT8;
      s = (piq_cpu_features () & need) == need ? 1 : -1;
#if defined(__x86_64__) && defined(__linux__)   /* AMX is x86-64's; elsewhere s < 0 */
      if (s > 0)
        {
          int saved = errno;
          /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18), <asm/prctl.h> */
          s = syscall (SYS_arch_prctl, 0x1023, 18) == 0 ? 1 : -1;
          errno = saved;
        }
#endif
      __atomic_store_n (&state, s, __ATOMIC_RELEASE);
    }
  return s > 0;
}

const char *
piq_cpu_feature_name (unsigned bit)
{
  static const char *const names[] = {
#define PIQ_CPU_NAME_(name, str, ...) [PIQ_CPU_BIT_##name] = str,
    PIQ_CPU_X86_FEATURES (PIQ_CPU_NAME_)
#undef PIQ_CPU_NAME_
    [PIQ_CPU_BIT_NEON] = "neon",
    [PIQ_CPU_BIT_DOTPROD] = "dotprod",
  };
  return bit < sizeof names / sizeof names[0] ? names[bit] : NULL;
}

/* piq-cpu-detect.c: run-time CPU feature detection for the kernel dispatch
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "piq-cpu-private.h"

#include <stddef.h>

uint32_t
piq_cpu_features (void)
{
  uint32_t f = 0;
#if defined(__x86_64__) || defined(__i386__)
  /* __builtin_cpu_supports also checks that the OS saves the vector state (XCR0). */
  __builtin_cpu_init ();
# define PIQ_CPU_TEST_(name, str) if (__builtin_cpu_supports (str)) f |= PIQ_CPU_##name;
  PIQ_CPU_X86_FEATURES (PIQ_CPU_TEST_)
# undef PIQ_CPU_TEST_
#elif defined(__aarch64__)
  f |= PIQ_CPU_NEON;   /* Advanced SIMD is mandatory in AArch64 */
#endif
  return f;
}

const char *
piq_cpu_feature_name (unsigned bit)
{
  static const char *const names[] = {
#define PIQ_CPU_NAME_(name, str) [PIQ_CPU_BIT_##name] = str,
    PIQ_CPU_X86_FEATURES (PIQ_CPU_NAME_)
#undef PIQ_CPU_NAME_
    [PIQ_CPU_BIT_NEON] = "neon",
  };
  return bit < sizeof names / sizeof names[0] ? names[bit] : NULL;
}

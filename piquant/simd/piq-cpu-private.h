/* piq-cpu-private.h: the CPU features kernel units can require
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One list: configure's PIQ_CHECK_SIMD turns each "-m<feature>" flag of a unit into
 * PIQ_CPU_<FEATURE>, and the resolver checks each bit with __builtin_cpu_supports
 * of the same name. A flag without an entry here fails to compile.
 */
#pragma once

#include <stdint.h>

/* X (ENUM_SUFFIX, "__builtin_cpu_supports name") */
#define PIQ_CPU_X86_FEATURES(X) \
  X (SSE4_2,     "sse4.2") \
  X (POPCNT,     "popcnt") \
  X (AVX2,       "avx2") \
  X (FMA,        "fma") \
  X (F16C,       "f16c") \
  X (BMI2,       "bmi2") \
  X (AVX512F,    "avx512f") \
  X (AVX512BW,   "avx512bw") \
  X (AVX512VL,   "avx512vl") \
  X (AVX512DQ,   "avx512dq") \
  X (AVX512BF16, "avx512bf16") \
  X (AVX512FP16, "avx512fp16") \
  X (AVX512VBMI, "avx512vbmi")

enum {
#define PIQ_CPU_BIT_(name, str) PIQ_CPU_BIT_##name,
  PIQ_CPU_X86_FEATURES (PIQ_CPU_BIT_)
#undef PIQ_CPU_BIT_
  PIQ_CPU_BIT_NEON,
};

#define PIQ_CPU_ENUM_(name, str) PIQ_CPU_##name = 1u << PIQ_CPU_BIT_##name,
enum { PIQ_CPU_X86_FEATURES (PIQ_CPU_ENUM_) PIQ_CPU_NEON = 1u << PIQ_CPU_BIT_NEON };
#undef PIQ_CPU_ENUM_

/* The features this CPU (and its OS) supports. Async-signal and ifunc-resolver safe:
 * calls nothing from libc. */
uint32_t piq_cpu_features (void);

/* Name of feature bit @bit ("avx2"), or NULL past the last one. */
const char *piq_cpu_feature_name (unsigned bit);

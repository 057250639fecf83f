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

/* X (ENUM_SUFFIX, "name", CPUID leaf, subleaf, register, bit, OS state) where the OS
 * state is the XCR0 mask the feature's registers need (0, AVX: XMM|YMM, AVX512:
 * XMM|YMM|opmask|ZMM, AMX: XTILECFG|XTILEDATA), as GCC's __builtin_cpu_supports
 * checks them; "name" is the __builtin_cpu_supports name. Linux also asks each
 * process to request the AMX tile data before its first tile instruction
 * (piq-kernels-amx.c does, and falls back where it is refused). */
#define PIQ_CPU_X86_FEATURES(X) \
  X (SSE4_2,     "sse4.2",     1, 0, ECX, 20, 0) \
  X (POPCNT,     "popcnt",     1, 0, ECX, 23, 0) \
  X (AVX2,       "avx2",       7, 0, EBX,  5, PIQ_XCR0_AVX) \
  X (FMA,        "fma",        1, 0, ECX, 12, PIQ_XCR0_AVX) \
  X (F16C,       "f16c",       1, 0, ECX, 29, PIQ_XCR0_AVX) \
  X (BMI2,       "bmi2",       7, 0, EBX,  8, 0) \
  X (AVXVNNI,    "avxvnni",    7, 1, EAX,  4, PIQ_XCR0_AVX) \
  X (AVX512F,    "avx512f",    7, 0, EBX, 16, PIQ_XCR0_AVX512) \
  X (AVX512BW,   "avx512bw",   7, 0, EBX, 30, PIQ_XCR0_AVX512) \
  X (AVX512VL,   "avx512vl",   7, 0, EBX, 31, PIQ_XCR0_AVX512) \
  X (AVX512DQ,   "avx512dq",   7, 0, EBX, 17, PIQ_XCR0_AVX512) \
  X (AVX512BF16, "avx512bf16", 7, 1, EAX,  5, PIQ_XCR0_AVX512) \
  X (AVX512FP16, "avx512fp16", 7, 0, EDX, 23, PIQ_XCR0_AVX512) \
  X (AVX512VBMI, "avx512vbmi", 7, 0, ECX,  1, PIQ_XCR0_AVX512) \
  X (AVX512VNNI, "avx512vnni", 7, 0, ECX, 11, PIQ_XCR0_AVX512) \
  X (AVX512VPOPCNTDQ, "avx512vpopcntdq", 7, 0, ECX, 14, PIQ_XCR0_AVX512) \
  X (AMX_TILE,   "amx-tile",   7, 0, EDX, 24, PIQ_XCR0_AMX) \
  X (AMX_INT8,   "amx-int8",   7, 0, EDX, 25, PIQ_XCR0_AMX)

#define PIQ_XCR0_AVX    0x06u   /* XMM and YMM state */
#define PIQ_XCR0_AVX512 0xe6u   /* and opmask, ZMM_Hi256, Hi16_ZMM */
#define PIQ_XCR0_AMX    0x60000u /* XTILECFG and XTILEDATA */

enum {
#define PIQ_CPU_BIT_(name, ...) PIQ_CPU_BIT_##name,
  PIQ_CPU_X86_FEATURES (PIQ_CPU_BIT_)
#undef PIQ_CPU_BIT_
  PIQ_CPU_BIT_NEON,
  PIQ_CPU_BIT_DOTPROD,   /* AArch64 FEAT_DotProd (SDOT, UDOT) */
};

#define PIQ_CPU_ENUM_(name, ...) PIQ_CPU_##name = 1u << PIQ_CPU_BIT_##name,
enum { PIQ_CPU_X86_FEATURES (PIQ_CPU_ENUM_) PIQ_CPU_NEON = 1u << PIQ_CPU_BIT_NEON,
       PIQ_CPU_DOTPROD = 1u << PIQ_CPU_BIT_DOTPROD };
#undef PIQ_CPU_ENUM_

/* Code that ifunc resolvers run: the dynamic loader runs them while it relocates the
 * library, before any constructor, so before a sanitizer runtime has mapped its shadow
 * memory: no sanitizer instrumentation may reach them. */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
# define PIQ_NO_SANITIZE __attribute__((no_sanitize ("address", "undefined")))
#else
# define PIQ_NO_SANITIZE
#endif

/* The features this CPU (and its OS) supports. Async-signal and ifunc-resolver safe:
 * on x86 it calls nothing from libc, executes CPUID and XGETBV itself (compilers
 * differ in the names __builtin_cpu_supports knows: clang 14 has no "f16c"). Not
 * instrumented by sanitizers. On AArch64 Linux it reads getauxval (AT_HWCAP), so an
 * ifunc resolver there takes piq_cpu_features_hwcap of its argument instead: a
 * program's resolvers can run before its calls into libc are relocated. */
PIQ_NO_SANITIZE uint32_t piq_cpu_features (void);

#ifdef __aarch64__
/* The features an AArch64 Linux AT_HWCAP word gives: the word glibc passes ifunc
 * resolvers as their first argument. Calls nothing. */
PIQ_NO_SANITIZE uint32_t piq_cpu_features_hwcap (uint64_t hwcap);
#endif

/* Whether this process may execute AMX tile instructions: the CPU and OS have
 * AMX-TILE and AMX-INT8 (piq_cpu_features) and, on Linux, the kernel granted the tile
 * data (arch_prctl ARCH_REQ_XCOMP_PERM, asked on the first call only: the permission
 * is the process's). Keeps errno. Not for ifunc resolvers (it calls libc). */
int piq_cpu_amx_usable (void);

/* LDTILECFG's 64-byte operand (palette 1: up to 8 tiles of rows × colsb bytes) */
typedef struct {
  uint8_t  palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t  rows[16];
} PiqTileConfig;

_Static_assert (sizeof (PiqTileConfig) == 64, "LDTILECFG reads 64 bytes");

/* Tiles 0–7 of 16 rows of 64 bytes (the int8 GEMM's and the bench's). An object in
 * memory rather than a local: GCC's _tile_loadconfig tells the compiler it reads 8
 * bytes of its operand, so stores to a local config past those could be dropped. */
extern const PiqTileConfig piq_tile_config_16x64;

/* Name of feature bit @bit ("avx2"), or NULL past the last one. */
const char *piq_cpu_feature_name (unsigned bit);

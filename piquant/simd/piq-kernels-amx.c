/* piq-kernels-amx.c: the int8 GEMM's micro-kernel on AMX tiles (Sapphire Rapids and
 * later)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with PIQ_AMX_CFLAGS only. This unit's table fills one entry, gemm_u8s8: the
 * merge keeps the avx512vnni unit's kernels for everything else. TDPBUSD multiplies
 * unsigned bytes of A by signed bytes of B and adds each four products into an int32
 * lane, wrapping, exactly the sums PiqGemmU8S8Fn asks for (the caller keeps them within
 * int32), so the bytes are every other table's. The packed B needs no repacking: a
 * panel's 16 consecutive quads (4 k of its 16 columns, 64 bytes each) are the 16 rows
 * of a B tile, 64 bytes apart.
 *
 * Blocks of 32 rows of A by 32 columns (two panels), four sum tiles, 16 quads (64 k)
 * a step: two A tiles and two B tiles loaded per four TDPBUSD. k runs in blocks of
 * AMX_KB quads, each over every pair of panels, the sums kept in C between blocks.
 * What does not fill a tile goes to the VNNI kernel, whose sums are the same
 * integers: rows past a multiple of 16, and the quads past a multiple of 16 (added
 * after the tiles' sums). A last panel with columns past n is summed apart, through
 * a block on the stack: the tiles also sum its padding columns, which must not reach
 * C.
 *
 * The tile state is released at the end of every call, so a thread that stops
 * multiplying does not carry 8 KiB more state through every context switch.
 *
 * Dispatch picks this table where the CPU has AMX-TILE and AMX-INT8 and the OS
 * enables their state (XCR0). Linux further makes each process ask for the tile data
 * (arch_prctl ARCH_REQ_XCOMP_PERM) before its first tile instruction; the first call
 * asks, and where that is refused every call runs the VNNI kernel instead.
 */
#include "config.h"

/* GCC's macros and clang's (__AMXTILE__, __AMXINT8__) */
#if !(defined(__AMX_TILE__) || defined(__AMXTILE__)) || !(defined(__AMX_INT8__) || defined(__AMXINT8__)) || \
    !defined(__AVX512VNNI__)
#error "piq-kernels-amx.c must be compiled with PIQ_AMX_CFLAGS (… -mamx-tile -mamx-int8)"
#endif

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "piq-kernels-private.h"
#include "piq-cpu-private.h"

/* The kernel for what the tiles leave: the VNNI unit's where it is built */
#ifdef PIQ_HAVE_AVX512VNNI
PIQ_INTERNAL extern const PiqKernelTable piq_kernels_avx512vnni;
# define AMX_REST piq_kernels_avx512vnni.gemm_u8s8
#else
# define AMX_REST piq_kernels_scalar.gemm_u8s8
#endif

/* Quads of k per block: a block of A (32 rows × 512 bytes) and a pair of panels (2 ×
 * 128 quads of 64 bytes), 16 KiB each, stay in L1 while the block runs over every
 * pair of panels of the call. Chosen by measurement on the 16-core host (a thread's
 * share of 256 × 4096 × 4096 in the engine's calls of 64 columns: 2.5 TOPS against
 * 1.0–2.4 with the whole k range per block of sums, 1.8–2.3 with 32 or 256 quads,
 * and slower with software prefetch). */
#define AMX_KB 128

/* Sums tiles 0–3 (rows 0–15 / 16–31 of the block by panel 0 / 1) over quads
 * [q0, q1), A's rows a0 and a1 into tiles 4–5, the panels b0 and b1 into 6–7; with
 * one tile of rows (two_a 0) or one panel (two_b 0), only the tiles that exist.
 * Always inlined: tile numbers must be constants. The tests in the loop cost nothing
 * measurable (always predicted, beside a TDPBUSD's 16 cycles). */
static inline __attribute__ ((always_inline)) void
amx_steps (const uint8_t *a0, const uint8_t *a1, long sa, const int8_t *b0, const int8_t *b1,
           size_t q0, size_t q1, int two_a, int two_b)
{
  for (size_t q = q0; q < q1; q += 16)
    {
      _tile_loadd (4, a0 + 4 * q, sa);
      _tile_loadd (6, b0 + 64 * q, 64);
      _tile_dpbusd (0, 4, 6);
      if (two_b)
        {
          _tile_loadd (7, b1 + 64 * q, 64);
          _tile_dpbusd (1, 4, 7);
        }
      if (two_a)
        {
          _tile_loadd (5, a1 + 4 * q, sa);
          _tile_dpbusd (2, 5, 6);
          if (two_b)
            _tile_dpbusd (3, 5, 7);
        }
    }
}

/* The sum tiles of a block from C (c0: its first row, c1: its row 16, sc bytes a
 * row), or zeroed */
static inline __attribute__ ((always_inline)) void
amx_start (const int32_t *c0, const int32_t *c1, long sc, int two_a, int two_b, int from_c)
{
  if (!from_c)
    {
      _tile_zero (0);
      _tile_zero (1);
      _tile_zero (2);
      _tile_zero (3);
      return;
    }
  _tile_loadd (0, c0, sc);
  if (two_b)
    _tile_loadd (1, c0 + 16, sc);
  if (two_a)
    _tile_loadd (2, c1, sc);
  if (two_a && two_b)
    _tile_loadd (3, c1 + 16, sc);
}

static inline __attribute__ ((always_inline)) void
amx_store (int32_t *c0, int32_t *c1, long sc, int two_a, int two_b)
{
  _tile_stored (0, c0, sc);
  if (two_b)
    _tile_stored (1, c0 + 16, sc);
  if (two_a)
    _tile_stored (2, c1, sc);
  if (two_a && two_b)
    _tile_stored (3, c1 + 16, sc);
}

static void
gemm_u8s8_amx (const uint8_t *a, size_t lda, size_t m, const int8_t *b, size_t ldbp,
               size_t n, size_t kq, int32_t *c, size_t ldc, int add)
{
  const size_t m16 = m / 16 * 16, kq16 = kq / 16 * 16, n16 = n / 16 * 16;
  const long sa = (long) lda, sc = (long) (ldc * sizeof (int32_t));

  if (m16 == 0 || kq16 == 0 || !piq_cpu_amx_usable ())
    {
      AMX_REST (a, lda, m, b, ldbp, n, kq, c, ldc, add);
      return;
    }
  _tile_loadconfig (&piq_tile_config_16x64);
  for (size_t i = 0; i < m16; i += 32)
    {
      const int two_a = i + 16 < m16;
      const uint8_t *a0 = a + i * lda, *a1 = a0 + 16 * lda;
      int32_t *ci = c + i * ldc;

      /* the whole panels: k blocks outer, the sums kept in C between them */
      for (size_t k0 = 0; k0 < kq16; k0 += AMX_KB)
        {
          const size_t k1 = kq16 - k0 > AMX_KB ? k0 + AMX_KB : kq16;
          for (size_t j = 0; j < n16; j += 32)
            {
              const int two_b = j + 16 < n16;
              const int8_t *b0 = b + j / 16 * ldbp;
              amx_start (ci + j, ci + 16 * ldc + j, sc, two_a, two_b, k0 > 0 || add);
              amx_steps (a0, a1, sa, b0, b0 + ldbp, k0, k1, two_a, two_b);
              amx_store (ci + j, ci + 16 * ldc + j, sc, two_a, two_b);
            }
        }
      /* the last panel's columns before n, when it has padding columns (which the
       * tiles sum too and which must not reach C): the whole k range, through a block
       * on the stack */
      if (n16 < n)
        {
          int32_t t[32][16];
          const size_t rows = two_a ? 32 : 16, cols = n - n16;
          amx_start (NULL, NULL, 0, two_a, 0, 0);
          amx_steps (a0, a1, sa, b + n16 / 16 * ldbp, NULL, 0, kq16, two_a, 0);
          amx_store (&t[0][0], &t[16][0], 64, two_a, 0);
          for (size_t r = 0; r < rows; r++)
            {
              int32_t *cr = ci + r * ldc + n16;
              if (add)   /* wrapping, as the tiles' own sums */
                for (size_t s = 0; s < cols; s++)
                  cr[s] = (int32_t) ((uint32_t) cr[s] + (uint32_t) t[r][s]);
              else
                memcpy (cr, t[r], cols * sizeof (int32_t));
            }
        }
    }
  _tile_release ();
  if (kq16 < kq)
    AMX_REST (a + 4 * kq16, lda, m16, b + 64 * kq16, ldbp, n, kq - kq16, c, ldc, 1);
  if (m16 < m)
    AMX_REST (a + m16 * lda, lda, m - m16, b, ldbp, n, kq, c + m16 * ldc, ldc, add);
}

const PiqKernelTable piq_kernels_amx = {
  .name = "amx",
  .level = 60,
  .required = PIQ_AMX_REQUIRED,
  .gemm_u8s8 = gemm_u8s8_amx,
};

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
 * Blocks of 32 rows of A by 32 columns (two panels), four sum tiles held over the whole
 * k range, 16 quads (64 k) a step: two A tiles and two B tiles loaded per four
 * TDPBUSD. What does not fill a tile goes to the VNNI kernel, whose sums are the same
 * integers: rows past a multiple of 16, and the quads past a multiple of 16 (added
 * after the tiles' sums). Sums of full blocks go straight to C (loaded from it first
 * for ADD); a block with columns past n goes through a block on the stack, since the
 * tiles also sum a panel's padding columns, which must not reach C.
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

#include <errno.h>
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#ifdef __linux__
# include <sys/syscall.h>
# include <unistd.h>
#endif

#include "piq-kernels-private.h"
#include "piq-cpu-private.h"

/* The kernel for what the tiles leave: the VNNI unit's where it is built */
#ifdef PIQ_HAVE_AVX512VNNI
PIQ_INTERNAL extern const PiqKernelTable piq_kernels_avx512vnni;
# define AMX_REST piq_kernels_avx512vnni.gemm_u8s8
#else
# define AMX_REST piq_kernels_scalar.gemm_u8s8
#endif

/* LDTILECFG's 64-byte operand: palette 1, tiles 0–7 of 16 rows of 64 bytes. A
 * constant: GCC's _tile_loadconfig tells the compiler it reads 8 bytes of it, so
 * stores to a local one past those could be dropped as dead. */
typedef struct {
  uint8_t  palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t  rows[16];
} AmxConfig;

_Static_assert (sizeof (AmxConfig) == 64, "LDTILECFG reads 64 bytes");

static const AmxConfig amx_config __attribute__ ((aligned (64))) = {
  .palette = 1,
  .colsb = { 64, 64, 64, 64, 64, 64, 64, 64 },
  .rows = { 16, 16, 16, 16, 16, 16, 16, 16 },
};

/* Whether this process may use the tile data: asked once (the permission is the
 * process's; a second ask from a racing thread is answered the same). errno is kept:
 * a kernel call sets no errno. */
static int
amx_permitted (void)
{
  static int state;   /* 0 not asked, 1 granted, −1 refused */
  int s = __atomic_load_n (&state, __ATOMIC_ACQUIRE);

  if (s == 0)
    {
#ifdef __linux__
      int saved = errno;
      /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18), <asm/prctl.h> */
      s = syscall (SYS_arch_prctl, 0x1023, 18) == 0 ? 1 : -1;
      errno = saved;
#else
      s = 1;
#endif
      __atomic_store_n (&state, s, __ATOMIC_RELEASE);
    }
  return s > 0;
}

static void
gemm_u8s8_amx (const uint8_t *a, size_t lda, size_t m, const int8_t *b, size_t ldbp,
               size_t n, size_t kq, int32_t *c, size_t ldc, int add)
{
  const size_t m16 = m / 16 * 16, kq16 = kq / 16 * 16;
  const long sa = (long) lda, sc = (long) (ldc * sizeof (int32_t));

  if (m16 == 0 || kq16 == 0 || !amx_permitted ())
    {
      AMX_REST (a, lda, m, b, ldbp, n, kq, c, ldc, add);
      return;
    }
  _tile_loadconfig (&amx_config);
  for (size_t i = 0; i < m16; i += 32)
    {
      const int two_a = i + 16 < m16;
      const uint8_t *a0 = a + i * lda, *a1 = a0 + 16 * lda;
      for (size_t j = 0; j < n; j += 32)
        {
          const int two_b = j + 16 < n;
          const size_t cols = n - j < 32 ? n - j : 32;
          /* the block's sums go to C directly unless it has columns past n */
          const int direct = cols == (two_b ? 32u : 16u);
          const int8_t *b0 = b + j / 16 * ldbp, *b1 = b0 + ldbp;
          int32_t *c0 = c + i * ldc + j, *c1 = c0 + 16 * ldc;

          /* tiles 0–3 the sums (A rows 0–15 / 16–31 by panel 0 / 1), 4–5 A, 6–7 B */
          if (add && direct)
            {
              _tile_loadd (0, c0, sc);
              if (two_b)
                _tile_loadd (1, c0 + 16, sc);
              if (two_a)
                _tile_loadd (2, c1, sc);
              if (two_a && two_b)
                _tile_loadd (3, c1 + 16, sc);
            }
          else
            {
              _tile_zero (0);
              _tile_zero (1);
              _tile_zero (2);
              _tile_zero (3);
            }
          /* the four cases apart, so the loop over k tests nothing */
          if (two_a && two_b)
            for (size_t q = 0; q < kq16; q += 16)
              {
                _tile_loadd (4, a0 + 4 * q, sa);
                _tile_loadd (6, b0 + 64 * q, 64);
                _tile_dpbusd (0, 4, 6);
                _tile_loadd (7, b1 + 64 * q, 64);
                _tile_dpbusd (1, 4, 7);
                _tile_loadd (5, a1 + 4 * q, sa);
                _tile_dpbusd (2, 5, 6);
                _tile_dpbusd (3, 5, 7);
              }
          else if (two_a)
            for (size_t q = 0; q < kq16; q += 16)
              {
                _tile_loadd (6, b0 + 64 * q, 64);
                _tile_loadd (4, a0 + 4 * q, sa);
                _tile_dpbusd (0, 4, 6);
                _tile_loadd (5, a1 + 4 * q, sa);
                _tile_dpbusd (2, 5, 6);
              }
          else if (two_b)
            for (size_t q = 0; q < kq16; q += 16)
              {
                _tile_loadd (4, a0 + 4 * q, sa);
                _tile_loadd (6, b0 + 64 * q, 64);
                _tile_dpbusd (0, 4, 6);
                _tile_loadd (7, b1 + 64 * q, 64);
                _tile_dpbusd (1, 4, 7);
              }
          else
            for (size_t q = 0; q < kq16; q += 16)
              {
                _tile_loadd (4, a0 + 4 * q, sa);
                _tile_loadd (6, b0 + 64 * q, 64);
                _tile_dpbusd (0, 4, 6);
              }
          if (direct)
            {
              _tile_stored (0, c0, sc);
              if (two_b)
                _tile_stored (1, c0 + 16, sc);
              if (two_a)
                _tile_stored (2, c1, sc);
              if (two_a && two_b)
                _tile_stored (3, c1 + 16, sc);
            }
          else
            {
              int32_t t[32][32];
              const size_t rows = two_a ? 32 : 16;
              _tile_stored (0, &t[0][0], 128);
              if (two_b)
                _tile_stored (1, &t[0][16], 128);
              if (two_a)
                _tile_stored (2, &t[16][0], 128);
              if (two_a && two_b)
                _tile_stored (3, &t[16][16], 128);
              for (size_t r = 0; r < rows; r++)
                {
                  int32_t *cr = c0 + r * ldc;
                  if (add)   /* wrapping, as the tiles' own sums */
                    for (size_t s = 0; s < cols; s++)
                      cr[s] = (int32_t) ((uint32_t) cr[s] + (uint32_t) t[r][s]);
                  else
                    memcpy (cr, t[r], cols * sizeof (int32_t));
                }
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

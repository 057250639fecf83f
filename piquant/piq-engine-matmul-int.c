/* piq-engine-matmul-int.c: the int8 GEMM on quantized operands
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the rest of the engine (docs/matmul.md).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piq-engine-matmul-private.h"
#include "piq-parallel-private.h"

/* ---------------------------------------------------------------------------
 * The int8 GEMM on quantized operands (FBGEMM's and oneDNN's contract):
 *   I[m][n] = Σ_k (a[m][k] − za_m) · (b[n][k] − zb_n)      exact, in 64 bits
 * with A uint8 or int8 per tensor or per row and B int8 or uint8 per tensor or per
 * output channel. A is taken as unsigned bytes ã (int8 + 128, zero point zã) and B
 * as the signed bytes s of its packed copy (piq_engine_pack_gemm_b), so every product
 * is one u8 × s8 micro-kernel (VPDPBUSD), D = Σ ã·s, and the zero points fold
 * through row and column sums:
 *   B stored as signed w = b − zb (s = w):      I = D − zã·Σw
 *   B stored as c = b + offset, z (s = c − 128): I = D + (128 − z)·Σã − zã·Σc + K·zã·z
 * D is summed by the micro-kernel in int32 over at most GEMM_KC k at a time (no
 * overflow: below) and those partials in int64, in k order. */

/* k per micro-kernel call. Its int32 sums cannot overflow: every product is
 * |ã · s| ≤ 255 · 128 = 32640 and every partial sum of the tile, in any order (the
 * SIMD bodies add four or two products at a time, the scalar one, one), holds at
 * most K of them, so |sum| ≤ 32640 · K ≤ 2^31 − 1 for K ≤ 65793 (32640 · 65793 =
 * 2 147 483 520). 16384 keeps a tile's sums in registers over the whole k range of
 * most models' layers (K = 4096, 11008, 14336: no int64 pass at all), while the 32
 * columns of B it reads (512 KiB at most) stay in a 1 MiB L2 for all 256 rows of a
 * work item. Blocks of 64 rows × 256 columns × 512 k (stored and reloaded each
 * tile's 16 accumulators eight times for K = 4096) reached 85–92 % of the VPDPBUSD
 * loop on the 2-core Zen 4 VM, these 96–98 % (bench and perf). */
#define GEMM_KC 16384
/* rows and columns of A and B per work item of the threads */
#define GEMM_MC 256
#define GEMM_NC 64

/* Two blocks of scratch kept for the next call (the micro-kernel's tiles; the sums
 * and A's bytes), taken and given back atomically as the float policy's is: fresh
 * blocks of these sizes come from mmap, and their page faults cost a product of
 * 64 × 512 × 1000 more than its arithmetic (perf). */
typedef struct {
  size_t  size;
  uint8_t pad[56];
  uint8_t data[];
} IntScratch;

_Static_assert (sizeof (IntScratch) == 64, "the data on the block's cache line");

static IntScratch *int_scratch_cache[2];

static IntScratch *
int_scratch_take (int which, size_t bytes, PiqEngineError *e)
{
  IntScratch *s = __atomic_exchange_n (&int_scratch_cache[which], NULL, __ATOMIC_ACQUIRE);

  if (s != NULL && s->size >= bytes)
    return s;
  free (s);
  if (bytes > SIZE_MAX - sizeof *s)
    {
      failf (e, PIQ_E_OVERFLOW, "the int8 GEMM's scratch does not fit in memory");
      return NULL;
    }
  /* on a cache line, as its data (after a 64-byte header): A's rows and the tiles */
  if ((s = piq_engine_alloc_aligned (1, sizeof *s + bytes, "the int8 GEMM's scratch", e)) != NULL)
    s->size = bytes;
  return s;
}

static void
int_scratch_give (int which, IntScratch *s)
{
  free (__atomic_exchange_n (&int_scratch_cache[which], s, __ATOMIC_RELEASE));
}

int
piq_engine_pack_gemm_b (PiqEnginePacked *p, PiqEngineError *e)
{
  uint64_t panels = (p->n + 15) / 16;

  if (p->group != p->k || p->q4)
    return 1;
  p->gemm_kq = (size_t) (p->k + 3) / 4;
  p->gemm_ldbp = 64 * p->gemm_kq;
  if (panels * p->gemm_ldbp == 0)
    return 1;
  if ((p->gemm_b = piq_engine_alloc_aligned (panels, p->gemm_ldbp, "the int8 GEMM's packed weights",
                                             e)) == NULL)
    return 0;
  memset (p->gemm_b, 0, panels * p->gemm_ldbp);
  for (uint64_t j = 0; j < p->n; j++)
    {
      int8_t *col = p->gemm_b + j / 16 * p->gemm_ldbp + 4 * (j % 16);
      for (uint64_t i = 0; i < p->k; i++)
        {
          uint8_t c = p->codes[j * p->k + i];
          col[64 * (i / 4) + i % 4] = p->signed_codes ? (int8_t) c : (int8_t) (c ^ 0x80);
        }
    }
  p->bytes += panels * p->gemm_ldbp;
  return 1;
}

/* The epilogue of a block of D held in int32 (ldd int32 apart): where K fits one
 * chunk, the micro-kernel's sums are D itself. */
typedef void (*GemmEpilogue32) (void *ctx, uint64_t m0, uint64_t m1, uint64_t n0, uint64_t n1,
                                const int32_t *d, size_t ldd);

typedef struct {
  const PiqEngine       *eng;
  const PiqEnginePacked *b;
  uint64_t         m;
  const uint8_t   *au;       /* A as unsigned bytes, rows lda apart, zero past k */
  size_t           lda;
  PiqGemmEpilogue  epilogue;
  GemmEpilogue32   epilogue32;   /* or NULL: every block in int64 */
  void            *ctx;
  uint64_t         mblocks, nblocks, slots;
  PiqRangeFunc     prep;     /* or NULL: A's rows [r0, r0 + count) made ready first */
  void            *prep_ctx;
  uint64_t         prep_rows, prep_tasks;
  uint64_t         prep_left;   /* prep tasks not yet finished */
  uint64_t         next;     /* the next task to take: prep tasks, then items */
  int32_t         *tiles;    /* per slot: GEMM_MC × GEMM_NC int32 partials, then as many int64 sums */
} GemmJob;

/* One work item: D over rows [m0, m1) × columns [n0, n1), then the epilogue. */
static void
gemm_item (const GemmJob *job, int32_t *tile, int64_t *d, uint64_t m0, uint64_t m1, uint64_t n0,
           uint64_t n1)
{
  const PiqEnginePacked *b = job->b;
  const size_t kb = 4 * b->gemm_kq, mc = (size_t) (m1 - m0), nc = (size_t) (n1 - n0);
  const int8_t *bp = kb ? b->gemm_b + n0 / 16 * b->gemm_ldbp : NULL;

  if (job->epilogue32 != NULL && kb <= GEMM_KC)
    {
      /* one chunk: the tile's int32 sums go to the epilogue as they are (perf: the
       * pass into int64 cost 3 % of 256 × 4096 × 4096) */
      if (kb)
        job->eng->kernels->gemm_u8s8 (job->au + m0 * job->lda, job->lda, mc, bp, b->gemm_ldbp,
                                      nc, kb / 4, tile, GEMM_NC, 0);
      else
        for (size_t i = 0; i < mc; i++)
          memset (tile + i * GEMM_NC, 0, nc * sizeof (int32_t));
      job->epilogue32 (job->ctx, m0, m1, n0, n1, tile, GEMM_NC);
      return;
    }
  if (kb == 0)
    for (size_t i = 0; i < mc; i++)
      memset (d + i * GEMM_NC, 0, nc * sizeof (int64_t));
  for (size_t k0 = 0; k0 < kb; k0 += GEMM_KC)
    {
      size_t len = MIN ((size_t) GEMM_KC, kb - k0);
      job->eng->kernels->gemm_u8s8 (job->au + m0 * job->lda + k0, job->lda, mc, bp + 16 * k0,
                                    b->gemm_ldbp, nc, len / 4, tile, GEMM_NC, 0);
      /* each chunk's int32 sums into int64, in k order (the first one stored) */
      for (size_t i = 0; i < mc; i++)
        for (size_t j = 0; j < nc; j++)
          d[i * GEMM_NC + j] = (k0 ? d[i * GEMM_NC + j] : 0) + tile[i * GEMM_NC + j];
    }
  job->epilogue (job->ctx, m0, m1, n0, n1, d, GEMM_NC);
}

/* A wait's step, telling the core it spins */
static inline void
gemm_spin (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__ ("yield");
#endif
}

/* Slot s (its own scratch) takes the next task until none is left: first the
 * chunks of A's rows to prepare (job->prep), then the items, (block of rows, block
 * of columns), so a thread slowed by another process on its core takes fewer
 * instead of the others waiting on a fixed share. One parallel region for both: a
 * second one for A's rows cost a 2-thread product a scheduler time slice whenever
 * another process held a core (256 × 4096 × 4096: 48 ms against 36). An item waits
 * for the prep tasks still running, all of them taken before it. Every item is
 * summed whole by one thread: the threads split M and N, never K, so every output is
 * the same sum for any thread count and any order. */
static void
gemm_slot (void *data, uint64_t slot, uint64_t count)
{
  GemmJob *job = data;
  uint64_t items = job->mblocks * job->nblocks, tasks = job->prep_tasks + items;

  for (uint64_t s = slot; s < slot + count; s++)
    {
      int32_t *tile = job->tiles + s * (GEMM_MC * GEMM_NC * 3);
      int64_t *d = (int64_t *) (void *) (tile + GEMM_MC * GEMM_NC);
      int ready = job->prep_tasks == 0;
      for (uint64_t it; (it = __atomic_fetch_add (&job->next, 1, __ATOMIC_RELAXED)) < tasks;)
        {
          uint64_t mb, nb;
          if (it < job->prep_tasks)
            {
              uint64_t r0 = it * job->prep_rows;
              job->prep (job->prep_ctx, r0, MIN (job->prep_rows, job->m - r0));
              __atomic_fetch_sub (&job->prep_left, 1, __ATOMIC_RELEASE);
              continue;
            }
          while (!ready)
            if (__atomic_load_n (&job->prep_left, __ATOMIC_ACQUIRE) == 0)
              ready = 1;
            else
              gemm_spin ();
          it -= job->prep_tasks;
          mb = it % job->mblocks;
          nb = it / job->mblocks;
          gemm_item (job, tile, d, mb * GEMM_MC, MIN (job->m, (mb + 1) * GEMM_MC), nb * GEMM_NC,
                     MIN (job->b->n, (nb + 1) * GEMM_NC));
        }
    }
}

/* piq_engine_gemm_u8s8, and first (prep non-NULL) prep (prep_ctx, r0, count) over A's
 * rows in the same parallel region (gemm_slot). */
static int
gemm_run (const PiqEngine *eng, const PiqEnginePacked *b, const uint8_t *au, size_t lda,
          uint64_t m, PiqGemmEpilogue epilogue, GemmEpilogue32 epilogue32, void *ctx,
          PiqRangeFunc prep, void *prep_ctx, PiqEngineError *e)
{
  GemmJob job = { eng, b, m, au, lda, epilogue, epilogue32, ctx, 0, 0, 0, prep, prep_ctx, 0, 0,
                  0, 0, NULL };
  unsigned threads = eng->n_threads ? eng->n_threads : piq_parallel_max_threads ();

  if (m == 0 || b->n == 0)
    return 1;
  if (b->gemm_b == NULL && b->k > 0)
    return failf (e, PIQ_E_UNSUPPORTED, "the weights were packed without the int8 GEMM's layout");
  if (m * b->n * b->k < PARALLEL_MIN_MACS)
    threads = 1;
  job.mblocks = (m + GEMM_MC - 1) / GEMM_MC;
  job.nblocks = (b->n + GEMM_NC - 1) / GEMM_NC;
  job.slots = MIN ((uint64_t) threads, job.mblocks * job.nblocks);
  if (prep != NULL)
    {
      /* chunks of about 64 KiB of A */
      job.prep_rows = MAX ((size_t) 1, (size_t) 65536 / MAX (lda, (size_t) 1));
      job.prep_tasks = job.prep_left = (m + job.prep_rows - 1) / job.prep_rows;
    }
  {
    IntScratch *scratch = int_scratch_take (0, job.slots * (GEMM_MC * GEMM_NC * 3 * sizeof (int32_t)),
                                            e);
    if (scratch == NULL)
      return 0;
    job.tiles = (int32_t *) (void *) scratch->data;
    piq_parallel_run (threads, job.slots, 1, 2, gemm_slot, &job);
    int_scratch_give (0, scratch);
  }
  return 1;
}

int
piq_engine_gemm_u8s8 (const PiqEngine *eng, const PiqEnginePacked *b, const uint8_t *au,
                      size_t lda, uint64_t m, PiqGemmEpilogue epilogue, void *ctx,
                      PiqEngineError *e)
{
  return gemm_run (eng, b, au, lda, m, epilogue, NULL, ctx, NULL, NULL, e);
}

typedef struct IntPost IntPost;
/* The steps before and after the sums, over rows of A split across the threads
 * (each row's bytes are the same for any split). */
struct IntPost {
  const uint8_t          *codes;      /* A's codes */
  int                     a_signed;
  uint64_t                k, n;
  size_t                  lda;
  uint8_t                *au;
  int32_t                *za;
  int64_t                *ausum;
  const int64_t          *acc;
  const float            *sa, *bf;
  const PiqEnginePacked  *b;
  const PiqEngineMatmulOut *out;
  uint8_t                *yd;
  size_t                  ldy;
  const PiqDtypeInfo     *yi;        /* Y's dtype */
  int                     overflow;
};
static void int_store_one (const IntPost *p, uint64_t r, uint64_t j, int64_t i);

typedef struct {
  const PiqEnginePacked *b;
  uint64_t       k, n;
  const int32_t *za;       /* zero points of ã */
  const int64_t *ausum;    /* per row: Σ ã */
  int64_t       *acc;      /* [m][n], or NULL: each output stored as it is summed */
  const IntPost *post;     /* where acc is NULL */
} IntJob;

/* Four lanes of 32 bits (generic vectors: SSE2, NEON) for the int32 outputs. */
typedef uint32_t int_v4u __attribute__ ((vector_size (16)));

/* The zero points folded into D (see above), into acc or (acc NULL) stored; D is d64
 * or (NULL) d32. An int32 output stored directly is computed modulo 2^32: every I
 * fits int32 there (direct), and + and · modulo 2^32 map the integers' sums onto
 * theirs, so the wrapped value is I exactly, from D's low 32 bits, as
 *   I = D + su·p[j] + za·q[j],  p = 128 − z, q = K·z − Σc   (p = 0, q = −Σw signed)
 * four lanes at a time, za·q[j] recomputed only where za changes (once per block for
 * A per tensor; with signed weights p = 0 and a row is one add per lane). */
static void
int_epilogue_rows (const IntJob *job, uint64_t m0, uint64_t m1, uint64_t n0, uint64_t n1,
                   const int64_t *d64, const int32_t *d32, size_t ldd)
{
  const PiqEnginePacked *b = job->b;
  const int64_t k = (int64_t) job->k;
  const size_t nc = (size_t) (n1 - n0);

  if (job->acc == NULL && job->post->out->kind == PIQ_MM_OUT_INT32)
    {
      uint32_t p[GEMM_NC], q[GEMM_NC], zq[GEMM_NC];
      uint32_t zq_of = 0;
      int have_zq = 0;
      for (size_t j = 0; j < nc; j++)
        {
          int64_t z = b->signed_codes ? 0 : b->zps[n0 + j];
          p[j] = b->signed_codes ? 0 : (uint32_t) (128 - z);
          q[j] = (uint32_t) (k * z - b->sums[n0 + j]);
        }
      for (uint64_t r = m0; r < m1; r++)
        {
          uint8_t *yr = job->post->yd + r * job->post->ldy + n0 * 4;
          if (r + 8 < m1)
            /* Y's lines eight rows on, for writing: its stores missed the caches
             * (perf; 1 % of 256 × 4096 × 4096) */
            for (size_t l = 0; l < nc * 4; l += 64)
              __builtin_prefetch (yr + 8 * job->post->ldy + l, 1);
          const uint32_t za = (uint32_t) job->za[r], su = (uint32_t) job->ausum[r];
          size_t j = 0;
          if (!have_zq || za != zq_of)
            {
              /* per tensor: once per block */
              for (size_t jj = 0; jj < nc; jj++)
                zq[jj] = za * q[jj];
              zq_of = za;
              have_zq = 1;
            }
          if (d32 != NULL)
            {
              const int32_t *dr = d32 + (r - m0) * ldd;
              for (; j + 4 <= nc; j += 4)
                {
                  int_v4u v, vz, vp;
                  memcpy (&v, dr + j, sizeof v);
                  memcpy (&vz, zq + j, sizeof vz);
                  v += vz;
                  if (!b->signed_codes)
                    {
                      memcpy (&vp, p + j, sizeof vp);
                      v += su * vp;
                    }
                  memcpy (yr + j * 4, &v, sizeof v);
                }
            }
          for (; j < nc; j++)
            {
              uint32_t dv = d32 != NULL ? (uint32_t) d32[(r - m0) * ldd + j]
                                        : (uint32_t) d64[(r - m0) * ldd + j];
              uint32_t v = dv + zq[j] + su * p[j];
              memcpy (yr + j * 4, &v, 4);
            }
        }
      return;
    }
  for (uint64_t r = m0; r < m1; r++)
    {
      int64_t *acc = job->acc != NULL ? job->acc + r * job->n : NULL;
      const size_t dr = (r - m0) * ldd - n0;
      int64_t za = job->za[r], su = job->ausum[r];
      for (uint64_t j = n0; j < n1; j++)
        {
          int64_t i, dv = d32 != NULL ? d32[dr + j] : d64[dr + j];
          if (b->signed_codes)
            i = dv - za * b->sums[j];
          else
            {
              int64_t z = b->zps[j];
              i = dv + (128 - z) * su - za * b->sums[j] + k * za * z;
            }
          if (job->acc != NULL)
            acc[j] = i;
          else
            int_store_one (job->post, r, j, i);
        }
    }
}

static void
int_epilogue (void *data, uint64_t m0, uint64_t m1, uint64_t n0, uint64_t n1, const int64_t *d,
              size_t ldd)
{
  int_epilogue_rows (data, m0, m1, n0, n1, d, NULL, ldd);
}

static void
int_epilogue32 (void *data, uint64_t m0, uint64_t m1, uint64_t n0, uint64_t n1, const int32_t *d,
                size_t ldd)
{
  int_epilogue_rows (data, m0, m1, n0, n1, NULL, d, ldd);
}


typedef uint64_t int_v2q __attribute__ ((vector_size (16)));

/* A's rows as unsigned bytes ã, zero to the quad, and Σ ã: sixteen bytes at a time
 * (generic vectors: SSE2, NEON), the bytes of each 64-bit lane summed in its four
 * 16-bit lanes (at most 2 · 255 a step: 128 steps fit, 128 · 510 < 2^16), then
 * folded (perf: byte by byte, this cost 3 % of 256 × 4096 × 4096). */
static void
int_prep_rows (void *data, uint64_t r0, uint64_t count)
{
  IntPost *p = data;
  const uint64_t lo8 = UINT64_C (0x00ff00ff00ff00ff), lo16 = UINT64_C (0x0000ffff0000ffff);
  const int_v2q flip = (int_v2q) { 0 } + (p->a_signed ? UINT64_C (0x8080808080808080) : 0);

  for (uint64_t r = r0; r < r0 + count; r++)
    {
      int64_t su = 0;
      uint8_t *row = p->au + r * p->lda;
      const uint8_t *src = p->codes + r * p->k;
      uint64_t i = 0;
      memset (row + p->k, 0, p->lda - p->k);
      while (i + 16 <= p->k)
        {
          int_v2q lanes = { 0 };
          uint64_t end = MIN (p->k, i + 16 * 128);
          for (; i + 16 <= end; i += 16)
            {
              int_v2q w;
              memcpy (&w, src + i, sizeof w);
              w ^= flip;
              memcpy (row + i, &w, sizeof w);
              lanes += (w & lo8) + ((w >> 8) & lo8);
            }
          lanes = (lanes & lo16) + ((lanes >> 16) & lo16);
          su += (int64_t) ((lanes[0] & 0xffffffff) + (lanes[0] >> 32) + (lanes[1] & 0xffffffff) +
                           (lanes[1] >> 32));
        }
      for (; i < p->k; i++)
        {
          uint8_t u = p->a_signed ? (uint8_t) (src[i] ^ 0x80) : src[i];
          row[i] = u;
          su += u;
        }
      if (p->a_signed)
        p->za[r] += 128;   /* ã = a + 128 */
      p->ausum[r] = su;
    }
}

/* The int32 value of output [r][j] (added to Y's for ADD), in 64 bits. */
static inline int64_t
int_value (const IntPost *p, uint64_t r, uint64_t j)
{
  int64_t v = p->acc[r * p->n + j];
  if (p->out->add)
    {
      int32_t old;
      memcpy (&old, p->yd + r * p->ldy + j * 4, 4);
      v += old;
    }
  return v;
}

static void
int_check_rows (void *data, uint64_t r0, uint64_t count)
{
  IntPost *p = data;

  for (uint64_t r = r0; r < r0 + count; r++)
    for (uint64_t j = 0; j < p->n; j++)
      {
        int64_t v = int_value (p, r, j);
        if (v < INT32_MIN || v > INT32_MAX)
          {
            __atomic_store_n (&p->overflow, 1, __ATOMIC_RELAXED);
            return;
          }
      }
}

/* Output [r][j] from its exact sum i: int32 (i, plus Y's for ADD, known to fit), float
 * or requantized. */
static void
int_store_one (const IntPost *p, uint64_t r, uint64_t j, int64_t i)
{
  const PiqEngineView *y = &p->out->view;
  const float *bf = p->bf;

      if (p->out->kind == PIQ_MM_OUT_INT32)
        {
          int32_t v;
          if (p->out->add)
            {
              int32_t old;
              memcpy (&old, p->yd + r * p->ldy + j * 4, 4);
              i += old;
            }
          v = (int32_t) i;
          memcpy (p->yd + r * p->ldy + j * 4, &v, 4);
        }
      else
        {
          double v = (double) i * (double) p->sa[r] * (double) p->b->scales[j];
          if (p->out->kind == PIQ_MM_OUT_FLOAT)
            store_float (p->yd + r * p->ldy, j, bf != NULL ? (float) v + bf[j] : (float) v,
                         y->dtype, p->out->add);
          else
            {
              double q;
              if (bf != NULL)
                v += (double) bf[j];
              q = nearbyint (v / p->out->scale) + (double) p->out->zero_point;
              q = isnan (q) ? (double) p->out->zero_point
                  : q < (double) p->yi->min ? (double) p->yi->min
                  : q > (double) p->yi->max ? (double) p->yi->max : q;
              p->yd[r * p->ldy + j] = p->yi->is_signed ? (uint8_t) (int8_t) q : (uint8_t) q;
            }
        }
}

static void
int_store_rows (void *data, uint64_t r0, uint64_t count)
{
  IntPost *p = data;

  for (uint64_t r = r0; r < r0 + count; r++)
    for (uint64_t j = 0; j < p->n; j++)
      int_store_one (p, r, j, p->acc[r * p->n + j]);
}

int
piq_engine_matmul_int (const PiqEngine *eng, const PiqEngineQuant *a, const uint64_t *a_shape,
                       unsigned a_dims, const PiqEnginePacked *b, const PiqEngineView *bias,
                       PiqEngineMatmulOut *out, PiqEngineError *e)
{
  const PiqDtypeInfo *ai = piq_dtype_info (a->f.dtype), *bi = piq_dtype_info (b->q.f.dtype);
  uint64_t m, k = b->k, n = b->n, group, n_a;
  size_t a_codes, a_scales, a_zps;
  float *sa = NULL, *bf = NULL;
  int32_t *za = NULL;
  uint8_t *au = NULL;
  int64_t *ausum = NULL, *acc = NULL;
  size_t lda = piq_engine_gemm_lda (k);
  IntPost post;
  IntScratch *scratch = NULL;
  size_t acc_bytes, au_bytes;
  int direct;
  unsigned threads = eng->n_threads ? eng->n_threads : piq_parallel_max_threads ();
  int ok = 0;

  if (ai == NULL || ai->kind != PIQ_KIND_INT || ai->bits != 8)
    return failf (e, PIQ_E_UNSUPPORTED, "the int8 GEMM takes uint8 or int8 inputs, not %s "
                  "(an input in any other format multiplies weights packed for float "
                  "activations, and signed integers per block, MXINT8, weights packed for "
                  "dynamic int8 per block)", ai != NULL ? ai->name : "this dtype");
  if (b->activation != PIQ_ACT_DYNAMIC_INT8 || bi->bits != 8 || b->group != k)
    return failf (e, PIQ_E_UNSUPPORTED, "the int8 GEMM takes weights of int8 or uint8 per "
                  "tensor or per output channel, packed for dynamic int8 activations (these are "
                  "%s%s)", bi->name, b->activation != PIQ_ACT_DYNAMIC_INT8
                  ? ", packed for float activations" : b->group != k ? " per block" : "");
  if (!check_quant_input (a, a_shape, a_dims, k, &n_a, &a_codes, &a_scales, &a_zps, e))
    return 0;
  m = n_a / k;
  if (a->f.granularity != GRAN_TENSOR && !(a_dims == 2 && a->f.granularity == GRAN_CHANNEL &&
                                           (a->f.axis == 0 || a->f.axis == -2)))
    return failf (e, PIQ_E_UNSUPPORTED, "the int8 GEMM's input has one scale per tensor or per "
                  "row (per channel along axis 0 of a matrix)");
  if (out->kind != PIQ_MM_OUT_INT32 && out->kind != PIQ_MM_OUT_FLOAT &&
      out->kind != PIQ_MM_OUT_CODES)
    return failf (e, PIQ_E_UNSUPPORTED, "unknown output kind %d", out->kind);
  if (out->kind == PIQ_MM_OUT_CODES && out->add)
    return failf (e, PIQ_E_UNSUPPORTED, "requantized outputs are stored, not added to: use "
                  "an int32 or float output to accumulate");
  if (bias != NULL && out->kind == PIQ_MM_OUT_INT32)
    return failf (e, PIQ_E_UNSUPPORTED, "an int32 output is the exact sum: a bias needs a float "
                  "or requantized output");
  {
    /* the output: [..., N] with A's leading extents */
    const PiqEngineView *y = &out->view;
    uint64_t ny;
    size_t y_span;
    const PiqDtypeInfo *yi = piq_dtype_info (y->dtype);
    if (out->kind == PIQ_MM_OUT_FLOAT)
      {
        if (!piq_engine_float_view (y, "output", &ny, &y_span, e))
          return 0;
      }
    else
      {
        int want = out->kind == PIQ_MM_OUT_INT32 ? DT_INT32 : out->code_dtype;
        if (y->dtype != want || yi == NULL || (out->kind == PIQ_MM_OUT_CODES && yi->bits != 8) ||
            !piq_engine_check_shape (y->shape, y->n_dims, &ny, e) ||
            !piq_engine_dtype_size (y->dtype, ny, &y_span, e))
          return failf (e, PIQ_E_UNSUPPORTED, "the output must be int32, a float dtype, or "
                        "uint8/int8 codes with a scale");
        if (y->size < y_span)
          return failf (e, PIQ_E_SIZE, "the output holds %zu bytes, %zu are needed", y->size,
                        y_span);
      }
    if (y->n_dims != a_dims || y->shape[a_dims - 1] != n ||
        memcmp (y->shape, a_shape, (a_dims - 1) * sizeof a_shape[0]) != 0)
      return failf (e, PIQ_E_SIZE, "the output must have the input's shape with %" PRIu64
                    " (the weights' outputs) as its last extent", n);
    if (bias != NULL)
      {
        uint64_t nb;
        size_t b_span;
        if (!piq_engine_float_view (bias, "bias", &nb, &b_span, e))
          return 0;
        if (bias->n_dims != 1 || nb != n)
          return failf (e, PIQ_E_SIZE, "the bias must be a vector of %" PRIu64 " elements, "
                        "not %" PRIu64, n, nb);
        if (!piq_engine_no_overlap (y->data, y_span, "output", bias->data, b_span, "bias", e))
          return 0;
      }
    if (!piq_engine_no_overlap (y->data, y_span, "output", a->codes, a_codes, "input", e) ||
        !piq_engine_no_overlap (y->data, y_span, "output", a->scales, a_scales, "input's scales", e) ||
        !piq_engine_no_overlap (y->data, y_span, "output", a->zero_points, a_zps,
                                "input's zero points", e))
      return 0;
    if (out->kind == PIQ_MM_OUT_CODES && !(out->scale > 0 && isfinite (out->scale)))
      return failf (e, PIQ_E_INVALID_SCALE, "the output scale must be positive and finite, not %g",
                    out->scale);
    if (out->kind == PIQ_MM_OUT_CODES &&
        (out->zero_point < yi->min || out->zero_point > (int64_t) yi->max))
      return failf (e, PIQ_E_INVALID_ZERO_POINT, "zero point %" PRId64 " is outside %s's range",
                    out->zero_point, yi->name);
  }
  if (m == 0)
    return 1;
  if (m * n * k < PARALLEL_MIN_MACS)
    threads = 1;
  memset (&post, 0, sizeof post);

  if ((sa = try_alloc (m, sizeof (float), "the input's scales", e)) == NULL ||
      (za = try_alloc (m, sizeof (int32_t), "the input's zero points", e)) == NULL ||
      (ausum = try_alloc (m, sizeof (int64_t), "the input's sums", e)) == NULL ||
      (bias != NULL && (bf = try_alloc (n, sizeof (float), "the bias", e)) == NULL))
    goto done;
  {
    /* per-row scale and zero point */
    PiqEngineQuant a2 = *a;
    if (a_dims != 2)
      a2.f.axis = 0;
    if (!piq_engine_int_row_params (&a2, m, k, &group, sa, za, e))
      goto done;
  }
  /* Where no sum can leave int32 (|ã − zã| · |s − z| · K < 2^31, s − z the weights'
   * stored values less their zero points) and Y is not added to, or Y is float or
   * requantized, each output is stored as the GEMM sums it: no int64 array of every
   * sum, written then read twice (perf: those passes cost a 256 × 4096 × 4096 product
   * 10 %). Otherwise every int32 sum is checked before the first is written. */
  {
    int64_t amax = 0, bmax = 128;
    for (uint64_t r = 0; r < m; r++)
      {
        int64_t z = (int64_t) za[r] + (ai->is_signed ? 128 : 0);
        amax = MAX (amax, MAX (z < 0 ? -z : z, 255 - z < 0 ? z - 255 : 255 - z));
      }
    for (uint64_t j = 0; !b->signed_codes && j < n; j++)
      {
        int64_t z = b->zps[j];
        bmax = MAX (bmax, MAX (z < 0 ? -z : z, 255 - z < 0 ? z - 255 : 255 - z));
      }
    direct = out->kind != PIQ_MM_OUT_INT32 ||
             (!out->add && k > 0 && (uint64_t) amax * (uint64_t) bmax <= (uint64_t) INT32_MAX / k);
  }
  /* the exact sums and A's bytes: one block of kept scratch */
  if (__builtin_mul_overflow ((size_t) (direct ? 0 : m), (size_t) n, &acc_bytes) ||
      __builtin_mul_overflow (acc_bytes, sizeof (int64_t), &acc_bytes) ||
      __builtin_mul_overflow ((size_t) m, lda + 4, &au_bytes) ||
      acc_bytes > SIZE_MAX - 64 - au_bytes)
    {
      failf (e, PIQ_E_OVERFLOW, "the int8 GEMM's sums do not fit in memory");
      goto done;
    }
  acc_bytes = (acc_bytes + 63) / 64 * 64;   /* A's rows on a cache line */
  if ((scratch = int_scratch_take (1, acc_bytes + au_bytes, e)) == NULL)
    goto done;
  acc = (int64_t *) (void *) scratch->data;
  au = scratch->data + acc_bytes;
  {
    /* A's rows: per-row scale and zero point, as unsigned bytes ã padded with zeros
     * to whole quads of k (the micro-kernel's rows), made by the GEMM's threads
     * before its items (int_prep_rows, gemm_slot) */
    post.codes = a->codes;
    post.a_signed = ai->is_signed;
    post.k = k;
    post.n = n;
    post.lda = lda;
    post.au = au;
    post.za = za;
    post.ausum = ausum;
  }
  if (bias != NULL)
    to_f32 (bias->data, bias->dtype, n, bf);
  {
    const PiqEngineView *y = &out->view;
    size_t y_esize = piq_dtype_info (y->dtype)->bits / 8;

    post.acc = acc;
    post.sa = sa;
    post.bf = bf;
    post.b = b;
    post.out = out;
    post.yd = (uint8_t *) y->data;
    post.ldy = y->row_stride && m > 1 ? y->row_stride : (size_t) n * y_esize;
    post.yi = piq_dtype_info (y->dtype);
  }
  {
    /* the exact sums, blocks of rows and columns split over the threads */
    IntJob job = { b, k, n, za, ausum, direct ? NULL : acc, &post };
    if (!gemm_run (eng, b, au, lda, m, int_epilogue, int_epilogue32, &job, int_prep_rows, &post,
                   e))
      goto done;
  }
  {
    if (!direct && out->kind == PIQ_MM_OUT_INT32)
      {
        /* every sum checked before the first is written */
        piq_parallel_run (threads, m, 1, 2, int_check_rows, &post);
        if (post.overflow)
          for (uint64_t r = 0; r < m; r++)
            for (uint64_t j = 0; j < n; j++)
              {
                int64_t v = int_value (&post, r, j);
                if (v < INT32_MIN || v > INT32_MAX)
                  {
                    failf (e, PIQ_E_OVERFLOW, "output [%" PRIu64 ", %" PRIu64 "] = %" PRId64
                           " does not fit an int32", r, j, v);
                    goto done;
                  }
              }
      }
    if (!direct)
      piq_parallel_run (threads, m, 1, 2, int_store_rows, &post);
  }
  ok = 1;
done:
  free (sa);
  free (za);
  free (ausum);
  if (scratch != NULL)
    int_scratch_give (1, scratch);
  free (bf);
  return ok;
}

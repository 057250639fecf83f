/* piq-bench.c: the hot kernels against the machine's limit for their byte mix
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Plain C on the kernel layer, piq_parallel_run() and OpenMP: no GLib, so the same
 * code runs in `piquant bench` and in the fully static `piquant-bench`.
 *
 * What a row measures (docs/performance.md):
 * - the op: the kernel that PiqQuantizer would call (the ifunc table, or a table
 *   capped with piq_kernels_merge()), driven through piq_parallel_run() with the
 *   library's grain (PIQ_REDUCE_BLOCK) and the library's PiqKernelArgs;
 * - the limit: a streaming kernel over the same buffers and the same thread split
 *   that reads and writes the same bytes per element with a XOR as its only
 *   compute, once with regular stores and once with non-temporal ones; the better
 *   of the two is the limit. Op and limits alternate run by run, so a drift of the
 *   machine (frequency, a neighbour) hits them alike.
 * GB/s counts useful traffic: the bytes the op must read plus the bytes it must
 * write (an ADD reads its destination too), never write-allocate reads.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
# include <immintrin.h>
# define BENCH_X86 1
#else
# define BENCH_X86 0
#endif

#include "piq-bench.h"
#include "piq-kernels-private.h"
#include "piq-cpu-private.h"
#include "piq-formats-private.h"
#include "piq-parallel-private.h"

/* Who speaks in the one-line errors on stderr. */
#define PROG(o) ((o)->program_name != NULL ? (o)->program_name : "piquant-bench")

/* The library's scheduling unit (PIQ_GRAIN of piq-quantizer.c). */
#define GRAIN PIQ_REDUCE_BLOCK

#define DEFAULT_ELEMENTS_LARGE 27264000u   /* 109 MB of f32: far beyond the caches */
#define DEFAULT_ELEMENTS_SMALL 1000000u    /* 4 MB of f32: about the size of L2 */
#define DATA_SEED 42u                      /* the data of `piquant demo` */
#define STOCHASTIC_SEED 42u

/* ---- the hot ops ---- */

typedef enum {
  KIND_QUANTIZE,
  KIND_DEQUANTIZE,
  KIND_REQUANTIZE,
  KIND_MINMAX,
  KIND_BLOCK_QUANTIZE,     /* a code format or block scales: the block_quantize entry */
  KIND_BLOCK_DEQUANTIZE,
} OpKind;

/* The block formats' rows, as piq-quantizer.c block_layout() prepares them for the
 * presets; a per-tensor scale comes from the data (amax / max, compute_params' rule). */
typedef struct {
  int          code, bits, sgn;
  size_t       block;
  PiqScaleKind kind;
  int          high_first, fixed;
} BenchFormat;

enum { BF_FP8, BF_MXFP8, BF_MXFP4, BF_NF4, BF_INT8_BLOCK, BF_INT4_BLOCK };
static const BenchFormat bench_formats[] = {
  [BF_FP8]        = { PIQ_C_FP8_E4M3, 8, 0, 64, PIQ_SCALE_F32, 0, 1 },
  [BF_MXFP8]      = { PIQ_C_FP8_E4M3, 8, 0, 32, PIQ_SCALE_E8M0, 0, 0 },
  [BF_MXFP4]      = { PIQ_C_FP4_E2M1, 4, 0, 32, PIQ_SCALE_E8M0, 0, 0 },
  [BF_NF4]        = { PIQ_C_NF4, 4, 0, 64, PIQ_SCALE_F32, 1, 0 },
  [BF_INT8_BLOCK] = { -1, 8, 1, 64, PIQ_SCALE_F32, 0, 0 },
  [BF_INT4_BLOCK] = { -1, 4, 1, 64, PIQ_SCALE_F32, 0, 0 },
};

/* The buffers an op reads and writes; each is allocated once, for the largest count. */
typedef enum {
  BUF_NONE = -1,
  BUF_F32_SRC = 0,   /* N(0, 1) data */
  BUF_BF16_SRC,      /* the same data in bf16 */
  BUF_CODES,         /* quantized codes: written by quantize, read by dequantize */
  BUF_F32_DST,
  BUF_BF16_DST,
  BUF_SCALES,        /* block scales: at most 4 bytes per 16 elements */
  N_BUFS
} BufId;

static const unsigned buf_bits[N_BUFS] = {
  [BUF_F32_SRC] = 32, [BUF_BF16_SRC] = 16, [BUF_CODES] = 8, [BUF_F32_DST] = 32, [BUF_BF16_DST] = 16,
  [BUF_SCALES] = 2,
};

typedef struct {
  const char *name;
  OpKind      kind;
  int         ft;        /* PIQ_F_*: the float side */
  int         it;        /* PIQ_I_*: the integer type (requantize: its grid) */
  int         round;     /* PIQ_R_* */
  int         store_op;  /* PIQ_OP_* */
  BufId       src, dst;
  unsigned    src_bits;  /* per element */
  unsigned    dst_bits;
  int         rmw;       /* the destination is read as well (ADD) */
  int         target;    /* percent of the limit at every core; 0: none set */
  int         format;    /* block rows: index of bench_formats */
} HotOp;

/* Block rows count the codes' bytes (the limit moves the same); their scales, 1 byte
 * per 32 elements (E8M0) or 4 per 64 (f32), are extra work the limit does not do. */
#define BLOCK_Q(label, f, b, tgt) \
  { .name = "f32->" label, .kind = KIND_BLOCK_QUANTIZE, .ft = PIQ_F_F32, .src = BUF_F32_SRC, \
    .dst = BUF_CODES, .src_bits = 32, .dst_bits = b, .target = tgt, .format = f }
#define BLOCK_D(label, f, b, tgt) \
  { .name = label "->f32 set", .kind = KIND_BLOCK_DEQUANTIZE, .ft = PIQ_F_F32, .src = BUF_CODES, \
    .dst = BUF_F32_DST, .src_bits = b, .dst_bits = 32, .target = tgt, .format = f }

static const HotOp hot_ops[] = {
  { .name = "f32->u8 nearest", .kind = KIND_QUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT8,
    .round = PIQ_R_NEAREST, .src = BUF_F32_SRC, .dst = BUF_CODES, .src_bits = 32, .dst_bits = 8,
    .target = 90 },
  { .name = "f32->u8 stochastic", .kind = KIND_QUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT8,
    .round = PIQ_R_STOCHASTIC, .src = BUF_F32_SRC, .dst = BUF_CODES, .src_bits = 32, .dst_bits = 8,
    .target = 80 },
  { .name = "f32->u4 nearest", .kind = KIND_QUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT4,
    .round = PIQ_R_NEAREST, .src = BUF_F32_SRC, .dst = BUF_CODES, .src_bits = 32, .dst_bits = 4,
    .target = 85 },
  { .name = "f32->u2 nearest", .kind = KIND_QUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT2,
    .round = PIQ_R_NEAREST, .src = BUF_F32_SRC, .dst = BUF_CODES, .src_bits = 32, .dst_bits = 2,
    .target = 85 },
  { .name = "u8->f32 set", .kind = KIND_DEQUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT8,
    .store_op = PIQ_OP_SET, .src = BUF_CODES, .dst = BUF_F32_DST, .src_bits = 8, .dst_bits = 32,
    .target = 85 },
  { .name = "u4->f32 set", .kind = KIND_DEQUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT4,
    .store_op = PIQ_OP_SET, .src = BUF_CODES, .dst = BUF_F32_DST, .src_bits = 4, .dst_bits = 32,
    .target = 85 },
  { .name = "u8->f32 add", .kind = KIND_DEQUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT8,
    .store_op = PIQ_OP_ADD, .src = BUF_CODES, .dst = BUF_F32_DST, .src_bits = 8, .dst_bits = 32,
    .rmw = 1, .target = 90 },
  { .name = "f32 minmax", .kind = KIND_MINMAX, .ft = PIQ_F_F32, .src = BUF_F32_SRC, .dst = BUF_NONE,
    .src_bits = 32, .dst_bits = 0, .target = 90 },
  { .name = "bf16->u8 nearest", .kind = KIND_QUANTIZE, .ft = PIQ_F_BF16, .it = PIQ_I_UINT8,
    .round = PIQ_R_NEAREST, .src = BUF_BF16_SRC, .dst = BUF_CODES, .src_bits = 16, .dst_bits = 8,
    .target = 85 },
  { .name = "u8->bf16 set", .kind = KIND_DEQUANTIZE, .ft = PIQ_F_BF16, .it = PIQ_I_UINT8,
    .store_op = PIQ_OP_SET, .src = BUF_CODES, .dst = BUF_BF16_DST, .src_bits = 8, .dst_bits = 16,
    .target = 85 },
  { .name = "f32 requantize u8 nearest", .kind = KIND_REQUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_UINT8,
    .round = PIQ_R_NEAREST, .store_op = PIQ_OP_SET, .src = BUF_F32_SRC, .dst = BUF_F32_DST,
    .src_bits = 32, .dst_bits = 32 },
  { .name = "f32->i8 nearest", .kind = KIND_QUANTIZE, .ft = PIQ_F_F32, .it = PIQ_I_INT8,
    .round = PIQ_R_NEAREST, .src = BUF_F32_SRC, .dst = BUF_CODES, .src_bits = 32, .dst_bits = 8 },
  BLOCK_Q ("fp8_e4m3", BF_FP8, 8, 70),
  BLOCK_D ("fp8_e4m3", BF_FP8, 8, 70),
  BLOCK_Q ("mxfp8_e4m3", BF_MXFP8, 8, 70),
  BLOCK_D ("mxfp8_e4m3", BF_MXFP8, 8, 70),
  BLOCK_Q ("mxfp4", BF_MXFP4, 4, 0),
  BLOCK_D ("mxfp4", BF_MXFP4, 4, 0),
  BLOCK_Q ("nf4", BF_NF4, 4, 0),
  BLOCK_D ("nf4", BF_NF4, 4, 0),
  BLOCK_Q ("int8_block64", BF_INT8_BLOCK, 8, 70),
  BLOCK_D ("int8_block64", BF_INT8_BLOCK, 8, 70),
  BLOCK_Q ("int4_block64", BF_INT4_BLOCK, 4, 70),
  BLOCK_D ("int4_block64", BF_INT4_BLOCK, 4, 70),
};

#define N_OPS (sizeof hot_ops / sizeof hot_ops[0])

static const int int_bits[PIQ_N_INT] = {
#define BITS_(N, n, i, bits, sgn) [i] = bits,
  PIQ_INT_TYPES (BITS_)
#undef BITS_
};
static const int int_signed[PIQ_N_INT] = {
#define SGN_(N, n, i, bits, sgn) [i] = sgn,
  PIQ_INT_TYPES (SGN_)
#undef SGN_
};

void
piq_bench_list_ops (FILE *out)
{
  for (size_t i = 0; i < N_OPS; i++)
    fprintf (out, "  %s\n", hot_ops[i].name);
}

/* ---- time ---- */

static double
now_s (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void
pause_ms (double ms)
{
  struct timespec ts = { .tv_sec = 0, .tv_nsec = (long) (ms * 1e6) };

  while (nanosleep (&ts, &ts) != 0)
    ;
}

/* How much the machine's other processes got in the way, as a number that grows:
 * the nanoseconds this process's threads spent runnable but waiting for a CPU (the
 * run_delay of /proc/self/task/TID/schedstat, summed), which also catches an OpenMP
 * worker woken late; where Linux does not tell, the involuntary context switches
 * scaled to 1 ms each. */
static double
waited_ns (void)
{
  DIR *dir = opendir ("/proc/self/task");
  struct dirent *e;
  double sum = 0.0;
  int seen = 0;

  if (dir != NULL)
    {
      while ((e = readdir (dir)) != NULL)
        {
          char path[64];
          unsigned long long on_cpu, delay;
          FILE *f;

          if (e->d_name[0] == '.')
            continue;
          snprintf (path, sizeof path, "/proc/self/task/%.20s/schedstat", e->d_name);
          f = fopen (path, "r");
          if (f == NULL)
            continue;
          if (fscanf (f, "%llu %llu", &on_cpu, &delay) == 2)
            {
              sum += (double) delay;
              seen = 1;
            }
          fclose (f);
        }
      closedir (dir);
    }
  if (!seen)
    {
      struct rusage ru;

      if (getrusage (RUSAGE_SELF, &ru) == 0)
        sum = (double) ru.ru_nivcsw * 1e6;
    }
  return sum;
}

/* A timed run was disturbed when its threads waited for a CPU, together, longer than
 * this share of the run. */
#define RUN_WAIT_SHARE 0.05

static unsigned
disturbed (double waited_before, double seconds)
{
  return waited_ns () - waited_before > RUN_WAIT_SHARE * seconds * 1e9;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* Sorts @v in place. */
static double
median (double *v, size_t n)
{
  qsort (v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- kernel arguments, as prepare_args() of piq-quantizer.c fills them ---- */

static void
int_range (int it, int64_t *qmin, int64_t *qmax)
{
  int bits = int_bits[it];

  *qmin = int_signed[it] ? -(INT64_C (1) << (bits - 1)) : 0;
  *qmax = int_signed[it] ? (INT64_C (1) << (bits - 1)) - 1 : (INT64_C (1) << bits) - 1;
}

/* Scale and zero point of the min/max rule with include-zero (the library's
 * default), in binary32 as params_from_minmax() computes them. */
static void
minmax_params (int it, double lo, double hi, double *scale, int64_t *zero_point)
{
  int64_t qmin, qmax, zp;
  double range, s;

  int_range (it, &qmin, &qmax);
  lo = lo < 0.0 ? lo : 0.0;
  hi = hi > 0.0 ? hi : 0.0;
  range = (float) (qmax - qmin);
  s = (float) ((float) (hi - lo) / range);
  if (s < 0x1p-23)
    s = 0x1p-23;
  {
    /* range-checked before the conversion (NaN, from non-finite data, counts as 0) */
    double r = nearbyint ((float) (lo / s));
    __int128 z;
    r = r != r ? 0.0 : r < -0x1p100 ? -0x1p100 : r > 0x1p100 ? 0x1p100 : r;
    z = (__int128) qmin - (__int128) r;
    zp = (int64_t) (z < qmin ? qmin : z > qmax ? qmax : z);
  }
  *scale = s;
  *zero_point = zp;
}

static void
make_args (int it, double scale, int64_t zero_point, PiqKernelArgs *a)
{
  int64_t qmin, qmax;

  memset (a, 0, sizeof *a);
  int_range (it, &qmin, &qmax);
  a->scale_d = scale;
  a->inv_d = 1.0 / scale;
  a->scale_f = (float) scale;
  a->inv_f = 1.0f / a->scale_f;
  a->zero_point = zero_point;
  a->qmin = qmin;
  a->qmax = qmax;
  piq_hash_keys (STOCHASTIC_SEED, &a->key0, &a->key1);
}

/* ---- the op job: element_range() and reduce_range() of piq-quantizer.c ---- */

typedef struct {
  PiqQuantizeFn    quantize;     /* also requantize: same signature */
  PiqDequantizeFn  dequantize;
  PiqMinMaxFn      minmax;
  const uint8_t   *src;
  uint8_t         *dst;
  unsigned         src_bits;
  unsigned         dst_bits;
  PiqKernelArgs    args;
  PiqMinMax       *mm;           /* one per PIQ_REDUCE_BLOCK */
  int              set_output;   /* a SET destination: streamed when large, as the library does */
  PiqBlockQuantizeFn   block_quantize;
  PiqBlockDequantizeFn block_dequantize;
  PiqBlockArgs     block_args;
  uint8_t         *scales;
} OpJob;

static void
op_range (void *data, uint64_t start, uint64_t n)
{
  const OpJob *job = data;

  if (job->minmax != NULL)
    {
      for (uint64_t off = 0; off < n; off += PIQ_REDUCE_BLOCK)
        {
          const uint8_t *src = job->src + (start + off) * job->src_bits / 8;
          size_t len = n - off < PIQ_REDUCE_BLOCK ? n - off : PIQ_REDUCE_BLOCK;

          job->minmax (src, len, &job->mm[(start + off) / PIQ_REDUCE_BLOCK]);
        }
      return;
    }
  if (job->block_quantize != NULL)   /* codes and scales are indexed from element 0 */
    {
      job->block_quantize (&job->block_args, job->src + start * 4, start, n, job->dst,
                           job->scales, NULL);
      return;
    }
  if (job->block_dequantize != NULL)
    {
      job->block_dequantize (&job->block_args, job->src, job->scales, NULL, start, n,
                             job->dst + start * 4, 0);
      return;
    }
  {
    const uint8_t *src = job->src + start * job->src_bits / 8;
    uint8_t *dst = job->dst + start * job->dst_bits / 8;

    if (job->dequantize != NULL)
      job->dequantize (src, dst, n, &job->args);
    else
      job->quantize (src, dst, start, n, &job->args);
  }
}

/* ---- the limit: streaming kernels ----
 * Work goes in chunks of CHUNK elements, whose source and destination bytes are whole
 * 64-byte vectors for every byte mix here (2 to 32 bits per element). A chunk XORs
 * its source vectors into two accumulators and stores their XOR (XORed into the
 * loaded destination for a read-modify-write) into each destination vector, so no
 * load or store can be optimised away. Range starts are multiples of GRAIN elements,
 * hence of 64 bytes: the non-temporal stores are aligned. */

#define CHUNK 256

typedef void (*StreamFn) (const uint8_t *s, uint8_t *d, size_t n_chunks, size_t cs, size_t cd,
                          int rmw, int nt, uint64_t *sink);

#define STREAM_BODY(VT, W, LOAD, XOR, STORE, STREAM, ZERO, FENCE) \
  { \
    VT a0 = ZERO, a1 = ZERO; \
    uint64_t fold[W / 8]; \
    for (size_t c = 0; c < n_chunks; c++, s += cs, d += cd) \
      { \
        VT v; \
        for (size_t k = 0; k < cs; k += 2 * (W)) \
          { \
            a0 = XOR (a0, LOAD (s + k)); \
            a1 = XOR (a1, LOAD (s + k + (W))); \
          } \
        v = XOR (a0, a1); \
        if (nt && rmw) \
          for (size_t k = 0; k < cd; k += (W)) \
            STREAM (d + k, XOR (LOAD (d + k), v)); \
        else if (nt) \
          for (size_t k = 0; k < cd; k += (W)) \
            STREAM (d + k, v); \
        else if (rmw) \
          for (size_t k = 0; k < cd; k += (W)) \
            STORE (d + k, XOR (LOAD (d + k), v)); \
        else \
          for (size_t k = 0; k < cd; k += (W)) \
            STORE (d + k, v); \
      } \
    if (nt) \
      FENCE; \
    STORE ((uint8_t *) fold, XOR (a0, a1)); \
    for (size_t k = 0; k < (W) / 8; k++) \
      *sink ^= fold[k]; \
  }

#if BENCH_X86
# define L512(p)      _mm512_loadu_si512 ((const void *) (p))
# define S512(p, v)   _mm512_storeu_si512 ((void *) (p), (v))
# define N512(p, v)   _mm512_stream_si512 ((void *) (p), (v))
__attribute__ ((target ("avx512f"))) static void
stream_avx512 (const uint8_t *s, uint8_t *d, size_t n_chunks, size_t cs, size_t cd, int rmw, int nt,
               uint64_t *sink)
STREAM_BODY (__m512i, 64, L512, _mm512_xor_si512, S512, N512, _mm512_setzero_si512 (), _mm_sfence ())

# define L256(p)      _mm256_loadu_si256 ((const __m256i *) (p))
# define S256(p, v)   _mm256_storeu_si256 ((__m256i *) (p), (v))
# define N256(p, v)   _mm256_stream_si256 ((__m256i *) (p), (v))
__attribute__ ((target ("avx2"))) static void
stream_avx2 (const uint8_t *s, uint8_t *d, size_t n_chunks, size_t cs, size_t cd, int rmw, int nt,
             uint64_t *sink)
STREAM_BODY (__m256i, 32, L256, _mm256_xor_si256, S256, N256, _mm256_setzero_si256 (), _mm_sfence ())

# define L128(p)      _mm_loadu_si128 ((const __m128i *) (p))
# define S128(p, v)   _mm_storeu_si128 ((__m128i *) (p), (v))
# define N128(p, v)   _mm_stream_si128 ((__m128i *) (p), (v))
static void
stream_sse2 (const uint8_t *s, uint8_t *d, size_t n_chunks, size_t cs, size_t cd, int rmw, int nt,
             uint64_t *sink)
STREAM_BODY (__m128i, 16, L128, _mm_xor_si128, S128, N128, _mm_setzero_si128 (), _mm_sfence ())
#endif

#if !BENCH_X86
/* Elsewhere: 64-bit words through memcpy, regular stores only. */
typedef struct { uint64_t w[2]; } Words;
static inline Words c_load (const uint8_t *p) { Words v; memcpy (&v, p, sizeof v); return v; }
static inline void c_store (uint8_t *p, Words v) { memcpy (p, &v, sizeof v); }
static inline Words c_xor (Words a, Words b) { return (Words) { { a.w[0] ^ b.w[0], a.w[1] ^ b.w[1] } }; }
#define C_ZERO ((Words) { { 0, 0 } })

static void
stream_c (const uint8_t *s, uint8_t *d, size_t n_chunks, size_t cs, size_t cd, int rmw, int nt,
          uint64_t *sink)
STREAM_BODY (Words, 16, c_load, c_xor, c_store, c_store, C_ZERO, (void) 0)
#endif

typedef struct {
  StreamFn     fn;
  const char  *name;
  int          has_nt;
} Streamer;

static Streamer
pick_streamer (void)
{
#if BENCH_X86
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f"))
    return (Streamer) { stream_avx512, "avx512 (64-byte vectors)", 1 };
  if (__builtin_cpu_supports ("avx2"))
    return (Streamer) { stream_avx2, "avx2 (32-byte vectors)", 1 };
  return (Streamer) { stream_sse2, "sse2 (16-byte vectors)", 1 };
#else
  return (Streamer) { stream_c, "c (memcpy, regular stores only)", 0 };
#endif
}

typedef struct {
  StreamFn       fn;
  const uint8_t *src;
  uint8_t       *dst;
  unsigned       src_bits;
  unsigned       dst_bits;
  int            rmw;
  int            nt;
  uint64_t      *sink;           /* one per GRAIN */
} LimitJob;

static void
limit_range (void *data, uint64_t start, uint64_t n)
{
  const LimitJob *job = data;
  const uint8_t *s = job->src + start * job->src_bits / 8;
  /* a pure read stores nothing (cd is 0): any valid pointer will do */
  uint8_t *d = job->dst != NULL ? job->dst + start * job->dst_bits / 8 : (uint8_t *) s;
  size_t n_chunks = n / CHUNK;
  size_t cs = CHUNK * job->src_bits / 8, cd = CHUNK * job->dst_bits / 8;
  uint64_t *sink = &job->sink[start / GRAIN];

  job->fn (s, d, n_chunks, cs, cd, job->rmw, job->nt, sink);

  /* The rest of the last range, < CHUNK elements, byte by byte. */
  {
    uint64_t done = n_chunks * CHUNK;
    size_t s_from = (start + done) * job->src_bits / 8 - start * job->src_bits / 8;
    size_t s_to = (start + n) * job->src_bits / 8 - start * job->src_bits / 8;
    uint8_t acc = 0;

    for (size_t i = s_from; i < s_to; i++)
      acc ^= s[i];
    if (job->dst != NULL)
      {
        size_t d_from = (start + done) * job->dst_bits / 8 - start * job->dst_bits / 8;
        size_t d_to = (start + n) * job->dst_bits / 8 - start * job->dst_bits / 8;

        for (size_t i = d_from; i < d_to; i++)
          d[i] = (uint8_t) ((job->rmw ? d[i] : 0) ^ acc);
      }
    *sink ^= acc;
  }
}

/* ---- data ---- */

static uint64_t
splitmix64_next (uint64_t *state)
{
  uint64_t z = (*state += UINT64_C (0x9E3779B97F4A7C15));

  z = (z ^ (z >> 30)) * UINT64_C (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static double
uniform_open_closed (uint64_t *state)
{
  return (double) ((splitmix64_next (state) >> 11) + 1) * 0x1.0p-53;
}

/* N(0, 1) by Box-Muller from SplitMix64: the data of `piquant demo` for the same seed. */
static void
fill_normal (float *x, uint64_t n, uint64_t seed)
{
  uint64_t state = seed;

  for (uint64_t i = 0; i < n; i += 2)
    {
      double radius = sqrt (-2.0 * log (uniform_open_closed (&state)));
      double angle = 2.0 * M_PI * uniform_open_closed (&state);

      x[i] = (float) (radius * cos (angle));
      if (i + 1 < n)
        x[i + 1] = (float) (radius * sin (angle));
    }
}

static uint16_t
f32_to_bf16 (float f)
{
  uint32_t u;

  memcpy (&u, &f, sizeof u);
  return (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ---- the run ---- */

typedef struct {
  const PiqBenchOptions *o;
  FILE                  *out;
  const PiqKernelTable  *kernels;
  char                   kernels_label[64];
  Streamer               streamer;
  unsigned               max_threads;
  unsigned               repeat;
  uint64_t               elements[PIQ_BENCH_MAX_LIST];
  size_t                 n_elements;
  unsigned               threads[PIQ_BENCH_MAX_LIST];
  size_t                 n_threads;
  uint64_t               max_n;
  uint8_t               *buf[N_BUFS];
  PiqMinMax             *mm;
  uint64_t              *sink;
  double                 lo, hi;     /* of the f32 data */
  double                *t_op, *t_reg, *t_nt;
  int                    first_json_item;
  char                   cpu[128];
} Bench;

static void
read_cpu_model (char *out, size_t size)
{
  static const char *const keys[] = { "model name", "Model" };
  char line[512];
  FILE *f = fopen ("/proc/cpuinfo", "r");

  snprintf (out, size, "unknown");
  if (f == NULL)
    return;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    {
      rewind (f);
      while (fgets (line, sizeof line, f) != NULL)
        {
          size_t len = strlen (keys[k]);
          char *p = line + len, *end;

          if (strncmp (line, keys[k], len) != 0)
            continue;
          p += strspn (p, " \t");
          if (*p != ':')
            continue;
          p += 1 + strspn (p + 1, " \t");
          end = p + strlen (p);
          while (end > p && (end[-1] == '\n' || end[-1] == ' '))
            *--end = '\0';
          snprintf (out, size, "%s", p);
          fclose (f);
          return;
        }
    }
  fclose (f);
}

static void
json_string (FILE *out, const char *s)
{
  fputc ('"', out);
  for (; *s != '\0'; s++)
    {
      if (*s == '"' || *s == '\\')
        fprintf (out, "\\%c", *s);
      else if ((unsigned char) *s < 0x20)
        fprintf (out, "\\u%04x", (unsigned) (unsigned char) *s);
      else
        fputc (*s, out);
    }
  fputc ('"', out);
}

/* Picks the kernel table as select_kernels() of piq-quantizer.c: the ifunc table when
 * the cap leaves this CPU's best level, else the merged table. */
static int
select_kernels (Bench *b, PiqKernelTable *capped)
{
  uint32_t features = piq_cpu_features ();
  int max_level = INT_MAX, best, level;
  PiqKernelTable scratch;

  best = piq_kernels_merge (INT_MAX, features, &scratch);
  if (b->o->simd != NULL)
    {
      size_t n_tables;
      const PiqKernelTable *const *tables = piq_kernel_tables (&n_tables);
      size_t t;

      for (t = 0; t < n_tables; t++)
        if (strcmp (tables[t]->name, b->o->simd) == 0)
          break;
      if (t == n_tables)
        {
          fprintf (stderr, "%s: no kernel table “%s”; this build has:", PROG (b->o), b->o->simd);
          for (t = 0; t < n_tables; t++)
            fprintf (stderr, " %s", tables[t]->name);
          fprintf (stderr, "\n");
          return -1;
        }
      if ((tables[t]->required & features) != tables[t]->required)
        {
          fprintf (stderr, "%s: this CPU cannot run the %s kernels\n", PROG (b->o), tables[t]->name);
          return -1;
        }
      max_level = tables[t]->level;
    }
  else if (b->o->max_level >= 0)
    max_level = b->o->max_level;

  level = piq_kernels_merge (max_level, features, capped);
  if (level == best)
    {
      b->kernels = piq_kernels_best ();
      snprintf (b->kernels_label, sizeof b->kernels_label, "%s (%s)", scratch.name, b->kernels->name);
    }
  else
    {
      b->kernels = capped;
      snprintf (b->kernels_label, sizeof b->kernels_label, "%s (capped, best is %s)",
                capped->name, scratch.name);
    }
  return 0;
}

static int
allocate (Bench *b)
{
  uint64_t n = b->max_n;
  uint64_t n_blocks = (n + GRAIN - 1) / GRAIN;
  float *x;

  for (int i = 0; i < N_BUFS; i++)
    {
      /* whole 64-byte lines, and a spare one: the tail of a sub-byte range */
      size_t bytes = ((n * buf_bits[i] / 8 + 64) | 63) + 1;

      b->buf[i] = aligned_alloc (64, bytes);
      if (b->buf[i] == NULL)
        return -1;
      memset (b->buf[i], 0, bytes);   /* fault every page in now, not in a timed run */
    }
  b->mm = calloc (n_blocks, sizeof *b->mm);
  b->sink = calloc (n_blocks, sizeof *b->sink);
  b->t_op = calloc (b->repeat, sizeof (double));
  b->t_reg = calloc (b->repeat, sizeof (double));
  b->t_nt = calloc (b->repeat, sizeof (double));
  if (b->mm == NULL || b->sink == NULL || b->t_op == NULL || b->t_reg == NULL || b->t_nt == NULL)
    return -1;

  x = (float *) b->buf[BUF_F32_SRC];
  fill_normal (x, n, DATA_SEED);
  b->lo = INFINITY;
  b->hi = -INFINITY;
  for (uint64_t i = 0; i < n; i++)
    {
      uint16_t h = f32_to_bf16 (x[i]);

      memcpy (b->buf[BUF_BF16_SRC] + 2 * i, &h, 2);
      b->lo = x[i] < b->lo ? x[i] : b->lo;
      b->hi = x[i] > b->hi ? x[i] : b->hi;
    }
  return 0;
}

static void
release (Bench *b)
{
  for (int i = 0; i < N_BUFS; i++)
    free (b->buf[i]);
  free (b->mm);
  free (b->sink);
  free (b->t_op);
  free (b->t_reg);
  free (b->t_nt);
}

static void
prepare_op (const Bench *b, const HotOp *op, OpJob *job)
{
  double scale;
  int64_t zp;

  memset (job, 0, sizeof *job);
  job->src = b->buf[op->src];
  job->dst = op->dst != BUF_NONE ? b->buf[op->dst] : NULL;
  job->src_bits = op->src_bits;
  job->dst_bits = op->dst_bits;
  job->mm = b->mm;
  if (op->kind == KIND_BLOCK_QUANTIZE || op->kind == KIND_BLOCK_DEQUANTIZE)
    {
      const BenchFormat *f = &bench_formats[op->format];
      PiqBlockArgs *a = &job->block_args;
      double amax = fabs (b->lo) > fabs (b->hi) ? fabs (b->lo) : fabs (b->hi);

      a->code = f->code;
      a->bits = f->bits;
      a->qmin = f->code < 0 ? -(1 << (f->bits - 1)) : 0;
      a->qmax = f->code < 0 ? (1 << (f->bits - 1)) - 1 : 0;
      a->block = f->block;
      a->scale_kind = f->kind;
      a->rule = PIQ_BRULE_ABS_MAX;
      a->e8m0_rule = PIQ_E8M0_FLOOR;
      a->saturate = 1;
      a->high_first = f->high_first;
      a->fixed = f->fixed;
      a->scale = f->code >= 0 ? (float) amax / piq_minifloats[f->code].max : 1.0f;
      job->scales = b->buf[BUF_SCALES];
      if (op->kind == KIND_BLOCK_QUANTIZE)
        {
          job->block_quantize = b->kernels->block_quantize;
          job->set_output = 1;
        }
      else
        {
          /* codes and scales to decode: the quantize of the same format, untimed */
          job->block_quantize = b->kernels->block_quantize;
          job->src = b->buf[BUF_F32_SRC];
          job->dst = b->buf[BUF_CODES];
          op_range (job, 0, b->max_n);
          job->block_quantize = NULL;
          job->src = b->buf[BUF_CODES];
          job->dst = b->buf[BUF_F32_DST];
          job->block_dequantize = b->kernels->block_dequantize;
          job->set_output = 1;
        }
      return;
    }
  if (op->kind != KIND_MINMAX)
    {
      minmax_params (op->it, b->lo, b->hi, &scale, &zp);
      make_args (op->it, scale, zp, &job->args);
    }
  switch (op->kind)
    {
    case KIND_QUANTIZE:
      job->quantize = b->kernels->quantize[op->ft][op->it][op->round];
      job->set_output = 1;
      break;
    case KIND_DEQUANTIZE:
      job->dequantize = b->kernels->dequantize[op->it][op->ft][op->store_op];
      job->set_output = op->store_op == PIQ_OP_SET;
      break;
    case KIND_REQUANTIZE:
      job->quantize = b->kernels->requantize[op->ft][op->round][op->store_op];
      job->set_output = op->store_op == PIQ_OP_SET;
      break;
    case KIND_MINMAX:
      job->minmax = b->kernels->minmax[op->ft];
      break;
    case KIND_BLOCK_QUANTIZE:
    case KIND_BLOCK_DEQUANTIZE:
      break;   /* prepared above */
    }
}

static double
time_op (unsigned threads, uint64_t n, OpJob *job)
{
  double t0;

  /* the library's rule (piq-quantizer.c) */
  job->args.stream = job->set_output && n * (job->src_bits + job->dst_bits) / 8 >= PIQ_STREAM_MIN_BYTES;
  job->block_args.stream = job->args.stream;
  t0 = now_s ();

  piq_parallel_run (threads, n, GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, op_range, job);
  return now_s () - t0;
}

static double
time_limit (unsigned threads, uint64_t n, LimitJob *job)
{
  double t0 = now_s ();

  piq_parallel_run (threads, n, GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, limit_range, job);
  return now_s () - t0;
}

typedef struct {
  double ms_median, ms_min;
  double gbps, limit_gbps, reg_gbps, nt_gbps;
  const char *store;      /* of the limit: "regular", "non-temporal", "read" */
  double ratio;
  unsigned timed;         /* timed runs, op and limits */
  unsigned disturbed;     /* of them, those whose threads waited for a CPU */
  unsigned attempts;
} RowResult;

/* A row with more disturbed runs than this share is measured again, up to
 * ROW_ATTEMPTS times; if it stays so, it is flagged. */
#define ROW_DISTURBED_SHARE 0.2
#define ROW_ATTEMPTS 3

static int
row_disturbed (const Bench *b, const RowResult *r)
{
  return r->disturbed > ROW_DISTURBED_SHARE * r->timed;
}

static void
measure_row_once (Bench *b, const HotOp *op, uint64_t n, unsigned threads, RowResult *r)
{
  OpJob job;
  LimitJob reg = {
    .fn = b->streamer.fn, .src = b->buf[op->src], .dst = op->dst != BUF_NONE ? b->buf[op->dst] : NULL,
    .src_bits = op->src_bits, .dst_bits = op->dst_bits, .rmw = op->rmw, .nt = 0, .sink = b->sink,
  };
  LimitJob nt = reg;
  /* A pure read has no store kind; elsewhere non-temporal stores where the ISA has them. */
  int with_nt = b->streamer.has_nt && op->dst != BUF_NONE;
  double bytes = (double) n * (op->src_bits + op->dst_bits * (op->rmw ? 2 : 1)) / 8.0;
  double op_min = INFINITY, reg_med, nt_med;

  nt.nt = 1;
  prepare_op (b, op, &job);

  /* warm: caches, TLB, the thread team; untimed */
  time_op (threads, n, &job);
  time_limit (threads, n, &reg);
  if (with_nt)
    time_limit (threads, n, &nt);
  time_op (threads, n, &job);

  /* Interleaved run by run, so that a drift of the machine hits every side alike.
   * Non-temporal stores evict the destination from the caches: an untimed regular
   * pass follows them, so that the op and the regular limit always start from the
   * same cache state, and these two take turns at going first. */
  r->disturbed = 0;
  r->timed = (with_nt ? 3 : 2) * b->repeat;
  for (unsigned i = 0; i < b->repeat; i++)
    {
      double w;

      if (with_nt)
        {
          w = waited_ns ();
          b->t_nt[i] = time_limit (threads, n, &nt);
          r->disturbed += disturbed (w, b->t_nt[i]);
          time_limit (threads, n, &reg);
        }
      for (int k = 0; k < 2; k++)
        {
          w = waited_ns ();
          if ((k + i) % 2 == 0)
            {
              b->t_op[i] = time_op (threads, n, &job);
              r->disturbed += disturbed (w, b->t_op[i]);
            }
          else
            {
              b->t_reg[i] = time_limit (threads, n, &reg);
              r->disturbed += disturbed (w, b->t_reg[i]);
            }
        }
    }

  for (unsigned i = 0; i < b->repeat; i++)
    op_min = b->t_op[i] < op_min ? b->t_op[i] : op_min;
  r->ms_median = median (b->t_op, b->repeat) * 1e3;
  r->ms_min = op_min * 1e3;
  reg_med = median (b->t_reg, b->repeat);
  nt_med = with_nt ? median (b->t_nt, b->repeat) : INFINITY;
  r->gbps = bytes / (r->ms_median * 1e-3) / 1e9;
  r->reg_gbps = bytes / reg_med / 1e9;
  r->nt_gbps = with_nt ? bytes / nt_med / 1e9 : NAN;
  if (!with_nt)
    {
      r->limit_gbps = r->reg_gbps;
      r->store = op->dst == BUF_NONE ? "read" : "regular";
    }
  else if (r->nt_gbps > r->reg_gbps)
    {
      r->limit_gbps = r->nt_gbps;
      r->store = "non-temporal";
    }
  else
    {
      r->limit_gbps = r->reg_gbps;
      r->store = "regular";
    }
  r->ratio = r->gbps / r->limit_gbps;
}

static void
measure_row (Bench *b, const HotOp *op, uint64_t n, unsigned threads, RowResult *r)
{
  for (unsigned a = 1; a <= ROW_ATTEMPTS; a++)
    {
      measure_row_once (b, op, n, threads, r);
      r->attempts = a;
      if (!row_disturbed (b, r))
        break;
    }
}

/* ---- output of the op rows ---- */

static const char *
thousands (uint64_t v, char *buf, size_t size)
{
  char digits[32];
  size_t len, o = 0;

  snprintf (digits, sizeof digits, "%llu", (unsigned long long) v);
  len = strlen (digits);
  for (size_t i = 0; i < len && o + 2 < size; i++)
    {
      if (i > 0 && (len - i) % 3 == 0)
        buf[o++] = ',';
      buf[o++] = digits[i];
    }
  buf[o] = '\0';
  return buf;
}

static void
print_table_header (const Bench *b, uint64_t n)
{
  char num[40];

  fprintf (b->out, "\nN = %s elements (f32 source %.1f MB)\n", thousands (n, num, sizeof num),
           (double) n * 4 / 1e6);
  fprintf (b->out, "%-26s %3s %6s %9s %9s %8s %8s %-12s %7s %-7s %8s\n",
           "op", "thr", "B/elem", "ms med", "ms min", "GB/s", "limit", "(store)", "ratio", "target",
           "regular");
}

/* The targets hold at every core: only those rows are flagged. */
static int
below_target (const Bench *b, const HotOp *op, unsigned threads, const RowResult *r)
{
  return op->target > 0 && threads == b->max_threads && r->ratio * 100 < op->target;
}

static void
print_row (const Bench *b, const HotOp *op, unsigned threads, const RowResult *r)
{
  char target[16] = "-";
  double bpe = (op->src_bits + op->dst_bits * (op->rmw ? 2 : 1)) / 8.0;

  if (op->target > 0)
    snprintf (target, sizeof target, ">=%d%%%s", op->target,
              below_target (b, op, threads, r) ? " *" : "");
  fprintf (b->out, "%-26s %3u %6.3g %9.3f %9.3f %8.2f %8.2f %-12s %6.1f%% %-7s %8.2f%s\n",
           op->name, threads, bpe, r->ms_median, r->ms_min, r->gbps, r->limit_gbps, r->store,
           r->ratio * 100, target, r->reg_gbps, row_disturbed (b, r) ? "  ~" : "");
  fflush (b->out);
}

static void
json_number (FILE *out, double v)
{
  if (isfinite (v))
    fprintf (out, "%.6g", v);
  else
    fprintf (out, "null");
}

static void
json_row (Bench *b, const HotOp *op, uint64_t n, unsigned threads, const RowResult *r)
{
  FILE *out = b->out;

  fprintf (out, "%s\n    {\"op\": ", b->first_json_item ? "" : ",");
  b->first_json_item = 0;
  json_string (out, op->name);
  fprintf (out, ", \"elements\": %llu, \"threads\": %u, \"bytes_read\": %.0f, \"bytes_written\": %.0f",
           (unsigned long long) n, threads,
           (double) n * (op->src_bits + (op->rmw ? op->dst_bits : 0)) / 8.0,
           (double) n * op->dst_bits / 8.0);
  fprintf (out, ", \"ms_median\": ");
  json_number (out, r->ms_median);
  fprintf (out, ", \"ms_min\": ");
  json_number (out, r->ms_min);
  fprintf (out, ", \"gbps\": ");
  json_number (out, r->gbps);
  fprintf (out, ", \"limit_gbps\": ");
  json_number (out, r->limit_gbps);
  fprintf (out, ", \"limit_store\": \"%s\", \"limit_regular_gbps\": ", r->store);
  json_number (out, r->reg_gbps);
  fprintf (out, ", \"limit_nontemporal_gbps\": ");
  json_number (out, r->nt_gbps);
  fprintf (out, ", \"ratio\": ");
  json_number (out, r->ratio);
  fprintf (out, ", \"target\": ");
  if (op->target > 0)
    fprintf (out, "%.2f", op->target / 100.0);
  else
    fprintf (out, "null");
  fprintf (out, ", \"disturbed_runs\": %u, \"timed_runs\": %u, \"attempts\": %u, \"disturbed\": %s",
           r->disturbed, r->timed, r->attempts,
           row_disturbed (b, r) ? "true" : "false");
  fprintf (out, ", \"below_target\": %s}",
           op->target > 0 && threads == b->max_threads ? (below_target (b, op, threads, r) ? "true" : "false")
           : "null");
  fflush (out);
}

/* ---- per-call overhead and the crossover ---- */

typedef struct {
  Bench                *b;
  const PiqKernelTable *k;
  OpJob                 job;   /* f32 -> u8 nearest */
} Overhead;

#define OVERHEAD_BATCHES 1001

enum { CALL_DIRECT, CALL_RUN_ALL, CALL_RUN_ONE, CALL_API, N_CALLS };

/* The time per call, in ns, of a batch of @calls calls of @what on @n elements:
 * the kernel itself, piq_parallel_run() with n_threads 0 (the library's default)
 * or 1, or the public API. */
static void
time_call_batch (Overhead *ov, int what, uint64_t n, unsigned calls, double *out_ns)
{
  const PiqBenchApi *api = ov->b->o->api;
  const float *src = (const float *) ov->job.src;
  uint8_t *dst = ov->job.dst;
  double t0 = now_s ();

  for (unsigned c = 0; c < calls; c++)
    switch (what)
      {
      case CALL_DIRECT:
        ov->job.quantize (src, dst, 0, n, &ov->job.args);
        break;
      case CALL_RUN_ALL:
        piq_parallel_run (0, n, GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, op_range, &ov->job);
        break;
      case CALL_RUN_ONE:
        piq_parallel_run (1, n, GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, op_range, &ov->job);
        break;
      default:
        api->quantize_u8 (api->user_data, src, n, dst);
        break;
      }
  *out_ns = (now_s () - t0) / calls * 1e9;
}

typedef struct {
  uint64_t n;
  double   ns[N_CALLS];     /* median per call; NaN where not measured */
} OverheadResult;

static int
measure_overhead (Bench *b, OverheadResult res[2])
{
  static const uint64_t sizes[2] = { 64, 4096 };
  const PiqBenchApi *api = b->o->api;
  Overhead ov = { .b = b };
  double *t[N_CALLS];
  int n_what = api != NULL ? N_CALLS : N_CALLS - 1;
  int ok = 1;

  prepare_op (b, &hot_ops[0], &ov.job);
  if (api != NULL && api->setup (api->user_data, ov.job.args.scale_d, ov.job.args.zero_point) != 0)
    {
      fprintf (stderr, "%s: the %s path failed to set up\n", PROG (b->o), api->name);
      return -1;
    }
  for (int w = 0; w < N_CALLS; w++)
    {
      t[w] = calloc (OVERHEAD_BATCHES, sizeof (double));
      ok = ok && t[w] != NULL;
    }
  if (!ok)
    {
      for (int w = 0; w < N_CALLS; w++)
        free (t[w]);
      return -1;
    }

  for (int s = 0; s < 2; s++)
    {
      uint64_t n = sizes[s];
      /* about 10 µs per batch: far above the clock's own cost */
      unsigned calls = n <= 64 ? 200 : 20;

      for (int w = 0; w < n_what; w++)
        time_call_batch (&ov, w, n, calls * 10, &t[w][0]);   /* warm */
      for (unsigned i = 0; i < OVERHEAD_BATCHES; i++)
        for (int w = 0; w < n_what; w++)
          time_call_batch (&ov, (w + i) % n_what, n, calls, &t[(w + i) % n_what][i]);
      res[s].n = n;
      for (int w = 0; w < N_CALLS; w++)
        res[s].ns[w] = w < n_what ? median (t[w], OVERHEAD_BATCHES) : NAN;
    }
  for (int w = 0; w < N_CALLS; w++)
    free (t[w]);
  return 0;
}

#define CROSS_MIN   4096u
#define CROSS_MAX   (1u << 20)
#define CROSS_HOT   201
#define CROSS_IDLE  31
#define CROSS_FINE  256           /* a grain fine enough to split even 4096 elements */
#define IDLE_MS     2.0

typedef struct {
  uint64_t n;
  double   one_us, all_us, all_fine_us, one_idle_us, all_idle_us;
} CrossPoint;

/* µs per call, median of @samples calls through piq_parallel_run() with min_parallel 0
 * (the split is forced, whatever PIQ_PARALLEL_MIN_ELEMENTS says); with @idle_ms the
 * team has slept before each call, as between the calls of a real program. */
static double
time_cross (OpJob *job, unsigned threads, uint64_t n, uint64_t grain, unsigned samples,
            double idle_ms, double *scratch)
{
  for (unsigned i = 0; i < samples; i++)
    {
      double t0;

      if (idle_ms > 0)
        pause_ms (idle_ms);
      t0 = now_s ();
      piq_parallel_run (threads, n, grain, 0, op_range, job);
      scratch[i] = (now_s () - t0) * 1e6;
    }
  return median (scratch, samples);
}

static size_t
measure_crossover (Bench *b, CrossPoint *pts, size_t max_pts)
{
  OpJob job;
  double scratch[CROSS_HOT];
  size_t n_pts = 0;
  unsigned all = b->max_threads;

  prepare_op (b, &hot_ops[0], &job);
  for (uint64_t n = CROSS_MIN; n <= CROSS_MAX && n <= b->max_n && n_pts < max_pts; n *= 2)
    {
      CrossPoint *p = &pts[n_pts++];

      p->n = n;
      time_cross (&job, all, n, GRAIN, 20, 0, scratch);   /* warm */
      p->one_us = time_cross (&job, 1, n, GRAIN, CROSS_HOT, 0, scratch);
      p->all_us = time_cross (&job, all, n, GRAIN, CROSS_HOT, 0, scratch);
      p->all_fine_us = time_cross (&job, all, n, CROSS_FINE, CROSS_HOT, 0, scratch);
      p->one_idle_us = time_cross (&job, 1, n, GRAIN, CROSS_IDLE, IDLE_MS, scratch);
      p->all_idle_us = time_cross (&job, all, n, GRAIN, CROSS_IDLE, IDLE_MS, scratch);
    }
  return n_pts;
}

/* All threads "win" when they take less than this share of one thread's time: a
 * margin above the noise, and below it a split gains too little to be worth it. */
#define CROSS_WIN 0.9

/* The smallest n of the series from which @all wins over @one at every larger n; 0: never. */
static uint64_t
crossover_of (const CrossPoint *pts, size_t n_pts, size_t all_off, size_t one_off)
{
  uint64_t from = 0;

  for (size_t i = n_pts; i-- > 0;)
    {
      double all = *(const double *) ((const char *) &pts[i] + all_off);
      double one = *(const double *) ((const char *) &pts[i] + one_off);

      if (all >= CROSS_WIN * one)
        break;
      from = pts[i].n;
    }
  return from;
}

static void
report_extras (Bench *b, const OverheadResult ovr[2], const CrossPoint *pts, size_t n_pts)
{
  FILE *out = b->out;
  const PiqBenchApi *api = b->o->api;
  uint64_t cross_hot = crossover_of (pts, n_pts, offsetof (CrossPoint, all_us), offsetof (CrossPoint, one_us));
  uint64_t cross_fine = crossover_of (pts, n_pts, offsetof (CrossPoint, all_fine_us), offsetof (CrossPoint, one_us));
  uint64_t cross_idle = crossover_of (pts, n_pts, offsetof (CrossPoint, all_idle_us), offsetof (CrossPoint, one_idle_us));

  if (b->o->json)
    {
      fprintf (out, "\n  ],\n  \"overhead\": {\"op\": \"%s\", \"threads\": 1, \"api\": ", hot_ops[0].name);
      if (api != NULL)
        json_string (out, api->name);
      else
        fprintf (out, "null");
      fprintf (out, ", \"points\": [");
      for (int s = 0; s < 2; s++)
        {
          const double *ns = ovr[s].ns;

          fprintf (out, "%s\n    {\"elements\": %llu, \"kernel_ns\": ", s ? "," : "",
                   (unsigned long long) ovr[s].n);
          json_number (out, ns[CALL_DIRECT]);
          fprintf (out, ", \"parallel_run_ns\": ");
          json_number (out, ns[CALL_RUN_ALL]);
          fprintf (out, ", \"parallel_run_1_thread_ns\": ");
          json_number (out, ns[CALL_RUN_ONE]);
          fprintf (out, ", \"api_ns\": ");
          json_number (out, ns[CALL_API]);
          fprintf (out, ", \"api_overhead_ns\": ");
          json_number (out, ns[CALL_API] - ns[CALL_DIRECT]);
          fprintf (out, ", \"parallel_run_overhead_ns\": ");
          json_number (out, ns[CALL_RUN_ALL] - ns[CALL_DIRECT]);
          fprintf (out, "}");
        }
      fprintf (out, "]},\n  \"crossover\": {\"op\": \"%s\", \"threads\": %u, \"grain\": %u, "
               "\"fine_grain\": %u, \"idle_ms\": %.1f, \"win_below\": %.2f, \"parallel_min_elements\": %u,\n"
               "    \"from_elements\": %llu, \"from_elements_fine_grain\": %llu, "
               "\"from_elements_after_idle\": %llu, \"points\": [",
               hot_ops[0].name, b->max_threads, GRAIN, CROSS_FINE, IDLE_MS, CROSS_WIN, PIQ_PARALLEL_MIN_ELEMENTS,
               (unsigned long long) cross_hot, (unsigned long long) cross_fine,
               (unsigned long long) cross_idle);
      for (size_t i = 0; i < n_pts; i++)
        fprintf (out, "%s\n    {\"elements\": %llu, \"one_thread_us\": %.4g, \"all_threads_us\": %.4g, "
                 "\"all_threads_fine_grain_us\": %.4g, \"one_thread_after_idle_us\": %.4g, "
                 "\"all_threads_after_idle_us\": %.4g}",
                 i ? "," : "", (unsigned long long) pts[i].n, pts[i].one_us, pts[i].all_us,
                 pts[i].all_fine_us, pts[i].one_idle_us, pts[i].all_idle_us);
      fprintf (out, "]}");
      return;
    }

  fprintf (out, "\nPer-call overhead, %s, 1 thread, warm L1 (median of %d batches of "
           "200 calls at n = 64, 20 at n = 4096):\n", hot_ops[0].name, OVERHEAD_BATCHES);
  fprintf (out, "%6s %10s %11s %11s %10s %12s %12s\n", "n", "(a) kernel", "(b) run(0)", "run(1)",
           "(c) API", "(b)-(a) ns", "(c)-(a) ns");
  for (int s = 0; s < 2; s++)
    {
      const double *ns = ovr[s].ns;

      fprintf (out, "%6llu %10.1f %11.1f %11.1f ", (unsigned long long) ovr[s].n, ns[CALL_DIRECT],
               ns[CALL_RUN_ALL], ns[CALL_RUN_ONE]);
      if (api != NULL)
        fprintf (out, "%10.1f %12.1f %12.1f\n", ns[CALL_API], ns[CALL_RUN_ALL] - ns[CALL_DIRECT],
                 ns[CALL_API] - ns[CALL_DIRECT]);
      else
        fprintf (out, "%10s %12.1f %12s\n", "-", ns[CALL_RUN_ALL] - ns[CALL_DIRECT], "-");
    }
  fprintf (out, "ns per call; run(T) = piq_parallel_run (T, …) with the library's grain and "
           "PIQ_PARALLEL_MIN_ELEMENTS (T = 0: every core, the library's default)%s%s\n",
           api != NULL ? "; API = " : "", api != NULL ? api->name : "");

  fprintf (out, "\nCrossover, %s through piq_parallel_run, 1 thread against %u (µs per call, "
           "median; \"idle\": %.0f ms pause before each call):\n", hot_ops[0].name, b->max_threads, IDLE_MS);
  fprintf (out, "%9s %10s %10s %13s %10s %10s\n", "n", "1 thr", "all", "all grain " , "1 idle", "all idle");
  fprintf (out, "%9s %10s %10s %13s %10s %10s\n", "", "", "grain 16K", "256", "", "");
  for (size_t i = 0; i < n_pts; i++)
    fprintf (out, "%9llu %10.2f %10.2f %13.2f %10.2f %10.2f\n", (unsigned long long) pts[i].n,
             pts[i].one_us, pts[i].all_us, pts[i].all_fine_us, pts[i].one_idle_us, pts[i].all_idle_us);
  fprintf (out, "all threads win (under %.0f%% of 1 thread's time, at that n and every larger one) "
           "from n = %llu (library grain), %llu (grain %u), %llu (after idle); 0: nowhere in the series; "
           "PIQ_PARALLEL_MIN_ELEMENTS is %u\n", CROSS_WIN * 100,
           (unsigned long long) cross_hot, (unsigned long long) cross_fine, CROSS_FINE,
           (unsigned long long) cross_idle, PIQ_PARALLEL_MIN_ELEMENTS);
}

/* ---- options ---- */

void
piq_bench_options_init (PiqBenchOptions *o)
{
  memset (o, 0, sizeof *o);
  o->max_level = -1;
}

int
piq_bench_parse_list (const char *text, uint64_t min, uint64_t max, uint64_t *values, size_t *n_values)
{
  const char *p = text;

  if (*p == '\0')
    return -1;
  while (*p != '\0')
    {
      char *end;
      unsigned long long v;

      if (*p < '0' || *p > '9')
        return -1;
      v = strtoull (p, &end, 10);
      if (end == p || v < min || v > max || *n_values >= PIQ_BENCH_MAX_LIST)
        return -1;
      values[(*n_values)++] = v;
      p = end;
      if (*p == ',')
        {
          p++;
          if (*p == '\0')
            return -1;
        }
      else if (*p != '\0')
        return -1;
    }
  return 0;
}

static int
setup_lists (Bench *b)
{
  const PiqBenchOptions *o = b->o;

  if (o->n_elements > 0)
    {
      memcpy (b->elements, o->elements, o->n_elements * sizeof o->elements[0]);
      b->n_elements = o->n_elements;
    }
  else
    {
      b->elements[b->n_elements++] = DEFAULT_ELEMENTS_LARGE;
      b->elements[b->n_elements++] = DEFAULT_ELEMENTS_SMALL;
    }
  if (o->n_threads > 0)
    {
      memcpy (b->threads, o->threads, o->n_threads * sizeof o->threads[0]);
      b->n_threads = o->n_threads;
    }
  else
    {
      for (unsigned t = 1; t < b->max_threads && b->n_threads < PIQ_BENCH_MAX_LIST - 1; t *= 2)
        b->threads[b->n_threads++] = t;
      b->threads[b->n_threads++] = b->max_threads;
    }
  for (size_t i = 0; i < b->n_elements; i++)
    {
      if (b->elements[i] == 0)
        {
          fprintf (stderr, "%s: element counts start at 1\n", PROG (b->o));
          return -1;
        }
      b->max_n = b->elements[i] > b->max_n ? b->elements[i] : b->max_n;
    }
  for (size_t i = 0; i < b->n_threads; i++)
    if (b->threads[i] == 0 || b->threads[i] > PIQ_BENCH_MAX_THREADS)
      {
        fprintf (stderr, "%s: thread counts go from 1 to %u, not %u\n", PROG (b->o),
                 PIQ_BENCH_MAX_THREADS, b->threads[i]);
        return -1;
      }
  /* the crossover needs room for 1M elements, the overhead for 4096 */
  if (!o->skip_overhead && b->max_n < CROSS_MAX)
    b->max_n = CROSS_MAX;
  return 0;
}

static int
op_selected (const Bench *b, const HotOp *op)
{
  return b->o->op_filter == NULL || strstr (op->name, b->o->op_filter) != NULL;
}

int
piq_bench_run (const PiqBenchOptions *o, FILE *out)
{
  static PiqKernelTable capped;   /* large; one run at a time */
  Bench b = { .o = o, .out = out, .first_json_item = 1 };
  size_t n_selected = 0;
  int status = 0;

  b.repeat = o->repeat > 0 ? o->repeat : PIQ_BENCH_DEFAULT_REPEAT;
  if (b.repeat < PIQ_BENCH_MIN_REPEAT)
    {
      fprintf (stderr, "%s: at least %u runs per row give a stable median, not %u\n", PROG (o),
               PIQ_BENCH_MIN_REPEAT, b.repeat);
      return 2;
    }
  for (size_t i = 0; i < N_OPS; i++)
    n_selected += op_selected (&b, &hot_ops[i]);
  if (n_selected == 0)
    {
      fprintf (stderr, "%s: no op matches “%s”; the ops are:\n", PROG (o), o->op_filter);
      piq_bench_list_ops (stderr);
      return 2;
    }
  b.max_threads = piq_parallel_max_threads ();
  if (setup_lists (&b) != 0 || select_kernels (&b, &capped) != 0)
    return 2;
  b.streamer = pick_streamer ();
  read_cpu_model (b.cpu, sizeof b.cpu);

  if (allocate (&b) != 0)
    {
      fprintf (stderr, "%s: out of memory for %llu elements\n", PROG (o), (unsigned long long) b.max_n);
      release (&b);
      return 1;
    }
  /* Valid codes for the dequantize rows, and the thread team started, before any timing. */
  {
    OpJob job;

    prepare_op (&b, &hot_ops[0], &job);
    time_op (b.max_threads, b.max_n, &job);
  }

  if (o->json)
    {
      fprintf (out, "{\n  \"tool\": \"piquant-bench\",\n  \"cpu\": ");
      json_string (out, b.cpu);
      fprintf (out, ",\n  \"kernels\": ");
      json_string (out, b.kernels_label);
      fprintf (out, ",\n  \"limit_kernels\": ");
      json_string (out, b.streamer.name);
      fprintf (out, ",\n  \"max_threads\": %u,\n  \"repeat\": %u,\n  \"grain\": %u,\n"
               "  \"statistic\": \"median\",\n  \"gb\": 1e9,\n  \"results\": [",
               b.max_threads, b.repeat, GRAIN);
    }
  else
    {
      fprintf (out, "piquant bench: %s, %u threads available\n", b.cpu, b.max_threads);
      fprintf (out, "kernels %s; limit kernels %s; median of %u runs, warm buffers, grain %u\n",
               b.kernels_label, b.streamer.name, b.repeat, GRAIN);
      fprintf (out, "GB/s = (bytes read + bytes written) / median time, 1 GB = 1e9 B; limit = the better of "
               "regular and non-temporal streaming stores over the same bytes and threads\n");
    }

  for (size_t e = 0; e < b.n_elements; e++)
    {
      uint64_t n = b.elements[e];

      if (!o->json)
        print_table_header (&b, n);
      for (size_t i = 0; i < N_OPS; i++)
        {
          if (!op_selected (&b, &hot_ops[i]))
            continue;
          for (size_t t = 0; t < b.n_threads; t++)
            {
              RowResult r;

              measure_row (&b, &hot_ops[i], n, b.threads[t], &r);
              if (o->json)
                json_row (&b, &hot_ops[i], n, b.threads[t], &r);
              else
                print_row (&b, &hot_ops[i], b.threads[t], &r);
            }
        }
    }
  if (!o->json)
    fprintf (out, "\n* below target (targets apply at every core: %u threads here); "
             "regular = the limit with regular stores, as the kernels store;\n"
             "~ in more than %.0f%% of the row's timed runs its threads waited for a CPU "
             "(other processes), %d attempts running: rerun on an idle machine\n", b.max_threads,
             ROW_DISTURBED_SHARE * 100, ROW_ATTEMPTS);

  if (!o->skip_overhead)
    {
      OverheadResult ovr[2];
      CrossPoint pts[16];
      size_t n_pts;

      if (measure_overhead (&b, ovr) != 0)
        {
          status = 1;
          if (o->json)
            fprintf (out, "\n  ]");
        }
      else
        {
          n_pts = measure_crossover (&b, pts, sizeof pts / sizeof pts[0]);
          report_extras (&b, ovr, pts, n_pts);
        }
    }
  else if (o->json)
    fprintf (out, "\n  ]");
  if (o->json)
    fprintf (out, "\n}\n");
  fflush (out);
  release (&b);
  return status;
}

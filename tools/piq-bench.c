/* piq-bench.c: every format through the engine, against the machine's limit for its byte mix
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Plain C on the engine (piq-engine.c), piq_parallel_run() and OpenMP: no GLib, so
 * the same code runs in `piquant bench` and in the fully static `piquant-bench`.
 *
 * What a row measures (docs/performance.md):
 * - the op: one call of the engine function that PiqQuantizer calls for it
 *   (piq_engine_quantize, _dequantize, _requantize or _compute_params) with a
 *   PiqEngine of the row's thread count and the kernel table PiqQuantizer would
 *   select (the ifunc table, or one capped with piq_kernels_merge()), on a format
 *   given as a PiqEngineFormat: the library validates, splits and streams it as it
 *   does for any caller;
 * - the limit: a streaming kernel over the same buffers and the same thread split
 *   that reads and writes the same bytes with a XOR as its only compute, once with
 *   regular stores and once with non-temporal ones; the better of the two is the
 *   limit. Op and limits alternate run by run, so a drift of the machine
 *   (frequency, a neighbour) hits them alike;
 * - the matrix products (mm_gemv, mm_gemm, mm_gemm_int8): the GEMV against a read of
 *   the same weight bytes in pieces taken in turn (time_limit_queued), the GEMMs
 *   against register-resident loops' peaks.
 * GB/s counts useful traffic: the bytes the op must read plus the bytes it must
 * write (codes, scales and zero points; an ADD reads its destination too), never
 * write-allocate reads.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
# include <immintrin.h>
# define BENCH_X86 1
#else
# define BENCH_X86 0
#endif

#include "piq-bench.h"
#include "piq-engine-private.h"
#include "piq-cpu-private.h"
#include "piq-parallel-private.h"

/* Who speaks in the one-line errors on stderr. */
#define PROG(o) ((o)->program_name != NULL ? (o)->program_name : "piquant-bench")

/* The engine's scheduling unit for the element kernels (PIQ_GRAIN of piq-engine.c):
 * the limit's ranges and the crossover's default grain. */
#define GRAIN PIQ_REDUCE_BLOCK

#define DEFAULT_ELEMENTS_LARGE 27264000u   /* 109 MB of f32: beyond the caches of most machines */
#define DEFAULT_ELEMENTS_SMALL 1000000u    /* 4 MB of f32: about the size of L2 */
#define DATA_SEED 42u                      /* the data of `piquant demo` */
#define STOCHASTIC_SEED 42u

/* PiqGranularity and PiqScaleRule values (piq-types.h; the engine takes them as ints). */
enum { GRAN_TENSOR = 0, GRAN_CHANNEL = 1, GRAN_BLOCK = 2 };
#define RULE_DEFAULT 7

/* ---- the formats ----
 * The presets of the engine's format table (piq_engine_presets, what
 * piq_format_new_preset makes): no layout is restated here; block geometry, scale
 * bytes, streaming and the split are the engine's. Presets take the default recipe
 * (the format's own rule). */

/* The target of the format rows at every core (issue 16: ≥ 75 % at 16 threads). */
#define PRESET_TARGET 75

/* ---- the hot ops ---- */

typedef enum {
  OP_QUANTIZE,       /* piq_engine_quantize */
  OP_DEQUANTIZE,     /* piq_engine_dequantize, SET or ADD */
  OP_REQUANTIZE,     /* piq_engine_requantize, SET */
  OP_PARAMS,         /* piq_engine_compute_params: the min/max reduction */
  OP_API,            /* a PiqBenchApiRow of the caller */
} OpKind;

/* The per-tensor integer rows: affine per-tensor formats, the min/max rule. */
typedef struct {
  const char *name;
  OpKind      kind;
  const char *float_dtype;
  const char *dtype;
  int         stochastic;
  int         add;
  int         target;        /* percent of the limit at every core; 0: none set */
} IntRow;

static const IntRow int_rows[] = {
  { "f32->u8 nearest",           OP_QUANTIZE,   "f32",  "uint8", 0, 0, 90 },
  { "f32->u8 stochastic",        OP_QUANTIZE,   "f32",  "uint8", 1, 0, 80 },
  { "f32->u4 nearest",           OP_QUANTIZE,   "f32",  "uint4", 0, 0, 85 },
  { "f32->u2 nearest",           OP_QUANTIZE,   "f32",  "uint2", 0, 0, 85 },
  { "u8->f32 set",               OP_DEQUANTIZE, "f32",  "uint8", 0, 0, 85 },
  { "u4->f32 set",               OP_DEQUANTIZE, "f32",  "uint4", 0, 0, 85 },
  { "u8->f32 add",               OP_DEQUANTIZE, "f32",  "uint8", 0, 1, 90 },
  { "f32 minmax",                OP_PARAMS,     "f32",  "uint8", 0, 0, 90 },
  { "bf16->u8 nearest",          OP_QUANTIZE,   "bf16", "uint8", 0, 0, 85 },
  { "u8->bf16 set",              OP_DEQUANTIZE, "bf16", "uint8", 0, 0, 85 },
  { "f32 requantize u8 nearest", OP_REQUANTIZE, "f32",  "uint8", 0, 0, 0 },
  { "f32->i8 nearest",           OP_QUANTIZE,   "f32",  "int8",  0, 0, 0 },
};

#define N_INT_ROWS (sizeof int_rows / sizeof int_rows[0])
/* room for the integer rows and four rows per preset of the engine's table */
#define MAX_OPS (N_INT_ROWS + 4 * 64)

typedef struct {
  char            name[48];
  OpKind          kind;
  int             float_dtype;   /* PiqDtype value of the float side */
  PiqEngineFormat f;
  int             stochastic;
  int             add;
  int             target;
  const PiqBenchApiRow *api;     /* OP_API */
} HotOp;

static HotOp hot_ops[MAX_OPS];
static size_t n_ops, n_engine_ops;

/* A dtype's value by its name in the engine's table; -1 if none. */
static int
dtype_by_name (const char *name)
{
  size_t n;
  const PiqDtypeInfo *t = piq_dtype_table (&n);

  for (size_t i = 0; i < n; i++)
    if (t[i].name != NULL && strcmp (t[i].name, name) == 0)
      return (int) i;
  return -1;
}

static void
add_op (const char *name, OpKind kind, int float_dtype, const PiqEngineFormat *f,
        int stochastic, int add, int target)
{
  HotOp *op;

  if (n_ops == MAX_OPS)
    {
      fprintf (stderr, "piquant-bench: more than %d rows; row %s dropped\n", (int) MAX_OPS, name);
      return;
    }
  op = &hot_ops[n_ops++];
  snprintf (op->name, sizeof op->name, "%s", name);
  op->kind = kind;
  op->float_dtype = float_dtype;
  op->f = *f;
  op->stochastic = stochastic;
  op->add = add;
  op->target = target;
}

/* The rows: the per-tensor integers, then every preset × {quantize nearest,
 * quantize stochastic, dequantize SET, dequantize ADD}. Once per process. */
static void
build_ops (void)
{
  int f32 = dtype_by_name ("f32");

  if (n_ops > 0)
    return;
  for (size_t i = 0; i < N_INT_ROWS; i++)
    {
      const IntRow *r = &int_rows[i];
      PiqEngineFormat f = { .dtype = dtype_by_name (r->dtype), .granularity = GRAN_TENSOR,
                            .scale_dtype = f32, .saturate = 1 };

      add_op (r->name, r->kind, dtype_by_name (r->float_dtype), &f, r->stochastic, r->add,
              r->target);
    }
  size_t n_presets;
  const PiqEnginePreset *presets = piq_engine_presets (&n_presets);

  for (size_t i = 0; i < n_presets; i++)
    {
      const PiqEnginePreset *p = &presets[i];
      PiqEngineFormat f = p->f;
      char name[48];

      snprintf (name, sizeof name, "f32->%s nearest", p->name);
      add_op (name, OP_QUANTIZE, f32, &f, 0, 0, PRESET_TARGET);
      snprintf (name, sizeof name, "f32->%s stochastic", p->name);
      add_op (name, OP_QUANTIZE, f32, &f, 1, 0, PRESET_TARGET);
      snprintf (name, sizeof name, "%s->f32 set", p->name);
      add_op (name, OP_DEQUANTIZE, f32, &f, 0, 0, PRESET_TARGET);
      snprintf (name, sizeof name, "%s->f32 add", p->name);
      add_op (name, OP_DEQUANTIZE, f32, &f, 0, 1, PRESET_TARGET);
    }
  n_engine_ops = n_ops;
}

/* The caller's API rows after the engine's (replacing those of an earlier run). */
static void
add_api_rows (const PiqBenchOptions *o)
{
  PiqEngineFormat none = { .dtype = dtype_by_name ("f32") };

  n_ops = n_engine_ops;
  for (size_t i = 0; i < o->n_api_rows; i++)
    {
      add_op (o->api_rows[i].name, OP_API, dtype_by_name (o->api_rows[i].bf16 ? "bf16" : "f32"),
              &none, 0, 0, o->api_rows[i].target);
      hot_ops[n_ops - 1].api = &o->api_rows[i];
    }
}

void
piq_bench_list_ops (FILE *out)
{
  build_ops ();
  for (size_t i = 0; i < N_INT_ROWS; i++)
    fprintf (out, "  %s\n", hot_ops[i].name);
  size_t n_presets;
  const PiqEnginePreset *presets = piq_engine_presets (&n_presets);

  fprintf (out, "  and, for each preset P (");
  for (size_t i = 0; i < n_presets; i++)
    fprintf (out, "%s%s", i ? ", " : "", presets[i].name);
  fprintf (out, "):\n  f32->P nearest, f32->P stochastic, P->f32 set, P->f32 add\n");
  fprintf (out, "  and the matrix products: gemv F float, gemv F int8, gemm F float, gemm F int8\n"
           "  for F in q4_0, q8_0, nf4, mxfp4, int4 g128, int8 per ch, binary (int8: the integer\n"
           "  formats), gemv binary binary, gemm binary binary (XNOR popcount), and\n"
           "  gemm u8 x s8 -> int32\n");
}

/* Whether @name matches the filter: a comma-separated list of substrings, any of them. */
static int
name_matches (const char *filter, const char *name)
{
  const char *p = filter;

  if (filter == NULL)
    return 1;
  for (;;)
    {
      const char *end = strchr (p, ',');
      size_t len = end != NULL ? (size_t) (end - p) : strlen (p);

      if (len > 0)
        {
          char part[128];

          snprintf (part, sizeof part, "%.*s", (int) (len < sizeof part ? len : sizeof part - 1), p);
          if (strstr (name, part) != NULL)
            return 1;
        }
      if (end == NULL)
        return 0;
      p = end + 1;
    }
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

/* ---- the last-level cache ---- */

typedef struct {
  uint64_t bytes;         /* 0: unknown */
  unsigned level;
  char     shared[64];    /* the CPUs that share it, as sysfs lists them; "" if unknown */
} Llc;

static int
read_line (const char *path, char *buf, size_t size)
{
  FILE *f = fopen (path, "r");
  int ok;

  if (f == NULL)
    return 0;
  ok = fgets (buf, (int) size, f) != NULL;
  fclose (f);
  if (ok)
    buf[strcspn (buf, "\n")] = '\0';
  return ok;
}

/* cpu0's highest data or unified cache (sysfs), else what sysconf says. */
static Llc
read_llc (void)
{
  static Llc llc;
  static int done;

  if (done)
    return llc;
  done = 1;
  for (unsigned i = 0; i < 16; i++)
    {
      char dir[96], path[160], buf[64];
      unsigned level;
      unsigned long long size;
      char unit = 'B';

      snprintf (dir, sizeof dir, "/sys/devices/system/cpu/cpu0/cache/index%u", i);
      snprintf (path, sizeof path, "%s/type", dir);
      if (!read_line (path, buf, sizeof buf))
        break;
      if (strcmp (buf, "Instruction") == 0)
        continue;
      snprintf (path, sizeof path, "%s/level", dir);
      if (!read_line (path, buf, sizeof buf) || sscanf (buf, "%u", &level) != 1 || level < llc.level)
        continue;
      snprintf (path, sizeof path, "%s/size", dir);
      if (!read_line (path, buf, sizeof buf) || sscanf (buf, "%llu%c", &size, &unit) < 1)
        continue;
      size *= unit == 'K' ? 1024ull : unit == 'M' ? 1024ull * 1024 : unit == 'G' ? 1024ull << 20 : 1;
      llc.level = level;
      llc.bytes = size;
      snprintf (path, sizeof path, "%s/shared_cpu_list", dir);
      if (!read_line (path, llc.shared, sizeof llc.shared))
        llc.shared[0] = '\0';
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (llc.bytes == 0)
    {
      static const struct { int name; unsigned level; } sc[] = {
        { _SC_LEVEL3_CACHE_SIZE, 3 }, { _SC_LEVEL2_CACHE_SIZE, 2 },
      };
      for (size_t i = 0; i < sizeof sc / sizeof sc[0] && llc.bytes == 0; i++)
        {
          long v = sysconf (sc[i].name);
          if (v > 0)
            {
              llc.bytes = (uint64_t) v;
              llc.level = sc[i].level;
            }
        }
    }
#endif
  return llc;
}

static const char *
mib (uint64_t bytes, char *buf, size_t size)
{
  double m = (double) bytes / (1024.0 * 1024.0);

  snprintf (buf, size, m >= 10 ? "%.0f MiB" : "%.3g MiB", m);
  return buf;
}

/* ---- the limit: streaming kernels ----
 * A range's source and destination are byte spans in proportion to its elements.
 * Work goes in chunks of about CHUNK elements: a chunk XORs its source vectors into
 * two accumulators and stores their XOR (XORed into the loaded destination for a
 * read-modify-write) into each of its destination vectors, so no load or store can
 * be optimised away. Chunk bounds are whole vectors from the range start, which is
 * 64-byte aligned (a multiple of GRAIN elements of at least 1 bit each, from
 * 64-byte-aligned buffers): the non-temporal stores are aligned. The bytes after the
 * last whole vector of a range go one by one. */

#define CHUNK 256

typedef void (*StreamFn) (const uint8_t *s, size_t ns, uint8_t *d, size_t nd, size_t n_chunks,
                          int rmw, int nt, uint64_t *sink);

#define STREAM_BODY(VT, W, LOAD, XOR, STORE, STREAM, ZERO, FENCE) \
  { \
    VT a0 = ZERO, a1 = ZERO; \
    uint64_t fold[W / 8]; \
    size_t s_end = ns / (2 * (W)) * (2 * (W)), d_end = nd / (W) * (W); \
    uint8_t acc = 0; \
    for (size_t c = 0; c < n_chunks; c++) \
      { \
        VT v; \
        size_t s0 = c * s_end / n_chunks / (2 * (W)) * (2 * (W)); \
        size_t s1 = c + 1 == n_chunks ? s_end : (c + 1) * s_end / n_chunks / (2 * (W)) * (2 * (W)); \
        size_t d0 = c * d_end / n_chunks / (W) * (W); \
        size_t d1 = c + 1 == n_chunks ? d_end : (c + 1) * d_end / n_chunks / (W) * (W); \
        for (size_t k = s0; k < s1; k += 2 * (W)) \
          { \
            a0 = XOR (a0, LOAD (s + k)); \
            a1 = XOR (a1, LOAD (s + k + (W))); \
          } \
        v = XOR (a0, a1); \
        if (nt && rmw) \
          for (size_t k = d0; k < d1; k += (W)) \
            STREAM (d + k, XOR (LOAD (d + k), v)); \
        else if (nt) \
          for (size_t k = d0; k < d1; k += (W)) \
            STREAM (d + k, v); \
        else if (rmw) \
          for (size_t k = d0; k < d1; k += (W)) \
            STORE (d + k, XOR (LOAD (d + k), v)); \
        else \
          for (size_t k = d0; k < d1; k += (W)) \
            STORE (d + k, v); \
      } \
    if (nt) \
      FENCE; \
    for (size_t k = s_end; k < ns; k++) \
      acc ^= s[k]; \
    for (size_t k = d_end; k < nd; k++) \
      d[k] = (uint8_t) ((rmw ? d[k] : 0) ^ acc); \
    STORE ((uint8_t *) fold, XOR (a0, a1)); \
    for (size_t k = 0; k < (W) / 8; k++) \
      *sink ^= fold[k]; \
    *sink ^= acc; \
  }

#if BENCH_X86
# define L512(p)      _mm512_loadu_si512 ((const void *) (p))
# define S512(p, v)   _mm512_storeu_si512 ((void *) (p), (v))
# define N512(p, v)   _mm512_stream_si512 ((void *) (p), (v))
__attribute__ ((target ("avx512f"))) static void
stream_avx512 (const uint8_t *s, size_t ns, uint8_t *d, size_t nd, size_t n_chunks, int rmw,
               int nt, uint64_t *sink)
STREAM_BODY (__m512i, 64, L512, _mm512_xor_si512, S512, N512, _mm512_setzero_si512 (), _mm_sfence ())

# define L256(p)      _mm256_loadu_si256 ((const __m256i *) (p))
# define S256(p, v)   _mm256_storeu_si256 ((__m256i *) (p), (v))
# define N256(p, v)   _mm256_stream_si256 ((__m256i *) (p), (v))
__attribute__ ((target ("avx2"))) static void
stream_avx2 (const uint8_t *s, size_t ns, uint8_t *d, size_t nd, size_t n_chunks, int rmw,
             int nt, uint64_t *sink)
STREAM_BODY (__m256i, 32, L256, _mm256_xor_si256, S256, N256, _mm256_setzero_si256 (), _mm_sfence ())

# define L128(p)      _mm_loadu_si128 ((const __m128i *) (p))
# define S128(p, v)   _mm_storeu_si128 ((__m128i *) (p), (v))
# define N128(p, v)   _mm_stream_si128 ((__m128i *) (p), (v))
static void
stream_sse2 (const uint8_t *s, size_t ns, uint8_t *d, size_t nd, size_t n_chunks, int rmw,
             int nt, uint64_t *sink)
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
stream_c (const uint8_t *s, size_t ns, uint8_t *d, size_t nd, size_t n_chunks, int rmw, int nt,
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
  uint8_t       *dst;            /* NULL: a pure read */
  uint64_t       n;              /* elements */
  size_t         src_bytes;      /* of all n elements */
  size_t         dst_bytes;
  int            rmw;
  int            nt;
  uint64_t      *sink;           /* one per GRAIN */
} LimitJob;

/* The byte where element @e's share of @total starts: 64-byte lines, the end exact. */
static size_t
byte_of (uint64_t e, uint64_t n, size_t total)
{
  if (e >= n)
    return total;
  return (size_t) ((unsigned __int128) e * total / n) / 64 * 64;
}

static void
limit_range (void *data, uint64_t start, uint64_t n)
{
  const LimitJob *job = data;
  size_t s0 = byte_of (start, job->n, job->src_bytes);
  size_t s1 = byte_of (start + n, job->n, job->src_bytes);
  size_t d0 = byte_of (start, job->n, job->dst_bytes);
  size_t d1 = byte_of (start + n, job->n, job->dst_bytes);
  size_t n_chunks = n / CHUNK > 0 ? n / CHUNK : 1;
  /* a pure read stores nothing (nd is 0): any valid pointer will do */
  uint8_t *d = job->dst != NULL ? job->dst + d0 : (uint8_t *) job->src;

  job->fn (job->src + s0, s1 - s0, d, job->dst != NULL ? d1 - d0 : 0, n_chunks, job->rmw,
           job->nt, &job->sink[start / GRAIN]);
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

/* The buffers the ops read and write; each is allocated once, for the largest count.
 * CODES has room for the largest codes + scales + zero points of any row, so that
 * the limit of a row can move all of its quantized bytes through one buffer. */
typedef enum {
  BUF_F32_SRC = 0,   /* N(0, 1) data */
  BUF_BF16_SRC,      /* the same data in bf16 */
  BUF_CODES,         /* written by quantize, read by dequantize */
  BUF_SCALES,        /* per-block scales */
  BUF_ZERO_POINTS,   /* per-block zero points (none of the rows has them today) */
  BUF_F32_DST,
  BUF_BF16_DST,
  N_BUFS
} BufId;

typedef struct {
  const PiqBenchOptions *o;
  FILE                  *out;
  const PiqKernelTable  *kernels;
  int                    level;   /* the kernels' (the merged tables') level */
  char                   kernels_label[64];
  Streamer               streamer;
  Llc                    llc;
  unsigned               max_threads;
  unsigned               repeat;
  uint64_t               elements[PIQ_BENCH_MAX_LIST];
  size_t                 n_elements;
  unsigned               threads[PIQ_BENCH_MAX_LIST];
  size_t                 n_threads;
  uint64_t               max_n;
  int                    f32, bf16;     /* dtype values */
  uint8_t               *buf[N_BUFS];
  size_t                 buf_size[N_BUFS];
  uint64_t              *sink;
  float                 *normal;        /* fill_normal (DATA_SEED): mm_quantize's weights */
  uint64_t               normal_n;
  double                *t_op, *t_reg, *t_nt;
  int                    first_json_item;
  int                    failed;        /* a row's engine call failed */
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
  b->level = level;
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



/* Bytes of the quantized side of @op for @n elements: codes, scales and zero points. */
static int
quant_sizes (const HotOp *op, uint64_t n, size_t *codes, size_t *scales, size_t *zps,
             PiqEngineError *e)
{
  uint64_t shape[1] = { n };

  if (op->kind == OP_API)
    {
      *codes = *scales = *zps = 0;
      return 1;
    }
  return piq_engine_sizes (&op->f, shape, 1, codes, scales, zps, e);
}

static int
allocate (Bench *b)
{
  uint64_t n = b->max_n;
  uint64_t n_blocks = (n + GRAIN - 1) / GRAIN;
  PiqEngineError e;
  float *x;

  if (!piq_engine_dtype_size (b->f32, n, &b->buf_size[BUF_F32_SRC], &e) ||
      !piq_engine_dtype_size (b->bf16, n, &b->buf_size[BUF_BF16_SRC], &e))
    return -1;
  /* an API row may read more than one array of its type (fake quantization's x and
   * dy); the bf16 data is the f32 data rounded, so f32 holds at least as many values */
  for (size_t i = 0; i < b->o->n_api_rows; i++)
    {
      const PiqBenchApiRow *r = &b->o->api_rows[i];
      size_t bytes = (size_t) n * r->read_bytes, values = bytes / (r->bf16 ? 2 : 4);

      if (r->bf16 && bytes > b->buf_size[BUF_BF16_SRC])
        b->buf_size[BUF_BF16_SRC] = bytes;
      if (4 * values > b->buf_size[BUF_F32_SRC])
        b->buf_size[BUF_F32_SRC] = 4 * values;
    }
  b->buf_size[BUF_F32_DST] = b->buf_size[BUF_F32_SRC];
  b->buf_size[BUF_BF16_DST] = b->buf_size[BUF_BF16_SRC];
  for (size_t i = 0; i < n_ops; i++)
    {
      size_t codes, scales, zps;

      if (!quant_sizes (&hot_ops[i], n, &codes, &scales, &zps, &e))
        return -1;
      if (codes + scales + zps > b->buf_size[BUF_CODES])
        b->buf_size[BUF_CODES] = codes + scales + zps;
      if (scales > b->buf_size[BUF_SCALES])
        b->buf_size[BUF_SCALES] = scales;
      if (zps > b->buf_size[BUF_ZERO_POINTS])
        b->buf_size[BUF_ZERO_POINTS] = zps;
    }
  for (int i = 0; i < N_BUFS; i++)
    {
      /* whole 64-byte lines: the limit's vectors never pass the end */
      size_t bytes = (b->buf_size[i] | 63) + 1;

      b->buf[i] = aligned_alloc (64, bytes);
      if (b->buf[i] == NULL)
        return -1;
      memset (b->buf[i], 0, bytes);   /* fault every page in now, not in a timed run */
    }
  b->sink = calloc (n_blocks, sizeof *b->sink);
  b->t_op = calloc (b->repeat, sizeof (double));
  b->t_reg = calloc (b->repeat, sizeof (double));
  b->t_nt = calloc (b->repeat, sizeof (double));
  if (b->sink == NULL || b->t_op == NULL || b->t_reg == NULL || b->t_nt == NULL)
    return -1;

  x = (float *) b->buf[BUF_F32_SRC];
  fill_normal (x, b->buf_size[BUF_F32_SRC] / 4, DATA_SEED);
  for (uint64_t i = 0; i < b->buf_size[BUF_BF16_SRC] / 2; i++)
    {
      uint16_t h = f32_to_bf16 (x[i]);

      memcpy (b->buf[BUF_BF16_SRC] + 2 * i, &h, 2);
    }
  return 0;
}

static void
release (Bench *b)
{
  for (int i = 0; i < N_BUFS; i++)
    free (b->buf[i]);
  free (b->sink);
  free (b->normal);
  free (b->t_op);
  free (b->t_reg);
  free (b->t_nt);
}

/* Everything a row's engine call takes, prepared untimed. */
typedef struct {
  uint64_t        shape[1];
  PiqEngineView   src;          /* the float source (quantize, requantize, compute_params) */
  PiqEngineView   dst;          /* the float destination (dequantize, requantize) */
  PiqEngineQuant  q;            /* the quantized side */
  PiqEngineRecipe recipe;
  LimitJob        limit;        /* regular stores; the row sets nt for the other */
  size_t          float_bytes, quant_bytes;
  double          read_bytes, written_bytes, working_set;
} RowCtx;

static PiqEngine
engine_of (const Bench *b, unsigned threads)
{
  return (PiqEngine) { .n_threads = threads, .kernels = b->kernels };
}

/* The op's one engine call: what PiqQuantizer calls for it. */
static int
run_op (const Bench *b, const HotOp *op, RowCtx *c, unsigned threads, PiqEngineError *e)
{
  PiqEngine eng = engine_of (b, threads);
  double scale;
  int64_t zp;

  switch (op->kind)
    {
    case OP_QUANTIZE:
      return piq_engine_quantize (&eng, &c->recipe, &c->src, &c->q, NULL, e);
    case OP_DEQUANTIZE:
      return piq_engine_dequantize (&eng, &c->q, c->shape, 1, &c->dst, op->add, e);
    case OP_REQUANTIZE:
      return piq_engine_requantize (&eng, &op->f, &c->recipe, &c->src, &c->dst, 0, e);
    case OP_PARAMS:
      return piq_engine_compute_params (&eng, &op->f, &c->recipe, &c->src, &scale, &zp, e);
    case OP_API:
      if (op->api->run (op->api->user_data, c->src.data, c->shape[0],
                        b->buf[op->float_dtype == b->bf16 ? BUF_BF16_DST : BUF_F32_DST],
                        threads) == 0)
        return 1;
      e->code = PIQ_E_INVALID_VALUE;
      snprintf (e->message, sizeof e->message, "%s failed", op->name);
      return 0;
    }
  return 0;
}

/* Views, recipe and limit of @op on @n elements. A per-tensor format quantizes with
 * the scale (and zero point) that compute_params derives from the data, untimed, as
 * a calibrated quantizer does; a dequantize row decodes the codes and scales that a
 * nearest quantize of the same format wrote, untimed. */
static int
prepare_row (const Bench *b, const HotOp *op, uint64_t n, RowCtx *c, PiqEngineError *e)
{
  PiqEngine eng = engine_of (b, b->max_threads);
  static const PiqEngineRecipe recipe_default = PIQ_ENGINE_RECIPE_DEFAULT;
  int bf16 = op->float_dtype == b->bf16;
  size_t codes, scales, zps;

  memset (c, 0, sizeof *c);
  c->shape[0] = n;
  if (!piq_engine_dtype_size (op->float_dtype, n, &c->float_bytes, e) ||
      !quant_sizes (op, n, &codes, &scales, &zps, e))
    return 0;
  c->quant_bytes = codes + scales + zps;
  c->src = (PiqEngineView) { .dtype = op->float_dtype, .n_dims = 1, .shape = { n },
                             .data = b->buf[bf16 ? BUF_BF16_SRC : BUF_F32_SRC],
                             .size = b->buf_size[bf16 ? BUF_BF16_SRC : BUF_F32_SRC] };
  c->dst = (PiqEngineView) { .dtype = op->float_dtype, .n_dims = 1, .shape = { n },
                             .data = b->buf[bf16 ? BUF_BF16_DST : BUF_F32_DST],
                             .size = b->buf_size[bf16 ? BUF_BF16_DST : BUF_F32_DST] };
  c->q.f = op->f;
  c->q.codes = b->buf[BUF_CODES];
  c->q.codes_size = codes;
  c->q.scales = scales ? b->buf[BUF_SCALES] : NULL;
  c->q.scales_size = scales;
  c->q.zero_points = zps ? b->buf[BUF_ZERO_POINTS] : NULL;
  c->q.zero_points_size = zps;
  c->recipe = recipe_default;

  if (op->f.granularity == GRAN_TENSOR && op->kind != OP_PARAMS && op->kind != OP_API)
    {
      double scale;
      int64_t zp;

      if (!piq_engine_compute_params (&eng, &op->f, &c->recipe, &c->src, &scale, &zp, e))
        return 0;
      c->recipe.has_scale = 1;
      c->recipe.scale = scale;
      c->recipe.has_zero_point = piq_engine_has_zero_points (&op->f);
      c->recipe.zero_point = c->recipe.has_zero_point ? zp : 0;
    }
  if (op->kind == OP_DEQUANTIZE &&
      !piq_engine_quantize (&eng, &c->recipe, &c->src, &c->q, NULL, e))
    return 0;
  if (op->stochastic)
    {
      c->recipe.stochastic = 1;
      c->recipe.seed = STOCHASTIC_SEED;
    }

  c->limit = (LimitJob) { .fn = b->streamer.fn, .n = n, .sink = b->sink };
  switch (op->kind)
    {
    case OP_QUANTIZE:
      c->limit.src = c->src.data;
      c->limit.src_bytes = c->float_bytes;
      c->limit.dst = b->buf[BUF_CODES];
      c->limit.dst_bytes = c->quant_bytes;
      break;
    case OP_DEQUANTIZE:
      c->limit.src = b->buf[BUF_CODES];
      c->limit.src_bytes = c->quant_bytes;
      c->limit.dst = (uint8_t *) c->dst.data;
      c->limit.dst_bytes = c->float_bytes;
      c->limit.rmw = op->add;
      break;
    case OP_REQUANTIZE:
      c->limit.src = c->src.data;
      c->limit.src_bytes = c->float_bytes;
      c->limit.dst = (uint8_t *) c->dst.data;
      c->limit.dst_bytes = c->float_bytes;
      break;
    case OP_PARAMS:
      c->limit.src = c->src.data;
      c->limit.src_bytes = c->float_bytes;
      break;
    case OP_API:
      c->limit.src = c->src.data;
      c->limit.src_bytes = (size_t) n * op->api->read_bytes;
      c->limit.dst = op->api->write_bytes ? (uint8_t *) c->dst.data : NULL;
      c->limit.dst_bytes = (size_t) n * op->api->write_bytes;
      break;
    }
  c->read_bytes = (double) c->limit.src_bytes + (c->limit.rmw ? (double) c->limit.dst_bytes : 0);
  c->written_bytes = (double) c->limit.dst_bytes;
  c->working_set = (double) c->limit.src_bytes + (double) c->limit.dst_bytes;
  return 1;
}

static double
time_op (const Bench *b, const HotOp *op, RowCtx *c, unsigned threads, int *ok, PiqEngineError *e)
{
  double t0 = now_s ();

  *ok = run_op (b, op, c, threads, e) && *ok;
  return now_s () - t0;
}

static double
time_limit (unsigned threads, uint64_t n, LimitJob *job)
{
  double t0 = now_s ();

  piq_parallel_run (threads, n, GRAIN, PIQ_PARALLEL_MIN_ELEMENTS, limit_range, job);
  return now_s () - t0;
}

/* The GEMV's limit: the same bytes handed out in pieces of LIMIT_PIECE bytes to
 * whichever thread is free, as the matrix products hand out their items
 * (piq_engine_matmul), each piece read in two ways, the faster one counting: as one
 * stream (the streamer above), and as LIMIT_STREAMS streams side by side, each
 * prefetched LIMIT_AHEAD bytes ahead, as the GEMV kernels read their rows. On the
 * 16-core host one stream a thread read less than the kernels did (118–165 % of it
 * on one thread), and a static split, one share a thread, waited for the slowest
 * thread (docs/performance.md, session 35). */
#define LIMIT_PIECE ((uint64_t) 128 << 10)
#define LIMIT_STREAMS 8
#define LIMIT_AHEAD 512

typedef struct {
  LimitJob *job;
  uint64_t  n, next;
  int       streams;
} LimitQueue;

/* The XOR of @n bytes at @p into @sink, read as LIMIT_STREAMS streams of equal
 * length side by side (whole cache lines; the last n mod (64 · LIMIT_STREAMS) bytes
 * after them, one at a time). */
static void
read_streams (const uint8_t *p, size_t n, uint64_t *sink)
{
  typedef uint64_t V __attribute__ ((vector_size (16)));
  const size_t part = n / LIMIT_STREAMS / 64 * 64;
  V acc = { 0, 0 };
  uint64_t rest = 0;

  for (size_t i = 0; i < part; i += 64)
    for (int t = 0; t < LIMIT_STREAMS; t++)
      {
        const uint8_t *q = p + t * part + i;
        V a, b, c, d;
        __builtin_prefetch (q + LIMIT_AHEAD);
        memcpy (&a, q, 16);
        memcpy (&b, q + 16, 16);
        memcpy (&c, q + 32, 16);
        memcpy (&d, q + 48, 16);
        acc ^= (a ^ b) ^ (c ^ d);
      }
  for (size_t i = LIMIT_STREAMS * part; i < n; i++)
    rest ^= p[i];
  *sink ^= acc[0] ^ acc[1] ^ rest;
}

static void
limit_queue_range (void *data, uint64_t start, uint64_t n)
{
  LimitQueue *q = data;
  const uint64_t piece = (LIMIT_PIECE + GRAIN - 1) / GRAIN * GRAIN;

  (void) start;
  (void) n;
  for (uint64_t at; (at = __atomic_fetch_add (&q->next, piece, __ATOMIC_RELAXED)) < q->n;)
    {
      uint64_t len = q->n - at < piece ? q->n - at : piece;
      if (q->streams)
        read_streams (q->job->src + at, len, &q->job->sink[at / GRAIN]);
      else
        limit_range (q->job, at, len);
    }
}

/* Seconds for the faster of the two reads of @job's @n bytes (a pure read, n bytes). */
static double
time_limit_queued (unsigned threads, uint64_t n, LimitJob *job)
{
  double best = INFINITY;

  for (int streams = 0; streams < 2; streams++)
    {
      LimitQueue q = { job, n, 0, streams };
      double t0 = now_s (), t;

      piq_parallel_run (threads, threads, 1, 2, limit_queue_range, &q);
      t = now_s () - t0;
      best = t < best ? t : best;
    }
  return best;
}

typedef struct {
  double read_bytes, written_bytes, working_set;   /* of the row's n elements */
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


/* Returns 0 when the engine refused the call (@e says why). */
static int
measure_row_once (Bench *b, const HotOp *op, uint64_t n, unsigned threads, RowResult *r,
                  PiqEngineError *e)
{
  RowCtx c;
  LimitJob reg, nt;
  /* A pure read has no store kind; elsewhere non-temporal stores where the ISA has them. */
  int with_nt, ok = 1;
  double op_min = INFINITY, reg_med, nt_med, bytes;

  if (!prepare_row (b, op, n, &c, e))
    return 0;
  reg = c.limit;
  nt = reg;
  nt.nt = 1;
  with_nt = b->streamer.has_nt && reg.dst != NULL;
  bytes = c.read_bytes + c.written_bytes;
  r->read_bytes = c.read_bytes;
  r->written_bytes = c.written_bytes;
  r->working_set = c.working_set;

  /* warm: caches, TLB, the thread team; untimed. The first call also checks that
   * the engine takes the row. */
  time_op (b, op, &c, threads, &ok, e);
  if (!ok)
    return 0;
  time_limit (threads, n, &reg);
  if (with_nt)
    time_limit (threads, n, &nt);
  time_op (b, op, &c, threads, &ok, e);

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
              b->t_op[i] = time_op (b, op, &c, threads, &ok, e);
              r->disturbed += disturbed (w, b->t_op[i]);
            }
          else
            {
              b->t_reg[i] = time_limit (threads, n, &reg);
              r->disturbed += disturbed (w, b->t_reg[i]);
            }
        }
    }
  if (!ok)
    return 0;

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
      r->store = reg.dst == NULL ? "read" : "regular";
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
  return 1;
}

static int
measure_row (Bench *b, const HotOp *op, uint64_t n, unsigned threads, RowResult *r,
             PiqEngineError *e)
{
  for (unsigned a = 1; a <= ROW_ATTEMPTS; a++)
    {
      if (!measure_row_once (b, op, n, threads, r, e))
        return 0;
      r->attempts = a;
      if (!row_disturbed (b, r))
        break;
    }
  return 1;
}

/* ---- output of the op rows ---- */

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


static int
op_selected (const Bench *b, const HotOp *op)
{
  return name_matches (b->o->op_filter, op->name);
}

/* The LLC against the working sets (source + destination bytes) of the selected rows
 * at @n; "fits" when every one fits, "does not fit" when none does. */
static const char *
llc_verdict (const Bench *b, uint64_t n, double *ws_min, double *ws_max)
{
  *ws_min = INFINITY;
  *ws_max = 0;
  for (size_t i = 0; i < n_ops; i++)
    {
      size_t fb, codes, scales, zps;
      PiqEngineError e;
      double ws;

      if (!op_selected (b, &hot_ops[i]) ||
          !piq_engine_dtype_size (hot_ops[i].float_dtype, n, &fb, &e) ||
          !quant_sizes (&hot_ops[i], n, &codes, &scales, &zps, &e))
        continue;
      ws = (double) fb + (hot_ops[i].kind == OP_PARAMS ? 0
                          : hot_ops[i].kind == OP_REQUANTIZE ? (double) fb
                          : (double) (codes + scales + zps));
      *ws_min = ws < *ws_min ? ws : *ws_min;
      *ws_max = ws > *ws_max ? ws : *ws_max;
    }
  if (b->llc.bytes == 0)
    return "unknown";
  return *ws_max <= (double) b->llc.bytes ? "fits"
         : *ws_min > (double) b->llc.bytes ? "does not fit" : "partly fits";
}

static void
print_table_header (const Bench *b, uint64_t n)
{
  char num[40], size[32];
  double ws_min, ws_max;
  const char *verdict = llc_verdict (b, n, &ws_min, &ws_max);

  fprintf (b->out, "\nN = %s elements (f32 source %.1f MB)\n", thousands (n, num, sizeof num),
           (double) n * 4 / 1e6);
  if (b->llc.bytes == 0)
    fprintf (b->out, "last-level cache: unknown; working sets %.1f-%.1f MB\n", ws_min / 1e6,
             ws_max / 1e6);
  else
    fprintf (b->out, "last-level cache: L%u %s (cpu0's%s%s); working sets %.1f-%.1f MB = "
             "%.2g-%.2gx the LLC: the working set %s\n",
             b->llc.level, mib (b->llc.bytes, size, sizeof size),
             b->llc.shared[0] ? ", shared by CPUs " : "", b->llc.shared, ws_min / 1e6,
             ws_max / 1e6, ws_min / (double) b->llc.bytes, ws_max / (double) b->llc.bytes,
             verdict);
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
print_row (const Bench *b, const HotOp *op, uint64_t n, unsigned threads, const RowResult *r)
{
  char target[16] = "-";
  double bpe = (r->read_bytes + r->written_bytes) / (double) n;

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

static const char *const engine_calls[] = {
  [OP_QUANTIZE] = "piq_engine_quantize", [OP_DEQUANTIZE] = "piq_engine_dequantize",
  [OP_REQUANTIZE] = "piq_engine_requantize", [OP_PARAMS] = "piq_engine_compute_params",
};

static void
json_row_start (Bench *b, const HotOp *op, uint64_t n, unsigned threads)
{
  FILE *out = b->out;

  fprintf (out, "%s\n    {\"op\": ", b->first_json_item ? "" : ",");
  b->first_json_item = 0;
  json_string (out, op->name);
  fprintf (out, ", \"engine_call\": \"%s\", \"elements\": %llu, \"threads\": %u",
           engine_calls[op->kind], (unsigned long long) n, threads);
}

static void
json_row (Bench *b, const HotOp *op, uint64_t n, unsigned threads, const RowResult *r)
{
  FILE *out = b->out;

  json_row_start (b, op, n, threads);
  fprintf (out, ", \"bytes_read\": %.0f, \"bytes_written\": %.0f, \"working_set_bytes\": %.0f, "
           "\"fits_llc\": ", r->read_bytes, r->written_bytes, r->working_set);
  if (b->llc.bytes != 0)
    fprintf (out, "%s", r->working_set <= (double) b->llc.bytes ? "true" : "false");
  else
    fprintf (out, "null");
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

/* A row the engine refused: a bench bug or a format the engine no longer takes. */
static void
report_failed_row (Bench *b, const HotOp *op, uint64_t n, unsigned threads, const PiqEngineError *e)
{
  b->failed = 1;
  if (b->o->json)
    {
      json_row_start (b, op, n, threads);
      fprintf (b->out, ", \"error\": ");
      json_string (b->out, e->message);
      fprintf (b->out, "}");
    }
  else
    fprintf (b->out, "%-26s %3u failed: %s\n", op->name, threads, e->message);
  fflush (b->out);
}

/* ---- per-call overhead and the crossover ---- */

/* The f32 -> uint8 nearest kernel called directly, as the engine's element route
 * calls it on one range: (a) of the overhead, and the crossover's job. */
typedef struct {
  PiqQuantizeFn  quantize;
  const float   *src;
  uint8_t       *dst;
  PiqKernelArgs  args;
} KernelJob;

static void
kernel_range (void *data, uint64_t start, uint64_t n)
{
  const KernelJob *job = data;

  job->quantize (job->src + start, job->dst + start, start, n, &job->args);
}

/* The first row (f32 -> uint8 nearest, calibrated) prepared on @n elements, and its
 * kernel with the arguments the engine gives it. */
static int
prepare_u8 (const Bench *b, uint64_t n, RowCtx *c, KernelJob *job, PiqEngineError *e)
{
  const HotOp *op = &hot_ops[0];
  const PiqDtypeInfo *fi = piq_dtype_info (op->float_dtype), *qi = piq_dtype_info (op->f.dtype);
  PiqKernelArgs *a = &job->args;

  if (!prepare_row (b, op, n, c, e))
    return 0;
  memset (job, 0, sizeof *job);
  job->quantize = b->kernels->quantize[fi->kernel_index][qi->kernel_index][0];
  job->src = c->src.data;
  job->dst = b->buf[BUF_CODES];
  a->scale_d = c->recipe.scale;
  a->inv_d = 1.0 / a->scale_d;
  a->scale_f = (float) a->scale_d;
  a->inv_f = 1.0f / a->scale_f;
  a->zero_point = c->recipe.zero_point;
  a->qmin = qi->min;
  a->qmax = qi->max;
  piq_hash_keys (0, &a->key0, &a->key1);
  return 1;
}

#define OVERHEAD_BATCHES 1001

enum { CALL_DIRECT, CALL_ENGINE_ALL, CALL_ENGINE_ONE, CALL_API, N_CALLS };

/* The time per call, in ns, of a batch of @calls calls of @what on @n elements:
 * the kernel itself, piq_engine_quantize() with n_threads 0 (the library's default)
 * or 1, or the public API. */
static void
time_call_batch (const Bench *b, RowCtx *c, KernelJob *job, int what, uint64_t n,
                 unsigned calls, double *out_ns)
{
  const PiqBenchApi *api = b->o->api;
  PiqEngine all = engine_of (b, 0), one = engine_of (b, 1);
  PiqEngineError e;
  double t0 = now_s ();

  for (unsigned k = 0; k < calls; k++)
    switch (what)
      {
      case CALL_DIRECT:
        job->quantize (job->src, job->dst, 0, n, &job->args);
        break;
      case CALL_ENGINE_ALL:
        piq_engine_quantize (&all, &c->recipe, &c->src, &c->q, NULL, &e);
        break;
      case CALL_ENGINE_ONE:
        piq_engine_quantize (&one, &c->recipe, &c->src, &c->q, NULL, &e);
        break;
      default:
        api->quantize_u8 (api->user_data, job->src, n, job->dst);
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
  double *t[N_CALLS];
  int n_what = api != NULL ? N_CALLS : N_CALLS - 1;
  int ok = 1;

  for (int w = 0; w < N_CALLS; w++)
    {
      t[w] = calloc (OVERHEAD_BATCHES, sizeof (double));
      ok = ok && t[w] != NULL;
    }
  for (int s = 0; s < 2 && ok; s++)
    {
      uint64_t n = sizes[s];
      /* about 10 µs per batch: far above the clock's own cost */
      unsigned calls = n <= 64 ? 200 : 20;
      RowCtx c;
      KernelJob job;
      PiqEngineError e;

      /* the scale and zero point of these n elements, for every path alike */
      if (!prepare_u8 (b, n, &c, &job, &e))
        {
          fprintf (stderr, "%s: the engine refused %s: %s\n", PROG (b->o), hot_ops[0].name,
                   e.message);
          ok = 0;
          break;
        }
      if (api != NULL && api->setup (api->user_data, c.recipe.scale, c.recipe.zero_point) != 0)
        {
          fprintf (stderr, "%s: the %s path failed to set up\n", PROG (b->o), api->name);
          ok = 0;
          break;
        }
      for (int w = 0; w < n_what; w++)
        time_call_batch (b, &c, &job, w, n, calls * 10, &t[w][0]);   /* warm */
      for (unsigned i = 0; i < OVERHEAD_BATCHES; i++)
        for (int w = 0; w < n_what; w++)
          time_call_batch (b, &c, &job, (w + i) % n_what, n, calls, &t[(w + i) % n_what][i]);
      res[s].n = n;
      for (int w = 0; w < N_CALLS; w++)
        res[s].ns[w] = w < n_what ? median (t[w], OVERHEAD_BATCHES) : NAN;
    }
  for (int w = 0; w < N_CALLS; w++)
    free (t[w]);
  return ok ? 0 : -1;
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
 * team has slept before each call, as between the calls of a real program. This one
 * experiment drives the kernel itself: it varies what the engine fixes (the grain
 * and the threshold), to tell what the threshold should be. */
static double
time_cross (KernelJob *job, unsigned threads, uint64_t n, uint64_t grain, unsigned samples,
            double idle_ms, double *scratch)
{
  for (unsigned i = 0; i < samples; i++)
    {
      double t0;

      if (idle_ms > 0)
        pause_ms (idle_ms);
      t0 = now_s ();
      piq_parallel_run (threads, n, grain, 0, kernel_range, job);
      scratch[i] = (now_s () - t0) * 1e6;
    }
  return median (scratch, samples);
}

static size_t
measure_crossover (Bench *b, CrossPoint *pts, size_t max_pts)
{
  KernelJob job;
  RowCtx c;
  PiqEngineError e;
  double scratch[CROSS_HOT];
  size_t n_pts = 0;
  unsigned all = b->max_threads;

  if (!prepare_u8 (b, b->max_n < CROSS_MAX ? b->max_n : CROSS_MAX, &c, &job, &e))
    return 0;
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
          fprintf (out, ", \"engine_ns\": ");
          json_number (out, ns[CALL_ENGINE_ALL]);
          fprintf (out, ", \"engine_1_thread_ns\": ");
          json_number (out, ns[CALL_ENGINE_ONE]);
          fprintf (out, ", \"api_ns\": ");
          json_number (out, ns[CALL_API]);
          fprintf (out, ", \"api_overhead_ns\": ");
          json_number (out, ns[CALL_API] - ns[CALL_DIRECT]);
          fprintf (out, ", \"engine_overhead_ns\": ");
          json_number (out, ns[CALL_ENGINE_ALL] - ns[CALL_DIRECT]);
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
  fprintf (out, "%6s %10s %11s %11s %10s %12s %12s\n", "n", "(a) kernel", "(b) eng(0)", "eng(1)",
           "(c) API", "(b)-(a) ns", "(c)-(a) ns");
  for (int s = 0; s < 2; s++)
    {
      const double *ns = ovr[s].ns;

      fprintf (out, "%6llu %10.1f %11.1f %11.1f ", (unsigned long long) ovr[s].n, ns[CALL_DIRECT],
               ns[CALL_ENGINE_ALL], ns[CALL_ENGINE_ONE]);
      if (api != NULL)
        fprintf (out, "%10.1f %12.1f %12.1f\n", ns[CALL_API], ns[CALL_ENGINE_ALL] - ns[CALL_DIRECT],
                 ns[CALL_API] - ns[CALL_DIRECT]);
      else
        fprintf (out, "%10s %12.1f %12s\n", "-", ns[CALL_ENGINE_ALL] - ns[CALL_DIRECT], "-");
    }
  fprintf (out, "ns per call; eng(T) = piq_engine_quantize with n_threads T (0: every core, the "
           "library's default; below PIQ_PARALLEL_MIN_ELEMENTS it runs on the calling thread)%s%s\n",
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

/* "Kxllc": K times the last-level cache in f32 elements (K · LLC bytes of f32
 * source); 0 if the token is not one or the LLC is unknown. */
static uint64_t
llc_multiple (unsigned long long k, const char *p, const char **end)
{
  Llc llc;

  if (tolower ((unsigned char) p[0]) != 'x' || strncasecmp (p + 1, "llc", 3) != 0)
    return 0;
  *end = p + 4;
  llc = read_llc ();
  if (llc.bytes == 0 || k == 0 || k > (UINT64_MAX / llc.bytes))
    return 0;
  return k * llc.bytes / 4;
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
      const char *after;
      unsigned long long v;

      if (*p < '0' || *p > '9')
        return -1;
      v = strtoull (p, &end, 10);
      if (end == p)
        return -1;
      after = end;
      if (*end == 'x' || *end == 'X')
        {
          v = llc_multiple (v, end, &after);
          if (v == 0)
            return -1;
        }
      if (v < min || v > max || *n_values >= PIQ_BENCH_MAX_LIST)
        return -1;
      values[(*n_values)++] = v;
      p = after;
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

/* ---- matrix multiply (issue 12) ----
 * GEMV (M = 1, a decoding step): each weight byte is read once per product, so the
 * limit is the read bandwidth. A stack of identical [4096, 14336] layers whose bytes
 * exceed the last-level cache at least 4× (64 MiB at least, 4 GiB at most) is
 * multiplied layer after layer, as a model's layers are, and the limit is a pure
 * streaming read of the same bytes (the weights' own buffer) on the same threads.
 * GB/s counts the format's bytes (codes, scales, zero points), the bytes a model
 * stores, also for the dynamic-int8 policy, which reads its unpacked form: one byte
 * per weight and a scale and zero point per group.
 * GEMM (M = 256, N = K = 4096): GFLOP/s (2·M·N·K per product) against a
 * register-resident FMA loop's peak on the same threads. */

#define MM_N 4096u
#define MM_K 14336u
#define MM_GEMM_M 256u
#define MM_GEMM_NK 4096u

typedef struct {
  const char *name;        /* row label */
  const char *preset;      /* engine preset it starts from */
  int         granularity; /* -1: the preset's */
  unsigned    block;
  int         int8;        /* also under dynamic int8 (2: under binary activations instead) */
} MmFormat;

/* Policy rows: 0 float, 1 dynamic int8, 2 binary (MmFormat.int8 says which apply). */
#define MM_POLICIES 3
#define MM_POLICY_NAME(pol) ((pol) == 2 ? "binary" : (pol) ? "int8" : "float")
#define MM_POLICY_ACT(pol)  ((pol) == 2 ? PIQ_ACT_BINARY : (pol) ? PIQ_ACT_DYNAMIC_INT8 : PIQ_ACT_FLOAT)
#define MM_POLICY_SKIP(mf, pol) ((pol) != 0 && (mf)->int8 != (pol))

static const MmFormat mm_formats[] = {
  { "q4_0",        "q4_0",       -1, 0,   1 },
  { "q8_0",        "q8_0",       -1, 0,   1 },
  { "nf4",         "nf4",        -1, 0,   0 },
  { "mxfp4",       "mxfp4",      -1, 0,   0 },
  { "int4 g128",   "int4_block", GRAN_BLOCK, 128, 1 },
  { "int8 per ch", "int8_block", GRAN_CHANNEL, 0, 1 },
  { "binary",      "binary",     -1, 0,   2 },
};

static int
mm_format (const MmFormat *m, PiqEngineFormat *f)
{
  size_t n;
  const PiqEnginePreset *p = piq_engine_presets (&n);

  for (size_t i = 0; i < n; i++)
    if (strcmp (p[i].name, m->preset) == 0)
      {
        *f = p[i].f;
        if (m->granularity >= 0)
          {
            f->granularity = m->granularity;
            f->block_size = m->block;
            f->axis = 0;
          }
        return 1;
      }
  return 0;
}

/* Quantized [rows, cols] weights from N(0, 1) data: codes, scales, zero points. The
 * data is made once for the largest shape asked for and shared: fill_normal's first n
 * values do not depend on how many follow, and making them took most of a GEMV row's
 * time outside its timed runs (perf: 58 % of `-o 'gemv q4_0 float'`). */
static int
mm_quantize (Bench *b, const PiqEngineFormat *f, uint64_t rows, uint64_t cols,
             PiqEngineQuant *q, uint8_t **mem, PiqEngineError *e)
{
  uint64_t shape[2] = { rows, cols };
  size_t cs, ss, zs;
  PiqEngineRecipe r = PIQ_ENGINE_RECIPE_DEFAULT;
  PiqEngineView v = { 0 };
  PiqEngine eng = engine_of (b, 0);

  if (!piq_engine_sizes (f, shape, 2, &cs, &ss, &zs, e))
    return 0;
  if (b->normal_n < rows * cols)
    {
      free (b->normal);
      b->normal_n = 0;
      if ((b->normal = malloc (rows * cols * sizeof (float))) != NULL)
        {
          fill_normal (b->normal, rows * cols, DATA_SEED);
          b->normal_n = rows * cols;
        }
    }
  *mem = malloc (cs + ss + zs + 3);
  if (b->normal == NULL || *mem == NULL)
    {
      free (*mem);
      e->code = PIQ_E_NO_MEMORY;
      snprintf (e->message, sizeof e->message, "out of memory for %s weights", "the");
      return 0;
    }
  memset (q, 0, sizeof *q);
  q->f = *f;
  q->codes = *mem;
  q->codes_size = cs;
  q->scales = ss ? *mem + cs : NULL;
  q->scales_size = ss;
  q->zero_points = zs ? *mem + (cs + ss + 3) / 4 * 4 : NULL;
  q->zero_points_size = zs;
  v.dtype = b->f32;
  v.n_dims = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.data = b->normal;
  v.size = rows * cols * sizeof (float);
  return piq_engine_quantize (&eng, &r, &v, q, NULL, e);
}

typedef struct {
  const PiqEngine *eng;
  PiqEnginePacked **layers;
  size_t n_layers;
  PiqEngineView x, y;
} MmRun;

static int
mm_pass (const MmRun *r, PiqEngineError *e)
{
  for (size_t l = 0; l < r->n_layers; l++)
    if (!piq_engine_matmul (r->eng, &r->x, r->layers[l], NULL, &r->y, 0, e))
      return 0;
  return 1;
}

/* Median seconds of @repeat passes, and of the same-run read limit (alternating;
 * time_limit_queued). */
static int
mm_time (const Bench *b, MmRun *r, unsigned threads, const uint8_t *bytes, size_t n_bytes,
         double *t_op, double *t_lim, PiqEngineError *e)
{
  double *to = malloc (b->repeat * sizeof *to), *tl = malloc (b->repeat * sizeof *tl);
  uint64_t *sink = calloc (n_bytes / GRAIN + 2, sizeof *sink);
  LimitJob job = { b->streamer.fn, bytes, NULL, n_bytes, n_bytes, 0, 0, 0, sink };
  int ok = to != NULL && tl != NULL && sink != NULL;

  if (ok && !mm_pass (r, e))   /* warm-up */
    ok = 0;
  for (unsigned i = 0; ok && i < b->repeat; i++)
    {
      double t0 = now_s ();
      ok = mm_pass (r, e);
      to[i] = now_s () - t0;
      tl[i] = time_limit_queued (threads, n_bytes, &job);
    }
  if (ok)
    {
      *t_op = median (to, b->repeat);
      *t_lim = median (tl, b->repeat);
    }
  free (to);
  free (tl);
  free (sink);
  return ok;
}

/* Peak binary32 FMA throughput (GFLOP/s) on @threads threads: a register-resident
 * loop of independent fused multiply-adds in the widest vectors the CPU has. */
#define PEAK_ITERS 4000000u
/* Each matrix-product row times the product MM_PAIRS times, each run followed by one
 * run of the peak loop on the same threads, and its ratio is the median of the runs'
 * ratios to the loop run after them: on the 16-core host the FMA loop read 1.3 and
 * 2.6 TFLOP/s on 16 threads minutes apart (how the guest's CPUs share the host's
 * cores), and the best of five loop runs measured apart from the product's median
 * set some rows against a reading their own runs did not see (session 38). */
#define MM_PAIRS 5
#if BENCH_X86
/* Twelve accumulators as twelve variables: written as an array, GCC kept them in
 * memory and the loop measured store forwarding (a load and a store around every
 * instruction), a fifth of the peak on Sapphire Rapids. */
#define PEAK_ACC(X) X (0) X (1) X (2) X (3) X (4) X (5) X (6) X (7) X (8) X (9) X (10) X (11)

__attribute__ ((target ("avx512f"))) static double
fma_loop_avx512 (unsigned iters)
{
  const __m512 x = _mm512_set1_ps (0.999999f), y = _mm512_set1_ps (1e-7f);
#define DECL_(i) __m512 a##i = _mm512_set1_ps ((float) i);
#define STEP_(i) a##i = _mm512_fmadd_ps (a##i, x, y);
#define SUM_(i) s = _mm512_add_ps (s, a##i);
  PEAK_ACC (DECL_)
  __m512 s = _mm512_setzero_ps ();
  for (unsigned it = 0; it < iters; it++)
    {
      PEAK_ACC (STEP_)
    }
  PEAK_ACC (SUM_)
#undef DECL_
#undef STEP_
#undef SUM_
  return _mm512_reduce_add_ps (s);
}
__attribute__ ((target ("avx2,fma"))) static double
fma_loop_avx2 (unsigned iters)
{
  const __m256 x = _mm256_set1_ps (0.999999f), y = _mm256_set1_ps (1e-7f);
  float out[8];
#define DECL_(i) __m256 a##i = _mm256_set1_ps ((float) i);
#define STEP_(i) a##i = _mm256_fmadd_ps (a##i, x, y);
#define SUM_(i) s = _mm256_add_ps (s, a##i);
  PEAK_ACC (DECL_)
  __m256 s = _mm256_setzero_ps ();
  for (unsigned it = 0; it < iters; it++)
    {
      PEAK_ACC (STEP_)
    }
  PEAK_ACC (SUM_)
#undef DECL_
#undef STEP_
#undef SUM_
  _mm256_storeu_ps (out, s);
  return out[0] + out[7];
}
#endif

#if BENCH_X86
/* Every peak is one of these loops: @iters iterations of twelve independent
 * register-resident steps; what it returns only keeps the work alive. */
typedef double (*PeakLoopFn) (unsigned iters);

typedef struct { PeakLoopFn loop; uint64_t sink; } PeakJob;

static void
peak_range (void *data, uint64_t start, uint64_t n)
{
  PeakJob *p = data;
  double s = 0.0;
  uint64_t bits;

  for (uint64_t i = start; i < start + n; i++)
    s += p->loop (PEAK_ITERS);
  memcpy (&bits, &s, sizeof bits);
  __atomic_fetch_xor (&p->sink, bits, __ATOMIC_RELAXED);
}

/* One run of @loop on @threads threads (one loop each), in billions of operations a
 * second for @ops operations per step (MM_PAIRS: one run after each product's run). */
static double
peak_rate (unsigned threads, PeakLoopFn loop, double ops)
{
  PeakJob p = { loop, 0 };
  double t0 = now_s (), t;

  piq_parallel_run (threads, threads, 1, 2, peak_range, &p);
  t = now_s () - t0;
  return (double) threads * PEAK_ITERS * 12.0 * ops / t / 1e9;
}
#endif

static double
fma_peak_gflops (unsigned threads, const char **label)
{
#if BENCH_X86
  unsigned width;

  __builtin_cpu_init ();
  width = __builtin_cpu_supports ("avx512f") ? 16 : __builtin_cpu_supports ("fma") ? 8 : 0;
  *label = width == 16 ? "avx512 fma" : width == 8 ? "avx2 fma" : "none";
  if (width != 0)
    return peak_rate (threads, width == 16 ? fma_loop_avx512 : fma_loop_avx2, width * 2.0);
#endif
  *label = "none";
  return 0.0;
}

static int
mm_selected (const Bench *b, const char *name)
{
  return b->o->op_filter == NULL || name_matches (b->o->op_filter, name);
}

static int
mm_any_selected (const Bench *b)
{
  char name[64];
  for (size_t i = 0; i < sizeof mm_formats / sizeof mm_formats[0]; i++)
    for (int pol = 0; pol < MM_POLICIES; pol++)
      for (int g = 0; g < 2; g++)
        {
          snprintf (name, sizeof name, "%s %s %s", g ? "gemm" : "gemv", mm_formats[i].name,
                    MM_POLICY_NAME (pol));
          if (mm_selected (b, name))
            return 1;
        }
  return mm_selected (b, "gemm u8 x s8 -> int32");
}

/* The first rows of a layer, at most half the LLC's bytes and a multiple of 64 rows,
 * quantized from the same data and packed on their own: the GEMV's "in LLC" rate,
 * where the weights stay in the cache between calls. None where not even 64 rows
 * fit. *mem holds the quantized rows, which packed float weights read: the caller
 * frees it after them. */
static int
mm_cached_layer (Bench *b, const PiqEngineFormat *f, size_t layer_bytes, int act,
                 PiqEnginePacked **out, uint8_t **mem, PiqEngineError *e)
{
  uint64_t r = (uint64_t) ((double) b->llc.bytes / 2 / ((double) layer_bytes / MM_N)) / 64 * 64;
  uint64_t shape[2] = { r > MM_N ? MM_N : r, MM_K };
  PiqEngineQuant q;
  PiqEngine eng_all = engine_of (b, 0);

  *out = NULL;
  *mem = NULL;
  if (shape[0] == 0)
    return 1;
  return mm_quantize (b, f, shape[0], MM_K, &q, mem, e) &&
         (*out = piq_engine_pack (&eng_all, &q, shape, 2, act, e)) != NULL;
}

/* GB/s (the weights' bytes) of the median of @repeat runs, each 8 calls of the cached
 * rows' product, after one unmeasured call that brings them into the cache. */
static int
mm_time_cached (const Bench *b, const MmRun *r, PiqEnginePacked *cached, size_t layer_bytes,
                double *gbps, PiqEngineError *e)
{
  double *t = malloc (b->repeat * sizeof *t);
  PiqEnginePacked *one[8];
  MmRun rc = *r;
  uint64_t rows, k;
  size_t bytes;
  int ok = t != NULL;

  piq_engine_packed_info (cached, &rows, &k, &bytes);

  for (size_t i = 0; i < 8; i++)
    one[i] = cached;
  rc.layers = one;
  rc.n_layers = 1;
  rc.y.shape[1] = rows;
  rc.y.size = rows * sizeof (float);
  ok = ok && mm_pass (&rc, e);
  rc.n_layers = 8;
  for (unsigned i = 0; ok && i < b->repeat; i++)
    {
      double t0 = now_s ();
      ok = mm_pass (&rc, e);
      t[i] = now_s () - t0;
    }
  if (ok)
    *gbps = 8.0 * (double) layer_bytes * (double) rows / MM_N / median (t, b->repeat) / 1e9;
  free (t);
  return ok;
}

/* A matrix-product row as an object of the JSON results: its numbers under the keys
 * given, the loop its peak was measured with (or NULL), its target ratio (0: none) and
 * whether it is below it (-1: no target at this thread count); or, error non-NULL, the
 * engine's refusal. The text tables print the same numbers. */
typedef struct { const char *key; double v; } MmField;

static void
mm_json_row (Bench *b, const char *name, unsigned threads, const MmField *f, size_t n,
             const char *peak_kind, double target, int below, const char *error)
{
  FILE *out = b->out;

  fprintf (out, "%s\n    {\"op\": ", b->first_json_item ? "" : ",");
  b->first_json_item = 0;
  json_string (out, name);
  if (threads > 0)
    fprintf (out, ", \"threads\": %u", threads);
  if (error != NULL)
    {
      fprintf (out, ", \"error\": ");
      json_string (out, error);
    }
  else
    {
      for (size_t i = 0; i < n; i++)
        {
          fprintf (out, ", \"%s\": ", f[i].key);
          json_number (out, f[i].v);
        }
      if (peak_kind != NULL)
        {
          fprintf (out, ", \"peak_kind\": ");
          json_string (out, peak_kind);
        }
      fprintf (out, ", \"target\": ");
      if (target > 0)
        fprintf (out, "%.2f", target);
      else
        fprintf (out, "null");
      fprintf (out, ", \"below_target\": %s", below < 0 ? "null" : below ? "true" : "false");
    }
  fprintf (out, "}");
  fflush (out);
}

/* A product the engine refused (threads 0: before any thread count). */
static void
mm_failed (Bench *b, const char *name, unsigned threads, const PiqEngineError *e)
{
  b->failed = 1;
  if (b->o->json)
    mm_json_row (b, name, threads, NULL, 0, NULL, 0.0, -1, e->message);
  else
    fprintf (b->out, "%-26s failed: %s\n", name, e->message);
}

static void
mm_gemv (Bench *b)
{
  uint64_t target = b->llc.bytes ? 4 * b->llc.bytes : (uint64_t) 256 << 20;
  target = target < ((uint64_t) 64 << 20) ? (uint64_t) 64 << 20 : target;
  target = target > ((uint64_t) 4 << 30) ? (uint64_t) 4 << 30 : target;

  if (!b->o->json)
    {
      fprintf (b->out, "\nGEMV: y [1, %u] = x [1, %u] · Wᵀ over a stack of layers of at "
               "least %.0f MB (4x the LLC); GB/s of the format's weight bytes; limit = the "
               "faster of two reads of the same bytes, %.0f KiB at a time to whichever thread "
               "is free: one stream, and %d streams prefetched %d bytes ahead; in LLC = GB/s "
               "of the same product over the first rows of a layer, at most half the LLC, "
               "which stay there: a row whose GB/s is near it is bound by its arithmetic, not "
               "by the read\n", MM_N, MM_K, (double) target / 1e6, (double) LIMIT_PIECE / 1024,
               LIMIT_STREAMS, LIMIT_AHEAD);
      fprintf (b->out, "%-26s %3s %7s %9s %8s %8s %7s %-7s %8s\n", "op", "thr", "layers",
               "ms/layer", "GB/s", "limit", "ratio", "target", "in LLC");
    }
  for (size_t i = 0; i < sizeof mm_formats / sizeof mm_formats[0]; i++)
    for (int pol = 0; pol < MM_POLICIES; pol++)
      {
        const MmFormat *mf = &mm_formats[i];
        char name[64];
        PiqEngineFormat f;
        PiqEngineQuant q;
        PiqEngineError e;
        uint8_t *mem = NULL, *stack = NULL, *cached_mem = NULL;
        size_t layer_bytes, n_layers;
        PiqEnginePacked **packed = NULL, *cached = NULL;
        float *x = NULL, *y = NULL;
        PiqEngine eng_all = engine_of (b, 0);
        int ok = 1;

        snprintf (name, sizeof name, "gemv %s %s", mf->name, MM_POLICY_NAME (pol));
        if (MM_POLICY_SKIP (mf, pol) || !mm_selected (b, name) || !mm_format (mf, &f))
          continue;
        if (!mm_quantize (b, &f, MM_N, MM_K, &q, &mem, &e))
          {
            mm_failed (b, name, 0, &e);
            free (mem);
            continue;
          }
        layer_bytes = q.codes_size + q.scales_size + q.zero_points_size;
        n_layers = (target + layer_bytes - 1) / layer_bytes;
        stack = malloc (n_layers * layer_bytes);
        packed = calloc (n_layers, sizeof *packed);
        x = malloc (MM_K * sizeof *x);
        y = malloc (MM_N * sizeof *y);
        ok = stack != NULL && packed != NULL && x != NULL && y != NULL;
        if (ok)
          fill_normal (x, MM_K, DATA_SEED + 1);
        for (size_t l = 0; ok && l < n_layers; l++)
          {
            /* each layer's codes, scales and zero points back to back in the stack */
            uint64_t shape[2] = { MM_N, MM_K };
            PiqEngineQuant ql = q;
            uint8_t *at = stack + l * layer_bytes;
            memcpy (at, q.codes, q.codes_size);
            ql.codes = at;
            if (q.scales_size)
              {
                memcpy (at + q.codes_size, q.scales, q.scales_size);
                ql.scales = at + q.codes_size;
              }
            if (q.zero_points_size)
              {
                memcpy (at + q.codes_size + q.scales_size, q.zero_points, q.zero_points_size);
                ql.zero_points = at + q.codes_size + q.scales_size;
              }
            packed[l] = piq_engine_pack (&eng_all, &ql, shape, 2, MM_POLICY_ACT (pol), &e);
            ok = packed[l] != NULL;
          }
        if (ok && b->llc.bytes != 0)
          ok = mm_cached_layer (b, &f, layer_bytes, MM_POLICY_ACT (pol), &cached, &cached_mem,
                                &e);
        for (size_t t = 0; ok && t < b->n_threads; t++)
          {
            PiqEngine eng = engine_of (b, b->threads[t]);
            MmRun r = { &eng, packed, n_layers,
                        { b->f32, 2, { 1, MM_K }, 0, x, MM_K * sizeof (float) },
                        { b->f32, 2, { 1, MM_N }, 0, y, MM_N * sizeof (float) } };
            double t_op, t_lim, gbps, lim, in_llc = 0.0;
            int target_pct = 85;
            char llc_col[16] = "-";
            if (!mm_time (b, &r, b->threads[t], stack, n_layers * layer_bytes, &t_op, &t_lim, &e) ||
                (cached != NULL &&
                 !mm_time_cached (b, &r, cached, layer_bytes, &in_llc, &e)))
              {
                ok = 0;
                break;
              }
            gbps = (double) n_layers * layer_bytes / t_op / 1e9;
            lim = (double) n_layers * layer_bytes / t_lim / 1e9;
            if (cached != NULL)
              snprintf (llc_col, sizeof llc_col, "%.2f", in_llc);
            if (b->o->json)
              {
                const MmField fs[] = { { "layers", (double) n_layers },
                                       { "layer_bytes", (double) layer_bytes },
                                       { "ms_per_layer", t_op * 1e3 / (double) n_layers },
                                       { "gbps", gbps }, { "limit_gbps", lim },
                                       { "ratio", gbps / lim },
                                       { "llc_gbps", cached != NULL ? in_llc : NAN } };
                mm_json_row (b, name, b->threads[t], fs, sizeof fs / sizeof fs[0], NULL,
                             target_pct / 100.0, b->threads[t] == b->max_threads
                             ? 100.0 * gbps / lim < target_pct : -1, NULL);
              }
            else
              fprintf (b->out, "%-26s %3u %7zu %9.3f %8.2f %8.2f %6.1f%% %s%d%% %8s\n", name,
                       b->threads[t], n_layers, t_op * 1e3 / (double) n_layers, gbps, lim,
                       100.0 * gbps / lim, 100.0 * gbps / lim < target_pct ? "*" : " ",
                       target_pct, llc_col);
          }
        if (!ok)
          mm_failed (b, name, 0, &e);
        for (size_t l = 0; packed != NULL && l < n_layers; l++)
          piq_engine_packed_free (packed[l]);
        if (cached != NULL)
          piq_engine_packed_free (cached);
        free (cached_mem);
        free (packed);
        free (stack);
        free (mem);
        free (x);
        free (y);
      }
}

/* Peak int8 multiply-adds (GOPS, 2 per multiply-add) on @threads threads: a
 * register-resident loop of the VPDPBUSD the kernels in use have, on 512 bits (AVX-512
 * VNNI) or on 256 (AVX-VNNI: the client cores without AVX-512, or kernels capped
 * there); without VNNI, of the sequence AVX2 has for it: vpmaddubsw, vpmaddwd by ones
 * and vpaddd, 32 multiply-adds per three instructions (saturating: the kernels split
 * full-range unsigned bytes and spend twice that, so they cannot pass half of it). */
#if BENCH_X86
/* One loop per width, the same steps: only the VPDPBUSD intrinsic (VNNI_DP_) differs. */
# define VNNI_LOOP_(name, target_, bytes) \
  __attribute__ ((target (target_))) static double \
  name (unsigned iters) \
  { \
    typedef int32_t vi_ __attribute__ ((vector_size (bytes))); \
    const vi_ x = (vi_) { 0 } + 0x03030303, y = (vi_) { 0 } + (int32_t) 0xfefefefe; \
    vi_ s = { 0 }; \
    uint32_t out = 0;   /* the lanes' sum wraps: only its dependence on the loop matters */ \
    PEAK_ACC (DECL_) \
    for (unsigned it = 0; it < iters; it++) \
      { \
        PEAK_ACC (STEP_) \
      } \
    PEAK_ACC (SUM_) \
    for (size_t l = 0; l < bytes / 4; l++) \
      out += (uint32_t) s[l]; \
    return out; \
  }
# define DECL_(i) vi_ a##i = (vi_) { 0 } + i;
# define STEP_(i) a##i = (vi_) VNNI_DP_ (a##i, x, y);
# define SUM_(i) s += a##i;
# define VNNI_DP_(a, x, y) _mm512_dpbusd_epi32 ((__m512i) (a), (__m512i) (x), (__m512i) (y))
VNNI_LOOP_ (vnni_loop, "avx512f,avx512bw,avx512vnni", 64)
# undef VNNI_DP_
# define VNNI_DP_(a, x, y) _mm256_dpbusd_avx_epi32 ((__m256i) (a), (__m256i) (x), (__m256i) (y))
VNNI_LOOP_ (avx_vnni_loop, "avx2,avxvnni", 32)
# undef VNNI_DP_
# undef DECL_
# undef STEP_
# undef SUM_
# undef VNNI_LOOP_

/* The AVX2 sequence's loop: each chain has its own unsigned operand, hidden from the
 * compiler every step (an empty asm), or it would hoist the loop-invariant products
 * and leave the adds; six chains, so that with their operands they fit the 16 ymm
 * registers. */
# define MADD_ACC_(X) X (0) X (1) X (2) X (3) X (4) X (5)
# define DECL_(i) __m256i a##i = _mm256_set1_epi32 (i), x##i = _mm256_set1_epi8 ((char) (3 + i));
# define STEP_(i) \
  __asm__ ("" : "+x" (x##i)); \
  a##i = _mm256_add_epi32 (a##i, _mm256_madd_epi16 (_mm256_maddubs_epi16 (x##i, y), ones));
# define SUM_(i) s = _mm256_add_epi32 (s, a##i);
__attribute__ ((target ("avx2"))) static double
maddubs_loop (unsigned iters)
{
  const __m256i y = _mm256_set1_epi8 ((char) 0xfe), ones = _mm256_set1_epi16 (1);
  __m256i s = _mm256_setzero_si256 ();
  int32_t lanes[8];
  uint32_t out = 0;   /* wraps, as in the VPDPBUSD loops */
  MADD_ACC_ (DECL_)
  for (unsigned it = 0; it < iters; it++)
    {
      /* as many sequences a step as the VPDPBUSD loops have instructions */
      MADD_ACC_ (STEP_)
      MADD_ACC_ (STEP_)
    }
  MADD_ACC_ (SUM_)
  _mm256_storeu_si256 ((__m256i *) (void *) lanes, s);
  for (int l = 0; l < 8; l++)
    out += (uint32_t) lanes[l];
  return out;
}
# undef MADD_ACC_
# undef DECL_
# undef STEP_
# undef SUM_
#endif

/* Peak AMX int8 rate: a register-resident loop of TDPBUSD on four sum tiles (as the
 * int8 GEMM's 2 × 2 blocks), each 16 × 16 × 64 byte products, 2 ops each. One
 * TDPBUSD is 256 times a VPDPBUSD's work for about 16 times its cycles, so the loop
 * runs a sixteenth of the steps it is asked for and counts each step as 1/16 of an
 * instruction's ops, to take about the other loops' time. */
#if BENCH_X86
/* a constant: GCC's tile loads do not tell the compiler what memory they read */
static const int8_t bench_tile_ones[16 * 64] = { 1, 2, 3, 4, 5, 6, 7, 8 };

__attribute__ ((target ("amx-tile,amx-int8"))) static double
amx_loop (unsigned iters)
{
  const int8_t *ones = bench_tile_ones;
  int32_t out[16 * 16];

  _tile_loadconfig (&piq_tile_config_16x64);
  _tile_zero (0);
  _tile_zero (1);
  _tile_zero (2);
  _tile_zero (3);
  _tile_loadd (4, ones, 64);
  _tile_loadd (5, ones, 64);
  _tile_loadd (6, ones, 64);
  _tile_loadd (7, ones, 64);
  for (unsigned it = 0; it < iters / 16; it++)
    for (int r = 0; r < 3; r++)
      {
        _tile_dpbusd (0, 4, 6);
        _tile_dpbusd (1, 4, 7);
        _tile_dpbusd (2, 5, 6);
        _tile_dpbusd (3, 5, 7);
      }
  _tile_stored (0, out, 64);
  _tile_release ();
  return out[0];
}

#endif

/* The level of the table named @name in this build, INT_MAX where it has none. */
static int
table_level (const char *name)
{
  size_t n;
  const PiqKernelTable *const *tables = piq_kernel_tables (&n);

  for (size_t t = 0; t < n; t++)
    if (strcmp (tables[t]->name, name) == 0)
      return tables[t]->level;
  return INT_MAX;
}

static double
int8_peak_gops (const Bench *b, unsigned threads, const char **label)
{
#if BENCH_X86
  uint32_t f = piq_cpu_features ();

  if ((f & PIQ_CPU_AVX512VNNI) && b->level >= table_level ("avx512vnni"))
    {
      *label = "avx512 vnni";
      /* 64 byte products per instruction, 2 ops each */
      return peak_rate (threads, vnni_loop, 64 * 2.0);
    }
  if ((f & PIQ_CPU_AVXVNNI) && b->level >= table_level ("avxvnni"))
    {
      *label = "avx vnni";
      return peak_rate (threads, avx_vnni_loop, 32 * 2.0);
    }
  if ((f & PIQ_CPU_AVX2) && b->level >= table_level ("avx2"))
    {
      *label = "avx2 vpmaddubsw";
      return peak_rate (threads, maddubs_loop, 32 * 2.0);
    }
#else
  (void) b;
  (void) threads;
#endif
  *label = "no int8 multiply-add loop for these kernels";
  return 0.0;
}

/* Peak XNOR-popcount rate (billions of bit operations a second, 2 per bit: the
 * multiply-add a bit stands for, as the binary GEMM counts 2·M·N·K) on @threads
 * threads: a register-resident loop of a ^= y, a += popcount (a) - the XOR, popcount
 * and add the binary kernels spend on each word - in the instruction they count with:
 * VPOPCNTQ on 512 bits where the CPU has AVX-512 VPOPCNTDQ, else POPCNT on 64. */
#if BENCH_X86
__attribute__ ((target ("avx512f,avx512vpopcntdq"))) static double
xnor_loop_avx512 (unsigned iters)
{
  const __m512i y = _mm512_set1_epi64 ((long long) 0x9e3779b97f4a7c15ull);
#define DECL_(i) __m512i a##i = _mm512_set1_epi64 (i);
#define STEP_(i) a##i = _mm512_add_epi64 (a##i, _mm512_popcnt_epi64 (_mm512_xor_si512 (a##i, y)));
#define SUM_(i) s = _mm512_add_epi64 (s, a##i);
  PEAK_ACC (DECL_)
  __m512i s = _mm512_setzero_si512 ();
  for (unsigned it = 0; it < iters; it++)
    {
      PEAK_ACC (STEP_)
    }
  PEAK_ACC (SUM_)
#undef DECL_
#undef STEP_
#undef SUM_
  return (double) _mm512_reduce_add_epi64 (s);
}

__attribute__ ((target ("popcnt"))) static double
xnor_loop_popcnt (unsigned iters)
{
  const uint64_t y = 0x9e3779b97f4a7c15ull;
#define DECL_(i) uint64_t a##i = i;
#define STEP_(i) a##i += (uint64_t) __builtin_popcountll (a##i ^ y);
#define SUM_(i) s += a##i;
  PEAK_ACC (DECL_)
  uint64_t s = 0;
  for (unsigned it = 0; it < iters; it++)
    {
      PEAK_ACC (STEP_)
    }
  PEAK_ACC (SUM_)
#undef DECL_
#undef STEP_
#undef SUM_
  return (double) s;
}
#endif

static double
xnor_peak_gops (unsigned threads, const char **label)
{
#if BENCH_X86
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512vpopcntdq"))
    {
      *label = "avx512 vpopcntq";
      return peak_rate (threads, xnor_loop_avx512, 512 * 2.0);
    }
  if (__builtin_cpu_supports ("popcnt"))
    {
      *label = "popcnt";
      return peak_rate (threads, xnor_loop_popcnt, 64 * 2.0);
    }
#endif
  *label = "no popcount";
  return 0.0;
}

/* The int8 GEMM on quantized operands: A uint8 per tensor [256, 4096] × W int8 per
 * channel [4096, 4096] → exact int32 sums. */
static void
mm_gemm_int8 (Bench *b)
{
  const char *name = "gemm u8 x s8 -> int32";
  PiqEngineFormat fa, fw;
  PiqEngineQuant qa, qw;
  PiqEngineError e;
  uint8_t *ma = NULL, *mw = NULL;
  PiqEnginePacked *packed = NULL;
  int32_t *y = NULL;
  PiqEngine eng1 = engine_of (b, 1);
  uint64_t wshape[2] = { MM_GEMM_NK, MM_GEMM_NK }, ashape[2] = { MM_GEMM_M, MM_GEMM_NK };
  int ok;

  if (!mm_selected (b, name) || !mm_format (&(MmFormat) { "", "int8_block", GRAN_CHANNEL, 0, 1 }, &fw))
    return;
  fa = fw;
  fa.dtype = 20;              /* uint8, per tensor, affine */
  fa.granularity = GRAN_TENSOR;
  fa.symmetric = 0;
  ok = mm_quantize (b, &fa, MM_GEMM_M, MM_GEMM_NK, &qa, &ma, &e) &&
       mm_quantize (b, &fw, MM_GEMM_NK, MM_GEMM_NK, &qw, &mw, &e) &&
       (packed = piq_engine_pack (&eng1, &qw, wshape, 2, PIQ_ACT_DYNAMIC_INT8, &e)) != NULL &&
       (y = malloc ((size_t) MM_GEMM_M * MM_GEMM_NK * sizeof *y)) != NULL;
  if (!b->o->json)
    {
      fprintf (b->out, "\nint8 GEMM: Y [%u, %u] int32 = A [%u, %u] uint8 · Wᵀ int8; GOPS = "
               "2·M·N·K / median time; peak = a register-resident loop of the kernels' VPDPBUSD "
               "(512 or 256 bits; without VNNI, AVX2's vpmaddubsw + vpmaddwd + vpaddd) on the "
               "same threads, run after each of the product's runs, and ratio, as in the GEMM "
               "rows\n", MM_GEMM_M, MM_GEMM_NK, MM_GEMM_M, MM_GEMM_NK);
      fprintf (b->out, "%-26s %3s %9s %9s %9s %7s %-7s\n", "op", "thr", "ms", "GOPS", "peak",
               "ratio", "target");
    }
  for (size_t t = 0; ok && t < b->n_threads; t++)
    {
      PiqEngine eng = engine_of (b, b->threads[t]);
      PiqEngineMatmulOut out = { PIQ_MM_OUT_INT32, { 25, 2, { MM_GEMM_M, MM_GEMM_NK }, 0, y,
                                 (size_t) MM_GEMM_M * MM_GEMM_NK * 4 }, 0, 0.0, 0, 0 };
      const double ops = 2.0 * MM_GEMM_M * MM_GEMM_NK * MM_GEMM_NK;
      double ts[MM_PAIRS], pk[MM_PAIRS], rt[MM_PAIRS], apk[MM_PAIRS], art[MM_PAIRS];
      double tmed, ratio;
      const char *label = "none";
      /* the same product against the AMX tiles' peak too, where the CPU has them (the
       * issue's target is against VPDPBUSD) */
      int amx = 0;
#if BENCH_X86
      amx = piq_cpu_amx_usable ();
#endif
      for (unsigned rep = 0; ok && rep < MM_PAIRS; rep++)
        {
          double t0 = now_s ();
          ok = piq_engine_matmul_int (&eng, &qa, ashape, 2, packed, NULL, &out, &e);
          ts[rep] = now_s () - t0;
          pk[rep] = int8_peak_gops (b, b->threads[t], &label);
          rt[rep] = pk[rep] > 0 ? ops / ts[rep] / 1e9 / pk[rep] : 0.0;
          apk[rep] = art[rep] = 0.0;
#if BENCH_X86
          if (amx)
            {
              apk[rep] = peak_rate (b->threads[t], amx_loop, 16 * 16 * 64 * 2.0 / 16);
              art[rep] = ops / ts[rep] / 1e9 / apk[rep];
            }
#endif
        }
      if (!ok)
        break;
      tmed = median (ts, MM_PAIRS);
      ratio = 100.0 * median (rt, MM_PAIRS);
      if (b->o->json)
        {
          const MmField fs[] = { { "ms_median", tmed * 1e3 }, { "gops", ops / tmed / 1e9 },
                                 { "peak_gops", ratio > 0 ? median (pk, MM_PAIRS) : NAN },
                                 { "ratio", ratio > 0 ? ratio / 100.0 : NAN },
                                 { "amx_peak_gops", amx ? median (apk, MM_PAIRS) : NAN },
                                 { "amx_ratio", amx ? median (art, MM_PAIRS) : NAN } };
          mm_json_row (b, name, b->threads[t], fs, sizeof fs / sizeof fs[0], label,
                       ratio > 0 ? 0.75 : 0.0,
                       ratio > 0 && b->threads[t] == b->max_threads ? ratio < 75 : -1, NULL);
        }
      else if (ratio > 0)
        fprintf (b->out, "%-26s %3u %9.2f %9.1f %9.1f %6.1f%% %s75%% (%s)\n", name,
                 b->threads[t], tmed * 1e3, ops / tmed / 1e9, median (pk, MM_PAIRS), ratio,
                 ratio < 75 ? "*" : " ", label);
      else
        fprintf (b->out, "%-26s %3u %9.2f %9.1f %9s %7s    -  (%s)\n", name, b->threads[t],
                 tmed * 1e3, ops / tmed / 1e9, "-", "-", label);
      if (amx && !b->o->json)
        fprintf (b->out, "%-26s %3u %9.2f %9.1f %9.1f %6.1f%%    -  (amx tdpbusd)\n", name,
                 b->threads[t], tmed * 1e3, ops / tmed / 1e9, median (apk, MM_PAIRS),
                 100.0 * median (art, MM_PAIRS));
    }
  if (!ok)
    mm_failed (b, name, 0, &e);
  piq_engine_packed_free (packed);
  free (ma);
  free (mw);
  free (y);
}

static void
mm_gemm (Bench *b)
{
  if (!b->o->json)
    {
      fprintf (b->out, "\nGEMM: Y [%u, %u] = X [%u, %u] · Wᵀ; GFLOP/s = 2·M·N·K / median "
               "time; peak = a register-resident FMA loop on the same threads (binary binary: "
               "2·M·N·K bit operations a second, against a register-resident XOR + popcount + "
               "add loop counted 2 per bit), run after each of the product's runs: the median "
               "of those runs; ratio = the median of each run's rate over the loop's rate after "
               "it\n", MM_GEMM_M, MM_GEMM_NK, MM_GEMM_M, MM_GEMM_NK);
      fprintf (b->out, "%-26s %3s %9s %9s %9s %7s %-7s\n", "op", "thr", "ms", "GFLOP/s", "peak",
               "ratio", "target");
    }
  for (size_t i = 0; i < sizeof mm_formats / sizeof mm_formats[0]; i++)
    for (int pol = 0; pol < MM_POLICIES; pol++)
      {
        const MmFormat *mf = &mm_formats[i];
        char name[64];
        PiqEngineFormat f;
        PiqEngineQuant q;
        PiqEngineError e;
        uint8_t *mem = NULL;
        PiqEnginePacked *packed = NULL;
        float *x = NULL, *y = NULL;
        PiqEngine eng1 = engine_of (b, 1);
        uint64_t shape[2] = { MM_GEMM_NK, MM_GEMM_NK };
        int ok;

        snprintf (name, sizeof name, "gemm %s %s", mf->name, MM_POLICY_NAME (pol));
        if (MM_POLICY_SKIP (mf, pol) || !mm_selected (b, name) || !mm_format (mf, &f))
          continue;
        ok = mm_quantize (b, &f, MM_GEMM_NK, MM_GEMM_NK, &q, &mem, &e) &&
             (packed = piq_engine_pack (&eng1, &q, shape, 2, MM_POLICY_ACT (pol), &e)) != NULL;
        x = malloc ((size_t) MM_GEMM_M * MM_GEMM_NK * sizeof *x);
        y = malloc ((size_t) MM_GEMM_M * MM_GEMM_NK * sizeof *y);
        ok = ok && x != NULL && y != NULL;
        if (ok)
          fill_normal (x, (uint64_t) MM_GEMM_M * MM_GEMM_NK, DATA_SEED + 1);
        for (size_t t = 0; ok && t < b->n_threads; t++)
          {
            PiqEngine eng = engine_of (b, b->threads[t]);
            PiqEngineView xv = { b->f32, 2, { MM_GEMM_M, MM_GEMM_NK }, 0, x,
                                 (size_t) MM_GEMM_M * MM_GEMM_NK * 4 };
            PiqEngineView yv = xv;
            const char *label = "none";
            const double ops = 2.0 * MM_GEMM_M * MM_GEMM_NK * MM_GEMM_NK;
            double ts[MM_PAIRS], pk[MM_PAIRS], rt[MM_PAIRS], ratio;
            yv.data = y;
            for (unsigned rep = 0; ok && rep < MM_PAIRS; rep++)
              {
                double t0 = now_s ();
                ok = piq_engine_matmul (&eng, &xv, packed, NULL, &yv, 0, &e);
                ts[rep] = now_s () - t0;
                /* binary activations: 2·M·N·K bit operations against the XNOR loop's */
                pk[rep] = pol == 2 ? xnor_peak_gops (b->threads[t], &label)
                                   : fma_peak_gflops (b->threads[t], &label);
                rt[rep] = pk[rep] > 0 ? ops / ts[rep] / 1e9 / pk[rep] : 0.0;
              }
            if (!ok)
              break;
            ratio = 100.0 * median (rt, MM_PAIRS);
            if (b->o->json)
              {
                const MmField fs[] = { { "ms_median", median (ts, MM_PAIRS) * 1e3 },
                                       { "gflops", ops / median (ts, MM_PAIRS) / 1e9 },
                                       { "peak_gflops", median (pk, MM_PAIRS) },
                                       { "ratio", ratio / 100.0 } };
                mm_json_row (b, name, b->threads[t], fs, sizeof fs / sizeof fs[0], label, 0.60,
                             ratio > 0 && b->threads[t] == b->max_threads ? ratio < 60 : -1, NULL);
              }
            else
              fprintf (b->out, "%-26s %3u %9.2f %9.1f %9.1f %6.1f%% %s60%% (%s)\n", name,
                       b->threads[t], median (ts, MM_PAIRS) * 1e3,
                       ops / median (ts, MM_PAIRS) / 1e9, median (pk, MM_PAIRS), ratio,
                       ratio > 0 && ratio < 60 ? "*" : " ", label);
          }
        if (!ok)
          mm_failed (b, name, 0, &e);
        piq_engine_packed_free (packed);
        free (mem);
        free (x);
        free (y);
      }
}

int
piq_bench_run (const PiqBenchOptions *o, FILE *out)
{
  static PiqKernelTable capped;   /* large; one run at a time */
  Bench b = { .o = o, .out = out, .first_json_item = 1 };
  size_t n_selected = 0;
  int status = 0;

  build_ops ();
  add_api_rows (o);
  b.f32 = dtype_by_name ("f32");
  b.bf16 = dtype_by_name ("bf16");
  b.repeat = o->repeat > 0 ? o->repeat : PIQ_BENCH_DEFAULT_REPEAT;
  if (b.repeat < PIQ_BENCH_MIN_REPEAT)
    {
      fprintf (stderr, "%s: at least %u runs per row give a stable median, not %u\n", PROG (o),
               PIQ_BENCH_MIN_REPEAT, b.repeat);
      return 2;
    }
  for (size_t i = 0; i < n_ops; i++)
    n_selected += op_selected (&b, &hot_ops[i]);
  n_selected += mm_any_selected (&b);
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
  b.llc = read_llc ();
  read_cpu_model (b.cpu, sizeof b.cpu);

  if (allocate (&b) != 0)
    {
      fprintf (stderr, "%s: out of memory for %llu elements\n", PROG (o), (unsigned long long) b.max_n);
      release (&b);
      return 1;
    }
  /* The thread team started before any timing. */
  {
    RowCtx c;
    PiqEngineError e;

    if (prepare_row (&b, &hot_ops[0], b.max_n, &c, &e))
      run_op (&b, &hot_ops[0], &c, b.max_threads, &e);
  }

  if (o->json)
    {
      fprintf (out, "{\n  \"tool\": \"piquant-bench\",\n  \"cpu\": ");
      json_string (out, b.cpu);
      fprintf (out, ",\n  \"kernels\": ");
      json_string (out, b.kernels_label);
      fprintf (out, ",\n  \"limit_kernels\": ");
      json_string (out, b.streamer.name);
      fprintf (out, ",\n  \"llc_bytes\": %llu,\n  \"llc_level\": %u,\n  \"llc_shared_cpus\": ",
               (unsigned long long) b.llc.bytes, b.llc.level);
      json_string (out, b.llc.shared);
      fprintf (out, ",\n  \"max_threads\": %u,\n  \"repeat\": %u,\n  \"grain\": %u,\n"
               "  \"statistic\": \"median\",\n  \"gb\": 1e9,\n  \"results\": [",
               b.max_threads, b.repeat, GRAIN);
    }
  else
    {
      char size[32];

      fprintf (out, "piquant bench: %s, %u threads available\n", b.cpu, b.max_threads);
      fprintf (out, "kernels %s; limit kernels %s; median of %u runs, warm buffers; each op is "
               "one engine call (piq_engine_*)\n", b.kernels_label, b.streamer.name, b.repeat);
      if (b.llc.bytes != 0)
        fprintf (out, "last-level cache: L%u, %s (cpu0's%s%s)\n", b.llc.level,
                 mib (b.llc.bytes, size, sizeof size), b.llc.shared[0] ? ", shared by CPUs " : "",
                 b.llc.shared);
      else
        fprintf (out, "last-level cache: unknown (no sysfs cache entries, no sysconf value)\n");
      fprintf (out, "GB/s = (bytes read + bytes written) / median time, 1 GB = 1e9 B; limit = the better of "
               "regular and non-temporal streaming stores over the same bytes and threads\n");
    }

  for (size_t e = 0; e < b.n_elements && n_selected > (size_t) mm_any_selected (&b); e++)
    {
      uint64_t n = b.elements[e];

      if (!o->json)
        print_table_header (&b, n);
      for (size_t i = 0; i < n_ops; i++)
        {
          if (!op_selected (&b, &hot_ops[i]))
            continue;
          for (size_t t = 0; t < b.n_threads; t++)
            {
              RowResult r;
              PiqEngineError err;

              if (!measure_row (&b, &hot_ops[i], n, b.threads[t], &r, &err))
                report_failed_row (&b, &hot_ops[i], n, b.threads[t], &err);
              else if (o->json)
                json_row (&b, &hot_ops[i], n, b.threads[t], &r);
              else
                print_row (&b, &hot_ops[i], n, b.threads[t], &r);
            }
        }
    }
  if (!o->json)
    fprintf (out, "\n* below target (targets apply at every core: %u threads here); "
             "regular = the limit with regular stores, as the kernels store;\n"
             "~ in more than %.0f%% of the row's timed runs its threads waited for a CPU "
             "(other processes), %d attempts running: rerun on an idle machine\n", b.max_threads,
             ROW_DISTURBED_SHARE * 100, ROW_ATTEMPTS);

  if (mm_any_selected (&b))
    {
      mm_gemv (&b);
      mm_gemm (&b);
      mm_gemm_int8 (&b);
    }

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
  return status != 0 ? status : b.failed ? 1 : 0;
}

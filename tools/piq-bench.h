/* piq-bench.h: every format's engine calls, against the machine's own limit
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib-free, like the engine it measures: `piquant bench` (GLib, adds the
 * public-API overhead through PiqBenchApi) and the static `piquant-bench` (carried to
 * machines without GLib) are both thin wrappers around piq_bench_run().
 *
 * Every row is one call of the engine function PiqQuantizer calls
 * (piq_engine_quantize, _dequantize, _requantize, _compute_params; piq-engine-private.h)
 * on warm buffers: the per-tensor integer rows and every preset of piq-format.c ×
 * {quantize nearest, quantize stochastic, dequantize SET, dequantize ADD}. Next to
 * it, in the same run and interleaved with it, streaming kernels that read and write
 * the same bytes with almost no compute give the limit of the machine for that byte
 * mix. The report names the last-level cache and whether the working set fits in
 * it. See docs/performance.md.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PIQ_BENCH_DEFAULT_REPEAT 25
#define PIQ_BENCH_MIN_REPEAT     20
#define PIQ_BENCH_MAX_THREADS    1024
#define PIQ_BENCH_MAX_LIST       32

/* The public-API path of the per-call overhead, supplied by a caller that links the
 * GLib library. setup() gets the scale and zero point of the f32 -> uint8 nearest
 * op before each size is timed; quantize_u8() then quantizes @n elements of @src
 * into @dst with them.
 * Both return 0 on success. */
typedef struct {
  const char *name;      /* "piq_quantizer_quantize_raw" */
  int (*setup)       (void *user_data, double scale, int64_t zero_point);
  int (*quantize_u8) (void *user_data, const float *src, size_t n, uint8_t *dst);
  void *user_data;
} PiqBenchApi;

/* A row of the GLib API that the engine-level benchmark cannot call itself
 * (observers, fake quantization), supplied by `piquant bench`. run() processes
 * @n elements: it reads read_bytes · n bytes from @src (N(0, 1) values, f32, or the
 * same values rounded to bf16 for a bf16 row; 2n of them for a row that reads two
 * arrays, x then dy) and writes write_bytes · n bytes to @dst (a buffer of the row's
 * type), on @threads threads; the row's limit streams the same bytes. Returns 0 on
 * success. */
typedef struct {
  const char *name;
  unsigned    read_bytes, write_bytes;     /* per element */
  int         target;                      /* percent of the limit; 0: none set */
  int (*run) (void *user_data, const void *src, size_t n, void *dst, unsigned threads);
  void       *user_data;
  int         bf16;                        /* 1: @src and @dst hold bf16, not f32 */
} PiqBenchApiRow;

typedef struct {
  /* element counts; n_elements 0: 27264000 and 1000000 (piq_bench_parse_list takes
   * "Kxllc" for K times the last-level cache of f32 source) */
  uint64_t    elements[PIQ_BENCH_MAX_LIST];
  size_t      n_elements;
  /* thread counts; n_threads 0: 1, 2, 4, … up to piq_parallel_max_threads(), and it */
  unsigned    threads[PIQ_BENCH_MAX_LIST];
  size_t      n_threads;
  unsigned    repeat;          /* timed runs per row; 0: PIQ_BENCH_DEFAULT_REPEAT */
  const char *op_filter;       /* comma-separated substrings of the op names to run; NULL: all */
  int         json;            /* one JSON document instead of the tables */
  const char *simd;            /* cap by kernel table name ("scalar", "avx2", …); NULL: best */
  int         max_level;       /* cap by PiqSimdLevel value, used when simd is NULL; < 0: none */
  int         skip_overhead;   /* no per-call overhead and crossover section */
  const PiqBenchApi *api;      /* NULL: no public-API column */
  const PiqBenchApiRow *api_rows;  /* rows after the engine's; NULL: none */
  size_t      n_api_rows;
  const char *program_name;    /* of the error messages; NULL: "piquant-bench" */
} PiqBenchOptions;

/* Fills @o with the defaults. */
void piq_bench_options_init (PiqBenchOptions *o);

/* Runs the benchmark and writes its report to @out. Returns 0, or 2 after printing
 * one line to stderr for a bad option (unknown table, repeat below the minimum, an op
 * filter that matches nothing), or 1 when memory runs out. */
int piq_bench_run (const PiqBenchOptions *o, FILE *out);

/* Writes the names of the hot ops, one a line, for --help. */
void piq_bench_list_ops (FILE *out);

/* Parses "a,b,c" of whole numbers in [min, max] into @values (at most
 * PIQ_BENCH_MAX_LIST in all, appended after *n_values). An item "Kxllc" stands for K
 * times the last-level cache's bytes over 4 (f32 elements that fill K LLCs), where
 * the cache size is known. Returns 0 or -1. */
int piq_bench_parse_list (const char *text, uint64_t min, uint64_t max,
                          uint64_t *values, size_t *n_values);

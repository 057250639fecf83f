/* piquant-bench.c: the benchmark without GLib
 *
 * The same core as `piquant bench` (piq-bench.c) on the GLib-free engine and kernel
 * layer alone, so that `make bench-static` can build one fully static binary to
 * carry to other machines. It lacks only the public-API column of the per-call
 * overhead.
 *
 * Exit status: 0 on success, 1 when memory runs out, 2 for a usage error.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piq-bench.h"

static void
print_help (FILE *out)
{
  fprintf (out,
           "Usage: piquant-bench [OPTION…]\n"
           "\n"
           "Times every format's engine calls against the machine's streaming limit for\n"
           "their byte mix.\n"
           "\n"
           "  -n, --elements N[,N…]   element counts (repeatable; default 27264000,1000000);\n"
           "                          Kxllc: K times the last-level cache of f32 source\n"
           "  -t, --threads T[,T…]    thread counts (default 1, 2, 4, … and every core)\n"
           "  -r, --repeat R          timed runs per row, at least %d (default %d)\n"
           "  -o, --op TEXT[,TEXT…]   only the ops whose name contains one of the TEXTs\n"
           "  -s, --simd NAME         cap the kernels at table NAME (scalar, sse4.2, avx2, avxvnni, avx512, avx512vnni, amx, neon, neondot)\n"
           "      --no-overhead       skip the per-call overhead and the crossover\n"
           "      --json              one JSON document instead of the tables\n"
           "  -h, --help              this help\n"
           "\n"
           "Ops:\n",
           PIQ_BENCH_MIN_REPEAT, PIQ_BENCH_DEFAULT_REPEAT);
  piq_bench_list_ops (out);
}

static int
usage_error (const char *message, const char *value)
{
  fprintf (stderr, "piquant-bench: %s “%s” (see “piquant-bench --help”)\n", message, value);
  return 2;
}

/* "--name=value", "--name value", "-x value": the value, advancing *i; NULL if
 * argv[*i] is not this option. *missing is set when the value is absent. */
static const char *
option_value (int argc, char **argv, int *i, const char *long_name, const char *short_name,
              int *missing)
{
  const char *arg = argv[*i];
  size_t len = strlen (long_name);

  if (strncmp (arg, long_name, len) == 0 && arg[len] == '=')
    return arg + len + 1;
  if (strcmp (arg, long_name) == 0 || (short_name != NULL && strcmp (arg, short_name) == 0))
    {
      if (*i + 1 >= argc)
        {
          *missing = 1;
          return NULL;
        }
      return argv[++*i];
    }
  return NULL;
}

int
main (int argc, char **argv)
{
  PiqBenchOptions o;

  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  piq_bench_options_init (&o);

  for (int i = 1; i < argc; i++)
    {
      const char *v;
      int missing = 0;

      if (strcmp (argv[i], "-h") == 0 || strcmp (argv[i], "--help") == 0)
        {
          print_help (stdout);
          return 0;
        }
      if (strcmp (argv[i], "--json") == 0)
        o.json = 1;
      else if (strcmp (argv[i], "--no-overhead") == 0)
        o.skip_overhead = 1;
      else if ((v = option_value (argc, argv, &i, "--elements", "-n", &missing)) != NULL)
        {
          if (piq_bench_parse_list (v, 1, UINT64_C (1) << 40, o.elements, &o.n_elements) != 0)
            return usage_error ("--elements needs whole numbers from 1 or Kxllc (where the "
                                "last-level cache is known), comma-separated, not", v);
        }
      else if ((v = option_value (argc, argv, &i, "--threads", "-t", &missing)) != NULL)
        {
          uint64_t t[PIQ_BENCH_MAX_LIST];
          size_t n = 0;

          if (piq_bench_parse_list (v, 1, PIQ_BENCH_MAX_THREADS, t, &n) != 0
              || o.n_threads + n > PIQ_BENCH_MAX_LIST)
            return usage_error ("--threads needs whole numbers from 1 to 1024, comma-separated, not", v);
          for (size_t k = 0; k < n; k++)
            o.threads[o.n_threads++] = (unsigned) t[k];
        }
      else if ((v = option_value (argc, argv, &i, "--repeat", "-r", &missing)) != NULL)
        {
          uint64_t r[PIQ_BENCH_MAX_LIST];
          size_t n = 0;

          if (piq_bench_parse_list (v, PIQ_BENCH_MIN_REPEAT, 100000, r, &n) != 0 || n != 1)
            return usage_error ("--repeat needs one whole number from 20 to 100000, not", v);
          o.repeat = (unsigned) r[0];
        }
      else if ((v = option_value (argc, argv, &i, "--op", "-o", &missing)) != NULL)
        o.op_filter = v;
      else if ((v = option_value (argc, argv, &i, "--simd", "-s", &missing)) != NULL)
        o.simd = v;
      else if (missing)
        return usage_error ("missing value after", argv[i]);
      else
        return usage_error ("unknown option", argv[i]);
    }
  return piq_bench_run (&o, stdout);
}

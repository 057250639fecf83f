#!/bin/sh
# compare-libs.sh: piquant's f32 -> uint8 quantize against torch, oneDNN and XNNPACK
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Not run by `make check` or CI: it times other people's libraries, which a build
# need not have. In one run it times, on the same 27,264,000 N(0, 1) floats (seed 42,
# piquant-bench's data) with the same scale and zero point (min/max rule, uint8):
#   - piquant:  tools/piquant-bench --op 'f32->u8 nearest' (one engine call per
#               run, piq_engine_quantize, as the library calls it);
#   - oneDNN:   a reorder f32 -> u8 with output-scale and zero-point attributes;
#   - XNNPACK:  xnn_create_convert_nc_f32_qu8 / xnn_run_operator on a pthreadpool;
#   - torch:    torch.quantize_per_tensor(x, scale, zero_point, torch.quint8);
# and prints one table, with each result's agreement with piquant's bytes.
#
# It installs nothing. On Debian 12 the parts need:
#   oneDNN   libdnnl-dev
#   XNNPACK  libxnnpack-dev and libpthreadpool-dev (xnnpack.h includes pthreadpool.h,
#            but libxnnpack-dev does not depend on libpthreadpool-dev)
#   torch    python3-torch (brings python3-numpy)
# A part whose package is missing is skipped with a note.
#
# Usage: tools/compare-libs.sh [--elements N] [--threads T[,T…]] [--repeat R]
# Environment: PIQUANT_BENCH (default: piquant-bench next to this script; build it
# with `make -C tools piquant-bench`, or point at piquant-bench-static), CC, PYTHON.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
elements=27264000
repeat=25
cores=$(nproc 2>/dev/null || echo 1)
if [ "$cores" -gt 1 ]; then threads="1,$cores"; else threads=1; fi

while [ $# -gt 0 ]; do
  case $1 in
    --elements) elements=$2; shift 2 ;;
    --threads)  threads=$2; shift 2 ;;
    --repeat)   repeat=$2; shift 2 ;;
    -h|--help)  sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-libs.sh: unknown argument “$1” (see --help)" >&2; exit 2 ;;
  esac
done

bench=${PIQUANT_BENCH:-$here/piquant-bench}
if [ ! -x "$bench" ]; then
  echo "compare-libs.sh: no $bench; run “make -C tools piquant-bench” first" >&2
  exit 2
fi
cc=${CC:-cc}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/piq-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
: > "$tmp/results"
note () { echo "$*" | tee -a "$tmp/notes" >&2; }

# ---- piquant ----
note "# piquant: $bench --op 'f32->u8 nearest' --elements $elements --threads $threads --repeat $repeat"
"$bench" --op 'f32->u8 nearest' --elements "$elements" --threads "$threads" --repeat "$repeat" \
  --json --no-overhead > "$tmp/piquant.json"
# One result object a line: pick the fields with awk, no JSON tool needed.
awk '
  function field(name,   m) {
    if (match($0, "\"" name "\": [^,}]*")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*: /, "", m); gsub(/"/, "", m); return m }
    return ""
  }
  /"kernels":/ { k = field("kernels") }
  /"op": "f32->u8 nearest"/ {
    printf "lib piquant threads %s ms_median %s ms_min %s agree ref limit %s ratio %s kernels %s\n",
      field("threads"), field("ms_median"), field("ms_min"), field("limit_gbps"), field("ratio"), k
  }' "$tmp/piquant.json" >> "$tmp/results"

# ---- oneDNN and XNNPACK, in one C program ----
have_header () { printf '#include <%s>\n' "$1" | $cc -E -x c - > /dev/null 2>&1; }
defs= libs=
if have_header oneapi/dnnl/dnnl.h; then defs="$defs -DHAVE_DNNL"; libs="$libs -ldnnl"
else note "# oneDNN: skipped, no <oneapi/dnnl/dnnl.h> (Debian package libdnnl-dev)"; fi
if have_header xnnpack.h && have_header pthreadpool.h; then
  defs="$defs -DHAVE_XNNPACK"; libs="$libs -lXNNPACK -lpthreadpool"
else note "# XNNPACK: skipped, no <xnnpack.h> or <pthreadpool.h> (libxnnpack-dev, libpthreadpool-dev)"; fi
# shellcheck disable=SC2086
if ! $cc -O2 -fopenmp $defs -o "$tmp/compare-libs" "$here/compare/compare-libs.c" $libs -lm 2> "$tmp/cc.log"; then
  note "# oneDNN/XNNPACK: the comparison program did not build:"; cat "$tmp/cc.log" >&2
  # still needed for the data and the reference: build it without either library
  $cc -O2 -fopenmp -o "$tmp/compare-libs" "$here/compare/compare-libs.c" -lm
fi
"$tmp/compare-libs" --elements "$elements" --threads "$threads" --repeat "$repeat" \
  --data "$tmp/data.f32" --ref "$tmp/ref.u8" > "$tmp/c.out"
grep '^#' "$tmp/c.out" | tee -a "$tmp/notes" >&2 || true
grep '^lib ' "$tmp/c.out" >> "$tmp/results" || true
scale=$(awk '/^# scale/ { print $3 }' "$tmp/c.out")
zero_point=$(awk '/^# zero_point/ { print $3 }' "$tmp/c.out")

# ---- torch ----
# Debian's python3-torch lives in /usr/bin/python3's dist-packages: prefer that one.
python=${PYTHON:-}
if [ -z "$python" ]; then
  for p in /usr/bin/python3 python3; do
    if "$p" -c 'import torch' > /dev/null 2>&1; then python=$p; break; fi
  done
fi
if [ -n "$python" ]; then
  "$python" "$here/compare/compare-torch.py" --data "$tmp/data.f32" --ref "$tmp/ref.u8" \
    --scale "$scale" --zero-point "$zero_point" --threads "$threads" --repeat "$repeat" > "$tmp/t.out"
  grep '^#' "$tmp/t.out" | tee -a "$tmp/notes" >&2 || true
  grep '^lib ' "$tmp/t.out" >> "$tmp/results" || true
else
  note "# torch: skipped, no python3 that imports torch (Debian package python3-torch)"
fi

# ---- the table ----
echo
echo "f32 -> uint8, $elements elements, scale $scale, zero point $zero_point;" \
     "median of $repeat runs; GB/s counts 5 bytes per element (4 read, 1 written)"
awk -v n="$elements" '
  { delete f
    for (i = 2; i < NF; i++)
      if ($i ~ /^(threads|ms_median|ms_min|agree|limit|ratio)$/) f[$i] = $(i + 1)
    lib = $0; sub(/^lib /, "", lib); sub(/ threads .*/, "", lib)
    rows[++nr] = lib; thr[nr] = f["threads"]; med[nr] = f["ms_median"]; mn[nr] = f["ms_min"]
    agr[nr] = f["agree"]
    if (lib == "piquant") {
      base[f["threads"]] = f["ms_median"]; pt[++np] = f["threads"]
      lim[f["threads"]] = f["limit"]; rat[f["threads"]] = f["ratio"]
    }
  }
  END {
    printf "%-30s %7s %10s %10s %8s %12s %16s\n", "library", "threads", "ms median", "ms min", "GB/s", "time/piquant", "same bytes"
    for (i = 1; i <= nr; i++) {
      same = agr[i] == "ref" ? "(reference)" : sprintf("%.6f%%", agr[i] * 100)
      rel = base[thr[i]] != "" ? sprintf("%.2fx", med[i] / base[thr[i]]) : "-"
      printf "%-30s %7s %10.3f %10.3f %8.2f %12s %16s\n", rows[i], thr[i], med[i], mn[i], n * 5 / (med[i] * 1e-3) / 1e9, rel, same
    }
    for (i = 1; i <= np; i++)
      printf "piquant at %s thread(s): %.1f%% of the same-run streaming limit (%.2f GB/s)\n", pt[i], rat[pt[i]] * 100, lim[pt[i]]
  }' "$tmp/results"

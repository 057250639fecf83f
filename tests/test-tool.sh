#!/bin/sh
# test-tool.sh: the piquant command-line tool, run as a user runs it.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Prints TAP. Covers: --help of the tool and of every command; usage errors
# (exit 2) and file errors (exit 1); `quantize` and `dequantize` round trips
# of .npy files (f32, f64, f16, and bf16 stored as uint16) and of raw files,
# checked byte for byte against numpy's own round-half-even (and counter-hash
# stochastic) arithmetic with the scale and zero point recorded in the
# container; the .npy header written as numpy writes it; the .piqt container's
# layout; no progress output when stderr is not a terminal, and a progress
# line when it is one.
#
# Environment: G_TEST_BUILDDIR (tests/ of the build tree; the tool is
# ../tools/piquant from there), PYTHON3 (optional: a Python with numpy; else
# /usr/bin/python3, else python3 on PATH). Tests that need numpy are reported
# as skipped without it.

builddir=${G_TEST_BUILDDIR:-$(dirname "$0")}
tool=$builddir/../tools/piquant

n=0
failed=0

ok () {
  n=$((n + 1))
  echo "ok $n - $1"
}

not_ok () {
  n=$((n + 1))
  failed=$((failed + 1))
  echo "not ok $n - $1"
  shift
  for line in "$@"; do
    printf '%s\n' "$line" | sed 's/^/# /'
  done
}

skip () {
  n=$((n + 1))
  echo "ok $n - $1 # SKIP $2"
}

# check NAME COMMAND...: passes when COMMAND succeeds; its output goes to the
# diagnostics of a failure.
check () {
  name=$1
  shift
  if out=$("$@" 2>&1); then
    ok "$name"
  else
    not_ok "$name" "$out"
  fi
}

# check_exit NAME STATUS PATTERN COMMAND...: COMMAND exits with STATUS and
# prints exactly one line on stderr, matching the grep pattern PATTERN.
check_exit () {
  name=$1 want=$2 pattern=$3
  shift 3
  "$@" > "$tmp/stdout" 2> "$tmp/stderr"
  got=$?
  lines=$(wc -l < "$tmp/stderr")
  if [ "$got" -eq "$want" ] && [ "$lines" -eq 1 ] && grep -q -e "$pattern" "$tmp/stderr"; then
    ok "$name"
  else
    not_ok "$name" "exit status $got (want $want), $lines line(s) on stderr (want 1 matching '$pattern'):" \
      "$(cat "$tmp/stderr")"
  fi
}

if [ ! -x "$tool" ]; then
  echo "1..1"
  echo "not ok 1 - tool/found # $tool is not built"
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/piq-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# A Python with numpy, and any Python (for the terminal test).
python=
numpy_python=
for candidate in ${PYTHON3:+"$PYTHON3"} /usr/bin/python3 python3; do
  command -v "$candidate" > /dev/null 2>&1 || continue
  [ -n "$python" ] || python=$candidate
  if "$candidate" -c 'import numpy' > /dev/null 2>&1; then
    numpy_python=$candidate
    break
  fi
done

# ---- help ----

if "$tool" --help > "$tmp/help" 2>&1 && grep -q '^  quantize ' "$tmp/help" &&
   grep -q '^  dequantize ' "$tmp/help"; then
  ok "help/tool"
else
  not_ok "help/tool" "$(cat "$tmp/help")"
fi

for cmd in info demo bench quantize dequantize inspect help; do
  if "$tool" "$cmd" --help > "$tmp/help" 2>&1 && grep -q "piquant $cmd" "$tmp/help"; then
    ok "help/$cmd"
  else
    not_ok "help/$cmd" "$(cat "$tmp/help")"
  fi
done

"$tool" quantize --help > "$tmp/help1" 2>&1
"$tool" help quantize > "$tmp/help2" 2>&1
check "help/help-quantize-same-text" cmp "$tmp/help1" "$tmp/help2"
missing=
for option in --dtype --preset --input-dtype --input-format --rounding --seed --scale-rule \
              --no-include-zero --scale --zero-point --granularity --axis --symmetric --block-size \
              --scale-dtype --double-quant --threads --no-progress; do
  grep -q -e "$option" "$tmp/help1" || missing="$missing $option"
done
"$tool" dequantize --help > "$tmp/help1" 2>&1
for option in --output-dtype --format --threads --no-progress; do
  grep -q -e "$option" "$tmp/help1" || missing="$missing $option"
done
if [ -z "$missing" ]; then
  ok "help/every-option-listed"
else
  not_ok "help/every-option-listed" "missing:$missing"
fi

check "version" sh -c "'$tool' --version | grep -q '^piquant [0-9]'"

# The demo on a small tensor: the integer table, then one formats row per
# preset (the presets are the names the formats table starts its rows with).
if "$tool" demo -n 4099 -r nearest -t 1 > "$tmp/demo" 2>&1; then
  missing=
  for name in int8 uint4 mxfp8_e4m3 mxfp8_e5m2 mxfp6_e2m3 mxfp6_e3m2 mxfp4 mxint8 nf4 fp4_bnb nf8 \
              fp8_e4m3 fp8_e5m2 int8_block int4_block binary q8_0 q4_0; do
    grep -q "^$name " "$tmp/demo" || missing="$missing $name"
  done
  if [ -z "$missing" ] && grep -q 'B/elem' "$tmp/demo" && grep -q 'MAE' "$tmp/demo"; then
    ok "demo/integer-and-formats-tables"
  else
    not_ok "demo/integer-and-formats-tables" "missing rows:$missing" "$(cat "$tmp/demo")"
  fi
else
  not_ok "demo/integer-and-formats-tables" "$(cat "$tmp/demo")"
fi

# With both rounding modes, the footer states what stochastic rounding costs
# in the block formats, as measured in that run; the help says how to run a
# short demo.
if "$tool" demo -n 4099 -t 1 > "$tmp/demo" 2>&1 &&
   grep -q '^Stochastic rounding costs more in the block formats: their stochastic rows took [0-9][0-9]*\.[0-9]x the time of their nearest rows to quantize in this run\.$' "$tmp/demo"; then
  ok "demo/block-stochastic-cost"
else
  not_ok "demo/block-stochastic-cost" "$(tail -5 "$tmp/demo")"
fi
if "$tool" demo --help > "$tmp/help" 2>&1 && grep -q 'short run.*piquant demo --elements [0-9]' "$tmp/help" &&
   ! grep -q 'every integer type' "$tmp/help"; then
  ok "demo/help-short-run"
else
  not_ok "demo/help-short-run" "$(cat "$tmp/help")"
fi

# The man page and the bash completion know every command and option that
# --help lists.
srcdir=${G_TEST_SRCDIR:-$(dirname "$0")}
man=$srcdir/../tools/piquant.1
completion=$srcdir/../tools/piquant-completion.bash
commands=$("$tool" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { on = 0 } on && NF { print $1 }')
if [ -f "$man" ]; then
  sed 's/\\-/-/g' "$man" > "$tmp/man.txt"
  missing=
  for cmd in $commands; do
    grep -q "^\.SS \"piquant $cmd" "$tmp/man.txt" || missing="$missing $cmd"
    for option in $("$tool" "$cmd" --help | grep -o -e '--[a-z][a-z0-9-]*' | sort -u); do
      grep -q -e "$option" "$tmp/man.txt" || missing="$missing $cmd$option"
    done
  done
  if [ -z "$missing" ]; then
    ok "man/every-command-and-option"
  else
    not_ok "man/every-command-and-option" "not in $man:$missing"
  fi
else
  skip "man/every-command-and-option" "$man not found"
fi
if [ -f "$completion" ] && command -v bash > /dev/null 2>&1; then
  missing=
  for cmd in $commands; do
    known=$(bash -c '. "$1" && echo "$_piquant_commands" && _piquant_options "$2"' sh "$completion" "$cmd")
    case " $(echo $known) " in *" $cmd "*) ;; *) missing="$missing $cmd" ;; esac
    for option in $("$tool" "$cmd" --help | grep -o -e '--[a-z][a-z0-9-]*' | sort -u); do
      case " $(echo $known) " in *" $option "*) ;; *) missing="$missing $cmd$option" ;; esac
    done
  done
  if [ -z "$missing" ]; then
    ok "completion/every-command-and-option"
  else
    not_ok "completion/every-command-and-option" "not in $completion:$missing"
  fi
else
  skip "completion/every-command-and-option" "no bash or $completion"
fi

# ---- usage errors: exit 2, one line ----

head -c 4096 /dev/zero > "$tmp/zeros.f32"

check_exit "usage/quantize/no-arguments" 2 'INPUT and OUTPUT are missing' "$tool" quantize
check_exit "usage/quantize/no-output" 2 'OUTPUT is missing' "$tool" quantize "$tmp/zeros.f32"
check_exit "usage/quantize/extra-argument" 2 'unexpected argument' \
  "$tool" quantize -i f32 "$tmp/zeros.f32" "$tmp/a.piqt" extra
check_exit "usage/quantize/unknown-option" 2 'Unknown option' \
  "$tool" quantize --frobnicate "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-with-block" 2 'per-channel and per-block scales are derived' \
  "$tool" quantize -i f32 --granularity block --scale 0.5 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-with-preset-block" 2 'per-channel and per-block scales are derived' \
  "$tool" quantize -i f32 --preset mxfp4 --scale 0.5 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-with-ggml" 2 'ggml types keep their scales' \
  "$tool" quantize -i f32 -d q8_0 --scale 0.5 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/preset-unknown" 2 "no preset is called 'mxfp5' (presets: mxfp8_e4m3" \
  "$tool" quantize -i f32 --preset mxfp5 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-dtype-unknown" 2 "scale-dtype must be f32, f16 or e8m0, not 'bf16'" \
  "$tool" quantize -i f32 -g block --scale-dtype bf16 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-dtype-per-tensor" 2 'scale-dtype applies to --granularity channel or block' \
  "$tool" quantize -i f32 --scale-dtype f16 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/double-quant-per-tensor" 2 'double quantization applies to the f32 per-block or per-channel scales' \
  "$tool" quantize -i f32 --double-quant "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/pow2-rule-f32-scales" 2 'power-of-two rules need MX elements with e8m0 scales' \
  "$tool" quantize -i f32 -d int8 -g block --scale-rule pow2-floor "$tmp/zeros.f32" "$tmp/a.piqt"
# Channels are an axis of the input's shape now, no longer rows of --block-size.
check_exit "usage/quantize/channel-block-size" 2 'block-size applies to --granularity block' \
  "$tool" quantize -i f32 -d int8 -g channel -b 1000 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/axis-per-tensor" 2 'axis applies to --granularity channel' \
  "$tool" quantize -i f32 -d int8 --axis 1 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/axis-range" 2 'axis needs a whole number from -8 to 7' \
  "$tool" quantize -i f32 -d int8 -g channel --axis 8 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/axis-not-in-input" 2 'zeros.f32: .*axis' \
  "$tool" quantize -i f32 -d int8 -g channel --axis 1 "$tmp/zeros.f32" "$tmp/a.piqt"
# A rule that does not apply to the format is refused, never recorded unapplied.
check_exit "usage/quantize/rule-not-for-format" 2 'min-max' \
  "$tool" quantize -i f32 -p mxfp4 --scale-rule min-max "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/rule-not-for-symmetric" 2 'min-max' \
  "$tool" quantize -i f32 -d int8 --symmetric --scale-rule min-max "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/seed-with-nearest" 2 'seed applies to --rounding stochastic' \
  "$tool" quantize -i f32 --seed 5 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/zero-point-code-format" 2 'zero point' \
  "$tool" quantize -i f32 -d fp8_e4m3 --scale 1 --zero-point 0 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/granularity-unknown" 2 'must be tensor, channel or block' \
  "$tool" quantize -i f32 --granularity row "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/block-size-per-tensor" 2 'block-size applies to --granularity block' \
  "$tool" quantize -i f32 --block-size 64 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/dtype-float" 2 'dtype must be one of uint2' \
  "$tool" quantize -i f32 --dtype f32 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/input-dtype-integer" 2 "must be one of f32, f64, bf16, f16, not 'uint8'" \
  "$tool" quantize -i uint8 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/rounding" 2 'rounding must be one of nearest, stochastic' \
  "$tool" quantize -i f32 --rounding up "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-rule" 2 'scale-rule must be one of min-max' \
  "$tool" quantize -i f32 --scale-rule median "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-zero" 2 'finite number greater than 0' \
  "$tool" quantize -i f32 --scale 0 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-nan" 2 'finite number greater than 0' \
  "$tool" quantize -i f32 --scale nan "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/zero-point-alone" 2 'zero-point needs --scale' \
  "$tool" quantize -i f32 --zero-point 3 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/zero-point-range" 2 'outside the int8 range' \
  "$tool" quantize -i f32 -d int8 --scale 1 --zero-point 200 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/scale-and-rule" 2 'does not apply' \
  "$tool" quantize -i f32 --scale 1 --scale-rule abs-max "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/seed" 2 'seed needs a whole number' \
  "$tool" quantize -i f32 --seed -1 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/threads" 2 'threads must be from 0 to' \
  "$tool" quantize -i f32 --threads 5000 "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/quantize/raw-without-input-dtype" 2 'needs --input-dtype' \
  "$tool" quantize "$tmp/zeros.f32" "$tmp/a.piqt"
check_exit "usage/dequantize/no-output" 2 'OUTPUT is missing' "$tool" dequantize "$tmp/a.piqt"
check_exit "usage/dequantize/output-dtype" 2 'output-dtype must be one of f32' \
  "$tool" dequantize --output-dtype uint8 "$tmp/a.piqt" "$tmp/a.npy"
check_exit "usage/dequantize/format" 2 'format must be npy or raw' \
  "$tool" dequantize --format csv "$tmp/a.piqt" "$tmp/a.npy"
check_exit "usage/unknown-command" 2 'unknown command' "$tool" frobnicate
if [ -e "$tmp/a.piqt" ]; then
  not_ok "usage/no-output-written" "a usage error wrote $tmp/a.piqt"
else
  ok "usage/no-output-written"
fi

# ---- file errors: exit 1, one line ----

head -c 4098 /dev/zero > "$tmp/odd.f32"
check_exit "file/quantize/missing" 1 'cannot open .*missing.npy' \
  "$tool" quantize "$tmp/missing.npy" "$tmp/a.piqt"
check_exit "file/quantize/directory" 1 'is a directory' "$tool" quantize -i f32 "$tmp" "$tmp/a.piqt"
check_exit "file/quantize/raw-size" 1 '4098 bytes is not a whole number of 4-byte f32 elements' \
  "$tool" quantize -i f32 "$tmp/odd.f32" "$tmp/a.piqt"
cp "$tmp/odd.f32" "$tmp/bad.npy"
check_exit "file/quantize/npy-no-magic" 1 'not a .npy file' "$tool" quantize "$tmp/bad.npy" "$tmp/a.piqt"
check_exit "file/quantize/output-directory-missing" 1 'cannot create' \
  "$tool" quantize -i f32 "$tmp/zeros.f32" "$tmp/no/such/dir/a.piqt"
check_exit "file/dequantize/missing" 1 'cannot open' "$tool" dequantize "$tmp/missing.piqt" "$tmp/x.npy"
check_exit "file/dequantize/not-a-container" 1 'not a piquant container' \
  "$tool" dequantize "$tmp/zeros.f32" "$tmp/x.npy"

# A valid container of zeros, then damaged copies of it.
check "raw/quantize-zeros" "$tool" quantize -i f32 "$tmp/zeros.f32" "$tmp/zeros.piqt"
check "raw/dequantize-zeros" "$tool" dequantize "$tmp/zeros.piqt" "$tmp/zeros.out"
check "raw/zeros-round-trip" cmp "$tmp/zeros.f32" "$tmp/zeros.out"
if [ "$(head -c 4 "$tmp/zeros.piqt")" = PIQT ] && grep -q '^granularity=tensor$' "$tmp/zeros.piqt" &&
   [ $(( $(wc -c < "$tmp/zeros.piqt") % 64 )) -eq 0 ]; then
  ok "container/magic-and-alignment"
else
  not_ok "container/magic-and-alignment" "$(head -c 256 "$tmp/zeros.piqt" | od -c | head)"
fi

size=$(wc -c < "$tmp/zeros.piqt")
head -c $((size - 1)) "$tmp/zeros.piqt" > "$tmp/short.piqt"
check_exit "file/dequantize/short" 1 'the file has' "$tool" dequantize "$tmp/short.piqt" "$tmp/x.npy"
head -c 40 "$tmp/zeros.piqt" > "$tmp/short.piqt"
check_exit "file/dequantize/short-header" 1 'ends inside the container header' \
  "$tool" dequantize "$tmp/short.piqt" "$tmp/x.npy"
{ cat "$tmp/zeros.piqt"; printf 'x'; } > "$tmp/long.piqt"
check_exit "file/dequantize/trailing-bytes" 1 'the file has' "$tool" dequantize "$tmp/long.piqt" "$tmp/x.npy"
{ printf 'PIQT\003'; tail -c +6 "$tmp/zeros.piqt"; } > "$tmp/v3.piqt"
check_exit "file/dequantize/version-3" 1 'version 3 is not supported' \
  "$tool" dequantize "$tmp/v3.piqt" "$tmp/x.npy"
LC_ALL=C sed 's/^granularity=tensor$/granularity=row   /' "$tmp/zeros.piqt" > "$tmp/row.piqt"
check_exit "file/dequantize/granularity-unknown" 1 "granularity 'row' is not supported" \
  "$tool" dequantize "$tmp/row.piqt" "$tmp/x.npy"
LC_ALL=C sed 's/^n_elements=1024$/n_elements=1025/' "$tmp/zeros.piqt" > "$tmp/count.piqt"
check_exit "file/dequantize/shape-count" 1 'holds 1024 elements, n_elements says 1025' \
  "$tool" dequantize "$tmp/count.piqt" "$tmp/x.npy"
if [ -e "$tmp/x.npy" ]; then
  not_ok "file/no-output-written" "a failed dequantize wrote $tmp/x.npy"
else
  ok "file/no-output-written"
fi
leftovers=$(ls "$tmp" | grep -e '\.[A-Za-z0-9]\{6\}$' | grep -v -e '\.f32$' -e '\.piqt$')
if [ -z "$leftovers" ]; then
  ok "file/no-temporary-files-left"
else
  not_ok "file/no-temporary-files-left" "$leftovers"
fi

# ---- inspect: the header of a .npy or .piqt file ----

# check_inspect NAME FILE LINE...: inspect FILE exits 0, prints nothing on
# stderr and prints every LINE exactly (a whole line of its output).
check_inspect () {
  name=$1 file=$2
  shift 2
  "$tool" inspect "$file" > "$tmp/stdout" 2> "$tmp/stderr"
  got=$?
  missing=
  for line in "$@"; do
    grep -qxF -e "$line" "$tmp/stdout" || missing="$missing
$line"
  done
  if [ $got -eq 0 ] && [ ! -s "$tmp/stderr" ] && [ -z "$missing" ]; then
    ok "$name"
  else
    not_ok "$name" "exit $got; missing lines:$missing" "$(cat "$tmp/stdout" "$tmp/stderr")"
  fi
}

"$tool" dequantize "$tmp/zeros.piqt" "$tmp/zeros.npy" > /dev/null 2>&1
check_inspect "inspect/npy" "$tmp/zeros.npy" "format:       npy 1.0" \
  "descr:        '<f4' (f32)" "shape:        [1024]" "elements:     1024" \
  "data offset:  128" "data bytes:   4096"
# Every key of the container's header text, as the file has it.
set -- "format:       piqt 2" "shape:        [1024]" "elements:     1024" \
  "data bytes:   1024 codes, 0 scales, 0 zero points" "header keys:"
while IFS= read -r key; do
  set -- "$@" "  $key"
done <<EOF_KEYS
$(LC_ALL=C grep -a -e '^[a-z_]*=' "$tmp/zeros.piqt")
EOF_KEYS
check_inspect "inspect/piqt" "$tmp/zeros.piqt" "$@"
check_exit "inspect/npy-short-data" 1 'zeros-short.npy: the file is too short: its header announces 4096 bytes' \
  sh -c 'head -c 1000 "$1" > "$2" && exec "$3" inspect "$2"' sh "$tmp/zeros.npy" "$tmp/zeros-short.npy" "$tool"
check_exit "inspect/npy-short-header" 1 'ends inside the .npy header' \
  sh -c 'head -c 20 "$1" > "$2" && exec "$3" inspect "$2"' sh "$tmp/zeros.npy" "$tmp/zeros-short.npy" "$tool"
check_exit "inspect/piqt-short-data" 1 'the file has' \
  sh -c 'head -c $(($(wc -c < "$1") - 1)) "$1" > "$2" && exec "$3" inspect "$2"' sh \
  "$tmp/zeros.piqt" "$tmp/zeros-short.piqt" "$tool"
check_exit "inspect/piqt-short-header" 1 'ends inside the container header' \
  sh -c 'head -c 40 "$1" > "$2" && exec "$3" inspect "$2"' sh "$tmp/zeros.piqt" "$tmp/zeros-short.piqt" "$tool"
check_exit "inspect/piqt-version-3" 1 'version 3 is not supported' "$tool" inspect "$tmp/v3.piqt"
check_exit "inspect/not-a-tensor-file" 1 'odd.f32: not a .npy, .piqt or safetensors file' \
  "$tool" inspect "$tmp/odd.f32"
: > "$tmp/empty"
check_exit "inspect/empty" 1 'empty: the file is empty' "$tool" inspect "$tmp/empty"
printf '\007\000\000\000\000\000\000\000{"a":1}' > "$tmp/a.safetensors"
check_exit "inspect/safetensors-malformed" 1 "a.safetensors: tensor 'a' is not" \
  "$tool" inspect "$tmp/a.safetensors"
check_exit "inspect/missing" 1 'cannot open' "$tool" inspect "$tmp/missing.npy"
check_exit "inspect/pipe" 1 'cannot be read again' sh -c 'cat "$2" | "$1" inspect /dev/stdin' sh \
  "$tool" "$tmp/zeros.npy"
check_exit "usage/inspect/no-argument" 2 'FILE is missing' "$tool" inspect
check_exit "usage/inspect/extra-argument" 2 'unexpected argument' \
  "$tool" inspect "$tmp/zeros.npy" extra

# ---- summary: one line on success, none with --quiet ----

# check_summary NAME WANT_STDOUT WANT_STDERR COMMAND...: COMMAND succeeds and
# prints exactly the lines matching WANT_STDOUT (a grep pattern, or empty for
# nothing) on stdout and WANT_STDERR on stderr.
check_summary () {
  name=$1 want_out=$2 want_err=$3
  shift 3
  "$@" > "$tmp/stdout" 2> "$tmp/stderr"
  got=$?
  good=yes
  [ $got -eq 0 ] || good=
  for stream in out err; do
    eval "want=\$want_$stream"
    if [ -z "$want" ]; then
      [ -s "$tmp/std$stream" ] && good=
    else
      { [ "$(wc -l < "$tmp/std$stream")" -eq 1 ] && grep -q -e "$want" "$tmp/std$stream"; } || good=
    fi
  done
  if [ -n "$good" ]; then
    ok "$name"
  else
    not_ok "$name" "exit $got; stdout:" "$(cat "$tmp/stdout")" "stderr:" "$(cat "$tmp/stderr")"
  fi
}

# 1024 zeros: the input's type and shape, the format in words and the size.
check_summary "summary/quantize" 'zeros.f32 (f32, \[1024\]) .* .*/s.piqt: int4 per block of 32 (f32 scales, affine), 1\.1.*KiB$' '' \
  "$tool" quantize -i f32 -d int4 -g block -b 32 "$tmp/zeros.f32" "$tmp/s.piqt"
check_summary "summary/quantize-quiet" '' '' \
  "$tool" quantize -q -i f32 -d int4 -g block -b 32 "$tmp/zeros.f32" "$tmp/s.piqt"
check_summary "summary/quantize-quiet-long" '' '' \
  "$tool" quantize --quiet -i f32 "$tmp/zeros.f32" "$tmp/s.piqt"
check_summary "summary/dequantize" 's.piqt (uint8 per tensor (affine), \[1024\]) .* .*/s.npy: f32 npy, 4\.1.*KiB$' '' \
  "$tool" dequantize "$tmp/s.piqt" "$tmp/s.npy"
check_summary "summary/dequantize-quiet" '' '' "$tool" dequantize --quiet "$tmp/s.piqt" "$tmp/s.raw"
# Written directly to stdout, the data stay clean: the line goes to stderr.
check_summary "summary/dequantize-to-stdout-on-stderr" '' 's.piqt (.*) .* /dev/stdout: f32 raw, 4\.0.*KiB$' \
  sh -c '"$1" dequantize "$2" /dev/stdout | cmp -s - "$3"' sh "$tool" "$tmp/s.piqt" "$tmp/zeros.f32"
check_summary "summary/failure-prints-none" '' 'cannot open' \
  sh -c '"$1" dequantize "$2" "$3"; [ $? -eq 1 ]' sh "$tool" "$tmp/missing.piqt" "$tmp/x.npy"

# ---- progress: only on a terminal ----

head -c 8000000 /dev/zero > "$tmp/big.f32"
"$tool" quantize -i f32 "$tmp/big.f32" "$tmp/big.piqt" > "$tmp/stdout" 2> "$tmp/stderr"
status=$?
# On stdout, only the summary line (checked under "summary" below).
if [ $status -eq 0 ] && [ ! -s "$tmp/stderr" ] && [ "$(wc -l < "$tmp/stdout")" -eq 1 ] &&
   grep -q 'big.f32 (f32, \[2000000\]) .* .*big.piqt: ' "$tmp/stdout"; then
  ok "progress/quantize-silent-when-not-a-terminal"
else
  not_ok "progress/quantize-silent-when-not-a-terminal" "exit $status" "$(od -c "$tmp/stderr" | head)"
fi
"$tool" dequantize "$tmp/big.piqt" "$tmp/big.out" > "$tmp/stdout" 2> "$tmp/stderr"
status=$?
if [ $status -eq 0 ] && [ ! -s "$tmp/stderr" ] && [ "$(wc -l < "$tmp/stdout")" -eq 1 ] &&
   grep -q 'big.piqt (.*) .* .*big.out: ' "$tmp/stdout" && cmp -s "$tmp/big.f32" "$tmp/big.out"; then
  ok "progress/dequantize-silent-when-not-a-terminal"
else
  not_ok "progress/dequantize-silent-when-not-a-terminal" "exit $status" "$(od -c "$tmp/stderr" | head)"
fi

# Runs the tool with stderr on a pseudo-terminal and prints what it wrote there.
cat > "$tmp/on-tty.py" <<'PY'
import os, pty, subprocess, sys
master, slave = pty.openpty()
proc = subprocess.Popen(sys.argv[1:], stderr=slave, stdout=subprocess.DEVNULL)
os.close(slave)
data = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode("utf-8", "replace"))
sys.exit(proc.wait())
PY
if [ -n "$python" ] && "$python" -c 'import pty' > /dev/null 2>&1; then
  out=$("$python" "$tmp/on-tty.py" "$tool" quantize -i f32 "$tmp/big.f32" "$tmp/big2.piqt")
  status=$?
  case $out in
    *"[1/4] reading"*"100%"*"[4/4] writing"*) [ $status -eq 0 ] && ok "progress/shown-on-a-terminal" ||
                                               not_ok "progress/shown-on-a-terminal" "exit $status" ;;
    *) not_ok "progress/shown-on-a-terminal" "exit $status" "$out" ;;
  esac
  out=$("$python" "$tmp/on-tty.py" "$tool" quantize --no-progress -i f32 "$tmp/big.f32" "$tmp/big2.piqt")
  if [ $? -eq 0 ] && [ -z "$out" ]; then
    ok "progress/no-progress-on-a-terminal"
  else
    not_ok "progress/no-progress-on-a-terminal" "$out"
  fi
  out=$("$python" "$tmp/on-tty.py" "$tool" quantize -i f32 "$tmp/zeros.f32" "$tmp/small.piqt")
  if [ $? -eq 0 ] && [ -z "$out" ]; then
    ok "progress/none-for-small-files"
  else
    not_ok "progress/none-for-small-files" "$out"
  fi
else
  skip "progress/shown-on-a-terminal" "no python3 with pty"
  skip "progress/no-progress-on-a-terminal" "no python3 with pty"
  skip "progress/none-for-small-files" "no python3 with pty"
fi

# ---- numpy: round trips checked against numpy's arithmetic ----

cat > "$tmp/helper.py" <<'PY'
"""Oracle for test-tool.sh: builds inputs and checks the tool's outputs."""
import sys

import numpy as np

QTYPES = {  # name: (bits, signed)
    "uint2": (2, False), "int2": (2, True), "uint4": (4, False), "int4": (4, True),
    "uint8": (8, False), "int8": (8, True), "uint16": (16, False), "int16": (16, True),
    "uint32": (32, False), "int32": (32, True), "uint64": (64, False), "int64": (64, True),
}
NPY_DTYPE = {"f32": "<f4", "f64": "<f8", "f16": "<f2", "bf16": "<u2"}
M32 = np.uint64(0xFFFFFFFF)


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def qrange(name):
    bits, signed = QTYPES[name]
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def f32_to_bf16_bits(x):
    """Round-to-nearest-even bfloat16 bits of float32 values (no NaN here)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def read_container(path):
    blob = open(path, "rb").read()
    if blob[:4] != b"PIQT":
        fail("%s: no PIQT magic" % path)
    version = int.from_bytes(blob[4:8], "little")
    text_len = int.from_bytes(blob[8:12], "little")
    if version != 2:
        fail("%s: version %d" % (path, version))
    if (12 + text_len) % 64 != 0:
        fail("%s: data offset %d is not a multiple of 64" % (path, 12 + text_len))
    text = blob[12:12 + text_len].decode("utf-8")
    if not text.endswith("\n"):
        fail("%s: header text does not end in a newline" % path)
    keys = {}
    for line in text.split("\n"):
        line = line.strip()
        if line:
            key, _, value = line.partition("=")
            keys[key] = value
    data = blob[12 + text_len:]
    if int(keys["data_bytes"]) != len(data):
        fail("%s: data_bytes %s, %d bytes follow" % (path, keys["data_bytes"], len(data)))
    shape = tuple(int(e) for e in keys["shape"].split(",")) if keys["shape"] else ()
    if int(np.prod(shape, dtype=np.uint64)) != int(keys["n_elements"]):
        fail("%s: shape %r vs n_elements %s" % (path, shape, keys["n_elements"]))
    return keys, shape, data


def unpack(data, qtype, n):
    bits, signed = QTYPES[qtype]
    if bits >= 8:
        dtype = np.dtype(("<i%d" if signed else "<u%d") % (bits // 8))
        return np.frombuffer(data, dtype=dtype, count=n).astype(np.int64)
    per_byte = 8 // bits
    raw = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    if len(raw) != (n + per_byte - 1) // per_byte:
        fail("packed size %d for %d %s elements" % (len(raw), n, qtype))
    mask = (1 << bits) - 1
    fields = np.stack([(raw >> (bits * i)) & mask for i in range(per_byte)], axis=1).reshape(-1)
    if np.any(fields[n:] != 0):
        fail("unused bits of the last byte are not zero")
    q = fields[:n]
    if signed:
        q = np.where(q >= (1 << (bits - 1)), q - (1 << bits), q)
    return q


def widen(x, src):
    """The input in its compute precision (docs/numerics.md)."""
    if src == "bf16":
        return bf16_bits_to_f32(x)
    if src == "f64":
        return np.asarray(x, dtype=np.float64)
    return np.asarray(x).astype(np.float32)


def splitmix64(seed):
    mask = (1 << 64) - 1
    z = (seed + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return z & 0xFFFFFFFF, z >> 32


def mix(x):
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def uniforms(seed, n):
    """docs/numerics.md, "The counter hash": h = mix(lo32(i) ^ k0 ^
    mix(hi32(i) ^ k1)), u = (h >> 8) * 2^-24."""
    k0, k1 = splitmix64(seed)
    i = np.arange(n, dtype=np.uint64)
    lo = (i & M32).astype(np.uint32)
    hi = (i >> np.uint64(32)).astype(np.uint32)
    with np.errstate(over="ignore"):
        h = mix(lo ^ np.uint32(k0) ^ mix(hi ^ np.uint32(k1)))
    return (h >> np.uint32(8)).astype(np.float64) * 2.0 ** -24


def oracle_quantize(x, src, qtype, scale, zero_point, round_mode, seed):
    xw = widen(x, src).reshape(-1)
    if src == "f64":
        v = xw * (1.0 / scale)
    else:
        s = np.float32(scale)
        v = xw * (np.float32(1.0) / s)
    if round_mode == "nearest":
        r = np.rint(v)
    else:
        f = np.floor(v)
        frac = v - f
        u = uniforms(seed, len(v)).astype(v.dtype)
        r = f + (u < frac)
    qmin, qmax = qrange(qtype)
    q = np.clip(r.astype(np.float64) + zero_point, qmin, qmax)
    return q.astype(np.int64)


def oracle_dequantize(q, scale, zero_point, out):
    d = q - zero_point
    if out == "f64":
        return d.astype(np.float64) * scale
    y = d.astype(np.float32) * np.float32(scale)
    if out == "f16":
        return y.astype(np.float16)
    if out == "bf16":
        return f32_to_bf16_bits(y)
    return y


def cmd_make(path, src, shape, seed, version="1.0"):
    shape = tuple(int(e) for e in shape.split(",")) if shape else ()
    rng = np.random.default_rng(int(seed))
    x = np.asarray(rng.standard_normal(shape) * 3.0 + 0.5)
    x.reshape(-1)[:4] = [0.0, -0.0, 1.5, -2.5][:x.size]     # exact ties and zeros
    if src == "f32":
        a = x.astype("<f4")
    elif src == "f64":
        a = x.astype("<f8")
    elif src == "f16":
        a = x.astype("<f2")
    else:
        a = f32_to_bf16_bits(x.astype(np.float32)).astype("<u2")
    if path.endswith(".npy"):
        major, minor = (int(p) for p in version.split("."))
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=(major, minor))
    else:
        a.tofile(path)


def load_input(path, src, shape):
    if path.endswith(".npy"):
        return np.load(path)
    return np.fromfile(path, dtype=NPY_DTYPE[src]).reshape(shape)


def cmd_check_quantize(input_path, src, piqt, qtype, *expect):
    keys, shape, data = read_container(piqt)
    x = load_input(input_path, src, None if input_path.endswith(".npy") else -1)
    want = {"dtype": qtype, "source_dtype": src, "granularity": "tensor",
            "n_elements": str(x.size)}
    for item in expect:
        k, _, v = item.partition("=")
        want[k] = v
    for k, v in want.items():
        if keys.get(k) != v:
            fail("%s: %s=%r, expected %r" % (piqt, k, keys.get(k), v))
    if input_path.endswith(".npy") and shape != x.shape:
        fail("recorded shape %r, input shape %r" % (shape, x.shape))
    scale = float(keys["scale"])
    zp = int(keys["zero_point"])
    q = unpack(data, qtype, x.size)
    ref = oracle_quantize(x, src, qtype, scale, zp, keys["round_mode"], int(keys["seed"]))
    bad = np.nonzero(q != ref)[0]
    if len(bad):
        i = bad[0]
        fail("%d of %d elements differ; first at %d: x=%r q=%d, numpy gives %d (scale %r, zp %d)"
             % (len(bad), x.size, i, widen(x, src).reshape(-1)[i], q[i], ref[i], scale, zp))


def cmd_check_dequantize(piqt, out_path, out, fmt):
    keys, shape, data = read_container(piqt)
    n = int(keys["n_elements"])
    q = unpack(data, keys["dtype"], n)
    ref = oracle_dequantize(q, float(keys["scale"]), int(keys["zero_point"]), out)
    ref = ref.astype(NPY_DTYPE[out]).reshape(shape).copy(order="C")
    if fmt == "npy":
        y = np.load(out_path)
        if y.dtype.str != NPY_DTYPE[out] or y.shape != shape:
            fail("%s: %s%r, expected %s%r" % (out_path, y.dtype.str, y.shape, NPY_DTYPE[out], shape))
        blob = open(out_path, "rb").read()
        offset = len(blob) - y.nbytes
        if offset % 64 != 0 or blob[offset - 1:offset] != b"\n":
            fail("%s: data at offset %d (header must end in \\n at a multiple of 64)"
                 % (out_path, offset))
        # Byte for byte what numpy.save writes, where this numpy pads as piquant does.
        if hasattr(np.lib.format, "GROWTH_AXIS_MAX_DIGITS"):
            import io
            buf = io.BytesIO()
            np.save(buf, ref)
            if buf.getvalue()[:offset + 1] != blob[:offset + 1] or len(buf.getvalue()) != len(blob):
                fail("%s: header %r, numpy writes %r" % (out_path, blob[:offset],
                                                         buf.getvalue()[:offset]))
    else:
        y = np.fromfile(out_path, dtype=NPY_DTYPE[out]).reshape(shape)
    if y.tobytes() != ref.tobytes():
        bits = "<u%d" % y.dtype.itemsize
        bad = np.nonzero(y.reshape(-1).view(bits) != ref.reshape(-1).view(bits))[0]
        fail("%d elements differ from numpy; first at %s: %r vs %r"
             % (len(bad), bad[:1], y.reshape(-1)[bad[:1]], ref.reshape(-1)[bad[:1]]))


def cmd_get(piqt, key):
    keys, _, _ = read_container(piqt)
    print(keys[key])


def cmd_same_data(a, b):
    if read_container(a)[2] != read_container(b)[2]:
        fail("%s and %s hold different data" % (a, b))


def cmd_special(path, kind):
    if kind == "fortran":
        np.save(path, np.asfortranarray(np.ones((2, 3), np.float32)))
    elif kind == "big-endian":
        np.save(path, np.arange(4, dtype=">f4"))
    elif kind == "int32":
        np.save(path, np.arange(4, dtype="<i4"))
    elif kind == "uint16":
        np.save(path, np.arange(4, dtype="<u2"))
    elif kind == "object":
        np.save(path, np.array([1, "a"], dtype=object), allow_pickle=True)
    elif kind == "record":
        np.save(path, np.zeros(3, dtype=[("a", "<f4")]))
    elif kind == "nan":
        np.save(path, np.array([1.0, np.nan], np.float32))
    elif kind == "appended":
        with open(path, "wb") as f:
            np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3))
            np.save(f, np.arange(3, dtype=np.float64))
    elif kind == "truncated":
        np.save(path, np.arange(100, dtype=np.float32))
        blob = open(path, "rb").read()
        open(path, "wb").write(blob[:-10])
    else:
        fail("unknown kind " + kind)


commands = {"make": cmd_make, "check-quantize": cmd_check_quantize,
            "check-dequantize": cmd_check_dequantize, "get": cmd_get,
            "same-data": cmd_same_data, "special": cmd_special}
commands[sys.argv[1]](*sys.argv[2:])
PY

helper () {
  "$numpy_python" "$tmp/helper.py" "$@"
}

# round_trip NAME SRC SHAPE [quantize options...]: makes NAME.npy, quantizes
# it, checks the packed data, dequantizes it to the source type and checks
# that. The quantized type is the -d option's value (uint8 when absent).
round_trip () {
  name=$1 src=$2 shape=$3
  shift 3
  qtype=uint8
  prev=
  for arg in "$@"; do
    [ "$prev" = -d ] && qtype=$arg
    prev=$arg
  done
  in=$tmp/$name.npy piqt=$tmp/$name.piqt out=$tmp/$name.out.npy
  mkdir -p "$(dirname "$in")"
  if [ -z "$numpy_python" ]; then
    skip "npy/$name" "no python3 with numpy"
    return
  fi
  input_dtype=
  [ "$src" = bf16 ] && input_dtype="--input-dtype bf16"
  if ! err=$(helper make "$in" "$src" "$shape" 7 2>&1) ||
     ! err=$("$tool" quantize $input_dtype "$@" "$in" "$piqt" 2>&1) ||
     ! err=$(helper check-quantize "$in" "$src" "$piqt" "$qtype" 2>&1) ||
     ! err=$("$tool" dequantize "$piqt" "$out" 2>&1) ||
     ! err=$(helper check-dequantize "$piqt" "$out" "$src" npy 2>&1); then
    not_ok "npy/$name" "$err"
    return
  fi
  ok "npy/$name"
}

for src in f32 f64 f16 bf16; do
  round_trip "$src/uint8/min-max" "$src" 37,29
  round_trip "$src/int8/abs-max" "$src" 1000 -d int8 --scale-rule abs-max
  round_trip "$src/uint4/min-max" "$src" 3,5,7 -d uint4
  round_trip "$src/int4/mean-std" "$src" 999 -d int4 --scale-rule mean-std
  round_trip "$src/uint2/no-include-zero" "$src" 41 -d uint2 --no-include-zero
  round_trip "$src/int16/stochastic" "$src" 4097 -d int16 --rounding stochastic --seed 12345
  round_trip "$src/uint8/stochastic" "$src" 70001 -r stochastic --seed 99 --threads 3
done
round_trip "f32/uint8/symmetric" f32 1000 --symmetric
round_trip "f64/int4/symmetric" f64 77 -d int4 --symmetric
round_trip "f32/int32/explicit" f32 513 -d int32 --scale 0.001 --zero-point -7
round_trip "f64/uint64/explicit" f64 64 -d uint64 --scale 0.25 --zero-point 1000
round_trip "f32/int2/explicit" f32 10 -d int2 --scale 1.5
round_trip "f32/int8/ties" f32 100 -d int8 --scale 1
round_trip "f64/int8/ties" f64 100 -d int8 --scale 0.5
round_trip "f16/uint4/ties" f16 100 -d uint4 --scale 1 --zero-point 8
round_trip "f32/uint8/0-d" f32 "" --scale 0.5
round_trip "f32/uint8/empty" f32 0,4 --scale 0.5
round_trip "f32/uint8/large" f32 3000000 --threads 4

if [ -n "$numpy_python" ]; then
  # Explicit parameters are recorded exactly, the rule as "explicit".
  if "$tool" quantize -q --scale 0.1 --zero-point 3 "$tmp/f32/uint8/min-max.npy" "$tmp/e.piqt" &&
     [ "$(helper get "$tmp/e.piqt" scale)" = 0.10000000000000001 ] &&
     [ "$(helper get "$tmp/e.piqt" zero_point)" = 3 ] &&
     [ "$(helper get "$tmp/e.piqt" scale_rule)" = explicit ]; then
    ok "container/explicit-parameters-recorded"
  else
    not_ok "container/explicit-parameters-recorded" "$(head -c 400 "$tmp/e.piqt")"
  fi

  # Stochastic rounding without --seed records the seed it drew; that seed
  # reproduces the bytes, at any thread count.
  in=$tmp/f32/uint8/stochastic.npy
  if "$tool" quantize -q -r stochastic "$in" "$tmp/s1.piqt" &&
     seed=$(helper get "$tmp/s1.piqt" seed) && [ "$seed" != 0 ] &&
     "$tool" quantize -q -r stochastic --seed "$seed" --threads 1 "$in" "$tmp/s2.piqt" &&
     err=$(helper same-data "$tmp/s1.piqt" "$tmp/s2.piqt" 2>&1) &&
     err=$(helper check-quantize "$in" f32 "$tmp/s1.piqt" uint8 "seed=$seed" 2>&1); then
    ok "stochastic/recorded-seed-reproduces"
  else
    not_ok "stochastic/recorded-seed-reproduces" "seed ${seed:-?}" "${err:-}"
  fi

  # Other output types and formats from one container.
  piqt=$tmp/f32/int8/abs-max.piqt
  for out in f32 f64 f16 bf16; do
    for fmt in npy raw; do
      dst=$tmp/out-$out.$fmt
      if err=$("$tool" dequantize --output-dtype "$out" "$piqt" "$dst" 2>&1) &&
         err=$(helper check-dequantize "$piqt" "$dst" "$out" "$fmt" 2>&1); then
        ok "dequantize/$out/$fmt"
      else
        not_ok "dequantize/$out/$fmt" "$err"
      fi
    done
  done
  if err=$("$tool" dequantize --format npy "$piqt" "$tmp/forced" 2>&1) &&
     err=$(helper check-dequantize "$piqt" "$tmp/forced" f32 npy 2>&1); then
    ok "dequantize/format-npy-without-suffix"
  else
    not_ok "dequantize/format-npy-without-suffix" "$err"
  fi

  # Raw input, with the element type given.
  for src in f32 f64 f16 bf16; do
    raw=$tmp/raw-$src.bin
    if err=$(helper make "$raw" "$src" 333 11 2>&1) &&
       err=$("$tool" quantize --input-dtype "$src" -d int8 "$raw" "$tmp/raw-$src.piqt" 2>&1) &&
       err=$(helper check-quantize "$raw" "$src" "$tmp/raw-$src.piqt" int8 shape=333 2>&1) &&
       err=$("$tool" dequantize "$tmp/raw-$src.piqt" "$tmp/raw-$src.out" 2>&1) &&
       err=$(helper check-dequantize "$tmp/raw-$src.piqt" "$tmp/raw-$src.out" "$src" raw 2>&1); then
      ok "raw/$src"
    else
      not_ok "raw/$src" "$err"
    fi
  done

  # .npy versions 2.0 and 3.0 read; arrays appended after the first ignored.
  for version in 2.0 3.0; do
    in=$tmp/v$version.npy
    if err=$(helper make "$in" f32 5,6 3 "$version" 2>&1) &&
       err=$("$tool" quantize "$in" "$tmp/v$version.piqt" 2>&1) &&
       err=$(helper check-quantize "$in" f32 "$tmp/v$version.piqt" uint8 shape=5,6 2>&1); then
      ok "npy/read-version-$version"
    else
      not_ok "npy/read-version-$version" "$err"
    fi
  done
  helper special "$tmp/appended.npy" appended
  if err=$("$tool" quantize "$tmp/appended.npy" "$tmp/appended.piqt" 2>&1) &&
     [ "$(helper get "$tmp/appended.piqt" shape)" = 2,3 ]; then
    ok "npy/first-of-appended-arrays"
  else
    not_ok "npy/first-of-appended-arrays" "$err"
  fi

  # .npy files piquant cannot use: one clear line, exit 1 (2 where an option
  # would make the file usable).
  for kind in fortran big-endian int32 object record nan truncated uint16; do
    helper special "$tmp/$kind.npy" "$kind"
  done
  check_exit "npy/reject/fortran-order" 1 'Fortran-order' "$tool" quantize "$tmp/fortran.npy" "$tmp/x.piqt"
  check_exit "npy/reject/big-endian" 1 "big-endian data ('>f4')" \
    "$tool" quantize "$tmp/big-endian.npy" "$tmp/x.piqt"
  check_exit "npy/reject/int32" 1 "holds int32 data ('<i4')" \
    "$tool" quantize "$tmp/int32.npy" "$tmp/x.piqt"
  check_exit "npy/reject/object" 1 'object arrays' "$tool" quantize "$tmp/object.npy" "$tmp/x.piqt"
  check_exit "npy/reject/structured" 1 'structured dtypes' "$tool" quantize "$tmp/record.npy" "$tmp/x.piqt"
  check_exit "npy/reject/nan-data" 1 'NaN' "$tool" quantize "$tmp/nan.npy" "$tmp/x.piqt"
  check_exit "npy/reject/truncated" 1 'too short' "$tool" quantize "$tmp/truncated.npy" "$tmp/x.piqt"
  check_exit "npy/uint16-needs-input-dtype" 2 'input-dtype bf16' \
    "$tool" quantize "$tmp/uint16.npy" "$tmp/x.piqt"
  check_exit "npy/input-dtype-mismatch" 2 'does not match' \
    "$tool" quantize --input-dtype f64 "$tmp/f32/uint8/min-max.npy" "$tmp/x.piqt"
  check_exit "npy/empty-needs-scale" 1 '0 elements' \
    "$tool" quantize "$tmp/f32/uint8/empty.npy" "$tmp/x.piqt"
  if [ -e "$tmp/x.piqt" ]; then
    not_ok "npy/reject/no-output-written" "$tmp/x.piqt exists"
  else
    ok "npy/reject/no-output-written"
  fi
else
  for name in container/explicit-parameters-recorded stochastic/recorded-seed-reproduces \
              dequantize/other-types raw/float-types npy/versions npy/rejections; do
    skip "$name" "no python3 with numpy"
  done
fi

# ---- safetensors checkpoints ----
# A checkpoint written here from the published format (length, JSON, data),
# quantized by the tool: every 2-D float tensor to NF4, the bias and the
# metadata as they were; the result read back here the same way, then
# dequantized by the tool to within NF4's error of the original.

if [ -n "$numpy_python" ]; then
  cat > "$tmp/st.py" <<'PY'
import json, struct, sys
import numpy as np

def write(path, tensors, meta):
    head, data, off = {"__metadata__": meta}, b"", 0
    for name, a in tensors.items():
        b = a.tobytes()
        head[name] = {"dtype": {"float32": "F32", "float16": "F16"}[a.dtype.name],
                      "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        data, off = data + b, off + len(b)
    h = json.dumps(head).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)

def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    return head, {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in head.items() if k != "__metadata__"}

rng = np.random.default_rng(7)
w = rng.standard_normal((64, 128)).astype(np.float32)
e = rng.standard_normal((16, 64)).astype(np.float16)
b = rng.standard_normal(64).astype(np.float32)
if sys.argv[1] == "make":
    write(sys.argv[2], {"w": w, "emb": e, "b": b}, {"format": "pt"})
elif sys.argv[1] == "quantized":
    head, data = read(sys.argv[2])
    assert sorted(head) == ["__metadata__", "b", "emb", "emb.piq_scales", "w", "w.piq_scales"], sorted(head)
    assert head["__metadata__"]["format"] == "pt"
    assert "dtype=nf4" in head["__metadata__"]["w.piq_format"].split("\n")
    assert head["w"] == {"dtype": "U8", "shape": [64 * 128 // 2], "data_offsets": head["w"]["data_offsets"]}
    assert data["b"] == b.tobytes(), "the bias is copied"
    # bitsandbytes' layout: per block of 64 the absmax, as f32
    absmax = np.abs(w.reshape(-1, 64)).max(axis=1)
    assert np.frombuffer(data["w.piq_scales"], "<f4").tolist() == absmax.tolist()
else:
    head, data = read(sys.argv[2])
    assert head["w"]["dtype"] == "F32" and head["w"]["shape"] == [64, 128]
    back = np.frombuffer(data["w"], "<f4").reshape(64, 128)
    absmax = np.abs(w.reshape(-1, 64)).max(axis=1).repeat(64).reshape(64, 128)
    # NF4's largest gap between neighbouring codes is 0.3038 of the absmax
    # (between -1 and -0.6962): nearest rounding errs by at most half of it
    assert np.all(np.abs(back - w) <= 0.1520 * absmax), (np.abs(back - w) / absmax).max()
    assert data["b"] == b.tobytes()
PY
  if "$numpy_python" "$tmp/st.py" make "$tmp/model.safetensors" &&
     "$tool" quantize -q -p nf4 "$tmp/model.safetensors" "$tmp/model-nf4.safetensors" &&
     "$numpy_python" "$tmp/st.py" quantized "$tmp/model-nf4.safetensors" 2> "$tmp/st.err"; then
    ok "safetensors/quantize-2d-weights"
  else
    not_ok "safetensors/quantize-2d-weights" "$(cat "$tmp/st.err" 2>/dev/null)"
  fi
  if "$tool" dequantize -q "$tmp/model-nf4.safetensors" "$tmp/back.safetensors" &&
     "$numpy_python" "$tmp/st.py" dequantized "$tmp/back.safetensors" 2> "$tmp/st.err"; then
    ok "safetensors/dequantize"
  else
    not_ok "safetensors/dequantize" "$(cat "$tmp/st.err" 2>/dev/null)"
  fi
  if "$tool" inspect "$tmp/model-nf4.safetensors" > "$tmp/stdout" 2>&1 &&
     grep -qF '  w: nf4 per block of 64 (f32 scales, high nibble first) [64, 128], 4096 bytes' "$tmp/stdout" &&
     grep -qF '  b: f32 [64], 256 bytes' "$tmp/stdout" && grep -qF '  format=pt' "$tmp/stdout"; then
    ok "inspect/safetensors"
  else
    not_ok "inspect/safetensors" "$(cat "$tmp/stdout")"
  fi
  check_exit "safetensors/input-dtype-refused" 2 'records each tensor' \
    "$tool" quantize -q -i f32 -p nf4 "$tmp/model.safetensors" "$tmp/x.safetensors"
else
  for name in safetensors/quantize-2d-weights safetensors/dequantize inspect/safetensors \
              safetensors/input-dtype-refused; do
    skip "$name" "no python3 with numpy"
  done
fi

# ---- formats, per-channel and per-block scales ----
#
# Each case quantizes an f32 .npy, dequantizes it twice (the same bytes both
# times, and quantizing again gives the same container), and checks with
# numpy: the container's keys and sizes (scales and zero points after the
# data, ending the file) and its shape, the round-trip error against a bound
# derived from the format (below, per element, with a the absmax of its block,
# A the tensor's; blocks run along the last axis and never span two rows), and
# for mxfp4, q8_0 and int8 per channel (axis 0 and 1) that the output is
# exactly what an independent decoder of the documented layout gives.
cat > "$tmp/formats.py" << 'PY'
import sys
import numpy as np


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def read_piqt(path):
    blob = open(path, "rb").read()
    h = int.from_bytes(blob[8:12], "little")
    keys = {}
    for line in blob[12:12 + h].decode().split("\n"):
        line = line.strip()
        if line:
            k, v = line.split("=", 1)
            keys[k] = v
    off = 12 + h
    nd = int(keys["data_bytes"])
    ns = int(keys.get("scales_bytes", 0))
    nz = int(keys.get("zero_points_bytes", 0))
    if len(blob) != off + nd + ns + nz:
        fail("file size %d, header says %d" % (len(blob), off + nd + ns + nz))
    return (keys, blob[off:off + nd], blob[off + nd:off + nd + ns],
            blob[off + nd + ns:off + nd + ns + nz])


def block_absmax(x2, b):
    """Each element's block absmax: blocks of b along each row of x2."""
    out = np.empty_like(x2)
    for start in range(0, x2.shape[1], b):
        out[:, start:start + b] = np.abs(x2[:, start:start + b]).max(axis=1, keepdims=True)
    return out.ravel()


def per_block(values, b, cols):
    """One value per block of each row, repeated over the block's elements."""
    v = np.asarray(values).reshape(-1, (cols + b - 1) // b)
    return np.repeat(v, b, axis=1)[:, :cols].ravel()


FP4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)


def main(case, src, piqt, out, want):
    a = np.load(src)
    x = a.astype(np.float64).ravel()
    x2 = a.astype(np.float64).reshape(-1, a.shape[-1])
    cols = a.shape[-1]
    y = np.load(out)
    if y.shape != a.shape or y.dtype != np.float32:
        fail("output %s %s" % (y.shape, y.dtype))
    y = y.astype(np.float64).ravel()
    keys, data, scales, zps = read_piqt(piqt)
    for kv in want.split(","):
        k, v = kv.split("=")
        if keys.get(k) != v:
            fail("%s=%s, want %s" % (k, keys.get(k), v))
    if keys.get("shape") != ",".join(str(e) for e in a.shape):
        fail("shape=%s, the input's is %r" % (keys.get("shape"), a.shape))
    err = np.abs(y - x)
    A = np.abs(x).max()
    eps = 1e-6 * A
    if case == "mxfp4":
        # E8M0 scale s = 2^(floor(log2 a) - 2): |x|/s < 8, the codes reach 6
        # with steps of 2 at the top: error <= 2s <= a/2.
        bound = 0.5 * block_absmax(x2, 32)
        e = np.frombuffer(scales, np.uint8).astype(np.float64)
        c = np.frombuffer(data, np.uint8)
        codes = np.stack([c & 15, c >> 4], axis=1).ravel()[:x.size]
        ref = np.where(codes & 8, -1, 1) * FP4[codes & 7] * per_block(2.0 ** (e - 127), 32, cols)
    elif case in ("nf4", "nf4-per-tensor"):
        # the widest gap of the NF4 table is 1 - 0.6962 = 0.3038: half of it
        bound = 0.1520 * (block_absmax(x2, 64) if case == "nf4" else np.full(x.size, A))
    elif case == "nf4-dq":
        # as nf4, plus the scale's error: half a step of the dynamic map near
        # 1 (0.9/64/2 < 0.0071) times the chunk maximum (<= A)
        bound = 0.1520 * block_absmax(x2, 64) + 0.0071 * A
    elif case == "q8_0":
        # d = a/127 stored as f16: half a step, plus 127 times d's rounding
        d_bound = block_absmax(x2, 32) / 127
        bound = d_bound / 2 + 127 * d_bound * 2.0 ** -11
        blocks = np.frombuffer(data, np.uint8).reshape(-1, 34)
        d = blocks[:, :2].copy().view(np.float16).astype(np.float32).ravel()
        q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
        nb = (cols + 31) // 32
        ref = (q * d[:, None]).reshape(-1, nb * 32)[:, :cols].ravel()
    elif case == "msfp16":
        # 7-bit magnitudes under a box exponent E with every |x| < 2^(E-127)
        # <= 4a: half a step of 2^(E-127-7) <= a/64
        bound = block_absmax(x2, 16) / 64
    elif case == "int8-channel":
        # affine per index of the axis: scale = range/255 (0 included); the
        # rounded zero point may shift the grid by half a step: error <= one
        # step
        axis = int(keys["axis"]) % a.ndim
        chans = np.moveaxis(a.astype(np.float64), axis, 0).reshape(a.shape[axis], -1)
        rng = np.maximum(chans.max(axis=1), 0) - np.minimum(chans.min(axis=1), 0)
        along = [1] * a.ndim
        along[axis] = a.shape[axis]
        bound = np.broadcast_to((rng / 255).reshape(along), a.shape).ravel()
        s = np.frombuffer(scales, np.float32)
        z = np.frombuffer(zps, np.int32)
        if s.size != a.shape[axis] or z.size != a.shape[axis]:
            fail("%d scales and %d zero points for %d channels" % (s.size, z.size, a.shape[axis]))
        q = np.frombuffer(data, np.int8).reshape(a.shape).astype(np.int64)
        ref = ((q - z.reshape(along)).astype(np.float32) * s.reshape(along)).ravel()
    elif case == "fp8":
        # per tensor, scale A/448: 3 mantissa bits (half a step is |x|/16 at
        # most) or a subnormal step of 2^-9 scale
        bound = np.abs(x) / 16 + (A / 448) * 2.0 ** -10
    else:
        fail("unknown case " + case)
    worst = np.argmax(err - bound)
    if err[worst] > bound[worst] + eps:
        fail("element %d: |%r - %r| = %g exceeds the bound %g"
             % (worst, y[worst], x[worst], err[worst], bound[worst]))
    if case in ("mxfp4", "q8_0", "int8-channel"):
        ref = np.asarray(ref, np.float32)
        if not np.array_equal(ref, np.load(out).ravel()):
            i = np.flatnonzero(ref != np.load(out).ravel())[0]
            fail("element %d: piquant gives %r, the layout decodes to %r"
                 % (i, np.load(out).ravel()[i], ref[i]))


def to_v1(src, dst):
    """Rewrites a version 2 container whose bytes version 1 lays out alike
    (per tensor; per channel on axis 0 of a 2-D array; per block with no
    block across rows) as version 1: channels as rows of block_size, the
    symmetric key gone (the rule told), per tensor no saturate, double_quant
    or sizes, and high_nibble_first only when true."""
    blob = open(src, "rb").read()
    h = int.from_bytes(blob[8:12], "little")
    pairs = [line.strip().split("=", 1) for line in blob[12:12 + h].decode().split("\n")
             if line.strip()]
    keys = dict(pairs)
    g = keys["granularity"]
    shape = keys["shape"].split(",")
    out = []
    for k, v in pairs:
        if k in ("axis", "symmetric"):
            continue
        if g == "tensor" and k in ("saturate", "double_quant", "scales_bytes",
                                   "zero_points_bytes"):
            continue
        if g == "tensor" and k == "high_nibble_first" and v == "false":
            continue
        out.append((k, v))
    if g == "channel":
        if keys["axis"] != "0" or len(shape) != 2:
            fail("%s: version 1 has channels on axis 0 of 2-D arrays only" % src)
        out.append(("block_size", shape[1]))
    if g == "block" and len(shape) > 1 and int(shape[-1]) % int(keys["block_size"]):
        fail("%s: blocks of version 1 would span rows" % src)
    if g != "tensor" and "include_zero" not in keys:
        out.append(("include_zero", "true"))
    text = "".join("%s=%s\n" % kv for kv in out)
    pad = -(12 + len(text)) % 64
    if pad:
        text += " " * (pad - 1) + "\n"
    with open(dst, "wb") as f:
        f.write(b"PIQT" + (1).to_bytes(4, "little") + len(text).to_bytes(4, "little"))
        f.write(text.encode() + blob[12 + h:])


if sys.argv[1] == "to-v1":
    to_v1(sys.argv[2], sys.argv[3])
elif sys.argv[1] == "make":
    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 96)) * np.exp(rng.uniform(-3, 3, (6, 1)))
    x[2, 5] = 40.0          # an outlier: its block's scale, not the others'
    np.save(sys.argv[2], x.astype(np.float32))
    np.save(sys.argv[3], (rng.standard_normal((5, 100)) * 0.01).astype(np.float32))
else:
    main(*sys.argv[1:])
PY

# format_case NAME CASE INPUT WANT [quantize options...]
format_case () {
  name=$1 fcase=$2 in=$3 want=$4
  shift 4
  piqt=$tmp/fmt-$name.piqt out=$tmp/fmt-$name.npy
  if ! err=$("$tool" quantize "$@" "$in" "$piqt" 2>&1) ||
     ! err=$("$tool" quantize "$@" "$in" "$piqt.again" 2>&1) ||
     ! err=$(cmp "$piqt" "$piqt.again" 2>&1) ||
     ! err=$("$tool" dequantize "$piqt" "$out" 2>&1) ||
     ! err=$("$tool" dequantize --threads 3 "$piqt" "$out.again.npy" 2>&1) ||
     ! err=$(cmp "$out" "$out.again.npy" 2>&1) ||
     ! err=$("$numpy_python" "$tmp/formats.py" "$fcase" "$in" "$piqt" "$out" "$want" 2>&1); then
    not_ok "formats/$name" "$err"
    return
  fi
  ok "formats/$name"
}

if [ -n "$numpy_python" ] && "$numpy_python" "$tmp/formats.py" make "$tmp/w.npy" "$tmp/v.npy"; then
  format_case mxfp4 mxfp4 "$tmp/w.npy" \
    granularity=block,dtype=fp4_e2m1,block_size=32,scale_dtype=e8m0,scale_rule=pow2-floor,scales_bytes=18,zero_points_bytes=0 \
    --preset mxfp4
  # 5 rows of 100: four blocks per row (32, 32, 32, 4), none across rows
  format_case mxfp4-ragged mxfp4 "$tmp/v.npy" granularity=block,scales_bytes=20 -p mxfp4
  # rows of 96: blocks of 64 and 32, two scales per row
  format_case nf4 nf4 "$tmp/w.npy" \
    granularity=block,dtype=nf4,block_size=64,scale_dtype=f32,high_nibble_first=true,double_quant=false,scales_bytes=48 \
    --preset nf4
  format_case nf4-double-quant nf4-dq "$tmp/w.npy" double_quant=true,high_nibble_first=true \
    --preset nf4 --double-quant
  format_case nf4-per-tensor nf4-per-tensor "$tmp/w.npy" granularity=tensor,dtype=nf4 -d nf4
  format_case q8_0 q8_0 "$tmp/w.npy" dtype=q8_0,data_bytes=612,scales_bytes=0,zero_points_bytes=0 \
    --preset q8_0
  # the ggml types exist per block only: -d alone quantizes per block
  format_case q8_0-dtype q8_0 "$tmp/w.npy" dtype=q8_0,granularity=block,block_size=32,data_bytes=612 \
    -d q8_0
  format_case msfp16 msfp16 "$tmp/w.npy" dtype=bfp7,block_size=16,scale_dtype=e8m0,scales_bytes=36 \
    --preset msfp16
  format_case int8-channel int8-channel "$tmp/w.npy" \
    granularity=channel,axis=0,symmetric=false,scale_rule=min-max,scales_bytes=24,zero_points_bytes=24 \
    -d int8 -g channel
  format_case int8-channel-ragged-rows int8-channel "$tmp/v.npy" axis=0,zero_points_bytes=20 \
    -d int8 --granularity channel
  # 2-D per channel: axis 0 (the default, one scale per row) and axis 1 (one
  # per column), from the same .npy
  format_case int8-channel-axis-0 int8-channel "$tmp/w.npy" \
    granularity=channel,axis=0,scales_bytes=24,zero_points_bytes=24 -d int8 -g channel --axis 0
  format_case int8-channel-axis-1 int8-channel "$tmp/w.npy" \
    granularity=channel,axis=1,scales_bytes=384,zero_points_bytes=384 -d int8 -g channel --axis 1
  format_case int8-channel-axis-minus-1 int8-channel "$tmp/v.npy" \
    granularity=channel,axis=-1,scales_bytes=400,zero_points_bytes=400 -d int8 -g channel -a -1
  format_case fp8_e4m3 fp8 "$tmp/w.npy" granularity=tensor,dtype=fp8_e4m3,scale_rule=abs-max \
    -d fp8_e4m3 --scale-rule abs-max
  format_case fp8_e4m3-preset fp8 "$tmp/w.npy" granularity=tensor,dtype=fp8_e4m3 -p fp8_e4m3

  # Explicit options override the preset.
  if "$tool" quantize -q -p mxfp4 -b 64 -d fp8_e4m3 "$tmp/w.npy" "$tmp/o.piqt" &&
     grep -q '^block_size=64$' "$tmp/o.piqt" && grep -q '^dtype=fp8_e4m3$' "$tmp/o.piqt" &&
     grep -q '^scale_dtype=e8m0$' "$tmp/o.piqt"; then
    ok "formats/options-override-preset"
  else
    not_ok "formats/options-override-preset" "$(head -c 600 "$tmp/o.piqt")"
  fi

  # Damaged block containers: scales cut short, sizes that disagree.
  piqt=$tmp/fmt-nf4.piqt
  size=$(wc -c < "$piqt")
  head -c $((size - 4)) "$piqt" > "$tmp/cut.piqt"
  check_exit "formats/dequantize/scales-cut" 1 '48 of scales' \
    "$tool" dequantize "$tmp/cut.piqt" "$tmp/x.npy"
  LC_ALL=C sed 's/^block_size=64$/block_size=32/' "$piqt" > "$tmp/bs.piqt"
  check_exit "formats/dequantize/sizes-disagree" 1 'scales_bytes is 48 .* take 72 and 0' \
    "$tool" dequantize "$tmp/bs.piqt" "$tmp/x.npy"
  LC_ALL=C sed 's/^scale_dtype=f32$/scale_dtype=xyz/' "$piqt" > "$tmp/sd.piqt"
  check_exit "formats/dequantize/scale-dtype" 1 "scale_dtype 'xyz' is not f32, f16 or e8m0" \
    "$tool" dequantize "$tmp/sd.piqt" "$tmp/x.npy"
  LC_ALL=C sed 's/^saturate=true$/saturate=maybe/' "$piqt" > "$tmp/sat.piqt"
  check_exit "formats/dequantize/bool" 1 "saturate 'maybe' is not true or false" \
    "$tool" dequantize "$tmp/sat.piqt" "$tmp/x.npy"
  LC_ALL=C sed 's/^symmetric=/xymmetric=/' "$piqt" > "$tmp/nosym.piqt"
  check_exit "formats/dequantize/format-key-missing" 1 "has no 'symmetric'" \
    "$tool" dequantize "$tmp/nosym.piqt" "$tmp/x.npy"

  # Version 1 containers (piquant before shaped tensors) are still read:
  # rewritten from version 2 files whose bytes version 1 lays out alike, they
  # dequantize to the same floats. Per tensor, per channel (rows), per block
  # with E8M0 scales, and symmetric integer blocks (the abs-max rule of
  # version 1) of a raw file.
  "$tool" quantize -i f32 -p int8_block "$tmp/raw-f32.bin" "$tmp/int8-block-1d.piqt" > /dev/null 2>&1
  for name in f32/uint8/min-max fmt-mxfp4 fmt-int8-channel int8-block-1d; do
    v2=$tmp/$name.piqt v1=$tmp/$name.v1.piqt
    if err=$("$numpy_python" "$tmp/formats.py" to-v1 "$v2" "$v1" 2>&1) &&
       err=$("$tool" dequantize "$v2" "$v2.npy" 2>&1) &&
       err=$("$tool" dequantize "$v1" "$v1.npy" 2>&1) &&
       err=$(cmp "$v2.npy" "$v1.npy" 2>&1); then
      ok "container/version-1/$name"
    else
      not_ok "container/version-1/$name" "$err"
    fi
  done
else
  skip "formats/round-trips" "no python3 with numpy"
fi

if "$tool" info --presets > "$tmp/presets" && grep -qx mxfp4 "$tmp/presets" &&
   grep -qx nf4_dq "$tmp/presets" && grep -qx q8_0 "$tmp/presets"; then
  ok "info/presets"
else
  not_ok "info/presets" "$(cat "$tmp/presets")"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

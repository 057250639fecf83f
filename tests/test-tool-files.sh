#!/bin/sh
# test-tool-files.sh: the piquant tool never loses a file the user has.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Prints TAP. Covers: `quantize` and `dequantize` refuse an output that is the
# input file (the same name, another path to it, a symbolic or hard link) before
# anything is written, and leave the input as it was; SIGINT, SIGTERM and SIGHUP
# during the write phase remove the temporary OUT.XXXXXX file and leave no OUT;
# an .npy header with a NUL byte in its descr is refused, as numpy refuses it.
#
# Environment: G_TEST_BUILDDIR (tests/ of the build tree; the tool is
# ../tools/piquant from there).

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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/piquant-files.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# A 64-element f32 .npy (version 1.0, header padded to 128 bytes), all ones.
npy_header () {   # npy_header DESCR_BYTES: the 128-byte preamble and header
  printf '\223NUMPY\001\000\166\000'
  printf "{'descr': '%b', 'fortran_order': False, 'shape': (64,), }" "$1"
}
make_npy () {     # make_npy FILE [DESCR_BYTES]
  {
    npy_header "${2:-<f4}"
  } > "$1.h"
  pad=$((127 - $(wc -c < "$1.h")))
  {
    cat "$1.h"
    printf '%*s\n' "$pad" ''
    i=0
    while [ $i -lt 64 ]; do printf '\000\000\200\077'; i=$((i + 1)); done
  } > "$1"
  rm -f "$1.h"
}

# --- the output is the input ------------------------------------------------

# same_file NAME INPUT OUTPUT [quantize|dequantize]: exit 1, "is the input file",
# the input unchanged, and no temporary file left beside it.
same_file () {
  name=$1 input=$2 output=$3 cmd=${4:-quantize}
  cp "$input" "$tmp/before"
  err=$("$tool" "$cmd" "$input" "$output" 2>&1 >/dev/null)
  status=$?
  leftovers=$(ls "$tmp" | grep -c '\.[A-Za-z0-9]\{6\}$')
  if [ $status -eq 1 ] && printf '%s' "$err" | grep -q 'is the input file' &&
     cmp -s "$input" "$tmp/before" && [ "$leftovers" -eq 0 ]; then
    ok "$name"
  else
    not_ok "$name" "exit status $status, stderr: $err" \
      "input unchanged: $(cmp -s "$input" "$tmp/before" && echo yes || echo no)" \
      "temporary files left: $leftovers"
  fi
}

# each case starts from a fresh a.npy (a failing case may have replaced it)
make_npy "$tmp/a.npy"
same_file "same-file/quantize/same-name" "$tmp/a.npy" "$tmp/a.npy"
make_npy "$tmp/a.npy"
same_file "same-file/quantize/other-path" "$tmp/a.npy" "$tmp/../$(basename "$tmp")/./a.npy"
make_npy "$tmp/a.npy"
ln -s a.npy "$tmp/link.npy"
same_file "same-file/quantize/symbolic-link" "$tmp/a.npy" "$tmp/link.npy"
rm -f "$tmp/link.npy"
make_npy "$tmp/a.npy"
ln "$tmp/a.npy" "$tmp/hard.npy"
same_file "same-file/quantize/hard-link" "$tmp/a.npy" "$tmp/hard.npy"
rm -f "$tmp/hard.npy"

make_npy "$tmp/a.npy"
if "$tool" quantize "$tmp/a.npy" "$tmp/a.piqt" > /dev/null 2>&1; then
  same_file "same-file/dequantize/same-name" "$tmp/a.piqt" "$tmp/a.piqt" dequantize
else
  not_ok "same-file/dequantize/same-name" "quantize a.npy a.piqt failed"
fi

# a different file is still written, and an existing output replaced
make_npy "$tmp/a.npy"
cp "$tmp/a.npy" "$tmp/b.npy"
if "$tool" quantize "$tmp/a.npy" "$tmp/b.npy" > /dev/null 2>&1 &&
   ! cmp -s "$tmp/a.npy" "$tmp/b.npy"; then
  ok "same-file/quantize/other-file-replaced"
else
  not_ok "same-file/quantize/other-file-replaced"
fi
rm -f "$tmp/b.npy" "$tmp/a.piqt"

# --- a signal during the write phase ---------------------------------------

# 4 M f32 elements quantized to int64: 32 MiB written. The tool is stopped as
# soon as its temporary output exists (so the signal lands in the write phase),
# then signalled and continued.
big=$tmp/big.f32
head -c $((4 * 1024 * 1024 * 4)) /dev/zero > "$big"

signal_case () {
  sig=$1
  out=$tmp/out-$sig.piqt
  # a background job starts with SIGINT ignored (and the tool keeps an ignored
  # signal ignored): env gives it the default disposition, as in a foreground job
  env --default-signal="$sig" "$tool" quantize -i f32 -d int64 --scale 1 "$big" "$out" \
    > /dev/null 2> "$tmp/err-$sig" &
  pid=$!
  caught=
  tries=0
  while [ -z "$caught" ] && kill -0 $pid 2>/dev/null && [ $tries -lt 200000 ]; do
    for f in "$out".??????; do
      if [ -e "$f" ]; then
        # on a loaded machine the write may end between the test and the stop: the
        # temporary must still be there once the tool is stopped, or this is no test
        # of the write phase (the stopped tool takes the signal before anything else)
        if kill -STOP $pid 2>/dev/null; then
          if [ -e "$f" ]; then
            caught=$f
          else
            kill -CONT $pid
          fi
        fi
        break
      fi
    done
    tries=$((tries + 1))
  done
  if [ -z "$caught" ]; then
    wait $pid
    echo "ok $((n + 1)) - signal/$sig/removes-temporary # SKIP the write finished before it could be interrupted"
    n=$((n + 1))
    rm -f "$out"
    return
  fi
  kill -"$sig" $pid
  kill -CONT $pid
  wait $pid
  status=$?
  left=$(ls "$tmp" | grep -c "^out-$sig\\.piqt")
  if [ $status -gt 128 ] && [ "$left" -eq 0 ]; then
    ok "signal/$sig/removes-temporary"
  else
    not_ok "signal/$sig/removes-temporary" "exit status $status" "left: $(ls "$tmp" | grep "^out-$sig")" \
      "the tool said: $(cat "$tmp/err-$sig")"
  fi
  rm -f "$out" "$out".?????? "$tmp/err-$sig"
}

signal_case TERM
signal_case INT
signal_case HUP
rm -f "$big"

# --- .npy descr with a NUL byte ---------------------------------------------

make_npy "$tmp/nul.npy" '<f4\0'
err=$("$tool" quantize "$tmp/nul.npy" "$tmp/nul.piqt" 2>&1 >/dev/null)
status=$?
if [ $status -eq 1 ] && printf '%s' "$err" | grep -q 'NUL' && [ ! -e "$tmp/nul.piqt" ]; then
  ok "npy/descr-with-nul-refused"
else
  not_ok "npy/descr-with-nul-refused" "exit status $status, stderr: $err"
fi
# the same file without the NUL is read
make_npy "$tmp/plain.npy" '<f4'
if "$tool" quantize "$tmp/plain.npy" "$tmp/plain.piqt" > /dev/null 2>&1; then
  ok "npy/descr-without-nul-read"
else
  not_ok "npy/descr-without-nul-read"
fi

echo "1..$n"
[ $failed -eq 0 ]

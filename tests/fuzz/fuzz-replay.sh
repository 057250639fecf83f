#!/bin/sh
# fuzz-replay.sh: every harness over its committed corpus, each input once.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Prints TAP, one test point per harness. Environment: FUZZERS (the harnesses,
# in the current directory), FUZZ_CORPORA (the corpus/ directory of the source tree).

n=0
failed=0
for f in $FUZZERS; do
  n=$((n + 1))
  name=${f#fuzz-}
  dir=$FUZZ_CORPORA/$name
  if [ ! -d "$dir" ]; then
    failed=$((failed + 1))
    echo "not ok $n - /fuzz/$name/replay"
    echo "# no corpus at $dir"
    continue
  fi
  count=$(ls "$dir" | wc -l)
  if out=$(./"$f" -runs=0 "$dir" 2>&1); then
    echo "ok $n - /fuzz/$name/replay ($count inputs)"
  else
    failed=$((failed + 1))
    echo "not ok $n - /fuzz/$name/replay"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/# /'
  fi
done
echo "1..$n"
[ $failed -eq 0 ]

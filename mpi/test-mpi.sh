#!/bin/sh
# Runs test-mpi under $MPIEXEC with 2, 3 and 4 ranks on this host and prints one
# TAP stream (rank 0 prints each rank count's lines; the plan comes last), then
# the mpi4py example with 2 ranks when python3 has mpi4py and gi.
# `test-mpi.sh --bench [ARGS]` runs piquant-mpi-bench instead (docs/mpi.md).
#
# Open MPI refuses root without two variables (CI runs as root), and needs
# --oversubscribe to start more ranks than this machine has cores.
set -u
srcdir=${srcdir:-$(dirname "$0")}
mpiexec=${MPIEXEC:-mpiexec}
launch="$mpiexec"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   # other MPIs ignore them
if "$mpiexec" --version 2>/dev/null | grep -q -E 'Open MPI|OpenRTE'; then
  launch="$mpiexec --oversubscribe --bind-to none"
fi

if [ "${1:-}" = "--bench" ]; then
  shift
  for np in ${PIQ_MPI_BENCH_RANKS:-2 4}; do
    $launch -np "$np" ./piquant-mpi-bench "$@" || exit 1
  done
  exit 0
fi

# The tests: shared memory only (no network interface is probed), and copies
# through it rather than cross-memory attach, which containers often forbid.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none

if ! command -v "$mpiexec" >/dev/null 2>&1; then
  echo "1..0 # SKIP no MPI launcher ($mpiexec)"
  exit 0
fi

# A rank that waits forever would stop the suite: every launch has a limit.
limit=""
command -v timeout >/dev/null 2>&1 && limit="timeout 600"

total=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for np in 2 3 4; do
  $limit $launch -np "$np" ./test-mpi > "$out" 2>&1
  rc=$?
  cat "$out"
  n=$(grep -c -E '^(not )?ok ' "$out")
  total=$((total + n))
  if [ "$rc" -ne 0 ]; then
    total=$((total + 1))
    echo "not ok - $launch -np $np ./test-mpi exited with status $rc"
  fi
done

# The Python route (mpi4py for the transport, the typelib for the codecs).
py=${PYTHON3:-python3}
total=$((total + 1))
if [ -n "${PIQ_SANITIZED:-}" ]; then
  echo "ok - mpi4py example # SKIP sanitized build (python3 is not instrumented)"
elif ! "$py" -c 'import mpi4py, gi' 2>/dev/null; then
  echo "ok - mpi4py example # SKIP python3 lacks mpi4py or gi"
elif $limit $launch -np 2 "$py" "$srcdir/allreduce-mpi4py.py" > "$out" 2>&1; then
  sed 's/^/# /' "$out"
  echo "ok - mpi4py example under $mpiexec -np 2"
else
  sed 's/^/# /' "$out"
  echo "not ok - mpi4py example under $mpiexec -np 2"
fi
echo "1..$total"

#!/bin/sh
# Cross-builds the kernel layer and test-kernels.c for AArch64 and runs them under
# qemu-user, so the NEON table is checked byte for byte against the scalar one on
# this x86-64 machine. Skipped (TAP "1..0 # SKIP") when the cross tools are absent.
set -u
srcdir=${G_TEST_SRCDIR:-$(dirname "$0")}
top_srcdir=$srcdir/..
cc=${AARCH64_CC:-aarch64-linux-gnu-gcc}
qemu=${QEMU_AARCH64:-qemu-aarch64}
sysroot=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}

if ! command -v "$cc" >/dev/null 2>&1 || ! command -v "$qemu" >/dev/null 2>&1 || [ ! -d "$sysroot" ]; then
  echo "1..0 # SKIP needs $cc, $qemu and $sysroot (Debian: gcc-aarch64-linux-gnu qemu-user)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
# What configure would define on an AArch64 host (m4/piq-simd.m4).
cat > "$tmp/config.h" <<'CONFIG'
#define PIQ_HAVE_NEON 1
#define PIQ_HAVE_NEONDOT 1
#define PIQ_SIMD_UNITS(X) X (NEON, neon) X (NEONDOT, neondot)
#define PIQ_NEON_REQUIRED (PIQ_CPU_NEON)
#define PIQ_NEONDOT_REQUIRED (PIQ_CPU_NEON|PIQ_CPU_DOTPROD)
#define PIQ_HAVE_IFUNC 1
CONFIG

simd=$top_srcdir/piquant/simd
flags="-std=gnu11 -O2 -ffp-contract=off -fno-math-errno -fvisibility=hidden -Wall -I$tmp -I$top_srcdir/piquant -I$simd"
# the dot-product unit with its own flags (configure's PIQ_NEONDOT_CFLAGS), the rest baseline
if ! { "$cc" $flags -march=armv8.2-a+dotprod -c "$simd/piq-kernels-neondot.c" -o "$tmp/neondot.o" &&
       "$cc" $flags \
         "$simd/piq-kernels-scalar.c" "$simd/piq-formats.c" "$simd/piq-kernels-neon.c" "$tmp/neondot.o" \
         "$simd/piq-dispatch.c" "$simd/piq-cpu-detect.c" "$top_srcdir/piquant/piq-format-table.c" \
         "$srcdir/test-kernels.c" -lm -o "$tmp/test-kernels-aarch64"; } > "$tmp/build.log" 2>&1; then
  echo "1..1"
  echo "not ok 1 - /kernels/neon/cross-build"
  sed 's/^/# /' "$tmp/build.log"
  exit 1
fi
# "max" has every feature qemu emulates, FEAT_DotProd among them, so both tables run.
exec "$qemu" -cpu max -L "$sysroot" "$tmp/test-kernels-aarch64"

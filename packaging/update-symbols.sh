#!/bin/sh
# update-symbols.sh: refresh debian/libpiquant-1.0-0.symbols from the library
# of the last Debian build (packaging/build-packages.sh), after the public API
# changed on purpose.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: packaging/update-symbols.sh [WORKDIR]   (default /tmp/pkg-build)
#
# Symbols already listed keep their version; new ones get the upstream
# version of debian/changelog (the first release that has them). Removed
# symbols are an ABI break: dpkg-gensymbols reports them, and the library's
# SONAME (libtool -version-info in configure.ac) has to change with them.
# Review the diff this prints before committing it.
set -eu
srcdir=$(cd "$(dirname "$0")/.." && pwd)
workdir=${1:-/tmp/pkg-build}
symbols=$srcdir/debian/libpiquant-1.0-0.symbols

version=$(dpkg-parsechangelog -l "$srcdir/debian/changelog" -S Version)
upstream=${version%-*}
upstream=${upstream#*:}
pkgdir=$(ls -d "$workdir"/deb/piquant-*/debian/libpiquant-1.0-0 2>/dev/null | head -n 1)
[ -n "$pkgdir" ] && [ -d "$pkgdir" ] ||
  { echo "update-symbols.sh: no built libpiquant-1.0-0 under $workdir/deb (run packaging/build-packages.sh --deb-only)" >&2; exit 1; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT INT TERM
# -c0: report, do not fail, so the new file can be written and reviewed.
dpkg-gensymbols -c0 -plibpiquant-1.0-0 -P"$pkgdir" -v"$upstream" -I"$symbols" -O"$tmp"
[ -s "$tmp" ] || { echo "update-symbols.sh: dpkg-gensymbols wrote nothing" >&2; exit 1; }
if cmp -s "$tmp" "$symbols"; then
  echo "update-symbols.sh: $symbols is up to date"
else
  diff -u "$symbols" "$tmp" || true
  cp "$tmp" "$symbols"
  echo "update-symbols.sh: wrote $symbols"
fi

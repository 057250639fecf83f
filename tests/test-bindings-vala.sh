#!/bin/sh
# test-bindings-vala.sh: compile test-bindings.vala against piquant-1.0.vapi and
# the uninstalled library, then run it; the program prints TAP.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Environment (tests/Makefile.am sets it): VALAC, VAPIDIR (holds
# piquant-1.0.vapi and Piq-1.0.gir; the program reads both to check that every
# function that takes a GError throws Piq.Error in the VAPI), PKG_CONFIG_PATH (holds piquant-1.0-uninstalled.pc, which
# pkg-config prefers for "piquant-1.0"), LD_LIBRARY_PATH, G_TEST_SRCDIR,
# G_TEST_BUILDDIR. Compiler output goes to stderr (the .log), never to the TAP
# stream on stdout.

srcdir=${G_TEST_SRCDIR:-$(dirname "$0")}
builddir=${G_TEST_BUILDDIR:-$srcdir}
src="$srcdir/test-bindings.vala"

case "$VALAC" in
  ""|no|*/no) echo "1..0 # SKIP valac not found at configure time"; exit 0 ;;
esac
if ! command -v "$VALAC" >/dev/null 2>&1; then
  echo "1..0 # SKIP $VALAC is not executable"; exit 0
fi
if [ -z "$VAPIDIR" ] || [ ! -f "$VAPIDIR/piquant-1.0.vapi" ]; then
  echo "1..0 # SKIP piquant-1.0.vapi not built (no vapigen?) in ${VAPIDIR:-<VAPIDIR unset>}"; exit 0
fi
if [ ! -f "$src" ]; then
  echo "1..1"; echo "not ok 1 - vala/compile"; echo "# $src not found"; exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/piq-vala.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Headers: <piquant/piquant.h> from the source tree, the generated
# piq-version.h / piq-enum-types.h from the build tree (the uninstalled .pc
# says the same; the -I flags keep this working with an installed .pc first in
# the path).
top_srcdir=$(cd "$srcdir/.." && pwd)
top_builddir=$(cd "$builddir/.." && pwd)

# valac runs "pkg-config piquant-1.0" itself for the C flags and libraries.
if ! "$VALAC" --vapidir="$VAPIDIR" --pkg piquant-1.0 --pkg gobject-2.0 \
     -X -I"$top_srcdir" -X -I"$top_builddir" -X -w -X -lm \
     -d "$tmp" -o "$tmp/test-bindings" "$src" >"$tmp/valac.log" 2>&1; then
  echo "1..1"
  echo "not ok 1 - vala/compile"
  echo "# $VALAC --vapidir=$VAPIDIR --pkg piquant-1.0 failed:"
  sed 's/^/# /' "$tmp/valac.log"
  exit 1
fi
# warnings of a successful compile: to the log only
cat "$tmp/valac.log" >&2

# the program reads $VAPIDIR itself (vala/vapi/throws-piq-error)
VAPIDIR="$VAPIDIR" "$tmp/test-bindings"
rc=$?
exit $rc

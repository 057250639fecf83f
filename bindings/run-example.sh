#!/bin/sh
# run-example.sh EXAMPLE: run one example program against the uninstalled
# library, as a test: exit 0 passes, 77 skips (a tool is missing), anything else
# fails. Python, GJS and Lua run under their interpreters; the Vala and C
# examples are compiled into a temporary directory first. Everything goes to
# the test's log.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Environment (bindings/Makefile.am sets it): PYTHON3, GJS, LUA51, VALAC, CC,
# CFLAGS, PKG_CONFIG, GI_TYPELIB_PATH, LD_LIBRARY_PATH, PKG_CONFIG_PATH,
# PIQ_BUILDDIR (the library's build directory), abs_top_srcdir, abs_top_builddir.

example=$1

skip () { echo "SKIP: $*"; exit 77; }

# usable TOOL: configure found it and it can be run
usable () {
  case "$1" in ""|no|*/no) return 1 ;; esac
  command -v "${1%% *}" >/dev/null 2>&1
}

need_typelib () {
  [ -f "$PIQ_BUILDDIR/Piq-1.0.typelib" ] || skip "Piq-1.0.typelib not built (no introspection)"
}

case "$example" in
  *.py)
    usable "$PYTHON3" || skip "python3 not found at configure time"
    need_typelib
    "$PYTHON3" -c 'import gi, numpy' 2>/dev/null || skip "$PYTHON3 lacks PyGObject or numpy"
    exec "$PYTHON3" "$example" ;;
  *.js)
    usable "$GJS" || skip "gjs not found at configure time"
    need_typelib
    exec "$GJS" -m "$example" ;;
  *.lua)
    usable "$LUA51" || skip "lua5.1 not found at configure time"
    need_typelib
    "$LUA51" -e 'require "lgi"' 2>/dev/null || skip "$LUA51 lacks lgi"
    exec "$LUA51" "$example" ;;
  *.vala|*.c) ;;
  *) echo "run-example.sh: no rule for $example"; exit 99 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/piq-example.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

# -I: <piquant/piquant.h> from the source tree, the generated headers from the
# build tree (the uninstalled .pc says the same; these also win over an installed
# piquant-1.0.pc that comes first in the path).
case "$example" in
  *.vala)
    usable "$VALAC" || skip "valac not found at configure time"
    [ -f "$PIQ_BUILDDIR/piquant-1.0.vapi" ] || skip "piquant-1.0.vapi not built"
    echo "$VALAC --pkg piquant-1.0 $example"
    # -w: the C that valac generates draws GCC warnings that are none of ours
    "$VALAC" --vapidir="$PIQ_BUILDDIR" --pkg piquant-1.0 \
      -X -I"$abs_top_srcdir" -X -I"$abs_top_builddir" -X -w -X -lm \
      -d "$tmp" -o "$tmp/example" "$example" || exit 1 ;;
  *.c)
    usable "$CC" || skip "no C compiler"
    usable "$PKG_CONFIG" || skip "pkg-config not found at configure time"
    flags=$($PKG_CONFIG --cflags --libs piquant-1.0) || exit 1
    echo "$CC $CFLAGS $example $flags -lm"
    $CC $CFLAGS -I"$abs_top_srcdir" -I"$abs_top_builddir" -o "$tmp/example" "$example" \
      $flags -lm || exit 1 ;;
esac
"$tmp/example"

#!/bin/sh
# check-snippets.sh: every {{snippet:LANG:NAME}} line of bindings.md.in must name
# a closed [snippet:NAME] region of bindings/LANG/example.*, so that the page
# generated from it has no holes. Needs only awk, so it runs without gi-docgen.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Environment (docs/Makefile.am sets it): srcdir, top_srcdir, AWK.

: "${srcdir:=$(dirname "$0")}"
: "${top_srcdir:=$srcdir/..}"

${AWK:-awk} -v top_srcdir="$top_srcdir" -f "$srcdir/expand-snippets.awk" \
  "$srcdir/bindings.md.in" >/dev/null || exit 1
echo "every snippet of bindings.md.in resolves"

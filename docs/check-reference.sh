#!/bin/sh
# check-reference.sh: the reference must be complete and its links must resolve.
# Runs "gi-docgen check" on the GIR (every public symbol, parameter and return
# value documented) and reads the warnings of the last "gi-docgen generate"
# (links that do not resolve). Fails on any warning, listing them all.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Environment (docs/Makefile.am sets it): GI_DOCGEN, PIQ_GIR, PIQ_DOCS_CONFIG,
# PIQ_DOCS_WARNINGS.

case "$GI_DOCGEN" in
  ""|no|*/no) echo "gi-docgen not found at configure time"; exit 77 ;;
esac
if [ ! -f "$PIQ_GIR" ]; then
  echo "$PIQ_GIR not built"; exit 99
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/piq-docgen-check.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
esc=$(printf '\033')
plain () { sed "s/${esc}\[[0-9;]*m//g" "$@"; }   # gi-docgen always colours

status=0
"$GI_DOCGEN" check --quiet --config "$PIQ_DOCS_CONFIG" "$PIQ_GIR" >"$tmp/raw" 2>&1
rc=$?
log="$tmp/log"
plain "$tmp/raw" >"$log"
if [ $rc -ne 0 ] || grep -q WARNING "$log"; then
  echo "# gi-docgen check $PIQ_GIR: $(grep -c WARNING "$log") warning(s)"
  cat "$log"
  status=1
else
  echo "# gi-docgen check $PIQ_GIR: every symbol is documented"
fi

if [ -s "$PIQ_DOCS_WARNINGS" ]; then
  echo "# gi-docgen generate: $(grep -c WARNING "$PIQ_DOCS_WARNINGS") warning(s)"
  plain "$PIQ_DOCS_WARNINGS"
  status=1
elif [ -f "$PIQ_DOCS_WARNINGS" ]; then
  echo "# gi-docgen generate: no warnings"
else
  echo "# $PIQ_DOCS_WARNINGS is missing: the reference was not generated"
  status=99
fi
exit $status

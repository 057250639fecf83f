#!/bin/sh
# Regenerate the build system, then configure unless NOCONFIGURE is set.
set -e
srcdir=$(dirname "$0")
test -n "$srcdir" || srcdir=.
(cd "$srcdir" && autoreconf --force --install --verbose)
if test -z "$NOCONFIGURE"; then
  exec "$srcdir/configure" "$@"
fi

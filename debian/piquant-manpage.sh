#!/bin/sh
# debian/piquant-manpage.sh PROGRAM OUTPUT VERSION
#
# Writes piquant(1) with help2man, for as long as the upstream tree has no
# tools/piquant.1 of its own: the top-level --help gives NAME, SYNOPSIS and
# OPTIONS, debian/piquant.h2m the prose, and every command listed under
# "Commands:" in `piquant --help` gets a COMMANDS subsection holding its own
# --help, so new commands appear without editing this file.
set -eu
prog=$1 out=$2 version=$3
here=$(dirname "$0")

# GLib prints UTF-8 punctuation (…, “ ”) only in a UTF-8 locale.
LC_ALL=C.UTF-8
export LC_ALL

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
inc=$tmp/piquant.h2m
cat "$here/piquant.h2m" > "$inc"

# GLib's help puts the usage on the line after "Usage:"; help2man reads the
# synopsis from "Usage: PROGRAM ...", so give it that shape.
wrapper=$tmp/piquant
cat > "$wrapper" <<WRAPPER
#!/bin/sh
if [ "\$1" = --help ]; then
  "$prog" --help | sed -e '/^Usage:\$/{N;s/\\n *//;s/^Usage:/Usage: /}'
else
  exec "$prog" "\$@"
fi
WRAPPER
chmod +x "$wrapper"

# Escape text for an .nf block: backslashes, and control characters at the
# start of a line.
roff_escape() {
  sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

commands=$("$prog" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { on = 0 } on && NF { print $1 }')
if [ -n "$commands" ]; then
  printf '[COMMANDS]\n' >> "$inc"
  for cmd in $commands; do
    [ "$cmd" = help ] && continue
    printf '.SS "piquant %s"\n.nf\n' "$cmd" >> "$inc"
    "$prog" "$cmd" --help | sed -e '1{/^Usage:$/d}' | roff_escape >> "$inc"
    printf '.fi\n' >> "$inc"
  done
fi

help2man --no-info --no-discard-stderr --locale=C.UTF-8 \
  --version-string="$version" \
  --name='show CPU quantization kernel information and run demonstrations' \
  --section=1 --include="$inc" --output="$out" "$wrapper"

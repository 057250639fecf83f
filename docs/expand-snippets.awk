# expand-snippets.awk: copy a page, replacing every line that holds only
#   {{snippet:LANG:NAME}}
# with the region of bindings/LANG/example.EXT that starts after the line
# containing "[snippet:NAME]" and ends before the next line containing
# "[/snippet]", its common indentation removed. Exits 1 (after naming the
# problem on stderr) for an unknown language, a missing or unclosed region, or a
# marker that is not alone on its line, so no page is made with a hole in it.
#
#   awk -v top_srcdir=DIR -f expand-snippets.awk bindings.md.in > bindings.md
#
# SPDX-License-Identifier: LGPL-2.1-or-later

BEGIN {
  ext["python"] = "py"
  ext["gjs"] = "js"
  ext["lua"] = "lua"
  ext["vala"] = "vala"
  ext["c"] = "c"
  if (top_srcdir == "")
    top_srcdir = ".."
  status = 0
}

function fail(msg) {
  printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
  status = 1
}

/^[ \t]*\{\{snippet:[a-z0-9]+:[A-Za-z0-9_-]+\}\}[ \t]*$/ {
  spec = $0
  gsub(/[ \t{}]/, "", spec)
  split(spec, part, ":")
  lang = part[2]
  name = part[3]
  if (!(lang in ext)) {
    fail("unknown language \"" lang "\" in " spec)
    next
  }
  file = top_srcdir "/bindings/" lang "/example." ext[lang]
  n = 0
  inside = 0
  found = 0
  while ((r = (getline line < file)) > 0) {
    if (!inside && !found && index(line, "[snippet:" name "]") > 0) {
      inside = 1
      found = 1
    } else if (inside && index(line, "[/snippet]") > 0) {
      inside = 0
    } else if (inside) {
      buf[++n] = line
    }
  }
  close(file)
  if (r < 0) {
    fail("cannot read " file)
    next
  }
  if (!found) {
    fail("no [snippet:" name "] in " file)
    next
  }
  if (inside) {
    fail("[snippet:" name "] in " file " has no [/snippet]")
    next
  }
  indent = -1
  for (i = 1; i <= n; i++) {
    if (buf[i] ~ /[^ ]/) {
      match(buf[i], /^ */)
      if (indent < 0 || RLENGTH < indent)
        indent = RLENGTH
    }
  }
  for (i = 1; i <= n; i++)
    print (indent > 0 ? substr(buf[i], indent + 1) : buf[i])
  next
}

/\{\{snippet:/ {
  fail("a {{snippet:LANG:NAME}} marker must be alone on its line")
  next
}

{ print }

END { exit status }

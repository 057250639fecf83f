#!/bin/bash
# test-installed.sh: install the built .debs on this machine and run the C,
# Python, GJS, Lua and Vala examples against the installed system paths.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: packaging/test-installed.sh [OPTION]...
#   --debs DIR    the .debs to install (default /tmp/pkg-build/deb)
#   --installed   install nothing: test the packages already installed (as
#                 debian/tests/examples does under autopkgtest)
#   --keep        leave the packages installed afterwards (by default the
#                 piquant packages this script installed are purged again, so
#                 a system copy cannot shadow a build tree later)
#
# Every program runs in an empty temporary directory with `env -i` (PATH,
# HOME, LANG only): no GI_TYPELIB_PATH, LD_LIBRARY_PATH, PKG_CONFIG_PATH or
# VAPIDIR, nothing of the build tree. For each language it runs
#   - bindings/<lang>/example.*, the copy libpiquant-1.0-dev installs in
#     /usr/share/doc/libpiquant-1.0-dev/examples/<lang>/ (the tree's when the
#     package is not installed), and
#   - packaging/smoke/smoke.*, a small round trip that also prints the files
#     the process mapped, which must be /usr/lib/<multiarch>/libpiquant-1.0.so.0
#     and /usr/lib/<multiarch>/girepository-1.0/Piq-1.0.typelib.
# For every run, the dynamic loader's trace (LD_DEBUG=files) must show
# libpiquant loaded from /usr/lib/<multiarch>/.
# Needs root unless --installed. Exit status 0 when every check passed.
set -uo pipefail

srcdir=$(cd "$(dirname "$0")/.." && pwd)
debdir=/tmp/pkg-build/deb
install=yes
keep=no

while [ $# -gt 0 ]; do
  case $1 in
    --debs) debdir=$2; shift ;;
    --debs=*) debdir=${1#*=} ;;
    --installed) install=no ;;
    --keep) keep=yes ;;
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "test-installed.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
libdir=/usr/lib/$multiarch
packages=(libpiquant-1.0-0 libpiquant-1.0-dev gir1.2-piq-1.0 piquant-tools libpiquant-1.0-doc python3-piquant
          libpiquant-mpi-1.0-0 libpiquant-mpi-1.0-dev)
# What the examples need besides the packages (their Depends pull in the rest).
example_deps=(python3-gi python3-numpy gjs lua5.1 lua-lgi valac gcc libc6-dev pkg-config man-db
              mpi-default-bin)

tmp=$(mktemp -d /tmp/piq-installed.XXXXXX)
installed_here=()
cleanup() {
  if [ ${#installed_here[@]} -gt 0 ] && [ "$keep" = no ]; then
    echo
    echo "==> purging ${installed_here[*]} (use --keep to leave them)"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 purge -y -q \
      "${installed_here[@]}" >/dev/null || echo "warning: purging failed" >&2
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failures=0
results=()
pass() { results+=("PASS  $1"); echo "PASS: $1"; }
fail() { results+=("FAIL  $1"); echo "FAIL: $1"; failures=$((failures + 1)); }

# ---- install ----
if [ "$install" = yes ]; then
  [ "$(id -u)" -eq 0 ] || { echo "test-installed.sh: installing needs root (or use --installed)" >&2; exit 1; }
  debs=()
  for p in "${packages[@]}"; do
    f=$(ls "$debdir/${p}"_*.deb 2>/dev/null | head -n 1)
    if [ -n "$f" ]; then
      debs+=("$f")
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || installed_here+=("$p")
    fi
  done
  [ ${#debs[@]} -gt 0 ] || { echo "test-installed.sh: no piquant .debs in $debdir" >&2; exit 1; }
  echo "==> installing: ${debs[*]##*/}"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
    --no-install-recommends "${debs[@]}" "${example_deps[@]}" > "$tmp/apt.log" 2>&1 ||
    { cat "$tmp/apt.log"; echo "test-installed.sh: apt-get install failed" >&2; exit 1; }
fi

echo
echo "==> installed"
dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null |
  grep ' ii' || { echo "test-installed.sh: no piquant package is installed" >&2; exit 1; }
is_installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^ii'; }

# A clean environment and an empty working directory for every program.
clean_env=(env -i PATH=/usr/bin:/bin HOME="$tmp/home" LANG=C.UTF-8)
mkdir -p "$tmp/home"

# Prints those of its arguments that are not in $libdir or below. With
# merged /usr the loader may name /lib/<multiarch>/..., the same directory.
real_libdir=$(readlink -f "$libdir")
not_system() {
  local f
  for f in "$@"; do
    case $(readlink -f "$(dirname "$f")")/ in
      "$real_libdir"/*) ;;
      *) echo "$f" ;;
    esac
  done
}

# run NAME DIR COMMAND...: runs COMMAND in DIR with the clean environment and
# the loader trace; passes when it exits 0 and libpiquant came from $libdir.
run() {
  local name=$1 dir=$2
  shift 2
  local trace=$tmp/ld.$(echo "$name" | tr -c 'A-Za-z0-9\n' '_')
  echo
  echo "---- $name: $*"
  (cd "$dir" && "${clean_env[@]}" LD_DEBUG=files LD_DEBUG_OUTPUT="$trace" "$@") > "$tmp/out" 2>&1
  local rc=$?
  sed 's/^/  | /' "$tmp/out"
  if [ $rc -ne 0 ]; then
    fail "$name (exit status $rc)"
    return
  fi
  local loaded
  loaded=$(cat "$trace".* 2>/dev/null | sed -n 's/.*calling init: \(.*libpiquant-1\.0\.so[^ ]*\).*/\1/p' | sort -u)
  if [ -z "$loaded" ]; then
    fail "$name (libpiquant was never loaded)"
    return
  fi
  local bad
  bad=$(not_system $loaded)
  if [ -n "$bad" ]; then
    fail "$name (libpiquant loaded from $bad)"
    return
  fi
  # Smoke programs print what they mapped: all of it must be system files.
  bad=$(not_system $(sed -n 's/^mapped: //p' "$tmp/out"))
  if [ -n "$bad" ]; then
    fail "$name (mapped $bad)"
    return
  fi
  pass "$name (libpiquant from $(echo "$loaded" | head -n 1))"
}

# Copies a program (with the rest of its directory) into a fresh directory.
stage() {
  local src=$1 dest
  dest=$(mktemp -d "$tmp/run.XXXXXX")
  cp -r "$(dirname "$src")"/. "$dest"/
  echo "$dest"
}

# Vala: compiled against the installed VAPI and .pc, no --vapidir.
vala_build() {
  local name=$1 src=$2 dir
  dir=$(stage "$src")
  echo
  echo "---- $name: valac --pkg piquant-1.0 $(basename "$src")"
  if (cd "$dir" && "${clean_env[@]}" valac --pkg piquant-1.0 --pkg gio-2.0 -X -w -X -lm \
        -o "$dir/prog" "$(basename "$src")") > "$tmp/valac.log" 2>&1; then
    run "$name" "$dir" ./prog
  else
    sed 's/^/  | /' "$tmp/valac.log"
    fail "$name (valac failed)"
  fi
}

# C: compiled with the installed headers and `pkg-config piquant-1.0`.
c_build() {
  local name=$1 src=$2 dir
  dir=$(stage "$src")
  echo
  echo "---- $name: cc $(basename "$src") \$(pkg-config --cflags --libs piquant-1.0)"
  if (cd "$dir" && "${clean_env[@]}" sh -c \
        'cc -std=gnu11 -Wall -o prog "$1" $(pkg-config --cflags --libs piquant-1.0) -lm' sh "$(basename "$src")") \
        > "$tmp/cc.log" 2>&1; then
    sed 's/^/  | /' "$tmp/cc.log"
    run "$name" "$dir" ./prog
  else
    sed 's/^/  | /' "$tmp/cc.log"
    fail "$name (compilation failed)"
  fi
}

# ---- the files where they belong ----
echo
echo "==> files"
check_file() {
  if [ -e "$2" ]; then pass "$1: $2"; else fail "$1: $2 is missing"; fi
}
is_installed libpiquant-1.0-0 && check_file library "$libdir/libpiquant-1.0.so.0"
if is_installed libpiquant-1.0-dev; then
  check_file header /usr/include/piquant-1.0/piquant/piquant.h
  check_file pkg-config "$libdir/pkgconfig/piquant-1.0.pc"
  check_file GIR /usr/share/gir-1.0/Piq-1.0.gir
  check_file VAPI /usr/share/vala/vapi/piquant-1.0.vapi
  # Every example bindings/Makefile.am lists is installed, and nothing else.
  exdir=/usr/share/doc/libpiquant-1.0-dev/examples
  listed=$(sed -n '/^examples = /,/\$(NULL)/{s/^[[:space:]]*\([a-z]*\/[^ ]*\).*/\1/p}' \
             "$srcdir/bindings/Makefile.am" | sort)
  [ -n "$listed" ] || fail "examples: no list in bindings/Makefile.am"
  for f in $listed; do check_file example "$exdir/$f"; done
  extra=$(cd "$exdir" 2>/dev/null && find . -type f | sed 's|^\./||' | sort | comm -13 <(echo "$listed") -)
  [ -z "$extra" ] || fail "examples: $exdir has files bindings/Makefile.am does not list: $extra"
  v=$("${clean_env[@]}" pkg-config --modversion piquant-1.0 2>&1) &&
    pass "pkg-config --modversion piquant-1.0: $v" || fail "pkg-config piquant-1.0: $v"
fi
is_installed gir1.2-piq-1.0 && check_file typelib "$libdir/girepository-1.0/Piq-1.0.typelib"
if is_installed libpiquant-1.0-doc; then
  check_file "API reference" /usr/share/doc/piquant-1.0/index.html
  check_file "API reference search index (uncompressed)" /usr/share/doc/piquant-1.0/index.json
fi
if is_installed piquant-tools; then
  m=$("${clean_env[@]}" man -w piquant 2>&1) && pass "man page: $m" || fail "man -w piquant: $m"
  run "piquant --version" "$tmp" piquant --version
  run "piquant info" "$tmp" piquant info
  run "piquant demo (small)" "$tmp" piquant demo --elements 100000
fi

# ---- the language examples ----
echo
echo "==> examples"
# The installed copy of an example when there is one, else the tree's.
example() {
  ls /usr/share/doc/libpiquant-1.0-dev/examples/"$1"/example."$2" \
     "$srcdir"/bindings/"$1"/example."$2" 2>/dev/null | head -n 1
}
smoke=$srcdir/packaging/smoke

if is_installed libpiquant-1.0-dev; then
  ex=$(example c c)
  [ -n "$ex" ] && c_build "C example (${ex%/*})" "$ex"
  c_build "C smoke (packaging/smoke)" "$smoke/smoke.c"
fi
# MPI: compiled with `pkg-config piquant-mpi-1.0`, run on 2 ranks of this host
# (Open MPI wants two variables to run as root, and --oversubscribe on 1 core).
if is_installed libpiquant-mpi-1.0-dev; then
  check_file "MPI header" /usr/include/piquant-mpi-1.0/piquant-mpi.h
  dir=$(stage "$smoke/smoke-mpi.c")
  echo
  echo "---- MPI smoke: cc smoke-mpi.c \$(pkg-config --cflags --libs piquant-mpi-1.0); mpiexec -np 2"
  if (cd "$dir" && "${clean_env[@]}" sh -c \
        'cc -std=gnu11 -Wall -o prog "$1" $(pkg-config --cflags --libs piquant-mpi-1.0) -lm' sh smoke-mpi.c) \
        > "$tmp/cc.log" 2>&1; then
    run "MPI smoke (packaging/smoke)" "$dir" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpiexec --oversubscribe -np 2 ./prog
  else
    sed 's/^/  | /' "$tmp/cc.log"
    fail "MPI smoke (compilation failed)"
  fi
fi
if is_installed gir1.2-piq-1.0; then
  for lang in python:py:/usr/bin/python3 gjs:js:gjs lua:lua:lua5.1; do
    IFS=: read -r dir ext interp <<< "$lang"
    ex=$(example "$dir" "$ext")
    if [ -n "$ex" ]; then
      d=$(stage "$ex")
      args=()
      # An ES module (import declarations) runs with gjs -m.
      [ "$dir" = gjs ] && grep -q '^import ' "$ex" && args=(-m)
      run "$dir example (${ex%/*})" "$d" "$interp" "${args[@]}" "$(basename "$ex")"
    else
      echo
      echo "---- $dir: bindings/$dir/example.$ext not in the tree; the smoke program stands in"
    fi
    d=$(stage "$smoke/smoke.$ext")
    run "$dir smoke (packaging/smoke)" "$d" "$interp" "smoke.$ext"
  done
fi
if is_installed libpiquant-1.0-dev; then
  ex=$(example vala vala)
  if [ -n "$ex" ]; then
    vala_build "vala example (${ex%/*})" "$ex"
  else
    echo
    echo "---- vala: bindings/vala/example.vala not in the tree; the smoke program stands in"
  fi
  vala_build "vala smoke (packaging/smoke)" "$smoke/smoke.vala"
fi

echo
echo "==> summary"
printf '%s\n' "${results[@]}"
if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all ${#results[@]} checks passed"

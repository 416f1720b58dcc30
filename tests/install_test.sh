#!/usr/bin/env bash
# Install into a scratch tree, build apps/example.c against the installed
# rt-pp.pc exactly as a user would, and run it against the installed library.
# usage: install_test.sh BUILD_DIR EXAMPLE_C
set -euo pipefail
build=$1 example=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null
pc=$(find "$dest" -name rt-pp.pc -print -quit)
[ -n "$pc" ] || { echo "FAIL: rt-pp.pc not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
libdir=$(pkg-config --variable=libdir rt-pp)   # sysroot already applied
[ -f "$libdir/librt-pp.so" ] || { echo "FAIL: librt-pp.so not in $libdir"; exit 1; }

# Only the public API leaves the library.
bad=$(nm -D --defined-only "$libdir/librt-pp.so" | awk '$2 ~ /[TDBR]/ {print $3}' |
      grep -v '^pp_' || true)
[ -z "$bad" ] || { echo "FAIL: non-API symbols exported:"; echo "$bad"; exit 1; }
nm -D --defined-only "$libdir/librt-pp.so" | grep -q ' T pp_init$' ||
  { echo "FAIL: pp_init not exported"; exit 1; }

cc -std=c11 -Wall -Werror -o "$dest/example" "$example" \
  $(pkg-config --cflags --libs rt-pp) -Wl,-rpath,"$libdir"

# The installed library's configuration check runs: an unknown key is named.
set +e
err=$("$dest/example" frobnicate=1 2>&1 >/dev/null)
rc=$?
set -e
echo "$err"
[ $rc -eq 1 ] || { echo "FAIL: example exit status $rc, want 1"; exit 1; }
grep -q "unknown configuration key 'frobnicate'" <<<"$err" ||
  { echo "FAIL: error does not name the key"; exit 1; }

# The installed pprun finds the installed test bed script (not the source
# tree's): pprun --help says which it would use.
pprun=$(find "$dest" -path '*/bin/pprun' -print -quit)
[ -n "$pprun" ] || { echo "FAIL: pprun not installed"; exit 1; }
tb=$(env -u PPRUN_TESTBED "$pprun" --help | sed -n 's/^testbed.sh here: //p')
case $tb in
  "$dest"/*/librt-pp/testbed.sh) [ -x "$tb" ] || { echo "FAIL: $tb is not executable"; exit 1; } ;;
  *) echo "FAIL: the installed pprun finds '$tb', not the installed testbed.sh"; exit 1 ;;
esac
echo "PASS: installed rt-pp.pc builds and links a program; the installed pprun finds $tb"

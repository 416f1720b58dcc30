#!/usr/bin/env bash
# libfabric's own acceptance tests (fabtests 1.17.0, the version Debian 12's
# libfabric is) against the pp provider, between the test bed's two
# namespaces: each client/server test runs its server as rank 0 of a job of
# two on ppn0's port and its client as rank 1 on ppn1's, the names exchanged
# out of band (-E) over TCP on pp0; the unit tests run on ppn0's port alone.
# Every test in fabtests.list must pass; fabtests.exclude says why each test
# left out does not apply to pp.
#
# Usage: fabtests.sh OFI_DIR TESTBED_SH TARBALL BUILD_DIR
#   OFI_DIR     the build's ofi/ (libpp-fi.so)
#   TARBALL     fabtests-1.17.0.tar.gz (the shared suites folder)
#   BUILD_DIR   where fabtests is built once and kept (BUILD_DIR/fabtests)
set -uo pipefail
ofi=$1 tb=$2 tarball=$3 bdir=$4
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -f "$ofi/libpp-fi.so" ] || { echo "SKIP: $ofi/libpp-fi.so not built (-Dofi)"; exit 77; }
[ -f "$tarball" ] || { echo "SKIP: no $tarball"; exit 77; }
for t in autoreconf libtoolize make; do
  command -v "$t" >/dev/null || { echo "SKIP: '$t' is missing (tests/deps.sh)"; exit 77; }
done
fail() { echo "FAIL: $*"; exit 1; }

# Configured once per build folder, then only the programs fabtests.list
# runs are built (`make` of those 18 s on 2 cores, of all of them 37 s;
# autogen and configure, 17 s, run once). Every program the configured
# suite has is named in fabtests.list or fabtests.exclude; bin/ holds links
# to those built.
ft=$bdir/fabtests
if [ ! -f "$ft/configured" ]; then
  rm -rf "$ft" && mkdir -p "$ft/bin" || fail "mkdir $ft"
  tar xzf "$tarball" -C "$ft" || fail "unpack $tarball"
  src=$(echo "$ft"/fabtests-*)
  (cd "$src" && ./autogen.sh && ./configure --with-libfabric=/usr) >"$ft/build.log" 2>&1 ||
    { tail -30 "$ft/build.log"; fail "configuring fabtests (log: $ft/build.log)"; }
  # The configured bin_PROGRAMS (paths such as functional/fi_rdm).
  printf 'pp-programs:\n\t@echo $(bin_PROGRAMS)\n' >"$ft/programs.mk"
  make -s -C "$src" -f Makefile -f "$ft/programs.mk" pp-programs | tr ' ' '\n' |
    grep . >"$ft/programs" || fail "no program list from fabtests' Makefile"
  touch "$ft/configured"
fi
src=$(echo "$ft"/fabtests-*) bin=$ft/bin
want=()
while read -r path; do
  n=$(basename "$path")
  grep -qw -- "$n" "$here/fabtests.list" "$here/fabtests.exclude" ||
    fail "$n is in neither fabtests.list nor fabtests.exclude"
  awk -v n="$n" '($1 == "pair" || $1 == "alone" || $1 == "quiet") && $2 == n { f = 1 } END { exit !f }' \
    "$here/fabtests.list" && want+=("$path")
done <"$ft/programs"
make -C "$src" -j"$(nproc)" "${want[@]}" >>"$ft/build.log" 2>&1 ||
  { tail -30 "$ft/build.log"; fail "building fabtests (log: $ft/build.log)"; }
for path in "${want[@]}"; do ln -sf "$src/$path" "$bin/" || fail "link $path"; done
# Every program fabtests.list names is one the suite has.
while read -r kind name _; do
  case $kind in pair | alone | quiet) [ -x "$bin/$name" ] || fail "fabtests.list: no program $name" ;; esac
done <"$here/fabtests.list"
ip0=10.77.10.1 ip1=10.77.10.2 plen=24
tmp=$(mktemp -d /tmp/pp-fabtests.XXXXXX)
spid=
cleanup() {
  [ -z "$spid" ] || { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
  ip -n ppn0 addr del "$ip0/$plen" dev pp0 2>/dev/null
  ip -n ppn1 addr del "$ip1/$plen" dev pp0 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# A signal too (meson's timeout, Ctrl-C): without it the EXIT trap does not
# run and the addresses given to the test bed's ports stay for the next job.
trap 'exit 130' INT TERM
TESTBED_MTU=9000 "$tb" up 2 1 >/dev/null || fail "testbed.sh up 2 1"
ip -n ppn0 addr add "$ip0/$plen" dev pp0 || fail "address on ppn0 pp0"
ip -n ppn1 addr add "$ip1/$plen" dev pp0 || fail "address on ppn1 pp0"

# rank NODE RANK CMD...: CMD in namespace ppnNODE as rank RANK of a job of 2.
# glibc's malloc asks for transparent huge pages: the pingpong and bandwidth
# tests memset all their message buffers before their first transfer, and on a
# VM whose page faults cost 5 to 12 us a page that took 2 of a pair's 6 s
# (perf: 84 % of the client's samples under ft_alloc_msgs, page faults
# included); what the tests check is unchanged.
rank() {
  local node=$1 r=$2
  shift 2
  ip netns exec "ppn$node" env PP_RANK="$r" PP_SIZE=2 PP_JOB="$job" PP_DEV=packet:pp0 \
    FI_PROVIDER_PATH="$ofi" PP_TIMEOUT_MS=5000 GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
    timeout -k 5 120 "$@"
}

# Out-of-band ports below the kernel's ephemeral range (32768-60999), so no
# earlier connection's local port in TIME_WAIT can hold one (ofi_mpi.sh).
passed=0 failed=0 port=31700
# pair NAME ARGS...: server and client of one test; both must exit 0.
pair() {
  local name=$1 rc=0 src=0
  shift
  job=$((RANDOM + 1)) port=$((port + 1))
  rank 0 0 "$bin/$name" -p pp -E="$port" "$@" >"$tmp/server.log" 2>&1 &
  spid=$!
  for _ in $(seq 300); do # the client connects once: wait for the listener
    [ -z "$(ip netns exec ppn0 ss -Hltn "sport = :$port")" ] || break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
  done
  rank 1 1 "$bin/$name" -p pp -E="$port" "$@" "$ip0" >"$tmp/client.log" 2>&1 || rc=$?
  wait "$spid" || src=$?
  spid=
  if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
    echo "--- $name $*: client exited $rc"; tail -15 "$tmp/client.log"
    echo "--- server exited $src"; tail -15 "$tmp/server.log"
    failed=$((failed + 1))
    echo "not ok: $name $*"
    return
  fi
  passed=$((passed + 1))
  echo "ok: $name $*"
}

# alone NAME ARGS...: a unit test on one endpoint. A unit test that finds
# nothing to test (no provider with what it asks) exits 0 having printed
# nothing: that is no pass, so its summary line is required, except of a
# quiet one (KIND quiet), which prints nothing when it passes.
alone() {
  local name=$1 rc=0
  shift
  job=$((RANDOM + 1))
  rank 0 0 "$bin/$name" -p pp "$@" >"$tmp/unit.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ] || grep -q 'FAIL' "$tmp/unit.log" ||
    { [ "$kind" = alone ] && ! grep -q '^Summary: all tests passed' "$tmp/unit.log"; }; then
    echo "--- $name $*: exited $rc"; tail -15 "$tmp/unit.log"
    failed=$((failed + 1))
    echo "not ok: $name $*"
    return
  fi
  passed=$((passed + 1))
  echo "ok: $name $*"
}

while read -r -u 3 kind name args; do
  case $kind in
  pair) eval "pair $name $args" ;;
  alone | quiet) eval "alone $name $args" ;;
  '' | '#'*) ;;
  *) fail "fabtests.list: bad line '$kind $name $args'" ;;
  esac
done 3<"$here/fabtests.list"
echo "fabtests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

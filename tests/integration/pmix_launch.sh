#!/usr/bin/env bash
# Native jobs started by a PMIx launcher, Open MPI's mpirun, not by pprun:
#   pmix_launch.sh RT_CHECK PP_PINGPONG TESTBED NETNS_AGENT HAVE_PMIX
# rt_check gets no PP_RANK, PP_SIZE or PP_JOB: rank, size, job and node
# come from PMIx, the peers' ports from the records the ranks put before
# the fence. Each rank owns a port of the test bed, pp<local rank> of its
# namespace (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK picks it).
# 1. 2 ranks on 2 nodes: mpirun in ppn0, the second node's daemon started
#    in ppn1 by tests/bench/netns_agent.sh (plm_rsh_agent) over addresses
#    this script gives pp0; every rt_check scenario, over the port; and
#    pp_pingpong --check, whose rank 0 alone prints the table;
# 2. 2 ranks on one node: the same through shared memory;
# 3. a rank whose peer never reaches pp_init (a rank that is not a
#    librt-pp program): pp_init fails with the fence's timeout and says
#    so, and mpirun ends the job instead of hanging;
# 4. 2 ranks of one node as nobody: the packet: port refused, each falls
#    back to udp: (udp_fallback), every scenario over it; with
#    udp_fallback=off pp_init refuses, saying why.
# Each run checks the PMIx bootstrap was used (pp_init's line at
# PP_LOG=info). Skips (77) without root, mpirun, or PMIx in the build.
set -uo pipefail
rtc=$(realpath "$1") ppp=$(realpath "$2") tb=$3 agent=$4 have_pmix=$5
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ "$have_pmix" = yes ] || { echo "SKIP: librt-pp built without PMIx (libpmix-dev)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (openmpi-bin)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

"$tb" up 2 2 >/dev/null || fail "test bed"
log=$(mktemp /tmp/pp-pmix.XXXXXX)
# Addresses for mpirun's own daemons only; librt-pp uses raw frames.
ip0=10.78.0.1 ip1=10.78.0.2 plen=24
addrs=()
cleanup() {
  for a in "${addrs[@]}"; do ip -n "${a%% *}" addr del "${a#* }" dev pp0 2>/dev/null; done
  rm -f "$log"
}
trap cleanup EXIT
# A signal too (meson's timeout, Ctrl-C): without it the EXIT trap does not
# run and the addresses given to the test bed's ports stay for the next job.
trap 'exit 130' INT TERM
for a in "ppn0 $ip0/$plen" "ppn1 $ip1/$plen"; do
  ip -n "${a%% *}" addr replace "${a#* }" dev pp0 || fail "cannot give ${a%% *} pp0 ${a#* }"
  addrs+=("$a")
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Nothing of pprun's: whatever rank, size and job the ranks have is PMIx's.
unset PP_RANK PP_SIZE PP_JOB PP_NODE PP_DEV PP_CLUSTER
# The port of a rank is pp<its rank on the node>.
own_port='PP_DEV=packet:pp$OMPI_COMM_WORLD_LOCAL_RANK exec "$0" "$@"'

# mpirun_job SECS MPIRUN_ARGS...: run in ppn0, output in $log, its status.
mpirun_job() {
  local secs=$1
  shift
  timeout -k 5 "$secs" ip netns exec ppn0 mpirun --bind-to none --tag-output \
    -x PP_LOG=info "$@" >"$log" 2>&1
}
# pmix_used N: N ranks said pp_init took the PMIx bootstrap.
pmix_used() {
  local n
  n=$(grep -c 'pp_init: bootstrap pmix (namespace [^)]*): rank [01] of 2' "$log")
  [ "$n" -eq "$1" ] || { cat "$log"; fail "$2: $n of $1 ranks used the PMIx bootstrap"; }
}
checked() { # NAME: the job passed every rt_check scenario (9 checks)
  local rc=$1 ok
  ok=$(grep -c ': ok$' "$log")
  if [ "$rc" -ne 0 ] || [ "$ok" -ne 9 ] || grep -q FAIL "$log"; then
    cat "$log"
    fail "$2: status $rc, $ok of 9 checks ok"
  fi
}

# --- 1. two nodes --------------------------------------------------------------
NETNS_AGENT_HOSTS="$ip0=ppn0=0 $ip1=ppn1=1" mpirun_job 120 -np 2 --host "$ip0,$ip1" \
  --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include pp0 -x PP_TIMEOUT_MS=3000 \
  sh -c "$own_port" "$rtc" all
checked $? "2 ranks on 2 nodes"
pmix_used 2 "2 ranks on 2 nodes"
# The nodes are the launcher's names of the hosts (mpirun names its own
# after the machine, the other as --host gave it): no shared memory.
grep -q "rank 1 of 2, job key [0-9]*, node $ip1\$" "$log" ||
  { cat "$log"; fail "2 nodes: rank 1's node is not the launcher's name for it ($ip1)"; }
grep -q 'shm: segment' "$log" && { cat "$log"; fail "2 nodes: the ranks shared memory"; }
echo "ok: 2 ranks on 2 nodes, started by mpirun, every scenario over the port"
NETNS_AGENT_HOSTS="$ip0=ppn0=0 $ip1=ppn1=1" mpirun_job 120 -np 2 --host "$ip0,$ip1" \
  --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include pp0 \
  sh -c "$own_port" "$ppp" --check --test latency --sizes 8,64k --iters 50
rc=$?
pmix_used 2 "pp_pingpong on 2 nodes"
n=$(grep -c '<stdout>:# clock' "$log")
p=$(grep -c '^\[1,0\]<stdout>:latency  *push-pull .* 65536 ' "$log")
[ $rc -eq 0 ] && [ "$n" -eq 1 ] && [ "$p" -eq 1 ] ||
  { cat "$log"; fail "pp_pingpong on 2 nodes: status $rc, $n tables, $p rows of 64 KiB from rank 0"; }
echo "ok: pp_pingpong --check on 2 nodes, started by mpirun, one table"

# --- 2. one node -----------------------------------------------------------------
mpirun_job 120 -np 2 -x PP_TIMEOUT_MS=3000 sh -c "$own_port" "$rtc" all
checked $? "2 ranks on one node"
pmix_used 2 "2 ranks on one node"
n=$(grep -c 'shm: segment .*, 1 local peer(s) through shared memory' "$log")
[ "$n" -eq 2 ] || { cat "$log"; fail "one node: $n of 2 ranks reach their peer through shared memory"; }
echo "ok: 2 ranks on one node, started by mpirun, every scenario through shared memory"

# --- 3. a peer that never puts its record ---------------------------------------
# Rank 1 is no librt-pp program: it never reaches the fence. timeout
# catches a hang (status 124).
mpirun_job 60 -x PP_TIMEOUT_MS=2000 -np 1 sh -c "$own_port" "$rtc" all : -np 1 sleep 50
rc=$?
[ $rc -ne 124 ] && [ $rc -ne 137 ] || { cat "$log"; fail "a missing peer: the job hung"; }
[ $rc -ne 0 ] || { cat "$log"; fail "a missing peer: the job succeeded"; }
pmix_used 1 "a missing peer"
grep -q 'pp_init: PMIx fence: not every rank of namespace [^ ]* reached pp_init within 2000 ms' "$log" &&
  grep -q 'rt_check: pp_init: timed out' "$log" ||
  { cat "$log"; fail "a missing peer: no clear error"; }
echo "ok: a peer that never reaches pp_init: pp_init times out in the fence, saying so"
# --- 4. an unprivileged job ------------------------------------------------------
# mpirun and its ranks as nobody: packet:pp0 needs CAP_NET_RAW, so each rank
# falls back to udp: on pp0's address (udp_fallback), the peers' ports from
# the PMIx records; shm=off puts every scenario on the udp: ports. With
# udp_fallback=off pp_init fails and says why.
unpriv='PP_DEV=packet:pp0 exec "$0" "$@"'
nobody_job() { # SECS MPIRUN_ARGS...
  local secs=$1
  shift
  (cd /tmp && timeout -k 5 "$secs" ip netns exec ppn0 runuser -u nobody -- mpirun     --bind-to none --tag-output -x PP_LOG=info "$@") >"$log" 2>&1
}
nobody_job 120 -np 2 -x PP_SHM=off -x PP_TIMEOUT_MS=3000 sh -c "$unpriv" "$rtc" all
checked $? "an unprivileged job"
pmix_used 2 "an unprivileged job"
n=$(grep -c "pp_init: port 'packet:pp0': .*rank [01] uses udp:$ip0:0 instead" "$log")
u=$(grep -c "udp:$ip0:[0-9]*: mtu" "$log")
[ "$n" -eq 2 ] && [ "$u" -eq 2 ] ||
  { cat "$log"; fail "an unprivileged job: $n ranks said they fell back, $u udp: ports opened"; }
echo "ok: 2 ranks as nobody, started by mpirun: packet: refused, each fell back to udp:, every scenario"
nobody_job 60 -np 2 -x PP_UDP_FALLBACK=off -x PP_TIMEOUT_MS=2000 sh -c "$unpriv" "$rtc" all
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] &&
  grep -q "pp_init: cannot open port 'packet:pp0': Operation not permitted" "$log" &&
  grep -q "pp_init: a raw port needs CAP_NET_RAW (root, or setcap" "$log" &&
  ! grep -q 'uses udp:' "$log" ||
  { cat "$log"; fail "udp_fallback=off: status $rc, no clear refusal"; }
echo "ok: udp_fallback=off: pp_init refuses the port, saying why"
echo "PASS: native jobs started by mpirun through PMIx"

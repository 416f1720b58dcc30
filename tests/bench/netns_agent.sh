#!/usr/bin/env bash
# The "ssh" Open MPI's mpirun uses (plm_rsh_agent) in tests/bench/compare.sh:
# it runs the remote daemon's command line in the network namespace that owns
# the host address, pinned to that namespace's core, instead of logging in
# anywhere. Called as:  netns_agent.sh [ssh-style options] HOST COMMAND...
# The map comes from PP_BENCH_HOSTS: "IP=NAMESPACE=CPU IP=NAMESPACE=CPU ...".
set -euo pipefail
while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done
[ $# -ge 2 ] || { echo "netns_agent.sh: usage: netns_agent.sh HOST COMMAND..." >&2; exit 2; }
host=$1; shift
for entry in ${PP_BENCH_HOSTS:-}; do
  IFS='=' read -r ip ns cpu <<<"$entry"
  if [ "$ip" = "$host" ]; then
    # Not passed on: librt-pp in the ranks (the libfabric provider) takes
    # every PP_<KEY> variable as a setting and refuses unknown ones.
    exec env -u PP_BENCH_HOSTS ip netns exec "$ns" taskset -c "$cpu" /bin/sh -c "$*"
  fi
done
echo "netns_agent.sh: host '$host' is not in PP_BENCH_HOSTS ('${PP_BENCH_HOSTS:-}')" >&2
exit 2

#!/usr/bin/env bash
# The "ssh" Open MPI's mpirun uses (plm_rsh_agent) in tests/bench/compare.sh:
# it runs the remote daemon's command line in the network namespace that owns
# the host address, pinned to that namespace's core, instead of logging in
# anywhere. Called as:  netns_agent.sh [ssh-style options] HOST COMMAND...
# The map comes from NETNS_AGENT_HOSTS: "IP=NAMESPACE=CPU IP=NAMESPACE=CPU ...".
# (Not a PP_ name: the ranks inherit it, and librt-pp in them, the libfabric
# provider's too, takes every PP_<KEY> variable as a setting.)
set -euo pipefail
while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done
[ $# -ge 2 ] || { echo "netns_agent.sh: usage: netns_agent.sh HOST COMMAND..." >&2; exit 2; }
host=$1; shift
for entry in ${NETNS_AGENT_HOSTS:-}; do
  IFS='=' read -r ip ns cpu <<<"$entry"
  if [ "$ip" = "$host" ]; then
    exec ip netns exec "$ns" taskset -c "$cpu" /bin/sh -c "$*"
  fi
done
echo "netns_agent.sh: host '$host' is not in NETNS_AGENT_HOSTS ('${NETNS_AGENT_HOSTS:-}')" >&2
exit 2

#!/bin/sh
# node_rank.sh PROG [ARGS...]: PROG as one rank of an mpirun job on one
# test-bed node, on the packet: port its local rank names (pp0, pp1, ...):
# node-mates of Open MPI over librt-pp (compare_shm.sh, mpi_guard.sh).
case ${1:-} in -h | --help | "")
	sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
export PP_DEV="packet:pp${OMPI_COMM_WORLD_LOCAL_RANK:?not started by mpirun}"
exec "$@"

/* SPDX-License-Identifier: BSD-3-Clause */
/* af_xdp ports: clear what a process that died with the port open left behind. */
#ifndef PP_DPDK_XDP_H
#define PP_DPDK_XDP_H

/* How long an open waits for the kernel to release a queue that a closed
 * AF_XDP socket still holds. */
#define PP_XSK_RELEASE_WAIT_MS 2000

/* Before net_af_xdp binds queues start..start+count-1 of interface iface (in
 * the calling thread's network namespace): a queue bound by a live AF_XDP
 * socket is an error that names its process; libxdp's default AF_XDP
 * program left attached with no AF_XDP socket on the interface is detached
 * (logged); on veth, a queue still held by a socket that was closed is
 * waited for, at most PP_XSK_RELEASE_WAIT_MS.
 * Errors: -EBUSY (logged). Anything it cannot find out is left to the PMD. */
int pp_dpdk_xdp_prepare(const char *iface, unsigned start, unsigned count);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node's topology as ppd places its handlers, from hwloc: one logical
 * processor per physical core on the NIC's NUMA node (every node when it is
 * unknown). ppd uses it for --topology and its default --cores, pp_info to
 * show it. Cold path.
 */
#ifndef PP_TOPO_H
#define PP_TOPO_H

#include <stddef.h>
#include <stdio.h>

#define PP_TOPO_MAX_CORES 256 /* cores a placement may list at most */

/* The interface name in a device string (iface=NAME, pcap:NAME), or "". */
void pp_topo_dev_iface(const char *dev, char *out, size_t len);

/* The default cores for handlers of a port on dev (may be NULL): up to max
 * of them into cores. Returns the count, or -ENOMEM, -EIO (hwloc), -ENODEV
 * (no core found). */
int pp_topo_default_cores(const char *dev, int *cores, int max);

/* Print NUMA nodes, cores, caches, the NIC's node and the placement of at
 * most max handlers (on the cores listed in cores, or by default) to f.
 * Returns 0 or -errno (a bad core list: -EINVAL). */
int pp_topo_print(FILE *f, const char *dev, const char *cores, int max);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A kernel network interface as the socket backends (packet:, pcap:) see it
 * when they open a port. Cold path.
 */
#ifndef PP_IFACE_H
#define PP_IFACE_H

#include "pp_port.h"

/*
 * Fill info's mac, mtu (payload after the Ethernet header), link_up (up and
 * running) and speed_mbps (ethtool; 0 when unknown) for iface, and *ifindex
 * and *admin_up (IFF_UP) when not NULL.
 * Errors: -ENODEV no such interface, -EPROTOTYPE not Ethernet framing
 * (loopback passes), -errno of socket() or ioctl().
 */
int pp_iface_query(const char *iface, struct pp_port_info *info, int *ifindex, int *admin_up);

/* The first IPv4 address of iface, as text in buf (len >= INET_ADDRSTRLEN):
 * 0, -EADDRNOTAVAIL when it has none (or there is no such interface), or
 * -errno of getifaddrs. */
int pp_iface_ipv4(const char *iface, char *buf, size_t len);

#endif

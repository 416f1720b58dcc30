/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `packet:IFACE,frame=udp`: the packet: port's rings carrying the udp:
 * port's wire format (udp_frame.h), so that small frames keep the raw
 * rings' speed while a run of frames to one peer goes down the kernel's
 * UDP stack as one GSO message (a veth, or a NIC with USO, carries 64 KiB
 * a crossing) and routers forward everything. See driver/README.md, "The
 * packet: port in UDP".
 *
 * The port's identity is an IPv4 address and UDP port (its MAC encodes
 * them, as a udp: port's does), held by a UDP socket bound to them. That
 * socket sends runs (UDP_SEGMENT), group frames (to the peer list) and
 * frames to peers whose next hop is not known yet (the kernel resolves it);
 * it receives nothing (a filter drops all: every frame comes in through the
 * RX ring, whole when the kernel took a GSO message whole, its frames then
 * handed out in place). A single frame to a peer whose next hop is known
 * is written into a TX slot behind Ethernet, IPv4 and UDP headers. The
 * next hop of a peer (its MAC, or a router's) is learnt from the outer
 * source MAC of frames that passed the receive checks from it.
 */
#ifndef PP_PACKET_UDP_H
#define PP_PACKET_UDP_H

#include <stdint.h>

#include "packet_ring.h"
#include "pp_port.h"

#define PP_PKT_VNET_HLEN 10 /* struct virtio_net_hdr, before every frame */

struct pkt_udp;

/*
 * Parse the options after "IFACE," (frame=eth|udp, addr=, port=, peers=,
 * peerfile=, gso=). *u is NULL for frame=eth. For frame=udp bind the port
 * (addr=, an address of IFACE, else IFACE's first IPv4 address; port 0 or
 * none: a free one of the range).
 * if_mac is IFACE's MAC. Says what is wrong in words.
 * Errors: -EINVAL, -ENODEV (IFACE has no IPv4 address), -EADDRINUSE, -ENOMEM.
 */
int pkt_udp_open(struct pkt_udp **u, const char *iface, const char *opts, const uint8_t if_mac[6]);
void pkt_udp_close(struct pkt_udp *u);

/* The port's MAC (its address, encoded) and name ("packet:IFACE,udp:A:P"). */
const uint8_t *pkt_udp_mac(const struct pkt_udp *u);
const char *pkt_udp_name(const struct pkt_udp *u);

/* Attach to AF_PACKET socket fd the filter that lets in only unfragmented
 * IPv4 UDP datagrams to the port. 0 or -EIO. */
int pkt_udp_filter(struct pkt_udp *u, int fd);

/* The rings' callbacks (packet_ring.h); arg is the pkt_udp. */
void pkt_udp_hdr(void *arg, uint8_t *room, uint32_t len);
unsigned pkt_udp_split(void *arg, uint8_t *f, uint32_t len, uint8_t **seg, uint32_t *seg_len,
		       unsigned max);

/* How tx_burst sends bufs[0..n) from i on: PKT_UDP_RING for the next *k
 * frames through the TX ring, PKT_UDP_SOCK for the next *k through the
 * socket (pkt_udp_send), PKT_UDP_DROP for the next one (never sendable,
 * counted). */
enum pkt_udp_way { PKT_UDP_RING, PKT_UDP_SOCK, PKT_UDP_DROP };
enum pkt_udp_way pkt_udp_route(struct pkt_udp *u, struct pp_buf **bufs, unsigned n, uint32_t cap,
			       unsigned *k);
/* Send bufs[0..k) through the socket: how many the caller may free (0:
 * the socket is full). */
unsigned pkt_udp_send(struct pkt_udp *u, struct pp_buf **bufs, unsigned k);

/* Adds what the port's socket side sent and dropped to st. */
void pkt_udp_stats(const struct pkt_udp *u, struct pp_port_stats *st);

#endif

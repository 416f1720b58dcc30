/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame=udp on the ports that write whole Ethernet frames themselves:
 * `packet:IFACE,frame=udp` and `dpdk:... frame=udp,...`. They carry the
 * udp: port's wire format (udp_frame.h), so that small frames keep the raw
 * port's speed while routers forward everything. See driver/README.md,
 * "The packet: port in UDP" and "The dpdk: port in UDP".
 *
 * The port's identity is an IPv4 address of a kernel interface and a UDP
 * port (its MAC encodes them, as a udp: port's does), held by a UDP socket
 * bound to them. That socket sends group frames (to the peer list), frames
 * to peers whose next hop is not known yet (the kernel resolves it) and,
 * with GSO, runs of frames to one peer as one message (a veth, or a NIC
 * with USO, carries 64 KiB a crossing); it receives nothing (a filter drops
 * all, and it keeps the kernel from answering our datagrams with ICMP). A
 * single frame to a peer whose next hop is known goes out through the raw
 * port behind Ethernet, IPv4 and UDP headers (pp_udp_raw_outer). The next
 * hop of a peer (its MAC, or a router's) is learnt from the outer source
 * MAC of frames that passed the receive checks from it.
 */
#ifndef PP_UDP_RAW_H
#define PP_UDP_RAW_H

#include <stdint.h>

#include "pp_port.h"

struct pp_udp_raw;

/*
 * Parse the options after "IFACE," (packet:) or of a dpdk: port's
 * "frame=..." word: frame=eth|udp, addr=, port=, peers=, peerfile=, gso=,
 * link=. *u is NULL for frame=eth. For frame=udp bind the port (addr=, an
 * address of IFACE, else IFACE's first IPv4 address; port 0 or none: a
 * free one of the range). who names the port kind in messages ("packet"),
 * if_mac is IFACE's MAC; no_gso for a port that cannot take a GSO message
 * whole (dpdk:): its runs stay off the socket, and its socket does not ask
 * the kernel for coalesced datagrams (UDP_GRO); its peers must send no GSO
 * either (gso=0). Says what is wrong in words.
 * Errors: -EINVAL, -ENODEV (IFACE has no IPv4 address), -EADDRINUSE, -ENOMEM.
 */
int pp_udp_raw_open(struct pp_udp_raw **u, const char *who, const char *iface, const char *opts,
		    const uint8_t if_mac[6], int no_gso);
void pp_udp_raw_close(struct pp_udp_raw *u);

/* The port's MAC (its address, encoded) and name ("packet:IFACE,udp:A:P"). */
const uint8_t *pp_udp_raw_mac(const struct pp_udp_raw *u);
const char *pp_udp_raw_name(const struct pp_udp_raw *u);

/* Attach to AF_PACKET socket fd the filter that lets in only unfragmented
 * IPv4 UDP datagrams to the port. 0 or -EIO. */
int pp_udp_raw_filter(struct pp_udp_raw *u, int fd);

/* pp_udp_outer_for the port's address: what pp_udp_raw_filter lets in, to
 * the port. For a port that sees the interface's other traffic too (dpdk:):
 * that is left alone, uncounted. */
int pp_udp_raw_ours(const struct pp_udp_raw *u, const uint8_t *f, uint32_t len);

/* Write in hdr[0..PP_UDP_OUTER_HLEN) the outer headers of frame f (len
 * bytes) to its peer: f's destination MAC decoded (pp_udp_raw_route saw it
 * decode), the next hop learnt for it. */
void pp_udp_raw_outer(const struct pp_udp_raw *u, uint8_t *hdr, const uint8_t *f, uint32_t len);

/* Check raw frame f of len bytes, outer headers and the frames inside:
 * one datagram, or with gso_size a GSO message of datagrams of that size
 * (the last maybe shorter). Those that pass go to seg[]/seg_len[] (at most
 * max), the next hop of their sender is learnt; the rest are counted.
 * Returns how many passed. */
unsigned pp_udp_raw_split(struct pp_udp_raw *u, uint8_t *f, uint32_t len, uint32_t gso_size,
			  uint8_t **seg, uint32_t *seg_len, unsigned max);

/* How tx_burst sends bufs[0..n) from i on: PP_UDP_RAW_OUT for the next *k
 * frames through the raw port (cap: the longest frame it takes), PP_UDP_RAW_SOCK for the next *k
 * through the socket (pp_udp_raw_send), PP_UDP_RAW_DROP for the next one (never sendable, counted).
 */
enum pp_udp_raw_way { PP_UDP_RAW_OUT, PP_UDP_RAW_SOCK, PP_UDP_RAW_DROP };
enum pp_udp_raw_way pp_udp_raw_route(struct pp_udp_raw *u, struct pp_buf **bufs, unsigned n,
				     uint32_t cap, unsigned *k);
/* Send bufs[0..k) through the socket: how many the caller may free (0:
 * the socket is full). */
unsigned pp_udp_raw_send(struct pp_udp_raw *u, struct pp_buf **bufs, unsigned k);

/* Adds what the port's socket side sent and dropped to st. */
void pp_udp_raw_stats(const struct pp_udp_raw *u, struct pp_port_stats *st);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The socket side both UDP framings share (udp_frame.h): binding a port of
 * the MAC's range, and sending frames to the addresses their MACs encode,
 * runs of them as one UDP_SEGMENT (GSO) message. The udp: port sends all
 * its frames so; `packet:IFACE,frame=udp` sends so its runs, its
 * broadcasts and its frames to peers whose next hop it has not learnt yet.
 */
#ifndef PP_UDP_SOCK_H
#define PP_UDP_SOCK_H

#include <netinet/in.h>
#include <stdint.h>

#include "pp_port.h"
#include "udp_addr.h"

#define PP_UDP_BURST	 64    /* datagrams per recvmmsg / sendmmsg */
#define PP_UDP_GSO_SEGS	 64    /* datagrams per GSO send (the kernel's UDP_MAX_SEGMENTS) */
#define PP_UDP_GSO_BYTES 65507 /* bytes per GSO send: one IPv4 datagram's payload */

/* A sending socket and what it needs. */
struct pp_udp_tx {
	int fd;			   /* nonblocking UDP socket */
	int gso;		   /* 1: runs go as one UDP_SEGMENT message */
	struct sockaddr_in *peers; /* where group frames go (owned) */
	unsigned nb_peers;
	const char *name;	  /* the port, for messages */
	struct pp_port_stats *st; /* tx_frames, tx_bytes, tx_failed counted here */
};

/* Set p up to send on fd for the port at *self: its peer list is d's
 * (taken: d->peers becomes NULL) without the port itself; name and st as in
 * struct pp_udp_tx; GSO off until the caller turns it on. Free the list with
 * pp_udp_tx_fini. */
void pp_udp_tx_init(struct pp_udp_tx *p, int fd, struct pp_udp_dev *d,
		    const struct sockaddr_in *self, const char *name, struct pp_port_stats *st);
void pp_udp_tx_fini(struct pp_udp_tx *p);

/* Bind fd to *self; port 0 means a free port of the MAC's range, tried from
 * a random one on (*self gets it). Says what is wrong, naming dev.
 * Errors: -EADDRINUSE, -ENODEV (no such address here), -errno of bind. */
int pp_udp_bind(int fd, struct sockaddr_in *self, const char *dev);

/* A group frame (HELLO, BYE) to every peer. Cold path. 1 taken (a peer it
 * did not reach lost it, as any datagram may be lost: discovery repeats),
 * 0 the socket is full before the first peer: the caller keeps it. */
int pp_udp_tx_group(struct pp_udp_tx *p, const struct pp_buf *b);

/* Unicast frames bufs[0..n) (n <= PP_UDP_BURST, each MAC an address) with
 * one sendmmsg. Returns how many the caller may free: sent, or the first
 * dropped as never sendable (counted in tx_failed); 0 when the socket is
 * full. */
unsigned pp_udp_tx_run(struct pp_udp_tx *p, struct pp_buf **bufs, unsigned n);

#endif

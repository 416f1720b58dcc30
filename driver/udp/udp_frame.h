/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames in UDP/IPv4, as both UDP framings carry them: the udp: port's
 * datagrams and `packet:IFACE,frame=udp`'s raw frames. A datagram's payload
 * is one whole Ethernet frame as the engine built it (the pp header
 * unchanged inside), its MACs being the udp_addr.h encodings of the two
 * ports' addresses. So the two port kinds speak the same wire format and
 * may be peers; a raw frame just adds the headers a socket would:
 *
 *   Ethernet (14)  to the next hop's MAC, EtherType 0x0800
 *   IPv4 (20)      no options, DF set, ID 0 (RFC 6864), TTL 64, UDP
 *   UDP (8)        checksum 0 (none: the pp frame has its own CRC)
 *   the frame      Ethernet header with the ports' encoded MACs, pp header...
 *
 * On one L2 segment a raw frame may carry the same headers under the
 * private EtherType 0x88B6 (IEEE 802's second local experimental one)
 * instead of IPv4's: the receiving kernel's IPv4 stack, and a Linux
 * bridge's netfilter hooks, never see it; the receive checks are the same.
 *
 * Pure functions of bytes, no I/O: the receive checks are fuzzed
 * (tests/fuzz/fuzz_udp_frame.c).
 */
#ifndef PP_UDP_FRAME_H
#define PP_UDP_FRAME_H

#include <netinet/in.h>
#include <stdint.h>

#define PP_UDP_OUTER_HLEN 42	 /* Ethernet, IPv4 and UDP headers of a raw frame */
#define PP_UDP_ETH_LINK	  0x88B6 /* the same headers, for one L2 segment only */
#define PP_UDP_IP_TTL	  64

/* Why a datagram or raw frame was refused (0: it passes). */
enum pp_udp_drop {
	PP_UDP_OK = 0,
	PP_UDP_MALFORMED, /* not IPv4/UDP to us, lengths or checksum wrong, a fragment,
			     or not a whole frame of ours inside */
	PP_UDP_SPOOFED,	  /* the frame's source MAC is not the address it came from */
	PP_UDP_MISADDR,	  /* to another port's MAC */
};

/* The outer headers of a raw frame in hdr[0..PP_UDP_OUTER_HLEN): from MAC
 * `mac` and address `src` to next hop `hop` and address `dst`, carrying a
 * frame of len bytes (len + 28 <= 65535); EtherType IPv4, or with link
 * PP_UDP_ETH_LINK. */
void pp_udp_outer_write(uint8_t *hdr, const uint8_t mac[6], const uint8_t hop[6],
			const struct sockaddr_in *src, const struct sockaddr_in *dst, uint32_t len,
			int link);

/* What pp_udp_outer_parse found in a raw frame. */
struct pp_udp_outer {
	struct sockaddr_in from; /* the sender's address and UDP port */
	uint32_t off;		 /* where the UDP payload starts */
	uint32_t len;		 /* its bytes */
};

/* Check the outer headers of raw frame f of len bytes: EtherType IPv4 or
 * PP_UDP_ETH_LINK, IPv4 (version, a
 * header of 20 to 60 bytes, its checksum, total length within the frame,
 * not a fragment), UDP to port `port` (network order) with a length that
 * matches IPv4's. PP_UDP_OK and *o filled, or PP_UDP_MALFORMED. The
 * Ethernet source is the next hop towards the sender (f + 6). */
enum pp_udp_drop pp_udp_outer_parse(const uint8_t *f, uint32_t len, uint16_t port,
				    struct pp_udp_outer *o);

/* 1 when raw frame f of len bytes is an unfragmented IPv4 UDP datagram
 * (EtherType IPv4 or PP_UDP_ETH_LINK) to address and UDP port `self`: what
 * a port that sees its interface's other traffic too takes to
 * pp_udp_outer_parse. A cheap look, no checksum: 0 says only "not ours". */
int pp_udp_outer_for(const uint8_t *f, uint32_t len, const struct sockaddr_in *self);

/* Check frame f of len bytes that came in a datagram from `from`, for the
 * port whose MAC is `self`: an Ethernet header and EtherType 0x88B5
 * (MALFORMED), a source MAC that encodes `from` (SPOOFED), to `self` or a
 * group MAC (MISADDR). */
enum pp_udp_drop pp_udp_inner_check(const uint8_t *f, uint32_t len, const struct sockaddr_in *from,
				    const uint8_t self[6]);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The udp: backend's addresses: its MAC encoding and its device string.
 *
 * A udp port's "MAC" is its IPv4 address and UDP port, packed into a
 * locally administered unicast MAC so that the engine and the runtime,
 * which know peers by MAC, need nothing new. The UDP port must lie in
 * 49152..65535 (IANA's dynamic range: 2^14 ports), leaving the two bits the
 * MAC's first byte reserves:
 *
 *   byte 0   (p >> 8) << 2 | 0x02    p = port - 49152 (14 bits); bit 1 set
 *                                    (locally administered), bit 0 clear
 *                                    (unicast)
 *   byte 1   p & 0xff
 *   2..5     the IPv4 address, network order (readable: ..:7f:00:00:01)
 *
 * So 127.0.0.1:49152 is 02:00:7f:00:00:01 and 10.1.2.3:50000 is
 * 0e:50:0a:01:02:03. Every locally administered unicast MAC decodes to
 * some address; a universal or group MAC decodes to none.
 */
#ifndef PP_UDP_ADDR_H
#define PP_UDP_ADDR_H

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#define PP_UDP_PORT_MIN	 49152u /* the lowest UDP port a MAC can hold */
#define PP_UDP_MAX_PEERS 4096	/* entries of a peer list */
#define PP_UDP_HDRS	 28	/* IPv4 (20) and UDP (8) headers */
#define PP_UDP_MTU_DEF	 9000	/* default link MTU cap (loopback has 64 KiB) */
#define PP_UDP_MTU_MIN	 576
#define PP_UDP_MTU_MAX	 65535 /* an IPv4 datagram's limit */

/* addr (port in PP_UDP_PORT_MIN..65535) as a MAC. */
static inline void pp_udp_mac_encode(const struct sockaddr_in *addr, uint8_t mac[6])
{
	unsigned p = (unsigned)ntohs(addr->sin_port) - PP_UDP_PORT_MIN;
	mac[0] = (uint8_t)(((p >> 8) & 0x3f) << 2 | 0x02);
	mac[1] = (uint8_t)(p & 0xff);
	memcpy(mac + 2, &addr->sin_addr.s_addr, 4);
}

/* The address a MAC stands for: 0, or -EINVAL for a universal or group MAC. */
static inline int pp_udp_mac_decode(const uint8_t mac[6], struct sockaddr_in *addr)
{
	if ((mac[0] & 0x03) != 0x02)
		return -EINVAL;
	unsigned p = (unsigned)(mac[0] >> 2) << 8 | mac[1];
	memset(addr, 0, sizeof(*addr)); /* sin_zero too: the kernel reads it */
	addr->sin_family = AF_INET;
	addr->sin_port = htons((uint16_t)(PP_UDP_PORT_MIN + p));
	memcpy(&addr->sin_addr.s_addr, mac + 2, 4);
	return 0;
}

/* A parsed device string
 * "ADDR:PORT[,peers=LIST][,peerfile=PATH][,mtu=N][,gso=0|1][,gro=0|1]". */
struct pp_udp_dev {
	struct sockaddr_in self;   /* port 0: pick a free one in the range */
	struct sockaddr_in *peers; /* where broadcasts go (self may be among them) */
	unsigned nb_peers;
	unsigned mtu; /* link MTU (IP datagram bytes); 0: the interface's */
	int no_gso;   /* gso=0: one datagram per send */
	int no_gro;   /* gro=0: no coalesced datagrams on receive */
};

/*
 * Parse dev (after "udp:"). The port's own ADDR may be an interface's
 * name, for its first IPv4 address (udp:eth0:0). LIST is ITEM[+ITEM...],
 * ITEM ADDR:PORT or
 * ADDR:PORT-PORT (a range); PATH names a file of such items, one or more a
 * line, '#' comments. Every error is logged in words.
 * Errors: -EINVAL malformed, -ENOMEM. On success free with pp_udp_dev_free.
 */
int pp_udp_dev_parse(const char *dev, struct pp_udp_dev *out);
void pp_udp_dev_free(struct pp_udp_dev *d);

#endif

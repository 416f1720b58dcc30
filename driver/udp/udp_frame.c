/* SPDX-License-Identifier: BSD-3-Clause */
/* Frames in UDP/IPv4: see udp_frame.h. */
#include "udp_frame.h"

#include <arpa/inet.h>
#include <string.h>

#include "pp_bytes.h"
#include "pp_eth.h"
#include "udp_addr.h"

#define ETH_TYPE_IPV4 0x0800
#define IP_DF	      0x4000
#define IP_FRAG_MASK  0x3fff /* MF and the fragment offset */

/* The IPv4 header checksum of h[0..n): 0 over a header whose checksum
 * field is right. */
static uint16_t ip_sum(const uint8_t *h, unsigned n)
{
	uint32_t s = 0;
	for (unsigned i = 0; i < n; i += 2)
		s += pp_get_be16(h + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

void pp_udp_outer_write(uint8_t *hdr, const uint8_t mac[6], const uint8_t hop[6],
			const struct sockaddr_in *src, const struct sockaddr_in *dst, uint32_t len,
			int link)
{
	pp_eth_set_dst(hdr, hop);
	pp_eth_set_src(hdr, mac);
	pp_eth_set_type(hdr, link ? PP_UDP_ETH_LINK : ETH_TYPE_IPV4);
	uint8_t *ip = hdr + PP_ETH_HLEN;
	ip[0] = 0x45; /* version 4, 5 words */
	ip[1] = 0;
	pp_put_be16(ip + 2, (uint16_t)(len + PP_UDP_HDRS));
	pp_put_be16(ip + 4, 0);
	pp_put_be16(ip + 6, IP_DF);
	ip[8] = PP_UDP_IP_TTL;
	ip[9] = IPPROTO_UDP;
	pp_put_be16(ip + 10, 0);
	memcpy(ip + 12, &src->sin_addr.s_addr, 4);
	memcpy(ip + 16, &dst->sin_addr.s_addr, 4);
	pp_put_be16(ip + 10, ip_sum(ip, 20));
	uint8_t *u = ip + 20;
	memcpy(u, &src->sin_port, 2);
	memcpy(u + 2, &dst->sin_port, 2);
	pp_put_be16(u + 4, (uint16_t)(len + 8));
	pp_put_be16(u + 6, 0);
}

enum pp_udp_drop pp_udp_outer_parse(const uint8_t *f, uint32_t len, uint16_t port,
				    struct pp_udp_outer *o)
{
	if (len < PP_UDP_OUTER_HLEN ||
	    (pp_eth_type(f) != ETH_TYPE_IPV4 && pp_eth_type(f) != PP_UDP_ETH_LINK))
		return PP_UDP_MALFORMED;
	const uint8_t *ip = f + PP_ETH_HLEN;
	unsigned ihl = (ip[0] & 0x0fu) * 4u;
	if ((ip[0] >> 4) != 4 || ihl < 20 || PP_ETH_HLEN + ihl + 8 > len)
		return PP_UDP_MALFORMED;
	uint32_t tot = pp_get_be16(ip + 2);
	if (tot < ihl + 8 || tot > len - PP_ETH_HLEN || (pp_get_be16(ip + 6) & IP_FRAG_MASK) ||
	    ip[9] != IPPROTO_UDP || ip_sum(ip, ihl) != 0)
		return PP_UDP_MALFORMED;
	const uint8_t *u = ip + ihl;
	if (memcmp(u + 2, &port, 2) != 0 || pp_get_be16(u + 4) != tot - ihl)
		return PP_UDP_MALFORMED;
	memset(&o->from, 0, sizeof(o->from));
	o->from.sin_family = AF_INET;
	memcpy(&o->from.sin_addr.s_addr, ip + 12, 4);
	memcpy(&o->from.sin_port, u, 2);
	o->off = PP_ETH_HLEN + ihl + 8;
	o->len = tot - ihl - 8;
	return PP_UDP_OK;
}

int pp_udp_outer_for(const uint8_t *f, uint32_t len, const struct sockaddr_in *self)
{
	if (len < PP_UDP_OUTER_HLEN ||
	    (pp_eth_type(f) != ETH_TYPE_IPV4 && pp_eth_type(f) != PP_UDP_ETH_LINK))
		return 0;
	const uint8_t *ip = f + PP_ETH_HLEN;
	unsigned ihl = (ip[0] & 0x0fu) * 4u;
	return ip[9] == IPPROTO_UDP && !(pp_get_be16(ip + 6) & IP_FRAG_MASK) &&
	       PP_ETH_HLEN + ihl + 8 <= len && memcmp(ip + 16, &self->sin_addr.s_addr, 4) == 0 &&
	       memcmp(ip + ihl + 2, &self->sin_port, 2) == 0;
}

enum pp_udp_drop pp_udp_inner_check(const uint8_t *f, uint32_t len, const struct sockaddr_in *from,
				    const uint8_t self[6])
{
	if (len < PP_ETH_HLEN || pp_eth_type(f) != PP_ETH_TYPE_PP)
		return PP_UDP_MALFORMED;
	if (ntohs(from->sin_port) < PP_UDP_PORT_MIN)
		return PP_UDP_SPOOFED; /* no MAC stands for that address */
	uint8_t src[6];
	pp_udp_mac_encode(from, src);
	if (memcmp(src, pp_eth_src(f), 6) != 0)
		return PP_UDP_SPOOFED;
	if (!(f[0] & 0x01) && memcmp(pp_eth_dst(f), self, 6) != 0)
		return PP_UDP_MISADDR;
	return PP_UDP_OK;
}

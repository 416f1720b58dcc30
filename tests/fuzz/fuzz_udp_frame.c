/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the receive checks of frames in UDP/IPv4
 * (driver/udp/udp_frame.h), as `packet:IFACE,frame=udp` runs them on every
 * frame the kernel hands it, before any protocol check.
 *
 * Input: [UDP port 2] [segment size 2] [the raw frame ...]. Properties: no
 * crash and no read outside the frame (it is its own heap block: ASan sees
 * any); a frame that passes has its payload inside it, at least the
 * headers before it, and a sender that decodes to what the headers say;
 * headers written for that payload parse back to the same; each segment
 * of the payload gets one verdict of the four.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pp_eth.h"
#include "udp_addr.h"
#include "udp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4 || size > 70000)
		return 0;
	uint16_t port;
	memcpy(&port, data, 2);
	uint32_t seg = (uint32_t)(data[2] | data[3] << 8);
	size_t len = size - 4;
	uint8_t *f = malloc(len ? len : 1);
	if (!f)
		return 0;
	memcpy(f, data + 4, len);
	struct pp_udp_outer o;
	if (pp_udp_outer_parse(f, (uint32_t)len, port, &o) == PP_UDP_OK) {
		if (o.off < PP_UDP_OUTER_HLEN || (size_t)o.off + o.len > len ||
		    o.from.sin_family != AF_INET)
			abort();
		/* written again for the same payload, it parses to the same */
		uint8_t *g = malloc((size_t)PP_UDP_OUTER_HLEN + o.len);
		if (!g)
			abort();
		struct sockaddr_in to = o.from;
		to.sin_port = port;
		memcpy(g + PP_UDP_OUTER_HLEN, f + o.off, o.len);
		pp_udp_outer_write(g, f + 6, f, &o.from, &to, o.len, pp_eth_type(f) != 0x0800);
		struct pp_udp_outer p;
		if (pp_udp_outer_parse(g, PP_UDP_OUTER_HLEN + o.len, port, &p) != PP_UDP_OK ||
		    p.off != PP_UDP_OUTER_HLEN || p.len != o.len ||
		    p.from.sin_addr.s_addr != o.from.sin_addr.s_addr ||
		    p.from.sin_port != o.from.sin_port)
			abort();
		free(g);
		/* the cheap look agrees: a datagram that parses, to its own
		 * destination address, is one for that port */
		struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = port};
		memcpy(&dst.sin_addr.s_addr, f + PP_ETH_HLEN + 16, 4);
		if (!pp_udp_outer_for(f, (uint32_t)len, &dst))
			abort();
		/* each segment of the payload: one verdict, reads inside it */
		uint8_t self[6] = {0x02, 0, 10, 0, 0, 1};
		if (!seg)
			seg = o.len ? o.len : 1;
		for (uint32_t off = 0; off < o.len; off += seg) {
			uint32_t l = o.len - off < seg ? o.len - off : seg;
			uint8_t *s = malloc(l ? l : 1);
			if (!s)
				abort();
			memcpy(s, f + o.off + off, l);
			enum pp_udp_drop why = pp_udp_inner_check(s, l, &o.from, self);
			if (why != PP_UDP_OK && why != PP_UDP_MALFORMED && why != PP_UDP_SPOOFED &&
			    why != PP_UDP_MISADDR)
				abort();
			free(s);
		}
	}
	free(f);
	return 0;
}

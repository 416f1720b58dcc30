/* SPDX-License-Identifier: BSD-3-Clause */
/* The Ethernet II header every frame of the project starts with: where its
 * fields lie, read and written only through these (the protocol header
 * after it is proto/wire.h's). */
#ifndef PP_ETH_H
#define PP_ETH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PP_ETH_HLEN	14     /* destination, source, EtherType */
#define PP_ETH_TYPE_PP	0x88B5 /* the project's frames (IEEE local experimental) */
#define PP_ETH_OFF_DST	0
#define PP_ETH_OFF_SRC	6
#define PP_ETH_OFF_TYPE 12

/* The sender's MAC of frame f (at least PP_ETH_HLEN bytes). */
static inline const uint8_t *pp_eth_src(const uint8_t *f)
{
	return f + PP_ETH_OFF_SRC;
}

/* The receiver's MAC of frame f. */
static inline const uint8_t *pp_eth_dst(const uint8_t *f)
{
	return f + PP_ETH_OFF_DST;
}

static inline void pp_eth_set_src(uint8_t *f, const uint8_t mac[6])
{
	memcpy(f + PP_ETH_OFF_SRC, mac, 6);
}

static inline void pp_eth_set_dst(uint8_t *f, const uint8_t mac[6])
{
	memcpy(f + PP_ETH_OFF_DST, mac, 6);
}

/* The EtherType of frame f, host order. */
static inline uint16_t pp_eth_type(const uint8_t *f)
{
	return (uint16_t)(f[PP_ETH_OFF_TYPE] << 8 | f[PP_ETH_OFF_TYPE + 1]);
}

static inline void pp_eth_set_type(uint8_t *f, uint16_t type)
{
	f[PP_ETH_OFF_TYPE] = (uint8_t)(type >> 8);
	f[PP_ETH_OFF_TYPE + 1] = (uint8_t)type;
}

/* The largest frame whose payload after the Ethernet header is mtu bytes. */
static inline size_t pp_eth_frame_max(uint32_t mtu)
{
	return (size_t)mtu + PP_ETH_HLEN;
}

#endif

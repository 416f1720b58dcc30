/* SPDX-License-Identifier: BSD-3-Clause */
/* Integers in byte buffers of a fixed order, whatever the host's: network
 * order (big-endian: frames, probes) and little-endian (the libfabric
 * provider's endpoint names). Header-only. */
#ifndef PP_BYTES_H
#define PP_BYTES_H

#include <stdint.h>

static inline void pp_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void pp_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void pp_put_be64(uint8_t *p, uint64_t v)
{
	pp_put_be32(p, (uint32_t)(v >> 32));
	pp_put_be32(p + 4, (uint32_t)v);
}

static inline uint16_t pp_get_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t pp_get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t pp_get_be64(const uint8_t *p)
{
	return ((uint64_t)pp_get_be32(p) << 32) | pp_get_be32(p + 4);
}

static inline void pp_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t pp_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif

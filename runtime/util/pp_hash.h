/* SPDX-License-Identifier: BSD-3-Clause */
/* FNV-1a over text: job keys given as names, launchers' job ids, node keys,
 * daemon tokens. Not for anything an adversary picks to collide. */
#ifndef PP_HASH_H
#define PP_HASH_H

#include <stdint.h>

#define PP_FNV32_INIT 2166136261u

/* h advanced over the bytes of s (start from PP_FNV32_INIT). */
static inline uint32_t pp_fnv1a32_add(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static inline uint64_t pp_fnv1a64(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* A small fast generator for what needs no secrecy (fault injection, flow
 * start numbers): Marsaglia's xorshift64 (13, 7, 17). The state must not be
 * 0. Header-only. */
#ifndef PP_XORSHIFT_H
#define PP_XORSHIFT_H

#include <stdint.h>

/* The next value; advances *state. */
static inline uint64_t pp_xorshift64(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

#endif

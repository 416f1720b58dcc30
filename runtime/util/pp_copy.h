/* SPDX-License-Identifier: BSD-3-Clause */
/* A copy of a few bytes without a call: a small message's bytes into a
 * ring record and out of it. memcpy of a length known only at run time is a
 * call through the PLT and glibc's dispatch, about 20 instructions before
 * the first byte moves, for 8 bytes that take two. Header-only. */
#ifndef PP_COPY_H
#define PP_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copy n bytes from src to dst (not overlapping): up to 32 bytes inline, by
 * two moves from each end that overlap in the middle; more by memcpy. */
static inline void pp_copy_short(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	if (n > 32) {
		memcpy(d, s, n);
	} else if (n >= 16) {
		uint8_t a[16], b[16];
		memcpy(a, s, 16);
		memcpy(b, s + n - 16, 16);
		memcpy(d, a, 16);
		memcpy(d + n - 16, b, 16);
	} else if (n >= 8) {
		uint64_t a, b;
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else if (n) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

#endif

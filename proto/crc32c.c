/* SPDX-License-Identifier: BSD-3-Clause */
/* CRC32C: a slice-by-8 table fallback and the SSE4.2 instruction. */
#include <string.h>

#include "crc32c.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static int table_ready;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
	table_ready = 1;
}

uint32_t pp_crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t c = ~crc;
	if (!table_ready)
		table_init();
	while (n >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, b, 4);
		memcpy(&hi, b + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= c;
		c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		    table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		    table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		b += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ table[0][(c ^ *b++) & 0xff];
	return ~c;
}

#if defined(__x86_64__)
#define STRIDE 128 /* bytes per stream in the three-stream hardware loop */

/* shift[k][b]: the CRC register with byte k = b (others zero) after STRIDE
 * zero bytes. The map is linear, so four lookups shift any register. */
static uint32_t shift_tab[4][256];

static uint32_t shift_stride(uint32_t c)
{
	return shift_tab[0][c & 0xff] ^ shift_tab[1][(c >> 8) & 0xff] ^
	       shift_tab[2][(c >> 16) & 0xff] ^ shift_tab[3][c >> 24];
}

static void shift_init(void)
{
	static const uint8_t zeros[STRIDE];
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t reg = b << (8 * k);
			/* The raw register update is sw's with the inversions undone. */
			shift_tab[k][b] = ~pp_crc32c_sw(~reg, zeros, STRIDE);
		}
}

/* Three independent streams hide the crc32 instruction's latency; the
 * registers of the second and third are folded in with shift_stride(). */
__attribute__((target("sse4.2"))) uint32_t pp_crc32c_hw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t c = ~crc;
	while (n >= 3 * STRIDE) {
		uint64_t c1 = 0, c2 = 0;
		for (size_t i = 0; i < STRIDE; i += 8) {
			uint64_t v0, v1, v2;
			memcpy(&v0, b + i, 8);
			memcpy(&v1, b + STRIDE + i, 8);
			memcpy(&v2, b + 2 * STRIDE + i, 8);
			c = __builtin_ia32_crc32di(c, v0);
			c1 = __builtin_ia32_crc32di(c1, v1);
			c2 = __builtin_ia32_crc32di(c2, v2);
		}
		c = shift_stride((uint32_t)c) ^ (uint32_t)c1;
		c = shift_stride((uint32_t)c) ^ (uint32_t)c2;
		b += 3 * STRIDE;
		n -= 3 * STRIDE;
	}
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, b, 8);
		c = __builtin_ia32_crc32di(c, v);
		b += 8;
		n -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (n--)
		c32 = __builtin_ia32_crc32qi(c32, *b++);
	return ~c32;
}

int pp_crc32c_hw_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}
#else
uint32_t pp_crc32c_hw(uint32_t crc, const void *p, size_t n)
{
	return pp_crc32c_sw(crc, p, n);
}

int pp_crc32c_hw_available(void)
{
	return 0;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static crc_fn crc_impl = pp_crc32c_sw;

/* Pick the implementation once, before main, so no thread races on it. */
__attribute__((constructor)) static void crc_select(void)
{
	table_init();
#if defined(__x86_64__)
	shift_init();
#endif
	crc_impl = pp_crc32c_hw_available() ? pp_crc32c_hw : pp_crc32c_sw;
}

uint32_t pp_crc32c(uint32_t crc, const void *p, size_t n)
{
	return crc_impl(crc, p, n);
}

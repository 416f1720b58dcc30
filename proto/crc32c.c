/* SPDX-License-Identifier: BSD-3-Clause */
/* CRC32C: a slice-by-8 table fallback, the SSE4.2 instruction, and
 * carry-less multiply folding (AVX-512 VPCLMULQDQ) for long buffers. */
#include <string.h>
#if defined(__x86_64__) && defined(PP_HAVE_FOLD)
#include <immintrin.h>
#endif

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

/* PP_HAVE_FOLD: the compiler knows the intrinsics (proto/meson.build). */
#if defined(__x86_64__) && defined(PP_HAVE_FOLD)
/*
 * Folding. With the crc32 instruction a 9000-byte frame costs about 470 ns
 * (three streams, 19 GB/s); folded 64 bytes per carry-less multiply pair it
 * costs about 160 ns where the CPU has VPCLMULQDQ on 512-bit registers.
 *
 * The CRC is linear over GF(2): a 16-byte block A followed by d bytes may be
 * replaced by A(x) * x^(8d) mod P added into the 16 bytes d further on,
 * without changing the CRC of the whole. With bytes loaded little-endian (the
 * reflected order of this CRC), a 128-bit block's low half times
 * x^(8d+31) mod P plus its high half times x^(8d-33) mod P, both as 32-bit
 * reflected values (fold_k), is that product. What is left at the end is
 * one 16-byte block and the tail, which the crc32 instruction finishes.
 */
#define FOLD_MIN 256 /* four 512-bit registers' worth; below, crc32 alone */

static uint32_t x_pow_mod(unsigned e) /* x^e mod P, reflected */
{
	uint32_t r = 1u << 31;
	while (e--)
		r = (r >> 1) ^ (POLY & (0u - (r & 1u)));
	return r;
}

/* fold_k[i]: the multipliers folding a block forward by 16 * i bytes
 * (i = 1, 2, 3, 4, and 16 for the main loop; the others stay unused). */
static uint64_t fold_k[17][2];

static void fold_init(void)
{
	static const unsigned used[] = {1, 2, 3, 4, 16};
	for (size_t j = 0; j < sizeof(used) / sizeof(used[0]); j++) {
		unsigned i = used[j];
		fold_k[i][0] = x_pow_mod(128 * i + 31);
		fold_k[i][1] = x_pow_mod(128 * i - 33);
	}
}

#define FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

FOLD_TARGET static inline __m128i k128(unsigned i)
{
	return _mm_set_epi64x((long long)fold_k[i][1], (long long)fold_k[i][0]);
}

/* Each 128-bit lane of x folded by k's distance. */
FOLD_TARGET static inline __m512i fold512(__m512i x, __m512i k)
{
	return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
				_mm512_clmulepi64_epi128(x, k, 0x11));
}

FOLD_TARGET static inline __m128i fold128(__m128i x, unsigned i)
{
	__m128i k = k128(i);
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

FOLD_TARGET uint32_t pp_crc32c_fold(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	if (n < FOLD_MIN)
		return pp_crc32c_hw(crc, p, n);
	/* Four registers, 256 bytes apart per turn; the running CRC enters as
	 * the first four bytes' XOR (it is the register the bytes meet). */
	__m512i y0 = _mm512_loadu_si512(b), y1 = _mm512_loadu_si512(b + 64),
		y2 = _mm512_loadu_si512(b + 128), y3 = _mm512_loadu_si512(b + 192);
	y0 = _mm512_xor_si512(y0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
	b += FOLD_MIN;
	n -= FOLD_MIN;
	__m512i k = _mm512_broadcast_i32x4(k128(16));
	while (n >= FOLD_MIN) {
		y0 = _mm512_xor_si512(fold512(y0, k), _mm512_loadu_si512(b));
		y1 = _mm512_xor_si512(fold512(y1, k), _mm512_loadu_si512(b + 64));
		y2 = _mm512_xor_si512(fold512(y2, k), _mm512_loadu_si512(b + 128));
		y3 = _mm512_xor_si512(fold512(y3, k), _mm512_loadu_si512(b + 192));
		b += FOLD_MIN;
		n -= FOLD_MIN;
	}
	/* Into one register (64 bytes apart), then its four lanes into one. */
	k = _mm512_broadcast_i32x4(k128(4));
	y0 = _mm512_xor_si512(fold512(y0, k), y1);
	y0 = _mm512_xor_si512(fold512(y0, k), y2);
	y0 = _mm512_xor_si512(fold512(y0, k), y3);
	for (; n >= 64; b += 64, n -= 64)
		y0 = _mm512_xor_si512(fold512(y0, k), _mm512_loadu_si512(b));
	__m128i x = _mm_xor_si128(fold128(_mm512_extracti32x4_epi32(y0, 0), 3),
				  fold128(_mm512_extracti32x4_epi32(y0, 1), 2));
	x = _mm_xor_si128(x, fold128(_mm512_extracti32x4_epi32(y0, 2), 1));
	x = _mm_xor_si128(x, _mm512_extracti32x4_epi32(y0, 3));
	/* Leave no dirty upper halves to the code that runs next, which may
	 * use legacy SSE encodings (a transition penalty on some CPUs): GCC 12
	 * emits no vzeroupper on this function's exits by itself. */
	_mm256_zeroupper();
	for (; n >= 16; b += 16, n -= 16)
		x = _mm_xor_si128(fold128(x, 1), _mm_loadu_si128((const void *)b));
	/* The block left is a message of its own from register 0. */
	uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
	c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(x, 1));
	return pp_crc32c_hw(~(uint32_t)c, b, n);
}

int pp_crc32c_fold_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
	       __builtin_cpu_supports("sse4.2");
}
#else
uint32_t pp_crc32c_fold(uint32_t crc, const void *p, size_t n)
{
	return pp_crc32c_hw_available() ? pp_crc32c_hw(crc, p, n) : pp_crc32c_sw(crc, p, n);
}

int pp_crc32c_fold_available(void)
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
#if defined(__x86_64__) && defined(PP_HAVE_FOLD)
	if (pp_crc32c_fold_available())
		fold_init();
#endif
	crc_impl = pp_crc32c_fold_available() ? pp_crc32c_fold
		   : pp_crc32c_hw_available() ? pp_crc32c_hw
					      : pp_crc32c_sw;
}

uint32_t pp_crc32c(uint32_t crc, const void *p, size_t n)
{
	return crc_impl(crc, p, n);
}

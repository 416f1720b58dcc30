/* SPDX-License-Identifier: BSD-3-Clause */
/* Keyed tags on HELLO and BYE (auth.h). */
#include "auth.h"

#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "crc32c.h"
#include "wire.h"

/* Domain label: the job key is used for nothing but these tags. */
static const char label[] = "librt-pp job key v1";

int pp_auth_key_derive(const char *secret, uint8_t key[PP_AUTH_KEY_LEN])
{
	if (!secret || !secret[0])
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, PP_AUTH_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label));
	crypto_generichash_update(&st, (const uint8_t *)secret, strlen(secret));
	crypto_generichash_final(&st, key, PP_AUTH_KEY_LEN);
	sodium_memzero(&st, sizeof(st));
	return 0;
}

/* The payload length of a frame long enough for a tag, or -1. */
static long tagged_payload(const uint8_t *frame, size_t len)
{
	if (len < PP_WIRE_MIN_FRAME + PP_AUTH_TAG_LEN)
		return -1;
	const uint8_t *p = frame + PP_ETH_HLEN + PP_WIRE_OFF_PAYLOAD_LEN;
	size_t plen = (size_t)p[0] << 8 | p[1];
	return plen >= PP_AUTH_TAG_LEN && PP_WIRE_MIN_FRAME + plen == len ? (long)plen : -1;
}

/* The tag of a frame with plen bytes of payload, the last tag bytes not
 * covered (auth.h). */
static void tag_of(const uint8_t key[PP_AUTH_KEY_LEN], const uint8_t *frame, size_t plen,
		   uint8_t tag[PP_AUTH_TAG_LEN])
{
	static const uint8_t zero4[4];
	const uint8_t *p = frame + PP_ETH_HLEN;
	crypto_generichash_state st;
	crypto_generichash_init(&st, key, PP_AUTH_KEY_LEN, PP_AUTH_TAG_LEN);
	crypto_generichash_update(&st, pp_eth_src(frame), 6);
	crypto_generichash_update(&st, p, PP_WIRE_OFF_CRC);
	crypto_generichash_update(&st, zero4, 4);
	crypto_generichash_update(&st, p + PP_WIRE_HDR_LEN, plen - PP_AUTH_TAG_LEN);
	crypto_generichash_final(&st, tag, PP_AUTH_TAG_LEN);
}

int pp_auth_sign(const uint8_t key[PP_AUTH_KEY_LEN], uint8_t *frame, size_t len)
{
	long plen = tagged_payload(frame, len);
	if (plen < 0)
		return -EINVAL;
	uint8_t *p = frame + PP_ETH_HLEN;
	tag_of(key, frame, (size_t)plen, p + PP_WIRE_HDR_LEN + plen - PP_AUTH_TAG_LEN);
	memset(p + PP_WIRE_OFF_CRC, 0, 4);
	uint32_t crc = pp_crc32c(0, p, PP_WIRE_HDR_LEN + (size_t)plen);
	p[PP_WIRE_OFF_CRC] = (uint8_t)(crc >> 24);
	p[PP_WIRE_OFF_CRC + 1] = (uint8_t)(crc >> 16);
	p[PP_WIRE_OFF_CRC + 2] = (uint8_t)(crc >> 8);
	p[PP_WIRE_OFF_CRC + 3] = (uint8_t)crc;
	return 0;
}

int pp_auth_verify(const uint8_t key[PP_AUTH_KEY_LEN], const uint8_t *frame, size_t len)
{
	long plen = tagged_payload(frame, len);
	if (plen < 0)
		return -EPROTO;
	uint8_t tag[PP_AUTH_TAG_LEN];
	tag_of(key, frame, (size_t)plen, tag);
	const uint8_t *got = frame + PP_WIRE_MIN_FRAME + plen - PP_AUTH_TAG_LEN;
	return crypto_verify_16(tag, got) == 0 ? 0 : -EACCES;
}

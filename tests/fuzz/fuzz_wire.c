/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the frame decoders (wire and local form) must reject or
 * accept any bytes without crashing, and what they accept must encode back
 * to the same frame. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The local form: accepted bytes re-encode to themselves (padding aside). */
static void local_form(const uint8_t *data, size_t size, const struct pp_wire_check *chk)
{
	struct pp_wire_hdr h;
	const uint8_t *pl;
	enum pp_drop_reason why = PP_DROP_MAX;
	if (pp_wire_decode_local(data, size, chk, &h, &pl, &why)) {
		if ((unsigned)why >= PP_DROP_MAX)
			abort();
		return;
	}
	if (pl != data + PP_WIRE_LOCAL_HDR || size != PP_WIRE_LOCAL_HDR + (size_t)h.payload_len)
		abort();
	uint8_t out[PP_WIRE_LOCAL_HDR + 65536];
	struct pp_wire_hdr g;
	const uint8_t *pl2;
	int n = pp_wire_encode_local(out, sizeof(out), &h, pl);
	if (n != (int)size || pp_wire_decode_local(out, size, chk, &g, &pl2, &why) ||
	    memcmp(&g, &h, sizeof(g)) || memcmp(pl2, pl, h.payload_len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pp_wire_check chk = {0x5eed, 1, 4, 1500, 0x101};
	struct pp_wire_hdr h;
	const uint8_t *pl;
	enum pp_drop_reason why = PP_DROP_MAX;
	struct pp_wire_peek pk;
	int peeked = pp_wire_peek(data, size, &pk) == 0;
	local_form(data, size, &chk);
	if (pp_wire_decode(data, size, &chk, &h, &pl, &why)) {
		if ((unsigned)why >= PP_DROP_MAX)
			abort();
		return 0;
	}
	if (pl != data + PP_WIRE_MIN_FRAME || size != PP_WIRE_MIN_FRAME + (size_t)h.payload_len)
		abort();
	/* What the daemon routes by is what the decoder read. */
	if (!peeked || pk.type != h.type || pk.job != h.job || pk.src_rank != h.src_rank ||
	    pk.dst_rank != h.dst_rank || pk.msg_id != h.msg_id || pk.src_inc != h.src_inc ||
	    pk.dst_inc != h.dst_inc || pk.stream != h.stream)
		abort();
	uint8_t out[PP_WIRE_MIN_FRAME + 65536];
	int n = pp_wire_encode(out, sizeof(out), data, data + 6, &h, pl);
	/* Every field is kept (xflags and data included), so re-encoding a
	 * frame that decoded gives it back byte for byte, CRC and all. */
	if (n != (int)size || memcmp(out, data, size))
		abort();
	return 0;
}

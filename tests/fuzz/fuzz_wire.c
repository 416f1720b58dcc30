/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the frame decoder must reject or accept any bytes
 * without crashing, and what it accepts must encode back to the same frame. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pp_wire_check chk = {0x5eed, 1, 4, 1500};
	struct pp_wire_hdr h;
	const uint8_t *pl;
	enum pp_drop_reason why = PP_DROP_MAX;
	if (pp_wire_decode(data, size, &chk, &h, &pl, &why)) {
		if ((unsigned)why >= PP_DROP_MAX)
			abort();
		return 0;
	}
	if (pl != data + PP_WIRE_MIN_FRAME || size != PP_WIRE_MIN_FRAME + (size_t)h.payload_len)
		abort();
	uint8_t out[PP_WIRE_MIN_FRAME + 65536];
	int n = pp_wire_encode(out, sizeof(out), data, data + 6, &h, pl);
	/* Re-encoding zeroes the reserved field and keeps everything else. */
	uint8_t ref[PP_WIRE_MIN_FRAME + 65536];
	memcpy(ref, data, size);
	ref[14 + 22] = ref[14 + 23] = 0;
	if (n != (int)size || memcmp(out, ref, 14 + 22) || memcmp(out + 36 + 2, ref + 38, 56 - 24))
		abort();
	return 0;
}

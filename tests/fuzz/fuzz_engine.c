/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the engine's receive path. The input is a sequence of
 * records [len:2][fix:1][bytes:len]; when fix is odd the record is made into
 * a well-formed frame from rank 1 or 2 (EtherType, version, job, ranks,
 * payload_len and crc32c patched) so that the fuzzer reaches the protocol
 * state machines, not only the decoder. Between frames the engine transmits,
 * runs its timers and reports completions, as a runtime would.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "engine.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fix(uint8_t *f, size_t len, uint8_t sel)
{
	f[12] = 0x88;
	f[13] = 0xB5;
	uint8_t *p = f + 14;
	p[0] = (uint8_t)(PP_WIRE_VERSION << 4 | (p[0] & 0x0f));
	uint16_t pl = (uint16_t)(len - PP_WIRE_MIN_FRAME);
	p[2] = (uint8_t)(pl >> 8);
	p[3] = (uint8_t)pl;
	p[4] = 0, p[5] = 0, p[6] = 0x5e, p[7] = 0xed;
	memset(p + 24, 0, 8);
	p[27] = (uint8_t)(1 + (sel >> 1) % 2);
	p[31] = 0;
	if (sel & 4) /* small sequence numbers and acks reach the window */
		memset(p + 12, 0, 3), memset(p + 16, 0, 3);
	/* incarnations: the sender's is 0x100 + rank, ours 0x100 (or 0: any) */
	memset(p + PP_WIRE_OFF_SRC_INC, 0, 8);
	p[PP_WIRE_OFF_SRC_INC + 2] = 1;
	p[PP_WIRE_OFF_SRC_INC + 3] = p[27];
	if (!(sel & 8))
		p[PP_WIRE_OFF_DST_INC + 2] = 1;
	memset(p + PP_WIRE_OFF_CRC, 0, 4);
	uint32_t c = pp_crc32c(0, p, len - 14);
	uint8_t *q = p + PP_WIRE_OFF_CRC;
	q[0] = (uint8_t)(c >> 24), q[1] = (uint8_t)(c >> 16), q[2] = (uint8_t)(c >> 8),
	q[3] = (uint8_t)c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.rank = 0;
	c.nranks = 3;
	c.job = 0x5eed;
	c.inc = 0x100;
	c.window = 8;
	c.max_msgs = 8;
	c.pushbuf_bytes = 8192;
	c.rto_tries = 3;
	c.mode = (enum pp_proto_mode)(size % 3);
	struct pp_proto *e;
	if (pp_proto_create(&e, &c))
		abort();
	static const uint8_t m1[6] = {2, 0, 0, 0, 0, 1}, m2[6] = {2, 0, 0, 0, 0, 2};
	pp_proto_peer_add(e, 1, m1, 0x101);
	pp_proto_peer_add(e, 2, m2, 0x102);
	static uint8_t rb[3][4096], sb[5000], out[1600], f[1600];
	pp_proto_recv(e, PP_PROTO_ANY, 0, PP_PROTO_IGNORE_ALL, rb[0], sizeof(rb[0]), 1);
	pp_proto_recv(e, 1, 3, 0, rb[1], 100, 2);
	pp_proto_recv(e, 2, 0, PP_PROTO_IGNORE_ALL, rb[2], sizeof(rb[2]), 3);
	pp_proto_send(e, 1, 5, sb, sizeof(sb), 4);
	pp_proto_send(e, 2, 6, sb, 10, 5);
	uint64_t now = 1000;
	while (size >= 3) {
		size_t len = (size_t)(data[0] << 8 | data[1]) % sizeof(f);
		uint8_t sel = data[2];
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		memcpy(f, data, len);
		data += len;
		size -= len;
		if ((sel & 1) && len >= PP_WIRE_MIN_FRAME && len <= 1514)
			fix(f, len, sel);
		pp_proto_input(e, f, len, now);
		now += (uint64_t)(sel >> 4) * 50000;
		for (int i = 0; i < 16 && pp_proto_output(e, out, sizeof(out), now) > 0; i++)
			;
		if (pp_proto_expiry(e) <= now)
			pp_proto_handle_expiry(e, now);
		struct pp_proto_cpl cp;
		while (pp_proto_poll(e, &cp))
			if (!cp.is_send && cp.cookie == 1)
				pp_proto_recv(e, PP_PROTO_ANY, 0, PP_PROTO_IGNORE_ALL, rb[0],
					      sizeof(rb[0]), 1);
	}
	pp_proto_destroy(e);
	return 0;
}

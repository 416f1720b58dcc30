/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zero-copy transmit: a frame payload of PP_ZC_MIN bytes or more leaves from
 * the user's buffer (pp_port_attach_ext) instead of being copied into the
 * port buffer behind its headers. Ports that must map memory for the NIC get
 * the whole send buffer registered once, on its first such frame: the engine
 * never gives the FIRST frame by reference, so that work happens after the
 * first push is on the wire (address-translation masking, section 4.3 of the
 * Push-Pull paper). Registrations stay cached, up to PP_ZC_REGS buffers, the
 * oldest dropped first; benchmarks and iterative codes reuse their buffers.
 *
 * Off by default (zerocopy=on): DPDK's af_packet copies every segment into
 * its ring anyway, and the chained-mbuf path measured slower there (1 MiB
 * push-pull: 390-407 MB/s on, 535-538 off, same loaded host, one run each
 * way twice). It is for NICs that DMA straight from memory.
 */
#include <errno.h>
#include <string.h>

#include "ctx.h"
#include "pp_log.h"

/* 1 when [a, a+n) lies inside registration r. */
static int covers(const struct pp_zc_reg *r, const uint8_t *a, uint64_t n)
{
	return r->len && a >= r->addr && a + n <= r->addr + r->len;
}

/* Make sure the port may read the send buffer [msg, msg+len).
 * Returns 0, or a negative errno: the frame is then copied instead. */
static int ensure_registered(pp_ctx *ctx, const uint8_t *msg, uint64_t len)
{
	struct pp_zc *z = &ctx->zc;
	if (z->noreg)
		return 0;
	for (unsigned i = 0; i < PP_ZC_REGS; i++)
		if (covers(&z->regs[i], msg, len))
			return 0;
	struct pp_zc_reg *victim = &z->regs[z->next];
	if (victim->len)
		pp_port_mem_unregister(ctx->port, (void *)(uintptr_t)victim->addr, victim->len);
	victim->len = 0;
	int rc = pp_port_mem_register(ctx->port, (void *)(uintptr_t)msg, len);
	if (rc == -ENOTSUP) {
		z->noreg = 1; /* nothing to map on this port */
		return 0;
	}
	if (rc)
		return rc; /* e.g. -EEXIST: overlaps a region we no longer track */
	victim->addr = msg;
	victim->len = len;
	z->next = (z->next + 1) % PP_ZC_REGS;
	return 0;
}

int pp_zc_output(pp_ctx *ctx, struct pp_buf *b, uint64_t now)
{
	struct pp_proto_ref ref;
	int len = pp_proto_output_ref(ctx->eng, b->data, b->cap, now, PP_ZC_MIN, &ref);
	if (len <= 0)
		return len;
	b->len = (uint32_t)len;
	if (!ref.len)
		return len;
	int rc = ensure_registered(ctx, ref.msg, ref.msg_len);
	if (!rc)
		rc = pp_port_attach_ext(ctx->port, b, (void *)(uintptr_t)ref.addr, ref.len, NULL,
					NULL);
	if (rc) {
		if (rc == -ENOTSUP) {
			pp_info("zero-copy transmit: the port cannot; copying");
			ctx->zc.off = 1;
		}
		memcpy(b->data + len, ref.addr, ref.len);
		b->len += ref.len;
	} else {
		ctx->zc.frames++;
	}
	return len + (int)ref.len;
}

void pp_zc_fini(pp_ctx *ctx)
{
	for (unsigned i = 0; i < PP_ZC_REGS; i++) {
		struct pp_zc_reg *r = &ctx->zc.regs[i];
		if (r->len)
			pp_port_mem_unregister(ctx->port, (void *)(uintptr_t)r->addr, r->len);
		r->len = 0;
	}
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sends to the own rank (embed.h): the twin, a second engine of rank `size`
 * that shares the rank's MAC and is an intranode peer of the rank's engine
 * both ways, so their frames travel in the local form through one buffer
 * here instead of a ring. Only the twin sends; only the rank's engine
 * receives, so its matching order is the one order of every receive. The
 * twin has no hooks: the rest of a long message is pulled as DATA frames.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "embed.h"

#define PP_SELF_PUSHBUF (64u << 10) /* it receives no pushes: the least that works */
#define PP_SELF_ROUNDS	256	    /* frames moved per pump at most */

int pp_embed_self_open(struct pp_embed *m)
{
	pp_ctx *ctx = m->ctx;
	struct pp_proto_conf pc;
	pp_proto_conf_default(&pc);
	pc.rank = (uint32_t)ctx->size;
	pc.nranks = (uint32_t)ctx->size + 1;
	pc.job = ctx->cfg.job;
	pc.inc = pp_membership_incarnation();
	memcpy(pc.mac, ctx->port_info.mac, 6);
	pc.mode = (enum pp_proto_mode)ctx->cfg.mode;
	pc.btp1 = ctx->cfg.btp1;
	pc.btp2 = ctx->cfg.btp2;
	pc.mtu = ctx->port_info.mtu;
	/* As many sends as the rank's engine takes: a send to oneself waits
	 * there until its receive is posted (a long one), and the caller is
	 * promised that many (the provider's tx size). With fewer, an MPI
	 * that posts its sends to itself before the receives, and retries a
	 * full queue without end, never gets to post them. */
	pc.max_msgs = PP_PROTO_JOB_MAX_MSGS;
	pc.pushbuf_bytes = PP_SELF_PUSHBUF;
	pc.local_whole = 64u << 10;
	int rc = pp_proto_create(&m->twin, &pc);
	if (rc)
		return rc;
	m->self_cap = ctx->port_info.mtu + 64u;
	m->self_frame = malloc(m->self_cap);
	if (!m->self_frame)
		return -ENOMEM;
	/* Each is the other's intranode peer, with the same BTP on both ends. */
	uint32_t me = (uint32_t)ctx->rank, twin = (uint32_t)ctx->size;
	if ((rc = pp_proto_peer_add(ctx->eng, twin, pc.mac, pc.inc)) ||
	    (rc = pp_proto_peer_add(m->twin, me, pc.mac, ctx->inc)) ||
	    (rc = pp_proto_peer_local(ctx->eng, twin, pc.btp1, pc.btp2)) ||
	    (rc = pp_proto_peer_local(m->twin, me, pc.btp1, pc.btp2)))
		return rc;
	return 0;
}

int pp_embed_self_send(struct pp_embed *m, uint64_t tag, const void *buf, uint64_t len,
		       int has_data, uint32_t data, uint64_t cookie)
{
	uint32_t me = (uint32_t)m->ctx->rank;
	int rc = has_data ? pp_proto_send_data(m->twin, me, tag, buf, len, data, cookie)
			  : pp_proto_send(m->twin, me, tag, buf, len, cookie);
	if (rc == 0) {
		m->self_busy = 1;
		pp_embed_self_pump(m);
	}
	return rc;
}

unsigned pp_embed_self_pump(struct pp_embed *m)
{
	pp_ctx *ctx = m->ctx;
	struct pp_proto *eng = ctx->eng, *twin = m->twin;
	uint32_t me = (uint32_t)ctx->rank, tw = (uint32_t)ctx->size;
	uint64_t now = pp_now_ns();
	unsigned n = 0;
	if (now >= pp_proto_expiry(twin))
		pp_proto_handle_expiry(twin, now);
	for (int moved = 1; moved && n < PP_SELF_ROUNDS;) {
		moved = 0;
		int len = pp_proto_output_local(twin, me, m->self_frame, m->self_cap, now);
		if (len > 0) {
			pp_proto_input_local(eng, tw, m->self_frame, (size_t)len, now);
			moved = 1;
			n++;
		}
		len = pp_proto_output_local(eng, tw, m->self_frame, m->self_cap, now);
		if (len > 0) {
			pp_proto_input_local(twin, me, m->self_frame, (size_t)len, now);
			moved = 1;
			n++;
		}
	}
	struct pp_proto_cpl c;
	while (pp_proto_poll(twin, &c)) {
		c.source = (int)me;
		m->conf.cpl(m->conf.arg, &c);
		n++;
	}
	/* Idle: nothing unacknowledged or owed either way, so the rank's
	 * engine owes the twin nothing that matters (an ack of nothing). */
	if (pp_proto_idle(twin))
		m->self_busy = 0;
	return n;
}

int pp_embed_self_idle(const struct pp_embed *m)
{
	return !m->twin || pp_proto_idle(m->twin);
}

void pp_embed_self_close(struct pp_embed *m)
{
	pp_proto_destroy(m->twin);
	m->twin = NULL;
	free(m->self_frame);
	m->self_frame = NULL;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI matching (docs/protocol.md, rule 2): the posted receives and the
 * unexpected messages, each in order (hashed queues, tagq.h); early and
 * late receivers; probe. */
#include <errno.h>
#include <string.h>

#include "engine_impl.h"

struct pp_proto_recv_rec *pp_proto_match_first(struct pp_proto *e, uint32_t src, uint64_t tag)
{
	struct pp_tagq_entry *m = pp_tagq_find_recv(&e->posted, src, tag);
	if (!m)
		return NULL;
	struct pp_proto_recv_rec *r = container_of(m, struct pp_proto_recv_rec, m);
	pp_tagq_del(&e->posted, m);
	r->state = RX_ACTIVE;
	return r;
}

int pp_proto_recv(struct pp_proto *e, int src, uint64_t tag, uint64_t ignore, void *buf,
		  uint64_t len, uint64_t cookie)
{
	if (!e || src < PP_PROTO_ANY || (src >= 0 && (uint32_t)src >= e->c.nranks) || (!buf && len))
		return -EINVAL;
	if (src >= 0 && e->peers[src].lost)
		return -ECONNRESET;
	if (pp_proto_ops_room(e))
		return -ENOMEM;
	pp_tagq_narrow(&e->unexpected, src, ignore);
	struct pp_tagq_entry *m = pp_tagq_find_msg(&e->unexpected, src, tag, ignore);
	if (m) {
		/* Late receiver: copy the pushed bytes once, then pull the rest. */
		struct pp_proto_recv_rec *r = container_of(m, struct pp_proto_recv_rec, m);
		struct pp_proto_peer *p = &e->peers[r->peer];
		e->local_due = 1; /* a PULL, the credit given back */
		pp_tagq_del(&e->unexpected, m);
		r->state = RX_ACTIVE;
		r->buf = buf;
		r->cap = len;
		r->cookie = cookie;
		r->post = e->recv_posts++;
		if (r->stage || r->evicted) {
			e->st.late_matches++;
			e->user_ops++;
			pp_proto_stage_match(e, p, r);
			return 0;
		}
		pp_proto_credit_return(p, pp_pushbuf_drain(&e->pb, &r->cells, buf, len), 1);
		e->st.late_matches++;
		e->user_ops++;
		if (r->got == r->msg_len && !r->wants_pull)
			pp_proto_rx_finish(e, r, 0);
		else
			pp_proto_queue_pull(p, r);
		return 0;
	}
	/* Nothing that is not here already will come from a departed peer. */
	if (src >= 0 && e->peers[src].gone)
		return -ECONNRESET;
	struct pp_proto_recv_rec *r = pp_proto_rx_take(e);
	if (!r)
		return -ENOMEM;
	r->state = RX_POSTED;
	r->buf = buf;
	r->cap = len;
	r->cookie = cookie;
	r->post = e->recv_posts++;
	pp_pushbuf_chain_init(&r->cells);
	r->m.src = src;
	r->m.tag = tag;
	r->m.ignore = ignore;
	pp_tagq_add(&e->posted, &r->m);
	e->user_ops++;
	pp_proto_rq_post(e, r);
	return 0;
}

int pp_proto_cancel(struct pp_proto *e, uint64_t cookie)
{
	e->local_due = 1;
	for (struct pp_link *l = e->posted.all.next; l != &e->posted.all; l = l->next) {
		struct pp_proto_recv_rec *r = container_of(l, struct pp_proto_recv_rec, m.all);
		if (r->cookie != cookie)
			continue;
		/* Published to a node-mate (rule 6): unless it is writing into
		 * the buffer already, the entry is withdrawn. */
		if (r->rq_slot && e->recvq &&
		    HOOK(e, rq_withdraw, (uint32_t)r->m.src, r->rq_slot - 1) == -EBUSY)
			return -EBUSY;
		r->rq_slot = 0;
		pp_proto_complete(e, cookie, 0, r->m.src < 0 ? 0 : (uint32_t)r->m.src, r->m.tag, 0,
				  -ECANCELED)
		    ->post = r->post;
		pp_proto_rx_free(e, r);
		return 0;
	}
	return -ENOENT;
}

int pp_proto_probe(const struct pp_proto *e, int src, uint64_t tag, uint64_t ignore,
		   struct pp_proto_cpl *cpl)
{
	const struct pp_tagq_entry *m = pp_tagq_look_msg(&e->unexpected, src, tag, ignore);
	if (m) {
		const struct pp_proto_recv_rec *r = container_of(m, struct pp_proto_recv_rec, m);
		memset(cpl, 0, sizeof(*cpl));
		cpl->source = (int)r->peer;
		cpl->tag = r->tag;
		cpl->len = r->msg_len;
		cpl->data = r->data;
		cpl->has_data = r->has_data;
		return 1;
	}
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Membership: ranks find each other with HELLO frames, and leave with BYE.
 *
 * Discovery:
 * Every rank broadcasts a HELLO request (job key, rank, job size, its
 * incarnation, node name, and whether it already knows every rank; its MAC
 * is the frame's source) every PP_HELLO_INTERVAL until it knows every rank
 * and every rank has said it knows every rank; then it says HELLO once more
 * and returns. A request from a rank that does not know every rank yet is
 * answered directly, during discovery and afterwards (from pp_progress);
 * once a rank's own discovery is over it answers every request, so a rank
 * that finished first never leaves a slower one waiting even if its last
 * HELLO was lost. Answers are never answered: two ranks still looking would
 * otherwise bounce HELLOs between them as fast as the ports go. With
 * cluster=FILE the MACs come from the file ("RANK MAC [NODE]" per line, #
 * comments) and the HELLOs go to each rank's port instead of to all; they
 * still run, to learn the incarnations.
 *
 * Incarnations (wire.h): what a rank learns of a peer is bound to the
 * peer's incarnation in its HELLO. A HELLO of an earlier incarnation than
 * the one known is stale and ignored; a later one during discovery replaces
 * what was known (that rank started again); a later one once the job runs
 * means the peer this job knew is gone: it is declared lost (its operations
 * fail with -ECONNRESET) and the newcomer is not answered, so it fails its
 * discovery with a clear error instead of joining a job it was never part
 * of. A rank that is leaving neither answers nor learns from HELLOs: the
 * ranks of a job that starts after it are no peers of it. A BYE counts only
 * when it comes from the incarnation known; frames of every other type are
 * judged the same way by the engine. So ranks that finalize and init again,
 * in any order, never take an earlier job's goodbye, acks or data as their
 * own.
 *
 * Leaving (pp_finalize): once everything the rank sent is acknowledged, it
 * sends BYE to every peer, and keeps serving (acks, retransmission answers)
 * while it waits. A BYE says whether its sender already has ours ("have",
 * in msg_id). Every PP_HELLO_INTERVAL a leaving rank resends BYE to each
 * peer that has not said it has ours; a BYE that lacks ours is answered at
 * once with one that has it; a BYE that has ours is never answered, so two
 * leaving ranks do not echo BYEs for ever. A rank goes when it has every
 * live peer's BYE and each peer either said it has ours or has been sent
 * PP_BYE_TRIES of ours since it last said it lacks ours (each of them has
 * its BYE, so any one that arrives is enough): leaving too early takes ten
 * BYEs lost in a row (6e-6 at 30 % loss). Counting BYEs, not time, keeps
 * that so when a rank is not scheduled for a while (a quiet time of 100 ms
 * once let a starved rank go after one or two BYEs, all lost, and its peer
 * waited for ever). A lost final ack is repaired the same way, by the peer's
 * retransmission while we wait. A peer's BYE also means
 * it will send nothing more: receives that only it could satisfy fail with
 * -ECONNRESET instead of waiting for ever. A rank that could not drain
 * (pp_finalize's timeout) still says goodbye, once, to each live peer
 * (pp_membership_abandon), and does not wait for theirs.
 *
 * Proof (auth.h): HELLO and BYE end in a tag keyed with the job's secret.
 * In a job with a secret, membership acts only on frames whose tag holds;
 * the rest are dropped and counted (mem.unproven), whatever they say. A job
 * without one (a library under an MPI that passes none, a job started by
 * hand) sends zero tags, and membership then never lets a frame end,
 * replace or admit a peer: peers come from the launcher or the AV; the one
 * exception is HELLO discovery started by hand (rank= and size= set, no
 * launcher), where the first HELLO of a rank not yet known admits it until
 * discovery is over, as the job's only source of peers. There a BYE still
 * counts towards our own goodbye once we are leaving (it changes nothing of
 * the peer's), and nothing ends a peer but the engine's own loss timer.
 * Which of two incarnations is the later is said by a HELLO's signed start
 * time (offset), since incarnations are random.
 *
 * With the PMIx bootstrap (bootstrap.h) no HELLO is sent: the launcher's
 * fence hands every rank the others' MACs, incarnations and nodes
 * (pmix.c, through pp_membership_learn), and a rank whose fence completed
 * knows every rank and is known by every rank, which is what the HELLOs'
 * knows_all establishes. Leaving is the same BYE exchange whatever the
 * bootstrap: a fence could not stand for it, since a rank blocked in one
 * serves no retransmission and says nothing to a peer still waiting on it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "bootstrap.h"
#include "ctx.h"
#include "pp_log.h"
#include "pp_mac.h"
#include "ppd/ppd_pull.h"
#include "wire.h"

#define PP_HELLO_INTERVAL_NS 10000000u /* 10 ms */
#define PP_BYE_TRIES	     10u       /* our BYEs that make its silence mean it has ours */

static const uint8_t broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

#define HELLO_REQUEST 1 /* in a HELLO's msg_id: answer me */

/* HELLO payload, after the protocol header. */
struct hello {
	char node[PP_NODE_NAME]; /* sender's node name, NUL-terminated */
	uint8_t knows_all;	 /* 1: the sender knows every rank */
};

/* n random bytes from the kernel: 0, or -EIO. */
static int random_bytes(void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = getrandom(b, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EIO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

uint32_t pp_membership_incarnation(void)
{
	uint32_t v = 0;
	while (v == 0) /* 0 means "not known" on the wire */
		if (random_bytes(&v, sizeof(v)) != 0) {
			/* No kernel randomness (no getrandom): distinct, not secret. */
			static _Atomic uint32_t n;
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			v = (uint32_t)t.tv_nsec ^ (uint32_t)getpid() << 16 ^ ++n;
		}
	return v;
}

int pp_membership_secret_draw(char *out, size_t cap)
{
	uint8_t b[32];
	if (cap < 2 * sizeof(b) + 1)
		return -ENOSPC;
	if (random_bytes(b, sizeof(b)))
		return -EIO;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

int pp_membership_secret(pp_ctx *ctx, const char *secret)
{
	int rc = pp_auth_key_derive(secret, ctx->mem.key);
	if (rc == 0) {
		ctx->mem.keyed = 1;
		pp_membership_key_to_daemon(ctx);
	}
	return rc;
}

void pp_membership_key_to_daemon(pp_ctx *ctx)
{
	/* Not a daemon's port (or none open yet): nothing to hand. */
	if (ctx->mem.keyed && ctx->port)
		(void)ppd_port_set_key(ctx->port, ctx->mem.key);
}

static int all_known(const pp_ctx *ctx)
{
	return ctx->mem.nknown == (uint32_t)ctx->size;
}

/* HELLO or BYE: unsequenced frames the runtime sends itself. Both end in
 * the tag (auth.h), HELLO's after its record; a HELLO's offset is our
 * incarnation's start time. id: a BYE's "have", a HELLO's HELLO_REQUEST or 0. dst_inc:
 * the receiver's incarnation, 0 when not known yet. */
static void send_control(pp_ctx *ctx, uint8_t type, const uint8_t dst_mac[6], uint32_t dst_rank,
			 uint32_t dst_inc, uint32_t id)
{
	struct pp_buf *b;
	struct hello p = {.knows_all = (uint8_t)all_known(ctx)};
	uint8_t pl[sizeof(p) + PP_AUTH_TAG_LEN] = {0}; /* HELLO's record, then the tag */
	size_t rec = type == PP_WIRE_HELLO ? sizeof(p) : 0;
	uint16_t plen = (uint16_t)(rec + PP_AUTH_TAG_LEN);
	struct pp_wire_hdr h = {
	    .type = type,
	    .payload_len = plen,
	    .job = ctx->cfg.job,
	    .src_rank = (uint32_t)ctx->rank,
	    .dst_rank = dst_rank,
	    .msg_len = plen,
	    .tag = (uint64_t)ctx->size,
	    .msg_id = id,
	    .offset = type == PP_WIRE_HELLO ? ctx->mem.born : 0,
	    .src_inc = ctx->inc,
	    .dst_inc = dst_inc,
	};
	snprintf(p.node, sizeof(p.node), "%s", ctx->mem.peers[ctx->rank].node);
	memcpy(pl, &p, rec);
	if (pp_port_alloc(ctx->port, &b, 1) != 1)
		return; /* no buffer now; the next interval tries again */
	int len = pp_wire_encode(b->data, b->cap, dst_mac, ctx->port_info.mac, &h, pl);
	if (len > 0 && ctx->mem.keyed) /* else the tag stays zero: no proof */
		pp_auth_sign(ctx->mem.key, b->data, (size_t)len);
	if (len > 0) {
		b->len = (uint32_t)len;
		if (pp_port_tx_burst(ctx->port, 0, &b, 1) == 1)
			return;
	}
	pp_port_free(ctx->port, &b, 1);
}

/* Forget what discovery knew of rank r (a later incarnation replaces it). */
static void forget(pp_ctx *ctx, struct pp_peer_info *pi)
{
	pi->known = pi->knows_all = 0;
	ctx->mem.nknown--;
}

/* A HELLO or BYE that would make membership act, without proof: dropped
 * and counted. */
static void unproven(pp_ctx *ctx, const struct pp_wire_hdr *h)
{
	ctx->mem.unproven++;
	pp_debug("membership: %s of rank %u (incarnation %u) dropped: no proof of the job secret",
		 pp_wire_type_name(h->type), h->src_rank, h->src_inc);
}

/* A HELLO from rank h->src_rank at src_mac; proven: its tag holds. */
static void hello_input(pp_ctx *ctx, const struct pp_wire_hdr *h, const uint8_t *src_mac,
			const uint8_t *payload, int proven)
{
	struct pp_peer_info *pi = &ctx->mem.peers[h->src_rank];
	struct hello p;

	if (ctx->mem.leaving || h->payload_len < sizeof(p) + PP_AUTH_TAG_LEN)
		return;
	if (ctx->mem.keyed && !proven) {
		unproven(ctx, h);
		return;
	}
	memcpy(&p, payload, sizeof(p));
	p.node[sizeof(p.node) - 1] = '\0';
	if (h->tag != (uint64_t)ctx->size) {
		pp_warn("discovery: rank %u says the job has %llu ranks, we have %d; ignored",
			h->src_rank, (unsigned long long)h->tag, ctx->size);
		return;
	}
	if (ctx->cfg.cluster[0] && memcmp(pi->mac, src_mac, 6) != 0) {
		pp_warn(
		    "discovery: rank %u speaks from a port the cluster file does not list for it; "
		    "ignored",
		    h->src_rank);
		return;
	}
	if (pi->known && h->src_inc != pi->inc) {
		if (!proven) { /* without a secret nothing replaces a peer */
			unproven(ctx, h);
			return;
		}
		if (h->offset <= pi->born)
			return; /* from an earlier life of the rank (or a replay): stale */
		if (ctx->mem.joined) {
			if (!pp_proto_peer_lost(ctx->eng, h->src_rank)) {
				pp_warn("rank %u started again (incarnation %u, this job knew %u): "
					"its operations fail",
					h->src_rank, h->src_inc, pi->inc);
				pp_proto_peer_fail(ctx->eng, h->src_rank);
			}
			return;
		}
		forget(ctx, pi);
	} else if (pi->known && memcmp(pi->mac, src_mac, 6) != 0) {
		pp_warn("discovery: rank %u claimed by two ports; keeping the first", h->src_rank);
		if (!proven)
			ctx->mem.unproven++;
		return;
	}
	if (!pi->known) {
		/* Admitted by a HELLO: with proof, during discovery or after; without
		 * a secret only by hand-started discovery. Launchers (PMIx) and
		 * embedding libraries (the AV) name the peers themselves. */
		if (ctx->boot == PP_BOOT_PMIX || ctx->learn || (!proven && ctx->mem.joined)) {
			unproven(ctx, h);
			return;
		}
		memcpy(pi->mac, src_mac, 6);
		if (!ctx->cfg.cluster[0] || !pi->node[0]) /* a node the file names wins */
			snprintf(pi->node, sizeof(pi->node), "%s", p.node);
		pi->inc = h->src_inc;
		pi->born = h->offset;
		pi->known = 1;
		ctx->mem.nknown++;
	}
	pi->knows_all = p.knows_all;
	if (h->msg_id == HELLO_REQUEST && (!p.knows_all || ctx->mem.joined))
		send_control(ctx, PP_WIRE_HELLO, pi->mac, h->src_rank, pi->inc, 0);
}

void pp_membership_input(pp_ctx *ctx, const uint8_t *frame, size_t len)
{
	struct pp_wire_check chk = {ctx->cfg.job, (uint32_t)ctx->rank, (uint32_t)ctx->size,
				    ctx->port_info.mtu, ctx->inc};
	struct pp_wire_hdr h;
	const uint8_t *payload;
	enum pp_drop_reason why;

	if (pp_wire_decode(frame, len, &chk, &h, &payload, &why) != 0) {
		pp_debug("membership: frame dropped (%s)", pp_wire_drop_name(why));
		return;
	}
	int proven = ctx->mem.keyed && pp_auth_verify(ctx->mem.key, frame, len) == 0;
	if (h.type == PP_WIRE_HELLO) {
		hello_input(ctx, &h, pp_eth_src(frame), payload, proven);
		return;
	}
	struct pp_peer_info *pi = &ctx->mem.peers[h.src_rank];
	if (!pi->known || h.src_inc != pi->inc) {
		pp_debug("membership: BYE of rank %u's incarnation %u dropped (stale)", h.src_rank,
			 h.src_inc);
		return;
	}
	if (proven) {
		pp_membership_left(ctx, h.src_rank, 0);
	} else if (ctx->mem.keyed || !ctx->mem.leaving) {
		unproven(ctx, &h);
		return;
	} else if (!pi->bye) { /* no secret, and we are leaving: our goodbye only */
		pi->bye = 1;
		ctx->mem.nbye++;
	}
	if (h.msg_id) {
		pi->has_our_bye = 1;
	} else if (ctx->mem.leaving) { /* it lacks ours: answer, and count again */
		send_control(ctx, PP_WIRE_BYE, pi->mac, h.src_rank, pi->inc, 1);
		pi->byes_sent = 1;
	}
}

/* cluster=FILE: every other rank's MAC (and node, if given) from the file;
 * their incarnations come with their HELLOs. */
static int load_cluster(pp_ctx *ctx)
{
	FILE *f = fopen(ctx->cfg.cluster, "r");
	char line[256], mac[64], node[PP_NODE_NAME];
	int lineno = 0, rc = 0, listed = 1;

	if (!f) {
		pp_err("cluster file %s: cannot open", ctx->cfg.cluster);
		return -EINVAL;
	}
	uint8_t *seen = calloc((size_t)ctx->size, 1);
	if (!seen) {
		fclose(f);
		return -ENOMEM;
	}
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		int rank, n;
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		node[0] = '\0';
		n = sscanf(line, "%d %63s %63s", &rank, mac, node);
		if (n <= 0)
			continue; /* blank or comment */
		struct pp_peer_info *pi =
		    rank >= 0 && rank < ctx->size ? &ctx->mem.peers[rank] : NULL;
		uint8_t m[6];
		if (n < 2 || !pi || pp_mac_parse(mac, m)) {
			pp_err("cluster file %s:%d: want 'RANK MAC [NODE]' with RANK < %d",
			       ctx->cfg.cluster, lineno, ctx->size);
			rc = -EINVAL;
			break;
		}
		if (rank == ctx->rank)
			continue; /* our MAC is the port's */
		if (!seen[rank])
			listed++;
		seen[rank] = 1;
		memcpy(pi->mac, m, 6);
		snprintf(pi->node, sizeof(pi->node), "%s", node);
	}
	fclose(f);
	free(seen);
	if (rc == 0 && listed != ctx->size) {
		pp_err("cluster file %s: lists %d of %d ranks", ctx->cfg.cluster, listed,
		       ctx->size);
		rc = -EINVAL;
	}
	return rc;
}

/* Say HELLO: to every port at once, or with a cluster file to each rank's
 * own in turn (the same frames a broadcast would give). */
static void say_hello(pp_ctx *ctx, uint32_t request)
{
	if (!ctx->cfg.cluster[0]) {
		send_control(ctx, PP_WIRE_HELLO, broadcast, PP_WIRE_RANK_ALL, 0, request);
		return;
	}
	for (int r = 0; r < ctx->size; r++) {
		const struct pp_peer_info *pi = &ctx->mem.peers[r];
		if (r != ctx->rank)
			send_control(ctx, PP_WIRE_HELLO, pi->mac, (uint32_t)r,
				     pi->known ? pi->inc : 0, request);
	}
}

static int everyone_knows_all(const pp_ctx *ctx)
{
	for (int r = 0; r < ctx->size; r++)
		if (r != ctx->rank && !ctx->mem.peers[r].knows_all)
			return 0;
	return 1;
}

static void log_missing(const pp_ctx *ctx)
{
	char list[512];
	size_t n = 0;
	for (int r = 0; r < ctx->size && n + 12 < sizeof(list); r++)
		if (r != ctx->rank && !ctx->mem.peers[r].known)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", n ? "," : "", r);
	list[n] = '\0';
	if (n)
		pp_err("discovery: no HELLO from rank(s) %s within %u ms (job %s, dev %s)", list,
		       ctx->cfg.timeout_ms, ctx->cfg.job_name, ctx->cfg.dev);
	else
		pp_err("discovery: every rank seen, but not every rank saw us within %u ms",
		       ctx->cfg.timeout_ms);
}

int pp_membership_init(pp_ctx *ctx)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	ctx->mem.born = (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
	if (ctx->cfg.job_secret[0]) {
		int rc = pp_membership_secret(ctx, ctx->cfg.job_secret);
		if (rc)
			return rc;
	}
	ctx->mem.peers = calloc((size_t)ctx->size, sizeof(*ctx->mem.peers));
	return ctx->mem.peers ? 0 : -ENOMEM;
}

void pp_membership_fini(pp_ctx *ctx)
{
	free(ctx->mem.peers);
	ctx->mem.peers = NULL;
}

const struct pp_peer_info *pp_membership_peer(const pp_ctx *ctx, uint32_t rank)
{
	return &ctx->mem.peers[rank];
}

int pp_membership_left(pp_ctx *ctx, uint32_t rank, int crashed)
{
	struct pp_peer_info *pi = &ctx->mem.peers[rank];
	if (pi->bye)
		return 0;
	pi->bye = 1;
	ctx->mem.nbye++;
	if (crashed) { /* it will never have our goodbye; what needs it fails */
		pi->has_our_bye = 1;
		if (pp_proto_peer_busy(ctx->eng, rank)) {
			pp_proto_peer_fail(ctx->eng, rank);
			return 1;
		}
	}
	pp_proto_peer_gone(ctx->eng, rank);
	return 1;
}

int pp_membership_learn(pp_ctx *ctx, uint32_t rank, const uint8_t mac[6], uint32_t inc,
			const char *node)
{
	if (rank >= (uint32_t)ctx->size || rank == (uint32_t)ctx->rank || inc == 0)
		return -EINVAL;
	struct pp_peer_info *pi = &ctx->mem.peers[rank];
	if (pi->known && !pi->learnt)
		return -EEXIST;
	if (!pi->known)
		ctx->mem.nknown++;
	memcpy(pi->mac, mac, 6);
	pi->inc = inc;
	pi->learnt = 0;
	snprintf(pi->node, sizeof(pi->node), "%s", node);
	pi->known = pi->knows_all = 1;
	return 0;
}

/* Every rank known: the engine may reach them. */
static int add_peers(pp_ctx *ctx)
{
	for (int r = 0; r < ctx->size; r++) {
		const struct pp_peer_info *pi = &ctx->mem.peers[r];
		int rc =
		    r == ctx->rank ? 0 : pp_proto_peer_add(ctx->eng, (uint32_t)r, pi->mac, pi->inc);
		if (rc)
			return rc;
	}
	return 0;
}

void pp_membership_self(pp_ctx *ctx)
{
	struct pp_peer_info *self = &ctx->mem.peers[ctx->rank];
	memcpy(self->mac, ctx->port_info.mac, 6);
	self->inc = ctx->inc;
	if (ctx->cfg.node[0])
		snprintf(self->node, sizeof(self->node), "%.*s", PP_NODE_NAME - 1, ctx->cfg.node);
	else if (gethostname(self->node, sizeof(self->node)) != 0)
		strcpy(self->node, "?");
	self->node[sizeof(self->node) - 1] = '\0';
	self->known = self->knows_all = 1;
	ctx->mem.nknown = 1;
}

void pp_membership_embedded(pp_ctx *ctx)
{
	pp_membership_self(ctx);
	/* Without a node name the node is the host, yet ranks in other network
	 * namespaces of it (containers, the test bed's nodes) are not
	 * node-mates to their launcher: the namespace joins the name. */
	struct stat st;
	struct pp_peer_info *self = &ctx->mem.peers[ctx->rank];
	if (!ctx->cfg.node[0] && stat("/proc/self/ns/net", &st) == 0) {
		char host[PP_NODE_NAME];
		snprintf(host, sizeof(host), "%s", self->node);
		snprintf(self->node, sizeof(self->node), "%.*s.%llx", PP_NODE_NAME - 18, host,
			 (unsigned long long)st.st_ino);
	}
	ctx->mem.joined = 1;
}

int pp_membership_add(pp_ctx *ctx, uint32_t rank, const uint8_t mac[6], uint32_t inc,
		      const char *node, int learnt)
{
	struct pp_peer_info *pi = &ctx->mem.peers[rank];
	if (pi->known) {
		if (memcmp(pi->mac, mac, 6) == 0 && pi->inc == inc) {
			pi->learnt &= (uint8_t)learnt;
			if (!learnt && rank != (uint32_t)ctx->rank)
				snprintf(pi->node, sizeof(pi->node), "%s", node);
			return 0;
		}
		if (rank == (uint32_t)ctx->rank)
			return -EINVAL;
		if (learnt || !pi->learnt)
			return -EEXIST;
		pp_info("rank %d: rank %u was learnt at another address; the caller's replaces it",
			ctx->rank, rank);
	}
	int rc = pp_proto_peer_add(ctx->eng, rank, mac, inc);
	if (rc)
		return rc;
	memcpy(pi->mac, mac, 6);
	pi->inc = inc;
	pi->learnt = (uint8_t)learnt;
	snprintf(pi->node, sizeof(pi->node), "%s", node);
	if (!pi->known)
		ctx->mem.nknown++;
	pi->known = pi->knows_all = 1;
	return 0;
}

int pp_membership_join(pp_ctx *ctx)
{
	pp_membership_self(ctx);

	/* PMIx: the launcher's fence instead of HELLOs; every peer learnt, or an error. */
	if (ctx->boot == PP_BOOT_PMIX) {
		int rc = pp_pmix_exchange(ctx);
		if (rc)
			return rc;
		ctx->mem.joined = 1;
		return add_peers(ctx);
	}
	if (ctx->cfg.cluster[0]) {
		int rc = load_cluster(ctx);
		if (rc)
			return rc;
	}

	uint64_t deadline = pp_now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000u;
	ctx->mem.next_hello = 0;
	for (;;) {
		uint64_t now = pp_now_ns();
		if (all_known(ctx) && everyone_knows_all(ctx)) {
			say_hello(ctx, 0);
			ctx->mem.joined = 1;
			return add_peers(ctx);
		}
		if (now >= deadline) {
			log_missing(ctx);
			return -ETIMEDOUT;
		}
		if (now >= ctx->mem.next_hello) {
			say_hello(ctx, HELLO_REQUEST);
			ctx->mem.next_hello = now + PP_HELLO_INTERVAL_NS;
		}
		pp_ctx_progress(ctx);
	}
}

/* Every live peer said goodbye, and none needs ours any more: each said it
 * has it, or was sent PP_BYE_TRIES of ours since it last asked. */
static int may_leave(const pp_ctx *ctx)
{
	for (int r = 0; r < ctx->size; r++) {
		const struct pp_peer_info *pi = &ctx->mem.peers[r];
		if (r == ctx->rank || pp_proto_peer_lost(ctx->eng, (uint32_t)r))
			continue;
		if (!pi->bye || (!pi->has_our_bye && pi->byes_sent < PP_BYE_TRIES))
			return 0;
	}
	return 1;
}

/* One BYE to each live peer that lacks ours (all: to every known live peer,
 * each saying it has theirs). */
static void bye_round(pp_ctx *ctx, int all)
{
	for (int r = 0; r < ctx->size; r++) {
		struct pp_peer_info *pi = &ctx->mem.peers[r];
		if (r != ctx->rank && (all ? pi->known : !pi->has_our_bye) &&
		    !pp_proto_peer_lost(ctx->eng, (uint32_t)r)) {
			send_control(ctx, PP_WIRE_BYE, pi->mac, (uint32_t)r, pi->inc,
				     all ? 1 : pi->bye);
			pi->byes_sent += pi->byes_sent < UINT8_MAX;
		}
	}
}

void pp_membership_abandon(pp_ctx *ctx)
{
	ctx->mem.leaving = 1;
	bye_round(ctx, 1);
}

int pp_membership_leave(pp_ctx *ctx, uint64_t deadline)
{
	uint64_t next = 0;
	ctx->mem.leaving = 1;
	for (;;) {
		uint64_t now = pp_now_ns();
		if (may_leave(ctx))
			return 0;
		if (now > deadline) {
			pp_warn("pp_finalize: %d of %d peers did not say goodbye in time",
				ctx->size - 1 - (int)ctx->mem.nbye, ctx->size - 1);
			return -ETIMEDOUT;
		}
		if (now >= next) {
			bye_round(ctx, 0);
			next = now + PP_HELLO_INTERVAL_NS;
		}
		pp_ctx_progress(ctx);
	}
}

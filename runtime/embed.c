/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank's engine embedded in another library (embed.h). Cold paths here;
 * the sends, receives and progress only add a rank check to pp_init's. */
#include "embed.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pp_compiler.h"
#include "pp_hash.h"
#include "pp_log.h"
#include "sim/pp_sim.h"
#include "wire.h"

/* Sends done and nothing unacknowledged for this long: what is still owed
 * (a delayed ack) has gone out too. */
#define PP_EMBED_FLUSH_NS 2000000u

/* The engine's completions: the twin's rank is the own rank to the caller. */
static void engine_cpl(void *arg, const struct pp_proto_cpl *c)
{
	struct pp_embed *m = arg;
	if (c->is_send)
		m->sends--;
	if (pp_likely(c->source != m->ctx->size)) {
		m->conf.cpl(m->conf.arg, c);
		return;
	}
	struct pp_proto_cpl x = *c;
	x.source = m->ctx->rank;
	m->conf.cpl(m->conf.arg, &x);
}

/* The configuration string: the launcher's rank, size and job where no
 * PP_<KEY> says, the caller's keys, and the settings embedding needs. */
static char *config_string(const struct pp_embed_conf *c)
{
	struct pp_launcher l;
	pp_launcher_env(&l);
	const char *user = c->config ? c->config : "";
	size_t n = strlen(user) + 128;
	char *s = malloc(n);
	if (!s)
		return NULL;
	size_t k = 0;
	if (l.rank >= 0 && !getenv("PP_RANK") && !getenv("PP_SIZE"))
		k += (size_t)snprintf(s + k, n - k, "rank=%d,size=%d,", l.rank, l.size);
	if (l.job && !getenv("PP_JOB"))
		k += (size_t)snprintf(s + k, n - k, "job=%u,", l.job);
	snprintf(s + k, n - k, "%s", user);
	pp_debug("embed: launcher %s, configuration \"%s\"", l.name, s);
	return s;
}

/* The in-memory links sim_link made, and the contexts open: the links are
 * freed by pp_embed_cleanup once no context is open. */
struct made_link {
	struct made_link *next;
	struct pp_sim_link *link;
};
static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;
static struct made_link *made_links;
static unsigned open_ctxs;

/* dev=sim:NAME/I: the in-memory link of this process's driver, which an
 * embedding library's own tests cannot reach (the provider is a module with a
 * driver of its own): made here when missing, lossless, with size ports. It
 * lives until pp_embed_cleanup. */
static void sim_link(const char *cfg)
{
	struct pp_config c;
	if (pp_config_load(&c, cfg) || strncmp(c.dev, "sim:", 4) || c.size < 1 || c.size > 255)
		return;
	char name[64];
	const char *slash = strrchr(c.dev + 4, '/');
	size_t n = slash ? (size_t)(slash - (c.dev + 4)) : 0;
	if (!n || n >= sizeof(name))
		return;
	memcpy(name, c.dev + 4, n);
	name[n] = '\0';
	struct made_link *m = malloc(sizeof(*m));
	if (!m)
		return; /* the port's open fails and says so */
	struct pp_sim_conf sc = {.seed = 1};
	pthread_mutex_lock(&made_lock);
	int rc = pp_sim_link_create(&m->link, name, (unsigned)c.size, &sc);
	if (rc == 0) {
		m->next = made_links;
		made_links = m;
	}
	pthread_mutex_unlock(&made_lock);
	if (rc)
		free(m);
	if (rc && rc != -EEXIST)
		pp_warn("embed: in-memory link %s: %d", name, rc);
}

void pp_embed_cleanup(void)
{
	pthread_mutex_lock(&made_lock);
	if (open_ctxs == 0) /* else their ports are still on the links */
		while (made_links) {
			struct made_link *m = made_links;
			made_links = m->next;
			pp_sim_link_destroy(m->link);
			free(m);
		}
	pthread_mutex_unlock(&made_lock);
}

/* Passes in a row that found nothing to do before the core is offered to
 * whoever else may run on it. An MPI polls its completion queue without end
 * and, by default, binds each rank of a node to a core of its own; ranks it
 * takes for the only ones of their nodes (network namespaces, containers)
 * all get core 0. Two busy-polling ranks on one core then pass it back and
 * forth only at the end of each time slice (4 ms here): measured with Open
 * MPI's default binding, 64 KiB one way took 4 000 us and 1 MiB 20 000. A
 * yield lets the peer that has something to do run now. Alone on its core
 * it returns at once, but it is a system call, which costs 1 us where page
 * tables are isolated in a virtual machine. So a yield that gave the core to
 * no one (the thread's context switches did not move) doubles the idle
 * passes to the next, up to EMBED_IDLE_YIELD_MAX; one that gave it away
 * starts again at EMBED_IDLE_YIELD, as a rank sharing its core needs. (Timed
 * instead, ranks sharing a core handed it over quickly enough to look
 * alone: 8 B one way took 31-46 us, not 9.) */
#define EMBED_IDLE_YIELD     32
#define EMBED_IDLE_YIELD_MAX 8192

int pp_embed_open(struct pp_embed **out, const struct pp_embed_conf *c)
{
	if (!out || !c || !c->cpl)
		return -EINVAL;
	struct pp_embed *m = calloc(1, sizeof(*m));
	char *cfg = config_string(c);
	int rc = -ENOMEM;
	if (!m || !cfg)
		goto fail;
	m->conf = *c;
	m->yield_every = EMBED_IDLE_YIELD;
	sim_link(cfg);
	/* One rank more than the job: the twin's, for sends to ourselves. */
	rc = pp_ctx_open(&m->ctx, cfg, 1, 0);
	if (rc)
		goto fail;
	pp_ctx *ctx = m->ctx;
	ctx->cpl_fn = engine_cpl;
	ctx->learn = 1;
	ctx->cpl_arg = m;
	/* No discovery: membership knows only what pp_embed_peer_add tells
	 * it. */
	pp_membership_embedded(ctx);
	/* What a peer compares with its own: the node name's hash. */
	m->node = pp_fnv1a64(pp_membership_peer(ctx, (uint32_t)ctx->rank)->node);
	/* The count of node-mates: local_size's, else the launcher's, which
	 * holds for the rank it named. */
	struct pp_launcher l;
	pp_launcher_env(&l);
	m->local_size = ctx->cfg.local_size			     ? ctx->cfg.local_size
			: l.rank == ctx->rank && l.size == ctx->size ? l.local_size
								     : -1;
	if ((rc = pp_embed_self_open(m))) {
		pp_embed_self_close(m);
		pp_ctx_free(ctx);
		goto fail;
	}
	free(cfg);
	pthread_mutex_lock(&made_lock);
	open_ctxs++;
	pthread_mutex_unlock(&made_lock);
	*out = m;
	return 0;
fail:
	free(cfg);
	free(m);
	return rc;
}

static int busy_with_peers(const pp_ctx *ctx)
{
	for (int r = 0; r < ctx->size; r++)
		if (r != ctx->rank && ctx->mem.peers[r].known &&
		    pp_proto_peer_busy(ctx->eng, (uint32_t)r))
			return 1;
	return 0;
}

void pp_embed_close(struct pp_embed *m)
{
	if (!m)
		return;
	pp_ctx *ctx = m->ctx;
	uint64_t now = pp_now_ns(), deadline = now + (uint64_t)ctx->cfg.timeout_ms * 1000000u;
	uint64_t quiet = 0; /* since when only receives remain */
	while (now < deadline) {
		if (pp_proto_idle(ctx->eng) && pp_embed_self_idle(m) && !ctx->ntxq &&
		    pp_shm_link_drained(ctx))
			break;
		/* Receives posted for ever (an MPI's own) keep the engine from
		 * idling: once every send is done and acknowledged, give owed
		 * acks a moment and go. */
		if (!m->sends && pp_embed_self_idle(m) && !busy_with_peers(ctx) && !ctx->ntxq &&
		    pp_shm_link_drained(ctx)) {
			if (!quiet)
				quiet = now;
			else if (now - quiet > PP_EMBED_FLUSH_NS)
				break;
		} else {
			quiet = 0;
		}
		pp_embed_progress(m);
		now = pp_now_ns();
	}
	if (now >= deadline)
		pp_warn("embed: rank %d: sends not acknowledged in %u ms", ctx->rank,
			ctx->cfg.timeout_ms);
	pp_embed_self_close(m);
	pp_rt_stats_print(ctx); /* stats=text|json, as pp_finalize does */
	pp_ctx_free(ctx);
	free(m);
	pthread_mutex_lock(&made_lock);
	open_ctxs--;
	pthread_mutex_unlock(&made_lock);
}

void pp_embed_addr(const struct pp_embed *m, struct pp_embed_addr *a)
{
	const pp_ctx *ctx = m->ctx;
	memcpy(a->mac, ctx->port_info.mac, 6);
	a->rank = (uint32_t)ctx->rank;
	a->size = (uint32_t)ctx->size;
	a->inc = ctx->inc;
	a->job = ctx->cfg.job;
	a->node = m->node;
}

/* Node-mates through the node segment (shm_link.c), as in a job of pp_init,
 * once every one of them the launcher counts is in the address vector: its
 * set-up is collective over them, and an MPI inserts its node-mates in
 * MPI_Init (Open MPI's add_procs, MPICH's AV), where each waits for the
 * others here. Tried once; without it node-mates talk through the port. */
static void shm_start(struct pp_embed *m)
{
	pp_ctx *ctx = m->ctx;
	if (m->shm_tried || m->local_size < 2 || ctx->cfg.shm == PP_SHM_OFF)
		return;
	const char *node = pp_membership_peer(ctx, (uint32_t)ctx->rank)->node;
	int n = 0;
	for (int r = 0; r < ctx->size; r++)
		n += strncmp(pp_membership_peer(ctx, (uint32_t)r)->node, node, PP_NODE_NAME) == 0;
	if (n < m->local_size)
		return;
	m->shm_tried = 1;
	if (n > m->local_size) {
		pp_warn("embed: rank %d: %d ranks on node %s, the launcher says %d: node-mates "
			"talk through the port",
			ctx->rank, n, node, m->local_size);
		return;
	}
	int rc = pp_shm_link_init(ctx);
	if (rc)
		pp_warn("embed: rank %d: no shared memory with its node-mates (%s): they talk "
			"through the port",
			ctx->rank, strerror(-rc));
}

int pp_embed_peer_add(struct pp_embed *m, const struct pp_embed_addr *a)
{
	pp_ctx *ctx = m->ctx;
	if (a->job != ctx->cfg.job || a->size != (uint32_t)ctx->size ||
	    a->rank >= (uint32_t)ctx->size)
		return -EINVAL;
	const char *node =
	    a->node == m->node ? pp_membership_peer(ctx, (uint32_t)ctx->rank)->node : "";
	int rc = pp_membership_add(ctx, a->rank, a->mac, a->inc, node, 0);
	if (rc == 0 && node[0] && a->rank != (uint32_t)ctx->rank)
		shm_start(m);
	return rc;
}

/* An MPI inserts addresses only of ranks it sends to (Open MPI adds procs
 * on first use), yet receives from any rank of its job: a frame of this
 * job, for this rank and incarnation, from a rank not yet known makes that
 * rank a peer at the frame's source MAC. Only a frame that decodes whole
 * (pp_wire_decode: CRC, job, ranks, lengths) teaches anything, never a
 * HELLO or BYE (those are membership's, and need proof), and only about a
 * rank nobody named yet: what it teaches is marked learnt, and the
 * caller's AV insert of that rank replaces it (peer_add). Forging such a
 * frame takes our incarnation, 32 random bits that only the AV carries
 * (no HELLO says it in an embedded job). Cold: only frames the engine
 * dropped come here. */
int pp_embed_learn(pp_ctx *ctx, const uint8_t *frame, size_t len)
{
	struct pp_wire_check chk = {ctx->cfg.job, (uint32_t)ctx->rank, (uint32_t)ctx->size,
				    ctx->port_info.mtu, ctx->inc};
	struct pp_wire_hdr h;
	const uint8_t *payload;
	enum pp_drop_reason why;
	if (pp_wire_decode(frame, len, &chk, &h, &payload, &why) || h.type == PP_WIRE_HELLO ||
	    h.type == PP_WIRE_BYE || h.dst_inc != ctx->inc || ctx->mem.peers[h.src_rank].known)
		return -ENOENT;
	int rc = pp_membership_add(ctx, h.src_rank, pp_eth_src(frame), h.src_inc, "", 1);
	if (rc == 0)
		pp_info("rank %d: rank %u learnt from its first frame", ctx->rank, h.src_rank);
	return rc;
}

/* now: a send done in the call returns 1, its completion taken back
 * (pp_embed_send_now). */
static int send_post(struct pp_embed *m, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		     int has_data, uint32_t data, int copy, int now, uint64_t cookie)
{
	pp_ctx *ctx = m->ctx;
	if (dst == (uint32_t)ctx->rank)
		return copy ? -ENOTSUP
			    : pp_embed_self_send(m, tag, buf, len, has_data, data, cookie);
	/* now: a send done in the call costs no trip through the completion
	 * callbacks (Open MPI over pp: about 180 of a send's 990 instructions). */
	unsigned flags = (copy ? PP_PROTO_SEND_COPY : 0) | (has_data ? PP_PROTO_SEND_DATA : 0) |
			 (now ? PP_PROTO_SEND_NOW : 0) | pp_ctx_shm_send_flags(ctx, buf, len);
	int rc = pp_proto_sendf(ctx->eng, dst, tag, buf, len, data, flags, cookie);
	if (rc < 0)
		return rc;
	if (!rc)
		m->sends++;
	pp_ctx_push(ctx); /* the first push goes out now */
	return rc;
}

int pp_embed_send(struct pp_embed *m, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		  uint64_t cookie)
{
	return send_post(m, dst, tag, buf, len, 0, 0, 0, 0, cookie);
}

int pp_embed_send_now(struct pp_embed *m, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		      int has_data, uint32_t data, int copy, uint64_t cookie)
{
	return send_post(m, dst, tag, buf, len, has_data, data, copy, 1, cookie);
}

int pp_embed_recv(struct pp_embed *m, int src, uint64_t tag, uint64_t ignore, void *buf,
		  uint64_t len, uint64_t cookie)
{
	pp_ctx *ctx = m->ctx;
	if (src == ctx->rank)
		src = ctx->size; /* messages to ourselves come from the twin */
	return pp_proto_recv(ctx->eng, src, tag, ignore, buf, len, cookie);
}

int pp_embed_cancel(struct pp_embed *m, uint64_t cookie)
{
	return pp_proto_cancel(m->ctx->eng, cookie);
}

int pp_embed_probe(struct pp_embed *m, int src, uint64_t tag, uint64_t ignore,
		   struct pp_proto_cpl *c)
{
	pp_ctx *ctx = m->ctx;
	if (src == ctx->rank)
		src = ctx->size;
	int found = pp_proto_probe(ctx->eng, src, tag, ignore, c);
	if (found && c->source == ctx->size)
		c->source = ctx->rank;
	return found;
}

void pp_embed_wait(struct pp_embed *m, int *fd, uint64_t *expiry)
{
	/* Node-mates' frames come through rings, which wake nobody. */
	*fd = m->ctx->shm ? -1 : pp_port_wait_fd(m->ctx->port);
	pp_ctx_enter(m->ctx);
	/* Frames owed between the engine and its twin: progress now. */
	*expiry = m->self_busy ? 0 : pp_proto_expiry(m->ctx->eng);
	pp_ctx_leave(m->ctx);
}

int pp_embed_progress(struct pp_embed *m)
{
	/* The twin first: what it hands the engine completes in this pass. */
	int n = m->self_busy ? (int)pp_embed_self_pump(m) : 0;
	/* A pass after an idle one is most likely the caller's poll loop
	 * (fi_cq_read until a completion): it may reuse the clock of a recent
	 * pass, as pp_wait's passes do (progress.c: at most PP_CLOCK_EVERY - 1
	 * of them; a reading a few us old only makes a timer fire late). */
	n += m->idle ? pp_ctx_spin(m->ctx) : pp_ctx_progress(m->ctx);
	if (n) {
		m->idle = 0;
	} else if (++m->idle >= m->yield_every) {
		m->idle = 0;
		sched_yield();
		struct rusage ru;
		uint64_t sw =
		    getrusage(RUSAGE_THREAD, &ru) ? 0 : (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw);
		int alone = sw && sw == m->switches;
		m->switches = sw;
		if (!alone)
			m->yield_every = EMBED_IDLE_YIELD;
		else if (m->yield_every < EMBED_IDLE_YIELD_MAX)
			m->yield_every *= 2;
	}
	return n;
}

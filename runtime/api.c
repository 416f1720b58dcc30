/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Public entry points over an embedded engine: the rank owns its port (a
 * DPDK or libpcap port, or with daemon= its rings to the node daemon), and
 * progress happens inside pp_* calls and, with pull_cores, in pull-handler
 * threads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "ctx.h"
#include "iface.h"
#include "pp_log.h"

static int check_config(const struct pp_config *c)
{
	if (c->rank < 0 || c->size < 1) {
		pp_err("pp_init: rank and size must be set (rank=, size= or PP_RANK, PP_SIZE; "
		       "pprun sets them, a PMIx launcher such as mpirun gives them)");
		return -EINVAL;
	}
	if (!c->dev[0] && !c->daemon[0] && c->size > 1) {
		pp_err("pp_init: no port: set dev= (e.g. dev=pcap:eth1 or "
		       "dev=--vdev=net_af_packet0,iface=eth1)");
		return -EINVAL;
	}
	return 0;
}

static void proto_conf(pp_ctx *ctx, struct pp_proto_conf *pc)
{
	const struct pp_config *c = &ctx->cfg;
	pp_proto_conf_job(pc); /* what every job runs; below, this job's own */
	pc->rank = (uint32_t)c->rank;
	pc->nranks = (uint32_t)c->size;
	pc->job = c->job;
	pc->inc = ctx->inc;
	memcpy(pc->mac, ctx->port_info.mac, 6);
	pc->mode = (enum pp_proto_mode)c->mode;
	pc->btp1 = c->btp1;
	pc->btp2 = c->btp2;
	pc->btp_fit = !c->btp_set; /* explicit BTPs stay as given: the paper's figures */
	pc->rate_hint = (uint64_t)ctx->port_info.speed_mbps * 125000u;
	pc->mtu = ctx->port_info.mtu;
	pc->pushbuf_bytes = c->pushbuf_bytes;
	pc->credits = c->credits;
	pc->local_stream = c->shm_stream;
	pc->help_min = c->shm_help;
	if (c->shm == PP_SHM_ON)
		pc->local_whole = pc->write_min = pp_shm_link_copy_min(c, pc->local_whole);
	/* A peer is lost after timeout_ms of silence, not after a fixed number
	 * of tries: back-off reaches rto_max quickly, then it keeps trying. */
	pc->rto_tries = (uint32_t)((uint64_t)c->timeout_ms * 1000000u / pc->rto_max_ns) + 8;
	pc->hooks.arg = ctx;
	pp_shm_link_hooks(ctx, &pc->hooks);
	pp_rt_daemon_hooks(ctx, &pc->hooks);
	pp_rt_stage_hooks(ctx, &pc->hooks);
}

/* The engine goes first: its hooks take back what the intranode link and the
 * port hold of its receives. */
void pp_ctx_free(pp_ctx *ctx)
{
	pp_handlers_stop(ctx);
	pp_proto_destroy(ctx->eng);
	pp_shm_link_fini(ctx);
	if (ctx->port) {
		if (ctx->nspare)
			pp_port_free(ctx->port, ctx->spare, ctx->nspare);
		if (ctx->ntxq)
			pp_port_free(ctx->port, ctx->txq, ctx->ntxq);
		pp_zc_fini(ctx);
		pp_port_close(ctx->port);
	}
	pp_rt_pred_fini(ctx);
	pp_req_pool_fini(ctx);
	pp_membership_fini(ctx);
	pp_boot_end(ctx);
	free(ctx);
}

/* A packet: or pcap: port refused for want of privilege (no CAP_NET_RAW)
 * becomes a udp: port on the interface's first IPv4 address, a free port
 * of the udp range: what an unprivileged rank can open. Only where the
 * peers' addresses come from outside the port (embedded: an MPI's address
 * vector; pp_init: PMIx's records), for a udp: port's HELLO reaches only
 * the peers of its list, which nobody gave. 0 and the device in udp, or
 * an error logged saying why there is none. */
static int udp_fallback(const pp_ctx *ctx, int boot, const char *dev, char *udp, size_t len)
{
	const char *iface = NULL;
	if (!strncmp(dev, "packet:", 7))
		iface = dev + 7;
	else if (!strncmp(dev, "pcap:", 5))
		iface = dev + 5;
	if (!iface || !ctx->cfg.udp_fallback || (boot && ctx->boot != PP_BOOT_PMIX))
		return -EPERM;
	char ip[INET_ADDRSTRLEN];
	if (pp_iface_ipv4(iface, ip, sizeof(ip))) {
		pp_err("pp_init: no udp: port to fall back to: %s has no IPv4 address", iface);
		return -EPERM;
	}
	snprintf(udp, len, "udp:%s:0", ip);
	return 0;
}

/* pp_init's first half, which the embedded context (embed.c) shares:
 * configuration, incarnation, requests, predictor, port and engine. */
int pp_ctx_open(pp_ctx **out, const char *config, uint32_t extra_ranks, int boot)
{
	pp_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	atomic_flag_clear(&ctx->lock);
	int rc = pp_config_load(&ctx->cfg, config);
	if (rc == 0 && boot) /* PMIx, when a PMIx launcher started us, gives rank and size */
		rc = pp_boot_start(ctx);
	if (rc == 0)
		rc = check_config(&ctx->cfg);
	if (rc)
		goto fail;
	ctx->rank = ctx->cfg.rank;
	ctx->size = ctx->cfg.size;
	ctx->inc = pp_membership_incarnation();
	rc = pp_membership_init(ctx);
	if (rc == 0)
		rc = pp_req_pool_init(ctx, PP_PROTO_JOB_MAX_MSGS + PP_PROTO_JOB_MAX_RECVS);
	if (rc)
		goto fail;

	/* Configuration is checked before any hardware is touched. */
	if ((rc = pp_rt_pred_init(ctx)))
		goto fail;
	struct pp_port_conf pconf = {
	    .nb_queues = 1, .pcap_dump = ctx->cfg.pcap_dump[0] ? ctx->cfg.pcap_dump : NULL};
	ctx->zc.off = !ctx->cfg.zerocopy;
	/* daemon=SOCKET: the node daemon's rings are the port (driver/ppd). */
	char dev[PP_CFG_STR + 64];
	if (ctx->cfg.daemon[0])
		snprintf(dev, sizeof(dev),
			 "ppd:job=%u,rank=%d,size=%d,inc=%u,token=%llx,timeout=%u,path=%s",
			 ctx->cfg.job, ctx->rank, ctx->size, ctx->inc,
			 (unsigned long long)ctx->cfg.token, ctx->cfg.timeout_ms, ctx->cfg.daemon);
	else
		snprintf(dev, sizeof(dev), "%s", ctx->cfg.dev);
	rc = pp_port_open(&ctx->port, dev, &pconf);
	char udp[INET_ADDRSTRLEN + 16];
	if ((rc == -EPERM || rc == -EACCES) &&
	    udp_fallback(ctx, boot, dev, udp, sizeof(udp)) == 0) {
		pp_warn("pp_init: port '%s': %s (no CAP_NET_RAW): rank %d uses %s instead "
			"(udp_fallback=off forbids)",
			dev, pp_strerror(rc), ctx->rank, udp);
		snprintf(dev, sizeof(dev), "%s", udp);
		rc = pp_port_open(&ctx->port, dev, &pconf);
	}
	if (rc == -EPERM || rc == -EACCES)
		pp_err("pp_init: a raw port needs CAP_NET_RAW (root, or setcap cap_net_raw+ep on "
		       "the program); without it a rank opens udp:ADDR:PORT,peers=... (pprun "
		       "--dev-kind udp gives it), or packet:IFACE under a PMIx launcher (mpirun), "
		       "which falls back to udp: by itself (udp_fallback)");
	if (rc) {
		pp_err("pp_init: cannot open port '%s': %s", dev, pp_strerror(rc));
		rc = rc == -EINVAL || rc == -ENOMEM ? rc : -ENODEV;
		goto fail;
	}
	if ((rc = pp_port_info(ctx->port, &ctx->port_info)))
		goto fail;
	pp_membership_key_to_daemon(ctx);

	struct pp_proto_conf pc;
	proto_conf(ctx, &pc);
	pc.nranks += extra_ranks;
	if ((rc = pp_proto_create(&ctx->eng, &pc))) {
		pp_err("pp_init: protocol engine: %s", pp_strerror(rc));
		goto fail;
	}
	*out = ctx;
	return 0;
fail:
	pp_ctx_free(ctx);
	return rc;
}

PP_API int pp_init(pp_ctx **out, const char *config)
{
	if (!out)
		return -EINVAL;
	pp_ctx *ctx;
	int rc = pp_ctx_open(&ctx, config, 0, 1);
	if (rc)
		return rc;
	if ((rc = pp_membership_join(ctx)) || (rc = pp_shm_link_init(ctx)) ||
	    (rc = pp_handlers_start(ctx))) {
		pp_ctx_free(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

/* PP_LOG=info: one line of counters per rank at the end, for tuning. */
static void log_stats(pp_ctx *ctx)
{
	struct pp_stats s;
	if (pp_get_stats(ctx, &s))
		return;
	uint64_t drops = 0;
	for (int i = 0; i < PP_DROP_MAX; i++)
		drops += s.drops[i];
	pp_info("rank %d: frames tx %" PRIu64 " rx %" PRIu64 ", retransmits %" PRIu64
		", nacks %" PRIu64 ", acks %" PRIu64 ", drops %" PRIu64
		", pushed-buffer peak %" PRIu64 ", degraded pushes %" PRIu64
		", zero-copy frames %" PRIu64,
		ctx->rank, s.frames_tx, s.frames_rx, s.retransmits, s.nacks_tx, s.acks_tx, drops,
		s.pushed_buf_peak, s.push_degraded, ctx->zc.frames);
}

PP_API int pp_finalize(pp_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	/* Drain: everything sent acknowledged, every owed ack out. */
	uint64_t deadline = pp_now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000u;
	int rc = 0;
	for (;;) {
		pp_ctx_enter(ctx);
		int idle = pp_proto_idle(ctx->eng) && !ctx->ntxq && pp_shm_link_drained(ctx);
		pp_ctx_leave(ctx);
		if (idle)
			break;
		if (pp_now_ns() > deadline) {
			pp_warn("pp_finalize: in-flight operations not drained in %u ms",
				ctx->cfg.timeout_ms);
			rc = -ETIMEDOUT;
			break;
		}
		pp_ctx_progress(ctx);
	}
	/* Pull handlers stop first: from here on one thread drives the engine. */
	pp_handlers_stop(ctx);
	if (rc == 0)
		rc = pp_membership_leave(ctx, deadline);
	else
		pp_membership_abandon(ctx);
	log_stats(ctx);
	pp_rt_stats_print(ctx);
	pp_ctx_free(ctx);
	return rc;
}

PP_API int pp_rank(const pp_ctx *ctx)
{
	return ctx ? ctx->rank : -EINVAL;
}

PP_API int pp_size(const pp_ctx *ctx)
{
	return ctx ? ctx->size : -EINVAL;
}

static int start_once(pp_ctx *ctx, int is_send, void *buf, size_t len, int peer, int tag,
		      pp_req **out)
{
	pp_ctx_enter(ctx);
	struct pp_req *r = pp_req_get(ctx);
	int rc = -ENOMEM;
	if (r) {
		r->is_send = is_send;
		r->peer = peer;
		r->buf = buf;
		uint64_t cookie = (uint64_t)(uintptr_t)r;
		/* Alone in the engine, the push below runs and settles: a
		 * small send's eager copy can wait until its frames are out. */
		if (is_send)
			rc = pp_proto_sendf(ctx->eng, (uint32_t)peer, tag, buf, len, 0,
					    PP_PROTO_SEND_NOW |
						(ctx->locking ? 0 : PP_PROTO_SEND_LATE) |
						pp_ctx_shm_send_flags(ctx, buf, len),
					    cookie);
		else
			rc = pp_proto_recv(ctx->eng, peer, pp_ctx_tag(tag), pp_ctx_tag_ignore(tag),
					   buf, len, cookie);
		if (rc == 1) { /* a send done in the call: no completion comes */
			r->st = (pp_status){.source = peer, .tag = tag, .len = len};
			r->state = PP_REQ_DONE;
			rc = 0;
		} else if (rc) {
			pp_req_put(r);
		} else {
			ctx->active++;
		}
	}
	if (rc == -ENOMEM && !ctx->said_full) {
		ctx->said_full = 1; /* the limits, or memory: said once, not per call */
		pp_err("rank %d: %s refused with %u requests outstanding: a rank may have "
		       "%u receives and %u sends outstanding at most (or memory ran out); "
		       "-ENOMEM",
		       ctx->rank, is_send ? "a send" : "a receive", ctx->active,
		       PP_PROTO_JOB_MAX_RECVS, PP_PROTO_JOB_MAX_MSGS);
	}
	pp_ctx_leave(ctx);
	if (rc)
		return rc;
	*out = r;
	/* The first push goes out now, before any other work. */
	if (is_send)
		pp_ctx_push(ctx);
	return 0;
}

int pp_ctx_start(pp_ctx *ctx, int is_send, void *buf, size_t len, int peer, int tag, pp_req **out)
{
	int rc = start_once(ctx, is_send, buf, len, peer, tag, out);
	if (rc != -EAGAIN)
		return rc;
	/* Every send slot holds a completed small send whose ack is on its
	 * way (or whose peer the engine will declare lost): progress frees one. */
	uint64_t deadline = pp_now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000u;
	while ((rc = start_once(ctx, is_send, buf, len, peer, tag, out)) == -EAGAIN) {
		if (pp_now_ns() > deadline)
			return -ETIMEDOUT;
		pp_ctx_progress(ctx);
	}
	return rc;
}

/* The arguments of a send, pp_isend's and pp_send's: 1 when unsound. */
static int send_args_bad(const pp_ctx *ctx, const void *buf, size_t len, int dest, int tag)
{
	return !ctx || (!buf && len) || tag < 0 || dest < 0 || dest >= ctx->size;
}

PP_API int pp_isend(pp_ctx *ctx, const void *buf, size_t len, int dest, int tag, pp_req **req)
{
	if (!req || send_args_bad(ctx, buf, len, dest, tag))
		return -EINVAL;
	return pp_ctx_start(ctx, 1, (void *)(uintptr_t)buf, len, dest, tag, req);
}

PP_API int pp_irecv(pp_ctx *ctx, void *buf, size_t len, int source, int tag, pp_req **req)
{
	if (!ctx || !req || (!buf && len) || tag < PP_ANY_TAG || source < PP_ANY_SOURCE ||
	    source >= ctx->size)
		return -EINVAL;
	return pp_ctx_start(ctx, 0, buf, len, source, tag, req);
}

/* Hand a finished request's result to the user and free it. */
static int finish(pp_req **req, pp_status *st)
{
	struct pp_req *r = *req;
	pp_ctx *ctx = r->ctx;
	int rc = r->st.error;
	if (st)
		*st = r->st;
	pp_ctx_enter(ctx);
	pp_req_put(r);
	pp_ctx_leave(ctx);
	*req = NULL;
	return rc;
}

static int valid(pp_req **req)
{
	return req && *req && __atomic_load_n(&(*req)->state, __ATOMIC_ACQUIRE) != PP_REQ_FREE;
}

static int req_done(const struct pp_req *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == PP_REQ_DONE;
}

PP_API int pp_test(pp_req **req, int *done, pp_status *st)
{
	if (!valid(req) || !done)
		return -EINVAL;
	if (!req_done(*req))
		pp_ctx_progress((*req)->ctx);
	if (!req_done(*req)) {
		*done = 0;
		return 0;
	}
	*done = 1;
	return finish(req, st);
}

PP_API int pp_wait(pp_req **req, pp_status *st)
{
	return valid(req) ? pp_ctx_wait(req, st) : -EINVAL;
}

static int wait_loop(pp_req **req, pp_status *st);

int pp_ctx_wait(pp_req **req, pp_status *st)
{
	struct pp_req *r = *req;
	pp_ctx *ctx = r->ctx;
	if (ctx->event) /* its passes serve this wait: the thread stays away */
		atomic_store_explicit(&ctx->app_waiting, 1, memory_order_relaxed);
	int rc = wait_loop(req, st);
	if (ctx->event) {
		atomic_store_explicit(&ctx->app_left, pp_now_ns(), memory_order_relaxed);
		atomic_store_explicit(&ctx->app_waiting, 0, memory_order_relaxed);
	}
	return rc;
}

static int wait_loop(pp_req **req, pp_status *st)
{
	struct pp_req *r = *req;
	pp_ctx *ctx = r->ctx;
	const uint64_t silence = (uint64_t)ctx->cfg.timeout_ms * 1000000u;
	uint64_t since = 0; /* the first idle look at the clock (the first pass read it) */
	unsigned spins = 0;
	int pinged = 0, first = 1;

	while (!req_done(r)) {
		int n = first ? pp_ctx_progress(ctx) : pp_ctx_spin(ctx);
		first = 0;
		if (n > 0) {
			spins = 0;
			continue;
		}
		/* Look at the clock only now and then while nothing happens. */
		if (++spins < 1024)
			continue;
		spins = 0;
		uint64_t now = pp_now_ns();
		if (!since)
			since = now;
		uint64_t rx = __atomic_load_n(&ctx->last_rx, __ATOMIC_RELAXED);
		uint64_t last = rx > since ? rx : since;
		if (now - last <= silence / 4)
			continue;
		/* Frames awaiting acknowledgement: the engine either gets it or
		 * declares the peer lost (after about timeout_ms), failing its
		 * operations with -ECONNRESET; that is the answer to wait for. */
		pp_ctx_enter(ctx);
		int retrying = pp_proto_expiry(ctx->eng) != UINT64_MAX;
		if (!retrying && !pinged) {
			/* A quarter of timeout_ms silent: ask whether the peer(s) we wait for
			 * still live. A dead one is declared lost within about
			 * timeout_ms, failing this request with -ECONNRESET; a
			 * live one answers, and then silence means -ETIMEDOUT. */
			pinged = 1;
			retrying = 1;
			for (int p = 0; p < ctx->size; p++)
				if (p != ctx->rank && (r->peer == p || r->peer == PP_ANY_SOURCE))
					pp_proto_ping(ctx->eng, (uint32_t)p);
		}
		pp_ctx_leave(ctx);
		if (now - last > silence && !retrying) {
			pp_warn("pp_wait: no frame for %u ms; giving up (the request stays posted)",
				ctx->cfg.timeout_ms);
			return -ETIMEDOUT;
		}
	}
	return finish(req, st);
}

PP_API int pp_send(pp_ctx *ctx, const void *buf, size_t len, int dest, int tag)
{
	if (send_args_bad(ctx, buf, len, dest, tag))
		return -EINVAL;
	/* A send the engine completes in the call (a node-mate's small
	 * message, rule 6) needs no request: no pool, no wait. Any other,
	 * and every error, takes the request's way. */
	pp_ctx_enter(ctx);
	int rc = pp_proto_sendf(ctx->eng, (uint32_t)dest, (uint64_t)tag, buf, len, 0,
				PP_PROTO_SEND_NOW | PP_PROTO_SEND_TRY, 0);
	pp_ctx_leave(ctx);
	if (rc == 1)
		return 0;
	pp_req *r;
	rc = pp_ctx_start(ctx, 1, (void *)(uintptr_t)buf, len, dest, tag, &r);
	return rc ? rc : pp_ctx_wait(&r, NULL);
}

PP_API int pp_recv(pp_ctx *ctx, void *buf, size_t len, int source, int tag, pp_status *st)
{
	pp_req *r;
	int rc = pp_irecv(ctx, buf, len, source, tag, &r);
	return rc ? rc : pp_ctx_wait(&r, st); /* r is sound: not pp_wait's check */
}

PP_API int pp_progress(pp_ctx *ctx)
{
	return ctx ? pp_ctx_progress(ctx) : -EINVAL;
}

PP_API void *pp_malloc(pp_ctx *ctx, size_t len)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	/* The rank's heap area in the node segment, else (no segment, or full)
	 * cache-line-aligned memory of the process. */
	void *p = pp_shm_link_malloc(ctx, len);
	if (p)
		return p;
	p = aligned_alloc(64, (len + 63) & ~(size_t)63);
	if (!p)
		errno = ENOMEM;
	return p;
}

PP_API void pp_free(pp_ctx *ctx, void *p)
{
	if (p && (!ctx || pp_shm_link_free(ctx, p) == -ENOENT))
		free(p);
}

PP_API int pp_prerecv(pp_ctx *ctx, unsigned site)
{
	if (!ctx)
		return -EINVAL;
	pp_rt_pred_site(ctx, site); /* used by the next receive to complete */
	return 0;
}

PP_API int pp_get_stats(pp_ctx *ctx, struct pp_stats *out)
{
	if (!ctx || !out)
		return -EINVAL;
	struct pp_stats s;
	memset(&s, 0, sizeof(s));
	pp_ctx_enter(ctx);
	pp_proto_stats(ctx->eng, &s);
	s.frames_rx = ctx->frames_rx;
	s.frames_tx = ctx->frames_tx;
	pp_rt_pred_stats(ctx, &s);
	pp_ctx_leave(ctx);
	*out = s;
	return 0;
}

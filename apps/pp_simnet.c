/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_simnet: protocol engines over the in-memory lossy link, on virtual
 * time. Sends random messages between ranks, checks that each arrives
 * exactly once with every byte intact, and prints what happened. With
 * --bench, measures the engines' CPU cost on a lossless run instead.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "pp_port.h"
#include "sim/pp_sim.h"
#include "wire.h"

#define MAX_RANKS 16
#define INFLIGHT  16 /* messages outstanding at once */
#define BURST	  32
#define VTIME_MAX 3600000000000ull /* an hour of virtual time is a hang */

struct opts {
	uint64_t seed;			    /* everything random follows from it */
	uint64_t messages;		    /* messages to deliver */
	uint64_t min_size;		    /* smallest message */
	uint64_t max_size;		    /* largest message */
	int log_sizes;			    /* sizes log-uniform (1) or uniform (0) */
	enum pp_proto_mode mode;	    /* push-pull, push-all, push-zero */
	double loss, dup, reorder, corrupt; /* link behaviour */
	uint64_t delay_ns;		    /* one-way delay */
	uint64_t rate_bps;		    /* per-port rate, 0 unlimited */
	unsigned ranks;			    /* engines */
	double late;			    /* fraction of late receivers */
	uint64_t late_delay;		    /* a late receive waits this long after the send */
	struct pp_proto_conf pc;	    /* engine settings */
	int bench;			    /* measure CPU cost instead */
	int quiet;			    /* summary only */
};

/* One message in flight. */
struct msg {
	int used;	   /* slot in use */
	uint64_t id;	   /* message number (the pattern seed) */
	uint32_t src, dst; /* ranks */
	uint64_t len;	   /* length */
	int late;	   /* receive posted after the push arrived */
	int posted;	   /* receive posted */
	uint64_t post_at;  /* a late receive is not posted before this time */
	int sent_done;	   /* send completed */
	int recv_done;	   /* receive completed */
	uint8_t *sbuf;	   /* send buffer (max_size) */
	uint8_t *rbuf;	   /* receive buffer (max_size) */
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static double rnd01(void)
{
	return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0);
}

static uint8_t pat(uint64_t m, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (m << 40) ^ m;
	return (uint8_t)(x >> 56 ^ x >> 13);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pp_simnet [options]\n"
		"Run Push-Pull engines over the in-memory lossy link (virtual time) and\n"
		"check every message arrives once, intact.\n"
		"  --seed N            random seed (1)\n"
		"  --messages N        messages to deliver (1000)\n"
		"  --sizes MIN:MAX     message sizes in bytes (0:65536)\n"
		"  --dist log|uniform  size distribution (log)\n"
		"  --mode M            push-pull | push-all | push-zero (push-pull)\n"
		"  --loss P --dup P --reorder P --corrupt P   link probabilities (0)\n"
		"  --delay NS          one-way delay (5000)\n"
		"  --rate BPS          per-port bit rate, 0 = unlimited (10000000000)\n"
		"  --ranks N           engines, 2..%d (2)\n"
		"  --late P            fraction of late receivers (0.5)\n"
		"  --late-delay NS     a late receive is posted this long after its send\n"
		"                      at the earliest, letting the pushed buffer fill (0)\n"
		"  --btp1 N --btp2 N   bytes pushed (80, 680)\n"
		"  --window N          go-back-N window, power of two (64)\n"
		"  --pushbuf BYTES     pushed-buffer size (1048576)\n"
		"  --no-credits        push regardless of pushed-buffer space\n"
		"  --bench             print CPU ns per 64-byte message and per MiB\n"
		"  --quiet             summary only\n"
		"  --help              this text\n"
		"Exit status 0 only when every message arrived once and intact.\n",
		MAX_RANKS);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_prob(const char *s, double *v)
{
	char *end;
	double x = strtod(s, &end);
	if (end == s || *end || !(x >= 0 && x <= 1))
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"seed", 1, 0, 's'},
	    {"messages", 1, 0, 'n'},
	    {"sizes", 1, 0, 'z'},
	    {"dist", 1, 0, 'D'},
	    {"mode", 1, 0, 'm'},
	    {"loss", 1, 0, 'l'},
	    {"dup", 1, 0, 'd'},
	    {"reorder", 1, 0, 'r'},
	    {"corrupt", 1, 0, 'c'},
	    {"delay", 1, 0, 'y'},
	    {"rate", 1, 0, 'R'},
	    {"ranks", 1, 0, 'k'},
	    {"late", 1, 0, 'L'},
	    {"late-delay", 1, 0, 'G'},
	    {"btp1", 1, 0, '1'},
	    {"btp2", 1, 0, '2'},
	    {"window", 1, 0, 'w'},
	    {"pushbuf", 1, 0, 'p'},
	    {"no-credits", 0, 0, 'C'},
	    {"bench", 0, 0, 'b'},
	    {"quiet", 0, 0, 'q'},
	    {"help", 0, 0, 'h'},
	    {0, 0, 0, 0},
	};
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->messages = 1000;
	o->max_size = 65536;
	o->log_sizes = 1;
	o->delay_ns = 5000;
	o->rate_bps = 10000000000ull;
	o->ranks = 2;
	o->late = 0.5;
	pp_proto_conf_job(&o->pc); /* what a job runs */
	int c, li = 0;
	uint64_t v;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lo, &li)) != -1) {
		int bad = 0;
		switch (c) {
		case 's':
			bad = parse_u64(optarg, &o->seed);
			break;
		case 'n':
			bad = parse_u64(optarg, &o->messages);
			break;
		case 'z': {
			char *colon = strchr(optarg, ':');
			if (!colon) {
				bad = 1;
				break;
			}
			*colon = 0;
			bad = parse_u64(optarg, &o->min_size) ||
			      parse_u64(colon + 1, &o->max_size) || o->min_size > o->max_size ||
			      o->max_size > (1ull << 32);
			break;
		}
		case 'D':
			if (!strcmp(optarg, "log"))
				o->log_sizes = 1;
			else if (!strcmp(optarg, "uniform"))
				o->log_sizes = 0;
			else
				bad = 1;
			break;
		case 'm':
			if (!strcmp(optarg, "push-pull"))
				o->pc.mode = PP_PROTO_PUSH_PULL;
			else if (!strcmp(optarg, "push-all"))
				o->pc.mode = PP_PROTO_PUSH_ALL;
			else if (!strcmp(optarg, "push-zero"))
				o->pc.mode = PP_PROTO_PUSH_ZERO;
			else
				bad = 1;
			break;
		case 'l':
			bad = parse_prob(optarg, &o->loss);
			break;
		case 'd':
			bad = parse_prob(optarg, &o->dup);
			break;
		case 'r':
			bad = parse_prob(optarg, &o->reorder);
			break;
		case 'c':
			bad = parse_prob(optarg, &o->corrupt);
			break;
		case 'L':
			bad = parse_prob(optarg, &o->late);
			break;
		case 'y':
			bad = parse_u64(optarg, &o->delay_ns);
			break;
		case 'G':
			bad = parse_u64(optarg, &o->late_delay) || o->late_delay > VTIME_MAX / 2;
			break;
		case 'R':
			bad = parse_u64(optarg, &o->rate_bps);
			break;
		case 'k':
			bad = parse_u64(optarg, &v) || v < 2 || v > MAX_RANKS;
			o->ranks = (unsigned)v;
			break;
		case '1':
			bad = parse_u64(optarg, &v) || v > 1u << 30;
			o->pc.btp1 = (uint32_t)v;
			break;
		case '2':
			bad = parse_u64(optarg, &v) || v > 1u << 30;
			o->pc.btp2 = (uint32_t)v;
			break;
		case 'w':
			bad = parse_u64(optarg, &v) || v == 0 || (v & (v - 1)) || v > 32768;
			o->pc.window = (uint32_t)v;
			break;
		case 'p':
			bad = parse_u64(optarg, &v) || v > 1u << 30;
			o->pc.pushbuf_bytes = (uint32_t)v;
			break;
		case 'C':
			o->pc.credits = 0;
			break;
		case 'b':
			o->bench = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "pp_simnet: unknown option %s\n", argv[optind - 1]);
			usage(stderr);
			return -EINVAL;
		}
		if (bad) {
			fprintf(stderr, "pp_simnet: bad value for --%s: %s\n", lo[li].name,
				optarg ? optarg : "");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pp_simnet: unexpected argument %s\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static uint64_t pick_size(const struct opts *o)
{
	if (o->min_size == o->max_size)
		return o->min_size;
	if (!o->log_sizes)
		return o->min_size + rnd() % (o->max_size - o->min_size + 1);
	double lo = log((double)o->min_size + 1), hi = log((double)o->max_size + 1);
	uint64_t s = (uint64_t)exp(lo + rnd01() * (hi - lo)) - 1;
	return s < o->min_size ? o->min_size : s > o->max_size ? o->max_size : s;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the lossy run ---- */

struct run {
	struct opts *o;			       /* options */
	struct pp_sim_link *link;	       /* the link */
	struct pp_port *port[MAX_RANKS];       /* one port per rank */
	struct pp_proto *eng[MAX_RANKS];       /* one engine per rank */
	struct msg m[INFLIGHT];		       /* messages in flight */
	unsigned slots;			       /* entries of m in use: min(INFLIGHT, messages) */
	uint64_t started, delivered, sends_ok; /* progress */
	uint64_t bad_bytes, dup_msgs, errors, wrong; /* failures seen */
	uint64_t bytes;				     /* payload bytes delivered */
	uint64_t now;				     /* virtual time */
};

static int setup(struct run *r)
{
	struct opts *o = r->o;
	struct pp_sim_conf sc = {
	    .seed = o->seed,
	    .loss = o->loss,
	    .dup = o->dup,
	    .reorder = o->reorder,
	    .corrupt = o->corrupt,
	    .delay_ns = o->delay_ns,
	    .rate_bps = o->rate_bps,
	    .mtu = o->pc.mtu,
	};
	int rc = pp_sim_link_create(&r->link, "simnet", o->ranks, &sc);
	if (rc)
		return rc;
	for (unsigned i = 0; i < o->ranks; i++) {
		char dev[32];
		snprintf(dev, sizeof(dev), "sim:simnet/%u", i);
		if ((rc = pp_port_open(&r->port[i], dev, NULL)))
			return rc;
		struct pp_port_info info;
		pp_port_info(r->port[i], &info);
		struct pp_proto_conf c = o->pc;
		c.rank = i;
		c.nranks = o->ranks;
		c.job = 0xC0FFEE;
		c.inc = 100 + i; /* every rank its own incarnation, as in a job */
		memcpy(c.mac, info.mac, 6);
		if ((rc = pp_proto_create(&r->eng[i], &c)))
			return rc;
	}
	for (unsigned i = 0; i < o->ranks; i++)
		for (unsigned j = 0; j < o->ranks; j++)
			if (i != j) {
				uint8_t mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)j};
				if ((rc = pp_proto_peer_add(r->eng[i], j, mac, 100 + j)))
					return rc;
			}
	for (unsigned k = 0; k < r->slots; k++) {
		r->m[k].sbuf = malloc(o->max_size ? o->max_size : 1);
		r->m[k].rbuf = malloc(o->max_size ? o->max_size : 1);
		if (!r->m[k].sbuf || !r->m[k].rbuf)
			return -ENOMEM;
	}
	return 0;
}

static void teardown(struct run *r)
{
	for (unsigned i = 0; i < r->o->ranks; i++) {
		pp_proto_destroy(r->eng[i]);
		if (r->port[i])
			pp_port_close(r->port[i]);
	}
	pp_sim_link_destroy(r->link);
	for (unsigned k = 0; k < INFLIGHT; k++) {
		free(r->m[k].sbuf);
		free(r->m[k].rbuf);
	}
}

static int post_recv(struct run *r, struct msg *m, unsigned k)
{
	m->posted = 1;
	memset(m->rbuf, 0xEE, m->len);
	return pp_proto_recv(r->eng[m->dst], (int)m->src, (int)(m->id & 0x7fffffff), 0, m->rbuf,
			     m->len, k);
}

static int start(struct run *r, unsigned k)
{
	struct opts *o = r->o;
	struct msg *m = &r->m[k];
	m->used = 1;
	m->id = r->started++;
	m->src = (uint32_t)(rnd() % o->ranks);
	m->dst = (uint32_t)((m->src + 1 + rnd() % (o->ranks - 1)) % o->ranks);
	m->len = pick_size(o);
	m->late = rnd01() < o->late;
	m->posted = m->sent_done = m->recv_done = 0;
	m->post_at = r->now + o->late_delay;
	for (uint64_t i = 0; i < m->len; i++)
		m->sbuf[i] = pat(m->id, i);
	int rc = 0;
	if (!m->late)
		rc = post_recv(r, m, k);
	if (!rc)
		rc = pp_proto_send(r->eng[m->src], m->dst, (int)(m->id & 0x7fffffff), m->sbuf,
				   m->len, k);
	return rc;
}

static void complete(struct run *r, unsigned rank, const struct pp_proto_cpl *c)
{
	if (c->cookie >= r->slots || !r->m[c->cookie].used) {
		r->wrong++;
		return;
	}
	struct msg *m = &r->m[c->cookie];
	if (c->error) {
		r->errors++;
		fprintf(stderr, "pp_simnet: message %" PRIu64 " %s failed: %s\n", m->id,
			c->is_send ? "send" : "receive", strerror(-c->error));
	}
	if (c->is_send) {
		if (rank != m->src || m->sent_done)
			r->wrong++;
		m->sent_done = 1;
		r->sends_ok += !c->error;
	} else {
		if (rank != m->dst || (!c->error && (c->source != (int)m->src || c->len != m->len)))
			r->wrong++;
		if (m->recv_done) {
			r->dup_msgs++;
		} else if (!c->error) {
			uint64_t bad = 0;
			for (uint64_t i = 0; i < m->len; i++)
				bad += m->rbuf[i] != pat(m->id, i);
			r->bad_bytes += bad;
			if (!bad)
				r->delivered++;
			r->bytes += m->len;
		}
		m->recv_done = 1;
	}
	if (m->sent_done && m->recv_done)
		m->used = 0;
}

static int pump(struct run *r)
{
	unsigned n = r->o->ranks, activity = 0;
	struct pp_buf *bufs[BURST];
	for (unsigned i = 0; i < n; i++) {
		unsigned got;
		while ((got = pp_port_rx_burst(r->port[i], 0, bufs, BURST)) > 0) {
			for (unsigned j = 0; j < got; j++)
				pp_proto_input(r->eng[i], bufs[j]->data, bufs[j]->len, r->now);
			pp_port_free(r->port[i], bufs, got);
			activity += got;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		struct pp_proto_cpl c;
		if (pp_proto_expiry(r->eng[i]) <= r->now)
			pp_proto_handle_expiry(r->eng[i], r->now);
		while (pp_proto_poll(r->eng[i], &c)) {
			complete(r, i, &c);
			activity++;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		for (;;) {
			unsigned have = pp_port_alloc(r->port[i], bufs, BURST), k = 0;
			while (k < have) {
				int len =
				    pp_proto_output(r->eng[i], bufs[k]->data, bufs[k]->cap, r->now);
				if (len <= 0)
					break;
				bufs[k++]->len = (uint32_t)len;
			}
			if (k < have)
				pp_port_free(r->port[i], bufs + k, have - k);
			if (k)
				pp_port_tx_burst(r->port[i], 0, bufs, k);
			activity += k;
			if (k < BURST)
				break;
		}
	}
	return (int)activity;
}

static int lossy_run(struct opts *o)
{
	struct run r;
	memset(&r, 0, sizeof(r));
	r.o = o;
	r.slots = o->messages < INFLIGHT ? (unsigned)o->messages : INFLIGHT;
	rng_state = o->seed * 0x9E3779B97F4A7C15ull + 77;
	int rc = setup(&r), hang = 0;
	if (rc) {
		fprintf(stderr, "pp_simnet: set-up failed: %s\n", strerror(-rc));
		teardown(&r);
		return 2;
	}
	double t0 = now_s();
	while (r.delivered + r.errors + r.bad_bytes < o->messages || r.started < o->messages) {
		int act = 0;
		for (unsigned k = 0; k < r.slots && r.started < o->messages; k++)
			if (!r.m[k].used) {
				if ((rc = start(&r, k))) {
					fprintf(stderr, "pp_simnet: start: %s\n", strerror(-rc));
					r.errors++;
					r.m[k].used = 0;
				}
				act++;
			}
		/* A late receive is posted once its message has arrived (and
		 * --late-delay has passed). */
		uint64_t next_post = UINT64_MAX;
		for (unsigned k = 0; k < INFLIGHT; k++) {
			struct msg *m = &r.m[k];
			struct pp_proto_cpl pc;
			if (m->used && !m->posted && m->post_at > r.now) {
				if (m->post_at < next_post)
					next_post = m->post_at;
				continue;
			}
			if (!m->used || m->posted ||
			    !pp_proto_probe(r.eng[m->dst], (int)m->src, (int)(m->id & 0x7fffffff),
					    0, &pc))
				continue;
			if ((rc = post_recv(&r, m, k))) {
				fprintf(stderr, "pp_simnet: recv: %s\n", strerror(-rc));
				r.errors++;
			}
			act++;
		}
		act += pump(&r);
		if (r.errors || r.wrong || r.dup_msgs || r.bad_bytes)
			break;
		if (act)
			continue;
		uint64_t t = pp_sim_link_next_event(r.link);
		if (next_post < t)
			t = next_post;
		for (unsigned i = 0; i < o->ranks; i++) {
			uint64_t x = pp_proto_expiry(r.eng[i]);
			if (x < t)
				t = x;
		}
		if (t == UINT64_MAX || t > VTIME_MAX) {
			hang = 1;
			break;
		}
		if (t > r.now)
			r.now = t;
		pp_sim_link_set_time(r.link, r.now);
	}
	double wall = now_s() - t0;
	/* Let the last acks drain so the counters are final. */
	for (int i = 0; i < 100000 && !hang; i++) {
		if (pump(&r))
			continue;
		uint64_t t = pp_sim_link_next_event(r.link);
		for (unsigned e = 0; e < o->ranks; e++) {
			uint64_t x = pp_proto_expiry(r.eng[e]);
			if (x < t)
				t = x;
		}
		if (t == UINT64_MAX)
			break;
		r.now = t > r.now ? t : r.now;
		pp_sim_link_set_time(r.link, r.now);
	}
	struct pp_stats tot;
	memset(&tot, 0, sizeof(tot));
	for (unsigned i = 0; i < o->ranks; i++) {
		struct pp_stats s;
		pp_proto_stats(r.eng[i], &s);
		tot.frames_tx += s.frames_tx;
		tot.frames_rx += s.frames_rx;
		tot.bytes_tx += s.bytes_tx;
		tot.retransmits += s.retransmits;
		tot.nacks_tx += s.nacks_tx;
		tot.acks_tx += s.acks_tx;
		tot.pulls_tx += s.pulls_tx;
		tot.early_matches += s.early_matches;
		tot.late_matches += s.late_matches;
		tot.push_degraded += s.push_degraded;
		if (s.pushed_buf_peak > tot.pushed_buf_peak)
			tot.pushed_buf_peak = s.pushed_buf_peak;
		for (int d = 0; d < PP_DROP_MAX; d++)
			tot.drops[d] += s.drops[d];
	}
	struct pp_sim_stats ls;
	pp_sim_link_stats(r.link, &ls);
	static const char *const modes[] = {"push-pull", "push-all", "push-zero"};
	printf("pp_simnet: mode %s, %u ranks, seed %" PRIu64 ", sizes %" PRIu64 "..%" PRIu64
	       " (%s), loss %.3f dup %.3f reorder %.3f corrupt %.3f, credits %s\n",
	       modes[o->pc.mode], o->ranks, o->seed, o->min_size, o->max_size,
	       o->log_sizes ? "log" : "uniform", o->loss, o->dup, o->reorder, o->corrupt,
	       o->pc.credits ? "on" : "off");
	printf("delivered %" PRIu64 "/%" PRIu64 " intact (early %" PRIu64 ", late %" PRIu64
	       "), sends completed %" PRIu64 "\n",
	       r.delivered, o->messages, tot.early_matches, tot.late_matches, r.sends_ok);
	printf("payload %.1f MB in %.3f s virtual, %.2f s wall\n", r.bytes / 1e6, r.now / 1e9,
	       wall);
	printf("frames sent %" PRIu64 ", received %" PRIu64 ", retransmissions %" PRIu64
	       ", nacks %" PRIu64 ", acks %" PRIu64 ", pulls %" PRIu64 ", pushes degraded %" PRIu64
	       ", pushed-buffer peak %" PRIu64 " B\n",
	       tot.frames_tx, tot.frames_rx, tot.retransmits, tot.nacks_tx, tot.acks_tx,
	       tot.pulls_tx, tot.push_degraded, tot.pushed_buf_peak);
	printf("link: sent %" PRIu64 ", lost %" PRIu64 ", duplicated %" PRIu64
	       ", reordered %" PRIu64 ", corrupted %" PRIu64 ", overflow %" PRIu64 "\n",
	       ls.sent, ls.lost, ls.duplicated, ls.reordered, ls.corrupted, ls.overflow);
	printf("drops by reason:");
	for (int d = 0; d < PP_DROP_MAX; d++)
		printf(" %s %" PRIu64, pp_wire_drop_name((enum pp_drop_reason)d), tot.drops[d]);
	printf("\n");
	int fail = 0;
	if (hang) {
		printf("FAIL: hang at virtual time %.3f s\n", r.now / 1e9);
		fail = 1;
	}
	if (r.delivered != o->messages || r.sends_ok != o->messages) {
		printf("FAIL: %" PRIu64 " messages not delivered, %" PRIu64
		       " sends not completed\n",
		       o->messages - r.delivered, o->messages - r.sends_ok);
		fail = 1;
	}
	if (r.dup_msgs || r.bad_bytes || r.errors || r.wrong) {
		printf("FAIL: duplicated %" PRIu64 ", corrupted bytes %" PRIu64 ", errors %" PRIu64
		       ", wrong completions %" PRIu64 "\n",
		       r.dup_msgs, r.bad_bytes, r.errors, r.wrong);
		fail = 1;
	}
	teardown(&r);
	return fail;
}

/* ---- --bench: two engines joined directly, lossless ---- */

static int bench_one(const struct opts *o, uint64_t len, uint64_t count, double *ns_per_msg)
{
	struct pp_proto *e[2];
	struct pp_proto_conf c = o->pc;
	c.nranks = 2;
	c.job = 1;
	for (int i = 0; i < 2; i++) {
		c.rank = (uint32_t)i;
		c.inc = 100 + (uint32_t)i;
		c.mac[0] = 2;
		c.mac[5] = (uint8_t)i;
		if (pp_proto_create(&e[i], &c))
			return -1;
	}
	uint8_t mac0[6] = {2, 0, 0, 0, 0, 0}, mac1[6] = {2, 0, 0, 0, 0, 1};
	pp_proto_peer_add(e[0], 1, mac1, 101);
	pp_proto_peer_add(e[1], 0, mac0, 100);
	enum { DEPTH = 32 };
	uint8_t *sb = malloc(len ? len : 1), *rb = malloc((len ? len : 1) * DEPTH);
	static uint8_t frame[9216];
	if (!sb || !rb)
		return -1;
	memset(sb, 0x5A, len);
	uint64_t now = 1, posted = 0, done_r = 0, done_s = 0;
	double t0 = now_s();
	while (done_r < count || done_s < count) {
		while (posted < count && posted - done_r < DEPTH && posted - done_s < DEPTH) {
			if (pp_proto_recv(e[1], 0, 1, 0, rb + (posted % DEPTH) * len, len,
					  posted) ||
			    pp_proto_send(e[0], 1, 1, sb, len, posted))
				return -1;
			posted++;
		}
		int moved = 0, n;
		for (int i = 0; i < 2; i++)
			while ((n = pp_proto_output(e[i], frame, sizeof(frame), now)) > 0) {
				pp_proto_input(e[1 - i], frame, (size_t)n, now);
				moved++;
			}
		struct pp_proto_cpl cp;
		while (pp_proto_poll(e[1], &cp))
			done_r++;
		while (pp_proto_poll(e[0], &cp))
			done_s++;
		if (!moved) {
			uint64_t t = pp_proto_expiry(e[1]), t2 = pp_proto_expiry(e[0]);
			t = t < t2 ? t : t2;
			if (t == UINT64_MAX)
				return -1;
			now = t > now ? t : now;
			pp_proto_handle_expiry(e[0], now);
			pp_proto_handle_expiry(e[1], now);
		}
	}
	*ns_per_msg = (now_s() - t0) * 1e9 / (double)count;
	pp_proto_destroy(e[0]);
	pp_proto_destroy(e[1]);
	free(sb);
	free(rb);
	return 0;
}

static int bench(const struct opts *o)
{
	double small, big;
	if (bench_one(o, 64, 1000000, &small) || bench_one(o, 1 << 20, 512, &big)) {
		fprintf(stderr, "pp_simnet: benchmark failed\n");
		return 1;
	}
	static const char *const modes[] = {"push-pull", "push-all", "push-zero"};
	printf(
	    "pp_simnet --bench: mode %s, two engines joined directly, lossless, CLOCK_MONOTONIC,\n"
	    "sender + receiver engine CPU (codec, CRC32C, copies, acks) per message:\n",
	    modes[o->pc.mode]);
	printf("  %.0f ns per 64-byte message\n", small);
	printf("  %.0f ns per MiB (%.2f GB/s)\n", big, (1 << 20) / big);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse_args(argc, argv, &o))
		return 2;
	if (o.bench)
		return bench(&o);
	if (o.messages == 0) {
		fprintf(stderr, "pp_simnet: --messages must be at least 1\n");
		return 2;
	}
	return lossy_run(&o);
}

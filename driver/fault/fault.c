/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "fault:" backend: another port, with faults injected into what it
 * receives, for tests over real links where the kernel has no netem:
 *   fault:loss=P,dup=P,reorder=P,seed=N;DEV
 * opens DEV (any device string) and, of the frames it receives, drops each
 * with probability loss, delivers each again right after itself with
 * probability dup (a copy in a buffer of DEV's own), and holds each back
 * with probability reorder until one to four more frames have been
 * delivered after it, or as many receive calls found nothing new (at most
 * FAULT_HOLD held at once per queue). Every draw comes from
 * one generator seeded with seed. What is sent is not touched: every frame is
 * received by some port, and faults there are faults on the link. Counters:
 * pp_port_stats adds the frames dropped to rx_dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_log.h"
#include "pp_port.h"
#include "pp_xorshift.h"

#define FAULT_HOLD 8 /* frames held back at once, per queue */

struct held {
	struct pp_buf *b; /* the frame */
	unsigned left;	  /* frames or calls still to go by */
};

struct fault_port {
	struct pp_port base;				  /* must be first */
	struct pp_port *inner;				  /* the real port */
	double loss, dup, reorder;			  /* probabilities */
	uint64_t rng;					  /* xorshift state */
	struct held hold[PP_PORT_MAX_QUEUES][FAULT_HOLD]; /* per queue */
	unsigned nhold[PP_PORT_MAX_QUEUES];		  /* how many */
	uint64_t lost, duplicated, reordered;		  /* faults injected */
};

static struct fault_port *to_fault(struct pp_port *p)
{
	return (struct fault_port *)p;
}

static double draw(struct fault_port *f)
{
	return (double)(pp_xorshift64(&f->rng) >> 11) / (double)(1ull << 53);
}

/* Parse "loss=P,dup=P,reorder=P,seed=N" (any subset, any order) up to ';'.
 * Returns the inner device string, or NULL when malformed. */
static const char *parse(struct fault_port *f, const char *dev)
{
	const char *semi = strchr(dev, ';');
	if (!semi || !semi[1])
		return NULL;
	char spec[256];
	size_t n = (size_t)(semi - dev);
	if (n >= sizeof(spec))
		return NULL;
	memcpy(spec, dev, n);
	spec[n] = '\0';
	f->rng = 1;
	char *save = NULL;
	for (char *kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *end;
		if (!eq)
			return NULL;
		*eq = '\0';
		double v = strtod(eq + 1, &end);
		if (*end || end == eq + 1)
			return NULL;
		if (strcmp(kv, "seed") == 0) {
			f->rng = (uint64_t)v * 0x9E3779B97F4A7C15ull | 1;
			continue;
		}
		if (v < 0 || v > 0.5)
			return NULL;
		if (strcmp(kv, "loss") == 0)
			f->loss = v;
		else if (strcmp(kv, "dup") == 0)
			f->dup = v;
		else if (strcmp(kv, "reorder") == 0)
			f->reorder = v;
		else
			return NULL;
	}
	return semi + 1;
}

static int fault_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf)
{
	struct fault_port *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	const char *inner = parse(f, dev);
	if (!inner) {
		pp_err("fault: bad device '%s' (want loss=P,dup=P,reorder=P,seed=N;DEV with P "
		       "in 0..0.5)",
		       dev);
		free(f);
		return -EINVAL;
	}
	struct pp_port_conf c = *conf;
	c.pcap_dump = NULL; /* the outer port captures what the caller sees */
	int rc = pp_port_open(&f->inner, inner, &c);
	if (rc) {
		free(f);
		return rc;
	}
	*port = &f->base;
	return 0;
}

static void fault_close(struct pp_port *port)
{
	struct fault_port *f = to_fault(port);
	for (unsigned q = 0; q < PP_PORT_MAX_QUEUES; q++)
		for (unsigned i = 0; i < f->nhold[q]; i++)
			pp_port_free(f->inner, &f->hold[q][i].b, 1);
	pp_port_close(f->inner);
	free(f);
}

static int fault_info(struct pp_port *port, struct pp_port_info *info)
{
	return pp_port_info(to_fault(port)->inner, info);
}

static int fault_stats(struct pp_port *port, struct pp_port_stats *st)
{
	struct fault_port *f = to_fault(port);
	int rc = pp_port_stats(f->inner, st);
	if (rc == 0)
		st->rx_dropped += f->lost;
	return rc;
}

static unsigned fault_alloc(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	return pp_port_alloc(to_fault(port)->inner, bufs, n);
}

static void fault_free(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	pp_port_free(to_fault(port)->inner, bufs, n);
}

/* One frame was delivered, or a call found nothing new: held frames whose
 * time is up go out (as far as there is room in bufs). */
static unsigned age(struct fault_port *f, uint16_t q, struct pp_buf **bufs, unsigned out,
		    unsigned n)
{
	struct held *h = f->hold[q];
	for (unsigned i = 0; i < f->nhold[q];) {
		if (h[i].left > 0)
			h[i].left--;
		if (h[i].left == 0 && out < n) {
			bufs[out++] = h[i].b;
			h[i] = h[--f->nhold[q]];
			continue;
		}
		i++;
	}
	return out;
}

static unsigned fault_rx(struct pp_port *port, uint16_t q, struct pp_buf **bufs, unsigned n)
{
	struct fault_port *f = to_fault(port);
	if (q >= PP_PORT_MAX_QUEUES || n < 2)
		return q < PP_PORT_MAX_QUEUES ? pp_port_rx_burst(f->inner, q, bufs, n) : 0;
	/* At most n / 2 taken, so each and its copy fit; frames released
	 * from the hold never take the room of those still to come. */
	struct pp_buf *in[16];
	unsigned want = n / 2 > 16 ? 16 : n / 2;
	unsigned got = pp_port_rx_burst(f->inner, q, in, want), out = 0;
	if (!got)
		return age(f, q, bufs, 0, n);
	for (unsigned i = 0; i < got; i++) {
		struct pp_buf *b = in[i];
		unsigned room = n - 2 * (got - i - 1); /* out may reach this */
		if (draw(f) < f->loss) {
			f->lost++;
			pp_port_free(f->inner, &b, 1);
			continue;
		}
		if (draw(f) < f->reorder && f->nhold[q] < FAULT_HOLD) {
			f->hold[q][f->nhold[q]++] = (struct held){b, 1 + (unsigned)(draw(f) * 4)};
			f->reordered++;
			continue;
		}
		bufs[out++] = b;
		struct pp_buf *c;
		if (draw(f) < f->dup && pp_port_alloc(f->inner, &c, 1) == 1) {
			if (c->cap >= b->len) {
				memcpy(c->data, b->data, b->len);
				c->len = b->len;
				c->ts_ns = b->ts_ns;
				bufs[out++] = c;
				f->duplicated++;
			} else {
				pp_port_free(f->inner, &c, 1);
			}
		}
		out = age(f, q, bufs, out, room);
	}
	return out;
}

static unsigned fault_tx(struct pp_port *port, uint16_t q, struct pp_buf **bufs, unsigned n)
{
	return pp_port_tx_burst(to_fault(port)->inner, q, bufs, n);
}

static int fault_attach_ext(struct pp_port *port, struct pp_buf *buf, void *addr, uint32_t len,
			    void (*done)(void *arg), void *arg)
{
	return pp_port_attach_ext(to_fault(port)->inner, buf, addr, len, done, arg);
}

static int fault_mem_register(struct pp_port *port, void *addr, size_t len)
{
	return pp_port_mem_register(to_fault(port)->inner, addr, len);
}

static int fault_mem_unregister(struct pp_port *port, void *addr, size_t len)
{
	return pp_port_mem_unregister(to_fault(port)->inner, addr, len);
}

/* The inner port's: frames held back for reordering wake nobody, so a
 * sleeper bounds its sleep (pp_port_wait_fd). */
static int fault_wait_fd(struct pp_port *port)
{
	return pp_port_wait_fd(to_fault(port)->inner);
}

const struct pp_port_ops pp_port_ops_fault = {
    .name = "fault",
    .open = fault_open,
    .close = fault_close,
    .info = fault_info,
    .stats = fault_stats,
    .alloc = fault_alloc,
    .free = fault_free,
    .rx_burst = fault_rx,
    .tx_burst = fault_tx,
    .attach_ext = fault_attach_ext,
    .mem_register = fault_mem_register,
    .mem_unregister = fault_mem_unregister,
    .wait_fd = fault_wait_fd,
};

/* SPDX-License-Identifier: BSD-3-Clause */
/* driver/sim: the in-memory lossy link behind the port ops table. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pp_log.h"
#include "pp_port.h"
#include "pp_sim.h"

#define SIM_MAX_LINKS  32
#define SIM_NAME_MAX   32
#define SIM_PORT_SLOTS 4096u /* buffers per port in the link's pool */
#define SIM_RX_DEPTH   4096u /* receive ring per port (power of two) */

struct sim_slot {
	struct pp_buf b; /* what the caller sees */
	uint64_t arrive; /* arrival time while in flight */
	uint64_t order;	 /* tie-break: send order */
	uint32_t dst;	 /* destination port while in flight */
};

struct sim_port {
	struct pp_port base;	  /* must be first: the port handle */
	struct pp_sim_link *link; /* the link it is on */
	unsigned index;		  /* its index, the last MAC byte */
	int open;		  /* opened and not closed */
	uint64_t busy_until;	  /* when its sender is free (rate limit) */
	uint32_t *ring;		  /* received slots waiting for rx_burst */
	uint32_t head;		  /* next to take */
	uint32_t tail;		  /* next to fill */
	int efd;		  /* wait descriptor: readable while ring holds frames (-1: none) */
	struct pp_port_stats st;  /* counters */
};

struct pp_sim_link {
	char name[SIM_NAME_MAX]; /* the NAME of "sim:NAME/INDEX" */
	struct pp_sim_conf conf; /* behaviour */
	unsigned nb_ports;	 /* ports */
	struct sim_port *ports;	 /* nb_ports ports */
	struct sim_slot *slots;	 /* buffer pool */
	uint8_t *mem;		 /* bytes behind the pool */
	uint32_t nslots;	 /* pool size */
	uint32_t buf_cap;	 /* bytes per buffer */
	uint32_t *free;		 /* free slot stack */
	uint32_t nfree;		 /* entries in free */
	uint32_t *heap;		 /* in-flight slots, earliest arrival first */
	uint32_t nheap;		 /* entries in heap */
	uint64_t order;		 /* frames sent so far */
	uint64_t now;		 /* virtual time */
	uint64_t rng;		 /* generator state */
	struct pp_sim_stats st;	 /* counters */
	pthread_mutex_t lock;	 /* serialises the calls on the link */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pp_sim_link *registry[SIM_MAX_LINKS];

static uint64_t rnd(struct pp_sim_link *l)
{
	uint64_t x = l->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	l->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static int chance(struct pp_sim_link *l, double p)
{
	if (p <= 0)
		return 0;
	return (double)(rnd(l) >> 11) * (1.0 / 9007199254740992.0) < p;
}

static int prob_ok(double p)
{
	return p >= 0 && p <= 1;
}

int pp_sim_link_create(struct pp_sim_link **lp, const char *name, unsigned nb_ports,
		       const struct pp_sim_conf *conf)
{
	if (!lp || !name || !name[0] || strlen(name) >= SIM_NAME_MAX || strchr(name, '/') ||
	    nb_ports < 1 || nb_ports > 255 || !conf || !prob_ok(conf->loss) ||
	    !prob_ok(conf->dup) || !prob_ok(conf->reorder) || !prob_ok(conf->corrupt) ||
	    (conf->mtu && conf->mtu < 128))
		return -EINVAL;
	struct pp_sim_link *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	strcpy(l->name, name);
	l->conf = *conf;
	if (!l->conf.mtu)
		l->conf.mtu = 1500;
	l->rng = conf->seed * 0x9E3779B97F4A7C15ull + 0x1234567;
	if (!l->rng)
		l->rng = 1;
	l->nb_ports = nb_ports;
	l->nslots = nb_ports * SIM_PORT_SLOTS;
	l->buf_cap = ((uint32_t)l->conf.mtu + PP_ETH_HLEN + 63) & ~63u;
	l->ports = calloc(nb_ports, sizeof(*l->ports));
	l->slots = calloc(l->nslots, sizeof(*l->slots));
	l->mem = malloc((size_t)l->nslots * l->buf_cap);
	l->free = calloc(l->nslots, sizeof(*l->free));
	l->heap = calloc(l->nslots, sizeof(*l->heap));
	int rc = -ENOMEM;
	if (!l->ports || !l->slots || !l->mem || !l->free || !l->heap)
		goto fail;
	for (unsigned i = 0; i < nb_ports; i++) {
		l->ports[i].link = l;
		l->ports[i].index = i;
		l->ports[i].efd = -1;
		l->ports[i].ring = calloc(SIM_RX_DEPTH, sizeof(uint32_t));
		if (!l->ports[i].ring)
			goto fail;
	}
	for (uint32_t i = 0; i < l->nslots; i++) {
		struct sim_slot *s = &l->slots[i];
		s->b.data = l->mem + (size_t)i * l->buf_cap;
		s->b.cap = l->buf_cap;
		s->b.priv = s;
		l->free[i] = l->nslots - 1 - i;
	}
	l->nfree = l->nslots;
	pthread_mutex_lock(&reg_lock);
	int slot = -1;
	rc = 0;
	for (int i = 0; i < SIM_MAX_LINKS; i++) {
		if (registry[i] && !strcmp(registry[i]->name, name))
			rc = -EEXIST;
		if (!registry[i] && slot < 0)
			slot = i;
	}
	if (!rc && slot < 0)
		rc = -ENOMEM;
	if (!rc)
		registry[slot] = l;
	pthread_mutex_unlock(&reg_lock);
	if (rc)
		goto fail;
	*lp = l;
	return 0;
fail:
	pp_sim_link_destroy(l);
	return rc;
}

void pp_sim_link_destroy(struct pp_sim_link *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < SIM_MAX_LINKS; i++)
		if (registry[i] == l)
			registry[i] = NULL;
	pthread_mutex_unlock(&reg_lock);
	if (l->ports)
		for (unsigned i = 0; i < l->nb_ports; i++)
			free(l->ports[i].ring);
	free(l->ports);
	free(l->slots);
	free(l->mem);
	free(l->free);
	free(l->heap);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* ---- the in-flight heap, earliest (arrive, order) on top ---- */

static int before(const struct pp_sim_link *l, uint32_t a, uint32_t b)
{
	const struct sim_slot *x = &l->slots[a], *y = &l->slots[b];
	return x->arrive < y->arrive || (x->arrive == y->arrive && x->order < y->order);
}

static void heap_push(struct pp_sim_link *l, uint32_t s)
{
	uint32_t i = l->nheap++;
	l->heap[i] = s;
	while (i && before(l, l->heap[i], l->heap[(i - 1) / 2])) {
		uint32_t p = (i - 1) / 2, t = l->heap[p];
		l->heap[p] = l->heap[i];
		l->heap[i] = t;
		i = p;
	}
}

static uint32_t heap_pop(struct pp_sim_link *l)
{
	uint32_t top = l->heap[0];
	l->heap[0] = l->heap[--l->nheap];
	for (uint32_t i = 0;;) {
		uint32_t c = 2 * i + 1, m = i;
		if (c < l->nheap && before(l, l->heap[c], l->heap[m]))
			m = c;
		if (c + 1 < l->nheap && before(l, l->heap[c + 1], l->heap[m]))
			m = c + 1;
		if (m == i)
			break;
		uint32_t t = l->heap[m];
		l->heap[m] = l->heap[i];
		l->heap[i] = t;
		i = m;
	}
	return top;
}

static void slot_free(struct pp_sim_link *l, uint32_t s)
{
	l->free[l->nfree++] = s;
}

/* The ring's wait descriptor counts 1 from when the ring stops being empty
 * until rx_burst empties it (both under the link's lock). */
static void efd_set(const struct sim_port *p)
{
	uint64_t one = 1;
	if (p->efd >= 0 && write(p->efd, &one, sizeof(one)) < 0)
		pp_debug("sim: port %u: cannot signal its wait descriptor", p->index);
}

static void efd_clear(const struct sim_port *p)
{
	uint64_t v;
	if (p->efd >= 0 && read(p->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pp_debug("sim: port %u: cannot clear its wait descriptor", p->index);
}

static void deliver_due(struct pp_sim_link *l)
{
	while (l->nheap && l->slots[l->heap[0]].arrive <= l->now) {
		uint32_t s = heap_pop(l);
		struct sim_port *p = &l->ports[l->slots[s].dst];
		if (!p->open || p->tail - p->head >= SIM_RX_DEPTH) {
			l->st.overflow++;
			p->st.rx_dropped++;
			slot_free(l, s);
			continue;
		}
		if (p->head == p->tail)
			efd_set(p);
		p->ring[p->tail++ & (SIM_RX_DEPTH - 1)] = s;
		l->st.delivered++;
	}
}

static void lock(const struct pp_sim_link *l)
{
	pthread_mutex_lock((pthread_mutex_t *)&l->lock);
}

static void unlock(const struct pp_sim_link *l)
{
	pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
}

void pp_sim_link_set_time(struct pp_sim_link *l, uint64_t now_ns)
{
	lock(l);
	if (now_ns > l->now)
		l->now = now_ns;
	deliver_due(l);
	unlock(l);
}

uint64_t pp_sim_link_next_event(const struct pp_sim_link *l)
{
	lock(l);
	uint64_t t = l->nheap ? l->slots[l->heap[0]].arrive : UINT64_MAX;
	unlock(l);
	return t;
}

void pp_sim_link_stats(const struct pp_sim_link *l, struct pp_sim_stats *st)
{
	lock(l);
	*st = l->st;
	unlock(l);
}

/* ---- sending: the fate of one copy of a frame ---- */

static void launch(struct pp_sim_link *l, struct sim_port *src, uint32_t s, unsigned dst)
{
	struct sim_slot *x = &l->slots[s];
	l->st.sent++;
	uint64_t depart = l->now > src->busy_until ? l->now : src->busy_until;
	if (l->conf.rate_bps)
		depart += (uint64_t)x->b.len * 8 * 1000000000ull / l->conf.rate_bps;
	src->busy_until = depart;
	if (chance(l, l->conf.loss)) { /* lost on the wire: the sender's time is spent */
		l->st.lost++;
		slot_free(l, s);
		return;
	}
	x->dst = dst;
	x->arrive = depart + l->conf.delay_ns;
	x->order = l->order++;
	if (chance(l, l->conf.reorder)) {
		l->st.reordered++;
		x->arrive += 1 + rnd(l) % (2 * l->conf.delay_ns + 20000);
	}
	if (chance(l, l->conf.corrupt) && x->b.len) {
		l->st.corrupted++;
		uint64_t bit = rnd(l) % ((uint64_t)x->b.len * 8);
		x->b.data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	if (chance(l, l->conf.dup) && l->nfree) {
		uint32_t c = l->free[--l->nfree];
		struct sim_slot *y = &l->slots[c];
		memcpy(y->b.data, x->b.data, x->b.len);
		y->b.len = x->b.len;
		y->dst = dst;
		y->arrive = x->arrive + 1 + rnd(l) % 1000;
		y->order = l->order++;
		l->st.duplicated++;
		heap_push(l, c);
	}
	heap_push(l, s);
}

/* ---- the ops table ---- */

static int sim_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf)
{
	const char *slash = strrchr(dev, '/');
	if (!slash || slash == dev || !slash[1] || (size_t)(slash - dev) >= SIM_NAME_MAX) {
		pp_err("sim: \"%s\" is not NAME/INDEX", dev);
		return -EINVAL;
	}
	char *end;
	unsigned long idx = strtoul(slash + 1, &end, 10);
	if (*end || slash[1] < '0' || slash[1] > '9') {
		pp_err("sim: bad port index in \"%s\"", dev);
		return -EINVAL;
	}
	if (conf->nb_queues != 1) {
		pp_err("sim: one queue per port, %u asked", conf->nb_queues);
		return -EINVAL;
	}
	char name[SIM_NAME_MAX];
	memcpy(name, dev, (size_t)(slash - dev));
	name[slash - dev] = 0;
	int rc = -ENODEV;
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < SIM_MAX_LINKS; i++) {
		struct pp_sim_link *l = registry[i];
		if (!l || strcmp(l->name, name))
			continue;
		if (idx >= l->nb_ports)
			break;
		struct sim_port *p = &l->ports[idx];
		lock(l); /* the link's other ports deliver to it under this lock */
		if (p->open) {
			rc = -EBUSY;
		} else {
			p->open = 1;
			p->head = p->tail = 0;
			memset(&p->st, 0, sizeof(p->st));
			*port = &p->base;
			rc = 0;
		}
		unlock(l);
		break;
	}
	pthread_mutex_unlock(&reg_lock);
	if (rc == -ENODEV)
		pp_err("sim: no link \"%s\" with port %lu", name, idx);
	else if (rc == -EBUSY)
		pp_err("sim: port %s is already open", dev);
	return rc;
}

static void sim_close(struct pp_port *port)
{
	struct sim_port *p = (struct sim_port *)port;
	pthread_mutex_lock(&reg_lock);
	lock(p->link);
	while (p->head != p->tail)
		slot_free(p->link, p->ring[p->head++ & (SIM_RX_DEPTH - 1)]);
	if (p->efd >= 0)
		close(p->efd);
	p->efd = -1;
	p->open = 0;
	unlock(p->link);
	pthread_mutex_unlock(&reg_lock);
}

static int sim_info(struct pp_port *port, struct pp_port_info *info)
{
	struct sim_port *p = (struct sim_port *)port;
	memset(info, 0, sizeof(*info));
	info->mac[0] = 0x02;
	info->mac[5] = (uint8_t)p->index;
	info->mtu = p->link->conf.mtu;
	info->nb_queues = 1;
	info->buf_cap = p->link->buf_cap;
	info->link_up = 1;
	info->speed_mbps = (uint32_t)(p->link->conf.rate_bps / 1000000);
	strcpy(info->driver, "sim");
	return 0;
}

static int sim_stats(struct pp_port *port, struct pp_port_stats *st)
{
	*st = ((struct sim_port *)port)->st;
	return 0;
}

static unsigned sim_alloc(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct sim_port *p = (struct sim_port *)port;
	struct pp_sim_link *l = p->link;
	unsigned i;
	lock(l);
	for (i = 0; i < n && l->nfree; i++) {
		struct sim_slot *s = &l->slots[l->free[--l->nfree]];
		s->b.len = 0;
		s->b.ts_ns = 0;
		bufs[i] = &s->b;
	}
	if (i < n)
		p->st.alloc_failed++;
	unlock(l);
	return i;
}

static uint32_t slot_of(const struct pp_sim_link *l, const struct pp_buf *b)
{
	return (uint32_t)((const struct sim_slot *)b->priv - l->slots);
}

static void sim_free(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct pp_sim_link *l = ((struct sim_port *)port)->link;
	lock(l);
	for (unsigned i = 0; i < n; i++)
		slot_free(l, slot_of(l, bufs[i]));
	unlock(l);
}

static unsigned sim_rx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs, unsigned n)
{
	struct sim_port *p = (struct sim_port *)port;
	struct pp_sim_link *l = p->link;
	if (queue != 0)
		return 0;
	lock(l);
	deliver_due(l);
	unsigned i;
	for (i = 0; i < n && p->head != p->tail; i++) {
		struct sim_slot *s = &l->slots[p->ring[p->head++ & (SIM_RX_DEPTH - 1)]];
		s->b.ts_ns = l->now;
		bufs[i] = &s->b;
		p->st.rx_frames++;
		p->st.rx_bytes += s->b.len;
	}
	if (i && p->head == p->tail)
		efd_clear(p);
	unlock(l);
	return i;
}

static unsigned sim_tx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs, unsigned n)
{
	struct sim_port *p = (struct sim_port *)port;
	struct pp_sim_link *l = p->link;
	if (queue != 0)
		return 0;
	lock(l);
	for (unsigned i = 0; i < n; i++) {
		struct pp_buf *b = bufs[i];
		uint32_t s = slot_of(l, b);
		if (b->len < PP_ETH_HLEN || b->len > (uint32_t)l->conf.mtu + PP_ETH_HLEN) {
			p->st.tx_failed++;
			slot_free(l, s);
			continue;
		}
		p->st.tx_frames++;
		p->st.tx_bytes += b->len;
		static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
		static const uint8_t base[5] = {0x02, 0, 0, 0, 0};
		if (!memcmp(b->data, bcast, 6)) {
			for (unsigned d = 0; d < l->nb_ports; d++) {
				if (d == p->index || !l->ports[d].open)
					continue;
				if (!l->nfree) {
					l->st.overflow++;
					continue;
				}
				uint32_t c = l->free[--l->nfree];
				memcpy(l->slots[c].b.data, b->data, b->len);
				l->slots[c].b.len = b->len;
				launch(l, p, c, d);
			}
			slot_free(l, s);
		} else if (!memcmp(b->data, base, 5) && b->data[5] < l->nb_ports &&
			   b->data[5] != p->index) {
			launch(l, p, s, b->data[5]);
		} else {
			l->st.no_dest++;
			slot_free(l, s);
		}
	}
	deliver_due(l);
	unlock(l);
	return n;
}

/* An eventfd made on the first call, readable while the port's ring holds
 * frames. Frames still in flight (delay_ns, a rate limit) wake nobody until
 * the link's time reaches them. Errors: -errno of eventfd. */
static int sim_wait_fd(struct pp_port *port)
{
	struct sim_port *p = (struct sim_port *)port;
	int rc;
	lock(p->link);
	if (p->efd < 0) {
		p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (p->efd >= 0 && p->head != p->tail)
			efd_set(p);
	}
	rc = p->efd >= 0 ? p->efd : -errno;
	unlock(p->link);
	return rc;
}

const struct pp_port_ops pp_port_ops_sim = {
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .info = sim_info,
    .stats = sim_stats,
    .alloc = sim_alloc,
    .free = sim_free,
    .rx_burst = sim_rx_burst,
    .tx_burst = sim_tx_burst,
    .wait_fd = sim_wait_fd,
};

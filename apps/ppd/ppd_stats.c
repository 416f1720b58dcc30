/* SPDX-License-Identifier: BSD-3-Clause */
/* ppd --stats: the handlers' counters as a table or as JSON (read while
 * they run: every counter has one writer and is read with a relaxed load). */
#include <stddef.h>
#include <stdio.h>

#include "pp_counters.h"
#include "pp_json.h"
#include "ppd.h"

static const char *const drop_names[PPD_DROP_COUNT] = {
    "no_rank", "rank_full", "bad_frame", "spoof", "bad_range", "dead", "stale",
};

void ppd_stats_format(const struct ppd *d, char *buf, size_t len)
{
	size_t o = 0;
#define OUT(...)                                                                                   \
	do {                                                                                       \
		if (o < len)                                                                       \
			o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__);                      \
	} while (0)
	int nranks = 0;
	for (int i = 0; i < PPD_MAX_RANKS; i++)
		nranks += atomic_load(&d->ranks[i].state) == PPD_RANK_ACTIVE;
	int stuck = 0;
	for (int i = 0; i < PPD_STUCK; i++)
		stuck += atomic_load(&d->stuck[i].used);
	OUT("ppd: %d handler(s), %d rank(s) attached, port %s, copies_abandoned=%llu "
	    "copies_held=%d\n",
	    d->nh, nranks, d->info.driver, (unsigned long long)atomic_load(&d->abandoned), stuck);
	OUT("%-7s %5s %5s %10s %10s %10s %10s %9s %9s %10s %6s %5s  %s\n", "handler", "core",
	    "ranks", "nic_rx", "nic_tx", "from_rank", "to_rank", "loopback", "zerocopy", "pulls",
	    "busy%", "queue", "drops");
	for (int i = 0; i < d->nh; i++) {
		const struct ppd_counters *c = &d->h[i].c;
		uint64_t run = __atomic_load_n(&c->run_ns, __ATOMIC_RELAXED);
		uint64_t busy = __atomic_load_n(&c->busy_ns, __ATOMIC_RELAXED);
		OUT("%-7d %5d %5d %10llu %10llu %10llu %10llu %9llu %9llu %10llu %6.1f %5llu  ", i,
		    d->h[i].core, d->h[i].nhome,
		    (unsigned long long)__atomic_load_n(&c->nic_rx, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->nic_tx, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->from_ranks, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->to_ranks, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->loopback, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->zc_frames, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->pulls, __ATOMIC_RELAXED),
		    run ? 100.0 * (double)busy / (double)run : 0.0,
		    (unsigned long long)__atomic_load_n(&c->queue, __ATOMIC_RELAXED));
		for (int k = 0; k < PPD_DROP_COUNT; k++)
			OUT("%s%s=%llu", k ? " " : "", drop_names[k],
			    (unsigned long long)__atomic_load_n(&c->drops[k], __ATOMIC_RELAXED));
		OUT(" dozes=%llu",
		    (unsigned long long)__atomic_load_n(&c->dozes, __ATOMIC_RELAXED));
		OUT(" placed_frames=%llu placed_bytes=%llu place_failed=%llu",
		    (unsigned long long)__atomic_load_n(&c->placed_frames, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->placed_bytes, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->place_failed, __ATOMIC_RELAXED));
		OUT(" pulls_served=%llu pulls_failed=%llu pulls_left=%llu pull_frames=%llu "
		    "pull_retx=%llu flows_evicted=%llu",
		    (unsigned long long)__atomic_load_n(&c->pulls_served, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->pulls_failed, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->pulls_left, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->pull_frames, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->pull_retx, __ATOMIC_RELAXED),
		    (unsigned long long)__atomic_load_n(&c->flows_evicted, __ATOMIC_RELAXED));
		OUT("\n");
	}
#undef OUT
	if (len)
		buf[o < len ? o : len - 1] = '\0';
}

/* The counters of struct ppd_counters by name (drops apart), for JSON. */
static const struct pp_counter_name fields[] = {
#define F(x) PP_COUNTER(struct ppd_counters, x)
    F(nic_rx),	     F(nic_tx),	       F(from_ranks),	F(to_ranks),	  F(loopback),
    F(pulls),	     F(ext_bytes),     F(zc_frames),	F(busy_ns),	  F(run_ns),
    F(queue),	     F(pulls_served),  F(pulls_failed), F(pulls_left),	  F(pull_frames),
    F(pull_retx),    F(flows_evicted), F(pull_jobs),	F(placed_frames), F(placed_bytes),
    F(place_failed), F(dozes),
#undef F
};

/* A counter added to struct ppd_counters must be added above. */
_Static_assert(sizeof(struct ppd_counters) ==
		   (sizeof(fields) / sizeof(fields[0]) + PPD_DROP_COUNT) * sizeof(uint64_t),
	       "every ppd counter is named in apps/ppd/ppd_stats.c");

static uint64_t counter(const struct ppd_counters *c, size_t i)
{
	return pp_counter_get(c, &fields[i]);
}

int ppd_stats_json(const struct ppd *d, FILE *f)
{
	struct pp_json j;
	uint64_t total[sizeof(fields) / sizeof(fields[0])] = {0}, drops[PPD_DROP_COUNT] = {0};
	int nranks = 0;
	for (int i = 0; i < PPD_MAX_RANKS; i++)
		nranks += atomic_load(&d->ranks[i].state) == PPD_RANK_ACTIVE;
	pp_json_begin(&j, f, 0);
	pp_json_object(&j, NULL);
	pp_json_i64(&j, "handlers", d->nh);
	pp_json_i64(&j, "ranks", nranks);
	pp_json_str(&j, "port", d->info.driver);
	pp_json_u64(&j, "mtu", d->info.mtu);
	int stuck = 0;
	for (int i = 0; i < PPD_STUCK; i++)
		stuck += atomic_load(&d->stuck[i].used);
	pp_json_u64(&j, "copies_abandoned", atomic_load(&d->abandoned));
	pp_json_i64(&j, "copies_held", stuck);
	pp_json_array(&j, "handler");
	for (int i = 0; i < d->nh; i++) {
		const struct ppd_counters *c = &d->h[i].c;
		pp_json_object(&j, NULL);
		pp_json_i64(&j, "id", i);
		pp_json_i64(&j, "core", d->h[i].core);
		pp_json_i64(&j, "home_ranks", d->h[i].nhome);
		for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
			uint64_t v = counter(c, k);
			pp_json_u64(&j, fields[k].name, v);
			total[k] += v;
		}
		pp_json_object(&j, "drops");
		for (int k = 0; k < PPD_DROP_COUNT; k++) {
			uint64_t v = __atomic_load_n(&c->drops[k], __ATOMIC_RELAXED);
			pp_json_u64(&j, drop_names[k], v);
			drops[k] += v;
		}
		pp_json_close(&j);
		pp_json_close(&j);
	}
	pp_json_close(&j);
	pp_json_object(&j, "total");
	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
		pp_json_u64(&j, fields[k].name, total[k]);
	pp_json_object(&j, "drops");
	for (int k = 0; k < PPD_DROP_COUNT; k++)
		pp_json_u64(&j, drop_names[k], drops[k]);
	pp_json_close(&j);
	pp_json_close(&j);
	pp_json_close(&j);
	return pp_json_finish(&j);
}

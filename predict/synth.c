/* SPDX-License-Identifier: BSD-3-Clause */
#include "synth.h"

#include <errno.h>
#include <string.h>

#include "pred_map.h"

const char *const pp_synth_patterns[] = {"cycle", "noisy", "lu", NULL};

/* Buffer addresses of the synthetic receives. */
#define BUF_BASE 0x7f0000100000ull

static uint64_t next_rand(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return pp_pred_mix(*s);
}

static int push(struct pp_trace *t, int32_t src, int32_t tag, uint64_t bytes, unsigned buf,
		uint32_t site)
{
	struct pp_pred_obs o = {
	    .src = src,
	    .tag = tag,
	    .comm = 0,
	    .site = site,
	    .bytes = bytes,
	    .buf = BUF_BASE + (uint64_t)buf * 0x10000,
	};
	return pp_trace_push(t, &o);
}

/* n receives from random sources, tags, sizes and sites. */
static int noise(struct pp_trace *t, unsigned n, uint64_t *rng)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = next_rand(rng);
		int rc = push(t, (int32_t)(r % 16), (int32_t)(100 + (r >> 8) % 20),
			      8u << ((r >> 16) % 12), (unsigned)(32 + (r >> 24) % 8),
			      (uint32_t)(50 + (r >> 32) % 5));
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* One receive of the "cycle" pattern. */
struct cyc_recv {
	int32_t src;	/* neighbour */
	int32_t tag;	/* tag */
	uint32_t bytes; /* size */
	unsigned buf;	/* buffer number */
	uint32_t site;	/* call site */
};

static const struct cyc_recv cycle7[] = {
    {1, 10, 8192, 0, 1}, {2, 10, 8192, 1, 1}, {3, 10, 8192, 2, 1}, {4, 10, 8192, 3, 1},
    {1, 20, 64, 4, 2},	 {3, 20, 64, 4, 2},   {0, 30, 16, 5, 3},
};

static int synth_cycle(unsigned reps, unsigned noise_pct, uint64_t *rng, struct pp_trace *t)
{
	int rc = noise(t, 20, rng);
	for (unsigned r = 0; r < reps && rc == 0; r++) {
		for (size_t i = 0; i < sizeof(cycle7) / sizeof(cycle7[0]) && rc == 0; i++) {
			if (noise_pct && next_rand(rng) % 100 < noise_pct) {
				rc = noise(t, 1, rng);
				continue;
			}
			const struct cyc_recv *c = &cycle7[i];
			rc = push(t, c->src, c->tag, c->bytes, c->buf, c->site);
		}
	}
	return rc ? rc : noise(t, 10, rng);
}

static int synth_lu(unsigned reps, uint64_t *rng, struct pp_trace *t)
{
	int rc = noise(t, 10, rng);
	for (unsigned r = 0; r < reps && rc == 0; r++) {
		for (int half = 0; half < 2 && rc == 0; half++) {
			for (int i = 0; i < 31 && rc == 0; i++)
				rc = push(t, 1, 1, 40, 0, 1);
			for (int i = 0; i < 31 && rc == 0; i++)
				rc = push(t, 2, 1, 40, 1, 1);
			if (rc == 0)
				rc = push(t, half ? 2 : 1, 2, 40960, (unsigned)half, 2);
		}
	}
	return rc;
}

int pp_synth(const char *pattern, unsigned reps, uint64_t seed, struct pp_trace *t)
{
	uint64_t rng = seed;
	if (strcmp(pattern, "cycle") == 0)
		return synth_cycle(reps ? reps : 500, 0, &rng, t);
	if (strcmp(pattern, "noisy") == 0)
		return synth_cycle(reps ? reps : 500, 2, &rng, t);
	if (strcmp(pattern, "lu") == 0)
		return synth_lu(reps ? reps : 60, &rng, t);
	return -ENOENT;
}

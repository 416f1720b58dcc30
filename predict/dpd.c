/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Periodicity-based predictor: the dynamic periodicity detector (DPD) of the
 * long-term prediction paper, section 3.3. For each delay m (1..M) the
 * distance
 *     d(m) = sign( sum_{i=0}^{N-1} |x[t-i] != x[t-i-m]| )
 * compares the last N ids with the same ids shifted by m; d(m) = 0 when the
 * window repeats with period m. The period is the smallest such m whose
 * window holds at least one full period (at the start, while fewer than N
 * pairs exist, the sum runs over the pairs there are). The id k ahead is then
 * the one a whole number of periods before it.
 *
 * Incremental, by the delays that are clean: a delay m is clean when no
 * pair of its window differs (the paper's sum is 0). Each observation
 * compares the new pair only for the clean delays (a bitmap), and a delay
 * whose pair differs at s cannot be clean again before s + N, when that
 * pair leaves the window: it is put in a wheel of N buckets for then, and
 * looked at again only then, by a scan back from that receive to the
 * latest pair that still differs (reschedules it) or through the window
 * (clean again). On a stream with a period p only p's multiples stay clean;
 * the others differ within a few receives of any point, so a scan is short
 * and each delay is looked at about once in N receives. The comparisons use
 * the ids folded to 32 bits (a false match costs at worst a wrong period,
 * not memory safety), kept newest first in a power-of-two ring of R >= N +
 * M + 1 entries written twice (at p and p + R), so x[t], x[t-1], ... and
 * x[t-m], x[t-m-1], ... are contiguous forward reads. M <= N, as in the
 * paper.
 *
 * Locked: past the first N + M receives, once a period p is found it is
 * followed while each new id equals the one p before it: that one
 * comparison is all an observation does then, and the clean set and the
 * wheel are left as they were. The first id that breaks the period unlocks:
 * both are made again from the window (a scan back per delay, ending at
 * the newest pair that differs: for p's multiples the new one). While
 * locked the period is p where the exact detector might name a smaller one
 * the window also repeats with (a stream turned constant); both then
 * predict the same ids, since a window with both periods repeats with
 * their gcd.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pred_impl.h"

struct dpd_pred {
	struct pp_pred base; /* common head */
	uint32_t N;	     /* window */
	uint32_t M;	     /* longest period, <= N */
	uint32_t R;	     /* ring size, a power of two */
	uint32_t period;     /* detected period, 0 none */
	int locked;	     /* steady and following period: the rest stale */
	uint64_t t;	     /* ids observed */
	uint64_t *ids;	     /* R ids, x[s] at s mod R (what predict returns) */
	uint32_t *fold;	     /* 2R folded ids, newest first: the ring and its mirror */
	uint64_t *clean;     /* bit m (1..M): delay m clean (or no pair yet) */
	int32_t *wheel;	     /* N buckets: delays to look at when t mod N is there */
	int32_t *next;	     /* M + 1 links of the wheel's lists, -1 ends */
};

static void dpd_destroy(struct pp_pred *p)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	free(d->ids);
	free(d->fold);
	free(d->clean);
	free(d->wheel);
	free(d->next);
	free(d);
}

static size_t clean_words(const struct dpd_pred *d)
{
	return d->M / 64 + 1;
}

/* Every delay clean (none has a pair yet), the wheel empty. */
static void reset(struct dpd_pred *d)
{
	memset(d->clean, 0, clean_words(d) * sizeof(*d->clean));
	for (uint32_t m = 1; m <= d->M; m++)
		d->clean[m / 64] |= 1ull << (m % 64);
	memset(d->wheel, 0xff, d->N * sizeof(*d->wheel));
}

static int dpd_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	if (prm->max_period > prm->window)
		return -EINVAL;
	struct dpd_pred *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->N = prm->window;
	d->M = prm->max_period;
	d->R = 1;
	while (d->R < d->N + d->M + 1)
		d->R <<= 1;
	d->ids = calloc(d->R, sizeof(*d->ids));
	d->fold = calloc(2 * (size_t)d->R, sizeof(*d->fold));
	d->clean = calloc(clean_words(d), sizeof(*d->clean));
	d->wheel = malloc(d->N * sizeof(*d->wheel));
	d->next = malloc((d->M + 1) * sizeof(*d->next));
	if (!d->ids || !d->fold || !d->clean || !d->wheel || !d->next) {
		dpd_destroy(&d->base);
		return -ENOMEM;
	}
	reset(d);
	*out = &d->base;
	return 0;
}

/* Where x[s] sits in fold: newest first, so x[s-i] is at that index + i. */
static inline uint32_t fold_pos(const struct dpd_pred *d, uint64_t s)
{
	return d->R - 1 - (uint32_t)(s & (d->R - 1));
}

typedef uint32_t v4u __attribute__((vector_size(16))); /* four ids at once */

/*
 * The smallest i < n with a[i] != a[i + m] (x[t-i] against x[t-i-m] when a
 * is x[t]'s place), or n if none: four at a time.
 */
static uint32_t first_diff(const uint32_t *a, uint32_t m, uint32_t n)
{
	uint32_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4u x, y;
		memcpy(&x, a + i, sizeof(x));
		memcpy(&y, a + i + m, sizeof(y));
		v4u z = x != y;
		if (z[0] | z[1] | z[2] | z[3])
			break;
	}
	for (; i < n; i++)
		if (a[i] != a[i + m])
			return i;
	return n;
}

/* Delay m has a pair that differs at s: look at it again at s + N. */
static void schedule(struct dpd_pred *d, uint32_t m, uint64_t s)
{
	d->clean[m / 64] &= ~(1ull << (m % 64));
	uint32_t b = (uint32_t)((s + d->N) % d->N);
	d->next[m] = d->wheel[b];
	d->wheel[b] = (int32_t)m;
}

/* Look at delay m's window at t (t >= m): clean, or scheduled by the newest
 * pair in it that differs. */
static void look(struct dpd_pred *d, uint32_t m, uint64_t t)
{
	uint64_t pairs = t + 1 - m < d->N ? t + 1 - m : d->N;
	uint32_t i = first_diff(d->fold + fold_pos(d, t), m, (uint32_t)pairs);
	if (i < pairs)
		schedule(d, m, t - i);
	else
		d->clean[m / 64] |= 1ull << (m % 64);
}

/* The smallest clean delay in 1..top, or 0. */
static uint32_t first_clean(const struct dpd_pred *d, uint32_t top)
{
	for (uint32_t w = 0; w <= top / 64; w++) {
		uint64_t b = d->clean[w]; /* bit 0 is never set */
		if (b) {
			uint32_t m = w * 64 + (uint32_t)__builtin_ctzll(b);
			return m <= top ? m : 0;
		}
	}
	return 0;
}

static void dpd_observe(struct pp_pred *p, uint64_t x, uint32_t site)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	(void)site;
	uint64_t t = d->t++;
	uint32_t pos = fold_pos(d, t);
	uint32_t fx = (uint32_t)(x ^ x >> 32);
	d->ids[t & (d->R - 1)] = x;
	d->fold[pos] = fx;
	d->fold[pos + d->R] = fx;

	if (d->locked) {
		if (fx == d->fold[pos + d->period])
			return;
		/* unlock: the clean set and the wheel made again at t */
		d->locked = 0;
		memset(d->clean, 0, clean_words(d) * sizeof(*d->clean));
		memset(d->wheel, 0xff, d->N * sizeof(*d->wheel));
		for (uint32_t m = 1; m <= d->M; m++)
			look(d, m, t);
	} else {
		/* the delays due now, then the new pair of every clean one */
		uint32_t b = (uint32_t)(t % d->N);
		int32_t m = d->wheel[b];
		d->wheel[b] = -1;
		while (m >= 0) {
			int32_t n = d->next[m];
			look(d, (uint32_t)m, t);
			m = n;
		}
		uint32_t top = t < d->M ? (uint32_t)t : d->M; /* delays with a pair */
		for (uint32_t w = 0; w <= top / 64; w++) {
			uint64_t bits = d->clean[w];
			while (bits) {
				uint32_t c = w * 64 + (uint32_t)__builtin_ctzll(bits);
				bits &= bits - 1;
				if (c > top)
					break;
				if (d->fold[pos + c] != fx)
					schedule(d, c, t);
			}
		}
	}
	/* The smallest clean m whose window holds a whole period: m has
	 * min(t + 1 - m, N) pairs, at least m while m <= (t + 1) / 2 and
	 * m <= N (longer delays have even fewer pairs). */
	uint64_t top = (t + 1) / 2;
	d->period = first_clean(d, top < d->M ? (uint32_t)top : d->M);
	d->locked = d->period != 0 && t >= (uint64_t)d->N + d->M;
}

static unsigned dpd_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	(void)next_site;
	uint32_t per = d->period;
	if (per == 0)
		return 0;
	uint64_t s = d->t - per; /* x[t-1+j] = x[t-1+j-per*ceil(j/per)] */
	uint32_t at = (uint32_t)(s & (d->R - 1));
	if (per >= k && at + k <= d->R) { /* one run, no wrap: the usual case */
		memcpy(ids, &d->ids[at], k * sizeof(*ids));
		return k;
	}
	for (unsigned j = 0; j < k; j++) {
		ids[j] = d->ids[s & (d->R - 1)];
		s = s + 1 == d->t ? d->t - per : s + 1;
	}
	return k;
}

static size_t dpd_mem(const struct pp_pred *p)
{
	const struct dpd_pred *d = (const struct dpd_pred *)p;
	return sizeof(*d) + d->R * sizeof(*d->ids) + 2 * (size_t)d->R * sizeof(*d->fold) +
	       clean_words(d) * sizeof(*d->clean) + d->N * sizeof(*d->wheel) +
	       (d->M + 1) * sizeof(*d->next);
}

unsigned pp_pred_dpd_period(const struct pp_pred *p)
{
	return p->ops == &pp_pred_dpd_ops ? ((const struct dpd_pred *)p)->period : 0;
}

const struct pp_pred_ops pp_pred_dpd_ops = {
    .name = "dpd",
    .create = dpd_create,
    .observe = dpd_observe,
    .predict = dpd_predict,
    .destroy = dpd_destroy,
    .mem = dpd_mem,
};

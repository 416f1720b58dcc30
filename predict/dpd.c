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
 * Incremental: cnt[m] holds the sum itself (the number of mismatching pairs in
 * the window). An observation adds the pair (x[t], x[t-m]) and removes the
 * pair leaving the window (x[t-N], x[t-N-m]) for every m: O(M) per
 * observation instead of O(N*M). The comparisons use the ids folded to 32
 * bits (a false match costs at worst a wrong period, not memory safety),
 * kept newest first in a power-of-two ring of R >= N + M + 1 entries written
 * twice (at p and p + R), so x[t-1..t-M] is one contiguous forward read and
 * the loops vectorise. M <= N, as in the paper.
 *
 * Locked: past the first N + M receives, once a period p is found the window
 * is p-periodic, and it stays so while each new id equals the one p before
 * it: that one comparison is all an observation does then (O(1) instead of
 * O(M)), and the counts are left as they were. The first id that breaks the
 * period unlocks: the counts catch up on the receives they missed, or when
 * that is more work, are made again over the window (O(N*M) for a lock that
 * held long), and the detector goes on as above. A lock costs at worst
 * what the receives it skipped would have. While locked the period is
 * p where the exact detector might name a smaller one the window also
 * repeats with (a stream turned constant); both then predict the same ids,
 * since a window with both periods repeats with their gcd.
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
	int locked;	     /* steady and following period: counts stale ... */
	uint64_t lock_t;     /* ... from this receive on */
	uint64_t t;	     /* ids observed */
	uint64_t *ids;	     /* R ids, x[s] at s mod R (what predict returns) */
	uint32_t *fold;	     /* 2R folded ids, newest first: the ring and its mirror */
	uint32_t *cnt;	     /* M + 1 mismatch counts, cnt[m] for delay m */
};

static void dpd_destroy(struct pp_pred *p)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	free(d->ids);
	free(d->fold);
	free(d->cnt);
	free(d);
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
	d->cnt = calloc(d->M + 1, sizeof(*d->cnt));
	if (!d->ids || !d->fold || !d->cnt) {
		dpd_destroy(&d->base);
		return -ENOMEM;
	}
	*out = &d->base;
	return 0;
}

/* Where x[s] sits in fold: newest first, so x[s-m] is at that index + m. */
static inline uint32_t fold_pos(const struct dpd_pred *d, uint64_t s)
{
	return d->R - 1 - (uint32_t)(s & (d->R - 1));
}

typedef uint32_t v4u __attribute__((vector_size(16))); /* four counts at once */

/*
 * cnt[m] += sign * (f != past[m]) for m in 1..top, four at a time (the
 * compilers' cheap vectoriser leaves loops with a variable count scalar).
 */
static void update_pairs(uint32_t *cnt, const uint32_t *past, uint32_t f, uint32_t top, int add)
{
	uint32_t m = 1;
	for (; m + 3 <= top; m += 4) {
		v4u p, c;
		memcpy(&p, past + m, sizeof(p));
		memcpy(&c, cnt + m, sizeof(c));
		v4u v = p ^ f;
		v = (v | (0u - v)) >> 31; /* 1 where they differ */
		c = add ? c + v : c - v;
		memcpy(cnt + m, &c, sizeof(c));
	}
	for (; m <= top; m++) {
		uint32_t v = past[m] ^ f;
		v = (v | (0u - v)) >> 31;
		cnt[m] = add ? cnt[m] + v : cnt[m] - v;
	}
}

/* The smallest m in 1..top with cnt[m] == 0, or 0; four at a time. */
static uint32_t first_zero(const uint32_t *cnt, uint32_t top)
{
	uint32_t m = 1;
	for (; m + 3 <= top; m += 4) {
		v4u c;
		memcpy(&c, cnt + m, sizeof(c));
		v4u z = c == 0;
		if (z[0] | z[1] | z[2] | z[3])
			break;
	}
	for (; m <= top; m++)
		if (cnt[m] == 0)
			return m;
	return 0;
}

/*
 * Steady state in one pass: cnt[m] += (f != past[m]) - (g != old[m]) for m
 * in 1..M, and the smallest m with cnt[m] == 0 after it (or 0).
 */
static uint32_t update_steady(uint32_t *cnt, const uint32_t *past, uint32_t f, const uint32_t *old,
			      uint32_t g, uint32_t M)
{
	uint32_t m = 1, zero = 0;
	for (; m + 3 <= M; m += 4) {
		v4u p, o, c;
		memcpy(&p, past + m, sizeof(p));
		memcpy(&o, old + m, sizeof(o));
		memcpy(&c, cnt + m, sizeof(c));
		v4u a = p ^ f, r = o ^ g;
		c = c + ((a | (0u - a)) >> 31) - ((r | (0u - r)) >> 31);
		memcpy(cnt + m, &c, sizeof(c));
		if (!zero) {
			v4u z = c == 0;
			if (z[0] | z[1] | z[2] | z[3])
				zero = z[0] ? m : z[1] ? m + 1 : z[2] ? m + 2 : m + 3;
		}
	}
	for (; m <= M; m++) {
		uint32_t a = past[m] ^ f, r = old[m] ^ g;
		cnt[m] = cnt[m] + ((a | (0u - a)) >> 31) - ((r | (0u - r)) >> 31);
		if (!zero && cnt[m] == 0)
			zero = m;
	}
	return zero;
}

/* Unlock at x[t]: the counts brought to the window that ends there, by
 * the steady updates they missed (each adds and removes a pair per delay)
 * or, when those are more work or reach back past the ring, made again
 * (a pair per delay for each of the N in the window). Returns the period. */
static uint32_t unlock(struct dpd_pred *d, uint64_t t)
{
	uint64_t missed = t - d->lock_t + 1;
	d->locked = 0;
	if (2 * missed < d->N && d->N + d->M + missed < d->R) {
		uint32_t per = 0;
		for (uint64_t s = d->lock_t; s <= t; s++) {
			const uint32_t *at = d->fold + fold_pos(d, s);
			const uint32_t *old = d->fold + fold_pos(d, s - d->N);
			per = update_steady(d->cnt, at, at[0], old, old[0], d->M);
		}
		return per;
	}
	memset(d->cnt, 0, (d->M + 1) * sizeof(*d->cnt));
	for (uint32_t i = 0; i < d->N; i++) {
		const uint32_t *at = d->fold + fold_pos(d, t - i);
		update_pairs(d->cnt, at, at[0], d->M, 1);
	}
	return first_zero(d->cnt, d->M);
}

static void dpd_observe(struct pp_pred *p, uint64_t x, uint32_t site)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	(void)site;
	uint64_t t = d->t++;
	uint32_t *cnt = d->cnt;
	uint32_t pos = fold_pos(d, t);
	uint32_t fx = (uint32_t)(x ^ x >> 32);
	d->ids[t & (d->R - 1)] = x;
	d->fold[pos] = fx;
	d->fold[pos + d->R] = fx;

	if (t >= (uint64_t)d->N + d->M) { /* steady state: every pair there */
		if (d->locked && fx == d->fold[pos + d->period])
			return;
		if (d->locked) {
			d->period = unlock(d, t);
		} else {
			const uint32_t *old = d->fold + fold_pos(d, t - d->N);
			d->period = update_steady(cnt, d->fold + pos, fx, old, old[0], d->M);
		}
		d->locked = d->period != 0;
		d->lock_t = t + 1;
		return;
	}
	/* Add the pairs (x[t], x[t-m]). */
	update_pairs(cnt, d->fold + pos, fx, t < d->M ? (uint32_t)t : d->M, 1);
	/* Remove the pairs (x[t-N], x[t-N-m]) leaving the window. */
	if (t > d->N) {
		uint64_t o = t - d->N;
		const uint32_t *old = d->fold + fold_pos(d, o);
		update_pairs(cnt, old, old[0], o < d->M ? (uint32_t)o : d->M, 0);
	}

	/* The smallest m whose window is clean and holds a whole period. */
	d->period = 0;
	if (t + 1 >= (uint64_t)d->N + d->M) { /* steady state: N pairs for every m */
		d->period = first_zero(cnt, d->M);
		return;
	}
	for (uint32_t m = 1; m <= d->M; m++) {
		uint64_t pairs = t + 1 > m ? t + 1 - m : 0;
		if (pairs > d->N)
			pairs = d->N;
		if (pairs < m)
			break; /* longer delays have even fewer pairs */
		if (cnt[m] == 0) {
			d->period = m;
			break;
		}
	}
}

static unsigned dpd_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	(void)next_site;
	uint32_t per = d->period;
	if (per == 0)
		return 0;
	uint64_t s = d->t - per; /* x[t-1+j] = x[t-1+j-per*ceil(j/per)] */
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
	       (d->M + 1) * sizeof(*d->cnt);
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

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
 * observation instead of O(N*M). The history is a power-of-two ring of R >=
 * N + M + 1 ids written twice (at p and p + R) so x[t-m] is one contiguous
 * backwards read and the loops vectorise.
 */
#include <errno.h>
#include <stdlib.h>

#include "pred_impl.h"

struct dpd_pred {
	struct pp_pred base; /* common head */
	uint32_t N;          /* window */
	uint32_t M;          /* longest period */
	uint32_t R;          /* ring size, a power of two */
	uint32_t period;     /* detected period, 0 none */
	uint64_t t;          /* ids observed */
	uint64_t *hist;      /* 2R ids: the ring and its mirror */
	uint32_t *cnt;       /* M + 1 mismatch counts, cnt[m] for delay m */
};

static void dpd_destroy(struct pp_pred *p)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	free(d->hist);
	free(d->cnt);
	free(d);
}

static int dpd_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	struct dpd_pred *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->N = prm->window;
	d->M = prm->max_period;
	d->R = 1;
	while (d->R < d->N + d->M + 1)
		d->R <<= 1;
	d->hist = calloc(2 * (size_t)d->R, sizeof(*d->hist));
	d->cnt = calloc(d->M + 1, sizeof(*d->cnt));
	if (!d->hist || !d->cnt) {
		dpd_destroy(&d->base);
		return -ENOMEM;
	}
	*out = &d->base;
	return 0;
}

static void dpd_observe(struct pp_pred *p, uint64_t x, uint32_t site)
{
	struct dpd_pred *d = (struct dpd_pred *)p;
	(void)site;
	uint64_t t = d->t++;
	uint32_t base = (uint32_t)(t & (d->R - 1)) + d->R;
	uint64_t *h = d->hist;
	uint32_t *cnt = d->cnt;
	h[base] = x;
	h[base - d->R] = x;

	uint32_t top = t < d->M ? (uint32_t)t : d->M;
	for (uint32_t m = 1; m <= top; m++)
		cnt[m] += x != h[base - m];
	if (t >= (uint64_t)d->N + 1) {
		uint64_t o = t - d->N;
		uint32_t ob = (uint32_t)(o & (d->R - 1)) + d->R;
		uint64_t xo = h[ob];
		top = o < d->M ? (uint32_t)o : d->M;
		for (uint32_t m = 1; m <= top; m++)
			cnt[m] -= xo != h[ob - m];
	}

	d->period = 0;
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
	uint32_t last = (uint32_t)((d->t - 1) & (d->R - 1)) + d->R;
	uint32_t back = per - 1;
	for (unsigned j = 0; j < k; j++) {
		ids[j] = d->hist[last - back];
		back = back ? back - 1 : per - 1;
	}
	return k;
}

static size_t dpd_mem(const struct pp_pred *p)
{
	const struct dpd_pred *d = (const struct dpd_pred *)p;
	return sizeof(*d) + 2 * (size_t)d->R * sizeof(*d->hist) + (d->M + 1) * sizeof(*d->cnt);
}

const struct pp_pred_ops pp_pred_dpd_ops = {
	.name = "dpd",
	.create = dpd_create,
	.observe = dpd_observe,
	.predict = dpd_predict,
	.destroy = dpd_destroy,
	.mem = dpd_mem,
};

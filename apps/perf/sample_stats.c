/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>

#include "perf.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples: the smallest value with at least
 * p % of the samples at or below it. */
static double percentile(const double *s, size_t n, double p)
{
	size_t rank = (size_t)((p / 100.0) * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return s[rank - 1];
}

int pp_perf_summarise(double *s, size_t n, struct pp_perf_summary *out)
{
	if (n == 0 || !s || !out)
		return -EINVAL;
	qsort(s, n, sizeof(*s), cmp_double);
	/* The paper drops the first and last 10 % by execution time. */
	size_t cut = n / 10, m = n - 2 * cut;
	double sum = 0;
	for (size_t i = cut; i < n - cut; i++)
		sum += s[i];
	out->mid80 = sum / (double)m;
	out->median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	out->p99 = percentile(s, n, 99.0);
	out->min = s[0];
	out->max = s[n - 1];
	return 0;
}

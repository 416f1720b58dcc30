/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* One number with an optional k/m/g suffix; *end is left after it. */
static int parse_value(const char *s, const char **end, uint64_t *out)
{
	char *e;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (*e) {
	case 'k':
	case 'K':
		shift = 10;
		e++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		e++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		e++;
		break;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	*end = e;
	return 0;
}

static int push(uint64_t *out, int max, int *n, uint64_t v)
{
	if (*n >= max)
		return -E2BIG;
	out[(*n)++] = v;
	return 0;
}

static int parse_range(const char *s, uint64_t *out, int max, int *n)
{
	uint64_t a, b, step = 2;
	int geometric = 1, rc;
	const char *p;

	if ((rc = parse_value(s, &p, &a)) || *p++ != ':' || (rc = parse_value(p, &p, &b)))
		return -EINVAL;
	if (*p == ':') {
		p++;
		if (*p == 'x')
			geometric = 1;
		else if (*p == '+')
			geometric = 0;
		else
			return -EINVAL;
		if ((rc = parse_value(p + 1, &p, &step)))
			return -EINVAL;
		if ((geometric && step < 2) || (!geometric && step < 1))
			return -EINVAL;
	}
	if (*p || a > b)
		return -EINVAL;
	uint64_t v = a;
	if (v == 0) {
		if ((rc = push(out, max, n, 0)))
			return rc;
		v = geometric ? 1 : step;
	}
	for (; v <= b; v = geometric ? v * step : v + step) {
		if ((rc = push(out, max, n, v)))
			return rc;
		if (v > UINT64_MAX / step) /* the next value would overflow */
			break;
	}
	return 0;
}

int pp_perf_parse_list(const char *spec, uint64_t *out, int max)
{
	if (!spec || !*spec)
		return -EINVAL;
	char *copy = strdup(spec), *save = NULL;
	if (!copy)
		return -ENOMEM;
	int n = 0, rc = 0;
	for (char *item = strtok_r(copy, ",", &save); item && !rc;
	     item = strtok_r(NULL, ",", &save)) {
		if (strchr(item, ':')) {
			rc = parse_range(item, out, max, &n);
		} else {
			uint64_t v;
			const char *end;
			rc = parse_value(item, &end, &v);
			if (!rc && *end)
				rc = -EINVAL;
			if (!rc)
				rc = push(out, max, &n, v);
		}
	}
	free(copy);
	return rc ? rc : n;
}

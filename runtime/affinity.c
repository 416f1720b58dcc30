/* SPDX-License-Identifier: BSD-3-Clause */
#include "affinity.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

static int parse_num(const char **p, int *out)
{
	char *end;
	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	long v = strtol(*p, &end, 10);
	if (v >= PP_MAX_CORES)
		return -E2BIG;
	*out = (int)v;
	*p = end;
	return 0;
}

int pp_corelist_parse(const char *list, int *cores, int max)
{
	unsigned char seen[PP_MAX_CORES] = {0};
	const char *p = list;
	int n = 0, rc;

	if (!list || !*list)
		return -EINVAL;
	for (;;) {
		int a, b;
		if ((rc = parse_num(&p, &a)))
			return rc;
		b = a;
		if (*p == '-') {
			p++;
			if ((rc = parse_num(&p, &b)))
				return rc;
			if (b < a)
				return -EINVAL;
		}
		for (int c = a; c <= b; c++) {
			if (seen[c])
				return -EINVAL;
			if (n == max)
				return -E2BIG;
			seen[c] = 1;
			cores[n++] = c;
		}
		if (*p == '\0')
			return n;
		if (*p++ != ',')
			return -EINVAL;
	}
}

/* The topology is loaded once per call: pinning is rare and cold. */
static int with_topology(hwloc_topology_t *t)
{
	if (hwloc_topology_init(t) < 0)
		return -ENOMEM;
	if (hwloc_topology_load(*t) < 0) {
		hwloc_topology_destroy(*t);
		return -ENOMEM;
	}
	return 0;
}

int pp_affinity_ncores(void)
{
	hwloc_topology_t t;
	int rc = with_topology(&t);
	if (rc)
		return rc;
	int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
	hwloc_topology_destroy(t);
	return n;
}

int pp_affinity_pin_self(int core)
{
	hwloc_topology_t t;
	int rc = with_topology(&t);
	if (rc)
		return rc;
	hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, (unsigned)core);
	if (core < 0 || !pu) {
		hwloc_topology_destroy(t);
		return -EINVAL;
	}
	rc = hwloc_set_cpubind(t, pu->cpuset, HWLOC_CPUBIND_THREAD) < 0 ? -errno : 0;
	hwloc_topology_destroy(t);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The node's topology and the default handler placement, from hwloc (ppd
 * --topology, ppd's handlers, pp_info). Cold path. */
#include "topo.h"

#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"

void pp_topo_dev_iface(const char *dev, char *out, size_t len)
{
	const char *p = NULL;
	out[0] = '\0';
	if (!dev)
		return;
	if (strncmp(dev, "pcap:", 5) == 0)
		p = dev + 5;
	else if ((p = strstr(dev, "iface=")))
		p += 6;
	if (!p)
		return;
	size_t n = strcspn(p, ", ");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* The NIC's NUMA node from sysfs, or -1 when unknown (virtual devices). */
static int nic_numa(const char *dev)
{
	char iface[64], path[160];
	pp_topo_dev_iface(dev, iface, sizeof(iface));
	if (!iface[0] || strchr(iface, '/'))
		return -1;
	snprintf(path, sizeof(path), "/sys/class/net/%s/device/numa_node", iface);
	FILE *f = fopen(path, "r");
	int node = -1;
	if (f) {
		if (fscanf(f, "%d", &node) != 1)
			node = -1;
		fclose(f);
	}
	return node;
}

static int load(hwloc_topology_t *t)
{
	if (hwloc_topology_init(t) < 0)
		return -ENOMEM;
	if (hwloc_topology_load(*t) < 0) {
		hwloc_topology_destroy(*t);
		return -EIO;
	}
	return 0;
}

/* One PU per core, on NUMA node numa (all when -1). */
static int pick(hwloc_topology_t t, int numa, int *cores, int max)
{
	int n = 0;
	hwloc_obj_t node = numa >= 0 ? hwloc_get_numanode_obj_by_os_index(t, (unsigned)numa) : NULL;
	int ncore = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
	for (int i = 0; i < ncore && n < max; i++) {
		hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)i);
		if (node && !hwloc_bitmap_intersects(core->cpuset, node->cpuset))
			continue;
		int pu = hwloc_bitmap_first(core->cpuset);
		if (pu >= 0)
			cores[n++] = pu;
	}
	if (n == 0 && node) /* a node without cores (memory only): use them all */
		return pick(t, -1, cores, max);
	return n;
}

int pp_topo_default_cores(const char *dev, int *cores, int max)
{
	hwloc_topology_t t;
	int rc = load(&t);
	if (rc)
		return rc;
	int n = pick(t, nic_numa(dev), cores, max);
	hwloc_topology_destroy(t);
	return n > 0 ? n : -ENODEV;
}

static void print_set(FILE *f, const char *label, hwloc_const_bitmap_t set)
{
	char *s = NULL;
	hwloc_bitmap_list_asprintf(&s, set);
	fprintf(f, "%s%s", label, s ? s : "?");
	free(s);
}

int pp_topo_print(FILE *f, const char *dev, const char *cores, int max)
{
	hwloc_topology_t t;
	int rc = load(&t);
	if (rc)
		return rc;
	int nnuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
	int ncore = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
	int npu = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
	fprintf(f, "machine: %d NUMA node(s), %d core(s), %d logical processor(s)\n", nnuma, ncore,
		npu);
	for (int i = 0; i < nnuma; i++) {
		hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
		fprintf(f, "numa %u: %llu MiB, ", o->os_index,
			(unsigned long long)(o->attr ? o->attr->numanode.local_memory >> 20 : 0));
		print_set(f, "cpus ", o->cpuset);
		fprintf(f, "\n");
	}
	for (int i = 0; i < ncore; i++) {
		hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)i);
		fprintf(f, "core %d: ", i);
		print_set(f, "cpus ", o->cpuset);
		fprintf(f, "\n");
	}
	static const hwloc_obj_type_t caches[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
						  HWLOC_OBJ_L3CACHE};
	for (unsigned k = 0; k < 3; k++) {
		int nc = hwloc_get_nbobjs_by_type(t, caches[k]);
		for (int i = 0; i < nc; i++) {
			hwloc_obj_t o = hwloc_get_obj_by_type(t, caches[k], (unsigned)i);
			fprintf(f, "L%u cache %d: %llu KiB, line %u B, ", k + 1, i,
				(unsigned long long)(o->attr->cache.size >> 10),
				o->attr->cache.linesize);
			print_set(f, "cpus ", o->cpuset);
			fprintf(f, "\n");
		}
	}
	char iface[64];
	pp_topo_dev_iface(dev, iface, sizeof(iface));
	int numa = nic_numa(dev);
	if (!dev)
		fprintf(f, "nic: none given\n");
	else if (numa >= 0)
		fprintf(f, "nic: %s on numa %d\n", iface[0] ? iface : dev, numa);
	else
		fprintf(f, "nic: %s, numa node unknown (virtual device or not in sysfs)\n",
			iface[0] ? iface : dev);

	int list[PP_TOPO_MAX_CORES];
	int n;
	if (max > PP_TOPO_MAX_CORES)
		max = PP_TOPO_MAX_CORES;
	if (cores) {
		n = pp_corelist_parse(cores, list, max);
		if (n < 0) {
			hwloc_topology_destroy(t);
			return n;
		}
	} else {
		n = pick(t, numa, list, max);
	}
	fprintf(f, "placement (%s): %d pull handler(s):", cores ? "--cores" : "default", n);
	for (int i = 0; i < n; i++)
		fprintf(f, " %d->cpu%d", i, list[i]);
	fprintf(f, "\n");
	hwloc_topology_destroy(t);
	return 0;
}

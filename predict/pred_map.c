/* SPDX-License-Identifier: BSD-3-Clause */
#include "pred_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Fresh, empty arrays for cap entries (at most half the buckets) into *m's
 * keys, slots and mask; the rest of *m is the caller's. */
static int alloc_buckets(struct pp_pred_map *m, uint32_t cap)
{
	if (cap == 0 || cap > (1u << 30))
		return -EINVAL;
	uint32_t buckets = 2;
	while (buckets < 2 * (uint64_t)cap)
		buckets <<= 1;
	m->keys = calloc(buckets, sizeof(*m->keys));
	m->slots = calloc(buckets, sizeof(*m->slots));
	if (!m->keys || !m->slots) {
		free(m->keys);
		free(m->slots);
		return -ENOMEM;
	}
	m->mask = buckets - 1;
	m->cap = cap;
	return 0;
}

int pp_pred_map_init(struct pp_pred_map *m, uint32_t cap)
{
	m->n = 0;
	return alloc_buckets(m, cap);
}

int pp_pred_map_grow(struct pp_pred_map *m, uint32_t cap)
{
	if (cap <= m->cap)
		return -EINVAL;
	struct pp_pred_map g = *m;
	int rc = alloc_buckets(&g, cap);
	if (rc < 0)
		return rc;
	for (uint32_t b = 0; b <= m->mask; b++) {
		if (!m->slots[b])
			continue;
		uint32_t d = (uint32_t)pp_pred_mix(m->keys[b]) & g.mask;
		while (g.slots[d])
			d = (d + 1) & g.mask;
		g.keys[d] = m->keys[b];
		g.slots[d] = m->slots[b];
	}
	free(m->keys);
	free(m->slots);
	*m = g;
	return 0;
}

void pp_pred_map_fini(struct pp_pred_map *m)
{
	free(m->keys);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

void pp_pred_map_reset(struct pp_pred_map *m)
{
	memset(m->slots, 0, (size_t)(m->mask + 1) * sizeof(*m->slots));
	m->n = 0;
}

int64_t pp_pred_map_find(const struct pp_pred_map *m, uint64_t key)
{
	for (uint32_t b = (uint32_t)pp_pred_mix(key) & m->mask;; b = (b + 1) & m->mask) {
		if (m->slots[b] == 0)
			return -1;
		if (m->keys[b] == key)
			return (int64_t)m->slots[b] - 1;
	}
}

int64_t pp_pred_map_get(struct pp_pred_map *m, uint64_t key, int *added)
{
	uint32_t b = (uint32_t)pp_pred_mix(key) & m->mask;
	for (; m->slots[b] != 0; b = (b + 1) & m->mask) {
		if (m->keys[b] == key) {
			*added = 0;
			return (int64_t)m->slots[b] - 1;
		}
	}
	if (m->n == m->cap)
		return -ENOSPC;
	m->keys[b] = key;
	m->slots[b] = ++m->n;
	*added = 1;
	return (int64_t)m->n - 1;
}

size_t pp_pred_map_mem(const struct pp_pred_map *m)
{
	return (size_t)(m->mask + 1) * (sizeof(*m->keys) + sizeof(*m->slots));
}

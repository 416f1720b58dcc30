/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fixed-capacity hash map from 64-bit keys to small slot numbers, for the
 * predictors' tables. Open addressing with linear probing over a power-of-two
 * array at most half full; no deletion, only a full reset. Slots are handed
 * out in insertion order (0, 1, 2, ...), so a caller keeps its per-entry data
 * in plain arrays indexed by slot. Memory is allocated at init and by
 * pp_pred_map_grow only, which the predictors call off the receive path
 * (pp_pred_grow): a full map refuses new keys until then.
 */
#ifndef PP_PRED_MAP_H
#define PP_PRED_MAP_H

#include <stddef.h>
#include <stdint.h>

struct pp_pred_map {
	uint64_t *keys;	 /* key per bucket */
	uint32_t *slots; /* slot + 1 per bucket, 0 = empty */
	uint32_t mask;	 /* buckets - 1 */
	uint32_t cap;	 /* most entries held */
	uint32_t n;	 /* entries held */
};

/* Allocate for cap entries. Errors: -EINVAL (cap 0), -ENOMEM. */
int pp_pred_map_init(struct pp_pred_map *m, uint32_t cap);

/* Hold up to cap entries (more than now), keeping every key's slot.
 * Errors: -EINVAL (cap not above the current one), -ENOMEM (the map is
 * unchanged then). */
int pp_pred_map_grow(struct pp_pred_map *m, uint32_t cap);

/* Free the arrays; the map may be initialised again. */
void pp_pred_map_fini(struct pp_pred_map *m);

/* Forget every entry. */
void pp_pred_map_reset(struct pp_pred_map *m);

/* The slot of key, or -1. */
int64_t pp_pred_map_find(const struct pp_pred_map *m, uint64_t key);

/*
 * The slot of key, inserting it when absent (*added set to 1 then, else 0).
 * Errors: -ENOSPC when key is absent and the map is full.
 */
int64_t pp_pred_map_get(struct pp_pred_map *m, uint64_t key, int *added);

/* Bytes allocated. */
size_t pp_pred_map_mem(const struct pp_pred_map *m);

/* A 64-bit finaliser (splitmix64): spreads any key over all bits. */
static inline uint64_t pp_pred_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

#endif

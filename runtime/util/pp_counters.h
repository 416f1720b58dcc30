/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters named for output: a struct of uint64_t counters described by a
 * table of PP_COUNTER(type, field) entries, read by index (runtime/stats.c
 * for struct pp_stats, the daemon's ppd_stats.c for its handlers').
 */
#ifndef PP_COUNTERS_H
#define PP_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

struct pp_counter_name {
	const char *name; /* the field's name, as output shows it */
	size_t off;	  /* its offset in the struct */
};

#define PP_COUNTER(type, field)                                                                    \
	{                                                                                          \
#field, offsetof(type, field)                                                      \
	}

/* The counter n names in s, read relaxed (another thread may count). */
static inline uint64_t pp_counter_get(const void *s, const struct pp_counter_name *n)
{
	return __atomic_load_n((const uint64_t *)((const char *)s + n->off), __ATOMIC_RELAXED);
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Core lists and pinning. A core list is "0", "1-3", "0,2-3" (logical
 * processor numbers as the OS counts them). Threads and processes are pinned
 * through hwloc, which also tells which cores exist. Cold path.
 */
#ifndef PP_AFFINITY_H
#define PP_AFFINITY_H

#define PP_MAX_CORES 1024

/*
 * Parse a core list into cores[0..max), in the order given, without
 * duplicates. Returns the count. Errors: -EINVAL (malformed, descending
 * range, duplicate), -E2BIG (more than max cores or a core >= PP_MAX_CORES).
 */
int pp_corelist_parse(const char *list, int *cores, int max);

/*
 * Pin the calling thread to one core. Errors: -EINVAL (no such core on this
 * machine), -ENOMEM, -errno of the binding.
 */
int pp_affinity_pin_self(int core);

/* Number of logical processors hwloc sees, or a negative errno. */
int pp_affinity_ncores(void);

#endif

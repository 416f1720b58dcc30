/* SPDX-License-Identifier: BSD-3-Clause */
/* Touch every page of a buffer once from user space, before the job runs.
 *
 * MAP_POPULATE and the kernel's own writes fill the page tables, but a
 * process's first access to each page can still trap: under hypervisors
 * that shadow the guest's page tables, each page costs about 5 us the first
 * time this process reads or writes it (measured on a test bed VM: 5.4 us a
 * page after MAP_POPULATE, 35 ns after). A ring met slot by slot during
 * the job pays that on its first few hundred messages (internode 8 B one
 * way 24 us instead of 4.5 over the first 300 round trips, and
 * retransmissions once a trip outlasts the RTO); paid at open it costs
 * 5.4 us a page once (a packet: port's 22 MB of rings: about 30 ms).
 *
 * Each touch is an atomic add of 0: a write access, so the page is mapped
 * writable, that changes nothing even where another process or the kernel
 * writes the same memory. Header-only. */
#ifndef PP_PREFAULT_H
#define PP_PREFAULT_H

#include <stddef.h>
#include <stdint.h>

#define PP_PREFAULT_STRIDE 4096 /* the smallest page; larger pages are touched more than once */

static inline void pp_prefault(void *p, size_t len)
{
	uint8_t *b = p;
	for (size_t i = 0; i < len; i += PP_PREFAULT_STRIDE)
		__atomic_fetch_add(b + i, 0, __ATOMIC_RELAXED);
	if (len)
		__atomic_fetch_add(b + len - 1, 0, __ATOMIC_RELAXED);
}

#endif

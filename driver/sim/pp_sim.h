/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The in-memory link: a simulated Ethernet segment joining nb_ports ports,
 * with seeded loss, duplication, reordering, corruption, delay and a
 * bandwidth limit, on virtual time. Ports are opened like any other with
 * pp_port_open(&p, "sim:NAME/INDEX", conf); port INDEX has MAC
 * 02:00:00:00:00:<INDEX>. Broadcast (ff:ff:ff:ff:ff:ff) reaches every other
 * port; unicast goes to the port with that MAC, other frames are dropped.
 *
 * Each frame sent departs when the sender's port is free (rate_bps), arrives
 * delay_ns later (plus a random extra delay if chosen for reordering), and
 * is lost, duplicated or has one bit flipped with the given probabilities,
 * all drawn from one generator seeded with seed: the same calls give the
 * same run. Frames become receivable when the link's time reaches their
 * arrival (pp_sim_link_set_time); with delay 0 and no rate limit that is at
 * once. Every buffer comes from a pool allocated at create; nothing is
 * allocated per frame. Calls on a link are serialised by one lock, so its
 * ports may be driven from different threads. A port's wait descriptor
 * (pp_port_wait_fd, an eventfd) is readable while frames wait in its ring.
 */
#ifndef PP_SIM_H
#define PP_SIM_H

#include <stdint.h>

struct pp_sim_conf {
	uint64_t seed;	   /* generator seed */
	double loss;	   /* probability a frame is lost */
	double dup;	   /* probability a frame arrives twice */
	double reorder;	   /* probability a frame is held back */
	double corrupt;	   /* probability one bit of a frame is flipped */
	uint64_t delay_ns; /* one-way delay */
	uint64_t rate_bps; /* per-port sending rate, 0 = unlimited */
	uint16_t mtu;	   /* largest frame after the Ethernet header (0: 1500) */
};

/* What the link did to the frames it carried. */
struct pp_sim_stats {
	uint64_t sent;	     /* frames handed to tx_burst (per destination copy) */
	uint64_t lost;	     /* frames dropped by the loss draw */
	uint64_t duplicated; /* extra copies made */
	uint64_t reordered;  /* frames held back */
	uint64_t corrupted;  /* frames with a flipped bit */
	uint64_t delivered;  /* frames placed on a receive ring */
	uint64_t no_dest;    /* unicast frames to no port */
	uint64_t overflow;   /* frames dropped: receive ring or pool full */
};

struct pp_sim_link;

/* Create link name with nb_ports ports (1..255).
 * Errors: -EINVAL (bad name, count or probability), -EEXIST (name taken),
 * -ENOMEM. */
int pp_sim_link_create(struct pp_sim_link **l, const char *name, unsigned nb_ports,
		       const struct pp_sim_conf *conf);

/* Destroy a link; its ports must be closed first. */
void pp_sim_link_destroy(struct pp_sim_link *l);

/* Advance virtual time (never backwards) and deliver what has arrived. */
void pp_sim_link_set_time(struct pp_sim_link *l, uint64_t now_ns);

/* Time of the next arrival, UINT64_MAX if nothing is in flight. */
uint64_t pp_sim_link_next_event(const struct pp_sim_link *l);

/* Copy the link's counters. */
void pp_sim_link_stats(const struct pp_sim_link *l, struct pp_sim_stats *st);

#endif

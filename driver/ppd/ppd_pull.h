/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank's side of pull serving by its node daemon (ppd_shm.h, "Pull
 * descriptors"): the runtime calls these on a port opened with "ppd:" to
 * hand the rest of a send to the daemon's pull handlers and to learn when
 * they are done. Cold-ish paths: one scan of PPD_PULLS entries at most;
 * ppd_port_pull_poll costs one load when nothing finished.
 */
#ifndef PP_PPD_PULL_H
#define PP_PPD_PULL_H

#include <stdint.h>

#include "pp_port.h"

/* Describe the rest [off, len) of send msg_id to dst (tag, buffer buf of
 * len bytes); the daemon gives up after timeout_ms without an ack. Errors: -ENOTSUP (not a ppd
 * port), -ENOSPC (table full), -EINVAL (off >= len). */
int ppd_port_pull_post(struct pp_port *port, uint32_t dst, uint32_t msg_id, uint64_t tag,
		       const void *buf, uint64_t len, uint64_t off, uint32_t timeout_ms);

/* The PULL of send msg_id to dst came: 1 when the daemon serves it (or has
 * already finished), 0 when the entry was still POSTED and is given back
 * (or there is none). */
int ppd_port_pull_claim(struct pp_port *port, uint32_t dst, uint32_t msg_id);

/* Drop the entry of send msg_id to dst: the daemon reads no more of it. */
void ppd_port_pull_cancel(struct pp_port *port, uint32_t dst, uint32_t msg_id);

/* For each entry the daemon ended, call done(arg, dst, msg_id, error) (0 or
 * -EIO) and free it, unless done returns -EAGAIN (the engine has not seen
 * the PULL yet: the entry stays and is reported again next time); also ends
 * every SERVING entry with -EIO once the daemon is gone. Returns the
 * entries freed. */
unsigned ppd_port_pull_poll(struct pp_port *port,
			    int (*done)(void *arg, uint32_t dst, uint32_t msg_id, int error),
			    void *arg);

/* Placement (ppd_shm.h, "Placement descriptors"): describe the buffer of
 * the receive of message msg_id from src (incarnation src_inc): the daemon
 * may write DATA payload at offsets [from_off, len) of buf, in order, from
 * frames of that incarnation. Errors: -ENOTSUP (not a ppd port), -ENOSPC
 * (table full), -EINVAL (from_off >= len, or src_inc 0). */
int ppd_port_place_post(struct pp_port *port, uint32_t src, uint32_t src_inc, uint32_t msg_id,
			void *buf, uint64_t len, uint64_t from_off);

/* Hand the daemon the job's key (proto/auth.h) so that it may check BYEs
 * for the job and sign the one it sends when this rank dies. Errors:
 * -ENOTSUP (not a ppd port). */
int ppd_port_set_key(struct pp_port *port, const uint8_t key[32]);

/* Take that description back; returns once the daemon writes no more into
 * the buffer (waits while a write is under way). */
void ppd_port_place_cancel(struct pp_port *port, uint32_t src, uint32_t msg_id);

/* 1 once the daemon is known to be gone (it stopped serving, or its end of
 * the connection closed: a killed daemon): nothing sent reaches anyone and
 * nothing more arrives. One load; 0 for any other port. */
int ppd_port_gone(struct pp_port *port);

/* Times a send gave the core to the rank's home handler at once, it being
 * awake on this very core (0 for any other port). */
uint64_t ppd_port_handovers(struct pp_port *port);

/* 1 when b, from this port's rx_burst, holds a DATA frame's headers alone
 * (its payload was placed), else 0 (any other port: 0). */
int ppd_port_rx_placed(struct pp_port *port, const struct pp_buf *b);

#endif

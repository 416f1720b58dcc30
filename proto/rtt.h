/* SPDX-License-Identifier: BSD-3-Clause */
/* Round-trip estimate with RFC 6298's gains, for every go-back-N sender
 * (the engine's per-peer stream, ppd's pull handler flows). */
#ifndef PP_RTT_H
#define PP_RTT_H

#include <stdint.h>

/* Fold sample r (ns) into *srtt and *rttvar; *srtt == 0 means no sample yet. */
static inline void pp_rtt_sample(uint64_t *srtt, uint64_t *rttvar, uint64_t r)
{
	if (!*srtt) {
		*srtt = r ? r : 1;
		*rttvar = r / 2;
		return;
	}
	uint64_t d = *srtt > r ? *srtt - r : r - *srtt;
	*rttvar = (3 * *rttvar + d) / 4;
	*srtt = (7 * *srtt + r) / 8;
}

#endif

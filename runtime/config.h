/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration of one rank: PP_<KEY> environment variables, overridden by
 * the "key=value,key=value" string given to pp_init. Unknown keys and bad
 * values are errors that name the key. Cold path.
 */
#ifndef PP_CONFIG_H
#define PP_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

enum pp_mode {
	PP_MODE_PUSH_PULL = 0, /* BTP(1) + BTP(2) pushed, the rest pulled */
	PP_MODE_PUSH_ALL,      /* whole message pushed (eager) */
	PP_MODE_PUSH_ZERO,     /* header pushed, everything pulled (rendezvous) */
};

enum pp_shm_mode {
	PP_SHM_ON = 0,	/* ranks of one node talk through shared memory, single copy */
	PP_SHM_OFF,	/* every rank over the port */
	PP_SHM_TWOCOPY, /* shared memory, but pulled bytes go through the rings */
};

#define PP_CFG_STR 256

struct pp_config {
	int rank;		     /* this rank, 0..size-1 (-1: unset) */
	int size;		     /* ranks in the job (-1: unset) */
	uint32_t job;		     /* job key on the wire */
	uint64_t token;		     /* job token: binds the job at its node daemon (0: none) */
	char job_name[PP_CFG_STR];   /* job key as given (names shm segments) */
	char node[PP_CFG_STR];	     /* node name; same node = shared memory */
	char dev[PP_CFG_STR];	     /* port: EAL device args or pcap:IFACE */
	enum pp_mode mode;	     /* push-pull, push-all or push-zero */
	uint32_t btp1;		     /* bytes in the first push */
	uint32_t btp2;		     /* bytes in the second, overlapped push */
	bool btp_set;		     /* btp1 or btp2 given explicitly */
	char pull_cores[PP_CFG_STR]; /* core list for pull handlers ("" none) */
	char daemon[PP_CFG_STR];     /* ppd socket path ("" embedded engine) */
	char predict[PP_CFG_STR];    /* predictor name or "off" */
	char pcap_dump[PP_CFG_STR];  /* capture file ("" none) */
	char cluster[PP_CFG_STR];    /* rank -> MAC file ("" discover) */
	uint32_t timeout_ms;	     /* discovery and peer-loss timeout */
	bool zerocopy;		     /* large payloads leave from the user's buffer */
	uint32_t stage_bytes;	     /* prediction staging budget (0: no staging) */
	uint32_t stage_remap;	     /* fewest bytes a page remap moves (0: copy only) */
	uint32_t pushbuf_bytes;	     /* pushed-buffer size */
	bool credits;		     /* pushed-buffer credits (false: Push-All overflow) */
	enum pp_shm_mode shm;	     /* intranode transport: on, off, twocopy */
	uint64_t shm_heap;	     /* pp_malloc bytes per rank in the segment (0: none) */
	bool shm_write;		     /* shm=on: a sender writes into a receive posted early */
};

/* Defaults: the paper's Ethernet BTP values, 80 and 680 bytes. */
#define PP_BTP1_ETH_DEFAULT   80
#define PP_BTP2_ETH_DEFAULT   680
#define PP_TIMEOUT_MS_DEFAULT 10000
#define PP_SHM_HEAP_DEFAULT   (64u << 20)

#define PP_STAGE_BYTES_DEFAULT	 (4u << 20) /* prediction staging budget */
#define PP_PUSHBUF_BYTES_DEFAULT (1u << 20) /* the engine's default */

/*
 * Fill *cfg from defaults, then the environment (PP_RANK, PP_SIZE, ...), then
 * the config string (may be NULL). On error *cfg is unspecified.
 * Errors: -EINVAL (unknown key, malformed pair or bad value; logged with the
 * key's name).
 */
int pp_config_load(struct pp_config *cfg, const char *config);

/* "push-pull", "push-all" or "push-zero". */
const char *pp_mode_name(enum pp_mode mode);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration of one rank: PP_<KEY> environment variables, overridden by
 * the "key=value,key=value" string given to pp_init. Unknown keys and bad
 * values are errors that name the key. Cold path.
 *
 * One table in config.c names every key, what it takes, its default and
 * what it does, and holds its parser; pp_config_load applies the defaults
 * by parsing them, and pp_info prints the table.
 */
#ifndef PP_CONFIG_H
#define PP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pp_mode {
	PP_MODE_PUSH_PULL = 0, /* BTP(1) + BTP(2) pushed, the rest pulled */
	PP_MODE_PUSH_ALL,      /* whole message pushed (eager) */
	PP_MODE_PUSH_ZERO,     /* header pushed, everything pulled (rendezvous) */
};

enum pp_progress_mode {
	PP_PROGRESS_INLINE = 0, /* only inside pp_* calls (and pull handlers) */
	PP_PROGRESS_EVENT,	/* also a thread that sleeps until a frame comes */
	PP_PROGRESS_THREAD,	/* also busy-polling threads, one on each of pull_cores */
};

enum pp_shm_mode {
	PP_SHM_ON = 0,	/* ranks of one node talk through shared memory, single copy */
	PP_SHM_OFF,	/* every rank over the port */
	PP_SHM_TWOCOPY, /* shared memory, but pulled bytes go through the rings */
};

/* How the rest of a node-mate's long message comes (shm_long). */
enum pp_shm_long {
	PP_SHM_LONG_AUTO = 0, /* the faster lately, measured per peer (shm/long_path.h) */
	PP_SHM_LONG_COPY,     /* the receiver's one copy call */
	PP_SHM_LONG_RINGS,    /* pulled through the rings */
};

enum pp_stats_out {
	PP_STATS_OFF = 0, /* nothing at pp_finalize (PP_LOG=info still logs one line) */
	PP_STATS_TEXT,	  /* the counters on stderr, one "name value" per line */
	PP_STATS_JSON,	  /* ... as one JSON document */
};

#define PP_CFG_STR 256

struct pp_config {
	int rank;			/* this rank, 0..size-1 (-1: unset) */
	int size;			/* ranks in the job (-1: unset) */
	uint32_t job;			/* job key on the wire */
	bool job_set;			/* job given explicitly (a PMIx launcher's is not used) */
	uint64_t token;			/* job token: binds the job at its node daemon (0: none) */
	char job_secret[PP_CFG_STR];	/* proof HELLO and BYE carry ("" none: auth.h) */
	char job_name[PP_CFG_STR];	/* job key as given (names shm segments) */
	char node[PP_CFG_STR];		/* node name; same node = shared memory */
	int local_size;			/* ranks on this node, embedded (0: the launcher's) */
	char dev[PP_CFG_STR];		/* port: a device string (driver/pp_port.h) */
	enum pp_mode mode;		/* push-pull, push-all or push-zero */
	uint32_t btp1;			/* bytes in the first push */
	uint32_t btp2;			/* bytes in the second, overlapped push */
	bool btp_set;			/* btp1 or btp2 given explicitly */
	char pull_cores[PP_CFG_STR];	/* core list for pull handlers ("" none) */
	enum pp_progress_mode progress; /* inline, event (a sleeping thread), thread (polling) */
	bool event_fifo;	     /* progress=event's thread at SCHED_FIFO (else SCHED_OTHER) */
	char daemon[PP_CFG_STR];     /* ppd socket path ("" embedded engine) */
	char predict[PP_CFG_STR];    /* predictor name or "off" */
	char pcap_dump[PP_CFG_STR];  /* capture file ("" none) */
	char recv_trace[PP_CFG_STR]; /* receive trace file, %r = rank ("" none) */
	char cluster[PP_CFG_STR];    /* rank -> MAC file ("" discover) */
	uint32_t timeout_ms;	     /* discovery and peer-loss timeout */
	bool zerocopy;		     /* large payloads leave from the user's buffer */
	uint32_t stage_bytes;	     /* prediction staging budget (0: no staging) */
	uint32_t stage_remap;	     /* fewest bytes a page remap moves (0: copy only) */
	uint32_t pushbuf_bytes;	     /* pushed-buffer size */
	bool credits;		     /* pushed-buffer credits (false: Push-All overflow) */
	enum pp_shm_mode shm;	     /* intranode transport: on, off, twocopy */
	uint64_t shm_heap;	     /* pp_malloc bytes per rank in the segment (0: none) */
	uint64_t shm_help;	     /* node-mates' copy calls from this size are split with
				      * their sender (0: never) */
	uint64_t shm_stream;	     /* node-mates' messages from this size are pushed whole
				      * through the rings (0: never) */
	enum pp_shm_long shm_long;   /* shm=on: the rest of a message past shm_copy_min */
	uint64_t shm_copy_min;	     /* shm=on: node-mates' messages from this size move by one
				      * copy call, shorter ones through the rings (0: auto) */
	bool shm_write;		     /* shm=on: a sender writes into a receive posted early */
	bool udp_fallback;	     /* a raw port refused for want of privilege: udp: instead */
	enum pp_stats_out stats;     /* counters on stderr at pp_finalize */
};

/*
 * Fill *cfg from defaults, then the environment (PP_RANK, PP_SIZE, ...), then
 * the config string (may be NULL). On error *cfg is unspecified.
 * Errors: -EINVAL (unknown key, malformed pair or bad value; logged with the
 * key's name).
 */
int pp_config_load(struct pp_config *cfg, const char *config);

/* "push-pull", "push-all" or "push-zero". */
const char *pp_mode_name(enum pp_mode mode);

/*
 * The keys, as the parser knows them: config.c has one table that both
 * parses a key and describes it (pp_info, the README), and pp_config_load
 * fills the defaults by parsing each key's def, so what is shown is what
 * is done.
 */
struct pp_config_key {
	const char *name;   /* key; PP_<NAME> in the environment */
	const char *values; /* what it takes, for people */
	const char *def;    /* its default as it would be written, NULL: none */
	const char *help;   /* what it does, one line */
};

/* Key i, in the table's order, or NULL past the last one. */
const struct pp_config_key *pp_config_key(size_t i);

/* The job key of a job given by name (job=NAME, a PMIx namespace): FNV-1a,
 * so every rank that has the name computes the same key. */
uint32_t pp_config_job_hash(const char *name);

/* A boolean value: on, yes, true, 1 (1) or off, no, false, 0 (0), in any
 * case; -EINVAL for anything else. */
int pp_config_bool(const char *v);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * librt-pp: Push-Pull Messaging for clusters of multi-core nodes.
 *
 * MPI-style tagged point-to-point messages between ranks, over raw Ethernet
 * between nodes and through shared memory inside a node. The first bytes of a
 * message are pushed to the receiver before it asks (BTP(1), then BTP(2)
 * overlapping the acknowledgement); the rest is pulled straight into the
 * receiver's buffer.
 *
 * Conventions, for every function below:
 *  - 0 (or a count) on success, a negative errno value on failure; the text
 *    of an error is pp_strerror(err).
 *  - Nothing is printed to stdout. Diagnostics go to stderr, quiet by default;
 *    set PP_LOG=debug|info|warn for more.
 *  - Output parameters are written only on success.
 *  - A pp_ctx is used by one application thread at a time.
 *
 * Semantics are MPI's: matching on (source, tag) with PP_ANY_SOURCE and
 * PP_ANY_TAG; messages between one pair of ranks that match the same receive
 * are not overtaking; a receive buffer shorter than the message completes
 * with -EMSGSIZE and st->len set to the full message length; a send buffer may
 * be reused once its send completes. Messages of 0 bytes to at least 1 GiB.
 *
 * Each rank runs the protocol engine itself. It owns a port (DPDK or
 * libpcap, dev=...), or with daemon=SOCKET it attaches to the node daemon
 * ppd, which owns the NIC. Ranks with the same node= talk through a shared
 * segment, the bytes beyond the push copied once between the user buffers.
 * With predict=NAME every completed receive feeds that predictor and its
 * guesses are scored in pp_stats, and a message it expects among the next
 * receives that arrives first waits in staging memory (stage_bytes=,
 * default 4 MiB) with its rest pulled at once. Sends to the caller's own
 * rank are refused (-EINVAL).
 */
#ifndef PP_H
#define PP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(PP_BUILDING_LIBRARY)
#define PP_API __attribute__((visibility("default")))
#else
#define PP_API
#endif

#define PP_ANY_SOURCE (-1)
#define PP_ANY_TAG    (-1)

typedef struct pp_ctx pp_ctx;
typedef struct pp_req pp_req;

/* Completion status of a receive (and, with fewer fields, of a send). */
typedef struct pp_status {
	int source; /* rank the message came from */
	int tag;    /* tag it was sent with */
	size_t len; /* full message length, even when truncated */
	int error;  /* 0, or the negative errno the operation ended with */
} pp_status;

/* Reasons a received frame is rejected; indexes pp_stats.drops[]. */
enum pp_drop_reason {
	PP_DROP_SHORT = 0, /* shorter than Ethernet + protocol header */
	PP_DROP_VERSION,   /* not this library's wire version 5 */
	PP_DROP_TYPE,	   /* unknown frame type */
	PP_DROP_LENGTH,	   /* payload_len disagrees with the frame length */
	PP_DROP_CRC,	   /* crc32c mismatch */
	PP_DROP_JOB,	   /* frame of another job */
	PP_DROP_RANK,	   /* source or destination rank out of range or not us */
	PP_DROP_RANGE,	   /* offset/length outside the message */
	PP_DROP_DUP,	   /* duplicate or out-of-window sequence number */
	PP_DROP_STATE,	   /* valid frame that fits no known message or peer */
	PP_DROP_NOBUF,	   /* no pushed-buffer space (only with credits off) */
	PP_DROP_STALE,	   /* from or for an earlier incarnation of a rank */
	PP_DROP_MAX
};

/* Counters of one context since pp_init. */
struct pp_stats {
	uint64_t frames_tx;	     /* frames handed to the port */
	uint64_t frames_rx;	     /* frames received from the port */
	uint64_t bytes_tx;	     /* payload bytes sent, retransmissions included */
	uint64_t bytes_rx;	     /* payload bytes received and accepted */
	uint64_t msgs_tx;	     /* sends completed */
	uint64_t msgs_rx;	     /* receives completed */
	uint64_t retransmits;	     /* frames sent again by go-back-N */
	uint64_t nacks_tx;	     /* NACKs sent on a sequence gap */
	uint64_t acks_tx;	     /* standalone ACK frames sent */
	uint64_t pulls_tx;	     /* PULL requests sent */
	uint64_t pulls_served;	     /* PULL requests answered with DATA */
	uint64_t early_matches;	     /* FIRST frames that found their receive posted */
	uint64_t late_matches;	     /* receives that found their message pushed */
	uint64_t pushed_buf_bytes;   /* bytes held in the pushed buffer right now */
	uint64_t pushed_buf_peak;    /* most bytes ever held in the pushed buffer */
	uint64_t push_degraded;	     /* pushes reduced to Push-Zero for lack of credit */
	uint64_t copies_avoided;     /* bytes placed straight into user buffers */
	uint64_t drops[PP_DROP_MAX]; /* rejected received frames, by reason */
	uint64_t pred_predictions;   /* predictor: next-receive guesses scored */
	uint64_t pred_hits;	     /* predictor: guesses that were right */
	uint64_t pred_misses;	     /* predictor: guesses that were wrong */
	uint64_t spec_pulls;	     /* pulls sent before the receive was posted */
	uint64_t bytes_staged;	     /* bytes placed in prediction staging */
	uint64_t pages_remapped;     /* pages moved by remap instead of copy */
	uint64_t evictions;	     /* pushed-buffer messages that gave up their space */
	uint64_t staged_msgs;	     /* messages placed in prediction staging */
	uint64_t stage_peak;	     /* most staging bytes held at once (<= stage_bytes) */
	/* BTP fitted to the link (BTPs not set explicitly): */
	uint64_t pushes_fitted;	   /* messages that pushed more than BTP(1) + BTP(2) */
	uint64_t push_now;	   /* bytes a long message pushes unasked now (largest peer) */
	uint64_t path_rtt_ns;	   /* least round trip measured (smallest peer; 0: none) */
	uint64_t path_rate;	   /* delivery rate measured, bytes/s (largest peer; 0: none) */
	uint64_t path_pull_rtt_ns; /* least FIRST-to-PULL time (largest peer; 0: none) */
	/* PULLs that came while the sender had nothing else to send to that
	 * peer, and how long it had been idle: the part of the PULL round
	 * trip that the pushes did not hide. */
	uint64_t pull_waits;
	uint64_t pull_wait_ns;
};

/*
 * Create a context and join the job. config is "key=value,key=value"
 * overriding the PP_<KEY> environment variables, or NULL. Keys: rank, size,
 * job, node, dev, mode (push-pull|push-all|push-zero), btp1, btp2,
 * pull_cores, daemon (ppd socket path), predict, pcap_dump, timeout_ms,
 * cluster, log, stage_bytes, stage_remap, credits, pushbuf_bytes,
 * token (hex: the job's secret for ppd; pprun --daemon sets one per launch),
 * zerocopy (on|off: payloads of 2 KiB or more leave from the user's buffer
 * where the port can; default off: on af_packet, whose PMD copies anyway,
 * it measured slower),
 * shm (on|off|twocopy: ranks with the same node talk through a shared-memory
 * segment, pulled bytes in one copy straight between the user buffers; off:
 * over the port; twocopy: through the segment's rings; default on),
 * shm_write (on|off, with shm=on: when the receive is posted before the
 * message is sent, the sender writes the whole message straight into the
 * receive buffer, instead of the receiver copying it; default on),
 * shm_heap (bytes of pp_malloc memory per rank in the segment, k/m/g
 * suffixes, 0 for none; default 64m),
 * shm_long (auto|copy|rings, with shm=on: how the rest of a message to a
 * rank of the same node, past shm_copy_min, reaches its receiver: by the
 * receiver's one copy call, or pulled through the segment's rings, both
 * processes copying; auto: whichever moved bytes from that peer faster
 * lately, measured at run time and tried again twice a second; default auto),
 * shm_help (bytes, with shm=on: a rank of the same node copying this many
 * bytes or more of a message by one call asks its sender to write the first
 * half meanwhile, so that both cores copy; 0 for never; default 256k),
 * shm_stream (bytes, with shm=on: a message to a rank of the same node from
 * this size on is pushed whole through the rings from its start, without
 * waiting for a PULL; 0 for never; default 0),
 * shm_copy_min (auto or bytes, with shm=on: a message to a rank of the same
 * node up to this size goes whole through the segment's rings, a longer one
 * is copied by one system call; auto: from what such a call costs on this
 * machine, measured at pp_init, 8k at least; default auto),
 * stats (off|text|json: every counter of pp_stats on stderr at pp_finalize,
 * as "name value" lines or one JSON document; default off).
 * Boolean keys (credits, zerocopy, shm_write) take on|off, yes|no,
 * true|false or 1|0 in any case; numbers are decimal or 0x hexadecimal;
 * byte counts (shm_heap, shm_help, shm_stream, shm_copy_min, stage_bytes, stage_remap,
 * pushbuf_bytes) take k/m/g.
 * Returns only when every rank of the job is known.
 * Errors: -EINVAL (unknown key or bad value, rank/size/dev missing; the key
 * is named on stderr), -ENOMEM, -ENODEV (the port cannot be opened),
 * -ETIMEDOUT (ranks missing after timeout_ms; they are named on stderr);
 * with daemon=, -ENODEV also when the daemon cannot be reached or refuses.
 */
PP_API int pp_init(pp_ctx **ctx, const char *config);

/*
 * Drain what is in flight (every send acknowledged), say goodbye to the
 * peers (BYE) and wait for theirs, then free the context. Every request
 * must have completed.
 * Errors: -EINVAL (ctx is NULL), -ETIMEDOUT (in-flight operations or peers'
 * goodbyes missing after timeout_ms; the context is freed anyway). When the
 * drain did not finish, one BYE still goes to each live peer, so that their
 * receives from this rank fail with -ECONNRESET instead of waiting.
 */
PP_API int pp_finalize(pp_ctx *ctx);

/* This process's rank (0..size-1), or -EINVAL for a NULL ctx. */
PP_API int pp_rank(const pp_ctx *ctx);

/* Number of ranks in the job, or -EINVAL for a NULL ctx. */
PP_API int pp_size(const pp_ctx *ctx);

/*
 * Blocking send of len bytes to rank dest with tag (>= 0). Returns when buf
 * may be reused: every byte acknowledged, or, for messages of up to 1 KiB
 * that the mode pushes whole (BTP1 + BTP2 in push-pull, none in push-zero),
 * copied into the library (an eager send; its delivery is then the
 * library's job, and a peer lost afterwards fails the receives waiting on
 * it, not this call).
 * Errors: -EINVAL (bad rank or own rank, negative tag, NULL buf with
 * len > 0), -ENOMEM (too many operations outstanding), -ECONNRESET (peer
 * lost or gone), -ETIMEDOUT (see pp_wait).
 */
PP_API int pp_send(pp_ctx *ctx, const void *buf, size_t len, int dest, int tag);

/*
 * Blocking receive into buf (len bytes) from source (or PP_ANY_SOURCE) with
 * tag (or PP_ANY_TAG). st may be NULL.
 * Errors: -EINVAL, -EMSGSIZE (message longer than len: len bytes are
 * delivered and st->len is the full length), -ECONNRESET (source lost, or
 * it finalized without sending a match), -ETIMEDOUT (see pp_wait).
 */
PP_API int pp_recv(pp_ctx *ctx, void *buf, size_t len, int source, int tag, pp_status *st);

/*
 * Start a send; *req is set to a request to pass to pp_test or pp_wait. buf
 * must not be changed until the request completes.
 * Errors: -EINVAL, -ENOMEM (no free request), -ECONNRESET.
 */
PP_API int pp_isend(pp_ctx *ctx, const void *buf, size_t len, int dest, int tag, pp_req **req);

/*
 * Start a receive; *req is set to a request to pass to pp_test or pp_wait.
 * Errors: -EINVAL, -ENOMEM (no free request), -ECONNRESET (source gone).
 */
PP_API int pp_irecv(pp_ctx *ctx, void *buf, size_t len, int source, int tag, pp_req **req);

/*
 * Make progress and report whether *req has completed. On completion *done
 * is 1, st (may be NULL) is filled, the request is freed and *req set NULL;
 * the return value is then the operation's own result (0, -EMSGSIZE,
 * -ECONNRESET, ...). Otherwise *done is 0 and 0 is returned.
 * Errors: -EINVAL (NULL or unknown request).
 */
PP_API int pp_test(pp_req **req, int *done, pp_status *st);

/*
 * Block until *req completes; then as pp_test with done = 1.
 * Errors: -EINVAL, the operation's own error, -ETIMEDOUT (no frame at all
 * arrived for timeout_ms while no frame of ours awaited acknowledgement: the
 * request stays valid and may be waited on again). A peer that stops
 * acknowledging is declared lost after about timeout_ms instead, and the
 * operations with it fail with -ECONNRESET. After a quarter of timeout_ms of
 * silence, the wait pings the peer it waits for (every peer for
 * PP_ANY_SOURCE) once, so a receive from a dead rank fails with -ECONNRESET
 * too; a live one that answers yet sends nothing gives -ETIMEDOUT.
 */
PP_API int pp_wait(pp_req **req, pp_status *st);

/*
 * Block until every rank has entered the barrier (dissemination algorithm
 * over ordinary messages).
 * Errors: -EINVAL, -ECONNRESET (a rank was lost), -ETIMEDOUT.
 */
PP_API int pp_barrier(pp_ctx *ctx);

/*
 * Poll the port and the shared-memory rings once; returns the number of
 * events handled (0 when idle).
 * Errors: -EINVAL.
 */
PP_API int pp_progress(pp_ctx *ctx);

/*
 * Allocate len bytes of registered memory: the fastest path for sends and
 * receives, and (with the shared-memory transport) shareable with the other
 * ranks of the node. When the rank shares a node segment with other ranks
 * the memory comes from its heap area there (shm_heap bytes), and messages
 * from it to a local rank move with one plain memcpy; otherwise (or when
 * that area is full) it is cache-line-aligned process memory.
 * NULL on failure (errno set to EINVAL or ENOMEM).
 */
PP_API void *pp_malloc(pp_ctx *ctx, size_t len);

/* Free memory from pp_malloc; NULL is ignored. */
PP_API void pp_free(pp_ctx *ctx, void *p);

/*
 * Hint from the call site `site` that a receive will follow: the papers'
 * pre-receive(tag) for tag-based predictors: the next receive to complete
 * is observed with this site. Harmless when prediction is off.
 * Errors: -EINVAL.
 */
PP_API int pp_prerecv(pp_ctx *ctx, unsigned site);

/*
 * Copy the context's counters into *out.
 * Errors: -EINVAL (NULL argument).
 */
PP_API int pp_get_stats(pp_ctx *ctx, struct pp_stats *out);

/*
 * Text for an error returned by this library (negative errno value). Never
 * NULL; unknown values give "unknown error".
 */
PP_API const char *pp_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* PP_H */

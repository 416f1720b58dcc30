/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd, the node daemon: one process per node owns the NIC (through the driver
 * layer) and serves every rank of the node that set daemon=SOCKET.
 *
 * Threads. The main thread runs the UNIX socket (server.c: attach and stats
 * requests), the rank table (ranks.c), watches each rank's connection and
 * pidfd, and handles SIGTERM; it never touches frames.
 * Each handler thread is pinned to one core, owns one NIC queue pair, and
 * loops: receive a burst from its NIC queue and copy each frame into the rx
 * ring of the rank it is for (by job and destination rank; a broadcast HELLO
 * to every attached rank of its job); then consume the tx rings of the ranks
 * it is home to: copy each frame out of the rank's slot (and any appended
 * range of the rank's memory, through process_vm_readv), check it (our
 * EtherType, the rank's own job and rank as source), and send it to the NIC,
 * or straight into the rx ring of a rank of this node it is addressed to.
 *
 * Sharing. A rank's tx ring has one consumer, its home handler (the least
 * loaded handler when it attached). Its rx ring and rx slots may be fed by
 * every handler, so they are taken under the rank's rx_lock, a spin lock
 * between daemon threads only (the rank never takes it). The rank table is a
 * fixed array whose entries change state with release stores; the main
 * thread frees an entry's memory only after every handler has started a new
 * pass (its epoch moved), so no handler still holds a pointer into it.
 *
 * Pull serving (pull.c). A rank's send whose rest waits for a PULL is
 * described in its region (ppd_shm.h). When that PULL comes from the NIC the
 * receiving handler takes the description (POSTED -> SERVING) before it
 * hands the PULL to the rank, and queues the job in the inbox of the least
 * loaded handler (queue depth, then busy time). That handler sends the rest
 * as DATA frames with the rank as source on its own stream (1 + its index),
 * its own go-back-N sequence per (job, rank, peer, and the incarnations of
 * both: struct ppd_flow): payload read from the
 * rank with process_vm_readv straight into the NIC buffer, window, ACKs and
 * NACKs on its stream (routed to its inbox, never to the rank), timeouts
 * with back-off and bounded tries. It marks the description DONE when every
 * byte is acked, FAILED on a range the rank cannot read or a silent
 * receiver. A rank that dies has its jobs dropped.
 *
 * Placement. A DATA frame from the NIC of a message the receiving rank
 * described in its region (ppd_shm.h, "Placement descriptors") has its
 * payload written into the rank's receive buffer with process_vm_writev by
 * the handler that received it, which then hands the rank the headers alone
 * (PPD_REC_PLACED). That handler, not the least loaded one: the payload is in
 * its NIC buffer and its cache now, and handing it over would hold the NIC
 * buffer across threads and add a queue hop per frame; DATA frames of one
 * message spread over the handlers' queues as the NIC spreads them.
 *
 * A rank's life: FREE -> ACTIVE (attached) -> DYING (connection closed or its
 * pidfd fired: nothing more is delivered to it) -> GONE (its home handler
 * sent what it had queued and a BYE on its behalf to every other rank of its
 * job) -> FREE (the main thread unmapped it).
 */
#ifndef PPD_H
#define PPD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "pp_port.h"
#include "ppd_shm.h"
#include "gbn.h"
#include "ring.h"
#include "wire.h"

#define PPD_MAX_RANKS	    64
#define PPD_MAX_JOB_RANKS   (1u << 20)	  /* ranks in a job at most */
#define PPD_PENDING	    32		  /* connections waiting for their request */
#define PPD_PENDING_UID	    8		  /* ... of one uid (server.c) */
#define PPD_CLAIMS	    64		  /* jobs bound at once (claims.c) */
#define PPD_RANKS_UID	    32		  /* --max-ranks-per-uid default (ranks.c) */
#define PPD_CONN_NS	    1000000000ull /* ... each for at most 1 s */
#define PPD_MAX_HANDLERS    16
#define PPD_BURST	    32
#define PPD_PJOBS	    64	      /* pull jobs a handler holds */
#define PPD_FLOWS	    1024      /* (job, rank, peer) sequences a handler keeps */
#define PPD_INBOX	    256	      /* messages waiting for a handler */
#define PPD_SERVERS	    7	      /* handlers that serve pulls (streams 1..7) */
#define PPD_STUCK	    8	      /* abandoned copies held at once (mem.c) */
#define PPD_PULL_RTO_NS	    1000000u  /* pull jobs' least timeout: ranks share cores with us */
#define PPD_PULL_RTO_MAX_NS 50000000u /* ... their largest after back-off */

enum ppd_rank_state {
	PPD_RANK_FREE = 0, /* unused entry */
	PPD_RANK_ACTIVE,   /* attached and served */
	PPD_RANK_DYING,	   /* dead; its home handler says goodbye for it */
	PPD_RANK_GONE,	   /* goodbye said; the main thread reclaims it */
};

/* Why a frame was dropped (ppd --stats). */
enum ppd_drop {
	PPD_DROP_NO_RANK = 0, /* for a rank not attached here */
	PPD_DROP_RANK_FULL,   /* the rank's rx ring or slots were full */
	PPD_DROP_BAD_FRAME,   /* short, not our EtherType, bad length or slot */
	PPD_DROP_SPOOF,	      /* a rank's frame with another job or rank as source */
	PPD_DROP_BAD_RANGE,   /* appended range the rank cannot read (EFAULT) */
	PPD_DROP_DEAD,	      /* queued by or for a rank that died */
	PPD_DROP_STALE,	      /* for an earlier incarnation of an attached rank */
	PPD_DROP_COUNT,
};

struct ppd;

/* A job's binding (claims.c): whose ranks may attach to it. */
struct ppd_claim {
	int used;	/* entry taken */
	int fd;		/* the claiming connection while it is open, else -1 */
	uint32_t job;	/* job key */
	uint32_t size;	/* ranks in the job (0: not fixed until a rank attaches) */
	uint64_t token; /* the token its ranks must give */
	uid_t uid;	/* the uid its ranks must run as */
};

/* One attached rank. Fields below state are set before it turns ACTIVE and
 * not changed until it is FREE again, except where said. */
struct ppd_rank {
	_Atomic int state;		/* enum ppd_rank_state */
	uint32_t job, rank, size;	/* from its attach request */
	uint32_t inc;			/* its incarnation, from the request too */
	uint64_t token;			/* its job token: binds the job (ranks.c) */
	pid_t pid;			/* from SO_PEERCRED: whose memory process_vm_readv reads */
	uid_t uid;			/* from SO_PEERCRED */
	gid_t gid;			/* ... likewise */
	int memfd;			/* its memory, opened with its rights (mem.c), -1: none */
	_Atomic int mem_held;		/* a copy of its memory was given up (mem.c): no more */
	int conn;			/* its connection (EOF: it died) */
	int pidfd;			/* readable when it exits, -1 if pidfd_open failed */
	int home;			/* handler consuming its tx ring */
	uint8_t *mem;			/* its shared region */
	size_t mem_len;			/* bytes */
	struct ppd_region_hdr *hdr;	/* header of the region */
	uint8_t *tx_slots;		/* first tx slot */
	uint8_t *rx_slots;		/* first rx slot */
	struct pp_shm_ring tx;		/* consumer side, home handler only */
	struct pp_shm_ring rx;		/* producer side, under rx_lock */
	atomic_flag rx_lock;		/* guards rx, rx_free, nrx_free, at_rank */
	uint32_t rx_free[PPD_RX_SLOTS]; /* rx slots the daemon holds */
	uint32_t nrx_free;		/* how many */
	uint8_t at_rank[PPD_RX_SLOTS];	/* 1: slot handed to the rank */
	/* Zero-copy transmission, home handler only (see fwd.c). */
	int zc;			    /* its tx slots are registered with the port */
	uint64_t tx_seq;	    /* frame records consumed */
	uint64_t tx_done;	    /* ... whose slot is free again (published) */
	uint8_t pend[PPD_TX_SLOTS]; /* by record seq: the NIC still reads the slot */
	struct ppd_zc {
		struct ppd_rank *r; /* whose */
		uint64_t seq;	    /* which record */
	} zcs[PPD_TX_SLOTS];	    /* done-callback arguments, by record seq */
	_Atomic int zc_out;	    /* frames the NIC still reads from the region */
};

/* Counters of one handler: written by it alone, read by stats. */
struct ppd_counters {
	uint64_t nic_rx;		/* frames received from the NIC */
	uint64_t nic_tx;		/* frames sent to the NIC */
	uint64_t from_ranks;		/* frames taken from tx rings */
	uint64_t to_ranks;		/* frames put in rx rings */
	uint64_t loopback;		/* rank-to-rank frames that never touched the NIC */
	uint64_t pulls;			/* PULL frames moved (the ranks' engines serve them) */
	uint64_t ext_bytes;		/* bytes read from ranks' memory (CMA) */
	uint64_t zc_frames;		/* frames sent straight from a rank's slot */
	uint64_t busy_ns;		/* time in passes that moved something */
	uint64_t run_ns;		/* time since the handler started */
	uint64_t queue;			/* frames waiting for the NIC now */
	uint64_t drops[PPD_DROP_COUNT]; /* by enum ppd_drop */
	uint64_t pulls_served;		/* pull jobs this handler finished (DONE) */
	uint64_t pulls_failed;		/* ... it gave up (FAILED) */
	uint64_t pulls_left;		/* PULLs from the NIC it left to the rank */
	uint64_t pull_frames;		/* DATA frames it sent for them */
	uint64_t pull_retx;		/* ... of which sent again */
	uint64_t flows_evicted;		/* flow entries given up for new pairs */
	uint64_t pull_jobs;		/* jobs in its inbox or running now */
	uint64_t dozes;			/* times it slept until the NIC or a rank woke it */
	uint64_t placed_frames;		/* DATA frames whose payload it wrote into a rank */
	uint64_t placed_bytes;		/* ... payload bytes written (CMA) */
	uint64_t place_failed;		/* writes that failed: the frame went whole */
};

/* One (job, rank, peer) DATA sequence of a handler's stream, for one
 * incarnation of each (a later one starts a new sequence at 0). */
struct ppd_flow {
	uint32_t job, src, dst;	   /* job key, serving rank, receiving rank */
	uint32_t src_inc, dst_inc; /* their incarnations */
	struct pp_gbn_tx tx;	   /* its go-back-N sender (proto/gbn.h), kept across jobs */
	uint64_t last;		   /* when a job last took it (ns) */
	uint8_t fresh; /* its entry was given up before: the receiver's seq is unknown */
	uint8_t used;  /* entry taken */
	uint8_t busy;  /* a job runs on it (one at a time) */
};

/* One PULL served by a handler. */
struct ppd_pjob {
	uint8_t used;		   /* entry taken */
	uint8_t started;	   /* it has its flow and first seq */
	uint8_t failing;	   /* 1: send nothing more, FAILED once nothing is in flight;
				    * 2: FAILED now */
	struct ppd_rank *r;	   /* serving rank's entry */
	pid_t pid;		   /* ... and its pid then (the entry may be reused) */
	uint32_t job, src, dst;	   /* job key, serving rank, receiving rank */
	uint32_t src_inc, dst_inc; /* their incarnations */
	uint32_t msg_id;	   /* the message ... */
	uint64_t tag;		   /* ... and its tag */
	uint32_t slot;		   /* its pull entry in the rank's region */
	uint64_t addr, len;	   /* send buffer in the rank, message length */
	uint64_t off;		   /* first byte to send */
	uint8_t mac[6];		   /* the receiver's MAC (the PULL's source) */
	struct ppd_flow *flow;	   /* its sequence: the flow's sender while it runs */
	uint32_t seq0;		   /* seq of the frame at off (frame k is seq0 + k) */
	uint32_t nframes;	   /* frames in all */
	uint64_t timeout_ns;	   /* no progress this long: FAILED */
	uint64_t progress;	   /* when an ack last acknowledged something (or the start) */
};

enum ppd_msg_type {
	PPD_MSG_JOB = 1, /* serve a PULL */
	PPD_MSG_ACK,	 /* an ACK on the handler's stream */
	PPD_MSG_NACK,	 /* a NACK on it */
	PPD_MSG_BYE,	 /* the receiving rank left (msg_id: its BYE has ours): its jobs end */
};

/* A message for a handler, from any handler. */
struct ppd_msg {
	uint8_t type;		 /* enum ppd_msg_type */
	uint8_t mac[6];		 /* JOB: receiver's MAC */
	struct ppd_rank *r;	 /* JOB: the serving rank */
	pid_t pid;		 /* JOB: its pid */
	uint32_t slot;		 /* JOB: its pull entry */
	uint32_t job;		 /* job key */
	uint32_t src;		 /* serving rank (the ack's destination) */
	uint32_t dst;		 /* receiving rank (the ack's source) */
	uint32_t src_inc;	 /* the serving rank's incarnation */
	uint32_t dst_inc;	 /* the receiving rank's */
	uint32_t msg_id;	 /* JOB: the message ... */
	uint64_t tag;		 /* ... and its tag */
	uint64_t addr, len, off; /* JOB: what to send, copied from the entry */
	uint64_t timeout_ns;	 /* JOB: receiver silent this long: FAILED */
	uint32_t ack;		 /* ACK/NACK: cumulative ack (NACK: go back to it) */
};

/* One handler thread's copies of ranks' memory (mem.c), watched by the main
 * thread: a copy held up in the kernel too long gets the thread abandoned
 * and a new one started for its handler. Each thread has its own (never
 * reused by another), so the abandoning compare-and-swap cannot be fooled
 * by a later copy. */
struct ppd_copier {
	_Atomic uint64_t copy; /* 2 x copies done, +1 while one runs, or PPD_COPY_ABANDONED */
	struct ppd_rank *rank; /* whose memory the running copy is in (set before) */
	struct ppd *d;	       /* the daemon */
	int stuck;	       /* its entry in d->stuck once abandoned */
	uint64_t seen, since;  /* main thread: the copy value last seen, and when */
};
#define PPD_COPY_ABANDONED UINT64_MAX

struct ppd_handler {
	struct ppd *d;			   /* the daemon */
	int id;				   /* index */
	int core;			   /* where it is pinned */
	uint16_t queue;			   /* its NIC queue pair */
	pthread_t thread;		   /* the thread (the latest, when one was abandoned) */
	struct ppd_copier *_Atomic cp;	   /* ... its copies (NULL until it started) */
	_Atomic uint64_t epoch;		   /* passes started; see the top of this file */
	int nhome;			   /* ranks it is home to (main thread's count) */
	struct pp_buf *txq[2 * PPD_BURST]; /* frames the NIC did not take yet */
	unsigned ntxq;			   /* how many */
	struct ppd_counters c;		   /* counters */
	atomic_flag inbox_lock;		   /* guards inbox and ninbox (any handler) */
	struct ppd_msg inbox[PPD_INBOX];   /* messages for it */
	unsigned ninbox;		   /* how many */
	_Atomic unsigned load;		   /* inbox + running jobs (least-loaded choice) */
	struct ppd_pjob jobs[PPD_PJOBS];   /* its pull jobs (its own) */
	struct ppd_flow flows[PPD_FLOWS];  /* its sequences (its own) */
	uint64_t rng;			   /* xorshift state (flow start seqs) */
	int wake_fd;			   /* eventfd its ranks write when it dozes */
};

struct ppd {
	struct pp_port *port;			/* the NIC */
	struct pp_port_info info;		/* its MAC, MTU, queues */
	uint32_t slot_bytes;			/* bytes per slot of every region */
	struct ppd_rank ranks[PPD_MAX_RANKS];	/* the rank table */
	struct ppd_handler h[PPD_MAX_HANDLERS]; /* the handlers */
	int nh;					/* how many */
	int tx_copy;				/* --tx-copy: never send from slots */
	int no_pull_serve;			/* --no-pull-serve: ranks serve their PULLs */
	int no_place;				/* --no-place: DATA frames go whole */
	int doze;				/* --doze: idle handlers may sleep */
	int bind_first;				/* --bind-first-attacher (claims.c) */
	int max_ranks_uid;			/* --max-ranks-per-uid (ranks.c) */
	uint64_t pull_rto_ns;			/* pull jobs' least timeout (pull.c) */
	struct ppd_claim claims[PPD_CLAIMS];	/* job bindings, main thread only */
	struct ppd_stuck {
		_Atomic int used;   /* a copy abandoned and still held in the kernel */
		uid_t uid;	    /* ... in the memory of a rank of this uid */
		int fd;		    /* ... through this descriptor, which its thread closes */
	} stuck[PPD_STUCK];	    /* (mem.c) */
	_Atomic uint64_t abandoned; /* copies abandoned since the start */
	int doze_fd;		    /* the NIC's wait descriptor when they may (else -1) */
	_Atomic int nattached;	    /* ranks not FREE (main thread writes) */
	_Atomic int stop;	    /* handlers end their loop */
};

/* A connection that has not sent its request yet (server.c). */
struct ppd_conn {
	int fd;		   /* the connection, -1: entry free */
	int pidfd;	   /* the peer's process, pinned at accept */
	struct ucred cr;   /* its credentials (SO_PEERCRED) */
	uint64_t deadline; /* closed unless a request came by then (monotonic ns) */
};

/* The daemon's UNIX socket (server.c). */
struct ppd_server {
	int lfd;			   /* listening socket, -1 once closed */
	const char *path;		   /* its name */
	gid_t gid;			   /* --group: its members may attach too */
	int grouped;			   /* ... when set */
	struct ppd_conn conn[PPD_PENDING]; /* connections waiting for their request */
};

/* Listen on path (mode 0600, or 0660 for group when not NULL); 0, or -1
 * with the reason printed. close: stop listening (the name is removed) and
 * drop every waiting connection. accept: take the connections that came
 * (refused at once unless allowed). input: connection i has something to
 * read (its request is served). expire: close the connections whose time is
 * up. now: CLOCK_MONOTONIC ns. */
int ppd_server_open(struct ppd_server *s, const char *path, const char *group);
void ppd_server_close(struct ppd_server *s);
void ppd_server_accept(struct ppd_server *s, uint64_t now);
void ppd_server_input(struct ppd *d, struct ppd_server *s, int i);
void ppd_server_expire(struct ppd_server *s, uint64_t now);

/* Answer on connection c: status, and when status is 0 the nfds (at most 2)
 * descriptors fds: the region's memfd and, with --doze, the home handler's wake-up
 * eventfd (fmt: why a request is refused, also logged). */
void ppd_reply(int c, int status, uint64_t region, const int *fds, int nfds, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The rank table (ranks.c). attach: serve an attach request from c: 0 when
 * the rank is ACTIVE (its entry took c's connection and pidfd), else a
 * negative errno, answered on c. died: an ACTIVE rank is gone (how: for the
 * log). reclaim: free the entries whose goodbye is said; returns the
 * entries still in use. */
int ppd_rank_attach(struct ppd *d, struct ppd_conn *c, const struct ppd_attach_req *req);
void ppd_rank_died(struct ppd_rank *r, const char *how);
/* Rank r's job key (proto/auth.h), as the rank handed it in its region:
 * 1 with key filled, 0 when it gave none (a job without a secret). A rank
 * can only give a wrong key for its own job. Any thread. */
int ppd_rank_key(const struct ppd_rank *r, uint8_t key[32]);
int ppd_ranks_reclaim(struct ppd *d);

/* Job bindings (claims.c), main thread only. serve: a claim request from c
 * (answered on c; on success the claim took c's connection). find: job's
 * binding, or NULL. bind: bind job to the first rank attaching (with
 * --bind-first-attacher); 0 or -ENOSPC. closed: claim i's connection
 * ended. sweep: free the bindings no connection and no rank holds. */
void ppd_claim_serve(struct ppd *d, struct ppd_conn *c, const struct ppd_claim_req *req);
struct ppd_claim *ppd_claim_find(struct ppd *d, uint32_t job);
int ppd_claim_bind(struct ppd *d, uint32_t job, uid_t uid, uint64_t token, uint32_t size);
void ppd_claim_closed(struct ppd *d, int i);
void ppd_claims_sweep(struct ppd *d);

/* A rank's memory (mem.c). open: a descriptor of the address space of
 * process pid (pinned by pidfd) as uid and gid may reach it, or -errno
 * (-EPERM: they may not; -ESRCH: it is gone). read, write: n bytes at addr
 * of it; 0, -EFAULT (not mapped there, or not readable or writable), or
 * -ESRCH (that address space is gone: the process exec'd or exited). Never
 * wait on another process. */
int ppd_mem_open(pid_t pid, int pidfd, uid_t uid, gid_t gid);
int ppd_mem_read(struct ppd_rank *r, void *dst, uint64_t addr, size_t n);
int ppd_mem_write(struct ppd_rank *r, const void *src, uint64_t addr, size_t n);
/* An access to r's memory failed with rc: when its address space is gone,
 * what runs under its pid is not the rank that attached: it is detached
 * (DYING, its job told by its BYE). Any thread. */
void ppd_mem_failed(struct ppd_rank *r, int rc);
/* Copies that never end (mem.c). A copy can wait in the kernel for ever
 * (a page of a FUSE file whose server does not answer: a wait no signal
 * ends). thread: the calling handler thread's copies are watched from now
 * on; 0 or -ENOMEM. watch (main thread, now in ns): a handler whose copy
 * has run PPD_COPY_STALL_NS is given up (its rank detached, the thread
 * left to the kernel, a new one started, see ppd_handler_restart); the
 * number given up this time. uid_stuck: copies of uid's ranks that are
 * still held. */
#define PPD_COPY_STALL_NS 1000000000ull
int ppd_mem_thread(struct ppd_handler *h);
int ppd_mem_watch(struct ppd *d, uint64_t now);
int ppd_mem_uid_stuck(struct ppd *d, uid_t uid);

/* A daemon before its port and handlers: no claim, no doze descriptor. */
void ppd_init(struct ppd *d);
/* The NIC: d serves port (its info and the slot size come from it); 0 or
 * -errno. The caller closes it after ppd_handlers_stop. */
int ppd_use_port(struct ppd *d, struct pp_port *port);

/* Start and stop the handler threads (fwd.c). start: -errno. */
int ppd_handlers_start(struct ppd *d, const int *cores, int n);
void ppd_handlers_stop(struct ppd *d);
/* The handler threads' parts, for a caller that drives a handler itself
 * (the unit tests): setup makes handler i (pinned to core when it runs),
 * 0 or -errno; pass is one turn of its loop (the NIC, its ranks' tx
 * rings, its pull jobs, then what waits for the NIC) and returns the work
 * it found. */
int ppd_handler_setup(struct ppd *d, int i, int core);
unsigned ppd_handler_pass(struct ppd_handler *h);
/* A new thread for handler h, whose thread was abandoned (mem.c): 0 or
 * -errno. */
int ppd_handler_restart(struct ppd_handler *h);

/* Pull serving (pull.c). intercept: a frame from the NIC for rank r; returns
 * 1 when it was a handler's ACK or NACK (taken: not for the rank), else 0
 * (a PULL matching a POSTED entry has started a job). run: one pass of
 * handler h's jobs; returns frames and messages handled. */
int ppd_pull_intercept(struct ppd_handler *h, struct ppd_rank *r, const uint8_t *f, uint32_t len,
		       const struct pp_wire_peek *pk);

/* A BYE to every rank (pk: its fields) from the NIC: once checked, the jobs
 * sending to its source end (it acks nothing more). */
void ppd_pull_bye(struct ppd_handler *h, const uint8_t *f, uint32_t len,
		  const struct pp_wire_peek *pk);
unsigned ppd_pull_run(struct ppd_handler *h);

/* Print the handlers' counters into buf (at most len bytes, NUL-ended;
 * stats.c). json: the same, and totals, as one JSON document on f; 0 or
 * the writer's error (-EIO: f is full). */
void ppd_stats_format(const struct ppd *d, char *buf, size_t len);
int ppd_stats_json(const struct ppd *d, FILE *f);

/* A handler's counter (h->c.field) += n: single writer, so a plain add
 * published with a relaxed store (ppd --stats reads it). */
#define COUNT(h, field, n) __atomic_store_n(&(h)->c.field, (h)->c.field + (n), __ATOMIC_RELAXED)

#endif

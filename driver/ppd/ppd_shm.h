/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a rank and its node daemon ppd share: the attach messages on the UNIX
 * socket and the layout of the rank's shared region.
 *
 * Attach: the rank connects to the daemon's socket and sends a
 * struct ppd_attach_req. The daemon checks the peer's credentials
 * (SO_PEERCRED: same uid as the daemon, root, or a member of the group
 * given with ppd --group, whose socket is then mode 0660), creates the rank's region
 * (a sealed memfd: it cannot grow or shrink under the daemon), formats it and
 * answers with a struct ppd_attach_rep carrying the memfd and, when its
 * handlers may doze (ppd --doze), its home handler's wake-up eventfd
 * (SCM_RIGHTS, in that order). The
 * connection then stays open and idle: the daemon takes its end of file
 * (or the rank's pidfd) as the rank's death. A request whose magic is
 * PPD_STATS_MAGIC instead gets the daemon's counters: as text, or as one
 * JSON document when its rank field is PPD_STATS_JSON.
 *
 * Claims: a rank may attach only to a job claimed at its daemon. A
 * struct ppd_claim_req (magic PPD_CLAIM_MAGIC), accepted from root or the
 * daemon's own uid only, binds job J to (uid, token, size): the job's
 * launcher (pprun --daemon) or a root prolog (ppd --claim) sends it before
 * the ranks start. The answer is a struct ppd_attach_rep without
 * descriptors; on success the connection stays open and the binding lasts
 * while it is open or any rank of J is attached (ppd's claims.c). Ranks of
 * J must then run as uid and give token (ppd_token_hash of their PP_TOKEN).
 *
 * Region: a header page, then two rings (shm/ring.h, one producer and one
 * consumer each), then frame slots.
 *   tx ring   rank -> daemon: PPD_REC_FRAME (send slot s), PPD_REC_RXFREE
 *             (the rank is done with these rx slots)
 *   rx ring   daemon -> rank: PPD_REC_FRAME (a frame for you in rx slot s),
 *             PPD_REC_PLACED (the headers of a DATA frame whose payload is
 *             in your receive buffer already, see below)
 *   tx slots  owned by the rank; the engine writes frames straight into
 *             them. The daemon consumes tx records in order and, once a
 *             frame is copied out, counts it in hdr->tx_done: the rank takes
 *             back the slots of its first tx_done frames, in send order.
 *   rx slots  owned by the daemon until it hands one over in an rx record;
 *             the rank gives it back with PPD_REC_RXFREE.
 * Pull descriptors (in the header page): a rank whose send waits for a PULL
 * may describe it in a free entry (FREE -> POSTED, fields written first);
 * when that PULL comes from the NIC the daemon takes it (POSTED -> SERVING,
 * before it hands the PULL frame to the rank), sends [off, len) from the
 * rank's memory on a handler's own stream and ends it (SERVING -> DONE or
 * FAILED, then pulls_done + 1). The rank, seeing the PULL, takes back an
 * entry still POSTED (-> FREE: it serves the PULL itself); seeing pulls_done
 * move, it completes DONE and FAILED entries and frees them. A rank that
 * drops a SERVING entry sets CANCEL; the daemon stops and ends it FAILED. Every
 * change of state is a compare-and-swap, so each entry has one owner.
 * Placement descriptors (in the header page): a receive of the rank whose
 * PULL went out may describe its buffer {src, msg_id, addr, len, from} in a
 * free entry (FREE -> POSTED, fields written first). A handler that receives
 * a DATA frame of that message from the NIC (any stream, payload at least
 * PPD_PLACE_MIN bytes, within [from, len)) checks the whole frame's crc32c,
 * takes the entry (POSTED -> BUSY), checks the fields again, writes the
 * payload into the rank with process_vm_writev, gives it back (BUSY ->
 * POSTED) and only then hands the rank the frame's headers alone in a
 * PPD_REC_PLACED record. A write that fails (EFAULT) leaves the frame to be
 * delivered whole. The rank takes an entry back (POSTED -> FREE) before the
 * receive completes; finding it BUSY it waits until the write is over. So
 * no byte is written into a buffer after its receive completed.
 * Dozing: a handler none of whose ranks waits (polls its rx ring in a loop:
 * spin_ns, written by the rank, is recent) sleeps until a frame comes from
 * the NIC, instead of taking turns on a core its ranks compute on (ppd
 * --doze; a rank given no eventfd does none of this). While it
 * sleeps it sets dozing in each of its ranks' headers; a rank that puts
 * records in its tx ring then writes its wake-up eventfd (the rank: record
 * committed, full fence, dozing read; the daemon: dozing set, full fence,
 * tx ring read: one of the two sees the other).
 * Everything in the region is writable by the rank, so the daemon treats it
 * as untrusted: it checks every record and slot number, copies a frame out
 * before looking at its header, and reads any other memory of the rank only
 * through process_vm_readv on that rank's pid.
 */
#ifndef PP_PPD_SHM_H
#define PP_PPD_SHM_H

#include <stdint.h>
#include <time.h>

#include "pp_hash.h"

#define PPD_MAGIC	0x70706431u /* "ppd1": attach */
#define PPD_STATS_MAGIC 0x70707331u /* "pps1": print counters */
#define PPD_STATS_JSON	1u	    /* ... as JSON (in the request's rank) */
#define PPD_CLAIM_MAGIC 0x70706331u /* "ppc1": bind a job (root) */
#define PPD_VERSION	9u	    /* 9: ring marks mixed (shm/ring.h) */

/* Monotonic time in ns: the daemon's clock, and the one both sides of the
 * dozing handshake stamp spin_ns with. */
static inline uint64_t ppd_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The full fence of the dozing handshake (below). ThreadSanitizer takes no
 * fences: there a sequentially consistent read-modify-write stands for it. */
#if defined(__SANITIZE_THREAD__)
static inline void ppd_full_fence(void)
{
	static int dummy;
	__atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
}
#else
static inline void ppd_full_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif
#define PPD_HDR_BYTES	  4096u /* header page */
#define PPD_RING_CELLS	  4096u /* cells per ring (64 bytes each) */
#define PPD_TX_SLOTS	  256u	/* frames a rank may have in flight to the daemon */
#define PPD_RX_SLOTS	  1024u /* frames the daemon may have queued for a rank */
#define PPD_RXFREE_MAX	  32u	/* slots per PPD_REC_RXFREE record */
#define PPD_PULLS	  64u	/* pull descriptors per rank */
#define PPD_PLACES	  20u	/* placement descriptors per rank */
#define PPD_SOCKET_PREFIX "/run/pp/ppd-"

/* Rank -> daemon, first message on the connection. */
struct ppd_attach_req {
	uint32_t magic;	  /* PPD_MAGIC or PPD_STATS_MAGIC */
	uint32_t version; /* PPD_VERSION */
	uint32_t job;	  /* job key */
	uint32_t rank;	  /* the rank attaching */
	uint32_t size;	  /* ranks in the job */
	uint32_t inc;	  /* its incarnation (proto/wire.h), not 0: its frames carry it */
	uint64_t token;	  /* job token from the launcher (0: none): the one its job
			   * was claimed with, from the claimed uid */
};

/* Launcher -> daemon: bind job to uid, token and size (Claims, above). */
struct ppd_claim_req {
	uint32_t magic;	  /* PPD_CLAIM_MAGIC */
	uint32_t version; /* PPD_VERSION */
	uint32_t job;	  /* job key */
	uint32_t size;	  /* ranks in the job (0: the first rank to attach says) */
	uint32_t uid;	  /* the uid its ranks run as */
	uint32_t pad;	  /* zero */
	uint64_t token;	  /* the token its ranks give (0: none) */
};

/* The token a rank sends for the text of its token key (PP_TOKEN, token=):
 * FNV-1a in 64 bits, never 0 (0 means none). Launchers that claim a job
 * hash the text they give the ranks with it. */
static inline uint64_t ppd_token_hash(const char *text)
{
	uint64_t h = pp_fnv1a64(text);
	return h ? h : 1;
}

/* Daemon -> rank, the answer; the memfd rides along when status is 0. */
struct ppd_attach_rep {
	int32_t status;	   /* 0 or a negative errno */
	uint32_t pad;	   /* zero */
	uint64_t region;   /* bytes of the region */
	char message[192]; /* why, when status is not 0 */
};

enum ppd_pull_state {
	PPD_PULL_FREE = 0, /* unused (the rank's) */
	PPD_PULL_POSTED,   /* described by the rank, no PULL seen */
	PPD_PULL_SERVING,  /* the daemon sends the rest */
	PPD_PULL_DONE,	   /* every byte acked by the receiver */
	PPD_PULL_FAILED,   /* the daemon gave up (bad range, receiver silent) */
	PPD_PULL_CANCEL,   /* the rank dropped it while SERVING: the daemon ends it */
};

/* One send whose rest the daemon may serve. */
struct ppd_pull {
	uint32_t state;	     /* enum ppd_pull_state, changed by compare-and-swap */
	uint32_t dst;	     /* rank the message goes to */
	uint32_t msg_id;     /* its number (per pair of ranks) */
	uint32_t timeout_ms; /* receiver silent this long: FAILED */
	uint64_t tag;	     /* its tag */
	uint64_t addr;	     /* the send buffer, in the rank's address space */
	uint64_t len;	     /* message length */
	uint64_t off;	     /* bytes pushed: the rest is [off, len) */
};

enum ppd_place_state {
	PPD_PLACE_FREE = 0, /* unused (the rank's) */
	PPD_PLACE_POSTED,   /* a receive buffer the daemon may write into */
	PPD_PLACE_BUSY,	    /* a handler is writing into it now */
};

#define PPD_PLACE_MIN 1024u /* smaller payloads are delivered whole */

/* One receive buffer the daemon may write DATA payload into. */
struct ppd_place {
	uint32_t state;	  /* enum ppd_place_state, changed by compare-and-swap */
	uint32_t src;	  /* rank the message comes from */
	uint32_t msg_id;  /* its number (per pair of ranks) */
	uint32_t src_inc; /* the incarnation its frames must carry */
	uint64_t addr;	  /* the receive buffer, in the rank's address space */
	uint64_t len;	  /* bytes of it: a payload must end within */
	uint64_t from;	  /* where the next frame placed starts: at or after the
			   * rank's bytes when posted, then exactly after the last
			   * one placed (PPD_PLACE_STARTED set: ppd_place.h) */
};

/* The header page of a region. Offsets are from the region's start. */
struct ppd_region_hdr {
	uint32_t magic;	      /* PPD_MAGIC */
	uint32_t version;     /* PPD_VERSION */
	uint32_t job;	      /* job key the rank attached with */
	uint32_t rank;	      /* its rank */
	uint8_t mac[6];	      /* the NIC's MAC: every rank of the node sends from it */
	uint16_t mtu;	      /* the NIC's MTU */
	uint32_t slot_bytes;  /* bytes per slot (a multiple of 64) */
	uint32_t tx_slots;    /* PPD_TX_SLOTS */
	uint32_t rx_slots;    /* PPD_RX_SLOTS */
	uint32_t speed_mbps;  /* the NIC's speed, Mb/s (0: unknown; a daemon before it wrote 0) */
	uint64_t tx_ring_off; /* the rank -> daemon ring */
	uint64_t rx_ring_off; /* the daemon -> rank ring */
	uint64_t tx_slot_off; /* first tx slot */
	uint64_t rx_slot_off; /* first rx slot */
	uint64_t tx_done;     /* frame records the daemon consumed (written by it) */
	uint64_t tx_failed;   /* ... of which it refused or could not send */
	uint64_t rx_dropped;  /* frames for the rank dropped: its ring or slots full */
	uint8_t daemon_gone;  /* 1 once the daemon stopped serving */
	uint64_t pulls_done;  /* pull entries the daemon ended (DONE or FAILED), ever */
	uint32_t dozing;      /* 1 while the home handler sleeps (the daemon writes) */
	int32_t home_core;    /* the core the rank's home handler runs on (-1: unknown) */
	uint64_t spin_ns;     /* the rank's last empty poll in a wait loop (CLOCK_MONOTONIC) */
	uint32_t keyed;	      /* 1 once auth_key holds its job's key (the rank writes, last) */
	uint8_t auth_key[32]; /* its job's key (proto/auth.h): the daemon checks BYEs for the
			       * job and signs the BYE it sends for the rank with it */
	struct ppd_pull pulls[PPD_PULLS];    /* pull descriptors */
	struct ppd_place places[PPD_PLACES]; /* placement descriptors */
};

_Static_assert(sizeof(struct ppd_region_hdr) <= PPD_HDR_BYTES, "header page overflow");

enum ppd_rec_type {
	PPD_REC_FRAME = 1,  /* a frame in a slot */
	PPD_REC_RXFREE = 2, /* rx slots given back */
	PPD_REC_PLACED = 3, /* rx: a DATA frame's headers in slot s, its payload placed */
};

/* One record in either ring. A FRAME is followed by nothing; an RXFREE by
 * n slot numbers (uint32_t). */
struct ppd_rec {
	uint16_t type;	   /* enum ppd_rec_type */
	uint16_t n;	   /* RXFREE: slot numbers that follow */
	uint32_t slot;	   /* FRAME: slot number */
	uint32_t len;	   /* FRAME: bytes of frame in the slot */
	uint32_t ext_len;  /* FRAME (tx): bytes appended from the rank's memory */
	uint64_t ext_addr; /* ... read from this address of the rank */
};

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "pp" libfabric provider (libpp-fi.so): reliable datagram endpoints
 * (FI_EP_RDM) with tagged and untagged messages over one librt-pp engine
 * per endpoint (runtime/embed.h). What the objects hold and what the files
 * offer each other; ofi/README.md says what is supported and why.
 *
 * Files: prov.c (the entry point and logging), info.c (fi_getinfo),
 * fabric.c (fabric, domain, event queue), av.c (addresses), cq.c
 * (completion queues), ep.c (endpoints, names, completions of the engine),
 * tagged.c (the data path: sends, receives, probe and claim), rma.c,
 * atomic.c and mr.c (RMA and atomics in software; rma.h).
 */
#ifndef PP_FI_H
#define PP_FI_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "embed.h"
#include "fi_pp.h"

#define PP_FI_NAME	"pp"
#define PP_FI_PROV_VER	FI_VERSION(0, 1)
#define PP_FI_API_VER	FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define PP_FI_INJECT	4096u		      /* tx_attr->inject_size */
#define PP_FI_QUEUE	PP_PROTO_JOB_MAX_MSGS /* tx and rx sizes: the engine's max_msgs */
#define PP_FI_MAX_MSG	(1ull << 40)	      /* ep_attr->max_msg_size */
#define PP_FI_MSG_TAG	(1ull << 63)	      /* untagged messages' tag, with FI_MSG */
#define PP_FI_BINDS	8		      /* endpoints one AV or CQ serves */
#define PP_FI_CQ_DATA	4u		      /* domain_attr->cq_data_size: the wire's data field */
#define PP_FI_IOV_LIMIT 8u		      /* tx and rx iov_limit (iov.c) */
#define PP_FI_IOV_SLOTS 16u		      /* an endpoint's gather and scatter buffers ... */
#define PP_FI_IOV_SLOT	(64u << 10)	      /* ... of this size; longer ones are allocated */
#define PP_FI_RMA_CAPS	(FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define PP_FI_CAPS                                                                                 \
	(FI_TAGGED | FI_MSG | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM |   \
	 FI_REMOTE_COMM | FI_REMOTE_CQ_DATA | PP_FI_RMA_CAPS)

extern struct fi_provider pp_fi_prov;

#define PP_FI_WARN(sub, ...) FI_WARN(&pp_fi_prov, sub, __VA_ARGS__)
#define PP_FI_INFO(sub, ...) FI_INFO(&pp_fi_prov, sub, __VA_ARGS__)

/* The tag bits the application may use with caps: RMA and atomics keep
 * the top two (rma.h), untagged messages the top one; the bits kept are the
 * leading ones, as Open MPI's mtl ofi reads mem_tag_format. */
static inline uint64_t pp_fi_tag_mask(uint64_t caps)
{
	if (caps & (FI_RMA | FI_ATOMIC))
		return UINT64_MAX >> 2;
	return caps & FI_MSG ? ~PP_FI_MSG_TAG : UINT64_MAX;
}

/* librt-pp's negative errno as libfabric's (the same numbers but for a few
 * the caller must retry). */
static inline int pp_fi_err(int rc)
{
	if (rc == -ENOMEM || rc == -EAGAIN)
		return -FI_EAGAIN; /* the engine is full: progress, then again */
	if (rc == -ECONNRESET)
		return -FI_EIO;
	return rc;
}

/* ---- objects ---- */

struct pp_fi_fabric {
	struct fid_fabric fid;
};

struct pp_fi_domain {
	struct fid_domain fid;
	struct pp_fi_fabric *fabric;
	int locking;	       /* FI_THREAD_SAFE and the like: one lock for everything */
	pthread_mutex_t lock;  /* taken by every call on the domain's objects */
	int refs;	       /* AVs, CQs, endpoints and registrations open on it */
	uint64_t mr_mode;      /* as opened: FI_MR_VIRT_ADDR, FI_MR_PROV_KEY (mr.c) */
	struct pp_fi_mr **mrs; /* registrations by slot (mr.c) */
	uint32_t mr_cap;       /* slots */
	uint32_t mr_gen;       /* provider keys' generation */
};

static inline void pp_fi_lock(struct pp_fi_domain *d)
{
	if (d->locking)
		pthread_mutex_lock(&d->lock);
}

static inline void pp_fi_unlock(struct pp_fi_domain *d)
{
	if (d->locking)
		pthread_mutex_unlock(&d->lock);
}

struct pp_fi_ep;

struct pp_fi_av_ent {
	struct pp_embed_addr a; /* decoded name */
	int valid;		/* inserted and not removed */
};

struct pp_fi_av {
	struct fid_av fid;
	struct pp_fi_domain *dom;
	enum fi_av_type type;
	struct pp_fi_av_ent *ent; /* by fi_addr_t: insertion order, MAP and TABLE alike */
	size_t n, cap;
	fi_addr_t *by_rank;		   /* rank -> fi_addr_t (FI_ADDR_NOTAVAIL), for sources */
	uint32_t nranks;		   /* its length */
	struct pp_fi_ep *eps[PP_FI_BINDS]; /* bound endpoints: inserts add their peers */
};

/* A growing ring of fixed-size entries (CQ entries, errors). */
struct pp_fi_ring {
	uint8_t *mem;
	size_t esize, cap, head, tail; /* cap a power of two; head, tail count */
};

/* slot: the next free entry, the ring grown when full (NULL without
 * memory); it counts from pp_fi_ring_commit on. head: the oldest entry. */
void *pp_fi_ring_grow(struct pp_fi_ring *r);
int pp_fi_ring_push(struct pp_fi_ring *r, const void *e);
int pp_fi_ring_pop(struct pp_fi_ring *r, void *e);
static inline size_t pp_fi_ring_len(const struct pp_fi_ring *r)
{
	return r->tail - r->head;
}

static inline void *pp_fi_ring_slot(struct pp_fi_ring *r)
{
	if (r->tail - r->head == r->cap)
		return pp_fi_ring_grow(r);
	return r->mem + (r->tail & (r->cap - 1)) * r->esize;
}

static inline void pp_fi_ring_commit(struct pp_fi_ring *r)
{
	r->tail++;
}

static inline void *pp_fi_ring_head(const struct pp_fi_ring *r)
{
	return r->mem + (r->head & (r->cap - 1)) * r->esize;
}

/* What a completion carries here: the tagged entry and its source. */
struct pp_fi_cqe {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct pp_fi_cqerr {
	struct fi_cq_err_entry e;
	fi_addr_t src;
};

struct pp_fi_cq {
	struct fid_cq fid;
	struct pp_fi_domain *dom;
	enum fi_cq_format format;
	size_t esize;			   /* bytes of one entry of that format */
	struct pp_fi_ring ok, err;	   /* of pp_fi_cqe, pp_fi_cqerr */
	struct pp_fi_ep *eps[PP_FI_BINDS]; /* bound endpoints: reads make them progress */
	int neps;			   /* how many: the first neps of eps */
	int fruitful;			   /* the last read's progress gave entries (read_locked) */
	volatile int signaled;		   /* fi_cq_signal: a waiting sread returns */
	int wait;			   /* FI_WAIT_FD or FI_WAIT_UNSPEC asked: sread sleeps */
	int wake_fd;			   /* eventfd: fi_cq_signal wakes a sleeping sread */
	int ep_fd;			   /* epoll of the bound endpoints' ports (FI_GETWAIT) */
	int timer_fd;			   /* ... and of this timerfd: the engines' next timer */
};

void pp_fi_cq_bind(struct pp_fi_cq *cq, struct pp_fi_ep *ep);
void pp_fi_cq_unbind(struct pp_fi_cq *cq, struct pp_fi_ep *ep);
/* The entry to fill for a completion (pp_fi_ring_commit(&cq->ok) then),
 * or NULL when there is no memory for it (logged); write: a whole entry,
 * copied in (the cold paths'). */
struct pp_fi_cqe *pp_fi_cq_slot(struct pp_fi_cq *cq);
void pp_fi_cq_write(struct pp_fi_cq *cq, const struct pp_fi_cqe *e);
void pp_fi_cq_write_err(struct pp_fi_cq *cq, const struct pp_fi_cqerr *e);
/* fi_trywait of a CQ: 0 when it is empty and nothing needs progress before
 * a sleep, -FI_EAGAIN when it must be read first, -FI_ENOSYS without a wait
 * object. */
int pp_fi_cq_trywait(struct fid *fid);

/* One operation handed to the engine; its address is the engine's cookie. */
enum pp_fi_op_kind {
	PP_FI_SEND,    /* a send of the application */
	PP_FI_RECV,    /* a receive of the application */
	PP_FI_CLAIMED, /* a message claimed by FI_PEEK | FI_CLAIM, received into a bounce */
	PP_FI_DISCARD, /* a message discarded by FI_PEEK | FI_DISCARD */
};

struct pp_fi_claim;
struct pp_fi_op_chunk;

/* Buffers of PP_FI_IOV_SLOT bytes for iovs of several entries (iov.c). */
struct pp_fi_iov_pool {
	uint8_t *mem;		     /* PP_FI_IOV_SLOTS of them, made at fi_enable */
	void *free[PP_FI_IOV_SLOTS]; /* those not in use */
	unsigned nfree;		     /* how many */
};

struct pp_fi_op {
	enum pp_fi_op_kind kind;
	void *context;	/* the application's */
	uint64_t flags; /* CQ entry flags: FI_SEND or FI_RECV, FI_TAGGED or FI_MSG */
	int report;	/* write a completion on success */
	void *buf;	/* receives: the buffer */
	uint64_t len;	/* its length */
	void *bounce;	/* an inject's copy, a claim's buffer: freed with the op */
	void *slot;	/* a buffer of the iov pool: given back with the op */
	struct iovec iov[PP_FI_IOV_LIMIT]; /* receives of several entries: scattered into */
	size_t niov;			   /* their count (0: buf and len alone) */
	struct pp_fi_claim *claim;	   /* PP_FI_CLAIMED */
	struct pp_fi_op *next;		   /* free list */
};

/* A message claimed by a peek (FI_CLAIM): received into a bounce buffer
 * until the application's FI_CLAIM receive names it by its context. */
struct pp_fi_claim {
	void *context;		  /* the peek's context, which the claim names */
	struct pp_fi_op *bounce;  /* the receive taking it */
	int done;		  /* the bounce receive completed: cpl is valid */
	struct pp_proto_cpl cpl;  /* its completion */
	struct pp_fi_op *taker;	  /* the FI_CLAIM receive, once posted */
	int discard;		  /* the taker discards it */
	struct pp_fi_claim *next; /* the endpoint's list */
};

struct pp_fi_ep {
	struct fid_ep fid;
	struct pp_fi_domain *dom;
	struct fi_info *info;	       /* as opened */
	uint64_t caps;		       /* info->caps */
	struct pp_fi_av *av;	       /* bound */
	struct pp_fi_cq *tx_cq;	       /* bound for FI_TRANSMIT */
	struct pp_fi_cq *rx_cq;	       /* bound for FI_RECV */
	uint64_t tx_flags;	       /* default op flags of sends (FI_COMPLETION) */
	uint64_t rx_flags;	       /* ... of receives */
	int tx_selective;	       /* FI_SELECTIVE_COMPLETION on the TX binding */
	int rx_selective;	       /* ... RX */
	uint64_t tag_mask;	       /* bits a tag may use (FI_MSG keeps the top one) */
	char *config;		       /* FI_OPT_PP_CONFIG */
	struct pp_embed *rt;	       /* the engine, from fi_enable on */
	struct pp_fi_op *free;	       /* free operation records */
	struct pp_fi_op_chunk *chunks; /* every record, in chunks (ep.c) */
	struct pp_fi_claim *claims;    /* claimed messages not yet taken */
	struct pp_fi_rma_ep *rma;      /* RMA and atomics (rma.c), with FI_RMA or FI_ATOMIC */
	struct pp_fi_iov_pool iovp;    /* gather and scatter buffers (iov.c) */
};

/* ep.c */
int pp_fi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		  void *context);
/* Operation records: get takes one from the pool (NULL: no memory); next
 * is the one get would take, left in the pool (a cookie for a send that may
 * complete in the call and need none), and take takes that one out (it is
 * still in the pool, not always at its head); put gives one back. */
struct pp_fi_op *pp_fi_op_get(struct pp_fi_ep *ep);
struct pp_fi_op *pp_fi_op_next(struct pp_fi_ep *ep);
struct pp_fi_op *pp_fi_op_take(struct pp_fi_ep *ep, struct pp_fi_op *op);
void pp_fi_op_put(struct pp_fi_ep *ep, struct pp_fi_op *op);
/* Progress of one endpoint (the domain lock held). */
void pp_fi_ep_progress(struct pp_fi_ep *ep);
/* Its port's wait descriptor and engine's next timer (pp_embed_wait); 0, or
 * -1 when it is not enabled yet. */
int pp_fi_ep_wait(struct pp_fi_ep *ep, int *fd, uint64_t *expiry);
/* An AV insert made rank reachable: 0 or a negative FI_E* code. */
int pp_fi_ep_peer(struct pp_fi_ep *ep, const struct pp_embed_addr *a);
/* A completion of the application's operation (success or error). */
void pp_fi_ep_complete(struct pp_fi_ep *ep, struct pp_fi_op *op, const struct pp_proto_cpl *c);
/* The CQ entry of a send that completed in the call (no record taken). */
void pp_fi_ep_send_done(struct pp_fi_ep *ep, void *context, uint64_t flags, uint64_t tag);

/* tagged.c */
extern struct fi_ops_tagged pp_fi_tagged_ops;
extern struct fi_ops_msg pp_fi_msg_ops;
/* A claimed message's bounce receive completed. */
void pp_fi_claim_done(struct pp_fi_ep *ep, struct pp_fi_op *op, const struct pp_proto_cpl *c);

/* iov.c. enable: make the pool (-FI_ENOMEM). total: the bytes of count
 * entries (-FI_EINVAL above PP_FI_IOV_LIMIT). take: a buffer of len bytes
 * for op (a pool slot, or allocated past PP_FI_IOV_SLOT), NULL when none is
 * left; give: return op's slot. gather, scatter: copy between the entries
 * and a buffer, scatter at most len bytes. */
int pp_fi_iov_enable(struct pp_fi_ep *ep);
void pp_fi_iov_close(struct pp_fi_ep *ep);
int pp_fi_iov_total(const struct iovec *iov, size_t count, size_t *total);
void *pp_fi_iov_take(struct pp_fi_ep *ep, struct pp_fi_op *op, size_t len);
void pp_fi_iov_give(struct pp_fi_ep *ep, struct pp_fi_op *op);
void pp_fi_iov_gather(void *dst, const struct iovec *iov, size_t count);
void pp_fi_iov_scatter(const struct iovec *iov, size_t count, const void *src, size_t len);

/* rma.c, atomic.c, mr.c. Engine cookies with bit 0 set are rma.c's. */
struct pp_fi_rma_ep;
extern struct fi_ops_rma pp_fi_rma_ops;
extern struct fi_ops_atomic pp_fi_atomic_ops;
extern struct fi_ops_mr pp_fi_mr_ops;
/* At fi_enable: the pools and the posted request receives (-FI_ENOMEM). */
int pp_fi_rma_enable(struct pp_fi_ep *ep);
void pp_fi_rma_close(struct pp_fi_ep *ep);
/* After each progress pass of the engine: serve what arrived. */
void pp_fi_rma_progress(struct pp_fi_ep *ep);
void pp_fi_rma_cpl(struct pp_fi_ep *ep, const struct pp_proto_cpl *c);
int pp_fi_query_atomic(struct fid_domain *domain, enum fi_datatype dt, enum fi_op op,
		       struct fi_atomic_attr *attr, uint64_t flags);

/* av.c */
int pp_fi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		  void *context);
void pp_fi_av_bind(struct pp_fi_av *av, struct pp_fi_ep *ep);
void pp_fi_av_unbind(struct pp_fi_av *av, struct pp_fi_ep *ep);
/* The rank of fi_addr, or -1. */
int pp_fi_av_rank(const struct pp_fi_av *av, fi_addr_t addr);
/* The fi_addr_t of rank, or FI_ADDR_NOTAVAIL. */
fi_addr_t pp_fi_av_addr(const struct pp_fi_av *av, int rank);
/* Name encoding (FI_PP_NAME_LEN bytes). */
void pp_fi_name_encode(uint8_t *out, const struct pp_embed_addr *a);
int pp_fi_name_decode(const uint8_t *in, struct pp_embed_addr *a);

/* cq.c */
int pp_fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		  void *context);

/* eq.c: open an event queue; trywait: 0 when it is empty, else -FI_EAGAIN. */
int pp_fi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		  void *context);
int pp_fi_eq_trywait(struct fid *fid);

/* fabric.c */
int pp_fi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

/* info.c */
int pp_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		  const struct fi_info *hints, struct fi_info **info);

/* Stubs for what is not supported. */
int pp_fi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int pp_fi_no_control(struct fid *fid, int command, void *arg);
int pp_fi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);

#endif

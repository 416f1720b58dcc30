/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RMA and atomics in software over the endpoint's tagged messages (rma.c,
 * atomic.c, mr.c). Private to the provider.
 *
 * Tags. Bit 62 marks the provider's own messages (bit 63 marks untagged
 * ones); an endpoint with FI_RMA or FI_ATOMIC keeps both out of
 * mem_tag_format, so no receive of the application can match them. Below
 * bit 62, bits 60-61 say the kind and the low 32 bits the initiator's
 * record (its id):
 *
 *   REQ   initiator -> target: a request header (struct pp_fi_rma_hdr), with
 *         inline payload (small writes, atomic operands) behind it
 *   DATA  initiator -> target: a large write's payload, received by the
 *         target straight into the registered memory once the header passed
 *         the checks
 *   RESP  target -> initiator: the answer: nothing (a write, an atomic
 *         without fetch), the bytes read, or the old values of a fetching
 *         atomic; with RESP_ERR set, 0 bytes and the FI_E* code in bits 32-47
 *
 * The initiator posts its RESP receive (into the read or result buffer
 * itself) before it sends the request, and completes the operation when
 * every engine operation of it has completed: a write is thus complete only
 * once the target wrote it (delivery complete). The target keeps
 * PP_FI_RMA_HDRS receives for REQ posted; each completion is handled in the
 * endpoint's next progress pass (the engine is not called from its own
 * completion callback), so every access to registered memory happens there,
 * under the domain's lock, one request at a time. The target checks each
 * request's key, access flags and range (overflow included) before it
 * touches a byte; a request that fails is answered with an error, never
 * applied. Answers the engine has no room for wait in a list and are sent
 * again at the next pass.
 *
 * Peers share byte order: headers and operands are in host order, as MPI
 * assumes of its one-sided data.
 */
#ifndef PP_FI_RMA_H
#define PP_FI_RMA_H

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "pp_fi.h"

#define PP_FI_RMA_TAG	 (1ull << 62) /* the provider's own messages */
#define PP_FI_RMA_REQ	 (PP_FI_RMA_TAG | (0ull << 60))
#define PP_FI_RMA_DATA	 (PP_FI_RMA_TAG | (1ull << 60))
#define PP_FI_RMA_RESP	 (PP_FI_RMA_TAG | (2ull << 60))
#define PP_FI_RMA_ERR	 (1ull << 59) /* RESP: refused, code in bits 32-47 */
#define PP_FI_RMA_INLINE 256u	      /* write payload carried in the request */
#define PP_FI_ATOMIC_MAX 128u	      /* bytes of one atomic's operand (and compare) */
#define PP_FI_RMA_HDRS	 32u	      /* REQ receives each endpoint keeps posted */

/* What a request asks (pp_fi_rma_hdr.op). */
enum pp_fi_rma_op {
	PP_FI_RMA_WRITE = 1,  /* payload inline or as DATA */
	PP_FI_RMA_READ = 2,   /* len bytes back */
	PP_FI_RMA_ATOMIC = 3, /* operands inline; old values back if it fetches */
};

#define PP_FI_RMA_F_INLINE  0x1 /* a write's payload follows the header */
#define PP_FI_RMA_F_FETCH   0x2 /* an atomic answers the old values */
#define PP_FI_RMA_F_COMPARE 0x4 /* an atomic carries compare operands after its operands */

/* A request on the wire (host order). */
struct pp_fi_rma_hdr {
	uint8_t op;    /* enum pp_fi_rma_op */
	uint8_t flags; /* PP_FI_RMA_F_* */
	uint8_t aop;   /* atomics: enum fi_op */
	uint8_t dt;    /* atomics: enum fi_datatype */
	uint32_t id;   /* the initiator's record: its RESP and DATA tags */
	uint64_t key;  /* the target's registration */
	uint64_t addr; /* where in it (a virtual address or an offset, per mr_mode) */
	uint64_t len;  /* bytes to write or read; atomics: count * datatype size */
};

/* A registration (mr.c). */
struct pp_fi_mr {
	struct fid_mr fid;	  /* fid.key is the key */
	struct pp_fi_domain *dom; /* its domain */
	uint8_t *buf;		  /* the registered bytes */
	uint64_t len;		  /* how many */
	uint64_t base;		  /* the remote address of buf[0] */
	uint64_t access;	  /* FI_REMOTE_READ, FI_REMOTE_WRITE, ... */
	uint32_t slot;		  /* its index in the domain's table */
};

/* The bytes [addr, addr + len) of the registration key may be accessed
 * remotely with every flag of access (FI_REMOTE_READ, FI_REMOTE_WRITE):
 * 0 and *p pointing at them, else -FI_EKEYREJECTED (no such key) or
 * -FI_EACCES (out of range, or an access not granted). Domain lock held. */
int pp_fi_mr_check(struct pp_fi_domain *d, uint64_t key, uint64_t addr, uint64_t len,
		   uint64_t access, uint8_t **p);
/* Free the domain's table (every registration closed). */
void pp_fi_mr_fini(struct pp_fi_domain *d);

/* atomic.c */
/* Bytes of one element of dt, 0 when dt is not offered. */
size_t pp_fi_atomic_size(enum fi_datatype dt);
/* 0 when op on dt is offered for the class of call flags names (0: a base
 * atomic, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC), else -FI_EOPNOTSUPP. */
int pp_fi_atomic_check(enum fi_datatype dt, enum fi_op op, uint64_t flags);
/* Apply op to count elements of dt at dst (aligned to the element), each
 * one atomically (against the CPU's atomics too); the old values go to old.
 * operand and compare may be unaligned. */
void pp_fi_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst, const void *operand,
			const void *compare, void *old, size_t count);

/* rma.c: one initiator call of either family; the atomics' calls of
 * atomic.c end here. op is PP_FI_RMA_*; for atomics dt, aop, compare and
 * result as the call gave them (result is also a read's buffer). */
struct pp_fi_rma_call {
	enum pp_fi_rma_op op;
	fi_addr_t dest;	     /* the target */
	uint64_t addr, key;  /* where at the target */
	const void *buf;     /* write payload, atomic operands */
	const void *compare; /* compare operands */
	void *result;	     /* read buffer, fetched old values */
	uint64_t len;	     /* bytes of buf (of result for reads) */
	enum fi_datatype dt; /* atomics */
	enum fi_op aop;	     /* atomics */
	void *context;	     /* the application's */
	uint64_t flags;	     /* FI_INJECT, FI_COMPLETION, ... */
};
ssize_t pp_fi_rma_submit(struct pp_fi_ep *ep, const struct pp_fi_rma_call *call);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Atomics: the initiator's calls (fi_atomic.h), which become requests of
 * rma.c, what fi_query_atomic answers, and the target's arithmetic. Every
 * integer type of 8 to 64 bits takes every operation; float and double
 * take the arithmetic, read, write and compare-and-swap ones (no logical or
 * bit operations, no MSWAP). Each element is updated with a compare-and-
 * swap loop of the compiler's __atomic builtins, so a target's updates are
 * atomic against the CPU's own atomics on the same words (an MPI updating
 * its window's lock word locally), not only against other requests (the
 * progress pass applies those one at a time anyway).
 */
#include <string.h>

#include "rma.h"

size_t pp_fi_atomic_size(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
		return 8;
	default:
		return 0; /* complex, long double, 128-bit: not offered */
	}
}

int pp_fi_atomic_check(enum fi_datatype dt, enum fi_op op, uint64_t flags)
{
	if (!pp_fi_atomic_size(dt) || (unsigned)op >= FI_ATOMIC_OP_LAST)
		return -FI_EOPNOTSUPP;
	/* The classes of libfabric: compare ops only compare, read only fetches. */
	int is_cmp = op >= FI_CSWAP;
	if ((flags & FI_COMPARE_ATOMIC) ? !is_cmp
	    : (flags & FI_FETCH_ATOMIC) ? is_cmp
					: is_cmp || op == FI_ATOMIC_READ)
		return -FI_EOPNOTSUPP;
	if (dt == FI_FLOAT || dt == FI_DOUBLE) {
		switch (op) {
		case FI_LOR:
		case FI_LAND:
		case FI_LXOR:
		case FI_BOR:
		case FI_BAND:
		case FI_BXOR:
		case FI_MSWAP:
			return -FI_EOPNOTSUPP;
		default:
			break;
		}
	}
	return 0;
}

/* The new value n of one element: o the old, a the operand, c the compare
 * operand. Integers compute in their unsigned type (U) so that overflow
 * wraps; the bit operations (BITS) are compiled for integers only. */
#define NEW_VALUE(T, U, op, o, a, c, n)                                                            \
	do {                                                                                       \
		n = (o);                                                                           \
		switch (op) {                                                                      \
		case FI_MIN:                                                                       \
			n = (a) < (o) ? (a) : (o);                                                 \
			break;                                                                     \
		case FI_MAX:                                                                       \
			n = (a) > (o) ? (a) : (o);                                                 \
			break;                                                                     \
		case FI_SUM:                                                                       \
			n = (T)((U)(o) + (U)(a));                                                  \
			break;                                                                     \
		case FI_PROD:                                                                      \
			n = (T)((U)(o) * (U)(a));                                                  \
			break;                                                                     \
		case FI_LOR:                                                                       \
			n = (T)((o) || (a));                                                       \
			break;                                                                     \
		case FI_LAND:                                                                      \
			n = (T)((o) && (a));                                                       \
			break;                                                                     \
		case FI_LXOR:                                                                      \
			n = (T)(!(o) != !(a));                                                     \
			break;                                                                     \
		case FI_ATOMIC_WRITE:                                                              \
			n = (a);                                                                   \
			break;                                                                     \
		case FI_CSWAP:                                                                     \
			n = (c) == (o) ? (a) : (o);                                                \
			break;                                                                     \
		case FI_CSWAP_NE:                                                                  \
			n = (c) != (o) ? (a) : (o);                                                \
			break;                                                                     \
		case FI_CSWAP_LE:                                                                  \
			n = (c) <= (o) ? (a) : (o);                                                \
			break;                                                                     \
		case FI_CSWAP_LT:                                                                  \
			n = (c) < (o) ? (a) : (o);                                                 \
			break;                                                                     \
		case FI_CSWAP_GE:                                                                  \
			n = (c) >= (o) ? (a) : (o);                                                \
			break;                                                                     \
		case FI_CSWAP_GT:                                                                  \
			n = (c) > (o) ? (a) : (o);                                                 \
			break;                                                                     \
		default: /* FI_ATOMIC_READ; the bit operations below */                            \
			BITS(T, U, op, o, a, c, n);                                                \
			break;                                                                     \
		}                                                                                  \
	} while (0)

#define INT_BITS(T, U, op, o, a, c, n)                                                             \
	do {                                                                                       \
		if ((op) == FI_BOR)                                                                \
			n = (T)((U)(o) | (U)(a));                                                  \
		else if ((op) == FI_BAND)                                                          \
			n = (T)((U)(o) & (U)(a));                                                  \
		else if ((op) == FI_BXOR)                                                          \
			n = (T)((U)(o) ^ (U)(a));                                                  \
		else if ((op) == FI_MSWAP)                                                         \
			n = (T)(((U)(a) & (U)(c)) | ((U)(o) & (U) ~(U)(c)));                       \
	} while (0)

/* One function per type: load, compute, compare-and-swap until no one
 * changed the element in between. */
#define APPLY(name, T, U)                                                                          \
	static void name(enum fi_op op, void *dst, const void *operand, const void *compare,       \
			 void *old, size_t count)                                                  \
	{                                                                                          \
		T *p = dst;                                                                        \
		for (size_t i = 0; i < count; i++) {                                               \
			T a = 0, c = 0, o, n;                                                      \
			if (operand)                                                               \
				memcpy(&a, (const char *)operand + i * sizeof(T), sizeof(T));      \
			if (compare)                                                               \
				memcpy(&c, (const char *)compare + i * sizeof(T), sizeof(T));      \
			__atomic_load(&p[i], &o, __ATOMIC_SEQ_CST);                                \
			do {                                                                       \
				if (op == FI_ATOMIC_READ)                                          \
					break;                                                     \
				NEW_VALUE(T, U, op, o, a, c, n);                                   \
			} while (!__atomic_compare_exchange(&p[i], &o, &n, 0, __ATOMIC_SEQ_CST,    \
							    __ATOMIC_SEQ_CST));                    \
			if (old)                                                                   \
				memcpy((char *)old + i * sizeof(T), &o, sizeof(T));                \
		}                                                                                  \
	}

#define BITS INT_BITS
APPLY(apply_i8, int8_t, uint8_t)
APPLY(apply_u8, uint8_t, uint8_t)
APPLY(apply_i16, int16_t, uint16_t)
APPLY(apply_u16, uint16_t, uint16_t)
APPLY(apply_i32, int32_t, uint32_t)
APPLY(apply_u32, uint32_t, uint32_t)
APPLY(apply_i64, int64_t, uint64_t)
APPLY(apply_u64, uint64_t, uint64_t)

/* Floats take no bit operation (pp_fi_atomic_check). */
#undef BITS
#define BITS(T, U, op, o, a, c, n) ((void)0)
APPLY(apply_flt, float, float)
APPLY(apply_dbl, double, double)

void pp_fi_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst, const void *operand,
			const void *compare, void *old, size_t count)
{
	switch (dt) {
	case FI_INT8:
		apply_i8(op, dst, operand, compare, old, count);
		break;
	case FI_UINT8:
		apply_u8(op, dst, operand, compare, old, count);
		break;
	case FI_INT16:
		apply_i16(op, dst, operand, compare, old, count);
		break;
	case FI_UINT16:
		apply_u16(op, dst, operand, compare, old, count);
		break;
	case FI_INT32:
		apply_i32(op, dst, operand, compare, old, count);
		break;
	case FI_UINT32:
		apply_u32(op, dst, operand, compare, old, count);
		break;
	case FI_INT64:
		apply_i64(op, dst, operand, compare, old, count);
		break;
	case FI_UINT64:
		apply_u64(op, dst, operand, compare, old, count);
		break;
	case FI_FLOAT:
		apply_flt(op, dst, operand, compare, old, count);
		break;
	case FI_DOUBLE:
		apply_dbl(op, dst, operand, compare, old, count);
		break;
	default:
		break;
	}
}

/* ---- fi_query_atomic and the valid calls ---- */

/* Elements one call may carry: an operand (and a compare operand) of at
 * most PP_FI_ATOMIC_MAX bytes travels inline in the request. */
static int valid(enum fi_datatype dt, enum fi_op op, uint64_t flags, size_t *count)
{
	int rc = pp_fi_atomic_check(dt, op, flags);
	if (rc == 0 && count)
		*count = PP_FI_ATOMIC_MAX / pp_fi_atomic_size(dt);
	return rc;
}

int pp_fi_query_atomic(struct fid_domain *domain, enum fi_datatype dt, enum fi_op op,
		       struct fi_atomic_attr *attr, uint64_t flags)
{
	(void)domain;
	if (!attr || (flags & FI_FETCH_ATOMIC && flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	size_t count;
	int rc = valid(dt, op, flags, &count);
	if (rc)
		return rc;
	attr->size = pp_fi_atomic_size(dt);
	attr->count = count;
	return 0;
}

static int writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	(void)ep;
	return valid(dt, op, 0, count);
}

static int readwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	(void)ep;
	return valid(dt, op, FI_FETCH_ATOMIC, count);
}

static int compwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	(void)ep;
	return valid(dt, op, FI_COMPARE_ATOMIC, count);
}

/* ---- the calls ---- */

#define EP(fid) ((struct pp_fi_ep *)(fid))

/* The one buffer an ioc list of one entry (or none) names, and its
 * elements. */
static int ioc_one(const struct fi_ioc *ioc, size_t n, void **buf, size_t *count)
{
	if (n > 1)
		return -FI_EINVAL; /* iov_limit 1 */
	*buf = n ? ioc[0].addr : NULL;
	*count = n ? ioc[0].count : 0;
	return 0;
}

static ssize_t submit(struct fid_ep *fep, const void *buf, size_t count, const void *compare,
		      void *result, fi_addr_t dest, uint64_t addr, uint64_t key,
		      enum fi_datatype dt, enum fi_op op, void *context, uint64_t flags)
{
	uint64_t cls = compare || (flags & FI_COMPARE_ATOMIC) ? FI_COMPARE_ATOMIC
		       : (flags & FI_FETCH_ATOMIC)	      ? FI_FETCH_ATOMIC
							      : 0;
	size_t max;
	int rc = valid(dt, op, cls, &max);
	if (rc)
		return rc;
	if (count > max)
		return -FI_EINVAL;
	if ((!buf && op != FI_ATOMIC_READ && count) || (cls && !result && count) ||
	    (cls == FI_COMPARE_ATOMIC && !compare && count))
		return -FI_EINVAL;
	struct pp_fi_rma_call c = {
	    .op = PP_FI_RMA_ATOMIC,
	    .dest = dest,
	    .addr = addr,
	    .key = key,
	    .buf = op == FI_ATOMIC_READ ? NULL : buf,
	    .compare = compare,
	    .result = cls ? result : NULL,
	    .len = count * pp_fi_atomic_size(dt),
	    .dt = dt,
	    .aop = op,
	    .context = context,
	    .flags = flags | cls,
	};
	return pp_fi_rma_submit(EP(fep), &c);
}

static ssize_t a_write(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest,
		       uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
		       void *context)
{
	(void)desc;
	return submit(ep, buf, count, NULL, NULL, dest, addr, key, dt, op, context,
		      EP(ep)->tx_flags);
}

static ssize_t a_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t n,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			enum fi_op op, void *context)
{
	void *buf;
	size_t count;
	(void)desc;
	int rc = ioc_one(iov, n, &buf, &count);
	return rc ? rc : a_write(ep, buf, count, NULL, dest, addr, key, dt, op, context);
}

static ssize_t a_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	void *buf;
	size_t count;
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	int rc = ioc_one(msg->msg_iov, msg->iov_count, &buf, &count);
	return rc ? rc
		  : submit(ep, buf, count, NULL, NULL, msg->addr, msg->rma_iov[0].addr,
			   msg->rma_iov[0].key, msg->datatype, msg->op, msg->context,
			   flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC));
}

static ssize_t a_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	return submit(ep, buf, count, NULL, NULL, dest, addr, key, dt, op, NULL, FI_INJECT);
}

static ssize_t a_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
{
	(void)desc;
	(void)result_desc;
	return submit(ep, buf, count, NULL, result, dest, addr, key, dt, op, context,
		      EP(ep)->tx_flags | FI_FETCH_ATOMIC);
}

static ssize_t a_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t n,
			    struct fi_ioc *resultv, void **result_desc, size_t result_n,
			    fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op op, void *context)
{
	void *buf, *res;
	size_t count, rcount;
	(void)desc;
	(void)result_desc;
	int rc = ioc_one(iov, n, &buf, &count);
	if (rc == 0)
		rc = ioc_one(resultv, result_n, &res, &rcount);
	if (rc == 0 && op == FI_ATOMIC_READ && !n)
		count = rcount; /* a read may name no operand */
	if (rc == 0 && rcount < count)
		rc = -FI_EINVAL;
	return rc ? rc
		  : a_readwrite(ep, buf, count, NULL, res, NULL, dest, addr, key, dt, op, context);
}

static ssize_t a_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			      struct fi_ioc *resultv, void **result_desc, size_t result_n,
			      uint64_t flags)
{
	void *buf, *res;
	size_t count, rcount;
	(void)result_desc;
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	int rc = ioc_one(msg->msg_iov, msg->iov_count, &buf, &count);
	if (rc == 0)
		rc = ioc_one(resultv, result_n, &res, &rcount);
	if (rc == 0 && msg->op == FI_ATOMIC_READ && !msg->iov_count)
		count = rcount;
	if (rc == 0 && rcount < count)
		rc = -FI_EINVAL;
	return rc ? rc
		  : submit(ep, buf, count, NULL, res, msg->addr, msg->rma_iov[0].addr,
			   msg->rma_iov[0].key, msg->datatype, msg->op, msg->context,
			   (flags & ~(uint64_t)FI_COMPARE_ATOMIC) | FI_FETCH_ATOMIC);
}

static ssize_t a_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   const void *compare, void *compare_desc, void *result, void *result_desc,
			   fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			   enum fi_op op, void *context)
{
	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	return submit(ep, buf, count, compare, result, dest, addr, key, dt, op, context,
		      EP(ep)->tx_flags | FI_COMPARE_ATOMIC);
}

static ssize_t a_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t n,
			    const struct fi_ioc *comparev, void **compare_desc, size_t compare_n,
			    struct fi_ioc *resultv, void **result_desc, size_t result_n,
			    fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op op, void *context)
{
	void *buf, *cmp, *res;
	size_t count, ccount, rcount;
	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	int rc = ioc_one(iov, n, &buf, &count);
	if (rc == 0)
		rc = ioc_one(comparev, compare_n, &cmp, &ccount);
	if (rc == 0)
		rc = ioc_one(resultv, result_n, &res, &rcount);
	if (rc == 0 && (ccount < count || rcount < count))
		rc = -FI_EINVAL;
	return rc ? rc
		  : a_compwrite(ep, buf, count, NULL, cmp, NULL, res, NULL, dest, addr, key, dt, op,
				context);
}

static ssize_t a_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			      const struct fi_ioc *comparev, void **compare_desc, size_t compare_n,
			      struct fi_ioc *resultv, void **result_desc, size_t result_n,
			      uint64_t flags)
{
	void *buf, *cmp, *res;
	size_t count, ccount, rcount;
	(void)compare_desc;
	(void)result_desc;
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	int rc = ioc_one(msg->msg_iov, msg->iov_count, &buf, &count);
	if (rc == 0)
		rc = ioc_one(comparev, compare_n, &cmp, &ccount);
	if (rc == 0)
		rc = ioc_one(resultv, result_n, &res, &rcount);
	if (rc == 0 && (ccount < count || rcount < count))
		rc = -FI_EINVAL;
	return rc ? rc
		  : submit(ep, buf, count, cmp, res, msg->addr, msg->rma_iov[0].addr,
			   msg->rma_iov[0].key, msg->datatype, msg->op, msg->context,
			   (flags & ~(uint64_t)FI_FETCH_ATOMIC) | FI_COMPARE_ATOMIC);
}

struct fi_ops_atomic pp_fi_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = a_write,
    .writev = a_writev,
    .writemsg = a_writemsg,
    .inject = a_inject,
    .readwrite = a_readwrite,
    .readwritev = a_readwritev,
    .readwritemsg = a_readwritemsg,
    .compwrite = a_compwrite,
    .compwritev = a_compwritev,
    .compwritemsg = a_compwritemsg,
    .writevalid = writevalid,
    .readwritevalid = readwritevalid,
    .compwritevalid = compwritevalid,
};

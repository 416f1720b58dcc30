/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * iovs of more than one entry (iov_limit PP_FI_IOV_LIMIT). The engine sends
 * and receives one contiguous buffer, so such a send is gathered into a
 * buffer of the endpoint's, and such a receive lands in one and is scattered
 * into the iov when it completes (ep.c). One entry stays zero-copy.
 *
 * Buffers of up to PP_FI_IOV_SLOT bytes come from a pool made at fi_enable
 * (PP_FI_IOV_SLOTS of them): none left is -FI_EAGAIN, as a full queue is.
 * A longer message's buffer is allocated: its copy costs far more than the
 * allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "pp_fi.h"

int pp_fi_iov_enable(struct pp_fi_ep *ep)
{
	struct pp_fi_iov_pool *p = &ep->iovp;
	p->mem = malloc((size_t)PP_FI_IOV_SLOTS * PP_FI_IOV_SLOT);
	if (!p->mem)
		return -FI_ENOMEM;
	for (p->nfree = 0; p->nfree < PP_FI_IOV_SLOTS; p->nfree++)
		p->free[p->nfree] = p->mem + (size_t)p->nfree * PP_FI_IOV_SLOT;
	return 0;
}

void pp_fi_iov_close(struct pp_fi_ep *ep)
{
	free(ep->iovp.mem);
	memset(&ep->iovp, 0, sizeof(ep->iovp));
}

int pp_fi_iov_total(const struct iovec *iov, size_t count, size_t *total)
{
	if (count > PP_FI_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	size_t n = 0;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len > SIZE_MAX - n)
			return -FI_EINVAL;
		n += iov[i].iov_len;
	}
	*total = n;
	return 0;
}

void *pp_fi_iov_take(struct pp_fi_ep *ep, struct pp_fi_op *op, size_t len)
{
	struct pp_fi_iov_pool *p = &ep->iovp;
	if (len > PP_FI_IOV_SLOT)
		return op->bounce = malloc(len);
	if (!p->nfree)
		return NULL;
	return op->slot = p->free[--p->nfree];
}

void pp_fi_iov_give(struct pp_fi_ep *ep, struct pp_fi_op *op)
{
	if (op->slot)
		ep->iovp.free[ep->iovp.nfree++] = op->slot;
	op->slot = NULL;
}

void pp_fi_iov_gather(void *dst, const struct iovec *iov, size_t count)
{
	uint8_t *d = dst;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len)
			memcpy(d, iov[i].iov_base, iov[i].iov_len);
		d += iov[i].iov_len;
	}
}

void pp_fi_iov_scatter(const struct iovec *iov, size_t count, const void *src, size_t len)
{
	const uint8_t *s = src;
	for (size_t i = 0; i < count && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;
		if (n)
			memcpy(iov[i].iov_base, s, n);
		s += n;
		len -= n;
	}
}

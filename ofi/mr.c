/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration: what a peer's RMA and atomics may reach. Each domain
 * keeps a table of its registrations. With FI_MR_PROV_KEY the provider
 * chooses the key, (generation << 32) | slot, so a key found once in a
 * slot's entry is that registration, and a key of a closed registration
 * never names a later one; otherwise the caller's key is kept (unique in
 * the domain: -FI_ENOKEY). With FI_MR_VIRT_ADDR remote addresses are
 * virtual addresses, else offsets from the registration's start (plus the
 * offset given). Registering pins nothing: the target's progress pass
 * copies to and from the bytes as the process itself.
 */
#include <stdlib.h>
#include <string.h>

#include "rma.h"

#define SLOT_MASK 0xffffffffull

static int prov_keys(const struct pp_fi_domain *d)
{
	return d->mr_mode == FI_MR_BASIC || (d->mr_mode & FI_MR_PROV_KEY);
}

static int virt_addr(const struct pp_fi_domain *d)
{
	return d->mr_mode == FI_MR_BASIC || (d->mr_mode & FI_MR_VIRT_ADDR);
}

static struct pp_fi_mr *find(struct pp_fi_domain *d, uint64_t key)
{
	if (prov_keys(d)) {
		uint64_t slot = key & SLOT_MASK;
		struct pp_fi_mr *m = slot < d->mr_cap ? d->mrs[slot] : NULL;
		return m && m->fid.key == key ? m : NULL;
	}
	for (uint32_t i = 0; i < d->mr_cap; i++)
		if (d->mrs[i] && d->mrs[i]->fid.key == key)
			return d->mrs[i];
	return NULL;
}

int pp_fi_mr_check(struct pp_fi_domain *d, uint64_t key, uint64_t addr, uint64_t len,
		   uint64_t access, uint8_t **p)
{
	struct pp_fi_mr *m = find(d, key);
	if (!m)
		return -FI_EKEYREJECTED;
	if ((m->access & access) != access)
		return -FI_EACCES;
	/* off + len <= m->len, written so that nothing overflows. */
	if (addr < m->base)
		return -FI_EACCES;
	uint64_t off = addr - m->base;
	if (off > m->len || len > m->len - off)
		return -FI_EACCES;
	*p = m->buf + off;
	return 0;
}

static int mr_close(struct fid *fid)
{
	struct pp_fi_mr *m = (struct pp_fi_mr *)fid;
	struct pp_fi_domain *d = m->dom;
	pp_fi_lock(d);
	d->mrs[m->slot] = NULL;
	d->refs--;
	pp_fi_unlock(d);
	free(m);
	return 0;
}

void pp_fi_mr_fini(struct pp_fi_domain *d)
{
	free(d->mrs);
	d->mrs = NULL;
	d->mr_cap = 0;
}

static struct fi_ops mr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = mr_close,
    .bind = pp_fi_no_bind,
    .control = pp_fi_no_control,
    .ops_open = pp_fi_no_ops_open,
};

/* A free slot of the table, grown when full: its index, or -1. */
static int64_t free_slot(struct pp_fi_domain *d)
{
	for (uint32_t i = 0; i < d->mr_cap; i++)
		if (!d->mrs[i])
			return i;
	uint32_t cap = d->mr_cap ? 2 * d->mr_cap : 16;
	struct pp_fi_mr **t = realloc(d->mrs, cap * sizeof(*t));
	if (!t)
		return -1;
	memset(t + d->mr_cap, 0, (cap - d->mr_cap) * sizeof(*t));
	d->mrs = t;
	int64_t slot = d->mr_cap;
	d->mr_cap = cap;
	return slot;
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		      struct fid_mr **out)
{
	struct pp_fi_domain *d = (struct pp_fi_domain *)fid;
	if (!attr || !out || flags || attr->iov_count > 1 || (attr->iov_count && !attr->mr_iov))
		return -FI_EINVAL;
	const uint8_t *buf = attr->iov_count ? attr->mr_iov[0].iov_base : NULL;
	size_t len = attr->iov_count ? attr->mr_iov[0].iov_len : 0;
	if (len && !buf)
		return -FI_EINVAL;
	struct pp_fi_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->fid.fid.fclass = FI_CLASS_MR;
	m->fid.fid.context = attr->context;
	m->fid.fid.ops = &mr_fi_ops;
	m->fid.mem_desc = m;
	m->dom = d;
	m->buf = (uint8_t *)buf;
	m->len = len;
	m->access = attr->access;
	m->base = virt_addr(d) ? (uint64_t)(uintptr_t)buf : attr->offset;
	int rc = 0;
	pp_fi_lock(d);
	int64_t slot = free_slot(d);
	if (slot < 0) {
		rc = -FI_ENOMEM;
	} else if (prov_keys(d)) {
		m->fid.key = (uint64_t)++d->mr_gen << 32 | (uint64_t)slot;
	} else if (find(d, attr->requested_key)) {
		rc = -FI_ENOKEY;
	} else {
		m->fid.key = attr->requested_key;
	}
	if (rc == 0) {
		m->slot = (uint32_t)slot;
		d->mrs[slot] = m;
		d->refs++;
	}
	pp_fi_unlock(d);
	if (rc) {
		free(m);
		return rc;
	}
	*out = &m->fid;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		   void *context)
{
	struct fi_mr_attr a = {
	    .mr_iov = iov,
	    .iov_count = count,
	    .access = access,
	    .offset = offset,
	    .requested_key = requested_key,
	    .context = context,
	};
	return mr_regattr(fid, &a, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

struct fi_ops_mr pp_fi_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = mr_reg,
    .regv = mr_regv,
    .regattr = mr_regattr,
};

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address vectors. A name (fi_pp.h) carries what a peer needs to reach a
 * rank: MAC, rank, job size, incarnation, job key, node key. Inserting one makes the
 * rank a peer of every endpoint bound to the AV. fi_addr_t values are
 * insertion indices for FI_AV_TABLE, and those plus one for FI_AV_MAP (a map
 * may hand out any value): so 0 is no map address, which tagged.c takes as
 * any source (Open MPI 4.1's mtl ofi posts its MPI_Ssend acknowledgement
 * receive from fi_addr_t 0 when it carries the source rank in the tag). The
 * rank table maps sources back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_bytes.h"
#include "pp_fi.h"

#define NAME_MAGIC   'P'
#define NAME_VERSION 2

void pp_fi_name_encode(uint8_t *out, const struct pp_embed_addr *a)
{
	out[0] = NAME_MAGIC;
	out[1] = NAME_VERSION;
	memcpy(out + 2, a->mac, 6);
	pp_put_le32(out + 8, a->rank);
	pp_put_le32(out + 12, a->size);
	pp_put_le32(out + 16, a->inc);
	pp_put_le32(out + 20, a->job);
	pp_put_le32(out + 24, (uint32_t)a->node);
	pp_put_le32(out + 28, (uint32_t)(a->node >> 32));
}

int pp_fi_name_decode(const uint8_t *in, struct pp_embed_addr *a)
{
	if (in[0] != NAME_MAGIC || in[1] != NAME_VERSION)
		return -FI_EINVAL;
	memcpy(a->mac, in + 2, 6);
	a->rank = pp_get_le32(in + 8);
	a->size = pp_get_le32(in + 12);
	a->inc = pp_get_le32(in + 16);
	a->job = pp_get_le32(in + 20);
	a->node = (uint64_t)pp_get_le32(in + 24) | (uint64_t)pp_get_le32(in + 28) << 32;
	return a->rank < a->size ? 0 : -FI_EINVAL;
}

/* fi_addr_t <-> index of ent. */
static fi_addr_t to_addr(const struct pp_fi_av *av, size_t i)
{
	return av->type == FI_AV_MAP ? (fi_addr_t)i + 1 : (fi_addr_t)i;
}

static size_t to_index(const struct pp_fi_av *av, fi_addr_t a)
{
	return av->type == FI_AV_MAP ? (size_t)(a - 1) : (size_t)a; /* map's 0: SIZE_MAX */
}

int pp_fi_av_rank(const struct pp_fi_av *av, fi_addr_t addr)
{
	size_t i = av ? to_index(av, addr) : SIZE_MAX;
	if (!av || i >= av->n || !av->ent[i].valid)
		return -1;
	return (int)av->ent[i].a.rank;
}

fi_addr_t pp_fi_av_addr(const struct pp_fi_av *av, int rank)
{
	if (!av || rank < 0 || (uint32_t)rank >= av->nranks)
		return FI_ADDR_NOTAVAIL;
	return av->by_rank[rank];
}

void pp_fi_av_bind(struct pp_fi_av *av, struct pp_fi_ep *ep)
{
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (!av->eps[i]) {
			av->eps[i] = ep;
			return;
		}
}

void pp_fi_av_unbind(struct pp_fi_av *av, struct pp_fi_ep *ep)
{
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (av->eps[i] == ep)
			av->eps[i] = NULL;
}

static int grow(struct pp_fi_av *av, size_t n, uint32_t nranks)
{
	if (n > av->cap) {
		size_t cap = av->cap ? av->cap : 64;
		while (cap < n)
			cap *= 2;
		void *p = realloc(av->ent, cap * sizeof(*av->ent));
		if (!p)
			return -FI_ENOMEM;
		av->ent = p;
		av->cap = cap;
	}
	if (nranks > av->nranks) {
		fi_addr_t *p = realloc(av->by_rank, nranks * sizeof(*p));
		if (!p)
			return -FI_ENOMEM;
		for (uint32_t r = av->nranks; r < nranks; r++)
			p[r] = FI_ADDR_NOTAVAIL;
		av->by_rank = p;
		av->nranks = nranks;
	}
	return 0;
}

/* One name; its fi_addr_t, or a negative FI_E* code. */
static int64_t insert_one(struct pp_fi_av *av, const uint8_t *name)
{
	struct pp_embed_addr a;
	int rc = pp_fi_name_decode(name, &a);
	if (rc)
		return rc;
	if ((rc = grow(av, av->n + 1, a.size)))
		return rc;
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (av->eps[i] && (rc = pp_fi_ep_peer(av->eps[i], &a)))
			return rc;
	size_t i = av->n++;
	av->ent[i].a = a;
	av->ent[i].valid = 1;
	fi_addr_t fa = to_addr(av, i);
	if (av->by_rank[a.rank] == FI_ADDR_NOTAVAIL)
		av->by_rank[a.rank] = fa;
	return (int64_t)fa;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct pp_fi_av *av = (struct pp_fi_av *)fav;
	if (flags & ~(uint64_t)FI_SYNC_ERR)
		return -FI_EINVAL; /* no FI_MORE, no event queue */
	int *errs = flags & FI_SYNC_ERR ? context : NULL;
	int done = 0;
	pp_fi_lock(av->dom);
	for (size_t i = 0; i < count; i++) {
		int64_t fa = insert_one(av, (const uint8_t *)addr + i * FI_PP_NAME_LEN);
		if (fa < 0)
			PP_FI_WARN(FI_LOG_AV, "address %zu not inserted: %s\n", i,
				   fi_strerror((int)-fa));
		else
			done++;
		if (fi_addr)
			fi_addr[i] = fa < 0 ? FI_ADDR_NOTAVAIL : (fi_addr_t)fa;
		if (errs)
			errs[i] = fa < 0 ? (int)-fa : 0;
	}
	pp_fi_unlock(av->dom);
	return done;
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)av;
	(void)node;
	(void)service;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return -FI_ENOSYS;
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)av;
	(void)node;
	(void)nodecnt;
	(void)service;
	(void)svccnt;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return -FI_ENOSYS;
}

/* The engine keeps the peer: a removed address only stops naming it. */
static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct pp_fi_av *av = (struct pp_fi_av *)fav;
	(void)flags;
	int rc = 0;
	pp_fi_lock(av->dom);
	for (size_t k = 0; k < count; k++) {
		fi_addr_t fa = fi_addr[k];
		size_t i = to_index(av, fa);
		if (i >= av->n || !av->ent[i].valid) {
			rc = -FI_EINVAL;
			continue;
		}
		av->ent[i].valid = 0;
		uint32_t r = av->ent[i].a.rank;
		if (av->by_rank[r] == fa) {
			av->by_rank[r] = FI_ADDR_NOTAVAIL;
			for (size_t j = 0; j < av->n; j++)
				if (av->ent[j].valid && av->ent[j].a.rank == r) {
					av->by_rank[r] = to_addr(av, j);
					break;
				}
		}
	}
	pp_fi_unlock(av->dom);
	return rc;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct pp_fi_av *av = (struct pp_fi_av *)fav;
	int rc = 0;
	pp_fi_lock(av->dom);
	size_t i = to_index(av, fi_addr);
	if (i >= av->n || !av->ent[i].valid) {
		rc = -FI_EINVAL;
	} else {
		uint8_t name[FI_PP_NAME_LEN];
		pp_fi_name_encode(name, &av->ent[i].a);
		memcpy(addr, name, *addrlen < sizeof(name) ? *addrlen : sizeof(name));
		*addrlen = sizeof(name);
	}
	pp_fi_unlock(av->dom);
	return rc;
}

/* "fi_addr_pp://MAC/rRANK/sSIZE/iINC/jJOB" */
static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	(void)av;
	struct pp_embed_addr a;
	char s[96];
	if (pp_fi_name_decode(addr, &a))
		snprintf(s, sizeof(s), "fi_addr_pp://invalid");
	else
		snprintf(s, sizeof(s), "fi_addr_pp://%02x:%02x:%02x:%02x:%02x:%02x/r%u/s%u/i%u/j%u",
			 a.mac[0], a.mac[1], a.mac[2], a.mac[3], a.mac[4], a.mac[5], a.rank, a.size,
			 a.inc, a.job);
	size_t n = strlen(s) + 1;
	if (buf && *len)
		snprintf(buf, *len, "%s", s);
	*len = n;
	return buf;
}

static int no_av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **set,
		     void *context)
{
	(void)av;
	(void)attr;
	(void)set;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = no_av_set,
};

static int av_close(struct fid *fid)
{
	struct pp_fi_av *av = (struct pp_fi_av *)fid;
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (av->eps[i])
			return -FI_EBUSY;
	pp_fi_lock(av->dom);
	av->dom->refs--;
	pp_fi_unlock(av->dom);
	free(av->ent);
	free(av->by_rank);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close,
    .bind = pp_fi_no_bind,
    .control = pp_fi_no_control,
    .ops_open = pp_fi_no_ops_open,
};

int pp_fi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **out,
		  void *context)
{
	struct pp_fi_domain *dom = (struct pp_fi_domain *)domain;
	if (!attr || attr->rx_ctx_bits || attr->name || (attr->flags & ~(uint64_t)FI_SYMMETRIC))
		return -FI_ENOSYS; /* no scalable endpoints, shared AVs or events */
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	struct pp_fi_av *av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->fid.fid.fclass = FI_CLASS_AV;
	av->fid.fid.context = context;
	av->fid.fid.ops = &av_fi_ops;
	av->fid.ops = &av_ops;
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	attr->type = av->type;
	pp_fi_lock(dom);
	dom->refs++;
	pp_fi_unlock(dom);
	*out = &av->fid;
	return 0;
}

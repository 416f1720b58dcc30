/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fabric and domain objects: containers. A domain holds the lock of its
 * objects when its threading level asks for one (anything but
 * FI_THREAD_DOMAIN, where the application serialises calls itself). And an
 * event queue with nothing to report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rma.h"

/* ---- domain ---- */

static int domain_close(struct fid *fid)
{
	struct pp_fi_domain *d = (struct pp_fi_domain *)fid;
	if (d->refs)
		return -FI_EBUSY;
	pp_fi_mr_fini(d);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

static struct fi_ops domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,
    .bind = pp_fi_no_bind,
    .control = pp_fi_no_control,
    .ops_open = pp_fi_no_ops_open,
};

static int no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
			  void *context)
{
	(void)domain;
	(void)info;
	(void)sep;
	(void)context;
	return -FI_ENOSYS;
}

static int no_cntr(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		   void *context)
{
	(void)domain;
	(void)attr;
	(void)cntr;
	(void)context;
	return -FI_ENOSYS;
}

static int no_poll(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **p)
{
	(void)domain;
	(void)attr;
	(void)p;
	return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
		  void *context)
{
	(void)domain;
	(void)attr;
	(void)stx;
	(void)context;
	return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx,
		  void *context)
{
	(void)domain;
	(void)attr;
	(void)rx;
	(void)context;
	return -FI_ENOSYS;
}

static int no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			       struct fi_collective_attr *attr, uint64_t flags)
{
	(void)domain;
	(void)coll;
	(void)attr;
	(void)flags;
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		     uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return pp_fi_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = pp_fi_av_open,
    .cq_open = pp_fi_cq_open,
    .endpoint = pp_fi_ep_open,
    .scalable_ep = no_scalable_ep,
    .cntr_open = no_cntr,
    .poll_open = no_poll,
    .stx_ctx = no_stx,
    .srx_ctx = no_srx,
    .query_atomic = pp_fi_query_atomic,
    .query_collective = no_query_collective,
    .endpoint2 = endpoint2,
};

static int domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		       void *context)
{
	if (!info || !info->domain_attr ||
	    (info->domain_attr->name && strcmp(info->domain_attr->name, PP_FI_NAME)))
		return -FI_EINVAL;
	struct pp_fi_domain *d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	d->fid.fid.fclass = FI_CLASS_DOMAIN;
	d->fid.fid.context = context;
	d->fid.fid.ops = &domain_fi_ops;
	d->fid.ops = &domain_ops;
	d->fid.mr = &pp_fi_mr_ops;
	d->mr_mode = info->domain_attr->mr_mode;
	d->fabric = (struct pp_fi_fabric *)fabric;
	d->locking = info->domain_attr->threading != FI_THREAD_DOMAIN;
	pthread_mutex_init(&d->lock, NULL);
	*dom = &d->fid;
	return 0;
}

static int domain2_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
			uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return domain_open(fabric, info, dom, context);
}

/* ---- fabric ---- */

static int fabric_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fabric_close,
    .bind = pp_fi_no_bind,
    .control = pp_fi_no_control,
    .ops_open = pp_fi_no_ops_open,
};

static int no_pep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		  void *context)
{
	(void)fabric;
	(void)info;
	(void)pep;
	(void)context;
	return -FI_ENOSYS;
}

static int no_wait(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **w)
{
	(void)fabric;
	(void)attr;
	(void)w;
	return -FI_ENOSYS;
}

/* 0 when every queue in fids is empty (a wait on it may sleep); event and
 * completion queues have wait objects here. */
static int trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	for (int i = 0; i < count; i++) {
		int rc = fids[i]->fclass == FI_CLASS_EQ	  ? pp_fi_eq_trywait(fids[i])
			 : fids[i]->fclass == FI_CLASS_CQ ? pp_fi_cq_trywait(fids[i])
							  : -FI_ENOSYS;
		if (rc)
			return rc;
	}
	return 0;
}

static struct fi_ops_fabric fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = domain_open,
    .passive_ep = no_pep,
    .eq_open = pp_fi_eq_open,
    .wait_open = no_wait,
    .trywait = trywait,
    .domain2 = domain2_open,
};

int pp_fi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (attr && attr->name && strcmp(attr->name, PP_FI_NAME))
		return -FI_EINVAL;
	struct pp_fi_fabric *f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->fid.fid.fclass = FI_CLASS_FABRIC;
	f->fid.fid.context = context;
	f->fid.fid.ops = &fabric_fi_ops;
	f->fid.ops = &fabric_ops;
	f->fid.api_version = attr ? attr->api_version : PP_FI_API_VER;
	*fabric = &f->fid;
	return 0;
}

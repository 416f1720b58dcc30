/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_getinfo: one fi_info, offered only where a port and a rank are
 * configured (PP_DEV or PP_DAEMON; PP_RANK and PP_SIZE or a launcher's), so
 * a machine with the library installed but no librt-pp port never has MPI
 * picking it. Hints are minimums: what asks for more than an endpoint can
 * do is refused with -FI_ENODATA, one FI_INFO line saying why, as
 * libfabric's own providers do (prov/util/src/util_attr.c). Remote CQ data
 * is 4 bytes (PP_FI_CQ_DATA: it travels in the message's first frame,
 * docs/wire.md), what Open MPI's mtl ofi asks to carry the source rank
 * outside the tag; a hint asking more is refused.
 *
 * RMA and atomics (rma.h) answer every mr_mode: the bits FI_MR_VIRT_ADDR,
 * FI_MR_ALLOCATED and FI_MR_PROV_KEY the hints allow are kept (the others
 * are not needed), so Open MPI's btl ofi gets what it asks and an
 * application that allows none gets offsets and its own keys. Every RMA
 * operation and atomic completes once the target has applied it, so
 * FI_DELIVERY_COMPLETE (btl ofi asks it) is offered to an endpoint without
 * messages, whose sends complete earlier.
 */
#include <stdlib.h>
#include <string.h>

#include "pp_fi.h"
#include "wire.h"

#define NODATA(...)                                                                                \
	do {                                                                                       \
		PP_FI_INFO(FI_LOG_CORE, __VA_ARGS__);                                              \
		return -FI_ENODATA;                                                                \
	} while (0)

#define PP_FI_ORDER    FI_ORDER_SAS /* matching follows each sender's order */
#define PP_FI_OP_FLAGS (FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE)
#define PP_FI_BUFFERED (1u << 20) /* the pushed buffer */

/* A port and a rank configured: 0 with *rank and *size (PP_RANK and
 * PP_SIZE first, as the endpoint takes them), else -FI_ENODATA. */
static int configured(int *rank, int *size)
{
	const char *dev = getenv("PP_DEV"), *daemon = getenv("PP_DAEMON");
	if (!(dev && dev[0]) && !(daemon && daemon[0]))
		NODATA("no librt-pp port: set PP_DEV (or PP_DAEMON)\n");
	struct pp_launcher l;
	pp_launcher_env(&l);
	const char *r = getenv("PP_RANK"), *s = getenv("PP_SIZE");
	if (r && s) {
		l.rank = atoi(r);
		l.size = atoi(s);
	}
	if (l.rank < 0 || l.size <= l.rank)
		NODATA("no rank: run under a launcher (mpirun, srun, mpiexec) or set PP_RANK and "
		       "PP_SIZE\n");
	*rank = l.rank;
	*size = l.size;
	return 0;
}

static int check_tx(const struct fi_tx_attr *t, uint64_t caps)
{
	uint64_t ops = PP_FI_OP_FLAGS;
	if (caps && !(caps & (FI_MSG | FI_TAGGED)))
		ops |= FI_DELIVERY_COMPLETE; /* RMA and atomics alone */
	if (t->caps & ~PP_FI_CAPS)
		NODATA("tx caps 0x%llx not offered\n", (unsigned long long)(t->caps & ~PP_FI_CAPS));
	if (t->op_flags & ~ops)
		NODATA("tx op_flags 0x%llx (delivery-complete with messages, ...) not offered\n",
		       (unsigned long long)(t->op_flags & ~ops));
	if (t->msg_order & ~(uint64_t)PP_FI_ORDER)
		NODATA("tx msg_order 0x%llx not offered (send after send only)\n",
		       (unsigned long long)t->msg_order);
	if (t->comp_order & ~(uint64_t)FI_ORDER_NONE)
		NODATA("tx comp_order not offered\n");
	if (t->inject_size > PP_FI_INJECT || t->size > PP_FI_QUEUE ||
	    t->iov_limit > PP_FI_IOV_LIMIT || t->rma_iov_limit > 1)
		NODATA("tx sizes beyond inject %u, size %u, iov 1, rma iov 1\n", PP_FI_INJECT,
		       PP_FI_QUEUE);
	return 0;
}

static int check_rx(const struct fi_rx_attr *r)
{
	if (r->caps & ~PP_FI_CAPS)
		NODATA("rx caps 0x%llx not offered\n", (unsigned long long)(r->caps & ~PP_FI_CAPS));
	if (r->op_flags & ~(uint64_t)FI_COMPLETION)
		NODATA("rx op_flags 0x%llx not offered\n", (unsigned long long)r->op_flags);
	if (r->msg_order & ~(uint64_t)PP_FI_ORDER)
		NODATA("rx msg_order 0x%llx not offered (send after send only)\n",
		       (unsigned long long)r->msg_order);
	if (r->comp_order & ~(uint64_t)FI_ORDER_NONE)
		NODATA("rx comp_order not offered\n");
	if (r->size > PP_FI_QUEUE || r->iov_limit > PP_FI_IOV_LIMIT ||
	    r->total_buffered_recv > PP_FI_BUFFERED)
		NODATA("rx sizes beyond size %u, iov 1\n", PP_FI_QUEUE);
	return 0;
}

static int check_domain(const struct fi_domain_attr *d)
{
	if (d->name && strcmp(d->name, PP_FI_NAME))
		NODATA("domain %s is not %s\n", d->name, PP_FI_NAME);
	if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO)
		NODATA("automatic progress not offered (manual: progress in CQ reads)\n");
	if (d->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM))
		NODATA("domain caps not offered\n");
	if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE)
		NODATA("av_type %d not offered\n", d->av_type);
	if (d->max_ep_tx_ctx > 1 || d->max_ep_rx_ctx > 1 || d->max_ep_stx_ctx ||
	    d->max_ep_srx_ctx || d->cntr_cnt)
		NODATA("scalable or shared contexts and counters not offered\n");
	if (d->cq_data_size > PP_FI_CQ_DATA)
		NODATA("cq_data_size %zu not offered (%u bytes)\n", d->cq_data_size, PP_FI_CQ_DATA);
	return 0;
}

static int check_hints(const struct fi_info *h)
{
	if (!h)
		return 0;
	if (h->caps & ~PP_FI_CAPS)
		NODATA("caps 0x%llx not offered (no multi-receive, HMEM, RMA events, triggers)\n",
		       (unsigned long long)(h->caps & ~PP_FI_CAPS));
	if (h->addr_format != FI_FORMAT_UNSPEC)
		NODATA("address format %u not offered (ours is opaque, fi_pp.h)\n", h->addr_format);
	/* A source address chooses nothing (the port and rank are configured),
	 * but one must be a pp name: fabtests hand back what fi_getinfo gave. */
	struct pp_embed_addr a;
	if (h->src_addr && (h->src_addrlen != FI_PP_NAME_LEN || pp_fi_name_decode(h->src_addr, &a)))
		NODATA("source address is not a pp name (fi_pp.h)\n");
	if (h->handle)
		NODATA("no connection handle\n");
	/* A peer's name as fi_getname gave it: fi_pingpong's client asks with
	 * the server's. */
	if (h->dest_addr &&
	    (h->dest_addrlen != FI_PP_NAME_LEN || pp_fi_name_decode(h->dest_addr, &a)))
		NODATA("destination address is not a pp name (fi_pp.h)\n");
	if (h->ep_attr) {
		const struct fi_ep_attr *e = h->ep_attr;
		if (e->type != FI_EP_UNSPEC && e->type != FI_EP_RDM)
			NODATA("endpoint type %d not offered (reliable datagram only)\n", e->type);
		if (e->protocol != FI_PROTO_UNSPEC || e->max_msg_size > PP_FI_MAX_MSG ||
		    e->msg_prefix_size || e->tx_ctx_cnt > 1 || e->rx_ctx_cnt > 1 ||
		    e->auth_key_size)
			NODATA("endpoint attributes not offered\n");
	}
	if (h->tx_attr && check_tx(h->tx_attr, h->caps))
		return -FI_ENODATA;
	if (h->rx_attr && check_rx(h->rx_attr))
		return -FI_ENODATA;
	if (h->domain_attr && check_domain(h->domain_attr))
		return -FI_ENODATA;
	if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, PP_FI_NAME))
		NODATA("fabric %s is not %s\n", h->fabric_attr->name, PP_FI_NAME);
	return 0;
}

/* The registration mode: what of FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and
 * FI_MR_PROV_KEY the application allows (before API 1.5, FI_MR_BASIC is all
 * three and FI_MR_SCALABLE none, and an application that names neither,
 * FI_MR_UNSPEC, must be told which: ours without any is FI_MR_SCALABLE). */
static int mr_mode(uint32_t version, const struct fi_info *h)
{
	int m = h && h->domain_attr ? h->domain_attr->mr_mode : 0;
	if (m == FI_MR_BASIC || m == FI_MR_SCALABLE)
		return m;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return FI_MR_SCALABLE;
	return m & (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
}

static struct fi_info *make_info(uint32_t version, const struct fi_info *h, int rank, int size)
{
	struct fi_info *fi = fi_allocinfo();
	if (!fi)
		return NULL;
	uint64_t caps = h && h->caps ? h->caps : PP_FI_CAPS;
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	caps |= FI_LOCAL_COMM | FI_REMOTE_COMM; /* both are true of every endpoint */
	/* RMA or atomics naming no direction mean all four. */
	if ((caps & (FI_RMA | FI_ATOMIC)) &&
	    !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	fi->caps = caps;
	fi->mode = 0; /* nothing asked of the application */
	fi->addr_format = FI_FORMAT_UNSPEC;

	fi->tx_attr->caps =
	    caps & (FI_TAGGED | FI_MSG | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE);
	fi->tx_attr->op_flags = h && h->tx_attr ? h->tx_attr->op_flags : 0;
	fi->tx_attr->msg_order = PP_FI_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = PP_FI_INJECT;
	fi->tx_attr->size = PP_FI_QUEUE;
	fi->tx_attr->iov_limit = PP_FI_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = caps & (FI_RMA | FI_ATOMIC) ? 1 : 0;

	fi->rx_attr->caps = caps & (FI_TAGGED | FI_MSG | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
				    FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE);
	fi->rx_attr->op_flags = h && h->rx_attr ? h->rx_attr->op_flags : 0;
	fi->rx_attr->msg_order = PP_FI_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = PP_FI_BUFFERED;
	fi->rx_attr->size = PP_FI_QUEUE;
	fi->rx_attr->iov_limit = PP_FI_IOV_LIMIT;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = PP_WIRE_VERSION;
	fi->ep_attr->max_msg_size = PP_FI_MAX_MSG;
	/* Untagged messages and RMA keep top tag bits for themselves. */
	fi->ep_attr->mem_tag_format = pp_fi_tag_mask(caps);
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	struct fi_domain_attr *d = fi->domain_attr;
	const struct fi_domain_attr *hd = h ? h->domain_attr : NULL;
	d->name = strdup(PP_FI_NAME);
	d->threading = hd && hd->threading ? hd->threading : FI_THREAD_SAFE;
	d->control_progress = FI_PROGRESS_MANUAL;
	d->data_progress = FI_PROGRESS_MANUAL;
	d->resource_mgmt = FI_RM_ENABLED;
	d->av_type = hd ? hd->av_type : FI_AV_UNSPEC;
	d->mr_mode = mr_mode(version, h);
	d->mr_key_size = sizeof(uint64_t);
	d->mr_cnt = 1u << 20;
	d->cq_data_size = PP_FI_CQ_DATA;
	d->cq_cnt = 64;
	d->ep_cnt = 1;
	d->tx_ctx_cnt = 1;
	d->rx_ctx_cnt = 1;
	d->max_ep_tx_ctx = 1;
	d->max_ep_rx_ctx = 1;
	d->mr_iov_limit = 1;
	d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;

	fi->fabric_attr->name = strdup(PP_FI_NAME); /* prov_name: the core sets it */
	/* The source address: what is known of the endpoint's name before it
	 * opens, its rank and job size (the port's MAC, the incarnation and the
	 * job key come with fi_getname once it is enabled). */
	struct pp_embed_addr me = {.rank = (uint32_t)rank, .size = (uint32_t)size};
	if ((fi->src_addr = malloc(FI_PP_NAME_LEN))) {
		pp_fi_name_encode(fi->src_addr, &me);
		fi->src_addrlen = FI_PP_NAME_LEN;
	}
	if (h && h->dest_addr && (fi->dest_addr = malloc(FI_PP_NAME_LEN))) {
		memcpy(fi->dest_addr, h->dest_addr, FI_PP_NAME_LEN);
		fi->dest_addrlen = FI_PP_NAME_LEN;
	}
	if (!d->name || !fi->fabric_attr->name || !fi->src_addr ||
	    (h && h->dest_addr && !fi->dest_addr)) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

int pp_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		  const struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	/* A local address chosen by node and service (FI_SOURCE, or a service
	 * alone: every fabtests server, and its client under -E) chooses
	 * nothing here: the endpoint's address is the configured port's and
	 * rank's, so they are noted and the answer is the same. A destination
	 * named by node cannot be resolved (a pp name is no host name): its
	 * name comes from its fi_getname, exchanged out of band, or as
	 * hints->dest_addr. */
	if (node && !(flags & FI_SOURCE))
		NODATA("destination node %s cannot be resolved: exchange names from fi_getname "
		       "out of band (fabtests' -E) and fi_av_insert them\n",
		       node);
	if (node || service)
		PP_FI_INFO(FI_LOG_CORE,
			   "source node %s, service %s: not used (the address is PP_DEV's port and "
			   "the rank's)\n",
			   node ? node : "-", service ? service : "-");
	int rank, size, rc = configured(&rank, &size);
	if (rc == 0)
		rc = check_hints(hints);
	if (rc)
		return rc;
	*info = make_info(version, hints, rank, size);
	return *info ? 0 : -FI_ENOMEM;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an application may name of the "pp" libfabric provider beyond
 * libfabric's own API (as rdma/fi_ext.h does for other providers).
 */
#ifndef FI_PP_H
#define FI_PP_H

#include <rdma/fi_ext.h>

#define FI_PROV_SPECIFIC_PP (0x9950 << 16)

/* fi_setopt(ep, FI_OPT_ENDPOINT, FI_OPT_PP_CONFIG, "key=value,...", len)
 * before fi_enable: librt-pp settings for this endpoint (pp_init's string:
 * rank, size, job, dev, mode, timeout_ms, ...), over PP_<KEY> variables and
 * the launcher's. Lets one process hold several endpoints of one job (tests). */
enum {
	FI_OPT_PP_CONFIG = -FI_PROV_SPECIFIC_PP, /* const char *, NUL-terminated */
};

/* The endpoint name (fi_getname, fi_av_insert): FI_PP_NAME_LEN bytes,
 * little-endian: 'P', version 2, the port's MAC (6), rank, job size,
 * incarnation and job key (4 each), the node's key (8: ranks whose keys are
 * equal share a node, and its memory). */
#define FI_PP_NAME_LEN 32

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider's entry point: libfabric's loader opens every *-fi.so in
 * FI_PROVIDER_PATH (or its own lib/libfabric/) and calls fi_prov_ini
 * (rdma/providers/fi_prov.h), the only symbol this library exports.
 */
#include "pp_fi.h"

/* At fi_fini, before the library is unloaded. */
static void pp_fi_cleanup(void)
{
	pp_embed_cleanup();
}

struct fi_provider pp_fi_prov = {
    .name = PP_FI_NAME,
    .version = PP_FI_PROV_VER,
    .fi_version = PP_FI_API_VER,
    .getinfo = pp_fi_getinfo,
    .fabric = pp_fi_fabric_open,
    .cleanup = pp_fi_cleanup,
};

struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
	return &pp_fi_prov;
}

int pp_fi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

int pp_fi_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int pp_fi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

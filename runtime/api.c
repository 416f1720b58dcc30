/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Public entry points. The engine arrives with the runtime issue; until then
 * pp_init validates its configuration and the rest report -ENOSYS.
 */
#include <errno.h>
#include <stddef.h>

#include "config.h"
#include "pp.h"

PP_API int pp_init(pp_ctx **ctx, const char *config)
{
	struct pp_config cfg;
	if (!ctx)
		return -EINVAL;
	int rc = pp_config_load(&cfg, config);
	if (rc)
		return rc;
	return -ENOSYS;
}

PP_API int pp_finalize(pp_ctx *ctx)
{
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API int pp_rank(const pp_ctx *ctx)
{
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API int pp_size(const pp_ctx *ctx)
{
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API int pp_send(pp_ctx *ctx, const void *buf, size_t len, int dest, int tag)
{
	(void)buf, (void)len, (void)dest, (void)tag;
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API int pp_recv(pp_ctx *ctx, void *buf, size_t len, int source, int tag, pp_status *st)
{
	(void)buf, (void)len, (void)source, (void)tag, (void)st;
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API int pp_isend(pp_ctx *ctx, const void *buf, size_t len, int dest, int tag, pp_req **req)
{
	(void)buf, (void)len, (void)dest, (void)tag;
	return ctx && req ? -ENOSYS : -EINVAL;
}

PP_API int pp_irecv(pp_ctx *ctx, void *buf, size_t len, int source, int tag, pp_req **req)
{
	(void)buf, (void)len, (void)source, (void)tag;
	return ctx && req ? -ENOSYS : -EINVAL;
}

PP_API int pp_test(pp_req **req, int *done, pp_status *st)
{
	(void)st;
	return req && *req && done ? -ENOSYS : -EINVAL;
}

PP_API int pp_wait(pp_req **req, pp_status *st)
{
	(void)st;
	return req && *req ? -ENOSYS : -EINVAL;
}

PP_API int pp_barrier(pp_ctx *ctx)
{
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API int pp_progress(pp_ctx *ctx)
{
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API void *pp_malloc(pp_ctx *ctx, size_t len)
{
	(void)len;
	errno = ctx ? ENOSYS : EINVAL;
	return NULL;
}

PP_API void pp_free(pp_ctx *ctx, void *p)
{
	(void)ctx, (void)p;
}

PP_API int pp_prerecv(pp_ctx *ctx, unsigned site)
{
	(void)site;
	return ctx ? -ENOSYS : -EINVAL;
}

PP_API int pp_get_stats(pp_ctx *ctx, struct pp_stats *out)
{
	return ctx && out ? -ENOSYS : -EINVAL;
}

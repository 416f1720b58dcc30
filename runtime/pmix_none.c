/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A build without PMIx (meson option pmix, or no libpmix-dev): the PMIx
 * bootstrap is never chosen (pp_boot_choose asks pp_pmix_built), so only
 * pp_pmix_built is ever called; the rest keeps the link whole.
 */
#include <errno.h>

#include "bootstrap.h"

bool pp_pmix_built(void)
{
	return false;
}

int pp_pmix_init(struct pp_config *c)
{
	(void)c;
	return -ENOTSUP;
}

int pp_pmix_exchange(pp_ctx *ctx)
{
	(void)ctx;
	return -ENOTSUP;
}

void pp_pmix_fini(void)
{
}

/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "pp.h"

/* The errors the library returns get texts in its own words; others fall
 * back to the C library's. */
PP_API const char *pp_strerror(int err)
{
	switch (-err) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid argument or configuration";
	case ENOMEM:
		return "out of memory or requests";
	case EMSGSIZE:
		return "message truncated: receive buffer shorter than the message";
	case ETIMEDOUT:
		return "timed out";
	case ECONNRESET:
		return "peer lost";
	case EPROTO:
		return "protocol violation";
	case ENOSYS:
		return "not implemented in this release";
	case ENODEV:
		return "no such device or port";
	}
	if (err < 0 && err > -4096) {
		const char *s = strerrordesc_np(-err);
		if (s)
			return s;
	}
	return "unknown error";
}

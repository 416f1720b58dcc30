/* SPDX-License-Identifier: BSD-3-Clause */
#include "pp_log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

/* -1 until first use; then the threshold. Threads may race to set it first:
 * they compute the same value from the same environment, and the accesses
 * are atomic (relaxed: nothing else is published with it). */
static _Atomic int threshold = -1;

static int level_from_name(const char *name)
{
	for (int i = 0; i <= PP_LOG_OFF; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -EINVAL;
}

enum pp_log_level pp_log_level(void)
{
	int t = atomic_load_explicit(&threshold, memory_order_relaxed);
	if (t < 0) {
		const char *env = getenv("PP_LOG");
		int l = env ? level_from_name(env) : -EINVAL;
		t = l >= 0 ? l : PP_LOG_ERROR;
		atomic_store_explicit(&threshold, t, memory_order_relaxed);
	}
	return (enum pp_log_level)t;
}

int pp_log_set_level(const char *name)
{
	int l = level_from_name(name);
	if (l < 0)
		return l;
	atomic_store_explicit(&threshold, l, memory_order_relaxed);
	return 0;
}

void pp_log(enum pp_log_level level, const char *fmt, ...)
{
	if (level < pp_log_level())
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per message so lines of concurrent ranks do not interleave. */
	fprintf(stderr, "pp: %s: %s\n", level_names[level], line);
}

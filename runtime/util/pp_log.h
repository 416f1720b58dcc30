/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one logging helper. Messages go to stderr prefixed "pp: "; the level is
 * read once from PP_LOG (debug|info|warn|error|off, default error), so the
 * library is quiet unless asked. Never used on the hot path above debug.
 */
#ifndef PP_LOG_H
#define PP_LOG_H

enum pp_log_level {
	PP_LOG_DEBUG = 0,
	PP_LOG_INFO,
	PP_LOG_WARN,
	PP_LOG_ERROR,
	PP_LOG_OFF,
};

/* Current threshold: messages below it are discarded. */
enum pp_log_level pp_log_level(void);

/* Set the threshold; returns -EINVAL for an unknown name. */
int pp_log_set_level(const char *name);

void pp_log(enum pp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pp_debug(...) pp_log(PP_LOG_DEBUG, __VA_ARGS__)
#define pp_info(...)  pp_log(PP_LOG_INFO, __VA_ARGS__)
#define pp_warn(...)  pp_log(PP_LOG_WARN, __VA_ARGS__)
#define pp_err(...)   pp_log(PP_LOG_ERROR, __VA_ARGS__)

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive traces (format in predict/README.md): CSV with a header line whose
 * column names are matched by name (src, tag, bytes required; buf, site,
 * comm optional; others ignored); lines starting with '#' and blank lines are
 * skipped. Cold path: the reader allocates as it goes.
 */
#ifndef PP_PRED_TRACE_H
#define PP_PRED_TRACE_H

#include <stddef.h>
#include <stdio.h>

#include "predict.h"

struct pp_trace {
	struct pp_pred_obs *obs; /* the receives in order */
	size_t n;		 /* receives held */
	size_t cap;		 /* receives allocated */
};

/*
 * Read a trace from f, named name in messages. On error a one-line message
 * "name:line: what" is written to err (errlen bytes) and *t is left empty.
 * Errors: -EINVAL (malformed: header or line), -ENOMEM, -EIO.
 */
int pp_trace_read(FILE *f, const char *name, struct pp_trace *t, char *err, size_t errlen);

/* Open and read path; as pp_trace_read, plus the open's -errno. */
int pp_trace_load(const char *path, struct pp_trace *t, char *err, size_t errlen);

/* Append one receive. Errors: -ENOMEM. */
int pp_trace_push(struct pp_trace *t, const struct pp_pred_obs *o);

/* Free the receives; the trace is empty again. */
void pp_trace_free(struct pp_trace *t);

/* Write t with every column (src,tag,bytes,buf,site,comm). Errors: -EIO. */
int pp_trace_write(FILE *f, const struct pp_trace *t);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum col {
	COL_SRC = 0,
	COL_TAG,
	COL_BYTES,
	COL_BUF,
	COL_SITE,
	COL_COMM,
	COL_N,
};

static const char *const col_names[COL_N] = {"src", "tag", "bytes", "buf", "site", "comm"};

#define MAX_FIELDS 64 /* columns a trace line may have */

/* Reading state for one file. */
struct reader {
	const char *name; /* file name for messages */
	unsigned line;	  /* current line number, from 1 */
	char *err;	  /* message buffer */
	size_t errlen;	  /* its size */
};

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct reader *r, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (r->errlen)
		snprintf(r->err, r->errlen, "%s:%u: %s", r->name, r->line, what);
	return -EINVAL;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Split line in place at commas; returns the field count or -1 if too many. */
static int split(char *line, char **f)
{
	int n = 0;
	for (char *p = line;;) {
		if (n == MAX_FIELDS)
			return -1;
		char *c = strchr(p, ',');
		if (c)
			*c = '\0';
		f[n++] = trim(p);
		if (!c)
			return n;
		p = c + 1;
	}
}

/* 1 when s starts with 0x or 0X. */
static int hex_prefix(const char *s)
{
	return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

/* A signed integer, decimal or 0x hexadecimal (-0x10 is -16). */
static int parse_int(struct reader *r, const char *col, const char *s, int32_t *out)
{
	const char *p = s + (*s == '-' || *s == '+');
	int base = hex_prefix(p) ? 16 : 10;
	if (base == 16)
		p += 2;
	char *end = NULL;
	errno = 0;
	unsigned long long u = isxdigit((unsigned char)*p) ? strtoull(p, &end, base) : 0;
	if (!end || *end != '\0' || errno || u > (unsigned long long)INT32_MAX + (*s == '-'))
		return fail(r, "bad %s '%s': expected an integer", col, s);
	long long v = *s == '-' ? -(long long)u : (long long)u;
	*out = (int32_t)v;
	return 0;
}

/* An unsigned number in base (16: with or without 0x); with base 10, 0x
 * hexadecimal is taken too. */
static int parse_u64(struct reader *r, const char *col, const char *s, int base, uint64_t *out)
{
	const char *p = s;
	if (hex_prefix(p)) {
		base = 16;
		p += 2;
	}
	char *end = NULL;
	errno = 0;
	unsigned long long v = isxdigit((unsigned char)*p) ? strtoull(p, &end, base) : 0;
	if (!end || *end != '\0' || errno)
		return fail(r, "bad %s '%s': expected a%s number", col, s,
			    base == 16 ? " hexadecimal" : "n unsigned");
	*out = v;
	return 0;
}

int pp_trace_push(struct pp_trace *t, const struct pp_pred_obs *o)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct pp_pred_obs *n = realloc(t->obs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->obs = n;
		t->cap = cap;
	}
	t->obs[t->n++] = *o;
	return 0;
}

void pp_trace_free(struct pp_trace *t)
{
	free(t->obs);
	memset(t, 0, sizeof(*t));
}

/* Map header fields to columns; idx[c] = field index or -1. */
static int parse_header(struct reader *r, char **f, int n, int *idx)
{
	for (int c = 0; c < COL_N; c++)
		idx[c] = -1;
	for (int i = 0; i < n; i++) {
		for (int c = 0; c < COL_N; c++) {
			if (strcmp(f[i], col_names[c]) != 0)
				continue;
			if (idx[c] >= 0)
				return fail(r, "column '%s' appears twice in the header", f[i]);
			idx[c] = i;
		}
	}
	for (int c = COL_SRC; c <= COL_BYTES; c++)
		if (idx[c] < 0)
			return fail(r, "header lacks the required column '%s'", col_names[c]);
	return 0;
}

static int parse_row(struct reader *r, char **f, const int *idx, struct pp_pred_obs *o)
{
	int rc;
	memset(o, 0, sizeof(*o));
	o->site = PP_PRED_NO_SITE;
	if ((rc = parse_int(r, "src", f[idx[COL_SRC]], &o->src)) < 0 ||
	    (rc = parse_int(r, "tag", f[idx[COL_TAG]], &o->tag)) < 0 ||
	    (rc = parse_u64(r, "bytes", f[idx[COL_BYTES]], 10, &o->bytes)) < 0)
		return rc;
	if (idx[COL_BUF] >= 0 && *f[idx[COL_BUF]] &&
	    (rc = parse_u64(r, "buf", f[idx[COL_BUF]], 16, &o->buf)) < 0)
		return rc;
	if (idx[COL_COMM] >= 0 && *f[idx[COL_COMM]] &&
	    (rc = parse_int(r, "comm", f[idx[COL_COMM]], &o->comm)) < 0)
		return rc;
	if (idx[COL_SITE] >= 0 && *f[idx[COL_SITE]]) {
		uint64_t s;
		if ((rc = parse_u64(r, "site", f[idx[COL_SITE]], 10, &s)) < 0)
			return rc;
		if (s >= PP_PRED_NO_SITE)
			return fail(r, "bad site '%s': at most %u", f[idx[COL_SITE]],
				    PP_PRED_NO_SITE - 1);
		o->site = (uint32_t)s;
	}
	return 0;
}

int pp_trace_read(FILE *f, const char *name, struct pp_trace *t, char *err, size_t errlen)
{
	struct reader r = {.name = name, .line = 0, .err = err, .errlen = errlen};
	struct pp_trace out = {0};
	char *line = NULL, *fields[MAX_FIELDS];
	size_t linecap = 0;
	int idx[COL_N], ncols = -1, rc = 0;
	if (errlen)
		err[0] = '\0';
	while (getline(&line, &linecap, f) >= 0) {
		r.line++;
		char *s = trim(line);
		if (*s == '\0' || *s == '#')
			continue;
		int n = split(s, fields);
		if (n < 0) {
			rc = fail(&r, "more than %d fields", MAX_FIELDS);
			goto out;
		}
		if (ncols < 0) {
			if ((rc = parse_header(&r, fields, n, idx)) < 0)
				goto out;
			ncols = n;
			continue;
		}
		if (n != ncols) {
			rc = fail(&r, "%d fields where the header has %d", n, ncols);
			goto out;
		}
		struct pp_pred_obs o;
		if ((rc = parse_row(&r, fields, idx, &o)) < 0)
			goto out;
		if ((rc = pp_trace_push(&out, &o)) < 0) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto out;
		}
	}
	if (ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", name);
	} else if (ncols < 0) {
		r.line++;
		rc = fail(&r, "no header line (src,tag,bytes,...)");
	}
out:
	free(line);
	if (rc < 0) {
		pp_trace_free(&out);
		return rc;
	}
	*t = out;
	return 0;
}

int pp_trace_load(const char *path, struct pp_trace *t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	int rc = pp_trace_read(f, path, t, err, errlen);
	fclose(f);
	return rc;
}

int pp_trace_write(FILE *f, const struct pp_trace *t)
{
	fprintf(f, "src,tag,bytes,buf,site,comm\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct pp_pred_obs *o = &t->obs[i];
		fprintf(f, "%" PRId32 ",%" PRId32 ",%" PRIu64 ",0x%" PRIx64 ",", o->src, o->tag,
			o->bytes, o->buf);
		if (o->site != PP_PRED_NO_SITE)
			fprintf(f, "%" PRIu32, o->site);
		fprintf(f, ",%" PRId32 "\n", o->comm);
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

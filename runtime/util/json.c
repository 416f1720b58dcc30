/* SPDX-License-Identifier: BSD-3-Clause */
/* The JSON writer of pp_json.h. */
#include "pp_json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

void pp_json_begin(struct pp_json *j, FILE *f, int indent)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->indent = indent > 0 ? indent : 0;
}

/* Length of the UTF-8 sequence at s (1..4), or 0 when it is not one. */
static unsigned utf8_len(const unsigned char *s)
{
	unsigned n;
	uint32_t c;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
	static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (c < least[n] || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	return n;
}

static void put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	while (*p) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else if (c >= 0x80) {
			unsigned n = utf8_len(p);
			if (!n) {
				fputs("\\ufffd", f);
				p++;
				continue;
			}
			fwrite(p, 1, n, f);
			p += n;
			continue;
		} else {
			fputc(c, f);
		}
		p++;
	}
	fputc('"', f);
}

static void newline(struct pp_json *j)
{
	if (!j->indent)
		return;
	fputc('\n', j->f);
	for (unsigned i = 0; i < j->depth * (unsigned)j->indent; i++)
		fputc(' ', j->f);
}

/* Before a value: the comma, the line break and the key. 0 when the value
 * may be written, -EINVAL (remembered) when not. */
static int lead(struct pp_json *j, const char *key)
{
	if (j->err)
		return j->err;
	if (j->depth == 0) {
		if (key || j->done)
			return j->err = -EINVAL;
		return 0;
	}
	unsigned d = j->depth - 1;
	if (!key != !j->in_obj[d])
		return j->err = -EINVAL;
	if (j->nvals[d])
		fputc(',', j->f);
	j->nvals[d] = 1;
	newline(j);
	if (key) {
		put_string(j->f, key);
		fputs(j->indent ? ": " : ":", j->f);
	}
	return 0;
}

/* After a value: a top-level one ends the document. */
static void trail(struct pp_json *j)
{
	if (j->depth == 0)
		j->done = 1;
}

static void open_one(struct pp_json *j, const char *key, int obj)
{
	if (lead(j, key))
		return;
	if (j->depth == PP_JSON_DEPTH) {
		j->err = -EINVAL;
		return;
	}
	fputc(obj ? '{' : '[', j->f);
	j->in_obj[j->depth] = (uint8_t)obj;
	j->nvals[j->depth] = 0;
	j->depth++;
}

void pp_json_object(struct pp_json *j, const char *key)
{
	open_one(j, key, 1);
}

void pp_json_array(struct pp_json *j, const char *key)
{
	open_one(j, key, 0);
}

void pp_json_close(struct pp_json *j)
{
	if (j->err)
		return;
	if (j->depth == 0) {
		j->err = -EINVAL;
		return;
	}
	j->depth--;
	if (j->nvals[j->depth])
		newline(j);
	fputc(j->in_obj[j->depth] ? '}' : ']', j->f);
	trail(j);
}

void pp_json_str(struct pp_json *j, const char *key, const char *v)
{
	if (lead(j, key))
		return;
	if (v)
		put_string(j->f, v);
	else
		fputs("null", j->f);
	trail(j);
}

void pp_json_u64(struct pp_json *j, const char *key, uint64_t v)
{
	if (lead(j, key))
		return;
	fprintf(j->f, "%" PRIu64, v);
	trail(j);
}

void pp_json_i64(struct pp_json *j, const char *key, int64_t v)
{
	if (lead(j, key))
		return;
	fprintf(j->f, "%" PRId64, v);
	trail(j);
}

void pp_json_num(struct pp_json *j, const char *key, double v)
{
	if (lead(j, key))
		return;
	if (isfinite(v))
		fprintf(j->f, "%.15g", v);
	else
		fputs("null", j->f);
	trail(j);
}

void pp_json_bool(struct pp_json *j, const char *key, int v)
{
	if (lead(j, key))
		return;
	fputs(v ? "true" : "false", j->f);
	trail(j);
}

void pp_json_null(struct pp_json *j, const char *key)
{
	if (lead(j, key))
		return;
	fputs("null", j->f);
	trail(j);
}

int pp_json_finish(struct pp_json *j)
{
	while (!j->err && j->depth)
		pp_json_close(j);
	if (!j->err && !j->done)
		j->err = -EINVAL;
	fputc('\n', j->f);
	if (fflush(j->f) != 0 || ferror(j->f))
		return -EIO;
	return j->err;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one JSON writer: streams a document to a FILE as it is built, so
 * nothing is allocated and a long run's results appear as they come. Used by
 * pp_pingpong --json, ppd --stats --json and stats=json at pp_finalize.
 *
 * Containers nest up to PP_JSON_DEPTH deep. Every value call takes the key
 * it has in the enclosing object, or NULL inside an array (and for the
 * document itself). Strings and keys are escaped: quote, backslash and
 * control characters, and bytes that are not UTF-8 become U+FFFD. A number
 * that is not finite is written as null (JSON has no NaN). Misuse (a key
 * missing in an object, too deep, closing what is not open) is remembered
 * and reported by pp_json_finish, never written.
 * Cold path: not for the engine's loops.
 */
#ifndef PP_JSON_H
#define PP_JSON_H

#include <stdint.h>
#include <stdio.h>

#define PP_JSON_DEPTH 16

struct pp_json {
	FILE *f;		       /* where the document goes */
	int indent;		       /* spaces per level; 0: all on one line */
	unsigned depth;		       /* containers open */
	uint8_t in_obj[PP_JSON_DEPTH]; /* 1: container d is an object */
	uint8_t nvals[PP_JSON_DEPTH];  /* container d has a value already */
	int err;		       /* first misuse, -EINVAL; 0 */
	int done;		       /* a whole top-level value was written */
};

/* Start a document on f. */
void pp_json_begin(struct pp_json *j, FILE *f, int indent);

/* Open an object or an array (key: its name in the enclosing object). */
void pp_json_object(struct pp_json *j, const char *key);
void pp_json_array(struct pp_json *j, const char *key);

/* Close the innermost object or array. */
void pp_json_close(struct pp_json *j);

/* Values. pp_json_str with v NULL writes null. */
void pp_json_str(struct pp_json *j, const char *key, const char *v);
void pp_json_u64(struct pp_json *j, const char *key, uint64_t v);
void pp_json_i64(struct pp_json *j, const char *key, int64_t v);
void pp_json_num(struct pp_json *j, const char *key, double v);
void pp_json_bool(struct pp_json *j, const char *key, int v);
void pp_json_null(struct pp_json *j, const char *key);

/*
 * Close what is still open, end the document with a newline and flush.
 * Returns 0, -EINVAL after a misuse (the output is then not a document), or
 * -EIO when the FILE failed.
 */
int pp_json_finish(struct pp_json *j);

#endif

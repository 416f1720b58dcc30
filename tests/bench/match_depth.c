/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * match_depth: what matching one message costs at a queue depth, with the
 * hashed queues of proto/tagq.h and with one ordered list walked from the
 * front (what the engine did before; the same entries, the same order).
 * As the test does it: DEPTH receives with distinct tags are
 * posted, then messages come in the reverse order (each finds its receive
 * at the far end of a list); then the same with the messages first and the
 * receives after (unexpected). Each receive ignores one protocol bit, as
 * Open MPI's do. One core, no I/O: the matcher alone.
 *
 *   match_depth [MAXDEPTH]     (default 65536; depths 1, 4, 16, ... up to it)
 *
 * Prints "RESULT match <kind> <posted|unexpected> <depth> <ns per message>"
 * (a message filed, matched and taken; the median of five samples), then per depth the ratio of the
 * list's time to tagq's, and tagq's time at each depth over its time at depth 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples.h"
#include "tagq.h"

#define SAMPLES	  5
#define PROTO_BIT (1ull << 62)

/* The ordered list: the reference every receive and message walks. */
static struct pp_tagq_entry *list_find_recv(struct pp_link *h, uint32_t src, uint64_t tag)
{
	for (struct pp_link *l = h->next; l != h; l = l->next) {
		struct pp_tagq_entry *e = container_of(l, struct pp_tagq_entry, all);
		if (pp_tagq_match(e->src, e->tag, e->ignore, src, tag))
			return e;
	}
	return NULL;
}

static struct pp_tagq_entry *list_find_msg(struct pp_link *h, int32_t src, uint64_t tag,
					   uint64_t ignore)
{
	for (struct pp_link *l = h->next; l != h; l = l->next) {
		struct pp_tagq_entry *e = container_of(l, struct pp_tagq_entry, all);
		if (pp_tagq_match(src, tag, ignore, (uint32_t)e->src, e->tag))
			return e;
	}
	return NULL;
}

/* One pass at depth n: n entries filed, then n matched and taken, the
 * matches in the reverse order; 0, or -1 when a match went wrong. */
static int pass(struct pp_tagq *q, struct pp_link *list, struct pp_tagq_entry *ent, int n,
		int hashed, int unexpected)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		/* posted: receives from 1 with tag i that ignore the protocol
		 * bit; unexpected: messages from 1 with tag i */
		ent[i] = (struct pp_tagq_entry){
		    .src = 1, .tag = (uint64_t)i, .ignore = unexpected ? 0 : PROTO_BIT};
		if (hashed)
			pp_tagq_add(q, &ent[i]);
		else
			list_add_tail(list, &ent[i].all);
	}
	for (int i = n - 1; i >= 0; i--) {
		struct pp_tagq_entry *e;
		if (unexpected && hashed)
			pp_tagq_narrow(q, 1, PROTO_BIT);
		if (unexpected)
			e = hashed ? pp_tagq_find_msg(q, 1, (uint64_t)i, PROTO_BIT)
				   : list_find_msg(list, 1, (uint64_t)i, PROTO_BIT);
		else
			e = hashed ? pp_tagq_find_recv(q, 1, (uint64_t)i)
				   : list_find_recv(list, 1, (uint64_t)i);
		bad += e != &ent[i];
		if (e && hashed)
			pp_tagq_del(q, e);
		else if (e)
			list_del(&e->all);
	}
	return bad ? -1 : 0;
}

/* ns per message (filed, matched, taken) over reps passes at depth n, one
 * queue for all of them; -1 when a match went wrong. */
static double sample(struct pp_tagq_entry *ent, int n, int reps, int hashed, int unexpected)
{
	struct pp_tagq q;
	struct pp_link list;
	if (pp_tagq_init(&q, (uint32_t)n))
		return -1;
	list_init(&list);
	int bad = 0;
	uint64_t t0 = bench_now_ns();
	for (int r = 0; r < reps; r++)
		bad |= pass(&q, &list, ent, n, hashed, unexpected);
	double ns = (double)(bench_now_ns() - t0) / ((double)n * reps);
	pp_tagq_fini(&q);
	return bad ? -1 : ns;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: match_depth [MAXDEPTH]\n"
		       "ns per matched message at queue depths 1, 4, 16, ... MAXDEPTH (default\n"
		       "65536, at most 1048576), posted and unexpected, with proto/tagq's hashed\n"
		       "queues and with one ordered list; medians of five samples.\n");
		return 0;
	}
	long max = argc > 1 ? atol(argv[1]) : 65536;
	if (max < 1 || max > (1 << 20) || argc > 2) {
		fprintf(stderr, "match_depth: MAXDEPTH must be 1 to 1048576 (try --help)\n");
		return 2;
	}
	struct pp_tagq_entry *ent = calloc((size_t)max, sizeof(*ent));
	if (!ent)
		return 1;
	static const char *const way[2] = {"posted", "unexpected"};
	for (int u = 0; u < 2; u++) {
		double base = 0;
		for (long n = 1; n <= max; n *= 4) {
			double med[2];
			for (int hashed = 0; hashed < 2; hashed++) {
				/* Enough passes that a sample is a few ms, not fewer
				 * than one; the list's deep passes are slow enough. */
				double s[SAMPLES];
				/* Samples of about 64 K messages, at least one pass
				 * (the list's deep passes take long enough alone). */
				int reps = hashed || n <= 256 ? (int)(65536 / n) + 1 : 1;
				for (int k = 0; k < SAMPLES; k++)
					if ((s[k] = sample(ent, (int)n, reps, hashed, u)) < 0) {
						fprintf(stderr, "match_depth: wrong match\n");
						return 1;
					}
				bench_sort(s, SAMPLES);
				med[hashed] = s[SAMPLES / 2];
				printf("RESULT match %s %s %ld %.1f\n", hashed ? "tagq" : "list",
				       way[u], n, med[hashed]);
			}
			if (n == 1)
				base = med[1];
			printf("# %s depth %ld: list/tagq %.2f, tagq/tagq@1 %.2f\n", way[u], n,
			       med[0] / med[1], med[1] / base);
		}
	}
	free(ent);
	return 0;
}

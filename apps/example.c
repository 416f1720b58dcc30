/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The smallest librt-pp program, built against the installed library:
 *   cc example.c $(pkg-config --cflags --libs rt-pp)
 * Rank 0 sends a greeting to every other rank, which prints it.
 * Usage: example [CONFIG]   (CONFIG as for pp_init, e.g. "rank=0,size=2")
 */
#include <stdio.h>
#include <string.h>

#include <pp.h>

int main(int argc, char **argv)
{
	pp_ctx *ctx;
	char msg[64];
	int rc = pp_init(&ctx, argc > 1 ? argv[1] : NULL);
	if (rc) {
		fprintf(stderr, "example: pp_init: %s\n", pp_strerror(rc));
		return 1;
	}
	if (pp_rank(ctx) == 0) {
		snprintf(msg, sizeof(msg), "hello from rank 0 of %d", pp_size(ctx));
		for (int r = 1; r < pp_size(ctx) && rc == 0; r++)
			rc = pp_send(ctx, msg, strlen(msg) + 1, r, 7);
	} else {
		pp_status st;
		rc = pp_recv(ctx, msg, sizeof(msg), 0, 7, &st);
		if (rc == 0)
			printf("rank %d got \"%s\" (%zu bytes)\n", pp_rank(ctx), msg, st.len);
	}
	if (rc)
		fprintf(stderr, "example: %s\n", pp_strerror(rc));
	int frc = pp_finalize(ctx);
	return rc || frc ? 1 : 0;
}

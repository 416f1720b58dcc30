/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc_speed: what a frame's CRC32C costs with each implementation of
 * proto/crc32c.c on this CPU (table, crc32 instruction, folding), at frame
 * payload sizes, one core, data in cache (the same buffer over and over).
 * Every implementation's value is checked against the table's first.
 *
 *   crc_speed [ITERS]      (buffers per sample, default 200000)
 *
 * Prints, per size, "RESULT crc <impl> <bytes> <ns> <GB/s>": ns per buffer,
 * the median of five timed samples of ITERS buffers each, all kept (nothing
 * is rerun or dropped); an implementation this CPU lacks is left out (fold
 * needs VPCLMULQDQ with AVX-512F and VL).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "samples.h"

#define SAMPLES 5

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: crc_speed [ITERS]\n"
		       "ns per buffer of each CRC32C implementation (table, crc32, fold) at\n"
		       "64, 256, 1500 and 9000 bytes, the median of five samples of ITERS buffers\n"
		       "each (default 200000).\n");
		return 0;
	}
	long iters = argc > 1 ? atol(argv[1]) : 200000;
	if (iters <= 0 || argc > 2) {
		fprintf(stderr, "crc_speed: ITERS must be a positive count (try --help)\n");
		return 2;
	}
	static uint8_t buf[9000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131u + (i >> 7));
	const struct {
		const char *name;
		crc_fn fn;
		int ok;
	} impl[] = {
	    {"table", pp_crc32c_sw, 1},
	    {"crc32", pp_crc32c_hw, pp_crc32c_hw_available()},
	    {"fold", pp_crc32c_fold, pp_crc32c_fold_available()},
	};
	const size_t sizes[] = {64, 256, 1500, 9000};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		uint32_t want = pp_crc32c_sw(0, buf, n);
		for (size_t k = 0; k < sizeof(impl) / sizeof(impl[0]); k++) {
			if (!impl[k].ok)
				continue;
			if (impl[k].fn(0, buf, n) != want) {
				fprintf(stderr, "crc_speed: %s gives a wrong CRC at %zu bytes\n",
					impl[k].name, n);
				return 1;
			}
			double ns[SAMPLES];
			volatile uint32_t sink = 0;
			for (int j = 0; j < SAMPLES; j++) {
				uint64_t t0 = bench_now_ns();
				for (long i = 0; i < iters; i++)
					sink = impl[k].fn(sink, buf, n);
				ns[j] = (double)(bench_now_ns() - t0) / (double)iters;
			}
			bench_sort(ns, SAMPLES);
			double med = ns[SAMPLES / 2];
			printf("RESULT crc %-5s %5zu %9.1f %7.2f\n", impl[k].name, n, med,
			       (double)n / med);
		}
	}
	return 0;
}

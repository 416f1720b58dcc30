/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark helpers shared by pp_pingpong and the other tools: a calibrated
 * timer, the paper's statistics (mean of the middle 80 %, median, p99), value
 * lists and sweeps from the command line, and the NOP compute loop.
 */
#ifndef PP_PERF_H
#define PP_PERF_H

#include <stddef.h>
#include <stdint.h>

/* --- timer ------------------------------------------------------------- */

enum pp_perf_clock {
	PP_PERF_CLOCK_AUTO = 0, /* TSC when invariant, else CLOCK_MONOTONIC_RAW */
	PP_PERF_CLOCK_TSC,	/* invariant TSC, calibrated against MONOTONIC_RAW */
	PP_PERF_CLOCK_MONO,	/* clock_gettime(CLOCK_MONOTONIC_RAW) */
};

/*
 * Choose and calibrate the clock. Errors: -ENOTSUP (TSC asked for but not
 * invariant or not x86).
 */
int pp_perf_clock_init(enum pp_perf_clock want);

/* The clock in use: "tsc" or "mono"; and ticks per microsecond. */
const char *pp_perf_clock_name(void);
double pp_perf_ticks_per_us(void);

/* Current time in ticks of the chosen clock. */
uint64_t pp_perf_now(void);

static inline double pp_perf_ticks_to_us(uint64_t ticks)
{
	return (double)ticks / pp_perf_ticks_per_us();
}

/* --- statistics -------------------------------------------------------- */

struct pp_perf_summary {
	double mid80;  /* mean of the middle 80 % (first and last 10 % dropped) */
	double median; /* 50th percentile */
	double p99;    /* 99th percentile (nearest rank) */
	double min;    /* smallest sample */
	double max;    /* largest sample */
};

/*
 * Summarise n samples (sorted in place). Errors: -EINVAL (n == 0).
 */
int pp_perf_summarise(double *samples, size_t n, struct pp_perf_summary *out);

/* --- value lists ------------------------------------------------------- */

#define PP_PERF_MAX_VALUES 256

/*
 * Parse "V", "V1,V2,...", "A:B" (powers of two from A to B), "A:B:xF"
 * (geometric, factor F >= 2) or "A:B:+S" (arithmetic, step S >= 1) into
 * out[0..max). A range from 0 yields 0, then continues from 1 (geometric) or
 * from S (arithmetic). Suffixes k, m, g multiply by 1024, 1024^2, 1024^3.
 * Returns the number of values. Errors: -EINVAL (malformed, A > B),
 * -E2BIG (more than max values).
 */
int pp_perf_parse_list(const char *spec, uint64_t *out, int max);

/* --- compute ----------------------------------------------------------- */

/* Execute n NOP instructions (the paper's "compute n times"). */
void pp_perf_compute(uint64_t n);

#endif

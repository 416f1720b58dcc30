/* SPDX-License-Identifier: BSD-3-Clause */
/* shm/long_path: the receiver's choice between its copy call and the rings
 * for a long message's rest, driven with a clock of the test's own. */
#include <stdint.h>
#include <string.h>

#include "cu_main.h"
#include "long_path.h"

#define MIB   (1u << 20)
#define FRAME 9000u /* a DATA record's length */

static struct pp_shm_path p;
static uint64_t now;

/* A long message at now: its decision (0 copy, 1 or 2 rings). */
static int decide(uint64_t len)
{
	return pp_shm_path_ring(&p, len, now);
}

/* One copied message of len bytes at mbps (MB/s = bytes per us). */
static void copy_at(uint64_t len, uint64_t mbps)
{
	CU_ASSERT_EQUAL_FATAL(decide(len), 0);
	uint64_t ns = len * 1000 / mbps;
	now += ns;
	pp_shm_path_copied(&p, len, ns);
}

/* One message through the rings: decided (a measurement starts), a delay
 * before the first record, then len bytes in FRAME records at mbps. */
static void ring_at(uint64_t len, uint64_t mbps, uint64_t delay_ns)
{
	CU_ASSERT_EQUAL_FATAL(decide(len), 1);
	now += delay_ns;
	for (uint64_t got = 0; got < len && p.ring_want; got += FRAME) {
		now += FRAME * 1000 / mbps;
		pp_shm_path_rx(&p, FRAME, now, 0);
	}
	CU_ASSERT_EQUAL(p.ring_want, 0); /* the measurement ended with the bytes */
}

/* The first tries: the copy call at copy_mbps, then the rings at ring_mbps. */
static void learn(uint64_t copy_mbps, uint64_t ring_mbps)
{
	memset(&p, 0, sizeof(p));
	now = 1000000;
	for (unsigned i = 0; i < PP_SHM_PATH_TRIAL_COPY; i++)
		copy_at(MIB, copy_mbps);
	for (unsigned i = 0; i < 3 * PP_SHM_PATH_TRIAL_RING; i++)
		ring_at(MIB, ring_mbps, 20000);
}

/* Within 2 % (integer division, the first record's bytes left out). */
static int near(uint64_t got, uint64_t want)
{
	return got * 100 >= want * 98 && got * 100 <= want * 102;
}

static void test_short_always_copied(void)
{
	memset(&p, 0, sizeof(p));
	now = 1;
	for (int i = 0; i < 100; i++) {
		CU_ASSERT_EQUAL(decide(PP_SHM_PATH_MIN - 1), 0);
		pp_shm_path_copied(&p, PP_SHM_PATH_MIN - 1, 1);
	}
	CU_ASSERT_EQUAL(p.copy_rate, 0); /* not timed: a short call's fixed cost rules */
	CU_ASSERT_EQUAL(p.trial_on, 0);
	CU_ASSERT_EQUAL(p.rings, 0);
}

static void test_rings_faster(void)
{
	learn(15000, 35000);
	CU_ASSERT(near(p.copy_rate, 15000));
	/* The delay before the first record (the sender's answer to the
	 * PULL) is not the rings' speed. */
	CU_ASSERT(near(p.ring_rate, 35000));
	CU_ASSERT_EQUAL(p.use_ring, 1);
	CU_ASSERT_EQUAL(p.trial_on, 0);
	for (int i = 0; i < 20; i++)
		ring_at(4 * MIB, 35000, 1000);
	CU_ASSERT(near(p.ring_rate, 35000));
	CU_ASSERT_EQUAL(p.rings, 3 * PP_SHM_PATH_TRIAL_RING + 20);
}

static void test_copy_faster(void)
{
	learn(17000, 13000);
	CU_ASSERT_EQUAL(p.use_ring, 0);
	for (int i = 0; i < 50; i++)
		copy_at(MIB, 17000);
	CU_ASSERT(near(p.copy_rate, 17000));
	CU_ASSERT_EQUAL(p.rings, 3 * PP_SHM_PATH_TRIAL_RING);
}

/* Near level: the copy call, which needs nothing of the sender, keeps it. */
static void test_level_keeps_copy(void)
{
	learn(16000, 19000);
	CU_ASSERT_EQUAL(p.use_ring, 0);
	learn(16000, 20500);
	CU_ASSERT_EQUAL(p.use_ring, 1);
}

/* While the rings are timed every long message takes them, measured or
 * not; once timed, the choice holds again. */
static void test_measuring_keeps_rings(void)
{
	learn(17000, 13000);
	now += PP_SHM_PATH_PROBE_NS; /* the rings are tried again */
	CU_ASSERT_EQUAL(decide(MIB), 1);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(decide(MIB), 1);
	/* Short records (FIRST frames, acks) do not start the clock. */
	for (int i = 0; i < 100; i++)
		pp_shm_path_rx(&p, PP_SHM_PATH_REC_MIN - 1, now += 1000000, 0);
	CU_ASSERT_NOT_EQUAL(p.ring_want, 0);
	for (uint64_t got = 0; p.ring_want; got += FRAME)
		pp_shm_path_rx(&p, FRAME, now += FRAME * 1000 / 12000, 0);
	CU_ASSERT_EQUAL(p.trial_on, 1); /* one sample of the try's */
	CU_ASSERT_EQUAL(p.trial_left, PP_SHM_PATH_TRIAL_RING - 1);
}

/* Bytes behind the first long record in the rings already are drained
 * faster than a slower sender fills: the clock starts after them. */
static void test_backlog_not_timed(void)
{
	learn(17000, 13000);
	now += PP_SHM_PATH_PROBE_NS; /* the rings are tried again */
	CU_ASSERT_EQUAL(decide(MIB), 1);
	now += 30000;
	pp_shm_path_rx(&p, FRAME, now, 256u << 10);
	uint64_t got = FRAME;
	for (; got < FRAME + (256u << 10); got += FRAME) /* the backlog, at 60 GB/s */
		pp_shm_path_rx(&p, FRAME, now += FRAME * 1000 / 60000, 0);
	for (; p.ring_want; got += FRAME) /* the rest as the sender makes it */
		pp_shm_path_rx(&p, FRAME, now += FRAME * 1000 / 13000, 0);
	CU_ASSERT(got >= MIB - FRAME && got <= MIB + FRAME);
	CU_ASSERT_EQUAL(p.trial_best / 100, 13000 / 100);

	/* A message all but behind its first record already, and nothing
	 * after it: its rest is too short to time, the traffic stops before
	 * PP_SHM_PATH_TIME_MIN came, and the wait ends without a sample
	 * (idle time is no speed). */
	now += 1000000;
	CU_ASSERT_EQUAL(decide(MIB / 8), 1);
	pp_shm_path_rx(&p, FRAME, now += 1000, MIB / 8 - FRAME - 4096);
	for (got = FRAME; got < MIB / 8; got += FRAME)
		pp_shm_path_rx(&p, FRAME, now += 10, 0);
	CU_ASSERT_NOT_EQUAL(p.ring_want, 0);
	now += PP_SHM_PATH_WAIT_NS;
	CU_ASSERT_EQUAL(decide(MIB), 1);		  /* the try goes on: a new measurement */
	CU_ASSERT_EQUAL(p.trial_best / 100, 13000 / 100); /* no 900 GB/s sample */
	CU_ASSERT_EQUAL(p.trial_left, PP_SHM_PATH_TRIAL_RING - 1);
}

/* The host moves the cores: the path not in use is tried again after the
 * probe period, and the choice follows. */
static void test_placement_changes(void)
{
	learn(17000, 13000);
	CU_ASSERT_EQUAL(p.use_ring, 0);
	for (int i = 0; i < 20; i++)
		copy_at(MIB, 17000);
	now += PP_SHM_PATH_PROBE_NS;
	for (unsigned i = 0; i < PP_SHM_PATH_TRIAL_RING; i++)
		ring_at(MIB, 38000, 5000);
	CU_ASSERT_EQUAL(p.use_ring, 1);
	for (int i = 0; i < 20; i++)
		ring_at(MIB, 38000, 1000);
	/* And back: the copy call's try keeps its best sample (the first
	 * calls after the rings pay for the sender's cache). */
	now += PP_SHM_PATH_PROBE_NS;
	copy_at(MIB, 3000);
	for (unsigned i = 1; i < PP_SHM_PATH_TRIAL_COPY; i++)
		copy_at(MIB, 45000);
	CU_ASSERT(near(p.copy_rate, 45000));
	CU_ASSERT_EQUAL(p.use_ring, 0);
	copy_at(MIB, 45000);
}

/* A sender that does not serve the PULL: the measurement ends after its
 * wait with what came (nothing): the rings count as slow, and the copy
 * call, which needs nothing of the sender, takes over. */
static void test_silent_sender(void)
{
	memset(&p, 0, sizeof(p));
	now = 1;
	for (unsigned i = 0; i < PP_SHM_PATH_TRIAL_COPY; i++)
		copy_at(MIB, 15000);
	CU_ASSERT_EQUAL(decide(MIB), 1);
	now += PP_SHM_PATH_WAIT_NS - 1;
	CU_ASSERT_EQUAL(decide(MIB), 1);
	now += PP_SHM_PATH_TRIAL_NS;
	CU_ASSERT_EQUAL(decide(MIB), 0);
	CU_ASSERT_EQUAL(p.ring_rate, 1);
	CU_ASSERT_EQUAL(p.trial_on, 0);
	CU_ASSERT_EQUAL(p.use_ring, 0);
}

static CU_TestInfo tests[] = {
    {"a short message is always copied, and not timed", test_short_always_copied},
    {"rings faster: chosen, by their speed, not the PULL's wait", test_rings_faster},
    {"copy call faster: chosen, the rings left alone", test_copy_faster},
    {"near level, the copy call keeps it", test_level_keeps_copy},
    {"every long message takes the rings while they are timed", test_measuring_keeps_rings},
    {"what was in the rings already is not timed", test_backlog_not_timed},
    {"a change of placement is followed both ways", test_placement_changes},
    {"a sender that does not serve the rings loses them", test_silent_sender},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"shm_long_path", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)

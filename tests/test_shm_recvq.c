/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive-queue area (shm/recvq.h) alone, then the engine's early
 * receiver path over it (docs/protocol.md, rule 6, sender writes):
 * two engines in this process whose hooks use real areas, the sender
 * writing with process_vm_writev into this process (or memcpy into a
 * stand-in segment for pp_malloc buffers), the late path's direct hook
 * copying from a published send as the runtime's does. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cu_main.h"
#include "test_proto_harness.h"
#include "engine.h"
#include "recvq.h"
#include "segment.h"
#include "wire.h"

/* pp.h's PP_ANY_TAG as the engine holds it (runtime/ctx.h: pp_ctx_tag_ignore). */
#define ANY_TAG 0x7FFFFFFFull

#define SLOTS		 64
#define PP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BIG		 (8u << 20)
#define SEG_BYTES	 (BIG + (1u << 20))

/* ---- the area alone ---- */

static struct pp_shm_rq area;

static void test_rq_claim_order(void)
{
	memset(&area, 0, sizeof(area));
	struct pp_shm_rq_target t;
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 1, 0, 10, &t), -ENOENT); /* empty */
	int a = pp_shm_rq_post(&area, 1, 0, 0x1000, PP_SHM_NO_OFFSET, 100, 0);
	int b = pp_shm_rq_post(&area, 2, 0, 0x2000, 64, 200, 0);
	int c = pp_shm_rq_post(&area, 0, ANY_TAG, 0x3000, PP_SHM_NO_OFFSET, 300, 0);
	CU_ASSERT(a == 0 && b == 1 && c == 2);
	/* The first matching entry decides: tag 1 waits for message 0 only,
	 * and holds 100 bytes only. */
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 1, 1, 10, &t), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 1, 0, 101, &t), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, a), PP_SHM_RQ_POSTED);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 2, 0, 200, &t), b);
	CU_ASSERT(t.addr == 0x2000 && t.seg_off == 64 && t.len == 200);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, b), PP_SHM_RQ_CLAIMED);
	/* Claimed: skipped, the wildcard is next, and it waits for message 0;
	 * a library tag (< 0) never matches the wildcard. */
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 2, 1, 1, &t), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, (uint64_t)(int64_t)-5, 0, 1, &t), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 7, 0, 300, &t), c);
	CU_ASSERT(t.addr == 0x3000 && t.seg_off == PP_SHM_NO_OFFSET);
	/* A claim given back is posted again. */
	pp_shm_rq_unclaim(&area, c);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, c), PP_SHM_RQ_POSTED);
	/* Take: a written message needs the claim for its number; an ordinary
	 * one an unclaimed entry. Taken either way. */
	CU_ASSERT_EQUAL(pp_shm_rq_take(&area, b, 1, 1), -EPROTO);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, b), PP_SHM_RQ_TAKEN);
	CU_ASSERT_EQUAL(pp_shm_rq_take(&area, a, 0, 0), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, a), PP_SHM_RQ_TAKEN);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 7, 0, 300, &t), c);
	CU_ASSERT_EQUAL(pp_shm_rq_take(&area, c, 0, 1), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 7, 0, 1, &t), -ENOENT);
}

static void test_rq_withdraw_full(void)
{
	memset(&area, 0, sizeof(area));
	struct pp_shm_rq_target t;
	for (int i = 0; i < PP_SHM_RQ_ENTRIES; i++)
		CU_ASSERT_EQUAL(pp_shm_rq_post(&area, i, 0, 0x1000u * (unsigned)i, PP_SHM_NO_OFFSET,
					       10, (uint32_t)i),
				i);
	CU_ASSERT_EQUAL(pp_shm_rq_post(&area, 99, 0, 0, PP_SHM_NO_OFFSET, 10, 0), -ENOSPC);
	/* Withdraw: posted -> free; claimed: busy. */
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 1, 1, 10, &t), 1);
	CU_ASSERT_EQUAL(pp_shm_rq_withdraw(&area, 1), -EBUSY);
	CU_ASSERT_EQUAL(pp_shm_rq_withdraw(&area, 0), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, 0), PP_SHM_RQ_FREE);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 0, 0, 10, &t), -ENOENT);
	/* The head passes the free entry and stops at the claimed one: one
	 * entry for a new receive, after the others in post order. */
	CU_ASSERT_EQUAL(pp_shm_rq_post(&area, 2, 0, 0xA000, PP_SHM_NO_OFFSET, 10, 2), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_post(&area, 99, 0, 0, PP_SHM_NO_OFFSET, 10, 0), -ENOSPC);
	CU_ASSERT_EQUAL(pp_shm_rq_take(&area, 1, 1, 1), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_post(&area, 2, 0, 0xB000, PP_SHM_NO_OFFSET, 10, 2), 1);
	/* Tag 2 finds the old entry 2 first, then the newer ones in order. */
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 2, 2, 10, &t), 2);
	CU_ASSERT_EQUAL(t.addr, 0x2000);
	CU_ASSERT_EQUAL(pp_shm_rq_take(&area, 2, 2, 1), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 2, 2, 10, &t), 0);
	CU_ASSERT_EQUAL(t.addr, 0xA000);
	/* Closing withdraws what is posted and reports what is claimed. */
	CU_ASSERT_EQUAL(pp_shm_rq_close(&area), 1);
	for (int i = 1; i < PP_SHM_RQ_ENTRIES; i++)
		CU_ASSERT_NOT_EQUAL(pp_shm_rq_state(&area, i), PP_SHM_RQ_POSTED);
}

/* Help entries: the scan for a receive passes over them; the sender claims
 * one by its position for its message only, a part inside that message
 * only; the receiver settles it written, withdrawn or still being written.
 * Parts into a stand-in segment (memcpy) and, by cross-memory attach, into
 * this process. */
static void test_rq_help(void)
{
	static uint8_t seg[4096], dst[600];
	uint8_t msg[1000];
	for (int i = 0; i < 1000; i++)
		msg[i] = (uint8_t)(i * 7 + 1);
	memset(&area, 0, sizeof(area));
	memset(seg, 0, sizeof(seg));
	struct pp_shm_rq_target t;
	int64_t pos = pp_shm_rq_offer(&area, 2, 100, 0, 64, 50);
	CU_ASSERT_EQUAL_FATAL(pos, 0);
	/* Not a receive: a message with the tag its offset stands in for,
	 * and the number it names, passes over it to the receive behind. */
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 100, 2, 10, &t), -ENOENT);
	int b = pp_shm_rq_post(&area, 100, 0, 0x2000, PP_SHM_NO_OFFSET, 10, 2);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&area, 100, 2, 10, &t), b);
	/* Another message, another position, a part past the message's end. */
	CU_ASSERT_EQUAL(pp_shm_rq_help(&area, 0, 0, seg, sizeof(seg), 3, msg, 1000), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_help(&area, 32, 0, seg, sizeof(seg), 2, msg, 1000), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_help(&area, 0, 0, seg, sizeof(seg), 2, msg, 149), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, 0), PP_SHM_RQ_POSTED);
	/* Written: [100, 150) of the message at the segment's offset 64. */
	CU_ASSERT_EQUAL(pp_shm_rq_help(&area, 0, 0, seg, sizeof(seg), 2, msg, 150), 50);
	CU_ASSERT(memcmp(seg + 64, msg + 100, 50) == 0 && seg[63] == 0 && seg[114] == 0);
	CU_ASSERT_EQUAL(pp_shm_rq_help(&area, 0, 0, seg, sizeof(seg), 2, msg, 150), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, 0), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&area, 0), PP_SHM_RQ_TAKEN);
	CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, 0), -EPROTO);
	/* Not claimed: withdrawn, and a late HELP finds nothing. */
	pos = pp_shm_rq_offer(&area, 4, 0, 0, 0, 10);
	CU_ASSERT_EQUAL_FATAL(pos, 2);
	CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, (uint64_t)pos), 1);
	CU_ASSERT_EQUAL(pp_shm_rq_help(&area, 2, 0, seg, sizeof(seg), 4, msg, 1000), -ENOENT);
	/* Claimed and not written yet: the receiver waits. */
	pos = pp_shm_rq_offer(&area, 5, 0, 0, 0, 10);
	atomic_store(&area.e[pos & (PP_SHM_RQ_ENTRIES - 1)].state,
		     ((uint64_t)pos << 2) | PP_SHM_RQ_CLAIMED);
	CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, (uint64_t)pos), -EAGAIN);
	CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, (uint64_t)pos + PP_SHM_RQ_ENTRIES), -EPROTO);
	/* A segment offset outside the segment: the claim is given back. */
	pos = pp_shm_rq_offer(&area, 6, 0, 0, sizeof(seg) - 4, 10);
	CU_ASSERT_EQUAL(pp_shm_rq_help(&area, (uint64_t)pos, 0, seg, sizeof(seg), 6, msg, 10),
			-EFAULT);
	CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, (uint64_t)pos), 1);
	/* Cross-memory attach into this process. */
	memset(dst, 0, sizeof(dst));
	pos = pp_shm_rq_offer(&area, 7, 300, (uint64_t)(uintptr_t)(dst + 1), PP_SHM_NO_OFFSET, 599);
	int64_t n = pp_shm_rq_help(&area, (uint64_t)pos, getpid(), seg, sizeof(seg), 7, msg, 1000);
	if (n == -EPERM || n == -ENOSYS) {
		CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, (uint64_t)pos), 1); /* CMA refused here */
	} else {
		CU_ASSERT_EQUAL(n, 599);
		CU_ASSERT(memcmp(dst + 1, msg + 300, 599) == 0 && dst[0] == 0);
		CU_ASSERT_EQUAL(pp_shm_rq_settle(&area, (uint64_t)pos), 0);
	}
}

/* ---- the engine over the areas ---- */

/* A published send, for the late path's direct hook. */
struct pub {
	const uint8_t *buf; /* sender's buffer */
	uint64_t len;	    /* its length */
	uint32_t msg_id;    /* the message */
	int valid;	    /* published */
};

static struct world {
	struct pp_proto *e[2];	  /* engine of rank 0 and 1 */
	struct pp_shm_rq rq[2];	  /* [s]: receives posted by 1 - s for messages from s */
	struct pub pub[2][SLOTS]; /* [sender][msg_id % SLOTS] */
	uint8_t *seg;		  /* stand-in segment: buffers here are "pp_malloc" ones */
	pid_t pid;		  /* where writes go (this process, or a dead one) */
	int fake_fail;		  /* write: claim, give it back, fail with this error */
	int lie;		  /* write: claim nothing and say it was written */
	int posts;		  /* receives published */
	int withdrawn;		  /* withdraw calls */
	int writes;		  /* messages written by the sender */
	int write_fails;	  /* writes that failed after a claim */
	uint64_t copied;	  /* bytes the receiver's direct hook copied */
	uint8_t frame[2000];	  /* scratch */
	uint64_t now;		  /* virtual time */
} w;

static int hook_direct(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst,
		       uint64_t len)
{
	(void)arg;
	struct pub *p = &w.pub[src][msg_id % SLOTS];
	if (!p->valid || p->msg_id != msg_id || off + len > p->len)
		return -ENOENT;
	memcpy(dst, p->buf + off, len);
	w.copied += len;
	return 0;
}

static void hook_publish(void *arg, uint32_t dst, uint32_t msg_id, const void *buf, uint64_t len)
{
	uint32_t src = (uint32_t)(uintptr_t)arg;
	(void)dst;
	w.pub[src][msg_id % SLOTS] = (struct pub){buf, len, msg_id, 1};
}

static uint64_t seg_offset(const void *p, uint64_t len)
{
	const uint8_t *b = p;
	return b >= w.seg && b < w.seg + SEG_BYTES && len <= (uint64_t)(w.seg + SEG_BYTES - b)
		   ? (uint64_t)(b - w.seg)
		   : PP_SHM_NO_OFFSET;
}

static int rq_post(void *arg, uint32_t src, uint64_t tag, uint64_t ignore, void *buf, uint64_t cap,
		   uint32_t expect)
{
	(void)arg;
	int slot = pp_shm_rq_post(&w.rq[src], tag, ignore, (uint64_t)(uintptr_t)buf,
				  seg_offset(buf, cap), cap, expect);
	w.posts += slot >= 0;
	return slot;
}

static int rq_take(void *arg, uint32_t src, int slot, uint32_t msg_id, int written)
{
	(void)arg;
	return pp_shm_rq_take(&w.rq[src], slot, msg_id, written);
}

static int rq_withdraw(void *arg, uint32_t src, int slot)
{
	(void)arg;
	w.withdrawn++;
	return pp_shm_rq_withdraw(&w.rq[src], slot);
}

static int rq_write(void *arg, uint32_t dst, uint32_t msg_id, uint64_t tag, const void *buf,
		    uint64_t len)
{
	uint32_t me = (uint32_t)(uintptr_t)arg;
	(void)dst;
	if (w.lie)
		return 0;
	struct pp_shm_rq *q = &w.rq[me];
	if (w.fake_fail) {
		struct pp_shm_rq_target t;
		int slot = pp_shm_rq_claim(q, tag, msg_id, len, &t);
		if (slot < 0)
			return slot;
		pp_shm_rq_unclaim(q, slot);
		w.write_fails++;
		return w.fake_fail;
	}
	int rc = pp_shm_rq_deliver(q, w.pid, w.seg, SEG_BYTES, tag, msg_id, buf, len);
	if (rc == 0)
		w.writes++;
	else if (rc != -ENOENT)
		w.write_fails++;
	return rc;
}

static void set_recvq(struct pp_proto_hooks *h)
{
	h->rq_post = rq_post;
	h->rq_take = rq_take;
	h->rq_withdraw = rq_withdraw;
	h->rq_write = rq_write;
}

/* The engine's write_min in the next world (0: none, the default's). */
static uint64_t write_min;

/* local_whole: with BTPs fitted, node-mates' messages up to it are pushed
 * whole (0: BTPs fixed). */
static void world_init_with(enum pp_proto_mode mode, uint64_t local_whole)
{
	uint8_t *seg = w.seg;
	memset(&w, 0, sizeof(w));
	w.seg = seg;
	w.pid = getpid();
	w.now = 1000;
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.mode = mode;
	c.btp_fit = local_whole > 0;
	c.local_whole = local_whole;
	c.write_min = write_min;
	c.hooks.direct = hook_direct;
	c.hooks.publish = hook_publish;
	set_recvq(&c.hooks);
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &c, 16, 744), 0);
}

static void world_init(enum pp_proto_mode mode)
{
	world_init_with(mode, 0);
}

static void world_fini(void)
{
	pp_proto_destroy(w.e[0]);
	pp_proto_destroy(w.e[1]);
}

/* Move frames both ways, and run timers, until nothing has happened for a
 * few rounds; returns the frames moved. */
static unsigned pump(void)
{
	int n = local_pump(w.e, w.frame, sizeof(w.frame), &w.now, 0);
	CU_ASSERT_FATAL(n >= 0);
	return (unsigned)n;
}

static int take(uint32_t i, struct pp_proto_cpl *c)
{
	return pp_proto_poll(w.e[i], c);
}

/* Rank 1 posts a receive from 0 (tag 5, cap bytes at r, r has 16 more to
 * see nothing is written past it) before (early) or after (late) rank 0
 * sends n bytes from s. Checks the bytes, the completions (an early
 * written send completes before any frame moves) and idleness; returns the
 * receive's error. */
static int one(uint64_t n, uint64_t cap, int late, unsigned seed, uint8_t *s, uint8_t *r)
{
	struct pp_proto_cpl c;
	pat_fill(s, n, seed);
	memset(r, 0xEE, cap + 16);
	int writes = w.writes;
	if (!late)
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r, cap, 2), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_send(w.e[0], 1, 5, s, n, 1), 0);
	int sent_now = take(0, &c);
	CU_ASSERT_EQUAL(sent_now, w.writes > writes);
	pump();
	if (late) {
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r, cap, 2), 0);
		pump();
	}
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.cookie == 2 && !c.is_send && c.len == n && c.source == 0);
	int err = c.error;
	if (err == 0 || err == -EMSGSIZE)
		CU_ASSERT(pat_check(r, n < cap ? n : cap, seed));
	CU_ASSERT_EQUAL(r[cap], 0xEE); /* nothing past the buffer */
	if (!sent_now) {
		CU_ASSERT_EQUAL_FATAL(take(0, &c), 1);
		CU_ASSERT(c.cookie == 1 && c.is_send && c.error == 0 && c.len == n);
	}
	CU_ASSERT_EQUAL(take(0, &c) + take(1, &c), 0);
	CU_ASSERT(pp_proto_idle(w.e[0]) && pp_proto_idle(w.e[1]));
	return err;
}

static const uint64_t wsizes[] = {4096, 4097, 65536, 100003, 1u << 20, (4u << 20) + 5, BIG};
static const size_t offs[] = {0, 1, 3, 4093};

static uint8_t sbuf[BIG + 8192], rbuf[BIG + 8192];

/* Early receiver: the sender wrote every byte (no frame payload, no copy by
 * the receiver), at unaligned offsets of both buffers; its send completed
 * at once. Then from a pp_malloc-like buffer in the segment: memcpy (the
 * pid is a dead one, so cross-memory attach could not have done it). */
static void test_early_written(void)
{
	for (int mode = 0; mode < 3; mode += 2) { /* Push-Pull and Push-Zero */
		world_init((enum pp_proto_mode)mode);
		int k = 0;
		for (size_t i = 0; i < PP_ARRAY_SIZE(wsizes); i++) {
			uint64_t n = wsizes[i];
			size_t so = offs[i % PP_ARRAY_SIZE(offs)],
			       ro = offs[(i + 1) % PP_ARRAY_SIZE(offs)];
			struct pp_stats a, b;
			pp_proto_stats(w.e[0], &a);
			int writes = w.writes;
			CU_ASSERT_EQUAL(one(n, n, 0, (unsigned)i, sbuf + so, rbuf + ro), 0);
			pp_proto_stats(w.e[0], &b);
			CU_ASSERT_EQUAL(w.writes, writes + 1);
			CU_ASSERT_EQUAL(b.bytes_tx - a.bytes_tx, 0);
			CU_ASSERT_EQUAL(w.copied, 0);
			k++;
		}
		struct pp_stats st;
		pp_proto_stats(w.e[1], &st);
		CU_ASSERT_EQUAL(st.msgs_rx, (uint64_t)k);
		CU_ASSERT_EQUAL(st.pulls_tx, 0);
		CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 0);
		CU_ASSERT_EQUAL(w.posts, k);
		world_fini();
	}
	/* Into the segment: memcpy, no cross-memory attach. */
	world_init(PP_PROTO_PUSH_PULL);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	w.pid = child; /* reaped: writing there fails with -ESRCH */
	for (size_t i = 0; i < 3; i++) {
		uint64_t n = wsizes[i * 3];
		CU_ASSERT_EQUAL(one(n, n, 0, 40 + (unsigned)i, sbuf + 5, w.seg + 64 + i), 0);
	}
	CU_ASSERT_EQUAL(w.writes, 3);
	CU_ASSERT_EQUAL(w.copied, 0);
	world_fini();
}

/* With BTPs fitted, a node-mate's message up to local_whole is pushed whole
 * and never written: a receive that short is not published (each entry
 * costs both cores its cache lines), its bytes come through the frames; a
 * longer one is published and written as before. */
static void test_pushed_whole_unpublished(void)
{
	world_init_with(PP_PROTO_PUSH_PULL, 64u << 10);
	CU_ASSERT_EQUAL(one(8192, 8192, 0, 60, sbuf + 1, rbuf + 3), 0);
	CU_ASSERT_EQUAL(one(65536, 65536, 0, 61, sbuf, rbuf), 0);
	CU_ASSERT_EQUAL(w.posts, 0);
	CU_ASSERT_EQUAL(w.writes, 0);
	CU_ASSERT_EQUAL(one(1u << 20, 1u << 20, 0, 62, sbuf, rbuf + 1), 0);
	CU_ASSERT_EQUAL(w.posts, 1);
	CU_ASSERT_EQUAL(w.writes, 1);
	world_fini();
}

/* Everything moves; receives cookie, cookie + 1 took n bytes each, in order,
 * patterns 73 and 74 in a and b; every send ended well; both idle. */
static void take_pair(uint64_t n, uint64_t cookie, const uint8_t *a, const uint8_t *b)
{
	struct pp_proto_cpl c;
	int got = 0;
	pump();
	while (take(1, &c) == 1)
		got += !c.error && c.len == n && c.cookie == cookie + (uint64_t)got;
	CU_ASSERT_EQUAL(got, 2);
	CU_ASSERT(pat_check(a, n, 73) && pat_check(b, n, 74));
	while (take(0, &c) == 1)
		CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pp_proto_idle(w.e[0]) && pp_proto_idle(w.e[1]));
}

/* A message streamed through the ring (local_stream) is never written: its
 * receive is not published, and with write_min at 8 KiB a 1 MiB message
 * that a published receive would have taken by the sender's write comes
 * through the frames. */
static void test_streamed_unpublished(void)
{
	write_min = 8192;
	world_init_with(PP_PROTO_PUSH_PULL, 8192);
	pp_proto_destroy(w.e[0]);
	pp_proto_destroy(w.e[1]);
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.btp_fit = 1;
	c.local_whole = 8192;
	c.local_stream = 1u << 20;
	c.write_min = write_min;
	c.hooks.direct = hook_direct;
	c.hooks.publish = hook_publish;
	set_recvq(&c.hooks);
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &c, 16, 744), 0);
	CU_ASSERT_EQUAL(one(8192, 8192, 0, 80, sbuf, rbuf), 0); /* written */
	CU_ASSERT_EQUAL(w.posts, 1);
	CU_ASSERT_EQUAL(w.writes, 1);
	CU_ASSERT_EQUAL(one(1u << 20, 1u << 20, 0, 81, sbuf + 1, rbuf + 3), 0);
	CU_ASSERT_EQUAL(one((1u << 20) + 5, (1u << 20) + 5, 1, 82, sbuf, rbuf), 0);
	CU_ASSERT_EQUAL(w.posts, 1);
	CU_ASSERT_EQUAL(w.writes, 1);
	CU_ASSERT_EQUAL(w.copied, 0); /* nor copied by the receiver */
	write_min = 0;
	world_fini();
}

/* write_min: a message pushed whole from write_min on, alone on its way to
 * the receiver, is written into its published receive (one copy); a shorter
 * one is not published. One sent while the last one's frame is not yet
 * acknowledged goes whole through the frames, though its receive waits
 * published: a stream through the ring keeps both cores copying. Of
 * receives posted together only the first is published. */
static void test_pushed_whole_written(void)
{
	write_min = 8192;
	world_init_with(PP_PROTO_PUSH_PULL, 64u << 10);
	CU_ASSERT_EQUAL(one(4096, 4096, 0, 70, sbuf + 1, rbuf + 3), 0);
	CU_ASSERT_EQUAL(w.posts, 0);
	CU_ASSERT_EQUAL(one(8192, 8192, 0, 71, sbuf + 1, rbuf + 3), 0);
	CU_ASSERT_EQUAL(one(16384, 16384, 0, 72, sbuf, rbuf), 0);
	CU_ASSERT_EQUAL(w.posts, 2);
	CU_ASSERT_EQUAL(w.writes, 2);
	enum { N = 16384 };
	uint8_t *r2 = rbuf + N + 64;
	pat_fill(sbuf, N, 73);
	pat_fill(sbuf + N, N, 74);
	CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, rbuf, N, 11), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_send(w.e[0], 1, 5, sbuf, N, 21), 0);
	CU_ASSERT_EQUAL(w.writes, 3);
	/* Its frame to the receiver, no ack back yet; the next receive then
	 * is published for the next message. */
	int len = pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now);
	CU_ASSERT_FATAL(len > 0);
	CU_ASSERT_EQUAL(pp_proto_input_local(w.e[1], 0, w.frame, (size_t)len, w.now), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r2, N, 12), 0);
	CU_ASSERT_EQUAL(w.posts, 4);
	CU_ASSERT_EQUAL_FATAL(pp_proto_send(w.e[0], 1, 5, sbuf + N, N, 22), 0);
	CU_ASSERT_EQUAL(w.writes, 3);
	take_pair(N, 11, rbuf, r2);
	/* Two receives posted at once: only the first is published (the
	 * second's message could travel alone only after the first's). */
	memset(rbuf, 0, N);
	memset(r2, 0, N);
	CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, rbuf, N, 13), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r2, N, 14), 0);
	CU_ASSERT_EQUAL(w.posts, 5);
	CU_ASSERT_EQUAL_FATAL(pp_proto_send(w.e[0], 1, 5, sbuf, N, 23), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_send(w.e[0], 1, 5, sbuf + N, N, 24), 0);
	CU_ASSERT_EQUAL(w.writes, 4);
	take_pair(N, 13, rbuf, r2);
	write_min = 0;
	world_fini();
}

/* Late receiver: nothing is published when the message is here already;
 * the receiver copies, as before. */
static void test_late_read(void)
{
	world_init(PP_PROTO_PUSH_PULL);
	for (size_t i = 0; i < PP_ARRAY_SIZE(wsizes); i++) {
		uint64_t n = wsizes[i], copied = w.copied;
		CU_ASSERT_EQUAL(one(n, n, 1, (unsigned)i, sbuf + 1, rbuf + 2), 0);
		CU_ASSERT_EQUAL(w.copied - copied, n - 760);
	}
	CU_ASSERT_EQUAL(w.writes + w.posts, 0);
	world_fini();
}

/* Two receives from one source: tags 1 then 2, messages tag 2 then tag 1:
 * each lands in its own buffer. Then two receives of one tag, two
 * messages: in order. Then a receive for any tag. */
static void test_two_tags(void)
{
	static uint8_t s1[50000], s2[50000], r1[50000], r2[50000];
	struct pp_proto_cpl c;
	world_init(PP_PROTO_PUSH_PULL);
	pat_fill(s1, sizeof(s1), 1);
	pat_fill(s2, sizeof(s2), 2);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 1, 0, r1, sizeof(r1), 11), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 2, 0, r2, sizeof(r2), 12), 0);
	CU_ASSERT_EQUAL(w.posts, 2);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 2, s2, sizeof(s2), 21), 0);
	CU_ASSERT_EQUAL(w.writes, 1); /* message 0, tag 2: the second receive */
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 1, s1, sizeof(s1), 22), 0);
	CU_ASSERT_EQUAL(w.writes, 1); /* message 1: the first waits for 0, so not */
	pump();
	int n = 0;
	while (take(1, &c)) {
		CU_ASSERT_EQUAL(c.error, 0);
		CU_ASSERT_EQUAL(c.tag, (int)c.cookie - 10);
		n++;
	}
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT(pat_check(r1, sizeof(r1), 1) && pat_check(r2, sizeof(r2), 2));
	CU_ASSERT_EQUAL(w.copied, sizeof(s1) - 760);
	while (take(0, &c))
		CU_ASSERT_EQUAL(c.error, 0);
	/* Same tag twice: first message into the first receive. */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, r1, sizeof(r1), 31), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, r2, sizeof(r2), 32), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s2, sizeof(s2), 41), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s1, sizeof(s1), 42), 0);
	pump();
	CU_ASSERT(pat_check(r1, sizeof(r1), 2) && pat_check(r2, sizeof(r2), 1));
	CU_ASSERT_EQUAL(w.writes, 2);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(take(1, &c), 1);
		CU_ASSERT(c.error == 0 && c.cookie == 31 + (uint64_t)i);
	}
	while (take(0, &c))
		CU_ASSERT_EQUAL(c.error, 0);
	/* Any tag from this source: published, and written. */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 0, PP_PROTO_IGNORE_ALL, r1, sizeof(r1), 51), 0);
	CU_ASSERT_EQUAL(w.posts, 5);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 9, s1, sizeof(s1), 61), 0);
	CU_ASSERT_EQUAL(w.writes, 3);
	pump();
	CU_ASSERT_EQUAL(take(1, &c), 1);
	CU_ASSERT(c.error == 0 && c.cookie == 51 && c.tag == 9 && pat_check(r1, sizeof(r1), 1));
	while (take(0, &c))
		CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pp_proto_idle(w.e[0]) && pp_proto_idle(w.e[1]));
	world_fini();
}

/* MPI's tags through the libfabric provider: 64 bits, with a context id in
 * the high half and receives that ignore some bits (Open MPI's mtl ofi:
 * protocol bits, MPI_ANY_TAG). The sender matches them by the engine's rule
 * (pp_tag.h) and writes; a message whose counted bits differ is not
 * written into that receive. */
static void test_wide_tags(void)
{
	static uint8_t s[50000], r1[50000], r2[50000], r3[50000];
	struct pp_proto_cpl c;
	const uint64_t ctx = 0x0000002a00000000ull, ctx43 = ctx + (1ull << 32),
		       proto = 0xc000000000000000ull;
	world_init(PP_PROTO_PUSH_PULL);
	pat_fill(s, sizeof(s), 7);
	/* Any tag of context 42, the protocol bits ignored: published, and
	 * context 42's tag 5 with a protocol bit set is written into it. */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, ctx, proto | 0x7fffffffull, r1, sizeof(r1), 71),
			0);
	CU_ASSERT_EQUAL(w.posts, 1);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, proto | ctx | 5, s, sizeof(s), 81), 0);
	CU_ASSERT_EQUAL(w.writes, 1);
	pump();
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.error == 0 && c.cookie == 71 && c.tag == (proto | ctx | 5));
	CU_ASSERT(pat_check(r1, sizeof(r1), 7));
	/* Context 42's tag 6, exactly: context 43's tag 6 is not written
	 * into it, and goes the ordinary way (unexpected). */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, ctx | 6, 0, r2, sizeof(r2), 72), 0);
	CU_ASSERT_EQUAL(w.posts, 2);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, ctx43 | 6, s, sizeof(s), 82), 0);
	CU_ASSERT_EQUAL(w.writes, 1);
	pump();
	CU_ASSERT_EQUAL(take(1, &c), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, ctx43 | 6, 0, r3, sizeof(r3), 73), 0);
	pump();
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.error == 0 && c.cookie == 73 && c.tag == (ctx43 | 6));
	CU_ASSERT(pat_check(r3, sizeof(r3), 7));
	/* r2 still waits; its message comes the ordinary way (its entry
	 * expected the message before). */
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, ctx | 6, s, sizeof(s), 83), 0);
	pump();
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.error == 0 && c.cookie == 72 && pat_check(r2, sizeof(r2), 7));
	while (take(0, &c))
		CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pp_proto_idle(w.e[0]) && pp_proto_idle(w.e[1]));
	world_fini();
}

/* A receive for any source blocks publishing after it until it is matched;
 * it is never published itself. Order stays MPI's. */
static void test_any_source(void)
{
	static uint8_t s[3][20000], r[3][20000];
	struct pp_proto_cpl c;
	world_init(PP_PROTO_PUSH_PULL);
	for (int i = 0; i < 3; i++)
		pat_fill(s[i], sizeof(s[i]), 50 + (unsigned)i);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], PP_PROTO_ANY, 5, 0, r[0], sizeof(r[0]), 100), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 5, 0, r[1], sizeof(r[1]), 101), 0);
	CU_ASSERT_EQUAL(w.posts, 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 5, s[i], sizeof(s[i]), (uint64_t)i), 0);
	pump();
	CU_ASSERT(pat_check(r[0], sizeof(r[0]), 50) && pat_check(r[1], sizeof(r[1]), 51));
	CU_ASSERT_EQUAL(w.writes, 0);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(take(1, &c), 1);
		CU_ASSERT(c.error == 0 && c.cookie == 100 + (uint64_t)i);
	}
	while (take(0, &c))
		CU_ASSERT_EQUAL(c.error, 0);
	/* Specific first (published), then any source (not): the message
	 * goes to the first, written; the next to the second. */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 5, 0, r[0], sizeof(r[0]), 200), 0);
	CU_ASSERT_EQUAL(
	    pp_proto_recv(w.e[1], PP_PROTO_ANY, 0, PP_PROTO_IGNORE_ALL, r[1], sizeof(r[1]), 201),
	    0);
	CU_ASSERT_EQUAL(w.posts, 1);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 5, s[2], sizeof(s[2]), 2), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 6, s[0], sizeof(s[0]), 3), 0);
	CU_ASSERT_EQUAL(w.writes, 1);
	pump();
	CU_ASSERT(pat_check(r[0], sizeof(r[0]), 52) && pat_check(r[1], sizeof(r[1]), 50));
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(take(1, &c), 1);
		CU_ASSERT(c.error == 0 && c.cookie == 200 + (uint64_t)i);
	}
	while (take(0, &c))
		CU_ASSERT_EQUAL(c.error, 0);
	/* A receive from 0 too small to publish blocks the next one. */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 7, 0, r[0], 700, 300), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 7, 0, r[1], sizeof(r[1]), 301), 0);
	CU_ASSERT_EQUAL(w.posts, 1);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 7, s[1], 600, 4), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 7, s[2], sizeof(s[2]), 5), 0);
	pump();
	CU_ASSERT(pat_check(r[0], 600, 51) && pat_check(r[1], sizeof(r[1]), 52));
	CU_ASSERT_EQUAL(w.writes, 1);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(take(1, &c), 1);
		CU_ASSERT(c.error == 0 && c.cookie == 300 + (uint64_t)i);
	}
	world_fini();
}

/* A published receive shorter than the message: not written, truncated
 * as before (-EMSGSIZE, nothing past its end). */
static void test_truncated(void)
{
	world_init(PP_PROTO_PUSH_PULL);
	uint64_t caps[] = {5000, 70000, 299999};
	for (size_t k = 0; k < PP_ARRAY_SIZE(caps); k++)
		CU_ASSERT_EQUAL(one(300000, caps[k], 0, 9, sbuf + 3, rbuf + 1), -EMSGSIZE);
	CU_ASSERT_EQUAL(w.posts, 3);
	CU_ASSERT_EQUAL(w.writes, 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_NOT_EQUAL(pp_shm_rq_state(&w.rq[0], i), PP_SHM_RQ_POSTED);
	world_fini();
}

/* Published receives that end without a message withdraw their entry: the
 * peer lost, gone, or the engine destroyed. */
static void test_withdrawn(void)
{
	static uint8_t r[3][20000];
	struct pp_proto_cpl c;
	struct pp_shm_rq_target t;
	world_init(PP_PROTO_PUSH_PULL);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 5, 0, r[0], sizeof(r[0]), 1), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&w.rq[0], 0), PP_SHM_RQ_POSTED);
	pp_proto_peer_fail(w.e[1], 0);
	CU_ASSERT_EQUAL(take(1, &c), 1);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&w.rq[0], 0), PP_SHM_RQ_FREE);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(&w.rq[0], 5, 0, 100, &t), -ENOENT);
	world_fini();

	world_init(PP_PROTO_PUSH_PULL);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 5, 0, r[0], sizeof(r[0]), 1), 0);
	pp_proto_peer_gone(w.e[1], 0);
	CU_ASSERT_EQUAL(take(1, &c), 1);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	CU_ASSERT_EQUAL(pp_shm_rq_state(&w.rq[0], 0), PP_SHM_RQ_FREE);
	world_fini();

	world_init(PP_PROTO_PUSH_PULL);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 5 + i, 0, r[i], sizeof(r[i]), 1), 0);
	CU_ASSERT_EQUAL(w.posts, 3);
	pp_proto_destroy(w.e[1]);
	w.e[1] = NULL;
	CU_ASSERT_EQUAL(w.withdrawn, 3);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(pp_shm_rq_state(&w.rq[0], i), PP_SHM_RQ_FREE);
	world_fini();
}

/* The write fails after the claim (cross-memory attach refused, or the
 * process gone): the message goes the ordinary way, delivered once. */
static void test_write_fails(void)
{
	for (int how = 0; how < 2; how++) {
		world_init(PP_PROTO_PUSH_PULL);
		if (how == 0) {
			w.fake_fail = -EPERM;
		} else {
			pid_t child = fork();
			if (child == 0)
				_exit(0);
			waitpid(child, NULL, 0);
			w.pid = child;
		}
		uint64_t n = 1u << 20;
		CU_ASSERT_EQUAL(one(n, n, 0, 77, sbuf + 1, rbuf + 3), 0);
		CU_ASSERT_EQUAL(w.write_fails, 1);
		CU_ASSERT_EQUAL(w.writes, 0);
		CU_ASSERT_EQUAL(w.copied, n - 760);
		CU_ASSERT_EQUAL(pp_shm_rq_state(&w.rq[0], 0), PP_SHM_RQ_TAKEN);
		struct pp_stats st;
		pp_proto_stats(w.e[1], &st);
		CU_ASSERT_EQUAL(st.msgs_rx, 1);
		CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 0);
		/* And the next one, written or not, arrives too. */
		w.fake_fail = 0;
		w.pid = getpid();
		CU_ASSERT_EQUAL(one(5000, 5000, 0, 78, sbuf, rbuf), 0);
		CU_ASSERT_EQUAL(w.writes, 1);
		world_fini();
	}
}

/* A sender that says it wrote what it did not claim: the receive fails with
 * -EPROTO, a STATE drop is counted; with no receive posted the frame is
 * dropped. Nothing is written anywhere. */
static void test_bad_written(void)
{
	static uint8_t s[20000], r[20000 + 16];
	struct pp_proto_cpl c;
	world_init(PP_PROTO_PUSH_PULL);
	w.lie = 1;
	memset(r, 0xEE, sizeof(r));
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 5, 0, r, 20000, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 5, s, sizeof(s), 2), 0);
	pump();
	CU_ASSERT_EQUAL(take(1, &c), 1);
	CU_ASSERT_EQUAL(c.error, -EPROTO);
	CU_ASSERT_EQUAL(r[0], 0xEE);
	struct pp_stats st;
	pp_proto_stats(w.e[1], &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 1);
	/* No receive at all: dropped, nothing completes. */
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 5, s, sizeof(s), 3), 0);
	pump();
	CU_ASSERT_EQUAL(take(1, &c), 0);
	CU_ASSERT_EQUAL(pp_proto_probe(w.e[1], 0, 5, 0, &c), 0);
	pp_proto_stats(w.e[1], &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 2);
	world_fini();
}

/* A FIRST frame the receiver refuses (no receive record free) is not seen:
 * a receive posted then still waits for that message, which comes again
 * the ordinary way, so the sender must not write the next message into it. */
static void test_refused_first(void)
{
	static uint8_t s[2][20000], r[2][20000], small[4][10];
	struct pp_proto_cpl c;
	world_init(PP_PROTO_PUSH_PULL);
	pp_proto_destroy(w.e[1]);
	struct pp_proto_conf cf;
	pp_proto_conf_default(&cf);
	cf.rank = 1;
	cf.nranks = 2;
	cf.job = 0x5eed; /* local_pair's */
	cf.inc = net_inc(1);
	cf.mac[5] = 1;
	cf.max_msgs = 2; /* 4 receive records */
	cf.hooks.direct = hook_direct;
	cf.hooks.publish = hook_publish;
	cf.hooks.arg = (void *)(uintptr_t)1;
	set_recvq(&cf.hooks);
	CU_ASSERT_EQUAL_FATAL(pp_proto_create(&w.e[1], &cf), 0);
	uint8_t mac[6] = {0};
	CU_ASSERT_EQUAL_FATAL(pp_proto_peer_add(w.e[1], 0, mac, net_inc(0)), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_peer_local(w.e[1], 0, 16, 744), 0);
	/* Four small messages (one frame each) fill every record; the FIRST
	 * of message 4 is refused. */
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 1, small[i], 10, (uint64_t)i), 0);
	pat_fill(s[0], sizeof(s[0]), 60);
	pat_fill(s[1], sizeof(s[1]), 61);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 2, s[0], sizeof(s[0]), 4), 0);
	for (int i = 0; i < 5; i++) {
		int len = pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now);
		CU_ASSERT_FATAL(len > 0);
		CU_ASSERT_EQUAL(pp_proto_input_local(w.e[1], 0, w.frame, (size_t)len, w.now),
				i < 4 ? 0 : -EPROTO);
	}
	/* One small receive frees a record; the big receive, posted now, is
	 * published waiting for message 4. */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 1, 0, small[0], 10, 10), 0);
	CU_ASSERT_EQUAL(take(1, &c), 1);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 2, 0, r[0], sizeof(r[0]), 20), 0);
	CU_ASSERT_EQUAL(w.posts, 1);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 2, s[1], sizeof(s[1]), 5), 0);
	CU_ASSERT_EQUAL(w.writes, 0); /* message 5 is not the one it waits for */
	for (int i = 1; i < 4; i++) {
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 1, 0, small[i], 10, 10), 0);
		CU_ASSERT_EQUAL(take(1, &c), 1);
	}
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 2, 0, r[1], sizeof(r[1]), 21), 0);
	pump();
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(take(1, &c), 1);
		CU_ASSERT(c.error == 0 && c.cookie == 20 + (uint64_t)i);
	}
	CU_ASSERT(pat_check(r[0], sizeof(r[0]), 60) && pat_check(r[1], sizeof(r[1]), 61));
	CU_ASSERT_EQUAL(w.writes, 0);
	world_fini();
}

static int suite_init(void)
{
	w.seg = aligned_alloc(4096, SEG_BYTES);
	return w.seg ? 0 : -1;
}

static int suite_fini(void)
{
	free(w.seg);
	return 0;
}

static CU_TestInfo area_tests[] = {
    {"claim: the first matching entry, its message, its length", test_rq_claim_order},
    {"withdraw, full ring, reclaim in post order, close", test_rq_withdraw_full},
    {"help entries: claimed by position, written, withdrawn, waited for", test_rq_help},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo engine_tests[] = {
    {"early receiver: the sender writes, 4 KiB .. 8 MiB, unaligned", test_early_written},
    {"late receiver: the receiver reads", test_late_read},
    {"pushed whole (btp_fit): not published, not written", test_pushed_whole_unpublished},
    {"pushed whole from write_min: written when alone on its way", test_pushed_whole_written},
    {"streamed through the ring: never published nor written", test_streamed_unpublished},
    {"two tags from one source, sent in the other order", test_two_tags},
    {"MPI's 64-bit tags and ignore masks, matched and written", test_wide_tags},
    {"any source blocks publishing; order kept", test_any_source},
    {"published receive truncated", test_truncated},
    {"withdrawn: peer lost, gone, engine destroyed", test_withdrawn},
    {"the write fails after the claim: delivered once", test_write_fails},
    {"written with no claim: -EPROTO, nothing written", test_bad_written},
    {"a refused FIRST frame is not seen", test_refused_first},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"shm_recvq_area", NULL, NULL, NULL, NULL, area_tests},
    {"shm_recvq_engine", suite_init, suite_fini, NULL, NULL, engine_tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)

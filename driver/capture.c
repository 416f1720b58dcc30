/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap_dump writer. Records are written with stdio under the FILE's own lock,
 * so bursts from several queues never interleave inside a record. A TX burst
 * is recorded before it is handed to the backend (afterwards the buffers
 * belong to the NIC); frames the backend did not take are cut off the file
 * again, so a frame retried later appears once, when it really goes out.
 */
#include "capture.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pp_log.h"
#include "pp_port.h"

#define PCAP_MAGIC_NS	  0xa1b23c4du /* nanosecond-resolution pcap */
#define LINKTYPE_ETHERNET 1
#define SNAPLEN		  65535

struct pp_capture {
	FILE *f;    /* the open capture file */
	int failed; /* a write failed: stop writing, it was logged once */
};

struct file_hdr {
	uint32_t magic;	   /* PCAP_MAGIC_NS in host order: readers detect the order */
	uint16_t major;	   /* 2 */
	uint16_t minor;	   /* 4 */
	int32_t thiszone;  /* 0: timestamps are UTC */
	uint32_t sigfigs;  /* 0 */
	uint32_t snaplen;  /* longest record kept */
	uint32_t linktype; /* LINKTYPE_ETHERNET */
};

struct rec_hdr {
	uint32_t sec;	 /* seconds since the epoch */
	uint32_t nsec;	 /* nanoseconds within sec */
	uint32_t caplen; /* bytes of the frame in the file */
	uint32_t len;	 /* bytes of the frame on the wire */
};

int pp_capture_open(struct pp_capture **cap, const char *path)
{
	struct pp_capture *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->f = fopen(path, "wb");
	if (!c->f) {
		int rc = -errno;
		pp_err("pcap_dump %s: cannot create (errno %d)", path, -rc);
		free(c);
		return rc;
	}
	struct file_hdr h = {PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET};
	if (fwrite(&h, sizeof(h), 1, c->f) != 1 || fflush(c->f) != 0) {
		pp_err("pcap_dump %s: cannot write", path);
		fclose(c->f);
		free(c);
		return -EIO;
	}
	*cap = c;
	return 0;
}

static uint32_t caplen_of(const struct pp_buf *b)
{
	return b->len < SNAPLEN ? b->len : SNAPLEN;
}

/* Append n records; the caller holds the FILE lock. */
static void write_locked(struct pp_capture *c, struct pp_buf *const *bufs, unsigned n)
{
	if (c->failed)
		return;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	for (unsigned i = 0; i < n; i++) {
		uint64_t ts = bufs[i]->ts_ns;
		struct rec_hdr r = {(uint32_t)now.tv_sec, (uint32_t)now.tv_nsec, caplen_of(bufs[i]),
				    bufs[i]->len};
		if (ts) {
			r.sec = (uint32_t)(ts / 1000000000u);
			r.nsec = (uint32_t)(ts % 1000000000u);
		}
		if (fwrite_unlocked(&r, sizeof(r), 1, c->f) != 1 ||
		    fwrite_unlocked(bufs[i]->data, 1, r.caplen, c->f) != r.caplen) {
			pp_err("pcap_dump: write failed; capture stopped");
			c->failed = 1;
			return;
		}
	}
}

void pp_capture_frames(struct pp_capture *c, struct pp_buf *const *bufs, unsigned n)
{
	flockfile(c->f);
	write_locked(c, bufs, n);
	funlockfile(c->f);
}

unsigned pp_capture_tx_burst(struct pp_port *p, uint16_t q, struct pp_buf **bufs, unsigned n)
{
	struct pp_capture *c = p->capture;
	flockfile(c->f);
	write_locked(c, bufs, n);
	unsigned sent = p->ops->tx_burst(p, q, bufs, n);
	if (sent < n && !c->failed) {
		/* Cut the records of frames not taken: they are still the caller's. */
		long cut = 0;
		for (unsigned i = sent; i < n; i++)
			cut += (long)(sizeof(struct rec_hdr) + caplen_of(bufs[i]));
		long end = ftell(c->f);
		if (end < 0 || fflush(c->f) != 0 || ftruncate(fileno(c->f), end - cut) != 0 ||
		    fseek(c->f, end - cut, SEEK_SET) != 0) {
			pp_err("pcap_dump: cannot rewind; capture stopped");
			c->failed = 1;
		}
	}
	funlockfile(c->f);
	return sent;
}

void pp_capture_close(struct pp_capture *c)
{
	if (!c)
		return;
	fclose(c->f);
	free(c);
}

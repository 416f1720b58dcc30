/* SPDX-License-Identifier: BSD-3-Clause */
#include "capture.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pp_log.h"
#include "pp_port.h"

#define PCAP_MAGIC_NS 0xa1b23c4du /* nanosecond-resolution pcap */
#define LINKTYPE_ETHERNET 1
#define SNAPLEN 65535

struct pp_capture {
	FILE *f;
};

struct file_hdr {
	uint32_t magic;
	uint16_t major, minor;
	int32_t thiszone;
	uint32_t sigfigs, snaplen, linktype;
};

struct rec_hdr {
	uint32_t sec, nsec, caplen, len;
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
	if (fwrite(&h, sizeof(h), 1, c->f) != 1) {
		fclose(c->f);
		free(c);
		return -EIO;
	}
	*cap = c;
	return 0;
}

void pp_capture_frames(struct pp_capture *c, struct pp_buf *const *bufs, unsigned n)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	for (unsigned i = 0; i < n; i++) {
		uint32_t caplen = bufs[i]->len < SNAPLEN ? bufs[i]->len : SNAPLEN;
		struct rec_hdr r = {(uint32_t)now.tv_sec, (uint32_t)now.tv_nsec, caplen,
				    bufs[i]->len};
		fwrite(&r, sizeof(r), 1, c->f);
		fwrite(bufs[i]->data, 1, caplen, c->f);
	}
}

void pp_capture_close(struct pp_capture *c)
{
	if (!c)
		return;
	fclose(c->f);
	free(c);
}

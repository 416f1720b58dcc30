/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helper: read a classic pcap file (either byte order, µs or ns) whole. */
#ifndef PP_TEST_PORT_PCAP_FILE_H
#define PP_TEST_PORT_PCAP_FILE_H

#include <stdint.h>

struct pcap_rec {
	uint64_t ts_ns;	 /* record time, nanoseconds since the epoch */
	uint32_t len;	 /* bytes on the wire */
	uint32_t caplen; /* bytes in data */
	uint8_t *data;	 /* the captured bytes (malloc'd) */
};

struct pcap_file {
	uint32_t linktype;     /* 1 for Ethernet */
	int nsec;	       /* 1 when timestamps are in nanoseconds */
	unsigned n;	       /* records read */
	struct pcap_rec *recs; /* n records (malloc'd) */
};

/* Read path into f. Errors: -errno of fopen, -EPROTO bad magic or a
 * truncated record, -ENOMEM. */
int pcap_file_read(const char *path, struct pcap_file *f);
void pcap_file_free(struct pcap_file *f);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
#include "port_pcap_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t swap32(uint32_t v)
{
	return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

int pcap_file_read(const char *path, struct pcap_file *out)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return -errno;
	uint32_t h[6];
	int rc = -EPROTO, swap = 0, nsec = 0;
	struct pcap_file f = {0};
	if (fread(h, sizeof(h), 1, fp) != 1)
		goto out;
	switch (h[0]) {
	case 0xa1b2c3d4u:
		break;
	case 0xa1b23c4du:
		nsec = 1;
		break;
	case 0xd4c3b2a1u:
		swap = 1;
		break;
	case 0x4d3cb2a1u:
		swap = nsec = 1;
		break;
	default:
		goto out;
	}
	f.nsec = nsec;
	f.linktype = swap ? swap32(h[5]) : h[5];
	for (;;) {
		uint32_t r[4];
		size_t got = fread(r, 1, sizeof(r), fp);
		if (got == 0)
			break;
		if (got != sizeof(r))
			goto out;
		for (int i = 0; swap && i < 4; i++)
			r[i] = swap32(r[i]);
		struct pcap_rec *nr = realloc(f.recs, (f.n + 1) * sizeof(*nr));
		if (!nr) {
			rc = -ENOMEM;
			goto out;
		}
		f.recs = nr;
		struct pcap_rec *rec = &f.recs[f.n];
		rec->ts_ns = (uint64_t)r[0] * 1000000000u + (uint64_t)r[1] * (nsec ? 1u : 1000u);
		rec->caplen = r[2];
		rec->len = r[3];
		rec->data = malloc(r[2] ? r[2] : 1);
		if (!rec->data) {
			rc = -ENOMEM;
			goto out;
		}
		f.n++;
		if (fread(rec->data, 1, r[2], fp) != r[2])
			goto out;
	}
	rc = 0;
	*out = f;
out:
	fclose(fp);
	if (rc)
		pcap_file_free(&f);
	return rc;
}

void pcap_file_free(struct pcap_file *f)
{
	for (unsigned i = 0; i < f->n; i++)
		free(f->recs[i].data);
	free(f->recs);
	memset(f, 0, sizeof(*f));
}

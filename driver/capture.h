/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap_dump: every frame sent and received, timestamped, in the classic pcap
 * file format (nanosecond timestamps, LINKTYPE_ETHERNET) that tshark and
 * Wireshark open. Written with plain stdio so capture works with every
 * backend, libpcap or not.
 */
#ifndef PP_CAPTURE_H
#define PP_CAPTURE_H

struct pp_capture;

/* Create or truncate path and write the file header.
 * Errors: -errno of fopen/fwrite (-EACCES, -ENOENT, ...), -ENOMEM. */
int pp_capture_open(struct pp_capture **cap, const char *path);

/* Flush and close; NULL is ignored. */
void pp_capture_close(struct pp_capture *cap);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet MAC addresses as text: "02:50:50:00:00:01". Cold path. */
#ifndef PP_MAC_H
#define PP_MAC_H

#include <stdint.h>

#define PP_MAC_STRLEN 18 /* "xx:xx:xx:xx:xx:xx" and the NUL */

/* Parse six colon-separated hex bytes, nothing before or after.
 * Errors: -EINVAL. */
int pp_mac_parse(const char *s, uint8_t mac[6]);

#endif

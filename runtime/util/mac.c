/* SPDX-License-Identifier: BSD-3-Clause */
#include "pp_mac.h"

#include <errno.h>
#include <stdio.h>

int pp_mac_parse(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;
	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -EINVAL;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

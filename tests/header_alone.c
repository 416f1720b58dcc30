/* SPDX-License-Identifier: BSD-3-Clause */
/* pp.h must compile on its own, first, under strict C11. */
#include <pp.h>

int pp_header_alone_check(void);
int pp_header_alone_check(void)
{
	pp_status st = {PP_ANY_SOURCE, PP_ANY_TAG, 0, 0};
	return st.source + st.tag + (int)sizeof(struct pp_stats);
}

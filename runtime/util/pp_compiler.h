/* SPDX-License-Identifier: BSD-3-Clause */
/* Compiler helpers shared by every layer. */
#ifndef PP_COMPILER_H
#define PP_COMPILER_H

#define PP_CACHE_LINE 64

#define pp_likely(x)   __builtin_expect(!!(x), 1)
#define pp_unlikely(x) __builtin_expect(!!(x), 0)

#define PP_ALIGNED(n)	 __attribute__((aligned(n)))
#define PP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif

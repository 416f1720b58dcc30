/* SPDX-License-Identifier: BSD-3-Clause */
/* Configure-time check that clang links -fsanitize=fuzzer programs. */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	return 0;
}

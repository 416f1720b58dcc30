/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as carried in every
 * frame's crc32c field. Where the CPU has AVX-512 (F, VL) carry-less
 * multiply (VPCLMULQDQ), buffers of 256 bytes and more are folded with it
 * and the rest taken by the crc32 instruction; else the SSE4.2 crc32 instruction
 * alone; else a table (decided once, before main). All give the same value.
 *
 * The running value chains like zlib's crc32(): start with 0, and
 * pp_crc32c(pp_crc32c(0, a, n), b, m) equals the CRC of a followed by b.
 */
#ifndef PP_CRC32C_H
#define PP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of n bytes at p, continuing from crc (0 to start). */
uint32_t pp_crc32c(uint32_t crc, const void *p, size_t n);

/* The table version alone (tests compare it with the hardware one). */
uint32_t pp_crc32c_sw(uint32_t crc, const void *p, size_t n);

/* The SSE4.2 version alone; only call it when pp_crc32c_hw_available(). */
uint32_t pp_crc32c_hw(uint32_t crc, const void *p, size_t n);

/* 1 when this CPU has the SSE4.2 crc32 instruction, else 0. */
int pp_crc32c_hw_available(void);

/* The folding version alone (tests and crc_speed compare it). */
uint32_t pp_crc32c_fold(uint32_t crc, const void *p, size_t n);

/* 1 when this build, this CPU and its OS can run the folding, else 0 (then
 * pp_crc32c_fold takes the crc32 instruction or the table). */
int pp_crc32c_fold_available(void);

#endif

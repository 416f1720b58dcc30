/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * @file
 * Proof of the job's secret on the frames that make membership act.
 *
 * A launcher gives every rank of a job one secret (config key job_secret,
 * PP_JOB_SECRET; pprun draws one per launch, the PMIx bootstrap has rank 0
 * draw one and publish it through the fence). From it each rank derives the
 * same 32-byte key (pp_auth_key_derive: BLAKE2b-256 of a fixed label and the
 * secret). HELLO and BYE, the frames that admit, replace or end a peer,
 * end their payload with a 16-byte tag (wire.h, since version 4):
 *
 *   tag = BLAKE2b-128, keyed with the job key, over
 *         the Ethernet source MAC (6 bytes, the port membership learns)
 *         || the protocol header (76 bytes) with its crc32c field as zero
 *         || the payload before the tag
 *
 * The crc32c then covers the header and the whole payload, tag included, as
 * on every frame. A frame whose tag does not verify proves nothing: the
 * runtime drops and counts it (membership.c says what a job without a
 * secret does). Frames that carry data (PUSH, PULL, DATA, ACK, NACK, PING)
 * carry no tag: their CRC and go-back-N checks are all they cost.
 *
 * Pure computation: no I/O, no clock; libsodium does the hashing.
 */
#ifndef PP_AUTH_H
#define PP_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define PP_AUTH_KEY_LEN 32 /* the job key */
#define PP_AUTH_TAG_LEN 16 /* the trailer of a HELLO or BYE payload */

/*
 * The job key of a secret (a NUL-terminated string, at least one byte).
 * Returns 0, -EINVAL on a NULL or empty secret, -EIO when libsodium cannot
 * start.
 */
int pp_auth_key_derive(const char *secret, uint8_t key[PP_AUTH_KEY_LEN]);

/*
 * Sign a whole wire frame (Ethernet header included, as pp_wire_encode
 * wrote it) whose payload ends in PP_AUTH_TAG_LEN bytes reserved for the
 * tag: write the tag there, then the crc32c again. Returns 0, or -EINVAL
 * when the frame is shorter than its header and a tag, or its payload_len
 * disagrees with len.
 */
int pp_auth_sign(const uint8_t key[PP_AUTH_KEY_LEN], uint8_t *frame, size_t len);

/*
 * Check the tag of a frame that pp_wire_decode accepted. Returns 0 when it
 * was made with key, -EPROTO when the frame has no room for a tag (or its
 * payload_len disagrees with len), -EACCES when the tag is wrong.
 * Compares in constant time.
 */
int pp_auth_verify(const uint8_t key[PP_AUTH_KEY_LEN], const uint8_t *frame, size_t len);

#endif

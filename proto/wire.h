/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire format (docs/wire.md): an Ethernet II header with EtherType
 * 0x88B5, then a 76-byte protocol header in network byte order (version 5),
 * then payload_len bytes of payload. The crc32c field covers the header (with
 * the field itself taken as zero) followed by the payload.
 *
 * HELLO and BYE (version 4) end their payload with a 16-byte keyed tag over
 * the sender's MAC, the header and the payload before it (auth.h); a BYE's
 * payload is that tag alone, a HELLO's is its discovery record and the tag.
 * A rank of a job without a secret sends the tag as zeros. A HELLO's offset
 * field holds when its sender's incarnation began (ms since the epoch):
 * incarnations are random numbers (never 0), so only that signed time says
 * which of two is the later.
 *
 * Incarnations: every pp_init (and every attach to a node daemon) gives the
 * rank a new incarnation number, drawn at random (not guessable from the
 * clock; pp_wire_inc_after orders only numbers taken in sequence). A frame carries its sender's
 * (src_inc) and the incarnation of the receiver it was meant for (dst_inc), so no frame of an
 * earlier life of a rank is ever taken by a later one, or by a peer that knows the later one: the
 * decoder drops a frame whose dst_inc is not ours (STALE); whoever keeps per-peer state drops one
 * whose src_inc is not the peer's it knows. dst_inc may be 0 ("whichever") only on a HELLO (its
 * sender may not know the receiver yet) and on a BYE (a node daemon says it
 * for a dead rank without knowing its peers); those two are then judged by
 * src_inc alone.
 *
 * Decoding validates in a fixed order and names the first rule broken, as an
 * enum pp_drop_reason: SHORT (fewer than 90 bytes, or not our EtherType),
 * VERSION, TYPE, LENGTH (payload_len disagrees with the frame, exceeds the
 * MTU, or is non-zero on a type that carries none), CRC, JOB, RANK (source
 * out of range or destination not us; HELLO and BYE may be sent to
 * PP_WIRE_RANK_ALL),
 * STALE (dst_inc not ours), RANGE (payload outside [0, msg_len), or a PULL
 * offset past msg_len).
 *
 * Flags: FIRST marks the PUSH at offset 0 (the one matched), LAST the frame
 * ending the message, RETX a retransmission, PULL on a FIRST frame says the
 * sender pushes less than the whole message and waits for a PULL for the rest.
 * AGAIN on a PULL says the receiver gave up the pushed bytes (eviction): the
 * sender sends everything from the PULL's offset again, as DATA.
 * DONE on a PULL (offset = msg_len) says the receiver copied the rest itself,
 * straight from the sender's buffer (intranode): nothing is to be sent.
 * WRITTEN on a FIRST PUSH with no payload (intranode) says the sender wrote
 * the whole message straight into the receive buffer the receiver described
 * in its receive-queue area: the matched receive completes with every byte,
 * and no PULL follows.
 *
 * Extra flags (xflags, version 5): DATA on a FIRST PUSH says the message
 * carries 32 bits of immediate data (libfabric's remote CQ data) in the
 * data field, which the receive's completion reports. LITE exists only in
 * the local form (a node-mate's ring): a FIRST | LAST PUSH holding a whole
 * message outside the sequence (docs/protocol.md, rule 6); the engine drops
 * it from a port. The FIRST frame is
 * matched before any other frame of its message is taken, so the data is
 * known whatever order the rest arrives in. Other frames carry xflags and
 * data as zero; receivers read them on a FIRST PUSH only.
 */
#ifndef PP_WIRE_H
#define PP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "pp.h"
#include "pp_eth.h"

#define PP_WIRE_HDR_LEN	  76
#define PP_WIRE_MIN_FRAME (PP_ETH_HLEN + PP_WIRE_HDR_LEN)
#define PP_WIRE_VERSION	  5
#define PP_WIRE_RANK_ALL  UINT32_MAX /* HELLO or BYE to every rank */

/* Field offsets from the start of the protocol header (after Ethernet). */
enum pp_wire_off {
	PP_WIRE_OFF_VER_TYPE = 0, /* version (high 4 bits) | type (low 4 bits) */
	PP_WIRE_OFF_FLAGS = 1,
	PP_WIRE_OFF_PAYLOAD_LEN = 2,
	PP_WIRE_OFF_JOB = 4,
	PP_WIRE_OFF_STREAM = 8,
	PP_WIRE_OFF_ACK_STREAM = 10,
	PP_WIRE_OFF_SEQ = 12,
	PP_WIRE_OFF_ACK = 16,
	PP_WIRE_OFF_CREDIT = 20,
	PP_WIRE_OFF_XFLAGS = 22, /* enum pp_wire_xflag bits */
	PP_WIRE_OFF_SRC_RANK = 24,
	PP_WIRE_OFF_DST_RANK = 28,
	PP_WIRE_OFF_MSG_ID = 32,
	PP_WIRE_OFF_TAG = 36, /* 64 bits */
	PP_WIRE_OFF_MSG_LEN = 44,
	PP_WIRE_OFF_OFFSET = 52,
	PP_WIRE_OFF_SRC_INC = 60,
	PP_WIRE_OFF_DST_INC = 64,
	PP_WIRE_OFF_DATA = 68, /* immediate data (xflags DATA) */
	PP_WIRE_OFF_CRC = 72,
};

enum pp_wire_type {
	PP_WIRE_HELLO = 1, /* discovery, unsequenced */
	PP_WIRE_PUSH = 2,  /* pushed bytes; FIRST at offset 0 is matched */
	PP_WIRE_PULL = 3,  /* request for [offset, msg_len) of msg_id, sequenced */
	PP_WIRE_DATA = 4,  /* pulled bytes, sequenced */
	PP_WIRE_ACK = 5,   /* standalone cumulative ack and credit update */
	PP_WIRE_NACK = 6,  /* gap seen: go back to seq */
	PP_WIRE_BYE = 7,   /* leaving, unsequenced; payload: the tag (auth.h) */
	PP_WIRE_PING = 8,  /* liveness probe, sequenced, no payload: just acked */
};

enum pp_wire_flag {
	PP_WIRE_F_FIRST = 0x01,	  /* first frame of a message (offset 0) */
	PP_WIRE_F_LAST = 0x02,	  /* last frame of a message */
	PP_WIRE_F_RETX = 0x04,	  /* sent again by go-back-N */
	PP_WIRE_F_PULL = 0x08,	  /* on FIRST: the rest waits for a PULL */
	PP_WIRE_F_DONE = 0x10,	  /* on PULL (intranode): the receiver copied it all */
	PP_WIRE_F_COPIED = 0x20,  /* the sender holds a copy: its send is done, ack lazily */
	PP_WIRE_F_AGAIN = 0x40,	  /* on PULL: pushed bytes were dropped, send from offset */
	PP_WIRE_F_WRITTEN = 0x80, /* on FIRST (intranode): the sender wrote it all */
	PP_WIRE_F_HELP = 0x80,	  /* on PULL (intranode): write the part the receive queue's
				   * entry at position offset asks (rule 6) */
};

enum pp_wire_xflag {
	PP_WIRE_XF_DATA = 0x0001, /* on FIRST PUSH: the data field is the message's */
};

/* The protocol header in host byte order. */
struct pp_wire_hdr {
	uint8_t type;	      /* enum pp_wire_type */
	uint8_t flags;	      /* enum pp_wire_flag bits */
	uint16_t payload_len; /* payload bytes after the header */
	uint32_t job;	      /* job key */
	uint16_t stream;      /* sender's TX stream */
	uint16_t ack_stream;  /* stream the ack refers to */
	uint32_t seq;	      /* go-back-N sequence (sequenced types) */
	uint32_t ack;	      /* next seq expected on ack_stream */
	uint16_t credit;      /* pushed-buffer credit limit, 256-byte units */
	uint16_t xflags;      /* enum pp_wire_xflag bits */
	uint32_t src_rank;    /* sending rank */
	uint32_t dst_rank;    /* receiving rank */
	uint32_t msg_id;      /* per (src, dst) message counter */
	uint64_t tag;	      /* message tag */
	uint64_t msg_len;     /* whole message length */
	uint64_t offset;      /* position of the payload in the message */
	uint32_t src_inc;     /* the sender's incarnation */
	uint32_t dst_inc;     /* the receiver's, as the sender knows it (0: see above) */
	uint32_t data;	      /* immediate data of the message (xflags DATA) */
};

/* What a received frame is checked against. */
struct pp_wire_check {
	uint32_t job;	 /* our job key */
	uint32_t rank;	 /* our rank */
	uint32_t nranks; /* ranks in the job */
	uint16_t mtu;	 /* largest frame after the Ethernet header */
	uint32_t inc;	 /* our incarnation */
};

/* The routing fields of a frame, read without checking it (node daemon). */
struct pp_wire_peek {
	uint8_t type;	     /* enum pp_wire_type (not checked) */
	uint8_t flags;	     /* enum pp_wire_flag bits */
	uint16_t stream;     /* sender's TX stream */
	uint16_t ack_stream; /* stream its ack refers to */
	uint32_t job;	     /* job key */
	uint32_t src_rank;   /* sending rank */
	uint32_t dst_rank;   /* receiving rank */
	uint32_t msg_id;     /* message number */
	uint32_t src_inc;    /* sender's incarnation */
	uint32_t dst_inc;    /* receiver's incarnation */
};

/* 1 when incarnation a is later than b (serial arithmetic: numbers
 * increase with time and wrap). */
static inline int pp_wire_inc_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* 1 when a frame of type may name no receiver incarnation (dst_inc 0). */
static inline int pp_wire_inc_any_ok(uint8_t type)
{
	return type == PP_WIRE_BYE || type == PP_WIRE_HELLO;
}

/* 1 when frames of this type carry a sequence number. */
static inline int pp_wire_sequenced(uint8_t type)
{
	return type == PP_WIRE_PUSH || type == PP_WIRE_PULL || type == PP_WIRE_DATA ||
	       type == PP_WIRE_PING;
}

/*
 * Write a whole frame at frame: Ethernet header (dst, src, 0x88B5), h, then
 * h->payload_len bytes from payload, and the crc32c.
 * Returns the frame length, or -ENOSPC when cap is too small, -EINVAL on a
 * bad type.
 */
int pp_wire_encode(uint8_t *frame, size_t cap, const uint8_t dst[6], const uint8_t src[6],
		   const struct pp_wire_hdr *h, const void *payload);

/*
 * Write only the headers of such a frame (PP_WIRE_MIN_FRAME bytes), for a
 * payload that travels separately (zero-copy transmit): the crc32c covers
 * h->payload_len bytes at payload, which must follow the headers on the wire
 * unchanged. With payload NULL the crc field is left zero (pp_wire_encode
 * fills it). Returns PP_WIRE_MIN_FRAME, -ENOSPC, -EINVAL on a bad type.
 */
int pp_wire_encode_hdr(uint8_t *frame, size_t cap, const uint8_t dst[6], const uint8_t src[6],
		       const struct pp_wire_hdr *h, const void *payload);

/*
 * Parse and validate a received frame. On success fills *h, points *payload
 * at the payload and returns 0. Otherwise returns -EPROTO and sets *why.
 */
int pp_wire_decode(const uint8_t *frame, size_t len, const struct pp_wire_check *chk,
		   struct pp_wire_hdr *h, const uint8_t **payload, enum pp_drop_reason *why);

/*
 * The headers alone (PP_WIRE_MIN_FRAME bytes) of a DATA frame whose payload
 * was already written where it belongs by the layer below, which checked the
 * crc32c of the whole frame: every rule of pp_wire_decode but the frame
 * length and the CRC (payload_len must be non-zero and within the MTU).
 * Errors: -EPROTO with *why set.
 */
int pp_wire_decode_placed(const uint8_t *frame, size_t len, const struct pp_wire_check *chk,
			  struct pp_wire_hdr *h, enum pp_drop_reason *why);

/*
 * Intranode frames (shared-memory rings between processes of one host) are
 * not the wire format: struct pp_wire_hdr in host order, then the payload,
 * no Ethernet header and no CRC (memory does not flip bits the way a link
 * does, and byte swapping and the CRC were a third of the cost of a small
 * message). Decoding applies every rule of pp_wire_decode but the CRC (the
 * MTU bounds the payload as if the header were the wire's).
 */
#define PP_WIRE_LOCAL_HDR sizeof(struct pp_wire_hdr)

/* Write such a frame: returns its length, -ENOSPC, -EINVAL on a bad type. */
int pp_wire_encode_local(uint8_t *frame, size_t cap, const struct pp_wire_hdr *h,
			 const void *payload);

/* Parse and validate one; as pp_wire_decode. */
int pp_wire_decode_local(const uint8_t *frame, size_t len, const struct pp_wire_check *chk,
			 struct pp_wire_hdr *h, const uint8_t **payload, enum pp_drop_reason *why);

/*
 * Lite records (docs/wire.md, "Lite records"; docs/protocol.md, rule 6): a
 * whole small message to a node-mate as one ring record, outside the
 * sequence, with only what its receiver uses. Host order. The ring names
 * the sender, and its segment binds the pair's incarnations (a ring is set
 * up once per process pair), so no record repeats them; nor its message
 * number, which is the one after the last message the receiver saw begin
 * (the sender sends a lite record only when that holds). The first byte
 * tells a lite record from a local-form frame, whose first byte is a wire
 * type. 12 bytes always; the ack and credit (8) only when the sender has
 * news for the peer, the immediate data (4) only when the message has it:
 * a 36-byte message (32 with data) and the ring's record header fit one
 * 64-byte cell.
 */
#define PP_WIRE_LITE	      0x0Fu /* first byte of a lite record: no wire type */
#define PP_WIRE_LITE_DATA     0x01u /* flags: 4 bytes of immediate data follow */
#define PP_WIRE_LITE_ACK      0x02u /* flags: ack, credit and ack_stream follow (8 bytes) */
#define PP_WIRE_LITE_HDR      12u   /* bytes every record has: kind, flags, len, tag */
#define PP_WIRE_LITE_ACK_LEN  8u    /* ... then ack, credit, ack_stream (flag ACK) */
#define PP_WIRE_LITE_DATA_LEN 4u    /* ... then data (flag DATA), then the message */
#define PP_WIRE_LITE_LINE                                                                          \
	48u /* a record's bytes in its first line: a ring's 64-byte                                \
	     * cell less its 16-byte record header (shm/ring.h) */

struct pp_wire_lite {
	/* In every record: kind, flags and len at 0, tag at 4. */
	uint8_t kind;	 /* PP_WIRE_LITE */
	uint8_t flags;	 /* PP_WIRE_LITE_DATA, PP_WIRE_LITE_ACK or 0 */
	uint16_t len;	 /* message bytes, all of them in the record */
	uint32_t msg_id; /* not in the record: the receiver's count (above) */
	uint64_t tag;	 /* message tag */
	/* Flag ACK (0 otherwise), laid out as in the record. */
	uint32_t ack;	     /* next seq expected on ack_stream */
	uint16_t credit;     /* pushed-buffer credit limit, 256-byte units */
	uint16_t ack_stream; /* stream the ack refers to */
	/* Flag DATA (0 otherwise). */
	uint32_t data; /* immediate data */
};

/* Bytes of a record's header with these flags (the message follows). */
static inline uint32_t pp_wire_lite_hdr_len(uint8_t flags)
{
	/* Without branches: ACK (2) adds 8 bytes, DATA (1) adds 4. */
	_Static_assert(PP_WIRE_LITE_ACK == 2 && PP_WIRE_LITE_ACK_LEN == 8 &&
			   PP_WIRE_LITE_DATA == 1 && PP_WIRE_LITE_DATA_LEN == 4,
		       "a flag's bit times 4 is its part's length");
	return PP_WIRE_LITE_HDR + 4u * (flags & (PP_WIRE_LITE_ACK | PP_WIRE_LITE_DATA));
}

/* Write a lite record of l->len payload bytes at rec (room for
 * pp_wire_lite_hdr_len(l->flags) + l->len). Returns the length. A record
 * with ack or data writes what lies past its first PP_WIRE_LITE_LINE bytes
 * first, then that line in one burst: a consumer that has caught up polls
 * it for the ring's mark, and each store to it the producer spreads out
 * can cost one more transfer of the line between the cores (Open MPI over
 * pp, whose messages all carry data, a window of 64 messages of 128 bytes:
 * 7.5 us against 9.7 with the message first, 11 with the parts first). One
 * without them copies the message whole and the 12 bytes after it: the
 * split copy cost native messages of 64 bytes 0.24 against 0.21 us one way. */
uint32_t pp_wire_encode_lite(uint8_t *rec, const struct pp_wire_lite *l, const void *payload);

/* Parse and validate one: its kind and flags (TYPE), its length against
 * the record's and one frame's payload at the MTU (LENGTH). 0, or -EPROTO
 * with *why set (*l then holds what was read, unchecked). */
int pp_wire_decode_lite(const uint8_t *rec, size_t len, const struct pp_wire_check *chk,
			struct pp_wire_lite *l, const uint8_t **payload, enum pp_drop_reason *why);

/*
 * The routing fields of a frame of our EtherType and version, at least
 * PP_WIRE_MIN_FRAME bytes long, without checking anything else: 0, or
 * -EPROTO when it is not such a frame.
 */
int pp_wire_peek(const uint8_t *frame, size_t len, struct pp_wire_peek *pk);

/* The type of a frame at least PP_WIRE_MIN_FRAME bytes long, unchecked. */
static inline uint8_t pp_wire_type_of(const uint8_t *frame)
{
	return frame[PP_ETH_HLEN + PP_WIRE_OFF_VER_TYPE] & 0x0f;
}

/* Name of a drop reason ("short", "crc", ...), "?" when out of range. */
const char *pp_wire_drop_name(enum pp_drop_reason r);

/* Name of a frame type, "?" when unknown. */
const char *pp_wire_type_name(uint8_t type);

#endif

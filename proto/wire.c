/* SPDX-License-Identifier: BSD-3-Clause */
/* Wire codec: byte order, CRC and the validation rules of wire.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "crc32c.h"
#include "pp_bytes.h"
#include "pp_copy.h"
#include "wire.h"

static int type_valid(uint8_t t)
{
	return t >= PP_WIRE_HELLO && t <= PP_WIRE_PING;
}

static int type_has_payload(uint8_t t)
{
	return t == PP_WIRE_PUSH || t == PP_WIRE_DATA || t == PP_WIRE_HELLO || t == PP_WIRE_BYE;
}

int pp_wire_encode(uint8_t *frame, size_t cap, const uint8_t dst[6], const uint8_t src[6],
		   const struct pp_wire_hdr *h, const void *payload)
{
	size_t total = PP_WIRE_MIN_FRAME + (size_t)h->payload_len;
	if (cap < total)
		return -ENOSPC;
	int rc = pp_wire_encode_hdr(frame, cap, dst, src, h, NULL);
	if (rc < 0)
		return rc;
	uint8_t *p = frame + PP_ETH_HLEN;
	if (h->payload_len)
		memcpy(p + PP_WIRE_HDR_LEN, payload, h->payload_len);
	pp_put_be32(p + PP_WIRE_OFF_CRC, pp_crc32c(0, p, PP_WIRE_HDR_LEN + (size_t)h->payload_len));
	return (int)total;
}

int pp_wire_encode_hdr(uint8_t *frame, size_t cap, const uint8_t dst[6], const uint8_t src[6],
		       const struct pp_wire_hdr *h, const void *payload)
{
	if (!type_valid(h->type))
		return -EINVAL;
	if (cap < PP_WIRE_MIN_FRAME)
		return -ENOSPC;
	pp_eth_set_dst(frame, dst);
	pp_eth_set_src(frame, src);
	pp_eth_set_type(frame, PP_ETH_TYPE_PP);
	uint8_t *p = frame + PP_ETH_HLEN;
	p[0] = (uint8_t)(PP_WIRE_VERSION << 4 | (h->type & 0x0f));
	p[1] = h->flags;
	pp_put_be16(p + PP_WIRE_OFF_PAYLOAD_LEN, h->payload_len);
	pp_put_be32(p + PP_WIRE_OFF_JOB, h->job);
	pp_put_be16(p + PP_WIRE_OFF_STREAM, h->stream);
	pp_put_be16(p + PP_WIRE_OFF_ACK_STREAM, h->ack_stream);
	pp_put_be32(p + PP_WIRE_OFF_SEQ, h->seq);
	pp_put_be32(p + PP_WIRE_OFF_ACK, h->ack);
	pp_put_be16(p + PP_WIRE_OFF_CREDIT, h->credit);
	pp_put_be16(p + PP_WIRE_OFF_XFLAGS, h->xflags);
	pp_put_be32(p + PP_WIRE_OFF_SRC_RANK, h->src_rank);
	pp_put_be32(p + PP_WIRE_OFF_DST_RANK, h->dst_rank);
	pp_put_be32(p + PP_WIRE_OFF_MSG_ID, h->msg_id);
	pp_put_be64(p + PP_WIRE_OFF_TAG, h->tag);
	pp_put_be64(p + PP_WIRE_OFF_MSG_LEN, h->msg_len);
	pp_put_be64(p + PP_WIRE_OFF_OFFSET, h->offset);
	pp_put_be32(p + PP_WIRE_OFF_SRC_INC, h->src_inc);
	pp_put_be32(p + PP_WIRE_OFF_DST_INC, h->dst_inc);
	pp_put_be32(p + PP_WIRE_OFF_DATA, h->data);
	pp_put_be32(p + PP_WIRE_OFF_CRC, 0);
	if (payload) {
		uint32_t crc = pp_crc32c(0, p, PP_WIRE_HDR_LEN);
		pp_put_be32(p + PP_WIRE_OFF_CRC, pp_crc32c(crc, payload, h->payload_len));
	}
	return PP_WIRE_MIN_FRAME;
}

/* The rules after length and CRC: job, ranks, ranges. PP_DROP_MAX when the
 * header passes. */
static enum pp_drop_reason check_fields(const struct pp_wire_hdr *x,
					const struct pp_wire_check *chk)
{
	if (x->job != chk->job)
		return PP_DROP_JOB;
	if (x->src_rank >= chk->nranks || x->src_rank == chk->rank ||
	    (x->dst_rank != chk->rank && !((x->type == PP_WIRE_HELLO || x->type == PP_WIRE_BYE) &&
					   x->dst_rank == PP_WIRE_RANK_ALL)))
		return PP_DROP_RANK;
	if (x->dst_inc != chk->inc && !(x->dst_inc == 0 && pp_wire_inc_any_ok(x->type)))
		return PP_DROP_STALE;
	if ((x->type == PP_WIRE_PUSH || x->type == PP_WIRE_DATA) &&
	    (x->offset > x->msg_len || x->msg_len - x->offset < x->payload_len ||
	     ((x->flags & PP_WIRE_F_FIRST) && x->offset != 0) ||
	     (x->type == PP_WIRE_DATA && (x->flags & PP_WIRE_F_FIRST))))
		return PP_DROP_RANGE;
	if (x->type == PP_WIRE_PULL && x->offset > x->msg_len)
		return PP_DROP_RANGE;
	return PP_DROP_MAX;
}

/* The header fields after the first word, from the wire, checked
 * (check_fields). */
static enum pp_drop_reason get_fields(const uint8_t *p, struct pp_wire_hdr *x,
				      const struct pp_wire_check *chk)
{
	x->job = pp_get_be32(p + PP_WIRE_OFF_JOB);
	x->stream = pp_get_be16(p + PP_WIRE_OFF_STREAM);
	x->ack_stream = pp_get_be16(p + PP_WIRE_OFF_ACK_STREAM);
	x->seq = pp_get_be32(p + PP_WIRE_OFF_SEQ);
	x->ack = pp_get_be32(p + PP_WIRE_OFF_ACK);
	x->credit = pp_get_be16(p + PP_WIRE_OFF_CREDIT);
	x->xflags = pp_get_be16(p + PP_WIRE_OFF_XFLAGS);
	x->src_rank = pp_get_be32(p + PP_WIRE_OFF_SRC_RANK);
	x->dst_rank = pp_get_be32(p + PP_WIRE_OFF_DST_RANK);
	x->msg_id = pp_get_be32(p + PP_WIRE_OFF_MSG_ID);
	x->tag = pp_get_be64(p + PP_WIRE_OFF_TAG);
	x->msg_len = pp_get_be64(p + PP_WIRE_OFF_MSG_LEN);
	x->offset = pp_get_be64(p + PP_WIRE_OFF_OFFSET);
	x->src_inc = pp_get_be32(p + PP_WIRE_OFF_SRC_INC);
	x->dst_inc = pp_get_be32(p + PP_WIRE_OFF_DST_INC);
	x->data = pp_get_be32(p + PP_WIRE_OFF_DATA);
	return check_fields(x, chk);
}

/* The first four bytes of a wire frame of our EtherType: version, a known
 * type, flags and payload length into x; PP_DROP_MAX when sound. */
static enum pp_drop_reason get_prefix(const uint8_t *frame, size_t len, struct pp_wire_hdr *x)
{
	if (len < PP_WIRE_MIN_FRAME || pp_eth_type(frame) != PP_ETH_TYPE_PP)
		return PP_DROP_SHORT;
	const uint8_t *p = frame + PP_ETH_HLEN;
	if (p[0] >> 4 != PP_WIRE_VERSION)
		return PP_DROP_VERSION;
	x->type = p[0] & 0x0f;
	if (!type_valid(x->type))
		return PP_DROP_TYPE;
	x->flags = p[1];
	x->payload_len = pp_get_be16(p + PP_WIRE_OFF_PAYLOAD_LEN);
	return PP_DROP_MAX;
}

/* What both decoders end with: r is the first check that failed so far
 * (PP_DROP_MAX: none), p the pp header of x; the fields' own checks, then
 * the header out or the reason. */
static int decoded(enum pp_drop_reason r, const uint8_t *p, struct pp_wire_hdr *x,
		   const struct pp_wire_check *chk, struct pp_wire_hdr *h, enum pp_drop_reason *why)
{
	if (r == PP_DROP_MAX)
		r = get_fields(p, x, chk);
	if (r != PP_DROP_MAX) {
		*why = r;
		return -EPROTO;
	}
	*h = *x;
	return 0;
}

int pp_wire_decode(const uint8_t *frame, size_t len, const struct pp_wire_check *chk,
		   struct pp_wire_hdr *h, const uint8_t **payload, enum pp_drop_reason *why)
{
	struct pp_wire_hdr x;
	enum pp_drop_reason r = get_prefix(frame, len, &x);
	const uint8_t *p = frame + PP_ETH_HLEN;
	if (r == PP_DROP_MAX &&
	    (len != PP_WIRE_MIN_FRAME + (size_t)x.payload_len || len - PP_ETH_HLEN > chk->mtu ||
	     (x.payload_len && !type_has_payload(x.type))))
		r = PP_DROP_LENGTH;
	if (r == PP_DROP_MAX) {
		/* CRC over the header with its crc field as zero, then the payload. */
		static const uint8_t zero4[4];
		uint32_t crc = pp_crc32c(0, p, PP_WIRE_OFF_CRC);
		crc = pp_crc32c(crc, zero4, 4);
		crc = pp_crc32c(crc, p + PP_WIRE_HDR_LEN, x.payload_len);
		if (crc != pp_get_be32(p + PP_WIRE_OFF_CRC))
			r = PP_DROP_CRC;
	}
	if (decoded(r, p, &x, chk, h, why))
		return -EPROTO;
	*payload = p + PP_WIRE_HDR_LEN;
	return 0;
}

int pp_wire_decode_placed(const uint8_t *frame, size_t len, const struct pp_wire_check *chk,
			  struct pp_wire_hdr *h, enum pp_drop_reason *why)
{
	struct pp_wire_hdr x;
	enum pp_drop_reason r =
	    len == PP_WIRE_MIN_FRAME ? get_prefix(frame, len, &x) : PP_DROP_SHORT;
	if (r == PP_DROP_MAX && x.type != PP_WIRE_DATA)
		r = PP_DROP_TYPE;
	if (r == PP_DROP_MAX &&
	    (!x.payload_len || PP_WIRE_HDR_LEN + (size_t)x.payload_len > chk->mtu))
		r = PP_DROP_LENGTH;
	return decoded(r, frame + PP_ETH_HLEN, &x, chk, h, why);
}

int pp_wire_encode_local(uint8_t *frame, size_t cap, const struct pp_wire_hdr *h,
			 const void *payload)
{
	if (!type_valid(h->type))
		return -EINVAL;
	size_t total = PP_WIRE_LOCAL_HDR + (size_t)h->payload_len;
	if (cap < total)
		return -ENOSPC;
	/* The payload first: a ring's consumer polls the line the header
	 * starts in (shm/ring.h), and writing it last takes that line from
	 * the consumer once rather than twice. */
	if (h->payload_len)
		memcpy(frame + PP_WIRE_LOCAL_HDR, payload, h->payload_len);
	memcpy(frame, h, PP_WIRE_LOCAL_HDR);
	return (int)total;
}

int pp_wire_decode_local(const uint8_t *frame, size_t len, const struct pp_wire_check *chk,
			 struct pp_wire_hdr *h, const uint8_t **payload, enum pp_drop_reason *why)
{
	enum pp_drop_reason r = PP_DROP_SHORT;
	struct pp_wire_hdr x;
	if (len < PP_WIRE_LOCAL_HDR)
		goto drop;
	memcpy(&x, frame, PP_WIRE_LOCAL_HDR);
	r = PP_DROP_TYPE;
	if (!type_valid(x.type))
		goto drop;
	r = PP_DROP_LENGTH;
	if (len != PP_WIRE_LOCAL_HDR + (size_t)x.payload_len ||
	    (size_t)x.payload_len + PP_WIRE_HDR_LEN > chk->mtu ||
	    (x.payload_len && !type_has_payload(x.type)))
		goto drop;
	r = check_fields(&x, chk);
	if (r != PP_DROP_MAX)
		goto drop;
	*h = x;
	*payload = frame + PP_WIRE_LOCAL_HDR;
	return 0;
drop:
	*why = r;
	return -EPROTO;
}

/* A record's fixed part: kind, flags and len as in the struct, then the tag. */
#define LITE_KFL 4u /* kind, flags, len */
_Static_assert(offsetof(struct pp_wire_lite, msg_id) == LITE_KFL, "lite kind, flags, len");
_Static_assert(LITE_KFL + sizeof(uint64_t) == PP_WIRE_LITE_HDR, "lite header size");
_Static_assert(offsetof(struct pp_wire_lite, data) - offsetof(struct pp_wire_lite, ack) ==
		   PP_WIRE_LITE_ACK_LEN,
	       "lite ack part size");

uint32_t pp_wire_encode_lite(uint8_t *rec, const struct pp_wire_lite *l, const void *payload)
{
	uint32_t off = pp_wire_lite_hdr_len(l->flags);
	uint32_t head = PP_WIRE_LITE_LINE - off; /* message bytes in the first line */
	const uint8_t *pl = payload;
	if (l->len > head && off > PP_WIRE_LITE_HDR) {
		memcpy(rec + PP_WIRE_LITE_LINE, pl + head, l->len - head);
		pp_copy_short(rec + off, pl, head); /* at most 32 bytes: inline */
	} else {
		pp_copy_short(rec + off, pl, l->len);
	}
	if (l->flags & PP_WIRE_LITE_DATA)
		memcpy(rec + off - PP_WIRE_LITE_DATA_LEN, &l->data, PP_WIRE_LITE_DATA_LEN);
	if (l->flags & PP_WIRE_LITE_ACK)
		memcpy(rec + PP_WIRE_LITE_HDR,
		       (const uint8_t *)l + offsetof(struct pp_wire_lite, ack),
		       PP_WIRE_LITE_ACK_LEN);
	memcpy(rec + LITE_KFL, &l->tag, sizeof(l->tag));
	memcpy(rec, l, LITE_KFL);
	return off + l->len;
}

int pp_wire_decode_lite(const uint8_t *rec, size_t len, const struct pp_wire_check *chk,
			struct pp_wire_lite *l, const uint8_t **payload, enum pp_drop_reason *why)
{
	enum pp_drop_reason r = PP_DROP_SHORT;
	if (len < PP_WIRE_LITE_HDR)
		goto drop;
	memcpy(l, rec, LITE_KFL); /* *l is the caller's: checked in place */
	r = PP_DROP_TYPE;
	if (l->kind != PP_WIRE_LITE || (l->flags & ~(PP_WIRE_LITE_DATA | PP_WIRE_LITE_ACK)))
		goto drop;
	/* len was read once into *l: the record's length is checked against it. */
	uint32_t off = pp_wire_lite_hdr_len(l->flags);
	r = PP_DROP_LENGTH;
	if (len != off + (size_t)l->len || (size_t)l->len + PP_WIRE_HDR_LEN > chk->mtu)
		goto drop;
	memcpy(&l->tag, rec + LITE_KFL, sizeof(l->tag));
	l->msg_id = 0;
	l->ack = 0;
	l->credit = l->ack_stream = 0;
	l->data = 0;
	if (l->flags & PP_WIRE_LITE_ACK)
		memcpy((uint8_t *)l + offsetof(struct pp_wire_lite, ack), rec + PP_WIRE_LITE_HDR,
		       PP_WIRE_LITE_ACK_LEN);
	if (l->flags & PP_WIRE_LITE_DATA)
		memcpy(&l->data, rec + off - PP_WIRE_LITE_DATA_LEN, PP_WIRE_LITE_DATA_LEN);
	*payload = rec + off;
	return 0;
drop:
	*why = r;
	return -EPROTO;
}

int pp_wire_peek(const uint8_t *frame, size_t len, struct pp_wire_peek *pk)
{
	if (len < PP_WIRE_MIN_FRAME || pp_eth_type(frame) != PP_ETH_TYPE_PP)
		return -EPROTO;
	const uint8_t *p = frame + PP_ETH_HLEN;
	if (p[0] >> 4 != PP_WIRE_VERSION)
		return -EPROTO;
	pk->type = p[0] & 0x0f;
	pk->flags = p[1];
	pk->stream = pp_get_be16(p + PP_WIRE_OFF_STREAM);
	pk->ack_stream = pp_get_be16(p + PP_WIRE_OFF_ACK_STREAM);
	pk->job = pp_get_be32(p + PP_WIRE_OFF_JOB);
	pk->src_rank = pp_get_be32(p + PP_WIRE_OFF_SRC_RANK);
	pk->dst_rank = pp_get_be32(p + PP_WIRE_OFF_DST_RANK);
	pk->msg_id = pp_get_be32(p + PP_WIRE_OFF_MSG_ID);
	pk->src_inc = pp_get_be32(p + PP_WIRE_OFF_SRC_INC);
	pk->dst_inc = pp_get_be32(p + PP_WIRE_OFF_DST_INC);
	return 0;
}

const char *pp_wire_drop_name(enum pp_drop_reason r)
{
	static const char *const names[PP_DROP_MAX] = {
	    [PP_DROP_SHORT] = "short",	 [PP_DROP_VERSION] = "version", [PP_DROP_TYPE] = "type",
	    [PP_DROP_LENGTH] = "length", [PP_DROP_CRC] = "crc",		[PP_DROP_JOB] = "job",
	    [PP_DROP_RANK] = "rank",	 [PP_DROP_RANGE] = "range",	[PP_DROP_DUP] = "dup",
	    [PP_DROP_STATE] = "state",	 [PP_DROP_NOBUF] = "nobuf",	[PP_DROP_STALE] = "stale",
	};
	return (unsigned)r < PP_DROP_MAX ? names[r] : "?";
}

const char *pp_wire_type_name(uint8_t type)
{
	static const char *const names[] = {"?",   "hello", "push", "pull", "data",
					    "ack", "nack",  "bye",  "ping"};
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

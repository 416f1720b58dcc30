-- SPDX-License-Identifier: BSD-3-Clause
--
-- Wireshark and tshark dissector for the librt-pp wire format (docs/wire.md):
-- Push-Pull Messaging frames, Ethernet II with EtherType 0x88B5; and the
-- same frames carried whole in UDP/IPv4 datagrams (udp: ports, packet: ports
-- with frame=udp; driver/udp/udp_frame.h), found by a heuristic on UDP,
-- under EtherType IPv4 or 0x88B6 (link=raw).
--
-- Load it for one run:
--   tshark -X lua_script:librt-pp.lua -r capture.pcap -Y 'pp.type == PULL'
-- or for good: copy it into the personal plugin folder
-- (~/.local/lib/wireshark/plugins/). A rank writes such a capture with
-- pcap_dump=FILE (every frame its port sends and receives).
--
-- Version 5 (current): a 76-byte header in network byte order, then
-- payload_len bytes of payload:
--   off len  field
--    0  1    version (high 4 bits) | type (low 4 bits)
--    1  1    flags: FIRST 0x01 LAST 0x02 RETX 0x04 PULL 0x08 DONE 0x10
--                   COPIED 0x20 AGAIN 0x40 WRITTEN 0x80
--    2  2    payload_len     4  4  job        8  2  stream    10  2  ack_stream
--   12  4    seq            16  4  ack       20  2  credit    22  2  xflags
--   24  4    src_rank       28  4  dst_rank  32  4  msg_id    36  8  tag
--   44  8    msg_len        52  8  offset    60  4  src_inc   64  4  dst_inc
--   68  4    data (immediate data, on a FIRST PUSH with xflags DATA 0x0001)
--   72  4    crc32c (CRC-32C over the header with this field as zero, then
--            the payload)
-- HELLO and BYE end their payload with a 16-byte keyed tag (pp.auth_tag,
-- BLAKE2b-128 with the job's key over the source MAC, the header with the
-- CRC as zero and the payload before it: proof of the job secret, all zero
-- from a job without one); a HELLO's offset is when its sender's
-- incarnation began (ms since the epoch).
-- Older releases, decoded as such (current ones drop them): version 4, a
-- 72-byte header with no data field (22 reserved, the CRC at 68); version
-- 3, as version 4 with no tag on HELLO and BYE; version 2, the
-- same with a 32-bit tag at 36 (msg_len 40, offset 48, src_inc 56, dst_inc
-- 60, crc 64: a 68-byte header); version 1, as version 2 up to offset, then
-- the CRC at 56 and a 60-byte header, no incarnations.
-- Types: HELLO 1, PUSH 2, PULL 3, DATA 4, ACK 5, NACK 6, BYE 7, PING 8.
--
-- Intranode frames travel in a local form (host byte order, no Ethernet
-- header, no CRC) through shared-memory rings: they never reach a port, so
-- no capture holds them and this dissector never sees them. Frames between
-- ranks of one node appear in a capture only when they go through the port
-- (shm=off).
--
-- Every header field is a filter: pp.version, pp.type (pp.type == 3 and
-- pp.type == PULL alike), pp.flags and one per bit (pp.flags.first, ...),
-- pp.payload_len, pp.job, pp.stream, pp.ack_stream, pp.seq, pp.ack,
-- pp.credit, pp.xflags (pp.xflags.data; pp.reserved before version 5),
-- pp.src_rank, pp.dst_rank, pp.msg_id, pp.tag, pp.msg_len, pp.offset,
-- pp.src_inc, pp.dst_inc, pp.data, pp.crc. The payload is
-- handed on as data.
--
-- The CRC-32C is computed (table-driven, below) and compared:
-- pp.crc.status (Good/Bad), pp.crc.calculated, and on a mismatch pp.crc.bad
-- and an expert error (pp.expert.bad_crc). Preference pp.check_crc turns it
-- off for large captures.
--
-- One message, followed: pp.msg = "S>R:ID" (sender rank, receiver rank, the
-- sender's msg_id) on its PUSH, DATA and PULL frames, and pp.acked = "S>R:ID"
-- on every frame whose cumulative ack covers one of that message's frames
-- (standalone ACKs and acks riding on other frames; found from the
-- sequence numbers seen on the acknowledged stream). pp.msg.first links to
-- the message's first frame in the capture, pp.msg.prev to its previous
-- one, pp.msg.index counts them. So -Y 'pp.msg == "0>1:5" || pp.acked ==
-- "0>1:5"' shows one message's whole life. (Wireshark 4.0's Lua cannot
-- make conversations of its own; these fields are the grouping.)

local pp = Proto("pp", "librt-pp Push-Pull Messaging")

local ETHERTYPE = 0x88B5
-- Where the fields after msg_id lie, by version.
local layout = {
	[1] = { hdr = 60, tag_len = 4, msg_len = 40, offset = 48, crc = 56 },
	[2] = { hdr = 68, tag_len = 4, msg_len = 40, offset = 48, src_inc = 56, dst_inc = 60, crc = 64 },
	[3] = { hdr = 72, tag_len = 8, msg_len = 44, offset = 52, src_inc = 60, dst_inc = 64, crc = 68 },
	[4] = { hdr = 72, tag_len = 8, msg_len = 44, offset = 52, src_inc = 60, dst_inc = 64, crc = 68,
		auth = 16 },
	[5] = { hdr = 76, tag_len = 8, msg_len = 44, offset = 52, src_inc = 60, dst_inc = 64, data = 68,
		crc = 72, auth = 16 },
}
local CURRENT = 5

local bit = bit32 or bit -- Lua 5.2's library, else LuaBitOp

local type_names = {
	[1] = "HELLO", [2] = "PUSH", [3] = "PULL", [4] = "DATA",
	[5] = "ACK", [6] = "NACK", [7] = "BYE", [8] = "PING",
}
local flag_bits = {
	{ "first", "FIRST", 0x01, "first frame of a message (offset 0): the one matched" },
	{ "last", "LAST", 0x02, "last frame of a message" },
	{ "retx", "RETX", 0x04, "sent again by go-back-N" },
	{ "pull", "PULL", 0x08, "on FIRST: the rest waits for a PULL" },
	{ "done", "DONE", 0x10, "on PULL (intranode): the receiver copied it all" },
	{ "copied", "COPIED", 0x20, "the sender holds a copy: its send is done" },
	{ "again", "AGAIN", 0x40, "on PULL: pushed bytes were dropped, send from offset" },
	{ "written", "WRITTEN", 0x80, "on FIRST (intranode): the sender wrote it all; on PULL (intranode): HELP, write a part" },
}
local crc_status_names = { [0] = "Good", [1] = "Bad", [2] = "Unverified" }

local f = pp.fields
f.version = ProtoField.uint8("pp.version", "Version", base.DEC, nil, 0xF0)
f.type = ProtoField.uint8("pp.type", "Type", base.DEC, type_names, 0x0F)
f.flags = ProtoField.uint8("pp.flags", "Flags", base.HEX)
for _, b in ipairs(flag_bits) do
	f["flag_" .. b[1]] = ProtoField.bool("pp.flags." .. b[1], b[2], 8, nil, b[3], b[4])
end
f.payload_len = ProtoField.uint16("pp.payload_len", "Payload length", base.DEC)
f.job = ProtoField.uint32("pp.job", "Job key", base.HEX_DEC)
f.stream = ProtoField.uint16("pp.stream", "Stream", base.DEC)
f.ack_stream = ProtoField.uint16("pp.ack_stream", "Ack stream", base.DEC)
f.seq = ProtoField.uint32("pp.seq", "Sequence number", base.DEC)
f.ack = ProtoField.uint32("pp.ack", "Ack (next expected)", base.DEC)
f.credit = ProtoField.uint16("pp.credit", "Credit (256-byte cells, cumulative)", base.DEC)
f.reserved = ProtoField.uint16("pp.reserved", "Reserved", base.HEX)
f.xflags = ProtoField.uint16("pp.xflags", "Extra flags", base.HEX)
f.xflag_data = ProtoField.bool("pp.xflags.data", "DATA", 16, nil, 0x0001,
	"on FIRST PUSH: the data field is the message's immediate data")
f.data = ProtoField.uint32("pp.data", "Immediate data (remote CQ data)", base.HEX_DEC)
f.src_rank = ProtoField.uint32("pp.src_rank", "Source rank", base.DEC)
f.dst_rank = ProtoField.uint32("pp.dst_rank", "Destination rank", base.DEC)
f.msg_id = ProtoField.uint32("pp.msg_id", "Message id", base.DEC)
f.tag = ProtoField.uint64("pp.tag", "Tag", base.DEC)
f.msg_len = ProtoField.uint64("pp.msg_len", "Message length", base.DEC)
f.offset = ProtoField.uint64("pp.offset", "Offset", base.DEC)
f.src_inc = ProtoField.uint32("pp.src_inc", "Source incarnation", base.DEC)
f.dst_inc = ProtoField.uint32("pp.dst_inc", "Destination incarnation", base.DEC)
f.crc = ProtoField.uint32("pp.crc", "CRC-32C", base.HEX)
f.auth_tag = ProtoField.bytes("pp.auth_tag", "Job-secret tag (HELLO, BYE)")
f.crc_calc = ProtoField.uint32("pp.crc.calculated", "Calculated CRC-32C", base.HEX)
f.crc_status = ProtoField.uint8("pp.crc.status", "CRC-32C status", base.DEC, crc_status_names)
f.crc_bad = ProtoField.bool("pp.crc.bad", "Bad CRC-32C")
f.msg = ProtoField.string("pp.msg", "Message (sender>receiver:msg_id)")
f.acked = ProtoField.string("pp.acked", "Acknowledges frames of message")
f.msg_first = ProtoField.framenum("pp.msg.first", "First frame of this message", base.NONE)
f.msg_prev = ProtoField.framenum("pp.msg.prev", "Previous frame of this message", base.NONE)
f.msg_index = ProtoField.uint32("pp.msg.index", "Frame of this message, in order seen", base.DEC)

local e = pp.experts
e.bad_crc = ProtoExpert.new("pp.expert.bad_crc", "Bad CRC-32C: the receiver drops this frame (crc)",
	expert.group.CHECKSUM, expert.severity.ERROR)
e.version1 = ProtoExpert.new("pp.expert.version1",
	"Wire format version 1 (60-byte header, no incarnations): current releases drop it",
	expert.group.PROTOCOL, expert.severity.NOTE)
e.version2 = ProtoExpert.new("pp.expert.version2",
	"Wire format version 2 (68-byte header, 32-bit tags): current releases drop it",
	expert.group.PROTOCOL, expert.severity.NOTE)
e.version3 = ProtoExpert.new("pp.expert.version3",
	"Wire format version 3 (HELLO and BYE without a job-secret tag): current releases drop it",
	expert.group.PROTOCOL, expert.severity.NOTE)
e.version4 = ProtoExpert.new("pp.expert.version4",
	"Wire format version 4 (72-byte header, no immediate data): current releases drop it",
	expert.group.PROTOCOL, expert.severity.NOTE)
e.bad_version = ProtoExpert.new("pp.expert.bad_version", "Unknown wire format version",
	expert.group.MALFORMED, expert.severity.ERROR)
e.bad_type = ProtoExpert.new("pp.expert.bad_type", "Unknown frame type",
	expert.group.MALFORMED, expert.severity.ERROR)
e.bad_length = ProtoExpert.new("pp.expert.bad_length",
	"payload_len disagrees with the frame, or a type that carries none has a payload",
	expert.group.MALFORMED, expert.severity.ERROR)
e.short = ProtoExpert.new("pp.expert.short", "Frame shorter than the protocol header",
	expert.group.MALFORMED, expert.severity.ERROR)
e.retx = ProtoExpert.new("pp.expert.retx", "Retransmission (go-back-N)",
	expert.group.SEQUENCE, expert.severity.NOTE)
e.nack = ProtoExpert.new("pp.expert.nack", "NACK: the receiver saw a gap, go back to seq",
	expert.group.SEQUENCE, expert.severity.WARN)

pp.prefs.check_crc = Pref.bool("Verify CRC-32C", true,
	"Compute every frame's CRC-32C and flag a mismatch (slow on large captures)")

local data_dissector = Dissector.get("data")

-- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, one table lookup
-- per byte.
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if bit.band(c, 1) ~= 0 then
			c = bit.bxor(bit.rshift(c, 1), 0x82F63B78)
		else
			c = bit.rshift(c, 1)
		end
	end
	crc_table[i] = c
end

-- Continue crc (the register, not yet inverted) over the bytes of s.
local function crc_update(crc, s)
	local band, bxor, rshift, byte = bit.band, bit.bxor, bit.rshift, string.byte
	for i = 1, #s do
		crc = bxor(crc_table[band(bxor(crc, byte(s, i)), 0xFF)], rshift(crc, 8))
	end
	return crc
end

-- The CRC-32C of a frame: header bytes before the CRC field, four zero
-- bytes in its place, the rest of the header, then the payload.
local function frame_crc(tvb, off, hdr, crc_off, plen)
	local c = 0xFFFFFFFF
	c = crc_update(c, tvb:raw(off, crc_off))
	c = crc_update(c, "\0\0\0\0")
	if hdr > crc_off + 4 then
		c = crc_update(c, tvb:raw(off + crc_off + 4, hdr - crc_off - 4))
	end
	if plen > 0 then
		c = crc_update(c, tvb:raw(off + hdr, plen))
	end
	return bit.bnot(c) % 4294967296
end

-- --- per-message grouping --------------------------------------------------
-- Filled on the first pass over the frames in order (pinfo.visited false),
-- kept per frame number for later passes.
local state

local function reset()
	state = {
		dirs = {}, -- "job/S.Sinc>R.Rinc/stream" -> { map = {seq -> msg key or false}, una }
		msgs = {}, -- msg key -> { first = frame, last = frame, n = count }
		frames = {}, -- frame number -> { first, prev, index, acked = {display names} }
	}
end
reset()
pp.init = reset -- every new capture file starts afresh

local TWO32 = 4294967296

local function dir_key(job, s, sinc, r, rinc, stream)
	return string.format("%u/%u.%u>%u.%u/%u", job, s, sinc, r, rinc, stream)
end

-- What frame n learns: its place in its message, the messages its ack covers.
local function track(n, h)
	local info = { acked = {} }
	local sequenced = h.type == 2 or h.type == 3 or h.type == 4 or h.type == 8
	-- The message this frame belongs to: PUSH and DATA go sender -> receiver,
	-- a PULL receiver -> sender.
	local mkey, mname
	if h.type == 2 or h.type == 4 then
		mkey = string.format("%u/%u.%u>%u.%u:%u", h.job, h.src, h.src_inc, h.dst, h.dst_inc, h.msg_id)
		mname = string.format("%u>%u:%u", h.src, h.dst, h.msg_id)
	elseif h.type == 3 then
		mkey = string.format("%u/%u.%u>%u.%u:%u", h.job, h.dst, h.dst_inc, h.src, h.src_inc, h.msg_id)
		mname = string.format("%u>%u:%u", h.dst, h.src, h.msg_id)
	end
	if mkey then
		local m = state.msgs[mkey]
		if not m then
			m = { first = n, last = nil, n = 0, name = mname }
			state.msgs[mkey] = m
		end
		m.n = m.n + 1
		info.msg, info.first, info.prev, info.index = mname, m.first, m.last, m.n
		m.last = n
	end
	-- Remember which message each sequence number of this direction carries.
	if sequenced and h.has_inc then
		local k = dir_key(h.job, h.src, h.src_inc, h.dst, h.dst_inc, h.stream)
		local d = state.dirs[k]
		if not d then
			d = { map = {}, una = h.seq }
			state.dirs[k] = d
		end
		d.map[h.seq] = mname or false
	end
	-- Its ack covers sequence numbers [una, ack) the peer sent us on
	-- ack_stream: those frames' messages are acknowledged by this frame.
	if h.ack_stream ~= 0xFFFF and h.has_inc and h.type ~= 1 and h.type ~= 7 then
		local d = state.dirs[dir_key(h.job, h.dst, h.dst_inc, h.src, h.src_inc, h.ack_stream)]
		if d then
			local span = (h.ack - d.una) % TWO32
			if span > 0 and span < 65536 then
				local seen = {}
				for i = 0, span - 1 do
					local s = (d.una + i) % TWO32
					local name = d.map[s]
					if name and not seen[name] then
						seen[name] = true
						info.acked[#info.acked + 1] = name
					end
					d.map[s] = nil
				end
				d.una = h.ack
			elseif span >= 65536 and span < 2147483648 then
				d.una = h.ack -- a jump: frames not in the capture
			end
		end
	end
	state.frames[n] = info
	return info
end

-- --- the dissector -----------------------------------------------------------

local function type_name(t)
	return type_names[t] or string.format("type %u", t)
end

function pp.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	if len < 1 then
		return 0
	end
	pinfo.cols.protocol = "PP"
	local ver = bit.rshift(tvb(0, 1):uint(), 4)
	local t = bit.band(tvb(0, 1):uint(), 0x0F)
	local L = layout[ver] or layout[CURRENT]
	local hdr, crc_off = L.hdr, L.crc
	local root = tree:add(pp, tvb(0, math.min(len, hdr)),
		string.format("librt-pp Push-Pull Messaging, version %u, %s", ver, type_name(t)))
	root:add(f.version, tvb(0, 1))
	local ti = root:add(f.type, tvb(0, 1))
	if not layout[ver] then
		root:add_proto_expert_info(e.bad_version)
		pinfo.cols.info = string.format("unknown version %u", ver)
		data_dissector:call(tvb(1):tvb(), pinfo, tree)
		return len
	end
	if ver < CURRENT then
		root:add_proto_expert_info(ver == 1 and e.version1 or ver == 2 and e.version2 or
			ver == 3 and e.version3 or e.version4)
	end
	if not type_names[t] then
		ti:add_proto_expert_info(e.bad_type)
	end
	if len < hdr then
		root:add_proto_expert_info(e.short)
		pinfo.cols.info = string.format("%s (short: %u of %u header bytes)", type_name(t), len, hdr)
		return len
	end

	local flags = tvb(1, 1):uint()
	local fi = root:add(f.flags, tvb(1, 1))
	local fnames = {}
	for _, b in ipairs(flag_bits) do
		fi:add(f["flag_" .. b[1]], tvb(1, 1))
		if bit.band(flags, b[3]) ~= 0 then
			fnames[#fnames + 1] = b[2]
		end
	end
	if #fnames > 0 then
		fi:append_text(" (" .. table.concat(fnames, ", ") .. ")")
	end

	local h = {
		type = t,
		plen = tvb(2, 2):uint(),
		job = tvb(4, 4):uint(),
		stream = tvb(8, 2):uint(),
		ack_stream = tvb(10, 2):uint(),
		seq = tvb(12, 4):uint(),
		ack = tvb(16, 4):uint(),
		src = tvb(24, 4):uint(),
		dst = tvb(28, 4):uint(),
		msg_id = tvb(32, 4):uint(),
		tag = L.tag_len == 8 and tvb(36, 8):uint64() or tvb(36, 4):int(),
		has_inc = L.src_inc ~= nil,
		src_inc = 0,
		dst_inc = 0,
	}
	local pli = root:add(f.payload_len, tvb(2, 2))
	root:add(f.job, tvb(4, 4))
	local si = root:add(f.stream, tvb(8, 2))
	if h.stream ~= 0 then
		si:append_text(string.format(" (pull handler %u of a node daemon)", h.stream - 1))
	end
	local ai = root:add(f.ack_stream, tvb(10, 2))
	if h.ack_stream == 0xFFFF then
		ai:append_text(" (none: the ack field means nothing)")
	end
	root:add(f.seq, tvb(12, 4))
	root:add(f.ack, tvb(16, 4))
	root:add(f.credit, tvb(20, 2))
	if L.data then
		local xi = root:add(f.xflags, tvb(22, 2))
		xi:add(f.xflag_data, tvb(22, 2))
	else
		root:add(f.reserved, tvb(22, 2))
	end
	root:add(f.src_rank, tvb(24, 4))
	local di = root:add(f.dst_rank, tvb(28, 4))
	if h.dst == 0xFFFFFFFF then
		di:append_text(" (every rank)")
	end
	root:add(f.msg_id, tvb(32, 4))
	local tgi = root:add(f.tag, tvb(36, L.tag_len))
	if L.tag_len == 8 and tvb(36, 4):uint() == 0xFFFFFFFF and tvb(40, 4):int() < 0 then
		-- pp.h's int tags travel sign-extended: below zero, the runtime's own
		tgi:append_text(string.format(" (%d: the runtime's own, as the barrier's)", tvb(40, 4):int()))
	end
	root:add(f.msg_len, tvb(L.msg_len, 8))
	root:add(f.offset, tvb(L.offset, 8))
	if h.has_inc then
		h.src_inc = tvb(L.src_inc, 4):uint()
		h.dst_inc = tvb(L.dst_inc, 4):uint()
		root:add(f.src_inc, tvb(L.src_inc, 4))
		root:add(f.dst_inc, tvb(L.dst_inc, 4))
	end
	if L.data then
		root:add(f.data, tvb(L.data, 4))
	end
	local crc = tvb(crc_off, 4):uint()
	local ci = root:add(f.crc, tvb(crc_off, 4))

	-- Length: payload_len bytes follow the header; only PUSH, DATA, HELLO
	-- and (version 4) BYE carry any. Bytes past them are the link's padding
	-- or trailer.
	local rest = tvb:reported_length_remaining(hdr)
	local plen = h.plen
	local bye_ok = L.auth and t == 7
	if plen > rest or (plen > 0 and t ~= 2 and t ~= 4 and t ~= 1 and not bye_ok) then
		pli:add_proto_expert_info(e.bad_length)
	end
	local have = math.min(plen, tvb:len() - hdr)
	if L.auth and (t == 1 or t == 7) and have == plen and plen >= L.auth then
		root:add(f.auth_tag, tvb(hdr + plen - L.auth, L.auth))
	end

	-- The CRC, when the whole frame was captured.
	if pp.prefs.check_crc and have == plen then
		local calc = frame_crc(tvb, 0, hdr, crc_off, plen)
		root:add(f.crc_calc, calc):set_generated()
		if calc == crc then
			root:add(f.crc_status, 0):set_generated()
			ci:append_text(" [correct]")
		else
			root:add(f.crc_status, 1):set_generated()
			root:add(f.crc_bad, true):set_generated()
			ci:append_text(string.format(" [incorrect, should be 0x%08x]", calc))
			ci:add_proto_expert_info(e.bad_crc)
		end
	else
		root:add(f.crc_status, 2):set_generated()
	end
	if bit.band(flags, 0x04) ~= 0 then
		fi:add_proto_expert_info(e.retx)
	end
	if t == 6 then
		ti:add_proto_expert_info(e.nack)
	end

	-- The message this frame belongs to, and those its ack covers.
	local info = state.frames[pinfo.number]
	if not info then
		if pinfo.visited then
			info = { acked = {} } -- not seen in order (a lone re-dissection)
		else
			info = track(pinfo.number, h)
		end
	end
	if info.msg then
		root:add(f.msg, info.msg):set_generated()
		root:add(f.msg_index, info.index):set_generated()
		if info.first ~= pinfo.number then
			root:add(f.msg_first, info.first):set_generated()
		end
		if info.prev then
			root:add(f.msg_prev, info.prev):set_generated()
		end
	end
	for _, name in ipairs(info.acked) do
		root:add(f.acked, name):set_generated()
	end

	-- The Info column: what a reader of the protocol wants first.
	local text = type_name(t)
	if #fnames > 0 then
		text = text .. " [" .. table.concat(fnames, ",") .. "]"
	end
	text = text .. string.format(" %u>%s", h.src, h.dst == 0xFFFFFFFF and "all" or tostring(h.dst))
	if t == 2 or t == 3 or t == 4 then
		text = text .. string.format(" msg %u tag %s len %s off %s", h.msg_id, tostring(h.tag),
			tostring(tvb(L.msg_len, 8):uint64()), tostring(tvb(L.offset, 8):uint64()))
	end
	if plen > 0 then
		text = text .. string.format(" [%u B]", plen)
	end
	if t == 2 or t == 3 or t == 4 or t == 6 or t == 8 then
		text = text .. string.format(" seq %u", h.seq)
	end
	if h.ack_stream ~= 0xFFFF and t ~= 1 and t ~= 7 then
		text = text .. string.format(" ack %u", h.ack)
	end
	if h.stream ~= 0 then
		text = text .. string.format(" stream %u", h.stream)
	end
	pinfo.cols.info = text

	if have > 0 then
		data_dissector:call(tvb(hdr, have):tvb(), pinfo, tree)
	end
	return len
end

DissectorTable.get("ethertype"):add(ETHERTYPE, pp)

-- Frames in UDP/IPv4: a datagram whose payload is an Ethernet header of
-- EtherType 0x88B5 and at least a version byte after it is handed to the
-- Ethernet dissector, which hands the frame to pp as on a raw port.
local eth_dissector = Dissector.get("eth_withoutfcs")
local function pp_in_udp(tvb, pinfo, tree)
	if tvb:len() < 15 or tvb(12, 2):uint() ~= ETHERTYPE then
		return false
	end
	eth_dissector:call(tvb, pinfo, tree)
	return true
end
pp:register_heuristic("udp", pp_in_udp)
-- The same IPv4 and UDP headers under EtherType 0x88B6, as packet: ports
-- with frame=udp,link=raw send single frames on one L2 segment.
DissectorTable.get("ethertype"):add(0x88B6, Dissector.get("ip"))

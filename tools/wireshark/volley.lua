-- Wireshark dissectors for Volley's protocols (docs/PROTOCOL.md, docs/WIRESHARK.md):
--   volley_gnb      the gNB message protocol over TCP (port 32101)
--   volley_checked  the checked frame over TCP (port 7777)
--   volley_rpc      the RPC frame over TCP (port 32102), requests matched to replies
--   volley_arq      the ARQ packet over UDP (recognised by its CRC-32C on any port)
-- Other TCP ports: Analyze > Decode As. Frames split across TCP segments and
-- several frames in one segment are both reassembled. Malformed input is
-- marked with expert info and never raises a Lua error.
-- Use: tshark -X lua_script:volley.lua ..., or copy into ~/.local/lib/wireshark/plugins/.

local band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift

-- CRC-32C (Castagnoli, reflected 0x82F63B78), as the gNB ack-with-checksum and the ARQ packet use.
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if band(c, 1) == 1 then c = bxor(rshift(c, 1), 0x82F63B78) else c = rshift(c, 1) end
  end
  crc_table[i] = c
end

-- CRC-32C of a ByteArray, with the 4 bytes at `zero_at` (if given) taken as zeros.
local function crc32c(bytes, zero_at)
  local crc = 0xFFFFFFFF
  for i = 0, bytes:len() - 1 do
    local b = bytes:get_index(i)
    if zero_at and i >= zero_at and i < zero_at + 4 then b = 0 end
    crc = bxor(rshift(crc, 8), crc_table[band(bxor(crc, b), 0xFF)])
  end
  return bxor(crc, 0xFFFFFFFF)
end

-- One key per TCP/UDP conversation, the same in both directions.
local function conversation_key(pinfo)
  local a = tostring(pinfo.src) .. ":" .. pinfo.src_port
  local b = tostring(pinfo.dst) .. ":" .. pinfo.dst_port
  if a < b then return a .. "|" .. b end
  return b .. "|" .. a
end

local function register_tcp(proto, port)
  local tcp = DissectorTable.get("tcp.port")
  tcp:add(port, proto)
  tcp:add_for_decode_as(proto)
end

-- One key per direction of a TCP/UDP conversation.
local function direction_key(pinfo)
  return tostring(pinfo.src) .. ":" .. pinfo.src_port .. ">" .. tostring(pinfo.dst) .. ":" .. pinfo.dst_port
end

-- The summaries written to the Info column, and in which frame. A PDU that
-- completes in a segment after others began is dissected in a call of its own
-- behind a column fence, so a later call of the same frame appends to what an
-- earlier one wrote, after a separator, instead of gluing the two together.
local info_written = { frame = nil, text = "" }
local function show_info(pinfo, text)
  local current = tostring(pinfo.cols.info)
  local mine = info_written.text
  if info_written.frame == pinfo.number and mine ~= "" and current:sub(-#mine) == mine then
    pinfo.cols.info:append(", " .. text)
    info_written.text = mine .. ", " .. text
  else
    pinfo.cols.info = text
    info_written.text = text
  end
  info_written.frame = pinfo.number
end

-- Per direction of a TCP stream, the first frame with a fatal PDU (after which
-- Volley closes the connection): what follows in that direction is not
-- messages, and is shown as data after the fatal error, not parsed as more.
local fatal_at = {}

-- A TCP dissector that reassembles PDUs (`get_length` says how long the one at
-- an offset is) and lists every PDU's summary in the Info column.
-- `dissect_pdu` returns the PDU's summary, and true when the PDU is fatal.
local function tcp_pdu_dissector(proto, name, min_header, get_length, dissect_pdu)
  return function(tvb, pinfo, tree)
    local direction = direction_key(pinfo)
    local fatal = fatal_at[direction]
    if fatal ~= nil and pinfo.number > fatal then
      pinfo.cols.protocol = name
      tree:add(proto, tvb(), string.format("%s, data after the fatal error in frame %d (the connection closes)", name, fatal))
      show_info(pinfo, string.format("data after a fatal error (%d bytes)", tvb:len()))
      return tvb:len()
    end
    local infos = {}
    local consumed = dissect_tcp_pdus(tvb, tree, min_header, get_length, function(t, p, tr)
      local info, is_fatal = dissect_pdu(t, p, tr)
      table.insert(infos, info)
      if is_fatal and (fatal_at[direction] == nil or p.number < fatal_at[direction]) then
        fatal_at[direction] = p.number
      end
      return t:len()
    end, true)
    if #infos > 0 then show_info(pinfo, table.concat(infos, ", ")) end
    return consumed
  end
end

---------------------------------------------------------------------------
-- gNB: [type u16][body length u32][body]
---------------------------------------------------------------------------
local gnb = Proto("volley_gnb", "Volley gNB message protocol")
local GNB_MAX_BODY = 65536
local gnb_types = {
  [0x0000] = "keepalive", [0x1001] = "control", [0x1002] = "ack", [0x1003] = "nack",
  [0x1004] = "ack-with-checksum", [0x8001] = "data",
}
local gnb_limits = { -- type = {minimum, limit}
  [0x1001] = {4, 64}, [0x1002] = {4, 16}, [0x1003] = {6, 12}, [0x1004] = {8, 16}, [0x8001] = {0, GNB_MAX_BODY},
}
local nack_causes = { [1] = "body shorter than 4 bytes", [2] = "body longer than 64 bytes" }

local gf = {
  type = ProtoField.uint16("volley_gnb.type", "Type", base.HEX, gnb_types),
  length = ProtoField.uint32("volley_gnb.length", "Body length", base.DEC),
  body = ProtoField.bytes("volley_gnb.body", "Body"),
  transaction = ProtoField.uint32("volley_gnb.transaction_id", "Transaction id", base.DEC_HEX),
  payload = ProtoField.bytes("volley_gnb.payload", "Payload"),
  cause = ProtoField.uint16("volley_gnb.nack_cause", "Nack cause", base.DEC, nack_causes),
  crc = ProtoField.uint32("volley_gnb.crc32c", "CRC-32C of the control body", base.HEX),
  crc_status = ProtoField.string("volley_gnb.crc32c.status", "CRC-32C status"),
  reserved = ProtoField.bytes("volley_gnb.reserved", "Reserved"),
}
gnb.fields = gf
local ge = {
  unknown_type = ProtoExpert.new("volley_gnb.unknown_type", "Unknown message type: the connection is closed",
                                 expert.group.MALFORMED, expert.severity.ERROR),
  oversize = ProtoExpert.new("volley_gnb.length_over_maximum", "Body length over 65536: the connection is closed",
                             expert.group.MALFORMED, expert.severity.ERROR),
  too_long = ProtoExpert.new("volley_gnb.too_long", "Body over its type's limit: frame skipped",
                             expert.group.MALFORMED, expert.severity.ERROR),
  too_short = ProtoExpert.new("volley_gnb.too_short", "Body under its type's minimum: frame skipped",
                              expert.group.MALFORMED, expert.severity.ERROR),
  bad_crc = ProtoExpert.new("volley_gnb.crc32c.bad", "CRC-32C does not match the control message",
                            expert.group.CHECKSUM, expert.severity.ERROR),
  bad_keepalive = ProtoExpert.new("volley_gnb.bad_keepalive", "Type 0 with a body other than the goodbye's: unknown type",
                                  expert.group.MALFORMED, expert.severity.ERROR),
}
gnb.experts = { ge.unknown_type, ge.oversize, ge.too_long, ge.too_short, ge.bad_crc, ge.bad_keepalive }

-- Control bodies' CRC-32C by conversation and transaction id, to verify ack-with-checksum replies.
local gnb_control_crc = {}

local function gnb_pdu_length(tvb, pinfo, offset)
  local type = tvb(offset, 2):uint()
  local length = tvb(offset + 2, 4):uint()
  if gnb_limits[type] == nil and not (type == 0 and length <= 1) or length > GNB_MAX_BODY then
    return tvb:len() - offset -- an untrusted header: the rest of the segment, as Volley closes the stream
  end
  return 6 + length
end

local function gnb_dissect_pdu(tvb, pinfo, tree)
  local type = tvb(0, 2):uint()
  local length = tvb(2, 4):uint()
  local name = gnb_types[type] or string.format("unknown 0x%04x", type)
  local item = tree:add(gnb, tvb(), "Volley gNB, " .. name)
  item:add(gf.type, tvb(0, 2))
  local length_item = item:add(gf.length, tvb(2, 4))
  local info = name
  local fatal = false  -- Volley closes the connection at this frame
  local limits = gnb_limits[type]
  if type == 0 then
    -- The session's keepalive (no body) and goodbye (body 01); any other body is fatal.
    if length == 1 and tvb:len() >= 7 and tvb(6, 1):uint() == 1 then
      item:add(gf.body, tvb(6, 1))
      item:set_text("Volley gNB, goodbye")
      info = "goodbye (the server is draining: go elsewhere)"
    elseif length ~= 0 then
      item:add_proto_expert_info(ge.bad_keepalive)
      info = "type 0 with a body (connection closes)"
      fatal = true
    end
  elseif limits == nil then
    item:add_proto_expert_info(ge.unknown_type)
    info = info .. " (connection closes)"
    fatal = true
  elseif length > GNB_MAX_BODY then
    length_item:add_proto_expert_info(ge.oversize)
    info = info .. " (length over 65536, connection closes)"
    fatal = true
  elseif tvb:len() >= 6 + length then
    local body = tvb(6, length)
    if length < limits[1] then
      length_item:add_proto_expert_info(ge.too_short)
      info = info .. " (body under its minimum, skipped)"
    elseif length > limits[2] then
      length_item:add_proto_expert_info(ge.too_long)
      info = info .. " (body over its limit, skipped)"
    elseif type == 0x1001 then
      local id = body(0, 4):uint()
      item:add(gf.transaction, body(0, 4))
      if length > 4 then item:add(gf.payload, body(4)) end
      local conv = conversation_key(pinfo)
      gnb_control_crc[conv] = gnb_control_crc[conv] or {}
      gnb_control_crc[conv][id] = crc32c(body:bytes())
      info = string.format("control id %d", id)
    elseif type == 0x1002 then
      item:add(gf.transaction, body(0, 4))
      if length > 4 then item:add(gf.reserved, body(4)) end
      info = string.format("ack id %d", body(0, 4):uint())
    elseif type == 0x1003 then
      item:add(gf.transaction, body(0, 4))
      item:add(gf.cause, body(4, 2))
      if length > 6 then item:add(gf.reserved, body(6)) end
      info = string.format("nack id %d cause %d", body(0, 4):uint(), body(4, 2):uint())
    elseif type == 0x1004 then
      local id = body(0, 4):uint()
      item:add(gf.transaction, body(0, 4))
      local crc_item = item:add(gf.crc, body(4, 4))
      if length > 8 then item:add(gf.reserved, body(8)) end
      local known = gnb_control_crc[conversation_key(pinfo)]
      local expected = known and known[id]
      if expected == nil then
        item:add(gf.crc_status, "unverified (control message not in the capture)")
      elseif expected == body(4, 4):uint() then
        item:add(gf.crc_status, "good")
      else
        item:add(gf.crc_status, "bad")
        crc_item:add_proto_expert_info(ge.bad_crc, string.format("CRC-32C 0x%08x, the control body's is 0x%08x",
                                                                  body(4, 4):uint(), expected))
      end
      info = string.format("ack-with-checksum id %d", id)
    elseif type == 0x8001 then
      if length > 0 then item:add(gf.body, body) end
      info = string.format("data %d bytes", length)
    end
  end
  pinfo.cols.protocol = "Volley gNB"
  return info, fatal
end

gnb.dissector = tcp_pdu_dissector(gnb, "Volley gNB", 6, gnb_pdu_length, gnb_dissect_pdu)
register_tcp(gnb, 32101)

---------------------------------------------------------------------------
-- Checked frame: [total length u24][type u8][xor u8][payload]
---------------------------------------------------------------------------
local checked = Proto("volley_checked", "Volley checked frame")
local checked_types = { [0] = "heartbeat", [1] = "message", [2] = "goodbye" }
local cf = {
  length = ProtoField.uint24("volley_checked.length", "Total length", base.DEC),
  type = ProtoField.uint8("volley_checked.type", "Type", base.DEC, checked_types),
  xor = ProtoField.uint8("volley_checked.xor", "XOR of the payload", base.HEX),
  xor_status = ProtoField.string("volley_checked.xor.status", "XOR status"),
  payload = ProtoField.bytes("volley_checked.payload", "Payload"),
}
checked.fields = cf
local ce = {
  bad_xor = ProtoExpert.new("volley_checked.xor.bad", "XOR does not match the payload: frame dropped",
                            expert.group.CHECKSUM, expert.severity.ERROR),
  short = ProtoExpert.new("volley_checked.length_too_short", "Total length under 5: the 5-byte header is dropped",
                          expert.group.MALFORMED, expert.severity.ERROR),
  bad_type = ProtoExpert.new("volley_checked.unknown_type", "Unknown type: frame dropped",
                             expert.group.MALFORMED, expert.severity.ERROR),
}
checked.experts = { ce.bad_xor, ce.short, ce.bad_type }

local function checked_pdu_length(tvb, pinfo, offset)
  local length = tvb(offset, 3):uint()
  if length < 5 then return 5 end
  return length
end

local function checked_dissect_pdu(tvb, pinfo, tree)
  local length = tvb(0, 3):uint()
  local type = tvb(3, 1):uint()
  local item = tree:add(checked, tvb(), "Volley checked frame, " .. (checked_types[type] or "unknown type"))
  local length_item = item:add(cf.length, tvb(0, 3))
  local type_item = item:add(cf.type, tvb(3, 1))
  local xor_item = item:add(cf.xor, tvb(4, 1))
  pinfo.cols.protocol = "Volley checked"
  if length < 5 then
    length_item:add_proto_expert_info(ce.short)
    return "length under 5"
  end
  local x = 0
  if length > 5 then
    local payload = tvb(5, length - 5)
    item:add(cf.payload, payload)
    local bytes = payload:bytes()
    for i = 0, bytes:len() - 1 do x = bxor(x, bytes:get_index(i)) end
  end
  local note = ""
  if x == tvb(4, 1):uint() then
    item:add(cf.xor_status, "good")
  else
    item:add(cf.xor_status, "bad")
    xor_item:add_proto_expert_info(ce.bad_xor, string.format("XOR 0x%02x, the payload's is 0x%02x", tvb(4, 1):uint(), x))
    note = " (bad XOR, dropped)"
  end
  -- Type 2 is the session's goodbye only with nothing else: else unknown, as to Volley.
  if checked_types[type] == nil or (type == 2 and (length ~= 5 or tvb(4, 1):uint() ~= 0)) then
    type_item:add_proto_expert_info(ce.bad_type)
    return "unknown type" .. note
  end
  if type == 0 then return "heartbeat" .. note end
  if type == 2 then return "goodbye (the server is draining: go elsewhere)" end
  return string.format("message %d bytes%s", length - 5, note)
end

checked.dissector = tcp_pdu_dissector(checked, "Volley checked", 5, checked_pdu_length, checked_dissect_pdu)
register_tcp(checked, 7777)

---------------------------------------------------------------------------
-- RPC frame: [sequence u32][body size u32][message id u32][body]
---------------------------------------------------------------------------
local rpc = Proto("volley_rpc", "Volley RPC")
local RPC_MAX_BODY = 16 * 1024 * 1024
local rpc_ids = { [0xFFFFFFFF] = "error", [0xFFFFFFFE] = "keepalive", [0xFFFFFFFD] = "goodbye" }
local rpc_error_codes = { [1] = "no handler for the id", [2] = "request did not decode", [3] = "handler threw" }
local rf = {
  sequence = ProtoField.uint32("volley_rpc.sequence", "Sequence", base.DEC),
  size = ProtoField.uint32("volley_rpc.size", "Body size", base.DEC),
  id = ProtoField.uint32("volley_rpc.message_id", "Message id", base.DEC_HEX),
  body = ProtoField.bytes("volley_rpc.body", "Body"),
  kind = ProtoField.string("volley_rpc.kind", "Kind"),
  error_code = ProtoField.uint32("volley_rpc.error.code", "Error code", base.DEC, rpc_error_codes),
  error_message = ProtoField.string("volley_rpc.error.message", "Error message"),
  request_in = ProtoField.framenum("volley_rpc.request_in", "Request in frame"),
  response_time = ProtoField.double("volley_rpc.response_time", "Response time (s)"),
}
rpc.fields = rf
local re = {
  oversize = ProtoExpert.new("volley_rpc.size_over_maximum", "Body size over 16 MiB: the connection is closed",
                             expert.group.MALFORMED, expert.severity.ERROR),
  bad_error = ProtoExpert.new("volley_rpc.error.malformed", "Error body does not decode",
                              expert.group.MALFORMED, expert.severity.ERROR),
}
rpc.experts = { re.oversize, re.bad_error }

-- Per conversation and sequence: the first frame seen with it (the request).
local rpc_calls = {}

local function rpc_pdu_length(tvb, pinfo, offset)
  local size = tvb(offset + 4, 4):uint()
  if size > RPC_MAX_BODY then return tvb:len() - offset end
  return 12 + size
end

local function rpc_dissect_pdu(tvb, pinfo, tree)
  local sequence, size, id = tvb(0, 4):uint(), tvb(4, 4):uint(), tvb(8, 4):uint()
  local item = tree:add(rpc, tvb(), "Volley RPC")
  item:add(rf.sequence, tvb(0, 4))
  local size_item = item:add(rf.size, tvb(4, 4))
  item:add(rf.id, tvb(8, 4))
  pinfo.cols.protocol = "Volley RPC"
  if size > RPC_MAX_BODY then
    size_item:add_proto_expert_info(re.oversize)
    return "size over maximum (connection closes)", true
  end
  if size > 0 and tvb:len() >= 12 + size then item:add(rf.body, tvb(12, size)) end
  if id == 0xFFFFFFFE then
    item:add(rf.kind, "keepalive")
    item:set_text("Volley RPC, keepalive")
    return "keepalive"
  end
  if id == 0xFFFFFFFD and size == 0 then
    item:add(rf.kind, "goodbye")
    item:set_text("Volley RPC, goodbye")
    return "goodbye (the server is draining: go elsewhere)"
  end
  local conv = conversation_key(pinfo)
  rpc_calls[conv] = rpc_calls[conv] or {}
  local from = tostring(pinfo.src) .. ":" .. pinfo.src_port
  local call = rpc_calls[conv][sequence]
  if call == nil or call.frame == pinfo.number or (call.from == from and call.frame > pinfo.number) then
    rpc_calls[conv][sequence] = { frame = pinfo.number, time = pinfo.abs_ts, from = from }
    call = nil
  end
  local kind
  if call ~= nil and call.from ~= from then
    kind = id == 0xFFFFFFFF and "error reply" or "reply"
    item:add(rf.kind, kind)
    item:add(rf.request_in, call.frame)
    item:add(rf.response_time, pinfo.abs_ts - call.time)
  else
    kind = "request"
    item:add(rf.kind, kind)
  end
  if id == 0xFFFFFFFF then
    local ok = size >= 8 and tvb:len() >= 12 + size
    if ok then
      local length = tvb(16, 4):uint()
      ok = 8 + length == size
      if ok then
        item:add(rf.error_code, tvb(12, 4))
        item:add(rf.error_message, tvb(20, length))
      end
    end
    if not ok then item:add_proto_expert_info(re.bad_error) end
  end
  item:set_text(string.format("Volley RPC, %s, sequence %d, id %s", kind, sequence,
                              rpc_ids[id] or tostring(id)))
  return string.format("%s seq %d id %s", kind, sequence, rpc_ids[id] or tostring(id))
end

rpc.dissector = tcp_pdu_dissector(rpc, "Volley RPC", 12, rpc_pdu_length, rpc_dissect_pdu)
register_tcp(rpc, 32102)

---------------------------------------------------------------------------
-- ARQ packet over UDP
--   data: conversation u32 | type 1 | flags u8 | sequence u32 | length u16 | crc32c u32 | payload
--   ack:  conversation u32 | type 2 | flags 0  | cumulative u32 | window u16 | sack 16 | crc32c u32
--   FEC repair: conversation u32 | type 3 | flags 0 | group u32 | k u8 | m u8 | index u8 | 0 |
--               symbol length u16 | crc32c u32 | k x sequence u32 | symbol
--   FEC report: conversation u32 | type 4 | flags 0 | groups u32 | expected u32 | lost u32 | crc32c u32
---------------------------------------------------------------------------
local arq = Proto("volley_arq", "Volley ARQ")
local arq_types = { [1] = "data", [2] = "ack", [3] = "FEC repair", [4] = "FEC report" }
local af = {
  conversation = ProtoField.uint32("volley_arq.conversation", "Conversation", base.DEC),
  type = ProtoField.uint8("volley_arq.type", "Type", base.DEC, arq_types),
  flags = ProtoField.uint8("volley_arq.flags", "Flags", base.HEX),
  eos = ProtoField.bool("volley_arq.end_of_stream", "End of stream", 8, nil, 0x01),
  sequence = ProtoField.uint32("volley_arq.sequence", "Sequence", base.DEC),
  length = ProtoField.uint16("volley_arq.length", "Payload length", base.DEC),
  cumulative = ProtoField.uint32("volley_arq.cumulative", "Cumulative ack (next expected)", base.DEC),
  window = ProtoField.uint16("volley_arq.window", "Window", base.DEC),
  sack = ProtoField.bytes("volley_arq.sack", "Selective-ack bitmap"),
  held = ProtoField.uint32("volley_arq.sack.held", "Held out of order", base.DEC),
  crc = ProtoField.uint32("volley_arq.crc32c", "CRC-32C", base.HEX),
  crc_status = ProtoField.string("volley_arq.crc32c.status", "CRC-32C status"),
  payload = ProtoField.bytes("volley_arq.payload", "Payload"),
  group = ProtoField.uint32("volley_arq.fec.group", "FEC group", base.DEC),
  k = ProtoField.uint8("volley_arq.fec.k", "Data packets in the group (k)", base.DEC),
  m = ProtoField.uint8("volley_arq.fec.m", "Repair packets in the group (m)", base.DEC),
  index = ProtoField.uint8("volley_arq.fec.index", "Repair index", base.DEC),
  symbol_length = ProtoField.uint16("volley_arq.fec.symbol_length", "Symbol length", base.DEC),
  protects = ProtoField.uint32("volley_arq.fec.protects", "Protects sequence", base.DEC),
  symbol = ProtoField.bytes("volley_arq.fec.symbol", "Repair symbol"),
  groups = ProtoField.uint32("volley_arq.fec.groups", "Groups accounted", base.DEC),
  expected = ProtoField.uint32("volley_arq.fec.expected", "Packets expected", base.DEC),
  lost = ProtoField.uint32("volley_arq.fec.lost", "Packets lost", base.DEC),
}
arq.fields = af
local ae = {
  bad_crc = ProtoExpert.new("volley_arq.crc32c.bad", "CRC-32C does not match: the packet is discarded",
                            expert.group.CHECKSUM, expert.severity.ERROR),
  bad_length = ProtoExpert.new("volley_arq.bad_length", "Length does not match the datagram: discarded",
                               expert.group.MALFORMED, expert.severity.ERROR),
}
arq.experts = { ae.bad_crc, ae.bad_length }

-- The packet's shape: its CRC field offset, or nil when it is not an ARQ packet.
local function arq_shape(tvb)
  local n = tvb:len()
  if n < 16 then return nil end
  local type = tvb(4, 1):uint()
  if type == 1 then return 12 end
  if type == 2 and n >= 32 then return 28 end
  if type == 3 and n >= 20 then return 16 end
  if type == 4 and n >= 22 then return 18 end
  return nil
end

-- Whether the datagram's size is what its own fields say.
local function arq_length_ok(tvb)
  local n, type = tvb:len(), tvb(4, 1):uint()
  if type == 1 then return 16 + tvb(10, 2):uint() == n end
  if type == 2 then return n == 32 end
  if type == 3 then return n == 20 + 4 * tvb(10, 1):uint() + tvb(14, 2):uint() end
  return n == 22
end

local function arq_dissect(tvb, pinfo, tree)
  local n = tvb:len()
  local crc_at = arq_shape(tvb)
  if crc_at == nil then return 0 end
  local type = tvb(4, 1):uint()
  local item = tree:add(arq, tvb(), "Volley ARQ, " .. arq_types[type])
  item:add(af.conversation, tvb(0, 4))
  item:add(af.type, tvb(4, 1))
  local flags = item:add(af.flags, tvb(5, 1))
  local info
  if type == 1 then
    flags:add(af.eos, tvb(5, 1))
    item:add(af.sequence, tvb(6, 4))
    local length_item = item:add(af.length, tvb(10, 2))
    local length = tvb(10, 2):uint()
    if 16 + length ~= n then length_item:add_proto_expert_info(ae.bad_length) end
    if length > 0 and 16 + length <= n then item:add(af.payload, tvb(16, length)) end
    local eos = band(tvb(5, 1):uint(), 1) == 1
    info = string.format("data seq %d, %d bytes%s", tvb(6, 4):uint(), length, eos and ", end of stream" or "")
  elseif type == 3 then
    local k = tvb(10, 1):uint()
    item:add(af.group, tvb(6, 4))
    item:add(af.k, tvb(10, 1))
    item:add(af.m, tvb(11, 1))
    item:add(af.index, tvb(12, 1))
    local symbol_length = item:add(af.symbol_length, tvb(14, 2))
    if not arq_length_ok(tvb) then symbol_length:add_proto_expert_info(ae.bad_length) end
    local protected = {}
    for j = 0, k - 1 do
      if 20 + 4 * j + 4 <= n then
        item:add(af.protects, tvb(20 + 4 * j, 4))
        table.insert(protected, tostring(tvb(20 + 4 * j, 4):uint()))
      end
    end
    if 20 + 4 * k < n then item:add(af.symbol, tvb(20 + 4 * k)) end
    info = string.format("FEC repair %d of %d, group %d, protects %s", tvb(12, 1):uint() + 1, tvb(11, 1):uint(),
                         tvb(6, 4):uint(), table.concat(protected, " "))
  elseif type == 4 then
    item:add(af.groups, tvb(6, 4))
    item:add(af.expected, tvb(10, 4))
    item:add(af.lost, tvb(14, 4))
    if n ~= 22 then item:add_proto_expert_info(ae.bad_length) end
    info = string.format("FEC report: %d of %d lost over %d groups", tvb(14, 4):uint(), tvb(10, 4):uint(),
                         tvb(6, 4):uint())
  else
    local cumulative = tvb(6, 4):uint()
    item:add(af.cumulative, tvb(6, 4))
    item:add(af.window, tvb(10, 2))
    local sack = item:add(af.sack, tvb(12, 16))
    local held = {}
    for word = 0, 1 do
      local hi, lo = tvb(12 + 8 * word, 4):uint(), tvb(16 + 8 * word, 4):uint()
      for bit = 0, 63 do
        local set = bit < 32 and band(rshift(lo, bit), 1) == 1 or bit >= 32 and band(rshift(hi, bit - 32), 1) == 1
        if set then
          local seq = (cumulative + 1 + 64 * word + bit) % 4294967296
          sack:add(af.held, tvb(12 + 8 * word, 8), seq)
          table.insert(held, tostring(seq))
        end
      end
    end
    if n ~= 32 then item:add_proto_expert_info(ae.bad_length) end
    info = string.format("ack cumulative %d, window %d%s", cumulative, tvb(10, 2):uint(),
                         #held > 0 and (", held " .. table.concat(held, " ")) or "")
  end
  local crc_item = item:add(af.crc, tvb(crc_at, 4))
  if crc32c(tvb():bytes(), crc_at) == tvb(crc_at, 4):uint() then
    item:add(af.crc_status, "good")
  else
    item:add(af.crc_status, "bad")
    crc_item:add_proto_expert_info(ae.bad_crc)
  end
  pinfo.cols.protocol = "Volley ARQ"
  pinfo.cols.info = info
  return n
end

function arq.dissector(tvb, pinfo, tree) return arq_dissect(tvb, pinfo, tree) end
DissectorTable.get("udp.port"):add_for_decode_as(arq)

-- Safe to recognise: the right shape and a CRC-32C over the whole packet that matches.
arq:register_heuristic("udp", function(tvb, pinfo, tree)
  local crc_at = arq_shape(tvb)
  if crc_at == nil or not arq_length_ok(tvb) then return false end
  if crc32c(tvb():bytes(), crc_at) ~= tvb(crc_at, 4):uint() then return false end
  arq_dissect(tvb, pinfo, tree)
  return true
end)

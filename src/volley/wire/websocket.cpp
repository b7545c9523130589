#include <volley/wire/websocket.hpp>

#include <algorithm>
#include <cstring>
#include <string>

namespace volley::wire::websocket {
namespace {

class WebSocketCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "volley.websocket"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::reserved_bits: return "websocket: reserved bits set (close 1002)";
      case Errc::unknown_opcode: return "websocket: reserved opcode (close 1002)";
      case Errc::fragmented_control: return "websocket: fragmented control frame (close 1002)";
      case Errc::control_too_long: return "websocket: control frame over 125 bytes (close 1002)";
      case Errc::unmasked_client_frame: return "websocket: unmasked frame from a client (close 1002)";
      case Errc::masked_server_frame: return "websocket: masked frame from a server (close 1002)";
      case Errc::non_minimal_length: return "websocket: length not in its shortest form (close 1002)";
      case Errc::length_too_large: return "websocket: 64-bit length with the top bit set (close 1002)";
      case Errc::unexpected_continuation: return "websocket: continuation frame with no message begun (close 1002)";
      case Errc::unfinished_message: return "websocket: new message before the last one ended (close 1002)";
      case Errc::text_message: return "websocket: text message, only binary messages are accepted (close 1003)";
      case Errc::message_too_big: return "websocket: message over the maximum size (close 1009)";
      case Errc::bad_close_payload: return "websocket: close frame with a 1-byte payload (close 1002)";
      case Errc::bad_close_code: return "websocket: invalid close code (close 1002)";
      case Errc::close_reason_not_utf8: return "websocket: close reason not UTF-8 (close 1007)";
      case Errc::empty_frame_flood: return "websocket: a flood of data frames that carry nothing (close 1008)";
      case Errc::control_flood: return "websocket: pings or pongs faster than allowed (close 1008)";
      case Errc::unanswered_messages: return "websocket: too many messages waiting for their echo (close 1008)";
    }
    return "websocket: unknown error";
  }
};

std::uint64_t load_be(const std::byte* p, std::size_t n) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

}  // namespace

const std::error_category& websocket_category() noexcept {
  static const WebSocketCategory category;
  return category;
}

std::uint16_t close_code_for(Errc e) noexcept {
  switch (e) {
    case Errc::text_message: return close_code::unsupported_data;
    case Errc::message_too_big: return close_code::message_too_big;
    case Errc::close_reason_not_utf8: return close_code::invalid_payload;
    case Errc::empty_frame_flood:
    case Errc::control_flood:
    case Errc::unanswered_messages: return close_code::policy_violation;
    default: return close_code::protocol_error;
  }
}

bool is_valid_close_code(std::uint16_t code) noexcept {
  if (code >= 3000 && code <= 4999) return true;  // registered and private use
  if (code < 1000 || code > 1014) return false;
  // 1004 reserved; 1005, 1006 and 1015 are never sent in a close frame.
  return code != 1004 && code != 1005 && code != 1006;
}

bool is_utf8(std::string_view text) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    std::size_t extra = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629's table)
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (static_cast<std::size_t>(end - p) <= extra) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (std::size_t i = 2; i <= extra; ++i)
      if ((p[i] & 0xC0) != 0x80) return false;
    p += extra + 1;
  }
  return true;
}

std::size_t encode_header(std::byte* out, bool fin, Opcode opcode, std::uint64_t length,
                          const std::array<std::byte, 4>* mask) noexcept {
  out[0] = std::byte{static_cast<unsigned char>((fin ? 0x80 : 0) | static_cast<unsigned>(opcode))};
  const unsigned char mask_bit = mask != nullptr ? 0x80 : 0;
  std::size_t size = 2;
  if (length < 126) {
    out[1] = std::byte{static_cast<unsigned char>(mask_bit | length)};
  } else if (length <= 0xFFFF) {
    out[1] = std::byte{static_cast<unsigned char>(mask_bit | 126)};
    out[2] = std::byte{static_cast<unsigned char>(length >> 8)};
    out[3] = std::byte{static_cast<unsigned char>(length)};
    size = 4;
  } else {
    out[1] = std::byte{static_cast<unsigned char>(mask_bit | 127)};
    for (std::size_t i = 0; i < 8; ++i) out[2 + i] = std::byte{static_cast<unsigned char>(length >> (56 - 8 * i))};
    size = 10;
  }
  if (mask != nullptr) {
    std::memcpy(out + size, mask->data(), 4);
    size += 4;
  }
  return size;
}

void mask_copy(const std::byte* from, std::byte* to, std::size_t n, const std::array<std::byte, 4>& key,
               std::size_t phase) noexcept {
  phase &= 3;
  // Eight bytes at a time with the key rotated to this phase, repeated twice.
  std::array<std::byte, 8> wide{};
  for (std::size_t i = 0; i < 8; ++i) wide[i] = key[(phase + i) & 3];
  std::uint64_t k = 0;
  std::memcpy(&k, wide.data(), 8);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t v = 0;
    std::memcpy(&v, from + i, 8);
    v ^= k;
    std::memcpy(to + i, &v, 8);
  }
  for (; i < n; ++i) to[i] = from[i] ^ wide[i & 7];
}

std::string_view Receiver::close_reason() const noexcept {
  if (control_size_ <= 2) return {};
  return {reinterpret_cast<const char*>(control_.data()) + 2, control_size_ - 2};
}

std::size_t Receiver::header_needed() const noexcept {
  if (header_size_ < 2) return 2;
  const auto second = static_cast<std::uint8_t>(header_[1]);
  const std::size_t len7 = second & 0x7F;
  std::size_t need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
  if (second & 0x80) need += 4;
  return need;
}

Receiver::Event Receiver::fail(Errc e) noexcept {
  error_ = make_error_code(e);
  state_ = State::done;
  return Event::error;
}

Receiver::Event Receiver::begin_frame() noexcept {
  const auto first = static_cast<std::uint8_t>(header_[0]);
  const auto second = static_cast<std::uint8_t>(header_[1]);
  if (first & 0x70) return fail(Errc::reserved_bits);
  const unsigned op = first & 0x0F;
  if ((op > 2 && op < 8) || op > 10) return fail(Errc::unknown_opcode);
  fin_ = (first & 0x80) != 0;
  opcode_ = static_cast<Opcode>(op);
  masked_ = (second & 0x80) != 0;
  if (masked_ != masked_input_) return fail(masked_input_ ? Errc::unmasked_client_frame : Errc::masked_server_frame);
  const std::size_t len7 = second & 0x7F;
  std::uint64_t length = len7;
  if (len7 == 126) {
    length = load_be(&header_[2], 2);
    if (length < 126) return fail(Errc::non_minimal_length);
  } else if (len7 == 127) {
    length = load_be(&header_[2], 8);
    if (length >> 63) return fail(Errc::length_too_large);
    if (length <= 0xFFFF) return fail(Errc::non_minimal_length);
  }
  if (masked_) std::memcpy(key_.data(), &header_[header_size_ - 4], 4);
  const bool control = op >= 8;
  if (control) {
    if (!fin_) return fail(Errc::fragmented_control);
    if (length > kMaxControlPayload) return fail(Errc::control_too_long);
    control_size_ = 0;
  } else if (opcode_ == Opcode::continuation) {
    if (!in_message_) return fail(Errc::unexpected_continuation);
  } else {
    if (in_message_) return fail(Errc::unfinished_message);
    if (opcode_ == Opcode::text) return fail(Errc::text_message);
    in_message_ = true;
    message_size_ = 0;
  }
  if (!control) {
    if (length > max_message_size_ - message_size_) return fail(Errc::message_too_big);
    message_size_ += length;
    if (length > 0) {
      empty_frames_in_a_row_ = 0;
    } else if (++empty_frames_in_a_row_ > kMaxEmptyFramesInARow) {
      return fail(Errc::empty_frame_flood);
    }
  }
  remaining_ = length;
  phase_ = 0;
  header_size_ = 0;
  state_ = State::payload;
  return remaining_ == 0 ? end_frame() : Event::none;
}

Receiver::Event Receiver::end_frame() noexcept {
  state_ = State::header;
  switch (opcode_) {
    case Opcode::ping: return Event::ping;
    case Opcode::pong: return Event::pong;
    case Opcode::close: {
      if (control_size_ == 1) return fail(Errc::bad_close_payload);
      if (control_size_ >= 2) {
        close_code_ = static_cast<std::uint16_t>(load_be(control_.data(), 2));
        if (!is_valid_close_code(close_code_)) return fail(Errc::bad_close_code);
        if (!is_utf8(close_reason())) return fail(Errc::close_reason_not_utf8);
      }
      state_ = State::done;
      return Event::close;
    }
    default:
      if (fin_) {
        in_message_ = false;
        ++messages_;
        if (report_message_ends_) return Event::message_end;
      }
      return Event::none;
  }
}

Receiver::Result Receiver::decode(std::span<const std::byte> in, std::span<std::byte> out) noexcept {
  Result r;
  while (state_ != State::done) {
    if (state_ == State::header) {
      // A frame header, which may arrive a byte at a time.
      std::size_t need = header_needed();
      while (header_size_ < need && r.consumed < in.size()) {
        header_[header_size_++] = in[r.consumed++];
        need = header_needed();
      }
      if (header_size_ < need) return r;
      r.event = begin_frame();
      if (r.event != Event::none) return r;
      continue;
    }
    const std::size_t available = in.size() - r.consumed;
    if (static_cast<std::uint8_t>(opcode_) >= 8) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, available));
      if (n == 0) return r;
      std::byte* to = control_.data() + control_size_;
      if (masked_) {
        mask_copy(in.data() + r.consumed, to, n, key_, phase_);
      } else {
        std::memcpy(to, in.data() + r.consumed, n);
      }
      control_size_ += n;
      phase_ += n;
      remaining_ -= n;
      r.consumed += n;
    } else {
      const auto n = static_cast<std::size_t>(
          std::min<std::uint64_t>(remaining_, std::min(available, out.size() - r.produced)));
      if (n == 0 && remaining_ > 0) return r;
      if (masked_) {
        mask_copy(in.data() + r.consumed, out.data() + r.produced, n, key_, phase_);
      } else if (n > 0) {
        std::memcpy(out.data() + r.produced, in.data() + r.consumed, n);
      }
      phase_ += n;
      remaining_ -= n;
      r.consumed += n;
      r.produced += n;
    }
    if (remaining_ == 0) {
      r.event = end_frame();
      if (r.event != Event::none) return r;
    }
  }
  return r;
}

}  // namespace volley::wire::websocket

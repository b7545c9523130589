#include <volley/gnb/decoder.hpp>

#include <algorithm>
#include <array>
#include <cstring>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>

namespace volley::gnb {

using wire::Errc;  // the wire module's error vocabulary and byte order
using wire::load_u16_be;
using wire::load_u32_be;

std::size_t FrameDecoder::head_frame_size() const noexcept {
  const std::span<const std::byte> in = buffer_.readable();
  if (failed() || in.size() < kHeaderSize) return 0;
  const std::uint32_t length = load_u32_be(in.data() + 2);
  return type_index(load_u16_be(in.data())) && length <= kMaxBodyLength ? kHeaderSize + length : 0;
}

std::size_t FrameDecoder::feed(std::span<const std::byte> chunk) {
  std::span<std::byte> room = prepare();
  const std::size_t n = std::min(room.size(), chunk.size());
  if (n > 0) std::memcpy(room.data(), chunk.data(), n);
  buffer_.commit(n);
  return n;
}

FrameDecoder::Extension FrameDecoder::take_extension_rest() noexcept {
  if (failed()) return Extension::none;
  static constexpr std::array<std::uint8_t, kGoodbyeSize> kGoodbye{0, 0, 0, 0, 0, 1, 1};
  const std::span<const std::byte> in = buffer_.readable();
  const std::size_t n = std::min(in.size(), kGoodbyeSize);
  if (n >= kKeepaliveSize &&
      std::all_of(in.begin() + 2, in.begin() + kKeepaliveSize, [](std::byte b) { return b == std::byte{0}; })) {
    buffer_.consume(kKeepaliveSize);
    return Extension::keepalive;
  }
  for (std::size_t i = 2; i < n; ++i)
    if (std::to_integer<std::uint8_t>(in[i]) != kGoodbye[i]) return Extension::none;
  if (n < kGoodbyeSize) return Extension::partial;
  buffer_.consume(kGoodbyeSize);
  return Extension::goodbye;
}

DecodeResult FrameDecoder::next() noexcept {
  if (failed()) return failure_;
  const std::span<const std::byte> in = buffer_.readable();
  if (in.size() < kHeaderSize) return {};

  const std::uint16_t raw_type = load_u16_be(in.data());
  const std::uint32_t length = load_u32_be(in.data() + 2);
  const auto index = type_index(raw_type);
  if (!index || length > kMaxBodyLength) {
    failure_ = DecodeResult{DecodeStatus::failed, {}, make_error_code(index ? Errc::length_over_maximum : Errc::unknown_type),
                            raw_type, length};
    return failure_;
  }
  if (in.size() < kHeaderSize + length) return {};

  const TypeInfo& info = kTypes[*index];
  DecodeResult result{DecodeStatus::frame, Frame{info.type, in.subspan(kHeaderSize, length)}, {}, raw_type, length};
  buffer_.consume(kHeaderSize + length);
  if (length > info.max_body) {
    result.status = DecodeStatus::rejected;
    result.error = Errc::body_too_long;
  } else if (length < info.min_body) {
    result.status = DecodeStatus::rejected;
    result.error = Errc::body_too_short;
  }
  return result;
}

}  // namespace volley::gnb

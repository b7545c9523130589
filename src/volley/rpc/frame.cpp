#include <volley/rpc/frame.hpp>

#include <volley/wire/byte_order.hpp>

namespace volley::rpc {

void write_header(std::byte* out, std::uint32_t sequence, std::uint32_t body_size, std::uint32_t message_id) noexcept {
  wire::store_u32_be(out, sequence);
  wire::store_u32_be(out + 4, body_size);
  wire::store_u32_be(out + 8, message_id);
}

std::size_t FrameDecoder::head_frame_size() const noexcept {
  const auto in = buffer_.readable();
  if (failed_ || in.size() < kHeaderSize) return 0;
  const std::uint32_t size = wire::load_u32_be(in.data() + 4);
  return size <= max_body_ ? kHeaderSize + size : 0;
}

FrameDecoder::Status FrameDecoder::next(Frame& out) noexcept {
  if (failed_) return Status::failed;
  const auto in = buffer_.readable();
  if (in.size() < kHeaderSize) return Status::need_more;
  const std::uint32_t size = wire::load_u32_be(in.data() + 4);
  if (size > max_body_) {
    failed_ = true;
    return Status::failed;
  }
  if (in.size() < kHeaderSize + size) return Status::need_more;
  out = {wire::load_u32_be(in.data()), wire::load_u32_be(in.data() + 8), in.subspan(kHeaderSize, size)};
  buffer_.consume(kHeaderSize + size);
  return Status::frame;
}

}  // namespace volley::rpc

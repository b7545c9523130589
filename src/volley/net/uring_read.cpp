// One connection's receive through its loop's io_uring ring (see uring_receive.hpp).
#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <volley/net/tcp_connection.hpp>

#include "uring_receive.hpp"

namespace volley::net::detail {

namespace asio = boost::asio;

std::unique_ptr<UringRead> UringRead::make_for(asio::ip::tcp::socket& socket) {
  UringReceiver* const receiver = UringReceiver::of(socket.get_executor());
  if (receiver == nullptr || !socket.is_open()) return nullptr;
  return std::make_unique<UringRead>(*receiver, socket);
}

UringRead::UringRead(UringReceiver& receiver, asio::ip::tcp::socket& socket) : receiver_(receiver), socket_(socket) {}

std::size_t UringRead::read_some(std::span<std::byte> buffer, boost::system::error_code& ec) {
  if (fallback_) return fallback_->read_some(buffer, ec);
  ec = {};
  std::size_t n = 0;
  // The spill holds older bytes than the buffers of this batch.
  if (spill_read_ < spill_.size()) {
    n = std::min(buffer.size(), spill_.size() - spill_read_);
    std::memcpy(buffer.data(), spill_.data() + spill_read_, n);
    spill_read_ += n;
    if (spill_read_ == spill_.size()) {
      spill_.clear();
      spill_read_ = 0;
    }
  }
  std::size_t taken = 0;  // buffers read whole
  for (Held& held : held_) {
    if (n == buffer.size()) break;
    const std::size_t k = std::min<std::size_t>(buffer.size() - n, held.length);
    std::memcpy(buffer.data() + n, receiver_.buffer(held.buffer) + held.offset, k);
    n += k;
    held.offset += static_cast<std::uint32_t>(k);
    held.length -= static_cast<std::uint32_t>(k);
    if (held.length != 0) break;
    receiver_.give_back(held.buffer);
    ++taken;
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(taken));
  if (n > 0) return n;
  if (ended_) {
    ec = ended_;
    return 0;
  }
  ec = asio::error::would_block;
  return 0;
}

void UringRead::wait(std::shared_ptr<TcpConnection> connection) {
  if (fallback_) return fallback_->wait(std::move(connection));
  if (stopped_ || receiver_.down_) return;
  if (!receiver_.ready()) {
    fallback_ = make_readiness_input(socket_);
    return fallback_->wait(std::move(connection));
  }
  if (left_over()) {
    // Bytes (or the end) came while nobody waited: read them on the loop's next turn.
    asio::post(connection->get_executor(), [connection] { ready(*connection, {}); });
    return;
  }
  waiting_ = connection;
  if (receive_ == Receive::idle) {
    keep_ = std::move(connection);
    arm();
  }
  // Armed: the next completion wakes it. Being cancelled (held back) or
  // starved: armed again when that receive ends, or when buffers come back.
}

void UringRead::stop() {
  if (fallback_ || stopped_) return;
  stopped_ = true;
  for (const Held& held : held_) receiver_.give_back(held.buffer);
  held_.clear();
  spill_ = {};
  spill_read_ = 0;
  if (receiver_.down_) return;
  std::shared_ptr<TcpConnection> keep;
  if (receive_ == Receive::starved) {
    receive_ = Receive::idle;
    std::erase(receiver_.starved_, this);
    receiver_.armed_.erase(this);
    keep = std::move(keep_);
  } else if (receive_ != Receive::idle) {
    // keep_ goes with the receive's last completion, after the cancel.
    if (receive_ == Receive::armed) {
      receive_ = Receive::cancelling;
      receiver_.submit_cancel(*this);
    }
  } else {
    keep = std::move(keep_);
  }
  // Released on a later turn: this may run inside the connection's own
  // handler, or inside a batch that still lists this read.
  if (keep != nullptr || waiting_ != nullptr)
    asio::post(receiver_.loop_, [keep = std::move(keep), waiting = std::move(waiting_)] {});
}

void UringRead::arm() {
  receiver_.armed_.insert(this);
  receive_ = Receive::armed;
  receiver_.submit_receive(*this);
}

void UringRead::on_completion(std::int32_t result, std::uint32_t flags) {
  const bool more = (flags & IORING_CQE_F_MORE) != 0;
  bool starved = false;  // a receive's end (ENOBUFS never comes with more)
  if (result > 0 && (flags & IORING_CQE_F_BUFFER) != 0) {
    ++receiver_.stats_.receives;
    const auto id = static_cast<std::uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT);
    if (stopped_) {
      receiver_.give_back(id);
    } else {
      held_.push_back({id, 0, static_cast<std::uint32_t>(result)});
    }
  } else if (result == 0) {
    if (!stopped_) ended_ = asio::error::eof;
  } else if (result == -ENOBUFS) {
    ++receiver_.stats_.no_buffers;
    if (!stopped_) {
      starved = true;
      receiver_.starved_.push_back(this);
    }
  } else if (result < 0 && result != -ECANCELED) {
    if (!stopped_) ended_ = boost::system::error_code(-result, boost::system::system_category());
  }
  if (!listed_) {
    listed_ = true;
    receiver_.in_batch_.push_back(this);
  }
  if (more) return;
  // This receive is over: nothing in the kernel refers to this read any more.
  if (starved) {
    receive_ = Receive::starved;  // still counted as armed: the receiver arms it again
    return;
  }
  receive_ = Receive::idle;
  receiver_.armed_.erase(this);
  if (!stopped_ && !ended_ && waiting_ != nullptr) return arm();  // ended by a cancel for the spill, or the kernel
  if (keep_ != nullptr) asio::post(receiver_.loop_, [keep = std::move(keep_)] {});
}

void UringRead::deliver() {
  listed_ = false;
  if (waiting_ != nullptr && left_over()) {
    const std::shared_ptr<TcpConnection> connection = std::move(waiting_);
    ready(*connection, {});
  }
}

void UringRead::spill_held() {
  if (held_.empty()) return;
  if (!stopped_) {
    for (const Held& held : held_) {
      const std::byte* const bytes = receiver_.buffer(held.buffer) + held.offset;
      spill_.insert(spill_.end(), bytes, bytes + held.length);
      receiver_.stats_.spilled += held.length;
    }
  }
  for (const Held& held : held_) receiver_.give_back(held.buffer);
  held_.clear();
  if (!stopped_ && receive_ == Receive::armed && spill_.size() - spill_read_ >= UringReceiver::kSpillLimit) {
    ++receiver_.stats_.held_back;
    receive_ = Receive::cancelling;
    receiver_.submit_cancel(*this);
  }
}

}  // namespace volley::net::detail

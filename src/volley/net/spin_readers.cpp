#include "spin_readers.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <volley/net/tcp_connection.hpp>

#include "connection_input.hpp"

namespace volley::net::detail {

boost::asio::execution_context::id SpinReaders::id;

SpinReaders::SpinReaders(boost::asio::io_context& loop) : boost::asio::execution_context::service(loop), loop_(loop) {
  waiting_.reserve(kMaxConnections);
  checking_.reserve(kMaxConnections);
}

void SpinReaders::enable(boost::asio::io_context& loop) { boost::asio::use_service<SpinReaders>(loop); }

SpinReaders* SpinReaders::of(const boost::asio::any_io_executor& executor) {
  // A strand (the thread-pool design) is not the loop's own executor: its
  // handlers may run on any of the pool's threads, so nothing spins there.
  const auto* own = executor.target<boost::asio::io_context::executor_type>();
  if (own == nullptr) return nullptr;
  boost::asio::io_context& loop = own->context();
  if (!boost::asio::has_service<SpinReaders>(loop)) return nullptr;
  return &boost::asio::use_service<SpinReaders>(loop);
}

bool SpinReaders::wait(std::shared_ptr<TcpConnection>& connection) {
  if (waiting_.size() >= kMaxConnections) {
    ++stats_.refused;
    return false;
  }
  if (!work_) work_.emplace(loop_.get_executor());
  waiting_.push_back(std::move(connection));
  return true;
}

bool SpinReaders::spin() {
  std::size_t reads = 0;
  bool found = false;
  while (!waiting_.empty() && reads < kReadsPerPoll) {
    // A connection that finds nothing puts itself back on waiting_ (it waits
    // again), as does one that read and wants more; one that closed or paused
    // does not. So each pass works on what waited when it began.
    checking_.swap(waiting_);
    for (auto& waiting : checking_) {
      ++reads;
      // Input in memory (shared memory) is looked at without a read: the
      // connection stays as it is, waiting, until there is some.
      if (!ConnectionInput::worth_reading(*waiting)) {
        waiting_.push_back(std::move(waiting));
        continue;
      }
      const std::shared_ptr<TcpConnection> connection = std::move(waiting);
      if (ConnectionInput::ready(*connection, {})) {
        ++stats_.inputs;
        found = true;
      }
    }
    checking_.clear();
    if (found) break;  // let the loop's other work run: the replies' completions, timers
  }
  stats_.checks += reads;
  if (waiting_.empty()) work_.reset();
  return found;
}

void SpinReaders::shutdown() {
  work_.reset();
  checking_.clear();
  waiting_.clear();
}

}  // namespace volley::net::detail

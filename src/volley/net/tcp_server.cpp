#include <volley/net/tcp_server.hpp>

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace volley::net {

namespace asio = boost::asio;

TcpServer::TcpServer(asio::io_context& accept_loop, LoopPool& workers, const asio::ip::tcp::endpoint& endpoint,
                     HandlerFactory factory)
    : accept_loop_(accept_loop),
      workers_(workers),
      acceptor_(accept_loop),
      factory_(std::move(factory)),
      live_(workers.size()) {
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
}

TcpServer::TcpServer(asio::io_context& accept_loop, LoopPool& workers, const asio::ip::tcp::endpoint& endpoint,
                     SocketAdopter adopter)
    : TcpServer(accept_loop, workers, endpoint, HandlerFactory{}) {
  adopter_ = std::move(adopter);
}

void TcpServer::start() { do_accept(); }

void TcpServer::do_accept() {
  // Accept on the accept loop's own context and hand the worker only the
  // descriptor: no pending operation of one loop ever holds an object of
  // another, so the loops can be torn down in any order.
  acceptor_.async_accept([this](const boost::system::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of descriptors and the like: keep serving the connections we have.
      spdlog::warn("accept failed: {}", ec.message());
    } else {
      const std::size_t worker = workers_.next_index();
      const auto protocol = acceptor_.local_endpoint().protocol();
      boost::system::error_code release_error;
      const int fd = socket.release(release_error);
      if (release_error) {
        spdlog::warn("accept: cannot hand the connection over: {}", release_error.message());
      } else {
        asio::post(workers_.loop(worker), [this, worker, protocol, fd] {
          asio::ip::tcp::socket s(workers_.loop(worker));
          boost::system::error_code assign_error;
          s.assign(protocol, fd, assign_error);
          if (assign_error) {
            ::close(fd);
            return;
          }
          adopt(worker, std::move(s));
        });
      }
    }
    do_accept();
  });
}

void TcpServer::adopt(std::size_t worker, asio::ip::tcp::socket socket) {
  if (adopter_) return adopter_(worker, std::move(socket));
  auto connection = std::make_shared<TcpConnection>(std::move(socket), factory_(worker));
  auto& live = live_[worker];
  live.emplace(connection.get(), connection);
  connection->set_close_observer([&live](TcpConnection& c) { live.erase(&c); });
  connection->start();
}

void TcpServer::shutdown() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    asio::post(workers_.loop(w), [this, w] {
      // Copy first: a close may finish at once and erase itself from the map.
      std::vector<std::shared_ptr<TcpConnection>> connections;
      for (auto& [ptr, weak] : live_[w])
        if (auto c = weak.lock()) connections.push_back(std::move(c));
      for (auto& c : connections) c->close({CloseReason::Kind::shutdown, {}});
    });
  }
}

}  // namespace volley::net

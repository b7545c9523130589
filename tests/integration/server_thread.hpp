#pragma once
// Runs a net::Server on a thread of its own for as long as the test holds it;
// stops it gracefully and joins on destruction, also when an assertion fails.
#include <thread>

#include <volley/net/server.hpp>

namespace volley::test {

class ServerThread {
 public:
  explicit ServerThread(net::Server& server) : server_(server), thread_([this] { server_.run(); }) {}
  ~ServerThread() {
    server_.stop();
    thread_.join();
  }
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;

 private:
  net::Server& server_;
  std::thread thread_;
};

}  // namespace volley::test

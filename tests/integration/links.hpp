#pragma once
// Tests that run alike over plain TCP, TLS, Unix sockets and shared memory
// take a Link parameter: the server tools' extra flags and the in-process
// transports for each.
// The certificates are made once per test binary (scripts/make-test-certs.sh).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ssl/context.hpp>
#include <gtest/gtest.h>

#include <volley/net/server.hpp>
#include <volley/net/shm.hpp>
#include <volley/net/tls.hpp>

#include "child_process.hpp"

namespace volley::test {

enum class Link { tcp, tls, unix_socket, shm };
// Served on a Unix socket (shared memory is set up over one).
inline bool is_local(Link link) { return link == Link::unix_socket || link == Link::shm; }

inline std::string link_text(Link link) {
  return link == Link::tcp ? "Tcp" : link == Link::tls ? "Tls" : link == Link::unix_socket ? "Unix" : "Shm";
}
inline std::string link_name(const testing::TestParamInfo<Link>& info) { return link_text(info.param); }

// A Unix socket no other test uses, as a server tool's --unix takes it: in
// Linux's abstract namespace ("@NAME"), so there is no file to remove.
inline std::string fresh_unix_flag() {
  static std::atomic<unsigned> next{0};
  return "@volley-test-" + std::to_string(::getpid()) + "-" + std::to_string(next++);
}
// The address a client connects to for that flag (net/unix_socket.hpp).
inline std::string unix_address_of(const std::string& flag) { return "unix-abstract:" + flag.substr(1); }

// The throw-away CA, server and client certificates, in a folder removed at exit.
class TestCerts {
 public:
  static const TestCerts& get() {
    static const TestCerts certs;
    return certs;
  }
  std::string file(const std::string& name) const { return dir_.file("certs/" + name); }

 private:
  TestCerts() {
    ChildProcess p({std::string(VOLLEY_SOURCE_DIR) + "/scripts/make-test-certs.sh", dir_.file("certs")},
                   dir_.file("certs-log"));
    if (p.wait_for(std::chrono::seconds(60)).value_or(-1) != 0) ADD_FAILURE() << "certificates: " << p.stderr_text();
  }
  TempDir dir_;
};

// Flags that make a server tool serve `link` (a Unix socket: use FramingAndLink).
inline std::vector<std::string> server_flags(Link link) {
  if (link != Link::tls) return {};
  const auto& c = TestCerts::get();
  return {"--tls", "--cert", c.file("server.pem"), "--key", c.file("server.key")};
}

// Flags that make a client tool connect over `link`, verifying the server.
inline std::vector<std::string> client_flags(Link link) {
  if (link != Link::tls) return {};
  return {"--tls", "--ca", TestCerts::get().file("ca.pem")};
}

using TransportFactory = std::function<std::unique_ptr<net::StreamTransport>()>;

// In-process: transports for a client that verifies the test server as 127.0.0.1.
inline TransportFactory client_transport(Link link) {
  if (link == Link::shm) return [] { return net::make_shm_transport(net::ShmRole::client); };
  if (link != Link::tls) return {};
  auto ctx = std::make_shared<boost::asio::ssl::context>(
      net::make_tls_client_context(TestCerts::get().file("ca.pem"), true, net::TlsVersion::any));
  return [ctx] { return net::make_tls_transport(*ctx, net::TlsRole::client, "127.0.0.1"); };
}

inline TransportFactory server_transport(Link link) {
  if (link == Link::shm) return [] { return net::make_shm_transport(net::ShmRole::server); };
  if (link != Link::tls) return {};
  const auto& c = TestCerts::get();
  auto ctx = std::make_shared<boost::asio::ssl::context>(
      net::make_tls_server_context(c.file("server.pem"), c.file("server.key")));
  return [ctx] { return net::make_tls_transport(*ctx, net::TlsRole::server); };
}

}  // namespace volley::test

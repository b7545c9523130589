#pragma once
// The abuse matrix's parts shared by its TCP, TLS and WebSocket halves: the server
// programs under attack (each with a well-behaved client and what its report
// shows of bad input), a raw socket that may be refused, reset or closed
// under it, and the checks every case ends with.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "links.hpp"

namespace volley::test {

using Bytes = std::vector<std::byte>;

struct Subject {
  std::string name;
  std::vector<std::string> server;  // after `volley`
  Bytes request;                    // one whole valid frame the server answers
  Bytes lying_header;               // a header whose length the server must refuse (empty: none)
  std::function<std::vector<std::string>(int port)> good_client;
  std::function<void(const boost::json::object& report)> check_good;
  // What the server's report shows of bad input and broken connections; nullopt
  // where the protocol cannot tell (an echo takes any bytes).
  std::function<std::optional<std::uint64_t>(const boost::json::object& report)> counted;
};

// The four TCP server programs (target, pingpong-server, rpc-server,
// echo-server), serving plain TCP or TLS, with their good clients over the same.
// Over plain TCP also target and echo-server receiving through io_uring
// (`--io uring`): "target-io-uring", "echo-server-io-uring".
// (Built when a test runs: the TLS ones need the test certificates.)
std::vector<Subject> subjects(Link link);
std::vector<std::string> subject_names();
std::vector<std::string> io_uring_subject_names();
Subject subject(const std::string& name, Link link);

struct Abuse {
  std::string name;
  bool must_be_counted;  // where the report can tell (the counter is the caller's)
  std::function<void(int port, const Subject&)> run;
};

// An abuse of a layer over TCP (TLS, WebSocket): one that breaks the layer's
// handshake must show in the server's `handshake_failures`, one after it in
// the subject's own counters.
struct LayerAbuse {
  Abuse abuse;
  bool in_handshake;
};

inline const std::string& name_of(const Abuse& a) { return a.name; }
inline const std::string& name_of(const LayerAbuse& a) { return a.abuse.name; }

// One case of a matrix: a subject (by name) and an abuse.
template <class A>
struct Case {
  std::string subject;
  A abuse;
};

template <class A>
void PrintTo(const Case<A>& c, std::ostream* os) {
  *os << c.subject << " x " << name_of(c.abuse);
}

// Every subject with every abuse.
template <class A>
std::vector<Case<A>> every_case(const std::vector<A>& abuses, const std::vector<std::string>& names = subject_names()) {
  std::vector<Case<A>> cases;
  for (const auto& s : names)
    for (const auto& a : abuses) cases.push_back({s, a});
  return cases;
}

// A test name for a subject and an abuse ("rpc-server", "garbage": "rpc_server_garbage").
std::string case_name(const std::string& subject, const std::string& abuse);

template <class A>
std::string case_name(const Case<A>& c) {
  return case_name(c.subject, name_of(c.abuse));
}

// Runs `abuse` against the subject's server while its good client works, then:
// the server is still up, its memory under a bound, the good client's results
// exact, the server stops cleanly, and, where `must_be_counted`, `counted`
// of its report is above zero.
void expect_survives(const Subject& subject, const Abuse& abuse,
                     const std::function<std::optional<std::uint64_t>(const boost::json::object&)>& counted);

// The same, counting a layer's abuse where LayerAbuse says.
void expect_survives(const Subject& subject, const LayerAbuse& abuse);

// `n` random bytes that never start a valid frame or TLS record.
Bytes garbage(std::size_t n, unsigned seed);

// A TCP connection to 127.0.0.1:port, no delay, for bytes the abuser chooses.
class Abuser {
 public:
  explicit Abuser(int port);
  ~Abuser() { close(); }
  Abuser(const Abuser&) = delete;
  Abuser& operator=(const Abuser&) = delete;
  Abuser(Abuser&& o) noexcept;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  // Sends what the socket takes without waiting; false once the peer is gone.
  bool send(std::span<const std::byte> bytes);
  // At most `n` bytes that arrive within `wait`.
  Bytes read_bytes(std::size_t n, std::chrono::milliseconds wait);
  std::size_t read_some(std::size_t n, std::chrono::milliseconds wait) { return read_bytes(n, wait).size(); }
  // RST instead of FIN.
  void reset();
  void close();

 private:
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace volley::test

// Unix domain sockets under the same servers, clients and sessions as TCP:
// the socket file's life (a stale one replaced, a live server's refused,
// anything else left alone, the mode asked for, removed at the end), and a
// peer killed mid-stream; shared memory's hostile peers. The framings'
// session tests run over Unix sockets and shared memory too
// (Sessions/SessionOver.*Unix|Shm, Sessions/SessionLink.*Unix|Shm).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/server.hpp>
#include <volley/net/tcp_connect.hpp>
#include <volley/net/unix_socket.hpp>

#include "byte_echo.hpp"
#include "child_process.hpp"
#include "framings.hpp"
#include "hand_made_shm_client.hpp"
#include "links.hpp"
#include "listening_server.hpp"
#include "run_until.hpp"
#include "server_thread.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

bool exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

// A socket file nobody listens on, as a server that died leaves it.
void leave_stale_socket_file(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  path.copy(sa.sun_path, sizeof sa.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ::close(fd);
  ASSERT_TRUE(exists(path));
}

net::ServerOptions unix_server_options(const std::string& address) {
  return {.bind = address, .threads = 1, .handle_signals = false, .shutdown_timeout = 500ms};
}

// One round trip through a server that echoes bytes.
bool echoes(const std::string& address) {
  asio::io_context loop;
  std::error_code ec;
  auto socket = net::connect_tcp(loop, address, 0, 2s, ec);
  if (ec) return false;
  const char out[] = "ping";
  boost::system::error_code io;
  socket.non_blocking(false, io);
  asio::write(socket, asio::buffer(out, 4), io);
  char in[4]{};
  asio::read(socket, asio::buffer(in, 4), io);
  return !io && std::string(in, 4) == "ping";
}

TEST(UnixSocket, AStaleFileIsReplacedALiveServersIsRefusedAndAnyOtherFileIsLeftAlone) {
  TempDir dir;
  const std::string path = dir.file("svc.sock");
  leave_stale_socket_file(path);
  {
    net::Server server(unix_server_options("unix:" + path));
    server.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
    EXPECT_EQ(server.listening_text(), "unix:" + path);
    EXPECT_EQ(server.port(), 0);
    ServerThread running(server);
    EXPECT_TRUE(echoes("unix:" + path));

    net::Server second(unix_server_options("unix:" + path));
    try {
      second.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
      ADD_FAILURE() << "a second server took the socket of a live one";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), boost::system::errc::address_in_use) << e.what();
      EXPECT_NE(std::string(e.what()).find("another server is listening there"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(echoes("unix:" + path)) << "the refused server disturbed the live one";
  }
  EXPECT_FALSE(exists(path)) << "the server left its socket file behind";

  const std::string other = dir.file("notes.txt");
  std::ofstream(other) << "not a socket\n";
  net::Server server(unix_server_options("unix:" + other));
  try {
    server.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
    ADD_FAILURE() << "a server replaced a file that is not a socket";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), boost::system::errc::file_exists) << e.what();
  }
  std::ifstream kept(other);
  std::string line;
  std::getline(kept, line);
  EXPECT_EQ(line, "not a socket");
}

TEST(UnixSocket, AnAbstractNameNeedsNoFileAndAMissingPathIsRefusedClearly) {
  const std::string address = unix_address_of(fresh_unix_flag());
  net::Server server(unix_server_options(address));
  server.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
  ServerThread running(server);
  EXPECT_TRUE(echoes(address));

  asio::io_context loop;
  std::error_code ec;
  net::connect_tcp(loop, "unix:/nonexistent/volley.sock", 0, 1s, ec);
  EXPECT_EQ(ec, std::errc::no_such_file_or_directory) << ec.message();
  net::connect_tcp(loop, "unix:/" + std::string(200, 'x'), 0, 1s, ec);
  EXPECT_EQ(ec, std::errc::filename_too_long) << ec.message();
}

// The server tool: --unix-mode sets the file's permissions before anyone can
// connect, the listening line and the port file name the socket, and the file
// goes when the server stops.
TEST(UnixSocket, TheServerToolSetsTheModeNamesTheSocketAndRemovesItAtTheEnd) {
  TempDir dir;
  const std::string path = dir.file("echo.sock");
  ListeningServer server(dir,
                         {"echo-server", "--unix", path, "--unix-mode", "0600", "--port-file", dir.file("where"),
                          "--json", "--no-progress"},
                         "echo-server");
  EXPECT_EQ(server.unix_address(), "unix:" + path);
  const std::string out = server.process().stdout_text();
  EXPECT_EQ(out.substr(0, out.find('\n')), "listening unix unix:" + path) << "plain bytes on a Unix socket are not TCP";
  struct stat st{};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::ifstream where(dir.file("where"));
  std::string line;
  std::getline(where, line);
  EXPECT_EQ(line, "unix:" + path);
  EXPECT_TRUE(echoes("unix:" + path));
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "connections"), 1u);
  EXPECT_FALSE(exists(path));
}

// A client process killed with SIGKILL in the middle of a stream of messages
// (raw bytes cut anywhere: mid-frame, as likely as not): the server reports
// the close and serves the next client. Over shared memory the writer set
// up its rings by hand before it was forked.
using LocalOver = std::tuple<Framing, Link>;
class PeerKilled : public testing::TestWithParam<LocalOver> {
 protected:
  Framing framing() const { return std::get<0>(GetParam()); }
  Link link() const { return std::get<1>(GetParam()); }

  // A child process that writes `framing()` frames to `flag`'s server until killed.
  pid_t start_writer(const std::string& flag) {
    const std::vector<std::byte> frame = on_the_wire(framing(), std::string(1000, 'k'));
    std::vector<std::byte> stream;
    for (int i = 0; i < 64; ++i) stream.insert(stream.end(), frame.begin(), frame.end());
    if (link() == Link::shm) {
      auto client = std::make_unique<HandMadeShmClient>(unix_address_of(flag), HandMadeShmClient::Flaw::none);
      EXPECT_EQ(client->answer(), "A");
      const pid_t child = ::fork();
      if (child == 0) client->stream_for_ever(stream);
      return child;  // the parent's copies of the connection go here
    }
    std::error_code ec;
    const int fd = net::connect_unix(*net::parse_unix_address(unix_address_of(flag)), ec);
    EXPECT_GE(fd, 0) << ec.message();
    ::fcntl(fd, F_SETFL, 0);  // blocking
    const pid_t child = ::fork();
    if (child == 0) {
      // Writes frames in pieces that straddle frame boundaries, for ever, reading
      // nothing (system calls only: the test process may have other threads).
      for (;;)
        for (std::size_t at = 0; at < stream.size(); at += 777)
          if (::write(fd, stream.data() + at, std::min<std::size_t>(777, stream.size() - at)) < 0) ::_exit(3);
    }
    ::close(fd);  // the child's copy is the connection now
    return child;
  }
};
INSTANTIATE_TEST_SUITE_P(Framings, PeerKilled,
                         testing::Combine(testing::Values(Framing::checked, Framing::gnb, Framing::rpc),
                                          testing::Values(Link::unix_socket, Link::shm)),
                         over_name);

TEST_P(PeerKilled, TheServerReportsItAndServesTheNextClient) {
  TempDir dir;
  const std::string flag = fresh_unix_flag();
  std::vector<std::string> args{"--unix", flag, "--framing", framing_flag(framing())};
  if (link() == Link::shm) args.push_back("--shm");
  RunningPingPongServer server(dir, args);

  const pid_t child = start_writer(flag);
  ASSERT_GT(child, 0);
  std::this_thread::sleep_for(300ms);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended on its own: " << WEXITSTATUS(status);

  asio::io_context loop;
  net::ReconnectingClientOptions o;
  o.host = unix_address_of(flag);
  o.make_codec = [f = framing()] { return make_codec(f); };
  o.make_transport = client_transport(link());
  std::vector<std::string> heard;
  net::ReconnectingClient client(loop, o, {.on_message = [&](const net::Message& m) {
                                   heard.push_back(text_of(framing(), m.bytes));
                                 }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 5s));
  for (int i = 0; i < 10; ++i) client.send(message(framing(), "after " + std::to_string(i)));
  ASSERT_TRUE(run_until(loop, [&] { return heard.size() == 10; }, 5s)) << heard.size();
  EXPECT_EQ(heard.back(), "after 9");
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);

  // The killed writer's end is the peer's (an end or a reset); the good
  // client's is too, unless the stop overtook its close on the way.
  const auto report = server.stop();
  const auto& closes = report.at("closes").as_object();
  const std::uint64_t ended_by_peer = json_u64(closes, "peer closed") + json_u64(closes, "i/o error");
  EXPECT_GE(ended_by_peer, 1u) << boost::json::serialize(report);
  EXPECT_EQ(ended_by_peer + json_u64(closes, "shutdown"), 2u) << boost::json::serialize(report);
  EXPECT_GT(json_u64(report, "messages_in"), 10u) << "nothing of the killed writer's stream was read";
}

}  // namespace
}  // namespace volley::test

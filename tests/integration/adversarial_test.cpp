// Abuse against every TCP server program, as an attacker or a broken peer
// would: garbage, lying lengths, frames split byte by byte, resets in the
// middle of a frame, slowloris, a client that never reads, connection churn.
// Each runs while a well-behaved client does its normal work, and for each:
// the server stays up, its memory stays under a bound, the good client's
// results are exact, the abuse is counted where the protocol can tell, and
// the server still stops cleanly with its report.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "adversarial.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::vector<Abuse> tcp_abuses() {
  return {
      {"garbage", true,
       [](int port, const Subject&) {
         for (unsigned i = 0; i < 8; ++i) {
           Abuser a(port);
           a.send(garbage(64 * 1024, i));
           a.read_some(64 * 1024, 100ms);  // whatever comes back (an echo), or the close
         }
       }},
      {"lying_length", true,
       [](int port, const Subject& s) {
         const Bytes header = s.lying_header.empty() ? garbage(16, 99) : s.lying_header;
         for (int i = 0; i < 4; ++i) {
           Abuser a(port);
           Bytes bytes = header;
           bytes.resize(header.size() + 100, std::byte{0});
           a.send(bytes);
           a.read_some(1, 100ms);
         }
       }},
      {"split_byte_by_byte", false,
       [](int port, const Subject& s) {
         for (int i = 0; i < 3; ++i) {
           Abuser a(port);
           for (std::byte b : s.request) {
             a.send(std::span(&b, 1));
             std::this_thread::sleep_for(1ms);
           }
           // A frame that arrives a byte at a time is still one frame: it is answered.
           EXPECT_GT(a.read_some(1, 5000ms), 0u) << s.name << ": no answer to a frame sent byte by byte";
         }
       }},
      {"reset_mid_frame", true,
       [](int port, const Subject& s) {
         for (int i = 0; i < 8; ++i) {
           Abuser a(port);
           a.send(std::span(s.request).first(s.request.size() / 2));
           std::this_thread::sleep_for(5ms);
           a.reset();
         }
       }},
      {"slowloris", false,
       [](int port, const Subject& s) {
         std::vector<Abuser> slow;
         for (int i = 0; i < 100; ++i) slow.emplace_back(port);
         for (std::size_t byte = 0; byte < std::min<std::size_t>(10, s.request.size() - 1); ++byte) {
           for (auto& a : slow) a.send(std::span(s.request).subspan(byte, 1));
           std::this_thread::sleep_for(100ms);
         }
       }},
      {"never_reads", false,
       [](int port, const Subject& s) {
         Abuser a(port);
         Bytes burst;
         while (burst.size() < 256 * 1024) burst.insert(burst.end(), s.request.begin(), s.request.end());
         const auto until = Clock::now() + 1500ms;
         while (Clock::now() < until && a.send(burst)) {
         }
       }},
      {"connection_churn", false,
       [](int port, const Subject&) {
         for (int i = 0; i < 300; ++i) {
           Abuser a(port);
           if (i % 2 == 0) a.reset();
         }
       }},
  };
}

class Abused : public testing::TestWithParam<Case<Abuse>> {};

TEST_P(Abused, StaysUpBoundedAndExactForAGoodClientAlongside) {
  const Subject s = subject(GetParam().subject, Link::tcp);
  expect_survives(s, GetParam().abuse, s.counted);
}

INSTANTIATE_TEST_SUITE_P(Servers, Abused, testing::ValuesIn(every_case(tcp_abuses())),
                         [](const auto& info) { return case_name(info.param); });
// The same abuse where the servers receive through io_uring (multishot
// receives into the loop's shared buffers): a peer that never reads, or
// resets mid-frame, must not hold buffers the good client needs.
INSTANTIATE_TEST_SUITE_P(ServersReceivingThroughIoUring, Abused,
                         testing::ValuesIn(every_case(tcp_abuses(), io_uring_subject_names())),
                         [](const auto& info) { return case_name(info.param); });

}  // namespace
}  // namespace volley::test

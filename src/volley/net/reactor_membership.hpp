#pragma once
// Taking a spinning connection's socket out of its loop's epoll set, and
// putting it back. A socket in the set costs every packet that arrives for it
// a wake-up call in the kernel (the epoll callback, under the socket's wait
// queue lock), paid on the critical path of the sender, and the loop's next
// epoll_wait a report nobody waits for; a connection whose loop reads its
// socket on every turn (spin_readers.hpp) needs neither. Measured with raw
// sockets, busy-polling on loopback (2-core VM, 2026-11-28): a registered
// socket adds 0.1-0.2 us to a 6.6 us round trip.
//
// Out of the set, the socket has no reactor registration at all: no Asio
// operation may be queued on it until it is back (close and cancel are safe:
// Asio skips a socket without one). Uses Asio's epoll reactor's own
// deregister/register calls, so like the edge wait it exists only for the
// Asio it was written against (edge_read_wait.hpp); elsewhere the socket
// stays in.
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace volley::net::detail {

// Whether sockets can leave the reactor in this build (Asio's epoll reactor,
// the Boost it was written against); where not, leave_reactor() says false.
bool can_leave_reactor() noexcept;
// Takes `socket` (open, on a loop one thread runs, with no Asio operation
// queued on it) out of the reactor: true when it left.
bool leave_reactor(boost::asio::ip::tcp::socket& socket) noexcept;
// Puts a socket that left back, with a fresh registration (which reports
// input already there); the error when epoll refuses it.
boost::system::error_code rejoin_reactor(boost::asio::ip::tcp::socket& socket) noexcept;

}  // namespace volley::net::detail

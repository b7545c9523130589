#pragma once
// Typed dispatch for any framing. A protocol says once where a message's id
// and body are; users register a handler per id taking the type they want,
// and each message reaches its handler as that type:
//   - std::span<const std::byte>: the body as it is;
//   - a view type with `static std::optional<T> from_body(std::span<const std::byte>)`
//     (the gNB views, volley/gnb/views.hpp): fixed fields read in place, no copy;
//   - any other type: decoded by volley::serial into an instance kept per
//     handler, so its strings and vectors keep their capacity and a warm
//     dispatcher allocates nothing per message.
// What cannot be dispatched is counted, never thrown: a message too short to
// carry its header (unopened), an id with no handler (unknown_id, optionally
// passed to a fallback), a body the handler's type refuses (undecodable).
//
// A message from a session (net::Message) is opened by the protocol from what
// the session's codec already read when the protocol knows that framing (gNB,
// RPC: the id and body are taken as they are); otherwise from its bytes.
//
// Protocols: LeadingId<Id> here (an id in the first bytes of a payload:
// checked-frame payloads, datagrams); gnb::GnbProtocol (volley/gnb/dispatch_protocol.hpp,
// whole gNB frames, id = the type); rpc::RpcProtocol (volley/rpc/protocol.hpp).
//
// One dispatcher per thread (or per connection): dispatch() is not safe to
// call concurrently, since decoded instances are reused.
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <volley/net/message.hpp>
#include <volley/serial/binary.hpp>
#include <volley/wire/byte_order.hpp>

namespace volley::dispatch {

template <class Id>
struct Envelope {
  Id id;
  std::span<const std::byte> body;
};

// A framing described once: its id type and how to open a message.
template <class P>
concept Protocol = requires(std::span<const std::byte> message) {
  typename P::Id;
  { P::open(message) } noexcept -> std::same_as<std::optional<Envelope<typename P::Id>>>;
};

// A type read in place from a body.
template <class T>
concept BodyView = requires(std::span<const std::byte> body) {
  { T::from_body(body) } -> std::same_as<std::optional<T>>;
};

enum class Outcome { handled, unknown_id, unopened, undecodable };

struct DispatchStats {
  std::uint64_t handled = 0;
  std::uint64_t unknown_id = 0;
  std::uint64_t unopened = 0;     // too short for the protocol's header, or its length field disagrees
  std::uint64_t undecodable = 0;  // the handler's type refused the body
};

// Handlers are called as handler(context..., const T&): a dispatcher per
// connection passes the connection (or session) it serves as context.
template <Protocol P, class... Context>
class Dispatcher {
 public:
  using Id = typename P::Id;

  // Registers (or replaces) the handler of `id`.
  template <class T, class F>
  Dispatcher& on(Id id, F handler) {
    Entry entry = make_entry<T>(std::move(handler));
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), id,
                                     [](const auto& e, Id key) { return e.first < key; });
    if (it != entries_.end() && it->first == id)
      it->second = std::move(entry);
    else
      entries_.insert(it, {id, std::move(entry)});
    return *this;
  }

  // Messages with an id nobody registered, with their envelope (counted as unknown_id either way).
  template <class F>
  Dispatcher& on_unknown(F handler) {
    unknown_ = std::move(handler);
    return *this;
  }

  Outcome dispatch(std::span<const std::byte> message, Context&... context) {
    return deliver(P::open(message), context...);
  }

  Outcome dispatch(const net::Message& message, Context&... context) {
    if constexpr (requires { P::open(message); })
      return deliver(P::open(message), context...);
    else
      return deliver(P::open(message.bytes), context...);
  }

  bool handles(Id id) const {
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), id,
                                     [](const auto& e, Id key) { return e.first < key; });
    return it != entries_.end() && it->first == id;
  }
  const DispatchStats& stats() const noexcept { return stats_; }

 private:
  Outcome deliver(const std::optional<Envelope<Id>>& envelope, Context&... context) {
    if (!envelope) {
      ++stats_.unopened;
      return Outcome::unopened;
    }
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), envelope->id,
                                     [](const auto& e, Id key) { return e.first < key; });
    if (it == entries_.end() || it->first != envelope->id) {
      ++stats_.unknown_id;
      if (unknown_) unknown_(context..., *envelope);
      return Outcome::unknown_id;
    }
    // The body is passed on rebuilt from its two words: copied whole, it was
    // one 16-byte load of the two 8-byte stores open() had just made, a load
    // the store buffer cannot forward (it waits for both stores to land).
    const std::span<const std::byte> body(envelope->body.data(), envelope->body.size());
    if (!it->second(body, context...)) {
      ++stats_.undecodable;
      return Outcome::undecodable;
    }
    ++stats_.handled;
    return Outcome::handled;
  }

  // False when the body does not make a T.
  using Entry = std::function<bool(std::span<const std::byte>, Context&...)>;

  template <class T, class F>
  static Entry make_entry(F handler) {
    if constexpr (std::is_same_v<T, std::span<const std::byte>>) {
      return [handler = std::move(handler)](std::span<const std::byte> body, Context&... context) mutable {
        handler(context..., body);
        return true;
      };
    } else if constexpr (BodyView<T>) {
      return [handler = std::move(handler)](std::span<const std::byte> body, Context&... context) mutable {
        const std::optional<T> view = T::from_body(body);
        if (!view) return false;
        handler(context..., *view);
        return true;
      };
    } else {
      // One instance per handler, decoded into again and again: no allocation once warm.
      return [handler = std::move(handler), value = std::make_shared<T>()](std::span<const std::byte> body,
                                                                           Context&... context) mutable {
        std::error_code ec;
        if (!serial::decode(body, *value, ec)) return false;
        handler(context..., std::as_const(*value));
        return true;
      };
    }
  }

  std::vector<std::pair<Id, Entry>> entries_;  // sorted by id
  std::function<void(Context&..., const Envelope<Id>&)> unknown_;
  DispatchStats stats_;
};

// An id in the first sizeof(Id) bytes (big-endian), the body after it: for
// protocols carried in checked-frame payloads or datagrams.
template <std::unsigned_integral IdType>
struct LeadingId {
  using Id = IdType;
  static std::optional<Envelope<Id>> open(std::span<const std::byte> message) noexcept {
    if (message.size() < sizeof(Id)) return std::nullopt;
    Id id = 0;
    for (std::size_t i = 0; i < sizeof(Id); ++i) id = static_cast<Id>((id << 8) | std::to_integer<Id>(message[i]));
    return Envelope<Id>{id, message.subspan(sizeof(Id))};
  }
};

}  // namespace volley::dispatch

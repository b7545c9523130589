#include <volley/arq/error.hpp>

#include <string>

namespace volley::arq {
namespace {

class ArqCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "volley.arq"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::peer_unreachable: return "peer unreachable: retransmission timeouts in a row without an ack";
      case Errc::association_lost:
        return "the SCTP association was lost (the peer did not acknowledge within the retransmission limit)";
      case Errc::association_failed: return "the SCTP association could not be set up";
      case Errc::unsent_at_peer_shutdown: return "messages left unsent: the peer shut the association down first";
    }
    return "unknown ARQ error";
  }
};

}  // namespace

const std::error_category& arq_category() noexcept {
  static const ArqCategory category;
  return category;
}

}  // namespace volley::arq

#include <volley/netem/pcap_writer.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace volley::netem {
namespace {

// pcapng (draft-ietf-opsawg-pcapng), host byte order as the byte-order magic says.
constexpr std::uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr std::uint32_t kInterfaceDescription = 1;
constexpr std::uint32_t kEnhancedPacket = 6;
constexpr std::uint16_t kLinkTypeRaw = 101;  // raw IPv4 or IPv6, by the version nibble
constexpr std::uint16_t kOptEnd = 0, kOptComment = 1, kIfName = 2, kIfDescription = 3, kIfTsResolution = 9,
                        kShbUserApplication = 4;

// A block body being built: fields, then options, padded to 4 bytes.
class Block {
 public:
  template <class T>
  void field(T value) {
    append(&value, sizeof value);
  }
  void raw(std::span<const std::byte> data) {
    append(data.data(), data.size());
    pad();
  }
  void option(std::uint16_t code, std::string_view value) {
    field(code);
    field(static_cast<std::uint16_t>(value.size()));
    raw(std::as_bytes(std::span(value.data(), value.size())));
  }
  void end_options() {
    field(kOptEnd);
    field(std::uint16_t{0});
  }
  // type, total length, body, total length again.
  std::vector<std::byte> finish(std::uint32_t type) const {
    const auto total = static_cast<std::uint32_t>(bytes_.size() + 12);
    std::vector<std::byte> out(total);
    std::memcpy(out.data(), &type, 4);
    std::memcpy(out.data() + 4, &total, 4);
    std::memcpy(out.data() + 8, bytes_.data(), bytes_.size());
    std::memcpy(out.data() + 8 + bytes_.size(), &total, 4);
    return out;
  }

 private:
  void append(const void* data, std::size_t n) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + n);
    if (n != 0) std::memcpy(bytes_.data() + at, data, n);
  }
  void pad() { bytes_.resize((bytes_.size() + 3) & ~std::size_t{3}); }
  std::vector<std::byte> bytes_;
};

}  // namespace

PcapWriter::PcapWriter(const std::string& path) : file_(std::fopen(path.c_str(), "wb")) {
  if (file_ == nullptr) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  Block shb;
  shb.field(std::uint32_t{0x1A2B3C4D});  // byte-order magic
  shb.field(std::uint16_t{1});
  shb.field(std::uint16_t{0});
  shb.field(std::int64_t{-1});  // section length unknown
  shb.option(kShbUserApplication, "volley netem");
  shb.end_options();
  const auto header = shb.finish(kSectionHeader);
  put(header.data(), header.size());
  for (const char* name : {"received", "sent"}) {
    Block idb;
    idb.field(kLinkTypeRaw);
    idb.field(std::uint16_t{0});
    idb.field(std::uint32_t{0});  // no snap length
    idb.option(kIfName, name);
    idb.option(kIfDescription, std::string_view(name) == "received" ? "packets arriving at the emulated link"
                                                                       : "packets leaving the emulated link");
    const char nanoseconds = 9;
    idb.option(kIfTsResolution, std::string_view(&nanoseconds, 1));
    idb.end_options();
    const auto block = idb.finish(kInterfaceDescription);
    put(block.data(), block.size());
  }
}

PcapWriter::~PcapWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void PcapWriter::put(const void* data, std::size_t n) {
  if (std::fwrite(data, 1, n, file_) != n) errors_ += 1;
}

void PcapWriter::write(Interface interface, std::span<const std::byte> ip_packet, std::string_view comment) {
  const auto ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  Block epb;
  epb.field(static_cast<std::uint32_t>(interface));
  epb.field(static_cast<std::uint32_t>(ns >> 32));
  epb.field(static_cast<std::uint32_t>(ns));
  epb.field(static_cast<std::uint32_t>(ip_packet.size()));
  epb.field(static_cast<std::uint32_t>(ip_packet.size()));
  epb.raw(ip_packet);
  if (!comment.empty()) {
    epb.option(kOptComment, comment);
    epb.end_options();
  }
  const auto block = epb.finish(kEnhancedPacket);
  put(block.data(), block.size());
  packets_ += 1;
}

void PcapWriter::flush() {
  if (std::fflush(file_) != 0) errors_ += 1;
}

std::string capture_comment(const Admission& admission) {
  return admission.copies == 0 ? std::string("netem: ") + to_string(admission.drop) : std::string();
}

std::string capture_comment(const Departure& d) {
  std::string c;
  for (auto [set, what] : {std::pair{d.corrupted, "corrupted"}, {d.duplicate, "duplicate"}, {d.reordered, "reordered"}})
    if (set) c += (c.empty() ? "netem: " : ", ") + std::string(what);
  return c;
}

}  // namespace volley::netem

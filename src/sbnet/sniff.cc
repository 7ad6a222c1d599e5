#include "sbnet/sniff.h"

#include <cstdint>

#include "base/strings.h"

namespace warren::sbnet {
namespace {

// A name as a policy compares it: lower case, without a port or a trailing dot. Empty when it
// holds anything a DNS name cannot.
std::string NormalizeHost(std::string_view host) {
  host = base::TrimSpace(host);
  if (!host.empty() && host.front() != '[') {
    if (size_t colon = host.rfind(':'); colon != std::string_view::npos)
      host = host.substr(0, colon);
  }
  if (host.ends_with('.')) host.remove_suffix(1);
  if (host.empty() || host.size() > 253) return "";
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_';
    if (!ok) return "";
  }
  return base::AsciiLower(host);
}

// Bounds-checked big-endian reads over a byte string.
class Reader {
 public:
  Reader() = default;
  explicit Reader(std::string_view b) : b_(b) {}
  bool Skip(size_t n) {
    if (n > b_.size()) return Fail();
    b_.remove_prefix(n);
    return true;
  }
  bool U8(uint32_t& v) { return Int(1, v); }
  bool U16(uint32_t& v) { return Int(2, v); }
  bool U24(uint32_t& v) { return Int(3, v); }
  // A sub-reader over the next `n` bytes.
  bool Take(size_t n, Reader& out) {
    if (n > b_.size()) return Fail();
    out = Reader(b_.substr(0, n));
    b_.remove_prefix(n);
    return true;
  }
  std::string_view rest() const { return b_; }
  bool empty() const { return b_.empty(); }

 private:
  bool Int(size_t n, uint32_t& v) {
    if (n > b_.size()) return Fail();
    v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(b_[i]);
    b_.remove_prefix(n);
    return true;
  }
  static bool Fail() { return false; }
  std::string_view b_;
};

// The server_name extension's host_name in a ClientHello body (after the handshake header).
std::string ServerNameIn(std::string_view hello) {
  Reader r(hello);
  uint32_t len = 0;
  Reader ext;
  // version, random, session id, cipher suites, compression methods, extensions
  if (!r.Skip(2 + 32) || !r.U8(len) || !r.Skip(len) || !r.U16(len) || !r.Skip(len) || !r.U8(len) ||
      !r.Skip(len) || !r.U16(len) || !r.Take(len, ext)) {
    return "";
  }
  while (!ext.empty()) {
    uint32_t type = 0;
    Reader body;
    if (!ext.U16(type) || !ext.U16(len) || !ext.Take(len, body)) return "";
    if (type != 0) continue;  // server_name
    Reader list;
    if (!body.U16(len) || !body.Take(len, list)) return "";
    while (!list.empty()) {
      uint32_t name_type = 0;
      Reader name;
      if (!list.U8(name_type) || !list.U16(len) || !list.Take(len, name)) return "";
      if (name_type == 0) return NormalizeHost(name.rest());  // host_name
    }
    return "";
  }
  return "";
}

}  // namespace

Sniffed SniffTlsServerName(std::string_view bytes) {
  // Record header: handshake (22), version 3.x, length; then the handshake header.
  if (bytes.empty()) return {};
  if (static_cast<uint8_t>(bytes[0]) != 22) return {.complete = true};
  if (bytes.size() >= 2 && static_cast<uint8_t>(bytes[1]) != 3) return {.complete = true};
  if (bytes.size() < 5) return {};
  Reader header(bytes.substr(3, 2));
  uint32_t record_len = 0;
  header.U16(record_len);
  if (bytes.size() < 5 + record_len) return {};
  Reader record(bytes.substr(5, record_len));
  uint32_t type = 0;
  uint32_t hello_len = 0;
  if (!record.U8(type) || type != 1 || !record.U24(hello_len)) return {.complete = true};
  // A ClientHello longer than its first record is read as far as that record goes.
  std::string_view hello = record.rest().substr(0, hello_len);
  return {.complete = true, .host = ServerNameIn(hello)};
}

Sniffed SniffHttpHost(std::string_view bytes) {
  // The request line's method must be a token; anything else is not HTTP (judged at once).
  size_t sp = bytes.find(' ');
  std::string_view method = bytes.substr(0, std::min(sp, bytes.size()));
  for (char c : method) {
    if (c < 'A' || c > 'Z') return {.complete = true};
  }
  if (method.size() > 16) return {.complete = true};
  size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return {};
  std::string_view head = bytes.substr(0, end + 2);
  size_t line_end = head.find("\r\n");
  head.remove_prefix(line_end + 2);
  while (!head.empty()) {
    size_t eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (base::EqualsIgnoreCase(base::TrimSpace(line.substr(0, colon)), "host")) {
      return {.complete = true, .host = NormalizeHost(line.substr(colon + 1))};
    }
  }
  return {.complete = true};
}

}  // namespace warren::sbnet

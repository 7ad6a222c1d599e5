#include "net/http_wire.h"

#include <fmt/format.h>

#include <ctime>

#include "base/strings.h"

namespace warren::net {

std::string_view HttpDateNow() {
  thread_local time_t cached_second = -1;
  thread_local char buf[64];
  thread_local size_t len = 0;
  time_t now = ::time(nullptr);
  if (now != cached_second) {
    struct tm tm;
    gmtime_r(&now, &tm);
    len = strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second = now;
  }
  return std::string_view(buf, len);
}

bool IsSaneRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == ':' || c == '+' || c == '/' || c == '=';
    if (!ok) return false;
  }
  return true;
}

std::string ErrorJson(int status, std::string_view message) {
  std::string out = fmt::format("{{\"code\":{},\"message\":\"", status);
  for (unsigned char c : message) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += "\"}";
  return out;
}

bool IsHopByHopHeader(std::string_view name) {
  for (std::string_view h :
       {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding",
        "Upgrade", "Proxy-Authenticate", "Proxy-Authorization"}) {
    if (base::EqualsIgnoreCase(name, h)) return true;
  }
  return false;
}

bool IsWritableHeader(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    // RFC 9110 token characters.
    bool tchar =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    if (!tchar) return false;
  }
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

namespace {

// `fields` is any range of (name, value) pairs: Headers::fields() or HeaderRefs.
template <typename Fields>
void AppendHeaders(std::string& out, const Fields& fields, const Framing& framing) {
  bool has_date = false;
  bool has_request_id = false;
  for (const auto& [name, value] : fields) {
    if (base::EqualsIgnoreCase(name, "Content-Length") ||
        base::EqualsIgnoreCase(name, "Transfer-Encoding") ||
        base::EqualsIgnoreCase(name, "Connection")) {
      continue;
    }
    if (!IsWritableHeader(name, value)) continue;
    if (!has_date && base::EqualsIgnoreCase(name, "Date")) has_date = true;
    if (!has_request_id && base::EqualsIgnoreCase(name, "X-Request-ID")) has_request_id = true;
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
  }
  if (framing.date && !has_date) {
    out.append("Date: ");
    out.append(HttpDateNow());
    out.append("\r\n");
  }
  if (!framing.request_id.empty() && !has_request_id) {
    out.append("X-Request-ID: ");
    out.append(framing.request_id);
    out.append("\r\n");
  }
  if (framing.content_length) {
    fmt::format_to(std::back_inserter(out), "Content-Length: {}\r\n", *framing.content_length);
  }
  if (framing.chunked) out.append("Transfer-Encoding: chunked\r\n");
  if (!framing.connection.empty()) {
    out.append("Connection: ");
    out.append(framing.connection);
    out.append("\r\n");
  }
  out.append("\r\n");
}

void AppendStatusLine(std::string& out, int status) {
  fmt::format_to(std::back_inserter(out), "HTTP/1.1 {} {}\r\n", status, StatusReason(status));
}

void AppendRequestLine(std::string& out, std::string_view method, std::string_view target) {
  out.append(method);
  out.push_back(' ');
  out.append(target);
  out.append(" HTTP/1.1\r\n");
}

}  // namespace

void AppendResponseHead(std::string& out, int status, const Headers& headers,
                        const Framing& framing) {
  AppendStatusLine(out, status);
  AppendHeaders(out, headers.fields(), framing);
}

void AppendResponseHead(std::string& out, int status, std::span<const HeaderRef> headers,
                        const Framing& framing) {
  AppendStatusLine(out, status);
  AppendHeaders(out, headers, framing);
}

void AppendRequestHead(std::string& out, std::string_view method, std::string_view target,
                       const Headers& headers, const Framing& framing) {
  AppendRequestLine(out, method, target);
  AppendHeaders(out, headers.fields(), framing);
}

void AppendRequestHead(std::string& out, std::string_view method, std::string_view target,
                       std::span<const HeaderRef> headers, const Framing& framing) {
  AppendRequestLine(out, method, target);
  AppendHeaders(out, headers, framing);
}

void AppendChunkHeader(std::string& out, size_t size) {
  fmt::format_to(std::back_inserter(out), "{:x}\r\n", size);
}

}  // namespace warren::net

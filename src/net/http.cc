#include "net/http.h"

#include <algorithm>
#include <array>

#include "base/strings.h"

namespace warren::net {

std::optional<std::string_view> Headers::Get(std::string_view name) const {
  for (const auto& [key, value] : fields_) {
    if (base::EqualsIgnoreCase(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::vector<std::string_view> Headers::GetAll(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto& [key, value] : fields_) {
    if (base::EqualsIgnoreCase(key, name)) out.emplace_back(value);
  }
  return out;
}

void Headers::Set(std::string_view name, std::string_view value) {
  Remove(name);
  Add(name, value);
}

void Headers::Add(std::string_view name, std::string_view value) {
  fields_.emplace_back(std::string(name), std::string(value));
}

size_t Headers::Count(std::string_view name) const {
  return std::count_if(fields_.begin(), fields_.end(),
                       [&](const auto& f) { return base::EqualsIgnoreCase(f.first, name); });
}

void Headers::Remove(std::string_view name) {
  std::erase_if(fields_, [&](const auto& f) { return base::EqualsIgnoreCase(f.first, name); });
}

namespace {

// Decodes one query component; a malformed escape keeps the component verbatim (the header
// promises that rather than dropping the parameter).
std::string DecodeQueryComponent(std::string_view s) {
  if (auto decoded = base::PercentDecode(s, /*plus_is_space=*/true)) return *std::move(decoded);
  return std::string(s);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Request::QueryParams() const {
  std::vector<std::pair<std::string, std::string>> out;
  std::string_view rest = raw_query;
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view part = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      out.emplace_back(DecodeQueryComponent(part), std::string());
    } else {
      out.emplace_back(DecodeQueryComponent(part.substr(0, eq)),
                       DecodeQueryComponent(part.substr(eq + 1)));
    }
  }
  return out;
}

std::optional<std::string> Request::Query(std::string_view name) const {
  for (auto& [key, value] : QueryParams()) {
    if (key == name) return std::move(value);
  }
  return std::nullopt;
}

std::string_view Request::PathParam(std::string_view name) const {
  auto it = path_params.find(name);
  return it == path_params.end() ? std::string_view() : std::string_view(it->second);
}

Response Response::Json(int status, std::string json_body) {
  Response r;
  r.status = status;
  r.headers.Set("Content-Type", "application/json");
  r.body = std::move(json_body);
  return r;
}

Response Response::Text(int status, std::string text_body) {
  Response r;
  r.status = status;
  r.headers.Set("Content-Type", "text/plain; charset=utf-8");
  r.body = std::move(text_body);
  return r;
}

Response Response::Empty(int status) {
  Response r;
  r.status = status;
  return r;
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Content";
    case 426:
      return "Upgrade Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace warren::net

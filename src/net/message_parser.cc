#include "net/message_parser.h"

#include <fmt/format.h>

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

#include "base/strings.h"

namespace warren::net {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using beast::error_code;

namespace {

// Beast reports what went wrong as an error_code; turn it into the message a client sees.
Status ParseError(const error_code& ec, std::string_view what, size_t header_limit,
                  std::optional<uint64_t> body_limit) {
  if (ec == http::error::header_limit) {
    return ResourceExhaustedError(
        fmt::format("{} head exceeds the limit of {} bytes", what, header_limit));
  }
  if (ec == http::error::body_limit) {
    return ResourceExhaustedError(
        fmt::format("{} body exceeds the limit of {} bytes", what, body_limit.value_or(0)));
  }
  if (ec == http::error::partial_message) {
    return UnavailableError(fmt::format("connection closed in the middle of the {}", what));
  }
  return InvalidArgumentError(fmt::format("malformed {}: {}", what, ec.message()));
}

std::string_view View(beast::string_view s) { return std::string_view(s.data(), s.size()); }

// Room for this many fields is made at once, not by doubling from one.
constexpr size_t kUsualFieldCount = 8;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Requests

namespace {

class BeastRequestParser final : public http::basic_parser<true> {
 public:
  explicit BeastRequestParser(size_t max_header_bytes) {
    header_limit(static_cast<std::uint32_t>(std::min<size_t>(max_header_bytes, UINT32_MAX)));
    // The route decides the body limit once the head is in.
    body_limit(boost::none);
    eager(false);
    head.headers.Reserve(kUsualFieldCount);
  }

  RequestHead head;
  std::string* sink = nullptr;
  uint64_t body_bytes = 0;
  // Our own validation failure, reported instead of Beast's generic code.
  Status own_error;

 private:
  void on_request_impl(http::verb, beast::string_view method, beast::string_view target,
                       int version, error_code& ec) override {
    if (version != 10 && version != 11) {
      own_error = InvalidArgumentError("unsupported HTTP version (only 1.0 and 1.1)");
      ec = http::error::bad_version;
      return;
    }
    head.method.assign(method.data(), method.size());
    head.target.assign(target.data(), target.size());
    head.version = version;
  }

  void on_response_impl(int, beast::string_view, int, error_code&) override {}

  void on_field_impl(http::field, beast::string_view name, beast::string_view value,
                     error_code&) override {
    head.headers.Add(View(name), View(value));
  }

  void on_header_impl(error_code& ec) override {
    head.keep_alive = keep_alive();
    head.chunked = chunked();
    if (auto len = content_length()) head.content_length = *len;
    head.upgrade = upgrade();
    size_t hosts = head.headers.Count("Host");
    if (head.version == 11 && hosts != 1) {
      own_error = InvalidArgumentError(hosts == 0 ? "HTTP/1.1 request without a Host header"
                                                  : "request with more than one Host header");
      ec = http::error::bad_field;
      return;
    }
    if (head.headers.Has("Transfer-Encoding") && !head.chunked) {
      own_error = InvalidArgumentError("unsupported Transfer-Encoding (only chunked)");
      ec = http::error::bad_transfer_encoding;
      return;
    }
    if (auto expect = head.headers.Get("Expect")) {
      if (!base::EqualsIgnoreCase(base::TrimSpace(*expect), "100-continue")) {
        own_error = InvalidArgumentError("unsupported Expect (only 100-continue)");
        ec = http::error::bad_value;
        return;
      }
      head.expect_continue = true;
    }
  }

  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}

  std::size_t on_body_impl(beast::string_view body, error_code&) override {
    if (sink) sink->append(body.data(), body.size());
    body_bytes += body.size();
    return body.size();
  }

  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}

  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
    if (sink) sink->append(body.data(), body.size());
    body_bytes += body.size();
    return body.size();
  }

  void on_finish_impl(error_code&) override {}
};

}  // namespace

class RequestParser::Impl {
 public:
  explicit Impl(size_t max_header_bytes) : max_header_bytes_(max_header_bytes) { Reset(); }

  void Reset() {
    parser_.emplace(max_header_bytes_);
    body_limit_.reset();
  }

  Result<size_t> Put(std::string_view data, std::string* sink) {
    if (data.empty()) return size_t{0};
    error_code ec;
    parser_->sink = sink;
    size_t n = parser_->put(boost::asio::const_buffer(data.data(), data.size()), ec);
    parser_->sink = nullptr;
    if (ec == http::error::need_more) return n;
    if (ec) {
      if (!parser_->own_error.ok()) return parser_->own_error;
      return ParseError(ec, "request", max_header_bytes_, body_limit_);
    }
    return n;
  }

  size_t max_header_bytes_;
  std::optional<BeastRequestParser> parser_;
  std::optional<uint64_t> body_limit_;
};

RequestParser::RequestParser(size_t max_header_bytes)
    : impl_(std::make_unique<Impl>(max_header_bytes)) {}
RequestParser::~RequestParser() = default;

void RequestParser::Reset() { impl_->Reset(); }

Result<size_t> RequestParser::ParseHead(std::string_view data) {
  if (head_done()) return size_t{0};
  return impl_->Put(data, nullptr);
}

bool RequestParser::head_done() const { return impl_->parser_->is_header_done(); }
const RequestHead& RequestParser::head() const { return impl_->parser_->head; }
RequestHead& RequestParser::mutable_head() { return impl_->parser_->head; }

void RequestParser::SetBodyLimit(uint64_t max_bytes) {
  impl_->body_limit_ = max_bytes;
  impl_->parser_->body_limit(max_bytes);
  impl_->parser_->eager(true);
}

Result<size_t> RequestParser::ParseBody(std::string_view data, std::string& out) {
  if (body_done()) return size_t{0};
  impl_->parser_->eager(true);
  return impl_->Put(data, &out);
}

bool RequestParser::body_done() const { return impl_->parser_->is_done(); }
uint64_t RequestParser::body_bytes() const { return impl_->parser_->body_bytes; }

// ---------------------------------------------------------------------------------------------
// Responses

namespace {

class BeastResponseParser final : public http::basic_parser<false> {
 public:
  BeastResponseParser(size_t max_header_bytes, bool head_request) {
    header_limit(static_cast<std::uint32_t>(std::min<size_t>(max_header_bytes, UINT32_MAX)));
    body_limit(boost::none);
    eager(true);
    skip(head_request);
  }

  ResponseHead head;
  std::string* sink = nullptr;

 private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                       error_code&) override {}

  void on_response_impl(int code, beast::string_view, int version, error_code&) override {
    head.status = code;
    head.version = version;
  }

  void on_field_impl(http::field, beast::string_view name, beast::string_view value,
                     error_code&) override {
    head.headers.Add(View(name), View(value));
  }

  void on_header_impl(error_code&) override {
    head.keep_alive = keep_alive();
    head.chunked = chunked();
    if (auto len = content_length()) head.content_length = *len;
    head.upgrade = head.status == 101;
  }

  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}

  std::size_t on_body_impl(beast::string_view body, error_code&) override {
    if (sink) sink->append(body.data(), body.size());
    return body.size();
  }

  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}

  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
    if (sink) sink->append(body.data(), body.size());
    return body.size();
  }

  void on_finish_impl(error_code&) override {}
};

}  // namespace

class ResponseParser::Impl {
 public:
  size_t max_header_bytes;
  std::optional<uint64_t> body_limit;
  std::optional<BeastResponseParser> parser;
};

ResponseParser::ResponseParser(size_t max_header_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->max_header_bytes = max_header_bytes;
  Reset(false);
}
ResponseParser::~ResponseParser() = default;

void ResponseParser::Reset(bool head_request) {
  // The next response's fields go where the last one's were.
  Headers storage;
  if (impl_->parser) {
    storage = std::move(impl_->parser->head.headers);
    storage.Clear();
  }
  impl_->parser.emplace(impl_->max_header_bytes, head_request);
  impl_->parser->head.headers = std::move(storage);
  if (impl_->body_limit) impl_->parser->body_limit(*impl_->body_limit);
}

void ResponseParser::SetBodyLimit(std::optional<uint64_t> max_bytes) {
  impl_->body_limit = max_bytes;
  if (max_bytes) {
    impl_->parser->body_limit(*max_bytes);
  } else {
    impl_->parser->body_limit(boost::none);
  }
}

Result<size_t> ResponseParser::Parse(std::string_view data, std::string& out) {
  if (data.empty() || done()) return size_t{0};
  error_code ec;
  impl_->parser->sink = &out;
  size_t n = impl_->parser->put(boost::asio::const_buffer(data.data(), data.size()), ec);
  impl_->parser->sink = nullptr;
  if (ec == http::error::need_more) return n;
  if (ec) return ParseError(ec, "response", impl_->max_header_bytes, impl_->body_limit);
  return n;
}

Status ResponseParser::ParseEof() {
  if (!impl_->parser->got_some()) {
    return UnavailableError("connection closed before any byte of the response");
  }
  error_code ec;
  impl_->parser->put_eof(ec);
  if (ec) return ParseError(ec, "response", impl_->max_header_bytes, impl_->body_limit);
  return Status::Ok();
}

bool ResponseParser::head_done() const { return impl_->parser->is_header_done(); }
bool ResponseParser::done() const { return impl_->parser->is_done(); }
bool ResponseParser::body_until_eof() const { return impl_->parser->need_eof(); }
const ResponseHead& ResponseParser::head() const { return impl_->parser->head; }

}  // namespace warren::net

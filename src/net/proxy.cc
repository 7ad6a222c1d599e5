// Responder::Proxy: relays a request to an upstream socket the handler connected, and the
// response back, piece by piece as it arrives. Upgrades (WebSocket) become a byte tunnel.

// GCC 12 misreads Asio's coroutine frame allocator (awaitable_frame's operator new/delete) as
// a mismatched pair; the pairing is correct and the warning a known false positive. Kept in the
// source because other targets (the static warren-envd) compile this file too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/write.hpp>
#include <span>
#include <stdexcept>

#include "base/scope_guard.h"
#include "base/strings.h"
#include "net/http_wire.h"
#include "net/internal/session.h"

namespace warren::net::internal {

namespace {

// Field names the sender listed in Connection are hop-by-hop for this message too.
std::vector<std::string> ConnectionTokens(const Headers& headers) {
  std::vector<std::string> tokens;
  for (std::string_view value : headers.GetAll("Connection")) {
    for (std::string_view token : base::SplitNonEmpty(value, ',')) {
      tokens.push_back(base::AsciiLower(token));
    }
  }
  return tokens;
}

bool Listed(const std::vector<std::string>& lowered, std::string_view name) {
  for (const std::string& t : lowered) {
    if (base::EqualsIgnoreCase(t, name)) return true;
  }
  return false;
}

// Appends to `out` the end-to-end fields of `in` (hop-by-hop ones and the framing we redo are
// dropped), except those `skip` names. They borrow from `in`.
template <typename Skip>
void AppendEndToEnd(const Headers& in, std::vector<HeaderRef>& out, Skip skip) {
  std::vector<std::string> listed = ConnectionTokens(in);
  for (const auto& [name, value] : in.fields()) {
    if (IsHopByHopHeader(name) || Listed(listed, name) ||
        base::EqualsIgnoreCase(name, "Content-Length") || skip(name)) {
      continue;
    }
    out.emplace_back(name, value);
  }
}

// The few pieces one write of a relay sends (a head, a chunk's framing and data), gathered
// without allocating.
class BufferList {
 public:
  void push_back(asio::const_buffer b) {
    if (size_ == pieces_.size()) throw std::logic_error("BufferList is full");
    pieces_[size_++] = b;
  }
  void clear() { size_ = 0; }
  bool empty() const { return size_ == 0; }
  std::span<const asio::const_buffer> span() const { return {pieces_.data(), size_}; }

 private:
  std::array<asio::const_buffer, 4> pieces_;
  size_t size_ = 0;
};

// Copies bytes one way until EOF (passed on as a half-close) or an error (which ends the
// whole relay, named as `read_step` or `write_step`).
template <typename From, typename To>
asio::awaitable<void> CopyBytes(From& from, To& to, Session& session, RelayStep read_step,
                                RelayStep write_step) {
  std::vector<char> buf(kReadChunk);
  for (;;) {
    auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), kNoThrow);
    if (ec == asio::error::eof || (!ec && n == 0)) {
      error_code ignored;
      to.shutdown(asio::socket_base::shutdown_send, ignored);
      co_return;
    }
    if (ec) {
      session.RelayFailed(read_step, ec.message());
      session.Close();
      co_return;
    }
    auto [wec, written] = co_await asio::async_write(to, asio::buffer(buf.data(), n), kNoThrow);
    if (wec) {
      session.RelayFailed(write_step, wec.message());
      session.Close();
      co_return;
    }
    session.TouchRelay();
  }
}

}  // namespace

void Session::AbortProxy(const std::shared_ptr<Exchange>& ex) {
  if (ex != exchange_) return;
  switch (relay_phase_) {
    case RelayPhase::kNone:
    case RelayPhase::kAbortAnswer:
      return;
    case RelayPhase::kComplete:
      server_.log->debug("request_id={} relay abort ignored: the response is complete",
                         request_id_);
      return;
    case RelayPhase::kRequest:
      if (abort_response_) {
        server_.log->debug("request_id={} relay aborted before the response", request_id_);
        abort_answer_ = abort_response_();
        RelayFailed(RelayStep::kAborted,
                    fmt::format("aborted before the upstream's response; answered {}",
                                abort_answer_->status));
        // RunProxy answers once the upstream operation it waits on returns, cancelled here.
        relay_phase_ = RelayPhase::kAbortAnswer;
        error_code ignored;
        if (upstream_) upstream_->cancel(ignored);
        return;
      }
      break;
    case RelayPhase::kResponse:
      break;
  }
  server_.log->debug("request_id={} relay aborted", request_id_);
  RelayFailed(RelayStep::kAborted, relay_phase_ == RelayPhase::kResponse
                                       ? "aborted mid-response; the client connection was cut"
                                       : "aborted before the upstream's response; cut");
  Close();
}

void Session::TouchRelay() { SetRelayDeadline(relay_idle_); }

void Session::RelayFailed(RelayStep step, std::string_view cause) {
  if (relay_phase_ == RelayPhase::kNone || !relay_outcome_.ok()) return;
  // Once the response is complete, only its last bytes not reaching the client is a failure.
  if (relay_phase_ == RelayPhase::kComplete && step != RelayStep::kWriteResponse &&
      step != RelayStep::kTimedOut) {
    return;
  }
  relay_outcome_.failed_step = step;
  relay_outcome_.cause = std::string(cause);
}

bool Session::AdoptUpstream(base::UniqueFd upstream) {
  // Whatever its family: TCP inside a sandbox, or a Unix socket.
  sockaddr_storage addr{};
  socklen_t addr_len = sizeof(addr);
  if (!upstream ||
      ::getsockname(upstream.get(), reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) {
    return false;
  }
  error_code ec;
  upstream_.emplace(loop_.ioc);
  upstream_->assign(asio::generic::stream_protocol(addr.ss_family, SOCK_STREAM), upstream.get(),
                    ec);
  if (ec) {
    upstream_.reset();
    return false;
  }
  int fd = upstream.release();  // the asio socket owns it now
  if (addr.ss_family == AF_INET || addr.ss_family == AF_INET6) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return true;
}

asio::awaitable<void> Session::RunProxy(ProxyJob job) {
  std::function<void(const RelayOutcome&)> on_done = std::move(job.options.on_done);
  auto finish = base::ScopeExit([&] {
    RelayOutcome outcome = std::exchange(relay_outcome_, RelayOutcome{});
    outcome.response_started =
        relay_phase_ == RelayPhase::kResponse || relay_phase_ == RelayPhase::kComplete;
    relay_phase_ = RelayPhase::kNone;
    abort_response_ = nullptr;
    abort_answer_.reset();
    ClearRelayDeadline();
    error_code ignored;
    if (upstream_) upstream_->close(ignored);
    if (on_done) on_done(outcome);
  });
  relay_phase_ = RelayPhase::kRequest;
  upload_ok_ = true;
  abort_response_ = std::move(job.options.abort_response);
  relay_idle_ = job.options.idle_timeout;
  bool upload_pending = !job.body_buffered && !body_complete_;
  // The connection is reusable after the response only if the body was relayed in full.
  auto close_after_error = [&] { return upload_running_ || !body_complete_; };

  if (job.handle->aborted()) {
    RelayFailed(RelayStep::kAborted, "aborted before the relay began");
    co_await AnswerAbortedRelay(close_after_error());
    co_return;
  }
  if (exchange_->body_pipe && exchange_->body_pipe->started()) {
    RelayFailed(RelayStep::kSendRequest, "the handler read the request body before Proxy");
    co_await SendError(502, "the handler read the request body before Proxy", true);
    co_return;
  }
  body_taken_by_proxy_ = true;

  if (job.pooled) {
    // Already registered with this loop and set up when it was first adopted.
    upstream_.emplace(std::move(*job.pooled));
  } else if (!AdoptUpstream(std::move(job.upstream))) {
    RelayFailed(RelayStep::kUpstream, "the upstream socket is not usable");
    co_await SendError(502, "the upstream socket is not usable", close_after_error());
    co_return;
  }
  if (job.options.raw_upgrade) {
    co_await AnswerRawUpgrade(job.headers);
    co_return;
  }
  const bool reusable_upstream = job.options.pool_key || job.options.on_upstream_idle;

  // The request head as the upstream sees it.
  const HeadInfo& info = exchange_->info;
  std::vector<HeaderRef>& forwarded = head_fields_;
  forwarded.clear();
  const Headers& set_headers = job.options.set_request_headers;
  AppendEndToEnd(job.headers, forwarded, [&](std::string_view name) {
    if (base::EqualsIgnoreCase(name, "Expect")) return true;  // we answer 100-continue ourselves
    for (const std::string& removed : job.options.remove_request_headers) {
      if (base::EqualsIgnoreCase(name, removed)) return true;
    }
    return set_headers.Has(name);
  });
  for (const auto& [name, value] : set_headers.fields()) forwarded.emplace_back(name, value);
  Framing framing;
  framing.date = false;
  framing.request_id = request_id_;  // unless the client sent one
  if (info.upgrade) {
    if (auto upgrade = job.headers.Get("Upgrade")) forwarded.emplace_back("Upgrade", *upgrade);
    framing.connection = "Upgrade";
  } else if (!reusable_upstream) {
    // The upstream connection serves this one request.
    framing.connection = "close";
  }
  if (job.body_buffered) {
    if (!job.body.empty() || info.content_length) framing.content_length = job.body.size();
  } else if (info.chunked) {
    framing.chunked = true;
  } else if (info.content_length) {
    framing.content_length = *info.content_length;
  }
  out_.clear();
  AppendRequestHead(out_, job.method, job.target, forwarded, framing);
  {
    BufferList buffers;
    buffers.push_back(asio::buffer(out_));
    if (job.body_buffered && !job.body.empty()) buffers.push_back(asio::buffer(job.body));
    TouchRelay();
    auto [wec, n] = co_await asio::async_write(*upstream_, buffers.span(), kNoThrow);
    if (closed_) co_return;
    if (relay_phase_ == RelayPhase::kAbortAnswer) {
      co_await AnswerAbortedRelay(close_after_error());
      co_return;
    }
    if (wec) {
      std::string message = fmt::format("writing to the upstream failed: {}", wec.message());
      RelayFailed(RelayStep::kSendRequest, wec.message());
      co_await SendError(502, message, close_after_error());
      co_return;
    }
  }
  if (upload_pending) {
    if (info.expect_continue && !co_await Write("HTTP/1.1 100 Continue\r\n\r\n")) co_return;
    upload_running_ = true;
    asio::co_spawn(loop_.ioc, Upload(shared_from_this()), LogCoroutineException);
  } else if (info.upgrade) {
    StartClientWatch();  // the tunnel reads the socket itself
  } else {
    StartClientRead();
  }

  // The response, relayed as it arrives.
  if (!relay_parser_) relay_parser_.emplace(opts().max_header_bytes);
  ResponseParser& response = *relay_parser_;
  response.Reset(head_request_);
  InputBuffer upstream_in(loop_.TakeRelayBuffer());
  auto keep_buffer =
      base::ScopeExit([&] { loop_.GiveBackRelayBuffer(upstream_in.ReleaseStorage()); });
  std::string body;
  bool head_sent = false;
  bool chunked_out = false;
  BufferList buffers;
  for (;;) {
    body.clear();
    Result<size_t> n = response.Parse(upstream_in.view(), body);
    if (!n.ok()) {
      std::string message = fmt::format("the upstream's {}", n.status().message());
      RelayFailed(RelayStep::kReadResponse, message);
      if (head_sent) {
        Close();
      } else {
        co_await SendError(502, message, close_after_error());
      }
      co_return;
    }
    upstream_in.consume(*n);
    out_.clear();
    if (response.head_done() && !head_sent) {
      const ResponseHead& head = response.head();
      if (head.status >= 100 && head.status < 200 && head.status != 101) {
        response.Reset(head_request_);  // an interim response: the real one follows
        continue;
      }
      std::vector<HeaderRef>& headers = head_fields_;
      headers.clear();
      AppendEndToEnd(head.headers, headers, [](std::string_view) { return false; });
      Framing f;
      f.request_id = request_id_;
      if (head.status == 101) {
        if (!info.upgrade) {
          RelayFailed(RelayStep::kReadResponse, "the upstream switched protocols unasked");
          co_await SendError(502, "the upstream switched protocols unasked", true);
          co_return;
        }
        if (auto upgrade = head.headers.Get("Upgrade")) headers.emplace_back("Upgrade", *upgrade);
        f.connection = "Upgrade";
        AppendResponseHead(out_, head.status, headers, f);
        relay_phase_ = RelayPhase::kResponse;
        if (!co_await Write(out_)) co_return;
        co_await Tunnel(upstream_in);
        co_return;
      }
      bool no_body = head_request_ || head.status == 204 || head.status == 304;
      if (no_body) {
        if (head.status != 204) f.content_length = head.content_length;
      } else if (head.content_length) {
        f.content_length = head.content_length;
      } else if (http10_) {
        keep_alive_ = false;  // the close ends the body
      } else {
        chunked_out = true;
        f.chunked = true;
      }
      if (server_.stopping.load()) keep_alive_ = false;
      // The client is still sending its body: this answer ends the connection, which lingers
      // to take the rest (a next request on it would meet the close).
      if (!job.body_buffered && !body_complete_) keep_alive_ = false;
      f.connection = ConnectionValue();
      AppendResponseHead(out_, head.status, headers, f);
      head_sent = true;
      relay_phase_ = RelayPhase::kResponse;
    }
    if (chunked_out && !body.empty()) AppendChunkHeader(out_, body.size());
    bool last = response.done();
    if (last) relay_phase_ = RelayPhase::kComplete;
    buffers.clear();
    if (!out_.empty()) buffers.push_back(asio::buffer(out_));
    if (!body.empty()) {
      buffers.push_back(asio::buffer(body));
      if (chunked_out) buffers.push_back(asio::buffer(kChunkEnd));
    }
    if (last && chunked_out) buffers.push_back(asio::buffer(kLastChunk));
    // The upstream's part is over: hand its connection back before the client sees the end of
    // the response, so a client's next request already finds it idle. Only when nothing of
    // this exchange can still arrive on it or be owed to it.
    if (last && reusable_upstream && response.head().keep_alive && !response.body_until_eof() &&
        upstream_in.empty() && !info.upgrade && !upload_running_ && upload_ok_ &&
        (job.body_buffered || body_complete_)) {
      if (job.options.pool_key) {
        loop_.upstreams.Put(*job.options.pool_key, std::move(*upstream_),
                            job.options.pool_idle_timeout);
        upstream_.reset();
      } else {
        error_code release_ec;
        int released = upstream_->release(release_ec);
        upstream_.reset();
        if (!release_ec && released >= 0) job.options.on_upstream_idle(base::UniqueFd(released));
      }
    }
    if (!buffers.empty()) {
      auto [wec, written] = co_await asio::async_write(socket_, buffers.span(), kNoThrow);
      if (wec || closed_) {
        if (wec) RelayFailed(RelayStep::kWriteResponse, wec.message());
        Close();
        co_return;
      }
      TouchRelay();
    }
    if (last) break;
    if (relay_phase_ == RelayPhase::kAbortAnswer) {
      co_await AnswerAbortedRelay(close_after_error());
      co_return;
    }
    auto [rec, r] = co_await upstream_->async_read_some(upstream_in.prepare(kReadChunk), kNoThrow);
    if (closed_) co_return;
    if (relay_phase_ == RelayPhase::kAbortAnswer) {
      co_await AnswerAbortedRelay(close_after_error());
      co_return;
    }
    if (rec || r == 0) {
      if (!head_sent) {
        std::string message =
            rec && rec != asio::error::eof
                ? fmt::format("reading from the upstream failed: {}", rec.message())
                : std::string("the upstream closed the connection before responding");
        RelayFailed(RelayStep::kReadResponse, message);
        co_await SendError(502, message, close_after_error());
        co_return;
      }
      if ((rec && rec != asio::error::eof) || !response.ParseEof().ok()) {
        RelayFailed(RelayStep::kReadResponse,
                    rec && rec != asio::error::eof
                        ? fmt::format("the upstream's response broke off: {}", rec.message())
                        : std::string("the upstream closed the connection mid-response"));
        Close();  // a truncated upstream body stays truncated for the client
        co_return;
      }
      relay_phase_ = RelayPhase::kComplete;
      if (chunked_out) {
        if (!co_await Write(kLastChunk)) co_return;
      }
      break;
    }
    upstream_in.commit(r);
    TouchRelay();
  }
  StopClientWatch();
  if (upload_running_) keep_alive_ = false;
  if (!keep_alive_) co_await LingeringClose();
}

asio::awaitable<void> Session::AnswerAbortedRelay(bool close) {
  if (!abort_answer_ && abort_response_) abort_answer_ = abort_response_();
  if (!abort_answer_) {
    Close();
    co_return;
  }
  Response response = std::move(*abort_answer_);
  abort_answer_.reset();
  co_await SendClosing(std::move(response), close);
}

asio::awaitable<void> Session::Upload(std::shared_ptr<Session> self) {
  auto done = base::ScopeExit([&] {
    self->upload_running_ = false;
    // An upgrade with a body is refused by Tunnel, so no tunnel reads the socket after this.
    if (self->body_complete_ && self->relay_phase_ != RelayPhase::kNone) self->StartClientRead();
    self->Signal();
  });
  const bool chunked = self->exchange_->info.chunked;
  std::string piece;
  std::string frame;
  for (;;) {
    piece.clear();
    Result<size_t> n = self->parser_.ParseBody(self->in_.view(), piece);
    if (!n.ok()) {
      // A malformed or oversized body cannot be relayed coherently: end the relay.
      self->server_.log->debug("request_id={} relay upload stopped: {}", self->request_id_,
                               n.status().message());
      self->RelayFailed(RelayStep::kRequestBody, n.status().message());
      self->Close();
      co_return;
    }
    self->in_.consume(*n);
    bool done_body = self->parser_.body_done();
    if (!piece.empty() || (done_body && chunked)) {
      frame.clear();
      BufferList buffers;
      if (chunked && !piece.empty()) {
        AppendChunkHeader(frame, piece.size());
        buffers.push_back(asio::buffer(frame));
        buffers.push_back(asio::buffer(piece));
        buffers.push_back(asio::buffer(kChunkEnd));
      } else if (!piece.empty()) {
        buffers.push_back(asio::buffer(piece));
      }
      if (done_body && chunked) buffers.push_back(asio::buffer(kLastChunk));
      auto [ec, w] = co_await asio::async_write(*self->upstream_, buffers.span(), kNoThrow);
      if (self->closed_) co_return;
      if (ec) {
        // The upstream stopped reading; its response may still explain why.
        self->upload_ok_ = false;
        co_return;
      }
      self->TouchRelay();
    }
    if (done_body) {
      self->body_complete_ = true;
      co_return;
    }
    if (self->lingering_) co_return;  // the answer is out: LingeringClose drains the rest
    auto [ec, r] = co_await self->socket_.async_read_some(self->in_.prepare(kReadChunk), kNoThrow);
    if (self->closed_) co_return;
    if (ec || r == 0) {
      self->RelayFailed(RelayStep::kClientGone, "the client left in the middle of its body");
      self->Close();
      co_return;
    }
    self->in_.commit(r);
    self->TouchRelay();
  }
}

asio::awaitable<void> Session::AnswerRawUpgrade(const Headers& request_headers) {
  if (!exchange_->info.upgrade) {
    RelayFailed(RelayStep::kSendRequest, "a raw tunnel needs an Upgrade request");
    co_await SendError(400, "this route answers only an Upgrade request", true);
    co_return;
  }
  Headers headers;
  if (auto upgrade = request_headers.Get("Upgrade")) headers.Set("Upgrade", *upgrade);
  Framing f;
  f.request_id = request_id_;
  f.connection = "Upgrade";
  out_.clear();
  AppendResponseHead(out_, 101, headers, f);
  relay_phase_ = RelayPhase::kResponse;
  if (!co_await Write(out_)) co_return;
  InputBuffer nothing_yet;
  co_await Tunnel(nothing_yet);
}

asio::awaitable<void> Session::Tunnel(InputBuffer& upstream_in) {
  StopClientWatch();
  if (upload_running_) {
    // An upgrade request with a body is not a thing; refuse to mix the two.
    RelayFailed(RelayStep::kRequestBody, "an upgrade request with a body");
    Close();
    co_return;
  }
  // Bytes that came with the 101 or right after the request belong to the tunnel.
  if (!upstream_in.empty()) {
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(upstream_in.view()), kNoThrow);
    if (ec || closed_) {
      if (ec) RelayFailed(RelayStep::kWriteResponse, ec.message());
      Close();
      co_return;
    }
    upstream_in.consume(upstream_in.size());
  }
  if (!in_.empty()) {
    auto [ec, n] = co_await asio::async_write(*upstream_, asio::buffer(in_.view()), kNoThrow);
    if (ec || closed_) {
      if (ec) RelayFailed(RelayStep::kSendRequest, ec.message());
      Close();
      co_return;
    }
    in_.consume(in_.size());
  }
  TouchRelay();
  pump_running_ = true;
  // Class-type temporaries inside co_await expressions trip GCC 12 coroutine bugs: use locals.
  std::shared_ptr<Session> self = shared_from_this();
  asio::co_spawn(loop_.ioc, Pump(self, /*to_upstream=*/true), LogCoroutineException);
  co_await Pump(self, /*to_upstream=*/false);
  while (pump_running_ && !closed_) co_await WaitSignal(signal_);
  // Both directions ended with a half-close: the tunnel is done, not failed.
  if (!closed_) relay_phase_ = RelayPhase::kComplete;
  Close();
}

asio::awaitable<void> Session::Pump(std::shared_ptr<Session> self, bool to_upstream) {
  if (to_upstream) {
    co_await CopyBytes(self->socket_, *self->upstream_, *self, RelayStep::kClientGone,
                       RelayStep::kSendRequest);
    self->pump_running_ = false;
    self->Signal();
  } else {
    co_await CopyBytes(*self->upstream_, self->socket_, *self, RelayStep::kReadResponse,
                       RelayStep::kWriteResponse);
  }
}

}  // namespace warren::net::internal

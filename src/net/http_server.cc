// GCC 12 misreads Asio's coroutine frame allocator (awaitable_frame's operator new/delete) as
// a mismatched pair; the pairing is correct and the warning a known false positive. Kept in the
// source because other targets (the static warren-envd) compile this file too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "net/http_server.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <future>

#include "base/ids.h"
#include "base/log.h"
#include "base/strings.h"
#include "base/traceparent.h"
#include "net/http_wire.h"
#include "net/internal/session.h"
#include "net/request_target.h"

namespace warren::net {

using internal::Answer;
using internal::Deadline;
using internal::Exchange;
using internal::Session;
namespace asio = internal::asio;

// ---------------------------------------------------------------------------------------------
// Responder

// The handler's side of an exchange. Answering posts to the connection's loop (or delivers
// directly when already on it). Thread-safe: the answered flag makes exactly one answer count.
class Responder::Impl {
 public:
  explicit Impl(std::shared_ptr<Exchange> exchange) : exchange_(std::move(exchange)) {}

  ~Impl() {
    if (exchange_->answered.load()) return;
    Deliver(MakeResponse(
        Response::Json(500, ErrorJson(500, "the handler finished without answering the request"))));
  }

  static Answer MakeResponse(Response response) {
    Answer a;
    a.kind = Answer::Kind::kResponse;
    a.response = std::move(response);
    return a;
  }

  // Returns false when the exchange was answered already (a handler bug, logged).
  bool Deliver(Answer answer) {
    if (exchange_->answered.exchange(true)) {
      base::Logger("net")->error(
          "request_id={} answered more than once; the later answer is "
          "dropped",
          exchange_->request.request_id);
      Discard(answer);
      return false;
    }
    std::shared_ptr<Session> session = exchange_->session.lock();
    if (!session) {
      Discard(answer);
      return true;
    }
    session->RunOnLoop([session, ex = exchange_, a = std::move(answer)]() mutable {
      session->OnAnswer(ex, std::move(a));
    });
    return true;
  }

  // An answer that will never be sent still ends its stream or relay.
  static void Discard(Answer& answer) {
    if (answer.stream) answer.stream->MarkClosed();
    if (answer.proxy && answer.proxy->options.on_done) {
      auto done = std::move(answer.proxy->options.on_done);
      answer.proxy->options.on_done = nullptr;
      done(RelayOutcome{RelayStep::kClientGone, "the connection closed before the relay began"});
    }
  }

  const std::shared_ptr<Exchange>& exchange() const { return exchange_; }

 private:
  std::shared_ptr<Exchange> exchange_;
};

Responder::Responder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Responder::Responder(Responder&&) noexcept = default;
Responder& Responder::operator=(Responder&&) noexcept = default;
Responder::~Responder() = default;

void Responder::Send(Response response) { impl_->Deliver(Impl::MakeResponse(std::move(response))); }

std::shared_ptr<ResponseStream> Responder::Stream(int status, Headers headers) {
  std::weak_ptr<Session> weak = impl_->exchange()->session;
  auto stream = std::make_shared<StreamState>([weak] {
    if (auto session = weak.lock()) {
      session->RunOnLoop([session] { session->Wake(); });
    }
  });
  Answer a;
  a.kind = Answer::Kind::kStream;
  a.status = status;
  a.headers = std::move(headers);
  a.stream = stream;
  impl_->Deliver(std::move(a));
  return stream;
}

namespace {

// The body reader of a request without a body.
class EmptyBodyReader final : public BodyReader {
 public:
  Result<size_t> Read(char*, size_t) override { return size_t{0}; }
};

std::shared_ptr<BodyReader> EmptyBody() {
  static const auto empty = std::make_shared<EmptyBodyReader>();
  return empty;
}

// The relay of exchange `ex`, with the request as it stands now. Runs on the handler's thread,
// which owns the request until it answers.
std::unique_ptr<internal::ProxyJob> MakeProxyJob(const std::shared_ptr<Exchange>& ex,
                                                 ProxyOptions options) {
  auto job = std::make_unique<internal::ProxyJob>();
  job->options = std::move(options);
  job->handle = std::make_shared<internal::ProxyHandleImpl>(ex->session, ex);
  job->method = ex->request.method;
  job->target = ex->request.target;
  job->headers = ex->request.headers;
  job->body_buffered = ex->body_pipe == nullptr;
  if (job->body_buffered) job->body = ex->request.body;
  return job;
}

Answer ProxyAnswer(std::unique_ptr<internal::ProxyJob> job) {
  Answer a;
  a.kind = Answer::Kind::kProxy;
  a.proxy = std::move(job);
  return a;
}

}  // namespace

std::shared_ptr<ProxyHandle> Responder::Proxy(base::UniqueFd upstream, ProxyOptions options) {
  std::unique_ptr<internal::ProxyJob> job = MakeProxyJob(impl_->exchange(), std::move(options));
  job->upstream = std::move(upstream);
  std::shared_ptr<ProxyHandle> handle = job->handle;
  impl_->Deliver(ProxyAnswer(std::move(job)));
  return handle;
}

std::shared_ptr<ProxyHandle> Responder::ProxyPooled(const UpstreamKey& key, ProxyOptions& options) {
  const std::shared_ptr<Exchange>& ex = impl_->exchange();
  if (ex->answered.load()) return nullptr;
  std::shared_ptr<Session> session = ex->session.lock();
  // A pooled connection belongs to its loop's reactor: only that loop's thread may take it.
  if (!session || !session->on_loop_thread()) return nullptr;
  std::optional<internal::UpstreamSocket> socket = session->TakeUpstream(key);
  if (!socket) return nullptr;
  std::unique_ptr<internal::ProxyJob> job = MakeProxyJob(ex, std::move(options));
  job->pooled = std::move(socket);
  std::shared_ptr<ProxyHandle> handle = job->handle;
  impl_->Deliver(ProxyAnswer(std::move(job)));
  return handle;
}

bool Responder::client_connected() const { return !impl_->exchange()->client_gone.load(); }

namespace internal {

namespace {

thread_local bool tl_loop_thread = false;

// The trace id of a valid incoming `traceparent`, as 32 hex characters (a sane request id).
std::optional<std::string> ParentTraceId(const Headers& headers) {
  auto value = headers.Get("traceparent");
  if (!value) return std::nullopt;
  auto parent = base::ParseTraceparent(*value);
  if (!parent) return std::nullopt;
  return base::TraceIdHex(parent->trace_id);
}

}  // namespace

bool OnAnyLoopThread() { return tl_loop_thread; }

void LogCoroutineException(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    base::Logger("net")->error("connection coroutine failed: {}", ex.what());
  } catch (...) {
    base::Logger("net")->error("connection coroutine failed");
  }
}

void ProxyHandleImpl::Abort() {
  aborted_.store(true);
  if (auto session = session_.lock()) {
    session->RunOnLoop([session, ex = exchange_.lock()] {
      if (ex) session->AbortProxy(ex);
    });
  }
}

asio::mutable_buffer InputBuffer::prepare(size_t min) {
  if (data_.size() - end_ < min) {
    if (begin_ > 0) {
      std::memmove(data_.data(), data_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (data_.size() - end_ < min) data_.resize(std::max(data_.size() * 2, end_ + min));
  }
  return asio::buffer(data_.data() + end_, data_.size() - end_);
}

// ---------------------------------------------------------------------------------------------
// Session

namespace {

constexpr auto kLingerTime = std::chrono::seconds(2);

std::string RemoteAddress(const tcp::socket& socket) {
  error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  if (ep.address().is_v6()) return fmt::format("[{}]:{}", ep.address().to_string(), ep.port());
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

}  // namespace

Session::Session(ServerShared& server, Loop& loop, tcp::socket socket, std::string address)
    : server_(server),
      loop_(loop),
      socket_(std::move(socket)),
      remote_(RemoteAddress(socket_)),
      address_key_(std::move(address)),
      parser_(server.options.max_header_bytes),
      watchdog_(loop.ioc),
      signal_(loop.ioc),
      feeder_signal_(loop.ioc) {
  std::lock_guard lock(server_.mu);
  ++server_.live_sessions;
}

Session::~Session() {
  server_.limits->Release(address_key_);
  // Notify under the lock: once it is released the server may be gone.
  std::lock_guard lock(server_.mu);
  --server_.live_sessions;
  server_.sessions_changed.notify_all();
}

asio::awaitable<void> Session::Run(std::shared_ptr<Session> self) {
  self->loop_.sessions.insert(self.get());
  co_await self->Serve();
  self->Close();
  self->loop_.sessions.erase(self.get());
}

void Session::Close() {
  if (closed_) return;
  // A relay cut here without a cause named at the failing step: say why the connection went.
  // (Closing once the response is complete, or a tunnel is done, is no failure.)
  // The linger after a complete answer timing out is no failure of the relay.
  if (timed_out_ && read_kind_ != Deadline::kLinger) {
    RelayFailed(RelayStep::kTimedOut, "nothing moved before the connection's deadline");
  } else if (relay_phase_ != RelayPhase::kComplete) {
    if (server_.stopping.load()) {
      RelayFailed(RelayStep::kShutdown, "the server is stopping");
    } else {
      RelayFailed(RelayStep::kClientGone, "the client connection closed");
    }
  }
  closed_ = true;
  error_code ignored;
  socket_.close(ignored);
  if (upstream_) upstream_->close(ignored);
  watchdog_.cancel();
  signal_.cancel();
  feeder_signal_.cancel();
  if (exchange_) {
    exchange_->client_gone.store(true);
    if (exchange_->body_pipe) {
      exchange_->body_pipe->Fail(timed_out_
                                     ? DeadlineExceededError("the client stalled sending the body")
                                     : UnavailableError("the client connection closed"));
    }
  }
  if (stream_) stream_->MarkClosed();
}

// --- deadlines

void Session::SetReadDeadline(std::chrono::steady_clock::duration d, Deadline kind) {
  read_deadline_ = std::chrono::steady_clock::now() + d;
  read_kind_ = kind;
  ArmWatchdog(read_deadline_);
}
void Session::ClearReadDeadline() { read_deadline_ = SteadyTime::max(); }
void Session::SetWriteDeadline(std::chrono::steady_clock::duration d) {
  write_deadline_ = std::chrono::steady_clock::now() + d;
  ArmWatchdog(write_deadline_);
}
void Session::ClearWriteDeadline() { write_deadline_ = SteadyTime::max(); }
void Session::SetRelayDeadline(std::chrono::steady_clock::duration d) {
  relay_deadline_ = std::chrono::steady_clock::now() + d;
  ArmWatchdog(relay_deadline_);
}
void Session::ClearRelayDeadline() { relay_deadline_ = SteadyTime::max(); }

void Session::ArmWatchdog(SteadyTime t) {
  if (t >= armed_at_ || closed_) return;
  armed_at_ = t;
  watchdog_.expires_at(t);
  watchdog_.async_wait([self = shared_from_this()](const error_code& ec) { self->OnWatchdog(ec); });
}

void Session::OnWatchdog(const error_code& ec) {
  if (ec == asio::error::operation_aborted || closed_) return;
  armed_at_ = SteadyTime::max();
  SteadyTime next = std::min({read_deadline_, write_deadline_, relay_deadline_});
  if (next == SteadyTime::max()) return;
  SteadyTime now = std::chrono::steady_clock::now();
  if (next <= now) {
    timed_out_ = true;
    Deadline kind = read_deadline_ <= now    ? read_kind_
                    : write_deadline_ <= now ? Deadline::kWrite
                                             : Deadline::kRelay;
    server_.counters.TimedOut(kind);
    server_.log->debug("connection timed out remote={} idle={} deadline={}", remote_, idle_,
                       static_cast<int>(kind));
    Close();
    return;
  }
  ArmWatchdog(next);
}

// --- signals and I/O

asio::awaitable<void> Session::WaitSignal(asio::steady_timer& timer) {
  timer.expires_at(SteadyTime::max());
  co_await timer.async_wait(kNoThrow);
}

asio::awaitable<bool> Session::ReadMore() {
  if (closed_) co_return false;
  if (client_read_pending_) {
    // The read a relay left pending is this read.
    while (client_read_pending_ && !closed_) co_await WaitSignal(signal_);
    if (closed_) co_return false;
    if (!client_read_failed_) co_return true;  // its bytes are in in_
  }
  if (client_read_failed_) {
    Close();
    co_return false;
  }
  auto [ec, n] = co_await socket_.async_read_some(in_.prepare(kReadChunk), kNoThrow);
  if (ec || n == 0) {
    if (ec != asio::error::eof && ec != asio::error::operation_aborted && !closed_) {
      server_.log->debug("read failed remote={} error={}", remote_, ec.message());
    }
    Close();
    co_return false;
  }
  in_.commit(n);
  co_return true;
}

asio::awaitable<bool> Session::Write(std::span<const asio::const_buffer> buffers) {
  if (closed_) co_return false;
  SetWriteDeadline(opts().write_timeout);
  auto [ec, n] = co_await asio::async_write(socket_, buffers, kNoThrow);
  ClearWriteDeadline();
  if (ec) {
    RelayFailed(RelayStep::kWriteResponse, ec.message());
    Close();
    co_return false;
  }
  co_return true;
}

asio::awaitable<bool> Session::Write(std::string_view data) {
  asio::const_buffer buffer = asio::buffer(data);
  co_return co_await Write(std::span<const asio::const_buffer>(&buffer, 1));
}

// --- watching an idle client

void Session::StartClientRead() {
  if (client_read_pending_ || client_read_failed_ || closed_ || !in_.empty()) return;
  client_read_pending_ = true;
  socket_.async_read_some(
      in_.prepare(kReadChunk),
      [self = shared_from_this()](const error_code& ec, size_t n) { self->OnClientRead(ec, n); });
}

void Session::OnClientRead(const error_code& ec, size_t n) {
  client_read_pending_ = false;
  if (!ec && n > 0) {
    in_.commit(n);  // the client's next request: it is there
  } else {
    client_read_failed_ = true;
    if (relay_phase_ != RelayPhase::kNone && !closed_) ClientGone();
  }
  Signal();
}

void Session::StartClientWatch() {
  if (watch_active_ || closed_) return;
  watch_active_ = true;
  uint64_t generation = ++watch_generation_;
  socket_.async_wait(
      tcp::socket::wait_read,
      asio::bind_cancellation_slot(watch_cancel_.slot(),
                                   [self = shared_from_this(), generation](const error_code& ec) {
                                     self->OnWatchReady(ec, generation);
                                   }));
}

void Session::StopClientWatch() {
  if (!watch_active_) return;
  watch_active_ = false;
  watch_cancel_.emit(asio::cancellation_type::all);
}

void Session::OnWatchReady(const error_code& ec, uint64_t generation) {
  if (generation != watch_generation_ || !watch_active_ || closed_) return;
  if (ec == asio::error::operation_aborted) return;
  watch_active_ = false;
  if (ec) {
    ClientGone();
    return;
  }
  char c;
  ssize_t n = ::recv(socket_.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    ClientGone();
  } else if (n < 0) {
    StartClientWatch();
  }
  // Otherwise the client sent more (a pipelined request): it is there, and the bytes stay
  // in the socket for the next read.
}

void Session::ClientGone() {
  RelayFailed(RelayStep::kClientGone, "the client closed its connection");
  client_gone_ = true;
  server_.log->debug("client went away remote={}", remote_);
  Close();
}

// --- the request loop

std::string_view Session::ConnectionValue() const {
  if (!keep_alive_) return "close";
  return http10_ ? "keep-alive" : "";
}

asio::awaitable<void> Session::Serve() {
  bool first = true;
  for (;;) {
    if (closed_ || server_.stopping.load()) co_return;
    idle_ = true;
    idle_since_ = std::chrono::steady_clock::now();
    if (in_.empty()) {
      // The first request must arrive within the head timeout of the accept; later ones may
      // wait for the keep-alive idle timeout.
      if (first) {
        SetReadDeadline(opts().header_timeout, Deadline::kHead);
      } else {
        SetReadDeadline(opts().idle_timeout, Deadline::kIdle);
      }
      if (!co_await ReadMore()) co_return;
    }
    first = false;
    idle_ = false;
    SetReadDeadline(opts().header_timeout, Deadline::kHead);
    parser_.Reset();
    for (;;) {
      Result<size_t> n = parser_.ParseHead(in_.view());
      if (!n.ok()) {
        ClearReadDeadline();
        keep_alive_ = false;
        Status error = n.status();
        int status = error.code() == StatusCode::kResourceExhausted ? 431 : 400;
        request_id_ = base::NewRequestId();
        co_await SendError(status, error.message(), /*close=*/true);
        co_return;
      }
      in_.consume(*n);
      if (parser_.head_done()) break;
      if (!co_await ReadMore()) co_return;
    }
    ClearReadDeadline();
    co_await HandleRequest();
    exchange_.reset();
    answer_.reset();
    stream_.reset();
    if (!keep_alive_ || closed_) co_return;
  }
}

asio::awaitable<void> Session::HandleRequest() {
  RequestHead& head = parser_.mutable_head();
  keep_alive_ = head.keep_alive && !server_.stopping.load();
  http10_ = head.version == 10;
  head_request_ = head.method == "HEAD";
  body_complete_ = !head.has_body();
  body_taken_by_proxy_ = false;
  auto client_id = head.headers.Get("X-Request-ID");
  if (client_id && IsSaneRequestId(*client_id)) {
    request_id_ = std::string(*client_id);
  } else if (auto parent = ParentTraceId(head.headers)) {
    // OpenKruise's rule: the request id is the trace id, so one id finds the request in the
    // logs and its spans in the tracing backend.
    request_id_ = std::move(*parent);
  } else {
    request_id_ = base::NewRequestId();
  }

  Result<RequestTarget> target = ParseRequestTarget(head.target);
  if (!target.ok()) {
    keep_alive_ = false;
    Status error = target.status();
    co_await SendError(400, error.message(), /*close=*/true);
    co_return;
  }
  Router::Match match = server_.router.Find(head.method, target->raw_path);
  if (!match.handler) {
    Headers extra;
    std::string message;
    if (match.error_status == 405) {
      extra.Set("Allow", match.allow);
      message = fmt::format("method {} is not allowed on {}", head.method, target->path);
    } else {
      message = fmt::format("no route for {} {}", head.method, target->path);
    }
    co_await SendError(match.error_status, message, /*close=*/head.has_body(), &extra);
    co_return;
  }
  const RouteOptions& route = *match.options;
  uint64_t limit = route.max_body_bytes ? route.max_body_bytes : opts().max_body_bytes;
  if (head.content_length && *head.content_length > limit) {
    keep_alive_ = false;
    std::string message = fmt::format("request body of {} bytes exceeds the limit of {} bytes",
                                      *head.content_length, limit);
    co_await SendError(413, message, /*close=*/true);
    co_return;
  }
  parser_.SetBodyLimit(limit);

  auto ex = std::make_shared<Exchange>();
  ex->session = weak_from_this();
  ex->info.version = head.version;
  ex->info.chunked = head.chunked;
  ex->info.content_length = head.content_length;
  ex->info.expect_continue = head.expect_continue;
  ex->info.upgrade = head.upgrade;
  ex->info.head_request = head_request_;
  Request& req = ex->request;
  req.method = std::move(head.method);
  req.target = std::move(head.target);
  req.path = std::move(target->path);
  req.raw_query = std::move(target->raw_query);
  req.headers = std::move(head.headers);
  req.remote = remote_;
  req.request_id = request_id_;
  req.path_params = std::move(match.params);
  // Weak, through the exchange that owns the request: no cycle.
  req.client_gone_flag = std::shared_ptr<const std::atomic<bool>>(ex, &ex->client_gone);

  if (route.stream_body && body_complete_) {
    // Nothing to stream (a GET): no pipe to make for each request.
    req.body_reader = EmptyBody();
  } else if (route.stream_body) {
    std::weak_ptr<Session> weak = weak_from_this();
    std::weak_ptr<Exchange> weak_ex = ex;
    ex->body_pipe = std::make_shared<BodyPipe>(
        [weak, weak_ex] {
          auto s = weak.lock();
          auto e = weak_ex.lock();
          if (s && e) s->RunOnLoop([s, e] { s->OnBodyWanted(e); });
        },
        [] { return OnAnyLoopThread(); });
    req.body_reader = ex->body_pipe;
  } else if (!body_complete_) {
    if (head.expect_continue && !co_await Write("HTTP/1.1 100 Continue\r\n\r\n")) co_return;
    SetReadDeadline(opts().body_timeout, Deadline::kBody);
    for (;;) {
      Result<size_t> n = parser_.ParseBody(in_.view(), req.body);
      if (!n.ok()) {
        ClearReadDeadline();
        keep_alive_ = false;
        Status error = n.status();
        bool too_large = error.code() == StatusCode::kResourceExhausted;
        co_await SendError(too_large ? 413 : 400, error.message(), /*close=*/true);
        co_return;
      }
      in_.consume(*n);
      if (parser_.body_done()) break;
      if (!co_await ReadMore()) co_return;
    }
    ClearReadDeadline();
    body_complete_ = true;
  }

  exchange_ = ex;
  answer_.reset();
  Dispatch(*match.handler, route, std::move(ex));
  if (!answer_) co_await AwaitAnswer();  // inline handlers usually answered already
  if (!answer_ || closed_) co_return;
  Answer answer = std::move(*answer_);
  answer_.reset();
  responding_ = true;
  switch (answer.kind) {
    case Answer::Kind::kResponse:
      co_await RespondFull(std::move(answer.response));
      break;
    case Answer::Kind::kStream:
      co_await RespondStream(answer.status, std::move(answer.headers), std::move(answer.stream));
      break;
    case Answer::Kind::kProxy:
      co_await RunProxy(std::move(*answer.proxy));
      break;
  }
  responding_ = false;
  if (closed_) co_return;
  // A body the handler left unread (or still being read) makes the connection unusable.
  if (!body_complete_ || feeding_) {
    keep_alive_ = false;
    co_await LingeringClose();
  }
}

void Session::Dispatch(const Handler& handler, const RouteOptions& route,
                       std::shared_ptr<Exchange> ex) {
  auto invoke = [](const Handler& h, const std::shared_ptr<Exchange>& ex) {
    try {
      h(std::move(ex->request), Responder(std::make_shared<Responder::Impl>(ex)));
    } catch (const std::exception& e) {
      base::Logger("net")->error("handler threw request_id={} error={}", ex->request.request_id,
                                 e.what());
    } catch (...) {
      base::Logger("net")->error("handler threw request_id={}", ex->request.request_id);
    }
  };
  if (route.blocking) {
    Request& req = ex->request;
    uint64_t key = std::hash<std::string>{}(route.fairness_key ? route.fairness_key(req)
                                                               : DefaultFairnessKey(req));
    server_.blocking_pool->Post(key,
                                [&handler, ex = std::move(ex), invoke] { invoke(handler, ex); });
  } else {
    invoke(handler, ex);
  }
}

void Session::OnAnswer(const std::shared_ptr<Exchange>& ex, Answer answer) {
  if (ex != exchange_ || closed_ || answer_) {
    Responder::Impl::Discard(answer);
    return;
  }
  answer_ = std::move(answer);
  Signal();
}

asio::awaitable<void> Session::AwaitAnswer() {
  if (answer_ || closed_) co_return;
  // A request whose body is all read leaves the socket quiet until the answer: watch it so a
  // client that gives up is noticed (Responder::client_connected, OnClose).
  if (body_complete_) StartClientWatch();
  while (!answer_ && !closed_) co_await WaitSignal(signal_);
  StopClientWatch();
}

void Session::OnBodyWanted(const std::shared_ptr<Exchange>& ex) {
  if (ex != exchange_) return;  // a reader left over from an earlier request
  if (closed_ || feeding_ || body_complete_ || body_taken_by_proxy_ || !exchange_->body_pipe) {
    feeder_signal_.cancel();
    return;
  }
  feeding_ = true;
  asio::co_spawn(loop_.ioc, FeedBody(shared_from_this(), exchange_->body_pipe),
                 LogCoroutineException);
}

asio::awaitable<void> Session::FeedBody(std::shared_ptr<Session> self,
                                        std::shared_ptr<BodyPipe> pipe) {
  auto done = [&] {
    self->feeding_ = false;
    self->ClearReadDeadline();
    self->Signal();
  };
  // Once an answer is being written, a 100 Continue would land inside it.
  if (self->exchange_ && self->exchange_->info.expect_continue && !self->responding_ &&
      !co_await self->Write("HTTP/1.1 100 Continue\r\n\r\n")) {
    pipe->Fail(UnavailableError("the client connection closed"));
    done();
    co_return;
  }
  self->SetReadDeadline(self->opts().body_timeout, Deadline::kBody);
  for (;;) {
    std::string piece;
    Result<size_t> n = self->parser_.ParseBody(self->in_.view(), piece);
    if (!n.ok()) {
      pipe->Fail(n.status());
      break;
    }
    self->in_.consume(*n);
    pipe->Push(std::move(piece));
    if (self->parser_.body_done()) {
      self->body_complete_ = true;
      pipe->Finish();
      break;
    }
    if (self->lingering_) break;  // the answer is out: LingeringClose drains the rest
    while (!self->closed_ && !self->lingering_ && pipe->PauseIfFull()) {
      self->ClearReadDeadline();
      co_await self->WaitSignal(self->feeder_signal_);
      self->SetReadDeadline(self->opts().body_timeout, Deadline::kBody);
    }
    if (self->lingering_) break;
    if (!co_await self->ReadMore()) break;  // Close() failed the pipe
  }
  done();
}

// --- answers

asio::awaitable<void> Session::RespondFull(Response response) {
  if (server_.stopping.load()) keep_alive_ = false;
  if (!body_complete_) keep_alive_ = false;
  bool no_body = response.status == 204 || response.status == 304 ||
                 (response.status >= 100 && response.status < 200);
  Framing framing;
  if (!no_body) framing.content_length = response.body.size();
  framing.connection = ConnectionValue();
  framing.request_id = request_id_;
  out_.clear();
  AppendResponseHead(out_, response.status, response.headers, framing);
  std::array<asio::const_buffer, 2> buffers{asio::buffer(out_), asio::const_buffer()};
  size_t count = 1;
  if (!no_body && !head_request_ && !response.body.empty()) {
    buffers[count++] = asio::buffer(response.body);
  }
  if (!co_await Write(std::span<const asio::const_buffer>(buffers.data(), count))) co_return;
  if (!keep_alive_) co_await LingeringClose();
}

asio::awaitable<void> Session::RespondStream(int status, Headers headers,
                                             std::shared_ptr<StreamState> stream) {
  stream_ = stream;
  if (server_.stopping.load()) keep_alive_ = false;
  std::optional<uint64_t> fixed_length;
  if (auto cl = headers.Get("Content-Length")) {
    fixed_length = base::ParseUint64(base::TrimSpace(*cl));
    if (!fixed_length) server_.log->error("stream with a malformed Content-Length; sent chunked");
  }
  bool no_body = head_request_ || status == 204 || status == 304;
  bool chunked = !fixed_length && !no_body && !http10_;
  // An HTTP/1.0 client without a length learns where the body ends from the close.
  if (!fixed_length && !no_body && http10_) keep_alive_ = false;
  Framing framing;
  framing.content_length = fixed_length;
  framing.chunked = chunked;
  framing.connection = ConnectionValue();
  framing.request_id = request_id_;
  out_.clear();
  AppendResponseHead(out_, status, headers, framing);
  if (!co_await Write(out_)) co_return;  // Close() marked the stream closed
  if (no_body) {
    stream->MarkClosed();
    co_return;
  }
  if (body_complete_) StartClientWatch();

  uint64_t written = 0;
  StreamState::Pending pending;
  std::vector<asio::const_buffer> buffers;
  for (;;) {
    stream->TakePending(pending);
    bool overflow = false;
    // Chunk headers go into out_ first, so the buffers can point into it without it moving.
    out_.clear();
    buffers.clear();
    std::vector<std::pair<size_t, size_t>> frames;  // chunk header (offset, length) in out_
    size_t data_bytes = 0;
    for (const std::string& chunk : pending.chunks) {
      if (fixed_length && written + data_bytes + chunk.size() > *fixed_length) {
        overflow = true;
        break;
      }
      size_t offset = out_.size();
      if (chunked) AppendChunkHeader(out_, chunk.size());
      frames.emplace_back(offset, out_.size() - offset);
      data_bytes += chunk.size();
    }
    for (size_t i = 0; i < frames.size(); ++i) {
      if (chunked) buffers.push_back(asio::buffer(out_.data() + frames[i].first, frames[i].second));
      buffers.push_back(asio::buffer(pending.chunks[i]));
      if (chunked) buffers.push_back(asio::buffer(kChunkEnd));
    }
    if (chunked && pending.finish && !pending.abort && !overflow) {
      buffers.push_back(asio::buffer(kLastChunk));
    }
    if (!buffers.empty()) {
      if (!co_await Write(buffers)) co_return;
      written += data_bytes;
      stream->MarkWritten(data_bytes);
    }
    if (overflow) {
      server_.log->error("request_id={} stream wrote past its Content-Length; connection dropped",
                         request_id_);
      Close();
      co_return;
    }
    if (pending.abort || closed_) {
      Close();
      co_return;
    }
    if (pending.finish) {
      if (fixed_length && written != *fixed_length) {
        server_.log->error("request_id={} stream finished {} bytes short of its Content-Length",
                           request_id_, *fixed_length - written);
        Close();
        co_return;
      }
      break;
    }
    if (!stream->HasPending()) co_await WaitSignal(signal_);
    if (closed_) co_return;
  }
  StopClientWatch();
  stream->MarkClosed();
  stream_.reset();
  if (!keep_alive_) co_await LingeringClose();
}

asio::awaitable<void> Session::SendError(int status, std::string_view message, bool close,
                                         const Headers* extra) {
  if (close) keep_alive_ = false;
  if (server_.stopping.load()) keep_alive_ = false;
  server_.log->debug("request_id={} status={} remote={} {}", request_id_, status, remote_, message);
  Response response = Response::Json(status, ErrorJson(status, message));
  if (extra) {
    for (const auto& [name, value] : extra->fields()) response.headers.Add(name, value);
  }
  co_await SendClosing(std::move(response), close);
}

asio::awaitable<void> Session::SendClosing(Response response, bool close) {
  if (close) keep_alive_ = false;
  bool was_complete = body_complete_;
  body_complete_ = true;  // RespondFull must not second-guess `close`
  co_await RespondFull(std::move(response));
  body_complete_ = was_complete;
}

asio::awaitable<void> Session::LingeringClose() {
  if (closed_) co_return;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) {
    Close();
    co_return;
  }
  const SteadyTime until = std::chrono::steady_clock::now() + kLingerTime;
  SetReadDeadline(kLingerTime, Deadline::kLinger);
  if (feeding_ || upload_running_) {
    // A body feed or a relay's upload still reads the socket: the answer came before the whole
    // body (a handler that gave up, an upstream's early error). Closing under it would reset a
    // client still sending, and a reset can destroy the answer before the client reads it. It
    // stops at its next piece (it checks lingering_), at the body's end or at the deadline.
    lingering_ = true;
    feeder_signal_.cancel();  // a feed paused for a reader that is gone
    while ((feeding_ || upload_running_) && !closed_) co_await WaitSignal(signal_);
    if (closed_) co_return;
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= SteadyTime::duration::zero()) {
      Close();
      co_return;
    }
    SetReadDeadline(left, Deadline::kLinger);  // the feed cleared it
  }
  size_t drained = 0;
  while (!closed_ && drained < (1u << 20)) {
    drained += in_.size();
    in_.consume(in_.size());
    if (!co_await ReadMore()) break;  // also takes over a read a relay left pending
  }
  Close();
}

// ---------------------------------------------------------------------------------------------
// The server

namespace {

// The server's UpstreamPool: each loop's LoopUpstreams, reached on that loop.
class ServerUpstreamPool final : public UpstreamPool {
 public:
  ServerUpstreamPool(std::vector<std::unique_ptr<Loop>>& loops, std::atomic<size_t>& count)
      : loops_(loops), count_(count) {}

  void DropGroup(std::string_view group) override {
    for (auto& loop : loops_) {
      Loop* l = loop.get();
      if (l->ioc.get_executor().running_in_this_thread()) {
        l->upstreams.DropGroup(group);
      } else {
        asio::post(l->ioc, [l, g = std::string(group)] { l->upstreams.DropGroup(g); });
      }
    }
  }

  size_t idle_count() const override { return count_.load(std::memory_order_relaxed); }

 private:
  // Filled before the server starts, then only read.
  std::vector<std::unique_ptr<Loop>>& loops_;
  std::atomic<size_t>& count_;
};

class ServerImpl final : public HttpServer {
 public:
  ServerImpl(ServerOptions options, Router router)
      : upstream_pool_(loops_, shared_.pooled_upstreams) {
    shared_.options = std::move(options);
    shared_.router = std::move(router);
    shared_.log = base::Logger("net");
  }

  ~ServerImpl() override { Shutdown(std::chrono::milliseconds(0)); }

  Status Start() {
    const ServerOptions& o = shared_.options;
    int loops = o.loop_threads > 0
                    ? o.loop_threads
                    : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    for (int i = 0; i < loops; ++i) {
      loops_.push_back(std::make_unique<Loop>(o.upstream_pool, shared_.pooled_upstreams));
    }
    error_code ec;
    auto address = asio::ip::make_address(o.address, ec);
    if (ec) return InvalidArgumentError(fmt::format("bad listen address '{}'", o.address));
    tcp::endpoint endpoint(address, o.port);
    acceptor_.emplace(loops_[0]->ioc);
    acceptor_->open(endpoint.protocol(), ec);
    if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_->bind(endpoint, ec);
    if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return ErrnoError(fmt::format("listen on {}:{}", o.address, o.port), ec.value());
    }
    port_ = acceptor_->local_endpoint().port();
    size_t max_connections = o.max_connections;
    if (max_connections == 0) {
      rlimit nofile{};
      max_connections = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                            ? std::max<size_t>(16, static_cast<size_t>(nofile.rlim_cur) / 4)
                            : 16384;
    }
    shared_.limits =
        std::make_unique<ConnectionLimits>(max_connections, o.max_connections_per_address);
    int per_key = o.blocking_threads_per_key > 0 ? o.blocking_threads_per_key
                                                 : std::max(1, o.blocking_threads * 3 / 4);
    shared_.blocking_pool =
        std::make_unique<BlockingPool>(o.blocking_threads, std::chrono::seconds(10), per_key);
    for (auto& loop : loops_) {
      loop->work.emplace(loop->ioc.get_executor());
      loop->thread = std::thread([l = loop.get()] {
        tl_loop_thread = true;
        l->ioc.run();
      });
    }
    asio::co_spawn(loops_[0]->ioc, Accept(this), LogCoroutineException);
    started_ = true;
    shared_.log->info(
        "http server listening address={} port={} loops={} max_connections={} per_address={}",
        o.address, port_, loops, max_connections, o.max_connections_per_address);
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }
  UpstreamPool& upstream_pool() override { return upstream_pool_; }

  ConnectionStats connection_stats() const override {
    const internal::ConnectionCounters& c = shared_.counters;
    auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    auto timed_out = [&](Deadline d) { return get(c.timed_out[static_cast<int>(d)]); };
    ConnectionStats s;
    s.accepted = get(c.accepted);
    s.rejected_listener_full = get(c.rejected_listener_full);
    s.rejected_address_full = get(c.rejected_address_full);
    s.reclaimed_idle = get(c.reclaimed_idle);
    s.timed_out_head = timed_out(Deadline::kHead);
    s.timed_out_body = timed_out(Deadline::kBody);
    s.timed_out_idle = timed_out(Deadline::kIdle);
    s.timed_out_write = timed_out(Deadline::kWrite);
    s.timed_out_relay = timed_out(Deadline::kRelay);
    if (shared_.limits) {
      s.open = shared_.limits->open();
      s.max_connections = shared_.limits->max_connections();
      s.max_connections_per_address = shared_.limits->max_per_address();
    }
    if (shared_.blocking_pool) s.blocking_queued = shared_.blocking_pool->queued();
    return s;
  }

  void Shutdown(std::chrono::milliseconds grace) override {
    std::lock_guard shutdown_lock(shutdown_mu_);
    if (shut_down_) return;
    shut_down_ = true;
    if (!started_) return;
    CHECK_MSG(!OnAnyLoopThread(), "HttpServer::Shutdown called from a loop thread");
    shared_.stopping.store(true);
    RunOnLoopAndWait(*loops_[0], [this] {
      error_code ignored;
      acceptor_->close(ignored);
    });
    // Connections between requests go now; the others finish what they are doing.
    for (auto& loop : loops_) {
      RunOnLoopAndWait(*loop, [l = loop.get()] {
        std::vector<Session*> idle;
        for (Session* s : l->sessions) {
          if (s->idle()) idle.push_back(s);
        }
        for (Session* s : idle) s->Close();
      });
    }
    {
      std::unique_lock lock(shared_.mu);
      shared_.sessions_changed.wait_for(lock, grace, [&] { return shared_.live_sessions == 0; });
    }
    for (auto& loop : loops_) {
      RunOnLoopAndWait(*loop, [l = loop.get()] {
        std::vector<Session*> all(l->sessions.begin(), l->sessions.end());
        for (Session* s : all) s->Close();
      });
    }
    {
      std::unique_lock lock(shared_.mu);
      if (!shared_.sessions_changed.wait_for(lock, std::chrono::seconds(30),
                                             [&] { return shared_.live_sessions == 0; })) {
        shared_.log->error("shutdown: {} connections did not close", shared_.live_sessions);
      }
    }
    // No relay is left to use or return an idle upstream connection.
    for (auto& loop : loops_) {
      RunOnLoopAndWait(*loop, [l = loop.get()] { l->upstreams.Clear(); });
    }
    // Blocking handlers still running see closed streams and pipes; wait for them to return.
    shared_.blocking_pool->Join();
    for (auto& loop : loops_) {
      loop->work.reset();
      loop->ioc.stop();
    }
    for (auto& loop : loops_) {
      if (loop->thread.joinable()) loop->thread.join();
    }
    acceptor_.reset();
    shared_.log->info("http server stopped port={}", port_);
  }

 private:
  template <typename F>
  void RunOnLoopAndWait(Loop& loop, F fn) {
    std::promise<void> done;
    asio::post(loop.ioc, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

  static asio::awaitable<void> Accept(ServerImpl* server) {
    size_t next = 0;
    for (;;) {
      Loop& loop = *server->loops_[next++ % server->loops_.size()];
      auto [ec, socket] = co_await server->acceptor_->async_accept(loop.ioc, kNoThrow);
      if (server->shared_.stopping.load() || ec == asio::error::operation_aborted) co_return;
      if (ec) {
        // Out of descriptors or memory: back off instead of spinning.
        server->shared_.log->warn("accept failed error={}", ec.message());
        asio::steady_timer pause(server->loops_[0]->ioc, std::chrono::milliseconds(50));
        co_await pause.async_wait(kNoThrow);
        continue;
      }
      error_code ep_error;
      asio::ip::address peer = socket.remote_endpoint(ep_error).address();
      std::string address = ep_error ? std::string() : AddressKey(peer);
      Admission admission = server->shared_.limits->TryAdmit(address);
      if (admission == Admission::kListenerFull) {
        admission = co_await server->AdmitAfterReclaiming(address);
      }
      if (admission != Admission::kAdmitted) {
        server->Refuse(socket.native_handle(), admission, peer);
        error_code ignored;
        socket.close(ignored);
        continue;
      }
      server->shared_.counters.accepted.fetch_add(1, std::memory_order_relaxed);
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      auto session =
          std::make_shared<Session>(server->shared_, loop, std::move(socket), std::move(address));
      asio::co_spawn(loop.ioc, Session::Run(std::move(session)), LogCoroutineException);
    }
  }

  // A full listener makes room as nginx does when it runs out of connections: it closes the
  // connections that have waited longest for a request (keep-alive clients between requests,
  // and connections that never sent a byte), a few per loop, and admits the newcomer in their
  // place. A client that is only holding a connection open cannot keep everyone else out; one
  // that is sending a request keeps its place. Refused only when nothing idle was left.
  asio::awaitable<Admission> AdmitAfterReclaiming(const std::string& address) {
    // About one in 64 of the cap per round (at least one): a big listener makes room for a
    // burst of newcomers at once, a small one closes no more than it must.
    const size_t batch = std::clamp<size_t>(shared_.limits->max_connections() / 64, 1, 64);
    const size_t per_loop = std::max<size_t>(1, batch / loops_.size());
    asio::steady_timer pause(loops_[0]->ioc);
    Admission admission = Admission::kListenerFull;
    // Loop by loop (each closes its own longest idle), until one had something to close.
    for (size_t round = 0; round < loops_.size() && admission == Admission::kListenerFull;
         ++round) {
      Loop& loop = *loops_[reclaim_next_++ % loops_.size()];
      // Shared: the accept loop may stop waiting before the loop answers.
      auto closed = std::make_shared<std::promise<size_t>>();
      std::future<size_t> closed_count = closed->get_future();
      std::optional<size_t> closed_n;
      asio::post(loop.ioc, [this, &loop, per_loop, closed] {
        closed->set_value(ReclaimIdle(loop, per_loop));
      });
      // A closed session gives its place back when its coroutine ends, a loop turn later.
      for (int attempt = 0; attempt < 10 && admission == Admission::kListenerFull; ++attempt) {
        pause.expires_after(std::chrono::milliseconds(2));
        co_await pause.async_wait(kNoThrow);
        if (shared_.stopping.load()) co_return admission;
        if (!closed_n &&
            closed_count.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
          closed_n = closed_count.get();
        }
        if (closed_n == size_t{0}) break;  // nothing idle on that loop: try the next
        admission = shared_.limits->TryAdmit(address);
      }
    }
    co_return admission;
  }

  // Closes up to `n` of `loop`'s idle sessions, the longest idle first, and says how many. On
  // the loop's thread.
  size_t ReclaimIdle(Loop& loop, size_t n) {
    std::vector<Session*> idle;
    for (Session* s : loop.sessions) {
      if (s->idle()) idle.push_back(s);
    }
    n = std::min(n, idle.size());
    std::partial_sort(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(n), idle.end(),
                      [](Session* a, Session* b) { return a->idle_since() < b->idle_since(); });
    for (size_t i = 0; i < n; ++i) idle[i]->Close();
    if (n > 0) {
      shared_.counters.reclaimed_idle.fetch_add(n, std::memory_order_relaxed);
      shared_.log->debug("listener full: closed {} idle connections to make room", n);
    }
    return n;
  }

  // The client's address as ConnectionLimits counts it: 4 bytes for IPv4 (IPv4-mapped IPv6
  // included), 16 for IPv6.
  static std::string AddressKey(asio::ip::address a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) {
      a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    }
    if (a.is_v4()) {
      auto bytes = a.to_v4().to_bytes();
      return std::string(bytes.begin(), bytes.end());
    }
    auto bytes = a.to_v6().to_bytes();
    return std::string(bytes.begin(), bytes.end());
  }

  // Answers a connection over a limit with a 503 naming the limit; the caller closes it. One
  // non-blocking send into an empty socket buffer: nothing waits on the client, so a flood of
  // connections costs an accept and a close each and holds nothing.
  void Refuse(int fd, Admission admission, const asio::ip::address& peer) {
    const ConnectionLimits& limits = *shared_.limits;
    std::string message;
    if (admission == Admission::kListenerFull) {
      shared_.counters.rejected_listener_full.fetch_add(1, std::memory_order_relaxed);
      message = fmt::format("the server has too many open connections (limit {}); try again later",
                            limits.max_connections());
    } else {
      shared_.counters.rejected_address_full.fetch_add(1, std::memory_order_relaxed);
      message = fmt::format("too many connections from {} (limit {} per client address)",
                            peer.to_string(), limits.max_per_address());
    }
    shared_.log->debug("connection refused {}", message);
    std::string body = ErrorJson(503, message);
    std::string response = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Content-Length: {}\r\nConnection: close\r\nRetry-After: 1\r\n\r\n{}",
        body.size(), body);
    [[maybe_unused]] ssize_t sent =
        ::send(fd, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
  }

  ServerShared shared_;
  std::vector<std::unique_ptr<Loop>> loops_;
  ServerUpstreamPool upstream_pool_;
  std::optional<tcp::acceptor> acceptor_;
  size_t reclaim_next_ = 0;  // the loop AdmitAfterReclaiming asks first; the accept loop's own
  uint16_t port_ = 0;
  bool started_ = false;
  std::mutex shutdown_mu_;
  bool shut_down_ = false;  // guarded by shutdown_mu_
};

}  // namespace

}  // namespace internal

Result<std::unique_ptr<HttpServer>> HttpServer::Start(ServerOptions options, Router router) {
  auto server = std::make_unique<internal::ServerImpl>(std::move(options), std::move(router));
  RETURN_IF_ERROR(server->Start());
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace warren::net

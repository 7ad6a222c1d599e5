#pragma once

// Private to net/: the server's connection machinery, shared by http_server.cc and proxy.cc.
// This header includes Asio and must never be included outside src/net.

#include <spdlog/logger.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "net/blocking_pool.h"
#include "net/body_pipe.h"
#include "net/connection_limits.h"
#include "net/http_server.h"
#include "net/http_wire.h"
#include "net/internal/loop_upstreams.h"
#include "net/message_parser.h"
#include "net/router.h"
#include "net/stream_state.h"

namespace warren::net::internal {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;
using boost::system::error_code;

// Completion token for coroutines that want errors as values, not exceptions.
inline constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

// Bytes asked of the kernel per read.
inline constexpr size_t kReadChunk = 16 * 1024;

// Completion handler for detached coroutines: they report errors as values, so an exception
// here is a bug (or bad_alloc); log it instead of letting it unwind through the loop.
void LogCoroutineException(std::exception_ptr e);

class Session;

// True on the server's loop threads (a blocking BodyReader::Read there would deadlock).
bool OnAnyLoopThread();

// One event loop: an io_context run by one thread, the connections it serves and the idle
// upstream connections its relays left.
struct Loop {
  Loop(const UpstreamPoolOptions& pool_options, std::atomic<size_t>& pooled)
      : upstreams(ioc, pool_options, pooled) {}

  asio::io_context ioc{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  // Live sessions, for shutdown. Touched only on this loop's thread.
  std::unordered_set<Session*> sessions;
  // Declared after ioc, so destroyed before it. Touched only on this loop's thread.
  LoopUpstreams upstreams;

  // A relay's upstream read buffer, from an earlier relay on this loop when one is spare: a
  // fresh one per request costs a zeroed 16 KiB allocation, which glibc serves by consolidating
  // its small-block bins each time. Loop thread only.
  std::vector<char> TakeRelayBuffer() {
    if (spare_relay_buffers_.empty()) return {};
    std::vector<char> buffer = std::move(spare_relay_buffers_.back());
    spare_relay_buffers_.pop_back();
    return buffer;
  }
  // Keeps a finished relay's buffer for the next one, unless enough are kept or it grew past
  // the usual size (a huge response head). Loop thread only.
  void GiveBackRelayBuffer(std::vector<char> buffer) {
    if (buffer.empty() || buffer.size() > 4 * kReadChunk) return;
    if (spare_relay_buffers_.size() >= kSpareRelayBuffers) return;
    spare_relay_buffers_.push_back(std::move(buffer));
  }

 private:
  // At most 1 MiB a loop: about as many as relays finish between two that start.
  static constexpr size_t kSpareRelayBuffers = 64;
  std::vector<std::vector<char>> spare_relay_buffers_;
};

// Which deadline closed a connection (ConnectionStats).
enum class Deadline { kHead, kBody, kIdle, kWrite, kRelay, kLinger };

// The listener's counters, bumped without locks. Thread-safe.
struct ConnectionCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> rejected_listener_full{0};
  std::atomic<uint64_t> rejected_address_full{0};
  std::atomic<uint64_t> reclaimed_idle{0};
  std::atomic<uint64_t> timed_out[6] = {};  // by Deadline

  void TimedOut(Deadline d) {
    timed_out[static_cast<int>(d)].fetch_add(1, std::memory_order_relaxed);
  }
};

// What every session of one server shares. Owned by the server; outlives every session.
struct ServerShared {
  ServerOptions options;
  Router router;
  std::shared_ptr<spdlog::logger> log;
  std::atomic<bool> stopping{false};
  std::unique_ptr<BlockingPool> blocking_pool;
  std::unique_ptr<ConnectionLimits> limits;
  ConnectionCounters counters;

  std::mutex mu;
  std::condition_variable sessions_changed;
  int live_sessions = 0;  // guarded by mu

  std::atomic<size_t> pooled_upstreams{0};  // idle in every loop's LoopUpstreams
};

// How the request head framed its body, kept for the proxy once Request has gone to the
// handler.
struct HeadInfo {
  int version = 11;
  bool chunked = false;
  std::optional<uint64_t> content_length;
  bool expect_continue = false;
  bool upgrade = false;
  bool head_request = false;
  bool has_body() const { return chunked || content_length.value_or(0) > 0; }
};

// One request in flight. Shared by the session, the Responder and (for blocking routes) the
// job running the handler, which keeps the Request alive while the handler holds it.
struct Exchange {
  std::weak_ptr<Session> session;
  Request request;
  HeadInfo info;
  std::shared_ptr<BodyPipe> body_pipe;  // stream_body routes
  std::atomic<bool> answered{false};
  std::atomic<bool> client_gone{false};
};

class ProxyHandleImpl;

// A relay the handler asked for, with the request as it stood when Proxy was called.
struct ProxyJob {
  base::UniqueFd upstream;
  // Instead of `upstream`: a pooled connection, already registered with the session's loop.
  std::optional<UpstreamSocket> pooled;
  ProxyOptions options;
  std::shared_ptr<ProxyHandleImpl> handle;
  std::string method;
  std::string target;
  Headers headers;
  std::string body;           // buffered routes: the body the handler got
  bool body_buffered = true;  // false on stream_body routes: relay it from the socket
};

// The handler's answer, delivered to the session on its loop thread.
struct Answer {
  enum class Kind { kResponse, kStream, kProxy };
  Kind kind = Kind::kResponse;
  Response response;  // kResponse
  int status = 200;   // kStream
  Headers headers;    // kStream
  std::shared_ptr<StreamState> stream;
  std::unique_ptr<ProxyJob> proxy;
};

// Cancels a relay from any thread. It names its exchange, so a handle kept past its relay
// cannot cut a later relay on the same keep-alive connection.
class ProxyHandleImpl final : public ProxyHandle {
 public:
  ProxyHandleImpl(std::weak_ptr<Session> session, std::weak_ptr<Exchange> exchange)
      : session_(std::move(session)), exchange_(std::move(exchange)) {}
  void Abort() override;
  bool aborted() const { return aborted_.load(); }

 private:
  std::weak_ptr<Session> session_;
  std::weak_ptr<Exchange> exchange_;
  std::atomic<bool> aborted_{false};
};

// Where the relay of a connection stands. It decides what ProxyHandle::Abort does.
enum class RelayPhase {
  kNone,  // no relay: an abort is stale and ignored
  // The request goes up; none of the response has reached the client. An abort answers with
  // ProxyOptions::abort_response when there is one, else cuts.
  kRequest,
  kAbortAnswer,  // an abort came in kRequest: RunProxy sends abort_response
  kResponse,     // the response head went to the client (or a tunnel runs): an abort cuts
  // The response's last bytes are being handed to the client, which may read them and send its
  // next request on this connection before the relay has ended. The upstream is no longer
  // needed, so an abort is ignored: cutting now would fail that next request instead.
  kComplete,
};

// Bytes read from a socket and not yet parsed. Not thread-safe.
class InputBuffer {
 public:
  InputBuffer() = default;
  // Uses `storage` (its size, not its contents) as the first room to read into.
  explicit InputBuffer(std::vector<char> storage) : data_(std::move(storage)) {}
  // Gives up the storage, for another buffer to reuse; this one is empty after.
  std::vector<char> ReleaseStorage() {
    begin_ = end_ = 0;
    return std::exchange(data_, {});
  }

  std::string_view view() const { return {data_.data() + begin_, end_ - begin_}; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  void consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Writable room for at least `min` bytes (more when there is).
  asio::mutable_buffer prepare(size_t min);
  void commit(size_t n) { end_ += n; }

 private:
  std::vector<char> data_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// One client connection: reads requests, runs handlers, writes answers, relays proxies. Lives
// on one loop; every member is touched only on that loop's thread, except where a comment says
// otherwise. Owned by its coroutines and by what they post (shared_ptr); Responders, streams
// and proxy handles hold weak_ptrs, so a connection never outlives its server.
class Session : public std::enable_shared_from_this<Session> {
 public:
  // `address` is the key ConnectionLimits admitted the connection under; released at the end.
  Session(ServerShared& server, Loop& loop, tcp::socket socket, std::string address);
  ~Session();

  // Serves the connection until it closes. Runs on the loop.
  static asio::awaitable<void> Run(std::shared_ptr<Session> self);

  asio::io_context::executor_type executor() { return loop_.ioc.get_executor(); }
  bool on_loop_thread() { return executor().running_in_this_thread(); }
  // Runs `fn` on the loop: now when already there, else posted.
  template <typename F>
  void RunOnLoop(F fn) {
    if (on_loop_thread()) {
      fn();
    } else {
      asio::post(loop_.ioc, std::move(fn));
    }
  }

  // Delivers the answer to exchange `ex`.
  void OnAnswer(const std::shared_ptr<Exchange>& ex, Answer answer);
  // The stream_body reader of `ex` wants data.
  void OnBodyWanted(const std::shared_ptr<Exchange>& ex);
  // Ends the relay of `ex`, if it is the one running.
  void AbortProxy(const std::shared_ptr<Exchange>& ex);
  // Drops the connection at once (and a relay's upstream). Idempotent.
  void Close();
  // Wakes the main coroutine (a stream has news).
  void Wake() { Signal(); }
  // A relay made progress: push its idle deadline out.
  void TouchRelay();
  // Names why the relay in progress fails, unless a cause is already named or there is none.
  void RelayFailed(RelayStep step, std::string_view cause);
  // Waiting for a request, not in the middle of one.
  bool idle() const { return idle_; }
  // Since when it has been idle (meaningful while idle()).
  std::chrono::steady_clock::time_point idle_since() const { return idle_since_; }
  // An idle pooled upstream connection of this loop for `key`, if one is usable.
  std::optional<UpstreamSocket> TakeUpstream(const UpstreamKey& key) {
    return loop_.upstreams.Take(key);
  }

 private:
  const ServerOptions& opts() const { return server_.options; }

  asio::awaitable<void> Serve();
  asio::awaitable<void> HandleRequest();
  asio::awaitable<void> AwaitAnswer();
  asio::awaitable<void> RespondFull(Response response);
  asio::awaitable<void> RespondStream(int status, Headers headers,
                                      std::shared_ptr<StreamState> stream);
  asio::awaitable<void> SendError(int status, std::string_view message, bool close,
                                  const Headers* extra = nullptr);
  // Sends `response` and, when `close`, closes the connection after it.
  asio::awaitable<void> SendClosing(Response response, bool close);
  // Half-closes, drains what the client still sends for a moment, then closes, so the client
  // reads our final response instead of a reset.
  asio::awaitable<void> LingeringClose();
  static asio::awaitable<void> FeedBody(std::shared_ptr<Session> self,
                                        std::shared_ptr<BodyPipe> pipe);
  void Dispatch(const Handler& handler, const RouteOptions& route, std::shared_ptr<Exchange> ex);

  // proxy.cc
  asio::awaitable<void> RunProxy(ProxyJob job);
  // ProxyOptions::raw_upgrade: 101 to the client, then the tunnel.
  asio::awaitable<void> AnswerRawUpgrade(const Headers& request_headers);
  // The client's answer to a relay aborted before the upstream's response head: the
  // abort_response (closing after it when `close`), or a cut connection without one.
  asio::awaitable<void> AnswerAbortedRelay(bool close);
  // Registers a connected socket with this loop as upstream_. False when it is not usable.
  bool AdoptUpstream(base::UniqueFd upstream);
  static asio::awaitable<void> Upload(std::shared_ptr<Session> self);
  static asio::awaitable<void> Pump(std::shared_ptr<Session> self, bool to_upstream);
  asio::awaitable<void> Tunnel(InputBuffer& upstream_in);

  // Reads more bytes into in_. False on EOF, error, or timeout (the session is then closed).
  asio::awaitable<bool> ReadMore();
  // Writes everything with the write deadline; false (and closed) on failure.
  asio::awaitable<bool> Write(std::span<const asio::const_buffer> buffers);
  asio::awaitable<bool> Write(std::string_view data);
  // Suspends until Signal() (or a spurious wake-up: always re-check the condition).
  asio::awaitable<void> WaitSignal(asio::steady_timer& timer);
  void Signal() { signal_.cancel(); }

  // Deadlines: the connection is dropped when any passes. Setting one later than the armed
  // watchdog costs nothing; the watchdog re-arms itself when it fires early.
  void SetReadDeadline(std::chrono::steady_clock::duration d, Deadline kind);
  void ClearReadDeadline();
  void SetWriteDeadline(std::chrono::steady_clock::duration d);
  void ClearWriteDeadline();
  void SetRelayDeadline(std::chrono::steady_clock::duration d);
  void ClearRelayDeadline();
  void ArmWatchdog(SteadyTime t);
  void OnWatchdog(const error_code& ec);

  // During a relay whose request is fully read, keeps a read of the client socket pending into
  // the empty in_: EOF or an error means the client left (the relay ends); bytes are its next
  // request, kept for Serve. Unlike StartClientWatch it costs no epoll_ctl (the socket stays armed
  // in epoll, so asio queues the read without re-arming it; asio's speculative first attempt is
  // one recv that finds nothing), and it is not cancelled when the relay ends: ReadMore takes it
  // over as the first read of the next request. Nothing else may touch in_ while it is pending;
  // ReadMore waits for it.
  void StartClientRead();
  void OnClientRead(const error_code& ec, size_t n);
  // Watches the idle socket for the client going away (EOF without consuming any bytes).
  void StartClientWatch();
  void StopClientWatch();
  void OnWatchReady(const error_code& ec, uint64_t generation);
  void ClientGone();

  std::string_view ConnectionValue() const;

  ServerShared& server_;
  Loop& loop_;
  tcp::socket socket_;
  std::string remote_;
  const std::string address_key_;  // in server_.limits
  InputBuffer in_;
  RequestParser parser_;

  asio::steady_timer watchdog_;
  SteadyTime armed_at_ = SteadyTime::max();
  SteadyTime read_deadline_ = SteadyTime::max();
  SteadyTime write_deadline_ = SteadyTime::max();
  SteadyTime relay_deadline_ = SteadyTime::max();
  Deadline read_kind_ = Deadline::kHead;  // what read_deadline_ bounds
  bool timed_out_ = false;

  asio::steady_timer signal_;         // wakes the main coroutine
  asio::steady_timer feeder_signal_;  // wakes the body feeder

  asio::cancellation_signal watch_cancel_;
  bool watch_active_ = false;
  uint64_t watch_generation_ = 0;

  bool client_read_pending_ = false;  // StartClientRead's read is in flight
  bool client_read_failed_ = false;   // and it ended in EOF or an error

  bool closed_ = false;
  bool idle_ = true;
  std::chrono::steady_clock::time_point idle_since_ = std::chrono::steady_clock::now();
  bool client_gone_ = false;

  // The request in flight.
  std::shared_ptr<Exchange> exchange_;
  std::optional<Answer> answer_;
  std::string request_id_;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_request_ = false;
  bool body_complete_ = true;
  bool feeding_ = false;
  // LingeringClose waits for a body feed or a relay's upload to stop reading the socket.
  bool lingering_ = false;
  bool body_taken_by_proxy_ = false;
  bool responding_ = false;  // an answer is being written
  std::shared_ptr<StreamState> stream_;

  // A relay in progress.
  std::optional<asio::generic::stream_protocol::socket> upstream_;
  RelayPhase relay_phase_ = RelayPhase::kNone;
  std::chrono::steady_clock::duration relay_idle_{};
  bool upload_running_ = false;
  bool upload_ok_ = true;
  bool pump_running_ = false;
  std::function<Response()> abort_response_;  // ProxyOptions::abort_response
  std::optional<Response> abort_answer_;      // made by it once an abort came
  // The fields of the head a relay is writing, borrowed from the message it read; kept here so
  // its storage is reused from one request to the next.
  std::vector<HeaderRef> head_fields_;
  // The upstream's response parser, made by the first relay and reset by each next one, so
  // a keep-alive connection's relays reuse its storage.
  std::optional<ResponseParser> relay_parser_;
  RelayOutcome relay_outcome_;  // the first failure of the relay, for on_done

  std::string out_;  // scratch for heads and chunk framing
};

}  // namespace warren::net::internal

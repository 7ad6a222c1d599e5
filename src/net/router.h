#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "net/http.h"
#include "net/upstream_pool.h"

namespace warren::net {

// The body of a response sent piece by piece (watch streams, Connect server streams, process
// output). Thread-safe: any thread may call any method. Writes go out in call order, each as one
// HTTP/1.1 chunk flushed to the socket as soon as the connection can take it.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;

  // Queues `data` as one chunk. Returns false when the stream is finished or the client is gone;
  // the producer should then stop. Never blocks.
  virtual bool Write(std::string data) = 0;

  // For producers on their own threads: blocks while more than `high_water` bytes are queued
  // and not yet written, so a slow client slows the producer instead of growing memory.
  // Returns false when the client is gone or `timeout` passes. Never call it on a loop thread.
  virtual bool WaitWritable(size_t high_water, std::chrono::milliseconds timeout) = 0;

  // Ends the body cleanly (terminating chunk); the connection may then serve the next request.
  virtual void Finish() = 0;

  // Drops the connection without a clean end, so the client sees the body terminate. Used when
  // a sandbox is killed under an open stream (the E2B SDK relies on exactly that).
  virtual void Abort() = 0;

  // True once finished, aborted, or the client has disconnected.
  virtual bool closed() const = 0;

  // Runs `callback` once, on some thread, when the stream closes for any reason (including the
  // client going away). Runs immediately if already closed. Usually that is a loop thread: the
  // callback must not block.
  virtual void OnClose(std::function<void()> callback) = 0;
};

// Where a relay stopped short. net knows what failed; the caller knows what the upstream is (the
// gateway: which sandbox), so net reports and the caller logs.
enum class RelayStep {
  kNone,           // it did not fail: the whole response reached the client's socket
  kUpstream,       // the socket handed to Proxy was not usable
  kSendRequest,    // writing the request (head, body, tunnel bytes) to the upstream
  kRequestBody,    // the client's streamed body was malformed or too large
  kReadResponse,   // the upstream reset, closed early or answered what is not HTTP
  kWriteResponse,  // writing to the client failed
  kClientGone,     // the client closed its connection mid-relay
  kAborted,        // ProxyHandle::Abort (answered with abort_response, or cut)
  kTimedOut,       // nothing moved for idle_timeout (or a write stalled)
  kShutdown,       // the server stopped
};
std::string_view RelayStepName(RelayStep step);

// How a relay ended: given to ProxyOptions::on_done.
struct RelayOutcome {
  RelayStep failed_step = RelayStep::kNone;
  std::string cause;              // what failed, in words ("Connection reset by peer")
  bool response_started = false;  // part of the upstream's response reached the client
  bool ok() const { return failed_step == RelayStep::kNone; }
};

struct ProxyOptions {
  // Bytes of the client's request already read past the headers are forwarded first; the
  // server arranges that. Upstream connect has already happened (the socket is connected).
  std::chrono::seconds idle_timeout{600};
  // Headers to set on the request forwarded upstream (e.g. rewritten Host), and to remove.
  Headers set_request_headers;
  std::vector<std::string> remove_request_headers;
  // Called once when the relay ends (either side closed, idle timeout, or Abort via the handle),
  // on the loop thread, with what went wrong if anything did. It must not block.
  std::function<void(const RelayOutcome&)> on_done;
  // Upstream keep-alive. When set, the upstream is not asked to close, and after a response
  // that leaves its connection reusable (complete and length- or chunk-delimited, the upstream
  // did not say close, the request body fully relayed, no upgrade, no stray bytes) the socket
  // is handed here instead of being closed, before on_done, on the loop thread. The callee owns
  // it; it must not block. Prefer pool_key, which keeps the connection on its loop.
  std::function<void(base::UniqueFd)> on_upstream_idle;
  // Upstream keep-alive inside net. When set, the upstream is not asked to close, and after a
  // response that leaves its connection reusable (as above) the connection stays open in the
  // server's UpstreamPool, on the loop that relayed, under this key, for at most
  // `pool_idle_timeout`; Responder::ProxyPooled hands it to a later request on that loop.
  // Takes precedence over on_upstream_idle.
  std::optional<UpstreamKey> pool_key;
  std::chrono::milliseconds pool_idle_timeout{1000};
  // Makes what the client gets when the relay is aborted (ProxyHandle::Abort) before any of the
  // upstream's response reached it, instead of a cut connection: a request in flight when its
  // upstream goes away still gets an answer. Once the response has started, an abort cuts.
  // Called only on an abort, on the loop thread: the relays that are not aborted (nearly all)
  // never build the answer.
  std::function<Response()> abort_response;
  // The upstream is a raw byte stream (a socket inside a sandbox), not an HTTP server: the
  // request must be an Upgrade; nothing of it is forwarded; the client gets a 101 naming the
  // protocol it asked for, and then the bytes both ways (the node relay's dial route). A request
  // without Upgrade gets a 400.
  bool raw_upgrade = false;
};

// Cancels a relay in flight, from any thread (the gateway aborts a killed sandbox's connections).
// Before the response head: the abort_response, or a cut; mid-response: a cut; once the response
// is complete (its last bytes are being written): nothing, the client gets all of it and keeps
// its connection.
class ProxyHandle {
 public:
  virtual ~ProxyHandle() = default;
  virtual void Abort() = 0;
};

// How a handler answers. Exactly one of Send, Stream or Proxy must be called, once (a second
// answer is logged and dropped). A Responder
// is a cheap movable handle; it may be moved to another thread and answered later. If the last
// handle is destroyed without answering, the server sends 500 with a message saying so.
class Responder {
 public:
  class Impl;
  explicit Responder(std::shared_ptr<Impl> impl);
  Responder(Responder&&) noexcept;
  Responder& operator=(Responder&&) noexcept;
  ~Responder();

  void Send(Response response);

  // Sends the status and headers now and returns the stream for the body. The body is chunked
  // unless `headers` carries Content-Length, in which case exactly that many bytes must be
  // written before Finish (a download of a file of known size).
  std::shared_ptr<ResponseStream> Stream(int status, Headers headers);

  // Hands the connection to a byte relay with `upstream` (already connected): the request
  // (start line, headers, body as it arrives) is forwarded, and the upstream's response is
  // relayed back without buffering, including Upgrade (WebSocket) where both directions are
  // pumped until either side closes. Returns a handle that can abort the relay.
  // The method, target, headers and (on buffered routes) body are taken from the Request as it
  // stands when Proxy is called. On stream_body routes the body must still be unread.
  // Hop-by-hop fields are dropped, the upstream is asked to close after its response (unless
  // ProxyOptions::on_upstream_idle takes the connection back), and the client connection stays
  // keep-alive after a complete response. A failure before the
  // upstream's response head answers 502; after it, the client connection is dropped.
  std::shared_ptr<ProxyHandle> Proxy(base::UniqueFd upstream, ProxyOptions options);

  // Proxy over an idle connection the server's UpstreamPool holds under `key` on the loop that
  // serves this request (one a relay with ProxyOptions::pool_key left there), with no dial, no
  // thread hop and one poll(2) to check the connection is still usable. Only an inline handler,
  // still on its loop thread, can have one. Returns null, and leaves this Responder and `options`
  // as they were, when that loop has no usable connection for the key (or the call is on another
  // thread): the caller then dials and calls Proxy. On success `options` has been moved from.
  std::shared_ptr<ProxyHandle> ProxyPooled(const UpstreamKey& key, ProxyOptions& options);

  // Whether the client is still connected (best effort).
  bool client_connected() const;

 private:
  std::shared_ptr<Impl> impl_;
};

// Handlers run on a loop thread unless their route is `blocking`, in which case they run on the
// server's blocking pool and may block (SQLite, fork/exec, waiting on a process).
using Handler = std::function<void(Request&& request, Responder responder)>;

// Who a blocking request is run for, when the blocking pool shares its threads: requests with
// the same key queue behind each other, keys take turns, and one key runs at most
// ServerOptions::blocking_threads_per_key handlers at once. Called on the loop thread with the
// request (head, and the body on buffered routes) before the handler is queued: it must be cheap
// and must not block. Only a hash of the result is kept. It may fill in what it learned for the
// handler (an authenticating wrapper sets Request::principal, so the caller is looked up once).
using FairnessKey = std::function<std::string(Request& request)>;

// The key blocking routes get when they set none: the X-API-Key header's value, else the
// Authorization header's, else the client's address without its port ("127.0.0.2").
std::string DefaultFairnessKey(const Request& request);

struct RouteOptions {
  bool blocking = false;
  // The handler reads the body itself through Request::body_reader (large uploads); the
  // handler is called once the head is in, and nothing of the body is read until it asks.
  // Read blocks, so call it from a blocking route or another thread: on a loop thread it fails
  // with FailedPrecondition. An inline handler may instead hand the unread body to
  // Responder::Proxy, which relays it as it arrives (what the gateway wants).
  bool stream_body = false;
  // Largest body accepted for this route; larger → 413 before the handler runs. 0 = server
  // default.
  size_t max_body_bytes = 0;
  // Blocking routes: see FairnessKey. Unset = DefaultFairnessKey.
  FairnessKey fairness_key;
};

// Maps method + path pattern to handlers. Patterns are literal segments and "{name}" captures
// ("/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}"); a final "{name...}" captures the
// rest of the path including slashes. Literal segments win over captures. Unknown path → 404,
// known path with another method → 405 with Allow. Build it fully before the server starts;
// then it is read-only and thread-safe.
class Router {
 public:
  Router();
  ~Router();
  Router(Router&&) noexcept;
  Router& operator=(Router&&) noexcept;

  void Add(std::string_view method, std::string_view pattern, Handler handler,
           RouteOptions options = {});
  // Answers every request no route matched (the gateway routes by Host and headers).
  void SetFallback(Handler handler, RouteOptions options = {});

  // Replaces every route's handler (and the fallback's, whose pattern is "") with what `wrap`
  // returns for it, and lets it adjust the route's options (a fairness key): one place to put a
  // check in front of every route, such as authentication, so that a route added anywhere is
  // covered without knowing about it. Call it once the router is complete, before the server
  // starts.
  using Wrapper = std::function<Handler(std::string_view method, std::string_view pattern,
                                        RouteOptions& options, Handler handler)>;
  void WrapAll(const Wrapper& wrap);

  struct Match {
    const Handler* handler = nullptr;
    const RouteOptions* options = nullptr;
    std::map<std::string, std::string, std::less<>> params;
    int error_status = 0;  // 404 or 405 when handler is null
    std::string allow;     // for 405
  };
  // `path` is the path as received, still percent-encoded and without the query: each segment
  // is decoded before matching, so an encoded '/' stays inside its capture. HEAD falls back to
  // the GET route. With a fallback set, every unmatched request (404 or 405) goes to it.
  Match Find(std::string_view method, std::string_view path) const;

 private:
  struct Node;
  std::unique_ptr<Node> root_;
  std::unique_ptr<std::pair<Handler, RouteOptions>> fallback_;
};

}  // namespace warren::net

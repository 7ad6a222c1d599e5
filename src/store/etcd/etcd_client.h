#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/json.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "net/http_client.h"

namespace warren::store::etcd {

// The answer to one gateway call.
struct CallResult {
  api::Json body;
  // An earlier attempt failed after the request may have reached a member, so a write may have
  // been applied already (the caller checks before reporting a conflict).
  bool ambiguous = false;
};

// Ends a watch stream from another thread: shuts the stream's socket down so its blocking read
// returns. Thread-safe; shared by the stream's thread and whoever cancels it.
class StreamCanceller {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  // Keeps a duplicate of the stream's socket; shut down at once if already cancelled.
  void Attach(base::UniqueFd fd);
  void Detach();

 private:
  std::mutex mu_;
  base::UniqueFd fd_;  // guarded by mu_
  std::atomic<bool> cancelled_{false};
};

struct EtcdClientOptions {
  // Per attempt on one member; a member that does not answer in time is skipped.
  std::chrono::milliseconds attempt_timeout{3000};
  // All attempts of one call, across members and leader elections.
  std::chrono::milliseconds call_timeout{15000};
};

// A client of etcd's v3 JSON gateway (POST /v3/<service>/<method>, base64 keys and values,
// 64-bit integers as strings) over several member endpoints. A call goes to the member that
// answered last and moves on to the next one when a member cannot be reached, times out, or
// answers Unavailable (no leader, leader changed, request timed out), with a short backoff, until
// call_timeout. etcd errors come back with their gRPC code (the same numbering as StatusCode)
// and etcd's message. Thread-safe.
class EtcdClient {
 public:
  // `endpoints`: "host:port" each.
  static Result<std::unique_ptr<EtcdClient>> Create(std::vector<std::string> endpoints,
                                                    EtcdClientOptions options = {});

  Result<CallResult> Call(std::string_view path, const api::Json& request);

  // Opens /v3/watch with `create_request` on one member and hands each message (the
  // "result" object) to `on_message` until it returns false, the stream ends, or `canceller`
  // fires. Returns Ok when on_message stopped it, Cancelled when cancelled, Unavailable when the
  // stream broke or no member answered (the caller resumes from its last revision).
  Status Watch(const api::Json& create_request, StreamCanceller& canceller,
               const std::function<bool(const api::Json& result)>& on_message);

  const std::vector<std::string>& endpoints() const { return endpoints_; }

 private:
  EtcdClient(std::vector<std::string> endpoints, EtcdClientOptions options);

  std::vector<std::string> endpoints_;
  std::vector<std::unique_ptr<net::HttpClient>> clients_;  // one per endpoint
  EtcdClientOptions options_;
  std::atomic<size_t> current_{0};  // the endpoint tried first
};

// Base64 as the gateway wants bytes.
std::string B64(std::string_view bytes);
// Decodes a base64 field (absent → empty).
std::string FromB64(const api::Json& object, const char* field);
// A 64-bit integer field the gateway sends as a string (absent → 0).
int64_t Int(const api::Json& object, const char* field);
// The end of the key range holding every key that starts with `prefix`.
std::string PrefixEnd(std::string_view prefix);

}  // namespace warren::store::etcd

#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/json.h"
#include "base/result.h"
#include "cli/terminal.h"
#include "net/http_client.h"

namespace warren::cli {

// Where a sandbox's envd is reached: the gateway, with the routing and auth headers of the
// E2B SDK (e2b-protocol.md §1.4, §3.1).
struct EnvdTarget {
  std::string gateway;     // "127.0.0.1:7781"
  std::string sandbox_id;  // E2B id
  std::string token;       // envdAccessToken ("" when the sandbox has none)
  std::string user = "user";
};

// One process in a sandbox through envd's process.Process service (Start as a server stream;
// SendInput, CloseStdin, Update and SendSignal as unary calls). Thread-safe: Run() on one thread
// while another sends input, resizes or kills (each call has its own pooled connection).
// Errors: Unavailable when the gateway cannot be reached, NotFound when it has no such sandbox
// (404/502), else the envd error's code and message.
class EnvdProcess {
 public:
  static Result<std::unique_ptr<EnvdProcess>> Connect(EnvdTarget target);

  struct StartOptions {
    api::Json process;                   // ProcessConfig: {cmd, args, envs, cwd?}
    std::optional<TerminalSize> pty;     // a PTY of this size, else pipes
    bool stdin = false;                  // pipes only: keep stdin open for SendInput
    std::chrono::seconds keepalive{50};  // envd's idle keepalive events
  };
  struct Handlers {
    std::function<void(uint32_t pid)> on_start;
    // `stream` is "stdout", "stderr" or "pty".
    std::function<void(std::string_view stream, std::string_view bytes)> on_data;
    // Asked at every message, keepalives included; false ends the stream (Cancelled).
    std::function<bool()> keep_going;
  };
  // Starts the process and follows it to its end; returns its exit code (128+9 when it was
  // killed by a signal, as a shell reports it).
  Result<int> Run(const StartOptions& options, const Handlers& handlers);

  Status SendInput(uint32_t pid, std::string_view bytes, bool pty);
  Status CloseStdin(uint32_t pid);
  Status Resize(uint32_t pid, TerminalSize size);
  Status Kill(uint32_t pid);

 private:
  EnvdProcess(EnvdTarget target, std::unique_ptr<net::HttpClient> http)
      : target_(std::move(target)), http_(std::move(http)) {}
  net::ClientRequest Request(std::string method, std::string_view content_type) const;
  Status Unary(std::string method, const api::Json& body);
  Status HttpFailure(int status, std::string_view body) const;

  const EnvdTarget target_;
  const std::unique_ptr<net::HttpClient> http_;
};

}  // namespace warren::cli

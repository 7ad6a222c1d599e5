#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::gateway {

// How the gateway reaches a port inside a sandbox. In production the node agent implements it
// (through runtime::Runtime::Dial: the socket is created inside the sandbox's network
// namespace); RuntimeDialer adapts a Runtime directly.
//
// Implementations are thread-safe. Dial may block up to `timeout` (and on a sandbox busy with a
// lifecycle operation): the gateway calls it on its own dial threads, never on an event loop.
// DialNow is the loop's: it answers at once or declines.
class SandboxDialer {
 public:
  virtual ~SandboxDialer() = default;
  // A connected TCP socket to 127.0.0.1:port inside the sandbox. Errors the gateway tells
  // apart: Unavailable (nothing listens there → "port is not open"), NotFound or
  // FailedPrecondition (no such sandbox, or not running → "sandbox was not found"); anything
  // else is reported as the port not being open.
  virtual Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                                      std::chrono::milliseconds timeout) = 0;
  // Dial on an event loop: never waits (runtime::Runtime::DialNow). nullopt when it would
  // have to, and the gateway then calls Dial on a dial thread. The default never dials here.
  virtual std::optional<Result<base::UniqueFd>> DialNow(std::string_view sandbox_id,
                                                        uint16_t port) {
    (void)sandbox_id;
    (void)port;
    return std::nullopt;
  }
};

// A SandboxDialer over any callable with Dial's signature and contract, e.g. the node agent's:
//   FunctionDialer([&agent](std::string_view id, uint16_t port, std::chrono::milliseconds t) {
//     return agent.Dial(id, port, t);
//   })
// Thread-safe as the callable is.
class FunctionDialer final : public SandboxDialer {
 public:
  using DialFn =
      std::function<Result<base::UniqueFd>(std::string_view, uint16_t, std::chrono::milliseconds)>;
  using DialNowFn =
      std::function<std::optional<Result<base::UniqueFd>>(std::string_view, uint16_t)>;
  explicit FunctionDialer(DialFn dial, DialNowFn dial_now = nullptr)
      : dial_(std::move(dial)), dial_now_(std::move(dial_now)) {}
  Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                              std::chrono::milliseconds timeout) override {
    return dial_(sandbox_id, port, timeout);
  }
  std::optional<Result<base::UniqueFd>> DialNow(std::string_view sandbox_id,
                                                uint16_t port) override {
    if (!dial_now_) return std::nullopt;
    return dial_now_(sandbox_id, port);
  }

 private:
  DialFn dial_;
  DialNowFn dial_now_;
};

}  // namespace warren::gateway

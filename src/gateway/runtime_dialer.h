#pragma once

#include "gateway/sandbox_dialer.h"
#include "runtime/runtime.h"

namespace warren::gateway {

// SandboxDialer over a Runtime whose sandbox ids are the E2B sandbox ids (contracts.md: the
// runtime's id, the hostname and the label agents.kruise.io/sandbox-id are one value).
// Borrows the runtime, which must outlive it. Thread-safe as the runtime is.
class RuntimeDialer final : public SandboxDialer {
 public:
  explicit RuntimeDialer(runtime::Runtime& runtime) : runtime_(runtime) {}
  Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                              std::chrono::milliseconds timeout) override {
    return runtime_.Dial(sandbox_id, port, timeout);
  }
  std::optional<Result<base::UniqueFd>> DialNow(std::string_view sandbox_id,
                                                uint16_t port) override {
    return runtime_.DialNow(sandbox_id, port);
  }

 private:
  runtime::Runtime& runtime_;
};

}  // namespace warren::gateway

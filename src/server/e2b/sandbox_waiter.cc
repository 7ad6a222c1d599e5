#include "server/e2b/sandbox_waiter.h"

#include <fmt/format.h>

#include "api/field_selector.h"
#include "api/kinds.h"

namespace warren::server::e2b {

Result<api::Object> WaitForSandbox(store::Store& store, std::string_view namespace_,
                                   std::string_view name, const SandboxCheck& check,
                                   std::chrono::milliseconds timeout, std::string_view what,
                                   const std::function<bool()>& abandoned) {
  return WaitForObject(store, api::SandboxKind(), namespace_, name, check, timeout, what,
                       abandoned);
}

Result<api::Object> WaitForObject(store::Store& store, const api::KindInfo& kind,
                                  std::string_view namespace_, std::string_view name,
                                  const SandboxCheck& check, std::chrono::milliseconds timeout,
                                  std::string_view what, const std::function<bool()>& abandoned) {
  const std::string& noun = kind.singular;
  // How long one watch wait lasts when a client may give up meanwhile.
  constexpr std::chrono::milliseconds kAbandonCheck{250};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  store::WatchOptions options;
  options.namespace_ = std::string(namespace_);
  ASSIGN_OR_RETURN(options.field_selector,
                   api::FieldSelector::Parse(fmt::format("metadata.name={}", name)));
  ASSIGN_OR_RETURN(auto watcher, store.Watch(&kind, std::move(options)));
  std::string last_phase = "unknown";
  std::string last_message;
  bool seen = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    if (abandoned && abandoned()) {
      return CancelledError(
          fmt::format("the client went away while waiting for {} {} to be {}", noun, name, what));
    }
    ASSIGN_OR_RETURN(auto event, watcher->Next(abandoned ? std::min(left, kAbandonCheck) : left));
    if (!event) continue;  // the deadline and the client are checked at the top
    const api::Object& o = *event->object;
    if (event->type == store::EventType::kDeleted) {
      return NotFoundError(
          fmt::format("{} {} was deleted while waiting for it to be {}", noun, name, what));
    }
    seen = true;
    const api::Json& status = o.status();
    if (status.is_object()) {
      if (auto p = status.find("phase"); p != status.end() && p->is_string()) {
        last_phase = p->get<std::string>();
      }
      if (auto m = status.find("message"); m != status.end() && m->is_string()) {
        last_message = m->get<std::string>();
      }
    }
    ASSIGN_OR_RETURN(bool done, check(o));
    if (done) return o;
  }
  if (!seen) {
    return NotFoundError(fmt::format("{} {} not found", noun, name));
  }
  std::string detail = last_message.empty() ? "" : fmt::format(": {}", last_message);
  return DeadlineExceededError(fmt::format("{} {} was not {} within {} ms (phase {}{})", noun, name,
                                           what, timeout.count(), last_phase, detail));
}

}  // namespace warren::server::e2b

#include "node/event_recorder.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/event.h"
#include "base/ids.h"
#include "base/log.h"

namespace warren::node {
namespace {

constexpr size_t kMaxMessage = 1024;  // Kubernetes truncates event messages too

}  // namespace

EventRecorder::EventRecorder(store::Store& store, base::Clock& clock, std::string component,
                             std::string host)
    : store_(store), clock_(clock), component_(std::move(component)), host_(std::move(host)) {}

void EventRecorder::Warning(const api::Object& about, const std::string& reason,
                            const std::string& message) {
  Record(about, "Warning", reason, message);
}

void EventRecorder::Normal(const api::Object& about, const std::string& reason,
                           const std::string& message) {
  Record(about, "Normal", reason, message);
}

void EventRecorder::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  for (auto it = seen_.begin(); it != seen_.end();) {
    it = std::get<0>(it->first) == uid ? seen_.erase(it) : std::next(it);
  }
}

void EventRecorder::Record(const api::Object& about, const std::string& type,
                           const std::string& reason, const std::string& raw_message) {
  auto log = base::Logger("node");
  std::string message = raw_message.substr(0, kMaxMessage);
  const auto key = std::make_tuple(about.metadata.uid, reason, message);
  const base::WallTime now = clock_.Now();
  std::string existing;
  {
    std::lock_guard lock(mu_);
    if (auto it = seen_.find(key); it != seen_.end()) existing = it->second;
  }
  if (!existing.empty()) {
    // The same report again: count it on the existing Event.
    auto ev = store_.Get(api::EventKind(), about.metadata.namespace_, existing);
    if (ev.ok()) {
      auto fields = api::DecodeTyped<api::EventFields>(ev->body, "");
      if (fields.ok()) {
        fields->count = std::max(fields->count, 1) + 1;
        fields->last_timestamp = now;
        api::EncodeTyped(*fields, ev->body);
        if (auto s = store_.Update(*ev); s.ok()) return;
      }
    }
    // Gone (or a conflict): write a new one below.
  }
  api::Object ev;
  ev.api_version = api::EventKind().ApiVersion();
  ev.kind = api::EventKind().kind;
  ev.metadata.namespace_ = about.metadata.namespace_;
  ev.metadata.name = fmt::format("{}.{}", about.metadata.name, base::RandomHex(8));
  if (ev.metadata.name.size() > 253) ev.metadata.name = base::RandomHex(16);
  api::OwnerReference owner;
  owner.api_version = about.api_version;
  owner.kind = about.kind;
  owner.name = about.metadata.name;
  owner.uid = about.metadata.uid;
  ev.metadata.owner_references.push_back(owner);
  api::EventFields f;
  f.involved_object.api_version = about.api_version;
  f.involved_object.kind = about.kind;
  f.involved_object.namespace_ = about.metadata.namespace_;
  f.involved_object.name = about.metadata.name;
  f.involved_object.uid = about.metadata.uid;
  f.involved_object.resource_version = std::to_string(about.metadata.resource_version);
  f.reason = reason;
  f.message = message;
  f.type = type;
  f.source.component = component_;
  f.source.host = host_;
  f.first_timestamp = now;
  f.last_timestamp = now;
  f.count = 1;
  api::EncodeTyped(f, ev.body);
  auto created = store_.Create(std::move(ev));
  if (!created.ok()) {
    log->warn("event not recorded object={} reason={} error=\"{}\"", about.Key(), reason,
              created.status().ToString());
    return;
  }
  log->info("event object={} type={} reason={} message=\"{}\"", about.Key(), type, reason, message);
  std::lock_guard lock(mu_);
  seen_[key] = created->metadata.name;
}

}  // namespace warren::node

#include "obs/event_recorder.h"

#include <fmt/format.h>
#include <unistd.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/event.h"
#include "base/ids.h"

namespace warren::obs {
namespace {

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

// Events of cluster-scoped objects (Nodes) go to "default", as Kubernetes does.
std::string EventNamespace(const api::Object& involved) {
  return involved.metadata.namespace_.empty() ? "default" : involved.metadata.namespace_;
}

// Kubernetes' name shape, "<object>.<16 hex>", with the object's name cut so the whole stays a
// valid DNS subdomain.
std::string EventName(const api::Object& involved) {
  std::string base = involved.metadata.name.substr(0, 200);
  while (!base.empty() && (base.back() == '.' || base.back() == '-')) base.pop_back();
  if (base.empty()) base = "object";
  return fmt::format("{}.{}", base, base::RandomHex(8));
}

}  // namespace

EventRecorder::EventRecorder(store::Store& store, Options options, base::Clock& clock)
    : store_(store), options_(std::move(options)), clock_(clock) {
  if (options_.host.empty()) options_.host = Hostname();
}

Status EventRecorder::Record(const api::Object& involved, EventType type, std::string_view reason,
                             std::string_view message) {
  std::string identity = involved.metadata.uid.empty()
                             ? fmt::format("{}/{}/{}", involved.metadata.namespace_, involved.kind,
                                           involved.metadata.name)
                             : involved.metadata.uid;
  Key key{identity, static_cast<int>(type), std::string(reason), std::string(message)};
  base::WallTime now = clock_.Now();
  std::string ns, name;
  {
    std::lock_guard lock(mu_);
    auto it = remembered_.find(key);
    if (it != remembered_.end() && now - it->second.first_seen < options_.fold_window) {
      ns = it->second.namespace_;
      name = it->second.name;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
    }
  }
  if (name.empty()) return Create(involved, type, reason, message, key);

  // A repeat: bump the count of the Event we wrote. Read-modify-write with the read revision as
  // a precondition, so two recorders folding into one Event never lose a count.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto current = store_.Get(api::EventKind(), ns, name);
    if (!current.ok()) {
      if (current.status().code() != StatusCode::kNotFound) return current.status();
      {
        std::lock_guard lock(mu_);
        auto it = remembered_.find(key);
        if (it != remembered_.end()) {
          lru_.erase(it->second.lru);
          remembered_.erase(it);
        }
      }
      return Create(involved, type, reason, message, key);  // deleted meanwhile
    }
    ASSIGN_OR_RETURN(auto event, api::DecodeTyped<api::EventFields>(current->body, ""));
    event.count = std::max(event.count, 1) + 1;
    event.last_timestamp = now;
    api::EncodeTyped(event, current->body);
    auto updated = store_.Update(*current);
    if (updated.ok()) return Status::Ok();
    if (updated.status().code() != StatusCode::kAborted) return updated.status();
  }
  return AbortedError(fmt::format("event {}/{}: too many concurrent updates", ns, name));
}

Status EventRecorder::Create(const api::Object& involved, EventType type, std::string_view reason,
                             std::string_view message, const Key& key) {
  base::WallTime now = clock_.Now();
  api::EventFields event;
  event.involved_object.api_version = involved.api_version;
  event.involved_object.kind = involved.kind;
  event.involved_object.namespace_ = involved.metadata.namespace_;
  event.involved_object.name = involved.metadata.name;
  event.involved_object.uid = involved.metadata.uid;
  if (involved.metadata.resource_version != 0) {
    event.involved_object.resource_version = std::to_string(involved.metadata.resource_version);
  }
  event.reason = std::string(reason);
  event.message = std::string(message);
  event.type = type == EventType::kWarning ? "Warning" : "Normal";
  event.source.component = options_.component;
  event.source.host = options_.host;
  event.first_timestamp = now;
  event.last_timestamp = now;
  event.count = 1;

  api::Object object;
  object.api_version = api::kWarrenApiVersion;
  object.kind = "Event";
  object.metadata.namespace_ = EventNamespace(involved);
  object.metadata.name = EventName(involved);
  api::EncodeTyped(event, object.body);
  ASSIGN_OR_RETURN(auto created, store_.Create(std::move(object)));
  Remember(key, created.metadata.namespace_, created.metadata.name, now);
  return Status::Ok();
}

void EventRecorder::Remember(const Key& key, std::string namespace_, std::string name,
                             base::WallTime now) {
  std::lock_guard lock(mu_);
  auto it = remembered_.find(key);
  if (it != remembered_.end()) {
    lru_.erase(it->second.lru);
    remembered_.erase(it);
  }
  lru_.push_front(key);
  remembered_.emplace(key, Remembered{std::move(namespace_), std::move(name), now, lru_.begin()});
  while (remembered_.size() > options_.max_remembered) {
    remembered_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace warren::obs

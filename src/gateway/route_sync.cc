#include "gateway/route_sync.h"

#include <fmt/format.h>

#include <set>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/ids.h"
#include "base/log.h"

namespace warren::gateway {
namespace {

std::string_view Annotation(const api::Object& object, const char* key) {
  auto it = object.metadata.annotations.find(key);
  return it == object.metadata.annotations.end() ? std::string_view() : it->second;
}

// A boolean or string field of a JSON object, without throwing on unexpected types.
bool JsonBool(const api::Json& object, const char* key) {
  if (!object.is_object()) return false;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}
std::string JsonString(const api::Json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool IsUnclaimedPoolMember(const api::Object& sandbox) {
  const auto& labels = sandbox.metadata.labels;
  auto pool = labels.find(api::labels::kSandboxPool);
  auto claimed = labels.find(api::labels::kSandboxClaimed);
  return pool != labels.end() && !pool->second.empty() &&
         (claimed == labels.end() || claimed->second != "true");
}

RouteState StateOf(const api::Object& sandbox) {
  if (sandbox.metadata.deletion_timestamp) return RouteState::kGone;
  if (IsUnclaimedPoolMember(sandbox)) return RouteState::kClosed;
  if (JsonBool(sandbox.spec(), "paused")) return RouteState::kPaused;
  std::string phase = JsonString(sandbox.status(), "phase");
  if (phase == api::sandbox_phase::kRunning) return RouteState::kRunning;
  if (phase == api::sandbox_phase::kPaused || phase == api::sandbox_phase::kResuming) {
    return RouteState::kPaused;
  }
  return RouteState::kGone;
}

}  // namespace

std::string SandboxIdOf(const api::Object& sandbox) {
  auto label = sandbox.metadata.labels.find(api::labels::kSandboxId);
  if (label != sandbox.metadata.labels.end() && !label->second.empty()) return label->second;
  return std::string(Annotation(sandbox, api::annotations::kSandboxId));
}

Result<Route> RouteFromSandbox(const api::Object& sandbox, const api::SandboxSecrets& secrets) {
  Route route;
  route.sandbox_id = SandboxIdOf(sandbox);
  if (route.sandbox_id.empty()) {
    return InvalidArgumentError(
        fmt::format("sandbox {} has no {} label", sandbox.Key(), api::labels::kSandboxId));
  }
  route.namespace_ = sandbox.metadata.namespace_;
  route.name = sandbox.metadata.name;
  route.uid = sandbox.metadata.uid;
  route.resource_version = sandbox.metadata.resource_version;
  route.state = StateOf(sandbox);
  // A token that does not open closes what it guards: a random one nobody holds.
  auto opened = [&](Result<std::string> token, std::string_view which) {
    if (token.ok()) return std::move(*token);
    base::Logger("gateway")->warn("sandbox closed: its {} token does not open id={} error={}",
                                  which, route.sandbox_id, token.status().ToString());
    return base::RandomHex(32);
  };
  route.access_token = opened(secrets.AccessToken(sandbox), "access");
  route.traffic_token = opened(secrets.TrafficToken(sandbox), "traffic");
  route.auto_resume = Annotation(sandbox, kAutoResumeAnnotation) == "true";
  route.mask_request_host = Annotation(sandbox, kMaskRequestHostAnnotation);
  const api::Json& spec = sandbox.spec();
  if (spec.is_object() && spec.contains("pauseStrategy") && spec["pauseStrategy"].is_object()) {
    const api::Json& idle = spec["pauseStrategy"].value("idleSeconds", api::Json());
    if (idle.is_number_integer() && idle.get<int64_t>() > 0) {
      route.idle_pause_seconds = idle.get<int64_t>();
    }
  }
  return route;
}

Result<std::unique_ptr<RouteSync>> RouteSync::Start(store::Store& store,
                                                    const api::SandboxSecrets& secrets,
                                                    RouteTable& routes, RouteSyncOptions options) {
  std::unique_ptr<RouteSync> sync(new RouteSync(store, secrets, routes, options));
  RETURN_IF_ERROR(sync->ListAndWatch().WithPrefix("gateway route sync"));
  RouteSync* s = sync.get();
  sync->thread_ = std::thread([s] { s->Run(); });
  return sync;
}

RouteSync::RouteSync(store::Store& store, const api::SandboxSecrets& secrets, RouteTable& routes,
                     RouteSyncOptions options)
    : store_(store), secrets_(secrets), routes_(routes), options_(options) {}

RouteSync::~RouteSync() { Stop(); }

void RouteSync::Stop() {
  std::unique_ptr<store::Subscription> subscription;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    subscription = std::move(subscription_);
  }
  wake_.notify_all();
  if (subscription) subscription->Cancel();
  if (thread_.joinable()) thread_.join();
}

RouteSyncStats RouteSync::Stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status RouteSync::ListAndWatch() {
  ASSIGN_OR_RETURN(store::ObjectList list, store_.List(api::SandboxKind(), {}));
  std::set<std::string, std::less<>> present;
  for (const api::Object& sandbox : list.items) {
    auto route = RouteFromSandbox(sandbox, secrets_);
    if (!route.ok()) continue;
    present.insert(route->sandbox_id);
    routes_.Upsert(std::move(route).value());
  }
  size_t removed = routes_.RemoveAbsent(present, list.resource_version);
  uint64_t epoch;
  {
    std::lock_guard lock(mu_);
    epoch = ++epoch_;
    stats_.revision = std::max(stats_.revision, list.resource_version);
  }
  store::WatchOptions watch;
  watch.resource_version = list.resource_version;
  store::WatchSink sink;
  sink.on_event = [this](const store::WatchEvent& event) { OnEvent(event); };
  sink.on_close = [this, epoch](const Status& status) { OnClose(status, epoch); };
  ASSIGN_OR_RETURN(std::unique_ptr<store::Subscription> subscription,
                   store_.Subscribe(&api::SandboxKind(), std::move(watch), std::move(sink)));
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      subscription->CancelAsync();
    } else {
      subscription_ = std::move(subscription);
    }
  }
  base::Logger("gateway")->info("routes listed sandboxes={} routes={} removed={} revision={}",
                                list.items.size(), present.size(), removed, list.resource_version);
  return Status::Ok();
}

bool ApplySandboxEvent(RouteTable& routes, const store::WatchEvent& event,
                       const api::SandboxSecrets& secrets) {
  const api::Object& sandbox = *event.object;
  std::string id = SandboxIdOf(sandbox);
  if (id.empty()) return false;
  if (event.type == store::EventType::kDeleted) {
    return routes.Remove(id, sandbox.metadata.resource_version, sandbox.metadata.uid);
  }
  auto route = RouteFromSandbox(sandbox, secrets);
  return route.ok() && routes.Upsert(std::move(route).value()) == UpdateResult::kApplied;
}

void RouteSync::OnEvent(const store::WatchEvent& event) {
  bool applied = ApplySandboxEvent(routes_, event, secrets_);
  std::lock_guard lock(mu_);
  ++stats_.events;
  ++(applied ? stats_.applied : stats_.ignored);
  stats_.revision = std::max(stats_.revision, event.revision);
}

void RouteSync::OnClose(const Status& status, uint64_t epoch) {
  base::Logger("gateway")->warn("sandbox watch ended error={}", status.ToString());
  {
    std::lock_guard lock(mu_);
    if (epoch != epoch_) return;
    need_resync_ = true;
  }
  wake_.notify_all();
}

void RouteSync::Run() {
  std::chrono::milliseconds backoff = options_.retry_min;
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || need_resync_; });
    if (stopping_) return;
    need_resync_ = false;
    // The ended subscription goes (Cancel must not run inside its callbacks: here it does not).
    std::unique_ptr<store::Subscription> ended = std::move(subscription_);
    ++stats_.resyncs;
    lock.unlock();
    ended.reset();
    Status status = ListAndWatch();
    lock.lock();
    if (status.ok()) {
      backoff = options_.retry_min;
      continue;
    }
    base::Logger("gateway")->warn("route resync failed error={} retry_ms={}", status.ToString(),
                                  backoff.count());
    need_resync_ = true;
    wake_.wait_for(lock, backoff, [&] { return stopping_; });
    backoff = std::min(backoff * 2, options_.retry_max);
  }
}

}  // namespace warren::gateway

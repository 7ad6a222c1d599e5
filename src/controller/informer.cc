#include "controller/informer.h"

#include <fmt/format.h>

#include <unordered_set>

#include "base/check.h"
#include "base/log.h"

namespace warren::controller {

Informer::Informer(store::Store& store, Options options)
    : store_(store), options_(std::move(options)) {
  CHECK(options_.kind != nullptr);
}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(Handler handler) { handlers_.push_back(std::move(handler)); }

std::string Informer::Key(std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(ns.size() + name.size() + 1);
  key.append(ns).append("/").append(name);
  return key;
}

Status Informer::Start() {
  RETURN_IF_ERROR(Resync());
  resync_thread_ = std::thread([this] { ResyncLoop(); });
  return Status::Ok();
}

void Informer::Stop() {
  std::unique_ptr<store::Subscription> subscription;
  {
    std::lock_guard lock(watch_mu_);
    if (stopping_) return;
    stopping_ = true;
    subscription = std::move(subscription_);
  }
  watch_cv_.notify_all();
  if (subscription) subscription->Cancel();
  if (resync_thread_.joinable()) resync_thread_.join();
}

void Informer::Apply(store::EventType type, ObjectPtr object, int64_t revision) {
  std::lock_guard apply_lock(apply_mu_);
  std::string key = Key(object->metadata.namespace_, object->metadata.name);
  Change change{type, object, nullptr};
  {
    std::lock_guard lock(mu_);
    auto it = objects_.find(key);
    if (it != objects_.end()) change.old = it->second;
    if (type == store::EventType::kDeleted) {
      if (it != objects_.end()) objects_.erase(it);
    } else {
      if (change.old) change.type = store::EventType::kModified;
      objects_[key] = object;
    }
  }
  for (const auto& handler : handlers_) handler(change);
  // Only now: a waiter for this revision may read what the handlers index (a controller's
  // member counts), not only the cache.
  {
    std::lock_guard lock(mu_);
    revision_ = std::max(revision_, revision);
    ++applied_;
  }
  revision_cv_.notify_all();
}

Status Informer::Subscribe(int64_t from_revision) {
  uint64_t generation;
  {
    std::lock_guard lock(watch_mu_);
    if (stopping_) return Status::Ok();
    generation = ++generation_;
  }
  store::WatchOptions options;
  options.namespace_ = options_.namespace_;
  options.label_selector = options_.label_selector;
  options.resource_version = from_revision;
  store::WatchSink sink;
  sink.on_event = [this](const store::WatchEvent& event) {
    Apply(event.type, event.object, event.revision);
  };
  sink.on_close = [this, generation](const Status& status) {
    base::Logger("controller")
        ->warn("watch ended informer={} error={}", options_.name, status.ToString());
    std::lock_guard lock(watch_mu_);
    if (generation != generation_) return;
    need_resync_ = true;
    watch_cv_.notify_all();
  };
  ASSIGN_OR_RETURN(auto subscription, store_.Subscribe(options_.kind, options, std::move(sink)));
  std::unique_ptr<store::Subscription> old;
  {
    std::lock_guard lock(watch_mu_);
    if (stopping_) {
      old = std::move(subscription);
    } else {
      old = std::move(subscription_);
      subscription_ = std::move(subscription);
    }
  }
  if (old) old->Cancel();
  return Status::Ok();
}

Status Informer::Resync() {
  {
    // The old watch (if any) must be quiet before the list is applied, or its late events
    // could interleave with the diff.
    std::unique_ptr<store::Subscription> old;
    {
      std::lock_guard lock(watch_mu_);
      old = std::move(subscription_);
      ++generation_;
    }
    if (old) old->Cancel();
  }
  store::ListOptions list_options;
  list_options.namespace_ = options_.namespace_;
  list_options.label_selector = options_.label_selector;
  ASSIGN_OR_RETURN(auto list, store_.List(*options_.kind, list_options));

  std::unordered_set<std::string> listed;
  for (auto& item : list.items) {
    std::string key = Key(item.metadata.namespace_, item.metadata.name);
    listed.insert(key);
    ObjectPtr cached = Get(item.metadata.namespace_, item.metadata.name);
    if (cached && cached->metadata.resource_version == item.metadata.resource_version) continue;
    Apply(store::EventType::kAdded, std::make_shared<const api::Object>(std::move(item)),
          list.resource_version);
  }
  std::vector<ObjectPtr> gone;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, object] : objects_) {
      if (!listed.contains(key)) gone.push_back(object);
    }
  }
  for (auto& object : gone) Apply(store::EventType::kDeleted, object, list.resource_version);
  {
    std::lock_guard lock(mu_);
    revision_ = std::max(revision_, list.resource_version);
  }
  revision_cv_.notify_all();
  return Subscribe(list.resource_version);
}

void Informer::ResyncLoop() {
  std::unique_lock lock(watch_mu_);
  while (true) {
    watch_cv_.wait(lock, [this] { return stopping_ || need_resync_; });
    if (stopping_) return;
    need_resync_ = false;
    lock.unlock();
    Status s = Resync();
    lock.lock();
    if (!s.ok()) {
      base::Logger("controller")
          ->warn("resync failed informer={} error={}", options_.name, s.ToString());
      need_resync_ = true;
      watch_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    }
  }
}

ObjectPtr Informer::Get(std::string_view namespace_, std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(Key(namespace_, name));
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Informer::List() const {
  std::lock_guard lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(objects_.size());
  for (const auto& [key, object] : objects_) out.push_back(object);
  return out;
}

int64_t Informer::revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

bool Informer::WaitForRevision(int64_t rv, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return revision_cv_.wait_for(lock, timeout, [&] { return revision_ >= rv; });
}

}  // namespace warren::controller

namespace warren::controller {

bool Informer::WaitUntil(const std::function<bool()>& done,
                         std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    uint64_t seen;
    {
      std::lock_guard lock(mu_);
      seen = applied_;
    }
    if (done()) return true;
    std::unique_lock lock(mu_);
    if (!revision_cv_.wait_until(lock, deadline, [&] { return applied_ != seen; })) {
      lock.unlock();
      return done();
    }
  }
}

}  // namespace warren::controller

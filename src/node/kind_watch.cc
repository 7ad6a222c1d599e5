#include "node/kind_watch.h"

#include "base/log.h"

namespace warren::node {

using namespace std::chrono_literals;

KindWatch::KindWatch(store::Store& store, const api::KindInfo& kind,
                     std::function<void(const std::string& key)> on_key,
                     std::function<void()> after_list)
    : store_(store), kind_(kind), on_key_(std::move(on_key)), after_list_(std::move(after_list)) {}

KindWatch::~KindWatch() { Stop(); }

void KindWatch::Start() {
  const int64_t revision = Relist();
  thread_ = std::thread([this, revision] { Loop(revision); });
}

void KindWatch::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard lock(mu_);
    if (watcher_) watcher_->Stop();
  }
  if (thread_.joinable()) thread_.join();
}

int64_t KindWatch::Relist() {
  auto list = store_.List(kind_, {});
  if (!list.ok()) {
    base::Logger("node")->error("listing {} failed error=\"{}\"", kind_.plural,
                                list.status().ToString());
    return 0;
  }
  if (objects_.on_list) objects_.on_list(list->items);
  for (const api::Object& obj : list->items) on_key_(obj.Key());
  if (after_list_) after_list_();
  return list->resource_version;
}

void KindWatch::Loop(int64_t revision) {
  while (!stopping_) {
    store::WatchOptions wo;
    if (revision > 0) wo.resource_version = revision;
    auto w = store_.Watch(&kind_, wo);
    if (!w.ok()) {
      base::Logger("node")->warn("watch of {} failed, relisting error=\"{}\"", kind_.plural,
                                 w.status().ToString());
      std::this_thread::sleep_for(200ms);
      revision = Relist();
      continue;
    }
    {
      std::lock_guard lock(mu_);
      watcher_ = std::move(*w);
      if (stopping_) watcher_->Stop();
    }
    while (!stopping_) {
      auto ev = watcher_->Next(1s);
      if (!ev.ok()) {
        if (!stopping_) {
          base::Logger("node")->info("watch of {} ended, relisting reason=\"{}\"", kind_.plural,
                                     ev.status().ToString());
        }
        break;
      }
      if (!ev->has_value()) continue;
      revision = (*ev)->revision;
      if (objects_.on_event) objects_.on_event(**ev);
      on_key_((*ev)->object->Key());
    }
    if (!stopping_) revision = Relist();
  }
}

}  // namespace warren::node

#include "server/e2b/init_replayer.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/log.h"
#include "base/time_format.h"
#include "server/e2b/envd_init.h"
#include "server/e2b/sandbox_record.h"

namespace warren::server::e2b {
namespace {

constexpr int kMaxAttempts = 5;

std::string Annotation(const api::Object& o, const char* key) {
  auto it = o.metadata.annotations.find(key);
  return it == o.metadata.annotations.end() ? "" : it->second;
}

bool IsReady(const api::Object& o) {
  if (o.metadata.deletion_timestamp) return false;
  auto status = api::DecodeStatus<api::SandboxStatus>(o);
  if (!status.ok()) return false;
  return status->phase == api::sandbox_phase::kRunning &&
         api::IsConditionTrue(status->conditions, "Ready");
}

// Identifies one readiness of a sandbox: the Ready condition's transition time.
std::string ReadyMarker(const api::Object& o) {
  auto status = api::DecodeStatus<api::SandboxStatus>(o);
  if (!status.ok()) return "";
  const auto* c = api::FindCondition(status->conditions, "Ready");
  if (c == nullptr || !c->last_transition_time) return "ready";
  return base::FormatRfc3339(*c->last_transition_time);
}

}  // namespace

InitReplayer::InitReplayer(store::Store& store, NodeAccess& node,
                           std::chrono::milliseconds init_timeout)
    : store_(store), node_(node), init_timeout_(init_timeout) {}

InitReplayer::~InitReplayer() { Stop(); }

Status InitReplayer::Start() {
  ASSIGN_OR_RETURN(auto list, store_.List(api::SandboxKind(), {}));
  {
    std::lock_guard lock(mu_);
    for (const auto& o : list.items) {
      bool ready = IsReady(o);
      seen_[o.metadata.uid] = Seen{ready, ready};
    }
  }
  for (const auto& o : list.items) {
    if (IsReady(o)) Enqueue(o);
  }
  store::WatchOptions options;
  options.resource_version = list.resource_version;
  store::WatchSink sink;
  sink.on_event = [this](const store::WatchEvent& e) { OnEvent(e); };
  sink.on_close = [](const Status& s) {
    base::Logger("e2b")->warn("init replayer watch ended error={}", s.ToString());
  };
  ASSIGN_OR_RETURN(subscription_, store_.Subscribe(&api::SandboxKind(), options, std::move(sink)));
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void InitReplayer::Stop() {
  if (subscription_) subscription_->Cancel();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void InitReplayer::NoteInitialised(const api::Object& sandbox) {
  std::lock_guard lock(mu_);
  done_[sandbox.metadata.uid] = ReadyMarker(sandbox);
  Seen& s = seen_[sandbox.metadata.uid];
  s.ready = s.ever_ready = true;
}

uint64_t InitReplayer::replays() const {
  std::lock_guard lock(mu_);
  return replays_;
}

void InitReplayer::Enqueue(const api::Object& o) {
  std::string body = Annotation(o, api::annotations::kInitRuntimeRequest);
  if (body.empty()) return;
  auto record = RecordFromObject(o);
  if (!record.ok()) return;
  Job job{.uid = o.metadata.uid,
          .sandbox_id = record->sandbox_id,
          .body = std::move(body),
          .token = record->access_token,
          .marker = ReadyMarker(o)};
  {
    std::lock_guard lock(mu_);
    if (auto it = done_.find(job.uid); it != done_.end() && it->second == job.marker) return;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void InitReplayer::OnEvent(const store::WatchEvent& event) {
  const api::Object& o = *event.object;
  const std::string& uid = o.metadata.uid;
  if (event.type == store::EventType::kDeleted) {
    std::lock_guard lock(mu_);
    seen_.erase(uid);
    done_.erase(uid);
    return;
  }
  bool ready = IsReady(o);
  bool replay = false;
  {
    std::lock_guard lock(mu_);
    Seen& s = seen_[uid];
    replay = ready && !s.ready && s.ever_ready;
    s.ready = ready;
    s.ever_ready = s.ever_ready || ready;
  }
  if (replay) Enqueue(o);
}

void InitReplayer::Run() {
  auto log = base::Logger("e2b");
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      if (auto it = done_.find(job.uid); it != done_.end() && it->second == job.marker) continue;
      if (!seen_.count(job.uid)) continue;  // deleted meanwhile
    }
    Status s = SendInit(node_, job.sandbox_id, job.body, job.token, init_timeout_);
    std::unique_lock lock(mu_);
    if (s.ok()) {
      done_[job.uid] = job.marker;
      ++replays_;
      log->info("envd init replayed id={}", job.sandbox_id);
    } else if (++job.attempts < kMaxAttempts && s.code() != StatusCode::kNotFound && !stopping_) {
      log->warn("envd init replay failed id={} attempt={} error={}", job.sandbox_id, job.attempts,
                s.ToString());
      wake_.wait_for(lock, std::chrono::seconds(job.attempts), [this] { return stopping_; });
      queue_.push_back(std::move(job));
    } else {
      log->error("envd init replay gave up id={} error={}", job.sandbox_id, s.ToString());
    }
  }
}

}  // namespace warren::server::e2b

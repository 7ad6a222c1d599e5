#include "node/image_puller.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "base/log.h"
#include "image/commands.h"
#include "image/pull_meter.h"

namespace warren::node {
namespace {

auto Log() {
  static auto logger = base::Logger("image-puller");
  return logger;
}

constexpr int kConflictRetries = 10;
constexpr auto kMaxBackoff = std::chrono::seconds(30);
constexpr auto kProgressEvery = std::chrono::seconds(1);

// An error no retry can change: the reference itself, or the node's allowlist.
bool Permanent(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kPermissionDenied;
}

}  // namespace

ImagePuller::ImagePuller(store::Store& store, image::ImageStore& images, EventRecorder& events,
                         base::Clock& clock, ImagePullerOptions options)
    : store_(store),
      images_(images),
      events_(events),
      clock_(clock),
      options_(std::move(options)),
      queue_(clock) {}

ImagePuller::~ImagePuller() { Stop(); }

void ImagePuller::Start() {
  watch_ = std::make_unique<KindWatch>(store_, api::ImagePullJobKind(),
                                       [this](const std::string& key) { queue_.Add(key); });
  watch_->Start();
  worker_ = std::thread([this] { WorkerLoop(); });
}

void ImagePuller::Stop() {
  if (stopping_.exchange(true)) return;
  if (watch_) watch_->Stop();
  queue_.Shutdown();
  if (worker_.joinable()) worker_.join();
  std::map<std::string, std::shared_ptr<Pull>> pulls;
  {
    std::lock_guard lock(mu_);
    pulls.swap(pulls_);
  }
  // A pull cut short here stays Pulling in the job: the next agent takes it up again.
  for (auto& [key, pull] : pulls) pull->cancel.store(true);
  for (auto& [key, pull] : pulls) {
    if (pull->thread.joinable()) pull->thread.join();
  }
}

void ImagePuller::WorkerLoop() {
  while (auto key = queue_.Get()) {
    Sync(*key);
    queue_.Done(*key);
  }
}

void ImagePuller::Cancel(const std::string& key) {
  std::lock_guard lock(mu_);
  if (auto it = pulls_.find(key); it != pulls_.end()) it->second->cancel.store(true);
}

void ImagePuller::Reap() {
  for (auto it = pulls_.begin(); it != pulls_.end();) {
    if (it->second->finished.load()) {
      it->second->thread.join();
      it = pulls_.erase(it);
    } else {
      ++it;
    }
  }
}

void ImagePuller::Sync(const std::string& key) {
  auto [ns, name] = api::SplitKey(key);
  auto job = store_.Get(api::ImagePullJobKind(), ns, name);
  if (!job.ok() || job->metadata.deletion_timestamp) {
    if (!job.ok() && job.status().code() != StatusCode::kNotFound) {
      queue_.AddAfter(key, std::chrono::seconds(1));
      return;
    }
    Cancel(key);
    return;
  }
  auto spec = api::DecodeSpec<api::ImagePullJobSpec>(*job);
  auto status = api::DecodeStatus<api::ImagePullJobStatus>(*job);
  if (!spec.ok() || !status.ok()) return;
  const auto& targets = status->target_nodes;
  bool targeted = std::find(targets.begin(), targets.end(), options_.node_name) != targets.end();
  {
    std::lock_guard lock(mu_);
    Reap();
    if (auto it = pulls_.find(key); it != pulls_.end()) {
      // Still wanted: leave it running. A new job of the same name, a finished job, or one that
      // no longer names this node: stop it.
      if (it->second->uid == job->metadata.uid && !status->completion_time && targeted) return;
      it->second->cancel.store(true);
      return;  // synced again once it has finished (its last write is an event)
    }
  }
  if (status->completion_time || !targeted) return;
  const api::ImagePullNodeStatus* mine = nullptr;
  int pulling = 0;
  for (const auto& n : status->nodes) {
    if (n.name == options_.node_name) {
      mine = &n;
    } else if (n.phase == "Pulling") {
      ++pulling;
    }
  }
  if (mine != nullptr && mine->phase != "Pulling") return;  // done here
  if (mine == nullptr) {
    int64_t parallelism = spec->parallelism ? spec->parallelism->int_value : 1;
    if (pulling >= parallelism) return;  // a slot frees with a status write, which syncs again
    {
      std::lock_guard lock(mu_);
      if (static_cast<int>(pulls_.size()) >= options_.max_concurrent_pulls) {
        queue_.AddAfter(key, std::chrono::seconds(1));
        return;
      }
    }
    // Take the slot against what was read: a node that took one meanwhile makes this a conflict.
    api::ImagePullJobStatus next = *status;
    next.nodes.push_back(
        {.name = options_.node_name, .phase = "Pulling", .start_time = clock_.Now()});
    api::Object o = *job;
    api::EncodeStatus(next, o);
    auto written = store_.Update(o, store::Subresource::kStatus);
    if (!written.ok()) {
      if (written.status().code() == StatusCode::kAborted) queue_.Add(key);
      return;
    }
  }
  auto pull = std::make_shared<Pull>();
  pull->uid = job->metadata.uid;
  std::lock_guard lock(mu_);
  if (stopping_.load()) return;
  pulls_[key] = pull;
  pull->thread = std::thread([this, key, pull, spec = *spec] { Run(key, pull, spec); });
}

Status ImagePuller::WriteMine(const std::string& key, const std::string& uid,
                              const std::function<void(api::ImagePullNodeStatus&)>& change) {
  auto [ns, name] = api::SplitKey(key);
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(api::Object job, store_.Get(api::ImagePullJobKind(), ns, name));
    if (job.metadata.uid != uid) return NotFoundError("the job was replaced");
    ASSIGN_OR_RETURN(auto status, api::DecodeStatus<api::ImagePullJobStatus>(job));
    auto it = std::find_if(status.nodes.begin(), status.nodes.end(),
                           [&](const auto& n) { return n.name == options_.node_name; });
    if (it == status.nodes.end()) {
      status.nodes.push_back({.name = options_.node_name});
      it = std::prev(status.nodes.end());
    }
    change(*it);
    api::EncodeStatus(status, job);
    auto written = store_.Update(job, store::Subresource::kStatus);
    if (written.ok()) return Status::Ok();
    if (written.status().code() != StatusCode::kAborted || attempt >= kConflictRetries) {
      return written.status();
    }
  }
}

void ImagePuller::Run(const std::string& key, std::shared_ptr<Pull> pull,
                      api::ImagePullJobSpec spec) {
  const std::string& image = spec.image;
  const int attempts = 1 + std::max(0, spec.pull_policy.backoff_limit.value_or(3));
  const auto timeout =
      std::chrono::seconds(std::max(1, spec.pull_policy.timeout_seconds.value_or(600)));
  auto started = std::chrono::steady_clock::now();
  image::PullMeter meter;
  Status last;
  std::optional<image::ImageRecord> pulled;
  bool present = false;
  auto backoff = options_.first_backoff;
  int attempt = 1;
  for (; attempt <= attempts && !pull->cancel.load(); ++attempt) {
    if (spec.image_pull_policy != "Always") {
      if (auto here = images_.Get(image); here.ok()) {
        pulled = std::move(here).value();
        present = true;
        break;
      }
    }
    meter = image::PullMeter();
    auto written = std::chrono::steady_clock::now();
    auto result = images_.Pull(image, {.on_pull_progress =
                                           [&](const image::PullProgress& p) {
                                             meter.Add(p);
                                             auto now = std::chrono::steady_clock::now();
                                             if (now - written < kProgressEvery) return;
                                             written = now;
                                             (void)WriteMine(key, pull->uid,
                                                             [&](api::ImagePullNodeStatus& n) {
                                                               n.progress = meter.percent();
                                                               n.bytes_done = meter.bytes_done();
                                                               n.bytes_total = meter.bytes_total();
                                                               n.attempts = attempt;
                                                             });
                                           },
                                       .deadline = std::chrono::steady_clock::now() + timeout,
                                       .cancel = &pull->cancel});
    if (result.ok()) {
      pulled = std::move(result).value();
      break;
    }
    last = result.status();
    if (pull->cancel.load()) break;
    Log()->warn("pull failed job={} image={} attempt={}/{} error=\"{}\"", key, image, attempt,
                attempts, last.ToString());
    if (Permanent(last) || attempt == attempts) break;
    (void)WriteMine(key, pull->uid, [&](api::ImagePullNodeStatus& n) {
      n.attempts = attempt;
      n.message = fmt::format("attempt {} of {} failed, retrying in {}s: {}", attempt, attempts,
                              backoff.count() / 1000.0, last.message());
    });
    // Sleep the backoff, waking for a cancel.
    auto until = std::chrono::steady_clock::now() + backoff;
    while (!pull->cancel.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
  attempt = std::min(attempt, attempts);
  if (pull->cancel.load()) {
    pull->finished.store(true);
    queue_.Add(key);
    return;
  }
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  auto [ns, name] = api::SplitKey(key);
  Status write;
  if (pulled) {
    std::string message =
        present ? fmt::format("{} was already on the node", image)
                : fmt::format("pulled {} ({}) in {:.1f}s", image,
                              image::HumanSize(static_cast<uint64_t>(meter.bytes_total())), took);
    write = WriteMine(key, pull->uid, [&](api::ImagePullNodeStatus& n) {
      n.phase = "Succeeded";
      n.progress = 100;
      n.bytes_done = n.bytes_total = present ? pulled->compressed_size : meter.bytes_total();
      n.attempts = present ? n.attempts : attempt;
      n.image_id = pulled->manifest_digest.ToString();
      n.message = message;
      n.completion_time = clock_.Now();
    });
    Log()->info("image pulled job={} image={} digest={} seconds={:.1f} present={}", key, image,
                pulled->manifest_digest.Short(), took, present);
    if (!present && options_.on_images_changed) options_.on_images_changed();
  } else {
    std::string message = fmt::format("pulling {} failed after {} attempt{}: {}", image, attempt,
                                      attempt == 1 ? "" : "s", last.message());
    write = WriteMine(key, pull->uid, [&](api::ImagePullNodeStatus& n) {
      n.phase = "Failed";
      n.attempts = attempt;
      n.message = message;
      n.completion_time = clock_.Now();
    });
  }
  if (auto job = store_.Get(api::ImagePullJobKind(), ns, name);
      job.ok() && job->metadata.uid == pull->uid) {
    if (pulled) {
      events_.Normal(*job, "Pulled",
                     fmt::format("node {}: {}", options_.node_name,
                                 present ? image + " was already on the node"
                                         : fmt::format("pulled {} in {:.1f}s", image, took)));
    } else {
      events_.Warning(*job, "PullImageFailed",
                      fmt::format("node {}: {}", options_.node_name, last.message()));
    }
  }
  if (!write.ok()) Log()->warn("job={} status not written: {}", key, write.ToString());
  pull->finished.store(true);
  queue_.Add(key);
}

}  // namespace warren::node

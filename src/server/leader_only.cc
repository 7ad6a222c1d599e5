#include "server/leader_only.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "base/log.h"

namespace warren::server {
namespace {

namespace leader = controller::leader;

}  // namespace

bool IsSingleReplica(const std::string& store_url) {
  return store_url.empty() || store_url == "sqlite";
}

std::string DefaultReplicaName(uint16_t port) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "warren");
  }
  std::string name;
  for (const char* c = host; *c != '\0'; ++c) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '-' || *c == '_';
    name.push_back(ok ? *c : '-');
  }
  if (name.size() > 100) name.resize(100);
  return port == 0 ? fmt::format("{}-pid{}", name, getpid()) : fmt::format("{}-{}", name, port);
}

Status ValidateReplicaName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 128;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == ':' || c == '_' || c == '-');
  }
  if (ok) return Status::Ok();
  return InvalidArgumentError(fmt::format(
      "--replica-name \"{}\": 1-128 characters of letters, digits, '.', ':', '_' and '-'", name));
}

ReplicaLease::ReplicaLease(store::Store& store, ReplicaOptions options, base::Clock& clock) {
  if (!options.elect) return;
  leader::LeaderElectorOptions o;
  o.name = leader::ReplicaLeaseName(options.name);
  o.identity = options.name;
  o.lease_duration = options.lease_duration;
  elector_ = std::make_unique<leader::LeaderElector>(store, std::move(o), clock);
  liveness_ = std::make_unique<leader::ReplicaLiveness>(store, options.lease_duration, clock);
}

ReplicaLease::~ReplicaLease() = default;

Status ReplicaLease::Start() {
  if (!elector_) return Status::Ok();
  // Held before the first claim (a restart keeps its name, so the lease is ours at once); the
  // loop keeps trying when the store refused.
  if (!elector_->TryAcquireOrRenew()) {
    base::Logger("server")->warn("replica lease not taken yet identity={}", elector_->identity());
  }
  return elector_->Start();
}

void ReplicaLease::Stop() {
  if (elector_) elector_->Stop();
}

LeaderOnly::LeaderOnly(store::Store& store, Factory make, ReplicaOptions options,
                       base::Clock& clock)
    : make_(std::move(make)), options_(std::move(options)) {
  if (!options_.elect) return;
  leader::LeaderElectorOptions o;
  o.name = leader::kControllerLeaseName;
  o.identity = options_.name;
  o.lease_duration = options_.lease_duration;
  o.on_started_leading = [this] {
    {
      std::lock_guard lock(mu_);
      want_ = true;
    }
    cv_.notify_all();
  };
  // Synchronous: the parts are stopped when it returns, before the lease can go to another.
  o.on_stopped_leading = [this] {
    {
      std::lock_guard lock(mu_);
      want_ = false;
    }
    cv_.notify_all();
    StopTerm();
  };
  elector_ = std::make_unique<leader::LeaderElector>(store, std::move(o), clock);
}

LeaderOnly::~LeaderOnly() { Stop(); }

bool LeaderOnly::Leading() const {
  std::lock_guard lock(mu_);
  return running_;
}

Status LeaderOnly::StartTerm() {
  std::lock_guard term(term_mu_);
  {
    std::lock_guard lock(mu_);
    if (running_) return Status::Ok();
    // Leadership may have gone while this waited for term_mu_.
    if (options_.elect && !want_) return Status::Ok();
  }
  parts_ = make_();
  for (size_t i = 0; i < parts_.size(); ++i) {
    Status started = parts_[i]->Start();
    if (!started.ok()) {
      for (size_t j = i; j-- > 0;) parts_[j]->Stop();
      parts_.clear();
      return started;
    }
  }
  std::lock_guard lock(mu_);
  running_ = true;
  return Status::Ok();
}

void LeaderOnly::StopTerm() {
  std::lock_guard term(term_mu_);
  {
    std::lock_guard lock(mu_);
    if (!running_) return;
    running_ = false;
  }
  for (size_t i = parts_.size(); i-- > 0;) parts_[i]->Stop();
  parts_.clear();
}

void LeaderOnly::Worker() {
  auto log = base::Logger("server");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (want_ && !running_) {
      lock.unlock();
      log->info("leading: starting the controllers replica={}", options_.name);
      Status started = StartTerm();
      if (!started.ok()) log->error("controllers did not start: {}", started.ToString());
      lock.lock();
      if (!started.ok()) cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
      continue;
    }
    cv_.wait(lock, [this] { return stopping_ || (want_ && !running_); });
  }
}

Status LeaderOnly::Start() {
  if (!elector_) return StartTerm();
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  worker_ = std::thread([this] { Worker(); });
  return elector_->Start();
}

void LeaderOnly::Stop() {
  if (elector_) {
    // Stops leading (the parts stop in the callback), then releases the lease.
    elector_->Stop();
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }
  StopTerm();
}

}  // namespace warren::server

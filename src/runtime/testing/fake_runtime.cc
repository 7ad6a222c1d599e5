#include "runtime/testing/fake_runtime.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>

#include "os/netns.h"

namespace warren::runtime::testing {

Status FakeRuntime::Begin(std::string_view op, std::string_view id) {
  calls_.push_back(id.empty() ? std::string(op) : fmt::format("{} {}", op, id));
  auto it = failures_.find(op);
  if (it == failures_.end()) return Status::Ok();
  Status st = it->second;
  failures_.erase(it);
  return st;
}

void FakeRuntime::Fire(const std::string& id, const ExitStatus& exit) {
  ExitCallback cb;
  {
    std::lock_guard lock(mu_);
    cb = on_exit_;
  }
  if (cb) cb(id, exit);
}

Status FakeRuntime::Create(const SandboxSpec& spec) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("Create", spec.id));
  RETURN_IF_ERROR(ValidateSpec(spec));
  if (sandboxes_.count(spec.id)) {
    return AlreadyExistsError(fmt::format("sandbox {} already exists", spec.id));
  }
  Fake f;
  f.spec = spec;
  f.info.id = spec.id;
  f.info.state = SandboxState::kCreated;
  f.info.user_namespace = spec.user_namespace;
  f.info.created_at = std::chrono::system_clock::now();
  sandboxes_.emplace(spec.id, std::move(f));
  return Status::Ok();
}

#define WARREN_FAKE_FIND(id)                                                                 \
  auto it = sandboxes_.find(id);                                                             \
  if (it == sandboxes_.end()) return NotFoundError(fmt::format("sandbox {} not found", id)); \
  Fake& fake = it->second

Status FakeRuntime::Start(std::string_view id) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("Start", id));
  WARREN_FAKE_FIND(id);
  SandboxState s = fake.info.state;
  if (s == SandboxState::kRunning || s == SandboxState::kPaused) {
    return FailedPreconditionError(fmt::format("sandbox {} is already running", id));
  }
  fake.info.state = SandboxState::kRunning;
  fake.info.pid = next_pid_++;
  fake.info.started_at = std::chrono::system_clock::now();
  fake.info.last_exit.reset();
  return Status::Ok();
}

Status FakeRuntime::Pause(std::string_view id) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("Pause", id));
  WARREN_FAKE_FIND(id);
  if (fake.info.state == SandboxState::kPaused) return Status::Ok();
  if (fake.info.state != SandboxState::kRunning) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not running", id, SandboxStateName(fake.info.state)));
  }
  fake.info.state = SandboxState::kPaused;
  return Status::Ok();
}

Status FakeRuntime::Resume(std::string_view id) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("Resume", id));
  WARREN_FAKE_FIND(id);
  if (fake.info.state == SandboxState::kRunning) return Status::Ok();
  if (fake.info.state != SandboxState::kPaused) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not paused", id, SandboxStateName(fake.info.state)));
  }
  fake.info.state = SandboxState::kRunning;
  return Status::Ok();
}

Status FakeRuntime::Stop(std::string_view id, std::chrono::milliseconds) {
  ExitStatus exit;
  {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(Begin("Stop", id));
    WARREN_FAKE_FIND(id);
    if (fake.info.state != SandboxState::kRunning && fake.info.state != SandboxState::kPaused) {
      return Status::Ok();
    }
    exit.signal = SIGTERM;
    fake.info.state = SandboxState::kStopped;
    fake.info.pid = 0;
    fake.info.last_exit = exit;
  }
  Fire(std::string(id), exit);
  return Status::Ok();
}

Status FakeRuntime::Rebase(const SandboxSpec& spec, bool) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("Rebase", spec.id));
  RETURN_IF_ERROR(ValidateSpec(spec));
  WARREN_FAKE_FIND(spec.id);
  if (fake.info.state == SandboxState::kRunning || fake.info.state == SandboxState::kPaused) {
    return FailedPreconditionError(fmt::format("sandbox {} is running", spec.id));
  }
  if (spec.writable_dir != fake.spec.writable_dir) {
    return InvalidArgumentError(fmt::format("sandbox {}: writable_dir changed", spec.id));
  }
  fake.spec.layers = spec.layers;
  fake.spec.command = spec.command;
  fake.spec.env = spec.env;
  fake.spec.working_dir = spec.working_dir;
  fake.spec.user = spec.user;
  fake.spec.resources = spec.resources;
  return Status::Ok();
}

Status FakeRuntime::UpdateResources(std::string_view id, const Resources& resources) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("UpdateResources", id));
  WARREN_FAKE_FIND(id);
  fake.spec.resources = resources;
  return Status::Ok();
}

Status FakeRuntime::Destroy(std::string_view id) {
  std::optional<ExitStatus> exit;
  {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(Begin("Destroy", id));
    WARREN_FAKE_FIND(id);
    if (fake.info.state == SandboxState::kRunning || fake.info.state == SandboxState::kPaused) {
      exit = ExitStatus{};
      exit->signal = SIGKILL;
    }
    sandboxes_.erase(it);
  }
  if (exit) Fire(std::string(id), *exit);
  return Status::Ok();
}

Result<SandboxStats> FakeRuntime::Stats(std::string_view id) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("Stats", id));
  WARREN_FAKE_FIND(id);
  return fake.stats;
}

Result<SandboxInfo> FakeRuntime::Inspect(std::string_view id) {
  std::lock_guard lock(mu_);
  WARREN_FAKE_FIND(id);
  return fake.info;
}

std::vector<SandboxInfo> FakeRuntime::List() {
  std::lock_guard lock(mu_);
  std::vector<SandboxInfo> out;
  for (const auto& [id, f] : sandboxes_) out.push_back(f.info);
  return out;
}

Result<ExitStatus> FakeRuntime::Wait(std::string_view id, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mu_);
  WARREN_FAKE_FIND(id);
  if (fake.info.last_exit &&
      (fake.info.state == SandboxState::kStopped || fake.info.state == SandboxState::kCreated)) {
    return *fake.info.last_exit;
  }
  if (fake.info.state == SandboxState::kCreated) {
    return FailedPreconditionError(fmt::format("sandbox {} has not been started", id));
  }
  // A fake never exits on its own: use SimulateExit first.
  return DeadlineExceededError(
      fmt::format("sandbox {} still runs after {} ms", id, timeout.count()));
}

Result<AdoptionReport> FakeRuntime::Adopt() {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("Adopt", ""));
  AdoptionReport report;
  for (auto& [id, f] : seeded_) {
    report.adopted.push_back(f.info);
    sandboxes_.emplace(id, std::move(f));
  }
  seeded_.clear();
  report.orphans = orphans_;
  return report;
}

Status FakeRuntime::RemoveOrphan(const Orphan& orphan) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(Begin("RemoveOrphan", orphan.id));
  for (auto it = orphans_.begin(); it != orphans_.end(); ++it) {
    if (it->id == orphan.id) {
      orphans_.erase(it);
      return Status::Ok();
    }
  }
  return NotFoundError(fmt::format("orphan {} not found", orphan.id));
}

Result<base::UniqueFd> FakeRuntime::Dial(std::string_view id, uint16_t port,
                                         std::chrono::milliseconds timeout) {
  uint16_t host_port = 0;
  {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(Begin("Dial", id));
    WARREN_FAKE_FIND(id);
    if (fake.info.state != SandboxState::kRunning && fake.info.state != SandboxState::kPaused) {
      return FailedPreconditionError(fmt::format("sandbox {} is not running", id));
    }
    auto route = fake.routes.find(port);
    if (route == fake.routes.end()) {
      return UnavailableError(fmt::format("nothing listens on 127.0.0.1:{} in the sandbox", port));
    }
    host_port = route->second;
  }
  base::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoError("socket", errno);
  RETURN_IF_ERROR(os::ConnectLoopback(fd.get(), host_port, timeout));
  return fd;
}

void FakeRuntime::SetExitCallback(ExitCallback callback) {
  std::lock_guard lock(mu_);
  on_exit_ = std::move(callback);
}

void FakeRuntime::FailNext(std::string_view op, Status status) {
  std::lock_guard lock(mu_);
  failures_[std::string(op)] = std::move(status);
}

void FakeRuntime::SimulateExit(std::string_view id, ExitStatus exit) {
  {
    std::lock_guard lock(mu_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return;
    SandboxInfo& info = it->second.info;
    if (info.state != SandboxState::kRunning && info.state != SandboxState::kPaused) return;
    info.state = SandboxState::kStopped;
    info.pid = 0;
    info.last_exit = exit;
  }
  Fire(std::string(id), exit);
}

void FakeRuntime::SetStats(std::string_view id, SandboxStats stats) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(id);
  if (it != sandboxes_.end()) it->second.stats = stats;
}

void FakeRuntime::RouteDial(std::string_view id, uint16_t port, uint16_t host_port) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(id);
  if (it != sandboxes_.end()) it->second.routes[port] = host_port;
}

void FakeRuntime::SeedForAdoption(const SandboxSpec& spec, SandboxState state) {
  std::lock_guard lock(mu_);
  Fake f;
  f.spec = spec;
  f.info.id = spec.id;
  f.info.state = state;
  f.info.user_namespace = spec.user_namespace;
  if (state == SandboxState::kRunning || state == SandboxState::kPaused) f.info.pid = next_pid_++;
  seeded_[spec.id] = std::move(f);
}

void FakeRuntime::AddOrphan(Orphan orphan) {
  std::lock_guard lock(mu_);
  orphans_.push_back(std::move(orphan));
}

std::vector<std::string> FakeRuntime::Calls() {
  std::lock_guard lock(mu_);
  return calls_;
}

Result<SandboxSpec> FakeRuntime::SpecOf(std::string_view id) {
  std::lock_guard lock(mu_);
  WARREN_FAKE_FIND(id);
  return fake.spec;
}

#undef WARREN_FAKE_FIND

}  // namespace warren::runtime::testing

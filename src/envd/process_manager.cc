#include "envd/process_manager.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "base/log.h"
#include "os/pty.h"
#include "os/spawn_reaper.h"

namespace warren::envd {
namespace {

// E2B's envd reads pipes in 32 KiB and ptys in 16 KiB chunks; one data event per read.
constexpr size_t kPipeChunk = 32 * 1024;
constexpr size_t kPtyChunk = 16 * 1024;
// A subscriber with this much unsent output slows the process's output pump down.
constexpr size_t kHighWater = 4 * 1024 * 1024;

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        poll(&p, 1, 1000);
        continue;
      }
      if (errno == EPIPE) return InternalError("the process closed its input");
      return ErrnoError("write input", errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status NotFoundPid(const ProcessSelector& sel) {
  if (sel.pid) return NotFoundError(fmt::format("process with pid {} not found", *sel.pid));
  return NotFoundError(fmt::format("process with tag {} not found", sel.tag.value_or("")));
}

}  // namespace

ManagedProcess::ManagedProcess(StartRequest request, bool is_pty)
    : request_(std::move(request)), is_pty_(is_pty) {}

void ManagedProcess::Subscribe(const std::shared_ptr<StreamSession>& session) {
  std::lock_guard lock(mu_);
  session->Send(StartEventJson(pid_));
  if (end_) {
    session->Send(EndEventJson(*end_));
    session->End(Status::Ok());
    return;
  }
  subscribers_.push_back(session);
}

void ManagedProcess::Broadcast(const std::string& json) {
  std::vector<std::shared_ptr<StreamSession>> subs;
  {
    std::lock_guard lock(mu_);
    subs = subscribers_;
  }
  bool dropped = false;
  for (const auto& s : subs) {
    s->WaitWritable(kHighWater, std::chrono::seconds(30));
    if (!s->Send(json)) dropped = true;
  }
  if (dropped) {
    std::lock_guard lock(mu_);
    std::erase_if(subscribers_, [](const auto& s) { return s->ended(); });
  }
}

void ManagedProcess::OnExit(int wait_status) {
  {
    std::lock_guard lock(mu_);
    wait_status_ = wait_status;
  }
  exited_cv_.notify_all();
}

void ManagedProcess::Pump(base::UniqueFd out, base::UniqueFd err, int pty) {
  struct Source {
    int fd;
    OutputKind kind;
  };
  std::vector<Source> sources;
  if (pty >= 0) {
    sources.push_back({pty, OutputKind::kPty});
  } else {
    sources.push_back({out.get(), OutputKind::kStdout});
    sources.push_back({err.get(), OutputKind::kStderr});
  }
  std::string buf(is_pty_ ? kPtyChunk : kPipeChunk, '\0');
  while (!sources.empty()) {
    std::vector<pollfd> fds;
    for (const auto& s : sources) fds.push_back({s.fd, POLLIN, 0});
    int r = poll(fds.data(), fds.size(), -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    std::vector<size_t> done;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf.data(), buf.size());
      if (n > 0) {
        Broadcast(DataEventJson(sources[i].kind, std::string_view(buf.data(), n)));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        // EOF, or EIO from a pty master once every slave descriptor is closed.
        done.push_back(i);
      }
    }
    for (auto it = done.rbegin(); it != done.rend(); ++it) sources.erase(sources.begin() + *it);
  }
  out.reset();
  err.reset();

  std::vector<std::shared_ptr<StreamSession>> subs;
  ProcessExit exit;
  {
    std::unique_lock lock(mu_);
    exited_cv_.wait(lock, [&] { return wait_status_.has_value(); });
    exit = ProcessExitFromWaitStatus(*wait_status_);
    end_ = exit;
    subs.swap(subscribers_);
  }
  {
    std::lock_guard lock(input_mu_);
    stdin_.reset();
  }
  // Leave the live table before anyone hears of the end, so a client that saw `end` never
  // finds the process still live.
  if (on_ended_) on_ended_();
  const std::string end_json = EndEventJson(exit);
  for (const auto& s : subs) {
    s->Send(end_json);
    s->End(Status::Ok());
  }
}

Status ManagedProcess::WriteInput(InputKind kind, const std::string& data) {
  if (kind == InputKind::kNone || data.empty()) return Status::Ok();
  if (is_pty_ && kind == InputKind::kStdin) {
    return InternalError("process has a pty: send its input as 'pty', not 'stdin'");
  }
  if (!is_pty_ && kind == InputKind::kPty) {
    return InternalError("process has no pty: send its input as 'stdin'");
  }
  std::lock_guard lock(input_mu_);
  if (is_pty_) {
    if (ended()) return InternalError("process has ended");
    return WriteAll(pty_master_.get(), data);
  }
  if (!stdin_) return InternalError("stdin is not enabled or was closed for this process");
  return WriteAll(stdin_.get(), data);
}

Status ManagedProcess::CloseStdin() {
  if (is_pty_) {
    return InternalError("cannot close stdin of a pty process; send Ctrl-D (0x04) instead");
  }
  std::lock_guard lock(input_mu_);
  stdin_.reset();
  return Status::Ok();
}

Status ManagedProcess::Resize(PtySize size) {
  if (!is_pty_) return InternalError("process has no pty to resize");
  if (size.cols == 0 || size.rows == 0) {
    return InvalidArgumentError("pty size needs cols and rows greater than 0");
  }
  return os::SetPtySize(pty_master_.get(), static_cast<uint16_t>(size.cols),
                        static_cast<uint16_t>(size.rows));
}

Status ManagedProcess::Signal(int signal) {
  if (signal != SIGKILL && signal != SIGTERM) {
    return UnimplementedError(fmt::format("signal {} is not supported", signal));
  }
  std::lock_guard lock(mu_);
  // Once reaped, the pid may belong to someone else: never signal it then.
  if (wait_status_) return NotFoundError(fmt::format("process with pid {} not found", pid_));
  const auto pid = static_cast<pid_t>(pid_);
  if (kill(-pid, signal) != 0 && kill(pid, signal) != 0) {
    return ErrnoError(fmt::format("signal process {}", pid_), errno);
  }
  return Status::Ok();
}

bool ManagedProcess::ended() const {
  std::lock_guard lock(mu_);
  return end_.has_value() || wait_status_.has_value();
}

ProcessManager::ProcessManager(TimerQueue& timers, std::chrono::milliseconds ended_retention)
    : timers_(timers), ended_retention_(ended_retention) {
  // Writing to the stdin of a process that exited must fail with EPIPE, not kill the agent.
  signal(SIGPIPE, SIG_IGN);
}

ProcessManager::~ProcessManager() {
  KillAll();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  {
    std::unique_lock lock(table_->mu);
    table_->drained.wait_until(lock, deadline, [&] { return table_->live.empty(); });
  }
  // A process leaves the live table before its pump tells the subscribers it ended, and those
  // sessions use timers_, which may die right after this destructor: wait for the pumps themselves.
  std::unique_lock lock(pumps_->mu);
  pumps_->done.wait_until(lock, deadline, [&] { return pumps_->running == 0; });
}

Result<std::shared_ptr<ManagedProcess>> ProcessManager::Start(
    SpawnPlan plan, const std::shared_ptr<StreamSession>& session,
    std::optional<std::chrono::milliseconds> lifetime) {
  const bool is_pty = plan.request.pty.has_value();
  std::shared_ptr<ManagedProcess> p(new ManagedProcess(plan.request, is_pty));

  os::SpawnOptions options;
  options.argv = std::move(plan.argv);
  options.env = std::move(plan.env);
  options.cwd = plan.cwd;
  options.credentials = std::move(plan.credentials);
  options.stdin_pipe = plan.request.stdin.value_or(true);
  std::optional<os::Pty> pty;
  if (is_pty) {
    const auto cols = static_cast<uint16_t>(plan.request.pty->cols ? plan.request.pty->cols : 80);
    const auto rows = static_cast<uint16_t>(plan.request.pty->rows ? plan.request.pty->rows : 24);
    auto opened = os::OpenPty(cols, rows);
    if (!opened.ok()) return opened.status();
    pty = std::move(*opened);
    options.pty_slave = pty->slave.get();
  }
  std::weak_ptr<ManagedProcess> weak = p;
  auto child = os::ChildReaper::Get().Spawn(options, [weak](int status) {
    if (auto proc = weak.lock()) proc->OnExit(status);
  });
  if (!child.ok()) return InvalidArgumentError(child.status().message());

  p->pid_ = static_cast<uint32_t>(child->pid);
  p->stdin_ = std::move(child->stdin_w);
  int pty_fd = -1;
  if (pty) {
    pty->slave.reset();  // the child has it; EOF on the master needs every slave closed
    p->pty_master_ = std::move(pty->master);
    pty_fd = p->pty_master_.get();
  }
  // In the table before the client hears of it (start), so a List, a signal or a reset that
  // the client sends right after already finds it.
  {
    std::lock_guard lock(table_->mu);
    table_->ended.erase(p->pid_);
    table_->live[p->pid_] = p;
  }
  p->Subscribe(session);
  AuditLog* const audit_log = plan.audited ? audit_ : nullptr;
  if (audit_log != nullptr) {
    audit_log->Record("process.start", {{"pid", p->pid_},
                                        {"cmd", p->request().process.cmd},
                                        {"args", p->request().process.args},
                                        {"cwd", options.cwd},
                                        {"user", plan.user},
                                        {"pty", is_pty}});
  }
  p->on_ended_ = [weak_table = std::weak_ptr<Table>(table_), &timers = timers_,
                  retention = ended_retention_, weak, audit = audit_log,
                  started = std::chrono::steady_clock::now()] {
    auto table = weak_table.lock();
    auto proc = weak.lock();
    if (audit != nullptr && proc) {
      const auto end = proc->end();
      audit->Record("process.end",
                    {{"pid", proc->pid()},
                     {"cmd", proc->request().process.cmd},
                     {"exitCode", end ? end->exit_code : -1},
                     {"status", end ? end->status : ""},
                     {"durationMs", std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - started)
                                        .count()}});
    }
    if (table && proc) OnEnded(table, timers, retention, proc);
  };
  {
    std::lock_guard lock(pumps_->mu);
    ++pumps_->running;
  }
  std::thread(
      [p, pty_fd, pumps = pumps_](base::UniqueFd out, base::UniqueFd err) mutable {
        p->Pump(std::move(out), std::move(err), pty_fd);
        p.reset();  // the process (and its sessions) may go before the manager is told
        std::lock_guard lock(pumps->mu);
        --pumps->running;
        pumps->done.notify_all();
      },
      std::move(child->stdout_r), std::move(child->stderr_r))
      .detach();
  if (lifetime) {
    timers_.ScheduleAfter(*lifetime, [weak] {
      if (auto proc = weak.lock()) proc->Signal(SIGKILL).IgnoreError();
    });
  }
  base::Logger("envd")->debug("process started pid={} pty={}", p->pid_, is_pty);
  return p;
}

void ProcessManager::OnEnded(const std::shared_ptr<Table>& table, TimerQueue& timers,
                             std::chrono::milliseconds retention,
                             const std::shared_ptr<ManagedProcess>& p) {
  const uint32_t pid = p->pid();
  {
    std::lock_guard lock(table->mu);
    auto it = table->live.find(pid);
    if (it != table->live.end() && it->second == p) table->live.erase(it);
    table->ended[pid] = p;
    if (table->live.empty()) table->drained.notify_all();
  }
  // The timer may fire after the manager is gone (the queue outlives it): it holds the table
  // weakly and does nothing then.
  timers.ScheduleAfter(retention, [weak_table = std::weak_ptr<Table>(table), pid,
                                   weak = std::weak_ptr<ManagedProcess>(p)] {
    auto table = weak_table.lock();
    if (!table) return;
    std::lock_guard lock(table->mu);
    auto it = table->ended.find(pid);
    if (it != table->ended.end() && it->second == weak.lock()) table->ended.erase(it);
  });
}

Result<std::shared_ptr<ManagedProcess>> ProcessManager::Find(const ProcessSelector& selector,
                                                             bool include_ended) const {
  std::lock_guard lock(table_->mu);
  auto match = [&](const auto& table) -> std::shared_ptr<ManagedProcess> {
    if (selector.pid) {
      auto it = table.find(*selector.pid);
      return it == table.end() ? nullptr : it->second;
    }
    for (const auto& [pid, p] : table) {
      if (p->request().tag == selector.tag) return p;
    }
    return nullptr;
  };
  if (auto p = match(table_->live)) return p;
  if (include_ended) {
    if (auto p = match(table_->ended)) return p;
  }
  return NotFoundPid(selector);
}

std::vector<ProcessInfo> ProcessManager::List() const {
  std::lock_guard lock(table_->mu);
  std::vector<ProcessInfo> out;
  for (const auto& [pid, p] : table_->live) {
    if (p->ended()) continue;
    out.push_back({p->request().process, pid, p->request().tag});
  }
  return out;
}

void ProcessManager::KillAll() {
  std::vector<std::shared_ptr<ManagedProcess>> live;
  {
    std::lock_guard lock(table_->mu);
    for (const auto& [pid, p] : table_->live) live.push_back(p);
    table_->ended.clear();
  }
  for (const auto& p : live) p->Signal(SIGKILL).IgnoreError();
}

size_t ProcessManager::live_count() const {
  std::lock_guard lock(table_->mu);
  return table_->live.size();
}

}  // namespace warren::envd

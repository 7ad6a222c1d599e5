#include "node/log_streamer.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "base/log.h"

namespace warren::node {
namespace {

constexpr size_t kChunk = 64 * 1024;

// Where to start reading so that only the last `lines` lines come out.
off_t TailStart(int fd, off_t size, int64_t lines) {
  if (lines <= 0) return size;
  off_t pos = size;
  int64_t seen = 0;
  char buf[8192];
  // A final newline ends the last line rather than starting an empty one.
  bool skip_final = true;
  while (pos > 0) {
    off_t n = std::min<off_t>(pos, sizeof buf);
    pos -= n;
    if (pread(fd, buf, static_cast<size_t>(n), pos) != n) return 0;
    for (off_t i = n - 1; i >= 0; --i) {
      if (buf[i] != '\n') {
        skip_final = false;
        continue;
      }
      if (skip_final && pos + i == size - 1) continue;
      if (++seen == lines) return pos + i + 1;
    }
  }
  return 0;
}

}  // namespace

struct LogStreamer::Job {
  LogRequest request;
  std::shared_ptr<net::ResponseStream> stream;
  base::UniqueFd fd;
  off_t pos = 0;
  int64_t budget = -1;  // bytes still allowed; -1 = no limit
  std::chrono::steady_clock::time_point last_check;
  std::chrono::steady_clock::time_point stalled_since;  // {} while the client keeps up
};

LogStreamer::LogStreamer(store::Store& store, LogSource source, LogStreamOptions options)
    : store_(store), source_(std::move(source)), options_(options) {
  thread_ = std::thread([this] { Run(); });
}

LogStreamer::~LogStreamer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Status LogStreamer::Start(net::Responder& responder, LogRequest request) {
  std::unique_lock lock(mu_);
  if (stopping_) return UnavailableError("the node is stopping");
  if (open_ >= options_.max_streams) {
    return ResourceExhaustedError(fmt::format(
        "too many log streams are open ({}); try again when one has ended", options_.max_streams));
  }
  ++open_;
  lock.unlock();
  auto job = std::make_unique<Job>();
  job->budget = request.limit_bytes.value_or(-1);
  job->request = std::move(request);
  net::Headers headers;
  headers.Set("Content-Type", "text/plain; charset=utf-8");
  headers.Set("Cache-Control", "no-store");
  // A client that leaves is noticed at the next poll, which frees its slot.
  job->stream = responder.Stream(200, std::move(headers));
  lock.lock();
  incoming_.push_back(std::move(job));
  lock.unlock();
  wake_.notify_one();
  return Status::Ok();
}

size_t LogStreamer::open_streams() const {
  std::lock_guard lock(mu_);
  return open_;
}

bool LogStreamer::StillRunning(const Job& job) const {
  const LogRequest& r = job.request;
  auto obj = store_.Get(api::SandboxKind(), r.namespace_, r.name);
  if (!obj.ok() || obj->metadata.uid != r.uid || obj->metadata.deletion_timestamp) return false;
  auto st = api::DecodeStatus<api::SandboxStatus>(*obj);
  if (!st.ok()) return true;
  return st->phase != api::sandbox_phase::kSucceeded && st->phase != api::sandbox_phase::kFailed;
}

bool LogStreamer::Pump(Job& job, std::chrono::steady_clock::time_point now, bool& progressed) {
  net::ResponseStream& stream = *job.stream;
  if (stream.closed()) return false;
  if (source_.stopping()) {
    stream.Finish();
    return false;
  }
  const LogRequest& r = job.request;
  if (!job.fd && !r.sandbox_id.empty()) {
    if (auto opened = source_.open(r.sandbox_id); opened.ok()) {
      job.fd = std::move(*opened);
      struct stat st;
      off_t size = fstat(job.fd.get(), &st) == 0 ? st.st_size : 0;
      job.pos = r.tail_lines ? TailStart(job.fd.get(), size, *r.tail_lines) : 0;
    }
  }
  // Up to high_water bytes this turn, and only while the client takes what it was sent.
  size_t sent = 0;
  bool at_end = !job.fd;
  std::string buf;
  while (job.fd && job.budget != 0 && sent < options_.high_water) {
    if (!stream.WaitWritable(options_.high_water, std::chrono::milliseconds(0))) {
      if (stream.closed()) return false;
      if (job.stalled_since == std::chrono::steady_clock::time_point{}) job.stalled_since = now;
      if (now - job.stalled_since >= options_.stall_timeout) {
        base::Logger("node")->info("log stream cut: the client took nothing for {} ms name={}/{}",
                                   options_.stall_timeout.count(), r.namespace_, r.name);
        stream.Abort();
        return false;
      }
      return true;  // the client is behind: its turn comes again
    }
    job.stalled_since = {};
    size_t want =
        job.budget > 0 ? std::min<size_t>(kChunk, static_cast<size_t>(job.budget)) : kChunk;
    buf.resize(want);
    ssize_t n = pread(job.fd.get(), buf.data(), want, job.pos);
    if (n <= 0) {
      at_end = true;
      break;
    }
    buf.resize(static_cast<size_t>(n));
    job.pos += n;
    sent += static_cast<size_t>(n);
    if (job.budget > 0) job.budget -= n;
    if (!stream.Write(std::move(buf))) return false;
    buf = std::string();
  }
  if (sent > 0) progressed = true;
  if (job.budget == 0 || (!r.follow && at_end)) {
    stream.Finish();
    return false;
  }
  if (!r.follow || sent > 0 || now - job.last_check < options_.status_check) return true;
  job.last_check = now;
  if (StillRunning(job)) return true;
  // One last read: the final bytes may have landed after the previous one.
  if (job.fd) {
    ssize_t n;
    buf.resize(kChunk);
    while (job.budget != 0 && (n = pread(job.fd.get(), buf.data(), buf.size(), job.pos)) > 0) {
      size_t take = job.budget > 0 ? std::min<size_t>(static_cast<size_t>(n), job.budget) : n;
      job.pos += static_cast<off_t>(take);
      if (job.budget > 0) job.budget -= static_cast<int64_t>(take);
      if (!stream.Write(buf.substr(0, take))) return false;
    }
  }
  stream.Finish();
  return false;
}

void LogStreamer::Run() {
  std::vector<std::unique_ptr<Job>> jobs;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    for (auto& job : incoming_) jobs.push_back(std::move(job));
    incoming_.clear();
    lock.unlock();
    auto now = std::chrono::steady_clock::now();
    bool progressed = false;
    size_t ended = 0;
    for (auto& job : jobs) {
      if (!Pump(*job, now, progressed)) {
        job.reset();
        ++ended;
      }
    }
    std::erase(jobs, nullptr);
    lock.lock();
    open_ -= ended;
    if (stopping_) break;
    // Logs that had more to send go again at once; otherwise the next poll, a new response or
    // a client leaving wakes the thread.
    if (!progressed && incoming_.empty()) {
      wake_.wait_for(lock, options_.poll);
    }
  }
  for (auto& job : incoming_) jobs.push_back(std::move(job));
  incoming_.clear();
  lock.unlock();
  for (auto& job : jobs) job->stream->Finish();
}

}  // namespace warren::node

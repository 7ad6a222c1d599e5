#include "audit/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "base/log.h"
#include "base/small_file.h"
#include "base/time_format.h"
#include "base/unique_fd.h"

namespace warren::audit {
namespace {

namespace fs = std::filesystem;

constexpr size_t kOpenJournals = 64;
constexpr char kApiSuffix[] = ".jsonl";
constexpr char kEnvdSuffix[] = ".envd.jsonl";

// A namespace or sandbox id as a file name: Kubernetes names and E2B ids only (".envd" is kept
// for the envd half of a journal).
bool SafeName(std::string_view s) {
  if (s.empty() || s.size() > 253 || s == "." || s == ".." ||
      s.find(".envd") != std::string_view::npos) {
    return false;
  }
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

void CutStrings(nlohmann::json& j, int depth = 0) {
  if (j.is_string()) {
    auto& s = j.get_ref<std::string&>();
    if (s.size() > kMaxField) s.resize(kMaxField);
  } else if ((j.is_object() || j.is_array()) && depth < 4) {
    for (auto& v : j) CutStrings(v, depth + 1);
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a torn last line (crash mid-append) is dropped
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

}  // namespace

Journal::Journal(std::string dir, Options options) : dir_(std::move(dir)), options_(options) {}

Journal::~Journal() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void Journal::Post(std::string namespace_, std::string sandbox_id, nlohmann::json entry) {
  if (entry.is_object() && !entry.contains("time")) {
    entry["time"] = base::FormatRfc3339Millis(std::chrono::system_clock::now());
  }
  {
    std::lock_guard lock(queue_mu_);
    if (!writer_.joinable()) writer_ = std::thread([this] { WriterLoop(); });
    if (queue_.size() < kMaxQueued && !stopping_) {
      queue_.push_back({std::move(namespace_), std::move(sandbox_id), std::move(entry)});
      ++posted_;
      queue_cv_.notify_all();
      return;
    }
  }
  // A disk that cannot keep up slows the callers rather than losing their entries.
  if (Status s = Append(namespace_, sandbox_id, std::move(entry)); !s.ok()) {
    base::Logger("audit")->warn("journal of sandbox {}: {}", sandbox_id, s.ToString());
  }
}

void Journal::WriterLoop() {
  std::unique_lock lock(queue_mu_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and all written
    Posted p = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (Status s = Append(p.namespace_, p.sandbox_id, std::move(p.entry)); !s.ok()) {
      base::Logger("audit")->warn("journal of sandbox {}: {}", p.sandbox_id, s.ToString());
    }
    lock.lock();
    ++written_;
    queue_cv_.notify_all();
  }
}

void Journal::Drain() const {
  std::unique_lock lock(queue_mu_);
  const uint64_t target = posted_;
  queue_cv_.wait(lock, [&] { return written_ >= target; });
}

Result<std::string> Journal::PathOf(std::string_view namespace_, std::string_view sandbox_id,
                                    std::string_view suffix) const {
  if (!SafeName(namespace_) || !SafeName(sandbox_id)) {
    return InvalidArgumentError(
        fmt::format("no audit journal can be named by \"{}/{}\"", namespace_, sandbox_id));
  }
  return fmt::format("{}/{}/{}{}", dir_, namespace_, sandbox_id, suffix);
}

Status Journal::Append(std::string_view namespace_, std::string_view sandbox_id,
                       nlohmann::json entry) {
  if (!entry.is_object()) return InvalidArgumentError("an audit entry is a JSON object");
  // What the sandbox's envd said has a file (and a bound) of its own, so that however much it
  // writes, the host's entries stay.
  const bool from_envd = entry.contains("source") && entry["source"] == "envd";
  ASSIGN_OR_RETURN(std::string path,
                   PathOf(namespace_, sandbox_id, from_envd ? kEnvdSuffix : kApiSuffix));
  if (!entry.contains("time")) {
    entry["time"] = base::FormatRfc3339Millis(std::chrono::system_clock::now());
  }
  CutStrings(entry);
  const std::string line =
      entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(int fd, OpenForAppend(path));
  struct stat st {};
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) + line.size() > options_.max_bytes) {
    // Keep the newest half: trims are rare and each keeps many appends' worth of room.
    ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(path, options_.max_bytes * 2));
    // From the first line start within the last max_bytes / 2 (a torn tail goes too).
    const size_t end = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    size_t from = end > options_.max_bytes / 2 ? end - options_.max_bytes / 2 : 0;
    if (from > 0) from = text.find('\n', from - 1) + 1;
    RETURN_IF_ERROR(base::WriteFileAtomically(path, std::string_view(text).substr(from, end - from),
                                              false, 0600));
    Forget(path);  // the open one is the file the rename replaced
    ASSIGN_OR_RETURN(fd, OpenForAppend(path));
  }
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    const int err = errno;
    Forget(path);
    return ErrnoError(fmt::format("appending to {}", path), err);
  }
  return Status::Ok();
}

Result<int> Journal::OpenForAppend(const std::string& path) {
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->first == path) {
      open_.splice(open_.begin(), open_, it);
      return open_.front().second.get();
    }
  }
  auto open_append = [&] {
    return base::UniqueFd(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  };
  base::UniqueFd fd = open_append();
  if (!fd && errno == ENOENT) {
    // The team's first journal: its directory, owner-only like the journals.
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) return InternalError(fmt::format("making {}: {}", parent.string(), ec.message()));
    chmod(dir_.c_str(), 0700);
    chmod(parent.c_str(), 0700);
    fd = open_append();
  }
  if (!fd) return ErrnoError(fmt::format("opening {}", path), errno);
  open_.emplace_front(path, std::move(fd));
  if (open_.size() > kOpenJournals) open_.pop_back();
  return open_.front().second.get();
}

void Journal::Forget(const std::string& path) {
  open_.remove_if([&](const auto& entry) { return entry.first == path; });
}

Result<std::vector<nlohmann::json>> Journal::Read(std::string_view namespace_,
                                                  std::string_view sandbox_id, size_t limit) const {
  ASSIGN_OR_RETURN(std::string path, PathOf(namespace_, sandbox_id, ".jsonl"));
  Drain();
  std::vector<nlohmann::json> out;
  bool any = false;
  for (const char* suffix : {kApiSuffix, kEnvdSuffix}) {
    auto text = base::ReadSmallFile(path.substr(0, path.size() - std::strlen(kApiSuffix)) + suffix,
                                    options_.max_bytes * 2);
    if (!text.ok() && text.status().code() == StatusCode::kNotFound) continue;
    if (!text.ok()) return text.status();
    any = true;
    for (const auto& line : Lines(*text)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j["time"].is_string()) out.push_back(std::move(j));
    }
  }
  if (!any) return NotFoundError(fmt::format("sandbox {} has no audit journal", sandbox_id));
  // Both halves are in time order (RFC 3339 UTC with milliseconds sorts as text).
  std::stable_sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["time"].get_ref<const std::string&>() < b["time"].get_ref<const std::string&>();
  });
  if (out.size() > limit) out.erase(out.begin(), out.end() - static_cast<long>(limit));
  return out;
}

std::optional<std::string> Journal::NamespaceOf(std::string_view sandbox_id) const {
  if (!SafeName(sandbox_id)) return std::nullopt;
  Drain();
  std::error_code ec;
  for (const auto& ns : fs::directory_iterator(dir_, ec)) {
    if (fs::exists(ns.path() / (std::string(sandbox_id) + kApiSuffix), ec) ||
        fs::exists(ns.path() / (std::string(sandbox_id) + kEnvdSuffix), ec)) {
      return ns.path().filename().string();
    }
  }
  return std::nullopt;
}

uint64_t Journal::CollectedOffset(std::string_view namespace_, std::string_view sandbox_id) const {
  auto path = PathOf(namespace_, sandbox_id, ".offset");
  if (!path.ok()) return 0;
  auto text = base::ReadSmallFile(*path, 64);
  if (!text.ok()) return 0;
  return std::strtoull(text->c_str(), nullptr, 10);
}

void Journal::SetCollectedOffset(std::string_view namespace_, std::string_view sandbox_id,
                                 uint64_t offset) {
  auto path = PathOf(namespace_, sandbox_id, ".offset");
  if (!path.ok()) return;
  std::error_code ec;
  fs::create_directories(fs::path(*path).parent_path(), ec);
  (void)base::WriteFileAtomically(*path, std::to_string(offset), false, 0600);
}

size_t Journal::Sweep() {
  const auto cutoff = fs::file_time_type::clock::now() - options_.retention;
  size_t removed = 0;
  std::lock_guard lock(mu_);
  // Non-throwing iteration throughout: this runs on the node's sampler thread.
  std::error_code ec;
  for (fs::directory_iterator ns(dir_, ec), end; !ec && ns != end; ns.increment(ec)) {
    std::error_code ec2;
    for (fs::directory_iterator f(ns->path(), ec2); !ec2 && f != end; f.increment(ec2)) {
      std::error_code ec3;
      const auto written = fs::last_write_time(f->path(), ec3);
      if (ec3 || written >= cutoff) continue;
      Forget(f->path().string());
      if (fs::remove(f->path(), ec3)) ++removed;
    }
    fs::remove(ns->path(), ec2);  // only when empty
  }
  return removed;
}

}  // namespace warren::audit

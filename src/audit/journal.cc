#include "audit/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/small_file.h"
#include "base/time_format.h"
#include "base/unique_fd.h"

namespace warren::audit {
namespace {

namespace fs = std::filesystem;

// A namespace or sandbox id as a file name: Kubernetes names and E2B ids only.
bool SafeName(std::string_view s) {
  if (s.empty() || s.size() > 253 || s == "." || s == "..") return false;
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
  ASSIGN_OR_RETURN(std::string path, PathOf(namespace_, sandbox_id, ".jsonl"));
  if (!entry.is_object()) return InvalidArgumentError("an audit entry is a JSON object");
  if (!entry.contains("time")) {
    entry["time"] = base::FormatRfc3339Millis(std::chrono::system_clock::now());
  }
  CutStrings(entry);
  const std::string line =
      entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return InternalError(fmt::format("making {}: {}", dir_, ec.message()));
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 &&
      static_cast<uint64_t>(st.st_size) + line.size() > options_.max_bytes) {
    // Keep the newest half: trims are rare and each keeps many appends' worth of room.
    ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(path, options_.max_bytes * 2));
    std::vector<std::string> lines = Lines(text);
    std::string kept;
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      if (kept.size() + it->size() + 1 > options_.max_bytes / 2) break;
      kept.insert(0, *it + "\n");
    }
    RETURN_IF_ERROR(base::WriteFileAtomically(path, kept));
  }
  base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) return ErrnoError(fmt::format("opening {}", path), errno);
  if (write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return ErrnoError(fmt::format("appending to {}", path), errno);
  }
  return Status::Ok();
}

Result<std::vector<nlohmann::json>> Journal::Read(std::string_view namespace_,
                                                  std::string_view sandbox_id, size_t limit) const {
  ASSIGN_OR_RETURN(std::string path, PathOf(namespace_, sandbox_id, ".jsonl"));
  auto text = base::ReadSmallFile(path, options_.max_bytes * 2);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return NotFoundError(fmt::format("sandbox {} has no audit journal", sandbox_id));
  }
  if (!text.ok()) return text.status();
  std::vector<std::string> lines = Lines(*text);
  std::vector<nlohmann::json> out;
  const size_t first = lines.size() > limit ? lines.size() - limit : 0;
  for (size_t i = first; i < lines.size(); ++i) {
    auto j = nlohmann::json::parse(lines[i], nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

std::optional<std::string> Journal::NamespaceOf(std::string_view sandbox_id) const {
  if (!SafeName(sandbox_id)) return std::nullopt;
  std::error_code ec;
  for (const auto& ns : fs::directory_iterator(dir_, ec)) {
    if (fs::exists(ns.path() / (std::string(sandbox_id) + ".jsonl"), ec)) {
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
  (void)base::WriteFileAtomically(*path, std::to_string(offset));
}

size_t Journal::Sweep() {
  const auto cutoff = fs::file_time_type::clock::now() - options_.retention;
  size_t removed = 0;
  std::lock_guard lock(mu_);
  std::error_code ec;
  for (const auto& ns : fs::directory_iterator(dir_, ec)) {
    std::error_code ec2;
    for (const auto& f : fs::directory_iterator(ns.path(), ec2)) {
      if (f.path().extension() != ".jsonl") continue;
      std::error_code ec3;
      if (fs::last_write_time(f.path(), ec3) >= cutoff || ec3) continue;
      fs::remove(f.path(), ec3);
      auto offset = f.path();
      fs::remove(offset.replace_extension(".offset"), ec3);
      ++removed;
    }
  }
  return removed;
}

}  // namespace warren::audit

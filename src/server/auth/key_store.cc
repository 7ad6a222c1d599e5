#include "server/auth/key_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "api/json.h"
#include "api/validation.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "base/unique_fd.h"
#include "server/auth/api_key.h"

namespace warren::server::auth {
namespace {

constexpr size_t kMaxKeyFileBytes = 16u << 20;
constexpr size_t kMaxNameLength = 128;

std::string PepperPath(const std::string& dir) { return dir + "/pepper"; }
std::string KeysPath(const std::string& dir) { return dir + "/keys.json"; }
std::string LockPath(const std::string& dir) { return dir + "/lock"; }

// Writes `data` to `path` through `path.tmp` (created 0600), fsynced, renamed into place.
Status WritePrivateFile(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp";
  base::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) return ErrnoError(fmt::format("create {}", tmp), errno);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("write {}", tmp), errno);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return ErrnoError(fmt::format("fsync {}", tmp), errno);
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoError(fmt::format("rename {} to {}", tmp, path), errno);
  }
  return Status::Ok();
}

// Holds flock(LOCK_EX) on the directory's lock file for its lifetime.
class DirLock {
 public:
  static Result<DirLock> Take(const std::string& dir) {
    std::string path = LockPath(dir);
    base::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
    while (::flock(fd.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return ErrnoError(fmt::format("lock {}", path), errno);
    }
    return DirLock(std::move(fd));
  }

 private:
  explicit DirLock(base::UniqueFd fd) : fd_(std::move(fd)) {}
  base::UniqueFd fd_;  // closing it releases the lock
};

api::Json RecordToJson(const ApiKeyRecord& r) {
  return {{"id", r.id},
          {"name", r.name},
          {"team", r.team},
          {"admin", r.admin},
          {"sha256", r.hash},
          {"mask", r.mask},
          {"createdAt", base::FormatRfc3339(r.created_at)}};
}

Result<std::vector<ApiKeyRecord>> ParseKeys(std::string_view text, const std::string& path) {
  auto doc = api::ParseJson(text);
  if (!doc.ok()) return InternalError(fmt::format("{}: {}", path, doc.status().message()));
  std::vector<ApiKeyRecord> out;
  const api::Json* keys = doc->is_object() && doc->contains("keys") ? &(*doc)["keys"] : nullptr;
  if (keys == nullptr || !keys->is_array()) {
    return InternalError(fmt::format("{}: no \"keys\" array", path));
  }
  for (const auto& k : *keys) {
    auto str = [&](const char* f) {
      return k.is_object() && k.contains(f) && k[f].is_string() ? k[f].get<std::string>() : "";
    };
    ApiKeyRecord r;
    r.id = str("id");
    r.name = str("name");
    r.team = str("team");
    r.hash = str("sha256");
    r.mask = str("mask");
    r.admin = k.is_object() && k.value("admin", false) == true;
    if (auto t = base::ParseRfc3339(str("createdAt"))) r.created_at = *t;
    if (r.id.empty() || r.hash.size() != 64 || r.team.empty()) {
      return InternalError(fmt::format("{}: a key record lacks id, team or sha256", path));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string SerializeKeys(const std::vector<ApiKeyRecord>& records) {
  api::Json keys = api::Json::array();
  for (const auto& r : records) keys.push_back(RecordToJson(r));
  return api::DumpJsonPretty(api::Json{{"keys", std::move(keys)}});
}

// Reads keys.json; a missing file is an empty list. Fills `id` with what was read.
template <typename FileIdT>
Result<std::vector<ApiKeyRecord>> ReadKeys(const std::string& dir, FileIdT* id) {
  std::string path = KeysPath(dir);
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) {
      *id = FileIdT{};
      return std::vector<ApiKeyRecord>{};
    }
    return ErrnoError(fmt::format("open {}", path), errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("stat {}", path), errno);
  if (static_cast<size_t>(st.st_size) > kMaxKeyFileBytes) {
    return InternalError(fmt::format("{} is larger than {} bytes", path, kMaxKeyFileBytes));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("read {}", path), errno);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  id->ino = st.st_ino;
  id->size = st.st_size;
  id->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  return ParseKeys(text, path);
}

Result<std::string> LoadOrMakePepper(const std::string& dir) {
  std::string path = PepperPath(dir);
  auto existing = base::ReadSmallFile(path, 4096);
  if (existing.ok()) {
    std::string pepper(base::TrimSpace(*existing));
    if (pepper.size() < 32) return InternalError(fmt::format("{} is too short", path));
    return pepper;
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  ASSIGN_OR_RETURN(DirLock lock, DirLock::Take(dir));
  // Another process may have made it while we waited for the lock.
  if (auto again = base::ReadSmallFile(path, 4096); again.ok()) {
    return std::string(base::TrimSpace(*again));
  }
  std::string pepper = base::RandomHex(32);
  RETURN_IF_ERROR(WritePrivateFile(path, pepper + "\n"));
  return pepper;
}

}  // namespace

KeyStore::KeyStore(std::string dir, std::string pepper, base::Clock& clock)
    : dir_(std::move(dir)), pepper_(std::move(pepper)), clock_(clock) {}

KeyStore::~KeyStore() = default;

Result<std::unique_ptr<KeyStore>> KeyStore::Open(std::string dir, base::Clock& clock) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status(ec.value() == EACCES ? StatusCode::kPermissionDenied : StatusCode::kInternal,
                  fmt::format("create key directory {}: {}", dir, ec.message()));
  }
  if (::chmod(dir.c_str(), 0700) != 0) return ErrnoError(fmt::format("chmod {}", dir), errno);
  ASSIGN_OR_RETURN(std::string pepper, LoadOrMakePepper(dir));
  std::unique_ptr<KeyStore> store(new KeyStore(std::move(dir), std::move(pepper), clock));
  {
    std::lock_guard lock(store->mu_);
    RETURN_IF_ERROR(store->RefreshLocked());
  }
  return store;
}

Status KeyStore::RefreshLocked() {
  struct stat st {};
  std::string path = KeysPath(dir_);
  FileId now;
  if (::stat(path.c_str(), &st) == 0) {
    now.ino = st.st_ino;
    now.size = st.st_size;
    now.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  } else if (errno != ENOENT) {
    return ErrnoError(fmt::format("stat {}", path), errno);
  }
  if (now == loaded_ && loaded_.size >= 0) return Status::Ok();
  FileId read_id;
  ASSIGN_OR_RETURN(auto records, ReadKeys(dir_, &read_id));
  InstallLocked(std::move(records));
  loaded_ = read_id;
  return Status::Ok();
}

Status KeyStore::Mutate(const std::function<Status(std::vector<ApiKeyRecord>&)>& change) {
  ASSIGN_OR_RETURN(DirLock lock, DirLock::Take(dir_));
  FileId id;
  ASSIGN_OR_RETURN(auto records, ReadKeys(dir_, &id));
  RETURN_IF_ERROR(change(records));
  RETURN_IF_ERROR(WritePrivateFile(KeysPath(dir_), SerializeKeys(records)));
  // Install what was written directly rather than trusting a re-stat: a rename may reuse the
  // old inode number within one timestamp tick.
  std::lock_guard guard(mu_);
  InstallLocked(std::move(records));
  struct stat st {};
  if (::stat(KeysPath(dir_).c_str(), &st) == 0) {
    loaded_.ino = st.st_ino;
    loaded_.size = st.st_size;
    loaded_.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  }
  return Status::Ok();
}

void KeyStore::InstallLocked(std::vector<ApiKeyRecord> records) {
  records_ = std::move(records);
  by_hash_.clear();
  for (size_t i = 0; i < records_.size(); ++i) by_hash_[records_[i].hash] = i;
}

Result<CreatedKey> KeyStore::Create(const NewKeyOptions& options) {
  if (auto err = api::CheckDns1123Label(options.team)) {
    return InvalidArgumentError(fmt::format("team \"{}\" is not valid: {}", options.team, *err));
  }
  if (options.name.size() > kMaxNameLength) {
    return InvalidArgumentError(
        fmt::format("key name is longer than {} characters", kMaxNameLength));
  }
  for (char c : options.name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return InvalidArgumentError("key name contains a control character");
    }
  }
  CreatedKey created;
  created.key = NewApiKey();
  ApiKeyRecord& r = created.record;
  r.id = base::RandomHex(8);
  r.name = options.name.empty() ? fmt::format("{}-{}", options.team, r.id) : options.name;
  r.team = options.team;
  r.admin = options.admin;
  r.hash = HashApiKey(pepper_, created.key);
  r.mask = MaskApiKey(created.key);
  r.created_at = std::chrono::time_point_cast<std::chrono::seconds>(clock_.Now());
  RETURN_IF_ERROR(Mutate([&](std::vector<ApiKeyRecord>& records) {
    for (const auto& other : records) {
      if (other.name == r.name) {
        return AlreadyExistsError(fmt::format("an API key named \"{}\" already exists", r.name));
      }
    }
    records.push_back(r);
    return Status::Ok();
  }));
  base::Logger("auth")->info("api key created id={} name={} team={} admin={}", r.id, r.name, r.team,
                             r.admin);
  return created;
}

Result<std::vector<ApiKeyRecord>> KeyStore::List() {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(RefreshLocked());
  return records_;
}

Result<bool> KeyStore::HasAdminKey() {
  ASSIGN_OR_RETURN(auto records, List());
  for (const auto& r : records) {
    if (r.admin) return true;
  }
  return false;
}

Status KeyStore::Remove(std::string_view id_or_name) {
  std::string removed;
  RETURN_IF_ERROR(Mutate([&](std::vector<ApiKeyRecord>& records) {
    auto it = std::find_if(records.begin(), records.end(), [&](const ApiKeyRecord& r) {
      return r.id == id_or_name || r.name == id_or_name;
    });
    if (it == records.end()) {
      return NotFoundError(fmt::format("API key \"{}\" not found", id_or_name));
    }
    if (it->admin) {
      size_t admins = std::count_if(records.begin(), records.end(),
                                    [](const ApiKeyRecord& r) { return r.admin; });
      if (admins == 1) {
        return FailedPreconditionError(fmt::format(
            "API key \"{}\" is the last admin key; create another admin key first", id_or_name));
      }
    }
    removed = it->id;
    records.erase(it);
    return Status::Ok();
  }));
  base::Logger("auth")->info("api key removed id={}", removed);
  return Status::Ok();
}

Result<Principal> KeyStore::Authenticate(std::string_view key) {
  if (key.empty()) {
    return UnauthenticatedError("missing API key: send it in the X-API-Key header");
  }
  if (!IsWellFormedApiKey(key)) {
    return UnauthenticatedError("invalid API key: expected e2b_ followed by 40 hex characters");
  }
  std::string hash = HashApiKey(pepper_, key);
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(RefreshLocked());
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return UnauthenticatedError("invalid API key");
  const ApiKeyRecord& r = records_[it->second];
  return Principal{.key_id = r.id, .key_name = r.name, .team = r.team, .admin = r.admin};
}

}  // namespace warren::server::auth

#include "node/sandbox_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/typed_codec.h"
#include "base/small_file.h"
#include "node/reasons.h"

namespace warren::node {
namespace {

std::string_view PolicyName(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kAlways:
      return "Always";
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kNever:
      return "Never";
  }
  return "Always";
}

Failure VolumeFailure(const HostPath& p, const std::string& what) {
  return Failure{reasons::kInvalidVolume,
                 fmt::format("volume \"{}\": hostPath {} {}", p.volume, p.path, what), true};
}

}  // namespace

Status WriteOwner(const std::string& path, const OwnerRecord& owner) {
  nlohmann::json j = {{"uid", owner.uid},
                      {"namespace", owner.namespace_},
                      {"name", owner.name},
                      {"restartPolicy", PolicyName(owner.restart_policy)},
                      {"hasCommand", owner.has_command},
                      {"cpuMillicores", owner.cpu_millicores},
                      {"diskBytes", owner.disk_bytes},
                      {"volumes", owner.volumes},
                      {"volumeDirs", owner.volume_dirs}};
  if (!owner.template_json.empty()) {
    auto t = nlohmann::json::parse(owner.template_json, nullptr, /*allow_exceptions=*/false);
    if (!t.is_discarded()) j["template"] = std::move(t);
  }
  // Not synced to the disk: it pairs files with a runtime sandbox, whose state is in /run and
  // does not outlive a reboot; a crash of the process keeps it (the kernel's cache has it). The
  // sync cost a filesystem commit per new sandbox, on the disk the store commits claims to.
  return base::WriteFileAtomically(path, j.dump() + "\n", /*durable=*/false);
}

std::string TemplateJson(const api::PodTemplateSpec& pod) {
  api::Json j = api::Json::object();
  api::EncodeTyped(pod, j);
  return api::DumpJson(j);
}

Result<api::PodTemplateSpec> ParseTemplateJson(const std::string& json) {
  ASSIGN_OR_RETURN(api::Json j, api::ParseJson(json));
  return api::DecodeTyped<api::PodTemplateSpec>(j, "template");
}

Result<OwnerRecord> ReadOwner(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(path, 64 * 1024));
  try {
    auto j = nlohmann::json::parse(text);
    OwnerRecord o;
    o.uid = j.at("uid").get<std::string>();
    o.namespace_ = j.at("namespace").get<std::string>();
    o.name = j.at("name").get<std::string>();
    std::string policy = j.value("restartPolicy", "Always");
    o.restart_policy = policy == "Never"       ? RestartPolicy::kNever
                       : policy == "OnFailure" ? RestartPolicy::kOnFailure
                                               : RestartPolicy::kAlways;
    o.has_command = j.value("hasCommand", false);
    o.cpu_millicores = j.value("cpuMillicores", int64_t{0});
    o.disk_bytes = j.value("diskBytes", int64_t{0});
    o.volumes = j.value("volumes", std::vector<std::string>{});
    o.volume_dirs = j.value("volumeDirs", std::vector<std::string>{});
    if (j.contains("template") && j["template"].is_object()) o.template_json = j["template"].dump();
    return o;
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(fmt::format("{}: {}", path, e.what()));
  }
}

Status MakeDirs(const std::string& dir) {
  std::filesystem::path p(dir);
  std::filesystem::path sofar;
  for (const auto& part : p) {
    sofar /= part;
    if (sofar.string() == "/") continue;
    if (mkdir(sofar.c_str(), 0711) == 0) continue;
    if (errno != EEXIST) return ErrnoError(fmt::format("mkdir {}", sofar.string()), errno);
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return ErrnoError(fmt::format("stat {}", dir), errno);
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(dir + " is not a directory");
  return Status::Ok();
}

std::optional<Failure> PrepareHostPaths(const std::vector<HostPath>& paths,
                                        uint32_t sandbox_root_uid) {
  for (const HostPath& p : paths) {
    struct stat st;
    const bool exists = lstat(p.path.c_str(), &st) == 0;
    switch (p.kind) {
      case HostPath::Kind::kEmptyDir:
        if (Status s = MakeDirs(p.path); !s.ok()) {
          return Failure{reasons::kCreateFailed, s.message(), true};
        }
        // emptyDir volumes are world-writable as in Kubernetes; the log directory (no volume
        // name) only for the sandbox's root, which envd runs as.
        if (chown(p.path.c_str(), sandbox_root_uid, sandbox_root_uid) != 0 ||
            chmod(p.path.c_str(), p.volume.empty() ? 0755 : 0777) != 0) {
          return Failure{reasons::kCreateFailed,
                         fmt::format("chown {}: {}", p.path, strerror(errno)), true};
        }
        break;
      case HostPath::Kind::kDirectoryOrCreate:
        if (!exists) {
          if (Status s = MakeDirs(p.path); !s.ok()) return VolumeFailure(p, s.message());
        } else if (!S_ISDIR(st.st_mode)) {
          return VolumeFailure(p, "exists and is not a directory");
        }
        break;
      case HostPath::Kind::kDirectory:
        if (!exists || !S_ISDIR(st.st_mode)) return VolumeFailure(p, "is not a directory");
        break;
      case HostPath::Kind::kFileOrCreate:
        if (!exists) {
          int fd = open(p.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
          if (fd < 0 && errno != EEXIST) {
            return VolumeFailure(p, fmt::format("cannot be created: {}", strerror(errno)));
          }
          if (fd >= 0) close(fd);
        } else if (!S_ISREG(st.st_mode)) {
          return VolumeFailure(p, "exists and is not a regular file");
        }
        break;
      case HostPath::Kind::kFile:
        if (!exists || !S_ISREG(st.st_mode)) return VolumeFailure(p, "is not a regular file");
        break;
      case HostPath::Kind::kExisting:
        if (!exists) return VolumeFailure(p, "does not exist");
        break;
    }
  }
  return std::nullopt;
}

Result<base::UniqueFd> OpenRegularFileBeneath(const std::string& dir, const std::string& relative) {
  base::UniqueFd dfd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd) return ErrnoError(fmt::format("open {}", dir), errno);
  struct open_how how {};
  how.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  int fd = static_cast<int>(syscall(SYS_openat2, dfd.get(), relative.c_str(), &how, sizeof how));
  if (fd < 0) return ErrnoError(fmt::format("open {}/{}", dir, relative), errno);
  base::UniqueFd file(fd);
  struct stat st;
  if (fstat(file.get(), &st) != 0) return ErrnoError("fstat", errno);
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError(fmt::format("{}/{} is not a regular file", dir, relative));
  }
  // Reads block from here on (a regular file never would anyway).
  fcntl(file.get(), F_SETFL, O_RDONLY);
  return file;
}

Result<uint64_t> ReadAppendedLines(const std::string& dir, const std::string& relative,
                                   uint64_t offset, size_t max_bytes, size_t max_lines,
                                   const std::function<Result<bool>(std::string_view)>& line) {
  auto fd = OpenRegularFileBeneath(dir, relative);
  if (!fd.ok()) {
    if (fd.status().code() == StatusCode::kNotFound) return offset;
    return fd.status();
  }
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return ErrnoError(fmt::format("stat {}", relative), errno);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < offset) offset = 0;
  if (size == offset) return offset;
  std::string text(std::min<uint64_t>(size - offset, max_bytes), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n =
        pread(fd->get(), text.data() + done, text.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("reading {}", relative), errno);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  size_t counted = 0, pos = 0;
  while (pos < text.size() && counted < max_lines) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // the rest is still being written
    ASSIGN_OR_RETURN(bool counts, line(std::string_view(text).substr(pos, nl - pos)));
    if (counts) ++counted;
    pos = nl + 1;
  }
  if (pos == 0 && text.size() == max_bytes) pos = text.size();
  return offset + pos;
}

std::string TailOfFile(const std::string& path, size_t max_bytes) {
  base::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return "";
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  off_t start = st.st_size > static_cast<off_t>(max_bytes) ? st.st_size - max_bytes : 0;
  std::string out(static_cast<size_t>(st.st_size - start), '\0');
  ssize_t n = pread(fd.get(), out.data(), out.size(), start);
  if (n < 0) return "";
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace warren::node

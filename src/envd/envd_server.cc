#include "envd/envd_server.h"

#include <fmt/format.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "base/clock.h"
#include "base/encoding.h"
#include "base/log.h"
#include "base/strings.h"
#include "envd/connect_handler.h"
#include "envd/download_headers.h"
#include "envd/file_transfer.h"
#include "envd/gzip_probe.h"
#include "envd/paths.h"
#include "envd/signature.h"
#include "envd/version.h"
#include "net/http.h"

namespace warren::envd {
namespace {

using net::Request;
using net::Responder;
using net::Response;

constexpr size_t kMaxUploadBody = size_t{1} << 40;
constexpr size_t kDownloadChunk = 256 * 1024;
constexpr size_t kDownloadHighWater = 4 * 1024 * 1024;

std::optional<std::string> OptionalHeader(const Request& req, std::string_view name) {
  auto v = req.headers.Get(name);
  if (!v) return std::nullopt;
  return std::string(*v);
}

// Reads until `n` bytes or the end of the file, whichever comes first.
Result<size_t> ReadUpTo(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError("read", errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

// The /files status for a failure (e2b-protocol.md §3.6).
int FilesHttpStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 507;
    case StatusCode::kDeadlineExceeded:
      return 408;
    default:
      return 500;
  }
}

// CPU use between two calls of /metrics, from /proc/stat.
struct CpuSample {
  uint64_t busy = 0;
  uint64_t total = 0;
};
CpuSample ReadCpu() {
  std::ifstream in("/proc/stat");
  std::string label;
  in >> label;
  CpuSample s;
  uint64_t v;
  for (int i = 0; i < 10 && in >> v; ++i) {
    s.total += v;
    if (i != 3 && i != 4) s.busy += v;  // idle and iowait are not busy
  }
  return s;
}

}  // namespace

// The plain HTTP endpoints: /files, /health, /envs, /metrics, /init, /reset, /logs.
class Envd::Impl {
 public:
  explicit Impl(Envd& envd) : e_(envd) {}

  // The `username` query names the user of a /files request; the default user otherwise.
  Result<os::UserInfo> LookupFilesUser(const Request& req) {
    auto q = req.Query("username");
    std::string name = q && !q->empty() ? *q : e_.state_.default_user();
    auto user = e_.users_.LookupUser(name);
    if (!user.ok()) {
      return UnauthenticatedError(
          fmt::format("error looking up user '{}': {}", name, user.status().message()));
    }
    return user;
  }

  Status CheckFiles(const Request& req, std::string_view operation) {
    FileAccess access;
    access.header_token = OptionalHeader(req, "X-Access-Token");
    access.path = req.Query("path").value_or("");
    access.username = req.Query("username").value_or("");
    access.signature = req.Query("signature");
    access.signature_expiration = req.Query("signature_expiration");
    access.operation = std::string(operation);
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(base::RealClock().Now().time_since_epoch())
            .count();
    return CheckFileAccess(e_.state_.access_token(), access, now);
  }

  void GetFile(Request& req, Responder& r) {
    if (Status s = CheckFiles(req, "read"); !s.ok()) return r.Send(HttpError(401, s.message()));
    auto user = LookupFilesUser(req);
    if (!user.ok()) return r.Send(HttpError(401, user.status().message()));
    auto path = ResolvePath(req.Query("path").value_or(""), *user, e_.state_.default_workdir());
    if (!path.ok())
      return r.Send(HttpError(FilesHttpStatus(path.status()), path.status().message()));
    auto file = OpenDownload(*path);
    if (!file.ok())
      return r.Send(HttpError(FilesHttpStatus(file.status()), file.status().message()));

    DownloadConditions conditions;
    conditions.accept_encoding = req.headers.Get("Accept-Encoding");
    conditions.range = req.headers.Get("Range");
    conditions.if_none_match = req.headers.Get("If-None-Match");
    conditions.if_modified_since = req.headers.Get("If-Modified-Since");
    conditions.if_range = req.headers.Get("If-Range");
    DownloadPlan plan =
        PlanDownload(conditions, {file->size, file->mtime_sec, file->mtime_nsec, file->inode});
    // When the client takes identity as well, gzip only what compresses: the first bytes decide,
    // before the head goes out (HEAD probes too, so its headers are the GET's). They stay in `buf`
    // and are the first bytes sent.
    std::string buf(kDownloadChunk, '\0');
    size_t probed = 0;
    if (plan.gzip_if_it_pays) {
      auto n = ReadUpTo(file->fd.get(), buf.data(),
                        static_cast<size_t>(std::min<uint64_t>(kGzipProbeBytes, plan.length)));
      if (!n.ok()) {
        return r.Send(
            HttpError(500, fmt::format("reading '{}' failed: {}", *path, n.status().message())));
      }
      probed = *n;
      if (!GzipPays(std::string_view(buf.data(), probed), file->size)) {
        plan.coding = ContentCoding::kIdentity;
      }
    }

    // Every answer about the file carries its validators and says it depends on Accept-Encoding.
    net::Headers headers;
    headers.Set("ETag", plan.etag);
    headers.Set("Last-Modified", plan.last_modified);
    headers.Set("Vary", "Accept-Encoding");
    auto send_with = [&](net::Response resp) {
      for (const auto& [name, value] : headers.fields()) resp.headers.Set(name, value);
      r.Send(std::move(resp));
    };
    switch (plan.status) {
      case 304:
        return send_with(Response::Empty(304));
      case 406:
        return send_with(
            HttpError(406,
                      "no acceptable Content-Encoding: identity is refused and only gzip is "
                      "supported besides it"));
      case 416: {
        Response resp = HttpError(416, fmt::format("range '{}' is not satisfiable: the file has "
                                                   "{} bytes",
                                                   conditions.range.value_or(""), file->size));
        resp.headers.Set("Content-Range", plan.content_range);
        return send_with(std::move(resp));
      }
      default:
        break;
    }
    headers.Set("Content-Type", "application/octet-stream");
    headers.Set("Content-Disposition", ContentDisposition(file->name));
    if (plan.coding == ContentCoding::kGzip) {
      headers.Set("Content-Encoding", "gzip");  // chunked: the coded length is not known ahead
    } else {
      headers.Set("Accept-Ranges", "bytes");
      headers.Set("Content-Length", std::to_string(plan.length));
      if (plan.status == 206) headers.Set("Content-Range", plan.content_range);
    }
    auto stream = r.Stream(plan.status, std::move(headers));
    if (req.method == "HEAD") return stream->Finish();
    if (plan.offset > 0 && lseek(file->fd.get(), static_cast<off_t>(plan.offset), SEEK_SET) < 0) {
      return stream->Abort();
    }
    std::optional<GzipEncoder> gzip;
    if (plan.coding == ContentCoding::kGzip) gzip.emplace();
    std::string coded;
    auto send = [&](std::string data) {
      if (data.empty()) return true;
      return stream->WaitWritable(kDownloadHighWater, std::chrono::seconds(60)) &&
             stream->Write(std::move(data));
    };
    uint64_t left = plan.length;
    while (left > 0) {
      size_t n = std::exchange(probed, 0);
      if (n == 0) {
        ssize_t got = read(file->fd.get(), buf.data(), std::min<uint64_t>(buf.size(), left));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;  // the file shrank under us: the client sees a short body
        n = static_cast<size_t>(got);
      }
      left -= n;
      std::string_view chunk(buf.data(), n);
      if (gzip) {
        coded.clear();
        if (!gzip->Encode(chunk, coded).ok()) break;
        if (!send(std::move(coded))) break;
      } else if (!send(std::string(chunk))) {
        break;
      }
    }
    if (left == 0 && gzip) {
      coded.clear();
      if (!gzip->Finish(coded).ok() || !send(std::move(coded))) return stream->Abort();
    }
    if (left == 0) {
      stream->Finish();
    } else {
      stream->Abort();
    }
  }

  void PostFile(Request& req, Responder& r) {
    if (Status s = CheckFiles(req, "write"); !s.ok()) return r.Send(HttpError(401, s.message()));
    auto user = LookupFilesUser(req);
    if (!user.ok()) return r.Send(HttpError(401, user.status().message()));
    auto metadata = MetadataFromHeaders(req.headers.fields());
    if (!metadata.ok()) return r.Send(HttpError(400, metadata.status().message()));
    UploadRequest up;
    up.content_type = std::string(req.headers.Get("Content-Type").value_or(""));
    up.content_encoding =
        std::string(base::TrimSpace(req.headers.Get("Content-Encoding").value_or("")));
    if (base::EqualsIgnoreCase(up.content_encoding, "identity")) up.content_encoding.clear();
    up.path = req.Query("path");
    if (up.path && up.path->empty()) up.path.reset();
    up.user = *user;
    up.default_workdir = e_.state_.default_workdir();
    up.metadata = std::move(*metadata);
    std::shared_ptr<net::BodyReader> reader = req.body_reader;
    size_t offset = 0;
    const std::string& whole = req.body;
    BodyReadFn read = [&](char* buf, size_t n) -> Result<size_t> {
      if (reader) return reader->Read(buf, n);
      size_t k = std::min(n, whole.size() - offset);
      std::memcpy(buf, whole.data() + offset, k);
      offset += k;
      return k;
    };
    auto written = ReceiveUpload(up, read, e_.fs_);
    if (!written.ok()) {
      return r.Send(HttpError(FilesHttpStatus(written.status()), written.status().message()));
    }
    for (const auto& f : *written) {
      e_.audit_.Record("file.write", {{"path", f.path}, {"user", up.user.name}});
    }
    r.Send(Response::Json(200, WrittenFilesJson(*written)));
  }

  void Health(Responder& r) {
    Response resp = Response::Empty(204);
    resp.headers.Set("X-Envd-Version", kEnvdVersion);
    r.Send(std::move(resp));
  }

  void Envs(Request& req, Responder& r) {
    if (Status s = CheckRequestToken(e_.state_, req); !s.ok())
      return r.Send(HttpError(401, s.message()));
    r.Send(Response::Json(200, nlohmann::json(e_.state_.env_vars()).dump()));
  }

  void Metrics(Request& req, Responder& r) {
    if (Status s = CheckRequestToken(e_.state_, req); !s.ok())
      return r.Send(HttpError(401, s.message()));
    std::map<std::string, uint64_t> mem;
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string key;
      uint64_t kb = 0;
      ls >> key >> kb;
      if (!key.empty()) mem[key.substr(0, key.size() - 1)] = kb * 1024;
    }
    const uint64_t total = mem["MemTotal"];
    const uint64_t available = mem.count("MemAvailable") ? mem["MemAvailable"] : mem["MemFree"];
    const uint64_t used = total > available ? total - available : 0;
    CpuSample now = ReadCpu();
    double pct = 0;
    {
      std::lock_guard lock(cpu_mu_);
      if (now.total > last_cpu_.total) {
        pct = 100.0 * static_cast<double>(now.busy - last_cpu_.busy) /
              static_cast<double>(now.total - last_cpu_.total);
      }
      last_cpu_ = now;
    }
    struct statfs fs {};
    uint64_t disk_total = 0, disk_used = 0;
    if (statfs("/", &fs) == 0) {
      disk_total = static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
      disk_used = disk_total - static_cast<uint64_t>(fs.f_bfree) * fs.f_frsize;
    }
    nlohmann::json j = {
        {"ts", std::chrono::duration_cast<std::chrono::seconds>(
                   base::RealClock().Now().time_since_epoch())
                   .count()},
        {"cpu_count", sysconf(_SC_NPROCESSORS_ONLN)},
        {"cpu_used_pct", pct},
        {"mem_total", total},
        {"mem_used", used},
        {"mem_cache", mem["Cached"]},
        {"mem_total_mib", total / (1024 * 1024)},
        {"mem_used_mib", used / (1024 * 1024)},
        {"disk_used", disk_used},
        {"disk_total", disk_total},
        {"envd_version", kEnvdVersion},
        {"processes", e_.processes_.live_count()},
    };
    r.Send(Response::Json(200, j.dump()));
  }

  bool HasNodeSecret(const Request& req) {
    auto secret = e_.state_.reset_secret();
    auto given = req.headers.Get(kNodeSecretHeader);
    return secret && given && base::ConstantTimeEquals(*given, *secret);
  }

  void Init(Request& req, Responder& r) {
    // Once a token is set, only its holder (or the node agent) may change the settings: a
    // process inside the sandbox must not be able to take the agent over.
    if (e_.state_.access_token() && !HasNodeSecret(req)) {
      if (Status s = CheckRequestToken(e_.state_, req); !s.ok())
        return r.Send(HttpError(401, s.message()));
    }
    auto init = ParseInitRequest(req.body);
    if (!init.ok()) return r.Send(HttpError(400, init.status().message()));
    if (init->default_user && !init->default_user->empty()) {
      auto user = e_.users_.LookupUser(*init->default_user);
      if (!user.ok()) {
        return r.Send(HttpError(400, fmt::format("invalid defaultUser '{}': {}",
                                                 *init->default_user, user.status().message())));
      }
    }
    e_.state_.ApplyInit(*init, HasNodeSecret(req));
    r.Send(Response::Empty(204));
  }

  void ResetRoute(Request& req, Responder& r) {
    if (!e_.state_.reset_secret()) {
      return r.Send(HttpError(403, "reset is disabled: envd has no node secret"));
    }
    if (!HasNodeSecret(req)) {
      return r.Send(HttpError(401, fmt::format("missing or wrong {} header", kNodeSecretHeader)));
    }
    e_.Reset();
    r.Send(Response::Empty(204));
  }

  void Logs(Request& req, Responder& r) {
    if (Status s = CheckRequestToken(e_.state_, req); !s.ok() && !HasNodeSecret(req)) {
      return r.Send(HttpError(401, s.message()));
    }
    Response resp = Response::Text(200, e_.command_log_.Snapshot());
    resp.headers.Set("X-Log-Total-Bytes", std::to_string(e_.command_log_.total_bytes()));
    r.Send(std::move(resp));
  }

 private:
  Envd& e_;
  std::mutex cpu_mu_;
  CpuSample last_cpu_;  // guarded by cpu_mu_
};

Envd::Envd(EnvdOptions options)
    : state_(options.defaults),
      audit_(options.audit_file),
      users_(options.passwd_path, options.group_path),
      fs_(users_),
      processes_(timers_),
      watchers_(fs_),
      command_log_(options.log_capacity, options.log_file),
      process_service_(state_, timers_, processes_),
      filesystem_service_(state_, fs_, timers_, watchers_),
      impl_(std::make_unique<Impl>(*this)) {
  processes_.set_audit(&audit_);
  filesystem_service_.set_audit(&audit_);
}

Envd::~Envd() {
  filesystem_service_.EndWatchStreams(UnavailableError("envd is stopping"));
  watchers_.Clear();
  processes_.KillAll();
}

void Envd::Reset() {
  processes_.KillAll();
  filesystem_service_.EndWatchStreams(UnavailableError("envd was reset"));
  watchers_.Clear();
  state_.Reset();
  base::Logger("envd")->info("state reset");
}

void Envd::FollowInitChannel(std::unique_ptr<InitChannelReader> channel) {
  state_.FollowInitChannel(std::move(channel), [this](const std::string& name) {
    return users_.LookupUser(name).status();
  });
}

net::Router Envd::BuildRouter() {
  net::Router router;
  const RpcAuth auth{&state_, &users_};
  process_service_.Register(router, auth);
  filesystem_service_.Register(router, auth);
  // Unknown methods of our services, and StreamInput (a client stream connect-web cannot send).
  for (std::string_view service :
       {"/process.Process/{method}", "/filesystem.Filesystem/{method}"}) {
    router.Add("POST", service, [](Request&& req, Responder r) {
      r.Send(ConnectError(
          UnimplementedError(fmt::format("method '{}' is not implemented", req.path))));
    });
  }

  Impl* impl = impl_.get();
  router.Add("GET", "/health", [impl](Request&&, Responder r) { impl->Health(r); });
  net::RouteOptions files_get;
  files_get.blocking = true;
  router.Add(
      "GET", "/files", [impl](Request&& req, Responder r) { impl->GetFile(req, r); }, files_get);
  net::RouteOptions upload;
  upload.blocking = true;
  upload.stream_body = true;
  upload.max_body_bytes = kMaxUploadBody;
  router.Add(
      "POST", "/files", [impl](Request&& req, Responder r) { impl->PostFile(req, r); }, upload);
  net::RouteOptions small;
  small.blocking = true;
  small.max_body_bytes = 1024 * 1024;
  router.Add(
      "GET", "/envs", [impl](Request&& req, Responder r) { impl->Envs(req, r); }, small);
  router.Add(
      "GET", "/metrics", [impl](Request&& req, Responder r) { impl->Metrics(req, r); }, small);
  // /init is the one call on a pool claim's path: it runs on the loop (a parse, a lookup in two
  // small files, a lock) instead of waking — in a fresh sandbox, first starting — a worker
  // thread, which cost a claim more than the handler itself.
  net::RouteOptions on_loop;
  on_loop.max_body_bytes = 1024 * 1024;
  router.Add(
      "POST", "/init", [impl](Request&& req, Responder r) { impl->Init(req, r); }, on_loop);
  router.Add(
      "POST", "/reset", [impl](Request&& req, Responder r) { impl->ResetRoute(req, r); }, small);
  router.Add(
      "GET", "/logs", [impl](Request&& req, Responder r) { impl->Logs(req, r); }, small);
  router.SetFallback([](Request&& req, Responder r) {
    r.Send(HttpError(404, fmt::format("no route for {} {}", req.method, req.path)));
  });
  return router;
}

}  // namespace warren::envd

#include "envd/envd_server.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/clock.h"
#include "base/encoding.h"
#include "base/log.h"
#include "base/strings.h"
#include "envd/envelope.h"
#include "envd/file_transfer.h"
#include "envd/filesystem_messages.h"
#include "envd/paths.h"
#include "envd/process_messages.h"
#include "envd/signature.h"
#include "envd/stream_session.h"
#include "envd/version.h"
#include "net/http.h"

namespace warren::envd {
namespace {

using net::Request;
using net::Responder;
using net::Response;

constexpr size_t kMaxRpcBody = 16 * 1024 * 1024;
constexpr size_t kMaxUploadBody = size_t{1} << 40;
constexpr size_t kDownloadChunk = 256 * 1024;
constexpr size_t kDownloadHighWater = 4 * 1024 * 1024;
constexpr auto kDefaultKeepalive = std::chrono::seconds(90);
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string HttpErrorJson(int status, std::string_view message) {
  return nlohmann::json{{"code", status}, {"message", message}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Response HttpError(int status, std::string_view message) {
  return Response::Json(status, HttpErrorJson(status, message));
}

Response ConnectError(const Status& status) {
  return Response::Json(HttpStatusFromCode(status.code()), ConnectErrorJson(status));
}

// The Connect protocol answers an unsupported codec with HTTP 415.
Response UnsupportedMediaType(const Status& status) {
  return Response::Json(415, ConnectErrorJson(status));
}

Response Unauthorized(const Status& status) { return HttpError(401, status.message()); }

// The media type of a Content-Type value, lower-cased, without parameters.
std::string MediaType(const Request& req) {
  auto ct = req.headers.Get("Content-Type").value_or("");
  return base::AsciiLower(base::TrimSpace(ct.substr(0, ct.find(';'))));
}

std::optional<std::string> Header(const Request& req, std::string_view name) {
  auto v = req.headers.Get(name);
  if (!v) return std::nullopt;
  return std::string(*v);
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

// A server stream's messages as Connect envelopes on a chunked HTTP response.
class HttpMessageSink final : public MessageSink {
 public:
  explicit HttpMessageSink(std::shared_ptr<net::ResponseStream> stream)
      : stream_(std::move(stream)) {}
  bool Send(std::string json) override {
    return stream_->Write(EncodeEnvelope(kEnvelopeMessage, json));
  }
  void Finish(const Status& status) override {
    stream_->Write(EncodeEnvelope(kEnvelopeEndStream, EndStreamJson(status)));
    stream_->Finish();
  }
  bool WaitWritable(size_t high_water, std::chrono::milliseconds timeout) override {
    return stream_->WaitWritable(high_water, timeout);
  }
  void OnClose(std::function<void()> callback) override { stream_->OnClose(std::move(callback)); }
  bool closed() const override { return stream_->closed(); }

 private:
  std::shared_ptr<net::ResponseStream> stream_;
};

// Connect-Timeout-Ms: at most 10 digits (the protocol's limit).
Result<std::optional<std::chrono::milliseconds>> ParseTimeout(const Request& req) {
  auto v = req.headers.Get("Connect-Timeout-Ms");
  if (!v) return std::optional<std::chrono::milliseconds>();
  auto ms = base::ParseInt64(base::TrimSpace(*v));
  if (!ms || *ms < 0 || v->size() > 10) {
    return InvalidArgumentError(fmt::format("invalid Connect-Timeout-Ms '{}'", *v));
  }
  // 0 means no deadline, as the SDKs' timeoutMs: 0 does.
  if (*ms == 0) return std::optional<std::chrono::milliseconds>();
  return std::optional<std::chrono::milliseconds>(std::chrono::milliseconds(*ms));
}

std::chrono::milliseconds ParseKeepalive(const Request& req) {
  auto v = req.headers.Get("Keepalive-Ping-Interval");
  if (!v) return kDefaultKeepalive;
  auto s = base::ParseInt64(base::TrimSpace(*v));
  if (!s || *s <= 0 || *s > 24 * 3600) return kDefaultKeepalive;
  return std::chrono::seconds(*s);
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

class Envd::Impl {
 public:
  explicit Impl(Envd& envd) : e_(envd) {}

  // ---- shared request steps ----

  Status CheckToken(const Request& req) {
    return CheckAccessToken(e_.state_.access_token(), Header(req, "X-Access-Token"));
  }

  Result<os::UserInfo> LookupRpcUser(const Request& req) {
    auto name = UserFromBasicAuth(req.headers.Get("Authorization"), e_.state_.default_user());
    if (!name.ok()) return UnauthenticatedError(name.status().message());
    auto user = e_.users_.LookupUser(*name);
    if (!user.ok()) {
      if (user.status().code() == StatusCode::kNotFound) {
        return UnauthenticatedError(fmt::format("invalid username: '{}'", *name));
      }
      return user.status();
    }
    return user;
  }

  using UnaryFn = std::function<Result<std::string>(const std::string& body, const os::UserInfo&)>;

  // A unary Connect call with a JSON body: token, content type, user, then `fn`.
  void Unary(Request& req, Responder& r, const UnaryFn& fn) {
    if (Status s = CheckToken(req); !s.ok()) return r.Send(Unauthorized(s));
    if (MediaType(req) != "application/json") {
      return r.Send(UnsupportedMediaType(InvalidArgumentError(fmt::format(
          "unsupported content type '{}': this server speaks the Connect protocol with JSON "
          "(application/json)",
          req.headers.Get("Content-Type").value_or("")))));
    }
    auto user = LookupRpcUser(req);
    if (!user.ok()) return r.Send(ConnectError(user.status()));
    auto out = fn(req.body, *user);
    if (!out.ok()) return r.Send(ConnectError(out.status()));
    r.Send(Response::Json(200, std::move(*out)));
  }

  using StreamFn = std::function<void(const std::string& payload, const os::UserInfo&,
                                      const std::shared_ptr<MessageSink>&, StreamOptions)>;

  // A server-streaming Connect call: errors after the headers go in the end-of-stream frame of
  // an HTTP 200 response, as the protocol demands.
  void ServerStream(Request& req, Responder& r, const StreamFn& fn) {
    if (Status s = CheckToken(req); !s.ok()) return r.Send(Unauthorized(s));
    if (MediaType(req) != "application/connect+json") {
      return r.Send(UnsupportedMediaType(InvalidArgumentError(fmt::format(
          "unsupported content type '{}' for a streaming call: use application/connect+json",
          req.headers.Get("Content-Type").value_or("")))));
    }
    net::Headers headers;
    headers.Set("Content-Type", "application/connect+json");
    auto sink = std::make_shared<HttpMessageSink>(r.Stream(200, std::move(headers)));
    auto fail = [&](const Status& s) { sink->Finish(s); };
    auto timeout = ParseTimeout(req);
    if (!timeout.ok()) return fail(timeout.status());
    auto payload = DecodeSingleEnvelope(req.body, kMaxRpcBody);
    if (!payload.ok()) return fail(payload.status());
    auto user = LookupRpcUser(req);
    if (!user.ok()) return fail(user.status());
    StreamOptions options;
    options.keepalive = ParseKeepalive(req);
    options.timeout = *timeout;
    fn(*payload, *user, sink, options);
  }

  std::optional<std::string> Workdir() { return e_.state_.default_workdir(); }

  // ---- process.Process ----

  void Start(const std::string& payload, const os::UserInfo& user,
             const std::shared_ptr<MessageSink>& sink, StreamOptions options) {
    auto session = StreamSession::Create(sink, e_.timers_, options, KeepaliveEventJson());
    auto plan = PlanStart(payload, user);
    if (!plan.ok()) return session->End(plan.status());
    auto p = e_.processes_.Start(std::move(*plan), session);
    if (!p.ok()) return session->End(p.status());
    // Start's deadline is also the process's lifetime (e2b-protocol.md §3.4 rule 4), whether or
    // not the client is still there to see the stream end: the SDK aborts its request at the
    // same moment, which ends the session first.
    if (options.timeout) {
      std::weak_ptr<ManagedProcess> weak = *p;
      e_.timers_.ScheduleAfter(*options.timeout, [weak] {
        if (auto proc = weak.lock()) proc->Signal(SIGKILL).IgnoreError();
      });
    }
  }

  Result<SpawnPlan> PlanStart(const std::string& payload, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(StartRequest req, ParseStartRequest(payload));
    SpawnPlan plan;
    std::string cwd;
    if (req.process.cwd && !req.process.cwd->empty()) {
      ASSIGN_OR_RETURN(cwd, ResolvePath(*req.process.cwd, user, Workdir()));
      struct stat st;
      if (stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        return InvalidArgumentError(fmt::format("cwd '{}' does not exist", cwd));
      }
    } else {
      auto workdir = Workdir();
      cwd = workdir ? *workdir : user.home;
      struct stat st;
      if (cwd.empty() || stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) cwd = "/";
    }
    std::map<std::string, std::string> env;
    const char* path = getenv("PATH");
    env["PATH"] = path ? path : kDefaultPath;
    env["HOME"] = user.home;
    env["USER"] = user.name;
    env["LOGNAME"] = user.name;
    for (const auto& [k, v] : e_.state_.env_vars()) env[k] = v;
    for (const auto& [k, v] : req.process.envs) env[k] = v;
    for (const auto& [k, v] : env) {
      if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
          v.find('\0') != std::string::npos) {
        return InvalidArgumentError(fmt::format("invalid environment variable name '{}'", k));
      }
      plan.env.push_back(k + "=" + v);
    }
    plan.argv.push_back(req.process.cmd);
    for (const auto& a : req.process.args) plan.argv.push_back(a);
    plan.cwd = cwd;
    plan.credentials = {user.uid, user.gid, user.groups};
    plan.request = std::move(req);
    return plan;
  }

  void Connect(const std::string& payload, const os::UserInfo&,
               const std::shared_ptr<MessageSink>& sink, StreamOptions options) {
    // A Connect stream's deadline bounds the stream only, never the process.
    auto session = StreamSession::Create(sink, e_.timers_, options, KeepaliveEventJson());
    auto req = ParseConnectRequest(payload);
    if (!req.ok()) return session->End(req.status());
    auto p = e_.processes_.Find(req->process, /*include_ended=*/true);
    if (!p.ok()) return session->End(p.status());
    (*p)->Subscribe(session);
  }

  Result<std::string> List(const std::string& body) {
    RETURN_IF_ERROR(ParseListRequest(body));
    return ListResponseJson(e_.processes_.List());
  }

  Result<std::string> SendInput(const std::string& body) {
    ASSIGN_OR_RETURN(auto req, ParseSendInputRequest(body));
    ASSIGN_OR_RETURN(auto p, e_.processes_.Find(req.process));
    RETURN_IF_ERROR(p->WriteInput(req.kind, req.data));
    return std::string("{}");
  }

  Result<std::string> SendSignal(const std::string& body) {
    ASSIGN_OR_RETURN(auto req, ParseSendSignalRequest(body));
    ASSIGN_OR_RETURN(auto p, e_.processes_.Find(req.process));
    RETURN_IF_ERROR(p->Signal(req.signal));
    return std::string("{}");
  }

  Result<std::string> CloseStdin(const std::string& body) {
    ASSIGN_OR_RETURN(auto req, ParseCloseStdinRequest(body));
    ASSIGN_OR_RETURN(auto p, e_.processes_.Find(req.process));
    RETURN_IF_ERROR(p->CloseStdin());
    return std::string("{}");
  }

  Result<std::string> Update(const std::string& body) {
    ASSIGN_OR_RETURN(auto req, ParseUpdateRequest(body));
    ASSIGN_OR_RETURN(auto p, e_.processes_.Find(req.process));
    if (req.pty) RETURN_IF_ERROR(p->Resize(*req.pty));
    return std::string("{}");
  }

  // ---- filesystem.Filesystem ----

  Result<std::string> Stat(const std::string& body, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(auto req, ParsePathRequest(body));
    ASSIGN_OR_RETURN(auto path, ResolvePath(req.path, user, Workdir()));
    ASSIGN_OR_RETURN(auto entry, e_.fs_.Stat(path));
    return EntryResponseJson(entry);
  }

  Result<std::string> MakeDir(const std::string& body, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(auto req, ParsePathRequest(body));
    ASSIGN_OR_RETURN(auto path, ResolvePath(req.path, user, Workdir()));
    ASSIGN_OR_RETURN(auto entry, e_.fs_.MakeDir(path, user));
    return EntryResponseJson(entry);
  }

  Result<std::string> Move(const std::string& body, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(auto req, ParseMoveRequest(body));
    ASSIGN_OR_RETURN(auto source, ResolvePath(req.source, user, Workdir()));
    ASSIGN_OR_RETURN(auto destination, ResolvePath(req.destination, user, Workdir()));
    ASSIGN_OR_RETURN(auto entry, e_.fs_.Move(source, destination, user));
    return EntryResponseJson(entry);
  }

  Result<std::string> ListDir(const std::string& body, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(auto req, ParseListDirRequest(body));
    ASSIGN_OR_RETURN(auto path, ResolvePath(req.path, user, Workdir()));
    ASSIGN_OR_RETURN(auto entries, e_.fs_.ListDir(path, req.depth));
    return ListDirResponseJson(entries);
  }

  Result<std::string> Remove(const std::string& body, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(auto req, ParsePathRequest(body));
    ASSIGN_OR_RETURN(auto path, ResolvePath(req.path, user, Workdir()));
    RETURN_IF_ERROR(e_.fs_.Remove(path));
    return std::string("{}");
  }

  Result<WatchOptions> WatchOptionsFrom(const std::string& body, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(auto req, ParseWatchRequest(body));
    WatchOptions o;
    ASSIGN_OR_RETURN(o.path, ResolvePath(req.path, user, Workdir()));
    o.recursive = req.recursive;
    o.include_entry = req.include_entry;
    o.allow_network_mounts = req.allow_network_mounts;
    return o;
  }

  void WatchDir(const std::string& payload, const os::UserInfo& user,
                const std::shared_ptr<MessageSink>& sink, StreamOptions options) {
    auto session = StreamSession::Create(sink, e_.timers_, options, WatchKeepaliveJson());
    auto o = WatchOptionsFrom(payload, user);
    if (!o.ok()) return session->End(o.status());
    std::weak_ptr<StreamSession> weak = session;
    auto watcher = DirWatcher::Start(
        std::move(*o), e_.fs_,
        [weak](FilesystemEvent ev) {
          if (auto s = weak.lock()) s->Send(WatchEventJson(ev));
        },
        [weak](Status st) {
          if (auto s = weak.lock()) s->End(st);
        },
        [session] { session->Send(WatchStartJson()); });
    if (!watcher.ok()) return session->End(watcher.status());
    const std::string id = e_.watchers_.AddStream(std::move(*watcher));
    // The watcher's thread may be the one ending the session, so it is stopped from the timer
    // thread (stopping joins it).
    TimerQueue* timers = &e_.timers_;
    WatcherRegistry* registry = &e_.watchers_;
    session->OnEnd([timers, registry, id] {
      timers->ScheduleAfter(std::chrono::milliseconds(0),
                            [registry, id] { registry->RemoveStream(id); });
    });
    // The watcher's callbacks hold the session only weakly; this list keeps it until it ends.
    std::lock_guard lock(sessions_mu_);
    std::erase_if(watch_sessions_, [](const auto& s) { return s->ended(); });
    watch_sessions_.push_back(session);
  }

  // Ends every open WatchDir stream (their watchers are being stopped by a reset).
  void EndWatchStreams(const Status& why) {
    std::vector<std::shared_ptr<StreamSession>> sessions;
    {
      std::lock_guard lock(sessions_mu_);
      sessions.swap(watch_sessions_);
    }
    for (const auto& s : sessions) s->End(why);
  }

  Result<std::string> CreateWatcher(const std::string& body, const os::UserInfo& user) {
    ASSIGN_OR_RETURN(auto o, WatchOptionsFrom(body, user));
    ASSIGN_OR_RETURN(auto id, e_.watchers_.CreatePolling(std::move(o)));
    return CreateWatcherResponseJson(id);
  }

  Result<std::string> GetWatcherEvents(const std::string& body) {
    ASSIGN_OR_RETURN(auto req, ParseWatcherIdRequest(body));
    ASSIGN_OR_RETURN(auto events, e_.watchers_.TakeEvents(req.watcher_id));
    return WatcherEventsResponseJson(events);
  }

  Result<std::string> RemoveWatcher(const std::string& body) {
    ASSIGN_OR_RETURN(auto req, ParseWatcherIdRequest(body));
    RETURN_IF_ERROR(e_.watchers_.RemovePolling(req.watcher_id));
    return std::string("{}");
  }

  // ---- plain HTTP ----

  Result<os::UserInfo> LookupFilesUser(const Request& req, std::string* name_out) {
    auto q = req.Query("username");
    std::string name = q && !q->empty() ? *q : e_.state_.default_user();
    *name_out = q.value_or("");
    auto user = e_.users_.LookupUser(name);
    if (!user.ok()) {
      return UnauthenticatedError(
          fmt::format("error looking up user '{}': {}", name, user.status().message()));
    }
    return user;
  }

  Status CheckFiles(const Request& req, std::string_view operation) {
    FileAccess access;
    access.header_token = Header(req, "X-Access-Token");
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
    if (Status s = CheckFiles(req, "read"); !s.ok()) return r.Send(Unauthorized(s));
    std::string name;
    auto user = LookupFilesUser(req, &name);
    if (!user.ok()) return r.Send(HttpError(401, user.status().message()));
    auto accept = req.headers.Get("Accept-Encoding");
    if (accept && base::AsciiLower(*accept).find("identity;q=0") != std::string::npos &&
        base::AsciiLower(*accept).find("identity;q=0.") == std::string::npos) {
      return r.Send(HttpError(406, "identity encoding was refused and no other is supported"));
    }
    auto path = ResolvePath(req.Query("path").value_or(""), *user, Workdir());
    if (!path.ok())
      return r.Send(HttpError(FilesHttpStatus(path.status()), path.status().message()));
    auto file = OpenDownload(*path);
    if (!file.ok())
      return r.Send(HttpError(FilesHttpStatus(file.status()), file.status().message()));
    net::Headers headers;
    headers.Set("Content-Type", "application/octet-stream");
    headers.Set("Content-Disposition", fmt::format("inline; filename=\"{}\"", file->name));
    headers.Set("Content-Length", std::to_string(file->size));
    auto stream = r.Stream(200, std::move(headers));
    std::string buf(kDownloadChunk, '\0');
    uint64_t left = file->size;
    while (left > 0) {
      ssize_t n = read(file->fd.get(), buf.data(), std::min<uint64_t>(buf.size(), left));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the file shrank under us: the client sees a short body
      if (!stream->WaitWritable(kDownloadHighWater, std::chrono::seconds(60))) break;
      if (!stream->Write(std::string(buf.data(), static_cast<size_t>(n)))) break;
      left -= static_cast<uint64_t>(n);
    }
    if (left == 0) {
      stream->Finish();
    } else {
      stream->Abort();
    }
  }

  void PostFile(Request& req, Responder& r) {
    if (Status s = CheckFiles(req, "write"); !s.ok()) return r.Send(Unauthorized(s));
    std::string name;
    auto user = LookupFilesUser(req, &name);
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
    up.default_workdir = Workdir();
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
    r.Send(Response::Json(200, WrittenFilesJson(*written)));
  }

  void Health(Responder& r) {
    Response resp = Response::Empty(204);
    resp.headers.Set("X-Envd-Version", kEnvdVersion);
    r.Send(std::move(resp));
  }

  void Envs(Request& req, Responder& r) {
    if (Status s = CheckToken(req); !s.ok()) return r.Send(Unauthorized(s));
    r.Send(Response::Json(200, nlohmann::json(e_.state_.env_vars()).dump()));
  }

  void Metrics(Request& req, Responder& r) {
    if (Status s = CheckToken(req); !s.ok()) return r.Send(Unauthorized(s));
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
      if (Status s = CheckToken(req); !s.ok()) return r.Send(Unauthorized(s));
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
    e_.state_.ApplyInit(*init);
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
    if (Status s = CheckToken(req); !s.ok() && !HasNodeSecret(req)) {
      return r.Send(Unauthorized(s));
    }
    Response resp = Response::Text(200, e_.command_log_.Snapshot());
    resp.headers.Set("X-Log-Total-Bytes", std::to_string(e_.command_log_.total_bytes()));
    r.Send(std::move(resp));
  }

 private:
  Envd& e_;
  std::mutex cpu_mu_;
  CpuSample last_cpu_;  // guarded by cpu_mu_
  std::mutex sessions_mu_;
  std::vector<std::shared_ptr<StreamSession>> watch_sessions_;  // guarded by sessions_mu_
};

Envd::Envd(EnvdOptions options)
    : state_(options.defaults),
      users_(options.passwd_path, options.group_path),
      fs_(users_),
      processes_(timers_),
      watchers_(fs_),
      command_log_(options.log_capacity, options.log_file),
      impl_(std::make_unique<Impl>(*this)) {}

Envd::~Envd() {
  watchers_.Clear();
  processes_.KillAll();
}

void Envd::Reset() {
  processes_.KillAll();
  impl_->EndWatchStreams(UnavailableError("envd was reset"));
  watchers_.Clear();
  state_.Reset();
  base::Logger("envd")->info("state reset");
}

net::Router Envd::BuildRouter() {
  net::Router router;
  Impl* impl = impl_.get();
  net::RouteOptions rpc;
  rpc.blocking = true;
  rpc.max_body_bytes = kMaxRpcBody;

  auto unary = [&](std::string_view path, auto fn) {
    router.Add(
        "POST", path,
        [impl, fn](Request&& req, Responder r) {
          impl->Unary(req, r, [impl, fn](const std::string& body, const os::UserInfo& user) {
            return fn(impl, body, user);
          });
        },
        rpc);
  };
  auto stream = [&](std::string_view path, auto fn) {
    router.Add(
        "POST", path,
        [impl, fn](Request&& req, Responder r) {
          impl->ServerStream(req, r,
                             [impl, fn](const std::string& payload, const os::UserInfo& user,
                                        const std::shared_ptr<MessageSink>& sink,
                                        StreamOptions o) { fn(impl, payload, user, sink, o); });
        },
        rpc);
  };
  using User = const os::UserInfo&;
  using Body = const std::string&;
  using Sink = const std::shared_ptr<MessageSink>&;

  stream("/process.Process/Start",
         [](Impl* i, Body p, User u, Sink s, StreamOptions o) { i->Start(p, u, s, o); });
  stream("/process.Process/Connect",
         [](Impl* i, Body p, User u, Sink s, StreamOptions o) { i->Connect(p, u, s, o); });
  unary("/process.Process/List", [](Impl* i, Body b, User) { return i->List(b); });
  unary("/process.Process/SendInput", [](Impl* i, Body b, User) { return i->SendInput(b); });
  unary("/process.Process/SendSignal", [](Impl* i, Body b, User) { return i->SendSignal(b); });
  unary("/process.Process/CloseStdin", [](Impl* i, Body b, User) { return i->CloseStdin(b); });
  unary("/process.Process/Update", [](Impl* i, Body b, User) { return i->Update(b); });

  unary("/filesystem.Filesystem/Stat", [](Impl* i, Body b, User u) { return i->Stat(b, u); });
  unary("/filesystem.Filesystem/MakeDir", [](Impl* i, Body b, User u) { return i->MakeDir(b, u); });
  unary("/filesystem.Filesystem/Move", [](Impl* i, Body b, User u) { return i->Move(b, u); });
  unary("/filesystem.Filesystem/ListDir", [](Impl* i, Body b, User u) { return i->ListDir(b, u); });
  unary("/filesystem.Filesystem/Remove", [](Impl* i, Body b, User u) { return i->Remove(b, u); });
  stream("/filesystem.Filesystem/WatchDir",
         [](Impl* i, Body p, User u, Sink s, StreamOptions o) { i->WatchDir(p, u, s, o); });
  unary("/filesystem.Filesystem/CreateWatcher",
        [](Impl* i, Body b, User u) { return i->CreateWatcher(b, u); });
  unary("/filesystem.Filesystem/GetWatcherEvents",
        [](Impl* i, Body b, User) { return i->GetWatcherEvents(b); });
  unary("/filesystem.Filesystem/RemoveWatcher",
        [](Impl* i, Body b, User) { return i->RemoveWatcher(b); });

  // Unknown methods of our services, and StreamInput (a client stream connect-web cannot send).
  for (std::string_view service :
       {"/process.Process/{method}", "/filesystem.Filesystem/{method}"}) {
    router.Add("POST", service, [](Request&& req, Responder r) {
      r.Send(ConnectError(
          UnimplementedError(fmt::format("method '{}' is not implemented", req.path))));
    });
  }

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
  router.Add(
      "POST", "/init", [impl](Request&& req, Responder r) { impl->Init(req, r); }, small);
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

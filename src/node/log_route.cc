#include "node/log_route.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "api/json.h"
#include "api/kinds.h"
#include "api/status_object.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/strings.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

constexpr size_t kChunk = 64 * 1024;
constexpr size_t kHighWater = 1 << 20;
constexpr auto kFollowPoll = 200ms;

void SendError(net::Responder& r, const Status& s, const std::string& name) {
  api::StatusDetails details{name, api::kAgentsGroup, "sandboxes"};
  api::HttpError e = api::ToHttpError(s, details);
  r.Send(net::Response::Json(e.code, api::DumpJson(e.status)));
}

struct LogQuery {
  bool follow = false;
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
};

Result<LogQuery> ParseQuery(const net::Request& req) {
  LogQuery q;
  if (auto v = req.Query("follow")) {
    if (*v == "true" || *v == "1") {
      q.follow = true;
    } else if (*v != "false" && *v != "0") {
      return InvalidArgumentError(fmt::format("follow must be true or false, got \"{}\"", *v));
    }
  }
  for (auto [name, out] :
       {std::pair{"tailLines", &q.tail_lines}, std::pair{"limitBytes", &q.limit_bytes}}) {
    if (auto v = req.Query(name)) {
      auto n = base::ParseInt64(*v);
      if (!n || *n < 0) {
        return InvalidArgumentError(
            fmt::format("{} must be a non-negative integer, got \"{}\"", name, *v));
      }
      *out = *n;
    }
  }
  return q;
}

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

// Whether a sandbox's log can still grow.
bool StillRunning(store::Store& store, const std::string& ns, const std::string& name,
                  const std::string& uid) {
  auto obj = store.Get(api::SandboxKind(), ns, name);
  if (!obj.ok() || obj->metadata.uid != uid || obj->metadata.deletion_timestamp) return false;
  auto st = api::DecodeStatus<api::SandboxStatus>(*obj);
  if (!st.ok()) return true;
  return st->phase != api::sandbox_phase::kSucceeded && st->phase != api::sandbox_phase::kFailed;
}

void HandleLog(NodeAgent& agent, store::Store& store, net::Request&& req, net::Responder r) {
  const std::string ns(req.PathParam("ns"));
  const std::string name(req.PathParam("name"));
  // The server's route guard put the caller here; another team's sandbox does not exist for it.
  if (req.principal == nullptr || !req.principal->Sees(ns)) {
    return SendError(
        r,
        req.principal == nullptr
            ? UnauthenticatedError("an API key is needed to read logs")
            : NotFoundError(fmt::format("sandboxes.{} \"{}\" not found", api::kAgentsGroup, name)),
        name);
  }
  auto query = ParseQuery(req);
  if (!query.ok()) return SendError(r, query.status(), name);
  auto obj = store.Get(api::SandboxKind(), ns, name);
  if (!obj.ok()) return SendError(r, obj.status(), name);
  auto id_it = obj->metadata.labels.find(api::labels::kSandboxId);
  const std::string id = id_it == obj->metadata.labels.end() ? "" : id_it->second;
  const std::string uid = obj->metadata.uid;

  net::Headers headers;
  headers.Set("Content-Type", "text/plain; charset=utf-8");
  headers.Set("Cache-Control", "no-store");
  auto stream = r.Stream(200, std::move(headers));
  base::UniqueFd fd;
  off_t pos = 0;
  int64_t budget = query->limit_bytes.value_or(-1);
  std::string buf(kChunk, '\0');
  while (!stream->closed() && !agent.stopping()) {
    if (!fd && !id.empty()) {
      if (auto opened = agent.OpenCommandLog(id); opened.ok()) {
        fd = std::move(*opened);
        struct stat st;
        off_t size = fstat(fd.get(), &st) == 0 ? st.st_size : 0;
        pos = query->tail_lines ? TailStart(fd.get(), size, *query->tail_lines) : 0;
      }
    }
    bool wrote = false;
    while (fd && budget != 0) {
      size_t want =
          budget > 0 ? std::min<size_t>(buf.size(), static_cast<size_t>(budget)) : buf.size();
      ssize_t n = pread(fd.get(), buf.data(), want, pos);
      if (n <= 0) break;
      pos += n;
      if (budget > 0) budget -= n;
      if (!stream->Write(buf.substr(0, static_cast<size_t>(n)))) return;
      if (!stream->WaitWritable(kHighWater, 30s)) return;
      wrote = true;
    }
    if (!query->follow || budget == 0) break;
    if (!wrote && !StillRunning(store, ns, name, uid)) {
      // One last read: the final bytes may have landed after the previous one.
      if (fd) {
        ssize_t n;
        while (budget != 0 && (n = pread(fd.get(), buf.data(), buf.size(), pos)) > 0) {
          pos += n;
          if (!stream->Write(buf.substr(0, static_cast<size_t>(n)))) return;
        }
      }
      break;
    }
    if (!wrote) std::this_thread::sleep_for(kFollowPoll);
  }
  stream->Finish();
}

}  // namespace

void RegisterLogRoute(net::Router& router, NodeAgent& agent, store::Store& store) {
  net::RouteOptions options;
  options.blocking = true;
  router.Add(
      "GET", "/apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/log",
      [&agent, &store](net::Request&& req, net::Responder r) {
        HandleLog(agent, store, std::move(req), std::move(r));
      },
      options);
}

}  // namespace warren::node

#include "envd/process_service.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>

#include "envd/paths.h"
#include "envd/process_messages.h"

namespace warren::envd {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

void ProcessService::Register(net::Router& router, RpcAuth auth) {
  AddStreamMethod(
      router, "/process.Process/Start", auth,
      [this](const std::string& p, const os::UserInfo& u, const std::shared_ptr<MessageSink>& s,
             StreamOptions o) { Start(p, u, s, o); });
  AddStreamMethod(
      router, "/process.Process/Connect", auth,
      [this](const std::string& p, const os::UserInfo&, const std::shared_ptr<MessageSink>& s,
             StreamOptions o) { Connect(p, s, o); });
  AddUnaryMethod(router, "/process.Process/List", auth,
                 [this](const std::string& b, const os::UserInfo&) { return List(b); });
  AddUnaryMethod(router, "/process.Process/SendInput", auth,
                 [this](const std::string& b, const os::UserInfo&) { return SendInput(b); });
  AddUnaryMethod(router, "/process.Process/SendSignal", auth,
                 [this](const std::string& b, const os::UserInfo&) { return SendSignal(b); });
  AddUnaryMethod(router, "/process.Process/CloseStdin", auth,
                 [this](const std::string& b, const os::UserInfo&) { return CloseStdin(b); });
  AddUnaryMethod(router, "/process.Process/Update", auth,
                 [this](const std::string& b, const os::UserInfo&) { return Update(b); });
}

void ProcessService::Start(const std::string& payload, const os::UserInfo& user,
                           const std::shared_ptr<MessageSink>& sink, StreamOptions options) {
  auto session = StreamSession::Create(sink, timers_, options, KeepaliveEventJson());
  auto plan = PlanStart(payload, user);
  if (!plan.ok()) return session->End(plan.status());
  plan->audited = !options.node_call;
  // Start's deadline is also the process's lifetime, whether or not the client is still there
  // to see the stream end: the SDK aborts its request at the same moment.
  auto p = processes_.Start(std::move(*plan), session, options.timeout);
  if (!p.ok()) return session->End(p.status());
}

Result<SpawnPlan> ProcessService::PlanStart(const std::string& payload,
                                            const os::UserInfo& user) const {
  ASSIGN_OR_RETURN(StartRequest req, ParseStartRequest(payload));
  const auto workdir = state_.default_workdir();
  SpawnPlan plan;
  if (req.process.cwd && !req.process.cwd->empty()) {
    ASSIGN_OR_RETURN(plan.cwd, ResolvePath(*req.process.cwd, user, workdir));
    if (!IsDirectory(plan.cwd)) {
      return InvalidArgumentError(fmt::format("cwd '{}' does not exist", plan.cwd));
    }
  } else {
    plan.cwd = workdir ? *workdir : user.home;
    if (!IsDirectory(plan.cwd)) plan.cwd = "/";
  }
  // Precedence: the agent's PATH and the user's identity, then the sandbox's env vars (/init),
  // then the request's.
  std::map<std::string, std::string> env;
  const char* path = getenv("PATH");
  env["PATH"] = path ? path : kDefaultPath;
  env["HOME"] = user.home;
  env["USER"] = user.name;
  env["LOGNAME"] = user.name;
  env["E2B_SANDBOX"] = "true";  // E2B's envd sets it; templates test for it
  for (const auto& [k, v] : state_.env_vars()) env[k] = v;
  for (const auto& [k, v] : req.process.envs) env[k] = v;
  for (const auto& [k, v] : env) {
    if (k.empty() || k.find_first_of(std::string("=\0", 2)) != std::string::npos ||
        v.find('\0') != std::string::npos) {
      return InvalidArgumentError(fmt::format("invalid environment variable name '{}'", k));
    }
    plan.env.push_back(k + "=" + v);
  }
  plan.argv.push_back(req.process.cmd);
  for (const auto& a : req.process.args) plan.argv.push_back(a);
  plan.credentials = {user.uid, user.gid, user.groups};
  plan.user = user.name;
  plan.request = std::move(req);
  return plan;
}

void ProcessService::Connect(const std::string& payload, const std::shared_ptr<MessageSink>& sink,
                             StreamOptions options) {
  // A Connect stream's deadline bounds the stream only, never the process.
  auto session = StreamSession::Create(sink, timers_, options, KeepaliveEventJson());
  auto req = ParseConnectRequest(payload);
  if (!req.ok()) return session->End(req.status());
  auto p = processes_.Find(req->process, /*include_ended=*/true);
  if (!p.ok()) return session->End(p.status());
  (*p)->Subscribe(session);
}

Result<std::string> ProcessService::List(const std::string& body) {
  RETURN_IF_ERROR(ParseListRequest(body));
  return ListResponseJson(processes_.List());
}

Result<std::string> ProcessService::SendInput(const std::string& body) {
  ASSIGN_OR_RETURN(auto req, ParseSendInputRequest(body));
  ASSIGN_OR_RETURN(auto p, processes_.Find(req.process));
  RETURN_IF_ERROR(p->WriteInput(req.kind, req.data));
  return std::string("{}");
}

Result<std::string> ProcessService::SendSignal(const std::string& body) {
  ASSIGN_OR_RETURN(auto req, ParseSendSignalRequest(body));
  ASSIGN_OR_RETURN(auto p, processes_.Find(req.process));
  RETURN_IF_ERROR(p->Signal(req.signal));
  return std::string("{}");
}

Result<std::string> ProcessService::CloseStdin(const std::string& body) {
  ASSIGN_OR_RETURN(auto req, ParseCloseStdinRequest(body));
  ASSIGN_OR_RETURN(auto p, processes_.Find(req.process));
  RETURN_IF_ERROR(p->CloseStdin());
  return std::string("{}");
}

Result<std::string> ProcessService::Update(const std::string& body) {
  ASSIGN_OR_RETURN(auto req, ParseUpdateRequest(body));
  ASSIGN_OR_RETURN(auto p, processes_.Find(req.process));
  if (req.pty) RETURN_IF_ERROR(p->Resize(*req.pty));
  return std::string("{}");
}

}  // namespace warren::envd

#include "envd/process_messages.h"

#include <fmt/format.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "base/encoding.h"
#include "envd/proto_json.h"

namespace warren::envd {
namespace {

using pj::Json;

Result<ProcessSelector> ParseSelector(const Json& obj) {
  ProcessSelector sel;
  ASSIGN_OR_RETURN(const Json* m, pj::Message(obj, "process", "process"));
  if (!m) return InvalidArgumentError("missing field 'process'");
  ASSIGN_OR_RETURN(sel.pid, pj::Uint32(*m, "pid", "pid"));
  ASSIGN_OR_RETURN(sel.tag, pj::String(*m, "tag", "tag"));
  if (sel.pid && sel.tag) {
    return InvalidArgumentError("invalid field 'process': set either 'pid' or 'tag', not both");
  }
  if (!sel.pid && !sel.tag) {
    return InvalidArgumentError("invalid field 'process': no 'pid' or 'tag' given");
  }
  return sel;
}

Result<std::optional<PtySize>> ParsePty(const Json& obj) {
  ASSIGN_OR_RETURN(const Json* pty, pj::Message(obj, "pty", "pty"));
  if (!pty) return std::optional<PtySize>();
  PtySize size;
  ASSIGN_OR_RETURN(const Json* s, pj::Message(*pty, "size", "size"));
  if (s) {
    ASSIGN_OR_RETURN(auto cols, pj::Uint32(*s, "cols", "cols"));
    ASSIGN_OR_RETURN(auto rows, pj::Uint32(*s, "rows", "rows"));
    size.cols = cols.value_or(0);
    size.rows = rows.value_or(0);
  }
  if (size.cols > 0xffff || size.rows > 0xffff) {
    return InvalidArgumentError("invalid field 'pty.size': cols and rows must be below 65536");
  }
  return std::optional<PtySize>(size);
}

}  // namespace

Result<StartRequest> ParseStartRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  StartRequest r;
  ASSIGN_OR_RETURN(const Json* p, pj::Message(j, "process", "process"));
  if (!p) return InvalidArgumentError("missing field 'process'");
  ASSIGN_OR_RETURN(auto cmd, pj::String(*p, "cmd", "cmd"));
  r.process.cmd = cmd.value_or("");
  ASSIGN_OR_RETURN(r.process.args, pj::StringList(*p, "args", "args"));
  ASSIGN_OR_RETURN(r.process.envs, pj::StringMap(*p, "envs", "envs"));
  ASSIGN_OR_RETURN(r.process.cwd, pj::String(*p, "cwd", "cwd"));
  ASSIGN_OR_RETURN(r.pty, ParsePty(j));
  ASSIGN_OR_RETURN(r.tag, pj::String(j, "tag", "tag"));
  ASSIGN_OR_RETURN(r.stdin, pj::Bool(j, "stdin", "stdin"));
  if (r.process.cmd.empty()) return InvalidArgumentError("missing field 'process.cmd'");
  return r;
}

Result<ConnectRequest> ParseConnectRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  ConnectRequest r;
  ASSIGN_OR_RETURN(r.process, ParseSelector(j));
  return r;
}

Result<SendInputRequest> ParseSendInputRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  SendInputRequest r;
  ASSIGN_OR_RETURN(r.process, ParseSelector(j));
  ASSIGN_OR_RETURN(const Json* in, pj::Message(j, "input", "input"));
  if (in) {
    ASSIGN_OR_RETURN(auto stdin_bytes, pj::Bytes(*in, "stdin", "stdin"));
    ASSIGN_OR_RETURN(auto pty_bytes, pj::Bytes(*in, "pty", "pty"));
    if (stdin_bytes && pty_bytes) {
      return InvalidArgumentError("invalid field 'input': set either 'stdin' or 'pty', not both");
    }
    if (stdin_bytes) {
      r.kind = InputKind::kStdin;
      r.data = std::move(*stdin_bytes);
    } else if (pty_bytes) {
      r.kind = InputKind::kPty;
      r.data = std::move(*pty_bytes);
    }
  }
  return r;
}

Result<SendSignalRequest> ParseSendSignalRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  SendSignalRequest r;
  ASSIGN_OR_RETURN(r.process, ParseSelector(j));
  ASSIGN_OR_RETURN(auto sig, pj::Enum(j, "signal", "signal",
                                      {{"SIGNAL_UNSPECIFIED", 0},
                                       {"SIGNAL_SIGTERM", SIGTERM},
                                       {"SIGNAL_SIGKILL", SIGKILL}}));
  r.signal = sig.value_or(0);
  return r;
}

Result<CloseStdinRequest> ParseCloseStdinRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  CloseStdinRequest r;
  ASSIGN_OR_RETURN(r.process, ParseSelector(j));
  return r;
}

Result<UpdateRequest> ParseUpdateRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  UpdateRequest r;
  ASSIGN_OR_RETURN(r.process, ParseSelector(j));
  ASSIGN_OR_RETURN(r.pty, ParsePty(j));
  return r;
}

Status ParseListRequest(std::string_view body) { return pj::ParseObject(body).status(); }

std::string StartEventJson(uint32_t pid) {
  return fmt::format(R"({{"event":{{"start":{{"pid":{}}}}}}})", pid);
}

std::string DataEventJson(OutputKind kind, std::string_view bytes) {
  const char* key = kind == OutputKind::kStdout   ? "stdout"
                    : kind == OutputKind::kStderr ? "stderr"
                                                  : "pty";
  return fmt::format(R"({{"event":{{"data":{{"{}":"{}"}}}}}})", key, base::Base64Encode(bytes));
}

std::string KeepaliveEventJson() { return R"({"event":{"keepalive":{}}})"; }

ProcessExit ProcessExitFromWaitStatus(int wait_status) {
  ProcessExit e;
  if (WIFEXITED(wait_status)) {
    e.exited = true;
    e.exit_code = WEXITSTATUS(wait_status);
    e.status = fmt::format("exit status {}", e.exit_code);
  } else if (WIFSIGNALED(wait_status)) {
    e.exit_code = -1;
    const int sig = WTERMSIG(wait_status);
    // Go prints the lower-case strsignal text ("signal: killed", "signal: terminated").
    const char* desc = sigdescr_np(sig);
    std::string text = desc ? desc : fmt::format("signal {}", sig);
    if (!text.empty()) text[0] = static_cast<char>(std::tolower(text[0]));
    e.status = fmt::format("signal: {}", text);
    if (WCOREDUMP(wait_status)) e.status += " (core dumped)";
  } else {
    e.exit_code = -1;
    e.status = "unknown";
  }
  if (e.exit_code != 0) e.error = e.status;
  return e;
}

std::string EndEventJson(const ProcessExit& exit) {
  Json end = Json::object();
  if (exit.exit_code != 0) end["exitCode"] = exit.exit_code;
  if (exit.exited) end["exited"] = true;
  if (!exit.status.empty()) end["status"] = exit.status;
  if (exit.error) end["error"] = *exit.error;
  return pj::Dump(Json{{"event", {{"end", end}}}});
}

std::string ListResponseJson(const std::vector<ProcessInfo>& processes) {
  Json list = Json::array();
  for (const auto& p : processes) {
    Json config = {{"cmd", p.config.cmd}};
    if (!p.config.args.empty()) config["args"] = p.config.args;
    if (!p.config.envs.empty()) config["envs"] = p.config.envs;
    if (p.config.cwd) config["cwd"] = *p.config.cwd;
    Json info = {{"config", config}, {"pid", p.pid}};
    if (p.tag) info["tag"] = *p.tag;
    list.push_back(std::move(info));
  }
  Json out = Json::object();
  if (!list.empty()) out["processes"] = std::move(list);
  return pj::Dump(out);
}

}  // namespace warren::envd

// `warren logs SANDBOX [-n NS] [-f] [--tail N] [--limit-bytes N]`: the template command's
// output of a Sandbox, from the node agent's /log subresource (node/log_route.h).

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/status_object.h"
#include "base/strings.h"
#include "cli/api_client.h"
#include "cli/app.h"
#include "net/http_client.h"

namespace warren::cli {
namespace {

struct LogsFlags {
  std::string sandbox;
  bool follow = false;
  int64_t tail = -1;
  int64_t limit_bytes = -1;
};

void RunLogs(App& app, const LogsFlags& f) {
  std::string name = f.sandbox;
  // kubectl accepts TYPE/NAME too.
  for (std::string_view prefix : {"sandbox/", "sandboxes/", "sbx/", "sandbox.agents.kruise.io/"}) {
    if (name.starts_with(prefix)) name = name.substr(prefix.size());
  }
  if (name.empty() || name.find('/') != std::string::npos) {
    return app.Fail(InvalidArgumentError(
        fmt::format("\"{}\" is not a sandbox name (warren logs SANDBOX)", f.sandbox)));
  }
  auto http = net::HttpClient::ForAddress(app.ServerAddress());
  if (!http.ok()) return app.Fail(http.status());
  std::vector<std::string> query;
  if (f.follow) query.push_back("follow=true");
  if (f.tail >= 0) query.push_back(fmt::format("tailLines={}", f.tail));
  if (f.limit_bytes >= 0) query.push_back(fmt::format("limitBytes={}", f.limit_bytes));
  net::ClientRequest req;
  ApiClient::Authorize(req, app.ApiKey());
  req.target = ApiClient::Path(api::SandboxKind(), app.Namespace(), name, "log");
  if (!query.empty()) req.target += "?" + base::Join(query, "&");
  req.timeout = std::chrono::seconds(30);

  int status = 0;
  std::string error_body;
  auto resp = (*http)->DoStreaming(
      req,
      [&](const net::Response& head) {
        status = head.status;
        return true;
      },
      [&](std::string_view data) {
        if (status == 200) {
          app.out() << data;
          app.out().flush();
        } else if (error_body.size() < (64 << 10)) {
          error_body.append(data);
        }
        return true;
      });
  if (!resp.ok()) {
    return app.Fail(
        Status(resp.status().code(), fmt::format("cannot reach the warren server at {}: {}",
                                                 app.ServerAddress(), resp.status().message())));
  }
  if (status != 200) return app.FailFromServer(api::FromHttpError(status, error_body));
}

}  // namespace

void AddLogsCommand(App& app) {
  auto flags = std::make_shared<LogsFlags>();
  auto* cmd = app.cli().add_subcommand(
      "logs", "Print the output of a sandbox's template command: warren logs SANDBOX [-f]");
  cmd->add_option("sandbox", flags->sandbox, "the Sandbox's name (or sbx/NAME)")->required();
  cmd->add_flag("--follow,-f", flags->follow, "keep printing as the command writes");
  cmd->add_option("--tail", flags->tail, "only the last N lines");
  cmd->add_option("--limit-bytes", flags->limit_bytes, "at most N bytes");
  cmd->callback([&app, flags] { RunLogs(app, *flags); });
}

}  // namespace warren::cli

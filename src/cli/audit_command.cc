// `warren audit SANDBOX [-n NS] [--limit N] [-o json]`: the audit journal of a sandbox (who did
// what and when; audit/journal.h), by Sandbox name, or by E2B sandbox id (also once it is gone).

#include <fmt/format.h>

#include "api/json.h"
#include "api/kinds.h"
#include "api/status_object.h"
#include "cli/api_client.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "net/http_client.h"

namespace warren::cli {
namespace {

struct AuditFlags {
  std::string sandbox;
  int64_t limit = 0;
  std::string output;
};

// Control characters shown as \xNN: envd's entries come from inside the sandbox and must not
// drive the operator's terminal or draw rows of their own.
std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string Str(const api::Json& e, const char* key) {
  if (!e.contains(key)) return "";
  const auto& v = e[key];
  return Printable(v.is_string() ? v.get<std::string>() : v.dump());
}

// What one entry did, in a few words.
std::string Detail(const api::Json& e) {
  const std::string action = Str(e, "action");
  if (action == "process.start") {
    std::string line = Str(e, "cmd");
    if (e.contains("args") && e["args"].is_array()) {
      for (const auto& a : e["args"])
        line += " " + Printable(a.is_string() ? a.get<std::string>() : "");
    }
    return fmt::format("{} (user {}, pid {})", line, Str(e, "user"), Str(e, "pid"));
  }
  if (action == "process.end") {
    return fmt::format("{} exit {} after {} ms (pid {})", Str(e, "cmd"), Str(e, "exitCode"),
                       Str(e, "durationMs"), Str(e, "pid"));
  }
  if (action == "file.move") return Str(e, "from") + " -> " + Str(e, "path");
  if (action.starts_with("file.")) return Str(e, "path");
  std::string d = "HTTP " + Str(e, "status");
  if (e.contains("message")) d += ": " + Str(e, "message");
  return d;
}

void RunAudit(App& app, const AuditFlags& f) {
  if (f.sandbox.empty() || f.sandbox.find('/') != std::string::npos) {
    return app.Fail(InvalidArgumentError(
        fmt::format("\"{}\" is not a sandbox name or id (warren audit SANDBOX)", f.sandbox)));
  }
  auto http = net::HttpClient::ForAddress(app.ServerAddress());
  if (!http.ok()) return app.Fail(http.status());
  const std::string query = f.limit > 0 ? fmt::format("?limit={}", f.limit) : "";
  auto get = [&](std::string target) -> Result<net::Response> {
    net::ClientRequest req;
    ApiClient::Authorize(req, app.ApiKey());
    req.target = std::move(target) + query;
    req.timeout = std::chrono::seconds(30);
    auto resp = (*http)->Do(req);
    if (!resp.ok()) {
      return Status(resp.status().code(),
                    fmt::format("cannot reach the warren server at {}: {}", app.ServerAddress(),
                                resp.status().message()));
    }
    return resp;
  };
  auto resp = get(ApiClient::Path(api::SandboxKind(), app.Namespace(), f.sandbox, "audit"));
  if (!resp.ok()) return app.Fail(resp.status());
  if (resp->status == 404) {
    // Not a live Sandbox of that name: perhaps an E2B id, of a sandbox that may be gone.
    auto by_id = get("/sandboxes/" + f.sandbox + "/audit");
    if (!by_id.ok()) return app.Fail(by_id.status());
    if (by_id->status == 200) resp = std::move(by_id);
  }
  if (resp->status != 200) return app.FailFromServer(api::FromHttpError(resp->status, resp->body));
  auto body = api::ParseJson(resp->body);
  if (!body.ok() || !(*body)["items"].is_array()) {
    return app.Fail(InternalError("the server's audit answer is not {\"items\": [...]}"));
  }
  if (f.output == "json") {
    app.out() << api::DumpJsonPretty(*body);
    return;
  }
  Table table({"TIME", "SOURCE", "ACTOR", "ACTION", "DETAIL"});
  for (const auto& e : (*body)["items"]) {
    table.AddRow({Str(e, "time"), Str(e, "source"), Str(e, "actor"), Str(e, "action"), Detail(e)});
  }
  table.Print(app.out());
}

}  // namespace

void AddAuditCommand(App& app) {
  auto flags = std::make_shared<AuditFlags>();
  auto* cmd = app.cli().add_subcommand(
      "audit", "Print who did what to a sandbox: warren audit SANDBOX (name or E2B id)");
  cmd->add_option("sandbox", flags->sandbox, "the Sandbox's name, or its E2B sandbox id")
      ->required();
  cmd->add_option("--limit", flags->limit, "only the newest N entries (at most 1000)");
  cmd->add_option("--output,-o", flags->output, "json: the entries as the API returns them")
      ->check(CLI::IsMember({"json"}));
  cmd->callback([&app, flags] { RunAudit(app, *flags); });
}

}  // namespace warren::cli

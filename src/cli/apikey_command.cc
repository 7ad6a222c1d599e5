// `warren apikey`: API keys for the E2B-compatible API (src/server/auth).
//   create --team T [--name N] [--admin]   through the server (needs an admin key, or a key of
//                                          team T for a non-admin key of T)
//   ls                                     the caller's keys (every key for an admin)
//   rm ID|NAME
//   bootstrap --data-dir D                 offline, first run: makes the admin key when there is
//                                          none, writes it to ~/.warren/config and D/admin-key
//                                          (0600), prints it once with the E2B exports
// The key for the server calls: --api-key, else $E2B_API_KEY, else `apiKey:` in ~/.warren/config.

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/json.h"
#include "api/yaml_codec.h"
#include "base/log.h"
#include "base/strings.h"
#include "base/unique_fd.h"
#include "cli/app.h"
#include "cli/printer.h"
#include "net/http_client.h"
#include "server/auth/key_store.h"

namespace warren::cli {
namespace {

struct ApiKeyFlags {
  std::string api_key;
  std::string team;
  std::string name;
  bool admin = false;
  std::string id;
  std::string data_dir = "/var/lib/warren";
  std::string config;  // default ~/.warren/config
  std::string api_url;
  std::string sandbox_url = "http://127.0.0.1:7781";
  std::string domain;  // the server's --domain: clients then reach sandboxes through it
};

std::string ConfigPath(const ApiKeyFlags& f) {
  return f.config.empty() ? App::ConfigPath() : f.config;
}

std::string KeyFor(App& app, const ApiKeyFlags& f) {
  return f.api_key.empty() ? app.ApiKey() : f.api_key;
}

// One call to the server's /api-keys routes; their {"code","message"} errors become a Status.
Result<api::Json> Call(App& app, const ApiKeyFlags& f, std::string method, std::string target,
                       const api::Json* body) {
  std::string key = KeyFor(app, f);
  if (key.empty()) {
    return UnauthenticatedError(
        "no API key: pass --api-key, set WARREN_API_KEY or E2B_API_KEY, or put apiKey: in "
        "~/.warren/config "
        "(run.sh writes it on first run)");
  }
  std::string address = app.ServerAddress();
  ASSIGN_OR_RETURN(auto http, net::HttpClient::ForAddress(address));
  net::ClientRequest req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.headers.Set("X-API-Key", key);
  if (body != nullptr) {
    req.headers.Set("Content-Type", "application/json");
    req.body = api::DumpJson(*body);
  }
  auto resp = http->Do(req);
  if (!resp.ok()) {
    return UnavailableError(
        fmt::format("cannot reach the server at {}: {}", address, resp.status().message()));
  }
  if (resp->status == 204) return api::Json();
  auto doc = api::ParseJson(resp->body);
  if (resp->status / 100 != 2) {
    std::string message = doc.ok() && doc->is_object() && (*doc)["message"].is_string()
                              ? (*doc)["message"].get<std::string>()
                              : resp->body;
    return Status(CodeFromHttpStatus(resp->status), message);
  }
  if (!doc.ok()) return InternalError("the server answered with invalid JSON");
  return std::move(*doc);
}

// A string field of a server answer, "" when absent or not a string.
std::string Str(const api::Json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

// Writes `data` to `path` through a 0600 temporary file renamed into place.
Status WritePrivate(const std::string& path, const std::string& data) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = path + ".tmp";
  base::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) return ErrnoError(fmt::format("create {}", tmp), errno);
  if (::write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return ErrnoError(fmt::format("write {}", tmp), errno);
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoError(fmt::format("rename {} to {}", tmp, path), errno);
  }
  return Status::Ok();
}

// Sets apiKey in the CLI's YAML config, keeping whatever else it holds.
Status StoreKeyInConfig(const std::string& path, const std::string& key) {
  api::Json doc = api::Json::object();
  std::ifstream in(path);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = api::ParseYaml(text.str());
    if (parsed.ok() && parsed->is_object()) doc = std::move(*parsed);
  }
  doc["apiKey"] = key;
  return WritePrivate(path, api::DumpYaml(doc));
}

void RunBootstrap(App& app, const ApiKeyFlags& f) {
  base::SetLogLevel("warn");  // the key store logs each change; here the output says it
  auto keys = server::auth::KeyStore::Open(f.data_dir + "/auth");
  if (!keys.ok()) return app.Fail(keys.status());
  auto has_admin = (*keys)->HasAdminKey();
  if (!has_admin.ok()) return app.Fail(has_admin.status());
  if (*has_admin) {
    app.out() << "An admin API key exists already (in " << ConfigPath(f) << " and " << f.data_dir
              << "/admin-key).\n";
    return;
  }
  auto created = (*keys)->Create({.team = "default", .name = "admin", .admin = true});
  if (!created.ok()) return app.Fail(created.status());
  std::string config = ConfigPath(f);
  if (Status s = WritePrivate(f.data_dir + "/admin-key", created->key + "\n"); !s.ok()) {
    return app.Fail(s);
  }
  if (Status s = StoreKeyInConfig(config, created->key); !s.ok()) return app.Fail(s);
  std::string api_url = f.api_url.empty() ? "http://" + app.ServerAddress() : f.api_url;
  app.out() << "Created the admin API key (shown once; kept in " << config << " and " << f.data_dir
            << "/admin-key, mode 0600):\n\n  " << created->key
            << "\n\nTo use the E2B SDK with this server:\n\n"
            << "  export E2B_API_URL=" << api_url << "\n"
            << (f.domain.empty()
                    ? "  export E2B_SANDBOX_URL=" + f.sandbox_url
                    : "  export E2B_DOMAIN=" + f.domain + "   # and trust the CA the server prints")
            << "\n"
            << "  export E2B_API_KEY=" << created->key << "\n"
            << "  export E2B_VOLUME_API_URL=" << api_url << "   # Volume file methods\n\n";
}

void RunCreate(App& app, const ApiKeyFlags& f) {
  api::Json body = {{"team", f.team}, {"admin", f.admin}};
  if (!f.name.empty()) body["name"] = f.name;
  auto created = Call(app, f, "POST", "/api-keys", &body);
  if (!created.ok()) return app.FailFromServer(created.status());
  app.out() << "Created API key " << Str(*created, "id") << " (name " << Str(*created, "name")
            << ", team " << Str(*created, "team") << "). It is shown once:\n\n  "
            << Str(*created, "key") << "\n";
}

void RunList(App& app, const ApiKeyFlags& f) {
  auto list = Call(app, f, "GET", "/api-keys", nullptr);
  if (!list.ok()) return app.FailFromServer(list.status());
  Table table({"ID", "NAME", "TEAM", "ADMIN", "KEY", "CREATED"});
  if (!list->is_array()) return app.Fail(InternalError("the server answered with no key list"));
  for (const auto& k : *list) {
    bool admin = k.is_object() && k.contains("admin") && k["admin"] == true;
    table.AddRow({Str(k, "id"), Str(k, "name"), Str(k, "team"), admin ? "yes" : "no",
                  Str(k, "mask"), Str(k, "createdAt")});
  }
  if (table.empty()) {
    app.out() << "No API keys found.\n";
    return;
  }
  table.Print(app.out());
}

void RunRemove(App& app, const ApiKeyFlags& f) {
  auto removed = Call(app, f, "DELETE", "/api-keys/" + base::PercentEncode(f.id), nullptr);
  if (!removed.ok()) return app.FailFromServer(removed.status());
  app.out() << "API key \"" << f.id << "\" removed\n";
}

}  // namespace

void AddApiKeyCommand(App& app) {
  auto f = std::make_shared<ApiKeyFlags>();
  auto* cmd = app.cli().add_subcommand("apikey", "Manage API keys of the E2B-compatible API");
  cmd->require_subcommand(1);
  cmd->add_option("--api-key", f->api_key,
                  "key to authenticate with (default: $E2B_API_KEY, apiKey in ~/.warren/config)");

  auto* create = cmd->add_subcommand("create", "Create a key (printed once)");
  create->add_option("--team", f->team, "team (= namespace) the key's sandboxes live in")
      ->required();
  create->add_option("--name", f->name, "a unique name (default: <team>-<id>)");
  create->add_flag("--admin", f->admin, "an admin key: manages keys, sees every team");
  create->callback([&app, f] { RunCreate(app, *f); });

  auto* ls = cmd->add_subcommand("ls", "List keys (masked)");
  ls->alias("list");
  ls->callback([&app, f] { RunList(app, *f); });

  auto* rm = cmd->add_subcommand("rm", "Remove a key");
  rm->alias("delete");
  rm->add_option("id", f->id, "key id or name")->required();
  rm->callback([&app, f] { RunRemove(app, *f); });

  auto* boot = cmd->add_subcommand(
      "bootstrap", "First run: create the admin key if there is none (works without a server)");
  boot->add_option("--data-dir", f->data_dir, "the server's data directory")->capture_default_str();
  boot->add_option("--config", f->config, "CLI config to store the key in (~/.warren/config)");
  boot->add_option("--api-url", f->api_url, "E2B_API_URL to print (http://<server address>)");
  boot->add_option("--domain", f->domain,
                   "the server's --domain: print E2B_DOMAIN instead of E2B_SANDBOX_URL");
  boot->add_option("--sandbox-url", f->sandbox_url, "E2B_SANDBOX_URL to print (the gateway)")
      ->capture_default_str();
  boot->callback([&app, f] { RunBootstrap(app, *f); });
}

}  // namespace warren::cli

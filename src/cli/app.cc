#include "cli/app.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "api/status_object.h"
#include "api/yaml_codec.h"

namespace warren::cli {

App::App(std::ostream& out, std::ostream& err)
    : out_(out), err_(err), app_("warren: sandboxes for AI agents", "warren") {
  app_.add_option("--server,-s", server_flag_,
                  "API server address (default: $WARREN_SERVER, ~/.warren/config, " +
                      std::string(kDefaultServer) + ")");
  app_.add_option("--namespace,-n", namespace_flag_,
                  "namespace (default: `namespace:` in ~/.warren/config, else the API key's "
                  "team)");
  app_.require_subcommand(1);
  app_.fallthrough();
}

std::string App::ConfigPath() {
  if (const char* path = std::getenv("WARREN_CONFIG"); path && *path) return path;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.warren/config";
}

std::string App::ConfigValue(const std::string& key) const {
  std::ifstream f(ConfigPath());
  if (!f) return "";
  std::stringstream text;
  text << f.rdbuf();
  auto doc = api::ParseYaml(text.str());
  if (!doc.ok() || !doc->is_object() || !(*doc)[key].is_string()) return "";
  return (*doc)[key].get<std::string>();
}

std::string App::ApiKey() const {
  for (const char* var : {"WARREN_API_KEY", "E2B_API_KEY"}) {
    if (const char* env = std::getenv(var); env && *env) return env;
  }
  return ConfigValue("apiKey");
}

std::string App::ServerAddress() const {
  if (!server_flag_.empty()) return server_flag_;
  if (const char* env = std::getenv("WARREN_SERVER"); env && *env) return env;
  if (std::string c = ConfigValue("server"); !c.empty()) return c;
  return kDefaultServer;
}

std::string App::Namespace() {
  if (!namespace_flag_.empty()) return namespace_flag_;
  if (std::string c = ConfigValue("namespace"); !c.empty()) return c;
  // A team key lives in its team's namespace: ask the server whose key this is.
  if (!team_) {
    team_ = "";
    if (auto client = Client(); client.ok()) {
      if (auto who = (*client)->GetPath("/whoami"); who.ok() && who->is_object()) {
        team_ = who->value("team", "");
      }
    }
  }
  return team_->empty() ? "default" : *team_;
}

Result<ApiClient*> App::Client() {
  if (!client_) {
    ASSIGN_OR_RETURN(client_, ApiClient::Connect(ServerAddress(), ApiKey()));
  }
  return client_.get();
}

void App::Fail(const Status& status) {
  exit_code_ = 1;
  err_ << "error: " << status.message() << "\n";
}

void App::FailFromServer(const Status& status) {
  if (IsUnreachable(status)) return Fail(status);
  exit_code_ = 1;
  err_ << "Error from server (" << api::ToHttpError(status).reason << "): " << status.message()
       << "\n";
}

int App::Run(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help requests and usage errors: CLI11 formats them; keep its output on our streams.
    std::ostringstream o, er;
    int code = app_.exit(e, o, er);
    out_ << o.str();
    err_ << er.str();
    return code;
  }
  return exit_code_;
}

}  // namespace warren::cli

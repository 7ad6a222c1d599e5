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
  app_.add_option("--namespace,-n", namespace_flag_, "namespace (default: \"default\")");
  app_.require_subcommand(1);
  app_.fallthrough();
}

std::string App::ConfigValue(const std::string& key) const {
  const char* home = std::getenv("HOME");
  if (home == nullptr) return "";
  std::ifstream f(std::string(home) + "/.warren/config");
  if (!f) return "";
  std::stringstream text;
  text << f.rdbuf();
  auto doc = api::ParseYaml(text.str());
  if (!doc.ok() || !doc->is_object() || !(*doc)[key].is_string()) return "";
  return (*doc)[key].get<std::string>();
}

std::string App::ServerAddress() const {
  if (!server_flag_.empty()) return server_flag_;
  if (const char* env = std::getenv("WARREN_SERVER"); env && *env) return env;
  if (std::string c = ConfigValue("server"); !c.empty()) return c;
  return kDefaultServer;
}

std::string App::Namespace() const {
  if (!namespace_flag_.empty()) return namespace_flag_;
  if (std::string c = ConfigValue("namespace"); !c.empty()) return c;
  return "default";
}

Result<ApiClient*> App::Client() {
  if (!client_) {
    ASSIGN_OR_RETURN(client_, ApiClient::Connect(ServerAddress()));
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

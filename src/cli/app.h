#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "api/kinds.h"
#include "base/result.h"
#include "cli/api_client.h"

namespace warren::cli {

// The default API address of `warren server` and of the CLI.
inline constexpr const char* kDefaultServer = "127.0.0.1:7780";

// The `warren` command line: global flags, the verbs registered on it, and what verbs share (the
// output streams, the API client, the namespace). Adding a verb is one function that adds a
// CLI11 subcommand, called from apps/warren/main.cc. Not thread-safe (one command per process).
class App {
 public:
  App(std::ostream& out, std::ostream& err);

  CLI::App& cli() { return app_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  const api::KindRegistry& kinds() const { return api::BuiltinKinds(); }

  // The server address: --server, else $WARREN_SERVER, else `server:` in ~/.warren/config,
  // else 127.0.0.1:7780.
  std::string ServerAddress() const;
  // The namespace: -n, else `namespace:` in ~/.warren/config, else the team of the API key
  // (asked of the server once), else "default".
  std::string Namespace();
  bool namespace_given() const { return !namespace_flag_.empty(); }
  Result<ApiClient*> Client();
  // The API key sent with every call: $WARREN_API_KEY, else $E2B_API_KEY, else `apiKey:` in
  // ~/.warren/config (run.sh writes it there on first run). "" when none.
  std::string ApiKey() const;
  // A string value of the CLI config (YAML; $WARREN_CONFIG, else ~/.warren/config), "" when
  // absent.
  std::string ConfigValue(const std::string& key) const;
  // The config file's path.
  static std::string ConfigPath();

  // Print a failure the way kubectl does and make the exit code 1: "error: ..." for problems
  // found here, "Error from server (NotFound): ..." for the server's answers (an unreachable
  // server is reported as a local error).
  void Fail(const Status& status);
  void FailFromServer(const Status& status);
  void SetExitCode(int code) { exit_code_ = code; }

  // Parses argv, runs the chosen verb, returns the process exit code.
  int Run(int argc, char** argv);

 private:
  std::ostream& out_;
  std::ostream& err_;
  CLI::App app_;
  std::string server_flag_;
  std::string namespace_flag_;
  std::unique_ptr<ApiClient> client_;
  std::optional<std::string> team_;  // the key's team, once asked
  int exit_code_ = 0;
};

// Verbs (one file each).
void AddApplyCommand(App& app);
void AddGetCommand(App& app);
void AddDescribeCommand(App& app);
void AddDeleteCommand(App& app);
void AddScaleCommand(App& app);
void AddVersionCommand(App& app);
void AddApiKeyCommand(App& app);
void AddLogsCommand(App& app);
void AddAuditCommand(App& app);
void AddExecCommand(App& app);
void AddTopCommand(App& app);
void AddCompletionCommand(App& app);
void AddStatusCommand(App& app);
void AddImageCommand(App& app);
void AddSetCommand(App& app);
void AddCreateCommand(App& app);
void AddRestartCommand(App& app);
// cordon, uncordon and drain (drain_command.cc).
void AddDrainCommands(App& app);

}  // namespace warren::cli

// `warren completion bash|zsh`: prints the shell completion script (cli/completion_script.h).

#include "cli/app.h"
#include "cli/completion_script.h"

namespace warren::cli {

void AddCompletionCommand(App& app) {
  auto shell = std::make_shared<std::string>();
  auto* cmd = app.cli().add_subcommand(
      "completion", "Print a shell completion script: source <(warren completion bash)");
  cmd->add_option("shell", *shell, "bash or zsh")->required();
  cmd->callback([&app, shell] {
    auto script = CompletionScript(app.cli(), app.kinds(), *shell);
    if (!script.ok()) return app.Fail(script.status());
    app.out() << *script;
  });
}

}  // namespace warren::cli

#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "api/kinds.h"
#include "base/result.h"

namespace warren::cli {

// The shell completion script of `warren completion SHELL` ("bash" or "zsh"; else
// InvalidArgument). Verbs, sub-verbs and each verb's flags are read from `root` (so a new verb
// completes without touching this), kinds from `kinds`; object names are asked of the server at
// completion time with `warren get KIND -o name`, with the -n/-s given on the line.
// zsh gets the same function through its bash emulation (bashcompinit).
Result<std::string> CompletionScript(const CLI::App& root, const api::KindRegistry& kinds,
                                     std::string_view shell);

}  // namespace warren::cli

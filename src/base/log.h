#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string_view>

namespace warren::base {

// One named logger per module ("store", "runtime", ...), created on first use and shared.
// Lines are key=value: logger->info("sandbox created id={} ms={}", id, ms). Never log secrets
// or environment values. Thread-safe.
std::shared_ptr<spdlog::logger> Logger(std::string_view module);

// Sets the level of every logger from "trace|debug|info|warn|error|off"; unknown → info.
void SetLogLevel(std::string_view level);

}  // namespace warren::base

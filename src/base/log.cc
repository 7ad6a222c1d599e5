#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>
#include <string>

namespace warren::base {

std::shared_ptr<spdlog::logger> Logger(std::string_view module) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::string name(module);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::stderr_color_mt(name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %L %n %v", spdlog::pattern_time_type::utc);
  logger->set_level(spdlog::get_level());
  return logger;
}

void SetLogLevel(std::string_view level) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") lvl = spdlog::level::info;
  spdlog::set_level(lvl);
}

}  // namespace warren::base

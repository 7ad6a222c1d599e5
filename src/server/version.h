#pragma once

#include <string_view>

namespace warren::server {

// "0.1.0": the project version this binary was built from (CMake's PROJECT_VERSION).
std::string_view Version();

}  // namespace warren::server

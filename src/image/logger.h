#pragma once

#include <memory>

#include "base/log.h"

namespace warren::image {

// The image module's logger ("image"). Thread-safe.
inline std::shared_ptr<spdlog::logger> Log() { return base::Logger("image"); }

}  // namespace warren::image

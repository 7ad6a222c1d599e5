#include "server/version.h"

namespace warren::server {

std::string_view Version() { return WARREN_VERSION; }

}  // namespace warren::server

#include "envd/gzip_probe.h"

#include <zlib.h>

#include <string>

namespace warren::envd {

bool GzipPays(std::string_view head, uint64_t file_size) {
  if (file_size < kGzipMinFileBytes || head.empty()) return false;
  head = head.substr(0, kGzipProbeBytes);
  // The scratch buffer holds exactly the 90 % allowed: deflate that needs more room than that
  // fails with Z_BUF_ERROR, which is the answer (and stops early on incompressible data). The zlib
  // wrapper's 6 bytes stand in for gzip's 18 at these sizes.
  uLongf room = static_cast<uLongf>(head.size() * 9 / 10);
  std::string scratch(room, '\0');
  const int r = compress2(reinterpret_cast<Bytef*>(scratch.data()), &room,
                          reinterpret_cast<const Bytef*>(head.data()),
                          static_cast<uLong>(head.size()), Z_BEST_SPEED);
  return r == Z_OK;
}

}  // namespace warren::envd

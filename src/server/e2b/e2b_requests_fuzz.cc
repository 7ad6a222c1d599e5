// libFuzzer target for everything the E2B API parses from the network: create, connect,
// timeout and refresh bodies, list and metrics query parameters (including the triple-encoded
// metadata filter), and the opaque list cursor. The first input byte picks the parser. None may
// crash, hang or throw.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "server/e2b/list_page.h"
#include "server/e2b/requests.h"

using namespace warren;
using namespace warren::server::e2b;

namespace {

// "a=b&c=d" split the way net::Request::QueryParams does, decoded once.
std::vector<std::pair<std::string, std::string>> Params(std::string_view q) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string_view part : base::Split(q, '&')) {
    auto eq = part.find('=');
    std::string_view k = part.substr(0, eq);
    std::string_view v = eq == std::string_view::npos ? "" : part.substr(eq + 1);
    out.emplace_back(base::PercentDecode(k).value_or(std::string(k)),
                     base::PercentDecode(v).value_or(std::string(v)));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  TimeoutRules rules;
  switch (selector % 7) {
    case 0:
      ParseCreateRequest(in, rules).status().IgnoreError();
      break;
    case 1:
      ParseConnectRequest(in, rules).status().IgnoreError();
      break;
    case 2:
      ParseTimeoutRequest(in, rules).status().IgnoreError();
      ParseRefreshRequest(in, rules).status().IgnoreError();
      ParsePauseMemory(in).status().IgnoreError();
      ParseNetworkUpdate(in).status().IgnoreError();
      ParseSnapshotName(in).status().IgnoreError();
      ParseForkRequest(in, rules, 10).status().IgnoreError();
      break;
    case 3:
      ParseListQuery(Params(in)).status().IgnoreError();
      break;
    case 4:
      DecodeMetadataFilter(in).status().IgnoreError();
      break;
    case 5:
      ParseMetricsQuery(Params(in)).status().IgnoreError();
      ParseSnapshotQuery(Params(in)).status().IgnoreError();
      break;
    case 6: {
      ListQuery q;
      q.next_token = std::string(in);
      q.limit = 1;
      SandboxRecord r;
      r.sandbox_id = "iaaaaaaaaaaaaaaaaaaaa";
      SelectPage({r}, q).status().IgnoreError();
      q.order = SortOrder::kAsc;
      SelectPage({r}, q).status().IgnoreError();
      break;
    }
  }
  return 0;
}

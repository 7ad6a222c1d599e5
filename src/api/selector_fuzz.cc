// Label and field selectors, quantities and JSONPath from untrusted input (query strings,
// manifests). A selector that parses must print back to text that parses to the same selector.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/field_selector.h"
#include "api/json_path.h"
#include "api/label_selector.h"
#include "api/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warren::api;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto sel = LabelSelector::Parse(text); sel.ok()) {
    auto again = LabelSelector::Parse(sel->ToString());
    if (!again.ok() || !(*again == *sel)) std::abort();
    sel->Matches({{"a", "b"}, {"x.io/k", "1"}});
  }
  if (auto fs = FieldSelector::Parse(text); fs.ok()) {
    auto again = FieldSelector::Parse(fs->ToString());
    if (!again.ok() || again->requirements() != fs->requirements()) std::abort();
  }
  Quantity::Parse(text).status().IgnoreError();
  static const Json doc = Json::parse(R"({"a": {"b.c": [1, {"t": "x", "v": 2}]}})");
  FindJsonPath(doc, text);
  return 0;
}

// Manifests from untrusted input: YAML/JSON parsing, object decoding, admission, and the YAML
// emitter's round trip (what we print must read back as the same document).

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/admission.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/yaml_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warren::api;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto docs = ParseManifests(text);
  if (!docs.ok()) return 0;
  for (auto& doc : *docs) {
    auto again = ParseYaml(DumpYaml(doc));
    if (!again.ok() || *again != doc) std::abort();  // the emitter lost or changed something
    auto obj = ObjectFromJson(doc);
    if (!obj.ok()) continue;
    if (const KindInfo* kind = BuiltinKinds().ForObject(obj->api_version, obj->kind)) {
      AdmitCreate(*kind, *obj).IgnoreError();
    }
    auto text_again = ObjectFromJsonText(ObjectToJsonText(*obj));
    if (!text_again.ok()) std::abort();
  }
  return 0;
}

#include "store/continue_token.h"

#include "api/json.h"
#include "base/encoding.h"

namespace warren::store {

std::string EncodeContinueToken(const ContinueToken& token) {
  api::Json j = {{"v", 1}, {"rv", token.revision}, {"ns", token.namespace_}, {"n", token.name}};
  return base::Base64UrlEncode(api::DumpJson(j));
}

Result<ContinueToken> DecodeContinueToken(std::string_view text) {
  Status bad = InvalidArgumentError(
      "invalid continue token: pass the continue value of the previous list response unchanged");
  auto raw = base::Base64Decode(text);
  if (!raw) return bad;
  auto j = api::ParseJson(*raw);
  if (!j.ok() || !j->is_object()) return bad;
  const api::Json& o = *j;
  if (!o.contains("rv") || !o["rv"].is_number_integer() || o["rv"].get<int64_t>() <= 0 ||
      !o.contains("ns") || !o["ns"].is_string() || !o.contains("n") || !o["n"].is_string()) {
    return bad;
  }
  return ContinueToken{o["rv"].get<int64_t>(), o["ns"].get<std::string>(),
                       o["n"].get<std::string>()};
}

}  // namespace warren::store

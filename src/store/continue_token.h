#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::store {

// Where a paged list stopped: the revision the first page was read at and the last key
// returned. Opaque to clients (URL-safe base64 of a small JSON object).
struct ContinueToken {
  int64_t revision = 0;
  std::string namespace_;
  std::string name;
};

std::string EncodeContinueToken(const ContinueToken& token);
// A token that is not one of ours → InvalidArgument "invalid continue token".
Result<ContinueToken> DecodeContinueToken(std::string_view text);

}  // namespace warren::store

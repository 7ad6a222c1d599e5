#include "base/json_depth.h"

namespace warren::base {

bool JsonNestingWithin(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      // A stray closer does not lower the floor: "]]][[[[" still counts four levels.
      --depth;
    }
  }
  return true;
}

}  // namespace warren::base

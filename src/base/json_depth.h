#pragma once

#include <cstddef>
#include <string_view>

namespace warren::base {

// Whether the bracket nesting of a JSON text stays within `max_depth` levels, ignoring brackets
// inside strings (with their backslash escapes). Recursive JSON parsers (nlohmann) recurse once
// per level, so callers run this pre-scan on untrusted text before parsing it, so that
// "[[[[...]]]]" cannot exhaust the stack; it is cheaper than a parser callback. It does not
// validate the text: unbalanced or stray closing brackets are left for the parser to reject.
// Pure function, thread-safe.
bool JsonNestingWithin(std::string_view text, size_t max_depth);

}  // namespace warren::base

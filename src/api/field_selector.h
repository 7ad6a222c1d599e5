#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/object.h"
#include "base/result.h"

namespace warren::api {

// A Kubernetes field selector: `field=value`, `field==value`, `field!=value`, joined by commas
// (a backslash escapes ',', '=', '!' and '\' in values). Fields: metadata.name,
// metadata.namespace, metadata.uid, and any dotted path outside metadata (spec.templateName,
// status.phase, involvedObject.name) whose value is a string, number or boolean (a missing
// field reads as ""). Value type; thread-compatible.
class FieldSelector {
 public:
  struct Requirement {
    std::string field;
    bool equals = true;  // false: !=
    std::string value;
    friend bool operator==(const Requirement&, const Requirement&) = default;
  };

  FieldSelector() = default;
  // Bad syntax or an unsupported field → InvalidArgument naming it.
  static Result<FieldSelector> Parse(std::string_view text);

  bool Matches(const Object& object) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }
  std::string ToString() const;

 private:
  std::vector<Requirement> requirements_;
};

// The field's value as a field selector compares it ("" when absent or not a scalar).
std::string FieldValue(const Object& object, std::string_view field);

}  // namespace warren::api

#include "cli/rollout_edits.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "api/label_selector.h"
#include "base/strings.h"

namespace warren::cli {
namespace {

const char* OpName(api::LabelRequirement::Op op) {
  using Op = api::LabelRequirement::Op;
  switch (op) {
    case Op::kIn:
      return "In";
    case Op::kNotIn:
      return "NotIn";
    case Op::kExists:
      return "Exists";
    case Op::kDoesNotExist:
      return "DoesNotExist";
    default:
      return "";
  }
}

// `object[key]`, or null when `object` is not an object or has no `key` (const operator[] on
// a missing key is undefined).
const api::Json& At(const api::Json& object, const char* key) {
  static const api::Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

}  // namespace

Result<std::vector<ImageArg>> ParseImageArgs(const std::vector<std::string>& args) {
  std::vector<ImageArg> out;
  for (const std::string& a : args) {
    ImageArg arg;
    size_t eq = a.find('=');
    if (eq == std::string::npos) {
      arg.image = a;
    } else {
      arg.container = a.substr(0, eq);
      arg.image = a.substr(eq + 1);
      if (arg.container.empty()) {
        return InvalidArgumentError(fmt::format("\"{}\": CONTAINER=IMAGE names no container", a));
      }
    }
    if (arg.image.empty() || arg.image.find_first_of(" \t=") != std::string::npos) {
      return InvalidArgumentError(fmt::format("\"{}\": not [CONTAINER=]IMAGE", a));
    }
    out.push_back(std::move(arg));
  }
  if (out.empty()) return InvalidArgumentError("no image given: [CONTAINER=]IMAGE ...");
  return out;
}

Result<api::Json> SetImagePatch(const api::Json& sbs, const std::vector<ImageArg>& images) {
  const api::Json& meta = At(sbs, "metadata");
  const std::string name = meta.is_object() ? meta.value("name", "") : "";
  const api::Json& spec = At(sbs, "spec");
  if (!At(spec, "template").is_object()) {
    if (At(At(spec, "templateRef"), "name").is_string()) {
      std::string ref = At(At(spec, "templateRef"), "name").get<std::string>();
      return FailedPreconditionError(fmt::format(
          "sandboxset \"{}\" uses templateRef \"{}\": its template is SandboxTemplate \"{}\"'s, "
          "not the set's; change the SandboxTemplate, or give the set an inline template",
          name, ref, ref));
    }
    return FailedPreconditionError(fmt::format("sandboxset \"{}\" has no template", name));
  }
  api::Json containers = At(At(At(spec, "template"), "spec"), "containers");
  if (!containers.is_array() || containers.empty()) {
    return FailedPreconditionError(fmt::format("sandboxset \"{}\" has no containers", name));
  }
  std::vector<std::string> names;
  for (const auto& c : containers)
    names.push_back(At(c, "name").is_string() ? c["name"].get<std::string>() : "");
  for (const ImageArg& img : images) {
    if (img.container.empty()) {
      if (containers.size() != 1) {
        return InvalidArgumentError(fmt::format(
            "\"{}\" names no container and the template has {} ({}): write CONTAINER=IMAGE",
            img.image, containers.size(), base::Join(names, ", ")));
      }
      containers[0]["image"] = img.image;
      continue;
    }
    auto it = std::find(names.begin(), names.end(), img.container);
    if (it == names.end()) {
      return InvalidArgumentError(
          fmt::format("sandboxset \"{}\" has no container \"{}\" (it has {})", name, img.container,
                      base::Join(names, ", ")));
    }
    containers[static_cast<size_t>(it - names.begin())]["image"] = img.image;
  }
  api::Json patch = {{"spec", {{"template", {{"spec", {{"containers", containers}}}}}}}};
  // Only if nobody changed the set in between (the list is replaced whole).
  std::string rv = meta.is_object() ? meta.value("resourceVersion", "") : "";
  if (!rv.empty()) patch["metadata"] = {{"resourceVersion", rv}};
  return patch;
}

Result<api::Json> ParseIntOrPercent(std::string_view text, std::string_view flag) {
  std::string_view digits = text;
  bool percent = !text.empty() && text.back() == '%';
  if (percent) digits.remove_suffix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || v < 0) {
    return InvalidArgumentError(
        fmt::format("{} \"{}\": a count (3) or a percentage (20%)", flag, text));
  }
  if (percent) return api::Json(std::string(text));
  return api::Json(v);
}

Result<api::Json> UpdateOpsForImages(const UpdateOpsFlags& flags,
                                     const std::vector<ImageArg>& images) {
  if (flags.selector.empty()) return InvalidArgumentError("-l/--selector is required");
  ASSIGN_OR_RETURN(api::LabelSelector sel, api::LabelSelector::Parse(flags.selector));
  if (sel.empty()) {
    return InvalidArgumentError("-l/--selector: an empty selector would select every sandbox");
  }
  api::Json match_labels = api::Json::object();
  api::Json expressions = api::Json::array();
  for (const auto& r : sel.requirements()) {
    if (r.op == api::LabelRequirement::Op::kEquals) {
      match_labels[r.key] = r.values.at(0);
      continue;
    }
    std::string op = OpName(r.op);
    if (r.op == api::LabelRequirement::Op::kNotEquals) op = "NotIn";
    if (op.empty()) {
      return InvalidArgumentError(fmt::format(
          "-l/--selector \"{}\": a SandboxUpdateOps selector has no > or < (key \"{}\")",
          flags.selector, r.key));
    }
    api::Json e = {{"key", r.key}, {"operator", op}};
    if (!r.values.empty()) e["values"] = r.values;
    expressions.push_back(std::move(e));
  }
  api::Json selector = api::Json::object();
  if (!match_labels.empty()) selector["matchLabels"] = match_labels;
  if (!expressions.empty()) selector["matchExpressions"] = expressions;

  api::Json containers = api::Json::array();
  for (const ImageArg& img : images) {
    if (img.container.empty()) {
      return InvalidArgumentError(fmt::format(
          "\"{}\": write CONTAINER=IMAGE (the selected sandboxes' templates are not known here)",
          img.image));
    }
    containers.push_back({{"name", img.container}, {"image", img.image}});
  }
  api::Json spec = {{"selector", selector}, {"patch", {{"spec", {{"containers", containers}}}}}};
  if (!flags.max_unavailable.empty()) {
    ASSIGN_OR_RETURN(spec["updateStrategy"]["maxUnavailable"],
                     ParseIntOrPercent(flags.max_unavailable, "--max-unavailable"));
  }
  if (!flags.partition.empty()) {
    ASSIGN_OR_RETURN(spec["partition"], ParseIntOrPercent(flags.partition, "--partition"));
  }
  if (flags.paused) spec["paused"] = true;
  return api::Json{{"apiVersion", "agents.kruise.io/v1alpha1"},
                   {"kind", "SandboxUpdateOps"},
                   {"metadata", {{"generateName", "suo-"}}},
                   {"spec", spec}};
}

}  // namespace warren::cli

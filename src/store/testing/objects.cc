#include "store/testing/objects.h"

#include "api/kinds.h"

namespace warren::store::testing {
namespace {

api::Json Template() {
  return {{"spec", {{"containers", {{{"name", "main"}, {"image", "base"}}}}}}};
}

}  // namespace

api::Object MakeSandbox(std::string name, std::map<std::string, std::string> labels,
                        std::string ns) {
  api::Object o;
  o.api_version = api::kAgentsApiVersion;
  o.kind = "Sandbox";
  o.metadata.name = std::move(name);
  o.metadata.namespace_ = std::move(ns);
  o.metadata.labels = std::move(labels);
  o.spec()["template"] = Template();
  return o;
}

api::Object MakeSandboxSet(std::string name, int replicas, std::string ns) {
  api::Object o;
  o.api_version = api::kAgentsApiVersion;
  o.kind = "SandboxSet";
  o.metadata.name = std::move(name);
  o.metadata.namespace_ = std::move(ns);
  o.spec()["replicas"] = replicas;
  o.spec()["template"] = Template();
  return o;
}

}  // namespace warren::store::testing

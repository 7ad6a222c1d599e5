#include "controller/testing/test_nodes.h"

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/node.h"
#include "base/check.h"

namespace warren::controller::testing {

api::Object PutNode(store::Store& store, const TestNode& node) {
  auto current = store.Get(api::NodeKind(), "", node.name);
  api::Object o;
  if (current.ok()) {
    o = std::move(current).value();
  } else {
    CHECK(current.status().code() == StatusCode::kNotFound);
    o.api_version = api::kWarrenApiVersion;
    o.kind = "Node";
    o.metadata.name = node.name;
  }
  api::NodeSpec spec;
  spec.unschedulable = node.unschedulable;
  api::EncodeSpec(spec, o);
  if (current.ok()) {
    auto updated = store.Update(o);
    CHECK_OK(updated.status());
    o = std::move(updated).value();
  } else {
    auto created = store.Create(o);
    CHECK_OK(created.status());
    o = std::move(created).value();
  }
  api::NodeStatus st;
  st.capacity["cpu"] = api::Quantity::FromMilli(node.cpu_millicores);
  st.capacity["memory"] = api::Quantity::FromValue(node.memory_bytes);
  if (node.sandboxes) st.capacity["sandboxes"] = api::Quantity::FromValue(*node.sandboxes);
  st.allocatable = st.capacity;
  st.runtime_classes = node.runtime_classes;
  for (const auto& image : node.images) st.images.push_back({.names = {image}, .size_bytes = 1});
  if (!node.ready.empty()) {
    st.conditions.push_back({.type = "Ready", .status = node.ready, .reason = "AgentRunning"});
  }
  st.last_heartbeat_time = node.heartbeat;
  api::EncodeStatus(st, o);
  auto written = store.UpdateStatus(o);
  CHECK_OK(written.status());
  return std::move(written).value();
}

void RenewNode(store::Store& store, const std::string& name, base::WallTime at) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto o = store.Get(api::NodeKind(), "", name);
    CHECK_OK(o.status());
    auto st = api::DecodeStatus<api::NodeStatus>(*o);
    CHECK_OK(st.status());
    st->last_heartbeat_time = at;
    api::SetCondition(st->conditions,
                      {.type = "Ready",
                       .status = "True",
                       .reason = "AgentRunning",
                       .message = "the node agent is running"},
                      at);
    api::EncodeStatus(*st, *o);
    auto written = store.UpdateStatus(*o);
    if (written.ok()) return;
    CHECK(written.status().code() == StatusCode::kAborted);
  }
  CHECK(false);
}

}  // namespace warren::controller::testing

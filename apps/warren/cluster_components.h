#pragma once

// The cluster's controllers (issue 17: scheduling, node loss) as `warren server` components.
// They live here, not beside the controllers, because controller/ sits below server/ (the
// Component interface) in design.md's order.

#include <memory>
#include <string_view>
#include <utility>

#include "base/clock.h"
#include "controller/node_lifecycle_controller.h"
#include "controller/scheduler_controller.h"
#include "obs/event_recorder.h"
#include "server/component.h"
#include "server/server.h"
#include "store/store.h"

namespace warren::apps {

// Whether the scheduler runs: kAuto only when this server has no node agent of its own (a
// local agent takes unplaced sandboxes itself, NodeAgentOptions::take_unplaced) and shares an
// etcd store with `warren node` processes (RegisterServerParts passes `local_node_agent` true on
// the embedded store).
inline bool SchedulerWanted(server::SchedulerMode mode, bool local_node_agent) {
  switch (mode) {
    case server::SchedulerMode::kOn:
      return true;
    case server::SchedulerMode::kOff:
      return false;
    case server::SchedulerMode::kAuto:
      return !local_node_agent;
  }
  return false;
}

// controller::SchedulerController with its Event recorder.
class SchedulerComponent final : public server::Component {
 public:
  explicit SchedulerComponent(store::Store& store, controller::SchedulerOptions options = {})
      : events_(store, {.component = "scheduler"}),
        controller_(store, base::RealClock(), &events_, options) {}
  std::string_view name() const override { return "scheduler"; }
  Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  obs::EventRecorder events_;
  controller::SchedulerController controller_;
};

// controller::NodeLifecycleController with its Event recorder.
class NodeLifecycleComponent final : public server::Component {
 public:
  NodeLifecycleComponent(store::Store& store, controller::NodeLifecycleOptions options)
      : events_(store, {.component = "node-lifecycle-controller"}),
        controller_(store, base::RealClock(), &events_, std::move(options)) {}
  std::string_view name() const override { return "node-lifecycle"; }
  Status Start() override { return controller_.Start(); }
  void Stop() override { controller_.Stop(); }

 private:
  obs::EventRecorder events_;
  controller::NodeLifecycleController controller_;
};

}  // namespace warren::apps

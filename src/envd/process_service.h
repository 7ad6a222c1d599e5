#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "envd/connect_handler.h"
#include "envd/envd_state.h"
#include "envd/process_manager.h"
#include "envd/timer_queue.h"
#include "net/router.h"
#include "os/user_db.h"

namespace warren::envd {

// The `process.Process` Connect service (e2b-protocol.md §3.4): turns requests into spawn plans
// (user, cwd, environment precedence) and drives the ProcessManager. Borrows everything it uses;
// thread-safe.
class ProcessService {
 public:
  ProcessService(const EnvdState& state, TimerQueue& timers, ProcessManager& processes)
      : state_(state), timers_(timers), processes_(processes) {}

  void Register(net::Router& router, RpcAuth auth);

 private:
  void Start(const std::string& payload, const os::UserInfo& user,
             const std::shared_ptr<MessageSink>& sink, StreamOptions options);
  void Connect(const std::string& payload, const std::shared_ptr<MessageSink>& sink,
               StreamOptions options);
  Result<SpawnPlan> PlanStart(const std::string& payload, const os::UserInfo& user) const;
  Result<std::string> List(const std::string& body);
  Result<std::string> SendInput(const std::string& body);
  Result<std::string> SendSignal(const std::string& body);
  Result<std::string> CloseStdin(const std::string& body);
  Result<std::string> Update(const std::string& body);

  const EnvdState& state_;
  TimerQueue& timers_;
  ProcessManager& processes_;
};

}  // namespace warren::envd

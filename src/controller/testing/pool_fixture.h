#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "api/object.h"
#include "api/sandbox_secrets.h"
#include "base/status.h"
#include "controller/claim/pool_claimer.h"
#include "controller/pool_informers.h"
#include "controller/sandboxset_controller.h"
#include "controller/testing/pool_test_node.h"
#include "store/testing/temp_store.h"

namespace warren::controller::testing {

// The secrets every pool test seals with (one fixed test key).
const api::SandboxSecrets& TestSecrets();

// A gtest fixture for controllers that work on warm pools: one server's pool machinery over a
// temporary store, as the server wires it: pool informers, the SandboxSet controller and a pool
// claimer (no event recorder, metrics or route callback), and a PoolTestNode that makes members
// Running and Ready. A test derives from it, makes its controller under test over `informers_`
// and `claimer_` (they exist from construction, so it can register its handlers before the
// informers start) and says how to start and stop it; SetUp starts the informers, the SandboxSet
// controller, then the controller under test; TearDown stops them in reverse.
// Owns everything it makes; used from the test's thread only.
class PoolControllerTest : public ::testing::Test {
 protected:
  PoolControllerTest();
  ~PoolControllerTest() override;

  void SetUp() override;
  void TearDown() override;
  virtual Status StartControllerUnderTest() = 0;
  virtual void StopControllerUnderTest() = 0;

  // Creates the SandboxSet and waits until all its replicas can be claimed.
  void CreatePool(const api::Object& set);
  void CreatePool(const std::string& name, int replicas);

  store::testing::TempStore store_;
  std::unique_ptr<PoolInformers> informers_;
  std::unique_ptr<SandboxSetController> sets_;
  std::unique_ptr<claim::PoolClaimer> claimer_;
  std::unique_ptr<PoolTestNode> node_;
};

}  // namespace warren::controller::testing

#include "controller/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "api/kinds.h"
#include "controller/testing/eventually.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

// A controller that waits for its own write reads what its handlers index (member counts), not
// only the cache: WaitForRevision returns only once every handler has seen the change.
TEST(InformerTest, AWaiterForARevisionWakesAfterTheHandlersSawIt) {
  store::testing::TempStore store;
  Informer informer(store.store(), {.kind = &api::SandboxSetKind(), .name = "sets"});
  std::atomic<bool> entered{false}, indexed{false};
  informer.AddHandler([&](const Informer::Change& c) {
    if (c.object->metadata.name != "pool") return;
    entered = true;
    std::this_thread::sleep_for(200ms);  // a slow index update
    indexed = true;
  });
  ASSERT_TRUE(informer.Start().ok());
  auto created = store->Create(store::testing::MakeSandboxSet("pool", 1));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(testing::Eventually([&] { return entered.load(); }));
  ASSERT_TRUE(informer.WaitForRevision(created->metadata.resource_version, 5s));
  EXPECT_TRUE(indexed.load()) << "woke while a handler had not yet seen the change";
  informer.Stop();
}

}  // namespace
}  // namespace warren::controller

#include "obs/event_recorder.h"

#include <gtest/gtest.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/event.h"
#include "base/testing/fake_clock.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::obs {
namespace {

using namespace std::chrono_literals;

class EventRecorderTest : public ::testing::Test {
 protected:
  api::Object Sandbox(std::string name) {
    auto created = store_->Create(store::testing::MakeSandbox(std::move(name)));
    EXPECT_TRUE(created.ok()) << created.status();
    return *created;
  }
  std::vector<api::EventFields> Events() {
    auto list = store_->List(api::EventKind(), {});
    EXPECT_TRUE(list.ok()) << list.status();
    std::vector<api::EventFields> out;
    for (const auto& o : list->items) {
      out.push_back(*api::DecodeTyped<api::EventFields>(o.body, ""));
    }
    return out;
  }

  store::testing::TempStore store_;
  base::FakeClock clock_;
  EventRecorder recorder_{store_.store(), {.component = "sandboxset-controller"}, clock_};
};

TEST_F(EventRecorderTest, RecordsAnEventAboutTheObject) {
  api::Object sbx = Sandbox("a");
  ASSERT_TRUE(recorder_.Warning(sbx, "FailedCreate", "image \"nope\" not found").ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].involved_object.kind, "Sandbox");
  EXPECT_EQ(events[0].involved_object.name, "a");
  EXPECT_EQ(events[0].involved_object.uid, sbx.metadata.uid);
  EXPECT_EQ(events[0].type, "Warning");
  EXPECT_EQ(events[0].reason, "FailedCreate");
  EXPECT_EQ(events[0].message, "image \"nope\" not found");
  EXPECT_EQ(events[0].source.component, "sandboxset-controller");
  EXPECT_EQ(events[0].count, 1);
}

TEST_F(EventRecorderTest, RepeatsFoldIntoOneEventWithACount) {
  api::Object sbx = Sandbox("a");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(recorder_.Warning(sbx, "FailedCreate", "boom").ok());
    clock_.Advance(1s);
  }
  ASSERT_TRUE(recorder_.Warning(sbx, "FailedCreate", "another message").ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 2u);
  int folded = events[0].message == "boom" ? 0 : 1;
  EXPECT_EQ(events[folded].count, 3);
  EXPECT_EQ(*events[folded].last_timestamp - *events[folded].first_timestamp, 2s);
  EXPECT_EQ(events[1 - folded].count, 1);
}

TEST_F(EventRecorderTest, AfterTheFoldWindowANewEventStarts) {
  api::Object sbx = Sandbox("a");
  ASSERT_TRUE(recorder_.Normal(sbx, "Scaled", "x").ok());
  clock_.Advance(11min);
  ASSERT_TRUE(recorder_.Normal(sbx, "Scaled", "x").ok());
  EXPECT_EQ(Events().size(), 2u);
}

TEST_F(EventRecorderTest, AFoldedEventDeletedMeanwhileIsWrittenAgain) {
  api::Object sbx = Sandbox("a");
  ASSERT_TRUE(recorder_.Normal(sbx, "Scaled", "x").ok());
  auto list = store_->List(api::EventKind(), {});
  ASSERT_EQ(list->items.size(), 1u);
  ASSERT_TRUE(store_->Delete(api::EventKind(), "default", list->items[0].metadata.name).ok());
  ASSERT_TRUE(recorder_.Normal(sbx, "Scaled", "x").ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].count, 1);
}

TEST_F(EventRecorderTest, ClusterScopedObjectsGetEventsInDefault) {
  api::Object node;
  node.api_version = api::kWarrenApiVersion;
  node.kind = "Node";
  node.metadata.name = "n1";
  ASSERT_TRUE(recorder_.Warning(node, "NotReady", "kubelet stopped").ok());
  auto list = store_->List(api::EventKind(), {});
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0].metadata.namespace_, "default");
  EXPECT_EQ(list->items[0].metadata.name.rfind("n1.", 0), 0u);
}

}  // namespace
}  // namespace warren::obs

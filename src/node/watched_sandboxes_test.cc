#include "node/watched_sandboxes.h"

#include <gtest/gtest.h>

namespace warren::node {
namespace {

std::shared_ptr<const api::Object> At(const std::string& name, int64_t resource_version) {
  api::Object o;
  o.kind = "Sandbox";
  o.metadata.namespace_ = "default";
  o.metadata.name = name;
  o.metadata.resource_version = resource_version;
  return std::make_shared<const api::Object>(std::move(o));
}

int64_t VersionOf(const std::shared_ptr<const api::Object>& o) {
  return o ? o->metadata.resource_version : -1;
}

TEST(WatchedSandboxes, ACopyOlderThanWhatTheAgentActedOnIsNotHandedOut) {
  WatchedSandboxes watched;
  EXPECT_EQ(watched.Fresh("default/a"), nullptr) << "nothing watched yet: read the store";
  watched.Saw("default/a", At("a", 5));
  EXPECT_EQ(VersionOf(watched.Fresh("default/a")), 5);

  // The agent wrote the object (version 7) before the watch delivered that write.
  watched.Acted("default/a", 7);
  EXPECT_EQ(watched.Fresh("default/a"), nullptr) << "the watch lags the agent's own write";
  watched.Saw("default/a", At("a", 7));
  EXPECT_EQ(VersionOf(watched.Fresh("default/a")), 7);
  // A read that acted on an older version does not lower the bar.
  watched.Acted("default/a", 6);
  EXPECT_EQ(VersionOf(watched.Fresh("default/a")), 7);
  watched.Saw("default/a", At("a", 9));
  EXPECT_EQ(VersionOf(watched.Fresh("default/a")), 9);
}

TEST(WatchedSandboxes, DeletionsListsAndForgettingDropCopies) {
  WatchedSandboxes watched;
  watched.Saw("default/a", At("a", 3));
  watched.Saw("default/b", At("b", 4));
  watched.Deleted("default/a");
  EXPECT_EQ(watched.Fresh("default/a"), nullptr) << "deleted: the store says NotFound";

  // A relist replaces everything: b was deleted while the watch was down, c is new.
  api::Object c = *At("c", 8);
  watched.Listed({c});
  EXPECT_EQ(watched.Fresh("default/b"), nullptr);
  EXPECT_EQ(VersionOf(watched.Fresh("default/c")), 8);

  watched.Acted("default/c", 10);
  watched.Forget("default/c");
  EXPECT_EQ(watched.Fresh("default/c"), nullptr);
  // Forgotten, with what the agent acted on: the next copy the watch delivers is handed out.
  watched.Saw("default/c", At("c", 2));
  EXPECT_EQ(VersionOf(watched.Fresh("default/c")), 2);
}

}  // namespace
}  // namespace warren::node

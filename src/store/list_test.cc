#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/kinds.h"
#include "base/testing/fake_clock.h"
#include "store/testing/backend_store.h"
#include "store/testing/objects.h"

namespace warren::store {
namespace {

using namespace std::chrono_literals;
using testing::Backend;
using testing::BackendStore;
using testing::BackendStoreOptions;
using testing::MakeSandbox;

const api::KindInfo& kSbx = api::SandboxKind();

std::vector<std::string> Names(const ObjectList& list) {
  std::vector<std::string> out;
  for (const auto& o : list.items) out.push_back(o.metadata.name);
  return out;
}

class List : public ::testing::TestWithParam<Backend> {};

TEST_P(List, SelectorsAndNamespaces) {
  BackendStore s(GetParam());
  ASSERT_TRUE(s->Create(MakeSandbox("a", {{"pool", "p1"}, {"claimed", "false"}})).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("b", {{"pool", "p1"}, {"claimed", "true"}})).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("c", {{"pool", "p2"}})).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("d", {{"pool", "p1"}}, "team")).ok());
  ListOptions o;
  o.label_selector = *api::LabelSelector::Parse("pool=p1,claimed!=true");
  EXPECT_EQ(Names(*s->List(kSbx, o)), (std::vector<std::string>{"a", "d"}));
  o.namespace_ = "default";
  EXPECT_EQ(Names(*s->List(kSbx, o)), (std::vector<std::string>{"a"}));
  ListOptions f;
  f.field_selector = *api::FieldSelector::Parse("metadata.name!=a,metadata.namespace=default");
  EXPECT_EQ(Names(*s->List(kSbx, f)), (std::vector<std::string>{"b", "c"}));
  auto all = s->List(kSbx, {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Names(*all), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(all->resource_version, s->CurrentRevision());
  EXPECT_TRUE(all->continue_token.empty());
}

// Pages after the first are read at the first page's revision: objects created, changed or
// deleted in between do not show through, so the pages form one consistent list.
TEST_P(List, PagesAreConsistentAcrossWrites) {
  BackendStore s(GetParam());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(s->Create(MakeSandbox(fmt::format("s{:02}", i), {{"v", "1"}})).ok());
  }
  ListOptions o;
  o.limit = 4;
  auto p1 = s->List(kSbx, o);
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_EQ(Names(*p1), (std::vector<std::string>{"s00", "s01", "s02", "s03"}));
  ASSERT_FALSE(p1->continue_token.empty());

  // Writes between pages.
  ASSERT_TRUE(s->Delete(kSbx, "default", "s05").ok());
  ASSERT_TRUE(s->Create(MakeSandbox("s04a")).ok());
  auto s06 = *s->Get(kSbx, "default", "s06");
  s06.metadata.labels["v"] = "2";
  ASSERT_TRUE(s->Update(s06).ok());

  o.continue_token = p1->continue_token;
  auto p2 = s->List(kSbx, o);
  ASSERT_TRUE(p2.ok()) << p2.status();
  EXPECT_EQ(Names(*p2), (std::vector<std::string>{"s04", "s05", "s06", "s07"}));
  EXPECT_EQ(p2->items[2].metadata.labels.at("v"), "1");
  EXPECT_EQ(p2->resource_version, p1->resource_version);
  o.continue_token = p2->continue_token;
  auto p3 = s->List(kSbx, o);
  ASSERT_TRUE(p3.ok());
  EXPECT_EQ(Names(*p3), (std::vector<std::string>{"s08", "s09"}));
  EXPECT_TRUE(p3->continue_token.empty());

  // A fresh list sees the writes.
  auto now = s->List(kSbx, {});
  EXPECT_EQ(now->items.size(), 10u);
}

TEST_P(List, LimitCountsMatchesNotRows) {
  BackendStore s(GetParam());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(s->Create(MakeSandbox(fmt::format("s{}", i), {{"odd", i % 2 ? "y" : "n"}})).ok());
  }
  ListOptions o;
  o.limit = 2;
  o.label_selector = *api::LabelSelector::Parse("odd=y");
  auto p1 = *s->List(kSbx, o);
  EXPECT_EQ(Names(p1), (std::vector<std::string>{"s1", "s3"}));
  o.continue_token = p1.continue_token;
  auto p2 = *s->List(kSbx, o);
  EXPECT_EQ(Names(p2), (std::vector<std::string>{"s5"}));
  EXPECT_TRUE(p2.continue_token.empty());
}

TEST_P(List, ExpiredContinueTokenIsGone) {
  base::FakeClock clock;
  BackendStoreOptions options;
  options.clock = &clock;
  options.history = 60s;
  BackendStore s(GetParam(), options);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->Create(MakeSandbox(fmt::format("s{}", i))).ok());
  ListOptions o;
  o.limit = 1;
  auto p1 = *s->List(kSbx, o);
  clock.Advance(5min);
  ASSERT_TRUE(s->Delete(kSbx, "default", "s2").ok());
  ASSERT_TRUE(s->Create(MakeSandbox("s3")).ok());
  // Still within the history: the page after p1 can be read at p1's revision.
  ASSERT_TRUE(s.Compact().ok());
  o.continue_token = p1.continue_token;
  EXPECT_TRUE(s->List(kSbx, o).ok());
  // Once the history past p1's revision is compacted away, the token has expired.
  clock.Advance(5min);
  ASSERT_TRUE(s->Create(MakeSandbox("s4")).ok());
  ASSERT_TRUE(s.Compact().ok());
  ASSERT_GT(s.CompactedRevision(), p1.resource_version);
  o.continue_token = p1.continue_token;
  auto p2 = s->List(kSbx, o);
  ASSERT_FALSE(p2.ok());
  EXPECT_EQ(p2.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(p2.status().message().find("continue parameter is too old"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(, List, ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::store

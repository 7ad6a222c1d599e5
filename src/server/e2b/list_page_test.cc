#include "server/e2b/list_page.h"

#include <gtest/gtest.h>

#include "base/encoding.h"

namespace warren::server::e2b {
namespace {

SandboxRecord Rec(std::string id, int started_s, E2bState state = E2bState::kRunning,
                  std::map<std::string, std::string> metadata = {}) {
  SandboxRecord r;
  r.sandbox_id = std::move(id);
  r.started_at = base::WallTime(std::chrono::seconds(started_s));
  r.state = state;
  r.metadata = std::move(metadata);
  r.template_id = "base";
  return r;
}

std::vector<std::string> Ids(const ListPage& p) {
  std::vector<std::string> out;
  for (const auto& r : p.items) out.push_back(r.sandbox_id);
  return out;
}

std::vector<SandboxRecord> Sample() {
  return {Rec("ia", 10), Rec("ib", 30, E2bState::kPaused), Rec("ic", 20),
          Rec("id", 20), Rec("ie", 40, E2bState::kDead),   Rec("if", 50, E2bState::kDeleting)};
}

TEST(ListPageTest, NewestFirstTiesByIdAndOnlyLiveSandboxes) {
  auto page = SelectPage(Sample(), ListQuery{});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Ids(*page), (std::vector<std::string>{"ib", "ic", "id", "ia"}));
  EXPECT_TRUE(page->next_token.empty());
  ListQuery asc;
  asc.order = SortOrder::kAsc;
  EXPECT_EQ(Ids(*SelectPage(Sample(), asc)), (std::vector<std::string>{"ia", "id", "ic", "ib"}));
}

TEST(ListPageTest, PagesOfOneWalkEveryItemOnceInBothOrders) {
  for (SortOrder order : {SortOrder::kDesc, SortOrder::kAsc}) {
    ListQuery q;
    q.limit = 1;
    q.order = order;
    std::vector<std::string> seen;
    for (int i = 0; i < 10; ++i) {
      auto page = SelectPage(Sample(), q);
      ASSERT_TRUE(page.ok()) << page.status();
      ASSERT_EQ(page->items.size(), 1u);
      seen.push_back(page->items[0].sandbox_id);
      if (page->next_token.empty()) break;
      q.next_token = page->next_token;
    }
    EXPECT_EQ(seen.size(), 4u);
    auto all = SelectPage(Sample(), ListQuery{.order = order});
    EXPECT_EQ(seen, Ids(*all));
  }
}

TEST(ListPageTest, TheCursorSurvivesTheDeletionOfTheItemItPointsAt) {
  ListQuery q;
  q.limit = 2;
  auto first = SelectPage(Sample(), q);
  ASSERT_EQ(Ids(*first), (std::vector<std::string>{"ib", "ic"}));
  auto rest = Sample();
  std::erase_if(rest, [](const SandboxRecord& r) { return r.sandbox_id == "ic"; });
  q.next_token = first->next_token;
  auto second = SelectPage(rest, q);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Ids(*second), (std::vector<std::string>{"id", "ia"}));
  EXPECT_TRUE(second->next_token.empty());
}

TEST(ListPageTest, FiltersApply) {
  auto records = Sample();
  records.push_back(Rec("ig", 60, E2bState::kRunning, {{"env", "prod"}, {"team", "x"}}));
  records.push_back(Rec("ih", 70, E2bState::kPaused, {{"env", "prod"}}));
  ListQuery q;
  q.metadata = {{"env", "prod"}};
  EXPECT_EQ(Ids(*SelectPage(records, q)), (std::vector<std::string>{"ih", "ig"}));
  q.want_paused = false;
  EXPECT_EQ(Ids(*SelectPage(records, q)), (std::vector<std::string>{"ig"}));
  ListQuery paused;
  paused.want_running = false;
  EXPECT_EQ(Ids(*SelectPage(records, paused)), (std::vector<std::string>{"ih", "ib"}));
  ListQuery after;
  after.started_after = base::WallTime(std::chrono::seconds(30));
  EXPECT_EQ(Ids(*SelectPage(records, after)), (std::vector<std::string>{"ih", "ig", "ib"}));
  ListQuery tpl;
  tpl.template_id = "other";
  EXPECT_TRUE(SelectPage(records, tpl)->items.empty());
}

TEST(ListPageTest, PoolMembersAreNeverListed) {
  auto records = Sample();
  records[0].pool_member = true;
  auto page = SelectPage(records, ListQuery{});
  EXPECT_EQ(Ids(*page), (std::vector<std::string>{"ib", "ic", "id"}));
}

TEST(ListPageTest, BadOrForeignTokensAreInvalid) {
  ListQuery q;
  q.limit = 1;
  auto desc = SelectPage(Sample(), q);
  for (std::string bad : {std::string("!!!"), base::Base64UrlEncode("garbage"),
                          base::Base64UrlEncode("12__"), base::Base64UrlEncode("x__ia")}) {
    q.next_token = bad;
    auto r = SelectPage(Sample(), q);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message(), "Invalid next token");
  }
  q.next_token = desc->next_token;
  q.order = SortOrder::kAsc;
  EXPECT_EQ(SelectPage(Sample(), q).status().message(), "Invalid next token");
}

}  // namespace
}  // namespace warren::server::e2b

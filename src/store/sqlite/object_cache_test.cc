#include "store/sqlite/object_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::store::sqlite {
namespace {

using testing::MakeSandbox;
using testing::TempStore;

std::shared_ptr<const api::Object> At(std::string name, int64_t revision) {
  api::Object o = MakeSandbox(std::move(name));
  o.metadata.resource_version = revision;
  return std::make_shared<const api::Object>(std::move(o));
}

TEST(ObjectCache, AnswersOnlyForTheRevisionItHolds) {
  ObjectCache cache(8);
  cache.Put("Sandbox", At("a", 5));
  ASSERT_NE(cache.Find("Sandbox", "default", "a", 5), nullptr);
  EXPECT_EQ(cache.Find("Sandbox", "default", "a", 6), nullptr);
  EXPECT_EQ(cache.Find("Sandbox", "default", "a", 4), nullptr);
  EXPECT_EQ(cache.Find("SandboxSet", "default", "a", 5), nullptr);
  EXPECT_EQ(cache.Find("Sandbox", "other", "a", 5), nullptr);
}

TEST(ObjectCache, AnOlderRevisionNeverReplacesANewerOne) {
  ObjectCache cache(8);
  cache.Put("Sandbox", At("a", 7));
  cache.Put("Sandbox", At("a", 6));  // a reader that parsed before the writer's commit
  EXPECT_NE(cache.Find("Sandbox", "default", "a", 7), nullptr);
  EXPECT_EQ(cache.Find("Sandbox", "default", "a", 6), nullptr);
  cache.Put("Sandbox", At("a", 9));
  EXPECT_NE(cache.Find("Sandbox", "default", "a", 9), nullptr);
}

TEST(ObjectCache, TheLeastRecentlyUsedGoesFirstAndEraseForgets) {
  ObjectCache cache(2);
  cache.Put("Sandbox", At("a", 1));
  cache.Put("Sandbox", At("b", 2));
  ASSERT_NE(cache.Find("Sandbox", "default", "a", 1), nullptr);  // a is now the newest use
  cache.Put("Sandbox", At("c", 3));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_NE(cache.Find("Sandbox", "default", "a", 1), nullptr);
  EXPECT_EQ(cache.Find("Sandbox", "default", "b", 2), nullptr);
  EXPECT_NE(cache.Find("Sandbox", "default", "c", 3), nullptr);
  cache.Erase("Sandbox", "default", "a");
  EXPECT_EQ(cache.Find("Sandbox", "default", "a", 1), nullptr);
  EXPECT_EQ(cache.size(), 1u);
}

// The same writes against a store without the cache, one with room for everything and one
// that must evict at every step: every read serializes the same (the serialized form is what
// any client sees).
TEST(ObjectCacheStore, ReadsAreTheSameWithAndWithoutIt) {
  std::vector<std::unique_ptr<TempStore>> stores;
  for (size_t entries : {size_t{0}, size_t{4096}, size_t{2}}) {
    SqliteStoreOptions options;
    options.object_cache_entries = entries;
    stores.push_back(std::make_unique<TempStore>(options));
  }
  const api::KindInfo& kind = api::SandboxKind();
  std::mt19937 rng(12);
  for (int step = 0; step < 300; ++step) {
    const std::string name = "s" + std::to_string(rng() % 5);
    const int op = static_cast<int>(rng() % 4);
    const std::string value = std::to_string(step);
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE(::testing::Message() << "step " << step << " store " << i);
      TempStore& s = *stores[i];
      auto got = s->Get(kind, "default", name);
      if (op == 0 || !got.ok()) {
        auto c = s->Create(MakeSandbox(name, {{"v", value}}));
        ASSERT_EQ(c.ok(), !got.ok()) << c.status();
      } else if (op == 1) {
        got->metadata.labels["v"] = value;
        ASSERT_TRUE(s->Update(*got).ok());
      } else if (op == 2) {
        auto p =
            s->Patch(kind, "default", name,
                     api::Json::parse(R"({"metadata":{"annotations":{"a":")" + value + R"("}}})"),
                     Subresource::kMain);
        ASSERT_TRUE(p.ok()) << p.status();
      } else {
        ASSERT_TRUE(s->Delete(kind, "default", name, {}).ok());
      }
    }
    for (int k = 0; k < 5; ++k) {
      const std::string n = "s" + std::to_string(k);
      auto a = (*stores[0])->Get(kind, "default", n);
      for (int i = 1; i < 3; ++i) {
        auto b = (*stores[i])->Get(kind, "default", n);
        ASSERT_EQ(a.ok(), b.ok()) << n;
        if (!a.ok()) continue;
        // uids and generated sandbox ids differ from store to store; nothing else may.
        api::Object x = *a;
        api::Object y = *b;
        for (api::Object* o : {&x, &y}) {
          o->metadata.uid.clear();
          o->metadata.creation_timestamp.reset();
          o->metadata.labels.erase("agents.kruise.io/sandbox-id");
          o->metadata.annotations.erase("agents.kruise.io/sandbox-id");
        }
        EXPECT_EQ(api::ObjectToJsonText(x), api::ObjectToJsonText(y)) << n;
      }
    }
  }
}

// Writers racing on one key: every update is based on what the store held, so the batches'
// loads (from this batch, the cache or the table) never let one hide another.
TEST(ObjectCacheStore, RacingWritersLoseNoUpdate) {
  SqliteStoreOptions tiny;
  tiny.object_cache_entries = 1;
  for (SqliteStoreOptions options : {SqliteStoreOptions(), tiny}) {
    TempStore s(options);
    const api::KindInfo& kind = api::SandboxKind();
    ASSERT_TRUE(s->Create(MakeSandbox("hot")).ok());
    ASSERT_TRUE(s->Create(MakeSandbox("other")).ok());
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 25; ++i) {
          const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
          auto p = s->Patch(kind, "default", "hot",
                            api::Json::parse(R"({"metadata":{"labels":{")" + key + R"(":"x"}}})"),
                            Subresource::kMain);
          EXPECT_TRUE(p.ok()) << p.status();
          // Another key in between, so a one-entry cache keeps losing "hot".
          EXPECT_TRUE(s->Get(kind, "default", "other").ok());
        }
      });
    }
    for (auto& t : threads) t.join();
    auto hot = s->Get(kind, "default", "hot");
    ASSERT_TRUE(hot.ok());
    int written = 0;
    for (const auto& [key, value] : hot->metadata.labels) written += key[0] == 't' ? 1 : 0;
    EXPECT_EQ(written, 200);
  }
}

}  // namespace
}  // namespace warren::store::sqlite

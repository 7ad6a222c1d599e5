#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <thread>

#include "api/field_selector.h"
#include "api/kinds.h"
#include "base/encoding.h"
#include "base/testing/fake_clock.h"
#include "net/http_client.h"
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

// Collects `n` events (or fails the test after a generous timeout).
std::vector<WatchEvent> Take(Watcher& w, size_t n) {
  std::vector<WatchEvent> out;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto e = w.Next(100ms);
    if (!e.ok()) {
      ADD_FAILURE() << "watch ended: " << e.status();
      break;
    }
    if (*e) out.push_back(std::move(**e));
  }
  EXPECT_EQ(out.size(), n);
  return out;
}

void ExpectQuiet(Watcher& w) {
  auto e = w.Next(50ms);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE(e->has_value()) << "unexpected " << EventTypeName((*e)->type) << " "
                               << (*e)->object->metadata.name;
}

class Watch : public ::testing::TestWithParam<Backend> {};

TEST_P(Watch, DeliversEveryEventInRevisionOrder) {
  BackendStore s(GetParam());
  WatchOptions opts;
  opts.resource_version = s->CurrentRevision();
  auto w = s->Watch(&kSbx, opts);
  ASSERT_TRUE(w.ok()) << w.status();

  constexpr int kThreads = 8, kEach = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto o = s->Create(MakeSandbox(fmt::format("w-{}-{}", t, i)));
        ASSERT_TRUE(o.ok()) << o.status();
        o->metadata.labels["touched"] = "yes";
        ASSERT_TRUE(s->Update(*o).ok());
        if (i % 5 == 0) {
          ASSERT_TRUE(s->Delete(kSbx, "default", o->metadata.name).ok());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const size_t expected = kThreads * kEach * 2 + kThreads * (kEach / 5);
  auto events = Take(**w, expected);
  int64_t last = opts.resource_version.value();
  std::map<std::string, int> added, modified, deleted;
  for (const auto& e : events) {
    EXPECT_EQ(e.revision, last + 1) << "revisions must be consecutive for a single-kind store";
    last = e.revision;
    EXPECT_EQ(e.object->metadata.resource_version, e.revision);
    const std::string& name = e.object->metadata.name;
    if (e.type == EventType::kAdded) ++added[name];
    if (e.type == EventType::kModified) {
      ++modified[name];
      EXPECT_EQ(added[name], 1) << name << " modified before added";
    }
    if (e.type == EventType::kDeleted) {
      ++deleted[name];
      EXPECT_EQ(modified[name], 1) << name;
    }
  }
  EXPECT_EQ(added.size(), size_t{kThreads * kEach});
  EXPECT_EQ(deleted.size(), size_t{kThreads * (kEach / 5)});
  EXPECT_EQ(last, s->CurrentRevision());
  ExpectQuiet(**w);
}

TEST_P(Watch, ResumingFromARevisionReplaysWhatFollowed) {
  BackendStore s(GetParam());
  std::vector<int64_t> revs;
  for (int i = 0; i < 10; ++i) {
    auto o = s->Create(MakeSandbox(fmt::format("r{}", i)));
    ASSERT_TRUE(o.ok());
    revs.push_back(o->metadata.resource_version);
  }
  ASSERT_TRUE(s->Delete(kSbx, "default", "r3").ok());
  // Resume after the 6th create: the last 4 creates and the delete, in order.
  WatchOptions opts;
  opts.resource_version = revs[5];
  auto w = s->Watch(&kSbx, opts);
  ASSERT_TRUE(w.ok()) << w.status();
  auto events = Take(**w, 5);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(events[i].type, EventType::kAdded);
    EXPECT_EQ(events[i].object->metadata.name, fmt::format("r{}", 6 + i));
  }
  EXPECT_EQ(events[4].type, EventType::kDeleted);
  EXPECT_EQ(events[4].object->metadata.name, "r3");
  // Then live.
  ASSERT_TRUE(s->Create(MakeSandbox("live")).ok());
  auto live = Take(**w, 1);
  EXPECT_EQ(live[0].object->metadata.name, "live");
  ExpectQuiet(**w);

  // After a restart the history is still there.
  w->reset();
  s.Reopen();
  auto again = s->Watch(&kSbx, opts);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Take(**again, 6).back().object->metadata.name, "live");
}

TEST_P(Watch, WithoutARevisionListsThenFollows) {
  BackendStore s(GetParam());
  ASSERT_TRUE(s->Create(MakeSandbox("b")).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("a")).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("other", {}, "elsewhere")).ok());
  WatchOptions opts;
  opts.namespace_ = "default";
  auto w = s->Watch(&kSbx, opts);
  ASSERT_TRUE(w.ok());
  auto initial = Take(**w, 2);
  EXPECT_EQ(initial[0].object->metadata.name, "a");
  EXPECT_EQ(initial[1].object->metadata.name, "b");
  ASSERT_TRUE(s->Create(MakeSandbox("c")).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("d", {}, "elsewhere")).ok());
  auto live = Take(**w, 1);
  EXPECT_EQ(live[0].type, EventType::kAdded);
  EXPECT_EQ(live[0].object->metadata.name, "c");
  ExpectQuiet(**w);
}

// Stores `name`'s current document as text that does not parse, behind the store's back.
void CorruptStoredObject(BackendStore& s, const std::string& name) {
  s.Close();
  if (s.backend() == Backend::kSqlite) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(s.db_path().c_str(), &db), SQLITE_OK);
    std::string sql = fmt::format(
        "UPDATE events SET doc = '{{not json' WHERE rv = (SELECT rv FROM objects WHERE name = "
        "'{}')",
        name);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_changes(db), 1);
    sqlite3_close(db);
  } else {
    auto client = net::HttpClient::ForAddress(s.etcd()->endpoints()[0]);
    ASSERT_TRUE(client.ok());
    net::ClientRequest req;
    req.method = "POST";
    req.target = "/v3/kv/put";
    req.body = api::DumpJson(
        api::Json{{"key", base::Base64Encode("/warren/agents.kruise.io/sandboxes/default/" + name)},
                  {"value", base::Base64Encode("{not json")}});
    auto r = (*client)->Do(req);
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  }
  s.Reopen();
}

// A watch that names its one object (how a create waits for its sandbox) starts from that
// object alone: it neither reads its neighbours (with a thousand sandboxes, each create's wait
// parsed all of them) nor fails because one of them is damaged. A watch of the whole namespace
// still reads every object, and fails on the damaged one.
TEST_P(Watch, PinnedToOneNameListsOnlyThatObject) {
  BackendStore s(GetParam());
  ASSERT_TRUE(s->Create(MakeSandbox("a")).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("b")).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("c")).ok());
  CorruptStoredObject(s, "b");

  WatchOptions pinned;
  pinned.namespace_ = "default";
  pinned.field_selector = *api::FieldSelector::Parse("metadata.name=c");
  auto w = s->Watch(&kSbx, pinned);
  ASSERT_TRUE(w.ok()) << w.status();
  auto initial = Take(**w, 1);
  ASSERT_EQ(initial.size(), 1u);
  EXPECT_EQ(initial[0].type, EventType::kAdded);
  EXPECT_EQ(initial[0].object->metadata.name, "c");
  ExpectQuiet(**w);

  // Pinned to a name nobody has: nothing, then the object once it is made.
  pinned.field_selector = *api::FieldSelector::Parse("metadata.name=d");
  auto later = s->Watch(&kSbx, pinned);
  ASSERT_TRUE(later.ok()) << later.status();
  ExpectQuiet(**later);
  ASSERT_TRUE(s->Create(MakeSandbox("d")).ok());
  auto made = Take(**later, 1);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].object->metadata.name, "d");

  WatchOptions everything;
  everything.namespace_ = "default";
  auto all = s->Watch(&kSbx, everything);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kDataLoss) << all.status();
}

TEST_P(Watch, SelectorTransitionsBecomeAddedAndDeleted) {
  BackendStore s(GetParam());
  auto obj = *s->Create(MakeSandbox("x", {{"agents.kruise.io/sandbox-claimed", "false"}}));
  WatchOptions opts;
  opts.resource_version = s->CurrentRevision();
  opts.label_selector = *api::LabelSelector::Parse("agents.kruise.io/sandbox-claimed=false");
  auto w = s->Watch(&kSbx, opts);
  ASSERT_TRUE(w.ok());
  int64_t start = s->CurrentRevision();

  obj.metadata.labels["agents.kruise.io/sandbox-claimed"] = "true";  // claimed: leaves the pool
  auto claimed = s->Update(obj);
  ASSERT_TRUE(claimed.ok());
  claimed->metadata.labels["agents.kruise.io/sandbox-claimed"] = "false";  // recycled
  auto back = s->Update(*claimed);
  ASSERT_TRUE(back.ok());
  back->metadata.annotations["note"] = "x";
  ASSERT_TRUE(s->Update(*back).ok());

  auto events = Take(**w, 3);
  EXPECT_EQ(events[0].type, EventType::kDeleted);
  EXPECT_EQ(events[1].type, EventType::kAdded);
  EXPECT_EQ(events[2].type, EventType::kModified);

  // The same through replay.
  opts.resource_version = start;
  auto replay = s->Watch(&kSbx, opts);
  ASSERT_TRUE(replay.ok());
  auto replayed = Take(**replay, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(replayed[i].type, events[i].type) << i;
}

TEST_P(Watch, TooOldRevisionIsGone) {
  base::FakeClock clock;
  BackendStoreOptions options;
  options.clock = &clock;
  options.history = 60s;
  BackendStore s(GetParam(), options);
  auto first = *s->Create(MakeSandbox("a"));
  first.metadata.labels["v"] = "2";
  ASSERT_TRUE(s->Update(first).ok());
  clock.Advance(120s);
  ASSERT_TRUE(s->Create(MakeSandbox("b")).ok());
  ASSERT_TRUE(s.Compact().ok());
  EXPECT_GE(s.CompactedRevision(), first.metadata.resource_version);

  WatchOptions opts;
  opts.resource_version = first.metadata.resource_version - 1;
  auto w = s->Watch(&kSbx, opts);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(w.status().message().find("too old resource version"), std::string::npos) << w.status();

  // Objects are intact after compaction, and a watch from the horizon works.
  EXPECT_EQ(s->Get(kSbx, "default", "a")->metadata.labels.at("v"), "2");
  opts.resource_version = s.CompactedRevision();
  auto ok = s->Watch(&kSbx, opts);
  ASSERT_TRUE(ok.ok()) << ok.status();
}

TEST_P(Watch, SlowConsumerIsCutOffNotBuffered) {
  BackendStore s(GetParam());
  WatchOptions opts;
  opts.resource_version = s->CurrentRevision();
  opts.max_queued_events = 5;
  auto w = s->Watch(&kSbx, opts);
  ASSERT_TRUE(w.ok());
  // Events reach watches on the hub's thread, which may lag behind the writes: a reader that
  // started at once could keep up with it. A second watch that has seen all ten proves the first
  // was handed at least nine unread, more than it may hold.
  WatchOptions all = opts;
  all.max_queued_events = 100;
  auto witness = s->Watch(&kSbx, all);
  ASSERT_TRUE(witness.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->Create(MakeSandbox(fmt::format("s{}", i))).ok());
  for (int seen = 0; seen < 10; ++seen) {
    auto e = (*witness)->Next(10s);
    ASSERT_TRUE(e.ok() && e->has_value()) << "the witness watch saw " << seen << " events";
  }
  Status ended;
  for (int i = 0; i < 20 && ended.ok(); ++i) {
    auto e = (*w)->Next(200ms);
    if (!e.ok()) ended = e.status();
  }
  EXPECT_EQ(ended.code(), StatusCode::kResourceExhausted) << ended;
}

// A watch of every kind sees each object's changes in revision order and nothing else (the
// etcd backend's index keys live under the same prefix and must not show through).
TEST_P(Watch, EveryKindInRevisionOrderAndNothingElse) {
  BackendStore s(GetParam());
  WatchOptions opts;
  opts.resource_version = s->CurrentRevision();
  auto w = s->Watch(nullptr, opts);
  ASSERT_TRUE(w.ok()) << w.status();
  auto owner = s->Create(testing::MakeSandboxSet("pool"));
  ASSERT_TRUE(owner.ok()) << owner.status();
  api::Object d = MakeSandbox("member");
  d.metadata.owner_references = {owner->MakeControllerRef()};
  ASSERT_TRUE(s->Create(d).ok());
  ASSERT_TRUE(s->Delete(api::SandboxSetKind(), "default", "pool").ok());
  s.WaitForGarbageCollection();
  auto events = Take(**w, 4);
  std::vector<std::string> seen;
  int64_t last = 0;
  for (const auto& e : events) {
    EXPECT_GT(e.revision, last);
    last = e.revision;
    seen.push_back(
        fmt::format("{} {} {}", EventTypeName(e.type), e.object->kind, e.object->metadata.name));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED SandboxSet pool", "ADDED Sandbox member",
                                            "DELETED SandboxSet pool", "DELETED Sandbox member"}));
  ExpectQuiet(**w);
}

// A watch from a revision before anything was written (here 0 on a fresh store) starts at once
// and follows what comes; on etcd the revision the store opened at holds no change of its own.
TEST_P(Watch, FromBeforeAnyWriteStartsAtOnce) {
  BackendStore s(GetParam());
  WatchOptions opts;
  opts.resource_version = 0;
  auto started = std::chrono::steady_clock::now();
  auto w = s->Watch(&kSbx, opts);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  ASSERT_TRUE(s->Create(MakeSandbox("first")).ok());
  EXPECT_EQ(Take(**w, 1)[0].object->metadata.name, "first");
  ExpectQuiet(**w);
}

TEST_P(Watch, ShutdownEndsWatches) {
  auto s = std::make_unique<BackendStore>(GetParam());
  WatchOptions opts;
  opts.resource_version = (*s)->CurrentRevision();
  auto w = (*s)->Watch(&kSbx, opts);
  ASSERT_TRUE(w.ok());
  s->Close();
  auto e = (*w)->Next(1s);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnavailable);
}

INSTANTIATE_TEST_SUITE_P(, Watch, ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::store

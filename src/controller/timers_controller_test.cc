#include "controller/timers_controller.h"

#include <gtest/gtest.h>

#include <thread>

#include "api/kinds.h"
#include "base/testing/fake_clock.h"
#include "base/time_format.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

class TimersControllerTest : public ::testing::Test {
 protected:
  api::Object Create(const std::string& name, std::optional<base::WallTime> shutdown,
                     std::optional<base::WallTime> pause, bool paused = false) {
    api::Object o = store::testing::MakeSandbox(name);
    if (shutdown) o.spec()["shutdownTime"] = base::FormatRfc3339(*shutdown);
    if (pause) o.spec()["pauseTime"] = base::FormatRfc3339(*pause);
    if (paused) o.spec()["paused"] = true;
    auto created = store_->Create(std::move(o));
    EXPECT_TRUE(created.ok()) << created.status();
    return *created;
  }
  std::optional<api::Object> Get(const std::string& name) {
    auto got = store_->Get(api::SandboxKind(), "default", name);
    if (!got.ok()) return std::nullopt;
    return *got;
  }
  // Polls `done` for up to 5 s, kicking the controller so it sees the fake clock's time.
  bool Eventually(TimersController& c, const std::function<bool()>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      c.Kick();
      std::this_thread::sleep_for(10ms);
    }
    return done();
  }

  store::testing::TempStore store_;
  base::FakeClock clock_;
};

TEST_F(TimersControllerTest, ShutdownTimeDeletesExactlyWhenDue) {
  base::WallTime now = clock_.Now();
  Create("short", now + 10s, std::nullopt);
  Create("long", now + 100s, std::nullopt);
  Create("none", std::nullopt, std::nullopt);
  TimersController c(store_.store(), clock_);
  ASSERT_TRUE(c.Start().ok());
  std::this_thread::sleep_for(50ms);
  c.Kick();
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(Get("short")) << "deleted before its time";
  clock_.Advance(10s);
  EXPECT_TRUE(Eventually(c, [&] { return !Get("short"); }));
  EXPECT_TRUE(Get("long"));
  EXPECT_TRUE(Get("none"));
  EXPECT_EQ(c.Stats().deleted, 1u);
  EXPECT_EQ(c.Stats().pending, 1u);
}

TEST_F(TimersControllerTest, PauseTimePausesAndClearsItselfButKeepsTheShutdown) {
  base::WallTime now = clock_.Now();
  Create("auto", now + 100s, now + 5s);
  TimersController c(store_.store(), clock_);
  ASSERT_TRUE(c.Start().ok());
  clock_.Advance(6s);
  ASSERT_TRUE(Eventually(c, [&] {
    auto o = Get("auto");
    return o && o->spec().value("paused", false);
  }));
  auto o = Get("auto");
  EXPECT_FALSE(o->spec().contains("pauseTime"));
  EXPECT_TRUE(o->spec().contains("shutdownTime"));
  EXPECT_EQ(c.Stats().paused, 1u);
}

TEST_F(TimersControllerTest, TimersDueWhileStoppedFireAtStart) {
  base::WallTime past = clock_.Now() - 60s;
  Create("overdue", past, std::nullopt);
  Create("overdue-pause", std::nullopt, past);
  TimersController c(store_.store(), clock_);
  ASSERT_TRUE(c.Start().ok());
  EXPECT_TRUE(Eventually(c, [&] { return !Get("overdue"); }));
  EXPECT_TRUE(Eventually(c, [&] {
    auto o = Get("overdue-pause");
    return o && o->spec().value("paused", false);
  }));
}

TEST_F(TimersControllerTest, AnExtensionMadeBeforeTheTimerFiresWins) {
  base::WallTime now = clock_.Now();
  api::Object o = Create("extended", now + 10s, std::nullopt);
  TimersController c(store_.store(), clock_);
  ASSERT_TRUE(c.Start().ok());
  o.spec()["shutdownTime"] = base::FormatRfc3339(now + 60s);
  ASSERT_TRUE(store_->Update(o).ok());
  clock_.Advance(30s);
  std::this_thread::sleep_for(100ms);
  c.Kick();
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(Get("extended")) << "the old shutdownTime must not fire";
  clock_.Advance(31s);
  EXPECT_TRUE(Eventually(c, [&] { return !Get("extended"); }));
}

TEST_F(TimersControllerTest, ShorteningTakesEffectAndPausedSandboxesIgnorePauseTime) {
  base::WallTime now = clock_.Now();
  api::Object o = Create("shortened", now + 3600s, std::nullopt);
  Create("already-paused", std::nullopt, now + 1s, /*paused=*/true);
  TimersController c(store_.store(), clock_);
  ASSERT_TRUE(c.Start().ok());
  o.spec()["shutdownTime"] = base::FormatRfc3339(now + 2s);
  ASSERT_TRUE(store_->Update(o).ok());
  clock_.Advance(3s);
  EXPECT_TRUE(Eventually(c, [&] { return !Get("shortened"); }));
  auto paused = Get("already-paused");
  ASSERT_TRUE(paused);
  EXPECT_TRUE(paused->spec().contains("pauseTime")) << "nothing to do for a paused sandbox";
  EXPECT_EQ(c.Stats().paused, 0u);
}

TEST_F(TimersControllerTest, ASandboxRecreatedUnderTheSameNameIsNotDeletedByTheOldTimer) {
  base::WallTime now = clock_.Now();
  Create("reborn", now + 5s, std::nullopt);
  TimersController c(store_.store(), clock_);
  ASSERT_TRUE(c.Start().ok());
  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "reborn").ok());
  Create("reborn", std::nullopt, std::nullopt);
  clock_.Advance(10s);
  std::this_thread::sleep_for(100ms);
  c.Kick();
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(Get("reborn"));
  EXPECT_EQ(c.Stats().deleted, 0u);
}

}  // namespace
}  // namespace warren::controller

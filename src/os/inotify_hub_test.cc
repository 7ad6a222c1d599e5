#include "os/inotify_hub.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "base/testing/temp_dir.h"

namespace warren::os {
namespace {

using std::chrono::milliseconds;

void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text;
}

// The kernel's own count of watches on the hub's instance, from /proc (what a leak would show).
int KernelWatches() {
  int count = 0;
  for (int fd = 0; fd < 1024; ++fd) {
    std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd));
    for (std::string line; std::getline(info, line);) {
      if (line.starts_with("inotify wd:")) ++count;
    }
  }
  return count;
}

class InotifyHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = dir_.path() + "/a.log";
    b_ = dir_.path() + "/b.log";
    Append(a_, "");
    Append(b_, "");
    auto hub = InotifyHub::Create();
    ASSERT_TRUE(hub.ok()) << hub.status().ToString();
    hub_ = std::move(hub).value();
  }

  base::testing::TempDir dir_;
  std::string a_, b_;
  std::unique_ptr<InotifyHub> hub_;
};

TEST_F(InotifyHubTest, AWriteWakesTheWaitOnThatFileOnly) {
  auto a = hub_->Add(a_, IN_MODIFY);
  auto b = hub_->Add(b_, IN_MODIFY);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->Wait(milliseconds(20))) << "nothing was written yet";
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    Append(a_, "listening\n");
  });
  EXPECT_TRUE(a->Wait(milliseconds(10000)));
  writer.join();
  EXPECT_FALSE(b->Wait(milliseconds(20))) << "the other file was not written";
  EXPECT_FALSE(a->Wait(milliseconds(20))) << "an event is taken once";
}

TEST_F(InotifyHubTest, AWriteBeforeTheWaitIsNotLost) {
  auto a = hub_->Add(a_, IN_MODIFY);
  ASSERT_TRUE(a.ok());
  Append(a_, "early\n");
  EXPECT_TRUE(a->Wait(milliseconds(10000)));
}

TEST_F(InotifyHubTest, RemovingTheFileWakesItsWait) {
  auto a = hub_->Add(a_, IN_MODIFY);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(unlink(a_.c_str()), 0);
  EXPECT_TRUE(a->Wait(milliseconds(10000)));
}

TEST_F(InotifyHubTest, TwoWatchesOfOneFileEachSeeTheWriteAndTheLastRemovesIt) {
  auto first = hub_->Add(a_, IN_MODIFY);
  ASSERT_TRUE(first.ok());
  {
    auto second = hub_->Add(a_, IN_MODIFY);
    ASSERT_TRUE(second.ok());
    Append(a_, "x");
    EXPECT_TRUE(first->Wait(milliseconds(10000)));
    EXPECT_TRUE(second->Wait(milliseconds(10000)));
  }
  // The second's removal left the first's watch in place.
  Append(a_, "y");
  EXPECT_TRUE(first->Wait(milliseconds(10000)));
  EXPECT_EQ(hub_->watches(), 1u);
}

TEST_F(InotifyHubTest, ManyWatchesComeAndGoWithoutLeavingOneBehind) {
  const int before = KernelWatches();
  for (int i = 0; i < 200; ++i) {
    auto a = hub_->Add(a_, IN_MODIFY);
    ASSERT_TRUE(a.ok());
    auto b = hub_->Add(b_, IN_MODIFY);
    ASSERT_TRUE(b.ok());
    if (i == 0) {
      ASSERT_EQ(KernelWatches(), before + 2) << "the count sees live watches";
    }
  }
  EXPECT_EQ(hub_->watches(), 0u);
  EXPECT_EQ(KernelWatches(), before);
}

TEST_F(InotifyHubTest, AMissingFileIsAnErrorNamingIt) {
  auto missing = hub_->Add(dir_.path() + "/none.log", IN_MODIFY);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.log"), std::string::npos)
      << missing.status().ToString();
  EXPECT_EQ(hub_->watches(), 0u);
}

}  // namespace
}  // namespace warren::os

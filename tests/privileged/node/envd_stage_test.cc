// The copy of warren-envd sandboxes bind (node/envd_stage.h): made on a tmpfs of its own with
// huge pages, executable, replaced whole, refused when too big, removed with its directory; and
// the real envd started from it has its text mapped in huge pages where the kernel has them.
#include "node/envd_stage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "base/testing/temp_dir.h"
#include "base/unique_fd.h"
#include "os/mount.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A counter of /proc/vmstat (0 when missing).
long VmStat(std::string_view name) {
  std::ifstream in("/proc/vmstat");
  std::string key;
  long value = 0;
  while (in >> key >> value) {
    if (key == name) return value;
  }
  return 0;
}

class EnvdStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "mounting needs root";
    stage_.dir = tmp_.path() + "/bin";
    stage_.name = "agent1";
  }
  void TearDown() override {
    if (!stage_.dir.empty()) umount2(stage_.dir.c_str(), MNT_DETACH);
  }
  base::testing::TempDir tmp_;
  EnvdStage stage_;
};

TEST_F(EnvdStageTest, TheCopyIsTheBinaryOnATmpfsOfItsOwnAndReplacingItKeepsTheOldForItsUsers) {
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
    GTEST_SKIP() << "no transparent huge pages: tmpfs refuses huge=within_size (the node agent "
                    "binds the original then)";
  }
  auto staged = StageEnvd(WARREN_ENVD_BIN, stage_);
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ(*staged, stage_.dir + "/agent1/warren-envd");
  EXPECT_EQ(Slurp(*staged), Slurp(WARREN_ENVD_BIN));
  EXPECT_EQ(access(staged->c_str(), X_OK), 0);
  auto mounts = os::ReadMountInfo();
  ASSERT_TRUE(mounts.ok());
  bool huge_tmpfs = false;
  for (const auto& m : *mounts) {
    if (m.mount_point == stage_.dir) {
      EXPECT_EQ(m.fs_type, "tmpfs");
      huge_tmpfs = m.super_options.find("huge=within_size") != std::string::npos;
    }
  }
  EXPECT_TRUE(huge_tmpfs) << "no tmpfs with huge=within_size on " << stage_.dir;

  // A sandbox holding the old copy (as a bind mount does) keeps it whole.
  base::UniqueFd old(open(staged->c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(old.valid());
  std::string other = tmp_.path() + "/other";
  std::ofstream(other) << "#!/bin/sh\necho other\n";
  auto again = StageEnvd(other, stage_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Slurp(*again), "#!/bin/sh\necho other\n");
  struct stat st {};
  ASSERT_EQ(fstat(old.get(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(Slurp(WARREN_ENVD_BIN).size()));
  // Nothing but the copy is left in its directory (no temporary file).
  auto entries = std::filesystem::directory_iterator(stage_.dir + "/agent1");
  EXPECT_EQ(std::distance(entries, std::filesystem::directory_iterator()), 1);

  UnstageEnvd(stage_);
  EXPECT_NE(access((stage_.dir + "/agent1").c_str(), F_OK), 0) << "its directory stayed";
}

TEST_F(EnvdStageTest, WhatCannotBeCopiedIsAnErrorNamingItAndLeavesNothing) {
  stage_.max_bytes = 1 << 20;
  auto big = StageEnvd(WARREN_ENVD_BIN, stage_);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(big.status().message().find("MiB"), std::string::npos) << big.status();
  EXPECT_NE(big.status().message().find(WARREN_ENVD_BIN), std::string::npos) << big.status();

  auto missing = StageEnvd(tmp_.path() + "/no-such-envd", stage_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such-envd"), std::string::npos);

  stage_.name = "../escape";
  auto bad = StageEnvd(WARREN_ENVD_BIN, stage_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(access((tmp_.path() + "/escape").c_str(), F_OK), 0);
}

// The point of the copy: envd's text is mapped a huge page at a time (ShmemPmdMapped), so a
// sandbox start faults a few pages of it instead of hundreds.
TEST_F(EnvdStageTest, EnvdStartedFromTheCopyHasItsTextInHugePages) {
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  if (Slurp("/sys/kernel/mm/transparent_hugepage/shmem_enabled").find("[deny]") !=
      std::string::npos) {
    GTEST_SKIP() << "huge pages are denied to every tmpfs on this host (shmem_enabled: deny)";
  }
  const long fallbacks_before = VmStat("thp_file_fallback");
  auto staged = StageEnvd(WARREN_ENVD_BIN, stage_);
  ASSERT_TRUE(staged.ok()) << staged.status();
  if (VmStat("thp_file_fallback") > fallbacks_before) {
    // A fragmented host has no free 2 MiB page to give: the copy works, in small pages.
    GTEST_SKIP() << "the kernel had no huge page free for the copy (thp_file_fallback rose)";
  }
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(staged->c_str(), "warren-envd", "--listen", "127.0.0.1:0", "--log-level", "off", nullptr);
    _exit(127);
  }
  // The text mapping starts on a 2 MiB boundary (the link's max-page-size) and every whole
  // 2 MiB of it is one huge page; a binary linked with 4 KiB alignment gets only the inner ones.
  long pmd_kib = 0;
  unsigned long start = 0, end = 0;
  std::string seen;  // the text mapping's smaps lines, for the failure message
  for (int i = 0; i < 200 && pmd_kib == 0; ++i) {
    seen.clear();
    std::this_thread::sleep_for(10ms);
    std::ifstream smaps(fmt::format("/proc/{}/smaps", pid));
    std::string line;
    bool in_text = false;
    while (std::getline(smaps, line)) {
      // A mapping's first line ("600000-c04000 r-xp … path") has no colon before its first
      // space; its field lines ("Rss:  6144 kB") do.
      if (line.find(' ') < line.find(':')) {
        in_text =
            line.find(" r-xp ") != std::string::npos && line.find(*staged) != std::string::npos;
        if (in_text) std::sscanf(line.c_str(), "%lx-%lx", &start, &end);
      }
      if (in_text) seen += line + "\n";
      if (!in_text) {
      } else if (in_text && line.starts_with("ShmemPmdMapped:")) {
        pmd_kib += std::stol(line.substr(line.find(':') + 1));
      }
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  UnstageEnvd(stage_);
  constexpr unsigned long kHuge = 2ul << 20;
  ASSERT_GT(end, start) << "no text mapping of " << *staged;
  EXPECT_EQ(start % kHuge, 0u) << "envd's text does not start on a 2 MiB boundary";
  EXPECT_EQ(pmd_kib, static_cast<long>((end - start) / kHuge * kHuge >> 10))
      << "envd's text from " << *staged << " is not all in huge pages:\n"
      << seen;
}

}  // namespace
}  // namespace warren::node

// A thread's priority lowered for a scope, and only that thread's.
#include "os/thread_priority.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace warren::os {
namespace {

int NiceOf(pid_t tid) {
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, tid);
  EXPECT_EQ(errno, 0);
  return nice;
}
pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

TEST(ScopedThreadNiceTest, LowersOnlyThisThreadForTheScopeAndRestores) {
  if (geteuid() != 0) GTEST_SKIP() << "raising a priority back needs CAP_SYS_NICE (root)";
  const int before = NiceOf(Tid());
  if (before > 19 - kBackgroundNiceIncrement) GTEST_SKIP() << "already at nice " << before;
  {
    ScopedThreadNice guard(kBackgroundNiceIncrement);
    ASSERT_TRUE(guard.lowered());
    EXPECT_EQ(NiceOf(Tid()), before + kBackgroundNiceIncrement);
    EXPECT_EQ(NiceOutsideGuard(), before);
    {
      ScopedThreadNice nested(kBackgroundNiceIncrement);  // does not add up
      EXPECT_FALSE(nested.lowered());
      EXPECT_EQ(NiceOf(Tid()), before + kBackgroundNiceIncrement);
    }
    EXPECT_EQ(NiceOf(Tid()), before + kBackgroundNiceIncrement);
    // Another thread of the process keeps its own priority, and sees no guard.
    int other = -100;
    bool other_guarded = true;
    std::thread t([&] {
      other = NiceOf(Tid());
      other_guarded = NiceOutsideGuard().has_value();
    });
    t.join();
    EXPECT_EQ(other, before + kBackgroundNiceIncrement)
        << "a thread started inside the guard inherits it (Linux): what processes started "
           "inside one get back through NiceOutsideGuard";
    EXPECT_FALSE(other_guarded);
  }
  EXPECT_EQ(NiceOf(Tid()), before);
  EXPECT_FALSE(NiceOutsideGuard().has_value());
}

TEST(ScopedThreadNiceTest, ThreadsStartedOutsideAGuardAreUntouched) {
  if (geteuid() != 0) GTEST_SKIP() << "raising a priority back needs CAP_SYS_NICE (root)";
  const int before = NiceOf(Tid());
  std::atomic<pid_t> other_tid{0};
  std::atomic<bool> release{false};
  std::thread t([&] {
    other_tid = Tid();
    while (!release) std::this_thread::yield();
  });
  while (other_tid == 0) std::this_thread::yield();
  {
    ScopedThreadNice guard(kBackgroundNiceIncrement);
    EXPECT_EQ(NiceOf(other_tid), before);
  }
  release = true;
  t.join();
}

// Without CAP_SYS_NICE a thread could lower itself but never come back. Run in a copy of this
// test binary that drops the capability before anything in it asks whether it can restore
// (the answer is kept for the process).
TEST(ScopedThreadNiceTest, DoesNothingWhenThePriorityCouldNotBeTakenBack) {
  const bool in_copy = getenv("WARREN_TEST_WITHOUT_SYS_NICE") != nullptr;
  if (!in_copy && geteuid() == 0) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("WARREN_TEST_WITHOUT_SYS_NICE", "1", 1);
      execl("/proc/self/exe", "thread_priority_test",
            "--gtest_filter=ScopedThreadNiceTest.DoesNothingWhenThePriorityCouldNotBeTakenBack",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the copy without CAP_SYS_NICE failed (its output above)";
    return;
  }
  if (in_copy) {
    cap_t caps = cap_get_proc();
    ASSERT_NE(caps, nullptr);
    cap_value_t nice_cap = CAP_SYS_NICE;
    ASSERT_EQ(cap_set_flag(caps, CAP_EFFECTIVE, 1, &nice_cap, CAP_CLEAR), 0);
    ASSERT_EQ(cap_set_flag(caps, CAP_PERMITTED, 1, &nice_cap, CAP_CLEAR), 0);
    ASSERT_EQ(cap_set_proc(caps), 0);
    cap_free(caps);
  }
  const int before = NiceOf(Tid());
  {
    ScopedThreadNice guard(kBackgroundNiceIncrement);
    EXPECT_FALSE(guard.lowered());
    EXPECT_EQ(NiceOf(Tid()), before);
    EXPECT_FALSE(NiceOutsideGuard().has_value());
  }
  EXPECT_EQ(NiceOf(Tid()), before);
}

}  // namespace
}  // namespace warren::os

#pragma once

#include <chrono>
#include <thread>

namespace warren::controller::testing {

// Polls `f` every 5 ms until it returns true or `timeout` has passed, and returns its last answer.
// The controllers work on their own threads, so tests wait for what a user would see; the
// default is generous because the machine is shared and slow at times.
template <class F>
bool Eventually(F f, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

}  // namespace warren::controller::testing

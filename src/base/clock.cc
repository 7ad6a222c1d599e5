#include "base/clock.h"

namespace warren::base {
namespace {

class SystemClock final : public Clock {
 public:
  WallTime Now() const override { return std::chrono::system_clock::now(); }
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

Clock& RealClock() {
  static SystemClock* clock = new SystemClock();  // Leaked on purpose: usable during exit.
  return *clock;
}

}  // namespace warren::base

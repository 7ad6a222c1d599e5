#include "common/stop_signal.h"

#include <signal.h>

#include <atomic>

namespace warren::bench {
namespace {

std::atomic<int> g_signal{0};

void OnStopSignal(int signo) {
  g_signal.store(signo);
  // The next one kills: a bench stuck in a step can still be stopped.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(signo, &dfl, nullptr);
}

}  // namespace

void InstallStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // library calls in progress carry on; the bench checks between steps
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &sa, nullptr);
}

bool StopRequested() { return g_signal.load() != 0; }

int StoppedExitCode() { return 128 + g_signal.load(); }

}  // namespace warren::bench

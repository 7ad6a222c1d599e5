// envd_start: how long warren-envd takes from spawn (vfork + exec) to accepting a TCP connection,
// started from the file as built, from a copy on a plain tmpfs, and from the node agent's copy on a
// tmpfs with huge pages (node/envd_stage.h); beside a static program that only listens, started
// the same way in the same run. README.md, "envd's start".
//
//   sudo build/release/bench/envd/envd_start [--n 200]
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "base/scope_guard.h"
#include "base/testing/free_port.h"
#include "base/testing/temp_dir.h"
#include "base/unique_fd.h"
#include "cold_create/stats.h"
#include "common/stop_signal.h"
#include "node/envd_stage.h"
#include "os/tmpfs.h"

namespace {

using Clock = std::chrono::steady_clock;

bool Accepts(uint16_t port) {
  warren::base::UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
}

// One start: ms from spawn to the first accepted connection, or a negative value when the
// program ended or never listened within 5 s.
double StartOnce(const std::vector<std::string>& argv, uint16_t port) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // posix_spawn (a vfork): a fork would copy this bench's page tables first, which on a VM
  // costs more than the start being measured.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  auto t0 = Clock::now();
  pid_t pid = -1;
  int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  double ms = -1;
  while (Clock::now() - t0 < std::chrono::seconds(5)) {
    if (Accepts(port)) {
      ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      break;
    }
    if (waitpid(pid, nullptr, WNOHANG) == pid) return -1;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace warren;
  bench::InstallStopSignals();
  CLI::App app{"warren-envd's exec → listen, by where its file is"};
  int n = 200;
  std::string envd = WARREN_ENVD_BIN;
  app.add_option("--n", n, "starts of each");
  app.add_option("--envd", envd, "the warren-envd binary");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    fmt::print("envd_start: needs root (mounts tmpfs); skipped\n");
    return 77;
  }

  base::testing::TempDir tmp;
  node::EnvdStage huge{.dir = tmp.path() + "/huge", .name = "bench"};
  node::EnvdStage small{.dir = tmp.path() + "/plain", .name = "bench"};
  auto unmount = base::ScopeExit([&] {
    umount2(huge.dir.c_str(), MNT_DETACH);
    umount2(small.dir.c_str(), MNT_DETACH);
  });
  auto staged = node::StageEnvd(envd, huge);
  if (!staged.ok()) {
    fmt::print(stderr, "envd_start: {}\n", staged.status().ToString());
    return 1;
  }
  // The same copy on a tmpfs without huge pages, what the memory alone does: mounted first, so
  // StageEnvd finds a tmpfs there and keeps its options.
  auto plain_mount = os::EnsureOwnTmpfs(small.dir, 0755, "size=64m,huge=never");
  auto plain = plain_mount.ok() ? node::StageEnvd(envd, small) : plain_mount.status();
  if (!plain.ok()) {
    fmt::print(stderr, "envd_start: {}\n", plain.status().ToString());
    return 1;
  }

  struct Variant {
    std::string label;
    std::string binary;
    bool reference = false;
    std::vector<double> ms;
  };
  std::vector<Variant> variants = {
      {"warren-envd as built", envd},
      {"warren-envd, copy on a plain tmpfs", *plain},
      {"warren-envd, node agent's copy", *staged},
      {"reference: static listen only", REFERENCE_LISTENER_BIN, true},
  };
  // Interleaved, so a noisy moment of the host falls on every variant alike.
  for (int i = 0; i < n && !bench::StopRequested(); ++i) {
    for (auto& v : variants) {
      // A port taken between FreePort and the start makes the program exit: tried again.
      double ms = -1;
      for (int attempt = 0; attempt < 3 && ms < 0; ++attempt) {
        const uint16_t port = base::testing::FreeLoopbackPort();
        std::vector<std::string> args =
            v.reference ? std::vector<std::string>{v.binary, std::to_string(port)}
                        : std::vector<std::string>{v.binary, "--log-level", "off", "--listen",
                                                   fmt::format("127.0.0.1:{}", port)};
        if (port != 0) ms = StartOnce(args, port);
      }
      if (ms < 0) {
        fmt::print(stderr, "envd_start: {} did not listen (3 ports tried)\n", v.binary);
        return 1;
      }
      v.ms.push_back(ms);
    }
  }
  if (bench::StopRequested()) return bench::StoppedExitCode();
  fmt::print("envd_start: posix_spawn → first accepted connection, {} starts each, interleaved\n",
             n);
  fmt::print("  {:<34} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "ms", "n", "min", "p50", "p90",
             "p99", "max");
  for (const auto& v : variants)
    fmt::print("{}\n", bench::FormatRow(v.label, bench::Summarize(v.ms)));
  return 0;
}

#include "redis_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "base/check.h"
#include "base/testing/free_port.h"

namespace warren::testing {
namespace {

bool Accepts(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

}  // namespace

RedisProcess::RedisProcess() : port_(base::testing::FreeLoopbackPort()) { Start(); }

RedisProcess::~RedisProcess() { Kill(); }

void RedisProcess::Start() {
  CHECK(pid_ <= 0);
  std::string port = std::to_string(port_);
  pid_ = fork();
  CHECK(pid_ >= 0);
  if (pid_ == 0) {
    // Its banner and warnings (overcommit) are not the test's output.
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) {
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    execl("/usr/bin/redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
          "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!Accepts(port_)) {
    int status = 0;
    CHECK_MSG(waitpid(pid_, &status, WNOHANG) == 0, "redis-server exited at start");
    CHECK_MSG(std::chrono::steady_clock::now() < deadline, "redis-server did not listen");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void RedisProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace warren::testing

// warren_sandbox_probe: what a sandboxed program can do that busybox cannot show. Linked
// statically and bind-mounted into sandboxes by the security tests. One line per probe on
// stdout: "<probe> ok", "<probe> errno=<n>", or "<probe> unavailable".
//
//   warren_sandbox_probe socket <family>        socket(family, SOCK_STREAM, 0), x86_64 ABI
//   warren_sandbox_probe i386-socketcall <fam>  socketcall(SYS_SOCKET, {fam, ...}) via int $0x80
//   warren_sandbox_probe i386-socket <family>   socket(family, ...) via int $0x80 (nr 359)
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// An i386 system call from 64-bit code: int $0x80 takes the 32-bit table, and seccomp sees
// AUDIT_ARCH_I386 as for a 32-bit binary. Returns -errno on failure.
long I386Syscall(long nr, long a, long b, long c) {
  long ret;
  asm volatile("int $0x80"
               : "=a"(ret)
               : "a"(nr), "b"(a), "c"(b), "d"(c)
               : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

void Report(const char* probe, long rc) {
  if (rc >= 0) {
    printf("%s ok\n", probe);
    close(static_cast<int>(rc));
  } else {
    printf("%s errno=%ld\n", probe, -rc);
  }
}

// Runs an i386 call in a child: a kernel without the 32-bit entry kills it (SIGSEGV).
void I386Probe(const char* probe, long nr, long family, bool socketcall) {
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    long rc;
    if (socketcall) {
      void* low = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
      if (low == MAP_FAILED) _exit(2);
      auto* args = static_cast<uint32_t*>(low);
      args[0] = static_cast<uint32_t>(family);
      args[1] = SOCK_STREAM;
      args[2] = 0;
      rc = I386Syscall(nr, 1 /* SYS_SOCKET */, static_cast<long>(reinterpret_cast<uintptr_t>(low)),
                       0);
    } else {
      rc = I386Syscall(nr, family, SOCK_STREAM, 0);
    }
    Report(probe, rc);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status)) printf("%s unavailable\n", probe);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s socket|i386-socketcall|i386-socket FAMILY\n", argv[0]);
    return 2;
  }
  long family = strtol(argv[2], nullptr, 10);
  if (strcmp(argv[1], "socket") == 0) {
    int fd = socket(static_cast<int>(family), SOCK_STREAM, 0);
    Report("socket", fd >= 0 ? fd : -errno);
  } else if (strcmp(argv[1], "i386-socketcall") == 0) {
    I386Probe("i386-socketcall", 102, family, true);
  } else if (strcmp(argv[1], "i386-socket") == 0) {
    I386Probe("i386-socket", 359, family, false);
  } else {
    fprintf(stderr, "unknown probe %s\n", argv[1]);
    return 2;
  }
  return 0;
}

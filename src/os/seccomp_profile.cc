#include "os/seccomp_profile.h"

#include <errno.h>
#include <linux/btrfs.h>

namespace warren::os {

namespace {

SeccompProfile BuildDockerDefault() {
  SeccompProfile profile;
  SeccompProfile* p = &profile;
  p->default_errno = EPERM;
  p->rules.push_back(SeccompRule{
      {"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat", "capget",
       "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64",
       "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64", "clock_nanosleep",
       "clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat",
       "dup", "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old",
       "epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2",
       "execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64",
       "fadvise64_64", "fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2",
       "fchown", "fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr",
       "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs",
       "fstatfs64", "fsync", "ftruncate", "ftruncate64", "futex", "futex_requeue", "futex_time64",
       "futex_wait", "futex_waitv", "futex_wake", "futimesat", "getcpu", "getcwd", "getdents",
       "getdents64", "getegid", "getegid32", "geteuid", "geteuid32", "getgid", "getgid32",
       "getgroups", "getgroups32", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid",
       "getppid", "getpriority", "getrandom", "getresgid", "getresgid32", "getresuid",
       "getresuid32", "getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname",
       "getsockopt", "get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32", "getxattr",
       "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel",
       "ioctl", "io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64", "ioprio_get",
       "ioprio_set", "io_setup", "io_submit", "kill", "landlock_add_rule",
       "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lchown32", "lgetxattr",
       "link", "linkat", "listen", "listxattr", "llistxattr", "_llseek", "lremovexattr", "lseek",
       "lsetxattr", "lstat", "lstat64", "madvise", "map_shadow_stack", "membarrier", "memfd_create",
       "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2",
       "mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open",
       "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64",
       "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock",
       "munlockall", "munmap", "name_to_handle_at", "nanosleep", "newfstatat", "_newselect", "open",
       "openat", "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
       "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl",
       "pread64", "preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6",
       "pselect6_time64", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink",
       "readlinkat", "readv", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg",
       "remap_file_pages", "removexattr", "rename", "renameat", "renameat2", "restart_syscall",
       "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
       "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64",
       "rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr", "sched_getparam",
       "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
       "sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity",
       "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
       "semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile",
       "sendfile64", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid",
       "setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32", "setitimer", "setpgid",
       "setpriority", "setregid", "setregid32", "setresgid", "setresgid32", "setresuid",
       "setresuid32", "setreuid", "setreuid32", "setrlimit", "set_robust_list", "setsid",
       "setsockopt", "set_thread_area", "set_tid_address", "setuid", "setuid32", "setxattr",
       "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4",
       "sigprocmask", "sigreturn", "socketpair", "splice", "stat", "stat64", "statfs", "statfs64",
       "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee",
       "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
       "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create", "timerfd_gettime",
       "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
       "truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat",
       "utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid", "waitpid", "write",
       "writev",
       // x86 specifics.
       "arch_prctl", "modify_ldt",
       // Granted by default since kernel 4.8 closed the seccomp bypass through ptrace.
       "ptrace", "process_vm_readv", "process_vm_writev",
       // CAP_SYS_CHROOT is in the default capability set.
       "chroot"},
      {},
      0});
  // personality(): only the personas Docker allows (PER_LINUX, PER_LINUX32, UNAME26
  // variants, and the query 0xffffffff).
  for (uint64_t persona : {0x0ull, 0x8ull, 0x20000ull, 0x20008ull, 0xffffffffull}) {
    p->rules.push_back(SeccompRule{{"personality"}, {{0, SeccompOp::kEqual, persona, 0}}, 0});
  }
  // socket(): anything but AF_VSOCK (40), which would reach the host's vsock.
  p->rules.push_back(SeccompRule{{"socket"}, {{0, SeccompOp::kNotEqual, 40, 0}}, 0});
  // clone(): no CLONE_NEW* flag (namespaces need CAP_SYS_ADMIN, which we do not grant).
  p->rules.push_back(SeccompRule{{"clone"}, {{0, SeccompOp::kMaskedEqual, 0, 0x7E020000ull}}, 0});
  // clone3() passes its flags in memory seccomp cannot read: answer ENOSYS so libc falls
  // back to clone().
  p->rules.push_back(SeccompRule{{"clone3"}, {}, ENOSYS});
  // i386 ipc(call, ...): the SysV operations the allowlist grants directly (semop 1, semget 2,
  // semctl 3, semtimedop 4, msgsnd 11, msgrcv 12, msgget 13, msgctl 14, shmat 21, shmdt 22,
  // shmget 23, shmctl 24); the high 16 bits of `call` carry an ABI version. Nothing on x86_64.
  for (uint64_t call : {1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24}) {
    p->rules.push_back(SeccompRule{{"ipc"}, {{0, SeccompOp::kMaskedEqual, call, 0xffff}}, 0});
  }
  // socketcall(SYS_SOCKET = 1, args): refused before libseccomp's own socketcall rules.
  p->i386_first.push_back(SeccompRule{{"socketcall"}, {{0, SeccompOp::kEqual, 1, 0}}, EPERM});
  // ioctl(fd, BTRFS_IOC_{SNAP,SUBVOL}_CREATE{,_V2}): EPERM, as for a caller without the right.
  for (uint64_t request : {BTRFS_IOC_SNAP_CREATE, BTRFS_IOC_SUBVOL_CREATE, BTRFS_IOC_SNAP_CREATE_V2,
                           BTRFS_IOC_SUBVOL_CREATE_V2}) {
    p->native_first.push_back(SeccompRule{{"ioctl"}, {{1, SeccompOp::kEqual, request, 0}}, EPERM});
    p->i386_first.push_back(SeccompRule{{"ioctl"}, {{1, SeccompOp::kEqual, request, 0}}, EPERM});
  }
  return profile;
}

}  // namespace

const SeccompProfile& DockerDefaultSeccompProfile() {
  static const SeccompProfile profile = BuildDockerDefault();
  return profile;
}

}  // namespace warren::os

#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace warren::store::testing {

// A real etcd cluster started by a test: `members` etcd processes on free 127.0.0.1 ports, their
// data in a fresh directory under /dev/shm (tmpfs: an fsync costs nothing, so tests stay fast;
// durability across a lost member comes from the others, which is what the tests look at).
// The constructor waits until every member answers; CHECK-fails when etcd cannot start (a broken
// test environment, not a test result). The destructor kills each member by its pid (SIGKILL)
// and removes the data; members also die with the thread that started them (PR_SET_PDEATHSIG),
// so a crashed test leaves none behind: create clusters on the test's main thread. Not
// thread-safe.
class EtcdCluster {
 public:
  // `parent_dir`: where the data directory is made (a disk path to measure etcd's fsyncs).
  explicit EtcdCluster(int members = 1, const std::string& parent_dir = "/dev/shm");
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // "127.0.0.1:port" of each member's client URL.
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  // "etcd://a,b,c/prefix".
  std::string Url(const std::string& prefix = "/warren") const;
  // Kills member `index` with SIGKILL (a lost machine) and reaps it.
  void Kill(int index);
  pid_t pid(int index) const { return pids_[index]; }
  // Starts a killed member again on its data (it rejoins and catches up) and waits for it.
  void Restart(int index);

 private:
  pid_t Spawn(int index);

  std::string dir_;
  std::vector<std::vector<std::string>> args_;  // each member's command line
  std::vector<std::string> endpoints_;
  std::vector<pid_t> pids_;  // 0 once killed
};

}  // namespace warren::store::testing

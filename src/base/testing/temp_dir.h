#pragma once

#include <string>

namespace warren::base::testing {

// A fresh directory under $TMPDIR (default /tmp), removed with everything in it when destroyed.
// CHECK-fails when it cannot be made: tests only. Not thread-safe.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace warren::base::testing

#pragma once

#include <string>

#include "base/result.h"
#include "image/file_lock.h"

namespace warren::image {

// A private directory under the store's staging/ for one import or one collection. It is locked
// (<id>.lock) for as long as the object lives, so a cleaner can tell a live one from the remains
// of a crash (ImageStore removes those it can lock). Destruction removes the directory and
// everything left in it. Move-only; one owner.
class Staging {
 public:
  static Result<Staging> Create(const std::string& staging_root);
  Staging() = default;
  Staging(Staging&&) noexcept = default;
  Staging& operator=(Staging&&) = delete;
  ~Staging();

  const std::string& id() const { return id_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string id_;
  std::string dir_;
  FileLock lock_;
};

}  // namespace warren::image

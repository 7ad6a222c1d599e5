#include "base/dir_names.h"

#include <dirent.h>

#include <algorithm>
#include <memory>

namespace warren::base {

std::vector<std::string> DirNames(const std::string& dir) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), &closedir);
  if (d == nullptr) return out;
  while (dirent* e = readdir(d.get())) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(std::move(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace warren::base

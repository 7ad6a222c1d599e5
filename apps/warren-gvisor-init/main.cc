// warren-gvisor-init: both halves of a gVisor sandbox's channel (runtime/gvisor/README.md).
//   warren-gvisor-init init [--unset NAME]... -- <command...>   pid 1 inside the sandbox
//   warren-gvisor-init shim --dir D --log F -- <runsc command...>   on the host, per sandbox
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "runtime/gvisor/mux_init.h"
#include "runtime/gvisor/mux_shim.h"

namespace {

int Usage() {
  fprintf(stderr,
          "usage: warren-gvisor-init init [--unset NAME]... -- <command...>\n"
          "       warren-gvisor-init shim --dir <dir> --log <file> -- <runsc command...>\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("warren-gvisor-init 1\n");
    return 0;
  }
  if (argc < 3) return Usage();
  std::string mode = argv[1];
  std::string dir, log;
  std::vector<std::string> unset;
  int i = 2;
  for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
    if (i + 1 >= argc) return Usage();
    if (strcmp(argv[i], "--dir") == 0) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--log") == 0) {
      log = argv[++i];
    } else if (strcmp(argv[i], "--unset") == 0) {
      unset.emplace_back(argv[++i]);
    } else {
      return Usage();
    }
  }
  if (i >= argc) return Usage();
  std::vector<char*> command(argv + i + 1, argv + argc);
  command.push_back(nullptr);
  using namespace warren::runtime::gvisor::mux;
  if (mode == "init") return RunInit(command, unset);
  if (mode == "shim" && !dir.empty()) return RunShim(dir, log, command);
  return Usage();
}

#pragma once

#include <memory>
#include <mutex>
#include <string_view>

#include "base/result.h"

struct nft_ctx;

namespace warren::sbnet {

// libnftables in this process: commands go to the kernel over netlink without running `nft`.
// Each Run is one transaction (all of it or none). Thread-safe.
class Nftables {
 public:
  static Result<std::unique_ptr<Nftables>> Create();
  ~Nftables();
  Nftables(const Nftables&) = delete;
  Nftables& operator=(const Nftables&) = delete;

  // Internal error carrying libnftables' own message (which quotes the failing line).
  Status Run(std::string_view commands);

 private:
  explicit Nftables(nft_ctx* ctx) : ctx_(ctx) {}
  std::mutex mu_;
  nft_ctx* ctx_;  // guarded by mu_
};

}  // namespace warren::sbnet

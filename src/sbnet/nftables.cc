#include "sbnet/nftables.h"

#include <fmt/format.h>
#include <nftables/libnftables.h>

#include <string>

#include "base/result.h"

namespace warren::sbnet {

Result<std::unique_ptr<Nftables>> Nftables::Create() {
  nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (ctx == nullptr) return InternalError("libnftables: cannot make a context");
  nft_ctx_buffer_output(ctx);
  nft_ctx_buffer_error(ctx);
  return std::unique_ptr<Nftables>(new Nftables(ctx));
}

Nftables::~Nftables() { nft_ctx_free(ctx_); }

Status Nftables::Run(std::string_view commands) {
  std::string text(commands);
  std::lock_guard lock(mu_);
  if (nft_run_cmd_from_buffer(ctx_, text.c_str()) == 0) return Status::Ok();
  std::string err = nft_ctx_get_error_buffer(ctx_);
  while (!err.empty() && err.back() == '\n') err.pop_back();
  if (err.find("Operation not permitted") != std::string::npos) {
    return PermissionDeniedError("nftables: " + err + " (sandbox networking needs root)");
  }
  return InternalError("nftables: " + err);
}

}  // namespace warren::sbnet

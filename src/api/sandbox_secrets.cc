#include "api/sandbox_secrets.h"

#include <fmt/format.h>

#include "api/types/labels.h"

namespace warren::api {
namespace {

std::string Context(const Object& sandbox, const char* key) {
  return fmt::format("{}/{}/{}", sandbox.metadata.namespace_, sandbox.metadata.name, key);
}

}  // namespace

Result<std::string> SandboxSecrets::Read(const Object& sandbox, const char* key) const {
  auto it = sandbox.metadata.annotations.find(key);
  if (it == sandbox.metadata.annotations.end()) return std::string();
  auto opened = box_.Open(it->second, Context(sandbox, key));
  if (!opened.ok()) {
    return DataLossError(fmt::format("annotation {} of sandbox {}/{} does not open: {}", key,
                                     sandbox.metadata.namespace_, sandbox.metadata.name,
                                     opened.status().message()));
  }
  return opened;
}

void SandboxSecrets::Write(Object& sandbox, const char* key, std::string_view value) const {
  if (value.empty()) {
    sandbox.metadata.annotations.erase(key);
    return;
  }
  sandbox.metadata.annotations[key] = box_.Seal(value, Context(sandbox, key));
}

Result<std::string> SandboxSecrets::AccessToken(const Object& sandbox) const {
  return Read(sandbox, annotations::kSealedAccessToken);
}

Result<std::string> SandboxSecrets::InitRequest(const Object& sandbox) const {
  return Read(sandbox, annotations::kSealedInitRequest);
}

std::string SandboxSecrets::VolumeToken(const Object& volume) const {
  return "vol_" + box_.Token("volume-content/" + volume.metadata.uid);
}

Result<std::string> SandboxSecrets::TrafficToken(const Object& sandbox) const {
  return Read(sandbox, annotations::kSealedTrafficToken);
}

void SandboxSecrets::SetTrafficToken(Object& sandbox, std::string_view token) const {
  Write(sandbox, annotations::kSealedTrafficToken, token);
}

void SandboxSecrets::SetAccessToken(Object& sandbox, std::string_view token) const {
  Write(sandbox, annotations::kSealedAccessToken, token);
}

void SandboxSecrets::SetInitRequest(Object& sandbox, std::string_view body) const {
  Write(sandbox, annotations::kSealedInitRequest, body);
}

void SandboxSecrets::Forget(Object& sandbox) const {
  sandbox.metadata.annotations.erase(annotations::kSealedAccessToken);
  sandbox.metadata.annotations.erase(annotations::kSealedInitRequest);
  sandbox.metadata.annotations.erase(annotations::kSealedTrafficToken);
}

bool SandboxSecrets::SealPlainText(Object& sandbox) const {
  bool changed = false;
  auto& ann = sandbox.metadata.annotations;
  for (auto [plain, sealed] :
       {std::pair{annotations::kRuntimeAccessToken, annotations::kSealedAccessToken},
        std::pair{annotations::kInitRuntimeRequest, annotations::kSealedInitRequest}}) {
    auto it = ann.find(plain);
    if (it == ann.end()) continue;
    std::string value = std::move(it->second);
    ann.erase(it);
    if (!ann.contains(sealed)) Write(sandbox, sealed, value);
    changed = true;
  }
  return changed;
}

}  // namespace warren::api

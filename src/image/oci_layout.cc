#include "image/oci_layout.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>

#include "base/strings.h"
#include "image/reference.h"
#include "image/safe_fs.h"

namespace warren::image {
namespace {

constexpr int kMaxIndexDepth = 4;

std::string BlobPath(const Digest& digest) { return "blobs/sha256/" + digest.hex(); }

// The name an index entry gives its image, if it is a full reference.
std::string NameHint(const Descriptor& d) {
  for (auto key : {kAnnotationContainerdName, kAnnotationRefName}) {
    auto it = d.annotations.find(std::string(key));
    if (it == d.annotations.end()) continue;
    // A bare tag ("latest", as the spec suggests for ref.name) does not name an image.
    if (it->second.find(':') == std::string::npos) continue;
    auto ref = ParseImageRef(it->second);
    if (ref.ok()) return ref->ToString();
  }
  return "";
}

bool Matches(const Descriptor& d, std::string_view want) {
  auto want_ref = ParseImageRef(want);
  for (auto key : {kAnnotationContainerdName, kAnnotationRefName}) {
    auto it = d.annotations.find(std::string(key));
    if (it == d.annotations.end()) continue;
    if (it->second == want) return true;
    auto ref = ParseImageRef(it->second);
    if (want_ref.ok() && ref.ok() && *ref == *want_ref) return true;
  }
  return false;
}

bool IsHostPlatform(const Descriptor& d) {
  return d.platform.has_value() && d.platform->os == "linux" && d.platform->architecture == "amd64";
}

}  // namespace

Result<OciLayout> OciLayout::Open(const std::string& dir) {
  int raw = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return ErrnoError(fmt::format("opening image layout '{}'", dir), errno);
  base::UniqueFd fd(raw);
  if (faccessat(fd.get(), "index.json", F_OK, 0) != 0) {
    return InvalidArgumentError(
        fmt::format("'{}' is not an OCI image layout: it has no index.json", dir));
  }
  return OciLayout(dir, std::move(fd));
}

Result<std::string> OciLayout::ReadBlob(const Descriptor& d, size_t max_bytes) const {
  if (d.size < 0 || static_cast<uint64_t>(d.size) > max_bytes) {
    return InvalidArgumentError(fmt::format("blob {} declares {} bytes, over the limit of {}",
                                            d.digest.ToString(), d.size, max_bytes));
  }
  auto data = ReadFileLimited(dir_.get(), BlobPath(d.digest), max_bytes);
  if (!data.ok()) {
    return data.status().WithPrefix(fmt::format("blob {} of '{}'", d.digest.ToString(), path_));
  }
  Sha256Stream hasher;
  hasher.Update(*data);
  Digest got = hasher.Finish();
  if (got != d.digest) {
    return DataLossError(fmt::format("blob {} does not match its digest: it hashes to {}",
                                     d.digest.ToString(), got.ToString()));
  }
  if (data->size() != static_cast<size_t>(d.size)) {
    return DataLossError(fmt::format("blob {} is {} bytes, its descriptor says {}",
                                     d.digest.ToString(), data->size(), d.size));
  }
  return data;
}

Result<base::UniqueFd> OciLayout::OpenBlob(const Digest& digest) const {
  int raw = openat(dir_.get(), BlobPath(digest).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (raw < 0) {
    return ErrnoError(fmt::format("blob {} of '{}'", digest.ToString(), path_), errno);
  }
  base::UniqueFd fd(raw);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError("stat blob", errno);
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(fmt::format("blob {} is not a regular file", digest.ToString()));
  }
  return fd;
}

Result<SelectedImage> OciLayout::Select(std::string_view want) const {
  auto index_text = ReadFileLimited(dir_.get(), "index.json", kMaxManifestBytes);
  if (!index_text.ok()) return index_text.status().WithPrefix(path_);
  ASSIGN_OR_RETURN(Index index, ParseIndex(*index_text, "index.json"));

  // Flatten nested indexes into the image manifests they list, keeping the outer annotations
  // as the name source when the inner entry has none.
  struct Candidate {
    Descriptor descriptor;
    std::string name_hint;
    bool matches = false;
  };
  std::vector<Candidate> candidates;
  struct Pending {
    Descriptor descriptor;
    int depth;
    std::string hint;
    bool matches;
  };
  std::deque<Pending> pending;  // In index order, so errors and choices follow the file.
  for (const auto& d : index.manifests) {
    pending.push_back({d, 0, NameHint(d), !want.empty() && Matches(d, want)});
  }
  while (!pending.empty()) {
    Pending p = std::move(pending.front());
    pending.pop_front();
    std::string media_type = p.descriptor.media_type;
    if (IsIndexMediaType(media_type)) {
      if (p.depth >= kMaxIndexDepth) {
        return InvalidArgumentError(
            fmt::format("index.json: indexes nest deeper than {}", kMaxIndexDepth));
      }
      std::string what = "index " + p.descriptor.digest.ToString();
      ASSIGN_OR_RETURN(std::string text, ReadBlob(p.descriptor, kMaxManifestBytes));
      ASSIGN_OR_RETURN(Index inner, ParseIndex(text, what));
      for (const auto& d : inner.manifests) {
        std::string hint = NameHint(d);
        pending.push_back({d, p.depth + 1, hint.empty() ? p.hint : hint,
                           p.matches || (!want.empty() && Matches(d, want))});
      }
    } else if (IsManifestMediaType(media_type) || media_type.empty()) {
      candidates.push_back({p.descriptor, p.hint, p.matches});
    }
    // Other artifacts (attestations, signatures) are not images: skipped.
  }
  if (candidates.empty()) {
    return InvalidArgumentError(fmt::format("'{}' holds no image manifest", path_));
  }

  std::vector<const Candidate*> chosen;
  if (!want.empty()) {
    for (const auto& c : candidates) {
      if (c.matches) chosen.push_back(&c);
    }
    // A layout with one image may be imported under any name.
    if (chosen.empty() && candidates.size() == 1) chosen.push_back(&candidates[0]);
    if (chosen.empty()) {
      return NotFoundError(fmt::format("'{}' has no image named '{}'", path_, want));
    }
  } else {
    for (const auto& c : candidates) chosen.push_back(&c);
  }
  if (chosen.size() > 1) {
    std::vector<const Candidate*> host;
    for (const auto* c : chosen) {
      if (IsHostPlatform(c->descriptor)) host.push_back(c);
    }
    if (!host.empty()) chosen = host;
  }
  if (chosen.size() > 1) {
    std::vector<std::string> names;
    for (const auto* c : chosen) {
      names.push_back(c->name_hint.empty() ? c->descriptor.digest.ToString() : c->name_hint);
    }
    return InvalidArgumentError(fmt::format("'{}' holds {} images ({}); name the one to import",
                                            path_, chosen.size(), base::Join(names, ", ")));
  }
  return Load(chosen[0]->descriptor, chosen[0]->name_hint);
}

Result<SelectedImage> OciLayout::Load(const Descriptor& manifest_descriptor,
                                      std::string name_hint) const {
  SelectedImage out;
  out.manifest_descriptor = manifest_descriptor;
  out.name_hint = std::move(name_hint);
  std::string what = "manifest " + manifest_descriptor.digest.ToString();
  ASSIGN_OR_RETURN(std::string text, ReadBlob(manifest_descriptor, kMaxManifestBytes));
  ASSIGN_OR_RETURN(out.manifest, ParseManifest(text, what));
  out.config_descriptor = out.manifest.config;
  ASSIGN_OR_RETURN(std::string config_text, ReadBlob(out.manifest.config, kMaxConfigBytes));
  ASSIGN_OR_RETURN(
      out.config, ParseImageConfig(config_text, "config " + out.manifest.config.digest.ToString()));
  if (!out.config.diff_ids.empty() && out.config.diff_ids.size() != out.manifest.layers.size()) {
    return InvalidArgumentError(fmt::format("{}: {} layers but the config lists {} diff_ids", what,
                                            out.manifest.layers.size(),
                                            out.config.diff_ids.size()));
  }
  return out;
}

}  // namespace warren::image

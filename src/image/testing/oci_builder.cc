#include "image/testing/oci_builder.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/check.h"
#include "image/safe_fs.h"

namespace warren::image::testing {
namespace {

using nlohmann::json;

struct WriterDeleter {
  void operator()(struct archive* ar) const { archive_write_free(ar); }
};

la_ssize_t AppendToString(struct archive*, void* out, const void* data, size_t size) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(data), size);
  return static_cast<la_ssize_t>(size);
}

json DescriptorJson(const Descriptor& d) {
  json out = {{"mediaType", d.media_type}, {"digest", d.digest.ToString()}, {"size", d.size}};
  if (!d.annotations.empty()) out["annotations"] = d.annotations;
  if (d.platform)
    out["platform"] = {{"os", d.platform->os}, {"architecture", d.platform->architecture}};
  return out;
}

}  // namespace

TarEntry TarEntry::File(std::string path, std::string data, mode_t mode) {
  TarEntry e;
  e.kind = Kind::kFile;
  e.path = std::move(path);
  e.data = std::move(data);
  e.mode = mode;
  return e;
}

TarEntry TarEntry::Dir(std::string path, mode_t mode) {
  TarEntry e;
  e.kind = Kind::kDir;
  e.path = std::move(path);
  e.mode = mode;
  return e;
}

TarEntry TarEntry::Symlink(std::string path, std::string target) {
  TarEntry e;
  e.kind = Kind::kSymlink;
  e.path = std::move(path);
  e.link = std::move(target);
  e.mode = 0777;
  return e;
}

TarEntry TarEntry::Hardlink(std::string path, std::string target) {
  TarEntry e;
  e.kind = Kind::kHardlink;
  e.path = std::move(path);
  e.link = std::move(target);
  return e;
}

TarEntry TarEntry::CharDevice(std::string path, unsigned major, unsigned minor) {
  TarEntry e;
  e.kind = Kind::kCharDevice;
  e.path = std::move(path);
  e.major = major;
  e.minor = minor;
  e.mode = 0666;
  return e;
}

TarEntry TarEntry::Whiteout(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return File(dir + ".wh." + name, "", 0644);
}

TarEntry TarEntry::Opaque(const std::string& dir) { return File(dir + "/.wh..wh..opq", "", 0644); }

std::string LayerMediaType(LayerCompression compression) {
  switch (compression) {
    case LayerCompression::kNone:
      return std::string(kMediaTypeOciLayerTar);
    case LayerCompression::kGzip:
      return std::string(kMediaTypeOciLayerGzip);
    case LayerCompression::kZstd:
      return std::string(kMediaTypeOciLayerZstd);
  }
  return "";
}

std::string BuildTar(const std::vector<TarEntry>& entries, LayerCompression compression) {
  std::unique_ptr<struct archive, WriterDeleter> ar(archive_write_new());
  CHECK(archive_write_set_format_pax_restricted(ar.get()) == ARCHIVE_OK);
  switch (compression) {
    case LayerCompression::kNone:
      CHECK(archive_write_add_filter_none(ar.get()) == ARCHIVE_OK);
      break;
    case LayerCompression::kGzip:
      CHECK(archive_write_add_filter_gzip(ar.get()) == ARCHIVE_OK);
      // Without this the gzip header carries the current time, and the same entries built in
      // two different seconds get two digests.
      CHECK(archive_write_set_filter_option(ar.get(), "gzip", "timestamp", nullptr) == ARCHIVE_OK);
      break;
    case LayerCompression::kZstd:
      CHECK(archive_write_add_filter_zstd(ar.get()) == ARCHIVE_OK);
      break;
  }
  std::string out;
  CHECK(archive_write_set_bytes_in_last_block(ar.get(), 1) == ARCHIVE_OK);
  CHECK(archive_write_open(ar.get(), &out, nullptr, &AppendToString, nullptr) == ARCHIVE_OK);
  for (const auto& e : entries) {
    struct archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.path.c_str());
    archive_entry_set_uid(entry, e.uid);
    archive_entry_set_gid(entry, e.gid);
    archive_entry_set_mtime(entry, e.mtime, 0);
    archive_entry_set_perm(entry, e.mode);
    size_t data_size = 0;
    switch (e.kind) {
      case TarEntry::Kind::kFile:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_size(entry, static_cast<la_int64_t>(e.data.size()));
        data_size = e.data.size();
        break;
      case TarEntry::Kind::kDir:
        archive_entry_set_filetype(entry, AE_IFDIR);
        break;
      case TarEntry::Kind::kSymlink:
        archive_entry_set_filetype(entry, AE_IFLNK);
        archive_entry_set_symlink(entry, e.link.c_str());
        break;
      case TarEntry::Kind::kHardlink:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_hardlink(entry, e.link.c_str());
        archive_entry_set_size(entry, 0);
        break;
      case TarEntry::Kind::kCharDevice:
        archive_entry_set_filetype(entry, AE_IFCHR);
        archive_entry_set_rdevmajor(entry, e.major);
        archive_entry_set_rdevminor(entry, e.minor);
        break;
      case TarEntry::Kind::kBlockDevice:
        archive_entry_set_filetype(entry, AE_IFBLK);
        archive_entry_set_rdevmajor(entry, e.major);
        archive_entry_set_rdevminor(entry, e.minor);
        break;
      case TarEntry::Kind::kFifo:
        archive_entry_set_filetype(entry, AE_IFIFO);
        break;
    }
    for (const auto& [name, value] : e.xattrs) {
      archive_entry_xattr_add_entry(entry, name.c_str(), value.data(), value.size());
    }
    CHECK_MSG(archive_write_header(ar.get(), entry) == ARCHIVE_OK,
              "tar header for " << e.path << ": " << archive_error_string(ar.get()));
    if (data_size > 0) {
      CHECK(archive_write_data(ar.get(), e.data.data(), data_size) ==
            static_cast<la_ssize_t>(data_size));
    }
    archive_entry_free(entry);
  }
  CHECK(archive_write_close(ar.get()) == ARCHIVE_OK);
  return out;
}

OciLayoutBuilder::OciLayoutBuilder(std::string dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_ + "/blobs/sha256");
}

std::string OciLayoutBuilder::BlobPath(const Digest& digest) const {
  return dir_ + "/blobs/sha256/" + digest.hex();
}

Descriptor OciLayoutBuilder::AddBlob(const std::string& bytes, std::string media_type) {
  Sha256Stream hasher;
  hasher.Update(bytes);
  Descriptor d;
  d.media_type = std::move(media_type);
  d.digest = hasher.Finish();
  d.size = static_cast<int64_t>(bytes.size());
  WriteFile(BlobPath(d.digest), bytes);
  return d;
}

Descriptor OciLayoutBuilder::AddLayer(const std::vector<TarEntry>& entries,
                                      LayerCompression compression) {
  return AddBlob(BuildTar(entries, compression), LayerMediaType(compression));
}

Descriptor OciLayoutBuilder::AddImage(const std::vector<Descriptor>& layers,
                                      const ImageConfig& config, const std::string& ref_name) {
  ImageConfig full = config;
  if (full.os.empty()) full.os = "linux";
  if (full.architecture.empty()) full.architecture = "amd64";
  Descriptor config_descriptor = AddBlob(ImageConfigToJson(full), std::string(kMediaTypeOciConfig));
  json manifest = {{"schemaVersion", 2},
                   {"mediaType", kMediaTypeOciManifest},
                   {"config", DescriptorJson(config_descriptor)},
                   {"layers", json::array()}};
  for (const auto& l : layers) manifest["layers"].push_back(DescriptorJson(l));
  Descriptor m = AddBlob(manifest.dump(), std::string(kMediaTypeOciManifest));
  if (!ref_name.empty()) m.annotations[std::string(kAnnotationRefName)] = ref_name;
  m.platform = Platform{"linux", "amd64", ""};
  manifests_.push_back(m);
  return m;
}

void OciLayoutBuilder::WriteIndex() {
  json index = {
      {"schemaVersion", 2}, {"mediaType", kMediaTypeOciIndex}, {"manifests", json::array()}};
  for (const auto& m : manifests_) index["manifests"].push_back(DescriptorJson(m));
  WriteFile(dir_ + "/index.json", index.dump());
  WriteFile(dir_ + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
}

std::string TarOfLayout(const std::string& dir) {
  std::vector<TarEntry> entries;
  entries.push_back(TarEntry::File("oci-layout", ReadFile(dir + "/oci-layout")));
  entries.push_back(TarEntry::File("index.json", ReadFile(dir + "/index.json")));
  entries.push_back(TarEntry::Dir("blobs"));
  entries.push_back(TarEntry::Dir("blobs/sha256"));
  for (const auto& e : std::filesystem::directory_iterator(dir + "/blobs/sha256")) {
    entries.push_back(TarEntry::File("blobs/sha256/" + e.path().filename().string(),
                                     ReadFile(e.path().string())));
  }
  return BuildTar(entries, LayerCompression::kNone);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  CHECK_MSG(out.good(), "cannot write " << path);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CHECK_MSG(out.good(), "cannot write " << path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CHECK_MSG(in.good(), "cannot read " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace warren::image::testing

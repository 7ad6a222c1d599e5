#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "image/oci.h"

// Test fixtures: tar layers and OCI image layouts built in memory and on disk with libarchive,
// including entries no well-behaved tool would write (absolute paths, "..", links out of the
// layer), so tests and the fuzzer can feed the importer hostile input. Failures of the fixture
// itself are CHECKs. Not thread-safe; one builder per test.

namespace warren::image::testing {

struct TarEntry {
  enum class Kind { kFile, kDir, kSymlink, kHardlink, kCharDevice, kBlockDevice, kFifo };
  Kind kind = Kind::kFile;
  std::string path;
  std::string data;  // file contents
  std::string link;  // symlink or hardlink target
  mode_t mode = 0644;
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t mtime = 1'700'000'000;
  unsigned major = 0;
  unsigned minor = 0;
  std::map<std::string, std::string> xattrs;

  static TarEntry File(std::string path, std::string data, mode_t mode = 0644);
  static TarEntry Dir(std::string path, mode_t mode = 0755);
  static TarEntry Symlink(std::string path, std::string target);
  static TarEntry Hardlink(std::string path, std::string target);
  static TarEntry CharDevice(std::string path, unsigned major, unsigned minor);
  // ".wh.NAME" beside NAME: deletes NAME of lower layers.
  static TarEntry Whiteout(const std::string& path);
  // "DIR/.wh..wh..opq": hides everything lower layers have in DIR.
  static TarEntry Opaque(const std::string& dir);
};

// A pax tar of `entries`, compressed as asked.
std::string BuildTar(const std::vector<TarEntry>& entries,
                     LayerCompression compression = LayerCompression::kGzip);

// The media type for a compression.
std::string LayerMediaType(LayerCompression compression);

// Writes an OCI image layout into `dir` (made if missing): blobs as they are added, index.json
// and oci-layout on WriteIndex().
class OciLayoutBuilder {
 public:
  explicit OciLayoutBuilder(std::string dir);

  Descriptor AddBlob(const std::string& bytes, std::string media_type);
  Descriptor AddLayer(const std::vector<TarEntry>& entries,
                      LayerCompression compression = LayerCompression::kGzip);
  // A manifest over `layers` with `config`; listed in index.json under `ref_name` (omitted when
  // empty). Returns the manifest's descriptor.
  Descriptor AddImage(const std::vector<Descriptor>& layers, const ImageConfig& config,
                      const std::string& ref_name);
  void WriteIndex();

  const std::string& dir() const { return dir_; }
  std::string BlobPath(const Digest& digest) const;

 private:
  std::string dir_;
  std::vector<Descriptor> manifests_;
};

// A tar (optionally gzip) of a whole directory's layout files, as `docker save` writes one.
std::string TarOfLayout(const std::string& dir);

// Writes bytes to a file (CHECKs on failure).
void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);

// base's TempDir, with a path helper the image tests use everywhere.
class TempDir : public base::testing::TempDir {
 public:
  std::string Sub(const std::string& name) const { return path() + "/" + name; }
};

}  // namespace warren::image::testing

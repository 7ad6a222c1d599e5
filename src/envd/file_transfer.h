#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "envd/filesystem_ops.h"
#include "os/user_db.h"

namespace warren::envd {

// Reads up to n bytes of a request body; 0 at the end.
using BodyReadFn = std::function<Result<size_t>(char* buf, size_t n)>;

struct UploadRequest {
  std::string content_type;
  std::string content_encoding;     // "" or "gzip" (anything else is refused)
  std::optional<std::string> path;  // `path` query value
  os::UserInfo user;                // owns the written files and anchors relative paths
  std::optional<std::string> default_workdir;
  std::map<std::string, std::string> metadata;  // from X-Metadata-* headers, validated
};

struct WrittenFile {
  std::string path;
  std::string name;
  std::map<std::string, std::string> metadata;
};

// POST /files: multipart/form-data (each part named "file" is one file; its target is the
// `path` query or else the part's filename, directories included) or application/octet-stream
// (one file, `path` required), optionally gzip-encoded, streamed to disk as it arrives. Files are
// created (0666 & ~umask) or truncated, with missing parents, owned by the user, and get the
// request's metadata as xattrs (replacing what they had). Errors: InvalidArgument (400) for a
// malformed body, a missing path, a directory target or a repeated target; ResourceExhausted for a
// full disk (the HTTP layer answers 507); others from errno. Thread-compatible.
Result<std::vector<WrittenFile>> ReceiveUpload(const UploadRequest& request, const BodyReadFn& read,
                                               const FilesystemOps& ops);

// Metadata from request headers named X-Metadata-<key> (key lower-cased). InvalidArgument when a
// key or value is not printable ASCII, a key is longer than 246 bytes or all of it exceeds
// 4096 bytes.
Result<std::map<std::string, std::string>> MetadataFromHeaders(
    const std::vector<std::pair<std::string, std::string>>& headers);

// The JSON array answering POST /files.
std::string WrittenFilesJson(const std::vector<WrittenFile>& files);

// GET /files: an open regular file to stream back. NotFound ("path '<p>' does not exist"),
// InvalidArgument ("path '<p>' is a directory").
struct DownloadFile {
  base::UniqueFd fd;
  uint64_t size = 0;
  std::string name;
  int64_t mtime_sec = 0;
  int64_t mtime_nsec = 0;
  uint64_t inode = 0;
};
Result<DownloadFile> OpenDownload(const std::string& path);

// A streaming gzip decoder for Content-Encoding: gzip bodies. Not thread-safe.
class GzipDecoder {
 public:
  GzipDecoder();
  ~GzipDecoder();
  GzipDecoder(const GzipDecoder&) = delete;
  GzipDecoder& operator=(const GzipDecoder&) = delete;
  // Decodes `in`, appending to `out` (its output is written to disk as it comes, so there is
  // no expansion limit here beyond the disk). InvalidArgument for corrupt data.
  Status Decode(std::string_view in, std::string& out);
  // InvalidArgument when the stream ended early.
  Status Finish() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A streaming gzip encoder for Content-Encoding: gzip responses: output comes out as input goes
// in, so a download is never held in memory. Not thread-safe.
class GzipEncoder {
 public:
  GzipEncoder();
  ~GzipEncoder();
  GzipEncoder(const GzipEncoder&) = delete;
  GzipEncoder& operator=(const GzipEncoder&) = delete;
  // Compresses `in`, appending whatever output is ready to `out` (often nothing for small input).
  Status Encode(std::string_view in, std::string& out);
  // Flushes the rest and the gzip trailer into `out`; call once at the end.
  Status Finish(std::string& out);

 private:
  Status Run(std::string_view in, int flush, std::string& out);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace warren::envd

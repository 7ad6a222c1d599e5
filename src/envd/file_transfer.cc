#include "envd/file_transfer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "base/strings.h"
#include "envd/multipart.h"
#include "envd/paths.h"

namespace warren::envd {
namespace {

constexpr size_t kReadChunk = 256 * 1024;
constexpr std::string_view kMetadataPrefix = "x-metadata-";

Status WriteError(const std::string& path, int err) {
  if (err == ENOSPC || err == EDQUOT) {
    return ResourceExhaustedError(fmt::format("not enough disk space to write '{}'", path));
  }
  return ErrnoError(fmt::format("write '{}'", path), err);
}

// One file being written: created with its parents, owned by the user, filled as bytes come.
// Until Close succeeds the file is partial, and destroying the sink removes it: an upload that
// fails (the disk or the sandbox's ephemeral-storage is full, the body breaks off) leaves no
// half-written file behind. A file that existed is truncated at the start, as E2B's envd does,
// so a failed upload over it removes it too.
class FileSink {
 public:
  static Result<FileSink> Open(const std::string& path, const os::UserInfo& user,
                               const std::map<std::string, std::string>& metadata,
                               const FilesystemOps& ops) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return InvalidArgumentError(fmt::format("path '{}' is a directory", path));
    }
    RETURN_IF_ERROR(ops.MakeParents(path, user));
    base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (!fd) {
      if (errno == EISDIR)
        return InvalidArgumentError(fmt::format("path '{}' is a directory", path));
      return WriteError(path, errno);
    }
    FileSink sink(path, std::move(fd));
    if (fchown(sink.fd_.get(), user.uid, user.gid) != 0) {
      return ErrnoError(fmt::format("chown '{}'", path), errno);
    }
    RETURN_IF_ERROR(FilesystemOps::SetMetadata(sink.fd_.get(), metadata));
    return sink;
  }

  FileSink(FileSink&& other) noexcept
      : path_(std::move(other.path_)),
        fd_(std::move(other.fd_)),
        partial_(std::exchange(other.partial_, false)) {}
  FileSink& operator=(FileSink&&) = delete;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() {
    if (partial_) {
      fd_.reset();
      unlink(path_.c_str());
    }
  }

  Status Write(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = write(fd_.get(), data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return WriteError(path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  // Completes the file (close reports delayed write errors, e.g. a full disk).
  Status Close() {
    if (close(fd_.release()) != 0) return WriteError(path_, errno);
    partial_ = false;
    return Status::Ok();
  }

 private:
  FileSink(std::string path, base::UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  base::UniqueFd fd_;
  bool partial_ = true;
};

std::string BaseName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Pulls the body through the optional gzip decoder and hands decoded bytes to `consume`.
Status PumpBody(const UploadRequest& request, const BodyReadFn& read,
                const std::function<Status(std::string_view)>& consume) {
  std::optional<GzipDecoder> gzip;
  if (!request.content_encoding.empty()) {
    if (!base::EqualsIgnoreCase(request.content_encoding, "gzip")) {
      return InvalidArgumentError(
          fmt::format("unsupported Content-Encoding '{}'", request.content_encoding));
    }
    gzip.emplace();
  }
  std::string buf(kReadChunk, '\0');
  std::string decoded;
  for (;;) {
    ASSIGN_OR_RETURN(size_t n, read(buf.data(), buf.size()));
    if (n == 0) break;
    std::string_view chunk(buf.data(), n);
    if (gzip) {
      decoded.clear();
      RETURN_IF_ERROR(gzip->Decode(chunk, decoded));
      RETURN_IF_ERROR(consume(decoded));
    } else {
      RETURN_IF_ERROR(consume(chunk));
    }
  }
  if (gzip) RETURN_IF_ERROR(gzip->Finish());
  return Status::Ok();
}

}  // namespace

Result<std::vector<WrittenFile>> ReceiveUpload(const UploadRequest& request, const BodyReadFn& read,
                                               const FilesystemOps& ops) {
  std::vector<WrittenFile> written;
  std::string_view media = request.content_type;
  media = base::TrimSpace(media.substr(0, media.find(';')));

  auto target_of = [&](const std::optional<std::string>& name) -> Result<std::string> {
    const std::optional<std::string>& raw = request.path ? request.path : name;
    if (!raw || raw->empty()) {
      return InvalidArgumentError("no path for the file: give the 'path' query parameter");
    }
    return ResolvePath(*raw, request.user, request.default_workdir);
  };

  if (base::EqualsIgnoreCase(media, "application/octet-stream")) {
    if (!request.path || request.path->empty()) {
      return InvalidArgumentError("octet-stream upload needs the 'path' query parameter");
    }
    ASSIGN_OR_RETURN(std::string path, target_of(request.path));
    ASSIGN_OR_RETURN(FileSink sink, FileSink::Open(path, request.user, request.metadata, ops));
    RETURN_IF_ERROR(PumpBody(request, read, [&](std::string_view d) { return sink.Write(d); }));
    RETURN_IF_ERROR(sink.Close());
    written.push_back({path, BaseName(path), request.metadata});
    return written;
  }

  if (!base::EqualsIgnoreCase(media, "multipart/form-data")) {
    return InvalidArgumentError(fmt::format(
        "unsupported Content-Type '{}': use multipart/form-data or application/octet-stream",
        request.content_type));
  }
  ASSIGN_OR_RETURN(std::string boundary, MultipartBoundary(request.content_type));
  std::optional<FileSink> current;
  std::set<std::string> seen;
  MultipartParser::Callbacks callbacks;
  callbacks.on_part = [&](const MultipartPart& part) -> Status {
    if (part.name != "file") return Status::Ok();  // other form fields are ignored
    ASSIGN_OR_RETURN(std::string path, target_of(part.filename));
    if (!seen.insert(path).second) {
      return InvalidArgumentError(fmt::format("path '{}' is given by more than one part", path));
    }
    ASSIGN_OR_RETURN(FileSink sink, FileSink::Open(path, request.user, request.metadata, ops));
    current.emplace(std::move(sink));
    written.push_back({path, BaseName(path), request.metadata});
    return Status::Ok();
  };
  callbacks.on_data = [&](std::string_view d) -> Status {
    return current ? current->Write(d) : Status::Ok();
  };
  callbacks.on_part_end = [&]() -> Status {
    if (!current) return Status::Ok();
    Status s = current->Close();
    current.reset();
    return s;
  };
  MultipartParser parser(boundary, std::move(callbacks));
  RETURN_IF_ERROR(PumpBody(request, read, [&](std::string_view d) { return parser.Feed(d); }));
  RETURN_IF_ERROR(parser.Finish());
  if (written.empty()) return InvalidArgumentError("the multipart body has no part named 'file'");
  return written;
}

Result<std::map<std::string, std::string>> MetadataFromHeaders(
    const std::vector<std::pair<std::string, std::string>>& headers) {
  std::map<std::string, std::string> out;
  size_t total = 0;
  auto printable = [](std::string_view s) {
    for (unsigned char c : s) {
      if (c < 0x20 || c > 0x7e) return false;
    }
    return true;
  };
  for (const auto& [name, value] : headers) {
    std::string lower = base::AsciiLower(name);
    if (lower.rfind(kMetadataPrefix, 0) != 0) continue;
    std::string key = lower.substr(kMetadataPrefix.size());
    if (key.empty() || key.size() > 246 || !printable(key)) {
      return InvalidArgumentError(fmt::format("invalid metadata key '{}'", key));
    }
    if (!printable(value)) {
      return InvalidArgumentError(
          fmt::format("metadata value of '{}' is not printable ASCII", key));
    }
    total += key.size() + value.size();
    if (total > 4096) return InvalidArgumentError("metadata exceeds 4096 bytes");
    out[key] = value;
  }
  return out;
}

std::string WrittenFilesJson(const std::vector<WrittenFile>& files) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) {
    nlohmann::json j = {{"path", f.path}, {"name", f.name}, {"type", "file"}};
    if (!f.metadata.empty()) j["metadata"] = f.metadata;
    out.push_back(std::move(j));
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<DownloadFile> OpenDownload(const std::string& path) {
  base::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return NotFoundError(fmt::format("path '{}' does not exist", path));
    }
    return ErrnoError(fmt::format("open '{}'", path), errno);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("stat '{}'", path), errno);
  if (S_ISDIR(st.st_mode))
    return InvalidArgumentError(fmt::format("path '{}' is a directory", path));
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(fmt::format("path '{}' is not a regular file", path));
  }
  DownloadFile out;
  out.fd = std::move(fd);
  out.size = static_cast<uint64_t>(st.st_size);
  out.name = BaseName(path);
  out.mtime_sec = static_cast<int64_t>(st.st_mtim.tv_sec);
  out.mtime_nsec = static_cast<int64_t>(st.st_mtim.tv_nsec);
  out.inode = static_cast<uint64_t>(st.st_ino);
  return out;
}

struct GzipDecoder::State {
  z_stream z{};
  bool ended = false;
  bool initialised = false;
};

GzipDecoder::GzipDecoder() : state_(std::make_unique<State>()) {
  // 16 + MAX_WBITS: gzip wrapper only.
  state_->initialised = inflateInit2(&state_->z, 16 + MAX_WBITS) == Z_OK;
}

GzipDecoder::~GzipDecoder() {
  if (state_->initialised) inflateEnd(&state_->z);
}

Status GzipDecoder::Decode(std::string_view in, std::string& out) {
  if (!state_->initialised) return InternalError("gzip decoder failed to initialise");
  auto& z = state_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buf[64 * 1024];
  // Inflate until the input is used up and the last output buffer was not filled completely
  // (a full buffer may mean more output is pending).
  while (!state_->ended) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    int r = inflate(&z, Z_NO_FLUSH);
    if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
      return InvalidArgumentError("the gzip-encoded body is corrupt");
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (r == Z_STREAM_END) state_->ended = true;
    if (z.avail_in == 0 && z.avail_out != 0) break;
    if (r == Z_BUF_ERROR) break;
  }
  return Status::Ok();
}

Status GzipDecoder::Finish() const {
  if (!state_->ended) return InvalidArgumentError("the gzip-encoded body ended early");
  return Status::Ok();
}

struct GzipEncoder::State {
  z_stream z{};
  bool initialised = false;
  bool finished = false;
};

GzipEncoder::GzipEncoder() : state_(std::make_unique<State>()) {
  // Level 1: downloads are compressed on the fly for the network hop, and the sandbox's CPU is
  // the user's; the fastest level keeps most of the ratio at a fraction of the cost. 16 +
  // MAX_WBITS: gzip wrapper.
  state_->initialised = deflateInit2(&state_->z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8,
                                     Z_DEFAULT_STRATEGY) == Z_OK;
}

GzipEncoder::~GzipEncoder() {
  if (state_->initialised) deflateEnd(&state_->z);
}

Status GzipEncoder::Run(std::string_view in, int flush, std::string& out) {
  if (!state_->initialised) return InternalError("gzip encoder failed to initialise");
  if (state_->finished) return FailedPreconditionError("gzip encoder already finished");
  auto& z = state_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buf[64 * 1024];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    int r = deflate(&z, flush);
    if (r == Z_STREAM_ERROR) return InternalError("gzip encoder state is broken");
    out.append(buf, sizeof buf - z.avail_out);
    if (r == Z_STREAM_END) {
      state_->finished = true;
      break;
    }
    // More output may be pending only when the buffer came back full.
    if (z.avail_out != 0 && z.avail_in == 0) break;
  }
  return Status::Ok();
}

Status GzipEncoder::Encode(std::string_view in, std::string& out) {
  return Run(in, Z_NO_FLUSH, out);
}

Status GzipEncoder::Finish(std::string& out) { return Run({}, Z_FINISH, out); }

}  // namespace warren::envd

#include "image/registry_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "base/strings.h"
#include "base/unique_fd.h"

namespace warren::image {
namespace {

constexpr char kManifestAccept[] =
    "Accept: application/vnd.oci.image.index.v1+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json";

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

void GlobalInit() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == 0; }();
  (void)done;
}

// Where the bytes of one response go, with the hash and size kept as they arrive.
struct Sink {
  std::string* memory = nullptr;  // either memory...
  int fd = -1;                    // ...or a file
  size_t max_bytes = 0;
  Sha256Stream hasher;
  uint64_t bytes = 0;
  bool too_big = false;
  int write_errno = 0;
  std::string content_type;
  bool redirect = false;  // the response being read is a 3xx: its body is not the content
  const std::function<void(uint64_t)>* on_bytes = nullptr;

  static size_t Write(char* data, size_t size, size_t n, void* self) {
    auto* sink = static_cast<Sink*>(self);
    size_t len = size * n;
    if (sink->redirect) return len;
    if (sink->bytes + len > sink->max_bytes) {
      sink->too_big = true;
      return 0;  // Aborts the transfer.
    }
    sink->hasher.Update(data, len);
    sink->bytes += len;
    if (sink->on_bytes != nullptr && *sink->on_bytes) (*sink->on_bytes)(sink->bytes);
    if (sink->memory != nullptr) {
      sink->memory->append(data, len);
      return len;
    }
    size_t done = 0;
    while (done < len) {
      ssize_t w = write(sink->fd, data + done, len - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        sink->write_errno = errno;
        return 0;
      }
      done += static_cast<size_t>(w);
    }
    return len;
  }

  static size_t Header(char* data, size_t size, size_t n, void* self) {
    auto* sink = static_cast<Sink*>(self);
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {
      // A new response (each hop of a redirect starts one): "HTTP/1.1 307 Temporary Redirect".
      size_t space = line.find(' ');
      sink->redirect =
          space != std::string_view::npos && line.size() > space + 1 && line[space + 1] == '3';
      sink->content_type.clear();
      return size * n;
    }
    size_t colon = line.find(':');
    if (colon != std::string_view::npos &&
        base::EqualsIgnoreCase(base::TrimSpace(line.substr(0, colon)), "content-type")) {
      sink->content_type = std::string(base::TrimSpace(line.substr(colon + 1)));
    }
    return size * n;
  }
};

}  // namespace

RegistryClient::RegistryClient(std::string registry, Options options)
    : registry_(std::move(registry)), options_(options) {
  GlobalInit();
}

namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

// Refuses a URL whose scheme is not http(s) or whose host the allowlist does not name.
Status CheckAllowed(const std::string& url, const RegistryAllowlist& allowed,
                    std::string_view what) {
  std::unique_ptr<CURLU, UrlDeleter> u(curl_url());
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return UnavailableError(fmt::format("{} '{}' is not a URL", what, url));
  }
  char* scheme = nullptr;
  char* host = nullptr;
  char* port = nullptr;
  curl_url_get(u.get(), CURLUPART_SCHEME, &scheme, 0);
  curl_url_get(u.get(), CURLUPART_HOST, &host, 0);
  curl_url_get(u.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
  std::string s = scheme ? scheme : "", h = host ? host : "", p = port ? port : "";
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  if (s != "http" && s != "https") {
    return PermissionDeniedError(fmt::format("{} {} is not http or https", what, url));
  }
  auto n = base::ParseInt64(p);
  if (h.empty() || !n || *n < 1 || *n > 65535 ||
      !allowed.AllowsHost(h, static_cast<uint16_t>(*n))) {
    return PermissionDeniedError(fmt::format(
        "{} {}: {}:{} is not an allowed registry (allowed: {}; see --allowed-registries)", what,
        url, h, p, allowed.ToString()));
  }
  return Status::Ok();
}

constexpr int kMaxRedirects = 5;

// Why a transfer was abandoned by the progress callback, if it was.
struct Abort {
  const RegistryClient::Options* options = nullptr;
  bool deadline = false;
  bool cancelled = false;

  static int Check(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* abort = static_cast<Abort*>(self);
    const auto& o = *abort->options;
    if (o.cancel != nullptr && o.cancel->load()) abort->cancelled = true;
    if (o.deadline && std::chrono::steady_clock::now() >= *o.deadline) abort->deadline = true;
    return abort->cancelled || abort->deadline ? 1 : 0;
  }
};

// One GET into `sink`, following redirects by hand so that each target is checked against the
// allowlist before it is connected to. Returns the final HTTP status, or a Status for transport
// failures and refused hosts.
Result<long> Get(const std::string& first_url, const RegistryClient::Options& options, Sink& sink,
                 const char* accept) {
  std::string url = first_url;
  RETURN_IF_ERROR(CheckAllowed(url, options.allowed, "registry URL"));
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return InternalError("curl_easy_init failed");
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  if (accept != nullptr) headers.reset(curl_slist_append(nullptr, accept));
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Sink::Write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &Sink::Header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  // Redirects (registries send blob GETs to their storage) are followed below, not by curl.
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, options.low_speed_bytes);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count()));
  Abort abort{.options = &options};
  if (options.deadline || options.cancel != nullptr) {
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &Abort::Check);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &abort);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  for (int hop = 0;; ++hop) {
    if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline) {
      return DeadlineExceededError(fmt::format("{}: the pull's time ran out", url));
    }
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    error[0] = '\0';
    CURLcode rc = curl_easy_perform(c);
    if (sink.too_big) {
      return ResourceExhaustedError(
          fmt::format("{}: response larger than {} bytes", url, sink.max_bytes));
    }
    if (sink.write_errno != 0) {
      return ErrnoError(fmt::format("{}: writing", url), sink.write_errno);
    }
    if (abort.cancelled) return CancelledError(fmt::format("{}: cancelled", url));
    if (abort.deadline) {
      return DeadlineExceededError(fmt::format("{}: the pull's time ran out", url));
    }
    if (rc != CURLE_OK) {
      std::string why = error[0] != '\0' ? error : curl_easy_strerror(rc);
      if (rc == CURLE_OPERATION_TIMEDOUT)
        return DeadlineExceededError(fmt::format("{}: {}", url, why));
      return UnavailableError(fmt::format("{}: {}", url, why));
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    char* location = nullptr;
    curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
    if (status < 300 || status >= 400 || location == nullptr) return status;
    if (hop == kMaxRedirects) {
      return UnavailableError(fmt::format("{}: more than {} redirects", first_url, kMaxRedirects));
    }
    std::string next = location;  // owned by the handle until the next perform
    RETURN_IF_ERROR(CheckAllowed(next, options.allowed, fmt::format("redirect from {} to", url)));
    url = std::move(next);
  }
}

Status StatusError(const std::string& url, long status, std::string_view what) {
  if (status == 401 || status == 403) {
    return UnauthenticatedError(
        fmt::format("{}: the registry wants credentials (HTTP {}); only anonymous pulls are "
                    "supported",
                    url, status));
  }
  if (status == 404) return NotFoundError(fmt::format("{}: {} not found", url, what));
  return UnavailableError(fmt::format("{}: HTTP {} fetching {}", url, status, what));
}

bool ValidRepository(std::string_view repo) {
  if (repo.empty() || repo.size() > 255) return false;
  for (char c : repo) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '/';
    if (!ok) return false;
  }
  return repo.find("..") == std::string_view::npos;
}

}  // namespace

Result<FetchedManifest> RegistryClient::GetManifest(std::string_view repository,
                                                    std::string_view reference) {
  if (!ValidRepository(repository)) {
    return InvalidArgumentError(fmt::format("bad repository name '{}'", repository));
  }
  auto by_digest = Digest::Parse(reference);
  std::string url = fmt::format("http://{}/v2/{}/manifests/{}", registry_, repository,
                                by_digest.ok() ? by_digest->ToString() : std::string(reference));
  FetchedManifest out;
  Sink sink;
  sink.memory = &out.body;
  sink.max_bytes = kMaxManifestBytes;
  ASSIGN_OR_RETURN(long status, Get(url, options_, sink, kManifestAccept));
  if (status != 200) return StatusError(url, status, "manifest");
  out.digest = sink.hasher.Finish();
  if (by_digest.ok() && out.digest != *by_digest) {
    return DataLossError(fmt::format("{}: the manifest hashes to {}", url, out.digest.ToString()));
  }
  std::string content_type = sink.content_type.substr(0, sink.content_type.find(';'));
  out.media_type = content_type;
  if (!IsIndexMediaType(content_type) && !IsManifestMediaType(content_type)) {
    ASSIGN_OR_RETURN(out.media_type, PeekMediaType(out.body, url));
  }
  return out;
}

Result<std::string> RegistryClient::GetBlob(std::string_view repository,
                                            const Descriptor& descriptor, size_t max_bytes) {
  if (!ValidRepository(repository)) {
    return InvalidArgumentError(fmt::format("bad repository name '{}'", repository));
  }
  std::string url =
      fmt::format("http://{}/v2/{}/blobs/{}", registry_, repository, descriptor.digest.ToString());
  std::string body;
  Sink sink;
  sink.memory = &body;
  sink.max_bytes =
      std::min<size_t>(max_bytes, static_cast<size_t>(std::max<int64_t>(0, descriptor.size)));
  ASSIGN_OR_RETURN(long status, Get(url, options_, sink, nullptr));
  if (status != 200) return StatusError(url, status, "blob");
  Digest got = sink.hasher.Finish();
  if (got != descriptor.digest || body.size() != static_cast<size_t>(descriptor.size)) {
    return DataLossError(
        fmt::format("{}: got {} bytes hashing to {}", url, body.size(), got.ToString()));
  }
  return body;
}

Status RegistryClient::DownloadBlob(std::string_view repository, const Descriptor& descriptor,
                                    const std::string& path,
                                    const std::function<void(uint64_t)>& on_bytes) {
  if (!ValidRepository(repository)) {
    return InvalidArgumentError(fmt::format("bad repository name '{}'", repository));
  }
  std::string url =
      fmt::format("http://{}/v2/{}/blobs/{}", registry_, repository, descriptor.digest.ToString());
  int raw = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (raw < 0) return ErrnoError(fmt::format("create '{}'", path), errno);
  base::UniqueFd fd(raw);
  Sink sink;
  sink.fd = fd.get();
  sink.max_bytes = static_cast<size_t>(std::max<int64_t>(0, descriptor.size));
  sink.on_bytes = &on_bytes;
  auto status = Get(url, options_, sink, nullptr);
  Status result;
  if (!status.ok()) {
    result = status.status();
  } else if (*status != 200) {
    result = StatusError(url, *status, "blob");
  } else {
    Digest got = sink.hasher.Finish();
    if (got != descriptor.digest || sink.bytes != static_cast<uint64_t>(descriptor.size)) {
      result = DataLossError(
          fmt::format("{}: got {} bytes hashing to {}", url, sink.bytes, got.ToString()));
    }
  }
  if (!result.ok()) unlink(path.c_str());
  return result;
}

}  // namespace warren::image

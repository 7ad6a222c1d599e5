#include "image/testing/registry_fixture.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/testing/free_port.h"
#include "image/oci.h"
#include "image/testing/oci_builder.h"

namespace warren::image::testing {
namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct Reply {
  long status = 0;
  std::string body;
  std::string headers;
};

Result<Reply> Http(const std::string& method, const std::string& url, const std::string& body,
                   const std::string& content_type) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  Reply reply;
  curl_slist* headers = nullptr;
  if (!content_type.empty()) {
    headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
  }
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method != "GET") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &Collect);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply.headers);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK)
    return UnavailableError(fmt::format("{} {}: {}", method, url, curl_easy_strerror(rc)));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

std::string HeaderValue(const std::string& headers, const std::string& name) {
  size_t pos = 0;
  while (pos < headers.size()) {
    size_t end = headers.find("\r\n", pos);
    if (end == std::string::npos) end = headers.size();
    std::string line = headers.substr(pos, end - pos);
    if (line.size() > name.size() && strncasecmp(line.c_str(), name.c_str(), name.size()) == 0 &&
        line[name.size()] == ':') {
      size_t v = name.size() + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      return line.substr(v);
    }
    pos = end + 2;
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<RegistryProcess>> RegistryProcess::Start(const std::string& storage_dir,
                                                                const std::string& redirect_to) {
  auto p = std::unique_ptr<RegistryProcess>(new RegistryProcess);
  p->storage_ = storage_dir + "/data";
  int port = base::testing::FreeLoopbackPort();
  p->address_ = fmt::format("127.0.0.1:{}", port);
  std::string config = storage_dir + "/config.yml";
  std::string middleware;
  if (!redirect_to.empty()) {
    // distribution's redirect storage middleware (meant for a CDN): blob GETs answer 307 to
    // <baseurl><storage path>.
    middleware = fmt::format(
        "middleware:\n  storage:\n    - name: redirect\n      options:\n        baseurl: {}\n",
        redirect_to);
  }
  WriteFile(config, fmt::format("version: 0.1\nlog:\n  level: error\n"
                                "storage:\n  filesystem:\n    rootdirectory: {}\n"
                                "  delete:\n    enabled: true\n"
                                "http:\n  addr: {}\n{}",
                                p->storage_, p->address_, middleware));
  pid_t pid = fork();
  if (pid < 0) return ErrnoError("fork", errno);
  if (pid == 0) {
    // Its request log goes beside its storage, not into the test output.
    int log = open((storage_dir + "/registry.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    execl("/usr/bin/docker-registry", "docker-registry", "serve", config.c_str(), nullptr);
    _exit(127);
  }
  p->pid_ = pid;
  for (int i = 0; i < 200; ++i) {
    auto reply = Http("GET", "http://" + p->address_ + "/v2/", "", "");
    if (reply.ok() && reply->status == 200) return p;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      return UnavailableError("docker-registry exited at start");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return UnavailableError("docker-registry did not answer on " + p->address_);
}

RegistryProcess::~RegistryProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status;
    waitpid(pid_, &status, 0);
  }
}

void RegistryProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string RegistryProcess::BlobDataPath(const std::string& hex) const {
  return fmt::format("{}/docker/registry/v2/blobs/sha256/{}/{}/data", storage_, hex.substr(0, 2),
                     hex);
}

Status PushLayout(const std::string& registry, const std::string& repository,
                  const std::string& tag, const std::string& layout_dir) {
  using nlohmann::json;
  json index = json::parse(ReadFile(layout_dir + "/index.json"));
  json entry = index["manifests"][0];
  std::string manifest_hex = entry["digest"].get<std::string>().substr(7);
  std::string manifest = ReadFile(layout_dir + "/blobs/sha256/" + manifest_hex);
  json m = json::parse(manifest);
  std::vector<std::string> digests = {m["config"]["digest"].get<std::string>()};
  for (const auto& l : m["layers"]) digests.push_back(l["digest"].get<std::string>());
  std::string base = "http://" + registry + "/v2/" + repository;
  for (const auto& digest : digests) {
    ASSIGN_OR_RETURN(Reply start, Http("POST", base + "/blobs/uploads/", "", ""));
    if (start.status != 202) return InternalError(fmt::format("upload start: {}", start.status));
    std::string location = HeaderValue(start.headers, "Location");
    if (location.starts_with("/")) location = "http://" + registry + location;
    location += (location.find('?') == std::string::npos ? "?" : "&");
    location += "digest=" + digest;
    std::string bytes = ReadFile(layout_dir + "/blobs/sha256/" + digest.substr(7));
    ASSIGN_OR_RETURN(Reply put, Http("PUT", location, bytes, "application/octet-stream"));
    if (put.status != 201) {
      return InternalError(fmt::format("blob upload: {} {}", put.status, put.body));
    }
  }
  ASSIGN_OR_RETURN(Reply put, Http("PUT", base + "/manifests/" + tag, manifest,
                                   m.value("mediaType", std::string(kMediaTypeOciManifest))));
  if (put.status != 201) {
    return InternalError(fmt::format("manifest upload: {} {}", put.status, put.body));
  }
  return Status::Ok();
}

}  // namespace warren::image::testing

// A node pulls only from registries its operator lists, and follows a registry's redirects
// (blob GETs sent to object storage) only to hosts on that list: a tenant who names an image
// cannot make the node fetch from, or connect to, anywhere else.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "base/small_file.h"
#include "base/unique_fd.h"
#include "image/image_store.h"
#include "image/testing/oci_builder.h"
#include "image/testing/registry_fixture.h"

namespace warren::image {
namespace {

using ::testing::HasSubstr;
using ::warren::image::testing::OciLayoutBuilder;
using ::warren::image::testing::PushLayout;
using ::warren::image::testing::RegistryProcess;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TempDir;

// Storage behind a redirect: serves GET <path> from `root` on 127.0.0.2, one request per
// connection, and counts the connections it accepted. Owns its listening socket and thread.
class StorageServer {
 public:
  explicit StorageServer(std::string root) : root_(std::move(root)) {
    listener_ = base::UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.2", &addr.sin_addr);
    EXPECT_EQ(bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(listener_.get(), 16), 0);
    socklen_t len = sizeof addr;
    getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~StorageServer() {
    shutdown(listener_.get(), SHUT_RDWR);  // wakes accept()
    thread_.join();
  }
  std::string BaseUrl() const { return fmt::format("http://127.0.0.2:{}/", port_); }
  std::string HostPort() const { return fmt::format("127.0.0.2:{}", port_); }
  int connections() const { return connections_.load(); }

 private:
  void Serve() {
    for (;;) {
      base::UniqueFd conn(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) return;
      ++connections_;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(conn.get(), buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      size_t sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
      std::string path = sp1 == std::string::npos ? "" : request.substr(sp1 + 1, sp2 - sp1 - 1);
      auto body = path.find("..") == std::string::npos ? base::ReadSmallFile(root_ + path, 64 << 20)
                                                       : Result<std::string>(NotFoundError(path));
      std::string reply =
          body.ok() ? fmt::format(
                          "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: "
                          "close\r\n\r\n{}",
                          body->size(), *body)
                    : "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!write(conn.get(), reply.data(), reply.size());
    }
  }
  std::string root_;
  base::UniqueFd listener_;
  uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

class RegistryAllowlistAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/docker-registry")) {
      GTEST_SKIP() << "docker-registry is not installed (scripts/install-deps)";
    }
  }
  // A registry (redirecting blob GETs to `redirect_to` when given) holding team/app:1.
  void StartRegistry(const std::string& redirect_to = "") {
    std::filesystem::create_directories(tmp_.Sub("registry"));
    auto registry = RegistryProcess::Start(tmp_.Sub("registry"), redirect_to);
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = std::move(registry).value();
    OciLayoutBuilder b(tmp_.Sub("layout"));
    Descriptor layer = b.AddLayer({TarEntry::File("app", "v1")});
    b.AddImage({layer}, ImageConfig{}, "app:1");
    b.WriteIndex();
    ASSERT_TRUE(PushLayout(registry_->address(), "team/app", "1", b.dir()).ok());
  }
  std::unique_ptr<ImageStore> Store(const std::string& allowed) {
    ImageStoreOptions options;
    options.root = tmp_.Sub("store");
    auto list = RegistryAllowlist::Parse(allowed);
    EXPECT_TRUE(list.ok()) << list.status();
    options.allowed_registries = *list;
    auto store = ImageStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(store).value();
  }
  std::string Ref() const { return registry_->address() + "/team/app:1"; }

  TempDir tmp_;
  std::unique_ptr<RegistryProcess> registry_;
};

TEST_F(RegistryAllowlistAttackTest, APullFromARegistryNotOnTheListIsRefusedNamingIt) {
  StartRegistry();
  for (const char* allowed : {"", "127.0.0.1:1,registry.example.com"}) {
    auto store = Store(allowed);
    auto pulled = store->Pull(Ref());
    ASSERT_FALSE(pulled.ok()) << "pulled with allowed=" << allowed;
    EXPECT_EQ(pulled.status().code(), StatusCode::kPermissionDenied) << pulled.status();
    EXPECT_THAT(pulled.status().message(), HasSubstr("registry " + registry_->address()));
    EXPECT_THAT(pulled.status().message(), HasSubstr("not allowed"));
    EXPECT_TRUE(store->List().empty());
  }
}

TEST_F(RegistryAllowlistAttackTest, ARedirectToAHostNotOnTheListIsRefusedBeforeConnecting) {
  StorageServer storage(tmp_.Sub("registry/data"));
  StartRegistry(storage.BaseUrl());
  auto store = Store(registry_->address());
  auto pulled = store->Pull(Ref());
  ASSERT_FALSE(pulled.ok()) << "the pull followed the redirect";
  EXPECT_EQ(pulled.status().code(), StatusCode::kPermissionDenied) << pulled.status();
  EXPECT_THAT(pulled.status().message(), HasSubstr("redirect"));
  EXPECT_THAT(pulled.status().message(), HasSubstr(storage.HostPort()));
  EXPECT_EQ(storage.connections(), 0) << "the node connected to the redirect's host";
  EXPECT_TRUE(store->List().empty());
}

TEST_F(RegistryAllowlistAttackTest, ARedirectWithinTheListIsFollowed) {
  StorageServer storage(tmp_.Sub("registry/data"));
  StartRegistry(storage.BaseUrl());
  auto store = Store(registry_->address() + "," + storage.HostPort());
  auto pulled = store->Pull(Ref());
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_GE(storage.connections(), 2) << "config and layer come from the storage host";
}

}  // namespace
}  // namespace warren::image

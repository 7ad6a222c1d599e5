// ImagePullJob end to end: a real docker-registry (started here), `warren server` with its node
// agent, the CLI. A job pulls a three-layer image onto the node; a sandbox on it then starts with
// the registry gone; a registry killed mid-pull is retried until it is back, and the layer it was
// sending is never used half-written; bad references, a registry not allowed and a wrong digest
// end Failed with a reason naming them.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "api/json.h"
#include "base/encoding.h"
#include "image/oci.h"
#include "image/testing/oci_builder.h"
#include "image/testing/registry_fixture.h"
#include "image/testing/slow_relay.h"
#include "process.h"
#include "server_sandboxes.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using image::testing::OciLayoutBuilder;
using image::testing::PushLayout;
using image::testing::RegistryProcess;
using image::testing::SlowRelay;
using image::testing::TarEntry;
using image::testing::TempDir;
using warren::testing::CommandResult;
using warren::testing::ServerProcess;

constexpr char kBusyboxLayout[] = "/var/cache/warren/images/busybox/oci";

// Random bytes: a layer that no compression shrinks, so the transfer takes its size.
std::string Noise(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(gen());
  return out;
}

// busybox's own layer, then `/data/big` (random, uncompressed) and `/data/hello`.
struct PushedImage {
  std::string big_sha256;
  size_t big_bytes = 0;
};
PushedImage PushThreeLayerImage(const std::string& registry, const std::string& repo,
                                const std::string& dir, size_t big_bytes) {
  auto index =
      api::ParseJson(image::testing::ReadFile(std::string(kBusyboxLayout) + "/index.json"));
  std::string manifest_digest = (*index)["manifests"][0]["digest"];
  auto manifest = api::ParseJson(image::testing::ReadFile(
      std::string(kBusyboxLayout) + "/blobs/sha256/" + manifest_digest.substr(7)));
  const api::Json& base = (*manifest)["layers"][0];
  std::string base_hex = std::string(base["digest"]).substr(7);

  OciLayoutBuilder b(dir);
  auto l1 =
      b.AddBlob(image::testing::ReadFile(std::string(kBusyboxLayout) + "/blobs/sha256/" + base_hex),
                base["mediaType"]);
  PushedImage out;
  // Fresh bytes each run: the node's image store outlives the test, and a layer it already holds
  // would not be pulled at all.
  std::string big = Noise(big_bytes, std::random_device()());
  out.big_sha256 = base::Sha256Hex(big);
  out.big_bytes = big.size();
  auto l2 = b.AddLayer({TarEntry::Dir("data"), TarEntry::File("data/big", big)},
                       image::LayerCompression::kNone);
  auto l3 = b.AddLayer({TarEntry::File("data/hello", "pulled ahead\n")});
  image::ImageConfig config;
  config.cmd = {"/bin/sh"};
  config.env = {"PATH=/bin:/usr/bin"};
  b.AddImage({l1, l2, l3}, config, repo + ":1");
  b.WriteIndex();
  EXPECT_TRUE(PushLayout(registry, repo, "1", b.dir()).ok());
  return out;
}

std::string JobYaml(const std::string& name, const std::string& image,
                    const std::string& extra = "") {
  return "apiVersion: apps.kruise.io/v1alpha1\nkind: ImagePullJob\nmetadata: {name: " + name +
         ", namespace: default}\nspec:\n  image: " + image + "\n" + extra;
}

api::Json GetJob(ServerProcess& s, const std::string& name) {
  return GetJson(s, "/apis/apps.kruise.io/v1alpha1/namespaces/default/imagepulljobs/" + name);
}

// Waits up to `limit` for `pred` on the job; a failure naming the last state if never.
api::Json WaitJob(ServerProcess& s, const std::string& name,
                  const std::function<bool(const api::Json&)>& pred,
                  std::chrono::seconds limit = 90s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  api::Json job;
  while (std::chrono::steady_clock::now() < deadline) {
    job = GetJob(s, name);
    if (job.is_object() && job.contains("status") && pred(job["status"])) return job;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << name << " never got there: " << api::DumpJson(job);
  return job;
}

// The node's image store is shared by every test server: take the test's image out again.
void RemoveImage(const std::string& ref) {
  CommandResult rm = warren::testing::RunCommand({WARREN_BIN, "image", "rm", ref});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
}

// Runs `script` in a Sandbox `name` on `image`, returns what it printed once it printed
// `/data/big` (its last line), and deletes it again.
std::string OutputOfSandboxOn(ServerProcess& s, const std::string& name, const std::string& image,
                              const std::string& script) {
  std::string sandbox =
      "apiVersion: agents.kruise.io/v1alpha1\nkind: Sandbox\nmetadata: {name: " + name +
      ", namespace: default}\nspec:\n  template:\n    spec:\n      "
      "containers:\n      - name: main\n        image: " +
      image + "\n        command: [\"/bin/sh\", \"-c\", \"" + script +
      "; exec sleep 3600\"]\n        resources: {limits: {memory: 64Mi}}\n";
  CommandResult apply = s.Cli({"apply", "-f", "-"}, sandbox);
  EXPECT_EQ(apply.exit_code, 0) << apply.err;
  WaitPhase(s, name, "Running");
  auto deadline = std::chrono::steady_clock::now() + 20s;
  CommandResult logs;
  do {
    logs = s.Cli({"logs", name});
  } while (logs.out.find("/data/big") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline &&
           (std::this_thread::sleep_for(50ms), true));
  EXPECT_EQ(s.Cli({"delete", "sbx", name}).exit_code, 0);
  WaitGone(s, name);
  return logs.out;
}

bool Completed(const api::Json& status) { return status.contains("completionTime"); }

std::string EventsFor(ServerProcess& s, const std::string& name) {
  CommandResult ev = s.Cli({"get", "events", "-n", "default", "-o", "json"});
  std::string out;
  auto list = api::ParseJson(ev.out);
  if (!list.ok()) return ev.out + ev.err;
  for (const auto& e : (*list)["items"]) {
    if (e["involvedObject"].value("name", "") == name) {
      out += e.value("reason", "") + ": " + e.value("message", "") + "\n";
    }
  }
  return out;
}

class ImagePullJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    if (!std::filesystem::exists("/usr/bin/docker-registry")) GTEST_SKIP() << "no docker-registry";
    if (!std::filesystem::exists(kBusyboxLayout)) GTEST_SKIP() << "no cached busybox layout";
    setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
    setenv("WARREN_NODE_AGENT", "on", 1);
    std::filesystem::create_directories(tmp_.Sub("registry"));
    auto registry = RegistryProcess::Start(tmp_.Sub("registry"));
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = std::move(registry).value();
  }

  TempDir tmp_;
  std::unique_ptr<RegistryProcess> registry_;
};

TEST_F(ImagePullJobTest, PullsAThreeLayerImageAndASandboxThenStartsWithNoRegistry) {
  PushedImage pushed =
      PushThreeLayerImage(registry_->address(), "team/app", tmp_.Sub("layout"), 1 << 20);
  const std::string ref = registry_->address() + "/team/app:1";
  ServerProcess s("", {"--allowed-registries", registry_->address()});
  CommandResult apply = s.Cli({"apply", "-f", "-"}, JobYaml("warm", ref));
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  api::Json job = WaitJob(s, "warm", Completed);
  const api::Json& st = job["status"];
  EXPECT_EQ(st.value("desired", -1), 1) << api::DumpJson(st);
  EXPECT_EQ(st.value("succeeded", -1), 1);
  EXPECT_EQ(st.value("failed", 0), 0);  // zero is left out
  EXPECT_EQ(st.value("message", ""), "job has completed");
  ASSERT_EQ(st["nodes"].size(), 1u);
  EXPECT_EQ(st["nodes"][0].value("phase", ""), "Succeeded");
  EXPECT_EQ(st["nodes"][0].value("progress", 0), 100);
  EXPECT_TRUE(std::string(st["nodes"][0].value("imageID", "")).starts_with("sha256:"));
  EXPECT_NE(EventsFor(s, "warm").find("Pulled: node "), std::string::npos) << EventsFor(s, "warm");
  CommandResult get = s.Cli({"get", "imagepulljob"});
  EXPECT_NE(get.out.find("warm"), std::string::npos) << get.out;
  // The Node object lists the image now.
  CommandResult node = s.Cli({"get", "nodes", "-o", "json"});
  EXPECT_NE(node.out.find(ref), std::string::npos) << node.out;

  // With the registry gone, a sandbox on the image starts: nothing is left to pull.
  registry_->Kill();
  EXPECT_EQ(OutputOfSandboxOn(s, "warm-user", ref, "cat /data/hello; sha256sum /data/big"),
            "pulled ahead\n" + pushed.big_sha256 + "  /data/big\n");
  RemoveImage(ref);
}

TEST_F(ImagePullJobTest, ARegistryKilledMidPullIsRetriedAndNoPartialLayerIsUsed) {
  // 24 MiB through a relay at 6 MiB/s: about four seconds of transfer to act in.
  PushedImage pushed =
      PushThreeLayerImage(registry_->address(), "team/big", tmp_.Sub("layout"), 24 << 20);
  SlowRelay relay(registry_->address(), 6 << 20);
  const std::string ref = relay.address() + "/team/big:1";
  ServerProcess s("", {"--allowed-registries", relay.address()});
  ASSERT_EQ(s.Cli({"apply", "-f", "-"},
                  JobYaml("flaky", ref, "  pullPolicy: {backoffLimit: 6, timeoutSeconds: 60}\n"))
                .exit_code,
            0);
  // Progress shows while it runs; then the registry dies in the middle.
  api::Json mid = WaitJob(s, "flaky", [](const api::Json& st) {
    return st.contains("nodes") && st["nodes"].size() == 1 &&
           st["nodes"][0].value("bytesDone", int64_t{0}) > 0 &&
           st["nodes"][0].value("progress", 100) < 100;
  });
  EXPECT_EQ(mid["status"].value("active", 0), 1) << api::DumpJson(mid);
  CommandResult watch = s.Cli({"get", "ipj", "flaky"});
  EXPECT_NE(watch.out.find("%"), std::string::npos) << watch.out;
  registry_->Kill();
  WaitJob(s, "flaky", [](const api::Json& st) {
    return st.contains("nodes") && st["nodes"].size() == 1 &&
           st["nodes"][0].value("message", "").find("retrying") != std::string::npos;
  });
  // Back, on another port behind the same address, with the same storage.
  auto again = RegistryProcess::Start(tmp_.Sub("registry"));
  ASSERT_TRUE(again.ok()) << again.status();
  relay.set_upstream((*again)->address());
  api::Json done = WaitJob(s, "flaky", Completed, 180s);
  const api::Json& node = done["status"]["nodes"][0];
  EXPECT_EQ(node.value("phase", ""), "Succeeded") << api::DumpJson(done);
  EXPECT_GE(node.value("attempts", 0), 2) << api::DumpJson(done);
  // What was stored is the whole layer: a sandbox reads the file's exact bytes.
  EXPECT_EQ(OutputOfSandboxOn(s, "big-user", ref, "sha256sum /data/big"),
            pushed.big_sha256 + "  /data/big\n");
  RemoveImage(ref);
}

TEST_F(ImagePullJobTest, BadReferenceRegistryNotAllowedAndWrongDigestFailWithAReason) {
  PushThreeLayerImage(registry_->address(), "team/app", tmp_.Sub("layout"), 1024);
  ServerProcess s("", {"--allowed-registries", registry_->address()});
  const std::string zero(64, '0');
  struct Case {
    std::string name, image, says;
  };
  std::vector<Case> cases = {
      {"bad-ref", registry_->address() + "/Team/App::1", "Team/App::1"},
      {"not-allowed", "registry.unknown.example:5000/team/app:1", "registry.unknown.example:5000"},
      {"wrong-digest", registry_->address() + "/team/app@sha256:" + zero, zero},
  };
  for (const auto& c : cases) {
    ASSERT_EQ(
        s.Cli({"apply", "-f", "-"}, JobYaml(c.name, c.image, "  pullPolicy: {backoffLimit: 1}\n"))
            .exit_code,
        0);
  }
  for (const auto& c : cases) {
    api::Json job = WaitJob(s, c.name, Completed);
    const api::Json& st = job["status"];
    EXPECT_EQ(st.value("failed", 0), 1) << c.name << ": " << api::DumpJson(st);
    EXPECT_EQ(st["failedNodes"].size(), 1u) << c.name;
    ASSERT_EQ(st["nodes"].size(), 1u) << c.name;
    EXPECT_EQ(st["nodes"][0].value("phase", ""), "Failed") << c.name;
    std::string message = st["nodes"][0].value("message", "");
    EXPECT_NE(message.find(c.says), std::string::npos) << c.name << ": " << message;
    EXPECT_NE(EventsFor(s, c.name).find("PullImageFailed"), std::string::npos) << c.name;
  }
  // Bad input at admission names the field.
  CommandResult secrets =
      s.Cli({"apply", "-f", "-"}, JobYaml("secret", registry_->address() + "/team/app:1",
                                          "  pullSecrets: [mine]\n  parallelism: \"50%\"\n"));
  EXPECT_NE(secrets.exit_code, 0);
  EXPECT_NE(secrets.err.find("spec.pullSecrets"), std::string::npos) << secrets.err;
  EXPECT_NE(secrets.err.find("spec.parallelism"), std::string::npos) << secrets.err;
}

}  // namespace
}  // namespace warren::node::testing

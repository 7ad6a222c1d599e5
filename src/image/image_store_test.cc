#include "image/image_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/encoding.h"
#include "image/testing/oci_builder.h"

namespace warren::image {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::warren::image::testing::OciLayoutBuilder;
using ::warren::image::testing::ReadFile;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TarOfLayout;
using ::warren::image::testing::TempDir;
using ::warren::image::testing::WriteFile;

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    store_.reset();
    ImageStoreOptions options;
    options.root = tmp_.Sub("store");
    options.unpack.same_owner = geteuid() == 0;
    auto store = ImageStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }

  // base layer: /etc/os-release, /bin/sh; a second image adds /app on top of it.
  std::vector<TarEntry> BaseEntries() {
    return {TarEntry::Dir("etc"), TarEntry::File("etc/os-release", "ID=test\n"),
            TarEntry::Dir("bin"), TarEntry::File("bin/sh", "ELF", 0755)};
  }

  std::string MakeLayout(const std::string& name, const std::string& ref,
                         const std::vector<std::vector<TarEntry>>& layers,
                         const ImageConfig& config = {}) {
    std::string dir = tmp_.Sub(name);
    OciLayoutBuilder b(dir);
    std::vector<Descriptor> descriptors;
    for (const auto& entries : layers) descriptors.push_back(b.AddLayer(entries));
    b.AddImage(descriptors, config, ref);
    b.WriteIndex();
    return dir;
  }

  // The store's own directories hold nothing left over from failed work.
  void ExpectNoLeftovers() {
    EXPECT_THAT(Names(tmp_.Sub("store/staging")), IsEmpty());
    EXPECT_THAT(Names(tmp_.Sub("store/locks")), IsEmpty());
  }

  TempDir tmp_;
  std::unique_ptr<ImageStore> store_;
};

TEST_F(ImageStoreTest, ImportsALayoutAndResolvesLowerDirsAndConfig) {
  ImageConfig config;
  config.env = {"PATH=/bin", "LANG=C.UTF-8"};
  config.entrypoint = {"/bin/sh", "-c"};
  config.cmd = {"echo hi"};
  config.working_dir = "/work";
  config.user = "1000:1000";
  std::string layout = MakeLayout(
      "layout", "app:v1",
      {BaseEntries(), {TarEntry::Dir("app"), TarEntry::File("app/main.py", "print(1)\n")}}, config);
  auto record = store_->Import(layout);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->name, "app:v1");
  ASSERT_EQ(record->layers.size(), 2u);

  auto resolved = store_->Resolve("app:v1");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_EQ(resolved->lower_dirs.size(), 2u);
  EXPECT_EQ(ReadFile(resolved->lower_dirs[0] + "/etc/os-release"), "ID=test\n");
  EXPECT_EQ(ReadFile(resolved->lower_dirs[1] + "/app/main.py"), "print(1)\n");
  EXPECT_EQ(resolved->OverlayLowerDirs(), resolved->lower_dirs[1] + ":" + resolved->lower_dirs[0]);
  EXPECT_EQ(resolved->image.config.env, config.env);
  EXPECT_EQ(resolved->image.config.entrypoint, config.entrypoint);
  EXPECT_EQ(resolved->image.config.cmd, config.cmd);
  EXPECT_EQ(resolved->image.config.working_dir, "/work");
  EXPECT_EQ(resolved->image.config.user, "1000:1000");
  ExpectNoLeftovers();
}

TEST_F(ImageStoreTest, NameWithoutTagMeansLatest) {
  auto record = store_->Import(MakeLayout("l", "", {BaseEntries()}), {.name = "base"});
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->name, "base:latest");
  EXPECT_TRUE(store_->Resolve("base").ok());
  EXPECT_TRUE(store_->Resolve("base:latest").ok());
  EXPECT_EQ(store_->Resolve("base:other").status().code(), StatusCode::kNotFound);
}

TEST_F(ImageStoreTest, UnnamedLayoutNeedsAName) {
  auto record = store_->Import(MakeLayout("l", "", {BaseEntries()}));
  ASSERT_FALSE(record.ok());
  EXPECT_THAT(record.status().message(), HasSubstr("does not name its image"));
}

TEST_F(ImageStoreTest, ALayerSharedByTwoImagesIsStoredOnce) {
  auto a = store_->Import(MakeLayout("a", "a:1", {BaseEntries(), {TarEntry::File("a", "a")}}));
  auto b = store_->Import(MakeLayout("b", "b:1", {BaseEntries(), {TarEntry::File("b", "b")}}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->layers[0], b->layers[0]);
  EXPECT_EQ(store_->ListLayers().size(), 3u);
  EXPECT_EQ(store_->layers_unpacked(), 3u);
  auto ra = store_->Resolve("a:1");
  auto rb = store_->Resolve("b:1");
  EXPECT_EQ(ra->lower_dirs[0], rb->lower_dirs[0]);
}

TEST_F(ImageStoreTest, ReimportingIsCheap) {
  std::string layout = MakeLayout("a", "a:1", {BaseEntries()});
  ASSERT_TRUE(store_->Import(layout).ok());
  ASSERT_TRUE(store_->Import(layout).ok());
  EXPECT_EQ(store_->layers_unpacked(), 1u);
}

TEST_F(ImageStoreTest, LayerDigestMismatchIsRejectedAndLeavesNothing) {
  std::string dir = tmp_.Sub("bad");
  OciLayoutBuilder b(dir);
  Descriptor layer = b.AddLayer(BaseEntries());
  // Swap the blob's content for another valid layer: same name, different bytes.
  WriteFile(b.BlobPath(layer.digest),
            testing::BuildTar({TarEntry::File("evil", "x")}, LayerCompression::kGzip));
  b.AddImage({layer}, {}, "bad:1");
  b.WriteIndex();
  auto record = store_->Import(dir);
  ASSERT_FALSE(record.ok());
  EXPECT_EQ(record.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(record.status().message(), HasSubstr("does not match its digest"));
  EXPECT_THAT(store_->ListLayers(), IsEmpty());
  EXPECT_THAT(store_->List(), IsEmpty());
  EXPECT_THAT(Names(tmp_.Sub("store/layers/sha256")), IsEmpty());
  EXPECT_THAT(Names(tmp_.Sub("store/leases")), IsEmpty());
  ExpectNoLeftovers();
}

TEST_F(ImageStoreTest, ManifestDigestMismatchIsRejected) {
  std::string dir = MakeLayout("l", "x:1", {BaseEntries()});
  std::string index = ReadFile(dir + "/index.json");
  auto pos = index.find("sha256:") + 7;
  index[pos] = index[pos] == 'a' ? 'b' : 'a';
  WriteFile(dir + "/index.json", index);
  auto record = store_->Import(dir);
  ASSERT_FALSE(record.ok());
  // The altered digest names a blob that is not there, or one whose hash differs.
  EXPECT_THAT(record.status().message(), HasSubstr("blob sha256:"));
  EXPECT_THAT(store_->List(), IsEmpty());
}

TEST_F(ImageStoreTest, HostileLayerFailsTheImportAndLeavesNothing) {
  std::string dir =
      MakeLayout("evil", "evil:1",
                 {BaseEntries(),
                  {TarEntry::Symlink("escape", tmp_.path()), TarEntry::File("escape/pwned", "x")}});
  auto record = store_->Import(dir);
  ASSERT_FALSE(record.ok());
  EXPECT_EQ(record.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(record.status().message(), HasSubstr("passes through a symlink"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("pwned")));
  EXPECT_THAT(store_->List(), IsEmpty());
  EXPECT_THAT(Names(tmp_.Sub("store/leases")), IsEmpty());
  ExpectNoLeftovers();
  // Not even the good base layer it unpacked first stays.
  EXPECT_THAT(store_->ListLayers(), IsEmpty());
  EXPECT_THAT(Names(tmp_.Sub("store/layers/sha256")), IsEmpty());
}

// A sandbox's lease (kept until reboot: written without a sync) pins exactly like a durable one.
TEST_F(ImageStoreTest, LeasedLayersSurviveRemoveAndGcUntilReleased) {
  for (auto life : {ImageStore::LeaseLife::kDurable, ImageStore::LeaseLife::kUntilReboot}) {
    SCOPED_TRACE(life == ImageStore::LeaseLife::kDurable ? "durable" : "until reboot");
    ASSERT_TRUE(store_->Import(MakeLayout("l", "app:1", {BaseEntries()})).ok());
    auto leased = store_->AcquireLease("sandbox-1", "app:1", life);
    ASSERT_TRUE(leased.ok()) << leased.status();
    std::string lower = leased->lower_dirs[0];

    auto removed = store_->Remove("app:1");
    ASSERT_TRUE(removed.ok()) << removed.status();
    EXPECT_THAT(removed->removed_layers, IsEmpty());
    EXPECT_EQ(store_->Resolve("app:1").status().code(), StatusCode::kNotFound);
    ASSERT_TRUE(store_->Gc().ok());
    EXPECT_EQ(ReadFile(lower + "/etc/os-release"), "ID=test\n");

    ASSERT_TRUE(store_->ReleaseLease("sandbox-1").ok());
    auto gc = store_->Gc();
    ASSERT_TRUE(gc.ok()) << gc.status();
    EXPECT_EQ(gc->removed_layers.size(), 1u);
    EXPECT_GT(gc->freed_bytes, 0u);
    EXPECT_FALSE(std::filesystem::exists(lower));
    EXPECT_THAT(store_->ListLayers(), IsEmpty());
    ExpectNoLeftovers();
  }
}

TEST_F(ImageStoreTest, RemoveCollectsUnleasedLayersButKeepsSharedOnes) {
  ASSERT_TRUE(
      store_->Import(MakeLayout("a", "a:1", {BaseEntries(), {TarEntry::File("a", "")}})).ok());
  ASSERT_TRUE(
      store_->Import(MakeLayout("b", "b:1", {BaseEntries(), {TarEntry::File("b", "")}})).ok());
  auto removed = store_->Remove("a:1");
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->removed_layers.size(), 1u);  // a's own layer; the base stays for b
  EXPECT_TRUE(store_->Resolve("b:1").ok());
  EXPECT_EQ(store_->ListLayers().size(), 2u);
}

TEST_F(ImageStoreTest, LeasesAreIdempotentAndExclusivePerId) {
  ASSERT_TRUE(store_->Import(MakeLayout("a", "a:1", {BaseEntries()})).ok());
  auto b = store_->Import(MakeLayout("b", "b:1", {{TarEntry::File("b", "")}}));
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(store_->AcquireLease("s", "a:1").ok());
  ASSERT_TRUE(store_->AcquireLease("s", "a:1").ok());  // Again: the same pin.
  EXPECT_EQ(store_->AcquireLease("s", "b:1").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->AcquireLease("t", "nope:1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->AcquireLease("import:x", "a:1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->AcquireLease("", "a:1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListLeases().size(), 1u);
  ASSERT_TRUE(store_->ReleaseLease("s").ok());
  ASSERT_TRUE(store_->ReleaseLease("s").ok());  // Releasing twice is fine.
  EXPECT_THAT(store_->ListLeases(), IsEmpty());
}

TEST_F(ImageStoreTest, MovingALeaseRepinsTheNewImageAndFreesTheOldOne) {
  auto a = store_->Import(MakeLayout("a", "a:1", {{TarEntry::File("a", "")}}));
  auto b = store_->Import(MakeLayout("b", "b:1", {{TarEntry::File("b", "")}}));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(store_->AcquireLease("s", "a:1").ok());
  ASSERT_TRUE(store_->AcquireLease("s.next", "b:1").ok());
  ASSERT_TRUE(store_->MoveLease("s.next", "s").ok());
  auto leases = store_->ListLeases();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].id, "s");
  EXPECT_EQ(leases[0].image, "b:1");
  ASSERT_TRUE(store_->Remove("a:1").ok());  // a's layer is no longer pinned: it goes
  ASSERT_TRUE(store_->Remove("b:1").ok());  // b's stays for the lease
  EXPECT_EQ(store_->ListLayers().size(), 1u);
  EXPECT_EQ(store_->MoveLease("s.next", "s").code(), StatusCode::kNotFound);
}

TEST_F(ImageStoreTest, LayerLeasePinsLayersWithoutAnImage) {
  auto record = store_->Import(MakeLayout("a", "a:1", {BaseEntries()}));
  ASSERT_TRUE(record.ok());
  ASSERT_TRUE(store_->AcquireLayerLease("snapshot-1", record->layers).ok());
  ASSERT_TRUE(store_->Remove("a:1").ok());
  EXPECT_EQ(store_->ListLayers().size(), 1u);
  Digest unknown = Digest::FromHex(std::string(64, 'c'));
  EXPECT_EQ(store_->AcquireLayerLease("x", {unknown}).status().code(), StatusCode::kNotFound);
}

TEST_F(ImageStoreTest, StateSurvivesReopening) {
  ASSERT_TRUE(store_->Import(MakeLayout("a", "a:1", {BaseEntries()})).ok());
  ASSERT_TRUE(store_->AcquireLease("sandbox-9", "a:1").ok());
  ASSERT_TRUE(store_->Remove("a:1").ok());
  ASSERT_TRUE(store_->Import(MakeLayout("b", "b:2", {{TarEntry::File("b", "")}})).ok());
  Reopen();
  auto images = store_->List();
  ASSERT_EQ(images.size(), 1u);
  EXPECT_EQ(images[0].name, "b:2");
  auto leases = store_->ListLeases();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].id, "sandbox-9");
  EXPECT_EQ(leases[0].image, "a:1");
  EXPECT_EQ(store_->ListLayers().size(), 2u);
  ASSERT_TRUE(store_->ReleaseLease("sandbox-9").ok());
  ASSERT_TRUE(store_->Gc().ok());
  EXPECT_EQ(store_->ListLayers().size(), 1u);
}

TEST_F(ImageStoreTest, OpenCleansUpAfterACrashedImport) {
  // What a killed importer leaves: a staging dir with a half-unpacked layer, its unlocked lock
  // file and its pin.
  std::string staging = tmp_.Sub("store/staging/deadbeef");
  std::filesystem::create_directories(staging + "/layer/rootfs/usr");
  WriteFile(staging + "/layer/rootfs/usr/half", "x");
  WriteFile(staging + ".lock", "");
  Reopen();
  ExpectNoLeftovers();
}

TEST_F(ImageStoreTest, GcDropsThePinOfADeadImport) {
  auto record = store_->Import(MakeLayout("a", "a:1", {BaseEntries()}));
  ASSERT_TRUE(record.ok());
  // An importer that died after pinning the layer: its pin names a staging id nobody locks.
  WriteFile(tmp_.Sub("store/leases/" + base::Sha256Hex("import:0123456789abcdef") + ".json"),
            "{\"id\":\"import:0123456789abcdef\",\"image\":\"\",\"layers\":[\"" +
                record->layers[0].ToString() + "\"],\"createdAt\":\"x\"}");
  ASSERT_EQ(store_->ListLeases().size(), 1u);
  ASSERT_TRUE(store_->Remove("a:1").ok());
  auto gc = store_->Gc();
  ASSERT_TRUE(gc.ok());
  EXPECT_THAT(store_->ListLeases(), IsEmpty());
  EXPECT_THAT(store_->ListLayers(), IsEmpty());
}

TEST_F(ImageStoreTest, ConcurrentImportsOfOneLayerUnpackItOnce) {
  // A layer big enough that the importers overlap.
  std::vector<TarEntry> big = BaseEntries();
  for (int i = 0; i < 400; ++i) {
    big.push_back(TarEntry::File("data/f" + std::to_string(i), std::string(20000, 'a' + i % 26)));
  }
  std::string layout = MakeLayout("big", "", {big});
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  std::vector<Status> results(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto r = store_->Import(layout, {.name = "big:" + std::to_string(i)});
      results[i] = r.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& s : results) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(store_->layers_unpacked(), 1u);
  EXPECT_EQ(store_->ListLayers().size(), 1u);
  EXPECT_EQ(store_->List().size(), static_cast<size_t>(kThreads));
  ExpectNoLeftovers();
  EXPECT_THAT(Names(tmp_.Sub("store/leases")), IsEmpty());
}

TEST_F(ImageStoreTest, ConcurrentImportsFromSeveralProcessesUnpackOnce) {
  std::vector<TarEntry> big = BaseEntries();
  for (int i = 0; i < 300; ++i) {
    big.push_back(TarEntry::File("data/f" + std::to_string(i), std::string(20000, 'x')));
  }
  std::string layout = MakeLayout("big", "", {big});
  store_.reset();
  constexpr int kProcs = 4;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ImageStoreOptions options;
      options.root = tmp_.Sub("store");
      options.unpack.same_owner = geteuid() == 0;
      auto store = ImageStore::Open(options);
      if (!store.ok()) _exit(100);
      auto r = (*store)->Import(layout, {.name = "p:" + std::to_string(i)});
      if (!r.ok()) _exit(101);
      _exit(static_cast<int>((*store)->layers_unpacked()));
    }
    pids.push_back(pid);
  }
  int unpacked = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_LT(WEXITSTATUS(status), 100) << "child failed with " << WEXITSTATUS(status);
    unpacked += WEXITSTATUS(status);
  }
  EXPECT_EQ(unpacked, 1);
  Reopen();
  EXPECT_EQ(store_->List().size(), static_cast<size_t>(kProcs));
  EXPECT_EQ(store_->ListLayers().size(), 1u);
  ExpectNoLeftovers();
}

TEST_F(ImageStoreTest, ImportsATarballOfALayout) {
  std::string layout = MakeLayout("l", "tarred:1", {BaseEntries()});
  WriteFile(tmp_.Sub("image.tar"), TarOfLayout(layout));
  auto record = store_->Import(tmp_.Sub("image.tar"));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->name, "tarred:1");
  auto resolved = store_->Resolve("tarred:1");
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(ReadFile(resolved->lower_dirs[0] + "/bin/sh"), "ELF");
  ExpectNoLeftovers();
}

TEST_F(ImageStoreTest, TarballEntriesOutsideTheLayoutAreIgnored) {
  std::string layout = MakeLayout("l", "t:1", {BaseEntries()});
  std::vector<TarEntry> entries = {
      TarEntry::File("../escaped", "x"),
  };
  // The first entry is rejected outright (".."): the whole archive is refused.
  WriteFile(tmp_.Sub("evil.tar"), testing::BuildTar(entries, LayerCompression::kNone));
  auto record = store_->Import(tmp_.Sub("evil.tar"));
  ASSERT_FALSE(record.ok());
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("escaped")));
  // Unknown names are skipped, the layout still imports.
  std::string tar = TarOfLayout(layout);
  WriteFile(tmp_.Sub("extra.tar"),
            testing::BuildTar({TarEntry::File("blobs/sha256/notadigest", "x"),
                               TarEntry::Symlink("index.json.link", "/etc/passwd")},
                              LayerCompression::kNone));
  EXPECT_FALSE(store_->Import(tmp_.Sub("extra.tar")).ok());  // no index.json
  ExpectNoLeftovers();
}

TEST_F(ImageStoreTest, DamagedRecordIsReportedNotFatal) {
  ASSERT_TRUE(store_->Import(MakeLayout("a", "a:1", {BaseEntries()})).ok());
  for (const auto& name : Names(tmp_.Sub("store/images"))) {
    WriteFile(tmp_.Sub("store/images/" + name), "{not json");
  }
  EXPECT_THAT(store_->List(), IsEmpty());
  EXPECT_EQ(store_->Resolve("a:1").status().code(), StatusCode::kDataLoss);
}

TEST_F(ImageStoreTest, BadNamesAreRejected) {
  std::string layout = MakeLayout("a", "", {BaseEntries()});
  for (const char* name : {"UPPER", "a b", "../x", "x:", "x@sha256:00", ""}) {
    if (*name == '\0') continue;
    auto r = store_->Import(layout, {.name = name});
    EXPECT_FALSE(r.ok()) << name;
  }
  EXPECT_THAT(store_->List(), IsEmpty());
}

TEST_F(ImageStoreTest, RemovingAnUnknownImageIsNotFound) {
  EXPECT_EQ(store_->Remove("ghost").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace warren::image

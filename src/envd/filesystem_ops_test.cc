#include "envd/filesystem_ops.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "envd/dir_watcher.h"
#include "envd/file_transfer.h"

namespace warren::envd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class FilesystemOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envd_fs_test_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    me_.name = "me";
    me_.uid = getuid();
    me_.gid = getgid();
    me_.home = root_.string();
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string P(const std::string& rel) { return (root_ / rel).string(); }
  void Touch(const std::string& rel, const std::string& content = "") {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << content;
  }

  fs::path root_;
  os::UserInfo me_;
  os::UserDb users_;
  FilesystemOps ops_{users_};
};

TEST_F(FilesystemOpsTest, GoStylePermissionStrings) {
  EXPECT_EQ(GoPermissionString(S_IFREG | 0644), "-rw-r--r--");
  EXPECT_EQ(GoPermissionString(S_IFDIR | 0755), "drwxr-xr-x");
  EXPECT_EQ(GoPermissionString(S_IFLNK | 0777), "Lrwxrwxrwx");
  EXPECT_EQ(GoPermissionString(S_IFREG | S_ISUID | 0755), "urwxr-xr-x");
  EXPECT_EQ(GoPermissionString(S_IFCHR | 0666), "Dcrw-rw-rw-");
  EXPECT_EQ(GoPermissionString(S_IFDIR | S_ISVTX | 0777), "dtrwxrwxrwx");
}

TEST_F(FilesystemOpsTest, StatOfFileAndSymlink) {
  Touch("a.txt", "abcd");
  chmod(P("a.txt").c_str(), 0640);
  auto e = ops_.Stat(P("a.txt"));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->name, "a.txt");
  EXPECT_EQ(e->type, FileType::kFile);
  EXPECT_EQ(e->size, 4);
  EXPECT_EQ(e->mode, 0640u);
  EXPECT_EQ(e->permissions, "-rw-r-----");
  EXPECT_EQ(e->owner, users_.UserName(getuid()));

  fs::create_symlink("a.txt", root_ / "link");
  auto l = ops_.Stat(P("link"));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->type, FileType::kFile);  // the target's type, as E2B reports
  EXPECT_EQ(l->permissions, "Lrwxrwxrwx");
  EXPECT_EQ(l->mode, 0640u);
  EXPECT_EQ(l->symlink_target, fs::canonical(root_ / "a.txt").string());
  EXPECT_EQ(l->path, P("link"));

  fs::create_symlink("missing", root_ / "dangling");
  auto d = ops_.Stat(P("dangling"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->type, FileType::kUnspecified);

  auto missing = ops_.Stat(P("nope"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "path '" + P("nope") + "' does not exist");
}

TEST_F(FilesystemOpsTest, ListDirIsLexicalPreOrderLimitedByDepth) {
  Touch("file1.txt");
  Touch("subdir2/x.txt");
  Touch("subdir1/subdir1_2/deep.txt");
  fs::create_directories(root_ / "subdir1/subdir1_1");
  Touch("B.txt");
  auto names = [&](uint32_t depth) {
    std::vector<std::string> out;
    auto list = ops_.ListDir(root_.string(), depth);
    if (!list.ok()) return out;
    const std::vector<EntryInfo> entries = std::move(list).value();
    for (const auto& e : entries) {
      out.push_back(e.path.substr(root_.string().size() + 1));
    }
    return out;
  };
  EXPECT_EQ(names(0), (std::vector<std::string>{"B.txt", "file1.txt", "subdir1", "subdir2"}));
  EXPECT_EQ(names(2),
            (std::vector<std::string>{"B.txt", "file1.txt", "subdir1", "subdir1/subdir1_1",
                                      "subdir1/subdir1_2", "subdir2", "subdir2/x.txt"}));
  EXPECT_EQ(names(3).size(), 8u);
  EXPECT_EQ(ops_.ListDir(P("file1.txt"), 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops_.ListDir(P("nope"), 1).status().code(), StatusCode::kNotFound);
}

TEST_F(FilesystemOpsTest, MakeDirMoveRemove) {
  auto made = ops_.MakeDir(P("a/b/c"), me_);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->type, FileType::kDirectory);
  EXPECT_EQ(made->permissions, "drwxr-xr-x");
  EXPECT_EQ(ops_.MakeDir(P("a/b/c"), me_).status().code(), StatusCode::kAlreadyExists);
  Touch("f");
  EXPECT_EQ(ops_.MakeDir(P("f"), me_).status().code(), StatusCode::kInvalidArgument);

  auto moved = ops_.Move(P("f"), P("new/parent/g"), me_);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->path, P("new/parent/g"));
  EXPECT_FALSE(fs::exists(root_ / "f"));
  EXPECT_EQ(ops_.Move(P("f"), P("h"), me_).status().code(), StatusCode::kNotFound);

  fs::create_symlink(root_ / "new", root_ / "a/b/c/link-out");
  ASSERT_TRUE(ops_.Remove(P("a")).ok());
  EXPECT_FALSE(fs::exists(root_ / "a"));
  EXPECT_TRUE(fs::exists(root_ / "new/parent/g"));  // symlinks are not followed
  EXPECT_TRUE(ops_.Remove(P("a")).ok());            // missing is success
  EXPECT_EQ(ops_.Remove("/").code(), StatusCode::kInvalidArgument);
}

TEST_F(FilesystemOpsTest, UploadMultipartOctetStreamAndGzip) {
  UploadRequest up;
  up.user = me_;
  up.content_type = "multipart/form-data; boundary=XX";
  up.metadata = {{"owner", "me"}};
  std::string body =
      "--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dir/a.txt\"\r\n\r\n"
      "hello\r\n--XX\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nignored\r\n"
      "--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
      P("abs.txt") + "\"\r\n\r\nabs\r\n--XX--\r\n";
  size_t off = 0;
  auto reader = [&](char* buf, size_t n) -> Result<size_t> {
    size_t k = std::min<size_t>({n, body.size() - off, 5});  // small reads on purpose
    std::memcpy(buf, body.data() + off, k);
    off += k;
    return k;
  };
  auto written = ReceiveUpload(up, reader, ops_);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 2u);
  EXPECT_EQ((*written)[0].path, P("dir/a.txt"));
  EXPECT_EQ((*written)[1].path, P("abs.txt"));
  std::ifstream f(root_ / "dir/a.txt");
  std::string content((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(content, "hello");
  EXPECT_EQ(WrittenFilesJson(*written).substr(0, 60),
            std::string(R"([{"metadata":{"owner":"me"},"name":"a.txt","path":")") +
                P("dir/a.txt").substr(0, 9));

  // Octet-stream needs a path; gzip is decoded.
  UploadRequest raw;
  raw.user = me_;
  raw.content_type = "application/octet-stream";
  auto empty = [](char*, size_t) -> Result<size_t> { return size_t{0}; };
  EXPECT_EQ(ReceiveUpload(raw, empty, ops_).status().code(), StatusCode::kInvalidArgument);
  raw.path = "g.txt";
  raw.content_encoding = "gzip";
  // gzip of "hi\n"
  const std::string gz(
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\xc8\xe4\x02\x00\x7a\x7a\x6f\xed\x03\x00\x00"
      "\x00",
      23);
  size_t goff = 0;
  auto gzread = [&](char* buf, size_t n) -> Result<size_t> {
    size_t k = std::min(n, gz.size() - goff);
    std::memcpy(buf, gz.data() + goff, k);
    goff += k;
    return k;
  };
  auto g = ReceiveUpload(raw, gzread, ops_);
  ASSERT_TRUE(g.ok()) << g.status();
  std::ifstream gf(root_ / "g.txt");
  std::string gcontent((std::istreambuf_iterator<char>(gf)), {});
  EXPECT_EQ(gcontent, "hi\n");

  // A directory target is refused; corrupt gzip is refused.
  raw.path = "dir";
  raw.content_encoding.clear();
  EXPECT_EQ(ReceiveUpload(raw, empty, ops_).status().code(), StatusCode::kInvalidArgument);
  raw.path = "x";
  raw.content_encoding = "gzip";
  std::string junk = "not gzip at all";
  size_t joff = 0;
  auto jread = [&](char* buf, size_t n) -> Result<size_t> {
    size_t k = std::min(n, junk.size() - joff);
    std::memcpy(buf, junk.data() + joff, k);
    joff += k;
    return k;
  };
  EXPECT_EQ(ReceiveUpload(raw, jread, ops_).status().code(), StatusCode::kInvalidArgument);
  UploadRequest text;
  text.user = me_;
  text.content_type = "text/plain";
  EXPECT_EQ(ReceiveUpload(text, empty, ops_).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(FilesystemOpsTest, FailedUploadLeavesNoPartialFile) {
  // The body breaks off after some bytes were written (as when the disk fills: the write
  // fails at the same point): the file that was being written is gone, a file completed
  // before it in the same multipart body stays.
  UploadRequest up;
  up.user = me_;
  up.content_type = "multipart/form-data; boundary=XX";
  std::string body =
      "--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"done.txt\"\r\n\r\n"
      "complete\r\n--XX\r\nContent-Disposition: form-data; name=\"file\"; "
      "filename=\"cut.txt\"\r\n\r\n" +
      std::string(64 * 1024, 'x');
  size_t off = 0;
  auto breaks_off = [&](char* buf, size_t n) -> Result<size_t> {
    if (off == body.size()) return UnavailableError("the client went away");
    size_t k = std::min(n, body.size() - off);
    std::memcpy(buf, body.data() + off, k);
    off += k;
    return k;
  };
  auto written = ReceiveUpload(up, breaks_off, ops_);
  EXPECT_EQ(written.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(fs::exists(root_ / "done.txt"));
  EXPECT_FALSE(fs::exists(root_ / "cut.txt")) << "a partial upload must not be left behind";

  UploadRequest raw;
  raw.user = me_;
  raw.content_type = "application/octet-stream";
  raw.path = "raw.bin";
  body = std::string(300 * 1024, 'y');  // more than one read
  off = 0;
  EXPECT_FALSE(ReceiveUpload(raw, breaks_off, ops_).ok());
  EXPECT_FALSE(fs::exists(root_ / "raw.bin"));
}

TEST_F(FilesystemOpsTest, MetadataHeadersAreValidated) {
  auto ok = MetadataFromHeaders({{"X-Metadata-Owner", "me"}, {"Content-Type", "x"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->at("owner"), "me");
  EXPECT_FALSE(MetadataFromHeaders({{"X-Metadata-K", "bad\x01"}}).ok());
  EXPECT_FALSE(MetadataFromHeaders({{"X-Metadata-" + std::string(300, 'k'), "v"}}).ok());
  EXPECT_FALSE(MetadataFromHeaders({{"X-Metadata-a", std::string(4000, 'v')},
                                    {"X-Metadata-b", std::string(200, 'v')}})
                   .ok());
}

TEST_F(FilesystemOpsTest, WatcherReportsRelativeNamesIncludingNewSubdirectories) {
  std::mutex mu;
  std::vector<FilesystemEvent> events;
  bool started = false;
  auto w = DirWatcher::Start(
      {root_.string(), true, true, false}, ops_,
      [&](FilesystemEvent e) {
        std::lock_guard lock(mu);
        events.push_back(std::move(e));
      },
      [](Status) {}, [&] { started = true; });
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(started);
  fs::create_directories(root_ / "nested");
  std::this_thread::sleep_for(100ms);  // the new directory's watch is added on its CREATE
  Touch("nested/test_watch.txt", "x");
  auto has = [&](const std::string& name, EventType type) {
    std::lock_guard lock(mu);
    for (const auto& e : events) {
      if (e.name == name && e.type == type) return true;
    }
    return false;
  };
  for (int i = 0; i < 100 && !has("nested/test_watch.txt", EventType::kWrite); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(has("nested", EventType::kCreate));
  EXPECT_TRUE(has("nested/test_watch.txt", EventType::kCreate));
  EXPECT_TRUE(has("nested/test_watch.txt", EventType::kWrite));
  {
    std::lock_guard lock(mu);
    for (const auto& e : events) {
      if (e.name == "nested/test_watch.txt" && e.type == EventType::kWrite) {
        ASSERT_TRUE(e.entry.has_value());
        EXPECT_EQ(e.entry->path, P("nested/test_watch.txt"));
      }
    }
  }
  EXPECT_EQ(DirWatcher::Start({P("nope")}, ops_, {}, {}).status().code(), StatusCode::kNotFound);
  Touch("plain");
  EXPECT_EQ(DirWatcher::Start({P("plain")}, ops_, {}, {}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(FilesystemOpsTest, WatcherReportsWhatANewDirectoryAlreadyHeld) {
  std::mutex mu;
  std::vector<std::string> created;
  auto w = DirWatcher::Start(
      {root_.string(), true, false, false}, ops_,
      [&](FilesystemEvent e) {
        std::lock_guard lock(mu);
        if (e.type == EventType::kCreate) created.push_back(e.name);
      },
      [](Status) {});
  ASSERT_TRUE(w.ok());
  // Faster than the watcher can add watches for a/ and a/b/.
  fs::create_directories(root_ / "a/b");
  Touch("a/b/c", "x");
  auto seen = [&](const std::string& n) {
    std::lock_guard lock(mu);
    return std::find(created.begin(), created.end(), n) != created.end();
  };
  for (int i = 0; i < 100 && !seen("a/b/c"); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(seen("a"));
  EXPECT_TRUE(seen("a/b"));
  EXPECT_TRUE(seen("a/b/c"));
}

}  // namespace
}  // namespace warren::envd

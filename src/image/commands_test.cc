#include "image/commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "image/testing/oci_builder.h"

namespace warren::image {
namespace {

using ::testing::HasSubstr;
using ::warren::image::testing::OciLayoutBuilder;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TempDir;

TEST(CommandsTest, FormatsAlignedTables) {
  Table t{{"NAME", "SIZE"}, {{"base:latest", "65.2MB"}, {"b", "1kB"}}};
  EXPECT_EQ(FormatTable(t),
            "NAME          SIZE\n"
            "base:latest   65.2MB\n"
            "b             1kB\n");
  EXPECT_EQ(HumanSize(999), "999B");
  EXPECT_EQ(HumanSize(1500), "1.5kB");
  EXPECT_EQ(HumanSize(65196324), "65.2MB");
}

TEST(CommandsTest, ImportListRemove) {
  TempDir tmp;
  ImageStoreOptions options;
  options.root = tmp.Sub("store");
  options.unpack.same_owner = geteuid() == 0;
  auto store = std::move(ImageStore::Open(options)).value();
  OciLayoutBuilder b(tmp.Sub("layout"));
  b.AddImage({b.AddLayer({TarEntry::File("hello", "world")})}, {}, "hello:1");
  b.WriteIndex();

  auto imported = ImportImageCommand(*store, b.dir(), "");
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->rows.size(), 1u);
  EXPECT_EQ(imported->rows[0][0], "hello:1");
  EXPECT_EQ(imported->rows[0][2], "1");

  Table listed = ListImagesCommand(*store);
  ASSERT_EQ(listed.rows.size(), 1u);
  EXPECT_EQ(listed.rows[0][0], "hello:1");
  EXPECT_EQ(listed.rows[0][4], "5B");  // "world"

  auto removed = RemoveImagesCommand(*store, {"hello:1"});
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->rows[0][1], "removed");
  EXPECT_EQ(removed->rows[1][1], "1 layers, 5B freed");
  EXPECT_TRUE(ListImagesCommand(*store).rows.empty());

  auto missing = RemoveImagesCommand(*store, {"ghost"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("image 'ghost:latest' not found"));
  auto bad = ImportImageCommand(*store, tmp.Sub("nope"), "");
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace warren::image

#include "base/sealed_box.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "base/encoding.h"
#include "base/testing/temp_dir.h"

namespace warren::base {
namespace {

TEST(SealedBoxTest, OpensWhatItSealedUnderTheSameContextOnly) {
  SealedBox box = SealedBox::ForTesting();
  std::string sealed = box.Seal("tok-123", "team-a/i1/token");
  EXPECT_TRUE(SealedBox::LooksSealed(sealed));
  EXPECT_EQ(sealed.find("tok-123"), std::string::npos);
  EXPECT_EQ(*box.Open(sealed, "team-a/i1/token"), "tok-123");
  // Copied onto another object, or read as another field: refused.
  EXPECT_EQ(box.Open(sealed, "team-b/i1/token").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(box.Open(sealed, "team-a/i1/init").status().code(), StatusCode::kDataLoss);
  // Another install's key: refused.
  EXPECT_EQ(SealedBox::ForTesting("other").Open(sealed, "team-a/i1/token").status().code(),
            StatusCode::kDataLoss);
}

TEST(SealedBoxTest, EverySealIsFreshAndEmptyPlaintextRoundTrips) {
  SealedBox box = SealedBox::ForTesting();
  EXPECT_NE(box.Seal("same", "c"), box.Seal("same", "c"));
  EXPECT_EQ(*box.Open(box.Seal("", "c"), "c"), "");
}

TEST(SealedBoxTest, TamperedOrMalformedValuesAreDataLoss) {
  SealedBox box = SealedBox::ForTesting();
  std::string sealed = box.Seal("secret body", "ctx");
  for (size_t i = 3; i < sealed.size(); i += 5) {
    std::string bad = sealed;
    bad[i] = bad[i] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(box.Open(bad, "ctx").ok()) << i;
  }
  for (std::string_view bad : {"", "plain-token", "v1.", "v1.!!!", "v1.AAAA", "v2.AAAA"}) {
    EXPECT_EQ(box.Open(bad, "ctx").status().code(), StatusCode::kDataLoss) << bad;
  }
}

TEST(SealedBoxTest, TheKeyFileIsMadeOncePrivateAndKept) {
  testing::TempDir dir;
  std::string path = dir.path() + "/seal.key";
  auto first = SealedBox::LoadOrCreate(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = SealedBox::LoadOrCreate(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again->Open(first->Seal("x", "c"), "c"), "x");
}

}  // namespace
}  // namespace warren::base

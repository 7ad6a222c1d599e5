#include "server/auth/key_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "server/auth/api_key.h"
#include "store/testing/temp_store.h"

namespace warren::server::auth {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class KeyStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<KeyStore> Open() {
    auto s = KeyStore::Open(dir_.path() + "/auth");
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  store::testing::TempDir dir_;
};

TEST(ApiKeyTest, KeysHaveTheShapeBothSdksAccept) {
  std::string key = NewApiKey();
  EXPECT_EQ(key.size(), 44u);
  EXPECT_TRUE(key.starts_with("e2b_"));
  EXPECT_TRUE(IsWellFormedApiKey(key));
  EXPECT_NE(NewApiKey(), key);
  EXPECT_FALSE(IsWellFormedApiKey("e2b_" + std::string(40, 'G')));
  EXPECT_FALSE(IsWellFormedApiKey("e2b_" + std::string(39, 'a')));
  EXPECT_FALSE(IsWellFormedApiKey("E2B_" + std::string(40, 'a')));
  EXPECT_FALSE(IsWellFormedApiKey(""));
  EXPECT_EQ(MaskApiKey("e2b_0123456789abcdef0123456789abcdef01234567"), "e2b_0123...4567");
}

TEST_F(KeyStoreTest, CreatedKeyAuthenticatesAsItsTeamAndIsStoredOnlyHashed) {
  auto keys = Open();
  auto created = keys->Create({.team = "alpha", .name = "ci"});
  ASSERT_TRUE(created.ok()) << created.status();
  auto who = keys->Authenticate(created->key);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->team, "alpha");
  EXPECT_EQ(who->key_name, "ci");
  EXPECT_FALSE(who->admin);
  EXPECT_EQ(who->key_id, created->record.id);

  std::string file = ReadAll(dir_.path() + "/auth/keys.json");
  EXPECT_EQ(file.find(created->key), std::string::npos) << "the key itself must never be stored";
  EXPECT_NE(file.find(created->record.hash), std::string::npos);
  EXPECT_EQ(ModeOf(dir_.path() + "/auth"), 0700u);
  EXPECT_EQ(ModeOf(dir_.path() + "/auth/keys.json"), 0600u);
  EXPECT_EQ(ModeOf(dir_.path() + "/auth/pepper"), 0600u);
}

TEST_F(KeyStoreTest, WrongMissingAndMalformedKeysAreUnauthenticated) {
  auto keys = Open();
  ASSERT_TRUE(keys->Create({.team = "alpha"}).ok());
  for (std::string bad :
       {std::string(), std::string("e2b_nothex"), NewApiKey(), std::string("Bearer x")}) {
    auto who = keys->Authenticate(bad);
    ASSERT_FALSE(who.ok()) << bad;
    EXPECT_EQ(who.status().code(), StatusCode::kUnauthenticated) << bad;
  }
}

TEST_F(KeyStoreTest, KeysSurviveReopenAndAnotherProcessesChangesAreSeen) {
  auto a = Open();
  auto b = Open();  // as `warren apikey bootstrap` next to a running server
  auto created = a->Create({.team = "alpha"});
  ASSERT_TRUE(created.ok());
  EXPECT_TRUE(b->Authenticate(created->key).ok()) << "b must reload the replaced file";
  ASSERT_TRUE(b->Remove(created->record.id).ok());
  EXPECT_FALSE(a->Authenticate(created->key).ok()) << "a must see b's removal";
  auto again = b->Create({.team = "beta"});
  ASSERT_TRUE(again.ok());
  a.reset();
  b.reset();
  auto reopened = Open();
  auto who = reopened->Authenticate(again->key);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->team, "beta");
}

TEST_F(KeyStoreTest, TheLastAdminKeyCannotBeRemoved) {
  auto keys = Open();
  auto admin = keys->Create({.team = "default", .name = "admin", .admin = true});
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(*keys->HasAdminKey());
  Status s = keys->Remove("admin");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  ASSERT_TRUE(keys->Create({.team = "default", .name = "admin2", .admin = true}).ok());
  EXPECT_TRUE(keys->Remove("admin").ok());
  EXPECT_FALSE(keys->Authenticate(admin->key).ok());
  EXPECT_EQ(keys->Remove("admin").code(), StatusCode::kNotFound);
}

TEST_F(KeyStoreTest, BadTeamsAndDuplicateNamesAreRefusedWithoutChangingAnything) {
  auto keys = Open();
  for (std::string team :
       std::vector<std::string>{"", "Upper", "has space", "-dash", std::string(64, 'a')}) {
    auto r = keys->Create({.team = team});
    ASSERT_FALSE(r.ok()) << team;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("team"), std::string::npos) << r.status();
  }
  ASSERT_TRUE(keys->Create({.team = "alpha", .name = "same"}).ok());
  auto dup = keys->Create({.team = "beta", .name = "same"});
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(keys->List()->size(), 1u);
}

TEST_F(KeyStoreTest, DifferentInstallsHashTheSameKeyDifferently) {
  store::testing::TempDir other;
  auto a = Open();
  auto b = KeyStore::Open(other.path() + "/auth");
  ASSERT_TRUE(b.ok());
  auto created = a->Create({.team = "alpha"});
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE((*b)->Authenticate(created->key).ok());
  std::string pepper_a = ReadAll(dir_.path() + "/auth/pepper");
  std::string pepper_b = ReadAll(other.path() + "/auth/pepper");
  EXPECT_NE(pepper_a, pepper_b);
  EXPECT_EQ(created->record.hash, HashApiKey(pepper_a.substr(0, 64), created->key));
}

TEST_F(KeyStoreTest, ACorruptKeyFileIsAnErrorNotACrash) {
  auto keys = Open();
  ASSERT_TRUE(keys->Create({.team = "alpha"}).ok());
  {
    std::ofstream f(dir_.path() + "/auth/keys.json", std::ios::trunc);
    f << "{\"keys\": [ {\"id\": 1";
  }
  auto who = keys->Authenticate(NewApiKey());
  ASSERT_FALSE(who.ok());
  EXPECT_EQ(who.status().code(), StatusCode::kInternal);
  EXPECT_NE(who.status().message().find("keys.json"), std::string::npos) << who.status();
}

}  // namespace
}  // namespace warren::server::auth

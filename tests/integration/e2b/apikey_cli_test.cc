// `warren apikey` with the real binary: the first-run bootstrap (offline, what run.sh does) and
// create / ls / rm through a real `warren server`, whose E2B routes then accept or refuse the keys.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "api/json.h"
#include "process.h"

namespace warren::testing {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// Every e2b_ key printed in `text`.
std::vector<std::string> Keys(const std::string& text) {
  std::vector<std::string> out;
  std::regex re("e2b_[0-9a-f]{40}");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back(it->str());
  }
  return out;
}

class ApiKeyCli : public ::testing::Test {
 protected:
  std::string Home() const { return dir_.path() + "/home"; }
  std::string DataDir() const { return dir_.path() + "/data"; }

  CommandResult Warren(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), WARREN_BIN);
    env.emplace("HOME", Home());
    if (!env.count("E2B_API_KEY")) env["E2B_API_KEY"] = "";
    return RunCommand(args, env);
  }
  int Status(const std::string& key) {
    net::ClientRequest req;
    req.target = "/v2/sandboxes";
    req.headers.Set("X-API-Key", key);
    auto resp = server_->http().Do(req);
    return resp.ok() ? resp->status : -1;
  }

  store::testing::TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(ApiKeyCli, BootstrapMakesTheAdminKeyOnceAndPrintsTheExports) {
  CommandResult first = Warren({"apikey", "bootstrap", "--data-dir", DataDir()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto keys = Keys(first.out);
  ASSERT_EQ(keys.size(), 2u) << first.out;  // once shown, once in the export line
  const std::string key = keys[0];
  EXPECT_TRUE(Contains(first.out, "export E2B_API_URL=http://127.0.0.1:7780")) << first.out;
  EXPECT_TRUE(Contains(first.out, "export E2B_SANDBOX_URL=http://127.0.0.1:7781")) << first.out;
  EXPECT_TRUE(Contains(first.out, "export E2B_API_KEY=" + key)) << first.out;
  EXPECT_EQ(ReadFile(DataDir() + "/admin-key"), key + "\n");
  EXPECT_EQ(ModeOf(DataDir() + "/admin-key"), 0600u);
  EXPECT_TRUE(Contains(ReadFile(Home() + "/.warren/config"), "apiKey: " + key));
  EXPECT_EQ(ModeOf(Home() + "/.warren/config"), 0600u);
  EXPECT_FALSE(Contains(ReadFile(DataDir() + "/auth/keys.json"), key)) << "stored hashed only";

  CommandResult second = Warren({"apikey", "bootstrap", "--data-dir", DataDir()});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(Keys(second.out).empty()) << "a key is printed once: " << second.out;
  EXPECT_TRUE(Contains(second.out, "exists already")) << second.out;

  server_ = std::make_unique<ServerProcess>(DataDir());
  EXPECT_EQ(Status(key), 200);
}

TEST_F(ApiKeyCli, BootstrapForADomainPrintsTheDomainInsteadOfTheGatewayUrl) {
  CommandResult out =
      Warren({"apikey", "bootstrap", "--data-dir", DataDir(), "--domain", "sbx.example.test"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_TRUE(Contains(out.out, "export E2B_DOMAIN=sbx.example.test")) << out.out;
  EXPECT_FALSE(Contains(out.out, "E2B_SANDBOX_URL")) << out.out;
}

TEST_F(ApiKeyCli, CreateListRemoveThroughTheServer) {
  ASSERT_EQ(Warren({"apikey", "bootstrap", "--data-dir", DataDir()}).exit_code, 0);
  server_ = std::make_unique<ServerProcess>(DataDir());
  const std::vector<std::string> at = {"--server", server_->address()};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), at.begin(), at.end());
    return args;
  };

  CommandResult created = Warren(with({"apikey", "create", "--team", "alpha", "--name", "ci"}));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto keys = Keys(created.out);
  ASSERT_EQ(keys.size(), 1u) << created.out;
  const std::string ci = keys[0];
  EXPECT_EQ(Status(ci), 200) << "the new key works at once";

  CommandResult ls = Warren(with({"apikey", "ls"}));
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_TRUE(Contains(ls.out, "ID")) << ls.out;
  EXPECT_TRUE(Contains(ls.out, "admin")) << ls.out;
  EXPECT_TRUE(Contains(ls.out, "ci")) << ls.out;
  EXPECT_TRUE(Contains(ls.out, ci.substr(0, 8) + "...")) << ls.out;
  EXPECT_TRUE(Keys(ls.out).empty()) << "ls never shows a whole key: " << ls.out;

  // A team key may not mint keys for another team; the message says why.
  CommandResult foreign =
      Warren(with({"apikey", "create", "--team", "beta"}), {{"E2B_API_KEY", ci}});
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_TRUE(Contains(foreign.err, "own team")) << foreign.err;

  CommandResult rm = Warren(with({"apikey", "rm", "ci"}));
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(Status(ci), 401) << "a removed key stops working at once";
  CommandResult again = Warren(with({"apikey", "rm", "ci"}));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(Contains(again.err, "not found")) << again.err;
  CommandResult last = Warren(with({"apikey", "rm", "admin"}));
  EXPECT_EQ(last.exit_code, 1);
  EXPECT_TRUE(Contains(last.err, "last admin key")) << last.err;
}

TEST_F(ApiKeyCli, WithoutAKeyTheCliSaysWhereToPutOne) {
  server_ = std::make_unique<ServerProcess>(DataDir());
  CommandResult r = Warren({"--server", server_->address(), "apikey", "ls"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "no API key")) << r.err;
  CommandResult bad =
      Warren({"--server", server_->address(), "apikey", "ls"}, {{"E2B_API_KEY", "e2b_nope"}});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(Contains(bad.err, "invalid API key")) << bad.err;
}

}  // namespace
}  // namespace warren::testing

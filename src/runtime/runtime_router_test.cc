#include "runtime/runtime_router.h"

#include <gtest/gtest.h>

#include "runtime/testing/fake_runtime.h"

namespace warren::runtime {
namespace {

using testing::FakeRuntime;

SandboxSpec Spec(const std::string& id, const std::string& cls) {
  SandboxSpec s;
  s.id = id;
  s.layers = {"/layer"};
  s.writable_dir = "/w/" + id;
  s.command = {"/bin/true"};
  s.runtime_class = cls;
  return s;
}

// Two classes on one node: each sandbox lives in the runtime its class names, every later call
// reaches that runtime, and after a restart each is found where it was made.
class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto native = std::make_unique<FakeRuntime>();
    auto gvisor = std::make_unique<FakeRuntime>();
    native_ = native.get();
    gvisor_ = gvisor.get();
    std::map<std::string, RuntimePtr, std::less<>> classes;
    classes.emplace("native", std::move(native));
    classes.emplace("gvisor", std::move(gvisor));
    router_ = std::make_unique<RuntimeRouter>(std::move(classes), "native");
  }
  FakeRuntime* native_ = nullptr;
  FakeRuntime* gvisor_ = nullptr;
  std::unique_ptr<RuntimeRouter> router_;
};

TEST_F(RouterTest, EachCallReachesTheRuntimeOfTheSandboxsClass) {
  EXPECT_EQ(router_->Classes(), (std::vector<std::string>{"native", "gvisor"}));
  ASSERT_TRUE(router_->Create(Spec("a", "")).ok());
  ASSERT_TRUE(router_->Create(Spec("b", "gvisor")).ok());
  ASSERT_TRUE(router_->Start("a").ok());
  ASSERT_TRUE(router_->Start("b").ok());
  ASSERT_TRUE(router_->Pause("b").ok());
  EXPECT_EQ(native_->Calls(), (std::vector<std::string>{"Create a", "Start a"}));
  EXPECT_EQ(gvisor_->Calls(), (std::vector<std::string>{"Create b", "Start b", "Pause b"}));
  EXPECT_EQ(*router_->ClassOf("b"), "gvisor");
  EXPECT_EQ(router_->List().size(), 2u);

  // An id is one sandbox across classes; an unknown class or id is a clear error.
  EXPECT_EQ(router_->Create(Spec("a", "gvisor")).code(), StatusCode::kAlreadyExists);
  Status unknown = router_->Create(Spec("c", "kata"));
  EXPECT_EQ(unknown.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(unknown.message().find("\"kata\""), std::string::npos);
  EXPECT_EQ(router_->Start("nope").code(), StatusCode::kNotFound);
  // Hibernate reaches the sandbox's own runtime, which says when it cannot.
  EXPECT_EQ(router_->Hibernate("b").code(), StatusCode::kUnimplemented);
  EXPECT_EQ(router_->Hibernate("nope").code(), StatusCode::kNotFound);

  ASSERT_TRUE(router_->Destroy("b").ok());
  EXPECT_EQ(router_->ClassOf("b").status().code(), StatusCode::kNotFound);
}

TEST_F(RouterTest, AdoptionFindsEachSandboxInTheRuntimeThatMadeIt) {
  native_->SeedForAdoption(Spec("n1", ""), SandboxState::kRunning);
  gvisor_->SeedForAdoption(Spec("g1", "gvisor"), SandboxState::kPaused);
  gvisor_->AddOrphan(Orphan{"g2", "/run/g2", "no state record"});
  auto report = router_->Adopt();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->adopted.size(), 2u);
  EXPECT_EQ(*router_->ClassOf("n1"), "native");
  EXPECT_EQ(*router_->ClassOf("g1"), "gvisor");
  ASSERT_TRUE(router_->Resume("g1").ok());
  EXPECT_EQ(gvisor_->Calls().back(), "Resume g1");
  ASSERT_EQ(report->orphans.size(), 1u);
  ASSERT_TRUE(router_->RemoveOrphan(report->orphans[0]).ok());
}

}  // namespace
}  // namespace warren::runtime

#include "controller/testing/pool_fixture.h"

#include "controller/testing/eventually.h"
#include "store/testing/objects.h"

namespace warren::controller::testing {

const api::SandboxSecrets& TestSecrets() {
  static const api::SandboxSecrets secrets = api::SandboxSecrets::ForTesting();
  return secrets;
}

PoolControllerTest::PoolControllerTest()
    : informers_(std::make_unique<PoolInformers>(store_.store(), TestSecrets())),
      sets_(std::make_unique<SandboxSetController>(*informers_, nullptr)),
      claimer_(std::make_unique<claim::PoolClaimer>(*informers_, nullptr, nullptr)) {}

PoolControllerTest::~PoolControllerTest() = default;

void PoolControllerTest::SetUp() {
  Status started = informers_->Start();
  ASSERT_TRUE(started.ok()) << started;
  started = sets_->Start();
  ASSERT_TRUE(started.ok()) << started;
  started = StartControllerUnderTest();
  ASSERT_TRUE(started.ok()) << started;
  node_ = std::make_unique<PoolTestNode>(store_.store());
}

void PoolControllerTest::TearDown() {
  StopControllerUnderTest();
  sets_->Stop();
  informers_->Stop();
}

void PoolControllerTest::CreatePool(const api::Object& set) {
  auto created = store_->Create(set);
  ASSERT_TRUE(created.ok()) << created.status();
  const api::ObjectMeta& meta = set.metadata;
  size_t replicas = set.spec().value("replicas", size_t{0});
  ASSERT_TRUE(Eventually([&] {
    return claimer_->index().Available(meta.namespace_, meta.name) == replicas;
  })) << "pool "
      << meta.name << " never had " << replicas << " members available";
}

void PoolControllerTest::CreatePool(const std::string& name, int replicas) {
  CreatePool(store::testing::MakeSandboxSet(name, replicas));
}

}  // namespace warren::controller::testing

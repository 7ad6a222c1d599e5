#include "controller/pool_informers.h"

#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/check.h"

namespace warren::controller {

PoolInformers::PoolInformers(store::Store& store, const api::SandboxSecrets& secrets)
    : store_(store), secrets_(secrets) {
  auto pool_selector = api::LabelSelector::Parse(api::labels::kSandboxPool);
  CHECK_OK(pool_selector.status());
  sets_ = std::make_unique<Informer>(
      store, Informer::Options{.kind = &api::SandboxSetKind(), .name = "sandboxsets"});
  sandboxes_ = std::make_unique<Informer>(store, Informer::Options{.kind = &api::SandboxKind(),
                                                                   .label_selector = *pool_selector,
                                                                   .name = "pool-sandboxes"});
  templates_ = std::make_unique<Informer>(
      store, Informer::Options{.kind = &api::SandboxTemplateKind(), .name = "sandboxtemplates"});
  nodes_ = std::make_unique<Informer>(
      store, Informer::Options{.kind = &api::NodeKind(), .name = "pool-nodes"});
}

PoolInformers::~PoolInformers() { Stop(); }

Status PoolInformers::Start() {
  RETURN_IF_ERROR(templates_->Start());
  RETURN_IF_ERROR(nodes_->Start());
  RETURN_IF_ERROR(sets_->Start());
  RETURN_IF_ERROR(sandboxes_->Start());
  started_ = true;
  return Status::Ok();
}

void PoolInformers::Stop() {
  sandboxes_->Stop();
  sets_->Stop();
  nodes_->Stop();
  templates_->Stop();
}

}  // namespace warren::controller

#include "controller/pool_manager.h"

namespace warren::controller {

PoolManager::PoolManager(store::Store& store, const api::SandboxSecrets& secrets,
                         claim::SandboxConnector* connector, SandboxResetter* resetter,
                         claim::PoolClaimer::RouteHook on_claimed, PoolManagerOptions options)
    : informers_(std::make_unique<PoolInformers>(store, secrets)),
      events_(std::make_unique<obs::EventRecorder>(
          store, obs::EventRecorder::Options{.component = "pool-controller"})) {
  // Every handler is added here, before the informers start.
  sets_ = std::make_unique<SandboxSetController>(*informers_, events_.get(), options.sets);
  claimer_ = std::make_unique<claim::PoolClaimer>(*informers_, connector, std::move(on_claimed),
                                                  options.claims);
  sandbox_claims_ = std::make_unique<SandboxClaimController>(*informers_, *claimer_, events_.get(),
                                                             options.sandbox_claims);
  recycle_ = std::make_unique<RecycleController>(*informers_, resetter, connector, events_.get(),
                                                 options.recycle);
  status_metrics_ = std::make_unique<SandboxStatusMetrics>(store);
}

PoolManager::~PoolManager() { Stop(); }

Status PoolManager::Start() {
  RETURN_IF_ERROR(informers_->Start());
  RETURN_IF_ERROR(sets_->Start());
  RETURN_IF_ERROR(claimer_->Start());
  RETURN_IF_ERROR(sandbox_claims_->Start());
  RETURN_IF_ERROR(recycle_->Start());
  RETURN_IF_ERROR(status_metrics_->Start());
  started_ = true;
  return Status::Ok();
}

void PoolManager::Stop() {
  started_ = false;
  status_metrics_->Stop();
  claimer_->Stop();  // first: claims in flight (SandboxClaim workers) stop waiting
  recycle_->Stop();
  sandbox_claims_->Stop();
  sets_->Stop();
  informers_->Stop();
}

}  // namespace warren::controller

#include "controller/pool_manager.h"

#include "base/check.h"

namespace warren::controller {

PoolManager::PoolManager(store::Store& store, const api::SandboxSecrets& secrets,
                         claim::SandboxConnector* connector, SandboxResetter* resetter,
                         claim::PoolClaimer::RouteHook on_claimed, PoolManagerOptions options)
    : informers_(std::make_unique<PoolInformers>(store, secrets)),
      events_(std::make_unique<obs::EventRecorder>(
          store, obs::EventRecorder::Options{.component = "pool-controller"})) {
  // Every handler is added here, before the informers start.
  const bool controllers = options.parts != PoolParts::kClaimer;
  if (controllers) {
    sets_ = std::make_unique<SandboxSetController>(*informers_, events_.get(), options.sets);
  }
  if (options.parts != PoolParts::kControllers) {
    claimer_ = std::make_unique<claim::PoolClaimer>(*informers_, connector, std::move(on_claimed),
                                                    options.claims);
  }
  if (controllers) {
    claim::Claimer* claimer = claimer_ ? claimer_.get() : options.claimer;
    CHECK_MSG(claimer != nullptr, "PoolParts::kControllers needs options.claimer");
    sandbox_claims_ = std::make_unique<SandboxClaimController>(*informers_, *claimer, events_.get(),
                                                               options.sandbox_claims);
    recycle_ = std::make_unique<RecycleController>(*informers_, resetter, connector, events_.get(),
                                                   options.recycle);
    hibernator_ = std::make_unique<PoolHibernator>(*informers_, events_.get());
    status_metrics_ = std::make_unique<SandboxStatusMetrics>(store);
  }
}

PoolManager::~PoolManager() { Stop(); }

Status PoolManager::Start() {
  RETURN_IF_ERROR(informers_->Start());
  if (sets_) RETURN_IF_ERROR(sets_->Start());
  if (claimer_) RETURN_IF_ERROR(claimer_->Start());
  if (sandbox_claims_) RETURN_IF_ERROR(sandbox_claims_->Start());
  if (recycle_) RETURN_IF_ERROR(recycle_->Start());
  if (hibernator_) RETURN_IF_ERROR(hibernator_->Start());
  if (status_metrics_) RETURN_IF_ERROR(status_metrics_->Start());
  started_ = true;
  return Status::Ok();
}

void PoolManager::Stop() {
  started_ = false;
  if (status_metrics_) status_metrics_->Stop();
  if (claimer_) claimer_->Stop();  // first: claims in flight (SandboxClaim workers) stop waiting
  if (recycle_) recycle_->Stop();
  if (hibernator_) hibernator_->Stop();
  if (sandbox_claims_) sandbox_claims_->Stop();
  if (sets_) sets_->Stop();
  informers_->Stop();
}

}  // namespace warren::controller

#include "controller/sandboxclaim_controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <optional>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox_claim.h"
#include "base/log.h"
#include "obs/sandbox_metric_help.h"
#include "trace/object_context.h"
#include "trace/span.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

std::string KeyOf(std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", ns, name);
}

}  // namespace

SandboxClaimController::SandboxClaimController(PoolInformers& informers, claim::Claimer& claimer,
                                               obs::EventRecorder* events,
                                               SandboxClaimControllerOptions options,
                                               base::Clock& clock)
    : informers_(informers),
      store_(informers.store()),
      claimer_(claimer),
      events_(events),
      options_(options),
      clock_(clock),
      claims_(std::make_unique<Informer>(
          informers.store(),
          Informer::Options{.kind = &api::SandboxClaimKind(), .name = "sandboxclaims"})),
      claims_total_(obs::Metrics::Default().Counter(
          "sandboxset_claims_total", "Sandboxes claimed by SandboxClaims, by result.",
          {{"source", "k8s"}})),
      expired_total_(obs::Metrics::Default().Counter("sandboxclaim_expired_total",
                                                     "SandboxClaims deleted by ttlAfterCompleted.",
                                                     {{"source", "k8s"}})),
      duration_({.duration = "sandbox_claim_duration_seconds",
                 .duration_help = obs::help::kClaimDuration,
                 .buckets = obs::ClaimDurationBuckets(),
                 .const_labels = {{"source", "k8s"}}}) {
  claims_->AddHandler([this](const Informer::Change& c) {
    if (c.type == store::EventType::kDeleted) return;
    queue_.Add(KeyOf(c.object->metadata.namespace_, c.object->metadata.name));
  });
  informers_.sandboxes().AddHandler([this](const Informer::Change& c) {
    auto it = c.object->metadata.labels.find(api::labels::kClaimName);
    if (it != c.object->metadata.labels.end()) {
      queue_.Add(KeyOf(c.object->metadata.namespace_, it->second));
    }
  });
}

SandboxClaimController::~SandboxClaimController() { Stop(); }

Status SandboxClaimController::Start() {
  RETURN_IF_ERROR(claims_->Start());
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
  started_ = true;
  return Status::Ok();
}

void SandboxClaimController::Stop() {
  if (!started_) return;
  started_ = false;
  queue_.ShutDown();
  for (auto& t : workers_) t.join();
  workers_.clear();
  claims_->Stop();
}

void SandboxClaimController::Worker() {
  while (auto key = queue_.Get()) {
    auto slash = key->find('/');
    auto next = Reconcile(key->substr(0, slash), key->substr(slash + 1));
    if (!next.ok()) {
      base::Logger("controller")
          ->warn("sandboxclaim reconcile failed key={} error={}", *key, next.status().ToString());
      queue_.AddWithBackoff(*key);
    } else {
      queue_.Forget(*key);
      if (*next > 0ms) queue_.AddAfter(*key, *next);
    }
    queue_.Done(*key);
  }
}

std::vector<ObjectPtr> SandboxClaimController::ClaimedBy(const api::Object& claim) const {
  std::vector<ObjectPtr> out;
  for (const auto& s : informers_.sandboxes().List()) {
    if (s->metadata.namespace_ != claim.metadata.namespace_ || s->metadata.deletion_timestamp) {
      continue;
    }
    auto it = s->metadata.labels.find(api::labels::kClaimName);
    if (it == s->metadata.labels.end() || it->second != claim.metadata.name) continue;
    bool owned =
        std::any_of(s->metadata.owner_references.begin(), s->metadata.owner_references.end(),
                    [&](const auto& r) { return r.uid == claim.metadata.uid; });
    if (owned) out.push_back(s);
  }
  return out;
}

Result<milliseconds> SandboxClaimController::Reconcile(std::string_view ns, std::string_view name) {
  const std::string key = KeyOf(ns, name);
  ObjectPtr claim = claims_->Get(ns, name);
  if (!claim || claim->metadata.deletion_timestamp) {
    own_writes_.Forget(key);
    return 0ms;
  }
  ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxClaimSpec>(*claim));
  auto decoded = api::DecodeStatus<api::SandboxClaimStatus>(*claim);
  api::SandboxClaimStatus status = decoded.ok() ? *decoded : api::SandboxClaimStatus{};
  base::WallTime now = clock_.Now();
  int32_t replicas = spec.replicas.value_or(1);

  if (status.phase == "Completed") {
    auto ttl = spec.ttl_after_completed.value_or(api::Duration{60min}).value;
    if (ttl < std::chrono::nanoseconds(0)) return 0ms;
    base::WallTime due =
        status.completion_time.value_or(now) + duration_cast<base::WallTime::duration>(ttl);
    if (now < due) return std::max(1ms, duration_cast<milliseconds>(due - now));
    // The claim object goes; the sandboxes it claimed stay (their reference to it is removed).
    store::DeleteOptions options;
    options.preconditions.uid = claim->metadata.uid;
    options.propagation = store::Propagation::kOrphan;
    auto r = store_.Delete(api::SandboxClaimKind(), ns, name, options);
    if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
    expired_total_.Add({{"namespace", std::string(ns)}}).Increment();
    return 0ms;
  }

  base::WallTime start = status.claim_start_time.value_or(now);
  auto timeout = duration_cast<base::WallTime::duration>(
      spec.claim_timeout.value_or(api::Duration{1min}).value);
  base::WallTime deadline = start + timeout;
  // Counted from the cache, so not before it shows what earlier passes claimed: from behind
  // them, this pass would claim them again.
  if (!own_writes_.Reached(key, informers_.sandboxes())) return OwnWriteFence::kRetryAfter;
  int held = static_cast<int>(ClaimedBy(*claim).size());

  std::string first_error;
  std::string inplace_failure;  // the node could not make spec.inplaceUpdate: the claim ends
  bool no_stock = false;
  int64_t last_write = 0;
  if (held < replicas && now < deadline) {
    int missing = std::min(replicas - held, options_.max_batch_size);
    claim::ClaimRequest base_request;
    base_request.namespace_ = claim->metadata.namespace_;
    base_request.pool = spec.template_name;
    base_request.labels = spec.labels;
    base_request.labels[api::labels::kClaimName] = claim->metadata.name;
    base_request.annotations = spec.annotations;
    base_request.env_vars = spec.env_vars;
    base_request.shutdown_time = spec.shutdown_time;
    base_request.create_on_no_stock = spec.create_on_no_stock.value_or(true);
    base_request.skip_init = spec.skip_init_runtime;
    base_request.inplace_update = spec.inplace_update;
    base_request.owner_references = {claim->MakeControllerRef()};
    base_request.source = claim::ClaimSource::kSandboxClaim;
    base_request.wait_ready_timeout =
        duration_cast<milliseconds>(spec.wait_ready_timeout.value_or(api::Duration{30s}).value);
    auto remaining = std::max(1ms, duration_cast<milliseconds>(deadline - now));
    // With creating off, an empty pool is retried every few seconds rather than waited on by a
    // worker.
    base_request.timeout =
        base_request.create_on_no_stock ? remaining : std::min<milliseconds>(remaining, 200ms);

    // Under the request that created the claim (its trace-context annotation), kept only when
    // a claim was made or failed: a claim waiting for stock passes here every few hundred ms.
    std::optional<trace::Span> span;
    if (trace::Enabled()) {
      if (auto parent = trace::CarriedContext(*claim)) {
        span.emplace("controller.sandboxClaim", *parent);
        span->DropUnlessKept();
        span->SetAttribute("warren.sandbox_claim", claim->metadata.name);
        span->SetAttribute("warren.missing", int64_t{missing});
      }
    }
    const base::TraceContext span_context = span ? span->context() : base::TraceContext{};

    std::mutex mu;
    int batch = std::max(1, options_.initial_batch_size);
    int done = 0;
    while (done < missing && first_error.empty() && inplace_failure.empty() && !no_stock) {
      int n = std::min(batch, missing - done);
      std::atomic<int> next{0};
      auto work = [&] {
        for (int i = next++; i < n; i = next++) {
          // Each claim's steps (infra.lock, infra.initRuntime…) under one span per claim, on
          // whichever worker thread made it.
          std::optional<trace::Span> claim_span;
          if (span_context.valid()) claim_span.emplace("controller.claim", span_context);
          auto r = claimer_.Claim(base_request);
          if (claim_span && r.ok()) {
            claim_span->SetAttribute("warren.sandbox_id", r->sandbox.metadata.name);
          } else if (claim_span && r.status().code() != StatusCode::kResourceExhausted) {
            claim_span->SetError(r.status().message());
          } else if (claim_span) {
            claim_span->DropUnlessKept();
          }
          std::lock_guard lock(mu);
          if (r.ok()) {
            ++held;
            last_write = std::max(last_write, r->sandbox.metadata.resource_version);
            claims_total_.Add({{"namespace", base_request.namespace_}, {"result", "success"}})
                .Increment();
          } else if (r.status().code() == StatusCode::kResourceExhausted) {
            no_stock = true;
          } else if (r.status().code() == StatusCode::kFailedPrecondition &&
                     r.status().message().find("in-place update") != std::string::npos) {
            // Every member would fail the same way: the claim ends rather than use up the pool.
            claims_total_.Add({{"namespace", base_request.namespace_}, {"result", "failure"}})
                .Increment();
            if (inplace_failure.empty()) inplace_failure = r.status().message();
          } else {
            claims_total_.Add({{"namespace", base_request.namespace_}, {"result", "failure"}})
                .Increment();
            if (first_error.empty()) first_error = r.status().ToString();
          }
        }
      };
      std::vector<std::thread> threads;
      for (int t = 1; t < n; ++t) threads.emplace_back(work);
      work();
      for (auto& t : threads) t.join();
      done += n;
      batch *= 2;
    }
    if (span && (last_write > 0 || !first_error.empty() || !inplace_failure.empty())) {
      span->SetAttribute("warren.claimed_replicas", int64_t{held});
      if (!first_error.empty()) span->SetError(first_error);
      if (!inplace_failure.empty()) span->SetError(inplace_failure);
      span->Keep("controller.sandboxClaim");
    }
    // The next reconcile counts from the cache: it must see what this one claimed.
    if (last_write > 0) {
      own_writes_.WaitFor(key, last_write, informers_.sandboxes(), options_.write_visible_timeout);
    }
    if (!first_error.empty() && events_) {
      events_->Warning(*claim, "ClaimFailed", first_error).IgnoreError();
    }
  }

  api::SandboxClaimStatus next = status;
  next.observed_generation = claim->metadata.generation;
  next.claim_start_time = start;
  next.claimed_replicas = held;
  now = clock_.Now();
  milliseconds requeue = 0ms;
  if (held >= replicas) {
    next.phase = "Completed";
    next.completion_time = now;
    next.message = fmt::format("claimed {} sandboxes from {}", held, spec.template_name);
    api::SetCondition(next.conditions,
                      {.type = "Completed",
                       .status = "True",
                       .reason = "Claimed",
                       .message = next.message,
                       .observed_generation = next.observed_generation},
                      now);
    if (events_) events_->Normal(*claim, "Completed", next.message).IgnoreError();
  } else if (!inplace_failure.empty()) {
    next.phase = "Completed";
    next.completion_time = now;
    next.message = fmt::format("claimed {} of {} sandboxes from {}; stopped: {}", held, replicas,
                               spec.template_name, inplace_failure);
    api::SetCondition(next.conditions,
                      {.type = "Completed",
                       .status = "False",
                       .reason = "InplaceUpdateFailed",
                       .message = next.message,
                       .observed_generation = next.observed_generation},
                      now);
    if (events_) events_->Warning(*claim, "InplaceUpdateFailed", next.message).IgnoreError();
  } else if (now >= deadline) {
    next.phase = "Completed";
    next.completion_time = now;
    next.message =
        fmt::format("claimed {} of {} sandboxes from {} before the {} timeout", held, replicas,
                    spec.template_name, spec.claim_timeout ? "claimTimeout" : "default 1m");
    api::SetCondition(next.conditions,
                      {.type = "TimedOut",
                       .status = "True",
                       .reason = "ClaimTimeout",
                       .message = next.message,
                       .observed_generation = next.observed_generation},
                      now);
    api::SetCondition(next.conditions,
                      {.type = "Completed",
                       .status = "False",
                       .reason = "TimedOut",
                       .message = next.message,
                       .observed_generation = next.observed_generation},
                      now);
    if (events_) events_->Warning(*claim, "TimedOut", next.message).IgnoreError();
  } else {
    next.phase = "Claiming";
    next.message =
        no_stock ? fmt::format("pool {} has no sandbox available; retrying", spec.template_name)
                 : fmt::format("claimed {} of {}", held, replicas);
    requeue = std::max(1ms, duration_cast<milliseconds>(deadline - now));
    if (no_stock) {
      requeue = std::min<milliseconds>(requeue, options_.no_stock_retry);
    } else if (held < replicas) {
      requeue = std::min<milliseconds>(requeue, 200ms);  // the next batch
    }
  }

  ObjectPtr latest = claims_->Get(ns, name);
  if (latest && latest->metadata.uid == claim->metadata.uid) {
    api::Object updated = *latest;
    api::EncodeStatus(next, updated);
    if (updated.body != latest->body) {
      auto r = store_.UpdateStatus(std::move(updated));
      if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
      if (r.ok()) {
        claims_->WaitForRevision(r->metadata.resource_version, options_.write_visible_timeout);
        if (next.phase == "Completed" && status.phase != "Completed") {
          // The claim's duration as its user sees it: from the object to Completed.
          base::WallTime born = claim->metadata.creation_timestamp.value_or(start);
          duration_.Record(ns, held >= replicas,
                           std::max(0.0, std::chrono::duration<double>(now - born).count()));
        }
      }
    }
  }
  if (next.phase == "Completed") {
    // Come back for ttlAfterCompleted.
    auto ttl = spec.ttl_after_completed.value_or(api::Duration{60min}).value;
    if (ttl >= std::chrono::nanoseconds(0)) {
      requeue = std::max(1ms, duration_cast<milliseconds>(ttl));
    }
  }
  if (!first_error.empty()) return UnavailableError(first_error);
  return requeue;
}

}  // namespace warren::controller

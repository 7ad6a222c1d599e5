#include "envd/stream_session.h"

namespace warren::envd {

std::shared_ptr<StreamSession> StreamSession::Create(std::shared_ptr<MessageSink> sink,
                                                     TimerQueue& timers, StreamOptions options,
                                                     std::string keepalive_json) {
  std::shared_ptr<StreamSession> s(
      new StreamSession(std::move(sink), timers, options, std::move(keepalive_json)));
  s->Arm();
  return s;
}

StreamSession::StreamSession(std::shared_ptr<MessageSink> sink, TimerQueue& timers,
                             StreamOptions options, std::string keepalive_json)
    : sink_(std::move(sink)),
      timers_(timers),
      options_(options),
      keepalive_json_(std::move(keepalive_json)),
      last_sent_(std::chrono::steady_clock::now()) {}

StreamSession::~StreamSession() {
  timers_.Cancel(keepalive_timer_);
  timers_.Cancel(deadline_timer_);
}

void StreamSession::Arm() {
  std::weak_ptr<StreamSession> weak = weak_from_this();
  std::lock_guard lock(mu_);
  if (options_.keepalive.count() > 0) {
    keepalive_timer_ = timers_.Schedule(last_sent_ + options_.keepalive, [weak] {
      if (auto s = weak.lock()) s->OnKeepaliveTimer();
    });
  }
  if (options_.timeout) {
    deadline_timer_ = timers_.ScheduleAfter(*options_.timeout, [weak] {
      auto s = weak.lock();
      if (s) s->End(DeadlineExceededError("deadline exceeded"));
    });
  }
  // A client that goes away ends the session, which releases its timers and subscribers.
  // The sink may run this callback from inside its own Send or Finish, so the session is ended
  // from the timer thread rather than re-entering it here.
  TimerQueue* timers = &timers_;
  sink_->OnClose([weak, timers] {
    timers->ScheduleAfter(std::chrono::milliseconds(0), [weak] {
      if (auto s = weak.lock()) s->End(CancelledError("client closed the stream"));
    });
  });
}

void StreamSession::OnKeepaliveTimer() {
  std::weak_ptr<StreamSession> weak = weak_from_this();
  std::lock_guard lock(mu_);
  if (ended_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_sent_ >= options_.keepalive) {
    if (!sink_->Send(keepalive_json_)) return;
    last_sent_ = now;
  }
  keepalive_timer_ = timers_.Schedule(last_sent_ + options_.keepalive, [weak] {
    if (auto s = weak.lock()) s->OnKeepaliveTimer();
  });
}

bool StreamSession::Send(std::string json) {
  std::lock_guard lock(mu_);
  if (ended_) return false;
  if (!sink_->Send(std::move(json))) return false;
  last_sent_ = std::chrono::steady_clock::now();
  return true;
}

void StreamSession::End(const Status& status) {
  std::vector<std::function<void()>> on_end;
  {
    std::lock_guard lock(mu_);
    if (ended_) return;
    ended_ = true;
    timers_.Cancel(keepalive_timer_);
    timers_.Cancel(deadline_timer_);
    on_end.swap(on_end_);
  }
  // Outside the lock (the sink may call back into the session); no message can follow the
  // end-of-stream frame because Send checks ended_ under the lock.
  sink_->Finish(status);
  for (auto& callback : on_end) callback();
}

void StreamSession::OnEnd(std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    if (!ended_) {
      on_end_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

bool StreamSession::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

bool StreamSession::WaitWritable(size_t high_water, std::chrono::milliseconds timeout) {
  return sink_->WaitWritable(high_water, timeout);
}

}  // namespace warren::envd

#include "trace/span.h"

#include <chrono>

namespace warren::trace {
namespace {

thread_local Span* t_current = nullptr;

int64_t NowUnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Span::Span(std::string_view name, SpanKind kind) {
  const internal::Installed* installed = internal::g_installed.load(std::memory_order_acquire);
  if (installed == nullptr || t_current == nullptr) return;
  Begin(name, t_current->data_->context, true, kind, *installed);
}

Span::Span(std::string_view name, const base::TraceContext& parent, SpanKind kind) {
  const internal::Installed* installed = internal::g_installed.load(std::memory_order_acquire);
  if (installed == nullptr || !parent.valid() || !parent.sampled()) return;
  Begin(name, parent, true, kind, *installed);
}

Span::Span(std::string_view name, const Root& root, SpanKind kind) {
  const internal::Installed* installed = internal::g_installed.load(std::memory_order_acquire);
  if (installed == nullptr) return;
  if (root.incoming && root.incoming->valid()) {
    if (!root.incoming->sampled()) return;
    Begin(name, *root.incoming, true, kind, *installed);
    return;
  }
  base::TraceContext fresh;
  fresh.trace_id = root.trace_id ? *root.trace_id : NewTraceId();
  if (!SampleNewTrace(*installed, fresh.trace_id)) return;
  fresh.flags = 1;
  Begin(name, fresh, false, kind, *installed);
}

void SpanRecord::Start(std::string_view name, const base::TraceContext& parent, bool has_parent,
                       SpanKind kind, SpanSink* sink) {
  data_ = std::make_unique<SpanData>();
  data_->name = std::string(name);
  data_->context.trace_id = parent.trace_id;
  data_->context.span_id = NewSpanId();
  data_->context.flags = 1;
  data_->has_parent = has_parent;
  if (has_parent) data_->parent_span_id = parent.span_id;
  data_->kind = kind;
  data_->start_unix_nanos = NowUnixNanos();
  sink_ = sink;
}

void SpanRecord::Finish() {
  if (!data_) return;
  data_->end_unix_nanos = NowUnixNanos();
  sink_->Submit(std::move(*data_));
  data_.reset();
}

void Span::Begin(std::string_view name, const base::TraceContext& parent, bool has_parent,
                 SpanKind kind, const internal::Installed& installed) {
  Start(name, parent, has_parent, kind, installed.sink);
  previous_ = t_current;
  t_current = this;
}

Span::~Span() {
  if (!data_) return;
  t_current = previous_;
  if (keep_) Finish();
}

base::TraceContext SpanRecord::context() const {
  return data_ ? data_->context : base::TraceContext{};
}

std::string SpanRecord::traceparent() const {
  return data_ ? base::FormatTraceparent(data_->context) : std::string();
}

void SpanRecord::SetAttribute(std::string_view key, std::string_view value) {
  if (data_) data_->attributes.emplace_back(std::string(key), std::string(value));
}

void SpanRecord::SetAttribute(std::string_view key, int64_t value) {
  if (data_) data_->attributes.emplace_back(std::string(key), value);
}

void SpanRecord::SetAttribute(std::string_view key, bool value) {
  if (data_) data_->attributes.emplace_back(std::string(key), value);
}

void SpanRecord::SetError(std::string_view message) {
  if (!data_) return;
  data_->error = true;
  data_->status_message = std::string(message.substr(0, 1024));
}

void Span::SetName(std::string_view name) {
  if (data_) data_->name = std::string(name);
}

void Span::DropUnlessKept() { keep_ = false; }

void Span::Keep(std::string_view name) {
  keep_ = true;
  SetName(name);
}

DetachedSpan::DetachedSpan(std::string_view name, const base::TraceContext& parent, SpanKind kind) {
  const internal::Installed* installed = internal::g_installed.load(std::memory_order_acquire);
  if (installed == nullptr || !parent.valid() || !parent.sampled()) return;
  Start(name, parent, true, kind, installed->sink);
}

DetachedSpan& DetachedSpan::operator=(DetachedSpan&& other) noexcept {
  if (this != &other) {
    End();
    SpanRecord::operator=(std::move(other));
  }
  return *this;
}

Span* CurrentSpan() { return t_current; }

std::string CurrentTraceparent() { return t_current ? t_current->traceparent() : std::string(); }

}  // namespace warren::trace

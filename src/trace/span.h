#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/traceparent.h"
#include "trace/span_data.h"
#include "trace/tracer.h"

namespace warren::trace {

// What Span and DetachedSpan share: the span being recorded (null when inert: tracing off, or
// not sampled) and the sink it goes to when it ends. Every method is a no-op when inert.
class SpanRecord {
 public:
  bool recording() const { return data_ != nullptr; }
  // Zeros when not recording.
  base::TraceContext context() const;
  // The header value a callee parents on; empty when not recording.
  std::string traceparent() const;

  void SetAttribute(std::string_view key, std::string_view value);
  void SetAttribute(std::string_view key, const char* value) {
    SetAttribute(key, std::string_view(value));
  }
  void SetAttribute(std::string_view key, int64_t value);
  void SetAttribute(std::string_view key, bool value);
  // Marks the span failed (OTLP status ERROR) with a message.
  void SetError(std::string_view message);

 protected:
  SpanRecord() = default;
  ~SpanRecord() = default;
  SpanRecord(SpanRecord&&) = default;
  SpanRecord& operator=(SpanRecord&&) = default;

  // Starts recording `name` now, as a child of `parent` when `has_parent`.
  void Start(std::string_view name, const base::TraceContext& parent, bool has_parent,
             SpanKind kind, SpanSink* sink);
  // Stamps the end and hands the span to its sink; inert afterwards.
  void Finish();

  std::unique_ptr<SpanData> data_;  // null when inert or finished
  SpanSink* sink_ = nullptr;
};

// One timed operation, as an RAII scope: it starts when constructed and ends (and goes to the
// installed sink) when destroyed. While it lives it is its thread's current span, so a Span
// constructed without a parent inside it becomes its child, and spans constructed one after
// another in the same scope are siblings.
//
// A span records only when tracing is on and its trace is sampled; otherwise it is inert: every
// method is a no-op and construction costs one atomic load (tracer.h). A child of nothing (no
// current span on this thread) is inert too, so background work is traced only when a traced
// request caused it (through a parent context carried on the object, node/README.md).
//
// Not copyable or movable (the thread's current-span chain points at it); not thread-safe: use
// it on the thread that made it, and end spans in the reverse order of their starts.
class Span : public SpanRecord {
 public:
  // A child of this thread's current span (inert if there is none).
  explicit Span(std::string_view name, SpanKind kind = SpanKind::kInternal);
  // A child of a context that came from elsewhere (a header, an annotation); recorded when the
  // parent says sampled.
  Span(std::string_view name, const base::TraceContext& parent,
       SpanKind kind = SpanKind::kInternal);

  // The root of the work done for one incoming request: a child of `incoming` (the caller's
  // traceparent) when given, else the first span of trace `trace_id` (the request id, when it
  // is one) or of a new trace, sampled by the configured ratio.
  struct Root {
    std::optional<base::TraceContext> incoming;
    std::optional<base::TraceId> trace_id;
  };
  Span(std::string_view name, const Root& root, SpanKind kind = SpanKind::kServer);

  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  void SetName(std::string_view name);

  // The no-op filter (OpenKruise drops reconciles that changed nothing): after this call the
  // span is exported only if Keep is called before it ends.
  void DropUnlessKept();
  // Keeps a span DropUnlessKept marked, renamed for what was done ("node.start").
  void Keep(std::string_view name);

 private:
  void Begin(std::string_view name, const base::TraceContext& parent, bool has_parent,
             SpanKind kind, const internal::Installed& installed);

  Span* previous_ = nullptr;  // the thread's current span before this one
  bool keep_ = true;
};

// A span that is not tied to a thread: started where a request arrives and ended on whichever
// thread finishes it (the gateway's relays end in a callback on a loop). It is never a
// thread's current span, so nothing parents on it implicitly: pass its context() on. It ends
// when End is called or when it is destroyed, whichever comes first; hold it in a shared_ptr
// to end it when the last holder lets go. Inert (every method a no-op) when tracing is off or
// the parent is not sampled. Movable; not thread-safe (one holder at a time).
class DetachedSpan : public SpanRecord {
 public:
  DetachedSpan() = default;
  // A child of `parent` (a context from a header), recorded when the parent says sampled.
  DetachedSpan(std::string_view name, const base::TraceContext& parent,
               SpanKind kind = SpanKind::kServer);
  ~DetachedSpan() { End(); }
  DetachedSpan(DetachedSpan&&) = default;
  DetachedSpan& operator=(DetachedSpan&& other) noexcept;

  void End() { Finish(); }
};

// This thread's innermost recording span, or null.
Span* CurrentSpan();
// The traceparent to send a callee from here (the current span's); empty when none records.
std::string CurrentTraceparent();

}  // namespace warren::trace

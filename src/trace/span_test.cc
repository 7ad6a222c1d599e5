#include "trace/span.h"

#include <gtest/gtest.h>

#include <thread>

#include "trace/object_context.h"
#include "trace/propagation.h"
#include "trace/testing/collecting_sink.h"

namespace warren::trace {
namespace {

using testing::CollectingSink;

const base::TraceContext kCaller =
    *base::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");

const SpanData* Named(const std::vector<SpanData>& spans, std::string_view name) {
  for (const auto& s : spans) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(Span, InertWhenTracingIsOff) {
  Span root("request", Span::Root{kCaller, std::nullopt});
  EXPECT_FALSE(root.recording());
  Span child("step");
  EXPECT_FALSE(child.recording());
  EXPECT_EQ(CurrentSpan(), nullptr);
  EXPECT_EQ(CurrentTraceparent(), "");
}

TEST(Span, StepsInARequestAreSiblingsUnderIt) {
  CollectingSink sink;
  {
    Span root("request", Span::Root{kCaller, std::nullopt});
    ASSERT_TRUE(root.recording());
    { Span a("a"); }
    {
      Span b("b");
      Span inner("b.inner");  // nested: a child of b
    }
    EXPECT_EQ(CurrentSpan(), &root);
  }
  EXPECT_EQ(CurrentSpan(), nullptr);
  auto spans = sink.spans();
  ASSERT_EQ(spans.size(), 4u);
  const SpanData* root = Named(spans, "request");
  const SpanData* a = Named(spans, "a");
  const SpanData* b = Named(spans, "b");
  const SpanData* inner = Named(spans, "b.inner");
  ASSERT_TRUE(root && a && b && inner);
  EXPECT_EQ(root->context.trace_id, kCaller.trace_id);
  EXPECT_EQ(root->parent_span_id, kCaller.span_id);
  EXPECT_EQ(root->kind, SpanKind::kServer);
  EXPECT_EQ(a->parent_span_id, root->context.span_id);
  EXPECT_EQ(b->parent_span_id, root->context.span_id);
  EXPECT_EQ(inner->parent_span_id, b->context.span_id);
  for (const auto& s : spans) {
    EXPECT_EQ(s.context.trace_id, kCaller.trace_id);
    EXPECT_LE(s.start_unix_nanos, s.end_unix_nanos);
  }
  EXPECT_NE(a->context.span_id, b->context.span_id);
}

TEST(Span, ANewTraceTakesTheRequestIdAsItsTraceId) {
  CollectingSink sink;
  auto id = base::ParseTraceIdHex("0af7651916cd43dd8448eb211c80319c");
  { Span root("request", Span::Root{std::nullopt, id}); }
  auto spans = sink.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].context.trace_id, *id);
  EXPECT_FALSE(spans[0].has_parent);
}

TEST(Span, AnUnsampledCallerIsRespected) {
  CollectingSink sink;
  base::TraceContext unsampled = kCaller;
  unsampled.flags = 0;
  {
    Span root("request", Span::Root{unsampled, std::nullopt});
    EXPECT_FALSE(root.recording());
    Span child("step");
    EXPECT_FALSE(child.recording());
  }
  EXPECT_TRUE(sink.spans().empty());
}

TEST(Span, SamplingRatioZeroRecordsNoNewTrace) {
  CollectingSink sink(TracerConfig{.sampling_ratio = 0.0});
  for (int i = 0; i < 100; ++i) Span root("request", Span::Root{});
  EXPECT_TRUE(sink.spans().empty());
  // A caller that sampled its trace still gets it recorded.
  { Span root("request", Span::Root{kCaller, std::nullopt}); }
  EXPECT_EQ(sink.spans().size(), 1u);
}

TEST(Span, ParentFromAnAnnotationAndTheNoOpFilter) {
  CollectingSink sink;
  {
    Span idle("node.reconcile", kCaller);
    idle.DropUnlessKept();
  }
  {
    Span started("node.reconcile", kCaller);
    started.DropUnlessKept();
    started.Keep("node.start");
  }
  auto spans = sink.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name, "node.start");
  EXPECT_EQ(spans[0].parent_span_id, kCaller.span_id);
}

TEST(Span, CurrentSpanIsPerThread) {
  CollectingSink sink;
  Span root("request", Span::Root{kCaller, std::nullopt});
  std::thread([] {
    Span orphan("elsewhere");  // no current span on this thread
    EXPECT_FALSE(orphan.recording());
  }).join();
  EXPECT_EQ(CurrentSpan(), &root);
}

TEST(Span, InjectsTheCurrentSpanAsTraceparent) {
  CollectingSink sink;
  net::Headers headers;
  InjectTraceparent(headers);
  EXPECT_FALSE(headers.Has("traceparent"));
  Span root("request", Span::Root{kCaller, std::nullopt});
  Span call("infra.initRuntime");
  InjectTraceparent(headers);
  auto sent = ExtractTraceparent(headers);
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->trace_id, kCaller.trace_id);
  EXPECT_EQ(sent->span_id, call.context().span_id);
}

TEST(Span, ErrorsAndAttributes) {
  CollectingSink sink;
  {
    Span root("request", Span::Root{kCaller, std::nullopt});
    root.SetAttribute("http.method", "POST");
    root.SetAttribute("retries", int64_t{2});
    root.SetAttribute("cold", true);
    root.SetError("boom");
  }
  auto spans = sink.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_TRUE(spans[0].error);
  EXPECT_EQ(spans[0].status_message, "boom");
  ASSERT_EQ(spans[0].attributes.size(), 3u);
  EXPECT_EQ(std::get<std::string>(spans[0].attributes[0].second), "POST");
  EXPECT_EQ(std::get<int64_t>(spans[0].attributes[1].second), 2);
  EXPECT_TRUE(std::get<bool>(spans[0].attributes[2].second));
}

TEST(DetachedSpan, EndsOnceOnAnyThreadAndIsNobodysParent) {
  CollectingSink sink;
  auto span = std::make_shared<DetachedSpan>("gateway.relay", kCaller);
  ASSERT_TRUE(span->recording());
  EXPECT_EQ(CurrentSpan(), nullptr) << "not the thread's current span";
  auto parent = base::ParseTraceparent(span->traceparent());
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->trace_id, kCaller.trace_id);
  span->SetAttribute("k", int64_t{1});
  std::thread([span] {
    span->SetError("cut");
    span->End();
    span->End();
  }).join();
  span.reset();
  auto spans = sink.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name, "gateway.relay");
  EXPECT_EQ(spans[0].parent_span_id, kCaller.span_id);
  EXPECT_EQ(spans[0].context.span_id, parent->span_id);
  EXPECT_TRUE(spans[0].error);
  { DetachedSpan ended_by_scope("scoped", kCaller); }
  EXPECT_EQ(sink.spans().size(), 2u);
}

TEST(DetachedSpan, InertWithoutASampledParentOrWithTracingOff) {
  {
    DetachedSpan off("x", kCaller);
    EXPECT_FALSE(off.recording());
    EXPECT_EQ(off.traceparent(), "");
  }
  CollectingSink sink;
  base::TraceContext unsampled = kCaller;
  unsampled.flags = 0;
  DetachedSpan a("x", unsampled);
  DetachedSpan b("x", base::TraceContext{});
  EXPECT_FALSE(a.recording());
  EXPECT_FALSE(b.recording());
  a.End();
  EXPECT_TRUE(sink.spans().empty());
}

TEST(ObjectContext, CarriesTheCurrentSpanAndReadsOnlyValidContexts) {
  api::Object o;
  trace::CarryContext(o);  // tracing off: the object is written as before
  EXPECT_TRUE(o.metadata.annotations.empty());
  CollectingSink sink;
  {
    Span root("request", Span::Root{kCaller, std::nullopt});
    CarryContext(o);
    auto carried = CarriedContext(o);
    ASSERT_TRUE(carried.has_value());
    EXPECT_EQ(carried->trace_id, kCaller.trace_id);
    EXPECT_EQ(carried->span_id, root.context().span_id);
  }
  o.metadata.annotations["agents.kruise.io/trace-context"] = "a tenant's garbage";
  EXPECT_FALSE(CarriedContext(o).has_value());
}

}  // namespace
}  // namespace warren::trace

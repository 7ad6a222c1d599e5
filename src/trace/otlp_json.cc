#include "trace/otlp_json.h"

#include "api/json.h"

namespace warren::trace {
namespace {

using api::Json;

Json Attribute(const std::string& key, const AttributeValue& value) {
  Json v;
  if (const auto* s = std::get_if<std::string>(&value)) {
    v["stringValue"] = *s;
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    v["intValue"] = std::to_string(*i);
  } else {
    v["boolValue"] = std::get<bool>(value);
  }
  return Json{{"key", key}, {"value", std::move(v)}};
}

Json EncodeSpan(const SpanData& s) {
  Json span = {
      {"traceId", base::TraceIdHex(s.context.trace_id)},
      {"spanId", base::SpanIdHex(s.context.span_id)},
      {"name", s.name},
      {"kind", static_cast<int>(s.kind)},
      {"startTimeUnixNano", std::to_string(s.start_unix_nanos)},
      {"endTimeUnixNano", std::to_string(s.end_unix_nanos)},
  };
  if (s.has_parent) span["parentSpanId"] = base::SpanIdHex(s.parent_span_id);
  Json attributes = Json::array();
  for (const auto& [key, value] : s.attributes) attributes.push_back(Attribute(key, value));
  span["attributes"] = std::move(attributes);
  // Status codes: 0 UNSET, 1 OK, 2 ERROR. Only failures are marked, as OpenTelemetry advises.
  span["status"] = s.error ? Json{{"code", 2}, {"message", s.status_message}} : Json::object();
  return span;
}

}  // namespace

std::string EncodeOtlpJson(const std::vector<SpanData>& spans, std::string_view service_name) {
  Json encoded = Json::array();
  for (const SpanData& s : spans) encoded.push_back(EncodeSpan(s));
  Json resource = {
      {"attributes", Json::array({Attribute("service.name", std::string(service_name))})}};
  Json scope_spans = {{"scope", {{"name", "warren"}}}, {"spans", std::move(encoded)}};
  Json body = {{"resourceSpans", Json::array({Json{{"resource", std::move(resource)},
                                                   {"scopeSpans", Json::array({scope_spans})}}})}};
  return api::DumpJson(body);
}

}  // namespace warren::trace

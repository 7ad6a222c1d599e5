// DecodeOtlpSpan (otlp_json.h): envd's span lines, read back by the node agent. Kept apart from
// the encoder because the encoder is also built into warren-envd, which has no JSON parser.

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "trace/otlp_json.h"

namespace warren::trace {
namespace {

using Json = nlohmann::json;

// obj[key] for a const object, or null when absent (operator[] on a const json with a missing
// key is undefined behaviour, and the input is hostile).
const Json& Field(const Json& obj, const char* key) {
  static const Json kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::optional<std::string> BoundedString(const Json& j, size_t max) {
  if (!j.is_string()) return std::nullopt;
  const auto& s = j.get_ref<const std::string&>();
  if (s.size() > max) return std::nullopt;
  return s;
}

// A decimal string of nanoseconds since the epoch, as OTLP/JSON writes 64-bit integers.
std::optional<int64_t> UnixNanos(const Json& j) {
  auto s = BoundedString(j, 19);
  if (!s || s->empty()) return std::nullopt;
  auto v = base::ParseUint64(*s);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<base::SpanId> SpanIdOf(const Json& j) {
  auto s = BoundedString(j, 16);
  if (!s || s->size() != 16) return std::nullopt;
  // A span id is the second half of a traceparent's layout; reuse the trace id parser on a
  // zero-padded copy rather than a second hex reader.
  auto padded = base::ParseTraceIdHex(std::string(16, '0') + *s);
  if (!padded) return std::nullopt;
  base::SpanId id{};
  std::copy(padded->begin() + 8, padded->end(), id.begin());
  if (id == base::SpanId{}) return std::nullopt;
  return id;
}

std::optional<AttributeValue> ValueOf(const Json& v) {
  if (!v.is_object() || v.size() != 1) return std::nullopt;
  if (v.contains("stringValue")) {
    auto s = BoundedString(Field(v, "stringValue"), kMaxDecodedString);
    if (!s) return std::nullopt;
    return AttributeValue(std::move(*s));
  }
  if (v.contains("intValue")) {
    const Json& i = Field(v, "intValue");
    if (!i.is_string() || i.get_ref<const std::string&>().size() > 20) return std::nullopt;
    const auto& text = i.get_ref<const std::string&>();
    bool negative = !text.empty() && text[0] == '-';
    auto magnitude = base::ParseUint64(negative ? text.substr(1) : text);
    if (!magnitude || *magnitude > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    auto n = static_cast<int64_t>(*magnitude);
    return AttributeValue(negative ? -n : n);
  }
  if (v.contains("boolValue") && Field(v, "boolValue").is_boolean()) {
    return AttributeValue(Field(v, "boolValue").get<bool>());
  }
  return std::nullopt;
}

}  // namespace

std::optional<SpanData> DecodeOtlpSpan(std::string_view line) {
  const Json in = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) return std::nullopt;
  SpanData out;
  auto trace_id = BoundedString(Field(in, "traceId"), 32);
  if (!trace_id || trace_id->size() != 32) return std::nullopt;
  auto parsed_trace = base::ParseTraceIdHex(*trace_id);
  auto span_id = SpanIdOf(Field(in, "spanId"));
  if (!parsed_trace || !span_id) return std::nullopt;
  out.context.trace_id = *parsed_trace;
  out.context.span_id = *span_id;
  out.context.flags = 1;
  if (in.contains("parentSpanId")) {
    auto parent = SpanIdOf(Field(in, "parentSpanId"));
    if (!parent) return std::nullopt;
    out.parent_span_id = *parent;
    out.has_parent = true;
  }
  auto name = BoundedString(Field(in, "name"), kMaxDecodedName);
  if (!name || name->empty()) return std::nullopt;
  out.name = std::move(*name);
  if (!Field(in, "kind").is_number_integer()) return std::nullopt;
  int kind = Field(in, "kind").get<int>();
  if (kind < 1 || kind > 3) return std::nullopt;
  out.kind = static_cast<SpanKind>(kind);
  auto start = UnixNanos(Field(in, "startTimeUnixNano"));
  auto end = UnixNanos(Field(in, "endTimeUnixNano"));
  if (!start || !end || *end < *start) return std::nullopt;
  out.start_unix_nanos = *start;
  out.end_unix_nanos = *end;
  if (in.contains("attributes")) {
    const Json& attributes = Field(in, "attributes");
    if (!attributes.is_array() || attributes.size() > kMaxDecodedAttributes) return std::nullopt;
    for (const Json& a : attributes) {
      if (!a.is_object()) return std::nullopt;
      auto key = BoundedString(Field(a, "key"), kMaxDecodedName);
      auto value = ValueOf(Field(a, "value"));
      if (!key || key->empty() || !value) return std::nullopt;
      out.attributes.emplace_back(std::move(*key), std::move(*value));
    }
  }
  if (in.contains("status")) {
    const Json& status = Field(in, "status");
    if (!status.is_object()) return std::nullopt;
    if (status.contains("code")) {
      if (!Field(status, "code").is_number_integer()) return std::nullopt;
      out.error = Field(status, "code").get<int>() == 2;
      if (out.error && status.contains("message")) {
        auto message = BoundedString(Field(status, "message"), kMaxDecodedString);
        if (!message) return std::nullopt;
        out.status_message = std::move(*message);
      }
    }
  }
  return out;
}

}  // namespace warren::trace

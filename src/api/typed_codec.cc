#include "api/typed_codec.h"

#include <fmt/format.h>

#include <limits>

#include "api/go_duration.h"
#include "base/time_format.h"

namespace warren::api::codec {

void Reader::TypeError(const std::string& path, std::string_view want, const Json& got) {
  errors_.Add(path, fmt::format("must be {}, got {}", want, JsonTypeName(got)));
}

void Reader::Read(const Json& j, const std::string& path, std::string& out) {
  if (j.is_string()) {
    out = j.get<std::string>();
  } else {
    TypeError(path, "a string", j);
  }
}

void Reader::Read(const Json& j, const std::string& path, bool& out) {
  if (j.is_boolean()) {
    out = j.get<bool>();
  } else {
    TypeError(path, "a boolean", j);
  }
}

void Reader::Read(const Json& j, const std::string& path, int64_t& out) {
  if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t{INT64_MAX}) {
    errors_.Add(path, "must fit in 64 bits");
  } else if (j.is_number_integer()) {
    out = j.get<int64_t>();
  } else {
    TypeError(path, "an integer", j);
  }
}

void Reader::Read(const Json& j, const std::string& path, int32_t& out) {
  int64_t v = 0;
  size_t before = errors_.size();
  Read(j, path, v);
  if (errors_.size() != before) return;
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    errors_.Add(path, fmt::format("Invalid value: {}: must fit in 32 bits", v));
    return;
  }
  out = static_cast<int32_t>(v);
}

void Reader::Read(const Json& j, const std::string& path, base::WallTime& out) {
  if (!j.is_string()) {
    TypeError(path, "an RFC 3339 time string", j);
    return;
  }
  if (auto t = base::ParseRfc3339(j.get<std::string>())) {
    out = *t;
  } else {
    errors_.Add(path, fmt::format("Invalid value: \"{}\": must be an RFC 3339 time (e.g. "
                                  "\"2026-01-02T15:04:05Z\")",
                                  j.get<std::string>()));
  }
}

void Reader::Read(const Json& j, const std::string& path, Duration& out) {
  if (!j.is_string()) {
    TypeError(path, "a duration string", j);
    return;
  }
  if (auto d = base::ParseDuration(j.get<std::string>())) {
    out.value = *d;
  } else {
    errors_.Add(path, fmt::format("Invalid value: \"{}\": must be a duration (e.g. \"30s\", "
                                  "\"1m\", \"1h30m\")",
                                  j.get<std::string>()));
  }
}

void Reader::Read(const Json& j, const std::string& path, Quantity& out) {
  Result<Quantity> q = InvalidArgumentError("");
  if (j.is_string()) {
    q = Quantity::Parse(j.get<std::string>());
  } else if (j.is_number()) {
    q = Quantity::Parse(j.dump());
  } else {
    TypeError(path, "a quantity string (e.g. \"500m\", \"1Gi\")", j);
    return;
  }
  if (q.ok()) {
    out = *q;
  } else {
    errors_.Add(path, q.status().message());
  }
}

void Reader::Read(const Json& j, const std::string& path, IntOrString& out) {
  if (j.is_number_integer()) {
    out = IntOrString::Int(j.get<int64_t>());
  } else if (j.is_string()) {
    out = IntOrString::String(j.get<std::string>());
  } else {
    TypeError(path, "an integer or a percentage string", j);
  }
}

void Reader::Read(const Json& j, const std::string&, RawJson& out) { out.text = DumpJson(j); }

void Writer::Write(Json& slot, const base::WallTime& v) { slot = base::FormatRfc3339(v); }

void Writer::Write(Json& slot, const Duration& v) { slot = FormatGoDuration(v.value); }

void Writer::Write(Json& slot, const IntOrString& v) {
  if (v.is_string) {
    slot = v.str_value;
  } else {
    slot = v.int_value;
  }
}

void Writer::Write(Json& slot, const RawJson& v) {
  auto parsed = ParseJson(v.text);
  slot = parsed.ok() ? std::move(*parsed) : Json(v.text);
}

}  // namespace warren::api::codec

#pragma once

#include <optional>
#include <string>

#include "api/types/common.h"

namespace warren::api {

struct InvolvedObject {
  WARREN_API_STRUCT;
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("namespace", s.namespace_);
    v("name", s.name);
    v("uid", s.uid);
    v("resourceVersion", s.resource_version);
  }
};

struct EventSource {
  WARREN_API_STRUCT;
  std::string component;
  std::string host;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("component", s.component);
    v("host", s.host);
  }
};

// Event (warren.dev/v1alpha1, ev): shaped like core/v1 Event, with its fields at the top level
// of the object (no spec/status), so tools that read Kubernetes events read these.
struct EventFields {
  WARREN_API_STRUCT;
  InvolvedObject involved_object;
  std::string reason;
  std::string message;
  std::string type;  // Normal | Warning
  EventSource source;
  std::optional<base::WallTime> first_timestamp;
  std::optional<base::WallTime> last_timestamp;
  int32_t count = 0;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("involvedObject", s.involved_object);
    v("reason", s.reason);
    v("message", s.message);
    v("type", s.type);
    v("source", s.source);
    v("firstTimestamp", s.first_timestamp);
    v("lastTimestamp", s.last_timestamp);
    v("count", s.count);
  }
};

}  // namespace warren::api

#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::node {

// Forwards the spans envd recorded inside a sandbox (trace/span_log.h:
// `<sandbox dir>/log/spans.jsonl`, written only when the node traces) to the installed exporter
// (trace::SubmitCollected), from where the last collection stopped. The file is written by the
// sandbox, so it is opened without following links, read a bounded amount per call, and each
// line is decoded as hostile input (trace::DecodeOtlpSpan); what does not decode is dropped.
// Every span forwarded is marked as the sandbox's word: service.name "warren-envd" and
// `warren.sandbox_id` set here (a sandbox cannot pose as the host's services or as another
// sandbox; it can only add spans to traces whose ids it was sent or guesses).
// How far it read is kept in `<sandbox dir>/spans.collected` (outside what the sandbox sees), so
// a restarted node sends nothing twice; a file that shrank was started over by envd. Returns
// how many spans were forwarded. Does nothing (0) when tracing is off.
Result<size_t> CollectEnvdSpans(std::string_view sandbox_id, const std::string& sandbox_dir);

}  // namespace warren::node

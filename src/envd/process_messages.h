#pragma once

// Wire types of the `process.Process` Connect service (e2b-protocol.md §3.4) and their proto3
// JSON codecs. Parsers return InvalidArgument naming the bad field.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::envd {

struct ProcessConfig {
  std::string cmd;
  std::vector<std::string> args;
  std::map<std::string, std::string> envs;
  std::optional<std::string> cwd;
};

struct PtySize {
  uint32_t cols = 0;
  uint32_t rows = 0;
};

// oneof selector { pid, tag }.
struct ProcessSelector {
  std::optional<uint32_t> pid;
  std::optional<std::string> tag;
};

struct StartRequest {
  ProcessConfig process;
  std::optional<PtySize> pty;
  std::optional<std::string> tag;
  std::optional<bool> stdin;
};

struct ConnectRequest {
  ProcessSelector process;
};

enum class InputKind { kNone, kStdin, kPty };
struct SendInputRequest {
  ProcessSelector process;
  InputKind kind = InputKind::kNone;
  std::string data;
};

// Signal enum values are the signal numbers (SIGNAL_SIGTERM = 15, SIGNAL_SIGKILL = 9).
struct SendSignalRequest {
  ProcessSelector process;
  int signal = 0;
};

struct CloseStdinRequest {
  ProcessSelector process;
};

struct UpdateRequest {
  ProcessSelector process;
  std::optional<PtySize> pty;
};

Result<StartRequest> ParseStartRequest(std::string_view body);
Result<ConnectRequest> ParseConnectRequest(std::string_view body);
Result<SendInputRequest> ParseSendInputRequest(std::string_view body);
Result<SendSignalRequest> ParseSendSignalRequest(std::string_view body);
Result<CloseStdinRequest> ParseCloseStdinRequest(std::string_view body);
Result<UpdateRequest> ParseUpdateRequest(std::string_view body);
// List takes the empty message; anything but a JSON object is rejected.
Status ParseListRequest(std::string_view body);

// Stream messages: StartResponse / ConnectResponse, i.e. {"event":{<oneof>}}.
enum class OutputKind { kStdout, kStderr, kPty };
std::string StartEventJson(uint32_t pid);
std::string DataEventJson(OutputKind kind, std::string_view bytes);
std::string KeepaliveEventJson();

// How a process ended, rendered like Go's os.ProcessState ("exit status 1", "signal: killed").
struct ProcessExit {
  int exit_code = 0;  // -1 when killed by a signal
  bool exited = false;
  std::string status;
  std::optional<std::string> error;  // set when exit_code != 0 or signalled
};
ProcessExit ProcessExitFromWaitStatus(int wait_status);
std::string EndEventJson(const ProcessExit& exit);

struct ProcessInfo {
  ProcessConfig config;
  uint32_t pid = 0;
  std::optional<std::string> tag;
};
std::string ListResponseJson(const std::vector<ProcessInfo>& processes);

}  // namespace warren::envd

#pragma once

// Wire types of the `filesystem.Filesystem` Connect service (e2b-protocol.md §3.5) and their
// proto3 JSON codecs.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"

namespace warren::envd {

enum class FileType { kUnspecified = 0, kFile = 1, kDirectory = 2, kSymlink = 3 };

struct EntryInfo {
  std::string name;
  FileType type = FileType::kUnspecified;
  std::string path;
  int64_t size = 0;
  uint32_t mode = 0;
  std::string permissions;
  std::string owner;
  std::string group;
  base::WallTime modified_time;
  std::optional<std::string> symlink_target;
  std::map<std::string, std::string> metadata;
};

enum class EventType {
  kUnspecified = 0,
  kCreate = 1,
  kWrite = 2,
  kRemove = 3,
  kRename = 4,
  kChmod = 5
};

struct FilesystemEvent {
  std::string name;
  EventType type = EventType::kUnspecified;
  std::optional<EntryInfo> entry;
};

struct PathRequest {  // Stat, MakeDir, Remove
  std::string path;
};
struct MoveRequest {
  std::string source;
  std::string destination;
};
struct ListDirRequest {
  std::string path;
  uint32_t depth = 0;
};
struct WatchRequest {  // WatchDir and CreateWatcher
  std::string path;
  bool recursive = false;
  bool include_entry = false;
  bool allow_network_mounts = false;
};
struct WatcherIdRequest {  // GetWatcherEvents, RemoveWatcher
  std::string watcher_id;
};

Result<PathRequest> ParsePathRequest(std::string_view body);
Result<MoveRequest> ParseMoveRequest(std::string_view body);
Result<ListDirRequest> ParseListDirRequest(std::string_view body);
Result<WatchRequest> ParseWatchRequest(std::string_view body);
Result<WatcherIdRequest> ParseWatcherIdRequest(std::string_view body);

nlohmann::json EntryInfoToJson(const EntryInfo& e);
std::string_view FileTypeName(FileType t);
std::string_view EventTypeName(EventType t);

std::string EntryResponseJson(const EntryInfo& e);  // {"entry":{...}} (Stat, MakeDir, Move)
std::string ListDirResponseJson(const std::vector<EntryInfo>& entries);
std::string WatchStartJson();                              // {"start":{}}
std::string WatchEventJson(const FilesystemEvent& event);  // {"filesystem":{...}}
std::string WatchKeepaliveJson();                          // {"keepalive":{}}
std::string CreateWatcherResponseJson(std::string_view watcher_id);
std::string WatcherEventsResponseJson(const std::vector<FilesystemEvent>& events);

}  // namespace warren::envd

#include "envd/filesystem_messages.h"

#include "base/time_format.h"
#include "envd/proto_json.h"

namespace warren::envd {
namespace {

using pj::Json;

Result<std::string> RequiredString(const Json& j, std::string_view camel, std::string_view snake) {
  ASSIGN_OR_RETURN(auto v, pj::String(j, camel, snake));
  return v.value_or("");
}

Json EventToJson(const FilesystemEvent& e) {
  Json j = Json::object();
  if (!e.name.empty()) j["name"] = e.name;
  j["type"] = EventTypeName(e.type);
  if (e.entry) j["entry"] = EntryInfoToJson(*e.entry);
  return j;
}

}  // namespace

Result<PathRequest> ParsePathRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  PathRequest r;
  ASSIGN_OR_RETURN(r.path, RequiredString(j, "path", "path"));
  return r;
}

Result<MoveRequest> ParseMoveRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  MoveRequest r;
  ASSIGN_OR_RETURN(r.source, RequiredString(j, "source", "source"));
  ASSIGN_OR_RETURN(r.destination, RequiredString(j, "destination", "destination"));
  return r;
}

Result<ListDirRequest> ParseListDirRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  ListDirRequest r;
  ASSIGN_OR_RETURN(r.path, RequiredString(j, "path", "path"));
  ASSIGN_OR_RETURN(auto depth, pj::Uint32(j, "depth", "depth"));
  r.depth = depth.value_or(0);
  return r;
}

Result<WatchRequest> ParseWatchRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  WatchRequest r;
  ASSIGN_OR_RETURN(r.path, RequiredString(j, "path", "path"));
  ASSIGN_OR_RETURN(auto recursive, pj::Bool(j, "recursive", "recursive"));
  ASSIGN_OR_RETURN(auto include, pj::Bool(j, "includeEntry", "include_entry"));
  ASSIGN_OR_RETURN(auto network, pj::Bool(j, "allowNetworkMounts", "allow_network_mounts"));
  r.recursive = recursive.value_or(false);
  r.include_entry = include.value_or(false);
  r.allow_network_mounts = network.value_or(false);
  return r;
}

Result<WatcherIdRequest> ParseWatcherIdRequest(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, pj::ParseObject(body));
  WatcherIdRequest r;
  ASSIGN_OR_RETURN(r.watcher_id, RequiredString(j, "watcherId", "watcher_id"));
  return r;
}

std::string_view FileTypeName(FileType t) {
  switch (t) {
    case FileType::kFile:
      return "FILE_TYPE_FILE";
    case FileType::kDirectory:
      return "FILE_TYPE_DIRECTORY";
    case FileType::kSymlink:
      return "FILE_TYPE_SYMLINK";
    default:
      return "FILE_TYPE_UNSPECIFIED";
  }
}

std::string_view EventTypeName(EventType t) {
  switch (t) {
    case EventType::kCreate:
      return "EVENT_TYPE_CREATE";
    case EventType::kWrite:
      return "EVENT_TYPE_WRITE";
    case EventType::kRemove:
      return "EVENT_TYPE_REMOVE";
    case EventType::kRename:
      return "EVENT_TYPE_RENAME";
    case EventType::kChmod:
      return "EVENT_TYPE_CHMOD";
    default:
      return "EVENT_TYPE_UNSPECIFIED";
  }
}

Json EntryInfoToJson(const EntryInfo& e) {
  // Defaults are omitted, as protojson does; int64 size is a string.
  Json j = Json::object();
  if (!e.name.empty()) j["name"] = e.name;
  if (e.type != FileType::kUnspecified) j["type"] = FileTypeName(e.type);
  if (!e.path.empty()) j["path"] = e.path;
  if (e.size != 0) j["size"] = std::to_string(e.size);
  if (e.mode != 0) j["mode"] = e.mode;
  if (!e.permissions.empty()) j["permissions"] = e.permissions;
  if (!e.owner.empty()) j["owner"] = e.owner;
  if (!e.group.empty()) j["group"] = e.group;
  j["modifiedTime"] = base::FormatRfc3339Nanos(e.modified_time);
  if (e.symlink_target) j["symlinkTarget"] = *e.symlink_target;
  if (!e.metadata.empty()) j["metadata"] = e.metadata;
  return j;
}

std::string EntryResponseJson(const EntryInfo& e) {
  return pj::Dump(Json{{"entry", EntryInfoToJson(e)}});
}

std::string ListDirResponseJson(const std::vector<EntryInfo>& entries) {
  Json list = Json::array();
  for (const auto& e : entries) list.push_back(EntryInfoToJson(e));
  Json out = Json::object();
  if (!list.empty()) out["entries"] = std::move(list);
  return pj::Dump(out);
}

std::string WatchStartJson() { return R"({"start":{}})"; }
std::string WatchKeepaliveJson() { return R"({"keepalive":{}})"; }

std::string WatchEventJson(const FilesystemEvent& event) {
  return pj::Dump(Json{{"filesystem", EventToJson(event)}});
}

std::string CreateWatcherResponseJson(std::string_view watcher_id) {
  return pj::Dump(Json{{"watcherId", watcher_id}});
}

std::string WatcherEventsResponseJson(const std::vector<FilesystemEvent>& events) {
  Json list = Json::array();
  for (const auto& e : events) list.push_back(EventToJson(e));
  Json out = Json::object();
  if (!list.empty()) out["events"] = std::move(list);
  return pj::Dump(out);
}

}  // namespace warren::envd

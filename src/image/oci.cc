#include "image/oci.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/json_depth.h"

namespace warren::image {
namespace {

using nlohmann::json;

// nlohmann's parser recurses per nesting level; bound the depth before handing it the text.
constexpr size_t kMaxJsonDepth = 32;

Result<json> ParseObject(std::string_view text, std::string_view what, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return InvalidArgumentError(
        fmt::format("{} is {} bytes, over the limit of {}", what, text.size(), max_bytes));
  }
  if (!base::JsonNestingWithin(text, kMaxJsonDepth)) {
    return InvalidArgumentError(fmt::format("{} nests deeper than {} levels", what, kMaxJsonDepth));
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError(fmt::format("{} is not valid JSON", what));
  if (!doc.is_object()) return InvalidArgumentError(fmt::format("{} is not a JSON object", what));
  return doc;
}

// Field accessors: absent or null gives the default; a present field of the wrong type is an
// error naming it.
Result<std::string> GetString(const json& obj, const char* key, std::string_view what) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return InvalidArgumentError(fmt::format("{}: field '{}' is not a string", what, key));
  }
  return it->get<std::string>();
}

Result<std::vector<std::string>> GetStringArray(const json& obj, const char* key,
                                                std::string_view what) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_array()) {
    return InvalidArgumentError(fmt::format("{}: field '{}' is not an array", what, key));
  }
  for (const auto& v : *it) {
    if (!v.is_string()) {
      return InvalidArgumentError(
          fmt::format("{}: field '{}' has a non-string element", what, key));
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<std::map<std::string, std::string>> GetStringMap(const json& obj, const char* key,
                                                        std::string_view what) {
  std::map<std::string, std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_object()) {
    return InvalidArgumentError(fmt::format("{}: field '{}' is not an object", what, key));
  }
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return InvalidArgumentError(
          fmt::format("{}: field '{}' has a non-string value for '{}'", what, key, k));
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

Result<Descriptor> ParseDescriptor(const json& obj, std::string_view what) {
  if (!obj.is_object()) {
    return InvalidArgumentError(fmt::format("{}: a descriptor is not an object", what));
  }
  Descriptor d;
  ASSIGN_OR_RETURN(d.media_type, GetString(obj, "mediaType", what));
  ASSIGN_OR_RETURN(std::string digest, GetString(obj, "digest", what));
  if (digest.empty())
    return InvalidArgumentError(fmt::format("{}: descriptor has no digest", what));
  auto parsed = Digest::Parse(digest);
  if (!parsed.ok()) return parsed.status().WithPrefix(what);
  d.digest = *parsed;
  auto size = obj.find("size");
  if (size == obj.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
    return InvalidArgumentError(
        fmt::format("{}: descriptor {} has no valid size", what, d.digest.ToString()));
  }
  d.size = size->get<int64_t>();
  ASSIGN_OR_RETURN(d.annotations, GetStringMap(obj, "annotations", what));
  auto platform = obj.find("platform");
  if (platform != obj.end() && platform->is_object()) {
    Platform p;
    ASSIGN_OR_RETURN(p.os, GetString(*platform, "os", what));
    ASSIGN_OR_RETURN(p.architecture, GetString(*platform, "architecture", what));
    ASSIGN_OR_RETURN(p.variant, GetString(*platform, "variant", what));
    d.platform = std::move(p);
  }
  return d;
}

Status CheckSchemaVersion(const json& doc, std::string_view what) {
  auto it = doc.find("schemaVersion");
  if (it == doc.end() || !it->is_number_integer() || it->get<int64_t>() != 2) {
    return InvalidArgumentError(fmt::format("{}: schemaVersion must be 2", what));
  }
  return Status::Ok();
}

}  // namespace

Result<LayerCompression> CompressionOfLayer(std::string_view media_type) {
  if (media_type == kMediaTypeOciLayerTar ||
      media_type == "application/vnd.oci.image.layer.nondistributable.v1.tar") {
    return LayerCompression::kNone;
  }
  if (media_type == kMediaTypeOciLayerGzip || media_type == kMediaTypeDockerLayerGzip ||
      media_type == "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip" ||
      media_type == "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip") {
    return LayerCompression::kGzip;
  }
  if (media_type == kMediaTypeOciLayerZstd ||
      media_type == "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd") {
    return LayerCompression::kZstd;
  }
  return InvalidArgumentError(
      fmt::format("unsupported layer media type '{}'", media_type.substr(0, 120)));
}

bool IsIndexMediaType(std::string_view media_type) {
  return media_type == kMediaTypeOciIndex || media_type == kMediaTypeDockerManifestList;
}

bool IsManifestMediaType(std::string_view media_type) {
  return media_type == kMediaTypeOciManifest || media_type == kMediaTypeDockerManifest;
}

Result<std::string> PeekMediaType(std::string_view text, std::string_view what) {
  ASSIGN_OR_RETURN(json doc, ParseObject(text, what, kMaxManifestBytes));
  ASSIGN_OR_RETURN(std::string media_type, GetString(doc, "mediaType", what));
  if (media_type.empty() && doc.contains("manifests")) return std::string(kMediaTypeOciIndex);
  if (media_type.empty() && doc.contains("layers")) return std::string(kMediaTypeOciManifest);
  return media_type;
}

Result<Index> ParseIndex(std::string_view text, std::string_view what) {
  ASSIGN_OR_RETURN(json doc, ParseObject(text, what, kMaxManifestBytes));
  RETURN_IF_ERROR(CheckSchemaVersion(doc, what));
  auto manifests = doc.find("manifests");
  if (manifests == doc.end() || !manifests->is_array()) {
    return InvalidArgumentError(fmt::format("{}: no 'manifests' array", what));
  }
  Index index;
  for (const auto& m : *manifests) {
    ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor(m, what));
    index.manifests.push_back(std::move(d));
  }
  return index;
}

Result<Manifest> ParseManifest(std::string_view text, std::string_view what) {
  ASSIGN_OR_RETURN(json doc, ParseObject(text, what, kMaxManifestBytes));
  RETURN_IF_ERROR(CheckSchemaVersion(doc, what));
  Manifest m;
  ASSIGN_OR_RETURN(m.media_type, GetString(doc, "mediaType", what));
  if (!m.media_type.empty() && !IsManifestMediaType(m.media_type)) {
    return InvalidArgumentError(
        fmt::format("{}: media type '{}' is not an image manifest", what, m.media_type));
  }
  auto config = doc.find("config");
  if (config == doc.end()) return InvalidArgumentError(fmt::format("{}: no 'config'", what));
  ASSIGN_OR_RETURN(m.config, ParseDescriptor(*config, what));
  auto layers = doc.find("layers");
  if (layers == doc.end() || !layers->is_array()) {
    return InvalidArgumentError(fmt::format("{}: no 'layers' array", what));
  }
  for (const auto& l : *layers) {
    ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor(l, what));
    auto compression = CompressionOfLayer(d.media_type);
    if (!compression.ok()) return compression.status().WithPrefix(what);
    m.layers.push_back(std::move(d));
  }
  return m;
}

Result<ImageConfig> ParseImageConfig(std::string_view text, std::string_view what) {
  ASSIGN_OR_RETURN(json doc, ParseObject(text, what, kMaxConfigBytes));
  ImageConfig c;
  ASSIGN_OR_RETURN(c.os, GetString(doc, "os", what));
  ASSIGN_OR_RETURN(c.architecture, GetString(doc, "architecture", what));
  ASSIGN_OR_RETURN(c.created, GetString(doc, "created", what));
  auto config = doc.find("config");
  if (config != doc.end() && !config->is_null()) {
    if (!config->is_object()) {
      return InvalidArgumentError(fmt::format("{}: 'config' is not an object", what));
    }
    const json& cfg = *config;
    ASSIGN_OR_RETURN(c.env, GetStringArray(cfg, "Env", what));
    ASSIGN_OR_RETURN(c.entrypoint, GetStringArray(cfg, "Entrypoint", what));
    ASSIGN_OR_RETURN(c.cmd, GetStringArray(cfg, "Cmd", what));
    ASSIGN_OR_RETURN(c.working_dir, GetString(cfg, "WorkingDir", what));
    ASSIGN_OR_RETURN(c.user, GetString(cfg, "User", what));
    ASSIGN_OR_RETURN(c.labels, GetStringMap(cfg, "Labels", what));
    ASSIGN_OR_RETURN(c.stop_signal, GetString(cfg, "StopSignal", what));
    auto ports = cfg.find("ExposedPorts");
    if (ports != cfg.end() && ports->is_object()) {
      for (const auto& [port, unused] : ports->items()) c.exposed_ports.push_back(port);
    }
  }
  auto rootfs = doc.find("rootfs");
  if (rootfs != doc.end() && rootfs->is_object()) {
    ASSIGN_OR_RETURN(std::vector<std::string> ids, GetStringArray(*rootfs, "diff_ids", what));
    for (const auto& id : ids) {
      auto d = Digest::Parse(id);
      if (!d.ok()) return d.status().WithPrefix(fmt::format("{}: rootfs.diff_ids", what));
      c.diff_ids.push_back(*d);
    }
  }
  return c;
}

std::string ImageConfigToJson(const ImageConfig& c) {
  json cfg = json::object();
  if (!c.env.empty()) cfg["Env"] = c.env;
  if (!c.entrypoint.empty()) cfg["Entrypoint"] = c.entrypoint;
  if (!c.cmd.empty()) cfg["Cmd"] = c.cmd;
  if (!c.working_dir.empty()) cfg["WorkingDir"] = c.working_dir;
  if (!c.user.empty()) cfg["User"] = c.user;
  if (!c.labels.empty()) cfg["Labels"] = c.labels;
  if (!c.stop_signal.empty()) cfg["StopSignal"] = c.stop_signal;
  if (!c.exposed_ports.empty()) {
    json ports = json::object();
    for (const auto& p : c.exposed_ports) ports[p] = json::object();
    cfg["ExposedPorts"] = ports;
  }
  json doc = json::object();
  if (!c.created.empty()) doc["created"] = c.created;
  if (!c.os.empty()) doc["os"] = c.os;
  if (!c.architecture.empty()) doc["architecture"] = c.architecture;
  doc["config"] = cfg;
  json ids = json::array();
  for (const auto& d : c.diff_ids) ids.push_back(d.ToString());
  doc["rootfs"] = {{"type", "layers"}, {"diff_ids", ids}};
  // Replacement of invalid UTF-8 keeps a hostile config from throwing in dump().
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace warren::image

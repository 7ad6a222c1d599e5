#include "image/records.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace warren::image {
namespace {

using nlohmann::json;

std::string Dump(const json& doc) {
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<json> Parse(std::string_view text, std::string_view what) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return DataLossError(fmt::format("store record {} is damaged: not a JSON object", what));
  }
  return doc;
}

Result<std::string> String(const json& doc, const char* key, std::string_view what) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) {
    return DataLossError(fmt::format("store record {} is damaged: no string '{}'", what, key));
  }
  return it->get<std::string>();
}

Result<int64_t> Int(const json& doc, const char* key, std::string_view what) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_integer()) {
    return DataLossError(fmt::format("store record {} is damaged: no integer '{}'", what, key));
  }
  return it->get<int64_t>();
}

Result<Digest> DigestField(const json& doc, const char* key, std::string_view what) {
  ASSIGN_OR_RETURN(std::string text, String(doc, key, what));
  auto d = Digest::Parse(text);
  if (!d.ok()) return DataLossError(fmt::format("store record {}: {}", what, d.status().message()));
  return *d;
}

Result<std::vector<Digest>> DigestList(const json& doc, const char* key, std::string_view what) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_array()) {
    return DataLossError(fmt::format("store record {} is damaged: no array '{}'", what, key));
  }
  std::vector<Digest> out;
  for (const auto& v : *it) {
    auto d = v.is_string() ? Digest::Parse(v.get<std::string>())
                           : Result<Digest>(InvalidArgumentError("not a string"));
    if (!d.ok()) {
      return DataLossError(fmt::format("store record {}: bad digest in '{}'", what, key));
    }
    out.push_back(*d);
  }
  return out;
}

json DigestsToJson(const std::vector<Digest>& digests) {
  json out = json::array();
  for (const auto& d : digests) out.push_back(d.ToString());
  return out;
}

}  // namespace

std::string ImageRecordToJson(const ImageRecord& r) {
  json doc = {
      {"name", r.name},
      {"manifestDigest", r.manifest_digest.ToString()},
      {"configDigest", r.config_digest.ToString()},
      {"layers", DigestsToJson(r.layers)},
      {"config", json::parse(ImageConfigToJson(r.config), nullptr, false)},
      {"compressedSize", r.compressed_size},
      {"importedAt", r.imported_at},
      {"source", r.source},
  };
  return Dump(doc);
}

Result<ImageRecord> ImageRecordFromJson(std::string_view text, std::string_view what) {
  ASSIGN_OR_RETURN(json doc, Parse(text, what));
  ImageRecord r;
  ASSIGN_OR_RETURN(r.name, String(doc, "name", what));
  ASSIGN_OR_RETURN(r.manifest_digest, DigestField(doc, "manifestDigest", what));
  ASSIGN_OR_RETURN(r.config_digest, DigestField(doc, "configDigest", what));
  ASSIGN_OR_RETURN(r.layers, DigestList(doc, "layers", what));
  ASSIGN_OR_RETURN(r.compressed_size, Int(doc, "compressedSize", what));
  ASSIGN_OR_RETURN(r.imported_at, String(doc, "importedAt", what));
  ASSIGN_OR_RETURN(r.source, String(doc, "source", what));
  auto config = doc.find("config");
  if (config == doc.end() || !config->is_object()) {
    return DataLossError(fmt::format("store record {} is damaged: no 'config'", what));
  }
  auto parsed = ParseImageConfig(config->dump(), what);
  if (!parsed.ok()) return DataLossError(parsed.status().message());
  r.config = std::move(parsed).value();
  return r;
}

std::string LayerRecordToJson(const LayerRecord& r) {
  json doc = {
      {"digest", r.digest.ToString()},
      {"mediaType", r.media_type},
      {"compressedSize", r.compressed_size},
      {"unpackedBytes", r.unpacked_bytes},
      {"entries", r.entries},
      {"unpackedAt", r.unpacked_at},
  };
  return Dump(doc);
}

Result<LayerRecord> LayerRecordFromJson(std::string_view text, std::string_view what) {
  ASSIGN_OR_RETURN(json doc, Parse(text, what));
  LayerRecord r;
  ASSIGN_OR_RETURN(r.digest, DigestField(doc, "digest", what));
  ASSIGN_OR_RETURN(r.media_type, String(doc, "mediaType", what));
  ASSIGN_OR_RETURN(r.compressed_size, Int(doc, "compressedSize", what));
  ASSIGN_OR_RETURN(int64_t bytes, Int(doc, "unpackedBytes", what));
  ASSIGN_OR_RETURN(int64_t entries, Int(doc, "entries", what));
  r.unpacked_bytes = static_cast<uint64_t>(bytes);
  r.entries = static_cast<uint64_t>(entries);
  ASSIGN_OR_RETURN(r.unpacked_at, String(doc, "unpackedAt", what));
  return r;
}

std::string LeaseToJson(const Lease& l) {
  json doc = {
      {"id", l.id},
      {"image", l.image},
      {"layers", DigestsToJson(l.layers)},
      {"createdAt", l.created_at},
  };
  return Dump(doc);
}

Result<Lease> LeaseFromJson(std::string_view text, std::string_view what) {
  ASSIGN_OR_RETURN(json doc, Parse(text, what));
  Lease l;
  ASSIGN_OR_RETURN(l.id, String(doc, "id", what));
  ASSIGN_OR_RETURN(l.image, String(doc, "image", what));
  ASSIGN_OR_RETURN(l.layers, DigestList(doc, "layers", what));
  ASSIGN_OR_RETURN(l.created_at, String(doc, "createdAt", what));
  return l;
}

}  // namespace warren::image

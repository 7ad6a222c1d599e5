#include "cli/manifests.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/yaml_codec.h"

namespace warren::cli {
namespace {

Status ReadFile(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError(fmt::format("the path \"{}\" does not exist", path));
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return Status::Ok();
}

bool IsManifestFile(const std::filesystem::path& p) {
  auto ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

}  // namespace

std::string StringField(const api::Json& doc, const char* key) {
  if (!doc.is_object()) return "";
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

int DependencyRank(const api::Json& doc) {
  std::string kind = StringField(doc, "kind");
  if (kind == "SandboxTemplate") return 0;
  if (kind == "SandboxSet") return 1;
  return 2;
}

Status CollectManifests(const std::string& arg, bool recursive, std::vector<Manifest>& out) {
  std::vector<std::string> paths;
  if (arg == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    auto docs = api::ParseManifests(ss.str());
    if (!docs.ok()) return docs.status().WithPrefix("error parsing STDIN");
    for (auto& d : *docs) out.push_back({"STDIN", std::move(d)});
    return Status::Ok();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(arg, ec)) {
    auto add = [&](const std::filesystem::directory_entry& e) {
      if (e.is_regular_file() && IsManifestFile(e.path())) paths.push_back(e.path().string());
    };
    if (recursive) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg, ec)) add(e);
    } else {
      for (const auto& e : std::filesystem::directory_iterator(arg, ec)) add(e);
    }
    std::sort(paths.begin(), paths.end());
  } else {
    paths.push_back(arg);
  }
  for (const auto& p : paths) {
    std::string text;
    RETURN_IF_ERROR(ReadFile(p, text));
    auto docs = api::ParseManifests(text);
    if (!docs.ok()) return docs.status().WithPrefix(fmt::format("error parsing {}", p));
    for (auto& d : *docs) {
      // A List of objects applies item by item.
      if (StringField(d, "kind") == "List" && d["items"].is_array()) {
        for (auto& item : d["items"]) out.push_back({p, std::move(item)});
      } else {
        out.push_back({p, std::move(d)});
      }
    }
  }
  return Status::Ok();
}

}  // namespace warren::cli

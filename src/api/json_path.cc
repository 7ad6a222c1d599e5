#include "api/json_path.h"

#include "base/strings.h"

namespace warren::api {
namespace {

// Reads a key up to the next unescaped '.' or '['.
std::string ReadKey(std::string_view& p) {
  std::string key;
  while (!p.empty() && p.front() != '.' && p.front() != '[') {
    if (p.front() == '\\' && p.size() > 1) p.remove_prefix(1);
    key.push_back(p.front());
    p.remove_prefix(1);
  }
  return key;
}

std::string Unquote(std::string_view v) {
  v = base::TrimSpace(v);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    return std::string(v.substr(1, v.size() - 2));
  }
  return std::string(v);
}

}  // namespace

const Json* FindJsonPath(const Json& doc, std::string_view p) {
  if (!p.empty() && p.front() == '{' && p.back() == '}') p = p.substr(1, p.size() - 2);
  const Json* cur = &doc;
  while (!p.empty()) {
    if (p.front() == '.') {
      p.remove_prefix(1);
      std::string key = ReadKey(p);
      if (key.empty()) continue;
      if (!cur->is_object()) return nullptr;
      auto it = cur->find(key);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (p.front() == '[') {
      size_t close = p.find(']');
      if (close == std::string_view::npos) return nullptr;
      std::string_view inner = p.substr(1, close - 1);
      p.remove_prefix(close + 1);
      if (!cur->is_array()) return nullptr;
      if (inner.starts_with("?(@.") && inner.ends_with(")")) {
        std::string_view cond = inner.substr(4, inner.size() - 5);
        size_t eq = cond.find("==");
        if (eq == std::string_view::npos) return nullptr;
        std::string field(base::TrimSpace(cond.substr(0, eq)));
        std::string want = Unquote(cond.substr(eq + 2));
        const Json* found = nullptr;
        for (const auto& item : *cur) {
          if (!item.is_object()) continue;
          auto f = item.find(field);
          if (f == item.end()) continue;
          std::string have = f->is_string() ? f->get<std::string>() : f->dump();
          if (have == want) {
            found = &item;
            break;
          }
        }
        if (found == nullptr) return nullptr;
        cur = found;
      } else {
        auto index = base::ParseInt64(inner);
        if (!index || *index < 0 || static_cast<size_t>(*index) >= cur->size()) return nullptr;
        cur = &(*cur)[static_cast<size_t>(*index)];
      }
    } else {
      std::string key = ReadKey(p);
      if (!cur->is_object() || !cur->contains(key)) return nullptr;
      cur = &(*cur)[key];
    }
  }
  return cur;
}

std::string JsonPathText(const Json& doc, std::string_view path) {
  const Json* v = FindJsonPath(doc, path);
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  return DumpJson(*v);
}

}  // namespace warren::api

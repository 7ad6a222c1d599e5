#include "server/e2b/list_page.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/encoding.h"
#include "base/strings.h"

namespace warren::server::e2b {
namespace {

struct Cursor {
  int64_t started_ns = 0;
  std::string id;
};

int64_t Nanos(base::WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::string EncodeCursor(const SandboxRecord& r, SortOrder order) {
  std::string raw = fmt::format("{}__{}", Nanos(r.started_at), r.sandbox_id);
  if (order == SortOrder::kAsc) raw += "__asc";
  return base::Base64UrlEncode(raw);
}

Result<Cursor> DecodeCursor(std::string_view token, SortOrder order) {
  auto invalid = [] { return InvalidArgumentError("Invalid next token"); };
  auto raw = base::Base64Decode(token);
  if (!raw) return invalid();
  auto parts = base::Split(*raw, '_');
  // "<ns>__<id>[__asc]" splits on '_' into ns, "", id[, "", "asc"].
  bool asc = parts.size() == 5 && parts[3].empty() && parts[4] == "asc";
  if (!(parts.size() == 3 || asc) || !parts[1].empty()) return invalid();
  if (asc != (order == SortOrder::kAsc)) return invalid();
  auto ns = base::ParseInt64(parts[0]);
  if (!ns || parts[2].empty()) return invalid();
  return Cursor{*ns, std::string(parts[2])};
}

// Newest first, ties by id ascending.
bool DescBefore(int64_t a_ns, std::string_view a_id, int64_t b_ns, std::string_view b_id) {
  if (a_ns != b_ns) return a_ns > b_ns;
  return a_id < b_id;
}

bool Matches(const SandboxRecord& r, const ListQuery& q) {
  if (!r.Visible()) return false;
  if (r.state == E2bState::kRunning && !q.want_running) return false;
  if (r.state == E2bState::kPaused && !q.want_paused) return false;
  if (!q.template_id.empty() && r.template_id != q.template_id) return false;
  if (q.started_after && r.started_at < *q.started_after) return false;
  for (const auto& [k, v] : q.metadata) {
    auto it = r.metadata.find(k);
    if (it == r.metadata.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

Result<ListPage> SelectPage(std::vector<SandboxRecord> records, const ListQuery& query) {
  std::optional<Cursor> cursor;
  if (!query.next_token.empty()) {
    ASSIGN_OR_RETURN(cursor, DecodeCursor(query.next_token, query.order));
  }
  std::erase_if(records, [&](const SandboxRecord& r) { return !Matches(r, query); });
  bool asc = query.order == SortOrder::kAsc;
  auto before = [asc](const SandboxRecord& a, const SandboxRecord& b) {
    bool d = DescBefore(Nanos(a.started_at), a.sandbox_id, Nanos(b.started_at), b.sandbox_id);
    bool e = a.sandbox_id == b.sandbox_id && a.started_at == b.started_at;
    return asc ? (!d && !e) : d;
  };
  std::sort(records.begin(), records.end(), before);

  auto first = records.begin();
  if (cursor) {
    first = std::find_if(records.begin(), records.end(), [&](const SandboxRecord& r) {
      int64_t ns = Nanos(r.started_at);
      bool after_desc = DescBefore(cursor->started_ns, cursor->id, ns, r.sandbox_id);
      bool same = ns == cursor->started_ns && r.sandbox_id == cursor->id;
      return asc ? (!after_desc && !same) : after_desc;
    });
  }
  ListPage page;
  size_t available = static_cast<size_t>(records.end() - first);
  size_t n = std::min(available, static_cast<size_t>(query.limit));
  page.items.assign(std::make_move_iterator(first), std::make_move_iterator(first + n));
  if (available > n && !page.items.empty()) {
    page.next_token = EncodeCursor(page.items.back(), query.order);
  }
  return page;
}

}  // namespace warren::server::e2b

#include "server/quota/redis_ledger.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <map>
#include <set>

#include "base/strings.h"

namespace warren::server::quota {
namespace {

// KEYS: live, sum. ARGV: lock, cpu, memory, value, limit sandboxes, limit cpu, limit memory.
// Returns {admitted (0|1), sandboxes, cpu, memory} (the sums before this call).
constexpr const char* kReserveScript = R"lua(
local n = tonumber(redis.call('HGET', KEYS[2], 'sandboxes') or '0')
local c = tonumber(redis.call('HGET', KEYS[2], 'cpu') or '0')
local m = tonumber(redis.call('HGET', KEYS[2], 'memory') or '0')
local used = {string.format('%d', n), string.format('%d', c), string.format('%d', m)}
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  return {1, used[1], used[2], used[3]}
end
local ln, lc, lm = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if (ln >= 0 and n + 1 > ln) or (lc >= 0 and c + tonumber(ARGV[2]) > lc) or
   (lm >= 0 and m + tonumber(ARGV[3]) > lm) then
  return {0, used[1], used[2], used[3]}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
redis.call('HINCRBY', KEYS[2], 'sandboxes', 1)
redis.call('HINCRBY', KEYS[2], 'cpu', ARGV[2])
redis.call('HINCRBY', KEYS[2], 'memory', ARGV[3])
return {1, used[1], used[2], used[3]}
)lua";

// KEYS: live, sum. ARGV: lock. Returns 1 when an entry was removed.
constexpr const char* kReleaseScript = R"lua(
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local cpu, mem = string.match(v, '^(%-?%d+):(%-?%d+):')
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'sandboxes', -1)
redis.call('HINCRBY', KEYS[2], 'cpu', '-' .. cpu)
redis.call('HINCRBY', KEYS[2], 'memory', '-' .. mem)
return 1
)lua";

// KEYS: live, sum. Sets the sums from the entries.
constexpr const char* kRecountScript = R"lua(
local all = redis.call('HGETALL', KEYS[1])
local n, c, m = 0, 0, 0
for i = 2, #all, 2 do
  local cpu, mem = string.match(all[i], '^(%-?%d+):(%-?%d+):')
  n = n + 1
  c = c + tonumber(cpu)
  m = m + tonumber(mem)
end
redis.call('HSET', KEYS[2], 'sandboxes', string.format('%d', n), 'cpu', string.format('%d', c),
           'memory', string.format('%d', m))
return n
)lua";

std::string LiveKey(std::string_view ns) { return fmt::format("warren:quota:{{{}}}:live", ns); }
std::string SumKey(std::string_view ns) { return fmt::format("warren:quota:{{{}}}:sum", ns); }

std::string EntryValue(const Entry& e) {
  return fmt::format("{}:{}:{}", e.footprint.cpu_millicores, e.footprint.memory_bytes,
                     e.reserved_at_ms);
}

}  // namespace

struct RedisLedger::Reply {
  int type = 0;
  long long integer = 0;
  std::string str;
  std::vector<Reply> elements;

  static Reply From(const redisReply& r) {
    Reply out;
    out.type = r.type;
    out.integer = r.integer;
    if (r.str != nullptr) out.str.assign(r.str, r.len);
    for (size_t i = 0; i < r.elements; ++i) out.elements.push_back(From(*r.element[i]));
    return out;
  }
  // An integer reply, or a bulk string that holds one (Lua returns strings for big numbers).
  std::optional<int64_t> Int() const {
    if (type == REDIS_REPLY_INTEGER) return integer;
    if (type == REDIS_REPLY_STRING) return base::ParseInt64(str);
    return std::nullopt;
  }
};

void RedisLedger::ContextFree::operator()(redisContext* context) const { redisFree(context); }

Result<std::unique_ptr<RedisLedger>> RedisLedger::Create(std::string address,
                                                         std::chrono::milliseconds timeout) {
  std::string_view a = address;
  if (a.starts_with("redis://")) a.remove_prefix(8);
  while (a.ends_with('/')) a.remove_suffix(1);
  auto colon = a.rfind(':');
  auto port = colon == std::string_view::npos ? std::optional<int64_t>(6379)
                                              : base::ParseInt64(a.substr(colon + 1));
  std::string host(colon == std::string_view::npos ? a : a.substr(0, colon));
  if (host.empty() || !port || *port <= 0 || *port > 65535) {
    return InvalidArgumentError(
        fmt::format("quota Redis address \"{}\" must be host:port or redis://host:port", address));
  }
  return std::unique_ptr<RedisLedger>(new RedisLedger(host, static_cast<int>(*port), timeout));
}

RedisLedger::RedisLedger(std::string host, int port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout) {}

RedisLedger::~RedisLedger() = default;

Result<RedisLedger::Reply> RedisLedger::CommandLocked(const std::vector<std::string>& argv) {
  timeval tv{.tv_sec = static_cast<time_t>(timeout_.count() / 1000),
             .tv_usec = static_cast<suseconds_t>((timeout_.count() % 1000) * 1000)};
  if (!context_) {
    std::unique_ptr<redisContext, ContextFree> c(redisConnectWithTimeout(host_.c_str(), port_, tv));
    if (!c) return UnavailableError(fmt::format("{}: cannot allocate a connection", Describe()));
    if (c->err) {
      return UnavailableError(fmt::format("{}: connect: {}", Describe(), c->errstr));
    }
    if (redisSetTimeout(c.get(), tv) != REDIS_OK) {
      return UnavailableError(fmt::format("{}: set timeout: {}", Describe(), c->errstr));
    }
    context_ = std::move(c);
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& s : argv) {
    args.push_back(s.data());
    lens.push_back(s.size());
  }
  auto* raw = static_cast<redisReply*>(
      redisCommandArgv(context_.get(), static_cast<int>(args.size()), args.data(), lens.data()));
  if (raw == nullptr) {
    std::string why = context_->errstr;
    bool timed_out = context_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
    context_.reset();  // a connection that failed mid-command is in an unknown state
    return Status(timed_out ? StatusCode::kDeadlineExceeded : StatusCode::kUnavailable,
                  fmt::format("{}: {}: {}", Describe(), argv[0], timed_out ? "timed out" : why));
  }
  Reply reply = Reply::From(*raw);
  freeReplyObject(raw);
  if (reply.type == REDIS_REPLY_ERROR) {
    return InternalError(fmt::format("{}: {}: {}", Describe(), argv[0], reply.str));
  }
  return reply;
}

Result<RedisLedger::Reply> RedisLedger::Command(const std::vector<std::string>& argv) {
  std::lock_guard lock(mu_);
  return CommandLocked(argv);
}

Result<ReserveOutcome> RedisLedger::Reserve(std::string_view ns, const Entry& entry,
                                            const Limits& limits) {
  ASSIGN_OR_RETURN(Reply r,
                   Command({"EVAL", kReserveScript, "2", LiveKey(ns), SumKey(ns), entry.lock,
                            std::to_string(entry.footprint.cpu_millicores),
                            std::to_string(entry.footprint.memory_bytes), EntryValue(entry),
                            std::to_string(limits.sandboxes), std::to_string(limits.cpu_millicores),
                            std::to_string(limits.memory_bytes)}));
  if (r.elements.size() != 4) {
    return InternalError(
        fmt::format("{}: the reserve script answered {} values", Describe(), r.elements.size()));
  }
  ReserveOutcome out;
  out.admitted = r.elements[0].Int().value_or(0) == 1;
  out.used.sandboxes = r.elements[1].Int().value_or(0);
  out.used.cpu_millicores = r.elements[2].Int().value_or(0);
  out.used.memory_bytes = r.elements[3].Int().value_or(0);
  return out;
}

Status RedisLedger::Release(std::string_view ns, std::string_view lock) {
  return Command({"EVAL", kReleaseScript, "2", LiveKey(ns), SumKey(ns), std::string(lock)})
      .status();
}

Result<Usage> RedisLedger::UsageOf(std::string_view ns) {
  ASSIGN_OR_RETURN(Reply r, Command({"HMGET", SumKey(ns), "sandboxes", "cpu", "memory"}));
  Usage u;
  if (r.elements.size() == 3) {
    u.sandboxes = r.elements[0].Int().value_or(0);
    u.cpu_millicores = r.elements[1].Int().value_or(0);
    u.memory_bytes = r.elements[2].Int().value_or(0);
  }
  return u;
}

Status RedisLedger::Reconcile(std::string_view ns, const std::vector<Entry>& live,
                              int64_t keep_since_ms, const std::set<std::string>& ended) {
  ASSIGN_OR_RETURN(Reply all, Command({"HGETALL", LiveKey(ns)}));
  std::map<std::string, int64_t, std::less<>> stored;  // lock → reserved at
  for (size_t i = 0; i + 1 < all.elements.size(); i += 2) {
    std::string_view value = all.elements[i + 1].str;
    auto last = value.rfind(':');
    int64_t at =
        last == std::string_view::npos ? 0 : base::ParseInt64(value.substr(last + 1)).value_or(0);
    stored.emplace(all.elements[i].str, at);
  }
  std::set<std::string, std::less<>> wanted;
  for (const Entry& e : live) {
    wanted.insert(e.lock);
    if (stored.contains(e.lock)) continue;
    RETURN_IF_ERROR(Command({"HSET", LiveKey(ns), e.lock, EntryValue(e)}).status());
  }
  for (const auto& [lock, at] : stored) {
    if (wanted.contains(lock) || (at >= keep_since_ms && !ended.contains(lock))) continue;
    RETURN_IF_ERROR(Command({"HDEL", LiveKey(ns), lock}).status());
  }
  return Command({"EVAL", kRecountScript, "2", LiveKey(ns), SumKey(ns)}).status();
}

}  // namespace warren::server::quota

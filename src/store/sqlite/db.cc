#include "store/sqlite/db.h"

#include <fmt/format.h>
#include <sqlite3.h>

namespace warren::store::sqlite {
namespace {

StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    // The disk refused a read or write (EIO, EPERM on an immutable file, EFBIG): SQLite rolled
    // the transaction back, so nothing happened and the caller may retry (bench/soak store-ro).
    case SQLITE_IOERR:
      return StatusCode::kUnavailable;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return StatusCode::kResourceExhausted;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StatusCode::kDataLoss;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return StatusCode::kPermissionDenied;
    default:
      return StatusCode::kInternal;
  }
}

}  // namespace

Statement::~Statement() { sqlite3_finalize(stmt_); }

Query::~Query() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Query& Query::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Query& Query::Bind(int index, std::string_view text) {
  // A null data pointer would bind NULL; an empty string_view means "".
  const char* data = text.data() != nullptr ? text.data() : "";
  int rc = sqlite3_bind_text64(stmt_, index, data, text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Query& Query::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Result<bool> Query::Step() {
  if (bind_error_ != 0) return conn_->ErrorFromCode("bind", bind_error_);
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return conn_->ErrorFromCode(fmt::format("step \"{}\"", sqlite3_sql(stmt_)), rc);
}

Status Query::Run() {
  while (true) {
    ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

int64_t Query::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string_view Query::Text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  int n = sqlite3_column_bytes(stmt_, column);
  return p == nullptr ? std::string_view() : std::string_view(p, static_cast<size_t>(n));
}

bool Query::IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Status(CodeFor(rc), fmt::format("open sqlite database {}: {}", path, msg));
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Connection>(new Connection(db));
}

Connection::~Connection() {
  cache_.clear();  // finalize statements before closing
  sqlite3_close_v2(db_);
}

Status Connection::Exec(std::string_view sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return Status(CodeFor(rc), fmt::format("sqlite \"{}\": {}", sql.substr(0, 60), msg));
}

Status Connection::Run(const std::string& sql) {
  ASSIGN_OR_RETURN(Query q, Prepare(sql));
  return q.Run();
}

Result<Query> Connection::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return ErrorFromCode(fmt::format("prepare \"{}\"", sql), rc);
    it = cache_.emplace(sql, std::make_unique<Statement>(stmt)).first;
  }
  return Query(*this, *it->second);
}

Result<int64_t> Connection::QueryInt(const std::string& sql) {
  ASSIGN_OR_RETURN(Query q, Prepare(sql));
  ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return NotFoundError(fmt::format("no result for \"{}\"", sql));
  return q.Int(0);
}

Status Connection::Error(std::string_view what) const {
  return ErrorFromCode(what, sqlite3_errcode(db_));
}

Status Connection::ErrorFromCode(std::string_view what, int code) const {
  return Status(CodeFor(code),
                fmt::format("sqlite {}: {} ({})", what, sqlite3_errmsg(db_), sqlite3_errstr(code)));
}

}  // namespace warren::store::sqlite

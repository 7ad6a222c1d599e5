#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"

// Thin RAII wrappers over the SQLite C API. sqlite3.h stays in db.cc: callers see only these
// classes and forward declarations.
struct sqlite3;
struct sqlite3_stmt;

namespace warren::store::sqlite {

class Connection;

// A prepared statement owned by its Connection's cache. Use it through Query, which resets it.
// Not thread-safe (a connection is used by one thread at a time).
class Statement {
 public:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  sqlite3_stmt* raw() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
};

// One use of a cached statement: bind (1-based), step, read columns; resets and clears
// bindings when destroyed so the statement can be reused.
class Query {
 public:
  Query(Connection& conn, Statement& stmt) : conn_(&conn), stmt_(stmt.raw()) {}
  ~Query();
  Query(Query&& other) noexcept
      : conn_(other.conn_),
        stmt_(std::exchange(other.stmt_, nullptr)),
        bind_error_(other.bind_error_) {}
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  Query& operator=(Query&&) = delete;

  Query& Bind(int index, int64_t value);
  Query& Bind(int index, std::string_view text);  // copied by SQLite (SQLITE_TRANSIENT)
  Query& BindNull(int index);

  // True when a row is ready, false when done. A bind error surfaces here.
  Result<bool> Step();
  // Steps until done (for statements returning no rows).
  Status Run();

  int64_t Int(int column) const;
  std::string_view Text(int column) const;  // valid until the next Step
  bool IsNull(int column) const;

 private:
  Connection* conn_;
  sqlite3_stmt* stmt_;
  int bind_error_ = 0;
};

// An open database connection with a cache of prepared statements. Move-only; one thread at a
// time.
class Connection {
 public:
  // Opens (creating if needed) the database at `path` in serialized-off (NOMUTEX) mode.
  static Result<std::unique_ptr<Connection>> Open(const std::string& path);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements without results.
  Status Exec(std::string_view sql);
  // Runs one statement without results, prepared on first use and kept: for the transaction
  // control every read and write runs ("BEGIN", "COMMIT"), which Exec would parse each time.
  Status Run(const std::string& sql);
  // A cached prepared statement for `sql` (prepared on first use).
  Result<Query> Prepare(const std::string& sql);
  // Reads the single integer result of `sql` (a PRAGMA or a SELECT).
  Result<int64_t> QueryInt(const std::string& sql);

  // The last error of this connection as a Status with `what` as context.
  Status Error(std::string_view what) const;
  Status ErrorFromCode(std::string_view what, int code) const;
  sqlite3* raw() const { return db_; }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::map<std::string, std::unique_ptr<Statement>, std::less<>> cache_;
};

}  // namespace warren::store::sqlite

#pragma once
// The one thing the results history needs from a database: run a statement with positional
// parameters ($1, $2, ...) and read its rows as text. SQLite (embedded, the default) and PostgreSQL
// (a server, for a fleet) implement it, so the schema, the migrations and every query are written
// once, in the SQL both accept (history_store.cpp). Internal to the harness.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "phasebench/errors.hpp"

namespace pb::history {

/// The database refused a statement (or the connection): the history as given cannot be used, so
/// the command line reports it like bad input (exit 2), with the database's own message.
struct DatabaseError : InputError {
  using InputError::InputError;
};

/// A cell or a parameter: nullopt is SQL NULL.
using SqlValue = std::optional<std::string>;
using SqlRow = std::vector<SqlValue>;

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  /// Runs one statement; returns its rows (none for a statement without a result). Blocks until
  /// done. Throws DatabaseError with the database's message on failure.
  virtual std::vector<SqlRow> execute(const std::string& sql, const std::vector<SqlValue>& parameters = {}) = 0;
  /// Starts a transaction that writes, holding whatever lock makes a concurrent writer wait (SQLite:
  /// BEGIN IMMEDIATE under the busy timeout; PostgreSQL: BEGIN plus a transaction-scoped advisory
  /// lock when `exclusive`, used while migrating the schema).
  virtual void begin_write(bool exclusive) = 0;
  /// "sqlite FILE" or "postgresql HOST/DB": what the messages name.
  virtual std::string description() const = 0;
};

/// Opens the history at `url`: a `postgresql://` (or `postgres://`) URL goes to PostgreSQL, anything
/// else is a SQLite file path (created when missing). Throws InputError when it cannot be opened,
/// or when PostgreSQL was asked for and this build has no libpq (saying so).
std::unique_ptr<SqlConnection> open_connection(const std::string& url);

/// The two implementations behind open_connection (history_sqlite.cpp, history_backends/).
std::unique_ptr<SqlConnection> open_sqlite(const std::string& path);
std::unique_ptr<SqlConnection> open_postgresql(const std::string& url);

/// Runs `body` inside a write transaction: commits when it returns, rolls back when it throws.
template <typename Body>
void in_write_transaction(SqlConnection& connection, bool exclusive, Body&& body) {
  connection.begin_write(exclusive);
  try {
    body();
  } catch (...) {
    try {
      connection.execute("ROLLBACK");
    } catch (...) {  // the original error says more than a failed rollback
    }
    throw;
  }
  connection.execute("COMMIT");
}

}  // namespace pb::history

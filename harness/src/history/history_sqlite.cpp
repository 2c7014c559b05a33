// The SQLite side of the results history: one file, WAL journal so readers never block the writer,
// and a busy timeout so two CI jobs adding at once wait for each other instead of failing.

#include <sqlite3.h>

#include "history/history_sql.hpp"
#include "phasebench/errors.hpp"

namespace pb::history {
namespace {

// Long enough for another process's add (a few thousand rows) to finish on a loaded machine.
constexpr int kBusyTimeoutMs = 60000;

class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw InputError("cannot open the history database '" + path + "': " + why);
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    execute("PRAGMA journal_mode=WAL", {});
    execute("PRAGMA foreign_keys=ON", {});
  }
  ~SqliteConnection() override { sqlite3_close(db_); }

  std::vector<SqlRow> execute(const std::string& sql, const std::vector<SqlValue>& parameters) override {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) fail(sql);
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owned(statement, sqlite3_finalize);
    bind(statement, parameters, sql);
    std::vector<SqlRow> rows;
    for (;;) {
      const int step = sqlite3_step(statement);
      if (step == SQLITE_DONE) break;
      if (step != SQLITE_ROW) fail(sql);
      rows.push_back(read_row(statement));
    }
    return rows;
  }

  void begin_write(bool /*exclusive: an IMMEDIATE transaction already excludes other writers*/) override {
    execute("BEGIN IMMEDIATE", {});
  }

  std::string description() const override { return "sqlite " + path_; }

 private:
  // Parameters are written $1, $2, ... as in PostgreSQL; SQLite takes them as named parameters,
  // so each is bound by its name, whatever order they appear in.
  void bind(sqlite3_stmt* statement, const std::vector<SqlValue>& parameters, const std::string& sql) {
    for (size_t i = 0; i < parameters.size(); ++i) {
      const int index = sqlite3_bind_parameter_index(statement, ("$" + std::to_string(i + 1)).c_str());
      if (index == 0) continue;  // a parameter the statement does not use
      const int code = parameters[i] ? sqlite3_bind_text(statement, index, parameters[i]->c_str(),
                                                         static_cast<int>(parameters[i]->size()), SQLITE_TRANSIENT)
                                     : sqlite3_bind_null(statement, index);
      if (code != SQLITE_OK) fail(sql);
    }
  }

  static SqlRow read_row(sqlite3_stmt* statement) {
    SqlRow row;
    for (int column = 0; column < sqlite3_column_count(statement); ++column) {
      if (sqlite3_column_type(statement, column) == SQLITE_NULL) {
        row.emplace_back();
        continue;
      }
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, column));
      row.emplace_back(std::string(text, static_cast<size_t>(sqlite3_column_bytes(statement, column))));
    }
    return row;
  }

  [[noreturn]] void fail(const std::string& sql) {
    throw DatabaseError("sqlite " + path_ + ": " + sqlite3_errmsg(db_) + " (in: " + sql.substr(0, 80) + ")");
  }

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<SqlConnection> open_sqlite(const std::string& path) { return std::make_unique<SqliteConnection>(path); }

std::unique_ptr<SqlConnection> open_connection(const std::string& url) {
  const bool postgresql = url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
  return postgresql ? open_postgresql(url) : open_sqlite(url);
}

}  // namespace pb::history

// The PostgreSQL side of the results history, through libpq's C API (no C++ wrapper, so no ABI
// question between the user's compiler and the packaged libpqxx). Each statement is sent with its
// parameters as text; the server types them from the columns they go into.

#include <libpq-fe.h>

#include <memory>
#include "history/history_sql.hpp"
#include "phasebench/errors.hpp"

namespace pb::history {
namespace {

// Any fixed number: the lock every schema migration takes, so two first runs do not both migrate.
constexpr long long kMigrationLockKey = 0x70686173656265LL;  // "phasebe"

class PostgresqlConnection final : public SqlConnection {
 public:
  explicit PostgresqlConnection(const std::string& url) : url_(url), connection_(PQconnectdb(url.c_str())) {
    if (!connection_ || PQstatus(connection_) != CONNECTION_OK) {
      const std::string why = connection_ ? PQerrorMessage(connection_) : "out of memory";
      PQfinish(connection_);
      throw InputError("cannot connect to the history database '" + url + "': " + why);
    }
    execute("SET client_min_messages = warning", {});  // no NOTICE lines for IF NOT EXISTS
  }
  ~PostgresqlConnection() override { PQfinish(connection_); }

  std::vector<SqlRow> execute(const std::string& sql, const std::vector<SqlValue>& parameters) override {
    std::vector<const char*> values;
    for (const SqlValue& parameter : parameters) values.push_back(parameter ? parameter->c_str() : nullptr);
    std::unique_ptr<PGresult, void (*)(PGresult*)> result(
        PQexecParams(connection_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                     nullptr, 0),
        PQclear);
    const ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
      throw DatabaseError("postgresql: " + std::string(PQerrorMessage(connection_)) + " (in: " + sql.substr(0, 80) + ")");
    std::vector<SqlRow> rows(static_cast<size_t>(PQntuples(result.get())));
    for (int r = 0; r < PQntuples(result.get()); ++r)
      for (int c = 0; c < PQnfields(result.get()); ++c)
        rows[static_cast<size_t>(r)].push_back(PQgetisnull(result.get(), r, c) ? SqlValue()
                                                                                 : SqlValue(PQgetvalue(result.get(), r, c)));
    return rows;
  }

  void begin_write(bool exclusive) override {
    execute("BEGIN", {});
    if (exclusive) execute("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLockKey) + ")", {});
  }

  std::string description() const override { return "postgresql " + url_; }

 private:
  std::string url_;
  PGconn* connection_;
};

}  // namespace

std::unique_ptr<SqlConnection> open_postgresql(const std::string& url) {
  return std::make_unique<PostgresqlConnection>(url);
}

}  // namespace pb::history

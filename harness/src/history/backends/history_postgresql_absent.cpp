// Built when libpq was not found at configure time: a postgresql:// history is refused with why.

#include "history/history_sql.hpp"
#include "phasebench/errors.hpp"

namespace pb::history {

std::unique_ptr<SqlConnection> open_postgresql(const std::string& url) {
  throw InputError("'" + url + "' is a PostgreSQL database, but this phasebench was built without libpq " +
                   "(Debian: libpq-dev; reconfigure and rebuild), so it can only use a SQLite file");
}

}  // namespace pb::history

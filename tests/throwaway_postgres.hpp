#pragma once
// A throwaway PostgreSQL server for the history tests: a fresh cluster (initdb) on a temporary
// directory, listening on a unix socket there and on no TCP port, stopped when the test process
// ends. Started once per process, on first use. Where the server binaries are missing (Debian:
// postgresql) it is not started and says why, and the PostgreSQL tests are skipped with that reason.
// As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).

#include <unistd.h>

#include <filesystem>
#include <string>

#include "process.hpp"

namespace pb::testing {

class ThrowawayPostgres {
 public:
  /// The one server of this test process; started on first call.
  static ThrowawayPostgres& shared() {
    static ThrowawayPostgres server;
    return server;
  }
  /// Why there is no server ("" when it runs).
  const std::string& unavailable() const { return unavailable_; }
  /// A URL for a new, empty database on the server.
  std::string fresh_database_url() {
    const std::string name = "history_test_" + std::to_string(++databases_);
    const ProcessResult made = run_command(as_server_user(bin_ + "/psql") + " -h " + dir_.string() +
                                           " -U phasebench -d postgres -q -c 'CREATE DATABASE " + name + "' 2>&1");
    if (made.exit_code != 0) throw std::runtime_error("CREATE DATABASE failed: " + made.output);
    return "postgresql://phasebench@/" + name + "?host=" + dir_.string();
  }
  ~ThrowawayPostgres() {
    if (unavailable_.empty())
      run_command(as_server_user(bin_ + "/pg_ctl") + " -D " + (dir_ / "data").string() + " -m immediate stop >/dev/null 2>&1");
    std::filesystem::remove_all(dir_);
  }

 private:
  ThrowawayPostgres() {
    bin_ = find_binaries();
    if (bin_.empty()) {
      unavailable_ = "the PostgreSQL server binaries are not installed (Debian: postgresql; ci/install-deps.sh installs it)";
      return;
    }
    // A short path: a unix socket's path must fit in 107 bytes.
    dir_ = std::filesystem::path("/tmp") / ("pbpg-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    if (geteuid() == 0) run_command("chown postgres: " + dir_.string());
    const ProcessResult init = run_command(as_server_user(bin_ + "/initdb") + " -D " + (dir_ / "data").string() +
                                           " -U phasebench --auth=trust --no-sync -E UTF8 2>&1");
    const ProcessResult start =
        init.exit_code != 0 ? init
                            : run_command(as_server_user(bin_ + "/pg_ctl") + " -D " + (dir_ / "data").string() +
                                          " -l " + (dir_ / "log").string() + " -w -o \"-k " + dir_.string() +
                                          " -c listen_addresses='' -c fsync=off\" start 2>&1");
    if (start.exit_code != 0) unavailable_ = "the throwaway PostgreSQL server did not start: " + start.output;
  }

  static std::string find_binaries() {
    const ProcessResult found = run_command("ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1");
    std::string dir = found.output.substr(0, found.output.find('\n'));
    return !dir.empty() && std::filesystem::exists(dir + "/initdb") ? dir : "";
  }

  static std::string as_server_user(const std::string& program) {
    return geteuid() == 0 ? "runuser -u postgres -- " + program : program;
  }

  std::string bin_, unavailable_;
  std::filesystem::path dir_;
  int databases_ = 0;
};

}  // namespace pb::testing

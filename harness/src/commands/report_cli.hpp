#pragma once
// `phasebench report RUN... --out report.html` (or `report --history DB`) on the command line.
// Kept apart from cli.cpp so that file only wires it in.

#include <optional>
#include <string>
#include <vector>

#include "history/history_trend.hpp"

namespace CLI {
class App;
}

namespace pb {

class ReportCommand {
 public:
  /// Adds `report` to `app`.
  explicit ReportCommand(CLI::App& app);
  /// After parsing: the exit code when `report` was chosen, or nullopt. Throws InputError on bad
  /// input (the caller turns it into exit code 2).
  std::optional<int> run_chosen();

 private:
  int write_history();

  CLI::App* command_;
  std::vector<std::string> runs_;
  std::string out_;
  std::string history_, commit_url_;
  history::TrendOptions trend_options_;
};

}  // namespace pb

#pragma once
// `phasebench report RUN... --out report.html` on the command line. Kept apart from cli.cpp so that
// file only wires it in.

#include <optional>
#include <string>
#include <vector>

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
  CLI::App* command_;
  std::vector<std::string> runs_;
  std::string out_;
};

}  // namespace pb

#pragma once
// The regression-tracking commands on the command line: `compare`, `merge`, `baseline`, and
// `run --shard`. Kept apart from cli.cpp so that file only wires them in.

#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace pb {

struct Selection;

/// `run --shard i/n` (fleets: docs/fleets.md), parsed into `selection`.
void add_shard_option(CLI::App& run, Selection& selection);

class RegressionCommands {
 public:
  /// Adds `compare`, `merge` and `baseline` to `app`.
  explicit RegressionCommands(CLI::App& app);
  ~RegressionCommands();
  /// After parsing: the exit code of the one of these commands that was chosen, or nullopt.
  /// Throws InputError on bad input (the caller turns it into exit code 2).
  std::optional<int> run_chosen();

 private:
  struct Parsed;
  std::unique_ptr<Parsed> parsed_;
};

}  // namespace pb

#pragma once
// `phasebench history add|list|trend|export` on the command line (docs/history.md). Kept apart
// from cli.cpp so that file only wires it in.

#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace pb {

class HistoryCommands {
 public:
  /// Adds `history` and its subcommands to `app`.
  explicit HistoryCommands(CLI::App& app);
  ~HistoryCommands();
  /// After parsing: the exit code when `history` was chosen, or nullopt. Throws InputError on bad
  /// input (the caller turns it into exit code 2).
  std::optional<int> run_chosen();

 private:
  struct Parsed;
  std::unique_ptr<Parsed> parsed_;
};

}  // namespace pb

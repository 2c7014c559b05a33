#pragma once
// The subcommands behind the command line (cli.cpp parses, these do the work; `run` and `verify`
// have files of their own: run_command.hpp, verify_command.hpp). Each returns the process exit
// code: 0 all well, 1 a check failed, 2 bad usage or input (thrown as InputError).

#include <string>
#include <vector>

#include "phasebench/runner.hpp"

namespace pb::commands {

/// The selected workloads with their shape at `size`, phases, variants and backends.
int list(const Selection& selection, SizeClass size = SizeClass::Default);

struct DumpCommand {
  std::string workload;
  SizeClass size = SizeClass::Small;
  uint64_t seed = 1;
  std::string out_dir;
};
int dump(const DumpCommand& command);

}  // namespace pb::commands

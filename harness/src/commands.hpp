#pragma once
// The subcommands behind the command line (cli.cpp parses, these do the work). Each returns the
// process exit code: 0 all well, 1 a check failed, 2 bad usage or input (thrown as InputError).

#include <string>
#include <vector>

#include "phasebench/runner.hpp"

namespace pb::commands {

int list(const Selection& selection);

struct RunCommand {
  RunOptions options;
  std::string out_dir;          // empty: results/runs/<run-id>
  std::string worker_journal;   // set in the worker process of a supervised run
  std::string crashed_file;     // rows a previous worker crashed in: "row\treason" lines
  bool supervise = true;
};
int run(RunCommand command, int argc, char** argv);

int verify(const VerifyOptions& options);

struct DumpCommand {
  std::string workload;
  SizeClass size = SizeClass::Small;
  uint64_t seed = 1;
  std::string out_dir;
};
int dump(const DumpCommand& command);

}  // namespace pb::commands

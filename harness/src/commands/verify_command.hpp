#pragma once
// `verify` on the command line. Its checks run in a worker process (worker_process.hpp), so that a
// variant that crashes or hangs becomes an ERROR line naming the check, and the other checks go
// on; the supervisor only watches, restarts and sums up. Internal to the harness.

#include <string>

#include "phasebench/runner.hpp"

namespace pb::commands {

struct VerifyCommand {
  VerifyOptions options;
  double hang_timeout_s = 300;  // a check running longer is ended: ERROR "timed out after N s"
  std::string worker_dir;       // set in the worker: the supervisor's scratch directory
  std::string junit;            // where to write a JUnit XML report of the checks ("": none)
};

/// Exit code: 0 every check passed, 1 one failed (a crash or a time-out included), 128 + the
/// signal when stopped by SIGINT, SIGTERM or SIGHUP (after printing what was checked so far).
/// With `junit` set, the checks made are also written there as JUnit XML, beside the summary;
/// exit 2 when that file cannot be written.
/// PHASEBENCH_NO_ISOLATION set: the checks run in this process (for debugging).
int verify(VerifyCommand command, int argc, char** argv);

}  // namespace pb::commands

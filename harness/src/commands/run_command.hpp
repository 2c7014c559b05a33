#pragma once
// `run` on the command line: the supervisor, its worker, and the run directory they leave.
//
// The supervisor starts a worker (this program again, `run --worker-dir DIR`), which checks, warms
// up and times every case, writing each finished step to the run record in DIR (run_record.hpp)
// and naming each step in its journal before it begins. The supervisor watches:
//   - a worker that crashes, or runs a step past its limit (a hang), is ended; the case the journal
//     names becomes ERROR ("crashed: ...", "timed out after N s") and a new worker goes on from
//     the record, without it;
//   - SIGINT, SIGTERM or SIGHUP end the worker at once; the run directory is written from the
//     record with what was finished, marked incomplete, with the record under resume/ so that
//     `run --resume DIR` finishes it;
//   - a worker that finishes: the supervisor writes the run directory, marked complete.
// Internal to the harness.

#include <string>

#include "phasebench/runner.hpp"

namespace pb::commands {

struct RunCommand {
  RunOptions options;
  std::string out_dir;     // empty: results/runs/<run-id>
  std::string resume_dir;  // --resume: an incomplete run directory to finish
  std::string worker_dir;  // set in the worker: the supervisor's scratch directory
  int worker_threads = 0;  // set in the worker: the thread count whose cases it runs
};

/// Exit code: 0 every case passed, 1 a check failed (a crash or time-out included) or the worker
/// kept dying, 2 bad input, 128 + the signal when stopped. PHASEBENCH_NO_ISOLATION set: the cases
/// run in this process (for debugging; a crash then ends the run).
int run(RunCommand command);

}  // namespace pb::commands

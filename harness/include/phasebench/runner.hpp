#pragma once
// The engine behind `run` and `verify`: selects cases from the registries, checks each against the
// fp64 oracle, counts, and times through Google Benchmark with interleaved repetitions.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "phasebench/variant.hpp"
#include "phasebench/workload.hpp"

namespace pb {

/// Which cases a command covers. Empty fields select everything.
struct Selection {
  std::string suite;
  std::string filter;  // regex searched in "suite/workload/backend/phase"
  std::vector<std::string> backends;
  // `run --shard i/n`: only the i-th (1-based) of n parts (cases_of_shard).
  int shard_index = 1;
  int shard_count = 1;
};

/// One (workload, backend, device, phase) with its size: the unit every row describes.
struct Case {
  std::shared_ptr<const Workload> workload;
  std::shared_ptr<Backend> backend;
  const VariantLadder* ladder = nullptr;
  std::string device;
  std::string device_unavailable_reason;  // empty when the device can run here
  int phase = 0;
  std::string phase_name;
  bool exact = true;
  SizeClass size = SizeClass::Default;
  PhasePlan plan;                           // the optimizations in effect, from the catalog
  std::optional<CannotRun> capability_gap;  // set when the device lacks what the phase needs
  std::string known_bug;                    // known_bug() of this phase (known_bugs.hpp): its check must disagree
  int threads = 1;                          // the CPU threads asked for (the row has the backend's effective ones)
  bool threads_in_name = false;             // the run has this case at several thread counts

  /// "suite/workload/backend/phase": what --filter matches and failures print.
  std::string id() const;
  /// "suite/workload/size/backend/device/phase", with "/threads=<n>" where the run has the case at
  /// several thread counts: unique per row.
  std::string row_name() const;
  /// The threads its row records: what the backend uses when `threads` are asked for.
  int effective_threads() const;
  /// results::row_key() of its row.
  std::string row_key() const;
};

/// The SKIPPED (the backend has it on another device) or UNSUPPORTED (on none) of a phase whose
/// needs `backend` lacks on `device`, with the reason written from the catalog; nullopt when none.
std::optional<CannotRun> capability_gap(const PhaseInfo& phase, const Backend& backend, const std::string& device);

/// The cases of the selection's shard (all of them when it has one): each ladder at each size (a
/// point of a sweep) goes to one shard, round-robin over their sorted names, so that every shard of
/// the same selection and build agrees, a ladder's sizes are dealt over the shards, and the
/// speedups between phases stay within one shard.
std::vector<Case> cases_of_shard(std::vector<Case> cases, const Selection& selection);

/// Every case the selection covers at `size`, in registry order. Throws InputError for a bad
/// regex, suite or backend name.
std::vector<Case> plan_cases(const Selection& selection, SizeClass size);

/// What `run` spends on a whole run, checking included, unless told otherwise (--time-budget): the
/// README's main command runs the default suite in at most ten minutes on two cores.
constexpr double kDefaultTimeBudgetSeconds = 480;

struct RunOptions {
  Selection selection;
  std::vector<SizeClass> sizes{SizeClass::Default};  // every case at each, in one interleaved schedule
  int reps = 10;            // repetitions per timed case while the budget allows, never fewer than 3
  bool reps_fixed = false;  // --reps given: exactly `reps`, whatever the budget
  std::vector<int> thread_counts{1};  // every case at each (--threads 1,2,max): runs_in_worker()
  int threads = 1;                    // the count of this worker: one of thread_counts
  uint64_t seed = 1;
  bool quick = false;
  double time_budget_s = kDefaultTimeBudgetSeconds;
  double hang_timeout_s = 300;  // a check or warm-up running longer is ended: ERROR "timed out"
  // Worker processes the timed repetitions are split over, one after another, each setting every
  // case up anew: a state of one process (where its memory landed, where its threads ran) weighs
  // 1/processes in each row instead of the whole row.
  int processes = 1;
  std::string run_id;
};

struct VerifyLine {
  std::string row_name;
  uint64_t seed = 0;
  Status status = Status::Ok;
  std::string detail;
  double seconds = 0;  // how long the check took (0 for one whose worker died in it)
  /// "<row name> seed <seed>": one check of `verify`, as its worker's journal names it.
  std::string check_name() const;
};

struct VerifyOptions {
  Selection selection;
  std::vector<SizeClass> sizes;  // empty: every size whose memory estimate fits
  int seeds = 3;
  uint64_t first_seed = 1;
  int threads = 1;
  // The isolated worker's hooks (verify_command.cpp). Checks named in `done` (check_name()) were
  // finished by an earlier worker and are not done again; `starting` is called with a check's row
  // and seed before it begins (the worker's journal, fault injection), `finished` with its line.
  std::set<std::string> done;
  std::function<void(const VerifyLine& check)> starting;
  std::function<void(const VerifyLine&)> finished;
};

/// Checks every selected case on every seed and size, in order; returns the lines of the checks
/// it made (not those in `done`).
std::vector<VerifyLine> execute_verify(const VerifyOptions& options);

/// Whether the worker of `worker_threads` (one of `thread_counts`, a worker each) runs case `c`.
/// A backend whose threads change within a process has all its counts in the first count's worker,
/// their repetitions interleaved under the same conditions; one whose pool is fixed when it starts
/// (Kokkos) has each count in the worker of that count.
bool runs_in_worker(const Case& c, const std::vector<int>& thread_counts, int worker_threads);
/// Sets the thread count of OpenMP and of `c`'s backend to the case's, before a step of it.
void use_threads_of(const Case& c);

/// Initializes the backends the cases use (once per process), each with the most threads of
/// `threads` and its cases' own (Case::threads).
void init_backends(const std::vector<Case>& cases, int threads);
/// Finalizes the backends init_backends() initialized, last first. Returns how many there were.
size_t finalize_backends();

/// Ends a process that initialized no backend (a supervisor of `run` or `verify`, `list`,
/// `compare`, `report`): flushes every output stream, then exits with `code` without running the
/// libraries' exit-time teardown. Such a process only asked the device runtimes what devices there
/// are; with a CUDA LibTorch (on an H200) the teardown that follows those questions can die of
/// SIGSEGV after the results are written, losing the buffered summary and turning exit 0 into 139,
/// while a process that used the device exits cleanly. Under LeakSanitizer the leak check, which
/// would run at exit, runs first.
[[noreturn]] void exit_without_library_teardown(int code);

}  // namespace pb

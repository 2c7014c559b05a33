#pragma once
// The result row and the files a run writes (a contract: docs/file-formats.md; columns may be
// added at the end, never renamed). One row type, one field list; the CSV writer and the
// reader are both derived from that list, and a golden test pins the header.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "phasebench/status.hpp"

namespace pb {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();  // written as an empty cell
constexpr int kResultsSchemaVersion = 1;

struct ResultRow {
  std::string run_id, suite, workload, size, backend, device;
  int phase_index = 0;
  std::string phase;
  bool exact = true;
  Status status = Status::Ok;  // parsed from its word when read: an unknown word is an input error
  std::string reason;
  double rel_l2_err = kMissing, max_abs_err = kMissing, tolerance = kMissing;
  int reps = 0;
  double median_ms = kMissing, min_ms = kMissing, max_ms = kMissing;
  double ci_low_ms = kMissing, ci_high_ms = kMissing;
  double speedup_vs_prev = kMissing, speedup_vs_phase0 = kMissing, speedup_vs_reference = kMissing;
  double claimed_min = kMissing, claimed_max = kMissing;
  double host_syncs_per_iter = kMissing, ops_per_iter = kMissing, bytes_alloc_per_iter = kMissing;
  double gb_per_s = kMissing, gflop_per_s = kMissing, roofline_pct = kMissing;
  int threads = 0;
  // ---- added columns (after the contract's) ----
  std::string shape;         // the size's dimensions, "M=48 (B=3 K=16) n=8"
  uint64_t seed = 0;         // input seed of the checked run
  std::string worst_output;  // the output rel_l2_err/tolerance refer to
  double speedup_vs_prev_ci_low = kMissing, speedup_vs_prev_ci_high = kMissing;
  double speedup_vs_phase0_ci_low = kMissing, speedup_vs_phase0_ci_high = kMissing;
  double speedup_vs_reference_ci_low = kMissing, speedup_vs_reference_ci_high = kMissing;
  int64_t iterations_per_rep = 0;
  int schema = kResultsSchemaVersion;
  // Rollouts: the per-step relative L2 error of one output against the exact fp64 reference, and
  // the per-step budget an approximate phase declares, as "e0;e1;..." (empty when not a rollout).
  std::string step_output, step_rel_l2_err, step_budget;
  // Operations per iteration in each named region the variant marks (pb::counters::Region), as
  // "anxiety=3;phase_scale=4" in the order the regions open; empty when it marks none.
  std::string ops_by_region;
  // Bytes held after each step of an iteration (pb::counters::end_step), relative to its start,
  // as "m0;m1;..."; empty when the variant marks no steps.
  std::string step_memory_bytes;
  // Added column: why the row's repetitions were disturbed by other work on the machine (empty:
  // they were not); such a row is no measurement to compare (interference.hpp).
  std::string disturbed;
  // Added column: the ceiling roofline_pct is measured against: "compute", "memory" or the cache
  // level the row's data are streamed from ("L2"); empty when roofline_pct is.
  std::string bound;
  // Added column: the worst relative L2 error of the check of a run after the timing (poisoned,
  // run, checked on the state the timed runs left); missing when no such check ran.
  double later_rel_l2_err = kMissing;
  // Added column: a scaled size's factor of the default size (`size` "0.25x": 0.25); empty for a
  // named size.
  double scale = kMissing;
};

struct SampleRow {
  std::string workload, size, backend, device, phase;
  int rep = 0;
  double ms = 0;
  std::string suite;  // added column
  // Added column: CPU time the process used per iteration, in ms (all its threads; kMissing in
  // files written before it was recorded). Unlike `ms` it does not grow while other work on the
  // machine holds the CPU, which is what `compare --metric cpu` relies on.
  double cpu_ms = kMissing;
  // Added column: the cores' worth of CPU that other work on the machine used during the
  // repetition (harness/src/engine/interference.hpp; kMissing where not measured). The machine's counters
  // tick every 10 ms per CPU, so over a short repetition it is coarse, and may be below 0: a row's
  // verdict weighs it over all its repetitions, by rep_ms.
  double others_cores = kMissing;
  // Added column: how long the repetition ran, all its iterations, in ms: the interval
  // others_cores is measured over (kMissing in files written before it was recorded).
  double rep_ms = kMissing;
  // Added column: the row's threads (results.csv's `threads`; 0 in files written before it was
  // recorded, whose samples belong to the one row that matches everything else). A run with several
  // thread counts has a row per count, told apart by it.
  int threads = 0;
  // Added column: how long a fixed piece of scalar work took on the slowest CPU the run could use,
  // all of them probed at once just before the repetition, in microseconds
  // (harness/src/engine/cpu_probe.hpp; kMissing where not measured). Against its lowest value in
  // a run it says how much slower the CPUs were than their best during the repetition.
  double cpu_probe_us = kMissing;
};

/// What the readers accept in a row's naming columns: one of the sizes; a backend of this
/// phasebench (every backend folder, built here or not: a run from a machine with CUDA still
/// reads); a device name as backends spell it ("cpu", "cuda", Kokkos' "hip", ...).
bool is_size_name(const std::string& text);
bool is_backend_name(const std::string& text);
bool is_device_name(const std::string& text);
const char* known_backends_text();  // "a backend (reference, torch, ...)"

std::vector<std::string> results_columns();
std::vector<std::string> samples_columns();

std::string results_csv(const std::vector<ResultRow>& rows);
std::string samples_csv(const std::vector<SampleRow>& rows);

/// Reads a results.csv through the CSV parser library. Throws InputError (file, line and column
/// named) on malformed input, an unknown status or a missing contract column.
std::vector<ResultRow> read_results_csv(const std::string& path);
/// The same from a results.csv's text, `name` standing for the file in messages (the history
/// reads the copies of runs' files it stores).
std::vector<ResultRow> read_results_csv_text(const std::string& name, const std::string& content);
std::vector<SampleRow> read_samples_csv(const std::string& path);

}  // namespace pb

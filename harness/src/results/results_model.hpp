#pragma once
// The results model: a run directory (results.csv, samples.csv, machine.json, catalog.json) read
// into memory, the one rule that picks the rows a row's speedups divide by, and the one function
// that derives a row's computed columns (times, speedups with their intervals, GB/s, GFLOP/s,
// roofline %, claims). `run`, `merge --pool`, `compare`, `report` and the claims view all go
// through it, so a column means the same wherever it is shown. Internal to the harness.

#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/catalog.hpp"
#include "phasebench/results.hpp"
#include "roofline/roofline.hpp"

namespace pb::results {

/// Per row key, one value per repetition in repetition order.
using SampleIndex = std::map<std::string, std::vector<double>>;

/// A run read back from disk.
struct RunData {
  std::string label;  // the path as the user gave it
  std::string results_path;
  std::vector<ResultRow> rows;  // claims set from `catalog` (unknown without one)
  std::vector<SampleRow> sample_rows;
  std::vector<std::string> sample_row_keys;  // the row_key() of the row each of sample_rows belongs to
  SampleIndex samples;      // wall time, by row_key()
  SampleIndex cpu_samples;  // CPU time, parallel to `samples` (kMissing where the file has none)
  // The CPUs' probe before each repetition (samples.csv's cpu_probe_us), parallel to `samples`
  // (kMissing where the file has none).
  SampleIndex cpu_probe_samples;
  nlohmann::json machine;   // null when machine.json is absent
  catalog::Catalog catalog;  // unsaved when catalog.json is absent (an older run)
  std::string fingerprint() const;  // "" when unknown
  /// The worker processes each row's repetitions came from: machine.json's timing.processes (1 in
  /// runs written before `run --processes`); 0 when machine.json does not say how the run was timed.
  int processes() const;
  /// The machine's roofline ceilings from machine.json; nullopt when absent or unreadable, and
  /// then why in `why_not` (when given).
  std::optional<roofline::Ceilings> ceilings(std::string* why_not = nullptr) const;
  /// The directory the run was read from.
  std::string directory() const;
  /// nullopt for a complete run; for an incomplete one (stopped, or its worker kept dying), why
  /// in one line: "stopped by SIGTERM; 12 of 40 cases done; resume with: phasebench run --resume
  /// DIR". machine.json says so with "complete": false and an "incomplete" object
  /// (docs/file-formats.md); one without "complete" (an older run) is complete. A malformed mark
  /// still reads as incomplete, with what it does say.
  std::optional<std::string> incomplete() const;
};

/// Throws InputError, naming the run's directory, why it is incomplete and how to resume it, when
/// `run` is incomplete: `command` ("compare", "merge", ...) refuses such a run unless given
/// --allow-incomplete, since the cases it never reached would read as rows that went missing.
void require_complete(const RunData& run, const std::string& command);

/// `path` is a run directory or a results.csv. Throws InputError naming the file (and line) when
/// a file is missing or malformed, a status is unknown, a row appears twice, or the schema is
/// newer than this build's.
RunData load_run(const std::string& path);

/// "suite/workload/size/backend/device/phase/threads": what rows are matched by.
std::string row_key(const ResultRow& row);
/// The same key from its parts (a planned case's, before it has a row).
std::string row_key_of(const std::string& suite, const std::string& workload, const std::string& size,
                       const std::string& backend, const std::string& device, const std::string& phase, int threads);
/// The first row of `rows` that another one repeats at another thread count (run --threads 1,2);
/// nullptr where there is none.
const ResultRow* first_row_at_several_thread_counts(const std::vector<ResultRow>& rows);
std::string row_key(const SampleRow& sample);
/// "suite/workload/size/backend/device/<index>_<phase>": how rows are shown (as `run` names them).
std::string row_name(const ResultRow& row);
/// Rows' names as `run`'s summary and `compare` show them: row_name, with "/threads=N" where the
/// rows shown hold some row at several thread counts (run --threads 1,2), so that no two read alike.
class ShownRowNames {
 public:
  /// `rows`: every row that will be shown (in compare, both runs').
  explicit ShownRowNames(const std::vector<ResultRow>& rows)
      : several_thread_counts_(first_row_at_several_thread_counts(rows) != nullptr) {}
  std::string operator()(const ResultRow& row) const {
    return row_name(row) + (several_thread_counts_ ? "/threads=" + std::to_string(row.threads) : "");
  }

 private:
  bool several_thread_counts_;
};

struct IndexedSamples {
  SampleIndex wall, cpu, others_cores, rep_ms, cpu_probe;
  std::map<std::string, size_t> first_index;  // by key: the index in `samples` of its first sample
  std::vector<std::string> row_keys;          // by index in `samples`: the key of its row
};
/// `samples` by the key of the row each belongs to. Older samples.csv files have no suite: such a
/// sample belongs to the one row of `rows` that matches the rest. Throws InputError (naming
/// `source`) when a repetition appears twice.
IndexedSamples index_samples(const std::vector<SampleRow>& samples, const std::vector<ResultRow>& rows,
                             const std::string& source);

// ---- baselines -----------------------------------------------------------------------------------

/// The rows a row is divided by. Among the rows of the same suite, workload and size for which
/// `timed` holds: `previous`, the nearest lower phase of the same backend, device and threads;
/// `first`, the lowest phase of those at or below the row (the row itself when it is the lowest);
/// `reference`, the serial reference's row (serial, whatever threads the row has). nullptr where
/// there is none.
struct Baselines {
  const ResultRow* previous = nullptr;
  const ResultRow* first = nullptr;
  const ResultRow* reference = nullptr;
};
using TimedRow = std::function<bool(const ResultRow&)>;
Baselines baselines_of(const ResultRow& row, const std::vector<const ResultRow*>& rows, const TimedRow& timed);
std::vector<const ResultRow*> pointers_to(const std::vector<ResultRow>& rows);

// ---- derived columns -----------------------------------------------------------------------------

/// What the computed columns are derived from.
struct Derivation {
  // Wall-time samples by row key: set, every timing column is derived from them (a row without
  // samples gets none); null, the recorded timing columns are kept (a run read back).
  const SampleIndex* samples = nullptr;
  const catalog::Catalog* catalog = nullptr;  // claims and declared work; null: none known
  std::optional<roofline::Ceilings> ceilings;  // for roofline_pct
  // Other work's cores per repetition and the repetitions' lengths, parallel to `samples`, and the
  // machine's logical cores: for `disturbed` (no contention verdict without them).
  const SampleIndex* others_cores = nullptr;
  const SampleIndex* rep_ms = nullptr;
  int cores = 0;
  // Other work's mean cores over the run's timing stage: stands in for a row whose repetitions are
  // too short to measure it (interference::disturbance); NaN: not known.
  double timing_stage_cores = std::numeric_limits<double>::quiet_NaN();
};

/// A row's work per iteration: as the catalog declares it for the row's size; without a catalog
/// entry (a run from before catalogs were saved), the work its throughput columns imply at its
/// median (zero where they are empty).
WorkEstimate declared_work(const ResultRow& row, const catalog::Catalog* catalog);

/// Derives the computed columns of `rows[index]` from `rows` and `inputs`: reps, median, spread
/// and interval; speedup_vs_prev/phase0/reference with intervals (baselines_of over rows with
/// samples); gb_per_s and gflop_per_s (declared work from the catalog, else the work the row's
/// recorded throughput implies) and roofline_pct; claimed_min/max from the catalog (none for the
/// serial reference or without a catalog).
void derive_row(std::vector<ResultRow>& rows, size_t index, const Derivation& inputs);
/// derive_row for every row.
void derive_columns(std::vector<ResultRow>& rows, const Derivation& inputs);

// ---- writing -------------------------------------------------------------------------------------

/// What a run directory holds.
struct RunFiles {
  std::vector<ResultRow> rows;
  std::vector<SampleRow> samples;
  nlohmann::json machine;
  catalog::Catalog catalog;    // written when saved
  std::string benchmark_json;  // written when not empty
  // An incomplete run's record (run_record.hpp), copied in as resume/ for `run --resume`.
  std::filesystem::path resume_record;
};
/// Writes the files under a staging name and renames the directory into place when complete.
/// Throws InputError when `directory` exists: runs are never overwritten.
void write_run_directory(const std::filesystem::path& directory, const RunFiles& files);

}  // namespace pb::results

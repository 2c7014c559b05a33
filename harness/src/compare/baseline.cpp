// Recording a baseline (baseline.hpp).

#include "compare/baseline.hpp"

#include <unistd.h>

#include <algorithm>

#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/machine.hpp"
#include "results/results_model.hpp"

namespace pb::baseline {
namespace fs = std::filesystem;

namespace {

// A baseline is what later runs must match: it has to pass, and time something.
void check_usable(const results::RunData& run) {
  if (run.fingerprint().empty() || run.fingerprint() == "mixed")
    throw InputError(run.label + " has no single machine fingerprint (machine.json missing or a mixed "
                     "merge): a baseline belongs to one machine");
  for (const ResultRow& row : run.rows)
    if (is_failure(row.status))
      throw InputError(run.label + ": " + results::row_name(row) + " is " + to_string(row.status) +
                       "; a baseline must be a run where every check passes");
  const bool timed = std::any_of(run.rows.begin(), run.rows.end(),
                                 [&](const ResultRow& row) { return run.samples.count(results::row_key(row)); });
  if (!timed) throw InputError(run.label + " timed no row: nothing to compare later runs against");
}

// The run as it is, catalog included, so a later compare reads it with the definitions it had.
void write_baseline(const results::RunData& run, const fs::path& directory) {
  nlohmann::json machine = run.machine;
  machine["baseline"] = {{"recorded_from", run.machine.value("run_id", run.label)}, {"recorded_at", make_run_id()}};
  results::write_run_directory(directory, {run.rows, run.sample_rows, machine, run.catalog, "", {}});
}

}  // namespace

fs::path record(const std::string& run_path, const RecordOptions& options) {
  const results::RunData run = results::load_run(run_path);
  if (!options.allow_incomplete) results::require_complete(run, "baseline record");
  check_usable(run);
  const fs::path directory = fs::path(options.root) / run.fingerprint();
  if (!fs::exists(directory)) {
    write_baseline(run, directory);
    return directory;
  }
  if (!options.refresh)
    throw InputError("baseline " + directory.string() + " already exists; pass --refresh to replace it");
  // Move the old baseline aside first, and back if writing the new one fails.
  const fs::path old = directory.string() + ".old-" + std::to_string(getpid());
  fs::rename(directory, old);
  try {
    write_baseline(run, directory);
  } catch (...) {
    fs::rename(old, directory);
    throw;
  }
  fs::remove_all(old);
  return directory;
}

std::string fingerprint(const std::string& run) {
  if (run.empty()) return hardware_fingerprint();
  const std::string found = results::load_run(run).fingerprint();
  if (found.empty()) throw InputError(run + " has no machine.json with a fingerprint");
  return found;
}

}  // namespace pb::baseline

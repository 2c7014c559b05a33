#pragma once
// `merge`: joins the shards of one run (`run --shard i/n` on several machines or jobs) into one
// run directory that `compare`, `report` and `baseline record` read like any other.
// Internal to the harness.

#include <string>
#include <vector>

#include "results/catalog.hpp"
#include "phasebench/results.hpp"

namespace pb::results {
struct RunData;
}

namespace pb::merge {

struct MergeOptions {
  std::vector<std::string> runs;  // run directories or their results.csv
  std::string out_dir;            // must not exist
  bool allow_mixed = false;       // accept runs from different machines, or with differing catalogs
  bool pool = false;              // the runs repeat the same cases: pool their samples
  bool allow_incomplete = false;  // merge inputs marked incomplete; the merged run is marked so too
};

/// Writes the merged run and returns the lines to tell the user (what was merged, warnings).
/// The merged run's catalog.json unites the inputs' catalogs. Throws InputError for mixed machines
/// or catalogs that differ about a workload two inputs share (unless allowed); for shards (the
/// default) also for a shard given twice, or a case that two inputs both ran (only the serial
/// reference may repeat: every shard times it for its speedups; the lowest shard's copy is kept).
/// An incomplete input is refused unless `allow_incomplete`; then the merged run is incomplete,
/// its reason naming the inputs. With `pool`: see pool_rows().
std::vector<std::string> merge_runs(const MergeOptions& options);

struct MergedRows {
  std::vector<ResultRow> rows;
  std::vector<SampleRow> samples;
};

/// `merge --pool`: runs that repeat the same cases, each in its own process, as one run whose
/// rows hold every input's samples. Each process has its own memory layout, and some variants
/// run faster or slower by it; pooled samples carry that spread, which one process cannot show.
/// Every derived column is derived again from the pooled samples (results::derive_columns, with
/// `catalog` and the first run's roofline ceilings); a row that failed its check in any input fails
/// in the pool.
MergedRows pool_rows(const std::vector<results::RunData>& runs, const std::string& run_id,
                     const catalog::Catalog& catalog);

/// Adds `row`'s samples (in repetition order), wall and CPU time and the probe of the CPUs before
/// each, to `merged` (a probe missing where `cpu_probes` is shorter).
void append_samples(MergedRows& merged, const ResultRow& row, const std::vector<double>& samples,
                    const std::vector<double>& cpu_samples, const std::vector<double>& cpu_probes);

}  // namespace pb::merge

#pragma once
// `merge`: joins the shards of one run (`run --shard i/n` on several machines or jobs) into one
// run directory that `compare`, `report` and `baseline record` read like any other.
// Internal to the harness.

#include <string>
#include <vector>

namespace pb::merge {

struct MergeOptions {
  std::vector<std::string> runs;  // run directories or their results.csv
  std::string out_dir;            // must not exist
  bool allow_mixed = false;       // accept runs from machines with different fingerprints
};

/// Writes the merged run and returns the lines to tell the user (what was merged, warnings).
/// Throws InputError for mixed machines (unless allowed), a shard given twice, or a case that
/// two inputs both ran (only the serial reference may repeat: every shard times it for its
/// speedups; the lowest shard's copy is kept).
std::vector<std::string> merge_runs(const MergeOptions& options);

}  // namespace pb::merge

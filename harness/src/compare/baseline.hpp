#pragma once
// Baselines for the regression gate: results/baselines/<fingerprint>/ holds results.csv,
// samples.csv and machine.json of a passing run on the machine with that hardware fingerprint,
// committed so CI compares against them (ci/gate.sh). Internal to the harness.

#include <filesystem>
#include <string>

namespace pb::baseline {

constexpr const char* kDefaultRoot = "results/baselines";

struct RecordOptions {
  std::string root = kDefaultRoot;
  bool refresh = false;           // replace an existing baseline of that machine
  bool allow_incomplete = false;  // record a run marked incomplete (it stays marked)
};

/// Records `run` as the baseline of its machine: <root>/<fingerprint>/. Refuses a run with
/// failing rows or no timed row, an incomplete run unless allowed, and an existing baseline
/// unless `refresh` (the old one is replaced whole; git keeps its history). Returns the baseline
/// directory.
std::filesystem::path record(const std::string& run, const RecordOptions& options);

/// The fingerprint in `run`'s machine.json, or this machine's when `run` is empty.
std::string fingerprint(const std::string& run);

}  // namespace pb::baseline

#pragma once
// Baselines for the regression gate: results/baselines/<fingerprint>/ holds results.csv,
// samples.csv and machine.json of a passing run on the machine with that hardware fingerprint,
// committed so CI compares against them (ci/gate.sh). Internal to the harness.

#include <filesystem>
#include <string>

namespace pb::baseline {

constexpr const char* kDefaultRoot = "results/baselines";

/// Records `run` as the baseline of its machine: <root>/<fingerprint>/. Refuses a run with
/// failing rows or no timed row, and an existing baseline unless `refresh` (the old one is
/// replaced whole; git keeps its history). Returns the baseline directory.
std::filesystem::path record(const std::string& run, const std::string& root, bool refresh);

/// The fingerprint in `run`'s machine.json, or this machine's when `run` is empty.
std::string fingerprint(const std::string& run);

}  // namespace pb::baseline

#pragma once
// A small valid run directory (two rows, their samples, machine.json, catalog.json) that a
// harness then damages one file of.

#include <nlohmann/json.hpp>

#include "results/catalog.hpp"
#include "fuzz_input.hpp"
#include "phasebench/results.hpp"

namespace pb::fuzz {

/// Written once per process under `name`; every call returns it with all four files restored.
inline const std::filesystem::path& crafted_run_directory(const std::string& name) {
  static const std::filesystem::path dir = scratch_directory() / name;
  static std::string results, samples, machine, catalog;
  if (results.empty()) {
    std::vector<ResultRow> rows(2);
    std::vector<SampleRow> reps;
    for (int i = 0; i < 2; ++i) {
      ResultRow& row = rows[i];
      row = {};
      row.run_id = "20261125T000000Z-fuzz";
      row.suite = "trainer2";
      row.workload = "lior_step";
      row.size = "small";
      row.backend = i == 0 ? "reference" : "kokkos";
      row.device = "cpu";
      row.phase = i == 0 ? "serial_fp32" : "baseline";
      row.reps = 3;
      row.median_ms = 1.0 + i;
      row.threads = 1;
      for (int rep = 0; rep < 3; ++rep)
        reps.push_back({"lior_step", "small", row.backend, "cpu", row.phase, rep, 1.0 + i, "trainer2", 1.0 + i});
    }
    results = results_csv(rows);
    samples = samples_csv(reps);
    machine = nlohmann::json{{"run_id", "20261125T000000Z-fuzz"}, {"fingerprint", "f00d"}}.dump();
    catalog::WorkloadEntry entry;
    entry.name = "trainer2/lior_step";
    PhaseInfo phase;
    phase.name = "baseline";
    entry.phases.push_back(phase);
    catalog::Catalog saved;
    saved.saved = true;
    saved.workloads[entry.name] = entry;
    catalog = catalog::to_json(saved).dump();
    std::filesystem::create_directories(dir);
  }
  std::ofstream(dir / "results.csv") << results;
  std::ofstream(dir / "samples.csv") << samples;
  std::ofstream(dir / "machine.json") << machine;
  std::ofstream(dir / "catalog.json") << catalog;
  return dir;
}

}  // namespace pb::fuzz

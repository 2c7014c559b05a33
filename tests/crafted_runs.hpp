#pragma once
// Crafted run directories for the compare/merge/baseline tests, written with the harness's own
// writers (results_csv, samples_csv), so they are exactly what `run` writes.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/catalog.hpp"
#include "phasebench/results.hpp"
#include "phasebench/rng.hpp"
#include "process.hpp"

namespace pb::testing {

struct CraftedRow {
  std::string backend = "kokkos";
  int phase_index = 0;
  std::string phase = "baseline";
  double median_ms = 1.0;
  double noise = 0.01;  // each sample is median * (1 + noise * u), u uniform in [-1, 1)
  int reps = 12;
  double disturbed = 0;            // this share of the repetitions is slower (other work on the machine)
  double disturbed_factor = 1.85;  // by this factor
  // CPU time per iteration is this factor of the undisturbed time: other work that takes the CPU
  // away stretches the wall time only. NaN: no cpu_ms recorded (a file from before the column).
  double cpu_factor = 1.0;
  // The probe of the CPUs before each repetition, in microseconds (samples.csv's cpu_probe_us);
  // NaN: not recorded (a file from before the column).
  double cpu_probe_us = kMissing;
  Status status = Status::Ok;
  int schema = kResultsSchemaVersion;
};

struct CraftedRun {
  std::vector<CraftedRow> rows;
  std::string fingerprint = "f00dcafe0001";
  uint64_t noise_seed = 1;  // the same seed gives the same samples
  std::string run_id = "20261121T000000Z-crafted";
  std::string size = "small";
  nlohmann::json extra_machine = nlohmann::json::object();
  catalog::Catalog catalog;  // written as catalog.json when saved (a run from before catalogs: not)
};

/// A saved catalog (as a run's catalog.json has it) of one workload.
inline catalog::Catalog catalog_of(const catalog::WorkloadEntry& entry) {
  catalog::Catalog catalog;
  catalog.saved = true;
  catalog.workloads[entry.name] = entry;
  return catalog;
}

/// A catalog for the crafted ladder's workload (trainer2/lior_step at `size`): phases 0, 1 and 3,
/// each later one claiming `claimed` to `claimed` + 0.1 over the one before, and a whole-ladder claim.
inline catalog::Catalog crafted_catalog(double claimed = 1.2, const std::string& size = "small") {
  catalog::WorkloadEntry entry;
  entry.name = "trainer2/lior_step";
  entry.description = "crafted";
  for (const auto& [index, name] : std::vector<std::pair<int, std::string>>{{0, "baseline"}, {1, "batched_metrics"},
                                                                           {3, "fused_lior_spd"}}) {
    PhaseInfo phase;
    phase.index = index;
    phase.name = name;
    if (index > 0) {
      phase.claimed_min = claimed;
      phase.claimed_max = claimed + 0.1;
    }
    entry.phases.push_back(phase);
  }
  entry.cumulative_claim.claimed_min = 1.3;
  entry.cumulative_claim.claimed_max = 1.6;
  entry.sizes[size].work = {2e6, 4e6};
  entry.sizes[size].checks[0] = {OutputSpec("s", 1e-5, "crafted")};
  return catalog_of(entry);
}

/// The usual ladder: the serial reference and three kokkos phases, all 1 ms apart from noise.
inline std::vector<CraftedRow> ladder_rows() {
  return {{"reference", 0, "serial_fp32", 1.0}, {"kokkos", 0, "baseline", 2.0},
          {"kokkos", 1, "batched_metrics", 1.5}, {"kokkos", 3, "fused_lior_spd", 0.8}};
}

inline CraftedRow& find_row(CraftedRun& run, const std::string& backend, const std::string& phase) {
  for (CraftedRow& row : run.rows)
    if (row.backend == backend && row.phase == phase) return row;
  throw std::logic_error("no crafted row " + backend + "/" + phase);
}

inline ResultRow result_row(const CraftedRun& run, const CraftedRow& crafted, const std::vector<double>& samples) {
  ResultRow row;
  row.run_id = run.run_id;
  row.suite = "trainer2";
  row.workload = "lior_step";
  row.size = run.size;
  row.backend = crafted.backend;
  row.device = "cpu";
  row.phase_index = crafted.phase_index;
  row.phase = crafted.phase;
  row.status = crafted.status;
  row.reason = crafted.status == Status::Ok ? "" : "output s: rel_l2_err 0.5 > tolerance 1e-05";
  row.reps = static_cast<int>(samples.size());
  row.median_ms = samples.empty() ? kMissing : crafted.median_ms;
  row.threads = 1;
  row.schema = crafted.schema;
  return row;
}

/// Writes `run` as a run directory at a fresh temporary path and returns it.
inline std::filesystem::path write_run(const std::string& name, const CraftedRun& run) {
  const std::filesystem::path dir = fresh_temp_path(name);
  std::filesystem::create_directories(dir);
  std::vector<ResultRow> rows;
  std::vector<SampleRow> samples;
  for (const CraftedRow& crafted : run.rows) {
    SeededGenerator noise(run.noise_seed, crafted.backend + "/" + crafted.phase);
    std::vector<double> times, cpu_times;
    if (crafted.status == Status::Ok)
      for (int rep = 0; rep < crafted.reps; ++rep) {
        const double slowed = rep < crafted.disturbed * crafted.reps ? crafted.disturbed_factor : 1.0;
        const double undisturbed = crafted.median_ms * (1 + crafted.noise * noise.uniform(-1, 1));
        times.push_back(slowed * undisturbed);
        cpu_times.push_back(crafted.cpu_factor * undisturbed);
      }
    rows.push_back(result_row(run, crafted, times));
    for (size_t rep = 0; rep < times.size(); ++rep) {
      samples.push_back({"lior_step", run.size, crafted.backend, "cpu", crafted.phase, static_cast<int>(rep),
                         times[rep], "trainer2", cpu_times[rep]});
      samples.back().cpu_probe_us = crafted.cpu_probe_us;
    }
  }
  std::ofstream(dir / "results.csv") << results_csv(rows);
  std::ofstream(dir / "samples.csv") << samples_csv(samples);
  nlohmann::json machine = {{"fingerprint", run.fingerprint}, {"run_id", run.run_id}};
  machine.update(run.extra_machine);
  std::ofstream(dir / "machine.json") << machine.dump(2);
  if (run.catalog.saved) std::ofstream(dir / "catalog.json") << catalog::to_json(run.catalog).dump(2);
  return dir;
}

}  // namespace pb::testing

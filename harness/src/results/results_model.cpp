// The results model's rules (results_model.hpp): baselines, derived columns, writing a run.

#include "results/results_model.hpp"

#include <algorithm>
#include <cmath>

#include "phasebench/backend.hpp"
#include "phasebench/files.hpp"
#include "phasebench/stats.hpp"
#include "engine/interference.hpp"
#include "results/scaling.hpp"

namespace pb::results {
namespace fs = std::filesystem;

// ---- baselines -----------------------------------------------------------------------------------

std::vector<const ResultRow*> pointers_to(const std::vector<ResultRow>& rows) {
  std::vector<const ResultRow*> pointers;
  for (const ResultRow& row : rows) pointers.push_back(&row);
  return pointers;
}

Baselines baselines_of(const ResultRow& row, const std::vector<const ResultRow*>& rows, const TimedRow& timed) {
  Baselines bases;
  for (const ResultRow* other : rows) {
    if (other->suite != row.suite || other->workload != row.workload || other->size != row.size || !timed(*other))
      continue;
    if (other->backend == kReferenceBackend && !bases.reference) bases.reference = other;
    if (other->backend != row.backend || other->device != row.device || other->threads != row.threads ||
        other->phase_index > row.phase_index)
      continue;
    if (!bases.first || other->phase_index < bases.first->phase_index) bases.first = other;
    if (other->phase_index < row.phase_index && (!bases.previous || other->phase_index > bases.previous->phase_index))
      bases.previous = other;
  }
  return bases;
}

// ---- derived columns -----------------------------------------------------------------------------

namespace {

// The catalog's claim for the row's phase: the seed's gain over the previous phase. The serial
// reference is no rung of any ladder, so it claims nothing.
void set_claims(ResultRow& row, const catalog::Catalog* catalog) {
  row.claimed_min = row.claimed_max = kMissing;
  if (!catalog || row.backend == kReferenceBackend) return;
  const catalog::WorkloadEntry* entry = catalog->find(row.suite, row.workload);
  if (const PhaseInfo* phase = entry ? entry->phase(row.phase_index) : nullptr) {
    row.claimed_min = phase->claimed_min;
    row.claimed_max = phase->claimed_max;
  }
}

}  // namespace

// A run from before catalogs were saved declared its work only through its throughput columns:
// the work they imply at the recorded median is the same number, so pooling such runs keeps their
// GB/s consistent.
WorkEstimate declared_work(const ResultRow& row, const catalog::Catalog* catalog) {
  if (const catalog::WorkloadEntry* entry = catalog ? catalog->find(row.suite, row.workload) : nullptr)
    if (const auto size = entry->sizes.find(row.size); size != entry->sizes.end()) return size->second.work;
  const double per_throughput = row.median_ms * 1e6;  // GB/s * 1e9 * seconds
  return {std::isnan(row.gflop_per_s) ? 0 : row.gflop_per_s * per_throughput,
          std::isnan(row.gb_per_s) ? 0 : row.gb_per_s * per_throughput};
}

namespace {

// Every column derived from samples back to "none", so a row left without samples (one that
// failed in a pooled process) never shows another process's numbers.
void clear_timing(ResultRow& row) {
  row.reps = 0;
  row.disturbed.clear();
  row.bound.clear();
  for (double* column :
       {&row.median_ms, &row.min_ms, &row.max_ms, &row.ci_low_ms, &row.ci_high_ms, &row.speedup_vs_prev,
        &row.speedup_vs_prev_ci_low, &row.speedup_vs_prev_ci_high, &row.speedup_vs_phase0,
        &row.speedup_vs_phase0_ci_low, &row.speedup_vs_phase0_ci_high, &row.speedup_vs_reference,
        &row.speedup_vs_reference_ci_low, &row.speedup_vs_reference_ci_high, &row.gb_per_s, &row.gflop_per_s,
        &row.roofline_pct})
    *column = kMissing;
}

void set_time_columns(ResultRow& row, const std::vector<double>& samples) {
  const stats::Summary summary = stats::summarize(samples);
  row.reps = static_cast<int>(samples.size());
  row.median_ms = summary.median;
  row.min_ms = summary.min;
  row.max_ms = summary.max;
  row.ci_low_ms = summary.median_ci.low;
  row.ci_high_ms = summary.median_ci.high;
}

// base time / this row's time, with an interval that resamples both sets of samples.
void set_speedup(double& value, double& low, double& high, const std::vector<double>& base,
                 const std::vector<double>& samples) {
  const stats::Ratio ratio = stats::speedup(base, samples);
  value = ratio.value;
  low = ratio.ci.low;
  high = ratio.ci.high;
}

void set_speedups(ResultRow& row, const std::vector<ResultRow>& rows, const SampleIndex& samples) {
  const auto timed = [&](const ResultRow& other) { return samples.count(row_key(other)) > 0; };
  const Baselines bases = baselines_of(row, pointers_to(rows), timed);
  const std::vector<double>& mine = samples.at(row_key(row));
  const auto of = [&](const ResultRow* base) -> const std::vector<double>& { return samples.at(row_key(*base)); };
  if (bases.previous)
    set_speedup(row.speedup_vs_prev, row.speedup_vs_prev_ci_low, row.speedup_vs_prev_ci_high, of(bases.previous), mine);
  if (bases.first)
    set_speedup(row.speedup_vs_phase0, row.speedup_vs_phase0_ci_low, row.speedup_vs_phase0_ci_high, of(bases.first),
                mine);
  if (bases.reference)
    set_speedup(row.speedup_vs_reference, row.speedup_vs_reference_ci_low, row.speedup_vs_reference_ci_high,
                of(bases.reference), mine);
}

// Whether the row's phase computes in bf16: an optimization needing bf16 is in effect at its phase
// on a backend that has bf16. On one that has not, the phase ran in fp32 and the (higher) bf16
// ceiling only makes its share smaller, never above 100%.
bool computes_in_bf16(const ResultRow& row, const catalog::Catalog* catalog) {
  const catalog::WorkloadEntry* entry = catalog ? catalog->find(row.suite, row.workload) : nullptr;
  if (!entry) return false;
  const PhasePlan plan = derive_phase_plan(entry->phases, row.phase_index, {Capability::Bf16});
  for (const PhaseInfo& phase : entry->phases)
    if (plan.active().count(phase.name) &&
        std::find(phase.needs.begin(), phase.needs.end(), Capability::Bf16) != phase.needs.end())
      return true;
  return false;
}

void set_throughput(ResultRow& row, const WorkEstimate& work, const Derivation& inputs) {
  const double seconds = row.median_ms / 1e3;
  if (work.bytes > 0) row.gb_per_s = work.bytes / seconds / 1e9;
  if (work.flops > 0) row.gflop_per_s = work.flops / seconds / 1e9;
  if (!inputs.ceilings) return;
  // A GPU row against its GPU's ceilings, never the CPU's; none when its GPU has none.
  const std::optional<roofline::Ceilings> own =
      roofline::ceilings_for_device(*inputs.ceilings, row.device, computes_in_bf16(row, inputs.catalog));
  if (!own) return;
  const roofline::RooflinePosition position = roofline::with_latency_floor(
      roofline::roofline_position(row.gflop_per_s, row.gb_per_s, work.bytes > 0 ? work.bytes : kMissing, *own), row,
      *own);
  row.roofline_pct = position.percent;
  row.bound = position.bound;
}

// The row's samples in `index`; NaN for each repetition where there are none.
std::vector<double> per_repetition(const SampleIndex* index, const ResultRow& row, size_t reps) {
  if (index)
    if (const auto found = index->find(row_key(row)); found != index->end()) return found->second;
  return std::vector<double>(reps, kMissing);
}

void set_disturbed(ResultRow& row, const std::vector<double>& wall_ms, const Derivation& inputs) {
  const interference::RowRepetitions reps{wall_ms, per_repetition(inputs.others_cores, row, wall_ms.size()),
                                          per_repetition(inputs.rep_ms, row, wall_ms.size())};
  row.disturbed = interference::disturbance(reps, row.threads, inputs.cores, inputs.timing_stage_cores);
}

}  // namespace

void derive_row(std::vector<ResultRow>& rows, size_t index, const Derivation& inputs) {
  ResultRow& row = rows[index];
  set_claims(row, inputs.catalog);
  if (!inputs.samples) return;
  const WorkEstimate work = declared_work(row, inputs.catalog);  // before the times it may be read from change
  clear_timing(row);
  const auto mine = inputs.samples->find(row_key(row));
  if (mine == inputs.samples->end() || mine->second.empty()) return;
  set_time_columns(row, mine->second);
  set_speedups(row, rows, *inputs.samples);
  set_throughput(row, work, inputs);
  set_disturbed(row, mine->second, inputs);
}

void derive_columns(std::vector<ResultRow>& rows, const Derivation& inputs) {
  for (size_t i = 0; i < rows.size(); ++i) derive_row(rows, i, inputs);
}

// ---- writing -------------------------------------------------------------------------------------

void write_run_directory(const fs::path& directory, const RunFiles& files) {
  StagedDirectory staged(directory);
  const fs::path& dir = staged.staging_path();
  write_file_atomically(dir / "results.csv", results_csv(files.rows));
  write_file_atomically(dir / "samples.csv", samples_csv(files.samples));
  write_file_atomically(dir / "machine.json", files.machine.dump(2) + "\n");
  if (!files.benchmark_json.empty()) write_file_atomically(dir / "benchmark.json", files.benchmark_json);
  if (files.catalog.saved)
    write_file_atomically(dir / catalog::kFileName, catalog::to_json(files.catalog).dump(2) + "\n");
  if (const ScalingAnalysis scaling = analyze_scaling(files.rows, &files.catalog); !scaling.empty())
    write_file_atomically(dir / kScalingFileName, scaling_csv(scaling));
  if (!files.resume_record.empty()) fs::copy(files.resume_record, dir / "resume", fs::copy_options::recursive);
  staged.commit();
}

}  // namespace pb::results

// `run`: check, count and time every selected case, then turn each into a row of what was measured
// (the columns derived from the samples are the results model's: results_model.hpp).

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "case_runner.hpp"
#include "progress.hpp"
#include "timing.hpp"

namespace pb {
namespace {

using detail::LiveCase;

// Every speedup is measured against the serial reference, so a workload that has any case
// selected always gets its reference case too, whatever the filter says.
std::vector<Case> with_reference_cases(std::vector<Case> cases, SizeClass size) {
  std::vector<std::string> workloads;
  for (const Case& c : cases)
    if (std::find(workloads.begin(), workloads.end(), c.workload->full_name()) == workloads.end())
      workloads.push_back(c.workload->full_name());
  for (const std::string& name : workloads) {
    const bool has_reference = std::any_of(cases.begin(), cases.end(), [&](const Case& c) {
      return c.workload->full_name() == name && c.ladder->backend == kReferenceBackend;
    });
    if (has_reference) continue;
    Selection reference_only;
    reference_only.backends = {kReferenceBackend};
    reference_only.filter = "^" + name + "/";
    for (Case& c : plan_cases(reference_only, size)) cases.insert(cases.begin(), std::move(c));
  }
  return cases;
}

detail::TimingPlan timing_plan(const RunOptions& options) {
  detail::TimingPlan plan;
  plan.reps = options.reps;
  plan.shuffle_seed = options.seed;
  if (options.quick) {
    plan.warmup_ms = 2;
    plan.min_rep_ms = 5;
  }
  return plan;
}

void note_case(Progress& progress, size_t index, size_t total, const std::string& what, const LiveCase& live) {
  progress.note("[" + std::to_string(index + 1) + "/" + std::to_string(total) + "] " + what + " " +
                live.spec.row_name() + ": " + to_string(live.status) +
                (live.reason.empty() ? "" : " (" + live.reason + ")"));
}

// Warm-up and timing as progress stages. Each timed repetition lasts at least min_rep_ms (its
// iterations are calibrated for that), each warm-up at least warmup_ms: the expected paces,
// until measured ones replace them.
std::vector<Progress::Stage> timing_stages(const std::vector<LiveCase>& cases, const detail::TimingPlan& plan) {
  const size_t timed = std::count_if(cases.begin(), cases.end(), [](const LiveCase& live) {
    return live.variant && live.status == Status::Ok;
  });
  return {{"warm-up", timed, 1.5 * plan.warmup_ms / 1e3},
          {"timing", timed * static_cast<size_t>(plan.reps), 1.2 * plan.min_rep_ms / 1e3}};
}

// Brings every case up to "checked and counted" (or to the reason it cannot be).
void prepare_all(std::vector<LiveCase>& cases, const RunOptions& options, Progress& progress) {
  progress.plan({{"checking", cases.size(), 0.05}});
  std::map<std::string, detail::Problem> problems;  // per workload: inputs and oracle, made once
  for (size_t i = 0; i < cases.size(); ++i) {
    LiveCase& live = cases[i];
    const auto crashed = std::find_if(options.crashed.begin(), options.crashed.end(),
                                      [&](const auto& c) { return c.first == live.spec.row_name(); });
    if (crashed != options.crashed.end()) {
      live.status = Status::Error;
      live.reason = crashed->second;
      note_case(progress, i, cases.size(), "crashed", live);
      continue;
    }
    const std::string key = live.spec.workload->full_name();
    if (!problems.count(key))
      problems[key] = detail::make_problem(*live.spec.workload, options.size, options.seed);
    progress.step(live.spec.row_name());
    if (options.journal) options.journal(live.spec.row_name());
    detail::prepare(live, problems[key], options.threads);
    detail::check(live, problems[key]);
    if (live.status == Status::Ok) detail::count(live);
    note_case(progress, i, cases.size(), "checked", live);
  }
}

// "0.1;2.5e-07": numbers at full enough precision to plot, in one CSV cell.
std::string join_numbers(const std::vector<double>& values) {
  std::ostringstream text;
  text.precision(4);
  for (size_t i = 0; i < values.size(); ++i) text << (i ? ";" : "") << values[i];
  return text.str();
}

// The per-step errors of the first rollout output, against the exact reference when it has such
// a check (what an approximation costs), else against what its phase is checked with.
void add_step_errors(ResultRow& row, const CheckResult& check) {
  const OutputError* chosen = nullptr;
  for (const OutputError& error : check.outputs) {
    if (error.step_errors.empty()) continue;
    if (!chosen || (chosen->reference != chosen->name && error.reference == error.name)) chosen = &error;
  }
  if (!chosen) return;
  row.step_output = chosen->name + (chosen->reference == chosen->name ? "" : " vs " + chosen->reference);
  row.step_rel_l2_err = join_numbers(chosen->step_errors);
  row.step_budget = join_numbers(chosen->step_budget);
}

ResultRow base_row(const LiveCase& live, const RunOptions& options) {
  const Case& c = live.spec;
  ResultRow row;
  row.run_id = options.run_id;
  row.suite = c.workload->suite();
  row.workload = c.workload->name();
  row.size = to_string(c.size);
  row.shape = c.workload->shape(c.size);
  row.backend = c.ladder->backend;
  row.device = c.device;
  row.phase_index = c.phase;
  row.phase = c.phase_name;
  row.exact = c.exact;
  row.status = live.status;
  row.reason = live.reason;
  row.threads = c.backend->effective_threads(options.threads);
  row.seed = options.seed;
  if (!live.check.outputs.empty()) {
    row.rel_l2_err = live.check.worst.rel_l2_err;
    row.max_abs_err = live.check.worst.max_abs_err;
    row.tolerance = live.check.worst.tolerance;
    row.worst_output = live.check.worst.name;
    add_step_errors(row, live.check);
  }
  if (live.counted) {
    row.host_syncs_per_iter = static_cast<double>(live.counts.host_syncs);
    row.ops_per_iter = static_cast<double>(live.counts.ops);
    row.bytes_alloc_per_iter = static_cast<double>(live.counts.bytes_allocated);
  }
  return row;
}

SampleRow sample_row(const Case& c, int rep, double ms, double cpu_ms) {
  return {c.workload->name(), to_string(c.size), c.ladder->backend, c.device, c.phase_name, rep, ms,
          c.workload->suite(), cpu_ms};
}

}  // namespace

RunOutcome execute_run(const RunOptions& options) {
  std::vector<LiveCase> cases;
  for (Case& c : with_reference_cases(plan_cases(options.selection, options.size), options.size))
    cases.emplace_back(std::move(c));
  init_backends([&] {
    std::vector<Case> specs;
    for (const LiveCase& live : cases) specs.push_back(live.spec);
    return specs;
  }(), options.threads);

  Progress progress = Progress::on_stderr();
  prepare_all(cases, options, progress);
  const detail::TimingPlan plan = timing_plan(options);
  const std::vector<Progress::Stage> stages = timing_stages(cases, plan);
  progress.plan(stages);
  progress.note("timing: " + std::to_string(stages.front().steps) + " cases x " +
                std::to_string(plan.reps) + " interleaved repetitions, about " +
                format_duration(progress.seconds_left()));
  // time_cases() announces every warm-up and repetition through the journal: one progress step each.
  detail::Timings timings = detail::time_cases(cases, plan, [&](const std::string& row) {
    progress.step(row);
    if (options.journal) options.journal(row);
  });

  RunOutcome outcome;
  outcome.benchmark_json = timings.benchmark_json;
  for (size_t i = 0; i < cases.size(); ++i) {
    ResultRow row = base_row(cases[i], options);  // after timing, which may have turned it into ERROR
    if (timings.samples.count(i) && cases[i].status == Status::Ok) {
      row.iterations_per_rep = timings.iterations_per_rep.at(i);
      const auto& samples = timings.samples.at(i);
      const auto& cpu_samples = timings.cpu_samples.at(i);
      for (size_t rep = 0; rep < samples.size(); ++rep)
        outcome.samples.push_back(
            sample_row(cases[i].spec, static_cast<int>(rep), samples[rep], cpu_samples[rep]));
    }
    outcome.rows.push_back(std::move(row));
  }
  return outcome;  // the variants die here; backends finalize once, at process exit
}

}  // namespace pb

// `run`'s work (run.hpp): checking, warm-up, the time budget, interleaved timing, all of it
// recorded step by step; and a run assembled back from its record.

#include "engine/run.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "common/number_text.hpp"
#include "engine/case_runner.hpp"
#include "engine/interference.hpp"
#include "engine/progress.hpp"
#include "results/results_model.hpp"
#include "phasebench/stats.hpp"
#include "engine/timing.hpp"

namespace pb::detail {

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

TimingPlan timing_plan(const RunOptions& options) {
  TimingPlan plan;
  plan.reps = options.reps;
  plan.reps_fixed = options.reps_fixed;
  plan.shuffle_seed = options.seed;
  plan.hang_timeout_s = options.hang_timeout_s;
  if (options.quick) {
    plan.warmup_ms = 2;
    plan.min_rep_ms = 5;
  }
  return plan;
}

// ---- rows ----------------------------------------------------------------------------------------

// "0.1;2.5e-07": numbers at full enough precision to plot, in one CSV cell.
std::string join_numbers(const std::vector<double>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ";" : "") + format_significant(values[i], 4);
  return text;
}

// "anxiety=3;phase_scale=4": operations per named region, in the order the regions opened.
std::string join_region_ops(const std::vector<std::pair<std::string, int64_t>>& regions) {
  std::string text;
  for (const auto& [name, ops] : regions) text += (text.empty() ? "" : ";") + name + "=" + std::to_string(ops);
  return text;
}

// "0;1024;2048": whole numbers (bytes) exactly, in one CSV cell.
std::string join_integers(const std::vector<int64_t>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ";" : "") + std::to_string(values[i]);
  return text;
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

// A case's row as its check left it: status, errors, counters; no timing yet.
ResultRow checked_row(const LiveCase& live, const RunOptions& options) {
  const Case& c = live.spec;
  ResultRow row;
  row.run_id = options.run_id;
  row.suite = c.workload->suite();
  row.workload = c.workload->name();
  row.size = to_string(c.size);
  row.shape = c.workload->shape(c.size);
  row.scale = c.size.is_scaled() ? c.size.scale() : kMissing;
  row.backend = c.ladder->backend;
  row.device = c.device;
  row.phase_index = c.phase;
  row.phase = c.phase_name;
  row.exact = c.exact;
  row.status = live.status;
  row.reason = live.reason;
  row.threads = c.effective_threads();
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
    row.ops_by_region = join_region_ops(live.counts.ops_by_region);
    row.step_memory_bytes = join_integers(live.counts.step_memory_bytes);
  }
  return row;
}

SampleRow sample_row(const Case& c, int rep, const TimedRepetition& timed) {
  return {c.workload->name(), to_string(c.size),   c.ladder->backend,
          c.device,           c.phase_name,        rep,
          timed.wall_ms,      c.workload->suite(), timed.cpu_ms,
          timed.others_cores, timed.rep_ms,        c.effective_threads(),
          timed.cpu_probe_us};
}

// ---- the worker's stages -------------------------------------------------------------------------

// One run in progress: its cases, what is known of each, and where every finished step goes.
class RunInProgress {
 public:
  RunInProgress(const RunOptions& options, const RunRecord& previous, RunRecorder& recorder, const RunHooks& hooks)
      : options_(options), previous_(previous), recorder_(recorder), hooks_(hooks), plan_(timing_plan(options)),
        progress_(Progress::on_stderr()) {
    const std::vector<int>& counts = options.thread_counts;
    const auto later_counts = std::find(counts.begin(), counts.end(), options.threads) + 1;
    for (Case& c : run_cases(options)) {
      if (runs_in_worker(c, counts, options.threads))
        cases_.emplace_back(std::move(c));
      else if (std::any_of(later_counts, counts.end(), [&](int w) { return runs_in_worker(c, counts, w); }))
        ++later_workers_cases_;
    }
    checked_ms_.assign(cases_.size(), 0);
    std::vector<Case> specs;
    for (const LiveCase& live : cases_) specs.push_back(live.spec);
    init_backends(specs, options.threads);
  }

  void check_all();
  // Returns whether rounds are left for a later worker (--processes).
  bool time_all();
  void check_after_timing();

 private:
  const std::string& name(size_t i) const { return names_.at(i); }
  // The case's checked row in the earlier workers' record, if it is there.
  const ResultRow* checked_before(size_t i) const {
    const auto found = previous_.checked.find(cases_[i].spec.row_key());
    return found == previous_.checked.end() ? nullptr : &found->second;
  }
  // Every step of a case (its setup and check, warm-up, each repetition, the check after timing)
  // begins here: journaled, and at the case's own thread count.
  void begin_step(size_t i, double limit_seconds) {
    if (hooks_.starting_step) hooks_.starting_step(name(i), limit_seconds);
    use_threads_of(cases_[i].spec);
  }
  const Problem& problem_of(const LiveCase& live) { return problem_for(problems_, live.spec, options_.seed); }
  void note(size_t i, const std::string& what, const std::string& after = "") {
    const LiveCase& live = cases_[i];
    progress_.note("[" + std::to_string(i + 1) + "/" + std::to_string(cases_.size()) + "] " + what + " " +
                   name(i) + ": " + to_string(live.status) + (live.reason.empty() ? "" : " (" + live.reason + ")") +
                   after);
  }
  void fail(size_t i) { recorder_.error(name(i), cases_[i].reason); }
  bool restore(size_t i);
  std::vector<CaseTiming> planned_timings(const std::vector<size_t>& timed);
  std::vector<CaseTiming> new_timings(const std::vector<size_t>& timed);
  bool set_up_again(size_t i);
  void announce(const std::vector<CaseTiming>& timings, const std::vector<Repetition>& schedule, double budget,
                const std::string& share);
  std::string sweep_points() const;
  // What is left of the run's time budget for this worker: its share by cases against the workers
  // still to come, once their checking (at this worker's pace per case) is set aside.
  double budget_share_left() const {
    const double left = options_.time_budget_s - (seconds_since_epoch() - hooks_.budget_started_at);
    const double mine = static_cast<double>(std::max<size_t>(1, cases_.size()));
    const double later = static_cast<double>(later_workers_cases_);
    return (left - checking_seconds_ * later / mine) * mine / (mine + later);
  }

  const RunOptions& options_;
  const RunRecord& previous_;
  RunRecorder& recorder_;
  const RunHooks& hooks_;
  const TimingPlan plan_;
  Progress progress_;
  std::vector<LiveCase> cases_;
  std::vector<std::string> names_;
  std::vector<double> checked_ms_;  // 0: checked by an earlier worker (its variant is not set up here)
  double checking_seconds_ = 0;     // how long this worker's checking took
  size_t later_workers_cases_ = 0;  // cases the workers of the counts after this one run
  std::map<std::string, Problem> problems_;  // per workload and size: inputs and oracle, made once
};

// A case an earlier worker finished checking (or ended in), as the record has it.
bool RunInProgress::restore(size_t i) {
  LiveCase& live = cases_[i];
  if (const auto error = previous_.errors.find(name(i)); error != previous_.errors.end()) {
    live.status = Status::Error;
    live.reason = error->second;
    return true;
  }
  const ResultRow* row = checked_before(i);
  if (!row) return false;
  live.status = row->status;
  live.reason = row->reason;
  return true;
}

void RunInProgress::check_all() {
  std::vector<size_t> to_check;
  for (size_t i = 0; i < cases_.size(); ++i) {
    names_.push_back(cases_[i].spec.row_name());
    if (!restore(i)) to_check.push_back(i);
  }
  progress_.plan({{"checking", to_check.size(), 1.0, {}}});
  const double started_at = seconds_since_epoch();
  for (size_t i : to_check) {
    LiveCase& live = cases_[i];
    begin_step(i, check_limit_seconds(plan_));
    progress_.step(name(i));
    const Problem& problem = problem_of(live);
    prepare(live, problem, live.spec.threads);
    checked_ms_[i] = check_and_count(live, problem);
    recorder_.checked(checked_row(live, options_));
    note(i, "checked", "; checking: about " + format_duration(progress_.seconds_left()) + " left");
  }
  checking_seconds_ = seconds_since_epoch() - started_at;
  progress_.note("checking: " + std::to_string(to_check.size()) + " cases in " + format_duration(checking_seconds_));
}

// A case checked by an earlier worker is set up again before it is timed.
bool RunInProgress::set_up_again(size_t i) {
  LiveCase& live = cases_[i];
  if (live.variant) return true;
  prepare(live, problem_of(live), live.spec.threads);
  if (live.status == Status::Ok && live.variant) {
    live.variant->poison_outputs();  // the lifecycle (variant.hpp): some variants size their outputs here
    return true;
  }
  if (live.status == Status::Ok) live.status = Status::Error;  // it ran before: it must run again
  if (live.reason.empty()) live.reason = "set up again after a worker restart, it did not run";
  fail(i);
  return false;
}

// Timings an earlier worker planned: each case set up again and warmed up as a new one is.
std::vector<CaseTiming> RunInProgress::planned_timings(const std::vector<size_t>& timed) {
  std::vector<CaseTiming> timings(cases_.size());
  progress_.plan({{"warm-up", timed.size(), 1.0, {}}});
  for (size_t i : timed) {
    const auto planned = previous_.plan.find(name(i));
    if (planned == previous_.plan.end()) continue;  // checked after the plan was made: not timed
    const ResultRow* row = checked_before(i);
    const int done = row ? static_cast<int>(previous_.samples_of(*row).size()) : 0;
    progress_.step(name(i));
    if (done >= planned->second.reps) {
      timings[i] = planned->second;
      continue;
    }
    begin_step(i, check_limit_seconds(plan_));
    if (!set_up_again(i)) continue;
    try {
      warm_up(cases_[i], plan_, 0, true);  // its pace is the plan's: the new estimate is not kept
      timings[i] = planned->second;
    } catch (const std::exception& error) {
      record_error(cases_[i], "warm-up", error);
      fail(i);
    }
  }
  return timings;
}

// Timings planned here: every case warmed up, then repetitions fitted to what is left of the budget.
std::vector<CaseTiming> RunInProgress::new_timings(const std::vector<size_t>& timed) {
  std::vector<CaseTiming> timings(cases_.size());
  std::vector<double> expected;
  for (size_t i : timed) expected.push_back(expected_warm_up_seconds(plan_, checked_ms_[i], checked_ms_[i] == 0));
  Progress::Stage stage{"warm-up", timed.size(), 0.0, {}};
  stage.step_seconds = expected;
  progress_.plan({stage});
  std::vector<CaseTiming*> fitted;
  for (size_t i : timed) {
    begin_step(i, check_limit_seconds(plan_));
    progress_.step(name(i));
    const bool fresh = checked_ms_[i] == 0;
    if (!set_up_again(i)) continue;
    try {
      // What the timed runs leave is checked after the timing: from here on, only they write it.
      if (!fresh) cases_[i].variant->poison_outputs();
      timings[i] = warm_up(cases_[i], plan_, checked_ms_[i], fresh);
      fitted.push_back(&timings[i]);
    } catch (const std::exception& error) {
      record_error(cases_[i], "warm-up", error);
      fail(i);
    }
  }
  // Each later worker (--processes) warms every case up again before its rounds.
  double warming_up_again = 0;
  for (size_t i : timed) warming_up_again += expected_warm_up_seconds(plan_, checked_ms_[i], true);
  const double processes_after_this = std::min(options_.processes, plan_.reps) - 1;
  fit_repetitions(fitted, plan_, std::max(0.0, budget_share_left() - processes_after_this * warming_up_again));
  std::map<std::string, CaseTiming> recorded = previous_.plan;  // the other thread counts' plans
  for (size_t i : timed)
    if (cases_[i].status == Status::Ok) recorded[name(i)] = timings[i];
  recorder_.plan(recorded);
  return timings;
}

// The points of a sweep this worker times, for the timing's announcement: "" for one size and
// one thread count.
std::string RunInProgress::sweep_points() const {
  std::string text;
  if (options_.sizes.size() > 1) text += " at sizes " + size_list_text(options_.sizes);
  if (options_.thread_counts.size() > 1) {
    std::set<int> here;
    for (const LiveCase& live : cases_) here.insert(live.spec.threads);
    std::string counts;
    for (const int threads : here) counts += (counts.empty() ? "" : ",") + std::to_string(threads);
    text += " on " + counts + (here.size() > 1 ? " threads, interleaved" : " threads");
    if (later_workers_cases_ > 0 || options_.threads != options_.thread_counts.front())
      text += "; a backend whose thread pool is fixed when it starts has a worker per count";
  }
  return text;
}

void RunInProgress::announce(const std::vector<CaseTiming>& timings, const std::vector<Repetition>& schedule,
                             double budget, const std::string& share) {
  int fewest = plan_.reps, most = 0;
  size_t timed = 0;
  for (const CaseTiming& timing : timings)
    if (timing.reps > 0) {
      fewest = std::min(fewest, timing.reps);
      most = std::max(most, timing.reps);
      ++timed;
    }
  const std::string reps = fewest == most ? std::to_string(most) : std::to_string(fewest) + "-" + std::to_string(most);
  const double planned = progress_.seconds_left();
  double one_each = 0;  // one repetition of every timed case
  for (const CaseTiming& timing : timings)
    if (timing.reps > 0) one_each += repetition_seconds(timing);
  std::string budget_text = " (--reps fixed)";
  if (!options_.reps_fixed) {
    budget_text = "; time budget left " + format_duration(std::max(0.0, budget));
    if (one_each > budget)
      budget_text += ": too little for one repetition of each case, so the run takes longer than its budget";
    else if (fewest < static_cast<int>(stats::kFewestSamplesForInterval))
      budget_text += " (the slowest cases get fewer than " + std::to_string(stats::kFewestSamplesForInterval) +
                     " repetitions to keep it, and no confidence interval)";
  }
  progress_.note("timing: " + std::to_string(timed) + " cases x " + reps + " interleaved repetitions (" +
                 std::to_string(schedule.size()) + " to run" + share + sweep_points() + "), about " +
                 format_duration(planned) + budget_text);
}

// The repetitions of `schedule` in rounds before `end_round`: this worker's share (--processes).
std::vector<Repetition> rounds_before(const std::vector<Repetition>& schedule, int end_round) {
  std::vector<Repetition> share;
  std::copy_if(schedule.begin(), schedule.end(), std::back_inserter(share),
               [&](const Repetition& repetition) { return repetition.rep < end_round; });
  return share;
}

// ": rounds 5-7 of 10 in this worker process (--processes)": the share of `schedule` timed here.
std::string share_text(const std::vector<Repetition>& schedule, int end_round, int rounds) {
  int first = end_round;
  for (const Repetition& repetition : schedule) first = std::min(first, repetition.rep);
  return ": rounds " + std::to_string(first + 1) + "-" + std::to_string(end_round) + " of " + std::to_string(rounds) +
         " in this worker process (--processes)";
}

bool RunInProgress::time_all() {
  std::vector<size_t> timed;
  for (size_t i = 0; i < cases_.size(); ++i)
    if (cases_[i].status == Status::Ok) timed.push_back(i);
  const bool planned_before =
      std::any_of(timed.begin(), timed.end(), [&](size_t i) { return previous_.plan.count(name(i)); });
  const std::vector<CaseTiming> timings = planned_before ? planned_timings(timed) : new_timings(timed);

  std::vector<int> done(cases_.size(), 0);
  for (size_t i = 0; i < cases_.size(); ++i)
    if (const ResultRow* row = checked_before(i)) done[i] = static_cast<int>(previous_.samples_of(*row).size());
  const std::vector<Repetition> all_left = interleaved_schedule(done, timings, plan_.shuffle_seed);
  const int rounds = rounds_of(timings);
  const int end_round = end_of_this_process_rounds(done, timings, options_.processes);
  const std::vector<Repetition> schedule = rounds_before(all_left, end_round);
  const std::string share = options_.processes > 1 ? share_text(schedule, end_round, rounds) : "";
  Progress::Stage stage{"timing", schedule.size(), 0.0, {}};
  for (const Repetition& repetition : schedule)
    stage.step_seconds.push_back(repetition_seconds(timings[repetition.case_index]));
  progress_.plan({stage});
  announce(timings, schedule, budget_share_left(), share);
  const double estimate = progress_.seconds_left(), started_at = seconds_since_epoch();

  TimingCallbacks callbacks;
  size_t started = 0;
  callbacks.starting = [&](const Repetition& repetition) {
    begin_step(repetition.case_index, repetition_limit_seconds(timings[repetition.case_index], plan_));
    progress_.step(name(repetition.case_index));
    // A line at every tenth of the repetitions, for logs, where no status line is drawn.
    if (++started % std::max<size_t>(1, schedule.size() / 10) == 0 && started < schedule.size())
      progress_.note("timing: " + std::to_string(started) + "/" + std::to_string(schedule.size()) +
                     " repetitions, about " + format_duration(progress_.seconds_left()) + " left");
  };
  callbacks.finished = [&](const TimedRepetition& timed_repetition) {
    const Repetition& repetition = timed_repetition.repetition;
    recorder_.repetition(sample_row(cases_[repetition.case_index].spec, repetition.rep, timed_repetition),
                         timed_repetition.benchmark_entry);
  };
  callbacks.failed = [&](size_t case_index) { fail(case_index); };
  run_schedule(cases_, timings, schedule, callbacks);
  // Estimate against actual, so that a user (and the estimate's maintainer) sees how far off it was.
  progress_.note("timing: " + std::to_string(schedule.size()) + " repetitions in " +
                 format_duration(seconds_since_epoch() - started_at) + " (estimated " + format_duration(estimate) +
                 ")" + (schedule.size() < all_left.size() ? "; a fresh worker process times the next rounds" : ""));
  return schedule.size() < all_left.size();
}

// Every timed case checked once more after its timing: what was timed must be what was checked.
// The outputs its last timed repetition left are checked as they are (poisoned before the
// warm-up, so only the timed runs wrote them). A case an earlier worker timed is set up again,
// run once, and checked on a run that follows it.
void RunInProgress::check_after_timing() {
  std::vector<size_t> to_check;
  for (size_t i = 0; i < cases_.size(); ++i)
    if (cases_[i].status == Status::Ok && !previous_.later_checks.count(name(i))) to_check.push_back(i);
  if (to_check.empty()) return;
  progress_.plan({{"checking after timing", to_check.size(), 1.0, {}}});
  const double started_at = seconds_since_epoch();
  size_t disagreed = 0;
  for (size_t i : to_check) {
    LiveCase& live = cases_[i];
    begin_step(i, check_limit_seconds(plan_));
    progress_.step(name(i));
    if (live.variant) {
      check_outputs_left(live, problem_of(live), "the last timed repetition");
    } else {
      if (!set_up_again(i)) continue;
      try {
        live.variant->run();
      } catch (const std::exception& error) {
        record_error(live, "run before the check after timing", error);
      }
      check_later_run(live, problem_of(live), "a run after the timing");
    }
    if (live.status == Status::Error) {
      fail(i);
      continue;
    }
    recorder_.later_check(name(i), {live.status, live.later_rel_l2_err, live.reason});
    if (live.status == Status::Ok) continue;
    ++disagreed;
    note(i, "checked after timing");
  }
  progress_.note("checking after timing: " + std::to_string(to_check.size()) + " cases in " +
                 format_duration(seconds_since_epoch() - started_at) + ", " + std::to_string(disagreed) +
                 " disagreeing with their first check");
}

// ---- assembling ----------------------------------------------------------------------------------

// Why a row timed with fewer repetitions than an interval needs has none; empty when it has enough.
std::string few_repetitions_note(int reps, bool reps_fixed) {
  if (reps >= static_cast<int>(stats::kFewestSamplesForInterval)) return {};
  const std::string count = std::to_string(reps) + (reps == 1 ? " repetition" : " repetitions");
  return (reps_fixed ? "timed with " + count + " (--reps)" : "timed with " + count + " to keep the time budget") +
         ": no confidence interval (it needs " + std::to_string(stats::kFewestSamplesForInterval) + ")";
}

// A row whose run after the timing disagreed with the oracle is a FAIL, its timing dropped (it
// timed other work than was checked); every checked row keeps the later run's error.
void apply_later_check(ResultRow& row, const LaterCheck& later) {
  row.later_rel_l2_err = later.rel_l2_err;
  if (row.status != Status::Ok || later.status == Status::Ok) return;
  row.status = later.status;
  row.reason = later.reason;
}

// What becomes of an OK row whose repetitions are fewer than planned (a stopped run).
void mark_unfinished_timing(ResultRow& row, size_t done, int planned) {
  if (done == 0) {
    row.status = Status::Skipped;
    row.reason = "not timed: the run stopped before its first repetition";
  } else {
    row.reason = "timing stopped after " + std::to_string(done) + " of " + std::to_string(planned) + " repetitions";
  }
}

}  // namespace

namespace {

// Every case at each of the run's thread counts, but once per count its backend tells apart (the
// serial reference runs on one thread whatever was asked); named with their threads where a case
// is there at more than one.
std::vector<Case> at_each_thread_count(const std::vector<Case>& cases, const std::vector<int>& counts) {
  std::vector<Case> all;
  std::map<std::string, int> counts_of_name;
  std::set<std::string> keys;
  for (const int threads : counts)
    for (Case c : cases) {
      c.threads = threads;
      if (!keys.insert(c.row_key()).second) continue;
      ++counts_of_name[c.row_name()];
      all.push_back(std::move(c));
    }
  for (Case& c : all) c.threads_in_name = counts_of_name[c.row_name()] > 1;
  return all;
}

}  // namespace

std::vector<Case> run_cases(const RunOptions& options) {
  Selection unsharded = options.selection;
  unsharded.shard_index = unsharded.shard_count = 1;
  std::vector<Case> planned;
  for (const SizeClass size : options.sizes)
    for (Case& c : plan_cases(unsharded, size)) planned.push_back(std::move(c));
  planned = cases_of_shard(std::move(planned), options.selection);
  std::vector<Case> all;
  for (const SizeClass size : options.sizes) {
    std::vector<Case> cases;
    for (const Case& c : planned)
      if (c.size == size) cases.push_back(c);
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
    for (Case& c : at_each_thread_count(cases, options.thread_counts)) all.push_back(std::move(c));
  }
  return all;
}

namespace {

// Runs one stage of the worker and records how busy the rest of the machine was meanwhile.
template <typename Stage>
void measuring_other_work(RunRecorder& recorder, const std::string& name, Stage stage) {
  const interference::CpuClock before = interference::read_cpu_clock();
  stage();
  const interference::OtherWork others = interference::other_work_between(before, interference::read_cpu_clock());
  recorder.other_work(name, others.seconds, others.cores, others.steal_cores);
}

}  // namespace

WorkerOutcome execute_run(const RunOptions& options, const RunRecord& previous, RunRecorder& recorder,
                          const RunHooks& hooks) {
  RunInProgress run(options, previous, recorder, hooks);
  measuring_other_work(recorder, "checking", [&] { run.check_all(); });
  bool rounds_left = false;
  measuring_other_work(recorder, "timing", [&] { rounds_left = run.time_all(); });
  if (rounds_left) return WorkerOutcome::HandedOver;
  run.check_after_timing();
  return WorkerOutcome::Done;
}  // the variants die here; backends finalize once, at process exit

AssembledRun assemble_run(const std::vector<Case>& cases, const RunRecord& record, const RunOptions& options) {
  AssembledRun run;
  run.cases_planned = cases.size();
  for (const Case& c : cases) {
    const std::string name = c.row_name();
    const auto checked = record.checked.find(c.row_key());
    const auto error = record.errors.find(name);
    if (checked == record.checked.end() && error == record.errors.end()) continue;  // never reached
    LiveCase shell(c);
    ResultRow row = checked != record.checked.end() ? checked->second : checked_row(shell, options);
    if (error != record.errors.end()) {  // a crash, a time-out or a throw after (or in) its check
      row.status = Status::Error;
      row.reason = error->second;
    }
    if (const auto later = record.later_checks.find(name); later != record.later_checks.end())
      apply_later_check(row, later->second);
    bool finished = row.status != Status::Ok;
    if (row.status == Status::Ok) {
      const auto planned = record.plan.find(name);
      const std::vector<SampleRow>& samples = record.samples_of(row);
      const int reps = planned == record.plan.end() ? 0 : planned->second.reps;
      const size_t kept = std::min(samples.size(), static_cast<size_t>(reps));
      if (kept > 0) {
        run.samples.insert(run.samples.end(), samples.begin(), samples.begin() + static_cast<long>(kept));
        const auto& entries = record.benchmark_entries.at(results::row_key(row));
        run.benchmark_entries.insert(run.benchmark_entries.end(), entries.begin(),
                                     entries.begin() + static_cast<long>(kept));
        row.iterations_per_rep = planned->second.iterations_per_rep;
      }
      finished = reps > 0 && kept == static_cast<size_t>(reps);
      if (!finished) mark_unfinished_timing(row, kept, reps);
      else if (row.reason.empty()) row.reason = few_repetitions_note(reps, options.reps_fixed);
    }
    run.cases_done += finished ? 1 : 0;
    run.rows.push_back(std::move(row));
  }
  return run;
}

}  // namespace pb::detail

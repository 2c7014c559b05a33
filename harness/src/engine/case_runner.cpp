#include "engine/case_runner.hpp"

#include "engine/fault_injection.hpp"
#include "engine/slowdown_injection.hpp"

namespace pb::detail {

Problem make_problem(const Workload& workload, SizeClass size, uint64_t seed) {
  Problem problem;
  problem.inputs = workload.make_inputs(size, seed);
  problem.reference = workload.reference_fp64(problem.inputs);
  return problem;
}

const Problem& problem_for(std::map<std::string, Problem>& problems, const Case& c, uint64_t seed) {
  static const Problem none;
  if (c.capability_gap) return none;
  const std::string key = c.workload->full_name() + "/" + to_string(c.size);
  if (!problems.count(key)) problems[key] = make_problem(*c.workload, c.size, seed);
  return problems[key];
}

void record_error(LiveCase& live, const std::string& stage, const std::exception& error) {
  live.variant.reset();
  live.status = Status::Error;
  live.reason = stage + " threw: " + error.what();
}

namespace {

bool can_run_here(LiveCase& live) {
  if (const auto& gap = live.spec.capability_gap) {  // the phase itself cannot run on this device
    live.status = gap->kind == CannotRun::Kind::Skipped ? Status::Skipped : Status::Unsupported;
    live.reason = gap->reason;
    return false;
  }
  if (!live.spec.device_unavailable_reason.empty()) {
    live.status = Status::Skipped;
    live.reason = live.spec.device_unavailable_reason;
    return false;
  }
  return true;
}

}  // namespace

void prepare(LiveCase& live, const Problem& problem, int threads) {
  if (!can_run_here(live)) return;
  try {
    VariantContext context{live.spec.workload.get(), live.spec.size, live.spec.device,
                           live.spec.phase, threads, live.spec.plan};
    live.variant = live.spec.ladder->make(context);
    if (const auto cannot = live.variant->support()) {
      live.status = cannot->kind == CannotRun::Kind::Skipped ? Status::Skipped : Status::Unsupported;
      live.reason = cannot->reason;
      live.variant.reset();
      return;
    }
    live.variant = with_injected_slowdown(std::move(live.variant), *live.spec.backend, live.spec.device,
                                          live.spec.row_name());
    live.variant = with_injected_drift(std::move(live.variant), live.spec.row_name());
    live.variant = with_injected_stale_outputs(std::move(live.variant), live.spec.row_name());
    live.variant->setup(problem.inputs);
  } catch (const std::exception& error) {
    record_error(live, "setup", error);
  }
}

namespace {

// Poisons the outputs, runs once and waits for the device: the run a check looks at.
void poisoned_run(LiveCase& live) {
  live.variant->poison_outputs();
  live.variant->run();
  live.spec.backend->synchronize(live.spec.device);
}

// The outputs of the variant's last run against the oracle, with the checks of its phase and size.
CheckResult compare_with_oracle(LiveCase& live, const Problem& problem) {
  return check_outputs(live.variant->outputs(), problem.reference,
                       live.spec.workload->outputs_for(live.spec.phase, live.spec.size));
}

void judge_outputs(LiveCase& live, const Problem& problem) {
  live.check = compare_with_oracle(live, problem);
  if (!live.spec.known_bug.empty()) live.check = judge_known_bug(std::move(live.check), live.spec.known_bug);
  live.status = live.check.status;
  live.reason = live.check.reason;
}

}  // namespace

void check_later_run(LiveCase& live, const Problem& problem, const std::string& which_run) {
  if (!live.variant || live.status != Status::Ok) return;
  try {
    poisoned_run(live);
  } catch (const std::exception& error) {
    record_error(live, which_run, error);
    return;
  }
  check_outputs_left(live, problem, which_run);
}

void check_outputs_left(LiveCase& live, const Problem& problem, const std::string& which_run) {
  if (!live.variant || live.status != Status::Ok) return;
  try {
    CheckResult later = compare_with_oracle(live, problem);
    live.later_rel_l2_err = later.worst.rel_l2_err;
    if (later.status == Status::Ok) return;
    live.status = Status::Fail;
    live.reason = which_run +
                  " disagrees with the oracle although the first run passed (state kept between runs, or outputs "
                  "no longer written?): " +
                  later.reason;
    live.check = std::move(later);
  } catch (const std::exception& error) {
    record_error(live, which_run, error);
  }
}

void check(LiveCase& live, const Problem& problem) {
  if (!live.variant) return;
  try {
    poisoned_run(live);
    judge_outputs(live, problem);
  } catch (const std::exception& error) {
    record_error(live, "checked run", error);
  }
}

double check_and_count(LiveCase& live, const Problem& problem) {
  if (!live.variant) return 0;
  Backend& backend = *live.spec.backend;
  try {
    live.variant->poison_outputs();  // before counting: filling the outputs is not the variant's work
    backend.synchronize(live.spec.device);
    backend.start_counting();
    counters::CountingScope scope;
    const auto start = std::chrono::steady_clock::now();
    live.variant->run();
    backend.synchronize(live.spec.device);  // inside the scope, as in count()
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    live.counts = scope.finish();
    backend.stop_counting();
    judge_outputs(live, problem);
    live.counted = live.status == Status::Ok;
    return ms;
  } catch (const std::exception& error) {
    backend.stop_counting();
    record_error(live, "checked run", error);
    return 0;
  }
}

void count(LiveCase& live) {
  if (!live.variant) return;
  Backend& backend = *live.spec.backend;
  try {
    backend.start_counting();
    counters::CountingScope scope;
    live.variant->run();
    backend.synchronize(live.spec.device);
    live.counts = scope.finish();
    backend.stop_counting();
    live.counted = true;
  } catch (const std::exception& error) {
    backend.stop_counting();
    record_error(live, "counted run", error);
  }
}

double timed_iteration(LiveCase& live) {
  using Clock = std::chrono::steady_clock;
  Backend& backend = *live.spec.backend;
  backend.synchronize(live.spec.device);
  const auto start = Clock::now();
  live.variant->run();
  backend.synchronize(live.spec.device);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace pb::detail

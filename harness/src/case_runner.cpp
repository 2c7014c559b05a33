#include "case_runner.hpp"

#include <cstdlib>
#include <regex>

#include "phasebench/errors.hpp"

namespace pb::detail {

Problem make_problem(const Workload& workload, SizeClass size, uint64_t seed) {
  Problem problem;
  problem.inputs = workload.make_inputs(size, seed);
  problem.reference = workload.reference_fp64(problem.inputs);
  return problem;
}

void record_error(LiveCase& live, const std::string& stage, const std::exception& error) {
  live.variant.reset();
  live.status = Status::Error;
  live.reason = stage + " threw: " + error.what();
}

namespace {

bool can_run_here(LiveCase& live) {
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
                           live.spec.phase, threads};
    live.variant = live.spec.ladder->make(context);
    if (const auto cannot = live.variant->support()) {
      live.status = cannot->kind == CannotRun::Kind::Skipped ? Status::Skipped : Status::Unsupported;
      live.reason = cannot->reason;
      live.variant.reset();
      return;
    }
    live.variant->setup(problem.inputs);
    live.injected_slowdown =
        slowdown_injected_into(live.spec.row_name(), std::getenv("PHASEBENCH_INJECT_SLOWDOWN"));
  } catch (const std::exception& error) {
    record_error(live, "setup", error);
  }
}

void check(LiveCase& live, const Problem& problem) {
  if (!live.variant) return;
  try {
    live.variant->poison_outputs();
    live.variant->run();
    live.spec.backend->synchronize(live.spec.device);
    live.check = check_outputs(live.variant->outputs(), problem.reference, live.spec.workload->outputs());
    live.status = live.check.status;
    live.reason = live.check.reason;
  } catch (const std::exception& error) {
    record_error(live, "checked run", error);
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
  if (live.injected_slowdown > 0) {  // busy-wait inside the timed region: a slower variant
    const auto until = start + (Clock::now() - start) * (1 + live.injected_slowdown);
    while (Clock::now() < until) {
    }
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double slowdown_injected_into(const std::string& row_name, const char* spec) {
  if (!spec || !*spec) return 0;
  const std::string text = spec;
  const size_t colon = text.rfind(':');
  char* end = nullptr;
  const double fraction = colon == std::string::npos ? 0 : std::strtod(text.c_str() + colon + 1, &end);
  if (colon == std::string::npos || end == text.c_str() + colon + 1 || *end != '\0' || !(fraction >= 0))
    throw InputError("PHASEBENCH_INJECT_SLOWDOWN='" + text + "' is not <regex>:<fraction>, e.g. 'kokkos:0.25'");
  try {
    return std::regex_search(row_name, std::regex(text.substr(0, colon))) ? fraction : 0;
  } catch (const std::regex_error& error) {
    throw InputError("PHASEBENCH_INJECT_SLOWDOWN: bad regular expression: " + std::string(error.what()));
  }
}

}  // namespace pb::detail

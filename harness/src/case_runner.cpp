#include "case_runner.hpp"

#include <algorithm>
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
    live.check = check_outputs(live.variant->outputs(), problem.reference,
                               live.spec.workload->outputs_for(live.spec.phase, live.spec.size));
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

namespace {

using Clock = std::chrono::steady_clock;

volatile uint64_t spin_result;  // keeps spin()'s work observable

// Busy work the compiler cannot remove: a chain of dependent multiply-adds.
void spin(uint64_t units) {
  uint64_t x = units;
  for (uint64_t i = 0; i < units; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  spin_result = x;
}

// Nanoseconds one unit of spin() takes when nothing interferes: the fastest of several timings.
double spin_unit_ns() {
  static const double nanoseconds = [] {
    constexpr uint64_t kUnits = 20000;
    double fastest = 1e30;
    for (int attempt = 0; attempt < 20; ++attempt) {
      const auto start = Clock::now();
      spin(kUnits);
      fastest = std::min(fastest, std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    }
    return fastest / kUnits;
  }();
  return nanoseconds;
}

// Extra CPU work worth the injected fraction of the case's fastest iteration. CPU work rather than
// a wait on the clock: on a busy machine the variant's work and the extra work slow down alike,
// while a wait proportional to the wall time would grow with every preemption and overstate it.
void inject_slowdown(LiveCase& live, Clock::duration elapsed) {
  live.fastest_iteration_ns = std::min<double>(live.fastest_iteration_ns,
                                               std::chrono::duration<double, std::nano>(elapsed).count());
  spin(static_cast<uint64_t>(live.injected_slowdown * live.fastest_iteration_ns / spin_unit_ns()));
}

}  // namespace

double timed_iteration(LiveCase& live) {
  Backend& backend = *live.spec.backend;
  backend.synchronize(live.spec.device);
  const auto start = Clock::now();
  live.variant->run();
  backend.synchronize(live.spec.device);
  if (live.injected_slowdown > 0) inject_slowdown(live, Clock::now() - start);  // test-only
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

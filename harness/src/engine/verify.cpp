// `verify`: correctness only, on several fresh seeds and every size that fits in memory, each case
// checked on three runs from one setup.

#include <chrono>
#include <sstream>

#include "common/number_text.hpp"
#include "engine/case_runner.hpp"

namespace pb {
namespace {

// A size fits when its fp64 check needs under a quarter of the machine's memory.
bool fits(const Workload& workload, SizeClass size) { return workload.memory_bytes(size) < machine_memory_bytes() / 4; }

// "rel_l2_err 3e-07 (tolerance 1e-05, output s)"; rollouts add where the error ended up, against
// that step's budget.
std::string describe_output(const OutputError& error) {
  std::ostringstream text;
  text.precision(3);
  text << "rel_l2_err " << error.rel_l2_err << " (tolerance " << error.tolerance << ", output " << error.name;
  if (error.reference != error.name) text << " vs " << error.reference;
  text << ")";
  if (!error.step_errors.empty())
    text << ", last step " << error.step_errors.back()
         << (error.step_budget.empty() ? "" : " (budget " + format_significant(error.step_budget.back(), 3) + ")");
  return text.str();
}

std::string describe(const detail::LiveCase& live) {
  std::ostringstream text;
  // The worst output; when one output is checked against two references (an approximate phase's
  // own model and the exact one), both checks.
  std::vector<const OutputError*> shown{&live.check.worst};
  for (const OutputError& error : live.check.outputs)
    if (error.name == live.check.worst.name && error.reference != live.check.worst.reference) shown.push_back(&error);
  if (!live.check.outputs.empty())
    for (size_t i = 0; i < shown.size(); ++i) text << (i ? "; " : "") << describe_output(*shown[i]);
  if (!live.reason.empty()) text << (text.tellp() > 0 ? ": " : "") << live.reason;
  return text.str();
}

// Checks one case on one seed, on each of its runs from the same setup (what is timed must be
// what was checked); the problem (inputs and fp64 outputs) is made on first use and shared by the
// workload's other cases.
VerifyLine verify_case(const Case& c, uint64_t seed, std::map<std::string, detail::Problem>& problems, int threads) {
  const detail::Problem& problem = detail::problem_for(problems, c, seed);
  detail::LiveCase live(c);
  detail::prepare(live, problem, threads);
  detail::check(live, problem);
  for (int run = 2; run <= detail::kVerifiedRunsPerCase; ++run)
    detail::check_later_run(live, problem, "run " + std::to_string(run) + " of the same setup");
  return {c.row_name(), seed, live.status, describe(live)};
}

}  // namespace

std::string VerifyLine::check_name() const { return row_name + " seed " + std::to_string(seed); }

std::vector<VerifyLine> execute_verify(const VerifyOptions& options) {
  std::vector<VerifyLine> lines;
  const std::vector<SizeClass> sizes = options.sizes.empty() ? all_sizes() : options.sizes;
  for (SizeClass size : sizes) {
    const std::vector<Case> cases = plan_cases(options.selection, size);
    init_backends(cases, options.threads);
    for (int s = 0; s < options.seeds; ++s) {
      const uint64_t seed = options.first_seed + static_cast<uint64_t>(s);
      std::map<std::string, detail::Problem> problems;
      for (const Case& c : cases) {
        if (options.sizes.empty() && !fits(*c.workload, size)) continue;
        const VerifyLine check{c.row_name(), seed, Status::Ok, ""};
        if (options.done.count(check.check_name())) continue;
        if (options.starting) options.starting(check);
        const auto start = std::chrono::steady_clock::now();
        lines.push_back(verify_case(c, seed, problems, options.threads));
        lines.back().seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (options.finished) options.finished(lines.back());
      }
    }
  }
  return lines;
}

}  // namespace pb

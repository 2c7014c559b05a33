// `verify`: correctness only, on several fresh seeds and every size that fits in memory.

#include <sys/sysinfo.h>

#include <iostream>
#include <sstream>

#include "case_runner.hpp"

namespace pb {
namespace {

// A size fits when its fp64 check needs under a quarter of the machine's memory.
bool fits(const Workload& workload, SizeClass size) {
  struct sysinfo info {};
  sysinfo(&info);
  const double total = static_cast<double>(info.totalram) * info.mem_unit;
  return workload.memory_bytes(size) < total / 4;
}

std::string describe(const detail::LiveCase& live) {
  std::ostringstream text;
  text.precision(3);
  if (!live.check.outputs.empty())
    text << "rel_l2_err " << live.check.worst.rel_l2_err << " (tolerance "
         << live.check.worst.tolerance << ", output " << live.check.worst.name << ")";
  if (!live.reason.empty()) text << (text.tellp() > 0 ? ": " : "") << live.reason;
  return text.str();
}

}  // namespace

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
        const std::string key = c.workload->full_name();
        if (!problems.count(key)) problems[key] = detail::make_problem(*c.workload, size, seed);
        detail::LiveCase live(c);
        detail::prepare(live, problems[key], options.threads);
        detail::check(live, problems[key]);
        lines.push_back({c.row_name(), seed, to_string(live.status), describe(live)});
        std::cerr << lines.back().status << "  " << lines.back().row_name << "  seed " << seed << "  "
                  << lines.back().detail << "\n";
      }
    }
  }
  return lines;
}

}  // namespace pb

#include "claims_view.hpp"

#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>

#include "phasebench/workload.hpp"
#include "report_model.hpp"

namespace pb {
namespace {

std::string number(double value, int precision = 3) {
  if (std::isnan(value)) return "-";
  std::ostringstream text;
  text << std::setprecision(precision) << value;
  return text.str();
}

std::string range(double low, double high) {
  if (std::isnan(low)) return "-";
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << low << "-" << high << "x";
  return text.str();
}

std::string with_interval(double value, double low, double high) {
  if (std::isnan(value)) return "-";
  return number(value) + " [" + number(low) + "," + number(high) + "]";
}

using LadderKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;

// The verdict on a row's measured gain against the seed's claim, judged on the interval; over
// phases that were not timed, the claims of the phases jumped over are compounded.
std::string verdict(const ResultRow& row, const std::vector<const ResultRow*>& workload_rows) {
  const report::ClaimCheck check = report::check_claim(row, workload_rows);
  return check.verdict == report::ClaimCheck::Verdict::NoClaim ? "" : check.text();
}

void print_ladder(std::ostream& out, const LadderKey& key, const std::vector<const ResultRow*>& rows,
                  const std::vector<const ResultRow*>& workload_rows) {
  const auto& [suite, workload, size, backend, device] = key;
  out << "\n" << suite << "/" << workload << " (" << size << "), " << backend << " on " << device << "\n";
  out << "  " << std::left << std::setw(30) << "phase" << std::setw(13) << "claimed" << std::setw(26)
      << "measured vs prev [95% CI]" << std::setw(14) << "" << std::setw(26) << "vs phase 0 [95% CI]"
      << "syncs/iter\n";
  const auto definition = find_workload(suite + "/" + workload);
  const PhaseInfo claim = definition ? definition->cumulative_claim() : PhaseInfo{};
  const ResultRow* first = nullptr;
  const ResultRow* last = nullptr;  // the last phase the whole-ladder claim covers
  const ResultRow* fastest_exact = nullptr;
  for (const ResultRow* row : rows) {
    out << "  " << std::setw(30) << (std::to_string(row->phase_index) + " " + row->phase + (row->exact ? "" : " (approx)"))
        << std::setw(13) << range(row->claimed_min, row->claimed_max) << std::setw(26)
        << with_interval(row->speedup_vs_prev, row->speedup_vs_prev_ci_low, row->speedup_vs_prev_ci_high)
        << std::setw(14) << verdict(*row, workload_rows) << std::setw(26)
        << with_interval(row->speedup_vs_phase0, row->speedup_vs_phase0_ci_low, row->speedup_vs_phase0_ci_high)
        << (row->status == "OK" ? number(row->host_syncs_per_iter) : row->status) << "\n";
    if (row->status != "OK") continue;
    if (!first) first = row;
    if (claim.index == 0 || row->phase_index <= claim.index) last = row;
    if (row->exact && (!fastest_exact || row->median_ms < fastest_exact->median_ms)) fastest_exact = row;
  }
  if (first && last && first != last) {
    out << "  whole ladder (phase " << first->phase_index << " -> " << last->phase_index << "): measured "
        << with_interval(last->speedup_vs_phase0, last->speedup_vs_phase0_ci_low, last->speedup_vs_phase0_ci_high)
        << "; claimed " << range(claim.claimed_min, claim.claimed_max)
        << (claim.name.empty() ? "" : " (" + claim.name + ")") << "\n";
    out << "  host syncs per iteration: " << number(first->host_syncs_per_iter) << " -> "
        << number(last->host_syncs_per_iter) << "\n";
  }
  // When the claimed ladder ends in approximate phases, what the exact arithmetic reaches.
  if (first && last && !last->exact && fastest_exact && fastest_exact != first)
    out << "  fastest exact phase: " << fastest_exact->phase_index << " " << fastest_exact->phase << ", "
        << with_interval(fastest_exact->speedup_vs_phase0, fastest_exact->speedup_vs_phase0_ci_low,
                         fastest_exact->speedup_vs_phase0_ci_high)
        << " vs phase 0\n";
}

}  // namespace

void print_claims_view(std::ostream& out, const std::vector<ResultRow>& rows) {
  std::map<LadderKey, std::vector<const ResultRow*>> ladders;
  std::map<std::string, std::vector<const ResultRow*>> by_workload;  // suite/workload/size
  for (const ResultRow& row : rows) {
    by_workload[row.suite + "/" + row.workload + "/" + row.size].push_back(&row);
    if (row.backend == "reference" || row.status == "SKIPPED") continue;
    ladders[{row.suite, row.workload, row.size, row.backend, row.device}].push_back(&row);
  }
  if (ladders.empty()) return;
  out << "\nclaims vs measured (claimed: the seed's gain of a phase over the previous one; "
         "an interval entirely outside the claim is marked)\n";
  for (const auto& [key, ladder] : ladders) {
    const auto& [suite, workload, size, backend, device] = key;
    print_ladder(out, key, ladder, by_workload.at(suite + "/" + workload + "/" + size));
  }
}

}  // namespace pb

#include "report/claims_view.hpp"

#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>

#include "common/number_text.hpp"
#include "phasebench/backend.hpp"
#include "report/report_model.hpp"

namespace pb {
namespace {

std::string range(double low, double high) { return std::isnan(low) ? "-" : format_gain_range(low, high); }

using LadderKey = std::tuple<std::string, std::string, std::string, std::string, std::string, int>;  // ..., threads

// The verdict on a row's measured gain against the seed's claim, judged on the interval; over
// phases that were not timed, the claims of the phases jumped over are compounded.
std::string verdict(const ResultRow& row, const std::vector<const ResultRow*>& workload_rows,
                    const catalog::Catalog& catalog) {
  const report::ClaimCheck check = report::check_claim(row, workload_rows, catalog);
  return check.verdict == report::ClaimCheck::Verdict::NoClaim ? "" : check.text();
}

std::string phase_claim(const catalog::WorkloadEntry* entry, int phase_index) {
  const PhaseInfo* phase = entry ? entry->phase(phase_index) : nullptr;
  return phase ? range(phase->claimed_min, phase->claimed_max) : "?";
}

void print_phase(std::ostream& out, const ResultRow& row, const catalog::WorkloadEntry* entry,
                 const std::vector<const ResultRow*>& workload_rows, const catalog::Catalog& catalog) {
  out << "  " << std::setw(30) << (std::to_string(row.phase_index) + " " + row.phase + (row.exact ? "" : " (approx)"))
      << std::setw(13) << phase_claim(entry, row.phase_index) << std::setw(26)
      << format_with_interval(row.speedup_vs_prev, row.speedup_vs_prev_ci_low, row.speedup_vs_prev_ci_high)
      << std::setw(14) << verdict(row, workload_rows, catalog) << std::setw(26)
      << format_with_interval(row.speedup_vs_phase0, row.speedup_vs_phase0_ci_low, row.speedup_vs_phase0_ci_high)
      << (row.status == Status::Ok ? format_table_number(row.host_syncs_per_iter) : to_string(row.status)) << "\n";
}

// The timed rows that frame the ladder: its first, the last one the whole-ladder claim covers,
// and the fastest exact one.
struct LadderEnds {
  const ResultRow* first = nullptr;
  const ResultRow* last = nullptr;
  const ResultRow* fastest_exact = nullptr;
};

LadderEnds ladder_ends(const std::vector<const ResultRow*>& rows, const PhaseInfo& claim) {
  LadderEnds ends;
  for (const ResultRow* row : rows) {
    if (row->status != Status::Ok) continue;
    if (!ends.first) ends.first = row;
    if (claim.index == 0 || row->phase_index <= claim.index) ends.last = row;
    if (row->exact && (!ends.fastest_exact || row->median_ms < ends.fastest_exact->median_ms)) ends.fastest_exact = row;
  }
  return ends;
}

void print_whole_ladder(std::ostream& out, const LadderEnds& ends, const PhaseInfo& claim, const std::string& unknown) {
  const ResultRow& first = *ends.first;
  const ResultRow& last = *ends.last;
  if (first.phase_index != 0) {  // speedup_vs_phase0 then starts mid-ladder: not what the seed claims
    out << "  no whole-ladder comparison: phase 0 was not timed in this run (the first timed phase is "
        << first.phase_index << ")\n";
  } else {
    out << "  whole ladder (phase " << first.phase_index << " -> " << last.phase_index << "): measured "
        << format_with_interval(last.speedup_vs_phase0, last.speedup_vs_phase0_ci_low, last.speedup_vs_phase0_ci_high)
        << "; claimed " << (unknown.empty() ? range(claim.claimed_min, claim.claimed_max) : "unknown (" + unknown + ")")
        << (claim.name.empty() ? "" : " (" + claim.name + ")") << "\n";
  }
  out << "  host syncs per iteration: " << format_table_number(first.host_syncs_per_iter) << " -> "
      << format_table_number(last.host_syncs_per_iter) << "\n";
}

std::string percent(double share) { return std::isnan(share) ? "-" : format_table_number(100 * share, 3) + "%"; }

// Per-region claims (the seed's "67% fewer kernel launches in this function"): each phase that
// claims a cut of one region's operations, beside the cut measured against phase 0's count.
void print_region_claims(std::ostream& out, const std::vector<const ResultRow*>& rows, const catalog::Catalog& catalog) {
  for (const ResultRow* row : rows) {
    const auto check = report::check_region_claim(*row, rows, catalog);
    if (!check) continue;
    out << "  ops in region " << check->region << " (phase " << row->phase_index << " " << row->phase
        << "): " << format_table_number(check->phase0_ops) << " -> " << format_table_number(check->ops)
        << " per iteration, measured "
        << percent(check->measured_cut) << " fewer; claimed " << percent(check->claimed_cut) << " fewer\n";
  }
}

// The memory held after each step of an iteration, per phase that records it (a kept autograd
// graph grows step after step; a detached state stays flat).
void print_step_memory(std::ostream& out, const std::vector<const ResultRow*>& rows) {
  for (const ResultRow* row : rows) {
    if (row->step_memory_bytes.empty()) continue;
    out << "  memory held after each step, KiB (phase " << row->phase_index << " " << row->phase << "):";
    std::istringstream steps(row->step_memory_bytes);
    std::string bytes;
    while (std::getline(steps, bytes, ';')) out << " " << format_table_number(std::stod(bytes) / 1024, 4);
    out << "\n";
  }
}

void print_ladder(std::ostream& out, const LadderKey& key, const std::vector<const ResultRow*>& rows,
                  const std::vector<const ResultRow*>& workload_rows, const catalog::Catalog& catalog,
                  bool several_thread_counts) {
  const auto& [suite, workload, size, backend, device, threads] = key;
  out << "\n"
      << suite << "/" << workload << " (" << size << "), " << backend << " on " << device
      << (several_thread_counts ? ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") : "")
      << "\n";
  out << "  " << std::left << std::setw(30) << "phase" << std::setw(13) << "claimed" << std::setw(26)
      << "measured vs prev [95% CI]" << std::setw(14) << "" << std::setw(26) << "vs phase 0 [95% CI]"
      << "syncs/iter\n";
  const catalog::WorkloadEntry* entry = catalog.find(suite, workload);
  const PhaseInfo claim = entry ? entry->cumulative_claim : PhaseInfo{};
  for (const ResultRow* row : rows) print_phase(out, *row, entry, workload_rows, catalog);
  print_region_claims(out, rows, catalog);
  print_step_memory(out, rows);
  const LadderEnds ends = ladder_ends(rows, claim);
  if (ends.first && ends.last && ends.first != ends.last)
    print_whole_ladder(out, ends, claim, catalog.unknown_because(suite, workload));
  // When the claimed ladder ends in approximate phases, what the exact arithmetic reaches.
  if (ends.first && ends.last && !ends.last->exact && ends.fastest_exact && ends.fastest_exact != ends.first)
    out << "  fastest exact phase: " << ends.fastest_exact->phase_index << " " << ends.fastest_exact->phase << ", "
        << format_with_interval(ends.fastest_exact->speedup_vs_phase0, ends.fastest_exact->speedup_vs_phase0_ci_low,
                         ends.fastest_exact->speedup_vs_phase0_ci_high)
        << " vs phase 0\n";
}

}  // namespace

void print_claims_view(std::ostream& out, const std::vector<ResultRow>& rows, const catalog::Catalog& catalog) {
  std::map<LadderKey, std::vector<const ResultRow*>> ladders;
  std::map<std::string, std::vector<const ResultRow*>> by_workload;  // suite/workload/size
  for (const ResultRow& row : rows) {
    by_workload[row.suite + "/" + row.workload + "/" + row.size].push_back(&row);
    if (row.backend == kReferenceBackend || row.status == Status::Skipped) continue;
    ladders[{row.suite, row.workload, row.size, row.backend, row.device, row.threads}].push_back(&row);
  }
  if (ladders.empty()) return;
  out << "\nclaims vs measured (claimed: the seed's gain of a phase over the previous one; "
         "an interval entirely outside the claim is marked)\n";
  const bool several_thread_counts = results::first_row_at_several_thread_counts(rows) != nullptr;
  for (const auto& [key, ladder] : ladders) {
    const auto& [suite, workload, size, backend, device, threads] = key;
    print_ladder(out, key, ladder, by_workload.at(suite + "/" + workload + "/" + size), catalog, several_thread_counts);
  }
}

}  // namespace pb

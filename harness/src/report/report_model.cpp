#include "report/report_model.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <tuple>

#include "phasebench/backend.hpp"
#include "phasebench/errors.hpp"
#include "report/report_html.hpp"

namespace pb::report {
namespace {

std::string json_string(const nlohmann::json& json, const std::string& key) {
  if (json.is_object() && json.contains(key) && json[key].is_string()) return json[key].get<std::string>();
  return "";
}

// The measured gain with its interval against [claimed_min, claimed_max]: only an interval
// entirely outside the claimed range says the claim was missed or beaten.
ClaimCheck::Verdict compare_gain(double value, double low, double high, double claimed_min, double claimed_max) {
  using V = ClaimCheck::Verdict;
  if (std::isnan(value)) return V::NotMeasured;
  if (std::isnan(low) || std::isnan(high)) low = high = value;
  if (high < claimed_min) return V::Below;
  if (low > claimed_max) return V::Above;
  return V::Consistent;
}

}  // namespace

std::string Run::caption() const {
  std::string text = letter + ": " + (run_id.empty() ? data.label : run_id);
  std::string details;
  const nlohmann::json& machine = data.machine;
  if (machine.is_object() && machine.contains("cpu")) details = json_string(machine["cpu"], "model");
  if (const std::string commit = json_string(machine, "git_commit"); !commit.empty())
    details += (details.empty() ? "" : ", ") + std::string("commit ") + commit;
  return details.empty() ? text : text + " (" + details + ")";
}

std::vector<Run> load_runs(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("report needs at least one run directory");
  if (paths.size() > 26) throw InputError("report shows at most 26 runs side by side");
  std::vector<Run> runs;
  for (const std::string& path : paths) {
    Run run;
    run.letter = std::string(1, static_cast<char>('A' + runs.size()));
    run.data = results::load_run(path);
    run.run_id = run.data.rows.empty() ? json_string(run.data.machine, "run_id") : run.data.rows.front().run_id;
    run.ceilings = run.data.ceilings(&run.ceilings_problem);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::string WorkloadKey::anchor() const {
  std::string id = "w-" + suite + "-" + workload + "-" + size;
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '-';
  return id;
}

bool WorkloadKey::operator<(const WorkloadKey& other) const {
  return std::tie(suite, workload, size) < std::tie(other.suite, other.workload, other.size);
}

bool WorkloadKey::operator==(const WorkloadKey& other) const {
  return std::tie(suite, workload, size) == std::tie(other.suite, other.workload, other.size);
}

WorkloadKey key_of(const ResultRow& row) { return {row.suite, row.workload, row.size}; }

std::vector<WorkloadKey> workloads(const std::vector<Run>& runs) {
  std::set<WorkloadKey> keys;
  for (const Run& run : runs)
    for (const ResultRow& row : run.data.rows) keys.insert(key_of(row));
  return {keys.begin(), keys.end()};
}

std::vector<const ResultRow*> rows_of(const Run& run, const WorkloadKey& key) {
  std::vector<const ResultRow*> rows;
  for (const ResultRow& row : run.data.rows)
    if (key_of(row) == key) rows.push_back(&row);
  return rows;
}

bool is_timed(const ResultRow& row) { return row.status == Status::Ok && row.median_ms > 0; }

std::string ladder_name(const ResultRow& row) { return row.backend + "/" + row.device; }

std::string shape_of(const std::vector<const ResultRow*>& rows) {
  for (const ResultRow* row : rows)
    if (!row->shape.empty()) return row->shape;
  return "";
}

std::string ClaimCheck::text() const {
  switch (verdict) {
    case Verdict::NoClaim: return "no claim";
    case Verdict::Unknown: return "claim unknown";
    case Verdict::NotMeasured: return "not measured";
    case Verdict::Below: return "below claim";
    case Verdict::Consistent: return "within claim";
    case Verdict::Above: return "above claim";
  }
  return "";
}

std::string ClaimCheck::claim_text() const {
  if (verdict == Verdict::Unknown) return "unknown";
  if (std::isnan(claimed_min)) return "-";
  std::string text = format_number(claimed_min) + "\xE2\x80\x93" + format_ratio(claimed_max);  // en dash
  if (first_phase != last_phase)
    text += " (phases " + std::to_string(first_phase) + "\xE2\x80\x93" + std::to_string(last_phase) + ")";
  return text;
}

namespace {

// The product of the claims of the catalog's phases above `previous` up to the row's, and the
// first of those phases (indices the catalog skips are no rungs); false when one claims nothing.
bool compound_claims(const catalog::WorkloadEntry& entry, int previous, ClaimCheck& check) {
  if (!entry.phase(check.last_phase)) return false;
  double low = 1, high = 1;
  check.first_phase = check.last_phase;
  for (const PhaseInfo& phase : entry.phases) {
    if (phase.index <= previous || phase.index > check.last_phase) continue;
    if (std::isnan(phase.claimed_min)) return false;
    check.first_phase = std::min(check.first_phase, phase.index);
    low *= phase.claimed_min;
    high *= phase.claimed_max;
  }
  check.claimed_min = low;
  check.claimed_max = high;
  return true;
}

}  // namespace

double region_ops(const std::string& cell, const std::string& region) {
  size_t begin = 0;
  while (begin < cell.size()) {
    const size_t end = std::min(cell.find(';', begin), cell.size());
    const size_t equals = cell.find('=', begin);
    if (equals < end && cell.compare(begin, equals - begin, region) == 0)
      return std::strtod(cell.substr(equals + 1, end - equals - 1).c_str(), nullptr);
    begin = end + 1;
  }
  return kMissing;
}

std::optional<RegionClaimCheck> check_region_claim(const ResultRow& row, const std::vector<const ResultRow*>& ladder_rows,
                                                   const catalog::Catalog& catalog) {
  const catalog::WorkloadEntry* entry = catalog.find(row.suite, row.workload);
  const PhaseInfo* phase = entry ? entry->phase(row.phase_index) : nullptr;
  if (!phase || phase->claim_region.empty()) return std::nullopt;
  RegionClaimCheck check;
  check.region = phase->claim_region;
  check.claimed_cut = phase->claimed_region_op_cut;
  for (const ResultRow* other : ladder_rows)
    if (other->phase_index == 0 && other->status == Status::Ok) check.phase0_ops = region_ops(other->ops_by_region, check.region);
  if (row.status == Status::Ok) check.ops = region_ops(row.ops_by_region, check.region);
  if (check.phase0_ops > 0 && !std::isnan(check.ops)) check.measured_cut = 1 - check.ops / check.phase0_ops;
  return check;
}

ClaimCheck check_claim(const ResultRow& row, const std::vector<const ResultRow*>& workload_rows,
                       const catalog::Catalog& catalog) {
  ClaimCheck check;
  if (row.backend == kReferenceBackend) return check;
  const results::Baselines bases = results::baselines_of(row, workload_rows, is_timed);
  if (!bases.previous) return check;  // nothing timed below it to gain over
  check.first_phase = bases.previous->phase_index + 1;
  check.last_phase = row.phase_index;
  const catalog::WorkloadEntry* entry = catalog.find(row.suite, row.workload);
  if (!entry) {
    check.verdict = ClaimCheck::Verdict::Unknown;
    return check;
  }
  if (!compound_claims(*entry, bases.previous->phase_index, check)) return check;
  check.verdict = compare_gain(row.speedup_vs_prev, row.speedup_vs_prev_ci_low, row.speedup_vs_prev_ci_high,
                               check.claimed_min, check.claimed_max);
  return check;
}

namespace {

// The fastest timed row of `rows` for which `wanted` holds, per ladder.
std::map<std::string, const ResultRow*> fastest_per_ladder(const std::vector<const ResultRow*>& rows,
                                                           bool (*wanted)(const ResultRow&)) {
  std::map<std::string, const ResultRow*> best;
  for (const ResultRow* row : rows) {
    if (!is_timed(*row) || !wanted(*row)) continue;
    const ResultRow*& current = best[ladder_name(*row)];
    if (!current || row->median_ms < current->median_ms) current = row;
  }
  return best;
}

bool is_exact(const ResultRow& row) { return row.exact; }
bool is_approximate(const ResultRow& row) { return !row.exact; }

}  // namespace

std::vector<const ResultRow*> best_phase_rows(const std::vector<const ResultRow*>& rows) {
  const auto exact = fastest_per_ladder(rows, is_exact), approximate = fastest_per_ladder(rows, is_approximate);
  std::set<std::string> ladders;
  for (const auto* best : {&exact, &approximate})
    for (const auto& entry : *best) ladders.insert(entry.first);
  std::vector<const ResultRow*> result;
  for (const std::string& ladder : ladders) {
    const auto e = exact.find(ladder), a = approximate.find(ladder);
    if (e != exact.end()) result.push_back(e->second);
    if (a != approximate.end() && (e == exact.end() || a->second->median_ms < e->second->median_ms))
      result.push_back(a->second);
  }
  return result;
}

namespace {

// One entry of a step list: NaN unless the whole entry (blanks aside) is a number.
double parse_step_value(const std::string& entry) {
  const char* const begin = entry.c_str();
  char* parsed_to = nullptr;
  const double value = std::strtod(begin, &parsed_to);  // reads "nan" and "inf" too
  const bool whole = parsed_to != begin && std::all_of(static_cast<const char*>(parsed_to), begin + entry.size(),
                                                        [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  return whole ? value : kMissing;
}

}  // namespace

std::vector<double> parse_step_values(const std::string& cell) {
  std::vector<double> values;
  for (size_t start = 0; !cell.empty() && start <= cell.size();) {
    const size_t end = std::min(cell.find(';', start), cell.size());
    values.push_back(parse_step_value(cell.substr(start, end - start)));
    start = end + 1;
  }
  return values;
}

bool has_step_errors(const ResultRow& row) {
  return (row.status == Status::Ok || row.status == Status::Fail) && !row.step_rel_l2_err.empty();
}

namespace {

// The better of two candidates for "best": timed beats untimed, then faster, then higher phase.
bool better_than(const ResultRow* candidate, const ResultRow* current) {
  if (!current) return true;
  if (is_timed(*candidate) != is_timed(*current)) return is_timed(*candidate);
  if (is_timed(*candidate) && candidate->median_ms != current->median_ms) return candidate->median_ms < current->median_ms;
  return candidate->phase_index > current->phase_index;
}

// Per ladder: phase 0, the best exact row and the best approximate row (fewer when they coincide).
std::vector<const ResultRow*> representative_rows(const std::vector<const ResultRow*>& rows) {
  std::map<std::string, std::array<const ResultRow*, 3>> chosen;  // phase 0, best exact, best approximate
  for (const ResultRow* row : rows) {
    auto& [phase0, exact, approximate] = chosen[ladder_name(*row)];
    if (row->phase_index == 0 && !phase0) phase0 = row;
    const ResultRow*& best = row->exact ? exact : approximate;
    if (better_than(row, best)) best = row;
  }
  std::vector<const ResultRow*> result;
  for (const auto& entry : chosen)
    for (const ResultRow* row : entry.second)
      if (row && std::find(result.begin(), result.end(), row) == result.end()) result.push_back(row);
  return result;
}

}  // namespace

std::vector<const ResultRow*> step_error_rows(const std::vector<const ResultRow*>& rows, size_t max_lines) {
  std::vector<const ResultRow*> drawable;
  for (const ResultRow* row : rows)
    if (has_step_errors(*row)) drawable.push_back(row);
  std::vector<const ResultRow*> chosen = drawable.size() <= max_lines ? drawable : representative_rows(drawable);
  std::stable_sort(chosen.begin(), chosen.end(), [](const ResultRow* a, const ResultRow* b) {
    return std::make_tuple(ladder_name(*a), a->phase_index) < std::make_tuple(ladder_name(*b), b->phase_index);
  });
  return chosen;
}

Colors::Colors(const std::vector<Run>& runs) {
  // Okabe-Ito: distinguishable with the common color-vision deficiencies.
  static const char* const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442"};
  std::set<std::string> names;
  for (const Run& run : runs)
    for (const ResultRow& row : run.data.rows) names.insert(row.backend);
  size_t next = 0;
  for (const std::string& name : names)
    colors_[name] = name == kReferenceBackend ? "#6b6b6b" : palette[next++ % (sizeof palette / sizeof *palette)];
}

std::string Colors::of(const std::string& backend) const {
  const auto found = colors_.find(backend);
  return found == colors_.end() ? "#333333" : found->second;
}

std::vector<std::pair<std::string, std::string>> Colors::legend() const { return {colors_.begin(), colors_.end()}; }

}  // namespace pb::report

// Growth exponents, crossovers and thread scaling over a run's rows (scaling.hpp).

#include "results/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "common/number_text.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/stats.hpp"
#include "results/csv_cell.hpp"
#include "results/results_model.hpp"
#include "roofline/roofline.hpp"

namespace pb::results {
namespace {

using Rows = std::vector<const ResultRow*>;

// A row whose time the answers take: OK with a median, and not disturbed by other work on the
// machine (such a time says what the machine did, as compare and the history treat it).
bool is_timed_undisturbed(const ResultRow& row) {
  return row.status == Status::Ok && row.median_ms > 0 && std::isfinite(row.median_ms) && row.disturbed.empty();
}

// Orders identities by every field but the phase's name (the index names it).
auto identity_tie(const RowIdentity& id) {
  return std::tie(id.suite, id.workload, id.backend, id.device, id.phase_index, id.threads);
}
struct IdentityLess {
  bool operator()(const RowIdentity& a, const RowIdentity& b) const { return identity_tie(a) < identity_tie(b); }
};

// ---- work ----------------------------------------------------------------------------------------

WorkUnit unit_of(const Rows& workload_rows, const catalog::Catalog* catalog) {
  bool flops = true, bytes = true;
  for (const ResultRow* row : workload_rows) {
    if (!is_timed_undisturbed(*row)) continue;
    const WorkEstimate work = declared_work(*row, catalog);
    flops = flops && work.flops > 0;
    bytes = bytes && work.bytes > 0;
  }
  return flops ? WorkUnit::Flops : bytes ? WorkUnit::Bytes : WorkUnit::Scale;
}

double work_of(const ResultRow& row, WorkUnit unit, const catalog::Catalog* catalog) {
  if (unit == WorkUnit::Flops) return declared_work(row, catalog).flops;
  if (unit == WorkUnit::Bytes) return declared_work(row, catalog).bytes;
  if (std::isfinite(row.scale)) return row.scale;
  return row.size == to_string(SizeClass::Default) ? 1.0 : kMissing;
}

bool has_work(double work) { return work > 0 && std::isfinite(work); }

// Each workload's unit, by "suite/workload": one unit for all its rows, so that its rungs and its
// reference compare.
std::map<std::string, WorkUnit> units_by_workload(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog) {
  std::map<std::string, Rows> by_workload;
  for (const ResultRow& row : rows) by_workload[row.suite + "/" + row.workload].push_back(&row);
  std::map<std::string, WorkUnit> units;
  for (const auto& [name, workload_rows] : by_workload) units[name] = unit_of(workload_rows, catalog);
  return units;
}

std::map<RowIdentity, Rows, IdentityLess> rows_by_identity(const std::vector<ResultRow>& rows) {
  std::map<RowIdentity, Rows, IdentityLess> groups;
  for (const ResultRow& row : rows) groups[identity_of(row)].push_back(&row);
  return groups;
}

// ---- growth --------------------------------------------------------------------------------------

// A point the fit takes: timed, with a known n, and not held to a latency floor (there the time
// stops following the work).
bool fit_takes(const ResultRow& row, double work) {
  return is_timed_undisturbed(row) && has_work(work) && !roofline::is_latency_floor_bound(row.bound);
}

GrowthFit fit_identity(const RowIdentity& identity, const Rows& rows, WorkUnit unit, const catalog::Catalog* catalog) {
  GrowthFit fit{identity, unit};
  std::vector<double> log_work, log_ms;
  for (const ResultRow* row : rows) {
    const double work = work_of(*row, unit, catalog);
    if (!fit_takes(*row, work)) continue;
    log_work.push_back(std::log(work));
    log_ms.push_back(std::log(row->median_ms));
  }
  const stats::LineFit line = stats::fit_line(log_work, log_ms);
  fit.points = log_work.size();
  fit.excluded_points = rows.size() - fit.points;
  fit.exponent = line.slope;
  fit.exponent_ci_low = line.slope_ci.low;
  fit.exponent_ci_high = line.slope_ci.high;
  return fit;
}

// The serial reference's fit of `fit`'s workload: at the same threads where there is one.
const GrowthFit* reference_fit(const GrowthFit& fit, const std::vector<GrowthFit>& fits) {
  const GrowthFit* found = nullptr;
  for (const GrowthFit& other : fits) {
    const RowIdentity& id = other.identity;
    if (id.backend != kReferenceBackend || id.suite != fit.identity.suite || id.workload != fit.identity.workload)
      continue;
    if (!found || id.threads == fit.identity.threads) found = &other;
  }
  return found;
}

void compare_with_reference(GrowthFit& fit, const std::vector<GrowthFit>& fits) {
  if (fit.identity.backend == kReferenceBackend) return;
  const GrowthFit* reference = reference_fit(fit, fits);
  if (!reference) return;
  fit.reference_exponent = reference->exponent;
  fit.grows_faster_than_reference = fit.exponent_ci_low > reference->exponent_ci_high;  // false with a NaN
}

// ---- crossovers ----------------------------------------------------------------------------------

// One size both rungs were timed at: log n, and log(t_k / t_{k-1}) at the medians and at the ends of
// the intervals most and least favourable to rung k (an end missing: the median).
struct RatioPoint {
  double log_work = 0;
  double log_ratio = 0, log_ratio_best = 0, log_ratio_worst = 0;
};

double or_median(double bound, const ResultRow& row) { return std::isfinite(bound) ? bound : row.median_ms; }

RatioPoint ratio_point(double work, const ResultRow& rung, const ResultRow& previous) {
  return {std::log(work), std::log(rung.median_ms / previous.median_ms),
          std::log(or_median(rung.ci_low_ms, rung) / or_median(previous.ci_high_ms, previous)),
          std::log(or_median(rung.ci_high_ms, rung) / or_median(previous.ci_low_ms, previous))};
}

bool is_faster(double log_ratio) { return log_ratio < 0; }

using RatioOf = double RatioPoint::*;

// Where `ratio` changes from slower to faster (`to_faster`) or back between two neighbouring
// points, on log-log; the first such change, or the last. NaN where there is none.
double crossing(const std::vector<RatioPoint>& points, RatioOf ratio, bool to_faster, bool last) {
  double found = kMissing;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const RatioPoint &a = points[i], &b = points[i + 1];
    if (is_faster(a.*ratio) == is_faster(b.*ratio) || is_faster(b.*ratio) != to_faster) continue;
    found = a.log_work + (b.log_work - a.log_work) * (a.*ratio) / ((a.*ratio) - (b.*ratio));
    if (!last) break;
  }
  return found;
}

size_t changes_of_sign(const std::vector<RatioPoint>& points) {
  size_t changes = 0;
  for (size_t i = 0; i + 1 < points.size(); ++i)
    changes += is_faster(points[i].log_ratio) != is_faster(points[i + 1].log_ratio);
  return changes;
}

// The crossing and its interval. Becoming faster (`to_faster`), the best case crosses first and
// the worst case last; an end whose curve is already on the far side at the measured edge is open.
void set_crossing(Crossover& crossover, const std::vector<RatioPoint>& points, bool to_faster) {
  const RatioOf early = to_faster ? &RatioPoint::log_ratio_best : &RatioPoint::log_ratio_worst;
  const RatioOf late = to_faster ? &RatioPoint::log_ratio_worst : &RatioPoint::log_ratio_best;
  const double at = crossing(points, &RatioPoint::log_ratio, to_faster, false);
  const double low =
      is_faster(points.front().*early) == to_faster ? kMissing : crossing(points, early, to_faster, false);
  const double high = is_faster(points.back().*late) != to_faster ? kMissing : crossing(points, late, to_faster, true);
  crossover.work = std::exp(at);
  crossover.work_low = std::exp(low);
  crossover.work_high = std::exp(high);
}

CrossoverVerdict verdict_of(const std::vector<RatioPoint>& points) {
  const size_t changes = changes_of_sign(points);
  if (changes > 1) return CrossoverVerdict::CrossesMoreThanOnce;
  const bool faster_first = is_faster(points.front().log_ratio);
  if (changes == 0) return faster_first ? CrossoverVerdict::FasterEverywhere : CrossoverVerdict::NeverFaster;
  return faster_first ? CrossoverVerdict::FasterBelow : CrossoverVerdict::FasterFrom;
}

std::vector<RatioPoint> ratio_points(const Rows& rung, const Rows& previous, WorkUnit unit,
                                     const catalog::Catalog* catalog) {
  std::vector<RatioPoint> points;
  for (const ResultRow* row : rung)
    for (const ResultRow* before : previous) {
      const double work = work_of(*row, unit, catalog);
      if (before->size == row->size && is_timed_undisturbed(*row) && is_timed_undisturbed(*before) && has_work(work))
        points.push_back(ratio_point(work, *row, *before));
    }
  std::stable_sort(points.begin(), points.end(),
                   [](const RatioPoint& a, const RatioPoint& b) { return a.log_work < b.log_work; });
  return points;
}

// Each rung of one ladder (its identities in phase order) against the one below it.
void add_ladder_crossovers(const std::vector<std::pair<RowIdentity, Rows>>& ladder, WorkUnit unit,
                           const catalog::Catalog* catalog, std::vector<Crossover>& out) {
  for (size_t k = 1; k < ladder.size(); ++k) {
    const std::vector<RatioPoint> points = ratio_points(ladder[k].second, ladder[k - 1].second, unit, catalog);
    if (points.size() < 2) continue;
    Crossover crossover{ladder[k].first, ladder[k - 1].first.phase_index, ladder[k - 1].first.phase, unit,
                        points.size()};
    crossover.verdict = verdict_of(points);
    if (crossover.verdict == CrossoverVerdict::FasterFrom || crossover.verdict == CrossoverVerdict::FasterBelow)
      set_crossing(crossover, points, crossover.verdict == CrossoverVerdict::FasterFrom);
    out.push_back(std::move(crossover));
  }
}

}  // namespace

const char* to_string(WorkUnit unit) {
  switch (unit) {
    case WorkUnit::Flops:
      return "flops";
    case WorkUnit::Bytes:
      return "bytes";
    case WorkUnit::Scale:
      return "scale";
  }
  return "scale";
}

const char* to_string(CrossoverVerdict verdict) {
  switch (verdict) {
    case CrossoverVerdict::FasterFrom:
      return "faster_from";
    case CrossoverVerdict::FasterBelow:
      return "faster_below";
    case CrossoverVerdict::FasterEverywhere:
      return "faster_everywhere";
    case CrossoverVerdict::NeverFaster:
      return "never_faster";
    case CrossoverVerdict::CrossesMoreThanOnce:
      return "crosses_more_than_once";
  }
  return "crosses_more_than_once";
}

RowIdentity identity_of(const ResultRow& row) {
  return {row.suite, row.workload, row.backend, row.device, row.phase_index, row.phase, row.threads};
}

std::vector<GrowthFit> fit_growth(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog) {
  const std::map<std::string, WorkUnit> units = units_by_workload(rows, catalog);
  std::vector<GrowthFit> fits;
  for (const auto& [identity, group] : rows_by_identity(rows)) {
    GrowthFit fit = fit_identity(identity, group, units.at(identity.suite + "/" + identity.workload), catalog);
    if (std::isfinite(fit.exponent)) fits.push_back(std::move(fit));
  }
  for (GrowthFit& fit : fits) compare_with_reference(fit, fits);
  return fits;
}

std::vector<Crossover> find_crossovers(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog) {
  const std::map<std::string, WorkUnit> units = units_by_workload(rows, catalog);
  std::map<std::tuple<std::string, std::string, std::string, std::string, int>,
           std::vector<std::pair<RowIdentity, Rows>>>
      ladders;  // identities in phase order, since the map of identities is
  for (auto& [identity, group] : rows_by_identity(rows))
    ladders[{identity.suite, identity.workload, identity.backend, identity.device, identity.threads}].emplace_back(
        identity, std::move(group));
  std::vector<Crossover> crossovers;
  for (const auto& [key, ladder] : ladders)
    add_ladder_crossovers(ladder, units.at(std::get<0>(key) + "/" + std::get<1>(key)), catalog, crossovers);
  return crossovers;
}

std::vector<ThreadScaling> thread_scaling(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog) {
  const std::map<std::string, WorkUnit> units = units_by_workload(rows, catalog);
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string, int>, Rows> points;
  for (const ResultRow& row : rows)
    if (is_timed_undisturbed(row) && row.threads > 0)
      points[{row.suite, row.workload, row.size, row.backend, row.device, row.phase_index}].push_back(&row);
  std::vector<ThreadScaling> scaling;
  for (auto& [key, group] : points) {
    std::stable_sort(group.begin(), group.end(), [](auto* a, auto* b) { return a->threads < b->threads; });
    const ResultRow& base = *group.front();
    const WorkUnit unit = units.at(base.suite + "/" + base.workload);
    for (const ResultRow* row : group) {
      if (row->threads == base.threads) continue;
      const double speedup = base.median_ms / row->median_ms;
      const double threads_ratio = static_cast<double>(row->threads) / base.threads;
      scaling.push_back({identity_of(*row), row->size, unit, work_of(*row, unit, catalog), base.threads, speedup,
                         speedup / threads_ratio});
    }
  }
  return scaling;
}

ScalingAnalysis analyze_scaling(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog) {
  return {fit_growth(rows, catalog), find_crossovers(rows, catalog), thread_scaling(rows, catalog)};
}

// ---- scaling.csv ---------------------------------------------------------------------------------

namespace {

const std::vector<std::string>& columns() {
  static const std::vector<std::string> names{"kind",
                                              "suite",
                                              "workload",
                                              "backend",
                                              "device",
                                              "phase_index",
                                              "phase",
                                              "threads",
                                              "size",
                                              "work_unit",
                                              "work",
                                              "points",
                                              "excluded_points",
                                              "exponent",
                                              "exponent_ci_low",
                                              "exponent_ci_high",
                                              "reference_exponent",
                                              "grows_faster_than_reference",
                                              "versus_phase_index",
                                              "versus_phase",
                                              "verdict",
                                              "crossover_work",
                                              "crossover_work_low",
                                              "crossover_work_high",
                                              "base_threads",
                                              "speedup",
                                              "parallel_efficiency"};
  return names;
}

// One record's cells, addressed by column name; the columns a kind does not use stay empty.
class Record {
 public:
  Record(const char* kind, const RowIdentity& id, WorkUnit unit) : cells_(columns().size()) {
    set("kind", kind);
    set("suite", id.suite);
    set("workload", id.workload);
    set("backend", id.backend);
    set("device", id.device);
    set("phase_index", std::to_string(id.phase_index));
    set("phase", id.phase);
    set("threads", std::to_string(id.threads));
    set("work_unit", to_string(unit));
  }
  Record& set(const std::string& column, const std::string& text) {
    const auto at = std::find(columns().begin(), columns().end(), column);
    cells_.at(static_cast<size_t>(at - columns().begin())) = quote_csv_cell(text);
    return *this;
  }
  Record& set(const std::string& column, double value) { return set(column, format_csv_number(value)); }
  Record& set(const std::string& column, size_t count) { return set(column, std::to_string(count)); }
  Record& set(const std::string& column, int count) { return set(column, std::to_string(count)); }
  std::string line() const {
    std::string text;
    for (size_t i = 0; i < cells_.size(); ++i) text += (i ? "," : "") + cells_[i];
    return text + "\n";
  }

 private:
  std::vector<std::string> cells_;
};

std::string growth_line(const GrowthFit& fit) {
  Record record("growth", fit.identity, fit.unit);
  record.set("points", fit.points).set("excluded_points", fit.excluded_points).set("exponent", fit.exponent);
  record.set("exponent_ci_low", fit.exponent_ci_low).set("exponent_ci_high", fit.exponent_ci_high);
  if (std::isfinite(fit.reference_exponent))
    record.set("reference_exponent", fit.reference_exponent)
        .set("grows_faster_than_reference", fit.grows_faster_than_reference ? "true" : "false");
  return record.line();
}

std::string crossover_line(const Crossover& crossover) {
  Record record("crossover", crossover.identity, crossover.unit);
  record.set("points", crossover.points).set("versus_phase_index", crossover.previous_phase_index);
  record.set("versus_phase", crossover.previous_phase).set("verdict", to_string(crossover.verdict));
  record.set("crossover_work", crossover.work).set("crossover_work_low", crossover.work_low);
  return record.set("crossover_work_high", crossover.work_high).line();
}

std::string threads_line(const ThreadScaling& scaling) {
  Record record("threads", scaling.identity, scaling.unit);
  record.set("size", scaling.size).set("work", scaling.work).set("base_threads", scaling.base_threads);
  return record.set("speedup", scaling.speedup).set("parallel_efficiency", scaling.parallel_efficiency).line();
}

}  // namespace

std::vector<std::string> scaling_columns() { return columns(); }

std::string scaling_csv(const ScalingAnalysis& analysis) {
  std::string text;
  for (const std::string& column : columns()) text += (text.empty() ? "" : ",") + column;
  text += "\n";
  for (const GrowthFit& fit : analysis.growth) text += growth_line(fit);
  for (const Crossover& crossover : analysis.crossovers) text += crossover_line(crossover);
  for (const ThreadScaling& scaling : analysis.threads) text += threads_line(scaling);
  return text;
}

// ---- the summary ---------------------------------------------------------------------------------

namespace {

std::string number(double value) { return format_significant(value, 3); }

std::string interval(double low, double high) {
  return "[" + (std::isfinite(low) ? number(low) : "-") + ", " + (std::isfinite(high) ? number(high) : "-") + "]";
}

}  // namespace

std::string verdict_text(const Crossover& c) {
  const std::string where = number(c.work) + " " + to_string(c.unit) + " " + interval(c.work_low, c.work_high);
  switch (c.verdict) {
    case CrossoverVerdict::FasterFrom:
      return "faster from " + where;
    case CrossoverVerdict::FasterBelow:
      return "faster below " + where;
    case CrossoverVerdict::NeverFaster:
      return "never faster at a measured size";
    case CrossoverVerdict::CrossesMoreThanOnce:
      return "crosses more than once";
    case CrossoverVerdict::FasterEverywhere:
      return "faster at every measured size";
  }
  return "";
}

namespace {

std::string growth_text(const GrowthFit& fit) {
  std::string text = "phase " + std::to_string(fit.identity.phase_index) + " grows as n^" + number(fit.exponent);
  if (std::isfinite(fit.exponent_ci_low)) text += " " + interval(fit.exponent_ci_low, fit.exponent_ci_high);
  if (fit.grows_faster_than_reference) text += ", faster than the reference's n^" + number(fit.reference_exponent);
  return text;
}

std::string crossover_text(const Crossover& c) {
  return "phase " + std::to_string(c.identity.phase_index) + " vs " + std::to_string(c.previous_phase_index) + ": " +
         verdict_text(c);
}

std::string threads_text(const ThreadScaling& s) {
  return "phase " + std::to_string(s.identity.phase_index) + " at " + s.size + " on " +
         std::to_string(s.identity.threads) + " threads: " + number(s.speedup) + "x over " +
         std::to_string(s.base_threads) + ", efficiency " + number(s.parallel_efficiency * 100) + "%";
}

std::string line_name(const RowIdentity& id) {
  return id.suite + "/" + id.workload + " " + id.backend + " " + id.device + " " + std::to_string(id.threads) + "t";
}

// The fit of each ladder's top rung, and every rung's that grows faster than its reference.
void add_growth_texts(const std::vector<GrowthFit>& fits, std::map<std::string, std::vector<std::string>>& texts) {
  std::map<std::string, const GrowthFit*> top;
  for (const GrowthFit& fit : fits) {
    const GrowthFit*& highest = top[line_name(fit.identity)];
    if (!highest || fit.identity.phase_index > highest->identity.phase_index) highest = &fit;
  }
  for (const GrowthFit& fit : fits)
    if (top[line_name(fit.identity)] == &fit || fit.grows_faster_than_reference)
      texts[line_name(fit.identity)].push_back(growth_text(fit));
}

// The largest size's speedup of each thread count of each ladder's top rung.
void add_thread_texts(const std::vector<ThreadScaling>& scaling,
                      std::map<std::string, std::vector<std::string>>& texts) {
  std::map<std::string, const ThreadScaling*> shown;  // by ladder at its base threads, and threads
  for (const ThreadScaling& s : scaling) {
    RowIdentity ladder = s.identity;
    ladder.threads = s.base_threads;
    const ThreadScaling*& best = shown[line_name(ladder) + "/" + std::to_string(s.identity.threads)];
    const auto rank = [](const ThreadScaling& t) { return std::make_pair(t.identity.phase_index, t.work); };
    if (!best || rank(*best) < rank(s)) best = &s;
  }
  for (const auto& [key, s] : shown) texts[key.substr(0, key.rfind('/'))].push_back(threads_text(*s));
}

}  // namespace

std::vector<std::string> scaling_summary(const ScalingAnalysis& analysis) {
  std::map<std::string, std::vector<std::string>> texts;  // by line_name
  add_growth_texts(analysis.growth, texts);
  for (const Crossover& crossover : analysis.crossovers)
    if (crossover.verdict != CrossoverVerdict::FasterEverywhere)
      texts[line_name(crossover.identity)].push_back(crossover_text(crossover));
  add_thread_texts(analysis.threads, texts);
  std::vector<std::string> lines;
  for (const auto& [name, parts] : texts) {
    std::string line = name + ": ";
    for (size_t i = 0; i < parts.size(); ++i) line += (i ? "; " : "") + parts[i];
    lines.push_back(line);
  }
  return lines;
}

}  // namespace pb::results

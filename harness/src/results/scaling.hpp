#pragma once
// What a sweep says about each ladder: how a rung's time grows with its work (t ~ a * n^p, fitted
// on log-log), from which size a phase is faster than the phase before it (the crossover), and a
// rung's speedup and parallel efficiency over its fewest threads. Pure functions over a run's
// rows; scaling.csv and the lines `run` prints come from them (docs/file-formats.md). Internal to
// the harness.

#include <string>
#include <vector>

#include "phasebench/results.hpp"
#include "results/catalog.hpp"

namespace pb::results {

/// What a point's work n counts: the workload's declared flops per iteration where every timed row
/// of it has some, else its declared bytes, else the size's scale of the default size (the default
/// itself 1; the other named sizes then have no n).
enum class WorkUnit { Flops, Bytes, Scale };
const char* to_string(WorkUnit unit);  // "flops", "bytes", "scale"

/// A rung of a ladder at one thread count: the rows a sweep varies the size of.
struct RowIdentity {
  std::string suite, workload, backend, device;
  int phase_index = 0;
  std::string phase;
  int threads = 0;
};
RowIdentity identity_of(const ResultRow& row);

/// One identity's time against its work: t = a * n^exponent, least squares on log t over log n.
struct GrowthFit {
  RowIdentity identity;
  WorkUnit unit = WorkUnit::Scale;
  size_t points = 0;           // sizes fitted
  size_t excluded_points = 0;  // sizes left out: not OK, untimed, at a latency floor, or no n
  double exponent = kMissing;
  double exponent_ci_low = kMissing, exponent_ci_high = kMissing;  // 95%; missing with two points
  // Compared with the serial reference's fit of the same workload (same threads where there is
  // one): true when this exponent's interval lies wholly above the reference's. Missing (NaN) for
  // the reference itself and where either interval is missing.
  double reference_exponent = kMissing;
  bool grows_faster_than_reference = false;
};

/// How phase k's time compares with phase k-1's across the sizes both were timed at.
enum class CrossoverVerdict { FasterFrom, FasterBelow, FasterEverywhere, NeverFaster, CrossesMoreThanOnce };
const char* to_string(CrossoverVerdict verdict);  // "faster_from", "faster_below", ...

struct Crossover {
  RowIdentity identity;  // phase k
  int previous_phase_index = 0;
  std::string previous_phase;
  WorkUnit unit = WorkUnit::Scale;
  size_t points = 0;  // sizes both phases were timed at
  CrossoverVerdict verdict = CrossoverVerdict::FasterEverywhere;
  // FasterFrom (slower below, faster above) and FasterBelow: the work where the time ratio crosses
  // 1, interpolated on log-log between the two sizes around it; the interval is where the ratio of
  // the confidence intervals' ends crosses 1, missing at an end beyond the measured sizes.
  double work = kMissing, work_low = kMissing, work_high = kMissing;
};

/// One row's speedup over the row of the same identity and size with the fewest threads.
struct ThreadScaling {
  RowIdentity identity;  // at `identity.threads`
  std::string size;
  WorkUnit unit = WorkUnit::Scale;
  double work = kMissing;  // the size's n
  int base_threads = 0;
  double speedup = kMissing;              // base median / this median
  double parallel_efficiency = kMissing;  // speedup / (threads / base_threads)
};

struct ScalingAnalysis {
  std::vector<GrowthFit> growth;  // identities timed at two sizes or more
  std::vector<Crossover> crossovers;
  std::vector<ThreadScaling> threads;
  bool empty() const { return growth.empty() && crossovers.empty() && threads.empty(); }
};

/// `catalog` gives each size's declared work (null: the work the rows' throughput implies).
std::vector<GrowthFit> fit_growth(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog);
/// Each rung against the nearest lower rung of its ladder (backend, device, threads) at the sizes
/// both were timed at; two sizes at least.
std::vector<Crossover> find_crossovers(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog);
/// Empty for a run with one thread count.
std::vector<ThreadScaling> thread_scaling(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog);
ScalingAnalysis analyze_scaling(const std::vector<ResultRow>& rows, const catalog::Catalog* catalog);

/// A crossover's verdict in words, with where it crosses: "faster from 2.1e+06 flops [1.4e+06, 3e+06]".
std::string verdict_text(const Crossover& crossover);

constexpr const char* kScalingFileName = "scaling.csv";
std::vector<std::string> scaling_columns();
/// One record per fit, crossover and thread count, in results.csv's dialect.
std::string scaling_csv(const ScalingAnalysis& analysis);
/// One line per workload, backend, device and thread count that has something to say: the top
/// rung's growth, rungs growing faster than the reference, crossings, thread efficiency.
std::vector<std::string> scaling_summary(const ScalingAnalysis& analysis);

}  // namespace pb::results

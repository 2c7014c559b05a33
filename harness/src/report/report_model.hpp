#pragma once
// What the HTML report shows, computed from the runs before any markup: which workloads there
// are, each ladder's rows, whether a measured gain matches the seed's claim, each backend's best
// phase, the roofline ceilings. Internal to the harness.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/results_model.hpp"
#include "roofline/roofline.hpp"

namespace pb::report {

/// One run in the report, named by a letter (A, B, ...) in every chart and table.
struct Run {
  std::string letter;
  results::RunData data;
  std::string run_id;                        // from the rows, else machine.json
  std::optional<roofline::Ceilings> ceilings;  // machine.json "roofline", when present and valid
  std::string ceilings_problem;              // why there are none
  /// "A: <run id> (<CPU model>, commit <git>)".
  std::string caption() const;
};

/// Loads each path (a run directory or its results.csv) and names the runs A, B, ...
std::vector<Run> load_runs(const std::vector<std::string>& paths);

/// A (suite, workload, size): one section of the report.
struct WorkloadKey {
  std::string suite, workload, size;
  std::string name() const { return suite + "/" + workload; }
  std::string anchor() const;  // an HTML id
  bool operator<(const WorkloadKey& other) const;
  bool operator==(const WorkloadKey& other) const;
};
WorkloadKey key_of(const ResultRow& row);

/// Every workload any run has a row for, in name order.
std::vector<WorkloadKey> workloads(const std::vector<Run>& runs);
/// The rows of `run` for `key`, in file order.
std::vector<const ResultRow*> rows_of(const Run& run, const WorkloadKey& key);

/// OK and with a median time: the rows that have speedups.
bool is_timed(const ResultRow& row);
/// "backend/device".
std::string ladder_name(const ResultRow& row);
/// The workload's shape text ("M=48 ...") from the first row that has one.
std::string shape_of(const std::vector<const ResultRow*>& rows);

/// The claimed gain a row's measured speedup_vs_prev should be compared with, from the run's
/// catalog. speedup_vs_prev divides by the nearest lower *timed* phase of the same ladder
/// (results::baselines_of), so when a backend skips phases the claim is the product of the claims
/// of every catalog phase it jumped over. Unknown when the catalog has no entry for the workload
/// (a run from before catalogs were saved).
struct ClaimCheck {
  enum class Verdict { NoClaim, Unknown, NotMeasured, Below, Consistent, Above };
  Verdict verdict = Verdict::NoClaim;
  double claimed_min = kMissing, claimed_max = kMissing;
  int first_phase = 0, last_phase = 0;  // the phases whose claims were multiplied
  std::string text() const;             // "within claim", "below claim", "claim unknown", ...
  std::string claim_text() const;       // "1.02-1.03×" or "1.05-1.10× (phases 2-3)"; "unknown"
};
ClaimCheck check_claim(const ResultRow& row, const std::vector<const ResultRow*>& workload_rows,
                       const catalog::Catalog& catalog);

/// A claim about the operations of one named region (the seed's "67% fewer kernel launches in this
/// function"; catalog phases with claim_region) beside the cut measured from ops_by_region: the
/// row's count of that region against the count of phase 0 of the same ladder. NaN where a count
/// is missing (phase 0 not OK, or not counted).
struct RegionClaimCheck {
  std::string region;
  double phase0_ops = kMissing, ops = kMissing;
  double measured_cut = kMissing, claimed_cut = kMissing;  // shares of phase 0's count: 0.67 = 67% fewer
};
/// Nullopt when the row's phase claims nothing about a region. `ladder_rows`: the rows of the
/// row's (workload, size, backend, device).
std::optional<RegionClaimCheck> check_region_claim(const ResultRow& row, const std::vector<const ResultRow*>& ladder_rows,
                                                   const catalog::Catalog& catalog);
/// The operations of `region` in an ops_by_region cell ("anxiety=6;phase_scale=28"); NaN when absent.
double region_ops(const std::string& cell, const std::string& region);

/// Per ladder (backend/device, in name order): its fastest timed exact row, followed by its
/// fastest approximate row when that one is faster still (or the ladder has no timed exact row),
/// so that a bf16 win is never presented as an exact one.
std::vector<const ResultRow*> best_phase_rows(const std::vector<const ResultRow*>& rows);

/// A rollout's "e0;e1;..." cell as numbers: an empty or unreadable entry is NaN (a gap), so the
/// steps keep their positions. Empty cell: no steps.
std::vector<double> parse_step_values(const std::string& cell);
/// OK or FAIL rows with per-step errors: what the "error per rollout step" chart can draw.
bool has_step_errors(const ResultRow& row);
/// The rows with step errors to draw in one chart: all of them when at most `max_lines`, else per
/// ladder its phase 0, its best exact and its best approximate row (timed and fastest, else the
/// highest phase), in ladder and phase order.
std::vector<const ResultRow*> step_error_rows(const std::vector<const ResultRow*>& rows, size_t max_lines);

/// A color per backend name, the same in every chart: grey for the reference, then a
/// color-blind-safe palette in name order of every backend in the runs.
class Colors {
 public:
  explicit Colors(const std::vector<Run>& runs);
  std::string of(const std::string& backend) const;
  std::vector<std::pair<std::string, std::string>> legend() const;

 private:
  std::map<std::string, std::string> colors_;
};

}  // namespace pb::report

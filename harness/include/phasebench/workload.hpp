#pragma once
// A workload: the math, its sizes, its seeded inputs, its fp64 oracle, its tolerances and the
// phase catalog with the seed document's claims. One definition per workload in suites/<suite>/.

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "phasebench/arrays.hpp"
#include "phasebench/phases.hpp"
#include "phasebench/size.hpp"

namespace pb {

/// One rung of a workload's optimization ladder: the one optimization it adds, what that needs of
/// a backend or device, and the seed document's claim for it. Phase 0 ("baseline") adds nothing.
struct PhaseInfo {
  static constexpr double kNoClaim = std::numeric_limits<double>::quiet_NaN();

  PhaseInfo() = default;
  PhaseInfo(int phase_index, std::string phase_name, std::string what_it_changes)
      : index(phase_index), name(std::move(phase_name)), description(std::move(what_it_changes)) {}

  // The other fields by name, chained on the three above:
  //   PhaseInfo(2, "mixed_precision", "bf16 operands").approximate().claims(1.8, 2.0).needing({Capability::Bf16})
  PhaseInfo& approximate() & {
    exact = false;
    return *this;
  }
  PhaseInfo& claims(double min_ratio, double max_ratio) & {
    claimed_min = min_ratio;
    claimed_max = max_ratio;
    return *this;
  }
  PhaseInfo& needing(std::vector<Capability> capabilities) & {
    needs = std::move(capabilities);
    return *this;
  }
  PhaseInfo& turning_off(std::vector<std::string> phase_names) & {
    switches_off = std::move(phase_names);
    return *this;
  }
  // The same on a temporary, so that a catalog entry is one expression.
  PhaseInfo&& approximate() && { return std::move(approximate()); }
  PhaseInfo&& claims(double min_ratio, double max_ratio) && { return std::move(claims(min_ratio, max_ratio)); }
  PhaseInfo&& needing(std::vector<Capability> capabilities) && { return std::move(needing(std::move(capabilities))); }
  PhaseInfo&& turning_off(std::vector<std::string> phase_names) && {
    return std::move(turning_off(std::move(phase_names)));
  }

  int index = 0;
  std::string name;         // the optimization's name, "batched_metrics"; what variants ask has() for
  std::string description;  // one line: what this phase changes
  bool exact = true;        // false: changes the arithmetic; checked against an error budget
  // The seed's claimed gain of this phase over the previous one, as a time ratio (1.03 = +3%).
  // NaN when the seed claims nothing for it.
  double claimed_min = std::numeric_limits<double>::quiet_NaN();
  double claimed_max = std::numeric_limits<double>::quiet_NaN();
  // What the optimization needs of a backend on a device; a device without it gets a generated
  // SKIPPED (the backend has it elsewhere) or UNSUPPORTED (nowhere) row, and the plans of later
  // phases leave this optimization out.
  std::vector<Capability> needs;
  // Earlier optimizations this phase turns off again (an exact phase after approximate ones).
  std::vector<std::string> switches_off;
  // A seed's claim about one named region's operations (pb::counters::Region) rather than time:
  // the share of the region's operations per iteration at phase 0 that this phase removes
  // (0.67 = "67% fewer kernel launches in that function"). Empty / NaN when there is none.
  std::string claim_region;
  double claimed_region_op_cut = kNoClaim;
};

/// The optimizations in effect at `phase` on a backend with `available` capabilities: every
/// catalog phase up to `phase` whose needs are available, less those an active phase switches off.
/// Phases the ladder does not register still count: a ladder that skips a rung takes two steps.
PhasePlan derive_phase_plan(const std::vector<PhaseInfo>& catalog, int phase, const Capabilities& available);
/// The needs of `phase` that `available` lacks; empty when it can run.
std::vector<Capability> missing_needs(const PhaseInfo& phase, const Capabilities& available);

/// One output and the tolerance its check uses (relative L2 error against the fp64 oracle).
struct OutputSpec {
  OutputSpec() = default;
  OutputSpec(std::string output, double rel_l2_tolerance, std::string reason)
      : name(std::move(output)), tolerance(rel_l2_tolerance), tolerance_reason(std::move(reason)) {}

  std::string name;
  double tolerance = 1e-5;
  std::string tolerance_reason;  // one line: why this tolerance holds up
  // The reference array to compare with, when not the one named `name`: an approximate phase that
  // changes the model (GroupNorm for InstanceNorm) is checked against the fp64 evaluation of its
  // own model as well as against the exact one.
  std::string reference;
  // For outputs whose leading axis is a step of a rollout: the error is also measured step by step,
  // and with a budget, step t must stay within step_budget[t] (errors grow with t). An empty
  // budget with per_step set reports the per-step errors without checking them.
  bool per_step = false;
  std::vector<double> step_budget;

  const std::string& reference_name() const { return reference.empty() ? name : reference; }
};

/// Declared work of one iteration (never measured): for GB/s and GFLOP/s.
struct WorkEstimate {
  double flops = 0;
  double bytes = 0;
};

/// The chain of dependent steps that bounds one iteration where neither bandwidth nor arithmetic
/// does (a few scalar libm calls, a sequence of steps each waiting for the last). The harness
/// times it on the machine (roofline_latency.cpp) and holds every row on a host to it: a row's
/// roofline_pct is then the larger of its roofline shares and the chain's time over the row's, and
/// its `bound` is "latency" when the chain gives the larger share.
struct LatencyChain {
  std::string what;  // one line: the chain, and why no variant can do with less of it
  // Prepares the chain for `inputs` (make_inputs' arrays; converted once, outside the timing) and
  // returns the chain itself: one call runs it once and returns a value of its result (kept by
  // the harness, so that the work cannot be optimized away).
  std::function<std::function<double()>(const ArrayMap& inputs)> prepare;
  // The name results.csv gives the bound where the floor binds ("latency": steps that wait for
  // each other; "scatter": read-modify-writes of unpredictable addresses).
  std::string bound = "latency";
  // True for work that a row may split over its threads without any of it waiting for another's
  // (one read-modify-write per item, say): the floor is then the chain's time on one thread
  // divided by the run's threads, which no row can beat by more than a cache's worth of luck.
  bool splits_over_threads = false;
};

class Workload {
 public:
  virtual ~Workload() = default;

  virtual std::string suite() const = 0;
  virtual std::string name() const = 0;  // within the suite: "lior_step"
  std::string full_name() const { return suite() + "/" + name(); }
  virtual std::string description() const = 0;

  /// The dimensions of a size, as "B=16 K=2176 n=8". A scaled size takes the default's shape
  /// through the workload's scale rule (declared next to its named sizes in suites/), and every
  /// method below follows that shape.
  virtual std::string shape(SizeClass size) const = 0;
  /// The inputs for (size, seed): deterministic, identical for every backend; never all zeros.
  virtual ArrayMap make_inputs(SizeClass size, uint64_t seed) const = 0;
  /// The fp64 oracle: the naive reference evaluated in double precision.
  virtual ArrayMap reference_fp64(const ArrayMap& inputs) const = 0;
  /// The outputs every variant must produce, each with its tolerance and the reason for it.
  virtual std::vector<OutputSpec> outputs() const = 0;
  /// The checks of one phase at one size: outputs() unless a phase is approximate and declares an
  /// error budget instead.
  virtual std::vector<OutputSpec> outputs_for(int /*phase*/, SizeClass /*size*/) const { return outputs(); }
  /// The phase catalog, in index order. Backends implement a subset of these phases.
  virtual std::vector<PhaseInfo> phases() const = 0;
  virtual WorkEstimate work(SizeClass size) const = 0;
  /// Memory an fp64 check of this size needs, in bytes (for "sizes that fit").
  virtual double memory_bytes(SizeClass size) const = 0;
  /// Why no variant can compute this size at all: a property of the definition, the same on every
  /// backend (an fp32 range the definition's arithmetic leaves, with the measurement). nullopt for
  /// every size a variant may run; the cases of such a size are UNSUPPORTED with this reason, and
  /// their fp64 problem is never made.
  virtual std::optional<std::string> size_unsupported_reason(SizeClass /*size*/) const { return std::nullopt; }
  /// The claim for the whole ladder, as a time ratio range, with the seed's words for it; NaN when
  /// the seed claims nothing for the workload as a whole. Its `index`, when not 0, is the last
  /// phase the claim covers (phases beyond the seed's are then not held to it).
  virtual PhaseInfo cumulative_claim() const { return {}; }
  /// The latency chain of one iteration at `size`, where one binds it; nullopt for a workload whose
  /// bytes or flops bound it (the roofline's ceilings then apply alone).
  virtual std::optional<LatencyChain> latency_chain(SizeClass /*size*/) const { return std::nullopt; }

  std::optional<PhaseInfo> find_phase(int index) const;
};

/// Registers a workload at static-initialization time: `static pb::WorkloadRegistration r{...};`
struct WorkloadRegistration {
  explicit WorkloadRegistration(std::shared_ptr<const Workload> workload);
};

/// The machine's memory in bytes (sysinfo's total RAM).
double machine_memory_bytes();
/// Throws InputError, naming the size and the workload, when a scaled size has no valid shape for
/// `workload` (a dimension past the range of an int) or its memory_bytes exceed the machine's
/// memory; named sizes always pass. Computes the shape only: nothing is allocated.
void require_valid_size(const Workload& workload, SizeClass size);

std::vector<std::shared_ptr<const Workload>> registered_workloads();  // sorted by full name
std::shared_ptr<const Workload> find_workload(std::string_view full_name);

}  // namespace pb

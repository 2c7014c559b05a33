// energy_flow/aggregate: definition (sizes, inputs, outputs, tolerances, phases and seed 004's
// claims). Reference: reference/energy_flow/aggregate.hpp. Variants:
// optimized/energy_flow/aggregate-<backend>.*
//
// Inputs. The output is zero in every cell no completed flow reaches, and the check refuses a
// reference more than 30% zero (MISTRUSTED), so the flows are placed rather than scattered: a
// seeded permutation of the B H W cells gives 80% of them one completed flow each (20% stay
// empty, so an "empty cell is 0" is checked at every size); the other completed flows go to
// random covered cells (groups of several flows, and at every size some groups of one); an
// eighth of the flows are not completed (active, unprojected or both) and land anywhere, so a
// variant that ignores the flags writes into empty cells. Since 80% of the cells is more than
// one batch element's H W, flows of several batch elements share an (x, y) cell at every size and
// seed (pigeonhole), which is what makes legacy_xy_grouping's bug visible. Finally the flow order
// is shuffled, so no variant may rely on flows arriving grouped. Even seeds make one flow's omega
// 60 (the softmax's max shift), odd seeds put one on a rounding tie (the cell's round half to
// even): both below, at make_inputs.

#include "suites/energy_flow/aggregate.hpp"

#include <algorithm>
#include <numeric>

#include "phasebench/known_bugs.hpp"
#include "phasebench/rng.hpp"

namespace pb::suites::energy_flow {
namespace {

constexpr int kMaxSteps = 30;
constexpr double kBf16WeightsBudget = 1e-2;  // outputs_for says why (docs/energy_flow.md: the figures)

struct FlowDraft {
  int64_t cell = 0;  // b H W + iy W + ix
  bool active = false, projected = true;
};

uint64_t below(SeededGenerator& random, uint64_t bound) { return random.next_bits() % bound; }

template <typename T>
void shuffle(std::vector<T>& items, SeededGenerator& random) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(random, i)]);
}

/// Where each flow lands and whether it is completed (the top of this file).
std::vector<FlowDraft> place_flows(const ref::Lattice& lattice, SeededGenerator& random) {
  std::vector<int64_t> cells(lattice.cells());
  std::iota(cells.begin(), cells.end(), 0);
  shuffle(cells, random);
  const int64_t not_completed = std::max<int64_t>(kFewestNotCompleted, lattice.flows / kNotCompletedEvery);
  const int64_t completed = lattice.flows - not_completed;
  const int64_t covered = std::min<int64_t>(static_cast<int64_t>(kCoveredShare * lattice.cells()), completed - 3);
  std::vector<FlowDraft> drafts;
  for (int64_t i = 0; i < covered; ++i) drafts.push_back({cells[i]});
  for (int64_t i = covered; i < completed; ++i) drafts.push_back({cells[below(random, covered)]});
  for (int64_t i = 0; i < not_completed; ++i) {  // active and projected, inactive unprojected, active unprojected
    const int64_t kind = i % 3;
    drafts.push_back({static_cast<int64_t>(below(random, lattice.cells())), kind != 1, kind == 0});
  }
  shuffle(drafts, random);
  return drafts;
}

class Aggregate final : public Workload {
 public:
  std::string suite() const override { return "energy_flow"; }
  std::string name() const override { return "aggregate"; }
  std::string description() const override {
    return "completed energy flows grouped by (batch, surface cell), softmax of |E|/(1+dist)(1+0.1 steps) "
           "per group, energy-weighted sum into out[B, H*W]";
  }

  std::string shape(SizeClass size) const override {
    const ref::Lattice l = lattice(size);
    return std::to_string(l.width) + "x" + std::to_string(l.height) + "x" + std::to_string(l.depth) +
           " B=" + std::to_string(l.batch) + " F=" + std::to_string(l.flows);
  }

  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const ref::Lattice l = lattice(size);
    SeededGenerator random(seed, "energy_flow/aggregate/flows");
    const std::vector<FlowDraft> drafts = place_flows(l, random);
    HostArray batch = HostArray::zeros({l.flows}, ElementType::Int64), steps = batch, active = batch,
              projected = batch;
    HostArray position = HostArray::zeros({l.flows, 3});
    HostArray energy = uniform_array(seed, "energy_flow/aggregate/energy", {l.flows}, -2, 2);
    for (int64_t f = 0; f < l.flows; ++f) {
      const FlowDraft& d = drafts[f];
      const int64_t s = d.cell % l.plane(), ix = s % l.width, iy = s / l.width;
      const int64_t iz = static_cast<int64_t>(below(random, l.depth));
      batch.values[f] = static_cast<double>(d.cell / l.plane());
      position.values[3 * f] = round_to(ElementType::Float32, 2.0 * ix / (l.width - 1) - 1);
      position.values[3 * f + 1] = round_to(ElementType::Float32, 2.0 * iy / (l.height - 1) - 1);
      position.values[3 * f + 2] = round_to(ElementType::Float32, 2.0 * iz / l.depth - 1);
      steps.values[f] = static_cast<double>(below(random, kMaxSteps + 1));
      active.values[f] = d.active;
      projected.values[f] = d.projected;
    }
    if (seed % 2 == 0) make_first_completed_flow_dominant(drafts, position, steps, energy);
    else move_a_completed_flow_onto_a_tie(l, drafts, position);
    HostArray dims = HostArray::zeros({4}, ElementType::Int64);
    dims.values = {double(l.width), double(l.height), double(l.depth), double(l.batch)};
    return {{kBatch, std::move(batch)},     {kPosition, std::move(position)}, {kEnergy, std::move(energy)},
            {kSteps, std::move(steps)},     {kActive, std::move(active)},     {kProjected, std::move(projected)},
            {kLatticeDims, std::move(dims)}};
  }

  // Even seeds give the first completed flow omega = 100 (its energy scaled to that, sign kept):
  // in its group the softmax is e^0 = 1 for it and below e^-92 for the rest (random omega <= 8),
  // while a softmax that does not subtract the max overflows, e^100 > FLT_MAX = e^88.7 (and one
  // that adds it, e^200). Random inputs never reach the overflow the max is subtracted against, and
  // at omega = 60 neither does a variant that forgets to subtract it (e^60 fits in fp32): both pass
  // a random-input run. Odd seeds keep every energy as drawn.
  static void make_first_completed_flow_dominant(const std::vector<FlowDraft>& drafts, const HostArray& position,
                                                 const HostArray& steps, HostArray& energy) {
    constexpr double kDominantWeight = 100;
    for (size_t f = 0; f < drafts.size(); ++f) {
      if (!ref::is_completed(drafts[f].active, drafts[f].projected)) continue;
      const double per_unit_energy = ref::flow_weight(1.0, position.values[3 * f + 2], steps.values[f]);
      const double sign = energy.values[f] < 0 ? -1 : 1;
      energy.values[f] = round_to(ElementType::Float32, sign * kDominantWeight / per_unit_energy);
      return;
    }
  }

  // Odd seeds move one completed flow, in x, from its lattice point ix (even) to exactly halfway to
  // ix + 1: the original rounds that tie to the even ix (torch.round), so the flow stays in its cell,
  // while a variant rounding half away from zero (std::round) moves it to ix + 1: two cells differ.
  // Only where the tie is exact in fp32 and in fp64, (x + 1) / 2 (W - 1) computing to ix + 1/2 with
  // no rounding: W - 1 = 4 at the small size (x = -0.75 or 0.25). At the default and large sizes
  // (W - 1 = 27 and 99) no tie next to an even ix is representable, so their inputs have none.
  static void move_a_completed_flow_onto_a_tie(const ref::Lattice& l, const std::vector<FlowDraft>& drafts,
                                               HostArray& position) {
    for (size_t f = 0; f < drafts.size(); ++f) {
      const int64_t ix = drafts[f].cell % l.plane() % l.width;
      if (!ref::is_completed(drafts[f].active, drafts[f].projected) || ix % 2 != 0 || ix + 1 >= l.width) continue;
      const double tie = round_to(ElementType::Float32, (2.0 * ix + 1) / (l.width - 1) - 1);
      if (!is_exact_tie(static_cast<float>(tie), l.width, ix) || !is_exact_tie(tie, l.width, ix)) continue;
      position.values[3 * f] = tie;
      return;
    }
  }

  /// Whether the reference's scaling of x, in Scalar, lands exactly on ix + 1/2.
  template <typename Scalar>
  static bool is_exact_tie(Scalar x, int width, int64_t ix) {
    return (x + Scalar(1)) * Scalar(0.5) * Scalar(width - 1) == Scalar(ix) + Scalar(0.5);
  }

  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    const ref::Lattice l = lattice_of(inputs);
    HostArray out = HostArray::zeros({l.batch, l.plane()}, ElementType::Float64);
    out.values = ref::aggregate(load_flows<double>(inputs), l);
    return {{kAggregated, std::move(out)}};
  }

  std::vector<OutputSpec> outputs() const override {
    return {{kAggregated, 1e-5,
             "a softmax-weighted mean of a group's few energies: fp32 exp, a positive sum and one division, a "
             "few ulp in any order; the fp32 default"}};
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kBaseline,
         "the loop version: completed flows collected one by one (a host read of each flow's "
         "position), grouped in a hash map by (b, s), each group's tensors stacked and softmaxed"},
        PhaseInfo(1, kMaskCollection,
                  "completed flows and their keys from masks (one compaction, one host read of the keys); "
                  "grouping and per-group softmax as before. Seed: 50-70% less time collecting flows")
            .claims(2.0, 1 / 0.3),
        PhaseInfo(2, kSegmentSoftmax,
                  "one segment softmax over all groups (max, exp, sum + 1e-12, by scatter or by a sort) "
                  "and one index_add; no host read. Seed: 60-80% less time aggregating")
            .claims(2.5, 5.0),
        {3, kNoCompaction,
         "beyond the seed: no compaction (nonzero makes a GPU wait for the count): flows not "
         "completed go to a spare cell, dropped at the end; each cell's sum divided once"},
        {4, kLegacyXyGrouping,
         "the original loop version as it was, bug included (baseline's loops with the bug's key): "
         "expected to be CAUGHT by the check, never timed (legacy_bug below)"},
        PhaseInfo(5, kBf16Weights,
                  "approximate, the original's default configuration since a commit after the seed "
                  "(collection_use_mixed_precision): the softmax weights in bf16 (omega read as bf16, fp32 "
                  "max, exp and sum, each weight rounded to bf16), the weighted sum in fp32")
            .approximate()
            .needing({Capability::Bf16}),
        PhaseInfo(6, kOwnedCells,
                  "beyond the seed, exact (fp32 weights again): no groups; each thread owns a block of cells, "
                  "the completed flows are partitioned by owner in flow order, and each owner computes its "
                  "block (max, exp(omega - max), the sums, one division per cell); no atomics, sort or allocation")
            .turning_off({kBf16Weights}),
        {7, kVectorizedFlows,
         "beyond the seed, exact, host cores: no partition; each thread forms the keys and omegas of "
         "its slice of the flows 16 at a time (SIMD lanes) and keeps each cell's max, then its sums "
         "(a vector exp), in its own copy of the cells; each owner merges its block of the copies"},
    };
  }

  std::vector<OutputSpec> outputs_for(int phase, SizeClass /*size*/) const override {
    if (!derive_phase_plan(phases(), phase, {Capability::Bf16}).has(kBf16Weights)) return outputs();
    return {{kAggregated, kBf16WeightsBudget,
             "bf16 weights: omega read as bf16, then 2^-9 per weight; the bf16 default, with a margin over the "
             "worst measured (docs/energy_flow.md)"}};
  }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"). A flop is one add, subtract,
  // multiply, divide, round, clamp, compare, abs, min or exp. Per flow: the completed test (2);
  // per completed flow: the key (x and y: +1, * 0.5, * (W-1), round, two clamps = 6 each; s and
  // b H W + s: 3), omega (z + 1, z - 1, two abs, min, 1 +, 1 /, |E|, * , 0.1 steps, 1 +, * : 12),
  // the group's max (1), exp(omega - max) (2), its sum (1), w E and its sum (2), one division per
  // flow's weight (1): 35. Bytes, fp32 with int64 batch and steps and one byte per flag: read
  // 8 + 12 + 4 + 8 + 2 = 34 bytes per flow, write 4 per output cell.
  // Default (50,000 flows, 43,750 completed, 12,544 cells): 1.63 MFLOP, 1.75 MB.
  WorkEstimate work(SizeClass size) const override {
    const ref::Lattice l = lattice(size);
    const double flows = static_cast<double>(l.flows);
    const double completed = flows - std::max<double>(3, l.flows / kNotCompletedEvery);
    return {2 * flows + 35 * completed, 34 * flows + 4.0 * l.cells()};
  }

  // The grouping's least work: however a variant groups the flows, each completed flow
  // must reach its own output cell, an address no prefetcher predicts (the flows come shuffled), and
  // every output cell is written; the bytes (1.75 MB) and flops price that at microseconds. The
  // chain is that work alone, keys and values formed outside the timing: the cells zeroed, then one
  // read-modify-write per completed flow (cell += omega), in flow order on one thread. A row may
  // split it over its threads (each its own copy of the cells, or its own cells), so the floor is
  // one thread's time over the run's threads. Not declared at the large size, where the probe's
  // thousand calls of 875,000 updates would take seconds of every run.
  std::optional<LatencyChain> latency_chain(SizeClass size) const override {
    if (size == SizeClass::Large) return std::nullopt;
    LatencyChain chain;
    chain.what = "one read-modify-write of its output cell per completed flow (the cells zeroed first), flows in "
                 "their shuffled order, no exp or max: the scatter no grouping avoids";
    chain.bound = "scatter";
    chain.splits_over_threads = true;
    chain.prepare = [](const ArrayMap& inputs) -> std::function<double()> {
      const ref::Lattice l = lattice_of(inputs);
      const ref::Flows<float> flows = load_flows<float>(inputs);
      std::vector<int32_t> keys;
      std::vector<float> values;
      for (int64_t f = 0; f < flows.count(); ++f)
        if (ref::is_completed(flows.active[f], flows.projected[f])) {
          keys.push_back(static_cast<int32_t>(ref::output_cell(flows, f, l)));
          values.push_back(ref::flow_weight(flows.energy[f], flows.z[f], static_cast<float>(flows.steps[f])));
        }
      return [keys = std::move(keys), values = std::move(values), cells = std::vector<float>(l.cells())]() mutable {
        std::fill(cells.begin(), cells.end(), 0.0f);
        for (size_t k = 0; k < keys.size(); ++k) cells[keys[k]] += values[k];
        return static_cast<double>(cells[keys.front()] + cells[keys.back()]);
      };
    };
    return chain;
  }

  // fp64 check: the inputs (8 values per flow), the fp64 flows and their groups (~10 per flow),
  // the reference and the variant's output.
  double memory_bytes(SizeClass size) const override {
    const ref::Lattice l = lattice(size);
    return 8.0 * 18 * l.flows + 8.0 * 2 * l.cells();
  }
};

const WorkloadRegistration registration{std::make_shared<Aggregate>()};
const KnownBugRegistration legacy_bug{
    kWorkload, kLegacyXyGrouping,
    "legacy_xy_grouping (the original energy_lattice.py loop): groups keyed by the (x, y) cell alone, so "
    "flows of different batch elements in one cell are softmaxed together and written to the first "
    "flow's batch"};

}  // namespace
}  // namespace pb::suites::energy_flow

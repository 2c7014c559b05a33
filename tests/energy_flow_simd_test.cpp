// energy_flow/aggregate, Kokkos' vectorized_flows (phase 7, optimized/energy_flow/aggregate_simd_bodies.hpp)
// on the host, pass by pass as the Kokkos kernels run them: the lattice index against the
// reference's at ties, lattice points, the edges and past them; omega against the reference's; the
// keys of a block (completed, not completed, the padding past the last flow); the slices and the
// copies' layout; the four passes against the fp64 oracle at 1, 2, 3 and 5 copies with every
// scratch value poisoned first and the slices run in reverse; the same bits run after run; and the
// phase through verify.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "optimized/energy_flow/aggregate_simd_bodies.hpp"
#include "phasebench/check.hpp"
#include "process.hpp"
#include "suites/energy_flow/aggregate.hpp"

// The header's functions take and return 64-byte vectors; they are always inlined, so the ABI GCC
// warns about at their call sites (such a vector passed without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb {
namespace {

namespace ef = pb::suites::energy_flow;
namespace ref = ef::ref;
namespace body = pb::optimized::energy_flow;
namespace simd = body::simd;
using simd::kLanes;
using simd::Lanes;
using simd::LaneInts;

/// lattice_index_lanes of `values` (16 at a time) against ref::lattice_index<float>, one by one.
void expect_reference_indices(const std::vector<float>& values, int extent) {
  for (size_t first = 0; first < values.size(); first += kLanes) {
    Lanes lanes{};
    for (int l = 0; l < kLanes; ++l) lanes[l] = values[std::min(first + l, values.size() - 1)];
    const LaneInts index = simd::lattice_index_lanes(lanes, extent);
    for (int l = 0; l < kLanes; ++l)
      ASSERT_EQ(index[l], ref::lattice_index(lanes[l], extent))
          << "x = " << lanes[l] << " (" << std::hexfloat << lanes[l] << std::defaultfloat << "), extent " << extent;
  }
}

// Every tie (x + 1)/2 (extent - 1) = k + 1/2 that fp32 holds exactly, rounding to the even k both
// ways; the floats next to each tie and to each lattice point; -1, 1 and beyond; random positions.
TEST(EnergyFlowVectorized, LatticeIndexIsTheReferencesAtTiesEdgesAndBeyond) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> position(-1.0f, 1.0f), wide(-40.0f, 40.0f);
  for (int extent : {1, 2, 4, 5, 28, 100}) {
    std::vector<float> values{-1.0f, 1.0f, 0.0f, -0.0f, -1.5f, 1.5f, -3e9f, 3e9f, -1e30f, 1e30f};
    for (int k = 0; 2 * k <= 2 * (extent - 1); ++k)
      for (double offset : {0.0, 0.5}) {
        const float x = static_cast<float>(2.0 * (k + offset) / std::max(extent - 1, 1) - 1.0);
        for (float v : {x, std::nextafter(x, -2.0f), std::nextafter(x, 2.0f)}) values.push_back(v);
      }
    for (int i = 0; i < 4000; ++i) values.push_back(i % 4 == 0 ? wide(rng) : position(rng));
    expect_reference_indices(values, extent);
  }
  // The ties themselves at the small size's W - 1 = 4, where they are exact: -0.75 -> 0, 0.25 -> 2.
  Lanes ties{};
  ties[0] = -0.75f, ties[1] = 0.25f, ties[2] = -0.25f, ties[3] = 0.75f;
  const LaneInts tied = simd::lattice_index_lanes(ties, 5);
  EXPECT_EQ(tied[0], 0);
  EXPECT_EQ(tied[1], 2);
  EXPECT_EQ(tied[2], 2);  // 1.5 -> 2
  EXPECT_EQ(tied[3], 4);  // 3.5 -> 4
}

// omega within 2 ulp of the reference's (the vector code may contract 1 + 0.1 steps into an FMA).
TEST(EnergyFlowVectorized, OmegaIsTheReferencesWithinTwoUlp) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> energy(-2.0f, 2.0f), z(-1.0f, 1.0f);
  std::uniform_int_distribution<int> steps(0, 30);
  for (int trial = 0; trial < 500; ++trial) {
    Lanes e, zs, s;
    for (int l = 0; l < kLanes; ++l) e[l] = energy(rng), zs[l] = z(rng), s[l] = static_cast<float>(steps(rng));
    if (trial == 0) e[0] = 0.0f, zs[1] = -1.0f, zs[2] = 1.0f, zs[3] = 0.0f, e[4] = -0.0f;
    const Lanes omega = simd::flow_weight_lanes(e, zs, s);
    for (int l = 0; l < kLanes; ++l) {
      const float expected = ref::flow_weight(e[l], zs[l], s[l]);
      ASSERT_LE(std::fabs(omega[l] - expected), 2 * std::numeric_limits<float>::epsilon() * std::fabs(expected))
          << "E " << e[l] << ", z " << zs[l] << ", steps " << s[l];
    }
  }
}

struct HostFlows {
  ref::Lattice lattice;
  ref::Flows<float> flows;
  body::FlowPointers pointers() const {
    return {flows.batch.data(), flows.steps.data(), flows.x.data(), flows.y.data(),
            flows.z.data(),     flows.energy.data(), flows.active.data(), flows.projected.data()};
  }
};
HostFlows host_flows(const ArrayMap& inputs) { return {ef::lattice_of(inputs), ef::load_flows<float>(inputs)}; }

// A block's keys: a completed flow's output cell as the scalar body has it, every other flow and
// the padding past the last flow (the small size's 37 flows end 5 into their third block) the
// spare cell; omegas as omega_body's.
TEST(EnergyFlowVectorized, BlockKeysAreTheCompletedCellsAndTheSpareCellOtherwise) {
  const auto workload = find_workload(ef::kWorkload);
  for (SizeClass size : {SizeClass::Small, SizeClass::Default}) {
    const HostFlows host = host_flows(workload->make_inputs(size, 1));
    const body::FlowPointers p = host.pointers();
    const ref::Lattice& l = host.lattice;
    const simd::Layout layout = simd::make_layout(l.width, l.height, l.batch, l.flows, 2);
    int spare = 0, completed = 0;
    for (int64_t block = 0; block < layout.blocks(); ++block) {
      const simd::FlowLanes lanes = simd::flow_lanes(p, layout, block);
      for (int l16 = 0; l16 < kLanes; ++l16) {
        const int64_t i = block * kLanes + l16;
        if (i >= l.flows) {
          ASSERT_EQ(lanes.key[l16], l.cells()) << "padding lane " << l16 << " of the last block";
          continue;
        }
        const int64_t cell = body::completed_cell_body(i, p, l.width, l.height);
        ASSERT_EQ(lanes.key[l16], cell < 0 ? l.cells() : cell) << "flow " << i;
        ASSERT_LE(std::fabs(lanes.omega[l16] - body::omega_body(i, p)),
                  2 * std::numeric_limits<float>::epsilon() * std::fabs(body::omega_body(i, p)));
        ++(cell < 0 ? spare : completed);
      }
    }
    EXPECT_GT(spare, 0) << to_string(size);  // the inputs have flows of every kind
    EXPECT_GT(completed, spare) << to_string(size);
  }
}

// The slices take every block once, in order, each a share rounded either way; the copies of the
// cells hold the spare cell and start on a cache line of their own.
TEST(EnergyFlowVectorized, SlicesCoverEveryBlockOnceAndCopiesDoNotShareALine) {
  for (int64_t flows : {1, 15, 16, 17, 37, 50'000, 1'000'000})
    for (int64_t slices : {1, 2, 3, 7, 64}) {
      const simd::Layout layout = simd::make_layout(5, 4, 2, flows, slices);
      int64_t next = 0;
      for (int64_t s = 0; s < slices; ++s) {
        const simd::BlockRange range = simd::slice_blocks(layout, s, slices);
        ASSERT_EQ(range.first, next) << flows << " flows, slice " << s << " of " << slices;
        ASSERT_LE(range.last - range.first, (layout.blocks() + slices - 1) / slices);
        next = range.last;
      }
      ASSERT_EQ(next, layout.blocks());
      ASSERT_EQ(layout.blocks() * kLanes - flows < kLanes, true);
      ASSERT_GE(layout.copy_stride, layout.cells + 1);
      ASSERT_EQ(layout.copy_stride % (64 / sizeof(float)), 0);
    }
  // The stride is the least multiple of a line that holds the cells and the spare one: 15 cells
  // (B = 1, 5 x 3) and the spare fill one line exactly; 16 cells need two.
  for (int batch : {1, 2, 3, 16}) {
    const simd::Layout layout = simd::make_layout(5, 3, batch, 100, 2);
    ASSERT_EQ(layout.copy_stride, (layout.cells + 16) / 16 * 16) << layout.cells << " cells";
  }
  EXPECT_EQ(simd::make_layout(5, 3, 1, 100, 2).copy_stride, 16);
  EXPECT_EQ(simd::make_layout(4, 4, 1, 100, 2).copy_stride, 32);
}

/// The scratch of the four passes, every value poisoned (NaN, keys -1), with guards on both sides:
/// one copy of the cells before the layout's copies and one after (+inf maxima, NaN sums), a key
/// and an omega past the blocks', a cell past the outputs. A pass that read a guard would change
/// the result; one that wrote one is seen by `guards_intact`.
constexpr float kGuardCell = 4321.0f;  // not NaN: a write from the spare cell's NaN sums shows
struct Scratch {
  simd::Layout layout;
  body::CellBlocks blocks;
  std::vector<int32_t> keys;
  std::vector<float> omegas, largest, sums, out;
  Scratch(const ref::Lattice& l, int64_t copies)
      : layout(simd::make_layout(l.width, l.height, l.batch, l.flows, copies)),
        blocks(body::cell_blocks(l.cells(), copies)),
        keys(layout.blocks() * kLanes + 1, -1),
        omegas(keys.size(), nan()),
        largest((copies + 2) * layout.copy_stride, nan()),
        sums((copies + 2) * 2 * layout.copy_stride, nan()),
        out(l.cells() + 1, nan()) {
    std::fill(largest.begin(), largest.begin() + layout.copy_stride, inf());
    std::fill(largest.end() - layout.copy_stride, largest.end(), inf());
    out.back() = kGuardCell;
  }
  static float nan() { return std::numeric_limits<float>::quiet_NaN(); }
  static float inf() { return std::numeric_limits<float>::infinity(); }
  // The layout's copies start after the guard copy.
  float* largest_copies() { return largest.data() + layout.copy_stride; }
  float* sum_copies() { return sums.data() + 2 * layout.copy_stride; }
  bool guards_intact() const {
    const auto all = [](auto first, auto last, auto keep) { return std::all_of(first, last, keep); };
    const auto is_inf = [](float v) { return v == inf(); };
    const auto is_nan = [](float v) { return std::isnan(v); };
    const int64_t stride = layout.copy_stride;
    return out.back() == kGuardCell && keys.back() == -1 && std::isnan(omegas.back()) &&
           all(largest.begin(), largest.begin() + stride, is_inf) && all(largest.end() - stride, largest.end(), is_inf) &&
           all(sums.begin(), sums.begin() + 2 * stride, is_nan) && all(sums.end() - 2 * stride, sums.end(), is_nan);
  }
};

/// The four passes as the Kokkos kernels run them, slices and owners in reverse order (no pass may
/// depend on which thread runs first). Returns the outputs (the cells, then the guard cell).
Scratch vectorized_aggregate(const HostFlows& host, int64_t copies) {
  Scratch scratch(host.lattice, copies);
  const simd::Layout& layout = scratch.layout;
  const body::FlowPointers p = host.pointers();
  for (int64_t s = copies - 1; s >= 0; --s)
    simd::keys_and_maxima_of(p, layout, s, scratch.keys.data(), scratch.omegas.data(), scratch.largest_copies());
  for (int64_t o = copies - 1; o >= 0; --o)
    simd::merge_maxima_of(layout, scratch.blocks, o, scratch.largest_copies(), scratch.sum_copies());
  for (int64_t s = copies - 1; s >= 0; --s)
    simd::sums_of(p, layout, s, scratch.keys.data(), scratch.omegas.data(), scratch.largest_copies(),
                  scratch.sum_copies());
  for (int64_t o = copies - 1; o >= 0; --o)
    simd::outputs_of(layout, scratch.blocks, o, scratch.sum_copies(), scratch.out.data());
  return scratch;
}

// Each work item touches only its own: slice s its blocks' keys and omegas and its copy of the
// maxima (pass 1) or of the sums (pass 3); owner o its block of cells, in copy 0's maxima and in
// every copy's sums (pass 2) and in the outputs (pass 4). Run alone on poisoned scratch, every
// value outside its own must keep its poison (NaN, or -1 for the keys).
TEST(EnergyFlowVectorized, EachWorkItemTouchesOnlyItsOwnSliceOrBlock) {
  const auto workload = find_workload(ef::kWorkload);
  const HostFlows host = host_flows(workload->make_inputs(SizeClass::Small, 2));
  const body::FlowPointers p = host.pointers();
  const int64_t copies = 3;
  const auto untouched = [](const std::vector<float>& v, int64_t first, int64_t last) {  // NaN, or a guard's +inf
    for (int64_t i = first; i < last; ++i)
      if (!std::isnan(v[i]) && v[i] != Scratch::inf()) return false;
    return true;
  };
  // ASSERTs throughout: a slip into a guard at one item lands outside the arrays at the next.
  for (int64_t item = 0; item < copies; ++item) {
    Scratch one(host.lattice, copies);
    const simd::Layout& layout = one.layout;
    const int64_t stride = layout.copy_stride, guard = stride;  // offsets in the arrays, past the front guard
    const simd::BlockRange own = simd::slice_blocks(layout, item, copies);
    simd::keys_and_maxima_of(p, layout, item, one.keys.data(), one.omegas.data(), one.largest_copies());
    for (int64_t i = 0; i < static_cast<int64_t>(one.keys.size()); ++i)
      ASSERT_EQ(one.keys[i] == -1, i < own.first * kLanes || i >= own.last * kLanes) << "slice " << item << ", key " << i;
    ASSERT_TRUE(untouched(one.largest, 0, guard + item * stride)) << "slice " << item << " wrote an earlier copy";
    ASSERT_TRUE(untouched(one.largest, guard + (item + 1) * stride, one.largest.size())) << "slice " << item;
    ASSERT_FALSE(untouched(one.largest, guard + item * stride, guard + item * stride + layout.cells)) << item;

    Scratch merged(host.lattice, copies);
    simd::merge_maxima_of(layout, merged.blocks, item, merged.largest_copies(), merged.sum_copies());
    const int64_t first = merged.blocks.first(item), last = merged.blocks.first(item + 1);
    ASSERT_TRUE(untouched(merged.largest, 0, guard + first) && untouched(merged.largest, guard + last, merged.largest.size()))
        << "owner " << item << " merged outside cells [" << first << ", " << last << ")";
    for (int64_t copy = 0; copy < copies; ++copy) {
      const int64_t sums = 2 * guard + copy * 2 * stride;
      ASSERT_TRUE(untouched(merged.sums, sums + 2 * layout.cells, sums + 2 * stride)) << "owner " << item;
      for (int64_t c = 0; c < layout.cells; ++c)
        ASSERT_EQ(std::isnan(merged.sums[sums + 2 * c]), c < first || c >= last) << "owner " << item << ", copy " << copy << ", cell " << c;
    }

    Scratch summed = vectorized_aggregate(host, copies);  // every pass, then slice `item`'s sums once more:
    std::vector<float> before = summed.sums;                // only its own copy may change
    simd::sums_of(p, layout, item, summed.keys.data(), summed.omegas.data(), summed.largest_copies(), summed.sum_copies());
    for (int64_t i = 0; i < static_cast<int64_t>(before.size()); ++i) {
      const bool own_copy = i >= 2 * guard + item * 2 * stride && i < 2 * guard + (item + 1) * 2 * stride;
      if (!own_copy) ASSERT_TRUE(std::memcmp(&before[i], &summed.sums[i], sizeof(float)) == 0) << "slice " << item << ", sum " << i;
    }

    Scratch written(host.lattice, copies);
    std::fill(written.sums.begin() + 2 * guard, written.sums.end() - 2 * guard, 1.0f);
    simd::outputs_of(layout, written.blocks, item, written.sum_copies(), written.out.data());
    for (int64_t c = 0; c < layout.cells; ++c)
      ASSERT_EQ(std::isnan(written.out[c]), c < first || c >= last) << "owner " << item << ", output " << c;
    EXPECT_EQ(written.out.back(), kGuardCell);
  }
}

// Seeds 1 (a tie at the small size) and 2 (omega 100 in one group: without the max, e^100
// overflows); 1e-6 as the owned blocks' test: a few ulp of fp32 (the phase's tolerance is 1e-5).
TEST(EnergyFlowVectorized, ThePassesComputeTheReferenceAtAnyNumberOfCopies) {
  const auto workload = find_workload(ef::kWorkload);
  for (SizeClass size : {SizeClass::Small, SizeClass::Default})
    for (uint64_t seed : {1, 2})
      for (int64_t copies : {1, 2, 3, 5}) {
        const ArrayMap inputs = workload->make_inputs(size, seed);
        const Scratch run = vectorized_aggregate(host_flows(inputs), copies);
        const std::vector<double> produced(run.out.begin(), run.out.end() - 1);
        const std::string where = to_string(size) + " seed " + std::to_string(seed) + ", " + std::to_string(copies) + " copies";
        EXPECT_LT(relative_l2_error(produced, workload->reference_fp64(inputs).at(ef::kAggregated).values), 1e-6) << where;
        // Stop at the first broken guard: with more copies the same slip lands outside the arrays.
        ASSERT_TRUE(run.guards_intact()) << where << ": a pass wrote past its arrays";
      }
}

// The summation order depends on the slices alone: the same copies give the same bits every time.
TEST(EnergyFlowVectorized, TheSameCopiesGiveTheSameBits) {
  const auto workload = find_workload(ef::kWorkload);
  const HostFlows host = host_flows(workload->make_inputs(SizeClass::Default, 3));
  const std::vector<float> first = vectorized_aggregate(host, 2).out;
  const std::vector<float> again = vectorized_aggregate(host, 2).out;
  ASSERT_FALSE(std::isnan(first.front()));
  ASSERT_EQ(first.size(), again.size());
  EXPECT_EQ(std::memcmp(first.data(), again.data(), (first.size() - 1) * sizeof(float)), 0);
}

TEST(EnergyFlowVectorized, VerifyPassesOnTheSmallSizesSeeds) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  const testing::ProcessResult verified =
      testing::run_phasebench("verify --size small --seeds 3 --filter 'energy_flow/aggregate/kokkos/vectorized_flows'");
  if (verified.output.find("runs kernels on a device") != std::string::npos) GTEST_SKIP() << verified.output;
  EXPECT_NE(verified.output.find("verify: 3 passed, 0 failed"), std::string::npos) << verified.output;
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
}

}  // namespace
}  // namespace pb

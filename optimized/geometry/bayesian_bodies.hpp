#pragma once
// geometry/bayesian's vectorized passes on raw pointers, over runs of complex values: the weights
// and Z's terms (pass 1), then the posterior and the update (pass 2), as vectorized_weights runs
// them, and pass 2 with both outputs written by non-temporal stores, as streamed_stores runs it.
// The Kokkos variant inlines them into its ISA clones (bayesian-kokkos.cpp);
// tests/geometry_bayesian_bodies_test.cpp runs them on the host. Math:
// reference/geometry/bayesian.hpp, whose per-value functions both passes use in its order.
//
// Why non-temporal stores (docs/geometry.md, "The limit of bayesian"): pass 2 writes 16 bytes per
// complex value (posterior and Lambda) that nothing reads again in the iteration; written by
// ordinary stores, each of their lines is first read (16 bytes more), and the 16 MB they leave in
// the L3 at the default size push out F, E and the weights (20 MB), which pass 1 of the next
// iteration reads again.

#include <cstdint>

#include "optimized/common/integer_math.hpp"
#include "optimized/common/simd_math.hpp"
#include "optimized/common/streamed_stores.hpp"
#include "phasebench/host_device.hpp"
#include "reference/geometry/bayesian.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // vectors by value, always inlined into one ISA clone
#endif

namespace pb::optimized::geometry::bayesian_runs {

namespace ref = pb::reference::geometry;
using pb::optimized::simd::exp_nonpositive;

// vectorized_weights splits the field into kRuns runs (one Kokkos index each: enough for every
// thread of a large machine to get several), each a multiple of kLanes values long but the last;
// within a run Z's terms go to kLanes float partial sums (one vector register of AVX-512) per block
// of kBlock values, and the blocks' sums are added in double, as the other phases add every term.
// At the small size (168 values) that is 11 runs of 16, the last one 8 long, so `verify --size
// small` checks the bounds.
constexpr int64_t kRuns = 64;
constexpr int kLanes = 16;
constexpr int64_t kBlock = 64 * kLanes;

/// How long each run is: count / kRuns rounded up to whole lanes.
inline int64_t run_length_of(int64_t count) {
  const int64_t lanes = (count + kRuns * kLanes - 1) / (kRuns * kLanes);
  return lanes * kLanes;
}

/// Where run `run` of runs of `length` ends in a field of `count` complex values.
PB_HOST_DEVICE inline int64_t run_end(int64_t run, int64_t length, int64_t count) {
  return (run + 1) * length < count ? (run + 1) * length : count;
}

/// The weight of complex value k.
PB_HOST_DEVICE inline float vectorized_weight(const float* f, const float* e, int64_t k) {
  const float d_re = f[2 * k] - e[2 * k], d_im = f[2 * k + 1] - e[2 * k + 1];
  return exp_nonpositive(-ref::squared_modulus(d_re, d_im) / float(ref::kTau));
}

/// Stores the weights of `groups` whole groups of kLanes values from value `first` and adds their
/// w |F|^2 to `sum`: in kLanes float lanes (at most kBlock / kLanes = 64 terms each when groups is at
/// most a block's, so a lane's float sum is good to 64 ulp at worst, ~4e-6), then the lanes in double.
PB_HOST_DEVICE inline void add_weights_of_groups(const float* f, const float* e, float* w, int64_t first,
                                                 int64_t groups, double& sum) {
  float lanes[kLanes] = {};
  for (int64_t group = 0; group < groups; ++group) {
    const int64_t k = first + group * kLanes;
    PB_IVDEP  // w is an array of its own
    for (int lane = 0; lane < kLanes; ++lane) {
      w[k + lane] = vectorized_weight(f, e, k + lane);
      lanes[lane] += w[k + lane] * ref::squared_modulus(f[2 * (k + lane)], f[2 * (k + lane) + 1]);
    }
  }
  for (float lane : lanes) sum += double(lane);
}

/// Pass 1: stores the weights of values [begin, end) and returns their sum of w |F|^2, per block of
/// kBlock values in float lanes, the blocks' sums in double. Every loop runs a count known before it
/// starts (the whole blocks, then the last block's whole groups, then the values after the last
/// whole group), so that no bound depends on an index the body moves; none runs past the range.
PB_HOST_DEVICE inline double weights_of_run(const float* f, const float* e, float* w, int64_t begin, int64_t end) {
  constexpr int64_t kGroupsPerBlock = kBlock / kLanes;
  const int64_t groups = (end - begin) / kLanes;
  const int64_t whole_blocks = groups / kGroupsPerBlock;
  double sum = 0;
  for (int64_t block = 0; block < whole_blocks; ++block)
    add_weights_of_groups(f, e, w, begin + block * kBlock, kGroupsPerBlock, sum);
  add_weights_of_groups(f, e, w, begin + whole_blocks * kBlock, groups - whole_blocks * kGroupsPerBlock, sum);
  for (int64_t k = begin + groups * kLanes; k < end; ++k) {
    w[k] = vectorized_weight(f, e, k);
    sum += double(w[k] * ref::squared_modulus(f[2 * k], f[2 * k + 1]));
  }
  return sum;
}

/// Pass 2 of vectorized_weights: the posterior and the update of values [begin, end), one
/// branch-free loop per branch.
PB_HOST_DEVICE inline void posterior_update_of_run(const float* f, const float* w, float z, float* posterior,
                                                   float* update, int64_t begin, int64_t end) {
  if (ref::normalizable(z)) {
    PB_IVDEP  // the posterior and the update are arrays of their own
    for (int64_t k = begin; k < end; ++k) {  // real part, then imaginary part
      const float real = ref::posterior_component(w[k], f[2 * k], z, true);
      const float imaginary = ref::posterior_component(w[k], f[2 * k + 1], z, true);
      posterior[2 * k] = real;
      posterior[2 * k + 1] = imaginary;
      update[2 * k] = ref::update_component(real, f[2 * k]);
      update[2 * k + 1] = ref::update_component(imaginary, f[2 * k + 1]);
    }
  } else {
    for (int64_t i = 2 * begin; i < 2 * end; ++i) {
      posterior[i] = f[i];
      update[i] = ref::update_component(f[i], f[i]);
    }
  }
}

// ---- streamed_stores ----------------------------------------------------------------------------

using streaming::Block;
using streaming::kBlockFloats;
using streaming::StreamedPart;

constexpr int64_t kValuesPerBlock = kBlockFloats / 2;  // complex values: one 64-byte line per output

/// The part of a range's outputs that goes out by non-temporal stores: streamed_part of the
/// posterior's floats, where the update's floats are aligned the same way (else nothing: a block
/// must start at the same float in both).
inline StreamedPart streamed_part_of_both(const float* posterior, const float* update, int64_t floats) {
  const StreamedPart part = streaming::streamed_part(posterior, floats);
  const StreamedPart update_part = streaming::streamed_part(update, floats);
  if (update_part.begin != part.begin || update_part.end != part.end) return {};
  return part;
}

/// The posterior and the update of the real index i (complex value i / 2), as
/// posterior_update_of_run writes them.
PB_HOST_DEVICE inline void posterior_update_float(const float* f, const float* w, float z, bool normalize,
                                                  float* posterior, float* update, int64_t i) {
  posterior[i] = ref::posterior_component(w[i / 2], f[i], z, normalize);
  update[i] = ref::update_component(posterior[i], f[i]);
}

#ifdef PB_GEOMETRY_STREAMING_STORES
/// Pass 2 of streamed_stores over values [begin, end), one work item's range: the values of
/// posterior_update_of_run (the reference's operations in its order, lane by lane), the streamed
/// part 8 complex values at a time by non-temporal stores, the floats before and after it by
/// ordinary ones; then the fence that makes them visible.
__attribute__((always_inline)) inline void streamed_posterior_update(const float* f, const float* w, float z,
                                                                     float* posterior, float* update, int64_t begin,
                                                                     int64_t end) {
  const int64_t floats = 2 * (end - begin);
  f += 2 * begin;
  w += begin;
  posterior += 2 * begin;
  update += 2 * begin;
  const bool normalize = ref::normalizable(z);
  const float denominator = z + float(ref::kNormalizationEps);
  const StreamedPart part = streamed_part_of_both(posterior, update, floats);
  for (int64_t i = 0; i < part.begin; ++i) posterior_update_float(f, w, z, normalize, posterior, update, i);
  for (int64_t i = part.begin; i < part.end; i += kBlockFloats) {
    const Block field = streaming::load_block(f + i);
    const Block value = normalize ? streaming::spread_to_complex_lanes(w + i / 2) * field / denominator : field;
    streaming::stream_block(posterior + i, value);
    streaming::stream_block(update + i, float(ref::kLambda) * (value - field));
  }
  for (int64_t i = part.end; i < floats; ++i) posterior_update_float(f, w, z, normalize, posterior, update, i);
  _mm_sfence();
}
#endif

/// The complex values of work item `item` of `items`: contiguous, in order, starting on a whole
/// block of kValuesPerBlock (so that no two items write parts of one output line), sizes within
/// one block.
inline streaming::ItemRange values_of_item(int64_t item, int64_t items, int64_t count) {
  const int64_t blocks = ceil_div(count, kValuesPerBlock);
  const streaming::ItemRange range = streaming::range_of_item(item, items, blocks);
  const auto clamp = [count](int64_t value) { return value < count ? value : count; };
  return {clamp(range.first * kValuesPerBlock), clamp(range.last * kValuesPerBlock)};
}

}  // namespace pb::optimized::geometry::bayesian_runs

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

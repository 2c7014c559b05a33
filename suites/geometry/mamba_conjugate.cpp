// geometry/mamba_conjugate: definition (sizes, inputs, outputs, tolerance, phases, declared work).
// Reference: reference/geometry/mamba_conjugate.hpp. Variants:
// optimized/geometry/mamba_conjugate-<backend>.*
//
// The seed (001, item 3) claims no speedup, only that the in-place negation "avoids a temporary
// tensor allocation": the claim is read off bytes_alloc_per_iter, which every backend counts
// (docs/geometry.md lists them per phase).

#include "suites/geometry/mamba_conjugate.hpp"

#include "phasebench/rng.hpp"

namespace pb::suites::geometry::mamba_conjugate {
namespace {

constexpr int C = ref::kStateComponents;

class MambaConjugate final : public Workload {
 public:
  std::string suite() const override { return "geometry"; }
  std::string name() const override { return "mamba_conjugate"; }
  std::string description() const override {
    return "geometric-Mamba state conjugate: components 1..7 of r and i [B,L,8] negated";
  }
  std::string shape(SizeClass size) const override {
    const StateShape s = state_shape(size);
    return "B=" + std::to_string(s.batch) + " L=" + std::to_string(s.length) + " components=8";
  }

  // r, i ~ N(0, 1): no zeros, both signs.
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const StateShape s = state_shape(size);
    ArrayMap in;
    in[kStateReal] = normal_array(seed, "geometry/mamba_conjugate/r", {s.batch, s.length, C}, 0, 1);
    in[kStateImag] = normal_array(seed, "geometry/mamba_conjugate/i", {s.batch, s.length, C}, 0, 1);
    return in;
  }

  ArrayMap reference_fp64(const ArrayMap& in) const override {
    ArrayMap out;
    for (const auto& [input, output] : {std::pair{kStateReal, kConjReal}, std::pair{kStateImag, kConjImag}}) {
      const HostArray& x = require(in, input);
      HostArray conj = HostArray::zeros(x.shape, ElementType::Float64);
      ref::conjugate<double>(x.values.data(), x.numel(), conj.values.data());
      out[output] = std::move(conj);
    }
    return out;
  }

  // A negation and a copy are exact in fp32: the only right answer is the reference bit for bit.
  std::vector<OutputSpec> outputs() const override {
    const std::string reason = "copies and negations are exact in fp32: any difference is a bug";
    return {{kConjReal, 0, reason}, {kConjImag, 0, reason}};
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kCloneAssign,
         "as the original: x.clone(), then x[..., 1:] = -x[..., 1:] (the negation allocates a "
         "temporary [B,L,7] that is copied back into the slice), for r and i"},
        {1, kInPlaceNeg,
         "the seed: x.clone(), then x[..., 1:].neg_() in place: no temporary (claim: one "
         "allocation fewer, no time claim)"},
        {2, kSinglePass,
         "beyond the seed: each result written in one pass over x (x * [1,-1,...,-1]), no clone "
         "to read back"},
        {3, kSignVectors,
         "beyond the seed: both results in one kernel over blocks of rows, each row of 8 "
         "multiplied by the constant signs {1, -1, ..., -1} in SIMD registers; host cores only"},
    };
  }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"): 7 sign changes per 8 values,
  // counted as one flop each; bytes, fp32: read r and i once, write both results once.
  // Default (B = 16, L = 4096): 917,504 flops, 8.39 MB (4.19 MB read, 4.19 MB written).
  WorkEstimate work(SizeClass size) const override {
    const double values = double(state_shape(size).values());
    return {2 * values * (C - 1) / C, 4.0 * 4 * values};
  }

  // fp64 inputs, reference and outputs of both tensors, with room for one copy more.
  double memory_bytes(SizeClass size) const override { return 8.0 * 2 * 4 * double(state_shape(size).values()); }
};

const WorkloadRegistration registration{std::make_shared<MambaConjugate>()};

}  // namespace
}  // namespace pb::suites::geometry::mamba_conjugate

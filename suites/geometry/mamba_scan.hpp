#pragma once
// geometry/mamba_scan: what every variant shares: the size table, the input and output names,
// the optimization each phase adds and the parameters as the reference's Params. Math:
// reference/geometry/mamba_scan.hpp. Definition: suites/geometry/mamba_scan.cpp. Suite
// conventions: suites/geometry/complex_metric.hpp.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "phasebench/arrays.hpp"
#include "phasebench/workload.hpp"
#include "reference/geometry/mamba_scan.hpp"

namespace pb::suites::geometry::mamba_scan {

namespace ref = pb::reference::geometry::mamba_scan;

inline const std::string kMambaScan = "geometry/mamba_scan";

// Input x[B, L, D] and the parameters (weights stored [in, out]); outputs.
inline const std::string kInput = "x";
inline const std::string kInProjW = "in_proj.weight", kInProjB = "in_proj.bias";
inline const std::string kBr = "Br", kBi = "Bi";
inline const std::string kLn16W = "ln16.weight", kLn16B = "ln16.bias";
inline const std::string kTheta = "theta", kOmega = "omega", kSigma = "sigma";
inline const std::string kGateW = "gate.weight", kGateB = "gate.bias";
inline const std::string kUpW = "up.weight", kUpB = "up.bias";
inline const std::string kOutProjW = "out_proj.weight", kOutProjB = "out_proj.bias";
inline const std::string kLnOutW = "ln_out.weight", kLnOutB = "ln_out.bias";
inline const std::string kOutput = "out";
// The final state, as the components the recurrence reaches: the step couples only r_k, r_(k+4),
// i_k, i_(k+4) (the trinor mixes r_k with i_k, the halved product k with k + 4), so from
// r = (1, 0, ..., 0), i = 0 the other 12 components stay exactly 0 for every input (tested in
// tests/geometry_scan_test.cpp). final_state[b] = (r_0, r_4, i_0, i_4).
inline const std::string kFinalState = "final_state";
inline constexpr int kLiveComponents = 4;
inline constexpr int kLive[kLiveComponents] = {0, ref::kHalf, ref::kState, ref::kState + ref::kHalf};  // in [r, i]

/// The final_state output [B, 4] from the final r and i [B, 8] (any scalar type).
template <typename Scalar>
HostArray final_state_array(int64_t batch, const Scalar* r, const Scalar* i) {
  HostArray state = HostArray::zeros({batch, kLiveComponents}, std::is_same_v<Scalar, double> ? ElementType::Float64 : ElementType::Float32);
  for (int64_t b = 0; b < batch; ++b)
    for (int k = 0; k < kLiveComponents; ++k) {
      const int c = kLive[k];
      state.values[b * kLiveComponents + k] = double(c < ref::kState ? r[b * ref::kState + c] : i[b * ref::kState + c - ref::kState]);
    }
  return state;
}

// Every parameter, in Params order.
inline const std::vector<std::string> kParameters = {kInProjW, kInProjB, kBr,    kBi,    kLn16W,    kLn16B,
                                                     kTheta,   kOmega,   kSigma, kGateW, kGateB,    kUpW,
                                                     kUpB,     kOutProjW, kOutProjB, kLnOutW, kLnOutB};

// The optimization each phase adds (phase 0 is named kBaseline, as in every geometry workload).
inline constexpr const char* kSequential = "baseline";  // per step: every projection, the step, the gate
inline constexpr const char* kHoisted = "hoisted_projections";  // projections for all t as matrix products
inline constexpr const char* kParallelScan = "parallel_scan";    // the recurrence as a scan over 16x16 maps

struct Dims {
  int64_t batch = 0, length = 0, model = 0, inner = 0;  // B, L, D, E
  int64_t rows() const { return batch * length; }
};

inline Dims dims(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return {2, 9, 16, 32};
    case SizeName::Default:
      return {4, 256, 512, 1024};
    case SizeName::Large:
      return {8, 1024, 512, 1024};
    case SizeName::Scaled:  // a scale grows the batch (B, at least one); L stays 256, inside fp32's range
      return {scaling::count(4, size.scale()), 256, 512, 1024};
    case SizeName::Random:
      // L from 1 (scan chunks of any length); D and E across the row blocks. D >= 2: the output's
      // LayerNorm over one value is its bias alone, with 1/sqrt(eps) amplifying the round-off of
      // x - mean, which fp32 kernels compute as x s - mean s.
      return {random_shape::count(size, 0, 1, 3), random_shape::count(size, 1, 1, 24),
              random_shape::count(size, 2, 2, 40), random_shape::count(size, 3, 1, 48)};
  }
  throw std::invalid_argument("unknown mamba_scan size");
}

/// The chunk length of the parallel scan: the largest divisor of L not above sqrt(L), which
/// balances the C - 1 prefix steps within chunks against the L / C carry steps across them.
inline int64_t scan_chunk(int64_t length) {
  int64_t chunk = 1;
  for (int64_t c = 1; c * c <= length; ++c)
    if (length % c == 0) chunk = c;
  return chunk;
}

inline Dims dims_of(const ArrayMap& in) {
  const HostArray& x = require(in, kInput);
  return {x.shape.at(0), x.shape.at(1), x.shape.at(2), require(in, kInProjW).shape.at(1)};
}

/// The parameters converted to Scalar, kept alive with the Params that point into them.
template <typename Scalar>
struct ParamStore {
  std::map<std::string, std::vector<Scalar>> values;
  ref::Params<Scalar> params{};

  explicit ParamStore(const ArrayMap& in) {
    for (const std::string& name : kParameters) {
      const HostArray& a = require(in, name);
      values[name].assign(a.values.begin(), a.values.end());
    }
    auto at = [this](const std::string& name) { return values.at(name).data(); };
    params = {at(kInProjW), at(kInProjB), at(kBr),    at(kBi),    at(kLn16W),    at(kLn16B),
              at(kTheta),   at(kOmega),   at(kSigma), at(kGateW), at(kGateB),    at(kUpW),
              at(kUpB),     at(kOutProjW), at(kOutProjB), at(kLnOutW), at(kLnOutB)};
  }
  ParamStore(const ParamStore&) = delete;
  ParamStore& operator=(const ParamStore&) = delete;
};

}  // namespace pb::suites::geometry::mamba_scan

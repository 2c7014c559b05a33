// trainer2/lior_step: definition (sizes, inputs, outputs, tolerances, phases and claims).
// Reference: reference/trainer2/lior_step.hpp. Variants: optimized/trainer2/lior_step-<backend>.*

#include "reference/trainer2/lior_step.hpp"

#include <cmath>
#include <stdexcept>

#include "phasebench/rng.hpp"
#include "phasebench/workload.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/sizes.hpp"

namespace pb::suites::trainer2 {
namespace {

namespace ref = pb::reference::trainer2;

class LiorStep final : public Workload {
 public:
  std::string suite() const override { return "trainer2"; }
  std::string name() const override { return "lior_step"; }
  std::string description() const override {
    return "LIoR step over B*K velocities: s = sqrt(max(0, sum g v^2) + eps), dlior = R s, and "
           "the three progress means read by the host";
  }

  std::string shape(SizeClass size) const override {
    const Trainer2Size dims = trainer2_size(size);
    return "M=" + std::to_string(rows(size)) + " (B=" + std::to_string(dims.batch) +
           " K=" + std::to_string(dims.candidates()) + ") n=" + std::to_string(ref::kCoordinateDim);
  }

  // v ~ N(0,1); R > 0 as a curvature is; g around 1 (the metric diagonal starts at ones and
  // drifts; random values make a wrong coordinate weighting visible).
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const int64_t m = rows(size);
    ArrayMap inputs;
    inputs["v"] = normal_array(seed, "trainer2/lior_step/v", {m, ref::kCoordinateDim}, 0.0, 1.0);
    inputs["R"] = uniform_array(seed, "trainer2/lior_step/R", {m}, 0.5, 1.5);
    inputs["g"] = uniform_array(seed, "trainer2/lior_step/g", {ref::kCoordinateDim}, 0.5, 1.5);
    return inputs;
  }

  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    const HostArray& v = require(inputs, "v");
    const int64_t m = v.shape.at(0);
    const int n = static_cast<int>(v.shape.at(1));
    ArrayMap out;
    out["s"] = HostArray::zeros({m}, ElementType::Float64);
    out["dlior"] = HostArray::zeros({m}, ElementType::Float64);
    const auto means = ref::lior_step<double>(v.values.data(), require(inputs, "R").values.data(),
                                              require(inputs, "g").values.data(), m, n,
                                              out["s"].values.data(), out["dlior"].values.data());
    out["mean_dlior"] = HostArray::scalar(means.mean_dlior, ElementType::Float64);
    out["mean_R"] = HostArray::scalar(means.mean_R, ElementType::Float64);
    out["mean_s"] = HostArray::scalar(means.mean_s, ElementType::Float64);
    return out;
  }

  std::vector<OutputSpec> outputs() const override {
    const std::string per_row =
        "fp32 sqrt of an 8-term sum: a few ulp (~1e-7) per element; 1e-5 is the fp32 default";
    const std::string mean =
        "fp32 mean of up to 49,152 positive terms: a serial sum drifts by ~sqrt(M) ulp-scale steps; a wide margin";
    return {{"s", 1e-5, per_row},
            {"dlior", 1e-5, per_row},
            {"mean_dlior", 1e-4, mean},
            {"mean_R", 1e-4, mean},
            {"mean_s", 1e-4, mean}};
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kBaseline,
         "as the original: s computed twice (in lior_step and for the metrics), each of the "
         "three means read back separately (3 host syncs)"},
        PhaseInfo(1, kBatchedMetrics, "the three means gathered on the device and read with one transfer (1 host sync)")
            .claims(1.03, 1.05),
        PhaseInfo(3, kFusedLiorSpd, "s computed once and returned with dlior").claims(1.02, 1.03),
        {8, kFusedQuadraticForm,
         "beyond the seed: the quadratic form, clamp, +eps and sqrt fused into as few operations "
         "as the backend allows (where phase 3 still runs them op by op)"},
        {9, kSinglePassLior,
         "beyond the seed: s, dlior and the three batch sums in one pass over the rows (one kernel "
         "over blocks of rows, 16 rows at a time with one accumulator per row, so that a core's "
         "vector unit takes 16 rows at once), then one transfer of the sums"},
    };
  }

  PhaseInfo cumulative_claim() const override {
    PhaseInfo claim;
    claim.name = "seed 000 claims for these phases, compounded";
    claim.claimed_min = 1.03 * 1.02;
    claim.claimed_max = 1.05 * 1.03;
    return claim;
  }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"). A flop is one add, multiply,
  // divide, max, sqrt. Per row: v_i^2, g_i * v_i^2 and the sum over n (3n), max, +eps, sqrt,
  // R * s (4), and the row's terms of the three sums (3); then the three means divide once each:
  //   flops = M (3n + 7) + 3
  // Bytes, fp32, each input read once and each output written once:
  //   read v [M,n], R [M], g [n]; write s [M], dlior [M] and the 3 means:
  //   bytes = 4 (M n + M + n) + 4 (2 M + 3)
  // Default (M = 34,816, n = 8): 1,079,299 flops, 1,531,948 bytes.
  WorkEstimate work(SizeClass size) const override {
    const double m = static_cast<double>(rows(size));
    const double n = ref::kCoordinateDim;
    const double flops = m * (3 * n + 7) + 3;
    const double bytes = 4.0 * (m * n + m + n) + 4.0 * (2 * m + 3);
    return {flops, bytes};
  }

  double memory_bytes(SizeClass size) const override {
    return static_cast<double>(rows(size)) * (ref::kCoordinateDim + 3) * 8.0 * 3;
  }

 private:
  static int64_t rows(SizeClass size) {
    const Trainer2Size dims = trainer2_size(size);
    return static_cast<int64_t>(dims.batch) * dims.candidates();
  }
};

const WorkloadRegistration registration{std::make_shared<LiorStep>()};

}  // namespace
}  // namespace pb::suites::trainer2

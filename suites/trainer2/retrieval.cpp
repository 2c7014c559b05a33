// trainer2/retrieval: the retrieval step alone (step 4 in reference/trainer2/trainer2.hpp) on one
// step's batch: distances under the metric diagonal, softmax over the K = T + C candidates, state
// mixing.
// Reference: reference/trainer2/trainer2.hpp (retrieval). Variants: optimized/trainer2/retrieval-<backend>.*
//
// Inputs: q [B,n] (the rotated query), cand_coord [B,K,n], cand_state [B,K,d], g [n], R [B].
// Outputs: act [B,d], weights [B,K].

#include "phasebench/rng.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/sizes.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::suites::trainer2 {
namespace {

class Retrieval final : public Workload {
 public:
  std::string suite() const override { return "trainer2"; }
  std::string name() const override { return "retrieval"; }
  std::string description() const override {
    return "retrieval step: spd = sqrt(g(u,u) + eps) to K candidates, softmax(-beta R spd), "
           "act = sum_k w cand_state";
  }
  std::string shape(SizeClass size) const override {
    const Trainer2Size s = trainer2_size(size);
    return "B=" + std::to_string(s.batch) + " K=" + std::to_string(s.candidates()) +
           " d=" + std::to_string(s.state_dim) + " n=8";
  }

  // Candidates and states ~ N(0,1) as the model output and the bank are; q is a mean over T
  // tokens in the original, so ~ N(0, 0.3); R ~ U[0.2, 0.6] around R = mean |F| of the window.
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const Trainer2Size s = trainer2_size(size);
    const int64_t B = s.batch, K = s.candidates(), n = ref::kCoordinateDim;
    ArrayMap in;
    in["q"] = normal_array(seed, "trainer2/retrieval/q", {B, n}, 0, 0.3);
    in["cand_coord"] = normal_array(seed, "trainer2/retrieval/cand_coord", {B, K, n}, 0, 1);
    in["cand_state"] = normal_array(seed, "trainer2/retrieval/cand_state", {B, K, s.state_dim}, 0, 1);
    in["g"] = uniform_array(seed, "trainer2/retrieval/g", {n}, 0.5, 1.5);
    in["R"] = uniform_array(seed, "trainer2/retrieval/R", {B}, 0.2, 0.6);
    return in;
  }

  ArrayMap reference_fp64(const ArrayMap& in) const override {
    const HostArray& state = require(in, "cand_state");
    const int64_t B = state.shape.at(0), K = state.shape.at(1), d = state.shape.at(2);
    ArrayMap out;
    out["act"] = HostArray::zeros({B, d}, ElementType::Float64);
    out["weights"] = HostArray::zeros({B, K}, ElementType::Float64);
    ref::retrieval<double>(B, K, d, require(in, "q").values.data(), require(in, "cand_coord").values.data(),
                           state.values.data(), require(in, "g").values.data(),
                           require(in, "R").values.data(), out["act"].values.data(),
                           out["weights"].values.data());
    return out;
  }

  std::vector<OutputSpec> outputs() const override {
    return {{"act", 2e-5, "fp32 weighted sum over K <= 3072 candidates (serial in the reference)"},
            {"weights", 1e-5, "fp32 softmax: exp of logits of size ~10, normalized by a K-term sum"}};
  }
  std::vector<PhaseInfo> phases() const override { return trainer2_phases({0, 4, 14}); }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"). A flop is one add, multiply,
  // divide, max, sqrt, exp. Per candidate (b, k): u = c - q, g u^2 and the sum over n (4n); max,
  // +eps, sqrt, R * spd, -beta * cost (5); softmax: running max, subtract, exp, sum, divide (5);
  // per (b, k, j) the mixing's multiply and add (2d):
  //   flops = B K (4n + 10 + 2d)
  // Bytes, fp32: read q [B,n], cand_coord [B,K,n], cand_state [B,K,d], g [n], R [B]; write
  // act [B,d] and weights [B,K]:
  //   bytes = 4 (B n + B K n + B K d + n + B) + 4 (B d + B K)
  // Default (B = 16, K = 2,176, d = 256): 19,288,064 flops, 36,921,952 bytes.
  WorkEstimate work(SizeClass size) const override {
    const Trainer2Size s = trainer2_size(size);
    const double B = s.batch, K = s.candidates(), d = s.state_dim, n = ref::kCoordinateDim;
    const double flops = B * K * (4 * n + 10 + 2 * d);
    const double bytes = 4.0 * (B * n + B * K * n + B * K * d + n + B) + 4.0 * (B * d + B * K);
    return {flops, bytes};
  }
  double memory_bytes(SizeClass size) const override {
    const Trainer2Size s = trainer2_size(size);
    return 8.0 * 3 * s.batch * s.candidates() * (ref::kCoordinateDim + s.state_dim + 1);
  }
};

const WorkloadRegistration registration{std::make_shared<Retrieval>()};

}  // namespace
}  // namespace pb::suites::trainer2

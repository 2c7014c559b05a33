// geometry/christoffel and geometry/lior_optimizer_step: the fp64 references agree with
// independent numpy implementations of the original code, the fp32 budget of christoffel is what
// fp32 finite differences reach (measured here at every size), the CUDA kernel bodies compute the
// reference on the host, the seed's claim (no host sync per tensor) holds on every backend that
// runs here, and a variant with one wrong line is caught.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>

#include "broken_variant.hpp"
#include "engine/case_runner.hpp"
#include "optimized/geometry/christoffel-cuda.cuh"
#include "optimized/geometry/lior_optimizer_step-cuda.cuh"
#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"
#include "suites/geometry/christoffel.hpp"
#include "suites/geometry/lior_optimizer_step.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

double relative_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

void expect_numpy_agrees(const std::string& workload, const std::string& script) {
  const fs::path out = testing::fresh_temp_path("geometry-network-dump");
  const auto dumped = testing::run_phasebench("dump --workload " + workload + " --size small --seed 5 --out " + out.string());
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR + "/python/" + script +
                                            " " + out.string() + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("agree"), std::string::npos) << checked.output;
  fs::remove_all(out);
}

TEST(GeometryNetworkDump, AnIndependentNumpyChristoffelAgrees) {
  expect_numpy_agrees(geo::kChristoffel, "check_christoffel_dump.py");
}

TEST(GeometryNetworkDump, AnIndependentNumpyOptimizerStepAgrees) {
  expect_numpy_agrees(geo::kLiorOptimizerStep, "check_lior_optimizer_step_dump.py");
}

// The serial fp32 reference against the fp64 oracle: what fp32 central differences reach.
double fp32_christoffel_error(SizeClass size, uint64_t seed, std::vector<float>* gamma32 = nullptr,
                              ArrayMap* inputs_out = nullptr) {
  const auto workload = find_workload(geo::kChristoffel);
  const ArrayMap inputs = workload->make_inputs(size, seed);
  const std::vector<double> oracle = workload->reference_fp64(inputs).at(geo::kGamma).values;
  const geo::MetricParameters<float> weights(inputs);
  const std::vector<float> x = require(inputs, geo::kPoints).to_floats();
  std::vector<float> gamma(oracle.size());
  ref::christoffel<float>(weights.view(), x.data(), static_cast<int64_t>(x.size() / ref::kDim), gamma.data());
  if (gamma32) *gamma32 = gamma;
  if (inputs_out) *inputs_out = inputs;
  return relative_l2(gamma, oracle);
}

TEST(GeometryNetworkBudget, TheChristoffelBudgetIsWhatFp32FiniteDifferencesReach) {
  const double budget = find_workload(geo::kChristoffel)->outputs().at(0).tolerance;
  double worst = 0;
  for (SizeClass size : all_sizes())
    for (uint64_t seed : {1, 2, 3}) {
      const double error = fp32_christoffel_error(size, seed);
      std::cout << to_string(size) << " seed " << seed << ": fp32 reference rel_l2_err " << error << "\n";
      worst = std::max(worst, error);
    }
  EXPECT_LE(worst, budget) << "fp32 finite differences exceed the declared budget";
  EXPECT_GE(worst * 5, budget) << "the budget is more than 5x what fp32 reaches: loose";
}

TEST(GeometryNetworkInputs, OutputsAreNeverDegenerate) {
  for (const std::string& name : {geo::kChristoffel, geo::kLiorOptimizerStep}) {
    const auto workload = find_workload(name);
    for (const auto& [output, array] : workload->reference_fp64(workload->make_inputs(SizeClass::Small, 1))) {
      const auto zeros = std::count(array.values.begin(), array.values.end(), 0.0);
      EXPECT_LT(zeros * 10, array.numel()) << name << " " << output;
    }
  }
  EXPECT_EQ(geo::flat_offsets(geo::parameter_shapes(SizeClass::Default)).back(), 18880512);
  EXPECT_EQ(geo::parameter_shapes(SizeClass::Large).size(), 96u);
}

// ---- CUDA kernel bodies on the host, over the whole index space, in launch order ---------------

TEST(GeometryNetworkCudaBodies, ChristoffelLaddersComputeTheReference) {
  namespace body = pb::cuda_backend::christoffel;
  std::vector<float> expected;
  ArrayMap inputs;
  fp32_christoffel_error(SizeClass::Small, 2, &expected, &inputs);
  const geo::MetricParameters<float> weights(inputs);
  const auto w = weights.view();
  const std::vector<float> x = require(inputs, geo::kPoints).to_floats();
  const int64_t points = static_cast<int64_t>(x.size() / ref::kDim);
  for (const char* ladder : {"nested_loops", "contraction", "batched_solve"}) {
    std::vector<float> metrics(points * ref::kEvaluations * ref::kMetricSize), D(points * ref::kDim * ref::kMetricSize),
        Ginv(points * ref::kMetricSize), gamma(points * ref::kGammaSize, 0.f);
    const std::string name = ladder;
    if (name == "batched_solve") {
      for (int64_t i = 0; i < points * ref::kEvaluations; ++i) body::metric_body(i, w, x.data(), 0, ref::kEvaluations, true, metrics.data());
    } else {
      for (int k = 0; k < ref::kEvaluations; ++k) {
        std::vector<float> clone = x;
        const bool cloned = name == "nested_loops";
        if (cloned && k > 0)
          for (int64_t p = 0; p < points; ++p) body::shift_body(p, clone.data(), (k - 1) % ref::kDim, ref::slot_shift<float>(k, (k - 1) % ref::kDim));
        for (int64_t p = 0; p < points; ++p) body::metric_body(p, w, clone.data(), k, 1, !cloned, metrics.data());
      }
    }
    for (int64_t p = 0; p < points; ++p) body::derivative_body(p, metrics.data(), D.data());
    if (name == "batched_solve") {
      for (int64_t p = 0; p < points; ++p) body::solve_body(p, metrics.data(), D.data(), gamma.data());
    } else {
      for (int64_t p = 0; p < points; ++p) body::inverse_body(p, metrics.data(), Ginv.data());
      if (name == "contraction") {
        for (int64_t p = 0; p < points; ++p) body::contract_body(p, Ginv.data(), D.data(), gamma.data());
      } else {
        for (int l = 0; l < ref::kDim; ++l)
          for (int m = 0; m < ref::kDim; ++m)
            for (int n = 0; n < ref::kDim; ++n)
              for (int r = 0; r < ref::kDim; ++r)
                for (int64_t p = 0; p < points; ++p) body::loop_body(p, Ginv.data(), D.data(), l, m, n, r, gamma.data());
      }
    }
    double diff = 0, norm = 0;
    for (size_t i = 0; i < gamma.size(); ++i) {
      diff += double(gamma[i] - expected[i]) * (gamma[i] - expected[i]);
      norm += double(expected[i]) * expected[i];
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-5) << ladder;
  }
}

TEST(GeometryNetworkCudaBodies, OptimizerStepLaddersComputeTheReference) {
  namespace body = pb::cuda_backend::lior_optimizer_step;
  const auto workload = find_workload(geo::kLiorOptimizerStep);
  const ArrayMap inputs = workload->make_inputs(SizeClass::Small, 4);
  const ArrayMap oracle = workload->reference_fp64(inputs);
  const geo::ResilienceParameters<float> weights(inputs);
  const auto shapes = geo::shapes_of(inputs);
  const std::vector<int64_t> offsets = geo::flat_offsets(shapes);
  const std::vector<float> params = geo::flat_floats(inputs, geo::param_name, shapes.size());
  const std::vector<float> grads = geo::flat_floats(inputs, geo::grad_name, shapes.size());
  const int tensors = static_cast<int>(shapes.size());
  for (bool batched : {false, true}) {
    std::vector<float> scales(tensors), out(params.size());
    for (int j = 0; j < tensors; ++j) body::resilience_body(j, weights.view(), params.data(), offsets.data(), true, scales.data());
    for (int64_t i = 0; i < offsets.back(); ++i) {
      if (batched) {
        body::update_all_body(i, params.data(), grads.data(), scales.data(), offsets.data(), tensors, out.data());
      } else {
        body::update_body(i, params.data(), grads.data(), scales[ref::segment_of(offsets.data(), tensors, i)], out.data());
      }
    }
    const ArrayMap got = geo::outputs_from_flat(shapes, out.data());
    for (const auto& [name, want] : oracle)
      EXPECT_LT(relative_l2(got.at(name).to_floats(), want.values), 1e-6) << name << (batched ? " batched" : "");
  }
}

// ---- the seed's claim: host syncs per step P -> 0 -------------------------------------------------

TEST(GeometryNetworkSyncs, OneHostSyncPerTensorAtPhaseZeroAndNoneAfter) {
  const auto out = testing::fresh_temp_path("geometry-network-syncs");
  const auto result = testing::run_phasebench("run --quick --reps 1 --size small --filter 'geometry/lior_optimizer_step/' --out " +
                                              out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  int checked = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.status != Status::Ok || row.backend == kReferenceBackend) continue;
    const double expected = row.phase == geo::kPerTensorSync ? 3 : 0;  // 3 tensors at the small size
    EXPECT_EQ(row.host_syncs_per_iter, expected) << row.backend << "/" << row.phase;
    ++checked;
  }
  EXPECT_GE(checked, 3);
  fs::remove_all(out);
}

// ---- a variant with one wrong line is caught ----------------------------------------------------

enum class Bug { None, InverseInsteadOfInverseSquare, SkipsLastTensor, SizeAsSumOfOffsets };

// reference<float> out of place, with one thing wrong, selected by `Bug`.
class BrokenOptimizerStep final : public Variant {
 public:
  explicit BrokenOptimizerStep(Bug bug) : bug_(bug) {}
  void setup(const ArrayMap& inputs) override {
    weights_ = std::make_unique<geo::ResilienceParameters<float>>(inputs);
    shapes_ = geo::shapes_of(inputs);
    offsets_ = geo::flat_offsets(shapes_);
    params_ = geo::flat_floats(inputs, geo::param_name, shapes_.size());
    grads_ = geo::flat_floats(inputs, geo::grad_name, shapes_.size());
    out_.assign(params_.size(), 0.f);
    params_.resize(params_.size() + ref::kDim, 0.f);  // so that a wrong size reads zeros, not past the end
  }
  void poison_outputs() override { out_.assign(out_.size(), std::numeric_limits<float>::quiet_NaN()); }
  void run() override {
    const size_t tensors = shapes_.size() - (bug_ == Bug::SkipsLastTensor ? 1 : 0);
    for (size_t j = 0; j < tensors; ++j) {
      const int64_t size = bug_ == Bug::SizeAsSumOfOffsets ? offsets_[j + 1] + offsets_[j] : offsets_[j + 1] - offsets_[j];
      const float R = ref::tensor_resilience(weights_->view(), params_.data() + offsets_[j], size);
      const float scale = bug_ == Bug::InverseInsteadOfInverseSquare ? float(ref::kLearningRate) / R : ref::step_scale(R);
      for (int64_t i = offsets_[j]; i < offsets_[j + 1]; ++i) out_[i] = params_[i] - scale * grads_[i];
    }
  }
  ArrayMap outputs() override { return geo::outputs_from_flat(shapes_, out_.data()); }

 private:
  Bug bug_;
  std::unique_ptr<geo::ResilienceParameters<float>> weights_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> offsets_;
  std::vector<float> params_, grads_, out_;
};

detail::LiveCase checked(Bug bug, uint64_t seed = 3) {
  return testing::check_broken_variant(
      geo::kLiorOptimizerStep, [bug](const VariantContext&) { return std::make_unique<BrokenOptimizerStep>(bug); },
      SizeClass::Small, seed);
}

TEST(GeometryNetworkCaught, TheUnbrokenControlPasses) { EXPECT_EQ(checked(Bug::None).status, Status::Ok); }

TEST(GeometryNetworkCaught, OneWrongLineIsCaughtAndTheOutputNamed) {
  const detail::LiveCase live = checked(Bug::InverseInsteadOfInverseSquare);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("param."), std::string::npos) << live.reason;
  EXPECT_NE(live.reason.find("rel_l2_err"), std::string::npos) << live.reason;
}

TEST(GeometryNetworkCaught, AnUnwrittenTensorIsCaughtByThePoison) {
  const detail::LiveCase live = checked(Bug::SkipsLastTensor);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("param.02"), std::string::npos) << live.reason;
  EXPECT_NE(live.reason.find("NaN"), std::string::npos) << live.reason;
}

// Zero padding of a tensor with fewer than d = 8 values that is not the first (offsets(0) = 0
// hides a wrong size of the first): even seeds end with a [1] and a [4] tensor, and a size taken
// as offsets(j + 1) + offsets(j) reads the next tensor's values where zeros belong.
TEST(GeometryNetworkCaught, AWrongSizeOfATinyTensorIsCaughtOnAnEvenSeed) {
  const detail::LiveCase live = checked(Bug::SizeAsSumOfOffsets, 2);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("param.01"), std::string::npos) << live.reason;
}

TEST(GeometryNetworkInputs, EvenSeedsEndWithTensorsShorterThanTheLeadingCoordinates) {
  const auto workload = find_workload(geo::kLiorOptimizerStep);
  for (SizeClass size : {SizeClass::Small, SizeClass::Default}) {
    const auto shapes = geo::shapes_of(workload->make_inputs(size, 2));
    ASSERT_GE(shapes.size(), 3u);
    EXPECT_LT(geo::numel_of(shapes[shapes.size() - 2]), ref::kDim);
    EXPECT_LT(geo::numel_of(shapes.back()), ref::kDim);
    EXPECT_EQ(geo::shapes_of(workload->make_inputs(size, 1)), geo::parameter_shapes(size));
  }
}

// ---- the seed's own Christoffel symbols: two known bugs, reported CAUGHT --------------------------

TEST(GeometryNetworkCaught, TheSeedsTwoWrongSymbolsAreReportedCaught) {
  if (!testing::backend_built("torch")) GTEST_SKIP() << "the torch backend is not built";
  const auto verified = testing::run_phasebench(
      "verify --suite geometry --filter 'christoffel/torch/seed_' --size small --seeds 3");
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  for (const char* bug : {geo::kSeedRepeatedTerm, geo::kSeedFollowUpFix})
    EXPECT_NE(verified.output.find(std::string("caught the known bug ") + bug), std::string::npos) << verified.output;
  EXPECT_EQ(verified.output.find("lost its teeth"), std::string::npos) << verified.output;
}

}  // namespace
}  // namespace pb

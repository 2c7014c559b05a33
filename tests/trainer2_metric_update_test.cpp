// trainer2's metric update g <- clamp(g + eta delta u_r^2 / (sum u_r^2 + 1e-8), 0.01, 100) with a
// non-zero delta, on every backend's own code path. In train_step delta = lior_nudged - lior_free
// is exactly 0 by the original's construction (the nudge moves only the retrieval query, and the
// LIoR cost reads v and R, which it leaves alone), so verify never sees the update term: a wrong
// formula there would survive every run. Each backend's g update is called here directly with
// delta != 0 (both signs, and large enough to reach both ends of the clamp) and compared with the
// fp64 reference formula (ref::metric_update<double>). The workload stays as the original defines it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "optimized/trainer2/trainer2_engine-cuda.cuh"
#include "phasebench/runner.hpp"
#include "reference/trainer2/trainer2.hpp"

#ifdef PHASEBENCH_HAS_torch
#include "optimized/trainer2/trainer2_engine-torch.hpp"
#endif
#ifdef PHASEBENCH_HAS_kokkos
#include "optimized/trainer2/trainer2_engine-kokkos.hpp"
#endif
#ifdef PHASEBENCH_HAS_onednn
#include "optimized/trainer2/trainer2_engine-onednn.hpp"
#endif

namespace {

namespace ref = pb::reference::trainer2;
constexpr int kN = ref::kCoordinateDim;

/// One update's inputs: u (mean free velocity), theta (6 learnt angles, 2 padding zeros), g, delta.
struct MetricCase {
  std::vector<float> u, theta, g;
  float lior_diff;
};

// Deltas of both signs; 0.05 stays inside the clamp, -0.5 drives the largest u_r^2 shares below
// 0.01 and 50 drives them above 100 (eta = 10).
std::vector<MetricCase> metric_cases() {
  const std::vector<float> u{0.31f, -0.72f, 0.05f, 0.9f, -0.18f, 0.44f, -0.6f, 0.27f};
  const std::vector<float> theta{0.4f, -0.25f, 0.12f, -0.47f, 0.33f, -0.08f, 0.f, 0.f};
  const std::vector<float> g{1.f, 0.8f, 1.3f, 0.6f, 1.1f, 0.95f, 1.7f, 0.7f};
  return {{u, theta, g, 0.05f}, {u, theta, g, -0.5f}, {u, theta, g, 50.f}};
}

std::string describe(const MetricCase& c) { return "delta " + std::to_string(c.lior_diff); }

/// The oracle: the reference formula in fp64 on the same (fp32) inputs.
std::vector<double> expected_g(const MetricCase& c) {
  const std::vector<double> u(c.u.begin(), c.u.end()), theta(c.theta.begin(), c.theta.end());
  std::vector<double> g(c.g.begin(), c.g.end());
  ref::metric_update<double>(u.data(), theta.data(), double{c.lior_diff}, g.data());
  return g;
}

void expect_matches_oracle(const std::vector<float>& got, const MetricCase& c, const std::string& backend) {
  const std::vector<double> want = expected_g(c);
  ASSERT_EQ(got.size(), want.size()) << backend;
  // fp32: the rotor's cos/sin and a sum of 8 squares, a few ulp of g (g in [0.01, 100]).
  for (int i = 0; i < kN; ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << backend << " " << describe(c) << " g[" << i << "]";
}

// The cases have teeth: delta moves g, and the two large deltas reach the clamp's ends.
TEST(Trainer2MetricUpdate, TheCasesMoveGAndReachBothEndsOfTheClamp) {
  bool moved = false, at_floor = false, at_ceiling = false;
  for (const MetricCase& c : metric_cases()) {
    const std::vector<double> g = expected_g(c);
    for (int i = 0; i < kN; ++i) {
      moved |= std::abs(g[i] - c.g[i]) > 1e-2;
      at_floor |= g[i] == 0.01;
      at_ceiling |= g[i] == 100.0;
    }
  }
  EXPECT_TRUE(moved);
  EXPECT_TRUE(at_floor);
  EXPECT_TRUE(at_ceiling);
}

// The serial fp32 reference (reference backend) and the CUDA kernel body (MetricUpdate, one thread).
TEST(Trainer2MetricUpdate, ReferenceAndCudaBodyMatchTheOracleWithANonZeroDelta) {
  for (const MetricCase& c : metric_cases()) {
    std::vector<float> g = c.g;
    ref::metric_update<float>(c.u.data(), c.theta.data(), c.lior_diff, g.data());
    expect_matches_oracle(g, c, "reference<float>");

    std::vector<float> cuda_g = c.g;
    const float diff = c.lior_diff;
    pb::cuda_backend::trainer2::MetricUpdate{c.u.data(), c.theta.data(), &diff, cuda_g.data()}(0);
    expect_matches_oracle(cuda_g, c, "cuda body");
  }
}

/// Initializes `backend` as the command line does (once per process; finalized after the last test).
bool initialized(const std::string& backend) {
  pb::Selection selection;
  selection.filter = "trainer2/train_step/" + backend + "/baseline";
  pb::init_backends(pb::plan_cases(selection, pb::SizeClass::Small), 1);
  return true;
}

#ifdef PHASEBENCH_HAS_torch
TEST(Trainer2MetricUpdate, TorchMatchesTheOracleWithANonZeroDelta) {
  ASSERT_TRUE(initialized("torch"));
  namespace t2 = pb::torch_backend::trainer2;
  const auto tensor = [](const std::vector<float>& v) { return torch::tensor(v); };
  const t2::RotorIndex index = t2::make_rotor_index(torch::kCPU);
  for (const MetricCase& c : metric_cases()) {
    const torch::Tensor g = t2::metric_update(tensor(c.u), tensor(c.theta), torch::tensor(c.lior_diff), tensor(c.g), index);
    const torch::Tensor host = g.contiguous();
    expect_matches_oracle(std::vector<float>(host.data_ptr<float>(), host.data_ptr<float>() + host.numel()), c, "torch");
  }
}
#endif

#ifdef PHASEBENCH_HAS_kokkos
TEST(Trainer2MetricUpdate, KokkosMatchesTheOracleWithANonZeroDelta) {
  ASSERT_TRUE(initialized("kokkos"));
  namespace k2 = pb::kokkos_backend::trainer2;
  for (const MetricCase& c : metric_cases()) {
    // Delta comes from the windows' lior totals (scalars(0)); u from the mean of vbar over B = 2 rows.
    const float free_lior = 0.75f;
    const k2::Vec free_scalars("free_scalars", 3), nudged_scalars("nudged_scalars", 3), theta("theta", kN), g("g", kN),
        u("u", kN);
    const k2::Mat vbar("vbar", 2, kN);
    const k2::Cell lior_diff("lior_diff");
    const auto free_host = Kokkos::create_mirror_view(free_scalars), nudged_host = Kokkos::create_mirror_view(nudged_scalars);
    free_host(0) = free_lior;
    nudged_host(0) = free_lior + c.lior_diff;
    const auto vbar_host = Kokkos::create_mirror_view(vbar);
    const auto theta_host = Kokkos::create_mirror_view(theta), g_host = Kokkos::create_mirror_view(g);
    for (int i = 0; i < kN; ++i) {
      vbar_host(0, i) = c.u[i] - 0.25f;  // the mean of the two rows is u[i] (to fp32 round-off)
      vbar_host(1, i) = c.u[i] + 0.25f;
      theta_host(i) = c.theta[i];
      g_host(i) = c.g[i];
    }
    Kokkos::deep_copy(free_scalars, free_host);
    Kokkos::deep_copy(nudged_scalars, nudged_host);
    Kokkos::deep_copy(vbar, vbar_host);
    Kokkos::deep_copy(theta, theta_host);
    Kokkos::deep_copy(g, g_host);
    k2::metric_update(free_scalars, nudged_scalars, vbar, theta, g, lior_diff, u);
    Kokkos::deep_copy(g_host, g);
    MetricCase seen = c;  // the delta and u the kernel formed, in fp32
    seen.lior_diff = (free_lior + c.lior_diff) - free_lior;
    for (int i = 0; i < kN; ++i) seen.u[i] = (vbar_host(0, i) + vbar_host(1, i)) / 2.f;
    expect_matches_oracle(std::vector<float>(g_host.data(), g_host.data() + kN), seen, "kokkos");
  }
}
#endif

#ifdef PHASEBENCH_HAS_onednn
TEST(Trainer2MetricUpdate, OnednnMatchesTheOracleWithANonZeroDelta) {
  ASSERT_TRUE(initialized("onednn"));
  namespace ob = pb::onednn_backend;
  namespace t2o = pb::onednn_backend::trainer2;
  const auto filled = [](const std::vector<int64_t>& shape, const std::vector<float>& values) {
    const dnnl::memory memory = ob::allocate(ob::dense(shape));
    std::copy(values.begin(), values.end(), ob::host_floats(memory));
    return memory;
  };
  for (const MetricCase& c : metric_cases()) {
    const dnnl::memory u = filled({1, kN}, c.u), theta = filled({ref::kRotorSlots}, c.theta),
                       lior_diff = filled({1, 1}, {c.lior_diff}), g = filled({1, kN}, c.g);
    t2o::metric_update(u, theta, lior_diff, g)();
    ob::stream().wait();
    const float* result = ob::host_floats(g);
    expect_matches_oracle(std::vector<float>(result, result + kN), c, "onednn");
  }
}
#endif

}  // namespace

// geometry/hamiltonian and geometry/bayesian: both branches of the Bayesian update are exercised
// by the seeds the definition names, with no checked output degenerate; the CUDA kernel bodies,
// run on the host over the whole index space in each phase's launch order, agree with the fp64
// oracle; the dumps agree with independent numpy implementations of the original code; and one
// wrong line in a variant is caught, naming the output.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "broken_variant.hpp"
#include "engine/case_runner.hpp"
#include "optimized/common/simd_math.hpp"
#include "optimized/geometry/bayesian-cuda.cuh"
#include "optimized/geometry/hamiltonian-cuda.cuh"
#include "phasebench/backend.hpp"
#include "phasebench/check.hpp"
#include "phasebench/results.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"
#include "reference/geometry/bayesian.hpp"
#include "reference/geometry/hamiltonian.hpp"
#include "suites/geometry/field.hpp"

namespace pb {
namespace {

namespace fs = std::filesystem;
namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
using testing::fresh_temp_path;
using testing::run_phasebench;

const SizeClass kSizes[] = {SizeClass::Small, SizeClass::Default};

double zero_share(const HostArray& array) {
  double zeros = 0;
  for (double v : array.values) zeros += v == 0.0;
  return zeros / static_cast<double>(array.values.size());
}

std::vector<float> nan_floats(int64_t count) { return std::vector<float>(count, std::numeric_limits<float>::quiet_NaN()); }

// ---- the two branches ------------------------------------------------------------------------

TEST(GeometryFieldBranches, SeedsThatAreMultiplesOfThreeTakeTheFallbackAndNoCheckIsDegenerate) {
  const auto bayesian = find_workload("geometry/bayesian");
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const ArrayMap inputs = bayesian->make_inputs(SizeClass::Small, seed);
    const ArrayMap reference = bayesian->reference_fp64(inputs);
    const double z = require(reference, geo::kNormalization).values.at(0);
    if (seed % 3 == 0) {
      EXPECT_LE(z, ref::kNormalizationEps) << "seed " << seed;
      // On the threshold exactly, in fp64 and in the fp32 reference alike (put_z_on_the_threshold).
      const float threshold = static_cast<float>(ref::kNormalizationEps);
      EXPECT_EQ(z, double(threshold)) << "seed " << seed;
      const std::vector<float> f = require(inputs, geo::kField).to_floats();
      const std::vector<float> e = require(inputs, geo::kEvidence).to_floats();
      std::vector<float> posterior(f.size()), update(f.size());
      const float z32 = ref::bayesian_update<float>(f.data(), e.data(), geo::field_shape(SizeClass::Small),
                                                    posterior.data(), update.data());
      EXPECT_EQ(z32, threshold) << "seed " << seed;
      EXPECT_TRUE(z32 >= threshold && !ref::normalizable(z32)) << "a >= comparison would take the other branch";
      EXPECT_EQ(require(reference, geo::kPosterior).values, require(inputs, geo::kField).values) << "seed " << seed;
      EXPECT_EQ(zero_share(require(reference, geo::kUpdate)), 1.0) << "Lambda vanishes: why it is not checked alone";
    } else {
      EXPECT_GT(z, 1e6 * ref::kNormalizationEps) << "seed " << seed << ": Z must be far from the threshold";
    }
    for (const OutputSpec& spec : bayesian->outputs())
      EXPECT_LE(zero_share(require(reference, spec.name)), kMistrustZeroShare) << spec.name << " seed " << seed;
  }
}

// ---- CUDA bodies on the host -----------------------------------------------------------------

/// `body` over [0, count), as one launch does. Each thread must write only its own elements; the
/// threads run last to first, so a thread that also writes its neighbour's (a race on the device)
/// leaves that value in place instead of being overwritten by the neighbour run after it.
template <typename Body>
void launch_on_host(int64_t count, const Body& body) {
  for (int64_t i = count - 1; i >= 0; --i) body(i);
}

ArrayMap hamiltonian_by_cuda_bodies(const ArrayMap& inputs, const PhasePlan& plan) {
  namespace body = pb::cuda_backend::hamiltonian;
  const HostArray& field = require(inputs, geo::kField);
  const ref::FieldShape s = geo::shape_of_complex(field);
  const std::vector<float> f = field.to_floats(), v = require(inputs, geo::kPotential).to_floats();
  const int64_t n = s.real_count();
  const body::Lattice l{s.nx, s.ny, s.channels()};
  std::vector<float> h = nan_floats(n), lap = nan_floats(n), kinetic = nan_floats(n), potential = nan_floats(n);
  if (plan.has(geo::kCompiled)) {
    launch_on_host(n, [&](int64_t i) { body::fused_hamiltonian(i, f.data(), v.data(), l, h.data()); });
  } else {
    if (plan.has(geo::kDepthwiseStencil)) {
      launch_on_host(n, [&](int64_t i) { body::stencil(i, f.data(), l, lap.data()); });
    } else {
      for (int64_t channel = 0; channel < s.d * s.d; ++channel)
        launch_on_host(2 * s.sites(), [&](int64_t k) { body::channel_stencil(k, channel, f.data(), l, lap.data()); });
    }
    launch_on_host(n, [&](int64_t i) { body::kinetic(i, lap.data(), kinetic.data()); });
    launch_on_host(n, [&](int64_t i) { body::potential(i, f.data(), v.data(), potential.data()); });
    launch_on_host(n, [&](int64_t i) { body::sum(i, kinetic.data(), potential.data(), h.data()); });
  }
  return {{geo::kHamiltonian, HostArray::from_floats(field.shape, h.data(), n)}};
}

/// The z_kernel's one block: per-thread partial sums, then the pairwise tree. The threads of a
/// level run last to first, so a slot read after another thread of the same level wrote it (a race
/// on the device) changes the sum; the shared array is followed by NaN, so a read past the block's
/// slots shows too.
float z_by_cuda_bodies(const std::vector<float>& f, const std::vector<float>& e, const float* w, int64_t count) {
  namespace body = pb::cuda_backend::bayesian;
  std::vector<double> partials(2 * body::kReductionThreads, std::numeric_limits<double>::quiet_NaN());
  for (int t = 0; t < body::kReductionThreads; ++t) partials[t] = body::partial_z(f.data(), e.data(), w, count, t);
  for (int half = body::kReductionThreads / 2; half > 0; half /= 2)
    for (int t = body::kReductionThreads - 1; t >= 0; --t) body::tree_step(partials.data(), t, half);
  return static_cast<float>(partials[0]);
}

ArrayMap bayesian_by_cuda_bodies(const ArrayMap& inputs, const PhasePlan& plan) {
  namespace body = pb::cuda_backend::bayesian;
  const HostArray& field = require(inputs, geo::kField);
  const std::vector<float> f = field.to_floats(), e = require(inputs, geo::kEvidence).to_floats();
  const int64_t count = field.numel() / 2;
  std::vector<float> w = nan_floats(count), post = nan_floats(2 * count), update = nan_floats(2 * count);
  if (plan.has(geo::kCompiled)) {
    const float z = z_by_cuda_bodies(f, e, nullptr, count);
    launch_on_host(count, [&](int64_t k) { body::fused_posterior_update(k, f.data(), e.data(), z, post.data(), update.data()); });
  } else {
    launch_on_host(count, [&](int64_t k) { body::weight(k, f.data(), e.data(), w.data()); });
    const float z = z_by_cuda_bodies(f, e, w.data(), count);
    if (!plan.has(geo::kHostReadBranch) || ref::normalizable(z)) {
      launch_on_host(2 * count, [&](int64_t i) { body::posterior(i, f.data(), w.data(), z, post.data()); });
    } else {
      post = f;  // host_read_branch's device copy of F
    }
    launch_on_host(2 * count, [&](int64_t i) { body::update(i, post.data(), f.data(), update.data()); });
  }
  return geo::bayesian_outputs(field, post.data(), update.data());
}

template <typename RunBodies>
void expect_every_phase_matches(const std::string& name, const RunBodies& run_bodies, const std::vector<uint64_t>& seeds) {
  const auto workload = find_workload(name);
  for (SizeClass size : kSizes)
    for (uint64_t seed : seeds) {
      const ArrayMap inputs = workload->make_inputs(size, seed);
      const ArrayMap reference = workload->reference_fp64(inputs);
      for (const PhaseInfo& phase : workload->phases()) {
        const PhasePlan plan = derive_phase_plan(workload->phases(), phase.index, {});
        const CheckResult result = check_outputs(run_bodies(inputs, plan), reference, workload->outputs_for(phase.index, size));
        EXPECT_EQ(result.status, Status::Ok) << name << " " << phase.name << " " << to_string(size) << " seed " << seed
                                             << ": " << result.reason;
      }
    }
}

TEST(GeometryFieldCudaBodies, HamiltonianEveryPhaseMatchesTheOracle) {
  expect_every_phase_matches("geometry/hamiltonian", hamiltonian_by_cuda_bodies, {1, 2});
}

TEST(GeometryFieldCudaBodies, BayesianEveryPhaseMatchesTheOracleInBothBranches) {
  expect_every_phase_matches("geometry/bayesian", bayesian_by_cuda_bodies, {1, 3});
}

// ---- dumps against numpy ---------------------------------------------------------------------

// bayesian's vectorized_weights computes its weights with exp_nonpositive instead of expf: within
// 1 ulp of glibc's expf over [-200, 0] (every 31st float, and every float from -110 to -80, where
// results turn subnormal and then 0), exactly 1 at 0 and -0 (the far-evidence seeds' twelve
// weights must be exactly 1) and exactly 0 where expf is (their other weights must vanish, or Z
// would pass the threshold).
TEST(GeometryFieldExp, WithinOneUlpOfExpfAndExactAtBothEnds) {
  EXPECT_EQ(optimized::simd::exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(optimized::simd::exp_nonpositive(-0.0f), 1.0f);
  EXPECT_EQ(optimized::simd::exp_nonpositive(-600.0f), 0.0f);  // the far seeds' -|F - E|^2 / tau
  const auto bits_of = [](float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof x);
    return bits;
  };
  int64_t worst_ulps = 0, zeros_differ = 0, compared = 0;
  float worst_at = 0;
  const auto compare = [&](uint32_t bits) {  // a negative float's bits grow as it does in magnitude
    float x;
    std::memcpy(&x, &bits, sizeof x);
    const float mine = optimized::simd::exp_nonpositive(x), libm = std::exp(x);
    zeros_differ += (mine == 0) != (libm == 0);
    const int64_t ulps = std::abs(int64_t(bits_of(mine)) - int64_t(bits_of(libm)));
    if (ulps > worst_ulps) worst_ulps = ulps, worst_at = x;
    ++compared;
  };
  for (uint32_t bits = bits_of(-0.0f); bits <= bits_of(-200.0f); bits += 31) compare(bits);
  for (uint32_t bits = bits_of(-80.0f); bits <= bits_of(-110.0f); ++bits) compare(bits);
  EXPECT_LE(worst_ulps, 1) << "at x = " << worst_at << " (" << compared << " values compared)";
  EXPECT_EQ(zeros_differ, 0);
}

TEST(GeometryFieldDump, IndependentNumpyImplementationsAgree) {
  for (const char* name : {"hamiltonian", "bayesian"})
    for (int seed : {1, 3}) {  // seed 3: the Bayesian fallback branch
      const fs::path out = fresh_temp_path("geometry-field-dump");
      const auto dumped = run_phasebench(std::string("dump --workload geometry/") + name + " --size small --seed " +
                                         std::to_string(seed) + " --out " + out.string());
      ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
      const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR + "/python/check_" +
                                                name + "_dump.py " + out.string() + " 2>&1");
      EXPECT_EQ(checked.exit_code, 0) << name << " seed " << seed << ": " << checked.output;
      EXPECT_NE(checked.output.find("agree"), std::string::npos) << name << ": " << checked.output;
      fs::remove_all(out);
    }
}

// ---- one wrong line is caught ------------------------------------------------------------------

/// reference<float> of hamiltonian with, when `broken`, zero padding instead of the periodic wrap
/// (what Liorhybrid's padding='same' does): the one wrong line.
class ZeroPaddedHamiltonian final : public Variant {
 public:
  explicit ZeroPaddedHamiltonian(bool broken) : broken_(broken) {}
  void setup(const ArrayMap& inputs) override {
    field_ = require(inputs, geo::kField);
    s_ = geo::shape_of_complex(field_);
    f_ = field_.to_floats();
    v_ = require(inputs, geo::kPotential).to_floats();
  }
  void poison_outputs() override { h_ = nan_floats(s_.real_count()); }
  void run() override {
    std::vector<float> f = f_;
    ref::hamiltonian<float>(f_.data(), v_.data(), s_, h_.data());
    if (!broken_) return;
    // Zero padding: the wrapped neighbour of every edge value is dropped from the Laplacian.
    const int64_t c = s_.channels();
    for (int64_t x = 0; x < s_.nx; ++x)
      for (int64_t y = 0; y < s_.ny; ++y)
        for (int64_t k = 0; k < c; ++k) {
          float wrapped = 0;
          if (x == 0) wrapped += f[((s_.nx - 1) * s_.ny + y) * c + k];
          if (x == s_.nx - 1) wrapped += f[(0 * s_.ny + y) * c + k];
          if (y == 0) wrapped += f[(x * s_.ny + s_.ny - 1) * c + k];
          if (y == s_.ny - 1) wrapped += f[(x * s_.ny + 0) * c + k];
          h_[(x * s_.ny + y) * c + k] += float(ref::kKinetic) * wrapped;
        }
  }
  ArrayMap outputs() override { return {{geo::kHamiltonian, HostArray::from_floats(field_.shape, h_.data(), s_.real_count())}}; }

 private:
  bool broken_;
  HostArray field_;
  ref::FieldShape s_;
  std::vector<float> f_, v_, h_;
};

/// reference<float> of bayesian with, when `broken`, the branch dropped (always w F / (Z + eps)).
class BranchlessBayesian final : public Variant {
 public:
  explicit BranchlessBayesian(bool broken) : broken_(broken) {}
  void setup(const ArrayMap& inputs) override {
    field_ = require(inputs, geo::kField);
    s_ = geo::shape_of_complex(field_);
    f_ = field_.to_floats();
    e_ = require(inputs, geo::kEvidence).to_floats();
  }
  void poison_outputs() override { post_ = update_ = nan_floats(s_.real_count()); }
  void run() override {
    const float z = ref::bayesian_update<float>(f_.data(), e_.data(), s_, post_.data(), update_.data());
    if (!broken_) return;
    for (int64_t i = 0; i < s_.real_count(); ++i) {
      post_[i] = ref::posterior_component(ref::evidence_weight(&f_[i / 2 * 2], &e_[i / 2 * 2]), f_[i], z, true);
      update_[i] = ref::update_component(post_[i], f_[i]);
    }
  }
  ArrayMap outputs() override { return geo::bayesian_outputs(field_, post_.data(), update_.data()); }

 private:
  bool broken_;
  HostArray field_;
  ref::FieldShape s_;
  std::vector<float> f_, e_, post_, update_;
};

template <typename Broken>
detail::LiveCase checked(const std::string& workload, bool broken, uint64_t seed) {
  return testing::check_broken_variant(
      workload, [broken](const VariantContext&) { return std::make_unique<Broken>(broken); }, SizeClass::Small, seed);
}

TEST(GeometryFieldEquivalence, ZeroPaddingInsteadOfTheWrapIsCaught) {
  EXPECT_EQ(checked<ZeroPaddedHamiltonian>("geometry/hamiltonian", false, 1).status, Status::Ok);
  const detail::LiveCase live = checked<ZeroPaddedHamiltonian>("geometry/hamiltonian", true, 1);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("output H: rel_l2_err"), std::string::npos) << live.reason;
}

TEST(GeometryFieldEquivalence, ADroppedBranchIsCaughtOnTheFallbackSeed) {
  EXPECT_EQ(checked<BranchlessBayesian>("geometry/bayesian", false, 3).status, Status::Ok);
  EXPECT_EQ(checked<BranchlessBayesian>("geometry/bayesian", true, 1).status, Status::Ok);  // same branch there
  const detail::LiveCase live = checked<BranchlessBayesian>("geometry/bayesian", true, 3);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("output posterior: rel_l2_err"), std::string::npos) << live.reason;
}

// ---- bayesian's phases: the original (phase 0) decides on the device; only the extra reads Z ------

// kernels/bayesian.py has used torch.where(Z > eps, B_T, T) since its first commit, and the seed
// changed only @torch.compile: phase 0 (the original) and 1 (the seed) read nothing back; the
// host_read_branch extra, which claims nothing, reads Z once.
TEST(GeometryFieldSyncs, OnlyTheHostReadExtraReadsZ) {
  const auto workload = find_workload("geometry/bayesian");
  const std::optional<PhaseInfo> extra = workload->find_phase(2);
  ASSERT_TRUE(extra.has_value());
  EXPECT_EQ(extra->name, geo::kHostReadBranch);
  EXPECT_TRUE(std::isnan(extra->claimed_min)) << "the extra claims nothing for the seed";
  EXPECT_FALSE(derive_phase_plan(workload->phases(), 2, {}).has(geo::kCompiled));
  const auto out = fresh_temp_path("geometry-bayesian-syncs");
  const auto result =
      testing::run_phasebench("run --quick --reps 1 --size small --filter 'geometry/bayesian/' --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  int checked = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.status != Status::Ok || row.backend == kReferenceBackend) continue;
    EXPECT_EQ(row.host_syncs_per_iter, row.phase == geo::kHostReadBranch ? 1 : 0) << row.backend << "/" << row.phase;
    ++checked;
  }
  EXPECT_GE(checked, 9);  // torch, kokkos, onednn: 3 phases each
  fs::remove_all(out);
}

}  // namespace
}  // namespace pb

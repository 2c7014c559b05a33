// geometry/bayesian on Kokkos (default execution space). Math: reference/geometry/bayesian.hpp
// (whose per-element functions the kernels call); catalog: suites/geometry/bayesian.cpp.
//
//   w = exp(-|F - E|^2 / tau);  Z = sum w |F|^2;  B = w F / (Z + eps) if Z > eps else F;
//   Lambda = lambda (B - F)
//
// Baseline, as the original before the seed (torch.where on the device): a weights kernel, Z
// reduced into a device View, a posterior kernel that reads it and branches per thread (no host
// sync), the update kernel. With host_read_branch (an extra, not the original's code): Z reduced
// into a host scalar (the host waits: one host sync) and the branch taken on the host (a posterior
// kernel or a copy of F). With compiled (the seed), two kernels: one
// reduction that also stores the weights, one kernel writing the posterior and the update.
// With vectorized_weights (beyond the seed), the same two passes over runs of values, each a
// loop the compiler vectorizes: the weights from exp_nonpositive (optimized/common/simd_math.hpp) instead of a
// libm call per value, Z's terms in kLanes float lanes per block and the blocks' sums in double
// (the passes' bodies: bayesian_bodies.hpp). With streamed_stores (beyond the seed), pass 2 as one
// work item per thread, its posterior and update written by non-temporal stores.
// Z is summed in double (reference/geometry/bayesian.hpp says why). Every View is allocated in
// setup(): run() allocates nothing.

#include "optimized/common/integer_math.hpp"
#include "reference/geometry/bayesian.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/geometry/bayesian_bodies.hpp"
#include "suites/geometry/field.hpp"

namespace pb::kokkos_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
namespace runs = pb::optimized::geometry::bayesian_runs;
using pb::optimized::ceil_div;
using Vec = DeviceView<float*>;
using Scalar = DeviceView<double>;  // Z, summed in double (reference/geometry/bayesian.hpp says why)

const std::string kWeightsLabel = "bayesian/weights";
const std::string kZLabel = "bayesian/Z";
const std::string kPosteriorLabel = "bayesian/posterior";
const std::string kUpdateLabel = "bayesian/update";
const std::string kFusedZLabel = "bayesian/fused_Z";
const std::string kFusedLabel = "bayesian/fused_posterior_update";
const std::string kRunZLabel = "bayesian/vectorized_Z";
const std::string kRunLabel = "bayesian/vectorized_posterior_update";
const std::string kStreamedLabel = "bayesian/streamed_posterior_update";

// Both run loops also compiled for AVX2 and AVX-512 where the host allows it
// (host_vectorization.hpp). GCC contracts a * b + c into an FMA by default (-ffp-contract=fast,
// C++ included) wherever the target has one, so the AVX2 and AVX-512 clones may round a product-sum
// once where the baseline code rounds twice: within the tolerances (the measured errors of every
// phase are the same, docs/geometry.md).
#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES double weights_of_run_cloned(const float* f, const float* e, float* w, int64_t begin, int64_t end) {
  return runs::weights_of_run(f, e, w, begin, end);
}
PB_HOST_ISA_CLONES void posterior_update_of_run_cloned(const float* f, const float* w, float z, float* posterior,
                                                       float* update, int64_t begin, int64_t end) {
  runs::posterior_update_of_run(f, w, z, posterior, update, begin, end);
}
#define PB_BAYESIAN_WEIGHTS_OF_RUN weights_of_run_cloned
#define PB_BAYESIAN_POSTERIOR_UPDATE_OF_RUN posterior_update_of_run_cloned
#else
#define PB_BAYESIAN_WEIGHTS_OF_RUN runs::weights_of_run
#define PB_BAYESIAN_POSTERIOR_UPDATE_OF_RUN runs::posterior_update_of_run
#endif

// streamed_stores' pass 2: a work item's whole range per call, so that the fence after its last
// non-temporal store is in the clone too.
#if defined(PB_KOKKOS_KERNELS_ON_HOST) && defined(PB_GEOMETRY_STREAMING_STORES)
#define PB_BAYESIAN_STREAMED 1
#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void streamed_posterior_update_cloned(const float* f, const float* w, float z, float* posterior,
                                                         float* update, int64_t begin, int64_t end) {
  runs::streamed_posterior_update(f, w, z, posterior, update, begin, end);
}
#define PB_BAYESIAN_STREAMED_POSTERIOR_UPDATE streamed_posterior_update_cloned
#else
#define PB_BAYESIAN_STREAMED_POSTERIOR_UPDATE runs::streamed_posterior_update
#endif
#endif

class BayesianKokkos final : public Variant {
 public:
  explicit BayesianKokkos(const VariantContext& context)
      : host_read_branch_(context.has(geo::kHostReadBranch)),
        compiled_(context.has(geo::kCompiled)),
        vectorized_(context.has(geo::kVectorizedWeights)),
        streamed_(context.has(geo::kStreamedStores)) {}

  std::optional<CannotRun> support() const override {
    if (!streamed_) return std::nullopt;
    return host_streaming_stores_only(geo::kStreamedStores);
  }

  void setup(const ArrayMap& inputs) override {
    field_ = require(inputs, geo::kField);
    count_ = geo::shape_of_complex(field_).complex_count();
    f_ = to_device<Vec>("bayesian/F", field_, 2 * count_);
    e_ = to_device<Vec>("bayesian/E", require(inputs, geo::kEvidence), 2 * count_);
    w_ = uninitialized<Vec>("bayesian/w", count_);
    posterior_ = uninitialized<Vec>("bayesian/posterior", 2 * count_);
    update_ = uninitialized<Vec>("bayesian/update", 2 * count_);
    z_ = Scalar("bayesian/Z");
  }

  // w_ too: a weight left unwritten would otherwise keep what the allocator handed back (in verify
  // often the previous phase's correct weights) and pass.
  void poison_outputs() override {
    fill_nan(w_);
    fill_nan(posterior_);
    fill_nan(update_);
  }

  void run() override {
    if (streamed_) return streamed();
    if (vectorized_) return vectorized();
    if (compiled_) return fused();
    weights();
    if (host_read_branch_) {
      posterior_after_host_branch(reduce_z_on_host());
    } else {
      reduce_z_on_device();
      posterior_on_device_branch();
    }
    update();
  }

  ArrayMap outputs() override {
    const std::vector<float> posterior = to_host_vector(posterior_), update = to_host_vector(update_);
    return geo::bayesian_outputs(field_, posterior.data(), update.data());
  }

 private:
  void weights() {
    const Vec f = f_, e = e_, w = w_;
    Kokkos::parallel_for(kWeightsLabel, RangePolicy(0, count_), KOKKOS_LAMBDA(int64_t k) {
      w(k) = ref::evidence_weight(&f(2 * k), &e(2 * k));
    });
  }

  /// The terms of Z from the stored weights.
  struct ZTerms {
    Vec f, w;
    KOKKOS_INLINE_FUNCTION void operator()(int64_t k, double& sum) const {
      sum += double(w(k) * ref::squared_modulus(f(2 * k), f(2 * k + 1)));
    }
  };

  float reduce_z_on_host() { return float(reduce_to_host<double>(kZLabel, count_, ZTerms{f_, w_})); }
  void reduce_z_on_device() { Kokkos::parallel_reduce(kZLabel, RangePolicy(0, count_), ZTerms{f_, w_}, z_); }

  void posterior_after_host_branch(float z) {
    if (!ref::normalizable(z)) {
      Kokkos::deep_copy(posterior_, f_);  // B = T: one copy on the device
      return;
    }
    const Vec f = f_, w = w_, posterior = posterior_;
    Kokkos::parallel_for(kPosteriorLabel, RangePolicy(0, 2 * count_), KOKKOS_LAMBDA(int64_t i) {
      posterior(i) = ref::posterior_component(w(i / 2), f(i), z, true);
    });
  }

  void posterior_on_device_branch() {
    const Vec f = f_, w = w_, posterior = posterior_;
    const Scalar z = z_;
    Kokkos::parallel_for(kPosteriorLabel, RangePolicy(0, 2 * count_), KOKKOS_LAMBDA(int64_t i) {
      const float zf = float(z());
      posterior(i) = ref::posterior_component(w(i / 2), f(i), zf, ref::normalizable(zf));
    });
  }

  void update() {
    const Vec f = f_, posterior = posterior_, update = update_;
    Kokkos::parallel_for(kUpdateLabel, RangePolicy(0, 2 * count_), KOKKOS_LAMBDA(int64_t i) {
      update(i) = ref::update_component(posterior(i), f(i));
    });
  }

  /// compiled: one reduction stores w and sums Z, one kernel writes the posterior and the update.
  /// (Recomputing w in the second kernel rather than storing it costs a second exp per value,
  /// which makes it slower than the four kernels of the baseline.)
  void fused() {
    const Vec f = f_, e = e_, w = w_, posterior = posterior_, update = update_;
    const Scalar z = z_;
    Kokkos::parallel_reduce(kFusedZLabel, RangePolicy(0, count_), KOKKOS_LAMBDA(int64_t k, double& sum) {
      w(k) = ref::evidence_weight(&f(2 * k), &e(2 * k));
      sum += double(w(k) * ref::squared_modulus(f(2 * k), f(2 * k + 1)));
    }, z);
    Kokkos::parallel_for(kFusedLabel, RangePolicy(0, count_), KOKKOS_LAMBDA(int64_t k) {
      const float zf = float(z());
      const bool normalize = ref::normalizable(zf);
      for (int64_t i = 2 * k; i < 2 * k + 2; ++i) {
        posterior(i) = ref::posterior_component(w(k), f(i), zf, normalize);
        update(i) = ref::update_component(posterior(i), f(i));
      }
    });
  }

  /// vectorized_weights: the two passes of compiled, one run of the field per index.
  void vectorized() {
    weights_and_z();
    const Vec f = f_, w = w_, posterior = posterior_, update = update_;
    const Scalar z = z_;
    const int64_t count = count_, length = runs::run_length_of(count_), run_count = ceil_div(count_, length);
    Kokkos::parallel_for(kRunLabel, RangePolicy(0, run_count), KOKKOS_LAMBDA(int64_t run) {
      PB_BAYESIAN_POSTERIOR_UPDATE_OF_RUN(f.data(), w.data(), float(z()), posterior.data(), update.data(),
                                          run * length, runs::run_end(run, length, count));
    });
  }

  /// Pass 1 of vectorized_weights and streamed_stores: the weights stored and Z reduced, one run
  /// of the field per index.
  void weights_and_z() {
    const Vec f = f_, e = e_, w = w_;
    const int64_t count = count_, length = runs::run_length_of(count_), run_count = ceil_div(count_, length);
    Kokkos::parallel_reduce(kRunZLabel, RangePolicy(0, run_count), KOKKOS_LAMBDA(int64_t run, double& sum) {
      sum += PB_BAYESIAN_WEIGHTS_OF_RUN(f.data(), e.data(), w.data(), run * length, runs::run_end(run, length, count));
    }, z_);
  }

  /// streamed_stores: vectorized_weights' pass 1, then pass 2 as one work item per thread, each a
  /// contiguous range of whole lines of the outputs, written by non-temporal stores and fenced.
  void streamed() {
#ifdef PB_BAYESIAN_STREAMED
    weights_and_z();
    const Vec f = f_, w = w_, posterior = posterior_, update = update_;
    const Scalar z = z_;
    const int64_t count = count_;
    const int64_t items = std::min<int64_t>(ceil_div(count, runs::kValuesPerBlock),
                                            ExecSpace::concurrency());
    Kokkos::parallel_for(kStreamedLabel, RangePolicy(0, items), KOKKOS_LAMBDA(int64_t item) {
      const auto range = runs::values_of_item(item, items, count);
      PB_BAYESIAN_STREAMED_POSTERIOR_UPDATE(f.data(), w.data(), float(z()), posterior.data(), update.data(),
                                            range.first, range.last);
    });
#endif
  }

  bool host_read_branch_, compiled_, vectorized_, streamed_;
  HostArray field_;
  int64_t count_ = 0;  // complex values
  Vec f_, e_, w_, posterior_, update_;
  Scalar z_;  // Z on the device (baseline, compiled)
};

const VariantRegistration registration{
    "geometry/bayesian", "kokkos", {geo::kBaseline, geo::kCompiled, geo::kHostReadBranch, geo::kVectorizedWeights,
                                    geo::kStreamedStores},
    [](const VariantContext& context) { return std::make_unique<BayesianKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend

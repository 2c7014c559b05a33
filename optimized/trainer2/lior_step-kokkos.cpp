// trainer2/lior_step on Kokkos (default execution space). Math: reference/trainer2/lior_step.hpp;
// phase catalog and claims: suites/trainer2/lior_step.cpp.
//
//   s[m] = sqrt(max(0, sum_i g[i] v[m,i]^2) + eps);  dlior[m] = R[m] s[m];  three means
//
// The ladder, one optimization per rung (ops = kernels + deep_copies per iteration):
//   0 baseline         the unfused port: one kernel per operation (quadratic form -> s_tmp,
//                      dlior = R * s_tmp, the quadratic form again -> s for the metrics), then
//                      one parallel_reduce per mean, each into a host scalar: 3 host syncs, 6 ops.
//   1 batched_metrics  the same three kernels; the three sums come from one parallel_reduce
//                      into a device View of 3, read with one deep_copy: 1 host sync, 5 ops.
//   3 fused_lior_spd   one kernel computes s once and writes s and dlior, then phase 1's
//                      metrics: 1 host sync, 3 ops.
// Nothing is allocated in run(): every View and host mirror is made in setup().

#include "reference/trainer2/lior_step.hpp"
#include "suites/trainer2/lior_step_outputs.hpp"

#include <limits>
#include <stdexcept>
#include <string>

#include "backends/kokkos/kokkos_backend.hpp"
#include "phasebench/variant.hpp"

namespace pb::kokkos_backend {
namespace {

namespace ref = pb::reference::trainer2;

// ---- kernels ------------------------------------------------------------------------------------
// Free functions rather than members of the variant: CUDA builds of Kokkos turn KOKKOS_LAMBDA
// into an extended __host__ __device__ lambda, which nvcc rejects inside a private member
// function (checked with nvcc 13). Views are passed by value into the lambdas, never `this`.

using ConstMatrix = DeviceView<const float**>;
using ConstVector = DeviceView<const float*>;
using Vector = DeviceView<float*>;

constexpr int kDim = ref::kCoordinateDim;
constexpr float kEps = static_cast<float>(ref::kLiorEps);

// Labels are std::string constants: Kokkos takes labels as const std::string&, and a string
// literal longer than the small-string buffer would heap-allocate on every launch.
const std::string kSpeedLabel = "lior_step/speed";
const std::string kScaleLabel = "lior_step/dlior";
const std::string kFusedLabel = "lior_step/speed_dlior";
const std::string kMeanLabel = "lior_step/mean";
const std::string kSumsLabel = "lior_step/sums3";

/// sqrt(max(0, sum_i g[i] v[m,i]^2) + eps), in the reference's order of operations.
KOKKOS_INLINE_FUNCTION float lior_speed(const ConstMatrix& v, const ConstVector& g, int64_t m) {
  float quadratic_form = 0;
  for (int i = 0; i < kDim; ++i) quadratic_form += g(i) * v(m, i) * v(m, i);
  return device_sqrt((quadratic_form > 0.f ? quadratic_form : 0.f) + kEps);
}

/// s[m] = lior_speed(v, g, m).
void speed(const ConstMatrix& v, const ConstVector& g, const Vector& s) {
  Kokkos::parallel_for(kSpeedLabel, RangePolicy(0, s.extent(0)),
                       KOKKOS_LAMBDA(int64_t m) { s(m) = lior_speed(v, g, m); });
}

/// dlior[m] = R[m] * s[m].
void scale(const ConstVector& R, const ConstVector& s, const Vector& dlior) {
  Kokkos::parallel_for(kScaleLabel, RangePolicy(0, dlior.extent(0)),
                       KOKKOS_LAMBDA(int64_t m) { dlior(m) = R(m) * s(m); });
}

/// s and dlior from one evaluation of the quadratic form per row.
void speed_and_scale(const ConstMatrix& v, const ConstVector& g, const ConstVector& R,
                     const Vector& s, const Vector& dlior) {
  Kokkos::parallel_for(kFusedLabel, RangePolicy(0, s.extent(0)), KOKKOS_LAMBDA(int64_t m) {
    const float speed_m = lior_speed(v, g, m);
    s(m) = speed_m;
    dlior(m) = R(m) * speed_m;
  });
}

/// The mean of x, reduced into a host scalar: blocks, one host sync.
float mean_on_host(const ConstVector& x) {
  const int64_t rows = static_cast<int64_t>(x.extent(0));
  const float sum = reduce_to_host<float>(
      kMeanLabel, rows, KOKKOS_LAMBDA(int64_t m, float& partial) { partial += x(m); });
  return sum / static_cast<float>(rows);
}

/// The sums of dlior, R and s in one pass, as an array reduction of 3 values: Kokkos' default
/// init and join for arrays (zero, element-wise +=) do the rest, so no join with the volatile
/// signature Kokkos 3.4 requires (and Kokkos 4 rejects) is written here.
struct ThreeSums {
  using value_type = float[];
  using size_type = int64_t;
  const unsigned value_count = 3;
  ConstVector dlior, R, s;

  KOKKOS_INLINE_FUNCTION void operator()(int64_t m, value_type sums) const {
    sums[0] += dlior(m);
    sums[1] += R(m);
    sums[2] += s(m);
  }
};

/// sums = {sum dlior, sum R, sum s}, left on the device (no host wait).
void three_sums(const ConstVector& dlior, const ConstVector& R, const ConstVector& s,
                const Vector& sums) {
  Kokkos::parallel_reduce(kSumsLabel, RangePolicy(0, s.extent(0)), ThreeSums{3, dlior, R, s},
                          sums);
}

// ---- the variant ----------------------------------------------------------------------------------

class LiorStepKokkos final : public Variant {
 public:
  explicit LiorStepKokkos(int phase) : phase_(phase) {}

  void setup(const ArrayMap& inputs) override {
    const HostArray& v = require(inputs, "v");
    rows_ = v.shape.at(0);
    v_ = to_device_matrix("v", v);
    R_ = to_device_vector("R", require(inputs, "R"));
    g_ = to_device_vector("g", require(inputs, "g"));
    s_ = DeviceView<float*>("s", rows_);
    dlior_ = DeviceView<float*>("dlior", rows_);
    if (phase_ < 3) s_tmp_ = DeviceView<float*>("s_tmp", rows_);
    if (phase_ >= 1) {
      sums_ = DeviceView<float*>("sums", 3);
      sums_host_ = Kokkos::create_mirror_view(sums_);
    }
  }

  void poison_outputs() override {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Kokkos::deep_copy(s_, nan);
    Kokkos::deep_copy(dlior_, nan);
    if (phase_ >= 1) Kokkos::deep_copy(sums_, nan);
    means_ = {nan, nan, nan};
    Kokkos::fence();
  }

  void run() override {
    if (phase_ >= 3) {
      speed_and_scale(v_, g_, R_, s_, dlior_);
    } else {
      // As the original: s for dlior inside lior_step, then s again for the metrics.
      speed(v_, g_, s_tmp_);
      scale(R_, s_tmp_, dlior_);
      speed(v_, g_, s_);
    }
    if (phase_ >= 1) {
      read_means_batched();
    } else {
      read_means_one_by_one();
    }
  }

  ArrayMap outputs() override {
    const auto s = copy_for_outputs(s_);
    const auto dlior = copy_for_outputs(dlior_);
    return suites::trainer2::lior_step_outputs(rows_, s.data(), dlior.data(), means_);
  }

 private:
  // Phase 0: three reductions, each waited for and read by the host.
  void read_means_one_by_one() {
    means_.mean_dlior = mean_on_host(dlior_);
    means_.mean_R = mean_on_host(R_);
    means_.mean_s = mean_on_host(s_);
  }

  // Phases 1 and 3: one reduction leaves the three sums on the device; one transfer reads them.
  void read_means_batched() {
    three_sums(dlior_, R_, s_, sums_);
    copy_to_host(sums_host_, sums_);
    const float count = static_cast<float>(rows_);
    means_ = {sums_host_(0) / count, sums_host_(1) / count, sums_host_(2) / count};
  }

  static DeviceView<float*> to_device_vector(const std::string& label, const HostArray& array) {
    DeviceView<float*> device(label, array.numel());
    auto host = Kokkos::create_mirror_view(device);
    for (int64_t i = 0; i < array.numel(); ++i) host(i) = static_cast<float>(array.values[i]);
    Kokkos::deep_copy(device, host);
    return device;
  }

  // Filled element by element through a mirror, so the device View may use any layout
  // (LayoutRight on host spaces, LayoutLeft on CUDA for coalesced row access).
  static DeviceView<float**> to_device_matrix(const std::string& label, const HostArray& array) {
    const int64_t rows = array.shape.at(0), cols = array.shape.at(1);
    if (cols != ref::kCoordinateDim)
      throw std::invalid_argument("lior_step-kokkos: v must have " +
                                  std::to_string(ref::kCoordinateDim) + " columns, got " +
                                  std::to_string(cols));
    DeviceView<float**> device(label, rows, cols);
    auto host = Kokkos::create_mirror_view(device);
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t i = 0; i < cols; ++i) host(m, i) = static_cast<float>(array.values[m * cols + i]);
    Kokkos::deep_copy(device, host);
    return device;
  }

  int phase_;
  int64_t rows_ = 0;
  DeviceView<float**> v_;
  DeviceView<float*> R_, g_;
  DeviceView<float*> s_tmp_;  // phases 0 and 1: the first evaluation of s, consumed by dlior
  DeviceView<float*> s_, dlior_;
  DeviceView<float*> sums_;  // phases 1 and 3: {sum dlior, sum R, sum s} on the device
  DeviceView<float*>::HostMirror sums_host_;
  ref::LiorStepMeans<float> means_;
};

const VariantRegistration registration{
    "trainer2/lior_step", "kokkos", {0, 1, 3},
    [](const VariantContext& context) { return std::make_unique<LiorStepKokkos>(context.phase); }};

}  // namespace
}  // namespace pb::kokkos_backend

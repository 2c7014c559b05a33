// trainer2/lior_step on Kokkos (default execution space): one LIoR step and its three batch
// means. Math: reference/trainer2/lior_step.hpp; the speed kernels: trainer2_engine-kokkos.hpp.
//
//   s[m] = sqrt(max(0, sum_i g[i] v[m,i]^2) + eps);  dlior[m] = R[m] s[m];  three means
//
// The means are read by the host: three reductions into host scalars (3 host syncs), or with
// batched_metrics one reduction into a device View of 3 read with one deep_copy (1 host sync).
// single_pass_lior: s, dlior and the three sums in one kernel over blocks of rows,
// vectorized across rows on a host: the block's body is optimized/trainer2/lior_step_bodies.hpp
// (docs/trainer2.md, "The limit of lior_step").
// Nothing is allocated in run(): every View and host mirror is made in setup().

#include "reference/trainer2/lior_step.hpp"
#include "suites/trainer2/lior_step_outputs.hpp"

#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/kokkos/host_vectorization.hpp"
#include "optimized/trainer2/lior_step_bodies.hpp"
#include "optimized/trainer2/trainer2_engine-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"

namespace pb::kokkos_backend {
namespace {

namespace ref = pb::reference::trainer2;
namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;

// v keeps its memory space's default layout (LayoutLeft on CUDA: coalesced row access when one
// thread takes one row); the engine's speed kernels take any rank-2 View.
using Matrix = DeviceView<float**>;

// Labels are std::string constants: Kokkos takes labels as const std::string&, and a string
// literal longer than the small-string buffer would heap-allocate on every launch.
const std::string kMeanLabel = "lior_step/mean";
const std::string kSumsLabel = "lior_step/sums3";

/// The mean of x, reduced into a host scalar: blocks, one host sync.
float mean_on_host(const k2::ConstVec& x) {
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
  k2::ConstVec dlior, R, s;

  KOKKOS_INLINE_FUNCTION void operator()(int64_t m, value_type sums) const {
    sums[0] += dlior(m);
    sums[1] += R(m);
    sums[2] += s(m);
  }
};

/// sums = {sum dlior, sum R, sum s}, left on the device (no host wait).
void three_sums(const k2::ConstVec& dlior, const k2::ConstVec& R, const k2::ConstVec& s, const k2::Vec& sums) {
  Kokkos::parallel_reduce(kSumsLabel, RangePolicy(0, s.extent(0)), ThreeSums{3, dlior, R, s}, sums);
}

// ---- single_pass_lior ----------------------------------------------------------------------------

#ifdef PB_KOKKOS_KERNELS_ON_HOST
// The single pass reads v through its pointer, row m at v + m * kDim: the host's LayoutRight.
static_assert(std::is_same_v<Matrix::array_layout, Kokkos::LayoutRight>, "v must be row-major on the host");

namespace body = pb::optimized::trainer2;

// Also compiled for AVX2 and AVX-512 where the host allows it (host_vectorization.hpp).
#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void single_pass_block_cloned(
    const float* v, const float* g, const float* R, float* s, float* dlior, int64_t rows, int64_t block, float* sums) {
  body::single_pass_block(v, g, R, s, dlior, rows, block, sums);
}
#define PB_LIOR_SINGLE_PASS_BLOCK single_pass_block_cloned
#else
#define PB_LIOR_SINGLE_PASS_BLOCK body::single_pass_block
#endif

/// One block of rows per work item; Kokkos adds the blocks' 3 sums (an array reduction, as
/// ThreeSums) into a device View.
struct SinglePassLior {
  using value_type = float[];
  using size_type = int64_t;
  const unsigned value_count = 3;
  const float *v, *g, *R;
  float *s, *dlior;
  int64_t rows;

  void operator()(int64_t block, value_type sums) const { PB_LIOR_SINGLE_PASS_BLOCK(v, g, R, s, dlior, rows, block, sums); }
};

const std::string kSinglePassLabel = "lior_step/single_pass";
#endif

class LiorStepKokkos final : public Variant {
 public:
  explicit LiorStepKokkos(const VariantContext& context)
      : batched_metrics_(context.has(t2::kBatchedMetrics)),
        fused_(context.has(t2::kFusedLiorSpd)),
        single_pass_(context.has(t2::kSinglePassLior)) {}

  // The single pass is written for host cores (rows through a pointer, vectors of 16 rows).
  std::optional<CannotRun> support() const override {
#ifndef PB_KOKKOS_KERNELS_ON_HOST
    if (single_pass_)
      return CannotRun{CannotRun::Kind::Unsupported,
                       "single_pass_lior is written for host cores; this Kokkos runs kernels on a device"};
#endif
    return std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    const HostArray& v = require(inputs, "v");
    rows_ = v.shape.at(0);
    if (v.shape.at(1) != k2::kDim)
      throw std::invalid_argument("lior_step-kokkos: v must have " + std::to_string(k2::kDim) + " columns, got " +
                                  std::to_string(v.shape.at(1)));
    v_ = to_device<Matrix>("v", v, rows_, k2::kDim);
    R_ = to_device<k2::Vec>("R", require(inputs, "R"), rows_);
    g_ = to_device<k2::Vec>("g", require(inputs, "g"), k2::kDim);
    s_ = k2::Vec("s", rows_);
    dlior_ = k2::Vec("dlior", rows_);
    if (!fused_) s_first_ = k2::Vec("s_tmp", rows_);
    if (batched_metrics_ || single_pass_) {
      sums_ = k2::Vec("sums", 3);
      sums_host_ = Kokkos::create_mirror_view(sums_);
    }
  }

  void poison_outputs() override {
    fill_nan(s_);
    fill_nan(dlior_);
    fill_nan(sums_);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    means_ = {nan, nan, nan};
    Kokkos::fence();
  }

  void run() override {
    if (single_pass_) return run_single_pass();
    k2::lior_step(fused_, v_, g_, R_, s_, dlior_, s_first_);
    if (batched_metrics_) {
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
  // Three reductions, each waited for and read by the host.
  void read_means_one_by_one() {
    means_.mean_dlior = mean_on_host(dlior_);
    means_.mean_R = mean_on_host(R_);
    means_.mean_s = mean_on_host(s_);
  }

  // single_pass_lior: one kernel writes s and dlior and leaves the three sums on the device.
  void run_single_pass() {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    Kokkos::parallel_reduce(kSinglePassLabel, RangePolicy(0, body::single_pass_blocks(rows_)),
                            SinglePassLior{3, v_.data(), g_.data(), R_.data(), s_.data(), dlior_.data(), rows_}, sums_);
    read_means_from_sums();
#endif
  }

  // batched_metrics: one reduction leaves the three sums on the device; one transfer reads them.
  void read_means_batched() {
    three_sums(dlior_, R_, s_, sums_);
    read_means_from_sums();
  }

  void read_means_from_sums() {
    copy_to_host(sums_host_, sums_);
    const float count = static_cast<float>(rows_);
    means_ = {sums_host_(0) / count, sums_host_(1) / count, sums_host_(2) / count};
  }

  bool batched_metrics_, fused_, single_pass_;
  int64_t rows_ = 0;
  Matrix v_;
  k2::Vec R_, g_;
  k2::Vec s_first_;  // without fused_lior_spd: the first evaluation of s, consumed by dlior
  k2::Vec s_, dlior_;
  k2::Vec sums_;  // batched_metrics: {sum dlior, sum R, sum s} on the device
  k2::Vec::HostMirror sums_host_;
  ref::LiorStepMeans<float> means_;
};

const VariantRegistration registration{
    "trainer2/lior_step", "kokkos", {t2::kBaseline, t2::kBatchedMetrics, t2::kFusedLiorSpd, t2::kSinglePassLior},
    [](const VariantContext& context) { return std::make_unique<LiorStepKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend

// geometry/lior_memory_conv on Kokkos (default execution space). Math:
// reference/geometry/lior_memory_conv.hpp; per-element bodies: lior_memory_conv-bodies.hpp;
// catalog: suites/geometry/lior_memory_conv.cpp.
//
//   k_t = K(t+1)/(|sum K| + 1e-8);  out = w0 x + (1 - w0) causal_conv(k, x) along N, per channel,
//   w0 = softmax(wl)[0] (an input)
//
// host_taps: the parameters copied to the host (one counted sync), the taps built there and
// copied back. device_taps: one kernel for K(t+1), a reduction into a device View (no host
// wait), one kernel dividing by |sum|. fft_conv: FFTW (single precision) on the
// host path, plans made in setup(); on a GPU execution space this row is UNSUPPORTED (FFTW reads
// host memory; a GPU Kokkos would call cuFFT, as the cuda backend does). Nothing is allocated in
// run().

#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#ifdef PHASEBENCH_HAS_FFTW
#include <fftw3.h>
#endif

#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/geometry/lior_memory_conv-bodies.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_memory_conv.hpp"

namespace pb::kokkos_backend {
namespace {

namespace conv = pb::suites::geometry::lior_memory_conv;
namespace ref = conv::ref;
namespace body = pb::optimized::geometry::lior_memory_conv;

using Vec = DeviceView<float*>;
using Cell = DeviceView<float>;

const std::string kTapsLabel = "lior_memory_conv/taps";
const std::string kSumLabel = "lior_memory_conv/taps_sum";
const std::string kConvLabel = "lior_memory_conv/direct";
const std::string kFftLabel = "lior_memory_conv/fft_pointwise";

#ifdef PHASEBENCH_HAS_FFTW
/// The FFT phase's buffers and plans (layout: lior_memory_conv-bodies.hpp): xpad and ypad
/// [B, C, L], the spectrum [B, C, L/2+1], the padded taps [L] and their spectrum; one plan per
/// direction over all B C lines.
struct FftPlans {
  explicit FftPlans(const conv::ConvShape& s)
      : L(s.fft_length()), bins(L / 2 + 1), lines(s.batch * s.channels) {
    xpad = fftwf_alloc_real(static_cast<size_t>(lines * L));
    ypad = fftwf_alloc_real(static_cast<size_t>(lines * L));
    spec = fftwf_alloc_complex(static_cast<size_t>(lines * bins));
    kpad = fftwf_alloc_real(static_cast<size_t>(L));
    kspec = fftwf_alloc_complex(static_cast<size_t>(bins));
    const int length = static_cast<int>(L), many = static_cast<int>(lines), nbins = static_cast<int>(bins);
    // FFTW_MEASURE times candidate algorithms on these buffers (overwriting them): before filling.
    forward = fftwf_plan_many_dft_r2c(1, &length, many, xpad, nullptr, 1, length, spec, nullptr, 1, nbins, FFTW_MEASURE);
    inverse = fftwf_plan_many_dft_c2r(1, &length, many, spec, nullptr, 1, nbins, ypad, nullptr, 1, length, FFTW_MEASURE);
    taps = fftwf_plan_dft_r2c_1d(length, kpad, kspec, FFTW_MEASURE);
    std::fill(xpad, xpad + lines * L, 0.f);  // the padding stays zero: r2c keeps its input
    std::fill(kpad, kpad + L, 0.f);
  }
  ~FftPlans() {
    for (fftwf_plan plan : {forward, inverse, taps}) fftwf_destroy_plan(plan);
    for (float* p : {xpad, ypad, kpad}) fftwf_free(p);
    for (fftwf_complex* p : {spec, kspec}) fftwf_free(p);
  }
  FftPlans(const FftPlans&) = delete;
  FftPlans& operator=(const FftPlans&) = delete;

  int64_t L, bins, lines;
  float *xpad, *ypad, *kpad;
  fftwf_complex *spec, *kspec;
  fftwf_plan forward, inverse, taps;
};
#endif

class LiorMemoryConvKokkos final : public Variant {
 public:
  explicit LiorMemoryConvKokkos(const VariantContext& context)
      : device_taps_(context.has(conv::kDeviceTaps)), fft_(context.has(conv::kFftConv)) {}

  std::optional<CannotRun> support() const override {
    if (!fft_) return std::nullopt;
#ifdef PHASEBENCH_HAS_FFTW
    if (device_is_gpu())
      return CannotRun{CannotRun::Kind::Unsupported,
                       "FFTW reads host memory and the Kokkos execution space is a GPU (" + device_name() + ")"};
    return std::nullopt;
#else
    return CannotRun{CannotRun::Kind::Unsupported, "built without FFTW (Debian: libfftw3-dev; see the configure summary)"};
#endif
  }

  void setup(const ArrayMap& inputs) override {
    const HostArray& x = require(inputs, conv::kInput);
    shape_ = {x.shape[0], x.shape[1], x.shape[2]};
    x_ = to_device<Vec>("x", x, shape_.values());
    params_ = to_device<Vec>("params", require(inputs, conv::kKernelParams), ref::kParams);
    params_host_ = Kokkos::create_mirror_view(params_);
    taps_ = Vec("taps", shape_.length);
    taps_host_ = Kokkos::create_mirror_view(taps_);
    sum_ = Cell("taps_sum");
    out_ = Vec("out", shape_.values());
#ifdef PHASEBENCH_HAS_FFTW
    if (fft_) fft_plans_ = std::make_unique<FftPlans>(shape_);
#endif
  }

  void poison_outputs() override {
    fill_nan(out_);
    Kokkos::fence();
  }

  void run() override {
    if (device_taps_) {
      taps_on_device();
    } else {  // the original: weights .cpu().numpy(), taps on the host, copied to the device
      copy_to_host(params_host_, params_);
      ref::taps<float>(params_host_.data(), shape_.length, taps_host_.data());
      Kokkos::deep_copy(taps_, taps_host_);
    }
#ifdef PHASEBENCH_HAS_FFTW
    if (fft_) {
      fft_conv();
      return;
    }
#endif
    direct_conv();
  }

  ArrayMap outputs() override {
    ArrayMap out;
    out[conv::kOutput] = HostArray::from_floats({shape_.batch, shape_.length, shape_.channels},
                                                to_host_vector(out_).data(), shape_.values());
    return out;
  }

 private:
  /// taps(t) = K(t+1) / |sum_t K(t+1)|: the sum reduced into a device View (no host wait).
  /// The reduction visits the taps tail first, as ref::taps sums (why: its comment).
  void taps_on_device() const {
    const Vec params = params_, taps = taps_;
    const int64_t n = shape_.length;
    const Cell sum = sum_;
    Kokkos::parallel_for(
        kTapsLabel, RangePolicy(0, shape_.length),
        KOKKOS_LAMBDA(int64_t t) { body::raw_tap_body(t, params.data(), taps.data()); });
    Kokkos::parallel_reduce(
        kSumLabel, RangePolicy(0, shape_.length), KOKKOS_LAMBDA(int64_t t, float& acc) { acc += taps(n - 1 - t); }, sum);
    Kokkos::parallel_for(
        kTapsLabel, RangePolicy(0, shape_.length),
        KOKKOS_LAMBDA(int64_t t) { body::normalize_tap_body(t, sum.data(), taps.data()); });
  }

  /// w0 as the kernels read it: host_taps has the host's copy; device_taps reads the device's.
  float host_w0() const { return device_taps_ ? 0.f : params_host_(ref::kW0); }

  /// One (b, t) row of C channels per work item: reference/'s direct_row.
  void direct_conv() const {
    const Vec x = x_, out = out_, taps = taps_, params = params_;
    const bool device_taps = device_taps_;
    const int64_t n = shape_.length, channels = shape_.channels;
    const float w0 = host_w0();
    Kokkos::parallel_for(
        kConvLabel, RangePolicy(0, shape_.batch * n), KOKKOS_LAMBDA(int64_t row) {
          body::direct_body(row, taps.data(), x.data(), n, channels, device_taps ? params(ref::kW0) : w0, out.data());
        });
  }

#ifdef PHASEBENCH_HAS_FFTW
  /// Zero-padded real FFTs of length L = 2N: y = irfft(rfft(x) rfft(k)) / L, then the blend.
  void fft_conv() const {
    FftPlans& f = *fft_plans_;
    const int64_t n = shape_.length, channels = shape_.channels, L = f.L, bins = f.bins;
    const Vec x = x_, out = out_, taps = taps_, params = params_;
    float *xpad = f.xpad, *kpad = f.kpad, *spec = reinterpret_cast<float*>(f.spec);
    const float* kspec = reinterpret_cast<const float*>(f.kspec);
    const float* ypad = f.ypad;
    Kokkos::parallel_for(
        kFftLabel, RangePolicy(0, shape_.values()),
        KOKKOS_LAMBDA(int64_t i) { body::pad_body(i, x.data(), n, channels, L, xpad); });
    Kokkos::parallel_for(kFftLabel, RangePolicy(0, n), KOKKOS_LAMBDA(int64_t t) { kpad[t] = taps(t); });
    Kokkos::fence();
    fftwf_execute(f.taps);
    fftwf_execute(f.forward);
    const float inv_L = 1.f / float(L);
    Kokkos::parallel_for(
        kFftLabel, RangePolicy(0, f.lines * bins),
        KOKKOS_LAMBDA(int64_t i) { body::pointwise_body(i, kspec, bins, inv_L, spec); });
    Kokkos::fence();
    fftwf_execute(f.inverse);
    const bool device_taps = device_taps_;
    const float w0 = host_w0();
    Kokkos::parallel_for(
        kFftLabel, RangePolicy(0, shape_.values()), KOKKOS_LAMBDA(int64_t i) {
          body::blend_body(i, x.data(), ypad, n, channels, L, device_taps ? params(ref::kW0) : w0, out.data());
        });
  }

  std::unique_ptr<FftPlans> fft_plans_;
#endif

  bool device_taps_, fft_;
  conv::ConvShape shape_{};
  Vec x_, params_, taps_, out_;
  Vec::HostMirror params_host_, taps_host_;
  Cell sum_;
};

const VariantRegistration registration{
    conv::kWorkload, "kokkos", {conv::kHostTaps, conv::kDeviceTaps, conv::kFftConv},
    [](const VariantContext& context) { return std::make_unique<LiorMemoryConvKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend

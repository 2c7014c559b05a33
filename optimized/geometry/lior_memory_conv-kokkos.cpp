// geometry/lior_memory_conv on Kokkos (default execution space). Math:
// reference/geometry/lior_memory_conv.hpp; per-element bodies: lior_memory_conv_bodies.hpp;
// catalog: suites/geometry/lior_memory_conv.cpp.
//
//   k_t = K(t+1)/(|sum K| + 1e-8);  out = w0 x + (1 - w0) causal_conv(k, x) along N, per channel,
//   w0 = softmax(wl)[0] (an input)
//
// host_taps: the parameters copied to the host (one counted sync), the taps built there and
// copied back. device_taps: one kernel for K(t+1), a reduction into a device View (no host
// wait), one kernel dividing by |sum|. fft_conv: FFTW (single precision) on the
// host path, plans made in setup(); on a GPU execution space this row is UNSUPPORTED (FFTW reads
// host memory; a GPU Kokkos would call cuFFT, as the cuda backend does). blocked_fft (beyond the
// seed, host cores): the same transforms a chunk of kChunkLines lines at a time, each chunk padded,
// transformed, multiplied, transformed back and blended while its buffers are in L2, the chunks
// split across the host threads (fftwf_execute_dft_* with one thread's buffers: FFTW's execute is
// thread-safe, its planner is not, so every plan is made in setup()). fft_conv runs all B C lines
// through each step in turn, on one thread, each step a pass through memory. Nothing is allocated
// in run().

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#ifdef PHASEBENCH_HAS_FFTW
#include <fftw3.h>
#endif

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/geometry/lior_memory_conv_bodies.hpp"
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
const std::string kBlockedLabel = "lior_memory_conv/blocked_fft";

#ifdef PHASEBENCH_HAS_FFTW
/// The FFT phase's buffers and plans (layout: lior_memory_conv_bodies.hpp): xpad and ypad
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
// kChunkLines = 4: 3 x 4 x 32 kB of buffers at the default size (L = 8192), in a 1 MB L2 with room
// for the lines of x being read; FFTW on one thread is fastest in chunks of 4 and slowest as one
// batch of all lines (docs/geometry.md). blocked_fft's loops around the transforms, full chunks (the lines known to be kChunkLines) and
// the product, also compiled for AVX2 and AVX-512 where the host allows it (host_vectorization.hpp).
constexpr int64_t kChunkLines = 4;
static_assert(kChunkLines <= body::kMaxChunkLines);
PB_HOST_ISA_CLONES void pad_full_chunk(const float* x, int64_t n, int64_t channels, int64_t L, int64_t first,
                                       float* pad) {
  body::pad_lines<kChunkLines>(x, n, channels, L, first, kChunkLines, pad);
}
PB_HOST_ISA_CLONES void multiply_chunk(const float* kspec, int64_t bins, int64_t count, float inv_L, float* spec) {
  body::multiply_spectra(kspec, bins, count, inv_L, spec);
}
PB_HOST_ISA_CLONES void blend_full_chunk(const float* x, const float* y, int64_t n, int64_t channels, int64_t L,
                                         int64_t first, float w0, float* out) {
  body::blend_lines<kChunkLines>(x, y, n, channels, L, first, kChunkLines, w0, out);
}

/// blocked_fft's buffers and plans. Each thread slot has a chunk's padded lines, spectra and
/// results (line l of a chunk at l L; the padding past N stays zero); one plan for a full chunk,
/// one for the shorter last chunk where B C is not a multiple of kChunkLines, and the taps' plan.
/// Every buffer is an fftwf_alloc block of its own, so every slot's arrays are aligned as the
/// planning ones were (what the new-array execute functions require).
class BlockedFft {
 public:

  BlockedFft(const conv::ConvShape& s, int64_t slot_count)
      : shape_(s), L_(s.fft_length()), bins_(L_ / 2 + 1), lines_(s.batch * s.channels) {
    kpad_ = fftwf_alloc_real(static_cast<size_t>(L_));
    kspec_ = fftwf_alloc_complex(static_cast<size_t>(bins_));
    for (int64_t i = 0; i < slot_count; ++i)
      slots_.push_back({fftwf_alloc_real(static_cast<size_t>(kChunkLines * L_)),
                        fftwf_alloc_complex(static_cast<size_t>(kChunkLines * bins_)),
                        fftwf_alloc_real(static_cast<size_t>(kChunkLines * L_))});
    // FFTW_MEASURE times candidate algorithms on these buffers (overwriting them): before filling.
    const Slot& planned = slots_.front();
    const int64_t rest = lines_ % kChunkLines;
    forward_full_ = plan_forward(planned, kChunkLines);
    inverse_full_ = plan_inverse(planned, kChunkLines);
    forward_rest_ = rest ? plan_forward(planned, rest) : nullptr;
    inverse_rest_ = rest ? plan_inverse(planned, rest) : nullptr;
    taps_ = fftwf_plan_dft_r2c_1d(static_cast<int>(L_), kpad_, kspec_, FFTW_MEASURE);
    std::fill(kpad_, kpad_ + L_, 0.f);
    for (const Slot& slot : slots_) std::fill(slot.pad, slot.pad + kChunkLines * L_, 0.f);
  }
  ~BlockedFft() {
    for (fftwf_plan plan : {forward_full_, inverse_full_, forward_rest_, inverse_rest_, taps_})
      if (plan) fftwf_destroy_plan(plan);
    for (const Slot& slot : slots_) {
      fftwf_free(slot.pad);
      fftwf_free(slot.spec);
      fftwf_free(slot.y);
    }
    fftwf_free(kpad_);
    fftwf_free(kspec_);
  }
  BlockedFft(const BlockedFft&) = delete;
  BlockedFft& operator=(const BlockedFft&) = delete;

  /// The taps' spectrum from the N taps (host memory), once per iteration.
  void transform_taps(const float* taps) {
    std::copy(taps, taps + shape_.length, kpad_);
    fftwf_execute(taps_);
  }

  int64_t chunks() const { return body::chunk_count(lines_, kChunkLines); }
  int64_t slot_count() const { return static_cast<int64_t>(slots_.size()); }

  /// Chunk `chunk` of the lines through slot `slot`'s buffers: pad, forward, product with the taps'
  /// spectrum (and the 1/L of the unnormalized inverse), inverse, blend into out.
  void convolve_chunk(int64_t slot, int64_t chunk, const float* x, float w0, float* out) const {
    const Slot& buffers = slots_[static_cast<size_t>(slot)];
    const auto [first, count] = body::line_chunk(chunk, lines_, kChunkLines);
    const bool full = count == kChunkLines;
    const int64_t n = shape_.length, channels = shape_.channels;
    if (full) {
      pad_full_chunk(x, n, channels, L_, first, buffers.pad);
    } else {
      body::pad_lines(x, n, channels, L_, first, count, buffers.pad);
    }
    fftwf_execute_dft_r2c(full ? forward_full_ : forward_rest_, buffers.pad, buffers.spec);
    multiply_chunk(reinterpret_cast<const float*>(kspec_), bins_, count, 1.f / float(L_),
                   reinterpret_cast<float*>(buffers.spec));
    fftwf_execute_dft_c2r(full ? inverse_full_ : inverse_rest_, buffers.spec, buffers.y);
    if (full) {
      blend_full_chunk(x, buffers.y, n, channels, L_, first, w0, out);
    } else {
      body::blend_lines(x, buffers.y, n, channels, L_, first, count, w0, out);
    }
  }

 private:
  struct Slot {
    float* pad;
    fftwf_complex* spec;
    float* y;
  };

  fftwf_plan plan_forward(const Slot& slot, int64_t count) const {
    const int length = static_cast<int>(L_), many = static_cast<int>(count), bins = static_cast<int>(bins_);
    return fftwf_plan_many_dft_r2c(1, &length, many, slot.pad, nullptr, 1, length, slot.spec, nullptr, 1, bins,
                                   FFTW_MEASURE);
  }
  fftwf_plan plan_inverse(const Slot& slot, int64_t count) const {
    const int length = static_cast<int>(L_), many = static_cast<int>(count), bins = static_cast<int>(bins_);
    return fftwf_plan_many_dft_c2r(1, &length, many, slot.spec, nullptr, 1, bins, slot.y, nullptr, 1, length,
                                   FFTW_MEASURE);
  }

  conv::ConvShape shape_;
  int64_t L_, bins_, lines_;
  std::vector<Slot> slots_;
  float* kpad_;
  fftwf_complex* kspec_;
  fftwf_plan forward_full_, inverse_full_, forward_rest_, inverse_rest_, taps_;
};
#endif

class LiorMemoryConvKokkos final : public Variant {
 public:
  explicit LiorMemoryConvKokkos(const VariantContext& context)
      : blocked_(context.has(conv::kBlockedFft)),
        device_taps_(context.has(conv::kDeviceTaps) || blocked_),
        fft_(context.has(conv::kFftConv) || blocked_) {}

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
    if (blocked_) {
      blocked_fft_ = std::make_unique<BlockedFft>(shape_, Kokkos::DefaultHostExecutionSpace().concurrency());
    } else if (fft_) {
      fft_plans_ = std::make_unique<FftPlans>(shape_);
    }
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
    if (blocked_) return blocked_fft_conv();
    if (fft_) return fft_conv();
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

  /// fft_conv's transforms per chunk of lines, the chunks split across the host threads (one
  /// contiguous range of chunks each). Only on host cores (support()): the Views' memory is the host's.
  void blocked_fft_conv() {
    Kokkos::fence();  // the taps' kernels
    BlockedFft& f = *blocked_fft_;
    f.transform_taps(taps_.data());
    const float* x = x_.data();
    const float w0 = params_.data()[ref::kW0];
    float* out = out_.data();
    const int64_t slots = f.slot_count(), chunks = f.chunks();
    const BlockedFft& plans = f;
    Kokkos::parallel_for(kBlockedLabel, Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, slots),
                         [&plans, x, w0, out, slots, chunks](int64_t slot) {
                           body::for_slot_chunks(slot, slots, chunks, [&](int64_t chunk) {
                             plans.convolve_chunk(slot, chunk, x, w0, out);
                           });
                         });
    Kokkos::fence();
  }

  std::unique_ptr<FftPlans> fft_plans_;
  std::unique_ptr<BlockedFft> blocked_fft_;
#endif

  bool blocked_, device_taps_, fft_;
  conv::ConvShape shape_{};
  Vec x_, params_, taps_, out_;
  Vec::HostMirror params_host_, taps_host_;
  Cell sum_;
};

const VariantRegistration registration{
    conv::kWorkload, "kokkos", {conv::kHostTaps, conv::kDeviceTaps, conv::kFftConv, conv::kBlockedFft},
    [](const VariantContext& context) { return std::make_unique<LiorMemoryConvKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend

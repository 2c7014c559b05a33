// geometry/lior_memory_conv on oneDNN (CPU engine). Math: reference/geometry/lior_memory_conv.hpp;
// catalog: suites/geometry/lior_memory_conv.cpp.
//
//   k_t = K(t+1)/(|sum K| + 1e-8);  out = w0 x + (1 - w0) causal_conv(k, x) along N, per channel,
//   w0 = softmax(wl)[0] (an input)
//
// host_taps, as the original: the parameters read to the host (read_floats_to_host: one counted
// sync), the taps built there and laid out as the lower-triangular Toeplitz operand
// T[t,s] = k[t-s] (the host-to-device upload of the original, here [N,N]), then
//   out = w0 x                                   binary mul (w0 a [1,1,1] memory)
//   out = (T x[b]) (1 - w0) + out                matmul [1,N,N] x [B,N,C], post-ops mul and sum
// Why the matmul and not a convolution primitive: the causal form is a 1-D depthwise convolution
// (groups = C) with a length-N kernel and N-1 zeros of left padding; oneDNN's optimized depthwise
// kernels target small kernels (a length-4096 one is expected to fall back to a slow
// implementation; not measured here), while the Toeplitz product is one GEMM: twice the
// multiply-adds of the causal sum (the zero upper triangle included) at GEMM speed.
// device_taps and fft_conv are UNSUPPORTED: no oneDNN primitive fits (see support()).

#include <algorithm>
#include <limits>
#include <vector>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/primitives.hpp"
#include "backends/onednn/program.hpp"
#include "suites/geometry/lior_memory_conv.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace conv = pb::suites::geometry::lior_memory_conv;
namespace ref = conv::ref;
using dnnl::algorithm;

class LiorMemoryConvOnednn final : public pb::Variant {
 public:
  explicit LiorMemoryConvOnednn(const pb::VariantContext& context)
      : device_(context.device), device_taps_(context.has(conv::kDeviceTaps)), fft_(context.has(conv::kFftConv)) {}

  std::optional<pb::CannotRun> support() const override {
    if (fft_)
      return pb::CannotRun{pb::CannotRun::Kind::Unsupported, "oneDNN has no FFT primitive"};
    if (device_taps_)
      return pb::CannotRun{pb::CannotRun::Kind::Unsupported,
                           "oneDNN has no cos eltwise (the kernel's oscillating term) and no gather to lay the "
                           "taps into the Toeplitz operand: the taps cannot be built by primitives"};
    return ob::cannot_run_on(device_);
  }

  void setup(const pb::ArrayMap& in) override {
    const pb::HostArray& x = pb::require(in, conv::kInput);
    shape_ = x.shape;
    const int64_t B = shape_[0], N = shape_[1], C = shape_[2];
    x_ = ob::upload(x, {B, N, C});
    params_ = ob::upload(pb::require(in, conv::kKernelParams), {ref::kParams});
    toeplitz_ = ob::filled({1, N, N}, 0.f);
    w0_ = ob::filled({1, 1, 1}, 0.f);
    keep_ = ob::filled({1, 1, 1}, 0.f);
    out_ = ob::filled({B, N, C}, 0.f);
    params_host_.assign(ref::kParams, 0.f);
    taps_.assign(static_cast<size_t>(N), 0.f);
    program_.host_step([this] { taps_on_host(); });
    program_.add(ob::binary(algorithm::binary_mul, x_, w0_, out_));
    ob::PostOps memory_weight;
    memory_weight.binary(algorithm::binary_mul, keep_).sum(1.0f);
    program_.add(ob::matmul(toeplitz_, x_, out_, memory_weight));
  }

  void poison_outputs() override { ob::fill_floats(out_, std::numeric_limits<float>::quiet_NaN()); }

  void run() override { program_(); }

  pb::ArrayMap outputs() override { return {{conv::kOutput, ob::download(out_, shape_)}}; }

 private:
  /// The original's .cpu().numpy(): parameters to the host, taps there, then the operands
  /// written to engine memory (T row t = k[t], k[t-1], ..., k[0], then zeros above the diagonal).
  void taps_on_host() {
    ob::read_floats_to_host(params_, params_host_.data(), params_host_.size());
    const int64_t N = shape_[1];
    ref::taps<float>(params_host_.data(), N, taps_.data());
    float* T = ob::host_floats(toeplitz_);
    for (int64_t t = 0; t < N; ++t) std::reverse_copy(taps_.begin(), taps_.begin() + t + 1, T + t * N);
    ob::host_floats(w0_)[0] = params_host_[ref::kW0];
    ob::host_floats(keep_)[0] = 1.f - params_host_[ref::kW0];
  }

  std::string device_;
  bool device_taps_, fft_;
  std::vector<int64_t> shape_;
  dnnl::memory x_, params_, toeplitz_, w0_, keep_, out_;
  std::vector<float> params_host_, taps_;
  ob::Program program_;
};

const pb::VariantRegistration registration{
    conv::kWorkload, "onednn", {conv::kHostTaps, conv::kDeviceTaps, conv::kFftConv},
    [](const pb::VariantContext& context) { return std::make_unique<LiorMemoryConvOnednn>(context); }};

}  // namespace

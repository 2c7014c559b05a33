// geometry/lior_memory_conv on LibTorch, devices cpu and cuda. Math:
// reference/geometry/lior_memory_conv.hpp; catalog: suites/geometry/lior_memory_conv.cpp.
//
//   k_t = K(t+1)/(|sum K| + 1e-8);  out = w0 x + (1 - w0) causal_conv(k, x) along N, per channel,
//   w0 = softmax(wl)[0] (an input)
//
// The direct form (host_taps, device_taps) is the causal convolution as one batched product with
// the lower-triangular Toeplitz matrix T[t,s] = k[t-s] (a GEMM, the fastest O(N^2) form LibTorch
// has: conv1d with a length-N depthwise kernel falls back to im2col + GEMV per channel).
// T is a strided view of the padded, reversed taps, flipped into a copy. fft_conv: torch::fft.

#include <torch/fft.h>

#include <limits>
#include <vector>

#include "backends/torch/torch_backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_memory_conv.hpp"

namespace pb::torch_backend {
namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace conv = pb::suites::geometry::lior_memory_conv;
namespace ref = conv::ref;

class LiorMemoryConvTorch final : public Variant {
 public:
  explicit LiorMemoryConvTorch(const VariantContext& context)
      : device_(context.device), device_taps_(context.has(conv::kDeviceTaps)), fft_(context.has(conv::kFftConv)) {}

  std::optional<CannotRun> support() const override { return cannot_run_on(device_); }

  void setup(const ArrayMap& inputs) override {
    const torch::Device device = device_for(device_);
    x_ = to_tensor(require(inputs, conv::kInput), device);
    params_ = to_tensor(require(inputs, conv::kKernelParams), device);
    length_ = x_.size(1);
    tau_ = torch::arange(1, length_ + 1, x_.options());
    out_ = torch::zeros_like(x_);
  }

  void poison_outputs() override { out_.fill_(std::numeric_limits<float>::quiet_NaN()); }

  void run() override {
    torch::Tensor w0;
    torch::Tensor k;
    if (device_taps_) {
      k = device_taps();
      w0 = params_[ref::kW0];
    } else {  // the original: w = weights.detach().cpu().numpy(), taps built on the host
      const torch::Tensor host = read_to_host(params_);
      std::vector<float> taps(static_cast<size_t>(length_));
      ref::taps<float>(host.data_ptr<float>(), length_, taps.data());
      k = torch::from_blob(taps.data(), {length_}, torch::kFloat32).to(x_.device(), false, true);
      w0 = torch::scalar_tensor(host.data_ptr<float>()[ref::kW0], x_.options());
    }
    const torch::Tensor memory = fft_ ? fft_causal_conv(k) : toeplitz_causal_conv(k);
    torch::add_out(out_, w0 * x_, (1 - w0) * memory);
  }

  ArrayMap outputs() override {
    ArrayMap out;
    out[conv::kOutput] = to_host_array(out_);
    return out;
  }

 private:
  /// The seed: K(tau) from the parameters on the device, normalized by |sum K| there.
  torch::Tensor device_taps() const {
    const auto p = [&](int i) { return params_[i]; };
    const auto clamped_exp = [](const torch::Tensor& a) {
      return torch::exp(torch::clamp(a, -ref::kExponentBound, ref::kExponentBound));
    };
    const torch::Tensor tau = torch::clamp_min(tau_, ref::kTauMin);
    const torch::Tensor w = torch::softmax(params_.narrow(0, ref::kWl0, 3), 0);
    const torch::Tensor exponential = p(ref::kAlpha) * clamped_exp(-p(ref::kBeta) * tau);
    const torch::Tensor power_law = p(ref::kGamma) * torch::pow(tau, -p(ref::kDelta)) * clamped_exp(-p(ref::kXi) * tau);
    const torch::Tensor oscillation =
        p(ref::kEta) * torch::cos(p(ref::kOmega) * tau + p(ref::kPhi)) * clamped_exp(-p(ref::kZeta) * tau);
    const torch::Tensor K = torch::clamp(w[0] * exponential + w[1] * power_law + w[2] * oscillation,
                                         -ref::kKernelBound, ref::kKernelBound);
    return K / (K.sum().abs() + ref::kTapsSumEpsilon);
  }

  /// conv[b] = T x[b], T[t,s] = k[t-s] (s <= t): u = (k reversed, N-1 zeros); the Hankel view
  /// H[r,s] = u[r+s] is T with its rows reversed.
  torch::Tensor toeplitz_causal_conv(const torch::Tensor& k) const {
    const torch::Tensor u = torch::cat({k.flip(0), torch::zeros({length_ - 1}, k.options())});
    const torch::Tensor T = u.as_strided({length_, length_}, {1, 1}).flip(0);
    return torch::matmul(T, x_);
  }

  /// Real FFTs of length 2N along the sequence: the circular convolution is the causal one on t < N.
  torch::Tensor fft_causal_conv(const torch::Tensor& k) const {
    const int64_t L = 2 * length_;
    const torch::Tensor K = torch::fft::rfft(k, L).view({1, L / 2 + 1, 1});
    const torch::Tensor X = torch::fft::rfft(x_, L, 1);
    return torch::fft::irfft(X * K, L, 1).narrow(1, 0, length_);
  }

  std::string device_;
  bool device_taps_, fft_;
  int64_t length_ = 0;
  torch::Tensor x_, params_, tau_, out_;
};

const VariantRegistration registration{
    conv::kWorkload, "torch", {conv::kHostTaps, conv::kDeviceTaps, conv::kFftConv},
    [](const VariantContext& context) { return std::make_unique<LiorMemoryConvTorch>(context); }};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
}  // namespace pb::torch_backend

// spinlock/cnn_rollout_<policy> on Kokkos (default execution space). Math:
// reference/spinlock/cnn_rollout.hpp; catalog and budgets: suites/spinlock/cnn_rollout.cpp.
//
//   for t = 1..T-1, for each realization m:  O = head(GELU(norm(conv(... GELU(norm(conv(X)))))))
//                                             X = policy(X, O)      (trajectory row t)
//
// Two rollouts. EagerRolloutKokkos, the plan without compile_fusion: one parallel_for per
// operation (conv, norm statistics, normalize, GELU, head, policy) into a fresh View each, one
// realization per call. FusedRolloutKokkos<P>: one team kernel per block (a team per sample and
// norm group convolves the group's planes, reduces their statistics, then normalizes + GELU in
// place) and one kernel for the head and the policy update, with activations and weights stored
// as P (Bf16 with mixed_precision, else Fp32); what else the plan asks of it (operator_opts,
// batching, profile_guided, exact_fast) is read once into its RolloutOptions.
// Nothing reads the host inside run(): the rollout needs no host sync.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/common/integer_math.hpp"
#include "phasebench/variant.hpp"
#include "suites/spinlock/cnn_rollout.hpp"

namespace pb::kokkos_backend {
namespace {

namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;
using pb::optimized::ceil_div;

using TeamPolicy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<int64_t>>;
using Member = TeamPolicy::member_type;
using Floats = DeviceView<float*>;
using ConstFloats = DeviceView<const float*>;

constexpr int kFields = ref::kFieldChannels;

// Labels are std::string constants: a long literal would allocate a string on every launch.
const std::string kInitLabel = "spinlock/cnn_rollout/init";
const std::string kConvLabel = "spinlock/cnn_rollout/conv";
const std::string kStatsLabel = "spinlock/cnn_rollout/norm_statistics";
const std::string kNormalizeLabel = "spinlock/cnn_rollout/normalize";
const std::string kGeluLabel = "spinlock/cnn_rollout/gelu";
const std::string kHeadLabel = "spinlock/cnn_rollout/head";
const std::string kPolicyLabel = "spinlock/cnn_rollout/policy";
const std::string kBlockLabel = "spinlock/cnn_rollout/conv_norm_gelu";
const std::string kHeadPolicyLabel = "spinlock/cnn_rollout/head_policy";
const std::string kBufferLabel = "spinlock/cnn_rollout/buffer";

// ---- precisions: how activations and weights are stored, and widened for the FMA ----------------

struct Fp32 {
  using Storage = float;
  KOKKOS_INLINE_FUNCTION static float load(float v) { return v; }
  KOKKOS_INLINE_FUNCTION static float store(float v) { return v; }
};

/// bf16 as its 16 bits: the upper half of the float, rounded to nearest even. Kokkos 3.4 has no
/// bf16 type: operands are stored as these bits and widened to float for every multiply-add, so
/// accumulation, norm statistics and the trajectory stay fp32, exactly what bf16 operands with
/// fp32 accumulation compute.
struct Bf16 {
  using Storage = std::uint16_t;
  KOKKOS_INLINE_FUNCTION static float load(std::uint16_t bits) {
    const std::uint32_t widened = std::uint32_t{bits} << 16;
    float v;
    std::memcpy(&v, &widened, sizeof v);
    return v;
  }
  KOKKOS_INLINE_FUNCTION static std::uint16_t store(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
  }
};

// ---- the pointwise math, as the reference writes it ----------------------------------------------

KOKKOS_INLINE_FUNCTION float gelu(float v, bool tanh_form) {
  if (tanh_form) {
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * v * (1.0f + device_math::tanh(k * (v + 0.044715f * v * v * v)));
  }
  return 0.5f * v * (1.0f + device_math::erf(v * 0.7071067811865476f));
}

/// x * P(x^2) / Q(x^2) with x clamped to [-bound, bound], the polynomials' coefficients from the
/// highest power down: the form vectorizing math libraries give erf and tanh, with no library
/// call, so a loop of GELUs vectorizes.
template <int kP, int kQ>
KOKKOS_INLINE_FUNCTION float odd_rational(float x, float bound, const float (&p)[kP], const float (&q)[kQ]) {
  x = x < -bound ? -bound : (x > bound ? bound : x);
  const float x2 = x * x;
  float numerator = p[0], denominator = q[0];
  for (int i = 1; i < kP; ++i) numerator = numerator * x2 + p[i];
  for (int i = 1; i < kQ; ++i) denominator = denominator * x2 + q[i];
  return x * numerator / denominator;
}

/// erf, clamped at +-3.83 where it is 1 in float. Measured against std::erf on [-10, 10] in steps
/// of 1e-4: max absolute error 4.2e-7 (erff: 5.8e-8), far below the fp32 budget of 1e-5 per step.
KOKKOS_INLINE_FUNCTION float erf_rational(float x) {
  const float p[] = {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
                     -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
  const float q[] = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f,
                     -1.42647390514189e-02f};
  return odd_rational(x, 3.832506856900711f, p, q);
}

/// tanh, clamped at +-7.905 where it is 1 in float. Measured against std::tanh on [-12, 12] in
/// steps of 1e-4: max absolute error 3.3e-7 (tanhf: 9.8e-8).
KOKKOS_INLINE_FUNCTION float tanh_rational(float x) {
  const float p[] = {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f, 5.12229709037114e-08f,
                     1.48572235717979e-05f, 6.37261928875436e-04f, 4.89352455891786e-03f};
  const float q[] = {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f, 4.89352518554385e-03f};
  return odd_rational(x, 7.90531110763549805f, p, q);
}

/// GELU (erf or tanh form) through the rational functions: profile_guided's vectorizable GELU.
KOKKOS_INLINE_FUNCTION float gelu_rational(float v, bool tanh_form) {
  if (tanh_form) return 0.5f * v * (1.0f + tanh_rational(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  return 0.5f * v * (1.0f + erf_rational(v * 0.7071067811865476f));
}

// `in` and `out` of a normalize row are the same memory in fp32 (in place): no element
// is read after another iteration wrote it, which GCC cannot prove, so it is told (ivdep).

/// out[x] = GELU((in[x] - mean) scale + shift) through gelu_rational over one row (profile_guided).
/// The form is a template parameter so that the loop body has no branch.
template <class P, bool kTanhForm>
KOKKOS_INLINE_FUNCTION void normalize_gelu_row(const float* in, typename P::Storage* out, int width, float mean,
                                               float scale, float shift) {
  PB_IVDEP
  for (int x = 0; x < width; ++x) out[x] = P::store(gelu_rational((in[x] - mean) * scale + shift, kTanhForm));
}


/// Where the planes of an activation live: plane i (= sample * channels + channel) is a
/// (height + 2 pad) x (width + 2 pad) block whose halo of `pad` pixels is zero.
///
/// profile_guided is what perf showed with batching at the default size (one core, Serial
/// Kokkos): the convolution is most of the time, its loops 128-bit SSE2 without FMA (the build
/// targets baseline x86-64) and row-sized (64 wide: loop overhead per tap row); next the libm
/// calls of GELU (tanhf, erff: one scalar call per activation, ~30% of the time once the
/// convolution is fast) and the norm sums. So it stores planes with a one-pixel zero halo (zeroed
/// once in setup, kept between layers), which makes a 3x3 convolution one flat run of nine
/// multiply-adds per input channel over whole rows (convolve_run_3x3); compiles that run and the
/// normalize + GELU row also for AVX2+FMA and AVX-512 (the ISA dispatch below); and evaluates erf
/// and tanh as rational functions so that the GELU row vectorizes.
struct Grid {
  int height = 0, width = 0, pad = 0;
  KOKKOS_INLINE_FUNCTION int64_t row_stride() const { return width + 2 * pad; }
  KOKKOS_INLINE_FUNCTION int64_t plane() const { return (height + 2 * pad) * row_stride(); }
  /// Offset of pixel (y, 0) of plane `index`; y may reach into the halo.
  KOKKOS_INLINE_FUNCTION int64_t row(int64_t index, int y) const {
    return index * plane() + (y + pad) * row_stride() + pad;
  }
  int64_t size(int64_t planes) const { return planes * plane(); }
};

template <class ViewType>
ViewType fresh(int64_t count) {  // contents are overwritten by the next kernel
  return uninitialized<ViewType>(kBufferLabel, count);
}

/// `values` stored as P on the device (setup only).
template <class P>
DeviceView<typename P::Storage*> to_device_as(const std::vector<float>& values) {
  return filled_on_device<DeviceView<typename P::Storage*>>(
      kBufferLabel, [&](int64_t i) { return P::store(values[i]); }, static_cast<int64_t>(values.size()));
}

// ---- kernels shared by every rung -----------------------------------------------------------------

/// Trajectory row 0 = x0 for every realization, and the operator input `x` (layout `grid`).
template <class P>
void start_rollout(const ConstFloats& x0, const Floats& trajectory, const DeviceView<typename P::Storage*>& x,
                   const Grid& grid, int realizations) {
  const int64_t plane = int64_t{grid.height} * grid.width, field = kFields * plane;
  Kokkos::parallel_for(kInitLabel, RangePolicy(0, realizations * field), KOKKOS_LAMBDA(int64_t i) {
    const int64_t p = i % plane, sample_channel = i / plane;
    const float v = x0(i % field);
    trajectory(i) = v;
    if (x.data()) x(grid.row(sample_channel, static_cast<int>(p / grid.width)) + p % grid.width) = P::store(v);
  });
}

// ---- without compile_fusion: one kernel per operation, fresh Views ----------------------------------------------

struct EagerWeights {
  std::vector<Floats> conv, gamma, beta;
  Floats head_weight, head_bias;
};

// One output row per iteration, accumulated over (c, dy, dx) in the reference's order (so each
// pixel sums the same terms in the same order), with the zero padding as loop bounds: the inner
// loop runs over contiguous pixels and vectorizes. The eager port is op by op, not a slow
// convolution: the original's eager conv is a library convolution.
Floats eager_conv(const ConstFloats& in, int in_channels, const ConstFloats& weight, int out_channels,
                  const ref::Architecture& a) {
  const int height = a.height, width = a.width, k = a.kernel, pad = a.kernel / 2;
  Floats out = fresh<Floats>(int64_t{out_channels} * height * width);
  Kokkos::parallel_for(kConvLabel, RangePolicy(0, int64_t{out_channels} * height), KOKKOS_LAMBDA(int64_t r) {
    const int y = static_cast<int>(r % height), o = static_cast<int>(r / height);
    float* row = out.data() + r * width;
    for (int x = 0; x < width; ++x) row[x] = 0;
    for (int c = 0; c < in_channels; ++c)
      for (int dy = 0; dy < k; ++dy) {
        const int iy = y + dy - pad;
        if (iy < 0 || iy >= height) continue;
        const float* source = in.data() + (int64_t{c} * height + iy) * width - pad;
        for (int dx = 0; dx < k; ++dx) {
          const float w = weight(((o * in_channels + c) * k + dy) * k + dx);
          const int x_begin = pad - dx > 0 ? pad - dx : 0, x_end = width + pad - dx < width ? width + pad - dx : width;
          for (int x = x_begin; x < x_end; ++x) row[x] += w * source[x + dx];
        }
      }
  });
  return out;
}

/// (mean, 1/std) per channel, two passes as the reference.
Floats eager_norm_statistics(const ConstFloats& x, int channels, int64_t plane) {
  Floats stats = fresh<Floats>(2 * channels);
  Kokkos::parallel_for(kStatsLabel, RangePolicy(0, channels), KOKKOS_LAMBDA(int64_t c) {
    float sum = 0, squares = 0;
    for (int64_t i = 0; i < plane; ++i) sum += x(c * plane + i);
    const float mean = sum / static_cast<float>(plane);
    for (int64_t i = 0; i < plane; ++i) squares += (x(c * plane + i) - mean) * (x(c * plane + i) - mean);
    stats(2 * c) = mean;
    stats(2 * c + 1) = 1.0f / device_math::sqrt(squares / static_cast<float>(plane) + static_cast<float>(ref::kNormEps));
  });
  return stats;
}

Floats eager_normalize(const ConstFloats& x, const ConstFloats& stats, const ConstFloats& gamma,
                       const ConstFloats& beta, int64_t plane) {
  Floats out = fresh<Floats>(x.extent(0));
  Kokkos::parallel_for(kNormalizeLabel, RangePolicy(0, x.extent(0)), KOKKOS_LAMBDA(int64_t i) {
    const int64_t c = i / plane;
    out(i) = (x(i) - stats(2 * c)) * stats(2 * c + 1) * gamma(c) + beta(c);
  });
  return out;
}

Floats eager_gelu(const ConstFloats& x) {
  Floats out = fresh<Floats>(x.extent(0));
  Kokkos::parallel_for(kGeluLabel, RangePolicy(0, x.extent(0)), KOKKOS_LAMBDA(int64_t i) { out(i) = gelu(x(i), false); });
  return out;
}

Floats eager_head(const ConstFloats& x, int channels, const ConstFloats& weight, const ConstFloats& bias, int64_t plane) {
  Floats out = fresh<Floats>(kFields * plane);
  Kokkos::parallel_for(kHeadLabel, RangePolicy(0, out.extent(0)), KOKKOS_LAMBDA(int64_t i) {
    const int64_t o = i / plane, p = i % plane;
    float sum = bias(o);
    for (int c = 0; c < channels; ++c) sum += weight(o * channels + c) * x(c * plane + p);
    out(i) = sum;
  });
  return out;
}

Floats eager_policy(ref::Policy policy, const ConstFloats& x, const ConstFloats& o) {
  Floats out = fresh<Floats>(x.extent(0));
  Kokkos::parallel_for(kPolicyLabel, RangePolicy(0, x.extent(0)),
                       KOKKOS_LAMBDA(int64_t i) { out(i) = ref::policy_update(policy, x(i), o(i)); });
  return out;
}

/// One operator application and policy update of one realization: trajectory slice `previous` ->
/// slice `next`.
void eager_step(const EagerWeights& w, const std::vector<int>& channels, const ref::Architecture& a,
                ref::Policy policy, const ConstFloats& previous, const Floats& next) {
  const int64_t plane = int64_t{a.height} * a.width;
  ConstFloats x = previous;
  int in_channels = kFields;
  for (size_t b = 0; b < channels.size(); ++b) {
    const Floats conv = eager_conv(x, in_channels, w.conv[b], channels[b], a);
    const Floats stats = eager_norm_statistics(conv, channels[b], plane);
    x = eager_gelu(eager_normalize(conv, stats, w.gamma[b], w.beta[b], plane));
    in_channels = channels[b];
  }
  const Floats o = eager_head(x, in_channels, w.head_weight, w.head_bias, plane);
  Kokkos::deep_copy(next, eager_policy(policy, previous, o));
}

// ---- compile_fusion: one conv + norm + GELU kernel per block ------------------------------------------

template <class P>
struct Block {
  using Storage = typename P::Storage;
  DeviceView<const Storage*> in, weight;
  Grid in_grid;
  int in_channels = 0;
  ConstFloats gamma, beta;
  Floats pre;  // the conv output before the norm, fp32 (the output itself when P is Fp32)
  Grid pre_grid;
  DeviceView<Storage*> out;
  Grid out_grid;
  int out_channels = 0, groups = 0, kernel = 0;
  bool tanh_gelu = false;
  bool rational_gelu = false;  // profile_guided: GELU through gelu_rational, so the row vectorizes
};

/// out[x] += w * in[x] for x in [begin, end).
template <class P>
KOKKOS_INLINE_FUNCTION void accumulate_tap(float* KOKKOS_RESTRICT out, const typename P::Storage* KOKKOS_RESTRICT in,
                                           float w, int begin, int end) {
  for (int x = begin; x < end; ++x) out[x] += w * P::load(in[x]);
}

/// Row y of output channel o of sample n into `out` (width floats), summed over (c, dy, dx) in
/// the reference's order, taps outside the image clipped (unpadded planes: without profile_guided).
template <class P>
KOKKOS_INLINE_FUNCTION void convolve_row(const Block<P>& b, int n, int o, int y, float* out) {
  const int width = b.in_grid.width, height = b.in_grid.height, k = b.kernel, pad = k / 2;
  for (int x = 0; x < width; ++x) out[x] = 0;
  for (int c = 0; c < b.in_channels; ++c)
    for (int dy = 0; dy < k; ++dy) {
      const int iy = y + dy - pad;
      if (iy < 0 || iy >= height) continue;
      const typename P::Storage* in = b.in.data() + b.in_grid.row(int64_t{n} * b.in_channels + c, iy);
      const typename P::Storage* w = b.weight.data() + ((int64_t{o} * b.in_channels + c) * k + dy) * k;
      for (int dx = 0; dx < k; ++dx) {
        const int shift = dx - pad;
        accumulate_tap<P>(out, in + shift, P::load(w[dx]), shift < 0 ? -shift : 0, shift > 0 ? width - shift : width);
      }
    }
}

/// profile_guided, 3x3 kernel on padded planes: positions [begin, end) of output channel o of sample
/// n, counted from pixel (0, -1) of the padded plane, i.e. the plane's rows including their halo
/// columns, as one flat run (`out` and `in` point at that pixel of their planes). Every tap is
/// then the same run shifted by a constant, so one loop of nine multiply-adds per input channel
/// covers many rows at once; the halo columns of `out` receive garbage that the caller clears.
template <class P>
KOKKOS_INLINE_FUNCTION void convolve_run_3x3(const Block<P>& b, int n, int o, int64_t begin, int64_t end,
                                             float* KOKKOS_RESTRICT out) {
  const int64_t stride = b.in_grid.row_stride(), plane = b.in_grid.plane();
  for (int64_t q = begin; q < end; ++q) out[q] = 0;
  for (int c = 0; c < b.in_channels; ++c) {
    const typename P::Storage* KOKKOS_RESTRICT in = b.in.data() + (int64_t{n} * b.in_channels + c) * plane + stride;
    const typename P::Storage* w = b.weight.data() + (int64_t{o} * b.in_channels + c) * 9;
    const float w0 = P::load(w[0]), w1 = P::load(w[1]), w2 = P::load(w[2]), w3 = P::load(w[3]), w4 = P::load(w[4]);
    const float w5 = P::load(w[5]), w6 = P::load(w[6]), w7 = P::load(w[7]), w8 = P::load(w[8]);
    for (int64_t q = begin; q < end; ++q) {
      const typename P::Storage* up = in + q - stride - 1;
      const typename P::Storage* mid = in + q - 1;
      const typename P::Storage* down = in + q + stride - 1;
      out[q] += w0 * P::load(up[0]) + w1 * P::load(up[1]) + w2 * P::load(up[2]) +
                w3 * P::load(mid[0]) + w4 * P::load(mid[1]) + w5 * P::load(mid[2]) +
                w6 * P::load(down[0]) + w7 * P::load(down[1]) + w8 * P::load(down[2]);
    }
  }
}

// profile_guided's ISA dispatch. The build targets baseline x86-64, so the loops above run on
// 128-bit SSE2 without FMA. When every kernel runs on the host (no GPU backend in this Kokkos) and the
// compiler is GCC on x86-64, the flat 3x3 run is also compiled for x86-64-v3 (AVX2, FMA) and v4
// (AVX-512), and the loader picks the clone this CPU runs (ifunc); fp-contract=fast lets the
// clones use FMA (a rounding difference well inside the fp32 budget).
#ifdef PB_KOKKOS_HOST_ISA_CLONES
#define PB_SPINLOCK_CLONED PB_HOST_ISA_CLONES __attribute__((optimize("fp-contract=fast")))
PB_SPINLOCK_CLONED void convolve_run_cloned(const Block<Fp32>& b, int n, int o, int64_t begin, int64_t end, float* out) {
  convolve_run_3x3(b, n, o, begin, end, out);
}
PB_SPINLOCK_CLONED void convolve_run_cloned(const Block<Bf16>& b, int n, int o, int64_t begin, int64_t end, float* out) {
  convolve_run_3x3(b, n, o, begin, end, out);
}
// The GELU rows too: at the baseline ISA the clamps of the rational functions keep them scalar
// (a branch GCC will not turn into a select under trapping math); AVX-512 masks vectorize them.
PB_SPINLOCK_CLONED void normalize_erf_gelu_row_cloned(const float* in, float* out, int width, float mean, float scale, float shift) {
  normalize_gelu_row<Fp32, false>(in, out, width, mean, scale, shift);
}
PB_SPINLOCK_CLONED void normalize_tanh_gelu_row_cloned(const float* in, std::uint16_t* out, int width, float mean, float scale,
                                                       float shift) {
  normalize_gelu_row<Bf16, true>(in, out, width, mean, scale, shift);
}
#endif

template <class P>
KOKKOS_INLINE_FUNCTION void convolve_run(const Block<P>& b, int n, int o, int64_t begin, int64_t end, float* out) {
#ifdef PB_KOKKOS_HOST_ISA_CLONES
  convolve_run_cloned(b, n, o, begin, end, out);
#else
  convolve_run_3x3(b, n, o, begin, end, out);
#endif
}

/// The GELU row of profile_guided: the exact model in fp32 (exact_fast) or tanh-GELU in bf16.
template <class P>
KOKKOS_INLINE_FUNCTION void normalize_gelu(const float* in, typename P::Storage* out, int width, float mean, float scale,
                                           float shift) {
  constexpr bool kTanhForm = !std::is_same_v<P, Fp32>;
#ifdef PB_KOKKOS_HOST_ISA_CLONES
  if constexpr (kTanhForm) {
    return normalize_tanh_gelu_row_cloned(in, out, width, mean, scale, shift);
  } else {
    return normalize_erf_gelu_row_cloned(in, out, width, mean, scale, shift);
  }
#endif
  normalize_gelu_row<P, kTanhForm>(in, out, width, mean, scale, shift);
}

/// Partial sums per row: a float sum carried in one register is one dependent add per element
/// (the compiler may not reorder it); eight lanes let it vectorize and shorten the chain.
constexpr int kSumLanes = 8;

/// sum over the group's rows of f(value) (a team reduction; each row summed in kSumLanes lanes).
template <class P, class F>
KOKKOS_INLINE_FUNCTION float reduce_group(const Member& team, const Block<P>& b, int64_t first_plane, int rows,
                                          const F& f) {
  float total = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(team, rows),
      [&](int r, float& sum) {
        const float* row = b.pre.data() + b.pre_grid.row(first_plane + r / b.pre_grid.height, r % b.pre_grid.height);
        const int width = b.pre_grid.width;
        float lanes[kSumLanes] = {};
        int x = 0;
        for (; x + kSumLanes <= width; x += kSumLanes)
          for (int l = 0; l < kSumLanes; ++l) lanes[l] += f(row[x + l]);
        for (; x < width; ++x) lanes[0] += f(row[x]);
        for (int l = 0; l < kSumLanes; ++l) sum += lanes[l];
      },
      total);
  return total;
}

/// Positions of the flat 3x3 run each team thread takes at a time: long enough for the vector
/// loop to dwarf its setup, short enough to split a plane among the threads of a GPU team.
constexpr int64_t kRunChunk = 1024;

/// The convolution of the group's planes into `pre`: per row, or as flat runs over padded planes
/// (profile_guided, 3x3 kernels).
template <class P>
KOKKOS_INLINE_FUNCTION void convolve_group(const Member& team, const Block<P>& b, int n, int o0, int per_group,
                                           int64_t first_plane) {
  const int height = b.pre_grid.height;
  if (b.kernel != 3 || b.in_grid.pad != 1 || b.pre_grid.pad != 1) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, per_group * height), [&](int r) {
      convolve_row(b, n, o0 + r / height, r % height, b.pre.data() + b.pre_grid.row(first_plane + r / height, r % height));
    });
    return;
  }
  // Position 0 and the last are halo pixels whose taps would leave the plane: skipped.
  const int64_t run_length = height * b.pre_grid.row_stride(), chunks = ceil_div(run_length, kRunChunk);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, per_group * chunks), [&](int64_t r) {
    const int64_t begin = (r % chunks) * kRunChunk, end = begin + kRunChunk < run_length - 1 ? begin + kRunChunk : run_length - 1;
    float* out = b.pre.data() + b.pre_grid.row(first_plane + r / chunks, 0) - 1;
    convolve_run(b, n, o0 + static_cast<int>(r / chunks), begin > 1 ? begin : 1, end, out);
  });
}

/// The block on `samples` samples (its Views hold just those): a team per (sample, norm group)
/// convolves the group's planes into `pre`, reduces mean and variance (two passes, as the reference), then
/// writes GELU(normalized) to `out` (and zeroes the halo columns of its rows, which the flat
/// convolution may have written when `pre` is `out`).
template <class P>
void conv_norm_gelu(const Block<P>& b, int samples) {
  const int per_group = b.out_channels / b.groups, height = b.pre_grid.height, width = b.pre_grid.width;
  const int rows = per_group * height;
  const float count = static_cast<float>(int64_t{rows} * width);
  Kokkos::parallel_for(kBlockLabel, TeamPolicy(int64_t{samples} * b.groups, Kokkos::AUTO),
                       KOKKOS_LAMBDA(const Member& team) {
    const int n = static_cast<int>(team.league_rank() / b.groups);
    const int o0 = static_cast<int>(team.league_rank() % b.groups) * per_group;
    const int64_t first_plane = int64_t{n} * b.out_channels + o0;
    convolve_group(team, b, n, o0, per_group, first_plane);
    team.team_barrier();
    const float mean = reduce_group(team, b, first_plane, rows, [](float v) { return v; }) / count;
    const float squares = reduce_group(team, b, first_plane, rows, [mean](float v) { return (v - mean) * (v - mean); });
    const float inv_std = 1.0f / device_math::sqrt(squares / count + static_cast<float>(ref::kNormEps));
    team.team_barrier();  // every thread has read the statistics' inputs before `out` may alias `pre`
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](int r) {
      const int o = o0 + r / height, y = r % height;
      const float* in = b.pre.data() + b.pre_grid.row(first_plane + r / height, y);
      typename P::Storage* out = b.out.data() + b.out_grid.row(first_plane + r / height, y);
      if (b.rational_gelu) {
        normalize_gelu<P>(in, out, width, mean, inv_std * b.gamma(o), b.beta(o));
      } else {
        for (int x = 0; x < width; ++x) out[x] = P::store(gelu((in[x] - mean) * inv_std * b.gamma(o) + b.beta(o), b.tanh_gelu));
      }
      if (b.out_grid.pad == 1) out[-1] = out[width] = P::store(0.0f);
    });
  });
}

template <class P>
struct Head {
  DeviceView<const typename P::Storage*> act, weight;
  Grid act_grid;
  int channels = 0;
  ConstFloats bias;
  Floats trajectory;
  int realizations = 0;
  DeviceView<typename P::Storage*> x;  // the next operator input
  Grid x_grid;
  ref::Policy policy = ref::Policy::Autoregressive;
};

/// The 1x1 head and the policy update in one kernel for realizations [first, first + samples):
/// trajectory row t from row t-1 and O, and the next operator input. `act` holds just those
/// samples; the trajectory and `x` hold every realization.
template <class P>
void head_and_policy(const Head<P>& h, int t, int first, int samples) {
  const int width = h.act_grid.width;
  const int64_t plane = int64_t{h.act_grid.height} * width, field = kFields * plane;
  Kokkos::parallel_for(kHeadPolicyLabel, RangePolicy(0, samples * plane), KOKKOS_LAMBDA(int64_t i) {
    const int n = first + static_cast<int>(i / plane);
    const int y = static_cast<int>(i % plane / width), x = static_cast<int>(i % width);
    const int64_t now = (int64_t{t} * h.realizations + n) * field + i % plane;
    for (int f = 0; f < kFields; ++f) {
      float o = h.bias(f);
      for (int c = 0; c < h.channels; ++c)
        o += P::load(h.weight(f * h.channels + c)) * P::load(h.act(h.act_grid.row(int64_t{n - first} * h.channels + c, y) + x));
      const float next = ref::policy_update(h.policy, h.trajectory(now - h.realizations * field + f * plane), o);
      h.trajectory(now + f * plane) = next;
      h.x(h.x_grid.row(int64_t{n} * kFields + f, y) + x) = P::store(next);
    }
  });
}

// ---- the variants ---------------------------------------------------------------------------------

class RolloutKokkos : public Variant {
 public:
  explicit RolloutKokkos(const VariantContext& context)
      : arch_(sp::architecture(context)),
        policy_(sp::policy_of(*context.workload)) {}

  void setup(const ArrayMap& inputs) override {
    x0_ = to_device_as<Fp32>(require(inputs, sp::kInitialField).to_floats());
    trajectory_ = Floats("spinlock/cnn_rollout/trajectory", arch_.steps * arch_.realizations * arch_.field_size());
    prepare(sp::load_weights<float>(inputs, arch_));
  }

  void poison_outputs() override {
    fill_nan(trajectory_);
    Kokkos::fence();
  }

  ArrayMap outputs() override {
    const auto host = copy_for_outputs(trajectory_);
    ArrayMap out;
    out[sp::kTrajectory] = HostArray::from_floats(
        {arch_.steps, arch_.realizations, kFields, arch_.height, arch_.width}, host.data(), host.extent(0));
    return out;
  }

 protected:
  virtual void prepare(const ref::OperatorWeights<float>& weights) = 0;
  /// Trajectory slice of step t, realization m.
  Floats slice(int t, int m) const {
    const int64_t field = arch_.field_size(), begin = (int64_t{t} * arch_.realizations + m) * field;
    return Kokkos::subview(trajectory_, std::make_pair(begin, begin + field));
  }

  ref::Architecture arch_;
  ref::Policy policy_;
  Floats x0_, trajectory_;
};

class EagerRolloutKokkos final : public RolloutKokkos {
 public:
  using RolloutKokkos::RolloutKokkos;

  void run() override {
    start_rollout<Fp32>(x0_, trajectory_, {}, {arch_.height, arch_.width, 0}, arch_.realizations);
    for (int t = 1; t < arch_.steps; ++t)
      for (int m = 0; m < arch_.realizations; ++m) eager_step(weights_, channels_, arch_, policy_, slice(t - 1, m), slice(t, m));
  }

 private:
  void prepare(const ref::OperatorWeights<float>& weights) override {
    for (const auto& block : weights.blocks) {
      weights_.conv.push_back(to_device_as<Fp32>(block.weight));
      weights_.gamma.push_back(to_device_as<Fp32>(block.gamma));
      weights_.beta.push_back(to_device_as<Fp32>(block.beta));
      channels_.push_back(block.out_channels);
    }
    weights_.head_weight = to_device_as<Fp32>(weights.head_weight);
    weights_.head_bias = to_device_as<Fp32>(weights.head_bias);
  }

  EagerWeights weights_;
  std::vector<int> channels_;
};

/// What the plan asks of the fused rollout besides its precision, read once from the context.
struct RolloutOptions {
  explicit RolloutOptions(const PhasePlan& plan)
      : model(sp::model_of(plan)),
        batched(sp::batches_realizations(plan)),
        ping_pong(sp::preallocates(plan)),
        profile_guided(plan.has(sp::kProfileGuided)) {}
  ref::ModelOptions model;  // GroupNorm and tanh-GELU with operator_opts
  bool batched;             // all realizations in one launch per block
  bool ping_pong;           // activation buffers allocated in setup, sized for the widest block
  bool profile_guided;      // padded planes, flat 3x3 runs, rational GELU (see Grid)
};

template <class P>
class FusedRolloutKokkos final : public RolloutKokkos {
  using Storage = typename P::Storage;
  using StorageView = DeviceView<Storage*>;

 public:
  explicit FusedRolloutKokkos(const VariantContext& context) : RolloutKokkos(context), options_(context.plan) {}

  void run() override {
    start_rollout<P>(x0_, trajectory_, x_, grid_, arch_.realizations);
    for (int t = 1; t < arch_.steps; ++t) {
      if (options_.batched) {
        step(t, 0, arch_.realizations);
      } else {
        for (int m = 0; m < arch_.realizations; ++m) step(t, m, 1);
      }
    }
  }

 private:
  static constexpr bool kSeparatePreNorm = !std::is_same_v<Storage, float>;

  void prepare(const ref::OperatorWeights<float>& weights) override {
    grid_ = {arch_.height, arch_.width, options_.profile_guided ? arch_.kernel / 2 : 0};
    int in_channels = kFields, widest = kFields;
    for (const auto& weights_of_block : weights.blocks) {
      Block<P> block;
      block.weight = to_device_as<P>(weights_of_block.weight);
      block.gamma = to_device_as<Fp32>(weights_of_block.gamma);
      block.beta = to_device_as<Fp32>(weights_of_block.beta);
      block.in_channels = in_channels;
      block.out_channels = weights_of_block.out_channels;
      block.groups = ref::norm_groups(block.out_channels, options_.model);
      block.kernel = arch_.kernel;
      block.tanh_gelu = options_.model.tanh_gelu;
      block.rational_gelu = options_.profile_guided;
      if (block.rational_gelu && options_.model.tanh_gelu != kSeparatePreNorm)  // normalize_gelu ties the form to P
        throw std::logic_error("spinlock cnn_rollout-kokkos: rational GELU rows exist for fp32 erf and bf16 tanh only");
      blocks_.push_back(block);
      in_channels = block.out_channels;
      widest = std::max(widest, in_channels);
    }
    head_weight_ = to_device_as<P>(weights.head_weight);
    head_bias_ = to_device_as<Fp32>(weights.head_bias);
    // Zero-initialized: the halo of a padded layout must read as the conv's zero padding.
    x_ = StorageView("spinlock/cnn_rollout/x", grid_.size(int64_t{arch_.realizations} * kFields));
    if (options_.ping_pong) {
      for (StorageView& buffer : ping_pong_) buffer = StorageView(kBufferLabel, grid_.size(int64_t{arch_.realizations} * widest));
      if (kSeparatePreNorm) pre_norm_ = fresh<Floats>(grid_.size(int64_t{arch_.realizations} * widest));
    }
  }

  /// One operator application and policy update of realizations [first, first + samples). The
  /// blocks see only those samples: x's slice, and outputs sized for them.
  void step(int t, int first, int samples) {
    const int64_t field_planes = grid_.size(kFields);
    DeviceView<const Storage*> in = Kokkos::subview(x_, std::make_pair(first * field_planes, (first + samples) * field_planes));
    for (size_t i = 0; i < blocks_.size(); ++i) {
      Block<P> b = blocks_[i];
      const int64_t planes = int64_t{samples} * b.out_channels;
      b.in = in;
      b.in_grid = grid_;
      b.out_grid = grid_;
      b.out = options_.ping_pong ? ping_pong_[i % 2] : fresh<StorageView>(grid_.size(planes));  // unpadded: no halo to zero
      b.pre_grid = grid_;
      b.pre = pre_norm_buffer(b.out, b.pre_grid.size(planes));
      conv_norm_gelu(b, samples);
      in = b.out;
    }
    Head<P> h{in, head_weight_, grid_, blocks_.back().out_channels, head_bias_, trajectory_, arch_.realizations, x_, grid_, policy_};
    head_and_policy(h, t, first, samples);
  }

  /// Where the conv output waits for its statistics: `out` itself in fp32, else an fp32 buffer.
  Floats pre_norm_buffer(const StorageView& out, int64_t count) const {
    if constexpr (kSeparatePreNorm) {
      (void)out;
      return pre_norm_.is_allocated() ? pre_norm_ : fresh<Floats>(count);
    } else {
      (void)count;
      return out;
    }
  }

  RolloutOptions options_;
  Grid grid_;
  std::vector<Block<P>> blocks_;
  StorageView head_weight_;
  Floats head_bias_;
  StorageView x_;
  StorageView ping_pong_[2];
  Floats pre_norm_;
};

VariantFactory factory() {
  return [](const VariantContext& context) -> std::unique_ptr<Variant> {
    if (!context.has(sp::kCompileFusion)) return std::make_unique<EagerRolloutKokkos>(context);
    if (sp::computes_in_bf16(context.plan)) return std::make_unique<FusedRolloutKokkos<Bf16>>(context);
    return std::make_unique<FusedRolloutKokkos<Fp32>>(context);
  };
}

const sp::RolloutRegistration registration{"kokkos", sp::kAllPhases, factory()};

}  // namespace
}  // namespace pb::kokkos_backend

#pragma once
// geometry/mamba_scan on an executor: the kernel bodies and the ladder, written once against the
// executor interface of backends/cuda/device_executor.cuh, so that the same code runs as Kokkos
// kernels (mamba_scan-kokkos.cpp), as CUDA kernels (mamba_scan-cuda.cu) and on the host in
// tests/geometry_scan_test.cpp. Math: reference/geometry/mamba_scan.hpp (its PB_HOST_DEVICE row
// functions are the kernel bodies). Per run:
//
//   baseline:             per t, launches over the B rows (b, t): in_proj; u Br and u Bi (two,
//                         into the halves of w); LN16; gate; sigmoid; the step and z; up; times
//                         the gate. After the loop: out_proj, + x and LN512 over every row
//   hoisted_projections:  the same launches once over all B L rows (blocks of 16 rows); the
//                         recurrence one launch over b, each running its L steps
//   parallel_scan:        one launch over the B L / C chunks builds each chunk's prefix maps
//                         P_j = M_j P_(j-1); one over b carries the state across chunks; one over
//                         every row gives s_t = P_t s_entering
// Buffers are allocated in the constructor; nothing is read back in run(). The projections are a
// thread per block of 16 rows (the reference's blocked axpy): right for a CPU, naive on a GPU
// (where a GEMM library would do them; the CUDA rows are compiled, never run).
// Kernel names are at most 15 characters (no heap allocation for the name in KokkosExecutor).

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/host_device.hpp"
#include "optimized/common/integer_math.hpp"
#include "optimized/geometry/metric_executor.hpp"
#include "phasebench/arrays.hpp"
#include "phasebench/phases.hpp"
#include "suites/geometry/mamba_scan.hpp"

namespace pb::geometry_kernels {

namespace ms = pb::suites::geometry::mamba_scan;
namespace msr = ms::ref;
using pb::optimized::ceil_div;
constexpr int64_t kScanState = msr::kState, kScanWide = msr::kWide;

/// y = x W + b for `rows` rows: index = a block of msr::kRowBlock rows.
struct LinearBlocks {
  int64_t rows, in, out;
  const float *x, *w, *b;
  int64_t x_ld;
  float* y;
  int64_t y_ld;
  PB_HOST_DEVICE void operator()(int64_t block) const {
    const int64_t r0 = block * msr::kRowBlock, r1 = r0 + msr::kRowBlock < rows ? r0 + msr::kRowBlock : rows;
    msr::linear_block(r0, r1, in, out, x, x_ld, w, b, y, y_ld);
  }
};

/// LayerNorm of row `row` of v[rows, n] in place; with `residual`, v += residual first.
struct LayerNormRows {
  int64_t n;
  float* v;
  const float *g, *b, *residual;
  PB_HOST_DEVICE void operator()(int64_t row) const {
    if (residual)
      for (int64_t k = 0; k < n; ++k) v[row * n + k] += residual[row * n + k];
    msr::layer_norm_row(n, v + row * n, g, b);
  }
};

struct SigmoidInPlace {
  float* v;
  PB_HOST_DEVICE void operator()(int64_t k) const { v[k] = msr::sigmoid(v[k]); }
};

/// y rows (leading dimension y_ld, width e) times the dense gate [rows, e].
struct GateProduct {
  float* y;
  int64_t y_ld, e;
  const float* gate;
  PB_HOST_DEVICE void operator()(int64_t k) const { y[k / e * y_ld + k % e] *= gate[k]; }
};

struct InitialStates {
  float* s;
  PB_HOST_DEVICE void operator()(int64_t k) const { s[k] = k % kScanWide == 0 ? 1.0f : 0.0f; }
};

/// Phase baseline: one step of batch row b's state, and its z.
struct StepRows {
  msr::Trinor<float> tr;
  const float* w;
  float *s, *z;
  PB_HOST_DEVICE void operator()(int64_t b) const {
    msr::step(tr, w + b * kScanWide, s + b * kScanWide);
    msr::mix(s + b * kScanWide, z + b * kScanState);
  }
};

/// Phase hoisted_projections: batch row b's L steps.
struct Recurrence {
  msr::Trinor<float> tr;
  int64_t length;
  const float* w;
  float* s;
  PB_HOST_DEVICE void operator()(int64_t b) const { msr::sequential_states_of(tr, b, length, w, s); }
};

struct MixRows {
  const float* s;
  float* z;
  PB_HOST_DEVICE void operator()(int64_t row) const { msr::mix(s + row * kScanWide, z + row * kScanState); }
};

/// Phase parallel_scan, 1: the prefix maps P_j = M_j P_(j-1) of one chunk of `chunk` rows.
struct PrefixMaps {
  msr::Trinor<float> tr;
  int64_t chunk;
  const float* w;
  float* prefix;
  PB_HOST_DEVICE void operator()(int64_t c) const {
    constexpr int64_t M = kScanWide * kScanWide;
    float map[M];
    for (int64_t j = 0; j < chunk; ++j) {
      float* p = prefix + (c * chunk + j) * M;
      msr::step_map(tr, w + (c * chunk + j) * kScanWide, j == 0 ? p : map);
      if (j > 0) msr::compose(map, p - M, p);
    }
  }
};

/// 2: the state entering each of batch row b's chunks (s0, then each chunk's total map applied).
struct CarryAcrossChunks {
  int64_t chunk, per_batch;
  const float* prefix;
  float* entering;
  PB_HOST_DEVICE void operator()(int64_t b) const {
    float v[kScanWide] = {1};
    for (int64_t c = b * per_batch; c < (b + 1) * per_batch; ++c) {
      const float* total = prefix + (c * chunk + chunk - 1) * kScanWide * kScanWide;
      float next[kScanWide] = {};
      for (int64_t k = 0; k < kScanWide; ++k) {
        entering[c * kScanWide + k] = v[k];
        for (int64_t j = 0; j < kScanWide; ++j) next[k] += total[k * kScanWide + j] * v[j];
      }
      for (int64_t k = 0; k < kScanWide; ++k) v[k] = next[k];
    }
  }
};

/// 3: s_row = P_row s_entering(chunk of row).
struct ScannedStates {
  int64_t chunk;
  const float *prefix, *entering;
  float* s;
  PB_HOST_DEVICE void operator()(int64_t row) const {
    const float* p = prefix + row * kScanWide * kScanWide;
    const float* e = entering + row / chunk * kScanWide;
    for (int64_t k = 0; k < kScanWide; ++k) {
      float sum = 0;
      for (int64_t j = 0; j < kScanWide; ++j) sum += p[k * kScanWide + j] * e[j];
      s[row * kScanWide + k] = sum;
    }
  }
};

template <typename Exec>
class MambaScanLadder {
 public:
  MambaScanLadder(Exec& exec, const ArrayMap& in, const PhasePlan& plan)
      : exec_(exec), hoisted_(plan.has(ms::kHoisted)), scan_(plan.has(ms::kParallelScan)), d_(ms::dims_of(in)) {
    const ms::ParamStore<float> store(in);
    tr_ = msr::make_trinor(store.params.theta, store.params.omega, store.params.sigma);
    for (const std::string& name : ms::kParameters) params_.emplace(name, upload_array(exec, require(in, name)));
    x_ = upload_array(exec, require(in, ms::kInput));
    const int64_t rows = d_.rows(), step_rows = hoisted_ ? rows : d_.batch, E = d_.inner;
    u_ = exec.template allocate<float>(step_rows * E), gate_ = exec.template allocate<float>(step_rows * E);
    w_ = exec.template allocate<float>(step_rows * kScanWide), z_ = exec.template allocate<float>(step_rows * kScanState);
    states_ = exec.template allocate<float>(step_rows * kScanWide);
    y_ = exec.template allocate<float>(rows * E), out_ = exec.template allocate<float>(rows * d_.model);
    if (scan_) {
      chunk_ = ms::scan_chunk(d_.length);
      prefix_ = exec.template allocate<float>(rows * kScanWide * kScanWide);
      entering_ = exec.template allocate<float>(rows / chunk_ * kScanWide);
    }
  }

  void run() {
    const int64_t B = d_.batch, L = d_.length, D = d_.model, E = d_.inner, rows = d_.rows();
    if (hoisted_) {
      project_in(rows, x_.data(), D);
      if (scan_) {
        exec_.for_each("ms.prefix", rows / chunk_, PrefixMaps{tr_, chunk_, w_.data(), prefix_.data()});
        exec_.for_each("ms.carry", B, CarryAcrossChunks{chunk_, L / chunk_, prefix_.data(), entering_.data()});
        exec_.for_each("ms.states", rows, ScannedStates{chunk_, prefix_.data(), entering_.data(), states_.data()});
      } else {
        exec_.for_each("ms.recurrence", B, Recurrence{tr_, L, w_.data(), states_.data()});
      }
      exec_.for_each("ms.mix", rows, MixRows{states_.data(), z_.data()});
      project_up(rows, y_.data(), E);
    } else {
      exec_.for_each("ms.s0", B * kScanWide, InitialStates{states_.data()});
      for (int64_t t = 0; t < L; ++t) {  // the original loop: rows (b, t) for every b
        project_in(B, x_.data() + t * D, L * D);
        exec_.for_each("ms.step", B, StepRows{tr_, w_.data(), states_.data(), z_.data()});
        project_up(B, y_.data() + t * E, L * E);
      }
    }
    linear("ms.out_proj", rows, E, D, y_.data(), E, ms::kOutProjW, ms::kOutProjB, out_.data(), D);
    exec_.for_each("ms.ln_out", rows, LayerNormRows{D, out_.data(), p(ms::kLnOutW), p(ms::kLnOutB), x_.data()});
  }

  void poison_outputs() {
    for (Buffer* out : {&out_, &states_})
      exec_.for_each("ms.poison", int64_t(out->size()), cuda_backend::Fill{out->data(), std::numeric_limits<float>::quiet_NaN()});
  }

  ArrayMap outputs() {
    const int64_t per_batch = hoisted_ ? d_.length : 1;
    const HostArray s = download_array(exec_, states_, {d_.batch * per_batch * kScanWide});
    std::vector<float> r(d_.batch * kScanState), i(d_.batch * kScanState);
    for (int64_t b = 0; b < d_.batch; ++b)
      for (int64_t k = 0; k < kScanState; ++k) {
        const int64_t last = ((b + 1) * per_batch - 1) * kScanWide;
        r[b * kScanState + k] = float(s.values[last + k]);
        i[b * kScanState + k] = float(s.values[last + kScanState + k]);
      }
    return {{ms::kOutput, download_array(exec_, out_, {d_.batch, d_.length, d_.model})},
            {ms::kFinalState, ms::final_state_array(d_.batch, r.data(), i.data())}};
  }

 private:
  using Buffer = typename Exec::template Buffer<float>;

  const float* p(const std::string& name) const { return params_.at(name).data(); }

  void linear(const char* name, int64_t rows, int64_t in, int64_t out, const float* x, int64_t x_ld,
              const std::string& weight, const std::string& bias, float* y, int64_t y_ld) {
    const float* b = bias.empty() ? nullptr : p(bias);
    exec_.for_each(name, ceil_div(rows, msr::kRowBlock), LinearBlocks{rows, in, out, x, p(weight), b, x_ld, y, y_ld});
  }

  /// u = in_proj(x rows); w = LN16([u Br, u Bi]); gate = sigmoid(gate(u)), for `rows` rows.
  void project_in(int64_t rows, const float* x, int64_t x_ld) {
    const int64_t D = d_.model, E = d_.inner;
    linear("ms.in_proj", rows, D, E, x, x_ld, ms::kInProjW, ms::kInProjB, u_.data(), E);
    linear("ms.u_Br", rows, E, kScanState, u_.data(), E, ms::kBr, "", w_.data(), kScanWide);
    linear("ms.u_Bi", rows, E, kScanState, u_.data(), E, ms::kBi, "", w_.data() + kScanState, kScanWide);
    exec_.for_each("ms.ln16", rows, LayerNormRows{kScanWide, w_.data(), p(ms::kLn16W), p(ms::kLn16B), nullptr});
    linear("ms.gate", rows, E, E, u_.data(), E, ms::kGateW, ms::kGateB, gate_.data(), E);
    exec_.for_each("ms.sigmoid", rows * E, SigmoidInPlace{gate_.data()});
  }

  /// y rows = up(z) * gate.
  void project_up(int64_t rows, float* y, int64_t y_ld) {
    linear("ms.up", rows, kScanState, d_.inner, z_.data(), kScanState, ms::kUpW, ms::kUpB, y, y_ld);
    exec_.for_each("ms.gate_mul", rows * d_.inner, GateProduct{y, y_ld, d_.inner, gate_.data()});
  }

  Exec& exec_;
  bool hoisted_, scan_;
  ms::Dims d_;
  int64_t chunk_ = 1;
  msr::Trinor<float> tr_{};
  std::map<std::string, Buffer> params_;
  Buffer x_, u_, gate_, w_, z_, states_, y_, out_, prefix_, entering_;
};

}  // namespace pb::geometry_kernels

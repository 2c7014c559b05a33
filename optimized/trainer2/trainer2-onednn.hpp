#pragma once
// Shared oneDNN building blocks of the trainer2 variants: retrieval-onednn.cpp,
// rotor_update-onednn.cpp, window-onednn.cpp, train_step-onednn.cpp (each file's top comment
// describes its ladder). The math and its order of operations: reference/trainer2/trainer2.hpp.
//
// What runs how:
//  - oneDNN primitives for every array operation: eltwise, binary (with eltwise/binary
//    post-ops), reductions, softmax, matmul (the g-weighted squared distance as a product with
//    g as a column, the rotor as a product with its 8x8 matrix, means over a middle axis),
//    inner products (the state mixing, one gemv per batch row), reorders (copies, the
//    retrieval batch's concatenation, layout changes of the field) and one depthwise 3x3
//    convolution per force evaluation.
//  - host kernels (ob::run_host_kernel: plain C++ over the CPU engine's memory, one dispatched
//    op, no host sync) where no primitive exists: oneDNN has no cos/sin/atan2/fmod, so building
//    the rotor's 8x8 matrix from θ and the rotor update of the training step are host kernels.
//  - host reads (ob::read_floats_to_host: one host sync each): the progress metrics, and the
//    baseline rotor update's per-pair reads of i, j, u_i, u_j.
//
// oneDNN 2.6 facts that shape the code (measured here at the default size, one thread):
//  - a reduction over a middle axis (mean over T of O [B,T,d], sum over K of [B,K,d]) runs in
//    oneDNN's reference implementation: 13 ms and 223 ms per call. The same sums as products
//    with a row of ones (a matmul over T; one gemv per batch row over K) take 0.03 ms and
//    1.4 ms, so every sum over a middle axis is written so.
//  - the depthwise convolution has a jit implementation (jit_dw, NHWC or blocked) with a sum
//    post-op followed by a binary one, but none with an eltwise post-op or with the binary
//    first (the reference one: 140 ms instead of 0.13 ms): see Field for what that costs.
//  - a binary with a strided operand runs in the reference implementation (~7 us instead of
//    ~1 us on [16,8]): the per-step arrays are dense.
//  - brgemm matmul applies a second eltwise_linear post-op of one chain with the first one's
//    alpha and beta (wrong results): see build_retrieval.
//
// Eager phases (< 6): every array a step produces gets fresh storage each step (StepBuffer), as
// an eager framework's ops return new tensors, and accumulators are updated out of place
// (Accumulator). From phase 6 on everything is allocated in setup() and updated in place.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/onednn/onednn_backend.hpp"
#include "phasebench/arrays.hpp"
#include "phasebench/variant.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb::onednn_backend::trainer2 {

namespace ob = pb::onednn_backend;
namespace ref = pb::reference::trainer2;
using dnnl::algorithm;
using dnnl::memory;
using Dims = memory::dims;

constexpr int64_t kN = ref::kCoordinateDim;  // n
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kEps = static_cast<float>(ref::kLiorEps);
constexpr float kBeta = static_cast<float>(ref::kRetrievalBeta);

// ---- descriptors and views ---------------------------------------------------------------------

/// A dense row-major fp32 array of `dims`.
inline memory::desc dense(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return {dims, memory::data_type::f32, strides};
}

/// An fp32 array of `dims` with explicit strides (in floats; 0 repeats along that axis).
inline memory::desc strided(const Dims& dims, const Dims& strides) {
  return {dims, memory::data_type::f32, strides};
}

/// A descriptor's dimensions and strides (plain layouts), in oneDNN 2.x and 3.x.
inline Dims dims_of(const memory::desc& desc) {
#if DNNL_VERSION_MAJOR >= 3
  return desc.get_dims();
#else
  return desc.dims();
#endif
}

inline Dims strides_of(const memory::desc& desc) {
#if DNNL_VERSION_MAJOR >= 3
  return desc.get_strides();
#else
  const auto& blocking = desc.data.format_desc.blocking;
  return Dims(blocking.strides, blocking.strides + desc.data.ndims);
#endif
}

/// A view of `desc` (a plain, possibly strided layout) over `base`'s storage, starting `offset`
/// floats in: no copy. Checked against the view's real span (oneDNN's get_size() over-counts a
/// strided view, e.g. the bank's rows of the candidates, which start T rows in).
inline memory view(const memory& base, const memory::desc& desc, int64_t offset = 0) {
  const Dims dims = dims_of(desc), strides = strides_of(desc);
  int64_t last = offset;
  for (size_t i = 0; i < dims.size(); ++i) last += (dims[i] - 1) * strides[i];
  const auto available = static_cast<int64_t>(base.get_desc().get_size() / sizeof(float));
  if (offset < 0 || last >= available) throw std::out_of_range("trainer2 view past its base");
  return memory(desc, base.get_engine(), ob::host_floats(base) + offset);
}

/// A new dense array, filled with `values` (setup only).
inline memory constant(const Dims& dims, const std::vector<float>& values) {
  memory array = ob::allocate(dense(dims));
  ob::write_floats(array, values);
  return array;
}

inline memory constant_fill(const Dims& dims, float value) {
  int64_t count = 1;
  for (auto dim : dims) count *= dim;
  return constant(dims, std::vector<float>(static_cast<size_t>(count), value));
}

// ---- buffers of the eager phases ---------------------------------------------------------------

/// An array a step produces. Primitives are bound to get() and to the views made by view() once,
/// in setup; renew() gives them new storage (counted as allocated; the old storage is freed), so
/// the eager phases allocate every step without rebuilding a primitive. Views of a StepBuffer
/// must come from its view() (or a Viewable of it): a plain view would keep the freed storage.
class StepBuffer {
 public:
  explicit StepBuffer(const memory::desc& desc)
      : desc_(desc),
        storage_(ob::allocate(desc)),
        handle_(desc, ob::engine(), storage_.get_data_handle()) {}

  const memory& get() const { return handle_; }

  /// A view of `desc` starting `offset` floats in, kept pointing into the current storage.
  memory view(const memory::desc& desc, int64_t offset = 0) {
    memory array = trainer2::view(handle_, desc, offset);
    views_.emplace_back(array, offset);
    return array;
  }

  void renew() {
    storage_ = ob::allocate(desc_);
    float* base = ob::host_floats(storage_);
    handle_.set_data_handle(base);
    for (auto& [array, offset] : views_) array.set_data_handle(base + offset);
  }

 private:
  memory::desc desc_;
  memory storage_;  // owns the current storage
  memory handle_;   // what primitives are bound to
  std::vector<std::pair<memory, int64_t>> views_;
};

/// An array to take views of: a StepBuffer (views registered, so they follow its renewals) or a
/// plain memory.
class Viewable {
 public:
  Viewable(StepBuffer& buffer) : buffer_(&buffer), array_(buffer.get()) {}  // NOLINT: implicit
  Viewable(const memory& array) : array_(array) {}                          // NOLINT: implicit
  const memory& get() const { return array_; }
  memory view(const memory::desc& desc, int64_t offset = 0) const {
    return buffer_ ? buffer_->view(desc, offset) : trainer2::view(array_, desc, offset);
  }

 private:
  StepBuffer* buffer_ = nullptr;
  memory array_;
};

/// The arrays of one step; begin_step() renews them all in the eager phases.
class StepBuffers {
 public:
  explicit StepBuffers(bool fresh_each_step) : fresh_(fresh_each_step) {}
  StepBuffer& add(const memory::desc& desc) { return buffers_.emplace_back(desc); }
  memory make(const memory::desc& desc) { return add(desc).get(); }
  void begin_step() {
    if (fresh_) {
      for (StepBuffer& buffer : buffers_) buffer.renew();
    }
  }

 private:
  bool fresh_;
  std::deque<StepBuffer> buffers_;  // stable addresses
};

/// A running sum. Out of place (eager phases: `acc = acc + x` into fresh storage, which then
/// becomes the accumulator) or in place (`acc += x`). An update writes target(), between
/// before_update() and after_update().
class Accumulator {
 public:
  Accumulator(const memory::desc& desc, bool in_place)
      : desc_(desc),
        in_place_(in_place),
        storage_(ob::allocate(desc)),
        value_(desc, ob::engine(), storage_.get_data_handle()),
        next_(in_place ? value_ : memory(desc, ob::engine(), storage_.get_data_handle())) {}

  const memory& value() const { return value_; }
  const memory& target() const { return next_; }

  void before_update() {
    if (in_place_) return;
    next_storage_ = ob::allocate(desc_);
    next_.set_data_handle(next_storage_.get_data_handle());
  }
  void after_update() {
    if (in_place_) return;
    storage_ = std::move(next_storage_);
    next_storage_ = memory();
    value_.set_data_handle(storage_.get_data_handle());
  }

 private:
  memory::desc desc_;
  bool in_place_;
  memory storage_, next_storage_;
  memory value_, next_;
};

// ---- primitive executions ----------------------------------------------------------------------

/// Post-ops of one primitive and the arguments of their binary operands.
class PostOps {
 public:
  PostOps& eltwise(algorithm kind, float alpha = 0.0f, float beta = 0.0f) {
    ob::append_eltwise(ops_, kind, alpha, beta);
    return *this;
  }
  PostOps& binary(algorithm kind, const memory& operand) {
    args_[DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops_.len()) | DNNL_ARG_SRC_1] = operand;
    ops_.append_binary(kind, operand.get_desc());
    return *this;
  }
  /// dst += the primitive's result (dst's previous value joins at this point of the chain).
  PostOps& sum() {
    ops_.append_sum(1.0f);
    return *this;
  }
  dnnl::primitive_attr attr() const {
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops_);
    return attr;
  }
  ob::Args with(ob::Args args) const {
    args.insert(args_.begin(), args_.end());
    return args;
  }

 private:
  dnnl::post_ops ops_;
  ob::Args args_;
};

inline ob::Execution eltwise(algorithm kind, const memory& src, const memory& dst,
                             float alpha = 0.0f, float beta = 0.0f) {
  return {ob::eltwise_pd(kind, src.get_desc(), alpha, beta),
          {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}};
}

inline ob::Execution binary(algorithm kind, const memory& src0, const memory& src1,
                            const memory& dst, const PostOps& post = {}) {
  return {ob::binary_pd(kind, src0.get_desc(), src1.get_desc(), dst.get_desc(), post.attr()),
          post.with({{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}})};
}

inline ob::Execution reduce(algorithm kind, const memory& src, const memory& dst,
                            const PostOps& post = {}, float p = 0.0f) {
  return {ob::reduction_pd(kind, src.get_desc(), dst.get_desc(), post.attr(), p),
          post.with({{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}})};
}

inline ob::Execution matmul(const memory& src, const memory& weights, const memory& dst,
                            const PostOps& post = {}) {
  return {ob::matmul_pd(src.get_desc(), weights.get_desc(), dst.get_desc(), post.attr()),
          post.with({{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}})};
}

inline ob::Execution softmax(const memory& src, const memory& dst, int axis) {
  return {ob::softmax_pd(src.get_desc(), axis), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}};
}

inline ob::Execution copy(const memory& src, const memory& dst) {
  return {ob::reorder_pd(src.get_desc(), dst.get_desc()),
          {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}}};
}

/// Work bound in setup, played in order by run(): primitive executions and host kernels.
class Program {
 public:
  Program& add(ob::Execution execution) {
    steps_.emplace_back([execution = std::move(execution)] { execution(); });
    return *this;
  }
  template <typename Kernel>
  Program& kernel(Kernel body) {
    steps_.emplace_back([body] { ob::run_host_kernel(body); });
    return *this;
  }
  Program& append(const Program& other) {
    steps_.insert(steps_.end(), other.steps_.begin(), other.steps_.end());
    return *this;
  }
  void operator()() const {
    for (const auto& step : steps_) step();
  }

 private:
  std::vector<std::function<void()>> steps_;
};

// ---- the rotor ---------------------------------------------------------------------------------

/// Host kernel: W [n,n] with row i = rotor_apply(e_i, θ), so that the row vector q·W is
/// rotor_apply(q, θ) (the rotor is linear). oneDNN has no cos/sin; the product is a matmul.
inline Program rotor_matrix(const memory& theta, const memory& matrix) {
  Program program;
  program.kernel([theta, matrix] {
    const float* angle = ob::host_floats(theta);
    float* rows = ob::host_floats(matrix);
    std::fill(rows, rows + kN * kN, 0.0f);
    for (int64_t i = 0; i < kN; ++i) rows[i * kN + i] = 1.0f;
    for (int k = 0; k < ref::kRotorSlots; ++k) {
      int a, b;
      ref::rotor_pair(k, a, b);
      const float c = std::cos(angle[k]), s = std::sin(angle[k]);
      for (int64_t i = 0; i < kN; ++i) {  // every row is rotated as its own vector
        const float xa = rows[i * kN + a], xb = rows[i * kN + b];
        rows[i * kN + a] = c * xa - s * xb;
        rows[i * kN + b] = s * xa + c * xb;
      }
    }
  });
  return program;
}

inline float wrap_angle(float theta) {
  const float pi = static_cast<float>(ref::kPi), two_pi = static_cast<float>(2 * ref::kPi);
  float wrapped = std::fmod(theta + pi, two_pi);
  if (wrapped < 0) wrapped += two_pi;
  return wrapped - pi;
}

constexpr float kRotorRate = static_cast<float>(0.01 * ref::kEta);  // 0.01 η

/// θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r for the learnt pairs with r = hypot(u_i, u_j) >= 1e-6,
/// then θ wrapped to [−π, π). u [1,n], lior_diff (Δ) [1,1], theta [8] on the engine.
///  per-pair (baseline): as the original, each pair's i and j (from the pair table on the
///    device) and u_i, u_j are read back to the host one at a time (4 host syncs per pair); the
///    update is a host kernel with the host's atan2 and r as arguments (Δ stays on the device),
///    and the wrap one more host kernel (oneDNN has no fmod).
///  vectorized: one host kernel gathers every pair, updates and wraps: no host read.
class RotorUpdate {
 public:
  RotorUpdate(bool vectorized, const memory& u, const memory& lior_diff, const memory& theta)
      : vectorized_(vectorized), u_(u), lior_diff_(lior_diff), theta_(theta) {
    std::vector<float> table;
    for (int k = 0; k < ref::kRotorAngles; ++k) {
      int i, j;
      ref::rotor_pair(k, i, j);
      table.push_back(static_cast<float>(i));
      table.push_back(static_cast<float>(j));
    }
    pairs_ = constant({ref::kRotorAngles, 2}, table);  // exact small integers
    for (int64_t e = 0; e < 2 * ref::kRotorAngles; ++e)
      pair_entries_.push_back(view(pairs_, dense({1, 1}), e));
    for (int64_t i = 0; i < kN; ++i) u_entries_.push_back(view(u_, dense({1, 1}), i));
  }

  void operator()() const {
    if (vectorized_) {
      ob::run_host_kernel([this] { update_all(); });
    } else {
      update_pair_by_pair();
    }
  }

 private:
  void update_pair_by_pair() const {
    for (int k = 0; k < ref::kRotorAngles; ++k) {
      float i = 0, j = 0, u_i = 0, u_j = 0;
      ob::read_floats_to_host(pair_entries_[2 * k], &i, 1);
      ob::read_floats_to_host(pair_entries_[2 * k + 1], &j, 1);
      ob::read_floats_to_host(u_entries_[static_cast<size_t>(i)], &u_i, 1);
      ob::read_floats_to_host(u_entries_[static_cast<size_t>(j)], &u_j, 1);
      const float r = std::hypot(u_i, u_j);
      if (r < 1e-6f) continue;
      const float angle = std::atan2(u_j, u_i);
      ob::run_host_kernel([this, k, angle, r] {
        const float negated_diff = -ob::host_floats(lior_diff_)[0];
        ob::host_floats(theta_)[k] += kRotorRate * negated_diff * angle * r;
      });
    }
    ob::run_host_kernel([this] {
      float* theta = ob::host_floats(theta_);
      for (int k = 0; k < ref::kRotorSlots; ++k) theta[k] = wrap_angle(theta[k]);
    });
  }

  void update_all() const {
    const float* u = ob::host_floats(u_);
    const float negated_diff = -ob::host_floats(lior_diff_)[0];
    float* theta = ob::host_floats(theta_);
    for (int k = 0; k < ref::kRotorAngles; ++k) {
      int i, j;
      ref::rotor_pair(k, i, j);
      const float r = std::hypot(u[i], u[j]);
      if (r >= 1e-6f) theta[k] += kRotorRate * negated_diff * std::atan2(u[j], u[i]) * r;
    }
    for (int k = 0; k < ref::kRotorSlots; ++k) theta[k] = wrap_angle(theta[k]);
  }

  bool vectorized_;
  memory u_, lior_diff_, theta_;
  memory pairs_;                                  // [6,2]: (i, j) of each learnt pair
  std::vector<memory> pair_entries_, u_entries_;  // [1,1] views of each entry
};

// ---- retrieval (step 4) ------------------------------------------------------------------------

/// act[b] = Σ_k weights[b,k] states[b,k] for weights [B,K] (or, shared, one [1,K] row for every
/// b), states [B,K,d], act [B,1,d]: one inner product (a gemv) per b. A batched matmul
/// [B,1,K] x [B,K,d] computes the same, but oneDNN 2.6's brgemm runs it at ~4 GB/s (8 ms for
/// the default 35 MB of states, one thread); the gemv reads them at ~25 GB/s (1.4 ms).
inline Program weighted_sum_over_candidates(const Viewable& weights, bool shared_weights,
                                            const Viewable& states, const Viewable& act) {
  const Dims dims = dims_of(states.get().get_desc());
  const int64_t B = dims[0], K = dims[1], d = dims[2];
  const memory::desc row = dense({1, K}), out = dense({1, d});
  const memory::desc columns = strided({d, K}, {1, d});  // states[b] as "io" weights
  const auto pd = ob::inner_product_pd(row, columns, out);
  Program program;
  for (int64_t b = 0; b < B; ++b) {
    // (views do not own their storage: the shared row is bound itself, which keeps it alive)
    program.add(ob::Execution(
        pd, {{DNNL_ARG_SRC, shared_weights ? weights.get() : weights.view(row, b * K)},
             {DNNL_ARG_WEIGHTS, states.view(columns, b * K * d)},
             {DNNL_ARG_DST, act.view(out, b * d)}}));
  }
  return program;
}

struct Retrieval {
  Program program;
  memory weights;  // [B,K]
  memory act;      // [B,1,d]
};

/// The retrieval on query [B,1,n], cand_coord [B,K,n], cand_state [B,K,d], g [1,n] and
/// R [B,1,1] (views the caller keeps valid); its arrays are added to `arrays`.
///  unfused (as the original, op by op): u = cand − q; (g u) u; sum over n; max(0, .); + eps;
///    sqrt; R spd; −β cost; softmax over K; w cand_state; sum over K (a row of ones times each
///    batch's products: see the top). 11 primitives + B gemvs; cand_state read once, and a
///    [B,K,d] product written and read.
///  fused: (cand − q)² as one binary with a square post-op; the g-weighted sum over n as a
///    matmul with g as an [n,1] column whose post-ops finish the logits (max(0, .), + eps,
///    sqrt, × R, × −β); softmax; the mixing Σ_k w cand_state (B gemvs).
///    3 primitives + B gemvs, one pass over cand_state. The × −β is a binary post-op with a
///    constant: oneDNN 2.6's brgemm matmul computes a second eltwise_linear post-op in one chain
///    with the first one's alpha and beta (measured: relu, linear, sqrt, linear gives wrong
///    logits).
inline Retrieval build_retrieval(bool fused, const memory& query, const memory& cand_coord,
                                 const Viewable& cand_state, const memory& g, const memory& R,
                                 StepBuffers& arrays) {
  const Dims coord_dims = dims_of(cand_coord.get_desc());
  const int64_t B = coord_dims[0], K = coord_dims[1], n = coord_dims[2];
  const int64_t d = dims_of(cand_state.get().get_desc())[2];
  Retrieval out;
  StepBuffer& weights = arrays.add(dense({B, K}));
  StepBuffer& act = arrays.add(dense({B, 1, d}));
  out.weights = weights.get();
  out.act = act.get();
  StepBuffer& logits = arrays.add(dense({B, K, 1}));
  const memory logits_rows = logits.view(dense({B, K}));
  if (fused) {
    const memory squares = arrays.make(dense({B, K, n}));
    out.program.add(binary(algorithm::binary_sub, cand_coord, query, squares,
                           PostOps().eltwise(algorithm::eltwise_square)));
    out.program.add(matmul(squares, view(g, dense({1, n, 1}), 0), logits.get(),
                           PostOps()
                               .eltwise(algorithm::eltwise_relu)
                               .eltwise(algorithm::eltwise_linear, 1.0f, kEps)
                               .eltwise(algorithm::eltwise_sqrt)
                               .binary(algorithm::binary_mul, R)
                               .binary(algorithm::binary_mul, constant({1, 1, 1}, {-kBeta}))));
    out.program.add(softmax(logits_rows, weights.get(), 1));
    out.program.append(weighted_sum_over_candidates(weights, false, cand_state, act));
    return out;
  }
  const memory u = arrays.make(dense({B, K, n}));
  const memory gu = arrays.make(dense({B, K, n}));
  const memory guu = arrays.make(dense({B, K, n}));
  out.program.add(binary(algorithm::binary_sub, cand_coord, query, u));
  out.program.add(binary(algorithm::binary_mul, u, view(g, dense({1, 1, n}), 0), gu));
  out.program.add(binary(algorithm::binary_mul, gu, u, guu));
  const memory form = arrays.make(dense({B, K, 1}));
  const memory clamped = arrays.make(dense({B, K, 1}));
  const memory shifted = arrays.make(dense({B, K, 1}));
  const memory spd = arrays.make(dense({B, K, 1}));
  const memory cost = arrays.make(dense({B, K, 1}));
  out.program.add(reduce(algorithm::reduction_sum, guu, form));
  out.program.add(eltwise(algorithm::eltwise_relu, form, clamped));
  out.program.add(eltwise(algorithm::eltwise_linear, clamped, shifted, 1.0f, kEps));
  out.program.add(eltwise(algorithm::eltwise_sqrt, shifted, spd));
  out.program.add(binary(algorithm::binary_mul, spd, R, cost));
  out.program.add(eltwise(algorithm::eltwise_linear, cost, logits.get(), -kBeta, 0.0f));
  out.program.add(softmax(logits_rows, weights.get(), 1));
  StepBuffer& products = arrays.add(dense({B, K, d}));
  out.program.add(binary(algorithm::binary_mul, cand_state.get(), weights.view(dense({B, K, 1})),
                         products.get()));
  out.program.append(
      weighted_sum_over_candidates(constant_fill({1, K}, 1.0f), true, products, act));
  return out;
}

// ---- the speed s of the LIoR step (step 5) -----------------------------------------------------

/// s [B,1] = sqrt(max(0, Σ_i (g_i v_i) v_i) + eps) from v [B,n] and g [1,n], op by op as the
/// original (and the reference: (g v) v): 6 primitives.
inline Program speed(const memory& v, const memory& g, const memory& s, StepBuffers& arrays) {
  const Dims v_dims = dims_of(v.get_desc());
  const int64_t B = v_dims[0], n = v_dims[1];
  const memory gv = arrays.make(dense({B, n}));
  const memory gvv = arrays.make(dense({B, n}));
  const memory form = arrays.make(dense({B, 1}));
  const memory clamped = arrays.make(dense({B, 1}));
  const memory shifted = arrays.make(dense({B, 1}));
  Program program;
  program.add(binary(algorithm::binary_mul, v, g, gv));
  program.add(binary(algorithm::binary_mul, gv, v, gvv));
  program.add(reduce(algorithm::reduction_sum, gvv, form));
  program.add(eltwise(algorithm::eltwise_relu, form, clamped));
  program.add(eltwise(algorithm::eltwise_linear, clamped, shifted, 1.0f, kEps));
  program.add(eltwise(algorithm::eltwise_sqrt, shifted, s));
  return program;
}

// ---- the field (step 9) ------------------------------------------------------------------------

/// The field F, its momentum P and E = (dt/2) k F_eq, in the layout the depthwise convolution
/// runs fast in: the real and the imaginary parts as a batch of two NHWC images of Nx x Ny pixels
/// and D*D channels. Each part is then one dense half of the buffer (R needs them apart) and the
/// zero-padded 5-point Laplacian of every channel is one depthwise 3x3 convolution with kernel
/// [[0,1,0],[1,-4,1],[0,1,0]]. F0 and the outputs keep the input layout [Nx,Ny,D,D,2]: a reorder
/// each way (user_view describes that layout with the internal dimension order).
///
/// A half kick P += (dt/2) Force(F), Force = (ħ²/2m) Lap(F) − k (F − F_eq), is ONE
/// convolution: weights (dt/2)(ħ²/2m) on the four neighbours and (dt/2)(−4 ħ²/2m − k) in the
/// centre, a sum post-op (adds P) and a binary post-op adding E. (oneDNN 2.6's jit depthwise
/// convolution takes no eltwise post-op, so the scaling lives in the weights.) The drift
/// F += (dt/m) P is one binary.
/// Accuracy: P is rounded twice per half kick at its own scale ((conv + P) + E; jit_dw has no
/// binary-then-sum order), where the reference rounds once (P + h Force): P's error against fp64
/// is 1.1e-6 at the default size instead of the serial fp32 reference's 3.2e-7 (tolerance 1e-5;
/// a standalone fp32 model of both orders gives 9.9e-7 and 3.2e-7). Adding E in a separate
/// binary would give it back for one more pass over P per half kick.
class Field {
 public:
  explicit Field(const ref::WindowDims& dims)
      : size_(dims.field_size()),
        image_({2, dims.channels / 2, dims.nx, dims.ny}, memory::data_type::f32,
               memory::format_tag::nhwc),
        user_(strided({2, dims.channels / 2, dims.nx, dims.ny},
                      {1, 2, dims.ny * dims.channels, dims.channels})) {
    F_ = ob::allocate(image_);
    P_ = ob::allocate(image_);
    E_ = ob::allocate(image_);
    zeros_ = ob::allocate(image_);
    ob::fill_floats(zeros_, 0.0f);
    build_step(dims.channels / 2);
  }

  const memory& F() const { return F_; }
  const memory& P() const { return P_; }
  int64_t size() const { return size_; }
  const memory::desc& image_desc() const { return image_; }

  /// A view of a dense [Nx*Ny*D*D*2] array in the input layout, for reorders to and from F or P.
  memory user_view(const memory& array) const { return view(array, user_, 0); }

  /// F = F0 and P = 0, and E = (dt/2) k F_eq with F_eq = F0: the start of a window.
  Program reset(const memory& F0_user) const {
    Program program;
    program.add(copy(F0_user, F_));
    program.add(copy(zeros_, P_));
    program.add(
        eltwise(algorithm::eltwise_linear, F_, E_, static_cast<float>(kHalfDt * ref::kSpring)));
    return program;
  }

  /// One Störmer–Verlet step: half kick, drift, half kick (3 primitives).
  const Program& step() const { return step_; }

  /// F and P to dense arrays in the input layout.
  Program export_to(const memory& F_user, const memory& P_user) const {
    Program program;
    program.add(copy(F_, F_user));
    program.add(copy(P_, P_user));
    return program;
  }

  /// Copies F and P to (or from) another pair of image_desc() arrays: snapshot and restore.
  Program save(const memory& F_copy, const memory& P_copy) const {
    Program program;
    program.add(copy(F_, F_copy));
    program.add(copy(P_, P_copy));
    return program;
  }
  Program restore(const memory& F_copy, const memory& P_copy) const {
    Program program;
    program.add(copy(F_copy, F_));
    program.add(copy(P_copy, P_));
    return program;
  }

 private:
  static constexpr double kHalfDt = ref::kDt / 2;

  void build_step(int64_t channels) {
    const double diffusion = ref::kHbar * ref::kHbar / (2 * ref::kMass);
    const float side = static_cast<float>(kHalfDt * diffusion);
    const float centre = static_cast<float>(kHalfDt * (-4 * diffusion - ref::kSpring));
    std::vector<float> taps;
    for (int64_t c = 0; c < channels; ++c)
      taps.insert(taps.end(), {0, side, 0, side, centre, side, 0, side, 0});
    memory user_weights = constant({channels, 1, 1, 3, 3}, taps);  // goihw, depthwise
    const memory::desc any_weights({channels, 1, 1, 3, 3}, memory::data_type::f32,
                                   memory::format_tag::any);
    const PostOps kick = PostOps().sum().binary(algorithm::binary_add, E_);
    const auto conv = ob::convolution_pd(image_, any_weights, image_, 1, kick.attr());
    weights_ = ob::allocate(conv.weights_desc());
    dnnl::reorder(user_weights, weights_).execute(ob::stream(), user_weights, weights_);
    ob::stream().wait();
    const ob::Args kick_args =
        kick.with({{DNNL_ARG_SRC, F_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, P_}});
    const memory::desc flat = dense({1, size_});
    const memory F_flat = view(F_, flat, 0), P_flat = view(P_, flat, 0);
    step_.add(ob::Execution(conv, kick_args));
    step_.add(binary(algorithm::binary_mul, P_flat,
                     constant({1, 1}, {static_cast<float>(ref::kDt / ref::kMass)}), F_flat,
                     PostOps().binary(algorithm::binary_add, F_flat)));
    step_.add(ob::Execution(conv, kick_args));
  }

  int64_t size_;
  memory::desc image_, user_;
  memory F_, P_, E_, zeros_, weights_;
  Program step_;
};

// ---- one run_window ----------------------------------------------------------------------------

/// Which optimizations a phase has (cumulative).
struct WindowPhase {
  explicit WindowPhase(int phase)
      : eager(phase < 6),
        batched_metrics(phase >= 1),
        speed_once(phase >= 3),
        fused_retrieval(phase >= 4),
        hoisted_batch(phase >= 8),
        last_step_act(phase >= 9),
        deferred_metrics(phase >= 10) {}
  bool eager;             // < 6: fresh arrays every step, out-of-place accumulators
  bool batched_metrics;   // >= 1: the 3 metrics stacked, one read per step
  bool speed_once;        // >= 3: s computed once
  bool fused_retrieval;   // >= 4
  bool hoisted_batch;     // >= 8: retrieval batch and query built once per window
  bool last_step_act;     // >= 9: retrieval only in the last step
  bool deferred_metrics;  // >= 10: the metrics of all steps read once per window
};

/// The window's fixed inputs on the engine (the caller owns them).
struct WindowInputs {
  memory O;                     // [B,T,d]
  memory bank_coord;            // [C,n]
  memory bank_state;            // [C,d]
  memory g;                     // [1,n]
  memory theta;                 // [8]
  std::optional<memory> nudge;  // [B,n] in the nudged window
};

/// One run_window (reference: run_window) on `field`, which run() advances in place; the field
/// is not reset here (the caller does: a window starts from the state it is given).
class WindowProgram {
 public:
  WindowProgram(const ref::WindowDims& dims, int phase, const WindowInputs& in, const Field& field)
      : dims_(dims), phase_(phase), in_(in), field_(field), arrays_(phase_.eager) {
    const int64_t W = dims.steps;
    std::vector<float> counts;
    for (int64_t t = 1; t <= W; ++t) counts.push_back(static_cast<float>(t));
    counts_ = constant({W}, counts);  // the divisors t of the progress metrics (device values)
    zeros_ = constant_fill({dims.batch, kN}, 0.0f);
    scalars_ = ob::allocate(dense({1, 3}));
    vbar_ = ob::allocate(dense({dims.batch, kN}));
    path_ = ob::allocate(dense({W, ref::kPathColumns}));
    metrics_log_ = ob::allocate(dense({W, 3}));
    host_log_.assign(static_cast<size_t>(W * 3), kNaN);
    build_curvature();
    build_batch();
    build_query();
    build_retrieval_step();
    build_lior_step();
    build_accumulation();
    build_path_and_progress();
    build_finish();
  }

  void run() {
    begin_window();
    for (int64_t t = 0; t < dims_.steps; ++t) step(t);
    if (phase_.deferred_metrics)
      ob::read_floats_to_host(metrics_log_, host_log_.data(), host_log_.size());
    finish_();
  }

  void poison() {
    for (const memory& array : {scalars_, vbar_, path_, retrieval_.act})
      ob::fill_floats(array, kNaN);
  }

  // Results of the last run(), on the engine.
  const memory& scalars() const { return scalars_; }  // [1,3]: R, lior, spd (sums / W)
  memory lior() const { return view(scalars_, dense({1, 1}), 1); }
  const memory& act() const { return retrieval_.act; }  // [B,1,d], the last step's
  const memory& vbar() const { return vbar_; }          // [B,n]
  const memory& path() const { return path_; }          // [W, n+3]
  const memory& q() const { return q_; }                // [B,n]: q_state's first n columns
  /// Rows [first, first+count) of q and q_state (views kept valid across steps), for the
  /// training step's memory update.
  memory q_rows(int64_t first, int64_t count) {
    return q_buffer_->view(dense({count, kN}), first * kN);
  }
  memory q_state_rows(int64_t first, int64_t count) {
    return q_state_->view(dense({count, dims_.state_dim}), first * dims_.state_dim);
  }

 private:
  memory count(int64_t t) const { return view(counts_, dense({1, 1}), t); }

  // Step 1: R = mean |F| and its broadcast to the batch (row 0 of the metrics stack).
  void build_curvature() {
    const int64_t B = dims_.batch, half = field_.size() / 2;
    StepBuffer& squares = arrays_.add(field_.image_desc());
    StepBuffer& modulus = arrays_.add(dense({1, half}));
    StepBuffer& R = arrays_.add(dense({1, 1}));
    stack_ = &arrays_.add(dense({3, B}));  // rows: R_b, dlior, s (for the metrics)
    R_column_ = stack_->view(dense({B, 1}), 0);
    R_cube_ = stack_->view(dense({B, 1, 1}), 0);
    curvature_.add(eltwise(algorithm::eltwise_square, field_.F(), squares.get()));
    curvature_.add(binary(algorithm::binary_add, squares.view(dense({1, half}), 0),
                          squares.view(dense({1, half}), half), modulus.get(),
                          PostOps().eltwise(algorithm::eltwise_sqrt)));
    curvature_.add(reduce(algorithm::reduction_mean, modulus.get(), R.get()));
    curvature_.add(copy(R.view(strided({1, B}, {1, 0})), stack_->view(dense({1, B}), 0)));
  }

  // Step 2: q_state = mean_T O (a matmul with a row of ones, then × 1/T), q = its first n columns
  // (copied to a dense array: oneDNN 2.6 runs binaries with a strided operand in its reference
  // implementation, ~20x slower on the per-step [B,n] ops that read v = q), and the candidates
  // concat_K(O, bank) as reorders (the bank repeated over the batch through a stride-0 view).
  void build_batch() {
    const int64_t B = dims_.batch, T = dims_.tokens, d = dims_.state_dim, C = dims_.bank_rows;
    const int64_t K = dims_.candidates();
    q_state_ = &arrays_.add(dense({B, 1, d}));
    q_buffer_ = &arrays_.add(dense({B, kN}));
    q_ = q_buffer_->get();
    batch_.add(matmul(constant_fill({B, 1, T}, 1.0f), in_.O, q_state_->get(),
                      PostOps().eltwise(algorithm::eltwise_linear, 1.0f / static_cast<float>(T))));
    batch_.add(copy(q_state_->view(strided({B, kN}, {d, 1})), q_));
    cand_coord_ = &arrays_.add(dense({B, K, kN}));
    cand_state_ = &arrays_.add(dense({B, K, d}));
    batch_.add(copy(view(in_.O, strided({B, T, kN}, {T * d, d, 1}), 0),
                    cand_coord_->view(strided({B, T, kN}, {K * kN, kN, 1}), 0)));
    batch_.add(copy(view(in_.bank_coord, strided({B, C, kN}, {0, kN, 1}), 0),
                    cand_coord_->view(strided({B, C, kN}, {K * kN, kN, 1}), T * kN)));
    batch_.add(copy(in_.O, cand_state_->view(strided({B, T, d}, {K * d, d, 1}), 0)));
    batch_.add(copy(view(in_.bank_state, strided({B, C, d}, {0, d, 1}), 0),
                    cand_state_->view(strided({B, C, d}, {K * d, d, 1}), T * d)));
  }

  // Step 3: v = q; query = rotor_apply(q + nu, θ) as a matmul with the rotor's matrix.
  void build_query() {
    const int64_t B = dims_.batch;
    memory shifted = q_;
    if (in_.nudge) {
      shifted = arrays_.make(dense({B, kN}));
      query_.add(binary(algorithm::binary_add, q_, *in_.nudge, shifted));
    }
    const memory rotor = arrays_.make(dense({kN, kN}));
    query_.append(rotor_matrix(in_.theta, rotor));
    query_rotated_ = &arrays_.add(dense({B, kN}));
    query_.add(matmul(shifted, rotor, query_rotated_->get()));
  }

  // Step 4.
  void build_retrieval_step() {
    const int64_t B = dims_.batch;
    retrieval_ = build_retrieval(phase_.fused_retrieval, query_rotated_->view(dense({B, 1, kN})),
                                 cand_coord_->get(), *cand_state_, in_.g, R_cube_, arrays_);
  }

  // Step 5: s (once more for the metrics before phase 3) and dlior = R s, into the stack.
  void build_lior_step() {
    const int64_t B = dims_.batch;
    const memory dlior = stack_->view(dense({B, 1}), B);
    const memory metrics_s = stack_->view(dense({B, 1}), 2 * B);
    const memory s = phase_.speed_once ? metrics_s : arrays_.make(dense({B, 1}));
    lior_.append(speed(q_, in_.g, s, arrays_));
    lior_.add(binary(algorithm::binary_mul, s, R_column_, dlior));
    if (!phase_.speed_once) lior_.append(speed(q_, in_.g, metrics_s, arrays_));
  }

  // Step 6: the means of the stack's rows, the metric sums and vel_acc.
  void build_accumulation() {
    const int64_t B = dims_.batch;
    means_ = &arrays_.add(dense({1, 3}));  // mean R, mean dlior, mean s
    const bool in_place = !phase_.eager;
    velocity_.emplace(dense({B, kN}), in_place);
    metric_sums_.reserve(3);
    if (phase_.batched_metrics) {
      metric_sums_.emplace_back(dense({1, 3}), in_place);
      means_step_.add(
          reduce(algorithm::reduction_mean, stack_->get(), means_->view(dense({3, 1}))));
      accumulate_.add(binary(algorithm::binary_add, metric_sums_[0].value(),
                             means_->view(dense({1, 3})), metric_sums_[0].target()));
    } else {  // as the original: three means, three sums
      for (int64_t i = 0; i < 3; ++i) {
        metric_sums_.emplace_back(dense({1, 1}), in_place);
        const memory mean = means_->view(dense({1, 1}), i);
        means_step_.add(
            reduce(algorithm::reduction_mean, stack_->view(dense({1, B}), i * B), mean));
        accumulate_.add(
            binary(algorithm::binary_add, metric_sums_[i].value(), mean, metric_sums_[i].target()));
      }
    }
    accumulate_.add(binary(algorithm::binary_add, velocity_->value(), q_, velocity_->target()));
    // The sums start at zero (a copy: the original creates them as zeros).
    reset_.add(copy(zeros_, velocity_->target()));
    for (const Accumulator& sums : metric_sums_)
      reset_.add(copy(view(zeros_, sums.target().get_desc()), sums.target()));
  }

  // Steps 7 and 8 of step t: the path row, and the progress metrics (sums / t).
  void build_path_and_progress() {
    const int64_t W = dims_.steps, columns = ref::kPathColumns;
    const memory means_R_dlior = means_->view(dense({1, 2}), 0);
    progress_ = &arrays_.add(dense({1, 3}));
    for (int64_t t = 0; t < W; ++t) {
      const memory mean_v = view(path_, dense({1, kN}), t * columns);
      Program path;
      path.add(reduce(algorithm::reduction_mean, q_, mean_v));
      path.add(copy(means_R_dlior, view(path_, dense({1, 2}), t * columns + kN)));
      path.add(reduce(algorithm::reduction_norm_lp_sum, mean_v,
                      view(path_, dense({1, 1}), t * columns + kN + 2), {}, 2.0f));
      path_rows_.push_back(std::move(path));
      std::vector<ob::Execution> progress;
      if (!phase_.batched_metrics) {
        for (int64_t i = 0; i < 3; ++i)
          progress.push_back(binary(algorithm::binary_div, metric_sums_[i].value(), count(t),
                                    progress_->view(dense({1, 1}), i)));
      } else {
        const memory destination =
            phase_.deferred_metrics ? view(metrics_log_, dense({1, 3}), 3 * t) : progress_->get();
        progress.push_back(
            binary(algorithm::binary_div, metric_sums_[0].value(), count(t), destination));
      }
      progress_steps_.push_back(std::move(progress));
    }
    for (int64_t i = 0; i < 3; ++i) progress_entries_.push_back(progress_->view(dense({1, 1}), i));
  }

  // The window's results: the sums / W.
  void build_finish() {
    const memory steps = count(dims_.steps - 1);
    if (phase_.batched_metrics) {
      finish_.add(binary(algorithm::binary_div, metric_sums_[0].value(), steps, scalars_));
    } else {
      for (int64_t i = 0; i < 3; ++i)
        finish_.add(binary(algorithm::binary_div, metric_sums_[i].value(), steps,
                           view(scalars_, dense({1, 1}), i)));
    }
    finish_.add(binary(algorithm::binary_div, velocity_->value(), steps, vbar_));
  }

  void begin_window() {
    for_each_accumulator([](Accumulator& sums) { sums.before_update(); });
    reset_();
    for_each_accumulator([](Accumulator& sums) { sums.after_update(); });
    if (phase_.hoisted_batch) {
      batch_();
      query_();
    }
  }

  void step(int64_t t) {
    arrays_.begin_step();
    curvature_();
    if (!phase_.hoisted_batch) {
      batch_();
      query_();
    }
    if (!phase_.last_step_act || t == dims_.steps - 1) retrieval_.program();
    lior_();
    means_step_();
    for_each_accumulator([](Accumulator& sums) { sums.before_update(); });
    accumulate_();
    for_each_accumulator([](Accumulator& sums) { sums.after_update(); });
    path_rows_[t]();
    report_progress(t);
    field_.step()();
  }

  // Step 8: the host reads the progress metrics: one read per metric (phase 0), one per step,
  // or (deferred) none here and one per window in run().
  void report_progress(int64_t t) {
    const std::vector<ob::Execution>& divisions = progress_steps_[t];
    if (!phase_.batched_metrics) {
      for (size_t i = 0; i < divisions.size(); ++i) {
        divisions[i]();
        ob::read_floats_to_host(progress_entries_[i], &host_log_[3 * t + i], 1);
      }
      return;
    }
    divisions[0]();
    if (!phase_.deferred_metrics) ob::read_floats_to_host(progress_->get(), &host_log_[3 * t], 3);
  }

  template <typename Visit>
  void for_each_accumulator(Visit visit) {
    visit(*velocity_);
    for (Accumulator& sums : metric_sums_) visit(sums);
  }

  ref::WindowDims dims_;
  WindowPhase phase_;
  WindowInputs in_;
  const Field& field_;
  StepBuffers arrays_;
  memory counts_, zeros_;
  memory scalars_, vbar_, path_, metrics_log_;  // results and the deferred metrics [W,3]
  std::vector<float> host_log_;                 // what the host reads: t x (R, lior, spd) / t
  StepBuffer *stack_ = nullptr, *q_state_ = nullptr, *q_buffer_ = nullptr, *cand_coord_ = nullptr,
             *cand_state_ = nullptr, *query_rotated_ = nullptr, *means_ = nullptr,
             *progress_ = nullptr;
  memory R_column_, R_cube_, q_;
  std::optional<Accumulator> velocity_;
  std::vector<Accumulator> metric_sums_;
  Retrieval retrieval_;
  Program curvature_, batch_, query_, lior_, means_step_, accumulate_, reset_, finish_;
  std::vector<Program> path_rows_;
  std::vector<std::vector<ob::Execution>> progress_steps_;
  std::vector<memory> progress_entries_;
};

// ---- variant glue ------------------------------------------------------------------------------

/// Why a trainer2 oneDNN variant cannot run on `device` at `phase`, if it cannot.
inline std::optional<pb::CannotRun> cannot_run(const std::string& device, int phase) {
  using Kind = pb::CannotRun::Kind;
  if (device != "cpu")
    return pb::CannotRun{Kind::Unsupported, "the oneDNN variants use the CPU engine only"};
  if (phase == 5) {
    return pb::CannotRun{
        Kind::Unsupported,
        "adaptive_cleanup empties a caching allocator's cache (LibTorch CUDA); oneDNN's "
        "CPU engine allocates plain host memory and keeps no cache to empty"};
  }
  if (phase == 7) {
    return pb::CannotRun{
        Kind::Unsupported,
        "graph_capture records the window as a CUDA graph; oneDNN's CPU engine has no "
        "graph capture (its primitives are already built once in setup and replayed)"};
  }
  return std::nullopt;
}

/// A new dense engine array holding `array`'s values as floats (setup).
inline memory upload(const pb::HostArray& array, const Dims& dims) {
  return constant(dims, array.to_floats());
}

/// An engine array back on the host as a HostArray of `shape` (outputs(): not timed).
inline pb::HostArray download(const memory& array, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  std::vector<float> values(static_cast<size_t>(count));
  ob::read_floats_to_host(array, values.data(), values.size());
  return pb::HostArray::from_floats(shape, values.data(), count);
}

/// One window's outputs (names with `prefix`): the scalars, act, vbar, path, and F and P from the
/// dense arrays they were exported to, shaped as F0 (`field_shape`).
inline void add_window_outputs(pb::ArrayMap& out, const std::string& prefix,
                               const ref::WindowDims& dims, const WindowProgram& window,
                               const memory& F, const memory& P,
                               const std::vector<int64_t>& field_shape) {
  float scalars[3];  // R, lior, spd
  ob::read_floats_to_host(window.scalars(), scalars, 3);
  out[prefix + "R"] = pb::HostArray::scalar(scalars[0]);
  out[prefix + "lior"] = pb::HostArray::scalar(scalars[1]);
  out[prefix + "spd"] = pb::HostArray::scalar(scalars[2]);
  out[prefix + "act"] = download(window.act(), {dims.batch, dims.state_dim});
  out[prefix + "vbar"] = download(window.vbar(), {dims.batch, kN});
  out[prefix + "path"] = download(window.path(), {dims.steps, ref::kPathColumns});
  out[prefix + "F"] = download(F, field_shape);
  out[prefix + "P"] = download(P, field_shape);
}

}  // namespace pb::onednn_backend::trainer2

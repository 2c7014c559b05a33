#pragma once
// oneDNN backend glue shared by the oneDNN variants (optimized/*/*-onednn.cpp).
//
// The backend owns one CPU engine and one in-order stream for the whole process; variants build
// their primitives against them in setup() and run them in run(). Everything a variant does to
// the runtime goes through the helpers below, because they are where the counters are fed:
//   execute() / Execution  -> one dispatched op per primitive execution,
//   allocate()             -> bytes allocated (counted only inside the counted iteration),
//   read_floats_to_host()  -> one host sync (stream wait + copy),
//   run_host_kernel()      -> one dispatched op (plain C++ where no primitive fits; no sync).
//
// oneDNN 3.0 removed the op descriptors (eltwise_forward::desc, ...) and changed post-op and
// primitive-descriptor signatures; the version-specific code lives in the small *_pd() and
// append_eltwise() helpers at the bottom, so variants compile unchanged against 2.x and 3.x.

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace pb::onednn_backend {

using Args = std::unordered_map<int, dnnl::memory>;

/// The process-wide CPU engine (kind cpu, index 0). Valid between the backend's init() and
/// finalize(); throws std::logic_error outside that window.
const dnnl::engine& engine();
/// The in-order stream on engine() that every variant executes on.
dnnl::stream& stream();

/// A new memory of `desc` on engine(). Its bytes are noted as allocated (pb::counters), which
/// only counts when called inside the counted run().
dnnl::memory allocate(const dnnl::memory::desc& desc);

/// A memory of `desc` over the storage of `base`, starting `offset` floats in (no copy, no
/// allocation). Lets a primitive write into one row of a larger buffer with a plain descriptor.
/// CPU engines only: there a memory handle is a host pointer.
dnnl::memory float_view(const dnnl::memory& base, const dnnl::memory::desc& desc,
                        int64_t offset);

/// Counts one dispatched op (pb::counters); for work dispatched without execute().
void note_dispatched_op();

/// Runs `primitive` on stream() with `args`: one dispatched op. Does not wait.
void execute(const dnnl::primitive& primitive, const Args& args);
/// The same with arguments already in oneDNN's C form (no per-call map or vector).
void execute(const dnnl::primitive& primitive, const std::vector<dnnl_exec_arg_t>& args);

/// Waits for stream(), then copies the `count` floats of `memory` to `destination`: one host
/// sync. Allocates nothing on the host, so it can sit inside run().
void read_floats_to_host(const dnnl::memory& memory, float* destination, size_t count);
/// The same into a new vector (for outputs(), which is not timed).
std::vector<float> read_floats_to_host(const dnnl::memory& memory);

/// Copies `values` into `memory` (setup and poisoning: not a device read, not counted).
void write_floats(const dnnl::memory& memory, const std::vector<float>& values);
/// Fills `memory` with `value` (e.g. NaN to poison an output).
void fill_floats(const dnnl::memory& memory, float value);

/// The host address of a memory of engine(): on a CPU engine a memory handle is a host pointer.
/// Only for host kernels (below), setup and outputs; never to read a result inside run().
inline float* host_floats(const dnnl::memory& memory) {
  return static_cast<float*>(memory.get_data_handle());
}

/// Runs `kernel`, plain C++ over memories of engine(), as one dispatched op in stream order: the
/// CPU engine's stand-in for a custom device kernel where no primitive fits (oneDNN has no user
/// kernels on the CPU engine). The kernel reads and writes device memory on the device side and
/// returns nothing to the host code, so it is not a host sync. The wait only orders it after the
/// queued primitives (with the OpenMP runtime they have finished already: an in-order stream).
template <typename Kernel>
void run_host_kernel(Kernel&& kernel) {
  note_dispatched_op();
  stream().wait();
  kernel();
}

/// One primitive execution prepared in setup(): the primitive, its scratchpad and its arguments.
/// Primitives are created in user scratchpad mode (see the *_pd() helpers) so that no allocation
/// hides inside execution; the scratchpad is allocated here, once. Arguments are converted to
/// oneDNN's C form once too, so operator() builds no std::unordered_map per call: the harness
/// counts host heap bytes in run(), and at small sizes per-call bookkeeping shows in the time.
class Execution {
 public:
  /// Any primitive descriptor, reorders included (theirs is not a dnnl::primitive_desc).
  Execution(const dnnl::primitive_desc_base& pd, const Args& args);
  /// Executes on stream() through execute(): one dispatched op. Does not wait.
  void operator()() const { execute(primitive_, c_args_); }

 private:
  dnnl::primitive primitive_;
  std::vector<dnnl::memory> memories_;  // owns what c_args_ points at, scratchpad included
  std::vector<dnnl_exec_arg_t> c_args_;
};

// ---- version-specific construction (oneDNN 2.x op descriptors vs 3.x direct constructors) ----

/// `attr` with the scratchpad mode set to user (see Execution).
inline dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// Appends an eltwise post-op: dst = algorithm(dst; alpha, beta). 3.x dropped the scale argument.
inline void append_eltwise(dnnl::post_ops& ops, dnnl::algorithm algorithm, float alpha,
                           float beta) {
#if DNNL_VERSION_MAJOR >= 3
  ops.append_eltwise(algorithm, alpha, beta);
#else
  ops.append_eltwise(1.0f, algorithm, alpha, beta);
#endif
}

/// Forward-inference eltwise with dst laid out as src (in place allowed).
inline dnnl::eltwise_forward::primitive_desc eltwise_pd(
    dnnl::algorithm algorithm, const dnnl::memory::desc& data, float alpha = 0.0f,
    float beta = 0.0f, const dnnl::primitive_attr& attr = {}) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), dnnl::prop_kind::forward_inference, algorithm, data, data, alpha, beta,
          user_scratchpad(attr)};
#else
  const dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, data,
                                         alpha, beta);
  return {desc, user_scratchpad(attr), engine()};
#endif
}

/// dst = src0 (algorithm) src1, src1 broadcast along its size-1 dimensions.
inline dnnl::binary::primitive_desc binary_pd(dnnl::algorithm algorithm,
                                              const dnnl::memory::desc& src0,
                                              const dnnl::memory::desc& src1,
                                              const dnnl::memory::desc& dst,
                                              const dnnl::primitive_attr& attr = {}) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), algorithm, src0, src1, dst, user_scratchpad(attr)};
#else
  const dnnl::binary::desc desc(algorithm, src0, src1, dst);
  return {desc, user_scratchpad(attr), engine()};
#endif
}

/// Reduces src over the dimensions where dst has size 1 (sum, mean, ...; p and eps only for the
/// norm algorithms, e.g. reduction_norm_lp_sum with p = 2 is the Euclidean norm).
inline dnnl::reduction::primitive_desc reduction_pd(dnnl::algorithm algorithm,
                                                    const dnnl::memory::desc& src,
                                                    const dnnl::memory::desc& dst,
                                                    const dnnl::primitive_attr& attr = {},
                                                    float p = 0.0f, float eps = 0.0f) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), algorithm, src, dst, p, eps, user_scratchpad(attr)};
#else
  const dnnl::reduction::desc desc(algorithm, src, dst, p, eps);
  return {desc, user_scratchpad(attr), engine()};
#endif
}

/// dst = softmax of src along `axis` (dst laid out as src).
inline dnnl::softmax_forward::primitive_desc softmax_pd(const dnnl::memory::desc& data, int axis,
                                                        const dnnl::primitive_attr& attr = {}) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, data,
          data, axis, user_scratchpad(attr)};
#else
  const dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, data, axis);
  return {desc, user_scratchpad(attr), engine()};
#endif
}

/// Forward-inference direct 2-D convolution, stride 1, `padding` zeros on every side.
inline dnnl::convolution_forward::primitive_desc convolution_pd(
    const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
    const dnnl::memory::desc& dst, dnnl::memory::dim padding,
    const dnnl::primitive_attr& attr = {}) {
  const dnnl::memory::dims strides{1, 1}, pad{padding, padding};
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          src, weights, dst, strides, pad, pad, user_scratchpad(attr)};
#else
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::convolution_direct, src, weights,
                                             dst, strides, pad, pad);
  return {desc, user_scratchpad(attr), engine()};
#endif
}

/// dst [N,OC] = src [N,IC] x weights [OC,IC]^T (forward inference, no bias). With N = 1 and the
/// weights in "io" layout ([IC,OC] row-major) it is a gemv that oneDNN 2.6 runs at memory speed.
inline dnnl::inner_product_forward::primitive_desc inner_product_pd(
    const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
    const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr = {}) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), dnnl::prop_kind::forward_inference, src, weights, dst, user_scratchpad(attr)};
#else
  const dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, src, weights,
                                               dst);
  return {desc, user_scratchpad(attr), engine()};
#endif
}

/// A copy (or layout change) from src to dst: a reorder, the same call in oneDNN 2.x and 3.x.
inline dnnl::reorder::primitive_desc reorder_pd(const dnnl::memory::desc& src,
                                                const dnnl::memory::desc& dst,
                                                const dnnl::primitive_attr& attr = {}) {
  return {engine(), src, engine(), dst, user_scratchpad(attr)};
}

/// dst = src x weights (2-D: [M,K] x [K,N] -> [M,N]), post-ops from `attr`.
inline dnnl::matmul::primitive_desc matmul_pd(const dnnl::memory::desc& src,
                                              const dnnl::memory::desc& weights,
                                              const dnnl::memory::desc& dst,
                                              const dnnl::primitive_attr& attr = {}) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), src, weights, dst, user_scratchpad(attr)};
#else
  const dnnl::matmul::desc desc(src, weights, dst);
  return {desc, user_scratchpad(attr), engine()};
#endif
}

}  // namespace pb::onednn_backend

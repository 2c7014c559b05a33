#pragma once
// Primitive construction for the oneDNN variants: the primitive descriptors they use, in oneDNN
// 2.x and 3.x alike, post-op chains with their binary operands, and one-line Executions of the
// common primitives (eltwise, binary, reduction, matmul, softmax, copy).
//
// oneDNN 3.0 removed the op descriptors (eltwise_forward::desc, ...) and changed post-op and
// primitive-descriptor signatures; the version-specific code lives in the small *_pd() helpers
// and append_eltwise() below, so variants compile unchanged against 2.x and 3.x. Every primitive
// is created in user scratchpad mode: Execution allocates its scratchpad once, in setup.

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/onednn/onednn_backend.hpp"

namespace pb::onednn_backend {

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

/// The same with a bias added to every output channel.
inline dnnl::convolution_forward::primitive_desc convolution_pd(
    const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
    const dnnl::memory::desc& bias, const dnnl::memory::desc& dst, dnnl::memory::dim padding,
    const dnnl::primitive_attr& attr = {}) {
  const dnnl::memory::dims strides{1, 1}, pad{padding, padding};
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          src, weights, bias, dst, strides, pad, pad, user_scratchpad(attr)};
#else
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::convolution_direct, src, weights,
                                             bias, dst, strides, pad, pad);
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

/// Forward-inference batch normalization in place (dst laid out as data); `flags` say whether
/// it computes the statistics or takes them (use_global_stats) and applies scale and shift.
inline dnnl::batch_normalization_forward::primitive_desc batch_norm_pd(
    const dnnl::memory::desc& data, float eps, dnnl::normalization_flags flags) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), dnnl::prop_kind::forward_inference, data, data, eps, flags,
          user_scratchpad({})};
#else
  const dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, data,
                                                     eps, flags);
  return {desc, user_scratchpad({}), engine()};
#endif
}

/// Normalizes each row of a 2-D `rows` over its last axis; no scale or shift.
inline dnnl::layer_normalization_forward::primitive_desc row_norm_pd(
    const dnnl::memory::desc& rows, float eps) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine(), dnnl::prop_kind::forward_inference, rows, rows, eps,
          dnnl::normalization_flags::none, user_scratchpad({})};
#else
  const dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, rows,
                                                     eps, dnnl::normalization_flags::none);
  return {desc, user_scratchpad({}), engine()};
#endif
}

// ---- post-ops and one-line executions ----------------------------------------------------------

/// Post-ops of one primitive and the arguments of their binary operands.
class PostOps {
 public:
  PostOps& eltwise(dnnl::algorithm kind, float alpha = 0.0f, float beta = 0.0f);
  PostOps& binary(dnnl::algorithm kind, const dnnl::memory& operand);
  /// dst = scale * dst + the primitive's result (dst's previous value joins at this point).
  PostOps& sum(float scale = 1.0f);
  dnnl::primitive_attr attr() const;
  /// `args` with the binary operands added.
  Args with(Args args) const;

 private:
  dnnl::post_ops ops_;
  Args args_;
};

Execution eltwise(dnnl::algorithm kind, const dnnl::memory& src, const dnnl::memory& dst,
                  float alpha = 0.0f, float beta = 0.0f);
Execution binary(dnnl::algorithm kind, const dnnl::memory& src0, const dnnl::memory& src1,
                 const dnnl::memory& dst, const PostOps& post = {});
/// src reduced into dst (reduction_pd); where dst has src's dims, each value reduced alone.
Execution reduce(dnnl::algorithm kind, const dnnl::memory& src, const dnnl::memory& dst,
                 const PostOps& post = {}, float p = 0.0f);
Execution matmul(const dnnl::memory& src, const dnnl::memory& weights, const dnnl::memory& dst,
                 const PostOps& post = {});
Execution softmax(const dnnl::memory& src, const dnnl::memory& dst, int axis);
/// A reorder from src to dst (a copy, or a change of layout or data type).
Execution copy(const dnnl::memory& src, const dnnl::memory& dst);

}  // namespace pb::onednn_backend

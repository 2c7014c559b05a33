// Post-op chains and one-line executions of the common primitives (primitives.hpp).

#include "backends/onednn/primitives.hpp"

#include <stdexcept>

namespace pb::onednn_backend {

using dnnl::algorithm;
using dnnl::memory;

PostOps& PostOps::eltwise(algorithm kind, float alpha, float beta) {
  append_eltwise(ops_, kind, alpha, beta);
  return *this;
}

PostOps& PostOps::binary(algorithm kind, const memory& operand) {
  args_[DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops_.len()) | DNNL_ARG_SRC_1] = operand;
  ops_.append_binary(kind, operand.get_desc());
  return *this;
}

PostOps& PostOps::sum(float scale) {
  ops_.append_sum(scale);
  return *this;
}

dnnl::primitive_attr PostOps::attr() const {
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops_);
  return attr;
}

Args PostOps::with(Args args) const {
  args.insert(args_.begin(), args_.end());
  return args;
}

Execution eltwise(algorithm kind, const memory& src, const memory& dst, float alpha, float beta) {
  return {eltwise_pd(kind, src.get_desc(), alpha, beta), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}};
}

Execution binary(algorithm kind, const memory& src0, const memory& src1, const memory& dst,
                 const PostOps& post) {
  return {binary_pd(kind, src0.get_desc(), src1.get_desc(), dst.get_desc(), post.attr()),
          post.with({{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}})};
}

namespace {

// oneDNN refuses a reduction whose dst has src's dims (every reduced extent 1). Each value is then
// its own reduction: itself (sum, mean, max, min, product), or its square (the power-2 norm sum),
// computed as a binary primitive of src with itself, which takes the same post-ops.
Execution reduce_single_values(algorithm kind, const memory& src, const memory& dst, const PostOps& post, float p) {
  const bool is_identity = kind == algorithm::reduction_sum || kind == algorithm::reduction_mean ||
                           kind == algorithm::reduction_max || kind == algorithm::reduction_min ||
                           kind == algorithm::reduction_mul;
  const bool is_square = kind == algorithm::reduction_norm_lp_power_p_sum && p == 2.0f;
  if (!is_identity && !is_square)
    throw std::invalid_argument(
        "onednn reduce: a reduction over extents of 1 is written for sum, mean, max, min, "
        "mul and the power-2 norm sum only");
  return binary(is_square ? algorithm::binary_mul : algorithm::binary_max, src, src, dst, post);
}

}  // namespace

Execution reduce(algorithm kind, const memory& src, const memory& dst, const PostOps& post,
                 float p) {
  if (src.get_desc().dims() == dst.get_desc().dims()) return reduce_single_values(kind, src, dst, post, p);
  return {reduction_pd(kind, src.get_desc(), dst.get_desc(), post.attr(), p),
          post.with({{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}})};
}

Execution matmul(const memory& src, const memory& weights, const memory& dst,
                 const PostOps& post) {
  return {matmul_pd(src.get_desc(), weights.get_desc(), dst.get_desc(), post.attr()),
          post.with({{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}})};
}

Execution softmax(const memory& src, const memory& dst, int axis) {
  return {softmax_pd(src.get_desc(), axis), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}};
}

Execution copy(const memory& src, const memory& dst) {
  return {reorder_pd(src.get_desc(), dst.get_desc()), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}}};
}

}  // namespace pb::onednn_backend

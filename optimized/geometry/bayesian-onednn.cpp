// geometry/bayesian on oneDNN (CPU engine): primitives only. Math: reference/geometry/bayesian.hpp;
// catalog: suites/geometry/bayesian.cpp.
//
//   w = exp(-|F - E|^2 / tau);  Z = sum w |F|^2;  B = w F / (Z + eps) if Z > eps else F;
//   Lambda = lambda (B - F)
//
// Complex values are rows {M, 2} (re, im); per-value reals are {M, 1}; Z is {1, 1}. Without
// compiled, one primitive per ATen op of the original: binary sub, |.| as an L2-norm reduction
// over the row (as a square root of a row sum, add_row_square_sum), square, linear (-1/tau), exp,
// binary mul, the same |F|^2, mul, the sum reductions.
// Baseline, as the original before the seed (torch.where on the device), nothing is read: a
// binary_gt gives mask = [Z > eps] as 1 or 0, and B = mask (w F / (Z + eps)) + (1 - mask) F, which
// is exactly one of the two (a product with 1 or 0 and a sum with 0). With host_read_branch (an
// extra, not the original's code) the host reads Z (one host sync) and runs one of two prepared
// tails: Z + eps and a division, or a copy of F. With compiled (the seed), post-op
// chains: |F - E|^2 as a row sum of squares with linear and exp post-ops, w |F|^2 as a row sum
// of squares with a binary-mul post-op, and B = (F w) * scale + (1 - mask) F as one
// binary with two binary post-ops (scale = mask / (Z + eps)). Z is summed per site, then over the
// sites (add_z_sum says why). All memory and primitives are made
// in setup(); run() allocates nothing.

#include "reference/geometry/bayesian.hpp"

#include <limits>
#include <memory>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/primitives.hpp"
#include "backends/onednn/program.hpp"
#include "suites/geometry/field.hpp"

namespace pb::onednn_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
using dnnl::algorithm;
using dnnl::memory;

class BayesianOnednn final : public Variant {
 public:
  explicit BayesianOnednn(const VariantContext& context)
      : device_(context.device), host_read_branch_(context.has(geo::kHostReadBranch)), compiled_(context.has(geo::kCompiled)) {}

  std::optional<CannotRun> support() const override { return cannot_run_on(device_); }

  void setup(const ArrayMap& inputs) override {
    field_ = require(inputs, geo::kField);
    shape_ = geo::shape_of_complex(field_);
    m_ = shape_.complex_count();
    f_ = upload(field_, {m_, 2});
    e_ = upload(require(inputs, geo::kEvidence), {m_, 2});
    eps_ = filled({1, 1}, float(ref::kNormalizationEps));
    ones_ = filled({2, 1}, 1.f);
    z_ = scalar();
    w_ = column();
    posterior_ = pair();
    update_ = pair();
    if (compiled_) return setup_fused();
    setup_weights_and_z();
    if (host_read_branch_) {
      normalize_.add(binary(algorithm::binary_add, z_, eps_, zeps_ = scalar()));
      normalize_.add(binary(algorithm::binary_div, weighted_, zeps_, posterior_));
      keep_field_.add(copy(f_, posterior_));
    } else {
      setup_device_select();
    }
    const memory diff = pair();
    tail_.add(binary(algorithm::binary_sub, posterior_, f_, diff));
    tail_.add(eltwise(algorithm::eltwise_linear, diff, update_, float(ref::kLambda)));
  }

  void poison_outputs() override {
    fill_floats(posterior_, std::numeric_limits<float>::quiet_NaN());
    fill_floats(update_, std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    head_();
    if (host_read_branch_) {
      float z = 0;
      read_floats_to_host(z_, &z, 1);  // the host waits for Z: one host sync
      (ref::normalizable(z) ? normalize_ : keep_field_)();
    }
    tail_();
  }

  ArrayMap outputs() override {
    const std::vector<float> posterior = read_floats_to_host(posterior_), update = read_floats_to_host(update_);
    return geo::bayesian_outputs(field_, posterior.data(), update.data());
  }

 private:
  memory pair() const { return allocate(dense({m_, 2})); }
  memory column() const { return allocate(dense({m_, 1})); }
  static memory scalar() { return allocate(dense({1, 1})); }

  /// re^2 + im^2 of each row of `pair`: its square (binary mul) times ones [2,1] (matmul, with
  /// `post`). oneDNN's reduction over a row of two is its reference implementation here (64-80
  /// ms for 1M rows at the default size); the matmul is jit, and its sum of re^2 * 1 and im^2 * 1
  /// is the reference's re^2 + im^2 bit for bit.
  void add_row_square_sum(Program& program, const memory& pair_values, const memory& out, const PostOps& post = {}) {
    const memory squares = pair();
    program.add(binary(algorithm::binary_mul, pair_values, pair_values, squares));
    program.add(matmul(squares, ones_, out, post));
  }

  /// |x|^2 of each row of `pair` into `out`, as torch.abs(x) ** 2: the modulus (a square root
  /// post-op), then a square.
  void add_squared_modulus(const memory& pair_values, const memory& out) {
    const memory modulus = column();
    PostOps root;
    root.eltwise(algorithm::eltwise_sqrt);
    add_row_square_sum(head_, pair_values, modulus, root);
    head_.add(eltwise(algorithm::eltwise_square, modulus, out));
  }

  void setup_weights_and_z() {
    const memory diff = pair(), diff_sq = column(), exponent = column(), f_sq = column(), terms = column();
    weighted_ = pair();
    head_.add(binary(algorithm::binary_sub, f_, e_, diff));
    add_squared_modulus(diff, diff_sq);
    head_.add(eltwise(algorithm::eltwise_linear, diff_sq, exponent, float(-1 / ref::kTau)));
    head_.add(eltwise(algorithm::eltwise_exp, exponent, w_));
    head_.add(binary(algorithm::binary_mul, f_, w_, weighted_));
    add_squared_modulus(f_, f_sq);
    head_.add(binary(algorithm::binary_mul, w_, f_sq, terms));
    add_z_sum(terms);
  }

  /// Z = the sum of `terms`, per lattice site over its D^2 values, then over the sites: one
  /// reduction_sum over all M terms adds them one by one in fp32 here, and loses Z's accuracy
  /// (the more, the larger the size), where the per-site sums keep every partial sum
  /// well above the ulp of its terms.
  void add_z_sum(const memory& terms) {
    const memory::dim sites = shape_.sites();
    const memory site_sums = allocate(dense({sites, 1}));
    head_.add(reduce(algorithm::reduction_sum, view(terms, dense({sites, shape_.d * shape_.d})), site_sums));
    head_.add(reduce(algorithm::reduction_sum, site_sums, z_));
  }

  /// mask = [Z > eps], 1 - mask, and the select B = mask (w F / (Z + eps)) + (1 - mask) F.
  void add_mask() {
    mask_ = scalar();
    const memory keep = scalar();
    fm_ = pair();
    head_.add(binary(algorithm::binary_gt, z_, eps_, mask_));
    head_.add(eltwise(algorithm::eltwise_linear, mask_, keep, -1.f, 1.f));
    head_.add(binary(algorithm::binary_mul, f_, keep, fm_));
  }

  void setup_device_select() {
    const memory normalized = pair();
    zeps_ = scalar();
    add_mask();
    head_.add(binary(algorithm::binary_add, z_, eps_, zeps_));
    head_.add(binary(algorithm::binary_div, weighted_, zeps_, normalized));
    PostOps plus_kept;
    plus_kept.binary(algorithm::binary_add, fm_);
    head_.add(binary(algorithm::binary_mul, normalized, mask_, posterior_, plus_kept));
  }

  /// compiled: the post-op chains of the file comment.
  void setup_fused() {
    const memory diff = pair(), terms = column(), scale = scalar();
    zeps_ = scalar();
    head_.add(binary(algorithm::binary_sub, f_, e_, diff));
    PostOps weight;
    weight.eltwise(algorithm::eltwise_linear, float(-1 / ref::kTau)).eltwise(algorithm::eltwise_exp);
    add_row_square_sum(head_, diff, w_, weight);
    PostOps times_w;
    times_w.binary(algorithm::binary_mul, w_);
    add_row_square_sum(head_, f_, terms, times_w);
    add_z_sum(terms);
    add_mask();
    head_.add(binary(algorithm::binary_add, z_, eps_, zeps_));
    head_.add(binary(algorithm::binary_div, mask_, zeps_, scale));
    PostOps select;
    select.binary(algorithm::binary_mul, scale).binary(algorithm::binary_add, fm_);
    head_.add(binary(algorithm::binary_mul, f_, w_, posterior_, select));
    PostOps times_lambda;
    times_lambda.eltwise(algorithm::eltwise_linear, float(ref::kLambda));
    tail_.add(binary(algorithm::binary_sub, posterior_, f_, update_, times_lambda));
  }

  std::string device_;
  bool host_read_branch_, compiled_;
  HostArray field_;
  ref::FieldShape shape_;
  memory::dim m_ = 0;  // complex values
  memory ones_;  // [2, 1]: sums a row of two by matmul
  memory f_, e_, eps_, z_, zeps_, w_, weighted_, mask_, fm_, posterior_, update_;
  Program head_;                    // up to Z (and, unless host_read_branch, the posterior)
  Program normalize_, keep_field_;  // the two tails the host chooses between (baseline)
  Program tail_;                    // Lambda
};

const VariantRegistration registration{
    "geometry/bayesian", "onednn", {geo::kBaseline, geo::kCompiled, geo::kHostReadBranch},
    [](const VariantContext& context) { return std::make_unique<BayesianOnednn>(context); }};

}  // namespace
}  // namespace pb::onednn_backend

// geometry/mamba_conjugate on oneDNN (CPU engine). Math: reference/geometry/mamba_conjugate.hpp;
// catalog: suites/geometry/mamba_conjugate.cpp. Per state tensor x (r, then i), every run, with
// x viewed as [B L, 8] and its tail c[..., 1:] as a strided [B L, 7] view:
//
//   baseline:     c = new storage, reorder x -> c (clone); t = new [B L, 7], binary mul of the
//                 tail view by -1 into t (the temporary of `-c[..., 1:]`); reorder t -> the tail
//   inplace_neg:  c = new storage, reorder x -> c; eltwise linear (alpha -1) on the tail in place
//   single_pass:  c = new storage; binary mul x * [1, -1, ..., -1] (broadcast) into c
// Fresh storage per run is RenewableMemory's renew(): counted as bytes allocated, as the original
// allocates its clone and temporary. No host read in run().

#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/primitives.hpp"
#include "backends/onednn/program.hpp"
#include "suites/geometry/mamba_conjugate.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace geo = pb::suites::geometry::mamba_conjugate;
using dnnl::algorithm;
constexpr int64_t C = geo::ref::kStateComponents;

class MambaConjugateOnednn final : public pb::Variant {
 public:
  explicit MambaConjugateOnednn(const pb::VariantContext& context)
      : device_(context.device), in_place_(context.has(geo::kInPlaceNeg)), single_pass_(context.has(geo::kSinglePass)) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    shape_ = pb::require(in, geo::kStateReal).shape;
    rows_ = pb::require(in, geo::kStateReal).numel() / C;
    std::vector<float> sign(C, -1.0f);
    sign[0] = 1.0f;
    sign_ = ob::upload(ob::dense({1, C}), sign);
    minus_one_ = ob::filled({1, 1}, -1.0f);
    for (const std::string& name : {geo::kStateReal, geo::kStateImag}) {
      inputs_.push_back(ob::upload(pb::require(in, name), {rows_, C}));
      results_.push_back(&conjugate(inputs_.back()));
    }
  }

  void poison_outputs() override {
    for (ob::RenewableMemory* result : results_) ob::fill_floats(result->get(), std::numeric_limits<float>::quiet_NaN());
  }

  void run() override { program_(); }

  pb::ArrayMap outputs() override {
    return {{geo::kConjReal, ob::download(results_[0]->get(), shape_)}, {geo::kConjImag, ob::download(results_[1]->get(), shape_)}};
  }

 private:
  /// Binds the conjugate of x into the program; returns the array holding the result.
  ob::RenewableMemory& conjugate(const dnnl::memory& x) {
    ob::RenewableMemory& c = renewable(ob::dense({rows_, C}));
    program_.host_step([&c] { c.renew(); });
    if (single_pass_) {
      program_.add(ob::binary(algorithm::binary_mul, x, sign_, c.get()));
      return c;
    }
    program_.add(ob::copy(x, c.get()));
    const dnnl::memory tail = c.view(ob::strided({rows_, C - 1}, {C, 1}), 1);
    if (in_place_) {
      program_.add(ob::eltwise(algorithm::eltwise_linear, tail, tail, -1.0f, 0.0f));
      return c;
    }
    ob::RenewableMemory& t = renewable(ob::dense({rows_, C - 1}));
    program_.host_step([&t] { t.renew(); });
    program_.add(ob::binary(algorithm::binary_mul, tail, minus_one_, t.get()));
    program_.add(ob::copy(t.get(), tail));
    return c;
  }

  ob::RenewableMemory& renewable(const dnnl::memory::desc& desc) { return arrays_.emplace_back(desc); }

  std::string device_;
  bool in_place_, single_pass_;
  std::vector<int64_t> shape_;
  int64_t rows_ = 0;
  dnnl::memory sign_, minus_one_;
  std::vector<dnnl::memory> inputs_;
  std::deque<ob::RenewableMemory> arrays_;  // stable addresses: the program's steps hold them
  std::vector<ob::RenewableMemory*> results_;
  ob::Program program_;
};

const pb::VariantRegistration registration{
    geo::kMambaConjugate, "onednn", {geo::kCloneAssign, geo::kInPlaceNeg, geo::kSinglePass},
    [](const pb::VariantContext& context) { return std::make_unique<MambaConjugateOnednn>(context); }};

}  // namespace

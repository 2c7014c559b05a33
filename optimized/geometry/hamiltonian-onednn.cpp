// geometry/hamiltonian on oneDNN (CPU engine): primitives only. Math:
// reference/geometry/hamiltonian.hpp; catalog: suites/geometry/hamiltonian.cpp.
//
//   H = -c Lap(F) + V F,  Lap the periodic 5-point stencil of each of the C = 2 D^2 real channels
//
// The real view [Nx,Ny,C] is an nhwc image {1, C, Nx, Ny}; Lap is a grouped (depthwise) 3x3
// convolution with the kernel [[0,1,0],[1,-4,1],[0,1,0]] per channel. oneDNN pads with zeros only,
// so the periodic wrap is made exact by a halo: the field is copied into a padded image
// {1, C, Nx+2, Ny+2} by five reorders (the interior, the last row above the first, the first row
// below the last, the last column left of the first, the first column right of the last); the
// four corners stay 0 from setup() (the kernel's corner taps are 0, and 0 * 0 is exact). The
// convolution then runs with no padding.
//
// Without depthwise_stencil, as the original: per complex channel, the halo of its two real
// channels (5 reorders) and a convolution of those two channels (D*D times). With it, one halo and
// one convolution over every channel. Either way the kinetic term (eltwise linear), the potential
// term (binary mul, V broadcast over re/im) and their sum (binary add) are three more primitives.
// With compiled, V F is written into H first, the convolution applies -c as a post-op (eltwise
// linear) and the reorder of its result into H adds to it (a sum post-op): no lap, kinetic or
// potential arrays. All memory and primitives are made in setup().

#include "reference/geometry/hamiltonian.hpp"

#include <limits>
#include <memory>
#include <vector>

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

class HamiltonianOnednn final : public Variant {
 public:
  explicit HamiltonianOnednn(const VariantContext& context)
      : device_(context.device), depthwise_(context.has(geo::kDepthwiseStencil)), compiled_(context.has(geo::kCompiled)) {}

  std::optional<CannotRun> support() const override { return cannot_run_on(device_); }

  void setup(const ArrayMap& inputs) override {
    const HostArray& f = require(inputs, geo::kField);
    s_ = geo::shape_of_complex(f);
    dims_ = f.shape;
    const memory::dim m = s_.complex_count(), c = s_.channels();
    f_ = upload(f, {m, 2});
    v_ = upload(require(inputs, geo::kPotential), {m, 1});
    h_ = allocate(dense({m, 2}));
    padded_ = filled({(s_.nx + 2) * (s_.ny + 2) * c}, 0.f);
    std::vector<float> taps;
    for (memory::dim g = 0; g < c; ++g) taps.insert(taps.end(), {0, 1, 0, 1, -4, 1, 0, 1, 0});
    kernel_ = upload(dense({c, 1, 1, 3, 3}), taps);
    if (compiled_) return setup_fused();
    lap_ = allocate(dense({m, 2}));
    kinetic_ = allocate(dense({m, 2}));
    potential_ = allocate(dense({m, 2}));
    if (depthwise_) {
      add_stencil(0, c);
    } else {
      for (memory::dim first = 0; first < c; first += 2) add_stencil(first, 2);
    }
    program_.add(eltwise(algorithm::eltwise_linear, lap_, kinetic_, float(-ref::kKinetic)));
    program_.add(binary(algorithm::binary_mul, f_, v_, potential_));
    program_.add(binary(algorithm::binary_add, kinetic_, potential_, h_));
  }

  void poison_outputs() override { fill_floats(h_, std::numeric_limits<float>::quiet_NaN()); }
  void run() override { program_(); }
  ArrayMap outputs() override { return {{geo::kHamiltonian, download(h_, dims_)}}; }

 private:
  /// The nhwc image {1, channels, rows, cols} of `count` channels inside an array of C channels
  /// per site with `row_sites` sites per row, starting `offset` floats in.
  memory image(const memory& base, memory::dim channels, memory::dim rows, memory::dim cols, memory::dim row_sites,
               memory::dim offset) const {
    const memory::dim c = s_.channels();
    return view(base, strided({1, channels, rows, cols}, {rows * row_sites * c, 1, row_sites * c, c}), offset);
  }

  /// The halo of channels [first, first + count), their convolution (with `scale` as post-ops),
  /// and the result reordered into `out` (with `unload` as post-ops).
  void add_stencil(memory::dim first, memory::dim count, const memory& out, const PostOps& scale = {},
                   const PostOps& unload = {}) {
    const memory::dim nx = s_.nx, ny = s_.ny, c = s_.channels(), pw = ny + 2;
    const auto field = [&](memory::dim rows, memory::dim cols, memory::dim x, memory::dim y) {
      return image(f_, count, rows, cols, ny, (x * ny + y) * c + first);
    };
    const auto pad = [&](memory::dim rows, memory::dim cols, memory::dim x, memory::dim y) {
      return image(padded_, count, rows, cols, pw, (x * pw + y) * c + first);
    };
    program_.add(copy(field(nx, ny, 0, 0), pad(nx, ny, 1, 1)));             // interior
    program_.add(copy(field(1, ny, nx - 1, 0), pad(1, ny, 0, 1)));          // last row above
    program_.add(copy(field(1, ny, 0, 0), pad(1, ny, nx + 1, 1)));          // first row below
    program_.add(copy(field(nx, 1, 0, ny - 1), pad(nx, 1, 1, 0)));          // last column left
    program_.add(copy(field(nx, 1, 0, 0), pad(nx, 1, 1, ny + 1)));          // first column right
    // The convolution in the layouts it asks for (format_tag::any: blocked nChw16c here). With the
    // plain nhwc image itself oneDNN 2.6 has only its reference convolution (ref:any, two orders of
    // magnitude slower than the jit one), so the image is reordered in and the result out.
    const memory::desc any_image({1, count, nx + 2, ny + 2}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc any_out({1, count, nx, ny}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc any_weights({count, 1, 1, 3, 3}, memory::data_type::f32, memory::format_tag::any);
    const auto pd = convolution_pd(any_image, any_weights, any_out, 0, scale.attr());
    const memory src = allocate(pd.src_desc()), dst = allocate(pd.dst_desc());
    program_.add(copy(pad(nx + 2, ny + 2, 0, 0), src));
    const memory weights = converted(view(kernel_, dense({count, 1, 1, 3, 3}), first * 9), pd.weights_desc());
    program_.add(Execution(pd, scale.with({{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}})));
    const memory result = image(out, count, nx, ny, ny, first);
    program_.add(Execution(reorder_pd(dst.get_desc(), result.get_desc(), unload.attr()),
                           {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, result}}));
  }
  void add_stencil(memory::dim first, memory::dim count) { add_stencil(first, count, lap_); }

  /// compiled: V F first, into H; then halo + convolution with -c as a post-op, whose reorder
  /// back adds it to H (a sum post-op).
  void setup_fused() {
    program_.add(binary(algorithm::binary_mul, f_, v_, h_));
    PostOps scale, accumulate;
    scale.eltwise(algorithm::eltwise_linear, float(-ref::kKinetic));
    accumulate.sum();
    add_stencil(0, s_.channels(), h_, scale, accumulate);
  }

  std::string device_;
  bool depthwise_, compiled_;
  ref::FieldShape s_;
  std::vector<int64_t> dims_;
  memory f_, v_, h_, padded_, kernel_, lap_, kinetic_, potential_;
  Program program_;
};

const VariantRegistration registration{
    "geometry/hamiltonian", "onednn", {geo::kBaseline, geo::kDepthwiseStencil, geo::kCompiled},
    [](const VariantContext& context) { return std::make_unique<HamiltonianOnednn>(context); }};

}  // namespace
}  // namespace pb::onednn_backend

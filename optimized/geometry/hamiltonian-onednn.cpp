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
// With compiled, V F is computed first and the convolution applies -c and adds it as post-ops
// (eltwise linear, binary add): halo + 2 primitives. All memory and primitives are made in setup().

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

  /// The halo of channels [first, first + count) and their convolution into `out` (with `post`).
  void add_stencil(memory::dim first, memory::dim count, const memory& out, const PostOps& post = {}) {
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
    const memory src = pad(nx + 2, ny + 2, 0, 0);
    const memory weights = view(kernel_, dense({count, 1, 1, 3, 3}), first * 9);
    const memory dst = image(out, count, nx, ny, ny, first);
    program_.add(Execution(convolution_pd(src.get_desc(), weights.get_desc(), dst.get_desc(), 0, post.attr()),
                           post.with({{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}})));
  }
  void add_stencil(memory::dim first, memory::dim count) { add_stencil(first, count, lap_); }

  /// compiled: V F first, then halo + one convolution with -c and + V F as post-ops.
  void setup_fused() {
    const memory::dim c = s_.channels();
    potential_ = allocate(dense({s_.complex_count(), 2}));
    program_.add(binary(algorithm::binary_mul, f_, v_, potential_));
    const memory potential_image = image(potential_, c, s_.nx, s_.ny, s_.ny, 0);
    PostOps post;
    post.eltwise(algorithm::eltwise_linear, float(-ref::kKinetic)).binary(algorithm::binary_add, potential_image);
    add_stencil(0, c, h_, post);
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

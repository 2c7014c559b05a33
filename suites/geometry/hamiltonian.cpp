// geometry/hamiltonian: definition (sizes, inputs, outputs, tolerance, phases and seed 001's
// claim). Reference: reference/geometry/hamiltonian.hpp. Variants: optimized/geometry/hamiltonian-*.

#include "reference/geometry/hamiltonian.hpp"

#include "phasebench/rng.hpp"
#include "suites/geometry/field.hpp"

namespace pb::suites::geometry {
namespace {

class Hamiltonian final : public Workload {
 public:
  std::string suite() const override { return "geometry"; }
  std::string name() const override { return "hamiltonian"; }
  std::string description() const override {
    return "H = -(hbar^2/2m) Lap(F) + V F: a periodic 5-point stencil over (Nx, Ny) on each of the "
           "D*D channels of a complex field, plus a potential term";
  }
  std::string shape(SizeClass size) const override { return field_shape_text(size); }

  // F ~ N(0,1) in both parts; V ~ U(-1, 1) on every channel (the original's create_potential puts
  // V on the diagonal channels only, which would leave most of V*F exactly zero and hide a
  // variant that drops or misplaces the potential).
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const ref::FieldShape s = field_shape(size);
    return {{kField, normal_array(seed, "geometry/hamiltonian/F", complex_dims(s), 0, 1)},
            {kPotential, uniform_array(seed, "geometry/hamiltonian/V", real_dims(s), -1, 1)}};
  }

  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    const HostArray& f = require(inputs, kField);
    const ref::FieldShape s = shape_of_complex(f);
    HostArray h = HostArray::zeros(f.shape, ElementType::Float64);
    ref::hamiltonian<double>(f.values.data(), require(inputs, kPotential).values.data(), s, h.values.data());
    return {{kHamiltonian, std::move(h)}};
  }

  std::vector<OutputSpec> outputs() const override {
    return {{kHamiltonian, 1e-5,
             "each value is a fixed 7-operation expression of fp32 inputs (5-point sum, two products, "
             "one add) with no long accumulation: a few ulp, ~3e-7 relative; 1e-5 is the fp32 default"}};
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kBaseline,
         "as the original before the seed: a loop over the D*D channels, each a separate periodic "
         "2-D stencil of one channel, then the kinetic and potential terms as separate ops"},
        {1, kDepthwiseStencil,
         "one depthwise stencil over all channels at once (the original's grouped conv2d, with a "
         "periodic halo), kinetic and potential terms still separate ops"},
        PhaseInfo(2, kCompiled,
                  "the seed's torch.compile of hamiltonian_evolution: TorchScript in LibTorch, one fused "
                  "stencil + potential kernel (or one primitive with post-ops) elsewhere")
            .claims(1.5, 3.0),
        {3, kVectorizedStencil,
         "beyond the seed: one pass in which each site's D*D channels are one contiguous run, read "
         "beside the same runs of its four neighbours (found once per site, not per value) and "
         "vectorized; what the streaming bound of the stencil asks for (docs/geometry.md)"},
        {4, kStreamedStores,
         "beyond the seed: vectorized_stencil's values 16 floats at a time, H written by non-temporal "
         "stores (no read of each output line before it is written, and no H left in the caches "
         "to push out F and V), one contiguous range of sites per thread"},
    };
  }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"). A flop is one add, subtract or
  // multiply. Per real value (2 D^2 Nx Ny of them): the 5-point sum (3 adds, a multiply by 4, a
  // subtract: 5), times -c (1), V f (1), the sum (1): 8 flops. Bytes, fp32: read F [.,2] and V
  // once, write H [.,2] once: 4 (2 + 1 + 2) = 20 bytes per complex value.
  // Default (64 x 64 x 16 x 16 = 1,048,576 complex values): 16.8 MFLOP, 21.0 MB.
  WorkEstimate work(SizeClass size) const override {
    const double values = static_cast<double>(field_shape(size).complex_count());
    return {16.0 * values, 20.0 * values};
  }

  // fp64 check: F, V, the reference H, and the variant's H as doubles.
  double memory_bytes(SizeClass size) const override {
    return 8.0 * 7 * static_cast<double>(field_shape(size).complex_count());
  }
};

const WorkloadRegistration registration{std::make_shared<Hamiltonian>()};

}  // namespace
}  // namespace pb::suites::geometry

// geometry/hamiltonian on Kokkos (default execution space). Math:
// reference/geometry/hamiltonian.hpp (whose per-element functions the kernels call); catalog:
// suites/geometry/hamiltonian.cpp.
//
//   H = -c Lap(F) + V F on the real view [Nx,Ny,2 D^2]
//
// Without depthwise_stencil, as the original: one stencil kernel per complex channel (D*D
// launches, each over the Nx*Ny sites and both parts of that channel). With it, one stencil kernel
// over every site and all its channels. Either way the kinetic term, the potential term and their sum are three more
// kernels, as three ATen ops are. With compiled, one kernel computes H directly, one thread per
// site (the fused form torch.compile aims at). With vectorized_stencil (beyond the seed), the same
// one pass with each site's channels as one contiguous run beside its neighbours' runs, which the
// compiler vectorizes (hamiltonian_site below). Every View is allocated in setup(): run() allocates
// nothing.

#include "reference/geometry/hamiltonian.hpp"

#include <string>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "suites/geometry/field.hpp"

namespace pb::kokkos_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
using Vec = DeviceView<float*>;

const std::string kChannelLabel = "hamiltonian/channel_stencil";
const std::string kStencilLabel = "hamiltonian/stencil";
const std::string kKineticLabel = "hamiltonian/kinetic";
const std::string kPotentialLabel = "hamiltonian/potential";
const std::string kSumLabel = "hamiltonian/sum";
const std::string kFusedLabel = "hamiltonian/fused";
const std::string kVectorizedLabel = "hamiltonian/vectorized";

/// Where one site's channel run and its four neighbours' runs start in the real view.
struct SiteRuns {
  int64_t centre, x_next, x_prev, y_next, y_prev;
};

KOKKOS_INLINE_FUNCTION SiteRuns site_runs(int64_t site, int64_t nx, int64_t ny, int64_t channels) {
  const int64_t x = site / ny, y = site % ny;
  const auto at = [&](int64_t i, int64_t j) { return (i * ny + j) * channels; };
  return {at(x, y), at(ref::wrap(x, 1, nx), y), at(ref::wrap(x, -1, nx), y), at(x, ref::wrap(y, 1, ny)),
          at(x, ref::wrap(y, -1, ny))};
}

/// H over one site's run of complex values: the reference's expression (the same sums in the same
/// order as periodic_laplacian, then hamiltonian_value), with the potential read once per complex
/// value instead of divided out of every real index.
KOKKOS_INLINE_FUNCTION void hamiltonian_site(const float* f, const float* v, float* h, const SiteRuns& runs,
                                             int64_t complex_channels) {
  const float *centre = f + runs.centre, *x_next = f + runs.x_next, *x_prev = f + runs.x_prev;
  const float *y_next = f + runs.y_next, *y_prev = f + runs.y_prev, *potential = v + runs.centre / 2;
  float* out = h + runs.centre;
  const auto value = [&](int64_t k, float potential_k) {
    const float laplacian = ref::five_point_laplacian(x_next[k], x_prev[k], y_next[k], y_prev[k], centre[k]);
    return ref::hamiltonian_value(laplacian, potential_k, centre[k]);
  };
  PB_KOKKOS_IVDEP  // H is a View of its own: no output run overlaps an input run
  for (int64_t j = 0; j < complex_channels; ++j) {  // real part, then imaginary part
    out[2 * j] = value(2 * j, potential[j]);
    out[2 * j + 1] = value(2 * j + 1, potential[j]);
  }
}

// The site loop also compiled for AVX2 and AVX-512 where the host allows it (host_vectorization.hpp):
// 1.2-1.7x faster than the baseline SSE2 loop at the default size, in A/B runs on an AVX-512 guest.
#ifdef PB_KOKKOS_HOST_ISA_CLONES
__attribute__((target_clones(PB_KOKKOS_ISA_CLONE_TARGETS))) void hamiltonian_site_cloned(
    const float* f, const float* v, float* h, const SiteRuns& runs, int64_t complex_channels) {
  hamiltonian_site(f, v, h, runs, complex_channels);
}
#define PB_HAMILTONIAN_SITE hamiltonian_site_cloned
#else
#define PB_HAMILTONIAN_SITE hamiltonian_site
#endif

class HamiltonianKokkos final : public Variant {
 public:
  explicit HamiltonianKokkos(const VariantContext& context)
      : depthwise_(context.has(geo::kDepthwiseStencil)),
        compiled_(context.has(geo::kCompiled)),
        vectorized_(context.has(geo::kVectorizedStencil)) {}

  void setup(const ArrayMap& inputs) override {
    const HostArray& f = require(inputs, geo::kField);
    shape_ = geo::shape_of_complex(f);
    dims_ = f.shape;
    const int64_t n = shape_.real_count();
    f_ = to_device<Vec>("hamiltonian/F", f, n);
    v_ = to_device<Vec>("hamiltonian/V", require(inputs, geo::kPotential), n / 2);
    h_ = uninitialized<Vec>("hamiltonian/H", n);
    if (!compiled_) {
      lap_ = uninitialized<Vec>("hamiltonian/lap", n);
      kinetic_ = uninitialized<Vec>("hamiltonian/kinetic", n);
      potential_ = uninitialized<Vec>("hamiltonian/potential", n);
    }
  }

  // The intermediate views too: a value the stencil forgets to write would otherwise keep what the
  // allocator handed back, in verify often the previous phase's correct lap, and pass.
  void poison_outputs() override {
    fill_nan(h_);
    if (!compiled_) {
      fill_nan(lap_);
      fill_nan(kinetic_);
      fill_nan(potential_);
    }
  }

  void run() override {
    if (vectorized_) return vectorized();
    if (compiled_) return fused();
    if (depthwise_) {
      stencil_all();
    } else {
      for (int64_t complex_channel = 0; complex_channel < shape_.d * shape_.d; ++complex_channel)
        stencil_channel(complex_channel);
    }
    elementwise_tail();
  }

  ArrayMap outputs() override {
    const std::vector<float> h = to_host_vector(h_);
    return {{geo::kHamiltonian, HostArray::from_floats(dims_, h.data(), static_cast<int64_t>(h.size()))}};
  }

 private:
  /// The stencil of one complex channel's two parts at every site.
  void stencil_channel(int64_t complex_channel) {
    const Vec f = f_, lap = lap_;
    const int64_t nx = shape_.nx, ny = shape_.ny, channels = shape_.channels();
    Kokkos::parallel_for(kChannelLabel, RangePolicy(0, 2 * shape_.sites()), KOKKOS_LAMBDA(int64_t k) {
      const int64_t site = k / 2, c = 2 * complex_channel + k % 2;
      lap(site * channels + c) = ref::periodic_laplacian(f.data(), nx, ny, channels, site / ny, site % ny, c);
    });
  }

  /// One thread per site, looping over its channels: the site's neighbours are found once, and
  /// a value index costs no division (one thread per value divided by the channel count and by
  /// Ny for every value, and ran 4x slower than reference<float> on the Serial space).
  void stencil_all() {
    const Vec f = f_, lap = lap_;
    const int64_t nx = shape_.nx, ny = shape_.ny, channels = shape_.channels();
    Kokkos::parallel_for(kStencilLabel, RangePolicy(0, shape_.sites()), KOKKOS_LAMBDA(int64_t site) {
      for (int64_t c = 0; c < channels; ++c)
        lap(site * channels + c) = ref::periodic_laplacian(f.data(), nx, ny, channels, site / ny, site % ny, c);
    });
  }

  /// -c lap, V F and their sum, one kernel each (as three ATen ops).
  void elementwise_tail() {
    const Vec f = f_, v = v_, lap = lap_, kinetic = kinetic_, potential = potential_, h = h_;
    const RangePolicy all(0, shape_.real_count());
    Kokkos::parallel_for(kKineticLabel, all, KOKKOS_LAMBDA(int64_t i) { kinetic(i) = float(-ref::kKinetic) * lap(i); });
    Kokkos::parallel_for(kPotentialLabel, all, KOKKOS_LAMBDA(int64_t i) { potential(i) = v(i / 2) * f(i); });
    Kokkos::parallel_for(kSumLabel, all, KOKKOS_LAMBDA(int64_t i) { h(i) = kinetic(i) + potential(i); });
  }

  void fused() {
    const Vec f = f_, v = v_, h = h_;
    const int64_t nx = shape_.nx, ny = shape_.ny, channels = shape_.channels();
    Kokkos::parallel_for(kFusedLabel, RangePolicy(0, shape_.sites()), KOKKOS_LAMBDA(int64_t site) {
      for (int64_t i = site * channels; i < (site + 1) * channels; ++i) {
        const float lap = ref::periodic_laplacian(f.data(), nx, ny, channels, site / ny, site % ny, i - site * channels);
        h(i) = ref::hamiltonian_value(lap, v(i / 2), f(i));
      }
    });
  }

  void vectorized() {
    const Vec f = f_, v = v_, h = h_;
    const int64_t nx = shape_.nx, ny = shape_.ny, channels = shape_.channels();
    Kokkos::parallel_for(kVectorizedLabel, RangePolicy(0, shape_.sites()), KOKKOS_LAMBDA(int64_t site) {
      PB_HAMILTONIAN_SITE(f.data(), v.data(), h.data(), site_runs(site, nx, ny, channels), channels / 2);
    });
  }

  bool depthwise_, compiled_, vectorized_;
  ref::FieldShape shape_;
  std::vector<int64_t> dims_;
  Vec f_, v_, h_, lap_, kinetic_, potential_;
};

const VariantRegistration registration{
    "geometry/hamiltonian", "kokkos", {geo::kBaseline, geo::kDepthwiseStencil, geo::kCompiled, geo::kVectorizedStencil},
    [](const VariantContext& context) { return std::make_unique<HamiltonianKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend

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
// compiler vectorizes. With streamed_stores (beyond the seed), the same values 16 floats at a time
// and H written by non-temporal stores, one work item per thread. The two single-pass bodies are in
// hamiltonian_bodies.hpp. Every View is allocated in setup(): run() allocates nothing.

#include "reference/geometry/hamiltonian.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/geometry/hamiltonian_bodies.hpp"
#include "suites/geometry/field.hpp"

namespace pb::kokkos_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
namespace stencil = pb::optimized::geometry::hamiltonian_stencil;
using Vec = DeviceView<float*>;

const std::string kChannelLabel = "hamiltonian/channel_stencil";
const std::string kStencilLabel = "hamiltonian/stencil";
const std::string kKineticLabel = "hamiltonian/kinetic";
const std::string kPotentialLabel = "hamiltonian/potential";
const std::string kSumLabel = "hamiltonian/sum";
const std::string kFusedLabel = "hamiltonian/fused";
const std::string kVectorizedLabel = "hamiltonian/vectorized";
const std::string kStreamedLabel = "hamiltonian/streamed";

// The site loops also compiled for AVX2 and AVX-512 where the host allows it (host_vectorization.hpp):
// vectorized_stencil's wider loop is faster than the baseline SSE2 one. streamed_stores' clones take a work item's whole range of sites, so that
// the fence after its last streamed store is in the clone too.
#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void hamiltonian_site_cloned(
    const float* f, const float* v, float* h, const stencil::SiteRuns& runs, int64_t channels) {
  stencil::hamiltonian_site(f, v, h, runs, channels);
}
#define PB_HAMILTONIAN_SITE hamiltonian_site_cloned
#else
#define PB_HAMILTONIAN_SITE stencil::hamiltonian_site
#endif

#if defined(PB_KOKKOS_KERNELS_ON_HOST) && defined(PB_GEOMETRY_STREAMING_STORES)
#define PB_HAMILTONIAN_STREAMED 1
#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void streamed_sites_cloned(
    const float* f, const float* v, float* h, int64_t first, int64_t last, int64_t nx, int64_t ny,
    int64_t channels) {
  stencil::streamed_sites(f, v, h, first, last, nx, ny, channels);
}
#define PB_HAMILTONIAN_STREAMED_SITES streamed_sites_cloned
#else
#define PB_HAMILTONIAN_STREAMED_SITES stencil::streamed_sites
#endif
#endif

class HamiltonianKokkos final : public Variant {
 public:
  explicit HamiltonianKokkos(const VariantContext& context)
      : depthwise_(context.has(geo::kDepthwiseStencil)),
        compiled_(context.has(geo::kCompiled)),
        vectorized_(context.has(geo::kVectorizedStencil)),
        streamed_(context.has(geo::kStreamedStores)) {}

  std::optional<CannotRun> support() const override {
    if (!streamed_) return std::nullopt;
    return host_streaming_stores_only(geo::kStreamedStores);
  }

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
    if (streamed_) return streamed();
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
  /// a value index costs no division (one thread per value divides by the channel count and by
  /// Ny for every value, slower than reference<float> on the Serial space).
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
      PB_HAMILTONIAN_SITE(f.data(), v.data(), h.data(), stencil::site_runs(site, nx, ny, channels), channels);
    });
  }

  /// One work item per thread, each a contiguous range of sites in site order (as the static
  /// schedule of vectorized() gives them), its H by non-temporal stores and one fence at its end.
  void streamed() {
#ifdef PB_HAMILTONIAN_STREAMED
    const Vec f = f_, v = v_, h = h_;
    const int64_t nx = shape_.nx, ny = shape_.ny, channels = shape_.channels(), sites = shape_.sites();
    const int64_t items = std::min<int64_t>(sites, ExecSpace::concurrency());
    Kokkos::parallel_for(kStreamedLabel, RangePolicy(0, items), KOKKOS_LAMBDA(int64_t item) {
      const stencil::SiteRange range = stencil::sites_of_item(item, items, sites);
      PB_HAMILTONIAN_STREAMED_SITES(f.data(), v.data(), h.data(), range.first, range.last, nx, ny, channels);
    });
#endif
  }

  bool depthwise_, compiled_, vectorized_, streamed_;
  ref::FieldShape shape_;
  std::vector<int64_t> dims_;
  Vec f_, v_, h_, lap_, kinetic_, potential_;
};

const VariantRegistration registration{
    "geometry/hamiltonian", "kokkos", {geo::kBaseline, geo::kDepthwiseStencil, geo::kCompiled, geo::kVectorizedStencil,
                                      geo::kStreamedStores},
    [](const VariantContext& context) { return std::make_unique<HamiltonianKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend

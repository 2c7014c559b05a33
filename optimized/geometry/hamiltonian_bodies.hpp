#pragma once
// geometry/hamiltonian's single-pass stencils on raw pointers, one site at a time: the
// vectorized_stencil body (each site's channels one contiguous run beside its four neighbours'
// runs, a loop GCC vectorizes) and the streamed_stores body (the same values, 16 floats at a time,
// H written by non-temporal stores). The Kokkos variant inlines them into its ISA clones
// (hamiltonian-kokkos.cpp); tests/geometry_hamiltonian_stencil_test.cpp runs them on the host.
// Math: reference/geometry/hamiltonian.hpp, whose expression both use in its order, so that every
// float they write is the reference<float>'s.
//
// Why non-temporal stores (docs/geometry.md, "The limit of hamiltonian"): an ordinary store first
// reads its line (write-allocate), 28 bytes moved per complex value where 20 are compulsory, and
// the H lines it leaves in the caches push out F and V, which the next iteration reads again. The
// stores themselves, and which floats of a run they may write: streamed_stores.hpp.

#include <cstdint>

#include "optimized/common/streamed_stores.hpp"
#include "phasebench/host_device.hpp"
#include "reference/geometry/hamiltonian.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // vectors by value, always inlined into one ISA clone
#endif

namespace pb::optimized::geometry::hamiltonian_stencil {

namespace ref = pb::reference::geometry;

/// Where one site's channel run and its four neighbours' runs start in the real view.
struct SiteRuns {
  int64_t centre, x_next, x_prev, y_next, y_prev;
};

PB_HOST_DEVICE inline SiteRuns site_runs(int64_t site, int64_t nx, int64_t ny, int64_t channels) {
  const int64_t x = site / ny, y = site % ny;
  const auto at = [&](int64_t i, int64_t j) { return (i * ny + j) * channels; };
  return {at(x, y), at(ref::wrap(x, 1, nx), y), at(ref::wrap(x, -1, nx), y), at(x, ref::wrap(y, 1, ny)),
          at(x, ref::wrap(y, -1, ny))};
}

/// One site's inputs and output, its runs resolved to pointers.
struct SiteView {
  const float *centre, *x_next, *x_prev, *y_next, *y_prev;
  const float* potential;  // one per complex value of the run
  float* out;

  PB_HOST_DEVICE SiteView(const float* f, const float* v, float* h, const SiteRuns& runs)
      : centre(f + runs.centre),
        x_next(f + runs.x_next),
        x_prev(f + runs.x_prev),
        y_next(f + runs.y_next),
        y_prev(f + runs.y_prev),
        potential(v + runs.centre / 2),
        out(h + runs.centre) {}

  /// H at real index k of the run, whose complex value's potential is potential_k:
  /// periodic_laplacian's sum in its order, then hamiltonian_value.
  PB_HOST_DEVICE float value(int64_t k, float potential_k) const {
    const float laplacian = ref::five_point_laplacian(x_next[k], x_prev[k], y_next[k], y_prev[k], centre[k]);
    return ref::hamiltonian_value(laplacian, potential_k, centre[k]);
  }
};

/// vectorized_stencil: H over one site's run of `channels` floats, the potential read once per
/// complex value instead of divided out of every real index.
PB_HOST_DEVICE inline void hamiltonian_site(const float* f, const float* v, float* h, const SiteRuns& runs,
                                            int64_t channels) {
  const SiteView site(f, v, h, runs);
  const int64_t complex_channels = channels / 2;
#if defined(__GNUC__) && !defined(__CUDA_ARCH__)
#pragma GCC ivdep  // H is an array of its own: no output run overlaps an input run
#endif
  for (int64_t j = 0; j < complex_channels; ++j) {  // real part, then imaginary part
    site.out[2 * j] = site.value(2 * j, site.potential[j]);
    site.out[2 * j + 1] = site.value(2 * j + 1, site.potential[j]);
  }
}

// ---- streamed_stores ----------------------------------------------------------------------------

using streaming::Block;
using streaming::kBlockFloats;
using streaming::load_block;
using streaming::StreamedPart;
using streaming::streamed_part;

/// H of the 16 floats at k, k even: the reference's operations in its order, lane by lane. Each
/// complex value's potential goes to its real and imaginary lane (one permute).
__attribute__((always_inline)) inline Block value_block(const SiteView& site, int64_t k) {
  const Block centre = load_block(site.centre + k);
  const Block laplacian = ((load_block(site.x_next + k) + load_block(site.x_prev + k)) + load_block(site.y_next + k)) +
                          load_block(site.y_prev + k) - 4.0f * centre;
  return float(-ref::kKinetic) * laplacian + streaming::spread_to_complex_lanes(site.potential + k / 2) * centre;
}

#ifdef PB_GEOMETRY_STREAMING_STORES
/// streamed_stores: H over one site's run, its streamed part by non-temporal stores. The caller
/// fences (_mm_sfence) once after its last site, before anyone reads H.
__attribute__((always_inline)) inline void streamed_site(const float* f, const float* v, float* h,
                                                         const SiteRuns& runs, int64_t channels) {
  const SiteView site(f, v, h, runs);
  const StreamedPart part = streamed_part(site.out, channels);
  for (int64_t k = 0; k < part.begin; ++k) site.out[k] = site.value(k, site.potential[k / 2]);
  for (int64_t k = part.begin; k < part.end; k += kBlockFloats) streaming::stream_block(site.out + k, value_block(site, k));
  for (int64_t k = part.end; k < channels; ++k) site.out[k] = site.value(k, site.potential[k / 2]);
}

/// The sites [first, last) of one work item, then the fence that makes its streamed H visible.
__attribute__((always_inline)) inline void streamed_sites(const float* f, const float* v, float* h, int64_t first,
                                                          int64_t last, int64_t nx, int64_t ny, int64_t channels) {
  for (int64_t site = first; site < last; ++site) streamed_site(f, v, h, site_runs(site, nx, ny, channels), channels);
  _mm_sfence();
}
#endif

/// The sites of work item `item` of `items`: contiguous, in site order, sizes within one.
using SiteRange = streaming::ItemRange;

inline SiteRange sites_of_item(int64_t item, int64_t items, int64_t sites) {
  return streaming::range_of_item(item, items, sites);
}

}  // namespace pb::optimized::geometry::hamiltonian_stencil

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

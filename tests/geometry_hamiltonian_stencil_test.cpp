// geometry/hamiltonian's single-pass bodies (optimized/geometry/hamiltonian_bodies.hpp) on
// the host: which floats of a run go out by non-temporal stores at every alignment of the output;
// vectorized_stencil's and streamed_stores' site bodies against reference<float>, bit for bit, at
// run lengths with and without whole blocks, at every output alignment, the periodic wrap at both
// edges included, with guards around H; the work items' ranges; and streamed_stores through verify
// (the small size's runs of 8 floats hold no block: the blocks are checked here, and by
// `verify --size default`).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "guarded_floats.hpp"
#include "optimized/common/streamed_stores.hpp"
#include "optimized/geometry/hamiltonian_bodies.hpp"
#include "process.hpp"
#include "reference/geometry/hamiltonian.hpp"

// The header's block functions take and return 64-byte vectors; they are always inlined, so the
// ABI GCC warns about at their call sites (such a vector passed without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb {
namespace {

namespace body = pb::optimized::geometry::hamiltonian_stencil;
namespace ref = pb::reference::geometry;

/// streamed_part against its definition, found float by float: the first 16-byte boundary of the
/// run, if it lies at an even float, and from there every whole block of 16 that fits; else none.
void expect_streamed_part(const float* out, int64_t channels) {
  int64_t head = 0;
  while (reinterpret_cast<uintptr_t>(out + head) % 16 != 0) ++head;
  body::StreamedPart expected;
  if (head % 2 == 0 && channels - head >= body::kBlockFloats)
    expected = {head, head + (channels - head) / body::kBlockFloats * body::kBlockFloats};
  const body::StreamedPart part = body::streamed_part(out, channels);
  ASSERT_EQ(part.begin, expected.begin) << channels << " channels, " << head << " floats to the boundary";
  ASSERT_EQ(part.end, expected.end) << channels << " channels, " << head << " floats to the boundary";
}

TEST(HamiltonianStreamed, TheStreamedPartIsWholeAlignedBlocksFromAComplexBoundary) {
  GuardedFloats buffer(1024);
  float* aligned = buffer.data();
  EXPECT_EQ(body::streamed_part(aligned, 512).begin, 0);
  EXPECT_EQ(body::streamed_part(aligned, 512).end, 512);
  EXPECT_EQ(body::streamed_part(aligned + 2, 512).begin, 2);  // 8 bytes to the next boundary
  EXPECT_EQ(body::streamed_part(aligned + 2, 512).end, 2 + 31 * 16);
  EXPECT_EQ(body::streamed_part(aligned + 1, 512).end, 0);  // the boundary at an odd float
  EXPECT_EQ(body::streamed_part(aligned + 3, 512).end, 0);
  EXPECT_EQ(body::streamed_part(aligned, 8).end, 0);  // the small size: no whole block
  EXPECT_EQ(body::streamed_part(aligned + 2, 18).begin, 2);
  EXPECT_EQ(body::streamed_part(aligned + 2, 18).end, 18);
  EXPECT_EQ(body::streamed_part(aligned + 2, 2).end, 0);  // the head is the whole run
  for (int64_t offset = 0; offset < 16; ++offset)
    for (int64_t channels : {2, 8, 16, 18, 32, 34, 50, 512}) {
      SCOPED_TRACE("offset " + std::to_string(offset) + " floats, " + std::to_string(channels) + " channels");
      ASSERT_NO_FATAL_FAILURE(expect_streamed_part(aligned + offset, channels));
    }
}

/// One lattice's F, V and reference<float> H, the real view [nx, ny, channels].
struct Lattice {
  int64_t nx, ny, channels, n;
  GuardedFloats f, v;
  std::vector<float> expected;

  Lattice(int64_t nx_, int64_t ny_, int64_t channels_, uint32_t seed)
      : nx(nx_), ny(ny_), channels(channels_), n(nx * ny * channels), f(n), v(n / 2), expected(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i) f.data()[i] = normal(rng);
    for (int64_t i = 0; i < n / 2; ++i) v.data()[i] = uniform(rng);
    const int64_t d = static_cast<int64_t>(std::lround(std::sqrt(channels / 2.0)));
    if (2 * d * d == channels) {
      ref::hamiltonian<float>(f.data(), v.data(), ref::FieldShape{nx, ny, d}, expected.data());
    } else {  // a run length no D gives: the reference's per-value functions, value by value
      for (int64_t site = 0; site < nx * ny; ++site)
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t i = site * channels + c;
          expected[i] = ref::hamiltonian_value(
              ref::periodic_laplacian(f.data(), nx, ny, channels, site / ny, site % ny, c), v.data()[i / 2],
              f.data()[i]);
        }
    }
  }
};

enum class Body { Vectorized, Streamed };

/// H from `which` body over every site into an output starting `offset` floats past a 64-byte
/// boundary, guarded on both sides; expects reference<float>'s bits and untouched guards. Each
/// site's streamed part is checked before anything is streamed (a misaligned non-temporal store
/// faults).
void expect_reference_bits(const Lattice& lattice, Body which, int64_t offset, int64_t items = 1) {
  const int64_t n = lattice.n, sites = lattice.nx * lattice.ny;
  GuardedFloats output(n, offset);
  float* h = output.data();
  std::fill(h, h + n, std::numeric_limits<float>::quiet_NaN());
  for (int64_t item = 0; item < items; ++item) {
    const body::SiteRange range = body::sites_of_item(item, items, sites);
    if (which == Body::Streamed) {
      for (int64_t site = range.first; site < range.last; ++site)
        ASSERT_NO_FATAL_FAILURE(expect_streamed_part(h + site * lattice.channels, lattice.channels)) << "site " << site;
#ifdef PB_GEOMETRY_STREAMING_STORES
      body::streamed_sites(lattice.f.data(), lattice.v.data(), h, range.first, range.last, lattice.nx, lattice.ny,
                           lattice.channels);
#else
      GTEST_SKIP() << "no non-temporal stores on this architecture";
#endif
    } else {
      for (int64_t site = range.first; site < range.last; ++site)
        body::hamiltonian_site(lattice.f.data(), lattice.v.data(), h,
                               body::site_runs(site, lattice.nx, lattice.ny, lattice.channels), lattice.channels);
    }
  }
  ASSERT_TRUE(output.guards_intact()) << "a guard of H changed";
  ASSERT_TRUE(lattice.f.guards_intact() && lattice.v.guards_intact()) << "a guard of F or V changed";
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&h[i], &lattice.expected[i], sizeof(float)), 0)
        << "H[" << i << "] = " << h[i] << ", reference " << lattice.expected[i] << " (site " << i / lattice.channels
        << ", channel " << i % lattice.channels << ")";
}

// Run lengths: the small size's 8 (no block), 18 (one block after a head), 34, 50 (blocks and a
// tail), 512 (the default size's, all blocks when aligned); outputs at every float offset from a
// 64-byte boundary, so that heads of 0 and 2 floats and runs with no streamed part (odd offsets)
// all occur; lattices of 3 x 4 and 2 x 5 sites (the wrap on both edges, and nx = 2 where x + 1 and
// x - 1 are the same row).
// The default size's 512 first, at offset 0, where every site's run is aligned (no head): a body
// that streams to the wrong place fails its comparison there, before an unaligned case could fault.
TEST(HamiltonianStreamed, BothBodiesWriteTheReferencesBitsAtEveryAlignment) {
  uint32_t seed = 1;
  for (int64_t channels : {512, 8, 18, 34, 50})
    for (const auto& [nx, ny] : {std::pair<int64_t, int64_t>{3, 4}, {2, 5}}) {
      const Lattice lattice(nx, ny, channels, seed++);
      for (int64_t offset = 0; offset < 4; ++offset) {
        SCOPED_TRACE(std::to_string(nx) + " x " + std::to_string(ny) + " sites, " + std::to_string(channels) +
                     " channels, H at " + std::to_string(offset) + " floats past a 64-byte boundary");
        ASSERT_NO_FATAL_FAILURE(expect_reference_bits(lattice, Body::Vectorized, offset));
        ASSERT_NO_FATAL_FAILURE(expect_reference_bits(lattice, Body::Streamed, offset));
      }
    }
}

// The work items' ranges as the Kokkos kernel splits the sites: each item its own, together every
// site once, at more items than sites too.
TEST(HamiltonianStreamed, WorkItemsCoverEverySiteOnceInOrder) {
  for (int64_t sites : {1, 7, 12, 4096})
    for (int64_t items : {1, 2, 3, 5, 16}) {
      int64_t next = 0;
      for (int64_t item = 0; item < items; ++item) {
        const body::SiteRange range = body::sites_of_item(item, items, sites);
        EXPECT_EQ(range.first, next) << sites << " sites, item " << item << " of " << items;
        EXPECT_LE(range.last - range.first, (sites + items - 1) / items);
        next = range.last;
      }
      EXPECT_EQ(next, sites) << items << " items";
    }
  const Lattice lattice(3, 4, 34, 99);
  for (int64_t items : {2, 5, 16}) {
    SCOPED_TRACE(std::to_string(items) + " work items");
    ASSERT_NO_FATAL_FAILURE(expect_reference_bits(lattice, Body::Streamed, 2, items));
  }
}

TEST(HamiltonianStreamed, VerifyPassesOnTheSmallSizesSeeds) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  const testing::ProcessResult verified =
      testing::run_phasebench("verify --size small --seeds 3 --filter 'geometry/hamiltonian/kokkos/streamed_stores'");
  if (verified.output.find("UNSUPPORTED") != std::string::npos) GTEST_SKIP() << verified.output;
  EXPECT_NE(verified.output.find("verify: 3 passed, 0 failed"), std::string::npos) << verified.output;
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
}

}  // namespace
}  // namespace pb

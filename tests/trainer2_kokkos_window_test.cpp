// A host helper of the Kokkos trainer2 window (optimized/trainer2/trainer2_engine_window-kokkos.hpp)
// where the sizes verify runs do not reach: modulus_sum's tail loop. It runs only when a range's
// value count is not a multiple of the 8 lanes, which on a host space happens only when a channel
// block splits unevenly over a team's threads; at the suite's sizes on one or two threads it does
// not, so verify cannot see a wrong tail (a mutation run found one surviving).

#include <gtest/gtest.h>

#ifdef PHASEBENCH_HAS_kokkos

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "optimized/trainer2/trainer2_engine_window-kokkos.hpp"

namespace {

namespace kt2 = pb::kokkos_backend::trainer2;

// Every range [begin, end) of 0 to 40 values from three starts (a lane boundary and not): the
// lanes alone, the tail alone, both, and the empty range.
TEST(Trainer2KokkosWindow, ModulusSumAddsEveryValueOfAnyRange) {
  constexpr int64_t kValues = 40;
  std::mt19937 engine(17);
  std::uniform_real_distribution<float> uniform(-2.f, 2.f);
  std::vector<float> pairs(2 * kValues);
  for (float& v : pairs) v = uniform(engine);
  for (const int64_t begin : {0, 3, 8})
    for (int64_t end = begin; end <= kValues; ++end) {
      double expected = 0;
      for (int64_t m = begin; m < end; ++m) expected += std::hypot(double{pairs[2 * m]}, double{pairs[2 * m + 1]});
      EXPECT_NEAR(kt2::modulus_sum(begin, end, pairs.data()), expected, 1e-5 * (1 + expected))
          << "values [" << begin << ", " << end << ")";
    }
}

}  // namespace

#endif  // PHASEBENCH_HAS_kokkos

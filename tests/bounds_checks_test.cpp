// The bounds checks of the sanitizer build (PHASEBENCH_BOUNDS_CHECKS, on in preset "asan", which
// CI's sanitizer stage runs: ci/sanitize.sh). AddressSanitizer sees an access past a heap block,
// not one into memory that is allocated but not the object's: a std::vector's spare capacity, the
// alignment slack after a Kokkos View's data. Mutation runs found both (a LibTorch variant reading
// one std::vector<Tensor> element past its size, Kokkos variants writing one float past a View):
// crashes or silent writes that no check attributed. With the bounds checks each fails where it
// is made. These tests check that the switch does what it says; elsewhere they skip.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#ifdef PHASEBENCH_HAS_kokkos
#include <Kokkos_Core.hpp>
#endif

namespace {

#ifdef PHASEBENCH_BOUNDS_CHECKS_ON
constexpr bool kBoundsChecks = true;
#else
constexpr bool kBoundsChecks = false;
#endif

// Both are compile-time switches: the option must reach every file it compiles.
TEST(BoundsChecks, TheOptionTurnsOnBothChecks) {
  if (!kBoundsChecks) GTEST_SKIP() << "built without PHASEBENCH_BOUNDS_CHECKS";
#ifndef _GLIBCXX_ASSERTIONS
  ADD_FAILURE() << "PHASEBENCH_BOUNDS_CHECKS is on but _GLIBCXX_ASSERTIONS is not defined";
#endif
#ifndef KOKKOS_ENABLE_DEBUG_BOUNDS_CHECK
  ADD_FAILURE() << "PHASEBENCH_BOUNDS_CHECKS is on but KOKKOS_ENABLE_DEBUG_BOUNDS_CHECK is not defined";
#endif
}

// Index 4 of a vector of 4 that has room for 8: inside the allocation, so no redzone is hit.
void write_into_spare_capacity() {
  std::vector<float> values;
  values.reserve(8);
  values.resize(4);
  volatile size_t index = values.size();
  values[index] = 1.f;
}

TEST(BoundsChecks, AVectorIndexPastItsSizeAbortsEvenInsideItsCapacity) {
  if (!kBoundsChecks) GTEST_SKIP() << "built without PHASEBENCH_BOUNDS_CHECKS";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the process has OpenMP threads
  EXPECT_DEATH(write_into_spare_capacity(), "Assertion '__n < this->size\\(\\)' failed");
}

#ifdef PHASEBENCH_HAS_kokkos
// Index 3 of a View of 3 floats: inside the allocation's alignment slack. On the host the check
// throws (std::runtime_error); inside an OpenMP parallel region that ends the process. Run in a
// death test's child, so that this process's Kokkos is left as it is.
void write_past_a_view() {
  try {
    if (!Kokkos::is_initialized()) Kokkos::initialize();
    Kokkos::View<float*, Kokkos::HostSpace> view("bounds.test", 3);
    volatile int index = 3;
    view(index) = 1.f;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
  }
  std::abort();
}
#endif

TEST(BoundsChecks, AKokkosViewIndexPastItsExtentFailsNamingTheView) {
  if (!kBoundsChecks) GTEST_SKIP() << "built without PHASEBENCH_BOUNDS_CHECKS";
#ifdef PHASEBENCH_HAS_kokkos
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(write_past_a_view(), "View bounds error of view bounds.test \\( 3 < 3 \\)");
#else
  GTEST_SKIP() << "the kokkos backend is not built";
#endif
}

}  // namespace

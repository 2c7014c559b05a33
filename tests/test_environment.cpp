// Backends initialize once per process (Kokkos cannot initialize twice): finalize them after the
// last test, as the command line does at exit.

#include <gtest/gtest.h>

#include "phasebench/runner.hpp"

namespace {

class BackendLifetime : public ::testing::Environment {
 public:
  void TearDown() override { pb::finalize_backends(); }
};

[[maybe_unused]] ::testing::Environment* const backend_lifetime =
    ::testing::AddGlobalTestEnvironment(new BackendLifetime);

}  // namespace

// trainer2/window: one run_window of W steps (steps 1-9 in reference/trainer2/trainer2.hpp).
// Reference: reference/trainer2/trainer2.hpp (run_window). Inputs and outputs:
// suites/trainer2/window_io.hpp. Variants: optimized/trainer2/window-<backend>.*
// Every run() is one window from the same initial state (field F0, momentum 0).

#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/sizes.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::suites::trainer2 {
namespace {

class Window final : public Workload {
 public:
  std::string suite() const override { return "trainer2"; }
  std::string name() const override { return "window"; }
  std::string description() const override {
    return "one run_window: per step curvature, retrieval, LIoR step, accumulators, path buffer, "
           "progress metrics read by the host, Stormer-Verlet field step";
  }
  std::string shape(SizeClass size) const override { return window_shape(size); }
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    return make_window_inputs(size, seed);
  }
  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    return reference_window<double>(inputs, ElementType::Float64);
  }
  std::vector<OutputSpec> outputs() const override { return window_output_specs(""); }
  std::vector<PhaseInfo> phases() const override {
    return trainer2_phases({0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13});
  }
  PhaseInfo cumulative_claim() const override { return trainer2_cumulative_claim(); }
  // The count, term by term, is in window_io.cpp (window_work).
  WorkEstimate work(SizeClass size) const override { return window_work(size); }
  double memory_bytes(SizeClass size) const override { return window_memory(size); }
};

const WorkloadRegistration registration{std::make_shared<Window>()};

}  // namespace
}  // namespace pb::suites::trainer2

// trainer2/train_step: the two-phase contrastive step ("training step" in
// reference/trainer2/trainer2.hpp): free window, nudge, restore, nudged window, manual metric and
// rotor update, memory update.
// Reference: reference/trainer2/trainer2.hpp (train_step). Inputs and outputs:
// suites/trainer2/window_io.hpp. Variants: optimized/trainer2/train_step-<backend>.*

#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/sizes.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::suites::trainer2 {
namespace {

class TrainStep final : public Workload {
 public:
  std::string suite() const override { return "trainer2"; }
  std::string name() const override { return "train_step"; }
  std::string description() const override {
    return "two-phase step: free window, nudged window from the same snapshot, manual metric and "
           "rotor update, memory ring update";
  }
  std::string shape(SizeClass size) const override { return window_shape(size); }
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    return make_train_step_inputs(size, seed);
  }
  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    return reference_train_step<double>(inputs, ElementType::Float64);
  }
  std::vector<OutputSpec> outputs() const override {
    std::vector<OutputSpec> specs = window_output_specs("free_");
    for (OutputSpec& spec : window_output_specs("nudged_")) specs.push_back(spec);
    // Δ = lior_nudged - lior_free is exactly 0 in exact arithmetic: the nudge moves only the
    // retrieval query, and lior depends on v and R, neither of which it touches (as in the
    // original). g and θ therefore change only by the wrap; a variant whose two windows sum in a
    // different order may see |Δ| ~ 1e-9, scaled by η = 10: far below these tolerances.
    const std::string update = "fp32 rotor/cos/sin of 8 values; Δ = 0";
    specs.push_back({"g", 1e-5, update});
    specs.push_back({"theta", 1e-5, update});
    specs.push_back({"bank_coord", 1e-5, "copies of fp32 means over T tokens"});
    specs.push_back({"bank_state", 1e-5, "copies of fp32 means over T tokens"});
    specs.push_back({"bank_pointer", 0, "an integer: exact"});
    return specs;
  }
  std::vector<PhaseInfo> phases() const override {
    return trainer2_phases({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13});
  }
  PhaseInfo cumulative_claim() const override { return trainer2_cumulative_claim(); }
  // The count, term by term, is in window_io.cpp (train_step_work).
  WorkEstimate work(SizeClass size) const override { return train_step_work(size); }
  double memory_bytes(SizeClass size) const override { return 2 * window_memory(size); }
};

const WorkloadRegistration registration{std::make_shared<TrainStep>()};

}  // namespace
}  // namespace pb::suites::trainer2

// libFuzzer harness: results.csv through its reader, then through every check load_run makes
// on the rows alone (a run directory with an empty samples.csv beside it).

#include "fuzz_input.hpp"
#include "phasebench/results.hpp"
#include "results/results_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto dir = pb::fuzz::scratch_directory() / "results-run";
  static const bool made = [&] {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "samples.csv") << pb::samples_csv({});
    return true;
  }();
  (void)made;
  pb::fuzz::write_bytes(dir / "results.csv", data, size);
  pb::fuzz::expect_read_or_refusal([&] { pb::read_results_csv((dir / "results.csv").string()); });
  pb::fuzz::expect_read_or_refusal([&] { pb::results::load_run(dir.string()); });
  return 0;
}

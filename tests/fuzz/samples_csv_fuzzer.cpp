// libFuzzer harness: samples.csv through its reader, then indexed against a fixed results.csv
// and checked against its rows, as load_run does (tests/fuzz/corpus/ has the seeds).

#include "fuzz_input.hpp"
#include "fuzz_run.hpp"
#include "results/results_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = pb::fuzz::crafted_run_directory("samples-run");
  pb::fuzz::write_bytes(dir / "samples.csv", data, size);
  pb::fuzz::expect_read_or_refusal([&] { pb::read_samples_csv((dir / "samples.csv").string()); });
  pb::fuzz::expect_read_or_refusal([&] { pb::results::load_run(dir.string()); });
  return 0;
}

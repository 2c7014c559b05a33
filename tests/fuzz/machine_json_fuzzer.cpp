// libFuzzer harness: machine.json beside a valid results.csv and samples.csv, through load_run
// and everything the commands then ask of it (fingerprint, completeness, roofline ceilings).

#include "fuzz_input.hpp"
#include "fuzz_run.hpp"
#include "results/results_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = pb::fuzz::crafted_run_directory("machine-run");
  pb::fuzz::write_bytes(dir / "machine.json", data, size);
  pb::fuzz::expect_read_or_refusal([&] {
    const pb::results::RunData run = pb::results::load_run(dir.string());
    (void)run.fingerprint();
    (void)run.incomplete();
    (void)run.ceilings();
    pb::results::require_complete(run, "fuzz");
  });
  return 0;
}

// libFuzzer harness: catalog.json beside a valid run, through load_run (the catalog's reader,
// the rows-against-catalog check, the claims it derives), then compared with and united with
// itself, as merge does.

#include "results/catalog.hpp"
#include "fuzz_input.hpp"
#include "fuzz_run.hpp"
#include "results/results_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = pb::fuzz::crafted_run_directory("catalog-run");
  pb::fuzz::write_bytes(dir / "catalog.json", data, size);
  pb::fuzz::expect_read_or_refusal([&] {
    const pb::results::RunData run = pb::results::load_run(dir.string());
    (void)pb::catalog::differences(run.catalog, run.catalog);
    (void)pb::catalog::united(run.catalog, run.catalog);
  });
  return 0;
}

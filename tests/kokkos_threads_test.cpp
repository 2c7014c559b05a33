// Kokkos under a parallel execution space (the OpenMP Kokkos that ci/install-kokkos.sh builds):
// every Kokkos ladder passes verify on 1 and 2 threads, the rows and machine.json record the
// threads Kokkos ran on, and each Kokkos variant's outputs are the same bit for bit from one run
// to the next. Kokkos is initialized once per process, so each thread count runs the executable
// in a process of its own. With Debian's Serial Kokkos the same tests run (on one thread).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <optional>

#include "engine/case_runner.hpp"
#include "phasebench/results.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"

namespace pb {
namespace {

namespace fs = std::filesystem;
using testing::backend_built;
using testing::fresh_temp_path;
using testing::run_phasebench;

class KokkosThreads : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  }
  std::string threads_argument() const { return " --threads " + std::to_string(GetParam()); }
};

TEST_P(KokkosThreads, EveryKokkosLadderPassesVerify) {
  const auto result = run_phasebench("verify --backend kokkos --size small --seeds 2" + threads_argument());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find(" 0 failed"), std::string::npos) << result.output;
}

TEST_P(KokkosThreads, RowsAndMachineJsonRecordTheThreadsKokkosRanOn) {
  const fs::path out = fresh_temp_path("kokkos-threads");
  const auto result = run_phasebench("run --quick --size small --backend kokkos --filter trainer2/lior_step --out " +
                                     out.string() + threads_argument());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream machine_file(out / "machine.json");
  const nlohmann::json kokkos = nlohmann::json::parse(machine_file).at("backends").at("kokkos");
  // Serial takes no thread count: one thread whatever was asked.
  const int expected = kokkos.at("config").at("thread_count_applied").get<bool>() ? GetParam() : 1;
  EXPECT_EQ(kokkos.at("threads"), expected);
  int kokkos_rows = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.backend != "kokkos") continue;
    ++kokkos_rows;
    EXPECT_EQ(row.status, Status::Ok) << row.phase << ": " << row.reason;
    EXPECT_EQ(row.threads, expected) << row.phase;
  }
  EXPECT_GT(kokkos_rows, 0);
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(OneAndTwo, KokkosThreads, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_threads";
                         });

// The outputs of one freshly set up variant after one run; nullopt when it cannot run here.
std::optional<ArrayMap> outputs_of_one_run(const Case& c, const detail::Problem& problem, int threads) {
  detail::LiveCase live(c);
  detail::prepare(live, problem, threads);
  if (!live.variant) return std::nullopt;
  live.variant->poison_outputs();
  live.variant->run();
  return live.variant->outputs();
}

// A parallel reduction whose partial sums were joined in a different order, or a race, changes
// the last bits from one run to the next; Kokkos' OpenMP space splits a range statically and
// joins the threads' partial results in thread order, so a fixed thread count repeats exactly.
TEST(KokkosDeterminism, EveryKokkosVariantRepeatsItsOutputsBitForBit) {
  if (!backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  constexpr int kThreads = 2;
  Selection selection;
  selection.backends = {"kokkos"};
  const std::vector<Case> cases = plan_cases(selection, SizeClass::Small);
  init_backends(cases, kThreads);  // once per process; the test environment finalizes them
  std::map<std::string, detail::Problem> problems;
  int compared = 0;
  for (const Case& c : cases) {
    const std::string workload = c.workload->full_name();
    if (!problems.count(workload)) problems[workload] = detail::make_problem(*c.workload, c.size, 5);
    const auto first = outputs_of_one_run(c, problems[workload], kThreads);
    const auto second = outputs_of_one_run(c, problems[workload], kThreads);
    if (!first || !second) continue;
    ++compared;
    ASSERT_EQ(first->size(), second->size()) << c.id();
    for (const auto& [name, array] : *first)
      EXPECT_TRUE(array.values == second->at(name).values) << c.id() << ": output " << name << " changed";
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace pb

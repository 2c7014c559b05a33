// `compare`, `merge`, `baseline` and `run --shard` on the command line (compare_cli.hpp).

#include "commands/compare_cli.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <filesystem>
#include <string_view>
#include <iostream>

#include "compare/baseline.hpp"
#include "commands/cli_numbers.hpp"
#include "compare/compare.hpp"
#include "results/junit.hpp"
#include "results/merge.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/runner.hpp"

namespace pb {
namespace {

// Whether `text` is a whole decimal number (no sign, space or other character) that fits an int.
bool parse_whole(std::string_view text, int& value) {
  const auto [stop, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && stop == text.data() + text.size() && !text.empty();
}

// "" when `text` is "i/n" with 1 <= i <= n, else what is wrong.
std::string parse_shard(const std::string& text, int& index, int& count) {
  const size_t slash = text.find('/');
  const std::string_view whole(text);
  if (slash != std::string::npos && parse_whole(whole.substr(0, slash), index) &&
      parse_whole(whole.substr(slash + 1), count) && index >= 1 && index <= count)
    return "";
  return "'" + text + "' is not i/n with 1 <= i <= n (e.g. --shard 2/4)";
}

// A run that was stopped before it finished is refused unless this flag is given.
void add_allow_incomplete_flag(CLI::App& command, bool& allow, const std::string& what_then) {
  command.add_flag("--allow-incomplete", allow,
                   "accept a run marked incomplete (stopped before it finished, see `run --resume`): " + what_then);
}

}  // namespace

void add_shard_option(CLI::App& run, Selection& selection) {
  run.add_option_function<std::string>(
         "--shard",
         [&selection](const std::string& text) {
           parse_shard(text, selection.shard_index, selection.shard_count);
         },
         "i/n: run only the i-th of n deterministic parts of the selection (join them with `merge`)")
      ->check([](const std::string& text) {
        int index = 0, count = 0;
        return parse_shard(text, index, count);
      });
}

struct RegressionCommands::Parsed {
  CLI::App* compare = nullptr;
  std::string base, fresh, markdown, junit, mode = "time", ratio_to = "reference", metric = "wall", shift = "run",
                                            spread = "run", cpu_speed = "explain";
  std::string thresholds_file;
  compare::Options options;

  CLI::App* merge = nullptr;
  merge::MergeOptions merge_options;

  CLI::App* baseline = nullptr;
  CLI::App* record = nullptr;
  CLI::App* fingerprint = nullptr;
  std::string run;
  baseline::RecordOptions record_options;

  int run_compare();
};

int RegressionCommands::Parsed::run_compare() {
  const std::filesystem::path folder = std::filesystem::path(markdown).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder))
    throw InputError("--markdown " + markdown + ": the folder " + folder.string() + " does not exist");
  if (!junit.empty()) junit::check_writable(junit, "--junit");
  options.mode = mode == "ratio" ? compare::Mode::Ratio : compare::Mode::Time;
  options.metric = metric == "cpu" ? compare::Metric::Cpu : compare::Metric::Wall;
  options.ratio_to = ratio_to == "phase0" ? compare::RatioBase::Phase0 : compare::RatioBase::Reference;
  options.shift = shift == "none" ? compare::Shift::None : compare::Shift::Run;
  options.spread = spread == "none" ? compare::Spread::None : compare::Spread::Run;
  options.cpu_speed = cpu_speed == "ignore" ? compare::CpuSpeed::Ignore : compare::CpuSpeed::Explain;
  if (!thresholds_file.empty()) options.row_thresholds = compare::read_row_thresholds(thresholds_file);
  const results::RunData base_run = results::load_run(base), new_run = results::load_run(fresh);
  const compare::Comparison comparison = compare::compare_runs(base_run, new_run, options);
  std::cout << compare::terminal_report(comparison);
  if (!markdown.empty()) {
    write_file_atomically(markdown, compare::markdown_report(comparison));
    std::cout << "summary: " << markdown << "\n";
  }
  if (!junit.empty()) junit::write(compare::junit_report(comparison), junit, "--junit");
  return comparison.failed() ? 1 : 0;
}

RegressionCommands::RegressionCommands(CLI::App& app) : parsed_(std::make_unique<Parsed>()) {
  Parsed& p = *parsed_;
  p.compare = app.add_subcommand("compare", "regression report between two runs; exit 1 on a regression");
  p.compare->add_option("BASE", p.base, "the baseline: a run directory or its results.csv")->required();
  p.compare->add_option("NEW", p.fresh, "the run to check: a run directory or its results.csv")->required();
  add_number_option(*p.compare, "--threshold", p.options.threshold_pct,
                    "percent slowdown a significant change must exceed to fail (default 5)", 0.0, 1000.0);
  add_number_option(*p.compare, "--alpha", p.options.alpha,
                    "family-wise significance level, Holm-corrected (default 0.05)", 1e-12, 0.5);
  p.compare->add_option("--mode", p.mode, "time (same machine) or ratio (within-run ratios; any machines)")
      ->check(CLI::IsMember({"time", "ratio"}));
  p.compare->add_option("--metric", p.metric,
                        "wall (default: elapsed time) or cpu (CPU time of the process: not inflated when "
                        "other work holds the CPU; for CPU rows)")
      ->check(CLI::IsMember({"wall", "cpu"}));
  p.compare->add_option("--ratio-to", p.ratio_to, "ratio mode divides by: reference (default) or phase0")
      ->check(CLI::IsMember({"reference", "phase0"}));
  p.compare
      ->add_option("--shift", p.shift,
                   "time mode judges each row against: run (default: the run-wide shift, the median "
                   "change of all rows tested, so that drift of the machine between runs cancels) or "
                   "none (each row's own times)")
      ->check(CLI::IsMember({"run", "none"}));
  p.compare
      ->add_option("--spread", p.spread,
                   "where the run-wide shift is taken, a regression must also stand out of the run's "
                   "spread, how far all rows scatter around the shift (the drift between runs, and the row's "
                   "own error): run (default; two runs of one build differ row by row beyond what a row's "
                   "repetitions show) or none (the rank test alone)")
      ->check(CLI::IsMember({"run", "none"}));
  p.compare
      ->add_option("--cpu-speed", p.cpu_speed,
                   "explain (default: in time mode, a row that moved beyond the threshold no further than "
                   "the probe of the CPUs did between its repetitions in the two runs is not judged) or "
                   "ignore (judge it by its times alone)")
      ->check(CLI::IsMember({"explain", "ignore"}));
  add_number_option(*p.compare, "--max-shift", p.options.max_shift_pct,
                    "fail when the run-wide shift is a slowdown above PCT percent (default: never; a "
                    "shift is printed and warned about)",
                    0.0, 1000.0);
  p.compare->add_option("--thresholds", p.thresholds_file,
                        "a file of per-row thresholds: lines 'ROW-GLOB PERCENT', the first match wins, "
                        "--threshold for rows none matches (docs/regression-gate.md)");
  add_number_option(*p.compare, "--fastest", p.options.fastest_pct,
                        "compare only the fastest PCT% of each row's repetitions (default 100: all); on "
                        "a shared machine, 25 keeps the ones other work did not slow down", 1.0, 100.0);
  p.compare->add_option("--markdown", p.markdown, "also write a Markdown summary (a pull-request comment) here");
  p.compare->add_option("--junit", p.junit,
                        "also write a JUnit XML report here (a case per row, for GitLab's or Jenkins' test reports)");
  add_allow_incomplete_flag(*p.compare, p.options.allow_incomplete, "compare it anyway, with a note");

  p.merge = app.add_subcommand("merge", "join the shards of a run (`run --shard i/n`), or pool repeated runs "
                                         "(--pool), into one run directory");
  p.merge->add_option("RUN", p.merge_options.runs, "run directories (or results.csv) of the shards")->required();
  p.merge->add_option("--out", p.merge_options.out_dir, "run directory to create (must not exist)")->required();
  p.merge->add_flag("--allow-mixed", p.merge_options.allow_mixed, "merge runs from different machines anyway");
  p.merge->add_flag("--pool", p.merge_options.pool,
                    "the runs repeat the same cases (one process each): pool their samples per row");
  add_allow_incomplete_flag(*p.merge, p.merge_options.allow_incomplete,
                            "merge it anyway; the merged run is marked incomplete");

  p.baseline = app.add_subcommand("baseline", "regression baselines under results/baselines/<fingerprint>/");
  p.baseline->require_subcommand(1);
  p.record = p.baseline->add_subcommand("record", "record RUN as the baseline of the machine it ran on");
  p.record->add_option("RUN", p.run, "a passing run directory")->required();
  p.record->add_option("--root", p.record_options.root, "baselines directory (default results/baselines)");
  p.record->add_flag("--refresh", p.record_options.refresh, "replace an existing baseline of that machine");
  add_allow_incomplete_flag(*p.record, p.record_options.allow_incomplete,
                            "record it anyway (it stays marked incomplete)");
  p.fingerprint = p.baseline->add_subcommand("fingerprint", "print the hardware fingerprint of RUN (default: this machine)");
  p.fingerprint->add_option("RUN", p.run, "a run directory");
}

RegressionCommands::~RegressionCommands() = default;

std::optional<int> RegressionCommands::run_chosen() {
  Parsed& p = *parsed_;
  if (*p.compare) return p.run_compare();
  if (*p.merge) {
    for (const std::string& line : merge::merge_runs(p.merge_options)) std::cout << line << "\n";
    return 0;
  }
  if (*p.record) {
    const std::filesystem::path recorded = baseline::record(p.run, p.record_options);  // may refuse: print after
    std::cout << "baseline recorded: " << recorded.string() << "\n";
    return 0;
  }
  if (*p.fingerprint) {
    std::cout << baseline::fingerprint(p.run) << "\n";
    return 0;
  }
  return std::nullopt;
}

}  // namespace pb

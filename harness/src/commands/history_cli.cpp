// `phasebench history ...` (history_cli.hpp).

#include "commands/history_cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <string>

#include "commands/cli_numbers.hpp"
#include "common/number_text.hpp"
#include "history/history_store.hpp"
#include "history/history_trend.hpp"
#include "results/merge.hpp"
#include "phasebench/errors.hpp"

namespace pb {
namespace {

// The history a command uses unless --db says otherwise: $PHASEBENCH_HISTORY, else a SQLite file
// next to the run directories (ignored by git, like them).
std::string default_database() {
  const char* from_environment = std::getenv("PHASEBENCH_HISTORY");
  return from_environment && *from_environment ? from_environment : "results/history.sqlite";
}

std::string value_text(double value, bool ratio) { return format_significant(value, 4) + (ratio ? " x ref" : " ms"); }

void print_series(const history::Series& series, bool ratio) {
  std::cout << series.name() << (series.fingerprint.empty() ? "" : "  [machine " + series.fingerprint + "]") << "  "
            << series.points.size() << " runs, latest " << value_text(series.points.back().value, ratio) << "\n";
  for (const history::TrendStep& found : series.steps)
    std::cout << "  step " << format_change_percent(found.step.relative_size) << " ["
              << format_change_percent(found.step.interval.low) << ", "
              << format_change_percent(found.step.interval.high) << "] at run " << found.run_id << ", commits "
              << found.commit_range << " (" << value_text(found.step.level_before, ratio) << " -> "
              << value_text(found.step.level_after, ratio) << ")\n";
}

}  // namespace

void history::add_series_selection_options(CLI::App& command, TrendOptions& options, const std::string& help_prefix) {
  command.add_option("--filter", options.filter,
                     help_prefix + "regular expression searched in suite/workload/backend/phase");
  add_thread_counts_option(command, "--threads", options.threads,
                           help_prefix +
                               "only the series at these thread counts, comma-separated (max: this "
                               "machine's cores; default: every count)");
  command
      .add_option_function<std::string>(
          "--metric", [&options](const std::string& metric) { options.cpu_time = metric == "cpu"; },
          help_prefix +
              "wall (default) or cpu: each run's CPU time (median of its fastest quarter), which other work "
              "on a busy machine disturbs least (not for GPU rows)")
      ->check(CLI::IsMember({"wall", "cpu"}));
}

struct HistoryCommands::Parsed {
  CLI::App* history = nullptr;
  std::string database = default_database();

  CLI::App* add = nullptr;
  std::vector<std::string> runs;
  history::CiContext ci = history::ci_context_from_environment();

  CLI::App* list = nullptr;

  CLI::App* trend = nullptr;
  std::string fingerprint, branch;
  history::TrendOptions trend_options;
  bool all_series = false;

  CLI::App* export_run = nullptr;
  std::string run_id, out;

  CLI::App* window = nullptr;
  int window_runs = 5;

  int run_add(history::HistoryStore& store);
  int run_list(history::HistoryStore& store);
  int run_trend(history::HistoryStore& store);
  int run_window(history::HistoryStore& store);
};

int HistoryCommands::Parsed::run_add(history::HistoryStore& store) {
  for (const std::string& run : runs) {
    const history::AddOutcome outcome = store.add(run, ci);
    std::cout << (outcome.added ? "added " : "already there, unchanged: ") << outcome.run.run_id << " (" << run << ")";
    if (!outcome.run.complete) std::cout << "; marked incomplete, left out of trends: " << outcome.run.incomplete_reason;
    if (outcome.run.failed_rows > 0)
      std::cout << "; " << outcome.run.failed_rows << " failed rows, left out of trends";
    std::cout << "\n";
  }
  return 0;
}

int HistoryCommands::Parsed::run_list(history::HistoryStore& store) {
  std::cout << "run_id\tstarted_at\tgit_commit\tfingerprint\tbranch\tpull_request\tstate\tmachine\n";
  for (const history::StoredRun& run : store.runs())
    std::cout << run.run_id << "\t" << run.started_at << "\t" << run.git_commit << "\t" << run.fingerprint << "\t"
              << run.branch << "\t" << run.pull_request << "\t"
              << (!run.complete ? "incomplete" : run.failed_rows > 0 ? "failed" : "ok") << "\t"
              << (run.machine_state.empty() ? "-" : run.machine_state) << "\n";
  return 0;
}

int HistoryCommands::Parsed::run_trend(history::HistoryStore& store) {
  const auto series = history::build_trends(store.trend_rows(fingerprint, branch), trend_options);
  size_t with_steps = 0;
  for (const history::Series& one : series) {
    with_steps += one.steps.empty() ? 0 : 1;
    if (all_series || !one.steps.empty()) print_series(one, trend_options.ratio);
  }
  std::cout << "trend: " << series.size() << " series from " << store.connection().description() << ", "
            << with_steps << " with steps (asv-style L1 step detection; docs/history.md)\n";
  return 0;
}

// The gate's base from the history: the newest runs of one machine on one branch, exported under
// OUT/exported/ and pooled into OUT/pooled (`merge --pool`), which `compare` reads like a baseline.
// Pooling keeps every run's samples, so the spread between runs is part of what a change must beat.
int HistoryCommands::Parsed::run_window(history::HistoryStore& store) {
  if (fingerprint.empty()) throw InputError("history window needs --fingerprint (phasebench baseline fingerprint)");
  const std::vector<std::string> ids = store.recent_runs(fingerprint, branch, window_runs);
  if (ids.empty())
    throw InputError("no complete, failure-free run of machine " + fingerprint + (branch.empty() ? "" : " on " + branch) +
                     " in " + store.connection().description() + ": add some with `phasebench history add`");
  merge::MergeOptions pool;
  pool.pool = true;
  pool.allow_mixed = true;  // one machine by the query; catalogs may differ across commits
  pool.out_dir = (std::filesystem::path(out) / "pooled").string();
  std::filesystem::create_directories(std::filesystem::path(out) / "exported");
  for (const std::string& id : ids) {
    pool.runs.push_back((std::filesystem::path(out) / "exported" / id).string());
    store.export_run(id, pool.runs.back());
  }
  merge::merge_runs(pool);
  std::cout << "history window: the newest " << ids.size() << " runs of machine " << fingerprint
            << (branch.empty() ? "" : " on " + branch) << " in " << store.connection().description() << ", "
            << ids.back() << " to " << ids.front() << ", pooled in " << pool.out_dir << "\n";
  return 0;
}

HistoryCommands::HistoryCommands(CLI::App& app) : parsed_(std::make_unique<Parsed>()) {
  Parsed& p = *parsed_;
  p.history = app.add_subcommand("history", "a database of runs over time: add, list, trend (step detection), export");
  p.history->require_subcommand(1);
  p.history->add_option("--db", p.database,
                        "a SQLite file, or a postgresql:// URL for a fleet (default: $PHASEBENCH_HISTORY, else "
                        "results/history.sqlite)");

  p.add = p.history->add_subcommand("add", "store runs (adding one twice changes nothing)");
  p.add->add_option("runs", p.runs, "run directories")->required();
  p.add->add_option("--branch", p.ci.branch, "the branch the run was made on (default: from the CI's variables)");
  p.add->add_option("--pull-request", p.ci.pull_request, "its pull or merge request (default: from the CI)");

  p.list = p.history->add_subcommand("list", "the stored runs, oldest first, tab-separated");

  p.trend = p.history->add_subcommand("trend", "per row and machine: the series over runs and its steps");
  p.trend->add_option("--fingerprint", p.fingerprint, "only runs of this machine fingerprint");
  p.trend->add_option("--branch", p.branch, "only runs added from this branch");
  p.trend->add_flag("--ratio", p.trend_options.ratio,
                    "each row over its workload's serial reference in the same run: series across machines");
  p.trend->add_option("--last", p.trend_options.last, "only the newest N runs of each series (default 250)")
      ->check(CLI::Range(3, 2000));
  p.trend->add_option("--min-step", p.trend_options.steps.min_relative_size,
                      "smallest relative step reported (default 0.02)")
      ->check(CLI::Range(0.0, 10.0));
  add_series_selection_options(*p.trend, p.trend_options, "");
  p.trend->add_flag("--all", p.all_series, "print every series, not only those with steps");

  p.export_run = p.history->add_subcommand("export", "write a stored run back out as an ordinary run directory");
  p.export_run->add_option("run_id", p.run_id, "the run's id (see history list)")->required();
  p.export_run->add_option("--out", p.out, "the run directory to create (must not exist)")->required();

  p.window = p.history->add_subcommand(
      "window", "the gate's base: the newest runs of a machine on a branch, pooled into OUT/pooled for `compare`");
  p.window->add_option("--fingerprint", p.fingerprint, "the machine (phasebench baseline fingerprint)")->required();
  p.window->add_option("--branch", p.branch, "only runs added from this branch (e.g. main)");
  p.window->add_option("--window", p.window_runs, "how many runs (default 5)")->check(CLI::Range(1, 1000));
  p.window->add_option("--out", p.out, "directory to create (must not exist)")->required();
}

HistoryCommands::~HistoryCommands() = default;

std::optional<int> HistoryCommands::run_chosen() {
  Parsed& p = *parsed_;
  if (!*p.history) return std::nullopt;
  history::HistoryStore store = history::HistoryStore::open(p.database);
  if (*p.add) return p.run_add(store);
  if (*p.list) return p.run_list(store);
  if (*p.trend) return p.run_trend(store);
  if (*p.window) {
    if (std::filesystem::exists(p.out)) throw InputError("--out " + p.out + " exists: nothing is overwritten");
    return p.run_window(store);
  }
  store.export_run(p.run_id, p.out);
  std::cout << "exported " << p.run_id << " to " << p.out << "\n";
  return 0;
}

}  // namespace pb

// The command line (a contract: README "Command line"). Parsing and validation only; the work
// is in commands.hpp. Every bad argument gets a message naming it and exit code 2.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>

#include "commands/check_command.hpp"
#include "commands/cli_numbers.hpp"
#include "commands/commands.hpp"
#include "phasebench/cli.hpp"
#include "commands/compare_cli.hpp"
#include "commands/history_cli.hpp"
#include "phasebench/errors.hpp"
#include "commands/report_cli.hpp"
#include "commands/run_command.hpp"
#include "commands/verify_command.hpp"

namespace pb {
namespace {

constexpr const char* kSizeHelp =
    "small, default, large, a scale of the default such as 4x, 0.25x, 1/16x, or random shapes: random-3, random:8 "
    "(random-1 ... random-8)";

void add_selection(CLI::App& command, Selection& selection, bool with_backend) {
  command.add_option("--suite", selection.suite, "only this suite (e.g. trainer2)");
  command.add_option("--filter", selection.filter,
                     "regular expression searched in suite/workload/backend/phase");
  if (with_backend)
    command.add_option("--backend", selection.backends, "only these backends (comma-separated)")
        ->delimiter(',');
}

// One size: a list of one item.
SizeClass one_size(const std::string& text) {
  const std::vector<SizeClass> sizes = parse_size_list(text);
  if (sizes.size() != 1) throw InputError("--size '" + text + "': this command takes one size, not a list");
  return sizes.front();
}

CLI::Option* add_seed_option(CLI::App& command, const std::string& name, uint64_t& seed, const std::string& help) {
  return add_number_option<uint64_t>(command, name, seed, help, 0, UINT64_MAX);
}

bool is_command(const CLI::App& app, const std::string& word) {
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    if (command->get_name() == word) return true;
  return false;
}

std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + command->get_name();
  return names;
}

// --resume continues a run with the options it was started with: any other would be ignored.
void require_alone(const CLI::App& command, const CLI::Option* option) {
  for (const CLI::Option* other : command.get_options())
    if (other != option && other->count() > 0 && other->get_name() != "--help")
      throw InputError(option->get_name() + " takes no other option (the run keeps its own); got " + other->get_name());
}

}  // namespace

int run_cli(int argc, char** argv, CliMode mode) {
  CLI::App app{"phasebench: checks optimized variants of numerical workloads against a naive fp64 "
               "reference, times them per optimization phase and backend, and records the results"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("phasebench ") + PHASEBENCH_VERSION);

  Selection list_selection;
  std::string list_size = "default";
  CLI::App* list = app.add_subcommand("list", "workloads, backends, phases and availability with reasons");
  add_selection(*list, list_selection, true);
  list->add_option("--size", list_size, std::string("the size whose shapes to show: ") + kSizeHelp);

  commands::RunCommand run_command;
  run_command.options.thread_counts = {default_threads()};
  std::string run_size = "default";
  CLI::App* run = app.add_subcommand("run", "check, count and time the selected variants; write a run directory");
  add_selection(*run, run_command.options.selection, true);
  run->add_option("--size", run_size,
                  std::string("sizes, comma-separated, every case at each in one schedule: ") + kSizeHelp);
  add_number_option(*run, "--reps", run_command.options.reps,
                  "timed repetitions of every case, whatever the time budget (default: 10 while the budget "
                  "allows, at least 3 while 3 of every case fit, else at least 1)", 1, 100000);
  add_number_option(*run, "--time-budget", run_command.options.time_budget_s,
                  "seconds the whole run should take, checking included: slow cases get fewer repetitions "
                  "to fit, down to 3, and down to 1 (no confidence interval) when 3 of every case do not fit (default " + std::to_string(static_cast<int>(kDefaultTimeBudgetSeconds)) + ")", 1.0, 1e7);
  add_number_option(*run, "--hang-timeout", run_command.options.hang_timeout_s,
                  "seconds a check or warm-up may take before the case is ended as ERROR \"timed out\"; a timed "
                  "repetition may take 10 times its planned time (default 300)", 0.1, 1e7);
  add_number_option(*run, "--processes", run_command.options.processes,
                    "worker processes the timed repetitions are split over, one after another, each setting every "
                    "case up anew, so that one process's state (where its memory landed, where its threads ran) "
                    "weighs 1/N in each row (default 1)",
                    1, 100);
  add_thread_counts_option(*run, "--threads", run_command.options.thread_counts,
                           "CPU threads for torch, OpenMP, oneDNN, comma-separated, max for all cores: every "
                           "case at each, interleaved in one worker (Kokkos: a worker per count; default: all cores)");
  add_seed_option(*run, "--seed", run_command.options.seed, "input seed (default 1)");
  run->add_flag("--quick", run_command.options.quick, "3 short repetitions: a smoke test, not a measurement");
  run->add_option("--out", run_command.out_dir, "run directory to create (must not exist)");
  CLI::Option* resume = run->add_option("--resume", run_command.resume_dir,
                                        "finish the incomplete run in this directory, with its own options");
  add_shard_option(*run, run_command.options.selection);
  run->add_option("--worker-dir", run_command.worker_dir)->group("");  // internal
  run->add_option("--worker-threads", run_command.worker_threads)->group("");  // internal

  commands::VerifyCommand verify_command;
  VerifyOptions& verify_options = verify_command.options;
  verify_options.threads = default_threads();
  std::string verify_size;
  CLI::App* verify = app.add_subcommand("verify", "correctness only: every variant on several seeds and sizes");
  add_selection(*verify, verify_options.selection, true);
  add_number_option(*verify, "--seeds", verify_options.seeds, "fresh seeds per size (default 3)", 1, 1000);
  add_seed_option(*verify, "--seed", verify_options.first_seed, "first seed (default 1)");
  verify->add_option(
      "--size", verify_size,
      std::string("only these sizes, comma-separated (default: every named size that fits): ") + kSizeHelp);
  add_number_option(*verify, "--threads", verify_options.threads, "CPU threads (default: all cores)", 1, 4096);
  add_number_option(*verify, "--hang-timeout", verify_command.hang_timeout_s,
                     "seconds one check may take before it is ended and reported ERROR \"timed out\" (default 300)", 0.1, 1e7);
  verify->add_option("--junit", verify_command.junit,
                     "also write the checks as a JUnit XML report here (for GitLab's or Jenkins' test reports)");
  verify->add_option("--worker-dir", verify_command.worker_dir)->group("");  // internal

  commands::DumpCommand dump_command;
  std::string dump_size = "small";
  CLI::App* dump = app.add_subcommand("dump", "inputs and fp64 reference outputs as .npy with a manifest.json");
  dump->add_option("--workload", dump_command.workload, "suite/workload, e.g. trainer2/lior_step")->required();
  dump->add_option("--size", dump_size, std::string("one size (default small): ") + kSizeHelp);
  add_seed_option(*dump, "--seed", dump_command.seed, "input seed (default 1)");
  dump->add_option("--out", dump_command.out_dir, "directory to create (must not exist)")->required();

  commands::CheckCommand check_command;
  CLI::App* check = app.add_subcommand(
      "check", "judge outputs computed elsewhere (one <output>.npy each) against a dump's fp64 reference, as verify does");
  check->add_option("DUMP_DIR", check_command.dump_dir, "a directory written by `phasebench dump`")->required();
  check->add_option("OUTPUTS_DIR", check_command.outputs_dir,
                    "a directory holding one <output>.npy per output the dump's manifest names")->required();

  RegressionCommands regression_commands(app);  // compare, merge, baseline
  ReportCommand report_command(app);
  HistoryCommands history_commands(app);

  if (argc > 1 && argv[1][0] != '-' && !is_command(app, argv[1])) {
    std::cerr << "phasebench: error: unknown command '" << argv[1]
              << "' (commands: " << command_names(app) << "; see --help)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }

  try {
    // Options that need more than CLI11's checks, settled before anything runs.
    const SizeClass shown_size = one_size(list_size);
    run_command.options.sizes = parse_size_list(run_size);
    run_command.options.reps_fixed = run->count("--reps") > 0;
    run_command.options.threads = run_command.options.thread_counts.front();
    if (run_command.options.quick && !run_command.options.reps_fixed) run_command.options.reps = 3;
    if (*run && *resume) require_alone(*run, resume);
    if (!verify_size.empty()) verify_options.sizes = parse_size_list(verify_size);
    dump_command.size = one_size(dump_size);
    if (mode == CliMode::ParseOnly) return 0;

    if (*list) return commands::list(list_selection, shown_size);
    if (*run) return commands::run(std::move(run_command));
    if (*verify) return commands::verify(std::move(verify_command), argc, argv);
    if (*dump) return commands::dump(dump_command);
    if (*check) return commands::check(check_command);
    if (const auto code = regression_commands.run_chosen()) return *code;
    if (const auto code = report_command.run_chosen()) return *code;
    if (const auto code = history_commands.run_chosen()) return *code;
  } catch (const InputError& error) {
    std::cerr << "phasebench: error: " << error.what() << "\n";
    return 2;
  }
  return 2;
}

}  // namespace pb

#include "commands.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sstream>

#include "case_runner.hpp"
#include "claims_view.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/machine.hpp"
#include "phasebench/npy.hpp"
#include "results_model.hpp"
#include "roofline.hpp"

namespace pb::commands {
namespace fs = std::filesystem;

// ---- list ----------------------------------------------------------------------------------------

namespace {

std::string claim_text(const PhaseInfo& phase) {
  if (std::isnan(phase.claimed_min)) return "";
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << "claimed " << phase.claimed_min << "-"
       << phase.claimed_max << "x";
  return text.str();
}

std::string needs_text(const PhaseInfo& phase) {
  std::string text;
  for (Capability need : phase.needs) text += (text.empty() ? "needs " : ", ") + std::string(to_string(need));
  for (const std::string& off : phase.switches_off) text += (text.empty() ? "turns off " : "; turns off ") + off;
  return text.empty() ? "" : "  [" + text + "]";
}

// What the case's row will say before it runs: the capability gap, the device's absence, or that it runs.
std::string availability_text(const Case& c) {
  if (c.capability_gap)
    return (c.capability_gap->kind == CannotRun::Kind::Skipped ? "SKIPPED: " : "UNSUPPORTED: ") + c.capability_gap->reason;
  return c.device_unavailable_reason.empty() ? "runs here" : "SKIPPED: " + c.device_unavailable_reason;
}

std::string capabilities_text(const Backend& backend, const std::string& device) {
  std::string text;
  for (Capability capability : backend.capabilities(device))
    text += (text.empty() ? "" : ",") + std::string(to_string(capability));
  return text.empty() ? "" : "  has: " + text;
}

void list_backends(const Selection& selection) {
  std::cout << "backends\n";
  for (const auto& backend : registered_backends()) {
    if (!selection.backends.empty() &&
        std::find(selection.backends.begin(), selection.backends.end(), backend->name()) ==
            selection.backends.end())
      continue;
    const std::string why_not = backend->unavailable_reason();
    std::cout << "  " << std::left << std::setw(10) << backend->name()
              << (why_not.empty() ? "available" : "unavailable: " + why_not) << "\n";
    for (const DeviceInfo& device : backend->devices())
      std::cout << "      device " << std::setw(6) << device.name
                << (device.unavailable_reason.empty() ? "available" : "unavailable: " + device.unavailable_reason)
                << (device.description.empty() ? "" : "  [" + device.description + "]")
                << capabilities_text(*backend, device.name) << "\n";
  }
}

}  // namespace

int list(const Selection& selection) {
  const std::vector<Case> cases = plan_cases(selection, SizeClass::Default);
  std::cout << "workloads\n";
  for (const auto& workload : registered_workloads()) {
    std::vector<const Case*> mine;
    for (const Case& c : cases)
      if (c.workload == workload) mine.push_back(&c);
    if (mine.empty()) continue;
    std::cout << "  " << workload->full_name() << ": " << workload->description() << "\n";
    for (const PhaseInfo& phase : workload->phases())
      std::cout << "      phase " << phase.index << " " << std::left << std::setw(25) << phase.name
                << (phase.exact ? "exact   " : "approx  ") << std::setw(20) << claim_text(phase)
                << phase.description << needs_text(phase) << "\n";
    for (const Case* c : mine)
      std::cout << "      variant " << std::setw(62) << c->id() + " [" + c->device + "] " << availability_text(*c)
                << "\n";
  }
  list_backends(selection);
  return 0;
}

// ---- run -----------------------------------------------------------------------------------------

namespace {

std::string format(double value, int precision = 3) {
  if (std::isnan(value)) return "-";
  std::ostringstream text;
  text << std::setprecision(precision) << value;
  return text.str();
}

std::string speedup_text(double value, double low, double high) {
  if (std::isnan(value)) return "-";
  return format(value) + " [" + format(low) + "," + format(high) + "]";
}

void print_summary(const std::vector<ResultRow>& rows) {
  std::cout << std::left << std::setw(60) << "case" << std::setw(12) << "status" << std::setw(11)
            << "median_ms" << std::setw(28) << "vs phase0 [95% CI]" << std::setw(28)
            << "vs reference" << std::setw(8) << "syncs" << "ops\n";
  for (const ResultRow& row : rows) {
    const std::string name = row.suite + "/" + row.workload + "/" + row.backend + "/" + row.device +
                             "/" + std::to_string(row.phase_index) + "_" + row.phase;
    std::cout << std::setw(60) << name << std::setw(12) << row.status << std::setw(11)
              << format(row.median_ms) << std::setw(28)
              << speedup_text(row.speedup_vs_phase0, row.speedup_vs_phase0_ci_low, row.speedup_vs_phase0_ci_high)
              << std::setw(28)
              << speedup_text(row.speedup_vs_reference, row.speedup_vs_reference_ci_low, row.speedup_vs_reference_ci_high)
              << std::setw(7) << format(row.host_syncs_per_iter) << " " << format(row.ops_per_iter) << "\n";
    if (!row.reason.empty() && row.status != Status::Ok) std::cout << "    reason: " << row.reason << "\n";
  }
}

std::vector<std::pair<std::string, std::string>> read_crashed(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> crashed;
  if (path.empty()) return crashed;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    if (tab != std::string::npos) crashed.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return crashed;
}

// Fault injection for the isolation tests: PHASEBENCH_INJECT_CRASH=<regex> makes the worker
// die with SIGSEGV when it reaches a matching case, as a crashing variant would.
void maybe_inject_crash(const std::string& row_name) {
  const char* pattern = std::getenv("PHASEBENCH_INJECT_CRASH");
  if (pattern && *pattern && std::regex_search(row_name, std::regex(pattern))) std::raise(SIGSEGV);
}

// The workloads the run measured, as the registry defines them: what its catalog.json records.
std::vector<std::shared_ptr<const Workload>> measured_workloads(const std::vector<ResultRow>& rows) {
  std::vector<std::shared_ptr<const Workload>> workloads;
  for (const ResultRow& row : rows)
    if (const auto workload = find_workload(row.suite + "/" + row.workload);
        workload && std::find(workloads.begin(), workloads.end(), workload) == workloads.end())
      workloads.push_back(workload);
  return workloads;
}

nlohmann::json run_machine(const RunOptions& options, const roofline::Ceilings& ceilings) {
  nlohmann::json machine = collect_machine_metadata({options.threads});
  machine["run_id"] = options.run_id;
  machine["results_schema"] = kResultsSchemaVersion;
  if (const Selection& s = options.selection; s.shard_count > 1)  // read by `merge`
    machine["shard"] = {{"index", s.shard_index}, {"count", s.shard_count}};
  machine["roofline"] = roofline::to_json(ceilings);
  return machine;
}

int write_run(const RunCommand& command, RunOutcome outcome, const roofline::Ceilings& ceilings) {
  const fs::path final_dir = command.out_dir.empty()
                                 ? fresh_run_directory("results/runs", command.options.run_id)
                                 : fs::path(command.out_dir);
  catalog::Catalog catalog = catalog::build(measured_workloads(outcome.rows), command.options.size);
  results::RunFiles files{std::move(outcome.rows), std::move(outcome.samples), run_machine(command.options, ceilings),
                          std::move(catalog), std::move(outcome.benchmark_json)};
  const results::IndexedSamples samples = results::index_samples(files.samples, files.rows, "the run's samples");
  results::derive_columns(files.rows, {&samples.wall, &files.catalog, ceilings});
  results::write_run_directory(final_dir, files);
  print_summary(files.rows);
  print_claims_view(std::cout, files.rows, files.catalog);
  std::cout << "\nresults: " << final_dir.string() << "\n";
  for (const ResultRow& row : files.rows)
    if (is_failure(row.status)) return 1;
  return 0;
}

int run_worker(RunCommand command) {
  std::ofstream journal;
  if (!command.worker_journal.empty()) {
    journal.open(command.worker_journal, std::ios::app);
    command.options.journal = [&journal](const std::string& row) {
      journal << row << std::endl;  // flushed: the supervisor reads it after a crash
      maybe_inject_crash(row);
    };
  } else {
    command.options.journal = maybe_inject_crash;
  }
  command.options.crashed = read_crashed(command.crashed_file);
  // Measured (or read from the cache) before any variant runs, so no row waits for the probe.
  const roofline::Ceilings ceilings = roofline::cached_or_measured(command.options.threads, std::cerr);
  return write_run(command, execute_run(command.options), ceilings);
}

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// Runs the worker (this same program) in a child process. When it dies of a signal, the case it
// was in (the journal's last line) is marked as crashed and the worker is started again without
// it, so one crashing variant never takes the others down.
int supervise(const RunCommand& command, bool pass_out_dir, int argc, char** argv) {
  const fs::path scratch = fs::temp_directory_path() / ("phasebench-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  const std::string journal = (scratch / "journal").string();
  const std::string crashed = (scratch / "crashed").string();
  std::ofstream(crashed).close();
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::ofstream(journal, std::ios::trunc).close();
    std::vector<std::string> args(argv, argv + argc);
    args.insert(args.end(), {"--worker-journal", journal, "--crashed-file", crashed, "--run-id",
                             command.options.run_id});
    if (pass_out_dir) args.insert(args.end(), {"--out", command.out_dir});
    std::vector<char*> raw;
    for (std::string& arg : args) raw.push_back(arg.data());
    raw.push_back(nullptr);
    const pid_t child = fork();
    if (child == 0) {
      execv("/proc/self/exe", raw.data());
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFSIGNALED(status)) {
      fs::remove_all(scratch);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    const std::string row = last_line(journal);
    const std::string reason = std::string("crashed: ") + strsignal(WTERMSIG(status)) +
                               " (signal " + std::to_string(WTERMSIG(status)) + "); other cases were rerun";
    std::cerr << "phasebench: the worker " << reason << " in " << (row.empty() ? "startup" : row)
              << "; restarting without that case\n";
    if (row.empty()) break;
    std::ofstream(crashed, std::ios::app) << row << '\t' << reason << '\n';
  }
  fs::remove_all(scratch);
  std::cerr << "phasebench: the worker keeps crashing outside any case; giving up\n";
  return 1;
}

}  // namespace

int run(RunCommand command, int argc, char** argv) {
  if (command.options.run_id.empty()) command.options.run_id = make_run_id();
  const bool is_worker = !command.worker_journal.empty();
  if (!command.out_dir.empty() && fs::exists(command.out_dir))
    throw InputError("--out " + command.out_dir + " already exists; phasebench never overwrites results");
  plan_cases(command.options.selection, command.options.size);  // bad selections fail here, exit 2
  if (is_worker || std::getenv("PHASEBENCH_NO_ISOLATION")) return run_worker(std::move(command));
  const bool pass_out_dir = command.out_dir.empty();
  if (pass_out_dir)  // every worker attempt must write the same directory: fix it now
    command.out_dir = fresh_run_directory("results/runs", command.options.run_id).string();
  return supervise(command, pass_out_dir, argc, argv);
}

// ---- verify --------------------------------------------------------------------------------------

int verify(const VerifyOptions& options) {
  const std::vector<VerifyLine> lines = execute_verify(options);
  int passed = 0, failed = 0, skipped = 0;
  for (const VerifyLine& line : lines) {
    if (line.status == Status::Ok) ++passed;
    else if (is_failure(line.status)) ++failed;
    else ++skipped;
  }
  std::cout << "\nverify: " << passed << " passed, " << failed << " failed, " << skipped
            << " skipped or unsupported\n";
  for (const VerifyLine& line : lines)
    if (is_failure(line.status))
      std::cout << "  " << line.status << " " << line.row_name << " seed " << line.seed << ": "
                << line.detail << "\n";
  return failed ? 1 : 0;
}

// ---- dump ----------------------------------------------------------------------------------------

namespace {

nlohmann::json write_arrays(const fs::path& dir, const std::string& role, const ArrayMap& arrays) {
  nlohmann::json entries = nlohmann::json::array();
  fs::create_directories(dir / role);
  for (const auto& [name, array] : arrays) {
    const std::string file = role + "/" + name + ".npy";
    write_file_atomically(dir / file, npy_bytes(array));
    entries.push_back({{"name", name}, {"role", role}, {"file", file}, {"shape", array.shape},
                       {"dtype", element_type_name(array.element_type)}});
  }
  return entries;
}

}  // namespace

int dump(const DumpCommand& command) {
  const auto workload = find_workload(command.workload);
  if (!workload)
    throw InputError("unknown workload '" + command.workload + "' (names are suite/workload; see `phasebench list`)");
  StagedDirectory dir(command.out_dir);
  const ArrayMap inputs = workload->make_inputs(command.size, command.seed);
  const ArrayMap reference = workload->reference_fp64(inputs);
  nlohmann::json manifest = {{"workload", workload->full_name()},
                             {"size", to_string(command.size)},
                             {"shape", workload->shape(command.size)},
                             {"seed", command.seed},
                             {"phasebench_version", PHASEBENCH_VERSION},
                             {"arrays", nlohmann::json::array()},
                             {"tolerances", nlohmann::json::object()}};
  for (auto& entry : write_arrays(dir.staging_path(), "inputs", inputs)) manifest["arrays"].push_back(entry);
  for (auto& entry : write_arrays(dir.staging_path(), "reference", reference)) manifest["arrays"].push_back(entry);
  for (const OutputSpec& spec : workload->outputs())
    manifest["tolerances"][spec.name] = {{"rel_l2", spec.tolerance}, {"reason", spec.tolerance_reason}};
  write_file_atomically(dir.staging_path() / "manifest.json", manifest.dump(2) + "\n");
  dir.commit();
  std::cout << "wrote " << inputs.size() << " inputs and " << reference.size()
            << " reference outputs of " << workload->full_name() << " to " << command.out_dir << "\n";
  return 0;
}

}  // namespace pb::commands

// `run`: the supervisor, its worker, and the run directory (run_command.hpp).
//
// The scratch directory of a run holds `journal` (a line "<row name>\t<limit seconds>" before each
// step, watched by WorkerProcess) and `record/` (the run record, run_record.hpp, whose
// arguments.json carries the run's options to the worker). `run --resume DIR` starts from the
// record the stopped run left in DIR/resume/.

#include "commands/run_command.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "common/number_text.hpp"
#include "report/claims_view.hpp"
#include "engine/interference.hpp"
#include "engine/fault_injection.hpp"
#include "engine/worker_environment.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/machine.hpp"
#include "phasebench/stats.hpp"
#include "results/results_model.hpp"
#include "results/scaling.hpp"
#include "roofline/roofline.hpp"
#include "engine/run.hpp"
#include "engine/timing.hpp"
#include "engine/worker_process.hpp"

namespace pb::commands {
namespace fs = std::filesystem;
namespace {

constexpr const char* kJournal = "journal";
constexpr const char* kRecord = "record";
constexpr const char* kResume = "resume";

// ---- the options, carried to the worker and kept for --resume --------------------------------------

nlohmann::json options_json(const RunOptions& options, const std::string& out_dir) {
  const Selection& s = options.selection;
  return {{"suite", s.suite},
          {"filter", s.filter},
          {"backends", s.backends},
          {"shard_index", s.shard_index},
          {"shard_count", s.shard_count},
          {"size", size_list_text(options.sizes)},
          {"reps", options.reps},
          {"reps_fixed", options.reps_fixed},
          {"threads", options.thread_counts},
          {"seed", options.seed},
          {"quick", options.quick},
          {"time_budget_s", options.time_budget_s},
          {"hang_timeout_s", options.hang_timeout_s},
          {"processes", options.processes},
          {"run_id", options.run_id},
          {"out", out_dir},
          {"budget_started_at", detail::seconds_since_epoch()}};
}

RunOptions options_from_json(const nlohmann::json& json) {
  RunOptions options;
  options.selection.suite = json.at("suite").get<std::string>();
  options.selection.filter = json.at("filter").get<std::string>();
  options.selection.backends = json.at("backends").get<std::vector<std::string>>();
  options.selection.shard_index = json.at("shard_index").get<int>();
  options.selection.shard_count = json.at("shard_count").get<int>();
  options.sizes = parse_size_list(json.at("size").get<std::string>());
  options.reps = json.at("reps").get<int>();
  options.reps_fixed = json.at("reps_fixed").get<bool>();
  const nlohmann::json& threads = json.at("threads");  // a number in records of older runs
  options.thread_counts = threads.is_array() ? threads.get<std::vector<int>>() : std::vector<int>{threads.get<int>()};
  options.threads = options.thread_counts.front();
  options.seed = json.at("seed").get<uint64_t>();
  options.quick = json.at("quick").get<bool>();
  options.time_budget_s = json.at("time_budget_s").get<double>();
  options.hang_timeout_s = json.at("hang_timeout_s").get<double>();
  options.processes = json.value("processes", 1);  // absent from records of older runs
  options.run_id = json.at("run_id").get<std::string>();
  return options;
}

// The largest of the run's thread counts: the one its ceilings are measured at, so that no row at
// fewer threads can beat them.
int most_threads(const RunOptions& options) {
  return *std::max_element(options.thread_counts.begin(), options.thread_counts.end());
}

// ---- the summary on stdout -------------------------------------------------------------------------

void print_summary(const std::vector<ResultRow>& rows) {
  const results::ShownRowNames shown_name(rows);
  size_t width = 40;
  for (const ResultRow& row : rows) width = std::max(width, shown_name(row).size() + 2);
  std::cout << std::left << std::setw(static_cast<int>(width)) << "case" << std::setw(12) << "status" << std::setw(11) << "median_ms"
            << std::setw(6) << "reps" << std::setw(28) << "vs phase0 [95% CI]" << std::setw(28) << "vs reference"
            << std::setw(8) << "syncs" << "ops\n";
  for (const ResultRow& row : rows) {
    std::cout << std::setw(static_cast<int>(width)) << shown_name(row) << std::setw(12) << row.status << std::setw(11)
              << format_table_number(row.median_ms) << std::setw(6) << (row.reps > 0 ? std::to_string(row.reps) : "-")
              << std::setw(28)
              << format_with_interval(row.speedup_vs_phase0, row.speedup_vs_phase0_ci_low,
                                      row.speedup_vs_phase0_ci_high)
              << std::setw(28)
              << format_with_interval(row.speedup_vs_reference, row.speedup_vs_reference_ci_low,
                                      row.speedup_vs_reference_ci_high)
              << std::setw(7) << format_table_number(row.host_syncs_per_iter) << " "
              << format_table_number(row.ops_per_iter) << "\n";
    if (!row.reason.empty()) std::cout << "    " << (row.status == Status::Ok ? "note" : "reason") << ": " << row.reason << "\n";
  }
}

// ---- the run directory ------------------------------------------------------------------------------

// The workloads the run measured, as the registry defines them: what its catalog.json records.
std::vector<std::shared_ptr<const Workload>> measured_workloads(const std::vector<ResultRow>& rows) {
  std::vector<std::shared_ptr<const Workload>> workloads;
  for (const ResultRow& row : rows)
    if (const auto workload = find_workload(row.suite + "/" + row.workload);
        workload && std::find(workloads.begin(), workloads.end(), workload) == workloads.end())
      workloads.push_back(workload);
  return workloads;
}

// How a run ended, for machine.json: nullopt when complete, else why it stopped.
using Ending = std::optional<std::string>;

// ---- the machine's state while the run ran ---------------------------------------------------------

// Read when the command starts: the whole run's other work is measured from here (interference.hpp).
struct RunStart {
  interference::CpuClock clock;
  nlohmann::json load_average;
};
RunStart& run_start() {
  static RunStart start;
  return start;
}

// The stages the workers recorded, each summed over the workers that ran it (a restarted worker
// checks and times what is left): seconds, and other work's cores averaged over those seconds.
nlohmann::json stages_of(const std::vector<nlohmann::json>& recorded) {
  std::map<std::string, std::array<double, 3>> sums;  // seconds, core-seconds of others, of steal
  for (const nlohmann::json& stage : recorded) {
    auto& sum = sums[stage.value("stage", "")];
    const double seconds = stage.value("seconds", 0.0);
    sum[0] += seconds;
    if (stage["others_cores"].is_number()) sum[1] += seconds * stage["others_cores"].get<double>();
    if (stage["steal_cores"].is_number()) sum[2] += seconds * stage["steal_cores"].get<double>();
  }
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [name, sum] : sums)
    stages[name] = {{"seconds", sum[0]},
                    {"others_cores", sum[0] > 0 ? sum[1] / sum[0] : 0.0},
                    {"steal_cores", sum[0] > 0 ? sum[2] / sum[0] : 0.0}};
  return stages;
}

// A repetition whose probe of the CPUs took this many times the run's best met CPUs slowed by
// something the guest does not see (cpu_probe.hpp): the probe's own scatter on quiet CPUs is under
// a tenth, a core shared with another tenant's thread half again as long or more.
constexpr double kSlowerCpusFactor = 1.2;

// machine_state's "cpu_probe": the probe's best and median over the run's repetitions, and the
// share of them at kSlowerCpusFactor times the best or more; null where nothing was probed.
nlohmann::json cpu_probe_state(const detail::RunRecord& record) {
  std::vector<double> probes;
  for (const auto& [key, samples] : record.samples)
    for (const SampleRow& sample : samples)
      if (sample.cpu_probe_us > 0) probes.push_back(sample.cpu_probe_us);
  if (probes.empty()) return nullptr;
  const double best = *std::min_element(probes.begin(), probes.end());
  const auto slower =
      std::count_if(probes.begin(), probes.end(), [&](double us) { return us >= kSlowerCpusFactor * best; });
  return {{"best_us", best},
          {"median_us", stats::median(probes)},
          {"slower_share", static_cast<double>(slower) / static_cast<double>(probes.size())},
          {"slower_factor", kSlowerCpusFactor}};
}

// machine.json's "machine_state": how busy the machine was with other work while the run ran.
nlohmann::json machine_state(const detail::RunRecord& record, const std::vector<ResultRow>& rows) {
  const interference::OtherWork whole =
      interference::other_work_between(run_start().clock, interference::read_cpu_clock());
  const nlohmann::json stages = stages_of(record.other_work);
  const auto cores_of = [](double value) { return std::isnan(value) ? nlohmann::json() : nlohmann::json(value); };
  const double timing_others = stages.contains("timing") ? stages["timing"]["others_cores"].get<double>() : 0.0;
  size_t disturbed = 0;
  for (const ResultRow& row : rows) disturbed += row.disturbed.empty() ? 0 : 1;
  return {{"load_average_start", run_start().load_average},
          {"load_average_end", interference::load_average()},
          {"whole_run",
           {{"seconds", whole.seconds},
            {"others_cores", cores_of(whole.cores)},
            {"steal_cores", cores_of(whole.steal_cores)}}},
          {"stages", stages},
          {"cores_to_itself", timing_others < interference::kContentionCores && disturbed == 0},
          {"disturbed_rows", disturbed},
          {"cpu_probe", cpu_probe_state(record)}};
}

// After the summary: the rows other work disturbed, and what to do about it.
// What the sizes (and thread counts) of the run say about each ladder, as in scaling.csv; nothing
// for a run with one size and one thread count.
void print_scaling_summary(const std::vector<ResultRow>& rows, const catalog::Catalog& catalog) {
  const std::vector<std::string> lines = results::scaling_summary(results::analyze_scaling(rows, &catalog));
  if (lines.empty()) return;
  std::cout << "\nscaling (n: declared work per iteration; " << results::kScalingFileName << "):\n";
  for (const std::string& line : lines) std::cout << "  " << line << "\n";
}

void warn_of_disturbed_rows(const std::vector<ResultRow>& rows) {
  std::vector<const ResultRow*> disturbed;
  for (const ResultRow& row : rows)
    if (!row.disturbed.empty()) disturbed.push_back(&row);
  if (disturbed.empty()) return;
  std::cout << "\nwarning: other work on the machine disturbed " << disturbed.size()
            << (disturbed.size() == 1 ? " row" : " rows") << " (column `disturbed`; compare, the gate and the "
            << "history do not judge their times):\n";
  const results::ShownRowNames shown_name(rows);
  for (const ResultRow* row : disturbed) std::cout << "  " << shown_name(*row) << ": " << row->disturbed << "\n";
  std::cout << "  measure them again on a quieter machine, or with fewer threads than cores (--threads 1), or "
               "with OMP_WAIT_POLICY=passive (threads that wait sleep instead of spinning)\n";
}

nlohmann::json run_machine(const RunOptions& options, const detail::RunRecord& record, const Ending& ending,
                           const detail::AssembledRun& run, const fs::path& directory) {
  nlohmann::json machine = collect_machine_metadata({most_threads(options)});
  if (options.thread_counts.size() > 1) machine["thread_counts"] = options.thread_counts;
  machine["run_id"] = options.run_id;
  machine["results_schema"] = kResultsSchemaVersion;
  if (const Selection& s = options.selection; s.shard_count > 1)  // read by `merge`
    machine["shard"] = {{"index", s.shard_index}, {"count", s.shard_count}};
  if (record.ceilings) machine["roofline"] = *record.ceilings;
  machine["timing"] = {{"reps", options.reps},
                       {"reps_fixed", options.reps_fixed},
                       {"time_budget_s", options.time_budget_s},
                       {"hang_timeout_s", options.hang_timeout_s},
                       {"processes", options.processes}};
  machine["complete"] = !ending.has_value();
  if (ending)
    machine["incomplete"] = {{"reason", *ending},
                             {"cases_planned", run.cases_planned},
                             {"cases_done", run.cases_done},
                             {"resume", "phasebench run --resume " + directory.string()}};
  return machine;
}

// Puts `fresh` where `directory` is, atomically (the two are swapped, then the old one removed):
// a resumed run replaces the incomplete one it finishes, and a reader sees one or the other.
void replace_directory(const fs::path& directory, const fs::path& fresh) {
  if (renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, directory.c_str(), RENAME_EXCHANGE) != 0)
    throw std::runtime_error("cannot put " + fresh.string() + " in place of " + directory.string() + ": " +
                             std::strerror(errno) + " (both are kept)");
  fs::remove_all(fresh);
}

// Writes the run directory from the record; returns run's exit code (0, or 1 when a row failed).
// `replacing`: the directory exists (an incomplete run being resumed) and is replaced.
int write_run(const fs::path& directory, bool replacing, const fs::path& record_dir, const Ending& ending) {
  const detail::RunRecord record = detail::read_run_record(record_dir);
  const RunOptions options = options_from_json(record.arguments);
  detail::AssembledRun run = detail::assemble_run(detail::run_cases(options), record, options);
  const std::optional<roofline::Ceilings> ceilings =
      record.ceilings ? std::optional(roofline::from_json(*record.ceilings)) : std::nullopt;
  catalog::Catalog catalog = catalog::build(measured_workloads(run.rows), options.sizes);
  results::RunFiles files{std::move(run.rows), std::move(run.samples),
                          run_machine(options, record, ending, run, directory), std::move(catalog),
                          detail::benchmark_json(run.benchmark_entries), {}};
  if (ending) files.resume_record = record_dir;
  const results::IndexedSamples samples = results::index_samples(files.samples, files.rows, "the run's samples");
  results::Derivation derivation{&samples.wall, &files.catalog, ceilings};
  derivation.others_cores = &samples.others_cores;
  derivation.rep_ms = &samples.rep_ms;
  derivation.cores = files.machine["cpu"].value("logical_cores", 0);
  if (const nlohmann::json stages = stages_of(record.other_work); stages.contains("timing"))
    derivation.timing_stage_cores = stages["timing"]["others_cores"].get<double>();
  results::derive_columns(files.rows, derivation);
  files.machine["machine_state"] = machine_state(record, files.rows);
  const fs::path target = replacing ? fs::path(directory.string() + ".resumed-" + std::to_string(getpid())) : directory;
  results::write_run_directory(target, files);
  if (replacing) replace_directory(directory, target);
  print_summary(files.rows);
  print_claims_view(std::cout, files.rows, files.catalog);
  print_scaling_summary(files.rows, files.catalog);
  warn_of_disturbed_rows(files.rows);
  std::cout << "\nresults: " << directory.string() << "\n";  // a line of its own: ci/main.sh reads it
  if (ending)
    std::cout << "incomplete: " << *ending << "; " << run.cases_done << " of " << run.cases_planned
              << " cases done; resume with: phasebench run --resume " << directory.string() << "\n";
  for (const ResultRow& row : files.rows)
    if (is_failure(row.status)) return 1;
  return 0;
}

// ---- the worker ---------------------------------------------------------------------------------

// A worker's exit code when it timed its share of the rounds and leaves the rest to a fresh one.
constexpr int kWorkerHandsOver = 64;

// Everything the record does not hold yet of the cases at `threads`, journaling each step before
// it begins (with --processes, this worker's share of it).
detail::WorkerOutcome work(const fs::path& scratch, bool journaled, int threads) {
  const fs::path record_dir = scratch / kRecord;
  const detail::RunRecord previous = detail::read_run_record(record_dir);
  RunOptions options = options_from_json(previous.arguments);
  options.threads = threads;
  detail::RunRecorder recorder(record_dir);
  if (!previous.ceilings)  // the CPU's and every GPU's, measured (or cached) before any variant runs
    recorder.ceilings(roofline::to_json(roofline::machine_ceilings(most_threads(options), std::cerr)));
  std::ofstream journal;
  if (journaled) journal.open(scratch / kJournal, std::ios::app);
  detail::RunHooks hooks;
  hooks.budget_started_at = previous.arguments.at("budget_started_at").get<double>();
  hooks.starting_step = [&](const std::string& row_name, double limit_seconds) {
    if (journaled) journal << row_name << '\t' << limit_seconds << std::endl;  // flushed: the supervisor reads it
    detail::inject_faults(row_name);
  };
  return detail::execute_run(options, previous, recorder, hooks);
}

// ---- the supervisor ----------------------------------------------------------------------------

class Supervisor {
 public:
  Supervisor(const fs::path& directory, bool resuming) : directory_(directory), resuming_(resuming) {}

  fs::path record_dir() const { return scratch_.path() / kRecord; }

  // For each worker's thread count in turn (worker_counts), starts workers until one gets through
  // every case of that worker; each goes on from the record. A worker that hands over (--processes)
  // is followed by a fresh one.
  int run(const std::vector<int>& thread_counts) {
    worker_environment::prepare_for_workers();
    for (const int threads : thread_counts)
      for (;;) {
        std::ofstream(journal(), std::ios::trunc).close();  // a new worker's start is no case's step
        detail::WorkerProcess worker({"phasebench", "run", "--worker-dir", scratch_.path().string(), "--worker-threads",
                                      std::to_string(threads)});
        const detail::WorkerExit exit = worker.wait(journal().string(), stop_);
        using Kind = detail::WorkerExit::Kind;
        if (exit.kind == Kind::Stopped) return stopped(exit.code);
        if (exit.kind == Kind::Exited && exit.code == kWorkerHandsOver) continue;
        if (exit.kind == Kind::Exited && exit.code != 0) return finished(exit.code);
        if (exit.kind == Kind::Exited) break;  // every case at this count is done
        if (const auto given_up = record_ending(exit)) {
          write_run(directory_, resuming_, record_dir(), given_up);
          return 1;
        }
      }
    return finished(0);
  }

 private:
  fs::path journal() const { return scratch_.path() / kJournal; }

  // The case the journal names becomes ERROR. Returns why the run gives up instead when the worker
  // ended outside any case (starting up, or between cases): a new one would end the same way.
  Ending record_ending(const detail::WorkerExit& exit) {
    const std::string reason = *detail::ending_reason(exit);
    const std::string row = detail::last_journal_step(journal().string()).name;
    const detail::RunRecord record = detail::read_run_record(record_dir());
    if (row.empty() || record.errors.count(row))
      return "the worker " + reason + " outside any case" + (row.empty() ? "" : " (after " + row + ")");
    detail::RunRecorder(record_dir()).error(row, reason);
    std::cerr << "phasebench: the worker " << reason << " in " << row << "; going on without that case\n";
    return std::nullopt;
  }

  int finished(int worker_code) {
    if (worker_code == 0) return write_run(directory_, resuming_, record_dir(), std::nullopt);
    if (worker_code == 2) return 2;  // bad input, found by the worker (its message is on stderr)
    const std::string why = "the worker exited with code " + std::to_string(worker_code);
    std::cerr << "phasebench: " << why << "\n";
    write_run(directory_, resuming_, record_dir(), why);
    return worker_code;
  }

  int stopped(int signal) {
    std::cerr << "phasebench: run stopped by " << detail::signal_name(signal)
              << "; writing what was finished\n";
    write_run(directory_, resuming_, record_dir(), "stopped by " + detail::signal_name(signal));
    return 128 + signal;
  }

  const detail::StopSignals stop_;  // first: a stop from here on still removes the scratch directory
  const detail::ScratchDirectory scratch_{"phasebench-run"};
  fs::path directory_;
  bool resuming_;
};

// The thread counts whose worker has cases (runs_in_worker): without a backend whose pool is fixed
// when it starts, the first count's worker runs every count.
std::vector<int> worker_counts(const RunOptions& options) {
  const std::vector<Case> cases = detail::run_cases(options);
  std::vector<int> counts;
  for (const int threads : options.thread_counts)
    if (std::any_of(cases.begin(), cases.end(),
                    [&](const Case& c) { return runs_in_worker(c, options.thread_counts, threads); }))
      counts.push_back(threads);
  if (counts.empty()) counts.push_back(options.thread_counts.front());  // a shard without cases still writes its run
  return counts;
}

// The options of the incomplete run in `directory`, whose record the supervisor takes over.
RunOptions take_over_resume_record(const fs::path& directory, const fs::path& record_dir) {
  const results::RunData run = results::load_run(directory.string());
  if (!run.incomplete())
    throw InputError(directory.string() + " is a complete run: there is nothing to resume");
  if (!fs::is_directory(directory / kResume))
    throw InputError(directory.string() + " has no resume/ record (written by an older phasebench, or removed): "
                     "it cannot be resumed");
  fs::copy(directory / kResume, record_dir, fs::copy_options::recursive);
  detail::RunRecord record = detail::read_run_record(record_dir);
  if (record.arguments.is_null()) throw InputError(directory.string() + "/resume has no arguments.json");
  record.arguments["budget_started_at"] = detail::seconds_since_epoch();  // the budget starts again
  detail::RunRecorder(record_dir).arguments(record.arguments);
  return options_from_json(record.arguments);
}

void make_parent_directory(const fs::path& directory) {
  std::error_code error;
  if (directory.has_parent_path()) fs::create_directories(directory.parent_path(), error);
  if (error)
    throw InputError("cannot create the directory " + directory.parent_path().string() + " for --out: " +
                     error.message());
}

}  // namespace

int run(RunCommand command) {
  run_start() = {interference::read_cpu_clock(), interference::load_average()};
  if (!command.worker_dir.empty())
    return work(command.worker_dir, true, command.worker_threads) == detail::WorkerOutcome::HandedOver
               ? kWorkerHandsOver
               : 0;
  const bool resuming = !command.resume_dir.empty();
  if (!resuming) {
    if (command.options.run_id.empty()) command.options.run_id = make_run_id();
    if (!command.out_dir.empty() && fs::exists(command.out_dir))
      throw InputError("--out " + command.out_dir + " already exists; phasebench never overwrites results");
    for (const SizeClass size : command.options.sizes)
      plan_cases(command.options.selection, size);  // bad selections and sizes fail here, exit 2
    if (command.out_dir.empty()) command.out_dir = fresh_run_directory("results/runs", command.options.run_id).string();
    make_parent_directory(command.out_dir);
  }
  const fs::path directory = resuming ? command.resume_dir : command.out_dir;
  Supervisor supervisor(directory, resuming);
  const RunOptions options = resuming ? take_over_resume_record(directory, supervisor.record_dir()) : command.options;
  if (!resuming) detail::RunRecorder(supervisor.record_dir()).arguments(options_json(options, command.out_dir));
  if (std::getenv("PHASEBENCH_NO_ISOLATION")) {  // for debugging: everything in this process, one thread count
    const fs::path scratch = supervisor.record_dir().parent_path();
    while (work(scratch, false, options.thread_counts.front()) == detail::WorkerOutcome::HandedOver) {
    }
    return write_run(directory, resuming, supervisor.record_dir(), std::nullopt);
  }
  return supervisor.run(worker_counts(options));
}

}  // namespace pb::commands

// `verify`: the supervisor, its worker, and the summary (verify_command.hpp).
//
// The worker is this program again, with the same arguments and --worker-dir: a scratch
// directory holding its journal (a line "<check>\t<limit seconds>" before each check, watched by
// WorkerProcess for the time limit) and the results file (one line per finished check). When the
// worker dies of a signal or is timed out, the supervisor appends an ERROR line for the check the
// journal names to the results file and starts a worker again, which skips every check the file
// already holds.

#include "commands/verify_command.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "common/number_text.hpp"
#include "engine/fault_injection.hpp"
#include "phasebench/errors.hpp"
#include "results/junit.hpp"
#include "engine/worker_environment.hpp"
#include "engine/worker_process.hpp"

namespace pb::commands {
namespace fs = std::filesystem;
namespace {

constexpr const char* kCheckJournal = "journal";
constexpr const char* kResults = "results";

// ---- lines ---------------------------------------------------------------------------------------

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return text;
}

// "<row>\t<seed>\t<status>\t<seconds>\t<detail>"
std::string record_of(const VerifyLine& line) {
  return one_line(line.row_name) + '\t' + std::to_string(line.seed) + '\t' + to_string(line.status) + '\t' +
         format_csv_number(line.seconds) + '\t' + one_line(line.detail) + '\n';
}

std::optional<VerifyLine> parse_record(const std::string& record) {
  std::vector<std::string> fields;
  std::istringstream in(record);
  for (std::string field; fields.size() < 5 && std::getline(in, field, '\t');) fields.push_back(field);
  const std::optional<Status> status = fields.size() == 5 ? parse_status(fields[2]) : std::nullopt;
  if (!status) return std::nullopt;  // a line a dying worker left unfinished
  return VerifyLine{fields[0], std::strtoull(fields[1].c_str(), nullptr, 10), *status, fields[4],
                    std::strtod(fields[3].c_str(), nullptr)};
}

std::vector<VerifyLine> read_results(const fs::path& path) {
  std::vector<VerifyLine> lines;
  std::ifstream in(path);
  for (std::string record; std::getline(in, record);)
    if (const auto line = parse_record(record)) lines.push_back(*line);
  return lines;
}

void append_result(const fs::path& path, const VerifyLine& line) {
  std::ofstream(path, std::ios::app) << record_of(line);  // closed, so flushed, before the next check
}

void print_line(const VerifyLine& line) {
  std::cerr << line.status << "  " << line.row_name << "  seed " << line.seed << "  " << line.detail << "\n";
}

int print_summary(const std::vector<VerifyLine>& lines) {
  int passed = 0, failed = 0, caught = 0, skipped = 0;
  for (const VerifyLine& line : lines) {
    if (line.status == Status::Ok) ++passed;
    else if (is_failure(line.status)) ++failed;
    else if (line.status == Status::Caught) ++caught;
    else ++skipped;
  }
  std::cout << "\nverify: " << passed << " passed, " << failed << " failed, ";
  if (caught) std::cout << caught << " caught (known bugs reproduced on purpose, found by the check), ";
  std::cout << skipped << " skipped or unsupported\n";
  for (const VerifyLine& line : lines)
    if (is_failure(line.status))
      std::cout << "  " << line.status << " " << line.row_name << " seed " << line.seed << ": " << line.detail << "\n";
  return failed ? 1 : 0;
}

// ---- JUnit --------------------------------------------------------------------------------------

// A check as a JUnit case: FAIL and MISTRUSTED fail with the measured error against the tolerance
// (the line's detail), ERROR (a throw, a crash, a time-out) is an error, SKIPPED and UNSUPPORTED are
// skipped with their reason; OK and CAUGHT pass, their detail kept as the case's output.
junit::TestCase junit_case(const VerifyLine& line) {
  const junit::RowParts parts = junit::row_parts(line.row_name);
  junit::TestCase c =
      junit::test_case(parts.classname, parts.name + " seed " + std::to_string(line.seed), line.seconds);
  c.type = to_string(line.status);
  if (line.status == Status::Error)
    c.outcome = junit::Outcome::Error;
  else if (is_failure(line.status))
    c.outcome = junit::Outcome::Failed;
  else if (line.status == Status::Skipped || line.status == Status::Unsupported)
    c.outcome = junit::Outcome::Skipped;
  if (c.outcome == junit::Outcome::Passed)
    c.output = c.type + (line.detail.empty() ? "" : ": " + line.detail);
  else
    c.message = c.outcome == junit::Outcome::Skipped ? c.type + ": " + line.detail : line.detail;
  return c;
}

// The summary on the terminal and, when asked for, the JUnit report; the exit code of the checks.
int sum_up(const std::vector<VerifyLine>& lines, const std::string& junit_path) {
  const int code = print_summary(lines);
  if (junit_path.empty()) return code;
  junit::Report report("phasebench verify");
  for (const VerifyLine& line : lines) report.add(junit::row_parts(line.row_name).suite, junit_case(line));
  junit::write(report, junit_path, "--junit");
  return code;
}

std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << seconds;
  return text.str();
}

// ---- in this process: the worker, or everything with PHASEBENCH_NO_ISOLATION ---------------------

int verify_in_process(VerifyCommand command) {
  command.options.starting = [](const VerifyLine& check) { detail::inject_faults(check.row_name); };
  command.options.finished = print_line;
  return sum_up(execute_verify(command.options), command.junit);
}

// Checks what earlier workers have not, journaling each check before it begins. The supervisor
// sums up.
int run_worker(VerifyCommand command) {
  const fs::path dir(command.worker_dir);
  for (const VerifyLine& line : read_results(dir / kResults)) command.options.done.insert(line.check_name());
  std::ofstream journal(dir / kCheckJournal, std::ios::app);
  const std::string limit = seconds_text(command.hang_timeout_s);
  command.options.starting = [&](const VerifyLine& check) {
    journal << check.check_name() << '\t' << limit << std::endl;  // flushed: the supervisor reads it
    detail::inject_faults(check.row_name);
  };
  command.options.finished = [&](const VerifyLine& line) {
    print_line(line);
    append_result(dir / kResults, line);
  };
  execute_verify(command.options);
  return 0;
}

// ---- the supervisor ------------------------------------------------------------------------------

// "<row> seed <n>" (VerifyLine::check_name()) back into its row and seed.
VerifyLine check_named(const std::string& name) {
  const std::string separator = " seed ";
  const size_t at = name.rfind(separator);
  if (at == std::string::npos) return {name, 0, Status::Error, ""};
  return {name.substr(0, at), std::strtoull(name.c_str() + at + separator.size(), nullptr, 10), Status::Error, ""};
}

bool is_finished(const std::string& check, const fs::path& results) {
  for (const VerifyLine& line : read_results(results))
    if (line.check_name() == check) return true;
  return false;
}

class VerifySupervisor {
 public:
  VerifySupervisor(int argc, char** argv, std::string junit) : arguments_(argv, argv + argc), junit_(std::move(junit)) {
    arguments_.insert(arguments_.end(), {"--worker-dir", scratch_.path().string()});
  }

  // Starts workers until one gets through every check, each without the checks before it.
  int run() {
    worker_environment::prepare_for_workers();  // the checks see what a run's worker sees
    for (;;) {
      // Emptied, so that the new worker's start is not timed as the last worker's last check.
      std::ofstream(journal(), std::ios::trunc).close();
      detail::WorkerProcess worker(arguments_);
      const detail::WorkerExit exit = worker.wait(journal().string(), stop_);
      if (exit.kind == detail::WorkerExit::Kind::Stopped) return stopped(exit.code);
      if (exit.kind == detail::WorkerExit::Kind::Exited) return finished(exit.code);
      if (!record_ending(exit)) {
        sum_up(read_results(results()), junit_);
        return 1;
      }
    }
  }

 private:
  fs::path journal() const { return scratch_.path() / kCheckJournal; }
  fs::path results() const { return scratch_.path() / kResults; }

  // The check the journal names becomes an ERROR line. False when the worker ended outside any
  // check (starting up, or after its last one): restarting it would end the same way.
  bool record_ending(const detail::WorkerExit& exit) {
    const std::string reason = *detail::ending_reason(exit);
    const std::string check = detail::last_journal_step(journal().string()).name;
    if (check.empty() || is_finished(check, results())) {
      std::cerr << "phasebench: the verify worker " << reason << " outside any check"
                << (check.empty() ? "" : " (after " + check + ")") << "; giving up\n";
      return false;
    }
    VerifyLine line = check_named(check);
    line.detail = reason;
    append_result(results(), line);
    print_line(line);
    std::cerr << "phasebench: the verify worker " << reason << " in " << check << "; going on without it\n";
    return true;
  }

  // A worker that exits has made every check, or failed on its own (its message is on stderr):
  // bad input (2) or a bug (3), never a variant's doing.
  int finished(int worker_code) {
    if (worker_code == 0) return sum_up(read_results(results()), junit_);
    std::cerr << "phasebench: the verify worker exited with code " << worker_code << " before every check was made\n";
    return worker_code;
  }

  int stopped(int signal) {
    std::cerr << "phasebench: verify stopped by " << detail::signal_name(signal) << "; the checks made so far:\n";
    sum_up(read_results(results()), junit_);
    return 128 + signal;
  }

  const detail::StopSignals stop_;  // first: a stop from here on still removes the scratch directory
  const detail::ScratchDirectory scratch_{"phasebench-verify"};
  std::vector<std::string> arguments_;
  std::string junit_;
};

// "geometry/christoffel random-3: B=5 N=37", one line per selected workload and random size, so
// that a failure at a random shape can be rerun alone with --size random-3 --filter ....
void print_random_shapes(const Selection& selection, const std::vector<SizeClass>& sizes) {
  for (const SizeClass size : sizes) {
    if (!size.is_random()) continue;
    std::vector<const Workload*> shown;
    for (const Case& c : plan_cases(selection, size)) {
      if (std::find(shown.begin(), shown.end(), c.workload.get()) != shown.end()) continue;
      shown.push_back(c.workload.get());
      std::cout << c.workload->full_name() << " " << to_string(size) << ": " << c.workload->shape(size) << "\n";
    }
  }
  std::cout << std::flush;
}

}  // namespace

int verify(VerifyCommand command, int argc, char** argv) {
  const std::vector<SizeClass> sizes = command.options.sizes.empty() ? all_sizes() : command.options.sizes;
  for (SizeClass size : sizes) plan_cases(command.options.selection, size);  // bad selections fail here, exit 2
  if (!command.worker_dir.empty()) return run_worker(std::move(command));
  if (!command.junit.empty()) junit::check_writable(command.junit, "--junit");
  print_random_shapes(command.options.selection, sizes);
  if (std::getenv("PHASEBENCH_NO_ISOLATION")) return verify_in_process(std::move(command));
  return VerifySupervisor(argc, argv, command.junit).run();
}

}  // namespace pb::commands

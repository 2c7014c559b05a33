#include "engine/worker_process.hpp"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "phasebench/errors.hpp"

namespace pb::detail {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t g_stop_signal = 0;
struct sigaction g_previous[3];

bool is_stop_signal(int signal) {
  return std::find(std::begin(kStopSignals), std::end(kStopSignals), signal) != std::end(kStopSignals);
}

extern "C" void remember_stop_signal(int signal) {
  if (g_stop_signal == 0) g_stop_signal = signal;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

off_t file_size(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 ? info.st_size : -1;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void become_worker(pid_t supervisor, char** argv) {
  setpgid(0, 0);                      // terminal signals reach the supervisor only
  prctl(PR_SET_PDEATHSIG, SIGKILL);   // the supervisor's death, for any reason, ends the worker
  if (getppid() != supervisor) _exit(127);  // it died before the line above took effect
  for (int signal : kStopSignals) std::signal(signal, SIG_DFL);
  execv("/proc/self/exe", argv);
  _exit(127);
}

}  // namespace

ScratchDirectory::ScratchDirectory(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    throw InputError("cannot create a scratch directory " + pattern + ": " + std::strerror(errno) +
                     " (set TMPDIR to a writable directory)");
  path_ = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string signal_name(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return abbreviation ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal);
}

std::optional<std::string> ending_reason(const WorkerExit& exit) {
  if (exit.kind == WorkerExit::Kind::Signaled)
    return std::string("crashed: ") + strsignal(exit.code) + " (signal " + std::to_string(exit.code) + ")";
  if (exit.kind == WorkerExit::Kind::TimedOut) {
    std::ostringstream text;
    text << "timed out after " << exit.seconds << " s";
    return text.str();
  }
  return std::nullopt;
}

StopSignals::StopSignals() {
  g_stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = remember_stop_signal;
  action.sa_flags = SA_RESTART;  // a read or write under way goes on; the wait loop polls the flag
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &action, &g_previous[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &g_previous[i], nullptr);
}

int StopSignals::stop_signal() const { return g_stop_signal; }

JournalStep last_journal_step(const std::string& journal_path) {
  // Only the tail: the journal grows by a line per step, thousands in a run.
  std::ifstream in(journal_path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : 0;
  in.seekg(std::max<std::streamoff>(0, size - 4096));
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  JournalStep step;
  const auto tab = last.find('\t');
  step.name = last.substr(0, tab);
  if (tab != std::string::npos) step.limit_seconds = std::atof(last.c_str() + tab + 1);
  return step;
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& arguments) {
  std::vector<std::string> copy = arguments;
  std::vector<char*> argv;
  for (std::string& argument : copy) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const pid_t supervisor = getpid();
  pid_ = fork();
  if (pid_ == 0) become_worker(supervisor, argv.data());
  if (pid_ > 0) setpgid(pid_, pid_);  // also here: whichever of the two runs first
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0) kill_and_reap();
}

void WorkerProcess::kill_and_reap() {
  ::kill(-pid_, SIGKILL);  // the whole group: a variant may have started processes of its own
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

WorkerExit WorkerProcess::wait(const std::string& journal_path, const StopSignals& stop) {
  if (pid_ <= 0) return {WorkerExit::Kind::Exited, 127};
  off_t journal_size = -1;
  double step_started = seconds_now(), step_limit = 0;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      pid_ = -1;
      // A stop signal that ended the worker came from outside (terminal signals reach the
      // supervisor alone): a stop of the whole job, such as Slurm's scancel or a container's stop,
      // signals every process, and the worker may die before the supervisor's handler runs. Its
      // case did not crash and runs again on resume.
      if (WIFSIGNALED(status) && is_stop_signal(WTERMSIG(status))) return {WorkerExit::Kind::Stopped, WTERMSIG(status)};
      if (WIFSIGNALED(status)) return {WorkerExit::Kind::Signaled, WTERMSIG(status)};
      return {WorkerExit::Kind::Exited, WIFEXITED(status) ? WEXITSTATUS(status) : 1};
    }
    if (const int signal = stop.stop_signal()) {
      kill_and_reap();
      return {WorkerExit::Kind::Stopped, signal};
    }
    if (!journal_path.empty()) {
      const off_t size = file_size(journal_path);
      if (size != journal_size) {  // a new step began
        journal_size = size;
        step_started = seconds_now();
        step_limit = last_journal_step(journal_path).limit_seconds;
      } else if (step_limit > 0 && seconds_now() - step_started > step_limit) {
        kill_and_reap();
        WorkerExit exit{WorkerExit::Kind::TimedOut, 0};
        exit.seconds = step_limit;
        return exit;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace pb::detail

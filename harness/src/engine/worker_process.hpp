#pragma once
// A supervised worker: this same program started again in a child process, so that a variant that
// crashes, hangs or is stopped takes only the worker down, never the results gathered so far.
// Used by `run` and `verify`. Internal to the harness.
//
// The worker gets its own process group (a Ctrl-C on the terminal reaches the supervisor only,
// which decides what to keep) and a parent-death signal (it is killed with SIGKILL when the
// supervisor dies for any reason, SIGKILL included), so no worker is ever left behind as an orphan.

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pb::detail {

/// SIGINT, SIGTERM and SIGHUP, caught for the lifetime of the object: stop_signal() says which
/// arrived first (0 while none has). The previous handlers come back on destruction.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int stop_signal() const;
};

/// A fresh directory under the temp directory ("<prefix>-XXXXXX"), removed with everything in it
/// on every way out of its owner. Throws InputError when it cannot be made.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& prefix);
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// "SIGTERM" for SIGTERM.
std::string signal_name(int signal);

/// How a worker ended.
struct WorkerExit {
  enum class Kind { Exited, Signaled, TimedOut, Stopped } kind;
  int code = 0;      // the exit code (Exited), the signal that killed it (Signaled), the stop signal (Stopped)
  double seconds = 0;  // TimedOut: how long the step had run
};
/// What a crash or time-out is written as in the case's row: "crashed: Segmentation fault
/// (signal 11)", "timed out after 300 s"; nullopt for a worker that exited or was stopped.
std::optional<std::string> ending_reason(const WorkerExit& exit);

/// The step the worker is in, as its journal's last line says: "<name>\t<limit seconds>".
struct JournalStep {
  std::string name;
  double limit_seconds = 0;  // 0: no limit
};
JournalStep last_journal_step(const std::string& journal_path);

class WorkerProcess {
 public:
  /// Starts /proc/self/exe with `arguments` (arguments[0] is the program name).
  explicit WorkerProcess(const std::vector<std::string>& arguments);
  ~WorkerProcess();  // kills the worker if it still runs
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  /// Waits for the worker to end. While it runs, watches `journal_path` (when not empty): a step
  /// that runs past its limit gets the worker killed (TimedOut); a stop signal gets it killed
  /// (Stopped) within a fraction of a second. A worker ended by a stop signal (SIGINT, SIGTERM,
  /// SIGHUP) sent to it from outside is Stopped as well, not Signaled.
  WorkerExit wait(const std::string& journal_path, const StopSignals& stop);
  pid_t pid() const { return pid_; }

 private:
  void kill_and_reap();
  pid_t pid_ = -1;
};

}  // namespace pb::detail

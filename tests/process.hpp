#pragma once
// Running the phasebench executable from a test: exit code and everything it printed; or in the
// background, to stop it and watch what it leaves behind.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "phasebench/cli.hpp"

extern char** environ;

namespace pb::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Notes the running test as one that starts processes, in the file PHASEBENCH_TEST_SUBPROCESS_LOG
/// names (one "Suite.Name" line each time; nothing when unset). ci/test.sh keeps this list, and
/// ci/sanitize.sh leaves these tests out of its instrumented unit tests: a process of the
/// instrumented build takes seconds to start, and those tests start hundreds.
inline void note_test_starts_a_process() {
  const char* log = std::getenv("PHASEBENCH_TEST_SUBPROCESS_LOG");
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!log || !*log || !test) return;
  const std::string line = std::string(test->test_suite_name()) + "." + test->name() + "\n";
  // One write of one short line to a file opened for appending: whole, even when ctest runs tests
  // side by side.
  const int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t written = write(fd, line.data(), line.size());  // a lost line: a slower stage
  close(fd);
}

/// Runs a shell command line (add " 2>&1" to capture stderr too).
inline ProcessResult run_command(const std::string& command) {
  note_test_starts_a_process();
  ProcessResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

inline ProcessResult run_phasebench(const std::string& arguments, const std::string& environment = "") {
  return run_command(environment + " " + PHASEBENCH_EXECUTABLE + " " + arguments + " 2>&1");
}

/// The environment for a phasebench that crashes on purpose (PHASEBENCH_INJECT_CRASH): under
/// AddressSanitizer (ci/sanitize.sh) the SIGSEGV would be caught by ASan's own handler, reported,
/// and turned into an abort; handle_segv=0 lets it arrive as the segmentation fault the isolation
/// tests are about. Ignored by a build without the sanitizer.
inline std::string deliberate_crash_environment() {
  const char* options = std::getenv("ASAN_OPTIONS");
  return std::string("ASAN_OPTIONS=") + (options && *options ? std::string(options) + ":" : "") + "handle_segv=0";
}

/// Whether this build has the backend (configure turns backends on and off): tests of behaviour
/// that needs one skip without it rather than fail. Asked of the executable once per backend.
inline bool backend_built(const std::string& backend) {
  static std::map<std::string, bool> built;
  const auto known = built.find(backend);
  if (known != built.end()) return known->second;
  return built[backend] = run_phasebench("list --backend " + backend).exit_code == 0;
}

/// The command line run in this process (run_cli, as main() calls it), its output captured.
/// Arguments are split at spaces (paths with spaces do not pass).
inline ProcessResult run_in_process(const std::string& arguments, CliMode mode = CliMode::Execute) {
  std::vector<std::string> words{"phasebench"};
  std::istringstream in(arguments);
  for (std::string word; in >> word;) words.push_back(word);
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  ProcessResult result;
  result.exit_code = run_cli(static_cast<int>(words.size()), argv.data(), mode);
  result.output = ::testing::internal::GetCapturedStdout();
  result.output += ::testing::internal::GetCapturedStderr();
  return result;
}

/// A fresh, not yet existing path under the temp directory.
inline std::filesystem::path fresh_temp_path(const std::string& name) {
  static int counter = 0;
  const auto path = std::filesystem::temp_directory_path() /
                    ("phasebench-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + name);
  std::filesystem::remove_all(path);
  return path;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A temp directory of the test's own (for TMPDIR), so that scratch directories can be seen to go.
inline std::filesystem::path empty_temp_directory() {
  const std::filesystem::path dir = fresh_temp_path("tmpdir");
  std::filesystem::create_directories(dir);
  return dir;
}

inline bool holds_nothing(const std::filesystem::path& dir) {
  return std::filesystem::directory_iterator(dir) == std::filesystem::directory_iterator();
}

/// phasebench started in the background with `settings` ("NAME=value") added to the environment,
/// its stdout and stderr into `output`.
inline pid_t start_phasebench(const std::vector<std::string>& arguments, const std::vector<std::string>& settings,
                              const std::filesystem::path& output) {
  note_test_starts_a_process();
  std::vector<std::string> environment(settings);
  for (char** variable = environ; *variable; ++variable) environment.emplace_back(*variable);
  std::vector<std::string> argv{PHASEBENCH_EXECUTABLE};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const auto raw = [](std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return pointers;
  };
  std::vector<char*> raw_argv = raw(argv), raw_environment = raw(environment);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  posix_spawn(&pid, raw_argv[0], &actions, nullptr, raw_argv.data(), raw_environment.data());
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

/// The first child process of `parent` (from /proc/<pid>/stat, whose fourth field is the parent).
inline pid_t child_of(pid_t parent) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    std::istringstream fields(line.substr(line.rfind(')') + 2));  // the name may hold spaces
    char state = 0;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid == parent) return std::stoi(entry.path().filename().string());
  }
  return -1;
}

/// Whether `condition` holds within `limit` (polled every 20 ms).
template <class Condition>
bool within(std::chrono::duration<double> limit, Condition condition) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

/// Whether process `pid` is gone (not even a zombie of ours).
inline bool process_gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace pb::testing

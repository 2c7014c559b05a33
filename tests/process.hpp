#pragma once
// Running the phasebench executable from a test: exit code and everything it printed.

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace pb::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Runs a shell command line (add " 2>&1" to capture stderr too).
inline ProcessResult run_command(const std::string& command) {
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

/// Whether this build has the backend (configure turns backends on and off): tests of behaviour
/// that needs one skip without it rather than fail.
inline bool backend_built(const std::string& backend) {
  return run_phasebench("list --backend " + backend).exit_code == 0;
}

/// A fresh, not yet existing path under the temp directory.
inline std::filesystem::path fresh_temp_path(const std::string& name) {
  static int counter = 0;
  const auto path = std::filesystem::temp_directory_path() /
                    ("phasebench-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + name);
  std::filesystem::remove_all(path);
  return path;
}

}  // namespace pb::testing

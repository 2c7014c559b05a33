// libFuzzer harness: the command line, parsed and settled but never run (CliMode::ParseOnly).
// The input is the arguments separated by NUL bytes. Exit codes 0 (parsed, or --help) and 2
// (refused) are the outcomes allowed; an exception or a crash is a finding.

#include <cstdlib>
#include <string>
#include <vector>

#include "phasebench/cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words{"phasebench"};
  std::string word;
  for (size_t i = 0; i < size && words.size() < 24; ++i) {
    if (data[i] == '\0') {
      words.push_back(word);
      word.clear();
    } else {
      word += static_cast<char>(data[i]);
    }
  }
  if (!word.empty() || size == 0) words.push_back(word);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int code = pb::run_cli(static_cast<int>(words.size()), argv.data(), pb::CliMode::ParseOnly);
  if (code != 0 && code != 2) std::abort();  // parsing alone can neither pass a check nor fail one
  return 0;
}

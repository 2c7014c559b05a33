// phasebench: the command line. See README.md and `phasebench --help`.

#include <exception>
#include <iostream>

#include "phasebench/cli.hpp"
#include "phasebench/runner.hpp"

int main(int argc, char** argv) {
  int code = 2;
  try {
    code = pb::run_cli(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "phasebench: internal error: " << error.what() << "\n";
    code = 3;
  }
  // A process that used no backend ends without the libraries' exit-time teardown (runner.hpp).
  if (pb::finalize_backends() == 0) pb::exit_without_library_teardown(code);
  return code;
}

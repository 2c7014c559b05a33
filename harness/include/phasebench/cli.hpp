#pragma once
// The command line's entry point (harness/src/commands/cli.cpp; README "Command line").

namespace pb {

enum class CliMode {
  Execute,    // parse, then run the chosen command
  ParseOnly,  // parse and settle every option, run nothing (the command-line fuzzer's entry)
};

/// The exit code: 0 all well, 1 a check failed or a regression was found, 2 bad usage or bad
/// input (with a message on stderr). Errors other than bad input propagate as exceptions.
int run_cli(int argc, char** argv, CliMode mode = CliMode::Execute);

}  // namespace pb

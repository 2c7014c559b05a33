#pragma once
// Checks that tests of size texts share: a --size list refused with a message naming the item, and
// a command line's exit code when only parsed.

#include <gtest/gtest.h>

#include <string>

#include "phasebench/cli.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/size.hpp"
#include "process.hpp"

namespace pb::testing {

/// parse_size_list(list) throws InputError, and its message contains `mentions`.
inline void expect_size_list_refused(const std::string& list, const std::string& mentions) {
  try {
    parse_size_list(list);
    ADD_FAILURE() << "'" << list << "' was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(mentions), std::string::npos)
        << "'" << list << "': " << error.what() << " should mention " << mentions;
  }
}

/// The exit code of `arguments` parsed and validated, nothing run.
inline int parse_only(const std::string& arguments) { return run_in_process(arguments, CliMode::ParseOnly).exit_code; }

}  // namespace pb::testing

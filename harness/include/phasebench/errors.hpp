#pragma once
// Bad usage or bad input: the command line turns this into a message and exit code 2.

#include <stdexcept>
#include <string>

namespace pb {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace pb

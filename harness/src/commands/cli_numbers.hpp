#pragma once
// Numeric options parsed strictly. CLI11 alone reads "010" as octal 8 and "0x10" as 16, lets a
// "nan" through every Range check (nan < min and nan > max are both false) and saturates an
// unsigned value past its range; here a number is decimal, whole where the option counts
// something, finite, in its range, and nothing follows it. Anything else is a usage error (exit
// 2) naming the option, the text and the range.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace pb {

/// Adds `name` to `command`, storing into `value` only a number in [min, max].
template <typename Number>
CLI::Option* add_number_option(CLI::App& command, const std::string& name, Number& value, const std::string& help,
                               Number min, Number max);

/// This machine's logical cores (at least 1): the default thread count, and what "max" names.
int default_threads();

/// Adds `name` to `command`, storing its comma-separated thread counts into `counts`: each a whole
/// number from 1 to 4096 or "max" (default_threads()), none twice.
CLI::Option* add_thread_counts_option(CLI::App& command, const std::string& name, std::vector<int>& counts,
                                      const std::string& help);

extern template CLI::Option* add_number_option<int>(CLI::App&, const std::string&, int&, const std::string&, int, int);
extern template CLI::Option* add_number_option<double>(CLI::App&, const std::string&, double&, const std::string&,
                                                       double, double);
extern template CLI::Option* add_number_option<uint64_t>(CLI::App&, const std::string&, uint64_t&, const std::string&,
                                                         uint64_t, uint64_t);

}  // namespace pb

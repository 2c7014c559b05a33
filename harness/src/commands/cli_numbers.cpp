// Strict numeric options (cli_numbers.hpp).

#include "commands/cli_numbers.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>
#include <type_traits>

#include "common/number_text.hpp"

namespace pb {
namespace {

template <typename Number>
std::string number_text(Number value) {
  if constexpr (std::is_floating_point_v<Number>) {
    return format_significant(value, 6);  // printf's "%g"
  } else {
    return std::to_string(value);
  }
}

// "" when `text` is a number of the type in [min, max] (stored in `value`), else what is wrong.
template <typename Number>
std::string parse_number(const std::string& text, Number min, Number max, Number& value) {
  const char* kind = std::is_floating_point_v<Number> ? "a number" : "a whole number";
  const std::string range = " (" + std::string(kind) + " from " + number_text(min) + " to " + number_text(max) + ")";
  Number parsed{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, parsed);  // decimal only, no leading space
  if (error == std::errc::result_out_of_range) return "'" + text + "' is out of range" + range;
  if (error != std::errc() || stop != end || text.empty()) return "'" + text + "' is not " + kind + range;
  if constexpr (std::is_floating_point_v<Number>)
    if (!std::isfinite(parsed)) return "'" + text + "' is not a finite number" + range;
  if (parsed < min || parsed > max) return "'" + text + "' is out of range" + range;
  value = parsed;
  return "";
}

}  // namespace

template <typename Number>
CLI::Option* add_number_option(CLI::App& command, const std::string& name, Number& value, const std::string& help,
                               Number min, Number max) {
  return command.add_option_function<std::string>(
      name,
      [&value, name, min, max](const std::string& text) {
        if (const std::string wrong = parse_number(text, min, max, value); !wrong.empty())
          throw CLI::ValidationError(name, wrong);
      },
      help)
      ->type_name(std::is_floating_point_v<Number> ? "NUMBER" : "INT");
}

int default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

CLI::Option* add_thread_counts_option(CLI::App& command, const std::string& name, std::vector<int>& counts,
                                      const std::string& help) {
  const int cores = default_threads();
  return command
      .add_option_function<std::string>(
          name,
          [&counts, name, cores](const std::string& text) {
            std::vector<int> parsed;
            std::string item;
            for (std::istringstream items(text); std::getline(items, item, ',');) {
              int threads = cores;
              if (item != "max")
                if (const std::string wrong = parse_number(item, 1, 4096, threads); !wrong.empty())
                  throw CLI::ValidationError(name, wrong + " (or max: all cores)");
              if (std::find(parsed.begin(), parsed.end(), threads) != parsed.end())
                throw CLI::ValidationError(name, "'" + text + "' names " + std::to_string(threads) + " threads twice");
              parsed.push_back(threads);
            }
            if (parsed.empty() || text.back() == ',')
              throw CLI::ValidationError(name, "'" + text + "' is no list of thread counts");
            counts = parsed;
          },
          help)
      ->type_name("N[,N...]");
}

template CLI::Option* add_number_option<int>(CLI::App&, const std::string&, int&, const std::string&, int, int);
template CLI::Option* add_number_option<double>(CLI::App&, const std::string&, double&, const std::string&, double,
                                                double);
template CLI::Option* add_number_option<uint64_t>(CLI::App&, const std::string&, uint64_t&, const std::string&,
                                                  uint64_t, uint64_t);

}  // namespace pb

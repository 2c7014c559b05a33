// Per-row thresholds for `compare`: reading the file and matching rows (row_thresholds.hpp).

#include "compare/row_thresholds.hpp"

#include <fnmatch.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/number_text.hpp"
#include "phasebench/errors.hpp"

namespace pb::compare {
namespace {

constexpr double kLargestThresholdPct = 1000;  // as --threshold allows

std::string without_comment(const std::string& line) { return line.substr(0, line.find('#')); }

// A threshold as the file gives it: a plain decimal number of percent (a trailing `%` allowed)
// from 0 to the largest, with nothing else around it.
std::optional<double> parse_threshold(const std::string& text) {
  const size_t length = !text.empty() && text.back() == '%' ? text.size() - 1 : text.size();
  double value = 0;
  const auto [stop, error] = std::from_chars(text.data(), text.data() + length, value);
  if (error != std::errc() || stop != text.data() + length || length == 0) return std::nullopt;
  if (!std::isfinite(value) || value < 0 || value > kLargestThresholdPct) return std::nullopt;
  return value;
}

ThresholdRule parse_rule(const std::string& path, int line_number, const std::string& line) {
  std::istringstream fields(line);
  std::string pattern, threshold, extra;
  fields >> pattern >> threshold >> extra;
  const std::string where = path + ":" + std::to_string(line_number) + ": ";
  if (threshold.empty())
    throw InputError(where + "'" + pattern + "' has no threshold: a rule is a row pattern and a percent, e.g. '" +
                     pattern + " 10'");
  if (!extra.empty())
    throw InputError(where + "'" + extra + "' after the threshold: a rule is a row pattern and a percent");
  const std::optional<double> value = parse_threshold(threshold);
  if (!value)
    throw InputError(where + "threshold '" + threshold + "' is not a percent from 0 to " +
                     format_significant(kLargestThresholdPct, 6));
  return {pattern, *value, line_number};
}

}  // namespace

const ThresholdRule* RowThresholds::rule_for(const std::string& row_name) const {
  for (const ThresholdRule& rule : rules)
    if (fnmatch(rule.pattern.c_str(), row_name.c_str(), 0) == 0) return &rule;
  return nullptr;
}

RowThresholds read_row_thresholds(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("--thresholds " + path + ": cannot read the file");
  RowThresholds thresholds;
  thresholds.file = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string rule = without_comment(line);
    if (rule.find_first_not_of(" \t\r") == std::string::npos) continue;
    thresholds.rules.push_back(parse_rule(path, number, rule));
  }
  return thresholds;
}

}  // namespace pb::compare

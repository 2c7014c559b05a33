#pragma once
// Text for the HTML report: escaping and the number formats every table and chart shares.
// Internal to the harness.

#include <string>
#include <vector>

#include "common/number_text.hpp"
#include "phasebench/status.hpp"

namespace pb::report {

/// `text` safe inside HTML or SVG element content and attribute values.
std::string escape(const std::string& text);

/// The report's numbers: three significant digits, "-" for a missing value (number_text.hpp).
using pb::format_number;
/// A time given in milliseconds with a unit a reader takes in at a glance: "805 ns", "12.3 µs",
/// "4.56 ms", "1.23 s".
std::string format_ms(double ms);
/// "1.74×" ("-" when missing).
std::string format_ratio(double ratio);
/// "[1.70, 1.80]" with each end formatted by `format`; "" when either end is missing.
std::string format_interval(double low, double high, std::string (*format)(double));

/// An HTML table built row by row; every cell is escaped unless added as markup.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::string css_class = "");
  Table& cell(const std::string& text, const std::string& css_class = "");
  Table& markup(const std::string& html, const std::string& css_class = "");
  void end_row();
  size_t rows() const { return rows_.size(); }
  std::string html() const;

 private:
  std::vector<std::string> header_;
  std::string class_;
  std::vector<std::string> rows_;
  std::string current_;
};

/// <span class="status status-fail">FAIL</span>, colored by what the status means.
std::string status_badge(Status status);

/// What an approximate phase is, in every legend that marks one.
constexpr const char* kApproximateMeaning = "approximate: changes the arithmetic or the model; checked against an error budget";
/// `text` (a phase, a case) as markup, followed by an "approx" badge when its phase is not exact.
std::string marked_if_approximate(const std::string& text, bool exact);

}  // namespace pb::report

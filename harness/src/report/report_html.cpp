#include "report/report_html.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace pb::report {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_ms(double ms) {
  if (std::isnan(ms)) return "-";
  const double magnitude = std::fabs(ms);
  if (magnitude >= 1e3) return format_number(ms / 1e3) + " s";
  if (magnitude >= 1 || magnitude == 0) return format_number(ms) + " ms";
  if (magnitude >= 1e-3) return format_number(ms * 1e3) + " \xC2\xB5s";  // µs
  return format_number(ms * 1e6) + " ns";
}

std::string format_ratio(double ratio) {
  if (std::isnan(ratio)) return "-";
  return format_number(ratio) + "\xC3\x97";  // ×
}

std::string format_interval(double low, double high, std::string (*format)(double)) {
  if (std::isnan(low) || std::isnan(high)) return "";
  return "[" + format(low) + ", " + format(high) + "]";
}

Table::Table(std::vector<std::string> header, std::string css_class)
    : header_(std::move(header)), class_(std::move(css_class)) {}

Table& Table::cell(const std::string& text, const std::string& css_class) {
  return markup(escape(text), css_class);
}

Table& Table::markup(const std::string& html, const std::string& css_class) {
  current_ += css_class.empty() ? "<td>" : "<td class=\"" + css_class + "\">";
  current_ += html + "</td>";
  return *this;
}

void Table::end_row() {
  rows_.push_back("<tr>" + current_ + "</tr>");
  current_.clear();
}

std::string Table::html() const {
  std::string out = class_.empty() ? "<table>" : "<table class=\"" + class_ + "\">";
  out += "<thead><tr>";
  for (const std::string& name : header_) out += "<th>" + escape(name) + "</th>";
  out += "</tr></thead><tbody>";
  for (const std::string& row : rows_) out += row;
  return out + "</tbody></table>\n";
}

std::string status_badge(Status status) {
  const std::string word = to_string(status);
  std::string lower;
  for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "<span class=\"status status-" + escape(lower) + "\">" + escape(word) + "</span>";
}

std::string marked_if_approximate(const std::string& text, bool exact) {
  if (exact) return escape(text);
  return escape(text) + " <span class=\"approx\" title=\"" + escape(kApproximateMeaning) + "\">approx</span>";
}

}  // namespace pb::report

#include "common/number_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pb {

std::string format_significant(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

std::string format_table_number(double value, int digits) {
  return std::isnan(value) ? "-" : format_significant(value, digits);
}

std::string format_with_interval(double value, double low, double high) {
  if (std::isnan(value)) return "-";
  return format_table_number(value) + " [" + format_table_number(low) + "," + format_table_number(high) + "]";
}

std::string format_number(double value) {
  if (std::isnan(value)) return "-";
  const double magnitude = std::fabs(value);
  if (magnitude < 1e-4 || magnitude >= 1e6) return format_significant(value, 3);
  // Three significant digits in plain notation, trailing zeros dropped: 1000, 1.5, 0.000123.
  const int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  std::string out = text;
  if (out.find('.') != std::string::npos) {
    out.erase(out.find_last_not_of('0') + 1);
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

std::string format_csv_number(double value) { return std::isnan(value) ? "" : format_significant(value, 9); }

std::string format_change_percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * fraction);
  return text;
}

std::string plural(int count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string format_gain_range(double low, double high) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f-%.2fx", low, high);
  return text;
}

}  // namespace pb

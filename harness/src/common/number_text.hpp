#pragma once
// Numbers as text, one function per form. The form is part of where a number goes: a results
// file's cell reads back as the same float, the report's numbers are read by a person, a console
// line keeps the digits it asks for. Internal to the harness.

#include <string>

namespace pb {

/// `digits` significant digits, as printf's "%.<digits>g" prints them ("0.000123", "1.5e+07",
/// "nan").
std::string format_significant(double value, int digits);
/// As format_significant, "-" for a missing (NaN) value: a console table's cells.
std::string format_table_number(double value, int digits = 3);
/// Three significant digits in plain notation, trailing zeros dropped ("1000", "1.5", "0.000123"),
/// exponents only where plain digits get unreadable (below 1e-4, from 1e6: "1.23e+07"); "-" for a
/// missing value. The report's numbers.
std::string format_number(double value);
/// Nine significant digits, which read back as the same float; "" for a missing value, never
/// "nan". A results file's numeric cell (docs/file-formats.md).
std::string format_csv_number(double value);
/// "1.5 [1.4,1.6]": a value with its interval, each as format_table_number; "-" for a missing value.
std::string format_with_interval(double value, double low, double high);
/// A relative change as a signed percentage with one decimal: "+12.5%", "-3.0%".
std::string format_change_percent(double fraction);
/// A count with its noun: "1 row", "3 rows" (the noun's plural by an "s").
std::string plural(int count, const std::string& noun);
/// A claimed gain's range with two decimals: "1.50-2.00x".
std::string format_gain_range(double low, double high);

}  // namespace pb

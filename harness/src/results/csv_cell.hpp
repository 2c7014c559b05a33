#pragma once
// results.csv's dialect for a text cell, shared by every CSV file a run writes. Internal to the
// harness.

#include <string>

namespace pb {

/// Quoted when it holds a separator or a quote (`""` inside); newlines become spaces, so that a
/// record is one line.
std::string quote_csv_cell(std::string text);

}  // namespace pb
